// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the GID/P_Key/LMC cache (cache.c) on a registered test
 * device (ktest_dev.h): lookups by index and by value, bounds, the P_Key
 * membership rule, and refreshes after port events, dispatched with
 * interrupts off as a driver's interrupt handler would.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>

#include <rdma/ib_cache.h>

#include "core_priv.h"
#include "ktest_dev.h"

static struct ktest_dev *ct_dev(struct kunit *test)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "ctest%d");

	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);
	return kd;
}

static void ct_put(struct ktest_dev *kd)
{
	ib_unregister_device(&kd->ibdev);
	ib_dealloc_device(&kd->ibdev);
}

static void ct_port_event(struct ktest_dev *kd, enum ib_event_type type,
			  u8 port)
{
	struct ib_event ev = {
		.device = &kd->ibdev,
		.event = type,
		.element.port_num = port,
	};
	unsigned long flags;

	local_irq_save(flags);
	ib_dispatch_event(&ev);
	local_irq_restore(flags);
	ib_cache_flush();
}

static void ct_gid_lookups(struct kunit *test)
{
	struct ktest_dev *kd = ct_dev(test);
	union ib_gid gid;
	u16 index;
	u8 port;

	KUNIT_ASSERT_EQ(test, ib_get_cached_gid(&kd->ibdev, 2, 1, &gid), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&gid, &kd->gids[1][1], sizeof(gid)), 0);
	KUNIT_EXPECT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, 3, &gid), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&gid, &kd->gids[0][3], sizeof(gid)), 0);

	/* ports 0 and 3 do not exist; the table has 4 entries */
	KUNIT_EXPECT_EQ(test, ib_get_cached_gid(&kd->ibdev, 0, 0, &gid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ib_get_cached_gid(&kd->ibdev, 3, 0, &gid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, KTEST_GIDS,
						&gid), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, -1, &gid),
			-EINVAL);

	gid = kd->gids[1][2];
	KUNIT_ASSERT_EQ(test, ib_find_cached_gid(&kd->ibdev, &gid, &port,
						 &index), 0);
	KUNIT_EXPECT_EQ(test, port, 2);
	KUNIT_EXPECT_EQ(test, index, 2);
	/* either output may be left out */
	KUNIT_EXPECT_EQ(test, ib_find_cached_gid(&kd->ibdev, &gid, NULL,
						 NULL), 0);

	gid.raw[0] = 0xff;
	KUNIT_EXPECT_EQ(test, ib_find_cached_gid(&kd->ibdev, &gid, &port,
						 &index), -ENOENT);
	ct_put(kd);
}

static void ct_pkey_lookups(struct kunit *test)
{
	struct ktest_dev *kd = ct_dev(test);
	u16 pkey, index;

	KUNIT_ASSERT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 1, 0, &pkey), 0);
	KUNIT_EXPECT_EQ(test, pkey, 0xffff);
	KUNIT_ASSERT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 2, 3, &pkey), 0);
	KUNIT_EXPECT_EQ(test, pkey, 0x8203);
	KUNIT_EXPECT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 2, KTEST_PKEYS,
						 &pkey), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 5, 0, &pkey),
			-EINVAL);

	/* the membership bit is ignored in the match */
	KUNIT_ASSERT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 1, 0x7fff,
						  &index), 0);
	KUNIT_EXPECT_EQ(test, index, 0);
	KUNIT_ASSERT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 2, 0x0202,
						  &index), 0);
	KUNIT_EXPECT_EQ(test, index, 2);
	KUNIT_EXPECT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 1, 0x0202,
						  &index), -ENOENT);
	KUNIT_EXPECT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 0, 0xffff,
						  &index), -EINVAL);

	/* a limited member at 1 and a full member at 3: the full one wins */
	kd->pkeys[0][1] = 0x0555;
	kd->pkeys[0][3] = 0x8555;
	ct_port_event(kd, IB_EVENT_PKEY_CHANGE, 1);
	KUNIT_ASSERT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 1, 0x0555,
						  &index), 0);
	KUNIT_EXPECT_EQ(test, index, 3);
	/* with only limited members, the first of them */
	kd->pkeys[0][3] = 0x0555;
	ct_port_event(kd, IB_EVENT_PKEY_CHANGE, 1);
	KUNIT_ASSERT_EQ(test, ib_find_cached_pkey(&kd->ibdev, 1, 0x8555,
						  &index), 0);
	KUNIT_EXPECT_EQ(test, index, 1);
	ct_put(kd);
}

/* Each refreshing event re-reads the port it names, and only that port. */
static void ct_refresh_on_events(struct kunit *test)
{
	static const enum ib_event_type refreshing[] = {
		IB_EVENT_PORT_ACTIVE, IB_EVENT_PORT_ERR, IB_EVENT_LID_CHANGE,
		IB_EVENT_PKEY_CHANGE, IB_EVENT_SM_CHANGE,
		IB_EVENT_CLIENT_REREGISTER, IB_EVENT_GID_CHANGE,
	};
	struct ktest_dev *kd = ct_dev(test);
	union ib_gid gid;
	u16 pkey;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(refreshing); i++) {
		u16 want = 0x8000 | (0x100 + i);

		kd->gids[1][0].raw[15] = 0x40 + i;
		kd->gids[0][0].raw[15] = 0x80 + i;
		kd->pkeys[1][1] = want;
		ct_port_event(kd, refreshing[i], 2);

		KUNIT_ASSERT_EQ(test, ib_get_cached_gid(&kd->ibdev, 2, 0,
							&gid), 0);
		KUNIT_EXPECT_EQ_MSG(test, gid.raw[15], 0x40 + i, "%s",
				    ib_event_msg(refreshing[i]));
		KUNIT_ASSERT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 2, 1,
							 &pkey), 0);
		KUNIT_EXPECT_EQ(test, pkey, want);
		/* port 1 was not named: its snapshot is the old one */
		KUNIT_ASSERT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, 0,
							&gid), 0);
		KUNIT_EXPECT_NE(test, gid.raw[15], 0x80 + i);
	}
	ct_put(kd);
}

/* Events that say nothing about the tables leave the cache alone. */
static void ct_other_events_ignored(struct kunit *test)
{
	struct ktest_dev *kd = ct_dev(test);
	union ib_gid before, after;
	struct ib_event ev = {
		.device = &kd->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
		.element.port_num = 1,
	};

	KUNIT_ASSERT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, 1, &before), 0);
	kd->gids[0][1].raw[8] ^= 0xff;
	ib_dispatch_event(&ev);
	ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
	ib_dispatch_event(&ev);
	ib_cache_flush();
	KUNIT_ASSERT_EQ(test, ib_get_cached_gid(&kd->ibdev, 1, 1, &after), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&before, &after, sizeof(before)), 0);
	ct_put(kd);
}

static void ct_lmc(struct kunit *test)
{
	struct ktest_dev *kd;
	u8 lmc;

	kd = ktest_dev_alloc(test, "ctest%d");
	kd->lmc[1] = 2;
	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);

	KUNIT_ASSERT_EQ(test, ib_get_cached_lmc(&kd->ibdev, 2, &lmc), 0);
	KUNIT_EXPECT_EQ(test, lmc, 2);
	KUNIT_ASSERT_EQ(test, ib_get_cached_lmc(&kd->ibdev, 1, &lmc), 0);
	KUNIT_EXPECT_EQ(test, lmc, 0);
	KUNIT_EXPECT_EQ(test, ib_get_cached_lmc(&kd->ibdev, 3, &lmc), -EINVAL);

	kd->lmc[0] = 7;
	ct_port_event(kd, IB_EVENT_LID_CHANGE, 1);
	KUNIT_ASSERT_EQ(test, ib_get_cached_lmc(&kd->ibdev, 1, &lmc), 0);
	KUNIT_EXPECT_EQ(test, lmc, 7);
	ct_put(kd);
}

/* The readers work with interrupts off, as the MAD layer's completions use them. */
static void ct_readers_atomic(struct kunit *test)
{
	struct ktest_dev *kd = ct_dev(test);
	unsigned long flags;
	union ib_gid gid;
	int ret_gid, ret_pkey;
	u16 index;

	gid = kd->gids[0][1];
	local_irq_save(flags);
	ret_gid = ib_find_cached_gid(&kd->ibdev, &gid, NULL, &index);
	ret_pkey = ib_find_cached_pkey(&kd->ibdev, 1, 0xffff, &index);
	local_irq_restore(flags);
	KUNIT_EXPECT_EQ(test, ret_gid, 0);
	KUNIT_EXPECT_EQ(test, ret_pkey, 0);
	ct_put(kd);
}

/*
 * A registration racing a P_Key change: registration's first fill has
 * read the old table of port 1, then the table changes and the driver
 * says so. The refresh that event queues must end up in the cache, not
 * the first fill's older snapshot.
 */
#define CT_FRESH_PKEY	0x8777

static atomic_t ct_race_armed;

static int ct_racing_query_pkey(struct ib_device *ibdev, u8 port, u16 index,
				u16 *pkey)
{
	int ret = ktest_query_pkey(ibdev, port, index, pkey);
	struct ib_event ev = {
		.device = ibdev,
		.event = IB_EVENT_PKEY_CHANGE,
		.element.port_num = 1,
	};
	unsigned long flags, end;
	u16 now;

	/* once, in the first fill, after port 1's last entry was read */
	if (port != 1 || index != KTEST_PKEYS - 1 ||
	    !atomic_xchg(&ct_race_armed, 0))
		return ret;

	to_ktest(ibdev)->pkeys[0][1] = CT_FRESH_PKEY;
	local_irq_save(flags);
	ib_dispatch_event(&ev);
	local_irq_restore(flags);

	/*
	 * Give the event's refresh every chance to run to the end before
	 * the first fill swaps its tables in: unserialised, it does so at
	 * once; serialised, it waits for us and this wait times out.
	 */
	end = jiffies + msecs_to_jiffies(300);
	while (time_before(jiffies, end)) {
		if (!ib_get_cached_pkey(ibdev, 1, 1, &now) &&
		    now == CT_FRESH_PKEY)
			break;
		msleep(20);
	}
	return ret;
}

static void ct_refresh_races_registration(struct kunit *test)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "ctest%d");
	u16 pkey;

	kd->ibdev.query_pkey = ct_racing_query_pkey;
	atomic_set(&ct_race_armed, 1);
	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&ct_race_armed), 0);
	ib_cache_flush();

	KUNIT_ASSERT_EQ(test, ib_get_cached_pkey(&kd->ibdev, 1, 1, &pkey), 0);
	KUNIT_EXPECT_EQ_MSG(test, pkey, CT_FRESH_PKEY,
			    "the first fill's stale snapshot won");
	ct_put(kd);
}

static struct kunit_case ct_cases[] = {
	KUNIT_CASE(ct_gid_lookups),
	KUNIT_CASE(ct_pkey_lookups),
	KUNIT_CASE(ct_refresh_on_events),
	KUNIT_CASE(ct_other_events_ignored),
	KUNIT_CASE(ct_lmc),
	KUNIT_CASE(ct_readers_atomic),
	KUNIT_CASE(ct_refresh_races_registration),
	{}
};

static struct kunit_suite ct_suite = {
	.name = "ib_cache",
	.test_cases = ct_cases,
};

kunit_test_suite(ct_suite);
