// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Table-driven packing of InfiniBand headers.
 *
 * IBA draws every header as rows of 32-bit words with bit 0 the most
 * significant, so a field is named by (word, first bit, width). Here the
 * header is treated as one big-endian bit string: bit n of the header is
 * bit 7 - n % 8 of byte n / 8. A value is moved a byte-sized chunk at a
 * time, which lets a field start anywhere and cross byte and word
 * boundaries.
 */

#include <linux/bits.h>
#include <linux/bug.h>
#include <linux/export.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include <rdma/ib_pack.h>

/* Absolute position of the first (most significant) bit of a field. */
static unsigned int ib_field_bit(const struct ib_field *f)
{
	return f->offset_words * 32 + f->offset_bits;
}

/*
 * Decide whether a table row can be handled; a bad row is a bug in the
 * table, reported once and then ignored.
 */
static bool ib_field_usable(const struct ib_field *f)
{
	size_t member = f->struct_size_bytes;
	bool ok;

	if (f->offset_words < 0 || f->offset_bits < 0 || f->size_bits <= 0)
		ok = false;
	else if (f->size_bits <= 64)
		ok = member == 0 ||
		     ((member == 1 || member == 2 || member == 4 || member == 8) &&
		      f->size_bits <= member * 8);
	else
		ok = ib_field_bit(f) % 8 == 0 && f->size_bits % 8 == 0 &&
		     (member == 0 || member == f->size_bits / 8);

	WARN_ONCE(!ok, "ib_pack: bad field %s (word %d bit %d, %d bits, member %zu bytes)\n",
		  f->field_name ?: "?", f->offset_words, f->offset_bits,
		  f->size_bits, member);
	return ok;
}

/* Write the low @len bits of @val at bit @pos of @buf, leaving other bits. */
static void ib_put_bits(u8 *buf, unsigned int pos, unsigned int len, u64 val)
{
	while (len) {
		unsigned int lead = pos % 8;
		unsigned int take = min(8 - lead, len);
		unsigned int shift = 8 - lead - take;
		u8 mask = GENMASK(take - 1, 0) << shift;
		u8 chunk = (u8)((val >> (len - take)) << shift);

		buf[pos / 8] = (buf[pos / 8] & ~mask) | (chunk & mask);
		pos += take;
		len -= take;
	}
}

/* Read @len bits starting at bit @pos of @buf. */
static u64 ib_get_bits(const u8 *buf, unsigned int pos, unsigned int len)
{
	u64 val = 0;

	while (len) {
		unsigned int lead = pos % 8;
		unsigned int take = min(8 - lead, len);
		unsigned int shift = 8 - lead - take;

		val = (val << take) | ((buf[pos / 8] >> shift) & GENMASK(take - 1, 0));
		pos += take;
		len -= take;
	}
	return val;
}

/* The value of a member: u8, or a big-endian 16, 32 or 64-bit integer. */
static u64 ib_member_read(const void *structure, const struct ib_field *f)
{
	const u8 *p = (const u8 *)structure + f->struct_offset_bytes;

	switch (f->struct_size_bytes) {
	case 1:
		return *p;
	case 2:
		return get_unaligned_be16(p);
	case 4:
		return get_unaligned_be32(p);
	case 8:
		return get_unaligned_be64(p);
	default:
		return 0;	/* reserved */
	}
}

static void ib_member_write(void *structure, const struct ib_field *f, u64 val)
{
	u8 *p = (u8 *)structure + f->struct_offset_bytes;

	switch (f->struct_size_bytes) {
	case 1:
		*p = (u8)val;
		break;
	case 2:
		put_unaligned_be16((u16)val, p);
		break;
	case 4:
		put_unaligned_be32((u32)val, p);
		break;
	case 8:
		put_unaligned_be64(val, p);
		break;
	}
}

/**
 * ib_pack() - build wire bytes from a structure, following a field table
 * @desc: the field table
 * @desc_len: number of rows in @desc
 * @structure: the unpacked structure the table describes
 * @buf: the header in wire format
 *
 * Every bit of @buf covered by a row of @desc is written: with the member's
 * value, or with zeros for a reserved row. Bits no row covers are left as
 * they were. Values wider than their field are truncated to its width.
 */
void ib_pack(const struct ib_field *desc, int desc_len,
	     const void *structure, void *buf)
{
	const struct ib_field *f;
	u8 *out = buf;

	for (f = desc; f < desc + desc_len; f++) {
		unsigned int bit = ib_field_bit(f);

		if (!ib_field_usable(f))
			continue;

		if (f->size_bits > 64) {
			if (f->struct_size_bytes)
				memcpy(out + bit / 8,
				       (const u8 *)structure + f->struct_offset_bytes,
				       f->size_bits / 8);
			else
				memset(out + bit / 8, 0, f->size_bits / 8);
			continue;
		}

		ib_put_bits(out, bit, f->size_bits, ib_member_read(structure, f));
	}
}
EXPORT_SYMBOL(ib_pack);

/**
 * ib_unpack() - fill a structure from wire bytes, following a field table
 * @desc: the field table
 * @desc_len: number of rows in @desc
 * @buf: the header in wire format
 * @structure: the unpacked structure the table describes
 *
 * Each member named by a row of @desc receives its field's value; reserved
 * rows are skipped and other members of @structure are left untouched.
 */
void ib_unpack(const struct ib_field *desc, int desc_len,
	       const void *buf, void *structure)
{
	const struct ib_field *f;
	const u8 *in = buf;

	for (f = desc; f < desc + desc_len; f++) {
		unsigned int bit = ib_field_bit(f);

		if (!f->struct_size_bytes || !ib_field_usable(f))
			continue;

		if (f->size_bits > 64)
			memcpy((u8 *)structure + f->struct_offset_bytes,
			       in + bit / 8, f->size_bits / 8);
		else
			ib_member_write(structure, f,
					ib_get_bits(in, bit, f->size_bits));
	}
}
EXPORT_SYMBOL(ib_unpack);
