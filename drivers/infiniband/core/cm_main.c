// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_cm: the InfiniBand communication manager (Documentation/cm.md).
 *
 * This slice holds the CM message tables (cm_msgs.c) and the connection
 * state machine (cm_state.c), both pure and driven by the KUnit suites.
 * The part that registers the CM class agent on each port and sends and
 * receives CM MADs is not written yet, so the module exports nothing and
 * implements none of the calls of <rdma/ib_cm.h>.
 */

#include <linux/module.h>

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand communication manager (wire tables and state machine only)");
MODULE_LICENSE("Dual BSD/GPL");
