// SPDX-License-Identifier: GPL-2.0
//
// MAD_IFC: the firmware's SMA and PMA, as ib_mthca and ib_core query them.
#include "hca/sma.h"

#include <gtest/gtest.h>

#include "hca/test_support.h"

namespace ibemu::mthca {
namespace {

using test::DriverSim;

class MadIfc : public ::testing::Test {
protected:
    void SetUp() override
    {
        d.bring_up(true);
        ASSERT_FALSE(HasFatalFailure());
    }

    // ib_init_query_mad() + attribute, sent with MAD_IFC (ignore M/B_Key).
    Status query(uint16_t attr, uint32_t mod, unsigned port = 1, uint8_t mclass = mad::kClassSubnLid,
                 uint8_t method = mad::kMethodGet, uint8_t base_version = 1)
    {
        std::memset(d.in().data(), 0, 256);
        d.in()[0] = base_version;
        d.in()[1] = mclass;
        d.in()[2] = 1;
        d.in()[3] = method;
        put64(d.in(), 8, 0x1122334455667788ull);
        put16(d.in(), 16, attr);
        put32(d.in(), 20, mod);
        std::memset(d.out().data(), 0xee, 256);
        return d.cmd(op::kMadIfc, d.in_box(), d.out_box(), port, 0x3);
    }
    uint16_t mad_status() { return get16(d.out(), 4); }
    std::span<uint8_t> data() { return d.out().subspan(64, 64); }

    DriverSim d;
};

TEST_F(MadIfc, NodeInfo)
{
    ASSERT_EQ(query(mad::kAttrNodeInfo, 0), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(d.out()[3], mad::kMethodGetResp);
    EXPECT_EQ(get64(d.out(), 8), 0x1122334455667788ull);  // TID echoed
    auto n = data();
    EXPECT_EQ(n[0], 1);  // base version
    EXPECT_EQ(n[1], 1);  // class version
    EXPECT_EQ(n[2], 1);  // channel adapter
    EXPECT_EQ(n[3], 1);  // ports
    EXPECT_EQ(get64(n, 4), 0x0002c90300001230ull);   // system image GUID
    EXPECT_EQ(get64(n, 12), 0x0002c90300001230ull);  // node GUID
    EXPECT_EQ(get64(n, 20), 0x0002c90300001231ull);  // port GUID
    EXPECT_EQ(get16(n, 28), 64);                     // partition cap
    EXPECT_EQ(get16(n, 30), 0x6282);                 // vendor_part_id
    EXPECT_EQ(get32(n, 32), 0xa0u);                  // hw_ver
    EXPECT_EQ(n[36], 1);                             // local port
    EXPECT_EQ(get32(n, 36) & 0xffffff, 0x0002c9u);   // vendor id
}

// Review 3.2: SpeedActive/WidthActive came from the fabric's link
// description even where the MT25208 cannot run them (DDR, 12x). A port
// reports active within enabled within supported: SDR only, 1x|4x.
TEST_F(MadIfc, PortInfoSpeedAndWidthStayWithinWhatThePortSupports)
{
    struct Case {
        uint8_t width, speed, want_width;
    };
    for (Case k : {Case{8, 2, 2}, Case{4, 4, 2}, Case{2, 1, 2}, Case{1, 2, 1}}) {
        d.core().port_link_changed(1, true, LinkParams{k.width, k.speed, 2048});
        ASSERT_EQ(query(mad::kAttrPortInfo, 1), Status::Ok);
        auto p = data();
        unsigned w_en = p[29], w_sup = p[30], w_act = p[31];
        unsigned s_sup = p[32] >> 4, s_act = p[35] >> 4, s_en = p[35] & 0xf;
        EXPECT_EQ(w_sup, 3u);  // 1x | 4x
        EXPECT_EQ(w_en & ~w_sup, 0u);
        EXPECT_EQ(w_act, k.want_width) << "link width " << unsigned(k.width);
        EXPECT_TRUE(w_act & w_en) << "active width " << w_act << " not enabled (" << w_en << ")";
        EXPECT_EQ(s_sup, 1u);  // 2.5 Gb/s only
        EXPECT_EQ(s_act, 1u) << "link speed " << unsigned(k.speed);
        EXPECT_TRUE(s_act & s_en);
        EXPECT_FALSE(get32(p, 20) & (1u << 5)) << "IsAutomaticMigrationSupported without APM";
    }
}

TEST_F(MadIfc, NodeDescription)
{
    ASSERT_EQ(query(mad::kAttrNodeDesc, 0), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_STREQ(reinterpret_cast<const char*>(data().data()), "ibemu mthca-test MT25208 HCA");
}

TEST_F(MadIfc, PortInfo)
{
    ASSERT_EQ(query(mad::kAttrPortInfo, 1), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    auto p = data();
    // The offsets mthca_query_port() reads.
    EXPECT_EQ(get64(p, 8), 0xfe80000000000000ull);  // GID prefix
    EXPECT_EQ(get16(p, 16), 0);                       // LID
    EXPECT_EQ(get16(p, 18), 0);                       // SM LID
    EXPECT_EQ(get32(p, 20), kDefaultPortCapMask);
    EXPECT_EQ(p[28], 1);              // local port
    EXPECT_EQ(p[31] & 0xf, 2);        // active width 4x
    EXPECT_EQ(p[32] & 0xf, 1);        // DOWN
    EXPECT_EQ(p[33] >> 4, 3);         // DISABLED: port not opened yet
    EXPECT_EQ(p[34] & 7, 0);          // LMC
    EXPECT_EQ(p[35] >> 4, 1);         // 2.5 Gb/s
    EXPECT_EQ(p[36] >> 4, 4);         // active MTU 2048
    EXPECT_EQ(p[37] >> 4, 4);         // VL0-7
    EXPECT_EQ(p[41] & 0xf, 4);        // MTU cap 2048
    EXPECT_EQ(get16(p, 46), 0);       // P_Key violations
    EXPECT_EQ(p[50], 32);             // GUID cap
    // Port 0 as modifier means "this port"; port 2 does not exist.
    ASSERT_EQ(query(mad::kAttrPortInfo, 0), Status::Ok);
    EXPECT_EQ(data()[28], 1);
    ASSERT_EQ(query(mad::kAttrPortInfo, 2), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusInvalidField);
    // MAD_IFC for a port the HCA does not have.
    EXPECT_EQ(query(mad::kAttrPortInfo, 1, 2), Status::BadParam);
    // Link up through the fabric seam: PHY LinkUp, logical INIT, once
    // the port is open.
    d.core().set_port_link(1, true);
    ASSERT_EQ(query(mad::kAttrPortInfo, 1), Status::Ok);
    EXPECT_EQ(data()[33] >> 4, 3);
    std::memset(d.in().data(), 0, 0x38);
    put32(d.in(), 0, (4u << 12) | (3u << 8) | (4u << 4));
    ASSERT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 1), Status::Ok);
    ASSERT_EQ(query(mad::kAttrPortInfo, 1), Status::Ok);
    EXPECT_EQ(data()[32] & 0xf, 2);
    EXPECT_EQ(data()[33] >> 4, 5);
}

TEST_F(MadIfc, PortActiveRaisesPortChangeEvent)
{
    std::memset(d.in().data(), 0, 0x38);
    put32(d.in(), 0, (4u << 12) | (3u << 8) | (4u << 4));
    ASSERT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 1), Status::Ok);
    d.core().set_port_link(1, true);
    size_t before = d.eqs_[1].seen.size();
    d.core().set_port_state(1, PortState::Active);
    d.interrupt();
    ASSERT_EQ(d.eqs_[1].seen.size(), before + 1);
    const auto& e = d.eqs_[1].seen.back();
    EXPECT_EQ(e[1], ev::kPortChange);
    EXPECT_EQ(e[3], ev::kPortActive);
    EXPECT_EQ((get32(e, 4 + 8) >> 28) & 3, 1u);
}

TEST_F(MadIfc, PkeyTable)
{
    ASSERT_EQ(query(mad::kAttrPkeyTable, 0), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(get16(data(), 0), 0xffff);
    EXPECT_EQ(get16(data(), 2), 0);
    ASSERT_EQ(query(mad::kAttrPkeyTable, 1), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(get16(data(), 0), 0);
    ASSERT_EQ(query(mad::kAttrPkeyTable, 2), Status::Ok);  // beyond 64 entries
    EXPECT_EQ(mad_status(), mad::kStatusInvalidField);
}

TEST_F(MadIfc, GuidInfo)
{
    ASSERT_EQ(query(mad::kAttrGuidInfo, 0), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(get64(data(), 0), 0x0002c90300001231ull);
    EXPECT_EQ(get64(data(), 8), 0u);
    ASSERT_EQ(query(mad::kAttrGuidInfo, 3), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    ASSERT_EQ(query(mad::kAttrGuidInfo, 4), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusInvalidField);
}

TEST_F(MadIfc, BadMads)
{
    // Unsupported attribute: answered with status 0x0c.
    ASSERT_EQ(query(mad::kAttrSmInfo, 0), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusUnsupMethodAttr);
    // Unsupported method.
    ASSERT_EQ(query(mad::kAttrNodeInfo, 0, 1, mad::kClassSubnLid, 0x05), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusUnsupMethod);
    // Bad base version.
    ASSERT_EQ(query(mad::kAttrNodeInfo, 0, 1, mad::kClassSubnLid, mad::kMethodGet, 2), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusBadVersion);
    // A class the firmware has no agent for: BAD_PKT (dropped).
    EXPECT_EQ(query(0x10, 0, 1, 0x07), Status::BadPkt);
    // Directed route works like LID routed and keeps the D bit.
    ASSERT_EQ(query(mad::kAttrNodeInfo, 0, 1, mad::kClassSubnDirected), Status::Ok);
    EXPECT_EQ(mad_status() & 0x7fff, 0);
    EXPECT_EQ(data()[2], 1);
}

TEST_F(MadIfc, PerformanceManagement)
{
    std::memset(d.in().data(), 0, 256);
    ASSERT_EQ(query(mad::kAttrClassPortInfo, 0, 1, mad::kClassPerf), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(d.out()[64], 1);
    ASSERT_EQ(query(mad::kAttrPortCounters, 0, 1, mad::kClassPerf), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    ASSERT_EQ(query(0x0099, 0, 1, mad::kClassPerf), Status::Ok);
    EXPECT_EQ(mad_status(), mad::kStatusUnsupMethodAttr);
}

TEST_F(MadIfc, SetPortInfoFromSm)
{
    // SM assigns LID 5 and SM LID 1; the logical state only moves with a link.
    std::memset(d.in().data(), 0, 256);
    query(mad::kAttrPortInfo, 1);  // fetch current
    std::array<uint8_t, 256> cur;
    std::memcpy(cur.data(), d.out().data(), 256);
    std::memcpy(d.in().data(), cur.data(), 256);
    d.in()[3] = mad::kMethodSet;
    put16(d.in(), 64 + 16, 5);
    put16(d.in(), 64 + 18, 1);
    d.in()[64 + 32] = (d.in()[64 + 32] & 0xf0) | 4;  // ACTIVE
    ASSERT_EQ(d.cmd(op::kMadIfc, d.in_box(), d.out_box(), 1, 0x3), Status::Ok);
    // A DOWN port (no link) cannot go ACTIVE: refused, and nothing of the
    // Set is taken.
    EXPECT_EQ(mad_status(), mad::kStatusInvalidField);
    EXPECT_NE(d.core().ports()[0].lid, 5);
    EXPECT_EQ(d.core().ports()[0].state, PortState::Down);
    // The same Set without a state change is taken.
    std::memcpy(d.in().data(), cur.data(), 256);
    d.in()[3] = mad::kMethodSet;
    put16(d.in(), 64 + 16, 5);
    put16(d.in(), 64 + 18, 1);
    d.in()[64 + 32] &= 0xf0;  // NOP
    ASSERT_EQ(d.cmd(op::kMadIfc, d.in_box(), d.out_box(), 1, 0x3), Status::Ok);
    EXPECT_EQ(mad_status(), 0);
    EXPECT_EQ(get16(data(), 16), 5);
    EXPECT_EQ(get16(data(), 18), 1);
    EXPECT_EQ(data()[32] & 0xf, 1);  // still DOWN: no link
}

// Review 3.2: Set(PortInfo) follows the port state machine (IBA 14.2.5.6),
// as the switch SMA does and OpenSM drives it: from INIT only ARMED, from
// ARMED ACTIVE; INIT -> ACTIVE, ACTIVE -> ARMED, a request for INIT and a
// reserved state or PortPhysicalState are refused with InvalidField and
// change nothing.
TEST_F(MadIfc, SetPortInfoWalksInitArmedActiveOnly)
{
    std::memset(d.in().data(), 0, 0x38);
    put32(d.in(), 0, (4u << 12) | (3u << 8) | (4u << 4));
    ASSERT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 1), Status::Ok);
    d.core().set_port_link(1, true);
    ASSERT_EQ(d.core().ports()[0].state, PortState::Init);
    // OpenSM's Set: the current PortInfo, PortPhysicalState NOP and
    // LinkDownDefault POLLING (osm_link_mgr), the new state and LID 9.
    auto set = [&](unsigned state, unsigned phys = 0) {
        query(mad::kAttrPortInfo, 1);
        std::array<uint8_t, 256> cur;
        std::memcpy(cur.data(), d.out().data(), 256);
        std::memcpy(d.in().data(), cur.data(), 256);
        d.in()[3] = mad::kMethodSet;
        put16(d.in(), 64 + 16, 9);
        d.in()[64 + 32] = uint8_t((d.in()[64 + 32] & 0xf0) | state);
        d.in()[64 + 33] = uint8_t(phys << 4 | 2);
        EXPECT_EQ(d.cmd(op::kMadIfc, d.in_box(), d.out_box(), 1, 0x3), Status::Ok);
        return mad_status();
    };
    auto state = [&] { return d.core().ports()[0].state; };
    EXPECT_EQ(set(4), mad::kStatusInvalidField);  // INIT -> ACTIVE
    EXPECT_EQ(state(), PortState::Init);
    EXPECT_NE(d.core().ports()[0].lid, 9);         // nothing taken
    EXPECT_EQ(set(2), mad::kStatusInvalidField);  // INIT cannot be asked for
    EXPECT_EQ(set(6), mad::kStatusInvalidField);  // reserved
    EXPECT_EQ(set(3, 5), mad::kStatusInvalidField);  // PortPhysicalState LinkUp cannot be asked for
    EXPECT_EQ(state(), PortState::Init);
    EXPECT_EQ(set(3), 0);  // ARMED
    EXPECT_EQ(state(), PortState::Armed);
    EXPECT_EQ(d.core().ports()[0].lid, 9);
    EXPECT_EQ(set(3), 0);  // ARMED again: fine
    EXPECT_EQ(set(4), 0);  // ACTIVE
    EXPECT_EQ(state(), PortState::Active);
    EXPECT_EQ(set(4), 0);
    EXPECT_EQ(set(3), mad::kStatusInvalidField);  // ACTIVE -> ARMED
    EXPECT_EQ(state(), PortState::Active);
    EXPECT_EQ(set(0), 0);  // NOP
    EXPECT_EQ(state(), PortState::Active);
}

}  // namespace
}  // namespace ibemu::mthca
