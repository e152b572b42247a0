// SPDX-License-Identifier: GPL-2.0
//
// Alternate paths and path migration (IBA 17.2.8) between two MT25208
// models: MODIFY_QP loads the alternate path and the migration state,
// QUERY_QP reports them, a software-commanded migration swaps the paths and
// the packets follow, the responder migrates on the first packet from its
// alternate path (PATH_MIG event), REARM arms on a MigReq 0 packet, and
// hostile values get a firmware status.
#include <gtest/gtest.h>

#include <cstring>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

using Ctx = std::array<uint8_t, qpc::kSize>;

// Base LIDs 4 (a) and 8 (b), LMC 1: each port answers to two LIDs.
constexpr uint16_t kLidA = 4, kLidB = 8;
const Field kAltPort = qpc::at(qpc::kAltPath, qpc::path::kPort);
const Field kAltPkey = qpc::at(qpc::kAltPath, qpc::path::kPkeyIndex);
const Field kAltRlid = qpc::at(qpc::kAltPath, qpc::path::kRlid);
const Field kAltPathBits = qpc::at(qpc::kAltPath, qpc::path::kPathBits);
const Field kAltAckTimeout = qpc::at(qpc::kAltPath, qpc::path::kAckTimeout);
const Field kAltSl = qpc::at(qpc::kAltPath, qpc::path::kSl);

class Apm : public TwoNodes {
protected:
    void SetUp() override
    {
        TwoNodes::SetUp();
        a.core().set_port_lid(1, kLidA, 1);
        b.core().set_port_lid(1, kLidB, 1);
    }

    // An RC pair on the base LIDs; the alternate paths (base LID + 1 both
    // ways, SL 3) are loaded later by load_alt().
    void connect(QpService st = QpService::Rc)
    {
        qa = a.make_qp(st, acq, acq, 64, 64);
        qb = b.make_qp(st, bcq, bcq, 64, 64);
        pa.dlid = kLidB, pa.remote_qpn = qb.qpn;
        pb.dlid = kLidA, pb.remote_qpn = qa.qpn;
        pa.sq_psn = pb.rq_psn = 0x123;
        pb.sq_psn = pa.rq_psn = 0x456;
        pa.timeout = pb.timeout = 14;
        pa.alt_dlid = kLidB + 1, pb.alt_dlid = kLidA + 1;
        pa.alt_path_bits = pb.alt_path_bits = 1;
        pa.alt_sl = pb.alt_sl = 3;
        pa.alt_timeout = pb.alt_timeout = 12;
        a.to_rts(qa, pa);
        b.to_rts(qb, pb);
        sbuf = a.alloc(8192), rbuf = b.alloc(8192);
        sk = a.reg(sbuf, 8192), rk = b.reg(rbuf, 8192);
    }

    // RTS2RTS with the alternate path and a migration state, as ib_mthca
    // sends IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE.
    Status load_alt(Node& n, TQp& q, QpParams& p, uint8_t pm)
    {
        p.pm_state = pm;
        Status s = n.modify(q, op::kRts2Rts, QpState::Rts, p, qpc::opt::kAltAddrPath | qpc::opt::kPmState);
        p.pm_state = qpc::kPmMigrated;
        return s;
    }

    Status set_pm(Node& n, TQp& q, QpParams p, uint8_t pm, uint16_t opcode = op::kRts2Rts,
                  QpState to = QpState::Rts)
    {
        p.pm_state = pm;
        return n.modify(q, opcode, to, p, qpc::opt::kPmState);
    }

    Ctx query(Node& n, const TQp& q)
    {
        EXPECT_EQ(n.d.cmd(op::kQueryQp, 0, n.d.out_box(), q.qpn), Status::Ok);
        Ctx c;
        std::memcpy(c.data(), n.d.out().data() + qpc::kCtxOffset, c.size());
        return c;
    }
    unsigned pm(Node& n, const TQp& q) { return unsigned(qpc::kPmState.get(query(n, q))); }

    std::vector<std::array<uint8_t, 32>> events(Node& n, unsigned eq)
    {
        n.d.interrupt();
        auto v = n.d.eqs_[eq].seen;
        n.d.eqs_[eq].seen.clear();
        return v;
    }
    unsigned path_mig_events(Node& n, uint32_t qpn)
    {
        unsigned k = 0;
        for (auto& e : events(n, 1))
            k += e[1] == ev::kPathMig && get32(std::span<const uint8_t>(e.data() + 4, 4), 0) == qpn;
        return k;
    }

    // One SEND of `len` bytes a -> b, checked at b byte for byte; both
    // sides' completions must be successful.
    void send_and_check(uint32_t len, uint8_t seed)
    {
        uint8_t* s = a.mem().at(sbuf);
        for (uint32_t i = 0; i < len; ++i)
            s[i] = uint8_t(seed + i * 13);
        std::memset(b.mem().at(rbuf), 0, len);
        b.post_recv(qb, {{rbuf, 8192, rk}});
        Node::SendWr wr;
        wr.sges = {{sbuf, len, sk}};
        a.post_send(qa, wr);
        link.pump();
        TCqe c;
        ASSERT_TRUE(b.poll(bcq, &c));
        EXPECT_FALSE(c.error) << unsigned(c.syndrome);
        EXPECT_EQ(c.byte_cnt, len);
        ASSERT_TRUE(a.poll(acq, &c));
        EXPECT_FALSE(c.error) << unsigned(c.syndrome);
        EXPECT_EQ(std::memcmp(a.mem().at(sbuf), b.mem().at(rbuf), len), 0);
    }

    static uint16_t dlid(const CopiedPacket& p) { return uint16_t(p.hdr[2] << 8 | p.hdr[3]); }
    static uint16_t slid(const CopiedPacket& p) { return uint16_t(p.hdr[6] << 8 | p.hdr[7]); }
    static uint8_t sl(const CopiedPacket& p) { return p.hdr[1] >> 4; }
    static bool migreq(const CopiedPacket& p) { return p.hdr[8 + 1] & 0x40; }

    QpParams pa, pb;
    uint64_t sbuf = 0, rbuf = 0;
    uint32_t sk = 0, rk = 0;
};

TEST_F(Apm, AlternatePathLoadsAndQueryReportsIt)
{
    connect();
    EXPECT_EQ(pm(a, qa), qpc::kPmMigrated);
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmRearm), Status::Ok);
    Ctx c = query(a, qa);
    EXPECT_EQ(qpc::kPmState.get(c), qpc::kPmRearm);
    EXPECT_EQ(kAltPort.get(c), 1u);
    EXPECT_EQ(kAltPkey.get(c), 0u);
    EXPECT_EQ(kAltRlid.get(c), kLidB + 1u);
    EXPECT_EQ(kAltPathBits.get(c), 1u);
    EXPECT_EQ(kAltAckTimeout.get(c), 12u);
    EXPECT_EQ(kAltSl.get(c), 3u);
    EXPECT_EQ(qpc::kPriRlid.get(c), kLidB);  // the primary path is untouched
    // Without the PM_STATE bit the state the context carries is ignored.
    QpParams p = pa;
    p.pm_state = qpc::kPmMigrated;
    ASSERT_EQ(a.modify(qa, op::kRts2Rts, QpState::Rts, p, 0), Status::Ok);
    EXPECT_EQ(pm(a, qa), qpc::kPmRearm);
}

// REARM sends MigReq 0 and turns ARMED on the first packet with MigReq 0;
// a MIGRATED QP sends MigReq 1, and a REARM QP that only hears MigReq 1
// stays REARM.
TEST_F(Apm, RearmArmsOnAPacketWithMigReqZero)
{
    connect();
    link.capture = true;
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmRearm), Status::Ok);
    send_and_check(100, 1);  // a (REARM) sends MigReq 0; b (MIGRATED) ACKs with MigReq 1
    ASSERT_GE(link.captured.size(), 2u);
    EXPECT_FALSE(migreq(link.captured[0]));
    EXPECT_EQ(link.captured[0].from, 0);
    EXPECT_TRUE(migreq(link.captured.back()));
    EXPECT_EQ(link.captured.back().from, 1);
    EXPECT_EQ(pm(a, qa), qpc::kPmRearm);
    EXPECT_EQ(pm(b, qb), qpc::kPmMigrated);  // b has no alternate path: MigReq means nothing to it
    ASSERT_EQ(load_alt(b, qb, pb, qpc::kPmRearm), Status::Ok);
    link.captured.clear();
    send_and_check(100, 2);
    EXPECT_EQ(pm(a, qa), qpc::kPmArmed);
    EXPECT_EQ(pm(b, qb), qpc::kPmArmed);
    for (const CopiedPacket& p : link.captured) {
        EXPECT_FALSE(migreq(p));
        EXPECT_EQ(dlid(p), p.from == 0 ? kLidB : kLidA);  // still the primary path
    }
    EXPECT_EQ(path_mig_events(a, qa.qpn), 0u);
    EXPECT_EQ(path_mig_events(b, qb.qpn), 0u);
}

// The consumer migrates the requester (RTS2RTS, MIGRATED while ARMED): its
// packets take the alternate path (DLID, SLID path bits, SL) with MigReq
// 1; the responder, ARMED, migrates on the first of them and raises
// PATH_MIG; its ACKs take its alternate path; QUERY_QP on both shows the
// paths swapped. The requester, told by its consumer, gets no event.
TEST_F(Apm, SoftwareMigrationMovesBothSidesToTheAlternatePath)
{
    connect();
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmArmed), Status::Ok);
    ASSERT_EQ(load_alt(b, qb, pb, qpc::kPmArmed), Status::Ok);
    send_and_check(3000, 3);  // multi-packet, on the primary path
    EXPECT_EQ(a.core().doorbells().path_migrations, 0u);

    ASSERT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated), Status::Ok);
    Ctx c = query(a, qa);
    EXPECT_EQ(qpc::kPmState.get(c), qpc::kPmMigrated);
    EXPECT_EQ(qpc::kPriRlid.get(c), kLidB + 1u);
    EXPECT_EQ(qpc::kPriPathBits.get(c), 1u);
    EXPECT_EQ(qpc::kPriSl.get(c), 3u);
    EXPECT_EQ(qpc::kPriAckTimeout.get(c), 12u);
    EXPECT_EQ(kAltRlid.get(c), kLidB);  // the old primary
    EXPECT_EQ(kAltSl.get(c), 0u);
    EXPECT_EQ(pm(b, qb), qpc::kPmArmed);  // nothing sent yet

    link.capture = true;
    send_and_check(3000, 4);
    ASSERT_GE(link.captured.size(), 3u);
    for (const CopiedPacket& p : link.captured) {
        EXPECT_TRUE(migreq(p));
        EXPECT_EQ(sl(p), 3u);
        EXPECT_EQ(dlid(p), p.from == 0 ? kLidB + 1 : kLidA + 1);
        EXPECT_EQ(slid(p), p.from == 0 ? kLidA + 1 : kLidB + 1);
    }
    EXPECT_EQ(path_mig_events(b, qb.qpn), 1u);
    EXPECT_EQ(path_mig_events(a, qa.qpn), 0u);
    Ctx cb = query(b, qb);
    EXPECT_EQ(qpc::kPmState.get(cb), qpc::kPmMigrated);
    EXPECT_EQ(qpc::kPriRlid.get(cb), kLidA + 1u);
    EXPECT_EQ(kAltRlid.get(cb), kLidA);
    EXPECT_EQ(a.core().doorbells().path_migrations, 1u);
    EXPECT_EQ(b.core().doorbells().path_migrations, 1u);

    // Traffic goes on; no second event.
    send_and_check(64, 5);
    EXPECT_EQ(path_mig_events(b, qb.qpn), 0u);

    // Now MIGRATED, the old path is not a source any more.
    uint64_t bad = b.core().doorbells().rx_bad_source;
    a.core().set_port_lid(1, kLidA, 0);  // a's SLID loses its path bit
    b.post_recv(qb, {{rbuf, 8192, rk}});
    Node::SendWr wr;
    wr.sges = {{sbuf, 8, sk}};
    a.post_send(qa, wr);
    link.pump();
    TCqe e;
    EXPECT_FALSE(b.poll(bcq, &e));
    EXPECT_GT(b.core().doorbells().rx_bad_source, bad);
}

// A packet from the alternate path is dropped unless the QP is ARMED.
TEST_F(Apm, AlternatePathIsNoSourceUnlessArmed)
{
    connect();
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmArmed), Status::Ok);
    ASSERT_EQ(load_alt(b, qb, pb, qpc::kPmRearm), Status::Ok);
    ASSERT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated), Status::Ok);
    uint64_t bad = b.core().doorbells().rx_bad_source;
    b.post_recv(qb, {{rbuf, 8192, rk}});
    Node::SendWr wr;
    wr.sges = {{sbuf, 8, sk}};
    a.post_send(qa, wr);
    link.pump();
    TCqe e;
    EXPECT_FALSE(b.poll(bcq, &e));
    EXPECT_GT(b.core().doorbells().rx_bad_source, bad);
    EXPECT_EQ(pm(b, qb), qpc::kPmRearm);  // MigReq 1 does not arm it
    EXPECT_EQ(qpc::kPriRlid.get(query(b, qb)), kLidA);
    EXPECT_EQ(path_mig_events(b, qb.qpn), 0u);
}

// SQD2RTS may migrate too; the run state (PSNs) carries over.
TEST_F(Apm, Sqd2RtsMigrates)
{
    connect();
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmArmed), Status::Ok);
    ASSERT_EQ(load_alt(b, qb, pb, qpc::kPmArmed), Status::Ok);
    send_and_check(10, 6);
    ASSERT_EQ(a.modify(qa, op::kRts2Sqd, QpState::Sqd, pa, 0), Status::Ok);
    // Not into SQD.
    EXPECT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated, op::kSqd2Sqd, QpState::Sqd), Status::BadParam);
    ASSERT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated, op::kSqd2Rts, QpState::Rts), Status::Ok);
    EXPECT_EQ(qpc::kPriRlid.get(query(a, qa)), kLidB + 1u);
    send_and_check(10, 7);
    EXPECT_EQ(path_mig_events(b, qb.qpn), 1u);
}

TEST_F(Apm, HostileValuesGetAFirmwareStatus)
{
    connect();
    Ctx before = query(a, qa);
    QpParams p = pa;
    // Alternate port 0 and 2 (the HCA has one), P_Key index past the table.
    p.alt_port = 0;
    EXPECT_EQ(load_alt(a, qa, p, qpc::kPmRearm), Status::BadParam);
    p.alt_port = 2;
    EXPECT_EQ(load_alt(a, qa, p, qpc::kPmRearm), Status::BadParam);
    p.alt_port = 0xff;
    EXPECT_EQ(load_alt(a, qa, p, qpc::kPmRearm), Status::BadParam);
    p.alt_port = 1, p.alt_pkey_index = kPkeyTableLen;
    EXPECT_EQ(load_alt(a, qa, p, qpc::kPmRearm), Status::BadParam);
    // The reserved state 2; ARMED without an alternate path; MIGRATED while
    // not armed.
    EXPECT_EQ(set_pm(a, qa, pa, 2), Status::BadParam);
    EXPECT_EQ(set_pm(a, qa, pa, qpc::kPmArmed), Status::BadParam);
    EXPECT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated), Status::Ok);  // already MIGRATED: nothing to do
    EXPECT_EQ(query(a, qa), before);  // nothing refused changed anything
    ASSERT_EQ(load_alt(a, qa, pa, qpc::kPmRearm), Status::Ok);
    EXPECT_EQ(set_pm(a, qa, pa, qpc::kPmMigrated), Status::BadParam);
    EXPECT_EQ(pm(a, qa), qpc::kPmRearm);
    EXPECT_EQ(qpc::kPriRlid.get(query(a, qa)), kLidB);
    EXPECT_EQ(a.core().doorbells().path_migrations, 0u);

    // Transitions that take neither (INIT2INIT, SQERR2RTS) and UD QPs.
    TQp r = a.make_qp(QpService::Rc, acq, acq, 16, 16);
    QpParams q;
    ASSERT_EQ(a.modify(r, op::kRst2Init, QpState::Init, q, 1u << 4 | 1u << 11), Status::Ok);
    EXPECT_EQ(a.modify(r, op::kInit2Init, QpState::Init, q, qpc::opt::kAltAddrPath), Status::BadParam);
    EXPECT_EQ(a.modify(r, op::kInit2Init, QpState::Init, q, qpc::opt::kPmState), Status::BadParam);
    // RST2INIT's context says ARMED: every QP starts MIGRATED anyway.
    TQp r2 = a.make_qp(QpService::Rc, acq, acq, 16, 16);
    q.pm_state = qpc::kPmArmed;
    ASSERT_EQ(a.modify(r2, op::kRst2Init, QpState::Init, q, 1u << 4 | 1u << 11), Status::Ok);
    EXPECT_EQ(pm(a, r2), qpc::kPmMigrated);
    TQp u = a.make_qp(QpService::Ud, acq, acq, 16, 16);
    QpParams pu;
    pu.qkey = 1;
    a.to_rts(u, pu);
    EXPECT_EQ(load_alt(a, u, pu, qpc::kPmRearm), Status::BadParam);
    EXPECT_EQ(set_pm(a, u, pu, qpc::kPmMigrated), Status::BadParam);
    EXPECT_EQ(a.core().find_qp(u.qpn)->state, QpState::Rts);
}

}  // namespace
}  // namespace ibemu::mthca::test
