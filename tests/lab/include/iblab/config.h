// SPDX-License-Identifier: GPL-2.0
// Where the lab finds its pieces. Every default can be overridden by the
// environment; the compiled-in defaults come from CMake.
//
//   IBLAB_QEMU       QEMU binary (default: <build>/qemu/qemu-system-x86_64,
//                    then the newest ~/.cache/ibstack/qemu-*/qemu-system-x86_64)
//   IBLAB_EMULATOR   fabric emulator (default: <build>/emulator/server/ibemu)
//   IBLAB_AGENT      guest agent binary (default: the one built with the lab)
//   IBLAB_KERNEL     guest kernel version (default: newest /boot/vmlinuz-6.1.*)
//   IBLAB_KERNEL_DIR a kernel of the lab's own instead of the host's (the
//                    debug kernel: <dir>/boot/vmlinuz-*, <dir>/lib/modules/*)
//   IBLAB_CMDLINE    words added to every guest's kernel command line (the
//                    debug lane's boot options)
//   IBLAB_BUILD_DIR  build directory; runs go to <build>/lab/<run-id>
#pragma once

#include <string>
#include <vector>

namespace iblab {

struct KernelInfo {
	std::string version;      // "6.1.0-56-amd64"
	std::string image;        // "/boot/vmlinuz-6.1.0-56-amd64"
	std::string modules_dir;  // "/lib/modules/6.1.0-56-amd64"
};

// `version` empty: $IBLAB_KERNEL, else the newest 6.1 kernel that has both
// an image in `boot_dir` and a modules directory. Throws if none.
KernelInfo find_kernel(const std::string &version = "", const std::string &boot_dir = "/boot",
		       const std::string &modules_root = "/lib/modules");

// Picks the highest version ("6.1.0-9" < "6.1.0-56") among `versions` that
// start with `prefix`; empty if none.
std::string newest_version(const std::vector<std::string> &versions, const std::string &prefix);

std::string default_build_dir();
std::string default_qemu();
std::string default_emulator();
std::string default_agent();

// `rel` (a path relative to the directory of the running binary, as
// /proc/self/exe names it) made absolute; an absolute `rel` as it is. The
// VM tests get the paths of their helpers and of the source tree this way
// (tests/vm/CMakeLists.txt, ibstack_path_definitions): a compile line that
// named the clone's own location would miss ccache in every fresh clone.
std::string next_to_binary(const char *rel);

}  // namespace iblab
