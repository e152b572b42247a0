// SPDX-License-Identifier: GPL-2.0
// Teardown: child process trees die on timeout, on kill and with their parent.
#include "iblab/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace iblab {
namespace {

// True if `pid` exists and is not a zombie.
bool pid_alive(pid_t pid)
{
	std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
	std::string s;
	if (!std::getline(st, s))
		return false;
	auto close = s.rfind(')');
	return close != std::string::npos && s.size() > close + 2 && s[close + 2] != 'Z';
}

bool group_eventually_gone(pid_t pgid)
{
	// Killed members stay in the group as zombies until their reaper runs.
	for (int i = 0; i < 250 && group_alive(pgid); i++)
		std::this_thread::sleep_for(20ms);
	return !group_alive(pgid);
}

bool eventually_dead(const std::vector<pid_t> &pids, std::chrono::milliseconds within = 5s)
{
	auto deadline = std::chrono::steady_clock::now() + within;
	for (;;) {
		bool any = false;
		for (pid_t p : pids)
			any |= pid_alive(p);
		if (!any)
			return true;
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		std::this_thread::sleep_for(20ms);
	}
}

std::vector<pid_t> read_pids(const std::string &path, size_t want)
{
	std::vector<pid_t> pids;
	for (int i = 0; i < 250 && pids.size() < want; i++) {
		pids.clear();
		std::ifstream in(path);
		pid_t p;
		while (in >> p)
			pids.push_back(p);
		if (pids.size() < want)
			std::this_thread::sleep_for(20ms);
	}
	return pids;
}

std::string tmpname(const char *what) { return "/tmp/iblab-test-" + std::to_string(getpid()) + "-" + what; }

TEST(Process, TreeIsKilledOnTimeout)
{
	std::string pidfile = tmpname("tree");
	unlink(pidfile.c_str());
	SpawnOptions o;
	// A shell with two background children and a grandchild.
	o.argv = {"/bin/sh", "-c",
		  "sleep 1000 & echo $! >> " + pidfile + "; (sleep 1000 & echo $! >> " + pidfile +
			  "; wait) & echo $$ >> " + pidfile + "; wait"};
	Process p = Process::spawn(o);
	pid_t pgid = p.pid();
	auto pids = read_pids(pidfile, 3);
	ASSERT_EQ(pids.size(), 3u);
	EXPECT_FALSE(p.wait_for(300ms));  // "timeout"
	EXPECT_TRUE(group_alive(pgid));
	int st = p.kill();
	EXPECT_TRUE(WIFSIGNALED(st));
	EXPECT_TRUE(eventually_dead(pids));
	EXPECT_TRUE(group_eventually_gone(pgid));
	unlink(pidfile.c_str());
}

TEST(Process, TerminateEscalatesToKill)
{
	SpawnOptions o;
	o.argv = {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"};
	Process p = Process::spawn(o);
	std::this_thread::sleep_for(200ms);
	auto t0 = std::chrono::steady_clock::now();
	int st = p.terminate(300ms);
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
	EXPECT_TRUE(WIFSIGNALED(st));
	EXPECT_TRUE(group_eventually_gone(p.pid()));
}

TEST(Process, DestructorKillsGroupEvenAfterLeaderExit)
{
	std::string pidfile = tmpname("orphan");
	unlink(pidfile.c_str());
	pid_t pgid;
	{
		SpawnOptions o;
		o.argv = {"/bin/sh", "-c", "sleep 1000 & echo $! > " + pidfile + "; exit 0"};
		Process p = Process::spawn(o);
		pgid = p.pid();
		ASSERT_TRUE(p.wait_for(5s));
		ASSERT_EQ(read_pids(pidfile, 1).size(), 1u);
		EXPECT_TRUE(group_alive(pgid));  // the background sleep
	}
	EXPECT_TRUE(eventually_dead(read_pids(pidfile, 1)));
	unlink(pidfile.c_str());
}

TEST(Process, ChildDiesWithItsParent)
{
	// An intermediate process spawns a child, then dies by SIGKILL without
	// any cleanup: PR_SET_PDEATHSIG must take the child down.
	int fds[2];
	ASSERT_EQ(pipe(fds), 0);
	pid_t mid = fork();
	if (mid == 0) {
		close(fds[0]);
		SpawnOptions o;
		o.argv = {"sleep", "1000"};
		Process p = Process::spawn(o);
		pid_t c = p.pid();
		if (write(fds[1], &c, sizeof c) != sizeof c)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	pid_t child = -1;
	ASSERT_EQ(read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
	close(fds[0]);
	EXPECT_TRUE(pid_alive(child));
	kill(mid, SIGKILL);
	waitpid(mid, nullptr, 0);
	EXPECT_TRUE(eventually_dead({child}));
}

TEST(Process, KillAllRegistered)
{
	SpawnOptions o;
	o.argv = {"sleep", "1000"};
	Process a = Process::spawn(o), b = Process::spawn(o);
	kill_all_registered();
	EXPECT_TRUE(a.wait_for(5s));
	EXPECT_TRUE(b.wait_for(5s));
	EXPECT_EQ(exit_code(*a.exit_status()), 128 + SIGKILL);
}

TEST(Process, SpawnErrorsAndCapture)
{
	SpawnOptions o;
	o.argv = {"/nonexistent/binary"};
	EXPECT_THROW(Process::spawn(o), std::system_error);
	auto r = run_capture({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
	EXPECT_EQ(r.status, 3);
	EXPECT_EQ(r.output, "out\nerr\n");
	auto t = run_capture({"sleep", "100"}, 200ms);
	EXPECT_TRUE(t.timed_out);
	EXPECT_EQ(t.status, 128 + SIGKILL);
}

}  // namespace
}  // namespace iblab
