// SPDX-License-Identifier: GPL-2.0
// Real traffic of the upstream Debian stack across the emulated fabric: SA
// and PMA queries, IPoIB (datagram and connected mode, iperf3), the
// libibverbs pingpong examples and perftest. Two guests back to back, OpenSM
// in vm0; vm0 runs the servers, vm1 the clients.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const char *const kServerIp = "10.77.0.1";

// A perftest result row: "<bytes> <iterations> <number> ..." at line start.
::testing::AssertionResult HasResultRow(const std::string &out, unsigned bytes, unsigned iters)
{
	std::regex row("(^|\\n)\\s*" + std::to_string(bytes) + "\\s+" + std::to_string(iters) + "\\s+[0-9]+\\.[0-9]+");
	if (std::regex_search(out, row))
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "no result row for " << bytes << " bytes x " << iters << " in:\n" << out;
}

class Traffic : public PairSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o = PairOptions();
		// qp_query_check runs from the build tree, which the guest may not
		// see through its root: share its directory at the same path.
		o.shares.push_back(std::filesystem::path(QP_QUERY_CHECK_BINARY).parent_path().string());
		StartLab(o, "Traffic");
		if (!lab_)
			return;
		setup_error_ = BringUpPair();
		if (setup_error_.empty())
			setup_error_ = AddressIpoib();
	}
	static void TearDownTestSuite() { StopLab(); }

	// IPoIB addresses 10.77.0.1 (vm0) and .2 (vm1); "" when vm1 reaches vm0.
	static std::string AddressIpoib()
	{
		int n = 1;
		for (Guest *g : lab_->guests()) {
			std::string ip = "10.77.0." + std::to_string(n++) + "/24";
			auto r = g->exec("ip link set ib0 up && ip addr add " + ip + " dev ib0", 60s);
			if (!r.ok())
				return g->name() + ": ib0: " + r.output;
		}
		// The first ARP over IPoIB needs the broadcast group joined via the SA.
		auto p = guest("vm1").exec(std::string("for i in $(seq 1 30); do ping -c 1 -W 2 ") + kServerIp +
						   " >/dev/null && exit 0; done; exit 1",
					   120s);
		if (!p.ok())
			return "IPoIB never answered: " + p.output;
		return "";
	}

	struct Pair {
		std::string server, client;
		ExecResult cli, srv;
		bool srv_done = false;
		bool ok() const { return cli.ok() && srv_done && srv.ok(); }
		std::string output() const { return cli.output + "\n--- server ---\n" + srv.output; }
	};

	// Runs `server` in vm0 and, once it listens, `client` in vm1.
	static Pair RunPair(const std::string &server, const std::string &client, std::chrono::seconds limit)
	{
		Pair p{server, client, {}, {}, false};
		auto srv = guest("vm0").start_exec(server, limit);
		std::this_thread::sleep_for(3s);  // let it listen
		p.cli = guest("vm1").exec(client, limit);
		p.srv_done = srv->wait_for(limit);
		if (p.srv_done)
			p.srv = srv->result();
		else
			p.srv.output = srv->take_new_output();
		return p;
	}

	static std::string Expect(const Pair &p)
	{
		EXPECT_TRUE(p.cli.ok()) << p.client << ": " << p.cli.describe() << "\n" << p.cli.output;
		EXPECT_TRUE(p.srv_done && p.srv.ok())
			<< p.server << ": " << (p.srv_done ? p.srv.describe() : "did not finish") << "\n" << p.srv.output;
		return p.output();
	}

	// Both must succeed. Returns the client's output (the server's is
	// appended).
	static std::string ServerClient(const std::string &server, const std::string &client,
					std::chrono::seconds limit = 180s)
	{
		return Expect(RunPair(server, client, limit));
	}

	// perftest converts cycles to time with a CPU clock it measures itself
	// at the end of a run, and refuses to report ("Correlation coefficient
	// r^2 ... < 0.9", "Can't produce a report") when its samples of the
	// cycle counter against gettimeofday() scatter. Under TCG on a loaded
	// host they sometimes do: that failure is the tool's calibration, after
	// the traffic already completed, so such a run is repeated (at most
	// twice). Any other failure counts at once.
	static std::string Perftest(const std::string &server, const std::string &client)
	{
		Pair p = RunPair(server, client, 180s);
		for (int again = 0; again < 2 && !p.ok() && IsClockCalibrationFailure(p); ++again) {
			std::cerr << "perftest could not calibrate its clock; running again\n";
			p = RunPair(server, client, 180s);
		}
		return Expect(p);
	}

	static bool IsClockCalibrationFailure(const Pair &p)
	{
		return p.output().find("Correlation coefficient r^2") != std::string::npos;
	}
};

// The value of "Name:....value" in smpquery/perfquery output, if present.
std::optional<long long> Number(const std::string &out, const std::string &name)
{
	std::smatch m;
	if (!std::regex_search(out, m, std::regex("(^|\\n)" + name + ":\\.*((0x)?[0-9a-fA-F]+)")))
		return std::nullopt;
	return std::stoll(m[2], nullptr, 0);
}

TEST_F(Traffic, SaAndPmaQueriesByLid)
{
	// The SM's PortInfoRecord (its IsSM port) is there.
	auto sa = Run(guest("vm1"), "saquery -s");
	ASSERT_TRUE(Ok(sa));
	std::regex record("PortInfoRecord dump");
	EXPECT_GE(std::distance(std::sregex_iterator(sa.output.begin(), sa.output.end(), record),
				std::sregex_iterator()),
		  1)
		<< sa.output;
	// LID 1 is vm0 (OpenSM's own port): its link is up and ACTIVE.
	auto pi = Run(guest("vm1"), "smpquery portinfo 1 1");
	ASSERT_TRUE(Ok(pi));
	EXPECT_TRUE(std::regex_search(pi.output, std::regex("(^|\\n)LinkState:\\.+Active\\n"))) << pi.output;
	EXPECT_TRUE(std::regex_search(pi.output, std::regex("(^|\\n)PhysLinkState:\\.+LinkUp\\n"))) << pi.output;
	// Its PMA: the SM's sweeps and IPoIB's joins have been sent already.
	auto pq = Run(guest("vm1"), "perfquery 1 1");
	ASSERT_TRUE(Ok(pq));
	EXPECT_GT(Number(pq.output, "PortXmitData").value_or(-1), 0) << pq.output;
	EXPECT_GT(Number(pq.output, "PortXmitPkts").value_or(-1), 0) << pq.output;
}

// PortXmitData of the local port (perfquery, 4-byte words) before and after
// traffic: the counters count what really crossed. Both readings must work.
TEST_F(Traffic, PortCountersMoveWithTraffic)
{
	auto words = [&](Guest &g) -> std::optional<long long> {
		auto r = g.exec("perfquery", 60s);
		if (!r.ok())
			return std::nullopt;
		return Number(r.output, "PortXmitData");
	};
	auto before = words(guest("vm1"));
	ASSERT_TRUE(before.has_value()) << "the first perfquery failed";
	ASSERT_TRUE(Ok(Run(guest("vm1"), std::string("ping -c 20 -i 0.2 -s 1000 ") + kServerIp)));
	auto after = words(guest("vm1"));
	ASSERT_TRUE(after.has_value()) << "the second perfquery failed";
	EXPECT_GE(*after - *before, 20ll * 1000 / 4) << "before " << *before << " after " << *after;
}

TEST_F(Traffic, IpoibPingDatagramMode)
{
	auto r = Run(guest("vm1"), std::string("cat /sys/class/net/ib0/mode; ping -c 5 -W 2 ") + kServerIp);
	ASSERT_TRUE(Ok(r));
	EXPECT_NE(r.output.find("datagram"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find(" 0% packet loss"), std::string::npos) << r.output;
}

TEST_F(Traffic, Iperf3OverIpoib)
{
	std::string out = ServerClient("iperf3 -s -1", std::string("iperf3 -t 3 -c ") + kServerIp);
	EXPECT_NE(out.find("receiver"), std::string::npos) << out;
}

// ibv_query_qp reports what ibv_modify_qp set across RST->INIT->RTR->RTS
// (and an RTS->RTS), for RC and UD, and ERR after the HCA itself failed a
// QP: mthca_query_qp decodes the context QUERY_QP returns, so the firmware
// must keep the merged context, not the last mailbox.
TEST_F(Traffic, IbvQueryQpReportsWhatModifyQpSet)
{
	auto r = Run(guest("vm0"), QP_QUERY_CHECK_BINARY, 120s);
	std::printf("%s", r.output.c_str());  // the per-check lines, for the log
	EXPECT_TRUE(Ok(r)) << r.output;
	EXPECT_NE(r.output.find(" checks, 0 failed\n"), std::string::npos) << r.output;
	EXPECT_EQ(r.output.find("FAIL "), std::string::npos) << r.output;
}

TEST_F(Traffic, IbvRcPingpong)
{
	std::string out = ServerClient("ibv_rc_pingpong -g 0 -n 50", std::string("ibv_rc_pingpong -g 0 -n 50 ") + kServerIp);
	EXPECT_NE(out.find("50 iters in"), std::string::npos) << out;
}

TEST_F(Traffic, IbvUcPingpong)
{
	std::string out = ServerClient("ibv_uc_pingpong -g 0 -n 50", std::string("ibv_uc_pingpong -g 0 -n 50 ") + kServerIp);
	EXPECT_NE(out.find("50 iters in"), std::string::npos) << out;
}

TEST_F(Traffic, IbvUdPingpong)
{
	std::string out = ServerClient("ibv_ud_pingpong -g 0 -n 50", std::string("ibv_ud_pingpong -g 0 -n 50 ") + kServerIp);
	EXPECT_NE(out.find("50 iters in"), std::string::npos) << out;
}

TEST_F(Traffic, IbvSrqPingpong)
{
	std::string out =
		ServerClient("ibv_srq_pingpong -g 0 -n 50", std::string("ibv_srq_pingpong -g 0 -n 50 ") + kServerIp);
	EXPECT_NE(out.find("50 iters in"), std::string::npos) << out;
}

// perftest: each run must finish and report a bandwidth/latency line.
TEST_F(Traffic, PerftestWriteBw)
{
	std::string out = Perftest("ib_write_bw -n 200", std::string("ib_write_bw -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 65536, 200));
}

TEST_F(Traffic, PerftestSendBw)
{
	std::string out = Perftest("ib_send_bw -n 200", std::string("ib_send_bw -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 65536, 200));
}

TEST_F(Traffic, PerftestReadBw)
{
	std::string out = Perftest("ib_read_bw -n 200", std::string("ib_read_bw -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 65536, 200));
}

TEST_F(Traffic, PerftestAtomicBw)
{
	std::string out = Perftest("ib_atomic_bw -n 200", std::string("ib_atomic_bw -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 8, 200));
}

TEST_F(Traffic, PerftestSendLat)
{
	std::string out = Perftest("ib_send_lat -n 200", std::string("ib_send_lat -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 2, 200));
}

// Last: switching modes takes the interface down and up.
TEST_F(Traffic, IpoibPingConnectedMode)
{
	for (Guest *g : lab_->guests())
		ASSERT_TRUE(Ok(Run(*g, "echo connected > /sys/class/net/ib0/mode && cat /sys/class/net/ib0/mode")));
	auto r = Run(guest("vm1"), std::string("for i in $(seq 1 10); do ping -c 1 -W 2 ") + kServerIp +
					   " >/dev/null && break; done; ping -c 5 -W 2 -s 8000 " + kServerIp);
	ASSERT_TRUE(Ok(r));
	EXPECT_NE(r.output.find(" 0% packet loss"), std::string::npos) << r.output;
}

// A capture of the fabric while IPoIB pings: tshark (on the host) decodes
// the packets as InfiniBand. tshark 4.0 has no LINKTYPE_INFINIBAND reader,
// so the default capture format ("pcap") is a pcap file with LINKTYPE_ERF
// whose records are ERF records of type InfiniBand.
TEST_F(Traffic, CaptureDecodesAsInfiniband)
{
	std::string file = lab_->run_dir() + "/traffic.pcap";
	std::string r = lab_->fabric("capture start " + file + " pcap");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	auto ping = Run(guest("vm1"), std::string("ping -c 3 -W 2 ") + kServerIp);
	r = lab_->fabric("capture stop");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	ASSERT_TRUE(Ok(ping));
	// A pcap file (nanosecond magic) with link type 197 (ERF).
	FILE *f = fopen(file.c_str(), "rb");
	ASSERT_NE(f, nullptr);
	unsigned char hdr[24] = {};
	size_t got = fread(hdr, 1, sizeof hdr, f);
	fclose(f);
	ASSERT_EQ(got, sizeof hdr);
	EXPECT_EQ(hdr[0] | hdr[1] << 8 | hdr[2] << 16 | unsigned(hdr[3]) << 24, 0xa1b23c4du);
	EXPECT_EQ(hdr[20] | hdr[21] << 8, 197);

	FILE *p = popen(("tshark -r " + file + " -V 2>&1").c_str(), "r");
	ASSERT_NE(p, nullptr);
	std::string out;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		out.append(buf, n);
	int st = pclose(p);
	EXPECT_EQ(st, 0) << out.substr(0, 2000);
	for (const char *want : {"Type 21: INFINIBAND", "Local Route Header", "Base Transport Header",
				 "Opcode: ", "Destination Queue Pair: ", "Packet Sequence Number: ",
				 "Invariant CRC", "Variant CRC"})
		EXPECT_NE(out.find(want), std::string::npos) << "tshark output lacks '" << want << "':\n"
							     << out.substr(0, 3000);
	// The pings (3 requests, 3 replies) are IPoIB sends: RC in connected
	// mode, UD in datagram mode; tshark names the BTH opcode.
	size_t sends = 0;
	for (size_t at = out.find("Opcode: "); at != std::string::npos; at = out.find("Opcode: ", at + 1)) {
		size_t eol = out.find('\n', at);
		if (out.substr(at, eol - at).find("SEND") != std::string::npos)
			++sends;
	}
	EXPECT_GE(sends, 6u) << out.substr(0, 3000);
}

// Take the link down in the middle of ib_write_bw: the guests see their
// ports go down, the transfer ends (with an error, not a hang), OpenSM
// brings the ports back once the link is up again, and a new run passes.
TEST_F(Traffic, LinkDownDuringWriteBwThenRecovery)
{
	const std::string port = "/sys/class/infiniband/mthca0/ports/1";
	auto srv = guest("vm0").start_exec("ib_write_bw -D 20", 120s);
	std::this_thread::sleep_for(3s);
	auto cli = guest("vm1").start_exec(std::string("ib_write_bw -D 20 ") + kServerIp, 120s);
	std::this_thread::sleep_for(6s);
	std::string r = lab_->fabric("link vm0:1 down");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;

	for (Guest *g : lab_->guests()) {
		auto st = Run(*g, "for i in $(seq 1 30); do grep -q DOWN " + port + "/state && exit 0; sleep 1; done; "
				  "cat " + port + "/state " + port + "/phys_state; exit 1");
		EXPECT_TRUE(Ok(st)) << g->name() << ": the port did not go down";
	}
	// The transfer must end by itself, as IBA 9.7.6.1.3 says: the
	// requester retransmits retry_cnt times, then completes the WQE with
	// "transport retry counter exceeded" (ibv_wc_status 12) and its QP goes
	// to the error state; perftest reports the failed status and exits
	// non-zero. The cut comes ~9 s into a 20 s run, so it cannot have
	// finished first.
	ASSERT_TRUE(cli->wait_for(150s)) << "ib_write_bw client hung after the link went down";
	lab_->mark("the client ended");
	ExecResult c = cli->result();
	EXPECT_FALSE(c.timed_out) << c.output;
	EXPECT_NE(c.status, 0) << c.output;
	EXPECT_NE(c.output.find("status 12"), std::string::npos) << c.output;
	// The server's end is not asserted: it may wait out its own 20 s.
	srv->wait_for(3s);
	if (!srv->done())
		Run(guest("vm0"), "pkill ib_write_bw; true");
	lab_->mark("the server ended");

	r = lab_->fabric("link vm0:1 up");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	for (Guest *g : lab_->guests()) {
		EXPECT_TRUE(Ok(WaitPortActive(*g, 90))) << g->name() << ": OpenSM did not bring the port back";
	}
	lab_->mark("the ports are ACTIVE again");
	// IPoIB and a new transfer work again.
	auto p = Run(guest("vm1"), std::string("for i in $(seq 1 30); do ping -c 1 -W 2 ") + kServerIp +
					   " >/dev/null && exit 0; done; exit 1", 120s);
	ASSERT_TRUE(Ok(p));
	lab_->mark("IPoIB answers again");
	std::string out = Perftest("ib_write_bw -n 200", std::string("ib_write_bw -n 200 ") + kServerIp);
	EXPECT_TRUE(HasResultRow(out, 65536, 200));
	std::string links = lab_->fabric("show links");
	EXPECT_NE(links.find("vm0:1-vm1:1 up"), std::string::npos) << links;
}

}  // namespace
}  // namespace iblab::vmtest
