// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: shared receive queues.
 */
#include "mthca_dp.h"

/**
 * mthca_init_srq_table() - set up the device's srq table
 * @dev: the device
 *
 * Return: 0, or a negative errno.
 */
int mthca_init_srq_table(struct mthca_dev *dev)
{
	return 0;
}

/**
 * mthca_cleanup_srq_table() - release the device's srq table
 * @dev: the device
 */
void mthca_cleanup_srq_table(struct mthca_dev *dev)
{
}

/**
 * mthca_srq_event() - an asynchronous event on an SRQ arrived
 * @dev: the device
 * @srqn: the SRQ number from the EQE
 * @type: the event
 */
void mthca_srq_event(struct mthca_dev *dev, u32 srqn, enum ib_event_type type)
{
}
