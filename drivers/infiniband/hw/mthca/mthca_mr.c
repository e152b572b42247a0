// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: MTT segments (buddy allocator over the MTT table in
 * ICM), MPT entries handed to the HCA with SW2HW_MPT, and the queue
 * buffers of the driver (a DMA buffer with its own MR at IOVA 0).
 *
 * Keys of a mem-free HCA are the MPT index rotated left by 8 bits; the
 * bits of the index above the table size change as indices are reused,
 * so a stale key of a freed region does not match its successor.
 */

#include <linux/slab.h>
#include <linux/dma-mapping.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"

/* MPT entry (64 bytes). */
#define MPT_FLAGS		0x00
#define MPT_PAGE_SIZE		0x04
#define MPT_KEY			0x08
#define MPT_PD			0x0c
#define MPT_START		0x10
#define MPT_LENGTH		0x18
#define MPT_MTT_ADDR		0x2c

#define MPT_STATUS_SW		(0xfU << 28)
#define MPT_FLAG_MIO		BIT(17)
#define MPT_FLAG_PHYSICAL	BIT(9)
#define MPT_FLAG_REGION		BIT(8)

#define MTT_PRESENT		1ULL

static u32 mpt_index_to_key(u32 idx)
{
	return (idx >> 24) | (idx << 8);
}

static u32 key_to_mpt_index(u32 key)
{
	return (key << 24) | (key >> 8);
}

/* Log2 of the segments that hold @nentries MTT entries. */
static int mtt_order(int nentries)
{
	int order = 0;

	while ((MTHCA_MTTS_PER_SEG << order) < nentries)
		order++;
	return order;
}

static int mtt_take(struct mthca_dev *dev, int order, u32 *first)
{
	u32 seg;
	int ret;

	seg = mthca_buddy_alloc(&dev->mtt_buddy, order);
	if (seg == MTHCA_BITMAP_NONE)
		return -ENOMEM;
	ret = mthca_icm_table_get_range(dev, dev->icm_mtt, seg,
					seg + (1U << order) - 1);
	if (ret) {
		mthca_buddy_free(&dev->mtt_buddy, seg, order);
		return ret;
	}
	*first = seg;
	return 0;
}

static void mtt_give_back(struct mthca_dev *dev, int order, u32 first)
{
	mthca_icm_table_put_range(dev, dev->icm_mtt, first,
				  first + (1U << order) - 1);
	mthca_buddy_free(&dev->mtt_buddy, first, order);
}

/**
 * mthca_mtt_alloc() - reserve MTT entries
 * @dev: the device
 * @nentries: entries wanted (at least 1)
 *
 * Sleeps.
 *
 * Return: the MTT or an ERR_PTR.
 */
struct mthca_mtt *mthca_mtt_alloc(struct mthca_dev *dev, int nentries)
{
	struct mthca_mtt *mtt;
	int ret;

	if (nentries <= 0)
		return ERR_PTR(-EINVAL);
	mtt = kmalloc(sizeof(*mtt), GFP_KERNEL);
	if (!mtt)
		return ERR_PTR(-ENOMEM);
	mtt->order = mtt_order(nentries);
	ret = mtt_take(dev, mtt->order, &mtt->first_seg);
	if (ret) {
		kfree(mtt);
		return ERR_PTR(ret);
	}
	return mtt;
}

/**
 * mthca_mtt_free() - release MTT entries
 * @dev: the device
 * @mtt: what mthca_mtt_alloc() returned, or NULL
 */
void mthca_mtt_free(struct mthca_dev *dev, struct mthca_mtt *mtt)
{
	if (!mtt)
		return;
	mtt_give_back(dev, mtt->order, mtt->first_seg);
	kfree(mtt);
}

static u64 mtt_icm_addr(struct mthca_dev *dev, u32 first_seg, int index)
{
	return dev->layout.mtt_base + (u64)first_seg * MTHCA_MTT_SEG_SIZE +
	       (u64)index * 8;
}

/**
 * mthca_mtt_write() - write page addresses into MTT entries
 * @dev: the device
 * @mtt: the MTT
 * @start_index: first entry to write
 * @addrs: page bus addresses
 * @n: entries to write
 *
 * The MTT table lives in ICM that the driver allocated in lowmem, so the
 * CPU writes the entries there itself, one system page of entries at a
 * time, as 6.1's mthca does on every mem-free HCA; the WRITE_MTT command
 * (one round trip per 510 entries) is for HCAs whose MTT sits in their
 * own memory, which this driver does not drive.  The caller holds the
 * MTT's ICM (mthca_mtt_alloc() took it) and must not hand a region using
 * these entries to the HCA until this returns; the HCA reads them only
 * after a later command (SW2HW_MPT, a QP or CQ context), whose doorbell
 * write orders these stores before it.
 *
 * Return: 0 or a negative errno.
 */
int mthca_mtt_write(struct mthca_dev *dev, struct mthca_mtt *mtt,
		    int start_index, const u64 *addrs, int n)
{
	if (start_index < 0 || n < 0 ||
	    start_index + n > (MTHCA_MTTS_PER_SEG << mtt->order))
		return -EINVAL;

	while (n > 0) {
		u32 seg = mtt->first_seg + start_index / MTHCA_MTTS_PER_SEG;
		u32 off = (start_index % MTHCA_MTTS_PER_SEG) * 8;
		dma_addr_t dma;
		__be64 *ent;
		int batch, i;

		ent = mthca_icm_table_find(dev->icm_mtt, seg, &dma);
		if (!ent)
			return -EFAULT;
		ent = (__be64 *)((u8 *)ent + off);
		dma += off;
		/* A page of ICM is contiguous; the next one may not be. */
		batch = min_t(int, n, (PAGE_SIZE - offset_in_page(ent)) / 8);
		dma_sync_single_for_cpu(&dev->pdev->dev, dma, batch * 8,
					DMA_BIDIRECTIONAL);
		for (i = 0; i < batch; i++)
			ent[i] = cpu_to_be64(addrs[i] | MTT_PRESENT);
		dma_sync_single_for_device(&dev->pdev->dev, dma, batch * 8,
					   DMA_BIDIRECTIONAL);
		n -= batch;
		addrs += batch;
		start_index += batch;
	}
	return 0;
}

/**
 * mthca_access_to_mpt() - MPT access bits for IB access flags
 * @ib_access: enum ib_access_flags bits
 *
 * Local read is always granted.
 *
 * Return: MTHCA_MPT_* bits.
 */
u32 mthca_access_to_mpt(int ib_access)
{
	u32 a = MTHCA_MPT_LOCAL_READ;

	if (ib_access & IB_ACCESS_LOCAL_WRITE)
		a |= MTHCA_MPT_LOCAL_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_WRITE)
		a |= MTHCA_MPT_REMOTE_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_READ)
		a |= MTHCA_MPT_REMOTE_READ;
	if (ib_access & IB_ACCESS_REMOTE_ATOMIC)
		a |= MTHCA_MPT_ATOMIC;
	return a;
}

/*
 * Takes an MPT index and hands the entry to the HCA.  @mr->mtt, if not
 * NULL, must already hold the translation.
 */
static int mpt_install(struct mthca_dev *dev, u32 pdn, int page_shift,
		       u64 iova, u64 length, u32 access, struct mthca_mr *mr)
{
	struct mthca_mailbox *mb;
	u32 idx, flags;
	int ret;

	if (page_shift < 12 || page_shift >= 32)
		return -EINVAL;

	idx = mthca_bitmap_get(&dev->mpt_bitmap);
	if (idx == MTHCA_BITMAP_NONE)
		return -ENOMEM;
	mr->ibmr.lkey = mpt_index_to_key(idx);
	mr->ibmr.rkey = mr->ibmr.lkey;

	ret = mthca_icm_table_get(dev, dev->icm_mpt, idx);
	if (ret)
		goto put_idx;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb)) {
		ret = PTR_ERR(mb);
		goto put_icm;
	}

	flags = MPT_STATUS_SW | MPT_FLAG_MIO | MPT_FLAG_REGION | access;
	if (!mr->mtt)
		flags |= MPT_FLAG_PHYSICAL;
	put_unaligned_be32(flags, (u8 *)mb->buf + MPT_FLAGS);
	put_unaligned_be32(page_shift - 12, (u8 *)mb->buf + MPT_PAGE_SIZE);
	put_unaligned_be32(idx, (u8 *)mb->buf + MPT_KEY);
	put_unaligned_be32(pdn, (u8 *)mb->buf + MPT_PD);
	put_unaligned_be64(iova, (u8 *)mb->buf + MPT_START);
	put_unaligned_be64(length, (u8 *)mb->buf + MPT_LENGTH);
	if (mr->mtt)
		put_unaligned_be64(mtt_icm_addr(dev, mr->mtt->first_seg, 0),
				   (u8 *)mb->buf + MPT_MTT_ADDR);

	ret = mthca_SW2HW_MPT(dev, mb, idx & (dev->limits.num_mpts - 1));
	mthca_mailbox_free(dev, mb);
	if (ret)
		goto put_icm;
	return 0;

put_icm:
	mthca_icm_table_put(dev, dev->icm_mpt, idx);
put_idx:
	mthca_bitmap_put(&dev->mpt_bitmap, idx);
	return ret;
}

static void mpt_remove(struct mthca_dev *dev, u32 key)
{
	u32 idx = key_to_mpt_index(key);
	int ret;

	ret = mthca_HW2SW_MPT(dev, idx & (dev->limits.num_mpts - 1));
	if (ret)
		mthca_teardown_warn(dev, "HW2SW_MPT of key %08x: %d\n",
				    key, ret);
	mthca_icm_table_put(dev, dev->icm_mpt, idx);
	mthca_bitmap_put(&dev->mpt_bitmap, idx);
}

/**
 * mthca_mr_alloc() - a region whose translation is in @mr->mtt
 * @dev: the device
 * @pdn: PD number
 * @page_shift: log2 of the page size of the MTT entries
 * @iova: address the region starts at
 * @length: bytes
 * @access: MTHCA_MPT_* access bits
 * @mr: the region; @mr->mtt set by the caller (NULL: no translation)
 *
 * Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_mr_alloc(struct mthca_dev *dev, u32 pdn, int page_shift, u64 iova,
		   u64 length, u32 access, struct mthca_mr *mr)
{
	return mpt_install(dev, pdn, page_shift, iova, length, access, mr);
}

/**
 * mthca_mr_alloc_notrans() - a region over all of memory, no translation
 * @dev: the device
 * @pdn: PD number
 * @access: MTHCA_MPT_* access bits
 * @mr: the region
 *
 * Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_mr_alloc_notrans(struct mthca_dev *dev, u32 pdn, u32 access,
			   struct mthca_mr *mr)
{
	mr->mtt = NULL;
	return mpt_install(dev, pdn, 12, 0, ~0ULL, access, mr);
}

/**
 * mthca_mr_alloc_phys() - a region over a list of pages
 * @dev: the device
 * @pdn: PD number
 * @pages: bus addresses of the pages, each aligned to 2^@page_shift
 * @page_shift: log2 of the page size
 * @npages: entries of @pages
 * @iova: address the region starts at
 * @length: bytes
 * @access: MTHCA_MPT_* access bits
 * @mr: the region
 *
 * Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_mr_alloc_phys(struct mthca_dev *dev, u32 pdn, const u64 *pages,
			int page_shift, int npages, u64 iova, u64 length,
			u32 access, struct mthca_mr *mr)
{
	int ret;

	mr->mtt = mthca_mtt_alloc(dev, npages);
	if (IS_ERR(mr->mtt))
		return PTR_ERR(mr->mtt);
	/* Translation first, then the MPT entry that points at it. */
	ret = mthca_mtt_write(dev, mr->mtt, 0, pages, npages) ?:
	      mpt_install(dev, pdn, page_shift, iova, length, access, mr);
	if (ret) {
		mthca_mtt_free(dev, mr->mtt);
		mr->mtt = NULL;
	}
	return ret;
}

/**
 * mthca_mr_free() - take a region back from the HCA and release it
 * @dev: the device
 * @mr: the region
 *
 * Sleeps.
 */
void mthca_mr_free(struct mthca_dev *dev, struct mthca_mr *mr)
{
	mpt_remove(dev, mr->ibmr.lkey);
	mthca_mtt_free(dev, mr->mtt);
	mr->mtt = NULL;
}

/*
 * Page size for one contiguous DMA buffer: as large as the buffer and
 * the alignment of its bus address allow.
 */
static int dp_buf_shift(dma_addr_t dma, size_t size)
{
	int shift = PAGE_SHIFT + get_order(size);

	while (shift > PAGE_SHIFT && (dma & ((1ULL << shift) - 1)))
		shift--;
	return shift;
}

/**
 * mthca_dp_buf_alloc() - a queue buffer with its own MR at IOVA 0
 * @dev: the device
 * @size: bytes (rounded up to whole pages)
 * @pdn: PD the MR belongs to
 * @hca_write: the HCA may write the buffer (CQs, EQs, receive queues)
 * @buf: filled in: addresses, size, MTT segment and lkey
 *
 * The memory is zeroed, coherent and physically contiguous.  Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_dp_buf_alloc(struct mthca_dev *dev, size_t size, u32 pdn,
		       bool hca_write, struct mthca_dp_buf *buf)
{
	struct mthca_mr mr = {};
	int shift, n, i, ret;
	u64 *pages;

	size = PAGE_ALIGN(size);
	if (!size)
		return -EINVAL;
	buf->cpu = dma_alloc_coherent(&dev->pdev->dev, size, &buf->dma,
				      GFP_KERNEL);
	if (!buf->cpu)
		return -ENOMEM;
	buf->size = size;

	shift = dp_buf_shift(buf->dma, size);
	n = DIV_ROUND_UP(size, 1UL << shift);
	pages = kmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto free_mem;
	}
	for (i = 0; i < n; i++)
		pages[i] = buf->dma + ((u64)i << shift);

	ret = mthca_mr_alloc_phys(dev, pdn, pages, shift, n, 0, size,
				  MTHCA_MPT_LOCAL_READ |
				  (hca_write ? MTHCA_MPT_LOCAL_WRITE : 0), &mr);
	kfree(pages);
	if (ret)
		goto free_mem;

	buf->lkey = mr.ibmr.lkey;
	buf->mtt_seg = mr.mtt->first_seg;
	/* The order is recomputed from the size at free time. */
	kfree(mr.mtt);
	return 0;

free_mem:
	dma_free_coherent(&dev->pdev->dev, size, buf->cpu, buf->dma);
	buf->cpu = NULL;
	return ret;
}

/**
 * mthca_dp_buf_free() - undo mthca_dp_buf_alloc()
 * @dev: the device
 * @buf: the buffer; nothing happens if it holds no memory
 *
 * Sleeps.
 */
void mthca_dp_buf_free(struct mthca_dev *dev, struct mthca_dp_buf *buf)
{
	int shift, n;

	if (!buf->cpu)
		return;
	shift = dp_buf_shift(buf->dma, buf->size);
	n = DIV_ROUND_UP(buf->size, 1UL << shift);

	mpt_remove(dev, buf->lkey);
	mtt_give_back(dev, mtt_order(n), buf->mtt_seg);
	dma_free_coherent(&dev->pdev->dev, buf->size, buf->cpu, buf->dma);
	buf->cpu = NULL;
	buf->mtt_seg = -1;
}

/**
 * mthca_mr_table_init() - MPT indices and MTT segments
 * @dev: the device, with limits and ICM tables set up
 *
 * Return: 0 or a negative errno.
 */
int mthca_mr_table_init(struct mthca_dev *dev)
{
	int ret;

	ret = mthca_bitmap_init(&dev->mpt_bitmap, dev->limits.num_mpts, ~0U,
				dev->limits.reserved_mrws, 0);
	if (ret)
		return ret;
	ret = mthca_buddy_init(&dev->mtt_buddy,
			       ilog2(dev->limits.num_mtt_segs));
	if (ret)
		goto free_bitmap;

	/* The firmware's own MTT entries at the bottom. */
	if (dev->limits.reserved_mtts &&
	    mthca_buddy_alloc(&dev->mtt_buddy,
			      fls(dev->limits.reserved_mtts - 1)) != 0) {
		ret = -ENOMEM;
		goto free_buddy;
	}
	return 0;

free_buddy:
	mthca_buddy_cleanup(&dev->mtt_buddy);
free_bitmap:
	mthca_bitmap_cleanup(&dev->mpt_bitmap);
	return ret;
}

/**
 * mthca_mr_table_cleanup() - undo mthca_mr_table_init()
 * @dev: the device
 */
void mthca_mr_table_cleanup(struct mthca_dev *dev)
{
	mthca_buddy_cleanup(&dev->mtt_buddy);
	mthca_bitmap_cleanup(&dev->mpt_bitmap);
}
