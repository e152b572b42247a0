/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_umem: a range of a process's memory pinned for an HCA (ib_core,
 * umem.c).  A driver's reg_user_mr() pins the range with ib_umem_get(),
 * reads the DMA address of each page through the sg table, and gives it
 * back with ib_umem_release() at dereg_mr().
 */
#ifndef IB_UMEM_H
#define IB_UMEM_H

#include <linux/mm_types.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

struct ib_device;

/**
 * struct ib_umem - a pinned, DMA-mapped user range
 * @ibdev: the device the pages are mapped for
 * @owning_mm: the mm whose pinned_vm was charged (mmgrab'ed: release may
 *	run from another process's context, e.g. a file closed by a child)
 * @address: the user address of the first byte
 * @length: bytes of the range
 * @writable: pinned for writing (the HCA may write into it)
 * @npages: pages pinned and charged (PAGE_SIZE each)
 * @sgt: the pages, DMA-mapped for @ibdev (iterate with
 *	for_each_sgtable_dma_page())
 */
struct ib_umem {
	struct ib_device	*ibdev;
	struct mm_struct	*owning_mm;
	u64			address;
	size_t			length;
	bool			writable;
	unsigned long		npages;
	struct sg_table		sgt;
};

/* Offset of the first byte in its page. */
static inline unsigned int ib_umem_offset(const struct ib_umem *umem)
{
	return umem->address & ~PAGE_MASK;
}

struct ib_umem *ib_umem_get(struct ib_device *ibdev, u64 addr, size_t size,
			    int access);
void ib_umem_release(struct ib_umem *umem);

#endif /* IB_UMEM_H */
