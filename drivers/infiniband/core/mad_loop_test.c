// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suites of the MAD layer at work: a fake HCA (ktest_dev.h) whose
 * QP0/QP1 are a software loopback between its two ports runs the real
 * ib_mad code.  They cover the send state machine (responses, timeouts
 * and retries, cancel and modify, the overflow queue behind a full send
 * queue, the flush at unregister and after a fatal device error), the
 * agent lifetime at unregister, dispatch to agents (class, version,
 * method, response vs request, the "unsupported" reply, the sender of a
 * response), RMPP end to end (segmenting, reassembly with duplicate and
 * out-of-order segments, STOP and ABORT) and RMPP left to the agent
 * (rmpp_version 0, as umad's IB_USER_MAD_USER_RMPP).
 *
 * Timeouts are a few ms; waits for the MAD layer are bounded (2 s) so a
 * broken case fails instead of hanging.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>

#include <rdma/ib_mad.h>

#include "ib_kunit.h"
#include "ktest_dev.h"
#include "mad_priv.h"

#define LT_MAX		160
#define LT_WAIT		(2 * HZ)
#define LT_CLASS	IB_MGMT_CLASS_PERF_MGMT
#define LT_SA		IB_MGMT_CLASS_SUBN_ADM
#define LT_GETTABLE	0x12
#define LT_GETMULTI	0x14

/* What an agent's handlers saw; the agent's context. */
struct lt_rec {
	struct kunit		*test;
	/* guards the counts and arrays below */
	spinlock_t		lock;
	wait_queue_head_t	wq;
	int			nsend, nrecv;
	struct ib_mad_send_buf	*sbuf[LT_MAX];
	enum ib_wc_status	sstatus[LT_MAX];
	struct ib_mad_send_buf	*req[LT_MAX];
	u8			*data[LT_MAX];
	int			len[LT_MAX];
	struct ib_wc		wc[LT_MAX];
	/* the receive handler waits for this one when set */
	struct completion	*gate;
	bool			in_recv;
};

/* Packets the tap saw, and which ones it drops. */
struct lt_tap {
	/* guards the rest */
	spinlock_t		lock;
	int			n;
	u8			port[LT_MAX];
	u8			mad[LT_MAX][IB_MGMT_MAD_SIZE];
	/* drop everything going out of this port (0: none) */
	u8			drop_from;
	/* drop the first this many packets */
	int			drop_first;
	/* RMPP STOPs and ABORTs seen (beyond LT_MAX too), and the last one */
	int			nstop;
	u8			stop[IB_MGMT_MAD_SIZE];
};

struct lt {
	struct kunit		*test;
	struct ktest_dev	*kd;
	struct ib_ah		*ah[KTEST_PORTS + 1];
	struct lt_tap		tap;
	/* woken by the tap */
	wait_queue_head_t	wq;
};

static enum ktest_verdict lt_tap_fn(struct ktest_dev *kd, u8 port, u32 qpn,
				    const void *mad)
{
	const struct ib_rmpp_mad *rm = mad;
	struct lt *t = kd->tap_ctx;
	enum ktest_verdict v = KTEST_DELIVER;
	unsigned long irq;

	spin_lock_irqsave(&t->tap.lock, irq);
	if (t->tap.n < LT_MAX) {
		t->tap.port[t->tap.n] = port;
		memcpy(t->tap.mad[t->tap.n], mad, IB_MGMT_MAD_SIZE);
	}
	if (ib_is_mad_class_rmpp(rm->mad_hdr.mgmt_class) &&
	    (rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_STOP ||
	     rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_ABORT)) {
		memcpy(t->tap.stop, mad, IB_MGMT_MAD_SIZE);
		t->tap.nstop++;
	}
	if (t->tap.n < t->tap.drop_first || t->tap.drop_from == port)
		v = KTEST_DROP;
	t->tap.n++;
	spin_unlock_irqrestore(&t->tap.lock, irq);
	wake_up(&t->wq);
	return v;
}

static int lt_tapped(struct lt *t)
{
	unsigned long irq;
	int n;

	spin_lock_irqsave(&t->tap.lock, irq);
	n = t->tap.n;
	spin_unlock_irqrestore(&t->tap.lock, irq);
	return n;
}

static void lt_send_handler(struct ib_mad_agent *agent,
			    struct ib_mad_send_wc *wc)
{
	struct lt_rec *r = agent->context;
	unsigned long irq;

	spin_lock_irqsave(&r->lock, irq);
	if (r->nsend < LT_MAX) {
		r->sbuf[r->nsend] = wc->send_buf;
		r->sstatus[r->nsend] = wc->status;
	}
	r->nsend++;
	spin_unlock_irqrestore(&r->lock, irq);
	ib_free_send_mad(wc->send_buf);
	wake_up(&r->wq);
}

static void lt_recv_handler(struct ib_mad_agent *agent,
			    struct ib_mad_send_buf *req,
			    struct ib_mad_recv_wc *rwc)
{
	struct lt_rec *r = agent->context;
	unsigned long irq;
	u8 *data;

	if (r->gate) {
		WRITE_ONCE(r->in_recv, true);
		wake_up(&r->wq);
		wait_for_completion(r->gate);
	}
	data = kunit_kzalloc(r->test, rwc->mad_len, GFP_KERNEL);
	if (data)
		ib_coalesce_recv_mad(rwc, data);
	spin_lock_irqsave(&r->lock, irq);
	if (r->nrecv < LT_MAX) {
		r->req[r->nrecv] = req;
		r->data[r->nrecv] = data;
		r->len[r->nrecv] = rwc->mad_len;
		r->wc[r->nrecv] = *rwc->wc;
	}
	r->nrecv++;
	spin_unlock_irqrestore(&r->lock, irq);
	ib_free_recv_mad(rwc);
	wake_up(&r->wq);
}

static int lt_nsend(struct lt_rec *r)
{
	unsigned long irq;
	int n;

	spin_lock_irqsave(&r->lock, irq);
	n = r->nsend;
	spin_unlock_irqrestore(&r->lock, irq);
	return n;
}

static int lt_nrecv(struct lt_rec *r)
{
	unsigned long irq;
	int n;

	spin_lock_irqsave(&r->lock, irq);
	n = r->nrecv;
	spin_unlock_irqrestore(&r->lock, irq);
	return n;
}

static void lt_wait_sends(struct lt *t, struct lt_rec *r, int n)
{
	KUNIT_ASSERT_TRUE_MSG(t->test,
			      wait_event_timeout(r->wq, lt_nsend(r) >= n,
						 LT_WAIT),
			      "%d send reports, wanted %d", lt_nsend(r), n);
}

static void lt_wait_recvs(struct lt *t, struct lt_rec *r, int n)
{
	KUNIT_ASSERT_TRUE_MSG(t->test,
			      wait_event_timeout(r->wq, lt_nrecv(r) >= n,
						 LT_WAIT),
			      "%d receives, wanted %d", lt_nrecv(r), n);
}

/* A registered fake HCA with an AH on each port towards the other one. */
static struct lt *lt_setup(struct kunit *test)
{
	struct ib_ah_attr attr = {};
	struct ib_mad_port *port;
	struct lt *t;
	int p;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	t->test = test;
	spin_lock_init(&t->tap.lock);
	init_waitqueue_head(&t->wq);
	t->kd = ktest_dev_alloc(test, "madlt%d");
	t->kd->tap = lt_tap_fn;
	t->kd->tap_ctx = t;
	KUNIT_ASSERT_EQ(test, ib_register_device(&t->kd->ibdev), 0);
	for (p = 1; p <= KTEST_PORTS; p++) {
		port = ib_mad_port_get(&t->kd->ibdev, p);
		KUNIT_ASSERT_NOT_NULL(test, port);
		attr.port_num = p;
		attr.dlid = KTEST_LID(p == 1 ? 2 : 1);
		t->ah[p] = ib_create_ah(port->pd, &attr);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t->ah[p]));
	}
	return t;
}

/* Everything the MAD layer and the test created is gone again. */
static void lt_teardown(struct lt *t)
{
	int p;

	ktest_hold_sends(t->kd, false);
	for (p = 1; p <= KTEST_PORTS; p++)
		ib_destroy_ah(t->ah[p]);
	ib_unregister_device(&t->kd->ibdev);
	ktest_quiesce(t->kd);
	KUNIT_EXPECT_EQ(t->test, atomic_read(&t->kd->live_objects), 0);
	ib_dealloc_device(&t->kd->ibdev);
}

static struct lt_rec *lt_rec(struct kunit *test)
{
	struct lt_rec *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->test = test;
	spin_lock_init(&r->lock);
	init_waitqueue_head(&r->wq);
	return r;
}

/* An agent on QP1 of @port, serving @methods of @mgmt_class if any. */
static struct ib_mad_agent *lt_agent(struct lt *t, u8 port, u8 mgmt_class,
				     u8 ver, const u8 *methods, int nmethods,
				     u8 rmpp, struct lt_rec *r)
{
	struct ib_mad_reg_req req = {};
	struct ib_mad_agent *a;
	int i;

	req.mgmt_class = mgmt_class;
	req.mgmt_class_version = ver;
	for (i = 0; i < nmethods; i++)
		set_bit(methods[i], req.method_mask);
	a = ib_register_mad_agent(&t->kd->ibdev, port, IB_QPT_GSI,
				  nmethods ? &req : NULL, rmpp,
				  lt_send_handler, lt_recv_handler, r);
	KUNIT_ASSERT_FALSE(t->test, IS_ERR(a));
	return a;
}

static __be64 lt_tid(struct ib_mad_agent *a, u32 lo)
{
	return cpu_to_be64((u64)a->hi_tid << 32 | lo);
}

/* A one-packet MAD from @a to the other port. */
static struct ib_mad_send_buf *lt_msg(struct lt *t, struct ib_mad_agent *a,
				      u8 mgmt_class, u8 ver, u8 method,
				      __be64 tid, int timeout_ms, int retries)
{
	struct ib_mad_send_buf *sb;
	struct ib_mad_hdr *h;

	sb = ib_create_send_mad(a, 1, 0, 0, IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA,
				GFP_KERNEL);
	KUNIT_ASSERT_FALSE(t->test, IS_ERR(sb));
	h = sb->mad;
	h->base_version = IB_MGMT_BASE_VERSION;
	h->mgmt_class = mgmt_class;
	h->class_version = ver;
	h->method = method;
	h->tid = tid;
	memset((u8 *)sb->mad + IB_MGMT_MAD_HDR, 0x5a, IB_MGMT_MAD_DATA);
	sb->ah = t->ah[a->port_num];
	sb->timeout_ms = timeout_ms;
	sb->retries = retries;
	return sb;
}

static void lt_post(struct lt *t, struct ib_mad_send_buf *sb)
{
	KUNIT_ASSERT_EQ(t->test, ib_post_send_mad(sb, NULL), 0);
}

/* ---- ib_mad_send: the send state machine ---------------------------- */

static const u8 m_get[] = { IB_MGMT_METHOD_GET };

/* A request, its response from the other port, then the send report. */
static void send_request_response(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test), *rb = lt_rec(test);
	struct ib_mad_agent *a, *b;
	struct ib_mad_send_buf *req, *resp;
	struct ib_mad_hdr *h;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	b = lt_agent(t, 2, LT_CLASS, 1, m_get, 1, 0, rb);
	req = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 7),
		     1000, 0);
	lt_post(t, req);

	lt_wait_recvs(t, rb, 1);
	KUNIT_EXPECT_NULL(test, rb->req[0]);
	h = (struct ib_mad_hdr *)rb->data[0];
	KUNIT_EXPECT_TRUE(test, h->tid == lt_tid(a, 7));
	KUNIT_EXPECT_EQ(test, rb->wc[0].slid, KTEST_LID(1));
	KUNIT_EXPECT_EQ(test, rb->wc[0].src_qp, 1U);
	KUNIT_EXPECT_EQ(test, rb->data[0][IB_MGMT_MAD_HDR + 10], 0x5a);
	/* still waiting for the response */
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 0);

	resp = lt_msg(t, b, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP,
		      lt_tid(a, 7), 0, 0);
	lt_post(t, resp);
	lt_wait_sends(t, ra, 1);
	lt_wait_sends(t, rb, 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->req[0], req);
	KUNIT_EXPECT_PTR_EQ(test, ra->sbuf[0], req);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, rb->sstatus[0], IB_WC_SUCCESS);

	ib_unregister_mad_agent(a);
	ib_unregister_mad_agent(b);
	lt_teardown(t);
}

/* No answer: the request goes out 1 + retries times, then times out. */
static void send_timeout_retries(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_agent *a;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET,
			  lt_tid(a, 1), 5, 2));
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_RESP_TIMEOUT_ERR);
	KUNIT_EXPECT_EQ(test, lt_tapped(t), 3);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 0);
	/* reported once */
	msleep(20);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 1);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* The first try is lost, the retry is answered. */
static void send_retry_answered(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test), *rb = lt_rec(test);
	struct ib_mad_agent *a, *b;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	b = lt_agent(t, 2, LT_CLASS, 1, m_get, 1, 0, rb);
	t->tap.drop_first = 1;
	lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET,
			  lt_tid(a, 2), 10, 3));
	lt_wait_recvs(t, rb, 1);
	lt_post(t, lt_msg(t, b, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP,
			  lt_tid(a, 2), 0, 0));
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(rb), 1);
	ib_unregister_mad_agent(a);
	ib_unregister_mad_agent(b);
	lt_teardown(t);
}

/* Cancel ends a waiting send at once, modify moves its deadline. */
static void send_cancel_modify(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *s1, *s2;
	struct ib_mad_agent *a;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	s1 = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 1),
		    60000, 0);
	s2 = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 2),
		    60000, 0);
	lt_post(t, s1);
	lt_post(t, s2);
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq, lt_tapped(t) >= 2,
						   LT_WAIT));
	ib_cancel_mad(a, s1);
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->sbuf[0], s1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_WR_FLUSH_ERR);
	/* a reported send is not pending any more */
	KUNIT_EXPECT_EQ(test, ib_modify_mad(a, s1, 0), -EINVAL);

	KUNIT_EXPECT_EQ(test, ib_modify_mad(a, s2, 5), 0);
	lt_wait_sends(t, ra, 2);
	KUNIT_EXPECT_PTR_EQ(test, ra->sbuf[1], s2);
	KUNIT_EXPECT_EQ(test, ra->sstatus[1], IB_WC_RESP_TIMEOUT_ERR);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* More sends than the send queue holds: the rest wait, then go. */
static void send_overflow_queue(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_agent *a;
	int i, n = IB_MAD_SEND_DEPTH + 5;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	/* no "unsupported" answers from port 2 in the count */
	t->tap.drop_from = 1;
	ktest_hold_sends(t->kd, true);
	for (i = 0; i < n; i++)
		lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_SET,
				  lt_tid(a, i), 0, 0));
	KUNIT_EXPECT_EQ(test, ktest_pending(t->kd), IB_MAD_SEND_DEPTH);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 0);
	ktest_hold_sends(t->kd, false);
	lt_wait_sends(t, ra, n);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, ra->sstatus[i], IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, lt_tapped(t), n);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

struct lt_unreg {
	struct ib_mad_agent	*agent;
	struct completion	done;
};

static int lt_unreg_thread(void *arg)
{
	struct lt_unreg *u = arg;

	ib_unregister_mad_agent(u->agent);
	complete(&u->done);
	return 0;
}

static struct lt_unreg *lt_unreg_start(struct kunit *test,
				       struct ib_mad_agent *a)
{
	struct lt_unreg *u = kunit_kzalloc(test, sizeof(*u), GFP_KERNEL);
	struct task_struct *task;

	KUNIT_ASSERT_NOT_NULL(test, u);
	u->agent = a;
	init_completion(&u->done);
	task = kthread_run(lt_unreg_thread, u, "lt_unreg");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	return u;
}

/*
 * Unregister: a send waiting for its response is flushed at once, one on
 * the QP only after the HCA completes it; each is reported once, with
 * IB_WC_WR_FLUSH_ERR.
 */
static void send_unregister_flush(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *waiting, *onqp;
	struct ib_mad_agent *a;
	struct lt_unreg *u;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	waiting = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 1),
			 60000, 0);
	lt_post(t, waiting);
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq, lt_tapped(t) >= 1,
						   LT_WAIT));
	ktest_hold_sends(t->kd, true);
	onqp = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 2),
		      60000, 0);
	lt_post(t, onqp);

	u = lt_unreg_start(test, a);
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->sbuf[0], waiting);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_WR_FLUSH_ERR);
	/* the HCA still owns the other one: unregister waits */
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&u->done,
							  msecs_to_jiffies(20)),
			0UL);
	ktest_hold_sends(t->kd, false);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&u->done, LT_WAIT),
			0UL);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 2);
	KUNIT_EXPECT_PTR_EQ(test, ra->sbuf[1], onqp);
	KUNIT_EXPECT_EQ(test, ra->sstatus[1], IB_WC_WR_FLUSH_ERR);
	lt_teardown(t);
}

/*
 * A fatal device error: a send the dead HCA never completes no longer
 * holds up unregister; nothing new is posted; a completion the driver
 * makes later for the reaped send is ignored.
 */
static void send_fatal_flush(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_event ev = {
		.device = &t->kd->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
	};
	struct ib_mad_send_buf *sb, *late;
	struct ib_mad_agent *a;
	struct lt_unreg *u;
	int ret;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	ktest_hold_sends(t->kd, true);
	sb = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 1),
		    60000, 0);
	lt_post(t, sb);
	KUNIT_EXPECT_EQ(test, ktest_pending(t->kd), 1);

	u = lt_unreg_start(test, a);
	/* not fatal yet: unregister waits for the HCA */
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&u->done,
							  msecs_to_jiffies(20)),
			0UL);
	ib_dispatch_event(&ev);
	if (!wait_for_completion_timeout(&u->done, LT_WAIT)) {
		KUNIT_FAIL(test, "unregister still waits after a fatal error");
		ktest_hold_sends(t->kd, false);
		wait_for_completion(&u->done);
	}
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_WR_FLUSH_ERR);

	/* a new agent cannot post on the dead QP */
	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	late = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 2),
		      0, 0);
	ret = ib_post_send_mad(late, NULL);
	KUNIT_EXPECT_EQ(test, ret, -EIO);
	if (ret)
		ib_free_send_mad(late);

	/* the HCA "comes back" and completes the reaped send: ignored */
	ktest_hold_sends(t->kd, false);
	ktest_quiesce(t->kd);
	msleep(20);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 1);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* Unregister returns only after a receive handler in progress returned. */
static void send_unregister_waits_handler(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test), *rb = lt_rec(test);
	struct completion gate;
	struct ib_mad_agent *a, *b;
	struct lt_unreg *u;

	init_completion(&gate);
	rb->gate = &gate;
	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	b = lt_agent(t, 2, LT_CLASS, 1, m_get, 1, 0, rb);
	lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET,
			  lt_tid(a, 1), 0, 0));
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(rb->wq,
						   READ_ONCE(rb->in_recv),
						   LT_WAIT));
	u = lt_unreg_start(test, b);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&u->done,
							  msecs_to_jiffies(20)),
			0UL);
	complete(&gate);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&u->done, LT_WAIT),
			0UL);
	KUNIT_EXPECT_EQ(test, lt_nrecv(rb), 1);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* P_Key index: only within the port's table (KTEST_PKEYS entries). */
static void send_pkey_index(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *sb;
	struct ib_mad_agent *a;
	struct ib_mad_hdr *h;
	u16 idx;
	int ret;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	for (idx = KTEST_PKEYS - 1; idx <= KTEST_PKEYS + 1; idx++) {
		sb = ib_create_send_mad(a, 1, idx, 0, IB_MGMT_MAD_HDR,
					IB_MGMT_MAD_DATA, GFP_KERNEL);
		KUNIT_ASSERT_FALSE(test, IS_ERR(sb));
		h = sb->mad;
		h->base_version = 1;
		h->mgmt_class = LT_CLASS;
		h->class_version = 1;
		h->method = IB_MGMT_METHOD_SET;
		sb->ah = t->ah[1];
		ret = ib_post_send_mad(sb, NULL);
		KUNIT_EXPECT_EQ_MSG(test, ret, idx < KTEST_PKEYS ? 0 : -EINVAL,
				    "index %u", idx);
		if (ret)
			ib_free_send_mad(sb);
	}
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

static struct kunit_case mad_send_cases[] = {
	KUNIT_CASE(send_request_response),
	KUNIT_CASE(send_timeout_retries),
	KUNIT_CASE(send_retry_answered),
	KUNIT_CASE(send_cancel_modify),
	KUNIT_CASE(send_overflow_queue),
	KUNIT_CASE(send_unregister_flush),
	KUNIT_CASE(send_fatal_flush),
	KUNIT_CASE(send_unregister_waits_handler),
	KUNIT_CASE(send_pkey_index),
	{}
};

static struct kunit_suite mad_send_suite = {
	.name = "ib_mad_send",
	.test_cases = mad_send_cases,
};

/* ---- ib_mad_dispatch: which agent gets a MAD ------------------------ */

/*
 * Requests go by class, version and method; an unserved Get comes back as
 * "unsupported"; an unserved Trap gets no answer.
 */
static void dispatch_requests(struct kunit *test)
{
	static const u8 m_set[] = { IB_MGMT_METHOD_SET };
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test), *r1 = lt_rec(test),
		      *r2 = lt_rec(test);
	struct ib_mad_agent *a, *b1, *b2;
	struct ib_mad_hdr *h;

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	b1 = lt_agent(t, 2, LT_CLASS, 1, m_get, 1, 0, r1);
	b2 = lt_agent(t, 2, LT_CLASS, 2, m_set, 1, 0, r2);

	lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET,
			  lt_tid(a, 1), 0, 0));
	lt_post(t, lt_msg(t, a, LT_CLASS, 2, IB_MGMT_METHOD_SET,
			  lt_tid(a, 2), 0, 0));
	lt_wait_recvs(t, r1, 1);
	lt_wait_recvs(t, r2, 1);
	KUNIT_EXPECT_TRUE(test, ((struct ib_mad_hdr *)r1->data[0])->tid ==
				 lt_tid(a, 1));
	KUNIT_EXPECT_TRUE(test, ((struct ib_mad_hdr *)r2->data[0])->tid ==
				 lt_tid(a, 2));

	/* version 2 Get: nobody serves it; the answer says so */
	lt_post(t, lt_msg(t, a, LT_CLASS, 2, IB_MGMT_METHOD_GET,
			  lt_tid(a, 3), 1000, 0));
	lt_wait_recvs(t, ra, 1);
	h = (struct ib_mad_hdr *)ra->data[0];
	KUNIT_EXPECT_EQ(test, h->method, IB_MGMT_METHOD_GET_RESP);
	KUNIT_EXPECT_TRUE(test, h->tid == lt_tid(a, 3));
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h->status),
			IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	lt_wait_sends(t, ra, 3);

	/* a Trap nobody serves: no answer, the request times out */
	lt_post(t, lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_TRAP,
			  lt_tid(a, 4), 10, 0));
	lt_wait_sends(t, ra, 4);
	KUNIT_EXPECT_EQ(test, ra->sstatus[3], IB_WC_RESP_TIMEOUT_ERR);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(r1), 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(r2), 1);

	ib_unregister_mad_agent(a);
	ib_unregister_mad_agent(b1);
	ib_unregister_mad_agent(b2);
	lt_teardown(t);
}

static void lt_hdr(u8 *mad, u8 mgmt_class, u8 ver, u8 method, __be64 tid)
{
	struct ib_mad_hdr *h = (struct ib_mad_hdr *)mad;

	memset(mad, 0, IB_MGMT_MAD_SIZE);
	h->base_version = 1;
	h->mgmt_class = mgmt_class;
	h->class_version = ver;
	h->method = method;
	h->tid = tid;
}

/*
 * Responses go by hi_tid to the agent, then complete the send of the same
 * TID and class that went to the responder's address, and no other.
 */
static void dispatch_responses(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *sb;
	struct ib_mad_agent *a;
	u8 mad[IB_MGMT_MAD_SIZE];

	a = lt_agent(t, 1, LT_CLASS, 1, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	sb = lt_msg(t, a, LT_CLASS, 1, IB_MGMT_METHOD_GET, lt_tid(a, 9),
		    60000, 0);
	lt_post(t, sb);
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq, lt_tapped(t) >= 1,
						   LT_WAIT));

	/* another agent's TID, another class, another TID: dropped */
	lt_hdr(mad, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP,
	       cpu_to_be64((u64)(a->hi_tid + 1) << 32 | 9));
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	lt_hdr(mad, IB_MGMT_CLASS_DEVICE_MGMT, 1, IB_MGMT_METHOD_GET_RESP,
	       lt_tid(a, 9));
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	lt_hdr(mad, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP, lt_tid(a, 10));
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	/* the right TID and class from a node the request did not go to */
	lt_hdr(mad, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP, lt_tid(a, 9));
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, 0x99, 1), 0);
	ktest_quiesce(t->kd);
	msleep(20);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 0);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 0);

	/* from the responder: taken */
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->req[0], sb);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

static struct kunit_case mad_dispatch_cases[] = {
	KUNIT_CASE(dispatch_requests),
	KUNIT_CASE(dispatch_responses),
	{}
};

static struct kunit_suite mad_dispatch_suite = {
	.name = "ib_mad_dispatch",
	.test_cases = mad_dispatch_cases,
};

/* ---- ib_mad_refill: the receive rings after failures ---------------- */

/* @n GetResp MADs nobody waits for, from port 2 to QP1 of port 1. */
static void lt_inject_n(struct lt *t, int n)
{
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);
	u8 mad[IB_MGMT_MAD_SIZE];
	int i;

	for (i = 0; i < n; i++) {
		lt_hdr(mad, LT_CLASS, 1, IB_MGMT_METHOD_GET_RESP,
		       cpu_to_be64(0x7700 + i));
		KUNIT_ASSERT_EQ(t->test, ktest_inject(t->kd, 1, 1, mad,
						      KTEST_LID(2), 1), 0);
	}
	ktest_quiesce(t->kd);
	flush_workqueue(port->wq);
}

static int lt_rq_reports(struct ib_mad_port *port)
{
	return READ_ONCE(port->rq_reports);
}

static int lt_recv_count(struct ib_mad_qp *mqp)
{
	return READ_ONCE(mqp->recv_count);
}

/* Wait up to @ms for QP1 of port 1 to hold @want receives again. */
static bool lt_wait_rq(struct lt *t, int want, int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	while (ktest_rq_len(t->kd, 1, 1) != want) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(1000, 2000);
	}
	return true;
}

/*
 * Receive posts that fail while the device lives: one line, retries that
 * back off (not one per receive, not a tight loop), and the ring full
 * again without any new receive once the posts work.  A later failure is
 * a new episode: one more line, retried at the shortest delay.
 */
static void refill_retry_backoff(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);
	int tries;

	KUNIT_ASSERT_EQ(test, ktest_rq_len(t->kd, 1, 1), IB_MAD_RECV_DEPTH);
	atomic_set(&t->kd->fail_recv_posts, -1);
	lt_inject_n(t, 4);
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 1, 1), IB_MAD_RECV_DEPTH - 4);
	KUNIT_EXPECT_EQ(test, lt_rq_reports(port), 1);
	KUNIT_EXPECT_TRUE(test, delayed_work_pending(&port->refill_work));

	/* 300 ms of failing posts: retries at 10, 30, 70, 150, 310 ms */
	tries = atomic_read(&t->kd->recv_posts_failed);
	msleep(300);
	tries = atomic_read(&t->kd->recv_posts_failed) - tries;
	KUNIT_EXPECT_GE(test, tries, 2);
	KUNIT_EXPECT_LE(test, tries, 6);
	KUNIT_EXPECT_EQ(test, lt_rq_reports(port), 1);

	/* the posts work again: refilled with no receive to trigger it */
	atomic_set(&t->kd->fail_recv_posts, 0);
	KUNIT_EXPECT_TRUE_MSG(test, lt_wait_rq(t, IB_MAD_RECV_DEPTH, 3000),
			      "receive queue at %d",
			      ktest_rq_len(t->kd, 1, 1));
	flush_workqueue(port->wq);
	KUNIT_EXPECT_FALSE(test, delayed_work_pending(&port->refill_work));

	/* one failed post later: said again, retried after 10 ms, not 2 s */
	atomic_set(&t->kd->fail_recv_posts, 1);
	lt_inject_n(t, 1);
	KUNIT_EXPECT_EQ(test, lt_rq_reports(port), 2);
	KUNIT_EXPECT_TRUE(test, lt_wait_rq(t, IB_MAD_RECV_DEPTH, 500));
	lt_teardown(t);
}

/*
 * After a fatal device error nothing is tried and nothing said about the
 * receive rings (the fatal line says it), however many receives come.
 */
static void refill_fatal_quiet(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);
	struct ib_event ev = {
		.device = &t->kd->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	atomic_set(&t->kd->fail_recv_posts, -1);
	ib_dispatch_event(&ev);
	lt_inject_n(t, 10);
	msleep(50);
	flush_workqueue(port->wq);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->recv_posts_failed), 0);
	KUNIT_EXPECT_EQ(test, lt_rq_reports(port), 0);
	KUNIT_EXPECT_FALSE(test, delayed_work_pending(&port->refill_work));
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 1, 1),
			IB_MAD_RECV_DEPTH - 10);
	atomic_set(&t->kd->fail_recv_posts, 0);
	lt_teardown(t);
}

/*
 * Flushed receives (the QP went to the error state): one line, the
 * buffers freed, no reposting and no retries.
 */
static void refill_flushed_once(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);

	KUNIT_EXPECT_EQ(test, ktest_flush_rq(t->kd, 1, 1), IB_MAD_RECV_DEPTH);
	ktest_quiesce(t->kd);
	flush_workqueue(port->wq);
	msleep(30);
	flush_workqueue(port->wq);
	KUNIT_EXPECT_EQ(test, lt_rq_reports(port), 1);
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 1, 1), 0);
	KUNIT_EXPECT_EQ(test, lt_recv_count(&port->qp[IB_MAD_QP1]), 0);
	KUNIT_EXPECT_FALSE(test, delayed_work_pending(&port->refill_work));
	/* QP0 and the other port are untouched */
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 1, 0), IB_MAD_RECV_DEPTH);
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 2, 1), IB_MAD_RECV_DEPTH);
	lt_teardown(t);
}

/* The second filler of refill_two_fillers, run from the first one's post. */
struct lt_nest {
	struct ib_mad_qp	*mqp;
	bool			ran;
	int			ret;
};

static void lt_nested_fill(struct ktest_dev *kd)
{
	struct lt_nest *n = kd->post_recv_hook_ctx;

	if (n->ran)
		return;
	n->ran = true;	/* its own posts come back here */
	n->ret = ib_mad_fill_recv(n->mqp);
}

/*
 * Two fillers of one ring at once (the port's open and the refill after
 * a receive): the second runs whole while the first is between its
 * check of the ring and its post.  Together they fill the ring exactly;
 * neither posts past its end, which an HCA refuses (-ENOMEM), and which
 * once left a port with no MAD agents.
 */
static void refill_two_fillers(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);
	struct lt_nest n = { .mqp = &port->qp[IB_MAD_QP1] };
	int overflows, ret;

	/* four receives used and not replaced: four free slots */
	atomic_set(&t->kd->fail_recv_posts, -1);
	lt_inject_n(t, 4);
	cancel_delayed_work_sync(&port->refill_work);
	atomic_set(&t->kd->fail_recv_posts, 0);
	KUNIT_ASSERT_EQ(test, ktest_rq_len(t->kd, 1, 1), IB_MAD_RECV_DEPTH - 4);
	overflows = atomic_read(&t->kd->recv_ring_overflows);

	t->kd->post_recv_hook_ctx = &n;
	t->kd->post_recv_hook = lt_nested_fill;
	ret = ib_mad_fill_recv(n.mqp);
	t->kd->post_recv_hook = NULL;

	KUNIT_EXPECT_TRUE(test, n.ran);
	KUNIT_EXPECT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, n.ret, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->recv_ring_overflows),
			overflows);
	KUNIT_EXPECT_EQ(test, ktest_rq_len(t->kd, 1, 1), IB_MAD_RECV_DEPTH);
	KUNIT_EXPECT_EQ(test, lt_recv_count(n.mqp), IB_MAD_RECV_DEPTH);
	lt_teardown(t);
}

static struct kunit_case mad_refill_cases[] = {
	KUNIT_CASE(refill_two_fillers),
	KUNIT_CASE(refill_retry_backoff),
	KUNIT_CASE(refill_fatal_quiet),
	KUNIT_CASE(refill_flushed_once),
	{}
};

static struct kunit_suite mad_refill_suite = {
	.name = "ib_mad_refill",
	.test_cases = mad_refill_cases,
};

/* ---- ib_mad_port: what a port's teardown cannot free ---------------- */

/*
 * An AH left on a port's MAD PD (the leak the check is for): the PD
 * cannot be deallocated; the teardown says so, counts it, and frees the
 * rest.
 */
static void teardown_pd_busy(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct ib_pd *pd = t->ah[1]->pd;
	int before = ib_mad_teardown_leaks();

	ib_destroy_ah(t->ah[2]);
	ib_unregister_device(&t->kd->ibdev);
	ktest_quiesce(t->kd);
	KUNIT_EXPECT_EQ(test, ib_mad_teardown_leaks(), before + 1);
	/* the AH and port 1's PD; port 2's objects and the CQs went */
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->live_objects), 2);
	ib_destroy_ah(t->ah[1]);
	KUNIT_EXPECT_EQ(test, ib_dealloc_pd(pd), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->live_objects), 0);
	ib_dealloc_device(&t->kd->ibdev);
}

/* CQs the driver refused to destroy, kept to free them after the test. */
static struct ib_cq *lt_refused_cq[KTEST_PORTS];
static int lt_nrefused_cq;

static int lt_destroy_cq_fails(struct ib_cq *cq)
{
	if (lt_nrefused_cq < KTEST_PORTS)
		lt_refused_cq[lt_nrefused_cq++] = cq;
	return -EIO;
}

/* A driver whose destroy_cq fails: each port's CQ is reported, once. */
static void teardown_cq_refused(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	int before = ib_mad_teardown_leaks(), i, p;

	lt_nrefused_cq = 0;
	for (p = 1; p <= KTEST_PORTS; p++)
		ib_destroy_ah(t->ah[p]);
	t->kd->ibdev.destroy_cq = lt_destroy_cq_fails;
	ib_unregister_device(&t->kd->ibdev);
	ktest_quiesce(t->kd);
	KUNIT_EXPECT_EQ(test, ib_mad_teardown_leaks(), before + KTEST_PORTS);
	KUNIT_ASSERT_EQ(test, lt_nrefused_cq, KTEST_PORTS);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->live_objects), KTEST_PORTS);
	for (i = 0; i < lt_nrefused_cq; i++)
		ktest_destroy_cq(lt_refused_cq[i]);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->kd->live_objects), 0);
	ib_dealloc_device(&t->kd->ibdev);
}

static struct kunit_case mad_port_cases[] = {
	KUNIT_CASE(teardown_pd_busy),
	KUNIT_CASE(teardown_cq_refused),
	{}
};

static struct kunit_suite mad_port_suite = {
	.name = "ib_mad_port",
	.test_cases = mad_port_cases,
};

/* ---- ib_mad_rmpp_loop: RMPP end to end ------------------------------ */

/* An SA RMPP message of @data_len bytes, data byte i = i * 7 + 3. */
static struct ib_mad_send_buf *lt_rmpp_msg(struct lt *t, struct ib_mad_agent *a,
					   u8 method, __be64 tid, int data_len)
{
	struct ib_mad_send_buf *sb;
	int i, seg;
	u8 *p;

	sb = ib_create_send_mad(a, 1, 0, 1, IB_MGMT_SA_HDR, data_len,
				GFP_KERNEL);
	KUNIT_ASSERT_FALSE(t->test, IS_ERR(sb));
	((struct ib_mad_hdr *)sb->mad)->base_version = 1;
	((struct ib_mad_hdr *)sb->mad)->mgmt_class = LT_SA;
	((struct ib_mad_hdr *)sb->mad)->class_version = 2;
	((struct ib_mad_hdr *)sb->mad)->method = method;
	((struct ib_mad_hdr *)sb->mad)->tid = tid;
	for (i = 0; i < data_len; i++) {
		seg = i / sb->seg_size;
		p = ib_get_rmpp_segment(sb, seg + 1);
		p[i % sb->seg_size] = i * 7 + 3;
	}
	sb->ah = t->ah[a->port_num];
	return sb;
}

static void lt_expect_rmpp_data(struct kunit *test, const u8 *got, int len)
{
	u8 *want = kunit_kmalloc(test, len, GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, want);
	for (i = 0; i < len; i++)
		want[i] = i * 7 + 3;
	ib_kunit_expect_bytes(test, "reassembled data", got, want, len);
}

/* A 5-segment request, cut, sent, ACKed and put together at the peer. */
static void rmpp_end_to_end(struct kunit *test)
{
	static const u8 m_multi[] = { LT_GETMULTI };
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test), *rb = lt_rec(test);
	struct ib_mad_agent *a, *b;
	int i, data = 950, acks = 0, segs = 0;
	struct ib_rmpp_mad *rm;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	b = lt_agent(t, 2, LT_SA, 2, m_multi, 1, IB_MGMT_RMPP_VERSION, rb);
	lt_post(t, lt_rmpp_msg(t, a, LT_GETMULTI, lt_tid(a, 5), data));
	lt_wait_recvs(t, rb, 1);
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, rb->len[0], IB_MGMT_SA_HDR + data);
	KUNIT_EXPECT_TRUE(test, ((struct ib_mad_hdr *)rb->data[0])->tid ==
				 lt_tid(a, 5));
	lt_expect_rmpp_data(test, rb->data[0] + IB_MGMT_SA_HDR, data);

	for (i = 0; i < min(lt_tapped(t), LT_MAX); i++) {
		rm = (struct ib_rmpp_mad *)t->tap.mad[i];
		if (rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_DATA &&
		    t->tap.port[i] == 1)
			segs++;
		if (rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_ACK &&
		    t->tap.port[i] == 2)
			acks++;
	}
	KUNIT_EXPECT_EQ(test, segs, 5);
	KUNIT_EXPECT_GE(test, acks, 2);
	ib_unregister_mad_agent(a);
	ib_unregister_mad_agent(b);
	lt_teardown(t);
}

/* One DATA segment of an SA response of 3 segments (456 data bytes). */
static void lt_rmpp_seg(u8 *mad, __be64 tid, u32 seg)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)mad;
	u8 flags = IB_MGMT_RMPP_FLAG_ACTIVE;
	int i, off;

	lt_hdr(mad, LT_SA, 2, LT_GETTABLE | IB_MGMT_METHOD_RESP, tid);
	if (seg == 1)
		flags |= IB_MGMT_RMPP_FLAG_FIRST;
	if (seg == 3)
		flags |= IB_MGMT_RMPP_FLAG_LAST;
	rm->rmpp_hdr.rmpp_version = IB_MGMT_RMPP_VERSION;
	rm->rmpp_hdr.rmpp_type = IB_MGMT_RMPP_TYPE_DATA;
	ib_set_rmpp_flags(&rm->rmpp_hdr, flags);
	rm->rmpp_hdr.seg_num = cpu_to_be32(seg);
	rm->rmpp_hdr.paylen_newwin =
		cpu_to_be32(ib_rmpp_paylen(seg, 3, 3 * 200 - 456));
	for (i = 0; i < 200; i++) {
		off = (seg - 1) * 200 + i;
		mad[IB_MGMT_SA_HDR + i] = off < 456 ? off * 7 + 3 : 0;
	}
}

static int lt_last_ack(struct lt *t, int *count)
{
	struct ib_rmpp_mad *rm;
	int i, last = -1;

	*count = 0;
	for (i = 0; i < min(lt_tapped(t), LT_MAX); i++) {
		rm = (struct ib_rmpp_mad *)t->tap.mad[i];
		if (t->tap.port[i] == 1 &&
		    rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_ACK) {
			last = be32_to_cpu(rm->rmpp_hdr.seg_num);
			(*count)++;
		}
	}
	return last;
}

/*
 * Reassembly of a response: out-of-order segments dropped, duplicates
 * ACKed again, the whole message delivered once, to the request.
 */
static void rmpp_reassembly(struct kunit *test)
{
	static const u32 order[] = { 1, 3, 2, 2, 3 };
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *req;
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_mad_agent *a;
	int i, acks;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	t->tap.drop_from = 1;
	req = lt_msg(t, a, LT_SA, 2, LT_GETTABLE, lt_tid(a, 3), 60000, 0);
	lt_post(t, req);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		lt_rmpp_seg(mad, lt_tid(a, 3), order[i]);
		KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad,
						   KTEST_LID(2), 1), 0);
		ktest_quiesce(t->kd);
	}
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->req[0], req);
	KUNIT_EXPECT_EQ(test, ra->len[0], IB_MGMT_SA_HDR + 456);
	lt_expect_rmpp_data(test, ra->data[0] + IB_MGMT_SA_HDR, 456);
	/* the ACKs made it out: after 1, again after the repeated 2, 3 */
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq,
						   lt_last_ack(t, &acks) == 3,
						   LT_WAIT));
	KUNIT_EXPECT_EQ(test, acks, 3);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* The receiver ends our RMPP send with ABORT, or with STOP. */
static void rmpp_abort_stop(struct kunit *test)
{
	static const u8 types[] = { IB_MGMT_RMPP_TYPE_ABORT,
				    IB_MGMT_RMPP_TYPE_STOP };
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)mad;
	struct ib_mad_agent *a;
	int i;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	t->tap.drop_from = 1;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		lt_post(t, lt_rmpp_msg(t, a, LT_GETMULTI, lt_tid(a, 20 + i),
				       1000));
		KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq,
							   lt_tapped(t) >= i + 1,
							   LT_WAIT));
		lt_hdr(mad, LT_SA, 2, LT_GETMULTI | IB_MGMT_METHOD_RESP,
		       lt_tid(a, 20 + i));
		rm->rmpp_hdr.rmpp_version = IB_MGMT_RMPP_VERSION;
		rm->rmpp_hdr.rmpp_type = types[i];
		ib_set_rmpp_flags(&rm->rmpp_hdr, IB_MGMT_RMPP_FLAG_ACTIVE);
		rm->rmpp_hdr.rmpp_status = IB_MGMT_RMPP_STATUS_UNV;
		KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad,
						   KTEST_LID(2), 1), 0);
		lt_wait_sends(t, ra, i + 1);
		KUNIT_EXPECT_EQ(test, ra->sstatus[i], IB_WC_REM_ABORT_ERR);
	}
	/* only segment 1 of each went out: the window never opened */
	KUNIT_EXPECT_EQ(test, lt_tapped(t), 2);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* Two RMPP sends of one agent may not share a TID (ACKs find them by it). */
static void rmpp_duplicate_tid(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *s1, *s2;
	struct ib_mad_agent *a;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	t->tap.drop_from = 1;
	s1 = lt_rmpp_msg(t, a, LT_GETMULTI, lt_tid(a, 1), 1000);
	s2 = lt_rmpp_msg(t, a, LT_GETMULTI, lt_tid(a, 1), 1000);
	lt_post(t, s1);
	KUNIT_EXPECT_EQ(test, ib_post_send_mad(s2, NULL), -EBUSY);
	ib_cancel_mad(a, s1);
	lt_wait_sends(t, ra, 1);
	/* the TID is free again */
	KUNIT_EXPECT_EQ(test, ib_post_send_mad(s2, NULL), 0);
	ib_unregister_mad_agent(a);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 2);
	lt_teardown(t);
}

/*
 * An agent that runs RMPP itself (rmpp_version 0, umad's user RMPP) gets
 * every segment of a response: the first one with its request, the
 * others, and RMPP responses nobody waits for, without.  Responses that
 * are not RMPP and that nobody waits for are still dropped.
 */
static void rmpp_user_segments(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *req;
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_mad_agent *a;
	u32 seg;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	req = lt_msg(t, a, LT_SA, 2, LT_GETTABLE, lt_tid(a, 4), 60000, 0);
	lt_post(t, req);
	for (seg = 1; seg <= 3; seg++) {
		lt_rmpp_seg(mad, lt_tid(a, 4), seg);
		KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad,
						   KTEST_LID(2), 1), 0);
	}
	lt_wait_recvs(t, ra, 3);
	lt_wait_sends(t, ra, 1);
	KUNIT_EXPECT_PTR_EQ(test, ra->req[0], req);
	KUNIT_EXPECT_NULL(test, ra->req[1]);
	KUNIT_EXPECT_NULL(test, ra->req[2]);
	for (seg = 1; seg <= 3; seg++)
		KUNIT_EXPECT_EQ(test, be32_to_cpu(((struct ib_rmpp_mad *)
						   ra->data[seg - 1])->rmpp_hdr.seg_num),
				seg);
	KUNIT_EXPECT_EQ(test, ra->sstatus[0], IB_WC_SUCCESS);

	/* RMPP, no send waits: delivered; not RMPP: dropped */
	lt_rmpp_seg(mad, lt_tid(a, 77), 1);
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	lt_wait_recvs(t, ra, 4);
	KUNIT_EXPECT_NULL(test, ra->req[3]);
	lt_hdr(mad, LT_SA, 2, LT_GETTABLE | IB_MGMT_METHOD_RESP, lt_tid(a, 78));
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	ktest_quiesce(t->kd);
	msleep(20);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 4);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/*
 * User RMPP: the first segment from a node the request did not go to
 * does not complete it (it is passed on, without the request).
 */
static void rmpp_user_sender(struct kunit *test)
{
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *req;
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_mad_agent *a;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, 0, ra);
	t->tap.drop_from = 1;
	req = lt_msg(t, a, LT_SA, 2, LT_GETTABLE, lt_tid(a, 4), 60000, 0);
	lt_post(t, req);
	lt_rmpp_seg(mad, lt_tid(a, 4), 1);
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, 0x99, 1), 0);
	lt_wait_recvs(t, ra, 1);
	KUNIT_EXPECT_NULL(test, ra->req[0]);
	KUNIT_EXPECT_EQ(test, lt_nsend(ra), 0);
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1), 0);
	lt_wait_recvs(t, ra, 2);
	KUNIT_EXPECT_PTR_EQ(test, ra->req[1], req);
	lt_wait_sends(t, ra, 1);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/* A DATA segment of an SA GetTable response, its data left zero. */
static void lt_rmpp_data(u8 *mad, __be64 tid, u32 seg, u8 flags, u32 paylen)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)mad;

	lt_hdr(mad, LT_SA, 2, LT_GETTABLE | IB_MGMT_METHOD_RESP, tid);
	rm->rmpp_hdr.rmpp_version = IB_MGMT_RMPP_VERSION;
	rm->rmpp_hdr.rmpp_type = IB_MGMT_RMPP_TYPE_DATA;
	ib_set_rmpp_flags(&rm->rmpp_hdr, IB_MGMT_RMPP_FLAG_ACTIVE | flags);
	rm->rmpp_hdr.seg_num = cpu_to_be32(seg);
	rm->rmpp_hdr.paylen_newwin = cpu_to_be32(paylen);
}

static int lt_nstop(struct lt *t)
{
	unsigned long irq;
	int n;

	spin_lock_irqsave(&t->tap.lock, irq);
	n = t->tap.nstop;
	spin_unlock_irqrestore(&t->tap.lock, irq);
	return n;
}

static bool lt_rx_empty(struct ib_mad_agent *a)
{
	struct ib_mad_agent_priv *ap = ib_mad_agent_priv(a);
	unsigned long irq;
	bool empty;

	spin_lock_irqsave(&ap->lock, irq);
	empty = list_empty(&ap->rmpp_rx);
	spin_unlock_irqrestore(&ap->lock, irq);
	return empty;
}

/* The one STOP seen: RESX, for @tid, back to the sender (R bit flipped). */
static void lt_expect_stop_resx(struct lt *t, __be64 tid)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)t->tap.stop;

	long seen = wait_event_timeout(t->wq, lt_nstop(t) >= 1, LT_WAIT);

	KUNIT_ASSERT_TRUE_MSG(t->test, seen, "no RMPP STOP or ABORT sent");
	KUNIT_EXPECT_EQ(t->test, lt_nstop(t), 1);
	KUNIT_EXPECT_EQ(t->test, rm->rmpp_hdr.rmpp_type,
			IB_MGMT_RMPP_TYPE_STOP);
	KUNIT_EXPECT_EQ(t->test, rm->rmpp_hdr.rmpp_status,
			IB_MGMT_RMPP_STATUS_RESX);
	KUNIT_EXPECT_TRUE(t->test, rm->mad_hdr.tid == tid);
	KUNIT_EXPECT_EQ(t->test, rm->mad_hdr.method, LT_GETTABLE);
}

/*
 * A response whose first segment announces more than IB_MAD_RMPP_MAX_DATA
 * bytes is stopped at once (STOP, RESX) and nothing of it is kept; one
 * that announces the cap exactly is taken.
 */
static void rmpp_rx_cap_announced(struct kunit *test)
{
	/* SA: 200 data bytes in each 220 after the RMPP header */
	const u32 segs = DIV_ROUND_UP(IB_MAD_RMPP_MAX_DATA + 1, 200);
	const u32 over = segs * 220 - (segs * 200 - IB_MAD_RMPP_MAX_DATA - 1);
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *req;
	u8 mad[IB_MGMT_MAD_SIZE];
	struct ib_mad_agent *a;
	int acks;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	t->tap.drop_from = 1;
	req = lt_msg(t, a, LT_SA, 2, LT_GETTABLE, lt_tid(a, 9), 60000, 0);
	lt_post(t, req);
	lt_rmpp_data(mad, lt_tid(a, 9), 1, IB_MGMT_RMPP_FLAG_FIRST, over);
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1),
			0);
	lt_expect_stop_resx(t, lt_tid(a, 9));
	KUNIT_EXPECT_TRUE(test, lt_rx_empty(a));
	KUNIT_EXPECT_EQ(test, lt_last_ack(t, &acks), -1);

	/* one byte less: the cap itself is fine, segment 1 is ACKed */
	lt_rmpp_data(mad, lt_tid(a, 9), 1, IB_MGMT_RMPP_FLAG_FIRST, over - 1);
	KUNIT_ASSERT_EQ(test, ktest_inject(t->kd, 1, 1, mad, KTEST_LID(2), 1),
			0);
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(t->wq,
						   lt_last_ack(t, &acks) == 1,
						   LT_WAIT));
	KUNIT_EXPECT_FALSE(test, lt_rx_empty(a));
	KUNIT_EXPECT_EQ(test, lt_nstop(t), 1);
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 0);
	ib_cancel_mad(a, req);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

/*
 * Wait until ib_mad has taken all that arrived and QP1's receive ring is
 * full again on the "hardware" (ib_mad's own count also holds buffers
 * whose completions it has not polled yet).
 */
static void lt_drain_port(struct lt *t, struct ib_mad_port *port)
{
	unsigned long end = jiffies + LT_WAIT;

	for (;;) {
		ktest_quiesce(t->kd);
		flush_workqueue(port->wq);
		if (ktest_rq_len(t->kd, port->port_num, 1) == IB_MAD_RECV_DEPTH)
			return;
		KUNIT_ASSERT_TRUE_MSG(t->test, time_before(jiffies, end),
				      "receive queue at %d",
				      ktest_rq_len(t->kd, port->port_num, 1));
		usleep_range(500, 1000);
	}
}

/* Inject DATA segments @from..@to (none LAST) and let ib_mad take them. */
static void lt_inject_segs(struct lt *t, __be64 tid, u32 from, u32 to)
{
	struct ib_mad_port *port = ib_mad_port_get(&t->kd->ibdev, 1);
	u8 *mad = kunit_kmalloc(t->test, IB_MGMT_MAD_SIZE, GFP_KERNEL);
	u32 seg;

	KUNIT_ASSERT_NOT_NULL(t->test, mad);
	for (seg = from; seg <= to; seg++) {
		lt_rmpp_data(mad, tid, seg,
			     seg == 1 ? IB_MGMT_RMPP_FLAG_FIRST : 0, 0);
		KUNIT_ASSERT_EQ(t->test, ktest_inject(t->kd, 1, 1, mad,
						      KTEST_LID(2), 1), 0);
		/* never more in flight than the receive queue holds */
		if (seg % 128 == 0 || seg == to)
			lt_drain_port(t, port);
	}
}

/*
 * A response that announces no length (PayloadLength 0) is stopped by
 * the running total: 20971 SA segments (4194200 bytes) are kept, the
 * 20972nd (4194400) ends the transfer with STOP, RESX, and frees what it
 * gathered; its later segments are dropped without another STOP.
 */
static void rmpp_rx_cap_running(struct kunit *test)
{
	const u32 segs = DIV_ROUND_UP(IB_MAD_RMPP_MAX_DATA, 200);
	struct lt *t = lt_setup(test);
	struct lt_rec *ra = lt_rec(test);
	struct ib_mad_send_buf *req;
	struct ib_mad_agent *a;
	__be64 tid;

	a = lt_agent(t, 1, LT_SA, 2, NULL, 0, IB_MGMT_RMPP_VERSION, ra);
	t->tap.drop_from = 1;
	tid = lt_tid(a, 11);
	req = lt_msg(t, a, LT_SA, 2, LT_GETTABLE, tid, 60000, 0);
	lt_post(t, req);
	lt_inject_segs(t, tid, 1, segs - 1);
	KUNIT_EXPECT_EQ(test, lt_nstop(t), 0);
	KUNIT_EXPECT_FALSE(test, lt_rx_empty(a));
	lt_inject_segs(t, tid, segs, segs + 2);
	lt_expect_stop_resx(t, tid);
	KUNIT_EXPECT_TRUE(test, lt_rx_empty(a));
	KUNIT_EXPECT_EQ(test, lt_nrecv(ra), 0);
	ib_cancel_mad(a, req);
	ib_unregister_mad_agent(a);
	lt_teardown(t);
}

static struct kunit_case mad_rmpp_loop_cases[] = {
	KUNIT_CASE(rmpp_end_to_end),
	KUNIT_CASE(rmpp_reassembly),
	KUNIT_CASE(rmpp_abort_stop),
	KUNIT_CASE(rmpp_duplicate_tid),
	KUNIT_CASE(rmpp_user_segments),
	KUNIT_CASE(rmpp_user_sender),
	KUNIT_CASE(rmpp_rx_cap_announced),
	KUNIT_CASE(rmpp_rx_cap_running),
	{}
};

static struct kunit_suite mad_rmpp_loop_suite = {
	.name = "ib_mad_rmpp_loop",
	.test_cases = mad_rmpp_loop_cases,
};

kunit_test_suites(&mad_send_suite, &mad_dispatch_suite, &mad_refill_suite,
		  &mad_port_suite, &mad_rmpp_loop_suite);
