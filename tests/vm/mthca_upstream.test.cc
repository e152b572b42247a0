// SPDX-License-Identifier: GPL-2.0
// The upstream (Debian 6.1) ib_mthca driver on the emulated InfiniHost III
// Ex: probe, verbs device, reload, interrupts, in one guest.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

LabOptions UpstreamGuest()
{
	LabOptions o;
	o.guests = {{"vm0", Stack::Upstream}};
	o.hca = true;
	return o;
}

// Lines of `dmesg --level=emerg,alert,crit,err,warn` that mention mthca.
std::string MthcaWarnings(Guest &g)
{
	auto r = g.exec("dmesg --level=emerg,alert,crit,err,warn | grep -i mthca; true", 60s);
	return r.error.empty() ? r.output : "(could not run dmesg: " + r.error + ")";
}

// ---------------------------------------------------------------------------
class MthcaProbe : public VmSuite {
protected:
	static void SetUpTestSuite() { StartLab(UpstreamGuest(), "MthcaProbe"); }
	static void TearDownTestSuite() { StopLab(); }
};

TEST_F(MthcaProbe, BootTimeIsRecorded)
{
	Guest &g = guest("vm0");
	EXPECT_GT(g.boot_seconds(), 0.5);
	EXPECT_LT(g.boot_seconds(), 180);
	// For `make check` to print at the end.
	std::string dir = default_build_dir() + "/lab";
	std::filesystem::create_directories(dir);
	std::ofstream t(dir + "/timings.txt", std::ios::trunc);
	char line[200];
	snprintf(line, sizeof line, "guest boot-to-shell (QEMU start -> agent ready, TCG, upstream stack): %.1f s\n",
		 g.boot_seconds());
	t << line;
	EXPECT_TRUE(t.good());
}

TEST_F(MthcaProbe, PciDeviceIsVisible)
{
	auto r = Run(guest("vm0"), "lspci -nn");
	ASSERT_TRUE(Ok(r));
	EXPECT_NE(r.output.find("[15b3:6282]"), std::string::npos) << r.output;
}

TEST_F(MthcaProbe, ModprobeCreatesMthca0)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca")));
	auto r = Run(g, "test -d /sys/class/infiniband/mthca0 && readlink -f /sys/class/infiniband/mthca0/device && "
			"cat /sys/class/infiniband/mthca0/node_type");
	ASSERT_TRUE(Ok(r)) << "dmesg:\n" << Run(g, "dmesg | tail -40").output;
	EXPECT_NE(r.output.find("1: CA"), std::string::npos) << r.output;
	auto lsmod = Run(g, "grep -c '^ib_mthca ' /proc/modules");
	EXPECT_EQ(lsmod.output, "1\n");
}

TEST_F(MthcaProbe, IbvDevinfo)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca && modprobe ib_uverbs")));
	auto r = Run(g, "ibv_devinfo -v");
	ASSERT_TRUE(Ok(r));
	EXPECT_EQ(Field(r.output, "hca_id"), "mthca0") << r.output;
	EXPECT_FALSE(Field(r.output, "fw_ver").empty()) << r.output;
	EXPECT_EQ(Field(r.output, "node_guid"), g.node_guid_string()) << r.output;
	EXPECT_EQ(Field(r.output, "vendor_id"), "0x02c9") << r.output;
	EXPECT_EQ(Field(r.output, "vendor_part_id"), "25218") << r.output;
	EXPECT_NE(r.output.find("port:\t1"), std::string::npos) << r.output;
	std::string state = Field(r.output, "state");
	EXPECT_TRUE(state.starts_with("PORT_DOWN") || state.starts_with("PORT_INIT") ||
		    state.starts_with("PORT_ARMED") || state.starts_with("PORT_ACTIVE"))
		<< "state: '" << state << "'\n" << r.output;
}

TEST_F(MthcaProbe, NoMthcaWarnings)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca")));
	EXPECT_EQ(MthcaWarnings(g), "");
}

// ---------------------------------------------------------------------------
// Reloads, then the interrupts, in the same guest (one boot for the suite).
TEST_F(MthcaProbe, TenReloads)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca && modprobe ib_uverbs")));
	auto r = Run(g,
		     "for i in $(seq 1 10); do "
		     "  rmmod ib_mthca || { echo \"round $i: rmmod failed\"; exit 1; }; "
		     "  [ ! -e /sys/class/infiniband/mthca0 ] || { echo \"round $i: mthca0 still there\"; exit 2; }; "
		     "  modprobe ib_mthca || { echo \"round $i: modprobe failed\"; exit 3; }; "
		     "  [ -d /sys/class/infiniband/mthca0 ] || { echo \"round $i: no mthca0\"; exit 4; }; "
		     "done; echo rounds=$i",
		     900s);
	ASSERT_TRUE(Ok(r)) << "dmesg:\n" << Run(g, "dmesg | tail -40").output;
	EXPECT_EQ(r.output, "rounds=10\n");
	auto d = Run(g, "ibv_devinfo");
	ASSERT_TRUE(Ok(d));
	EXPECT_EQ(Field(d.output, "hca_id"), "mthca0") << d.output;
	EXPECT_EQ(Field(d.output, "node_guid"), g.node_guid_string()) << d.output;
	EXPECT_EQ(MthcaWarnings(g), "");
}

// ---------------------------------------------------------------------------
// /proc/interrupts lines of ib_mthca: name -> count (all CPUs).
std::map<std::string, unsigned long> MthcaIrqs(Guest &g)
{
	std::map<std::string, unsigned long> irqs;
	auto r = g.exec("cat /proc/interrupts", 60s);
	std::istringstream in(r.output);
	std::string line;
	while (std::getline(in, line)) {
		if (line.find("ib_mthca") == std::string::npos)
			continue;
		std::istringstream ls(line);
		std::string tok;
		ls >> tok;  // "24:"
		unsigned long sum = 0;
		while (ls >> tok && !tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])))
			sum += std::stoul(tok);
		// The names are at the end; take the ib_mthca one.
		std::string name = line.substr(line.find("ib_mthca"));
		auto comma = name.find(',');
		if (comma != std::string::npos)
			name.resize(comma);
		irqs[name] += sum;
	}
	return irqs;
}

std::string Show(const std::map<std::string, unsigned long> &m)
{
	std::string s;
	for (auto &[k, v] : m)
		s += "  " + k + ": " + std::to_string(v) + "\n";
	return s.empty() ? "  (no ib_mthca interrupt lines)\n" : s;
}

unsigned long Total(const std::map<std::string, unsigned long> &m)
{
	unsigned long t = 0;
	for (auto &[k, v] : m)
		t += v;
	return t;
}

unsigned long Count(const std::map<std::string, unsigned long> &m, const std::string &prefix)
{
	for (auto &[k, v] : m)
		if (k.starts_with(prefix))
			return v;
	return 0;
}

TEST_F(MthcaProbe, MsiXVectorsCount)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca && modprobe ib_uverbs")));
	auto before = MthcaIrqs(g);
	bool has_cmd = false, has_async = false, has_comp = false;
	for (auto &[k, v] : before) {
		has_cmd |= k.starts_with("ib_mthca-cmd@pci:");
		has_async |= k.starts_with("ib_mthca-async@pci:");
		has_comp |= k.starts_with("ib_mthca-comp@pci:");
	}
	EXPECT_TRUE(has_cmd && has_async && has_comp) << "MSI-X vectors:\n" << Show(before);
	ASSERT_TRUE(Ok(Run(g, "ibv_devinfo -v >/dev/null && ibv_devinfo -v >/dev/null")));
	auto after = MthcaIrqs(g);
	EXPECT_GT(Total(after), Total(before)) << "before:\n" << Show(before) << "after:\n" << Show(after);
	// MAD_IFC commands complete through the command EQ in event mode.
	EXPECT_GT(Count(after, "ib_mthca-cmd@"), Count(before, "ib_mthca-cmd@"))
		<< "before:\n" << Show(before) << "after:\n" << Show(after);
}

TEST_F(MthcaProbe, IntxLineCounts)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_uverbs; rmmod ib_mthca 2>/dev/null; modprobe ib_mthca msi_x=0")))
		<< Run(g, "dmesg | tail -30").output;
	ASSERT_TRUE(Ok(Run(g, "test -d /sys/class/infiniband/mthca0")));
	auto before = MthcaIrqs(g);
	ASSERT_EQ(before.size(), 1u) << Show(before);
	EXPECT_TRUE(before.begin()->first.starts_with("ib_mthca@pci:")) << Show(before);
	auto r = Run(g, "ibv_devinfo -v");
	ASSERT_TRUE(Ok(r));
	EXPECT_EQ(Field(r.output, "hca_id"), "mthca0") << r.output;
	EXPECT_EQ(Field(r.output, "node_guid"), g.node_guid_string()) << r.output;
	auto after = MthcaIrqs(g);
	EXPECT_GT(Total(after), Total(before)) << "before:\n" << Show(before) << "after:\n" << Show(after);
	EXPECT_EQ(MthcaWarnings(g), "");
}

}  // namespace
}  // namespace iblab::vmtest
