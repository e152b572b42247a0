// SPDX-License-Identifier: GPL-2.0
//
// The HCA on a real fabric link with credits (fabric/link.h): a saturated
// link direction holds the sending QPs back instead of losing packets, and
// the QPs that share it take turns (IBA 7.9 link flow control; the send
// arbitration of an HCA between its QPs and between requester and
// responder traffic).
#include <gtest/gtest.h>

#include <memory>

#include "fabric/clock.h"
#include "fabric/link.h"
#include "hca/qp_test_support.h"
#include "ib/mad.h"

namespace ibemu::mthca::test {
namespace {

// a (LID 1) and b (LID 2) on one link with the rate model (4x SDR: 1 GB/s
// of data each way) and a receive buffer of 8 packets of 2 KiB per VL.
class LinkFlow : public ::testing::Test {
protected:
    void SetUp() override
    {
        fabric::LinkConfig lc;
        lc.model_rate = true;
        lc.vl_credits = 8 * 34;
        link = std::make_unique<fabric::Link>(sched, "a:1-b:1", lc);
        PortEndpoint* ea = nullptr;
        PortEndpoint* eb = nullptr;
        a.up(1, &link->wire(0), &ea);
        b.up(2, &link->wire(1), &eb);
        link->attach(0, ea, false);
        link->attach(1, eb, false);
        ASSERT_TRUE(link->up());
        a.activate(1);
        b.activate(2);
    }

    // RC QPs x on a and y on b, connected, each with its own CQ.
    void connect(TQp& x, TCq& xcq, TQp& y, TCq& ycq)
    {
        xcq = a.make_cq(1024);
        ycq = b.make_cq(1024);
        x = a.make_qp(QpService::Rc, xcq, xcq, 64, 64);
        y = b.make_qp(QpService::Rc, ycq, ycq, 64, 64);
        QpParams px, py;
        px.dlid = 2, px.remote_qpn = y.qpn;
        py.dlid = 1, py.remote_qpn = x.qpn;
        a.to_rts(x, px);
        b.to_rts(y, py);
    }

    // One step of virtual time: both models' timers and resumed work, then
    // the link's deliveries.
    void step(uint64_t dt)
    {
        clock.advance(dt);
        a.d.hca().poll(clock.now_ns());
        b.d.hca().poll(clock.now_ns());
        sched.settle();
    }

    fabric::VirtualClock clock;
    fabric::Scheduler sched{clock};
    std::unique_ptr<fabric::Link> link;
    Node a{1}, b{2};
};

constexpr uint32_t kMsg = 64 * 1024;

// A stream of 64 KiB WRITEs far faster than the link: the requester waits
// for credits, every WRITE completes without error, nothing is dropped or
// retransmitted and no packet went past its credits.
TEST_F(LinkFlow, SaturatedLinkHoldsTheRequesterBackWithoutLoss)
{
    TQp x, y;
    TCq xcq, ycq;
    connect(x, xcq, y, ycq);
    const unsigned n = 32;
    uint64_t sbuf = a.alloc(kMsg), rbuf = b.alloc(uint64_t(kMsg) * n);
    uint32_t sk = a.reg(sbuf, kMsg), rk = b.reg(rbuf, uint64_t(kMsg) * n);
    for (uint32_t i = 0; i < kMsg; ++i)
        a.mem().at(sbuf)[i] = uint8_t(i * 13 + 5);
    for (unsigned i = 0; i < n; ++i)
        a.post_send(x, rdma_wr(wqe::kRdmaWrite, {sbuf, kMsg, sk}, rbuf + uint64_t(i) * kMsg, rk));
    // 2 MiB at 1 GB/s: about 2.1 ms.
    unsigned done = 0;
    TCqe c;
    for (int i = 0; i < 4000 && done < n; ++i) {
        step(1000);
        while (a.poll(xcq, &c)) {
            EXPECT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
            ++done;
        }
    }
    EXPECT_EQ(done, n);
    for (unsigned i = 0; i < n; ++i)
        EXPECT_EQ(std::memcmp(b.mem().at(rbuf + uint64_t(i) * kMsg), a.mem().at(sbuf), kMsg), 0) << i;
    const fabric::LinkCounters& ab = link->counters(0);
    EXPECT_EQ(ab.dropped() + link->counters(1).dropped(), 0u);
    EXPECT_GT(ab.credit_waits, 0u);  // it was held back
    EXPECT_EQ(ab.over_credit, 0u);   // and never sent past its credits
    EXPECT_EQ(a.core().doorbells().retransmits, 0u);
    EXPECT_EQ(a.core().ports()[0].xmit_discards, 0u);
    EXPECT_EQ(b.core().ports()[0].rcv_errors, 0u);
}

// WRITE streams both ways at once: each direction is full of one side's
// requests and carries the other side's ACKs. The ACKs wait for link
// credits like the requests (they used to be sent regardless, queued past
// the credits: the over_credit counts of bidirectional runs), and nothing
// is lost or resent.
TEST_F(LinkFlow, AcksWaitForLinkCreditsOnASaturatedDirection)
{
    // Path MTU 1024: a request packet takes 17 credit blocks, and 16 of
    // them fill the 272-block buffer to the last block.
    TCq xcq = a.make_cq(1024), ycq = b.make_cq(1024);
    TQp x = a.make_qp(QpService::Rc, xcq, xcq, 64, 64);
    TQp y = b.make_qp(QpService::Rc, ycq, ycq, 64, 64);
    QpParams px, py;
    px.dlid = 2, px.remote_qpn = y.qpn;
    py.dlid = 1, py.remote_qpn = x.qpn;
    px.mtu = py.mtu = 3;
    a.to_rts(x, px);
    b.to_rts(y, py);
    const unsigned n = 32;
    uint64_t abuf = a.alloc(kMsg), bbuf = b.alloc(kMsg), adst = a.alloc(kMsg), bdst = b.alloc(kMsg);
    uint32_t ak = a.reg(abuf, kMsg), bk = b.reg(bbuf, kMsg), adk = a.reg(adst, kMsg), bdk = b.reg(bdst, kMsg);
    for (unsigned i = 0; i < n; ++i) {
        a.post_send(x, rdma_wr(wqe::kRdmaWrite, {abuf, kMsg, ak}, bdst, bdk));
        b.post_send(y, rdma_wr(wqe::kRdmaWrite, {bbuf, kMsg, bk}, adst, adk));
    }
    unsigned done_a = 0, done_b = 0;
    TCqe c;
    for (int i = 0; i < 8000 && (done_a < n || done_b < n); ++i) {
        step(1000);
        while (a.poll(xcq, &c)) {
            EXPECT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
            ++done_a;
        }
        while (b.poll(ycq, &c)) {
            EXPECT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
            ++done_b;
        }
    }
    EXPECT_EQ(done_a, n);
    EXPECT_EQ(done_b, n);
    const fabric::LinkCounters& ab = link->counters(0);
    const fabric::LinkCounters& ba = link->counters(1);
    EXPECT_GT(ab.credit_waits, 0u);
    EXPECT_GT(ba.credit_waits, 0u);
    EXPECT_EQ(ab.over_credit, 0u);
    EXPECT_EQ(ba.over_credit, 0u);
    EXPECT_EQ(ab.dropped() + ba.dropped(), 0u);
    EXPECT_EQ(a.core().doorbells().retransmits + b.core().doorbells().retransmits, 0u);
}

// A burst of UD datagrams (IPoIB's datagram mode) far faster than the
// link: the UD send queue waits for link credits too (it used to send
// regardless, queued past the credits: over_credit), and every datagram
// arrives.
TEST_F(LinkFlow, UdSendsWaitForLinkCredits)
{
    TCq xcq = a.make_cq(256), ycq = b.make_cq(256);
    TQp x = a.make_qp(QpService::Ud, xcq, xcq, 64, 64);
    TQp y = b.make_qp(QpService::Ud, ycq, ycq, 64, 64);
    QpParams p;
    p.qkey = 0x11112222;
    a.to_rts(x, p);
    b.to_rts(y, p);
    const unsigned n = 48;
    uint64_t sbuf = a.alloc(2048), rbuf = b.alloc(uint64_t(n) * 4096);
    uint32_t sk = a.reg(sbuf, 2048), rk = b.reg(rbuf, uint64_t(n) * 4096);
    for (unsigned i = 0; i < n; ++i)
        b.post_recv(y, {{rbuf + uint64_t(i) * 4096, 2048 + 40, rk}});
    Node::SendWr wr;
    wr.sges = {{sbuf, 2048, sk}};
    wr.dlid = 2;
    wr.dqpn = y.qpn;
    wr.qkey = p.qkey;
    for (unsigned i = 0; i < n; ++i)
        a.post_send(x, wr);
    unsigned got = 0;
    TCqe c;
    for (int i = 0; i < 2000 && got < n; ++i) {
        step(1000);
        while (b.poll(ycq, &c)) {
            EXPECT_FALSE(c.error);
            ++got;
        }
    }
    EXPECT_EQ(got, n);
    EXPECT_EQ(a.drain(xcq).size(), n);
    const fabric::LinkCounters& ab = link->counters(0);
    EXPECT_GT(ab.credit_waits, 0u);
    EXPECT_EQ(ab.over_credit, 0u);
    EXPECT_EQ(ab.dropped(), 0u);
}

// GMPs (QP1 MADs, MLX sends on a data VL) into a direction a WRITE stream
// saturates: QP1 waits for link credits like every other sender (it used
// to send regardless, queued past the credits: over_credit), every MAD
// arrives, and the WRITEs complete.
TEST_F(LinkFlow, GmpsWaitForLinkCreditsOnASaturatedDirection)
{
    TQp x, y;
    TCq xcq, ycq;
    connect(x, xcq, y, ycq);
    TCq amcq = a.make_cq(64), bmcq = b.make_cq(64);
    TQp aq1 = a.make_qp(QpService::Mlx, amcq, amcq, 16, 16, 4, a.d.sqp_start + 2);
    TQp bq1 = b.make_qp(QpService::Mlx, bmcq, bmcq, 16, 16, 4, b.d.sqp_start + 2);
    QpParams pm;
    pm.qkey = iba::kQp1Qkey;
    a.to_rts(aq1, pm);
    b.to_rts(bq1, pm);
    const unsigned n = 16, nmad = 12;
    uint64_t sbuf = a.alloc(kMsg), rbuf = b.alloc(kMsg);
    uint32_t sk = a.reg(sbuf, kMsg), rk = b.reg(rbuf, kMsg);
    uint64_t amad = a.alloc(64 * 1024), bmad = b.alloc(64 * 1024);
    uint32_t amk = a.reg(amad, 64 * 1024), bmk = b.reg(bmad, 64 * 1024);
    for (unsigned i = 0; i < nmad; ++i)
        b.post_recv(bq1, {{bmad + uint64_t(i) * 1024, 256 + 40, bmk}});
    for (unsigned i = 0; i < n; ++i)
        a.post_send(x, rdma_wr(wqe::kRdmaWrite, {sbuf, kMsg, sk}, rbuf, rk));
    for (unsigned i = 0; i < nmad; ++i) {
        uint64_t hdr = amad + 32 * 1024 + uint64_t(i) * 64, mad = amad + uint64_t(i) * 1024;
        uint8_t* m = a.mem().at(mad);
        for (unsigned j = 0; j < 256; ++j)
            m[j] = uint8_t(i * 7 + j);
        m[0] = 1, m[1] = 0x03, m[2] = 2, m[3] = 1;  // an SA GMP
        Node::MlxWr wr;
        wr.dlid = 2;
        wr.dqpn = 1;
        wr.qkey = iba::kQp1Qkey;
        wr.hdr_buf = {hdr, 28, amk};
        wr.mad = {mad, 256, amk};
        a.post_mlx(aq1, wr);
    }
    unsigned done = 0, got = 0;
    TCqe c;
    for (int i = 0; i < 4000 && (done < n || got < nmad); ++i) {
        step(1000);
        while (a.poll(xcq, &c)) {
            EXPECT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
            ++done;
        }
        while (b.poll(bmcq, &c)) {
            EXPECT_FALSE(c.error);
            EXPECT_EQ(c.qpn, bq1.qpn);
            ++got;
        }
    }
    EXPECT_EQ(done, n);
    ASSERT_EQ(got, nmad);
    for (unsigned i = 0; i < nmad; ++i)
        EXPECT_EQ(std::memcmp(b.mem().at(bmad + uint64_t(i) * 1024 + 40), a.mem().at(amad + uint64_t(i) * 1024), 256),
                  0)
            << i;
    auto sent = a.drain(amcq);
    EXPECT_EQ(sent.size(), nmad);  // every MAD send completed, none in error
    for (const TCqe& s : sent)
        EXPECT_FALSE(s.error);
    const fabric::LinkCounters& ab = link->counters(0);
    EXPECT_GT(ab.credit_waits, 0u);
    EXPECT_EQ(ab.over_credit, 0u);
    EXPECT_EQ(ab.dropped() + link->counters(1).dropped(), 0u);
}

// A stream of one kind of RDMA work request kept `depth` deep on one QP.
struct Stream {
    Node* node;
    TQp* qp;
    TCq* cq;
    Node::SendWr wr;
    uint64_t bytes = 0;
};

// Runs the streams for `us` microseconds of virtual time, reposting each
// completed request; every completion must succeed.
class LinkShare : public LinkFlow {
protected:
    void run(std::vector<Stream>& streams, unsigned depth, unsigned us)
    {
        for (Stream& s : streams)
            for (unsigned i = 0; i < depth; ++i)
                s.node->post_send(*s.qp, s.wr);
        TCqe c;
        for (unsigned i = 0; i < us; ++i) {
            step(1000);
            for (Stream& s : streams) {
                while (s.node->poll(*s.cq, &c)) {
                    ASSERT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
                    s.bytes += c.byte_cnt ? c.byte_cnt : kMsg;
                    s.node->post_send(*s.qp, s.wr);
                }
            }
        }
    }
    // Each stream's share of the sum, and nothing lost or resent.
    void expect_shares(const std::vector<Stream>& streams, double at_least)
    {
        uint64_t sum = 0;
        std::string all;
        for (const Stream& s : streams) {
            sum += s.bytes;
            all += " " + std::to_string(s.bytes);
        }
        RecordProperty("bytes", all);
        EXPECT_GT(sum, 2'000'000u) << all;  // the link was kept busy
        for (const Stream& s : streams)
            EXPECT_GE(double(s.bytes), at_least * double(sum)) << "bytes per stream:" << all;
        EXPECT_EQ(link->counters(0).dropped() + link->counters(1).dropped(), 0u);
        EXPECT_EQ(a.core().doorbells().retransmits + b.core().doorbells().retransmits, 0u);
    }
};

// A WRITE stream (a's requester) and the READ responses a's responder owes
// another QP (b reads from a) share the direction a -> b, both saturated,
// eight requests deep as perftest keeps them. The issue asks for at least a
// quarter each; this asks for a third (they split evenly; with the link's
// credits ignored the READ stream falls to 29 %).
TEST_F(LinkShare, WriteStreamAndReadResponsesShareALinkDirection)
{
    TQp wx, wy, rx, ry;
    TCq wxcq, wycq, rxcq, rycq;
    connect(wx, wxcq, wy, wycq);  // a writes to b
    connect(rx, rxcq, ry, rycq);  // b reads from a
    uint64_t wsrc = a.alloc(kMsg), wdst = b.alloc(kMsg);
    uint64_t rsrc = a.alloc(kMsg), rdst = b.alloc(kMsg);
    uint32_t wsk = a.reg(wsrc, kMsg), wdk = b.reg(wdst, kMsg);
    uint32_t rsk = a.reg(rsrc, kMsg), rdk = b.reg(rdst, kMsg);
    std::vector<Stream> s = {
        {&a, &wx, &wxcq, rdma_wr(wqe::kRdmaWrite, {wsrc, kMsg, wsk}, wdst, wdk)},
        {&b, &ry, &rycq, rdma_wr(wqe::kRdmaRead, {rdst, kMsg, rdk}, rsrc, rsk)},
    };
    run(s, 8, 4000);  // 4 ms: about 4 MB through the link
    expect_shares(s, 1.0 / 3);
}

// Three WRITE streams from three QPs of a: the send arbitration serves them
// round robin, so each gets about a third.
TEST_F(LinkShare, WriteStreamsOfThreeQpsShareALinkDirection)
{
    std::vector<Stream> s;
    TQp x[3], y[3];
    TCq xcq[3], ycq[3];
    uint64_t src = a.alloc(kMsg), dst = b.alloc(kMsg);
    uint32_t sk = a.reg(src, kMsg), dk = b.reg(dst, kMsg);
    for (unsigned i = 0; i < 3; ++i) {
        connect(x[i], xcq[i], y[i], ycq[i]);
        s.push_back({&a, &x[i], &xcq[i], rdma_wr(wqe::kRdmaWrite, {src, kMsg, sk}, dst, dk)});
    }
    run(s, 8, 4000);
    expect_shares(s, 0.25);
}

// Records the VL of each data packet crossing the link.
struct VlTap : fabric::PacketTap {
    std::vector<uint8_t> vls;
    void tap(const fabric::Link&, unsigned from_side, const Packet& p, uint64_t) override
    {
        if (from_side == 0 && p.vl != 15) {
            vls.push_back(p.vl);
            EXPECT_EQ(p.hdr[0] >> 4, p.vl);  // the LRH says the same
        }
    }
};

// An SMP Set through MAD_IFC, as the SM's SMPs reach the firmware's SMA.
void sma_set(Node& n, uint16_t attr, uint32_t mod, std::span<const uint8_t> data)
{
    auto in = n.d.in();
    std::fill(in.begin(), in.begin() + 256, 0);
    in[0] = 1, in[1] = mad::kClassSubnLid, in[2] = 1, in[3] = mad::kMethodSet;
    put16(in, 16, attr);
    put32(in, 20, mod);
    std::copy(data.begin(), data.end(), in.begin() + 64);
    ASSERT_EQ(n.d.cmd(op::kMadIfc, n.d.in_box(), n.d.out_box(), 1, 0x3), Status::Ok);
    ASSERT_EQ(get16(n.d.out(), 4), 0);  // MAD status
}

// The port's SLtoVLMappingTable as the SM set it (IBA 7.6.6, 14.2.5.8)
// puts a QP's packets on the VL of its SL; unprogrammed, every SL is VL0.
TEST_F(LinkFlow, DataPacketsLeaveOnTheVlTheirSlMapsTo)
{
    VlTap tap;
    link->set_tap(&tap);
    TQp x, y;
    TCq xcq, ycq;
    xcq = a.make_cq(64);
    ycq = b.make_cq(64);
    x = a.make_qp(QpService::Rc, xcq, xcq, 16, 16);
    y = b.make_qp(QpService::Rc, ycq, ycq, 16, 16);
    QpParams px, py;
    px.dlid = 2, px.remote_qpn = y.qpn, px.sl = 3;
    py.dlid = 1, py.remote_qpn = x.qpn, py.sl = 3;
    a.to_rts(x, px);
    b.to_rts(y, py);
    uint64_t src = a.alloc(8192), dst = b.alloc(8192);
    uint32_t sk = a.reg(src, 8192), dk = b.reg(dst, 8192);
    auto write_and_wait = [&] {
        a.post_send(x, rdma_wr(wqe::kRdmaWrite, {src, 8192, sk}, dst, dk));
        TCqe c;
        for (int i = 0; i < 100 && !a.poll(xcq, &c); ++i)
            step(1000);
        EXPECT_FALSE(c.error);
    };
    write_and_wait();
    ASSERT_EQ(tap.vls.size(), 4u);
    EXPECT_EQ(tap.vls, std::vector<uint8_t>(4, 0));  // IBA default: VL0
    const uint8_t sl2vl[8] = {0x00, 0x02, 0, 0, 0, 0, 0, 0};  // SL3 -> VL2, every other SL -> VL0
    sma_set(a, mad::kAttrSlToVl, 0, sl2vl);
    EXPECT_EQ(a.d.out()[64 + 1], 0x02);  // read back in the response
    tap.vls.clear();
    write_and_wait();
    EXPECT_EQ(tap.vls, std::vector<uint8_t>(4, 2));
}

// The AETH of each RC ACK b sends back (LRH, BTH, AETH: no GRH here).
struct AckTap : fabric::PacketTap {
    std::vector<uint8_t> syndromes;
    void tap(const fabric::Link&, unsigned from_side, const Packet& p, uint64_t) override
    {
        if (from_side == 1 && p.hdr_len >= 24 && p.hdr[8] == iba::opc::kAck)
            syndromes.push_back(p.hdr[20]);
    }
};

// IBA 9.7.7.2: an ACK carries the responder's end-to-end credits, the
// receive WQEs it has left, in the AETH's credit encoding (the largest code
// not above the count: 4 -> 4, 9 -> code 6 = 8, 0 -> 0).
TEST_F(LinkFlow, AcksCarryTheResponderReceiveCredits)
{
    AckTap tap;
    link->set_tap(&tap);
    TQp x, y;
    TCq xcq, ycq;
    connect(x, xcq, y, ycq);
    uint64_t src = a.alloc(64), dst = b.alloc(64 * 16);
    uint32_t sk = a.reg(src, 64), dk = b.reg(dst, 64 * 16);
    auto send_one = [&] {
        Node::SendWr wr;
        wr.sges = {{src, 64, sk}};
        a.post_send(x, wr);
        TCqe c;
        for (int i = 0; i < 100 && !a.poll(xcq, &c); ++i)
            step(1000);
        EXPECT_FALSE(c.error);
    };
    for (unsigned i = 0; i < 5; ++i)
        b.post_recv(y, {{dst + i * 64, 64, dk}});
    send_one();  // 4 left
    ASSERT_EQ(tap.syndromes.size(), 1u);
    EXPECT_EQ(tap.syndromes[0], iba::kAethAck | 4);
    for (unsigned i = 0; i < 5; ++i)
        b.post_recv(y, {{dst + i * 64, 64, dk}});
    send_one();  // 8 left
    EXPECT_EQ(tap.syndromes.back(), iba::kAethAck | 6);
    b.post_recv(y, {{dst, 64, dk}});
    send_one();  // 8 left again
    EXPECT_EQ(tap.syndromes.back(), iba::kAethAck | 6);
    for (unsigned i = 0; i < 8; ++i)
        send_one();
    EXPECT_EQ(tap.syndromes.back(), iba::kAethAck | 0);  // none left
}

}  // namespace
}  // namespace ibemu::mthca::test
