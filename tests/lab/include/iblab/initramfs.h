// SPDX-License-Identifier: GPL-2.0
// The guest initramfs: busybox, the virtio/9p/overlay modules (closure from
// modules.dep, dependencies first), the guest agent and /init.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iblab {

// Minimal cpio "newc" writer.
class CpioWriter {
public:
	void add_dir(const std::string &path, uint32_t mode = 0755);
	void add_file(const std::string &path, std::string_view data, uint32_t mode = 0644);
	void add_symlink(const std::string &path, const std::string &target);
	std::string finish();  // appends the trailer and returns the archive

private:
	void add(const std::string &path, uint32_t mode, std::string_view data);
	std::string out_;
	uint32_t ino_ = 1;
};

struct CpioEntry {
	std::string path;
	uint32_t mode = 0;
	std::string data;  // file contents or symlink target
};
// Parses a newc archive (for tests and `iblab initramfs --list`).
std::vector<CpioEntry> parse_cpio(std::string_view archive);

// Modules `roots` (names like "9pnet_virtio") and their dependencies, in load
// order, as paths relative to `modules_dir` (/lib/modules/<kver>). Modules
// built into the kernel (modules.builtin) are left out. Throws if one is
// missing or compressed.
std::vector<std::string> module_load_order(const std::string &modules_dir,
					   const std::vector<std::string> &roots);

// What the lab's initramfs holds by default.
extern const std::vector<std::string> kGuestModules;
// The /init script (tests/lab/guest-init.sh, embedded at build time).
extern const std::string_view kGuestInitScript;

struct InitramfsSpec {
	std::string kernel_version;
	std::string modules_dir;  // /lib/modules/<kver>
	std::string busybox = "/bin/busybox";
	std::string agent;        // path of the iblab-agent binary
	std::string init_script = std::string(kGuestInitScript);
	std::vector<std::string> modules = kGuestModules;
};

// Builds the archive in memory.
std::string build_initramfs(const InitramfsSpec &spec);

// Returns the path of a cached archive in `cache_dir`, building it if
// needed. The cache key covers the kernel version, the init script, the
// module list and the contents of busybox and the agent.
std::string cached_initramfs(const InitramfsSpec &spec, const std::string &cache_dir);

// FNV-1a 64, used for cache keys.
uint64_t fnv1a64(std::string_view data, uint64_t h = 0xcbf29ce484222325ull);

std::string read_file(const std::string &path);  // throws
void write_file_atomic(const std::string &path, std::string_view data);  // throws

}  // namespace iblab
