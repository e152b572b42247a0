// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of trap forwarding (mthca_trap.c) over the fake HCA of
 * tests/kunit/ktest: the real ib_mad carries a trap from port 1's QP0 to
 * an "SM" agent on port 2.  It checks that a trap needs an SM address,
 * that a trap keeps the SM address handle it was sent with when the SM
 * moves (the AH lives until the send completes, not until the post), and
 * that after teardown began nothing is forwarded or created, with a trap
 * in flight at teardown still completing before its AH goes.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/wait.h>

#include <rdma/ib_mad.h>

#include "ktest_dev.h"
#include "mthca_trap.h"

#define TT_WAIT		(2 * HZ)
#define TT_NOTICE	cpu_to_be16(0x0002)
/* The SM: port 2 of the fake HCA; then a LID nobody has. */
#define TT_SM		KTEST_LID(2)
#define TT_NEW_SM	0x99

struct tt {
	struct kunit		*test;
	struct ktest_dev	*kd;
	struct mthca_trap_fwd	fwd;
	struct ib_mad_agent	*sm;
	/* traps the SM got, and the source LID of the last one */
	atomic_t		traps;
	u16			slid;
	__be64			tid;
	wait_queue_head_t	wq;
};

static void tt_sm_recv(struct ib_mad_agent *agent,
		       struct ib_mad_send_buf *req,
		       struct ib_mad_recv_wc *rwc)
{
	struct tt *t = agent->context;

	WRITE_ONCE(t->slid, rwc->wc->slid);
	WRITE_ONCE(t->tid, rwc->recv_buf.mad->mad_hdr.tid);
	ib_free_recv_mad(rwc);
	atomic_inc(&t->traps);
	wake_up(&t->wq);
}

static void tt_sm_send(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
	ib_free_send_mad(wc->send_buf);
}

static int tt_objects(struct tt *t)
{
	return atomic_read(&t->kd->live_objects);
}

/* A registered fake HCA, trap agents on both ports, an SM on port 2. */
static struct tt *tt_setup(struct kunit *test)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED,
		.mgmt_class_version = 1,
	};
	struct tt *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->test = test;
	init_waitqueue_head(&t->wq);
	atomic_set(&t->traps, 0);
	t->kd = ktest_dev_alloc(test, "mtrap%d");
	KUNIT_ASSERT_EQ(test, ib_register_device(&t->kd->ibdev), 0);
	mthca_trap_fwd_init(&t->fwd, &t->kd->ibdev);
	KUNIT_ASSERT_EQ(test, mthca_trap_agents_create(&t->fwd, KTEST_PORTS),
			0);
	set_bit(IB_MGMT_METHOD_TRAP, req.method_mask);
	t->sm = ib_register_mad_agent(&t->kd->ibdev, 2, IB_QPT_SMI, &req, 0,
				      tt_sm_send, tt_sm_recv, t);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->sm));
	return t;
}

static void tt_teardown(struct tt *t)
{
	ktest_hold_sends(t->kd, false);
	mthca_trap_agents_destroy(&t->fwd);
	ib_unregister_mad_agent(t->sm);
	ib_unregister_device(&t->kd->ibdev);
	ktest_quiesce(t->kd);
	KUNIT_EXPECT_EQ(t->test, tt_objects(t), 0);
	ib_dealloc_device(&t->kd->ibdev);
}

/* A trap as the firmware makes it: Trap(Notice), LID-routed. */
static void tt_trap(struct ib_mad *mad, u32 tid)
{
	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	mad->mad_hdr.class_version = 1;
	mad->mad_hdr.method = IB_MGMT_METHOD_TRAP;
	mad->mad_hdr.attr_id = TT_NOTICE;
	mad->mad_hdr.tid = cpu_to_be64(tid);
}

static void tt_wait_traps(struct tt *t, int n)
{
	long ok = wait_event_timeout(t->wq, atomic_read(&t->traps) >= n,
				     TT_WAIT);

	KUNIT_ASSERT_TRUE_MSG(t->test, ok, "the SM got %d traps, wanted %d",
			      atomic_read(&t->traps), n);
}

/* Wait (bounded) until @n address handles point at @dlid. */
static void tt_wait_ahs(struct tt *t, u16 dlid, int n)
{
	unsigned long end = jiffies + TT_WAIT;

	while (ktest_ahs_to(t->kd, dlid) != n && time_before(jiffies, end))
		usleep_range(1000, 2000);
	KUNIT_EXPECT_EQ_MSG(t->test, ktest_ahs_to(t->kd, dlid), n,
			    "AHs to LID 0x%x", dlid);
}

/* No SM address yet: nothing to send to; then the SM gets the trap. */
static void trap_needs_sm(struct kunit *test)
{
	struct tt *t = tt_setup(test);
	struct ib_mad mad;

	tt_trap(&mad, 1);
	KUNIT_EXPECT_EQ(test, mthca_trap_forward(&t->fwd, 1, &mad), -ENODEV);
	KUNIT_EXPECT_EQ(test, mthca_trap_forward(&t->fwd, 0, &mad), -ENODEV);
	KUNIT_EXPECT_EQ(test, mthca_trap_forward(&t->fwd, 3, &mad), -ENODEV);
	mthca_trap_sm_update(&t->fwd, 1, TT_SM, 0);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_SM), 1);
	KUNIT_ASSERT_EQ(test, mthca_trap_forward(&t->fwd, 1, &mad), 0);
	tt_wait_traps(t, 1);
	KUNIT_EXPECT_EQ(test, READ_ONCE(t->slid), KTEST_LID(1));
	KUNIT_EXPECT_TRUE(test, READ_ONCE(t->tid) == cpu_to_be64(1));
	/* the trap's reference is dropped, the port's own stays */
	msleep(20);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_SM), 1);
	tt_teardown(t);
}

/*
 * The SM moves while a trap is on the send queue: the trap keeps the old
 * AH (and is delivered with it); the old AH goes when the send completes.
 */
static void trap_ah_outlives_update(struct kunit *test)
{
	struct tt *t = tt_setup(test);
	struct ib_mad mad;

	mthca_trap_sm_update(&t->fwd, 1, TT_SM, 0);
	ktest_hold_sends(t->kd, true);
	tt_trap(&mad, 2);
	KUNIT_ASSERT_EQ(test, mthca_trap_forward(&t->fwd, 1, &mad), 0);
	KUNIT_EXPECT_EQ(test, ktest_pending(t->kd), 1);

	/* a new SM LID: a new AH, the old one still held by the trap */
	mthca_trap_sm_update(&t->fwd, 1, TT_NEW_SM, 0);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_NEW_SM), 1);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_SM), 1);

	ktest_hold_sends(t->kd, false);
	tt_wait_traps(t, 1);
	/* the send handler dropped the trap's reference: old AH gone */
	tt_wait_ahs(t, TT_SM, 0);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_NEW_SM), 1);
	tt_teardown(t);
}

struct tt_destroy {
	struct tt		*t;
	struct completion	done;
};

static int tt_destroy_fn(void *arg)
{
	struct tt_destroy *d = arg;

	mthca_trap_agents_destroy(&d->t->fwd);
	complete(&d->done);
	return 0;
}

/*
 * Teardown with a trap on the send queue: it waits for the send, frees
 * the SM AH after it, and from its start forwards and SM updates do
 * nothing.
 */
static void trap_closing(struct kunit *test)
{
	struct tt *t = tt_setup(test);
	struct tt_destroy *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	struct task_struct *task;
	struct ib_mad mad;

	KUNIT_ASSERT_NOT_NULL(test, d);
	d->t = t;
	init_completion(&d->done);
	mthca_trap_sm_update(&t->fwd, 1, TT_SM, 0);
	ktest_hold_sends(t->kd, true);
	tt_trap(&mad, 3);
	KUNIT_ASSERT_EQ(test, mthca_trap_forward(&t->fwd, 1, &mad), 0);

	task = kthread_run(tt_destroy_fn, d, "tt_destroy");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	/* unregistering the agent waits for the held trap */
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&d->done,
							  msecs_to_jiffies(30)),
			0UL);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(t->fwd.closing));
	KUNIT_EXPECT_EQ(test, mthca_trap_forward(&t->fwd, 1, &mad), -ENODEV);
	mthca_trap_sm_update(&t->fwd, 1, TT_NEW_SM, 0);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_NEW_SM), 0);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_SM), 1);

	ktest_hold_sends(t->kd, false);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&d->done,
							    TT_WAIT));
	tt_wait_traps(t, 1);
	/* the SM AH went after the trap's send */
	KUNIT_EXPECT_NULL(test, t->fwd.sm_ah[0]);
	KUNIT_EXPECT_EQ(test, ktest_ahs_to(t->kd, TT_SM), 0);
	tt_teardown(t);
}

static struct kunit_case mthca_trap_cases[] = {
	KUNIT_CASE(trap_needs_sm),
	KUNIT_CASE(trap_ah_outlives_update),
	KUNIT_CASE(trap_closing),
	{}
};

static struct kunit_suite mthca_trap_suite = {
	.name = "mthca_trap",
	.test_cases = mthca_trap_cases,
};

kunit_test_suite(mthca_trap_suite);
