#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`: a mixed fabric on the emulator. vm0 runs our stack (the
# modules of build/modules, loaded from updates/), vm1 the upstream Debian
# stack; both HCAs hang off one emulated switch. OpenSM runs on our stack in
# vm0 and brings the fabric up; then the diagnostics look at it from both
# sides, a verbs program runs between them and ib0 pings. Usage: tests/lab/demo.sh [BUILD_DIR]
set -eu
build=$(cd "${1:-build}" && pwd)
iblab=$build/tests/lab/iblab
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${IBLAB_CTL:-}" ]; then
	# On the host: start the lab and run this script again inside it.
	exec "$iblab" run --guest vm0:ours --guest vm1:upstream \
		--modules "$build/modules" \
		--fabric "$here/../vm/topologies/switch2.topo" \
		--timeout 15m -- "$0" "$build"
fi

bold= plain=
if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); fi
show() {
	vm=$1; shift
	printf '\n%s%s# %s%s\n' "$bold" "$vm" "$*" "$plain"
	"$iblab" exec "$vm" -- "$*"
}
show vm0 'modprobe ib_mthca && modprobe ib_umad && modprobe ib_sa && modinfo -n ib_core ib_mad ib_mthca'
show vm1 'modprobe ib_mthca && modprobe ib_umad && modinfo -n ib_core ib_mthca'
show vm0 'opensm -B -f /tmp/opensm.log >/dev/null'
show vm0 'for i in $(seq 1 120); do grep -q ACTIVE /sys/class/infiniband/mthca0/ports/1/state && break; sleep 1; done; ibstat'
show vm1 'for i in $(seq 1 60); do grep -q ACTIVE /sys/class/infiniband/mthca0/ports/1/state && break; sleep 1; done; ibstat'
show vm0 'ibnetdiscover'
show vm0 'sminfo; saquery -p'
show vm1 'smpquery nodeinfo $(cat /sys/class/infiniband/mthca0/ports/1/sm_lid)'
show vm1 'perfquery $(cat /sys/class/infiniband/mthca0/ports/1/sm_lid)'
# User-space verbs: Debian's libibverbs and its mthca provider on our
# ib_uverbs (vm0) and on upstream's (vm1); ibv_rc_pingpong between them,
# its TCP side channel over the lab's management network (vm0 by name).
show vm0 'modprobe ib_uverbs && ibv_devinfo'
"$iblab" exec vm0 -- 'ibv_rc_pingpong -g 0 -n 100 -c >/tmp/pp.out 2>&1 &'
sleep 2
show vm1 'modprobe ib_uverbs; ibv_rc_pingpong -g 0 -n 100 -c vm0'
show vm0 'sleep 1; cat /tmp/pp.out'
# IPoIB: our ib_ipoib (vm0) and upstream's (vm1) in datagram mode, each
# with an address on ib0; ping both ways across the switch.
show vm0 'modprobe ib_ipoib && modinfo -n ib_ipoib && ip addr add 192.168.95.1/24 dev ib0 && ip link set ib0 up'
show vm1 'modprobe ib_ipoib && ip addr add 192.168.95.2/24 dev ib0 && ip link set ib0 up'
show vm0 'for i in $(seq 1 60); do ip link show ib0 | grep -q LOWER_UP && break; sleep 1; done; ip -d link show ib0; cat /sys/class/net/ib0/mode'
show vm1 'for i in $(seq 1 60); do ip link show ib0 | grep -q LOWER_UP && break; sleep 1; done; ping -c 3 192.168.95.1'
show vm0 'ping -c 3 -s 3000 192.168.95.2'
