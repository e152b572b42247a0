/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Subnet Management Interface: the directed-route rules of IBA 14.2.2 that
 * every port applies to a directed-route SMP it sends or receives.
 */
#ifndef IB_CORE_SMI_H
#define IB_CORE_SMI_H

#include <linux/types.h>

#include <rdma/ib_smi.h>

/* What to do with a directed-route SMP at this port. */
enum smi_action {
	IB_SMI_DISCARD,		/* drop it */
	IB_SMI_HANDLE,		/* go on: send it, or process it */
};

/* Where a received directed-route SMP goes next. */
enum smi_forward_action {
	IB_SMI_LOCAL,		/* to the local SMA or SM */
	IB_SMI_SEND,		/* back out of the port it came in on */
	IB_SMI_FORWARD,		/* out of another port (switches only) */
};

enum smi_action smi_handle_dr_smp_send(struct ib_smp *smp, bool is_switch,
				       u32 port_num);
enum smi_action smi_handle_dr_smp_recv(struct ib_smp *smp, bool is_switch,
				       u32 port_num, int phys_port_cnt);
enum smi_forward_action smi_check_forward_dr_smp(const struct ib_smp *smp);
int smi_get_fwd_port(const struct ib_smp *smp);

#endif /* IB_CORE_SMI_H */
