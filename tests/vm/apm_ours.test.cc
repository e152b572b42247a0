// SPDX-License-Identifier: GPL-2.0
// Issue 11: path migration from user space on our stack (apm.h says what
// apm_check does), in vm.OursAlone's debug guest (ours_alone.h): our
// ib_mthca and ib_uverbs under KASAN, lockdep and kmemleak. OpenSM (LMC 1)
// starts in the guest here and stays for the suites after this one.
#include "apm.h"
#include "ours_alone.h"

namespace iblab::vmtest {
namespace {

class ApmOurs : public OursAlone {
protected:
	static void SetUpTestSuite()
	{
		if (OursRole() == Stack::Ours)
			Prepare("ib_uverbs", true);
	}
	void SetUp() override { SetUpPrepared("ApmUpstream runs the upstream stack"); }
};

TEST_F(ApmOurs, MigratesToTheAlternatePath) { RunApmCheck(guest("vm0")); }

}  // namespace
}  // namespace iblab::vmtest
