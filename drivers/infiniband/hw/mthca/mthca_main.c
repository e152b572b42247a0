// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: PCI driver for the Mellanox InfiniHost III Ex (MT25208) in
 * mem-free mode.
 *
 * Bring-up, in order:
 *  1. PCI: enable, map, reset the chip.
 *  2. Firmware: QUERY_FW, ENABLE_LAM (a mem-free board has no attached
 *     memory and says so), MAP_FA + RUN_FW, QUERY_DEV_LIM.
 *  3. ICM: compute the profile, SET_ICM_SIZE, MAP_ICM_AUX, back the EQ
 *     context page and the object tables' reserved parts, INIT_HCA,
 *     QUERY_ADAPTER.
 *  4. Driver state: UAR + kernel doorbell mapping, doorbell records, PDs,
 *     MRs, the driver's own PD, EQs (MSI-X or INTx), event-mode commands,
 *     then the data-path tables.
 *  5. Registration with ib_core, MAD agents, catastrophic error polling.
 * Removal undoes it in reverse.
 */

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"
#include "mthca_icm.h"
#include "mthca_profile.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("Mellanox InfiniHost III Ex (MT25208, mem-free) driver");
MODULE_LICENSE("Dual BSD/GPL");

#define PCI_VENDOR_MELLANOX	0x15b3
#define PCI_DEVICE_ARBEL	0x6282

/* BAR0 of the MT25208 is exactly 1 MiB. */
#define MTHCA_BAR0_SIZE		BIT(20)

/* Data segments a WQE can take after the next and (mem-free) UD segments. */
#define WQE_NEXT_SEG		16
#define WQE_UD_SEG		48
#define WQE_DATA_SEG		16

static int mthca_msi_x = 1;
module_param_named(msi_x, mthca_msi_x, int, 0444);
MODULE_PARM_DESC(msi_x, "use MSI-X interrupts if nonzero (default 1)");

static struct mthca_profile_req mthca_req = {
	.num_qp = 1 << 16,
	.rdb_per_qp = 1 << 2,
	.num_cq = 1 << 16,
	.num_mcg = 1 << 13,
	.num_mpt = 1 << 17,
	.num_mtt = 1 << 20,
	.uarc_size = 1 << 18,
	.mtt_seg_size = MTHCA_MTT_SEG_SIZE,
};

/* The profile knobs: read-only parameters, each named after its field. */
module_param_named(num_qp, mthca_req.num_qp, uint, 0444);
module_param_named(num_cq, mthca_req.num_cq, uint, 0444);
module_param_named(rdb_per_qp, mthca_req.rdb_per_qp, uint, 0444);
module_param_named(num_mpt, mthca_req.num_mpt, uint, 0444);
module_param_named(num_mtt, mthca_req.num_mtt, uint, 0444);
module_param_named(num_mcg, mthca_req.num_mcg, uint, 0444);

MODULE_PARM_DESC(num_qp, "QPs (power of two, default 65536)");
MODULE_PARM_DESC(num_cq, "CQs (power of two, default 65536)");
MODULE_PARM_DESC(rdb_per_qp,
		 "RDMA read/atomic responder slots per QP (default 4)");
MODULE_PARM_DESC(num_mpt, "memory regions (default 131072)");
MODULE_PARM_DESC(num_mtt, "MTT segments (default 1048576)");
MODULE_PARM_DESC(num_mcg, "multicast group entries (default 8192)");

/* Serialises probe, removal and the reset after a catastrophic error. */
DEFINE_MUTEX(mthca_device_mutex);

/* Limits from QUERY_DEV_LIM; refuses a device this driver cannot run. */
static int limits_from_dev_lim(struct mthca_dev *dev,
			       const struct mthca_dev_lim *dl)
{
	struct mthca_limits *lim = &dev->limits;

	if (dl->min_page_sz > PAGE_SIZE) {
		mthca_err(dev, "HCA page size %d above PAGE_SIZE\n",
			  dl->min_page_sz);
		return -ENODEV;
	}
	if (dl->num_ports < 1 || dl->num_ports > MTHCA_MAX_PORTS) {
		mthca_err(dev, "%d ports\n", dl->num_ports);
		return -ENODEV;
	}
	if (dl->uar_size > pci_resource_len(dev->pdev, 2)) {
		mthca_err(dev, "UAR area of %d bytes beyond BAR2\n",
			  dl->uar_size);
		return -ENODEV;
	}

	lim->num_ports = dl->num_ports;
	lim->vl_cap = dl->max_vl;
	lim->mtu_cap = dl->max_mtu;
	lim->port_width_cap = dl->max_port_width;
	lim->gid_table_len = dl->max_gids;
	lim->pkey_table_len = dl->max_pkeys;
	lim->local_ca_ack_delay = dl->local_ca_ack_delay;
	lim->max_sg = min_t(int, dl->max_sg,
			    (dl->max_desc_sz - WQE_NEXT_SEG - WQE_UD_SEG) /
			    WQE_DATA_SEG);
	lim->max_desc_sz = dl->max_desc_sz;
	lim->max_wqes = dl->max_qp_sz;
	lim->max_qp_init_rdma = dl->max_requester_per_qp;
	lim->reserved_qps = dl->reserved_qps;
	lim->max_srq_wqes = dl->max_srq_sz;
	lim->max_srq_sge = lim->max_sg;
	lim->reserved_srqs = dl->reserved_srqs;
	lim->reserved_eecs = dl->reserved_eecs;
	/* One CQE stays empty so a full CQ differs from an empty one. */
	lim->max_cqes = dl->max_cq_sz - 1;
	lim->reserved_cqs = dl->reserved_cqs;
	lim->reserved_eqs = dl->reserved_eqs;
	/* The firmware counts reserved MTT entries; we count segments. */
	lim->mtt_seg_size = MTHCA_MTT_SEG_SIZE;
	lim->reserved_mtts = DIV_ROUND_UP(dl->reserved_mtts * 8,
					  MTHCA_MTT_SEG_SIZE);
	lim->reserved_mrws = dl->reserved_mrws;
	lim->reserved_uars = dl->reserved_uars;
	lim->reserved_pds = dl->reserved_pds;
	lim->reserved_mcgs = dl->reserved_mgms;
	lim->num_qp_per_mcg = dl->max_qp_per_mcg;
	lim->uar_size = dl->uar_size;
	lim->uar_scratch_entry_sz = dl->uar_scratch_entry_sz;
	lim->page_size_cap = ~(u32)(dl->min_page_sz - 1);
	lim->flags = dl->flags;
	lim->stat_rate_support = dl->stat_rate_support ?: 0x3;
	lim->max_mr_size = dl->max_mrw_sz;
	if (dl->flags & MTHCA_DEV_CAP_SRQ)
		dev->flags |= MTHCA_FLAG_SRQ;
	return 0;
}

static void limits_from_profile(struct mthca_dev *dev,
				const struct mthca_profile_result *r)
{
	struct mthca_limits *lim = &dev->limits;
	struct mthca_icm_layout *lay = &dev->layout;
	const struct mthca_init_hca_param *h = &r->hca;

	lim->num_qps = r->num_qps;
	lim->num_srqs = r->num_srqs;
	lim->num_cqs = r->num_cqs;
	lim->num_eqs = r->num_eqs;
	lim->num_mpts = r->num_mpts;
	lim->num_mtt_segs = r->num_mtt_segs;
	lim->num_uars = r->num_uars;
	lim->num_mgms = r->num_mgms;
	lim->num_amgms = r->num_amgms;
	lim->max_qp_dest_rdma = 1 << r->rdb_shift;

	lay->qpc_base = h->qpc_base;
	lay->eqpc_base = h->eqpc_base;
	lay->eeec_base = h->eeec_base;
	lay->eec_base = h->eec_base;
	lay->srqc_base = h->srqc_base;
	lay->cqc_base = h->cqc_base;
	lay->eqc_base = h->eqc_base;
	lay->rdb_base = h->rdb_base;
	lay->mc_base = h->mc_base;
	lay->mpt_base = h->mpt_base;
	lay->mtt_base = h->mtt_base;
	lay->uar_scratch_base = h->uar_scratch_base;
	lay->uarc_base = h->uarc_base;
	lay->total = r->total;
	lay->rdb_shift = r->rdb_shift;
	lay->uarc_size = mthca_req.uarc_size;
}

static void icm_tables_free(struct mthca_dev *dev)
{
	mthca_icm_table_free(dev, dev->icm_mcg);
	mthca_icm_table_free(dev, dev->icm_srqc);
	mthca_icm_table_free(dev, dev->icm_cqc);
	mthca_icm_table_free(dev, dev->icm_rdb);
	mthca_icm_table_free(dev, dev->icm_eqpc);
	mthca_icm_table_free(dev, dev->icm_qpc);
	mthca_icm_table_free(dev, dev->icm_mpt);
	mthca_icm_table_free(dev, dev->icm_mtt);
	dev->icm_mcg = NULL;
	dev->icm_srqc = NULL;
	dev->icm_cqc = NULL;
	dev->icm_rdb = NULL;
	dev->icm_eqpc = NULL;
	dev->icm_qpc = NULL;
	dev->icm_mpt = NULL;
	dev->icm_mtt = NULL;
}

static int icm_tables_alloc(struct mthca_dev *dev,
			    const struct mthca_dev_lim *dl)
{
	const struct mthca_limits *lim = &dev->limits;
	const struct mthca_icm_layout *lay = &dev->layout;
	u32 mcgs = lim->num_mgms + lim->num_amgms;

	/* MTT and MPT entries are written by the CPU as well. */
	dev->icm_mtt = mthca_icm_table_alloc(dev, lay->mtt_base,
					     MTHCA_MTT_SEG_SIZE,
					     lim->num_mtt_segs,
					     lim->reserved_mtts, true);
	dev->icm_mpt = mthca_icm_table_alloc(dev, lay->mpt_base,
					     dl->mpt_entry_sz, lim->num_mpts,
					     lim->reserved_mrws, true);
	dev->icm_qpc = mthca_icm_table_alloc(dev, lay->qpc_base,
					     dl->qpc_entry_sz, lim->num_qps,
					     lim->reserved_qps, false);
	dev->icm_eqpc = mthca_icm_table_alloc(dev, lay->eqpc_base,
					      dl->eqpc_entry_sz, lim->num_qps,
					      lim->reserved_qps, false);
	dev->icm_rdb = mthca_icm_table_alloc(dev, lay->rdb_base,
					     MTHCA_RDB_ENTRY_SIZE,
					     lim->num_qps << lay->rdb_shift,
					     0, false);
	dev->icm_cqc = mthca_icm_table_alloc(dev, lay->cqc_base,
					     dl->cqc_entry_sz, lim->num_cqs,
					     lim->reserved_cqs, false);
	if (dev->flags & MTHCA_FLAG_SRQ)
		dev->icm_srqc = mthca_icm_table_alloc(dev, lay->srqc_base,
						      dl->srq_entry_sz,
						      lim->num_srqs,
						      lim->reserved_srqs,
						      false);
	/* The multicast table is small and walked by chains: back it all. */
	dev->icm_mcg = mthca_icm_table_alloc(dev, lay->mc_base,
					     MTHCA_MGM_ENTRY_SIZE, mcgs, mcgs,
					     false);

	if (!dev->icm_mtt || !dev->icm_mpt || !dev->icm_qpc ||
	    !dev->icm_eqpc || !dev->icm_rdb || !dev->icm_cqc ||
	    ((dev->flags & MTHCA_FLAG_SRQ) && !dev->icm_srqc) ||
	    !dev->icm_mcg) {
		icm_tables_free(dev);
		return -ENOMEM;
	}
	return 0;
}

/* Firmware area and RUN_FW. */
static int fw_start(struct mthca_dev *dev)
{
	int ret;

	dev->fw_icm = mthca_icm_alloc(dev, dev->fw.fw_pages,
				      GFP_HIGHUSER | __GFP_NOWARN);
	if (!dev->fw_icm)
		return -ENOMEM;
	ret = mthca_MAP_FA(dev, dev->fw_icm);
	if (ret)
		goto free;
	ret = mthca_RUN_FW(dev);
	if (ret)
		goto unmap;
	return 0;

unmap:
	mthca_UNMAP_FA(dev);
free:
	mthca_icm_free(dev, dev->fw_icm);
	dev->fw_icm = NULL;
	return ret;
}

static void fw_stop(struct mthca_dev *dev)
{
	mthca_UNMAP_FA(dev);
	mthca_icm_free(dev, dev->fw_icm);
	dev->fw_icm = NULL;
}

static int icm_start(struct mthca_dev *dev, const struct mthca_dev_lim *dl,
		     const struct mthca_profile_result *prof)
{
	u64 aux_pages;
	int ret;

	ret = mthca_SET_ICM_SIZE(dev, prof->total, &aux_pages);
	if (ret)
		return ret;
	mthca_dbg(dev, "%llu KiB of ICM, %llu aux pages\n",
		  prof->total >> 10, aux_pages);

	dev->aux_icm = mthca_icm_alloc(dev, aux_pages,
				       GFP_HIGHUSER | __GFP_NOWARN);
	if (!dev->aux_icm)
		return -ENOMEM;
	ret = mthca_MAP_ICM_AUX(dev, dev->aux_icm);
	if (ret)
		goto free_aux;
	ret = mthca_eq_icm_map(dev, dev->layout.eqc_base);
	if (ret)
		goto unmap_aux;
	ret = icm_tables_alloc(dev, dl);
	if (ret)
		goto unmap_eq;
	return 0;

unmap_eq:
	mthca_eq_icm_unmap(dev);
unmap_aux:
	mthca_UNMAP_ICM_AUX(dev);
free_aux:
	mthca_icm_free(dev, dev->aux_icm);
	dev->aux_icm = NULL;
	return ret;
}

static void icm_stop(struct mthca_dev *dev)
{
	icm_tables_free(dev);
	mthca_eq_icm_unmap(dev);
	mthca_UNMAP_ICM_AUX(dev);
	mthca_icm_free(dev, dev->aux_icm);
	dev->aux_icm = NULL;
}

/* Steps 2 and 3: firmware up, ICM laid out, INIT_HCA done. */
static int hca_start(struct mthca_dev *dev)
{
	struct mthca_profile_result *prof;
	struct mthca_adapter_info *ad;
	struct mthca_dev_lim *dl;
	struct mthca_profile_req req;
	bool lam = false;
	int ret;

	dl = kzalloc(sizeof(*dl), GFP_KERNEL);
	prof = kzalloc(sizeof(*prof), GFP_KERNEL);
	ad = kzalloc(sizeof(*ad), GFP_KERNEL);
	if (!dl || !prof || !ad) {
		ret = -ENOMEM;
		goto out;
	}

	ret = mthca_QUERY_FW(dev);
	if (ret)
		goto out;
	ret = mthca_ENABLE_LAM(dev);
	if (ret == -EAGAIN) {
		mthca_dbg(dev, "no HCA-attached memory: mem-free mode\n");
	} else if (ret) {
		goto out;
	} else {
		lam = true;
		mthca_warn(dev, "HCA-attached memory present; using ICM anyway\n");
	}

	ret = fw_start(dev);
	if (ret)
		goto lam_off;
	ret = mthca_QUERY_DEV_LIM(dev, dl);
	if (ret)
		goto stop_fw;
	ret = limits_from_dev_lim(dev, dl);
	if (ret)
		goto stop_fw;

	req = mthca_req;
	req.num_uar = dl->uar_size / PAGE_SIZE;
	req.num_srq = (dev->flags & MTHCA_FLAG_SRQ) ? dl->max_srqs : 0;
	ret = mthca_profile_compute(&req, dl, prof);
	if (ret) {
		mthca_err(dev, "no usable profile: %d\n", ret);
		goto stop_fw;
	}
	limits_from_profile(dev, prof);

	ret = icm_start(dev, dl, prof);
	if (ret)
		goto stop_fw;
	ret = mthca_INIT_HCA(dev, &prof->hca);
	if (ret)
		goto stop_icm;
	ret = mthca_QUERY_ADAPTER(dev, ad);
	if (ret)
		goto close_hca;
	dev->eq_table.inta_pin = ad->inta_pin;
	memcpy(dev->board_id, ad->board_id, sizeof(ad->board_id));
	ret = 0;
	goto out;

close_hca:
	mthca_CLOSE_HCA(dev, false);
stop_icm:
	icm_stop(dev);
stop_fw:
	fw_stop(dev);
lam_off:
	if (lam)
		mthca_DISABLE_LAM(dev);
out:
	kfree(ad);
	kfree(prof);
	kfree(dl);
	return ret;
}

static void hca_stop(struct mthca_dev *dev)
{
	mthca_CLOSE_HCA(dev, false);
	icm_stop(dev);
	fw_stop(dev);
}

/*
 * A bring-up stage: @start sets something up, @stop undoes it.  A list of
 * stages starts in array order and stops in the reverse order.
 */
struct mthca_stage {
	int (*start)(struct mthca_dev *dev);
	void (*stop)(struct mthca_dev *dev);
};

static void stages_stop(struct mthca_dev *dev, const struct mthca_stage *st,
			int count)
{
	while (count-- > 0)
		st[count].stop(dev);
}

/* Starts every stage; on a failure, stops the ones already started. */
static int stages_start(struct mthca_dev *dev, const struct mthca_stage *st,
			int count)
{
	int done, err = 0;

	for (done = 0; done < count && !err; done++) {
		err = st[done].start(dev);
		if (err)
			stages_stop(dev, st, done);
	}
	return err;
}

static int driver_uar_get(struct mthca_dev *dev)
{
	return mthca_uar_alloc(dev, &dev->driver_uar);
}

static void driver_uar_put(struct mthca_dev *dev)
{
	mthca_uar_free(dev, &dev->driver_uar);
}

static int kar_map(struct mthca_dev *dev)
{
	phys_addr_t kar_phys = PFN_PHYS(mthca_uar_pfn(dev, &dev->driver_uar));

	dev->kar = ioremap(kar_phys, PAGE_SIZE);
	return dev->kar ? 0 : -ENOMEM;
}

static void kar_unmap(struct mthca_dev *dev)
{
	iounmap(dev->kar);
	dev->kar = NULL;
}

static int driver_pd_get(struct mthca_dev *dev)
{
	return mthca_pd_alloc(dev, true, &dev->driver_pd);
}

static void driver_pd_put(struct mthca_dev *dev)
{
	mthca_pd_free(dev, &dev->driver_pd);
}

/* Step 4 up to the event queues; the caller switches commands to events. */
static const struct mthca_stage driver_stages[] = {
	{ mthca_uar_table_init,	mthca_uar_table_cleanup },
	{ driver_uar_get,	driver_uar_put },
	{ kar_map,		kar_unmap },
	{ mthca_db_init,	mthca_db_cleanup },
	{ mthca_pd_table_init,	mthca_pd_table_cleanup },
	{ mthca_mr_table_init,	mthca_mr_table_cleanup },
	{ driver_pd_get,	driver_pd_put },
	{ mthca_eq_table_init,	mthca_eq_table_cleanup },
};

/* The data-path tables, in the order they depend on each other. */
static const struct mthca_stage dp_stages[] = {
	{ mthca_init_cq_table,	mthca_cleanup_cq_table },
	{ mthca_init_srq_table,	mthca_cleanup_srq_table },
	{ mthca_init_qp_table,	mthca_cleanup_qp_table },
	{ mthca_init_mcg_table,	mthca_cleanup_mcg_table },
};

static int driver_start(struct mthca_dev *dev)
{
	return stages_start(dev, driver_stages, ARRAY_SIZE(driver_stages));
}

static void driver_stop(struct mthca_dev *dev)
{
	stages_stop(dev, driver_stages, ARRAY_SIZE(driver_stages));
}

static int dp_tables_start(struct mthca_dev *dev)
{
	return stages_start(dev, dp_stages, ARRAY_SIZE(dp_stages));
}

static void dp_tables_stop(struct mthca_dev *dev)
{
	stages_stop(dev, dp_stages, ARRAY_SIZE(dp_stages));
}

static int msix_enable(struct mthca_dev *dev)
{
	int n = pci_alloc_irq_vectors(dev->pdev, MTHCA_NUM_EQ, MTHCA_NUM_EQ,
				      PCI_IRQ_MSIX);

	if (n < 0)
		return n;
	dev->flags |= MTHCA_FLAG_MSI_X;
	return 0;
}

/* Makes the device visible: the ib_device, then the error poller. */
static int mthca_publish(struct mthca_dev *dev)
{
	int err = mthca_register_device(dev);

	if (err)
		return err;
	err = mthca_catas_start(dev);
	if (err)
		mthca_unregister_device(dev);
	return err;
}

/* Everything between a reset device and a registered ib_device. */
static int mthca_bring_up(struct pci_dev *pdev, bool try_msix)
{
	struct ib_device *ibdev;
	struct mthca_dev *dev;
	int ret;

	ibdev = ib_alloc_device(sizeof(*dev));
	if (!ibdev)
		return -ENOMEM;
	dev = to_mdev(ibdev);
	dev->pdev = pdev;
	spin_lock_init(&dev->uar_lock);
	mthca_trap_fwd_init(&dev->traps, &dev->ib_dev);
	mutex_init(&dev->cap_mask_mutex);
	INIT_LIST_HEAD(&dev->catas_node);
	if (!pci_resource_len(pdev, 4))
		dev->flags |= MTHCA_FLAG_DDR_HIDDEN;

	dev->wq = alloc_ordered_workqueue("mthca_%s", 0, pci_name(pdev));
	if (!dev->wq) {
		ret = -ENOMEM;
		goto free_dev;
	}

	ret = mthca_reset(dev);
	if (ret)
		goto free_wq;
	ret = mthca_cmd_init(dev);
	if (ret)
		goto free_wq;
	ret = hca_start(dev);
	if (ret)
		goto cmd_cleanup;
	mthca_info(dev, "firmware %llu.%llu.%llu, %d port(s)\n",
		   dev->fw.version >> 32, (dev->fw.version >> 16) & 0xffff,
		   dev->fw.version & 0xffff, dev->limits.num_ports);

	if (try_msix && msix_enable(dev))
		mthca_info(dev, "MSI-X unavailable, using INTx\n");

	ret = driver_start(dev);
	if (ret)
		goto free_vectors;
	ret = mthca_cmd_use_events(dev);
	if (ret)
		goto stop_driver;
	/* A NOP shows that the command EQ's interrupt gets through. */
	ret = mthca_NOP(dev);
	if (ret) {
		mthca_warn(dev, "NOP got no interrupt (%s)\n",
			   (dev->flags & MTHCA_FLAG_MSI_X) ? "MSI-X" : "INTx");
		if (dev->flags & MTHCA_FLAG_MSI_X)
			ret = -EAGAIN;
		goto use_polling;
	}
	ret = dp_tables_start(dev);
	if (ret)
		goto use_polling;
	ret = mthca_publish(dev);
	if (!ret) {
		pci_set_drvdata(pdev, dev);
		return 0;
	}
	dp_tables_stop(dev);
use_polling:
	mthca_cmd_use_polling(dev);
stop_driver:
	driver_stop(dev);
free_vectors:
	if (dev->flags & MTHCA_FLAG_MSI_X)
		pci_free_irq_vectors(pdev);
	hca_stop(dev);
cmd_cleanup:
	mthca_cmd_cleanup(dev);
free_wq:
	destroy_workqueue(dev->wq);
free_dev:
	ib_dealloc_device(&dev->ib_dev);
	return ret;
}

static void mthca_tear_down(struct pci_dev *pdev)
{
	struct mthca_dev *dev = pci_get_drvdata(pdev);
	int p;

	if (!dev)
		return;
	mthca_catas_stop(dev);
	mthca_unregister_device(dev);
	/* Port events found in SMPs: none may run after this. */
	destroy_workqueue(dev->wq);
	for (p = 1; p <= dev->limits.num_ports; p++)
		mthca_CLOSE_IB(dev, p);
	dp_tables_stop(dev);
	mthca_cmd_use_polling(dev);
	driver_stop(dev);
	if (dev->flags & MTHCA_FLAG_MSI_X)
		pci_free_irq_vectors(pdev);
	hca_stop(dev);
	mthca_cmd_cleanup(dev);
	pci_set_drvdata(pdev, NULL);
	ib_dealloc_device(&dev->ib_dev);
}

static int mthca_bring_up_any(struct pci_dev *pdev)
{
	int ret = mthca_bring_up(pdev, mthca_msi_x);

	if (ret == -EAGAIN && mthca_msi_x) {
		dev_info(&pdev->dev, "trying again without MSI-X\n");
		ret = mthca_bring_up(pdev, false);
	}
	return ret;
}

/**
 * mthca_restart() - remove a device's driver state and probe it again
 * @pdev: the PCI function
 *
 * Called with mthca_device_mutex held, after a catastrophic error.
 */
void mthca_restart(struct pci_dev *pdev)
{
	int ret;

	mthca_tear_down(pdev);
	ret = mthca_bring_up_any(pdev);
	if (ret)
		dev_err(&pdev->dev, "restart failed: %d\n", ret);
}

static int mthca_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	ret = pci_enable_device(pdev);
	if (ret)
		return ret;
	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, 0) != MTHCA_BAR0_SIZE ||
	    !(pci_resource_flags(pdev, 2) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "unexpected BARs\n");
		ret = -ENODEV;
		goto disable;
	}
	ret = pci_request_regions(pdev, DRV_NAME);
	if (ret)
		goto disable;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
	if (ret)
		goto release;
	dma_set_max_seg_size(&pdev->dev, 1U << 30);

	mutex_lock(&mthca_device_mutex);
	ret = mthca_bring_up_any(pdev);
	mutex_unlock(&mthca_device_mutex);
	if (ret)
		goto release;
	return 0;

release:
	pci_release_regions(pdev);
disable:
	pci_disable_device(pdev);
	return ret;
}

static void mthca_remove(struct pci_dev *pdev)
{
	mutex_lock(&mthca_device_mutex);
	mthca_tear_down(pdev);
	mutex_unlock(&mthca_device_mutex);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
}

static const struct pci_device_id mthca_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_MELLANOX, PCI_DEVICE_ARBEL) },
	{ }
};
MODULE_DEVICE_TABLE(pci, mthca_pci_ids);

static struct pci_driver mthca_driver = {
	.name = DRV_NAME,
	.id_table = mthca_pci_ids,
	.probe = mthca_probe,
	.remove = mthca_remove,
};

static int __init mthca_init(void)
{
	int ret;

	ret = mthca_catas_module_init();
	if (ret)
		return ret;
	ret = pci_register_driver(&mthca_driver);
	if (ret)
		mthca_catas_module_exit();
	return ret;
}

static void __exit mthca_exit(void)
{
	pci_unregister_driver(&mthca_driver);
	mthca_catas_module_exit();
}

module_init(mthca_init);
module_exit(mthca_exit);
