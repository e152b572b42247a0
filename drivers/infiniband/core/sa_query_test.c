// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of an SA query's life, over the loopback fake HCA
 * (ktest_dev.h): the callback runs exactly once, with the answer, after a
 * timeout, or after a cancel, and an answer that comes after a cancel is
 * not delivered a second time.  The fake port's SM is LID 1, which no
 * port of the fake device has: the request is seen by the tap and lost,
 * and the test plays the SA by injecting the answer from LID 1.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>

#include "ktest_dev.h"

#define SQT_WAIT	(2 * HZ)
#define SQT_SM_LID	1

struct sqt {
	struct kunit		*test;
	struct ktest_dev	*kd;
	/* guards the rest */
	spinlock_t		lock;
	wait_queue_head_t	wq;
	int			calls;
	int			status;
	bool			had_rec;
	int			requests;
	u8			request[IB_MGMT_MAD_SIZE];
};

static enum ktest_verdict sqt_tap(struct ktest_dev *kd, u8 port, u32 qpn,
				  const void *mad)
{
	struct sqt *s = kd->tap_ctx;
	unsigned long irq;

	spin_lock_irqsave(&s->lock, irq);
	memcpy(s->request, mad, IB_MGMT_MAD_SIZE);
	s->requests++;
	spin_unlock_irqrestore(&s->lock, irq);
	wake_up(&s->wq);
	return KTEST_DROP;
}

static void sqt_callback(int status, struct ib_sa_path_rec *resp,
			 void *context)
{
	struct sqt *s = context;
	unsigned long irq;

	spin_lock_irqsave(&s->lock, irq);
	s->calls++;
	s->status = status;
	s->had_rec = resp;
	spin_unlock_irqrestore(&s->lock, irq);
	wake_up(&s->wq);
}

static int sqt_read(struct sqt *s, int *field)
{
	unsigned long irq;
	int v;

	spin_lock_irqsave(&s->lock, irq);
	v = *field;
	spin_unlock_irqrestore(&s->lock, irq);
	return v;
}

static struct sqt *sqt_setup(struct kunit *test)
{
	struct sqt *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	s->test = test;
	spin_lock_init(&s->lock);
	init_waitqueue_head(&s->wq);
	s->kd = ktest_dev_alloc(test, "sqt%d");
	s->kd->tap = sqt_tap;
	s->kd->tap_ctx = s;
	KUNIT_ASSERT_EQ(test, ib_register_device(&s->kd->ibdev), 0);
	return s;
}

static void sqt_teardown(struct sqt *s)
{
	ib_unregister_device(&s->kd->ibdev);
	ktest_quiesce(s->kd);
	KUNIT_EXPECT_EQ(s->test, atomic_read(&s->kd->live_objects), 0);
	ib_dealloc_device(&s->kd->ibdev);
}

/* Start a PathRecord query; the SM handle may take a moment to appear. */
static int sqt_query(struct sqt *s, int timeout_ms, struct ib_sa_query **q)
{
	struct ib_sa_path_rec rec = {};
	int id, tries;

	for (tries = 0; tries < 200; tries++) {
		id = ib_sa_path_rec_get(&s->kd->ibdev, 1, &rec, 0, timeout_ms,
					GFP_KERNEL, sqt_callback, s, q);
		if (id != -EAGAIN)
			break;
		usleep_range(5000, 10000);
	}
	KUNIT_ASSERT_GE(s->test, id, 0);
	KUNIT_ASSERT_TRUE(s->test,
			  wait_event_timeout(s->wq,
					     sqt_read(s, &s->requests) >= 1,
					     SQT_WAIT));
	return id;
}

/* The SA answers the request the tap saw, from the SM's LID. */
static void sqt_answer(struct sqt *s)
{
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_mad_hdr *h = (struct ib_mad_hdr *)mad;
	unsigned long irq;

	spin_lock_irqsave(&s->lock, irq);
	memcpy(mad, s->request, sizeof(mad));
	spin_unlock_irqrestore(&s->lock, irq);
	h->method = IB_MGMT_METHOD_GET_RESP;
	h->status = 0;
	KUNIT_ASSERT_EQ(s->test, ktest_inject(s->kd, 1, 1, mad, SQT_SM_LID, 1),
			0);
	ktest_quiesce(s->kd);
}

/* Exactly one call, now and a little later. */
static void sqt_expect_one_call(struct sqt *s, int status)
{
	KUNIT_ASSERT_TRUE(s->test,
			  wait_event_timeout(s->wq,
					     sqt_read(s, &s->calls) >= 1,
					     SQT_WAIT));
	msleep(20);
	KUNIT_EXPECT_EQ(s->test, sqt_read(s, &s->calls), 1);
	KUNIT_EXPECT_EQ(s->test, sqt_read(s, &s->status), status);
}

static void sa_query_answered(struct kunit *test)
{
	struct sqt *s = sqt_setup(test);
	struct ib_sa_query *q;

	sqt_query(s, 60000, &q);
	KUNIT_EXPECT_EQ(test, sqt_read(s, &s->calls), 0);
	sqt_answer(s);
	sqt_expect_one_call(s, 0);
	KUNIT_EXPECT_TRUE(test, s->had_rec);
	/* a repeated answer finds no query */
	sqt_answer(s);
	msleep(20);
	KUNIT_EXPECT_EQ(test, sqt_read(s, &s->calls), 1);
	sqt_teardown(s);
}

static void sa_query_timeout(struct kunit *test)
{
	struct sqt *s = sqt_setup(test);
	struct ib_sa_query *q;

	sqt_query(s, 10, &q);
	sqt_expect_one_call(s, -ETIMEDOUT);
	KUNIT_EXPECT_FALSE(test, s->had_rec);
	sqt_teardown(s);
}

static void sa_query_cancel(struct kunit *test)
{
	struct sqt *s = sqt_setup(test);
	struct ib_sa_query *q;
	int id;

	id = sqt_query(s, 60000, &q);
	ib_sa_cancel_query(id, q);
	sqt_expect_one_call(s, -EINTR);
	/* a second cancel and a late answer change nothing */
	ib_sa_cancel_query(id, q);
	sqt_answer(s);
	msleep(20);
	KUNIT_EXPECT_EQ(test, sqt_read(s, &s->calls), 1);
	sqt_teardown(s);
}

static struct kunit_case sa_query_cases[] = {
	KUNIT_CASE(sa_query_answered),
	KUNIT_CASE(sa_query_timeout),
	KUNIT_CASE(sa_query_cancel),
	{}
};

static struct kunit_suite sa_query_suite = {
	.name = "ib_sa_query",
	.test_cases = sa_query_cases,
};

kunit_test_suite(sa_query_suite);
