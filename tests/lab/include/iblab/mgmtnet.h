// SPDX-License-Identifier: GPL-2.0
// The lab's management network: an Ethernet segment private to one lab run.
//
// Every guest's virtio-net NIC is a QEMU `-netdev dgram` endpoint on a unix
// datagram socket; its peer is one port of MgmtHub, a learning switch that a
// thread of the lab runs. Nothing of it touches the host's network: no
// user-mode networking, no tap, no inet socket. Per guest n (0-based):
//
//   <dir>/<name>.nic   bound by the guest's QEMU (the NIC's end)
//   <dir>/<name>.hub   bound by the hub (the switch port's end)
//
// The hub sends a guest's frames from that guest's port socket, connected to
// the NIC's socket once QEMU has bound it, so poll() tells when the guest's
// receive queue has room: a port queues at most kPortQueue frames and drops
// beyond that (TCP recovers; the counters say so).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace iblab {

// Addressing of guest number `index` (0-based) on the management network.
std::string mgmt_ip(int index);    // "192.168.77.<index+1>"
std::string mgmt_mac(int index);   // "52:54:00:77:00:<index+1>" (hex)
constexpr int kMgmtPrefixLen = 24;
constexpr int kMgmtMaxGuests = 253;

struct MgmtPortStats {
	std::string name;
	uint64_t rx_frames = 0;   // frames the guest sent into the hub
	uint64_t rx_bytes = 0;
	uint64_t tx_frames = 0;   // frames the hub delivered to the guest
	uint64_t tx_bytes = 0;
	uint64_t drops = 0;       // frames for this guest the hub dropped
	uint64_t bad = 0;         // frames from this guest shorter than a header
};

class MgmtHub {
public:
	static constexpr size_t kPortQueue = 512;

	// Creates <dir> and binds one port socket per name; throws on failure.
	MgmtHub(const std::string &dir, const std::vector<std::string> &names);
	~MgmtHub();  // stop()
	MgmtHub(const MgmtHub &) = delete;
	MgmtHub &operator=(const MgmtHub &) = delete;

	void start();  // runs the switch on a thread of its own
	// Stops the thread, closes and unlinks the hub's sockets and the NIC
	// sockets QEMU left behind (call it once the QEMUs are gone). Idempotent.
	void stop();

	std::string nic_socket(const std::string &name) const { return dir_ + "/" + name + ".nic"; }
	std::string hub_socket(const std::string &name) const { return dir_ + "/" + name + ".hub"; }
	std::vector<MgmtPortStats> stats() const;
	std::string stats_text() const;  // one line per port

private:
	struct Port {
		std::string name;
		int fd = -1;
		bool connected = false;
		std::deque<std::string> queue;
		MgmtPortStats st;
	};
	void run();
	void receive(size_t from);
	void forward(size_t from, const std::string &frame);
	void flush(size_t to);
	bool connect_port(Port &p);

	std::string dir_;
	int wake_[2] = {-1, -1};
	std::thread thread_;
	std::atomic<bool> stop_{false};
	// Held by the hub thread while it touches ports_ (queues, counters,
	// the MAC table) and by stats(); never held across a blocking call.
	mutable std::mutex mu_;
	std::vector<Port> ports_;
	std::map<uint64_t, size_t> macs_;  // learned source MAC -> port
	std::string rxbuf_;                // the hub thread's receive buffer
};

}  // namespace iblab
