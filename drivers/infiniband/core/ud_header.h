/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The IBA header layouts behind the UD header helpers, shared with the
 * KUnit suites that check them against hand-made packets.
 */
#ifndef IB_CORE_UD_HEADER_H
#define IB_CORE_UD_HEADER_H

#include <rdma/ib_pack.h>

/**
 * struct ib_hdr_layout - one header: its field table and its length
 * @name: header name, for messages
 * @fields: the field table, covering every bit of the header
 * @count: rows in @fields
 * @bytes: header length on the wire
 */
struct ib_hdr_layout {
	const char *name;
	const struct ib_field *fields;
	int count;
	int bytes;
};

/* Each describes the matching struct ib_unpacked_*; ImmDt describes
 * struct ib_ud_header itself (its immediate_data member).
 */
extern const struct ib_hdr_layout ib_lrh_layout;
extern const struct ib_hdr_layout ib_grh_layout;
extern const struct ib_hdr_layout ib_bth_layout;
extern const struct ib_hdr_layout ib_deth_layout;
extern const struct ib_hdr_layout ib_immdt_layout;

#endif /* IB_CORE_UD_HEADER_H */
