// SPDX-License-Identifier: GPL-2.0
#include "fabric/link.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

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

// Issue 9 item 5: link directions sit on the scheduler's deadline heap,
// armed when a packet is queued, never scanned; equal deadlines go in the
// order the packets were queued, whatever the order the links were made in.
TEST_F(LinkTest, QueuedDirectionsAreArmedOnTheHeapAndTiesGoInQueueOrder)
{
    LinkConfig c;
    c.latency_ns = 500;
    auto first = make(c);  // a -> b
    TestPort x, y;
    auto second = std::make_unique<Link>(sched, "x:1-y:1", c);
    second->attach(0, &x, false);
    second->attach(1, &y, false);
    x.wire = &second->wire(0);
    // Nothing queued: nothing armed, so the heap alone answers.
    EXPECT_EQ(sched.next_armed_deadline(), kNever);
    clock.set(100);
    uint8_t payload[8] = {};
    x.send_data(2, 1, payload);  // the later link queues first ...
    a.send_data(2, 1, payload);  // ... for the same deadline
    EXPECT_EQ(sched.next_armed_deadline(), 600u);
    EXPECT_EQ(sched.next_deadline(), 600u);
    // A later packet behind them does not move their deadline.
    clock.set(200);
    a.send_data(2, 1, payload);
    EXPECT_EQ(sched.next_armed_deadline(), 600u);

    // Who fires first sees the other's packet not yet delivered.
    std::vector<std::string> order;
    struct Recorder final : PortEndpoint {
        std::vector<std::string>* order;
        std::string name;
        void receive(const Packet&) override { order->push_back(name); }
        void link_changed(bool, const LinkParams&) override {}
    };
    Recorder rb, ry;
    rb.order = ry.order = &order;
    rb.name = "first";
    ry.name = "second";
    first->attach(1, &rb, true);
    second->attach(1, &ry, true);
    // Re-attaching took the links down and flushed them: queue again.
    ASSERT_TRUE(first->up() && second->up());
    clock.set(1000);
    x.send_data(2, 1, payload);
    a.send_data(2, 1, payload);
    a.send_data(2, 1, payload);
    EXPECT_EQ(sched.run_due(), 0u);
    clock.set(1500);
    EXPECT_EQ(sched.run_due(), 2u);  // once per direction, in arm order
    EXPECT_EQ(order, (std::vector<std::string>{"second", "first", "first"}));
    EXPECT_EQ(sched.next_armed_deadline(), kNever);  // disarmed once empty
}

// A head packet its receiver refused sleeps (off the heap: no busy loop)
// until credits move anywhere in the fabric, then goes at once.
TEST_F(LinkTest, ARefusedHeadSleepsUntilCreditsMoveElsewhere)
{
    struct Gate final : PortEndpoint {
        bool open = false;
        unsigned got = 0;
        bool accepts(const Packet&) override { return open; }
        void receive(const Packet&) override { ++got; }
        void link_changed(bool, const LinkParams&) override {}
    };
    Gate gate;
    auto l = make();
    l->attach(1, &gate, true);
    uint8_t payload[8] = {};
    a.send_data(2, 1, payload);  // refused: into the receive buffer
    EXPECT_EQ(gate.got, 0u);
    EXPECT_EQ(l->queued(0), 1u);
    EXPECT_EQ(l->counters(0).refused, 1u);
    EXPECT_EQ(sched.credit_sleepers(), 1u);
    EXPECT_EQ(sched.next_deadline(), kNever);
    sched.settle();
    EXPECT_EQ(gate.got, 0u);

    // Credits move on another link (its delayed packet is taken): the
    // sleeper is armed again and delivers, now that the gate is open.
    LinkConfig c;
    c.latency_ns = 10;
    TestPort x, y;
    Link other(sched, "x:1-y:1", c);
    other.attach(0, &x, false);
    other.attach(1, &y, false);
    x.wire = &other.wire(0);
    x.send_data(2, 1, payload);
    gate.open = true;
    EXPECT_EQ(gate.got, 0u);  // nothing moved yet: still asleep
    sched.run_until(clock, 10);
    EXPECT_EQ(y.rx.size(), 1u);
    EXPECT_EQ(gate.got, 1u);
    EXPECT_EQ(l->queued(0), 0u);
    EXPECT_EQ(sched.credit_sleepers(), 0u);
    EXPECT_EQ(sched.next_deadline(), kNever);
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

// A saturating source: sends fixed-size UD packets on VL0 for as long as the
// link's credits let it, and again whenever the link says tx_ready (after
// the Scheduler's round, as an HCA does from its next poll()). Counts what
// it receives without keeping it.
class StreamPort final : public PortEndpoint {
public:
    Wire* wire = nullptr;
    uint32_t payload_len = 2048;
    bool want = false;
    uint64_t rx_packets = 0, rx_wire_bytes = 0, rx_payload = 0;

    void receive(const Packet& p) override
    {
        ++rx_packets;
        rx_wire_bytes += p.hdr_len + p.payload_len + 6;  // + ICRC 4 (in PktLen) ... and VCRC 2
        rx_payload += p.payload_len;
    }
    void tx_ready() override { want = true; }
    void link_changed(bool, const LinkParams&) override {}

    void pump()
    {
        want = false;
        std::vector<uint8_t> payload(payload_len);
        Packet p;
        UdAddress a;
        a.dlid = 2;
        a.slid = 1;
        a.dest_qp = a.src_qp = 2;
        a.qkey = 0x11111111;
        build_ud(p, a, payload);
        while (wire->ready(0, p.hdr_len + p.payload_len))
            wire->transmit(p);
    }
};

struct RateCase {
    uint8_t width, speed;
    uint32_t payload;
};

class LinkRateModel : public ::testing::TestWithParam<RateCase> {
protected:
    VirtualClock clock;
    Scheduler sched{clock};
    StreamPort a, b;

    std::unique_ptr<Link> make(bool rate, uint64_t burst_ns)
    {
        LinkConfig c;
        c.params.width = GetParam().width;
        c.params.speed = GetParam().speed;
        c.params.mtu = 4096;
        c.model_rate = rate;
        c.rate_burst_ns = burst_ns;
        auto l = std::make_unique<Link>(sched, "a:1-b:1", c);
        l->attach(0, &a, false);
        l->attach(1, &b, false);
        a.wire = &l->wire(0);
        a.payload_len = GetParam().payload;
        return l;
    }

    // Wire bytes per ns (GB/s) the rate model allows.
    double rate_gbytes() const { return link_data_rate_gbps(GetParam().width, GetParam().speed) / 8; }
};

// Virtual time, the Scheduler run at every deadline: the wire carries
// width x speed (after 8b/10b), within 5 %, and never more.
TEST_P(LinkRateModel, SaturatedStreamRunsAtTheLinkRate)
{
    auto l = make(true, 0);
    const uint64_t span = 2000000;  // 2 ms
    a.pump();
    while (clock.now_ns() < span) {
        uint64_t d = sched.next_deadline();
        ASSERT_NE(d, kNever);
        clock.set(std::max(d, clock.now_ns()));
        sched.settle();
        if (a.want)
            a.pump();
        // Never ahead of the wire: at most one packet more than the rate.
        ASSERT_LE(double(b.rx_wire_bytes), rate_gbytes() * double(clock.now_ns()) + 4200.0);
    }
    double got = double(b.rx_wire_bytes) / double(clock.now_ns());
    std::printf("%ux/%u %u-byte payloads: %.4f GB/s on the wire (%.4f of data), model %.4f GB/s\n",
                unsigned(GetParam().width), unsigned(GetParam().speed), GetParam().payload, got,
                double(b.rx_payload) / double(clock.now_ns()), rate_gbytes());
    EXPECT_NEAR(got, rate_gbytes(), rate_gbytes() * 0.05);
    EXPECT_EQ(l->counters(0).dropped(), 0u);
}

// The server's loop: poll() sleeps in whole milliseconds, so the Scheduler
// runs only every 1 ms, here up to 4 ms (a loaded host). With the default
// burst the wire makes up for the late wakes and the stream still runs at
// the link rate within 5 %, never above rate x (T + burst); without one a
// wake moves one packet.
TEST_P(LinkRateModel, LateWakesStillRunAtTheLinkRateWithABurst)
{
    for (uint64_t burst : {kDefaultRateBurstNs, uint64_t(0)}) {
        a = StreamPort{};
        b = StreamPort{};
        clock.set(0);
        auto l = make(true, burst);
        uint64_t t = 0, jitter = 1;
        a.pump();
        sched.settle();
        while (t < 30000000) {  // 30 ms
            jitter = jitter * 6364136223846793005ull + 1442695040888963407ull;
            t += 1000000 + (jitter >> 33) % 3000000;
            clock.set(t);
            for (int round = 0; round < 10000; ++round) {
                sched.settle();
                if (!a.want)
                    break;
                a.pump();
            }
            ASSERT_LE(double(b.rx_wire_bytes), rate_gbytes() * double(t + burst) + 4200.0);
        }
        double got = double(b.rx_wire_bytes) / double(t);
        std::printf("%ux/%u burst %llu ns: %.4f GB/s, model %.4f GB/s\n", unsigned(GetParam().width),
                    unsigned(GetParam().speed), (unsigned long long)burst, got, rate_gbytes());
        if (burst) {
            EXPECT_NEAR(got, rate_gbytes(), rate_gbytes() * 0.05);
        } else if (rate_gbytes() > 0.5) {  // 1x SDR is slow enough for 128 KiB a wake
            EXPECT_LT(got, rate_gbytes() * 0.5);
        }
        l.reset();
    }
}

// Off (the default): a zero-latency link still delivers inside transmit(),
// without a copy and without time passing, however much is sent.
TEST_P(LinkRateModel, OffDeliversAtOnce)
{
    auto l = make(false, 0);
    for (int i = 0; i < 1000; ++i) {
        uint64_t before = b.rx_packets;
        std::vector<uint8_t> payload(GetParam().payload);
        Packet p;
        UdAddress ad;
        ad.dlid = 2;
        ad.slid = 1;
        build_ud(p, ad, payload);
        a.wire->transmit(p);
        ASSERT_EQ(b.rx_packets, before + 1);
    }
    EXPECT_EQ(clock.now_ns(), 0u);
    EXPECT_EQ(l->counters(0).deferred, 0u);
    EXPECT_EQ(sched.next_deadline(), kNever);
}

INSTANTIATE_TEST_SUITE_P(WidthSpeedPayload, LinkRateModel,
                         ::testing::Values(RateCase{2, 1, 2048},  // 4x SDR: 1 GB/s
                                           RateCase{2, 1, 64},    // small packets: no rounding up
                                           RateCase{1, 1, 2048},  // 1x SDR
                                           RateCase{2, 2, 4096},  // 4x DDR
                                           RateCase{8, 4, 2048},  // 12x QDR
                                           RateCase{8, 4, 1000}),  // 86.167 ns a packet
                         [](const auto& i) {
                             return "w" + std::to_string(i.param.width) + "s" + std::to_string(i.param.speed) +
                                    "p" + std::to_string(i.param.payload);
                         });

TEST(LinkRate, DataRates)
{
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(2, 1), 8.0);   // 4x SDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(1, 1), 2.0);   // 1x SDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(8, 4), 96.0);  // 12x QDR
    EXPECT_DOUBLE_EQ(link_data_rate_gbps(3, 1), 0.0);
}

}  // namespace
}  // namespace ibemu::fabric
