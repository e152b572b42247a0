// SPDX-License-Identifier: GPL-2.0
#include "iblab/initramfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace fs = std::filesystem;

namespace iblab {

const std::vector<std::string> kGuestModules = {
	"virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_console",
	"virtio_net",  // the management network's NIC (mgmtnet.h)
};

namespace {

std::string hex8(uint32_t v)
{
	char b[9];
	snprintf(b, sizeof b, "%08X", v);
	return b;
}

uint32_t parse_hex8(std::string_view s)
{
	uint32_t v = 0;
	for (char c : s) {
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= static_cast<uint32_t>(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= static_cast<uint32_t>(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= static_cast<uint32_t>(c - 'A' + 10);
		else
			throw std::runtime_error("cpio: bad hex field");
	}
	return v;
}

void pad4(std::string &s)
{
	while (s.size() % 4)
		s.push_back('\0');
}

// "kernel/net/9p/9pnet.ko" -> "9pnet"; '-' and '_' are the same to kmod.
std::string module_name(std::string path)
{
	path = fs::path(path).filename().string();
	auto dot = path.find('.');
	if (dot != std::string::npos)
		path.resize(dot);
	for (auto &c : path)
		if (c == '-')
			c = '_';
	return path;
}

}  // namespace

void CpioWriter::add(const std::string &path, uint32_t mode, std::string_view data)
{
	std::string name = path;
	while (!name.empty() && name[0] == '/')
		name.erase(0, 1);
	out_ += "070701";
	out_ += hex8(ino_++);                            // ino
	out_ += hex8(mode);                              // mode
	out_ += hex8(0) + hex8(0);                       // uid gid
	out_ += hex8(1);                                 // nlink
	out_ += hex8(0);                                 // mtime
	out_ += hex8(static_cast<uint32_t>(data.size()));  // filesize
	out_ += hex8(0) + hex8(0) + hex8(0) + hex8(0);   // dev/rdev major minor
	out_ += hex8(static_cast<uint32_t>(name.size() + 1));
	out_ += hex8(0);                                 // check
	out_ += name;
	out_.push_back('\0');
	pad4(out_);
	out_.append(data);
	pad4(out_);
}

void CpioWriter::add_dir(const std::string &path, uint32_t mode) { add(path, S_IFDIR | mode, {}); }

void CpioWriter::add_file(const std::string &path, std::string_view data, uint32_t mode)
{
	add(path, S_IFREG | mode, data);
}

void CpioWriter::add_symlink(const std::string &path, const std::string &target)
{
	add(path, S_IFLNK | 0777, target);
}

std::string CpioWriter::finish()
{
	add("TRAILER!!!", 0, {});
	return std::move(out_);
}

std::vector<CpioEntry> parse_cpio(std::string_view a)
{
	std::vector<CpioEntry> entries;
	size_t pos = 0;
	for (;;) {
		if (a.size() - pos < 110 || a.substr(pos, 6) != "070701")
			throw std::runtime_error("cpio: bad header at offset " + std::to_string(pos));
		auto field = [&](int i) { return parse_hex8(a.substr(pos + 6 + 8 * i, 8)); };
		uint32_t mode = field(1);
		uint32_t filesize = field(6);
		uint32_t namesize = field(11);
		size_t name_at = pos + 110;
		if (namesize == 0 || a.size() < name_at + namesize)
			throw std::runtime_error("cpio: truncated name");
		std::string name(a.substr(name_at, namesize - 1));
		size_t data_at = (name_at + namesize + 3) & ~size_t(3);
		if (a.size() < data_at + filesize)
			throw std::runtime_error("cpio: truncated data of " + name);
		if (name == "TRAILER!!!")
			break;
		entries.push_back({name, mode, std::string(a.substr(data_at, filesize))});
		pos = (data_at + filesize + 3) & ~size_t(3);
	}
	return entries;
}

std::vector<std::string> module_load_order(const std::string &modules_dir,
					   const std::vector<std::string> &roots)
{
	std::ifstream dep(modules_dir + "/modules.dep");
	if (!dep)
		throw std::runtime_error("cannot read " + modules_dir + "/modules.dep");
	std::map<std::string, std::pair<std::string, std::vector<std::string>>> by_name;  // name -> (path, deps)
	std::string line;
	while (std::getline(dep, line)) {
		auto colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		std::string path = line.substr(0, colon);
		std::istringstream rest(line.substr(colon + 1));
		std::vector<std::string> deps;
		std::string d;
		while (rest >> d)
			deps.push_back(d);
		by_name[module_name(path)] = {path, deps};
	}
	std::set<std::string> builtin;
	{
		std::ifstream b(modules_dir + "/modules.builtin");
		while (std::getline(b, line))
			builtin.insert(module_name(line));
	}
	std::vector<std::string> order;
	std::set<std::string> seen;
	std::function<void(const std::string &, int)> visit = [&](const std::string &name, int depth) {
		if (depth > 64)
			throw std::runtime_error("module dependency loop at " + name);
		if (seen.count(name))
			return;
		auto it = by_name.find(name);
		if (it == by_name.end()) {
			if (builtin.count(name)) {
				seen.insert(name);
				return;
			}
			throw std::runtime_error("module " + name + " not found in " + modules_dir + "/modules.dep");
		}
		const auto &[path, deps] = it->second;
		// modules.dep lists all (transitive) dependencies; visit them first.
		for (const auto &d : deps)
			visit(module_name(d), depth + 1);
		if (!path.ends_with(".ko"))
			throw std::runtime_error("module " + path + " is compressed; the initramfs needs plain .ko files");
		seen.insert(name);
		order.push_back(path);
	};
	for (const auto &r : roots)
		visit(module_name(r), 0);
	return order;
}

std::string read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		throw std::runtime_error("cannot read " + path);
	std::ostringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

void write_file_atomic(const std::string &path, std::string_view data)
{
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	{
		std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
		if (!out)
			throw std::runtime_error("cannot write " + tmp);
		out.write(data.data(), static_cast<std::streamsize>(data.size()));
		if (!out)
			throw std::runtime_error("short write to " + tmp);
	}
	if (rename(tmp.c_str(), path.c_str()) < 0) {
		int e = errno;
		unlink(tmp.c_str());
		throw std::system_error(e, std::generic_category(), "rename " + tmp);
	}
}

uint64_t fnv1a64(std::string_view data, uint64_t h)
{
	for (unsigned char c : data) {
		h ^= c;
		h *= 0x100000001b3ull;
	}
	return h;
}

std::string build_initramfs(const InitramfsSpec &spec)
{
	if (spec.agent.empty())
		throw std::runtime_error("initramfs: no agent binary given");
	auto order = module_load_order(spec.modules_dir, spec.modules);
	CpioWriter w;
	for (const char *d : {"bin", "dev", "proc", "sys", "modules", "newroot"})
		w.add_dir(d);
	w.add_file("bin/busybox", read_file(spec.busybox), 0755);
	w.add_symlink("bin/sh", "busybox");
	w.add_file("init", spec.init_script, 0755);
	w.add_file("iblab-agent", read_file(spec.agent), 0755);
	std::string list;
	for (const auto &m : order) {
		std::string base = fs::path(m).filename().string();
		w.add_file("modules/" + base, read_file(spec.modules_dir + "/" + m));
		list += base + "\n";
	}
	w.add_file("modules.order", list);
	w.add_file("kernel-version", spec.kernel_version + "\n");
	return w.finish();
}

std::string cached_initramfs(const InitramfsSpec &spec, const std::string &cache_dir)
{
	uint64_t h = fnv1a64(spec.kernel_version);
	h = fnv1a64(spec.modules_dir, h);  // the same release can come from two kernel trees
	h = fnv1a64(spec.init_script, h);
	for (const auto &m : spec.modules)
		h = fnv1a64(m + "\n", h);
	h = fnv1a64(read_file(spec.busybox), h);
	h = fnv1a64(read_file(spec.agent), h);
	char key[17];
	snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
	std::string path = cache_dir + "/initramfs-" + spec.kernel_version + "-" + key + ".cpio";
	if (fs::exists(path))
		return path;
	fs::create_directories(cache_dir);
	write_file_atomic(path, build_initramfs(spec));
	return path;
}

}  // namespace iblab
