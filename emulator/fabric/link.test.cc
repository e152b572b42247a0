// SPDX-License-Identifier: GPL-2.0
#include "fabric/link.h"

#include <gtest/gtest.h>

#include "fabric/test_support.h"

namespace ibemu::fabric {
namespace {

using test::TestPort;

struct LinkTest : ::testing::Test {
    VirtualClock clock;
    Scheduler sched{clock};
    TestPort a, b;

    std::unique_ptr<Link> make(LinkConfig cfg = {})
    {
        auto l = std::make_unique<Link>(sched, "a:1-b:1", cfg);
        l->attach(0, &a, false);
        l->attach(1, &b, false);
        a.wire = &l->wire(0);
        b.wire = &l->wire(1);
        return l;
    }
};

TEST_F(LinkTest, ComesUpWhenBothEndsAttachedAndTellsBoth)
{
    auto l = std::make_unique<Link>(sched, "x", LinkConfig{});
    l->attach(0, &a, false);
    EXPECT_FALSE(l->up());
    EXPECT_TRUE(a.link_events.empty());
    l->attach(1, &b, false);
    EXPECT_TRUE(l->up());
    EXPECT_EQ(a.link_events, std::vector<bool>{true});
    EXPECT_EQ(b.link_events, std::vector<bool>{true});
    EXPECT_EQ(a.params.width, 2);
    l->set_admin_up(false);
    EXPECT_EQ(a.link_events, (std::vector<bool>{true, false}));
    EXPECT_EQ(b.link_events, (std::vector<bool>{true, false}));
    l->set_admin_up(true);
    EXPECT_TRUE(a.up && b.up);
    l->attach(1, nullptr, false);
    EXPECT_FALSE(a.up);
}

// A port that turns its transmitter off takes the link down for both ends,
// whatever the administrative state; the link trains again once it is back
// on, and a new endpoint on that side starts with its carrier on.
TEST_F(LinkTest, CarrierOffTakesTheLinkDownForBothEnds)
{
    auto l = make();
    ASSERT_TRUE(l->up());
    l->wire(0).set_carrier(false);
    EXPECT_FALSE(l->up());
    EXPECT_TRUE(l->admin_up());
    EXPECT_FALSE(l->carrier());
    EXPECT_EQ(a.link_events, (std::vector<bool>{true, false}));
    EXPECT_EQ(b.link_events, (std::vector<bool>{true, false}));
    uint8_t payload[8] = {};
    b.send_data(1, 2, payload);
    EXPECT_TRUE(a.rx.empty());
    EXPECT_EQ(l->counters(1).dropped_down, 1u);
    l->wire(0).set_carrier(false);  // no change, no event
    EXPECT_EQ(b.link_events.size(), 2u);
    l->wire(0).set_carrier(true);
    EXPECT_TRUE(l->up());
    EXPECT_EQ(b.link_events, (std::vector<bool>{true, false, true}));

    // The transmitter is the side's owner's: a new endpoint plugged in
    // does not turn it back on; unplugging the side does.
    l->wire(1).set_carrier(false);
    EXPECT_FALSE(l->up());
    TestPort c;
    l->attach(1, &c, false);
    EXPECT_FALSE(l->carrier());
    EXPECT_FALSE(l->up());
    l->attach(1, nullptr, false);
    l->attach(1, &c, false);
    EXPECT_TRUE(l->carrier());
    EXPECT_TRUE(l->up());
}

TEST_F(LinkTest, ZeroLatencyDeliversSynchronouslyWithoutCopy)
{
    auto l = make();
    uint8_t payload[64] = {1, 2, 3};
    a.send_data(2, 1, payload);
    ASSERT_EQ(b.rx.size(), 1u);
    EXPECT_EQ(b.rx[0].first_payload, payload);  // the sender's own buffer
    EXPECT_EQ(b.rx[0].view.dlid, 2);
    EXPECT_EQ(l->counters(0).delivered, 1u);
    EXPECT_EQ(l->counters(0).deferred, 0u);
}

TEST_F(LinkTest, DownLinkDropsAndCounts)
{
    auto l = make();
    l->set_admin_up(false);
    uint8_t payload[8] = {};
    a.send_data(2, 1, payload);
    EXPECT_TRUE(b.rx.empty());
    EXPECT_EQ(l->counters(0).dropped_down, 1u);
}

TEST_F(LinkTest, PacketsOverTheMtuAreDroppedAndCounted)
{
    LinkConfig c;
    c.params.mtu = 256;
    auto l = make(c);
    std::vector<uint8_t> big(512), small(256);
    a.send_data(2, 1, big);
    a.send_data(2, 1, small);
    EXPECT_EQ(b.rx.size(), 1u);
    EXPECT_EQ(l->counters(0).dropped_mtu, 1u);
    l->set_mtu(1024);
    a.send_data(2, 1, big);
    EXPECT_EQ(b.rx.size(), 2u);
}

TEST_F(LinkTest, LatencyDefersIntoPooledSlotsInOrder)
{
    LinkConfig c;
    c.latency_ns = 1000;
    c.slots = 4;
    auto l = make(c);
    uint8_t payload[16];
    for (uint8_t i = 0; i < 6; ++i) {
        payload[0] = i;
        a.send_data(2, 1, payload);
        payload[0] = 0xee;  // the sender may reuse its buffer at once
    }
    EXPECT_TRUE(b.rx.empty());
    EXPECT_EQ(l->counters(0).dropped_overflow, 2u);
    EXPECT_EQ(sched.next_deadline(), 1000u);
    sched.run_until(clock, 999);
    EXPECT_TRUE(b.rx.empty());
    sched.run_until(clock, 1000);
    ASSERT_EQ(b.rx.size(), 4u);
    for (uint8_t i = 0; i < 4; ++i)
        EXPECT_EQ(b.rx[i].bytes[28], i);
    EXPECT_NE(b.rx[0].first_payload, payload);
    EXPECT_EQ(sched.next_deadline(), kNever);
}

// Credits (IBA 7.9): a direction's receive buffer per VL. A sender that
// asks is told no once the queued packets hold the credits, and is told
// when they come back; the slots are made only when first needed.
TEST_F(LinkTest, CreditsHoldBackASenderThatAsksAndSlotsAreLazy)
{
    LinkConfig c;
    auto l = make(c);
    std::vector<uint8_t> payload(1000);  // 28 + 1000 + 6 bytes: 17 blocks
    a.send_data(2, 1, payload);          // synchronous: no slot
    EXPECT_EQ(l->slots_allocated(0), 0u);
    EXPECT_EQ(l->slots_allocated(1), 0u);
    l->set_latency(1000, false);
    l->set_vl_credits(2 * 17);
    EXPECT_TRUE(l->wire(0).ready(0, 1028));
    a.send_data(2, 1, payload);
    a.send_data(2, 1, payload);
    EXPECT_EQ(l->credits_used(0, 0), 34u);
    EXPECT_EQ(l->slots_allocated(0), 2u);
    EXPECT_FALSE(l->wire(0).ready(0, 1028));
    EXPECT_TRUE(l->wire(0).ready(1, 1028));   // another VL has its own buffer
    EXPECT_TRUE(l->wire(0).ready(15, 1028));  // VL15 is not flow-controlled
    EXPECT_EQ(l->counters(0).credit_waits, 1u);
    EXPECT_EQ(a.tx_ready_calls, 0u);
    a.send_data(2, 1, payload);  // a sender that does not ask is still carried
    EXPECT_EQ(l->counters(0).over_credit, 1u);
    sched.run_until(clock, 1000);
    EXPECT_EQ(b.rx.size(), 4u);
    EXPECT_EQ(a.tx_ready_calls, 1u);
    EXPECT_EQ(l->credits_used(0, 0), 0u);
    EXPECT_TRUE(l->wire(0).ready(0, 1028));
    EXPECT_EQ(l->slots_allocated(0), 3u);  // reused from now on
    EXPECT_EQ(l->counters(0).dropped(), 0u);
}

TEST_F(LinkTest, RateModelSpacesPacketsBySerialisationTime)
{
    LinkConfig c;
    c.model_rate = true;  // 4x SDR: 8 Gb/s of data
    auto l = make(c);
    std::vector<uint8_t> payload(994);  // 28 header + 994 + 6 CRC = 1028 bytes = 1028 ns
    a.send_data(2, 1, payload);
    a.send_data(2, 1, payload);
    sched.run_until(clock, 1027);
    EXPECT_EQ(b.rx.size(), 0u);
    sched.run_until(clock, 1028);
    EXPECT_EQ(b.rx.size(), 1u);
    sched.run_until(clock, 2056);
    EXPECT_EQ(b.rx.size(), 2u);
}

TEST_F(LinkTest, DropEveryNthIsExact)
{
    auto l = make();
    FaultConfig f;
    f.drop_every = 3;
    l->set_fault(0, f);
    uint8_t payload[8] = {};
    for (int i = 0; i < 9; ++i)
        a.send_data(2, 1, payload);
    EXPECT_EQ(b.rx.size(), 6u);
    EXPECT_EQ(l->counters(0).dropped_fault, 3u);
    // The other direction is untouched.
    for (int i = 0; i < 3; ++i)
        b.send_data(1, 2, payload);
    EXPECT_EQ(a.rx.size(), 3u);
}

TEST_F(LinkTest, DropPercentageIsDeterministicForASeed)
{
    auto run = [&](uint64_t seed) {
        TestPort x, y;
        Link l(sched, "p", LinkConfig{});
        l.attach(0, &x, false);
        l.attach(1, &y, false);
        x.wire = &l.wire(0);
        FaultConfig f;
        f.drop_ppm = 250000;  // 25 %
        f.seed = seed;
        l.set_fault(0, f);
        std::vector<bool> got;
        uint8_t payload[4] = {};
        for (int i = 0; i < 2000; ++i) {
            size_t before = y.rx.size();
            x.send_data(2, 1, payload);
            got.push_back(y.rx.size() != before);
        }
        return got;
    };
    auto r1 = run(42), r2 = run(42), r3 = run(43);
    EXPECT_EQ(r1, r2);
    EXPECT_NE(r1, r3);
    size_t delivered = std::count(r1.begin(), r1.end(), true);
    EXPECT_GT(delivered, 1400u);
    EXPECT_LT(delivered, 1600u);
}

// An endpoint that answers inside receive(), like a responder would.
struct Echo : TestPort {
    void receive(const Packet& p) override
    {
        TestPort::receive(p);
        if (echo)
            wire->transmit(p);
    }
    bool echo = true;
};

TEST_F(LinkTest, AnHcaIsNeverReenteredFromItsOwnTransmit)
{
    Echo e;
    struct Probe : TestPort {
        bool in_transmit = false;
        bool reentered = false;
        void receive(const Packet& p) override
        {
            reentered |= in_transmit;
            TestPort::receive(p);
        }
    } probe;
    Link l(sched, "p", LinkConfig{});
    l.attach(0, &probe, false);
    l.attach(1, &e, false);
    probe.wire = &l.wire(0);
    e.wire = &l.wire(1);
    uint8_t payload[8] = {};
    probe.in_transmit = true;
    probe.send_data(2, 1, payload);
    probe.in_transmit = false;
    EXPECT_EQ(e.rx.size(), 1u);      // synchronous one way
    EXPECT_TRUE(probe.rx.empty());   // the answer waits for the scheduler
    EXPECT_EQ(sched.next_deadline(), clock.now_ns());
    sched.settle();
    EXPECT_EQ(probe.rx.size(), 1u);
    EXPECT_FALSE(probe.reentered);
}

TEST_F(LinkTest, LinkChangeReachingABusyHcaIsDeferred)
{
    // The receiver takes the link down from inside receive() (as a switch
    // does when the SM disables the port it talks through).
    struct Killer : TestPort {
        Link* l = nullptr;
        void receive(const Packet& p) override
        {
            TestPort::receive(p);
            l->set_admin_up(false);
        }
    } k;
    Link l(sched, "k", LinkConfig{});
    k.l = &l;
    l.attach(0, &a, false);
    l.attach(1, &k, true);
    a.wire = &l.wire(0);
    uint8_t payload[8] = {};
    a.send_data(2, 1, payload);
    EXPECT_EQ(k.link_events.back(), false);            // reentrant: at once
    EXPECT_EQ(a.link_events, std::vector<bool>{true});  // busy HCA: later
    sched.settle();
    EXPECT_EQ(a.link_events, (std::vector<bool>{true, false}));
    EXPECT_EQ(sched.next_deadline(), kNever);
}

TEST_F(LinkTest, ZeroLatencyLoopIsBounded)
{
    // Two reentrant echoes: each bounce is a nested synchronous delivery
    // until the depth limit drops the packet.
    Echo x, y;
    Link l(sched, "loop", LinkConfig{});
    l.attach(0, &x, true);
    l.attach(1, &y, true);
    x.wire = &l.wire(0);
    y.wire = &l.wire(1);
    uint8_t payload[8] = {};
    x.send_data(2, 1, payload);
    EXPECT_EQ(l.counters(0).dropped_loop + l.counters(1).dropped_loop, 1u);
    EXPECT_EQ(x.rx.size() + y.rx.size(), kMaxSyncDepth);
}

TEST(LinkRate, DataRates)
{
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(2, 1), 8.0);   // 4x SDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(1, 1), 2.0);   // 1x SDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(8, 4), 96.0);  // 12x QDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(3, 1), 0.0);
}

}  // namespace
}  // namespace ibemu::fabric
