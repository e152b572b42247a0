// SPDX-License-Identifier: GPL-2.0
// Issue 11: our ib_cm/ib_ucm and libibcmxx's tools against upstream
// rdma_cm (librdmacm's ucmatose and rping), on the debug kernel lane
// (KASAN, lockdep, kmemleak on our guest).
//
//   OursRdmaCm  vm0 upstream (the host's stock kernel: ib_mthca, ib_umad,
//               ib_ipoib with 192.168.91.1/24 on ib0, rdma_ucm, ib_uverbs;
//               OpenSM), vm1 ours (ib_mthca, ib_umad, ib_sa, ib_ucm,
//               ib_uverbs), both on a switch ("star:2"). vm1 needs no
//               IPoIB: its REQs carry a cma_hdr naming 192.168.91.2 (on
//               vm0's subnet, which upstream rdma_cm checks by a route
//               lookup) and vm0's address.
//
//   UcmatoseServesOurClient  `ucmatose -b 192.168.91.1 -p 7471 -C 10 -S 100` (the server:
//       ucmatose's -s names the server a client connects to) on vm0;
//       ibcm_pingpong --rdma-cm-port 7471 --iters 10 --size 100 on vm1.
//       ucmatose does not look at its data (nor fill it), so what is
//       checked is the counts: ucmatose completes 10 sends and 10
//       receives ("data transfers complete"), our side 10 each way, both
//       exit 0, ucmatose disconnects ("disconnected", "return status 0")
//       and our client answers it.
//   RpingServesOurClient  `rping -s -v -S 64 -a 192.168.91.1` on vm0;
//       ibcm_rping --count 10 on vm1: every echo is compared with what was
//       sent (by ibcm_rping), and every "server ping data:" line of rping
//       with the text rping's client would send (by this test, from its
//       own description of the text), both exit 0, rping reports the
//       client's disconnect and nothing else.
//   UnloadsWithoutLeaks  every module of ours unloads from vm1 and a
//       kmemleak scan finds nothing (the fixture adds the dmesg check of
//       every test: KASAN, lockdep, WARNING, ...).
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const std::string kTools = IBCM_TOOLS_DIR;
const char *const kUpIp = "192.168.91.1";
const char *const kOurIp = "192.168.91.2";

// The text of rping's client for ping @ping in a buffer of @size bytes, as
// rping -v prints it (up to the NUL in the last byte): "rdma-ping-<n>: ",
// then the printable run 'A'..'z' starting at the (n mod 58)-th, wrapping.
std::string RpingText(int ping, std::size_t size)
{
	std::string s = "rdma-ping-" + std::to_string(ping) + ": ";
	const std::string letters = [] {
		std::string l;
		for (char c = 'A'; c <= 'z'; ++c)
			l += c;
		return l;
	}();
	for (std::size_t i = 0; s.size() < size - 1; ++i)
		s += letters[(static_cast<std::size_t>(ping) + i) % letters.size()];
	return s;
}

class OursRdmaCm : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o = MixedOptions({{"vm0", Stack::Upstream}, {"vm1", OursRole()}}, "star:2");
		o.shares.push_back(kTools);
		if (std::getenv("IBSTACK_EMU_DEBUG"))
			o.emulator_log_level = "debug";
		StartWithSm(o, "OursRdmaCm", "vm0");
		if (!lab_ || !setup_error_.empty())
			return;
		auto up = lab_->guest("vm0").exec(
			std::string("modprobe ib_ipoib && modprobe rdma_ucm && modprobe ib_uverbs && ip link set ib0 up && "
				    "ip addr add ") +
				kUpIp +
				"/24 dev ib0 && for i in $(seq 1 60); do ip link show ib0 | grep -q LOWER_UP && exit 0; "
				"sleep 1; done; ip link show ib0; exit 1",
			120s);
		if (!up.ok()) {
			setup_error_ = "vm0: IPoIB/rdma_ucm: " + up.output;
			return;
		}
		auto ours = lab_->guest("vm1").exec("modprobe ib_ucm && modprobe ib_uverbs && test -c /dev/infiniband/ucm0",
						    60s);
		if (!ours.ok()) {
			setup_error_ = "vm1: modprobe ib_ucm ib_uverbs: " + ours.output;
			return;
		}
		auto lid = lab_->guest("vm0").exec("cat /sys/class/infiniband/mthca0/ports/1/lid", 30s);
		if (!lid.ok()) {
			setup_error_ = "vm0: no LID: " + lid.output;
			return;
		}
		up_lid_ = lid.output.substr(0, lid.output.find_first_of(" \n"));
	}

	// Starts @server in vm0 and waits (up to 30 s) until rdma_cm lists a
	// listener on @port; then runs @client in vm1. The server must end
	// within 60 s of the client.
	struct Run2 {
		ExecResult srv, cli;
		bool srv_done = false;
	};
	static Run2 ServeAndConnect(const std::string &server, unsigned port, const std::string &client)
	{
		Guest &up = guest("vm0"), &ours = guest("vm1");
		auto srv = up.start_exec(server, 180s);
		Run(up, "for i in $(seq 1 60); do rdma resource show cm_id 2>/dev/null | grep -qE 'LISTEN.*:" +
				std::to_string(port) + "([^0-9]|$)' && exit 0; sleep 0.5; done; rdma resource show cm_id; exit 1",
		    60s);
		Run2 r;
		r.cli = ours.exec(client, 120s);
		r.srv_done = srv->wait_for(60s);
		if (r.srv_done)
			r.srv = srv->result();
		else {
			r.srv.output = srv->take_new_output();
			up.kill(srv->id());
		}
		return r;
	}

	// The QPs take their PSNs from our ib_cm's INIT_QP_ATTR.
	static std::string ClientArgs()
	{
		return std::string(" --dev mthca0 --dlid ") + up_lid_ + " --src-ip " + kOurIp + " --dst-ip " + kUpIp;
	}

	static inline std::string up_lid_;
};

TEST_F(OursRdmaCm, UcmatoseServesOurClient)
{
	Run2 r = ServeAndConnect(std::string("stdbuf -oL ucmatose -b ") + kUpIp + " -p 7471 -C 10 -S 100 2>&1", 7471,
				 kTools + "/ibcm_pingpong" + ClientArgs() +
					 " --rdma-cm-port 7471 --iters 10 --size 100 --no-verify 2>&1");
	std::printf("--- ucmatose (vm0) ---\n%s--- ibcm_pingpong (vm1) ---\n%s", r.srv.output.c_str(),
		    r.cli.output.c_str());
	EXPECT_TRUE(Ok(r.cli)) << r.cli.output << "\n--- ucmatose ---\n" << r.srv.output;
	EXPECT_NE(r.cli.output.find("ibcm_pingpong: 10 messages of 100 bytes each way"), std::string::npos)
		<< r.cli.output;
	ASSERT_TRUE(r.srv_done) << "ucmatose did not finish:\n" << r.srv.output;
	EXPECT_TRUE(Ok(r.srv)) << r.srv.output;
	for (const char *line : {"cmatose: starting server\n", "initiating data transfers\n", "completing sends\n",
				 "receiving data transfers\n", "data transfers complete\n", "cmatose: disconnecting\n",
				 "disconnected\n", "test complete\n", "return status 0\n"})
		EXPECT_NE(r.srv.output.find(line), std::string::npos) << "ucmatose never printed " << line << r.srv.output;
	EXPECT_EQ(r.srv.output.find("cmatose: event:"), std::string::npos) << r.srv.output;
	EXPECT_EQ(r.srv.output.find("fail"), std::string::npos) << r.srv.output;
}

TEST_F(OursRdmaCm, RpingServesOurClient)
{
	constexpr int kCount = 10;
	constexpr std::size_t kSize = 64;
	Run2 r = ServeAndConnect(std::string("stdbuf -oL rping -s -v -S 64 -p 7174 -a ") + kUpIp + " 2>&1", 7174,
				 kTools + "/ibcm_rping" + ClientArgs() + " --rdma-cm-port 7174 --count 10 --size 64 2>&1");
	std::printf("--- rping -s (vm0) ---\n%s--- ibcm_rping (vm1) ---\n%s", r.srv.output.c_str(), r.cli.output.c_str());
	EXPECT_TRUE(Ok(r.cli)) << r.cli.output << "\n--- rping ---\n" << r.srv.output;
	EXPECT_NE(r.cli.output.find("ibcm_rping: 10 pings of 64 bytes echoed and verified"), std::string::npos)
		<< r.cli.output;
	ASSERT_TRUE(r.srv_done) << "rping did not finish:\n" << r.srv.output;
	EXPECT_TRUE(Ok(r.srv)) << r.srv.output;

	// rping's lines: one "server ping data:" per ping, in order, with the
	// client's text; the disconnect; nothing else.
	std::istringstream in(r.srv.output);
	std::string line;
	int ping = 0;
	bool disconnect = false;
	while (std::getline(in, line)) {
		if (line.rfind("server ping data: ", 0) == 0) {
			ASSERT_LT(ping, kCount) << "more pings than sent:\n" << r.srv.output;
			EXPECT_EQ(line, "server ping data: " + RpingText(ping, kSize)) << "ping " << ping;
			++ping;
		} else if (line == "server DISCONNECT EVENT...") {
			disconnect = true;
		} else if (line == "wait for RDMA_READ_ADV state 10" && ping == kCount) {
			// rping's loop, waiting for the next advertisement, woken
			// by the disconnect (state 10, DISCONNECTED): its clean end
		} else {
			ADD_FAILURE() << "rping printed: " << line;
		}
	}
	EXPECT_EQ(ping, kCount) << r.srv.output;
	EXPECT_TRUE(disconnect) << r.srv.output;
}

// Last: every id is gone, so every module of ours unloads.
TEST_F(OursRdmaCm, UnloadsWithoutLeaks)
{
	Guest &g = guest("vm1");
	ASSERT_EQ(g.stack(), Stack::Ours) << "vm1 must run our stack (ib_ucm)";
	auto u = Run(g, "rmmod ib_ucm ib_cm ib_uverbs ib_umad ib_sa ib_mthca ib_mad ib_core && "
			"! test -e /dev/infiniband/ucm0 && ! test -e /sys/class/infiniband_cm && "
			"! grep -q '^ib_' /proc/modules",
		     120s);
	EXPECT_TRUE(Ok(u)) << u.output << "\n" << Run(g, "lsmod").output;
	if (g.has_kmemleak()) {
		auto leaks = g.check_kmemleak();
		EXPECT_TRUE(leaks.empty()) << format_hits(g.dir() + "/kmemleak.txt", leaks);
	} else {
		GTEST_SKIP() << "modules unloaded; no kmemleak: not the debug kernel, so no leak scan";
	}
}

}  // namespace
}  // namespace iblab::vmtest
