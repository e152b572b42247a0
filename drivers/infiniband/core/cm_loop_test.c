// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of ib_cm at work: two CM endpoints on the fake HCA
 * (ktest_dev.h), whose ports 1 (LID 0x11) and 2 (LID 0x12) are looped
 * through the real ib_mad. The active side connects from port 1, the
 * listener answers on port 2. A tap counts each CM message on the wire
 * by kind and can lose the first ones of a kind. Timeouts are tens of ms;
 * every wait is bounded so a broken case fails instead of hanging.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>

#include <rdma/ib_cm.h>

#include "cm_msgs.h"
#include "ktest_dev.h"

#define CLT_WAIT	(2 * HZ)
#define CLT_MAX_EV	32
#define CLT_SID		cpu_to_be64(0x1000000000000abcULL)
/*
 * 4.096 us * 2^15 = 134 ms for each answer: a test thread delayed by a
 * loaded machine still answers before the first resend.
 */
#define CLT_RESP	15

/* 6.1's KUnit has no KUNIT_EXPECT_MEMEQ */
#define CLT_EXPECT_SAME(test, a, b, n) \
	KUNIT_EXPECT_EQ(test, memcmp(a, b, n), 0)

struct clt_ev {
	struct ib_cm_id		*id;
	enum ib_cm_event_type	type;
	u8			pdata[16];
	int			reason;
	u8			service_timeout;
	u32			remote_qpn, psn, qkey;
	u16			pkey;
	struct ib_cm_id		*listen_id;
	/* IB_CM_LAP_RECEIVED: the alternate path as the receiver sees it */
	struct ib_sa_path_rec	alt;
	/* IB_CM_APR_RECEIVED: the additional information */
	u8			info[8], info_len;
};

struct clt {
	struct kunit		*test;
	struct ktest_dev	*kd;
	/* guards everything below */
	spinlock_t		lock;
	wait_queue_head_t	wq;
	int			nev;
	struct clt_ev		ev[CLT_MAX_EV];
	int			sent[CM_MSG_KIND_COUNT];
	u8			rep_image[2][IB_MGMT_MAD_SIZE];
	/* lose this many messages of drop_kind (-1: all) */
	int			drop_kind, drop_left;
	/* a copy of the first message of capture_kind on the wire */
	int			capture_kind;
	bool			captured;
	u8			capture[IB_MGMT_MAD_SIZE];
	/* the handler waits for this one for gate_event when set */
	struct completion	*gate;
	enum ib_cm_event_type	gate_event;
	bool			in_handler, handler_done;
	/* the handler returns this for IB_CM_REQ_RECEIVED */
	int			req_ret;
};

static enum ktest_verdict clt_tap(struct ktest_dev *kd, u8 port, u32 qpn,
				  const void *mad)
{
	const struct ib_mad_hdr *h = mad;
	struct clt *c = kd->tap_ctx;
	enum ktest_verdict v = KTEST_DELIVER;
	unsigned long irq;
	int kind;

	if (h->mgmt_class != IB_MGMT_CLASS_CM)
		return v;
	kind = cm_msg_kind_of_attr(be16_to_cpu(h->attr_id));
	if (kind < 0)
		return v;
	spin_lock_irqsave(&c->lock, irq);
	if (kind == CM_MSG_REP && c->sent[kind] < 2)
		memcpy(c->rep_image[c->sent[kind]], mad, IB_MGMT_MAD_SIZE);
	c->sent[kind]++;
	if (kind == c->capture_kind && !c->captured) {
		memcpy(c->capture, mad, IB_MGMT_MAD_SIZE);
		c->captured = true;
	}
	if (kind == c->drop_kind && c->drop_left) {
		if (c->drop_left > 0)
			c->drop_left--;
		v = KTEST_DROP;
	}
	spin_unlock_irqrestore(&c->lock, irq);
	wake_up(&c->wq);
	return v;
}

static int clt_handler(struct ib_cm_id *id, struct ib_cm_event *event)
{
	struct clt *c = id->context;
	struct completion *gate = NULL;
	struct clt_ev *e;
	unsigned long irq;
	int ret = 0;

	spin_lock_irqsave(&c->lock, irq);
	if (c->gate && event->event == c->gate_event) {
		gate = c->gate;
		c->in_handler = true;
	}
	if (c->nev < CLT_MAX_EV) {
		e = &c->ev[c->nev];
		e->id = id;
		e->type = event->event;
		if (event->private_data)
			memcpy(e->pdata, event->private_data, sizeof(e->pdata));
		switch (event->event) {
		case IB_CM_REQ_RECEIVED:
			e->listen_id = event->param.req_rcvd.listen_id;
			e->remote_qpn = event->param.req_rcvd.remote_qpn;
			e->psn = event->param.req_rcvd.starting_psn;
			ret = c->req_ret;
			break;
		case IB_CM_REP_RECEIVED:
			e->remote_qpn = event->param.rep_rcvd.remote_qpn;
			e->psn = event->param.rep_rcvd.starting_psn;
			break;
		case IB_CM_REJ_RECEIVED:
			e->reason = event->param.rej_rcvd.reason;
			break;
		case IB_CM_MRA_RECEIVED:
			e->service_timeout = event->param.mra_rcvd.service_timeout;
			break;
		case IB_CM_REQ_ERROR:
		case IB_CM_SIDR_REQ_ERROR:
		case IB_CM_LAP_ERROR:
			e->reason = event->param.send_status;
			break;
		case IB_CM_LAP_RECEIVED:
			e->alt = *event->param.lap_rcvd.alternate_path;
			break;
		case IB_CM_APR_RECEIVED:
			e->reason = event->param.apr_rcvd.ap_status;
			e->info_len = event->param.apr_rcvd.info_len;
			memcpy(e->info, event->param.apr_rcvd.apr_info,
			       min_t(u8, e->info_len, sizeof(e->info)));
			break;
		case IB_CM_SIDR_REQ_RECEIVED:
			e->listen_id = event->param.sidr_req_rcvd.listen_id;
			e->pkey = event->param.sidr_req_rcvd.pkey;
			break;
		case IB_CM_SIDR_REP_RECEIVED:
			e->reason = event->param.sidr_rep_rcvd.status;
			e->remote_qpn = event->param.sidr_rep_rcvd.qpn;
			e->qkey = event->param.sidr_rep_rcvd.qkey;
			break;
		default:
			break;
		}
		c->nev++;
	}
	spin_unlock_irqrestore(&c->lock, irq);
	wake_up(&c->wq);
	if (gate) {
		wait_for_completion_timeout(gate, CLT_WAIT);
		msleep(20);
		spin_lock_irqsave(&c->lock, irq);
		c->handler_done = true;
		spin_unlock_irqrestore(&c->lock, irq);
	}
	return ret;
}

static struct clt *clt_setup(struct kunit *test)
{
	struct clt *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->test = test;
	spin_lock_init(&c->lock);
	init_waitqueue_head(&c->wq);
	c->drop_kind = -1;
	c->capture_kind = -1;
	c->kd = ktest_dev_alloc(test, "clt%d");
	c->kd->tap = clt_tap;
	c->kd->tap_ctx = c;
	KUNIT_ASSERT_EQ(test, ib_register_device(&c->kd->ibdev), 0);
	return c;
}

static void clt_teardown(struct clt *c)
{
	ib_unregister_device(&c->kd->ibdev);
	ktest_quiesce(c->kd);
	KUNIT_EXPECT_EQ(c->test, atomic_read(&c->kd->live_objects), 0);
	ib_dealloc_device(&c->kd->ibdev);
}

static int clt_count(struct clt *c, struct ib_cm_id *id,
		     enum ib_cm_event_type type)
{
	unsigned long irq;
	int i, n = 0;

	spin_lock_irqsave(&c->lock, irq);
	for (i = 0; i < c->nev; i++)
		if (c->ev[i].type == type && (!id || c->ev[i].id == id))
			n++;
	spin_unlock_irqrestore(&c->lock, irq);
	return n;
}

static int clt_sent(struct clt *c, enum cm_msg_kind kind)
{
	unsigned long irq;
	int n;

	spin_lock_irqsave(&c->lock, irq);
	n = c->sent[kind];
	spin_unlock_irqrestore(&c->lock, irq);
	return n;
}

/* The first event of @type (for @id, or any id), waited for. */
static struct clt_ev *clt_wait(struct clt *c, struct ib_cm_id *id,
			       enum ib_cm_event_type type)
{
	unsigned long irq;
	int i;

	if (!wait_event_timeout(c->wq, clt_count(c, id, type) > 0, CLT_WAIT))
		return NULL;
	spin_lock_irqsave(&c->lock, irq);
	for (i = 0; i < c->nev; i++)
		if (c->ev[i].type == type && (!id || c->ev[i].id == id))
			break;
	spin_unlock_irqrestore(&c->lock, irq);
	return &c->ev[i];
}

/* The @n-th event (from 1) of @type for @id (or any id), waited for. */
static struct clt_ev *clt_wait_nth(struct clt *c, struct ib_cm_id *id,
				   enum ib_cm_event_type type, int n)
{
	unsigned long irq;
	int i, seen = 0;

	if (!wait_event_timeout(c->wq, clt_count(c, id, type) >= n, CLT_WAIT))
		return NULL;
	spin_lock_irqsave(&c->lock, irq);
	for (i = 0; i < c->nev; i++)
		if (c->ev[i].type == type && (!id || c->ev[i].id == id) &&
		    ++seen == n)
			break;
	spin_unlock_irqrestore(&c->lock, irq);
	return &c->ev[i];
}

/*
 * The captured message, unpacked into @msg (a struct of its kind), so a
 * case can change a field and send it with clt_inject().
 */
static void clt_captured(struct clt *c, enum cm_msg_kind kind, void *msg)
{
	KUNIT_ASSERT_TRUE(c->test, wait_event_timeout(c->wq, READ_ONCE(c->captured),
						      CLT_WAIT));
	KUNIT_ASSERT_EQ(c->test, cm_msg_unpack(kind, c->capture + IB_MGMT_MAD_HDR,
					       msg), 0);
}

/* @msg, of @kind, arrives at @port's CM from the other port's. */
static void clt_inject(struct clt *c, enum cm_msg_kind kind, const void *msg,
		       u8 port)
{
	u8 mad[IB_MGMT_MAD_SIZE];

	memcpy(mad, c->capture, IB_MGMT_MAD_HDR);
	KUNIT_ASSERT_EQ(c->test, cm_msg_pack(kind, msg, mad + IB_MGMT_MAD_HDR), 0);
	KUNIT_ASSERT_EQ(c->test, ktest_inject(c->kd, port, 1, mad,
					      KTEST_LID(3 - port), 1), 0);
}

static struct ib_sa_path_rec clt_path = {
	.slid = cpu_to_be16(KTEST_LID(1)),
	.dlid = cpu_to_be16(KTEST_LID(2)),
	.pkey = cpu_to_be16(0xffff),
	.mtu = IB_MTU_1024,
	.rate = 3,
	.packet_life_time = 0,
};

static const u8 clt_req_pdata[16] = "request-data-01";

/*
 * Connect @id to @sid; @local_resp is how long our CM says it takes to
 * answer, which is how long the peer waits before resending its REP.
 */
static int clt_connect_q(struct clt *c, struct ib_cm_id *id, __be64 sid,
			 u8 remote_resp, u8 local_resp, u8 retries, u32 qpn)
{
	struct ib_cm_req_param p = {
		.primary_path = &clt_path,
		.service_id = sid,
		.qp_type = IB_QPT_RC,
		.qp_num = qpn,
		.starting_psn = 0x1234,
		.private_data = clt_req_pdata,
		.private_data_len = sizeof(clt_req_pdata),
		.responder_resources = 3,
		.initiator_depth = 2,
		.remote_cm_response_timeout = remote_resp,
		.local_cm_response_timeout = local_resp,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.max_cm_retries = retries,
	};

	return ib_send_cm_req(id, &p);
}

static int clt_connect_r(struct clt *c, struct ib_cm_id *id, __be64 sid,
			 u8 remote_resp, u8 local_resp, u8 retries)
{
	return clt_connect_q(c, id, sid, remote_resp, local_resp, retries, 0x100);
}

static int clt_connect_t(struct clt *c, struct ib_cm_id *id, __be64 sid,
			 u8 remote_resp, u8 local_resp)
{
	return clt_connect_r(c, id, sid, remote_resp, local_resp, 3);
}

static int clt_connect(struct clt *c, struct ib_cm_id *id, __be64 sid)
{
	return clt_connect_t(c, id, sid, CLT_RESP, CLT_RESP);
}

static const u8 clt_rep_pdata[16] = "reply-data-0002";

static int clt_accept_qpn(struct ib_cm_id *id, u32 qpn)
{
	struct ib_cm_rep_param p = {
		.qp_num = qpn,
		.starting_psn = 0x5678,
		.private_data = clt_rep_pdata,
		.private_data_len = sizeof(clt_rep_pdata),
		.responder_resources = 1,
		.initiator_depth = 1,
		.rnr_retry_count = 7,
	};

	return ib_send_cm_rep(id, &p);
}

static int clt_accept(struct ib_cm_id *id)
{
	return clt_accept_qpn(id, 0x200);
}

/* A listener and an active id, both with @c as context. */
static void clt_ids(struct clt *c, struct ib_cm_id **listen,
		    struct ib_cm_id **active)
{
	*listen = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(c->test, IS_ERR(*listen));
	KUNIT_ASSERT_EQ(c->test, ib_cm_listen(*listen, CLT_SID, 0), 0);
	*active = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(c->test, IS_ERR(*active));
}

/* REQ, REP, RTU, then DREQ, DREP and timewait on both sides. */
static void clt_full_exchange(struct kunit *test)
{
	static const u8 rtu[16] = "ready-to-use-03", dreq[16] = "disconnect-04",
		drep[16] = "disconnected-05";
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct ib_qp_attr attr = {};
	struct clt_ev *e;
	int mask;

	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_REQ_SENT);

	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_EXPECT_PTR_EQ(test, e->listen_id, listen);
	KUNIT_EXPECT_NE(test, (uintptr_t)passive, (uintptr_t)listen);
	KUNIT_EXPECT_EQ(test, e->remote_qpn, 0x100);
	KUNIT_EXPECT_EQ(test, e->psn, 0x1234);
	CLT_EXPECT_SAME(test, e->pdata, clt_req_pdata, sizeof(e->pdata));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_REQ_RCVD);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(passive->remote_id),
			be32_to_cpu(active->local_id));

	attr.qp_state = IB_QPS_RTR;
	KUNIT_EXPECT_EQ(test, ib_cm_init_qp_attr(passive, &attr, &mask), 0);
	KUNIT_EXPECT_EQ(test, attr.dest_qp_num, 0x100);
	/* the REQ's starting PSN is the one the passive side sends from */
	KUNIT_EXPECT_EQ(test, attr.ah_attr.dlid, KTEST_LID(1));
	/*
	 * RTS before the REP, as rdma_accept() asks for it: the REQ's PSN,
	 * and as many reads in flight as the REQ's responder resources.
	 */
	attr.qp_state = IB_QPS_RTS;
	KUNIT_EXPECT_EQ(test, ib_cm_init_qp_attr(passive, &attr, &mask), 0);
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_SQ_PSN);
	KUNIT_EXPECT_EQ(test, attr.sq_psn, 0x1234);
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_MAX_QP_RD_ATOMIC);
	KUNIT_EXPECT_EQ(test, attr.max_rd_atomic, 3);

	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	attr.qp_state = IB_QPS_RTR;
	KUNIT_EXPECT_EQ(test, ib_cm_init_qp_attr(passive, &attr, &mask), 0);
	KUNIT_EXPECT_EQ(test, attr.rq_psn, 0x5678);
	e = clt_wait(c, active, IB_CM_REP_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->remote_qpn, 0x200);
	KUNIT_EXPECT_EQ(test, e->psn, 0x5678);
	CLT_EXPECT_SAME(test, e->pdata, clt_rep_pdata, sizeof(e->pdata));
	KUNIT_EXPECT_EQ(test, be32_to_cpu(active->remote_id),
			be32_to_cpu(passive->local_id));
	attr.qp_state = IB_QPS_RTR;
	KUNIT_EXPECT_EQ(test, ib_cm_init_qp_attr(active, &attr, &mask), 0);
	KUNIT_EXPECT_EQ(test, attr.dest_qp_num, 0x200);
	KUNIT_EXPECT_EQ(test, attr.ah_attr.dlid, KTEST_LID(2));

	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, rtu, sizeof(rtu)), 0);
	e = clt_wait(c, passive, IB_CM_RTU_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	CLT_EXPECT_SAME(test, e->pdata, rtu, sizeof(rtu));
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_ESTABLISHED);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);

	KUNIT_ASSERT_EQ(test, ib_send_cm_dreq(active, dreq, sizeof(dreq)), 0);
	e = clt_wait(c, passive, IB_CM_DREQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	CLT_EXPECT_SAME(test, e->pdata, dreq, sizeof(dreq));
	KUNIT_ASSERT_EQ(test, ib_send_cm_drep(passive, drep, sizeof(drep)), 0);
	e = clt_wait(c, active, IB_CM_DREP_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	CLT_EXPECT_SAME(test, e->pdata, drep, sizeof(drep));

	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_TIMEWAIT_EXIT));
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_TIMEWAIT_EXIT));
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REQ), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REP), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REJ), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* A REQ for a service nobody listens on: REJ INVALID_SERVICE_ID. */
static void clt_rej_unknown_service(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, cpu_to_be64(0x4242)), 0);
	e = clt_wait(c, active, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_INVALID_SERVICE_ID);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_REQ_RECEIVED), 0);
	/* the REJ stopped the retransmission */
	msleep(300);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REQ), 1);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* Every REQ lost: MaxCMRetries resends, then IB_CM_REQ_ERROR. */
static void clt_req_timeout(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active;
	struct clt_ev *e;

	c->drop_kind = CM_MSG_REQ;
	c->drop_left = -1;
	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, active, IB_CM_REQ_ERROR);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_WC_RESP_TIMEOUT_ERR);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REQ), 1 + 3);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	/* the peer is told with REJ TIMEOUT (it knows no such id) */
	KUNIT_EXPECT_TRUE(test,
			  wait_event_timeout(c->wq, clt_sent(c, CM_MSG_REJ) == 1,
					     CLT_WAIT));
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_REQ_RECEIVED), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* An MRA stretches the wait: no REQ resent, no timeout, then the REP. */
static void clt_mra_extends_wait(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	/* each REQ wait is 2^15 * 4.096 us = 134 ms: the MRA comes within it */
	KUNIT_ASSERT_EQ(test, clt_connect_t(c, active, CLT_SID, 15, CLT_RESP),
			0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	/* 4.096 us * 2^19 = 2.1 s */
	KUNIT_ASSERT_EQ(test, ib_send_cm_mra(passive, 19, NULL, 0), 0);
	e = clt_wait(c, active, IB_CM_MRA_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->service_timeout, 19);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_MRA_REQ_RCVD);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_MRA_REQ_SENT);

	/* four normal waits (134 ms each) would have ended in REQ_ERROR */
	msleep(700);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REQ), 1);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_REQ_ERROR), 0);

	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* The REP is lost; the repeated REQ is answered with the stored REP. */
static void clt_dup_req_resends_rep(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	c->drop_kind = CM_MSG_REP;
	c->drop_left = 1;
	clt_ids(c, &listen, &active);
	/*
	 * The passive side would resend its REP itself only after 4.3 s
	 * (2^20 * 4.096 us): the REP that arrives within the wait is the
	 * answer to the repeated REQ.
	 */
	KUNIT_ASSERT_EQ(test, clt_connect_t(c, active, CLT_SID, CLT_RESP, 20),
			0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);

	e = clt_wait(c, active, IB_CM_REP_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	CLT_EXPECT_SAME(test, e->pdata, clt_rep_pdata, sizeof(e->pdata));
	KUNIT_EXPECT_GE(test, clt_sent(c, CM_MSG_REQ), 2);
	KUNIT_EXPECT_GE(test, clt_sent(c, CM_MSG_REP), 2);
	/* the same REP, byte for byte, and one REQ event only */
	CLT_EXPECT_SAME(test, c->rep_image[0], c->rep_image[1],
			IB_MGMT_MAD_SIZE);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_REQ_RECEIVED), 1);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_REP_SENT);

	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_RTU_RECEIVED));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

struct clt_destroyer {
	struct ib_cm_id		*id;
	struct clt		*c;
	bool			done;
	bool			handler_was_done;
	struct completion	finished;
};

static int clt_destroy_thread(void *arg)
{
	struct clt_destroyer *d = arg;
	unsigned long irq;

	ib_destroy_cm_id(d->id);
	spin_lock_irqsave(&d->c->lock, irq);
	d->handler_was_done = d->c->handler_done;
	d->done = true;
	spin_unlock_irqrestore(&d->c->lock, irq);
	complete(&d->finished);
	return 0;
}

/* ib_destroy_cm_id() waits for the handler that runs. */
static void clt_destroy_waits_for_handler(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_destroyer d = {};
	struct completion gate;
	struct task_struct *t;
	struct clt_ev *e;

	init_completion(&gate);
	init_completion(&d.finished);
	c->gate = &gate;
	c->gate_event = IB_CM_REP_RECEIVED;
	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));

	/* the handler is now blocked on the gate */
	d.id = active;
	d.c = c;
	t = kthread_run(clt_destroy_thread, &d, "clt_destroy");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	msleep(100);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(d.done));
	complete(&gate);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&d.finished,
							    CLT_WAIT));
	KUNIT_EXPECT_TRUE(test, d.handler_was_done);
	/* the passive side hears of it: REJ CONSUMER_DEFINED */
	e = clt_wait(c, passive, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_CONSUMER_DEFINED);

	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* A handler's non-zero return destroys the new id: the REQ is rejected. */
static void clt_handler_return_destroys(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active;
	struct clt_ev *e;

	c->req_ret = -ENOMEM;
	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, active, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_CONSUMER_DEFINED);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_REQ_RECEIVED), 1);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* The consumer rejects the REQ, with private data. */
static void clt_consumer_rej(struct kunit *test)
{
	static const u8 why[16] = "go-away-please";
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_EXPECT_EQ(test, ib_send_cm_rej(passive, IB_CM_REJ_CONSUMER_DEFINED,
					     NULL, 0, why, 200), -EINVAL);
	KUNIT_ASSERT_EQ(test, ib_send_cm_rej(passive, IB_CM_REJ_CONSUMER_DEFINED,
					     NULL, 0, why, sizeof(why)), 0);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_IDLE);
	e = clt_wait(c, active, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_CONSUMER_DEFINED);
	CLT_EXPECT_SAME(test, e->pdata, why, sizeof(why));
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	/* a call the state does not allow changes nothing */
	KUNIT_EXPECT_EQ(test, ib_send_cm_rtu(active, NULL, 0), -EINVAL);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * Every RTU lost: the passive side resends its REP MaxCMRetries times,
 * then IB_CM_REP_ERROR there and REJ TIMEOUT to the active side.
 */
static void clt_rep_timeout(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	c->drop_kind = CM_MSG_RTU;
	c->drop_left = -1;
	clt_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));
	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, NULL, 0), 0);

	e = clt_wait(c, passive, IB_CM_REP_ERROR);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REP), 1 + 3);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_IDLE);
	e = clt_wait(c, active, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_TIMEOUT);
	/* the active side may have run RTR: it goes through timewait */
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_TIMEWAIT_EXIT));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* ib_cm_establish() before the RTU: the event, and no more REP resends. */
static void clt_establish_before_rtu(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTS };
	struct clt_ev *e;
	int mask, reps;

	c->drop_kind = CM_MSG_RTU;
	c->drop_left = -1;
	clt_ids(c, &listen, &active);
	/* the passive side resends its REP every 2^14 * 4.096 us = 67 ms */
	KUNIT_ASSERT_EQ(test, clt_connect_t(c, active, CLT_SID, CLT_RESP, 14),
			0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_EXPECT_EQ(test, ib_cm_establish(passive), -EINVAL);
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));
	reps = clt_sent(c, CM_MSG_REP);
	KUNIT_ASSERT_EQ(test, ib_cm_establish(passive), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_USER_ESTABLISHED));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);
	KUNIT_EXPECT_EQ(test, ib_cm_init_qp_attr(passive, &attr, &mask), 0);
	KUNIT_EXPECT_EQ(test, attr.sq_psn, 0x1234);
	/* four REP waits are over: none was resent after the establish */
	msleep(400);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REP), reps);
	KUNIT_EXPECT_EQ(test, clt_count(c, passive, IB_CM_REP_ERROR), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* SIDR: a listen with a mask; the service below it is resolved. */
#define CLT_SIDR_BASE	cpu_to_be64(0x2000000000000a00ULL)
#define CLT_SIDR_MASK	cpu_to_be64(0xffffffffffffff00ULL)
#define CLT_SIDR_SID	cpu_to_be64(0x2000000000000a17ULL)

static const u8 clt_sidr_pdata[16] = "sidr-request-06";

static int clt_sidr_req(struct ib_cm_id *id, __be64 sid, int timeout_ms)
{
	struct ib_cm_sidr_req_param p = {
		.path = &clt_path,
		.service_id = sid,
		.timeout_ms = timeout_ms,
		.pkey = 0xffff,
		.max_cm_retries = 2,
		.private_data = clt_sidr_pdata,
		.private_data_len = sizeof(clt_sidr_pdata),
	};

	return ib_send_cm_sidr_req(id, &p);
}

static void clt_sidr_ids(struct clt *c, struct ib_cm_id **listen,
			 struct ib_cm_id **active)
{
	*listen = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(c->test, IS_ERR(*listen));
	KUNIT_ASSERT_EQ(c->test, ib_cm_listen(*listen, CLT_SIDR_BASE,
					      CLT_SIDR_MASK), 0);
	*active = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(c->test, IS_ERR(*active));
}

/* SIDR_REQ to a listened service, SIDR_REP with its QPN and Q_Key. */
static void clt_sidr_resolve(struct kunit *test)
{
	static const u8 answer[16] = "sidr-answer-007";
	struct ib_cm_sidr_rep_param rp = {
		.status = IB_SIDR_SUCCESS,
		.qp_num = 0x321,
		.qkey = 0x11112222,
		.private_data = answer,
		.private_data_len = sizeof(answer),
	};
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_sidr_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_sidr_req(active, CLT_SIDR_SID, 300), 0);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_SIDR_REQ_SENT);
	e = clt_wait(c, NULL, IB_CM_SIDR_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_EXPECT_PTR_EQ(test, e->listen_id, listen);
	KUNIT_EXPECT_NE(test, (uintptr_t)passive, (uintptr_t)listen);
	KUNIT_EXPECT_EQ(test, e->pkey, 0xffff);
	CLT_EXPECT_SAME(test, e->pdata, clt_sidr_pdata, sizeof(e->pdata));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_SIDR_REQ_RCVD);
	KUNIT_EXPECT_TRUE(test, passive->service_id == CLT_SIDR_SID);

	/* an info length over 72 bytes is refused */
	rp.info_length = IB_CM_SIDR_REP_INFO_LENGTH + 1;
	rp.info = answer;
	KUNIT_EXPECT_EQ(test, ib_send_cm_sidr_rep(passive, &rp), -EINVAL);
	rp.info_length = 0;
	rp.info = NULL;
	KUNIT_ASSERT_EQ(test, ib_send_cm_sidr_rep(passive, &rp), 0);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_IDLE);
	e = clt_wait(c, active, IB_CM_SIDR_REP_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_SIDR_SUCCESS);
	KUNIT_EXPECT_EQ(test, e->remote_qpn, 0x321);
	KUNIT_EXPECT_EQ(test, e->qkey, 0x11112222);
	CLT_EXPECT_SAME(test, e->pdata, answer, sizeof(answer));
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	/* the answer stopped the retransmission */
	msleep(400);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REQ), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REP), 1);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_SIDR_REQ_ERROR), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* A SIDR_REQ for a service nobody listens on: SIDR_REP UNSUPPORTED. */
static void clt_sidr_unknown_service(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active;
	struct clt_ev *e;

	clt_sidr_ids(c, &listen, &active);
	/* outside the listen's mask */
	KUNIT_ASSERT_EQ(test, clt_sidr_req(active, cpu_to_be64(0x2000000000000b17ULL),
					   300), 0);
	e = clt_wait(c, active, IB_CM_SIDR_REP_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_SIDR_UNSUPPORTED);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_SIDR_REQ_RECEIVED), 0);
	msleep(400);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REQ), 1);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* Every SIDR_REQ lost: MaxCMRetries resends, then IB_CM_SIDR_REQ_ERROR. */
static void clt_sidr_timeout(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active;
	struct clt_ev *e;

	c->drop_kind = CM_MSG_SIDR_REQ;
	c->drop_left = -1;
	clt_sidr_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_sidr_req(active, CLT_SIDR_SID, 50), 0);
	e = clt_wait(c, active, IB_CM_SIDR_REQ_ERROR);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_WC_RESP_TIMEOUT_ERR);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REQ), 1 + 2);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_SIDR_REQ_RECEIVED), 0);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_SIDR_REP_RECEIVED), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* A resent SIDR_REQ while the first is unanswered makes no second id. */
static void clt_sidr_duplicate(struct kunit *test)
{
	struct ib_cm_sidr_rep_param rp = {
		.status = IB_SIDR_SUCCESS,
		.qp_num = 0x654,
		.qkey = 0x33334444,
	};
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_sidr_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_sidr_req(active, CLT_SIDR_SID, 60), 0);
	e = clt_wait(c, NULL, IB_CM_SIDR_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	/* not answered: the requester resends */
	KUNIT_ASSERT_TRUE(test,
			  wait_event_timeout(c->wq,
					     clt_sent(c, CM_MSG_SIDR_REQ) >= 3,
					     CLT_WAIT));
	msleep(20);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_SIDR_REQ_RECEIVED), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REP), 0);
	KUNIT_ASSERT_EQ(test, ib_send_cm_sidr_rep(passive, &rp), 0);
	e = clt_wait(c, active, IB_CM_SIDR_REP_RECEIVED);
	if (e) {
		KUNIT_EXPECT_EQ(test, e->remote_qpn, 0x654);
		KUNIT_EXPECT_EQ(test, e->qkey, 0x33334444);
	} else {
		/* the last resend's wait may have ended just before */
		KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active,
						     IB_CM_SIDR_REQ_ERROR));
	}

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * The same SIDR_REQ again once it was answered: the IBA's passive SIDR
 * diagram keeps nothing after the SIDR_REP, and 6.1 takes it as a new
 * request (its id left the table when it replied), so it reaches the
 * listener again as a new id and gets a SIDR_REP of its own.
 */
static void clt_sidr_repeat_after_reply(struct kunit *test)
{
	struct ib_cm_sidr_rep_param rp = {
		.status = IB_SIDR_SUCCESS,
		.qp_num = 0x987,
		.qkey = 0x55556666,
	};
	struct ib_cm_id *listen, *active, *p1, *p2;
	struct clt *c = clt_setup(test);
	struct cm_sidr_req req;
	struct clt_ev *e;

	c->capture_kind = CM_MSG_SIDR_REQ;
	clt_sidr_ids(c, &listen, &active);
	KUNIT_ASSERT_EQ(test, clt_sidr_req(active, CLT_SIDR_SID, 300), 0);
	e = clt_wait(c, NULL, IB_CM_SIDR_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	p1 = e->id;
	KUNIT_ASSERT_EQ(test, ib_send_cm_sidr_rep(p1, &rp), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_SIDR_REP_RECEIVED));

	clt_captured(c, CM_MSG_SIDR_REQ, &req);
	clt_inject(c, CM_MSG_SIDR_REQ, &req, 2);
	e = clt_wait_nth(c, NULL, IB_CM_SIDR_REQ_RECEIVED, 2);
	KUNIT_ASSERT_NOT_NULL(test, e);
	p2 = e->id;
	KUNIT_EXPECT_NE(test, (uintptr_t)p2, (uintptr_t)p1);
	KUNIT_EXPECT_PTR_EQ(test, e->listen_id, listen);
	KUNIT_EXPECT_TRUE(test, p2->remote_id == req.request_id);
	KUNIT_EXPECT_EQ(test, p2->state, IB_CM_SIDR_REQ_RCVD);
	/* nothing was resent for it: the listener answers again */
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_SIDR_REP), 1);
	KUNIT_ASSERT_EQ(test, ib_send_cm_sidr_rep(p2, &rp), 0);
	KUNIT_ASSERT_TRUE(test,
			  wait_event_timeout(c->wq,
					     clt_sent(c, CM_MSG_SIDR_REP) == 2,
					     CLT_WAIT));
	/* the requester, idle again, ignores the second answer */
	msleep(50);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_SIDR_REP_RECEIVED), 1);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_IDLE);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(p2);
	ib_destroy_cm_id(p1);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* Connect active to a new passive id, with @retries; both ESTABLISHED. */
static struct ib_cm_id *clt_establish_r(struct clt *c, struct ib_cm_id *active,
					u8 retries)
{
	struct kunit *test = c->test;
	struct ib_cm_id *passive;
	struct clt_ev *e;
	int n = clt_count(c, NULL, IB_CM_RTU_RECEIVED);

	KUNIT_ASSERT_EQ(test, clt_connect_r(c, active, CLT_SID, CLT_RESP,
					    CLT_RESP, retries), 0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));
	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, NULL, 0), 0);
	KUNIT_ASSERT_TRUE(test,
			  wait_event_timeout(c->wq,
					     clt_count(c, NULL, IB_CM_RTU_RECEIVED) > n,
					     CLT_WAIT));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);
	return passive;
}

static struct ib_cm_id *clt_establish(struct clt *c, struct ib_cm_id *active)
{
	return clt_establish_r(c, active, 3);
}

/*
 * The active side vanishes without its DREQ arriving; a new REQ from the
 * same QP (QPN 0x100, same CA GUID) finds the old connection still
 * established: REJ STALE_CONN to it, and the old connection is torn
 * down with a DREQ, which the CM answers with a DREP for the unknown
 * comm ID, then timewait (IBA 12.9.8.3.1).
 */
static void clt_stale_conn(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive, *again;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	c->drop_kind = CM_MSG_DREQ;
	c->drop_left = 1;
	ib_destroy_cm_id(active);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_DREQ), 1);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);

	again = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(test, IS_ERR(again));
	KUNIT_ASSERT_EQ(test, clt_connect(c, again, CLT_SID), 0);
	e = clt_wait(c, again, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_STALE_CONN);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_REQ_RECEIVED), 1);
	/* the old connection: DREQ, the CM's DREP, timewait */
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_DREP_RECEIVED));
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_DREQ), 2);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_TIMEWAIT_EXIT));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_IDLE);
	/* the rejected REQ's id waits out timewait too (12.9.8.3.1) */
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, again, IB_CM_TIMEWAIT_EXIT));

	ib_destroy_cm_id(again);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* A DREQ for a comm ID the CM does not know is answered with a DREP. */
static void clt_dreq_unknown_id(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	c->drop_kind = CM_MSG_DREQ;
	c->drop_left = 1;
	ib_destroy_cm_id(active);

	KUNIT_ASSERT_EQ(test, ib_send_cm_dreq(passive, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_DREP_RECEIVED));
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_DREQ), 2);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_DREP), 1);
	KUNIT_EXPECT_EQ(test, clt_count(c, passive, IB_CM_DREQ_ERROR), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_TIMEWAIT_EXIT));

	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * The active side finds the stale connection (IBA 12.9.8.3.1): the
 * passive id of a connection vanishes without its DREQ arriving, so the
 * active one (a1) still holds the peer's QP 0x200. A new connection's REP
 * from that QP is refused with REJ STALE_CONN: the new active id gets that
 * REJ and goes through timewait, the passive one gets it too, and a1 is
 * torn down with a DREQ (answered by the CM for the unknown comm ID).
 */
static void clt_stale_rep(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *a1, *p1, *a2, *p2;
	struct clt_ev *e;

	clt_ids(c, &listen, &a1);
	p1 = clt_establish(c, a1);
	c->drop_kind = CM_MSG_DREQ;
	c->drop_left = 1;
	ib_destroy_cm_id(p1);
	KUNIT_EXPECT_EQ(test, a1->state, IB_CM_ESTABLISHED);

	a2 = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a2));
	KUNIT_ASSERT_EQ(test, clt_connect(c, a2, CLT_SID), 0);
	e = clt_wait_nth(c, NULL, IB_CM_REQ_RECEIVED, 2);
	KUNIT_ASSERT_NOT_NULL(test, e);
	p2 = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(p2), 0);

	e = clt_wait(c, a2, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_STALE_CONN);
	KUNIT_EXPECT_EQ(test, a2->state, IB_CM_TIMEWAIT);
	KUNIT_EXPECT_EQ(test, clt_count(c, a2, IB_CM_REP_RECEIVED), 0);
	e = clt_wait(c, p2, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_STALE_CONN);
	/* the old connection: DREQ, the CM's DREP, timewait */
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, a1, IB_CM_DREP_RECEIVED));
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_DREQ), 2);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, a1, IB_CM_TIMEWAIT_EXIT));
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, a2, IB_CM_TIMEWAIT_EXIT));
	/* the REQ was not resent after the REJ */
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_REQ), 2);
	KUNIT_EXPECT_EQ(test, clt_count(c, a2, IB_CM_REQ_ERROR), 0);

	ib_destroy_cm_id(a2);
	ib_destroy_cm_id(p2);
	ib_destroy_cm_id(a1);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * A REP from another QP (0x300), to another QP of ours (0x101), but with
 * the comm ID of the peer of a connection still up (p1's): the peer must
 * have forgotten that one. The REP is refused with REJ STALE_CONN and the
 * old connection gets a DREQ.
 */
static void clt_stale_rep_comm_id(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *a1, *p1, *a2, *p2;
	struct cm_rep rep;
	struct clt_ev *e;

	clt_ids(c, &listen, &a1);
	p1 = clt_establish(c, a1);
	/* from another QP of ours: the passive side finds nothing stale */
	a2 = ib_create_cm_id(&c->kd->ibdev, clt_handler, c);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a2));
	KUNIT_ASSERT_EQ(test, clt_connect_q(c, a2, CLT_SID, CLT_RESP, CLT_RESP,
					    3, 0x101), 0);
	e = clt_wait_nth(c, NULL, IB_CM_REQ_RECEIVED, 2);
	KUNIT_ASSERT_NOT_NULL(test, e);
	p2 = e->id;
	c->capture_kind = CM_MSG_REP;
	c->drop_kind = CM_MSG_REP;
	c->drop_left = 1;
	KUNIT_ASSERT_EQ(test, clt_accept_qpn(p2, 0x300), 0);
	clt_captured(c, CM_MSG_REP, &rep);
	KUNIT_EXPECT_TRUE(test, rep.local_comm_id == p2->local_id);
	rep.local_comm_id = p1->local_id;
	clt_inject(c, CM_MSG_REP, &rep, 1);

	e = clt_wait(c, a2, IB_CM_REJ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_REJ_STALE_CONN);
	KUNIT_EXPECT_EQ(test, a2->state, IB_CM_TIMEWAIT);
	KUNIT_EXPECT_EQ(test, clt_count(c, a2, IB_CM_REP_RECEIVED), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, p1, IB_CM_DREQ_RECEIVED));
	KUNIT_EXPECT_EQ(test, a1->state, IB_CM_DREQ_SENT);
	KUNIT_EXPECT_EQ(test, ib_send_cm_drep(p1, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, a1, IB_CM_DREP_RECEIVED));

	ib_destroy_cm_id(a2);
	ib_destroy_cm_id(p2);
	ib_destroy_cm_id(a1);
	ib_destroy_cm_id(p1);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * LAP/APR (IBA 12.8). The alternate path goes between the same ports as
 * the primary one (the fake HCA has two), on another SL and with another
 * packet lifetime, so that each field is told apart from the primary's.
 */
static struct ib_sa_path_rec clt_alt_path = {
	.slid = cpu_to_be16(KTEST_LID(1)),
	.dlid = cpu_to_be16(KTEST_LID(2)),
	.pkey = cpu_to_be16(0xffff),
	.mtu = IB_MTU_1024,
	.rate = 6,
	.sl = 5,
	.packet_life_time = 3,
};

static const u8 clt_lap_pdata[16] = "alternate-path8";
static const u8 clt_apr_pdata[16] = "path-answer-009";
static const u8 clt_apr_info[8] = "info-10";

/* The attributes of @id's RTS transition. */
static int clt_rts(struct ib_cm_id *id, struct ib_qp_attr *attr, int *mask)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IB_QPS_RTS;
	return ib_cm_init_qp_attr(id, attr, mask);
}

/* @id's RTS transition loads the alternate path toward @dlid. */
static void clt_expect_alt(struct kunit *test, struct ib_cm_id *id, u16 dlid,
			   u8 port, u8 timeout)
{
	struct ib_qp_attr attr;
	int mask = 0;

	KUNIT_ASSERT_EQ(test, clt_rts(id, &attr, &mask), 0);
	KUNIT_EXPECT_EQ(test, mask, IB_QP_STATE | IB_QP_ALT_PATH |
			IB_QP_PATH_MIG_STATE);
	KUNIT_EXPECT_EQ(test, attr.path_mig_state, IB_MIG_REARM);
	KUNIT_EXPECT_EQ(test, attr.alt_ah_attr.dlid, dlid);
	KUNIT_EXPECT_EQ(test, attr.alt_ah_attr.sl, 5);
	KUNIT_EXPECT_EQ(test, attr.alt_ah_attr.static_rate, 6);
	KUNIT_EXPECT_EQ(test, attr.alt_ah_attr.port_num, port);
	KUNIT_EXPECT_EQ(test, attr.alt_ah_attr.ah_flags, 0);
	KUNIT_EXPECT_EQ(test, attr.alt_port_num, port);
	KUNIT_EXPECT_EQ(test, attr.alt_pkey_index, 0);
	KUNIT_EXPECT_EQ(test, attr.alt_timeout, timeout);
}

/* @id's RTS transition is the primary one: no alternate path. */
static void clt_expect_no_alt(struct kunit *test, struct ib_cm_id *id)
{
	struct ib_qp_attr attr;
	int mask = 0;

	KUNIT_ASSERT_EQ(test, clt_rts(id, &attr, &mask), 0);
	KUNIT_EXPECT_FALSE(test, mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE));
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_SQ_PSN);
}

/* The LAP of @active arrives at @passive, with the alternate path. */
static struct clt_ev *clt_lap(struct clt *c, struct ib_cm_id *active,
			      struct ib_cm_id *passive)
{
	struct kunit *test = c->test;
	struct clt_ev *e;

	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, clt_lap_pdata,
					     sizeof(clt_lap_pdata)), 0);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_SENT);
	e = clt_wait(c, passive, IB_CM_LAP_RECEIVED);
	if (!e)
		return NULL;
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_RCVD);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);
	return e;
}

/* The ACK timeout exponent of the alternate path, from the CA's delay. */
static u8 clt_alt_timeout(struct clt *c)
{
	struct ib_device_attr da;

	KUNIT_EXPECT_EQ(c->test, ib_query_device(&c->kd->ibdev, &da), 0);
	return cm_ack_timeout(da.local_ca_ack_delay, clt_alt_path.packet_life_time);
}

/*
 * LAP, APR accepting: the receiver gets the path as it sees it and may
 * load it from the LAP on; the sender loads it once the APR accepted.
 */
static void clt_lap_accepted(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	u8 timeout = clt_alt_timeout(c);
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	clt_expect_no_alt(test, active);
	clt_expect_no_alt(test, passive);

	e = clt_lap(c, active, passive);
	KUNIT_ASSERT_NOT_NULL(test, e);
	CLT_EXPECT_SAME(test, e->pdata, clt_lap_pdata, sizeof(e->pdata));
	/* the receiver's view: the sender's end is the destination */
	KUNIT_EXPECT_EQ(test, be16_to_cpu(e->alt.dlid), KTEST_LID(1));
	KUNIT_EXPECT_EQ(test, be16_to_cpu(e->alt.slid), KTEST_LID(2));
	KUNIT_EXPECT_EQ(test, e->alt.sl, 5);
	KUNIT_EXPECT_EQ(test, e->alt.rate, 6);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(e->alt.pkey), 0xffff);
	KUNIT_EXPECT_EQ(test, e->alt.mtu, IB_MTU_1024);
	KUNIT_EXPECT_EQ(test, e->alt.packet_life_time, timeout - 1);
	/* IBA 12.8: the receiver loads the path before it accepts */
	clt_expect_alt(test, passive, KTEST_LID(1), 2, timeout);
	/* the sender not yet: the peer has not accepted */
	clt_expect_no_alt(test, active);
	/* one LAP at a time; an APR over its bounds is refused */
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS,
					     clt_apr_info,
					     IB_CM_APR_INFO_LENGTH + 1, NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS, NULL, 0,
					     clt_apr_pdata,
					     IB_CM_APR_PRIVATE_DATA_SIZE + 1),
			-EINVAL);

	KUNIT_ASSERT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS,
					     clt_apr_info, sizeof(clt_apr_info),
					     clt_apr_pdata,
					     sizeof(clt_apr_pdata)), 0);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_IDLE);
	e = clt_wait(c, active, IB_CM_APR_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_APR_SUCCESS);
	KUNIT_EXPECT_EQ(test, e->info_len, sizeof(clt_apr_info));
	CLT_EXPECT_SAME(test, e->info, clt_apr_info, sizeof(clt_apr_info));
	CLT_EXPECT_SAME(test, e->pdata, clt_apr_pdata, sizeof(e->pdata));
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_ESTABLISHED);
	clt_expect_alt(test, active, KTEST_LID(2), 1, timeout);
	clt_expect_alt(test, passive, KTEST_LID(1), 2, timeout);
	/* the APR stopped the LAP's retransmission */
	msleep(400);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_LAP), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_APR), 1);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_LAP_ERROR), 0);

	/* the connection still disconnects as before */
	KUNIT_ASSERT_EQ(test, ib_send_cm_dreq(active, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_DREQ_RECEIVED));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* An APR refusing the path: the status reaches the sender; nothing loads. */
static void clt_lap_rejected(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	KUNIT_ASSERT_NOT_NULL(test, clt_lap(c, active, passive));
	KUNIT_ASSERT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_INVALID_SL,
					     NULL, 0, NULL, 0), 0);
	e = clt_wait(c, active, IB_CM_APR_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_APR_INVALID_SL);
	KUNIT_EXPECT_EQ(test, e->info_len, 0);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_IDLE);
	clt_expect_no_alt(test, active);
	clt_expect_no_alt(test, passive);
	/* the exchange is over: a new LAP may go */
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, NULL, IB_CM_LAP_RECEIVED));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* Every LAP lost: MaxCMRetries resends, then IB_CM_LAP_ERROR. */
static void clt_lap_timeout(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	c->drop_kind = CM_MSG_LAP;
	c->drop_left = -1;
	KUNIT_ASSERT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0), 0);
	e = clt_wait(c, active, IB_CM_LAP_ERROR);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_WC_RESP_TIMEOUT_ERR);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_LAP), 1 + 3);
	/* the connection stays; the LAP exchange is over */
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_ESTABLISHED);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_LAP_RECEIVED), 0);
	clt_expect_no_alt(test, active);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* An MRA for the LAP stretches the wait: no LAP resent, then the APR. */
static void clt_lap_mra(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	/* no MRA without a LAP to answer */
	KUNIT_EXPECT_EQ(test, ib_send_cm_mra(passive, 19, NULL, 0), -EINVAL);
	KUNIT_ASSERT_NOT_NULL(test, clt_lap(c, active, passive));
	/* 4.096 us * 2^19 = 2.1 s */
	KUNIT_ASSERT_EQ(test, ib_send_cm_mra(passive, 19, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_MRA_LAP_SENT);
	e = clt_wait(c, active, IB_CM_MRA_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->service_timeout, 19);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_MRA_LAP_RCVD);
	/* four normal waits (134 ms each) would have ended in LAP_ERROR */
	msleep(700);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_LAP), 1);
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_LAP_ERROR), 0);

	KUNIT_ASSERT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS, NULL, 0,
					     NULL, 0), 0);
	e = clt_wait(c, active, IB_CM_APR_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_APR_SUCCESS);
	clt_expect_alt(test, active, KTEST_LID(2), 1, clt_alt_timeout(c));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * Repeated LAPs: while the consumer holds the LAP they are dropped (one
 * event); once it sent an MRA they are answered with that MRA again.
 */
static void clt_lap_duplicate(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	int mras;

	clt_ids(c, &listen, &active);
	/* 15 retries: the LAP outlives the whole case */
	passive = clt_establish_r(c, active, 15);
	KUNIT_ASSERT_NOT_NULL(test, clt_lap(c, active, passive));
	/* unanswered, the LAP is resent every 134 ms */
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(c->wq,
						   clt_sent(c, CM_MSG_LAP) >= 2,
						   CLT_WAIT));
	msleep(20);
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_LAP_RECEIVED), 1);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_MRA), 0);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_RCVD);

	/* 4.096 us * 2^14 = 67 ms: the sender resends after it */
	KUNIT_ASSERT_EQ(test, ib_send_cm_mra(passive, 14, NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_MRA_RECEIVED));
	mras = clt_sent(c, CM_MSG_MRA);
	/* the next LAP (after the MRA's wait) gets the stored MRA again */
	KUNIT_ASSERT_TRUE(test, wait_event_timeout(c->wq,
						   clt_sent(c, CM_MSG_MRA) > mras,
						   CLT_WAIT));
	KUNIT_EXPECT_EQ(test, clt_count(c, NULL, IB_CM_LAP_RECEIVED), 1);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_MRA_LAP_SENT);
	/* a repeated MRA extends the wait again, without a second event */
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_MRA_RECEIVED), 1);

	KUNIT_ASSERT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS, NULL, 0,
					     NULL, 0), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_APR_RECEIVED));
	KUNIT_EXPECT_EQ(test, clt_count(c, active, IB_CM_LAP_ERROR), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * LAP and APR outside their states: the calls are refused; a LAP that
 * arrives when the connection is no longer ESTABLISHED is dropped.
 */
static void clt_lap_wrong_state(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0),
			-EINVAL);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	/* REQ_SENT: no LAP before the connection is up */
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0),
			-EINVAL);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0),
			-EINVAL);
	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, NULL, 0), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, passive, IB_CM_RTU_RECEIVED));
	/* ESTABLISHED, but no LAP to answer */
	KUNIT_EXPECT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS, NULL, 0,
					     NULL, 0), -EINVAL);
	/* a path from none of our ports, private data over 168 bytes */
	clt_alt_path.slid = cpu_to_be16(0x99);
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0),
			-EINVAL);
	clt_alt_path.slid = cpu_to_be16(KTEST_LID(1));
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, clt_lap_pdata,
					     IB_CM_LAP_PRIVATE_DATA_SIZE + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_LAP), 0);

	/* the passive side leaves ESTABLISHED; its DREQs are lost */
	c->drop_kind = CM_MSG_DREQ;
	c->drop_left = -1;
	KUNIT_ASSERT_EQ(test, ib_send_cm_dreq(passive, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0), 0);
	/* DREQ_SENT drops the LAP: no event, no answer */
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, active, IB_CM_LAP_ERROR));
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_LAP), 1 + 3);
	KUNIT_EXPECT_EQ(test, clt_count(c, passive, IB_CM_LAP_RECEIVED), 0);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_APR), 0);
	KUNIT_EXPECT_EQ(test, clt_sent(c, CM_MSG_MRA), 0);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_IDLE);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/*
 * A LAP naming a QP other than the receiver's (LAP:Remote QPN/EECN, IBA
 * 12.8): the receiving CM answers APR "Invalid QPN/EECN" itself, its
 * consumer never hears of it and nothing loads. The same LAP naming the
 * right QP is then taken.
 */
static void clt_lap_wrong_qpn(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	struct cm_lap lap;
	struct clt_ev *e;

	clt_ids(c, &listen, &active);
	passive = clt_establish(c, active);
	c->capture_kind = CM_MSG_LAP;
	c->drop_kind = CM_MSG_LAP;
	c->drop_left = 1;
	KUNIT_ASSERT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0), 0);
	clt_captured(c, CM_MSG_LAP, &lap);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(lap.remote_qpn_eecn), 0x200);
	lap.remote_qpn_eecn = cpu_to_be32(0x201);
	clt_inject(c, CM_MSG_LAP, &lap, 2);

	e = clt_wait(c, active, IB_CM_APR_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	KUNIT_EXPECT_EQ(test, e->reason, IB_CM_APR_INVALID_QPN_EECN);
	KUNIT_EXPECT_EQ(test, e->info_len, 0);
	KUNIT_EXPECT_EQ(test, clt_count(c, passive, IB_CM_LAP_RECEIVED), 0);
	KUNIT_EXPECT_EQ(test, passive->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);
	clt_expect_no_alt(test, passive);
	clt_expect_no_alt(test, active);

	lap.remote_qpn_eecn = cpu_to_be32(0x200);
	clt_inject(c, CM_MSG_LAP, &lap, 2);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_LAP_RECEIVED));

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

/* @id's RTR address vector goes to @dlid from @port on SL 5, rate 6. */
static void clt_expect_av(struct kunit *test, struct ib_cm_id *id, u16 dlid,
			  u8 port)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	int mask = 0;

	KUNIT_ASSERT_EQ(test, ib_cm_init_qp_attr(id, &attr, &mask), 0);
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_AV);
	KUNIT_EXPECT_EQ(test, attr.ah_attr.dlid, dlid);
	KUNIT_EXPECT_EQ(test, attr.ah_attr.sl, 5);
	KUNIT_EXPECT_EQ(test, attr.ah_attr.static_rate, 6);
	KUNIT_EXPECT_EQ(test, attr.ah_attr.port_num, port);
}

/*
 * ib_cm_notify(): COMM_EST as ib_cm_establish(); PATH_MIG once a LAP/APR
 * exchange gave an alternate path, which then is the primary one (RTR's
 * address vector, RTS's ACK timeout) and no alternate path is left.
 */
static void clt_notify(struct kunit *test)
{
	struct clt *c = clt_setup(test);
	struct ib_cm_id *listen, *active, *passive;
	u8 timeout = clt_alt_timeout(c);
	struct ib_qp_attr attr;
	struct clt_ev *e;
	int mask = 0;

	clt_ids(c, &listen, &active);
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_PATH_MIG), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_COMM_EST), -EINVAL);
	KUNIT_ASSERT_EQ(test, clt_connect(c, active, CLT_SID), 0);
	e = clt_wait(c, NULL, IB_CM_REQ_RECEIVED);
	KUNIT_ASSERT_NOT_NULL(test, e);
	passive = e->id;
	KUNIT_ASSERT_EQ(test, clt_accept(passive), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_REP_RECEIVED));
	KUNIT_EXPECT_EQ(test, ib_cm_notify(passive, IB_EVENT_COMM_EST), 0);
	KUNIT_EXPECT_NOT_NULL(test, clt_wait(c, passive, IB_CM_USER_ESTABLISHED));
	KUNIT_EXPECT_EQ(test, passive->state, IB_CM_ESTABLISHED);
	KUNIT_ASSERT_EQ(test, ib_send_cm_rtu(active, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_SQ_DRAINED), -EINVAL);
	/* no alternate path yet */
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_PATH_MIG), -EINVAL);

	KUNIT_ASSERT_NOT_NULL(test, clt_lap(c, active, passive));
	/* not while the exchange is under way, on either side */
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_PATH_MIG), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_cm_notify(passive, IB_EVENT_PATH_MIG), -EINVAL);
	KUNIT_ASSERT_EQ(test, ib_send_cm_apr(passive, IB_CM_APR_SUCCESS, NULL, 0,
					     NULL, 0), 0);
	KUNIT_ASSERT_NOT_NULL(test, clt_wait(c, active, IB_CM_APR_RECEIVED));
	clt_expect_alt(test, active, KTEST_LID(2), 1, timeout);

	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_PATH_MIG), 0);
	KUNIT_EXPECT_EQ(test, active->state, IB_CM_ESTABLISHED);
	KUNIT_EXPECT_EQ(test, active->lap_state, IB_CM_LAP_IDLE);
	clt_expect_av(test, active, KTEST_LID(2), 1);
	KUNIT_ASSERT_EQ(test, clt_rts(active, &attr, &mask), 0);
	KUNIT_EXPECT_FALSE(test, mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE));
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_TIMEOUT);
	KUNIT_EXPECT_EQ(test, attr.timeout, timeout);
	/* nothing left to migrate to */
	KUNIT_EXPECT_EQ(test, ib_cm_notify(active, IB_EVENT_PATH_MIG), -EINVAL);

	KUNIT_EXPECT_EQ(test, ib_cm_notify(passive, IB_EVENT_PATH_MIG), 0);
	clt_expect_av(test, passive, KTEST_LID(1), 2);
	clt_expect_no_alt(test, passive);
	/* a new LAP may give another alternate path */
	KUNIT_EXPECT_EQ(test, ib_send_cm_lap(active, &clt_alt_path, NULL, 0), 0);

	ib_destroy_cm_id(active);
	ib_destroy_cm_id(passive);
	ib_destroy_cm_id(listen);
	clt_teardown(c);
}

static struct kunit_case cm_loop_cases[] = {
	KUNIT_CASE(clt_full_exchange),
	KUNIT_CASE(clt_rej_unknown_service),
	KUNIT_CASE(clt_req_timeout),
	KUNIT_CASE(clt_mra_extends_wait),
	KUNIT_CASE(clt_dup_req_resends_rep),
	KUNIT_CASE(clt_destroy_waits_for_handler),
	KUNIT_CASE(clt_handler_return_destroys),
	KUNIT_CASE(clt_consumer_rej),
	KUNIT_CASE(clt_rep_timeout),
	KUNIT_CASE(clt_establish_before_rtu),
	KUNIT_CASE(clt_sidr_resolve),
	KUNIT_CASE(clt_sidr_unknown_service),
	KUNIT_CASE(clt_sidr_timeout),
	KUNIT_CASE(clt_sidr_duplicate),
	KUNIT_CASE(clt_sidr_repeat_after_reply),
	KUNIT_CASE(clt_stale_conn),
	KUNIT_CASE(clt_stale_rep),
	KUNIT_CASE(clt_stale_rep_comm_id),
	KUNIT_CASE(clt_dreq_unknown_id),
	KUNIT_CASE(clt_lap_accepted),
	KUNIT_CASE(clt_lap_rejected),
	KUNIT_CASE(clt_lap_timeout),
	KUNIT_CASE(clt_lap_mra),
	KUNIT_CASE(clt_lap_duplicate),
	KUNIT_CASE(clt_lap_wrong_state),
	KUNIT_CASE(clt_lap_wrong_qpn),
	KUNIT_CASE(clt_notify),
	{}
};

static struct kunit_suite cm_loop_suite = {
	.name = "ib_cm_loop",
	.test_cases = cm_loop_cases,
};

kunit_test_suite(cm_loop_suite);
