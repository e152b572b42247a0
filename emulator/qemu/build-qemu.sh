#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build qemu-system-x86_64 from Debian's QEMU 7.2 source package, with the
# ibemu-hca shim device added, and cache the binary.
#
#   emulator/qemu/build-qemu.sh [CACHE_DIR]
#
# The last line on stdout is the absolute path of the binary; everything
# else goes to stderr. CACHE_DIR defaults to ${IBSTACK_CACHE:-~/.cache/ibstack}.
# The cache key hashes the Debian source version, every file in
# emulator/qemu/ and the configure flags. Needs root (or sudo) for apt-get
# the first time on a machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-${IBSTACK_CACHE:-$HOME/.cache/ibstack}}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

configure_flags=(
  --target-list=x86_64-softmmu
  --without-default-features
  --enable-virtfs --enable-attr --enable-cap-ng
  --enable-fdt=system
  --disable-docs --disable-install-blobs
)
build_deps=(gcc make pkg-config python3 ninja-build meson dpkg-dev
            libglib2.0-dev libpixman-1-dev libfdt-dev libcap-ng-dev
            libattr1-dev zlib1g-dev)
runtime_deps=(qemu-system-data seabios ipxe-qemu)

say() { echo "build-qemu: $*" >&2; }
die() { say "error: $*"; exit 1; }

sudo=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "apt-get needs root; run as root or install sudo"
  sudo=sudo
fi

ensure_deb_src() {
  if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding deb-src entries for bookworm"
    $sudo tee /etc/apt/sources.list.d/debian-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    $sudo apt-get update -qq >&2
  fi
  if ! apt-cache showsrc qemu 2>/dev/null | grep -q '^Version:'; then
    $sudo apt-get update -qq >&2
  fi
}

# The newest qemu source version apt knows (what `apt-get source qemu` takes).
source_version() {
  local best= v
  for v in $(apt-cache showsrc qemu | awk '/^Package: /{p=$2} /^Version: /{if (p == "qemu") print $2}'); do
    if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
      best=$v
    fi
  done
  [ -n "$best" ] || die "apt-cache showsrc qemu found no source package"
  echo "$best"
}

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

ensure_deb_src
version=$(source_version)
key=$( {
  echo "debian-qemu $version"
  echo "configure ${configure_flags[*]}"
  for f in $(cd "$here" && LC_ALL=C ls -1); do
    [ -f "$here/$f" ] || continue
    echo "file $f $(sha256sum <"$here/$f" | cut -d' ' -f1)"
  done
} | sha256sum | cut -c1-16)
out="$cache/qemu-$key"
if [ -x "$out/qemu-system-x86_64" ]; then
  echo "$out/qemu-system-x86_64"
  exit 0
fi

# One build per key at a time; whoever waited finds the result cached.
exec 9>"$cache/qemu-$key.lock"
flock 9
if [ -x "$out/qemu-system-x86_64" ]; then
  echo "$out/qemu-system-x86_64"
  exit 0
fi

ensure_packages "${build_deps[@]}" "${runtime_deps[@]}"

log="$cache/qemu-$key.build.log"
work=$(mktemp -d "$cache/.qemu-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "building QEMU (Debian $version, key $key); log: $log"
start=$(date +%s)

fail() {
  say "error: $1 failed; last lines of $log:"
  tail -n 40 "$log" >&2
  exit 1
}

: >"$log"
(cd "$work" && apt-get source -qq --only-source "qemu=$version") >>"$log" 2>&1 || fail "apt-get source"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)
[ -n "$src" ] || fail "unpacking the source"

# Our device, compiled per target because it reads the x86 machine layout.
cp "$here/ibemu-hca.c" "$here/ibemu-shim-proto.h" "$src/hw/misc/"
echo "specific_ss.add(when: 'CONFIG_PCI', if_true: files('ibemu-hca.c'))" >>"$src/hw/misc/meson.build"
# The dfsg tarball has no edk2 blobs; never try to unpack them.
sed -i 's/^if unpack_edk2_blobs$/if false/' "$src/pc-bios/meson.build"
grep -q '^if false$' "$src/pc-bios/meson.build" || fail "patching pc-bios/meson.build"

mkdir "$src/build"
(cd "$src/build" && ../configure "${configure_flags[@]}") >>"$log" 2>&1 || fail "configure"
(cd "$src/build" && ninja -j"$(nproc)" qemu-system-x86_64) >>"$log" 2>&1 || fail "ninja"

bin="$src/build/qemu-system-x86_64"
devices=$("$bin" -device help 2>&1) || fail "running the new binary"
for d in ibemu-hca virtserialport virtio-9p-pci; do
  grep -q "\"$d\"" <<<"$devices" || { echo "device $d missing" >>"$log"; fail "device check ($d)"; }
done

stage="$work/out"
mkdir "$stage"
install -m 0755 "$bin" "$stage/qemu-system-x86_64"
rm -rf "$src"
if ! mv -T "$stage" "$out" 2>/dev/null; then
  [ -x "$out/qemu-system-x86_64" ] || fail "moving the binary into $out"
fi
say "built in $(( $(date +%s) - start )) s"
echo "$out/qemu-system-x86_64"
