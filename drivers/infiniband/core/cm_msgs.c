// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The CM messages as ib_pack() tables.
 *
 * Every message of IBA 12.6 fills the 232 data bytes after the 24-byte MAD
 * header. Each table below lists its fields in wire order by (32-bit word,
 * first bit in it counted from the most significant, width in bits), the
 * words counted from the start of the data, as the IBA message figures draw
 * them (../shared/facts/wave2-protocols.md §2.1 gives the same layouts by
 * byte: byte = 4 * word + bit / 8). Reserved
 * stretches are rows without a member, so packing writes them as zeros and
 * every table covers its message exactly (the cm_msgs suite checks that).
 * Nothing here sends or keeps anything.
 */

#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/kernel.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include <rdma/ib_pack.h>

#include "cm_msgs.h"

/*
 * A row for member @m (@sz bytes) of struct @s at bit @b of 32-bit word @w
 * of the message, @n bits wide.
 */
#define CM_ROW(s, m, sz, w, b, n) {					\
	.struct_offset_bytes = offsetof(struct s, m),			\
	.struct_size_bytes = (sz),					\
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = #s ":" #m }

/* @n reserved bits from bit @b of word @w. */
#define CM_GAP(w, b, n) {						\
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = "reserved" }

#define REQ(m, sz, w, b, n) CM_ROW(cm_req, m, sz, w, b, n)

/* REQ: 140 bytes of fields, 92 of private data. */
static const struct ib_field cm_req_rows[] = {
	REQ(local_comm_id, 4, 0, 0, 32),
	CM_GAP(1, 0, 8),
	REQ(vendor_id, 4, 1, 8, 24),
	REQ(service_id, 8, 2, 0, 64),
	REQ(local_ca_guid, 8, 4, 0, 64),
	CM_GAP(6, 0, 32),
	REQ(local_qkey, 4, 7, 0, 32),
	REQ(local_qpn, 4, 8, 0, 24),
	REQ(responder_resources, 1, 8, 24, 8),
	REQ(local_eecn, 4, 9, 0, 24),
	REQ(initiator_depth, 1, 9, 24, 8),
	REQ(remote_eecn, 4, 10, 0, 24),
	REQ(remote_cm_response_timeout, 1, 10, 24, 5),
	REQ(transport_type, 1, 10, 29, 2),
	REQ(end_to_end_flow_control, 1, 10, 31, 1),
	REQ(starting_psn, 4, 11, 0, 24),
	REQ(local_cm_response_timeout, 1, 11, 24, 5),
	REQ(retry_count, 1, 11, 29, 3),
	REQ(pkey, 2, 12, 0, 16),
	REQ(path_mtu, 1, 12, 16, 4),
	REQ(rdc_exists, 1, 12, 20, 1),
	REQ(rnr_retry_count, 1, 12, 21, 3),
	REQ(max_cm_retries, 1, 12, 24, 4),
	REQ(srq, 1, 12, 28, 1),
	REQ(extended_transport, 1, 12, 29, 3),
	REQ(primary.local_lid, 2, 13, 0, 16),
	REQ(primary.remote_lid, 2, 13, 16, 16),
	REQ(primary.local_gid, 16, 14, 0, 128),
	REQ(primary.remote_gid, 16, 18, 0, 128),
	REQ(primary.flow_label, 4, 22, 0, 20),
	CM_GAP(22, 20, 6),
	REQ(primary.packet_rate, 1, 22, 26, 6),
	REQ(primary.traffic_class, 1, 23, 0, 8),
	REQ(primary.hop_limit, 1, 23, 8, 8),
	REQ(primary.sl, 1, 23, 16, 4),
	REQ(primary.subnet_local, 1, 23, 20, 1),
	CM_GAP(23, 21, 3),
	REQ(primary.local_ack_timeout, 1, 23, 24, 5),
	CM_GAP(23, 29, 3),
	REQ(alternate.local_lid, 2, 24, 0, 16),
	REQ(alternate.remote_lid, 2, 24, 16, 16),
	REQ(alternate.local_gid, 16, 25, 0, 128),
	REQ(alternate.remote_gid, 16, 29, 0, 128),
	REQ(alternate.flow_label, 4, 33, 0, 20),
	CM_GAP(33, 20, 6),
	REQ(alternate.packet_rate, 1, 33, 26, 6),
	REQ(alternate.traffic_class, 1, 34, 0, 8),
	REQ(alternate.hop_limit, 1, 34, 8, 8),
	REQ(alternate.sl, 1, 34, 16, 4),
	REQ(alternate.subnet_local, 1, 34, 20, 1),
	CM_GAP(34, 21, 3),
	REQ(alternate.local_ack_timeout, 1, 34, 24, 5),
	CM_GAP(34, 29, 3),
	REQ(private_data, 92, 35, 0, 736),
};

/* MRA: 10 bytes of fields, 222 of private data. */
static const struct ib_field cm_mra_rows[] = {
	CM_ROW(cm_mra, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_mra, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_mra, message_mraed, 1, 2, 0, 2),
	CM_GAP(2, 2, 6),
	CM_ROW(cm_mra, service_timeout, 1, 2, 8, 5),
	CM_GAP(2, 13, 3),
	CM_ROW(cm_mra, private_data, 222, 2, 16, 1776),
};

/* REJ: 12 bytes of fields, 72 of ARI, 148 of private data. */
static const struct ib_field cm_rej_rows[] = {
	CM_ROW(cm_rej, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_rej, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_rej, message_rejected, 1, 2, 0, 2),
	CM_GAP(2, 2, 6),
	CM_ROW(cm_rej, ari_length, 1, 2, 8, 7),
	CM_GAP(2, 15, 1),
	CM_ROW(cm_rej, reason, 2, 2, 16, 16),
	CM_ROW(cm_rej, ari, 72, 3, 0, 576),
	CM_ROW(cm_rej, private_data, 148, 21, 0, 1184),
};

#define REP(m, sz, w, b, n) CM_ROW(cm_rep, m, sz, w, b, n)

/*
 * REP: 36 bytes of fields, 196 of private data. The bytes after the QPN,
 * EECN and PSN carry a vendor ID in later IBA releases; we keep them zero.
 */
static const struct ib_field cm_rep_rows[] = {
	REP(local_comm_id, 4, 0, 0, 32),
	REP(remote_comm_id, 4, 1, 0, 32),
	REP(local_qkey, 4, 2, 0, 32),
	REP(local_qpn, 4, 3, 0, 24),
	CM_GAP(3, 24, 8),
	REP(local_eecn, 4, 4, 0, 24),
	CM_GAP(4, 24, 8),
	REP(starting_psn, 4, 5, 0, 24),
	CM_GAP(5, 24, 8),
	REP(responder_resources, 1, 6, 0, 8),
	REP(initiator_depth, 1, 6, 8, 8),
	REP(target_ack_delay, 1, 6, 16, 5),
	REP(failover_accepted, 1, 6, 21, 2),
	REP(end_to_end_flow_control, 1, 6, 23, 1),
	REP(rnr_retry_count, 1, 6, 24, 3),
	REP(srq, 1, 6, 27, 1),
	CM_GAP(6, 28, 4),
	REP(local_ca_guid, 8, 7, 0, 64),
	REP(private_data, 196, 9, 0, 1568),
};

/* RTU: the comm IDs, 224 bytes of private data. */
static const struct ib_field cm_rtu_rows[] = {
	CM_ROW(cm_rtu, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_rtu, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_rtu, private_data, 224, 2, 0, 1792),
};

/* DREQ: the comm IDs, the peer's QPN, 220 bytes of private data. */
static const struct ib_field cm_dreq_rows[] = {
	CM_ROW(cm_dreq, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_dreq, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_dreq, remote_qpn_eecn, 4, 2, 0, 24),
	CM_GAP(2, 24, 8),
	CM_ROW(cm_dreq, private_data, 220, 3, 0, 1760),
};

/* DREP: the comm IDs, 224 bytes of private data. */
static const struct ib_field cm_drep_rows[] = {
	CM_ROW(cm_drep, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_drep, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_drep, private_data, 224, 2, 0, 1792),
};

/* SIDR_REQ: 16 bytes of fields, 216 of private data. */
static const struct ib_field cm_sidr_req_rows[] = {
	CM_ROW(cm_sidr_req, request_id, 4, 0, 0, 32),
	CM_ROW(cm_sidr_req, pkey, 2, 1, 0, 16),
	CM_GAP(1, 16, 16),
	CM_ROW(cm_sidr_req, service_id, 8, 2, 0, 64),
	CM_ROW(cm_sidr_req, private_data, 216, 4, 0, 1728),
};

/* SIDR_REP: 24 bytes of fields, 72 of information, 136 of private data. */
static const struct ib_field cm_sidr_rep_rows[] = {
	CM_ROW(cm_sidr_rep, request_id, 4, 0, 0, 32),
	CM_ROW(cm_sidr_rep, status, 1, 1, 0, 8),
	CM_ROW(cm_sidr_rep, info_length, 1, 1, 8, 8),
	CM_GAP(1, 16, 16),
	CM_ROW(cm_sidr_rep, qpn, 4, 2, 0, 24),
	CM_GAP(2, 24, 8),
	CM_ROW(cm_sidr_rep, service_id, 8, 3, 0, 64),
	CM_ROW(cm_sidr_rep, qkey, 4, 5, 0, 32),
	CM_ROW(cm_sidr_rep, info, 72, 6, 0, 576),
	CM_ROW(cm_sidr_rep, private_data, 136, 24, 0, 1088),
};

#define LAP(m, sz, w, b, n) CM_ROW(cm_lap, m, sz, w, b, n)

/* LAP: 64 bytes of fields (the alternate path from byte 20), 168 of data. */
static const struct ib_field cm_lap_rows[] = {
	LAP(local_comm_id, 4, 0, 0, 32),
	LAP(remote_comm_id, 4, 1, 0, 32),
	CM_GAP(2, 0, 32),
	LAP(remote_qpn_eecn, 4, 3, 0, 24),
	LAP(remote_cm_response_timeout, 1, 3, 24, 5),
	CM_GAP(3, 29, 3),
	CM_GAP(4, 0, 32),
	LAP(alternate.local_lid, 2, 5, 0, 16),
	LAP(alternate.remote_lid, 2, 5, 16, 16),
	LAP(alternate.local_gid, 16, 6, 0, 128),
	LAP(alternate.remote_gid, 16, 10, 0, 128),
	LAP(alternate.flow_label, 4, 14, 0, 20),
	CM_GAP(14, 20, 4),
	LAP(alternate.traffic_class, 1, 14, 24, 8),
	LAP(alternate.hop_limit, 1, 15, 0, 8),
	CM_GAP(15, 8, 2),
	LAP(alternate.packet_rate, 1, 15, 10, 6),
	LAP(alternate.sl, 1, 15, 16, 4),
	LAP(alternate.subnet_local, 1, 15, 20, 1),
	CM_GAP(15, 21, 3),
	LAP(alternate.local_ack_timeout, 1, 15, 24, 5),
	CM_GAP(15, 29, 3),
	LAP(private_data, 168, 16, 0, 1344),
};

/* APR: 12 bytes of fields, 72 of information, 148 of private data. */
static const struct ib_field cm_apr_rows[] = {
	CM_ROW(cm_apr, local_comm_id, 4, 0, 0, 32),
	CM_ROW(cm_apr, remote_comm_id, 4, 1, 0, 32),
	CM_ROW(cm_apr, info_length, 1, 2, 0, 8),
	CM_ROW(cm_apr, ap_status, 1, 2, 8, 8),
	CM_GAP(2, 16, 16),
	CM_ROW(cm_apr, info, 72, 3, 0, 576),
	CM_ROW(cm_apr, private_data, 148, 21, 0, 1184),
};

#define CPI(m, sz, w, b, n) CM_ROW(cm_class_port_info, m, sz, w, b, n)

/* ClassPortInfo: 72 bytes. */
static const struct ib_field cm_cpi_rows[] = {
	CPI(base_version, 1, 0, 0, 8),
	CPI(class_version, 1, 0, 8, 8),
	CPI(capability_mask, 2, 0, 16, 16),
	CPI(capability_mask2, 4, 1, 0, 27),
	CPI(resp_time_value, 1, 1, 27, 5),
	CPI(redirect_gid, 16, 2, 0, 128),
	CPI(redirect_tc, 1, 6, 0, 8),
	CPI(redirect_sl, 1, 6, 8, 4),
	CPI(redirect_fl, 4, 6, 12, 20),
	CPI(redirect_lid, 2, 7, 0, 16),
	CPI(redirect_pkey, 2, 7, 16, 16),
	CM_GAP(8, 0, 8),
	CPI(redirect_qp, 4, 8, 8, 24),
	CPI(redirect_qkey, 4, 9, 0, 32),
	CPI(trap_gid, 16, 10, 0, 128),
	CPI(trap_tc, 1, 14, 0, 8),
	CPI(trap_sl, 1, 14, 8, 4),
	CPI(trap_fl, 4, 14, 12, 20),
	CPI(trap_lid, 2, 15, 0, 16),
	CPI(trap_pkey, 2, 15, 16, 16),
	CPI(trap_hl, 1, 16, 0, 8),
	CPI(trap_qp, 4, 16, 8, 24),
	CPI(trap_qkey, 4, 17, 0, 32),
};

/*
 * struct cm_msg_desc - one message: its attribute, table and sizes
 * @attr_id: the MAD attribute ID
 * @name: for logs and the suites
 * @rows: its field table
 * @nrows: rows in @rows
 * @struct_size: size of its unpacked structure
 * @wire_size: bytes on the wire after the MAD header
 */
struct cm_msg_desc {
	u16			attr_id;
	const char		*name;
	const struct ib_field	*rows;
	int			nrows;
	size_t			struct_size;
	size_t			wire_size;
};

#define CM_DESC(kind, attr, nm, tbl, n, s, bytes)			\
	[kind] = { .attr_id = (attr), .name = (nm), .rows = (tbl),	\
		   .nrows = (n), .struct_size = sizeof(struct s),	\
		   .wire_size = (bytes) }

static const struct cm_msg_desc cm_msg_descs[CM_MSG_KIND_COUNT] = {
	CM_DESC(CM_MSG_CLASS_PORT_INFO, IB_CM_ATTR_CLASS_PORT_INFO, "ClassPortInfo",
		cm_cpi_rows, ARRAY_SIZE(cm_cpi_rows), cm_class_port_info,
		CM_CLASS_PORT_INFO_BYTES),
	CM_DESC(CM_MSG_REQ, IB_CM_ATTR_REQ, "REQ",
		cm_req_rows, ARRAY_SIZE(cm_req_rows), cm_req,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_MRA, IB_CM_ATTR_MRA, "MRA",
		cm_mra_rows, ARRAY_SIZE(cm_mra_rows), cm_mra,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_REJ, IB_CM_ATTR_REJ, "REJ",
		cm_rej_rows, ARRAY_SIZE(cm_rej_rows), cm_rej,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_REP, IB_CM_ATTR_REP, "REP",
		cm_rep_rows, ARRAY_SIZE(cm_rep_rows), cm_rep,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_RTU, IB_CM_ATTR_RTU, "RTU",
		cm_rtu_rows, ARRAY_SIZE(cm_rtu_rows), cm_rtu,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_DREQ, IB_CM_ATTR_DREQ, "DREQ",
		cm_dreq_rows, ARRAY_SIZE(cm_dreq_rows), cm_dreq,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_DREP, IB_CM_ATTR_DREP, "DREP",
		cm_drep_rows, ARRAY_SIZE(cm_drep_rows), cm_drep,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_SIDR_REQ, IB_CM_ATTR_SIDR_REQ, "SIDR_REQ",
		cm_sidr_req_rows, ARRAY_SIZE(cm_sidr_req_rows), cm_sidr_req,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_SIDR_REP, IB_CM_ATTR_SIDR_REP, "SIDR_REP",
		cm_sidr_rep_rows, ARRAY_SIZE(cm_sidr_rep_rows), cm_sidr_rep,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_LAP, IB_CM_ATTR_LAP, "LAP",
		cm_lap_rows, ARRAY_SIZE(cm_lap_rows), cm_lap,
		IB_MGMT_MAD_DATA),
	CM_DESC(CM_MSG_APR, IB_CM_ATTR_APR, "APR",
		cm_apr_rows, ARRAY_SIZE(cm_apr_rows), cm_apr,
		IB_MGMT_MAD_DATA),
};

static const struct cm_msg_desc *cm_desc(enum cm_msg_kind kind)
{
	if ((unsigned int)kind >= CM_MSG_KIND_COUNT)
		return NULL;
	return &cm_msg_descs[kind];
}

/**
 * cm_msg_rows() - a message's field table, for the suites' coverage check
 * @kind: the message
 * @nrows: set to the number of rows
 *
 * Return: the table, or NULL (and *@nrows 0) for an unknown @kind.
 */
const struct ib_field *cm_msg_rows(enum cm_msg_kind kind, int *nrows)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	*nrows = d ? d->nrows : 0;
	return d ? d->rows : NULL;
}

/**
 * cm_msg_kind_of_attr() - which message an attribute ID names
 * @attr_id: host order
 *
 * Return: the &enum cm_msg_kind, or -ENOMSG for an ID the CM does not use.
 */
int cm_msg_kind_of_attr(u16 attr_id)
{
	int k;

	for (k = 0; k < CM_MSG_KIND_COUNT; k++)
		if (cm_msg_descs[k].attr_id == attr_id)
			return k;
	return -ENOMSG;
}

/**
 * cm_msg_attr_id() - the attribute ID of a message
 * @kind: the message
 *
 * Return: the ID in host order, 0 for an unknown @kind.
 */
u16 cm_msg_attr_id(enum cm_msg_kind kind)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	return d ? d->attr_id : 0;
}

/**
 * cm_msg_name() - a message's name
 * @kind: the message
 *
 * Return: "REQ", "REP", ...; "?" for an unknown @kind.
 */
const char *cm_msg_name(enum cm_msg_kind kind)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	return d ? d->name : "?";
}

/**
 * cm_msg_struct_size() - size of a message's unpacked structure
 * @kind: the message
 *
 * Return: bytes, 0 for an unknown @kind.
 */
size_t cm_msg_struct_size(enum cm_msg_kind kind)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	return d ? d->struct_size : 0;
}

/**
 * cm_msg_wire_size() - bytes a message takes after the MAD header
 * @kind: the message
 *
 * Return: 232 for the CM messages, 72 for ClassPortInfo, 0 if unknown.
 */
size_t cm_msg_wire_size(enum cm_msg_kind kind)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	return d ? d->wire_size : 0;
}

/**
 * cm_msg_pack() - a message in wire format
 * @kind: which message @msg is
 * @msg: the unpacked structure of that message
 * @buf: cm_msg_wire_size(@kind) bytes, the data part of the MAD
 *
 * Every bit of @buf is written, reserved ones as zeros. Values wider than
 * their field are cut to its width.
 *
 * Return: 0, or -EINVAL for an unknown @kind.
 */
int cm_msg_pack(enum cm_msg_kind kind, const void *msg, void *buf)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	if (!d)
		return -EINVAL;
	ib_pack(d->rows, d->nrows, msg, buf);
	return 0;
}

/**
 * cm_msg_unpack() - read a message from wire format
 * @kind: which message @buf holds
 * @buf: cm_msg_wire_size(@kind) bytes
 * @msg: the unpacked structure, filled in completely (padding zeroed)
 *
 * Return: 0, or -EINVAL for an unknown @kind.
 */
int cm_msg_unpack(enum cm_msg_kind kind, const void *buf, void *msg)
{
	const struct cm_msg_desc *d = cm_desc(kind);

	if (!d)
		return -EINVAL;
	memset(msg, 0, d->struct_size);
	ib_unpack(d->rows, d->nrows, buf, msg);
	return 0;
}

/**
 * cm_format_mad_hdr() - the MAD header of a CM message we send
 * @hdr: filled in completely
 * @kind: the message
 * @tid: the transaction ID, host order
 *
 * Every CM message is a Send of class version 2 (IBA 12.6.1); the
 * attribute modifier stays 0.
 */
void cm_format_mad_hdr(struct ib_mad_hdr *hdr, enum cm_msg_kind kind, u64 tid)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->base_version = IB_MGMT_BASE_VERSION;
	hdr->mgmt_class = IB_MGMT_CLASS_CM;
	hdr->class_version = IB_CM_CLASS_VERSION;
	hdr->method = IB_MGMT_METHOD_SEND;
	hdr->tid = cpu_to_be64(tid);
	hdr->attr_id = cpu_to_be16(cm_msg_attr_id(kind));
}

/**
 * cm_check_mad_hdr() - which CM message a received MAD header announces
 * @hdr: the header
 *
 * Return: the &enum cm_msg_kind of a CM Send we handle;
 * -EPROTONOSUPPORT for a CM MAD of another class version (answered with
 * REJ INVALID_CLASS_VERSION where a comm ID can be named);
 * -EOPNOTSUPP for another method (ClassPortInfo Gets included: the MAD
 * layer answers those); -ENOMSG for an attribute that is no CM message;
 * -EINVAL for a MAD that is not of the CM class at all.
 */
int cm_check_mad_hdr(const struct ib_mad_hdr *hdr)
{
	int kind;

	if (hdr->base_version != IB_MGMT_BASE_VERSION ||
	    hdr->mgmt_class != IB_MGMT_CLASS_CM)
		return -EINVAL;
	if (hdr->class_version != IB_CM_CLASS_VERSION)
		return -EPROTONOSUPPORT;
	if (hdr->method != IB_MGMT_METHOD_SEND)
		return -EOPNOTSUPP;
	kind = cm_msg_kind_of_attr(be16_to_cpu(hdr->attr_id));
	if (kind == CM_MSG_CLASS_PORT_INFO)
		return -ENOMSG;
	return kind;
}

/* The 5-bit time exponents of the CM: 4.096 us * 2^t, t <= 31. */
#define CM_EXP_MAX	31

static u64 cm_exp_ns(u8 t)
{
	return 4096ULL << min_t(u8, t, CM_EXP_MAX);
}

/**
 * cm_ack_timeout() - the Local ACK Timeout exponent for a path
 * @ca_ack_delay: the sending CA's ACK delay exponent
 * @packet_life_time: the path's PacketLifeTime exponent
 *
 * The smallest exponent whose time covers a round trip on the path plus
 * the CA's ACK delay (2 * PLT + delay), capped at 31.
 *
 * Return: the exponent.
 */
u8 cm_ack_timeout(u8 ca_ack_delay, u8 packet_life_time)
{
	u64 need = 2 * cm_exp_ns(packet_life_time) + cm_exp_ns(ca_ack_delay);
	u8 t = 0;

	while (t < CM_EXP_MAX && cm_exp_ns(t) < need)
		t++;
	return t;
}

/* A path record, as the sender of a REQ sees it, into a REQ path block. */
static void cm_format_path(struct cm_msg_path *out, const struct ib_sa_path_rec *path,
			   u8 ca_ack_delay)
{
	out->local_lid = path->slid;
	out->remote_lid = path->dlid;
	out->local_gid = path->sgid;
	out->remote_gid = path->dgid;
	out->flow_label = path->flow_label;
	out->packet_rate = path->rate;
	out->traffic_class = path->traffic_class;
	out->hop_limit = path->hop_limit;
	out->sl = path->sl;
	/* a path that leaves the subnet has to cross a router */
	out->subnet_local = path->hop_limit <= 1;
	out->local_ack_timeout = cm_ack_timeout(ca_ack_delay, path->packet_life_time);
}

/**
 * cm_format_req() - the REQ for a consumer's ib_send_cm_req() call
 * @m: the REQ, filled in completely
 * @p: the consumer's parameters
 * @local_comm_id: our comm ID for the connection
 * @local_ca_guid: our CA's node GUID
 * @ca_ack_delay: our CA's ACK delay exponent (for the ACK timeouts)
 *
 * Every parameter is checked against its field before anything is
 * written to @m: a value that does not fit is refused, never cut.
 *
 * Return: 0; -EINVAL for a missing primary path, a QP type other than RC
 * or UC, a QPN or PSN wider than 24 bits, a timeout over 31, a retry
 * count over its field, or private data longer than 92 bytes (or given
 * a length without a buffer); -EOPNOTSUPP for peer-to-peer.
 */
int cm_format_req(struct cm_req *m, const struct ib_cm_req_param *p,
		  __be32 local_comm_id, __be64 local_ca_guid, u8 ca_ack_delay)
{
	const struct ib_sa_path_rec *pri = p->primary_path;

	if (!pri || (p->qp_type != IB_QPT_RC && p->qp_type != IB_QPT_UC) ||
	    p->qp_num > 0xffffff || p->starting_psn > 0xffffff ||
	    p->remote_cm_response_timeout > CM_EXP_MAX ||
	    p->local_cm_response_timeout > CM_EXP_MAX ||
	    p->retry_count > 7 || p->rnr_retry_count > 7 ||
	    p->max_cm_retries > 15 ||
	    p->private_data_len > IB_CM_REQ_PRIVATE_DATA_SIZE ||
	    (p->private_data_len && !p->private_data))
		return -EINVAL;
	if (p->peer_to_peer)
		return -EOPNOTSUPP;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = local_comm_id;
	m->service_id = p->service_id;
	m->local_ca_guid = local_ca_guid;
	m->local_qpn = cpu_to_be32(p->qp_num);
	m->responder_resources = p->responder_resources;
	m->initiator_depth = p->initiator_depth;
	m->remote_cm_response_timeout = p->remote_cm_response_timeout;
	m->transport_type = p->qp_type == IB_QPT_RC ? 0 : 1;
	m->end_to_end_flow_control = !!p->flow_control;
	m->starting_psn = cpu_to_be32(p->starting_psn);
	m->local_cm_response_timeout = p->local_cm_response_timeout;
	m->retry_count = p->retry_count;
	m->pkey = pri->pkey;
	m->path_mtu = pri->mtu;
	m->rnr_retry_count = p->rnr_retry_count;
	m->max_cm_retries = p->max_cm_retries;
	m->srq = !!p->srq;
	cm_format_path(&m->primary, pri, ca_ack_delay);
	if (p->alternate_path)
		cm_format_path(&m->alternate, p->alternate_path, ca_ack_delay);
	if (p->private_data_len)
		memcpy(m->private_data, p->private_data, p->private_data_len);
	return 0;
}

/**
 * cm_format_lap() - the LAP for a consumer's ib_send_cm_lap() call
 * @m: the LAP, filled in completely
 * @local_comm_id: our comm ID for the connection
 * @remote_comm_id: the peer's
 * @remote_qpn: the peer's QP (24 bits), LAP:RemoteQPN/EECN
 * @remote_cm_response_timeout: how long we wait for the peer's CM
 *	(5 bits), the time it gave us for its answers
 * @alt: the alternate path, as we see it (SLID ours, DLID the peer's)
 * @ca_ack_delay: our CA's ACK delay exponent (for the ACK timeout)
 * @pdata: private data, or NULL
 * @pdata_len: up to IB_CM_LAP_PRIVATE_DATA_SIZE
 *
 * The alternate path block has the layout of the REQ's (IBA 12.6.13):
 * the "local" fields are the sender's end of the path.
 *
 * Return: 0; -EINVAL for no path, a QPN over 24 bits, a timeout over 31,
 * or private data over 168 bytes (or a length without a buffer).
 */
int cm_format_lap(struct cm_lap *m, __be32 local_comm_id, __be32 remote_comm_id,
		  u32 remote_qpn, u8 remote_cm_response_timeout,
		  const struct ib_sa_path_rec *alt, u8 ca_ack_delay,
		  const void *pdata, u8 pdata_len)
{
	if (!alt || remote_qpn > 0xffffff ||
	    remote_cm_response_timeout > CM_EXP_MAX ||
	    pdata_len > IB_CM_LAP_PRIVATE_DATA_SIZE || (pdata_len && !pdata))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->local_comm_id = local_comm_id;
	m->remote_comm_id = remote_comm_id;
	m->remote_qpn_eecn = cpu_to_be32(remote_qpn);
	m->remote_cm_response_timeout = remote_cm_response_timeout;
	cm_format_path(&m->alternate, alt, ca_ack_delay);
	if (pdata_len)
		memcpy(m->private_data, pdata, pdata_len);
	return 0;
}
