/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The core's cached copy of every port's GID table, P_Key table and LMC.
 *
 * The cache is filled when a device registers and refreshed from a work
 * item after the port events that can change it (PORT_ACTIVE, PORT_ERR,
 * LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE).  The
 * readers below take a read lock only: they never sleep and may be called
 * from any context, interrupt handlers included.  Right after an event the
 * cache can lag the hardware until the refresh has run.
 */
#ifndef IB_CACHE_H
#define IB_CACHE_H

#include <rdma/ib_verbs.h>

/**
 * ib_get_cached_gid() - a GID table entry from the cache
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @gid: filled in
 *
 * Return: 0, or -EINVAL for a port or index outside the table.
 */
int ib_get_cached_gid(struct ib_device *device, u8 port_num, int index,
		      union ib_gid *gid);

/**
 * ib_find_cached_gid() - look a GID up in all ports' cached tables
 * @device: the device
 * @gid: the GID to find
 * @port_num: if not NULL, set to the port it was found on
 * @index: if not NULL, set to its index in that port's table
 *
 * Return: 0, or -ENOENT when no port has it.
 */
int ib_find_cached_gid(struct ib_device *device, union ib_gid *gid,
		       u8 *port_num, u16 *index);

/**
 * ib_get_cached_pkey() - a P_Key table entry from the cache
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @pkey: filled in
 *
 * Return: 0, or -EINVAL for a port or index outside the table.
 */
int ib_get_cached_pkey(struct ib_device *device, u8 port_num, int index,
		       u16 *pkey);

/**
 * ib_find_cached_pkey() - look a P_Key up in a port's cached table
 * @device: the device
 * @port_num: the port
 * @pkey: the P_Key; the membership bit (0x8000) is ignored in the match
 * @index: set to its index; a full-member entry wins over a limited one
 *
 * Return: 0, -EINVAL for a bad port, or -ENOENT when the table lacks it.
 */
int ib_find_cached_pkey(struct ib_device *device, u8 port_num, u16 pkey,
			u16 *index);

/**
 * ib_get_cached_lmc() - a port's LID mask control from the cache
 * @device: the device
 * @port_num: the port
 * @lmc: filled in
 *
 * Return: 0, or -EINVAL for a bad port.
 */
int ib_get_cached_lmc(struct ib_device *device, u8 port_num, u8 *lmc);

#endif /* IB_CACHE_H */
