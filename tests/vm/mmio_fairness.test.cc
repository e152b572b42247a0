// SPDX-License-Identifier: GPL-2.0
// Fairness between guests (issue 9): while vm0 runs a large loopback RDMA
// storm on its own HCA, vm1's MMIO reads and its ib_send_lat keep working.
// Two upstream guests back to back, OpenSM in vm0.
//
// The emulator serves every guest from one thread; a send doorbell or an
// incoming READ is worked off in slices (kSqBudget packets per call, the
// rest from poll()), so vm1's MMIO read waits for at most one slice of
// vm0's work. Without the slices, one doorbell of vm0's ib_write_bw (a few
// 1 MiB WRITEs looped back to its own LID) would hold the thread for the
// whole message, and vm1's vCPU with it.
//
// What is measured: hca_probe (tests/vm/hca_probe.cc) in vm1 times
// ibv_query_port calls, each a MAD_IFC firmware command of ib_mthca (HCR
// MMIO writes and reads, mailbox DMA, the completion EQE and interrupt),
// first idle, then during the storm; then ib_send_lat runs in vm1 (loopback, server and client in vm1)
// while the storm still runs. The test prints both worst round trips and
// fails when the storm's worst is above kStormLimitUs (see there) or when
// the storm did not cover the measurements.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <regex>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

// The limit on vm1's worst round trip during vm0's storm. Measured on the
// 2-core development host (TCG guests, other jobs sharing the cores):
//  - idle: median ~235-260 us, worst 4.7-35 ms (host scheduling: two TCG
//    vCPUs and ibemu on two cores);
//  - during the storm (vm0 at ~5.8 GB/s of loopback WRITEs): median 1 ms,
//    p99 22-29 ms, worst 50-54 ms;
//  - with the slices taken out (kSqBudget = 2^30, the deliberate break):
//    worst 1.8 s, and ib_send_lat failed.
// One slice (256 packets of 2 KiB, ~0.5 MiB of copies) is well under a
// millisecond; the tens of ms are TCG and host scheduling, which a loaded
// CI host stretches. 250 ms leaves ~5x headroom over the worst seen and
// still fails the unsliced engine by 7x.
constexpr unsigned long kStormLimitUs = 250000;

struct Probe {
	unsigned long reads = 0, median = 0, p99 = 0, max = 0;
};

std::optional<Probe> ParseProbe(const std::string &out)
{
	std::smatch m;
	if (!std::regex_search(out, m,
			       std::regex("hca_probe: ([0-9]+) round trips, median ([0-9]+) us, p99 ([0-9]+) us, max ([0-9]+) us")))
		return std::nullopt;
	return Probe{std::stoul(m[1]), std::stoul(m[2]), std::stoul(m[3]), std::stoul(m[4])};
}

// A perftest result row: "<bytes> <iterations> ..." at line start.
bool HasRow(const std::string &out, unsigned bytes)
{
	return std::regex_search(out, std::regex("(^|\\n)\\s*" + std::to_string(bytes) + "\\s+[0-9]+\\s+[0-9]+\\.[0-9]+"));
}

class MmioFairness : public PairSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o = PairOptions();
		// hca_probe runs from the build tree: share its directory.
		o.shares.push_back(std::filesystem::path(HCA_PROBE_BINARY).parent_path().string());
		StartLab(o, "MmioFairness");
		if (!lab_)
			return;
		setup_error_ = BringUpPair();
		// perftest's loopback runs meet over TCP on 127.0.0.1.
		for (Guest *g : lab_->guests()) {
			auto r = g->exec("ip link set lo up", 30s);
			if (setup_error_.empty() && !r.ok())
				setup_error_ = g->name() + ": lo: " + r.output;
		}
	}
	static void TearDownTestSuite() { StopLab(); }

	static std::string ProbeCmd(int secs) { return std::string(HCA_PROBE_BINARY) + " " + std::to_string(secs); }
};

TEST_F(MmioFairness, Vm1MmioAndSendLatKeepWorkingDuringVm0LoopbackStorm)
{
	Guest &vm0 = guest("vm0");
	Guest &vm1 = guest("vm1");

	// Idle baseline.
	auto idle_r = Run(vm1, ProbeCmd(4), 60s);
	ASSERT_TRUE(Ok(idle_r));
	auto idle = ParseProbe(idle_r.output);
	ASSERT_TRUE(idle) << idle_r.output;

	// The storm: ib_write_bw to itself, 1 MiB messages, two QPs, for 40 s
	// (long enough to cover what vm1 does below, which the test checks).
	// stdbuf: the client's result header shows when the run starts.
	const std::string storm = "stdbuf -oL ib_write_bw -s 1048576 -q 2 -D 40 -F";
	auto srv = vm0.start_exec(storm, 150s);
	std::this_thread::sleep_for(3s);  // let it listen
	auto cli = vm0.start_exec(storm + " 127.0.0.1", 150s);
	// Until the client reports its header, the QPs are not connected yet.
	std::string cli_out;
	for (int i = 0; i < 30 && cli_out.find("BW peak") == std::string::npos && !cli->done(); ++i) {
		std::this_thread::sleep_for(1s);
		cli_out += cli->take_new_output();
	}
	ASSERT_FALSE(cli->done()) << "the storm ended before it started:\n" << cli_out << cli->result().output;
	std::this_thread::sleep_for(3s);  // traffic under way

	auto storm_r = Run(vm1, ProbeCmd(10), 60s);
	// ib_send_lat in vm1, loopback, while the storm goes on.
	auto lat_srv = vm1.start_exec("ib_send_lat -n 100 -F", 90s);
	std::this_thread::sleep_for(2s);
	auto lat = Run(vm1, "ib_send_lat -n 100 -F 127.0.0.1", 90s);
	bool lat_srv_done = lat_srv->wait_for(30s);
	bool storm_covered = !cli->done();

	bool cli_done = cli->wait_for(120s);
	bool srv_done = srv->wait_for(30s);
	ExecResult cli_res = cli_done ? cli->result() : ExecResult{};
	ExecResult srv_res = srv_done ? srv->result() : ExecResult{};
	std::string storm_out = cli_out + cli_res.output;

	auto during = ParseProbe(storm_r.output);
	std::printf("vm1 firmware (MMIO) round trip, idle:        %s\n", idle_r.output.c_str());
	std::printf("vm1 firmware (MMIO) round trip, vm0 storm:  %s\n", storm_r.output.c_str());
	if (during)
		std::printf("vm1 worst MMIO round trip during the storm: %lu us (idle worst %lu us, limit %lu us)\n",
			    during->max, idle->max, kStormLimitUs);

	EXPECT_TRUE(Ok(storm_r));
	ASSERT_TRUE(during) << storm_r.output;
	EXPECT_GT(during->reads, 100u) << "vm1 could hardly reach its HCA during the storm";
	EXPECT_LE(during->max, kStormLimitUs) << storm_r.output;

	EXPECT_TRUE(Ok(lat)) << lat.output;
	EXPECT_TRUE(HasRow(lat.output, 2)) << "ib_send_lat gave no result row:\n" << lat.output;
	EXPECT_TRUE(lat_srv_done && lat_srv->result().ok()) << lat_srv->take_new_output();

	EXPECT_TRUE(storm_covered) << "vm0's storm ended before vm1's measurements did:\n" << storm_out;
	ASSERT_TRUE(cli_done) << "the storm did not end:\n" << storm_out;
	EXPECT_TRUE(srv_done) << "the storm's server did not end";
	// The storm really moved data: a result row for 1 MiB.
	EXPECT_TRUE(HasRow(storm_out, 1048576)) << storm_out << "\n--- server ---\n" << srv_res.output;
	std::printf("vm0's storm:\n%s\n", storm_out.c_str());
}

}  // namespace
}  // namespace iblab::vmtest
