// SPDX-License-Identifier: GPL-2.0
#include "fabric/topology.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "fabric/fabric.h"
#include "fabric/test_support.h"

namespace ibemu::fabric {
namespace {

// Written by hand in the format ibnetdiscover prints: a 24-port switch with
// three 2-port HCAs, each on its port 1.
const char kThreeHcas[] = R"(#
# Topology file: generated on Sat Nov 21 06:00:00 2026
#
# Initiated from node 0002c903000a1b2c port 0002c903000a1b2d

vendid=0x2c9
devid=0xb924
sysimgguid=0x2c90200400cb3
switchguid=0x2c90200400cb0(2c90200400cb0)
Switch	24 "S-0002c90200400cb0"		# "MT47396 Infiniscale-III Mellanox Technologies" base port 0 lid 4 lmc 0
[1]	"H-0002c903000a1b2c"[1](2c903000a1b2d) 		# "vm0 HCA-1" lid 1 4xSDR
[2]	"H-0002c903000a1c3c"[1](2c903000a1c3d) 		# "vm1 HCA-1" lid 2 4xDDR
[3]	"H-0002c903000a1d4c"[1](2c903000a1d4d) 		# "vm2 HCA-1" lid 3 1xSDR

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000a1b2f
caguid=0x2c903000a1b2c
Ca	2 "H-0002c903000a1b2c"		# "vm0 HCA-1"
[1](2c903000a1b2d) 	"S-0002c90200400cb0"[1]		# lid 1 lmc 0 "MT47396 Infiniscale-III Mellanox Technologies" lid 4 4xSDR

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000a1c3f
caguid=0x2c903000a1c3c
Ca	2 "H-0002c903000a1c3c"		# "vm1 HCA-1"
[1](2c903000a1c3d) 	"S-0002c90200400cb0"[2]		# lid 2 lmc 0 "MT47396 Infiniscale-III Mellanox Technologies" lid 4 4xDDR

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000a1d4f
caguid=0x2c903000a1d4c
Ca	2 "H-0002c903000a1d4c"		# "vm2 HCA-1"
[1](2c903000a1d4d) 	"S-0002c90200400cb0"[3]		# lid 3 lmc 0 "MT47396 Infiniscale-III Mellanox Technologies" lid 4 1xSDR
)";

// Two HCAs cabled back to back (what ibnetdiscover prints from vm0).
const char kBackToBack[] = R"(#
# Topology file: generated on Sat Nov 21 06:00:00 2026
#
# Initiated from node 0002c903000a1b2c port 0002c903000a1b2d

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000a1c3f
caguid=0x2c903000a1c3c
Ca	2 "H-0002c903000a1c3c"		# "vm1 mthca0"
[1](2c903000a1c3d) 	"H-0002c903000a1b2c"[1] (2c903000a1b2d) 		# lid 2 lmc 0 "vm0 mthca0" lid 1 4xSDR

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000a1b2f
caguid=0x2c903000a1b2c
Ca	2 "H-0002c903000a1b2c"		# "vm0 mthca0"
[1](2c903000a1b2d) 	"H-0002c903000a1c3c"[1] (2c903000a1c3d) 		# lid 1 lmc 0 "vm1 mthca0" lid 2 4xSDR
)";

TEST(Topology, ParsesThreeHcasOnASwitch)
{
    Topology t;
    std::string err;
    ASSERT_TRUE(parse_topology(kThreeHcas, &t, &err)) << err;
    ASSERT_EQ(t.nodes.size(), 4u);
    const TopoNode& sw = t.nodes[0];
    EXPECT_EQ(sw.kind, TopoNode::Kind::Switch);
    EXPECT_EQ(sw.num_ports, 24u);
    EXPECT_EQ(sw.guid, 0x0002c90200400cb0ull);
    EXPECT_EQ(sw.sys_image_guid, 0x2c90200400cb3ull);
    EXPECT_EQ(sw.device_id, 0xb924u);
    EXPECT_EQ(sw.description, "MT47396 Infiniscale-III Mellanox Technologies");
    EXPECT_EQ(sw.name, "MT47396");
    EXPECT_EQ(t.nodes[1].name, "vm0");
    EXPECT_EQ(t.nodes[1].device_id, 0x6282u);
    EXPECT_EQ(t.nodes[3].guid, 0x0002c903000a1d4cull);
    // Each cable is listed from both ends but counted once.
    ASSERT_EQ(t.links.size(), 3u);
    EXPECT_EQ(t.links[1].a, 0u);
    EXPECT_EQ(t.links[1].a_port, 2u);
    EXPECT_EQ(t.links[1].b, 2u);
    EXPECT_EQ(t.links[1].width, 2);
    EXPECT_EQ(t.links[1].speed, 2);  // DDR
    EXPECT_EQ(t.links[2].width, 1);  // 1x
    EXPECT_EQ(t.find("vm2"), 3u);
    EXPECT_EQ(t.find("0x0002c903000a1c3c"), 2u);
    EXPECT_EQ(t.find("S-0002c90200400cb0"), 0u);
    EXPECT_FALSE(t.find("vm9"));
}

TEST(Topology, ParsesBackToBack)
{
    Topology t;
    std::string err;
    ASSERT_TRUE(parse_topology(kBackToBack, &t, &err)) << err;
    ASSERT_EQ(t.nodes.size(), 2u);
    ASSERT_EQ(t.links.size(), 1u);
    EXPECT_EQ(t.nodes[0].name, "vm1");
    EXPECT_EQ(t.nodes[1].name, "vm0");
}

TEST(Topology, BuildsAndCarriesTrafficFromAFile)
{
    VirtualClock clock;
    Fabric fab(clock);
    Topology t;
    std::string err;
    ASSERT_TRUE(parse_topology(kBackToBack, &t, &err)) << err;
    ASSERT_TRUE(fab.build(t, &err)) << err;
    // vm0 by name, vm1 by GUID only.
    HcaPort* p0 = fab.hca_port("vm0", 0, 1);
    HcaPort* p1 = fab.hca_port("nosuchname", 0x0002c903000a1c3cull, 1);
    ASSERT_TRUE(p0 && p1);
    EXPECT_EQ(fab.hca_port("vm0", 0, 2), nullptr);  // port 2 has no cable
    test::TestPort a, b;
    a.wire = &p0->attach(&a);
    EXPECT_FALSE(a.up);
    b.wire = &p1->attach(&b);
    EXPECT_TRUE(a.up && b.up);
    uint8_t payload[4] = {};
    a.send_data(2, 1, payload);
    EXPECT_EQ(b.rx.size(), 1u);
    p1->detach();
    EXPECT_FALSE(a.up);
}

TEST(Topology, SwitchFromAFileAnswersAsDescribed)
{
    VirtualClock clock;
    Fabric fab(clock);
    Topology t;
    std::string err;
    ASSERT_TRUE(parse_topology(kThreeHcas, &t, &err)) << err;
    ASSERT_TRUE(fab.build(t, &err)) << err;
    Switch* sw = fab.find_switch("S-0002c90200400cb0");
    ASSERT_NE(sw, nullptr);
    EXPECT_EQ(sw->num_ports(), 24u);
    test::TestPort sm;
    sm.wire = &fab.hca_port("vm0", 0, 1)->attach(&sm);
    sm.send_smp(test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1}));
    fab.run_due();
    ASSERT_EQ(sm.rx.size(), 1u);
    auto d = test::smp_data(sm.rx[0].mad());
    EXPECT_EQ(d[3], 24);
    EXPECT_EQ(get64(d, 4), 0x2c90200400cb3ull);
    EXPECT_EQ(get64(d, 12), 0x0002c90200400cb0ull);
    EXPECT_EQ(get16(d, 30), 0xb924);
    EXPECT_EQ(sm.params.speed, 1);
}

struct Bad {
    const char* text;
    const char* error;  // expected substring
};

TEST(Topology, MalformedFilesGiveClearErrors)
{
    const Bad cases[] = {
        {"", "no nodes"},
        {"# only a comment\n", "no nodes"},
        {"[1] \"H-0000000000000001\"[1]\n", "line 1: port line outside a node"},
        {"Switch 8 \"S-0000000000000001\"\n[9] \"H-0000000000000002\"[1]\n", "line 2: port 9 outside 1..8"},
        {"Switch 8 \"S-0000000000000001\"\n[1] \"H-0000000000000002\"[1]\n", "line 2: unknown peer"},
        {"Switch 8 \"S-zz\"\n", "line 1: bad node id"},
        {"Switch 8 \"H-0000000000000001\"\n", "line 1: bad node id"},
        {"Switch x \"S-0000000000000001\"\n", "line 1: bad port count"},
        {"Switch 0 \"S-0000000000000001\"\n", "line 1: bad port count"},
        {"Switch 300 \"S-0000000000000001\"\n", "line 1: bad port count"},
        {"Switch 8 \"S-0000000000000001\n", "line 1: expected \"S-<guid>\""},
        {"Router 2 \"R-0000000000000001\"\n", "line 1: expected Switch, Ca"},
        {"Rt 2 \"R-0000000000000001\"\n", "routers are not supported"},
        {"vendid=0xzz\n", "line 1: bad value for vendid"},
        {"color=0x1\n", "line 1: unknown attribute"},
        {"Switch 8 \"S-0000000000000001\"\n[1 \"H-0000000000000002\"[1]\n", "line 2: bad port number"},
        {"Switch 8 \"S-0000000000000001\"\n[1] H-0000000000000002[1]\n", "line 2: expected \"peer-id\"[port]"},
        {"Switch 8 \"S-0000000000000001\"\n[1] \"S-0000000000000001\"\n", "line 2: expected [port]"},
        {"Switch 8 \"S-0000000000000001\"\n[1] \"S-0000000000000001\"[1]\n", "port cabled to itself"},
        {"Switch 8 \"S-0000000000000001\"\n[1] \"S-0000000000000001\"[2] junk\n", "unexpected text after the peer"},
        {"Switch 8 \"S-0000000000000001\"\nSwitch 8 \"S-0000000000000001\"\n", "line 2: node S-0000000000000001 listed twice"},
        {"Switch 8 \"S-0000000000000001\"\n[1] \"S-0000000000000001\"[2]\n[1] \"S-0000000000000001\"[3]\n",
         "has two cables"},
        {"Ca 1 \"H-0000000000000001\"\n[1] \"H-0000000000000002\"[5]\n\nCa 1 \"H-0000000000000002\"\n",
         "line 2: peer port 5 outside 1..1"},
    };
    for (const Bad& b : cases) {
        Topology t;
        std::string err;
        EXPECT_FALSE(parse_topology(b.text, &t, &err)) << b.text;
        EXPECT_NE(err.find(b.error), std::string::npos) << "text: " << b.text << "\nerror: " << err;
    }
    std::string err;
    Topology t;
    EXPECT_FALSE(load_topology_file("/nonexistent/topo.txt", &t, &err));
    EXPECT_NE(err.find("cannot open"), std::string::npos);
}

TEST(Topology, MutatedInputNeverCrashes)
{
    std::mt19937 rng(7);
    std::string base = kThreeHcas;
    const char alphabet[] = "[]()\"#=x0123456789abcdefSHCa- \t\n\xff";
    unsigned ok = 0;
    for (int i = 0; i < 3000; ++i) {
        std::string s = base;
        int edits = 1 + int(rng() % 8);
        for (int e = 0; e < edits; ++e) {
            size_t at = rng() % s.size();
            switch (rng() % 3) {
            case 0: s[at] = alphabet[rng() % (sizeof alphabet - 1)]; break;
            case 1: s.erase(at, 1 + rng() % 20); break;
            default: s.insert(at, 1, alphabet[rng() % (sizeof alphabet - 1)]); break;
            }
            if (s.empty())
                s.push_back('x');
        }
        Topology t;
        std::string err;
        if (parse_topology(s, &t, &err)) {
            ++ok;
            VirtualClock clock;
            Fabric fab(clock);
            EXPECT_TRUE(fab.build(t, &err)) << err;
        } else {
            EXPECT_FALSE(err.empty());
        }
    }
    EXPECT_GT(ok, 0u);
}

TEST(Topology, BuildFromOptionTakesShorthandOrFile)
{
    std::string path = "/tmp/ibemu-fabric-topo-" + std::to_string(::getpid()) + ".txt";
    {
        std::ofstream f(path);
        f << kThreeHcas;
    }
    VirtualClock c1, c2, c3;
    Fabric f1(c1), f2(c2), f3(c3);
    std::string err;
    EXPECT_TRUE(f1.build_from("star:2", &err)) << err;
    EXPECT_EQ(f1.hca_ports().size(), 2u);
    EXPECT_TRUE(f2.build_from(path, &err)) << err;
    EXPECT_EQ(f2.hca_ports().size(), 3u);
    EXPECT_FALSE(f2.build_from("b2b", &err));  // once only
    EXPECT_FALSE(f3.build_from("/nonexistent", &err));
    EXPECT_NE(err.find("cannot open"), std::string::npos);
    std::remove(path.c_str());
}

TEST(Topology, BuiltinShorthands)
{
    Topology t;
    std::string err;
    ASSERT_TRUE(builtin_topology("b2b", &t, &err)) << err;
    EXPECT_EQ(t.nodes.size(), 2u);
    EXPECT_EQ(t.links.size(), 1u);
    ASSERT_TRUE(builtin_topology("b2b:alpha,beta", &t, &err)) << err;
    EXPECT_EQ(t.nodes[1].name, "beta");
    ASSERT_TRUE(builtin_topology("star:3", &t, &err)) << err;
    EXPECT_EQ(t.nodes.size(), 4u);
    EXPECT_EQ(t.nodes[0].num_ports, 8u);
    EXPECT_EQ(t.nodes[3].name, "vm2");
    ASSERT_TRUE(builtin_topology("star:a,b", &t, &err)) << err;
    EXPECT_EQ(t.links.size(), 2u);
    ASSERT_TRUE(builtin_topology("chain:3", &t, &err)) << err;
    EXPECT_EQ(t.links.size(), 4u);
    for (const char* bad : {"", "ring:3", "star:0", "star:", "b2b:a", "b2b:a,a", "star:a b", "star:999", "chain:1",
                            // an HCA named like the shorthand's switch (found by make check-fuzz)
                            "star:vm0,sw0", "chain:a,sw1,b"}) {
        EXPECT_FALSE(builtin_topology(bad, &t, &err)) << bad;
        EXPECT_FALSE(err.empty());
    }
}

}  // namespace
}  // namespace ibemu::fabric

namespace ibemu::fabric {
namespace {

// ibsim's own dialect, as its net-examples write it: free-form ids, "Hca",
// w= widths, a "do" command line, a GUID given by caguid=.
constexpr const char kIbsimNet[] = R"(# Net configuration file example
#
# The first port in the file is used as the SM port.

Switch	8 "Switch1"
[1]	"Hca1"[1]
[2]	"Hca2"[2]	w=1
[3]	"Switch2"[3]
[4]	"Switch2"[4]	w=12 s=4

Switch 8 "Switch2"
[3]	"Switch1"[3]
[4]	"Switch1"[4]

do echo hello
caguid=0x0002c90300001234
Hca	2 "Hca1"
[1]	"Switch1"[1]

Hca	2 "Hca2"
[2]	"Switch1"[2]
)";

TEST(IbsimNet, ParsesTheNetExampleDialect)
{
    Topology t;
    std::string err;
    ASSERT_TRUE(parse_ibsim_net(kIbsimNet, &t, &err)) << err;
    ASSERT_EQ(t.nodes.size(), 4u);
    ASSERT_EQ(t.links.size(), 4u);
    auto h1 = t.find("Hca1");
    ASSERT_TRUE(h1);
    EXPECT_EQ(t.nodes[*h1].kind, TopoNode::Kind::Ca);
    EXPECT_EQ(t.nodes[*h1].guid, 0x0002c90300001234ull);
    EXPECT_EQ(t.nodes[*h1].num_ports, 2u);
    auto s2 = t.find("Switch2");
    ASSERT_TRUE(s2);
    EXPECT_NE(t.nodes[*s2].guid, 0u);
    EXPECT_EQ(t.nodes[*s2].description, "Switch2");
    // Derived GUIDs are stable.
    Topology again;
    ASSERT_TRUE(parse_ibsim_net(kIbsimNet, &again, &err));
    EXPECT_EQ(again.nodes[*s2].guid, t.nodes[*s2].guid);
    bool narrow = false, wide = false;
    for (const TopoLink& l : t.links) {
        narrow |= l.width == 1 && l.speed == 1;
        wide |= l.width == 8 && l.speed == 4;
    }
    EXPECT_TRUE(narrow);
    EXPECT_TRUE(wide);
    // ibnetdiscover's own parser refuses the free-form ids.
    EXPECT_FALSE(parse_topology(kIbsimNet, &t, &err));
}

TEST(IbsimNet, LoadsEitherFormatFromAFile)
{
    std::string path = ::testing::TempDir() + "/ibsim.net";
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(kIbsimNet, f);
    fclose(f);
    Topology t;
    std::string err;
    ASSERT_TRUE(load_topology_file(path, &t, &err)) << err;
    EXPECT_EQ(t.nodes.size(), 4u);
    VirtualClock clock;
    Fabric fab(clock);
    ASSERT_TRUE(fab.build_from(path, &err)) << err;
    EXPECT_NE(fab.hca_port("Hca2", 0, 2), nullptr);
    EXPECT_EQ(fab.hca_port("Hca2", 0, 1), nullptr);  // not cabled
}

TEST(IbsimNet, RefusesWhatItCannotDo)
{
    struct NetBad {
        const char* text;
        const char* error;
    } bad[] = {
        {"include other.net\n", "include is not supported"},
        {"Switch 8 \"a\"\n[1] \"b\"[1] w=3\nCa 1 \"b\"\n", "bad width"},
        {"Switch 8 \"a\"\n[1] \"b\"[1] s=9\nCa 1 \"b\"\n", "bad speed"},
        {"Switch 8 \"a\"\n[1] \"b\"[1] w=\nCa 1 \"b\"\n", "bad w="},
        {"caguid=0x1\nCa 1 \"a\"\n\ncaguid=0x1\nCa 1 \"b\"\n", "used twice"},
        {"Switch 8 \"\"\n", "bad node id"},
        {"Hca 1 \"a\"\n[1] \"zz\"[1]\n", "unknown peer"},
    };
    for (const NetBad& b : bad) {
        Topology t;
        std::string err;
        EXPECT_FALSE(parse_ibsim_net(b.text, &t, &err)) << b.text;
        EXPECT_NE(err.find(b.error), std::string::npos) << b.text << " -> " << err;
    }
}

TEST(IbsimNet, MutatedInputNeverCrashes)
{
    // Deterministic byte flips, truncations and splices of both dialects.
    std::string seeds[] = {kIbsimNet, format_ibnetdiscover([] {
                               Topology t;
                               std::string e;
                               fattree_topology(20, 8, &t, &e);
                               return t;
                           }())};
    uint32_t x = 12345;
    auto rnd = [&] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return x;
    };
    const char alphabet[] = "[]\"()#=0123456789xwsSHCa \t\n-";
    for (const std::string& seed : seeds) {
        for (int i = 0; i < 3000; ++i) {
            std::string s = seed;
            unsigned edits = 1 + rnd() % 6;
            for (unsigned e = 0; e < edits && !s.empty(); ++e) {
                size_t at = rnd() % s.size();
                switch (rnd() % 4) {
                case 0: s[at] = alphabet[rnd() % (sizeof alphabet - 1)]; break;
                case 1: s.erase(at, rnd() % 40); break;
                case 2: s.insert(at, s.substr(rnd() % s.size(), rnd() % 60)); break;
                case 3: s.resize(at); break;
                }
            }
            Topology t;
            std::string err;
            if (!parse_ibsim_net(s, &t, &err)) {
                EXPECT_FALSE(err.empty());
            }
            if (!parse_topology(s, &t, &err)) {
                EXPECT_FALSE(err.empty());
            }
        }
    }
}

TEST(FatTree, HasTheShapeAsked)
{
    Topology t;
    std::string err;
    ASSERT_TRUE(fattree_topology(100, 16, &t, &err)) << err;
    unsigned cas = 0, switches = 0;
    std::map<unsigned, unsigned> degree;
    for (const TopoLink& l : t.links) {
        ++degree[l.a];
        ++degree[l.b];
    }
    std::set<uint64_t> guids;
    for (unsigned i = 0; i < t.nodes.size(); ++i) {
        const TopoNode& n = t.nodes[i];
        EXPECT_TRUE(guids.insert(n.guid).second) << n.id;
        EXPECT_EQ(t.find(n.name), i) << n.name;
        if (n.kind == TopoNode::Kind::Ca) {
            ++cas;
            EXPECT_EQ(degree[i], 1u);
        } else {
            ++switches;
            EXPECT_EQ(n.num_ports, 16u);
            if (n.name.rfind("spine", 0) == 0) {
                EXPECT_EQ(degree[i], 13u) << n.name;  // one cable per leaf
            }
        }
    }
    EXPECT_EQ(cas, 100u);
    EXPECT_EQ(switches, 13u + 8u);  // ceil(100/8) leaves, 8 spines
    // Every leaf reaches every spine once; leaf 12 holds ca96..ca99.
    auto l12 = *t.find("leaf12");
    EXPECT_EQ(degree[l12], 8u + 4u);
    // The default radix for 1000 CAs is the smallest that fits: 46
    // (46^2/2 = 1058), 23 spines, 44 leaves.
    ASSERT_TRUE(fattree_topology(1000, 0, &t, &err)) << err;
    EXPECT_EQ(t.nodes.size(), 1000u + 23u + 44u);
    EXPECT_EQ(t.nodes[0].num_ports, 46u);
    EXPECT_FALSE(fattree_topology(1000, 8, &t, &err));
    EXPECT_FALSE(fattree_topology(0, 0, &t, &err));
    EXPECT_FALSE(fattree_topology(4097, 0, &t, &err));
    EXPECT_FALSE(builtin_topology("fattree:99999999999", &t, &err));
    EXPECT_FALSE(builtin_topology("fattree:10,x", &t, &err));
    EXPECT_FALSE(fattree_topology(10, 7, &t, &err));
}

TEST(FatTree, RoundTripsThroughIbnetdiscoverTextAndBuilds)
{
    Topology t, back;
    std::string err;
    ASSERT_TRUE(fattree_topology(40, 0, &t, &err)) << err;
    std::string text = format_ibnetdiscover(t);
    ASSERT_TRUE(parse_topology(text, &back, &err)) << err;
    ASSERT_EQ(back.nodes.size(), t.nodes.size());
    ASSERT_EQ(back.links.size(), t.links.size());
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        EXPECT_EQ(back.nodes[i].guid, t.nodes[i].guid);
        EXPECT_EQ(back.nodes[i].name, t.nodes[i].name);
        EXPECT_EQ(back.nodes[i].num_ports, t.nodes[i].num_ports);
    }
    VirtualClock clock;
    FabricOptions small;
    small.link.slots = 4;  // 88 links: keep the eager per-link buffers small
    Fabric fab(clock, small);
    ASSERT_TRUE(fab.build_from("fattree:40", &err)) << err;
    EXPECT_EQ(fab.hca_ports().size(), 40u);
    EXPECT_NE(fab.find_switch("spine0"), nullptr);
    EXPECT_NE(fab.hca_port("ca39", 0, 1), nullptr);
}

}  // namespace
}  // namespace ibemu::fabric
