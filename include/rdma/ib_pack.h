/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Wire formats as tables: a header is described by an array of struct
 * ib_field, and ib_pack()/ib_unpack() move the values between a C structure
 * and the bytes on the wire. The UD header helpers build on them.
 */
#ifndef IB_PACK_H
#define IB_PACK_H

#include <linux/stddef.h>
#include <linux/types.h>

#include <rdma/ib_verbs.h>

/* Header sizes in bytes (IBA 9.2, 9.3, 8.3). */
enum {
	IB_LRH_BYTES	= 8,
	IB_GRH_BYTES	= 40,
	IB_BTH_BYTES	= 12,
	IB_DETH_BYTES	= 8,
	IB_IMMDT_BYTES	= 4,
	IB_ICRC_BYTES	= 4,
};

/**
 * struct ib_field - where one field lives, in a structure and on the wire
 * @struct_offset_bytes: offset of the member in the unpacked structure
 * @struct_size_bytes: size of that member; 0 for a reserved field, which
 *	ib_pack() writes as zeros and ib_unpack() skips
 * @offset_words: 32-bit word of the wire header that holds the first bit
 * @offset_bits: first bit within that word, 0 being the most significant
 * @size_bits: width of the field on the wire
 * @field_name: for diagnostics
 *
 * A field of up to 64 bits may start at any bit and cross byte and word
 * boundaries; its member is a u8 or a __be16, __be32 or __be64 holding the
 * value in the low bits. A wider field must start on a byte and span whole
 * bytes; its member is a byte array of the same size, copied as is.
 */
struct ib_field {
	size_t struct_offset_bytes, struct_size_bytes;	/* in the structure */
	int offset_words, offset_bits, size_bits;	/* on the wire */
	const char *field_name;
};

/* Link Next Header values of the LRH (IBA 7.7.3). */
enum {
	IB_LNH_RAW		= 0,
	IB_LNH_IP		= 1,
	IB_LNH_IBA_LOCAL	= 2,
	IB_LNH_IBA_GLOBAL	= 3,
};

/* GRH Next Header value for an IBA transport header (IBA 8.3.1). */
#define IB_GRH_NEXT_HDR_IBA	0x1b

/* BTH opcodes: transport in the top three bits, operation below. */
enum {
	IB_OPCODE_UD			= 0x60,
	IB_OPCODE_SEND_ONLY		= 0x04,
	IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	IB_OPCODE_UD_SEND_ONLY		= IB_OPCODE_UD | IB_OPCODE_SEND_ONLY,
	IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE =
		IB_OPCODE_UD | IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE,
};

/**
 * struct ib_unpacked_lrh - Local Route Header (IBA 7.7)
 * @virtual_lane: VL, 4 bits
 * @link_version: LVer, 4 bits, 0
 * @service_level: SL, 4 bits
 * @link_next_header: LNH, 2 bits
 * @destination_lid: DLID
 * @packet_length: PktLen, 11 bits, in 4-byte words from LRH to ICRC
 * @source_lid: SLID
 */
struct ib_unpacked_lrh {
	__be16 destination_lid, source_lid;
	__be16 packet_length;
	u8 virtual_lane, link_version, service_level, link_next_header;
};

/**
 * struct ib_unpacked_grh - Global Route Header (IBA 8.3)
 * @ip_version: IPVer, 4 bits, 6
 * @traffic_class: TClass
 * @flow_label: FlowLabel, 20 bits
 * @payload_length: PayLen, bytes after the GRH up to and including the ICRC
 * @next_header: NxtHdr, 0x1b for an IBA transport header
 * @hop_limit: HopLmt
 * @source_gid: SGID
 * @destination_gid: DGID
 */
struct ib_unpacked_grh {
	union ib_gid source_gid, destination_gid;
	__be32 flow_label;
	__be16 payload_length;
	u8 ip_version, traffic_class, next_header, hop_limit;
};

/**
 * struct ib_unpacked_bth - Base Transport Header (IBA 9.2)
 * @opcode: OpCode
 * @solicited_event: SE, 1 bit
 * @mig_req: M, 1 bit
 * @pad_count: PadCnt, 2 bits: bytes added to make the payload 4-aligned
 * @transport_header_version: TVer, 4 bits, 0
 * @pkey: P_Key
 * @destination_qpn: DestQP, 24 bits
 * @ack_req: A, 1 bit
 * @psn: PSN, 24 bits
 */
struct ib_unpacked_bth {
	__be32 destination_qpn, psn;
	__be16 pkey;
	u8 opcode, transport_header_version;
	u8 solicited_event, mig_req, ack_req, pad_count;
};

/**
 * struct ib_unpacked_deth - Datagram Extended Transport Header (IBA 9.3.3)
 * @qkey: Q_Key
 * @source_qpn: SrcQP, 24 bits
 */
struct ib_unpacked_deth {
	__be32 qkey, source_qpn;
};

/**
 * struct ib_ud_header - the headers of a UD SEND packet
 * @lrh: Local Route Header
 * @grh_present: whether a GRH follows the LRH
 * @grh: Global Route Header, if @grh_present
 * @bth: Base Transport Header
 * @deth: Datagram Extended Transport Header
 * @immediate_present: whether ImmDt follows the DETH
 * @immediate_data: ImmDt, if @immediate_present
 */
struct ib_ud_header {
	struct ib_unpacked_lrh lrh;
	struct ib_unpacked_grh grh;
	struct ib_unpacked_bth bth;
	struct ib_unpacked_deth deth;
	__be32 immediate_data;
	int grh_present, immediate_present;
};

/* The longest header ib_ud_header_pack() writes. */
#define IB_UD_HEADER_MAX_BYTES \
	(IB_LRH_BYTES + IB_GRH_BYTES + IB_BTH_BYTES + IB_DETH_BYTES + IB_IMMDT_BYTES)

void ib_pack(const struct ib_field *desc, int desc_len,
	     const void *structure, void *buf);
void ib_unpack(const struct ib_field *desc, int desc_len,
	       const void *buf, void *structure);

int ib_ud_header_init(int payload_bytes, int grh_present,
		      int immediate_present, struct ib_ud_header *header);
int ib_ud_header_pack(const struct ib_ud_header *header, void *buf);
int ib_ud_header_unpack(const void *buf, struct ib_ud_header *header);

#endif /* IB_PACK_H */
