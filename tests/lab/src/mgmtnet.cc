// SPDX-License-Identifier: GPL-2.0
#include "iblab/mgmtnet.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace iblab {

std::string mgmt_ip(int index) { return "192.168.77." + std::to_string(index + 1); }

std::string mgmt_mac(int index)
{
	char buf[32];
	snprintf(buf, sizeof buf, "52:54:00:77:00:%02x", static_cast<unsigned>(index + 1) & 0xff);
	return buf;
}

namespace {

sockaddr_un unix_addr(const std::string &path)
{
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	if (path.size() >= sizeof sa.sun_path)
		throw std::runtime_error("socket path too long for AF_UNIX (use a shorter --workdir): " + path);
	memcpy(sa.sun_path, path.c_str(), path.size() + 1);
	return sa;
}

uint64_t mac_at(const std::string &f, size_t off)
{
	uint64_t m = 0;
	for (size_t i = 0; i < 6; i++)
		m = (m << 8) | static_cast<unsigned char>(f[off + i]);
	return m;
}

bool is_group(uint64_t mac) { return (mac >> 40) & 1; }  // I/G bit: broadcast, multicast

// Frames of a segment without offloads: 1514 bytes at MTU 1500; QEMU's dgram
// backend sends up to 64 KiB ones if the guest's MTU allows.
constexpr size_t kMaxFrame = 65536 + 64;
constexpr int kBurst = 64;  // frames read from one port per poll round

}  // namespace

MgmtHub::MgmtHub(const std::string &dir, const std::vector<std::string> &names) : dir_(dir)
{
	fs::create_directories(dir_);
	if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::runtime_error(std::string("pipe2: ") + strerror(errno));
	try {
		for (const auto &n : names) {
			Port p;
			p.name = n;
			p.st.name = n;
			std::string path = hub_socket(n);
			sockaddr_un sa = unix_addr(path);
			unix_addr(nic_socket(n));  // checks its length, before QEMU does
			p.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			if (p.fd < 0)
				throw std::runtime_error(std::string("socket: ") + strerror(errno));
			ports_.push_back(std::move(p));
			unlink(path.c_str());
			if (bind(ports_.back().fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
				throw std::runtime_error("bind " + path + ": " + strerror(errno));
		}
	} catch (...) {
		stop();
		throw;
	}
}

MgmtHub::~MgmtHub() { stop(); }

void MgmtHub::start()
{
	if (!thread_.joinable() && !stop_)
		thread_ = std::thread([this] { run(); });
}

void MgmtHub::stop()
{
	stop_ = true;
	if (wake_[1] >= 0) {
		char c = 0;
		if (write(wake_[1], &c, 1) < 0) {
			// The pipe is full: the thread wakes anyway.
		}
	}
	if (thread_.joinable())
		thread_.join();
	std::lock_guard lk(mu_);
	for (auto &p : ports_) {
		if (p.fd >= 0) {
			close(p.fd);
			p.fd = -1;
			unlink(hub_socket(p.name).c_str());
			unlink(nic_socket(p.name).c_str());
		}
	}
	for (int &fd : wake_) {
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	std::error_code ec;
	fs::remove(dir_, ec);  // only if nothing else is left in it
}

bool MgmtHub::connect_port(Port &p)
{
	if (p.connected)
		return true;
	sockaddr_un sa = unix_addr(nic_socket(p.name));
	if (connect(p.fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
		return false;  // QEMU has not bound it (yet): nobody to deliver to
	p.connected = true;
	return true;
}

void MgmtHub::run()
{
	std::vector<pollfd> pfds;
	while (!stop_) {
		{
			std::lock_guard lk(mu_);
			pfds.clear();
			pfds.push_back({wake_[0], POLLIN, 0});
			for (auto &p : ports_)
				pfds.push_back({p.fd, static_cast<short>(POLLIN | (p.queue.empty() ? 0 : POLLOUT)), 0});
		}
		// A port whose guest is not there yet keeps its (bounded) queue;
		// retry the connect now and then instead of spinning on POLLOUT.
		int n = poll(pfds.data(), pfds.size(), 200);
		if (n < 0 && errno != EINTR)
			break;
		if (stop_)
			break;
		std::lock_guard lk(mu_);
		for (size_t i = 0; i < ports_.size(); i++)
			if (pfds[i + 1].revents & (POLLIN | POLLERR))
				receive(i);
		for (size_t i = 0; i < ports_.size(); i++)
			if (!ports_[i].queue.empty())
				flush(i);
	}
}

// Caller holds mu_.
void MgmtHub::receive(size_t from)
{
	Port &p = ports_[from];
	std::string &frame = rxbuf_;
	frame.resize(kMaxFrame);
	for (int k = 0; k < kBurst; k++) {
		ssize_t n = recv(p.fd, frame.data(), frame.size(), MSG_TRUNC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;  // EAGAIN, or an error on the socket (ECONNREFUSED): nothing to read
		}
		if (static_cast<size_t>(n) < 14 || static_cast<size_t>(n) > frame.size()) {
			p.st.bad++;
			continue;
		}
		p.st.rx_frames++;
		p.st.rx_bytes += static_cast<uint64_t>(n);
		forward(from, frame.substr(0, static_cast<size_t>(n)));
	}
}

// A learning switch: a unicast frame to a MAC seen as a source on some port
// goes to that port only; everything else floods to every other port.
// Caller holds mu_.
void MgmtHub::forward(size_t from, const std::string &frame)
{
	uint64_t dst = mac_at(frame, 0), src = mac_at(frame, 6);
	if (!is_group(src))
		macs_[src] = from;
	auto enqueue = [&](size_t to) {
		Port &q = ports_[to];
		if (q.queue.size() >= kPortQueue) {
			q.st.drops++;
			return;
		}
		q.queue.push_back(frame);
	};
	if (!is_group(dst)) {
		auto it = macs_.find(dst);
		if (it != macs_.end()) {
			if (it->second != from)
				enqueue(it->second);
			return;
		}
	}
	for (size_t to = 0; to < ports_.size(); to++)
		if (to != from)
			enqueue(to);
}

// Caller holds mu_.
void MgmtHub::flush(size_t to)
{
	Port &p = ports_[to];
	if (!connect_port(p)) {
		p.st.drops += p.queue.size();
		p.queue.clear();
		return;
	}
	while (!p.queue.empty()) {
		const std::string &f = p.queue.front();
		ssize_t n = send(p.fd, f.data(), f.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0) {
			p.st.tx_frames++;
			p.st.tx_bytes += f.size();
			p.queue.pop_front();
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
			return;  // the guest's receive queue is full: poll() says when
		// The guest's QEMU is gone (ECONNREFUSED) or never was: drop what
		// waits for it and reconnect next time (a restarted QEMU binds anew).
		p.st.drops += p.queue.size();
		p.queue.clear();
		sockaddr sa{};
		sa.sa_family = AF_UNSPEC;
		connect(p.fd, &sa, sizeof sa);
		p.connected = false;
		return;
	}
}

std::vector<MgmtPortStats> MgmtHub::stats() const
{
	std::lock_guard lk(mu_);
	std::vector<MgmtPortStats> v;
	for (const auto &p : ports_)
		v.push_back(p.st);
	return v;
}

std::string MgmtHub::stats_text() const
{
	std::string s;
	for (const auto &st : stats()) {
		char line[256];
		snprintf(line, sizeof line, "%s: rx %llu frames %llu bytes, tx %llu frames %llu bytes, drops %llu, bad %llu\n",
			 st.name.c_str(), static_cast<unsigned long long>(st.rx_frames),
			 static_cast<unsigned long long>(st.rx_bytes), static_cast<unsigned long long>(st.tx_frames),
			 static_cast<unsigned long long>(st.tx_bytes), static_cast<unsigned long long>(st.drops),
			 static_cast<unsigned long long>(st.bad));
		s += line;
	}
	return s;
}

}  // namespace iblab
