// SPDX-License-Identifier: GPL-2.0
// Issue 8: trap forwarding of our ib_mthca (mthca_trap.c), end to end.
//
//   OursTraps   vm0 ours, vm1 upstream with OpenSM, back to back (b2b)
//
// Opening /dev/infiniband/issm0 in vm0 sets IsSM in the port's capability
// mask (ib_umad -> ib_modify_port -> SET_IB); the emulated firmware then
// raises trap 144 (capability mask changed) on QP0 with SLID 0, resending
// it about every second (SubnetTimeout 18) until a TrapRepress with its
// TID reaches MAD_IFC, at most 16 times (emulator/hca/traps.cc). Our
// driver must forward it to the SM, and pass the SM's TrapRepress back to
// the firmware. The test shows OpenSM (vm1) logging trap 144 from vm0's
// LID, and the firmware's own counters (the emulator's `show traps vm0`,
// read on the control socket) with the trap sent once or twice, repressed,
// not resent afterwards and never given up; the guests' dmesg clean
// (fixture).
#include <regex>
#include <string>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

class OursTraps : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		StartWithSm(MixedOptions({{"vm0", OursRole()}, {"vm1", Stack::Upstream}}, "b2b"), "OursTraps",
			    "vm1");
	}

	// vm0's port 1 as the firmware counts its traps (`show traps vm0`):
	// trap 144 sends (resends included), repressed, given up.
	struct Traps {
		long sent144 = -1, repressed = -1, given_up = -1;
		std::string line;
	};
	static Traps FirmwareTraps()
	{
		Traps t;
		std::string r = lab_->fabric("show traps vm0");
		std::smatch m;
		static const std::regex port1(
			"\\nvm0:1 sent 144:([0-9]+) [^\\n]* repressed ([0-9]+) given_up ([0-9]+)");
		if (std::regex_search(r, m, port1)) {
			t.sent144 = std::stol(m[1]);
			t.repressed = std::stol(m[2]);
			t.given_up = std::stol(m[3]);
		}
		t.line = r;
		return t;
	}
};

TEST_F(OursTraps, CapabilityMaskTrapReachesTheSmAndIsRepressed)
{
	Guest &g = guest("vm0"), &sm = guest("vm1");
	auto lid = Run(g, "cat /sys/class/infiniband/mthca0/ports/1/lid");
	ASSERT_TRUE(Ok(lid));
	int l0 = std::stoi(lid.output, nullptr, 16);
	ASSERT_NE(l0, 0);
	auto sm_lid = Run(sm, "cat /sys/class/infiniband/mthca0/ports/1/lid");
	std::printf("vm0 LID %d, vm1 (OpenSM) LID %s", l0, sm_lid.output.c_str());
	Traps before = FirmwareTraps();
	ASSERT_GE(before.sent144, 0) << "no trap counters for vm0:1: " << before.line;
	ASSERT_EQ(before.sent144, 0) << "a trap 144 before the test: " << before.line;

	// Hold issm0 for 60 s: IsSM goes up, the firmware raises trap 144.
	ASSERT_TRUE(Ok(Run(g, "(sleep 60 </dev/infiniband/issm0 >/dev/null 2>&1 &); sleep 1")));
	// OpenSM logs the notice with its producer's LID.
	std::regex logged("num:144 .*from LID:" + std::to_string(l0) + "\\b");
	std::string log;
	bool seen = false;
	for (int i = 0; i < 30 && !seen; i++) {
		log = Run(sm, "grep -i 'num:144' /tmp/opensm.log || true").output;
		seen = std::regex_search(log, logged);
		if (!seen)
			std::this_thread::sleep_for(1s);
	}
	EXPECT_TRUE(seen) << "OpenSM did not log trap 144 from LID " << l0 << ":\n"
			  << log << Run(sm, "tail -30 /tmp/opensm.log").output;

	// Repressed: the TrapRepress reached the firmware (MAD_IFC), which then
	// stops resending (about once a second, up to 16 times, then "given
	// up", when nobody represses it). The counters are the emulator's own,
	// read when asked: no log to lag behind.
	Traps t = FirmwareTraps();
	for (int i = 0; i < 10 && t.repressed < 1; i++) {
		std::this_thread::sleep_for(500ms);
		t = FirmwareTraps();
	}
	std::this_thread::sleep_for(4s);
	Traps after = FirmwareTraps();
	std::printf("trap 144: sent %ld time(s) by the firmware, repressed %ld, given up %ld; OpenSM: %s\n",
		    after.sent144, after.repressed, after.given_up, log.c_str());
	EXPECT_GE(after.sent144, 1) << after.line;
	EXPECT_LE(after.sent144, 3) << "the firmware kept resending: no TrapRepress reached it\n" << after.line;
	EXPECT_EQ(after.repressed - before.repressed, 1) << after.line;
	EXPECT_EQ(after.sent144, t.sent144) << "still resent after it was repressed\n" << after.line;
	EXPECT_EQ(after.given_up, 0) << after.line;
	auto cap = Run(g, "cat /sys/class/infiniband/mthca0/ports/1/cap_mask");
	std::printf("vm0 cap_mask while issm0 is open: %s", cap.output.c_str());
}

}  // namespace
}  // namespace iblab::vmtest
