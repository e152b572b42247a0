// SPDX-License-Identifier: GPL-2.0
// The control socket of a running lab (IBLAB_CTL): `iblab exec` connects,
// sends one Exec (or List) frame and receives Output frames and one Exit.
// If the client goes away, its command is killed in the guest.
#pragma once

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace iblab {

class Lab;

class ControlServer {
public:
	ControlServer(Lab &lab, const std::string &path);
	~ControlServer();  // stops accepting, cancels running requests, joins
	const std::string &path() const { return path_; }

private:
	void accept_loop();
	void serve(int fd);
	Lab &lab_;
	std::string path_;
	int listen_fd_ = -1;
	int wake_[2] = {-1, -1};
	std::atomic<bool> stopping_{false};
	std::thread acceptor_;
	std::mutex mu_;
	std::list<std::thread> clients_;
	std::list<int> client_fds_;
};

// Client side. Streams the output to `out`; returns the command's exit
// status, or 255 (with a message on `err`) if the lab could not run it.
int ctl_exec(const std::string &ctl_path, const std::string &guest, const std::string &command,
	     std::chrono::milliseconds timeout, bool background, std::ostream &out, std::ostream &err);
// Writes the lab's guests, one per line: "name stack guid boot_seconds".
int ctl_list(const std::string &ctl_path, std::ostream &out, std::ostream &err);

}  // namespace iblab
