// SPDX-License-Identifier: GPL-2.0
//
// The M_Key check (IBA 14.2.4.1, table 141) and the lease (14.2.4.2).
#include "ib/mkey.h"

#include <gtest/gtest.h>

#include "ib/mad.h"

namespace ibemu::ib {
namespace {

using V = MkeyGuard::Verdict;
constexpr uint64_t kSec = 1'000'000'000ull;

TEST(MkeyGuard, ZeroKeyProtectsNothing)
{
    MkeyGuard g;
    g.assign(0, 3, 0);
    EXPECT_EQ(g.check(mad::kMethodSet, 0x99, 0), V::Pass);
    EXPECT_EQ(g.check(mad::kMethodGet, 0x99, 0), V::Pass);
    EXPECT_EQ(g.violations(), 0);
}

TEST(MkeyGuard, ProtectLevels)
{
    MkeyGuard g;
    for (uint8_t prot = 0; prot < 4; ++prot) {
        g.assign(0x1234, prot, 0);
        EXPECT_EQ(g.check(mad::kMethodGet, 0x1234, 0), V::Pass);
        EXPECT_EQ(g.check(mad::kMethodSet, 0x1234, 0), V::Pass);
        EXPECT_EQ(g.check(mad::kMethodTrapRepress, 0x1234, 0), V::Pass);
        EXPECT_EQ(g.check(mad::kMethodSet, 0x1, 0), V::Violation);
        EXPECT_EQ(g.check(mad::kMethodTrapRepress, 0x1, 0), V::Violation);
        EXPECT_EQ(g.check(mad::kMethodGet, 0x1, 0), prot == 0 ? V::Pass : prot == 1 ? V::HideKey : V::Violation);
    }
    EXPECT_EQ(g.violations(), 2 * 4 + 2);
    g.set_violations(0xffff);
    g.check(mad::kMethodSet, 0x1, 0);
    EXPECT_EQ(g.violations(), 0xffff);  // saturates
}

TEST(MkeyGuard, LeaseExpiresWithoutTheKey)
{
    MkeyGuard g;
    g.assign(0x1234, 2, 10);
    EXPECT_EQ(g.lease_deadline(), MkeyGuard::kNoLease);
    EXPECT_EQ(g.check(mad::kMethodGet, 0, 5 * kSec), V::Violation);
    EXPECT_EQ(g.lease_deadline(), 15 * kSec);
    // A second violation does not restart the timer.
    EXPECT_EQ(g.check(mad::kMethodGet, 0, 7 * kSec), V::Violation);
    EXPECT_EQ(g.lease_deadline(), 15 * kSec);
    EXPECT_FALSE(g.expire(15 * kSec - 1));
    EXPECT_TRUE(g.expire(15 * kSec));
    EXPECT_EQ(g.protect(), 0);
    EXPECT_EQ(g.key(), 0x1234u);  // the key stays; only protection lapses
    EXPECT_EQ(g.check(mad::kMethodGet, 0, 16 * kSec), V::Pass);
    EXPECT_EQ(g.check(mad::kMethodSet, 0, 16 * kSec), V::Violation);
}

TEST(MkeyGuard, TheKeyStopsTheLease)
{
    MkeyGuard g;
    g.assign(0x1234, 3, 1);
    EXPECT_EQ(g.check(mad::kMethodSet, 0, 0), V::Violation);
    EXPECT_NE(g.lease_deadline(), MkeyGuard::kNoLease);
    EXPECT_EQ(g.check(mad::kMethodGet, 0x1234, kSec / 2), V::Pass);
    EXPECT_EQ(g.lease_deadline(), MkeyGuard::kNoLease);
    EXPECT_FALSE(g.expire(10 * kSec));
    EXPECT_EQ(g.protect(), 3);
    // Lease period 0: never expires.
    g.assign(0x1234, 3, 0);
    EXPECT_EQ(g.check(mad::kMethodSet, 0, 0), V::Violation);
    EXPECT_EQ(g.lease_deadline(), MkeyGuard::kNoLease);
}

}  // namespace
}  // namespace ibemu::ib
