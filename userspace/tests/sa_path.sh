#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libibcmxx's SaClient against a real SA (ctest ibcmxx_sa_path): host
# OpenSM on a guest-less emulated fabric (ibemu-fabric fattree:4, reached
# through libibemu_umad.so as in tests/scale), then ibcm_path asks for the
# path from ca0 to ca3 by DLID and by DGID and must print what saquery
# prints for the same path; a LID nobody has must fail (SA status).
# Exit 77 (ctest: skipped) when opensm or saquery are missing.
#
# usage: sa_path.sh IBEMU_FABRIC LIBIBEMU_UMAD IBCM_PATH
set -uo pipefail
fabric_bin=$1 lib=$2 tool=$3

for t in opensm saquery iblinkinfo; do
	if ! command -v "$t" >/dev/null; then
		echo "SKIP: $t is not installed (.ci/deps installs opensm and infiniband-diags)"
		exit 77
	fi
done

dir=$(mktemp -d /tmp/ibcmxx-sa-XXXXXX)
fab_pid= osm_pid=
cleanup() {
	[ -n "$osm_pid" ] && kill "$osm_pid" 2>/dev/null && wait "$osm_pid" 2>/dev/null
	[ -n "$fab_pid" ] && kill "$fab_pid" 2>/dev/null && wait "$fab_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$dir"/fabric.log "$dir"/opensm.out; do
		[ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
	done
	exit 1
}

"$fabric_bin" --topology fattree:4 --umad "$dir/umad.sock" >"$dir/fabric.log" 2>&1 &
fab_pid=$!
for _ in $(seq 100); do
	grep -q ready "$dir/fabric.log" && break
	kill -0 $fab_pid 2>/dev/null || fail "ibemu-fabric exited"
	sleep 0.05
done
grep -q ready "$dir/fabric.log" || fail "ibemu-fabric not ready"

export OSM_CACHE_DIR="$dir" OSM_TMP_DIR="$dir"
export IBEMU_UMAD_SOCKET="$dir/umad.sock" LD_PRELOAD="$lib"
timeout 120 opensm -s 0 -d2 -f "$dir/opensm.log" >"$dir/opensm.out" 2>&1 &
osm_pid=$!
for _ in $(seq 600); do
	grep -qs 'SUBNET UP' "$dir/opensm.log" && break
	kill -0 $osm_pid 2>/dev/null || fail "opensm exited"
	sleep 0.05
done
grep -q 'SUBNET UP' "$dir/opensm.log" || fail "OpenSM did not reach SUBNET UP"

timeout 30 iblinkinfo >"$dir/links.txt" 2>&1 || fail "iblinkinfo failed"
lid0=$(awk '/^CA: ca0 HCA-1:/{getline; print $2; exit}' "$dir/links.txt")
lid3=$(awk '/^CA: ca3 HCA-1:/{getline; print $2; exit}' "$dir/links.txt")
[ -n "$lid0" ] && [ -n "$lid3" ] || fail "no LIDs for ca0/ca3 in iblinkinfo"

pr=$(timeout 30 saquery --src-to-dst "$lid0:$lid3" 2>&1) || fail "saquery: $pr"
field() { sed -n "s/^[[:space:]]*$1\.*\(.*\)$/\1/p" <<<"$pr" | head -1; }
want_dgid=$(field dgid) want_mtu=$(($(field mtu) & 0x3f)) want_rate=$(($(field rate) & 0x3f))
want_plt=$(($(field pkt_life) & 0x3f)) want_pkey=$(($(field pkey)))

check() {
	local how=$1 out=$2
	get() { sed -n "s/^$1 //p" <<<"$out"; }
	[ "$(get dlid)" = "$lid3" ] || fail "$how: dlid $(get dlid), want $lid3"
	[ "$(get slid)" = "$lid0" ] || fail "$how: slid $(get slid), want $lid0"
	[ "$(python3 -c "import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]))" "$(get dgid)")" = \
	  "$want_dgid" ] || fail "$how: dgid $(get dgid), want $want_dgid"
	[ "$(get mtu)" = "$want_mtu" ] || fail "$how: mtu $(get mtu), want $want_mtu"
	[ "$(get rate)" = "$want_rate" ] || fail "$how: rate $(get rate), want $want_rate"
	[ "$(get packet_life_time)" = "$want_plt" ] || fail "$how: packet life $(get packet_life_time), want $want_plt"
	[ $(($(get pkey))) -eq "$want_pkey" ] || fail "$how: pkey $(get pkey), want $want_pkey"
	echo "ibcmxx_sa_path: $how: LID $lid0 -> $lid3, dgid $want_dgid, mtu $want_mtu rate $want_rate: as saquery"
}

out=$(timeout 30 "$tool" --dev ibemu0 --dlid "$lid3" 2>&1) || fail "ibcm_path --dlid $lid3: $out"
check "by DLID" "$out"
out=$(timeout 30 "$tool" --dev ibemu0 --dgid "$want_dgid" 2>&1) || fail "ibcm_path --dgid $want_dgid: $out"
check "by DGID" "$out"
if out=$(timeout 30 "$tool" --dev ibemu0 --dlid 999 2>&1); then
	fail "a path to LID 999: $out"
fi
grep -q 'no path' <<<"$out" || fail "LID 999: $out"
echo "ibcmxx_sa_path: LID 999: no path, as it should"
echo "ibcmxx_sa_path: OK"
