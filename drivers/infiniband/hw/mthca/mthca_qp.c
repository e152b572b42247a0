// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: queue pairs of the mem-free MT25208.
 *
 * A QP owns one buffer: the receive queue, then the send queue, then for
 * QP0/QP1 one slot per send WQE for the packet headers of MLX sends.  The
 * buffer is covered by an MR at iova 0, so WQE addresses are offsets.
 * WQEs are pre-linked into rings at creation; posting fills a WQE, links
 * it from the previous one and tells the HCA through the doorbell record
 * (receive) or the record plus the UAR send doorbell (send).
 *
 * The state machine is the IBA one (the QP state diagram of chapter 10 and
 * the Modify QP attribute table of 11.2.4.2): ib_modify_qp_is_ok() checks
 * a transition and its attributes, and each legal transition maps to one
 * firmware command.
 */
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/sched.h>

#include <rdma/ib_pack.h>
#include <rdma/ib_cache.h>

#include <rdma/mthca-abi.h>

#include "mthca_dev.h"
#include "mthca_wqe.h"
#include "mthca_qp_state.h"

/* Service types of the QP context (flags [23:16]). */
enum {
	MTHCA_QPC_ST_RC		= 0x0,
	MTHCA_QPC_ST_UC		= 0x1,
	MTHCA_QPC_ST_UD		= 0x3,
	MTHCA_QPC_ST_MLX	= 0x7,
};

static const u8 mthca_qpc_st[] = {
	[MTHCA_SQ_RC]	= MTHCA_QPC_ST_RC,
	[MTHCA_SQ_UC]	= MTHCA_QPC_ST_UC,
	[MTHCA_SQ_UD]	= MTHCA_QPC_ST_UD,
	[MTHCA_SQ_MLX]	= MTHCA_QPC_ST_MLX,
};

/*
 * The QP context of MODIFY_QP/QUERY_QP, after the 8-byte header of the
 * mailbox (optional-parameter mask, reserved): 0x100 bytes, handled here
 * as 64 big-endian words.  Each field is named by its word, lowest bit and
 * width; the two address paths (primary at word 8, alternate at word 16)
 * have the same layout, so their fields are given relative to the path.
 */
#define QPC_WORDS		64
#define QPC_PRI			8
#define QPC_ALT			16

struct qpc_field {
	u8 word, shift, bits;
};

#define QF(w, s, b)	((struct qpc_field){ .word = (w), .shift = (s), .bits = (b) })

/* Whole-context fields. */
#define QPC_STATE	QF(0, 28, 4)
#define QPC_SERVICE	QF(0, 16, 8)
#define QPC_MIGRATION	QF(0, 11, 2)
#define QPC_DE		QF(0, 8, 1)
#define QPC_MTU		QF(2, 29, 3)
#define QPC_MSG_MAX	QF(2, 24, 5)
#define QPC_RQ_LOG	QF(2, 19, 4)
#define QPC_RQ_STRIDE	QF(2, 16, 3)
#define QPC_SQ_LOG	QF(2, 11, 4)
#define QPC_SQ_STRIDE	QF(2, 8, 3)
#define QPC_SCHED	QF(2, 0, 8)
#define QPC_UAR		QF(3, 0, 24)
#define QPC_LOCAL_QPN	QF(4, 0, 24)
#define QPC_REMOTE_QPN	QF(5, 0, 24)
#define QPC_PD		QF(25, 0, 24)
#define QPC_WQE_LKEY	QF(27, 0, 32)
#define QPC_ACK_FREQ	QF(28, 28, 4)
#define QPC_FLIGHT	QF(28, 24, 4)
#define QPC_SRA_MAX	QF(28, 21, 3)
#define QPC_RETRY	QF(28, 16, 3)
#define QPC_SRE		QF(28, 15, 1)
#define QPC_SWE		QF(28, 14, 1)
#define QPC_SAE		QF(28, 13, 1)
#define QPC_SSC		QF(28, 3, 1)
#define QPC_SQ_PSN	QF(30, 0, 24)
#define QPC_SEND_CQN	QF(31, 0, 24)
#define QPC_SQ_BASE	QF(32, 0, 32)
#define QPC_SQ_DB	QF(33, 0, 32)
#define QPC_RRA_MAX	QF(36, 21, 3)
#define QPC_RRE		QF(36, 15, 1)
#define QPC_RWE		QF(36, 14, 1)
#define QPC_RAE		QF(36, 13, 1)
#define QPC_RIC		QF(36, 4, 1)
#define QPC_RSC		QF(36, 3, 1)
#define QPC_MIN_RNR	QF(37, 24, 5)
#define QPC_RQ_PSN	QF(37, 0, 24)
#define QPC_RDB_ADDR	QF(38, 0, 32)
#define QPC_RECV_CQN	QF(39, 0, 24)
#define QPC_RQ_DB	QF(41, 0, 32)
#define QPC_QKEY	QF(42, 0, 32)
#define QPC_SRQ_ON	QF(43, 24, 1)
#define QPC_SRQN	QF(43, 0, 24)

/* Address path fields, relative to QPC_PRI or QPC_ALT (8 words each). */
#define QPP_PORT	QF(0, 24, 2)
#define QPP_PKEY_INDEX	QF(0, 0, 7)
#define QPP_RNR_RETRY	QF(1, 29, 3)
#define QPP_GRH		QF(1, 23, 1)
#define QPP_PATH_BITS	QF(1, 16, 7)
#define QPP_DLID	QF(1, 0, 16)
#define QPP_ACK_TIMEOUT	QF(2, 27, 5)
#define QPP_SGID_INDEX	QF(2, 16, 8)
#define QPP_RATE	QF(2, 8, 8)
#define QPP_HOP_LIMIT	QF(2, 0, 8)
#define QPP_SL		QF(3, 28, 4)
#define QPP_TCLASS	QF(3, 20, 8)
#define QPP_FLOW	QF(3, 0, 20)
#define QPP_DGID_WORD	4		/* four words of destination GID */

static u32 qf_mask(struct qpc_field f)
{
	return f.bits == 32 ? ~0u : (1u << f.bits) - 1;
}

/* Or @v into field @f of the CPU-order context @w (starting at @base). */
static void qf_put(u32 *w, unsigned int base, struct qpc_field f, u32 v)
{
	w[base + f.word] |= (v & qf_mask(f)) << f.shift;
}

/* Read field @f of a big-endian context @w (starting at @base). */
static u32 qf_get(const __be32 *w, unsigned int base, struct qpc_field f)
{
	return (be32_to_cpu(w[base + f.word]) >> f.shift) & qf_mask(f);
}

/* Offset of the context in the mailbox: after the mask and a reserved word. */
#define QPC_MBOX_CTX	2

/* Fixed requester parameters: ACK request frequency, packets in flight. */
#define MTHCA_QP_ACK_FREQ	10
#define MTHCA_QP_FLIGHT		9
#define MTHCA_RDB_ENTRY_BYTES	32

/* Optional-parameter mask bits of MODIFY_QP. */
enum {
	MTHCA_OPT_ALT_PATH	= 1 << 0,
	MTHCA_OPT_RRE		= 1 << 1,
	MTHCA_OPT_RAE		= 1 << 2,
	MTHCA_OPT_RWE		= 1 << 3,
	MTHCA_OPT_PKEY_INDEX	= 1 << 4,
	MTHCA_OPT_QKEY		= 1 << 5,
	MTHCA_OPT_RNR_TIMEOUT	= 1 << 6,
	MTHCA_OPT_PRI_PATH	= 1 << 7,
	MTHCA_OPT_SRA_MAX	= 1 << 8,
	MTHCA_OPT_RRA_MAX	= 1 << 9,
	MTHCA_OPT_PM_STATE	= 1 << 10,
	MTHCA_OPT_PORT		= 1 << 11,
	MTHCA_OPT_RETRY_COUNT	= 1 << 12,
	MTHCA_OPT_ALT_RNR_RETRY	= 1 << 13,
	MTHCA_OPT_ACK_TIMEOUT	= 1 << 14,
	MTHCA_OPT_RNR_RETRY	= 1 << 15,
	MTHCA_OPT_SCHED_QUEUE	= 1 << 16,
};

/* Send opcodes of the WQE for each ib_wr_opcode. */
static const u8 mthca_wr_op[] = {
	[IB_WR_RDMA_WRITE]		= MTHCA_OP_RDMA_WRITE,
	[IB_WR_RDMA_WRITE_WITH_IMM]	= MTHCA_OP_RDMA_WRITE | MTHCA_OP_IMM,
	[IB_WR_SEND]			= MTHCA_OP_SEND,
	[IB_WR_SEND_WITH_IMM]		= MTHCA_OP_SEND | MTHCA_OP_IMM,
	[IB_WR_RDMA_READ]		= MTHCA_OP_RDMA_READ,
	[IB_WR_ATOMIC_CMP_AND_SWP]	= MTHCA_OP_ATOMIC_CS,
	[IB_WR_ATOMIC_FETCH_AND_ADD]	= MTHCA_OP_ATOMIC_FA,
};

static bool qp_is_special(const struct mthca_qp *qp)
{
	return qp->kind == MTHCA_SQ_MLX;
}

static void *rq_wqe(struct mthca_qp *qp, u32 n)
{
	return qp->buf.cpu + (n << qp->rq.wqe_shift);
}

static void *sq_wqe(struct mthca_qp *qp, u32 n)
{
	return qp->buf.cpu + qp->sq.offset + (n << qp->sq.wqe_shift);
}

static void wq_reset(struct mthca_wq *wq)
{
	wq->head = 0;
	wq->tail = 0;
	wq->last_comp = wq->max - 1;
}

/* Link every WQE of both rings to its successor and set the end lkeys. */
static void qp_link_rings(struct mthca_qp *qp)
{
	struct mthca_next_seg *next;
	struct mthca_data_seg *dseg;
	u32 units = mthca_rq_wqe_bytes(qp->rq.max_gs) / 16;
	u32 i;

	for (i = 0; i < qp->rq.max; i++) {
		next = rq_wqe(qp, i);
		next->nda_op = cpu_to_be32(((i + 1) & (qp->rq.max - 1)) <<
					   qp->rq.wqe_shift);
		next->ee_nds = cpu_to_be32(units);
		for (dseg = (void *)(next + 1);
		     (void *)dseg < (void *)next + (1 << qp->rq.wqe_shift);
		     dseg++)
			dseg->lkey = cpu_to_be32(MTHCA_LKEY_END_OF_LIST);
	}
	for (i = 0; i < qp->sq.max; i++) {
		next = sq_wqe(qp, i);
		next->nda_op = cpu_to_be32((((i + 1) & (qp->sq.max - 1)) <<
					    qp->sq.wqe_shift) + qp->sq.offset);
	}
	wq_reset(&qp->sq);
	wq_reset(&qp->rq);
	if (qp->sq.max)
		qp->sq.last = sq_wqe(qp, qp->sq.max - 1);
	if (qp->rq.max)
		qp->rq.last = rq_wqe(qp, qp->rq.max - 1);
}

/**
 * mthca_qp_event() - an asynchronous event on a QP arrived
 * @dev: the device
 * @qpn: the QP number from the EQE
 * @type: the event
 *
 * Called from the EQ interrupt handler; runs the QP's event handler.
 */
void mthca_qp_event(struct mthca_dev *dev, u32 qpn, enum ib_event_type type)
{
	struct mthca_qp *qp;
	struct ib_event ev;

	qp = mthca_dp_event_target(dev, &dev->qp_table.objs, qpn, type,
				   "QP", struct mthca_qp);
	if (!qp)
		return;
	/* The HCA migrated the QP: its packets now leave by the alternate port. */
	if (type == IB_EVENT_PATH_MIG && READ_ONCE(qp->alt_port))
		WRITE_ONCE(qp->port, READ_ONCE(qp->alt_port));
	ev.element.qp = &qp->ibqp;
	mthca_dp_raise_event(dev, &ev, type, qp->ibqp.event_handler,
			     qp->ibqp.qp_context, &qp->life);
}

/*
 * Size the queues of @qp for @cap; fills max, max_gs and the strides.  A
 * user QP's buffer is laid out by libmthca: its receive queue is sized
 * from max_recv_wr even with an SRQ, its send WQEs always leave room for
 * one gather entry or the inline data, and it may always send inline.
 */
static int qp_size_queues(struct mthca_dev *dev, struct mthca_qp *qp,
			  struct ib_qp_cap *cap, bool has_srq, bool user)
{
	const struct mthca_limits *lim = &dev->limits;
	unsigned int bytes, send_sge;

	if (cap->max_send_wr > lim->max_wqes ||
	    cap->max_recv_wr > lim->max_wqes ||
	    cap->max_send_sge > lim->max_sg ||
	    cap->max_recv_sge > lim->max_sg)
		return -EINVAL;
	/* MLX WQEs carry two more gather entries: header and ICRC. */
	if (qp->kind == MTHCA_SQ_MLX &&
	    (cap->max_send_sge + 2 > lim->max_sg || cap->max_inline_data))
		return -EINVAL;
	/* Inline data takes the room of gather entries, after a 4-byte count. */
	send_sge = max_t(unsigned int, cap->max_send_sge,
			 DIV_ROUND_UP(cap->max_inline_data + 4,
				      sizeof(struct mthca_data_seg)));
	if (!cap->max_inline_data && !user)
		send_sge = cap->max_send_sge;
	if (user)
		has_srq = false;

	qp->sq.max = cap->max_send_wr ?
		roundup_pow_of_two(cap->max_send_wr) : 0;
	qp->rq.max = cap->max_recv_wr && !has_srq ?
		roundup_pow_of_two(cap->max_recv_wr) : 0;

	bytes = mthca_rq_wqe_bytes(cap->max_recv_sge);
	if (bytes > lim->max_desc_sz)
		return -EINVAL;
	qp->rq.wqe_shift = mthca_wqe_shift(bytes);
	bytes = mthca_sq_wqe_bytes(qp->kind, send_sge);
	if (bytes > lim->max_desc_sz)
		return -EINVAL;
	qp->sq.wqe_shift = mthca_wqe_shift(bytes);

	bytes = min_t(unsigned int, lim->max_desc_sz, 1u << qp->rq.wqe_shift);
	qp->rq.max_gs = min_t(unsigned int, lim->max_sg,
			      (bytes - sizeof(struct mthca_next_seg)) /
			      sizeof(struct mthca_data_seg));
	bytes = min_t(unsigned int, lim->max_desc_sz, 1u << qp->sq.wqe_shift);
	qp->sq.max_gs = min_t(unsigned int, lim->max_sg,
			      mthca_sq_max_sge(qp->kind, bytes));
	qp->max_inline = cap->max_inline_data || user ?
		mthca_sq_max_sge(qp->kind, bytes) *
		sizeof(struct mthca_data_seg) - 4 : 0;

	qp->rq.offset = 0;
	qp->sq.offset = mthca_sq_offset(qp->rq.max, qp->rq.wqe_shift,
					qp->sq.wqe_shift);
	qp->hdr_offset = qp->sq.offset + (qp->sq.max << qp->sq.wqe_shift);
	return 0;
}

/* The RDB table object of a QP's first responder slot. */
static u32 qp_rdb_obj(struct mthca_dev *dev, struct mthca_qp *qp)
{
	return qp->qpn << dev->layout.rdb_shift;
}

/* The ICM entries of a QP's context, its extended context and its RDB. */
static int qp_contexts_get(struct mthca_dev *dev, struct mthca_qp *qp)
{
	int err;

	err = mthca_icm_table_get(dev, dev->icm_qpc, qp->qpn);
	if (err)
		return err;
	err = mthca_icm_table_get(dev, dev->icm_eqpc, qp->qpn);
	if (err)
		goto err_qpc;
	err = mthca_icm_table_get(dev, dev->icm_rdb, qp_rdb_obj(dev, qp));
	if (err)
		goto err_eqpc;
	return 0;

err_eqpc:
	mthca_icm_table_put(dev, dev->icm_eqpc, qp->qpn);
err_qpc:
	mthca_icm_table_put(dev, dev->icm_qpc, qp->qpn);
	return err;
}

static void qp_contexts_put(struct mthca_dev *dev, struct mthca_qp *qp)
{
	mthca_icm_table_put(dev, dev->icm_rdb, qp_rdb_obj(dev, qp));
	mthca_icm_table_put(dev, dev->icm_eqpc, qp->qpn);
	mthca_icm_table_put(dev, dev->icm_qpc, qp->qpn);
}

static int qp_alloc_resources(struct mthca_dev *dev, struct mthca_qp *qp,
			      struct mthca_pd *pd)
{
	size_t size = qp->hdr_offset;
	int err;

	if (qp_is_special(qp))
		size += qp->sq.max * MTHCA_DP_UD_HEADER_BYTES;

	err = qp_contexts_get(dev, qp);
	if (err)
		return err;

	qp->wrid = kcalloc(qp->rq.max + qp->sq.max, sizeof(u64), GFP_KERNEL);
	if (!qp->wrid) {
		err = -ENOMEM;
		goto err_contexts;
	}
	err = mthca_dp_buf_alloc(dev, size, pd->pdn, false, &qp->buf);
	if (err)
		goto err_wrid;

	qp->rq.db_index = mthca_db_alloc(dev, MTHCA_DB_RQ, qp->qpn,
					 &qp->rq.db);
	if (qp->rq.db_index < 0) {
		err = -ENOMEM;
		goto err_buf;
	}
	qp->sq.db_index = mthca_db_alloc(dev, MTHCA_DB_SQ, qp->qpn,
					 &qp->sq.db);
	if (qp->sq.db_index < 0) {
		err = -ENOMEM;
		goto err_rq_db;
	}
	qp_link_rings(qp);
	return 0;

err_rq_db:
	mthca_db_free(dev, MTHCA_DB_RQ, qp->rq.db_index);
err_buf:
	mthca_dp_buf_free(dev, &qp->buf);
err_wrid:
	kfree(qp->wrid);
err_contexts:
	qp_contexts_put(dev, qp);
	return err;
}

/*
 * A user QP's buffer is an MR of the process (@ucmd's lkey, registered at
 * IOVA 0) and its doorbell records are in its pages: only the context
 * entries are the kernel's.
 */
static int qp_alloc_user(struct mthca_dev *dev, struct mthca_qp *qp,
			 struct mthca_ucontext *uctx, struct ib_udata *udata)
{
	struct mthca_create_qp ucmd;
	int err;

	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	err = qp_contexts_get(dev, qp);
	if (err)
		return err;
	err = mthca_map_user_db(dev, &uctx->uar, uctx->db_tab,
				ucmd.sq_db_index, ucmd.sq_db_page, NULL);
	if (err)
		goto err_contexts;
	err = mthca_map_user_db(dev, &uctx->uar, uctx->db_tab,
				ucmd.rq_db_index, ucmd.rq_db_page, NULL);
	if (err)
		goto err_sq_db;
	qp->sq.db_index = ucmd.sq_db_index;
	qp->rq.db_index = ucmd.rq_db_index;
	qp->buf.lkey = ucmd.lkey;
	qp->uctx = uctx;
	return 0;

err_sq_db:
	mthca_unmap_user_db(dev, &uctx->uar, uctx->db_tab, ucmd.sq_db_index);
err_contexts:
	qp_contexts_put(dev, qp);
	return err;
}

static void qp_free_resources(struct mthca_dev *dev, struct mthca_qp *qp)
{
	if (qp->uctx) {
		mthca_unmap_user_db(dev, &qp->uctx->uar, qp->uctx->db_tab,
				    qp->rq.db_index);
		mthca_unmap_user_db(dev, &qp->uctx->uar, qp->uctx->db_tab,
				    qp->sq.db_index);
	} else {
		mthca_db_free(dev, MTHCA_DB_SQ, qp->sq.db_index);
		mthca_db_free(dev, MTHCA_DB_RQ, qp->rq.db_index);
		mthca_dp_buf_free(dev, &qp->buf);
		kfree(qp->wrid);
	}
	qp_contexts_put(dev, qp);
}

/**
 * mthca_dp_create_qp() - create a queue pair
 * @ibpd: the protection domain
 * @init: what is asked for; @init->cap is updated to what was allocated
 * @udata: a user QP's struct mthca_create_qp (buffer lkey, doorbell
 *	records), else NULL; the PD is then a user PD
 *
 * Return: the QP, or an ERR_PTR.
 */
static struct ib_qp *mthca_dp_create_qp(struct ib_pd *ibpd,
					struct ib_qp_init_attr *init,
					struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	struct xarray *xa = &dev->qp_table.objs;
	struct mthca_ucontext *uctx = NULL;
	struct mthca_qp *qp;
	u32 qpn;
	int err;

	if (udata) {
		if (!ibpd->uobject || init->qp_type == IB_QPT_SMI ||
		    init->qp_type == IB_QPT_GSI)
			return ERR_PTR(-EINVAL);
		uctx = to_mucontext(ibpd->uobject->context);
	}
	if (!init->send_cq || !init->recv_cq)
		return ERR_PTR(-EINVAL);

	qp = kzalloc(sizeof(*qp), GFP_KERNEL);
	if (!qp)
		return ERR_PTR(-ENOMEM);

	switch (init->qp_type) {
	case IB_QPT_RC:
		qp->kind = MTHCA_SQ_RC;
		break;
	case IB_QPT_UC:
		qp->kind = MTHCA_SQ_UC;
		break;
	case IB_QPT_UD:
		qp->kind = MTHCA_SQ_UD;
		break;
	case IB_QPT_SMI:
	case IB_QPT_GSI:
		qp->kind = MTHCA_SQ_MLX;
		if (init->port_num < 1 ||
		    init->port_num > dev->limits.num_ports) {
			err = -EINVAL;
			goto err_free;
		}
		qp->port = init->port_num;
		break;
	default:
		err = -EINVAL;
		goto err_free;
	}

	err = qp_size_queues(dev, qp, &init->cap, !!init->srq, !!uctx);
	if (err)
		goto err_free;

	mutex_init(&qp->mutex);
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	mthca_dp_life_init(&qp->life);
	qp->state = IB_QPS_RESET;
	qp->sq_policy = init->sq_sig_type;

	if (qp_is_special(qp)) {
		/* QP0 and QP1 exist once per port. */
		qpn = dev->qp_table.sqp_base +
			2 * (init->qp_type == IB_QPT_GSI) + qp->port - 1;
		err = xa_insert_irq(xa, qpn, NULL, GFP_KERNEL);
		if (err)
			goto err_free;
	} else {
		err = xa_alloc_cyclic_irq(xa, &qpn, NULL,
					  XA_LIMIT(dev->qp_table.sqp_base + 8,
						   dev->limits.num_qps - 1),
					  &dev->qp_table.next, GFP_KERNEL);
		if (err < 0)
			goto err_free;
	}
	qp->qpn = qpn;

	if (uctx)
		err = qp_alloc_user(dev, qp, uctx, udata);
	else
		err = qp_alloc_resources(dev, qp, to_mpd(ibpd));
	if (err)
		goto err_num;

	qp->ibqp.qp_num = init->qp_type == IB_QPT_SMI ? 0 :
		init->qp_type == IB_QPT_GSI ? 1 : qpn;
	init->cap.max_send_wr = qp->sq.max;
	init->cap.max_recv_wr = qp->rq.max;
	init->cap.max_send_sge = qp->sq.max_gs;
	init->cap.max_recv_sge = qp->rq.max_gs;
	init->cap.max_inline_data = qp->max_inline;

	qp->ibqp.send_cq = init->send_cq;
	qp->ibqp.recv_cq = init->recv_cq;
	mthca_dp_cq_list_qp(qp);
	xa_store_irq(xa, qpn, qp, GFP_KERNEL);
	return &qp->ibqp;

err_num:
	xa_erase_irq(xa, qpn);
err_free:
	kfree(qp);
	return ERR_PTR(err);
}

static int qp_cmd_to_reset(struct mthca_dev *dev, u32 qpn)
{
	/* op_mod 3: no context is written back */
	return mthca_MODIFY_QP(dev, MTHCA_CMD_2RST_QP, qpn, false, NULL, 0);
}

static int qp_port_init_ib(struct mthca_dev *dev, u8 port);
static int qp_port_close_ib(struct mthca_dev *dev, u8 port);

/**
 * mthca_dp_destroy_qp() - destroy a queue pair
 * @ibqp: the QP
 *
 * Return: 0.
 */
static int mthca_dp_destroy_qp(struct ib_qp *ibqp)
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_qp *qp = to_mqp(ibqp);
	struct mthca_cq *scq = to_mcq(ibqp->send_cq);
	struct mthca_cq *rcq = to_mcq(ibqp->recv_cq);
	int err;

	mutex_lock(&qp->mutex);
	if (qp->state != IB_QPS_RESET) {
		err = qp_cmd_to_reset(dev, qp->qpn);
		if (err)
			mthca_teardown_warn(dev, "QP %06x to RESET failed: %d\n",
					    qp->qpn, err);
		if (qp->ibqp.qp_num == 0 && qp->state != IB_QPS_ERR)
			qp_port_close_ib(dev, qp->port);
		qp->state = IB_QPS_RESET;
	}
	mutex_unlock(&qp->mutex);

	/*
	 * Unlist the QP (keeping its number reserved).  Pollers look QPs up
	 * under their CQ's lock, and cleaning a CQ takes that lock, so once
	 * both CQs are clean no poller can still be looking at this QP.
	 */
	xa_store_irq(&dev->qp_table.objs, qp->qpn, NULL, GFP_KERNEL);
	mthca_dp_cq_clean(rcq, qp->qpn,
			  ibqp->srq ? to_msrq(ibqp->srq) : NULL);
	if (scq != rcq)
		mthca_dp_cq_clean(scq, qp->qpn, NULL);
	mthca_dp_cq_unlist_qp(qp);
	mthca_dp_life_end(&qp->life);

	qp_free_resources(dev, qp);
	xa_erase_irq(&dev->qp_table.objs, qp->qpn);
	kfree(qp);
	return 0;
}

/* Put an address path (the AH attribute of the IBA) at @base of @w. */
static int qp_put_path(struct mthca_dev *dev, u32 *w, unsigned int base,
		       const struct ib_ah_attr *ah)
{
	const struct ib_global_route *g = &ah->grh;
	int i;

	qf_put(w, base, QPP_DLID, ah->dlid);
	qf_put(w, base, QPP_PATH_BITS, ah->src_path_bits);
	qf_put(w, base, QPP_SL, ah->sl);
	/* QPP_RATE stays 0: full port rate */
	if (!(ah->ah_flags & IB_AH_GRH))
		return 0;
	if (g->sgid_index >= dev->limits.gid_table_len)
		return -EINVAL;
	qf_put(w, base, QPP_GRH, 1);
	qf_put(w, base, QPP_SGID_INDEX, g->sgid_index);
	qf_put(w, base, QPP_HOP_LIMIT, g->hop_limit);
	qf_put(w, base, QPP_TCLASS, g->traffic_class);
	qf_put(w, base, QPP_FLOW, g->flow_label);
	for (i = 0; i < 4; i++)
		w[base + QPP_DGID_WORD + i] =
			be32_to_cpu(((__be32 *)g->dgid.raw)[i]);
	return 0;
}

static void qp_read_path(const __be32 *w, unsigned int base,
			 struct ib_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = qf_get(w, base, QPP_PORT);
	ah->dlid = qf_get(w, base, QPP_DLID);
	ah->src_path_bits = qf_get(w, base, QPP_PATH_BITS);
	ah->sl = qf_get(w, base, QPP_SL);
	if (!qf_get(w, base, QPP_GRH))
		return;
	ah->ah_flags = IB_AH_GRH;
	ah->grh.sgid_index = qf_get(w, base, QPP_SGID_INDEX);
	ah->grh.hop_limit = qf_get(w, base, QPP_HOP_LIMIT);
	ah->grh.traffic_class = qf_get(w, base, QPP_TCLASS);
	ah->grh.flow_label = qf_get(w, base, QPP_FLOW);
	memcpy(ah->grh.dgid.raw, &w[base + QPP_DGID_WORD], 16);
}

/* log2 of a responder/initiator depth, rounded up (0 and 1 give 0). */
static u32 qp_depth_log(u8 depth)
{
	return depth > 1 ? fls(depth - 1) : 0;
}

/*
 * Put one attribute of a modify call into the context; return the
 * optional-parameter bits it sets, or a negative errno.
 */
static int qp_put_attr(struct mthca_dev *dev, struct mthca_qp *qp, u32 *w,
		       const struct ib_qp_attr *attr, int mask, int which)
{
	int access;
	u8 depth;

	switch (which) {
	case IB_QP_PATH_MIG_STATE: {
		static const u8 mig_code[] = {
			[IB_MIG_MIGRATED] = 3, [IB_MIG_REARM] = 1,
			[IB_MIG_ARMED] = 0,
		};

		if (attr->path_mig_state > IB_MIG_ARMED)
			return -EINVAL;
		qf_put(w, 0, QPC_MIGRATION, mig_code[attr->path_mig_state]);
		return MTHCA_OPT_PM_STATE;
	}
	case IB_QP_PATH_MTU:
		/* UD and MLX run at a fixed 2048-byte MTU, set elsewhere */
		if (qp->kind == MTHCA_SQ_UD || qp->kind == MTHCA_SQ_MLX)
			return 0;
		if (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_2048)
			return -EINVAL;
		qf_put(w, 0, QPC_MTU, attr->path_mtu);
		qf_put(w, 0, QPC_MSG_MAX, 31);
		return 0;
	case IB_QP_DEST_QPN:
		qf_put(w, 0, QPC_REMOTE_QPN, attr->dest_qp_num);
		return 0;
	case IB_QP_PORT:
		if (qp->kind == MTHCA_SQ_MLX)
			return 0;
		qf_put(w, QPC_PRI, QPP_PORT, attr->port_num);
		return MTHCA_OPT_PORT;
	case IB_QP_PKEY_INDEX:
		qf_put(w, QPC_PRI, QPP_PKEY_INDEX, attr->pkey_index);
		return MTHCA_OPT_PKEY_INDEX;
	case IB_QP_RNR_RETRY:
		qf_put(w, QPC_PRI, QPP_RNR_RETRY, attr->rnr_retry);
		qf_put(w, QPC_ALT, QPP_RNR_RETRY, attr->rnr_retry);
		return MTHCA_OPT_RNR_RETRY | MTHCA_OPT_ALT_RNR_RETRY;
	case IB_QP_AV:
		if (qp_put_path(dev, w, QPC_PRI, &attr->ah_attr))
			return -EINVAL;
		return MTHCA_OPT_PRI_PATH;
	case IB_QP_TIMEOUT:
		qf_put(w, QPC_PRI, QPP_ACK_TIMEOUT, attr->timeout);
		return MTHCA_OPT_ACK_TIMEOUT;
	case IB_QP_ALT_PATH:
		if (attr->alt_pkey_index >= dev->limits.pkey_table_len ||
		    attr->alt_port_num < 1 ||
		    attr->alt_port_num > dev->limits.num_ports ||
		    qp_put_path(dev, w, QPC_ALT, &attr->alt_ah_attr))
			return -EINVAL;
		qf_put(w, QPC_ALT, QPP_PORT, attr->alt_port_num);
		qf_put(w, QPC_ALT, QPP_PKEY_INDEX, attr->alt_pkey_index);
		qf_put(w, QPC_ALT, QPP_ACK_TIMEOUT, attr->alt_timeout);
		return MTHCA_OPT_ALT_PATH;
	case IB_QP_RETRY_CNT:
		qf_put(w, 0, QPC_RETRY, attr->retry_cnt);
		return MTHCA_OPT_RETRY_COUNT;
	case IB_QP_MAX_QP_RD_ATOMIC:
		if (attr->max_rd_atomic) {
			qf_put(w, 0, QPC_SRE, 1);
			qf_put(w, 0, QPC_SAE, 1);
			qf_put(w, 0, QPC_SRA_MAX,
			       qp_depth_log(attr->max_rd_atomic));
		}
		return MTHCA_OPT_SRA_MAX;
	case IB_QP_SQ_PSN:
		qf_put(w, 0, QPC_SQ_PSN, attr->sq_psn);
		return 0;
	case IB_QP_MAX_DEST_RD_ATOMIC:
	case IB_QP_ACCESS_FLAGS:
		/* both decide the remote access bits; done once, below */
		return 0;
	case IB_QP_MIN_RNR_TIMER:
		qf_put(w, 0, QPC_MIN_RNR, attr->min_rnr_timer);
		return MTHCA_OPT_RNR_TIMEOUT;
	case IB_QP_RQ_PSN:
		qf_put(w, 0, QPC_RQ_PSN, attr->rq_psn);
		return 0;
	case IB_QP_QKEY:
		qf_put(w, 0, QPC_QKEY, attr->qkey);
		return MTHCA_OPT_QKEY;
	}

	if (which || !(mask & (IB_QP_ACCESS_FLAGS | IB_QP_MAX_DEST_RD_ATOMIC)))
		return 0;
	/* the responder side: its depth and what remote peers may do */
	depth = mask & IB_QP_MAX_DEST_RD_ATOMIC ? attr->max_dest_rd_atomic :
		qp->resp_depth;
	access = mask & IB_QP_ACCESS_FLAGS ? attr->qp_access_flags :
		qp->access;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qf_put(w, 0, QPC_RRA_MAX, qp_depth_log(depth));
	/* without responder resources only RDMA writes can be served */
	if (!depth)
		access &= IB_ACCESS_REMOTE_WRITE;
	qf_put(w, 0, QPC_RRE, !!(access & IB_ACCESS_REMOTE_READ));
	qf_put(w, 0, QPC_RWE, !!(access & IB_ACCESS_REMOTE_WRITE));
	qf_put(w, 0, QPC_RAE, !!(access & IB_ACCESS_REMOTE_ATOMIC));
	return MTHCA_OPT_RRE | MTHCA_OPT_RWE | MTHCA_OPT_RAE |
		(mask & IB_QP_MAX_DEST_RD_ATOMIC ? MTHCA_OPT_RRA_MAX : 0);
}

/*
 * Build the MODIFY_QP mailbox for @cur -> @next in @mb: first what every
 * transition carries (state, queues, CQs, doorbells, keys), then each
 * attribute of @mask.
 */
static int qp_fill_context(struct mthca_dev *dev, struct mthca_qp *qp,
			   const struct ib_qp_attr *attr, int mask,
			   enum ib_qp_state cur, enum ib_qp_state next,
			   __be32 *mb)
{
	struct ib_qp *ibqp = &qp->ibqp;
	u32 w[QPC_WORDS] = {};
	u32 opt = 0;
	int bit, ret, i;

	qf_put(w, 0, QPC_STATE, mthca_qps_to_hw(next));
	qf_put(w, 0, QPC_SERVICE, mthca_qpc_st[qp->kind]);
	qf_put(w, 0, QPC_DE, 1);
	if (!(mask & IB_QP_PATH_MIG_STATE))
		qf_put(w, 0, QPC_MIGRATION, 3);	/* migrated */
	if (qp->kind == MTHCA_SQ_UD || qp->kind == MTHCA_SQ_MLX) {
		qf_put(w, 0, QPC_MTU, IB_MTU_2048);
		qf_put(w, 0, QPC_MSG_MAX, 11);
	}
	if (qp->rq.max)
		qf_put(w, 0, QPC_RQ_LOG, ilog2(qp->rq.max));
	qf_put(w, 0, QPC_RQ_STRIDE, qp->rq.wqe_shift - 4);
	if (qp->sq.max)
		qf_put(w, 0, QPC_SQ_LOG, ilog2(qp->sq.max));
	qf_put(w, 0, QPC_SQ_STRIDE, qp->sq.wqe_shift - 4);
	if (ibqp->qp_type == IB_QPT_RC &&
	    cur == IB_QPS_INIT && next == IB_QPS_RTR) {
		/* the kernel's queue, or the one of user QPs */
		qf_put(w, 0, QPC_SCHED, qp->uctx ? 2 : 1);
		opt |= MTHCA_OPT_SCHED_QUEUE;
	}
	qf_put(w, 0, QPC_UAR, qp->uctx ? qp->uctx->uar.num :
	       dev->driver_uar.num);
	qf_put(w, 0, QPC_LOCAL_QPN, qp->qpn);
	if (qp->kind == MTHCA_SQ_MLX)
		qf_put(w, QPC_PRI, QPP_PORT, qp->port);
	qf_put(w, 0, QPC_PD, to_mpd(ibqp->pd)->pdn);
	/* the WQE buffer's MR starts at iova 0, so the base stays 0 */
	qf_put(w, 0, QPC_WQE_LKEY, qp->buf.lkey);
	qf_put(w, 0, QPC_ACK_FREQ, MTHCA_QP_ACK_FREQ);
	qf_put(w, 0, QPC_FLIGHT, MTHCA_QP_FLIGHT);
	qf_put(w, 0, QPC_SWE, 1);
	qf_put(w, 0, QPC_SSC, qp->sq_policy == IB_SIGNAL_ALL_WR);
	qf_put(w, 0, QPC_SEND_CQN, to_mcq(ibqp->send_cq)->cqn);
	qf_put(w, 0, QPC_SQ_BASE, qp->sq.offset);
	qf_put(w, 0, QPC_SQ_DB, qp->sq.db_index);
	qf_put(w, 0, QPC_RSC, 1);
	qf_put(w, 0, QPC_RDB_ADDR, dev->layout.rdb_base +
	       ((qp->qpn & (dev->limits.num_qps - 1)) *
		MTHCA_RDB_ENTRY_BYTES << dev->layout.rdb_shift));
	qf_put(w, 0, QPC_RECV_CQN, to_mcq(ibqp->recv_cq)->cqn);
	qf_put(w, 0, QPC_RQ_DB, qp->rq.db_index);
	if (ibqp->srq) {
		qf_put(w, 0, QPC_RIC, 1);
		qf_put(w, 0, QPC_SRQ_ON, 1);
		qf_put(w, 0, QPC_SRQN, to_msrq(ibqp->srq)->srqn);
	}

	for (bit = 0; bit < BITS_PER_TYPE(int); bit++) {
		if (!(mask & BIT(bit)) || BIT(bit) == IB_QP_STATE ||
		    BIT(bit) == IB_QP_CUR_STATE ||
		    BIT(bit) == IB_QP_EN_SQD_ASYNC_NOTIFY || BIT(bit) == IB_QP_CAP)
			continue;
		ret = qp_put_attr(dev, qp, w, attr, mask, BIT(bit));
		if (ret < 0)
			return ret;
		opt |= ret;
	}
	/* the remote access bits, from one or both of their attributes */
	ret = qp_put_attr(dev, qp, w, attr, mask, 0);
	opt |= ret;

	mb[0] = cpu_to_be32(opt);
	for (i = 0; i < QPC_WORDS; i++)
		mb[QPC_MBOX_CTX + i] = cpu_to_be32(w[i]);
	return 0;
}

/*
 * INIT_IB/CLOSE_IB of a port follow its QP0: the link is brought up when
 * QP0 reaches RTR and taken down when it leaves service.
 */
static int qp_port_init_ib(struct mthca_dev *dev, u8 port)
{
	const struct mthca_limits *lim = &dev->limits;
	struct mthca_init_ib_param p = {
		.port_width = lim->port_width_cap,
		.vl_cap = lim->vl_cap,
		.mtu_cap = lim->mtu_cap,
		.gid_cap = lim->gid_table_len,
		.pkey_cap = lim->pkey_table_len,
	};
	int err = mthca_INIT_IB(dev, &p, port);

	if (err)
		dev_warn(&dev->pdev->dev, "INIT_IB port %u failed: %d\n",
			 port, err);
	return err;
}

static int qp_port_close_ib(struct mthca_dev *dev, u8 port)
{
	int err = mthca_CLOSE_IB(dev, port);

	if (err)
		mthca_teardown_warn(dev, "CLOSE_IB port %u failed: %d\n",
				    port, err);
	return err;
}

/**
 * mthca_dp_modify_qp() - move a QP through its state machine
 * @ibqp: the QP
 * @attr: the attributes
 * @mask: which of them are given (enum ib_qp_attr_mask)
 *
 * Return: 0, or -EINVAL for a transition or attribute the IBA does not
 * allow, or the firmware's error.
 */
static int mthca_dp_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			      int mask)
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_qp *qp = to_mqp(ibqp);
	enum ib_qp_state cur, next;
	struct mthca_mailbox *box;
	u32 sqd_event = 0;
	u16 op;
	int err = -EINVAL;

	mutex_lock(&qp->mutex);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	if (cur > IB_QPS_ERR || next > IB_QPS_ERR)
		goto out;

	/* The transition and its required/allowed attributes (11.2.4.2). */
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		dev_dbg(&dev->pdev->dev,
			"QP %06x: %s -> %s with mask %#x not allowed\n",
			qp->qpn, mthca_qps_name(cur),
			mthca_qps_name(next), mask);
		goto out;
	}
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= dev->limits.pkey_table_len)
		goto out;
	if ((mask & IB_QP_PORT) &&
	    (attr->port_num < 1 || attr->port_num > dev->limits.num_ports))
		goto out;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > 1 << dev->layout.rdb_shift)
		goto out;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > 128)
		goto out;

	if (cur == IB_QPS_RESET && next == IB_QPS_RESET) {
		err = 0;
		goto out;
	}

	op = mthca_qp_transition(cur, next);
	if (!op)
		goto out;

	if (next == IB_QPS_RESET) {
		err = qp_cmd_to_reset(dev, qp->qpn);
	} else {
		box = mthca_mailbox_alloc(dev, GFP_KERNEL);
		if (IS_ERR(box)) {
			err = PTR_ERR(box);
			goto out;
		}
		memset(box->buf, 0, (QPC_MBOX_CTX + QPC_WORDS) * 4);
		err = qp_fill_context(dev, qp, attr, mask, cur, next,
				      box->buf);
		if (!err) {
			if (cur == IB_QPS_RTS && next == IB_QPS_SQD &&
			    (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
			    attr->en_sqd_async_notify)
				sqd_event = 1u << 31;
			err = mthca_MODIFY_QP(dev, op, qp->qpn, false, box,
					      sqd_event);
		}
		mthca_mailbox_free(dev, box);
	}
	if (err) {
		dev_dbg(&dev->pdev->dev, "QP %06x: %s -> %s failed: %d\n",
			qp->qpn, mthca_qps_name(cur),
			mthca_qps_name(next), err);
		goto out;
	}

	qp->state = next;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->resp_depth = attr->max_dest_rd_atomic;
	if ((mask & IB_QP_PORT) && !qp_is_special(qp))
		WRITE_ONCE(qp->port, attr->port_num);
	if (mask & IB_QP_ALT_PATH)
		WRITE_ONCE(qp->alt_port, attr->alt_port_num);
	if (qp_is_special(qp)) {
		if (mask & IB_QP_PKEY_INDEX)
			qp->pkey_index = attr->pkey_index;
		if (mask & IB_QP_QKEY)
			qp->qkey = attr->qkey;
		if (mask & IB_QP_SQ_PSN)
			qp->send_psn = attr->sq_psn;
	}

	if (qp_is_special(qp) && qp->ibqp.qp_num == 0) {
		if (cur != IB_QPS_RTR && next == IB_QPS_RTR)
			qp_port_init_ib(dev, qp->port);
		if (cur != IB_QPS_RESET && cur != IB_QPS_ERR &&
		    (next == IB_QPS_RESET || next == IB_QPS_ERR))
			qp_port_close_ib(dev, qp->port);
	}

	/* A user QP's rings are the process's to reset (libmthca does). */
	if (next == IB_QPS_RESET && !qp->uctx) {
		/* Forget whatever the QP had posted and completed. */
		mthca_dp_cq_clean(to_mcq(ibqp->recv_cq), qp->qpn,
				  ibqp->srq ? to_msrq(ibqp->srq) : NULL);
		if (ibqp->send_cq != ibqp->recv_cq)
			mthca_dp_cq_clean(to_mcq(ibqp->send_cq), qp->qpn, NULL);
		spin_lock_irq(&qp->sq.lock);
		spin_lock(&qp->rq.lock);
		qp_link_rings(qp);
		*qp->sq.db = 0;
		*qp->rq.db = 0;
		spin_unlock(&qp->rq.lock);
		spin_unlock_irq(&qp->sq.lock);
	}
out:
	mutex_unlock(&qp->mutex);
	return err;
}

/**
 * mthca_dp_query_qp() - read a QP's attributes back from the HCA
 * @ibqp: the QP
 * @attr: where the attributes go
 * @mask: which the caller wants (all are filled)
 * @init: where the creation attributes go
 *
 * Return: 0, or the firmware's error.
 */
static int mthca_dp_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			     int mask, struct ib_qp_init_attr *init)
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_qp *qp = to_mqp(ibqp);
	static const u8 mig_state[] = {
		IB_MIG_ARMED, IB_MIG_REARM, IB_MIG_MIGRATED, IB_MIG_MIGRATED,
	};
	struct mthca_mailbox *box;
	const __be32 *c;
	int hw_state;
	int err = 0;

	memset(attr, 0, sizeof(*attr));
	mutex_lock(&qp->mutex);
	if (qp->state == IB_QPS_RESET) {
		attr->qp_state = IB_QPS_RESET;
		goto fill_caps;
	}

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box)) {
		err = PTR_ERR(box);
		goto out;
	}
	err = mthca_QUERY_QP(dev, qp->qpn, false, box);
	if (err) {
		mthca_mailbox_free(dev, box);
		goto out;
	}
	c = (__be32 *)box->buf + QPC_MBOX_CTX;
	hw_state = qf_get(c, 0, QPC_STATE);
	attr->qp_state = mthca_qps_from_hw(hw_state);
	qp->state = attr->qp_state;
	attr->sq_draining = hw_state == MTHCA_HW_QPS_DRAINING;
	attr->path_mtu = qf_get(c, 0, QPC_MTU);
	attr->path_mig_state = mig_state[qf_get(c, 0, QPC_MIGRATION)];
	attr->qkey = qf_get(c, 0, QPC_QKEY);
	attr->rq_psn = qf_get(c, 0, QPC_RQ_PSN);
	attr->sq_psn = qf_get(c, 0, QPC_SQ_PSN);
	attr->dest_qp_num = qf_get(c, 0, QPC_REMOTE_QPN);
	attr->qp_access_flags =
		(qf_get(c, 0, QPC_RRE) ? IB_ACCESS_REMOTE_READ : 0) |
		(qf_get(c, 0, QPC_RWE) ? IB_ACCESS_REMOTE_WRITE : 0) |
		(qf_get(c, 0, QPC_RAE) ? IB_ACCESS_REMOTE_ATOMIC : 0);
	attr->max_dest_rd_atomic = 1 << qf_get(c, 0, QPC_RRA_MAX);
	attr->max_rd_atomic = 1 << qf_get(c, 0, QPC_SRA_MAX);
	attr->retry_cnt = qf_get(c, 0, QPC_RETRY);
	attr->min_rnr_timer = qf_get(c, 0, QPC_MIN_RNR);
	attr->pkey_index = qf_get(c, QPC_PRI, QPP_PKEY_INDEX);
	attr->port_num = qf_get(c, QPC_PRI, QPP_PORT);
	attr->timeout = qf_get(c, QPC_PRI, QPP_ACK_TIMEOUT);
	attr->rnr_retry = qf_get(c, QPC_PRI, QPP_RNR_RETRY);
	attr->alt_timeout = qf_get(c, QPC_ALT, QPP_ACK_TIMEOUT);
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC) {
		qp_read_path(c, QPC_PRI, &attr->ah_attr);
		qp_read_path(c, QPC_ALT, &attr->alt_ah_attr);
		attr->alt_pkey_index = qf_get(c, QPC_ALT, QPP_PKEY_INDEX);
		attr->alt_port_num = attr->alt_ah_attr.port_num;
	}
	mthca_mailbox_free(dev, box);

fill_caps:
	attr->cur_qp_state = attr->qp_state;
	attr->cap.max_send_wr = qp->sq.max;
	attr->cap.max_recv_wr = qp->rq.max;
	attr->cap.max_send_sge = qp->sq.max_gs;
	attr->cap.max_recv_sge = qp->rq.max_gs;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->event_handler = ibqp->event_handler;
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
		init->cap = attr->cap;
		init->sq_sig_type = qp->sq_policy;
		init->qp_type = ibqp->qp_type;
		init->port_num = qp_is_special(qp) ? qp->port : 0;
	}
out:
	mutex_unlock(&qp->mutex);
	return err;
}

/*
 * Copy the data of an IB_SEND_INLINE request into the WQE at @seg: a
 * 4-byte count with MTHCA_INLINE_BIT, then the bytes (the sg_list holds
 * CPU addresses).  Return: the bytes of WQE used (16-byte units), or
 * -EINVAL when the QP was not created for that much inline data.
 */
static int qp_copy_inline(struct mthca_qp *qp, const struct ib_send_wr *wr,
			  void *seg)
{
	u32 total = 0;
	u8 *dst = seg + 4;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (!qp->max_inline || total > qp->max_inline)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		dst += wr->sg_list[i].length;
	}
	*(__be32 *)seg = cpu_to_be32(MTHCA_INLINE_BIT | total);
	return ALIGN(total + 4, sizeof(struct mthca_data_seg));
}

/* Would @nreq more WQEs overflow @wq?  Rechecks under the CQ lock. */
static bool wq_full(struct mthca_wq *wq, u32 nreq, struct ib_cq *ibcq)
{
	struct mthca_cq *cq = to_mcq(ibcq);
	u32 used = wq->head - wq->tail;

	if (likely(used + nreq < wq->max))
		return false;
	spin_lock(&cq->lock);
	used = wq->head - wq->tail;
	spin_unlock(&cq->lock);
	return used + nreq >= wq->max;
}

static void set_data_seg(struct mthca_data_seg *d, const struct ib_sge *sge)
{
	d->byte_count = cpu_to_be32(sge->length);
	d->lkey = cpu_to_be32(sge->lkey);
	d->addr = cpu_to_be64(sge->addr);
}

/*
 * Build the LRH..DETH of an MLX send in the header slot of WQE @ind and
 * point the WQE's first gather entry at it.  QP0 traffic (SMPs) goes on
 * VL15; a permissive DLID asks for a permissive SLID.
 */
static int qp_build_mlx(struct mthca_dev *dev, struct mthca_qp *qp, u32 ind,
			struct ib_send_wr *wr, struct mthca_mlx_seg *mlx,
			struct mthca_data_seg *dseg)
{
	struct mthca_ah *ah = to_mah(wr->wr.ud.ah);
	struct ib_ud_header hdr;
	u32 off = qp->hdr_offset + ind * MTHCA_DP_UD_HEADER_BYTES;
	bool qp0 = qp->ibqp.qp_num == 0;
	bool grh = mthca_dp_ah_has_grh(ah);
	int payload = 0;
	u16 pkey;
	int len, i, err;
	bool imm;

	for (i = 0; i < wr->num_sge; i++)
		payload += wr->sg_list[i].length;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	imm = wr->opcode == IB_WR_SEND_WITH_IMM;
	/* sets the SEND_ONLY opcode, with or without immediate */
	err = ib_ud_header_init(payload, grh, imm, &hdr);
	if (err)
		return err;
	if (imm)
		hdr.immediate_data = wr->imm_data;
	mthca_dp_ah_to_header(ah, &hdr);

	hdr.lrh.virtual_lane = qp0 ? 15 : 0;
	if (hdr.lrh.destination_lid == IB_LID_PERMISSIVE)
		hdr.lrh.source_lid = IB_LID_PERMISSIVE;
	hdr.bth.solicited_event = !!(wr->send_flags & IB_SEND_SOLICITED);
	/* No table entry at that index: no default P_Key either. */
	if (ib_get_cached_pkey(&dev->ib_dev, qp->port,
			       qp0 ? qp->pkey_index : wr->wr.ud.pkey_index,
			       &pkey))
		return -EINVAL;
	hdr.bth.pkey = cpu_to_be16(pkey);
	hdr.bth.destination_qpn = cpu_to_be32(wr->wr.ud.remote_qpn);
	hdr.bth.psn = cpu_to_be32(qp->send_psn++ & 0xffffff);
	hdr.deth.qkey = cpu_to_be32(wr->wr.ud.remote_qkey & IB_QP_SET_QKEY ?
				    qp->qkey : wr->wr.ud.remote_qkey);
	hdr.deth.source_qpn = cpu_to_be32(qp->ibqp.qp_num);

	len = ib_ud_header_pack(&hdr, qp->buf.cpu + off);
	if (len < 0 || len > MTHCA_DP_UD_HEADER_BYTES)
		return -EINVAL;

	mlx->flags &= ~cpu_to_be32(MTHCA_WQE_F_SOLICIT | MTHCA_WQE_F_ALWAYS);
	mlx->flags |= cpu_to_be32((qp0 ? MTHCA_MLX_F_VL15 : 0) |
				  (hdr.lrh.destination_lid == IB_LID_PERMISSIVE ?
				   MTHCA_MLX_F_SLR : 0) |
				  hdr.lrh.service_level << 8);
	mlx->rlid = hdr.lrh.destination_lid;
	mlx->vcrc = 0;

	dseg->byte_count = cpu_to_be32(len);
	dseg->lkey = cpu_to_be32(qp->buf.lkey);
	dseg->addr = cpu_to_be64(off);
	return 0;
}

static void qp_ring_send(struct mthca_dev *dev, struct mthca_qp *qp,
			 u32 nreq, u32 op0, u32 size0, u32 fence0)
{
	u32 hi = nreq << 24 | (qp->sq.head & 0xffff) << 8 | fence0 | op0;

	qp->sq.head += nreq;
	/* WQEs before the record, the record before the doorbell. */
	wmb(); /* WQEs before the record */
	*qp->sq.db = cpu_to_be32(qp->sq.head & 0xffff);
	wmb(); /* the record before the doorbell */
	mthca_uar_write64(dev, hi, qp->qpn << 8 | size0, MTHCA_UAR_SEND_DB);
}

/**
 * mthca_dp_post_send() - post work requests on a send queue
 * @ibqp: the QP
 * @wr: the list of requests
 * @bad_wr: set to the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, -EINVAL for a QP not ready to send (RESET, INIT, RTR) or a
 * malformed request (also more inline data than the QP was created
 * for, or a P_Key index of a special QP outside the port's table),
 * -ENOMEM when the queue is full, -EIO after a catastrophic error.  In SQE and ERR the
 * requests are accepted and complete in error (IBA C10-96).
 */
static int mthca_dp_post_send(struct ib_qp *ibqp, struct ib_send_wr *wr,
			      struct ib_send_wr **bad_wr)
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_qp *qp = to_mqp(ibqp);
	u32 op0 = 0, size0 = 0, fence0 = 0;
	struct mthca_next_seg *ctrl;
	unsigned long flags;
	u32 nreq, ind, size;
	void *wqe;
	int err = 0;
	int i, len;

	spin_lock_irqsave(&qp->sq.lock, flags);
	/* A dead HCA takes nothing (mthca_dp_catas() flushes what it had). */
	if (unlikely(READ_ONCE(dev->cmd.dead))) {
		err = -EIO;
		*bad_wr = wr;
		goto out_unlock;
	}
	/* SQD, SQE and ERR take requests too (C10-96: ERR flushes them). */
	if (READ_ONCE(qp->state) < IB_QPS_RTS) {
		err = -EINVAL;
		*bad_wr = wr;
		goto out_unlock;
	}

	ind = qp->sq.head & (qp->sq.max - 1);
	for (nreq = 0; wr; nreq++, wr = wr->next) {
		if (unlikely(nreq == MTHCA_SEND_DB_MAX_WQES)) {
			qp_ring_send(dev, qp, nreq, op0, size0, fence0);
			nreq = 0;
		}
		if (unlikely(wq_full(&qp->sq, nreq, ibqp->send_cq))) {
			err = -ENOMEM;
			break;
		}
		if (unlikely(wr->opcode >= ARRAY_SIZE(mthca_wr_op) ||
			     (wr->num_sge > qp->sq.max_gs &&
			      !(wr->send_flags & IB_SEND_INLINE)))) {
			err = -EINVAL;
			break;
		}

		ctrl = sq_wqe(qp, ind);
		ctrl->flags = cpu_to_be32(MTHCA_WQE_F_ALWAYS |
					  (wr->send_flags & IB_SEND_SIGNALED ||
					   qp->sq_policy == IB_SIGNAL_ALL_WR ?
					   MTHCA_WQE_F_CQ_UPDATE : 0) |
					  (wr->send_flags & IB_SEND_SOLICITED ?
					   MTHCA_WQE_F_SOLICIT : 0));
		ctrl->imm = wr->opcode == IB_WR_SEND_WITH_IMM ||
			wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ?
			wr->imm_data : 0;
		wqe = ctrl + 1;

		switch (qp->kind) {
		case MTHCA_SQ_RC:
		case MTHCA_SQ_UC:
			if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
			    wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
				struct mthca_raddr_seg *r = wqe;
				struct mthca_atomic_seg *a = (void *)(r + 1);

				if (qp->kind != MTHCA_SQ_RC) {
					err = -EINVAL;
					goto out;
				}
				r->raddr = cpu_to_be64(wr->wr.atomic.remote_addr);
				r->rkey = cpu_to_be32(wr->wr.atomic.rkey);
				r->reserved = 0;
				if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP) {
					a->swap_add = cpu_to_be64(wr->wr.atomic.swap);
					a->compare = cpu_to_be64(wr->wr.atomic.compare_add);
				} else {
					a->swap_add = cpu_to_be64(wr->wr.atomic.compare_add);
					a->compare = 0;
				}
				wqe = a + 1;
			} else if (wr->opcode == IB_WR_RDMA_WRITE ||
				   wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
				   wr->opcode == IB_WR_RDMA_READ) {
				struct mthca_raddr_seg *r = wqe;

				if (qp->kind != MTHCA_SQ_RC &&
				    wr->opcode == IB_WR_RDMA_READ) {
					err = -EINVAL;
					goto out;
				}
				r->raddr = cpu_to_be64(wr->wr.rdma.remote_addr);
				r->rkey = cpu_to_be32(wr->wr.rdma.rkey);
				r->reserved = 0;
				wqe = r + 1;
			}
			break;
		case MTHCA_SQ_UD: {
			struct mthca_ud_seg *u = wqe;

			if (wr->opcode != IB_WR_SEND &&
			    wr->opcode != IB_WR_SEND_WITH_IMM) {
				err = -EINVAL;
				goto out;
			}
			memcpy(u->av, to_mah(wr->wr.ud.ah)->av, sizeof(u->av));
			u->dqpn = cpu_to_be32(wr->wr.ud.remote_qpn);
			u->qkey = cpu_to_be32(wr->wr.ud.remote_qkey);
			u->reserved[0] = 0;
			u->reserved[1] = 0;
			wqe = u + 1;
			break;
		}
		case MTHCA_SQ_MLX:
			err = qp_build_mlx(dev, qp, ind, wr, (void *)ctrl, wqe);
			if (err)
				goto out;
			wqe += sizeof(struct mthca_data_seg);
			break;
		}

		if (wr->send_flags & IB_SEND_INLINE) {
			len = qp_copy_inline(qp, wr, wqe);
			if (len < 0) {
				err = len;
				goto out;
			}
			wqe += len;
		} else {
			for (i = 0; i < wr->num_sge; i++) {
				set_data_seg(wqe, wr->sg_list + i);
				wqe += sizeof(struct mthca_data_seg);
			}
		}
		if (qp->kind == MTHCA_SQ_MLX) {
			/* Room for the ICRC, which the HCA fills in. */
			struct mthca_data_seg *icrc = wqe;

			icrc->byte_count = cpu_to_be32(MTHCA_INLINE_BIT | 4);
			icrc->lkey = 0;
			wqe = icrc + 1;
		}
		size = (wqe - (void *)ctrl) / 16;

		qp->wrid[qp->rq.max + ind] = wr->wr_id;

		/* Link it from the previous WQE; the size word goes last. */
		((struct mthca_next_seg *)qp->sq.last)->nda_op =
			cpu_to_be32(((ind << qp->sq.wqe_shift) + qp->sq.offset) |
				    mthca_wr_op[wr->opcode]);
		wmb(); /* the HCA may follow the link once the size is set */
		((struct mthca_next_seg *)qp->sq.last)->ee_nds =
			cpu_to_be32(MTHCA_WQE_NDS_DBD | size |
				    (wr->send_flags & IB_SEND_FENCE ?
				     MTHCA_WQE_NDS_FENCE : 0));
		qp->sq.last = ctrl;

		if (!nreq) {
			op0 = mthca_wr_op[wr->opcode];
			size0 = size;
			fence0 = wr->send_flags & IB_SEND_FENCE ?
				MTHCA_SEND_DB_FENCE_BIT : 0;
		}
		ind = (ind + 1) & (qp->sq.max - 1);
	}
out:
	if (err)
		*bad_wr = wr;
	if (nreq)
		qp_ring_send(dev, qp, nreq, op0, size0, fence0);
out_unlock:
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	return err;
}

/**
 * mthca_dp_post_recv() - post work requests on a receive queue
 * @ibqp: the QP
 * @wr: the list of requests
 * @bad_wr: set to the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, -EINVAL for a QP in RESET, one with an SRQ,
 * or a malformed request, -ENOMEM when the queue is full, -EIO after a
 * catastrophic error.
 */
static int mthca_dp_post_recv(struct ib_qp *ibqp, struct ib_recv_wr *wr,
			      struct ib_recv_wr **bad_wr)
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_qp *qp = to_mqp(ibqp);
	struct mthca_next_seg *ctrl;
	struct mthca_data_seg *d;
	unsigned long flags;
	u32 nreq, ind;
	int err = 0;
	int i;

	if (ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq.lock, flags);
	if (unlikely(READ_ONCE(dev->cmd.dead))) {
		err = -EIO;
		*bad_wr = wr;
		goto out_unlock;
	}
	if (READ_ONCE(qp->state) == IB_QPS_RESET) {
		err = -EINVAL;
		*bad_wr = wr;
		goto out_unlock;
	}
	ind = qp->rq.head & (qp->rq.max - 1);
	for (nreq = 0; wr; nreq++, wr = wr->next) {
		if (unlikely(wq_full(&qp->rq, nreq, ibqp->recv_cq))) {
			err = -ENOMEM;
			break;
		}
		if (unlikely(wr->num_sge > qp->rq.max_gs)) {
			err = -EINVAL;
			break;
		}
		ctrl = rq_wqe(qp, ind);
		ctrl->flags = 0;
		d = (void *)(ctrl + 1);
		for (i = 0; i < wr->num_sge; i++)
			set_data_seg(d++, wr->sg_list + i);
		if (i < qp->rq.max_gs) {
			d->byte_count = 0;
			d->lkey = cpu_to_be32(MTHCA_LKEY_END_OF_LIST);
			d->addr = 0;
		}
		qp->wrid[ind] = wr->wr_id;
		ind = (ind + 1) & (qp->rq.max - 1);
	}
	if (err)
		*bad_wr = wr;
	if (nreq) {
		qp->rq.head += nreq;
		/* The WQEs before the record that hands them over. */
		wmb();
		*qp->rq.db = cpu_to_be32(qp->rq.head & 0xffff);
	}
out_unlock:
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	return err;
}

/**
 * mthca_dp_init_verbs() - fill in the data-path methods of a device
 * @ibdev: the device, before registration
 */
void mthca_dp_init_verbs(struct ib_device *ibdev)
{
	ibdev->create_cq = mthca_dp_create_cq;
	ibdev->destroy_cq = mthca_dp_destroy_cq;
	ibdev->resize_cq = mthca_dp_resize_cq;
	ibdev->poll_cq = mthca_dp_poll_cq;
	ibdev->req_notify_cq = mthca_dp_arm_cq;
	ibdev->create_qp = mthca_dp_create_qp;
	ibdev->modify_qp = mthca_dp_modify_qp;
	ibdev->query_qp = mthca_dp_query_qp;
	ibdev->destroy_qp = mthca_dp_destroy_qp;
	ibdev->post_send = mthca_dp_post_send;
	ibdev->post_recv = mthca_dp_post_recv;
	ibdev->create_srq = mthca_dp_create_srq;
	ibdev->modify_srq = mthca_dp_modify_srq;
	ibdev->query_srq = mthca_dp_query_srq;
	ibdev->destroy_srq = mthca_dp_destroy_srq;
	ibdev->post_srq_recv = mthca_dp_post_srq_recv;
	ibdev->create_ah = mthca_dp_create_ah;
	ibdev->query_ah = mthca_dp_query_ah;
	ibdev->destroy_ah = mthca_dp_destroy_ah;
	ibdev->attach_mcast = mthca_dp_attach_mcast;
	ibdev->detach_mcast = mthca_dp_detach_mcast;
}

/**
 * mthca_init_qp_table() - set up the QP table and the special QPs
 * @dev: the device, with its ICM tables mapped
 *
 * Places the four special QPs (QP0 and QP1 of both ports) right after the
 * firmware's reserved QPs, at an even number, and tells the HCA.
 *
 * Return: 0, or the firmware's error.
 */
int mthca_init_qp_table(struct mthca_dev *dev)
{
	struct mthca_qp_table *tab = &dev->qp_table;
	int err;

	xa_init_flags(&tab->objs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	tab->next = 0;
	tab->sqp_base = ALIGN(dev->limits.reserved_qps, 2);

	err = mthca_CONF_SPECIAL_QP(dev, IB_QPT_SMI, tab->sqp_base);
	if (!err)
		err = mthca_CONF_SPECIAL_QP(dev, IB_QPT_GSI, tab->sqp_base + 2);
	if (err) {
		dev_err(&dev->pdev->dev, "CONF_SPECIAL_QP failed: %d\n", err);
		mthca_CONF_SPECIAL_QP(dev, IB_QPT_SMI, 0);
		xa_destroy(&tab->objs);
	}
	return err;
}

/**
 * mthca_cleanup_qp_table() - release the QP table
 * @dev: the device; all QPs are destroyed
 */
void mthca_cleanup_qp_table(struct mthca_dev *dev)
{
	mthca_CONF_SPECIAL_QP(dev, IB_QPT_SMI, 0);
	mthca_CONF_SPECIAL_QP(dev, IB_QPT_GSI, 0);
	xa_destroy(&dev->qp_table.objs);
}
