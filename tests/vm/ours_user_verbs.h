// SPDX-License-Identifier: GPL-2.0
// The lab of vm.OursUserVerbs, which runs OursUverbs (ours_uverbs.test.cc,
// no SM) and then OursVerbs (ours_verbs.test.cc, OpenSM in vm1) in one
// process on one boot: vm0 ours, vm1 upstream, back to back.
#pragma once

#include <filesystem>

#include "vm_fixture.h"

namespace iblab::vmtest {

inline LabOptions UserVerbsLab()
{
	LabOptions o = MixedOptions({{"vm0", OursRole()}, {"vm1", Stack::Upstream}}, "b2b");
	// The ABI checker runs from the build tree, which the guest does not
	// see through its root when the tree lies under /tmp (a tmpfs in the
	// guest): share its directory at the same path.
	o.shares.push_back(std::filesystem::path(UVERBS_ABI_CHECK_BINARY).parent_path().string());
	return o;
}

}  // namespace iblab::vmtest
