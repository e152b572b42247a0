// SPDX-License-Identifier: GPL-2.0
// The upstream Debian stack across the emulated fabric: OpenSM in one guest
// brings every port ACTIVE, and the diagnostics see the topology. One lab
// per suite: two guests back to back, three guests through one switch.
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

LabOptions Fabric(const std::vector<std::string> &names, const std::string &spec)
{
	LabOptions o;
	for (const auto &n : names)
		o.guests.push_back({n, Stack::Upstream});
	o.hca = true;
	o.fabric = spec;
	return o;
}

const char *const kPort = "/sys/class/infiniband/mthca0/ports/1";

// Loads the stack an SM and the diagnostics need.
void LoadStack(Guest &g)
{
	auto r = g.exec("modprobe ib_mthca && modprobe ib_umad && modprobe ib_uverbs", 120s);
	ASSERT_TRUE(Ok(r));
}

// Waits until port 1 of every guest reads ACTIVE; returns the last states.
std::string WaitActive(const std::vector<Guest *> &guests, std::chrono::seconds limit)
{
	auto deadline = std::chrono::steady_clock::now() + limit;
	std::string states;
	for (;;) {
		bool all = true;
		states.clear();
		for (Guest *g : guests) {
			auto r = g->exec(std::string("cat ") + kPort + "/state", 30s);
			states += g->name() + ": " + r.output;
			all = all && r.output == "4: ACTIVE\n";
		}
		if (all || std::chrono::steady_clock::now() >= deadline)
			return states;
		std::this_thread::sleep_for(2s);
	}
}

// Node GUIDs ("H-0002c90300000100" style ids) in ibnetdiscover output.
std::set<std::string> CaIds(const std::string &out)
{
	std::set<std::string> ids;
	std::istringstream in(out);
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind("Ca\t", 0) != 0)
			continue;
		auto a = line.find("\"H-");
		if (a != std::string::npos)
			ids.insert(line.substr(a + 1, 18));
	}
	return ids;
}

size_t Count(const std::string &s, const std::string &what)
{
	size_t n = 0;
	for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
		n++;
	return n;
}

// The value of "Name:....value" in smpquery/perfquery output (decimal or
// 0x hex), -1 when the field is missing.
long Number(const std::string &out, const std::string &name)
{
	std::smatch m;
	if (!std::regex_search(out, m, std::regex("(^|\\n)" + name + ":\\.*((0x)?[0-9a-fA-F]+)")))
		return -1;
	return std::stol(m[2], nullptr, 0);
}

std::string HexGuid(Guest &g)
{
	std::string s = g.node_guid_string();  // 0002:c903:0000:0100
	std::string hex;
	for (char c : s)
		if (c != ':')
			hex += c;
	return "H-" + hex;
}

// ---------------------------------------------------------------------------
class BackToBack : public VmSuite {
protected:
	static void SetUpTestSuite() { StartLab(Fabric({"vm0", "vm1"}, "b2b"), "BackToBack"); }
	static void TearDownTestSuite() { StopLab(); }
};

TEST_F(BackToBack, LinkIsUpBeforeAnySm)
{
	// A port trains only once its driver opened it (INIT_IB): with one
	// side loaded the link still waits for the other's carrier.
	LoadStack(guest("vm0"));
	auto first = Run(guest("vm0"), std::string("cat ") + kPort + "/phys_state");
	ASSERT_TRUE(Ok(first));
	EXPECT_EQ(first.output, "2: Polling\n") << "vm0's link is up with vm1's port closed";
	EXPECT_NE(lab_->fabric("show links").find("vm0:1-vm1:1 no-carrier"), std::string::npos)
		<< lab_->fabric("show links");
	LoadStack(guest("vm1"));
	for (Guest *g : lab_->guests()) {
		auto r = Run(*g, std::string("cat ") + kPort + "/phys_state " + kPort + "/state");
		ASSERT_TRUE(Ok(r));
		EXPECT_EQ(r.output, "5: LinkUp\n2: INIT\n") << g->name();
	}
	std::string links = lab_->fabric("show links");
	EXPECT_NE(links.find("vm0:1-vm1:1 up"), std::string::npos) << links;
}

TEST_F(BackToBack, OpenSmBringsBothPortsActive)
{
	Guest &sm = guest("vm0");
	for (Guest *g : lab_->guests())
		LoadStack(*g);
	ASSERT_TRUE(Ok(Run(sm, "opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &")));
	std::string states = WaitActive(lab_->guests(), 120s);
	EXPECT_EQ(states, "vm0: 4: ACTIVE\nvm1: 4: ACTIVE\n") << Run(sm, "tail -20 /tmp/opensm.log").output;

	// The SM gave distinct non-zero LIDs and both ports know the SM's LID.
	auto l0 = Run(guest("vm0"), std::string("cat ") + kPort + "/lid " + kPort + "/sm_lid");
	auto l1 = Run(guest("vm1"), std::string("cat ") + kPort + "/lid " + kPort + "/sm_lid");
	ASSERT_TRUE(Ok(l0));
	ASSERT_TRUE(Ok(l1));
	std::istringstream a(l0.output), b(l1.output);
	std::string lid0, sm0, lid1, sm1;
	a >> lid0 >> sm0;
	b >> lid1 >> sm1;
	EXPECT_NE(lid0, "0x0");
	EXPECT_NE(lid1, "0x0");
	EXPECT_NE(lid0, lid1);
	EXPECT_EQ(sm0, lid0) << "the SM runs on vm0";
	EXPECT_EQ(sm1, lid0);

	auto st = Run(guest("vm1"), "ibstat mthca0 1");
	ASSERT_TRUE(Ok(st));
	EXPECT_NE(st.output.find("State: Active"), std::string::npos) << st.output;
	EXPECT_NE(st.output.find("Physical state: LinkUp"), std::string::npos) << st.output;
}

TEST_F(BackToBack, IbnetdiscoverShowsBothHcas)
{
	auto r = Run(guest("vm1"), "ibnetdiscover");
	ASSERT_TRUE(Ok(r));
	std::set<std::string> want = {HexGuid(guest("vm0")), HexGuid(guest("vm1"))};
	EXPECT_EQ(CaIds(r.output), want) << r.output;
}

// ---------------------------------------------------------------------------
class ThroughASwitch : public VmSuite {
protected:
	static void SetUpTestSuite()
	{
		// From a topology file in ibnetdiscover's format.
		StartLab(Fabric({"vm0", "vm1", "vm2"}, IBSTACK_TOPOLOGY_DIR + "/switch3.topo"), "ThroughASwitch");
	}
	static void TearDownTestSuite() { StopLab(); }
};

TEST_F(ThroughASwitch, OpenSmBringsEveryPortActive)
{
	for (Guest *g : lab_->guests())
		LoadStack(*g);
	Guest &sm = guest("vm1");
	ASSERT_TRUE(Ok(Run(sm, "opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &")));
	std::string states = WaitActive(lab_->guests(), 180s);
	EXPECT_EQ(states, "vm0: 4: ACTIVE\nvm1: 4: ACTIVE\nvm2: 4: ACTIVE\n")
		<< Run(sm, "tail -30 /tmp/opensm.log").output;
}

TEST_F(ThroughASwitch, IbnetdiscoverShowsTheSwitchAndThreeHcas)
{
	auto r = Run(guest("vm2"), "ibnetdiscover");
	ASSERT_TRUE(Ok(r));
	std::set<std::string> want = {HexGuid(guest("vm0")), HexGuid(guest("vm1")), HexGuid(guest("vm2"))};
	EXPECT_EQ(CaIds(r.output), want) << r.output;
	EXPECT_NE(r.output.find("\nSwitch\t8 \"S-0002c90200500000\""), std::string::npos) << r.output;
	// The cabling of the file: the HCAs on switch ports 1, 3 and 5.
	EXPECT_NE(r.output.find("[3]\t\"" + HexGuid(guest("vm1")) + "\"[1]"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("[5]\t\"" + HexGuid(guest("vm2")) + "\"[1]"), std::string::npos) << r.output;
}

// The diagnostics by LID across the switch: SA, the switch's SMA and PMA,
// and its forwarding table as OpenSM programmed it. Four nodes have a LID
// (the switch's port 0 and the three HCAs), so the LFT holds at least four.
TEST_F(ThroughASwitch, DiagnosticsThroughTheSwitch)
{
	Guest &g = guest("vm2");
	const unsigned kNodes = 4;
	auto sw = Run(g, "ibswitches");
	ASSERT_TRUE(Ok(sw));
	std::smatch m;
	ASSERT_TRUE(std::regex_search(sw.output, m, std::regex("base port 0 lid ([0-9]+)"))) << sw.output;
	std::string lid = m[1];
	// The SA (OpenSM in vm1): the SM's own PortInfoRecord, and paths.
	auto sa = Run(g, "saquery -s");
	ASSERT_TRUE(Ok(sa));
	EXPECT_GE(Count(sa.output, "PortInfoRecord dump"), 1u) << sa.output;
	auto pr = Run(g, "saquery -p");
	ASSERT_TRUE(Ok(pr));
	EXPECT_GE(Count(pr.output, "PathRecord dump"), 9u) << pr.output;
	auto si = Run(g, "smpquery switchinfo " + lid);
	ASSERT_TRUE(Ok(si));
	EXPECT_GE(Number(si.output, "LinearFdbTop"), long(kNodes)) << si.output;
	auto rt = Run(g, "ibroute " + lid);
	ASSERT_TRUE(Ok(rt));
	ASSERT_TRUE(std::regex_search(rt.output, m, std::regex("([0-9]+) valid lids dumped"))) << rt.output;
	EXPECT_GE(std::stol(m[1]), long(kNodes)) << rt.output;
	// Switch port 3 leads to vm1, the SA: the queries above crossed it.
	auto pq = Run(g, "perfquery " + lid + " 3");
	ASSERT_TRUE(Ok(pq));
	EXPECT_GT(Number(pq.output, "PortXmitPkts"), 0) << pq.output;
	EXPECT_GT(Number(pq.output, "PortRcvPkts"), 0) << pq.output;
	EXPECT_GT(Number(pq.output, "PortXmitData"), 0) << pq.output;
}

}  // namespace
}  // namespace iblab::vmtest
