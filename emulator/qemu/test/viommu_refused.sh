#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ibemu-hca shim refuses to be created behind a vIOMMU (ctest
# qemu_shim_refuses_viommu): the emulator takes the DMA addresses the driver
# programs as guest-physical, so behind an IOMMU they would be IOVAs used
# untranslated. No guest boots: QEMU realizes the devices and exits.
#   - q35 + intel-iommu + ibemu-hca: QEMU must exit non-zero naming the vIOMMU;
#   - q35 + ibemu-hca (the control): realize gets past that check and fails
#     later, at the emulator's socket (none is listening here).
# Exit 77 (ctest: skipped) without the project's QEMU (make qemu).
#
# usage: viommu_refused.sh QEMU
set -uo pipefail
qemu=$1
if [ ! -x "$qemu" ]; then
	echo "SKIP: no $qemu (make qemu)"
	exit 77
fi
dir=$(mktemp -d /tmp/ibemu-viommu-XXXXXX)
trap 'rm -rf "$dir"' EXIT

start() {
	timeout 30 "$qemu" -L /usr/share/qemu -L /usr/share/seabios -nodefaults -display none -S -accel tcg \
		-object memory-backend-memfd,id=mem,size=64M,share=on \
		-machine q35,memory-backend=mem -m 64M \
		"$@" -device "ibemu-hca,socket=$dir/none.sock,node=vm0" >"$dir/out" 2>&1 </dev/null
}

start -device intel-iommu
rc=$?
echo "with intel-iommu: exit $rc: $(head -c 400 "$dir/out")"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: QEMU did not refuse the device"; exit 1; }
grep -q 'behind a vIOMMU' "$dir/out" || { echo "FAIL: the refusal does not name the vIOMMU"; exit 1; }

start
rc=$?
echo "without an IOMMU: exit $rc: $(head -c 400 "$dir/out")"
grep -q 'vIOMMU' "$dir/out" && { echo "FAIL: refused without an IOMMU"; exit 1; }
grep -q 'cannot reach the emulator' "$dir/out" || { echo "FAIL: did not get to the emulator's socket"; exit 1; }
echo "viommu: OK"
