// SPDX-License-Identifier: GPL-2.0
#include "iblab/ctl.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "iblab/lab.h"
#include "iblab/protocol.h"

using namespace std::chrono_literals;

namespace iblab {
namespace {

bool write_all(int fd, const std::string &buf)
{
	size_t off = 0;
	while (off < buf.size()) {
		ssize_t n = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += static_cast<size_t>(n);
	}
	return true;
}

bool send_frame(int fd, proto::Type t, uint32_t id, std::string payload)
{
	return write_all(fd, proto::encode({t, id, std::move(payload)}));
}

// Reads one frame; nullopt on EOF/error.
std::optional<proto::Frame> read_frame(int fd, proto::Decoder &dec)
{
	for (;;) {
		if (auto f = dec.next())
			return f;
		char buf[65536];
		ssize_t n = ::recv(fd, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return std::nullopt;
		dec.feed(std::string_view(buf, static_cast<size_t>(n)));
	}
}

sockaddr_un make_addr(const std::string &path)
{
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	if (path.size() >= sizeof sa.sun_path)
		throw std::runtime_error("control socket path too long: " + path);
	strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
	return sa;
}

int connect_ctl(const std::string &path)
{
	sockaddr_un sa = make_addr(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		throw std::runtime_error(std::string("socket: ") + strerror(errno));
	if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0) {
		int e = errno;
		close(fd);
		throw std::runtime_error("cannot connect to the lab at " + path + ": " + strerror(e));
	}
	return fd;
}

bool peer_gone(int fd)
{
	pollfd p{fd, POLLRDHUP, 0};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

}  // namespace

ControlServer::ControlServer(Lab &lab, const std::string &path) : lab_(lab), path_(path)
{
	sockaddr_un sa = make_addr(path);
	unlink(path.c_str());
	listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0 ||
	    listen(listen_fd_, 64) < 0) {
		int e = errno;
		if (listen_fd_ >= 0)
			close(listen_fd_);
		throw std::runtime_error("control socket " + path + ": " + strerror(e));
	}
	if (pipe2(wake_, O_CLOEXEC) < 0) {
		close(listen_fd_);
		throw std::runtime_error(std::string("pipe2: ") + strerror(errno));
	}
	acceptor_ = std::thread([this] { accept_loop(); });
}

ControlServer::~ControlServer()
{
	stopping_ = true;
	if (write(wake_[1], "x", 1) < 0) {
	}
	acceptor_.join();
	{
		std::lock_guard lk(mu_);
		for (int fd : client_fds_)
			::shutdown(fd, SHUT_RDWR);
	}
	for (auto &t : clients_)
		t.join();
	close(listen_fd_);
	close(wake_[0]);
	close(wake_[1]);
	unlink(path_.c_str());
}

void ControlServer::accept_loop()
{
	for (;;) {
		pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return;
		if (stopping_ || p[1].revents)
			return;
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		std::lock_guard lk(mu_);
		client_fds_.push_back(fd);
		clients_.emplace_back([this, fd] { serve(fd); });
	}
}

void ControlServer::serve(int fd)
{
	proto::Decoder dec;
	while (!stopping_) {
		auto f = read_frame(fd, dec);
		if (!f)
			break;
		if (f->type == proto::Type::List) {
			std::ostringstream os;
			for (Guest *g : lab_.guests())
				os << g->name() << " " << to_string(g->stack()) << " " << g->node_guid_string() << " "
				   << g->boot_seconds() << "\n";
			send_frame(fd, proto::Type::ListReply, f->id, proto::Writer().str(os.str()).take());
			continue;
		}
		if (f->type != proto::Type::Exec)
			break;
		proto::ExitInfo exit;
		try {
			auto req = proto::ExecRequest::decode(f->payload);
			Guest *g = lab_.find_guest(req.guest);
			if (!g) {
				exit.status = 255;
				exit.flags = proto::kExitError;
				exit.message = "no guest named '" + req.guest + "'";
			} else {
				auto p = g->start_exec(req.command, std::chrono::milliseconds(req.timeout_ms), req.flags);
				bool client_gone = false;
				for (;;) {
					bool done = p->wait_for(100ms);
					std::string out = p->take_new_output();
					if (!out.empty() && !send_frame(fd, proto::Type::Output, f->id, out))
						client_gone = true;
					if (done)
						break;
					if (client_gone || stopping_ || peer_gone(fd)) {
						g->kill(p->id());
						client_gone = true;
						if (!p->wait_for(10s))
							break;
					}
				}
				if (client_gone)
					break;
				ExecResult r = p->result();
				exit.status = r.status;
				exit.flags = (r.timed_out ? proto::kExitTimedOut : 0) |
					     (r.error.empty() ? 0 : proto::kExitError);
				exit.message = r.error;
				if (req.flags & proto::kExecBackground)
					send_frame(fd, proto::Type::Output, f->id, r.output);
			}
		} catch (const proto::DecodeError &e) {
			exit.status = 255;
			exit.flags = proto::kExitError;
			exit.message = std::string("bad request: ") + e.what();
		}
		if (!send_frame(fd, proto::Type::Exit, f->id, exit.encode()))
			break;
	}
	std::lock_guard lk(mu_);
	client_fds_.remove(fd);
	close(fd);
}

int ctl_exec(const std::string &ctl_path, const std::string &guest, const std::string &command,
	     std::chrono::milliseconds timeout, bool background, std::ostream &out, std::ostream &err)
{
	int fd;
	try {
		fd = connect_ctl(ctl_path);
	} catch (const std::exception &e) {
		err << "iblab exec: " << e.what() << "\n";
		return 255;
	}
	proto::ExecRequest req;
	req.guest = guest;
	req.command = command;
	req.timeout_ms = static_cast<uint32_t>(timeout.count());
	req.flags = background ? proto::kExecBackground : 0;
	int rc = 255;
	if (!send_frame(fd, proto::Type::Exec, 1, req.encode())) {
		err << "iblab exec: lab connection lost\n";
		close(fd);
		return 255;
	}
	proto::Decoder dec;
	for (;;) {
		auto f = read_frame(fd, dec);
		if (!f) {
			err << "iblab exec: lab connection lost\n";
			break;
		}
		if (f->type == proto::Type::Output) {
			out.write(f->payload.data(), static_cast<std::streamsize>(f->payload.size()));
			out.flush();
		} else if (f->type == proto::Type::Exit) {
			auto e = proto::ExitInfo::decode(f->payload);
			if (e.flags & proto::kExitError)
				err << "iblab exec: " << guest << ": " << e.message << "\n";
			else if (e.flags & proto::kExitTimedOut)
				err << "iblab exec: " << guest << ": command timed out after "
				    << timeout.count() / 1000.0 << " s\n";
			rc = (e.flags & proto::kExitError) ? 255 : (e.flags & proto::kExitTimedOut) ? 124 : e.status;
			break;
		}
	}
	close(fd);
	return rc;
}

int ctl_list(const std::string &ctl_path, std::ostream &out, std::ostream &err)
{
	try {
		int fd = connect_ctl(ctl_path);
		proto::Decoder dec;
		std::optional<proto::Frame> f;
		if (send_frame(fd, proto::Type::List, 1, {}))
			f = read_frame(fd, dec);
		close(fd);
		if (!f || f->type != proto::Type::ListReply) {
			err << "iblab list: no answer from the lab\n";
			return 255;
		}
		out << proto::Reader(f->payload).str();
		return 0;
	} catch (const std::exception &e) {
		err << "iblab list: " << e.what() << "\n";
		return 255;
	}
}

}  // namespace iblab
