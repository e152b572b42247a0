// SPDX-License-Identifier: GPL-2.0
// One guest of ours (vm0) on the debug kernel, alone on a switch (no SM),
// booted once for every suite of the run that uses it (ShareLab): vm.OursAlone
// runs OursMadRace and OursUverbsFuzz in one process, so they share one
// boot, one stack load and one teardown (leak scans, dmesg) instead of two.
#pragma once

#include <cstdlib>
#include <filesystem>
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
		o.shares.push_back(std::filesystem::path(UVERBS_ABI_CHECK_BINARY).parent_path().string());
		ShareLab(std::move(o), "OursAlone");
	}
	static void TearDownTestSuite() {}  // SharedLabEnvironment stops the lab
};

}  // namespace iblab::vmtest
