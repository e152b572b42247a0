// SPDX-License-Identifier: GPL-2.0
// Issue 12, slices 1 to 3: our ib_ipoib in datagram and connected mode,
// with P_Key children and ethtool,
// against upstream's, on the debug kernel lane (KASAN, lockdep, kmemleak
// on our guests).
//
//   OursIpoib  vm0 upstream (the host's stock kernel: ib_ipoib, OpenSM),
//              vm1 and vm2 ours (ib_mthca, ib_umad, ib_sa, ib_ipoib), all
//              on one switch ("star:3"); ib0 is 10.80.0.<n+1>/24 on vm<n>.
//
//   Ping4AllPairs  every ordered pair pings the other's IPv4 address with
//       a pattern of its own (ping -p): 56 bytes and 3000 bytes (above
//       the datagram MTU of 2044, so fragmented both ways); every reply
//       counted and ping reporting no wrong byte (iputils checks the
//       pattern of each reply).
//   Ping6LinkLocalAllPairs  the same with ping -6 to each fe80:: address
//       (neighbour discovery through the solicited-node groups).
//   SysfsAsUpstream  mode, pkey, umcast, type, addr_len, mtu and broadcast
//       read on ours as on the upstream guest; ours' address has flags 0x80
//       (connected mode offered, as upstream's) and its port GID; writing
//       "connected\n" and "datagram\n" to mode switches the mode and the
//       MTU (65520, 2044) on ours as on upstream.
//   FlapAndReloadUnderPing  ip link set ib0 down/up three times under a
//       ping from vm1, then ib_ipoib removed from vm1 while vm2 and vm0
//       ping it and it pings them, loaded again: ping works in both
//       directions (the peers forget vm1's old hardware address first: its
//       QPN changed).
//   PortDownUpRejoins  the emulator takes vm2's link down (the carrier
//       goes off) and up (OpenSM makes the port ACTIVE): the groups are
//       joined again and vm2 pings vm0 and vm1, vm1 pings vm2 over IPv6.
//   ConnectedModeAllPairs  all three in connected mode, MTU 65520: every
//       ordered pair pings with 60000 bytes and fragmentation forbidden
//       (-M do: only an RC connection carries it), pattern checked; ours
//       list the connections with each peer both ways as up, and vm0
//       (rdma resource show qp) holds RC QPs of ib_ipoib in RTS whose
//       remote QPs are the active and passive ones ours list; vm2's ib0 flaps
//       under connected traffic (its connections close with DREQs, new
//       ones carry the next pings), then, quiet, closes its passive
//       connections after 4 s idle (cm_rx_idle_secs) and vm1 its active
//       one to vm2 on that DREQ, and a new ping connects again; back to
//       datagram, ours drop their
//       active connections and 3000-byte pings work.
//   PkeyChildren  (the setup restarts OpenSM with partitions 0x8001, all
//       three, and 0x8002, vm0 and vm1) create_child answers and the
//       child's sysfs files as upstream's; ib0.8001 pings in every pair;
//       ib0.8002 by ip link add on ours: vm0 and vm1 ping, vm2 (no member)
//       has no carrier; nothing crosses partitions; ethtool -i/-S.
//   UnloadsWithoutLeaks  ib_ipoib and the rest of ours unload from vm1 and
//       vm2 and kmemleak finds nothing (the fixture checks dmesg after
//       every test: KASAN, lockdep, WARNING, ...).
#include <algorithm>
#include <functional>
#include <future>
#include <regex>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const char *const kNames[3] = {"vm0", "vm1", "vm2"};

std::string Ip4(int i)
{
	return "10.80.0." + std::to_string(i + 1);
}

// ib0 up with its address, then a wait (up to 60 s) for the carrier and
// for IPv6 DAD to finish on the link-local address.
std::string IfUp(int i)
{
	return "ip link set lo up && ip link set ib0 up && ip addr add " + Ip4(i) +
	       "/24 dev ib0 && end=$(($(date +%s) + 60)); "
	       "until ip link show ib0 | grep -q LOWER_UP && ip -6 addr show dev ib0 scope link | grep -q inet6 && "
	       "! ip -6 addr show dev ib0 | grep -q tentative; do "
	       "if [ $(date +%s) -ge $end ]; then ip addr show ib0; exit 1; fi; sleep 0.5; done";
}

class OursIpoib : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		StartWithSm(MixedOptions({{"vm0", Stack::Upstream}, {"vm1", OursRole()}, {"vm2", OursRole()}},
					 "star:3"),
			    "OursIpoib", "vm0");
		if (!lab_ || !setup_error_.empty())
			return;
		setup_error_ = StartPartitions();
		if (!setup_error_.empty())
			return;
		setup_error_ = ExecOnAll(
			lab_->guests(),
			[](Guest &g) { return "modprobe ib_ipoib && " + IfUp(g.index()); }, "ib0 up", 120s);
		if (!setup_error_.empty())
			return;
		// Ours is the out-of-tree module (taint O) from updates/.
		for (Guest *g : lab_->guests()) {
			auto r = g->exec("modinfo -n ib_ipoib; grep '^ib_ipoib ' /proc/modules", 30s);
			bool ours = r.output.find("/updates/") != std::string::npos &&
				    r.output.find("(O") != std::string::npos;
			if (!r.ok() || ours != (g->stack() == Stack::Ours)) {
				setup_error_ = g->name() + ": not the expected ib_ipoib: " + r.output;
				return;
			}
		}
		for (int i = 0; i < 3; ++i) {
			auto r = guest(kNames[i]).exec(
				"ip -6 addr show dev ib0 scope link | sed -n 's/.*inet6 \\(fe80[^/]*\\).*/\\1/p'", 30s);
			if (!r.ok() || r.output.find("fe80") != 0) {
				setup_error_ = std::string(kNames[i]) + ": no link-local address: " + r.output;
				return;
			}
			ll_[i] = r.output.substr(0, r.output.find('\n'));
		}
	}

	// OpenSM in vm0 again, now with /tmp/partitions.conf (-P): the default
	// partition, 0x8001 with the three ports as full members and 0x8002
	// with vm0's and vm1's only (by port GUID). Then a wait until every
	// port's P_Key table holds what it must (ours read theirs from our
	// core's sysfs, as upstream's).
	static std::string StartPartitions()
	{
		std::string guid[2];
		for (int i = 0; i < 2; ++i) {
			auto r = guest(kNames[i]).exec("cat /sys/class/infiniband/mthca0/ports/1/gids/0", 30s);
			std::smatch m;
			if (!r.ok() || !std::regex_search(r.output, m, std::regex(
					"^fe80(:0000){3}:([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{4})")))
				return std::string(kNames[i]) + ": no port GID: " + r.output;
			guid[i] = "0x" + m[2].str() + m[3].str() + m[4].str() + m[5].str();
		}
		const std::string conf = "Default=0x7fff, ipoib : ALL=full ;\n"
					 "P8001=0x0001, ipoib : ALL=full ;\n"
					 "P8002=0x0002, ipoib : " + guid[0] + "=full, " + guid[1] + "=full ;\n";
		auto r = guest("vm0").exec("printf '" + conf + "' > /tmp/partitions.conf && kill $(pidof opensm); "
					   "for i in $(seq 1 30); do pidof opensm >/dev/null || break; sleep 0.3; done; "
					   "opensm -P /tmp/partitions.conf -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &",
					   60s);
		if (!r.ok())
			return "opensm with partitions: " + r.output;
		for (int i = 0; i < 3; ++i) {
			std::string want = i < 2 ? "0x8001 0x8002" : "0x8001";
			auto w = guest(kNames[i]).exec(
				"end=$(($(date +%s) + 90)); until k=$(cat /sys/class/infiniband/mthca0/ports/1/pkeys/* | "
				"grep -E '^0x800[12]$' | sort | xargs) && [ \"$k\" = '" + want + "' ] && "
				"grep -q ACTIVE /sys/class/infiniband/mthca0/ports/1/state; do "
				"[ $(date +%s) -ge $end ] && { echo \"pkeys: $k\"; exit 1; }; sleep 0.5; done",
				120s);
			if (!w.ok())
				return std::string(kNames[i]) + ": P_Key table: " + w.output + "\nopensm log:\n" +
				       guest("vm0").exec("tail -25 /tmp/opensm.log", 30s).output;
		}
		return "";
	}

	// A ping from vm<from> to `dst` whose every reply must come back
	// intact: first up to 10 single tries (neighbour and path lookups),
	// then `count` echoes with pattern `pattern`, in one exec (each costs
	// a second or so on the debug kernel). "" on success, else what went
	// wrong.
	static std::string PingChecked(int from, const std::string &dst, int size, const std::string &pattern,
				       int count = 3, bool v6 = false, const std::string &extra = "")
	{
		const std::string ping = std::string("ping ") + (v6 ? "-6 " : "") + extra + "-s " +
					 std::to_string(size) + " ";
		Guest &g = guest(kNames[from]);
		auto r = g.exec("ok=0; for i in $(seq 1 10); do " + ping + "-c 1 -W 2 " + dst +
					" >/dev/null 2>&1 && ok=1 && break; done; [ $ok = 1 ] || { echo never answered; "
					"exit 1; }; " +
					ping + "-c " + std::to_string(count) + " -i 0.2 -W 3 -p " + pattern + " " + dst +
					" 2>&1",
				90s);
		std::string what = std::string(kNames[from]) + " -> " + dst + " (" + std::to_string(size) + " bytes):\n" +
				   r.output;
		if (!r.ok())
			return "ping failed: " + what;
		if (r.output.find("PATTERN: 0x" + pattern) == std::string::npos)
			return "no pattern line: " + what;
		if (r.output.find(std::to_string(count) + " received") == std::string::npos)
			return "replies missing: " + what;
		if (r.output.find("wrong data byte") != std::string::npos || r.output.find("DUP!") != std::string::npos)
			return "replies not intact: " + what;
		std::regex reply(std::to_string(size + 8) + " bytes from [^\n]*icmp_seq=");
		auto n = std::distance(std::sregex_iterator(r.output.begin(), r.output.end(), reply),
				       std::sregex_iterator());
		if (n != count)
			return "expected " + std::to_string(count) + " full-size replies, got " + std::to_string(n) +
			       ": " + what;
		return "";
	}

	// Every guest pings the two others with `one(from, to)` at once (the
	// guests are separate QEMU processes); returns the errors, "" if none.
	static std::string AllPairs(const std::function<std::string(int, int)> &one)
	{
		std::vector<std::future<std::string>> runs;
		for (int a = 0; a < 3; ++a)
			runs.push_back(std::async(std::launch::async, [a, &one] {
				std::string err;
				for (int b = 0; b < 3; ++b)
					if (a != b)
						err += one(a, b);
				return err;
			}));
		std::string err;
		for (auto &f : runs)
			err += f.get();
		return err;
	}

	static std::string Pattern(int from, int to, int salt)
	{
		char buf[16];
		std::snprintf(buf, sizeof(buf), "%02x%02x%02x%02x", 0xa0 + from, 0xb0 + to, 0x5a ^ salt, 0xc3);
		return buf;
	}

	static inline std::string ll_[3];
};

TEST_F(OursIpoib, Ping4AllPairs)
{
	EXPECT_EQ(AllPairs([](int a, int b) {
			  return PingChecked(a, Ip4(b), 56, Pattern(a, b, 56)) +
				 PingChecked(a, Ip4(b), 3000, Pattern(a, b, 3000 & 0xff));
		  }),
		  "");
}

TEST_F(OursIpoib, Ping6LinkLocalAllPairs)
{
	EXPECT_EQ(AllPairs([](int a, int b) { return PingChecked(a, ll_[b] + "%ib0", 200, Pattern(a, b, 6), 3, true); }),
		  "");
}

TEST_F(OursIpoib, SysfsAsUpstream)
{
	const std::string read = "cd /sys/class/net/ib0 && for f in mode pkey umcast type addr_len mtu broadcast; do "
				 "echo \"$f=$(cat $f)\"; done";
	// The mode switch and the MTU it sets, then back; the same script on
	// upstream's vm0 gives what ours must.
	const std::string modes = "cd /sys/class/net/ib0 && echo datagram > mode && echo datagram=$?; "
				  "echo connected > mode; echo connected=$?; cat mode mtu; "
				  "echo -n connected 2>/dev/null > mode; echo bare=$?; "
				  "echo datagram > mode; echo datagram=$?; cat mode mtu; "
				  "echo 1 > umcast && cat umcast && echo 0 > umcast && cat umcast";
	// One exec per guest (each costs a second or two on the debug
	// kernel): the files, the address and port GID, the mode switches,
	// the files again.
	const std::string script = read + "; echo ---; cat /sys/class/net/ib0/address "
					  "/sys/class/infiniband/mthca0/ports/1/gids/0; echo ---; " +
				   modes + "; echo ---; " + read;
	auto parts = [&](Guest &g) {
		auto r = Run(g, script);
		EXPECT_TRUE(Ok(r)) << g.name();
		std::vector<std::string> out;
		size_t at = 0;
		for (size_t sep; (sep = r.output.find("---\n", at)) != std::string::npos; at = sep + 4)
			out.push_back(r.output.substr(at, sep - at));
		out.push_back(r.output.substr(at));
		out.resize(4);
		return out;
	};
	auto up = parts(guest("vm0"));
	EXPECT_NE(up[0].find("mode=datagram\n"), std::string::npos) << up[0];
	EXPECT_NE(up[0].find("pkey=0xffff\n"), std::string::npos) << up[0];
	EXPECT_EQ(up[1].substr(0, 3), "80:") << "upstream offers connected mode: " << up[1];
	EXPECT_EQ(up[2], "datagram=0\nconnected=0\nconnected\n65520\nbare=1\ndatagram=0\ndatagram\n2044\n1\n0\n");
	EXPECT_EQ(up[3], up[0]);
	for (const char *name : {"vm1", "vm2"}) {
		auto ours = parts(guest(name));
		EXPECT_EQ(ours[0], up[0]) << name << " reads other sysfs values than upstream's vm0";
		std::smatch m;
		ASSERT_TRUE(std::regex_match(ours[1], m,
					     std::regex("([0-9a-f]{2}):([0-9a-f:]{8}):([0-9a-f:]{47})\n([0-9a-f:]{39})\n")))
			<< ours[1];
		EXPECT_EQ(m[1], "80") << "ours must offer connected mode, as upstream: " << ours[1];
		std::string gid = m[3];
		gid.erase(std::remove(gid.begin(), gid.end(), ':'), gid.end());
		std::string port_gid = m[4];
		port_gid.erase(std::remove(port_gid.begin(), port_gid.end(), ':'), port_gid.end());
		EXPECT_EQ(gid, port_gid) << ours[1];
		EXPECT_EQ(ours[2], up[2]) << name << ": the mode switches";
		EXPECT_EQ(ours[3], up[0]) << name << " after the mode switches";
	}
}

TEST_F(OursIpoib, FlapAndReloadUnderPing)
{
	Guest &ours = guest("vm1");
	auto bg = ours.start_exec("ping -i 0.2 -w 40 " + Ip4(0) + " >/dev/null 2>&1; true", 60s);
	for (int i = 0; i < 3; ++i) {
		auto r = Run(ours, "ip link set ib0 down && sleep 1 && ip link set ib0 up && "
				   "end=$(($(date +%s) + 30)); until ip link show ib0 | grep -q LOWER_UP; do "
				   "[ $(date +%s) -ge $end ] && exit 1; sleep 0.3; done",
			     60s);
		EXPECT_TRUE(Ok(r)) << "flap " << i;
		EXPECT_EQ(PingChecked(1, Ip4(0), 56, Pattern(1, 0, i), 2), "") << "after flap " << i;
	}

	// Traffic both ways while ib_ipoib goes away.
	auto in2 = guest("vm2").start_exec("ping -i 0.1 -w 20 " + Ip4(1) + " >/dev/null 2>&1; true", 60s);
	auto in0 = guest("vm0").start_exec("ping -i 0.1 -w 20 " + Ip4(1) + " >/dev/null 2>&1; true", 60s);
	std::this_thread::sleep_for(2s);
	auto rm = Run(ours, "rmmod ib_ipoib && ! test -e /sys/class/net/ib0", 90s);
	EXPECT_TRUE(Ok(rm));
	auto load = Run(ours, "modprobe ib_ipoib && " + IfUp(1), 120s);
	ASSERT_TRUE(Ok(load));
	for (Guest *peer : {&guest("vm0"), &guest("vm2")})
		EXPECT_TRUE(Ok(Run(*peer, "ip neigh flush dev ib0")));
	EXPECT_EQ(PingChecked(1, Ip4(0), 3000, Pattern(1, 0, 9)), "");
	EXPECT_EQ(PingChecked(1, Ip4(2), 56, Pattern(1, 2, 9)), "");
	EXPECT_EQ(PingChecked(0, Ip4(1), 56, Pattern(0, 1, 9)), "");
	EXPECT_EQ(PingChecked(2, Ip4(1), 3000, Pattern(2, 1, 9)), "");
	bg->wait_for(45s);
	in2->wait_for(25s);
	in0->wait_for(25s);
}

// The emulator takes vm2's link down and up: PORT_ERR turns the carrier
// off, PORT_ACTIVE (OpenSM brings the port back) flushes and rejoins, and
// traffic resumes without operator action.
TEST_F(OursIpoib, PortDownUpRejoins)
{
	Guest &g = guest("vm2");
	std::string r = lab_->fabric("link vm2:1 down");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	lab_->mark("vm2's link is down");
	EXPECT_TRUE(Ok(Run(g, "end=$(($(date +%s) + 30)); while ip link show ib0 | grep -q LOWER_UP; do "
			      "[ $(date +%s) -ge $end ] && exit 1; sleep 0.3; done",
			   60s)))
		<< "the carrier stayed on with the port down";
	r = lab_->fabric("link vm2:1 up");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	ASSERT_TRUE(Ok(WaitPortActive(g, 120))) << "OpenSM did not bring the port back";
	EXPECT_TRUE(Ok(Run(g, "end=$(($(date +%s) + 60)); until ip link show ib0 | grep -q LOWER_UP; do "
			      "[ $(date +%s) -ge $end ] && exit 1; sleep 0.3; done",
			   90s)))
		<< "no carrier: the broadcast group was not joined again";
	lab_->mark("vm2's ib0 has its carrier again");
	EXPECT_EQ(PingChecked(2, Ip4(0), 3000, Pattern(2, 0, 7)), "");
	EXPECT_EQ(PingChecked(2, Ip4(1), 56, Pattern(2, 1, 7)), "");
	EXPECT_EQ(PingChecked(1, ll_[2] + "%ib0", 200, Pattern(1, 2, 7), 3, true), "");
}

// Connected mode (RFC 4755) in all pairings. 60000-byte echoes with
// fragmentation forbidden pass only over RC (the UD MTU is 2044).
TEST_F(OursIpoib, ConnectedModeAllPairs)
{
	std::string qpn[3];
	for (int i = 0; i < 3; ++i) {
		Guest &g = guest(kNames[i]);
		auto r = Run(g, "cd /sys/class/net/ib0 && echo connected > mode && ip link set ib0 mtu 65520 && "
				"cat mode mtu address");
		ASSERT_TRUE(Ok(r)) << kNames[i];
		ASSERT_EQ(r.output.substr(0, 16), "connected\n65520\n") << kNames[i] << ": " << r.output;
		// The UD QPN, bytes 1-3 of the address, as ours lists it.
		std::string a = r.output.substr(16);
		qpn[i] = "0x" + a.substr(3, 2) + a.substr(6, 2) + a.substr(9, 2);
	}
	lab_->mark("all three in connected mode");
	EXPECT_EQ(AllPairs([](int a, int b) {
			  return PingChecked(a, Ip4(b), 60000, Pattern(a, b, 0x60), 3, false, "-M do ");
		  }),
		  "");

	// Ours list each peer's connections, both ways, up; upstream's vm0
	// holds, for each of ours, an RC QP of ib_ipoib in RTS whose remote
	// QP is our passive one (its sends) and one whose remote is our
	// active one (its receives).
	auto up_qps = Run(guest("vm0"), "rdma resource show qp");
	ASSERT_TRUE(Ok(up_qps));
	std::set<unsigned long> up_remotes;
	std::regex up_rc("lqpn [0-9]+ rqpn ([0-9]+) type RC state RTS[^\n]*comm \\[ib_ipoib\\]");
	for (auto it = std::sregex_iterator(up_qps.output.begin(), up_qps.output.end(), up_rc);
	     it != std::sregex_iterator(); ++it)
		up_remotes.insert(std::stoul((*it)[1]));
	for (int i : {1, 2}) {
		auto r = Run(guest(kNames[i]), "cat /sys/class/net/ib0/cm_connections");
		ASSERT_TRUE(Ok(r));
		for (int peer = 0; peer < 3; ++peer) {
			if (peer == i)
				continue;
			std::smatch tx, rx;
			EXPECT_TRUE(std::regex_search(
				r.output, tx, std::regex("(^|\n)tx [0-9a-f:]+ qpn " + qpn[peer] + " rc 0x([0-9a-f]{6}) up\n")))
				<< kNames[i] << " has no active connection to " << kNames[peer] << ":\n" << r.output;
			EXPECT_TRUE(std::regex_search(
				r.output, rx, std::regex("(^|\n)rx qpn " + qpn[peer] + " rc 0x([0-9a-f]{6}) up\n")))
				<< kNames[i] << " has no passive connection from " << kNames[peer] << ":\n" << r.output;
			if (peer != 0 || tx.empty() || rx.empty())
				continue;
			EXPECT_TRUE(up_remotes.count(std::stoul(tx[2], nullptr, 16)))
				<< "vm0 has no RC QP in RTS connected to " << kNames[i] << "'s active QP:\n"
				<< r.output << up_qps.output;
			EXPECT_TRUE(up_remotes.count(std::stoul(rx[2], nullptr, 16)))
				<< "vm0 has no RC QP in RTS connected to " << kNames[i] << "'s passive QP:\n"
				<< r.output << up_qps.output;
		}
	}

	// vm2's ib0 down and up under connected traffic from vm0 and vm1: its
	// connections close (DREQs both ways) and new ones carry the pings.
	// It comes back closing passive connections idle for 4 s (the period
	// of the idle check is set when ib0 comes up).
	EXPECT_TRUE(Ok(Run(guest("vm2"), "echo 4 > /sys/module/ib_ipoib/parameters/cm_rx_idle_secs")));
	auto in0 = guest("vm0").start_exec("ping -i 0.2 -s 30000 -w 12 " + Ip4(2) + " >/dev/null 2>&1; true", 30s);
	auto in1 = guest("vm1").start_exec("ping -i 0.2 -s 30000 -w 12 " + Ip4(2) + " >/dev/null 2>&1; true", 30s);
	std::this_thread::sleep_for(2s);
	EXPECT_TRUE(Ok(Run(guest("vm2"), "ip link set ib0 down && sleep 1 && ip link set ib0 up && "
					 "end=$(($(date +%s) + 30)); until ip link show ib0 | grep -q LOWER_UP; do "
					 "[ $(date +%s) -ge $end ] && exit 1; sleep 0.3; done",
			   60s)));
	lab_->mark("vm2's ib0 flapped in connected mode");
	EXPECT_EQ(PingChecked(2, Ip4(0), 60000, Pattern(2, 0, 0x62), 2, false, "-M do "), "");
	EXPECT_EQ(PingChecked(1, Ip4(2), 60000, Pattern(1, 2, 0x62), 2, false, "-M do "), "");
	in0->wait_for(25s);
	in1->wait_for(25s);

	// Quiet: vm2 closes its passive connections (DREQ), vm1 drops its
	// active one to vm2 on that DREQ, and the next ping connects again.
	EXPECT_TRUE(Ok(Run(guest("vm2"), "end=$(($(date +%s) + 20)); "
					 "while grep -q '^rx ' /sys/class/net/ib0/cm_connections; do "
					 "[ $(date +%s) -ge $end ] && { cat /sys/class/net/ib0/cm_connections; exit 1; }; "
					 "sleep 0.5; done",
			   60s)))
		<< "vm2 kept idle passive connections";
	EXPECT_TRUE(Ok(Run(guest("vm1"), "end=$(($(date +%s) + 10)); "
					 "while grep -q '^tx .* qpn " + qpn[2] + " ' /sys/class/net/ib0/cm_connections; do "
					 "[ $(date +%s) -ge $end ] && { cat /sys/class/net/ib0/cm_connections; exit 1; }; "
					 "sleep 0.3; done",
			   60s)))
		<< "vm1 kept its connection to vm2 after vm2's DREQ";
	EXPECT_EQ(PingChecked(1, Ip4(2), 60000, Pattern(1, 2, 0x63), 2, false, "-M do "), "");

	// Back to datagram: the MTU falls back, the active connections go,
	// and UD carries (fragmented) traffic again.
	for (int i = 0; i < 3; ++i) {
		auto r = Run(guest(kNames[i]), "cd /sys/class/net/ib0 && echo datagram > mode && cat mode mtu");
		ASSERT_TRUE(Ok(r));
		EXPECT_EQ(r.output, "datagram\n2044\n") << kNames[i];
	}
	for (int i : {1, 2}) {
		auto r = Run(guest(kNames[i]), "end=$(($(date +%s) + 20)); "
					       "while grep -q '^tx ' /sys/class/net/ib0/cm_connections; do "
					       "[ $(date +%s) -ge $end ] && { cat /sys/class/net/ib0/cm_connections; exit 1; }; "
					       "sleep 0.3; done");
		EXPECT_TRUE(Ok(r)) << kNames[i] << " kept active connections in datagram mode";
	}
	EXPECT_EQ(AllPairs([](int a, int b) { return PingChecked(a, Ip4(b), 3000, Pattern(a, b, 0x61), 2); }), "");
}

// P_Key children. ib0.8001 (create_child) on all three, 10.81.0.<n+1>;
// ib0.8002 on vm0 (create_child, upstream's) and on vm1 and vm2 (ip link
// add ... type ipoib, ours), 10.82.0.<n+1>: vm2 is no member of 0x8002.
std::string Ip81(int i)
{
	return "10.81.0." + std::to_string(i + 1);
}

std::string Ip82(int i)
{
	return "10.82.0." + std::to_string(i + 1);
}

// `dev` up with `addr`, then its carrier awaited for up to 60 s.
std::string ChildUp(const std::string &dev, const std::string &addr)
{
	return "ip link set " + dev + " up && ip addr add " + addr + "/24 dev " + dev +
	       " && end=$(($(date +%s) + 60)); until ip link show " + dev + " | grep -q LOWER_UP; do "
	       "if [ $(date +%s) -ge $end ]; then ip link show " + dev + "; exit 1; fi; sleep 0.3; done";
}

TEST_F(OursIpoib, PkeyChildren)
{
	// The refusals, the same script on upstream's vm0 and on ours: the
	// shell's message (its errno) for each create_child and delete_child.
	const std::string bad = "cd /sys/class/net; for v in 0 0x8000 0x10000 0xffff 0x8001 junk; do "
				"printf \"create $v: \"; bash -c \"echo $v > ib0/create_child\" 2>&1 | sed 's/.*: //'; echo; done; "
				"printf 'delete 0x1234: '; bash -c 'echo 0x1234 > ib0/delete_child' 2>&1 | sed 's/.*: //'; echo; "
				"ls ib0.8001/create_child 2>/dev/null; echo grandchild=$?; "
				"for f in pkey parent broadcast mode umcast; do echo \"$f=$(cat ib0.8001/$f)\"; done";
	std::string out[3];
	std::vector<std::future<void>> runs;
	for (int i = 0; i < 3; ++i)
		runs.push_back(std::async(std::launch::async, [i, &bad, &out] {
			Guest &g = guest(kNames[i]);
			auto r = Run(g, "echo 0x8001 > /sys/class/net/ib0/create_child && " + bad + " && " +
					ChildUp("ib0.8001", Ip81(i)));
			out[i] = r.output + (r.ok() ? "" : "FAILED\n");
		}));
	for (auto &f : runs)
		f.get();
	runs.clear();
	EXPECT_NE(out[0].find("create 0x8001: Name not unique on network\n"), std::string::npos) << out[0];
	EXPECT_NE(out[0].find("pkey=0x8001\nparent=ib0\nbroadcast=00:ff:ff:ff:ff:12:40:1b:80:01:"), std::string::npos)
		<< out[0];
	EXPECT_EQ(out[1], out[0]) << "vm1 answers create_child/delete_child other than upstream's vm0";
	EXPECT_EQ(out[2], out[0]) << "vm2 answers create_child/delete_child other than upstream's vm0";
	lab_->mark("ib0.8001 up on all three");

	EXPECT_EQ(AllPairs([](int a, int b) { return PingChecked(a, Ip81(b), 1000, Pattern(a, b, 0x81), 2); }), "");

	// 0x8002: rtnetlink on ours, sysfs on upstream's.
	for (int i = 0; i < 3; ++i)
		runs.push_back(std::async(std::launch::async, [i, &out] {
			Guest &g = guest(kNames[i]);
			std::string make = i == 0 ? "echo 0x8002 > /sys/class/net/ib0/create_child"
						  : "ip link add link ib0 name ib0.8002 type ipoib pkey 0x8002";
			// vm2 is no member: its child must stay without carrier.
			std::string up = i == 2 ? "ip link set ib0.8002 up && ip addr add " + Ip82(2) + "/24 dev ib0.8002"
						: ChildUp("ib0.8002", Ip82(i));
			auto r = Run(g, make + " && " + up + " && ip -d link show ib0.8002 | grep -o 'ipoib .*'");
			out[i] = r.output + (r.ok() ? "" : "FAILED\n");
		}));
	for (auto &f : runs)
		f.get();
	EXPECT_NE(out[0].find("ipoib pkey"), std::string::npos) << out[0];
	EXPECT_NE(out[0].find("0x8002"), std::string::npos) << out[0];
	EXPECT_EQ(out[1], out[0]) << "ip -d link show ib0.8002 on ours";
	EXPECT_EQ(out[2], out[0]) << "ip -d link show ib0.8002 on ours";
	lab_->mark("ib0.8002 on all three");
	// The members ping each other while the non-member's checks run.
	auto no_carrier = std::async(std::launch::async, [] {
		return Run(guest("vm2"), "! ip link show ib0.8002 | grep -q LOWER_UP || exit 1; "
					 "! ping -c 2 -W 1 " + Ip82(0) + " && ! ping -c 2 -W 1 " + Ip82(1) +
					 " && ! ip link show ib0.8002 | grep -q LOWER_UP");
	});
	auto vm0_to_vm2 = std::async(std::launch::async, [] { return Run(guest("vm0"), "! ping -c 2 -W 1 " + Ip82(2)); });
	EXPECT_EQ(PingChecked(0, Ip82(1), 1000, Pattern(0, 1, 0x82), 2), "");
	EXPECT_EQ(PingChecked(1, Ip82(0), 1000, Pattern(1, 0, 0x82), 2), "");
	auto nc = no_carrier.get();
	EXPECT_TRUE(Ok(nc)) << "vm2, no member of 0x8002, has a carrier on ib0.8002 or reached 0x8002: " << nc.output;
	EXPECT_TRUE(Ok(vm0_to_vm2.get())) << "vm0 reached vm2 over 0x8002";

	// Across partitions: vm2 sends on ib0.8001 (P_Key 0x8001) to vm1's
	// ib0.8002 QPN, the address put in by hand, for 10.83.0.2, which vm1
	// holds on ib0.8002 (it would answer over 0x8001): vm1's HCA must drop
	// it. The control: the same to vm1's ib0.8001 QPN for 10.83.0.3 (held
	// on ib0.8001) is answered.
	auto addr = Run(guest("vm1"), "ip addr add 10.83.0.2/32 dev ib0.8002 && ip addr add 10.83.0.3/32 dev ib0.8001 && "
				      "cat /sys/class/net/ib0.8002/address /sys/class/net/ib0.8001/address");
	ASSERT_TRUE(Ok(addr));
	std::string a82 = addr.output.substr(0, addr.output.find('\n'));
	std::string a81 = addr.output.substr(a82.size() + 1, a82.size());
	EXPECT_TRUE(Ok(Run(guest("vm2"), "ip route add 10.83.0.2/32 dev ib0.8001 && "
					 "ip neigh replace 10.83.0.2 lladdr " + a82 + " dev ib0.8001 nud permanent && "
					 "ip route add 10.83.0.3/32 dev ib0.8001 && "
					 "ip neigh replace 10.83.0.3 lladdr " + a81 + " dev ib0.8001 nud permanent")));
	EXPECT_TRUE(Ok(Run(guest("vm2"), "! ping -c 3 -i 0.3 -W 1 10.83.0.2")))
		<< "a packet of 0x8001 reached vm1's ib0.8002";
	EXPECT_EQ(PingChecked(2, "10.83.0.3", 56, Pattern(2, 1, 0x83)), "") << "the control";

	// ethtool on ours: the driver as upstream's, the HCA's PCI function,
	// counters that move with traffic.
	auto drv = [](int i) {
		return Run(guest(kNames[i]), "ethtool -i ib0 | grep -E '^(driver|bus-info):'; "
					     "echo pci=$(basename $(readlink /sys/class/infiniband/mthca0/device))").output;
	};
	std::string up_drv = drv(0);
	EXPECT_NE(up_drv.find("driver: ib_ipoib\n"), std::string::npos) << up_drv;
	std::string our_drv = drv(1);
	EXPECT_NE(our_drv.find("driver: ib_ipoib\n"), std::string::npos) << our_drv;
	std::smatch m;
	EXPECT_TRUE(std::regex_search(our_drv, m, std::regex("bus-info: (\\S+)\npci=(\\S+)\n")) && m[1] == m[2])
		<< our_drv;
	auto stats = [] {
		auto r = Run(guest("vm1"), "ethtool -S ib0.8001");
		std::map<std::string, unsigned long> v;
		std::regex line("\\s*(\\w+): (\\d+)");
		for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line);
		     it != std::sregex_iterator(); ++it)
			v[(*it)[1]] = std::stoul((*it)[2]);
		return v;
	};
	auto s0 = stats();
	EXPECT_EQ(PingChecked(0, Ip81(1), 56, Pattern(0, 1, 0x83), 5), "");
	auto s1 = stats();
	for (const char *k : {"rx_packets", "tx_packets", "rx_bytes", "tx_bytes"})
		EXPECT_GE(s1[k], s0[k] + 5) << k;
	EXPECT_TRUE(s0.count("multicast") && s0.count("cm_tx_connections")) << "ethtool -S names";

	// Children go: sysfs on vm0 and for vm1's ib0.8001, ip link del for
	// ours' ib0.8002. vm2 keeps ib0.8001 for UnloadsWithoutLeaks (rmmod
	// unregisters the child before ib0, under a ping from vm0).
	// (6.1 unregisters from a work item: vm0's children go a bit later.)
	EXPECT_TRUE(Ok(Run(guest("vm0"), "cd /sys/class/net && echo 0x8001 > ib0/delete_child && "
					 "echo 0x8002 > ib0/delete_child && for i in $(seq 1 50); do "
					 "test -e ib0.8001 || test -e ib0.8002 || exit 0; sleep 0.2; done; exit 1")));
	EXPECT_TRUE(Ok(Run(guest("vm1"), "cd /sys/class/net && echo 0x8001 > ib0/delete_child && "
					 "ip link del ib0.8002 && ! test -e ib0.8001 && ! test -e ib0.8002")));
	EXPECT_TRUE(Ok(Run(guest("vm2"), "ip link del ib0.8002 && ! test -e /sys/class/net/ib0.8002 && "
					 "test -e /sys/class/net/ib0.8001")));
}

// Last: every module of ours unloads, and kmemleak is clean.
TEST_F(OursIpoib, UnloadsWithoutLeaks)
{
	// Both guests at once: unload, then (debug kernel) a kmemleak scan,
	// which waits and scans for some 20 s in each.
	// vm2 still has ib0.8001 (PkeyChildren): vm0 pings it while it goes.
	auto bg = guest("vm0").start_exec("ping -i 0.1 -w 15 " + Ip81(2) + " >/dev/null 2>&1; true", 30s);
	std::vector<std::future<std::string>> runs;
	for (const char *name : {"vm1", "vm2"}) {
		Guest &g = guest(name);
		ASSERT_EQ(g.stack(), Stack::Ours) << name << " must run our stack";
		runs.push_back(std::async(std::launch::async, [&g] {
			auto u = g.exec("ip link set ib0 down && rmmod ib_ipoib && "
					"rmmod ib_umad ib_sa ib_cm ib_mthca ib_mad ib_core && ! grep -q '^ib_' /proc/modules",
					120s);
			if (!u.ok())
				return g.name() + ": unload: " + u.describe() + "\n" + u.output +
				       g.exec("lsmod", 30s).output;
			if (!g.has_kmemleak())
				return std::string();
			auto leaks = g.check_kmemleak();
			return leaks.empty() ? std::string()
					     : g.name() + ":\n" + format_hits(g.dir() + "/kmemleak.txt", leaks);
		}));
	}
	std::string err;
	for (auto &f : runs)
		err += f.get();
	EXPECT_EQ(err, "");
	bg->wait_for(20s);
	if (!guest("vm1").has_kmemleak())
		GTEST_SKIP() << "modules unloaded; no kmemleak: not the debug kernel, so no leak scan";
}

}  // namespace
}  // namespace iblab::vmtest
