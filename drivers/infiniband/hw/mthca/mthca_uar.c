// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User access regions: 4 KiB doorbell pages in BAR2, one per UAR number.
 * The kernel takes one for its own doorbells; user contexts would take
 * one each.
 */

#include "mthca_dev.h"

/**
 * mthca_uar_alloc() - take a UAR
 * @dev: the device
 * @uar: receives the number and page frame
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_uar_alloc(struct mthca_dev *dev, struct mthca_uar *uar)
{
	u32 n = mthca_bitmap_get(&dev->uar_bitmap);

	if (n == MTHCA_BITMAP_NONE)
		return -ENOMEM;
	uar->num = n;
	return 0;
}

/**
 * mthca_uar_pfn() - the page frame of a UAR
 * @dev: the device
 * @uar: what mthca_uar_alloc() filled in
 *
 * Return: the pfn of page @uar->num of BAR2 (the UAR BAR).
 */
unsigned long mthca_uar_pfn(struct mthca_dev *dev, const struct mthca_uar *uar)
{
	return PHYS_PFN(pci_resource_start(dev->pdev, 2)) + uar->num;
}

/**
 * mthca_uar_free() - give a UAR back
 * @dev: the device
 * @uar: what mthca_uar_alloc() filled in
 */
void mthca_uar_free(struct mthca_dev *dev, struct mthca_uar *uar)
{
	mthca_bitmap_put(&dev->uar_bitmap, uar->num);
}

/**
 * mthca_uar_table_init() - UAR numbers, minus those the firmware keeps
 * @dev: the device, with its limits known
 *
 * Return: 0 or a negative errno.
 */
int mthca_uar_table_init(struct mthca_dev *dev)
{
	return mthca_bitmap_init(&dev->uar_bitmap, dev->limits.num_uars,
				 dev->limits.num_uars - 1,
				 dev->limits.reserved_uars, 0);
}

/**
 * mthca_uar_table_cleanup() - undo mthca_uar_table_init()
 * @dev: the device
 */
void mthca_uar_table_cleanup(struct mthca_dev *dev)
{
	mthca_bitmap_cleanup(&dev->uar_bitmap);
}
