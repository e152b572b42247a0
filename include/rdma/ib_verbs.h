/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * InfiniBand verbs: the types shared by the core and its users.
 *
 * Only what the core has needed so far is here; the verbs interface grows
 * into this file as the core does.
 */
#ifndef IB_VERBS_H
#define IB_VERBS_H

#include <linux/types.h>
#include <asm/byteorder.h>

/**
 * union ib_gid - a 128-bit global identifier, in network byte order
 * @raw: the 16 bytes as they appear on the wire
 * @global: the same bytes as subnet prefix and interface ID
 * @global.subnet_prefix: upper 64 bits
 * @global.interface_id: lower 64 bits (a port GUID for the default GID)
 */
union ib_gid {
	u8 raw[16];
	struct {
		__be64 subnet_prefix, interface_id;
	} global;
};

/* LID 0xFFFF: the permissive LID, accepted by any port (IBA 4.1.3). */
#define IB_LID_PERMISSIVE	cpu_to_be16(0xffff)

#endif /* IB_VERBS_H */
