// SPDX-License-Identifier: GPL-2.0
// The lab end to end without a VM: data/fake-qemu.sh stands in for QEMU and
// runs the real agent on the chardev socket (iblab-agent --listen). Covers
// exec, concurrency, timeouts, the control socket and `iblab exec`, the
// dmesg check, and that `iblab run` leaves no process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "iblab/ctl.h"
#include "iblab/initramfs.h"
#include "iblab/lab.h"
#include "iblab/process.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace iblab {
namespace {

bool pid_alive(pid_t pid)
{
	std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
	std::string s;
	if (!std::getline(st, s))
		return false;
	auto close = s.rfind(')');
	return close != std::string::npos && s.size() > close + 2 && s[close + 2] != 'Z';
}

std::vector<pid_t> read_pids(const std::string &path)
{
	std::vector<pid_t> pids;
	std::ifstream in(path);
	pid_t p;
	while (in >> p)
		pids.push_back(p);
	return pids;
}

bool all_dead(const std::vector<pid_t> &pids)
{
	for (int i = 0; i < 250; i++) {
		bool any = false;
		for (pid_t p : pids)
			any |= pid_alive(p);
		if (!any)
			return true;
		std::this_thread::sleep_for(20ms);
	}
	return false;
}

class FakeLab : public ::testing::Test {
protected:
	void SetUp() override
	{
		dir_ = fs::temp_directory_path() / ("iblab-fake-" + std::to_string(getpid()) + "-" +
						    ::testing::UnitTest::GetInstance()->current_test_info()->name());
		fs::remove_all(dir_);
		fs::create_directories(dir_ / "bin");
		dmesg_ = dir_ / "dmesg.txt";
		std::ofstream(dmesg_) << "[    0.000000] Linux version 6.1.0 (fake)\n[    1.000000] all fine\n";
		std::ofstream(dir_ / "bin/dmesg") << "#!/bin/sh\ncat " << dmesg_.string() << "\n";
		fs::permissions(dir_ / "bin/dmesg", fs::perms::owner_all);
		pids_ = (dir_ / "pids").string();
		setenv("FAKE_AGENT", IBLAB_AGENT_BIN, 1);
		setenv("FAKE_BIN", (dir_ / "bin").c_str(), 1);
		setenv("FAKE_PIDS", pids_.c_str(), 1);
		unsetenv("FAKE_MODE");
	}
	void TearDown() override
	{
		EXPECT_TRUE(all_dead(read_pids(pids_))) << "stray fake QEMU processes";
		fs::remove_all(dir_);
	}
	LabOptions options(std::vector<GuestSpec> guests)
	{
		LabOptions o;
		o.guests = std::move(guests);
		o.hca = false;
		o.qemu = IBLAB_TEST_DATA "/fake-qemu.sh";
		o.agent = IBLAB_AGENT_BIN;
		o.run_dir = (dir_ / "run").string();
		o.cache_dir = (dir_ / "cache").string();
		o.boot_timeout = 20s;
		return o;
	}
	fs::path dir_, dmesg_;
	std::string pids_;
};

TEST_F(FakeLab, ExecStatusOutputConcurrencyTimeout)
{
	Lab lab(options({{"a"}, {"b"}}));
	lab.start();
	Guest &a = lab.guest("a");
	EXPECT_GT(a.boot_seconds(), 0);
	EXPECT_EQ(a.node_guid_string(), "0002:c903:0000:0100");
	EXPECT_EQ(lab.guest("b").node_guid_string(), "0002:c903:0000:0200");

	auto r = a.exec("echo hello; echo oops >&2; exit 7", 10s);
	EXPECT_EQ(r.status, 7);
	EXPECT_EQ(r.output, "hello\noops\n");
	EXPECT_FALSE(r.timed_out);
	EXPECT_EQ(a.exec("echo $IBLAB_GUEST", 10s).output, "a\n");
	EXPECT_EQ(a.exec("kill -9 $$", 10s).status, 128 + 9);

	// Big output arrives whole.
	auto big = a.exec("head -c 3000000 /dev/zero | tr '\\0' x", 30s);
	EXPECT_EQ(big.status, 0);
	EXPECT_EQ(big.output.size(), 3000000u);

	// Concurrent commands in one guest and in two guests: a server waits
	// for a file the client creates.
	auto t0 = std::chrono::steady_clock::now();
	std::string flag = (dir_ / "flag").string();
	auto server = a.start_exec("while [ ! -e " + flag + " ]; do sleep 0.05; done; echo served", 20s);
	auto other = a.start_exec("sleep 1; echo other", 20s);
	auto client = lab.guest("b").exec("sleep 0.5; touch " + flag + "; echo client", 20s);
	EXPECT_EQ(client.output, "client\n");
	ASSERT_TRUE(server->wait_for(10s));
	ASSERT_TRUE(other->wait_for(10s));
	EXPECT_EQ(server->result().output, "served\n");
	EXPECT_EQ(other->result().output, "other\n");
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);

	// Timeout kills the command's whole process group.
	std::string pidfile = (dir_ / "cmdpids").string();
	auto t = a.exec("sleep 1000 & echo $! > " + pidfile + "; sleep 1000", 1s);
	EXPECT_TRUE(t.timed_out);
	EXPECT_EQ(t.status, 128 + SIGKILL);
	EXPECT_TRUE(all_dead(read_pids(pidfile)));

	// Background command.
	auto bg = a.exec_background("sleep 0.2; echo bg > " + (dir_ / "bgdone").string());
	EXPECT_EQ(bg.status, 0);
	EXPECT_NE(bg.output.find("started pid"), std::string::npos);
	for (int i = 0; i < 100 && !fs::exists(dir_ / "bgdone"); i++)
		std::this_thread::sleep_for(50ms);
	EXPECT_TRUE(fs::exists(dir_ / "bgdone"));

	auto rep = lab.shutdown();
	EXPECT_TRUE(rep.ok()) << rep.text();
	EXPECT_TRUE(fs::exists(dir_ / "run/a/dmesg.txt"));
	EXPECT_TRUE(fs::exists(dir_ / "run/report.txt"));
}

TEST_F(FakeLab, DmesgProblemsFailTheRun)
{
	Lab lab(options({{"vm0"}}));
	lab.start();
	Guest &g = lab.guest("vm0");
	EXPECT_TRUE(g.check_new_dmesg().empty());
	std::ofstream(dmesg_, std::ios::app) << "[    2.000000] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x0/0x1\n";
	auto hits = g.check_new_dmesg();
	ASSERT_EQ(hits.size(), 1u);
	EXPECT_EQ(hits[0].rule, "warning");
	EXPECT_TRUE(g.check_new_dmesg().empty());  // only new lines are checked
	auto rep = lab.shutdown();
	ASSERT_FALSE(rep.ok());
	EXPECT_NE(rep.text().find("[warning] [    2.000000] WARNING: CPU: 0"), std::string::npos) << rep.text();
}

TEST_F(FakeLab, ControlSocketAndClientKill)
{
	Lab lab(options({{"vm0"}}));
	lab.start();
	lab.serve_control();
	std::ostringstream out, err;
	EXPECT_EQ(ctl_exec(lab.control_socket(), "vm0", "echo hi; exit 3", 10s, false, out, err), 3);
	EXPECT_EQ(out.str(), "hi\n");
	out.str("");
	EXPECT_EQ(ctl_exec(lab.control_socket(), "nope", "true", 10s, false, out, err), 255);
	EXPECT_NE(err.str().find("no guest named 'nope'"), std::string::npos);
	out.str("");
	EXPECT_EQ(ctl_list(lab.control_socket(), out, err), 0);
	EXPECT_EQ(out.str().substr(0, 13), "vm0 upstream ");

	// The CLI: output, status, and a killed client kills its command.
	SpawnOptions so;
	std::string pidfile = (dir_ / "clientcmd").string();
	so.argv = {IBLAB_CLI, "exec", "vm0", "--", "echo $$ >", pidfile, "; exec sleep 1000"};
	so.env_add = {"IBLAB_CTL=" + lab.control_socket()};
	Process client = Process::spawn(so);
	std::vector<pid_t> pids;
	for (int i = 0; i < 250 && pids.empty(); i++, std::this_thread::sleep_for(20ms))
		pids = read_pids(pidfile);
	ASSERT_EQ(pids.size(), 1u);
	EXPECT_TRUE(pid_alive(pids[0]));
	client.kill();
	EXPECT_TRUE(all_dead(pids));

	auto r = run_capture({"/bin/sh", "-c",
			      "IBLAB_CTL=" + lab.control_socket() + " " IBLAB_CLI " exec vm0 -- 'echo out; exit 4'"},
			     20s);
	EXPECT_EQ(r.status, 4);
	EXPECT_EQ(r.output, "out\n");
	EXPECT_TRUE(lab.shutdown().ok());
}

TEST_F(FakeLab, BootFailureTearsDown)
{
	setenv("FAKE_MODE", "hang", 1);
	auto o = options({{"vm0"}});
	o.boot_timeout = 2s;
	Lab lab(o);
	try {
		lab.start();
		FAIL() << "start() should fail";
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("guest vm0 did not boot"), std::string::npos) << e.what();
	}
	auto pids = read_pids(pids_);
	EXPECT_EQ(pids.size(), 2u);  // fake QEMU and its child
	EXPECT_TRUE(all_dead(pids));
}

// `iblab run` as a whole: the run timeout kills HOSTCMD's process tree and
// the guests, and the exit status says so.
TEST_F(FakeLab, CliRunTimeoutLeavesNothingBehind)
{
	std::string hostpids = (dir_ / "hostpids").string();
	auto r = run_capture({IBLAB_CLI, "run", "--no-hca", "--qemu", IBLAB_TEST_DATA "/fake-qemu.sh", "--workdir",
			      (dir_ / "run").string(), "--timeout", "3", "--guest", "x", "--", "/bin/sh", "-c",
			      "echo $$ >> " + hostpids + "; sleep 1000 & echo $! >> " + hostpids +
				      "; iblab_ctl=$IBLAB_CTL; echo ctl=$IBLAB_GUESTS; wait"},
			     60s);
	EXPECT_FALSE(r.timed_out);
	EXPECT_EQ(r.status, 124) << r.output;
	EXPECT_NE(r.output.find("run timed out after 3 s"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("ctl=x"), std::string::npos) << r.output;
	auto pids = read_pids(hostpids);
	EXPECT_EQ(pids.size(), 2u);
	EXPECT_TRUE(all_dead(pids));
}

TEST_F(FakeLab, CliRunPassesStatusAndSignalStopsIt)
{
	auto r = run_capture({IBLAB_CLI, "run", "--no-hca", "--qemu", IBLAB_TEST_DATA "/fake-qemu.sh", "--workdir",
			      (dir_ / "run").string(), "--quiet", "--", "/bin/sh", "-c",
			      IBLAB_CLI " exec vm0 -- 'hostname >/dev/null; echo in-guest; exit 5'"},
			     60s);
	EXPECT_EQ(r.status, 5) << r.output;
	EXPECT_NE(r.output.find("in-guest"), std::string::npos);

	// SIGTERM to `iblab run`: orderly stop, nothing left.
	SpawnOptions so;
	std::string hostpids = (dir_ / "hostpids2").string();
	so.argv = {IBLAB_CLI, "run", "--no-hca", "--qemu", IBLAB_TEST_DATA "/fake-qemu.sh", "--workdir",
		   (dir_ / "run2").string(), "--quiet", "--", "/bin/sh", "-c", "echo $$ >> " + hostpids + "; sleep 1000"};
	so.output_file = (dir_ / "run2.out").string();
	Process run = Process::spawn(so);
	std::vector<pid_t> pids;
	for (int i = 0; i < 500 && pids.empty(); i++, std::this_thread::sleep_for(20ms))
		pids = read_pids(hostpids);
	ASSERT_EQ(pids.size(), 1u);
	kill(run.pid(), SIGTERM);
	auto st = run.wait_for(30s);
	ASSERT_TRUE(st);
	EXPECT_EQ(exit_code(*st), 128 + SIGTERM);
	EXPECT_TRUE(all_dead(pids));
}

TEST(Lab, PruneOldRuns)
{
	fs::path d = fs::temp_directory_path() / ("iblab-prune-" + std::to_string(getpid()));
	fs::create_directories(d / "cache");
	auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
	for (int i = 0; i < 5; i++) {
		fs::path r = d / ("2026010" + std::to_string(i) + "-120000-42");
		fs::create_directories(r);
		fs::last_write_time(r, old);
	}
	fs::create_directories(d / "20260100-110000-1-MthcaProbe");  // oldest name, but recent: kept
	prune_old_runs(d.string(), 2);
	EXPECT_TRUE(fs::exists(d / "cache"));
	EXPECT_TRUE(fs::exists(d / "20260100-110000-1-MthcaProbe"));
	EXPECT_FALSE(fs::exists(d / "20260100-120000-42"));
	EXPECT_FALSE(fs::exists(d / "20260102-120000-42"));
	EXPECT_TRUE(fs::exists(d / "20260103-120000-42"));
	EXPECT_TRUE(fs::exists(d / "20260104-120000-42"));
	fs::remove_all(d);
}

}  // namespace
}  // namespace iblab
