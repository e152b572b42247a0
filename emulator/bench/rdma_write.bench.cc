// SPDX-License-Identifier: GPL-2.0
//
// RDMA WRITE throughput between two in-process MT25208 models, against a
// plain memcpy of the same bytes between the same buffers. Prints
// engine/memcpy per message size, for two ways of joining the models:
//
//  - direct: a wire that hands each packet straight to the other port (an
//    upper bound: no link, no switch, and B's ACK reaches A re-entrantly,
//    inside A's own transmit);
//  - switch: end to end as the server runs it, through fabric::Fabric
//    ("star:3": A and B on ports 1 and 2 of switch sw0, a subnet manager
//    port on 3 that programmed the switch). Each packet crosses two links
//    and the switch's forwarding; B's ACK finds A busy in its transmit, so
//    the link defers it (a slot copy) to the next Fabric::run_due(), which
//    the iteration calls as the server's loop does. The run fails if that
//    deferral path was never taken.
//
// One iteration: post a signaled RDMA WRITE on A (send doorbell), the
// engine gathers and transmits the packets, B checks and places them and
// answers with an ACK, A writes the CQE; the iteration polls it. The data
// is compared after every benchmark; one that could not measure (no
// completion, wrong data, no deferral) makes the program exit non-zero.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "fabric/fabric.h"
#include "fabric/test_support.h"
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

// The subnet manager's side of the switch fabric: programs sw0 through
// directed route SMPs (LID, LFT, port states), as OpenSM would.
class SwitchSm {
public:
    SwitchSm(fabric::Fabric& fab, fabric::test::TestPort& port) : fab_(fab), port_(port) {}

    // LID 100 for the switch, the SM at LID n + 1; LIDs 1..n routed to
    // ports 1..n; every port ACTIVE.
    bool configure(unsigned n)
    {
        using namespace fabric::test::layout;
        namespace smp = fabric::smp;
        constexpr uint16_t kSwLid = 100;
        auto pi = get(smp::kAttrPortInfo, 0);
        if (!pi)
            return false;
        auto d = fabric::test::smp_data(*pi);
        kPiLid.set(d, kSwLid);
        kPiSmLid.set(d, n + 1);
        kPiState.set(d, 0);
        kPiPhys.set(d, 0);
        if (!set(smp::kAttrPortInfo, 0, *pi))
            return false;
        fabric::test::Mad lft{};
        auto l = fabric::test::smp_data(lft);
        std::fill(l.begin(), l.end(), 0xff);
        for (unsigned i = 1; i <= n; ++i)
            l[i] = uint8_t(i);
        if (!set(smp::kAttrLft, 0, lft))
            return false;
        auto si = get(smp::kAttrSwitchInfo, 0);
        if (!si)
            return false;
        kSiLftTop.set(fabric::test::smp_data(*si), 63);
        if (!set(smp::kAttrSwitchInfo, 0, *si))
            return false;
        for (unsigned p = 1; p <= n; ++p) {
            for (uint8_t st : {uint8_t(fabric::PortState::Armed), uint8_t(fabric::PortState::Active)}) {
                auto cur = get(smp::kAttrPortInfo, p);
                if (!cur)
                    return false;
                auto pd = fabric::test::smp_data(*cur);
                kPiState.set(pd, st);
                kPiPhys.set(pd, 0);
                if (!set(smp::kAttrPortInfo, p, *cur))
                    return false;
            }
        }
        return true;
    }

private:
    std::optional<fabric::test::Mad> request(const fabric::test::Mad& m)
    {
        size_t before = port_.rx.size();
        port_.send_smp(m);
        fab_.run_due();
        if (port_.rx.size() != before + 1)
            return std::nullopt;
        auto s = port_.rx.back().mad();
        if (s.size() != fabric::mad::kSize || fabric::smp::kDrStatus.get(s) != 0)
            return std::nullopt;
        fabric::test::Mad r;
        std::copy(s.begin(), s.end(), r.begin());
        return r;
    }
    std::optional<fabric::test::Mad> get(uint16_t attr, uint32_t mod)
    {
        return request(fabric::test::dr_smp(fabric::mad::kMethodGet, attr, mod, {1}));
    }
    bool set(uint16_t attr, uint32_t mod, const fabric::test::Mad& payload)
    {
        fabric::test::Mad m = fabric::test::dr_smp(fabric::mad::kMethodSet, attr, mod, {1});
        std::copy(payload.begin() + fabric::smp::kDataOffset,
                  payload.begin() + fabric::smp::kDataOffset + fabric::smp::kDataSize,
                  m.begin() + fabric::smp::kDataOffset);
        return request(m).has_value();
    }

    fabric::Fabric& fab_;
    fabric::test::TestPort& port_;
};

enum class Path { Direct, Switch };

struct Pair {
    const Path path;
    DirectWire to_b, to_a;
    PortEndpoint* ep_a = nullptr;
    PortEndpoint* ep_b = nullptr;
    fabric::MonotonicClock clock;
    std::unique_ptr<fabric::Fabric> fab;
    fabric::test::TestPort sm_port;
    fabric::Link* link_a = nullptr;  // A's cable
    Node a{1, 64u << 20}, b{2, 64u << 20};
    TCq acq, bcq;
    TQp qa, qb;
    uint64_t sbuf = 0, rbuf = 0;
    uint32_t sk = 0, rk = 0;
    std::string error;  // why this pair cannot be measured

    explicit Pair(Path p) : path(p)
    {
        if (path == Path::Direct) {
            a.up(1, &to_b, &ep_a);
            b.up(2, &to_a, &ep_b);
            to_b.peer = ep_b;
            to_a.peer = ep_a;
            LinkParams lp;
            ep_a->link_changed(true, lp);
            ep_b->link_changed(true, lp);
        } else if (!join_switch()) {
            return;
        }
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
        for (uint32_t i = 0; i < kMaxLen; ++i)
            a.mem().at(sbuf)[i] = uint8_t(i * 7 + (i >> 12));
    }

    // star:3, A on vm0 (sw0 port 1), B on vm1 (port 2), the SM on vm2.
    bool join_switch()
    {
        fab = std::make_unique<fabric::Fabric>(clock);
        if (!fab->build_spec("star:3", &error))
            return false;
        fabric::HcaPort* ha = fab->hca_port("vm0", 0, 1);
        fabric::HcaPort* hb = fab->hca_port("vm1", 0, 1);
        fabric::HcaPort* hs = fab->hca_port("vm2", 0, 1);
        if (!ha || !hb || !hs) {
            error = "star:3 has no vm0/vm1/vm2";
            return false;
        }
        a.up(1, &ha->wire(), &ep_a);
        b.up(2, &hb->wire(), &ep_b);
        ha->attach(ep_a);
        hb->attach(ep_b);
        sm_port.wire = &hs->attach(&sm_port);
        fab->run_due();
        link_a = &ha->link();
        if (!SwitchSm(*fab, sm_port).configure(3)) {
            error = "the switch could not be programmed";
            return false;
        }
        return true;
    }

    // Packets the link deferred towards A (B's ACKs meeting A busy).
    uint64_t deferred_to_a() const
    {
        return link_a ? link_a->counters(0).deferred + link_a->counters(1).deferred : 0;
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
            if (fab)
                fab->run_due();
            a.d.hca().poll(0);
            b.d.hca().poll(0);
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

Pair& pair(Path path = Path::Direct)
{
    static std::unique_ptr<Pair> p[2];
    auto& slot = p[path == Path::Switch];
    if (!slot) {
        Log::set_level(LogLevel::Error);
        slot = std::make_unique<Pair>(path);
    }
    return *slot;
}

// Checks after a benchmark: the bytes arrived, and through the switch the
// deferral path was taken. False (with the reason set) when not.
bool verify(benchmark::State& st, Pair& p, uint32_t len, uint64_t deferred_before)
{
    if (std::memcmp(p.a.mem().at(p.sbuf), p.b.mem().at(p.rbuf), len) != 0) {
        st.SkipWithError("data mismatch");
        return false;
    }
    if (p.path == Path::Switch && p.deferred_to_a() == deferred_before) {
        st.SkipWithError("no packet was deferred: the deferral path was not measured");
        return false;
    }
    return true;
}

void rdma_write(benchmark::State& st, Path path)
{
    Pair& p = pair(path);
    if (!p.error.empty()) {
        st.SkipWithError(p.error.c_str());
        return;
    }
    uint32_t len = uint32_t(st.range(0));
    std::memset(p.b.mem().at(p.rbuf), 0, len);
    uint64_t deferred = p.deferred_to_a();
    for (auto _ : st) {
        if (!p.write(len)) {
            st.SkipWithError("RDMA WRITE did not complete");
            return;
        }
    }
    if (!verify(st, p, len, deferred))
        return;
    st.SetBytesProcessed(int64_t(st.iterations()) * len);
}

void rdma_write_batch16(benchmark::State& st, Path path)
{
    Pair& p = pair(path);
    if (!p.error.empty()) {
        st.SkipWithError(p.error.c_str());
        return;
    }
    uint32_t len = uint32_t(st.range(0));
    std::memset(p.b.mem().at(p.rbuf), 0, len);
    uint64_t deferred = p.deferred_to_a();
    for (auto _ : st) {
        if (!p.write_batch(len, 16)) {
            st.SkipWithError("RDMA WRITE batch did not complete");
            return;
        }
    }
    if (!verify(st, p, len, deferred))
        return;
    st.SetBytesProcessed(int64_t(st.iterations()) * 16 * len);
}

void BM_RdmaWrite(benchmark::State& st) { rdma_write(st, Path::Direct); }
void BM_RdmaWriteSwitch(benchmark::State& st) { rdma_write(st, Path::Switch); }
void BM_RdmaWriteBatch16(benchmark::State& st) { rdma_write_batch16(st, Path::Direct); }
void BM_RdmaWriteBatch16Switch(benchmark::State& st) { rdma_write_batch16(st, Path::Switch); }

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
BENCHMARK(BM_RdmaWriteSwitch)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_RdmaWriteBatch16)->Arg(64)->Arg(4096)->Arg(65536);
BENCHMARK(BM_RdmaWriteBatch16Switch)->Arg(64)->Arg(4096)->Arg(65536);
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
    // engine/memcpy per size, the direct wire and the switch side by side.
    // Below 64 KiB the memcpy takes nanoseconds and the ratio mostly says
    // how long a verb's fixed costs are.
    void print_ratios() const
    {
        const char* kinds[][3] = {{"single", "BM_RdmaWrite/", "BM_RdmaWriteSwitch/"},
                                  {"batch16", "BM_RdmaWriteBatch16/", "BM_RdmaWriteBatch16Switch/"}};
        for (auto& k : kinds) {
            for (const char* size : {"64", "4096", "65536", "1048576"}) {
                auto m = rate_.find(std::string("BM_Memcpy/") + size);
                if (m == rate_.end() || m->second <= 0)
                    continue;
                auto ratio = [&](const char* bench) {
                    auto e = rate_.find(std::string(bench) + size);
                    return e == rate_.end() ? -1.0 : e->second / m->second;
                };
                double d = ratio(k[1]), s = ratio(k[2]);
                if (d < 0 && s < 0)
                    continue;
                std::printf("ratio engine/memcpy %-8s %7s bytes: direct %.3f  switch %.3f  (memcpy %.2f GB/s)\n",
                            k[0], size, d, s, m->second / 1e9);
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
