// SPDX-License-Identifier: GPL-2.0
//
// RDMA WRITE throughput between two in-process MT25208 models joined by a
// link that delivers synchronously, against a plain memcpy of the same
// bytes between the same buffers. Prints engine/memcpy per message size.
//
// One iteration: post a signaled RDMA WRITE on A (send doorbell), the
// engine gathers and transmits the packets, B checks and places them and
// answers with an ACK, A writes the CQE; the iteration polls it.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "hca/qp_test_support.h"

using namespace ibemu;
using namespace ibemu::mthca;
using namespace ibemu::mthca::test;

namespace {

constexpr uint32_t kMaxLen = 1u << 20;

// The trivial link: hands each packet straight to the other port.
class DirectWire final : public Wire {
public:
    PortEndpoint* peer = nullptr;
    void transmit(const Packet& p) override { peer->receive(p); }
};

struct Pair {
    DirectWire to_b, to_a;
    PortEndpoint* ep_a = nullptr;
    PortEndpoint* ep_b = nullptr;
    Node a{1, 64u << 20}, b{2, 64u << 20};
    TCq acq, bcq;
    TQp qa, qb;
    uint64_t sbuf = 0, rbuf = 0;
    uint32_t sk = 0, rk = 0;

    Pair()
    {
        a.up(1, &to_b, &ep_a);
        b.up(2, &to_a, &ep_b);
        to_b.peer = ep_b;
        to_a.peer = ep_a;
        LinkParams lp;
        ep_a->link_changed(true, lp);
        ep_b->link_changed(true, lp);
        a.activate(1);
        b.activate(2);
        acq = a.make_cq(1024);
        bcq = b.make_cq(1024);
        qa = a.make_qp(QpService::Rc, acq, acq, 256, 16);
        qb = b.make_qp(QpService::Rc, bcq, bcq, 16, 16);
        QpParams pa, pb;
        pa.dlid = 2, pa.remote_qpn = qb.qpn;
        pb.dlid = 1, pb.remote_qpn = qa.qpn;
        a.to_rts(qa, pa);
        b.to_rts(qb, pb);
        sbuf = a.alloc(kMaxLen);
        rbuf = b.alloc(kMaxLen);
        sk = a.reg(sbuf, kMaxLen);
        rk = b.reg(rbuf, kMaxLen);
        std::memset(a.mem().at(sbuf), 0x5a, kMaxLen);
    }

    // `n` WRITEs rung with one doorbell, only the last one signaled (the
    // way ib_write_bw keeps its send queue full).
    bool write_batch(uint32_t len, uint32_t n)
    {
        uint32_t head = qa.sq_head;
        uint8_t op0 = 0, size0 = 0;
        for (uint32_t i = 0; i < n; ++i) {
            Node::SendWr wr;
            wr.op = wqe::kRdmaWrite;
            wr.sges = {{sbuf, len, sk}};
            wr.raddr = rbuf;
            wr.rkey = rk;
            wr.signaled = i + 1 == n;
            a.post_send(qa, wr, false);
            if (i == 0)
                op0 = a.last_op0, size0 = a.last_size0;
        }
        a.ring_send(qa, head, n, op0, size0);
        return complete();
    }

    // The completion, letting the model go on (as the server's loop does
    // with poll()) when a doorbell's work did not fit its budget.
    bool complete()
    {
        TCqe c;
        for (unsigned i = 0; i < 1u << 16; ++i) {
            if (a.poll(acq, &c))
                return !c.error;
            a.d.hca().poll(0);
        }
        return false;
    }

    // The work request is built once per size: a driver does not allocate
    // to post, and the harness's allocations are not the engine's cost.
    Node::SendWr wr1;

    bool write(uint32_t len)
    {
        if (wr1.sges.size() != 1 || wr1.sges[0].len != len) {
            wr1.op = wqe::kRdmaWrite;
            wr1.sges = {{sbuf, len, sk}};
            wr1.raddr = rbuf;
            wr1.rkey = rk;
        }
        a.post_send(qa, wr1);
        return complete();
    }
};

Pair& pair()
{
    static std::unique_ptr<Pair> p;
    if (!p) {
        Log::set_level(LogLevel::Error);
        p = std::make_unique<Pair>();
    }
    return *p;
}

void BM_RdmaWrite(benchmark::State& st)
{
    Pair& p = pair();
    uint32_t len = uint32_t(st.range(0));
    for (auto _ : st) {
        if (!p.write(len)) {
            st.SkipWithError("RDMA WRITE did not complete");
            break;
        }
    }
    if (std::memcmp(p.a.mem().at(p.sbuf), p.b.mem().at(p.rbuf), len) != 0)
        st.SkipWithError("data mismatch");
    st.SetBytesProcessed(int64_t(st.iterations()) * len);
}

void BM_RdmaWriteBatch16(benchmark::State& st)
{
    Pair& p = pair();
    uint32_t len = uint32_t(st.range(0));
    for (auto _ : st) {
        if (!p.write_batch(len, 16)) {
            st.SkipWithError("RDMA WRITE batch did not complete");
            break;
        }
    }
    st.SetBytesProcessed(int64_t(st.iterations()) * 16 * len);
}

void BM_Memcpy(benchmark::State& st)
{
    Pair& p = pair();
    uint32_t len = uint32_t(st.range(0));
    uint8_t* src = p.a.mem().at(p.sbuf);
    uint8_t* dst = p.b.mem().at(p.rbuf);
    for (auto _ : st) {
        std::memcpy(dst, src, len);
        benchmark::DoNotOptimize(dst);
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(int64_t(st.iterations()) * len);
}

BENCHMARK(BM_RdmaWrite)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_RdmaWriteBatch16)->Arg(64)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);

// Remembers bytes/s per benchmark to print the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override
    {
        for (const Run& r : runs) {
            if (r.error_occurred) {
                failed_.push_back(r.benchmark_name() + ": " + r.error_message);
                continue;
            }
            auto it = r.counters.find("bytes_per_second");
            if (it != r.counters.end())
                rate_[r.benchmark_name()] = double(it->second);
        }
        ConsoleReporter::ReportRuns(runs);
    }
    void print_ratios() const
    {
        for (const char* bench : {"BM_RdmaWrite/", "BM_RdmaWriteBatch16/"}) {
            for (const char* size : {"64", "4096", "65536", "1048576"}) {
                auto e = rate_.find(std::string(bench) + size);
                auto m = rate_.find(std::string("BM_Memcpy/") + size);
                if (e == rate_.end() || m == rate_.end() || m->second <= 0)
                    continue;
                std::printf("ratio engine/memcpy %-20s %7s bytes: %.3f  (engine %.2f GB/s, memcpy %.2f GB/s)\n",
                            bench, size, e->second / m->second, e->second / 1e9, m->second / 1e9);
            }
        }
    }

    // The benchmarks that could not measure (SkipWithError), with why.
    const std::vector<std::string>& failed() const { return failed_; }

private:
    std::map<std::string, double> rate_;
    std::vector<std::string> failed_;
};

}  // namespace

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    RatioReporter rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    rep.print_ratios();
    benchmark::Shutdown();
    // A benchmark that could not measure fails the run (and so make check).
    for (const auto& f : rep.failed())
        std::fprintf(stderr, "NOT MEASURED: %s\n", f.c_str());
    return rep.failed().empty() ? 0 : 1;
}
