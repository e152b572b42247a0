// SPDX-License-Identifier: GPL-2.0
// The debug kernel lane catches what it is there for: on the debug guest
// kernel (IBLAB_KERNEL_DIR, `make debug-kernel`), the canary module
// (tests/kmod/lane_canary, `make modules-debug`) commits a lock-order
// inversion, a mutex under a spinlock, a use-after-free and a leak on
// request, and the lab's checks must report each one, while a clean load
// reports nothing. The lab's own teardown report must fail such a run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "iblab/config.h"
#include "iblab/lab.h"

namespace iblab::vmtest {
namespace {

using namespace std::chrono_literals;

bool HasRule(const std::vector<DmesgHit> &hits, const std::string &rule)
{
	for (const auto &h : hits)
		if (h.rule == rule)
			return true;
	return false;
}

std::string Describe(const std::vector<DmesgHit> &hits)
{
	return hits.empty() ? "(nothing reported)\n" : format_hits("dmesg", hits);
}

class LaneCanary : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		const char *kdir = std::getenv("IBLAB_KERNEL_DIR");
		if (!kdir || !*kdir) {
			error_ = "IBLAB_KERNEL_DIR is not set: this suite runs on the debug kernel "
				 "(make debug-kernel modules-debug; ctest sets it)";
			return;
		}
		const char *c = std::getenv("IBSTACK_CANARY_MODULES");
		LabOptions o;
		o.guests = {{"vm0", Stack::Ours}};
		o.modules_dir = c && *c ? c : default_build_dir() + "/canary-debug";
		o.hca = false;
		o.run_dir = default_build_dir() + "/lab/" + make_run_id() + "-LaneCanary";
		try {
			lab_ = std::make_unique<Lab>(o);
			lab_->start();
		} catch (const std::exception &e) {
			error_ = e.what();
			lab_.reset();
		}
	}
	static void TearDownTestSuite()
	{
		if (lab_)
			lab_->shutdown();
		lab_.reset();
	}
	void SetUp() override
	{
		if (!lab_)
			GTEST_FAIL() << "the lab did not start:\n" << error_;
	}

	static Guest &vm0() { return lab_->guest("vm0"); }

	// Loads the canary with `fault`, unloads it, and returns what the
	// dmesg check finds in the lines it logged.
	static std::vector<DmesgHit> Commit(const std::string &fault)
	{
		auto r = vm0().exec("modprobe lane_canary fault=" + fault + " && rmmod lane_canary", 120s);
		EXPECT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
		return vm0().check_new_dmesg();
	}

	static inline std::unique_ptr<Lab> lab_;
	static inline std::string error_;
};

TEST_F(LaneCanary, BootsTheDebugKernel)
{
	auto r = vm0().exec("uname -r; dmesg | grep -c -e 'KernelAddressSanitizer initialized' "
			    "-e 'Lock dependency validator' -e 'Kernel memory leak detector initialized'",
			    60s);
	ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
	EXPECT_NE(r.output.find("-ibdebug\n3\n"), std::string::npos) << r.output;
	EXPECT_TRUE(vm0().has_kmemleak());
	// For `make check` to print at the end.
	std::string dir = default_build_dir() + "/lab";
	std::filesystem::create_directories(dir);
	char line[200];
	snprintf(line, sizeof line, "debug guest boot-to-shell (%s, TCG): %.1f s\n", lab_->kernel_version().c_str(),
		 vm0().boot_seconds());
	std::ofstream(dir + "/timings-debug.txt", std::ios::trunc) << line;
}

TEST_F(LaneCanary, CleanLoadReportsNothing)
{
	auto hits = Commit("none");
	EXPECT_TRUE(hits.empty()) << Describe(hits);
	// Also no leak left over from the boot: every later leak is the canary's.
	auto leaks = vm0().check_kmemleak();
	EXPECT_TRUE(leaks.empty()) << Describe(leaks);
}

TEST_F(LaneCanary, LockInversionIsCaught)
{
	auto hits = Commit("lock");
	EXPECT_TRUE(HasRule(hits, "lockdep")) << Describe(hits);
}

TEST_F(LaneCanary, SleepInAtomicIsCaught)
{
	auto hits = Commit("sleep");
	bool found = false;
	for (const auto &h : hits)
		found |= h.line.find("sleeping function called from invalid context") != std::string::npos;
	EXPECT_TRUE(found) << Describe(hits);
}

TEST_F(LaneCanary, UseAfterFreeIsCaught)
{
	auto hits = Commit("uaf");
	bool found = false;
	for (const auto &h : hits)
		found |= h.line.find("BUG: KASAN: use-after-free in lane_canary_init") != std::string::npos;
	EXPECT_TRUE(found) << Describe(hits);
}

TEST_F(LaneCanary, LeakIsCaught)
{
	// The module stays loaded: kmemleak names the allocating function
	// only while its module's symbols are there.
	auto r = vm0().exec("modprobe lane_canary fault=leak", 120s);
	ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
	auto leaks = vm0().check_kmemleak();
	ASSERT_FALSE(leaks.empty()) << "kmemleak found nothing";
	std::ifstream in(vm0().dir() + "/kmemleak.txt");
	std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	EXPECT_NE(report.find("lane_canary"), std::string::npos) << report;
	EXPECT_NE(report.find("(size 96)"), std::string::npos) << report;
}

// What fails every other suite: the lab's teardown report lists them all.
TEST_F(LaneCanary, TeardownReportFailsTheRun)
{
	LabReport rep = lab_->shutdown();
	std::string text = rep.text();
	EXPECT_FALSE(rep.ok());
	for (const char *what : {"[lockdep]", "BUG: KASAN: use-after-free", "[kmemleak] unreferenced object",
				 "sleeping function called from invalid context"})
		EXPECT_NE(text.find(what), std::string::npos) << what << " missing in:\n" << text;
}

}  // namespace
}  // namespace iblab::vmtest
