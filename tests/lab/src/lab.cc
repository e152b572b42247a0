// SPDX-License-Identifier: GPL-2.0
#include "iblab/lab.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "iblab/config.h"
#include "iblab/ctl.h"
#include "iblab/initramfs.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace iblab {

const char *to_string(Stack s) { return s == Stack::Ours ? "ours" : "upstream"; }

std::string make_run_id()
{
	char buf[64];
	time_t t = time(nullptr);
	tm tmv{};
	localtime_r(&t, &tmv);
	strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tmv);
	return std::string(buf) + "-" + std::to_string(getpid());
}

// Mellanox OUI; 0x100 apart, because the HCA's port GUIDs follow its node GUID.
uint64_t guest_guid(int index) { return 0x0002c90300000000ull + (static_cast<uint64_t>(index + 1) << 8); }

std::string format_guid(uint64_t g)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48) & 0xffff,
		 static_cast<unsigned>(g >> 32) & 0xffff, static_cast<unsigned>(g >> 16) & 0xffff,
		 static_cast<unsigned>(g) & 0xffff);
	return buf;
}

namespace {

std::string tail_of_file(const std::string &path, size_t lines)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return "(no " + path + ")\n";
	std::vector<std::string> all;
	std::string l;
	while (std::getline(in, l))
		all.push_back(l);
	std::string out;
	for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); i++)
		out += "    " + all[i] + "\n";
	return out;
}

void check_socket_path(const std::string &p)
{
	if (p.size() >= sizeof(sockaddr_un{}.sun_path))
		throw std::runtime_error("socket path too long for AF_UNIX (use a shorter --workdir): " + p);
}

}  // namespace

void prune_old_runs(const std::string &dir, size_t keep)
{
	// Run directories are named <yyyymmdd>-<hhmmss>-<pid>[-suffix].
	static const std::regex run_name(R"(^[0-9]{8}-[0-9]{6}-[0-9]+(-.*)?$)");
	std::vector<fs::path> runs;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(dir, ec))
		if (e.is_directory() && std::regex_match(e.path().filename().string(), run_name))
			runs.push_back(e.path());
	if (runs.size() <= keep)
		return;
	std::sort(runs.begin(), runs.end());
	auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
	for (size_t i = 0; i + keep < runs.size(); i++) {
		// Never a run that may still be going on.
		if (fs::last_write_time(runs[i], ec) < hour_ago && !ec)
			fs::remove_all(runs[i], ec);
	}
}

std::string ExecResult::describe() const
{
	if (!error.empty())
		return "error: " + error;
	if (timed_out)
		return "timed out (status " + std::to_string(status) + ")";
	return "status " + std::to_string(status);
}

std::string LabReport::text() const
{
	std::string s;
	for (const auto &p : problems)
		s += p + "\n";
	return s;
}

// ---------------------------------------------------------------------------
// PendingExec / AgentConnection

bool PendingExec::wait_for(std::chrono::milliseconds timeout)
{
	std::unique_lock lk(mu_);
	return cv_.wait_for(lk, timeout, [&] { return done_; });
}

bool PendingExec::done()
{
	std::lock_guard lk(mu_);
	return done_;
}

ExecResult PendingExec::result()
{
	std::lock_guard lk(mu_);
	return res_;
}

std::string PendingExec::take_new_output()
{
	std::lock_guard lk(mu_);
	return std::exchange(fresh_, {});
}

AgentConnection::~AgentConnection() { close(); }

void AgentConnection::close()
{
	if (fd_ >= 0) {
		closed_ = true;
		shutdown(fd_, SHUT_RDWR);
	}
	if (reader_.joinable())
		reader_.join();
	if (fd_ >= 0) {
		::close(fd_);
		fd_ = -1;
	}
}

void AgentConnection::connect(const std::string &path, Clock::time_point deadline,
			      const std::function<bool()> &keep_trying)
{
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	check_socket_path(path);
	strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			throw std::runtime_error(std::string("socket: ") + strerror(errno));
		if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0) {
			fd_ = fd;
			break;
		}
		int e = errno;
		::close(fd);
		if (Clock::now() >= deadline || !keep_trying())
			throw std::runtime_error("cannot connect to the agent socket " + path + ": " + strerror(e));
		std::this_thread::sleep_for(20ms);
	}
	reader_ = std::thread([this] { reader(); });
}

bool AgentConnection::send(proto::Type t, uint32_t id, const std::string &payload)
{
	std::string buf = proto::encode({t, id, payload});
	std::lock_guard lk(write_mu_);
	size_t off = 0;
	auto deadline = Clock::now() + 30s;
	while (off < buf.size()) {
		if (closed_)
			return false;
		ssize_t n = ::send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += static_cast<size_t>(n);
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (Clock::now() >= deadline)
			return false;
		pollfd p{fd_, POLLOUT, 0};
		poll(&p, 1, 100);
	}
	return true;
}

void AgentConnection::reader()
{
	proto::Decoder dec;
	char buf[65536];
	for (;;) {
		ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		dec.feed(std::string_view(buf, static_cast<size_t>(n)));
		while (auto f = dec.next()) {
			try {
				if (f->type == proto::Type::Hello) {
					auto h = proto::HelloInfo::decode(f->payload);
					std::lock_guard lk(mu_);
					hello_ = h;
					cv_.notify_all();
					continue;
				}
				std::shared_ptr<PendingExec> p;
				{
					std::lock_guard lk(mu_);
					auto it = pending_.find(f->id);
					if (it == pending_.end())
						continue;
					p = it->second;
					if (f->type == proto::Type::Exit)
						pending_.erase(it);
				}
				std::lock_guard plk(p->mu_);
				if (f->type == proto::Type::Output) {
					p->res_.output += f->payload;
					p->fresh_ += f->payload;
					if (p->on_output_)
						p->on_output_(f->payload);
				} else if (f->type == proto::Type::Exit) {
					auto e = proto::ExitInfo::decode(f->payload);
					p->res_.status = e.status;
					p->res_.timed_out = e.flags & proto::kExitTimedOut;
					if (e.flags & proto::kExitError)
						p->res_.error = e.message.empty() ? "agent error" : e.message;
					else if (!e.message.empty() && e.flags == 0)
						p->res_.output += e.message + "\n";  // e.g. "started pid N"
					p->res_.seconds = std::chrono::duration<double>(Clock::now() - p->start_).count();
					p->done_ = true;
					p->cv_.notify_all();
				}
			} catch (const proto::DecodeError &) {
				// Malformed frame from the guest: ignore it.
			}
		}
	}
	closed_ = true;
	std::map<uint32_t, std::shared_ptr<PendingExec>> orphans;
	{
		std::lock_guard lk(mu_);
		orphans.swap(pending_);
		cv_.notify_all();
	}
	for (auto &[id, p] : orphans) {
		std::lock_guard plk(p->mu_);
		p->res_.error = "connection to the guest agent lost";
		p->res_.seconds = std::chrono::duration<double>(Clock::now() - p->start_).count();
		p->done_ = true;
		p->cv_.notify_all();
	}
}

bool AgentConnection::wait_hello(Clock::time_point deadline, const std::function<bool()> &keep_trying)
{
	auto next_ping = Clock::now() + 1s;
	std::unique_lock lk(mu_);
	while (!hello_) {
		if (closed_ || Clock::now() >= deadline || !keep_trying())
			return false;
		cv_.wait_for(lk, 100ms);
		if (!hello_ && Clock::now() >= next_ping) {
			lk.unlock();
			send(proto::Type::Ping, 0, {});
			lk.lock();
			next_ping = Clock::now() + 1s;
		}
	}
	return true;
}

std::optional<proto::HelloInfo> AgentConnection::hello()
{
	std::lock_guard lk(mu_);
	return hello_;
}

std::shared_ptr<PendingExec> AgentConnection::start(const std::string &cmd, std::chrono::milliseconds timeout,
						     uint32_t flags, OutputFn on_output)
{
	auto p = std::make_shared<PendingExec>();
	p->on_output_ = std::move(on_output);
	p->start_ = Clock::now();
	uint32_t id;
	{
		std::lock_guard lk(mu_);
		id = next_id_++;
		p->id_ = id;
		if (!closed_ && fd_ >= 0)
			pending_[id] = p;
	}
	proto::ExecRequest req;
	req.command = cmd;
	req.timeout_ms = static_cast<uint32_t>(timeout.count());
	req.flags = flags;
	if (closed_ || fd_ < 0 || !send(proto::Type::Exec, id, req.encode())) {
		{
			std::lock_guard lk(mu_);
			pending_.erase(id);
		}
		std::lock_guard plk(p->mu_);
		if (!p->done_) {
			p->res_.error = "guest agent not connected";
			p->done_ = true;
		}
	}
	return p;
}

void AgentConnection::kill(uint32_t id)
{
	if (!closed_ && fd_ >= 0)
		send(proto::Type::Kill, id, {});
}

bool AgentConnection::poweroff(std::chrono::milliseconds timeout)
{
	if (closed_ || fd_ < 0)
		return false;
	auto p = std::make_shared<PendingExec>();
	p->start_ = Clock::now();
	uint32_t id;
	{
		std::lock_guard lk(mu_);
		id = next_id_++;
		p->id_ = id;
		pending_[id] = p;
	}
	if (!send(proto::Type::Poweroff, id, {}))
		return false;
	return p->wait_for(timeout);
}

// ---------------------------------------------------------------------------
// Guest

Guest::Guest(Lab &lab, GuestSpec spec, int index)
	: lab_(lab), spec_(std::move(spec)), index_(index), guid_(guest_guid(index))
{
	dir_ = lab.run_dir() + "/" + spec_.name;
}

std::string Guest::node_guid_string() const { return format_guid(guid_); }

std::string Guest::mgmt_ip() const { return lab_.options().mgmt_net ? iblab::mgmt_ip(index_) : ""; }

std::string Guest::mgmt_mac() const { return lab_.options().mgmt_net ? iblab::mgmt_mac(index_) : ""; }

bool Guest::qemu_running() { return qemu_.running(); }

std::shared_ptr<PendingExec> Guest::start_exec(const std::string &cmd, std::chrono::milliseconds timeout,
					       uint32_t flags, OutputFn on_output)
{
	return agent_.start(cmd, timeout, flags, std::move(on_output));
}

void Guest::kill(uint32_t id) { agent_.kill(id); }

ExecResult Guest::exec(const std::string &cmd, std::chrono::milliseconds timeout, OutputFn on_output)
{
	auto p = start_exec(cmd, timeout, 0, std::move(on_output));
	// The agent enforces `timeout`; the lab gives it some slack on top
	// (TCG guests are slow) before giving up on the guest.
	auto host_deadline = timeout.count() ? Clock::now() + timeout + 60s : Clock::time_point::max();
	while (!p->wait_for(500ms)) {
		if (Clock::now() >= host_deadline) {
			agent_.kill(p->id());
			ExecResult r = p->result();
			r.timed_out = true;
			r.error = "no answer from the guest agent " + std::to_string(
				std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s + 60 s after the start";
			return r;
		}
		if (!qemu_.running() && !p->wait_for(2s)) {
			ExecResult r = p->result();
			r.error = "QEMU of guest " + name() + " exited";
			return r;
		}
	}
	return p->result();
}

ExecResult Guest::exec_background(const std::string &cmd, std::chrono::milliseconds timeout)
{
	auto p = start_exec(cmd, timeout, proto::kExecBackground);
	if (!p->wait_for(60s))
		return ExecResult{-1, {}, true, "no answer from the guest agent", 60};
	return p->result();
}

std::optional<std::string> Guest::fetch_dmesg()
{
	auto r = exec("dmesg", 60s);
	if (r.status != 0 || !r.error.empty())
		return std::nullopt;
	std::ofstream(dir_ + "/dmesg.txt", std::ios::trunc) << r.output;
	return r.output;
}

std::vector<DmesgHit> Guest::check_new_dmesg()
{
	std::lock_guard lk(dmesg_mu_);
	auto text = fetch_dmesg();
	if (!text)
		return {{0, "could not read the dmesg of guest " + name(), "no-dmesg"}};
	std::vector<DmesgHit> hits;
	std::istringstream in(*text);
	std::string line;
	size_t n = 0;
	double last = dmesg_checked_until_;
	bool fresh = false;
	while (std::getline(in, line)) {
		n++;
		if (auto ts = DmesgChecker::timestamp(line)) {
			fresh = *ts > dmesg_checked_until_;
			last = std::max(last, *ts);
		}
		if (!fresh)
			continue;
		if (auto rule = lab_.checker().match(line))
			hits.push_back({n, line, *rule});
	}
	dmesg_checked_until_ = last;
	return hits;
}

namespace {

// kmemleak reports an object only once it is 5 s old, and only when a scan
// finds it unreferenced with the same contents as the scan before (the
// first scan to see an object takes its checksum): hence two scans. The
// first one runs at once (it only takes checksums, whatever their age);
// the second starts `settle` seconds after it began at the earliest, so
// everything allocated before the call is old enough by then. A scan of
// a debug guest takes several seconds under TCG, which then counts
// towards the wait instead of coming on top of it.
std::string kmemleak_command(std::chrono::seconds settle)
{
	const std::string f = "/sys/kernel/debug/kmemleak";
	return "end=$(($(date +%s) + " + std::to_string(settle.count() + 1) + ")) && echo scan > " + f +
	       " && while [ $(date +%s) -lt $end ]; do sleep 0.2; done && echo scan > " + f + " && cat " + f;
}

std::vector<DmesgHit> kmemleak_hits(const std::string &dir, const DmesgChecker &checker, const ExecResult &r)
{
	if (r.status != 0 || !r.error.empty())
		return {{0, "could not scan kmemleak: " + r.describe() + ": " + r.output, "no-kmemleak"}};
	std::ofstream(dir + "/kmemleak.txt", std::ios::trunc) << r.output;
	std::vector<DmesgHit> hits;
	for (auto &h : checker.check(r.output))
		if (h.rule == "kmemleak")
			hits.push_back(std::move(h));
	return hits;
}

}  // namespace

std::vector<DmesgHit> Guest::check_kmemleak(std::chrono::seconds settle)
{
	if (!kmemleak_)
		return {};
	auto r = exec(kmemleak_command(settle), settle + 300s);
	return kmemleak_hits(dir_, lab_.checker(), r);
}

// ---------------------------------------------------------------------------
// Lab

Lab::Lab(LabOptions opts) : opts_(std::move(opts))
{
	for (const auto &re : opts_.dmesg_ignore)
		checker_.ignore(re);
}

Lab::~Lab()
{
	if (!shut_down_)
		kill_all();
}

Guest &Lab::guest(const std::string &name)
{
	if (Guest *g = find_guest(name))
		return *g;
	throw std::out_of_range("no guest named " + name);
}

Guest *Lab::find_guest(const std::string &name)
{
	for (auto &g : guests_)
		if (g->name() == name)
			return g.get();
	return nullptr;
}

std::vector<Guest *> Lab::guests()
{
	std::vector<Guest *> v;
	for (auto &g : guests_)
		v.push_back(g.get());
	return v;
}

void Lab::start()
{
	if (started_)
		throw std::logic_error("Lab::start called twice");
	started_ = true;
	if (opts_.guests.empty())
		throw std::invalid_argument("the lab needs at least one guest");
	std::set<std::string> names;
	for (const auto &g : opts_.guests) {
		if (g.name.empty() || g.name.find_first_of("/ ,:=") != std::string::npos)
			throw std::invalid_argument("bad guest name '" + g.name + "'");
		if (!names.insert(g.name).second)
			throw std::invalid_argument("duplicate guest name " + g.name);
		if (g.stack == Stack::Ours && opts_.modules_dir.empty())
			throw std::invalid_argument("guest " + g.name + " runs our stack but no modules directory was given");
		if (g.stack == Stack::Ours && g.host_kernel)
			throw std::invalid_argument("guest " + g.name +
						    " runs our stack, whose modules are built for the lab's kernel: "
						    "it cannot boot the host's");
	}
	if (opts_.mgmt_net && opts_.guests.size() > static_cast<size_t>(kMgmtMaxGuests))
		throw std::invalid_argument("the management network has addresses for " +
					    std::to_string(kMgmtMaxGuests) + " guests");
	if (opts_.qemu.empty())
		opts_.qemu = default_qemu();
	if (opts_.emulator.empty())
		opts_.emulator = default_emulator();
	if (opts_.agent.empty())
		opts_.agent = default_agent();
	if (opts_.build_dir.empty())
		opts_.build_dir = default_build_dir();
	if (opts_.cache_dir.empty())
		opts_.cache_dir = opts_.build_dir + "/lab/cache";
	run_dir_ = opts_.run_dir.empty() ? opts_.build_dir + "/lab/" + make_run_id() : opts_.run_dir;
	run_dir_ = fs::absolute(run_dir_).lexically_normal().string();
	if (!opts_.modules_dir.empty()) {
		opts_.modules_dir = fs::absolute(opts_.modules_dir).lexically_normal().string();
		if (!fs::is_directory(opts_.modules_dir))
			throw std::runtime_error("modules directory " + opts_.modules_dir + " does not exist");
	}

	if (opts_.kernel_dir.empty())
		if (const char *e = std::getenv("IBLAB_KERNEL_DIR"); e && *e)
			opts_.kernel_dir = e;
	KernelInfo k;
	if (opts_.kernel_dir.empty()) {
		k = find_kernel(opts_.kernel);
	} else {
		std::string d = fs::absolute(opts_.kernel_dir).lexically_normal().string();
		if (!fs::is_directory(d + "/boot") || !fs::is_directory(d + "/lib/modules"))
			throw std::runtime_error("kernel directory " + d + " has no boot/ and lib/modules/ "
						 "(the debug kernel: `make debug-kernel`)");
		k = find_kernel(opts_.kernel, d + "/boot", d + "/lib/modules");
		own_kernel_ = true;
	}
	if (opts_.machine.empty())
		if (const char *e = std::getenv("IBLAB_MACHINE"); e && *e)
			opts_.machine = e;
	if (opts_.machine.empty())
		opts_.machine = "pc";
	if (const char *e = std::getenv("IBLAB_CMDLINE"); e && *e)
		opts_.extra_cmdline += (opts_.extra_cmdline.empty() ? "" : " ") + std::string(e);
	if (opts_.machine != "pc" && opts_.machine != "q35")
		throw std::runtime_error("machine type '" + opts_.machine + "': the lab knows pc and q35");
	kernel_version_ = k.version;
	kernel_image_ = k.image;
	modules_dir_ = k.modules_dir;
	if (access(opts_.qemu.c_str(), X_OK) != 0)
		throw std::runtime_error("QEMU not found at " + opts_.qemu + " (set IBLAB_QEMU)");
	if (opts_.hca && access(opts_.emulator.c_str(), X_OK) != 0)
		throw std::runtime_error("emulator not found at " + opts_.emulator + " (set IBLAB_EMULATOR, or run without the HCA)");
	if (access(opts_.agent.c_str(), R_OK) != 0)
		throw std::runtime_error("guest agent not found at " + opts_.agent + " (set IBLAB_AGENT)");

	fs::create_directories(run_dir_);
	check_socket_path(control_socket());
	if (fs::path(run_dir_).parent_path() == fs::absolute(opts_.build_dir + "/lab").lexically_normal())
		prune_old_runs(fs::path(run_dir_).parent_path().string(), 30);
	InitramfsSpec spec;
	spec.kernel_version = kernel_version_;
	spec.modules_dir = modules_dir_;
	spec.agent = opts_.agent;
	std::string initramfs = cached_initramfs(spec, opts_.cache_dir);
	if (own_kernel_ && std::any_of(opts_.guests.begin(), opts_.guests.end(),
				       [](const GuestSpec &g) { return g.host_kernel; })) {
		KernelInfo h = find_kernel("");
		InitramfsSpec hs = spec;
		hs.kernel_version = h.version;
		hs.modules_dir = h.modules_dir;
		host_kernel_image_ = h.image;
		host_initramfs_ = cached_initramfs(hs, opts_.cache_dir);
	}

	{
		std::ofstream info(run_dir_ + "/lab.txt");
		info << "kernel " << kernel_version_ << " " << kernel_image_ << "\nqemu " << opts_.qemu << "\n";
		info << "emulator " << (opts_.hca ? opts_.emulator : "(none: no HCA)") << "\n";
		info << "initramfs " << initramfs << "\n";
		if (!opts_.modules_dir.empty())
			info << "modules " << opts_.modules_dir << "\n";
		if (!host_kernel_image_.empty())
			info << "host kernel " << host_kernel_image_ << " " << host_initramfs_ << "\n";
		for (size_t i = 0; i < opts_.guests.size(); i++)
			info << "guest " << opts_.guests[i].name << " " << to_string(opts_.guests[i].stack) << " "
			     << format_guid(guest_guid(static_cast<int>(i)))
			     << (opts_.mgmt_net ? " " + iblab::mgmt_ip(static_cast<int>(i)) : std::string())
			     << (own_kernel_ && opts_.guests[i].host_kernel ? " host-kernel" : "") << "\n";
	}

	try {
		for (const auto &g : opts_.guests)
			if (g.stack == Stack::Ours && our_modules_share_.empty())
				prepare_our_modules();
		if (opts_.hca)
			start_emulator();
		if (opts_.mgmt_net)
			start_mgmt_net();
		for (size_t i = 0; i < opts_.guests.size(); i++) {
			guests_.push_back(std::unique_ptr<Guest>(new Guest(*this, opts_.guests[i], static_cast<int>(i))));
			Guest &g = *guests_.back();
			fs::create_directories(g.dir());
			SpawnOptions so;
			so.argv = qemu_argv(g, boots_host_kernel(g) ? host_initramfs_ : initramfs);
			so.output_file = g.dir() + "/qemu.log";
			{
				std::ofstream cmd(g.dir() + "/qemu.cmd");
				for (const auto &a : so.argv)
					cmd << a << "\n";
			}
			g.qemu_started_ = Clock::now();
			g.qemu_ = Process::spawn(so);
			mark("guest " + g.name() + " started");
		}
		auto deadline = Clock::now() + opts_.boot_timeout;
		for (auto &gp : guests_) {
			Guest &g = *gp;
			auto keep = [&] { return !cancelled() && g.qemu_.running(); };
			std::string why;
			try {
				g.agent_.connect(g.dir() + "/agent.sock", deadline, keep);
				if (!g.agent_.wait_hello(deadline, keep))
					why = cancelled() ? "cancelled" : !g.qemu_.running() ? "QEMU exited" : "timed out";
			} catch (const std::exception &e) {
				why = e.what();
			}
			if (!why.empty()) {
				std::string msg = "guest " + g.name() + " did not boot (" + why + ")";
				if (auto st = g.qemu_.exit_status())
					msg += "; QEMU " + describe_status(*st);
				msg += "\n  " + g.dir() + "/qemu.log:\n" + tail_of_file(g.dir() + "/qemu.log", 15);
				msg += "  " + g.console_log_path() + " (last lines):\n" + tail_of_file(g.console_log_path(), 25);
				if (opts_.hca)
					msg += "  " + emulator_log_path() + " (last lines):\n" + tail_of_file(emulator_log_path(), 10);
				throw std::runtime_error(msg);
			}
			g.boot_seconds_ = std::chrono::duration<double>(Clock::now() - g.qemu_started_).count();
			std::ofstream(g.dir() + "/boot_time.txt") << g.boot_seconds_ << "\n";
			g.kmemleak_ = g.exec("test -w /sys/kernel/debug/kmemleak", 30s).ok();
			mark("guest " + g.name() + " booted");
		}
	} catch (...) {
		kill_all();
		throw;
	}
}

// The guests of our stack get /lib/modules/<kver>/updates and the module
// indexes from a tree prepared here: `depmod -b` over the stock modules
// (symlinked) plus ours takes a second on the host, half a minute in a TCG
// guest.
void Lab::prepare_our_modules()
{
	fs::path base = fs::path(run_dir_) / "modules";
	fs::path kdir = base / "lib/modules" / kernel_version_;
	fs::remove_all(base);
	fs::create_directories(kdir / "updates");
	for (const auto &e : fs::directory_iterator(modules_dir_)) {
		std::string n = e.path().filename().string();
		if (e.is_directory() && n != "updates" && n != "build" && n != "source")
			fs::create_directory_symlink(e.path(), kdir / n);
		else if (n == "modules.order" || n == "modules.builtin" || n == "modules.builtin.modinfo")
			fs::copy_file(e.path(), kdir / n);
	}
	size_t count = 0;
	for (const auto &e : fs::recursive_directory_iterator(opts_.modules_dir)) {
		if (!e.is_regular_file() || e.path().extension() != ".ko")
			continue;
		fs::path rel = fs::relative(e.path(), opts_.modules_dir);
		fs::create_directories((kdir / "updates" / rel).parent_path());
		fs::copy_file(e.path(), kdir / "updates" / rel);
		count++;
	}
	if (count == 0)
		throw std::runtime_error("no .ko files in the modules directory " + opts_.modules_dir);
	auto r = run_capture({"depmod", "-b", base.string(), kernel_version_}, 120s);
	if (r.status != 0)
		throw std::runtime_error("depmod -b " + base.string() + " failed:\n" + r.output);
	our_modules_share_ = kdir.string();
}

// The hub runs before any QEMU starts, so that no guest's first frames (the
// kernel's IPv4 duplicate-address probe) go nowhere for want of a hub.
void Lab::start_mgmt_net()
{
	std::string hosts = "# the iblab management network (" + run_dir_ + ")\n";
	for (size_t i = 0; i < opts_.guests.size(); i++)
		hosts += iblab::mgmt_ip(static_cast<int>(i)) + "\t" + opts_.guests[i].name + "\n";
	write_file_atomic(mgmt_hosts_path(), hosts);
	std::vector<std::string> names;
	for (const auto &g : opts_.guests)
		names.push_back(g.name);
	hub_ = std::make_unique<MgmtHub>(mgmt_dir(), names);
	hub_->start();
}

void Lab::stop_mgmt_net()
{
	if (!hub_)
		return;
	hub_->stop();
	std::ofstream(run_dir_ + "/mgmtnet.txt") << hub_->stats_text();
}

std::vector<MgmtPortStats> Lab::mgmt_stats() const { return hub_ ? hub_->stats() : std::vector<MgmtPortStats>{}; }

void Lab::start_emulator()
{
	std::string sock = emulator_socket();
	check_socket_path(sock);
	SpawnOptions so;
	so.argv = {opts_.emulator, "--socket", sock, "--log", emulator_log_path(), "--log-level",
		   opts_.emulator_log_level};
	if (!opts_.fabric.empty()) {
		check_socket_path(fabric_socket());
		so.argv.insert(so.argv.end(), {"--fabric", opts_.fabric, "--control", fabric_socket()});
	}
	for (size_t i = 0; i < opts_.guests.size(); i++) {
		char guid[32];
		snprintf(guid, sizeof guid, "0x%016llx",
			 static_cast<unsigned long long>(guest_guid(static_cast<int>(i))));
		so.argv.push_back("--node");
		so.argv.push_back(opts_.guests[i].name + "=" + guid);
	}
	std::string out = run_dir_ + "/ibemu.out";
	so.output_file = out;
	emulator_ = Process::spawn(so);
	auto deadline = Clock::now() + 30s;
	for (;;) {
		std::ifstream in(out);
		std::string line;
		while (std::getline(in, line))
			if (line.starts_with("ibemu: ready"))
				return;
		if (!emulator_.running())
			throw std::runtime_error("emulator exited before it was ready (" +
						 describe_status(*emulator_.exit_status()) + "):\n" + tail_of_file(out, 20));
		if (Clock::now() >= deadline || cancelled())
			throw std::runtime_error("emulator not ready after 30 s:\n" + tail_of_file(out, 20));
		std::this_thread::sleep_for(20ms);
	}
}

bool Lab::boots_host_kernel(const Guest &g) const
{
	return own_kernel_ && g.spec_.host_kernel;
}

std::vector<std::string> Lab::qemu_argv(Guest &g, const std::string &initramfs)
{
	const bool host = boots_host_kernel(g);
	const std::string mem = std::to_string(opts_.mem_mb);
	std::string cmdline = "console=ttyS0 panic=-1 iblab.name=" + g.name() + " iblab.mode=" + to_string(g.stack());
	std::vector<std::string> a = {
		opts_.qemu, "-name", "iblab-" + g.name(), "-accel", "tcg",
		"-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-L", "/usr/lib/ipxe/qemu",
		"-object", "memory-backend-memfd,id=mem,size=" + mem + "M,share=on",
		"-machine", opts_.machine + ",memory-backend=mem", "-m", mem, "-smp", std::to_string(opts_.smp),
		"-nodefaults", "-no-user-config", "-nic", "none", "-display", "none", "-vga", "none", "-no-reboot",
		"-serial", "file:" + g.console_log_path(),
		"-kernel", host ? host_kernel_image_ : kernel_image_, "-initrd", initramfs,
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=agent,path=" + g.dir() + "/agent.sock,server=on,wait=off",
		"-device", "virtserialport,chardev=agent,name=iblab.agent",
	};
	// The HCA sits in PCI slot 00:04.0 whatever the guest's stack, shares
	// and machine type: the sysfs comparisons of ours against upstream see
	// the same device path.
	if (opts_.hca) {
		a.push_back("-device");
		a.push_back("ibemu-hca,socket=" + emulator_socket() + ",node=" + g.name() + ",addr=04.0");
	}
	if (g.stack() == Stack::Ours) {
		a.push_back("-virtfs");
		a.push_back("local,path=" + our_modules_share_ +
			    ",mount_tag=iblabmods,security_model=none,readonly=on,multidevs=remap");
	}
	// A kernel of the lab's own: its modules appear at /lib/modules/<release>.
	if (own_kernel_ && !host) {
		a.push_back("-virtfs");
		a.push_back("local,path=" + modules_dir_ +
			    ",mount_tag=iblabkmod,security_model=none,readonly=on,multidevs=remap");
		cmdline += " iblab.kmod=1";
	}
	std::string shares;
	for (size_t i = 0; i < opts_.shares.size(); i++) {
		std::string p = fs::absolute(opts_.shares[i]).lexically_normal().string();
		if (p.find_first_of(" ,:\t") != std::string::npos)
			throw std::invalid_argument("share path with a space, comma or colon: " + p);
		std::string tag = "iblabshare" + std::to_string(i);
		a.push_back("-virtfs");
		a.push_back("local,path=" + p + ",mount_tag=" + tag + ",security_model=none,readonly=on,multidevs=remap");
		shares += (shares.empty() ? "" : ",") + tag + ":" + p;
	}
	if (!shares.empty())
		cmdline += " iblab.share=" + shares;
	// The management NIC comes after every other device, so that it moves
	// none of them to another PCI slot. No option ROM: nothing boots from it.
	if (opts_.mgmt_net) {
		if (hub_ == nullptr)
			throw std::logic_error("the management network's hub is not running");
		a.insert(a.end(), {"-netdev", "dgram,id=mgmt,local.type=unix,local.path=" + hub_->nic_socket(g.name()) +
						      ",remote.type=unix,remote.path=" + hub_->hub_socket(g.name()),
				   "-device", "virtio-net-pci,netdev=mgmt,romfile=,mac=" + g.mgmt_mac()});
		// The names table goes on the command line, not through a file: the
		// guest cannot read the run directory when it lies under /tmp, which
		// is a tmpfs of its own in the guest.
		std::string table;
		for (size_t i = 0; i < opts_.guests.size(); i++)
			table += (i ? "," : "") + iblab::mgmt_ip(static_cast<int>(i)) + "=" + opts_.guests[i].name;
		cmdline += " iblab.mgmt=" + g.mgmt_mac() + "," + g.mgmt_ip() + "/" + std::to_string(kMgmtPrefixLen) +
			   " iblab.hosts=" + table;
	}
	if (!opts_.extra_cmdline.empty())
		cmdline += " " + opts_.extra_cmdline;
	a.push_back("-append");
	a.push_back(cmdline);
	for (const auto &x : opts_.extra_qemu_args)
		a.push_back(x);
	return a;
}

void Lab::serve_control()
{
	if (!ctl_)
		ctl_ = std::make_unique<ControlServer>(*this, control_socket());
}

void Lab::stop_control() { ctl_.reset(); }

// User plus system CPU time of process `pid` (all its threads) so far,
// from /proc/<pid>/stat; nothing when it cannot be read.
static std::optional<double> cpu_seconds(pid_t pid)
{
	if (pid <= 0)
		return std::nullopt;
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	// The command name (field 2) may hold spaces: count from its ')'.
	size_t close = stat.rfind(')');
	if (close == std::string::npos)
		return std::nullopt;
	std::istringstream rest(stat.substr(close + 1));
	std::string field;
	unsigned long long utime = 0, stime = 0;
	// Fields 3..13, then utime (14) and stime (15).
	for (int i = 3; i <= 13; i++)
		rest >> field;
	if (!(rest >> utime >> stime))
		return std::nullopt;
	return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

LabReport Lab::shutdown()
{
	LabReport rep;
	if (shut_down_ || !started_)
		return rep;
	stop_control();
	mark("shutdown");
	// Leak scans first (all guests at once: each waits for kmemleak's
	// minimum object age), so that their dmesg lines are checked below.
	std::map<Guest *, std::shared_ptr<PendingExec>> scans;
	for (auto &gp : guests_)
		if (gp->kmemleak_ && gp->qemu_.running() && gp->agent_.connected())
			scans[gp.get()] = gp->start_exec(kmemleak_command(6s), 300s);
	for (auto &[g, p] : scans) {
		if (!p->wait_for(360s))
			g->kill(p->id());
		ExecResult r = p->done() ? p->result() : ExecResult{-1, {}, true, "no answer", 0};
		for (const auto &h : kmemleak_hits(g->dir(), checker_, r))
			rep.problems.push_back("guest " + g->name() + ": " + g->dir() + "/kmemleak.txt:" +
					       std::to_string(h.line_no) + ": [" + h.rule + "] " + h.line);
	}
	if (!scans.empty())
		mark("leak scans done");
	for (auto &gp : guests_) {
		Guest &g = *gp;
		std::set<std::string> seen;
		if (!g.qemu_.running()) {
			rep.problems.push_back("guest " + g.name() + ": QEMU exited during the run (" +
					       describe_status(g.qemu_.exit_status().value_or(0)) + ")");
		} else if (g.agent_.connected()) {
			std::lock_guard lk(g.dmesg_mu_);
			auto text = g.fetch_dmesg();
			if (!text) {
				rep.problems.push_back("guest " + g.name() + ": could not read dmesg from the agent");
			} else {
				for (const auto &h : checker_.check(*text)) {
					seen.insert(std::string(DmesgChecker::strip_prefix(h.line)));
					rep.problems.push_back("guest " + g.name() + ": " + g.dir() + "/dmesg.txt:" +
							       std::to_string(h.line_no) + ": [" + h.rule + "] " + h.line);
				}
			}
		} else {
			rep.problems.push_back("guest " + g.name() + ": agent connection lost");
		}
		// The console has what the kernel printed even if the guest died.
		try {
			std::string console = read_file(g.console_log_path());
			for (const auto &h : checker_.check(console))
				if (seen.insert(std::string(DmesgChecker::strip_prefix(h.line))).second)
					rep.problems.push_back("guest " + g.name() + ": " + g.console_log_path() + ":" +
							       std::to_string(h.line_no) + ": [" + h.rule + "] " + h.line);
		} catch (const std::exception &) {
		}
	}
	mark("dmesg checked");
	// What each process cost in CPU time (to see which suites keep a core
	// busy per guest: tests/vm/CMakeLists.txt, GUESTS).
	for (auto &gp : guests_)
		if (auto t = cpu_seconds(gp->qemu_.pid()))
			mark("cpu " + gp->name() + " " + std::to_string(int(*t + 0.5)) + " s");
	if (auto t = emulator_.valid() ? cpu_seconds(emulator_.pid()) : std::nullopt)
		mark("cpu emulator " + std::to_string(int(*t + 0.5)) + " s");
	for (auto &gp : guests_)
		if (gp->qemu_.running())
			gp->agent_.poweroff(3s);
	for (auto &gp : guests_) {
		Guest &g = *gp;
		if (!g.qemu_.wait_for(15s))
			g.qemu_.terminate(3s);
		g.qemu_.kill();
		g.agent_.close();
	}
	stop_mgmt_net();
	if (emulator_.valid()) {
		if (!emulator_.running())
			rep.problems.push_back("emulator exited during the run (" +
					       describe_status(emulator_.exit_status().value_or(0)) + "), see " +
					       emulator_log_path());
		else if (int st = emulator_.terminate(5s); st != 0 && exit_code(st) != 128 + SIGTERM)
			rep.problems.push_back("emulator " + describe_status(st) + " on SIGTERM, see " + run_dir_ + "/ibemu.out");
		emulator_.kill();
	}
	mark("stopped");
	shut_down_ = true;
	std::ofstream(run_dir_ + "/report.txt") << (rep.ok() ? "ok\n" : rep.text());
	return rep;
}

void Lab::mark(const std::string &what)
{
	if (run_dir_.empty())
		return;
	double t = std::chrono::duration<double>(Clock::now() - made_).count();
	std::lock_guard lk(timeline_mu_);
	std::ofstream f(run_dir_ + "/timeline.txt", std::ios::app);
	char buf[32];
	snprintf(buf, sizeof buf, "%8.1f ", t);
	f << buf << what << "\n";
}

void Lab::kill_all()
{
	stop_control();
	for (auto &gp : guests_) {
		gp->qemu_.kill();
		gp->agent_.close();
	}
	stop_mgmt_net();
	emulator_.kill();
	shut_down_ = true;
}

}  // namespace iblab

namespace iblab {

std::string Lab::fabric(const std::string &command)
{
	if (opts_.fabric.empty())
		return "error: this lab has no fabric";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return std::string("error: socket: ") + strerror(errno);
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	std::string path = fabric_socket();
	std::memcpy(sa.sun_path, path.c_str(), std::min(path.size(), sizeof(sa.sun_path) - 1));
	timeval tv{10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	std::string reply;
	if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
		reply = "error: cannot reach the fabric at " + path + ": " + strerror(errno);
	} else {
		std::string line = command + "\n";
		if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
			char buf[4096];
			ssize_t n;
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				reply.append(buf, static_cast<size_t>(n));
		}
		if (reply.empty())
			reply = "error: no reply from the fabric";
	}
	close(fd);
	return reply;
}

}  // namespace iblab
