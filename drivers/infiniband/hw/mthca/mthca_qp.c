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

#include "mthca_dev.h"
#include "mthca_wqe.h"

/* State names for messages (enum ib_qp_state order). */
static const char * const mthca_qp_state_name[] = {
	[IB_QPS_RESET]	= "RESET",
	[IB_QPS_INIT]	= "INIT",
	[IB_QPS_RTR]	= "RTR",
	[IB_QPS_RTS]	= "RTS",
	[IB_QPS_SQD]	= "SQD",
	[IB_QPS_SQE]	= "SQE",
	[IB_QPS_ERR]	= "ERR",
};

/* QP states as the QP context encodes them (flags [31:28]). */
enum {
	MTHCA_HW_QPS_RESET	= 0,
	MTHCA_HW_QPS_INIT	= 1,
	MTHCA_HW_QPS_RTR	= 2,
	MTHCA_HW_QPS_RTS	= 3,
	MTHCA_HW_QPS_SQE	= 4,
	MTHCA_HW_QPS_SQD	= 5,
	MTHCA_HW_QPS_ERR	= 6,
	MTHCA_HW_QPS_DRAINING	= 7,
};

static const u8 mthca_hw_qp_state[] = {
	[IB_QPS_RESET]	= MTHCA_HW_QPS_RESET,
	[IB_QPS_INIT]	= MTHCA_HW_QPS_INIT,
	[IB_QPS_RTR]	= MTHCA_HW_QPS_RTR,
	[IB_QPS_RTS]	= MTHCA_HW_QPS_RTS,
	[IB_QPS_SQD]	= MTHCA_HW_QPS_SQD,
	[IB_QPS_SQE]	= MTHCA_HW_QPS_SQE,
	[IB_QPS_ERR]	= MTHCA_HW_QPS_ERR,
};

static const s8 mthca_ib_qp_state[] = {
	[MTHCA_HW_QPS_RESET]	= IB_QPS_RESET,
	[MTHCA_HW_QPS_INIT]	= IB_QPS_INIT,
	[MTHCA_HW_QPS_RTR]	= IB_QPS_RTR,
	[MTHCA_HW_QPS_RTS]	= IB_QPS_RTS,
	[MTHCA_HW_QPS_SQE]	= IB_QPS_SQE,
	[MTHCA_HW_QPS_SQD]	= IB_QPS_SQD,
	[MTHCA_HW_QPS_ERR]	= IB_QPS_ERR,
	[MTHCA_HW_QPS_DRAINING]	= IB_QPS_SQD,
};

/*
 * The firmware command of each transition the IBA allows (0: none).  Any
 * state may go to RESET or ERR; the rest follow the QP state diagram.
 */
static const u8 mthca_qp_trans_cmd[IB_QPS_ERR + 1][IB_QPS_ERR + 1] = {
	[IB_QPS_RESET] = {
		[IB_QPS_INIT] = MTHCA_CMD_RST2INIT_QP,
	},
	[IB_QPS_INIT] = {
		[IB_QPS_INIT] = MTHCA_CMD_INIT2INIT_QP,
		[IB_QPS_RTR] = MTHCA_CMD_INIT2RTR_QP,
	},
	[IB_QPS_RTR] = {
		[IB_QPS_RTS] = MTHCA_CMD_RTR2RTS_QP,
	},
	[IB_QPS_RTS] = {
		[IB_QPS_RTS] = MTHCA_CMD_RTS2RTS_QP,
		[IB_QPS_SQD] = MTHCA_CMD_RTS2SQD_QP,
	},
	[IB_QPS_SQD] = {
		[IB_QPS_RTS] = MTHCA_CMD_SQD2RTS_QP,
		[IB_QPS_SQD] = MTHCA_CMD_SQD2SQD_QP,
	},
	[IB_QPS_SQE] = {
		[IB_QPS_RTS] = MTHCA_CMD_SQERR2RTS_QP,
	},
};

/**
 * mthca_qp_transition_cmd() - the firmware command for a QP transition
 * @cur: the current state
 * @next: the state asked for
 *
 * Return: the command opcode, or 0 when the HCA has none.
 */
u16 mthca_qp_transition_cmd(enum ib_qp_state cur, enum ib_qp_state next)
{
	if (cur > IB_QPS_ERR || next > IB_QPS_ERR)
		return 0;
	if (next == IB_QPS_RESET)
		return MTHCA_CMD_2RST_QP;
	if (next == IB_QPS_ERR)
		return MTHCA_CMD_2ERR_QP;
	return mthca_qp_trans_cmd[cur][next];
}

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

/* An address path of the QP context. */
struct mthca_qpc_path {
	__be32	port_pkey;		/* port [25:24], P_Key index [6:0] */
	u8	rnr_retry;		/* [7:5] */
	u8	g_mylmc;		/* GRH [7], source path bits [6:0] */
	__be16	rlid;
	u8	ackto;			/* [7:3] */
	u8	mgid_index;
	u8	static_rate;
	u8	hop_limit;
	__be32	sl_tclass_flowlabel;
	u8	rgid[16];
} __packed;

/* The QP context of the MODIFY_QP and QUERY_QP mailboxes. */
struct mthca_qpc {
	__be32	flags;			/* state [31:28], ST [23:16], PM [12:11] */
	__be32	reserved0;
	u8	mtu_msgmax;		/* MTU [7:5], log2 max message [4:0] */
	u8	rq_size_stride;		/* log2 entries [6:3], log2 stride - 4 */
	u8	sq_size_stride;
	u8	rlkey_sched_queue;
	__be32	usr_page;
	__be32	local_qpn;
	__be32	remote_qpn;
	__be32	reserved1[2];
	struct mthca_qpc_path pri_path;
	struct mthca_qpc_path alt_path;
	__be32	rdd;
	__be32	pd;
	__be32	wqe_base;
	__be32	wqe_lkey;
	__be32	params1;
	__be32	reserved2;
	__be32	next_send_psn;
	__be32	cqn_snd;
	__be32	snd_wqe_base_l;
	__be32	snd_db_index;
	__be32	last_acked_psn;
	__be32	ssn;
	__be32	params2;
	__be32	rnr_nextrecvpsn;	/* min RNR timer [28:24], PSN [23:0] */
	__be32	ra_buff_indx;
	__be32	cqn_rcv;
	__be32	rcv_wqe_base_l;
	__be32	rcv_db_index;
	__be32	qkey;
	__be32	srqn;			/* SRQ in use [24], SRQ number */
	__be32	rmsn;
	__be16	rq_wqe_counter;
	__be16	sq_wqe_counter;
	__be32	reserved3[18];
} __packed;

struct mthca_qp_mbox {
	__be32	opt_mask;
	__be32	reserved;
	struct mthca_qpc ctx;
} __packed;

/* QP context bits. */
enum {
	MTHCA_QPC_DE		= 1 << 8,	/* flags */
	MTHCA_QPC_PM_MIGRATED	= 3 << 11,
	MTHCA_QPC_PM_REARM	= 1 << 11,
	MTHCA_QPC_PM_ARMED	= 0 << 11,

	MTHCA_QPC_SRE		= 1 << 15,	/* params1 */
	MTHCA_QPC_SWE		= 1 << 14,
	MTHCA_QPC_SAE		= 1 << 13,
	MTHCA_QPC_SSC		= 1 << 3,

	MTHCA_QPC_RRE		= 1 << 15,	/* params2 */
	MTHCA_QPC_RWE		= 1 << 14,
	MTHCA_QPC_RAE		= 1 << 13,
	MTHCA_QPC_RIC		= 1 << 4,
	MTHCA_QPC_RSC		= 1 << 3,

	MTHCA_QPC_ACK_REQ_FREQ	= 10,
	MTHCA_QPC_FLIGHT_LIMIT	= 9,
	MTHCA_RDB_ENTRY_BYTES	= 32,
};

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
	[IB_WR_RDMA_WRITE_WITH_IMM]	= MTHCA_OP_RDMA_WRITE_IMM,
	[IB_WR_SEND]			= MTHCA_OP_SEND,
	[IB_WR_SEND_WITH_IMM]		= MTHCA_OP_SEND_IMM,
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

static struct mthca_qp *qp_get(struct mthca_dev *dev, u32 qpn)
{
	struct xarray *xa = &dev->qp_table.objs;
	struct mthca_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(xa, flags);
	qp = xa_load(xa, qpn & 0xffffff);
	if (qp)
		refcount_inc(&qp->refs);
	xa_unlock_irqrestore(xa, flags);
	return qp;
}

static void qp_put(struct mthca_qp *qp)
{
	if (refcount_dec_and_test(&qp->refs))
		wake_up(&qp->wait);
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
	struct mthca_qp *qp = qp_get(dev, qpn);
	struct ib_event ev;

	if (!qp) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "async event %d for unknown QP %06x\n",
				     type, qpn);
		return;
	}
	if (qp->ibqp.event_handler) {
		ev.device = &dev->ib_dev;
		ev.event = type;
		ev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
	qp_put(qp);
}

/* Size the queues of @qp for @cap; fills max, max_gs and the strides. */
static int qp_size_queues(struct mthca_dev *dev, struct mthca_qp *qp,
			  struct ib_qp_cap *cap, bool has_srq)
{
	const struct mthca_limits *lim = &dev->limits;
	unsigned int bytes;

	if (cap->max_send_wr > lim->max_wqes ||
	    cap->max_recv_wr > lim->max_wqes ||
	    cap->max_send_sge > lim->max_sg ||
	    cap->max_recv_sge > lim->max_sg)
		return -EINVAL;
	/* Kernel QPs do not take inline data (yet). */
	if (cap->max_inline_data)
		return -EINVAL;
	/* MLX WQEs carry two more gather entries: header and ICRC. */
	if (qp->kind == MTHCA_SQ_MLX && cap->max_send_sge + 2 > lim->max_sg)
		return -EINVAL;

	qp->sq.max = cap->max_send_wr ?
		roundup_pow_of_two(cap->max_send_wr) : 0;
	qp->rq.max = cap->max_recv_wr && !has_srq ?
		roundup_pow_of_two(cap->max_recv_wr) : 0;

	bytes = mthca_rq_wqe_bytes(cap->max_recv_sge);
	if (bytes > lim->max_desc_sz)
		return -EINVAL;
	qp->rq.wqe_shift = mthca_wqe_shift(bytes);
	bytes = mthca_sq_wqe_bytes(qp->kind, cap->max_send_sge);
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

static int qp_alloc_resources(struct mthca_dev *dev, struct mthca_qp *qp,
			      struct mthca_pd *pd)
{
	size_t size = qp->hdr_offset;
	int err;

	if (qp_is_special(qp))
		size += qp->sq.max * MTHCA_DP_UD_HEADER_BYTES;

	err = mthca_icm_table_get(dev, dev->icm_qpc, qp->qpn);
	if (err)
		return err;
	err = mthca_icm_table_get(dev, dev->icm_eqpc, qp->qpn);
	if (err)
		goto err_qpc;
	err = mthca_icm_table_get(dev, dev->icm_rdb, qp_rdb_obj(dev, qp));
	if (err)
		goto err_eqpc;

	qp->wrid = kcalloc(qp->rq.max + qp->sq.max, sizeof(u64), GFP_KERNEL);
	if (!qp->wrid) {
		err = -ENOMEM;
		goto err_rdb;
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
err_rdb:
	mthca_icm_table_put(dev, dev->icm_rdb, qp_rdb_obj(dev, qp));
err_eqpc:
	mthca_icm_table_put(dev, dev->icm_eqpc, qp->qpn);
err_qpc:
	mthca_icm_table_put(dev, dev->icm_qpc, qp->qpn);
	return err;
}

static void qp_free_resources(struct mthca_dev *dev, struct mthca_qp *qp)
{
	mthca_db_free(dev, MTHCA_DB_SQ, qp->sq.db_index);
	mthca_db_free(dev, MTHCA_DB_RQ, qp->rq.db_index);
	mthca_dp_buf_free(dev, &qp->buf);
	kfree(qp->wrid);
	mthca_icm_table_put(dev, dev->icm_rdb, qp_rdb_obj(dev, qp));
	mthca_icm_table_put(dev, dev->icm_eqpc, qp->qpn);
	mthca_icm_table_put(dev, dev->icm_qpc, qp->qpn);
}

/**
 * mthca_dp_create_qp() - create a queue pair
 * @ibpd: the protection domain
 * @init: what is asked for; @init->cap is updated to what was allocated
 * @udata: user data; user QPs are not supported yet
 *
 * Return: the QP, or an ERR_PTR.
 */
static struct ib_qp *mthca_dp_create_qp(struct ib_pd *ibpd,
					struct ib_qp_init_attr *init,
					struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	struct xarray *xa = &dev->qp_table.objs;
	struct mthca_qp *qp;
	u32 qpn;
	int err;

	if (udata)
		return ERR_PTR(-EOPNOTSUPP);
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

	err = qp_size_queues(dev, qp, &init->cap, !!init->srq);
	if (err)
		goto err_free;

	mutex_init(&qp->mutex);
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	refcount_set(&qp->refs, 1);
	init_waitqueue_head(&qp->wait);
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

	err = qp_alloc_resources(dev, qp, to_mpd(ibpd));
	if (err)
		goto err_num;

	qp->ibqp.qp_num = init->qp_type == IB_QPT_SMI ? 0 :
		init->qp_type == IB_QPT_GSI ? 1 : qpn;
	init->cap.max_send_wr = qp->sq.max;
	init->cap.max_recv_wr = qp->rq.max;
	init->cap.max_send_sge = qp->sq.max_gs;
	init->cap.max_recv_sge = qp->rq.max_gs;
	init->cap.max_inline_data = 0;

	xa_store_irq(xa, qpn, qp, GFP_KERNEL);
	return &qp->ibqp;

err_num:
	xa_erase_irq(xa, qpn);
err_free:
	kfree(qp);
	return ERR_PTR(err);
}

/* Lock the CQs of a QP in a fixed order (both may be the same CQ). */
static void qp_lock_cqs(struct mthca_cq *scq, struct mthca_cq *rcq)
	__acquires(&scq->lock) __acquires(&rcq->lock)
{
	if (scq == rcq) {
		spin_lock_irq(&scq->lock);
		__acquire(&rcq->lock);
	} else if (scq->cqn < rcq->cqn) {
		spin_lock_irq(&scq->lock);
		spin_lock_nested(&rcq->lock, SINGLE_DEPTH_NESTING);
	} else {
		spin_lock_irq(&rcq->lock);
		spin_lock_nested(&scq->lock, SINGLE_DEPTH_NESTING);
	}
}

static void qp_unlock_cqs(struct mthca_cq *scq, struct mthca_cq *rcq)
	__releases(&scq->lock) __releases(&rcq->lock)
{
	if (scq == rcq) {
		__release(&rcq->lock);
		spin_unlock_irq(&scq->lock);
	} else if (scq->cqn < rcq->cqn) {
		spin_unlock(&rcq->lock);
		spin_unlock_irq(&scq->lock);
	} else {
		spin_unlock(&scq->lock);
		spin_unlock_irq(&rcq->lock);
	}
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
			dev_warn(&dev->pdev->dev,
				 "QP %06x to RESET failed: %d\n", qp->qpn, err);
		if (qp->ibqp.qp_num == 0 && qp->state != IB_QPS_ERR)
			qp_port_close_ib(dev, qp->port);
		qp->state = IB_QPS_RESET;
	}
	mutex_unlock(&qp->mutex);

	/* Pollers look QPs up under their CQ lock. */
	qp_lock_cqs(scq, rcq);
	xa_store(&dev->qp_table.objs, qp->qpn, NULL, GFP_ATOMIC);
	qp_unlock_cqs(scq, rcq);
	qp_put(qp);
	wait_event(qp->wait, !refcount_read(&qp->refs));

	mthca_dp_cq_clean(rcq, qp->qpn,
			  ibqp->srq ? to_msrq(ibqp->srq) : NULL);
	if (scq != rcq)
		mthca_dp_cq_clean(scq, qp->qpn, NULL);

	qp_free_resources(dev, qp);
	xa_erase_irq(&dev->qp_table.objs, qp->qpn);
	kfree(qp);
	return 0;
}

/* Fill an address path of the QP context from an AH attribute. */
static int qp_set_path(struct mthca_dev *dev, const struct ib_ah_attr *ah,
		       struct mthca_qpc_path *path)
{
	path->g_mylmc = ah->src_path_bits & 0x7f;
	path->rlid = cpu_to_be16(ah->dlid);
	path->static_rate = 0;
	path->sl_tclass_flowlabel = cpu_to_be32(ah->sl << 28);
	if (ah->ah_flags & IB_AH_GRH) {
		if (ah->grh.sgid_index >= dev->limits.gid_table_len)
			return -EINVAL;
		path->g_mylmc |= 0x80;
		path->mgid_index = ah->grh.sgid_index;
		path->hop_limit = ah->grh.hop_limit;
		path->sl_tclass_flowlabel |=
			cpu_to_be32(ah->grh.traffic_class << 20 |
				    (ah->grh.flow_label & 0xfffff));
		memcpy(path->rgid, ah->grh.dgid.raw, 16);
	}
	return 0;
}

static void qp_get_path(const struct mthca_qpc_path *path,
			struct ib_ah_attr *ah)
{
	u32 stf = be32_to_cpu(path->sl_tclass_flowlabel);

	memset(ah, 0, sizeof(*ah));
	ah->port_num = (be32_to_cpu(path->port_pkey) >> 24) & 3;
	ah->dlid = be16_to_cpu(path->rlid);
	ah->sl = stf >> 28;
	ah->src_path_bits = path->g_mylmc & 0x7f;
	if (path->g_mylmc & 0x80) {
		ah->ah_flags = IB_AH_GRH;
		ah->grh.sgid_index = path->mgid_index;
		ah->grh.hop_limit = path->hop_limit;
		ah->grh.traffic_class = (stf >> 20) & 0xff;
		ah->grh.flow_label = stf & 0xfffff;
		memcpy(ah->grh.dgid.raw, path->rgid, 16);
	}
}

/* Remote access bits of params2 (no READ/atomic without responders). */
static u32 qp_hw_access(struct mthca_qp *qp, const struct ib_qp_attr *attr,
			int mask)
{
	int access = mask & IB_QP_ACCESS_FLAGS ? attr->qp_access_flags :
		qp->access;
	u8 depth = mask & IB_QP_MAX_DEST_RD_ATOMIC ?
		attr->max_dest_rd_atomic : qp->resp_depth;
	u32 bits = 0;

	if (!depth)
		access &= IB_ACCESS_REMOTE_WRITE;
	if (access & IB_ACCESS_REMOTE_READ)
		bits |= MTHCA_QPC_RRE;
	if (access & IB_ACCESS_REMOTE_WRITE)
		bits |= MTHCA_QPC_RWE;
	if (access & IB_ACCESS_REMOTE_ATOMIC)
		bits |= MTHCA_QPC_RAE;
	return bits;
}

/* Build the MODIFY_QP mailbox for @cur -> @next; returns the opt mask. */
static int qp_fill_context(struct mthca_dev *dev, struct mthca_qp *qp,
			   const struct ib_qp_attr *attr, int mask,
			   enum ib_qp_state cur, enum ib_qp_state next,
			   struct mthca_qp_mbox *mb)
{
	struct mthca_qpc *c = &mb->ctx;
	struct ib_qp *ibqp = &qp->ibqp;
	u32 opt = 0;
	u32 v;

	v = mthca_hw_qp_state[next] << 28 | mthca_qpc_st[qp->kind] << 16 |
		MTHCA_QPC_DE;
	if (mask & IB_QP_PATH_MIG_STATE) {
		opt |= MTHCA_OPT_PM_STATE;
		switch (attr->path_mig_state) {
		case IB_MIG_REARM:
			v |= MTHCA_QPC_PM_REARM;
			break;
		case IB_MIG_ARMED:
			v |= MTHCA_QPC_PM_ARMED;
			break;
		default:
			v |= MTHCA_QPC_PM_MIGRATED;
			break;
		}
	} else {
		v |= MTHCA_QPC_PM_MIGRATED;
	}
	c->flags = cpu_to_be32(v);

	/* UD and MLX: 2048-byte MTU, 2 KiB messages. */
	if (qp->kind == MTHCA_SQ_UD || qp->kind == MTHCA_SQ_MLX) {
		c->mtu_msgmax = IB_MTU_2048 << 5 | 11;
	} else if (mask & IB_QP_PATH_MTU) {
		if (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_2048)
			return -EINVAL;
		c->mtu_msgmax = attr->path_mtu << 5 | 31;
	}

	if (qp->rq.max)
		c->rq_size_stride = ilog2(qp->rq.max) << 3;
	c->rq_size_stride |= qp->rq.wqe_shift - 4;
	if (qp->sq.max)
		c->sq_size_stride = ilog2(qp->sq.max) << 3;
	c->sq_size_stride |= qp->sq.wqe_shift - 4;

	c->usr_page = cpu_to_be32(dev->driver_uar.index);
	c->local_qpn = cpu_to_be32(qp->qpn);
	if (mask & IB_QP_DEST_QPN)
		c->remote_qpn = cpu_to_be32(attr->dest_qp_num);

	if (qp->kind == MTHCA_SQ_MLX) {
		c->pri_path.port_pkey |= cpu_to_be32(qp->port << 24);
	} else if (mask & IB_QP_PORT) {
		c->pri_path.port_pkey |= cpu_to_be32(attr->port_num << 24);
		opt |= MTHCA_OPT_PORT;
	}
	if (mask & IB_QP_PKEY_INDEX) {
		c->pri_path.port_pkey |= cpu_to_be32(attr->pkey_index);
		opt |= MTHCA_OPT_PKEY_INDEX;
	}
	if (mask & IB_QP_RNR_RETRY) {
		c->pri_path.rnr_retry = attr->rnr_retry << 5;
		c->alt_path.rnr_retry = attr->rnr_retry << 5;
		opt |= MTHCA_OPT_RNR_RETRY | MTHCA_OPT_ALT_RNR_RETRY;
	}
	if (mask & IB_QP_AV) {
		if (qp_set_path(dev, &attr->ah_attr, &c->pri_path))
			return -EINVAL;
		opt |= MTHCA_OPT_PRI_PATH;
	}
	if (ibqp->qp_type == IB_QPT_RC &&
	    cur == IB_QPS_INIT && next == IB_QPS_RTR) {
		c->rlkey_sched_queue |= 1;	/* kernel scheduling queue */
		opt |= MTHCA_OPT_SCHED_QUEUE;
	}
	if (mask & IB_QP_TIMEOUT) {
		c->pri_path.ackto = attr->timeout << 3;
		opt |= MTHCA_OPT_ACK_TIMEOUT;
	}
	if (mask & IB_QP_ALT_PATH) {
		if (attr->alt_pkey_index >= dev->limits.pkey_table_len ||
		    attr->alt_port_num < 1 ||
		    attr->alt_port_num > dev->limits.num_ports ||
		    qp_set_path(dev, &attr->alt_ah_attr, &c->alt_path))
			return -EINVAL;
		c->alt_path.port_pkey |= cpu_to_be32(attr->alt_pkey_index |
						     attr->alt_port_num << 24);
		c->alt_path.ackto = attr->alt_timeout << 3;
		opt |= MTHCA_OPT_ALT_PATH;
	}

	c->pd = cpu_to_be32(to_mpd(ibqp->pd)->pdn);
	/* wqe_base stays 0: the WQE buffer's MR begins at iova 0 */
	c->wqe_lkey = cpu_to_be32(qp->buf.lkey);

	v = MTHCA_QPC_ACK_REQ_FREQ << 28 | MTHCA_QPC_FLIGHT_LIMIT << 24 |
		MTHCA_QPC_SWE;
	if (qp->sq_policy == IB_SIGNAL_ALL_WR)
		v |= MTHCA_QPC_SSC;
	if (mask & IB_QP_RETRY_CNT) {
		v |= (attr->retry_cnt & 7) << 16;
		opt |= MTHCA_OPT_RETRY_COUNT;
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC) {
		if (attr->max_rd_atomic)
			v |= MTHCA_QPC_SRE | MTHCA_QPC_SAE |
				fls(attr->max_rd_atomic - 1) << 21;
		opt |= MTHCA_OPT_SRA_MAX;
	}
	c->params1 = cpu_to_be32(v);

	if (mask & IB_QP_SQ_PSN)
		c->next_send_psn = cpu_to_be32(attr->sq_psn & 0xffffff);
	c->cqn_snd = cpu_to_be32(to_mcq(ibqp->send_cq)->cqn);
	c->snd_wqe_base_l = cpu_to_be32(qp->sq.offset);
	c->snd_db_index = cpu_to_be32(qp->sq.db_index);

	v = MTHCA_QPC_RSC;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		if (attr->max_dest_rd_atomic)
			v |= fls(attr->max_dest_rd_atomic - 1) << 21;
		opt |= MTHCA_OPT_RRA_MAX;
	}
	if (mask & (IB_QP_ACCESS_FLAGS | IB_QP_MAX_DEST_RD_ATOMIC)) {
		v |= qp_hw_access(qp, attr, mask);
		opt |= MTHCA_OPT_RWE | MTHCA_OPT_RRE | MTHCA_OPT_RAE;
	}
	if (ibqp->srq)
		v |= MTHCA_QPC_RIC;
	c->params2 = cpu_to_be32(v);

	v = 0;
	if (mask & IB_QP_MIN_RNR_TIMER) {
		v |= (attr->min_rnr_timer & 0x1f) << 24;
		opt |= MTHCA_OPT_RNR_TIMEOUT;
	}
	if (mask & IB_QP_RQ_PSN)
		v |= attr->rq_psn & 0xffffff;
	c->rnr_nextrecvpsn = cpu_to_be32(v);

	c->ra_buff_indx = cpu_to_be32(dev->layout.rdb_base +
				      ((qp->qpn & (dev->limits.num_qps - 1)) *
				       MTHCA_RDB_ENTRY_BYTES <<
				       dev->layout.rdb_shift));
	c->cqn_rcv = cpu_to_be32(to_mcq(ibqp->recv_cq)->cqn);
	c->rcv_db_index = cpu_to_be32(qp->rq.db_index);
	if (mask & IB_QP_QKEY) {
		c->qkey = cpu_to_be32(attr->qkey);
		opt |= MTHCA_OPT_QKEY;
	}
	if (ibqp->srq)
		c->srqn = cpu_to_be32(1 << 24 | to_msrq(ibqp->srq)->srqn);

	mb->opt_mask = cpu_to_be32(opt);
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
		dev_warn(&dev->pdev->dev, "CLOSE_IB port %u failed: %d\n",
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
	struct mthca_qp_mbox *mb;
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
			qp->qpn, mthca_qp_state_name[cur],
			mthca_qp_state_name[next], mask);
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

	op = mthca_qp_transition_cmd(cur, next);
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
		mb = box->buf;
		memset(mb, 0, sizeof(*mb));
		err = qp_fill_context(dev, qp, attr, mask, cur, next, mb);
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
			qp->qpn, mthca_qp_state_name[cur],
			mthca_qp_state_name[next], err);
		goto out;
	}

	qp->state = next;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->resp_depth = attr->max_dest_rd_atomic;
	if ((mask & IB_QP_PORT) && !qp_is_special(qp))
		qp->port = attr->port_num;
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

	if (next == IB_QPS_RESET) {
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
	struct mthca_mailbox *box;
	struct mthca_qpc *c;
	u32 flags;
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
	c = &((struct mthca_qp_mbox *)box->buf)->ctx;
	flags = be32_to_cpu(c->flags);
	hw_state = flags >> 28;
	attr->qp_state = mthca_ib_qp_state[hw_state];
	qp->state = attr->qp_state;
	attr->sq_draining = hw_state == MTHCA_HW_QPS_DRAINING;
	attr->path_mtu = c->mtu_msgmax >> 5;
	switch ((flags >> 11) & 3) {
	case 0:
		attr->path_mig_state = IB_MIG_ARMED;
		break;
	case 1:
		attr->path_mig_state = IB_MIG_REARM;
		break;
	default:
		attr->path_mig_state = IB_MIG_MIGRATED;
		break;
	}
	attr->qkey = be32_to_cpu(c->qkey);
	attr->rq_psn = be32_to_cpu(c->rnr_nextrecvpsn) & 0xffffff;
	attr->sq_psn = be32_to_cpu(c->next_send_psn) & 0xffffff;
	attr->dest_qp_num = be32_to_cpu(c->remote_qpn) & 0xffffff;
	flags = be32_to_cpu(c->params2);
	attr->qp_access_flags =
		(flags & MTHCA_QPC_RRE ? IB_ACCESS_REMOTE_READ : 0) |
		(flags & MTHCA_QPC_RWE ? IB_ACCESS_REMOTE_WRITE : 0) |
		(flags & MTHCA_QPC_RAE ? IB_ACCESS_REMOTE_ATOMIC : 0);
	attr->max_dest_rd_atomic = 1 << ((flags >> 21) & 7);
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC) {
		qp_get_path(&c->pri_path, &attr->ah_attr);
		qp_get_path(&c->alt_path, &attr->alt_ah_attr);
		attr->alt_pkey_index = be32_to_cpu(c->alt_path.port_pkey) & 0x7f;
		attr->alt_port_num = attr->alt_ah_attr.port_num;
	}
	attr->pkey_index = be32_to_cpu(c->pri_path.port_pkey) & 0x7f;
	attr->port_num = (be32_to_cpu(c->pri_path.port_pkey) >> 24) & 3;
	flags = be32_to_cpu(c->params1);
	attr->max_rd_atomic = 1 << ((flags >> 21) & 7);
	attr->retry_cnt = (flags >> 16) & 7;
	attr->min_rnr_timer = (be32_to_cpu(c->rnr_nextrecvpsn) >> 24) & 0x1f;
	attr->timeout = c->pri_path.ackto >> 3;
	attr->rnr_retry = c->pri_path.rnr_retry >> 5;
	attr->alt_timeout = c->alt_path.ackto >> 3;
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
	const struct mthca_av *av = (const struct mthca_av *)ah->av;
	struct ib_ud_header hdr;
	u32 off = qp->hdr_offset + ind * MTHCA_DP_UD_HEADER_BYTES;
	bool qp0 = qp->ibqp.qp_num == 0;
	bool grh = av->g_slid & 0x80;
	u16 pkey = IB_DEFAULT_PKEY_FULL;
	int payload = 0;
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
	ib_get_cached_pkey(&dev->ib_dev, qp->port,
			   qp0 ? qp->pkey_index : wr->wr.ud.pkey_index, &pkey);
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
 * malformed request, -ENOMEM when the queue is full.  In SQE and ERR the
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
	int i;

	spin_lock_irqsave(&qp->sq.lock, flags);
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
			     wr->num_sge > qp->sq.max_gs)) {
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

		for (i = 0; i < wr->num_sge; i++) {
			set_data_seg(wqe, wr->sg_list + i);
			wqe += sizeof(struct mthca_data_seg);
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
 * or a malformed request, -ENOMEM when the queue is full.
 */
static int mthca_dp_post_recv(struct ib_qp *ibqp, struct ib_recv_wr *wr,
			      struct ib_recv_wr **bad_wr)
{
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
