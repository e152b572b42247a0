// SPDX-License-Identifier: GPL-2.0
#include "iblab/cli.h"

#include <cstdlib>

namespace iblab::cli {

const char *const kUsage = R"(usage:
  iblab run [options] [-- HOSTCMD [ARG...]]
      Starts the emulator and the guests, waits for every guest agent, runs
      HOSTCMD on the host with IBLAB_CTL (and IBLAB_RUN_DIR, IBLAB_GUESTS) in
      its environment, then checks each guest's dmesg and tears down. Exits
      with HOSTCMD's status, or non-zero if booting, the dmesg check or the
      run timed out. Without HOSTCMD: runs until SIGINT/SIGTERM.
    --guest NAME[:upstream|ours]  add a guest (default: vm0:upstream)
    --modules DIR        our modules (*.ko) for the "ours" guests
    --mem MB             guest RAM (default 1024)
    --smp N              guest CPUs (default 1)
    --timeout SEC        whole run, boot included (default 3600; 30s/5m/1h)
    --boot-timeout SEC   per boot (default 180)
    --workdir DIR        run directory (default <build>/lab/<run-id>)
    --no-hca             no emulator, no HCA device
    --no-mgmt-net        no management network (by default every guest has
                         a NIC on a lab-private segment, 192.168.77.<n+1>/24)
    --fabric TOPOLOGY    cable the HCAs: ibnetdiscover file or b2b, star:N, ...
                         (HOSTCMD gets IBLAB_FABRIC_CTL for ibemu-ctl)
    --qemu PATH          (default $IBLAB_QEMU or <build>/qemu/qemu-system-x86_64)
    --emulator PATH      (default $IBLAB_EMULATOR or <build>/emulator/server/ibemu)
    --kernel VERSION     guest kernel (default newest /boot/vmlinuz-6.1.*)
    --kernel-dir DIR     a kernel of its own: DIR/boot/vmlinuz-*, DIR/lib/modules/*
                         (default $IBLAB_KERNEL_DIR; e.g. build/debug-kernel)
    --machine pc|q35     QEMU machine type (default $IBLAB_MACHINE, else pc;
                         the debug kernel boots in ~20 s on q35, ~150 s on pc)
    --share DIR          extra read-only 9p share, same path in the guests
    --dmesg-ignore REGEX do not fail on dmesg lines matching REGEX
    --emulator-log-level info|debug
    --append ARGS        extra kernel command line
    --quiet              do not print progress
  iblab exec NAME [--timeout SEC] [--bg] [--ctl PATH] -- CMD...
      Runs CMD with /bin/sh -c in guest NAME of the running lab ($IBLAB_CTL),
      prints its output, exits with its status (255: lab error). The guest
      kills CMD's process group after --timeout (default 600, 0: none); the
      exit status is then 124.
      --bg: start CMD detached (output in /tmp/iblab-bg-<id>.log in the guest).
  iblab list [--ctl PATH]
  iblab check-dmesg FILE...    exit 1 if a file has WARNING/BUG/... lines
  iblab initramfs [--kernel VERSION] [--agent PATH] -o FILE
)";

std::chrono::seconds parse_duration(const std::string &s)
{
	if (s.empty())
		throw UsageError("empty duration");
	size_t used = 0;
	long v;
	try {
		v = std::stol(s, &used);
	} catch (const std::exception &) {
		throw UsageError("bad duration '" + s + "'");
	}
	std::string unit = s.substr(used);
	long mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
	if (mult == 0 || v < 0)
		throw UsageError("bad duration '" + s + "'");
	return std::chrono::seconds(v * mult);
}

GuestSpec parse_guest(const std::string &s)
{
	GuestSpec g;
	auto colon = s.find(':');
	g.name = s.substr(0, colon);
	if (g.name.empty() || g.name.find_first_of("/ ,=") != std::string::npos || g.name.size() > 32)
		throw UsageError("bad guest name in '" + s + "'");
	if (colon != std::string::npos) {
		std::string st = s.substr(colon + 1);
		if (st == "upstream")
			g.stack = Stack::Upstream;
		else if (st == "ours")
			g.stack = Stack::Ours;
		else
			throw UsageError("stack must be 'upstream' or 'ours' in '" + s + "'");
	}
	return g;
}

namespace {

int parse_int(const std::string &opt, const std::string &v, int lo, int hi)
{
	size_t used = 0;
	int n = 0;
	try {
		n = std::stoi(v, &used);
	} catch (const std::exception &) {
		used = 0;
	}
	if (used != v.size() || v.empty() || n < lo || n > hi)
		throw UsageError(opt + ": expected a number in " + std::to_string(lo) + ".." + std::to_string(hi));
	return n;
}

}  // namespace

RunArgs parse_run(const std::vector<std::string> &args)
{
	RunArgs r;
	for (size_t i = 0; i < args.size(); i++) {
		const std::string &a = args[i];
		if (a == "--") {
			r.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
			if (r.command.empty())
				throw UsageError("nothing after '--'");
			break;
		}
		auto value = [&]() -> const std::string & {
			if (i + 1 >= args.size())
				throw UsageError(a + " needs a value");
			return args[++i];
		};
		if (a == "--guest")
			r.lab.guests.push_back(parse_guest(value()));
		else if (a == "--modules")
			r.lab.modules_dir = value();
		else if (a == "--mem")
			r.lab.mem_mb = parse_int(a, value(), 128, 2048);  // the memfd layout needs <= 2 GB
		else if (a == "--smp")
			r.lab.smp = parse_int(a, value(), 1, 16);
		else if (a == "--timeout")
			r.timeout = parse_duration(value());
		else if (a == "--boot-timeout")
			r.lab.boot_timeout = parse_duration(value());
		else if (a == "--workdir")
			r.lab.run_dir = value();
		else if (a == "--no-hca")
			r.lab.hca = false;
		else if (a == "--no-mgmt-net")
			r.lab.mgmt_net = false;
		else if (a == "--fabric")
			r.lab.fabric = value();
		else if (a == "--qemu")
			r.lab.qemu = value();
		else if (a == "--emulator")
			r.lab.emulator = value();
		else if (a == "--kernel")
			r.lab.kernel = value();
		else if (a == "--kernel-dir")
			r.lab.kernel_dir = value();
		else if (a == "--machine")
			r.lab.machine = value();
		else if (a == "--share")
			r.lab.shares.push_back(value());
		else if (a == "--dmesg-ignore")
			r.lab.dmesg_ignore.push_back(value());
		else if (a == "--emulator-log-level")
			r.lab.emulator_log_level = value();
		else if (a == "--append")
			r.lab.extra_cmdline += (r.lab.extra_cmdline.empty() ? "" : " ") + value();
		else if (a == "--quiet" || a == "-q")
			r.quiet = true;
		else
			throw UsageError("unknown option '" + a + "'");
	}
	if (r.lab.guests.empty())
		r.lab.guests.push_back({"vm0", Stack::Upstream});
	bool ours = false;
	for (size_t i = 0; i < r.lab.guests.size(); i++) {
		ours |= r.lab.guests[i].stack == Stack::Ours;
		for (size_t j = 0; j < i; j++)
			if (r.lab.guests[i].name == r.lab.guests[j].name)
				throw UsageError("guest " + r.lab.guests[i].name + " given twice");
	}
	if (ours && r.lab.modules_dir.empty())
		throw UsageError("a guest runs our stack: --modules DIR is needed");
	if (r.timeout.count() == 0)
		throw UsageError("--timeout must be positive");
	return r;
}

ExecArgs parse_exec(const std::vector<std::string> &args)
{
	ExecArgs e;
	std::vector<std::string> words;
	size_t i = 0;
	for (; i < args.size(); i++) {
		const std::string &a = args[i];
		if (a == "--") {
			i++;
			break;
		}
		auto value = [&]() -> const std::string & {
			if (i + 1 >= args.size())
				throw UsageError(a + " needs a value");
			return args[++i];
		};
		if (a == "--timeout")
			e.timeout = parse_duration(value());
		else if (a == "--bg")
			e.background = true;
		else if (a == "--ctl")
			e.ctl = value();
		else if (!a.empty() && a[0] == '-')
			throw UsageError("unknown option '" + a + "' (put the command after --)");
		else if (e.guest.empty())
			e.guest = a;
		else
			break;  // start of the command
	}
	for (; i < args.size(); i++)
		words.push_back(args[i]);
	if (e.guest.empty())
		throw UsageError("iblab exec: no guest name");
	if (words.empty())
		throw UsageError("iblab exec: no command");
	for (const auto &w : words)
		e.command += (e.command.empty() ? "" : " ") + w;
	if (e.ctl.empty())
		if (const char *c = std::getenv("IBLAB_CTL"))
			e.ctl = c;
	if (e.ctl.empty())
		throw UsageError("iblab exec: IBLAB_CTL is not set (run inside `iblab run`, or pass --ctl)");
	return e;
}

}  // namespace iblab::cli
