// SPDX-License-Identifier: GPL-2.0
#include "iblab/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>

extern char **environ;

namespace iblab {
namespace {

constexpr int kMaxRegistered = 256;
std::atomic<pid_t> g_groups[kMaxRegistered];

void register_group(pid_t pgid)
{
	for (auto &slot : g_groups) {
		pid_t expected = 0;
		if (slot.compare_exchange_strong(expected, pgid))
			return;
	}
}

void unregister_group(pid_t pgid)
{
	for (auto &slot : g_groups) {
		pid_t expected = pgid;
		if (slot.compare_exchange_strong(expected, 0))
			return;
	}
}

[[noreturn]] void child_fail(int err_fd, const char *what)
{
	int e = errno;
	char buf[256];
	int n = snprintf(buf, sizeof buf, "%s: %s", what, strerror(e));
	if (n > 0 && write(err_fd, buf, static_cast<size_t>(n)) < 0) {
		// nothing to do
	}
	_exit(127);
}

}  // namespace

Process Process::spawn(const SpawnOptions &opts)
{
	if (opts.argv.empty())
		throw std::invalid_argument("spawn: empty argv");

	// Build everything before fork(): the child may only use async-signal-safe
	// calls (the lab is multi-threaded).
	std::vector<std::string> env_strings;
	{
		std::map<std::string, std::string> env;
		for (char **e = environ; e && *e; e++) {
			std::string s(*e);
			auto eq = s.find('=');
			env[s.substr(0, eq)] = s;
		}
		for (const auto &s : opts.env_add)
			env[s.substr(0, s.find('='))] = s;
		for (auto &[k, v] : env)
			env_strings.push_back(v);
	}
	std::vector<char *> argv, envp;
	for (const auto &a : opts.argv)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	for (const auto &e : env_strings)
		envp.push_back(const_cast<char *>(e.c_str()));
	envp.push_back(nullptr);

	int out_fd = -1;
	if (!opts.output_file.empty()) {
		out_fd = open(opts.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (out_fd < 0)
			throw std::system_error(errno, std::generic_category(), "open " + opts.output_file);
	}
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		int e = errno;
		if (out_fd >= 0)
			close(out_fd);
		close(null_fd);
		throw std::system_error(e, std::generic_category(), "pipe2");
	}
	pid_t parent = getpid();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		if (opts.new_process_group)
			setpgid(0, 0);
		if (opts.pdeathsig) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(127);
		}
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		if (opts.stdin_null && dup2(null_fd, 0) < 0)
			child_fail(errpipe[1], "dup2 stdin");
		if (out_fd >= 0 && (dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0))
			child_fail(errpipe[1], "dup2 output");
		if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) < 0)
			child_fail(errpipe[1], "chdir");
		execvpe(argv[0], argv.data(), envp.data());
		child_fail(errpipe[1], argv[0]);
	}
	int fork_errno = errno;
	if (pid > 0 && opts.new_process_group) {
		// Also from the parent, so the group exists before we return.
		setpgid(pid, pid);
		register_group(pid);
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	close(errpipe[1]);
	if (out_fd >= 0)
		close(out_fd);
	close(null_fd);
	if (pid < 0) {
		close(errpipe[0]);
		throw std::system_error(fork_errno, std::generic_category(), "fork");
	}
	char buf[256];
	ssize_t n;
	do
		n = read(errpipe[0], buf, sizeof buf);
	while (n < 0 && errno == EINTR);
	close(errpipe[0]);
	Process p;
	p.pid_ = pid;
	if (n > 0) {
		p.kill();
		throw std::system_error(ENOEXEC, std::generic_category(),
					"spawn " + opts.argv[0] + ": " + std::string(buf, static_cast<size_t>(n)));
	}
	return p;
}

Process::~Process() { release(); }

Process::Process(Process &&o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }

Process &Process::operator=(Process &&o) noexcept
{
	if (this != &o) {
		release();
		pid_ = o.pid_;
		status_ = o.status_;
		o.pid_ = -1;
	}
	return *this;
}

void Process::release()
{
	if (pid_ > 0) {
		kill();
		pid_ = -1;
	}
}

bool Process::running()
{
	if (pid_ <= 0 || status_)
		return false;
	return !wait_for(std::chrono::milliseconds(0));
}

std::optional<int> Process::wait_for(std::chrono::milliseconds timeout)
{
	if (status_)
		return status_;
	if (pid_ <= 0)
		return std::nullopt;
	auto deadline = std::chrono::steady_clock::now() + timeout;
	auto nap = std::chrono::milliseconds(1);
	for (;;) {
		int st;
		pid_t r = waitpid(pid_, &st, WNOHANG);
		if (r == pid_) {
			status_ = st;
			return status_;
		}
		if (r < 0 && errno != EINTR) {
			// Reaped elsewhere (should not happen): treat as killed.
			status_ = SIGKILL;
			return status_;
		}
		auto now = std::chrono::steady_clock::now();
		if (now >= deadline)
			return std::nullopt;
		std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(nap, deadline - now));
		nap = std::min(nap * 2, std::chrono::milliseconds(20));
	}
}

void Process::signal_group(int sig)
{
	if (pid_ > 0)
		::kill(-pid_, sig);
}

int Process::terminate(std::chrono::milliseconds grace)
{
	if (pid_ <= 0)
		return status_.value_or(-1);
	if (!status_)
		signal_group(SIGTERM);
	auto st = wait_for(grace);
	return st ? (kill(), *st) : kill();
}

int Process::kill()
{
	if (pid_ <= 0)
		return status_.value_or(-1);
	// Kill the group even if the leader is gone: its children may remain.
	signal_group(SIGKILL);
	auto st = wait_for(std::chrono::seconds(30));
	unregister_group(pid_);
	return st.value_or(-1);
}

int exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

std::string describe_status(int st)
{
	if (WIFEXITED(st))
		return "exited with status " + std::to_string(WEXITSTATUS(st));
	if (WIFSIGNALED(st))
		return std::string("killed by signal ") + strsignal(WTERMSIG(st));
	return "wait status " + std::to_string(st);
}

void kill_all_registered()
{
	for (auto &slot : g_groups) {
		pid_t pg = slot.load();
		if (pg > 0)
			::kill(-pg, SIGKILL);
	}
}

bool group_alive(pid_t pgid)
{
	return ::kill(-pgid, 0) == 0 || errno == EPERM;
}

RunResult run_capture(const std::vector<std::string> &argv, std::chrono::milliseconds timeout)
{
	RunResult res;
	char tmpl[] = "/tmp/iblab-run-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		throw std::system_error(errno, std::generic_category(), "mkstemp");
	close(fd);
	SpawnOptions o;
	o.argv = argv;
	o.output_file = tmpl;
	try {
		Process p = Process::spawn(o);
		auto st = p.wait_for(timeout);
		if (!st) {
			res.timed_out = true;
			st = p.kill();
		} else {
			p.kill();  // stragglers of its group
		}
		res.status = exit_code(*st);
	} catch (...) {
		unlink(tmpl);
		throw;
	}
	int in = open(tmpl, O_RDONLY | O_CLOEXEC);
	if (in >= 0) {
		char buf[65536];
		ssize_t n;
		while ((n = read(in, buf, sizeof buf)) > 0)
			res.output.append(buf, static_cast<size_t>(n));
		close(in);
	}
	unlink(tmpl);
	return res;
}

}  // namespace iblab
