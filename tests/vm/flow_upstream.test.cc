// SPDX-License-Identifier: GPL-2.0
// Link flow control and link fairness with the upstream Debian stack (issue
// 9 §2): two guests through an emulated switch (star:2), OpenSM in vm1,
// perftest over the RDMA data path, IPoIB only to exchange the QP numbers.
//  - Fairness: an ib_write_bw stream vm0 -> vm1 and the READ responses of an
//    ib_read_bw that vm1 runs against vm0 share the direction vm0 -> vm1;
//    each gets at least a quarter of their sum in every run.
//  - Flow control: bidirectional ib_write_bw and ib_read_bw at once, then
//    no packet lost on any link and no transport retry (the emulator's
//    counters, through its control channel) and PortXmitDiscards and
//    PortRcvErrors 0 on every port (perfquery).
#include <iostream>
#include <optional>
#include <regex>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const char *const kIp[2] = {"10.78.0.1", "10.78.0.2"};

class FlowThroughASwitch : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		StartWithSm(MixedOptions({{"vm0", Stack::Upstream}, {"vm1", Stack::Upstream}}, "star:2"),
			    "FlowThroughASwitch", "vm1");
		if (lab_ && setup_error_.empty())
			setup_error_ = AddressIpoib();
	}
	static void TearDownTestSuite() { StopLab(); }

	// IPoIB 10.78.0.1 (vm0) and .2 (vm1), for perftest's TCP exchange.
	static std::string AddressIpoib()
	{
		Guest *g[2] = {&guest("vm0"), &guest("vm1")};
		return IpoibUpOnBoth(g, kIp);
	}

	// One perftest stream: its server in `srv`, its client in the other
	// guest; `tool` with its arguments (a -p port of its own).
	struct Stream {
		std::string tool;
		int srv;
		ExecResult out;
	};

	// Starts every server, then every client at once, and waits for all.
	// Returns "" or what went wrong; each stream's client output is kept.
	static std::string RunStreams(std::vector<Stream> &s)
	{
		std::vector<std::shared_ptr<PendingExec>> srvs, clis;
		for (Stream &x : s)
			srvs.push_back(guest("vm" + std::to_string(x.srv)).start_exec(x.tool, 120s));
		std::this_thread::sleep_for(3s);  // let them listen
		for (Stream &x : s)
			clis.push_back(
				guest("vm" + std::to_string(1 - x.srv)).start_exec(x.tool + " " + kIp[x.srv], 120s));
		std::string err;
		for (size_t i = 0; i < s.size(); ++i) {
			if (!clis[i]->wait_for(150s) || !srvs[i]->wait_for(30s)) {
				err += s[i].tool + ": did not finish\n";
				continue;
			}
			s[i].out = clis[i]->result();
			ExecResult so = srvs[i]->result();
			if (!s[i].out.ok() || !so.ok())
				err += s[i].tool + ": " + s[i].out.output + "\n--- server ---\n" + so.output + "\n";
		}
		if (!err.empty())
			for (int g = 0; g < 2; ++g)
				guest("vm" + std::to_string(g)).exec("pkill ib_write_bw; pkill ib_read_bw; true", 30s);
		return err;
	}

	// perftest's "BW average[MB/sec]" of a 64 KiB duration (-D) run.
	static std::optional<double> Average(const std::string &out)
	{
		std::smatch m;
		if (!std::regex_search(out, m, std::regex("(^|\\n)\\s*65536\\s+[0-9]+\\s+[0-9.]+\\s+([0-9.]+)")))
			return std::nullopt;
		return std::stod(m[2]);
	}

	// perftest refuses to report when it cannot calibrate its cycle clock
	// under TCG ("Correlation coefficient r^2"): a tool failure after the
	// traffic, repeated (at most twice).
	static bool CalibrationFailure(const std::string &err)
	{
		return err.find("Correlation coefficient r^2") != std::string::npos;
	}
};

// Issue 9 asks for ten runs; each is 3 s of traffic (about 8 s with
// perftest's setup under TCG).
TEST_F(FlowThroughASwitch, WriteStreamAndReadResponsesShareALinkDirection)
{
	const int kRuns = 10;
	for (int run = 0; run < kRuns; ++run) {
		std::vector<Stream> s = {
			{"ib_write_bw -D 3 -p 18515", 1, {}},  // vm0 writes to vm1
			{"ib_read_bw -D 3 -p 18516", 0, {}},   // vm1 reads from vm0
		};
		std::string err = RunStreams(s);
		for (int again = 0; again < 2 && CalibrationFailure(err); ++again) {
			std::cerr << "perftest could not calibrate its clock; running again\n";
			err = RunStreams(s);
		}
		ASSERT_EQ(err, "") << "run " << run;
		auto w = Average(s[0].out.output), r = Average(s[1].out.output);
		ASSERT_TRUE(w && r) << s[0].out.output << "\n" << s[1].out.output;
		double sum = *w + *r;
		std::printf("run %d: WRITE %.1f MB/s, READ %.1f MB/s\n", run, *w, *r);
		EXPECT_GT(sum, 0.0);
		EXPECT_GE(*w * 4, sum) << "run " << run << ": WRITE " << *w << " READ " << *r;
		EXPECT_GE(*r * 4, sum) << "run " << run << ": WRITE " << *w << " READ " << *r;
	}
}

TEST_F(FlowThroughASwitch, BidirectionalWriteAndReadLoseNothingAndRetryNothing)
{
	std::vector<Stream> s = {
		{"ib_write_bw -D 5 -p 18520", 1, {}},
		{"ib_write_bw -D 5 -p 18521", 0, {}},
		{"ib_read_bw -D 5 -p 18522", 0, {}},
		{"ib_read_bw -D 5 -p 18523", 1, {}},
	};
	std::string err = RunStreams(s);
	for (int again = 0; again < 2 && CalibrationFailure(err); ++again)
		err = RunStreams(s);
	ASSERT_EQ(err, "");
	for (const Stream &x : s)
		EXPECT_TRUE(Average(x.out.output)) << x.out.output;

	// The emulator: no link lost a packet, no HCA retransmitted.
	std::string drops = lab_->fabric("show drops");
	EXPECT_EQ(drops.rfind("ok drops 0 ", 0), 0u) << drops;
	std::printf("%s", drops.c_str());
	for (const char *vm : {"vm0", "vm1"}) {
		std::string h = lab_->fabric(std::string("hca ") + vm);
		EXPECT_EQ(h.rfind("ok retransmits 0", 0), 0u) << vm << ": " << h;
	}
	// The PMA of each HCA port and of the switch ports (perfquery -a: all
	// ports of the switch, by its LID).
	std::smatch m;
	for (const char *vm : {"vm0", "vm1"}) {
		auto pq = Run(guest(vm), "perfquery");
		ASSERT_TRUE(pq.ok()) << pq.output;
		for (const char *c : {"PortXmitDiscards", "PortRcvErrors"}) {
			ASSERT_TRUE(std::regex_search(pq.output, m, std::regex(std::string(c) + ":\\.*([0-9]+)")))
				<< pq.output;
			EXPECT_EQ(m[1], "0") << vm << " " << c << "\n" << pq.output;
		}
	}
	auto sw = Run(guest("vm1"), "ibswitches");
	ASSERT_TRUE(std::regex_search(sw.output, m, std::regex("base port 0 lid ([0-9]+)"))) << sw.output;
	for (const char *port : {"1", "2"}) {
		auto pq = Run(guest("vm1"), "perfquery " + std::string(m[1]) + " " + port);
		ASSERT_TRUE(pq.ok()) << pq.output;
		std::smatch c;
		for (const char *name : {"PortXmitDiscards", "PortRcvErrors"}) {
			ASSERT_TRUE(std::regex_search(pq.output, c, std::regex(std::string(name) + ":\\.*([0-9]+)")))
				<< pq.output;
			EXPECT_EQ(c[1], "0") << "switch port " << port << " " << name << "\n" << pq.output;
		}
	}
}

}  // namespace
}  // namespace iblab::vmtest
