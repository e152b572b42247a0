// SPDX-License-Identifier: GPL-2.0
// The issue-10 benchmarks: user-space verbs on our stack against upstream,
// in the lab run of mad_rate_vm.cc (Documentation/testing.md, "The
// benchmark").
#pragma once

#include <string>

#include "iblab/lab.h"

namespace iblab::bench {

struct VerbsBenchResult {
	std::string report;  // lines for the summary
	bool measured = false;  // every ratio was measured
};

// Measures, in `rounds` interleaved rounds (the order alternating):
//   - perftest bandwidth (ib_write_bw, ib_read_bw, ib_send_bw,
//     ib_atomic_bw) and latency (ib_write_lat, ib_send_lat), each client
//     in `ours` and in `upstream` against a server in `peer`, reached by
//     its management-network name;
//   - first, in `ours` and in `upstream`, data through two 64 MiB MRs
//     (verbs_rate mrcheck); a failure is reported as not measured;
//   - MR registration + deregistration per second at 4 KiB, 1 MiB and
//     64 MiB, and QP create + destroy per second (verbs_rate, the binary
//     at `rate_tool`, which the guests see at that path).
// Each ratio is ours/upstream for a rate or bandwidth, upstream/ours for a
// latency, so that above 1.0 is better for ours everywhere; the median of
// the per-round ratios is printed with its spread.
VerbsBenchResult RunVerbsBench(Guest &ours, Guest &upstream, Guest &peer, const std::string &rate_tool,
			       int rounds);

}  // namespace iblab::bench
