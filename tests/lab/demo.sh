#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make demo`: boot one guest with the upstream IB stack on the emulated
# InfiniHost III Ex and show the device.   Usage: tests/lab/demo.sh [BUILD_DIR]
set -eu
build=$(cd "${1:-build}" && pwd)
iblab=$build/tests/lab/iblab

if [ -z "${IBLAB_CTL:-}" ]; then
	# On the host: start the lab and run this script again inside it.
	exec "$iblab" run --guest vm0:upstream --timeout 10m -- "$0" "$build"
fi

bold= plain=
if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); fi
show() {
	printf '\n%svm0# %s%s\n' "$bold" "$*" "$plain"
	"$iblab" exec vm0 -- "$@"
}
show modprobe ib_mthca
show modprobe ib_uverbs
show lspci -nn
show ls -l /sys/class/infiniband/mthca0/
show readlink -f /sys/class/infiniband/mthca0/device
show ibv_devinfo -v
