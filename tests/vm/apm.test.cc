// SPDX-License-Identifier: GPL-2.0
// Issue 11: path migration on the emulated MT25208, from user space. One
// guest on a switch (fabric "star:1") runs OpenSM with LMC 1, so
// its port answers to two LIDs; apm_check (tests/vm/apm_check.cc) connects
// two RC QPs of one process through the port (the HCA loops the packets
// back) with the primary path on the base LID and the alternate on base
// LID + 1, migrates the requester by software and checks that traffic goes
// on with the data intact, that ibv_query_qp shows the paths swapped on
// both QPs and that the responder gets its PATH_MIG async event.
//
// ApmUpstream runs Debian's stack (stock kernel, upstream ib_mthca): it
// proves the emulator. ApmOurs runs our modules (OursRole(); registered on
// the debug kernel lane): it proves our ib_mthca drives the same registers.
#include <cstdio>
#include <filesystem>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const std::string kPortDir = "/sys/class/infiniband/mthca0/ports/1";

class ApmSuite : public GatedSuite {
protected:
	static void Start(Stack s, const std::string &suite)
	{
		setup_error_.clear();
		LabOptions o = MixedOptions({{"vm0", s}}, "star:1");
		// apm_check runs from the build tree: share its directory at the
		// same path.
		o.shares.push_back(std::filesystem::path(APM_CHECK_BINARY).parent_path().string());
		StartLab(std::move(o), suite);
		if (!lab_)
			return;
		Guest &g = lab_->guest("vm0");
		auto r = g.exec(LoadCommand(s) + " && modprobe ib_uverbs", 120s);
		if (!r.ok()) {
			setup_error_ = "loading the stack failed: " + r.output;
			return;
		}
		// -l 1: every port gets LMC 1, two LIDs.
		r = g.exec("opensm -l 1 -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
		if (!r.ok()) {
			setup_error_ = "opensm did not start: " + r.output;
			return;
		}
		auto w = WaitPortActive(g, 150);
		if (!w.ok())
			setup_error_ = "port not ACTIVE: " + w.output + "\nopensm log:\n" +
				       g.exec("tail -25 /tmp/opensm.log", 30s).output;
	}

	static void TearDownTestSuite() { StopLab(); }

	// The port's LID and LMC as the kernel read them from PortInfo (the
	// emulator's SMA), then the check program.
	static void RunCheck()
	{
		Guest &g = guest("vm0");
		auto lmc = Run(g, "cat " + kPortDir + "/lid_mask_count " + kPortDir + "/lid");
		ASSERT_TRUE(Ok(lmc));
		unsigned l = 0, lid = 0;
		ASSERT_EQ(std::sscanf(lmc.output.c_str(), "%u %x", &l, &lid), 2) << lmc.output;
		EXPECT_EQ(l, 1u) << "PortInfo LMC as OpenSM -l 1 set it";
		EXPECT_EQ(lid & 1, 0u) << "base LID 0x" << std::hex << lid << " not aligned to LMC 1";
		auto r = Run(g, APM_CHECK_BINARY, 120s);
		std::printf("%s", r.output.c_str());  // the per-check lines, for the log
		EXPECT_TRUE(Ok(r)) << r.output << "\ndmesg:\n" << Run(g, "dmesg | tail -30").output;
		EXPECT_NE(r.output.find(" checks, 0 failed\n"), std::string::npos) << r.output;
		EXPECT_EQ(r.output.find("FAIL "), std::string::npos) << r.output;
		EXPECT_NE(r.output.find("PASS responder: one PATH_MIG async event"), std::string::npos) << r.output;
	}
};

class ApmUpstream : public ApmSuite {
protected:
	static void SetUpTestSuite() { Start(Stack::Upstream, "ApmUpstream"); }
};

TEST_F(ApmUpstream, MigratesToTheAlternatePath) { RunCheck(); }

class ApmOurs : public ApmSuite {
protected:
	static void SetUpTestSuite() { Start(OursRole(), "ApmOurs"); }
};

TEST_F(ApmOurs, MigratesToTheAlternatePath) { RunCheck(); }

}  // namespace
}  // namespace iblab::vmtest
