// SPDX-License-Identifier: GPL-2.0
// The management network's hub without a VM: unix datagram sockets stand in
// for the guests' QEMU NIC ends (bound at <dir>/<name>.nic, sending to
// <dir>/<name>.hub, as `-netdev dgram` does).
#include "iblab/mgmtnet.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>

namespace fs = std::filesystem;

namespace iblab {
namespace {

sockaddr_un addr(const std::string &path)
{
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
	return sa;
}

std::string mac(int n) { return std::string("\x52\x54\x00\x77\x00", 5) + static_cast<char>(n); }
const std::string kBroadcast(6, '\xff');

std::string frame(const std::string &dst, const std::string &src, const std::string &payload)
{
	return dst + src + std::string("\x08\x00", 2) + payload;
}

// One guest's NIC end, as QEMU's dgram backend has it.
class Nic {
public:
	Nic(const MgmtHub &hub, const std::string &name) : hub_path_(hub.hub_socket(name))
	{
		fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		sockaddr_un sa = addr(hub.nic_socket(name));
		EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0) << strerror(errno);
	}
	~Nic() { close(fd_); }
	bool send(const std::string &f)
	{
		sockaddr_un sa = addr(hub_path_);
		return sendto(fd_, f.data(), f.size(), 0, reinterpret_cast<sockaddr *>(&sa), sizeof sa) ==
		       static_cast<ssize_t>(f.size());
	}
	std::optional<std::string> recv(int timeout_ms = 1000)
	{
		pollfd p{fd_, POLLIN, 0};
		if (poll(&p, 1, timeout_ms) != 1)
			return std::nullopt;
		std::string buf(70000, '\0');
		ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
		if (n < 0)
			return std::nullopt;
		buf.resize(static_cast<size_t>(n));
		return buf;
	}

private:
	std::string hub_path_;
	int fd_ = -1;
};

class MgmtHubTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		dir_ = fs::temp_directory_path() / ("iblab-mgmt-" + std::to_string(getpid()));
		fs::remove_all(dir_);
	}
	void TearDown() override { fs::remove_all(dir_); }
	fs::path dir_;
};

TEST(MgmtAddressing, PerGuestIndex)
{
	EXPECT_EQ(mgmt_ip(0), "192.168.77.1");
	EXPECT_EQ(mgmt_ip(1), "192.168.77.2");
	EXPECT_EQ(mgmt_mac(0), "52:54:00:77:00:01");
	EXPECT_EQ(mgmt_mac(15), "52:54:00:77:00:10");
}

TEST_F(MgmtHubTest, FloodsThenLearns)
{
	MgmtHub hub(dir_.string(), {"a", "b", "c"});
	hub.start();
	Nic a(hub, "a"), b(hub, "b"), c(hub, "c");

	// A broadcast from a reaches b and c, never a itself.
	std::string bc = frame(kBroadcast, mac(1), "who has b");
	ASSERT_TRUE(a.send(bc));
	EXPECT_EQ(b.recv(), bc);
	EXPECT_EQ(c.recv(), bc);
	EXPECT_FALSE(a.recv(100));

	// The hub learnt a's MAC: b's unicast answer goes to a only.
	std::string reply = frame(mac(1), mac(2), "b is here");
	ASSERT_TRUE(b.send(reply));
	EXPECT_EQ(a.recv(), reply);
	EXPECT_FALSE(c.recv(200)) << "a unicast frame to a learnt MAC must not be flooded";

	// A unicast to a MAC not seen yet floods.
	std::string unknown = frame(mac(9), mac(1), "anyone?");
	ASSERT_TRUE(a.send(unknown));
	EXPECT_EQ(b.recv(), unknown);
	EXPECT_EQ(c.recv(), unknown);

	// A runt (shorter than an Ethernet header) is counted and dropped.
	ASSERT_TRUE(c.send("short"));
	EXPECT_FALSE(a.recv(200));
	EXPECT_FALSE(b.recv(10));

	auto st = hub.stats();
	ASSERT_EQ(st.size(), 3u);
	EXPECT_EQ(st[0].rx_frames, 2u);
	EXPECT_EQ(st[0].tx_frames, 1u);
	EXPECT_EQ(st[1].tx_frames, 2u);
	EXPECT_EQ(st[2].tx_frames, 2u);
	EXPECT_EQ(st[2].bad, 1u);
	EXPECT_NE(hub.stats_text().find("c: rx 0 frames"), std::string::npos) << hub.stats_text();
}

TEST_F(MgmtHubTest, GuestNotThereYetIsNotAnError)
{
	MgmtHub hub(dir_.string(), {"a", "b"});
	hub.start();
	Nic a(hub, "a");
	ASSERT_TRUE(a.send(frame(kBroadcast, mac(1), "early")));
	// b's QEMU has not bound its socket: the frame is dropped, counted.
	for (int i = 0; i < 100 && hub.stats()[1].drops == 0; i++)
		usleep(10000);
	EXPECT_EQ(hub.stats()[1].drops, 1u);
	Nic b(hub, "b");
	std::string f = frame(kBroadcast, mac(1), "now");
	ASSERT_TRUE(a.send(f));
	EXPECT_EQ(b.recv(), f);
}

// A guest that does not read: the hub queues a bounded number of frames for
// it, drops (and counts) the rest, and delivers what it queued later.
TEST_F(MgmtHubTest, SlowReceiverIsBoundedAndCounted)
{
	MgmtHub hub(dir_.string(), {"a", "b"});
	hub.start();
	Nic a(hub, "a"), b(hub, "b");
	ASSERT_TRUE(b.send(frame(kBroadcast, mac(2), "hello")));
	ASSERT_TRUE(a.recv());
	const int n = 3000;
	for (int i = 0; i < n; i++)
		ASSERT_TRUE(a.send(frame(mac(2), mac(1), std::string(1000, 'x'))));
	// Let the hub take all of them in before b starts reading.
	for (int i = 0; i < 300 && hub.stats()[0].rx_frames < n + 0u; i++)
		usleep(10000);
	uint64_t got = 0;
	while (b.recv(300))
		got++;
	auto st = hub.stats();
	EXPECT_EQ(st[0].rx_frames, static_cast<uint64_t>(n));
	EXPECT_EQ(st[1].tx_frames, got);
	EXPECT_EQ(st[1].tx_frames + st[1].drops, static_cast<uint64_t>(n));
	EXPECT_GT(st[1].drops, 0u);
	EXPECT_LE(got, MgmtHub::kPortQueue + 64);  // the hub's queue + the socket's
	EXPECT_GE(got, MgmtHub::kPortQueue);
}

TEST_F(MgmtHubTest, StopRemovesTheSockets)
{
	auto hub = std::make_unique<MgmtHub>(dir_.string(), std::vector<std::string>{"a", "b"});
	hub->start();
	{
		Nic a(*hub, "a");
		EXPECT_TRUE(fs::exists(hub->hub_socket("a")));
		EXPECT_TRUE(fs::exists(hub->nic_socket("a")));
		hub->stop();
	}
	EXPECT_FALSE(fs::exists(dir_ / "a.hub"));
	EXPECT_FALSE(fs::exists(dir_ / "a.nic"));
	EXPECT_FALSE(fs::exists(dir_)) << "the hub's directory is removed once empty";
	hub->stop();  // idempotent
}

}  // namespace
}  // namespace iblab
