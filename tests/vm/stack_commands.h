// SPDX-License-Identifier: GPL-2.0
// What the VM tests and the benchmark do to a guest's stack, without
// GoogleTest: load and unload each stack's module set, wait for the port.
#pragma once

#include <chrono>
#include <string>

#include "iblab/lab.h"

namespace iblab::vmtest {

// The modules one stack loads for the SM, the diagnostics and the SA: the
// upstream 6.1 stack has ib_mad and ib_sa inside ib_core (and ib_mthca
// pulls in ib_uverbs); ours has the 2.6.11 module set.
inline std::string LoadCommand(Stack s)
{
	if (s == Stack::Ours)
		return "modprobe ib_mthca && modprobe ib_umad && modprobe ib_sa";
	return "modprobe ib_mthca && modprobe ib_umad";
}

// Unloads what LoadCommand(s) loaded; for ours also ib_selftest, which
// must be loaded.
inline std::string UnloadCommand(Stack s)
{
	if (s == Stack::Ours)
		return "rmmod ib_selftest ib_umad ib_sa ib_mthca ib_mad ib_core";
	return "rmmod ib_umad ib_mthca ib_uverbs ib_core";
}

// Waits up to `secs` seconds for port 1 of mthca0 in `g` to be ACTIVE;
// on failure the output ends with the state it was left in. The wait is
// bounded by the guest's clock, not by a count of polls: on a loaded host
// a debug-kernel guest takes a good part of a second per fork, and a
// count of 1 s sleeps could overrun the exec's own limit, which then
// kills the loop before it can print the state. An exec that still times
// out means a read of the state file itself hung in the kernel.
inline ExecResult WaitPortActive(Guest &g, int secs)
{
	const std::string state = "/sys/class/infiniband/mthca0/ports/1/state";
	return g.exec("end=$(($(date +%s) + " + std::to_string(secs) + ")); until grep -q ACTIVE " + state +
			      " 2>/dev/null; do if [ $(date +%s) -ge $end ]; then echo \"state: $(cat " + state +
			      " 2>&1)\"; exit 1; fi; sleep 1; done",
		      std::chrono::seconds(secs + 60));
}

// Upstream ib_ipoib on two guests: ib0 up with ip[i]/24 in g[i], after
// `setup` (shell run once ib_ipoib is loaded, e.g. the connected mode),
// then a wait until g[1] reaches g[0]. Returns what went wrong, or "".
inline std::string IpoibUpOnBoth(Guest *const g[2], const char *const ip[2], const std::string &setup = "")
{
	for (int i = 0; i < 2; ++i) {
		auto r = g[i]->exec("modprobe ib_ipoib && " + (setup.empty() ? "" : setup + " && ") +
					    "ip link set ib0 up && ip addr add " + ip[i] + "/24 dev ib0",
				    std::chrono::seconds(60));
		if (!r.ok())
			return g[i]->name() + ": ib0: " + r.output;
	}
	auto p = g[1]->exec(std::string("for i in $(seq 1 30); do ping -c 1 -W 2 ") + ip[0] +
				    " >/dev/null && exit 0; done; exit 1",
			    std::chrono::seconds(120));
	return p.ok() ? "" : "IPoIB never answered: " + p.output;
}

}  // namespace iblab::vmtest
