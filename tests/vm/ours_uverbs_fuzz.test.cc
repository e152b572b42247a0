// SPDX-License-Identifier: GPL-2.0
// Issue 10: fuzzed write() calls on our ib_uverbs, on the debug kernel lane
// (KASAN, lockdep, kmemleak, ...; Documentation/lab.md).
//
//   OursUverbsFuzz  one guest of ours (vm0) on the debug kernel, alone on a
//                   switch, no SM (the lab of vm.OursAlone, ours_alone.h). tests/uverbs/abi_check --fuzz N: no
//                   hang, no write outside a response room, a fresh
//                   context afterwards; then a kmemleak scan finds nothing,
//                   the device still answers every case of the tester as
//                   its table says, and a CQ in use still delivers its
//                   completions across a resize (cq_resize_check). The
//                   fixture fails on any KASAN, lockdep, WARNING, ... line.
//
// N is IBSTACK_UVERBS_FUZZ_CALLS (default the 100,000: about 35 s,
// 2,900 calls/s, on TCG), the seed IBSTACK_UVERBS_FUZZ_SEED (default 1).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ours_alone.h"

namespace iblab::vmtest {
namespace {

// On the lab it shares with OursMadRace (ours_alone.h).
class OursUverbsFuzz : public OursAlone {
protected:
	static void SetUpTestSuite() { Prepare("ib_uverbs", false); }
	void SetUp() override { SetUpPrepared(nullptr); }
};

TEST_F(OursUverbsFuzz, NoReportNoLeakAndTheDeviceWorksAfterwards)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(g.has_kmemleak()) << "the guest's kernel has no kmemleak: not the debug kernel";
	const std::string calls = EnvOr("IBSTACK_UVERBS_FUZZ_CALLS", "100000");
	const std::string seed = EnvOr("IBSTACK_UVERBS_FUZZ_SEED", "1");
	const std::string bin = UVERBS_ABI_CHECK_BINARY;

	auto start = std::chrono::steady_clock::now();
	auto f = Run(g, bin + " --fuzz " + calls + " --seed " + seed + " 2>&1", 1800s);
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::printf("%s fuzzed write() calls (seed %s) on the debug kernel: %.1f s, %.0f calls/s\n%s",
		    calls.c_str(), seed.c_str(), secs, std::stod(calls) / secs, f.output.c_str());
	EXPECT_TRUE(Ok(f)) << f.output;
	EXPECT_NE(f.output.find("fuzz: a fresh context afterwards: ok"), std::string::npos) << f.output;
	EXPECT_NE(f.output.find("fuzz: writes outside the response room: 0\n"), std::string::npos) << f.output;

	// Every file the fuzz opened is closed: nothing of ib_uverbs, ib_mthca
	// or ib_core may be left unreferenced.
	auto leaks = g.check_kmemleak();
	EXPECT_TRUE(leaks.empty()) << format_hits(g.dir() + "/kmemleak.txt", leaks);

	// The device still works: every case of the tester as its table says,
	auto c = Run(g, bin + " --stack ours 2>&1", 600s);
	EXPECT_TRUE(Ok(c)) << c.output;
	EXPECT_NE(c.output.find("\ncases: "), std::string::npos) << c.output;
	// and completions still flow through a user CQ and its resize.
	auto q = Run(g, std::string(UVERBS_CQ_RESIZE_CHECK_BINARY) + " 2>&1", 120s);
	EXPECT_TRUE(Ok(q)) << q.output;
	EXPECT_NE(q.output.find("cq_resize_check: 0 failed"), std::string::npos) << q.output;
}

// Issue 10, the lifetime races (tests/uverbs/race_check.cc): a CQ destroyed
// with an event unread and with events flowing, and processes killed while
// their threads are inside commands and their CQs raise events. On the
// debug kernel a use-after-free or a list corruption there is a KASAN or
// list-debug report, which the fixture fails; a leaked object is found by
// the kmemleak scan after. IBSTACK_UVERBS_RACE_ROUNDS / _KILLS size it.
TEST_F(OursUverbsFuzz, DestroyAndCloseRacingWithEvents)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(g.has_kmemleak()) << "the guest's kernel has no kmemleak: not the debug kernel";
	const std::string rounds = EnvOr("IBSTACK_UVERBS_RACE_ROUNDS", "200");
	const std::string kills = EnvOr("IBSTACK_UVERBS_RACE_KILLS", "15");
	auto start = std::chrono::steady_clock::now();
	auto r = Run(g, std::string(UVERBS_RACE_CHECK_BINARY) + " --rounds " + rounds + " --kills " + kills +
				" --seed 1 2>&1", 900s);
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::printf("race_check on the debug kernel: %.1f s\n%s", secs, r.output.c_str());
	EXPECT_TRUE(Ok(r)) << r.output;
	EXPECT_NE(r.output.find("race_check: unread: ok, " + rounds + " rounds"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("race_check: inflight: ok, " + rounds + " rounds"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("race_check: kill: ok, " + kills + " processes"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("race_check: after: ok"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("race_check: 0 failed"), std::string::npos) << r.output;
	auto leaks = g.check_kmemleak();
	EXPECT_TRUE(leaks.empty()) << format_hits(g.dir() + "/kmemleak.txt", leaks);
}

// The shared lab stops when the program ends.
const auto *const kAloneEnv = ::testing::AddGlobalTestEnvironment(new SharedLabEnvironment);

}  // namespace
}  // namespace iblab::vmtest
