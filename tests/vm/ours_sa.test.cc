// SPDX-License-Identifier: GPL-2.0
// Issue 4, ib_sa at run time: the test module ib_sa_selftest.ko (from
// drivers/infiniband/ulp/satest) sends ib_sa's queries from our guest vm0
// to OpenSM in the upstream guest vm1, through the switch of switch2.topo:
// PathRecords by GID and by LID, a path nobody has, a cancelled query, a
// join and a leave of the IPoIB broadcast group, a ServiceRecord query.
// What ib_sa hands back is checked against what vm1 knows (its sysfs, its
// verbs, and OpenSM's tables read with the upstream saquery).
//
// The control file, /sys/kernel/ib_sa_selftest/run, is described in
// Documentation/sa.md.
#include <arpa/inet.h>

#include <regex>
#include <sstream>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const std::string kRun = "/sys/kernel/ib_sa_selftest/run";
const std::string kPort = "/sys/class/infiniband/mthca0/ports/1";
// The IPoIB broadcast group of the default P_Key, which OpenSM creates.
const std::string kBroadcastMgid = "ff12:401b:ffff:0000:0000:0000:ffff:ffff";
const std::string kBroadcastMgidShort = "ff12:401b:ffff::ffff:ffff";

std::string Trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

// A GID as inet_ntop writes it (saquery prints them so).
std::string ShortGid(const std::string &gid)
{
	in6_addr a{};
	char out[INET6_ADDRSTRLEN];
	if (inet_pton(AF_INET6, gid.c_str(), &a) != 1 || !inet_ntop(AF_INET6, &a, out, sizeof out))
		return "(not a GID: " + gid + ")";
	return out;
}

unsigned long Hex(const std::string &s)
{
	return std::stoul(s, nullptr, 16);
}

class OursSa : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		if (OursRole() != Stack::Ours)
			return;  // ib_sa_selftest runs on our ib_sa only (see SetUp)
		StartWithSm(MixedOptions({{"vm0", Stack::Ours}, {"vm1", Stack::Upstream}},
					 IBSTACK_TOPOLOGY_DIR + "/switch2.topo"),
			    "OursSa", "vm1");
		if (!lab_ || !setup_error_.empty())
			return;
		auto r = guest("vm0").exec("modprobe ib_sa_selftest && test -w " + kRun, 60s);
		if (!r.ok()) {
			setup_error_ = "vm0: modprobe ib_sa_selftest: " + r.output;
			return;
		}
		// ib_sa builds its handle to the SM from a work item once the port
		// is ACTIVE; until then it sends nothing (-EAGAIN, "not sent").
		// Wait for that, and for nothing else.
		std::string gid1 = Trim(guest("vm1").exec("cat " + kPort + "/gids/0", 30s).output);
		for (int i = 0; i < 30; i++) {
			std::string res = Command("path " + gid1);
			if (res.find("query not sent: -11") == std::string::npos)
				return;
			std::this_thread::sleep_for(1s);
		}
		setup_error_ = "vm0: ib_sa had no SM handle 30 s after the port went ACTIVE";
	}
	void SetUp() override
	{
		if (OursRole() != Stack::Ours)
			GTEST_SKIP() << "ib_sa_selftest is built against our ib_sa; nothing to run with "
					"IBSTACK_OURS_STACK=upstream";
		SmSuite::SetUp();
	}

	// Runs one command of ib_sa_selftest in vm0; returns the result line.
	static std::string Command(const std::string &cmd)
	{
		auto r = guest("vm0").exec("echo '" + cmd + "' > " + kRun + " && cat " + kRun, 180s);
		EXPECT_FALSE(r.timed_out) << cmd << " hung";
		EXPECT_TRUE(Ok(r)) << cmd;
		return r.output;
	}

	static std::string Cat(const std::string &vm, const std::string &file)
	{
		auto r = guest(vm).exec("cat " + file, 30s);
		EXPECT_TRUE(Ok(r)) << vm << ": " << file;
		return Trim(r.output);
	}

	// OpenSM's member records, read by the upstream saquery in vm1. With
	// OpenSM's SM_Key (1 by default) the query is trusted; untrusted, the
	// records come with their PortGID and JoinState zeroed.
	static std::string Members()
	{
		auto r = guest("vm1").exec("saquery -m --smkey 1", 60s);
		EXPECT_TRUE(Ok(r)) << "saquery -m";
		return r.output;
	}

	// Whether `members` (saquery -m) lists `port_gid` in the broadcast group.
	static bool IsMember(const std::string &members, const std::string &port_gid)
	{
		// One record per "MGID" line, with its fields below it.
		std::string want = ShortGid(port_gid);
		size_t at = 0;
		while ((at = members.find("MGID", at)) != std::string::npos) {
			size_t next = members.find("MGID", at + 4);
			std::string rec = members.substr(at, next == std::string::npos ? std::string::npos : next - at);
			if (rec.find(kBroadcastMgidShort) != std::string::npos &&
			    std::regex_search(rec, std::regex("PortGid\\.+" + want + "\\s")))
				return true;
			at += 4;
		}
		return false;
	}

	static std::smatch Parse(const std::string &line, const std::string &re)
	{
		std::smatch m;
		EXPECT_TRUE(std::regex_match(line, m, std::regex(re))) << "'" << line << "' is not '" << re << "'";
		return m;
	}
};

// "PASS path: dlid .. slid .. mtu .. rate .. sl .. pkey .. hop_limit .. dgid .. sgid .."
const std::string kPathLine =
	"PASS path: dlid 0x([0-9a-f]{4}) slid 0x([0-9a-f]{4}) mtu ([0-9]+) rate ([0-9]+) sl ([0-9]+) "
	"pkey 0x([0-9a-f]{4}) hop_limit ([0-9]+) dgid ([0-9a-f:]+) sgid ([0-9a-f:]+)\n";

TEST_F(OursSa, PathToTheUpstreamGuestByGid)
{
	std::string gid0 = Cat("vm0", kPort + "/gids/0"), gid1 = Cat("vm1", kPort + "/gids/0");
	unsigned long lid0 = Hex(Cat("vm0", kPort + "/lid")), lid1 = Hex(Cat("vm1", kPort + "/lid"));
	ASSERT_NE(lid1, 0ul);
	std::string res = Command("path " + gid1);
	auto m = Parse(res, kPathLine);
	ASSERT_FALSE(m.empty());
	EXPECT_EQ(Hex(m[1]), lid1) << "DLID is not vm1's LID";
	EXPECT_EQ(Hex(m[2]), lid0) << "SLID is not vm0's LID";
	EXPECT_EQ(m[8], gid1);
	EXPECT_EQ(m[9], gid0);
	EXPECT_EQ(Hex(m[6]), Hex(Cat("vm1", kPort + "/pkeys/0"))) << "P_Key";

	// The MTU and rate of the fabric: vm1's active MTU (its verbs) and its
	// link's rate (sysfs: "10 Gb/sec (4X SDR)" is IB_RATE_10_GBPS, 3).
	auto dev = guest("vm1").exec("ibv_devinfo -d mthca0 -i 1", 60s);
	ASSERT_TRUE(Ok(dev));
	std::smatch mtu;
	ASSERT_TRUE(std::regex_search(dev.output, mtu, std::regex("active_mtu:\\s*[0-9]+ \\(([0-9]+)\\)")))
		<< dev.output;
	EXPECT_EQ(m[3], mtu[1].str()) << "path MTU (IB enum) against vm1's active MTU";
	std::string rate = Cat("vm1", kPort + "/rate");
	ASSERT_EQ(rate, "10 Gb/sec (4X SDR)") << "the fabric of switch2.topo is 4X SDR";
	EXPECT_EQ(m[4], "3") << "path rate (IB enum) against " << rate;

	// And what OpenSM tells the upstream stack about the same path.
	auto sa = guest("vm1").exec("saquery -p --src-to-dst " + std::to_string(lid0) + ":" + std::to_string(lid1),
				    60s);
	ASSERT_TRUE(Ok(sa));
	// saquery prints each field in hex; MTU and rate with their selector
	// in the top two bits.
	struct {
		const char *field;
		int index;
		unsigned long mask;
	} const fields[] = {{"sl", 5, 0xf}, {"mtu", 3, 0x3f}, {"rate", 4, 0x3f}};
	for (auto [field, index, mask] : fields) {
		std::smatch f;
		ASSERT_TRUE(std::regex_search(sa.output, f, std::regex(std::string("\\b") + field +
									"\\.+0x([0-9a-fA-F]+)")))
			<< field << " in\n" << sa.output;
		EXPECT_EQ(std::stoul(m[index]), Hex(f[1]) & mask) << field << " against saquery -p:\n" << sa.output;
	}
}

TEST_F(OursSa, PathToTheUpstreamGuestByLid)
{
	unsigned long lid0 = Hex(Cat("vm0", kPort + "/lid")), lid1 = Hex(Cat("vm1", kPort + "/lid"));
	char arg[16];
	snprintf(arg, sizeof arg, "0x%lx", lid1);
	std::string res = Command(std::string("path ") + arg);
	auto m = Parse(res, kPathLine);
	ASSERT_FALSE(m.empty());
	EXPECT_EQ(Hex(m[1]), lid1);
	EXPECT_EQ(Hex(m[2]), lid0);
	EXPECT_EQ(m[8], Cat("vm1", kPort + "/gids/0")) << "the DGID of vm1's LID";
}

TEST_F(OursSa, PathToNobodyIsRefused)
{
	// OpenSM answers a SubnAdmGet(PathRecord) to a DGID that no port has
	// with ERR_NO_RECORDS, which ib_sa reports as -ENOENT
	// (Documentation/sa.md). The upstream saquery (a GetTable) gets no
	// records for the same path.
	std::string gid1 = Cat("vm1", kPort + "/gids/0");
	auto up = guest("vm1").exec("saquery -p --sgid-to-dgid " + gid1 + "-fe80::2:c9ff:dead:beef", 60s);
	ASSERT_TRUE(Ok(up));
	ASSERT_EQ(up.output.find("PathRecord"), std::string::npos) << up.output;
	auto real = guest("vm1").exec("saquery -p --sgid-to-dgid " + gid1 + "-" + Cat("vm0", kPort + "/gids/0"), 60s);
	ASSERT_NE(real.output.find("PathRecord"), std::string::npos) << "the same query to vm0:\n" << real.output;
	std::string res = Command("path_unknown");
	auto m = Parse(res, "(PASS|FAIL) path_unknown: status (-?[0-9]+) .*\n");
	ASSERT_FALSE(m.empty());
	EXPECT_NE(res.find("dgid fe80:0000:0000:0000:0002:c9ff:dead:beef"), std::string::npos) << res;
	EXPECT_EQ(m[2], "-2") << res;
	EXPECT_EQ(m[1], "PASS") << res;
}

TEST_F(OursSa, CancelledQueryCallsBackOnceWithEintr)
{
	std::string res = Command("cancel");
	auto m = Parse(res, "PASS cancel: status (-?[0-9]+) on try ([0-9]+) of 5, the callback ran once\n");
	ASSERT_FALSE(m.empty());
	EXPECT_EQ(m[1], "-4");
}

TEST_F(OursSa, JoinAndLeaveTheBroadcastGroup)
{
	std::string gid0 = Cat("vm0", kPort + "/gids/0");
	ASSERT_FALSE(IsMember(Members(), gid0)) << "vm0 is a member before it joined";

	std::string res = Command("mcast_join");
	auto m = Parse(res, "PASS mcast_join: mlid 0x([0-9a-f]{4}) qkey 0x([0-9a-f]{8}) pkey 0x([0-9a-f]{4}) "
			    "mtu ([0-9]+) rate ([0-9]+) sl ([0-9]+) join_state ([0-9]+) mgid ([0-9a-f:]+)\n");
	ASSERT_FALSE(m.empty());
	unsigned long mlid = Hex(m[1]);
	EXPECT_GE(mlid, 0xc000ul);
	EXPECT_LE(mlid, 0xfffeul);
	EXPECT_EQ(Hex(m[2]), 0x0b1bul) << "the IPoIB Q_Key OpenSM gives the group";
	EXPECT_EQ(m[3], "ffff");
	EXPECT_EQ(m[8], kBroadcastMgid);

	// OpenSM now lists vm0's port as a member, under the same MLID.
	std::string members = Members();
	EXPECT_TRUE(IsMember(members, gid0)) << members;
	std::smatch g;
	auto grp = guest("vm1").exec("saquery -g", 60s);
	ASSERT_TRUE(Ok(grp));
	ASSERT_TRUE(std::regex_search(grp.output, g,
				      std::regex(kBroadcastMgidShort + "\\s+Mlid\\.+0x([0-9a-fA-F]+)")))
		<< grp.output;
	EXPECT_EQ(Hex(g[1]), mlid) << grp.output;

	res = Command("mcast_leave");
	auto l = Parse(res, "PASS mcast_leave: mgid ([0-9a-f:]+) port_gid ([0-9a-f:]+) join_state ([0-9]+)\n");
	ASSERT_FALSE(l.empty());
	EXPECT_EQ(l[1], kBroadcastMgid);
	EXPECT_EQ(l[2], gid0);
	EXPECT_FALSE(IsMember(Members(), gid0)) << "vm0 is still a member after it left";

	// Leaving again: the SA has no such membership and refuses.
	res = Command("mcast_leave");
	EXPECT_TRUE(res.starts_with("FAIL mcast_leave: the SA answered with status")) << res;
}

TEST_F(OursSa, ServiceRecordQueryWithoutRecords)
{
	// Nobody registered a service: SubnAdmGet(ServiceRecord) gets
	// ERR_NO_RECORDS, which ib_sa reports as -ENOENT.
	auto sr = guest("vm1").exec("saquery -S", 60s);
	ASSERT_TRUE(Ok(sr));
	ASSERT_EQ(sr.output.find("ServiceID"), std::string::npos) << "OpenSM has service records:\n" << sr.output;
	std::string res = Command("service");
	auto m = Parse(res, "PASS service: no records for id 0x([0-9a-f]{16}) \\(status (-?[0-9]+)\\)\n");
	ASSERT_FALSE(m.empty());
	EXPECT_EQ(m[2], "-2");
}

TEST_F(OursSa, MalformedCommandsAreRefused)
{
	Guest &g = guest("vm0");
	std::string before = Trim(Run(g, "cat " + kRun).output);
	for (const char *bad : {"path", "path zz", "path 0", "path 0xc000", "path fe80::1::2", "nosuch",
				"cancel now", "service 0xzz", "mcast_join ff12:"}) {
		auto r = Run(g, std::string("echo '") + bad + "' > " + kRun);
		EXPECT_FALSE(r.ok()) << "accepted '" << bad << "'";
	}
	// A refused command does not touch the last result.
	EXPECT_EQ(Trim(Run(g, "cat " + kRun).output), before);
}

TEST_F(OursSa, UnloadLeavesTheGroup)
{
	std::string gid0 = Cat("vm0", kPort + "/gids/0");
	std::string res = Command("mcast_join");
	ASSERT_TRUE(res.starts_with("PASS mcast_join")) << res;
	ASSERT_TRUE(IsMember(Members(), gid0));
	// Removal leaves the group it joined (bounded: it must not hang).
	auto r = Run(guest("vm0"), "rmmod ib_sa_selftest", 120s);
	ASSERT_TRUE(Ok(r));
	EXPECT_FALSE(IsMember(Members(), gid0)) << "the membership outlived the module";
	EXPECT_FALSE(Ok(Run(guest("vm0"), "test -e " + kRun)));
}

}  // namespace
}  // namespace iblab::vmtest
