// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: multicast group attachment.
 *
 * The HCA finds the QPs of a multicast group in the MGM table in ICM:
 * entries 0 .. num_mgms - 1 are hash buckets (MGID_HASH names one), the
 * num_amgms entries after them (the AMGM) extend bucket chains through
 * each entry's next index.  An entry holds one MGID and up to 56 QPs.
 * Everything is read and written with firmware commands, under the table
 * mutex.
 */
#include <linux/slab.h>
#include <linux/string.h>

#include "mthca_dev.h"

#define MTHCA_MGM_BYTES		256
#define MTHCA_MGM_QPS		(4 * (MTHCA_MGM_BYTES / 16 - 2))
#define MTHCA_MGM_QP_VALID	BIT(31)

/* One MGM entry as READ_MGM/WRITE_MGM move it. */
struct mthca_mgm {
	__be32	next;			/* next entry of the chain, << 6 */
	__be32	reserved[3];
	u8	gid[16];
	__be32	qp[MTHCA_MGM_QPS];	/* valid [31], QP number [23:0] */
};

static int mgm_read(struct mthca_dev *dev, u32 index,
		    struct mthca_mailbox *box)
{
	return mthca_READ_MGM(dev, index, box);
}

static int mgm_write(struct mthca_dev *dev, u32 index,
		     struct mthca_mailbox *box)
{
	return mthca_WRITE_MGM(dev, index, box);
}

static u32 mgm_next(const struct mthca_mgm *mgm)
{
	return be32_to_cpu(mgm->next) >> 6;
}

/*
 * Walk @gid's hash chain, leaving in @box the entry that holds @gid.
 * Return: 0 with *@index the entry (the bucket itself when empty) and
 * *@prev the entry before it (-1 for the bucket), or 0 with *@index -1
 * when @gid is not in a non-empty chain (*@prev then is its last entry,
 * which @box holds); or a negative errno.
 */
static int mgm_find(struct mthca_dev *dev, const u8 *gid,
		    struct mthca_mailbox *box, int *prev, int *index)
{
	struct mthca_mgm *mgm = box->buf;
	struct mthca_mailbox *hbox;
	u16 hash = 0;
	int err;

	hbox = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(hbox))
		return PTR_ERR(hbox);
	memcpy(hbox->buf, gid, 16);
	err = mthca_MGID_HASH(dev, hbox, &hash);
	mthca_mailbox_free(dev, hbox);
	if (err)
		return err;

	*prev = -1;
	*index = hash;
	for (;;) {
		err = mgm_read(dev, *index, box);
		if (err)
			return err;
		if (!memchr_inv(mgm->gid, 0, 16)) {
			/* only a bucket may be empty */
			return *prev == -1 ? 0 : -EIO;
		}
		if (!memcmp(mgm->gid, gid, 16))
			return 0;
		*prev = *index;
		*index = mgm_next(mgm);
		if (!*index)
			break;
	}
	*index = -1;
	return 0;
}

/*
 * Look @gid's group up and apply @change to it for @ibqp. @change runs
 * with the table mutex held: @box holds the entry mgm_find() left, @prev
 * and @index are as it set them, @me is the QP's entry (valid bit set).
 */
static int mgm_change(struct ib_qp *ibqp, const union ib_gid *gid,
		      int (*change)(struct mthca_dev *dev,
				    struct mthca_mailbox *box,
				    const union ib_gid *gid, __be32 me,
				    int prev, int index))
{
	struct mthca_dev *dev = to_mdev(ibqp->device);
	struct mthca_mcg_table *tab = &dev->mcg_table;
	__be32 me = cpu_to_be32(to_mqp(ibqp)->qpn | MTHCA_MGM_QP_VALID);
	struct mthca_mailbox *box;
	int index, prev;
	int err;

	box = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(box))
		return PTR_ERR(box);

	mutex_lock(&tab->mutex);
	err = mgm_find(dev, gid->raw, box, &prev, &index);
	if (!err)
		err = change(dev, box, gid, me, prev, index);
	mutex_unlock(&tab->mutex);
	mthca_mailbox_free(dev, box);
	return err;
}

static int mgm_add_qp(struct mthca_dev *dev, struct mthca_mailbox *box,
		      const union ib_gid *gid, __be32 me, int prev, int index)
{
	struct mthca_mcg_table *tab = &dev->mcg_table;
	struct mthca_mgm *mgm = box->buf;
	int new_entry = -1;
	int i, err = 0;

	if (index == -1) {
		/* Chain a fresh AMGM entry after the last one. */
		new_entry = ida_alloc_range(&tab->amgm, dev->limits.num_mgms,
					    dev->limits.num_mgms +
					    dev->limits.num_amgms - 1,
					    GFP_KERNEL);
		if (new_entry < 0)
			return -ENOMEM;
		index = new_entry;
		memset(mgm, 0, sizeof(*mgm));
	}
	if (!memchr_inv(mgm->gid, 0, 16))
		memcpy(mgm->gid, gid->raw, 16);

	for (i = 0; i < MTHCA_MGM_QPS; i++) {
		if (mgm->qp[i] == me)
			goto out;
		if (!(mgm->qp[i] & cpu_to_be32(MTHCA_MGM_QP_VALID)))
			break;
	}
	if (i == MTHCA_MGM_QPS) {
		err = -ENOMEM;
		goto out;
	}
	mgm->qp[i] = me;
	err = mgm_write(dev, index, box);
	if (err || new_entry < 0)
		goto out;

	/* Link the new entry from the end of the chain. */
	err = mgm_read(dev, prev, box);
	if (err)
		goto out;
	mgm->next = cpu_to_be32(new_entry << 6);
	err = mgm_write(dev, prev, box);
out:
	if (err && new_entry >= 0)
		ida_free(&tab->amgm, new_entry);
	return err;
}

/**
 * mthca_dp_attach_mcast() - add a QP to a multicast group
 * @ibqp: the QP (UD)
 * @gid: the group's MGID
 * @lid: the group's MLID (the HCA matches on the MGID)
 *
 * Return: 0 (also when the QP is attached already), -ENOMEM when the
 * group or the AMGM is full, or a firmware error.
 */
int mthca_dp_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return mgm_change(ibqp, gid, mgm_add_qp);
}

static int mgm_remove_qp(struct mthca_dev *dev, struct mthca_mailbox *box,
			 const union ib_gid *gid, __be32 me, int prev,
			 int index)
{
	struct mthca_mcg_table *tab = &dev->mcg_table;
	struct mthca_mgm *mgm = box->buf;
	int i, pos = -1;
	u32 next;
	int err;

	if (index == -1 || !memchr_inv(mgm->gid, 0, 16))
		return -EINVAL;
	for (i = 0; i < MTHCA_MGM_QPS; i++) {
		if (mgm->qp[i] == me)
			pos = i;
		if (!(mgm->qp[i] & cpu_to_be32(MTHCA_MGM_QP_VALID)))
			break;
	}
	if (pos < 0)
		return -EINVAL;
	/* Keep the QP list dense: the last one fills the hole. */
	mgm->qp[pos] = mgm->qp[i - 1];
	mgm->qp[i - 1] = 0;
	err = mgm_write(dev, index, box);
	if (err || i > 1)
		return err;

	/* The group is empty: take its entry out of the chain. */
	next = mgm_next(mgm);
	if (prev == -1) {
		if (next) {
			err = mgm_read(dev, next, box);
			if (err)
				return err;
		} else {
			memset(mgm->gid, 0, 16);
		}
		err = mgm_write(dev, index, box);
		if (!err && next)
			ida_free(&tab->amgm, next);
	} else {
		err = mgm_read(dev, prev, box);
		if (err)
			return err;
		mgm->next = cpu_to_be32(next << 6);
		err = mgm_write(dev, prev, box);
		if (!err)
			ida_free(&tab->amgm, index);
	}
	return err;
}

/**
 * mthca_dp_detach_mcast() - remove a QP from a multicast group
 * @ibqp: the QP
 * @gid: the group's MGID
 * @lid: the group's MLID
 *
 * When the group loses its last QP its entry leaves the chain: a bucket
 * takes over the next entry's contents, an AMGM entry is unlinked; freed
 * AMGM entries return to the allocator.
 *
 * Return: 0, -EINVAL when the QP is not in the group, or a firmware error.
 */
int mthca_dp_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return mgm_change(ibqp, gid, mgm_remove_qp);
}

/**
 * mthca_init_mcg_table() - set up multicast group state
 * @dev: the device; the MGM table is mapped in ICM by the caller
 *
 * Return: 0.
 */
int mthca_init_mcg_table(struct mthca_dev *dev)
{
	mutex_init(&dev->mcg_table.mutex);
	ida_init(&dev->mcg_table.amgm);
	return 0;
}

/**
 * mthca_cleanup_mcg_table() - release multicast group state
 * @dev: the device
 */
void mthca_cleanup_mcg_table(struct mthca_dev *dev)
{
	ida_destroy(&dev->mcg_table.amgm);
	mutex_destroy(&dev->mcg_table.mutex);
}
