// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The SA records as ib_pack() tables, and the SA MAD header.
 *
 * Each table lists a record's components in wire order with their (word,
 * first bit, width) from the IBA figures; reserved stretches are rows with
 * no member, so packing writes them as zeros. Nothing here sends anything:
 * these functions are pure and are what the ib_sa_pack KUnit suite checks.
 */

#include <linux/errno.h>
#include <linux/export.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include <rdma/ib_pack.h>
#include <rdma/ib_sa.h>

#include "sa.h"

/*
 * A row for member @m of struct @s, @sz bytes in the structure, at (@w, @b)
 * and @n bits wide on the wire. The size is spelled out (sizeof_field()
 * would name @m twice); a wrong one makes ib_pack() refuse the row, which
 * the suite's round trips would see.
 */
#define SA_ROW(s, m, sz, w, b, n) {					\
	.struct_offset_bytes = offsetof(struct s, m),			\
	.struct_size_bytes = (sz),					\
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = #s ":" #m }

/* A reserved stretch of @n bits at (@w, @b). */
#define SA_GAP(w, b, n) {						\
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = "reserved" }

#define PR(m, sz, w, b, n) SA_ROW(ib_sa_path_rec, m, sz, w, b, n)
#define MC(m, sz, w, b, n) SA_ROW(ib_sa_mcmember_rec, m, sz, w, b, n)
#define SR(m, sz, w, b, n) SA_ROW(ib_sa_service_rec, m, sz, w, b, n)

/* PathRecord, 16 words. */
static const struct ib_field sa_path_rows[] = {
	PR(service_id, 8, 0, 0, 64),
	PR(dgid, 16, 2, 0, 128),
	PR(sgid, 16, 6, 0, 128),
	PR(dlid, 2, 10, 0, 16),		PR(slid, 2, 10, 16, 16),
	PR(raw_traffic, 1, 11, 0, 1),	SA_GAP(11, 1, 3),
	PR(flow_label, 4, 11, 4, 20),	PR(hop_limit, 1, 11, 24, 8),
	PR(traffic_class, 1, 12, 0, 8),	PR(reversible, 1, 12, 8, 1),
	PR(numb_path, 1, 12, 9, 7),	PR(pkey, 2, 12, 16, 16),
	PR(qos_class, 2, 13, 0, 12),	PR(sl, 1, 13, 12, 4),
	PR(mtu_selector, 1, 13, 16, 2),	PR(mtu, 1, 13, 18, 6),
	PR(rate_selector, 1, 13, 24, 2),	PR(rate, 1, 13, 26, 6),
	PR(packet_life_time_selector, 1, 14, 0, 2),
	PR(packet_life_time, 1, 14, 2, 6),
	PR(preference, 1, 14, 8, 8),	SA_GAP(14, 16, 16),
	SA_GAP(15, 0, 32),
};

/* MCMemberRecord, 13 words. */
static const struct ib_field sa_mcmember_rows[] = {
	MC(mgid, 16, 0, 0, 128),
	MC(port_gid, 16, 4, 0, 128),
	MC(qkey, 4, 8, 0, 32),
	MC(mlid, 2, 9, 0, 16),		MC(mtu_selector, 1, 9, 16, 2),
	MC(mtu, 1, 9, 18, 6),		MC(traffic_class, 1, 9, 24, 8),
	MC(pkey, 2, 10, 0, 16),		MC(rate_selector, 1, 10, 16, 2),
	MC(rate, 1, 10, 18, 6),
	MC(packet_life_time_selector, 1, 10, 24, 2),
	MC(packet_life_time, 1, 10, 26, 6),
	MC(sl, 1, 11, 0, 4),		MC(flow_label, 4, 11, 4, 20),
	MC(hop_limit, 1, 11, 24, 8),
	MC(scope, 1, 12, 0, 4),		MC(join_state, 1, 12, 4, 4),
	MC(proxy_join, 1, 12, 8, 1),	SA_GAP(12, 9, 23),
};

/* ServiceRecord, 44 words. */
static const struct ib_field sa_service_rows[] = {
	SR(id, 8, 0, 0, 64),
	SR(gid, 16, 2, 0, 128),
	SR(pkey, 2, 6, 0, 16),		SA_GAP(6, 16, 16),
	SR(lease, 4, 7, 0, 32),
	SR(key, 16, 8, 0, 128),
	SR(name, 64, 12, 0, 512),
	SR(data8, 16, 28, 0, 128),
	SR(data16, 16, 32, 0, 128),
	SR(data32, 16, 36, 0, 128),
	SR(data64, 16, 40, 0, 128),
};

/**
 * ib_sa_pack_path_rec() - a PathRecord in wire format
 * @rec: the record
 * @buf: IB_SA_PATH_REC_BYTES to fill, reserved bits included
 */
void ib_sa_pack_path_rec(const struct ib_sa_path_rec *rec, void *buf)
{
	ib_pack(sa_path_rows, ARRAY_SIZE(sa_path_rows), rec, buf);
}
EXPORT_SYMBOL(ib_sa_pack_path_rec);

/**
 * ib_sa_unpack_path_rec() - read a PathRecord from wire format
 * @buf: IB_SA_PATH_REC_BYTES of record
 * @rec: filled in completely
 */
void ib_sa_unpack_path_rec(const void *buf, struct ib_sa_path_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	ib_unpack(sa_path_rows, ARRAY_SIZE(sa_path_rows), buf, rec);
}
EXPORT_SYMBOL(ib_sa_unpack_path_rec);

/**
 * ib_sa_pack_mcmember_rec() - an MCMemberRecord in wire format
 * @rec: the record
 * @buf: IB_SA_MCMEMBER_REC_BYTES to fill, reserved bits included
 */
void ib_sa_pack_mcmember_rec(const struct ib_sa_mcmember_rec *rec, void *buf)
{
	ib_pack(sa_mcmember_rows, ARRAY_SIZE(sa_mcmember_rows), rec, buf);
}
EXPORT_SYMBOL(ib_sa_pack_mcmember_rec);

/**
 * ib_sa_unpack_mcmember_rec() - read an MCMemberRecord from wire format
 * @buf: IB_SA_MCMEMBER_REC_BYTES of record
 * @rec: filled in completely
 */
void ib_sa_unpack_mcmember_rec(const void *buf, struct ib_sa_mcmember_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	ib_unpack(sa_mcmember_rows, ARRAY_SIZE(sa_mcmember_rows), buf, rec);
}
EXPORT_SYMBOL(ib_sa_unpack_mcmember_rec);

/**
 * ib_sa_pack_service_rec() - a ServiceRecord in wire format
 * @rec: the record
 * @buf: IB_SA_SERVICE_REC_BYTES to fill, reserved bits included
 */
void ib_sa_pack_service_rec(const struct ib_sa_service_rec *rec, void *buf)
{
	ib_pack(sa_service_rows, ARRAY_SIZE(sa_service_rows), rec, buf);
}
EXPORT_SYMBOL(ib_sa_pack_service_rec);

/**
 * ib_sa_unpack_service_rec() - read a ServiceRecord from wire format
 * @buf: IB_SA_SERVICE_REC_BYTES of record
 * @rec: filled in completely
 */
void ib_sa_unpack_service_rec(const void *buf, struct ib_sa_service_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	ib_unpack(sa_service_rows, ARRAY_SIZE(sa_service_rows), buf, rec);
}
EXPORT_SYMBOL(ib_sa_unpack_service_rec);

/**
 * ib_sa_format_request() - the headers of an SA request
 * @mad: the whole MAD; cleared first, the record goes into @mad->data after
 * @method: SubnAdm method
 * @attr_id: the record's attribute ID, host order
 * @comp_mask: the component mask
 * @tid: the transaction ID, host order (the agent's hi_tid in the top half)
 *
 * The RMPP header stays zero: requests from ib_sa fit in one MAD.
 */
void ib_sa_format_request(struct ib_sa_mad *mad, u8 method, u16 attr_id,
			  ib_sa_comp_mask comp_mask, u64 tid)
{
	memset(mad, 0, sizeof(*mad));
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
	mad->mad_hdr.class_version = IB_SA_CLASS_VERSION;
	mad->mad_hdr.method = method;
	mad->mad_hdr.tid = cpu_to_be64(tid);
	mad->mad_hdr.attr_id = cpu_to_be16(attr_id);
	mad->sa_hdr.comp_mask = comp_mask;
}

/**
 * ib_sa_status_errno() - what a response's status means for the caller
 * @mad: the response
 *
 * Return: 0 for success; -ENOENT when the SA has no matching record,
 * -EBUSY when it asks to be retried later, -ENOMEM when it lacks resources,
 * -EACCES when it denied the request, -EINVAL for any other error.
 */
int ib_sa_status_errno(const struct ib_sa_mad *mad)
{
	u16 status = be16_to_cpu(mad->mad_hdr.status);

	if (!status)
		return 0;
	if (status & IB_MGMT_MAD_STATUS_BUSY)
		return -EBUSY;
	switch ((status >> 8) & 0x7f) {
	case IB_SA_STATUS_NO_RECORDS:
		return -ENOENT;
	case IB_SA_STATUS_NO_RESOURCES:
		return -ENOMEM;
	case IB_SA_STATUS_DENIED:
		return -EACCES;
	default:
		return -EINVAL;
	}
}
