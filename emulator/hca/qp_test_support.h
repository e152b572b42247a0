// SPDX-License-Identifier: GPL-2.0
//
// Test harness for the QP engine: a test link between two HCA ports that
// queues packets for the test to pump (or delivers them at once), and
// Node, a DriverSim that also creates CQs and QPs, moves QPs through their
// states and posts/polls work the way ib_mthca (mthca_qp.c, mthca_cq.c)
// and libmthca do in mem-free mode.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <vector>

#include "fabric/packet.h"
#include "hca/iba.h"
#include "hca/test_support.h"

namespace ibemu::mthca::test {

struct CopiedPacket {
    std::vector<uint8_t> hdr;
    std::vector<uint8_t> payload;
    uint8_t vl = 0;
    int from = 0;

    Packet view() const
    {
        Packet p;
        std::memcpy(p.hdr.data(), hdr.data(), hdr.size());
        p.hdr_len = uint16_t(hdr.size());
        p.vl = vl;
        if (!payload.empty()) {
            p.nseg = 1;
            p.seg[0] = {payload.data(), uint32_t(payload.size())};
            p.payload_len = uint32_t(payload.size());
        }
        return p;
    }
    uint8_t opcode() const
    {
        size_t bth = (hdr[1] & 3) == 3 ? 48 : 8;
        return hdr[bth];
    }
};

class TestLink {
public:
    class End final : public Wire {
    public:
        End(TestLink* l, int side) : link_(l), side_(side) {}
        void transmit(const Packet& p) override { link_->send(side_, p); }
        void set_carrier(bool on) override { link_->carrier[side_] = on; }

    private:
        TestLink* link_;
        int side_;
    };

    End a{this, 0}, b{this, 1};
    std::array<PortEndpoint*, 2> ep{};
    bool direct = false;      // deliver inside transmit()
    bool drop_all = false;
    // Return false to drop a packet (after it was counted as sent).
    std::function<bool(const CopiedPacket&)> filter;
    std::vector<CopiedPacket> captured;
    bool capture = false;
    uint64_t sent = 0, dropped = 0;
    std::array<bool, 2> carrier{true, true};  // as each end last set it

    void send(int from, const Packet& p)
    {
        ++sent;
        if (direct && !filter && !capture && !drop_all) {
            ep[1 - from]->receive(p);
            return;
        }
        CopiedPacket c;
        c.hdr.assign(p.hdr.begin(), p.hdr.begin() + p.hdr_len);
        c.payload.resize(p.payload_len);
        p.copy_payload(c.payload.data());
        c.vl = p.vl;
        c.from = from;
        if (capture)
            captured.push_back(c);
        if (drop_all || (filter && !filter(c))) {
            ++dropped;
            return;
        }
        if (direct) {
            Packet v = c.view();
            ep[1 - from]->receive(v);
            return;
        }
        queue_.push_back(std::move(c));
    }

    // Deliver queued packets (and whatever they cause) until quiet.
    size_t pump(size_t max = 1000000)
    {
        size_t n = 0;
        while (!queue_.empty() && n < max) {
            CopiedPacket c = std::move(queue_.front());
            queue_.pop_front();
            Packet v = c.view();
            ep[1 - c.from]->receive(v);
            ++n;
        }
        return n;
    }
    size_t queued() const { return queue_.size(); }
    void clear() { queue_.clear(); }

private:
    std::deque<CopiedPacket> queue_;
};

struct TCq {
    uint32_t cqn = 0;
    uint32_t n = 0;
    uint64_t buf = 0;
    uint32_t lkey = 0;
    uint32_t cons = 0;
    uint32_t ci_db = 0, arm_db = 0;
    uint32_t arm_sn = 1;
};

struct TQp {
    uint32_t qpn = 0;
    uint8_t service = 0;  // QpService
    uint8_t port = 1;
    uint64_t buf = 0;
    uint32_t lkey = 0;
    uint32_t rq_n = 0, rq_shift = 0, sq_n = 0, sq_shift = 0;
    uint32_t sq_off = 0;
    uint32_t sq_head = 0, rq_head = 0;
    uint32_t sq_db = 0, rq_db = 0;
    uint32_t prev_sq = 0;  // offset of the last posted send WQE
    uint32_t scq = 0, rcq = 0;
    uint32_t srqn = 0;
    bool srq = false;
    bool sig_all = false;
};

struct TSrq {
    uint32_t srqn = 0;
    uint32_t n = 0, shift = 0;
    uint64_t buf = 0;
    uint32_t lkey = 0;
    uint32_t db = 0;
    uint32_t counter = 0;
    uint32_t first_free = 0;
};

struct TCqe {
    uint32_t qpn = 0;
    bool error = false;
    bool is_send = false;
    uint8_t syndrome = 0;
    uint8_t opcode = 0;
    uint32_t byte_cnt = 0;
    uint32_t wqe = 0;
    uint32_t imm = 0;
    uint32_t rqpn = 0;
    uint16_t rlid = 0;
    uint8_t sl = 0;
    uint8_t path_bits = 0;  // DLID path bits (g_mlpath & 0x7f)
    bool grh = false;
};

struct TSge {
    uint64_t addr;
    uint32_t len;
    uint32_t lkey;
};

// What a QP transition sets (ib_qp_attr, roughly).
struct QpParams {
    uint8_t port = 1;
    uint8_t pkey_index = 0;
    uint32_t qkey = 0;
    bool rre = true, rwe = true, rae = true;
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint32_t remote_qpn = 0;
    uint32_t rq_psn = 0x100, sq_psn = 0x100;
    uint8_t mtu = 4;  // IB_MTU_2048
    uint8_t log_msg_max = 31;  // mtu_msgmax's low bits, as mthca_qp.c sets them
    uint8_t timeout = 14;
    uint8_t retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 1;
    uint8_t max_rd_atomic = 4, max_dest_rd_atomic = 4;  // perftest's "outstand reads"
    bool grh = false;
    std::array<uint8_t, 16> dgid{};
    uint8_t path_bits = 0, sgid_index = 0, hop_limit = 64, tclass = 0, static_rate = 0;
    uint32_t flow_label = 0;
    // Alternate path (opt-param bit 0).
    uint8_t alt_port = 1, alt_pkey_index = 0, alt_timeout = 0, alt_sl = 0, alt_path_bits = 0;
    uint16_t alt_dlid = 0;
    // Path migration state written in the context flags (read by the
    // firmware only with opt-param bit 10): MIGRATED, as ib_mthca writes it
    // when the attribute mask has no IB_QP_PATH_MIG_STATE.
    uint8_t pm_state = 3;
};

inline constexpr uint32_t kAccLocalWrite = 1u << 11, kAccRemoteRead = 1u << 12, kAccRemoteWrite = 1u << 13,
                          kAccAtomic = 1u << 14, kAccLocalRead = 1u << 10;
inline constexpr uint32_t kAccAll = kAccLocalWrite | kAccRemoteRead | kAccRemoteWrite | kAccAtomic | kAccLocalRead;

class Node {
public:
    explicit Node(uint64_t guid_tag = 0, size_t ram = 96u << 20, unsigned ports = 1)
        : d(ram, ports), tag_(guid_tag)
    {
    }

    DriverSim d;

    Core& core() { return d.core(); }
    FakeMemory& mem() { return d.mem(); }
    uint32_t uar = 0;
    uint32_t pd = 1;

    // Bring-up, INIT_IB on port 1, doorbell pages; attach to a link end.
    void up(uint16_t lid, Wire* wire, PortEndpoint** my_ep);
    void activate(uint16_t lid);

    uint64_t alloc(uint64_t len, uint64_t align = 4096) { return mem().alloc(len, align); }
    // A buffer registered with iova = its guest-physical address.
    uint32_t reg(uint64_t buf, uint64_t len, uint32_t access = kAccAll, uint32_t pd_num = 0)
    {
        return d.alloc_mr(buf, len, pd_num ? pd_num : pd, nullptr, access, buf);
    }

    TCq make_cq(uint32_t n);
    TQp make_qp(QpService st, const TCq& scq, const TCq& rcq, uint32_t sq_n, uint32_t rq_n, unsigned max_sge = 4,
                uint32_t qpn = 0, const TSrq* srq = nullptr);
    TSrq make_srq(uint32_t n, unsigned max_sge = 4);
    Status modify(TQp& q, uint16_t opcode, QpState to, const QpParams& p, uint32_t optmask, uint32_t in_mod_hi = 0);
    // RST -> INIT -> RTR -> RTS with the masks ib_mthca would send.
    void to_rts(TQp& q, const QpParams& p);

    void post_recv(TQp& q, const std::vector<TSge>& sges);
    void post_srq_recv(TSrq& s, const std::vector<TSge>& sges);
    // One send WR; returns the WQE offset. ud_av: for UD, the remote.
    struct SendWr {
        uint8_t op = wqe::kSend;
        std::vector<TSge> sges;
        bool signaled = true;
        bool solicited = false;
        uint32_t imm = 0;
        uint64_t raddr = 0;
        uint32_t rkey = 0;
        uint64_t swap_add = 0, compare = 0;
        // UD
        uint16_t dlid = 0;
        uint32_t dqpn = 0, qkey = 0;
        uint8_t sl = 0;
        bool grh = false;
        std::array<uint8_t, 16> dgid{};
        std::vector<uint8_t> inline_data;
    };
    uint32_t post_send(TQp& q, const SendWr& wr, bool ring = true);
    // A MAD sent on QP0/QP1 as ib_mthca's build_mlx_header() posts it: the
    // UD header packed by ib_ud_header_pack() into `hdr_buf` (LRH with the
    // SLID field holding only the AV's path bits, or the permissive LID
    // for a permissive DLID), BTH, DETH; the MLX segment with VL15 (QP0),
    // SLR (permissive DLID) and the SL; a gather entry for the header, one
    // for the MAD, and the ICRC placeholder.
    struct MlxWr {
        uint16_t dlid = 0;
        uint8_t sl = 0;
        uint8_t path_bits = 0;  // the AV's source path bits (g_slid & 0x7f)
        uint32_t dqpn = 0;
        uint32_t qkey = 0;
        uint16_t pkey = 0xffff;
        TSge hdr_buf{};
        TSge mad{};
        bool force_vl15 = false;  // set the VL15 bit whatever the QP (a hostile WQE)
    };
    uint32_t post_mlx(TQp& q, const MlxWr& wr);
    // Write the WQE chain of n sends prepared with post_send(ring=false) and
    // ring one doorbell for them.
    void ring_send(TQp& q, uint32_t first_head, uint32_t nreq, uint8_t op0, uint8_t size0);

    bool poll(TCq& cq, TCqe* out);
    std::vector<TCqe> drain(TCq& cq);
    void arm(TCq& cq, bool solicited);

    uint32_t next_qpn = 0;
    uint32_t next_cqn = 0;
    uint32_t next_srqn = 0;
    uint32_t next_db = 0;
    uint64_t uarc_virt = 0;
    uint8_t last_op0 = 0, last_size0 = 0;

    uint8_t* db_rec(uint32_t idx) { return d.icm_ptr(uarc_virt + uint64_t(idx) * 8); }

private:
    [[maybe_unused]] uint64_t tag_;
};

// An RDMA WRITE/READ (or WRITE with immediate) of one gather entry to
// `raddr` under `rkey`: the shape most QP engine tests post.
inline Node::SendWr rdma_wr(uint8_t op, TSge sge, uint64_t raddr, uint32_t rkey)
{
    Node::SendWr wr;
    wr.op = op;
    wr.sges = {sge};
    wr.raddr = raddr;
    wr.rkey = rkey;
    return wr;
}

// Two one-port HCAs, a (LID 1) and b (LID 2), cabled by a TestLink, both
// ports ACTIVE, each with a 256-entry CQ; qa/qb are for the test's QPs.
class TwoNodes : public ::testing::Test {
protected:
    void SetUp() override
    {
        a.up(1, &link.a, &link.ep[0]);
        b.up(2, &link.b, &link.ep[1]);
        LinkParams lp;
        link.ep[0]->link_changed(true, lp);
        link.ep[1]->link_changed(true, lp);
        a.activate(1);
        b.activate(2);
        acq = a.make_cq(256);
        bcq = b.make_cq(256);
    }

    // Advances both HCAs' time from `now` to `until_ns` in `step_ns` steps,
    // moving what the link holds after each.
    void pump_time(uint64_t until_ns, uint64_t step_ns)
    {
        for (uint64_t t = now; t <= until_ns; t += step_ns) {
            now = t;
            a.d.hca().poll(t);
            b.d.hca().poll(t);
            link.pump();
        }
    }

    TestLink link;
    Node a{1}, b{2};
    TCq acq, bcq;
    TQp qa, qb;
    uint64_t now = 0;
};

}  // namespace ibemu::mthca::test
