// SPDX-License-Identifier: GPL-2.0
//
// The command interface and the whole life cycle the upstream driver puts
// the HCA through: probe, firmware start, ICM, INIT_HCA, EQs and events,
// the MAD layer's CQ/QPs, ports, and removal.
#include <gtest/gtest.h>

#include "hca/test_support.h"

namespace ibemu::mthca {
namespace {

using test::DriverSim;

TEST(Commands, PollingModeBasics)
{
    DriverSim d;
    EXPECT_EQ(d.core().fw_state(), FwState::Off);
    d.hca().config_write(4, 2, 0x0006);  // pci_set_master before the first command
    ASSERT_EQ(d.cmd(op::kQueryFw, 0, d.out_box()), Status::Ok);
    // mthca_QUERY_FW: subminor sits above minor; the driver swaps them.
    uint64_t raw = get64(d.out(), 0);
    uint64_t ver = (raw & 0xffff00000000ull) | ((raw & 0xffff0000ull) >> 16) | ((raw & 0xffffull) << 16);
    EXPECT_GE(ver, (5ull << 32) | (3ull << 16));  // not "old" for ARBEL_NATIVE
    EXPECT_EQ(ver, (5ull << 32) | (3ull << 16) | 0);
    EXPECT_EQ(get16(d.out(), 0), kFwPages);
    EXPECT_EQ(d.out()[0x0f], kLogMaxCmds);
    EXPECT_EQ(get32(d.out(), 0x10) & 1, 0u);  // no command doorbells
    EXPECT_EQ(get64(d.out(), 0x20), kClrIntBase);
    EXPECT_EQ(get64(d.out(), 0x30), kCatasBase);
    EXPECT_EQ(get32(d.out(), 0x38), kCatasDwords);
    EXPECT_EQ(get64(d.out(), 0x40), kEqArmBase);
    EXPECT_EQ(get64(d.out(), 0x48), kEqSetCiBase);

    EXPECT_EQ(d.cmd(0x7ee), Status::BadOp);
    EXPECT_EQ(d.cmd(op::kEnableLam, 0, d.out_box()), Status::LamNotPre);
    EXPECT_EQ(d.cmd(op::kQueryDevLim, 0, d.out_box()), Status::BadSysState);
    EXPECT_EQ(d.cmd(op::kInitHca, d.in_box()), Status::BadSysState);
    EXPECT_EQ(d.cmd(op::kRunFw), Status::BadSysState);  // no firmware area yet
    EXPECT_EQ(d.cmd(op::kSw2HwCq, d.in_box(), 0, 5), Status::BadSysState);
    EXPECT_EQ(d.core().fw_state(), FwState::Off);
}

TEST(Commands, HcrRegisterFile)
{
    DriverSim d;
    // Parameters read back as written; status byte is read-only.
    d.write_be32(0, kHcrBase + 0, 0x11223344);
    d.write_be32(0, kHcrBase + 8, 0x55667788);
    EXPECT_EQ(d.read_be32(0, kHcrBase + 0), 0x11223344u);
    EXPECT_EQ(d.read_be32(0, kHcrBase + 8), 0x55667788u);
    d.write_be32(0, kHcrBase + kHcrStatus, 0xff000000u | op::kQueryFw);  // go bit clear: no command
    EXPECT_EQ(d.core().commands_executed(), 0u);
    EXPECT_EQ(d.read_be32(0, kHcrBase + kHcrStatus) >> 24, 0u);
    // Narrow writes do not reach the HCR.
    d.hca().mmio_write(0, kHcrBase + 0x18, 1, 0xff);
    EXPECT_EQ(d.core().commands_executed(), 0u);
    // A failing command reports its status in the top byte.
    d.post(0, 0, 0, 0, 0x7ee, 0xffff, false);
    EXPECT_EQ(d.read_be32(0, kHcrBase + kHcrStatus) >> 24, uint32_t(Status::BadOp));
    EXPECT_FALSE(d.go_bit());
}

TEST(Lifecycle, BringUpMsixAndTearDown)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    EXPECT_EQ(d.core().fw_state(), FwState::HcaUp);
    // What mthca_dev_lim checks.
    EXPECT_LE(d.lim.uar_size, 8u << 20);
    EXPECT_EQ(d.lim.num_ports, 1u);
    EXPECT_TRUE(d.lim.flags & (1u << 6));  // SRQ
    // The three EQs are HW owned and the NOP came back through EQ 3 / vector 2.
    ASSERT_NE(d.core().find_eq(d.eqs_[2].eqn), nullptr);
    EXPECT_GE(d.eqs_[2].seen.size(), 1u);
    EXPECT_FALSE(d.irq().msix_.empty());
    EXPECT_EQ(d.core().intx_level(), false);
    d.tear_down();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    EXPECT_EQ(d.core().fw_state(), FwState::Off);
    EXPECT_EQ(d.core().icm().extent_count(), 0u);
}

// INIT_HCA's log_uars is an 8-bit field: 64 or more must be refused, not
// shifted by (undefined; on x86 1 << 64 is 1 and the check passed).
TEST(Lifecycle, InitHcaRefusesHugeLogUars)
{
    for (uint8_t v : {uint8_t(12), uint8_t(64), uint8_t(65), uint8_t(255)}) {
        DriverSim d;
        d.before_init_hca = [v](std::span<uint8_t> in) { in[0x12a] = v; };
        d.init_hca_expect = Status::BadParam;
        d.bring_up();
        EXPECT_NE(d.core().fw_state(), FwState::HcaUp) << unsigned(v);
    }
}

TEST(Lifecycle, IntxModeAssertsAndClears)
{
    DriverSim d;
    d.bring_up(false);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    EXPECT_TRUE(d.irq().msix_.empty());
    // Every event-mode command raised INTx and the handler's CLR_INT
    // dropped it again.
    size_t rises = 0;
    for (bool l : d.irq().intx_changes_)
        rises += l;
    EXPECT_GE(rises, 3u);  // NOP + 2 x CONF_SPECIAL_QP
    EXPECT_FALSE(d.irq().level_);
    EXPECT_EQ(d.core().intx_cause(), 0u);
    // An event while the EQ is not armed stays pending until the arm.
    d.post(0, 0, 0x1f, 0, op::kNop, 7, true);
    EXPECT_TRUE(d.irq().level_);
    d.write_be32(0, kClrIntBase + 4, 1u << kIntaPin);
    EXPECT_FALSE(d.irq().level_);
    // Not re-armed yet (the handler has not run): no new interrupt.
    d.post(0, 0, 0x1f, 0, op::kNop, 8, true);
    EXPECT_FALSE(d.irq().level_);
    // Arming an EQ with unconsumed entries fires at once.
    d.write_be32(0, kEqArmBase + 4, 1u << d.eqs_[2].eqn);
    EXPECT_TRUE(d.irq().level_);
    d.interrupt();
    EXPECT_FALSE(d.irq().level_);
    EXPECT_EQ(d.eqs_[2].seen.size() >= 2, true);
    // INTx disable in the command register masks the line.
    d.post(0, 0, 0x1f, 0, op::kNop, 9, true);
    EXPECT_TRUE(d.irq().level_);
    d.hca().config_write(4, 2, 0x0406);
    EXPECT_FALSE(d.irq().level_);
    d.hca().config_write(4, 2, 0x0006);
    EXPECT_TRUE(d.irq().level_);
    d.interrupt();
    d.tear_down();
}

TEST(Lifecycle, EventModeDeliversStatusAndToken)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    // A command that fails still completes through the EQ, with its status.
    EXPECT_EQ(d.cmd(op::kHw2SwCq, 0, d.out_box(), 1234), Status::BadResState);
    EXPECT_EQ(d.cmd(0x7ee), Status::BadOp);
    // Immediate output through the EQE (MGID_HASH).
    std::memset(d.in().data(), 0, 16);
    d.in()[0] = 0xff;
    uint64_t hash = 0;
    EXPECT_EQ(d.cmd(op::kMgidHash, d.in_box(), 0, 0, 0, &hash), Status::Ok);
    EXPECT_LT(hash, d.lay.mc_hash_size);
    d.tear_down();
}

// What ib_mad does at device add: a PD with a DMA MR, a CQ, QP0/QP1 taken
// to RTS; QP0 reaching RTR opens the port (INIT_IB). Then removal.
TEST(Lifecycle, MadLayerObjects)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    uint32_t pd = 1, dma_mpt = 0;
    d.alloc_phys_mr(pd, &dma_mpt);

    // CQ (mthca_init_cq): 256 entries of 32 bytes.
    uint32_t cqn = d.lim.rsvd_cqs;
    ASSERT_EQ(d.table_get(d.lay.cqc_base, cqn, d.lim.cqc_sz), Status::Ok);
    uint64_t cq_buf = d.mem().alloc(256 * 32);
    uint32_t cq_mpt = 0;
    uint32_t cq_lkey = d.alloc_mr(cq_buf, 256 * 32, pd, &cq_mpt);
    std::memset(d.in().data(), 0, 64);
    put32(d.in(), 0x00, 1u << 18);
    put32(d.in(), 0x0c, (8u << 24) | 1);  // 2^8 entries, UAR 1
    put32(d.in(), 0x10, d.eqs_[1].eqn);
    put32(d.in(), 0x14, d.eqs_[0].eqn);
    put32(d.in(), 0x18, pd);
    put32(d.in(), 0x1c, cq_lkey);
    put32(d.in(), 0x30, cqn);
    put32(d.in(), 0x34, 4095);
    put32(d.in(), 0x38, 0);
    ASSERT_EQ(d.cmd(op::kSw2HwCq, d.in_box(), 0, cqn), Status::Ok);
    EXPECT_EQ(d.cmd(op::kSw2HwCq, d.in_box(), 0, cqn), Status::BadResState);
    ASSERT_NE(d.core().find_cq(cqn), nullptr);

    // Arm the CQ through UAR 1 (mthca_arbel_arm_cq), as one 64-bit write.
    uint64_t uar1 = 1ull << 12;
    d.write_be64(2, uar1 + kUarCqDoorbell, (uint64_t((1u << 28) | (2u << 24) | cqn) << 32) | 0);
    EXPECT_EQ(d.core().find_cq(cqn)->arm, CqArm::NextCompletion);
    // A completion now raises an event on the completion EQ (vector 0).
    size_t before = d.irq().msix_.size();
    EXPECT_TRUE(d.core().cq_completion(cqn));
    ASSERT_EQ(d.irq().msix_.size(), before + 1);
    EXPECT_EQ(d.irq().msix_.back(), 0u);
    d.interrupt();
    ASSERT_FALSE(d.eqs_[0].seen.empty());
    EXPECT_EQ(d.eqs_[0].seen.back()[1], ev::kComp);
    EXPECT_EQ(get32(d.eqs_[0].seen.back(), 4) & 0xffffff, cqn);
    EXPECT_FALSE(d.core().cq_completion(cqn));  // disarmed now
    // Same arm as two 32-bit halves, solicited only, with the sequence
    // number one on: the driver counted the event.
    d.write_be32(2, uar1 + kUarCqDoorbell, (2u << 28) | (1u << 24) | cqn);
    d.write_be32(2, uar1 + kUarCqDoorbell + 4, 0);
    EXPECT_EQ(d.core().find_cq(cqn)->arm, CqArm::NextSolicited);
    // The hi half is latched per (UAR page, doorbell): hi halves written
    // meanwhile to another page's CQ doorbell and to this page's send
    // doorbell do not replace it.
    d.write_be32(2, uar1 + kUarCqDoorbell, (2u << 28) | (2u << 24) | cqn);
    d.write_be32(2, 2 * uar1 + kUarCqDoorbell, (1u << 24) | cqn);
    d.write_be32(2, uar1 + kUarSendDoorbell, 0xdeadbeef);
    d.write_be32(2, uar1 + kUarCqDoorbell + 4, 0);
    EXPECT_EQ(d.core().find_cq(cqn)->arm, CqArm::NextCompletion);
    // Ringing consumed it: a lone lo half rings with hi 0, a doorbell for
    // CQ 0, which the driver never gave to HW.
    uint64_t bogus = d.core().doorbells().bogus, arms = d.core().doorbells().cq_arm;
    d.write_be32(2, uar1 + kUarCqDoorbell + 4, 0);
    EXPECT_EQ(d.core().doorbells().bogus, bogus + 1);
    EXPECT_EQ(d.core().doorbells().cq_arm, arms);

    // QP0 and QP1 (MLX service type), taken through INIT/RTR/RTS.
    for (unsigned k = 0; k < 2; ++k) {
        uint32_t qpn = d.sqp_start + 2 * k;
        ASSERT_EQ(d.table_get(d.lay.qpc_base, qpn, d.lim.qpc_sz), Status::Ok);
        // __mthca_modify_qp fills the whole context for every transition.
        auto fill_ctx = [&](QpState to) {
            std::memset(d.in().data(), 0, 0x200);
            auto ctx = d.in().subspan(8);
            put32(ctx, 0x00, (uint32_t(to) << 28) | (7u << 16) | (3u << 11) | (1u << 8));
            put8(ctx, 0x08, (4 << 5) | 11);
            put32(ctx, 0x0c, 1);
            put32(ctx, 0x10, qpn);
            put32(ctx, 0x20, 1u << 24);  // port 1
            put32(ctx, 0x64, pd);
            put32(ctx, 0x7c, cqn);
            put32(ctx, 0x9c, cqn);
            put32(ctx, 0xa8, k ? 0x80010000 : 0);
        };
        fill_ctx(QpState::Init);
        ASSERT_EQ(d.cmd(op::kRst2Init, d.in_box(), 0, qpn), Status::Ok);
        EXPECT_EQ(d.cmd(op::kRtr2Rts, d.in_box(), 0, qpn), Status::BadQpeeState);
        EXPECT_EQ(d.cmd(op::kRst2Init, d.in_box(), 0, qpn), Status::BadQpeeState);
        fill_ctx(QpState::Rtr);
        ASSERT_EQ(d.cmd(op::kInit2Rtr, d.in_box(), 0, qpn), Status::Ok);
        if (k == 0) {  // init_port()
            std::memset(d.in().data(), 0, 0x38);
            put32(d.in(), 0, (4u << 12) | (3u << 8) | (4u << 4));
            put16(d.in(), 0x06, 32);
            put16(d.in(), 0x0a, 64);
            ASSERT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 1), Status::Ok);
            EXPECT_TRUE(d.core().ports()[0].ib_open);
            EXPECT_EQ(d.core().ports()[0].phys, PhysState::Polling);
            EXPECT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 2), Status::BadParam);  // one port only
        }
        fill_ctx(QpState::Rts);
        ASSERT_EQ(d.cmd(op::kRtr2Rts, d.in_box(), 0, qpn), Status::Ok);
        const Qp* q = d.core().find_qp(qpn);
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(q->state, QpState::Rts);
        EXPECT_EQ(q->special, k ? SpecialQp::Gsi : SpecialQp::Smi);
        ASSERT_EQ(d.cmd(op::kQueryQp, 0, d.out_box(), qpn), Status::Ok);
        EXPECT_EQ(d.out()[8] >> 4, uint8_t(QpState::Rts));
        EXPECT_EQ(get32(d.out(), 8 + 0x10), qpn);
    }
    // A send doorbell on QP1 is accepted and counted (no data path yet).
    d.write_be64(2, uar1 + kUarSendDoorbell, (uint64_t(1u << 24) << 32) | ((d.sqp_start + 2) << 8) | 4);
    EXPECT_EQ(d.core().doorbells().send, 1u);
    EXPECT_EQ(d.core().find_qp(d.sqp_start + 2)->send_doorbells, 1u);
    EXPECT_EQ(d.core().doorbells().bogus, 1u);  // the lone lo half above

    // SET_IB from ib_modify_port (IsCommunicationManagementSupported).
    std::memset(d.in().data(), 0, 0x40);
    put32(d.in(), 4, kDefaultPortCapMask | (1u << 16));
    ASSERT_EQ(d.cmd(op::kSetIb, d.in_box(), 0, 1), Status::Ok);
    EXPECT_EQ(d.core().ports()[0].cap_mask, kDefaultPortCapMask | (1u << 16));

    // Removal: QPs to RESET (QP0 closes the port), CQ, MRs.
    for (unsigned k = 0; k < 2; ++k) {
        uint32_t qpn = d.sqp_start + 2 * k;
        ASSERT_EQ(d.cmd(op::kErr2Rst, 0, 0, qpn, 3), Status::Ok);
        EXPECT_EQ(d.core().find_qp(qpn), nullptr);
        if (k == 0) {
            ASSERT_EQ(d.cmd(op::kCloseIb, 0, 0, 1), Status::Ok);
        }
    }
    ASSERT_EQ(d.cmd(op::kHw2SwCq, 0, d.out_box(), cqn), Status::Ok);
    EXPECT_EQ(get32(d.out(), 0x30), cqn);
    EXPECT_EQ(d.cmd(op::kHw2SwCq, 0, d.out_box(), cqn), Status::BadResState);
    ASSERT_EQ(d.cmd(op::kHw2SwMpt, 0, 0, cq_mpt, 1), Status::Ok);
    ASSERT_EQ(d.cmd(op::kHw2SwMpt, 0, 0, dma_mpt, 1), Status::Ok);
    EXPECT_EQ(d.cmd(op::kHw2SwMpt, 0, 0, dma_mpt, 1), Status::BadResState);
    ASSERT_EQ(d.cmd(op::kCloseIb, 0, 0, 1), Status::Ok);  // __mthca_remove_one closes every port
    d.tear_down();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
}

TEST(Lifecycle, MulticastGroupsRoundTrip)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    std::memset(d.in().data(), 0, 256);
    d.in()[0x10] = 0xff;
    d.in()[0x11] = 0x12;
    put32(d.in(), 0x20, 0x80000000u | 0x1234);
    ASSERT_EQ(d.cmd(op::kWriteMgm, d.in_box(), 0, 77), Status::Ok);
    ASSERT_EQ(d.cmd(op::kReadMgm, 0, d.out_box(), 77), Status::Ok);
    EXPECT_EQ(std::memcmp(d.in().data(), d.out().data(), 256), 0);
    EXPECT_EQ(d.cmd(op::kReadMgm, 0, d.out_box(), 1u << 13), Status::BadIndex);
    d.tear_down();
}

TEST(Lifecycle, ResetReturnsToPowerOn)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    d.write_be32(0, kResetOffset, 1);
    EXPECT_EQ(d.core().fw_state(), FwState::Off);
    EXPECT_EQ(d.core().find_eq(d.eqs_[2].eqn), nullptr);
    EXPECT_FALSE(d.hca().config().msix_enabled());
    d.events_ = false;
    EXPECT_EQ(d.cmd(op::kQueryDevLim, 0, d.out_box()), Status::BadSysState);
    // A wrong value in the reset register does nothing.
    d.rewind();
    d.bring_up(true);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    d.write_be32(0, kResetOffset, 2);
    EXPECT_EQ(d.core().fw_state(), FwState::HcaUp);
}

// The header belongs to the shim's PCI core, which the reset register does
// not reset: the guest still reads the command it set, so a driver that
// restores with pci_restore_state() (only what reads differently) writes
// nothing back, and the model must not have dropped Bus Master Enable.
TEST(Lifecycle, ResetKeepsTheCommandTheGuestReads)
{
    DriverSim d;
    d.hca().config_write(4, 2, 0x0006);  // pci_set_master() at probe
    d.write_be32(0, kResetOffset, 1);    // mthca_reset()
    EXPECT_EQ(d.hca().config_read(4, 2) & 0x0006, 0x0006u);
    EXPECT_TRUE(d.hca().config().bus_master());
    EXPECT_EQ(d.core().fw_state(), FwState::Off);
}

// Twenty rmmod/modprobe rounds: probe (reset + bring-up), remove.
TEST(Lifecycle, TwentyRounds)
{
    DriverSim d;
    for (int round = 0; round < 20; ++round) {
        d.rewind();
        d.bring_up(round % 2 == 0);
        ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "round " << round;
        d.tear_down();
        ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "round " << round;
        EXPECT_EQ(d.core().fw_state(), FwState::Off);
        d.hca().config_write(kMsixCapOffset + 2, 2, 0);  // pci_free_irq_vectors
    }
}

}  // namespace
}  // namespace ibemu::mthca
