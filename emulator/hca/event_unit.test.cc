// SPDX-License-Identifier: GPL-2.0
//
// EventUnit on its own: the EQ/interrupt block through its interface, with
// a recording interrupt sink and an EQE "DMA" into a plain buffer.
#include "hca/event_unit.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ibemu::mthca {
namespace {

struct Irqs final : InterruptSink {
    std::vector<unsigned> msix_;
    std::vector<bool> intx_;
    void msix(unsigned v) override { msix_.push_back(v); }
    void intx(bool level) override { intx_.push_back(level); }
};

struct EventUnitTest : ::testing::Test {
    std::string name = "eu-test";
    Irqs irq;
    ConfigSpace cfg;  // power-on image: MSI-X off, INTx enabled
    std::vector<uint8_t> ring = std::vector<uint8_t>(8 * eqc::kEntrySize, 0x80);
    bool dma_ok = true;
    // Each DMA write: its offset, length, and the owner byte of its entry
    // as the ring held it just before.
    struct Write {
        uint64_t va;
        size_t len;
        uint8_t owner_before;
    };
    std::vector<Write> writes;
    EventUnit eu{name, irq, cfg, [this](uint32_t, uint32_t, uint64_t va, std::span<uint8_t> eqe) {
                     if (!dma_ok || va + eqe.size() > ring.size())
                         return false;
                     uint64_t entry = va / eqc::kEntrySize * eqc::kEntrySize;
                     writes.push_back({va, eqe.size(), ring[entry + eqc::kEntrySize - 1]});
                     std::memcpy(ring.data() + va, eqe.data(), eqe.size());
                     return true;
                 }};

    void add_eq(uint32_t eqn, uint8_t pin)
    {
        Eq e;
        e.eqn = eqn;
        e.log_size = 3;  // 8 entries at va 0
        e.intr = pin;
        eu.insert(e);
    }
};

TEST_F(EventUnitTest, ArmedEqRaisesItsIntxCauseBitUntilCleared)
{
    add_eq(2, 5);
    eu.map(1u << 9, 2);  // PORT_CHANGE -> EQ 2
    ASSERT_EQ(eu.eq_of(9), 2);
    EXPECT_EQ(eu.eq_of(10), -1);
    // Not armed: the EQE lands, no interrupt.
    uint8_t data[24] = {1, 2, 3};
    ASSERT_TRUE(eu.write_eqe(2, 9, 4, data));
    EXPECT_EQ(ring[1], 9);
    EXPECT_EQ(ring[3], 4);
    EXPECT_EQ(ring[4], 1);
    EXPECT_EQ(ring[31], 0);  // SW-owned now
    EXPECT_EQ(eu.intx_cause(), 0u);
    // Arming an EQ that holds an unconsumed entry fires at once, on pin 5.
    eu.arm(1u << 2);
    EXPECT_EQ(eu.intx_cause(), 1u << 5);
    EXPECT_TRUE(eu.intx_level());
    ASSERT_EQ(irq.intx_.size(), 1u);
    // Firing disarmed it: a second EQE raises nothing new.
    eu.clr_int(1u << 5);
    EXPECT_FALSE(eu.intx_level());
    ASSERT_TRUE(eu.write_eqe(2, 9, 4, data));
    EXPECT_EQ(eu.intx_cause(), 0u);
    EXPECT_EQ(irq.intx_, (std::vector<bool>{true, false}));
}

// The owner byte is written last and alone (review 1.3): while the rest
// of the entry is written the driver still sees it hardware-owned, so it
// never reads a half-written EQE.
TEST_F(EventUnitTest, EqeOwnerByteIsWrittenLastAndAlone)
{
    add_eq(1, 0);
    uint8_t data[24];
    for (unsigned i = 0; i < 24; ++i)
        data[i] = uint8_t(0xa0 + i);
    ASSERT_TRUE(eu.write_eqe(1, 0x0f, 2, data));
    ASSERT_GE(writes.size(), 2u);
    for (size_t i = 0; i + 1 < writes.size(); ++i) {
        EXPECT_EQ(writes[i].owner_before, 0x80) << i;     // still HW-owned
        EXPECT_LT(writes[i].va + writes[i].len, 32u) << i;  // and the owner byte not in it
    }
    EXPECT_EQ(writes.back().va, 31u);
    EXPECT_EQ(writes.back().len, 1u);
    EXPECT_EQ(ring[31], 0);
    EXPECT_EQ(ring[1], 0x0f);
    EXPECT_EQ(std::memcmp(ring.data() + 4, data, 24), 0);  // the rest landed
}

TEST_F(EventUnitTest, FullEqDropsUntilTheConsumerIndexMoves)
{
    add_eq(0, 0);
    uint8_t data[24] = {};
    for (unsigned i = 0; i < 8; ++i)
        ASSERT_TRUE(eu.write_eqe(0, 0, 0, data));
    EXPECT_FALSE(eu.write_eqe(0, 0, 0, data));  // overflow
    eu.set_ci(0, 9);                            // beyond the producer: refused
    EXPECT_FALSE(eu.write_eqe(0, 0, 0, data));
    eu.set_ci(0, 1);
    EXPECT_TRUE(eu.write_eqe(0, 0, 0, data));
    EXPECT_EQ(eu.find(0)->producer, 9u);
    // A DMA fault drops the event and does not advance the producer.
    dma_ok = false;
    eu.set_ci(0, 2);
    EXPECT_FALSE(eu.write_eqe(0, 0, 0, data));
    EXPECT_EQ(eu.find(0)->producer, 9u);
}

TEST_F(EventUnitTest, RemovedAndUnmappedEqsTakeNoEvents)
{
    add_eq(1, 0);
    eu.map(~0ull, 1);
    Eq last;
    ASSERT_TRUE(eu.remove(1, &last));
    EXPECT_EQ(last.eqn, 1u);
    EXPECT_FALSE(eu.remove(1, &last));
    uint8_t data[24] = {};
    EXPECT_FALSE(eu.write_eqe(1, 0, 0, data));
    eu.unmap(1u << 3);
    EXPECT_EQ(eu.eq_of(3), -1);
    EXPECT_EQ(eu.eq_of(4), 1);
    eu.close();
    EXPECT_EQ(eu.eq_of(4), -1);
    EXPECT_EQ(eu.size(), 0u);
}

}  // namespace
}  // namespace ibemu::mthca
