// SPDX-License-Identifier: GPL-2.0
//
// The host MAD endpoint over its real socket, as the umad interposer uses
// it: agents, DR SMPs through the fabric to a stub CA, local SMPs, response
// matching, timeouts with retries, unsolicited routing, the port query.
#include "madhost/mad_host.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "fabric/fabric.h"
#include "fabric/test_support.h"
#include "stub/stub_farm.h"

namespace ibemu::madhost {
namespace {

using namespace fabric;
using test::Mad;

// struct ib_user_mad_hdr offsets (<rdma/ib_user_mad.h>), written out here.
constexpr unsigned kId = 0, kStatus = 4, kTimeout = 8, kRetries = 12, kQpn = 20, kQkey = 24, kLid = 28;

struct Host : ::testing::Test {
    VirtualClock clock;
    Fabric fab{clock};
    MadHost* host = nullptr;
    std::unique_ptr<stub::StubFarm> farm;
    std::string path;

    void SetUp() override
    {
        std::string err;
        ASSERT_TRUE(fab.build_spec("star:3", &err)) << err;
        const TopoNode& n = fab.topology().nodes[*fab.topology().find("vm0")];
        stub::StubCaConfig cfg;
        cfg.name = "vm0";
        cfg.node = stub::stub_identity(n);
        auto h = std::make_unique<MadHost>(fab.scheduler(), cfg);
        host = h.get();
        path = ::testing::TempDir() + "/madhost-" + std::to_string(getpid()) + ".sock";
        ASSERT_TRUE(host->listen(path, &err)) << err;
        farm = std::make_unique<stub::StubFarm>(fab);
        farm->adopt("vm0", std::move(h));
        ASSERT_EQ(farm->attach_all(), 3u);
    }

    int connect_client()
    {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strcpy(a.sun_path, path.c_str());
        EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        pump();
        return fd;
    }
    // One round of the owner's loop.
    void pump()
    {
        for (int i = 0; i < 3; ++i) {
            std::vector<pollfd> v;
            host->add_pollfds(&v);
            poll(v.data(), v.size(), 0);
            host->handle(v);
            fab.run_due();
        }
    }
    void reg(int fd, uint32_t agent, uint8_t cls, uint8_t qpn, std::initializer_list<uint8_t> methods)
    {
        UmadCtl c;
        c.op = CtlOp::Register;
        c.agent = agent;
        c.mgmt_class = cls;
        c.class_version = 1;
        c.qpn = qpn;
        for (uint8_t m : methods)
            c.method_mask[m / 64] |= 1ull << (m % 64);
        ASSERT_EQ(send(fd, &c, sizeof c, 0), ssize_t(sizeof c));
        pump();
    }
    void send_mad(int fd, uint32_t agent, const Mad& m, uint32_t qpn, uint16_t dlid, uint32_t timeout_ms,
                  uint32_t retries = 0)
    {
        uint8_t b[kHdrSize + kMadSize] = {};
        std::memcpy(b + kId, &agent, 4);
        std::memcpy(b + kTimeout, &timeout_ms, 4);
        std::memcpy(b + kRetries, &retries, 4);
        std::span<uint8_t> h(b, kHdrSize);
        put32(h, kQpn, qpn);
        put32(h, kQkey, qpn ? kQp1Qkey : 0);
        put16(h, kLid, dlid);
        std::memcpy(b + kHdrSize, m.data(), kMadSize);
        ASSERT_EQ(send(fd, b, sizeof b, 0), ssize_t(sizeof b));
        pump();
    }
    // The next packet for this client, if any: header and MAD.
    bool recv_mad(int fd, std::array<uint8_t, kHdrSize + kMadSize>* out)
    {
        pump();
        return recv(fd, out->data(), out->size(), MSG_DONTWAIT) == ssize_t(out->size());
    }
    static uint32_t hdr32(const std::array<uint8_t, kHdrSize + kMadSize>& p, unsigned off)
    {
        uint32_t v;
        std::memcpy(&v, p.data() + off, 4);
        return v;
    }
    static std::span<const uint8_t> mad_of(const std::array<uint8_t, kHdrSize + kMadSize>& p)
    {
        return std::span<const uint8_t>(p).subspan(kHdrSize);
    }
};

// A DR SMP as an SM hands it to umad: hop pointer 0, the kernel moves it.
Mad sm_dr(uint8_t method, uint16_t attr, std::vector<uint8_t> path, uint64_t tid)
{
    Mad m = test::dr_smp(method, attr, 0, std::move(path), tid);
    smp::kHopPointer.set(m, 0);
    return m;
}

TEST_F(Host, DirectedRouteToAStubComesBackToTheAgentWithItsTid)
{
    int fd = connect_client();
    reg(fd, 3, mad::kClassSubnDirected, 0, {});
    send_mad(fd, 3, sm_dr(mad::kMethodGet, smp::kAttrNodeDesc, {1, 3}, 0x1122334455667788ull), 0, 0xffff, 1000);
    std::array<uint8_t, kHdrSize + kMadSize> r;
    ASSERT_TRUE(recv_mad(fd, &r));
    EXPECT_EQ(hdr32(r, kId), 3u);
    EXPECT_EQ(hdr32(r, kStatus), 0u);
    auto m = mad_of(r);
    EXPECT_EQ(mad::kMethod.get(m), mad::kMethodGetResp);
    EXPECT_EQ(smp::kDirection.get(m), 1u);
    EXPECT_EQ(smp::kHopPointer.get(m), 0u);  // C14-13:3 at the requester
    EXPECT_EQ(mad::kTid.get(m) & 0xffffffffull, 0x55667788ull);
    EXPECT_NE(mad::kTid.get(m) >> 32, 0u);  // the agent's half, as ib_mad sets it
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data() + smp::kDataOffset)), "vm2");
    EXPECT_EQ(host->host_counters().timeouts, 0u);
    close(fd);
}

TEST_F(Host, HopCountZeroIsTheEndpointsOwnSmaAndSetsItsLid)
{
    int fd = connect_client();
    reg(fd, 0, mad::kClassSubnDirected, 0, {});
    Mad set = sm_dr(mad::kMethodSet, smp::kAttrPortInfo, {}, 5);
    test::layout::kPiLid.set(test::smp_data(set), 9);
    send_mad(fd, 0, set, 0, 0xffff, 1000);
    std::array<uint8_t, kHdrSize + kMadSize> r;
    ASSERT_TRUE(recv_mad(fd, &r));
    EXPECT_EQ(test::layout::kPiLid.get(mad_of(r).subspan(smp::kDataOffset)), 9u);
    EXPECT_EQ(host->port_info().lid, 9u);
    close(fd);
}

TEST_F(Host, ARequestWithoutAnswerIsRetriedThenHandedBackTimedOut)
{
    int fd = connect_client();
    reg(fd, 1, mad::kClassSubnDirected, 0, {});
    // Past vm1 (a CA) there is nothing: the stub drops it (C14-9:5).
    Mad m = sm_dr(mad::kMethodGet, smp::kAttrNodeInfo, {1, 2, 1}, 42);
    send_mad(fd, 1, m, 0, 0xffff, 50, 2);
    std::array<uint8_t, kHdrSize + kMadSize> r;
    EXPECT_FALSE(recv_mad(fd, &r));
    clock.advance(50'000'000);
    EXPECT_FALSE(recv_mad(fd, &r));
    clock.advance(50'000'000);
    EXPECT_FALSE(recv_mad(fd, &r));
    EXPECT_EQ(host->host_counters().retries, 2u);
    clock.advance(50'000'000);
    ASSERT_TRUE(recv_mad(fd, &r));
    EXPECT_EQ(hdr32(r, kStatus), kStatusTimedOut);
    EXPECT_EQ(hdr32(r, kId), 1u);
    EXPECT_EQ(mad::kMethod.get(mad_of(r)), mad::kMethodGet);  // the request itself
    EXPECT_EQ(host->host_counters().timeouts, 1u);
    close(fd);
}

TEST_F(Host, AMadToTheOwnLidGoesToTheAgentRegisteredForIt)
{
    // Give the endpoint LID 9 and make its port ACTIVE.
    int sm = connect_client();
    reg(sm, 0, mad::kClassSubnDirected, 0, {});
    for (PortState s : {PortState::Armed, PortState::Active}) {
        Mad set = sm_dr(mad::kMethodSet, smp::kAttrPortInfo, {}, 5);
        test::layout::kPiLid.set(test::smp_data(set), 9);
        test::layout::kPiState.set(test::smp_data(set), uint64_t(s));
        send_mad(sm, 0, set, 0, 0xffff, 1000);
        std::array<uint8_t, kHdrSize + kMadSize> r;
        ASSERT_TRUE(recv_mad(sm, &r));
    }
    // An "SA" agent (class 3, Get) in one process, a query from another.
    reg(sm, 1, 0x03, 1, {mad::kMethodGet});
    int cl = connect_client();
    reg(cl, 0, 0x03, 1, {});
    Mad q = test::smp_header(0x03, mad::kMethodGet, 0x11, 0, 77);
    send_mad(cl, 0, q, 1, 9, 1000);
    std::array<uint8_t, kHdrSize + kMadSize> r;
    ASSERT_TRUE(recv_mad(sm, &r));
    EXPECT_EQ(hdr32(r, kId), 1u);
    EXPECT_EQ(get16(std::span<const uint8_t>(r).subspan(0, kHdrSize), kLid), 9u);
    // The SA answers; the answer goes back to the asking process.
    Mad a;
    std::copy(r.begin() + kHdrSize, r.end(), a.begin());
    mad::kMethod.set(a, mad::kMethodGetResp);
    send_mad(sm, 1, a, 1, 9, 0);
    ASSERT_TRUE(recv_mad(cl, &r));
    EXPECT_EQ(hdr32(r, kId), 0u);
    EXPECT_EQ(mad::kTid.get(mad_of(r)) & 0xffffffff, 77u);
    // PMA of the own port, by LID.
    reg(cl, 1, mad::kClassPerf, 1, {});
    send_mad(cl, 1, test::smp_header(mad::kClassPerf, mad::kMethodGet, pma::kAttrPortCounters, 0, 78), 1, 9, 1000);
    ASSERT_TRUE(recv_mad(cl, &r));
    EXPECT_EQ(mad::kStatus.get(mad_of(r)), 0u);
    close(sm);
    close(cl);
}

TEST_F(Host, PortQueryAndIsSm)
{
    int fd = connect_client();
    UmadCtl c;
    c.op = CtlOp::QueryPort;
    ASSERT_EQ(send(fd, &c, sizeof c, 0), ssize_t(sizeof c));
    pump();
    UmadPortInfo i;
    ASSERT_EQ(recv(fd, &i, sizeof i, MSG_DONTWAIT), ssize_t(sizeof i));
    EXPECT_EQ(i.node_guid, host->node().node_guid);
    EXPECT_EQ(i.port_guid, host->node().node_guid + 1);
    EXPECT_EQ(i.state, uint8_t(PortState::Init));
    EXPECT_EQ(i.phys_state, uint8_t(PhysState::LinkUp));
    EXPECT_FALSE(i.cap_mask & 2);
    int issm = connect_client();
    c.op = CtlOp::SetIsSm;
    ASSERT_EQ(send(issm, &c, sizeof c, 0), ssize_t(sizeof c));
    pump();
    EXPECT_TRUE(host->port_info().cap_mask & 2);
    close(issm);
    pump();
    EXPECT_FALSE(host->port_info().cap_mask & 2);
    close(fd);
}

TEST_F(Host, HostileClientMessagesAreCountedNotFollowed)
{
    int fd = connect_client();
    uint8_t junk[100] = {1, 2, 3};
    send(fd, junk, 5, 0);                    // too short
    send(fd, junk, sizeof junk, 0);          // a "MAD" from an unregistered agent
    UmadCtl c;
    c.op = CtlOp(99);
    send(fd, &c, sizeof c, 0);               // unknown control op
    std::vector<uint8_t> big(4096, 0xff);
    send(fd, big.data(), big.size(), 0);     // longer than a MAD
    pump();
    EXPECT_EQ(host->host_counters().bad, 4u);
    EXPECT_EQ(host->clients(), 1u);
    close(fd);
    pump();
    EXPECT_EQ(host->clients(), 0u);
}

}  // namespace
}  // namespace ibemu::madhost
