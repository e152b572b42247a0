#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Stands in for QEMU in the lab's unit tests: serves the agent chardev
# socket with iblab-agent --listen, so the lab runs without a VM.
# Environment: FAKE_AGENT (agent binary), FAKE_BIN (put first in the
# commands' PATH, e.g. a fake dmesg), FAKE_PIDS (file to record pids in),
# FAKE_MODE=hang (never boot; leaves a child process behind to be killed).
sock=; name=
while [ $# -gt 0 ]; do
	case "$1" in
	-chardev)
		case "$2" in socket,id=agent,path=*)
			sock=${2#socket,id=agent,path=}; sock=${sock%%,*} ;;
		esac
		shift ;;
	-append)
		for w in $2; do
			case "$w" in iblab.name=*) name=${w#iblab.name=} ;; esac
		done
		shift ;;
	esac
	shift
done
echo $$ >> "$FAKE_PIDS"
if [ "$FAKE_MODE" = hang ]; then
	sleep 1000 &
	echo $! >> "$FAKE_PIDS"
	wait
fi
exec "$FAKE_AGENT" --listen "$sock" --name "$name" --path "$FAKE_BIN:/usr/bin:/bin"
