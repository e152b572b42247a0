// SPDX-License-Identifier: GPL-2.0
//
// The device limits QUERY_DEV_LIM reports, honoured both ways: every
// object can be created at its limit without the model allocating in
// proportion to its size, and the firmware refuses one size step more
// (BAD_PARAM, which ib_mthca turns into EINVAL).
#include <gtest/gtest.h>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

struct LimitsTest : ::testing::Test {
    void SetUp() override
    {
        n.up(1, &link.a, &ep);
        link.ep[0] = ep;
    }
    Node n{0, 160u << 20};
    TestLink link;
    PortEndpoint* ep = nullptr;
};

// The figures ib_mthca derives from the outbox (mthca_cmd.c and
// mthca_main.c: the mem-free reading of each field).
TEST_F(LimitsTest, QueryDevLimReportsTheMt25208Figures)
{
    DriverSim& d = n.d;
    ASSERT_EQ(d.cmd(op::kQueryDevLim, 0, d.out_box()), Status::Ok);
    auto o = d.out();
    unsigned max_qp_sz = 1u << o[0x11], max_srq_sz = 1u << o[0x10], max_cq_sz = 1u << o[0x19];
    EXPECT_EQ(max_qp_sz, 16384u);            // ibv_devinfo max_qp_wr
    EXPECT_EQ(max_srq_sz, 16384u);           // max_srq_wr
    EXPECT_EQ(max_cq_sz - 1, 131071u);       // max_cqe (one kept spare)
    EXPECT_EQ(1u << (o[0x14] >> 4), 64u);    // reserved SRQs: max_srq 960 of 1024
    EXPECT_EQ(1u << (o[0x15] & 0x1f), 1024u);  // SRQs (the driver's profile takes them all)
    EXPECT_EQ(1u << (o[0x12] & 0xf), 1024u); // reserved QPs: max_qp 64512
    EXPECT_EQ(1u << (o[0x1a] & 0xf), 128u);  // reserved CQs: max_cq 65408
    EXPECT_EQ(1u << (o[0x22] & 0xf), 16u);   // reserved MPTs: max_mr 131056
    unsigned max_sg = std::min<unsigned>(o[0x51], o[0x55]);
    unsigned desc = std::min<unsigned>(get16(o, 0x52), get16(o, 0x56));
    EXPECT_EQ(std::min<unsigned>(max_sg, (desc - 16 - 48) / 16), 27u);  // max_sge, max_srq_sge
    EXPECT_EQ(1u << o[0x21], 1u << 30);  // largest region
    uint32_t flags = get32(o, 0x44);
    EXPECT_FALSE(flags & (1u << 16)) << "memory windows advertised, but BIND_MW is not implemented";
    EXPECT_FALSE(flags & (1u << 17)) << "APM advertised, but path migration is not implemented";
}

TEST_F(LimitsTest, CqAtTheLimitAndOnePast)
{
    uint64_t before = n.core().model_bytes();
    TCq cq = n.make_cq(1u << kLogMaxCqSz);
    ASSERT_NE(n.core().find_cq(cq.cqn), nullptr);
    EXPECT_LT(n.core().model_bytes() - before, 1024u) << "a CQ of 2^17 entries must not cost host memory per entry";
    // One size step more: the same context with log size 18.
    uint32_t cqn = cq.cqn + 1;
    ASSERT_EQ(n.d.table_get(n.d.lay.cqc_base, cqn, n.d.lim.cqc_sz), Status::Ok);
    put32(n.d.in(), 0x0c, (kLogMaxCqSz + 1) << 24 | n.uar);
    put32(n.d.in(), 0x30, cqn);
    EXPECT_EQ(n.d.cmd(op::kSw2HwCq, n.d.in_box(), 0, cqn), Status::BadParam);
    EXPECT_EQ(n.core().find_cq(cqn), nullptr);

    // RESIZE_CQ: to the limit, then one past (mthca_RESIZE_CQ's mailbox).
    std::memset(n.d.in().data(), 0, 0x40);
    put8(n.d.in(), 0x0c, uint8_t(kLogMaxCqSz));
    put32(n.d.in(), 0x1c, cq.lkey);
    EXPECT_EQ(n.d.cmd(op::kResizeCq, n.d.in_box(), 0, cq.cqn), Status::Ok);
    put8(n.d.in(), 0x0c, uint8_t(kLogMaxCqSz + 1));
    EXPECT_EQ(n.d.cmd(op::kResizeCq, n.d.in_box(), 0, cq.cqn), Status::BadParam);
    EXPECT_EQ(n.core().find_cq(cq.cqn)->log_size, kLogMaxCqSz);
}

// Review 2.2.14: SW2HW_CQ checks the error EQ as it checks the completion
// EQ, and RESIZE_CQ takes only a live region of the CQ's PD large enough
// for the new size as the new buffer (mthca_resize_cq registers one).
TEST_F(LimitsTest, CqErrorEqAndResizeRegionAreChecked)
{
    TCq cq = n.make_cq(64);
    uint32_t cqn = cq.cqn + 1;
    ASSERT_EQ(n.d.table_get(n.d.lay.cqc_base, cqn, n.d.lim.cqc_sz), Status::Ok);
    // make_cq's context again, for cqn, with error EQ 200 (there are 64).
    std::memset(n.d.in().data(), 0, 0x40);
    put32(n.d.in(), 0x00, 1u << 18);
    put32(n.d.in(), 0x0c, 6u << 24 | n.uar);
    put32(n.d.in(), 0x10, 200);
    put32(n.d.in(), 0x14, n.d.eqs_[0].eqn);
    put32(n.d.in(), 0x18, n.d.driver_pd);
    put32(n.d.in(), 0x1c, cq.lkey);
    put32(n.d.in(), 0x30, cqn);
    EXPECT_EQ(n.d.cmd(op::kSw2HwCq, n.d.in_box(), 0, cqn), Status::BadParam);
    EXPECT_EQ(n.core().find_cq(cqn), nullptr);
    put32(n.d.in(), 0x10, 0);
    EXPECT_EQ(n.d.cmd(op::kSw2HwCq, n.d.in_box(), 0, cqn), Status::Ok);

    // RESIZE_CQ to 256 entries (8 KiB of CQEs).
    uint64_t big = n.alloc(8192), small = n.alloc(4096);
    uint32_t other_pd = n.d.driver_pd + 1;
    uint32_t k_big = n.d.alloc_mr(big, 8192, n.d.driver_pd, nullptr, kAccLocalWrite, 0);
    uint32_t k_small = n.d.alloc_mr(small, 4096, n.d.driver_pd, nullptr, kAccLocalWrite, 0);
    uint32_t k_other = n.d.alloc_mr(big, 8192, other_pd, nullptr, kAccLocalWrite, 0);
    auto resize = [&](uint32_t lkey) {
        std::memset(n.d.in().data(), 0, 0x40);
        put8(n.d.in(), 0x0c, 8);
        put32(n.d.in(), 0x1c, lkey);
        return n.d.cmd(op::kResizeCq, n.d.in_box(), 0, cq.cqn);
    };
    EXPECT_EQ(resize(k_big ^ 0x00ffff00), Status::BadParam);  // no such region
    EXPECT_EQ(resize(k_other), Status::BadParam);             // another PD
    EXPECT_EQ(resize(k_small), Status::BadParam);             // holds only 128 CQEs
    EXPECT_EQ(n.core().find_cq(cq.cqn)->log_size, 6u);
    EXPECT_EQ(n.core().find_cq(cq.cqn)->lkey, cq.lkey);
    EXPECT_EQ(resize(k_big), Status::Ok);
    EXPECT_EQ(n.core().find_cq(cq.cqn)->log_size, 8u);
    EXPECT_EQ(n.core().find_cq(cq.cqn)->lkey, k_big);
}

TEST_F(LimitsTest, QpAtTheLimitAndOnePast)
{
    TCq cq = n.make_cq(64);
    uint64_t before = n.core().model_bytes();
    TQp q = n.make_qp(QpService::Rc, cq, cq, 1u << kLogMaxQpSz, 1u << kLogMaxQpSz);
    QpParams p;
    ASSERT_EQ(n.modify(q, op::kRst2Init, QpState::Init, p, (1u << 11) | (1u << 4)), Status::Ok);
    EXPECT_LT(n.core().model_bytes() - before, 4096u) << "a QP of 2 x 16384 WQEs must not allocate per WQE";
    // And it works at that size: a receive posted at the last slot of the
    // first lap is consumed (the queue wraps at 2^14, not before).
    EXPECT_EQ(n.core().find_qp(q.qpn)->state, QpState::Init);

    TQp big_sq = n.make_qp(QpService::Rc, cq, cq, 1u << (kLogMaxQpSz + 1), 1);
    EXPECT_EQ(n.modify(big_sq, op::kRst2Init, QpState::Init, p, (1u << 11) | (1u << 4)), Status::BadParam);
    EXPECT_EQ(n.core().find_qp(big_sq.qpn), nullptr);
    TQp big_rq = n.make_qp(QpService::Ud, cq, cq, 1, 1u << (kLogMaxQpSz + 1));
    EXPECT_EQ(n.modify(big_rq, op::kRst2Init, QpState::Init, p, (1u << 11) | (1u << 4)), Status::BadParam);
    EXPECT_EQ(n.core().find_qp(big_rq.qpn), nullptr);
    // A later transition cannot grow a queue past the limit either.
    q.sq_n = 1u << (kLogMaxQpSz + 1);
    EXPECT_EQ(n.modify(q, op::kInit2Init, QpState::Init, p, 0), Status::BadParam);
}

TEST_F(LimitsTest, SrqAtTheLimitAndOnePast)
{
    // mthca_alloc_srq (mem-free) gives an SRQ of max_wr WRs
    // roundup_pow_of_two(max_wr + 1) entries: 2^15 at max_srq_wr.
    uint64_t before = n.core().model_bytes();
    TSrq s = n.make_srq(1u << (kLogMaxSrqSz + 1), 1);
    ASSERT_NE(n.core().find_srq(s.srqn), nullptr);
    EXPECT_LT(n.core().model_bytes() - before, 1024u);
    // The mailbox of that SW2HW_SRQ, one size step more and the next SRQN.
    uint32_t srqn = s.srqn + 1;
    ASSERT_EQ(n.d.table_get(n.d.lay.srqc_base, srqn, n.d.lim.srq_sz), Status::Ok);
    put32(n.d.in(), 0x00, (kLogMaxSrqSz + 2) << 24 | srqn);
    EXPECT_EQ(n.d.cmd(op::kSw2HwSrq, n.d.in_box(), 0, srqn), Status::BadParam);
    EXPECT_EQ(n.core().find_srq(srqn), nullptr);
}

// SW2HW_MPT of a translated region of `len` bytes (MTTs are not read at
// creation, so none need to exist).
Status region(DriverSim& d, uint32_t idx, uint64_t len, bool physical)
{
    EXPECT_EQ(d.table_get(d.lay.mpt_base, idx, d.lim.mpt_sz), Status::Ok);
    std::memset(d.in().data(), 0, 64);
    put32(d.in(), 0x00, (0xfu << 28) | (1u << 17) | (physical ? 1u << 9 : 0) | (1u << 8) | 0x3);
    put32(d.in(), 0x08, idx);
    put32(d.in(), 0x0c, d.driver_pd);
    put64(d.in(), 0x18, len);
    put64(d.in(), 0x2c, d.lay.mtt_base + 64 * 64);
    return d.cmd(op::kSw2HwMpt, d.in_box(), 0, idx);
}

TEST_F(LimitsTest, LargestRegionAndOnePast)
{
    uint32_t idx = 200;
    uint64_t before = n.core().model_bytes();
    EXPECT_EQ(region(n.d, idx, uint64_t(1) << kLogMaxMrwSz, false), Status::Ok);
    EXPECT_LT(n.core().model_bytes() - before, 1024u);
    EXPECT_EQ(region(n.d, idx + 1, (uint64_t(1) << kLogMaxMrwSz) + 4096, false), Status::BadParam);
    EXPECT_EQ(n.core().find_mpt(idx + 1), nullptr);
    // The driver's DMA MR (physical, length ~0) is not a translated region.
    EXPECT_EQ(region(n.d, idx + 2, ~0ull, true), Status::Ok);
}

}  // namespace
}  // namespace ibemu::mthca::test
