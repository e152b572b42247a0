// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The ib_device methods of the control half: device and port queries
 * (answered by the firmware's SMA through MAD_IFC), device and port
 * modification, PDs and MRs, the driver's sysfs files, and registration
 * with the core.  The data-path methods come from mthca_dp_init_verbs().
 */

#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mthca-abi.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"
#include "mthca_profile.h"

/* SMP attribute IDs of the queries below. */
#define ATTR_NODE_DESC		0x0010
#define ATTR_NODE_INFO		0x0011
#define ATTR_GUID_INFO		0x0014
#define ATTR_PORT_INFO		0x0015
#define ATTR_PKEY_TABLE		0x0016

/* Members an MGM entry holds: 4 per 16 bytes, minus its 32-byte header. */
#define QPS_PER_MGM		(4 * (MTHCA_MGM_ENTRY_SIZE / 16 - 2))

/**
 * struct mthca_smp_query - a Get SMP and its response, allocated together
 * @in: the query
 * @out: the response
 */
struct mthca_smp_query {
	struct ib_smp	in;
	struct ib_smp	out;
};

/*
 * Asks the firmware's SMA for attribute @attr (modifier @mod) of @port.
 * On success, @q->out.data holds the attribute.  Sleeps.
 */
static int smp_get(struct mthca_dev *dev, struct mthca_smp_query *q,
		   u16 attr, u32 mod, u8 port)
{
	int ret;

	memset(&q->in, 0, sizeof(q->in));
	q->in.base_version = 1;
	q->in.mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	q->in.class_version = 1;
	q->in.method = IB_MGMT_METHOD_GET;
	q->in.attr_id = cpu_to_be16(attr);
	q->in.attr_mod = cpu_to_be32(mod);

	ret = mthca_MAD_IFC(dev, true, true, port, NULL, NULL, &q->in, &q->out);
	if (ret)
		return ret;
	if (q->out.status & ~IB_SMP_DIRECTION) {
		mthca_dbg(dev, "SMP get %04x/%u: status %04x\n", attr, mod,
			  be16_to_cpu(q->out.status));
		return -EINVAL;
	}
	return 0;
}

/*
 * smp_get() into a query allocated here.  The caller kfree()s *@q whatever
 * the result (it is NULL when the allocation failed).
 */
static int smp_get_alloc(struct mthca_dev *dev, struct mthca_smp_query **q,
			 u16 attr, u32 mod, u8 port)
{
	*q = kmalloc(sizeof(**q), GFP_KERNEL);
	if (!*q)
		return -ENOMEM;
	return smp_get(dev, *q, attr, mod, port);
}

static int mthca_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *props)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	const struct mthca_limits *lim = &dev->limits;
	struct mthca_smp_query *q;
	int ret;

	ret = smp_get_alloc(dev, &q, ATTR_NODE_INFO, 0, 1);
	if (ret)
		goto out;

	memset(props, 0, sizeof(*props));
	props->fw_ver = dev->fw.version;
	props->device_cap_flags = IB_DEVICE_CHANGE_PHY_PORT |
				  IB_DEVICE_PORT_ACTIVE_EVENT |
				  IB_DEVICE_SYS_IMAGE_GUID |
				  IB_DEVICE_RC_RNR_NAK_GEN;
	if (lim->flags & MTHCA_DEV_CAP_BAD_PKEY_CNTR)
		props->device_cap_flags |= IB_DEVICE_BAD_PKEY_CNTR;
	if (lim->flags & MTHCA_DEV_CAP_BAD_QKEY_CNTR)
		props->device_cap_flags |= IB_DEVICE_BAD_QKEY_CNTR;
	if (lim->flags & MTHCA_DEV_CAP_RAW_MULTI)
		props->device_cap_flags |= IB_DEVICE_RAW_MULTI;
	if (lim->flags & MTHCA_DEV_CAP_AUTO_PATH_MIG)
		props->device_cap_flags |= IB_DEVICE_AUTO_PATH_MIG;
	if (lim->flags & MTHCA_DEV_CAP_UD_AV_PORT)
		props->device_cap_flags |= IB_DEVICE_UD_AV_PORT_ENFORCE;

	/* NodeInfo: SystemImageGUID at 4, DeviceID at 30, Revision at 32. */
	memcpy(&props->sys_image_guid, q->out.data + 4, 8);
	memcpy(&props->node_guid, q->out.data + 12, 8);
	props->vendor_part_id = get_unaligned_be16(q->out.data + 30);
	props->hw_ver = get_unaligned_be32(q->out.data + 32);
	props->vendor_id = get_unaligned_be32(q->out.data + 36) & 0xffffff;

	props->max_mr_size = ~0ULL;
	props->page_size_cap = lim->page_size_cap;
	props->max_qp = lim->num_qps - lim->reserved_qps;
	props->max_qp_wr = lim->max_wqes;
	props->max_sge = lim->max_sg;
	props->max_sge_rd = lim->max_sg;
	props->max_cq = lim->num_cqs - lim->reserved_cqs;
	props->max_cqe = lim->max_cqes;
	props->max_mr = lim->num_mpts - lim->reserved_mrws;
	props->max_pd = lim->num_pds - lim->reserved_pds;
	props->max_qp_rd_atom = 1 << dev->layout.rdb_shift;
	props->max_qp_init_rd_atom = lim->max_qp_init_rdma;
	props->max_res_rd_atom = props->max_qp_rd_atom * props->max_qp;
	props->max_srq = lim->num_srqs ? lim->num_srqs - lim->reserved_srqs : 0;
	props->max_srq_wr = lim->max_srq_wqes;
	props->max_srq_sge = lim->max_srq_sge;
	props->local_ca_ack_delay = lim->local_ca_ack_delay;
	props->atomic_cap = (lim->flags & MTHCA_DEV_CAP_ATOMIC) ?
			    IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	props->max_pkeys = lim->pkey_table_len;
	props->max_mcast_grp = lim->num_mgms + lim->num_amgms;
	props->max_mcast_qp_attach = QPS_PER_MGM;
	props->max_total_mcast_qp_attach = props->max_mcast_qp_attach *
					   props->max_mcast_grp;
	/* Left 0, as upstream's mthca reports it (ibv_devinfo shows it). */
	props->max_ah = 0;
out:
	kfree(q);
	return ret;
}

static int mthca_query_port(struct ib_device *ibdev, u8 port,
			    struct ib_port_attr *props)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct mthca_smp_query *q;
	const u8 *pi;
	int ret;

	if (port < 1 || port > dev->limits.num_ports)
		return -EINVAL;
	ret = smp_get_alloc(dev, &q, ATTR_PORT_INFO, port, port);
	if (ret)
		goto out;

	/* PortInfo, IBA 14.2.5.6. */
	pi = q->out.data;
	memset(props, 0, sizeof(*props));
	props->lid = get_unaligned_be16(pi + 16);
	props->sm_lid = get_unaligned_be16(pi + 18);
	props->port_cap_flags = get_unaligned_be32(pi + 20);
	props->active_width = pi[31] & 0xf;
	props->state = pi[32] & 0xf;
	props->phys_state = pi[33] >> 4;
	props->lmc = pi[34] & 0x7;
	props->active_speed = pi[35] >> 4;
	props->active_mtu = pi[36] >> 4;
	props->sm_sl = pi[36] & 0xf;
	props->max_vl_num = pi[37] >> 4;
	props->init_type_reply = pi[41] >> 4;
	props->max_mtu = pi[41] & 0xf;
	props->bad_pkey_cntr = get_unaligned_be16(pi + 46);
	props->qkey_viol_cntr = get_unaligned_be16(pi + 48);
	props->subnet_timeout = pi[51] & 0x1f;
	props->gid_tbl_len = dev->limits.gid_table_len;
	props->pkey_tbl_len = dev->limits.pkey_table_len;
	props->max_msg_sz = 0x80000000;
out:
	kfree(q);
	return ret;
}

static int mthca_query_gid(struct ib_device *ibdev, u8 port, int index,
			   union ib_gid *gid)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct mthca_smp_query *q;
	int ret;

	if (port < 1 || port > dev->limits.num_ports || index < 0 ||
	    index >= dev->limits.gid_table_len)
		return -EINVAL;
	/* Subnet prefix from PortInfo, interface ID from GUIDInfo. */
	ret = smp_get_alloc(dev, &q, ATTR_PORT_INFO, port, port);
	if (ret)
		goto out;
	memcpy(gid->raw, q->out.data + 8, 8);
	ret = smp_get(dev, q, ATTR_GUID_INFO, index / 8, port);
	if (ret)
		goto out;
	memcpy(gid->raw + 8, q->out.data + (index % 8) * 8, 8);
out:
	kfree(q);
	return ret;
}

static int mthca_query_pkey(struct ib_device *ibdev, u8 port, u16 index,
			    u16 *pkey)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct mthca_smp_query *q;
	int ret;

	if (port < 1 || port > dev->limits.num_ports ||
	    index >= dev->limits.pkey_table_len)
		return -EINVAL;
	ret = smp_get_alloc(dev, &q, ATTR_PKEY_TABLE, index / 32, port);
	if (!ret)
		*pkey = get_unaligned_be16(q->out.data + (index % 32) * 2);
	kfree(q);
	return ret;
}

static int mthca_modify_device(struct ib_device *ibdev, int mask,
			       struct ib_device_modify *props)
{
	struct mthca_dev *dev = to_mdev(ibdev);

	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	if (mask & IB_DEVICE_MODIFY_NODE_DESC) {
		mutex_lock(&dev->cap_mask_mutex);
		memcpy(ibdev->node_desc, props->node_desc,
		       sizeof(ibdev->node_desc));
		mutex_unlock(&dev->cap_mask_mutex);
	}
	return 0;
}

static int mthca_modify_port(struct ib_device *ibdev, u8 port, int mask,
			     struct ib_port_modify *props)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct ib_port_attr attr;
	u32 cap;
	int ret;

	if (port < 1 || port > dev->limits.num_ports)
		return -EINVAL;
	/* Nothing to do for a shutdown request: the SM owns the port. */
	if (mask & IB_PORT_SHUTDOWN)
		return 0;

	mutex_lock(&dev->cap_mask_mutex);
	ret = mthca_query_port(ibdev, port, &attr);
	if (ret)
		goto out;
	cap = (attr.port_cap_flags | props->set_port_cap_mask) &
	      ~props->clr_port_cap_mask;
	ret = mthca_SET_IB(dev, port, cap,
			   mask & IB_PORT_RESET_QKEY_CNTR);
	if (!ret)
		dev->port_cap_mask[port - 1] = cap;
out:
	mutex_unlock(&dev->cap_mask_mutex);
	return ret;
}

/*
 * A user context: a UAR of its own, and the sizes libmthca needs (the QP
 * table for its QPN lookup, the UAR context for its doorbell records).
 */
static struct ib_ucontext *mthca_alloc_ucontext(struct ib_device *ibdev,
						struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	struct mthca_alloc_ucontext_resp resp = {};
	struct mthca_ucontext *uctx;
	int ret;

	uctx = kzalloc(sizeof(*uctx), GFP_KERNEL);
	if (!uctx)
		return ERR_PTR(-ENOMEM);
	xa_init(&uctx->pdns);
	spin_lock_init(&uctx->vma_lock);
	INIT_LIST_HEAD(&uctx->vmas);
	ret = mthca_uar_alloc(dev, &uctx->uar);
	if (ret)
		goto err_free;
	uctx->db_tab = mthca_user_db_tab_alloc(dev);
	if (IS_ERR(uctx->db_tab)) {
		ret = PTR_ERR(uctx->db_tab);
		goto err_uar;
	}

	resp.qp_tab_size = dev->limits.num_qps;
	resp.uarc_size = dev->layout.uarc_size;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		goto err_db;
	return &uctx->ibucontext;

err_db:
	mthca_user_db_tab_free(dev, &uctx->uar, uctx->db_tab);
err_uar:
	mthca_uar_free(dev, &uctx->uar);
err_free:
	kfree(uctx);
	return ERR_PTR(ret);
}

static int mthca_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct mthca_ucontext *uctx = to_mucontext(ibuctx);
	struct mthca_dev *dev = to_mdev(ibuctx->device);

	/* Every CQ, QP and SRQ is gone: unmap the pages they left. */
	mthca_user_db_tab_free(dev, &uctx->uar, uctx->db_tab);
	mthca_uar_free(dev, &uctx->uar);
	xa_destroy(&uctx->pdns);
	kfree(uctx);
	return 0;
}

/*
 * The UAR mappings of a context are tracked, so that disassociation can
 * take them away.  A mapping copied by fork() or moved by mremap() is a
 * new vma: open() tracks it too.  Both run under mmap_lock.
 */
static void mthca_uar_vma_track(struct mthca_uar_vma *m,
				struct mthca_ucontext *uctx,
				struct vm_area_struct *vma)
{
	m->vma = vma;
	m->uctx = uctx;
	vma->vm_private_data = m;
	spin_lock(&uctx->vma_lock);
	list_add_tail(&m->list, &uctx->vmas);
	spin_unlock(&uctx->vma_lock);
}

static void mthca_uar_vma_open(struct vm_area_struct *vma)
{
	struct mthca_uar_vma *old = vma->vm_private_data;
	struct mthca_uar_vma *m;

	/* open() cannot fail; the entry is small. */
	m = kmalloc(sizeof(*m), GFP_KERNEL | __GFP_NOFAIL);
	mthca_uar_vma_track(m, old->uctx, vma);
}

static void mthca_uar_vma_close(struct vm_area_struct *vma)
{
	struct mthca_uar_vma *m = vma->vm_private_data;
	struct mthca_ucontext *uctx = m->uctx;

	spin_lock(&uctx->vma_lock);
	list_del(&m->list);
	spin_unlock(&uctx->vma_lock);
	vma->vm_private_data = NULL;
	kfree(m);
}

static const struct vm_operations_struct mthca_uar_vm_ops = {
	.open	= mthca_uar_vma_open,
	.close	= mthca_uar_vma_close,
};

/* The context's UAR page, uncached: exactly one page at offset 0. */
static int mthca_mmap_uar(struct ib_ucontext *ibuctx,
			  struct vm_area_struct *vma)
{
	struct mthca_uar_vma *m;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE || vma->vm_pgoff)
		return -EINVAL;
	m = kmalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	if (io_remap_pfn_range(vma, vma->vm_start,
			       mthca_uar_pfn(to_mdev(ibuctx->device),
					     &to_mucontext(ibuctx)->uar),
			       PAGE_SIZE,
			       vma->vm_page_prot)) {
		kfree(m);
		return -EAGAIN;
	}
	vma->vm_ops = &mthca_uar_vm_ops;
	mthca_uar_vma_track(m, to_mucontext(ibuctx), vma);
	return 0;
}

/*
 * The device goes away under a process: every mapping of its UAR loses
 * its page (a later doorbell write gets SIGBUS, not a UAR that another
 * context may own by then) and its vm_ops (they are this module's code,
 * and the vma may outlive the module).  Without vm_ops a shared mapping
 * faults with SIGBUS, and munmap() no longer calls us.  Each mapping is
 * changed under its mm's mmap_lock held for writing, which excludes
 * faults, fork() and munmap() of it; mmgrab() keeps the mm_struct while
 * we wait for the lock, even if the process is exiting.  The doorbell
 * pages stay pinned until dealloc_ucontext(), which frees them once.
 */
static void mthca_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
	struct mthca_ucontext *uctx = to_mucontext(ibuctx);
	struct mthca_uar_vma *m, *tmp;
	struct mm_struct *mm;
	LIST_HEAD(mine);

	for (;;) {
		spin_lock(&uctx->vma_lock);
		m = list_first_entry_or_null(&uctx->vmas,
					     struct mthca_uar_vma, list);
		if (!m) {
			spin_unlock(&uctx->vma_lock);
			break;
		}
		mm = m->vma->vm_mm;
		mmgrab(mm);
		spin_unlock(&uctx->vma_lock);

		mmap_write_lock(mm);
		spin_lock(&uctx->vma_lock);
		list_for_each_entry_safe(m, tmp, &uctx->vmas, list)
			if (m->vma->vm_mm == mm)
				list_move(&m->list, &mine);
		spin_unlock(&uctx->vma_lock);
		list_for_each_entry_safe(m, tmp, &mine, list) {
			struct vm_area_struct *vma = m->vma;

			zap_vma_ptes(vma, vma->vm_start,
				     vma->vm_end - vma->vm_start);
			vma->vm_ops = NULL;
			vma->vm_private_data = NULL;
			list_del(&m->list);
			kfree(m);
		}
		mmap_write_unlock(mm);
		mmdrop(mm);
	}
}

static struct ib_pd *mthca_alloc_pd(struct ib_device *ibdev,
				    struct ib_ucontext *uctx,
				    struct ib_udata *udata)
{
	struct mthca_pd *pd;
	int ret;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL);
	if (!pd)
		return ERR_PTR(-ENOMEM);
	ret = mthca_pd_alloc(to_mdev(ibdev), !uctx, pd);
	if (ret) {
		kfree(pd);
		return ERR_PTR(ret);
	}
	/* libmthca needs the PD number for its CQs (mthca_alloc_pd_resp). */
	if (udata) {
		ret = ib_copy_to_udata(udata, &pd->pdn, sizeof(u32));
		if (!ret)
			ret = xa_insert(&to_mucontext(uctx)->pdns, pd->pdn,
					pd, GFP_KERNEL);
		if (ret) {
			mthca_pd_free(to_mdev(ibdev), pd);
			kfree(pd);
			return ERR_PTR(ret);
		}
	}
	return &pd->ibpd;
}

static int mthca_dealloc_pd(struct ib_pd *ibpd)
{
	if (ibpd->uobject)
		xa_erase(&to_mucontext(ibpd->uobject->context)->pdns,
			 to_mpd(ibpd)->pdn);
	mthca_pd_free(to_mdev(ibpd->device), to_mpd(ibpd));
	kfree(to_mpd(ibpd));
	return 0;
}

static struct ib_mr *mthca_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct mthca_mr *mr;
	int ret;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	ret = mthca_mr_alloc_notrans(to_mdev(ibpd->device), to_mpd(ibpd)->pdn,
				     mthca_access_to_mpt(access), mr);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

/*
 * The largest page size that describes every buffer: the inner buffer
 * boundaries must all fall on it.  The first buffer may start and the last
 * may end anywhere.
 */
static int phys_page_shift(const struct ib_phys_buf *bufs, int n)
{
	u64 bits = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (i > 0)
			bits |= bufs[i].addr;
		if (i < n - 1)
			bits |= bufs[i].addr + bufs[i].size;
	}
	if (bits & ~PAGE_MASK)
		return -EINVAL;
	/* Cap at 2^31: the MPT page size field has 5 bits over 4 KiB. */
	return __ffs64(bits | BIT_ULL(31));
}

static struct ib_mr *mthca_reg_phys_mr(struct ib_pd *ibpd,
				       struct ib_phys_buf *bufs, int nbufs,
				       int access, u64 *iova_start)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	u64 first, total = 0, mask, *pages;
	struct mthca_mr *mr;
	int shift, npages = 0, i, ret;
	u64 off;

	if (nbufs <= 0)
		return ERR_PTR(-EINVAL);
	shift = phys_page_shift(bufs, nbufs);
	if (shift < 0)
		return ERR_PTR(shift);
	mask = (1ULL << shift) - 1;
	/* The IOVA and the first address must agree below the page size. */
	if ((*iova_start & ~PAGE_MASK) != (bufs[0].addr & ~PAGE_MASK))
		return ERR_PTR(-EINVAL);

	first = bufs[0].addr & ~mask;
	for (i = 0; i < nbufs; i++) {
		u64 start = i ? bufs[i].addr : first;
		u64 end = bufs[i].addr + bufs[i].size;

		total += bufs[i].size;
		npages += DIV_ROUND_UP_ULL(end - start, 1ULL << shift);
	}

	pages = kmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return ERR_PTR(-ENOMEM);
	npages = 0;
	for (i = 0; i < nbufs; i++) {
		u64 start = i ? bufs[i].addr : first;
		u64 end = bufs[i].addr + bufs[i].size;

		for (off = start; off < end; off += 1ULL << shift)
			pages[npages++] = off;
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		kfree(pages);
		return ERR_PTR(-ENOMEM);
	}
	ret = mthca_mr_alloc_phys(dev, to_mpd(ibpd)->pdn, pages, shift, npages,
				  *iova_start, total,
				  mthca_access_to_mpt(access), mr);
	kfree(pages);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

/*
 * A region of user memory: the pages are pinned (ib_umem, charged to
 * RLIMIT_MEMLOCK), their bus addresses written to MTT entries of 4 KiB
 * pages, and an MPT entry made at IOVA @virt.  libmthca registers its
 * queue buffers at IOVA 0 (the queue contexts address them from 0), so
 * @virt need not be @start; only their offsets in the page must agree.
 * The mthca_reg_mr udata (MTHCA_MR_DMASYNC) asks for nothing on a
 * cache-coherent host.
 */
static struct ib_mr *mthca_reg_user_mr(struct ib_pd *ibpd, u64 start,
				       u64 length, u64 virt, int access,
				       struct ib_udata *udata)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	struct sg_dma_page_iter it;
	struct mthca_mr *mr;
	u64 *pages;
	int n = 0, ret;

	if ((start ^ virt) & ~PAGE_MASK)
		return ERR_PTR(-EINVAL);
	/* Remote write or atomics need local write (IBA 10.6.3.1). */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		ret = PTR_ERR(mr->umem);
		goto err_free;
	}
	if (mr->umem->npages > INT_MAX) {
		ret = -ENOMEM;
		goto err_umem;
	}
	pages = kvmalloc_array(mr->umem->npages, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto err_umem;
	}
	for_each_sgtable_dma_page(&mr->umem->sgt, &it, 0) {
		if (n == mr->umem->npages)
			break;
		/* The first page's address carries the range's offset. */
		pages[n++] = sg_page_iter_dma_address(&it) & PAGE_MASK;
	}
	ret = mthca_mr_alloc_phys(dev, to_mpd(ibpd)->pdn, pages, PAGE_SHIFT, n,
				  virt, length, mthca_access_to_mpt(access),
				  mr);
	kvfree(pages);
	if (ret)
		goto err_umem;
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

static int mthca_dereg_mr(struct ib_mr *ibmr)
{
	struct mthca_mr *mr = to_mmr(ibmr);

	/* The MPT goes first: the HCA must not reach the pages any more. */
	mthca_mr_free(to_mdev(ibmr->device), mr);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* sysfs                                                               */
/* ------------------------------------------------------------------ */

static struct mthca_dev *sysfs_mdev(struct device *d)
{
	return to_mdev(container_of(d, struct ib_device, dev));
}

static ssize_t fw_ver_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	u64 v = sysfs_mdev(d)->fw.version;

	return sysfs_emit(buf, "%d.%d.%d\n", (int)(v >> 32),
			  (int)(v >> 16) & 0xffff, (int)v & 0xffff);
}
static DEVICE_ATTR_RO(fw_ver);

static ssize_t hw_rev_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%x\n", sysfs_mdev(d)->rev_id);
}
static DEVICE_ATTR_RO(hw_rev);

static ssize_t hca_type_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	/* Only the MT25208 in native (mem-free) mode binds here. */
	return sysfs_emit(buf, "%s\n", "MT25208");
}
static DEVICE_ATTR_RO(hca_type);

static ssize_t board_id_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%.*s\n", MTHCA_BOARD_ID_LEN,
			  sysfs_mdev(d)->board_id);
}
static DEVICE_ATTR_RO(board_id);

static struct attribute *mthca_sysfs_attrs[] = {
	&dev_attr_fw_ver.attr,
	&dev_attr_hw_rev.attr,
	&dev_attr_hca_type.attr,
	&dev_attr_board_id.attr,
	NULL
};

static const struct attribute_group mthca_sysfs_group = {
	.attrs = mthca_sysfs_attrs,
};

/* NodeDescription and NodeGUID from the firmware, and the hardware rev. */
static int node_info_read(struct mthca_dev *dev)
{
	struct mthca_smp_query *q;
	int ret;

	ret = smp_get_alloc(dev, &q, ATTR_NODE_DESC, 0, 1);
	if (ret)
		goto out;
	memcpy(dev->ib_dev.node_desc, q->out.data,
	       sizeof(dev->ib_dev.node_desc));
	ret = smp_get(dev, q, ATTR_NODE_INFO, 0, 1);
	if (ret)
		goto out;
	dev->rev_id = get_unaligned_be32(q->out.data + 32);
	memcpy(&dev->ib_dev.node_guid, q->out.data + 12, 8);
out:
	kfree(q);
	return ret;
}

/**
 * mthca_register_device() - fill in the ib_device and register it
 * @dev: the device, fully initialised
 *
 * Return: 0 or a negative errno.
 */
int mthca_register_device(struct mthca_dev *dev)
{
	struct ib_device *ib = &dev->ib_dev;
	int ret;

	ret = node_info_read(dev);
	if (ret)
		return ret;

	strscpy(ib->name, "mthca%d", sizeof(ib->name));
	ib->owner = THIS_MODULE;
	ib->node_type = IB_NODE_CA;
	ib->phys_port_cnt = dev->limits.num_ports;
	ib->dma_device = &dev->pdev->dev;
	ib->driver_attr_group = &mthca_sysfs_group;

	ib->query_device = mthca_query_device;
	ib->query_port = mthca_query_port;
	ib->query_gid = mthca_query_gid;
	ib->query_pkey = mthca_query_pkey;
	ib->modify_device = mthca_modify_device;
	ib->modify_port = mthca_modify_port;
	ib->alloc_pd = mthca_alloc_pd;
	ib->dealloc_pd = mthca_dealloc_pd;
	ib->get_dma_mr = mthca_get_dma_mr;
	ib->reg_phys_mr = mthca_reg_phys_mr;
	ib->reg_user_mr = mthca_reg_user_mr;
	ib->dereg_mr = mthca_dereg_mr;
	ib->process_mad = mthca_process_mad;

	ib->alloc_ucontext = mthca_alloc_ucontext;
	ib->dealloc_ucontext = mthca_dealloc_ucontext;
	ib->mmap = mthca_mmap_uar;
	ib->disassociate_ucontext = mthca_disassociate_ucontext;
	ib->uverbs_abi_ver = MTHCA_UVERBS_ABI_VERSION;
	ib->uverbs_cmd_mask = BIT_ULL(IB_USER_VERBS_CMD_GET_CONTEXT) |
			      BIT_ULL(IB_USER_VERBS_CMD_QUERY_DEVICE) |
			      BIT_ULL(IB_USER_VERBS_CMD_QUERY_PORT) |
			      BIT_ULL(IB_USER_VERBS_CMD_ALLOC_PD) |
			      BIT_ULL(IB_USER_VERBS_CMD_DEALLOC_PD) |
			      BIT_ULL(IB_USER_VERBS_CMD_REG_MR) |
			      BIT_ULL(IB_USER_VERBS_CMD_DEREG_MR) |
			      BIT_ULL(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL) |
			      BIT_ULL(IB_USER_VERBS_CMD_CREATE_CQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_RESIZE_CQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_DESTROY_CQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_CREATE_QP) |
			      BIT_ULL(IB_USER_VERBS_CMD_QUERY_QP) |
			      BIT_ULL(IB_USER_VERBS_CMD_MODIFY_QP) |
			      BIT_ULL(IB_USER_VERBS_CMD_DESTROY_QP) |
			      BIT_ULL(IB_USER_VERBS_CMD_ATTACH_MCAST) |
			      BIT_ULL(IB_USER_VERBS_CMD_DETACH_MCAST) |
			      BIT_ULL(IB_USER_VERBS_CMD_CREATE_SRQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_MODIFY_SRQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_QUERY_SRQ) |
			      BIT_ULL(IB_USER_VERBS_CMD_DESTROY_SRQ);
	mthca_dp_init_verbs(ib);

	ret = ib_register_device(ib);
	if (ret)
		return ret;
	dev->registered = true;

	ret = mthca_trap_agents_create(&dev->traps, dev->limits.num_ports);
	if (ret) {
		mthca_warn(dev, "no MAD agents for traps: %d\n", ret);
		ret = 0;
	}
	return ret;
}

/**
 * mthca_unregister_device() - undo mthca_register_device()
 * @dev: the device
 */
void mthca_unregister_device(struct mthca_dev *dev)
{
	if (!dev->registered)
		return;
	mthca_trap_agents_destroy(&dev->traps);
	ib_unregister_device(&dev->ib_dev);
	dev->registered = false;
}
