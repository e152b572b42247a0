// SPDX-License-Identifier: GPL-2.0
// iblab: command line of the VM lab (see `iblab --help`).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "iblab/cli.h"
#include "iblab/config.h"
#include "iblab/ctl.h"
#include "iblab/initramfs.h"
#include "iblab/lab.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};

// First SIGINT/SIGTERM/SIGHUP: orderly stop (kill HOSTCMD, collect dmesg,
// tear down). Second one: kill every child process group and exit now.
void start_signal_thread()
{
	sigset_t set;
	sigemptyset(&set);
	for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
		sigaddset(&set, s);
	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	std::thread([set] {
		for (;;) {
			int sig = 0;
			if (sigwait(&set, &sig) != 0)
				continue;
			if (g_cancel.exchange(true)) {
				iblab::kill_all_registered();
				fprintf(stderr, "iblab: killed everything on second signal\n");
				_exit(128 + sig);
			}
			g_signal = sig;
			fprintf(stderr, "iblab: %s: stopping (send again to kill at once)\n", strsignal(sig));
		}
	}).detach();
}

int cmd_run(const std::vector<std::string> &args)
{
	iblab::cli::RunArgs ra = iblab::cli::parse_run(args);
	start_signal_thread();
	ra.lab.cancel = &g_cancel;
	auto t0 = Clock::now();
	auto deadline = t0 + ra.timeout;
	iblab::Lab lab(ra.lab);
	try {
		if (!ra.quiet)
			fprintf(stderr, "iblab: booting %zu guest(s)%s\n", ra.lab.guests.size(),
				ra.lab.hca ? " with the emulated HCA" : " (no HCA)");
		lab.start();
	} catch (const std::exception &e) {
		fprintf(stderr, "iblab: %s\n", e.what());
		if (!lab.run_dir().empty())
			fprintf(stderr, "iblab: logs in %s\n", lab.run_dir().c_str());
		return g_signal ? 128 + g_signal : 1;
	}
	std::string names;
	for (auto *g : lab.guests()) {
		names += (names.empty() ? "" : " ") + g->name();
		if (!ra.quiet)
			fprintf(stderr, "iblab: %s (%s stack, node GUID %s) up in %.1f s\n", g->name().c_str(),
				iblab::to_string(g->stack()), g->node_guid_string().c_str(), g->boot_seconds());
	}
	lab.serve_control();
	if (!ra.quiet)
		fprintf(stderr, "iblab: run directory %s\n", lab.run_dir().c_str());

	int rc = 0;
	std::string why;
	if (ra.command.empty()) {
		fprintf(stderr, "iblab: IBLAB_CTL=%s; waiting for SIGINT/SIGTERM\n", lab.control_socket().c_str());
		while (!g_cancel && Clock::now() < deadline)
			std::this_thread::sleep_for(200ms);
		if (!g_cancel) {
			why = "run timed out";
			rc = 124;
		}
	} else {
		iblab::SpawnOptions so;
		so.argv = ra.command;
		so.env_add = {"IBLAB_CTL=" + lab.control_socket(), "IBLAB_RUN_DIR=" + lab.run_dir(),
			      "IBLAB_GUESTS=" + names, "IBLAB_FABRIC_CTL=" + lab.fabric_socket()};
		// HOSTCMD is in its own process group (so that it and its children
		// can be killed together), hence not in the terminal's foreground:
		// do not let it read the terminal.
		so.stdin_null = isatty(0);
		iblab::Process cmd;
		try {
			cmd = iblab::Process::spawn(so);
		} catch (const std::exception &e) {
			fprintf(stderr, "iblab: %s\n", e.what());
			rc = 127;
		}
		if (cmd.valid()) {
			std::optional<int> st;
			while (!(st = cmd.wait_for(200ms))) {
				if (g_cancel) {
					why = "stopped by signal";
					break;
				}
				if (Clock::now() >= deadline) {
					why = "run timed out after " + std::to_string(ra.timeout.count()) + " s";
					break;
				}
			}
			if (st) {
				cmd.kill();  // leftovers of its process group
				rc = iblab::exit_code(*st);
			} else {
				cmd.kill();
				rc = g_signal ? 128 + g_signal : 124;
			}
		}
	}
	auto report = lab.shutdown();
	if (!why.empty())
		fprintf(stderr, "iblab: FAIL: %s\n", why.c_str());
	if (!report.ok()) {
		fprintf(stderr, "iblab: FAIL: the guests' kernel logs or the lab report problems:\n%s",
			report.text().c_str());
		if (rc == 0)
			rc = 1;
	}
	if (!ra.quiet)
		fprintf(stderr, "iblab: %s after %.1f s (exit %d); logs in %s\n", rc == 0 ? "done" : "failed",
			std::chrono::duration<double>(Clock::now() - t0).count(), rc, lab.run_dir().c_str());
	return rc;
}

int cmd_exec(const std::vector<std::string> &args)
{
	auto e = iblab::cli::parse_exec(args);
	signal(SIGPIPE, SIG_IGN);
	return iblab::ctl_exec(e.ctl, e.guest, e.command, std::chrono::duration_cast<std::chrono::milliseconds>(e.timeout),
			       e.background, std::cout, std::cerr);
}

int cmd_list(const std::vector<std::string> &args)
{
	std::string ctl;
	if (args.size() == 2 && args[0] == "--ctl")
		ctl = args[1];
	else if (!args.empty())
		throw iblab::cli::UsageError("usage: iblab list [--ctl PATH]");
	else if (const char *c = getenv("IBLAB_CTL"))
		ctl = c;
	if (ctl.empty())
		throw iblab::cli::UsageError("IBLAB_CTL is not set");
	return iblab::ctl_list(ctl, std::cout, std::cerr);
}

int cmd_check_dmesg(const std::vector<std::string> &args)
{
	if (args.empty())
		throw iblab::cli::UsageError("usage: iblab check-dmesg FILE...");
	iblab::DmesgChecker c;
	int rc = 0;
	for (const auto &f : args) {
		auto hits = c.check(iblab::read_file(f));
		std::cout << iblab::format_hits(f, hits, 1000);
		if (!hits.empty())
			rc = 1;
	}
	return rc;
}

int cmd_initramfs(const std::vector<std::string> &args)
{
	std::string out, kver, agent = iblab::default_agent();
	for (size_t i = 0; i < args.size(); i++) {
		if (i + 1 >= args.size())
			throw iblab::cli::UsageError(args[i] + " needs a value");
		if (args[i] == "-o")
			out = args[++i];
		else if (args[i] == "--kernel")
			kver = args[++i];
		else if (args[i] == "--agent")
			agent = args[++i];
		else
			throw iblab::cli::UsageError("unknown option " + args[i]);
	}
	if (out.empty())
		throw iblab::cli::UsageError("usage: iblab initramfs [--kernel V] [--agent PATH] -o FILE");
	auto k = iblab::find_kernel(kver);
	iblab::InitramfsSpec spec;
	spec.kernel_version = k.version;
	spec.modules_dir = k.modules_dir;
	spec.agent = agent;
	iblab::write_file_atomic(out, iblab::build_initramfs(spec));
	for (const auto &e : iblab::parse_cpio(iblab::read_file(out)))
		std::cout << e.path << "\n";
	return 0;
}

}  // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fputs(iblab::cli::kUsage, args.empty() ? stderr : stdout);
		return args.empty() ? 2 : 0;
	}
	std::string sub = args[0];
	args.erase(args.begin());
	try {
		if (sub == "run")
			return cmd_run(args);
		if (sub == "exec")
			return cmd_exec(args);
		if (sub == "list")
			return cmd_list(args);
		if (sub == "check-dmesg")
			return cmd_check_dmesg(args);
		if (sub == "initramfs")
			return cmd_initramfs(args);
		throw iblab::cli::UsageError("unknown command '" + sub + "'");
	} catch (const iblab::cli::UsageError &e) {
		fprintf(stderr, "iblab: %s\n\n%s", e.what(), iblab::cli::kUsage);
		return 2;
	} catch (const std::exception &e) {
		fprintf(stderr, "iblab: %s\n", e.what());
		return 1;
	}
}
