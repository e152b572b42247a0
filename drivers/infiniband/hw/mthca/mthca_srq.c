// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: shared receive queues of the mem-free MT25208.
 *
 * The WQEs of an SRQ are not consumed in order, so software keeps a free
 * list threaded through the WQEs themselves (in the imm word of the next
 * segment, which a receive WQE never uses).  Posting takes WQEs from the
 * head of the list and bumps the 16-bit counter in the SRQ's doorbell
 * record; the HCA follows the nda links from the last WQE it took, and a
 * completion returns its WQE to the tail of the list.
 */
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/sched.h>

#include <rdma/mthca-abi.h>

#include "mthca_dev.h"
#include "mthca_wqe.h"

/* SRQ context of SW2HW_SRQ/QUERY_SRQ (mem-free layout, 48 bytes). */
struct mthca_srq_ctx {
	__be32	state_logsize_srqn;	/* log2 size [27:24], SRQ number */
	__be32	lkey;
	__be32	db_index;
	__be32	logstride_uar;		/* log2 stride - 4 [31:29], UAR */
	__be64	wqe_base;
	__be32	eq_pd;			/* async EQ [31:24], PD */
	__be16	limit_watermark;
	__be16	wqe_cnt;
	__be16	reserved1;
	__be16	wqe_counter;
	__be32	reserved2[3];
};

static void *srq_wqe(struct mthca_srq *srq, int n)
{
	return srq->buf.cpu + (n << srq->wqe_shift);
}

/* The free-list link of a WQE: its next segment's imm word. */
static int *srq_link(void *wqe)
{
	return (int *)&((struct mthca_next_seg *)wqe)->imm;
}

/**
 * mthca_srq_event() - an asynchronous event on an SRQ arrived
 * @dev: the device
 * @srqn: the SRQ number from the EQE
 * @type: the event (IB_EVENT_SRQ_LIMIT_REACHED or IB_EVENT_SRQ_ERR)
 *
 * Called from the EQ interrupt handler.  The limit event is one-shot: the
 * consumer arms it again with modify_srq.
 */
void mthca_srq_event(struct mthca_dev *dev, u32 srqn, enum ib_event_type type)
{
	struct mthca_srq *srq;
	struct ib_event ev;

	srq = mthca_dp_event_target(dev, &dev->srq_table.objs, srqn, type,
				    "SRQ", struct mthca_srq);
	if (!srq)
		return;
	ev.element.srq = &srq->ibsrq;
	mthca_dp_raise_event(dev, &ev, type, srq->ibsrq.event_handler,
			     srq->ibsrq.srq_context, &srq->life);
}

/**
 * mthca_dp_srq_free_wqe() - return a completed WQE to the free list
 * @srq: the SRQ
 * @wqe_offset: the WQE's offset in the SRQ buffer, from the CQE
 *
 * Called by the CQ poller with interrupts off.
 */
void mthca_dp_srq_free_wqe(struct mthca_srq *srq, u32 wqe_offset)
{
	int ind = (wqe_offset >> srq->wqe_shift) & (srq->max - 1);
	struct mthca_next_seg *last;

	spin_lock(&srq->lock);
	*srq_link(srq_wqe(srq, ind)) = -1;
	if (srq->first_free < 0) {
		srq->first_free = ind;
	} else {
		last = srq_wqe(srq, srq->last_free);
		*srq_link(last) = ind;
		last->nda_op = cpu_to_be32(ind << srq->wqe_shift | 1);
	}
	srq->last_free = ind;
	spin_unlock(&srq->lock);
}

/**
 * mthca_dp_create_srq() - create a shared receive queue
 * @ibpd: the protection domain
 * @init: what is asked for; @init->attr is updated to what was allocated
 * @udata: a user SRQ's struct mthca_create_srq (ring lkey, doorbell record)
 *	in, its struct mthca_create_srq_resp (the SRQ number) out; else NULL
 *
 * Return: the SRQ, or an ERR_PTR.
 */
struct ib_srq *mthca_dp_create_srq(struct ib_pd *ibpd,
				   struct ib_srq_init_attr *init,
				   struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	struct mthca_srq_table *tab = &dev->srq_table;
	struct ib_srq_attr *attr = &init->attr;
	struct mthca_next_seg *next;
	struct mthca_data_seg *d;
	struct mthca_mailbox *box;
	struct mthca_srq_ctx *ctx;
	struct mthca_create_srq_resp uresp = {};
	struct mthca_ucontext *uctx = NULL;
	struct mthca_create_srq ucmd;
	struct mthca_srq *srq;
	u32 srqn, uar = dev->driver_uar.num;
	int i, err;

	if (udata) {
		if (!ibpd->uobject)
			return ERR_PTR(-EINVAL);
		uctx = to_mucontext(ibpd->uobject->context);
		err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
		if (err)
			return ERR_PTR(err);
		uar = uctx->uar.num;
	}
	if (!dev->limits.num_srqs)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->max_wr || attr->max_wr > dev->limits.max_srq_wqes ||
	    attr->max_sge > dev->limits.max_srq_sge ||
	    attr->srq_limit > attr->max_wr)
		return ERR_PTR(-EINVAL);

	srq = kzalloc(sizeof(*srq), GFP_KERNEL);
	if (!srq)
		return ERR_PTR(-ENOMEM);
	/* One WQE is never handed out, so the list is never empty. */
	srq->max = roundup_pow_of_two(attr->max_wr + 1);
	srq->max_gs = attr->max_sge;
	srq->wqe_shift = mthca_wqe_shift(mthca_rq_wqe_bytes(srq->max_gs));
	spin_lock_init(&srq->lock);
	mutex_init(&srq->mutex);
	mthca_dp_life_init(&srq->life);

	err = mthca_dp_number_get(dev, &tab->objs, dev->limits.reserved_srqs,
				  dev->limits.num_srqs, dev->icm_srqc, &srqn);
	if (err)
		goto err_free;
	srq->srqn = srqn;

	if (uctx) {
		/*
		 * libmthca keeps the ring (an MR of its own at IOVA 0), the
		 * free list and the doorbell record: the kernel only maps
		 * the record's page and names the lkey.
		 */
		err = mthca_map_user_db(dev, &uctx->uar, uctx->db_tab,
					ucmd.db_index, ucmd.db_page, NULL);
		if (err)
			goto err_num;
		srq->db_index = ucmd.db_index;
		srq->buf.lkey = ucmd.lkey;
		srq->uctx = uctx;
		goto context;
	}

	srq->db_index = mthca_db_alloc(dev, MTHCA_DB_SRQ, srqn, &srq->db);
	if (srq->db_index < 0) {
		err = -ENOMEM;
		goto err_num;
	}
	srq->wrid = kcalloc(srq->max, sizeof(u64), GFP_KERNEL);
	if (!srq->wrid) {
		err = -ENOMEM;
		goto err_db;
	}
	err = mthca_dp_buf_alloc(dev, srq->max << srq->wqe_shift,
				 to_mpd(ibpd)->pdn, false, &srq->buf);
	if (err)
		goto err_wrid;

	/* Chain every WQE to the next, both for the HCA and the free list. */
	for (i = 0; i < srq->max; i++) {
		next = srq_wqe(srq, i);
		if (i < srq->max - 1) {
			*srq_link(next) = i + 1;
			next->nda_op = cpu_to_be32((i + 1) << srq->wqe_shift | 1);
		} else {
			*srq_link(next) = -1;
			next->nda_op = 0;
		}
		for (d = (void *)(next + 1);
		     (void *)d < (void *)next + (1 << srq->wqe_shift); d++)
			d->lkey = cpu_to_be32(MTHCA_LKEY_END_OF_LIST);
	}
	srq->first_free = 0;
	srq->last_free = srq->max - 1;

context:
	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box)) {
		err = PTR_ERR(box);
		goto err_buf;
	}
	ctx = box->buf;
	memset(ctx, 0, sizeof(*ctx));
	ctx->state_logsize_srqn = cpu_to_be32(ilog2(srq->max) << 24 | srqn);
	ctx->lkey = cpu_to_be32(srq->buf.lkey);
	ctx->db_index = cpu_to_be32(srq->db_index);
	ctx->logstride_uar = cpu_to_be32((srq->wqe_shift - 4) << 29 | uar);
	ctx->eq_pd = cpu_to_be32(mthca_async_eqn(dev) << 24 | to_mpd(ibpd)->pdn);
	err = mthca_SW2HW_SRQ(dev, box, srqn);
	mthca_mailbox_free(dev, box);
	if (err) {
		dev_warn(&dev->pdev->dev, "SW2HW_SRQ %06x failed: %d\n",
			 srqn, err);
		goto err_buf;
	}

	if (attr->srq_limit) {
		err = mthca_ARM_SRQ(dev, srqn, attr->srq_limit);
		if (err)
			goto err_hw;
	}

	if (udata) {
		uresp.srqn = srqn;
		err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (err)
			goto err_hw;
	}

	attr->max_wr = srq->max - 1;
	attr->max_sge = srq->max_gs;
	xa_store_irq(&tab->objs, srqn, srq, GFP_KERNEL);
	return &srq->ibsrq;

err_hw:
	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (!IS_ERR(box)) {
		mthca_HW2SW_SRQ(dev, box, srqn);
		mthca_mailbox_free(dev, box);
	}
err_buf:
	if (uctx) {
		mthca_unmap_user_db(dev, &uctx->uar, uctx->db_tab,
				    srq->db_index);
		goto err_num;
	}
	mthca_dp_buf_free(dev, &srq->buf);
err_wrid:
	kfree(srq->wrid);
err_db:
	mthca_db_free(dev, MTHCA_DB_SRQ, srq->db_index);
err_num:
	mthca_dp_number_put(dev, &tab->objs, dev->icm_srqc, srqn);
err_free:
	kfree(srq);
	return ERR_PTR(err);
}

/**
 * mthca_dp_modify_srq() - arm an SRQ's limit event
 * @ibsrq: the SRQ
 * @attr: @attr->srq_limit is the new limit
 * @mask: IB_SRQ_LIMIT; resizing (IB_SRQ_MAX_WR) is not supported
 *
 * Return: 0, -EINVAL for a resize or a limit above the queue's size, or
 * the firmware's error.
 */
int mthca_dp_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask)
{
	struct mthca_dev *dev = to_mdev(ibsrq->device);
	struct mthca_srq *srq = to_msrq(ibsrq);
	int err = 0;

	if (mask & IB_SRQ_MAX_WR)
		return -EINVAL;
	if (mask & IB_SRQ_LIMIT) {
		/* The limit may not exceed the size of the queue. */
		if (attr->srq_limit > srq->max - 1)
			return -EINVAL;
		mutex_lock(&srq->mutex);
		err = mthca_ARM_SRQ(dev, srq->srqn, attr->srq_limit);
		mutex_unlock(&srq->mutex);
	}
	return err;
}

/**
 * mthca_dp_query_srq() - read an SRQ's attributes
 * @ibsrq: the SRQ
 * @attr: where they go; srq_limit is the armed limit (0: not armed)
 *
 * Return: 0, or the firmware's error.
 */
int mthca_dp_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct mthca_dev *dev = to_mdev(ibsrq->device);
	struct mthca_srq *srq = to_msrq(ibsrq);
	struct mthca_mailbox *box;
	int err;

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box))
		return PTR_ERR(box);
	mutex_lock(&srq->mutex);
	err = mthca_QUERY_SRQ(dev, srq->srqn, box);
	mutex_unlock(&srq->mutex);
	if (!err) {
		struct mthca_srq_ctx *ctx = box->buf;

		attr->srq_limit = be16_to_cpu(ctx->limit_watermark);
		attr->max_wr = srq->max - 1;
		attr->max_sge = srq->max_gs;
	}
	mthca_mailbox_free(dev, box);
	return err;
}

/**
 * mthca_dp_destroy_srq() - destroy a shared receive queue
 * @ibsrq: the SRQ; no QP may use it any more
 *
 * Return: 0.
 */
int mthca_dp_destroy_srq(struct ib_srq *ibsrq)
{
	struct mthca_dev *dev = to_mdev(ibsrq->device);
	struct mthca_srq *srq = to_msrq(ibsrq);
	struct mthca_mailbox *box;
	int err = -ENOMEM;

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (!IS_ERR(box)) {
		err = mthca_HW2SW_SRQ(dev, box, srq->srqn);
		mthca_mailbox_free(dev, box);
	}
	if (err)
		mthca_teardown_warn(dev, "HW2SW_SRQ %06x failed: %d\n",
				    srq->srqn, err);

	xa_store_irq(&dev->srq_table.objs, srq->srqn, NULL, GFP_KERNEL);
	mthca_dp_life_end(&srq->life);

	if (srq->uctx) {
		mthca_unmap_user_db(dev, &srq->uctx->uar, srq->uctx->db_tab,
				    srq->db_index);
		goto number;
	}
	mthca_dp_buf_free(dev, &srq->buf);
	kfree(srq->wrid);
	mthca_db_free(dev, MTHCA_DB_SRQ, srq->db_index);
number:
	mthca_dp_number_put(dev, &dev->srq_table.objs, dev->icm_srqc,
			    srq->srqn);
	kfree(srq);
	return 0;
}

/**
 * mthca_dp_post_srq_recv() - post receive buffers on an SRQ
 * @ibsrq: the SRQ
 * @wr: the list of requests
 * @bad_wr: set to the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, -EINVAL for too many scatter entries, -ENOMEM when full,
 * -EIO after a catastrophic error.
 */
int mthca_dp_post_srq_recv(struct ib_srq *ibsrq, struct ib_recv_wr *wr,
			   struct ib_recv_wr **bad_wr)
{
	struct mthca_srq *srq = to_msrq(ibsrq);
	struct mthca_data_seg *d;
	unsigned long flags;
	int ind, next_ind;
	int nreq, i;
	void *wqe;
	int err = 0;

	spin_lock_irqsave(&srq->lock, flags);
	if (unlikely(READ_ONCE(to_mdev(ibsrq->device)->cmd.dead))) {
		spin_unlock_irqrestore(&srq->lock, flags);
		*bad_wr = wr;
		return -EIO;
	}
	for (nreq = 0; wr; nreq++, wr = wr->next) {
		if (unlikely(wr->num_sge > srq->max_gs)) {
			err = -EINVAL;
			break;
		}
		ind = srq->first_free;
		if (unlikely(ind < 0)) {
			err = -ENOMEM;
			break;
		}
		wqe = srq_wqe(srq, ind);
		next_ind = *srq_link(wqe);
		/* Keep the last free WQE: the HCA's chain continues there. */
		if (unlikely(next_ind < 0)) {
			err = -ENOMEM;
			break;
		}
		((struct mthca_next_seg *)wqe)->ee_nds = 0;
		d = wqe + sizeof(struct mthca_next_seg);
		for (i = 0; i < wr->num_sge; i++, d++) {
			d->byte_count = cpu_to_be32(wr->sg_list[i].length);
			d->lkey = cpu_to_be32(wr->sg_list[i].lkey);
			d->addr = cpu_to_be64(wr->sg_list[i].addr);
		}
		if (i < srq->max_gs) {
			d->byte_count = 0;
			d->lkey = cpu_to_be32(MTHCA_LKEY_END_OF_LIST);
			d->addr = 0;
		}
		srq->wrid[ind] = wr->wr_id;
		srq->first_free = next_ind;
	}
	if (err)
		*bad_wr = wr;
	if (nreq) {
		srq->counter += nreq;
		/* The WQEs before the record that hands them over. */
		wmb();
		*srq->db = cpu_to_be32(srq->counter);
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

/**
 * mthca_init_srq_table() - set up the SRQ table
 * @dev: the device; srq_table.icm is set by the caller (limits.num_srqs
 *	is 0 when the HCA has no SRQs)
 *
 * Return: 0.
 */
int mthca_init_srq_table(struct mthca_dev *dev)
{
	xa_init_flags(&dev->srq_table.objs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	return 0;
}

/**
 * mthca_cleanup_srq_table() - release the SRQ table
 * @dev: the device; all SRQs are destroyed
 */
void mthca_cleanup_srq_table(struct mthca_dev *dev)
{
	xa_destroy(&dev->srq_table.objs);
}
