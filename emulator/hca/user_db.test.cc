// SPDX-License-Identifier: GPL-2.0
//
// Arbel user doorbell records (issue 9 §3): a user context owns one UAR
// page and that UAR's context area in ICM (uarc_base + uar * uarc_size),
// into which the driver maps the process's own doorbell-record pages one
// by one as libmthca allocates them (mthca_map_user_db: MAP_ICM of one
// 4 KiB page; group 0 records fill from page 0 up, group 1 from the last
// page down). The HCA reads the receive, SRQ and CQ consumer-index
// records of the context's queues there, and takes their MMIO doorbells
// only through the context's UAR page.
#include <gtest/gtest.h>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

class UserDoorbells : public TwoNodes {
protected:
    static constexpr uint32_t kUar = 7;  // the user context's UAR

    // B's objects from here on belong to the user context on kUar, with
    // their records on the context's first and last record pages.
    void become_user_context()
    {
        uint64_t per_uar = uint64_t(4096) << b.d.lay.log_uarc_pages;
        last_page = (1u << b.d.lay.log_uarc_pages) - 1;
        b.uar = kUar;
        b.uarc_virt = b.d.lay.uarc_base + kUar * per_uar;
        ASSERT_EQ(b.d.map_icm(b.uarc_virt, 4096), Status::Ok);
        ASSERT_EQ(b.d.map_icm(b.uarc_virt + uint64_t(last_page) * 4096, 4096), Status::Ok);
    }

    // RC QPs qa (on A's CQ) and qb (on `ucq`, B's user CQ), connected
    // and in RTS.
    void connect_on(const TCq& ucq)
    {
        qb = b.make_qp(QpService::Rc, ucq, ucq, 16, 16);
        qa = a.make_qp(QpService::Rc, acq, acq, 16, 16);
        QpParams pa, pb;
        pa.dlid = 2, pa.remote_qpn = qb.qpn;
        pb.dlid = 1, pb.remote_qpn = qa.qpn;
        a.to_rts(qa, pa);
        b.to_rts(qb, pb);
    }

    unsigned last_page = 0;
};

TEST_F(UserDoorbells, QueuesOfAUserContextUseItsRecordPagesAndItsUar)
{
    become_user_context();
    // Group 1 (CQ set_ci, RQ) on the last page, as libmthca places them.
    b.next_db = last_page * 512 + 500;
    TCq ucq = b.make_cq(64);
    connect_on(ucq);
    ASSERT_EQ(b.core().find_qp(qb.qpn)->a.usr_page, kUar);
    ASSERT_EQ(b.core().find_cq(ucq.cqn)->uar, kUar);

    uint64_t sbuf = a.alloc(4096), rbuf = b.alloc(4096);
    uint32_t sk = a.reg(sbuf, 4096), rk = b.reg(rbuf, 4096);
    for (unsigned i = 0; i < 256; ++i)
        a.mem().at(sbuf)[i] = uint8_t(i ^ 0x3c);

    // A receive posted by the record alone (no MMIO in mem-free mode),
    // consumed by A's SEND, completed on the user CQ.
    b.post_recv(qb, {{rbuf, 4096, rk}});
    Node::SendWr wr;
    wr.sges = {{sbuf, 256, sk}};
    a.post_send(qa, wr);
    link.pump();
    TCqe c;
    ASSERT_TRUE(b.poll(ucq, &c));
    EXPECT_FALSE(c.error) << unsigned(c.syndrome);
    EXPECT_EQ(c.byte_cnt, 256u);
    EXPECT_EQ(std::memcmp(b.mem().at(rbuf), a.mem().at(sbuf), 256), 0);
    ASSERT_TRUE(a.poll(acq, &c));
    EXPECT_FALSE(c.error);

    // B's send doorbell through its own UAR page works...
    uint64_t abuf = a.alloc(4096);
    uint32_t ak = a.reg(abuf, 4096);
    a.post_recv(qa, {{abuf, 4096, ak}});
    wr.sges = {{rbuf, 128, rk}};
    b.post_send(qb, wr);
    link.pump();
    ASSERT_TRUE(a.poll(acq, &c));
    EXPECT_FALSE(c.error);
    EXPECT_EQ(std::memcmp(a.mem().at(abuf), a.mem().at(sbuf), 128), 0);
    ASSERT_TRUE(b.poll(ucq, &c));

    // ...and through the driver's page (another context's) it is ignored.
    uint64_t wrong = b.core().doorbells().wrong_uar;
    b.uar = 1;
    a.post_recv(qa, {{abuf, 4096, ak}});
    b.post_send(qb, wr);
    link.pump();
    EXPECT_FALSE(a.poll(acq, &c));
    EXPECT_EQ(b.core().doorbells().wrong_uar, wrong + 1);
    b.uar = kUar;
}

// The consumer index the HCA honours is the one in the user context's
// set_ci record: a CQ whose record never moves overruns at its size, one
// whose record follows the polls does not.
TEST_F(UserDoorbells, CqConsumerIndexComesFromTheContextRecord)
{
    become_user_context();
    b.next_db = last_page * 512 + 300;
    TCq ucq = b.make_cq(4);
    connect_on(ucq);
    uint64_t sbuf = a.alloc(4096), rbuf = b.alloc(4096);
    uint32_t sk = a.reg(sbuf, 4096), rk = b.reg(rbuf, 4096);
    Node::SendWr wr;
    wr.sges = {{sbuf, 8, sk}};
    // Eight sends, each polled: the record advances, nothing overruns.
    for (unsigned i = 0; i < 8; ++i) {
        b.post_recv(qb, {{rbuf, 64, rk}});
        a.post_send(qa, wr);
        link.pump();
        TCqe c;
        ASSERT_TRUE(b.poll(ucq, &c)) << i;
        EXPECT_FALSE(c.error);
        ASSERT_TRUE(a.poll(acq, &c));
    }
    EXPECT_FALSE(b.core().find_cq(ucq.cqn)->overflow);
    // The record is the user's page: the HCA read it there, not a copy.
    uint8_t* rec = b.db_rec(ucq.ci_db);
    ASSERT_NE(rec, nullptr);
    EXPECT_EQ(get32(std::span<const uint8_t>(rec, 4), 0), ucq.cons);
    // Five more without polling: the fifth finds the 4-entry CQ full.
    for (unsigned i = 0; i < 5; ++i) {
        b.post_recv(qb, {{rbuf, 64, rk}});
        a.post_send(qa, wr);
        link.pump();
    }
    EXPECT_TRUE(b.core().find_cq(ucq.cqn)->overflow);
}

// The CQ arm doorbell record (mthca_arbel_arm_cq, libmthca's arm_cq): the
// driver writes the request to the CQ's arm record (the context's
// state_db: consumer index; cqn, type 2, sequence number, 1 solicited or
// 2 next), then rings the doorbell. The HCA takes the request from the
// record, and ignores one whose sequence number is stale: the drivers
// count each completion event (arm_sn, from 1), and an arm sent before
// the driver counted the last event would renew an arm that event used.
TEST_F(UserDoorbells, CqArmComesFromTheArmRecordAndAStaleSequenceIsIgnored)
{
    become_user_context();
    b.next_db = last_page * 512 + 200;
    TCq ucq = b.make_cq(64);
    connect_on(ucq);
    uint64_t sbuf = a.alloc(4096), rbuf = b.alloc(4096);
    uint32_t sk = a.reg(sbuf, 4096), rk = b.reg(rbuf, 4096);
    auto comp_events = [&] {
        b.d.interrupt();
        unsigned n = 0;
        for (const auto& e : b.d.eqs_[0].seen)
            n += e[1] == ev::kComp && (get32(std::span<const uint8_t>(e.data() + 4, 4), 0) & 0xffffff) == ucq.cqn;
        b.d.eqs_[0].seen.clear();
        return n;
    };
    auto send = [&](bool solicited) {
        Node::SendWr wr;
        wr.sges = {{sbuf, 8, sk}};
        wr.solicited = solicited;
        b.post_recv(qb, {{rbuf, 64, rk}});
        a.post_send(qa, wr);
        link.pump();
        b.drain(ucq);
        a.drain(acq);
    };
    comp_events();
    // Sequence number 1 on a new CQ: armed, the completion raises one event.
    b.arm(ucq, false);
    send(false);
    EXPECT_EQ(comp_events(), 1u);
    // Armed again with the same number, as if the driver had not yet
    // counted that event: stale, no event follows.
    uint64_t stale = b.core().doorbells().cq_stale_arm;
    b.arm(ucq, false);
    EXPECT_EQ(b.core().doorbells().cq_stale_arm, stale + 1);
    send(false);
    EXPECT_EQ(comp_events(), 0u);
    // Counted (libmthca's cq_event): the next arm is taken.
    ++ucq.arm_sn;
    b.arm(ucq, false);
    send(false);
    EXPECT_EQ(comp_events(), 1u);
    ++ucq.arm_sn;
    // The request is the record's: it says solicited-only while the
    // doorbell rung after it says next completion. An unsolicited
    // completion raises nothing, a solicited one the event.
    uint32_t sn = ucq.arm_sn & 3;
    std::span<uint8_t> rec(b.db_rec(ucq.arm_db), 8);
    put32(rec, 0, ucq.cons);
    put32(rec, 4, ucq.cqn << 8 | 2u << 5 | sn << 3 | 1);
    b.d.write_be64(2, uint64_t(b.uar) * 4096 + kUarCqDoorbell, uint64_t(sn << 28 | 2u << 24 | ucq.cqn) << 32 | ucq.cons);
    EXPECT_EQ(b.core().find_cq(ucq.cqn)->arm, CqArm::NextSolicited);
    send(false);
    EXPECT_EQ(comp_events(), 0u);
    send(true);
    EXPECT_EQ(comp_events(), 1u);
    EXPECT_EQ(b.core().doorbells().cq_arm_no_record, 0u);
}

}  // namespace
}  // namespace ibemu::mthca::test
