// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: completion queues.
 */
#include "mthca_dp.h"

/**
 * mthca_init_cq_table() - set up the device's cq table
 * @dev: the device
 *
 * Return: 0, or a negative errno.
 */
int mthca_init_cq_table(struct mthca_dev *dev)
{
	return 0;
}

/**
 * mthca_cleanup_cq_table() - release the device's cq table
 * @dev: the device
 */
void mthca_cleanup_cq_table(struct mthca_dev *dev)
{
}

/**
 * mthca_cq_completion() - a completion event for a CQ arrived
 * @dev: the device
 * @cqn: the CQ number from the EQE
 */
void mthca_cq_completion(struct mthca_dev *dev, u32 cqn)
{
}

/**
 * mthca_cq_event() - an asynchronous error on a CQ arrived
 * @dev: the device
 * @cqn: the CQ number from the EQE
 * @type: the event
 */
void mthca_cq_event(struct mthca_dev *dev, u32 cqn, enum ib_event_type type)
{
}
