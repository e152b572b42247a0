// SPDX-License-Identifier: GPL-2.0
// Issue 8: the MAD agent lifetime race, on the debug kernel lane.
// tests/kmod/mad_agent_race registers and unregisters MAD agents of our
// ib_mad while their completions, flushed sends and receive handlers are
// still running (MADs looped back to the port's own LID; see the module's
// header). Two suites, each with one debug guest (vm0, ours) alone on a
// switch; OursMadRace's lab is the one vm.OursAlone shares with
// OursUverbsFuzz (ours_alone.h):
//
//   OursMadRace        our modules (build/modules-debug): the module says
//                      PASS, the race really happened (held and storm
//                      iterations overlapped unregister), and the guest has
//                      no KASAN, lockdep or other report (the fixture).
//   OursMadRaceBroken  the same module on build/modules-debug-broken,
//                      whose ib_mad frees the agent without waiting for the
//                      last reference (`make modules-debug-broken`):
//                      passes only when KASAN reports a use-after-free in
//                      ib_mad and the module's own check fails too. It
//                      shows that OursMadRace would catch the bug.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "ours_alone.h"

namespace iblab::vmtest {
namespace {

// What one load of mad_agent_race reported.
struct RaceResult {
	ExecResult exec;
	std::string log;                  // its kernel log lines
	std::map<std::string, int> done;  // the DONE line's counters
	std::string verdict;              // "PASS", "FAIL <why>" or ""
};

// Loads our stack and then mad_agent_race with `params` (the run happens
// inside modprobe), and collects what it logged.
RaceResult RunRace(Guest &g, const std::string &params)
{
	RaceResult res;
	res.exec = g.exec(LoadCommand(Stack::Ours) + " && modprobe mad_agent_race " + params, 600s);
	res.log = g.exec("dmesg | grep 'mad_agent_race: '", 60s).output;
	std::istringstream in(res.log);
	std::string l;
	std::regex kv(R"(([a-z_]+)=(-?[0-9]+))");
	while (std::getline(in, l)) {
		auto at = l.find("mad_agent_race: ");
		std::string msg = l.substr(at + 16);
		if (msg.rfind("DONE ", 0) == 0) {
			for (std::sregex_iterator it(msg.begin(), msg.end(), kv), end; it != end; ++it)
				res.done[(*it)[1]] = std::stoi((*it)[2]);
		} else if (msg.rfind("PASS", 0) == 0 || msg.rfind("FAIL", 0) == 0) {
			res.verdict = msg;
		}
	}
	return res;
}

LabOptions RaceOptions(const std::string &modules)
{
	LabOptions o = MixedOptions({{"vm0", Stack::Ours}}, "star:1");
	o.modules_dir = modules;
	return o;
}

// On the lab it shares with OursUverbsFuzz (ours_alone.h).
class OursMadRace : public OursAlone {
protected:
	static void SetUpTestSuite() { BootOnce(); }
};

TEST_F(OursMadRace, UnregisterWaitsForEveryReference)
{
	Guest &g = guest("vm0");
	RaceResult r = RunRace(g, "");
	std::printf("%s", r.log.c_str());
	ASSERT_TRUE(Ok(r.exec));
	ASSERT_FALSE(r.done.empty()) << "no DONE line:\n" << r.log;
	EXPECT_EQ(r.done["iterations"], 200);
	EXPECT_EQ(r.done["held"], 50);
	EXPECT_EQ(r.done["storm"], 150);
	EXPECT_EQ(r.done["sends"], 150 * 16);
	// The race happened: unregister ran while handlers of its agent did,
	// whose references the MAD layer dropped inside unregister's wait.
	EXPECT_EQ(r.done["held_overlapped"], 50) << r.log;
	EXPECT_GT(r.done["storm_overlapped"], 0) << r.log;
	// And unregister waited for them all.
	EXPECT_EQ(r.done["early"], 0);
	EXPECT_EQ(r.done["late"], 0);
	EXPECT_EQ(r.done["lost"], 0);
	EXPECT_EQ(r.done["errors"], 0);
	EXPECT_EQ(r.verdict, "PASS");
	EXPECT_TRUE(Ok(Run(g, "rmmod mad_agent_race", 60s)));
	// The fixture's TearDown fails on any KASAN, lockdep, ... line.
}

// The broken build: its own lab, which must end with problems.
class OursMadRaceBroken : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		error_ = DebugKernelMissing();
		const char *e = std::getenv("IBSTACK_BROKEN_MODULES");
		std::string dir = e && *e ? e : default_build_dir() + "/modules-debug-broken";
		if (error_.empty() && !std::filesystem::exists(dir + "/ib_mad.ko"))
			error_ = "no " + dir + "/ib_mad.ko: run make modules-debug-broken";
		if (!error_.empty())
			return;
		LabOptions o = RaceOptions(dir);
		o.run_dir = default_build_dir() + "/lab/" + make_run_id() + "-OursMadRaceBroken";
		try {
			lab_ = std::make_unique<Lab>(o);
			lab_->start();
		} catch (const std::exception &ex) {
			error_ = ex.what();
			lab_.reset();
		}
	}
	static void TearDownTestSuite()
	{
		if (lab_)
			lab_->shutdown();  // its report has the KASAN lines: expected
		lab_.reset();
	}
	void SetUp() override
	{
		if (!lab_)
			GTEST_FAIL() << "the lab did not start:\n" << error_;
	}

	static inline std::unique_ptr<Lab> lab_;
	static inline std::string error_;
};

TEST_F(OursMadRaceBroken, KasanCatchesUnregisterNotWaiting)
{
	Guest &g = lab_->guest("vm0");
	// Held iterations only: each one leaves exactly one put on the freed
	// agent; a storm's completions on a freed agent would also queue its
	// poisoned work item, which can take the guest down before its log is
	// read.
	RaceResult r = RunRace(g, "iterations=4 hold_every=1");
	std::printf("%s", r.log.c_str());
	auto hits = g.check_new_dmesg();
	std::string uaf;
	for (const auto &h : hits)
		if (h.rule == "kasan" && h.line.find("BUG: KASAN: use-after-free in ") != std::string::npos &&
		    h.line.find("[ib_mad]") != std::string::npos)
			uaf = h.line;
	if (uaf.empty()) {
		// The guest may not answer any more: its console has the report too.
		std::ifstream in(g.dir() + "/console.log");
		std::string l;
		while (uaf.empty() && std::getline(in, l))
			if (l.find("BUG: KASAN: use-after-free in ") != std::string::npos &&
			    l.find("[ib_mad]") != std::string::npos)
				uaf = l;
	}
	EXPECT_FALSE(uaf.empty()) << "KASAN reported no use-after-free in ib_mad; dmesg hits:\n"
				  << (hits.empty() ? "(none)\n" : format_hits("dmesg", hits)) << r.log;
	std::printf("caught: %s\n", uaf.c_str());
	// The module's own check fails as well: unregister came back while
	// the handler still ran.
	EXPECT_GT(r.done["early"], 0) << r.log;
	EXPECT_EQ(r.verdict.rfind("FAIL", 0), 0u) << r.log;
	// And the lab's report, which fails every other suite, lists it.
	LabReport rep = lab_->shutdown();
	EXPECT_FALSE(rep.ok());
	EXPECT_NE(rep.text().find("KASAN: use-after-free"), std::string::npos) << rep.text();
	lab_.reset();
}

}  // namespace
}  // namespace iblab::vmtest
