#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark (ctest scale_bench_opensm_*, label scale-perf, not in make
# check): OpenSM's heavy sweep of a generated fat tree, on our emulated
# fabric (ibemu-fabric + libibemu_umad.so) and on ibsim (ibsim-utils:
# ibsim + umad2sim), with the same topology file, the same OpenSM binary,
# the SM on the same node (ca0), on this machine. Prints both times and
# ours/ibsim. The sweep time is OpenSM's own: from "Entering DISCOVERING
# state" to "SUBNET UP" in its log (-V timestamps); the wall time of the
# whole `opensm -o` run is printed beside it. Best of RUNS runs each.
#
# usage: bench_opensm.sh IBEMU_FABRIC LIBIBEMU_UMAD CAS [RUNS]
set -uo pipefail
fabric_bin=$1 lib=$2 cas=${3:-1000} runs=${4:-3}
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

for t in opensm ibsim; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (.ci/deps: opensm ibsim-utils)"; exit 77; }
done
[ -f "$umad2sim" ] || { echo "SKIP: no $umad2sim"; exit 77; }

dir=$(mktemp -d /tmp/ibemu-scalebench-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
export OSM_CACHE_DIR="$dir" OSM_TMP_DIR="$dir"

"$fabric_bin" --topology "fattree:$cas" --write-topology "$dir/fattree.topo" || exit 1
sm_id=$(awk '/^Ca/ && /"ca0 HCA-1"/ {gsub(/"/, "", $3); print $3; exit}' "$dir/fattree.topo")
echo "bench: fattree:$cas, $(grep -c '^Switch' "$dir/fattree.topo") switches, SM at ca0 ($sm_id)"

# Seconds between two OpenSM log lines' timestamps ("Mon DD HH:MM:SS usec").
sweep_secs() {
	awk '
	function t(line,   a, h) { split($3, h, ":"); return h[1] * 3600 + h[2] * 60 + h[3] + $4 / 1e6 }
	/Entering DISCOVERING state/ && !s { s = t($0) }
	/SUBNET UP/ && s && !e { e = t($0) }
	END { if (s && e) printf "%.3f", e - s; else print "nan" }' "$1"
}

# One OpenSM run with the given preload environment; prints "sweep wall".
one_run() {
	local log=$dir/osm-$RANDOM.log s e
	s=$(date +%s.%N)
	env "$@" timeout 600 opensm -o -f "$log" >/dev/null 2>&1 || { echo "nan nan"; return; }
	e=$(date +%s.%N)
	grep -q 'SUBNET UP' "$log" || { echo "nan nan"; return; }
	echo "$(sweep_secs "$log") $(echo "$e - $s" | bc)"
}

best() { sort -g | head -1; }

# Ours.
"$fabric_bin" --topology "$dir/fattree.topo" --sm-node ca0 --umad "$dir/umad.sock" >"$dir/fabric.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do grep -q ready "$dir/fabric.log" && break; sleep 0.05; done
grep -q ready "$dir/fabric.log" || { cat "$dir/fabric.log"; exit 1; }
ours=()
for _ in $(seq "$runs"); do
	ours+=("$(one_run IBEMU_UMAD_SOCKET="$dir/umad.sock" LD_PRELOAD="$lib")")
done
# The 1000-CA case must also be right: every cabled port ACTIVE, every node
# discovered (as scale_opensm_fattree100 checks at 100).
run_ours() { IBEMU_UMAD_SOCKET="$dir/umad.sock" LD_PRELOAD="$lib" timeout 120 "$@"; }
run_ours iblinkinfo 2>/dev/null | grep '==(' | grep -v '\[  \] "" (' >"$dir/ends.txt"
nodes=$(grep -c '^Ca\|^Switch' "$dir/fattree.topo")
found=$(run_ours ibnetdiscover 2>/dev/null | grep -c '^Ca\|^Switch')
echo "bench: ibemu: $(grep -c 'Active/  LinkUp' "$dir/ends.txt") of $(wc -l <"$dir/ends.txt") link ends Active/LinkUp, ibnetdiscover found $found of $nodes nodes"
[ "$found" -eq "$nodes" ] && ! grep -qv 'Active/  LinkUp' "$dir/ends.txt" || { echo "bench: FAIL: not every port ACTIVE or node found"; exit 1; }
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null

# ibsim, same file; umad2sim attaches at SIM_HOST.
ibsim -s -n "$dir/fattree.topo" >"$dir/ibsim.log" 2>&1 &
pids+=($!)
sleep 2
theirs=()
for _ in $(seq "$runs"); do
	theirs+=("$(one_run SIM_HOST="$sm_id" LD_PRELOAD="$umad2sim")")
done

o_sweep=$(printf '%s\n' "${ours[@]}" | awk '{print $1}' | best)
o_wall=$(printf '%s\n' "${ours[@]}" | awk '{print $2}' | best)
t_sweep=$(printf '%s\n' "${theirs[@]}" | awk '{print $1}' | best)
t_wall=$(printf '%s\n' "${theirs[@]}" | awk '{print $2}' | best)
echo "bench: OpenSM heavy sweep (DISCOVERING -> SUBNET UP), best of $runs:"
printf 'bench:   ibemu  %8s s   (opensm -o wall %s s)\n' "$o_sweep" "$o_wall"
printf 'bench:   ibsim  %8s s   (opensm -o wall %s s)\n' "$t_sweep" "$t_wall"
if [[ $o_sweep != nan && $t_sweep != nan ]]; then
	printf 'bench: ratio ours/ibsim = %.2f (below 1: ours is faster)\n' "$(echo "$o_sweep / $t_sweep" | bc -l)"
else
	echo "bench: a run did not reach SUBNET UP (see above)"
	exit 1
fi
