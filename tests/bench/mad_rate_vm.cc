// SPDX-License-Identifier: GPL-2.0
// The issue-4 benchmark (ctest label "bench", not a test): MAD round trips
// per second from a guest of ours and from an upstream guest on the same
// fabric, in one run, as ratios ours/upstream.
//
// Fabric: switch3.topo. vm0 runs our stack, vm1 the upstream one, vm2
// (upstream) runs OpenSM, so both measured guests are one switch hop from
// the switch's SMA and two from the SA. In each, umad_rate (umad_rate.cc,
// libibumad) measures for a few seconds
//   - SMP round trips: SubnGet(NodeInfo) LID-routed to the switch;
//   - SA PathRecord queries: SubnAdmGet(PathRecord) to the other guest.
// The guests take turns, so they do not compete for the CPUs: ours then
// upstream, kRounds times (the order alternating), and each round gives a
// ratio ours/upstream; the result is the median of those, printed with the
// spread (min / median / max), since a TCG guest on a shared host is easily
// slowed down for a while.
//
// It also compares the memory of equal module sets: the size column of
// /proc/modules (the module images: text, data, bss; none of what the
// modules allocate at run time) of ib_core, ib_mad, ib_sa, ib_umad and
// ib_mthca in our guest against ib_core, ib_umad and ib_mthca upstream,
// whose ib_core holds the MAD layer and the SA client. ib_uverbs (which the
// upstream ib_mthca pulls in and ours does not; it is loaded here only for
// --verbs) is left out of both sets.
//
// With --verbs it then runs the issue-10 benchmarks in the same lab
// (verbs_bench.h): perftest from vm0 and from vm1 against vm2, and the MR
// and QP rates of verbs_rate, as ratios ours/upstream; their summary goes
// to <build>/lab/verbs_bench.txt.
//
// usage: mad_rate_vm [seconds] [--verbs]
// Exit status: 0 only when both guests were measured and the lab found no
// problem in the guests' logs; a benchmark that cannot measure fails. The
// summary also goes to <build>/lab/mad_rate.txt.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "iblab/config.h"
#include "iblab/lab.h"
#include "stack_commands.h"
#include "verbs_bench.h"

using namespace std::chrono_literals;

namespace {

struct Rates {
	double smp = 0, sa = 0;
	std::string error;  // empty: measured
};

// The image sizes (/proc/modules) of one module set.
struct ModuleMemory {
	unsigned long bytes = 0;
	std::string names;    // those found
	std::string missing;  // those of the set that are not loaded
};

std::string Trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

using iblab::vmtest::LoadCommand;

const std::string kPort = "/sys/class/infiniband/mthca0/ports/1";

// Rounds of the interleaved measurement (each: ours and upstream once).
constexpr int kRounds = 3;
// The same for the verbs benchmarks, which take longer per round.
constexpr int kVerbsRounds = 2;

// "" once port 1 of `g` is ACTIVE, else why not.
std::string WaitActive(iblab::Guest &g)
{
	auto r = iblab::vmtest::WaitPortActive(g, 150);
	return r.ok() ? "" : "port not ACTIVE: " + Trim(r.output);
}

double Rate(const std::string &out, const std::string &kind)
{
	std::smatch m;
	if (std::regex_search(out, m, std::regex(kind + " rate=([0-9.]+) ok=[0-9]+ errors=0")))
		return std::stod(m[1]);
	return -1;
}

Rates Measure(iblab::Guest &g, const std::string &tool, const std::string &switch_lid, const std::string &peer_lid,
	      int seconds)
{
	Rates r;
	auto smp = g.exec(tool + " smp " + switch_lid + " " + std::to_string(seconds), 300s);
	auto sa = g.exec(tool + " sa " + peer_lid + " " + std::to_string(seconds), 300s);
	r.smp = Rate(smp.output, "smp");
	r.sa = Rate(sa.output, "sa");
	if (r.smp < 0 || r.sa < 0)
		r.error = "umad_rate failed: " + Trim(smp.output) + " / " + Trim(sa.output);
	return r;
}

// The module set that does the same job in both stacks (see the top).
std::vector<std::string> ModuleSet(iblab::Stack s)
{
	if (s == iblab::Stack::Ours)
		return {"ib_core", "ib_mad", "ib_sa", "ib_umad", "ib_mthca"};
	return {"ib_core", "ib_umad", "ib_mthca"};
}

ModuleMemory Modules(iblab::Guest &g, iblab::Stack s)
{
	ModuleMemory m;
	auto r = g.exec("cat /proc/modules", 30s);
	std::map<std::string, unsigned long> size;
	std::istringstream in(r.output);
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream l(line);
		std::string name;
		unsigned long bytes = 0;
		if (l >> name >> bytes)
			size[name] = bytes;
	}
	for (const auto &n : ModuleSet(s)) {
		auto it = size.find(n);
		std::string &list = it == size.end() ? m.missing : m.names;
		list += (list.empty() ? "" : " ") + n;
		if (it != size.end())
			m.bytes += it->second;
	}
	return m;
}

// min / median / max of `v` (not empty).
std::string Spread(std::vector<double> v, double *median)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	char b[96];
	snprintf(b, sizeof b, "%.2f (min %.2f, max %.2f over %zu rounds)", *median, v.front(), v.back(), n);
	return b;
}

std::string Lid(iblab::Guest &g)
{
	auto r = g.exec("cat " + kPort + "/lid", 30s);
	return r.ok() ? std::to_string(std::stoul(r.output, nullptr, 16)) : "";
}

}  // namespace

int main(int argc, char **argv)
{
	int seconds = 2;
	bool verbs = false;
	for (int i = 1; i < argc; i++) {
		if (std::string(argv[i]) == "--verbs")
			verbs = true;
		else
			seconds = std::atoi(argv[i]);
	}
	if (seconds <= 0) {
		fprintf(stderr, "usage: mad_rate_vm [seconds] [--verbs]\n");
		return 2;
	}
	const char *env = std::getenv("IBSTACK_OURS_STACK");
	iblab::Stack ours_stack = env && std::string(env) == "upstream" ? iblab::Stack::Upstream : iblab::Stack::Ours;
	const char *mods = std::getenv("IBSTACK_MODULES");
	std::string tool = UMAD_RATE_BINARY;

	iblab::LabOptions o;
	o.guests = {{"vm0", ours_stack}, {"vm1", iblab::Stack::Upstream}, {"vm2", iblab::Stack::Upstream}};
	o.fabric = IBSTACK_TOPOLOGY_DIR + "/switch3.topo";
	// umad_rate runs from the build tree, which the guests may not see
	// through their root (under /tmp they have a tmpfs): share its directory.
	o.shares.push_back(std::filesystem::path(tool).parent_path().string());
	if (verbs && std::filesystem::path(VERBS_RATE_BINARY).parent_path() != std::filesystem::path(tool).parent_path())
		o.shares.push_back(std::filesystem::path(VERBS_RATE_BINARY).parent_path().string());
	if (ours_stack == iblab::Stack::Ours)
		o.modules_dir = mods && *mods ? mods : iblab::default_build_dir() + "/modules";
	o.run_dir = iblab::default_build_dir() + "/lab/" + iblab::make_run_id() + "-mad_rate";

	std::ostringstream rep;
	rep << "=== MAD rate (" << seconds << " s each): SMP NodeInfo round trips to the switch, SA PathRecord Gets ===\n";
	Rates up, ours;
	std::vector<Rates> up_rounds, ours_rounds;
	std::string lab_problems;
	ModuleMemory up_mem, ours_mem;
	iblab::bench::VerbsBenchResult vb;
	int status = 0;
	try {
		iblab::Lab lab(o);
		lab.start();
		auto &g0 = lab.guest("vm0"), &g1 = lab.guest("vm1"), &g2 = lab.guest("vm2");
		for (auto *g : {&g1, &g2}) {
			auto r = g->exec(LoadCommand(iblab::Stack::Upstream), 120s);
			if (!r.ok())
				throw std::runtime_error(g->name() + ": loading the upstream stack failed: " + r.output);
		}
		auto l0 = g0.exec(LoadCommand(ours_stack), 120s);
		if (!l0.ok())
			ours.error = "loading the stack failed: " + Trim(l0.output);
		auto sm = g2.exec("opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &", 30s);
		if (!sm.ok())
			throw std::runtime_error("opensm did not start: " + sm.output);
		up.error = WaitActive(g1);
		if (!up.error.empty())
			throw std::runtime_error("upstream guest: " + up.error);
		if (ours.error.empty())
			ours.error = WaitActive(g0);
		std::string sw;
		auto ibsw = g1.exec("ibswitches", 60s);
		std::smatch m;
		if (std::regex_search(ibsw.output, m, std::regex("base port 0 lid ([0-9]+)")))
			sw = m[1];
		else
			throw std::runtime_error("no switch LID: " + ibsw.output);
		std::string lid0 = ours.error.empty() ? Lid(g0) : "", lid1 = Lid(g1);
		// Interleaved rounds, the order alternating: a slow spell of the
		// host then hits both sides of some round alike.
		for (int round = 0; round < kRounds; round++) {
			for (int k = 0; k < 2; k++) {
				bool ours_turn = (k == 0) == (round % 2 == 0);
				if (ours_turn) {
					if (!ours.error.empty())
						continue;
					Rates r = Measure(g0, tool, sw, lid1, seconds);
					ours.error = r.error;
					ours_rounds.push_back(r);
				} else {
					Rates u = Measure(g1, tool, sw, lid0.empty() ? Lid(g2) : lid0, seconds);
					if (!u.error.empty())
						throw std::runtime_error("upstream guest: " + u.error);
					up_rounds.push_back(u);
				}
			}
		}
		up_mem = Modules(g1, iblab::Stack::Upstream);
		if (ours.error.empty())
			ours_mem = Modules(g0, ours_stack);
		if (verbs && ours.error.empty()) {
			// our ib_mthca does not pull ib_uverbs in, upstream's does
			auto uv = g0.exec("modprobe ib_uverbs", 60s);
			if (uv.ok())
				vb = iblab::bench::RunVerbsBench(g0, g1, g2, VERBS_RATE_BINARY, kVerbsRounds);
			else
				vb.report = "verbs: NOT MEASURED: vm0: modprobe ib_uverbs: " + Trim(uv.output) + "\n";
		}
		auto report = lab.shutdown();
		if (!report.ok())
			lab_problems = report.text();
	} catch (const std::exception &e) {
		up.error = up.error.empty() ? e.what() : up.error;
	}

	char line[256];
	if (up.error.empty()) {
		rep << "upstream (vm1):";
		for (const auto &r : up_rounds) {
			snprintf(line, sizeof line, "  smp %.1f/s sa %.1f/s;", r.smp, r.sa);
			rep << line;
		}
		rep << "\n";
	} else {
		rep << "upstream (vm1): NOT MEASURED: " << up.error << "\n";
		status = 1;
	}
	std::string who = std::string(iblab::to_string(ours_stack)) + " (vm0)";
	if (ours.error.empty() && up.error.empty() && ours_rounds.size() == up_rounds.size() && !up_rounds.empty()) {
		rep << who << ":";
		std::vector<double> smp, sa;
		for (size_t i = 0; i < ours_rounds.size(); i++) {
			snprintf(line, sizeof line, "  smp %.1f/s sa %.1f/s;", ours_rounds[i].smp, ours_rounds[i].sa);
			rep << line;
			smp.push_back(up_rounds[i].smp > 0 ? ours_rounds[i].smp / up_rounds[i].smp : 0);
			sa.push_back(up_rounds[i].sa > 0 ? ours_rounds[i].sa / up_rounds[i].sa : 0);
		}
		rep << "\n";
		double smp_med, sa_med;
		std::string smp_spread = Spread(smp, &smp_med), sa_spread = Spread(sa, &sa_med);
		rep << "ratio ours/upstream (median of the per-round ratios): smp " << smp_spread << "\n";
		rep << "ratio ours/upstream (median of the per-round ratios): sa " << sa_spread << "\n";
		rep << "module images (/proc/modules sizes, no run-time allocations), upstream (vm1): "
		    << up_mem.bytes / 1024 << " KiB (" << up_mem.names
		    << "; its ib_core holds ib_mad and ib_sa; ib_uverbs left out)\n";
		rep << "module images, " << who << ": " << ours_mem.bytes / 1024 << " KiB (" << ours_mem.names << ")\n";
		if (!up_mem.missing.empty() || !ours_mem.missing.empty()) {
			rep << "module images: NOT MEASURED: not loaded: upstream '" << up_mem.missing << "', ours '"
			    << ours_mem.missing << "'\n";
			status = 1;
		} else {
			snprintf(line, sizeof line, "ratio ours/upstream: module images %.2f\n",
				 double(ours_mem.bytes) / double(up_mem.bytes));
			rep << line;
		}
	} else {
		rep << who << ": NOT MEASURED: " << (ours.error.empty() ? "no upstream baseline" : ours.error) << "\n";
		rep << "ratio ours/upstream: not available\n";
		status = 1;
	}
	if (verbs) {
		std::string vtext = "=== verbs (perftest from vm0 and vm1 to vm2; MR and QP rates) ===\n";
		vtext += vb.measured || !vb.report.empty() ? vb.report : "verbs: NOT MEASURED: the MAD part failed first\n";
		if (!vb.measured)
			status = 1;
		rep << vtext;
		std::filesystem::create_directories(iblab::default_build_dir() + "/lab");
		std::ofstream(iblab::default_build_dir() + "/lab/verbs_bench.txt", std::ios::trunc) << vtext;
	}
	if (!lab_problems.empty()) {
		rep << "lab: the guests' logs have problems:\n" << lab_problems << "\n";
		status = 1;
	}
	std::string text = rep.str();
	fputs(text.c_str(), stdout);
	std::filesystem::create_directories(iblab::default_build_dir() + "/lab");
	std::ofstream(iblab::default_build_dir() + "/lab/mad_rate.txt", std::ios::trunc) << text;
	return status;
}
