// SPDX-License-Identifier: GPL-2.0
#include "fabric/switch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>

#include "fabric/fabric.h"
#include "fabric/test_support.h"
#include "fabric/topology.h"

namespace ibemu::fabric {
namespace {

using test::Mad;
using test::TestPort;

using namespace test::layout;

struct SwitchTest : ::testing::Test {
    VirtualClock clock;
    Fabric fab{clock};
    std::map<std::string, TestPort> hosts;

    void build(const char* spec)
    {
        std::string err;
        ASSERT_TRUE(fab.build_spec(spec, &err)) << err;
        for (HcaPort* hp : fab.hca_ports()) {
            TestPort& t = hosts[hp->node_name()];
            t.wire = &hp->attach(&t);
        }
    }
    void build_text(const char* text)
    {
        Topology t;
        std::string err;
        ASSERT_TRUE(parse_topology(text, &t, &err)) << err;
        ASSERT_TRUE(fab.build(t, &err)) << err;
        for (HcaPort* hp : fab.hca_ports()) {
            TestPort& tp = hosts[hp->node_name()];
            tp.wire = &hp->attach(&tp);
        }
    }
    TestPort& sm() { return hosts["vm0"]; }

    // Sends an SMP from the SM (vm0) and returns the one packet that came
    // back, once the fabric settled.
    std::optional<Mad> request(const Mad& m, uint16_t dlid = kPermissiveLid, uint16_t slid = kPermissiveLid)
    {
        size_t before = sm().rx.size();
        sm().send_smp(m, dlid, slid);
        fab.run_due();
        if (sm().rx.size() != before + 1)
            return std::nullopt;
        auto s = sm().rx.back().mad();
        if (s.size() != mad::kSize)
            return std::nullopt;
        Mad r;
        std::copy(s.begin(), s.end(), r.begin());
        return r;
    }

    std::optional<Mad> dr(uint8_t method, uint16_t attr, uint32_t mod, std::vector<uint8_t> path,
                          const Mad* payload = nullptr)
    {
        Mad m = test::dr_smp(method, attr, mod, path);
        if (payload)
            std::copy(payload->begin() + smp::kDataOffset, payload->begin() + smp::kDataOffset + smp::kDataSize,
                      m.begin() + smp::kDataOffset);
        return request(m);
    }

    // Set(PortInfo) of switch port `port` through a one-hop path, changing
    // only the fields `edit` touches in the current PortInfo.
    template <typename F>
    std::optional<Mad> set_port_info(std::vector<uint8_t> path, unsigned port, F edit)
    {
        auto cur = dr(mad::kMethodGet, smp::kAttrPortInfo, port, path);
        if (!cur)
            return std::nullopt;
        Mad m = *cur;
        auto d = test::smp_data(m);
        kPiState.set(d, 0);
        kPiPhys.set(d, 0);
        edit(d);
        return dr(mad::kMethodSet, smp::kAttrPortInfo, port, path, &m);
    }

    // Gives the switch (one hop away) LID `lid`, the SM LID 1, a route for
    // every HCA LID (vm<i> gets LID i+1 on port i+1) and top; brings all
    // its connected ports to ACTIVE.
    void configure_star(unsigned nhosts, uint16_t sw_lid)
    {
        ASSERT_TRUE(set_port_info({1}, 0, [&](std::span<uint8_t> d) {
            kPiLid.set(d, sw_lid);
            kPiSmLid.set(d, 1);
        }));
        Mad lft{};
        auto d = test::smp_data(lft);
        std::fill(d.begin(), d.end(), 0xff);
        for (unsigned i = 0; i < nhosts; ++i)
            d[i + 1] = uint8_t(i + 1);
        d[sw_lid] = 0;
        auto r = dr(mad::kMethodSet, smp::kAttrLft, 0, {1}, &lft);
        ASSERT_TRUE(r);
        ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
        auto si = dr(mad::kMethodGet, smp::kAttrSwitchInfo, 0, {1});
        ASSERT_TRUE(si);
        kSiLftTop.set(test::smp_data(*si), 63);
        ASSERT_TRUE(dr(mad::kMethodSet, smp::kAttrSwitchInfo, 0, {1}, &*si));
        for (unsigned p = 1; p <= nhosts; ++p) {
            for (uint8_t st : {uint8_t(PortState::Armed), uint8_t(PortState::Active)}) {
                auto rr = set_port_info({1}, p, [&](std::span<uint8_t> pd) { kPiState.set(pd, st); });
                ASSERT_TRUE(rr);
                ASSERT_EQ(smp::kDrStatus.get(*rr), 0u);
            }
        }
    }
};

TEST_F(SwitchTest, DirectedRouteNodeInfoThroughOneSwitch)
{
    build("star:2");
    auto r = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    ASSERT_TRUE(r);
    std::span<const uint8_t> m(*r);
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodGetResp);
    EXPECT_EQ(smp::kDirection.get(m), 1u);
    EXPECT_EQ(smp::kDrStatus.get(m), 0u);
    EXPECT_EQ(smp::kHopPointer.get(m), 1u);  // C14-13:1 moved it back
    EXPECT_EQ(mad::kTid.get(m), 0x1234u);
    EXPECT_EQ(m[smp::kReturnPathOffset + 1], 1);  // entered on port 1
    auto d = test::smp_data(m);
    EXPECT_EQ(d[2], 2);  // switch
    EXPECT_EQ(d[3], 8);  // ports
    EXPECT_EQ(get64(d, 12), fab.find_switch("sw0")->config().node_guid);
    EXPECT_EQ(d[36], 1);  // LocalPortNum
    // On the wire: VL15, permissive LIDs, QP0.
    const PacketView& v = sm().rx.back().view;
    EXPECT_EQ(v.vl, 15);
    EXPECT_EQ(v.dlid, kPermissiveLid);
    EXPECT_EQ(v.dest_qp, 0u);

    auto nd = dr(mad::kMethodGet, smp::kAttrNodeDesc, 0, {1});
    ASSERT_TRUE(nd);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(nd->data() + smp::kDataOffset)), "sw0");
}

TEST_F(SwitchTest, DirectedRouteThroughTwoSwitchesAndBack)
{
    build("chain:2");  // vm0 on sw0:1, vm1 on sw1:1, sw0:8 - sw1:8
    Switch* sw1 = fab.find_switch("sw1");
    ASSERT_NE(sw1, nullptr);
    auto r = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 8});
    ASSERT_TRUE(r);
    auto d = test::smp_data(*r);
    EXPECT_EQ(get64(d, 12), sw1->config().node_guid);
    EXPECT_EQ(d[36], 8);
    EXPECT_EQ((*r)[smp::kReturnPathOffset + 1], 1);
    EXPECT_EQ((*r)[smp::kReturnPathOffset + 2], 8);
    EXPECT_EQ(smp::kHopPointer.get(*r), 1u);

    auto pi = dr(mad::kMethodGet, smp::kAttrPortInfo, 1, {1, 8});
    ASSERT_TRUE(pi);
    auto pd = test::smp_data(*pi);
    EXPECT_EQ(kPiState.get(pd), uint64_t(PortState::Init));  // vm1 is attached
    EXPECT_EQ(kPiPhys.get(pd), uint64_t(PhysState::LinkUp));
    EXPECT_EQ(kPiLocalPort.get(pd), 8u);
    auto pi7 = dr(mad::kMethodGet, smp::kAttrPortInfo, 7, {1, 8});
    ASSERT_TRUE(pi7);
    EXPECT_EQ(kPiState.get(test::smp_data(*pi7)), uint64_t(PortState::Down));
    EXPECT_EQ(kPiPhys.get(test::smp_data(*pi7)), uint64_t(PhysState::Polling));

    // Three hops: through both switches to vm1 (a CA, our test port): it
    // sees the SMP with the hop pointer at the hop count (C14-9:3).
    sm().send_smp(test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 8, 1}));
    fab.run_due();
    ASSERT_EQ(hosts["vm1"].rx.size(), 1u);
    auto m = hosts["vm1"].rx[0].mad();
    EXPECT_EQ(smp::kHopPointer.get(m), 3u);
    EXPECT_EQ(m[smp::kReturnPathOffset + 1], 1);
    EXPECT_EQ(m[smp::kReturnPathOffset + 2], 8);
}

TEST_F(SwitchTest, DirectedRouteRulesDropBadSmps)
{
    build("chain:2");
    Switch* sw0 = fab.find_switch("sw0");
    // A path through a port the switch does not have (C14-9:2).
    EXPECT_FALSE(dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 99, 1}));
    // Out of a port that is down: nothing comes back.
    EXPECT_FALSE(dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 5}));
    // Hop count 64 (C14-6).
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    smp::kHopCount.set(m, 64);
    EXPECT_FALSE(request(m));
    // Hop pointer 0 on the wire (C14-9:1: the sender increments it).
    m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    smp::kHopPointer.set(m, 0);
    EXPECT_FALSE(request(m));
    // A data packet on VL15 that is not for QP0.
    EXPECT_GE(sw0->dropped_smps(), 3u);
    // Unknown attribute: answered with status.
    auto r = dr(mad::kMethodGet, smp::kAttrSmInfo, 0, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusUnsupMethodAttr);
    r = dr(0x06, smp::kAttrNodeInfo, 0, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusUnsupMethod);
    r = dr(mad::kMethodGet, smp::kAttrPortInfo, 9, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusInvalidField);
}

TEST_F(SwitchTest, PortStateMachineFollowsSetPortInfo)
{
    build("star:2");
    Switch* sw = fab.find_switch("sw0");
    EXPECT_EQ(sw->port_state(2), PortState::Init);
    EXPECT_EQ(sw->port_state(3), PortState::Down);
    auto set = [&](unsigned port, PortState s) {
        auto r = set_port_info({1}, port, [&](std::span<uint8_t> d) { kPiState.set(d, uint8_t(s)); });
        return r ? uint16_t(smp::kDrStatus.get(*r)) : uint16_t(0xffff);
    };
    // INIT -> ACTIVE skips ARMED: refused, nothing changes.
    EXPECT_EQ(set(2, PortState::Active), mad::kStatusInvalidField);
    EXPECT_EQ(sw->port_state(2), PortState::Init);
    EXPECT_EQ(set(2, PortState::Init), mad::kStatusInvalidField);
    EXPECT_EQ(set(2, PortState::Armed), 0);
    EXPECT_EQ(sw->port_state(2), PortState::Armed);
    EXPECT_EQ(set(2, PortState::Armed), 0);
    EXPECT_EQ(set(2, PortState::Active), 0);
    EXPECT_EQ(sw->port_state(2), PortState::Active);
    // The SM's own steps do not count as port state changes.
    auto si = dr(mad::kMethodGet, smp::kAttrSwitchInfo, 0, {1});
    kSiPsc.set(test::smp_data(*si), 1);
    ASSERT_TRUE(dr(mad::kMethodSet, smp::kAttrSwitchInfo, 0, {1}, &*si));
    EXPECT_FALSE(sw->port_state_change());
    // The response carries the new state.
    auto r = dr(mad::kMethodGet, smp::kAttrPortInfo, 2, {1});
    EXPECT_EQ(kPiState.get(test::smp_data(*r)), uint64_t(PortState::Active));
    // DOWN: the link retrains, the port is back in INIT.
    EXPECT_EQ(set(2, PortState::Down), 0);
    EXPECT_EQ(sw->port_state(2), PortState::Init);
    EXPECT_TRUE(sw->port_state_change());
    // A port without a link cannot be armed.
    EXPECT_EQ(set(3, PortState::Armed), mad::kStatusInvalidField);
    // Port 0 has its own state.
    EXPECT_EQ(sw->port_state(0), PortState::Init);
    EXPECT_EQ(set(0, PortState::Armed), 0);
    EXPECT_EQ(set(0, PortState::Active), 0);
    EXPECT_EQ(sw->port_state(0), PortState::Active);
    // Port 0's fields written through an external port are ignored.
    r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiLid.set(d, 77); kPiSmLid.set(d, 66); });
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    EXPECT_EQ(sw->lid(), 0);
    EXPECT_EQ(sw->sm_lid(), 0);
    // NeighborMTU above MTUCap is refused.
    r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiNeighborMtu.set(d, 5); });
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusInvalidField);
    r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiNeighborMtu.set(d, 3); });
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    EXPECT_EQ(kPiNeighborMtu.get(test::smp_data(*r)), 3u);
}

// A switch with a 4xSDR, a 12xDDR and a 1xSDR cable to three HCAs.
const char kMixedLinks[] = R"(
Switch	8 "S-0002c90200400cb0"		# "sw0"
[1]	"H-0002c903000a1b2c"[1]		# "vm0 HCA-1" lid 1 4xSDR
[2]	"H-0002c903000a1c3c"[1]		# "vm1 HCA-1" lid 2 12xDDR
[3]	"H-0002c903000a1d4c"[1]		# "vm2 HCA-1" lid 3 1xSDR

Ca	1 "H-0002c903000a1b2c"		# "vm0 HCA-1"
Ca	1 "H-0002c903000a1c3c"		# "vm1 HCA-1"
Ca	1 "H-0002c903000a1d4c"		# "vm2 HCA-1"
)";

// PortInfo LinkWidth{Enabled,Supported,Active}, LinkSpeed{Supported,
// Active,Enabled} (IBA 14.2.5.6).
constexpr Field kPiWidthEnabled{29, 1, 0, 8};
constexpr Field kPiWidthSupported{30, 1, 0, 8};
constexpr Field kPiWidthActive{31, 1, 0, 8};
constexpr Field kPiSpeedSupported{32, 1, 4, 4};
constexpr Field kPiSpeedActive{35, 1, 4, 4};
constexpr Field kPiSpeedEnabled{35, 1, 0, 4};

TEST_F(SwitchTest, PortInfoSpeedAndWidthActiveStayWithinWhatBothEndsSupport)
{
    build_text(kMixedLinks);
    // The cables are what the topology says (the wire's rate model uses it).
    ASSERT_EQ(hosts["vm1"].params.width, 8);  // 12x
    ASSERT_EQ(hosts["vm1"].params.speed, 2);  // DDR
    struct Want {
        unsigned port;
        uint8_t width_active;
    };
    // 4x stays 4x, 12x trains at 4x, 1x stays 1x; all at SDR, the only
    // speed the switch (and the MT25208 at the other end) supports.
    for (Want w : {Want{1, 2}, Want{2, 2}, Want{3, 1}}) {
        auto r = dr(mad::kMethodGet, smp::kAttrPortInfo, w.port, {1});
        ASSERT_TRUE(r);
        auto d = test::smp_data(*r);
        SCOPED_TRACE(w.port);
        EXPECT_EQ(kPiWidthSupported.get(d), 3u);
        EXPECT_EQ(kPiWidthEnabled.get(d), 3u);
        EXPECT_EQ(kPiWidthActive.get(d), w.width_active);
        EXPECT_EQ(kPiSpeedSupported.get(d), 1u);
        EXPECT_EQ(kPiSpeedEnabled.get(d), 1u);
        EXPECT_EQ(kPiSpeedActive.get(d), 1u);
        // Active is one of the supported and enabled values.
        EXPECT_NE(kPiWidthActive.get(d) & kPiWidthSupported.get(d) & kPiWidthEnabled.get(d), 0u);
        EXPECT_NE(kPiSpeedActive.get(d) & kPiSpeedSupported.get(d) & kPiSpeedEnabled.get(d), 0u);
    }
    // Enabling 1x only on port 2 trains it at 1x; 0xff is "all supported".
    auto r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiWidthEnabled.set(d, 1); });
    ASSERT_TRUE(r);
    EXPECT_EQ(kPiWidthEnabled.get(test::smp_data(*r)), 1u);
    EXPECT_EQ(kPiWidthActive.get(test::smp_data(*r)), 1u);
    r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiWidthEnabled.set(d, 0xff); });
    EXPECT_EQ(kPiWidthEnabled.get(test::smp_data(*r)), 3u);
    EXPECT_EQ(kPiWidthActive.get(test::smp_data(*r)), 2u);
}

TEST_F(SwitchTest, DisablingAPortTakesTheLinkDown)
{
    build("star:2");
    Switch* sw = fab.find_switch("sw0");
    auto r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiPhys.set(d, uint8_t(PhysState::Disabled)); });
    ASSERT_TRUE(r);
    EXPECT_FALSE(hosts["vm1"].up);
    EXPECT_EQ(sw->phys_state(2), PhysState::Disabled);
    EXPECT_EQ(sw->port_state(2), PortState::Down);
    r = set_port_info({1}, 2, [&](std::span<uint8_t> d) { kPiPhys.set(d, uint8_t(PhysState::Polling)); });
    EXPECT_TRUE(hosts["vm1"].up);
    EXPECT_EQ(sw->port_state(2), PortState::Init);
}

TEST_F(SwitchTest, LftProgrammingThenLidRoutedDelivery)
{
    build("star:3");
    Switch* sw = fab.find_switch("sw0");
    uint8_t payload[32] = {0xab};
    // Before configuration the ingress port is INIT: data is dropped.
    sm().send_data(2, 1, payload);
    EXPECT_TRUE(hosts["vm1"].rx.empty());
    EXPECT_EQ(sw->counters(1).rcv_discards, 1u);

    configure_star(3, 10);
    EXPECT_EQ(sw->lid(), 10);
    EXPECT_EQ(sw->lft(2), 2);
    auto blk = dr(mad::kMethodGet, smp::kAttrLft, 0, {1});
    ASSERT_TRUE(blk);
    EXPECT_EQ((*blk)[smp::kDataOffset + 3], 3);
    EXPECT_EQ((*blk)[smp::kDataOffset + 4], 0xff);

    sm().send_data(2, 1, payload);
    sm().send_data(3, 1, payload);
    ASSERT_EQ(hosts["vm1"].rx.size(), 1u);
    ASSERT_EQ(hosts["vm2"].rx.size(), 1u);
    EXPECT_EQ(hosts["vm1"].rx[0].view.dlid, 2);
    EXPECT_EQ(hosts["vm1"].rx[0].first_payload, payload);  // zero copy through the switch
    // Unknown DLID, DLID above LinearFDBTop, back out of the ingress port.
    sm().send_data(7, 1, payload);
    sm().send_data(100, 1, payload);
    sm().send_data(1, 1, payload);
    EXPECT_EQ(sw->counters(1).relay_errors, 3u);
    // Payload above the egress port's NeighborMTU (2048 by default).
    std::vector<uint8_t> big(4096);
    sm().send_data(2, 1, big);  // the 2048 link MTU stops it first
    unsigned side = 0;
    EXPECT_EQ(fab.link_at("vm0", 1, &side)->counters(side).dropped_mtu, 1u);
    EXPECT_EQ(fab.control("mtu vm0:1 4096").substr(0, 2), "ok");
    sm().send_data(2, 1, big);
    EXPECT_EQ(hosts["vm1"].rx.size(), 1u);
    EXPECT_EQ(sw->counters(2).xmit_discards, 1u);
    // Egress port not ACTIVE: dropped.
    auto r = set_port_info({1}, 3, [&](std::span<uint8_t> d) { kPiState.set(d, uint8_t(PortState::Down)); });
    ASSERT_TRUE(r);
    sm().send_data(3, 1, payload);
    EXPECT_EQ(hosts["vm2"].rx.size(), 1u);
    EXPECT_EQ(sw->counters(3).xmit_discards, 1u);

    // A LID routed SMP to the switch's LID is answered to the SLID.
    auto lr = request(test::lid_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0), 10, 1);
    ASSERT_TRUE(lr);
    EXPECT_EQ(mad::kMgmtClass.get(*lr), mad::kClassSubnLid);
    EXPECT_EQ(mad::kStatus.get(*lr), 0u);
    EXPECT_EQ(sm().rx.back().view.dlid, 1);
    EXPECT_EQ(sm().rx.back().view.slid, 10);
}

TEST_F(SwitchTest, DirectedRouteWithLidRoutedParts)
{
    // SM on vm0 (LID 1) -> LID routed to sw1 (LID 20) -> DR one hop to
    // vm1's port... here: DR zero-hop to sw1's own SMA via DrSLID = 1.
    build("chain:2");
    // Configure sw0 (one hop) and sw1 (two hops) with LIDs and routes.
    ASSERT_TRUE(set_port_info({1}, 0, [&](std::span<uint8_t> d) { kPiLid.set(d, 10); kPiSmLid.set(d, 1); }));
    ASSERT_TRUE(set_port_info({1, 8}, 0, [&](std::span<uint8_t> d) { kPiLid.set(d, 20); kPiSmLid.set(d, 1); }));
    auto program = [&](std::vector<uint8_t> path, std::map<unsigned, uint8_t> routes) {
        Mad lft{};
        auto d = test::smp_data(lft);
        std::fill(d.begin(), d.end(), 0xff);
        for (auto [lid, port] : routes)
            d[lid] = port;
        ASSERT_TRUE(dr(mad::kMethodSet, smp::kAttrLft, 0, path, &lft));
    };
    program({1}, {{1, 1}, {10, 0}, {20, 8}});
    program({1, 8}, {{1, 8}, {10, 8}, {20, 0}});
    // DR SMP: DrSLID = 1 (the SM), LID routed from vm0 to sw0 (LID 10),
    // then directed 1 hop out of port 8 to sw1, hop count 1.
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {8});
    smp::kHopPointer.set(m, 0);
    smp::kDrSlid.set(m, 1);
    auto r = request(m, 10, 1);
    ASSERT_TRUE(r);
    EXPECT_EQ(get64(test::smp_data(*r), 12), fab.find_switch("sw1")->config().node_guid);
    EXPECT_EQ(smp::kHopPointer.get(*r), 0u);
    EXPECT_EQ(sm().rx.back().view.dlid, 1);   // LID routed back to DrSLID
    EXPECT_EQ(sm().rx.back().view.slid, 10);  // by sw0, which ended the DR part

    // DrDLID: DR one hop to sw0, then LID routed to sw1 (LID 20).
    m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    smp::kDrDlid.set(m, 20);
    r = request(m);
    ASSERT_TRUE(r);
    EXPECT_EQ(get64(test::smp_data(*r), 12), fab.find_switch("sw1")->config().node_guid);
    EXPECT_EQ(smp::kHopPointer.get(*r), 1u);
}

TEST_F(SwitchTest, MulticastByMft)
{
    build("star:3");
    configure_star(3, 10);
    Mad mft{};
    auto d = test::smp_data(mft);
    put16(d, 0, 0x000e);  // MLID 0xC000: ports 1, 2, 3
    put16(d, 2, 0x0004);  // MLID 0xC001: port 2 only
    auto r = dr(mad::kMethodSet, smp::kAttrMft, 0, {1}, &mft);
    ASSERT_TRUE(r);
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    EXPECT_EQ(get16(test::smp_data(*r), 0), 0x000e);
    uint8_t payload[16] = {};
    hosts["vm1"].send_data(0xc000, 2, payload);
    size_t sm_before = sm().rx.size();
    hosts["vm1"].send_data(0xc000, 2, payload);
    EXPECT_EQ(sm().rx.size(), sm_before + 1);
    EXPECT_EQ(hosts["vm2"].rx.size(), 2u);
    EXPECT_EQ(hosts["vm1"].rx.size(), 0u);  // never back out of the ingress port
    sm().send_data(0xc001, 1, payload);
    EXPECT_EQ(hosts["vm1"].rx.size(), 1u);
    EXPECT_EQ(hosts["vm2"].rx.size(), 2u);
    // A bad position is refused.
    r = dr(mad::kMethodGet, smp::kAttrMft, 1u << 28, {1});
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusInvalidField);
}

TEST_F(SwitchTest, MulticastLoopOnACycleIsBounded)
{
    // Four switches cabled each to each, every port ACTIVE, and an MFT that
    // sends MLID 0xC000 out of every port of every switch: each copy that
    // crosses a switch-to-switch link leaves the next switch as two. Zero-latency links deliver
    // all of it inside one transmit; without a budget that is ~2^64
    // deliveries (the depth bound alone is 64 hops).
    build_text(test::kMesh4);
    const std::vector<std::vector<uint8_t>> paths = {{1}, {1, 2}, {1, 3}, {1, 4}};
    for (const auto& path : paths) {
        for (unsigned p = 1; p <= 4; ++p) {
            for (uint8_t st : {uint8_t(PortState::Armed), uint8_t(PortState::Active)}) {
                auto r = set_port_info(path, p, [&](std::span<uint8_t> pd) { kPiState.set(pd, st); });
                ASSERT_TRUE(r);
                ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
            }
        }
        Mad mft{};
        put16(test::smp_data(mft), 0, 0x001e);  // MLID 0xC000: ports 1-4
        auto r = dr(mad::kMethodSet, smp::kAttrMft, 0, path, &mft);
        ASSERT_TRUE(r);
        ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
    }
    for (auto& [name, h] : hosts)
        h.rx.clear();
    auto storm = [&] {
        uint64_t n = 0;
        for (auto [node, port] : {std::pair{"sw0", 2u}, {"sw0", 3u}, {"sw0", 4u}, {"sw1", 3u}, {"sw1", 4u},
                                  {"sw2", 4u}}) {
            unsigned side;
            Link* l = fab.link_at(node, port, &side);
            EXPECT_NE(l, nullptr);
            if (l)
                n += l->counters(0).dropped_storm + l->counters(1).dropped_storm;
        }
        return n;
    };
    auto t0 = std::chrono::steady_clock::now();
    uint8_t payload[16] = {};
    hosts["vm1"].send_data(0xc000, 2, payload);
    fab.run_due();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 2.0);
    uint64_t dropped = storm();
    EXPECT_GT(dropped, 0u);
    // Every host got copies, but no more than the budget allows in all.
    size_t rx = 0;
    for (const char* h : {"vm0", "vm1", "vm2", "vm3"}) {
        EXPECT_GT(hosts[h].rx.size(), 0u) << h;
        rx += hosts[h].rx.size();
    }
    EXPECT_LE(rx, kMaxSyncDeliveries);
    RecordProperty("dropped_storm", std::to_string(dropped));
    RecordProperty("host_copies", std::to_string(rx));
    // The budget is per transmit: the next packet has a fresh one, so a
    // unicast SMP still gets through and comes back.
    auto ni = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 2});
    EXPECT_TRUE(ni);
}

TEST_F(SwitchTest, LinkDownRaisesLinkChangedAndTrap128)
{
    build("star:3");
    Switch* sw = fab.find_switch("sw0");
    // Without a LID nothing is sent, but PortStateChange is set.
    configure_star(3, 10);
    auto si = dr(mad::kMethodGet, smp::kAttrSwitchInfo, 0, {1});
    ASSERT_TRUE(si);
    // Clear PortStateChange by writing 1.
    kSiPsc.set(test::smp_data(*si), 1);
    auto cleared = dr(mad::kMethodSet, smp::kAttrSwitchInfo, 0, {1}, &*si);
    EXPECT_EQ(kSiPsc.get(test::smp_data(*cleared)), 0u);
    EXPECT_FALSE(sw->port_state_change());

    size_t before = sm().rx.size();
    EXPECT_EQ(fab.control("link vm2:1 down").substr(0, 2), "ok");
    fab.run_due();
    EXPECT_FALSE(hosts["vm2"].up);
    EXPECT_EQ(hosts["vm2"].link_events.back(), false);
    EXPECT_EQ(sw->port_state(3), PortState::Down);
    EXPECT_TRUE(sw->port_state_change());
    ASSERT_EQ(sm().rx.size(), before + 1);
    const test::RxPacket& t = sm().rx.back();
    EXPECT_EQ(t.view.vl, 15);
    EXPECT_EQ(t.view.dlid, 1);
    EXPECT_EQ(t.view.slid, 10);
    auto m = t.mad();
    EXPECT_EQ(mad::kMgmtClass.get(m), mad::kClassSubnLid);
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodTrap);
    EXPECT_EQ(mad::kAttrId.get(m), smp::kAttrNotice);
    auto d = test::smp_data(m);
    EXPECT_EQ(d[0], 0x81);               // generic, urgent
    EXPECT_EQ(get32(d, 0) & 0xffffff, 2u);  // producer: switch
    EXPECT_EQ(get16(d, 4), 128);
    EXPECT_EQ(get16(d, 6), 10);           // issuer LID
    EXPECT_EQ(get16(d, 10), 10);          // LIDADDR
    // And again when it comes back.
    fab.control("link vm2:1 up");
    EXPECT_EQ(sm().rx.size(), before + 2);
    EXPECT_EQ(sw->port_state(3), PortState::Init);
    // A TrapRepress is taken silently.
    Mad rep = test::lid_smp(mad::kMethodTrapRepress, smp::kAttrNotice, 0);
    EXPECT_FALSE(request(rep, 10, 1));
}

TEST_F(SwitchTest, PmaPortCountersOverQp1)
{
    build("star:2");
    configure_star(2, 10);
    uint8_t payload[60] = {};
    for (int i = 0; i < 3; ++i)
        sm().send_data(2, 1, payload);
    ASSERT_EQ(hosts["vm1"].rx.size(), 3u);
    auto gmp = [&](uint8_t method, uint16_t attr, uint8_t port, uint16_t select) {
        Mad m{};
        std::span<uint8_t> s(m);
        mad::kBaseVersion.set(s, 1);
        mad::kMgmtClass.set(s, mad::kClassPerf);
        mad::kClassVersion.set(s, 1);
        mad::kMethod.set(s, method);
        mad::kTid.set(s, 77);
        mad::kAttrId.set(s, attr);
        m[64 + 1] = port;
        put16(s, 64 + 2, select);
        Packet p;
        UdAddress a;
        a.dlid = 10;
        a.slid = 1;
        a.dest_qp = 1;
        a.src_qp = 1;
        a.qkey = kQp1Qkey;
        build_ud(p, a, m);
        size_t before = sm().rx.size();
        sm().wire->transmit(p);
        fab.run_due();
        EXPECT_EQ(sm().rx.size(), before + 1);
        return sm().rx.back();
    };
    test::RxPacket r = gmp(mad::kMethodGet, 0x0012, 2, 0);
    EXPECT_EQ(r.view.dest_qp, 1u);
    EXPECT_EQ(r.view.slid, 10);
    EXPECT_EQ(r.view.vl, 0);
    auto m = r.mad();
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodGetResp);
    EXPECT_EQ(mad::kStatus.get(m), 0u);
    EXPECT_EQ(get32(m, 64 + 32), 3u);                     // PortXmitPkts on port 2
    EXPECT_EQ(get32(m, 64 + 24), 3u * (28 + 60) / 4);     // PortXmitData, words
    r = gmp(mad::kMethodSet, 0x0012, 2, 0xffff);
    EXPECT_EQ(get32(r.mad(), 64 + 32), 0u);
    r = gmp(mad::kMethodGet, 0x0001, 0, 0);
    EXPECT_EQ(mad::kStatus.get(r.mad()), 0u);
    EXPECT_EQ(r.mad()[64 + 7], 18);
    r = gmp(mad::kMethodGet, 0x0012, 9, 0);
    EXPECT_EQ(mad::kStatus.get(r.mad()), mad::kStatusInvalidField);
}

TEST_F(SwitchTest, HostileSmpsAndPacketsDoNotHurt)
{
    // A guest's SM is untrusted: random SMPs with random hop counts,
    // pointers, paths, directions, attributes and methods, plus malformed
    // packets, into a chain of two switches. Nothing may crash or loop, and
    // the fabric still answers afterwards.
    build("chain:4");
    std::mt19937 rng(11);
    const uint16_t attrs[] = {smp::kAttrNodeInfo, smp::kAttrPortInfo, smp::kAttrSwitchInfo, smp::kAttrLft,
                              smp::kAttrMft, smp::kAttrPkeyTable, smp::kAttrSlToVl, smp::kAttrVlArb,
                              smp::kAttrGuidInfo, smp::kAttrNodeDesc, smp::kAttrNotice, 0xff00};
    for (int i = 0; i < 20000; ++i) {
        Mad m{};
        for (auto& b : m)
            b = uint8_t(rng());
        std::span<uint8_t> s(m);
        if (rng() % 4) {
            mad::kBaseVersion.set(s, 1);
            mad::kClassVersion.set(s, 1);
            mad::kMgmtClass.set(s, rng() % 2 ? mad::kClassSubnDirected : mad::kClassSubnLid);
            mad::kMethod.set(s, rng() % 2 ? mad::kMethodGet : mad::kMethodSet);
            mad::kAttrId.set(s, attrs[rng() % std::size(attrs)]);
            smp::kHopCount.set(s, rng() % 5);
            smp::kHopPointer.set(s, rng() % 6);
            for (unsigned h = 1; h < 6; ++h)
                m[smp::kInitialPathOffset + h] = uint8_t(rng() % 10);
            if (rng() % 2) {
                // A plausible path: vm0 -> sw0 [-> sw1 [-> anywhere]].
                smp::kHopCount.set(s, 1 + rng() % 3);
                smp::kHopPointer.set(s, 1);
                smp::kDirection.set(s, 0);
                mad::kMgmtClass.set(s, mad::kClassSubnDirected);
                smp::kDrSlid.set(s, kPermissiveLid);
                smp::kDrDlid.set(s, rng() % 8 ? kPermissiveLid : uint16_t(rng() % 64));
                m[smp::kInitialPathOffset + 1] = 1;
                m[smp::kInitialPathOffset + 2] = 8;
            }
            if (rng() % 2)
                mad::kAttrMod.set(s, rng() % 16);
        }
        uint16_t dlid = rng() % 8 ? kPermissiveLid : uint16_t(rng());
        sm().send_smp(m, dlid, uint16_t(rng()));
        if (i % 64 == 0) {
            // A malformed packet: short header, odd LNH, VL15 to QP 5.
            Packet p;
            p.hdr_len = uint16_t(rng() % 40);
            for (auto& b : p.hdr)
                b = uint8_t(rng());
            p.vl = uint8_t(rng() % 16);
            sm().wire->transmit(p);
        }
        fab.run_due();
    }
    // The SM may have disabled ports, moved LIDs, ...: re-enable the path
    // and check the first switch still answers.
    for (unsigned p = 1; p <= 8; ++p)
        fab.control("link sw0:" + std::to_string(p) + " up");
    fab.control("link vm0:1 up");
    sm().rx.clear();
    auto r = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    if (!r) {
        // vm0's switch port may be administratively disabled by a random Set.
        set_port_info({1}, 1, [](std::span<uint8_t> d) { kPiPhys.set(d, uint8_t(PhysState::Polling)); });
    }
    uint64_t handled = 0;
    for (const char* n : {"sw0", "sw1"})
        for (unsigned p = 0; p <= 8; ++p)
            handled += fab.find_switch(n)->counters(p).smps_handled;
    EXPECT_GT(handled, 1000u) << "rcv " << fab.find_switch("sw0")->counters(1).rcv_packets << " dropped "
                              << fab.find_switch("sw0")->dropped_smps() << " " << fab.control("counters vm0:1");
    EXPECT_GT(sm().rx.size() + fab.find_switch("sw0")->dropped_smps(), 0u);
}

TEST_F(SwitchTest, MkeyProtectsTheSma)
{
    build("star:2");
    static constexpr Field kPiMkey{0, 8, 0, 64};
    static constexpr Field kPiProtect{34, 1, 6, 2};
    auto r = set_port_info({1}, 0, [](std::span<uint8_t> d) {
        kPiMkey.set(d, 0x1234);
        kPiProtect.set(d, 1);
    });
    ASSERT_TRUE(r);
    Switch* sw = fab.find_switch("sw0");
    // Get without the key: answered, M_Key hidden.
    r = dr(mad::kMethodGet, smp::kAttrPortInfo, 0, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(get64(test::smp_data(*r), 0), 0u);
    // Set without the key: silently dropped and counted.
    Mad lft{};
    EXPECT_FALSE(dr(mad::kMethodSet, smp::kAttrLft, 0, {1}, &lft));
    EXPECT_EQ(sw->mkey_violations(), 1);
    // With the key: works, and shows the key.
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrPortInfo, 0, {1});
    smp::kMkey.set(m, 0x1234);
    r = request(m);
    ASSERT_TRUE(r);
    EXPECT_EQ(get64(test::smp_data(*r), 0), 0x1234u);
    EXPECT_EQ(get16(test::smp_data(*r), 44), 1);  // MKeyViolations
}

TEST_F(SwitchTest, TablesRoundTrip)
{
    build("star:2");
    Mad pk{};
    put16(test::smp_data(pk), 0, 0xffff);
    put16(test::smp_data(pk), 2, 0x8001);
    auto r = dr(mad::kMethodSet, smp::kAttrPkeyTable, (2u << 16) | 0, {1}, &pk);
    ASSERT_TRUE(r);
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    EXPECT_EQ(get16(test::smp_data(*r), 2), 0x8001);
    r = dr(mad::kMethodGet, smp::kAttrPkeyTable, (1u << 16) | 1, {1});
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusInvalidField);

    Mad sl{};
    test::smp_data(sl)[0] = 0x01;
    r = dr(mad::kMethodSet, smp::kAttrSlToVl, (1u << 8) | 2, {1}, &sl);
    EXPECT_EQ(test::smp_data(*r)[0], 0x01);
    r = dr(mad::kMethodGet, smp::kAttrSlToVl, (2u << 8) | 1, {1});
    EXPECT_EQ(test::smp_data(*r)[0], 0x00);

    Mad va{};
    test::smp_data(va)[1] = 0x20;
    r = dr(mad::kMethodSet, smp::kAttrVlArb, (1u << 16) | 2, {1}, &va);
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    EXPECT_EQ(test::smp_data(*r)[1], 0x20);
    r = dr(mad::kMethodGet, smp::kAttrVlArb, (5u << 16) | 2, {1});
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusInvalidField);

    r = dr(mad::kMethodGet, smp::kAttrGuidInfo, 0, {1});
    EXPECT_EQ(get64(test::smp_data(*r), 0), fab.find_switch("sw0")->config().node_guid);
    r = dr(mad::kMethodSet, smp::kAttrNodeInfo, 0, {1});
    EXPECT_EQ(smp::kDrStatus.get(*r), mad::kStatusUnsupMethodAttr);
}

// A violation is reported with trap 256 to the SM, and the M_Key lease
// (IBA 14.2.4.2) drops the protection when nobody with the key shows up.
TEST_F(SwitchTest, MkeyViolationTrap256AndLease)
{
    build("star:2");
    configure_star(2, 10);
    static constexpr Field kPiMkey{0, 8, 0, 64};
    static constexpr Field kPiLease{26, 2, 0, 16};
    static constexpr Field kPiProtect{34, 1, 6, 2};
    ASSERT_TRUE(set_port_info({1}, 0, [](std::span<uint8_t> d) {
        kPiMkey.set(d, 0x1234);
        kPiProtect.set(d, 3);
        kPiLease.set(d, 2);
    }));
    Switch* sw = fab.find_switch("sw0");
    // No answer: what comes back to the SM is the trap.
    auto t = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    EXPECT_EQ(sw->mkey_violations(), 1);
    ASSERT_TRUE(t);
    std::span<const uint8_t> m(*t);
    EXPECT_EQ(mad::kMgmtClass.get(m), mad::kClassSubnLid);
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodTrap);
    EXPECT_EQ(smp::kMkey.get(m), 0x1234u);
    auto d = m.subspan(smp::kDataOffset, smp::kDataSize);
    EXPECT_EQ(d[0], 0x82);  // generic, security
    EXPECT_EQ(get16(d, 4), 256);
    EXPECT_EQ(get16(d, 6), 10);
    EXPECT_EQ(d[16], mad::kMethodGet);
    EXPECT_EQ(get16(d, 18), smp::kAttrNodeInfo);
    EXPECT_EQ(get64(d, 24), 0u);
    EXPECT_EQ(d[33], 0x80 | 1);  // directed route, one hop
    EXPECT_EQ(d[34], 1);         // the return path: port 1

    // Two seconds later, still no key: protection gone, Gets answered.
    clock.advance(2'000'000'000ull);
    auto r = dr(mad::kMethodGet, smp::kAttrPortInfo, 0, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(kPiProtect.get(test::smp_data(*r)), 0u);
    EXPECT_EQ(kPiMkey.get(test::smp_data(*r)), 0x1234u);
    t = dr(mad::kMethodSet, smp::kAttrPortInfo, 0, {1}, &*r);
    ASSERT_TRUE(t);
    EXPECT_EQ(mad::kMethod.get(*t), mad::kMethodTrap);
    EXPECT_EQ(sw->mkey_violations(), 2);
}

// PortInfo PartitionEnforcement (IBA 14.2.5.6, 10.9.2): with the inbound
// bit an external port drops data packets whose P_Key is not in its
// P_KeyTable (PortRcvConstraintErrors); with the outbound bit the egress
// port does (PortXmitConstraintErrors). SMPs on VL15 are never checked.
TEST_F(SwitchTest, PartitionEnforcement)
{
    build("star:2");
    configure_star(2, 10);
    static constexpr Field kPiPartEnforce{43, 1, 0, 4};
    Switch* sw = fab.find_switch("sw0");
    auto send = [&](uint16_t pkey) {
        size_t before = hosts["vm1"].rx.size();
        Packet p;
        UdAddress a;
        a.dlid = 2;
        a.slid = 1;
        a.dest_qp = a.src_qp = 2;
        a.qkey = 0x11111111;
        a.pkey = pkey;
        uint8_t payload[16] = {};
        build_ud(p, a, payload);
        sm().wire->transmit(p);
        fab.run_due();
        return hosts["vm1"].rx.size() == before + 1;
    };
    auto set_pkeys = [&](unsigned port, std::initializer_list<uint16_t> keys) {
        Mad pk{};
        unsigned i = 0;
        for (uint16_t k : keys)
            put16(test::smp_data(pk), 2 * i++, k);
        auto r = dr(mad::kMethodSet, smp::kAttrPkeyTable, (port << 16) | 0, {1}, &pk);
        ASSERT_TRUE(r);
        ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
    };
    // Off (the default): anything passes.
    EXPECT_TRUE(send(0x8001));
    // SwitchInfo advertises both enforcement capabilities.
    auto si = dr(mad::kMethodGet, smp::kAttrSwitchInfo, 0, {1});
    ASSERT_TRUE(si);
    EXPECT_EQ(test::smp_data(*si)[16] & 0xc0, 0xc0);

    // Inbound on port 1 (vm0's): only 0xffff (the default table) passes.
    ASSERT_TRUE(set_port_info({1}, 1, [](std::span<uint8_t> d) { kPiPartEnforce.set(d, 8); }));
    EXPECT_FALSE(send(0x8001));
    EXPECT_EQ(sw->counters(1).rcv_constraint, 1u);
    EXPECT_TRUE(send(0xffff));
    // A limited member 0x0001 matches the full member 0x8001 in the table.
    set_pkeys(1, {0xffff, 0x8001});
    EXPECT_TRUE(send(0x0001));
    EXPECT_TRUE(send(0x8001));
    // Outbound on port 2: vm1's table has only limited 0x0001, so a
    // limited sender (0x0001) is refused, a full member passes.
    set_pkeys(2, {0x7fff, 0x0001});
    ASSERT_TRUE(set_port_info({1}, 2, [](std::span<uint8_t> d) { kPiPartEnforce.set(d, 4); }));
    EXPECT_FALSE(send(0x0001));
    EXPECT_EQ(sw->counters(2).xmit_constraint, 1u);
    EXPECT_TRUE(send(0x8001));
    // PortInfo reads the bits back; SMPs still reach the switch.
    auto r = dr(mad::kMethodGet, smp::kAttrPortInfo, 2, {1});
    ASSERT_TRUE(r);
    EXPECT_EQ(kPiPartEnforce.get(test::smp_data(*r)), 4u);
}

// ---- link-level flow control (IBA 7.9) ----------------------------------------

// A traffic source that obeys credits: it sends its packets while its wire
// says there is room, and resumes when told credits came back. Each payload
// carries the flow id and a sequence number.
struct FlowSource : TestPort {
    uint8_t flow = 0;
    uint16_t slid = 0, dlid = 0;
    uint8_t sl = 0;
    unsigned total = 0, sent = 0;
    unsigned waits = 0;
    std::vector<uint8_t> payload = std::vector<uint8_t>(1024);

    void pump()
    {
        while (sent < total) {
            Packet p;
            UdAddress a;
            a.dlid = dlid;
            a.slid = slid;
            a.sl = sl;
            a.dest_qp = a.src_qp = 2;
            a.qkey = 0x11111111;
            payload[0] = flow;
            put32(payload, 4, sent);
            build_ud(p, a, payload);
            if (!wire->ready(p.vl, p.hdr_len + p.payload_len)) {
                ++waits;
                return;  // tx_ready() resumes
            }
            wire->transmit(p);
            ++sent;
        }
    }
    void tx_ready() override { pump(); }
};

struct FlowTest : SwitchTest {
    FlowSource a, b;  // vm1 (LID 2) and vm2 (LID 3), each a flow to vm3 (LID 4)

    // star:4 with the SM on vm0; the sources are attached before the SM
    // brings the ports ACTIVE (attaching retrains a link).
    void SetUp() override
    {
        build("star:4");
        for (auto [src, name, flow] : {std::tuple{&a, "vm1", 1}, std::tuple{&b, "vm2", 2}}) {
            HcaPort* hp = fab.hca_port(name, 0, 1);
            ASSERT_TRUE(hp);
            src->wire = &hp->attach(src);
            src->flow = uint8_t(flow);
            src->slid = uint16_t(flow + 1);
            src->dlid = 4;
        }
        configure_star(4, 10);
    }
    // Every packet every link of the fabric lost, for any reason.
    uint64_t link_drops()
    {
        uint64_t n = 0;
        for (const auto& l : fab.links())
            n += l->counters(0).dropped() + l->counters(1).dropped();
        return n;
    }
    // Runs virtual time forward until `rx` holds `want` packets (or 10 ms).
    void run_until_received(const TestPort& rx, size_t want)
    {
        for (int i = 0; i < 10000 && rx.rx.size() < want; ++i)
            fab.scheduler().run_until(clock, clock.now_ns() + 1000);
    }
    // Egress to vm3 (switch port 4): the rate model (4x SDR, ~1 us per
    // 1 KiB packet) and a receive buffer of 8 packets of 1 KiB per VL.
    Link* slow_egress()
    {
        unsigned side = 0;
        Link* l = fab.link_at("sw0", 4, &side);
        l->set_latency(0, true);
        l->set_vl_credits(8 * 17);
        return l;
    }
};

TEST_F(FlowTest, SlowEgressBackPressuresTwoSendersWithoutLoss)
{
    a.total = b.total = 1500;  // more than a direction's 1024 slots
    Link* egress = slow_egress();
    TestPort& c = hosts["vm3"];
    a.pump();
    b.pump();
    run_until_received(c, 3000);

    ASSERT_EQ(c.rx.size(), 3000u) << fab.control("show drops");
    EXPECT_EQ(link_drops(), 0u);
    std::array<uint32_t, 3> next{};
    for (const auto& r : c.rx) {
        uint8_t flow = r.bytes[28];
        ASSERT_TRUE(flow == 1 || flow == 2);
        EXPECT_EQ(get32(std::span<const uint8_t>(r.bytes), 32), next[flow]) << "flow " << int(flow);
        ++next[flow];
    }
    EXPECT_EQ(next[1], 1500u);
    EXPECT_EQ(next[2], 1500u);
    // The egress held them back, and the senders felt it.
    EXPECT_GT(a.waits, 0u);
    EXPECT_GT(b.waits, 0u);
    unsigned side = 0;
    const LinkCounters& in_a = fab.link_at("vm1", 1, &side)->counters(side);
    EXPECT_GT(in_a.credit_waits, 0u);
    EXPECT_EQ(in_a.over_credit, 0u);
    EXPECT_EQ(egress->counters(0).over_credit + egress->counters(1).over_credit, 0u);
    for (unsigned p = 1; p <= 4; ++p)
        EXPECT_EQ(fab.find_switch("sw0")->counters(p).xmit_discards, 0u) << "port " << p;
    for (const auto& l : fab.links())
        EXPECT_EQ(l->queued(0) + l->queued(1), 0u);
}

// Two ingress ports feeding one saturated egress port: the switch's
// arbitration between them must not starve one. Both sources stay
// backlogged for the whole window; over the first 1000 packets the egress
// carries, each flow gets its half, to within a few packets (the round
// robin alternates them packet by packet).
TEST_F(FlowTest, IngressPortsShareAnEgressPortRoundRobin)
{
    a.total = b.total = 5000;  // both backlogged throughout
    slow_egress();
    TestPort& c = hosts["vm3"];
    a.pump();
    b.pump();
    run_until_received(c, 1000);
    ASSERT_GE(c.rx.size(), 1000u);
    std::array<unsigned, 3> got{};
    for (size_t i = 0; i < 1000; ++i)
        ++got[c.rx[i].bytes[28] == 1 ? 1 : 2];
    std::printf("of 1000 packets at the egress: flow 1 %u, flow 2 %u\n", got[1], got[2]);
    EXPECT_GE(got[1], 490u);
    EXPECT_GE(got[2], 490u);
    EXPECT_LT(a.sent, a.total);  // still backlogged at the end
    EXPECT_LT(b.sent, b.total);
    EXPECT_EQ(link_drops(), 0u);
}

// An ingress port waiting in line whose link goes down leaves the line (its
// buffer was flushed): the other ingress port gets the whole egress, and
// does not wait for a turn that will never be taken.
TEST_F(FlowTest, IngressArbitrationForgetsAPortWhoseLinkWentDown)
{
    a.total = b.total = 5000;
    slow_egress();
    TestPort& c = hosts["vm3"];
    a.pump();
    b.pump();
    run_until_received(c, 200);
    ASSERT_EQ(fab.control("link vm2:1 down").rfind("ok", 0), 0u);
    size_t before = c.rx.size();
    run_until_received(c, before + 500);
    ASSERT_GE(c.rx.size(), before + 500) << "the egress stalled";
    // Once the flushed packets are gone, only flow 1 arrives.
    for (size_t i = c.rx.size() - 100; i < c.rx.size(); ++i)
        EXPECT_EQ(c.rx[i].bytes[28], 1) << i;
}

TEST_F(FlowTest, OnlyInjectedFaultsDropAndEachIsCounted)
{
    a.total = 200;
    slow_egress();
    ASSERT_EQ(fab.control("drop vm1:1 every 10").rfind("ok", 0), 0u);
    a.pump();
    run_until_received(hosts["vm3"], 180);
    fab.scheduler().run_until(clock, clock.now_ns() + 1000000);
    EXPECT_EQ(hosts["vm3"].rx.size(), 180u);
    unsigned side = 0;
    const LinkCounters& ctr = fab.link_at("vm1", 1, &side)->counters(side);
    EXPECT_EQ(ctr.dropped_fault, 20u);
    EXPECT_EQ(link_drops(), 20u);
    std::string reply = fab.control("counters vm1:1");
    EXPECT_NE(reply.find("dropped_fault 20"), std::string::npos) << reply;
    EXPECT_EQ(fab.control("show drops").rfind("ok drops 20 fault 20", 0), 0u) << fab.control("show drops");
}

// IBA 7.6.6 / 7.6.9: two flows on SL 0 and SL 1, which the switch's
// SLtoVLMappingTable puts on VL0 and VL1 towards vm3, and a VLArbitration
// low priority table with weights 3:1 (48 and 16 units of 64 bytes: three
// 1058-byte packets, then one). The saturated egress carries them 3:1.
TEST_F(FlowTest, SlToVlAndVlArbitrationShareASaturatedLink3To1)
{
    a.total = b.total = 800;
    b.sl = 1;
    Link* egress = slow_egress();
    // OperationalVLs 2 (VL0-1) on the egress port.
    constexpr Field kPiOpVls{43, 1, 4, 4};
    ASSERT_TRUE(set_port_info({1}, 4, [&](std::span<uint8_t> d) { kPiOpVls.set(d, 2); }));
    for (unsigned in : {2u, 3u}) {
        Mad m{};
        test::smp_data(m)[0] = 0x01;  // SL0 -> VL0, SL1 -> VL1, the rest VL0
        auto r = dr(mad::kMethodSet, smp::kAttrSlToVl, in << 8 | 4, {1}, &m);
        ASSERT_TRUE(r);
        ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
    }
    Mad arb{};
    auto d = test::smp_data(arb);
    d[0] = 0, d[1] = 48;  // VL0, weight 48
    d[2] = 1, d[3] = 16;  // VL1, weight 16
    auto r = dr(mad::kMethodSet, smp::kAttrVlArb, 1u << 16 | 4, {1}, &arb);
    ASSERT_TRUE(r);
    ASSERT_EQ(smp::kDrStatus.get(*r), 0u);

    TestPort& c = hosts["vm3"];
    a.pump();
    b.pump();
    run_until_received(c, 1600);
    ASSERT_EQ(c.rx.size(), 1600u) << fab.control("show drops");
    EXPECT_EQ(link_drops(), 0u);
    // While both were backlogged (the first 800 packets), 3:1.
    unsigned n1 = 0, n2 = 0;
    for (size_t i = 0; i < 800; ++i) {
        uint8_t vl = c.rx[i].bytes[0] >> 4;
        if (c.rx[i].bytes[28] == 1) {
            ++n1;
            EXPECT_EQ(vl, 0);
        } else {
            ++n2;
            EXPECT_EQ(vl, 1);  // the switch rewrote the LRH's VL
        }
    }
    RecordProperty("vl0_vl1", std::to_string(n1) + ":" + std::to_string(n2));
    EXPECT_EQ(n1 + n2, 800u);
    EXPECT_NEAR(double(n1) / double(n2), 3.0, 0.1) << n1 << ":" << n2;
    EXPECT_EQ(egress->counters(0).over_credit + egress->counters(1).over_credit, 0u);
}

// Unprogrammed tables are the IBA defaults: every SL on VL0, so two flows
// on SL 0 and SL 5 both arrive on VL0, each in order.
TEST_F(FlowTest, UnprogrammedTablesPutEverySlOnVl0)
{
    a.total = b.total = 200;
    b.sl = 5;
    slow_egress();
    TestPort& c = hosts["vm3"];
    a.pump();
    b.pump();
    run_until_received(c, 400);
    ASSERT_EQ(c.rx.size(), 400u);
    std::array<uint32_t, 3> next{};
    for (const auto& rp : c.rx) {
        EXPECT_EQ(rp.bytes[0] >> 4, 0);
        uint8_t flow = rp.bytes[28];
        EXPECT_EQ(get32(std::span<const uint8_t>(rp.bytes), 32), next[flow]);
        ++next[flow];
    }
    EXPECT_EQ(link_drops(), 0u);
}

}  // namespace
}  // namespace ibemu::fabric
