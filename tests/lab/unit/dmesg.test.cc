// SPDX-License-Identifier: GPL-2.0
#include "iblab/dmesg.h"

#include <gtest/gtest.h>

#include "iblab/initramfs.h"

namespace iblab {
namespace {

std::optional<std::string> M(std::string_view line) { return DmesgChecker().match(line); }

TEST(DmesgChecker, WarnSplat)
{
	EXPECT_EQ(M("[   12.345678] WARNING: CPU: 0 PID: 123 at drivers/infiniband/hw/mthca/mthca_cmd.c:123 mthca_cmd+0x1/0x2 [ib_mthca]"),
		  "warning");
	EXPECT_EQ(M("[   12.345678] ------------[ cut here ]------------"), "cut-here");
	EXPECT_EQ(M("WARNING: at kernel/foo.c:12 bar()"), "warning");
}

TEST(DmesgChecker, BugAndOops)
{
	EXPECT_EQ(M("[    3.1] BUG: kernel NULL pointer dereference, address: 0000000000000008"), "bug");
	EXPECT_EQ(M("[    3.1] BUG: unable to handle page fault for address: ffffc90000123000"), "bug");
	EXPECT_EQ(M("[    3.1] kernel BUG at mm/slub.c:4318!"), "bug");
	EXPECT_EQ(M("[    3.1] BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580"), "bug");
	EXPECT_EQ(M("[   60.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [modprobe:123]"), "bug");
	EXPECT_EQ(M("[    3.2] BUG kmalloc-64 (Tainted: G    B      ): Poison overwritten"), "bug");
	EXPECT_EQ(M("[    3.2] Oops: 0002 [#1] PREEMPT SMP PTI"), "oops");
	EXPECT_EQ(M("[    3.2] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP"), "oops");
	EXPECT_EQ(M("[    3.3] Kernel panic - not syncing: Fatal exception"), "panic");
	EXPECT_EQ(M("[    3.3] Call Trace:"), "call-trace");
}

TEST(DmesgChecker, SanitizersLockdepLeaks)
{
	EXPECT_TRUE(M("[    5.0] BUG: KASAN: use-after-free in mthca_free_qp+0x12/0x300 [ib_mthca]"));
	EXPECT_EQ(M("[    5.0] UBSAN: array-index-out-of-bounds in drivers/infiniband/core/mad.c:12:3"), "ubsan");
	EXPECT_EQ(M("[    5.0] WARNING: possible circular locking dependency detected"), "warning");
	EXPECT_EQ(M("[    5.0] [ INFO: possible recursive locking detected ]"), "lockdep");
	EXPECT_EQ(M("[    5.0] [ INFO: inconsistent lock state ]"), "lockdep");
	EXPECT_EQ(M(" *** DEADLOCK ***   Possible unsafe locking scenario:"), "lockdep");
	EXPECT_EQ(M("[   70.0] kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"), "kmemleak");
	EXPECT_EQ(M("unreferenced object 0xffff888012345678 (size 64):"), "kmemleak");
	EXPECT_EQ(M("[  250.0] INFO: task modprobe:123 blocked for more than 120 seconds."), "hung-task");
	EXPECT_EQ(M("[  250.0] rcu: INFO: rcu_sched self-detected stall on CPU"), "rcu-stall");
}

TEST(DmesgChecker, Prefixes)
{
	// /dev/kmsg, syslog priority, dmesg -x, caller id, CR from the serial console.
	EXPECT_EQ(M("4,1234,5678901,-;WARNING: CPU: 0 PID: 1 at a.c:1 f+0x0/0x1"), "warning");
	EXPECT_EQ(M("<4>[    1.000000] WARNING: CPU: 0 PID: 1 at a.c:1 f+0x0/0x1"), "warning");
	EXPECT_EQ(M("kern  :warn  : [    1.000000] WARNING: CPU: 0 PID: 1 at a.c:1 f+0x0/0x1"), "warning");
	EXPECT_EQ(M("[    1.000000][    T1] BUG: kernel NULL pointer dereference\r"), "bug");
	EXPECT_EQ(DmesgChecker::strip_prefix("[    1.000000] hello"), "hello");
	EXPECT_EQ(DmesgChecker::timestamp("[   12.500000] x"), 12.5);
	EXPECT_FALSE(DmesgChecker::timestamp("no timestamp [here]"));
}

TEST(DmesgChecker, NormalLinesDoNotTrip)
{
	for (const char *l : {
		     "[    0.1] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks, data leaks possible!",
		     "[    0.1] Kernel command line: console=ttyS0 oops=panic panic=-1 iblab.name=vm0",
		     "[    0.1] MDS: CPU bug present and SMT on, data leak possible.",
		     "[    0.1] [Firmware Bug]: TSC doesn't count with P0 frequency!",
		     "[    0.2] ib_mthca: Mellanox InfiniBand HCA driver v1.0-ark (April 4, 2008)",
		     "[    0.2] ib_mthca 0000:00:04.0: HCA FW version 5.3.0 is old (5.3.000 is current).",
		     "[    0.2] Spectre V2 : WARNING: Unprivileged eBPF is enabled with eIBRS on, data leaks possible via Spectre v2 BHB attacks!",
		     "[    0.3] kmemleak: Kernel memory leak detector initialized (mem pool available: 15731)",
		     "[    0.3] debug: unmapping init [mem 0xffffffff82a6f000-0xffffffff82a6ffff]",
		     "[    0.3] iblab-agent: ready on /dev/vport1p1",
		     "[    0.4] lockdep: fixing up alternatives",
		     "[    0.4] BUGS: none",
		     "[    0.5] x86/cpu: User Mode Instruction Prevention (UMIP) activated",
		     "[    0.5] This is a test of call trace: nothing",
	     })
		EXPECT_FALSE(M(l)) << l;
}

TEST(DmesgChecker, IgnoreFilter)
{
	DmesgChecker c;
	c.ignore("WARNING: CPU: [0-9]+ PID: [0-9]+ at drivers/fake/");
	EXPECT_FALSE(c.match("[ 1.0] WARNING: CPU: 0 PID: 1 at drivers/fake/x.c:1 f"));
	EXPECT_TRUE(c.match("[ 1.0] WARNING: CPU: 0 PID: 1 at drivers/real/x.c:1 f"));
}

TEST(DmesgChecker, CheckReportsLineNumbers)
{
	auto hits = DmesgChecker().check("[ 1.0] fine\n[ 2.0] Oops: 0000 [#1] SMP\n[ 3.0] fine\n[ 4.0] BUG: x\n");
	ASSERT_EQ(hits.size(), 2u);
	EXPECT_EQ(hits[0].line_no, 2u);
	EXPECT_EQ(hits[0].rule, "oops");
	EXPECT_EQ(hits[1].line_no, 4u);
	EXPECT_NE(format_hits("dmesg.txt", hits).find("dmesg.txt:4: [bug]"), std::string::npos);
}

TEST(DmesgChecker, RealGuestBootIsClean)
{
	// A console log of the lab's guest booting the Debian kernel under TCG.
	std::string log = read_file(IBLAB_TEST_DATA "/console-normal-boot.log");
	ASSERT_GT(log.size(), 10000u);
	auto hits = DmesgChecker().check(log);
	EXPECT_TRUE(hits.empty()) << format_hits("console", hits);
}

}  // namespace
}  // namespace iblab
