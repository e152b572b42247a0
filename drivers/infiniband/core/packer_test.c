// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for ib_pack() and ib_unpack(): a made-up header whose fields
 * cross byte and word boundaries, checked against bytes worked out by hand,
 * and single fields of many widths at every bit offset, checked against a
 * bit-by-bit reference.
 */

#include <kunit/test.h>
#include <linux/string.h>

#include <rdma/ib_pack.h>

#include "ib_kunit.h"

/* The made-up header: 28 bytes, every bit covered by a row. */
struct pk_sample {
	u8 a;		/* 3 bits at bit 0 */
	u8 b;		/* 6 bits at bit 5: crosses byte 0 into byte 1 */
	__be16 c;	/* 13 bits at bit 11: bytes 1 to 2 */
	__be32 d;	/* 24 bits at word 1, bit 4: bytes 4 to 7 */
	__be64 e;	/* 40 bits at word 2, bit 4: crosses into word 3 */
	u8 raw[12];	/* words 4 to 6, copied as bytes */
};

#define PK_BYTES 28

static const struct ib_field pk_rows[] = {
	{ offsetof(struct pk_sample, a), 1, 0, 0, 3, "a" },
	{ 0, 0, 0, 3, 2, "reserved" },
	{ offsetof(struct pk_sample, b), 1, 0, 5, 6, "b" },
	{ offsetof(struct pk_sample, c), 2, 0, 11, 13, "c" },
	{ 0, 0, 0, 24, 8, "reserved" },
	{ 0, 0, 1, 0, 4, "reserved" },
	{ offsetof(struct pk_sample, d), 4, 1, 4, 24, "d" },
	{ 0, 0, 1, 28, 4, "reserved" },
	{ 0, 0, 2, 0, 4, "reserved" },
	{ offsetof(struct pk_sample, e), 8, 2, 4, 40, "e" },
	{ 0, 0, 3, 12, 20, "reserved" },
	{ offsetof(struct pk_sample, raw), 12, 4, 0, 96, "raw" },
};

/*
 * a = 5, b = 0x2b, c = 0x1abc, d = 0xabcdef, e = 0x123456789a,
 * raw = 00 11 22 ... bb. Word 0 in bits:
 *   101 00 101011 1101010111100 00000000 -> a5 7a bc 00
 * word 1: 0000, abcdef, 0000 -> 0a bc de f0; words 2 and 3: 0000, then
 * 12 34 56 78 9a, then 20 zero bits -> 01 23 45 67 89 a0 00 00.
 */
static const u8 pk_wire[PK_BYTES] = {
	0xa5, 0x7a, 0xbc, 0x00, 0x0a, 0xbc, 0xde, 0xf0,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xa0, 0x00, 0x00,
	0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	0x88, 0x99, 0xaa, 0xbb,
};

static void pk_fill(struct pk_sample *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->a = 5;
	s->b = 0x2b;
	s->c = cpu_to_be16(0x1abc);
	s->d = cpu_to_be32(0xabcdef);
	s->e = cpu_to_be64(0x123456789aULL);
	for (i = 0; i < sizeof(s->raw); i++)
		s->raw[i] = i * 0x11;
}

static void pk_pack_known_bytes(struct kunit *test)
{
	struct pk_sample s;
	u8 buf[PK_BYTES];

	pk_fill(&s);
	/* Reserved bits must come out zero whatever was there. */
	memset(buf, 0xff, sizeof(buf));
	ib_pack(pk_rows, ARRAY_SIZE(pk_rows), &s, buf);
	ib_kunit_expect_bytes(test, "packed", buf, pk_wire, PK_BYTES);
}

static void pk_unpack_known_bytes(struct kunit *test)
{
	struct pk_sample s, want;

	pk_fill(&want);
	memset(&s, 0, sizeof(s));
	ib_unpack(pk_rows, ARRAY_SIZE(pk_rows), pk_wire, &s);
	KUNIT_EXPECT_EQ(test, s.a, 5);
	KUNIT_EXPECT_EQ(test, s.b, 0x2b);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(s.c), 0x1abc);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(s.d), 0xabcdef);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(s.e), 0x123456789aULL);
	ib_kunit_expect_bytes(test, "raw", s.raw, want.raw, sizeof(s.raw));
}

/* All-ones values: exactly the field bits set, reserved bits clear. */
static void pk_all_ones(struct kunit *test)
{
	static const u8 ones[PK_BYTES] = {
		0xe7, 0xff, 0xff, 0x00, 0x0f, 0xff, 0xff, 0xf0,
		0x0f, 0xff, 0xff, 0xff, 0xff, 0xf0, 0x00, 0x00,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff,
	};
	struct pk_sample s, back;
	u8 buf[PK_BYTES];

	memset(&s, 0xff, sizeof(s));
	memset(buf, 0, sizeof(buf));
	ib_pack(pk_rows, ARRAY_SIZE(pk_rows), &s, buf);
	ib_kunit_expect_bytes(test, "all ones", buf, ones, PK_BYTES);

	memset(&back, 0, sizeof(back));
	ib_unpack(pk_rows, ARRAY_SIZE(pk_rows), buf, &back);
	/* Values come back truncated to their widths. */
	KUNIT_EXPECT_EQ(test, back.a, 0x7);
	KUNIT_EXPECT_EQ(test, back.b, 0x3f);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(back.c), 0x1fff);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(back.d), 0xffffff);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(back.e), 0xffffffffffULL);
}

/* Round trip of values that differ in every field. */
static void pk_round_trip(struct kunit *test)
{
	struct pk_sample s, back;
	u8 buf[PK_BYTES];

	pk_fill(&s);
	ib_pack(pk_rows, ARRAY_SIZE(pk_rows), &s, buf);
	memset(&back, 0, sizeof(back));
	ib_unpack(pk_rows, ARRAY_SIZE(pk_rows), buf, &back);
	ib_kunit_expect_bytes(test, "round trip", &back, &s, sizeof(s));
}

/* Bits that no row covers are left alone; reserved rows are skipped on unpack. */
static void pk_uncovered_bits_kept(struct kunit *test)
{
	static const struct ib_field one[] = {
		{ offsetof(struct pk_sample, c), 2, 0, 6, 5, "c" },
	};
	struct pk_sample s = { .c = cpu_to_be16(0x1f), .a = 0x42 };
	u8 buf[4];

	memset(buf, 0, sizeof(buf));
	ib_pack(one, ARRAY_SIZE(one), &s, buf);
	/* bits 6..10: the low 2 bits of byte 0 and the top 3 of byte 1 */
	KUNIT_EXPECT_EQ(test, buf[0], 0x03);
	KUNIT_EXPECT_EQ(test, buf[1], 0xe0);
	KUNIT_EXPECT_EQ(test, buf[2], 0x00);

	memset(buf, 0x5a, sizeof(buf));
	s.c = 0;
	ib_pack(one, ARRAY_SIZE(one), &s, buf);
	KUNIT_EXPECT_EQ(test, buf[0], 0x58);
	KUNIT_EXPECT_EQ(test, buf[1], 0x1a);
	KUNIT_EXPECT_EQ(test, buf[2], 0x5a);
	KUNIT_EXPECT_EQ(test, buf[3], 0x5a);

	ib_unpack(pk_rows, 2, pk_wire, &s);	/* a and a reserved row */
	KUNIT_EXPECT_EQ(test, s.a, 5);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(s.c), 0);
}

/* Reference: bit @pos of a big-endian bit string. */
static unsigned int pk_bit(const u8 *buf, unsigned int pos)
{
	return (buf[pos / 8] >> (7 - pos % 8)) & 1;
}

/*
 * One field of each width from 1 to 64 bits at every start bit from 0 to
 * 71: pack into zeros and compare each bit with the value's, then unpack.
 */
static void pk_every_offset_and_width(struct kunit *test)
{
	static const unsigned int member_bytes[] = { 1, 2, 4, 8 };
	u8 buf[20];
	__be64 member;
	unsigned int width, start, i;

	for (width = 1; width <= 64; width++) {
		unsigned int size = 0;
		u64 mask = width == 64 ? ~0ULL : (1ULL << width) - 1;
		/* a pattern whose neighbouring bits differ, plus excess bits */
		u64 val = 0xa5c3d2e1f0b49687ULL;

		for (i = 0; i < ARRAY_SIZE(member_bytes); i++) {
			if (width <= member_bytes[i] * 8) {
				size = member_bytes[i];
				break;
			}
		}

		for (start = 0; start < 72; start++) {
			struct ib_field f = {
				.struct_offset_bytes = 0,
				.struct_size_bytes = size,
				.offset_words = start / 32,
				.offset_bits = start % 32,
				.size_bits = width,
				.field_name = "f",
			};
			u64 got;
			bool ok = true;

			/* the member holds val in its own size, big-endian */
			memset(&member, 0, sizeof(member));
			for (i = 0; i < size; i++)
				((u8 *)&member)[i] = val >> (8 * (size - 1 - i));

			memset(buf, 0, sizeof(buf));
			ib_pack(&f, 1, &member, buf);
			for (i = 0; i < sizeof(buf) * 8; i++) {
				unsigned int want = 0;

				if (i >= start && i < start + width)
					want = (val >> (width - 1 - (i - start))) & 1;
				if (pk_bit(buf, i) != want)
					ok = false;
			}
			KUNIT_EXPECT_TRUE_MSG(test, ok, "width %u at bit %u", width, start);

			memset(&member, 0, sizeof(member));
			ib_unpack(&f, 1, buf, &member);
			got = 0;
			for (i = 0; i < size; i++)
				got = got << 8 | ((u8 *)&member)[i];
			KUNIT_EXPECT_EQ_MSG(test, got, val & mask,
					    "width %u at bit %u", width, start);
		}
	}
}

/* A reserved row wider than 64 bits zeroes whole bytes. */
static void pk_wide_reserved(struct kunit *test)
{
	static const struct ib_field rsvd[] = {
		{ 0, 0, 1, 8, 80, "reserved" },
	};
	u8 buf[16];
	int i;

	memset(buf, 0xff, sizeof(buf));
	ib_pack(rsvd, ARRAY_SIZE(rsvd), NULL, buf);
	for (i = 0; i < sizeof(buf); i++)
		KUNIT_EXPECT_EQ_MSG(test, buf[i], i >= 5 && i < 15 ? 0 : 0xff,
				    "byte %d", i);
}

static struct kunit_case ib_packer_cases[] = {
	KUNIT_CASE(pk_pack_known_bytes),
	KUNIT_CASE(pk_unpack_known_bytes),
	KUNIT_CASE(pk_all_ones),
	KUNIT_CASE(pk_round_trip),
	KUNIT_CASE(pk_uncovered_bits_kept),
	KUNIT_CASE(pk_every_offset_and_width),
	KUNIT_CASE(pk_wide_reserved),
	{}
};

static struct kunit_suite ib_packer_suite = {
	.name = "ib_packer",
	.test_cases = ib_packer_cases,
};

kunit_test_suite(ib_packer_suite);
