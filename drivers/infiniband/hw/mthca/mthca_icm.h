/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Host memory handed to the MT25208 firmware: the firmware area, the
 * auxiliary ICM and the backing of the ICM tables.  The table services
 * (mthca_icm_table_*) and doorbell records are declared in mthca_dev.h.
 */
#ifndef MTHCA_ICM_H
#define MTHCA_ICM_H

#include <linux/types.h>
#include <linux/mm_types.h>

struct mthca_dev;

/**
 * struct mthca_icm_block - a naturally aligned power-of-two run of pages
 * @page: first page
 * @dma: its bus address
 * @order: log2 of the pages
 */
struct mthca_icm_block {
	struct page	*page;
	dma_addr_t	dma;
	unsigned int	order;
};

/**
 * struct mthca_icm - a set of blocks given to the firmware as one unit
 * @users: references from ICM table gets (tables only); under the
 *	table's mutex
 * @nblocks: entries of @blk in use
 * @blk: the blocks
 */
struct mthca_icm {
	int			users;
	int			nblocks;
	struct mthca_icm_block	blk[];
};

/**
 * struct mthca_icm_iter - walks the blocks of a struct mthca_icm
 * @icm: what is walked
 * @idx: the current block
 */
struct mthca_icm_iter {
	struct mthca_icm	*icm;
	int			idx;
};

static inline void mthca_icm_iter_start(struct mthca_icm *icm,
					struct mthca_icm_iter *it)
{
	it->icm = icm;
	it->idx = 0;
}

static inline bool mthca_icm_iter_done(const struct mthca_icm_iter *it)
{
	return it->idx >= it->icm->nblocks;
}

static inline void mthca_icm_iter_next(struct mthca_icm_iter *it)
{
	it->idx++;
}

static inline u64 mthca_icm_iter_addr(const struct mthca_icm_iter *it)
{
	return it->icm->blk[it->idx].dma;
}

static inline u64 mthca_icm_iter_len(const struct mthca_icm_iter *it)
{
	return (u64)PAGE_SIZE << it->icm->blk[it->idx].order;
}

struct mthca_icm *mthca_icm_alloc(struct mthca_dev *dev, unsigned int npages,
				  gfp_t gfp);
void mthca_icm_free(struct mthca_dev *dev, struct mthca_icm *icm);

int mthca_db_init(struct mthca_dev *dev);
void mthca_db_cleanup(struct mthca_dev *dev);

#endif /* MTHCA_ICM_H */
