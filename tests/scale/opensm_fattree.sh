#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-native OpenSM over a guest-less emulated fat tree (ctest scale_opensm_*):
#   ibemu-fabric --topology fattree:N   stub CAs + the host MAD endpoint
#   opensm -s 0 -d2 (LD_PRELOAD libibemu_umad.so)  one heavy sweep, then it
#                          stays up as the SA (no periodic sweeps; log flushed)
# and then checks, with the same interposer, that
#   - OpenSM reached SUBNET UP;
#   - iblinkinfo shows every cabled port of every node Active/LinkUp;
#   - ibnetdiscover lists every node of the topology;
#   - smpquery and perfquery answer by LID (a stub CA's SMA and PMA);
#   - saquery gets every NodeRecord from OpenSM's SA (a GetTable answer
#     of many MADs: RMPP through the endpoint) and a PathRecord between
#     two CAs.
# Exit 77 (ctest: skipped) when opensm or infiniband-diags are missing.
#
# usage: opensm_fattree.sh IBEMU_FABRIC LIBIBEMU_UMAD CAS
set -uo pipefail
fabric_bin=$1 lib=$2 cas=${3:-100}

for t in opensm ibnetdiscover iblinkinfo smpquery perfquery saquery; do
	if ! command -v "$t" >/dev/null; then
		echo "SKIP: $t is not installed (.ci/deps installs opensm and infiniband-diags)"
		exit 77
	fi
done

dir=$(mktemp -d /tmp/ibemu-scale-XXXXXX)
fab_pid= osm_pid=
cleanup() {
	[ -n "$osm_pid" ] && kill "$osm_pid" 2>/dev/null && wait "$osm_pid" 2>/dev/null
	[ -n "$fab_pid" ] && kill "$fab_pid" 2>/dev/null && wait "$fab_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
fail() {
	echo "FAIL: $*"
	for f in "$dir"/fabric.log "$dir"/opensm.out; do
		[ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
	done
	[ -f "$dir/opensm.log" ] && { echo "--- opensm.log (errors)"; grep -E 'ERR|SUBNET' "$dir/opensm.log" | tail -20; }
	exit 1
}

"$fabric_bin" --topology "fattree:$cas" --umad "$dir/umad.sock" >"$dir/fabric.log" 2>&1 &
fab_pid=$!
for _ in $(seq 100); do
	grep -q ready "$dir/fabric.log" && break
	kill -0 $fab_pid 2>/dev/null || fail "ibemu-fabric exited"
	sleep 0.05
done
ready=$(grep ready "$dir/fabric.log") || fail "ibemu-fabric not ready"
echo "$ready"
nodes=$(sed -n 's/.*: \([0-9]*\) nodes, \([0-9]*\) links.*/\1/p' <<<"$ready")
links=$(sed -n 's/.*: \([0-9]*\) nodes, \([0-9]*\) links.*/\2/p' <<<"$ready")

# OpenSM keeps its cache and dumps in these: private to this run.
export OSM_CACHE_DIR="$dir" OSM_TMP_DIR="$dir"
run() { IBEMU_UMAD_SOCKET="$dir/umad.sock" LD_PRELOAD="$lib" timeout 60 "$@"; }

start=$(date +%s.%N)
IBEMU_UMAD_SOCKET="$dir/umad.sock" LD_PRELOAD="$lib" timeout 120 opensm -s 0 -d2 -f "$dir/opensm.log" \
	>"$dir/opensm.out" 2>&1 &
osm_pid=$!
for _ in $(seq 1200); do
	grep -qs 'SUBNET UP' "$dir/opensm.log" && break
	kill -0 $osm_pid 2>/dev/null || fail "opensm exited"
	sleep 0.05
done
end=$(date +%s.%N)
grep -q 'SUBNET UP' "$dir/opensm.log" || fail "OpenSM did not reach SUBNET UP"
printf 'scale: opensm over fattree:%s (%s nodes, %s links): SUBNET UP in %.2f s\n' \
	"$cas" "$nodes" "$links" "$(echo "$end - $start" | bc)"

# Every cabled port is a port line of iblinkinfo with a peer; each must be
# Active/LinkUp. (Uncabled switch ports show as Down/Polling to "".)
run iblinkinfo >"$dir/links.txt" 2>&1 || fail "iblinkinfo failed"
grep '==(' "$dir/links.txt" | grep -v '\[  \] "" (' >"$dir/ends.txt"
ends=$(wc -l <"$dir/ends.txt")
active=$(grep -c 'Active/  LinkUp' "$dir/ends.txt")
echo "scale: iblinkinfo: $active of $ends link ends Active/LinkUp (topology: $((2 * links)))"
[ "$ends" -eq $((2 * links)) ] || fail "iblinkinfo shows $ends link ends, want $((2 * links))"
[ "$active" -eq "$ends" ] || { grep -v 'Active/  LinkUp' "$dir/ends.txt" | head; fail "ports not ACTIVE"; }

run ibnetdiscover >"$dir/net.txt" 2>&1 || fail "ibnetdiscover failed"
ncas=$(grep -c '^Ca' "$dir/net.txt")
nsw=$(grep -c '^Switch' "$dir/net.txt")
echo "scale: ibnetdiscover: $ncas CAs, $nsw switches"
[ "$ncas" -eq "$cas" ] || fail "ibnetdiscover found $ncas CAs, want $cas"
[ $((ncas + nsw)) -eq "$nodes" ] || fail "ibnetdiscover found $((ncas + nsw)) nodes, want $nodes"

# The last CA by LID: its NodeDescription through its SMA, its counters
# through its PMA.
lid=$(awk '/^CA: ca'$((cas - 1))' HCA-1:/{getline; print $2; exit}' "$dir/links.txt")
[ -n "$lid" ] || fail "no LID for ca$((cas - 1)) in iblinkinfo"
desc=$(run smpquery nodedesc "$lid" 2>&1) || fail "smpquery nodedesc $lid: $desc"
grep -q "ca$((cas - 1)) HCA-1" <<<"$desc" || fail "smpquery nodedesc $lid: $desc"
pc=$(run perfquery "$lid" 1 2>&1) || fail "perfquery $lid 1: $pc"
rcv=$(sed -n 's/^PortRcvPkts:\.*\([0-9]*\)/\1/p' <<<"$pc")
[ "${rcv:-0}" -gt 0 ] || fail "perfquery $lid 1: no PortRcvPkts: $pc"
echo "scale: LID $lid: $(sed 's/.*\.\.\.//' <<<"$desc"), PortRcvPkts $rcv"

# OpenSM's SA, through the endpoint: every NodeRecord (one GetTable answer
# of about 13 KB: many RMPP segments' worth) and one PathRecord.
s=$(date +%s.%N)
run saquery NR >"$dir/nr.txt" 2>&1 || { r=$?; tail "$dir/nr.txt"; fail "saquery NR exited $r"; }
nr=$(grep -c '^NodeRecord dump:' "$dir/nr.txt")
[ "$nr" -eq "$nodes" ] || fail "saquery NR gave $nr NodeRecords, want $nodes"
grep -q "ca$((cas - 1)) HCA-1" "$dir/nr.txt" || fail "saquery NR has no record of ca$((cas - 1))"
lid0=$(awk '/^CA: ca0 HCA-1:/{getline; print $2; exit}' "$dir/links.txt")
pr=$(run saquery --src-to-dst "$lid0:$lid" 2>&1) || fail "saquery --src-to-dst $lid0:$lid: $pr"
grep -q '^PathRecord dump:' <<<"$pr" || fail "saquery gave no PathRecord: $pr"
dlid=$(sed -n 's/^[[:space:]]*dlid\.*\(0x[0-9A-Fa-f]*\|[0-9]*\)$/\1/p' <<<"$pr" | head -1)
slid=$(sed -n 's/^[[:space:]]*slid\.*\(0x[0-9A-Fa-f]*\|[0-9]*\)$/\1/p' <<<"$pr" | head -1)
[ $((dlid)) -eq $((lid)) ] && [ $((slid)) -eq $((lid0)) ] || fail "PathRecord $lid0 -> $lid has slid $slid dlid $dlid: $pr"
e=$(date +%s.%N)
printf 'scale: saquery: %s NodeRecords, PathRecord LID %s -> %s; %.2f s for both\n' "$nr" "$lid0" "$lid" \
	"$(echo "$e - $s" | bc)"
echo "scale: OK"
