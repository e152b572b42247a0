// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "fabric/fabric.h"
#include "fabric/test_support.h"

namespace ibemu::fabric {
namespace {

using test::TestPort;

struct ControlTest : ::testing::Test {
    VirtualClock clock;
    Fabric fab{clock};
    TestPort a, b;

    void SetUp() override
    {
        std::string err;
        ASSERT_TRUE(fab.build_spec("b2b", &err)) << err;
        a.wire = &fab.hca_port("vm0", 0, 1)->attach(&a);
        b.wire = &fab.hca_port("vm1", 0, 1)->attach(&b);
    }
    bool ok(const std::string& r) { return r.rfind("ok", 0) == 0; }
    bool err(const std::string& r) { return r.rfind("error: ", 0) == 0; }
    size_t deliver(int n)
    {
        size_t before = b.rx.size();
        uint8_t payload[8] = {};
        for (int i = 0; i < n; ++i)
            a.send_data(2, 1, payload);
        return b.rx.size() - before;
    }
};

TEST_F(ControlTest, LinkDownUp)
{
    auto r = fab.control("link vm0:1 down");
    EXPECT_TRUE(ok(r)) << r;
    EXPECT_FALSE(a.up);
    EXPECT_FALSE(b.up);
    EXPECT_EQ(deliver(1), 0u);
    r = fab.control("  link\tvm1:1   up \r\n");
    EXPECT_TRUE(ok(r)) << r;
    EXPECT_TRUE(a.up && b.up);
    EXPECT_EQ(deliver(1), 1u);
}

TEST_F(ControlTest, DropEveryAndPercentAndOff)
{
    EXPECT_TRUE(ok(fab.control("drop vm0:1 every 4")));
    EXPECT_EQ(deliver(8), 6u);
    EXPECT_TRUE(ok(fab.control("drop vm0:1 off")));
    EXPECT_EQ(deliver(8), 8u);
    EXPECT_TRUE(ok(fab.control("drop vm0:1 100%")));
    EXPECT_EQ(deliver(8), 0u);
    EXPECT_TRUE(ok(fab.control("drop vm0:1 0")));
    EXPECT_EQ(deliver(8), 8u);
    // Same seed, same losses.
    EXPECT_TRUE(ok(fab.control("drop vm0:1 37.5 seed 9")));
    size_t first = deliver(400);
    EXPECT_TRUE(ok(fab.control("drop vm0:1 37.5 seed 9")));
    EXPECT_EQ(deliver(400), first);
    EXPECT_GT(first, 200u);
    EXPECT_LT(first, 300u);
    // Only the direction leaving vm0:1.
    size_t before = a.rx.size();
    uint8_t payload[4] = {};
    b.send_data(1, 2, payload);
    EXPECT_EQ(a.rx.size(), before + 1);
    auto r = fab.control("counters vm0:1");
    EXPECT_NE(r.find("dropped_fault"), std::string::npos) << r;
}

TEST_F(ControlTest, MtuLatencyShow)
{
    EXPECT_TRUE(ok(fab.control("mtu vm0:1 256")));
    std::vector<uint8_t> big(512);
    a.send_data(2, 1, big);
    EXPECT_TRUE(b.rx.empty());
    EXPECT_TRUE(ok(fab.control("latency vm0:1 500")));
    uint8_t small[8] = {};
    a.send_data(2, 1, small);
    EXPECT_TRUE(b.rx.empty());
    fab.scheduler().run_until(clock, 500);
    EXPECT_EQ(b.rx.size(), 1u);
    EXPECT_TRUE(ok(fab.control("latency vm0:1 0 rate")));
    auto r = fab.control("show links");
    EXPECT_TRUE(ok(r)) << r;
    EXPECT_NE(r.find("vm0:1-vm1:1 up mtu 256"), std::string::npos) << r;
    EXPECT_NE(r.find("drop(mtu 1/0"), std::string::npos) << r;
    r = fab.control("show nodes");
    EXPECT_NE(r.find("vm1 ca H-vm1"), std::string::npos) << r;
    EXPECT_TRUE(ok(fab.control("help")));
}

// `rate on|off` switches the rate model of every link; off (the default)
// a zero-latency link delivers at once.
TEST_F(ControlTest, RateModelOnAndOff)
{
    EXPECT_EQ(fab.control("rate"), "ok rate on 0 of 1 links");
    EXPECT_EQ(deliver(1), 1u);
    EXPECT_EQ(fab.control("rate on"), "ok rate on, burst 5000000ns");
    EXPECT_EQ(fab.control("rate"), "ok rate on 1 of 1 links");
    auto r = fab.control("show links");
    EXPECT_NE(r.find(") rate"), std::string::npos) << r;
    // 28 header + 8 payload + 6 CRC bytes at 4x SDR (8 Gb/s): 42 ns.
    EXPECT_EQ(deliver(1), 0u);
    fab.scheduler().run_until(clock, 41);
    EXPECT_EQ(b.rx.size(), 1u);
    fab.scheduler().run_until(clock, 42);
    EXPECT_EQ(b.rx.size(), 2u);
    EXPECT_TRUE(ok(fab.control("rate on burst 0")));
    EXPECT_EQ(fab.control("rate off"), "ok rate off");
    EXPECT_EQ(fab.control("rate"), "ok rate on 0 of 1 links");
    EXPECT_EQ(deliver(3), 3u);
    for (const char* bad : {"rate on burst", "rate on burst x", "rate on burst 2000000000", "rate maybe",
                            "rate off now", "rate on 5"})
        EXPECT_TRUE(err(fab.control(bad))) << bad;
}

TEST_F(ControlTest, CaptureStartStop)
{
    std::string path = "/tmp/ibemu-fabric-ctl-" + std::to_string(getpid()) + ".pcap";
    EXPECT_TRUE(err(fab.control("capture stop")));
    auto r = fab.control("capture start " + path);
    EXPECT_TRUE(ok(r)) << r;
    EXPECT_EQ(deliver(2), 2u);
    r = fab.control("capture stop");
    EXPECT_EQ(r, "ok " + path + " 2 packets");
    unlink(path.c_str());
    EXPECT_TRUE(err(fab.control("capture start /nonexistent-dir/x.pcap")));
    EXPECT_TRUE(err(fab.control("capture start " + path + " nosuch:1")));
}

TEST_F(ControlTest, GarbageGetsErrorsNotCrashes)
{
    const char* bad[] = {
        "",
        "   ",
        "frobnicate",
        "link",
        "link vm0:1",
        "link vm0:1 sideways",
        "link vm0 down",
        "link :1 down",
        "link vm0: down",
        "link vm0:x down",
        "link vm0:99999999999999999999 down",
        "link vm0:2 down",  // no cable
        "link nosuch:1 down",
        "drop vm0:1",
        "drop vm0:1 every",
        "drop vm0:1 every 0",
        "drop vm0:1 every -3",
        "drop vm0:1 101",
        "drop vm0:1 -1",
        "drop vm0:1 nan",
        "drop vm0:1 inf",
        "drop vm0:1 50 seed",
        "drop vm0:1 50 extra words",
        "mtu vm0:1 300",
        "mtu vm0:1",
        "latency vm0:1 fast",
        "latency vm0:1 5 rate more",
        "show",
        "show everything",
        "capture",
        "capture start",
        "capture begin x",
        "link vm0:1 down\x01",
    };
    for (const char* line : bad) {
        auto r = fab.control(line);
        EXPECT_TRUE(err(r)) << "'" << line << "' -> " << r;
    }
    EXPECT_TRUE(err(fab.control(std::string(5000, 'x'))));
    EXPECT_TRUE(err(fab.control(std::string("link\0vm0:1 down", 16))));
    std::string many;
    for (int i = 0; i < 100; ++i)
        many += "w ";
    EXPECT_TRUE(err(fab.control(many)));
    // Random bytes.
    std::mt19937 rng(3);
    for (int i = 0; i < 2000; ++i) {
        std::string s(rng() % 64, '\0');
        for (char& c : s)
            c = char(rng());
        auto r = fab.control(s);
        EXPECT_TRUE(ok(r) || err(r));
    }
    // Still works.
    EXPECT_TRUE(ok(fab.control("link vm0:1 up")));
}

TEST(Control, ShowSwitch)
{
    VirtualClock clock;
    Fabric fab(clock);
    std::string err;
    ASSERT_TRUE(fab.build_spec("star:2", &err)) << err;
    TestPort a;
    a.wire = &fab.hca_port("vm0", 0, 1)->attach(&a);
    auto r = fab.control("show switch sw0");
    EXPECT_EQ(r.rfind("ok sw0 guid 0x", 0), 0u) << r;
    EXPECT_NE(r.find("\nport 1 INIT LINKUP"), std::string::npos) << r;
    EXPECT_NE(r.find("\nport 2 DOWN POLLING"), std::string::npos) << r;
    EXPECT_NE(r.find("\nlft"), std::string::npos) << r;
    EXPECT_EQ(fab.control("show switch vm0").rfind("error: no switch", 0), 0u);
}

TEST(Control, NoFabricYet)
{
    VirtualClock clock;
    Fabric fab(clock);
    EXPECT_EQ(fab.control("show links"), "error: no fabric");
    EXPECT_EQ(fab.control("help").substr(0, 2), "ok");
}

}  // namespace
}  // namespace ibemu::fabric
