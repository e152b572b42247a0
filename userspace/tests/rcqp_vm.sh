#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# By hand, not a ctest (the VM suites against our ib_ucm come later): RcQp,
# modify_qp() and ibcm_pingpong's data phase (ibcm_rcqp_loopback), and
# SaClient (ibcm_path), in one upstream guest on a one-switch fabric:
#
#   make qemu
#   cd build && flock /tmp/ibstack-vm.lock tests/lab/iblab run --guest vm0:upstream \
#       --fabric star:vm0 --timeout 900 -- ../userspace/tests/rcqp_vm.sh
#
# Exits non-zero at the first check that fails.
set -x
here=$(cd "$(dirname "$0")/../.." && pwd)
B=$here/build/userspace
iblab() { "$here/build/tests/lab/iblab" "$@"; }
iblab exec vm0 -- "modprobe ib_mthca && modprobe ib_umad && modprobe ib_uverbs" || exit 10
iblab exec vm0 --bg -- "opensm -f /tmp/opensm.log >/tmp/opensm.out 2>&1"
iblab exec vm0 --timeout 150 -- 'for i in $(seq 140); do grep -q ACTIVE /sys/class/infiniband/mthca0/ports/1/state && break; sleep 1; done; grep ACTIVE /sys/class/infiniband/mthca0/ports/1/state' || exit 11
iblab exec vm0 --timeout 300 -- "$B/ibcm_rcqp_loopback --dev mthca0 --iters 2000" || exit 12
iblab exec vm0 --timeout 300 -- "$B/ibcm_rcqp_loopback --dev mthca0 --iters 200 --size 4000 --depth 16" || exit 13
iblab exec vm0 --timeout 300 -- "$B/ibcm_rcqp_loopback --dev mthca0 --iters 100 --wrong-pattern; test \$? = 3" || exit 14
iblab exec vm0 --timeout 300 -- "$B/ibcm_path --dev mthca0 --dlid \$(cat /sys/class/infiniband/mthca0/ports/1/lid)" || exit 15
echo "rcqp_vm: OK"
