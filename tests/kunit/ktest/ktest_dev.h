/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A driver for the KUnit suites of the device registry, the verbs, the
 * cache and the MAD layer: UML has no HCA, so the suites register this
 * one.  It keeps two ports with small GID and P_Key tables in memory that
 * a test can change, and allocates plain objects for the verbs, counting
 * them so a test can see that every object it created was freed.
 *
 * The special QPs (QP0, QP1) of its ports are a software loopback, so the
 * real ib_mad code runs over them: a send posted on port p goes to the
 * port whose LID (0x10 + port) the AH names (the permissive LID means the
 * sender's own port), to the posted receive of that port's QP0 or QP1
 * named by remote_qpn.  Delivery runs from a work item, never from the
 * poster's own call chain (as an HCA's interrupt would): the sender gets
 * a send completion, the receiver a receive completion with the GRH space
 * in front of the data, and each CQ's completion handler is called when
 * it was armed.  A test can look at every packet and drop it (->tap), hold
 * every send on the QP without completing it (->hold_sends, as a dead
 * HCA would), and inject a packet of its own (ktest_inject()).
 *
 * Locking: ->lock (irqsave) guards ->pending, ->special, ->hold_sends,
 * ->ahs and the receive queues of the QPs; each CQ's ring has its own lock, taken
 * inside ->lock or alone.  Completion handlers are called with no lock
 * held.
 */
#ifndef IB_KTEST_DEV_H
#define IB_KTEST_DEV_H

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <rdma/ib_verbs.h>

#define KTEST_PORTS	2
#define KTEST_GIDS	4
#define KTEST_PKEYS	4

/* The LID of a port: 0x11 for port 1, 0x12 for port 2. */
#define KTEST_LID(port)	(0x10 + (port))

/* What a tap says about a packet. */
enum ktest_verdict {
	KTEST_DELIVER,
	KTEST_DROP,
};

struct ktest_dev;
struct ktest_qp;

/**
 * typedef ktest_tap_fn - sees each packet the loopback carries
 * @kd: the device
 * @port: the port it was sent from
 * @qpn: the QP it is for (0 or 1)
 * @mad: the 256 bytes sent
 *
 * Called from the delivery work, no lock held.
 *
 * Return: KTEST_DELIVER, or KTEST_DROP to lose it on the wire (the send
 * still completes successfully).
 */
typedef enum ktest_verdict (*ktest_tap_fn)(struct ktest_dev *kd, u8 port,
					   u32 qpn, const void *mad);

struct ktest_dev {
	struct ib_device	ibdev;
	/* the "hardware" tables, port 1 at index 0 */
	union ib_gid		gids[KTEST_PORTS][KTEST_GIDS];
	u16			pkeys[KTEST_PORTS][KTEST_PKEYS];
	u8			lmc[KTEST_PORTS];
	atomic_t		live_objects;
	/* the loopback of the special QPs; the lock rule is at the top */
	spinlock_t		lock;
	struct list_head	pending;
	struct ktest_qp		*special[KTEST_PORTS][2];
	bool			hold_sends;
	struct work_struct	work;
	ktest_tap_fn		tap;
	void			*tap_ctx;
	atomic_t		sent;
	/* receive posts to refuse (-ENOMEM): > 0 that many, < 0 all */
	atomic_t		fail_recv_posts;
	/* receive posts refused so far */
	atomic_t		recv_posts_failed;
	/* receive posts refused because the ring was full */
	atomic_t		recv_ring_overflows;
	/* the live address handles (under ->lock) */
	struct list_head	ahs;
	/*
	 * Called at the start of every receive post, no lock held, so a
	 * suite can run another poster in the middle of one (set it while
	 * nothing posts).
	 */
	void			(*post_recv_hook)(struct ktest_dev *kd);
	void			*post_recv_hook_ctx;
};

/* A work request the loopback holds: a posted receive or a send. */
struct ktest_wr {
	struct list_head	list;
	struct ktest_qp		*qp;
	u64			wr_id;
	u64			addr;
	u32			length;
	/* sends only */
	struct ib_ah_attr	ah;
	u32			remote_qpn;
	u16			pkey_index;
	/* injected packets only: the packet itself */
	bool			injected;
	u8			mad[256];
	u16			slid;
	u32			src_qp;
};

struct ktest_qp {
	struct ib_qp		ibqp;
	u8			port;
	bool			special;
	/* the receive ring's size, as created: a post past it fails */
	u32			max_recv;
	struct list_head	rq;
};

struct ktest_ah {
	struct ib_ah		ibah;
	struct ib_ah_attr	attr;
	/* on ktest_dev.ahs */
	struct list_head	list;
};

struct ktest_cq {
	struct ib_cq		ibcq;
	/* guards the ring, armed and overruns */
	spinlock_t		lock;
	struct ib_wc		*ring;
	int			size, head, count;
	bool			armed;
	int			overruns;
};

static inline struct ktest_dev *to_ktest(struct ib_device *ibdev)
{
	return container_of(ibdev, struct ktest_dev, ibdev);
}

static inline int ktest_query_device(struct ib_device *ibdev,
				     struct ib_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = cpu_to_be64(0x0002c90300001234ULL);
	return 0;
}

static inline int ktest_query_port(struct ib_device *ibdev, u8 port,
				   struct ib_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->state = IB_PORT_ACTIVE;
	attr->gid_tbl_len = KTEST_GIDS;
	attr->pkey_tbl_len = KTEST_PKEYS;
	attr->lmc = to_ktest(ibdev)->lmc[port - 1];
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = 1;
	attr->phys_state = 5;
	attr->lid = 0x10 + port;
	attr->sm_lid = 1;
	attr->sm_sl = 3;
	attr->port_cap_flags = 0x02510a68;
	return 0;
}

static inline int ktest_modify_device(struct ib_device *ibdev, int mask,
				      struct ib_device_modify *mod)
{
	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	memcpy(ibdev->node_desc, mod->node_desc, sizeof(ibdev->node_desc));
	return 0;
}

static inline int ktest_query_gid(struct ib_device *ibdev, u8 port, int index,
				  union ib_gid *gid)
{
	if (index < 0 || index >= KTEST_GIDS)
		return -EINVAL;
	*gid = to_ktest(ibdev)->gids[port - 1][index];
	return 0;
}

static inline int ktest_query_pkey(struct ib_device *ibdev, u8 port, u16 index,
				   u16 *pkey)
{
	if (index >= KTEST_PKEYS)
		return -EINVAL;
	*pkey = to_ktest(ibdev)->pkeys[port - 1][index];
	return 0;
}

/* Every object this driver hands out: zeroed memory of the object's size. */
static inline void *ktest_new(struct ib_device *ibdev, size_t size)
{
	void *obj = kzalloc(size, GFP_KERNEL);

	if (!obj)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&to_ktest(ibdev)->live_objects);
	return obj;
}

static inline int ktest_free(struct ib_device *ibdev, void *obj)
{
	atomic_dec(&to_ktest(ibdev)->live_objects);
	kfree(obj);
	return 0;
}

static inline struct ib_pd *ktest_alloc_pd(struct ib_device *ibdev,
					   struct ib_ucontext *ctx,
					   struct ib_udata *udata)
{
	return ktest_new(ibdev, sizeof(struct ib_pd));
}

static inline int ktest_dealloc_pd(struct ib_pd *pd)
{
	return ktest_free(pd->device, pd);
}

/* ib_create_ah() may be called in atomic context: never sleeps. */
static inline struct ib_ah *ktest_create_ah(struct ib_pd *pd,
					    struct ib_ah_attr *attr)
{
	struct ktest_ah *ah = kzalloc(sizeof(*ah), GFP_ATOMIC);

	struct ktest_dev *kd = to_ktest(pd->device);
	unsigned long irq;

	if (!ah)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&kd->live_objects);
	ah->attr = *attr;
	spin_lock_irqsave(&kd->lock, irq);
	list_add_tail(&ah->list, &kd->ahs);
	spin_unlock_irqrestore(&kd->lock, irq);
	return &ah->ibah;
}

static inline int ktest_query_ah(struct ib_ah *ah, struct ib_ah_attr *attr)
{
	*attr = container_of(ah, struct ktest_ah, ibah)->attr;
	return 0;
}

static inline int ktest_destroy_ah(struct ib_ah *ibah)
{
	struct ktest_ah *ah = container_of(ibah, struct ktest_ah, ibah);
	struct ktest_dev *kd = to_ktest(ibah->device);
	unsigned long irq;

	spin_lock_irqsave(&kd->lock, irq);
	list_del(&ah->list);
	spin_unlock_irqrestore(&kd->lock, irq);
	return ktest_free(ibah->device, ah);
}

/**
 * ktest_ahs_to() - live address handles towards a LID
 * @kd: the device
 * @dlid: the LID
 *
 * Return: how many.
 */
static inline int ktest_ahs_to(struct ktest_dev *kd, u16 dlid)
{
	struct ktest_ah *ah;
	unsigned long irq;
	int n = 0;

	spin_lock_irqsave(&kd->lock, irq);
	list_for_each_entry(ah, &kd->ahs, list)
		if (ah->attr.dlid == dlid)
			n++;
	spin_unlock_irqrestore(&kd->lock, irq);
	return n;
}

static inline struct ib_srq *ktest_create_srq(struct ib_pd *pd,
					      struct ib_srq_init_attr *attr,
					      struct ib_udata *udata)
{
	return ktest_new(pd->device, sizeof(struct ib_srq));
}

static inline int ktest_destroy_srq(struct ib_srq *srq)
{
	return ktest_free(srq->device, srq);
}

static inline struct ktest_qp *to_ktest_qp(struct ib_qp *qp)
{
	return container_of(qp, struct ktest_qp, ibqp);
}

static inline struct ktest_cq *to_ktest_cq(struct ib_cq *cq)
{
	return container_of(cq, struct ktest_cq, ibcq);
}

static inline int ktest_post_srq_recv(struct ib_srq *srq,
				      struct ib_recv_wr *wr,
				      struct ib_recv_wr **bad)
{
	return 0;
}

static inline struct ib_qp *ktest_create_qp(struct ib_pd *pd,
					    struct ib_qp_init_attr *attr,
					    struct ib_udata *udata)
{
	struct ktest_dev *kd = to_ktest(pd->device);
	bool special = attr->qp_type == IB_QPT_SMI ||
		       attr->qp_type == IB_QPT_GSI;
	int qpn = attr->qp_type == IB_QPT_SMI ? 0 : 1;
	struct ktest_qp *qp;
	unsigned long irq;

	if (special && (attr->port_num < 1 || attr->port_num > KTEST_PORTS))
		return ERR_PTR(-EINVAL);
	qp = ktest_new(pd->device, sizeof(*qp));
	if (IS_ERR(qp))
		return ERR_CAST(qp);
	INIT_LIST_HEAD(&qp->rq);
	qp->special = special;
	qp->max_recv = attr->cap.max_recv_wr;
	if (!special) {
		qp->ibqp.qp_num = 0x100 + atomic_read(&kd->live_objects);
		return &qp->ibqp;
	}
	qp->port = attr->port_num;
	qp->ibqp.qp_num = qpn;
	spin_lock_irqsave(&kd->lock, irq);
	if (kd->special[qp->port - 1][qpn]) {
		spin_unlock_irqrestore(&kd->lock, irq);
		ktest_free(pd->device, qp);
		return ERR_PTR(-EBUSY);
	}
	kd->special[qp->port - 1][qpn] = qp;
	spin_unlock_irqrestore(&kd->lock, irq);
	return &qp->ibqp;
}

static inline int ktest_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr,
				  int mask)
{
	return 0;
}

/* Work requests are dropped without completions, as ib_destroy_qp() says. */
static inline int ktest_destroy_qp(struct ib_qp *ibqp)
{
	struct ktest_dev *kd = to_ktest(ibqp->device);
	struct ktest_qp *qp = to_ktest_qp(ibqp);
	struct ktest_wr *wr, *tmp;
	unsigned long irq;
	LIST_HEAD(gone);

	spin_lock_irqsave(&kd->lock, irq);
	if (qp->special)
		kd->special[qp->port - 1][qp->ibqp.qp_num] = NULL;
	list_splice_init(&qp->rq, &gone);
	list_for_each_entry_safe(wr, tmp, &kd->pending, list)
		if (wr->qp == qp)
			list_move_tail(&wr->list, &gone);
	spin_unlock_irqrestore(&kd->lock, irq);
	/* the delivery work may hold one of ours: let it finish */
	flush_work(&kd->work);
	list_for_each_entry_safe(wr, tmp, &gone, list)
		kfree(wr);
	return ktest_free(ibqp->device, qp);
}

/* A work request of one SGE on @qp, as the post calls queue it. */
static inline struct ktest_wr *ktest_wr_new(struct ktest_qp *qp, u64 wr_id,
					    const struct ib_sge *sge)
{
	struct ktest_wr *w = kzalloc(sizeof(*w), GFP_ATOMIC);

	if (!w)
		return NULL;
	w->qp = qp;
	w->wr_id = wr_id;
	w->addr = sge->addr;
	w->length = sge->length;
	return w;
}

static inline int ktest_post_send(struct ib_qp *ibqp, struct ib_send_wr *wr,
				  struct ib_send_wr **bad)
{
	struct ktest_dev *kd = to_ktest(ibqp->device);
	struct ktest_qp *qp = to_ktest_qp(ibqp);
	struct ktest_wr *w;
	unsigned long irq;
	bool hold;

	for (; wr; wr = wr->next) {
		if (!qp->special || wr->num_sge != 1 || !wr->wr.ud.ah) {
			*bad = wr;
			return -EINVAL;
		}
		w = ktest_wr_new(qp, wr->wr_id, wr->sg_list);
		if (!w) {
			*bad = wr;
			return -ENOMEM;
		}
		w->ah = container_of(wr->wr.ud.ah, struct ktest_ah, ibah)->attr;
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->pkey_index = wr->wr.ud.pkey_index;
		spin_lock_irqsave(&kd->lock, irq);
		list_add_tail(&w->list, &kd->pending);
		hold = kd->hold_sends;
		spin_unlock_irqrestore(&kd->lock, irq);
		if (!hold)
			schedule_work(&kd->work);
	}
	return 0;
}

static inline int ktest_post_recv(struct ib_qp *ibqp, struct ib_recv_wr *wr,
				  struct ib_recv_wr **bad)
{
	struct ktest_dev *kd = to_ktest(ibqp->device);
	struct ktest_qp *qp = to_ktest_qp(ibqp);
	struct ktest_wr *w;
	unsigned long irq;

	if (kd->post_recv_hook)
		kd->post_recv_hook(kd);
	for (; wr; wr = wr->next) {
		if (wr->num_sge != 1) {
			*bad = wr;
			return -EINVAL;
		}
		if (atomic_read(&kd->fail_recv_posts) < 0 ||
		    atomic_add_unless(&kd->fail_recv_posts, -1, 0)) {
			atomic_inc(&kd->recv_posts_failed);
			*bad = wr;
			return -ENOMEM;
		}
		w = ktest_wr_new(qp, wr->wr_id, wr->sg_list);
		if (!w) {
			*bad = wr;
			return -ENOMEM;
		}
		spin_lock_irqsave(&kd->lock, irq);
		if (list_count_nodes(&qp->rq) >= qp->max_recv) {
			/* a full ring, as an HCA refuses it */
			spin_unlock_irqrestore(&kd->lock, irq);
			kfree(w);
			atomic_inc(&kd->recv_ring_overflows);
			*bad = wr;
			return -ENOMEM;
		}
		list_add_tail(&w->list, &qp->rq);
		spin_unlock_irqrestore(&kd->lock, irq);
	}
	return 0;
}

static inline struct ib_cq *ktest_create_cq(struct ib_device *ibdev, int cqe,
					    struct ib_ucontext *ctx,
					    struct ib_udata *udata)
{
	struct ktest_cq *cq = ktest_new(ibdev, sizeof(*cq));

	if (IS_ERR(cq))
		return ERR_CAST(cq);
	cq->ring = kcalloc(cqe + 1, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring) {
		ktest_free(ibdev, cq);
		return ERR_PTR(-ENOMEM);
	}
	spin_lock_init(&cq->lock);
	cq->size = cqe + 1;
	cq->ibcq.cqe = cqe;
	return &cq->ibcq;
}

static inline int ktest_destroy_cq(struct ib_cq *ibcq)
{
	struct ktest_cq *cq = to_ktest_cq(ibcq);

	kfree(cq->ring);
	return ktest_free(ibcq->device, cq);
}

static inline int ktest_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct ktest_cq *cq = to_ktest_cq(ibcq);
	unsigned long irq;
	int i;

	spin_lock_irqsave(&cq->lock, irq);
	for (i = 0; i < n && cq->count; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, irq);
	return i;
}

static inline int ktest_req_notify_cq(struct ib_cq *ibcq,
				      enum ib_cq_notify notify)
{
	struct ktest_cq *cq = to_ktest_cq(ibcq);
	unsigned long irq;

	spin_lock_irqsave(&cq->lock, irq);
	cq->armed = true;
	spin_unlock_irqrestore(&cq->lock, irq);
	return 0;
}

/* Add a completion; call the handler (no lock held) if the CQ was armed. */
static inline void ktest_cq_add(struct ib_cq *ibcq, const struct ib_wc *wc)
{
	struct ktest_cq *cq = to_ktest_cq(ibcq);
	unsigned long irq;
	bool call;

	spin_lock_irqsave(&cq->lock, irq);
	if (cq->count < cq->size) {
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
	} else {
		cq->overruns++;
	}
	call = cq->armed;
	cq->armed = false;
	spin_unlock_irqrestore(&cq->lock, irq);
	if (call && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* The port a LID names, 0 for none. */
static inline u8 ktest_port_of_lid(u16 lid, u8 from)
{
	if (lid == 0xffff)
		return from;
	if (lid >= KTEST_LID(1) && lid <= KTEST_LID(KTEST_PORTS))
		return lid - KTEST_LID(0);
	return 0;
}

/*
 * Put a packet in the first posted receive of QP @qpn of @port, and
 * complete it.  Return: false when there is no such QP or receive.
 */
static inline bool ktest_receive(struct ktest_dev *kd, u8 port, u32 qpn,
				 const void *mad, const struct ib_wc *src,
				 const struct ib_grh *grh)
{
	struct ktest_wr *rwr = NULL;
	struct ktest_qp *qp;
	unsigned long irq;
	struct ib_wc wc;
	u8 *buf;

	if (!port || port > KTEST_PORTS || qpn > 1)
		return false;
	spin_lock_irqsave(&kd->lock, irq);
	qp = kd->special[port - 1][qpn];
	if (qp) {
		rwr = list_first_entry_or_null(&qp->rq, struct ktest_wr, list);
		if (rwr)
			list_del(&rwr->list);
	}
	spin_unlock_irqrestore(&kd->lock, irq);
	if (!rwr)
		return false;
	if (rwr->length < sizeof(struct ib_grh) + 256) {
		wc = (struct ib_wc) { .status = IB_WC_LOC_LEN_ERR };
	} else {
		buf = phys_to_virt(rwr->addr);
		memset(buf, 0, sizeof(struct ib_grh));
		if (grh)
			memcpy(buf, grh, sizeof(*grh));
		memcpy(buf + sizeof(struct ib_grh), mad, 256);
		wc = *src;
		wc.byte_len = sizeof(struct ib_grh) + 256;
	}
	wc.wr_id = rwr->wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp_num = qpn;
	wc.port_num = port;
	ktest_cq_add(qp->ibqp.recv_cq, &wc);
	kfree(rwr);
	return true;
}

static inline void ktest_deliver(struct ktest_dev *kd, struct ktest_wr *w)
{
	struct ktest_qp *qp = w->qp;
	struct ib_wc wc = {}, swc = {};
	struct ib_grh grh = {};
	enum ktest_verdict v = KTEST_DELIVER;
	const void *mad;
	u8 to;

	if (w->injected) {
		wc.slid = w->slid;
		wc.src_qp = w->src_qp;
		ktest_receive(kd, qp->port, qp->ibqp.qp_num, w->mad, &wc, NULL);
		return;
	}
	mad = phys_to_virt(w->addr);
	atomic_inc(&kd->sent);
	if (kd->tap)
		v = kd->tap(kd, qp->port, w->remote_qpn, mad);
	to = ktest_port_of_lid(w->ah.dlid, qp->port);
	if (v == KTEST_DELIVER && to) {
		wc.status = IB_WC_SUCCESS;
		wc.src_qp = qp->ibqp.qp_num;
		wc.slid = KTEST_LID(qp->port) | w->ah.src_path_bits;
		wc.sl = w->ah.sl;
		wc.pkey_index = w->pkey_index;
		if (w->ah.ah_flags & IB_AH_GRH) {
			wc.wc_flags = IB_WC_GRH;
			grh.version_tclass_flow = cpu_to_be32(6 << 28);
			grh.hop_limit = w->ah.grh.hop_limit;
			grh.sgid = kd->gids[qp->port - 1]
					   [w->ah.grh.sgid_index % KTEST_GIDS];
			grh.dgid = w->ah.grh.dgid;
		}
		ktest_receive(kd, to, w->remote_qpn, mad, &wc,
			      (w->ah.ah_flags & IB_AH_GRH) ? &grh : NULL);
	}
	swc.wr_id = w->wr_id;
	swc.status = IB_WC_SUCCESS;
	swc.opcode = IB_WC_SEND;
	swc.qp_num = qp->ibqp.qp_num;
	swc.port_num = qp->port;
	ktest_cq_add(qp->ibqp.send_cq, &swc);
}

/* The "interrupt": carries the pending packets, one at a time. */
static inline void ktest_work(struct work_struct *work)
{
	struct ktest_dev *kd = container_of(work, struct ktest_dev, work);
	struct ktest_wr *w, *next;
	unsigned long irq;

	for (;;) {
		spin_lock_irqsave(&kd->lock, irq);
		next = NULL;
		list_for_each_entry(w, &kd->pending, list)
			if (w->injected || !kd->hold_sends) {
				next = w;
				list_del(&w->list);
				break;
			}
		spin_unlock_irqrestore(&kd->lock, irq);
		if (!next)
			return;
		ktest_deliver(kd, next);
		kfree(next);
	}
}

/**
 * ktest_hold_sends() - stop (or restart) carrying sends
 * @kd: the device
 * @hold: true: posted sends stay on their QP, never completed, until
 *	ktest_hold_sends(kd, false) or their QP is destroyed
 */
static inline void ktest_hold_sends(struct ktest_dev *kd, bool hold)
{
	unsigned long irq;

	spin_lock_irqsave(&kd->lock, irq);
	kd->hold_sends = hold;
	spin_unlock_irqrestore(&kd->lock, irq);
	if (!hold)
		schedule_work(&kd->work);
	else
		flush_work(&kd->work);
}

/* Sends posted and not carried yet (held). */
static inline int ktest_pending(struct ktest_dev *kd)
{
	struct ktest_wr *w;
	unsigned long irq;
	int n = 0;

	spin_lock_irqsave(&kd->lock, irq);
	list_for_each_entry(w, &kd->pending, list)
		n++;
	spin_unlock_irqrestore(&kd->lock, irq);
	return n;
}

/**
 * ktest_rq_len() - receives posted on a special QP and not used yet
 * @kd: the device
 * @port: its port
 * @qpn: 0 or 1
 *
 * Return: how many, 0 when there is no such QP.
 */
static inline int ktest_rq_len(struct ktest_dev *kd, u8 port, u32 qpn)
{
	struct ktest_wr *w;
	unsigned long irq;
	int n = 0;

	if (!port || port > KTEST_PORTS || qpn > 1)
		return 0;
	spin_lock_irqsave(&kd->lock, irq);
	if (kd->special[port - 1][qpn])
		list_for_each_entry(w, &kd->special[port - 1][qpn]->rq, list)
			n++;
	spin_unlock_irqrestore(&kd->lock, irq);
	return n;
}

/**
 * ktest_flush_rq() - complete every posted receive of a special QP as
 *	flushed, as an HCA does when the QP goes to the error state
 * @kd: the device
 * @port: its port
 * @qpn: 0 or 1
 *
 * Return: how many were flushed.
 */
static inline int ktest_flush_rq(struct ktest_dev *kd, u8 port, u32 qpn)
{
	struct ktest_wr *w, *tmp;
	struct ktest_qp *qp = NULL;
	struct ib_wc wc = {};
	unsigned long irq;
	LIST_HEAD(gone);
	int n = 0;

	if (!port || port > KTEST_PORTS || qpn > 1)
		return 0;
	spin_lock_irqsave(&kd->lock, irq);
	qp = kd->special[port - 1][qpn];
	if (qp)
		list_splice_init(&qp->rq, &gone);
	spin_unlock_irqrestore(&kd->lock, irq);
	list_for_each_entry_safe(w, tmp, &gone, list) {
		wc.wr_id = w->wr_id;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp_num = qpn;
		wc.port_num = port;
		ktest_cq_add(qp->ibqp.recv_cq, &wc);
		kfree(w);
		n++;
	}
	return n;
}

/**
 * ktest_inject() - a packet arrives from the wire
 * @kd: the device
 * @port: at this port
 * @qpn: for its QP0 or QP1
 * @mad: the 256 bytes
 * @slid: from this LID
 * @src_qp: and QP
 *
 * Delivered from the work, in order with the sends (even while they are
 * held).  Return: 0, -ENODEV for no such QP, or -ENOMEM.
 */
static inline int ktest_inject(struct ktest_dev *kd, u8 port, u32 qpn,
			       const void *mad, u16 slid, u32 src_qp)
{
	struct ktest_wr *w = kzalloc(sizeof(*w), GFP_KERNEL);
	unsigned long irq;
	int ret = -ENODEV;

	if (!w)
		return -ENOMEM;
	w->injected = true;
	memcpy(w->mad, mad, sizeof(w->mad));
	w->slid = slid;
	w->src_qp = src_qp;
	spin_lock_irqsave(&kd->lock, irq);
	if (port >= 1 && port <= KTEST_PORTS && qpn <= 1 &&
	    kd->special[port - 1][qpn]) {
		w->qp = kd->special[port - 1][qpn];
		list_add_tail(&w->list, &kd->pending);
		ret = 0;
	}
	spin_unlock_irqrestore(&kd->lock, irq);
	if (ret) {
		kfree(w);
		return ret;
	}
	schedule_work(&kd->work);
	return 0;
}

/**
 * ktest_quiesce() - wait until the loopback has carried everything
 * @kd: the device
 */
static inline void ktest_quiesce(struct ktest_dev *kd)
{
	flush_work(&kd->work);
}

static inline struct ib_mr *ktest_get_dma_mr(struct ib_pd *pd, int access)
{
	return ktest_new(pd->device, sizeof(struct ib_mr));
}

static inline int ktest_dereg_mr(struct ib_mr *mr)
{
	return ktest_free(mr->device, mr);
}

/*
 * The "PCI function" of a test device: a root device that can do DMA (the
 * MAD layer, registered on UML too, maps its buffers for every device it
 * is given).  It lives until the end of the test, after the ib_device.
 */
static inline int ktest_parent_init(struct kunit_resource *res, void *kd)
{
	static atomic_t serial = ATOMIC_INIT(0);
	char name[48];
	struct device *dev;

	/* unique in this test file; test files run one after the other */
	snprintf(name, sizeof(name), "%s_%d", KBUILD_BASENAME,
		 atomic_inc_return(&serial));
	dev = root_device_register(name);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	dev->coherent_dma_mask = DMA_BIT_MASK(64);
	dev->dma_mask = &dev->coherent_dma_mask;
	res->data = dev;
	return 0;
}

static inline void ktest_parent_free(struct kunit_resource *res)
{
	root_device_unregister(res->data);
}

/*
 * A test device named @name (a "%d" in it is resolved at registration),
 * with every mandatory method, SRQs, and GIDs/P_Keys that tell ports and
 * indices apart: GID i of port p is fe80::p:i, P_Key i is 0xffff for i 0,
 * else 0x8000 | (p << 8 | i).  Freed with ib_dealloc_device().
 */
static inline struct ktest_dev *ktest_dev_alloc(struct kunit *test,
						const char *name)
{
	struct ktest_dev *kd;
	int p, i;

	kd = (struct ktest_dev *)ib_alloc_device(sizeof(*kd));
	KUNIT_ASSERT_NOT_NULL(test, kd);
	kd->ibdev.dma_device = kunit_alloc_resource(test, ktest_parent_init,
						    ktest_parent_free,
						    GFP_KERNEL, kd);
	KUNIT_ASSERT_NOT_NULL(test, kd->ibdev.dma_device);

	strscpy(kd->ibdev.name, name, sizeof(kd->ibdev.name));
	kd->ibdev.owner = THIS_MODULE;
	spin_lock_init(&kd->lock);
	INIT_LIST_HEAD(&kd->pending);
	INIT_LIST_HEAD(&kd->ahs);
	INIT_WORK(&kd->work, ktest_work);
	kd->ibdev.node_type = IB_NODE_CA;
	kd->ibdev.phys_port_cnt = KTEST_PORTS;
	kd->ibdev.node_guid = cpu_to_be64(0x0002c90300001234ULL);

	for (p = 0; p < KTEST_PORTS; p++) {
		for (i = 0; i < KTEST_GIDS; i++) {
			kd->gids[p][i].global.subnet_prefix =
				cpu_to_be64(0xfe80000000000000ULL);
			kd->gids[p][i].global.interface_id =
				cpu_to_be64(((u64)(p + 1) << 16) | i);
		}
		for (i = 0; i < KTEST_PKEYS; i++)
			kd->pkeys[p][i] = i ? 0x8000 | ((p + 1) << 8 | i) :
				0xffff;
	}

	kd->ibdev.query_device = ktest_query_device;
	kd->ibdev.query_port = ktest_query_port;
	kd->ibdev.query_gid = ktest_query_gid;
	kd->ibdev.query_pkey = ktest_query_pkey;
	kd->ibdev.modify_device = ktest_modify_device;
	kd->ibdev.alloc_pd = ktest_alloc_pd;
	kd->ibdev.dealloc_pd = ktest_dealloc_pd;
	kd->ibdev.create_ah = ktest_create_ah;
	kd->ibdev.query_ah = ktest_query_ah;
	kd->ibdev.destroy_ah = ktest_destroy_ah;
	kd->ibdev.create_srq = ktest_create_srq;
	kd->ibdev.destroy_srq = ktest_destroy_srq;
	kd->ibdev.post_srq_recv = ktest_post_srq_recv;
	kd->ibdev.create_qp = ktest_create_qp;
	kd->ibdev.modify_qp = ktest_modify_qp;
	kd->ibdev.destroy_qp = ktest_destroy_qp;
	kd->ibdev.post_send = ktest_post_send;
	kd->ibdev.post_recv = ktest_post_recv;
	kd->ibdev.create_cq = ktest_create_cq;
	kd->ibdev.destroy_cq = ktest_destroy_cq;
	kd->ibdev.poll_cq = ktest_poll_cq;
	kd->ibdev.req_notify_cq = ktest_req_notify_cq;
	kd->ibdev.get_dma_mr = ktest_get_dma_mr;
	kd->ibdev.dereg_mr = ktest_dereg_mr;
	return kd;
}

#endif /* IB_KTEST_DEV_H */
