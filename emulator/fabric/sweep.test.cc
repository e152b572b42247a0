// SPDX-License-Identifier: GPL-2.0
//
// End to end: a small subnet manager in the test discovers a fabric by
// directed route, assigns LIDs, programs the LFTs by shortest paths, brings
// every port to ACTIVE, and then every HCA reaches every other by LID. The
// HCAs here are test ports that do not answer SMPs, so they are found as
// the ends of switch ports that do not answer.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "fabric/fabric.h"
#include "fabric/test_support.h"

namespace ibemu::fabric {
namespace {

using test::Mad;
using test::TestPort;

using namespace test::layout;

struct MiniSm {
    Fabric& fab;
    TestPort& port;

    struct Sw {
        std::vector<uint8_t> path;
        unsigned nports = 0;
        uint16_t lid = 0;
        std::map<unsigned, std::pair<uint64_t, unsigned>> peer_sw;  // port -> (switch guid, its port)
        std::map<unsigned, uint16_t> ca_lid;                          // port -> CA LID
        std::vector<unsigned> live;                                   // ports with a link
    };
    std::map<uint64_t, Sw> sws;
    uint16_t next_ca_lid = 1;
    uint16_t sm_lid = 0;

    std::optional<Mad> get(uint16_t attr, uint32_t mod, const std::vector<uint8_t>& path, const Mad* set = nullptr)
    {
        Mad m = test::dr_smp(set ? mad::kMethodSet : mad::kMethodGet, attr, mod, path);
        if (set)
            std::copy(set->begin() + 64, set->begin() + 128, m.begin() + 64);
        size_t before = port.rx.size();
        port.send_smp(m);
        fab.run_due();
        if (port.rx.size() != before + 1)
            return std::nullopt;
        auto s = port.rx.back().mad();
        Mad r{};  // zeroes past the end of a short reply
        std::copy(s.begin(), s.end(), r.begin());
        if (smp::kDrStatus.get(r) != 0)
            return std::nullopt;
        return r;
    }

    void discover()
    {
        std::deque<std::vector<uint8_t>> todo{{1}};
        while (!todo.empty()) {
            auto path = todo.front();
            todo.pop_front();
            auto ni = get(smp::kAttrNodeInfo, 0, path);
            ASSERT_TRUE(ni) << "no switch at hop " << path.size();
            auto d = test::smp_data(*ni);
            ASSERT_EQ(d[2], 2);
            uint64_t guid = get64(d, 12);
            unsigned in = d[36];
            if (path.size() > 1) {
                // Record the cable we came over.
                std::vector<uint8_t> parent(path.begin(), path.end() - 1);
                for (auto& [g, s] : sws)
                    if (s.path == parent)
                        s.peer_sw[path.back()] = {guid, in};
            } else {
                sm_lid = next_ca_lid++;  // our own port, on `in` of the first switch
            }
            if (sws.count(guid)) {
                sws[guid].peer_sw[in] = {0, 0};  // placeholder, fixed below
                continue;
            }
            Sw& s = sws[guid];
            s.path = path;
            s.nports = d[3];
            if (path.size() == 1)
                s.ca_lid[in] = sm_lid;
            for (unsigned p = 1; p <= s.nports; ++p) {
                auto pi = get(smp::kAttrPortInfo, p, path);
                ASSERT_TRUE(pi);
                if (kPiPhys.get(test::smp_data(*pi)) != uint64_t(PhysState::LinkUp))
                    continue;
                s.live.push_back(p);
                if (p == in)
                    continue;
                std::vector<uint8_t> next = path;
                next.push_back(uint8_t(p));
                if (get(smp::kAttrNodeInfo, 0, next))
                    todo.push_back(next);
                else
                    s.ca_lid[p] = next_ca_lid++;  // a silent end: an HCA
            }
        }
        // Switch-to-switch cables seen from both sides.
        for (auto& [g, s] : sws)
            for (auto it = s.peer_sw.begin(); it != s.peer_sw.end();)
                it = it->second.first == 0 ? s.peer_sw.erase(it) : std::next(it);
        for (auto& [g, s] : sws)
            for (auto [p, peer] : s.peer_sw)
                sws[peer.first].peer_sw[peer.second] = {g, p};
        uint16_t swlid = 40;
        for (auto& [g, s] : sws)
            s.lid = swlid++;
    }

    // Port of switch `from` toward the switch that owns `lid` (BFS).
    unsigned route(uint64_t from, uint64_t owner)
    {
        std::map<uint64_t, unsigned> first_port{{from, 0}};
        std::deque<uint64_t> q{from};
        while (!q.empty()) {
            uint64_t g = q.front();
            q.pop_front();
            for (auto [p, peer] : sws[g].peer_sw)
                if (!first_port.count(peer.first)) {
                    first_port[peer.first] = g == from ? p : first_port[g];
                    q.push_back(peer.first);
                }
        }
        return first_port.at(owner);
    }

    void configure()
    {
        for (auto& [g, s] : sws) {
            Mad lft{};
            auto d = test::smp_data(lft);
            std::fill(d.begin(), d.end(), 0xff);
            for (auto& [g2, s2] : sws) {
                for (auto [p, lid] : s2.ca_lid)
                    d[lid] = uint8_t(g2 == g ? p : route(g, g2));
                d[s2.lid] = uint8_t(g2 == g ? 0 : route(g, g2));
            }
            ASSERT_TRUE(get(smp::kAttrLft, 0, s.path, &lft));
            auto si = get(smp::kAttrSwitchInfo, 0, s.path);
            ASSERT_TRUE(si);
            kSiLftTop.set(test::smp_data(*si), 63);
            ASSERT_TRUE(get(smp::kAttrSwitchInfo, 0, s.path, &*si));
            auto pi = get(smp::kAttrPortInfo, 0, s.path);
            ASSERT_TRUE(pi);
            kPiLid.set(test::smp_data(*pi), s.lid);
            kPiSmLid.set(test::smp_data(*pi), sm_lid);
            kPiState.set(test::smp_data(*pi), 0);
            kPiPhys.set(test::smp_data(*pi), 0);
            ASSERT_TRUE(get(smp::kAttrPortInfo, 0, s.path, &*pi));
        }
        for (uint8_t st : {uint8_t(PortState::Armed), uint8_t(PortState::Active)})
            for (auto& [g, s] : sws)
                for (unsigned p : s.live) {
                    auto pi = get(smp::kAttrPortInfo, p, s.path);
                    ASSERT_TRUE(pi);
                    kPiState.set(test::smp_data(*pi), st);
                    kPiPhys.set(test::smp_data(*pi), 0);
                    ASSERT_TRUE(get(smp::kAttrPortInfo, p, s.path, &*pi)) << "port " << p;
                }
    }
};

void sweep_and_check(const char* spec, unsigned hosts_expected, unsigned switches_expected)
{
    VirtualClock clock;
    Fabric fab(clock);
    std::string err;
    ASSERT_TRUE(fab.build_spec(spec, &err)) << err;
    std::map<std::string, TestPort> hosts;
    for (HcaPort* hp : fab.hca_ports())
        hosts[hp->node_name()].wire = &hp->attach(&hosts[hp->node_name()]);
    MiniSm sm{fab, hosts["vm0"]};
    sm.discover();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    ASSERT_EQ(sm.sws.size(), switches_expected);
    std::vector<uint16_t> lids;
    for (auto& [g, s] : sm.sws)
        for (auto [p, lid] : s.ca_lid)
            lids.push_back(lid);
    ASSERT_EQ(lids.size(), hosts_expected);
    sm.configure();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());

    // Every host to every LID: exactly one host receives each.
    uint8_t payload[16] = {};
    for (auto& [name, src] : hosts) {
        for (uint16_t lid : lids) {
            std::map<std::string, size_t> before;
            for (auto& [n, h] : hosts)
                before[n] = h.rx.size();
            src.send_data(lid, 1, payload);
            fab.run_due();
            unsigned got = 0;
            for (auto& [n, h] : hosts)
                got += unsigned(h.rx.size() - before[n]);
            // A host's own LID would turn back on its ingress: dropped.
            bool self = false;
            for (auto& [n, h] : hosts)
                if (&h == &src && h.rx.size() == before[n] && got == 0)
                    self = true;
            EXPECT_TRUE(got == 1 || self) << name << " -> LID " << lid << ": " << got;
        }
    }
    // Cut the last host's cable: its switch tells the SM (trap 128), over
    // LID routes through the fabric.
    std::string last = hosts.rbegin()->first;
    size_t before = hosts["vm0"].rx.size();
    EXPECT_EQ(fab.control("link " + last + ":1 down").substr(0, 2), "ok");
    fab.run_due();
    ASSERT_EQ(hosts["vm0"].rx.size(), before + 1);
    auto m = hosts["vm0"].rx.back().mad();
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodTrap);
    EXPECT_EQ(get16(test::smp_data(m), 4), 128);
}

TEST(Sweep, StarOfFour) { sweep_and_check("star:4", 4, 1); }
TEST(Sweep, ChainOfTwoSwitchesFiveHosts) { sweep_and_check("chain:5", 5, 2); }

}  // namespace
}  // namespace ibemu::fabric
