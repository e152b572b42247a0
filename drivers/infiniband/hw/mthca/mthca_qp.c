// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: queue pairs.
 */
#include "mthca_dp.h"

/**
 * mthca_init_qp_table() - set up the device's qp table
 * @dev: the device
 *
 * Return: 0, or a negative errno.
 */
int mthca_init_qp_table(struct mthca_dev *dev)
{
	return 0;
}

/**
 * mthca_cleanup_qp_table() - release the device's qp table
 * @dev: the device
 */
void mthca_cleanup_qp_table(struct mthca_dev *dev)
{
}

/**
 * mthca_qp_event() - an asynchronous event on a QP arrived
 * @dev: the device
 * @qpn: the QP number from the EQE
 * @type: the event
 */
void mthca_qp_event(struct mthca_dev *dev, u32 qpn, enum ib_event_type type)
{
}

/**
 * mthca_dp_init_verbs() - fill in the data-path methods of a device
 * @ibdev: the device, before registration
 */
void mthca_dp_init_verbs(struct ib_device *ibdev)
{
}
