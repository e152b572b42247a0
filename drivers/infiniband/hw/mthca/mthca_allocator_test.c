// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suites for the number allocators of ib_mthca: the bitmap
 * allocator (reserved ranges, exhaustion, generations, aligned ranges),
 * the pointer array, and the buddy allocator of MTT segments (splitting,
 * alignment, merging back).
 */

#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/slab.h>

#include "mthca_dev.h"

/* ---- bitmap ---- */

static void bitmap_rejects_bad_sizes(struct kunit *test)
{
	struct mthca_bitmap bm;

	KUNIT_EXPECT_EQ(test, mthca_bitmap_init(&bm, 0, 0, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_init(&bm, 12, 15, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_init(&bm, 8, 7, 6, 3), -EINVAL);
}

static void bitmap_skips_reserved(struct kunit *test)
{
	struct mthca_bitmap bm;
	u32 n, i;

	KUNIT_ASSERT_EQ(test, mthca_bitmap_init(&bm, 16, 15, 3, 2), 0);
	/* 16 numbers, 0..2 and 14..15 reserved: 11 to hand out. */
	for (i = 0; i < 11; i++) {
		n = mthca_bitmap_get(&bm);
		KUNIT_EXPECT_EQ(test, n, 3 + i);
	}
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), MTHCA_BITMAP_NONE);
	mthca_bitmap_cleanup(&bm);
}

static void bitmap_reuses_freed(struct kunit *test)
{
	struct mthca_bitmap bm;
	u32 a, b;

	KUNIT_ASSERT_EQ(test, mthca_bitmap_init(&bm, 4, 3, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), 0U);
	a = mthca_bitmap_get(&bm);
	KUNIT_EXPECT_EQ(test, a, 1U);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), 2U);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), 3U);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), MTHCA_BITMAP_NONE);
	mthca_bitmap_put(&bm, a);
	b = mthca_bitmap_get(&bm);
	/* The mask has no bits above the range: no generation. */
	KUNIT_EXPECT_EQ(test, b, 1U);
	mthca_bitmap_cleanup(&bm);
}

static void bitmap_generation_changes_numbers(struct kunit *test)
{
	struct mthca_bitmap bm;
	u32 first, again;

	/* 8 numbers; the mask lets 4 more bits count generations. */
	KUNIT_ASSERT_EQ(test, mthca_bitmap_init(&bm, 8, 0x7f, 1, 0), 0);
	first = mthca_bitmap_get(&bm);
	KUNIT_EXPECT_EQ(test, first, 1U);
	mthca_bitmap_put(&bm, first);
	again = mthca_bitmap_get(&bm);
	/* Same slot, different number: a stale handle does not match. */
	KUNIT_EXPECT_EQ(test, again & 7, 1U);
	KUNIT_EXPECT_NE(test, again, first);
	KUNIT_EXPECT_EQ(test, again & ~0x7fU, 0U);
	/* Putting with generation bits frees the right slot. */
	mthca_bitmap_put(&bm, again);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm) & 7, 1U);
	mthca_bitmap_cleanup(&bm);
}

static void bitmap_range_aligned(struct kunit *test)
{
	struct mthca_bitmap bm;
	u32 r, s;

	KUNIT_ASSERT_EQ(test, mthca_bitmap_init(&bm, 64, 63, 1, 0), 0);
	r = mthca_bitmap_get_range(&bm, 4, 4);
	KUNIT_EXPECT_EQ(test, r, 4U);
	s = mthca_bitmap_get_range(&bm, 2, 8);
	KUNIT_EXPECT_EQ(test, s, 8U);
	/* Alignment left 1..3 free: single gets take the lowest. */
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), 1U);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get_range(&bm, 65, 1),
			MTHCA_BITMAP_NONE);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get_range(&bm, 2, 3),
			MTHCA_BITMAP_NONE);
	mthca_bitmap_put_range(&bm, r, 4);
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get_range(&bm, 4, 4), 4U);
	mthca_bitmap_cleanup(&bm);
}

static void bitmap_exhausts_exactly(struct kunit *test)
{
	unsigned long *seen;
	struct mthca_bitmap bm;
	u32 n, i;

	seen = bitmap_zalloc(1024, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_EQ(test, mthca_bitmap_init(&bm, 1024, 1023, 8, 8), 0);
	for (i = 0; i < 1024 - 16; i++) {
		n = mthca_bitmap_get(&bm);
		KUNIT_ASSERT_NE(test, n, MTHCA_BITMAP_NONE);
		KUNIT_ASSERT_GE(test, n, 8U);
		KUNIT_ASSERT_LT(test, n, 1016U);
		KUNIT_ASSERT_FALSE(test, test_bit(n, seen));
		__set_bit(n, seen);
	}
	KUNIT_EXPECT_EQ(test, mthca_bitmap_get(&bm), MTHCA_BITMAP_NONE);
	mthca_bitmap_cleanup(&bm);
	bitmap_free(seen);
}

static struct kunit_case mthca_bitmap_cases[] = {
	KUNIT_CASE(bitmap_rejects_bad_sizes),
	KUNIT_CASE(bitmap_skips_reserved),
	KUNIT_CASE(bitmap_reuses_freed),
	KUNIT_CASE(bitmap_generation_changes_numbers),
	KUNIT_CASE(bitmap_range_aligned),
	KUNIT_CASE(bitmap_exhausts_exactly),
	{}
};

static struct kunit_suite mthca_bitmap_suite = {
	.name = "mthca_bitmap",
	.test_cases = mthca_bitmap_cases,
};

/* ---- pointer array ---- */

static void ptr_array_set_get_clear(struct kunit *test)
{
	struct mthca_ptr_array pa;
	int a, b;

	KUNIT_ASSERT_EQ(test, mthca_ptr_array_init(&pa, 100000), 0);
	KUNIT_EXPECT_NULL(test, mthca_ptr_array_get(&pa, 5));
	KUNIT_EXPECT_EQ(test, mthca_ptr_array_set(&pa, 5, &a), 0);
	KUNIT_EXPECT_EQ(test, mthca_ptr_array_set(&pa, 99999, &b), 0);
	KUNIT_EXPECT_PTR_EQ(test, mthca_ptr_array_get(&pa, 5), (void *)&a);
	KUNIT_EXPECT_PTR_EQ(test, mthca_ptr_array_get(&pa, 99999), (void *)&b);
	KUNIT_EXPECT_NULL(test, mthca_ptr_array_get(&pa, 6));
	KUNIT_EXPECT_EQ(test, mthca_ptr_array_set(&pa, 200000, &a), -EINVAL);
	KUNIT_EXPECT_NULL(test, mthca_ptr_array_get(&pa, 200000));

	mthca_ptr_array_clear(&pa, 5);
	KUNIT_EXPECT_NULL(test, mthca_ptr_array_get(&pa, 5));
	/* The page of index 5 emptied and went away. */
	KUNIT_EXPECT_NULL(test, pa.pages[0]);
	KUNIT_EXPECT_PTR_EQ(test, mthca_ptr_array_get(&pa, 99999), (void *)&b);
	mthca_ptr_array_cleanup(&pa);
}

static struct kunit_case mthca_ptr_array_cases[] = {
	KUNIT_CASE(ptr_array_set_get_clear),
	{}
};

static struct kunit_suite mthca_ptr_array_suite = {
	.name = "mthca_ptr_array",
	.test_cases = mthca_ptr_array_cases,
};

/* ---- buddy ---- */

static void buddy_splits_in_order(struct kunit *test)
{
	struct mthca_buddy b;

	KUNIT_ASSERT_EQ(test, mthca_buddy_init(&b, 4), 0);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 0), 0U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 0), 1U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 1), 2U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 2), 4U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 3), 8U);
	/* Everything is taken now. */
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 0), MTHCA_BITMAP_NONE);
	mthca_buddy_cleanup(&b);
}

static void buddy_blocks_aligned(struct kunit *test)
{
	struct mthca_buddy b;
	u32 s;
	int o;

	KUNIT_ASSERT_EQ(test, mthca_buddy_init(&b, 10), 0);
	/* An odd segment first, so later blocks need splitting. */
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 0), 0U);
	for (o = 0; o <= 8; o++) {
		s = mthca_buddy_alloc(&b, o);
		KUNIT_ASSERT_NE(test, s, MTHCA_BITMAP_NONE);
		KUNIT_EXPECT_EQ_MSG(test, s & ((1U << o) - 1), 0U,
				    "order %d block at %u", o, s);
	}
	mthca_buddy_cleanup(&b);
}

static void buddy_merges_back(struct kunit *test)
{
	struct mthca_buddy b;
	u32 segs[64];
	int i;

	KUNIT_ASSERT_EQ(test, mthca_buddy_init(&b, 6), 0);
	for (i = 0; i < 64; i++) {
		segs[i] = mthca_buddy_alloc(&b, 0);
		KUNIT_ASSERT_EQ(test, segs[i], (u32)i);
	}
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 0), MTHCA_BITMAP_NONE);
	/* Free in a scrambled order; all must coalesce. */
	for (i = 0; i < 64; i++)
		mthca_buddy_free(&b, segs[(i * 37) % 64], 0);
	KUNIT_EXPECT_EQ(test, b.nfree[6], 1U);
	for (i = 0; i < 6; i++)
		KUNIT_EXPECT_EQ(test, b.nfree[i], 0U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 6), 0U);
	mthca_buddy_cleanup(&b);
}

static void buddy_partial_free(struct kunit *test)
{
	struct mthca_buddy b;
	u32 a, c;

	KUNIT_ASSERT_EQ(test, mthca_buddy_init(&b, 3), 0);
	a = mthca_buddy_alloc(&b, 1);
	c = mthca_buddy_alloc(&b, 1);
	KUNIT_EXPECT_EQ(test, a, 0U);
	KUNIT_EXPECT_EQ(test, c, 2U);
	mthca_buddy_free(&b, a, 1);
	/* Its buddy (2..3) is in use: no order-2 block at 0 yet. */
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 2), 4U);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 2), MTHCA_BITMAP_NONE);
	mthca_buddy_free(&b, c, 1);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 2), 0U);
	mthca_buddy_cleanup(&b);
}

static void buddy_rejects_bad_orders(struct kunit *test)
{
	struct mthca_buddy b;

	KUNIT_EXPECT_EQ(test, mthca_buddy_init(&b, -1), -EINVAL);
	KUNIT_ASSERT_EQ(test, mthca_buddy_init(&b, 2), 0);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 3), MTHCA_BITMAP_NONE);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, -1), MTHCA_BITMAP_NONE);
	KUNIT_EXPECT_EQ(test, mthca_buddy_alloc(&b, 2), 0U);
	mthca_buddy_cleanup(&b);
}

static struct kunit_case mthca_buddy_cases[] = {
	KUNIT_CASE(buddy_splits_in_order),
	KUNIT_CASE(buddy_blocks_aligned),
	KUNIT_CASE(buddy_merges_back),
	KUNIT_CASE(buddy_partial_free),
	KUNIT_CASE(buddy_rejects_bad_orders),
	{}
};

static struct kunit_suite mthca_buddy_suite = {
	.name = "mthca_buddy",
	.test_cases = mthca_buddy_cases,
};

kunit_test_suites(&mthca_bitmap_suite, &mthca_ptr_array_suite,
		  &mthca_buddy_suite);
