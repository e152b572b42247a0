#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the lab's debug guest kernel (KASAN, lockdep, kmemleak, SLUB debug,
# atomic-sleep, soft-lockup and hung-task detectors) from Debian's
# linux-source-6.1, and cache it.
#
#   tests/lab/debug-kernel/build.sh [CACHE_DIR]
#
# The last line on stdout is the kernel directory; everything else goes to
# stderr. CACHE_DIR defaults to ${IBSTACK_CACHE:-~/.cache/ibstack}. The
# directory, debug-kernel-<key>, holds:
#
#   src/                       the built tree: KDIR for `make -C src M=...`
#   boot/vmlinuz-<release>     bzImage (also config-, System.map-)
#   lib/modules/<release>/     its modules (modules_install), build -> src
#   release                    <release>, e.g. 6.1.0-56-ibdebug
#   build-seconds              how long the build took
#
# The key hashes the linux-source-6.1 package version, the compiler version,
# the config fragment and this script. The config is `make allnoconfig` with
# lab-debug.config applied, so it holds only what lab guests use; each line
# of the fragment is checked to have taken effect.
#
# The release keeps Debian's ABI name: with linux-image-6.1.0-56-amd64
# installed from the same source version, it is 6.1.0-56-ibdebug (Debian
# passes KERNELRELEASE to make the same way), and the source version
# (LINUX_VERSION_CODE, 6.1.192) is Debian's.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-${IBSTACK_CACHE:-$HOME/.cache/ibstack}}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
fragment="$here/lab-debug.config"
tarball=/usr/src/linux-source-6.1.tar.xz
jobs=${JOBS:-$(nproc)}

say() { echo "debug-kernel: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ -r "$tarball" ] || die "$tarball missing (apt-get install linux-source-6.1)"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
  die "linux-source-6.1 is not installed"

# Debian's ABI name for this source version ("6.1.0-56"), from the
# linux-image package of the same version; else the plain kernel version.
abi=$(dpkg-query -W -f='${Package} ${Version}\n' 'linux-image-6.1*' 2>/dev/null |
  awk -v v="$srcver" '$2 == v { print $1 }' |
  sed -n 's/^linux-image-\(6\.1\.[0-9]*-[0-9]*\)-amd64$/\1/p' | head -n 1)
[ -n "$abi" ] || abi=$(tar -xOf "$tarball" linux-source-6.1/Makefile |
  awk '/^VERSION =/{v=$3} /^PATCHLEVEL =/{p=$3} /^SUBLEVEL =/{s=$3} END{print v "." p "." s}')
release="$abi-ibdebug"

key=$( {
  echo "linux-source-6.1 $srcver"
  echo "release $release"
  echo "cc $(gcc --version | head -n 1)"
  echo "fragment $(sha256sum <"$fragment" | cut -d' ' -f1)"
  echo "script $(sha256sum <"${BASH_SOURCE[0]}" | cut -d' ' -f1)"
} | sha256sum | cut -c1-16)
out="$cache/debug-kernel-$key"
if [ -e "$out/.complete" ]; then
  echo "$out"
  exit 0
fi

# One build per key at a time; whoever waited finds the result cached.
exec 9>"$cache/debug-kernel-$key.lock"
flock 9
if [ -e "$out/.complete" ]; then
  echo "$out"
  exit 0
fi

log="$cache/debug-kernel-$key.build.log"
say "building $release (Debian linux-source-6.1 $srcver, key $key, -j$jobs); log: $log"
start=$(date +%s)
fail() {
  say "error: $1 failed; last lines of $log:"
  tail -n 40 "$log" >&2
  exit 1
}

# The tree is built where it stays (an object tree does not survive being
# moved); .complete, written last, is what makes it count as built.
rm -rf "$out"
mkdir -p "$out/src" "$out/boot"
: >"$log"
nice -n 10 tar -C "$out/src" --strip-components=1 -xf "$tarball" >>"$log" 2>&1 || fail "unpacking $tarball"

kmake=(nice -n 10 make -C "$out/src" -j"$jobs" KERNELRELEASE="$release"
       KBUILD_BUILD_USER=ibstack KBUILD_BUILD_HOST=iblab
       KBUILD_BUILD_TIMESTAMP="Debian $srcver (iblab debug)")
"${kmake[@]}" KCONFIG_ALLCONFIG="$fragment" allnoconfig >>"$log" 2>&1 || fail "make allnoconfig"

# Every line of the fragment must have taken effect: Kconfig drops a
# symbol whose dependencies are off without a word.
bad=0
while IFS= read -r line; do
  sym=${line%%=*} val=${line#*=}
  if [ "$val" = n ]; then
    if grep -q "^$sym=" "$out/src/.config"; then
      say "config: $line did not take effect: $(grep "^$sym=" "$out/src/.config")"
      bad=1
    fi
  elif ! grep -qxF "$line" "$out/src/.config"; then
    say "config: $line did not take effect: $(grep -E "^(# )?$sym[= ]" "$out/src/.config" || echo unset)"
    bad=1
  fi
done < <(grep -E '^CONFIG_[A-Z0-9_]+=' "$fragment")
[ "$bad" -eq 0 ] || die "the config fragment $fragment does not apply"

"${kmake[@]}" bzImage modules >>"$log" 2>&1 || fail "make bzImage modules"
"${kmake[@]}" INSTALL_MOD_PATH="$out" modules_install >>"$log" 2>&1 || fail "make modules_install"

install -m 0644 "$out/src/arch/x86/boot/bzImage" "$out/boot/vmlinuz-$release"
install -m 0644 "$out/src/.config" "$out/boot/config-$release"
install -m 0644 "$out/src/System.map" "$out/boot/System.map-$release"
# Relative links, so the directory can be shared into guests or moved.
moddir="$out/lib/modules/$release"
rm -f "$moddir/build" "$moddir/source"
ln -s ../../../src "$moddir/build"
[ -e "$moddir/modules.dep" ] && [ -e "$moddir/modules.builtin" ] || fail "modules_install (no modules.dep)"
# The objects are not needed for building modules against the tree.
find "$out/src" -name '*.o' ! -path '*/tools/*' ! -path '*/scripts/*' -delete
rm -f "$out/src/vmlinux" "$out/src/vmlinux.a"

echo "$release" >"$out/release"
secs=$(( $(date +%s) - start ))
echo "$secs" >"$out/build-seconds"
touch "$out/.complete"
say "built $release in $secs s"
echo "$out"
