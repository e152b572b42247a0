// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Number allocators of ib_mthca: a bitmap for object numbers (PDs, UARs,
 * MPT indices, ...), a sparse pointer array for looking objects up by
 * number, and the buddy allocator of MTT segments.
 *
 * Pure logic: no hardware access, so the KUnit suites in
 * mthca_allocator_test.c run it on UML.
 */

#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "mthca_dev.h"

/**
 * mthca_bitmap_init() - set up a number allocator
 * @bm: the allocator
 * @count: numbers in the range, a power of two
 * @mask: mask of the numbers handed out; bits of it above @count - 1 form
 *	a generation that changes as numbers are recycled
 * @reserved_low: numbers 0..@reserved_low - 1 are never handed out
 * @reserved_top: the top @reserved_top numbers are never handed out
 *
 * Return: 0, -EINVAL for a bad @count, or -ENOMEM.
 */
int mthca_bitmap_init(struct mthca_bitmap *bm, u32 count, u32 mask,
		      u32 reserved_low, u32 reserved_top)
{
	if (!count || !is_power_of_2(count) ||
	    reserved_low + reserved_top > count)
		return -EINVAL;

	spin_lock_init(&bm->lock);
	bm->hint = 0;
	bm->gen = 0;
	bm->count = count;
	bm->gen_mask = mask;
	bm->reserved_top = reserved_top;
	bm->bits = bitmap_zalloc(count, GFP_KERNEL);
	if (!bm->bits)
		return -ENOMEM;
	bitmap_set(bm->bits, 0, reserved_low);
	return 0;
}

/**
 * mthca_bitmap_cleanup() - free the allocator's memory
 * @bm: the allocator
 */
void mthca_bitmap_cleanup(struct mthca_bitmap *bm)
{
	bitmap_free(bm->bits);
	bm->bits = NULL;
}

/* The next generation: the bits of the mask above the range. */
static void bitmap_next_gen(struct mthca_bitmap *bm)
{
	bm->gen = (bm->gen + bm->count) & bm->gen_mask;
}

/**
 * mthca_bitmap_get_range() - take @cnt consecutive numbers
 * @bm: the allocator
 * @cnt: how many
 * @align: alignment of the first, a power of two
 *
 * Callable from any context.
 *
 * Return: the first number (with the current generation bits), or
 * MTHCA_BITMAP_NONE.
 */
u32 mthca_bitmap_get_range(struct mthca_bitmap *bm, u32 cnt, u32 align)
{
	u32 limit = bm->count - bm->reserved_top;
	unsigned long flags;
	unsigned long n;
	u32 ret = MTHCA_BITMAP_NONE;

	if (!cnt || !align || !is_power_of_2(align))
		return MTHCA_BITMAP_NONE;

	spin_lock_irqsave(&bm->lock, flags);
	n = bitmap_find_next_zero_area(bm->bits, limit, bm->hint, cnt,
				       align - 1);
	if (n >= limit) {
		/* Wrapped: numbers below the hint come back as a new gen. */
		bitmap_next_gen(bm);
		n = bitmap_find_next_zero_area(bm->bits, limit, 0, cnt,
					       align - 1);
	}
	if (n < limit) {
		bitmap_set(bm->bits, n, cnt);
		if (n == bm->hint)
			bm->hint = n + cnt;
		ret = (u32)n | bm->gen;
	}
	spin_unlock_irqrestore(&bm->lock, flags);
	return ret;
}

/**
 * mthca_bitmap_get() - take one number
 * @bm: the allocator
 *
 * Callable from any context.
 *
 * Return: the number (with the current generation bits), or
 * MTHCA_BITMAP_NONE.
 */
u32 mthca_bitmap_get(struct mthca_bitmap *bm)
{
	return mthca_bitmap_get_range(bm, 1, 1);
}

/**
 * mthca_bitmap_put_range() - give back what mthca_bitmap_get_range() took
 * @bm: the allocator
 * @num: the first number (generation bits are ignored)
 * @cnt: how many
 */
void mthca_bitmap_put_range(struct mthca_bitmap *bm, u32 num, u32 cnt)
{
	unsigned long flags;

	num &= bm->count - 1;
	spin_lock_irqsave(&bm->lock, flags);
	bitmap_clear(bm->bits, num, cnt);
	if (num < bm->hint)
		bm->hint = num;
	bitmap_next_gen(bm);
	spin_unlock_irqrestore(&bm->lock, flags);
}

/**
 * mthca_bitmap_put() - give a number back
 * @bm: the allocator
 * @num: the number (generation bits are ignored)
 */
void mthca_bitmap_put(struct mthca_bitmap *bm, u32 num)
{
	mthca_bitmap_put_range(bm, num, 1);
}

/* ------------------------------------------------------------------ */
/* Pointer array                                                       */
/* ------------------------------------------------------------------ */

#define PTRS_PER_PAGE	(PAGE_SIZE / sizeof(void *))

/**
 * mthca_ptr_array_init() - set up an empty pointer array
 * @pa: the array
 * @nent: indices 0..@nent - 1 may be used
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_ptr_array_init(struct mthca_ptr_array *pa, u32 nent)
{
	pa->npages = DIV_ROUND_UP(nent, PTRS_PER_PAGE);
	pa->pages = kcalloc(pa->npages, sizeof(*pa->pages), GFP_KERNEL);
	pa->used = kcalloc(pa->npages, sizeof(*pa->used), GFP_KERNEL);
	if (!pa->pages || !pa->used) {
		kfree(pa->pages);
		kfree(pa->used);
		pa->pages = NULL;
		pa->used = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * mthca_ptr_array_cleanup() - free the array (the pointers are not freed)
 * @pa: the array
 */
void mthca_ptr_array_cleanup(struct mthca_ptr_array *pa)
{
	unsigned int i;

	for (i = 0; i < pa->npages; i++)
		free_page((unsigned long)pa->pages[i]);
	kfree(pa->pages);
	kfree(pa->used);
	pa->pages = NULL;
	pa->used = NULL;
}

/**
 * mthca_ptr_array_get() - the pointer stored at @idx
 * @pa: the array
 * @idx: index
 *
 * Return: the pointer, or NULL if none is stored.
 */
void *mthca_ptr_array_get(struct mthca_ptr_array *pa, u32 idx)
{
	u32 p = idx / PTRS_PER_PAGE;

	if (p >= pa->npages || !pa->pages[p])
		return NULL;
	return pa->pages[p][idx % PTRS_PER_PAGE];
}

/**
 * mthca_ptr_array_set() - store @ptr at @idx
 * @pa: the array
 * @idx: index, with no pointer stored yet
 * @ptr: a non-NULL pointer
 *
 * May allocate with GFP_ATOMIC.
 *
 * Return: 0, -EINVAL for a bad index, or -ENOMEM.
 */
int mthca_ptr_array_set(struct mthca_ptr_array *pa, u32 idx, void *ptr)
{
	u32 p = idx / PTRS_PER_PAGE;

	if (p >= pa->npages || !ptr)
		return -EINVAL;
	if (!pa->pages[p]) {
		pa->pages[p] = (void **)get_zeroed_page(GFP_ATOMIC);
		if (!pa->pages[p])
			return -ENOMEM;
	}
	if (!pa->pages[p][idx % PTRS_PER_PAGE])
		pa->used[p]++;
	pa->pages[p][idx % PTRS_PER_PAGE] = ptr;
	return 0;
}

/**
 * mthca_ptr_array_clear() - remove the pointer at @idx
 * @pa: the array
 * @idx: index
 *
 * Frees the page of pointers when it empties.
 */
void mthca_ptr_array_clear(struct mthca_ptr_array *pa, u32 idx)
{
	u32 p = idx / PTRS_PER_PAGE;

	if (p >= pa->npages || !pa->pages[p] ||
	    !pa->pages[p][idx % PTRS_PER_PAGE])
		return;
	pa->pages[p][idx % PTRS_PER_PAGE] = NULL;
	if (--pa->used[p] == 0) {
		free_page((unsigned long)pa->pages[p]);
		pa->pages[p] = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Buddy allocator of MTT segments                                     */
/* ------------------------------------------------------------------ */

/**
 * mthca_buddy_init() - one free block of 2^@max_order segments
 * @buddy: the allocator
 * @max_order: log2 of the segments managed
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int mthca_buddy_init(struct mthca_buddy *buddy, int max_order)
{
	int o;

	if (max_order < 0 || max_order > 30)
		return -EINVAL;
	spin_lock_init(&buddy->lock);
	buddy->max_order = max_order;
	buddy->bits = kcalloc(max_order + 1, sizeof(*buddy->bits), GFP_KERNEL);
	buddy->nfree = kcalloc(max_order + 1, sizeof(*buddy->nfree),
			       GFP_KERNEL);
	if (!buddy->bits || !buddy->nfree)
		goto fail;

	for (o = 0; o <= max_order; o++) {
		/* 2^(max_order - o) blocks of order o. */
		buddy->bits[o] = bitmap_zalloc(1UL << (max_order - o),
					       GFP_KERNEL);
		if (!buddy->bits[o])
			goto fail;
	}
	__set_bit(0, buddy->bits[max_order]);
	buddy->nfree[max_order] = 1;
	return 0;

fail:
	mthca_buddy_cleanup(buddy);
	return -ENOMEM;
}

/**
 * mthca_buddy_cleanup() - free the allocator's memory
 * @buddy: the allocator
 */
void mthca_buddy_cleanup(struct mthca_buddy *buddy)
{
	int o;

	if (buddy->bits)
		for (o = 0; o <= buddy->max_order; o++)
			bitmap_free(buddy->bits[o]);
	kfree(buddy->bits);
	kfree(buddy->nfree);
	buddy->bits = NULL;
	buddy->nfree = NULL;
}

/**
 * mthca_buddy_alloc() - take a block of 2^@order segments
 * @buddy: the allocator
 * @order: log2 of the block
 *
 * The block is aligned to its size.  Splits the smallest larger free
 * block when no block of @order is free.
 *
 * Return: the first segment, or MTHCA_BITMAP_NONE.
 */
u32 mthca_buddy_alloc(struct mthca_buddy *buddy, int order)
{
	unsigned long blk = 0;
	int o;

	if (order < 0 || order > buddy->max_order)
		return MTHCA_BITMAP_NONE;

	spin_lock(&buddy->lock);
	for (o = order; o <= buddy->max_order; o++) {
		if (!buddy->nfree[o])
			continue;
		blk = find_first_bit(buddy->bits[o],
				     1UL << (buddy->max_order - o));
		break;
	}
	if (o > buddy->max_order) {
		spin_unlock(&buddy->lock);
		return MTHCA_BITMAP_NONE;
	}
	__clear_bit(blk, buddy->bits[o]);
	buddy->nfree[o]--;

	/* Split down to @order; the upper halves become free. */
	while (o > order) {
		o--;
		blk <<= 1;
		__set_bit(blk + 1, buddy->bits[o]);
		buddy->nfree[o]++;
	}
	spin_unlock(&buddy->lock);
	return (u32)blk << order;
}

/**
 * mthca_buddy_free() - give a block back, merging it with free buddies
 * @buddy: the allocator
 * @seg: first segment, as mthca_buddy_alloc() returned it
 * @order: the order it was taken with
 */
void mthca_buddy_free(struct mthca_buddy *buddy, u32 seg, int order)
{
	unsigned long blk = seg >> order;

	spin_lock(&buddy->lock);
	while (order < buddy->max_order && test_bit(blk ^ 1, buddy->bits[order])) {
		__clear_bit(blk ^ 1, buddy->bits[order]);
		buddy->nfree[order]--;
		blk >>= 1;
		order++;
	}
	__set_bit(blk, buddy->bits[order]);
	buddy->nfree[order]++;
	spin_unlock(&buddy->lock);
}
