// SPDX-License-Identifier: GPL-2.0
// Command line of the `iblab` tool (parsing only, so it can be unit-tested).
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "iblab/lab.h"

namespace iblab::cli {

struct UsageError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

extern const char *const kUsage;

// "vm0", "vm0:upstream", "vm1:ours".
GuestSpec parse_guest(const std::string &s);

struct RunArgs {
	LabOptions lab;  // guests default to {"vm0", upstream}
	std::chrono::seconds timeout{3600};  // whole run, boot included
	std::vector<std::string> command;    // HOSTCMD; empty: wait for a signal
	bool quiet = false;
};
RunArgs parse_run(const std::vector<std::string> &args);  // args after "run"

struct ExecArgs {
	std::string guest;
	std::chrono::seconds timeout{600};  // 0: none
	bool background = false;
	std::string command;  // the words after "--" (or the rest), joined by spaces
	std::string ctl;      // --ctl, else $IBLAB_CTL
};
ExecArgs parse_exec(const std::vector<std::string> &args);  // args after "exec"

// Seconds as "30", "30s", "5m", "1h".
std::chrono::seconds parse_duration(const std::string &s);

}  // namespace iblab::cli
