// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Headers of UD SEND packets: LRH, optional GRH, BTH, DETH and optional
 * ImmDt, as senders of MADs and IPoIB datagrams build them for hardware
 * that takes the headers from software, and as receivers parse them.
 *
 * The layouts are tables of struct ib_field, one row per IBA field, written
 * as (word, first bit, width) exactly as the IBA figures draw them.
 */

#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/string.h>

#include <rdma/ib_pack.h>

#include "ud_header.h"

/*
 * A row for member @m of struct @s, of @sz bytes (u8: 1, __be16: 2, __be32:
 * 4, a GID: 16): wire word @w, first bit @b, @n bits. The member size is
 * written out rather than taken with sizeof_field(), which would name @m
 * twice; the KUnit suites check every row against its member.
 */
#define IB_ROW(s, m, sz, w, b, n) {					\
	.struct_offset_bytes = offsetof(s, m), .struct_size_bytes = (sz), \
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = #s "." #m }

/* A reserved row: sent as zeros, ignored on receive. */
#define IB_ROW_RSVD(w, b, n) {						\
	.offset_words = (w), .offset_bits = (b), .size_bits = (n),	\
	.field_name = "reserved" }

#define LRH(m, sz, w, b, n)	IB_ROW(struct ib_unpacked_lrh, m, sz, w, b, n)
#define GRH(m, sz, w, b, n)	IB_ROW(struct ib_unpacked_grh, m, sz, w, b, n)
#define BTH(m, sz, w, b, n)	IB_ROW(struct ib_unpacked_bth, m, sz, w, b, n)
#define DETH(m, sz, w, b, n)	IB_ROW(struct ib_unpacked_deth, m, sz, w, b, n)

/* IBA 7.7, figure "Local Route Header": member, bytes, word, bit, width */
static const struct ib_field lrh_rows[] = {
	LRH(virtual_lane,	1, 0,  0,  4),
	LRH(link_version,	1, 0,  4,  4),
	LRH(service_level,	1, 0,  8,  4),
	IB_ROW_RSVD(0, 12, 2),
	LRH(link_next_header,	1, 0, 14,  2),
	LRH(destination_lid,	2, 0, 16, 16),
	IB_ROW_RSVD(1, 0, 5),
	LRH(packet_length,	2, 1,  5, 11),
	LRH(source_lid,		2, 1, 16, 16),
};

/* IBA 8.3, figure "Global Route Header" */
static const struct ib_field grh_rows[] = {
	GRH(ip_version,		 1, 0,  0,   4),
	GRH(traffic_class,	 1, 0,  4,   8),
	GRH(flow_label,		 4, 0, 12,  20),
	GRH(payload_length,	 2, 1,  0,  16),
	GRH(next_header,	 1, 1, 16,   8),
	GRH(hop_limit,		 1, 1, 24,   8),
	GRH(source_gid,		16, 2,  0, 128),
	GRH(destination_gid,	16, 6,  0, 128),
};

/* IBA 9.2, figure "Base Transport Header" */
static const struct ib_field bth_rows[] = {
	BTH(opcode,			1, 0,  0,  8),
	BTH(solicited_event,		1, 0,  8,  1),
	BTH(mig_req,			1, 0,  9,  1),
	BTH(pad_count,			1, 0, 10,  2),
	BTH(transport_header_version,	1, 0, 12,  4),
	BTH(pkey,			2, 0, 16, 16),
	IB_ROW_RSVD(1, 0, 8),
	BTH(destination_qpn,		4, 1,  8, 24),
	BTH(ack_req,			1, 2,  0,  1),
	IB_ROW_RSVD(2, 1, 7),
	BTH(psn,			4, 2,  8, 24),
};

/* IBA 9.3.3, figure "Datagram Extended Transport Header" */
static const struct ib_field deth_rows[] = {
	DETH(qkey,		4, 0,  0, 32),
	IB_ROW_RSVD(1, 0, 8),
	DETH(source_qpn,	4, 1,  8, 24),
};

/* IBA 9.3.6: Immediate Data, one word. */
static const struct ib_field immdt_rows[] = {
	IB_ROW(struct ib_ud_header, immediate_data, 4, 0, 0, 32),
};

#define IB_LAYOUT(nm, rows, len) {					\
	.name = (nm), .fields = (rows),					\
	.count = sizeof(rows) / sizeof((rows)[0]), .bytes = (len) }

const struct ib_hdr_layout ib_lrh_layout = IB_LAYOUT("LRH", lrh_rows, IB_LRH_BYTES);
const struct ib_hdr_layout ib_grh_layout = IB_LAYOUT("GRH", grh_rows, IB_GRH_BYTES);
const struct ib_hdr_layout ib_bth_layout = IB_LAYOUT("BTH", bth_rows, IB_BTH_BYTES);
const struct ib_hdr_layout ib_deth_layout = IB_LAYOUT("DETH", deth_rows, IB_DETH_BYTES);
const struct ib_hdr_layout ib_immdt_layout =
	IB_LAYOUT("ImmDt", immdt_rows, IB_IMMDT_BYTES);

/* Pack one header at @buf; return the bytes written. */
static int ib_hdr_put(const struct ib_hdr_layout *l, const void *s, u8 *buf)
{
	ib_pack(l->fields, l->count, s, buf);
	return l->bytes;
}

/* Unpack one header from @buf; return the bytes consumed. */
static int ib_hdr_get(const struct ib_hdr_layout *l, const u8 *buf, void *s)
{
	ib_unpack(l->fields, l->count, buf, s);
	return l->bytes;
}

/**
 * ib_ud_header_init() - prepare the headers of a UD SEND-only packet
 * @payload_bytes: length of the message, ImmDt and padding not included
 * @grh_present: nonzero to carry a GRH (LNH "IBA global")
 * @immediate_present: nonzero to carry ImmDt (opcode SEND-only with
 *	immediate)
 * @header: the headers to fill in
 *
 * Clears @header and sets what follows from the arguments: LNH, the LRH
 * packet length (in words, from the LRH to the ICRC), for a GRH its version,
 * payload length and next header, and the BTH opcode and pad count. The
 * caller fills in the LIDs, SL, GIDs, P_Key, QPNs, Q_Key and the immediate
 * value.
 *
 * Return: 0, or -EINVAL if @payload_bytes is negative or too long for the
 * 11-bit packet length.
 */
int ib_ud_header_init(int payload_bytes, int grh_present,
		      int immediate_present, struct ib_ud_header *header)
{
	int padded, after_grh, words;

	memset(header, 0, sizeof(*header));
	if (payload_bytes < 0)
		return -EINVAL;

	padded = ALIGN(payload_bytes, 4);
	after_grh = IB_BTH_BYTES + IB_DETH_BYTES +
		    (immediate_present ? IB_IMMDT_BYTES : 0) +
		    padded + IB_ICRC_BYTES;
	words = (IB_LRH_BYTES + (grh_present ? IB_GRH_BYTES : 0) + after_grh) / 4;
	if (words > 0x7ff)
		return -EINVAL;

	header->grh_present = !!grh_present;
	header->immediate_present = !!immediate_present;

	header->lrh.link_version = 0;
	header->lrh.link_next_header = grh_present ? IB_LNH_IBA_GLOBAL :
						     IB_LNH_IBA_LOCAL;
	header->lrh.packet_length = cpu_to_be16(words);

	if (grh_present) {
		header->grh.ip_version = 6;
		header->grh.payload_length = cpu_to_be16(after_grh);
		header->grh.next_header = IB_GRH_NEXT_HDR_IBA;
	}

	header->bth.opcode = immediate_present ?
			     IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE :
			     IB_OPCODE_UD_SEND_ONLY;
	header->bth.pad_count = padded - payload_bytes;
	header->bth.transport_header_version = 0;
	return 0;
}
EXPORT_SYMBOL(ib_ud_header_init);

/**
 * ib_ud_header_pack() - write the headers of a UD packet in wire format
 * @header: the headers, as ib_ud_header_init() and the caller left them
 * @buf: room for at least IB_UD_HEADER_MAX_BYTES
 *
 * Writes LRH, the GRH if @header->grh_present, BTH, DETH, and ImmDt if
 * @header->immediate_present, back to back. Reserved bits are zero.
 *
 * Return: the number of bytes written.
 */
int ib_ud_header_pack(const struct ib_ud_header *header, void *buf)
{
	u8 *pos = buf;

	pos += ib_hdr_put(&ib_lrh_layout, &header->lrh, pos);
	if (header->grh_present)
		pos += ib_hdr_put(&ib_grh_layout, &header->grh, pos);
	pos += ib_hdr_put(&ib_bth_layout, &header->bth, pos);
	pos += ib_hdr_put(&ib_deth_layout, &header->deth, pos);
	if (header->immediate_present)
		pos += ib_hdr_put(&ib_immdt_layout, header, pos);

	return pos - (u8 *)buf;
}
EXPORT_SYMBOL(ib_ud_header_pack);

/**
 * ib_ud_header_unpack() - parse the headers of a received UD packet
 * @buf: the packet, starting with its LRH
 * @header: where the parsed headers go
 *
 * The packet must be a UD SEND-only packet (with or without immediate) of
 * link version 0 and transport version 0, with LNH "IBA local" or "IBA
 * global"; a GRH must be of IP version 6 and announce an IBA transport
 * header. @header->grh_present and @header->immediate_present tell what
 * was found.
 *
 * Return: 0, or -EINVAL if the packet is not of that kind.
 */
int ib_ud_header_unpack(const void *buf, struct ib_ud_header *header)
{
	const u8 *pos = buf;

	memset(header, 0, sizeof(*header));

	pos += ib_hdr_get(&ib_lrh_layout, pos, &header->lrh);
	if (header->lrh.link_version != 0) {
		pr_debug("ud_header: LRH link version %u\n",
			 header->lrh.link_version);
		return -EINVAL;
	}

	switch (header->lrh.link_next_header) {
	case IB_LNH_IBA_LOCAL:
		break;
	case IB_LNH_IBA_GLOBAL:
		header->grh_present = 1;
		pos += ib_hdr_get(&ib_grh_layout, pos, &header->grh);
		if (header->grh.ip_version != 6 ||
		    header->grh.next_header != IB_GRH_NEXT_HDR_IBA) {
			pr_debug("ud_header: GRH IPVer %u NxtHdr 0x%02x\n",
				 header->grh.ip_version, header->grh.next_header);
			return -EINVAL;
		}
		break;
	default:
		pr_debug("ud_header: LRH LNH %u is not IBA transport\n",
			 header->lrh.link_next_header);
		return -EINVAL;
	}

	pos += ib_hdr_get(&ib_bth_layout, pos, &header->bth);
	if (header->bth.opcode == IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE) {
		header->immediate_present = 1;
	} else if (header->bth.opcode != IB_OPCODE_UD_SEND_ONLY) {
		pr_debug("ud_header: BTH opcode 0x%02x is not a UD SEND-only\n",
			 header->bth.opcode);
		return -EINVAL;
	}
	if (header->bth.transport_header_version != 0) {
		pr_debug("ud_header: BTH TVer %u\n",
			 header->bth.transport_header_version);
		return -EINVAL;
	}

	pos += ib_hdr_get(&ib_deth_layout, pos, &header->deth);
	if (header->immediate_present)
		ib_hdr_get(&ib_immdt_layout, pos, header);

	return 0;
}
EXPORT_SYMBOL(ib_ud_header_unpack);
