// SPDX-License-Identifier: GPL-2.0
// The lab itself in real guests, without the HCA: two guests (upstream and
// "ours" with a stand-in module), the guest root layout, concurrency,
// timeouts and the dmesg check.
#include <filesystem>
#include <fstream>
#include <thread>

#include "iblab/initramfs.h"
#include "vm_fixture.h"

namespace fs = std::filesystem;

namespace iblab::vmtest {
namespace {

class LabSmoke : public VmSuite {
protected:
	static void SetUpTestSuite()
	{
		kernel_ = find_kernel();
		// "Our" modules: a copy of the stock dummy.ko, so the test can see
		// that modprobe picks the one in updates/.
		mods_ = default_build_dir() + "/lab/smoke-modules";
		fs::create_directories(mods_ + "/drivers/net");
		fs::copy_file(kernel_.modules_dir + "/kernel/drivers/net/dummy.ko", mods_ + "/drivers/net/dummy.ko",
			      fs::copy_options::overwrite_existing);
		LabOptions o;
		o.guests = {{"up", Stack::Upstream}, {"our", Stack::Ours}};
		o.modules_dir = mods_;
		o.hca = false;
		o.dmesg_ignore = {"iblab_selftest"};
		StartLab(o, "LabSmoke");
	}
	static void TearDownTestSuite() { StopLab(); }
	static inline KernelInfo kernel_;
	static inline std::string mods_;
};

TEST_F(LabSmoke, GuestIdentity)
{
	for (const char *n : {"up", "our"}) {
		auto r = Run(guest(n), "hostname; uname -r; cat /proc/1/comm; echo $IBLAB_GUEST");
		ASSERT_TRUE(Ok(r));
		EXPECT_EQ(r.output, std::string(n) + "\n" + kernel_.version + "\niblab-agent\n" + n + "\n");
		EXPECT_GT(guest(n).boot_seconds(), 0.5);
	}
}

TEST_F(LabSmoke, RootLayout)
{
	Guest &g = guest("up");
	auto w = Run(g, "set -e; for d in /tmp /run /etc /var /root /lib/modules/$(uname -r) /dev/shm; do "
			"touch $d/iblab-w; rm $d/iblab-w; done; echo ok");
	EXPECT_TRUE(Ok(w));
	EXPECT_EQ(w.output, "ok\n");
	auto ro = Run(g, "touch /usr/iblab-w");
	EXPECT_NE(ro.status, 0) << "the host root must be read-only";
	EXPECT_TRUE(Ok(Run(g, "test -c /dev/null && test -d /proc/self && test -d /sys/class && "
			      "test -d /dev/pts && ! pidof systemd-udevd && ! pidof systemd")));
}

TEST_F(LabSmoke, OurModulesOverrideUpstream)
{
	auto ours = Run(guest("our"), "modinfo -n dummy && modprobe dummy && grep -c '^dummy ' /proc/modules");
	ASSERT_TRUE(Ok(ours));
	EXPECT_EQ(ours.output, "/lib/modules/" + kernel_.version + "/updates/drivers/net/dummy.ko\n1\n");
	auto up = Run(guest("up"), "modinfo -n dummy");
	ASSERT_TRUE(Ok(up));
	EXPECT_EQ(up.output, "/lib/modules/" + kernel_.version + "/kernel/drivers/net/dummy.ko\n");
}

TEST_F(LabSmoke, ConcurrentExecsAndTimeout)
{
	auto t0 = std::chrono::steady_clock::now();
	auto a = guest("up").start_exec("sleep 3; echo a", 60s);
	auto b = guest("up").start_exec("sleep 3; echo b", 60s);
	auto c = guest("our").exec("sleep 3; echo c", 60s);
	ASSERT_TRUE(a->wait_for(30s));
	ASSERT_TRUE(b->wait_for(30s));
	EXPECT_EQ(a->result().output, "a\n");
	EXPECT_EQ(b->result().output, "b\n");
	EXPECT_EQ(c.output, "c\n");
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);

	auto t = Run(guest("up"), "sleep 1000 & sleep 1000", 2s);
	EXPECT_TRUE(t.timed_out);
	auto left = Run(guest("up"), "pgrep -x sleep; true");
	EXPECT_EQ(left.output, "") << "the timed-out command's process group must be gone";
}

TEST_F(LabSmoke, DmesgCheckerSeesInjectedWarning)
{
	Guest &g = guest("up");
	ASSERT_TRUE(Ok(Run(g, "echo '<4>WARNING: CPU: 0 PID: 1 at fake.c:1 iblab_selftest+0x0/0x1' > /dev/kmsg")));
	auto text = g.fetch_dmesg();
	ASSERT_TRUE(text);
	auto hits = DmesgChecker().check(*text);  // without the suite's ignore filter
	ASSERT_EQ(hits.size(), 1u) << format_hits("dmesg", hits);
	EXPECT_EQ(hits[0].rule, "warning");
	EXPECT_TRUE(lab_->checker().check(*text).empty());  // the suite ignores it
}

TEST_F(LabSmoke, ConsoleLogIsKept)
{
	std::string console = read_file(guest("our").console_log_path());
	EXPECT_NE(console.find("Linux version"), std::string::npos);
	EXPECT_NE(console.find("iblab-init: installed 1 of our modules"), std::string::npos);
}

}  // namespace
}  // namespace iblab::vmtest
