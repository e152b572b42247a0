// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suites for the device/client registry (device.c) and the verbs'
 * reference counting (verbs.c), on test devices registered for real with
 * the core (ktest_dev.h): the order of add() and remove() calls, client
 * data, device names, the mandatory-method check, event dispatch, use
 * counts and ib_init_ah_from_wc().
 */

#include <kunit/test.h>
#include <linux/irqflags.h>

#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "ktest_dev.h"

/* ---- a log of client callbacks ---------------------------------------- */

#define DT_CLIENTS	3
#define DT_LOG_MAX	32

struct dt_call {
	int			client;		/* 0..DT_CLIENTS-1 */
	struct ib_device	*device;
	bool			add;
};

static struct dt_call dt_log[DT_LOG_MAX];
static int dt_log_len;
static struct ib_client dt_clients[DT_CLIENTS];
/* what each client stores as client data: its own slot of this array */
static int dt_cookies[DT_CLIENTS];

static void dt_record(int client, struct ib_device *device, bool add)
{
	if (dt_log_len < DT_LOG_MAX)
		dt_log[dt_log_len] = (struct dt_call){ client, device, add };
	dt_log_len++;
}

/*
 * A client's callbacks only know the device, so each client has its own
 * pair of wrappers; remove() records the client data it still sees.
 */
static void *dt_data_at_remove[DT_CLIENTS];

static void dt_add(struct ib_device *device, int c)
{
	dt_record(c, device, true);
	ib_set_client_data(device, &dt_clients[c], &dt_cookies[c]);
}

static void dt_remove(struct ib_device *device, int c)
{
	dt_record(c, device, false);
	dt_data_at_remove[c] = ib_get_client_data(device, &dt_clients[c]);
}

static void dt_add0(struct ib_device *d) { dt_add(d, 0); }
static void dt_add1(struct ib_device *d) { dt_add(d, 1); }
static void dt_add2(struct ib_device *d) { dt_add(d, 2); }
static void dt_remove0(struct ib_device *d) { dt_remove(d, 0); }
static void dt_remove1(struct ib_device *d) { dt_remove(d, 1); }
static void dt_remove2(struct ib_device *d) { dt_remove(d, 2); }

static int dt_init(struct kunit *test)
{
	static void (* const adds[])(struct ib_device *) = {
		dt_add0, dt_add1, dt_add2 };
	static void (* const removes[])(struct ib_device *) = {
		dt_remove0, dt_remove1, dt_remove2 };
	static char names[DT_CLIENTS][8] = { "dt-a", "dt-b", "dt-c" };
	int c;

	memset(dt_clients, 0, sizeof(dt_clients));
	for (c = 0; c < DT_CLIENTS; c++) {
		dt_clients[c].name = names[c];
		dt_clients[c].add = adds[c];
		dt_clients[c].remove = removes[c];
		dt_data_at_remove[c] = NULL;
	}
	dt_log_len = 0;
	return 0;
}

static void dt_expect_call(struct kunit *test, int i, int client,
			   struct ib_device *device, bool add)
{
	KUNIT_ASSERT_LT(test, i, dt_log_len);
	KUNIT_EXPECT_EQ_MSG(test, dt_log[i].client, client, "call %d", i);
	KUNIT_EXPECT_PTR_EQ_MSG(test, dt_log[i].device, device, "call %d", i);
	KUNIT_EXPECT_EQ_MSG(test, dt_log[i].add, add, "call %d", i);
}

static struct ktest_dev *dt_register(struct kunit *test, const char *name)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, name);

	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);
	return kd;
}

static void dt_release(struct ktest_dev *kd)
{
	ib_unregister_device(&kd->ibdev);
	ib_dealloc_device(&kd->ibdev);
}

/* ---- registration order ----------------------------------------------- */

/*
 * add() runs for each device in client registration order; a client that
 * registers late gets add() for the existing devices, oldest first; a
 * leaving device gets remove() newest client first; a leaving client gets
 * remove() for each device, newest first.
 */
static void dt_client_order(struct kunit *test)
{
	struct ktest_dev *d0, *d1;
	struct ib_device *i0, *i1;

	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[0]), 0);
	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[1]), 0);
	d0 = dt_register(test, "dtest%d");
	d1 = dt_register(test, "dtest%d");
	i0 = &d0->ibdev;
	i1 = &d1->ibdev;
	KUNIT_EXPECT_EQ(test, dt_log_len, 4);
	dt_expect_call(test, 0, 0, i0, true);
	dt_expect_call(test, 1, 1, i0, true);
	dt_expect_call(test, 2, 0, i1, true);
	dt_expect_call(test, 3, 1, i1, true);

	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[2]), 0);
	KUNIT_EXPECT_EQ(test, dt_log_len, 6);
	dt_expect_call(test, 4, 2, i0, true);
	dt_expect_call(test, 5, 2, i1, true);

	ib_unregister_device(i0);
	KUNIT_EXPECT_EQ(test, dt_log_len, 9);
	dt_expect_call(test, 6, 2, i0, false);
	dt_expect_call(test, 7, 1, i0, false);
	dt_expect_call(test, 8, 0, i0, false);
	ib_dealloc_device(i0);

	ib_unregister_client(&dt_clients[1]);
	KUNIT_EXPECT_EQ(test, dt_log_len, 10);
	dt_expect_call(test, 9, 1, i1, false);

	ib_unregister_client(&dt_clients[0]);
	ib_unregister_client(&dt_clients[2]);
	KUNIT_EXPECT_EQ(test, dt_log_len, 12);
	dt_expect_call(test, 10, 0, i1, false);
	dt_expect_call(test, 11, 2, i1, false);

	/* no client left: the last device goes without calls */
	dt_release(d1);
	KUNIT_EXPECT_EQ(test, dt_log_len, 12);
}

/* A leaving client gets remove() for every device, newest device first. */
static void dt_client_leaves(struct kunit *test)
{
	struct ktest_dev *d0, *d1;

	d0 = dt_register(test, "dtest%d");
	d1 = dt_register(test, "dtest%d");
	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[0]), 0);
	ib_unregister_client(&dt_clients[0]);

	KUNIT_EXPECT_EQ(test, dt_log_len, 4);
	dt_expect_call(test, 0, 0, &d0->ibdev, true);
	dt_expect_call(test, 1, 0, &d1->ibdev, true);
	dt_expect_call(test, 2, 0, &d1->ibdev, false);
	dt_expect_call(test, 3, 0, &d0->ibdev, false);

	dt_release(d1);
	dt_release(d0);
}

/* ---- client data ------------------------------------------------------ */

static void dt_client_data(struct kunit *test)
{
	struct ktest_dev *d0;

	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[0]), 0);
	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[1]), 0);
	d0 = dt_register(test, "dtest%d");

	/* each client sees its own pointer */
	KUNIT_EXPECT_PTR_EQ(test, ib_get_client_data(&d0->ibdev,
						     &dt_clients[0]),
			    (void *)&dt_cookies[0]);
	KUNIT_EXPECT_PTR_EQ(test, ib_get_client_data(&d0->ibdev,
						     &dt_clients[1]),
			    (void *)&dt_cookies[1]);
	/* a client that never registered has none */
	KUNIT_EXPECT_NULL(test, ib_get_client_data(&d0->ibdev,
						   &dt_clients[2]));

	/* a client may replace it */
	ib_set_client_data(&d0->ibdev, &dt_clients[1], &dt_cookies[2]);
	KUNIT_EXPECT_PTR_EQ(test, ib_get_client_data(&d0->ibdev,
						     &dt_clients[1]),
			    (void *)&dt_cookies[2]);

	/* remove() still sees it; afterwards it is gone */
	ib_unregister_client(&dt_clients[1]);
	KUNIT_EXPECT_PTR_EQ(test, dt_data_at_remove[1],
			    (void *)&dt_cookies[2]);
	KUNIT_EXPECT_NULL(test, ib_get_client_data(&d0->ibdev,
						   &dt_clients[1]));

	ib_unregister_device(&d0->ibdev);
	KUNIT_EXPECT_PTR_EQ(test, dt_data_at_remove[0],
			    (void *)&dt_cookies[0]);
	ib_dealloc_device(&d0->ibdev);
	ib_unregister_client(&dt_clients[0]);
}

/* ---- names and the method check --------------------------------------- */

static void dt_names(struct kunit *test)
{
	struct ktest_dev *d0, *d1, *d2, *fixed, *dup;

	d0 = dt_register(test, "dtname%d");
	d1 = dt_register(test, "dtname%d");
	KUNIT_EXPECT_STREQ(test, d0->ibdev.name, "dtname0");
	KUNIT_EXPECT_STREQ(test, d1->ibdev.name, "dtname1");
	KUNIT_EXPECT_STREQ(test, dev_name(&d1->ibdev.dev), "dtname1");

	/* the lowest free index is reused */
	dt_release(d0);
	d2 = dt_register(test, "dtname%d");
	KUNIT_EXPECT_STREQ(test, d2->ibdev.name, "dtname0");

	/* a name without %d must be free */
	fixed = dt_register(test, "dtfixed");
	dup = ktest_dev_alloc(test, "dtfixed");
	KUNIT_EXPECT_EQ(test, ib_register_device(&dup->ibdev), -EEXIST);
	ib_dealloc_device(&dup->ibdev);

	dt_release(fixed);
	dt_release(d2);
	dt_release(d1);
}

static void dt_mandatory_methods(struct kunit *test)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "dtbad%d");

	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[0]), 0);
	kd->ibdev.poll_cq = NULL;
	KUNIT_EXPECT_EQ(test, ib_register_device(&kd->ibdev), -EINVAL);
	KUNIT_EXPECT_EQ(test, dt_log_len, 0);
	KUNIT_EXPECT_EQ(test, kd->ibdev.reg_state, IB_DEV_UNINITIALIZED);

	/* once fixed, the same structure registers */
	kd->ibdev.poll_cq = ktest_poll_cq;
	KUNIT_EXPECT_EQ(test, ib_register_device(&kd->ibdev), 0);
	KUNIT_EXPECT_EQ(test, dt_log_len, 1);
	dt_release(kd);
	ib_unregister_client(&dt_clients[0]);
}

static int dt_attach_mcast(struct ib_qp *qp, union ib_gid *gid, u16 lid)
{
	return 0;
}

static struct ib_ucontext *dt_alloc_ucontext(struct ib_device *ibdev,
					     struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

/*
 * Try to register @kd; it must fail with -EINVAL and leave no trace. If
 * it registers, undo that (and client 0) and end the test.
 */
static void dt_expect_refused(struct kunit *test, struct ktest_dev *kd,
			      const char *why)
{
	int ret = ib_register_device(&kd->ibdev);

	if (!ret) {
		dt_release(kd);
		ib_unregister_client(&dt_clients[0]);
	}
	KUNIT_ASSERT_EQ_MSG(test, ret, -EINVAL, "%s", why);
	KUNIT_EXPECT_EQ_MSG(test, kd->ibdev.reg_state, IB_DEV_UNINITIALIZED,
			    "%s", why);
}

/*
 * Optional methods that only make sense together: SRQs need destroy and
 * post (ib_post_srq_recv() would call NULL), multicast attach and detach,
 * user contexts alloc and dealloc.
 */
static void dt_method_pairs(struct kunit *test)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "dtpair%d");

	KUNIT_ASSERT_EQ(test, ib_register_client(&dt_clients[0]), 0);

	kd->ibdev.post_srq_recv = NULL;
	dt_expect_refused(test, kd, "create_srq without post_srq_recv");
	kd->ibdev.post_srq_recv = ktest_post_srq_recv;
	kd->ibdev.destroy_srq = NULL;
	dt_expect_refused(test, kd, "create_srq without destroy_srq");
	kd->ibdev.destroy_srq = ktest_destroy_srq;

	/* no SRQs at all is fine, but not SRQ methods without create_srq */
	kd->ibdev.create_srq = NULL;
	dt_expect_refused(test, kd, "post_srq_recv without create_srq");

	kd->ibdev.attach_mcast = dt_attach_mcast;
	kd->ibdev.create_srq = ktest_create_srq;
	dt_expect_refused(test, kd, "attach_mcast without detach_mcast");
	kd->ibdev.attach_mcast = NULL;
	kd->ibdev.detach_mcast = dt_attach_mcast;
	dt_expect_refused(test, kd, "detach_mcast without attach_mcast");
	kd->ibdev.detach_mcast = NULL;

	kd->ibdev.alloc_ucontext = dt_alloc_ucontext;
	dt_expect_refused(test, kd, "alloc_ucontext without dealloc_ucontext");
	kd->ibdev.alloc_ucontext = NULL;
	KUNIT_EXPECT_EQ(test, dt_log_len, 0);

	/* with every group whole (or absent), the same structure registers */
	kd->ibdev.attach_mcast = dt_attach_mcast;
	kd->ibdev.detach_mcast = dt_attach_mcast;
	KUNIT_EXPECT_EQ(test, ib_register_device(&kd->ibdev), 0);
	KUNIT_EXPECT_EQ(test, dt_log_len, 1);
	dt_release(kd);
	ib_unregister_client(&dt_clients[0]);
}

/* ---- events ----------------------------------------------------------- */

struct dt_handler {
	struct ib_event_handler	handler;
	int			calls;
	int			order;		/* value of dt_event_seq seen */
	enum ib_event_type	last;
	u8			port;
};

static int dt_event_seq;

static void dt_on_event(struct ib_event_handler *h, struct ib_event *event)
{
	struct dt_handler *dh = container_of(h, struct dt_handler, handler);

	dh->calls++;
	dh->order = dt_event_seq++;
	dh->last = event->event;
	dh->port = event->element.port_num;
}

static void dt_events(struct kunit *test)
{
	struct ktest_dev *kd = dt_register(test, "dtev%d");
	struct dt_handler a = {}, b = {};
	struct ib_event ev = {
		.device = &kd->ibdev,
		.event = IB_EVENT_PORT_ACTIVE,
		.element.port_num = 2,
	};
	unsigned long flags;

	INIT_IB_EVENT_HANDLER(&a.handler, &kd->ibdev, dt_on_event);
	INIT_IB_EVENT_HANDLER(&b.handler, &kd->ibdev, dt_on_event);
	KUNIT_EXPECT_EQ(test, ib_register_event_handler(&a.handler), 0);
	KUNIT_EXPECT_EQ(test, ib_register_event_handler(&b.handler), 0);

	dt_event_seq = 0;
	ib_dispatch_event(&ev);
	KUNIT_EXPECT_EQ(test, a.calls, 1);
	KUNIT_EXPECT_EQ(test, b.calls, 1);
	KUNIT_EXPECT_LT(test, a.order, b.order);
	KUNIT_EXPECT_EQ(test, a.last, IB_EVENT_PORT_ACTIVE);
	KUNIT_EXPECT_EQ(test, b.port, 2);

	/* as a driver's interrupt handler would */
	ev.event = IB_EVENT_LID_CHANGE;
	local_irq_save(flags);
	ib_dispatch_event(&ev);
	local_irq_restore(flags);
	KUNIT_EXPECT_EQ(test, a.calls, 2);
	KUNIT_EXPECT_EQ(test, b.last, IB_EVENT_LID_CHANGE);

	KUNIT_EXPECT_EQ(test, ib_unregister_event_handler(&a.handler), 0);
	ib_dispatch_event(&ev);
	KUNIT_EXPECT_EQ(test, a.calls, 2);
	KUNIT_EXPECT_EQ(test, b.calls, 3);

	ib_unregister_event_handler(&b.handler);
	dt_release(kd);
}

/* ---- verbs: use counts ------------------------------------------------ */

static void dt_use_counts(struct kunit *test)
{
	struct ktest_dev *kd = dt_register(test, "dtverbs%d");
	struct ib_srq_init_attr srq_attr = {};
	struct ib_qp_init_attr qp_attr = {};
	struct ib_ah_attr ah_attr = {};
	struct ib_cq *scq, *rcq;
	struct ib_srq *srq;
	struct ib_pd *pd;
	struct ib_mr *mr;
	struct ib_ah *ah;
	struct ib_qp *qp;
	int token, others;

	/* what other clients (the MAD layer) hold on the device */
	others = atomic_read(&kd->live_objects);

	pd = ib_alloc_pd(&kd->ibdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));
	KUNIT_EXPECT_PTR_EQ(test, pd->device, &kd->ibdev);

	scq = ib_create_cq(&kd->ibdev, NULL, NULL, &token, 16);
	rcq = ib_create_cq(&kd->ibdev, NULL, NULL, &token, 16);
	KUNIT_ASSERT_FALSE(test, IS_ERR(scq));
	KUNIT_ASSERT_FALSE(test, IS_ERR(rcq));
	KUNIT_EXPECT_PTR_EQ(test, scq->cq_context, (void *)&token);
	KUNIT_EXPECT_EQ(test, scq->cqe, 16);

	srq = ib_create_srq(pd, &srq_attr);
	KUNIT_ASSERT_FALSE(test, IS_ERR(srq));
	mr = ib_get_dma_mr(pd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mr));
	ah = ib_create_ah(pd, &ah_attr);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ah));
	KUNIT_EXPECT_EQ(test, atomic_read(&pd->usecnt), 3);

	qp_attr.send_cq = scq;
	qp_attr.recv_cq = rcq;
	qp_attr.srq = srq;
	qp_attr.qp_type = IB_QPT_RC;
	qp_attr.qp_context = &token;
	qp = ib_create_qp(pd, &qp_attr);
	KUNIT_ASSERT_FALSE(test, IS_ERR(qp));
	KUNIT_EXPECT_EQ(test, qp->qp_type, IB_QPT_RC);
	KUNIT_EXPECT_PTR_EQ(test, qp->srq, srq);
	KUNIT_EXPECT_EQ(test, atomic_read(&pd->usecnt), 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&scq->usecnt), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&rcq->usecnt), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&srq->usecnt), 1);

	/* nothing in use can go */
	KUNIT_EXPECT_EQ(test, ib_dealloc_pd(pd), -EBUSY);
	KUNIT_EXPECT_EQ(test, ib_destroy_cq(scq), -EBUSY);
	KUNIT_EXPECT_EQ(test, ib_destroy_cq(rcq), -EBUSY);
	KUNIT_EXPECT_EQ(test, ib_destroy_srq(srq), -EBUSY);
	atomic_inc(&mr->usecnt);	/* as a bound memory window would */
	KUNIT_EXPECT_EQ(test, ib_dereg_mr(mr), -EBUSY);
	atomic_dec(&mr->usecnt);

	/* optional methods the driver lacks */
	KUNIT_EXPECT_EQ(test, ib_query_qp(qp, NULL, 0, NULL), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ib_resize_cq(scq, 32), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ib_reg_phys_mr(pd, NULL, 0, 0, NULL)),
			-EOPNOTSUPP);

	KUNIT_EXPECT_EQ(test, ib_destroy_qp(qp), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&scq->usecnt), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&srq->usecnt), 0);
	KUNIT_EXPECT_EQ(test, ib_destroy_cq(scq), 0);
	KUNIT_EXPECT_EQ(test, ib_destroy_cq(rcq), 0);
	KUNIT_EXPECT_EQ(test, ib_destroy_srq(srq), 0);
	KUNIT_EXPECT_EQ(test, ib_destroy_ah(ah), 0);
	KUNIT_EXPECT_EQ(test, ib_dealloc_pd(pd), -EBUSY);	/* the MR */
	KUNIT_EXPECT_EQ(test, ib_dereg_mr(mr), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&pd->usecnt), 0);
	KUNIT_EXPECT_EQ(test, ib_dealloc_pd(pd), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&kd->live_objects), others);

	dt_release(kd);
}

/* ---- ib_init_ah_from_wc ----------------------------------------------- */

static void dt_ah_from_wc(struct kunit *test)
{
	struct ktest_dev *kd = dt_register(test, "dtah%d");
	struct ib_wc wc = {
		.slid = 0x1234, .sl = 5, .dlid_path_bits = 3,
	};
	struct ib_ah_attr ah;
	struct ib_grh grh = {};
	struct ib_ah *ah_obj;
	struct ib_pd *pd;

	/* no GRH: LID routing back to the sender */
	KUNIT_ASSERT_EQ(test, ib_init_ah_from_wc(&kd->ibdev, 2, &wc, &grh,
						 &ah), 0);
	KUNIT_EXPECT_EQ(test, ah.dlid, 0x1234);
	KUNIT_EXPECT_EQ(test, ah.sl, 5);
	KUNIT_EXPECT_EQ(test, ah.src_path_bits, 3);
	KUNIT_EXPECT_EQ(test, ah.port_num, 2);
	KUNIT_EXPECT_EQ(test, ah.ah_flags, 0);

	/* with a GRH to our port 2 GID 3: the reply leaves from that GID */
	wc.wc_flags = IB_WC_GRH;
	grh.version_tclass_flow = cpu_to_be32(6 << 28 | 0x5a << 20 | 0xbcdef);
	grh.dgid = kd->gids[1][3];
	grh.sgid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	grh.sgid.global.interface_id = cpu_to_be64(0x1122334455667788ULL);
	KUNIT_ASSERT_EQ(test, ib_init_ah_from_wc(&kd->ibdev, 2, &wc, &grh,
						 &ah), 0);
	KUNIT_EXPECT_EQ(test, ah.ah_flags, IB_AH_GRH);
	KUNIT_EXPECT_EQ(test, ah.grh.sgid_index, 3);
	KUNIT_EXPECT_EQ(test, ah.grh.flow_label, 0xbcdef);
	KUNIT_EXPECT_EQ(test, ah.grh.traffic_class, 0x5a);
	KUNIT_EXPECT_EQ(test, ah.grh.hop_limit, 0xff);
	KUNIT_EXPECT_EQ(test, memcmp(&ah.grh.dgid, &grh.sgid, 16), 0);

	/* a destination GID that is not ours */
	grh.dgid.raw[15] ^= 0x80;
	KUNIT_EXPECT_EQ(test, ib_init_ah_from_wc(&kd->ibdev, 2, &wc, &grh,
						 &ah), -ENOENT);

	/* the same through ib_create_ah_from_wc() */
	pd = ib_alloc_pd(&kd->ibdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));
	KUNIT_EXPECT_EQ(test, PTR_ERR(ib_create_ah_from_wc(pd, &wc, &grh, 2)),
			-ENOENT);
	grh.dgid.raw[15] ^= 0x80;
	ah_obj = ib_create_ah_from_wc(pd, &wc, &grh, 2);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ah_obj));
	KUNIT_EXPECT_PTR_EQ(test, ah_obj->pd, pd);
	KUNIT_EXPECT_EQ(test, ib_destroy_ah(ah_obj), 0);
	KUNIT_EXPECT_EQ(test, ib_dealloc_pd(pd), 0);

	dt_release(kd);
}

static struct kunit_case dt_cases[] = {
	KUNIT_CASE(dt_client_order),
	KUNIT_CASE(dt_client_leaves),
	KUNIT_CASE(dt_client_data),
	KUNIT_CASE(dt_names),
	KUNIT_CASE(dt_mandatory_methods),
	KUNIT_CASE(dt_method_pairs),
	KUNIT_CASE(dt_events),
	KUNIT_CASE(dt_use_counts),
	KUNIT_CASE(dt_ah_from_wc),
	{}
};

static struct kunit_suite dt_suite = {
	.name = "ib_device",
	.init = dt_init,
	.test_cases = dt_cases,
};

kunit_test_suite(dt_suite);
