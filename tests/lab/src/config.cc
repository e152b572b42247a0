// SPDX-License-Identifier: GPL-2.0
#include "iblab/config.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

#ifndef IBLAB_DEFAULT_BUILD_DIR
#define IBLAB_DEFAULT_BUILD_DIR "build"
#endif
#ifndef IBLAB_DEFAULT_QEMU
#define IBLAB_DEFAULT_QEMU IBLAB_DEFAULT_BUILD_DIR "/qemu/qemu-system-x86_64"
#endif
#ifndef IBLAB_DEFAULT_EMULATOR
#define IBLAB_DEFAULT_EMULATOR IBLAB_DEFAULT_BUILD_DIR "/emulator/server/ibemu"
#endif
#ifndef IBLAB_DEFAULT_AGENT
#define IBLAB_DEFAULT_AGENT IBLAB_DEFAULT_BUILD_DIR "/tests/lab/iblab-agent"
#endif

namespace iblab {
namespace {

std::string env_or(const char *name, const std::string &dflt)
{
	const char *v = std::getenv(name);
	return v && *v ? std::string(v) : dflt;
}

}  // namespace

std::string newest_version(const std::vector<std::string> &versions, const std::string &prefix)
{
	std::string best;
	for (const auto &v : versions)
		if (v.starts_with(prefix) && (best.empty() || strverscmp(v.c_str(), best.c_str()) > 0))
			best = v;
	return best;
}

KernelInfo find_kernel(const std::string &version, const std::string &boot_dir, const std::string &modules_root)
{
	std::string want = version.empty() ? env_or("IBLAB_KERNEL", "") : version;
	if (want.empty()) {
		std::vector<std::string> found;
		std::error_code ec;
		for (const auto &e : fs::directory_iterator(boot_dir, ec)) {
			std::string n = e.path().filename().string();
			if (!n.starts_with("vmlinuz-"))
				continue;
			std::string v = n.substr(strlen("vmlinuz-"));
			if (fs::is_directory(modules_root + "/" + v))
				found.push_back(v);
		}
		want = newest_version(found, "6.1.");
		if (want.empty())
			throw std::runtime_error("no 6.1 kernel with modules found in " + boot_dir +
						 " (set IBLAB_KERNEL)");
	}
	KernelInfo k{want, boot_dir + "/vmlinuz-" + want, modules_root + "/" + want};
	if (!fs::exists(k.image))
		throw std::runtime_error("kernel image " + k.image + " not found");
	if (!fs::is_directory(k.modules_dir))
		throw std::runtime_error("kernel modules " + k.modules_dir + " not found");
	return k;
}

std::string default_build_dir() { return env_or("IBLAB_BUILD_DIR", IBLAB_DEFAULT_BUILD_DIR); }

std::string default_qemu()
{
	if (const char *v = std::getenv("IBLAB_QEMU"); v && *v)
		return v;
	std::string p = IBLAB_DEFAULT_QEMU;
	if (fs::exists(p))
		return p;
	// The project's QEMU build cache (emulator/qemu/build-qemu.sh).
	if (const char *home = std::getenv("HOME")) {
		std::error_code ec;
		fs::file_time_type best_time{};
		std::string best;
		for (const auto &e : fs::directory_iterator(std::string(home) + "/.cache/ibstack", ec)) {
			if (!e.path().filename().string().starts_with("qemu-"))
				continue;
			auto bin = e.path() / "qemu-system-x86_64";
			std::error_code ec2;
			auto t = fs::last_write_time(bin, ec2);
			if (!ec2 && (best.empty() || t > best_time)) {
				best = bin.string();
				best_time = t;
			}
		}
		if (!best.empty())
			return best;
	}
	return p;
}

std::string default_emulator() { return env_or("IBLAB_EMULATOR", IBLAB_DEFAULT_EMULATOR); }

std::string default_agent() { return env_or("IBLAB_AGENT", IBLAB_DEFAULT_AGENT); }

std::string next_to_binary(const char *rel)
{
	const fs::path p(rel);
	if (p.is_absolute())
		return p.string();
	// The binary does not move while it runs: read its link once.
	static const fs::path dir = [] {
		std::error_code ec;
		const fs::path self = fs::read_symlink("/proc/self/exe", ec);
		if (ec)
			throw std::runtime_error(std::string("next_to_binary: /proc/self/exe: ") + ec.message());
		return self.parent_path();
	}();
	return (dir / p).lexically_normal().string();
}

}  // namespace iblab
