// SPDX-License-Identifier: GPL-2.0
// The VM lab: one fabric emulator process plus N QEMU guests, each running
// the upstream Debian IB stack or ours, with an agent that runs commands.
//
//   iblab::LabOptions o;
//   o.guests = {{"vm0", iblab::Stack::Upstream}};
//   iblab::Lab lab(o);
//   lab.start();                                   // boots, waits for agents
//   auto r = lab.guest("vm0").exec("lspci -nn", std::chrono::seconds(30));
//   // r.status, r.output
//   auto report = lab.shutdown();                  // dmesg check + teardown
//   // report.ok(), report.problems
//
// Every guest gets a directory <run_dir>/<name>/ holding console.log,
// qemu.log, dmesg.txt and boot_time.txt; the emulator logs to
// <run_dir>/ibemu.log (+ ibemu.out for its stdout/stderr).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "iblab/dmesg.h"
#include "iblab/mgmtnet.h"
#include "iblab/process.h"
#include "iblab/protocol.h"

namespace iblab {

enum class Stack { Upstream, Ours };
const char *to_string(Stack s);

struct GuestSpec {
	std::string name;
	Stack stack = Stack::Upstream;
	// Boot the host's kernel even when the lab has one of its own
	// (LabOptions::kernel_dir): on the debug kernel's lane an upstream
	// peer then boots in a third of the time and runs several times
	// faster under TCG, and leaves the CPU to the guests under test.
	// Only for Stack::Upstream when kernel_dir is set (start() refuses
	// it for a guest of ours: our modules are built for the lab's kernel).
	bool host_kernel = false;
};

struct LabOptions {
	std::vector<GuestSpec> guests;
	std::string modules_dir;  // our modules (*.ko, any depth), for Stack::Ours
	int mem_mb = 1024;
	int smp = 1;
	bool hca = true;  // add the emulated HCA (needs the project's QEMU + ibemu)
	// The management network (mgmtnet.h): every guest gets a virtio-net
	// NIC on a segment private to this lab, switched by a thread of the
	// lab, with the address mgmt_ip(index) and /etc/hosts naming every
	// guest. Never the host's network.
	bool mgmt_net = true;
	// The fabric the HCA ports are cabled into (ibemu --fabric): a topology
	// file in ibnetdiscover format or a built-in spec such as "b2b" or
	// "star:3", whose HCAs are named like the guests. Empty: no fabric.
	std::string fabric;
	std::string qemu;         // empty: default_qemu()
	std::string emulator;     // empty: default_emulator()
	std::string agent;        // empty: default_agent()
	std::string kernel;       // version; empty: find_kernel()
	// A kernel of its own instead of the host's: a directory with
	// boot/vmlinuz-<release> and lib/modules/<release>, such as the debug
	// kernel of tests/lab/debug-kernel/build.sh. Its modules directory is
	// shared into the guests at /lib/modules/<release>. Empty:
	// $IBLAB_KERNEL_DIR, and if that is empty too, the host's kernel.
	std::string kernel_dir;
	// QEMU's machine type: "pc" (i440fx) or "q35". Empty: $IBLAB_MACHINE,
	// else "pc". The debug kernel's lane uses q35: i440fx's ACPI _PRT is an
	// AML loop that the KASAN- and kmemleak-instrumented interpreter runs
	// for 20-30 s per PCI device (154 s boots); q35's _PRT is a table.
	std::string machine;
	std::string build_dir;    // empty: default_build_dir()
	std::string run_dir;      // empty: <build_dir>/lab/<run id>
	std::string cache_dir;    // empty: <build_dir>/lab/cache
	std::chrono::seconds boot_timeout{180};
	std::string emulator_log_level = "info";
	std::vector<std::string> extra_qemu_args;
	std::string extra_cmdline;
	std::vector<std::string> dmesg_ignore;  // regexes (see DmesgChecker::ignore)
	// Extra read-only 9p shares: host dir -> mounted at the same path in guests.
	std::vector<std::string> shares;
	// Set to true (e.g. from a signal handler thread) to abort start().
	std::atomic<bool> *cancel = nullptr;
};

struct ExecResult {
	int status = -1;  // exit code, 128 + signal; -1: no result (see error)
	std::string output;  // stdout and stderr, interleaved
	bool timed_out = false;
	std::string error;   // set when the lab could not get a result
	double seconds = 0;
	bool ok() const { return status == 0; }
	std::string describe() const;  // "status 0", "timed out", ...
};

using OutputFn = std::function<void(std::string_view)>;

class AgentConnection;

// A request in flight (for streaming/cancellable use; exec() wraps it).
class PendingExec {
public:
	// Waits until the result is there or `timeout` passes.
	bool wait_for(std::chrono::milliseconds timeout);
	bool done();
	ExecResult result();           // valid once done
	std::string take_new_output();  // output that arrived since the last call
	uint32_t id() const { return id_; }

private:
	friend class AgentConnection;
	uint32_t id_ = 0;
	std::mutex mu_;
	std::condition_variable cv_;
	bool done_ = false;
	ExecResult res_;
	std::string fresh_;
	OutputFn on_output_;
	std::chrono::steady_clock::time_point start_;
};

class AgentConnection {
public:
	AgentConnection() = default;
	~AgentConnection();
	void connect(const std::string &socket_path, std::chrono::steady_clock::time_point deadline,
		     const std::function<bool()> &keep_trying);
	bool wait_hello(std::chrono::steady_clock::time_point deadline, const std::function<bool()> &keep_trying);
	std::optional<proto::HelloInfo> hello();
	std::shared_ptr<PendingExec> start(const std::string &cmd, std::chrono::milliseconds timeout,
					   uint32_t flags, OutputFn on_output);
	void kill(uint32_t id);
	bool poweroff(std::chrono::milliseconds timeout);
	bool connected() const { return fd_ >= 0 && !closed_; }
	void close();

private:
	void reader();
	bool send(proto::Type t, uint32_t id, const std::string &payload);
	int fd_ = -1;
	std::atomic<bool> closed_{false};
	std::thread reader_;
	std::mutex write_mu_;
	std::mutex mu_;
	std::condition_variable cv_;
	std::optional<proto::HelloInfo> hello_;
	std::map<uint32_t, std::shared_ptr<PendingExec>> pending_;
	uint32_t next_id_ = 1;
};

class Lab;

class Guest {
public:
	const std::string &name() const { return spec_.name; }
	Stack stack() const { return spec_.stack; }
	uint64_t node_guid() const { return guid_; }
	// "0002:c903:0000:a001", as ibv_devinfo prints node_guid.
	std::string node_guid_string() const;
	const std::string &dir() const { return dir_; }
	std::string console_log_path() const { return dir_ + "/console.log"; }
	double boot_seconds() const { return boot_seconds_; }  // QEMU start -> agent ready
	int index() const { return index_; }  // position in LabOptions::guests
	// The guest's address on the management network, "192.168.77.<index+1>"
	// (a /24), and its NIC's MAC; "" when the lab has no management network.
	// Inside the guests the guests' names resolve to these (/etc/hosts).
	std::string mgmt_ip() const;
	std::string mgmt_mac() const;

	// Runs `cmd` with /bin/sh -c in the guest. The guest kills it after
	// `timeout` (0: never). `on_output` is called with output as it arrives,
	// from the lab's reader thread (must not block).
	ExecResult exec(const std::string &cmd, std::chrono::milliseconds timeout = std::chrono::seconds(120),
			OutputFn on_output = {});
	// Starts `cmd` detached; output goes to /tmp/iblab-bg-<id>.log in the guest.
	ExecResult exec_background(const std::string &cmd, std::chrono::milliseconds timeout = {});
	std::shared_ptr<PendingExec> start_exec(const std::string &cmd, std::chrono::milliseconds timeout,
						uint32_t flags = 0, OutputFn on_output = {});
	void kill(uint32_t id);

	// Fetches the full dmesg (also saved as dmesg.txt).
	std::optional<std::string> fetch_dmesg();
	// Checks the dmesg lines logged since the previous call (by timestamp).
	// Returns the bad lines; saves the dmesg as dmesg.txt.
	std::vector<DmesgHit> check_new_dmesg();
	// On a kernel with kmemleak (the debug kernel): waits `settle` (kmemleak
	// reports only objects older than 5 s), scans, and returns the
	// "unreferenced object" lines of /sys/kernel/debug/kmemleak (the whole
	// report is saved as kmemleak.txt). Empty without kmemleak; a hit with
	// rule "no-kmemleak" if the scan could not be run.
	std::vector<DmesgHit> check_kmemleak(std::chrono::seconds settle = std::chrono::seconds(6));
	// True when the guest's kernel has kmemleak (checked once, after boot).
	bool has_kmemleak() const { return kmemleak_; }

	bool qemu_running();

private:
	friend class Lab;
	Guest(Lab &lab, GuestSpec spec, int index);
	Lab &lab_;
	GuestSpec spec_;
	int index_;
	uint64_t guid_;
	std::string dir_;
	Process qemu_;
	AgentConnection agent_;
	std::chrono::steady_clock::time_point qemu_started_;
	double boot_seconds_ = 0;
	bool kmemleak_ = false;
	double dmesg_checked_until_ = -1;
	std::mutex dmesg_mu_;
};

struct LabReport {
	std::vector<std::string> problems;  // one line each (with the evidence)
	bool ok() const { return problems.empty(); }
	std::string text() const;
};

class Lab {
public:
	explicit Lab(LabOptions opts);
	~Lab();  // tears down whatever runs (without dmesg checks)
	Lab(const Lab &) = delete;
	Lab &operator=(const Lab &) = delete;

	// Starts the emulator and the guests and waits for every agent. Throws
	// std::runtime_error (with the console tail) and tears down on failure.
	void start();
	// Collects each guest's dmesg and console log, checks them, powers the
	// guests off, stops the emulator. Idempotent.
	LabReport shutdown();
	// Immediate SIGKILL of everything (no dmesg).
	void kill_all();

	Guest &guest(const std::string &name);
	Guest *find_guest(const std::string &name);
	std::vector<Guest *> guests();
	const std::string &run_dir() const { return run_dir_; }
	// The guests' kernel release and image (known after start()).
	const std::string &kernel_version() const { return kernel_version_; }
	const std::string &kernel_image() const { return kernel_image_; }
	const LabOptions &options() const { return opts_; }
	const DmesgChecker &checker() const { return checker_; }
	std::string emulator_socket() const { return run_dir_ + "/ibemu.sock"; }
	std::string emulator_log_path() const { return run_dir_ + "/ibemu.log"; }
	// The management network's sockets (while the lab runs) and its hosts
	// file, which the guests append to their /etc/hosts.
	std::string mgmt_dir() const { return run_dir_ + "/mgmt"; }
	std::string mgmt_hosts_path() const { return run_dir_ + "/hosts"; }
	// The hub's per-guest counters (empty without a management network);
	// also written to <run_dir>/mgmtnet.txt at shutdown.
	std::vector<MgmtPortStats> mgmt_stats() const;

	// Control socket for `iblab exec` (see ctl.h); started by serve_control().
	std::string control_socket() const { return run_dir_ + "/ctl.sock"; }
	// The emulator's fabric control socket (only with LabOptions::fabric).
	std::string fabric_socket() const { return run_dir_ + "/fabric.sock"; }
	// One fabric control command ("link vm0:1 down", "show links", ...);
	// returns the emulator's reply ("ok ..." or "error: ...").
	std::string fabric(const std::string &command);
	void serve_control();
	// Appends "<seconds since the lab was made> <what>" to
	// <run_dir>/timeline.txt: where a suite's time goes (boots, setup,
	// each test, the teardown's leak scans and power-off).
	void mark(const std::string &what);

private:
	friend class Guest;
	void start_emulator();
	void start_mgmt_net();
	void stop_mgmt_net();
	void prepare_our_modules();
	void start_guest(Guest &g);
	std::vector<std::string> qemu_argv(Guest &g, const std::string &initramfs);
	bool cancelled() const { return opts_.cancel && opts_.cancel->load(); }
	void stop_control();

	LabOptions opts_;
	std::string kernel_version_, kernel_image_, modules_dir_;
	bool own_kernel_ = false;  // kernel_dir: share modules_dir_ into the guests
	// The host's kernel and its initramfs, for the guests that ask for it
	// (GuestSpec::host_kernel) beside a kernel of the lab's own.
	std::string host_kernel_image_, host_initramfs_;
	// A guest that boots the host's kernel beside the lab's own.
	bool boots_host_kernel(const Guest &g) const;
	std::string run_dir_;
	std::string our_modules_share_;
	DmesgChecker checker_;
	Process emulator_;
	std::unique_ptr<MgmtHub> hub_;
	std::vector<std::unique_ptr<Guest>> guests_;
	bool started_ = false, shut_down_ = false;
	std::unique_ptr<class ControlServer> ctl_;
	std::chrono::steady_clock::time_point made_ = std::chrono::steady_clock::now();
	std::mutex timeline_mu_;  // serialises appends to timeline.txt
};

// "20260507-123456-1234"
std::string make_run_id();
// Removes all but the newest `keep` run directories in `dir` (only those
// older than an hour).
void prune_old_runs(const std::string &dir, size_t keep);
// GUID the lab gives guest number `index` (0-based).
uint64_t guest_guid(int index);
std::string format_guid(uint64_t guid);  // "0002:c903:0000:a001"

}  // namespace iblab
