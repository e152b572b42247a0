// SPDX-License-Identifier: GPL-2.0
// iblab-agent: runs in the guest (as PID 1 after switch_root) and executes
// the lab's commands. One poll() loop serves the virtio-serial port, the
// output pipes of the running commands and a signalfd for SIGCHLD; several
// commands run at once. Each command runs as `/bin/sh -c CMD` in its own
// session/process group with stdin from /dev/null and stdout+stderr into
// one pipe; on timeout or Kill the whole group gets SIGKILL. As PID 1 the
// agent also reaps every orphan.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "iblab/protocol.h"

namespace {

using namespace iblab::proto;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxQueued = 4u << 20;  // stop reading command output above this
constexpr auto kDrainGrace = std::chrono::milliseconds(1000);

struct Command {
	uint32_t id = 0;
	pid_t pid = -1;
	int out_fd = -1;  // -1 once EOF (or background)
	bool background = false;
	bool exited = false;
	int wait_status = 0;
	uint32_t flags = 0;
	Clock::time_point deadline = Clock::time_point::max();
	Clock::time_point exit_time{};
};

std::string g_name = "guest";
std::string g_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
std::string g_port_name = "iblab.agent";
std::string g_listen;
int g_port = -1;
bool g_port_hup = false;
Clock::time_point g_port_retry{};
std::string g_outq;
std::map<pid_t, Command> g_cmds;  // by pid
Decoder g_decoder;

void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logmsg(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	// To the kernel log, so it shows in dmesg and on the console.
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		std::string m = "iblab-agent: " + std::string(buf) + "\n";
		if (write(fd, m.data(), m.size()) < 0) {
		}
		close(fd);
	} else {
		fprintf(stderr, "iblab-agent: %s\n", buf);
	}
}

void send(Type t, uint32_t id, std::string payload)
{
	g_outq += encode(Frame{t, id, std::move(payload)});
}

void flush_port(int timeout_ms)
{
	auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	while (!g_outq.empty() && g_port >= 0) {
		ssize_t n = write(g_port, g_outq.data(), g_outq.size());
		if (n > 0) {
			g_outq.erase(0, static_cast<size_t>(n));
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			g_outq.clear();  // host gone: drop
			return;
		}
		if (timeout_ms <= 0 || Clock::now() >= deadline)
			return;
		pollfd p{g_port, POLLOUT, 0};
		poll(&p, 1, 50);
	}
}

std::string find_port()
{
	DIR *d = opendir("/sys/class/virtio-ports");
	if (!d)
		return {};
	std::string found;
	while (dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::string base = std::string("/sys/class/virtio-ports/") + e->d_name;
		FILE *f = fopen((base + "/name").c_str(), "re");
		if (!f)
			continue;
		char buf[128] = {};
		if (fgets(buf, sizeof buf, f)) {
			std::string n(buf);
			while (!n.empty() && (n.back() == '\n' || n.back() == ' '))
				n.pop_back();
			if (n == g_port_name)
				found = std::string("/dev/") + e->d_name;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

void send_hello()
{
	HelloInfo h;
	h.name = g_name;
	utsname u{};
	uname(&u);
	h.kernel = u.release;
	h.agent_pid = static_cast<uint32_t>(getpid());
	send(Type::Hello, 0, h.encode());
}

void send_exit(uint32_t id, int status, uint32_t flags, const std::string &msg)
{
	ExitInfo e;
	e.status = status;
	e.flags = flags;
	e.message = msg;
	send(Type::Exit, id, e.encode());
}

void start_command(uint32_t id, const ExecRequest &req)
{
	bool bg = req.flags & kExecBackground;
	int fds[2] = {-1, -1};
	std::string bg_log = "/tmp/iblab-bg-" + std::to_string(id) + ".log";
	if (!bg && pipe2(fds, O_CLOEXEC) < 0) {
		send_exit(id, 127, kExitError, std::string("pipe: ") + strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		if (!bg) {
			close(fds[0]);
			close(fds[1]);
		}
		send_exit(id, 127, kExitError, std::string("fork: ") + strerror(e));
		return;
	}
	if (pid == 0) {
		setsid();
		if (!g_listen.empty())
			prctl(PR_SET_PDEATHSIG, SIGKILL);  // test mode on a host
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		int in = open("/dev/null", O_RDONLY);
		int out = bg ? open(bg_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644) : fds[1];
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		if (chdir("/root") < 0 && chdir("/") < 0)
			_exit(127);
		std::string guest = "IBLAB_GUEST=" + g_name;
		std::string path = "PATH=" + g_path;
		const char *env[] = {path.c_str(), "HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/sh", "TERM=dumb",
				     "LANG=C", guest.c_str(), nullptr};
		execle("/bin/sh", "sh", "-c", req.command.c_str(), static_cast<char *>(nullptr), env);
		_exit(127);
	}
	Command c;
	c.id = id;
	c.pid = pid;
	c.background = bg;
	if (!bg) {
		close(fds[1]);
		c.out_fd = fds[0];
		fcntl(c.out_fd, F_SETFL, O_NONBLOCK);
	}
	if (req.timeout_ms)
		c.deadline = Clock::now() + std::chrono::milliseconds(req.timeout_ms);
	g_cmds[pid] = c;
	if (bg)
		send_exit(id, 0, 0, "started pid " + std::to_string(pid) + ", output in " + bg_log);
}

Command *find_by_id(uint32_t id)
{
	for (auto &[pid, c] : g_cmds)
		if (c.id == id && !c.background)
			return &c;
	return nullptr;
}

[[noreturn]] void power_off()
{
	logmsg("powering off");
	flush_port(1000);
	for (auto &[pid, c] : g_cmds)
		kill(-pid, SIGKILL);
	// Only ever power off as the guest's init: the agent may also run on a
	// host (unit tests, --listen), where it must just exit.
	if (getpid() == 1 && g_listen.empty()) {
		sync();
		reboot(RB_POWER_OFF);
	}
	_exit(0);
}

void handle_frame(Frame &f)
{
	try {
		switch (f.type) {
		case Type::Ping:
			send_hello();
			break;
		case Type::Exec:
			start_command(f.id, ExecRequest::decode(f.payload));
			break;
		case Type::Kill:
			if (Command *c = find_by_id(f.id)) {
				c->flags |= kExitKilled;
				kill(-c->pid, SIGKILL);
			}
			break;
		case Type::Poweroff:
			send_exit(f.id, 0, 0, "powering off");
			power_off();
		default:
			logmsg("unexpected frame type %u", static_cast<unsigned>(f.type));
		}
	} catch (const DecodeError &e) {
		logmsg("bad frame type %u: %s", static_cast<unsigned>(f.type), e.what());
		send_exit(f.id, 127, kExitError, std::string("bad request: ") + e.what());
	}
}

void read_port()
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(g_port, buf, sizeof buf);
		if (n > 0) {
			g_port_hup = false;
			g_decoder.feed(std::string_view(buf, static_cast<size_t>(n)));
			while (auto f = g_decoder.next())
				handle_frame(*f);
			continue;
		}
		if (n == 0 && !g_listen.empty()) {
			for (auto &[pid, c] : g_cmds)
				kill(-pid, SIGKILL);
			_exit(0);
		}
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			// Host side not connected: poll() would report HUP at once,
			// so look again a little later.
			g_port_hup = true;
			g_port_retry = Clock::now() + std::chrono::milliseconds(100);
		}
		return;
	}
}

void drain_output(Command &c)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(c.out_fd, buf, sizeof buf);
		if (n > 0) {
			send(Type::Output, c.id, std::string(buf, static_cast<size_t>(n)));
			if (g_outq.size() > kMaxQueued)
				return;
			continue;
		}
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			close(c.out_fd);
			c.out_fd = -1;
		}
		return;
	}
}

void reap()
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		auto it = g_cmds.find(pid);
		if (it == g_cmds.end())
			continue;  // an orphan we inherited as PID 1
		it->second.exited = true;
		it->second.wait_status = st;
		it->second.exit_time = Clock::now();
	}
}

void complete_finished()
{
	auto now = Clock::now();
	for (auto it = g_cmds.begin(); it != g_cmds.end();) {
		Command &c = it->second;
		if (!c.exited && now >= c.deadline) {
			c.flags |= kExitTimedOut;
			kill(-c.pid, SIGKILL);
			c.deadline = Clock::time_point::max();
		}
		bool done = c.exited && (c.out_fd < 0 || now >= c.exit_time + kDrainGrace);
		if (!done) {
			++it;
			continue;
		}
		if (c.out_fd >= 0) {
			drain_output(c);
			if (c.out_fd >= 0)
				close(c.out_fd);
		}
		if (!c.background) {
			int st = c.wait_status;
			int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
			std::string msg;
			if (c.flags & kExitTimedOut)
				msg = "timed out";
			else if (c.flags & kExitKilled)
				msg = "killed on request";
			send_exit(c.id, code, c.flags, msg);
		}
		it = g_cmds.erase(it);
	}
}

int poll_timeout_ms()
{
	auto now = Clock::now();
	auto next = Clock::time_point::max();
	for (auto &[pid, c] : g_cmds) {
		if (!c.exited)
			next = std::min(next, c.deadline);
		else
			next = std::min(next, c.exit_time + kDrainGrace);
	}
	if (g_port_hup)
		next = std::min(next, g_port_retry);
	if (next == Clock::time_point::max())
		return -1;
	if (next <= now)
		return 0;
	return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) + 1;
}

}  // namespace

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--name" && i + 1 < argc)
			g_name = argv[++i];
		else if (a == "--port" && i + 1 < argc)
			g_port_name = argv[++i];
		else if (a == "--listen" && i + 1 < argc)
			g_listen = argv[++i];
		else if (a == "--path" && i + 1 < argc)
			g_path = argv[++i];
		else if (a == "--mode" && i + 1 < argc)
			++i;  // informational
	}

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	signal(SIGPIPE, SIG_IGN);
	if (getpid() == 1) {
		// Do not die on the signals the kernel sends to init.
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
	}

	std::string path;
	if (!g_listen.empty()) {
		// Test mode (unit tests of the lab without a VM): serve one
		// connection on a unix socket, as QEMU's chardev would.
		int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_un sa{};
		sa.sun_family = AF_UNIX;
		strncpy(sa.sun_path, g_listen.c_str(), sizeof sa.sun_path - 1);
		unlink(g_listen.c_str());
		if (ls < 0 || bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0 || listen(ls, 1) < 0) {
			perror("iblab-agent: listen");
			return 1;
		}
		g_port = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
		close(ls);
		if (g_port < 0) {
			perror("iblab-agent: accept");
			return 1;
		}
		fcntl(g_port, F_SETFL, O_NONBLOCK);
		path = g_listen;
	}
	for (int i = 0; g_port < 0 && i < 200 && (path = find_port()).empty(); i++)
		usleep(50000);
	if (path.empty()) {
		logmsg("virtio port %s not found", g_port_name.c_str());
		if (getpid() == 1)
			power_off();
		return 1;
	}
	if (g_port < 0)
		g_port = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (g_port < 0) {
		logmsg("cannot open %s: %s", path.c_str(), strerror(errno));
		if (getpid() == 1)
			power_off();
		return 1;
	}
	logmsg("ready on %s", path.c_str());
	send_hello();

	for (;;) {
		std::vector<pollfd> pfds;
		pfds.push_back({sfd, POLLIN, 0});
		short port_events = 0;
		if (!g_port_hup || Clock::now() >= g_port_retry)
			port_events |= POLLIN;
		if (!g_outq.empty())
			port_events |= POLLOUT;
		pfds.push_back({port_events ? g_port : -1, port_events, 0});
		std::vector<pid_t> order;
		if (g_outq.size() <= kMaxQueued) {
			for (auto &[pid, c] : g_cmds) {
				if (c.out_fd >= 0) {
					pfds.push_back({c.out_fd, POLLIN, 0});
					order.push_back(pid);
				}
			}
		}
		int r = poll(pfds.data(), pfds.size(), poll_timeout_ms());
		if (r < 0 && errno != EINTR) {
			logmsg("poll: %s", strerror(errno));
			sleep(1);
		}
		if (pfds[0].revents) {
			signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0) {
			}
		}
		reap();
		if (pfds[1].revents & (POLLIN | POLLHUP | POLLERR))
			read_port();
		for (size_t i = 0; i < order.size(); i++) {
			if (!pfds[i + 2].revents)
				continue;
			auto it = g_cmds.find(order[i]);
			if (it != g_cmds.end() && it->second.out_fd >= 0)
				drain_output(it->second);
		}
		complete_finished();
		flush_port(0);
	}
}
