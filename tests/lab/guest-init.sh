#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# iblab guest init (runs from the lab-built initramfs as PID 1).
# Loads the virtio/9p/overlay modules, mounts the host root read-only over
# 9p, puts tmpfs/overlays on the writable places, then switch_roots and
# execs the agent. Parameters come from the kernel command line:
#   iblab.name=NAME        hostname and agent name
#   iblab.mode=upstream|ours
#                          ours: copy the modules of the 9p share "iblabmods"
#                          into /lib/modules/$KVER/updates and run depmod
#   iblab.share=TAG:PATH,...  more read-only 9p shares, mounted at PATH
#   iblab.kmod=1           the kernel is not the host's: its modules come
#                          from the 9p share "iblabkmod" (/lib/modules/$KVER)
#   iblab.mgmt=MAC,ADDR/LEN  the management network: the NIC with that MAC
#                          gets ADDR (no gateway, no IPv6); lo comes up too
#   iblab.hosts=A=N,...    address=name pairs appended to /etc/hosts: the
#                          guests' names on that network
# Output goes to the console (serial log) and to the kernel log.
export PATH=/bin
/bin/busybox --install -s /bin
busybox mount -t proc proc /proc
busybox mount -t sysfs sysfs /sys
busybox mount -t devtmpfs devtmpfs /dev

say() { echo "iblab-init: $*" > /dev/kmsg; }
die() {
	echo "iblab-init: FATAL: $*" > /dev/console
	poweroff -f
	sleep 10
}

name=guest; mode=upstream; shares=; kmod=; mgmt=; hosts=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	iblab.name=*) name=${arg#iblab.name=} ;;
	iblab.mode=*) mode=${arg#iblab.mode=} ;;
	iblab.share=*) shares=${arg#iblab.share=} ;;
	iblab.kmod=*) kmod=${arg#iblab.kmod=} ;;
	iblab.mgmt=*) mgmt=${arg#iblab.mgmt=} ;;
	iblab.hosts=*) hosts=${arg#iblab.hosts=} ;;
	esac
done
kver=$(uname -r)

for m in $(cat /modules.order); do
	insmod "/modules/$m" || die "insmod $m failed"
done

R=/newroot
mkdir -p $R
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 hostroot $R || die "cannot mount the host root"
mount -t tmpfs -o mode=0755 tmpfs $R/run || die "tmpfs /run"
mount -t tmpfs -o mode=1777 tmpfs $R/tmp || die "tmpfs /tmp"
if [ -n "$kmod" ]; then
	mount -t tmpfs -o mode=0755 tmpfs $R/lib/modules || die "tmpfs /lib/modules"
	mkdir -p $R/lib/modules/$kver
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 iblabkmod $R/lib/modules/$kver ||
		die "cannot mount the kernel's modules (share iblabkmod)"
fi
O=$R/run/iblab/ovl
for d in etc var root lib/modules/$kver; do
	t=$(echo "$d" | tr / _)
	mkdir -p $O/$t/upper $O/$t/work
	mount -t overlay -o "lowerdir=$R/$d,upperdir=$O/$t/upper,workdir=$O/$t/work" overlay "$R/$d" || die "overlay on /$d"
done
# OpenSM's state (guid2lid, ...) is per guest: never what a host-side
# OpenSM left in the host's /var/cache/opensm, which would hand the
# guests' ports the host's LIDs.
rm -rf $R/var/cache/opensm

IFS=,
for s in $shares; do
	tag=${s%%:*}; path=${s#*:}
	mkdir -p "$R$path"
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 "$tag" "$R$path" || die "cannot mount share $tag on $path"
done
unset IFS

if [ "$mode" = ours ]; then
	# The lab prepared the share on the host: updates/ with our modules and
	# the modules.* indexes from `depmod -b` over stock + ours (depmod in a
	# TCG guest, reading every module over 9p, takes half a minute).
	M=$R/run/iblab/modules
	D=$R/lib/modules/$kver
	mkdir -p $M
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 iblabmods $M || die "mode=ours without the iblabmods share"
	[ -d $M/updates ] || die "no updates/ in the modules share"
	cp -r $M/updates $D/ || die "copying our modules"
	cp $M/modules.* $D/ || die "copying the module indexes"
	n=$(find $D/updates -name '*.ko' | wc -l)
	[ "$n" -gt 0 ] || die "no .ko files in the modules directory"
	say "installed $n of our modules in /lib/modules/$kver/updates"
fi

hostname "$name"
echo "$name" > $R/etc/hostname

# The management network (a virtio-net NIC on the lab's own hub): a static
# address, no route beyond its /24, so nothing leads to the host's network.
if [ -n "$mgmt" ]; then
	mac=${mgmt%%,*}; addr=${mgmt#*,}; dev=
	for d in /sys/class/net/*; do
		[ "$(cat $d/address)" = "$mac" ] && dev=${d##*/}
	done
	[ -n "$dev" ] || die "no NIC with the management network's MAC $mac (CONFIG_VIRTIO_NET?)"
	echo 1 > /proc/sys/net/ipv6/conf/$dev/disable_ipv6
	ip link set lo up || die "lo up"
	ip addr add "$addr" dev $dev && ip link set $dev up || die "management address $addr on $dev"
	if [ -n "$hosts" ]; then
		echo "# the iblab management network" >> $R/etc/hosts
		IFS=,
		for h in $hosts; do
			printf '%s\t%s\n' "${h%%=*}" "${h#*=}" >> $R/etc/hosts || die "/etc/hosts"
		done
		unset IFS
	fi
	say "management network: $dev $addr"
fi
cp /iblab-agent $R/run/iblab/iblab-agent
mount --move /proc $R/proc
mount --move /sys $R/sys
mount --move /dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t debugfs debugfs $R/sys/kernel/debug 2>/dev/null
echo "iblab-init: switching root ($mode stack)" > $R/dev/kmsg
exec switch_root $R /run/iblab/iblab-agent --name "$name" --mode "$mode"
