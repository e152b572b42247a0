// SPDX-License-Identifier: GPL-2.0
// Child processes that cannot outlive the lab.
//
// Every child is the leader of its own process group, gets
// PR_SET_PDEATHSIG(SIGKILL) (so it dies if the lab dies, even by SIGKILL;
// note that the signal fires when the spawning *thread* exits, so spawn from
// a thread that lives as long as the child, as the lab does), and is recorded in a process-wide registry of
// groups that kill_all_registered() (async-signal-safe) kills. Destroying a
// Process kills its whole group and reaps the leader.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace iblab {

struct SpawnOptions {
	std::vector<std::string> argv;
	std::vector<std::string> env_add;  // "NAME=value", added to/overriding environ
	// Output: if set, stdout and stderr go (appended) to this file. Else
	// they are inherited.
	std::string output_file;
	bool stdin_null = true;  // else inherited
	bool new_process_group = true;
	bool pdeathsig = true;
	std::string cwd;
};

class Process {
public:
	Process() = default;
	static Process spawn(const SpawnOptions &opts);  // throws std::system_error
	~Process();
	Process(Process &&o) noexcept;
	Process &operator=(Process &&o) noexcept;
	Process(const Process &) = delete;
	Process &operator=(const Process &) = delete;

	pid_t pid() const { return pid_; }
	bool valid() const { return pid_ > 0; }
	// True until the leader has exited (and been reaped by us).
	bool running();
	// Wait status of the leader, if it exited within `timeout`.
	std::optional<int> wait_for(std::chrono::milliseconds timeout);
	std::optional<int> exit_status() const { return status_; }
	// Sends `sig` to the whole process group.
	void signal_group(int sig);
	// SIGTERM to the group, wait up to `grace`, then SIGKILL the group and
	// reap. Returns the leader's wait status.
	int terminate(std::chrono::milliseconds grace);
	// SIGKILL the group and reap the leader.
	int kill();

private:
	void release();
	pid_t pid_ = -1;
	std::optional<int> status_;
};

// Exit code of a wait status as a shell shows it (128 + signal).
int exit_code(int wait_status);
std::string describe_status(int wait_status);

// Kills (SIGKILL) every registered process group. Async-signal-safe.
void kill_all_registered();

// True if any process of group `pgid` still exists.
bool group_alive(pid_t pgid);

// Runs argv to completion (used for small host helpers); returns the exit
// code and the combined output. Kills it after `timeout`.
struct RunResult {
	int status = -1;
	std::string output;
	bool timed_out = false;
};
RunResult run_capture(const std::vector<std::string> &argv, std::chrono::milliseconds timeout);

}  // namespace iblab
