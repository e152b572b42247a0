// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_umem: pinning a process's memory for an HCA.
 *
 * The pages are pinned long-term (FOLL_LONGTERM: the HCA may reach them
 * for as long as the region lives), charged to the process's pinned_vm
 * against RLIMIT_MEMLOCK, and mapped for DMA through an sg table.  The
 * owner's mm is kept (mmgrab) so that the charge goes back to it even
 * when the release runs in another process (the last close of a file
 * inherited across fork) or in a kernel thread.
 */

#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

/* Pages pinned per pin_user_pages_fast() call (its count is an int). */
#define UMEM_PIN_BATCH	BIT(16)

static bool umem_access_writes(int access)
{
	return access & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			 IB_ACCESS_REMOTE_ATOMIC);
}

/* Charges @npages to @mm's pinned_vm; -ENOMEM over RLIMIT_MEMLOCK. */
static int umem_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/* Unpins every page of @sgt, marking them dirty when the HCA could write. */
static void umem_unpin(struct sg_table *sgt, bool dirty)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(sgt, sg, i)
		unpin_user_page_range_dirty_lock(sg_page(sg),
						 DIV_ROUND_UP(sg->offset +
							      sg->length,
							      PAGE_SIZE),
						 dirty);
}

/**
 * ib_umem_get() - pin and DMA-map a range of the caller's memory
 * @ibdev: the device that will reach the range
 * @addr: user address of the first byte
 * @size: bytes
 * @access: IB_ACCESS_* flags of the region; the pages are pinned for
 *	writing when the HCA may write (local or remote write, atomics)
 *
 * Sleeps.  The pages are charged to current->mm's pinned_vm; past
 * RLIMIT_MEMLOCK the call fails unless the caller has CAP_IPC_LOCK.
 *
 * Return: the region, or an ERR_PTR: -EINVAL for an empty or wrapping
 * range, -EFAULT for one that is not the caller's to pin, -ENOMEM over
 * the limit or out of memory.
 */
struct ib_umem *ib_umem_get(struct ib_device *ibdev, u64 addr, size_t size,
			    int access)
{
	unsigned long first, end, npages, done = 0;
	unsigned int gup_flags = FOLL_LONGTERM;
	struct mm_struct *mm = current->mm;
	struct page **pages;
	struct ib_umem *umem;
	u64 last;
	int ret;

	if (!size || check_add_overflow(addr, (u64)size - 1, &last) ||
	    last > (u64)ULONG_MAX - PAGE_SIZE)
		return ERR_PTR(-EINVAL);
	if (!mm)
		return ERR_PTR(-EFAULT);
	if (!access_ok(u64_to_user_ptr(addr), size))
		return ERR_PTR(-EFAULT);
	first = addr >> PAGE_SHIFT;
	end = (last >> PAGE_SHIFT) + 1;
	npages = end - first;
	/* The sg table counts pages in an unsigned int. */
	if (npages > UINT_MAX)
		return ERR_PTR(-ENOMEM);

	umem = kzalloc(sizeof(*umem), GFP_KERNEL);
	if (!umem)
		return ERR_PTR(-ENOMEM);
	umem->ibdev = ibdev;
	umem->address = addr;
	umem->length = size;
	umem->writable = umem_access_writes(access);
	umem->npages = npages;
	umem->owning_mm = mm;
	mmgrab(mm);

	ret = umem_charge(mm, npages);
	if (ret)
		goto err_mm;

	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto err_charge;
	}
	if (umem->writable)
		gup_flags |= FOLL_WRITE;
	while (done < npages) {
		unsigned long n = min(npages - done, UMEM_PIN_BATCH);

		ret = pin_user_pages_fast((first + done) << PAGE_SHIFT, n,
					  gup_flags, pages + done);
		if (ret < 0)
			goto err_unpin;
		done += ret;
		if (ret < n) {
			ret = -EFAULT;
			goto err_unpin;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
	}

	ret = sg_alloc_table_from_pages_segment(&umem->sgt, pages, npages,
						addr & ~PAGE_MASK, size,
						dma_get_max_seg_size(ibdev->dma_device),
						GFP_KERNEL);
	if (ret)
		goto err_unpin;
	ret = dma_map_sgtable(ibdev->dma_device, &umem->sgt, DMA_BIDIRECTIONAL,
			      0);
	if (ret)
		goto err_sgt;
	kvfree(pages);
	return umem;

err_sgt:
	sg_free_table(&umem->sgt);
err_unpin:
	unpin_user_pages(pages, done);
	kvfree(pages);
err_charge:
	atomic64_sub(npages, &mm->pinned_vm);
err_mm:
	mmdrop(mm);
	kfree(umem);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL(ib_umem_get);

/**
 * ib_umem_release() - unmap, unpin and uncharge a region
 * @umem: what ib_umem_get() returned, or NULL
 *
 * Any process context (not necessarily the owner's); sleeps.
 */
void ib_umem_release(struct ib_umem *umem)
{
	if (!umem)
		return;
	dma_unmap_sgtable(umem->ibdev->dma_device, &umem->sgt,
			  DMA_BIDIRECTIONAL, 0);
	umem_unpin(&umem->sgt, umem->writable);
	sg_free_table(&umem->sgt);
	atomic64_sub(umem->npages, &umem->owning_mm->pinned_vm);
	mmdrop(umem->owning_mm);
	kfree(umem);
}
EXPORT_SYMBOL(ib_umem_release);
