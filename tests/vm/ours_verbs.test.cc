// SPDX-License-Identifier: GPL-2.0
// Issue 10, second slice: user-space verbs on our ib_uverbs + ib_mthca
// (user MRs, CQs with completion channels, RC/UC/UD QPs, SRQs) under
// Debian's unmodified libibverbs 44 and its mthca provider.
//
//   OursVerbs  vm0 runs our stack, vm1 the upstream one, back to back,
//              OpenSM in vm1. The ibv_*_pingpong examples (with -c: the
//              received buffers are checked) run between ours and
//              upstream in both roles, and ours against ours (server and
//              client both in vm0, over localhost). Their side channel
//              is the lab's management network (vm0/vm1 by name).
//
// With IBSTACK_OURS_STACK=upstream vm0 runs upstream too (vm_fixture.h),
// which checks the test itself.
#include <iostream>
#include <regex>
#include <thread>

#include "ours_user_verbs.h"
#include "pingpong.h"

namespace iblab::vmtest {
namespace {

// On the lab of vm.OursUserVerbs (ours_user_verbs.h), after OursUverbs.
class OursVerbs : public GatedSuite {
protected:
	static void SetUpTestSuite()
	{
		setup_error_.clear();
		ShareLab(UserVerbsLab(), "OursUserVerbs");
		if (!lab_)
			return;
		setup_error_ = BringUpWithSm(*lab_, "vm1");
		if (!setup_error_.empty())
			return;
		setup_error_ = ExecOnAll(
			lab_->guests(), [](Guest &) { return std::string("modprobe ib_uverbs"); }, "modprobe ib_uverbs",
			60s);
		// The user verbs of vm0 are ours: out-of-tree ("O") modules.
		Guest &ours = guest("vm0");
		if (ours.stack() == Stack::Ours) {
			auto r = ours.exec("grep O /sys/module/ib_uverbs/taint && grep O /sys/module/ib_mthca/taint", 30s);
			if (!r.ok())
				setup_error_ += "vm0 does not run our ib_uverbs/ib_mthca: " + r.output + "\n";
		}
	}

	// Ours serving upstream, upstream serving ours, ours serving ours; the
	// first role that fails ends the test (a broken stack would make each
	// of the others wait out its time limit as well).
	static void AllRoles(const std::string &tool, const std::string &extra = "")
	{
		Guest &ours = guest("vm0"), &up = guest("vm1");
		{
			SCOPED_TRACE("ours serves upstream");
			if (!ExpectPingpong(tool, ours, up, "vm0", extra))
				return;
		}
		{
			SCOPED_TRACE("upstream serves ours");
			if (!ExpectPingpong(tool, up, ours, "vm1", extra))
				return;
		}
		{
			SCOPED_TRACE("ours serves ours");
			ExpectPingpong(tool, ours, ours, "localhost", extra);
		}
	}

	// perftest between ours and upstream, both roles (ExpectPerftest); the
	// first role that fails ends the test.
	static void BothRoles(const std::string &tool, unsigned bytes)
	{
		Guest &ours = guest("vm0"), &up = guest("vm1");
		for (auto [sg, cg, host] : {std::tuple{&ours, &up, "vm0"}, std::tuple{&up, &ours, "vm1"}}) {
			ExpectPerftest(tool, bytes, *sg, *cg, host);
			if (HasFailure())
				return;
		}
	}
};

TEST_F(OursVerbs, RcPingpong) { AllRoles("ibv_rc_pingpong"); }

TEST_F(OursVerbs, UcPingpong) { AllRoles("ibv_uc_pingpong"); }

TEST_F(OursVerbs, UdPingpong) { AllRoles("ibv_ud_pingpong"); }

// -e: each side sleeps in ibv_get_cq_event() on a completion channel, arms
// the CQ again after each event and acknowledges it before ibv_destroy_cq()
// (which waits for DESTROY_CQ's comp_events_reported to be acknowledged).
TEST_F(OursVerbs, RcPingpongWithEvents) { AllRoles("ibv_rc_pingpong", " -e"); }

// 16 QPs on each side share one SRQ.
TEST_F(OursVerbs, SrqPingpong) { AllRoles("ibv_srq_pingpong"); }

// An unprivileged process is held to RLIMIT_MEMLOCK: with 64 KiB it cannot
// register ibv_rc_pingpong's 1 MiB buffer (ENOMEM: "Couldn't register MR",
// exit 1); with its hard limit (8 MiB on Debian) it can, and then waits for
// a client until `timeout` ends it (124).
TEST_F(OursVerbs, MemlockLimitHoldsUnprivilegedProcess)
{
	Guest &ours = guest("vm0");
	auto as_nobody = [&](const std::string &limit, int secs) {
		return Run(ours,
			   "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'ulimit -l " + limit +
				   " && exec timeout " + std::to_string(secs) +
				   " ibv_rc_pingpong -g 0 -s 1048576' 2>&1; echo rc=$?",
			   60s);
	};
	auto low = as_nobody("64", 20);
	EXPECT_NE(low.output.find("Couldn't register MR"), std::string::npos) << low.output;
	EXPECT_NE(low.output.find("rc=1\n"), std::string::npos) << low.output;
	auto high = as_nobody("$(ulimit -Hl)", 5);
	EXPECT_EQ(high.output.find("Couldn't"), std::string::npos) << high.output;
	EXPECT_NE(high.output.find("rc=124\n"), std::string::npos) << high.output;
}

TEST_F(OursVerbs, PerftestWriteBw) { BothRoles("ib_write_bw", 65536); }
TEST_F(OursVerbs, PerftestReadBw) { BothRoles("ib_read_bw", 65536); }
TEST_F(OursVerbs, PerftestSendBw) { BothRoles("ib_send_bw", 65536); }
TEST_F(OursVerbs, PerftestAtomicBw) { BothRoles("ib_atomic_bw", 8); }
TEST_F(OursVerbs, PerftestWriteLat) { BothRoles("ib_write_lat", 2); }
TEST_F(OursVerbs, PerftestSendLat) { BothRoles("ib_send_lat", 2); }

// Last: every process above closed its files with whatever it had left;
// the kernel said nothing about it, and ib_uverbs unloads (no file, no
// object left behind).
TEST_F(OursVerbs, KernelQuietAndUverbsUnloads)
{
	Guest &ours = guest("vm0");
	auto log = Run(ours, "dmesg | grep -E 'WARNING|BUG|Oops|not destroyed|left at removal|ib_uverbs|mthca' "
			     "| grep -vE 'loading out-of-tree module|module verification failed' || true");
	EXPECT_TRUE(Ok(log));
	EXPECT_EQ(log.output.find("WARNING"), std::string::npos) << log.output;
	EXPECT_EQ(log.output.find("BUG"), std::string::npos) << log.output;
	EXPECT_EQ(log.output.find("not destroyed"), std::string::npos) << log.output;
	EXPECT_EQ(log.output.find("left at removal"), std::string::npos) << log.output;
	EXPECT_TRUE(Ok(Run(ours, "rmmod ib_uverbs")));
}

}  // namespace
}  // namespace iblab::vmtest
