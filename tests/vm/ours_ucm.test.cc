// SPDX-License-Identifier: GPL-2.0
// Issue 11: ib_ucm (/dev/infiniband/ucm0, Documentation/ucm.md) on the
// debug kernel lane (KASAN, lockdep, kmemleak; Documentation/lab.md).
//
//   OursUcm   one guest of ours (vm0) on a switch ("star:1"): vm.OursAlone's
//             debug guest (ours_alone.h), last of its suites. OpenSM in it
//             (LMC 1, started by ApmOurs or here) so the port is ACTIVE
//             with a LID; modprobe ib_ucm (which pulls
//             ib_cm), then tests/ucm/abi_check: its cases (framing, ids,
//             private-data bounds, credentials, a loopback connection,
//             close with a REQ pending, the event-queue bound), a bounded
//             fuzz, 1000 loopback connect/disconnect cycles; then rmmod
//             ib_ucm ib_cm and a kmemleak scan. The fixture fails the test
//             on any KASAN, lockdep, WARNING, ... line in dmesg.
//
// The fuzz's length is IBSTACK_UCM_FUZZ_CALLS (default 20000, about 20 s
// on TCG), the cycles IBSTACK_UCM_CYCLES (default 1000).
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ours_alone.h"

namespace iblab::vmtest {
namespace {

class OursUcm : public OursAlone {
protected:
	static void SetUpTestSuite()
	{
		if (OursRole() == Stack::Ours)
			Prepare("ib_ucm", true);
	}
	void SetUp() override { SetUpPrepared("upstream 6.1 has no ib_ucm"); }
};

TEST_F(OursUcm, AbiCasesFuzzCyclesUnloadNoLeak)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(g.has_kmemleak()) << "the guest's kernel has no kmemleak: not the debug kernel";
	const std::string bin = UCM_ABI_CHECK_BINARY;

	auto c = Run(g, bin + " 2>&1", 300s);
	std::printf("%s", c.output.c_str());
	EXPECT_TRUE(Ok(c)) << c.output;
	EXPECT_NE(c.output.find(" passed, 0 failed\n"), std::string::npos) << c.output;
	EXPECT_EQ(c.output.find("FAIL "), std::string::npos) << c.output;
	EXPECT_NE(c.output.find("PASS loopback connection: REQ REP RTU(established) DREQ DREP"), std::string::npos)
		<< c.output;

	const std::string calls = EnvOr("IBSTACK_UCM_FUZZ_CALLS", "20000");
	auto f = Run(g, bin + " --fuzz " + calls + " --seed 1 2>&1", 600s);
	std::printf("%s", f.output.c_str());
	EXPECT_TRUE(Ok(f)) << f.output;
	EXPECT_NE(f.output.find("fuzz: a fresh file afterwards: ok"), std::string::npos) << f.output;

	const std::string cycles = EnvOr("IBSTACK_UCM_CYCLES", "1000");
	auto y = Run(g, bin + " --cycles " + cycles + " 2>&1", 1200s);
	std::printf("%s", y.output.c_str());
	EXPECT_TRUE(Ok(y)) << y.output;
	EXPECT_NE(y.output.find("cycles: " + cycles + " connect/disconnect cycles ok"), std::string::npos)
		<< y.output;

	// Every file is closed: both modules unload, nothing is left behind.
	auto u = Run(g, "rmmod ib_ucm && rmmod ib_cm && ! test -e /dev/infiniband/ucm0 && "
			"! test -e /sys/class/infiniband_cm", 120s);
	EXPECT_TRUE(Ok(u)) << u.output;
	auto leaks = g.check_kmemleak();
	EXPECT_TRUE(leaks.empty()) << format_hits(g.dir() + "/kmemleak.txt", leaks);
}

}  // namespace
}  // namespace iblab::vmtest
