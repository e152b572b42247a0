// SPDX-License-Identifier: GPL-2.0
#include "hca/config_space.h"

#include <gtest/gtest.h>

#include "hca/test_support.h"

namespace ibemu::mthca {
namespace {

TEST(ConfigSpace, Identity)
{
    test::FakeMemory mem(1 << 20);
    test::RecordingIrq irq;
    auto dev = make_mthca(MthcaConfig{}, mem, irq);
    const PciIdentity& id = dev->identity();
    EXPECT_EQ(dev->config_read(0x00, 2), 0x15b3u);
    EXPECT_EQ(dev->config_read(0x02, 2), 0x6282u);
    EXPECT_EQ(dev->config_read(0x08, 1), 0xa0u);
    EXPECT_EQ(dev->config_read(0x08, 4) >> 8, 0x0c0600u);
    EXPECT_EQ(dev->config_read(0x2c, 2), 0x15b3u);
    EXPECT_EQ(dev->config_read(0x2e, 2), 0x6282u);
    EXPECT_EQ(dev->config_read(0x3d, 1), 1u);  // INTA#
    EXPECT_TRUE(dev->config_read(0x06, 2) & 0x10);  // capability list
    EXPECT_EQ(id.config[0], 0xb3);
    EXPECT_EQ(id.config[1], 0x15);
}

TEST(ConfigSpace, Bars)
{
    PciIdentity id = build_identity();
    EXPECT_EQ(id.bars[0].size, 1u << 20);  // mthca_main.c insists on 1 MiB
    EXPECT_TRUE(id.bars[0].is64);
    EXPECT_FALSE(id.bars[0].prefetch);
    EXPECT_EQ(id.bars[2].size, 8u << 20);
    EXPECT_TRUE(id.bars[2].is64);
    EXPECT_TRUE(id.bars[2].prefetch);
    EXPECT_EQ(id.bars[4].size, 0u);  // hidden DDR
    EXPECT_EQ(id.config[0x10] & 0xf, 0x4);
    EXPECT_EQ(id.config[0x18] & 0xf, 0xc);
    EXPECT_EQ(id.config[0x20], 0);
}

TEST(ConfigSpace, MsixCapability)
{
    PciIdentity id = build_identity();
    EXPECT_GE(id.msix_vectors, 3);
    EXPECT_EQ(id.msix_cap_offset, kMsixCapOffset);
    EXPECT_EQ(id.config[0x34], kMsixCapOffset);
    EXPECT_EQ(id.config[kMsixCapOffset], 0x11);
    EXPECT_EQ(id.config[kMsixCapOffset + 1], 0);
    unsigned ctl = id.config[kMsixCapOffset + 2] | id.config[kMsixCapOffset + 3] << 8;
    EXPECT_EQ(ctl & 0x7ff, id.msix_vectors - 1u);
    uint32_t table = id.config[kMsixCapOffset + 4] | id.config[kMsixCapOffset + 5] << 8 |
                     id.config[kMsixCapOffset + 6] << 16 | uint32_t(id.config[kMsixCapOffset + 7]) << 24;
    EXPECT_EQ(table, id.msix_table_offset);  // BIR 0
    EXPECT_EQ(id.msix_table_bar, 0);
    EXPECT_EQ(id.msix_pba_bar, 0);
    // Table and PBA lie above every register the driver uses.
    EXPECT_GT(id.msix_table_offset, 0xf00e0u);
    EXPECT_LE(id.msix_table_offset + 16u * id.msix_vectors, id.msix_pba_offset);
    EXPECT_LT(id.msix_pba_offset + 8u, 1u << 20);
    // Dwords 22 and 23 are special to mthca_reset(): nothing there.
    for (unsigned off = 0x58; off < 0x60; ++off)
        EXPECT_EQ(id.config[off], 0) << off;
}

TEST(ConfigSpace, WritesTrackControlBits)
{
    ConfigSpace cs;
    EXPECT_FALSE(cs.msix_enabled());
    cs.write(0x04, 2, 0x0406);
    EXPECT_TRUE(cs.memory_enabled());
    EXPECT_TRUE(cs.bus_master());
    EXPECT_TRUE(cs.intx_disabled());
    cs.write(kMsixCapOffset + 2, 2, 0xffff);
    EXPECT_TRUE(cs.msix_enabled());
    EXPECT_TRUE(cs.msix_masked());
    // Read-only bits stay: table size, ids.
    EXPECT_EQ(cs.read(kMsixCapOffset + 2, 2) & 0x7ff, kMsixVectors - 1u);
    cs.write(0x00, 4, 0);
    EXPECT_EQ(cs.read(0x00, 4), 0x628215b3u);
    // BAR0 sizing: all ones reads back the size mask.
    cs.write(0x10, 4, 0xffffffff);
    EXPECT_EQ(cs.read(0x10, 4), 0xfff00004u);
    cs.write(0x18, 4, 0xffffffff);
    EXPECT_EQ(cs.read(0x18, 4), 0xff80000cu);
    cs.power_on();
    EXPECT_FALSE(cs.msix_enabled());
    EXPECT_EQ(cs.read(0x10, 4), 0x4u);
    // Out-of-range accesses are harmless.
    EXPECT_EQ(cs.read(255, 4), 0xffffffffu);
    cs.write(254, 4, 1);
}

}  // namespace
}  // namespace ibemu::mthca
