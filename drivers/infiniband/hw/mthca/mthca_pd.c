// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Protection domains.  A PD is a number the HCA compares between an
 * object (QP, MR, AV) and the memory it touches.  Kernel PDs also get a
 * region without translation over all of memory.
 */

#include "mthca_dev.h"

/* PD numbers handed out; PDs take no ICM. */
#define MTHCA_NUM_PDS	BIT(15)

/**
 * mthca_pd_alloc() - set up a PD
 * @dev: the device
 * @privileged: a kernel PD (gets @pd->ntmr)
 * @pd: the PD
 *
 * Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_pd_alloc(struct mthca_dev *dev, bool privileged,
		   struct mthca_pd *pd)
{
	int ret;

	pd->privileged = privileged;
	pd->pdn = mthca_bitmap_get(&dev->pd_bitmap);
	if (pd->pdn == MTHCA_BITMAP_NONE)
		return -ENOMEM;

	if (privileged) {
		ret = mthca_mr_alloc_notrans(dev, pd->pdn,
					     MTHCA_MPT_LOCAL_READ |
					     MTHCA_MPT_LOCAL_WRITE,
					     &pd->ntmr);
		if (ret) {
			mthca_bitmap_put(&dev->pd_bitmap, pd->pdn);
			return ret;
		}
	}
	return 0;
}

/**
 * mthca_pd_free() - release a PD
 * @dev: the device
 * @pd: the PD
 *
 * Sleeps.
 */
void mthca_pd_free(struct mthca_dev *dev, struct mthca_pd *pd)
{
	if (pd->privileged)
		mthca_mr_free(dev, &pd->ntmr);
	mthca_bitmap_put(&dev->pd_bitmap, pd->pdn);
}

/**
 * mthca_pd_table_init() - PD numbers
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_pd_table_init(struct mthca_dev *dev)
{
	dev->limits.num_pds = MTHCA_NUM_PDS;
	return mthca_bitmap_init(&dev->pd_bitmap, MTHCA_NUM_PDS,
				 (1 << 24) - 1, dev->limits.reserved_pds, 0);
}

/**
 * mthca_pd_table_cleanup() - undo mthca_pd_table_init()
 * @dev: the device
 */
void mthca_pd_table_cleanup(struct mthca_dev *dev)
{
	mthca_bitmap_cleanup(&dev->pd_bitmap);
}
