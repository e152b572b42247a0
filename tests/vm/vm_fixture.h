// SPDX-License-Identifier: GPL-2.0
// Shared fixture of the VM tests: one lab (booted once per test suite in
// SetUpTestSuite), a dmesg check after every test (new lines only) and a
// full one when the suite tears the lab down. Both fail the test/suite.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "iblab/config.h"
#include "iblab/lab.h"
#include "stack_commands.h"

namespace iblab::vmtest {

using namespace std::chrono_literals;

class VmSuite : public ::testing::Test {
public:
	// Stops a lab shared by the suites of one run (ShareLab); what the
	// teardown finds fails the run. SharedLabEnvironment calls it.
	static void StopSharedLab() { StopLab(); }

protected:
	// The suites that one ctest test runs in one process (iblab_vm_test
	// NAME, tests/vm/CMakeLists.txt) can share a lab with the same
	// options: the first to call this boots it, the later ones find it
	// running (and what the earlier ones left loaded). Such suites leave
	// TearDownTestSuite empty; SharedLabEnvironment stops the lab when the
	// program ends. A failed boot is not retried.
	static void ShareLab(LabOptions o, const std::string &name)
	{
		if (!lab_ && boot_error_.empty())
			StartLab(std::move(o), name);
	}

	// Boots the lab; a failure is remembered and fails every test of the suite.
	static void StartLab(LabOptions o, const std::string &suite)
	{
		if (o.run_dir.empty())
			o.run_dir = default_build_dir() + "/lab/" + make_run_id() + "-" + suite;
		boot_error_.clear();
		try {
			lab_ = std::make_unique<Lab>(std::move(o));
			lab_->start();
		} catch (const std::exception &e) {
			boot_error_ = e.what();
			lab_.reset();
		}
	}

	static void StopLab()
	{
		if (!lab_)
			return;
		std::string dir = lab_->run_dir();
		LabReport rep = lab_->shutdown();
		lab_.reset();
		if (!rep.ok())
			ADD_FAILURE() << "lab teardown found problems (logs in " << dir << "):\n" << rep.text();
	}

	void SetUp() override
	{
		if (!lab_)
			GTEST_FAIL() << "the lab did not start:\n" << boot_error_;
		lab_->mark(std::string("test ") + TestName() + " begins");
	}

	void TearDown() override
	{
		if (!lab_)
			return;
		lab_->mark(std::string("test ") + TestName() + " ends");
		// Every guest's dmesg at once: on the debug kernel one read takes
		// a second or two of a TCG guest.
		std::vector<std::pair<Guest *, std::future<std::vector<DmesgHit>>>> checks;
		for (Guest *g : lab_->guests())
			checks.emplace_back(g, std::async(std::launch::async, [g] { return g->check_new_dmesg(); }));
		for (auto &[g, f] : checks) {
			auto hits = f.get();
			if (!hits.empty())
				ADD_FAILURE() << "guest " << g->name() << ": dmesg has problems after this test:\n"
					      << format_hits(g->dir() + "/dmesg.txt", hits);
		}
	}

	static Guest &guest(const std::string &name) { return lab_->guest(name); }

	static const char *TestName() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

	// Runs `cmd` and returns the result; the output is printed on failure
	// by the EXPECT/ASSERT using it (see Ok()).
	static ExecResult Run(Guest &g, const std::string &cmd, std::chrono::milliseconds timeout = 120s)
	{
		return g.exec(cmd, timeout);
	}

	static inline std::unique_ptr<Lab> lab_;
	static inline std::string boot_error_;
};

// Registered (once) by a program whose suites ShareLab().
class SharedLabEnvironment : public ::testing::Environment {
public:
	void TearDown() override { VmSuite::StopSharedLab(); }
};

// A suite with a setup step after the boot (bringing the fabric up): what
// SetUpTestSuite stores in setup_error_ ("" for success) fails every test.
class GatedSuite : public VmSuite {
protected:
	void SetUp() override
	{
		VmSuite::SetUp();
		if (!setup_error_.empty())
			GTEST_FAIL() << setup_error_;
	}

	static inline std::string setup_error_;
};

// Runs cmd(g) in every guest at once (TCG guests are separate QEMU
// processes, so their work overlaps) and returns "" when every command
// succeeded, else "<guest>: <what>: <output>" of the first that failed.
inline std::string ExecOnAll(const std::vector<Guest *> &guests, const std::function<std::string(Guest &)> &cmd,
			     const std::string &what, std::chrono::seconds timeout = 120s)
{
	std::vector<std::pair<Guest *, std::future<ExecResult>>> runs;
	for (Guest *g : guests)
		runs.emplace_back(g, std::async(std::launch::async, [g, &cmd, timeout] { return g->exec(cmd(*g), timeout); }));
	std::string err;
	for (auto &[g, f] : runs) {
		ExecResult r = f.get();
		if (!r.ok() && err.empty())
			err = g->name() + " (" + to_string(g->stack()) + "): " + what + ": " + r.describe() + ": " + r.output;
	}
	return err;
}

// Two upstream guests, vm0 and vm1, cabled back to back, with OpenSM in vm0:
// the setting of the suites that move traffic. A suite calls BringUpPair()
// from SetUpTestSuite (after StartLab(PairOptions(), ...)) and stores what it
// returns in setup_error_; every test then fails early if that went wrong.
class PairSuite : public GatedSuite {
protected:
	static LabOptions PairOptions()
	{
		LabOptions o;
		o.guests = {{"vm0", Stack::Upstream}, {"vm1", Stack::Upstream}};
		o.fabric = "b2b";
		return o;
	}

	// Loads the stack, starts OpenSM in vm0 and waits until both ports are
	// ACTIVE. Returns "" when all went well, else what failed.
	static std::string BringUpPair()
	{
		std::string err = ExecOnAll(
			lab_->guests(),
			[](Guest &) {
				return "modprobe ib_mthca && modprobe ib_umad && modprobe ib_uverbs && modprobe ib_ipoib";
			},
			"loading the stack failed");
		if (!err.empty())
			return err;
		auto sm = lab_->guest("vm0").exec("opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
		if (!sm.ok())
			return "opensm did not start: " + sm.output;
		for (Guest *g : lab_->guests()) {
			auto r = WaitPortActive(*g, 90);
			if (!r.ok())
				return g->name() + ": port not ACTIVE: " + r.output;
		}
		return "";
	}

};

// --- the issue-4 suites: our stack beside the upstream one ---------------
//
// The guests of those suites that play "ours" run Stack::Ours with the
// modules of $IBSTACK_MODULES (default <build>/modules, which `make modules`
// fills). IBSTACK_OURS_STACK=upstream puts the upstream stack in that role
// instead: every comparison then runs upstream against upstream, which is
// how the tests' own logic is checked before our stack works.
inline Stack OursRole()
{
	const char *e = std::getenv("IBSTACK_OURS_STACK");
	return e && std::string(e) == "upstream" ? Stack::Upstream : Stack::Ours;
}

// $name, or `fallback` when it is unset or empty (the suites' sizes).
inline std::string EnvOr(const char *name, const char *fallback)
{
	const char *e = std::getenv(name);
	return e && *e ? e : fallback;
}

inline std::string OurModulesDir()
{
	const char *e = std::getenv("IBSTACK_MODULES");
	return e && *e ? std::string(e) : default_build_dir() + "/modules";
}

// Options for `guests` cabled by `fabric` ("" for none); the modules
// directory is set when one of them runs our stack.
inline LabOptions MixedOptions(std::vector<GuestSpec> guests, const std::string &fabric)
{
	LabOptions o;
	o.guests = std::move(guests);
	o.hca = true;
	o.fabric = fabric;
	// On the debug kernel's lane (IBLAB_KERNEL_DIR) the upstream peers
	// boot the host's kernel: what the lane checks is our modules, and a
	// KASAN kernel under TCG would triple the peers' boot and CPU time.
	for (auto &g : o.guests) {
		if (g.stack == Stack::Ours)
			o.modules_dir = OurModulesDir();
		else
			g.host_kernel = true;
	}
	return o;
}

// Loads the stack of every guest, starts OpenSM in `sm` and waits until
// every port is ACTIVE. Returns "" when all went well, else what failed.
inline std::string BringUpWithSm(Lab &lab, const std::string &sm, std::chrono::seconds limit = 180s)
{
	std::string err = ExecOnAll(
		lab.guests(), [](Guest &g) { return LoadCommand(g.stack()); }, "loading the stack failed");
	if (!err.empty())
		return err;
	auto r = lab.guest(sm).exec("opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
	if (!r.ok())
		return "opensm did not start in " + sm + ": " + r.output;
	for (Guest *g : lab.guests()) {
		auto w = WaitPortActive(*g, int(limit.count()));
		if (!w.ok())
			return g->name() + " (" + to_string(g->stack()) + "): port not ACTIVE: " + w.output +
			       "\nopensm log:\n" + lab.guest(sm).exec("tail -25 /tmp/opensm.log", 30s).output;
	}
	return "";
}

// Starts OpenSM with LMC 1 (two LIDs per port) in `g` unless one runs
// there, and waits until g's port is ACTIVE with LMC 1, which only OpenSM
// sets (a port that something else made ACTIVE, as mthca_smoke does, has
// LMC 0): "" when it is, else what went wrong.
inline std::string StartOpenSmLmc1(Guest &g)
{
	auto r = g.exec("pgrep -x opensm >/dev/null || opensm -l 1 -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
	if (!r.ok())
		return "opensm did not start: " + r.output;
	const std::string port = "/sys/class/infiniband/mthca0/ports/1";
	auto w = g.exec("end=$(($(date +%s) + 150)); until grep -q ACTIVE " + port + "/state 2>/dev/null && "
			"[ \"$(cat " + port + "/lid_mask_count)\" = 1 ]; do if [ $(date +%s) -ge $end ]; then "
			"echo \"state: $(cat " + port + "/state) lmc: $(cat " + port + "/lid_mask_count)\"; exit 1; fi; "
			"sleep 1; done",
			210s);
	if (!w.ok())
		return "port not ACTIVE with LMC 1: " + w.output + "\nopensm log:\n" +
		       g.exec("tail -25 /tmp/opensm.log", 30s).output;
	return "";
}

// A suite whose fabric comes up with OpenSM in one guest before its tests:
// SetUpTestSuite calls StartWithSm(); a failed bring-up fails every test.
class SmSuite : public GatedSuite {
protected:
	static void StartWithSm(LabOptions o, const std::string &suite, const std::string &sm)
	{
		setup_error_.clear();
		StartLab(std::move(o), suite);
		if (lab_)
			setup_error_ = BringUpWithSm(*lab_, sm);
	}

	static void TearDownTestSuite() { StopLab(); }
};

// ASSERT_TRUE(Ok(r)) prints the command's result and output when it failed.
inline ::testing::AssertionResult Ok(const ExecResult &r)
{
	if (r.ok())
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << r.describe() << ", output:\n" << r.output;
}

// The value of "key:<spaces>value" in ibv_devinfo-style output.
inline std::string Field(const std::string &text, const std::string &key)
{
	std::smatch m;
	std::regex re("(^|\\n)\\s*" + key + ":\\s*([^\\n]*)");
	if (std::regex_search(text, m, re))
		return m[2];
	return {};
}

}  // namespace iblab::vmtest
