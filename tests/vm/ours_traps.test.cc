// SPDX-License-Identifier: GPL-2.0
// Issue 8: trap forwarding of our ib_mthca (mthca_trap.c), end to end.
//
//   OursTraps   vm0 ours, vm1 upstream with OpenSM, back to back (b2b)
//
// Opening /dev/infiniband/issm0 in vm0 sets IsSM in the port's capability
// mask (ib_umad -> ib_modify_port -> SET_IB); the emulated firmware then
// raises trap 144 (capability mask changed) on QP0 with SLID 0, resending
// it about every second (SubnetTimeout 18) until a TrapRepress with its
// TID reaches MAD_IFC, at most 16 times (emulator/hca/traps.cc, which logs
// each send in ibemu.log). Our driver must forward it to the SM, and pass
// the SM's TrapRepress back to the firmware. The test shows OpenSM (vm1)
// logging trap 144 from vm0's LID, the firmware sending it once or twice
// and never giving up, and the guests' dmesg clean (fixture).
//
// Labelled wip (not in make check): it passed once, and failed as it should
// with TrapRepress kept from the firmware and with forwarding switched off,
// but a later run on the unchanged stack read no trap line of vm0 from
// ibemu.log although the emulator had logged one: its info lines are not
// flushed per line, so the file can lag. It needs a flushed or queryable
// trap counter of the emulator before it can gate make check.
#include <fstream>
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

	// Lines of the emulator's log about vm0's trap `num`: sends, and the
	// firmware giving up.
	static std::pair<int, int> EmulatorTrapLines(int num)
	{
		std::ifstream in(lab_->run_dir() + "/ibemu.log");
		std::string l, sent = ": trap " + std::to_string(num) + " (TID",
			       gave_up = ": trap " + std::to_string(num) + " not repressed";
		int s = 0, g = 0;
		while (std::getline(in, l)) {
			if (l.find("vm0") == std::string::npos)
				continue;
			s += l.find(sent) != std::string::npos;
			g += l.find(gave_up) != std::string::npos;
		}
		return {s, g};
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
	ASSERT_EQ(EmulatorTrapLines(144).first, 0) << "a trap 144 before the test";

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

	// Repressed: the firmware stops resending (about once a second, up to
	// 16 times, then "given up", when nobody represses it).
	int first = EmulatorTrapLines(144).first;
	std::this_thread::sleep_for(6s);
	auto [sent, gave_up] = EmulatorTrapLines(144);
	std::printf("trap 144: sent %d time(s) by the firmware; OpenSM: %s\n", sent, log.c_str());
	EXPECT_GE(sent, 1);
	EXPECT_LE(sent, 3) << "the firmware kept resending: no TrapRepress reached it";
	EXPECT_EQ(sent, first) << "still resent after OpenSM logged it";
	EXPECT_EQ(gave_up, 0);
	auto cap = Run(g, "cat /sys/class/infiniband/mthca0/ports/1/cap_mask");
	std::printf("vm0 cap_mask while issm0 is open: %s", cap.output.c_str());
}

}  // namespace
}  // namespace iblab::vmtest
