// SPDX-License-Identifier: GPL-2.0
//
// Stub CAs: what a subnet manager and a PMA client see of a guest-less CA,
// through a real link (and a switch), with test ports as the SM.
#include "stub/stub_ca.h"

#include <gtest/gtest.h>

#include "fabric/fabric.h"
#include "fabric/test_support.h"
#include "stub/stub_farm.h"

namespace ibemu::stub {
namespace {

using namespace fabric;
using test::Mad;
using test::TestPort;
using namespace test::layout;
using ib::PhysState;
using ib::PortState;

// NodeInfo fields (IBA 14.2.5.3), written out here, not from emulator/ib.
constexpr Field kNiNodeType{2, 1, 0, 8};
constexpr Field kNiNumPorts{3, 1, 0, 8};
constexpr Field kNiNodeGuid{12, 8, 0, 64};
constexpr Field kNiPortGuid{20, 8, 0, 64};
constexpr Field kNiLocalPort{36, 1, 0, 8};

struct B2b : ::testing::Test {
    VirtualClock clock;
    Fabric fab{clock};
    TestPort sm;
    std::unique_ptr<StubFarm> farm;

    void SetUp() override
    {
        std::string err;
        ASSERT_TRUE(fab.build_spec("b2b", &err)) << err;
        HcaPort* hp = fab.hca_port("vm0", 0, 1);
        ASSERT_NE(hp, nullptr);
        sm.wire = &hp->attach(&sm);
        farm = std::make_unique<StubFarm>(fab);
        ASSERT_EQ(farm->attach_all(), 1u);  // vm1 only: vm0 is ours
        ASSERT_TRUE(sm.up);
    }
    StubCa& vm1() { return *farm->find("vm1"); }

    // One DR SMP to vm1 (path {1}); the response, if one came.
    std::optional<Mad> dr(uint8_t method, uint16_t attr, uint32_t mod, const Mad* set = nullptr)
    {
        Mad m = test::dr_smp(method, attr, mod, {1});
        if (set)
            std::copy(set->begin() + 64, set->begin() + 128, m.begin() + 64);
        return exchange_smp(m);
    }
    std::optional<Mad> exchange_smp(const Mad& m, uint16_t dlid = kPermissiveLid, uint16_t slid = kPermissiveLid)
    {
        size_t before = sm.rx.size();
        sm.send_smp(m, dlid, slid);
        fab.run_due();
        if (sm.rx.size() != before + 1)
            return std::nullopt;
        auto s = sm.rx.back().mad();
        Mad r{};
        std::copy(s.begin(), s.end(), r.begin());
        return r;
    }
    std::optional<Mad> gmp(const Mad& m, uint16_t dlid, uint32_t qkey = kQp1Qkey)
    {
        size_t before = sm.rx.size();
        Packet p;
        UdAddress a;
        a.dlid = dlid;
        a.slid = 1;
        a.dest_qp = 1;
        a.src_qp = 1;
        a.qkey = qkey;
        build_ud(p, a, m);
        sm.wire->transmit(p);
        fab.run_due();
        if (sm.rx.size() != before + 1)
            return std::nullopt;
        auto s = sm.rx.back().mad();
        Mad r{};
        std::copy(s.begin(), s.end(), r.begin());
        return r;
    }
    // Sets LID 7 and walks the port to ACTIVE, as an SM does.
    void bring_up()
    {
        for (PortState s : {PortState::Init, PortState::Armed, PortState::Active}) {
            Mad set{};
            kPiLid.set(test::smp_data(set), 7);
            kPiSmLid.set(test::smp_data(set), 1);
            kPiState.set(test::smp_data(set), uint64_t(s == PortState::Init ? PortState::NoChange : s));
            auto r = dr(mad::kMethodSet, smp::kAttrPortInfo, 0, &set);
            ASSERT_TRUE(r);
            ASSERT_EQ(smp::kDrStatus.get(*r), 0u);
        }
        ASSERT_EQ(vm1().port(1).state, PortState::Active);
    }
};

TEST_F(B2b, LinkTrainsTheStubPortToInit)
{
    EXPECT_EQ(vm1().port(1).state, PortState::Init);
    EXPECT_EQ(vm1().port(1).phys, PhysState::LinkUp);
}

TEST_F(B2b, DirectedRouteNodeInfoAnswersAsAOnePortCa)
{
    auto r = dr(mad::kMethodGet, smp::kAttrNodeInfo, 0);
    ASSERT_TRUE(r);
    EXPECT_EQ(mad::kMethod.get(*r), mad::kMethodGetResp);
    EXPECT_EQ(smp::kDirection.get(*r), 1u);
    EXPECT_EQ(smp::kDrStatus.get(*r), 0u);
    // C14-9:3 then the responder's step back: hop pointer = hop count.
    EXPECT_EQ(smp::kHopPointer.get(*r), 1u);
    EXPECT_EQ((*r)[smp::kReturnPathOffset + 1], 1u);
    auto d = test::smp_data(*r);
    EXPECT_EQ(kNiNodeType.get(d), 1u);  // CA
    EXPECT_EQ(kNiNumPorts.get(d), 1u);
    EXPECT_EQ(kNiLocalPort.get(d), 1u);
    EXPECT_EQ(kNiNodeGuid.get(d), vm1().node().node_guid);
    EXPECT_EQ(kNiPortGuid.get(d), vm1().node().node_guid + 1);
    EXPECT_EQ(mad::kTid.get(*r), 0x1234u);
}

TEST_F(B2b, NodeDescriptionIsTheTopologys)
{
    auto r = dr(mad::kMethodGet, smp::kAttrNodeDesc, 0);
    ASSERT_TRUE(r);
    auto d = test::smp_data(*r);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data())), fab.topology().nodes[*fab.topology().find("vm1")].description);
    EXPECT_EQ(vm1().node().description, "vm1");
}

TEST_F(B2b, OtherSmaAttributesAnswer)
{
    for (auto [attr, mod] : {std::pair<uint16_t, uint32_t>{smp::kAttrGuidInfo, 0},
                             {smp::kAttrPkeyTable, 0},
                             {smp::kAttrSlToVl, 0},
                             {smp::kAttrVlArb, 1u << 16}}) {
        auto r = dr(mad::kMethodGet, attr, mod);
        ASSERT_TRUE(r) << attr;
        EXPECT_EQ(smp::kDrStatus.get(*r), 0u) << attr;
    }
    auto g = dr(mad::kMethodGet, smp::kAttrGuidInfo, 0);
    EXPECT_EQ(get64(test::smp_data(*g), 0), vm1().node().node_guid + 1);
    auto p = dr(mad::kMethodGet, smp::kAttrPkeyTable, 0);
    EXPECT_EQ(get16(test::smp_data(*p), 0), 0xffffu);
    auto bad = dr(mad::kMethodGet, smp::kAttrLft, 0);  // a switch attribute
    ASSERT_TRUE(bad);
    EXPECT_EQ(smp::kDrStatus.get(*bad), mad::kStatusUnsupMethodAttr);
}

TEST_F(B2b, SetPortInfoAssignsTheLidAndWalksTheStateToActive)
{
    bring_up();
    auto r = dr(mad::kMethodGet, smp::kAttrPortInfo, 0);
    ASSERT_TRUE(r);
    EXPECT_EQ(kPiLid.get(test::smp_data(*r)), 7u);
    EXPECT_EQ(kPiState.get(test::smp_data(*r)), uint64_t(PortState::Active));
    // Now LID routed SMPs to LID 7 are answered, back to our LID.
    Mad m = test::lid_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0);
    auto l = exchange_smp(m, 7, 1);
    ASSERT_TRUE(l);
    EXPECT_EQ(kNiNodeType.get(test::smp_data(*l)), 1u);
    EXPECT_EQ(sm.rx.back().view.dlid, 1u);
    EXPECT_EQ(sm.rx.back().view.slid, 7u);
    // ... and not to another LID.
    EXPECT_FALSE(exchange_smp(m, 8, 1));
}

TEST_F(B2b, PmaAnswersClassPortInfoAndPortCounters)
{
    bring_up();
    Mad m = test::smp_header(mad::kClassPerf, mad::kMethodGet, pma::kAttrClassPortInfo, 0, 77);
    auto c = gmp(m, 7);
    ASSERT_TRUE(c);
    EXPECT_EQ(mad::kStatus.get(*c), 0u);
    EXPECT_EQ((*c)[pma::kDataOffset], 1u);  // BaseVersion
    EXPECT_EQ(sm.rx.back().view.vl, 0u);
    EXPECT_EQ(sm.rx.back().view.dest_qp, 1u);
    Mad pc = test::smp_header(mad::kClassPerf, mad::kMethodGet, pma::kAttrPortCounters, 0, 78);
    pc[pma::kDataOffset + 1] = 1;  // PortSelect
    auto r = gmp(pc, 7);
    ASSERT_TRUE(r);
    EXPECT_EQ(mad::kStatus.get(*r), 0u);
    EXPECT_EQ((*r)[pma::kDataOffset + 1], 1u);
    // PortRcvPkts (offset 36 of the data): every MAD so far arrived.
    EXPECT_GE(get32(std::span<const uint8_t>(*r).subspan(pma::kDataOffset), 36), 4u);
    // A GMP with the wrong Q_Key gets nothing (IBA 13.5.3).
    EXPECT_FALSE(gmp(pc, 7, 0x1234));
}

TEST_F(B2b, HostileSmpsAreDroppedWithoutAnAnswer)
{
    uint64_t dropped = vm1().counters().dropped;
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1});
    smp::kHopPointer.set(m, 0);  // C14-9:1 on the wire
    EXPECT_FALSE(exchange_smp(m));
    smp::kHopPointer.set(m, 5);
    EXPECT_FALSE(exchange_smp(m));
    smp::kHopCount.set(m, 64);  // C14-6
    smp::kHopPointer.set(m, 64);
    EXPECT_FALSE(exchange_smp(m));
    Mad r = test::dr_smp(mad::kMethodGetResp, smp::kAttrNodeInfo, 0, {1});
    EXPECT_FALSE(exchange_smp(r));  // a response to nobody
    Mad lid = test::lid_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0);
    EXPECT_FALSE(exchange_smp(lid));  // LID routed while the port has no LID
    // A short packet and data on VL0 to QP0.
    Packet p;
    UdAddress a;
    a.dlid = kPermissiveLid;
    a.vl = kSmpVl;
    uint8_t shortp[10] = {};
    build_ud(p, a, shortp);
    sm.wire->transmit(p);
    sm.send_data(kPermissiveLid, 1, m, 0);
    fab.run_due();
    EXPECT_EQ(sm.rx.size(), 0u);
    EXPECT_EQ(vm1().counters().dropped, dropped + 7);
}

TEST_F(B2b, MkeyProtectsTheStubLikeTheHca)
{
    Mad set{};
    kPiState.set(test::smp_data(set), 0);
    put64(test::smp_data(set), 0, 0xabcdull);   // M_Key
    test::smp_data(set)[34] = 2 << 6;           // MKeyProtectBits 2, lease period 0
    ASSERT_TRUE(dr(mad::kMethodSet, smp::kAttrPortInfo, 0, &set));
    EXPECT_FALSE(dr(mad::kMethodGet, smp::kAttrPortInfo, 0));  // no key: dropped
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrPortInfo, 0, {1});
    smp::kMkey.set(m, 0xabcd);
    EXPECT_TRUE(exchange_smp(m));
}

TEST(StubFarm, EveryHcaOfAStarBecomesAStubAndAnswersThroughTheSwitch)
{
    VirtualClock clock;
    Fabric fab{clock};
    std::string err;
    ASSERT_TRUE(fab.build_spec("star:3", &err)) << err;
    TestPort sm;
    HcaPort* hp = fab.hca_port("vm0", 0, 1);
    sm.wire = &hp->attach(&sm);
    StubFarm farm(fab);
    EXPECT_EQ(farm.attach_all(), 2u);
    EXPECT_EQ(farm.attach_all(), 0u);
    // vm2 is behind switch port 3: path {1, 3}.
    Mad m = test::dr_smp(mad::kMethodGet, smp::kAttrNodeDesc, 0, {1, 3});
    sm.send_smp(m);
    fab.run_due();
    ASSERT_EQ(sm.rx.size(), 1u);
    auto d = test::smp_data(sm.rx[0].mad());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data())), "vm2");
    // A guest taking vm2's port over, and giving it back.
    TestPort guest;
    HcaPort* g = fab.hca_port("vm2", 0, 1);
    guest.wire = &g->attach(&guest);
    EXPECT_EQ(farm.find("vm2")->port(1).state, PortState::Down);
    g->detach();
    EXPECT_TRUE(farm.release(g));
    EXPECT_EQ(farm.find("vm2")->port(1).state, PortState::Init);
}

}  // namespace
}  // namespace ibemu::stub
