// SPDX-License-Identifier: GPL-2.0
//
// A hostile guest: random and malformed commands, wild mailbox addresses,
// random MMIO of every size at every offset of every BAR and of config
// space. The model must never crash, never hang, keep its memory bounded,
// and answer bad commands with error statuses.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "common/log.h"
#include "hca/test_support.h"

namespace ibemu::mthca {
namespace {

using test::DriverSim;

class Hostile : public ::testing::Test {
protected:
    void SetUp() override { Log::set_level(LogLevel::Error); }
    void TearDown() override { Log::set_level(LogLevel::Info); }
};

// Opcodes the driver knows, plus noise.
const uint16_t kOpcodes[] = {
    op::kSysEn,      op::kSysDis,      op::kQueryDevLim, op::kQueryFw,     op::kQueryAdapter, op::kInitHca,
    op::kCloseHca,   op::kInitIb,      op::kCloseIb,     op::kSetIb,       op::kSw2HwMpt,     op::kQueryMpt,
    op::kHw2SwMpt,   op::kWriteMtt,    op::kMapEq,       op::kSw2HwEq,     op::kHw2SwEq,      op::kQueryEq,
    op::kSw2HwCq,    op::kHw2SwCq,     op::kQueryCq,     op::kRst2Init,    op::kInit2Rtr,     op::kRtr2Rts,
    op::kRts2Rts,    op::kSqerr2Rts,   op::k2Err,        op::kRts2Sqd,     op::kSqd2Rts,      op::kErr2Rst,
    op::kQueryQp,    op::kConfSpecialQp, op::kMadIfc,    op::kReadMgm,     op::kWriteMgm,     op::kMgidHash,
    op::kResizeCq,   op::kInit2Init,   op::kSyncTpt,     op::kNop,         op::kSw2HwSrq,     op::kHw2SwSrq,
    op::kQuerySrq,   op::kSqd2Sqd,     op::kArmSrq,      op::kRunFw,       op::kEnableLam,    op::kUnmapIcm,
    op::kMapIcm,     op::kUnmapIcmAux, op::kMapIcmAux,   op::kSetIcmSize,  op::kUnmapFa,      op::kMapFa,
};

TEST_F(Hostile, RandomCommandsAndMmio)
{
    auto t0 = std::chrono::steady_clock::now();
    DriverSim d(32u << 20);
    d.bring_up(true);
    ASSERT_FALSE(HasFatalFailure());
    std::mt19937_64 rng(0x1b5eed);
    auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
    const uint64_t ram = d.mem().base(), ram_size = d.mem().size();
    auto addr = [&]() -> uint64_t {
        switch (pick(5)) {
        case 0: return d.in_box();
        case 1: return d.out_box();
        case 2: return ram + pick(ram_size);
        case 3: return rng();
        default: return ram + ram_size - pick(64);
        }
    };
    uint64_t bad_status = 0, ok_status = 0, wild_mmio = 0;
    const int kOps = 150000;
    for (int i = 0; i < kOps; ++i) {
        switch (pick(10)) {
        case 0:
        case 1:
        case 2: {
            // A command with random parameters and a mailbox of noise or
            // of mutated valid-looking content.
            auto box = d.in();
            if (pick(2)) {
                for (size_t j = 0; j < 512; j += 8)
                    put64(box, j, rng());
            } else {
                box[pick(512)] ^= uint8_t(rng());
            }
            uint16_t op = pick(4) ? kOpcodes[pick(std::size(kOpcodes))] : uint16_t(rng() & 0xfff);
            uint32_t in_mod = pick(3) ? uint32_t(pick(64)) : uint32_t(rng());
            uint8_t op_mod = pick(3) ? uint8_t(pick(4)) : uint8_t(rng());
            bool event = pick(3) == 0;
            d.post(addr(), addr(), in_mod, op_mod, op, uint16_t(rng()), event);
            ASSERT_FALSE(d.go_bit());
            Status s = Status(d.read_be32(0, kHcrBase + kHcrStatus) >> 24);
            (s == Status::Ok ? ok_status : bad_status)++;
            if (event && pick(2))
                d.interrupt();
            break;
        }
        case 3:
        case 4:
        case 5: {
            unsigned sizes[] = {1, 2, 4, 8, 3, 16};
            unsigned size = sizes[pick(6)];
            unsigned bar = unsigned(pick(6));
            uint64_t off;
            switch (pick(4)) {
            case 0: off = kHcrBase + pick(0x20); break;
            case 1: off = 0x40000 + pick(0x1000); break;
            case 2: off = 0xf0000 + pick(0x100); break;
            default:
                // Half of these anywhere in the 64-bit offset space, half
                // within 16 MiB (past the end of every BAR).
                if (pick(2)) {
                    off = rng();
                    ++wild_mmio;
                } else {
                    off = pick(16u << 20);
                }
                break;
            }
            // Never hit the reset register by accident too often.
            if (off == kResetOffset && pick(10))
                off += 4;
            if (pick(2))
                d.hca().mmio_write(bar, off, size, rng());
            else
                d.hca().mmio_read(bar, off, size);
            break;
        }
        case 6: {
            unsigned sizes[] = {1, 2, 4, 3, 8};
            unsigned off = unsigned(pick(300));
            if (pick(2))
                d.hca().config_write(off, sizes[pick(5)], uint32_t(rng()));
            else
                d.hca().config_read(off, sizes[pick(5)]);
            break;
        }
        case 7: {
            // UAR doorbells of every kind on random pages.
            uint64_t off = (pick(2048) << 12) + pick(0x40);
            d.hca().mmio_write(2, off, pick(2) ? 8 : 4, rng());
            break;
        }
        case 8:
            // EQ registers with random values.
            d.write_be32(0, kEqArmBase + 4 * pick(2), uint32_t(rng()));
            d.write_be32(0, kEqSetCiBase + 8 * pick(64), uint32_t(rng()));
            d.write_be32(0, kClrIntBase + 4 * pick(2), uint32_t(rng()));
            break;
        default:
            // Now and then bring the device back to a working state so
            // deeper commands get exercised too.
            if (pick(3000) == 0) {
                d.rewind();
                d.bring_up(pick(2));
                d.events_ = false;
                ASSERT_FALSE(HasFatalFailure());
            } else {
                d.core().cq_completion(uint32_t(pick(256)));
                std::array<uint8_t, 24> ev{};
                d.core().post_async_event(uint8_t(pick(70)), uint8_t(pick(8)), ev);
            }
            break;
        }
        // Bounded state whatever happens.
        ASSERT_LE(d.core().icm().extent_count(), Icm::kMaxExtents);
    }
    EXPECT_GT(bad_status, uint64_t(kOps) / 10);
    // The wild-offset branch ran (it once sat behind pick(1), always 0).
    EXPECT_GT(wild_mmio, uint64_t(kOps) / 100);
    EXPECT_GT(ok_status, 0u);
    // The model still works after all that: reset and bring up cleanly.
    d.rewind();
    d.bring_up(true);
    ASSERT_FALSE(HasFatalFailure());
    d.tear_down();
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 30.0);
    RecordProperty("seconds", std::to_string(secs));
}

TEST_F(Hostile, SpecificMalformedCommands)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(HasFatalFailure());
    d.events_ = false;
    // Mailbox outside guest RAM.
    EXPECT_EQ(d.cmd(op::kQueryFw, 0, 0xdead0000000ull), Status::InternalErr);
    EXPECT_EQ(d.cmd(op::kSw2HwCq, 0xdead0000000ull, 0, 77), Status::InternalErr);
    // Mailbox straddling the end of RAM.
    EXPECT_EQ(d.cmd(op::kQueryDevLim, 0, d.mem().base() + d.mem().size() - 16), Status::InternalErr);
    // MAP_ICM with more entries than a mailbox holds, or none.
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 257), Status::BadParam);
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 0), Status::BadParam);
    // MAP_ICM of a page that is not RAM.
    put64(d.in(), 0, d.lay.cqc_base + (1u << 20));
    put64(d.in(), 8, 0x7000000000ull);
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::BadParam);
    // MAP_ICM beyond the ICM size.
    put64(d.in(), 0, d.icm_size);
    put64(d.in(), 8, d.mem().alloc(4096));
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::BadParam);
    // MAP_ICM over an existing mapping.
    put64(d.in(), 0, d.lay.eqc_base);
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::BadParam);
    // UNMAP_ICM of nothing, of a huge count.
    EXPECT_EQ(d.cmd(op::kUnmapIcm, d.icm_size - 4096, 0, 1), Status::BadParam);
    EXPECT_EQ(d.cmd(op::kUnmapIcm, 0, 0, 0xffffffff), Status::Ok);  // clamps to what is mapped...
    // ...which removed every context page: objects now fail cleanly.
    EXPECT_EQ(d.cmd(op::kSw2HwSrq, d.in_box(), 0, 99), Status::BadResource);
    // EQ beyond the table; CQ with an absurd log size.
    EXPECT_EQ(d.cmd(op::kSw2HwEq, d.in_box(), 0, 4000), Status::BadIndex);
    // Commands in the wrong firmware state.
    EXPECT_EQ(d.cmd(op::kInitHca, d.in_box()), Status::BadSysState);
    EXPECT_EQ(d.cmd(op::kMapFa, d.in_box(), 0, 1), Status::BadSysState);
    EXPECT_EQ(d.cmd(op::kSetIcmSize, 1 << 20), Status::BadSysState);
    // Unknown QP transitions and EE contexts.
    EXPECT_EQ(d.cmd(op::kRst2Init, d.in_box(), 0, (1u << 24) | 5), Status::BadParam);
    EXPECT_EQ(d.cmd(op::kRtr2Rts, d.in_box(), 0, 5), Status::BadQpeeState);
    // WRITE_MTT with silly counts.
    EXPECT_EQ(d.cmd(op::kWriteMtt, d.in_box(), 0, 0), Status::BadParam);
    EXPECT_EQ(d.cmd(op::kWriteMtt, d.in_box(), 0, 100000), Status::BadParam);
    EXPECT_GT(Log::guest_errors(), 0u);
}

// Review 2.2.14: every page of a MAP_ICM chunk must be guest RAM, not only
// its first and last bytes. A 16 KiB chunk whose third page is a hole is
// refused; the same chunk without the hole is taken.
TEST_F(Hostile, MapIcmChunkWithAHoleInsideIsRefused)
{
    DriverSim d;
    d.bring_up(true);
    ASSERT_FALSE(HasFatalFailure());
    uint64_t chunk = d.mem().alloc(16384, 16384);
    put64(d.in(), 0, d.lay.cqc_base + (1u << 20));
    put64(d.in(), 8, chunk | 2);  // 4 KiB << 2
    d.mem().set_hole(chunk + 8192, 4096);
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::BadParam);
    d.mem().set_mappable(false);  // the page-by-page path also sees it
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::BadParam);
    d.mem().set_hole(0, 0);
    EXPECT_EQ(d.cmd(op::kMapIcm, d.in_box(), 0, 1), Status::Ok);
}

}  // namespace
}  // namespace ibemu::mthca
