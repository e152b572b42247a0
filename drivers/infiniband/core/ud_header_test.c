// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the IBA header layouts and the UD header helpers: table
 * sanity, ib_ud_header_init() lengths, two packets packed byte for byte,
 * round trips, and the packets ib_ud_header_unpack() must refuse.
 */

#include <kunit/test.h>
#include <linux/errno.h>
#include <linux/string.h>

#include <rdma/ib_pack.h>

#include "ib_kunit.h"
#include "ud_header.h"

static const struct ib_hdr_layout *const ud_layouts[] = {
	&ib_lrh_layout, &ib_grh_layout, &ib_bth_layout, &ib_deth_layout,
	&ib_immdt_layout,
};

/* Every bit of each header is covered by exactly one row. */
static void ud_layouts_cover_every_bit(struct kunit *test)
{
	int i, r, bit;

	for (i = 0; i < ARRAY_SIZE(ud_layouts); i++) {
		const struct ib_hdr_layout *l = ud_layouts[i];
		u8 seen[IB_GRH_BYTES * 8] = {};
		int total = 0;

		KUNIT_ASSERT_LE(test, l->bytes, IB_GRH_BYTES);
		for (r = 0; r < l->count; r++) {
			const struct ib_field *f = &l->fields[r];
			int first = f->offset_words * 32 + f->offset_bits;

			KUNIT_EXPECT_LT_MSG(test, f->offset_bits, 32, "%s row %d", l->name, r);
			KUNIT_EXPECT_LE_MSG(test, first + f->size_bits, l->bytes * 8,
					    "%s row %d", l->name, r);
			for (bit = first; bit < first + f->size_bits &&
			     bit < l->bytes * 8; bit++)
				seen[bit]++;
			total += f->size_bits;
		}
		KUNIT_EXPECT_EQ_MSG(test, total, l->bytes * 8, "%s", l->name);
		for (bit = 0; bit < l->bytes * 8; bit++)
			KUNIT_EXPECT_EQ_MSG(test, seen[bit], 1, "%s bit %d", l->name, bit);
	}
}

/* A member, by the name its row carries, and its real size. */
#define UD_M(lay, s, m) { &(lay), #s "." #m, sizeof_field(s, m) }

/* The member sizes written in the tables are those of the members. */
static void ud_layout_member_sizes(struct kunit *test)
{
	static const struct {
		const struct ib_hdr_layout *l;
		const char *name;
		size_t size;
	} want[] = {
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, virtual_lane),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, link_version),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, service_level),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, link_next_header),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, destination_lid),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, packet_length),
		UD_M(ib_lrh_layout, struct ib_unpacked_lrh, source_lid),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, ip_version),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, traffic_class),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, flow_label),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, payload_length),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, next_header),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, hop_limit),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, source_gid),
		UD_M(ib_grh_layout, struct ib_unpacked_grh, destination_gid),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, opcode),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, solicited_event),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, mig_req),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, pad_count),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, transport_header_version),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, pkey),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, destination_qpn),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, ack_req),
		UD_M(ib_bth_layout, struct ib_unpacked_bth, psn),
		UD_M(ib_deth_layout, struct ib_unpacked_deth, qkey),
		UD_M(ib_deth_layout, struct ib_unpacked_deth, source_qpn),
		UD_M(ib_immdt_layout, struct ib_ud_header, immediate_data),
	};
	int i, r, named = 0, l;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		const struct ib_hdr_layout *lay = want[i].l;
		const struct ib_field *f = NULL;

		for (r = 0; r < lay->count; r++)
			if (lay->fields[r].field_name &&
			    !strcmp(lay->fields[r].field_name, want[i].name))
				f = &lay->fields[r];
		KUNIT_ASSERT_NOT_NULL_MSG(test, f, "%s has no row", want[i].name);
		KUNIT_EXPECT_EQ_MSG(test, f->struct_size_bytes, want[i].size,
				    "%s", want[i].name);
	}

	/* and no member row is left unchecked */
	for (l = 0; l < ARRAY_SIZE(ud_layouts); l++)
		for (r = 0; r < ud_layouts[l]->count; r++)
			named += ud_layouts[l]->fields[r].struct_size_bytes != 0;
	KUNIT_EXPECT_EQ(test, named, ARRAY_SIZE(want));
}

static void ud_init_lid_routed(struct kunit *test)
{
	struct ib_ud_header h;

	memset(&h, 0xff, sizeof(h));
	KUNIT_ASSERT_EQ(test, ib_ud_header_init(256, 0, 0, &h), 0);
	KUNIT_EXPECT_EQ(test, h.grh_present, 0);
	KUNIT_EXPECT_EQ(test, h.immediate_present, 0);
	KUNIT_EXPECT_EQ(test, h.lrh.link_version, 0);
	KUNIT_EXPECT_EQ(test, h.lrh.link_next_header, IB_LNH_IBA_LOCAL);
	/* (8 LRH + 12 BTH + 8 DETH + 256 + 4 ICRC) / 4 */
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h.lrh.packet_length), 72);
	KUNIT_EXPECT_EQ(test, h.bth.opcode, IB_OPCODE_UD_SEND_ONLY);
	KUNIT_EXPECT_EQ(test, h.bth.opcode, 0x64);
	KUNIT_EXPECT_EQ(test, h.bth.pad_count, 0);
	KUNIT_EXPECT_EQ(test, h.bth.transport_header_version, 0);
	/* everything else cleared */
	KUNIT_EXPECT_EQ(test, h.grh.ip_version, 0);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h.lrh.destination_lid), 0);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(h.deth.qkey), 0);
}

static void ud_init_global(struct kunit *test)
{
	struct ib_ud_header h;

	KUNIT_ASSERT_EQ(test, ib_ud_header_init(256, 1, 0, &h), 0);
	KUNIT_EXPECT_EQ(test, h.grh_present, 1);
	KUNIT_EXPECT_EQ(test, h.lrh.link_next_header, IB_LNH_IBA_GLOBAL);
	/* (8 + 40 GRH + 12 + 8 + 256 + 4) / 4 */
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h.lrh.packet_length), 82);
	KUNIT_EXPECT_EQ(test, h.grh.ip_version, 6);
	KUNIT_EXPECT_EQ(test, h.grh.next_header, 0x1b);
	/* 12 BTH + 8 DETH + 256 + 4 ICRC */
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h.grh.payload_length), 280);
}

static void ud_init_immediate_and_padding(struct kunit *test)
{
	static const struct {
		int payload, grh, pad, pktlen, paylen;
	} cases[] = {
		/* LRH 8 + BTH 12 + DETH 8 + ImmDt 4 + padded payload + ICRC 4 */
		{ 0, 0, 0, 9, 0 },
		{ 1, 0, 3, 10, 0 },
		{ 2, 0, 2, 10, 0 },
		{ 3, 0, 1, 10, 0 },
		{ 4, 0, 0, 10, 0 },
		{ 5, 1, 3, 21, 36 },
	};
	struct ib_ud_header h;
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		KUNIT_ASSERT_EQ(test, ib_ud_header_init(cases[i].payload, cases[i].grh, 1, &h), 0);
		KUNIT_EXPECT_EQ_MSG(test, h.immediate_present, 1, "case %d", i);
		KUNIT_EXPECT_EQ_MSG(test, h.bth.opcode, 0x65, "case %d", i);
		KUNIT_EXPECT_EQ_MSG(test, h.bth.pad_count, cases[i].pad, "case %d", i);
		KUNIT_EXPECT_EQ_MSG(test, be16_to_cpu(h.lrh.packet_length),
				    cases[i].pktlen, "case %d", i);
		KUNIT_EXPECT_EQ_MSG(test, be16_to_cpu(h.grh.payload_length),
				    cases[i].paylen, "case %d", i);
	}
}

static void ud_init_rejects_bad_lengths(struct kunit *test)
{
	struct ib_ud_header h;

	KUNIT_EXPECT_EQ(test, ib_ud_header_init(-1, 0, 0, &h), -EINVAL);
	/* PktLen is 11 bits: at most 2047 words, 8188 bytes */
	KUNIT_EXPECT_EQ(test, ib_ud_header_init(8188 - 32, 0, 0, &h), 0);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(h.lrh.packet_length), 2047);
	KUNIT_EXPECT_EQ(test, ib_ud_header_init(8188 - 31, 0, 0, &h), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_ud_header_init(8188 - 72, 1, 0, &h), 0);
	KUNIT_EXPECT_EQ(test, ib_ud_header_init(8188 - 72, 1, 1, &h), -EINVAL);
}

/* A MAD to QP1 of LID 0x1234 from LID 0x42, worked out by hand. */
static const u8 ud_mad_wire[] = {
	/* LRH: VL 1, LVer 0 | SL 3, LNH 2 | DLID | PktLen 72 | SLID */
	0x10, 0x32, 0x12, 0x34, 0x00, 0x48, 0x00, 0x42,
	/* BTH: UD SEND only | M | P_Key | QP 1 | PSN 0xabc */
	0x64, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x0a, 0xbc,
	/* DETH: Q_Key 0x80010000 | source QP 1 */
	0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
};

static void ud_mad_header(struct ib_ud_header *h)
{
	ib_ud_header_init(256, 0, 0, h);
	h->lrh.virtual_lane = 1;
	h->lrh.service_level = 3;
	h->lrh.destination_lid = cpu_to_be16(0x1234);
	h->lrh.source_lid = cpu_to_be16(0x42);
	h->bth.mig_req = 1;
	h->bth.pkey = cpu_to_be16(0xffff);
	h->bth.destination_qpn = cpu_to_be32(1);
	h->bth.psn = cpu_to_be32(0xabc);
	h->deth.qkey = cpu_to_be32(0x80010000);
	h->deth.source_qpn = cpu_to_be32(1);
}

/*
 * With GRH and ImmDt: 5 bytes of payload, SE set, P_Key 0x8001, QP
 * 0x123456, AckReq, PSN 0xfffffe, immediate 0xdeadbeef.
 */
static const u8 ud_global_wire[] = {
	/* LRH: VL 0 | SL 0, LNH 3 | DLID 0xc001 | PktLen 21 | SLID 7 */
	0x00, 0x03, 0xc0, 0x01, 0x00, 0x15, 0x00, 0x07,
	/* GRH: IPVer 6, TClass 0xa5, FlowLabel 0x12345 | PayLen 36 | 0x1b | 64 */
	0x6a, 0x51, 0x23, 0x45, 0x00, 0x24, 0x1b, 0x40,
	0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x02, 0xc9, 0x03, 0x00, 0x01, 0x23, 0x45,
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
	/* BTH: 0x65 | SE, PadCnt 3 | ... */
	0x65, 0xb0, 0x80, 0x01, 0x00, 0x12, 0x34, 0x56,
	0x80, 0xff, 0xff, 0xfe,
	/* DETH, ImmDt */
	0x11, 0x11, 0x11, 0x11, 0x00, 0xab, 0xcd, 0xef,
	0xde, 0xad, 0xbe, 0xef,
};

static const u8 ud_sgid[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x01, 0x23, 0x45,
};

static const u8 ud_dgid[16] = {
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

static void ud_global_header(struct ib_ud_header *h)
{
	ib_ud_header_init(5, 1, 1, h);
	h->lrh.destination_lid = cpu_to_be16(0xc001);
	h->lrh.source_lid = cpu_to_be16(7);
	h->grh.traffic_class = 0xa5;
	h->grh.flow_label = cpu_to_be32(0x12345);
	h->grh.hop_limit = 64;
	memcpy(h->grh.source_gid.raw, ud_sgid, 16);
	memcpy(h->grh.destination_gid.raw, ud_dgid, 16);
	h->bth.solicited_event = 1;
	h->bth.pkey = cpu_to_be16(0x8001);
	h->bth.destination_qpn = cpu_to_be32(0x123456);
	h->bth.ack_req = 1;
	h->bth.psn = cpu_to_be32(0xfffffe);
	h->deth.qkey = cpu_to_be32(0x11111111);
	h->deth.source_qpn = cpu_to_be32(0xabcdef);
	h->immediate_data = cpu_to_be32(0xdeadbeef);
}

static void ud_pack_mad(struct kunit *test)
{
	struct ib_ud_header h;
	u8 buf[IB_UD_HEADER_MAX_BYTES];

	ud_mad_header(&h);
	memset(buf, 0xee, sizeof(buf));
	KUNIT_ASSERT_EQ(test, ib_ud_header_pack(&h, buf), (int)sizeof(ud_mad_wire));
	ib_kunit_expect_bytes(test, "MAD header", buf, ud_mad_wire, sizeof(ud_mad_wire));
	/* nothing written past the headers */
	KUNIT_EXPECT_EQ(test, buf[sizeof(ud_mad_wire)], 0xee);
}

static void ud_pack_global_immediate(struct kunit *test)
{
	struct ib_ud_header h;
	u8 buf[IB_UD_HEADER_MAX_BYTES];

	KUNIT_ASSERT_EQ(test, (int)sizeof(ud_global_wire), IB_UD_HEADER_MAX_BYTES);
	ud_global_header(&h);
	memset(buf, 0xee, sizeof(buf));
	KUNIT_ASSERT_EQ(test, ib_ud_header_pack(&h, buf), IB_UD_HEADER_MAX_BYTES);
	ib_kunit_expect_bytes(test, "GRH header", buf, ud_global_wire, sizeof(ud_global_wire));
}

static void ud_unpack_known(struct kunit *test)
{
	struct ib_ud_header h, want;

	KUNIT_ASSERT_EQ(test, ib_ud_header_unpack(ud_mad_wire, &h), 0);
	ud_mad_header(&want);
	ib_kunit_expect_bytes(test, "MAD unpacked", &h, &want, sizeof(h));

	KUNIT_ASSERT_EQ(test, ib_ud_header_unpack(ud_global_wire, &h), 0);
	ud_global_header(&want);
	KUNIT_EXPECT_EQ(test, h.grh_present, 1);
	KUNIT_EXPECT_EQ(test, h.immediate_present, 1);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(h.immediate_data), 0xdeadbeef);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(h.grh.flow_label), 0x12345);
	ib_kunit_expect_bytes(test, "GRH unpacked", &h, &want, sizeof(h));
}

/* All four combinations: pack, unpack, pack again gives the same bytes. */
static void ud_round_trips(struct kunit *test)
{
	int grh, imm;

	for (grh = 0; grh < 2; grh++) {
		for (imm = 0; imm < 2; imm++) {
			struct ib_ud_header h, back;
			u8 a[IB_UD_HEADER_MAX_BYTES], b[IB_UD_HEADER_MAX_BYTES];
			int len;

			ud_global_header(&h);
			ib_ud_header_init(100, grh, imm, &back);
			h.grh_present = back.grh_present;
			h.immediate_present = back.immediate_present;
			h.lrh = back.lrh;
			h.bth.opcode = back.bth.opcode;

			len = ib_ud_header_pack(&h, a);
			KUNIT_EXPECT_EQ(test, len, IB_LRH_BYTES + IB_BTH_BYTES + IB_DETH_BYTES +
					grh * IB_GRH_BYTES + imm * IB_IMMDT_BYTES);
			KUNIT_ASSERT_EQ(test, ib_ud_header_unpack(a, &back), 0);
			KUNIT_EXPECT_EQ(test, back.grh_present, grh);
			KUNIT_EXPECT_EQ(test, back.immediate_present, imm);
			KUNIT_EXPECT_EQ(test, ib_ud_header_pack(&back, b), len);
			ib_kunit_expect_bytes(test, "repacked", b, a, len);
		}
	}
}

/* Packets that are not UD SEND-only of version 0 are refused. */
static void ud_unpack_rejects(struct kunit *test)
{
	static const struct {
		const char *what;
		bool global;
		int offset;
		u8 value;
	} bad[] = {
		{ "LVer 1", false, 0, 0x11 },
		{ "LVer 15", false, 0, 0x1f },
		{ "LNH raw", false, 1, 0x30 },
		{ "LNH IP", false, 1, 0x31 },
		{ "RC SEND only", false, 8, 0x04 },
		{ "UC SEND only", false, 8, 0x24 },
		{ "UD opcode 0x66", false, 8, 0x66 },
		{ "UD SEND first", false, 8, 0x60 },
		{ "TVer 1", false, 9, 0x41 },
		{ "GRH IPVer 4", true, 8, 0x4a },
		{ "GRH NxtHdr UDP", true, 14, 0x11 },
		{ "GRH LVer 2", true, 0, 0x02 },
		{ "GRH TVer 15", true, 49, 0xbf },
	};
	u8 pkt[IB_UD_HEADER_MAX_BYTES];
	struct ib_ud_header h;
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		const u8 *good = bad[i].global ? ud_global_wire : ud_mad_wire;
		size_t len = bad[i].global ? sizeof(ud_global_wire) : sizeof(ud_mad_wire);

		memcpy(pkt, good, len);
		KUNIT_ASSERT_EQ(test, ib_ud_header_unpack(pkt, &h), 0);
		pkt[bad[i].offset] = bad[i].value;
		KUNIT_EXPECT_EQ_MSG(test, ib_ud_header_unpack(pkt, &h), -EINVAL,
				    "%s", bad[i].what);
	}
}

/* Reserved bits are ignored on receive and sent as zeros. */
static void ud_unpack_ignores_reserved(struct kunit *test)
{
	u8 pkt[sizeof(ud_mad_wire)], again[IB_UD_HEADER_MAX_BYTES];
	struct ib_ud_header h, want;

	memcpy(pkt, ud_mad_wire, sizeof(pkt));
	pkt[1] |= 0x0c;		/* LRH bits 12-13 */
	pkt[4] |= 0xf8;		/* LRH bits 32-36 */
	pkt[12] = 0xff;		/* BTH word 1, bits 0-7 */
	pkt[16] |= 0x7f;	/* BTH word 2, bits 1-7 */
	pkt[24] = 0xff;		/* DETH word 1, bits 0-7 */
	KUNIT_ASSERT_EQ(test, ib_ud_header_unpack(pkt, &h), 0);
	ud_mad_header(&want);
	ib_kunit_expect_bytes(test, "unpacked", &h, &want, sizeof(h));
	KUNIT_ASSERT_EQ(test, ib_ud_header_pack(&h, again), (int)sizeof(ud_mad_wire));
	ib_kunit_expect_bytes(test, "repacked", again, ud_mad_wire, sizeof(ud_mad_wire));
}

static struct kunit_case ib_ud_header_cases[] = {
	KUNIT_CASE(ud_layouts_cover_every_bit),
	KUNIT_CASE(ud_layout_member_sizes),
	KUNIT_CASE(ud_init_lid_routed),
	KUNIT_CASE(ud_init_global),
	KUNIT_CASE(ud_init_immediate_and_padding),
	KUNIT_CASE(ud_init_rejects_bad_lengths),
	KUNIT_CASE(ud_pack_mad),
	KUNIT_CASE(ud_pack_global_immediate),
	KUNIT_CASE(ud_unpack_known),
	KUNIT_CASE(ud_round_trips),
	KUNIT_CASE(ud_unpack_rejects),
	KUNIT_CASE(ud_unpack_ignores_reserved),
	{}
};

static struct kunit_suite ib_ud_header_suite = {
	.name = "ib_ud_header",
	.test_cases = ib_ud_header_cases,
};

kunit_test_suite(ib_ud_header_suite);
