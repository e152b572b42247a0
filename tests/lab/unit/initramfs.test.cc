// SPDX-License-Identifier: GPL-2.0
#include "iblab/initramfs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "iblab/config.h"

namespace fs = std::filesystem;

namespace iblab {
namespace {

TEST(Cpio, WriterRoundTrip)
{
	CpioWriter w;
	w.add_dir("bin");
	w.add_file("bin/x", "hello", 0755);
	w.add_file("empty", "");
	w.add_symlink("bin/sh", "busybox");
	std::string a = w.finish();
	EXPECT_EQ(a.size() % 4, 0u);
	EXPECT_EQ(a.substr(0, 6), "070701");
	EXPECT_NE(a.find("TRAILER!!!"), std::string::npos);
	auto e = parse_cpio(a);
	ASSERT_EQ(e.size(), 4u);
	EXPECT_EQ(e[0].path, "bin");
	EXPECT_TRUE(S_ISDIR(e[0].mode));
	EXPECT_EQ(e[1].path, "bin/x");
	EXPECT_EQ(e[1].data, "hello");
	EXPECT_EQ(e[1].mode, S_IFREG | 0755u);
	EXPECT_EQ(e[2].data, "");
	EXPECT_TRUE(S_ISLNK(e[3].mode));
	EXPECT_EQ(e[3].data, "busybox");
	EXPECT_THROW(parse_cpio(a.substr(0, a.size() / 2)), std::runtime_error);
}

class FakeModules : public ::testing::Test {
protected:
	void SetUp() override
	{
		dir_ = fs::temp_directory_path() / ("iblab-mods-" + std::to_string(getpid()));
		fs::create_directories(dir_ / "kernel/a");
		std::ofstream(dir_ / "modules.dep") << "kernel/a/top.ko: kernel/a/mid.ko kernel/a/base.ko\n"
						       "kernel/a/mid.ko: kernel/a/base.ko\n"
						       "kernel/a/base.ko:\n"
						       "kernel/a/other-mod.ko: kernel/a/base.ko kernel/a/zipped.ko.xz\n"
						       "kernel/a/zipped.ko.xz:\n"
						       "kernel/a/uses-builtin.ko: kernel/a/base.ko\n";
		std::ofstream(dir_ / "modules.builtin") << "kernel/fs/builtin_fs.ko\n";
	}
	void TearDown() override { fs::remove_all(dir_); }
	fs::path dir_;
};

TEST_F(FakeModules, CompressedModulesAreRefused)
{
	// other_mod needs a compressed module, which busybox insmod cannot load.
	EXPECT_THROW(module_load_order(dir_, {"other_mod"}), std::runtime_error);
}

TEST_F(FakeModules, Order)
{
	auto o = module_load_order(dir_, {"top", "uses_builtin", "builtin_fs", "mid"});
	EXPECT_EQ(o, (std::vector<std::string>{"kernel/a/base.ko", "kernel/a/mid.ko", "kernel/a/top.ko",
					       "kernel/a/uses-builtin.ko"}));
	EXPECT_THROW(module_load_order(dir_, {"nonexistent"}), std::runtime_error);
}

TEST(Initramfs, RealKernelModuleOrder)
{
	KernelInfo k;
	try {
		k = find_kernel();
	} catch (const std::exception &e) {
		GTEST_SKIP() << e.what();
	}
	auto o = module_load_order(k.modules_dir, kGuestModules);
	std::map<std::string, size_t> pos;
	for (size_t i = 0; i < o.size(); i++)
		pos[fs::path(o[i]).filename().string()] = i;
	for (const char *m : {"virtio_ring.ko", "virtio.ko", "virtio_pci.ko", "9pnet.ko", "9pnet_virtio.ko", "9p.ko",
			      "overlay.ko", "virtio_console.ko", "netfs.ko", "fscache.ko", "virtio_net.ko",
			      "net_failover.ko", "failover.ko"})
		EXPECT_TRUE(pos.count(m)) << m;
	EXPECT_LT(pos["failover.ko"], pos["net_failover.ko"]);
	EXPECT_LT(pos["net_failover.ko"], pos["virtio_net.ko"]);
	EXPECT_LT(pos["virtio_ring.ko"], pos["virtio.ko"]);
	EXPECT_LT(pos["virtio.ko"], pos["virtio_pci.ko"]);
	EXPECT_LT(pos["virtio_pci_modern_dev.ko"], pos["virtio_pci.ko"]);
	EXPECT_LT(pos["netfs.ko"], pos["fscache.ko"]);
	EXPECT_LT(pos["fscache.ko"], pos["9p.ko"]);
	EXPECT_LT(pos["9pnet.ko"], pos["9pnet_virtio.ko"]);
}

TEST(Initramfs, ArchiveHasTheFilesAndIsCached)
{
	KernelInfo k;
	try {
		k = find_kernel();
	} catch (const std::exception &e) {
		GTEST_SKIP() << e.what();
	}
	InitramfsSpec s;
	s.kernel_version = k.version;
	s.modules_dir = k.modules_dir;
	s.agent = IBLAB_AGENT_BIN;
	auto entries = parse_cpio(build_initramfs(s));
	std::map<std::string, CpioEntry> by;
	for (auto &e : entries)
		by[e.path] = e;
	ASSERT_TRUE(by.count("init"));
	EXPECT_EQ(by["init"].mode & 0777, 0755u);
	EXPECT_EQ(by["init"].data.substr(0, 9), "#!/bin/sh");
	EXPECT_NE(by["init"].data.find("switch_root"), std::string::npos);
	EXPECT_EQ(by["bin/busybox"].data, read_file("/bin/busybox"));
	EXPECT_EQ(by["iblab-agent"].data, read_file(IBLAB_AGENT_BIN));
	EXPECT_EQ(by["bin/sh"].data, "busybox");
	EXPECT_EQ(by["kernel-version"].data, k.version + "\n");
	ASSERT_TRUE(by.count("modules.order"));
	std::string order = by["modules.order"].data;
	EXPECT_LT(order.find("virtio_ring.ko"), order.find("virtio_pci.ko"));
	EXPECT_LT(order.find("9pnet.ko"), order.find("9p.ko"));
	for (const char *m : {"virtio_pci.ko", "9pnet_virtio.ko", "9p.ko", "overlay.ko", "virtio_console.ko"}) {
		ASSERT_TRUE(by.count(std::string("modules/") + m)) << m;
		EXPECT_EQ(by[std::string("modules/") + m].data.substr(1, 3), "ELF");
	}

	fs::path cache = fs::temp_directory_path() / ("iblab-cache-" + std::to_string(getpid()));
	std::string p1 = cached_initramfs(s, cache);
	auto t1 = fs::last_write_time(p1);
	std::string p2 = cached_initramfs(s, cache);
	EXPECT_EQ(p1, p2);
	EXPECT_EQ(fs::last_write_time(p2), t1);
	EXPECT_NE(p1.find(k.version), std::string::npos);
	s.init_script += "# changed\n";
	std::string p3 = cached_initramfs(s, cache);
	EXPECT_NE(p1, p3);  // the key covers the init script
	fs::remove_all(cache);
}

TEST(Config, NewestVersion)
{
	EXPECT_EQ(newest_version({"6.1.0-9-amd64", "6.1.0-56-amd64", "6.1.0-10-amd64", "6.5.0-1-amd64"}, "6.1."),
		  "6.1.0-56-amd64");
	EXPECT_EQ(newest_version({"5.10.0-1-amd64"}, "6.1."), "");
}

TEST(Config, FindKernelInFakeBoot)
{
	fs::path d = fs::temp_directory_path() / ("iblab-boot-" + std::to_string(getpid()));
	fs::create_directories(d / "boot");
	fs::create_directories(d / "mods/6.1.0-9-amd64");
	fs::create_directories(d / "mods/6.1.0-12-amd64");
	for (const char *v : {"6.1.0-9-amd64", "6.1.0-12-amd64", "6.1.0-99-amd64" /* no modules */})
		std::ofstream(d / "boot" / (std::string("vmlinuz-") + v)) << "x";
	auto k = find_kernel("", d / "boot", d / "mods");
	EXPECT_EQ(k.version, "6.1.0-12-amd64");
	EXPECT_EQ(k.image, (d / "boot/vmlinuz-6.1.0-12-amd64").string());
	EXPECT_EQ(find_kernel("6.1.0-9-amd64", d / "boot", d / "mods").version, "6.1.0-9-amd64");
	EXPECT_THROW(find_kernel("6.1.0-99-amd64", d / "boot", d / "mods"), std::runtime_error);
	fs::remove_all(d);
}

}  // namespace
}  // namespace iblab
