// SPDX-License-Identifier: GPL-2.0
//
// The test doubles themselves: FakeMemory's page allocator refuses what
// does not fit instead of writing past the RAM, and recycled RAM comes back
// all zero.
#include "hca/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ibemu::mthca::test {
namespace {

bool all_zero(FakeMemory& m)
{
    const uint8_t* p = m.at(m.base());
    return std::all_of(p, p + m.size(), [](uint8_t b) { return b == 0; });
}

TEST(FakeMemoryTest, AllocRefusesWhatDoesNotFit)
{
    // Sixteen pages, with a guard region after them: an overrun would land
    // in the guard (and ASan would see it too).
    FakeMemory mem(16 * 4096);
    uint64_t a = mem.alloc(8 * 4096);
    EXPECT_EQ(a, mem.base());
    std::memset(mem.at(a), 0x5a, 8 * 4096);
    uint64_t before = mem.mark();

    // One byte too many, from an aligned start and from an unaligned one.
    EXPECT_THROW(mem.alloc(8 * 4096 + 1), FakeMemory::Exhausted);
    EXPECT_EQ(mem.mark(), before);
    EXPECT_THROW(mem.alloc(1ull << 40), FakeMemory::Exhausted);
    EXPECT_THROW(mem.alloc(~0ull), FakeMemory::Exhausted);  // start + len wraps
    EXPECT_EQ(mem.mark(), before);
    // The allocator's alignment moves the start past the end.
    uint64_t b = mem.alloc(100, 8);
    EXPECT_EQ(b, mem.base() + before);
    EXPECT_THROW(mem.alloc(1, 1ull << 20), FakeMemory::Exhausted);
    // Nothing was written by the refused calls: the first buffer is intact.
    EXPECT_TRUE(std::all_of(mem.at(a), mem.at(a) + 8 * 4096, [](uint8_t x) { return x == 0x5a; }));

    // What exactly fits is given, zeroed.
    uint64_t rest = mem.size() - (mem.mark() + 4095) / 4096 * 4096;
    uint64_t c = mem.alloc(rest);
    EXPECT_EQ(c + rest, mem.base() + mem.size());
    EXPECT_EQ(*mem.at(c + rest - 1), 0);
    EXPECT_THROW(mem.alloc(1, 1), FakeMemory::Exhausted);
}

TEST(FakeMemoryTest, ADriverSimWithTooLittleRamFailsCleanly)
{
    // The mailboxes alone take two pages.
    EXPECT_THROW(DriverSim d(4096), FakeMemory::Exhausted);
}

TEST(FakeMemoryTest, RecycledRamComesBackZero)
{
    FakeMemory::set_recycling(true);
    const uint8_t* first = nullptr;
    {
        FakeMemory m(64 * 4096);
        first = m.at(m.base());
        uint64_t a = m.alloc(4096);
        std::memset(m.at(a), 1, 4096);
        uint8_t junk[100];
        std::memset(junk, 2, sizeof junk);
        ASSERT_TRUE(m.write(m.base() + 40 * 4096 - 50, junk, sizeof junk));  // across two pages
        uint8_t* p = m.map_range(m.base() + 60 * 4096, 3 * 4096);
        ASSERT_NE(p, nullptr);
        std::memset(p, 3, 3 * 4096);
    }
    {
        FakeMemory m(64 * 4096);
        EXPECT_EQ(m.at(m.base()), first);  // the same RAM again
        EXPECT_TRUE(all_zero(m));
    }
    FakeMemory::set_recycling(false);
}

}  // namespace
}  // namespace ibemu::mthca::test
