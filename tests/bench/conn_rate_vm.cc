// SPDX-License-Identifier: GPL-2.0
// The issue-11 benchmark (ctest bench.conn_rate, label "bench"): RC
// connections set up and torn down per second, ours against upstream, in
// one lab and one run, as a ratio ours/upstream.
//
// Lab: four guests on one switch ("star:4"), the host's stock kernel (not
// the debug one). vm0 and vm1 run our stack (ib_mthca, ib_umad, ib_sa,
// ib_ucm, ib_uverbs), vm2 and vm3 the upstream one (ib_mthca, ib_umad,
// ib_ipoib with 192.168.92.3/24 and .4/24 on ib0, rdma_ucm); OpenSM runs
// in vm2.
//
//   ours:     ibcm_connrate --server --count N in vm1, ibcm_connrate
//             --concurrent --count N in vm0: N connections at once, each a
//             new RC QP (PD, MR, CQ, QP) moved INIT/RTR/RTS by the CM's
//             attributes, REQ/REP/RTU, then all disconnected (DREQ/DREP).
//             One SA PathRecord query before the first.
//   upstream: ucmatose -b <vm3> -c N -C 0 in vm3 (server) and ucmatose -s <vm3>
//             -c N -C 0 in vm2: N connections at once (per connection:
//             rdma_cm address and route resolution, which asks the SA for
//             a PathRecord, a QP made and moved by rdma_cm, REQ/REP/RTU),
//             no data, then the server disconnects them all. ARP is warmed
//             by a ping first.
//
// What is timed on both sides is the client's process wall time, from its
// start to its exit (date +%s%N around it in the guest): N connects and N
// disconnects plus the program's start-up. Both overlap their
// connections; ucmatose also resolves an address and a route for each,
// where ibcm_connrate asks for one path (a user of ib_cm has no address
// layer). Until 2026-11-29 ours connected one at a time (0.80 then). The
// rate is N / wall time; the ratio is ours/upstream, the median of kRounds
// interleaved rounds (the order alternating), printed with its spread,
// after one round of each that is not counted (a warm-up).
//
// A side is measured only when both of its programs exit 0 and report all
// N connections (ibcm_connrate: "N connections" on both; ucmatose:
// "return status 0" on both). Otherwise it prints "NOT MEASURED: ..." and
// no ratio, and exits 1; so does a problem in the guests' logs. The
// summary also goes to <build>/lab/conn_rate.txt.
//
// The same lab then measures IPoIB (issue 12): our ib_ipoib in vm0 and vm1
// (192.168.92.1 and .2 on ib0; the stock kernel, as upstream's), upstream's
// in vm2 and vm3, all on one IPoIB subnet. In datagram and then connected
// mode (all four switched at once): iperf3 TCP, one stream and four (-P 4),
// kIperfSeconds after one omitted second of slow start, ours vm0 -> vm1
// and upstream vm2 -> vm3 in turn; then `ping -c 20 -i 0.05` each way for
// the round-trip time. Each figure is a ratio ours/upstream (for the ping,
// upstream/ours: higher is better for ours), the median of
// IBSTACK_IPOIB_ROUNDS interleaved rounds (default 1 in make check, so no
// spread: the rounds cost about 45 s each), with the raw values. The
// summary goes to <build>/lab/ipoib_rate.txt; a case that cannot be
// measured prints NOT MEASURED and makes the program exit 1.
//
// usage: conn_rate_vm [connections]   (default 100)
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "iblab/config.h"
#include "iblab/lab.h"
#include "stack_commands.h"

using namespace std::chrono_literals;

namespace {

constexpr int kRounds = 3;
const std::string kTools = IBCM_TOOLS_DIR;
const char *const kServerIp = "192.168.92.4";

std::string Trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

struct Sample {
	double rate = 0; // connections per second, client wall time
	double wall = 0; // seconds
	std::string error; // empty: measured
};

// Runs `cmd` under `date +%s%N` in g; the last line of the output is
// "wall_ns <ns>".
std::string Timed(const std::string &cmd)
{
	return "s=$(date +%s%N); " + cmd + "; rc=$?; e=$(date +%s%N); echo \"wall_ns $((e - s))\"; exit $rc";
}

double WallSeconds(const std::string &out)
{
	std::smatch m;
	if (std::regex_search(out, m, std::regex("wall_ns ([0-9]+)")))
		return std::stod(m[1]) / 1e9;
	return -1;
}

// Server in `sg` (started first; the client starts once `ready` says it
// listens), client in `cg`, both checked by `ok(server out, client out)`.
Sample Pair(iblab::Guest &sg, const std::string &server, iblab::Guest &cg, const std::string &client,
	    const std::function<bool()> &ready, int n,
	    const std::function<std::string(const iblab::ExecResult &, const iblab::ExecResult &)> &check)
{
	Sample s;
	auto srv = sg.start_exec(server, 240s);
	if (!ready()) {
		srv->wait_for(1s);
		s.error = "the server never listened: " + Trim(srv->take_new_output());
		sg.kill(srv->id());
		return s;
	}
	auto cli = cg.exec(Timed(client), 180s);
	iblab::ExecResult sres;
	if (srv->wait_for(60s))
		sres = srv->result();
	else {
		sres.output = srv->take_new_output() + "\n(the server did not finish)";
		sg.kill(srv->id());
	}
	s.error = check(sres, cli);
	if (!s.error.empty())
		return s;
	s.wall = WallSeconds(cli.output);
	if (s.wall <= 0) {
		s.error = "no wall time in the client's output: " + Trim(cli.output);
		return s;
	}
	s.rate = n / s.wall;
	return s;
}

std::string Spread(std::vector<double> v, double *median)
{
	std::sort(v.begin(), v.end());
	*median = v[v.size() / 2];
	char buf[128];
	std::snprintf(buf, sizeof buf, "%.2f (min %.2f, max %.2f, %zu rounds)", *median, v.front(), v.back(), v.size());
	return buf;
}

// --- IPoIB -------------------------------------------------------------------

const char *const kIpoibIp[4] = {"192.168.92.1", "192.168.92.2", "192.168.92.3", kServerIp};
constexpr int kIperfSeconds = 2;

// One IPoIB figure of one side in one round: Mbit/s or microseconds.
struct Figure {
	double value = 0;
	std::string error;
};

// iperf3 TCP from `cg` to `sg` (address `ip`), `streams` parallel streams:
// the receiver's Mbit/s.
Figure Iperf(iblab::Guest &sg, iblab::Guest &cg, const std::string &ip, int streams)
{
	Figure f;
	auto srv = sg.start_exec("iperf3 -s -1 -p 5201", 120s);
	auto w = sg.exec("for i in $(seq 1 100); do ss -ltn | grep -q ':5201 ' && exit 0; sleep 0.1; done; exit 1", 60s);
	if (!w.ok()) {
		f.error = sg.name() + ": iperf3 -s never listened: " + Trim(srv->take_new_output());
		sg.kill(srv->id());
		return f;
	}
	auto c = cg.exec("iperf3 -c " + ip + " -p 5201 -f m -O 1 -t " + std::to_string(kIperfSeconds) + " -P " +
				 std::to_string(streams) + " 2>&1",
			 120s);
	if (!srv->wait_for(30s))
		sg.kill(srv->id());
	// The receiver's summary: "[SUM] ... 123 MBytes 456 Mbits/sec ... receiver"
	// with -P 4, "[  5] ... receiver" with one stream.
	std::smatch m;
	const std::regex re(std::string(streams > 1 ? "\\[SUM\\]" : "\\[ *[0-9]+\\]") +
			    "[^\n]* ([0-9.]+) Mbits/sec[^\n]*receiver");
	if (!c.ok() || !std::regex_search(c.output, m, re)) {
		f.error = cg.name() + ": iperf3 -c " + ip + " -P " + std::to_string(streams) + ": " + c.describe() + ": " +
			  Trim(c.output);
		return f;
	}
	f.value = std::stod(m[1]);
	if (f.value <= 0)
		f.error = cg.name() + ": iperf3 moved nothing: " + Trim(c.output);
	return f;
}

// The average round trip of 20 pings from `g` to `ip`, in microseconds.
Figure PingRtt(iblab::Guest &g, const std::string &ip)
{
	Figure f;
	auto r = g.exec("ping -q -c 20 -i 0.05 -W 2 " + ip + " 2>&1", 60s);
	std::smatch m;
	if (!r.ok() || !std::regex_search(r.output, m, std::regex("= [0-9.]+/([0-9.]+)/[0-9.]+/[0-9.]+ ms")) ||
	    r.output.find(" 0% packet loss") == std::string::npos) {
		f.error = g.name() + ": ping " + ip + ": " + r.describe() + ": " + Trim(r.output);
		return f;
	}
	f.value = std::stod(m[1]) * 1000;
	return f;
}

// Every guest's ib0 into `mode`; connected sets MTU 65520, datagram the
// group's (2044), as both drivers do by themselves. Then each pair must
// answer a ping again.
std::string SetIpoibMode(iblab::Guest *const gs[4], const std::string &mode)
{
	for (int i = 0; i < 4; i++) {
		auto r = gs[i]->exec("echo " + mode + " > /sys/class/net/ib0/mode && cat /sys/class/net/ib0/mode", 60s);
		if (!r.ok() || r.output.find(mode) == std::string::npos)
			return gs[i]->name() + ": ib0 mode " + mode + ": " + Trim(r.output);
	}
	for (int i = 0; i < 4; i += 2) {
		auto p = gs[i]->exec(std::string("for i in $(seq 1 20); do ping -c 1 -W 2 ") + kIpoibIp[i + 1] +
					     " >/dev/null && exit 0; done; exit 1",
				     120s);
		if (!p.ok())
			return gs[i]->name() + ": no answer from " + kIpoibIp[i + 1] + " in " + mode + " mode";
	}
	return "";
}

} // namespace

int main(int argc, char **argv)
{
	const int n = argc > 1 ? std::atoi(argv[1]) : 100;
	if (n <= 0 || argc > 2) {
		std::fprintf(stderr, "usage: conn_rate_vm [connections]\n");
		return 2;
	}
	const char *mods = std::getenv("IBSTACK_MODULES");
	iblab::LabOptions o;
	o.guests = {{"vm0", iblab::Stack::Ours},
		    {"vm1", iblab::Stack::Ours},
		    {"vm2", iblab::Stack::Upstream},
		    {"vm3", iblab::Stack::Upstream}};
	o.fabric = "star:4";
	o.shares.push_back(kTools);
	o.modules_dir = mods && *mods ? mods : iblab::default_build_dir() + "/modules";
	o.run_dir = iblab::default_build_dir() + "/lab/" + iblab::make_run_id() + "-conn_rate";

	std::ostringstream rep;
	rep << "=== connection rate: " << n << " RC connections set up and torn down (client process wall time) ===\n";
	std::vector<Sample> ours, up;
	std::string fatal, lab_problems;
	// IPoIB: per case ("iperf3 datagram 1 stream", "ping connected", ...)
	// ours' and upstream's figures, one per round, in the order measured.
	const char *rounds_env = std::getenv("IBSTACK_IPOIB_ROUNDS");
	const int ipoib_rounds = rounds_env && *rounds_env ? std::max(1, std::atoi(rounds_env)) : 1;
	std::map<std::string, std::array<std::vector<Figure>, 2>> ipoib;
	std::vector<std::string> ipoib_order;
	for (const char *mode : {"datagram", "connected"}) {
		ipoib_order.push_back(std::string("iperf3 ") + mode + " 1 stream");
		ipoib_order.push_back(std::string("iperf3 ") + mode + " 4 streams");
		ipoib_order.push_back(std::string("ping ") + mode);
	}
	std::string ipoib_fatal;
	try {
		iblab::Lab lab(o);
		lab.start();
		auto &g0 = lab.guest("vm0"), &g1 = lab.guest("vm1"), &g2 = lab.guest("vm2"), &g3 = lab.guest("vm3");
		std::vector<std::thread> loads;
		std::vector<std::string> errs(4);
		iblab::Guest *gs[4] = {&g0, &g1, &g2, &g3};
		for (int i = 0; i < 4; i++)
			loads.emplace_back([&, i] {
				auto r = gs[i]->exec(iblab::vmtest::LoadCommand(gs[i]->stack()), 120s);
				if (!r.ok())
					errs[i] = gs[i]->name() + ": loading the stack failed: " + Trim(r.output);
			});
		for (auto &t : loads)
			t.join();
		for (auto &e : errs)
			if (!e.empty())
				throw std::runtime_error(e);
		auto sm = g2.exec("opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
		if (!sm.ok())
			throw std::runtime_error("opensm did not start: " + sm.output);
		for (auto *g : gs) {
			auto w = iblab::vmtest::WaitPortActive(*g, 150);
			if (!w.ok())
				throw std::runtime_error(g->name() + ": port not ACTIVE: " + Trim(w.output));
		}
		for (auto *g : {&g0, &g1}) {
			auto r = g->exec("modprobe ib_ucm && modprobe ib_uverbs && test -c /dev/infiniband/ucm0", 60s);
			if (!r.ok())
				throw std::runtime_error(g->name() + ": modprobe ib_ucm ib_uverbs: " + Trim(r.output));
		}
		iblab::Guest *ipg[2] = {&g2, &g3};
		const char *ips[2] = {"192.168.92.3", kServerIp};
		std::string ip_err = iblab::vmtest::IpoibUpOnBoth(ipg, ips, "modprobe rdma_ucm");
		if (!ip_err.empty())
			throw std::runtime_error(ip_err);
		auto lid = g1.exec("cat /sys/class/infiniband/mthca0/ports/1/lid", 30s);
		if (!lid.ok())
			throw std::runtime_error("vm1: no LID");
		const std::string lid1 = Trim(lid.output);
		const std::string count = std::to_string(n);

		auto ours_round = [&] {
			// The server prints its listening line into a file, which
			// the client side polls; its output is that file.
			return Pair(
				g1,
				"rm -f /tmp/connrate.srv; stdbuf -oL " + kTools +
					"/ibcm_connrate --dev mthca0 --server --count " + count +
					" >/tmp/connrate.srv 2>&1; rc=$?; cat /tmp/connrate.srv; exit $rc",
				g0, kTools + "/ibcm_connrate --dev mthca0 --concurrent --dlid " + lid1 + " --count " + count + " 2>&1",
				[&] {
					return g1.exec("for i in $(seq 1 100); do grep -q listening /tmp/connrate.srv "
						       "2>/dev/null && exit 0; sleep 0.2; done; exit 1",
						       60s)
						.ok();
				},
				n,
				[&](const iblab::ExecResult &s, const iblab::ExecResult &c) -> std::string {
					const std::string want = ": " + count + " connections in ";
					if (!c.ok() || c.output.find("client" + want) == std::string::npos)
						return "ibcm_connrate client: " + c.describe() + ": " + Trim(c.output) +
						       " (server: " + Trim(s.output) + ")";
					if (!s.ok() || s.output.find("server" + want) == std::string::npos)
						return "ibcm_connrate server: " + s.describe() + ": " + Trim(s.output);
					return "";
				});
		};
		auto up_round = [&] {
			g2.exec(std::string("ping -c 1 -W 2 ") + kServerIp, 30s);
			return Pair(
				g3, "stdbuf -oL ucmatose -b " + std::string(kServerIp) + " -p 7471 -c " + count + " -C 0 2>&1", g2,
				"ucmatose -s " + std::string(kServerIp) + " -p 7471 -c " + count + " -C 0 2>&1",
				[&] {
					return g3.exec("for i in $(seq 1 100); do rdma resource show cm_id 2>/dev/null | "
						       "grep -qE 'LISTEN.*:7471([^0-9]|$)' && exit 0; sleep 0.2; done; exit 1",
						       60s)
						.ok();
				},
				n,
				[&](const iblab::ExecResult &s, const iblab::ExecResult &c) -> std::string {
					if (!c.ok() || c.output.find("return status 0") == std::string::npos)
						return "ucmatose client: " + c.describe() + ": " + Trim(c.output) +
						       " (server: " + Trim(s.output) + ")";
					if (!s.ok() || s.output.find("return status 0") == std::string::npos)
						return "ucmatose server: " + s.describe() + ": " + Trim(s.output);
					return "";
				});
		};
		// One round of each side first, not counted: it brings the tools
		// and their libraries (which the guests read over 9p) into the
		// page cache. Without it, ours' first round (always the first
		// one run) came out at about half the rate of the others. A
		// failure in it is reported as any round's.
		Sample warm = ours_round();
		if (!warm.error.empty())
			ours.push_back(warm);
		warm = up_round();
		if (!warm.error.empty())
			up.push_back(warm);
		for (int round = 0; round < kRounds; round++) {
			for (int k = 0; k < 2; k++) {
				const bool ours_turn = (k == 0) == (round % 2 == 0);
				if (ours_turn) {
					if (!ours.empty() && !ours.back().error.empty())
						continue;
					ours.push_back(ours_round());
				} else {
					if (!up.empty() && !up.back().error.empty())
						continue;
					up.push_back(up_round());
				}
			}
		}
		// IPoIB: ours on vm0 and vm1 (the modules of the lab's "ours"
		// guests come first), on the subnet of vm2 and vm3.
		for (int i = 0; i < 2; i++) {
			auto r = gs[i]->exec(std::string("modprobe ib_ipoib && grep -q O /sys/module/ib_ipoib/taint && "
							 "ip link set ib0 up && ip addr add ") +
						     kIpoibIp[i] + "/24 dev ib0",
					     60s);
			if (!r.ok())
				ipoib_fatal = gs[i]->name() + ": our ib0: " + Trim(r.output);
		}
		for (int round = 0; round < ipoib_rounds && ipoib_fatal.empty(); round++) {
			for (const char *mode : {"datagram", "connected"}) {
				ipoib_fatal = SetIpoibMode(gs, mode);
				if (!ipoib_fatal.empty())
					break;
				for (int streams : {1, 4}) {
					const std::string name = std::string("iperf3 ") + mode + " " +
								 std::to_string(streams) + (streams > 1 ? " streams" : " stream");
					for (int k = 0; k < 2; k++) {
						const bool ours_turn = (k == 0) == (round % 2 == 0);
						const int c = ours_turn ? 0 : 2;
						ipoib[name][ours_turn ? 0 : 1].push_back(
							Iperf(*gs[c + 1], *gs[c], kIpoibIp[c + 1], streams));
					}
				}
				const std::string name = std::string("ping ") + mode;
				for (int k = 0; k < 2; k++) {
					const bool ours_turn = (k == 0) == (round % 2 == 0);
					const int c = ours_turn ? 0 : 2;
					ipoib[name][ours_turn ? 0 : 1].push_back(PingRtt(*gs[c], kIpoibIp[c + 1]));
				}
			}
		}
		auto report = lab.shutdown();
		if (!report.ok())
			lab_problems = report.text();
	} catch (const std::exception &e) {
		fatal = e.what();
	}

	int status = 0;
	auto side = [&](const char *name, const std::vector<Sample> &v) -> bool {
		rep << name << ":";
		if (!fatal.empty() || v.empty()) {
			rep << " NOT MEASURED: " << (fatal.empty() ? "no round ran" : fatal) << "\n";
			return false;
		}
		if (!v.back().error.empty()) {
			rep << " NOT MEASURED: " << v.back().error << "\n";
			return false;
		}
		char line[128];
		for (const auto &s : v) {
			std::snprintf(line, sizeof line, "  %.1f connections/s (%.2f s);", s.rate, s.wall);
			rep << line;
		}
		rep << "\n";
		return true;
	};
	const bool ours_ok = side("ours (ibcm_connrate --concurrent, vm0 -> vm1, all at once)", ours);
	const bool up_ok = side("upstream (ucmatose -c, vm2 -> vm3, all at once)", up);
	if (ours_ok && up_ok && ours.size() == up.size()) {
		std::vector<double> ratio;
		for (std::size_t i = 0; i < ours.size(); i++)
			ratio.push_back(ours[i].rate / up[i].rate);
		double med = 0;
		rep << "ratio ours/upstream (median of the per-round ratios): " << Spread(ratio, &med) << "\n";
	} else {
		rep << "ratio ours/upstream: not available\n";
		status = 1;
	}
	if (!lab_problems.empty()) {
		rep << "lab: the guests' logs have problems:\n" << lab_problems << "\n";
		status = 1;
	}
	const std::string text = rep.str();
	std::fputs(text.c_str(), stdout);
	std::filesystem::create_directories(iblab::default_build_dir() + "/lab");
	std::ofstream(iblab::default_build_dir() + "/lab/conn_rate.txt", std::ios::trunc) << text;

	std::ostringstream ip;
	ip << "=== IPoIB: iperf3 TCP (" << kIperfSeconds << " s after 1 s omitted) and ping -i 0.05, ours (vm0 -> vm1) "
	   << "against upstream (vm2 -> vm3), " << ipoib_rounds << (ipoib_rounds > 1 ? " rounds" : " round")
	   << " ===\n";
	for (const auto &name : ipoib_order) {
		const bool ping = name.rfind("ping", 0) == 0;
		const auto &sides = ipoib[name];
		std::string why;
		for (const auto &one : sides)
			for (const auto &f : one)
				if (why.empty() && !f.error.empty())
					why = f.error;
		if (why.empty() && (sides[0].empty() || sides[0].size() != sides[1].size()))
			why = !fatal.empty() ? fatal : !ipoib_fatal.empty() ? ipoib_fatal : "no round ran";
		if (!why.empty()) {
			ip << "ratio ours/upstream: " << name << ": NOT MEASURED: " << why << "\n";
			status = 1;
			continue;
		}
		std::vector<double> ratio;
		std::string raw;
		char buf[64];
		for (std::size_t i = 0; i < sides[0].size(); i++) {
			const double mine = sides[0][i].value, theirs = sides[1][i].value;
			ratio.push_back(ping ? theirs / mine : mine / theirs);
			std::snprintf(buf, sizeof buf, " %.0f/%.0f", mine, theirs);
			raw += buf;
		}
		double med = 0;
		ip << "ratio ours/upstream: " << name << " " << Spread(ratio, &med) << "  [ours/upstream "
		   << (ping ? "us:" : "Mbit/s:") << raw << (ping ? "; latency: ratio is upstream/ours" : "") << "]\n";
	}
	if (!ipoib_fatal.empty()) {
		ip << "IPoIB: stopped: " << ipoib_fatal << "\n";
		status = 1;
	}
	const std::string iptext = ip.str();
	std::fputs(iptext.c_str(), stdout);
	std::ofstream(iblab::default_build_dir() + "/lab/ipoib_rate.txt", std::ios::trunc) << iptext;
	return status;
}
