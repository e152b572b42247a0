/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Subnet Management Packets (IBA 14.2.1): the MAD layout that subnet
 * managers and agents exchange, including the directed-route part.
 */
#ifndef IB_SMI_H
#define IB_SMI_H

#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/types.h>

#include <rdma/ib_verbs.h>

#define IB_SMP_DATA_SIZE	64
#define IB_SMP_MAX_PATH_HOPS	64	/* path arrays are indexed 0..63 */

/**
 * struct ib_smp - a subnet management packet, 256 bytes on the wire
 * @base_version: MAD base version (1)
 * @mgmt_class: LID-routed (0x01) or directed-route (0x81) SM class
 * @class_version: SM class version (1)
 * @method: Get, Set, GetResp, Trap, ...
 * @status: MAD status; its top bit is the D (direction) bit of DR SMPs
 * @hop_ptr: index of the current hop in @initial_path or @return_path
 * @hop_cnt: number of directed-route hops (0..63)
 * @tid: transaction ID
 * @attr_id: attribute ID
 * @resv: reserved
 * @attr_mod: attribute modifier
 * @mkey: management key
 * @dr_slid: directed-route source LID
 * @dr_dlid: directed-route destination LID
 * @reserved: reserved
 * @data: attribute data
 * @initial_path: output ports of the outbound path, entry 0 unused
 * @return_path: input ports recorded on the way out, entry 0 unused
 */
struct ib_smp {
	/* bytes 0-23: MAD header, DR fields in place of ClassSpecific */
	u8 base_version, mgmt_class, class_version, method;
	__be16 status;
	u8 hop_ptr, hop_cnt;
	__be64 tid;
	__be16 attr_id, resv;
	__be32 attr_mod;
	/* bytes 24-63: SMP header */
	__be64 mkey;
	__be16 dr_slid, dr_dlid;
	u8 reserved[28];
	/* bytes 64-255: attribute data and the two paths */
	u8 data[IB_SMP_DATA_SIZE];
	u8 initial_path[IB_SMP_MAX_PATH_HOPS], return_path[IB_SMP_MAX_PATH_HOPS];
} __packed;

static_assert(sizeof(struct ib_smp) == 256);

/* The D bit: set on the return trip of a directed-route SMP. */
#define IB_SMP_DIRECTION	cpu_to_be16(0x8000)

/**
 * ib_get_smp_direction() - which way a directed-route SMP travels
 * @smp: the SMP
 *
 * Return: 0 on the outbound trip, nonzero on the return trip.
 */
static inline u8 ib_get_smp_direction(const struct ib_smp *smp)
{
	return (smp->status & IB_SMP_DIRECTION) ? 1 : 0;
}

#endif /* IB_SMI_H */
