// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the SA record tables: PathRecord, MCMemberRecord and
 * ServiceRecord packed into byte images worked out by hand from the IBA
 * figures, unpacked back from them, round trips through pack and unpack,
 * the request header ib_sa builds, and the status-to-errno mapping.
 */

#include <kunit/test.h>
#include <linux/string.h>

#include <rdma/ib_sa.h>

#include "ib_kunit.h"
#include "sa.h"

static const u8 gid_a[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0x11, 0x11,
};

static const u8 gid_b[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0x22, 0x22,
};

static const u8 mgid_ipoib[16] = {
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

static void sa_fill_path(struct ib_sa_path_rec *r)
{
	static const struct ib_sa_path_rec sample = {
		.service_id = cpu_to_be64(0x0102030405060708ULL),
		.dlid = cpu_to_be16(0x0013), .slid = cpu_to_be16(0x0024),
		.raw_traffic = 1, .flow_label = cpu_to_be32(0xabcde),
		.hop_limit = 0x40, .traffic_class = 0x5a, .reversible = 1,
		.numb_path = 0x45, .pkey = cpu_to_be16(0x8001),
		.qos_class = cpu_to_be16(0xabc), .sl = 0xd,
		.mtu_selector = IB_SA_EQ, .mtu = IB_MTU_2048,
		.rate_selector = IB_SA_EQ, .rate = IB_RATE_20_GBPS,
		.packet_life_time_selector = IB_SA_EQ,
		.packet_life_time = 0x13, .preference = 0x77,
	};

	/* Copied whole, so the padding is zero as unpack leaves it. */
	memset(r, 0, sizeof(*r));
	memcpy(r, &sample, sizeof(*r));
	memcpy(r->dgid.raw, gid_a, 16);
	memcpy(r->sgid.raw, gid_b, 16);
}

/*
 * Words 10 to 15 of the record above, bit by bit:
 *  10: DLID 0013, SLID 0024
 *  11: 1 000 abcde 40           -> 8a bc de 40
 *  12: 5a, 1 1000101, 8001      -> 5a c5 80 01
 *  13: abc d, 10 000100, 10 000110 -> ab cd 84 86
 *  14: 10 010011, 77, reserved  -> 93 77 00 00
 *  15: reserved
 */
static const u8 path_tail[24] = {
	0x00, 0x13, 0x00, 0x24, 0x8a, 0xbc, 0xde, 0x40,
	0x5a, 0xc5, 0x80, 0x01, 0xab, 0xcd, 0x84, 0x86,
	0x93, 0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void sa_path_image(u8 *img)
{
	static const u8 sid[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	memcpy(img, sid, 8);
	memcpy(img + 8, gid_a, 16);
	memcpy(img + 24, gid_b, 16);
	memcpy(img + 40, path_tail, sizeof(path_tail));
}

static void sa_path_pack_known(struct kunit *test)
{
	u8 got[IB_SA_PATH_REC_BYTES], want[IB_SA_PATH_REC_BYTES];
	struct ib_sa_path_rec r;

	sa_fill_path(&r);
	sa_path_image(want);
	/* Reserved bits must come out as zeros whatever the buffer held. */
	memset(got, 0xff, sizeof(got));
	ib_sa_pack_path_rec(&r, got);
	ib_kunit_expect_bytes(test, "PathRecord", got, want, sizeof(want));
}

static void sa_path_unpack_known(struct kunit *test)
{
	u8 img[IB_SA_PATH_REC_BYTES];
	struct ib_sa_path_rec r;

	sa_path_image(img);
	/* Set the reserved bits: unpacking must not let them leak anywhere. */
	img[44] |= 0x70;
	img[58] = 0xff;
	img[63] = 0xff;
	memset(&r, 0xee, sizeof(r));
	ib_sa_unpack_path_rec(img, &r);

	KUNIT_EXPECT_EQ(test, be64_to_cpu(r.service_id), 0x0102030405060708ULL);
	KUNIT_EXPECT_EQ(test, memcmp(r.dgid.raw, gid_a, 16), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r.sgid.raw, gid_b, 16), 0);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(r.dlid), 0x13);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(r.slid), 0x24);
	KUNIT_EXPECT_EQ(test, r.raw_traffic, 1);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(r.flow_label), 0xabcde);
	KUNIT_EXPECT_EQ(test, r.hop_limit, 0x40);
	KUNIT_EXPECT_EQ(test, r.traffic_class, 0x5a);
	KUNIT_EXPECT_EQ(test, r.reversible, 1);
	KUNIT_EXPECT_EQ(test, r.numb_path, 0x45);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(r.pkey), 0x8001);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(r.qos_class), 0xabc);
	KUNIT_EXPECT_EQ(test, r.sl, 0xd);
	KUNIT_EXPECT_EQ(test, r.mtu_selector, IB_SA_EQ);
	KUNIT_EXPECT_EQ(test, r.mtu, IB_MTU_2048);
	KUNIT_EXPECT_EQ(test, r.rate_selector, IB_SA_EQ);
	KUNIT_EXPECT_EQ(test, r.rate, IB_RATE_20_GBPS);
	KUNIT_EXPECT_EQ(test, r.packet_life_time_selector, IB_SA_EQ);
	KUNIT_EXPECT_EQ(test, r.packet_life_time, 0x13);
	KUNIT_EXPECT_EQ(test, r.preference, 0x77);
}

/* Every field at its largest value survives pack and unpack unchanged. */
static void sa_path_round_trip_max(struct kunit *test)
{
	struct ib_sa_path_rec in, out;
	u8 buf[IB_SA_PATH_REC_BYTES];

	memset(&in, 0, sizeof(in));
	in.service_id = cpu_to_be64(~0ULL);
	memset(in.dgid.raw, 0xff, 16);
	memset(in.sgid.raw, 0xff, 16);
	in.dlid = cpu_to_be16(0xffff);
	in.slid = cpu_to_be16(0xffff);
	in.pkey = cpu_to_be16(0xffff);
	in.flow_label = cpu_to_be32(0xfffff);
	in.qos_class = cpu_to_be16(0xfff);
	in.raw_traffic = 1;
	in.reversible = 1;
	in.hop_limit = 0xff;
	in.traffic_class = 0xff;
	in.preference = 0xff;
	in.numb_path = 0x7f;
	in.sl = 0xf;
	in.mtu_selector = 3;
	in.rate_selector = 3;
	in.packet_life_time_selector = 3;
	in.mtu = 0x3f;
	in.rate = 0x3f;
	in.packet_life_time = 0x3f;

	ib_sa_pack_path_rec(&in, buf);
	ib_sa_unpack_path_rec(buf, &out);
	ib_kunit_expect_bytes(test, "path round trip", &out, &in, sizeof(in));

	/* And the three reserved stretches stayed clear. */
	KUNIT_EXPECT_EQ(test, buf[44] & 0x70, 0);
	KUNIT_EXPECT_EQ(test, buf[58] | buf[59] | buf[60] | buf[61] | buf[62] |
			buf[63], 0);
}

static void sa_fill_mcmember(struct ib_sa_mcmember_rec *r)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->mgid.raw, mgid_ipoib, 16);
	memcpy(r->port_gid.raw, gid_a, 16);
	r->qkey = cpu_to_be32(0x12345678);
	r->mlid = cpu_to_be16(0xc001);
	r->mtu_selector = IB_SA_EQ;
	r->mtu = IB_MTU_2048;
	r->traffic_class = 0x3c;
	r->pkey = cpu_to_be16(0xffff);
	r->rate_selector = IB_SA_EQ;
	r->rate = IB_RATE_10_GBPS;
	r->packet_life_time_selector = IB_SA_LT;
	r->packet_life_time = 0x20;
	r->sl = 9;
	r->flow_label = cpu_to_be32(0x12345);
	r->hop_limit = 0x0a;
	r->scope = 2;
	r->join_state = 1;
	r->proxy_join = 1;
}

/*
 *  8: Q_Key                               -> 12 34 56 78
 *  9: c001, 10 000100, 3c                 -> c0 01 84 3c
 * 10: ffff, 10 000011, 01 100000          -> ff ff 83 60
 * 11: 1001 12345 0a                       -> 91 23 45 0a
 * 12: 0010 0001 1 + 23 reserved           -> 21 80 00 00
 */
static const u8 mcmember_tail[20] = {
	0x12, 0x34, 0x56, 0x78, 0xc0, 0x01, 0x84, 0x3c,
	0xff, 0xff, 0x83, 0x60, 0x91, 0x23, 0x45, 0x0a,
	0x21, 0x80, 0x00, 0x00,
};

static void sa_mcmember_known(struct kunit *test)
{
	u8 got[IB_SA_MCMEMBER_REC_BYTES], want[IB_SA_MCMEMBER_REC_BYTES];
	struct ib_sa_mcmember_rec in, out;

	sa_fill_mcmember(&in);
	memcpy(want, mgid_ipoib, 16);
	memcpy(want + 16, gid_a, 16);
	memcpy(want + 32, mcmember_tail, sizeof(mcmember_tail));

	memset(got, 0xff, sizeof(got));
	ib_sa_pack_mcmember_rec(&in, got);
	ib_kunit_expect_bytes(test, "MCMemberRecord", got, want, sizeof(want));

	/* The reserved bits of word 12, set on the wire, are ignored. */
	want[49] |= 0x7f;
	want[51] = 0xff;
	memset(&out, 0xee, sizeof(out));
	ib_sa_unpack_mcmember_rec(want, &out);
	ib_kunit_expect_bytes(test, "MCMemberRecord unpacked", &out, &in,
			      sizeof(in));
	KUNIT_EXPECT_EQ(test, out.join_state, 1);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(out.mlid), 0xc001);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(out.flow_label), 0x12345);
}

static void sa_fill_service(struct ib_sa_service_rec *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->id = cpu_to_be64(0x1122334455667788ULL);
	memcpy(r->gid.raw, gid_b, 16);
	r->pkey = cpu_to_be16(0x7fff);
	r->lease = cpu_to_be32(0xffffffff);
	for (i = 0; i < 16; i++) {
		r->key[i] = 0xa0 + i;
		r->data8[i] = 0x10 + i;
	}
	strscpy(r->name, "ibstack test service", sizeof(r->name));
	for (i = 0; i < 8; i++)
		r->data16[i] = cpu_to_be16(0x2000 + i);
	for (i = 0; i < 4; i++)
		r->data32[i] = cpu_to_be32(0x30000000 + i);
	for (i = 0; i < 2; i++)
		r->data64[i] = cpu_to_be64(0x4000000000000000ULL + i);
}

/* The byte offsets of IBA 15.2.5.14, written out independently. */
static void sa_service_image(u8 *img)
{
	static const u8 id[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	int i;

	memset(img, 0, IB_SA_SERVICE_REC_BYTES);
	memcpy(img, id, 8);
	memcpy(img + 8, gid_b, 16);
	img[24] = 0x7f;
	img[25] = 0xff;				/* 26, 27 reserved */
	memset(img + 28, 0xff, 4);		/* lease */
	for (i = 0; i < 16; i++) {
		img[32 + i] = 0xa0 + i;		/* key */
		img[112 + i] = 0x10 + i;	/* data8 */
	}
	memcpy(img + 48, "ibstack test service", 20);
	for (i = 0; i < 8; i++) {
		img[128 + 2 * i] = 0x20;
		img[129 + 2 * i] = i;
	}
	for (i = 0; i < 4; i++) {
		img[144 + 4 * i] = 0x30;
		img[147 + 4 * i] = i;
	}
	for (i = 0; i < 2; i++) {
		img[160 + 8 * i] = 0x40;
		img[167 + 8 * i] = i;
	}
}

static void sa_service_known(struct kunit *test)
{
	u8 got[IB_SA_SERVICE_REC_BYTES], want[IB_SA_SERVICE_REC_BYTES];
	struct ib_sa_service_rec in, out;

	sa_fill_service(&in);
	sa_service_image(want);
	memset(got, 0xff, sizeof(got));
	ib_sa_pack_service_rec(&in, got);
	ib_kunit_expect_bytes(test, "ServiceRecord", got, want, sizeof(want));

	want[26] = 0xff;
	want[27] = 0xff;
	memset(&out, 0xee, sizeof(out));
	ib_sa_unpack_service_rec(want, &out);
	ib_kunit_expect_bytes(test, "ServiceRecord unpacked", &out, &in,
			      sizeof(in));
	KUNIT_EXPECT_STREQ(test, (char *)out.name, "ibstack test service");
}

/* A PathRecord request as ib_sa puts it on the wire: the 56-byte header. */
static void sa_request_header(struct kunit *test)
{
	static const u8 want[IB_MGMT_SA_HDR] = {
		0x01, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00,	/* Get */
		0x8a, 0xbc, 0xde, 0xf0, 0x00, 0x00, 0x00, 0x2a,	/* TID */
		0x00, 0x35, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* PathRecord */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,		/* RMPP */
		0, 0, 0, 0, 0, 0, 0, 0,				/* SM_Key */
		0, 0, 0, 0,					/* offset */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x0c,	/* mask */
	};
	struct ib_sa_mad *mad;

	KUNIT_ASSERT_EQ(test, sizeof(*mad), (size_t)IB_MGMT_MAD_SIZE);
	KUNIT_ASSERT_EQ(test, offsetof(struct ib_sa_mad, data),
			(size_t)IB_MGMT_SA_HDR);

	mad = kunit_kmalloc(test, sizeof(*mad), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mad);
	memset(mad, 0x5c, sizeof(*mad));
	ib_sa_format_request(mad, IB_MGMT_METHOD_GET, IB_SA_ATTR_PATH_REC,
			     IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
			     IB_SA_PATH_REC_PKEY, 0x8abcdef00000002aULL);
	ib_kunit_expect_bytes(test, "SA header", mad, want, sizeof(want));
	KUNIT_EXPECT_EQ(test, mad->data[0] | mad->data[IB_MGMT_SA_DATA - 1], 0);
}

static void sa_comp_mask_bits(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, (__force u64)IB_SA_PATH_REC_SERVICE_ID,
			(__force u64)cpu_to_be64(3));
	KUNIT_EXPECT_EQ(test, (__force u64)IB_SA_PATH_REC_PREFERENCE,
			(__force u64)cpu_to_be64(1ULL << 22));
	KUNIT_EXPECT_EQ(test, (__force u64)IB_SA_MCMEMBER_REC_JOIN_STATE,
			(__force u64)cpu_to_be64(1ULL << 16));
	KUNIT_EXPECT_EQ(test, (__force u64)IB_SA_SERVICE_REC_SERVICE_LEASE,
			(__force u64)cpu_to_be64(1ULL << 4));
	KUNIT_EXPECT_EQ(test, (__force u64)IB_SA_SERVICE_REC_SERVICE_DATA64(1),
			(__force u64)cpu_to_be64(1ULL << 36));
}

static void sa_status_mapping(struct kunit *test)
{
	struct ib_sa_mad mad = {};

	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), 0);
	mad.mad_hdr.status = cpu_to_be16(0x0300);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -ENOENT);
	mad.mad_hdr.status = cpu_to_be16(0x0100);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -ENOMEM);
	mad.mad_hdr.status = cpu_to_be16(0x0700);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -EACCES);
	mad.mad_hdr.status = cpu_to_be16(0x0001);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -EBUSY);
	mad.mad_hdr.status = cpu_to_be16(0x0600);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -EINVAL);
	mad.mad_hdr.status = cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD);
	KUNIT_EXPECT_EQ(test, ib_sa_status_errno(&mad), -EINVAL);
}

static struct kunit_case sa_pack_cases[] = {
	KUNIT_CASE(sa_path_pack_known),
	KUNIT_CASE(sa_path_unpack_known),
	KUNIT_CASE(sa_path_round_trip_max),
	KUNIT_CASE(sa_mcmember_known),
	KUNIT_CASE(sa_service_known),
	KUNIT_CASE(sa_request_header),
	KUNIT_CASE(sa_comp_mask_bits),
	KUNIT_CASE(sa_status_mapping),
	{}
};

static struct kunit_suite sa_pack_suite = {
	.name = "ib_sa_pack",
	.test_cases = sa_pack_cases,
};

kunit_test_suite(sa_pack_suite);
