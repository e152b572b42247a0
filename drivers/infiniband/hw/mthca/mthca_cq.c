// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: completion queues of the mem-free MT25208.
 *
 * A CQ is a ring of 32-byte CQEs in host memory, reached by the HCA
 * through an MR at iova 0.  Ownership passes with bit 7 of each CQE's last
 * byte: the driver hands an entry to the HCA by setting it, the HCA hands
 * it back by clearing it once the rest is written.  The consumer index
 * goes back through the "set CI" doorbell record; arming writes the arm
 * record and rings the CQ doorbell of the driver's UAR.
 */
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/sched.h>

#include <rdma/mthca-abi.h>

#include "mthca_dev.h"
#include "mthca_wqe.h"

/* CQ context, as SW2HW_CQ takes it (64 bytes, 32-bit aligned). */
struct mthca_cq_ctx {
	__be32	flags;
	__be64	start;			/* iova of the ring: 0 */
	__be32	logsize_uar;		/* log2 entries [28:24], UAR [23:0] */
	__be32	error_eqn, comp_eqn, pd, lkey;
	__be32	last_notified, solicit_producer, consumer_index, producer_index;
	__be32	cqn, ci_db_index, arm_db_index, reserved;
} __packed;

enum {
	MTHCA_CQC_STATUS_OK	= 0 << 28,
	MTHCA_CQC_TR		= 1 << 18,	/* translation on (lkey) */
	MTHCA_CQC_DISARMED	= 0 << 8,
};

/* BTH opcodes (low five bits) a receive CQE reports with immediate data. */
enum {
	MTHCA_RCV_SEND_LAST_IMM		= 0x03,
	MTHCA_RCV_SEND_ONLY_IMM		= 0x05,
	MTHCA_RCV_WRITE_LAST_IMM	= 0x09,
	MTHCA_RCV_WRITE_ONLY_IMM	= 0x0b,
};

static struct mthca_cqe *cq_entry(struct mthca_cq *cq, u32 n)
{
	return cq->buf.cpu + (n & (cq->nent - 1)) * MTHCA_CQE_BYTES;
}

/* CQE @n if software owns it, else NULL. */
static struct mthca_cqe *cq_next_sw_at(struct mthca_cq *cq, u32 n)
{
	struct mthca_cqe *cqe = cq_entry(cq, n);

	return *mthca_cqe_owner(cqe) & MTHCA_CQE_OWNER_HW ? NULL : cqe;
}

static struct mthca_cqe *cq_next_sw(struct mthca_cq *cq)
{
	return cq_next_sw_at(cq, cq->cons_index);
}

static void cq_publish_ci(struct mthca_cq *cq)
{
	/* CQEs handed back must be visible before the HCA may reuse them. */
	wmb();
	*cq->set_ci_db = cpu_to_be32(cq->cons_index);
}

/**
 * mthca_dp_find_pinned() - look an object up by number and pin it
 * @xa: the number table (CQs, QPs or SRQs)
 * @num: the number from an EQE (24 bits)
 * @life_offset: where the object's struct mthca_dp_life is
 *
 * For the EQ handler: callable in any context.
 *
 * Return: the object with a reference taken, or NULL.
 */
void *mthca_dp_find_pinned(struct xarray *xa, u32 num, size_t life_offset)
{
	struct mthca_dp_life *life;
	unsigned long flags;
	void *obj;

	xa_lock_irqsave(xa, flags);
	obj = xa_load(xa, num & 0xffffff);
	if (obj) {
		life = obj + life_offset;
		refcount_inc(&life->refs);
	}
	xa_unlock_irqrestore(xa, flags);
	return obj;
}

/**
 * mthca_dp_number_get() - give a new object a number and its context entry
 * @dev: the device
 * @xa: the number table; the number is reserved there (entry NULL, so
 *	events do not find the object until the caller stores it)
 * @first: the lowest number to hand out (those below are reserved)
 * @count: how many numbers the table has
 * @icm: the context table whose entry for the number is mapped
 * @num: set to the number
 *
 * Process context; sleeps.
 *
 * Return: 0, or a negative errno with nothing taken.
 */
int mthca_dp_number_get(struct mthca_dev *dev, struct xarray *xa,
			u32 first, u32 count, struct mthca_icm_table *icm,
			u32 *num)
{
	int err;

	err = xa_alloc_irq(xa, num, NULL, XA_LIMIT(first, count - 1),
			   GFP_KERNEL);
	if (err)
		return err;
	err = mthca_icm_table_get(dev, icm, *num);
	if (err)
		xa_erase_irq(xa, *num);
	return err;
}

/**
 * mthca_dp_number_put() - undo mthca_dp_number_get()
 * @dev: the device
 * @xa: the number table
 * @icm: the context table
 * @num: the number
 */
void mthca_dp_number_put(struct mthca_dev *dev, struct xarray *xa,
			 struct mthca_icm_table *icm, u32 num)
{
	mthca_icm_table_put(dev, icm, num);
	xa_erase_irq(xa, num);
}

/**
 * mthca_dp_raise_event() - hand an asynchronous event to an object
 * @dev: the device
 * @ev: the event, with its element set by the caller
 * @type: the event type
 * @handler: the object's event handler, or NULL for none
 * @context: for @handler
 * @life: the object's lifetime, pinned by the lookup; released here
 *
 * For the EQ handler, after mthca_dp_event_target() found the object.
 */
void mthca_dp_raise_event(struct mthca_dev *dev, struct ib_event *ev,
			  enum ib_event_type type,
			  void (*handler)(struct ib_event *event, void *context),
			  void *context, struct mthca_dp_life *life)
{
	if (handler) {
		ev->device = &dev->ib_dev;
		ev->event = type;
		handler(ev, context);
	}
	mthca_dp_life_put(life);
}

/**
 * mthca_cq_completion() - a completion event for a CQ arrived
 * @dev: the device
 * @cqn: the CQ number from the EQE
 *
 * Called from the EQ interrupt handler; runs the consumer's completion
 * handler (the CQ was armed, and arming is one-shot).
 */
void mthca_cq_completion(struct mthca_dev *dev, u32 cqn)
{
	struct mthca_cq *cq = mthca_dp_find(&dev->cq_table.objs, cqn,
					     struct mthca_cq);

	if (!cq) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "completion event for unknown CQ %06x\n",
				     cqn);
		return;
	}
	/* The next arm request must carry a new sequence number. */
	WRITE_ONCE(cq->arm_sn, READ_ONCE(cq->arm_sn) + 1);
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	mthca_dp_life_put(&cq->life);
}

/**
 * mthca_cq_event() - an asynchronous error on a CQ arrived
 * @dev: the device
 * @cqn: the CQ number from the EQE
 * @type: the event (IB_EVENT_CQ_ERR: overrun or access error)
 */
void mthca_cq_event(struct mthca_dev *dev, u32 cqn, enum ib_event_type type)
{
	struct mthca_cq *cq;
	struct ib_event ev;

	cq = mthca_dp_event_target(dev, &dev->cq_table.objs, cqn, type,
				   "CQ", struct mthca_cq);
	if (!cq)
		return;
	ev.element.cq = &cq->ibcq;
	mthca_dp_raise_event(dev, &ev, type, cq->ibcq.event_handler,
			     cq->ibcq.cq_context, &cq->life);
}

/* The work completion status of each error syndrome. */
static enum ib_wc_status cq_syndrome_status(u8 syndrome)
{
	switch (syndrome) {
	case MTHCA_SYN_LOCAL_LENGTH:		return IB_WC_LOC_LEN_ERR;
	case MTHCA_SYN_LOCAL_QP_OP:		return IB_WC_LOC_QP_OP_ERR;
	case MTHCA_SYN_LOCAL_EEC_OP:		return IB_WC_LOC_EEC_OP_ERR;
	case MTHCA_SYN_LOCAL_PROT:		return IB_WC_LOC_PROT_ERR;
	case MTHCA_SYN_WR_FLUSH:		return IB_WC_WR_FLUSH_ERR;
	case MTHCA_SYN_MW_BIND:			return IB_WC_MW_BIND_ERR;
	case MTHCA_SYN_BAD_RESP:		return IB_WC_BAD_RESP_ERR;
	case MTHCA_SYN_LOCAL_ACCESS:		return IB_WC_LOC_ACCESS_ERR;
	case MTHCA_SYN_REMOTE_INVAL_REQ:	return IB_WC_REM_INV_REQ_ERR;
	case MTHCA_SYN_REMOTE_ACCESS:		return IB_WC_REM_ACCESS_ERR;
	case MTHCA_SYN_REMOTE_OP:		return IB_WC_REM_OP_ERR;
	case MTHCA_SYN_RETRY_EXCEEDED:		return IB_WC_RETRY_EXC_ERR;
	case MTHCA_SYN_RNR_RETRY_EXCEEDED:	return IB_WC_RNR_RETRY_EXC_ERR;
	case MTHCA_SYN_LOCAL_RDD_VIOL:		return IB_WC_LOC_RDD_VIOL_ERR;
	case MTHCA_SYN_REMOTE_INVAL_RD_REQ:	return IB_WC_REM_INV_RD_REQ_ERR;
	case MTHCA_SYN_REMOTE_ABORTED:		return IB_WC_REM_ABORT_ERR;
	case MTHCA_SYN_INVAL_EECN:		return IB_WC_INV_EECN_ERR;
	case MTHCA_SYN_INVAL_EEC_STATE:		return IB_WC_INV_EEC_STATE_ERR;
	default:				return IB_WC_GENERAL_ERR;
	}
}

static bool cqe_is_error(const struct mthca_cqe *cqe)
{
	return (mthca_cqe_opcode(cqe) & MTHCA_CQE_ERROR_OPCODE) ==
		MTHCA_CQE_ERROR_OPCODE;
}

static bool cqe_is_send(const struct mthca_cqe *cqe)
{
	if (cqe_is_error(cqe))
		return mthca_cqe_opcode(cqe) & 1;
	return be32_to_cpu(cqe->op_owner) & MTHCA_CQE_SEND;
}

/* Advance a work queue's tail up to and including WQE @index. */
static void wq_complete_to(struct mthca_wq *wq, u32 index)
{
	wq->tail += (index - wq->last_comp) & (wq->max - 1);
	wq->last_comp = index;
}

static void cqe_send_opcode(const struct mthca_cqe *cqe, struct ib_wc *wc)
{
	switch (mthca_cqe_opcode(cqe)) {
	case MTHCA_OP_RDMA_WRITE | MTHCA_OP_IMM:
		wc->wc_flags |= IB_WC_WITH_IMM;
		fallthrough;
	case MTHCA_OP_RDMA_WRITE:
		wc->opcode = IB_WC_RDMA_WRITE;
		break;
	case MTHCA_OP_SEND | MTHCA_OP_IMM:
		wc->wc_flags |= IB_WC_WITH_IMM;
		fallthrough;
	case MTHCA_OP_SEND:
		wc->opcode = IB_WC_SEND;
		break;
	case MTHCA_OP_RDMA_READ:
		wc->opcode = IB_WC_RDMA_READ;
		wc->byte_len = be32_to_cpu(cqe->byte_cnt);
		break;
	case MTHCA_OP_ATOMIC_CS:
		wc->opcode = IB_WC_COMP_SWAP;
		wc->byte_len = 8;
		break;
	case MTHCA_OP_ATOMIC_FA:
		wc->opcode = IB_WC_FETCH_ADD;
		wc->byte_len = 8;
		break;
	default:
		wc->opcode = IB_WC_SEND;
		break;
	}
}

static void cqe_recv_fields(const struct mthca_cqe *cqe, struct ib_wc *wc)
{
	u32 path;

	wc->byte_len = be32_to_cpu(cqe->byte_cnt);
	wc->opcode = IB_WC_RECV;
	switch (mthca_cqe_opcode(cqe) & 0x1f) {
	case MTHCA_RCV_WRITE_LAST_IMM:
	case MTHCA_RCV_WRITE_ONLY_IMM:
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		fallthrough;
	case MTHCA_RCV_SEND_LAST_IMM:
	case MTHCA_RCV_SEND_ONLY_IMM:
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->imm_data = cqe->imm_pkey;
		break;
	default:
		wc->pkey_index = be32_to_cpu(cqe->imm_pkey) >> 16;
		break;
	}
	path = be32_to_cpu(cqe->sl_path_slid);
	wc->slid = path & 0xffff;
	wc->sl = path >> 28;
	wc->dlid_path_bits = (path >> 16) & 0x7f;
	wc->src_qp = be32_to_cpu(cqe->src_qpn) & 0xffffff;
	if (path & BIT(23))
		wc->wc_flags |= IB_WC_GRH;
}

/*
 * Turn the CQE at the consumer index into @wc.  Called with cq->lock held.
 * Return: 0 with @wc filled, -EAGAIN when the ring is empty, -EINVAL for a
 * CQE of an unknown QP (consumed, nothing reported).
 */
static int cq_poll_one(struct mthca_dev *dev, struct mthca_cq *cq,
		       struct ib_wc *wc)
{
	struct mthca_cqe *cqe = cq_next_sw(cq);
	struct mthca_qp *qp;
	u32 qpn, wqe, index;
	bool send;
	int ret = 0;

	if (!cqe)
		return -EAGAIN;
	/* Read the CQE only after seeing the owner bit. */
	rmb();

	qpn = be32_to_cpu(cqe->qpn) & 0xffffff;
	qp = xa_load(&dev->qp_table.objs, qpn);
	if (unlikely(!qp)) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CQ %06x: CQE for unknown QP %06x\n",
				     cq->cqn, qpn);
		ret = -EINVAL;
		goto consume;
	}

	memset(wc, 0, sizeof(*wc));
	wc->qp_num = qp->ibqp.qp_num;
	wc->port_num = READ_ONCE(qp->port);
	send = cqe_is_send(cqe);
	wqe = be32_to_cpu(cqe->wqe);

	if (send) {
		index = ((wqe - qp->sq.offset) >> qp->sq.wqe_shift) &
			(qp->sq.max - 1);
		wc->wr_id = qp->wrid[qp->rq.max + index];
		wq_complete_to(&qp->sq, index);
	} else if (qp->ibqp.srq) {
		struct mthca_srq *srq = to_msrq(qp->ibqp.srq);

		index = (wqe >> srq->wqe_shift) & (srq->max - 1);
		wc->wr_id = srq->wrid[index];
		mthca_dp_srq_free_wqe(srq, wqe);
	} else {
		index = (wqe >> qp->rq.wqe_shift) & (qp->rq.max - 1);
		wc->wr_id = qp->wrid[index];
		wq_complete_to(&qp->rq, index);
	}

	if (cqe_is_error(cqe)) {
		u32 syn = be32_to_cpu(cqe->imm_pkey);

		wc->status = cq_syndrome_status(syn >> 24);
		wc->vendor_err = (syn >> 16) & 0xff;
		wc->opcode = send ? IB_WC_SEND : IB_WC_RECV;
	} else {
		wc->status = IB_WC_SUCCESS;
		if (send)
			cqe_send_opcode(cqe, wc);
		else
			cqe_recv_fields(cqe, wc);
	}

consume:
	*mthca_cqe_owner(cqe) = MTHCA_CQE_OWNER_HW;
	cq->cons_index++;
	return ret;
}

/*
 * After a catastrophic error: report the oldest outstanding WQE of @wq
 * (of @qp) as flushed.  Called with the CQ lock of @wq's CQ held; no
 * post changes @wq's head any more.
 */
static void wq_flush_one(struct mthca_qp *qp, struct mthca_wq *wq,
			 bool send, struct ib_wc *wc)
{
	u32 index = wq->tail & (wq->max - 1);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = qp->wrid[(send ? qp->rq.max : 0) + index];
	wc->status = IB_WC_WR_FLUSH_ERR;
	wc->opcode = send ? IB_WC_SEND : IB_WC_RECV;
	wc->qp_num = qp->ibqp.qp_num;
	wc->port_num = READ_ONCE(qp->port);
	wq->last_comp = index;
	wq->tail++;
}

/* Any work request of a QP completing on @cq still outstanding?  Lock held. */
static bool cq_has_outstanding(struct mthca_cq *cq)
{
	struct mthca_qp *qp;

	list_for_each_entry(qp, &cq->send_qps, scq_node)
		if (qp->sq.tail != READ_ONCE(qp->sq.head))
			return true;
	list_for_each_entry(qp, &cq->recv_qps, rcq_node)
		if (qp->rq.tail != READ_ONCE(qp->rq.head))
			return true;
	return false;
}

/*
 * The software completions of a dead HCA: every work request posted and
 * not completed yet comes back with IB_WC_WR_FLUSH_ERR, in posting order
 * per work queue (receive WQEs of an SRQ are not flushed: no QP owns them).
 * The ring is not read any more: the dead HCA writes no CQEs, and one it
 * wrote before dying is reported as flushed too.  Lock held.
 */
static int cq_poll_flushed(struct mthca_cq *cq, int nwc, struct ib_wc *wc)
{
	struct mthca_qp *qp;
	int n = 0;

	list_for_each_entry(qp, &cq->send_qps, scq_node)
		while (n < nwc && qp->sq.tail != READ_ONCE(qp->sq.head))
			wq_flush_one(qp, &qp->sq, true, wc + n++);
	list_for_each_entry(qp, &cq->recv_qps, rcq_node)
		while (n < nwc && qp->rq.tail != READ_ONCE(qp->rq.head))
			wq_flush_one(qp, &qp->rq, false, wc + n++);
	return n;
}

/**
 * mthca_dp_poll_cq() - take completions off a CQ
 * @ibcq: the CQ
 * @nwc: room in @wc
 * @wc: where the completions go
 *
 * Never sleeps.  Once the HCA is dead (mthca_dp_catas()), the
 * completions are the software ones of the work still outstanding.
 *
 * Return: the number of completions written.
 */
int mthca_dp_poll_cq(struct ib_cq *ibcq, int nwc, struct ib_wc *wc)
{
	struct mthca_dev *dev = to_mdev(ibcq->device);
	struct mthca_cq *cq = to_mcq(ibcq);
	unsigned long flags;
	u32 start;
	int n = 0;
	int ret;

	spin_lock_irqsave(&cq->lock, flags);
	/* Pairs with mthca_dp_catas(): every post before it is finished. */
	if (unlikely(smp_load_acquire(&dev->cq_table.flushing))) {
		n = cq_poll_flushed(cq, nwc, wc);
		spin_unlock_irqrestore(&cq->lock, flags);
		return n;
	}
	start = cq->cons_index;
	while (n < nwc) {
		ret = cq_poll_one(dev, cq, wc + n);
		if (ret == -EAGAIN)
			break;
		if (!ret)
			n++;
	}
	if (cq->cons_index != start)
		cq_publish_ci(cq);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/**
 * mthca_dp_arm_cq() - request a completion event
 * @ibcq: the CQ
 * @how: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP
 *
 * Writes the arm doorbell record, then rings the CQ doorbell with the
 * current consumer index and arm sequence number.  Never sleeps.
 *
 * Return: 0.
 */
int mthca_dp_arm_cq(struct ib_cq *ibcq, enum ib_cq_notify how)
{
	struct mthca_dev *dev = to_mdev(ibcq->device);
	struct mthca_cq *cq = to_mcq(ibcq);
	u32 sn = READ_ONCE(cq->arm_sn) & 3;
	u32 cmd = how == IB_CQ_SOLICITED ? 1 : 2;
	u32 ci = READ_ONCE(cq->cons_index);

	/* A user CQ's consumer index is what the process last published. */
	if (cq->uctx)
		ci = be32_to_cpu(READ_ONCE(cq->set_ci_db[0]));

	/* The record's second word goes last: the HCA checks it first. */
	cq->arm_db[0] = cpu_to_be32(ci);
	wmb(); /* consumer index word before the command word */
	cq->arm_db[1] = cpu_to_be32(cq->cqn << 8 | 2 << 5 | sn << 3 | cmd);
	wmb(); /* the record before the doorbell */
	mthca_uar_write64(dev, sn << 28 | cmd << 24 | cq->cqn, ci,
			  MTHCA_UAR_CQ_DB);
	return 0;
}

/**
 * mthca_dp_cq_clean() - drop the CQEs of a QP that is going away
 * @cq: the CQ
 * @qpn: the physical QP number
 * @srq: the QP's SRQ, whose WQEs such receive CQEs hold, or NULL
 *
 * Later CQEs of other QPs move up over the removed ones.
 */
void mthca_dp_cq_clean(struct mthca_cq *cq, u32 qpn, struct mthca_srq *srq)
{
	struct mthca_cqe *cqe;
	u32 prod, dropped = 0;

	/* A user CQ's ring is the process's to clean (libmthca does). */
	if (cq->uctx)
		return;
	spin_lock_irq(&cq->lock);
	/* Find the end of the software-owned run. */
	for (prod = cq->cons_index; prod != cq->cons_index + cq->nent; prod++)
		if (*mthca_cqe_owner(cq_entry(cq, prod)) & MTHCA_CQE_OWNER_HW)
			break;

	while (prod-- != cq->cons_index) {
		cqe = cq_entry(cq, prod);
		if ((be32_to_cpu(cqe->qpn) & 0xffffff) == qpn) {
			if (srq && !cqe_is_send(cqe))
				mthca_dp_srq_free_wqe(srq, be32_to_cpu(cqe->wqe));
			dropped++;
		} else if (dropped) {
			memcpy(cq_entry(cq, prod + dropped), cqe,
			       MTHCA_CQE_BYTES);
		}
	}
	if (dropped) {
		for (prod = 0; prod < dropped; prod++)
			*mthca_cqe_owner(cq_entry(cq, cq->cons_index + prod)) =
				MTHCA_CQE_OWNER_HW;
		cq->cons_index += dropped;
		cq_publish_ci(cq);
	}
	spin_unlock_irq(&cq->lock);
}

/**
 * mthca_dp_cq_list_qp() - put a new QP on the lists of its CQs
 * @qp: the QP, with ibqp.send_cq and ibqp.recv_cq set
 */
void mthca_dp_cq_list_qp(struct mthca_qp *qp)
{
	struct mthca_cq *scq = to_mcq(qp->ibqp.send_cq);
	struct mthca_cq *rcq = to_mcq(qp->ibqp.recv_cq);

	spin_lock_irq(&scq->lock);
	list_add_tail(&qp->scq_node, &scq->send_qps);
	spin_unlock_irq(&scq->lock);
	spin_lock_irq(&rcq->lock);
	list_add_tail(&qp->rcq_node, &rcq->recv_qps);
	spin_unlock_irq(&rcq->lock);
}

/**
 * mthca_dp_cq_unlist_qp() - undo mthca_dp_cq_list_qp()
 * @qp: the QP being destroyed
 */
void mthca_dp_cq_unlist_qp(struct mthca_qp *qp)
{
	struct mthca_cq *scq = to_mcq(qp->ibqp.send_cq);
	struct mthca_cq *rcq = to_mcq(qp->ibqp.recv_cq);

	spin_lock_irq(&scq->lock);
	list_del(&qp->scq_node);
	spin_unlock_irq(&scq->lock);
	spin_lock_irq(&rcq->lock);
	list_del(&qp->rcq_node);
	spin_unlock_irq(&rcq->lock);
}

/**
 * mthca_dp_catas() - complete the outstanding work of a dead HCA
 * @dev: the device, with cmd.dead set: posts fail with -EIO from now on
 *
 * A dead HCA writes no CQEs and raises no events, so a consumer waiting
 * for its work requests (ib_mad's agent unregister waits for its posted
 * sends) would wait forever.  After every post that still saw the device
 * alive has finished (each work queue lock taken once), pollers switch to
 * software flush completions, and each CQ with work outstanding gets its
 * completion handler called once, here (the catastrophic error timer:
 * not a consumer's call chain).  Never sleeps.
 */
void mthca_dp_catas(struct mthca_dev *dev)
{
	struct mthca_qp *qp;
	struct mthca_cq *cq;
	unsigned long idx, flags;
	bool wake;

	xa_lock_irqsave(&dev->qp_table.objs, flags);
	xa_for_each(&dev->qp_table.objs, idx, qp) {
		spin_lock(&qp->sq.lock);
		spin_unlock(&qp->sq.lock);
		spin_lock(&qp->rq.lock);
		spin_unlock(&qp->rq.lock);
	}
	xa_unlock_irqrestore(&dev->qp_table.objs, flags);
	/* The heads read by pollers after they see the flag are final. */
	smp_store_release(&dev->cq_table.flushing, true);

	xa_for_each(&dev->cq_table.objs, idx, cq) {
		/* Pinned: the entry found above may be going away. */
		cq = mthca_dp_find(&dev->cq_table.objs, idx, struct mthca_cq);
		if (!cq)
			continue;
		spin_lock_irqsave(&cq->lock, flags);
		wake = cq_has_outstanding(cq);
		spin_unlock_irqrestore(&cq->lock, flags);
		if (wake && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		mthca_dp_life_put(&cq->life);
	}
}

/*
 * The ring and doorbell records of a user CQ: the ring is an MR of the
 * process (its lkey; libmthca registers it at IOVA 0 with the PD it names
 * by number, which must be one of the context's), the records are in its
 * pages, mapped into the context's UARC.
 */
static int cq_user_setup(struct mthca_dev *dev, struct mthca_cq *cq,
			 struct mthca_ucontext *uctx, struct ib_udata *udata,
			 u32 *pdn)
{
	struct mthca_create_cq ucmd;
	int err;

	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (!xa_load(&uctx->pdns, ucmd.pdn))
		return -EINVAL;
	err = mthca_map_user_db(dev, &uctx->uar, uctx->db_tab,
				ucmd.set_db_index, ucmd.set_db_page,
				&cq->set_ci_db);
	if (err)
		return err;
	err = mthca_map_user_db(dev, &uctx->uar, uctx->db_tab,
				ucmd.arm_db_index, ucmd.arm_db_page,
				&cq->arm_db);
	if (err) {
		mthca_unmap_user_db(dev, &uctx->uar, uctx->db_tab,
				    ucmd.set_db_index);
		return err;
	}
	cq->set_ci_db_index = ucmd.set_db_index;
	cq->arm_db_index = ucmd.arm_db_index;
	cq->buf.lkey = ucmd.lkey;
	cq->uctx = uctx;
	*pdn = ucmd.pdn;
	return 0;
}

static void cq_user_teardown(struct mthca_dev *dev, struct mthca_cq *cq)
{
	struct mthca_ucontext *uctx = cq->uctx;

	mthca_unmap_user_db(dev, &uctx->uar, uctx->db_tab, cq->arm_db_index);
	mthca_unmap_user_db(dev, &uctx->uar, uctx->db_tab,
			    cq->set_ci_db_index);
}

/* The ring and doorbell records of a kernel CQ. */
static int cq_kernel_setup(struct mthca_dev *dev, struct mthca_cq *cq)
{
	u32 i;
	int err;

	cq->set_ci_db_index = mthca_db_alloc(dev, MTHCA_DB_CQ_SET_CI, cq->cqn,
					     &cq->set_ci_db);
	if (cq->set_ci_db_index < 0)
		return -ENOMEM;
	cq->arm_db_index = mthca_db_alloc(dev, MTHCA_DB_CQ_ARM, cq->cqn,
					  &cq->arm_db);
	if (cq->arm_db_index < 0) {
		err = -ENOMEM;
		goto err_ci_db;
	}
	err = mthca_dp_buf_alloc(dev, cq->nent * MTHCA_CQE_BYTES,
				 dev->driver_pd.pdn, true, &cq->buf);
	if (err)
		goto err_arm_db;
	for (i = 0; i < cq->nent; i++)
		*mthca_cqe_owner(cq_entry(cq, i)) = MTHCA_CQE_OWNER_HW;
	return 0;

err_arm_db:
	mthca_db_free(dev, MTHCA_DB_CQ_ARM, cq->arm_db_index);
err_ci_db:
	mthca_db_free(dev, MTHCA_DB_CQ_SET_CI, cq->set_ci_db_index);
	return err;
}

static void cq_kernel_teardown(struct mthca_dev *dev, struct mthca_cq *cq)
{
	mthca_dp_buf_free(dev, &cq->buf);
	mthca_db_free(dev, MTHCA_DB_CQ_ARM, cq->arm_db_index);
	mthca_db_free(dev, MTHCA_DB_CQ_SET_CI, cq->set_ci_db_index);
}

/**
 * mthca_dp_create_cq() - create a completion queue
 * @ibdev: the device
 * @entries: completions the CQ must hold at least
 * @uctx: user context of a user CQ, else NULL
 * @udata: a user CQ's struct mthca_create_cq in, its
 *	struct mthca_create_cq_resp (the CQ number) out
 *
 * Return: the CQ, or an ERR_PTR.
 */
struct ib_cq *mthca_dp_create_cq(struct ib_device *ibdev, int entries,
				 struct ib_ucontext *uctx,
				 struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct mthca_cq_table *tab = &dev->cq_table;
	struct mthca_mailbox *box;
	struct mthca_cq_ctx *ctx;
	struct mthca_create_cq_resp uresp = {};
	struct mthca_cq *cq;
	u32 cqn, pdn = dev->driver_pd.pdn, uar = dev->driver_uar.num;
	int err;

	if (!uctx != !udata)
		return ERR_PTR(-EINVAL);
	if (entries < 1 || entries > dev->limits.max_cqes)
		return ERR_PTR(-EINVAL);

	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	/* One entry stays empty so full and empty can be told apart. */
	cq->nent = roundup_pow_of_two(entries + 1);
	cq->ibcq.cqe = cq->nent - 1;
	cq->arm_sn = 1;
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_mutex);
	INIT_LIST_HEAD(&cq->send_qps);
	INIT_LIST_HEAD(&cq->recv_qps);
	mthca_dp_life_init(&cq->life);

	err = mthca_dp_number_get(dev, &tab->objs, dev->limits.reserved_cqs,
				  dev->limits.num_cqs, dev->icm_cqc, &cqn);
	if (err)
		goto err_free;
	cq->cqn = cqn;

	if (uctx) {
		err = cq_user_setup(dev, cq, to_mucontext(uctx), udata, &pdn);
		uar = to_mucontext(uctx)->uar.num;
	} else {
		err = cq_kernel_setup(dev, cq);
	}
	if (err)
		goto err_num;

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box)) {
		err = PTR_ERR(box);
		goto err_buf;
	}
	ctx = box->buf;
	memset(ctx, 0, sizeof(*ctx));
	ctx->flags = cpu_to_be32(MTHCA_CQC_STATUS_OK | MTHCA_CQC_DISARMED |
				 MTHCA_CQC_TR);
	/* start stays 0: the buffer's MR begins at iova 0 */
	ctx->logsize_uar = cpu_to_be32(ilog2(cq->nent) << 24 | uar);
	ctx->error_eqn = cpu_to_be32(mthca_async_eqn(dev));
	ctx->comp_eqn = cpu_to_be32(mthca_comp_eqn(dev));
	ctx->pd = cpu_to_be32(pdn);
	ctx->lkey = cpu_to_be32(cq->buf.lkey);
	ctx->cqn = cpu_to_be32(cqn);
	ctx->ci_db_index = cpu_to_be32(cq->set_ci_db_index);
	ctx->arm_db_index = cpu_to_be32(cq->arm_db_index);

	err = mthca_SW2HW_CQ(dev, box, cqn);
	mthca_mailbox_free(dev, box);
	if (err) {
		dev_warn(&dev->pdev->dev, "SW2HW_CQ %06x failed: %d\n",
			 cqn, err);
		goto err_buf;
	}
	if (udata) {
		uresp.cqn = cqn;
		err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (err)
			goto err_hw;
	}

	/* Now events may find it. */
	xa_store_irq(&tab->objs, cqn, cq, GFP_KERNEL);
	return &cq->ibcq;

err_hw:
	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (!IS_ERR(box)) {
		mthca_HW2SW_CQ(dev, box, cqn);
		mthca_mailbox_free(dev, box);
	}
err_buf:
	if (cq->uctx)
		cq_user_teardown(dev, cq);
	else
		cq_kernel_teardown(dev, cq);
err_num:
	mthca_dp_number_put(dev, &tab->objs, dev->icm_cqc, cqn);
err_free:
	kfree(cq);
	return ERR_PTR(err);
}

/**
 * mthca_dp_destroy_cq() - destroy a completion queue
 * @ibcq: the CQ; no QP may use it any more
 *
 * Takes the CQ back from the HCA, then waits until event handlers that
 * already found it have returned.
 *
 * Return: 0, or -EBUSY while QPs still use the CQ.
 */
int mthca_dp_destroy_cq(struct ib_cq *ibcq)
{
	struct mthca_dev *dev = to_mdev(ibcq->device);
	struct mthca_cq *cq = to_mcq(ibcq);
	struct mthca_mailbox *box;
	int err;

	/* IBA C11-17: not while a work queue is still associated. */
	if (atomic_read(&ibcq->usecnt))
		return -EBUSY;

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box)) {
		err = PTR_ERR(box);
	} else {
		err = mthca_HW2SW_CQ(dev, box, cq->cqn);
		mthca_mailbox_free(dev, box);
	}
	if (err)
		mthca_teardown_warn(dev, "HW2SW_CQ %06x failed: %d\n",
				    cq->cqn, err);

	/* Keep the number reserved until the memory is gone. */
	xa_store_irq(&dev->cq_table.objs, cq->cqn, NULL, GFP_KERNEL);
	mthca_dp_life_end(&cq->life);

	if (cq->uctx)
		cq_user_teardown(dev, cq);
	else
		cq_kernel_teardown(dev, cq);
	mthca_dp_number_put(dev, &dev->cq_table.objs, dev->icm_cqc, cq->cqn);
	kfree(cq);
	return 0;
}

/*
 * A kernel CQ's move to a ring of @nent entries; cq->resize_mutex held.
 * The HCA moves to the new ring with RESIZE_CQ and keeps its free-running
 * producer index, so the CQEs not polled yet are copied to the same
 * indexes of the new ring before pollers switch to it.
 */
static int cq_kernel_resize(struct mthca_dev *dev, struct mthca_cq *cq,
			    u32 nent)
{
	struct mthca_dp_buf ring, old;
	u32 i, n;
	int err;

	err = mthca_dp_buf_alloc(dev, nent * MTHCA_CQE_BYTES,
				 dev->driver_pd.pdn, true, &ring);
	if (err)
		return err;
	for (i = 0; i < nent; i++)
		*mthca_cqe_owner(ring.cpu + i * MTHCA_CQE_BYTES) =
			MTHCA_CQE_OWNER_HW;

	err = mthca_RESIZE_CQ(dev, cq->cqn, ring.lkey, ilog2(nent));
	if (err) {
		mthca_dp_buf_free(dev, &ring);
		return err;
	}

	spin_lock_irq(&cq->lock);
	for (n = 0, i = cq->cons_index; n < cq->nent; n++, i++) {
		if (!cq_next_sw_at(cq, i))
			break;
		memcpy(ring.cpu + (i & (nent - 1)) * MTHCA_CQE_BYTES,
		       cq_entry(cq, i), MTHCA_CQE_BYTES);
	}
	old = cq->buf;
	cq->buf = ring;
	cq->nent = nent;
	cq->ibcq.cqe = nent - 1;
	spin_unlock_irq(&cq->lock);

	mthca_dp_buf_free(dev, &old);
	return 0;
}

/*
 * A user CQ's move to a ring of @nent entries; cq->resize_mutex held.
 * libmthca has registered the new ring (at IOVA 0, like the first) and
 * names it by lkey in struct mthca_resize_cq; it copies the CQEs it has
 * not polled itself once the command succeeds, and deregisters the old
 * ring.  The kernel never touches either ring.
 */
static int cq_user_resize(struct mthca_dev *dev, struct mthca_cq *cq,
			  u32 nent, struct ib_udata *udata)
{
	struct mthca_resize_cq ucmd;
	int err;

	/* Whatever stops the request from being read: EFAULT, as 6.1. */
	if (ib_copy_from_udata(&ucmd, udata, sizeof(ucmd)))
		return -EFAULT;
	err = mthca_RESIZE_CQ(dev, cq->cqn, ucmd.lkey, ilog2(nent));
	if (err)
		return err;

	spin_lock_irq(&cq->lock);
	cq->buf.lkey = ucmd.lkey;
	cq->nent = nent;
	cq->ibcq.cqe = nent - 1;
	spin_unlock_irq(&cq->lock);
	return 0;
}

/**
 * mthca_dp_resize_cq() - change the number of entries of a CQ
 * @ibcq: the CQ
 * @entries: completions the CQ must hold at least
 * @udata: a user CQ's struct mthca_resize_cq (the new ring's lkey); NULL
 *	for a kernel CQ
 *
 * Kernel CQs get a new ring from the driver, user CQs bring theirs.  A
 * size the CQ has already is no work (and reads no @udata).  Sleeps.
 *
 * Return: 0, -EINVAL for a bad size or a @udata that does not match the
 * CQ's kind, -EFAULT when a user CQ's request cannot be read, or an errno
 * of the allocation or the firmware (-ENOMEM when the new ring is too
 * small for the CQEs outstanding).
 */
int mthca_dp_resize_cq(struct ib_cq *ibcq, int entries,
		       struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibcq->device);
	struct mthca_cq *cq = to_mcq(ibcq);
	u32 nent;
	int err;

	if (entries < 1 || entries > dev->limits.max_cqes)
		return -EINVAL;
	if (!cq->uctx != !udata)
		return -EINVAL;
	nent = roundup_pow_of_two(entries + 1);

	mutex_lock(&cq->resize_mutex);
	if (nent == cq->nent)
		err = 0;
	else if (cq->uctx)
		err = cq_user_resize(dev, cq, nent, udata);
	else
		err = cq_kernel_resize(dev, cq, nent);
	mutex_unlock(&cq->resize_mutex);
	return err;
}

/**
 * mthca_init_cq_table() - set up the device's CQ table
 * @dev: the device; dev->cq_table.icm is set by the caller
 *
 * Return: 0.
 */
int mthca_init_cq_table(struct mthca_dev *dev)
{
	xa_init_flags(&dev->cq_table.objs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	return 0;
}

/**
 * mthca_cleanup_cq_table() - release the device's CQ table
 * @dev: the device; all CQs are destroyed
 */
void mthca_cleanup_cq_table(struct mthca_dev *dev)
{
	if (!xa_empty(&dev->cq_table.objs))
		dev_err(&dev->pdev->dev, "CQs left at removal\n");
	xa_destroy(&dev->cq_table.objs);
}
