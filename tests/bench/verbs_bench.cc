// SPDX-License-Identifier: GPL-2.0
// The issue-10 benchmarks (verbs_bench.h).
#include "verbs_bench.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace iblab::bench {
namespace {

// One measurement: a perftest pair or a verbs_rate run.
struct Kind {
	std::string name;     // as printed
	std::string server;   // perftest: the command in the peer; "" for verbs_rate
	std::string client;   // perftest: the command in the measured guest, before the peer's name
	bool latency = false; // smaller is better
};

const std::vector<Kind> &Kinds(const std::string &tool)
{
	// Bandwidth at perftest's default 64 KiB (8 bytes for atomics), latency
	// at its default 2 bytes. -n keeps each run to a second or two under
	// TCG; -F: the emulated CPU's frequency scaling warning is not an error.
	static const std::vector<Kind> kinds = {
		{"ib_write_bw", "ib_write_bw -F -n 300", "ib_write_bw -F -n 300", false},
		{"ib_read_bw", "ib_read_bw -F -n 300", "ib_read_bw -F -n 300", false},
		{"ib_send_bw", "ib_send_bw -F -n 300", "ib_send_bw -F -n 300", false},
		{"ib_atomic_bw", "ib_atomic_bw -F -n 300", "ib_atomic_bw -F -n 300", false},
		{"ib_write_lat", "ib_write_lat -F -n 300", "ib_write_lat -F -n 300", true},
		{"ib_send_lat", "ib_send_lat -F -n 300", "ib_send_lat -F -n 300", true},
		{"mr 4KiB", "", tool + " mr 4096 1", false},
		{"mr 1MiB", "", tool + " mr 1048576 1", false},
		{"mr 64MiB", "", tool + " mr 67108864 2", false},
		{"qp", "", tool + " qp 1", false},
	};
	return kinds;
}

std::string Tail(const std::string &s, size_t n = 400)
{
	return s.size() > n ? s.substr(s.size() - n) : s;
}

// The figure of a perftest result row: for a bandwidth test the row is
// "bytes iterations peak average msgrate", BW average in MB/s; for a
// latency test "bytes iterations t_min t_max t_typical ...", t_typical in
// microseconds. -1 when there is no row.
double PerftestFigure(const std::string &out, bool latency)
{
	static const std::regex row(R"((^|\n)\s*([0-9]+)\s+([0-9]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+))");
	std::smatch m;
	if (!std::regex_search(out, m, row))
		return -1;
	return std::stod(latency ? m[6].str() : m[5].str());
}

double RateFigure(const std::string &out)
{
	std::smatch m;
	if (std::regex_search(out, m, std::regex(R"(rate=([0-9.]+) ok=[0-9]+ errors=0)")))
		return std::stod(m[1]);
	return -1;
}

// "" once the peer listens on perftest's port, else why not.
std::string WaitListening(Guest &peer)
{
	auto r = peer.exec("for i in $(seq 1 100); do ss -Hltn 'sport = :18515' | grep -q . && exit 0; "
			   "sleep 0.1; done; exit 1",
			   30s);
	return r.ok() ? "" : "the perftest server did not listen: " + r.output;
}

// One run of `k` from `g`; the figure, or -1 with `*why` set.
double RunOnce(const Kind &k, Guest &g, Guest &peer, std::string *why)
{
	if (k.server.empty()) {
		auto r = g.exec(k.client, 120s);
		double f = r.ok() ? RateFigure(r.output) : -1;
		if (f < 0)
			*why = k.client + ": " + r.describe() + ": " + Tail(r.output);
		return f;
	}
	// perftest calibrates its cycle clock against gettimeofday() at the
	// end; under TCG the samples sometimes scatter and it refuses to
	// report ("Correlation coefficient"). That is the tool, after the
	// traffic: such a run is repeated, at most twice.
	for (int attempt = 0; attempt < 3; attempt++) {
		auto srv = peer.start_exec(k.server, 120s);
		std::string w = WaitListening(peer);
		if (!w.empty()) {
			*why = w;
			peer.kill(srv->id());
			return -1;
		}
		auto cli = g.exec(k.client + " " + peer.name(), 120s);
		bool srv_done = srv->wait_for(60s);
		if (!srv_done) {
			peer.kill(srv->id());
			srv->wait_for(10s);
		}
		double f = cli.ok() ? PerftestFigure(cli.output, k.latency) : -1;
		if (f > 0 && srv_done)
			return f;
		*why = k.client + " " + peer.name() + ": " + cli.describe() + ": " + Tail(cli.output) +
		       (srv_done ? "" : " (the server did not finish)");
		if (cli.output.find("Correlation coefficient") == std::string::npos)
			return -1;
	}
	return -1;
}

std::string Spread(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	char b[112];
	snprintf(b, sizeof b, "%.2f (min %.2f, max %.2f over %zu rounds)", med, v.front(), v.back(), n);
	return b;
}

}  // namespace

VerbsBenchResult RunVerbsBench(Guest &ours, Guest &upstream, Guest &peer, const std::string &rate_tool,
			       int rounds)
{
	VerbsBenchResult res;
	std::ostringstream rep;
	const auto &kinds = Kinds(rate_tool);
	// figures[kind][side][round], side 0 ours, 1 upstream
	std::vector<std::vector<std::vector<double>>> fig(kinds.size(), std::vector<std::vector<double>>(2));
	std::string failure;
	// First, data through two 64 MiB regions on each stack (verbs_rate
	// mrcheck): a rate of registrations that map the wrong pages would be
	// no rate at all.
	for (Guest *g : {&ours, &upstream}) {
		auto r = g->exec(rate_tool + " mrcheck 67108864", 120s);
		if (!r.ok() || r.output.find("mrcheck bytes=67108864 ok") == std::string::npos) {
			failure = g->name() + ": " + rate_tool + " mrcheck 67108864: " + r.describe() + ": " +
				  Tail(r.output);
			break;
		}
	}
	for (int round = 0; round < rounds && failure.empty(); round++) {
		for (size_t i = 0; i < kinds.size() && failure.empty(); i++) {
			for (int k = 0; k < 2 && failure.empty(); k++) {
				int side = (k == 0) == (round % 2 == 0) ? 0 : 1;
				Guest &g = side == 0 ? ours : upstream;
				std::string why;
				double f = RunOnce(kinds[i], g, peer, &why);
				if (f <= 0)
					failure = g.name() + " (" + (side == 0 ? "ours" : "upstream") + "): " + why;
				else
					fig[i][side].push_back(f);
			}
		}
	}
	if (!failure.empty()) {
		rep << "verbs: NOT MEASURED: " << failure << "\n";
		res.report = rep.str();
		return res;
	}
	char line[256];
	for (size_t i = 0; i < kinds.size(); i++) {
		const Kind &k = kinds[i];
		std::vector<double> ratio;
		std::string figs;
		for (int r = 0; r < rounds; r++) {
			double o = fig[i][0][r], u = fig[i][1][r];
			ratio.push_back(k.latency ? u / o : o / u);
			snprintf(line, sizeof line, "%s%.1f/%.1f", r ? " " : "", o, u);
			figs += line;
		}
		const char *unit = k.latency ? "us" : k.server.empty() ? "/s" : "MB/s";
		rep << "ratio ours/upstream: " << k.name << " " << Spread(ratio) << "  [ours/upstream " << unit
		    << ": " << figs << (k.latency ? "; latency: ratio is upstream/ours" : "") << "]\n";
	}
	res.report = rep.str();
	res.measured = true;
	return res;
}

}  // namespace iblab::bench
