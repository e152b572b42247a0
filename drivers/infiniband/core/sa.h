/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_sa internals shared by the query code (sa_query.c), the record tables
 * (sa_pack.c) and their KUnit suite.
 */
#ifndef IB_SA_PRIV_H
#define IB_SA_PRIV_H

#include <rdma/ib_sa.h>

/* Class-specific SA status codes, bits 8..15 of the MAD status (IBA 15.2.1.2). */
enum {
	IB_SA_STATUS_NO_RESOURCES	= 1,
	IB_SA_STATUS_REQ_INVALID	= 2,
	IB_SA_STATUS_NO_RECORDS		= 3,
	IB_SA_STATUS_TOO_MANY_RECORDS	= 4,
	IB_SA_STATUS_INVALID_GID	= 5,
	IB_SA_STATUS_INSUFFICIENT_COMP	= 6,
	IB_SA_STATUS_DENIED		= 7,
};

void ib_sa_format_request(struct ib_sa_mad *mad, u8 method, u16 attr_id,
			  ib_sa_comp_mask comp_mask, u64 tid);
int ib_sa_status_errno(const struct ib_sa_mad *mad);

#endif /* IB_SA_PRIV_H */
