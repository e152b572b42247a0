// SPDX-License-Identifier: GPL-2.0
// Issue 11, "Must show": our CM (ib_cm, ib_ucm) between two guests of ours
// through a switch, driven by libibcmxx's tools (Documentation/userspace.md),
// on the debug kernel lane (KASAN, lockdep, kmemleak; Documentation/lab.md).
//
//   OursCm   vm0 and vm1 run our stack on one emulated switch ("star:2"),
//            OpenSM in vm0; ib_mthca ib_umad ib_uverbs ib_ucm (which pulls
//            ib_cm) in both. In order:
//            1. ibcm_pingpong both ways at once (vm1 serves vm0, vm0
//               serves vm1), the path from the SA, every byte checked;
//            2. ibcm_sidr: SIDR resolves vm1's UD service and vm1 checks the
//               datagrams vm0 then sends it; a SIDR for a service nobody
//               serves gets the SIDR_REP status "unsupported";
//            3. a REQ for a service nobody listens on gets REJ reason 8;
//            4. a peer without a CM (ib_ucm and ib_cm unloaded in vm1): the
//               REQ_ERROR comes after (retries + 1) tries of the timeout
//               the REQ asked for; the id is destroyed, nothing leaks;
//            5. vm1's link down under a listening server: the REQ times out
//               the same way; the link back up, the same server accepts;
//            6. IBSTACK_CM_CYCLES (default 250) connect/disconnect cycles
//               with QPs (ibcm_connrate), then ib_ucm and ib_cm unload in
//               both guests and kmemleak finds nothing. 1000 cycles took
//               84 s (11.9 connections/s, 2026-11-29), which would put the
//               suite near 320 s; with 250 (19 s) it took 262 s.
//            The fixture fails a test on any KASAN, lockdep, WARNING, ...
//            line of either guest's dmesg.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const std::string kPingpong = IBCM_PINGPONG_BINARY;
const std::string kConnrate = IBCM_CONNRATE_BINARY;
const std::string kSidr = IBCM_SIDR_BINARY;
const std::string kPort = "/sys/class/infiniband/mthca0/ports/1";

// The first group of @re in @text, or "".
std::string Grab(const std::string &text, const std::string &re)
{
	std::smatch m;
	if (std::regex_search(text, m, std::regex(re)))
		return m[1];
	return {};
}

struct Address {
	unsigned lid = 0;
	std::string gid;
};

// A server started in the background; its output so far in `early`.
struct Server {
	std::shared_ptr<PendingExec> exec;
	std::string early;
	bool ready = false;
};

class OursCm : public SmSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o = MixedOptions({{"vm0", OursRole()}, {"vm1", OursRole()}}, "star:2");
		o.shares.push_back(std::filesystem::path(kPingpong).parent_path().string());
		StartWithSm(o, "OursCm", "vm0");
		if (lab_ && setup_error_.empty())
			setup_error_ = ExecOnAll(
				lab_->guests(), [](Guest &) { return std::string("modprobe ib_uverbs && modprobe ib_ucm"); },
				"modprobe ib_uverbs ib_ucm", 60s);
	}

	static Address Addr(Guest &g)
	{
		Address a;
		auto l = g.exec("cat " + kPort + "/lid " + kPort + "/gids/0", 30s);
		EXPECT_TRUE(Ok(l));
		std::smatch m;
		if (std::regex_search(l.output, m, std::regex("^(0x[0-9a-f]+)\\n([0-9a-f:]+)\\n")))
			a = {static_cast<unsigned>(std::stoul(m[1], nullptr, 16)), m[2]};
		EXPECT_NE(a.lid, 0u) << g.name() << ": " << l.output;
		return a;
	}

	// Starts `cmd` in `g` and returns once it printed "listening on"
	// (or after 60 s: then ready is false).
	static Server StartServer(Guest &g, const std::string &cmd, std::chrono::seconds limit = 180s)
	{
		Server s;
		s.exec = g.start_exec("stdbuf -oL " + cmd + " 2>&1", limit);
		for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 60s;) {
			s.early += s.exec->take_new_output();
			if (s.early.find("listening on") != std::string::npos) {
				s.ready = true;
				break;
			}
			if (s.exec->done())
				break;
			std::this_thread::sleep_for(100ms);
		}
		return s;
	}

	// The server's result once it ends (60 s at most; then status -1 and
	// what it printed so far).
	static ExecResult Finish(Server &s)
	{
		if (s.exec->wait_for(60s))
			return s.exec->result();
		ExecResult r;
		r.output = s.early + s.exec->take_new_output();
		r.error = "the server did not end";
		return r;
	}

	static std::string Dev() { return " --dev mthca0"; }

	// Checks a failed connect's timing: "connect failed after X ms" must
	// come after (retries + 1) tries of the printed "Y ms per try" (the
	// kernel's timer never fires early), and not much later: TCG and the
	// debug kernel add a little to every try, but another count of tries
	// (or another timeout) would be far off.
	static void ExpectTimedOut(const std::string &out, unsigned retries)
	{
		EXPECT_NE(out.find("max CM retries " + std::to_string(retries) + ":"), std::string::npos) << out;
		const std::string per = Grab(out, "([0-9.]+) ms per try");
		const std::string took = Grab(out, "connect failed after ([0-9.]+) ms: ");
		ASSERT_FALSE(per.empty() || took.empty()) << out;
		const double want = (retries + 1) * std::stod(per), got = std::stod(took);
		std::printf("REQ_ERROR after %.1f ms; %u tries of %s ms = %.1f ms\n", got, retries + 1, per.c_str(),
			    want);
		EXPECT_GE(got, want - 1.0) << out;
		EXPECT_LE(got, 2 * want + 1500) << out;
		EXPECT_NE(out.find("unexpected CM event ReqError (send status 20: "), std::string::npos) << out;
		EXPECT_NE(out.find("ibcm_pingpong: id destroyed, 1 events reported"), std::string::npos) << out;
	}
};

// 1. RC pingpong through the SA's path both ways at once: vm1 serves vm0
// and vm0 serves vm1, each server on its own service ID.
TEST_F(OursCm, PingpongBothWaysThroughTheSa)
{
	const std::string args = " --iters 300 --size 1000";
	struct Way {
		std::string sn, cn, sid;
		Address sa;
		Server s;
		std::shared_ptr<PendingExec> c;
	};
	std::vector<Way> ways = {{"vm1", "vm0", "0xabcd0201", {}, {}, {}}, {"vm0", "vm1", "0xabcd0202", {}, {}, {}}};
	for (Way &w : ways) {
		w.sa = Addr(guest(w.sn));
		w.s = StartServer(guest(w.sn), kPingpong + Dev() + " --server --sid " + w.sid + args);
		ASSERT_TRUE(w.s.ready) << w.sn << ": " << w.s.early;
	}
	for (Way &w : ways)
		w.c = guest(w.cn).start_exec(kPingpong + Dev() + " --dgid " + w.sa.gid + " --sid " + w.sid + args + " 2>&1",
					     180s);
	for (Way &w : ways) {
		SCOPED_TRACE("server " + w.sn + ", client " + w.cn);
		w.c->wait_for(200s);
		ExecResult c = w.c->result();
		std::printf("%s", c.output.c_str());
		ExecResult sr = Finish(w.s);
		EXPECT_TRUE(Ok(c)) << "--- server ---\n" << sr.output;
		EXPECT_TRUE(Ok(sr)) << "--- client ---\n" << c.output;
		// the SA's path leads to the server's LID
		EXPECT_NE(c.output.find("REQ to lid " + std::to_string(w.sa.lid) + " for service 0x00000000" +
					w.sid.substr(2) + ": "),
			  std::string::npos)
			<< c.output;
		EXPECT_TRUE(std::regex_search(c.output, std::regex("connected to qpn 0x[0-9a-f]{6} in [0-9.]+ ms")))
			<< c.output;
		EXPECT_TRUE(std::regex_search(c.output,
					      std::regex("ibcm_pingpong: 300 messages of 1000 bytes each way in [0-9.]+ s "
							 "\\([0-9]+ msg/s\\), data verified\\n")))
			<< c.output;
		EXPECT_NE(sr.output.find("ibcm_pingpong: server done, 300 messages of 1000 bytes each way"),
			  std::string::npos)
			<< sr.output;
	}
}

// 2. SIDR: vm1 serves a UD QP under a service ID; vm0 resolves it and sends
// datagrams that vm1 checks. A service nobody serves: "unsupported".
TEST_F(OursCm, SidrResolvesAUdService)
{
	Guest &sg = guest("vm1"), &cg = guest("vm0");
	const Address sa = Addr(sg);
	const std::string args = " --sid 0xabcd0101 --count 64 --size 256";
	Server s = StartServer(sg, kSidr + Dev() + " --server" + args);
	ASSERT_TRUE(s.ready) << s.early;
	const std::string qpn = Grab(s.early, "UD qpn (0x[0-9a-f]{6}) qkey 0x11223344");
	ASSERT_FALSE(qpn.empty()) << s.early;
	auto c = Run(cg, kSidr + Dev() + " --dgid " + sa.gid + args + " 2>&1", 120s);
	std::printf("%s", c.output.c_str());
	ExecResult sr = Finish(s);
	std::printf("%s", sr.output.c_str());
	EXPECT_TRUE(Ok(c)) << "--- server ---\n" << sr.output;
	EXPECT_TRUE(Ok(sr)) << "--- client ---\n" << c.output;
	// the client got the server's QPN and QKey
	EXPECT_NE(c.output.find("SIDR_REP status 0 (valid), qpn " + qpn + ", qkey 0x11223344"), std::string::npos)
		<< c.output;
	EXPECT_NE(c.output.find("client: 64 datagrams of 256 bytes sent to qpn " + qpn), std::string::npos)
		<< c.output;
	// the server heard the client's QPN in the SIDR_REQ and got every
	// datagram from that QP, content checked
	const std::string cqpn = Grab(c.output, "to lid [0-9]+ from qpn (0x[0-9a-f]{6})");
	ASSERT_FALSE(cqpn.empty()) << c.output;
	EXPECT_TRUE(std::regex_search(sr.output, std::regex("SIDR_REQ on port 1 pkey 0x[0-9a-f]{4} from qpn " + cqpn +
							     " answered: qpn " + qpn)))
		<< sr.output;
	EXPECT_NE(sr.output.find("server: 64 datagrams of 256 bytes from qpn " + cqpn + ", data verified"),
		  std::string::npos)
		<< sr.output;

	// Nobody serves 0xabcd0102: vm1's CM answers SIDR_REP "unsupported".
	auto u = Run(cg, kSidr + Dev() + " --dgid " + sa.gid + " --sid 0xabcd0102 2>&1", 60s);
	EXPECT_EQ(u.status, 4) << u.output;
	EXPECT_TRUE(std::regex_search(u.output, std::regex("SIDR_REP status 1 \\(unsupported\\), qpn 0x000000")))
		<< u.output;
	EXPECT_EQ(u.output.find("datagrams"), std::string::npos) << u.output;
}

// 3. A REQ for a service ID nobody listens on: REJ, reason 8.
TEST_F(OursCm, RejectsAnUnknownService)
{
	const Address sa = Addr(guest("vm1"));
	auto c = Run(guest("vm0"), kPingpong + Dev() + " --dgid " + sa.gid + " --sid 0xabcd0103 2>&1", 60s);
	std::printf("%s", c.output.c_str());
	EXPECT_EQ(c.status, 4) << c.output;
	EXPECT_TRUE(std::regex_search(
		c.output, std::regex("connect failed after [0-9.]+ ms: unexpected CM event RejReceived "
				     "\\(reason 8: invalid service ID\\)\\n")))
		<< c.output;
	EXPECT_NE(c.output.find("ibcm_pingpong: id destroyed, 1 events reported"), std::string::npos) << c.output;
	EXPECT_EQ(c.output.find("connected to"), std::string::npos) << c.output;
}

// 4. A peer whose MAD layer has no CM agent drops the REQ: the REQ is sent
// 1 + 3 times, each try waiting 2 * PacketLifeTime (14: ~67 ms, the path
// of --no-sa) + the remote CM response timeout (15: ~134 ms), ~1074 ms in
// all, then REQ_ERROR. The id goes, nothing leaks.
TEST_F(OursCm, SilentPeerTimesOutAfterTheRetries)
{
	Guest &peer = guest("vm1"), &g = guest("vm0");
	const Address pa = Addr(peer);
	ASSERT_TRUE(Ok(Run(peer, "rmmod ib_ucm ib_cm && ! grep -qw ib_cm /proc/modules")));
	auto c = Run(g,
		     kPingpong + Dev() + " --no-sa --dlid " + std::to_string(pa.lid) + " --dgid " + pa.gid +
			     " --cm-timeout 15 --cm-retries 3 2>&1",
		     60s);
	std::printf("%s", c.output.c_str());
	EXPECT_EQ(c.status, 4) << c.output;
	EXPECT_NE(c.output.find("packet life time 14, remote CM response timeout 15, max CM retries 3: 268.4 ms per try"),
		  std::string::npos)
		<< c.output;
	ExpectTimedOut(c.output, 3);
	auto leaks = g.check_kmemleak();
	EXPECT_TRUE(leaks.empty()) << format_hits(g.dir() + "/kmemleak.txt", leaks);
	ASSERT_TRUE(Ok(Run(peer, "modprobe ib_ucm")));
}

// 5. vm1's link goes down while its server listens: the REQ is lost at the
// switch and times out as configured. With the link up again (OpenSM
// brings the port back) the same server accepts a connection.
TEST_F(OursCm, LinkDownDuringConnectThenRecovery)
{
	Guest &sg = guest("vm1"), &cg = guest("vm0");
	const Address sa = Addr(sg);
	const std::string path = " --no-sa --dlid " + std::to_string(sa.lid) + " --dgid " + sa.gid;
	Server s = StartServer(sg, kPingpong + Dev() + " --server --iters 100 --timeout 200", 300s);
	ASSERT_TRUE(s.ready) << s.early;
	std::string r = lab_->fabric("link vm1:1 down");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	lab_->mark("vm1's link is down");
	auto c = Run(cg, kPingpong + Dev() + path + " --iters 100 --cm-timeout 15 --cm-retries 3 2>&1", 60s);
	std::printf("%s", c.output.c_str());
	EXPECT_EQ(c.status, 4) << c.output;
	ExpectTimedOut(c.output, 3);

	r = lab_->fabric("link vm1:1 up");
	ASSERT_EQ(r.rfind("ok", 0), 0u) << r;
	for (Guest *g : lab_->guests())
		ASSERT_TRUE(Ok(WaitPortActive(*g, 120))) << g->name() << ": OpenSM did not bring the port back";
	lab_->mark("the ports are ACTIVE again");
	const Address again = Addr(sg);
	EXPECT_EQ(again.lid, sa.lid);
	auto ok = Run(cg, kPingpong + Dev() + " --no-sa --dlid " + std::to_string(again.lid) + " --dgid " + again.gid +
				  " --iters 100 --cm-timeout 15 --cm-retries 3 2>&1",
		      120s);
	std::printf("%s", ok.output.c_str());
	ExecResult sr = Finish(s);
	EXPECT_TRUE(Ok(ok)) << "--- server ---\n" << sr.output;
	EXPECT_NE(ok.output.find("ibcm_pingpong: 100 messages of 64 bytes each way in "), std::string::npos)
		<< ok.output;
	EXPECT_NE(ok.output.find("data verified"), std::string::npos) << ok.output;
	EXPECT_TRUE(Ok(sr)) << sr.output;
	EXPECT_NE(sr.output.find("server done, 100 messages of 64 bytes each way"), std::string::npos) << sr.output;
}

// 6. Many connect/disconnect cycles with QPs, then both CM modules unload
// in both guests and kmemleak finds nothing.
TEST_F(OursCm, ConnectDisconnectCyclesUnloadNoLeak)
{
	Guest &sg = guest("vm1"), &cg = guest("vm0");
	const std::string n = EnvOr("IBSTACK_CM_CYCLES", "250");
	const Address sa = Addr(sg);
	Server s = StartServer(sg, kConnrate + Dev() + " --server --count " + n, 900s);
	ASSERT_TRUE(s.ready) << s.early;
	auto c = Run(cg, kConnrate + Dev() + " --dgid " + sa.gid + " --count " + n + " 2>&1", 900s);
	std::printf("%s", c.output.c_str());
	ExecResult sr = Finish(s);
	std::printf("%s", sr.output.c_str());
	EXPECT_TRUE(Ok(c)) << "--- server ---\n" << sr.output;
	EXPECT_TRUE(Ok(sr)) << "--- client ---\n" << c.output;
	EXPECT_TRUE(std::regex_search(c.output, std::regex("ibcm_connrate: client: " + n +
							    " connections in [0-9.]+ s: [0-9.]+ connections/s\\n")))
		<< c.output;
	EXPECT_TRUE(std::regex_search(sr.output, std::regex("ibcm_connrate: server: " + n + " connections in ")))
		<< sr.output;

	// Every id is gone with its file: both modules unload, in both guests
	// (at once: a kmemleak scan takes a debug guest some 15 s).
	std::string err = ExecOnAll(
		lab_->guests(),
		[](Guest &) { return std::string("rmmod ib_ucm && rmmod ib_cm && ! test -e /dev/infiniband/ucm0"); },
		"rmmod ib_ucm ib_cm", 120s);
	EXPECT_TRUE(err.empty()) << err;
	std::vector<std::pair<Guest *, std::future<std::vector<DmesgHit>>>> scans;
	for (Guest *g : lab_->guests())
		scans.emplace_back(g, std::async(std::launch::async, [g] { return g->check_kmemleak(); }));
	for (auto &[g, f] : scans) {
		auto leaks = f.get();
		EXPECT_TRUE(leaks.empty()) << g->name() << ":\n" << format_hits(g->dir() + "/kmemleak.txt", leaks);
	}
}

}  // namespace
}  // namespace iblab::vmtest
