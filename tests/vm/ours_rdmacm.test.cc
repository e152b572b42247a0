// SPDX-License-Identifier: GPL-2.0
// Issues 11 and 12: our ib_cm/ib_ucm and libibcmxx's tools against
// upstream rdma_cm (librdmacm's ucmatose and rping), both ways, on the
// debug kernel lane (KASAN, lockdep, kmemleak on our guest).
//
//   OursRdmaCm  vm0 upstream (the host's stock kernel: ib_mthca, ib_umad,
//               ib_ipoib with 192.168.91.1/24 on ib0, rdma_ucm, ib_uverbs;
//               OpenSM), vm1 ours (ib_mthca, ib_umad, ib_sa, ib_ucm,
//               ib_uverbs, and our ib_ipoib, checked by its taint O, with
//               192.168.91.2/24 on ib0; vm0 must ping it), both on a
//               switch ("star:2"). Our clients' REQs carry a cma_hdr
//               naming 192.168.91.2 and vm0's address; upstream clients
//               find our server by ARP (answered by our ib_ipoib) and an
//               SA PathRecord.
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
//   UcmatoseClientReachesOurServer  ibcm_pingpong --server --rdma-cm-port
//       7471 --iters 10 --size 100 --echo-of-last on vm1; `ucmatose -s
//       192.168.91.2 -p 7471 -C 10 -S 100` on vm0, whose client receives
//       10 into one buffer, sends that buffer 10 times and waits for the
//       server's DREQ. Checked: our side saw the cma_hdr (vm0's address to
//       ours), 10 messages of 100 bytes each way, every reply byte equal
//       to our last message's, sent the DREQ, exit 0; ucmatose printed each stage, "test complete"
//       (only after the disconnect), "return status 0", no event error.
//   RpingClientReachesOurServer  ibcm_rping --server --size 64 --verbose
//       on vm1; `rping -c -a 192.168.91.2 -C 10 -S 64 -v` on vm0. Our
//       server's "server ping data:" lines (what it READ) and rping's
//       "ping data:" lines (what we WROTE into its sink) must both be
//       the text for pings 0..9 (RpingText()), in order; rping prints
//       nothing else but its disconnect; both exit 0, our server after
//       10 pings and the client's DREQ.
//   UnloadsWithoutLeaks  ib0 down, then every module of ours (ib_ipoib
//       too) unloads from vm1 and a
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

// ucmatose's @output has every one of @lines and no error ("cmatose:
// event:" for a CM error event, "fail..." for anything else).
void ExpectUcmatose(const std::string &output, std::initializer_list<const char *> lines)
{
	for (const char *line : lines)
		EXPECT_NE(output.find(line), std::string::npos) << "ucmatose never printed " << line << output;
	EXPECT_EQ(output.find("cmatose: event:"), std::string::npos) << output;
	EXPECT_EQ(output.find("fail"), std::string::npos) << output;
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
			IpoibUp("modprobe ib_ipoib && modprobe rdma_ucm && modprobe ib_uverbs", kUpIp), 120s);
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
		// Our ib_ipoib (taint O: the out-of-tree module from updates/),
		// for the reverse cases: upstream clients find us by ARP.
		auto ipoib = lab_->guest("vm1").exec(
			IpoibUp("modprobe ib_ipoib && grep -q O /sys/module/ib_ipoib/taint", kOurIp) +
				" || { cat /sys/module/ib_ipoib/taint; exit 1; }",
			120s);
		if (!ipoib.ok()) {
			setup_error_ = "vm1: our ib_ipoib: " + ipoib.output;
			return;
		}
		auto reach = lab_->guest("vm0").exec(std::string("ping -c 1 -w 20 ") + kOurIp, 30s);
		if (!reach.ok()) {
			setup_error_ = std::string("vm0 cannot ping ") + kOurIp + " (our ib0): " + reach.output;
			return;
		}
		auto lid = lab_->guest("vm0").exec("cat /sys/class/infiniband/mthca0/ports/1/lid", 30s);
		if (!lid.ok()) {
			setup_error_ = "vm0: no LID: " + lid.output;
			return;
		}
		up_lid_ = lid.output.substr(0, lid.output.find_first_of(" \n"));
	}

	// @load, then ib0 up with @ip/24, waiting (60 s) for its carrier;
	// exits 1 (after showing ib0) if anything fails.
	static std::string IpoibUp(const std::string &load, const char *ip)
	{
		return "{ " + load + " && ip link set ib0 up && ip addr add " + ip +
		       "/24 dev ib0 && for i in $(seq 1 60); do ip link show ib0 | grep -q LOWER_UP && exit 0; "
		       "sleep 1; done; ip link show ib0; false; }";
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
		return Serve(guest("vm0"), server,
			     [port](const std::string &) {
				     Run(guest("vm0"),
					 "for i in $(seq 1 60); do rdma resource show cm_id 2>/dev/null | grep -qE 'LISTEN.*:" +
						 std::to_string(port) +
						 "([^0-9]|$)' && exit 0; sleep 0.5; done; rdma resource show cm_id; exit 1",
					 60s);
				     return true;
			     },
			     guest("vm1"), client);
	}
	// The reverse: our @server in vm1, which listens once it printed
	// "listening" (up to 30 s), and the upstream @client in vm0.
	static Run2 OursServe(const std::string &server, const std::string &client)
	{
		return Serve(guest("vm1"), server,
			     [](const std::string &early) { return early.find("listening") != std::string::npos; },
			     guest("vm0"), client);
	}
	// Prints both sides of a reverse run and checks that both exit 0 (a
	// failure if not); false if our server did not finish at all.
	static bool BothOk(const Run2 &r, const std::string &ours, const std::string &client)
	{
		std::printf("--- %s (vm1) ---\n%s--- %s (vm0) ---\n%s", ours.c_str(), r.srv.output.c_str(),
			    client.c_str(), r.cli.output.c_str());
		EXPECT_TRUE(Ok(r.cli)) << client << ":\n" << r.cli.output << "\n--- " << ours << " ---\n" << r.srv.output;
		EXPECT_TRUE(r.srv_done) << ours << " did not finish:\n" << r.srv.output;
		if (r.srv_done) {
			EXPECT_TRUE(Ok(r.srv)) << ours << ":\n" << r.srv.output;
		}
		return r.srv_done;
	}

	// @ready(output so far) says when the server listens (polled up to 30 s).
	template <typename Ready>
	static Run2 Serve(Guest &sg, const std::string &server, Ready &&ready, Guest &cg, const std::string &client)
	{
		auto srv = sg.start_exec(server, 180s);
		std::string early;
		for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 30s;) {
			early += srv->take_new_output();
			if (ready(early) || srv->done())
				break;
			std::this_thread::sleep_for(100ms);
		}
		Run2 r;
		r.cli = cg.exec(client, 120s);
		r.srv_done = srv->wait_for(60s);
		if (r.srv_done) {
			r.srv = srv->result();
		} else {
			r.srv.output = early + srv->take_new_output();
			sg.kill(srv->id());
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
	ExpectUcmatose(r.srv.output, {"cmatose: starting server\n", "initiating data transfers\n", "completing sends\n",
				      "receiving data transfers\n", "data transfers complete\n",
				      "cmatose: disconnecting\n", "disconnected\n", "test complete\n",
				      "return status 0\n"});
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

// The reverse: upstream clients on vm0 find our server by its IPoIB
// address (ARP answered by our ib_ipoib) and connect through rdma_cm.
TEST_F(OursRdmaCm, UcmatoseClientReachesOurServer)
{
	Run2 r = OursServe("stdbuf -oL " + kTools + "/ibcm_pingpong --dev mthca0 --server --rdma-cm-port 7471 --iters 10 --size 100 "
				    "--echo-of-last 2>&1",
			   std::string("ucmatose -s ") + kOurIp + " -p 7471 -C 10 -S 100 2>&1");
	if (!BothOk(r, "ibcm_pingpong --server", "ucmatose -s"))
		return;
	EXPECT_NE(r.srv.output.find(std::string("ibcm_pingpong: REQ from rdma_cm peer ") + kUpIp + " port "),
		  std::string::npos)
		<< r.srv.output;
	EXPECT_NE(r.srv.output.find(std::string(" -> ") + kOurIp + "\n"), std::string::npos) << r.srv.output;
	// Each of ucmatose's replies is its receive buffer, which our last
	// message filled: ibcm_pingpong checks every byte (--echo-of-last).
	EXPECT_NE(r.srv.output.find("ibcm_pingpong: server done, 10 messages of 100 bytes each way, data verified"),
		  std::string::npos)
		<< r.srv.output;
	// ucmatose's client receives our 10, sends its 10 and waits for our
	// DREQ ("test complete" comes only after the disconnect).
	ExpectUcmatose(r.cli.output, {"cmatose: starting client\n", "cmatose: connecting\n",
				      "receiving data transfers\n", "sending replies\n", "data transfers complete\n",
				      "test complete\n", "return status 0\n"});
}

TEST_F(OursRdmaCm, RpingClientReachesOurServer)
{
	constexpr int kCount = 10;
	constexpr std::size_t kSize = 64;
	Run2 r = OursServe("stdbuf -oL " + kTools + "/ibcm_rping --dev mthca0 --server --rdma-cm-port 7174 --size 64 --verbose 2>&1",
			   std::string("rping -c -a ") + kOurIp + " -p 7174 -C 10 -S 64 -v 2>&1");
	if (!BothOk(r, "ibcm_rping --server", "rping -c"))
		return;
	EXPECT_NE(r.srv.output.find("ibcm_rping: server done, 10 pings in "), std::string::npos) << r.srv.output;

	// Both sides print each ping's text: ours what it READ, rping's client
	// what we WROTE back into its sink; both must be the client's text.
	const auto pings = [&](const std::string &out, const std::string &prefix, const char *who) {
		std::istringstream in(out);
		std::string line;
		int ping = 0;
		while (std::getline(in, line)) {
			if (line.rfind(prefix, 0) != 0)
				continue;
			if (ping >= kCount) {
				ADD_FAILURE() << who << ": more pings than sent:\n" << out;
				break;
			}
			EXPECT_EQ(line, prefix + RpingText(ping, kSize)) << who << " ping " << ping;
			++ping;
		}
		EXPECT_EQ(ping, kCount) << who << ":\n" << out;
	};
	pings(r.srv.output, "server ping data: ", "ibcm_rping");
	pings(r.cli.output, "ping data: ", "rping -c");
	// rping's client prints nothing else but, if our DREP comes before it
	// is gone, its disconnect.
	std::istringstream in(r.cli.output);
	std::string line;
	while (std::getline(in, line))
		if (line.rfind("ping data: ", 0) != 0 && line != "client DISCONNECT EVENT...")
			ADD_FAILURE() << "rping -c printed: " << line;
}

// Last: every id is gone, so every module of ours unloads.
TEST_F(OursRdmaCm, UnloadsWithoutLeaks)
{
	Guest &g = guest("vm1");
	ASSERT_EQ(g.stack(), Stack::Ours) << "vm1 must run our stack (ib_ucm)";
	auto u = Run(g, "ip link set ib0 down && rmmod ib_ipoib ib_ucm ib_cm ib_uverbs ib_umad ib_sa ib_mthca ib_mad ib_core && "
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
