// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: address handles.
 */
#include "mthca_dp.h"

/**
 * mthca_init_av_table() - set up the device's av table
 * @dev: the device
 *
 * Return: 0, or a negative errno.
 */
int mthca_init_av_table(struct mthca_dev *dev)
{
	return 0;
}

/**
 * mthca_cleanup_av_table() - release the device's av table
 * @dev: the device
 */
void mthca_cleanup_av_table(struct mthca_dev *dev)
{
}
