// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of ib_sa's queries on a registered test device
 * (ktest_dev.h), with ib_mad and ib_sa running on it as on a real HCA.
 * The test driver here completes every send it is given (from a work
 * item, never from the poster's call chain); nobody answers, so a query
 * ends only by timeout or cancel. It checks that ib_sa_cancel_query()
 * cancels exactly the query named by both its ID and its pointer, and
 * that each callback runs exactly once.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <rdma/ib_sa.h>

#include "ktest_dev.h"

#define SQ_MAX_SENDS	64

/* Sends posted and not yet completed; one test device at a time. */
static struct {
	spinlock_t		lock;	/* guards the fields below */
	u64			wr_id[SQ_MAX_SENDS];
	u32			qp_num[SQ_MAX_SENDS];
	int			count;
	struct ib_cq		*cq;
	struct work_struct	work;
} sq_sends;

static void sq_complete_work(struct work_struct *work)
{
	struct ib_cq *cq;
	unsigned long flags;

	spin_lock_irqsave(&sq_sends.lock, flags);
	cq = sq_sends.count ? sq_sends.cq : NULL;
	spin_unlock_irqrestore(&sq_sends.lock, flags);
	if (cq && cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

static int sq_post_send(struct ib_qp *qp, struct ib_send_wr *wr,
			struct ib_send_wr **bad)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&sq_sends.lock, flags);
	for (; wr; wr = wr->next) {
		if (sq_sends.count == SQ_MAX_SENDS) {
			*bad = wr;
			ret = -ENOMEM;
			break;
		}
		sq_sends.wr_id[sq_sends.count] = wr->wr_id;
		sq_sends.qp_num[sq_sends.count] = qp->qp_num;
		sq_sends.count++;
		sq_sends.cq = qp->send_cq;
	}
	spin_unlock_irqrestore(&sq_sends.lock, flags);
	schedule_work(&sq_sends.work);
	return ret;
}

static int sq_poll_cq(struct ib_cq *cq, int n, struct ib_wc *wc)
{
	unsigned long flags;
	int got = 0;

	spin_lock_irqsave(&sq_sends.lock, flags);
	while (got < n && sq_sends.count && sq_sends.cq == cq) {
		memset(&wc[got], 0, sizeof(wc[got]));
		wc[got].wr_id = sq_sends.wr_id[0];
		wc[got].qp_num = sq_sends.qp_num[0];
		wc[got].status = IB_WC_SUCCESS;
		wc[got].opcode = IB_WC_SEND;
		sq_sends.count--;
		memmove(sq_sends.wr_id, sq_sends.wr_id + 1,
			sq_sends.count * sizeof(sq_sends.wr_id[0]));
		memmove(sq_sends.qp_num, sq_sends.qp_num + 1,
			sq_sends.count * sizeof(sq_sends.qp_num[0]));
		got++;
	}
	spin_unlock_irqrestore(&sq_sends.lock, flags);
	return got;
}

struct sq_result {
	struct completion	done;
	atomic_t		calls;
	int			status;
};

static void sq_path_done(int status, struct ib_sa_path_rec *resp,
			 void *context)
{
	struct sq_result *r = context;

	r->status = status;
	atomic_inc(&r->calls);
	complete(&r->done);
}

/* A PathRecord query on port 1, once ib_sa has an SM handle for it. */
static int sq_start(struct kunit *test, struct ktest_dev *kd,
		    struct sq_result *r, struct ib_sa_query **query)
{
	struct ib_sa_path_rec rec = {};
	int i, id = -EAGAIN;

	init_completion(&r->done);
	atomic_set(&r->calls, 0);
	for (i = 0; i < 100 && id == -EAGAIN; i++) {
		id = ib_sa_path_rec_get(&kd->ibdev, 1, &rec, 0, 20000,
					GFP_KERNEL, sq_path_done, r, query);
		if (id == -EAGAIN)
			msleep(20);
	}
	KUNIT_EXPECT_GE(test, id, 0);
	return id;
}

static bool sq_called(struct sq_result *r, unsigned int ms)
{
	return wait_for_completion_timeout(&r->done, msecs_to_jiffies(ms));
}

static void sq_cancel_by_id(struct kunit *test)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "sqtest%d");
	struct sq_result a, b;
	struct ib_sa_query *qa, *qb;
	int ida, idb;

	spin_lock_init(&sq_sends.lock);
	sq_sends.count = 0;
	sq_sends.cq = NULL;
	INIT_WORK(&sq_sends.work, sq_complete_work);
	kd->ibdev.post_send = sq_post_send;
	kd->ibdev.poll_cq = sq_poll_cq;
	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);

	ida = sq_start(test, kd, &a, &qa);
	idb = sq_start(test, kd, &b, &qb);
	if (ida < 0 || idb < 0)
		goto out;
	KUNIT_EXPECT_NE(test, ida, idb);

	/* a pointer with another query's ID, no pointer, a bad ID: nothing */
	ib_sa_cancel_query(idb, qa);
	ib_sa_cancel_query(ida, qb);
	ib_sa_cancel_query(ida, NULL);
	ib_sa_cancel_query(-1, qa);
	KUNIT_EXPECT_FALSE(test, sq_called(&a, 200));
	KUNIT_EXPECT_FALSE(test, sq_called(&b, 0));

	/* both halves right: that query, and only it, ends with -EINTR */
	ib_sa_cancel_query(ida, qa);
	KUNIT_ASSERT_TRUE(test, sq_called(&a, 5000));
	KUNIT_EXPECT_EQ(test, a.status, -EINTR);
	KUNIT_EXPECT_FALSE(test, sq_called(&b, 200));

	/* an ended query's ID and pointer cancel nothing, twice over */
	ib_sa_cancel_query(ida, qa);
	ib_sa_cancel_query(ida, qa);
	KUNIT_EXPECT_FALSE(test, sq_called(&b, 200));

	ib_sa_cancel_query(idb, qb);
	KUNIT_ASSERT_TRUE(test, sq_called(&b, 5000));
	KUNIT_EXPECT_EQ(test, b.status, -EINTR);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&a.calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&b.calls), 1);
out:
	ib_unregister_device(&kd->ibdev);
	flush_work(&sq_sends.work);
	ib_dealloc_device(&kd->ibdev);
}

static struct kunit_case sq_cases[] = {
	KUNIT_CASE(sq_cancel_by_id),
	{}
};

static struct kunit_suite sq_suite = {
	.name = "ib_sa_cancel",
	.test_cases = sq_cases,
};

kunit_test_suite(sq_suite);
