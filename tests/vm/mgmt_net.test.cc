// SPDX-License-Identifier: GPL-2.0
// The lab's management network (Documentation/lab.md, "The management
// network"): two guests reach each other by name over their virtio-net NICs
// through the lab's hub, move 10 MB over TCP intact, and reach nothing else.
#include <filesystem>
#include <fstream>
#include <regex>

#include "iblab/initramfs.h"
#include "vm_fixture.h"

namespace fs = std::filesystem;

namespace iblab::vmtest {
namespace {

class MgmtNet : public VmSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o;
		o.guests = {{"vm0", Stack::Upstream}, {"vm1", Stack::Upstream}};
		o.hca = false;  // the network does not depend on the IB stack
		StartLab(o, "MgmtNet");
	}
	static void TearDownTestSuite() { StopLab(); }

	static uint64_t hub_bytes_to(const std::string &name)
	{
		for (const auto &s : lab_->mgmt_stats())
			if (s.name == name)
				return s.tx_bytes;
		return 0;
	}
};

TEST_F(MgmtNet, AddressesAndNames)
{
	for (const char *n : {"vm0", "vm1"}) {
		Guest &g = guest(n);
		auto r = Run(g, "for d in /sys/class/net/*; do echo ${d##*/} $(cat $d/address); done; "
				"ip -o -4 addr show scope global; getent hosts vm0 vm1");
		ASSERT_TRUE(Ok(r));
		EXPECT_NE(r.output.find("eth0 " + g.mgmt_mac() + "\n"), std::string::npos) << r.output;
		EXPECT_TRUE(std::regex_search(r.output, std::regex("eth0 +inet " + g.mgmt_ip() + "/24 "))) << r.output;
		EXPECT_TRUE(std::regex_search(r.output, std::regex("\n192\\.168\\.77\\.1 +vm0\n"))) << r.output;
		EXPECT_TRUE(std::regex_search(r.output, std::regex("\n192\\.168\\.77\\.2 +vm1\n"))) << r.output;
	}
	EXPECT_EQ(guest("vm0").mgmt_ip(), "192.168.77.1");
	EXPECT_EQ(guest("vm1").mgmt_ip(), "192.168.77.2");
}

TEST_F(MgmtNet, PingBothWays)
{
	auto a = Run(guest("vm0"), "ping -c 3 -W 5 vm1");
	EXPECT_TRUE(Ok(a));
	EXPECT_NE(a.output.find("3 received"), std::string::npos) << a.output;
	auto b = Run(guest("vm1"), "ping -c 3 -W 5 vm0");
	EXPECT_TRUE(Ok(b));
	EXPECT_NE(b.output.find("3 received"), std::string::npos) << b.output;
	// A guest reaches its own address too (lo is up).
	EXPECT_TRUE(Ok(Run(guest("vm0"), "ping -c 1 -W 5 vm0")));
}

// 10 MiB of random data from vm0 to vm1 over TCP (busybox nc listening, bash
// /dev/tcp sending), compared by SHA-256; the hub's counters show that it
// went through the hub.
TEST_F(MgmtNet, TcpTransferKeepsData)
{
	const uint64_t size = 10 * 1024 * 1024;
	auto gen = Run(guest("vm0"), "head -c " + std::to_string(size) + " /dev/urandom > /tmp/blob && sha256sum < /tmp/blob");
	ASSERT_TRUE(Ok(gen));
	uint64_t before = hub_bytes_to("vm1");
	auto server = guest("vm1").start_exec(
		"busybox nc -l -p 5001 < /dev/null > /tmp/recv && stat -c %s /tmp/recv && sha256sum < /tmp/recv", 300s);
	auto t0 = std::chrono::steady_clock::now();
	auto client = Run(guest("vm0"),
			  "exec bash -c 'for i in $(seq 20); do cat /tmp/blob 2>/dev/null > /dev/tcp/vm1/5001 && exit 0; "
			  "sleep 0.5; done; exit 1'",
			  180s);
	if (!client.ok())
		guest("vm1").kill(server->id());
	ASSERT_TRUE(Ok(client)) << "vm0 could not send to vm1:5001";
	ASSERT_TRUE(server->wait_for(120s)) << "the receiver did not finish";
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	auto got = server->result();
	ASSERT_TRUE(Ok(got));
	EXPECT_EQ(got.output, std::to_string(size) + "\n" + gen.output);
	uint64_t through_hub = hub_bytes_to("vm1") - before;
	EXPECT_GE(through_hub, size) << lab_->run_dir();
	printf("mgmt net: %llu bytes vm0 -> vm1 over TCP in %.1f s (%.1f MB/s); %llu bytes of frames through the hub\n",
	       static_cast<unsigned long long>(size), secs, size / secs / 1e6,
	       static_cast<unsigned long long>(through_hub));
}

// The segment leads nowhere: QEMU has no other network backend, the guest
// has no default route and no other NIC, and even a route it adds itself
// finds nothing behind the hub (10.0.2.2 is user-mode networking's host).
TEST_F(MgmtNet, NoWayToTheHostNetwork)
{
	for (Guest *g : lab_->guests()) {
		std::string cmd = read_file(g->dir() + "/qemu.cmd");
		std::smatch m;
		std::string rest = cmd;
		int netdevs = 0;
		while (std::regex_search(rest, m, std::regex("\n-(netdev|nic|net)\n([^\n]*)\n"))) {
			if (m[1] == "netdev") {
				netdevs++;
				EXPECT_TRUE(std::regex_match(m[2].str(), std::regex("dgram,id=mgmt,local\\.type=unix,local\\.path=" +
										     lab_->mgmt_dir() + "/[^,]*,remote\\.type=unix,"
										     "remote\\.path=" + lab_->mgmt_dir() + "/.*")))
					<< m[2];
			} else {
				EXPECT_EQ(m[2], "none") << "-" << m[1];
			}
			rest = m.suffix();
		}
		EXPECT_EQ(netdevs, 1) << cmd;

		auto r = Run(*g, "ls /sys/class/net; ip route; ip -6 route");
		ASSERT_TRUE(Ok(r));
		EXPECT_EQ(r.output, "eth0\nlo\n192.168.77.0/24 dev eth0 proto kernel scope link src " + g->mgmt_ip() + " \n");
		auto get = Run(*g, "ip route get 10.0.2.2");
		EXPECT_NE(get.status, 0);
		EXPECT_NE(get.output.find("unreachable"), std::string::npos) << get.output;
	}
	Guest &g = guest("vm0");
	auto r = Run(g, "ip route add default dev eth0 && ping -c 2 -W 2 10.0.2.2; st=$?; ip route del default; exit $st");
	EXPECT_NE(r.status, 0) << r.output;
	EXPECT_NE(r.output.find("0 received"), std::string::npos) << r.output;
}

TEST_F(MgmtNet, BootTime)
{
	for (Guest *g : lab_->guests())
		printf("guest %s boot-to-shell with the management NIC: %.1f s\n", g->name().c_str(), g->boot_seconds());
}

}  // namespace
}  // namespace iblab::vmtest
