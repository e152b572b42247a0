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

Mad sm_dr(uint8_t method, uint16_t attr, std::vector<uint8_t> path, uint64_t tid);

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
    // As the SM on client `sm` (registered here for directed-route SMPs,
    // agent 0): gives the endpoint `lid` and brings its port ACTIVE.
    void make_active(int sm, uint16_t lid)
    {
        reg(sm, 0, mad::kClassSubnDirected, 0, {});
        for (PortState s : {PortState::Armed, PortState::Active}) {
            Mad set = sm_dr(mad::kMethodSet, smp::kAttrPortInfo, {}, 5);
            test::layout::kPiLid.set(test::smp_data(set), lid);
            test::layout::kPiState.set(test::smp_data(set), uint64_t(s));
            send_mad(sm, 0, set, 0, 0xffff, 1000);
            std::array<uint8_t, kHdrSize + kMadSize> r;
            ASSERT_TRUE(recv_mad(sm, &r));
        }
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
    ASSERT_NO_FATAL_FAILURE(make_active(sm, 9));
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

// A GetTable query and its RMPP answer between two processes on the same
// port (saquery and OpenSM's SA on one endpoint).
struct Rmpp : Host {
    int sm = -1, cl = -1;
    void SetUp() override
    {
        Host::SetUp();
        sm = connect_client();
        ASSERT_NO_FATAL_FAILURE(make_active(sm, 9));
        reg_rmpp(sm, 1, {kGetTable});
        cl = connect_client();
        reg_rmpp(cl, 0, {});
    }
    void TearDown() override
    {
        close(sm);
        close(cl);
    }
    static constexpr uint8_t kGetTable = 0x12, kGetTableResp = 0x92;
    void reg_rmpp(int fd, uint32_t agent, std::initializer_list<uint8_t> methods)
    {
        UmadCtl c;
        c.op = CtlOp::Register;
        c.agent = agent;
        c.mgmt_class = 0x03;
        c.class_version = 2;
        c.qpn = 1;
        c.rmpp_version = 1;
        for (uint8_t m : methods)
            c.method_mask[m / 64] |= 1ull << (m % 64);
        ASSERT_EQ(send(fd, &c, sizeof c, 0), ssize_t(sizeof c));
        pump();
    }
    // An SA MAD (56 bytes of headers) with `records` records of 112 bytes,
    // each filled with its index, RMPP active when `rmpp`.
    static std::vector<uint8_t> sa_msg(uint8_t method, uint64_t tid, unsigned records, bool rmpp)
    {
        std::vector<uint8_t> m(56 + records * 112, 0);
        if (m.size() < kMadSize && !rmpp)
            m.resize(kMadSize);
        Mad h = test::smp_header(0x03, method, 0x11, 0, tid);
        std::memcpy(m.data(), h.data(), 24);
        mad::kClassVersion.set(m, 2);
        m[24] = 0;                      // RMPPVersion: OpenSM leaves it to the kernel
        m[26] = rmpp ? 1 : 0;           // flags: ACTIVE
        put16(m, 36 + 8, 112 / 8);      // SA AttributeOffset, in 8-byte words
        for (unsigned i = 0; i < records; ++i)
            std::fill_n(m.begin() + 56 + i * 112, 112, uint8_t(i + 1));
        return m;
    }
    void write_msg(int fd, uint32_t agent, std::span<const uint8_t> mad, uint32_t timeout_ms)
    {
        std::vector<uint8_t> b(kHdrSize + mad.size(), 0);
        std::memcpy(b.data() + kId, &agent, 4);
        std::memcpy(b.data() + kTimeout, &timeout_ms, 4);
        std::span<uint8_t> h(b.data(), kHdrSize);
        put32(h, kQpn, 1);
        put32(h, kQkey, kQp1Qkey);
        put16(h, kLid, 9);
        std::memcpy(b.data() + kHdrSize, mad.data(), mad.size());
        ASSERT_EQ(send(fd, b.data(), b.size(), 0), ssize_t(b.size()));
        pump();
    }
    // The next message for fd, whatever its length.
    std::vector<uint8_t> read_msg(int fd)
    {
        pump();
        std::vector<uint8_t> b(kHdrSize + kMaxRmppMessage);
        ssize_t n = recv(fd, b.data(), b.size(), MSG_DONTWAIT);
        b.resize(n > 0 ? size_t(n) : 0);
        return b;
    }
    // The SA answers the query it got with `records` records.
    void answer(unsigned records)
    {
        std::vector<uint8_t> q = read_msg(sm);
        ASSERT_EQ(q.size(), kHdrSize + kMadSize);
        uint64_t tid = mad::kTid.get(std::span<const uint8_t>(q).subspan(kHdrSize));
        write_msg(sm, 1, sa_msg(kGetTableResp, tid, records, true), 0);
    }
};

TEST_F(Rmpp, AGetTableAnswerLongerThanOneMadReachesTheAskerWhole)
{
    write_msg(cl, 0, sa_msg(kGetTable, 77, 0, false), 1000);
    answer(121);  // the NodeRecords of fattree:100: 13608 bytes
    std::vector<uint8_t> r = read_msg(cl);
    std::vector<uint8_t> want = sa_msg(kGetTableResp, 0, 121, true);
    ASSERT_EQ(r.size(), kHdrSize + want.size());
    uint32_t len;
    std::memcpy(&len, r.data() + 16, 4);
    EXPECT_EQ(len, r.size());  // hdr.length: what a short read()'s ENOSPC reports
    std::span<const uint8_t> m(r.data() + kHdrSize, want.size());
    EXPECT_EQ(mad::kTid.get(m) & 0xffffffff, 77u);
    EXPECT_EQ(mad::kMethod.get(m), kGetTableResp);
    EXPECT_TRUE(std::equal(m.begin() + 56, m.end(), want.begin() + 56));  // every record
    EXPECT_EQ(host->host_counters().rmpp_sent, 1u);
    EXPECT_EQ(host->host_counters().bad, 0u);
}

TEST_F(Rmpp, AShortRmppAnswerKeepsItsExactLength)
{
    // One PathRecord-sized answer: the reader counts records by length.
    write_msg(cl, 0, sa_msg(kGetTable, 78, 0, false), 1000);
    answer(1);
    std::vector<uint8_t> r = read_msg(cl);
    EXPECT_EQ(r.size(), kHdrSize + 56 + 112);
    // And none: the headers alone.
    write_msg(cl, 0, sa_msg(kGetTable, 79, 0, false), 1000);
    answer(0);
    r = read_msg(cl);
    EXPECT_EQ(r.size(), kHdrSize + 56);
}

TEST_F(Rmpp, AMessageLongerThanAMadWithoutRmppIsRefused)
{
    // RMPP not active in the header, or an agent registered without RMPP.
    write_msg(sm, 1, sa_msg(kGetTableResp, 5, 10, false), 0);
    EXPECT_EQ(host->host_counters().bad, 1u);
    reg(cl, 1, 0x03, 1, {});
    write_msg(cl, 1, sa_msg(kGetTableResp, 5, 10, true), 0);
    EXPECT_EQ(host->host_counters().bad, 2u);
    EXPECT_EQ(host->host_counters().rmpp_sent, 0u);
}

TEST(RmppSegments, SegmentsCarryTheDataInOrderWithIbMadsHeaders)
{
    // 121 records of 112 bytes after the 56-byte SA headers: 68 segments of
    // 200 data bytes, the last one partly padding.
    std::vector<uint8_t> msg(56 + 121 * 112);
    for (size_t i = 0; i < msg.size(); ++i)
        msg[i] = uint8_t(i * 7 + 3);
    msg[1] = 0x03;  // SA
    msg[24] = 1;
    msg[26] = 1;
    auto segs = rmpp_segments(msg);
    ASSERT_EQ(segs.size(), 68u);
    std::vector<uint8_t> joined(msg.begin(), msg.begin() + 56);
    for (size_t i = 0; i < segs.size(); ++i) {
        std::span<const uint8_t> s(segs[i]);
        SCOPED_TRACE(i);
        EXPECT_TRUE(std::equal(s.begin(), s.begin() + 24, msg.begin()));  // MAD header
        EXPECT_EQ(s[24], 1);                                             // RMPPVersion
        EXPECT_EQ(s[25], 1);                                             // DATA
        EXPECT_EQ(s[26] & 7, 1 | (i == 0 ? 2 : 0) | (i == 67 ? 4 : 0));  // ACTIVE FIRST LAST
        EXPECT_EQ(get32(s, 28), i + 1);                                  // SegmentNumber
        EXPECT_TRUE(std::equal(s.begin() + 36, s.begin() + 56, msg.begin() + 36));  // SA header
        joined.insert(joined.end(), s.begin() + 56, s.end());
    }
    // PayloadLength: the whole message's RMPP payload in the first, the
    // last segment's in the last (ib_mad's get_mad_len gives back 13608).
    size_t pad = 68 * 200 - 121 * 112;
    EXPECT_EQ(get32(segs[0], 32), 68 * 220 - pad);
    EXPECT_EQ(get32(segs[67], 32), 220 - pad);
    EXPECT_EQ(get32(segs[30], 32), 0u);
    joined.resize(msg.size());
    EXPECT_TRUE(std::equal(joined.begin() + 56, joined.end(), msg.begin() + 56));
    // A message of headers only is one segment.
    msg.resize(56);
    segs = rmpp_segments(msg);
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(get32(segs[0], 32), 20u);
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
