// SPDX-License-Identifier: GPL-2.0
// IPoIB connected mode under load through a switch (issue 9 §2, "Must
// show"): two upstream Debian guests on star:2, OpenSM in vm1, Debian's
// stock ib_ipoib in connected mode (MTU 65520) on both, and iperf3 TCP in
// both directions at once (--bidir) for 60 s. Then:
//  - neither iperf3 failed and every interval moved bytes both ways (the
//    JSON report of each side): no connection was lost or stalled;
//  - the traffic went over IPoIB-CM: both interfaces say "connected" with
//    MTU 65520, a 60000-byte ping with DF set crosses (datagram mode's MTU
//    is 2044), and during the run each guest holds RC QPs of ib_ipoib in
//    RTS (rdma resource show qp), the same ones at the end (none failed
//    and was reconnected);
//  - no IPoIB CM error in either guest's dmesg;
//  - zero link drops and zero transport retries on the emulator's counters
//    and PortXmitDiscards/PortRcvErrors 0 on every port (perfquery).
#include <iostream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const char *const kIp[2] = {"10.79.0.1", "10.79.0.2"};
constexpr int kSeconds = 60;

// One direction's bytes per interval of an iperf3 -J report: the
// intervals' "sum" (the client's sending side with --bidir) or
// "sum_bidir_reverse". Each of those objects is flat (no nested braces).
struct Interval {
	double seconds = 0;
	unsigned long long bytes = 0;
};

std::vector<Interval> IntervalSums(const std::string &json, const std::string &key)
{
	std::vector<Interval> out;
	std::regex obj("\"" + key + "\"\\s*:\\s*\\{([^{}]*)\\}");
	std::regex sec("\"seconds\"\\s*:\\s*([0-9.eE+-]+)");
	std::regex bytes("\"bytes\"\\s*:\\s*([0-9]+)");
	for (auto it = std::sregex_iterator(json.begin(), json.end(), obj); it != std::sregex_iterator(); ++it) {
		std::string body = (*it)[1];
		std::smatch m;
		Interval iv;
		if (std::regex_search(body, m, sec))
			iv.seconds = std::stod(m[1]);
		if (std::regex_search(body, m, bytes))
			iv.bytes = std::stoull(m[1]);
		out.push_back(iv);
	}
	return out;
}

class IpoibCm : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		StartWithSm(MixedOptions({{"vm0", Stack::Upstream}, {"vm1", Stack::Upstream}}, "star:2"), "IpoibCm",
			    "vm1");
		if (lab_ && setup_error_.empty())
			setup_error_ = ConnectedMode();
	}
	static void TearDownTestSuite() { StopLab(); }

	// ib0 in connected mode, MTU 65520, 10.79.0.1 (vm0) and .2 (vm1).
	static std::string ConnectedMode()
	{
		Guest *g[2] = {&guest("vm0"), &guest("vm1")};
		return IpoibUpOnBoth(g, kIp, "echo connected > /sys/class/net/ib0/mode && ip link set ib0 mtu 65520");
	}

	// Every interval of at least half a second carried bytes (iperf3 may
	// end with a sliver of an interval); returns what is wrong, or "".
	static std::string CheckIntervals(const std::string &who, const std::vector<Interval> &ivs)
	{
		std::string err;
		int full = 0;
		for (size_t i = 0; i < ivs.size(); ++i) {
			if (ivs[i].seconds < 0.5)
				continue;
			++full;
			if (ivs[i].bytes == 0)
				err += who + ": interval " + std::to_string(i) + " moved 0 bytes\n";
		}
		if (full < kSeconds - 2)
			err += who + ": only " + std::to_string(full) + " full intervals\n";
		return err;
	}

	// "lqpn/rqpn" of every RC QP of ib_ipoib in RTS, one per line.
	static std::string IpoibRcQps(const std::string &rdma)
	{
		std::string out;
		std::regex re("lqpn ([0-9]+) rqpn ([0-9]+) type RC state RTS[^\\n]*comm \\[ib_ipoib\\]");
		for (auto it = std::sregex_iterator(rdma.begin(), rdma.end(), re); it != std::sregex_iterator(); ++it)
			out += std::string((*it)[1]) + "/" + std::string((*it)[2]) + "\n";
		return out;
	}

	static void ExpectZero(const std::string &where, const std::string &perfquery)
	{
		for (const char *c : {"PortXmitDiscards", "PortRcvErrors"}) {
			std::smatch m;
			ASSERT_TRUE(std::regex_search(perfquery, m, std::regex(std::string(c) + ":\\.*([0-9]+)")))
				<< perfquery;
			EXPECT_EQ(m[1], "0") << where << " " << c << "\n" << perfquery;
		}
	}
};

TEST_F(IpoibCm, BidirectionalIperf3For60sLosesNothing)
{
	// Connected mode, MTU 65520, and a datagram that only CM can carry.
	for (int i = 0; i < 2; ++i) {
		Guest &g = guest("vm" + std::to_string(i));
		auto r = Run(g, "cat /sys/class/net/ib0/mode /sys/class/net/ib0/mtu");
		ASSERT_TRUE(Ok(r));
		EXPECT_EQ(r.output, "connected\n65520\n") << g.name();
		auto p = Run(g, std::string("ping -c 3 -W 5 -M do -s 60000 ") + kIp[1 - i], 60s);
		EXPECT_TRUE(Ok(p)) << g.name() << ": a 60000-byte ping needs IPoIB-CM";
	}

	auto srv = guest("vm1").start_exec("iperf3 -s -1 -J", 240s);
	std::this_thread::sleep_for(3s);  // let it listen
	auto cli = guest("vm0").start_exec(
		std::string("iperf3 -J --bidir -t ") + std::to_string(kSeconds) + " -c " + kIp[1], 240s);

	// Early in the run: each side holds connected (RC) QPs of ib_ipoib in
	// RTS. The same QPs must still be there at the end: a CM connection
	// that failed (IPoIB-CM asks for retry_count 0, and logs a retry
	// exceeded only at debug level) would have been replaced by a new one.
	std::this_thread::sleep_for(8s);
	std::string early[2];
	for (int i = 0; i < 2; ++i) {
		auto q = Run(guest("vm" + std::to_string(i)), "rdma resource show qp");
		EXPECT_TRUE(Ok(q));
		std::printf("vm%d: rdma resource show qp\n%s", i, q.output.c_str());
		early[i] = IpoibRcQps(q.output);
		EXPECT_NE(early[i], "") << "vm" << i << ": no RC QP of ib_ipoib in RTS during the run\n" << q.output;
	}

	ASSERT_TRUE(cli->wait_for(std::chrono::seconds(kSeconds + 120))) << "iperf3 client did not finish";
	ASSERT_TRUE(srv->wait_for(60s)) << "iperf3 server did not finish";
	ExecResult c = cli->result(), s = srv->result();
	ASSERT_TRUE(Ok(c)) << "iperf3 client";
	ASSERT_TRUE(Ok(s)) << "iperf3 server";

	for (int i = 0; i < 2; ++i) {
		auto q = Run(guest("vm" + std::to_string(i)), "rdma resource show qp");
		EXPECT_TRUE(Ok(q));
		EXPECT_EQ(IpoibRcQps(q.output), early[i]) << "vm" << i << ": the IPoIB-CM QPs changed\n" << q.output;
	}

	// Both reports: every interval moved bytes both ways.
	for (auto [who, json] : {std::pair<std::string, std::string>{"client", c.output}, {"server", s.output}}) {
		auto fwd = IntervalSums(json, "sum"), rev = IntervalSums(json, "sum_bidir_reverse");
		ASSERT_FALSE(fwd.empty()) << who << ": no intervals\n" << json;
		EXPECT_EQ(CheckIntervals(who + " sum", fwd) + CheckIntervals(who + " sum_bidir_reverse", rev), "")
			<< json;
		unsigned long long f = 0, r = 0;
		for (const auto &iv : fwd)
			f += iv.bytes;
		for (const auto &iv : rev)
			r += iv.bytes;
		std::printf("iperf3 %s: %zu intervals, %.1f MB one way, %.1f MB the other\n", who.c_str(),
			    fwd.size(), f / 1e6, r / 1e6);
	}

	// No IPoIB CM error on either side (a lost RC connection is logged).
	for (const char *vm : {"vm0", "vm1"}) {
		auto d = Run(guest(vm), "dmesg | grep -i 'ib0' | grep -iE 'fail|error|timeout|reject' || true");
		ASSERT_TRUE(Ok(d));
		EXPECT_EQ(d.output, "") << vm << ": IPoIB complained";
	}

	// The emulator: no link lost a packet, no HCA retransmitted.
	std::string drops = lab_->fabric("show drops");
	std::printf("%s", drops.c_str());
	EXPECT_EQ(drops.rfind("ok drops 0 ", 0), 0u) << drops;
	for (const char *vm : {"vm0", "vm1"}) {
		std::string h = lab_->fabric(std::string("hca ") + vm);
		EXPECT_EQ(h.rfind("ok retransmits 0", 0), 0u) << vm << ": " << h;
	}

	// The PMA of each HCA port and of both switch ports.
	for (const char *vm : {"vm0", "vm1"}) {
		auto pq = Run(guest(vm), "perfquery");
		ASSERT_TRUE(Ok(pq));
		ExpectZero(vm, pq.output);
	}
	auto sw = Run(guest("vm1"), "ibswitches");
	std::smatch m;
	ASSERT_TRUE(std::regex_search(sw.output, m, std::regex("base port 0 lid ([0-9]+)"))) << sw.output;
	for (const char *port : {"1", "2"}) {
		auto pq = Run(guest("vm1"), "perfquery " + std::string(m[1]) + " " + port);
		ASSERT_TRUE(Ok(pq));
		ExpectZero(std::string("switch port ") + port, pq.output);
	}
}

}  // namespace
}  // namespace iblab::vmtest
