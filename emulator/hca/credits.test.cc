// SPDX-License-Identifier: GPL-2.0
//
// End-to-end (message level) flow control of the RC requester (IBA
// 9.7.7.2): the responder advertises in each ACK's AETH the receive WQEs it
// has left beyond the MSN; the requester starts a SEND or an RDMA WRITE
// with immediate only within that limit, or as the one message it may
// send without credits when nothing else is unacknowledged, and resumes
// when an ACK raises the limit. RDMA WRITEs, READs and atomics take no
// receive WQE and no credit; a responder on an SRQ advertises "invalid"
// (no limit); UC has no ACKs and no credits.
#include <gtest/gtest.h>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

class Credits : public TwoNodes {
protected:
    void SetUp() override
    {
        TwoNodes::SetUp();
        link.capture = true;
        sbuf = a.alloc(4096);
        rbuf = b.alloc(64 * 1024);
        sk = a.reg(sbuf, 4096);
        rk = b.reg(rbuf, 64 * 1024);
    }

    void connect(QpService st, const TSrq* srq = nullptr)
    {
        qa = a.make_qp(st, acq, acq, 64, 64);
        qb = b.make_qp(st, bcq, bcq, 64, srq ? 0 : 64, 4, 0, srq);
        QpParams pa, pb;
        pa.dlid = 2, pa.remote_qpn = qb.qpn;
        pb.dlid = 1, pb.remote_qpn = qa.qpn;
        pa.min_rnr_timer = pb.min_rnr_timer = 1;  // 10 us
        a.to_rts(qa, pa);
        b.to_rts(qb, pb);
    }

    void post_recvs(unsigned n)
    {
        for (unsigned i = 0; i < n; ++i, ++rslot)
            b.post_recv(qb, {{rbuf + (rslot % 256) * 256, 256, rk}});
    }

    void send(uint8_t op = wqe::kSend)
    {
        Node::SendWr wr;
        wr.op = op;
        wr.sges = {{sbuf, 64, sk}};
        if (op != wqe::kSend && op != wqe::kSendImm) {
            wr.raddr = rbuf + 32 * 1024;
            wr.rkey = rk;
        }
        a.post_send(qa, wr);
    }

    // Request packets a sent so far whose opcode is `op` (RC or UC
    // transport bits ignored).
    unsigned sent(uint8_t op) const
    {
        unsigned n = 0;
        for (const CopiedPacket& c : link.captured)
            n += c.from == 0 && (c.opcode() & 0x1f) == op;
        return n;
    }
    unsigned sends() const { return sent(iba::opc::kSendOnly); }
    // RNR NAKs b sent.
    unsigned rnr_naks() const
    {
        unsigned n = 0;
        for (const CopiedPacket& c : link.captured)
            n += c.from == 1 && c.opcode() == iba::opc::kAck && (c.hdr[20] & 0x60) == iba::kAethRnr;
        return n;
    }
    unsigned completions(Node& n, TCq& cq)
    {
        unsigned k = 0;
        for (const TCqe& c : n.drain(cq)) {
            EXPECT_FALSE(c.error) << "syndrome 0x" << std::hex << unsigned(c.syndrome);
            ++k;
        }
        return k;
    }

    uint64_t sbuf = 0, rbuf = 0;
    uint32_t sk = 0, rk = 0;
    unsigned rslot = 0;
};

// Three receive WQEs: the first SEND goes alone (a QP starts without
// credits), its ACK grants the two left, so of five more SENDs two go at
// once and the third only after the ACKs (as the probe, which the empty
// receive queue answers with the one RNR NAK); receives posted later let
// the retried probe through, and its ACK's credits release the rest.
TEST_F(Credits, RequesterSendsNoMoreThanTheResponderHasReceivesFor)
{
    connect(QpService::Rc);
    post_recvs(3);
    send();
    EXPECT_EQ(sends(), 1u) << "no credits yet: only the probe";
    link.pump();
    EXPECT_EQ(completions(a, acq), 1u);
    for (int i = 0; i < 5; ++i)
        send();
    EXPECT_EQ(sends(), 3u) << "the ACK advertised 2 credits";
    EXPECT_EQ(a.core().doorbells().credit_waits, 1u);
    link.pump();
    // Both consumed the last receives; the next is the one probe.
    EXPECT_EQ(sends(), 4u);
    EXPECT_EQ(rnr_naks(), 1u);
    EXPECT_EQ(completions(b, bcq), 3u);
    EXPECT_EQ(completions(a, acq), 2u);

    post_recvs(4);
    pump_time(100'000, 10'000);
    EXPECT_EQ(completions(b, bcq), 3u);
    EXPECT_EQ(completions(a, acq), 3u);
    EXPECT_EQ(sends(), 7u) << "the probe twice, then the two its ACK allowed";
    EXPECT_EQ(rnr_naks(), 1u) << "never past the credits";
    EXPECT_EQ(a.core().doorbells().retransmits, 1u);  // the RNR retry only
}

// An ACK that raises the limit resumes SENDs held for credits at once, not
// one probe at a time.
TEST_F(Credits, AnAckThatRaisesTheLimitResumesTheHeldSends)
{
    connect(QpService::Rc);
    post_recvs(2);
    send();
    link.pump();  // ACK: 1 credit left
    EXPECT_EQ(completions(a, acq), 1u);
    for (int i = 0; i < 3; ++i)
        send();
    EXPECT_EQ(sends(), 2u) << "one credit: one SEND, two held";
    post_recvs(5);  // before the SEND arrives: its ACK advertises 5 (code 4)
    ASSERT_EQ(link.pump(1), 1u);  // the SEND reaches b; its ACK is queued
    EXPECT_EQ(sends(), 2u);
    ASSERT_EQ(link.pump(1), 1u);  // the ACK reaches a
    EXPECT_EQ(sends(), 4u) << "both held SENDs resumed by the one ACK";
    link.pump();
    EXPECT_EQ(completions(a, acq), 3u);
    EXPECT_EQ(completions(b, bcq), 4u);
    EXPECT_EQ(rnr_naks(), 0u);
}

// RDMA WRITE and READ take no receive WQE: they move the limit along
// with the MSN, and a SEND behind them still uses the credit it had. An
// RDMA WRITE with immediate takes one, like a SEND.
TEST_F(Credits, OnlySendsAndWritesWithImmediateTakeCredits)
{
    connect(QpService::Rc);
    post_recvs(2);
    send();
    link.pump();  // 1 credit left
    EXPECT_EQ(completions(a, acq), 1u);
    EXPECT_EQ(completions(b, bcq), 1u);
    send(wqe::kRdmaWrite);
    send(wqe::kRdmaRead);
    send();
    EXPECT_EQ(sent(iba::opc::kWriteOnly), 1u);
    EXPECT_EQ(sent(iba::opc::kReadReq), 1u);
    EXPECT_EQ(sends(), 2u) << "the WRITE and the READ used no credit";
    link.pump();
    EXPECT_EQ(completions(a, acq), 3u);
    EXPECT_EQ(completions(b, bcq), 1u);

    // No credits left: of two WRITEs with immediate, only the probe goes.
    send(wqe::kRdmaWriteImm);
    send(wqe::kRdmaWriteImm);
    EXPECT_EQ(sent(iba::opc::kWriteOnlyImm), 1u);
    link.pump();  // no receive WQE: RNR NAK
    EXPECT_EQ(rnr_naks(), 1u);
    post_recvs(2);
    pump_time(100'000, 10'000);
    EXPECT_EQ(sent(iba::opc::kWriteOnlyImm), 3u) << "the probe (RNR NAK), again, then the other";
    EXPECT_EQ(completions(a, acq), 2u);
    EXPECT_EQ(completions(b, bcq), 2u);
    EXPECT_EQ(rnr_naks(), 1u);
}

// A responder on an SRQ does not count receives per QP: its ACKs say
// "invalid" and the requester sends without limit from then on.
TEST_F(Credits, AnSrqResponderSetsNoLimit)
{
    TSrq srq = b.make_srq(64);
    connect(QpService::Rc, &srq);
    for (unsigned i = 0; i < 16; ++i)
        b.post_srq_recv(srq, {{rbuf + i * 256, 256, rk}});
    send();
    EXPECT_EQ(sends(), 1u);
    link.pump();
    for (int i = 0; i < 6; ++i)
        send();
    EXPECT_EQ(sends(), 7u);
    link.pump();
    EXPECT_EQ(completions(a, acq), 7u);
    EXPECT_EQ(completions(b, bcq), 7u);
    EXPECT_EQ(a.core().doorbells().credit_waits, 0u);
}

// UC has no ACKs and no end-to-end credits: every SEND goes.
TEST_F(Credits, UcSendsAreNotLimited)
{
    connect(QpService::Uc);
    post_recvs(4);
    for (int i = 0; i < 4; ++i)
        send();
    EXPECT_EQ(sends(), 4u);
    link.pump();
    EXPECT_EQ(completions(b, bcq), 4u);
}

}  // namespace
}  // namespace ibemu::mthca::test
