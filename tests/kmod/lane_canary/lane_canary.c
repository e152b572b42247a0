// SPDX-License-Identifier: GPL-2.0
/*
 * lane_canary - a module that commits, on request, one of the bugs the
 * debug kernel lane exists to catch. Test-only: the lab's canary test
 * (tests/vm/lane_canary.test.cc) loads it on the debug kernel and checks
 * that each bug is reported. Never load it anywhere else.
 *
 *   modprobe lane_canary fault=none    nothing wrong (nothing may be reported)
 *   modprobe lane_canary fault=lock    lock-order inversion (lockdep)
 *   modprobe lane_canary fault=sleep   a mutex taken under a spinlock
 *                                      (DEBUG_ATOMIC_SLEEP)
 *   modprobe lane_canary fault=uaf     use after free (KASAN)
 *   modprobe lane_canary fault=leak    an object nobody points to (kmemleak)
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

static char *fault = "none";
module_param(fault, charp, 0444);
MODULE_PARM_DESC(fault, "the bug to commit at load: none, lock, sleep, uaf or leak");

/*
 * Two mutexes with no rule between them on purpose: canary_lock() takes
 * them in both orders, which is the bug.
 */
static DEFINE_MUTEX(canary_a);
static DEFINE_MUTEX(canary_b);

/*
 * Held by canary_sleep() around a mutex_lock() of canary_c, which is the
 * bug (mutex_lock() may sleep; uncontended, it does not, so only
 * DEBUG_ATOMIC_SLEEP's check sees it).
 */
static DEFINE_SPINLOCK(canary_spin);
static DEFINE_MUTEX(canary_c);

static void canary_lock(void)
{
	mutex_lock(&canary_a);
	mutex_lock(&canary_b);
	mutex_unlock(&canary_b);
	mutex_unlock(&canary_a);

	mutex_lock(&canary_b);
	mutex_lock(&canary_a);
	mutex_unlock(&canary_a);
	mutex_unlock(&canary_b);
}

static void canary_sleep(void)
{
	spin_lock(&canary_spin);
	mutex_lock(&canary_c);
	mutex_unlock(&canary_c);
	spin_unlock(&canary_spin);
}

static int canary_uaf(void)
{
	u8 *p = kmalloc(32, GFP_KERNEL);
	u8 v;

	if (!p)
		return -ENOMEM;
	memset(p, 0x5a, 32);
	kfree(p);
	v = READ_ONCE(p[7]);
	pr_info("lane_canary: read %#x from a freed object\n", v);
	return 0;
}

/*
 * Not inlined into the __init caller, whose text is freed after the load:
 * kmemleak's backtrace of the object must name a function of ours.
 */
static noinline int canary_leak(void)
{
	u8 *p = kmalloc(96, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	memset(p, 0x6c, 96);
	/* The only pointer to it dies here. */
	pr_info("lane_canary: dropped a 96-byte object\n");
	return 0;
}

static int __init lane_canary_init(void)
{
	pr_info("lane_canary: fault=%s\n", fault);
	if (!strcmp(fault, "none"))
		return 0;
	if (!strcmp(fault, "lock")) {
		canary_lock();
		return 0;
	}
	if (!strcmp(fault, "sleep")) {
		canary_sleep();
		return 0;
	}
	if (!strcmp(fault, "uaf"))
		return canary_uaf();
	if (!strcmp(fault, "leak"))
		return canary_leak();
	pr_err("lane_canary: unknown fault '%s'\n", fault);
	return -EINVAL;
}

static void __exit lane_canary_exit(void)
{
	pr_info("lane_canary: unloaded\n");
}

module_init(lane_canary_init);
module_exit(lane_canary_exit);
MODULE_DESCRIPTION("Test-only: commits the bugs the debug kernel lane must catch");
MODULE_LICENSE("GPL");
