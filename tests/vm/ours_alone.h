// SPDX-License-Identifier: GPL-2.0
// One guest of ours (vm0) on the debug kernel, alone on a switch, booted
// once for every suite of the run that uses it (ShareLab): vm.OursAlone runs
// OursMadRace, OursUverbsFuzz, OursSmoke, ApmOurs and OursUcm in one
// process, in that order (the order their files are linked in), so they
// share one boot, one stack load and one teardown (leak scans, dmesg)
// instead of five. The first three need no SM (mthca_smoke sets the port's
// LID itself); ApmOurs starts OpenSM with LMC 1, which OursUcm then uses.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "vm_fixture.h"

namespace iblab::vmtest {

inline std::string DebugKernelMissing()
{
	const char *k = std::getenv("IBLAB_KERNEL_DIR");
	if (!k || !*k)
		return "IBLAB_KERNEL_DIR is not set: this suite runs on the debug kernel "
		       "(make debug-kernel modules-debug modules-debug-broken; ctest sets it)";
	return "";
}

class OursAlone : public VmSuite {
protected:
	// Boots the shared lab unless an earlier suite of this run did.
	static void BootOnce()
	{
		if (lab_ || !boot_error_.empty())
			return;
		boot_error_ = DebugKernelMissing();
		if (!boot_error_.empty())
			return;
		LabOptions o = MixedOptions({{"vm0", Stack::Ours}}, "star:1");
		// The tester runs from the build tree, which the guest does not
		// see through its root when the tree lies under /tmp.
		for (const std::string &bin : {UVERBS_ABI_CHECK_BINARY, UCM_ABI_CHECK_BINARY, APM_CHECK_BINARY}) {
			std::string dir = std::filesystem::path(bin).parent_path().string();
			if (std::find(o.shares.begin(), o.shares.end(), dir) == o.shares.end())
				o.shares.push_back(dir);
		}
		ShareLab(std::move(o), "OursAlone");
	}
	static void TearDownTestSuite() {}  // SharedLabEnvironment stops the lab

	// For a suite's SetUpTestSuite: boots once, loads our stack and then
	// each module of `more` (space-separated), and with `sm` starts OpenSM
	// (LMC 1) unless it runs and waits for the port. What failed goes to
	// setup_error_, which SetUpPrepared() turns into each test's failure.
	static void Prepare(const std::string &more, bool sm)
	{
		setup_error_.clear();
		BootOnce();
		if (!lab_)
			return;  // VmSuite::SetUp reports the boot error
		Guest &g = lab_->guest("vm0");
		std::string cmd = LoadCommand(Stack::Ours);
		std::istringstream in(more);
		for (std::string m; in >> m;)
			cmd += " && modprobe " + m;
		auto r = g.exec(cmd, 180s);
		if (!r.ok())
			setup_error_ = "loading failed: " + r.output;
		else if (sm)
			setup_error_ = StartOpenSmLmc1(g);
	}

	// For a suite's SetUp: skipped with `upstream_why` when the "ours"
	// role is played by upstream (if not null), failed when Prepare() was.
	void SetUpPrepared(const char *upstream_why)
	{
		if (upstream_why && OursRole() != Stack::Ours)
			GTEST_SKIP() << upstream_why;
		VmSuite::SetUp();
		if (!setup_error_.empty())
			GTEST_FAIL() << setup_error_;
	}

	static inline std::string setup_error_;
};

}  // namespace iblab::vmtest
