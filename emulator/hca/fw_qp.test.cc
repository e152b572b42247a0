// SPDX-License-Identifier: GPL-2.0
//
// QUERY_QP: the context the firmware reports is the one it keeps merged
// transition by transition (each MODIFY_QP takes only what its transition
// requires and what its opt-param mask selects), in the QP's current state,
// engine-made transitions included.
#include <gtest/gtest.h>

#include <cstring>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

using Ctx = std::array<uint8_t, qpc::kSize>;

class QueryQp : public TwoNodes {
protected:
    // Attribute values that differ from each other and from the defaults.
    static QpParams distinct()
    {
        QpParams p;
        p.pkey_index = 0;  // the only P_Key entry the port has
        p.rre = true, p.rwe = false, p.rae = true;
        p.dlid = 2;
        p.sl = 5;
        p.remote_qpn = 0;  // set by connect()
        p.rq_psn = 0xabcdef;
        p.sq_psn = 0x123456;
        p.mtu = 3;  // 1024
        p.timeout = 17;
        p.retry_cnt = 5;
        p.rnr_retry = 6;
        p.min_rnr_timer = 12;
        p.max_rd_atomic = 8;       // SRA_MAX 3
        p.max_dest_rd_atomic = 2;  // RRA_MAX 1
        p.grh = true;
        for (unsigned i = 0; i < 16; ++i)
            p.dgid[i] = uint8_t(0xf0 + i);
        p.path_bits = 0;
        p.sgid_index = 0;
        p.hop_limit = 33;
        p.tclass = 0x5a;
        p.flow_label = 0x9abcd;
        return p;
    }

    void connect(const QpParams& pa)
    {
        qa = a.make_qp(QpService::Rc, acq, acq, 64, 64);
        qb = b.make_qp(QpService::Rc, bcq, bcq, 64, 64);
        QpParams p = pa, pb;
        p.remote_qpn = qb.qpn;
        pb.dlid = 1, pb.remote_qpn = qa.qpn;
        pb.sq_psn = p.rq_psn;
        pb.rq_psn = p.sq_psn;
        a.to_rts(qa, p);
        b.to_rts(qb, pb);
    }

    Ctx query(Node& n, const TQp& q, Status* st = nullptr)
    {
        std::memset(n.d.out().data(), 0xa5, qpc::kCtxOffset + qpc::kSize);
        Status s = n.d.cmd(op::kQueryQp, 0, n.d.out_box(), q.qpn);
        if (st)
            *st = s;
        else
            EXPECT_EQ(s, Status::Ok);
        Ctx c;
        std::memcpy(c.data(), n.d.out().data() + qpc::kCtxOffset, c.size());
        return c;
    }

    static uint64_t get(const Ctx& c, const Field& f) { return f.get(c); }


};

// Every attribute ib_mthca's mthca_query_qp reads, as the three transitions set them.
void expect_rc_attributes(const Ctx& c, const QpParams& p, uint32_t dest_qpn)
{
    EXPECT_EQ(qpc::kState.get(c), unsigned(QpState::Rts));
    EXPECT_EQ(qpc::kServiceType.get(c), unsigned(QpService::Rc));
    EXPECT_EQ(qpc::kMtu.get(c), p.mtu);
    EXPECT_EQ(qpc::kMsgMax.get(c), 31u);
    EXPECT_EQ(qpc::kPmState.get(c), 3u);  // migrated
    EXPECT_EQ(qpc::kRemoteQpn.get(c), dest_qpn);
    EXPECT_EQ(qpc::kRqPsn.get(c), p.rq_psn);
    EXPECT_EQ(qpc::kSqPsn.get(c), p.sq_psn);
    EXPECT_EQ(qpc::kRre.get(c), p.rre);
    EXPECT_EQ(qpc::kRwe.get(c), p.rwe);
    EXPECT_EQ(qpc::kRae.get(c), p.rae);
    EXPECT_EQ(qpc::kSraMax.get(c), 3u);
    EXPECT_EQ(qpc::kRraMax.get(c), 1u);
    EXPECT_EQ(qpc::kRetryCount.get(c), p.retry_cnt);
    EXPECT_EQ(qpc::kMinRnrTimer.get(c), p.min_rnr_timer);
    EXPECT_EQ(qpc::kPriPort.get(c), p.port);
    EXPECT_EQ(qpc::kPriPkeyIndex.get(c), p.pkey_index);
    EXPECT_EQ(qpc::kPriAckTimeout.get(c), p.timeout);
    EXPECT_EQ(qpc::kPriRnrRetry.get(c), p.rnr_retry);
    EXPECT_EQ(qpc::kPriRlid.get(c), p.dlid);
    EXPECT_EQ(qpc::kPriPathBits.get(c), p.path_bits);
    EXPECT_EQ(qpc::kPriSl.get(c), p.sl);
    EXPECT_EQ(qpc::kPriGrh.get(c), p.grh);
    EXPECT_EQ(qpc::kPriSgidIndex.get(c), p.sgid_index);
    EXPECT_EQ(qpc::kPriHopLimit.get(c), p.hop_limit);
    EXPECT_EQ(qpc::kPriTclass.get(c), p.tclass);
    EXPECT_EQ(qpc::kPriFlowLabel.get(c), p.flow_label);
    EXPECT_EQ(std::memcmp(c.data() + qpc::kPriPath + 0x10, p.dgid.data(), 16), 0);
}

TEST_F(QueryQp, RcReportsWhatEachTransitionSet)
{
    QpParams p = distinct();
    connect(p);
    Ctx c = query(a, qa);
    expect_rc_attributes(c, p, qb.qpn);
    EXPECT_EQ(qpc::kLocalQpn.get(c), qa.qpn);
    // No alternate path was given: it reads as zero.
    for (size_t i = qpc::kAltPath; i < qpc::kAltPath + qpc::path::kSize; ++i)
        EXPECT_EQ(c[i], 0) << "alternate path byte " << i;
    // The engine took the same values.
    const Qp* q = a.core().find_qp(qa.qpn);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->a.rra_max, 1u);
    EXPECT_EQ(q->a.sra_max, 3u);
    EXPECT_EQ(q->a.hop_limit, p.hop_limit);
    EXPECT_EQ(q->a.flow, p.flow_label);
    EXPECT_EQ(q->a.rgid, p.dgid);
}

TEST_F(QueryQp, Rts2RtsWithoutOptParamsKeepsEverything)
{
    QpParams p = distinct();
    connect(p);
    Ctx before = query(a, qa);
    // What RTS2RTS carries without opt-param bits must not matter, even
    // values the driver would never write there.
    QpParams junk;
    junk.remote_qpn = 0x777, junk.rq_psn = 0x1, junk.sq_psn = 0x2, junk.mtu = 1;
    ASSERT_EQ(a.modify(qa, op::kRts2Rts, QpState::Rts, junk, 0), Status::Ok);
    Ctx after = query(a, qa);
    EXPECT_EQ(before, after);
    expect_rc_attributes(after, p, qb.qpn);
}

TEST_F(QueryQp, Rts2RtsWithOneOptParamChangesOnlyThatField)
{
    QpParams p = distinct();
    connect(p);
    Ctx before = query(a, qa);
    QpParams n = p;
    n.min_rnr_timer = 3;
    n.timeout = 2, n.retry_cnt = 1;  // not selected: ignored
    ASSERT_EQ(a.modify(qa, op::kRts2Rts, QpState::Rts, n, qpc::opt::kRnrTimeout), Status::Ok);
    Ctx after = query(a, qa);
    EXPECT_EQ(qpc::kMinRnrTimer.get(after), 3u);
    qpc::kMinRnrTimer.set(after, p.min_rnr_timer);
    EXPECT_EQ(before, after);
    EXPECT_EQ(a.core().find_qp(qa.qpn)->a.min_rnr_timer, 3u);

    // The alternate path as written, and only with its bit.
    n.alt_port = 1, n.alt_pkey_index = 0, n.alt_dlid = 0x42, n.alt_timeout = 9, n.alt_sl = 2;
    ASSERT_EQ(a.modify(qa, op::kRts2Rts, QpState::Rts, n, qpc::opt::kAltAddrPath), Status::Ok);
    after = query(a, qa);
    EXPECT_EQ(get(after, qpc::at(qpc::kAltPath, qpc::path::kPort)), 1u);
    EXPECT_EQ(get(after, qpc::at(qpc::kAltPath, qpc::path::kRlid)), 0x42u);
    EXPECT_EQ(get(after, qpc::at(qpc::kAltPath, qpc::path::kAckTimeout)), 9u);
    EXPECT_EQ(get(after, qpc::at(qpc::kAltPath, qpc::path::kSl)), 2u);
    QpParams kept = p;
    kept.min_rnr_timer = 3;
    expect_rc_attributes(after, kept, qb.qpn);  // n's timeout and retry count were never selected
}

TEST_F(QueryQp, AccessFlagsAndRnrRetryChangeWithTheirBits)
{
    QpParams p = distinct();
    connect(p);
    QpParams n = p;
    n.rre = false, n.rwe = true, n.rae = false;
    n.rnr_retry = 2;
    ASSERT_EQ(a.modify(qa, op::kRts2Rts, QpState::Rts, n, qpc::opt::kRre | qpc::opt::kRwe | qpc::opt::kRae),
              Status::Ok);
    Ctx c = query(a, qa);
    EXPECT_EQ(qpc::kRre.get(c), 0u);
    EXPECT_EQ(qpc::kRwe.get(c), 1u);
    EXPECT_EQ(qpc::kRae.get(c), 0u);
    EXPECT_EQ(qpc::kPriRnrRetry.get(c), p.rnr_retry);
    EXPECT_EQ(qpc::kSqPsn.get(c), p.sq_psn);
}

TEST_F(QueryQp, EngineMadeErrorReadsBackAsErr)
{
    QpParams p = distinct();
    p.retry_cnt = 1;
    p.timeout = 10;  // 4.2 ms
    p.grh = false;
    connect(p);
    uint64_t sbuf = a.alloc(4096);
    uint32_t sk = a.reg(sbuf, 4096);
    link.drop_all = true;
    Node::SendWr wr;
    wr.sges = {{sbuf, 16, sk}};
    a.post_send(qa, wr);
    // SQD while the WQE is outstanding: the hardware's "draining".
    ASSERT_EQ(a.modify(qa, op::kRts2Sqd, QpState::Sqd, p, 0), Status::Ok);
    EXPECT_EQ(qpc::kState.get(query(a, qa)), qpc::kStateDraining);
    pump_time(30'000'000, 1'000'000);
    TCqe c;
    ASSERT_TRUE(a.poll(acq, &c));
    EXPECT_EQ(c.syndrome, cqe::kRetryExc);
    ASSERT_EQ(a.core().find_qp(qa.qpn)->state, QpState::Err);
    Ctx ctx = query(a, qa);
    EXPECT_EQ(qpc::kState.get(ctx), unsigned(QpState::Err));
    EXPECT_EQ(qpc::kRemoteQpn.get(ctx), qb.qpn);
    EXPECT_EQ(qpc::kSqPsn.get(ctx), p.sq_psn);

    // ERR2RST with opcode modifier 2 hands the merged context back.
    std::memset(a.d.out().data(), 0, qpc::kCtxOffset + qpc::kSize);
    ASSERT_EQ(a.d.cmd(op::kErr2Rst, 0, a.d.out_box(), qa.qpn, 2), Status::Ok);
    auto out = a.d.out().subspan(qpc::kCtxOffset);
    EXPECT_EQ(qpc::kState.get(out), unsigned(QpState::Rst));
    EXPECT_EQ(qpc::kRemoteQpn.get(out), qb.qpn);
    EXPECT_EQ(qpc::kRqPsn.get(out), p.rq_psn);
    EXPECT_EQ(qpc::kPriAckTimeout.get(out), p.timeout);

    // In RESET: a zeroed context in state RST.
    Ctx z = query(a, qa);
    EXPECT_EQ(z, Ctx{});
}

TEST_F(QueryQp, SqdWithNothingOutstandingIsPlainSqd)
{
    connect(distinct());
    ASSERT_EQ(a.modify(qa, op::kRts2Sqd, QpState::Sqd, QpParams{}, 0), Status::Ok);
    EXPECT_EQ(qpc::kState.get(query(a, qa)), unsigned(QpState::Sqd));
}

TEST_F(QueryQp, UdQkeyAndPkeyIndex)
{
    TQp u = a.make_qp(QpService::Ud, acq, acq, 16, 16);
    Ctx r = query(a, u);
    EXPECT_EQ(r, Ctx{});  // RESET before the first transition
    QpParams p;
    p.qkey = 0x11223344;
    p.sq_psn = 0x3456;
    a.to_rts(u, p);
    Ctx c = query(a, u);
    EXPECT_EQ(qpc::kState.get(c), unsigned(QpState::Rts));
    EXPECT_EQ(qpc::kServiceType.get(c), unsigned(QpService::Ud));
    EXPECT_EQ(qpc::kQkey.get(c), 0x11223344u);
    EXPECT_EQ(qpc::kSqPsn.get(c), 0x3456u);
    EXPECT_EQ(qpc::kPriPort.get(c), 1u);
    EXPECT_EQ(qpc::kMtu.get(c), 4u);
    // RTS2RTS without Q_KEY keeps it; with it, changes it.
    p.qkey = 0x55667788;
    ASSERT_EQ(a.modify(u, op::kRts2Rts, QpState::Rts, p, 0), Status::Ok);
    EXPECT_EQ(qpc::kQkey.get(query(a, u)), 0x11223344u);
    ASSERT_EQ(a.modify(u, op::kRts2Rts, QpState::Rts, p, qpc::opt::kQkey), Status::Ok);
    EXPECT_EQ(qpc::kQkey.get(query(a, u)), 0x55667788u);
    EXPECT_EQ(a.core().find_qp(u.qpn)->a.qkey, 0x55667788u);
}

TEST_F(QueryQp, HostileQueriesGetAFirmwareStatus)
{
    connect(distinct());
    Status st;
    // EE context.
    query(a, TQp{.qpn = qa.qpn | 1u << 24}, &st);
    EXPECT_EQ(st, Status::BadParam);
    // Another QPN in the same table slot, and QPNs beyond the table: RESET.
    for (uint32_t qpn : {qa.qpn ^ 0x800000u, 0xffffffu, 0x7fffffu}) {
        Ctx c = query(a, TQp{.qpn = qpn}, &st);
        EXPECT_EQ(st, Status::Ok) << qpn;
        EXPECT_EQ(c, Ctx{}) << qpn;
    }
    // An output mailbox outside guest RAM.
    EXPECT_EQ(a.d.cmd(op::kQueryQp, 0, ~0ull << 12, qa.qpn), Status::InternalErr);
    EXPECT_EQ(a.d.cmd(op::kErr2Rst, 0, ~0ull << 12, qa.qpn, 2), Status::InternalErr);
    // Opcode modifiers ERR2RST does not know.
    EXPECT_EQ(a.d.cmd(op::kErr2Rst, 0, a.d.out_box(), qa.qpn, 7), Status::BadOp);
    // A hostile transition with every opt-param bit and a garbage context.
    std::memset(a.d.in().data(), 0xff, 0x200);
    put32(a.d.in(), 8 + 0x20, 1u << 24);  // a valid port
    put32(a.d.in(), 8 + 0x0c, 0);         // and UAR
    put8(a.d.in(), 8 + 0x09, 0x07);       // and queue sizes within QUERY_DEV_LIM
    put8(a.d.in(), 8 + 0x0a, 0x07);
    // The alternate path's port 255 and P_Key index 127 are refused...
    EXPECT_EQ(a.d.cmd(op::kRts2Rts, a.d.in_box(), 0, qa.qpn), Status::BadParam);
    put32(a.d.in(), 8 + 0x40, 1u << 24);  // ... a valid one is taken
    EXPECT_EQ(a.d.cmd(op::kRts2Rts, a.d.in_box(), 0, qa.qpn), Status::Ok);
    Ctx c = query(a, qa);
    EXPECT_EQ(qpc::kState.get(c), unsigned(QpState::Rts));
    EXPECT_EQ(qpc::kServiceType.get(c), unsigned(QpService::Rc));  // kept from RST2INIT
}

}  // namespace
}  // namespace ibemu::mthca::test
