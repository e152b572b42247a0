// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ICM: host memory the mem-free MT25208 uses for its context tables.
 *
 * The firmware area and the auxiliary ICM are allocated once at probe.
 * The object tables (QP/CQ/SRQ contexts, MPT, MTT, ...) are large and
 * mostly empty, so each is backed in MTHCA_ICM_CHUNK_SIZE pieces (the
 * last one cut where the table ends), mapped with MAP_ICM when the first
 * object in a piece is taken and unmapped when the last one is given back.
 *
 * The kernel's doorbell records (the consumer/producer counters the HCA
 * reads from host memory) live in ICM pages of the driver UAR's context
 * area, mapped one page at a time with MAP_ICM.
 */

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/bitmap.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"
#include "mthca_icm.h"

/* The largest block tried when backing ICM. */
#define ICM_MAX_ORDER	(MTHCA_ICM_CHUNK_SHIFT - PAGE_SHIFT)

/**
 * mthca_icm_free() - unmap and free ICM pages
 * @dev: the device
 * @icm: what mthca_icm_alloc() returned, or NULL
 */
void mthca_icm_free(struct mthca_dev *dev, struct mthca_icm *icm)
{
	int i;

	if (!icm)
		return;
	for (i = 0; i < icm->nblocks; i++) {
		struct mthca_icm_block *b = &icm->blk[i];

		dma_unmap_page(&dev->pdev->dev, b->dma, PAGE_SIZE << b->order,
			       DMA_BIDIRECTIONAL);
		__free_pages(b->page, b->order);
	}
	kfree(icm);
}

/**
 * mthca_icm_alloc() - allocate and DMA-map zeroed pages for the firmware
 * @dev: the device
 * @npages: system pages wanted
 * @gfp: GFP_KERNEL, or GFP_HIGHUSER for memory the CPU never touches
 *
 * The pages come in naturally aligned blocks of up to
 * MTHCA_ICM_CHUNK_SIZE, as large as the allocator gives.
 *
 * Return: the ICM or NULL.
 */
struct mthca_icm *mthca_icm_alloc(struct mthca_dev *dev, unsigned int npages,
				  gfp_t gfp)
{
	unsigned int order = ICM_MAX_ORDER;
	struct mthca_icm *icm;

	/* At worst every block is a single page. */
	icm = kzalloc(struct_size(icm, blk, npages), GFP_KERNEL);
	if (!icm)
		return NULL;

	while (npages) {
		struct mthca_icm_block *b = &icm->blk[icm->nblocks];
		struct page *pg;

		while ((1U << order) > npages)
			order--;
		pg = alloc_pages(gfp | __GFP_ZERO | (order ? __GFP_NOWARN : 0),
				 order);
		if (!pg) {
			if (!order)
				goto fail;
			order--;
			continue;
		}
		b->dma = dma_map_page(&dev->pdev->dev, pg, 0, PAGE_SIZE << order,
				      DMA_BIDIRECTIONAL);
		if (dma_mapping_error(&dev->pdev->dev, b->dma)) {
			__free_pages(pg, order);
			goto fail;
		}
		b->page = pg;
		b->order = order;
		icm->nblocks++;
		npages -= 1U << order;
	}
	return icm;

fail:
	mthca_icm_free(dev, icm);
	return NULL;
}

static u32 objs_per_chunk(const struct mthca_icm_table *t)
{
	return MTHCA_ICM_CHUNK_SIZE / t->obj_size;
}

/*
 * Bytes backing chunk @i of @t: a whole chunk, except that the last one
 * ends where the table does (rounded up to an ICM page).  The firmware
 * refuses a mapping past the ICM size the profile gave it, and a small
 * table may be the last thing in ICM.
 */
static u32 chunk_bytes(const struct mthca_icm_table *t, u32 i)
{
	u64 end = ALIGN((u64)t->obj_size * t->nobj, MTHCA_ICM_PAGE_SIZE);

	return min_t(u64, MTHCA_ICM_CHUNK_SIZE,
		     end - (u64)i * MTHCA_ICM_CHUNK_SIZE);
}

/* Backs chunk @i of @t; the caller holds the table mutex. */
static int chunk_map(struct mthca_dev *dev, struct mthca_icm_table *t, u32 i)
{
	struct mthca_icm *icm;
	int ret;

	icm = mthca_icm_alloc(dev, DIV_ROUND_UP(chunk_bytes(t, i), PAGE_SIZE),
			      t->lowmem ? GFP_KERNEL : GFP_HIGHUSER);
	if (!icm)
		return -ENOMEM;
	ret = mthca_MAP_ICM(dev, icm, t->virt + (u64)i * MTHCA_ICM_CHUNK_SIZE);
	if (ret) {
		mthca_icm_free(dev, icm);
		return ret;
	}
	t->chunk[i] = icm;
	return 0;
}

static void chunk_unmap(struct mthca_dev *dev, struct mthca_icm_table *t,
			u32 i)
{
	mthca_UNMAP_ICM(dev, t->virt + (u64)i * MTHCA_ICM_CHUNK_SIZE,
			chunk_bytes(t, i) / MTHCA_ICM_PAGE_SIZE);
	mthca_icm_free(dev, t->chunk[i]);
	t->chunk[i] = NULL;
}

/**
 * mthca_icm_table_get() - make sure the ICM of object @obj is backed
 * @dev: the device
 * @table: the table
 * @obj: object number (any high bits above the table size are ignored)
 *
 * Takes a reference on the chunk holding @obj.  Sleeps.
 *
 * Return: 0 or a negative errno.
 */
int mthca_icm_table_get(struct mthca_dev *dev, struct mthca_icm_table *table,
			u32 obj)
{
	u32 i = (obj & (table->nobj - 1)) / objs_per_chunk(table);
	int ret = 0;

	mutex_lock(&table->mutex);
	if (!table->chunk[i])
		ret = chunk_map(dev, table, i);
	if (!ret)
		table->chunk[i]->users++;
	mutex_unlock(&table->mutex);
	return ret;
}

/**
 * mthca_icm_table_put() - drop the reference mthca_icm_table_get() took
 * @dev: the device
 * @table: the table
 * @obj: object number
 *
 * Unmaps the chunk when its last user goes.  Sleeps.
 */
void mthca_icm_table_put(struct mthca_dev *dev, struct mthca_icm_table *table,
			 u32 obj)
{
	u32 i = (obj & (table->nobj - 1)) / objs_per_chunk(table);

	mutex_lock(&table->mutex);
	if (!WARN_ON(!table->chunk[i]) && --table->chunk[i]->users == 0)
		chunk_unmap(dev, table, i);
	mutex_unlock(&table->mutex);
}

/**
 * mthca_icm_table_get_range() - back objects @start..@end (inclusive)
 * @dev: the device
 * @table: the table
 * @start: first object
 * @end: last object
 *
 * Return: 0 or a negative errno (nothing is held then).
 */
int mthca_icm_table_get_range(struct mthca_dev *dev,
			      struct mthca_icm_table *table, u32 start, u32 end)
{
	u32 per = objs_per_chunk(table);
	u32 c;
	int ret;

	/* One reference per chunk the range touches. */
	for (c = start / per; c <= end / per; c++) {
		ret = mthca_icm_table_get(dev, table, c * per);
		if (ret)
			goto undo;
	}
	return 0;

undo:
	while (c-- > start / per)
		mthca_icm_table_put(dev, table, c * per);
	return ret;
}

/**
 * mthca_icm_table_put_range() - undo mthca_icm_table_get_range()
 * @dev: the device
 * @table: the table
 * @start: first object
 * @end: last object
 */
void mthca_icm_table_put_range(struct mthca_dev *dev,
			       struct mthca_icm_table *table, u32 start, u32 end)
{
	u32 per = objs_per_chunk(table);
	u32 c;

	for (c = start / per; c <= end / per; c++)
		mthca_icm_table_put(dev, table, c * per);
}

/**
 * mthca_icm_table_find() - kernel address of object @obj
 * @table: a lowmem table
 * @obj: object number, whose chunk the caller holds
 * @dma: if not NULL, receives the object's bus address
 *
 * Return: the address, or NULL if the chunk is not backed.
 */
void *mthca_icm_table_find(struct mthca_icm_table *table, u32 obj,
			   dma_addr_t *dma)
{
	u64 off = (u64)(obj & (table->nobj - 1)) * table->obj_size;
	struct mthca_icm *icm;
	int i;

	if (!table->lowmem)
		return NULL;
	icm = table->chunk[off >> MTHCA_ICM_CHUNK_SHIFT];
	if (!icm)
		return NULL;
	off &= MTHCA_ICM_CHUNK_SIZE - 1;
	for (i = 0; i < icm->nblocks; i++) {
		u64 len = (u64)PAGE_SIZE << icm->blk[i].order;

		if (off < len) {
			if (dma)
				*dma = icm->blk[i].dma + off;
			return page_address(icm->blk[i].page) + off;
		}
		off -= len;
	}
	return NULL;
}

/**
 * mthca_icm_table_alloc() - set up an ICM table
 * @dev: the device
 * @virt: ICM address of object 0 (from the profile)
 * @obj_size: bytes per object
 * @nobj: objects (a power of two)
 * @reserved: low objects the firmware owns; their chunks are backed now
 *	and stay backed
 * @lowmem: the CPU must be able to reach the objects (mthca_icm_table_find)
 *
 * Return: the table or NULL.
 */
struct mthca_icm_table *mthca_icm_table_alloc(struct mthca_dev *dev,
					      u64 virt, u32 obj_size,
					      u32 nobj, u32 reserved,
					      bool lowmem)
{
	u32 total = DIV_ROUND_UP_ULL((u64)obj_size * nobj, MTHCA_ICM_CHUNK_SIZE);
	/* Chunks holding at least one firmware-owned object. */
	u32 fw_chunks = DIV_ROUND_UP_ULL((u64)reserved * obj_size,
					 MTHCA_ICM_CHUNK_SIZE);
	struct mthca_icm_table *t;
	u32 i;

	t = kzalloc(struct_size(t, chunk, total), GFP_KERNEL);
	if (!t)
		return NULL;
	*t = (struct mthca_icm_table) {
		.virt = virt, .obj_size = obj_size, .nobj = nobj,
		.nchunks = total, .lowmem = lowmem,
	};
	mutex_init(&t->mutex);

	for (i = 0; i < fw_chunks; i++) {
		if (chunk_map(dev, t, i))
			goto fail;
		/* An extra user that only mthca_icm_table_free() drops. */
		t->chunk[i]->users = 1;
	}
	return t;

fail:
	while (i--)
		chunk_unmap(dev, t, i);
	kfree(t);
	return NULL;
}

/**
 * mthca_icm_table_free() - unmap and free everything of a table
 * @dev: the device
 * @table: the table, or NULL
 */
void mthca_icm_table_free(struct mthca_dev *dev,
			  struct mthca_icm_table *table)
{
	u32 i;

	if (!table)
		return;
	for (i = 0; i < table->nchunks; i++)
		if (table->chunk[i])
			chunk_unmap(dev, table, i);
	kfree(table);
}

/* ------------------------------------------------------------------ */
/* Doorbell records                                                    */
/* ------------------------------------------------------------------ */

#define DB_PER_PAGE	(MTHCA_ICM_PAGE_SIZE / 8)

/**
 * struct mthca_db_page - one UARC page of doorbell records
 * @used: records in use
 * @recs: the records (8 bytes: counter, then qn << 8 | kind << 5)
 * @dma: bus address of @recs
 */
struct mthca_db_page {
	DECLARE_BITMAP(used, DB_PER_PAGE);
	__be64		*recs;
	dma_addr_t	dma;
};

/**
 * struct mthca_db_pages - the kernel's doorbell record pages
 * @npages: pages in the UARC of one UAR
 * @low_end: pages [0, @low_end) belong to the low group (CQ arm, SQ)
 * @high_start: pages [@high_start, @npages) to the high group (CQ set_ci,
 *	RQ, SRQ)
 * @page: the pages
 *
 * Guarded by dev->db_mutex.
 */
struct mthca_db_pages {
	int			npages;
	int			low_end;
	int			high_start;
	struct mthca_db_page	page[];
};

static bool db_kind_is_low(enum mthca_db_kind kind)
{
	return kind == MTHCA_DB_CQ_ARM || kind == MTHCA_DB_SQ;
}

static u64 db_page_virt(struct mthca_dev *dev, int i)
{
	return dev->layout.uarc_base +
	       (u64)dev->driver_uar.num * dev->layout.uarc_size +
	       (u64)i * MTHCA_ICM_PAGE_SIZE;
}

static int db_page_map(struct mthca_dev *dev, struct mthca_db_page *pg, int i)
{
	int ret;

	pg->recs = dma_alloc_coherent(&dev->pdev->dev, MTHCA_ICM_PAGE_SIZE,
				      &pg->dma, GFP_KERNEL);
	if (!pg->recs)
		return -ENOMEM;
	bitmap_zero(pg->used, DB_PER_PAGE);
	ret = mthca_MAP_ICM_page(dev, pg->dma, db_page_virt(dev, i));
	if (ret) {
		dma_free_coherent(&dev->pdev->dev, MTHCA_ICM_PAGE_SIZE,
				  pg->recs, pg->dma);
		pg->recs = NULL;
	}
	return ret;
}

static void db_page_unmap(struct mthca_dev *dev, struct mthca_db_page *pg,
			  int i)
{
	mthca_UNMAP_ICM(dev, db_page_virt(dev, i), 1);
	dma_free_coherent(&dev->pdev->dev, MTHCA_ICM_PAGE_SIZE, pg->recs,
			  pg->dma);
	pg->recs = NULL;
}

/**
 * mthca_db_alloc() - get a doorbell record
 * @dev: the device
 * @kind: what the record is for
 * @qn: the CQ/QP/SRQ number it belongs to
 * @db: receives the record's address; the first be32 is the counter
 *
 * Sleeps.
 *
 * Return: the record's index (what the CQ/QP/SRQ context takes), or a
 * negative errno.
 */
int mthca_db_alloc(struct mthca_dev *dev, enum mthca_db_kind kind, u32 qn,
		   __be32 **db)
{
	struct mthca_db_pages *tab = dev->db_pages;
	bool low = db_kind_is_low(kind);
	struct mthca_db_page *pg = NULL;
	int i, bit, slot, ret;

	mutex_lock(&dev->db_mutex);

	/* A page of the group with room... */
	if (low) {
		for (i = 0; i < tab->low_end; i++)
			if (tab->page[i].recs &&
			    !bitmap_full(tab->page[i].used, DB_PER_PAGE))
				break;
		if (i == tab->low_end)
			i = -1;
	} else {
		for (i = tab->npages - 1; i >= tab->high_start; i--)
			if (tab->page[i].recs &&
			    !bitmap_full(tab->page[i].used, DB_PER_PAGE))
				break;
		if (i < tab->high_start)
			i = -1;
	}

	/* ...or a new one at the group's edge. */
	if (i < 0) {
		if (tab->low_end >= tab->high_start) {
			ret = -ENOMEM;
			goto out;
		}
		i = low ? tab->low_end : tab->high_start - 1;
		ret = db_page_map(dev, &tab->page[i], i);
		if (ret)
			goto out;
		if (low)
			tab->low_end++;
		else
			tab->high_start--;
	}
	pg = &tab->page[i];

	/* The low group fills pages upwards, the high group downwards. */
	bit = find_first_zero_bit(pg->used, DB_PER_PAGE);
	__set_bit(bit, pg->used);
	slot = low ? bit : DB_PER_PAGE - 1 - bit;

	pg->recs[slot] = cpu_to_be64((u64)(qn & 0xffffff) << 8 | (u64)kind << 5);
	*db = (__be32 *)&pg->recs[slot];
	ret = i * DB_PER_PAGE + slot;
out:
	mutex_unlock(&dev->db_mutex);
	return ret;
}

/**
 * mthca_db_free() - give a doorbell record back
 * @dev: the device
 * @kind: what mthca_db_alloc() was asked for
 * @index: what it returned
 *
 * Sleeps.
 */
void mthca_db_free(struct mthca_dev *dev, enum mthca_db_kind kind, int index)
{
	struct mthca_db_pages *tab = dev->db_pages;
	bool low = db_kind_is_low(kind);
	int i = index / DB_PER_PAGE;
	int slot = index % DB_PER_PAGE;
	struct mthca_db_page *pg;

	if (WARN_ON(index < 0 || i >= tab->npages))
		return;

	mutex_lock(&dev->db_mutex);
	pg = &tab->page[i];
	pg->recs[slot] = 0;
	__clear_bit(low ? slot : DB_PER_PAGE - 1 - slot, pg->used);

	/* Only a page at the edge of its group can go. */
	if (bitmap_empty(pg->used, DB_PER_PAGE)) {
		if (low && i == tab->low_end - 1) {
			db_page_unmap(dev, pg, i);
			tab->low_end--;
		} else if (!low && i == tab->high_start) {
			db_page_unmap(dev, pg, i);
			tab->high_start++;
		}
	}
	mutex_unlock(&dev->db_mutex);
}

/**
 * mthca_db_init() - set up the doorbell record table
 * @dev: the device, with its driver UAR and layout known
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_db_init(struct mthca_dev *dev)
{
	int n = dev->layout.uarc_size / MTHCA_ICM_PAGE_SIZE;
	struct mthca_db_pages *tab;

	mutex_init(&dev->db_mutex);
	tab = kzalloc(struct_size(tab, page, n), GFP_KERNEL);
	if (!tab)
		return -ENOMEM;
	tab->npages = n;
	tab->low_end = 0;
	tab->high_start = n;
	dev->db_pages = tab;
	return 0;
}

/**
 * mthca_db_cleanup() - unmap the remaining doorbell pages
 * @dev: the device
 *
 * Records still in use at this point are a leak; they are reported.
 */
void mthca_db_cleanup(struct mthca_dev *dev)
{
	struct mthca_db_pages *tab = dev->db_pages;
	int i;

	if (!tab)
		return;
	for (i = 0; i < tab->npages; i++) {
		if (!tab->page[i].recs)
			continue;
		if (!bitmap_empty(tab->page[i].used, DB_PER_PAGE))
			mthca_warn(dev, "doorbell page %d still in use\n", i);
		db_page_unmap(dev, &tab->page[i], i);
	}
	kfree(tab);
	dev->db_pages = NULL;
}

/* ------------------------------------------------------------------ */
/* User doorbell records                                               */
/* ------------------------------------------------------------------ */

/**
 * struct mthca_user_db_page - one UARC page of a user context
 * @page: the user's page of records, pinned, or NULL while unmapped
 * @dma: its bus address
 * @uaddr: the user address it was pinned at
 * @refs: records of the page in use by the context's CQs, QPs and SRQs
 */
struct mthca_user_db_page {
	struct page	*page;
	dma_addr_t	dma;
	u64		uaddr;
	unsigned int	refs;
};

/**
 * struct mthca_user_db_table - the UARC pages of a user context
 * @mutex: guards every page (mapping and unmapping run firmware
 *	commands, so it sleeps); taken alone
 * @npages: pages in the UARC of one UAR
 * @page: the pages
 */
struct mthca_user_db_table {
	struct mutex			mutex;	/* see the kernel-doc above */
	int				npages;
	struct mthca_user_db_page	page[];
};

static u64 user_db_page_virt(struct mthca_dev *dev, struct mthca_uar *uar,
			     int i)
{
	return dev->layout.uarc_base +
	       (u64)uar->num * dev->layout.uarc_size +
	       (u64)i * MTHCA_ICM_PAGE_SIZE;
}

/**
 * mthca_user_db_tab_alloc() - an empty doorbell page table for a context
 * @dev: the device
 *
 * Return: the table, or an ERR_PTR.
 */
struct mthca_user_db_table *mthca_user_db_tab_alloc(struct mthca_dev *dev)
{
	int n = dev->layout.uarc_size / MTHCA_ICM_PAGE_SIZE;
	struct mthca_user_db_table *tab;

	tab = kzalloc(struct_size(tab, page, n), GFP_KERNEL);
	if (!tab)
		return ERR_PTR(-ENOMEM);
	mutex_init(&tab->mutex);
	tab->npages = n;
	return tab;
}

static void user_db_page_unmap(struct mthca_dev *dev, struct mthca_uar *uar,
			       struct mthca_user_db_page *pg, int i)
{
	mthca_UNMAP_ICM(dev, user_db_page_virt(dev, uar, i), 1);
	dma_unmap_page(&dev->pdev->dev, pg->dma, MTHCA_ICM_PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
	unpin_user_page(pg->page);
	pg->page = NULL;
	pg->refs = 0;
}

/**
 * mthca_map_user_db() - let the HCA read a user doorbell record
 * @dev: the device
 * @uar: the context's UAR (its UARC holds the context's record pages)
 * @tab: the context's table
 * @index: the record's index (page * 512 + record), from the user
 * @uaddr: the user address of the record's page (4 KiB aligned)
 * @rec: receives the kernel's address of the record, or NULL
 *
 * The first record of a page pins the page and maps it into the UARC
 * with MAP_ICM; later ones only count.  Sleeps.
 *
 * Return: 0, -EINVAL for an index out of the UARC, an unaligned address,
 * or a page already mapped at another address, or an errno of the
 * pinning or the firmware.
 */
int mthca_map_user_db(struct mthca_dev *dev, struct mthca_uar *uar,
		      struct mthca_user_db_table *tab, u32 index, u64 uaddr,
		      __be32 **rec)
{
	struct mthca_user_db_page *pg;
	u32 i = index / DB_PER_PAGE;
	int ret = 0;

	if (i >= tab->npages || uaddr & (MTHCA_ICM_PAGE_SIZE - 1))
		return -EINVAL;
	pg = &tab->page[i];

	mutex_lock(&tab->mutex);
	if (pg->page) {
		if (pg->uaddr != uaddr || pg->refs >= DB_PER_PAGE) {
			ret = -EINVAL;
			goto out;
		}
		pg->refs++;
		goto found;
	}

	ret = pin_user_pages_fast(uaddr, 1, FOLL_WRITE | FOLL_LONGTERM,
				  &pg->page);
	if (ret != 1) {
		pg->page = NULL;
		ret = ret < 0 ? ret : -EFAULT;
		goto out;
	}
	pg->dma = dma_map_page(&dev->pdev->dev, pg->page, 0,
			       MTHCA_ICM_PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(&dev->pdev->dev, pg->dma)) {
		ret = -ENOMEM;
		goto err_unpin;
	}
	ret = mthca_MAP_ICM_page(dev, pg->dma, user_db_page_virt(dev, uar, i));
	if (ret)
		goto err_dma;
	pg->uaddr = uaddr;
	pg->refs = 1;
found:
	if (rec)
		*rec = page_address(pg->page) + (index % DB_PER_PAGE) * 8;
	ret = 0;
	goto out;

err_dma:
	dma_unmap_page(&dev->pdev->dev, pg->dma, MTHCA_ICM_PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
err_unpin:
	unpin_user_page(pg->page);
	pg->page = NULL;
out:
	mutex_unlock(&tab->mutex);
	return ret;
}

/**
 * mthca_unmap_user_db() - undo mthca_map_user_db()
 * @dev: the device
 * @uar: the context's UAR
 * @tab: the context's table
 * @index: the record's index
 *
 * The last record of a page unmaps and unpins it.  Sleeps.
 */
void mthca_unmap_user_db(struct mthca_dev *dev, struct mthca_uar *uar,
			 struct mthca_user_db_table *tab, u32 index)
{
	u32 i = index / DB_PER_PAGE;
	struct mthca_user_db_page *pg;

	if (i >= tab->npages)
		return;
	pg = &tab->page[i];
	mutex_lock(&tab->mutex);
	if (pg->page && !--pg->refs)
		user_db_page_unmap(dev, uar, pg, i);
	mutex_unlock(&tab->mutex);
}

/**
 * mthca_user_db_tab_free() - unmap what is left and free the table
 * @dev: the device
 * @uar: the context's UAR
 * @tab: the table
 */
void mthca_user_db_tab_free(struct mthca_dev *dev, struct mthca_uar *uar,
			    struct mthca_user_db_table *tab)
{
	int i;

	for (i = 0; i < tab->npages; i++)
		if (tab->page[i].page)
			user_db_page_unmap(dev, uar, &tab->page[i], i);
	kfree(tab);
}
