// SPDX-License-Identifier: GPL-2.0
#include "hca/icm.h"

#include <gtest/gtest.h>

#include "hca/test_support.h"

namespace ibemu::mthca {
namespace {

class IcmTest : public ::testing::Test {
protected:
    test::FakeMemory mem{4 << 20};
    Icm icm{mem};
    std::string why;
    void SetUp() override { icm.set_size(1ull << 30); }
};

TEST_F(IcmTest, MapTranslateUnmap)
{
    IcmChunk c[2] = {{0x40000, mem.base() + 0x10000, 0x10000}, {0x80000, mem.base() + 0x3000, 0x1000}};
    ASSERT_EQ(icm.map(c, 2, &why), Status::Ok);
    uint64_t phys, contig;
    ASSERT_TRUE(icm.translate(0x40010, &phys, &contig));
    EXPECT_EQ(phys, mem.base() + 0x10010);
    EXPECT_EQ(contig, 0x10000u - 0x10);
    EXPECT_FALSE(icm.translate(0x50000, &phys, &contig));
    EXPECT_TRUE(icm.is_mapped(0x40000, 0x10000));
    EXPECT_FALSE(icm.is_mapped(0x40000, 0x10001));
    uint32_t v = 0xdeadbeef, r = 0;
    ASSERT_TRUE(icm.write(0x80ffc, &v, 4));
    ASSERT_TRUE(icm.read(0x80ffc, &r, 4));
    EXPECT_EQ(r, v);
    EXPECT_FALSE(icm.write(0x80ffe, &v, 4));  // runs off the mapping
    EXPECT_EQ(icm.mapped_bytes(), 0x11000u);
    // Unmap the middle of the big chunk: both ends survive.
    ASSERT_EQ(icm.unmap(0x44000, 2, &why), Status::Ok);
    EXPECT_TRUE(icm.is_mapped(0x40000, 0x4000));
    EXPECT_FALSE(icm.is_mapped(0x44000, 1));
    EXPECT_FALSE(icm.is_mapped(0x45000, 1));
    ASSERT_TRUE(icm.translate(0x46000, &phys, &contig));
    EXPECT_EQ(phys, mem.base() + 0x16000);
    EXPECT_EQ(icm.mapped_bytes(), 0x11000u - 0x2000);
    // Unmapping nothing is an error.
    EXPECT_EQ(icm.unmap(0x200000, 1, &why), Status::BadParam);
    ASSERT_EQ(icm.unmap(0x40000, 0x10, &why), Status::Ok);
    ASSERT_EQ(icm.unmap(0x80000, 1, &why), Status::Ok);
    EXPECT_EQ(icm.extent_count(), 0u);
    EXPECT_EQ(icm.mapped_bytes(), 0u);
}

TEST_F(IcmTest, RejectsOverlapAndOutOfRange)
{
    IcmChunk a{0x10000, mem.base(), 0x4000};
    ASSERT_EQ(icm.map(&a, 1, &why), Status::Ok);
    IcmChunk overlap{0x12000, mem.base() + 0x8000, 0x2000};
    EXPECT_EQ(icm.map(&overlap, 1, &why), Status::BadParam);
    IcmChunk below{0xe000, mem.base() + 0x8000, 0x4000};
    EXPECT_EQ(icm.map(&below, 1, &why), Status::BadParam);
    IcmChunk beyond{(1ull << 30) - 0x1000, mem.base(), 0x2000};
    EXPECT_EQ(icm.map(&beyond, 1, &why), Status::BadParam);
    // A failing batch maps nothing.
    IcmChunk batch[2] = {{0x100000, mem.base() + 0x20000, 0x1000}, {0x100000, mem.base() + 0x21000, 0x1000}};
    EXPECT_EQ(icm.map(batch, 2, &why), Status::BadParam);
    EXPECT_FALSE(icm.is_mapped(0x100000, 1));
    EXPECT_EQ(icm.extent_count(), 1u);
}

TEST(IcmMailbox, ParsesAndValidates)
{
    std::array<uint8_t, 64> box{};
    IcmChunk out[4];
    std::string why;
    put64(box, 0, 0x40000);
    put64(box, 8, 0x200000 | 2);  // 16 KiB at 0x200000
    ASSERT_EQ(parse_map_mailbox(box, 1, true, out, &why), Status::Ok);
    EXPECT_EQ(out[0].virt, 0x40000u);
    EXPECT_EQ(out[0].phys, 0x200000u);
    EXPECT_EQ(out[0].size, 0x4000u);
    // Physical address not aligned to the chunk size.
    put64(box, 8, 0x201000 | 2);
    EXPECT_EQ(parse_map_mailbox(box, 1, true, out, &why), Status::BadParam);
    // Virtual address not aligned (only matters for MAP_ICM).
    put64(box, 0, 0x41000);
    put64(box, 8, 0x200000 | 2);
    EXPECT_EQ(parse_map_mailbox(box, 1, true, out, &why), Status::BadParam);
    EXPECT_EQ(parse_map_mailbox(box, 1, false, out, &why), Status::Ok);
    // Absurd chunk log.
    put64(box, 8, 0x200000 | 0xfff);
    EXPECT_EQ(parse_map_mailbox(box, 1, false, out, &why), Status::BadParam);
    // More entries than the mailbox holds.
    EXPECT_EQ(parse_map_mailbox(box, 5, false, out, &why), Status::BadParam);
    EXPECT_EQ(parse_map_mailbox(box, 0, false, out, &why), Status::BadParam);
}

TEST(PhysArea, LimitsAndOverlap)
{
    PhysArea a;
    IcmChunk c[2] = {{0, 0x100000, 0x4000}, {0, 0x200000, 0x1000}};
    EXPECT_TRUE(a.add(c, 2, 5));
    EXPECT_EQ(a.pages(), 5u);
    IcmChunk more{0, 0x300000, 0x1000};
    EXPECT_FALSE(a.add(&more, 1, 5));
    IcmChunk dup{0, 0x101000, 0x1000};
    EXPECT_FALSE(a.add(&dup, 1, 100));
    a.clear();
    EXPECT_TRUE(a.empty());
}

}  // namespace
}  // namespace ibemu::mthca
