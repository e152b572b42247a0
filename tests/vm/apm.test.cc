// SPDX-License-Identifier: GPL-2.0
// Issue 11: path migration from user space on Debian's stack (apm.h says
// what apm_check does): the emulator's part, in a lab of its own.
#include <filesystem>

#include "apm.h"

namespace iblab::vmtest {
namespace {

class ApmUpstream : public GatedSuite {
protected:
	static void SetUpTestSuite()
	{
		setup_error_.clear();
		LabOptions o = MixedOptions({{"vm0", Stack::Upstream}}, "star:1");
		// apm_check runs from the build tree: share its directory at the
		// same path.
		o.shares.push_back(std::filesystem::path(APM_CHECK_BINARY).parent_path().string());
		StartLab(std::move(o), "ApmUpstream");
		if (!lab_)
			return;
		Guest &g = lab_->guest("vm0");
		auto r = g.exec(LoadCommand(Stack::Upstream) + " && modprobe ib_uverbs", 120s);
		if (!r.ok()) {
			setup_error_ = "loading the stack failed: " + r.output;
			return;
		}
		setup_error_ = StartOpenSmLmc1(g);
	}

	static void TearDownTestSuite() { StopLab(); }
};

TEST_F(ApmUpstream, MigratesToTheAlternatePath) { RunApmCheck(guest("vm0")); }

}  // namespace
}  // namespace iblab::vmtest
