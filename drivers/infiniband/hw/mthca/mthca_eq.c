// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Event queues of the mem-free MT25208.
 *
 * Three EQs: completions, asynchronous events, and command completions.
 * With MSI-X each has its own vector; with INTx one shared handler
 * polls all three, after clearing our cause bit.  The HCA writes 32-byte
 * EQEs whose owner bit (bit 7 of the last byte) it clears; the driver
 * hands an entry back by setting the bit, then tells the HCA how far it
 * got through the EQ's consumer index register and re-arms the EQ
 * through the arm register (both in BAR0, at offsets QUERY_FW reports).
 */

#include <linux/interrupt.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"

#define EQE_SIZE		32
#define EQE_OWNER_HW		0x80

/* Entries of the async and command EQs, and slack on each EQ. */
#define ASYNC_EQ_ENTRIES	128
#define CMD_EQ_ENTRIES		128
#define EQ_SLACK		128
/* The completion EQ needs at most one entry per armed CQ; cap it. */
#define COMP_EQ_MAX_ENTRIES	BIT(14)

/* EQ context (mailbox of SW2HW_EQ): byte offsets, then flag bits. */
enum {
	EQC_FLAGS = 0x00, EQC_START = 0x04, EQC_LOG_SIZE = 0x0c,
	EQC_INTR = 0x17, EQC_PD = 0x18, EQC_LKEY = 0x1c,
};

#define EQC_OWNER_HW		BIT(24)
#define EQC_FLAG_TR		BIT(18)
#define EQC_STATE_ARMED		BIT(8)
#define EQC_STATE_MEMFREE	(8 << 8)

/* Event types (byte 1 of an EQE). */
enum {
	/* Completion and QP/EE affiliated events. */
	EV_COMP = 0x00, EV_PATH_MIG = 0x01, EV_COMM_EST = 0x02,
	EV_SQ_DRAINED = 0x03, EV_CQ_ERROR = 0x04, EV_WQ_CATAS = 0x05,
	EV_EEC_CATAS = 0x06, EV_PATH_MIG_FAILED = 0x07,
	EV_WQ_INVAL_REQ = 0x10, EV_WQ_ACCESS = 0x11,
	/* SRQ events. */
	EV_SRQ_CATAS = 0x12, EV_SRQ_LAST_WQE = 0x13, EV_SRQ_LIMIT = 0x14,
	/* Device-wide events. */
	EV_LOCAL_CATAS = 0x08, EV_PORT_CHANGE = 0x09, EV_CMD = 0x0a,
	EV_ECC = 0x0e, EV_EQ_OVERFLOW = 0x0f,
};

/* PORT_CHANGE subtype of a port that went active. */
#define PORT_CHANGE_ACTIVE	4

#define ASYNC_EVENTS	(BIT_ULL(EV_PATH_MIG) | BIT_ULL(EV_COMM_EST) | \
			 BIT_ULL(EV_SQ_DRAINED) | BIT_ULL(EV_CQ_ERROR) | \
			 BIT_ULL(EV_WQ_CATAS) | BIT_ULL(EV_EEC_CATAS) | \
			 BIT_ULL(EV_PATH_MIG_FAILED) | \
			 BIT_ULL(EV_WQ_INVAL_REQ) | BIT_ULL(EV_WQ_ACCESS) | \
			 BIT_ULL(EV_LOCAL_CATAS) | BIT_ULL(EV_PORT_CHANGE) | \
			 BIT_ULL(EV_ECC))
#define SRQ_EVENTS	(BIT_ULL(EV_SRQ_CATAS) | BIT_ULL(EV_SRQ_LAST_WQE) | \
			 BIT_ULL(EV_SRQ_LIMIT))
#define CMD_EVENTS	BIT_ULL(EV_CMD)

static u64 async_events(struct mthca_dev *dev)
{
	return ASYNC_EVENTS | ((dev->flags & MTHCA_FLAG_SRQ) ? SRQ_EVENTS : 0);
}

static u8 *eqe_at(struct mthca_eq *eq, u32 n)
{
	u32 off = (n & (eq->nent - 1)) * EQE_SIZE;

	return (u8 *)eq->page[off >> PAGE_SHIFT] + (off & (PAGE_SIZE - 1));
}

/* The next entry, if software owns it. */
static u8 *eqe_next(struct mthca_eq *eq)
{
	u8 *e = eqe_at(eq, eq->cons_index);

	return (READ_ONCE(e[31]) & EQE_OWNER_HW) ? NULL : e;
}

static u32 eqe_num(const u8 *e, unsigned int off)
{
	return get_unaligned_be32(e + off) & 0xffffff;
}

static void eq_update_ci(struct mthca_dev *dev, struct mthca_eq *eq)
{
	/* Owner bits handed back before the HCA may reuse the entries. */
	wmb();
	__raw_writel((__force u32)cpu_to_be32(eq->cons_index),
		     dev->eq_table.set_ci_base + eq->eqn * 8);
	mb(); /* keep the CI write ahead of a later re-arm */
}

static void eq_arm(struct mthca_dev *dev, u32 mask)
{
	__raw_writel((__force u32)cpu_to_be32(mask), dev->eq_table.arm_reg);
}

static void port_state_event(struct mthca_dev *dev, u8 port, bool up)
{
	struct ib_event ev = {
		.device = &dev->ib_dev,
		.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
		.element.port_num = port,
	};

	mthca_dbg(dev, "port %u %s\n", port, up ? "active" : "down");
	ib_dispatch_event(&ev);
}

static void eqe_dispatch(struct mthca_dev *dev, struct mthca_eq *eq, u8 *e)
{
	u8 type = e[1], subtype = e[3];

	switch (type) {
	case EV_COMP:
		mthca_cq_completion(dev, eqe_num(e, 4));
		break;
	case EV_PATH_MIG:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_PATH_MIG);
		break;
	case EV_COMM_EST:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_COMM_EST);
		break;
	case EV_SQ_DRAINED:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_SQ_DRAINED);
		break;
	case EV_SRQ_LAST_WQE:
		mthca_qp_event(dev, eqe_num(e, 4),
			       IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case EV_WQ_CATAS:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_QP_FATAL);
		break;
	case EV_PATH_MIG_FAILED:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_PATH_MIG_ERR);
		break;
	case EV_WQ_INVAL_REQ:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_QP_REQ_ERR);
		break;
	case EV_WQ_ACCESS:
		mthca_qp_event(dev, eqe_num(e, 4), IB_EVENT_QP_ACCESS_ERR);
		break;
	case EV_SRQ_LIMIT:
		mthca_srq_event(dev, eqe_num(e, 4),
				IB_EVENT_SRQ_LIMIT_REACHED);
		break;
	case EV_SRQ_CATAS:
		mthca_srq_event(dev, eqe_num(e, 4), IB_EVENT_SRQ_ERR);
		break;
	case EV_CQ_ERROR:
		mthca_warn(dev, "CQ %06x: %s\n", eqe_num(e, 4),
			   e[0x0f] == 1 ? "overrun" : "access violation");
		mthca_cq_event(dev, eqe_num(e, 4), IB_EVENT_CQ_ERR);
		break;
	case EV_CMD:
		mthca_cmd_event(dev, get_unaligned_be16(e + 6), e[0x0f],
				get_unaligned_be64(e + 0x10));
		break;
	case EV_PORT_CHANGE:
		port_state_event(dev, (get_unaligned_be32(e + 0x0c) >> 28) & 3,
				 subtype == PORT_CHANGE_ACTIVE);
		break;
	case EV_EQ_OVERFLOW:
		mthca_warn(dev, "EQ %u overflowed\n", eq->eqn);
		break;
	default:
		mthca_warn(dev, "EQ %u: unexpected event %02x/%02x\n",
			   eq->eqn, type, subtype);
		break;
	}
}

/*
 * Consumes the EQ's software-owned entries.  Only the EQ's interrupt
 * handler calls this.  Returns whether there were any.
 */
static bool eq_poll(struct mthca_dev *dev, struct mthca_eq *eq)
{
	unsigned int since_ci = 0;
	bool any = false;
	u8 *e;

	while ((e = eqe_next(eq))) {
		rmb(); /* read the entry only after seeing it is ours */
		eqe_dispatch(dev, eq, e);
		e[31] = EQE_OWNER_HW;
		eq->cons_index++;
		any = true;
		/*
		 * The HCA sees an overflow if it gets EQ_SLACK entries ahead
		 * of the CI it knows; report progress before that.
		 */
		if (++since_ci >= EQ_SLACK / 2) {
			eq_update_ci(dev, eq);
			since_ci = 0;
		}
	}
	return any;
}

static irqreturn_t eq_msix_irq(int irq, void *arg)
{
	struct mthca_eq *eq = arg;
	struct mthca_dev *dev = eq->dev;

	eq_poll(dev, eq);
	eq_update_ci(dev, eq);
	eq_arm(dev, BIT(eq->eqn));
	return IRQ_HANDLED;
}

static irqreturn_t eq_intx_irq(int irq, void *arg)
{
	struct mthca_dev *dev = arg;
	bool any = false;
	int i;

	__raw_writel((__force u32)cpu_to_be32(dev->eq_table.clr_mask),
		     dev->eq_table.clr_int);
	for (i = 0; i < MTHCA_NUM_EQ; i++) {
		struct mthca_eq *eq = &dev->eq_table.eq[i];

		if (eq_poll(dev, eq)) {
			any = true;
			eq_update_ci(dev, eq);
		}
	}
	eq_arm(dev, dev->eq_table.arm_mask);
	return IRQ_RETVAL(any);
}

static void eq_pages_free(struct mthca_dev *dev, struct mthca_eq *eq)
{
	int i;

	for (i = 0; i < eq->npages; i++)
		if (eq->page[i])
			dma_free_coherent(&dev->pdev->dev, PAGE_SIZE,
					  eq->page[i], eq->page_dma[i]);
	kfree(eq->page);
	kfree(eq->page_dma);
	eq->page = NULL;
	eq->page_dma = NULL;
}

static int eq_create(struct mthca_dev *dev, u32 nent, u8 intr,
		     struct mthca_eq *eq)
{
	struct mthca_mailbox *mb;
	u64 *pages;
	u32 n;
	int i, ret;

	eq->dev = dev;
	eq->nent = roundup_pow_of_two(max(nent, 2U));
	eq->npages = DIV_ROUND_UP(eq->nent * EQE_SIZE, PAGE_SIZE);
	eq->cons_index = 0;

	eq->page = kcalloc(eq->npages, sizeof(*eq->page), GFP_KERNEL);
	eq->page_dma = kcalloc(eq->npages, sizeof(*eq->page_dma), GFP_KERNEL);
	pages = kcalloc(eq->npages, sizeof(*pages), GFP_KERNEL);
	if (!eq->page || !eq->page_dma || !pages) {
		ret = -ENOMEM;
		goto free_pages;
	}
	for (i = 0; i < eq->npages; i++) {
		eq->page[i] = dma_alloc_coherent(&dev->pdev->dev, PAGE_SIZE,
						 &eq->page_dma[i], GFP_KERNEL);
		if (!eq->page[i]) {
			ret = -ENOMEM;
			goto free_pages;
		}
		pages[i] = eq->page_dma[i];
	}
	/* Every entry starts out owned by the HCA. */
	for (n = 0; n < eq->nent; n++)
		eqe_at(eq, n)[31] = EQE_OWNER_HW;

	n = mthca_bitmap_get(&dev->eq_table.eqn_bitmap);
	if (n == MTHCA_BITMAP_NONE) {
		ret = -ENOMEM;
		goto free_pages;
	}
	eq->eqn = n;

	ret = mthca_mr_alloc_phys(dev, dev->driver_pd.pdn, pages, PAGE_SHIFT,
				  eq->npages, 0, (u64)eq->npages * PAGE_SIZE,
				  MTHCA_MPT_LOCAL_READ | MTHCA_MPT_LOCAL_WRITE,
				  &eq->mr);
	if (ret)
		goto free_eqn;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb)) {
		ret = PTR_ERR(mb);
		goto free_mr;
	}
	put_unaligned_be32(EQC_OWNER_HW | EQC_FLAG_TR | EQC_STATE_ARMED |
			   EQC_STATE_MEMFREE, (u8 *)mb->buf + EQC_FLAGS);
	put_unaligned_be64(0, (u8 *)mb->buf + EQC_START);
	put_unaligned_be32(ilog2(eq->nent) << 24,
			   (u8 *)mb->buf + EQC_LOG_SIZE);
	((u8 *)mb->buf)[EQC_INTR] = intr;
	put_unaligned_be32(dev->driver_pd.pdn, (u8 *)mb->buf + EQC_PD);
	put_unaligned_be32(eq->mr.ibmr.lkey, (u8 *)mb->buf + EQC_LKEY);
	ret = mthca_SW2HW_EQ(dev, mb, eq->eqn);
	mthca_mailbox_free(dev, mb);
	if (ret)
		goto free_mr;

	dev->eq_table.arm_mask |= BIT(eq->eqn);
	kfree(pages);
	mthca_dbg(dev, "EQ %u: %u entries, interrupt %u\n", eq->eqn,
		  eq->nent, intr);
	return 0;

free_mr:
	mthca_mr_free(dev, &eq->mr);
free_eqn:
	mthca_bitmap_put(&dev->eq_table.eqn_bitmap, eq->eqn);
free_pages:
	kfree(pages);
	eq_pages_free(dev, eq);
	return ret;
}

static void eq_destroy(struct mthca_dev *dev, struct mthca_eq *eq)
{
	struct mthca_mailbox *mb;
	int ret;

	if (!eq->page)
		return;
	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (!IS_ERR(mb)) {
		ret = mthca_HW2SW_EQ(dev, mb, eq->eqn);
		if (ret)
			mthca_teardown_warn(dev, "HW2SW_EQ %u: %d\n",
					    eq->eqn, ret);
		mthca_mailbox_free(dev, mb);
	}
	dev->eq_table.arm_mask &= ~BIT(eq->eqn);
	mthca_mr_free(dev, &eq->mr);
	mthca_bitmap_put(&dev->eq_table.eqn_bitmap, eq->eqn);
	eq_pages_free(dev, eq);
}

/* BAR0 offsets from QUERY_FW are absolute; keep them inside BAR0. */
static void __iomem *map_bar0_reg(struct mthca_dev *dev, u64 off, size_t len)
{
	u64 bar_len = pci_resource_len(dev->pdev, 0);

	off &= bar_len - 1;
	if (off + len > bar_len)
		return NULL;
	return ioremap(pci_resource_start(dev->pdev, 0) + off, len);
}

static void eq_regs_unmap(struct mthca_dev *dev)
{
	struct mthca_eq_table *t = &dev->eq_table;

	if (t->clr_base)
		iounmap(t->clr_base);
	if (t->arm_reg)
		iounmap(t->arm_reg);
	if (t->set_ci_base)
		iounmap(t->set_ci_base);
	t->clr_base = NULL;
	t->arm_reg = NULL;
	t->set_ci_base = NULL;
}

static int eq_regs_map(struct mthca_dev *dev)
{
	struct mthca_eq_table *t = &dev->eq_table;

	t->clr_base = map_bar0_reg(dev, dev->fw.clr_int_base, 8);
	/* 64-bit register; EQs 0..31 are its second dword. */
	t->arm_reg = map_bar0_reg(dev, dev->fw.eq_arm_base + 4, 4);
	t->set_ci_base = map_bar0_reg(dev, dev->fw.eq_set_ci_base,
				      dev->limits.num_eqs * 8);
	if (!t->clr_base || !t->arm_reg || !t->set_ci_base) {
		eq_regs_unmap(dev);
		return -ENOMEM;
	}
	return 0;
}

static void eq_irqs_free(struct mthca_dev *dev)
{
	int i;

	if (dev->eq_table.have_irq) {
		free_irq(dev->pdev->irq, dev);
		dev->eq_table.have_irq = false;
	}
	for (i = 0; i < MTHCA_NUM_EQ; i++) {
		struct mthca_eq *eq = &dev->eq_table.eq[i];

		if (eq->have_irq) {
			free_irq(eq->vector, eq);
			eq->have_irq = false;
		}
	}
}

static int eq_irqs_request(struct mthca_dev *dev)
{
	static const char * const what[MTHCA_NUM_EQ] = {
		[MTHCA_EQ_COMP] = "comp",
		[MTHCA_EQ_ASYNC] = "async",
		[MTHCA_EQ_CMD] = "cmd",
	};
	int i, ret;

	if (!(dev->flags & MTHCA_FLAG_MSI_X)) {
		snprintf(dev->eq_table.eq[0].irq_name,
			 sizeof(dev->eq_table.eq[0].irq_name),
			 DRV_NAME "@pci:%s", pci_name(dev->pdev));
		ret = request_irq(dev->pdev->irq, eq_intx_irq, IRQF_SHARED,
				  dev->eq_table.eq[0].irq_name, dev);
		if (ret)
			return ret;
		dev->eq_table.have_irq = true;
		return 0;
	}

	for (i = 0; i < MTHCA_NUM_EQ; i++) {
		struct mthca_eq *eq = &dev->eq_table.eq[i];

		snprintf(eq->irq_name, sizeof(eq->irq_name),
			 DRV_NAME "-%s@pci:%s", what[i], pci_name(dev->pdev));
		eq->vector = pci_irq_vector(dev->pdev, i);
		ret = request_irq(eq->vector, eq_msix_irq, 0, eq->irq_name,
				  eq);
		if (ret) {
			eq_irqs_free(dev);
			return ret;
		}
		eq->have_irq = true;
	}
	return 0;
}

/**
 * mthca_eq_icm_map() - back the EQ context table (one page) in ICM
 * @dev: the device
 * @virt: ICM address of the table
 *
 * Return: 0 or a negative errno.
 */
int mthca_eq_icm_map(struct mthca_dev *dev, u64 virt)
{
	struct mthca_eq_table *t = &dev->eq_table;
	int ret;

	t->icm_virt = virt;
	t->icm_page = alloc_page(GFP_HIGHUSER | __GFP_ZERO);
	if (!t->icm_page)
		return -ENOMEM;
	t->icm_dma = dma_map_page(&dev->pdev->dev, t->icm_page, 0, PAGE_SIZE,
				  DMA_BIDIRECTIONAL);
	if (dma_mapping_error(&dev->pdev->dev, t->icm_dma)) {
		ret = -ENOMEM;
		goto free_page;
	}
	ret = mthca_MAP_ICM_page(dev, t->icm_dma, virt);
	if (ret)
		goto unmap;
	return 0;

unmap:
	dma_unmap_page(&dev->pdev->dev, t->icm_dma, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
free_page:
	__free_page(t->icm_page);
	t->icm_page = NULL;
	return ret;
}

/**
 * mthca_eq_icm_unmap() - undo mthca_eq_icm_map()
 * @dev: the device
 */
void mthca_eq_icm_unmap(struct mthca_dev *dev)
{
	struct mthca_eq_table *t = &dev->eq_table;

	if (!t->icm_page)
		return;
	mthca_UNMAP_ICM(dev, t->icm_virt, 1);
	dma_unmap_page(&dev->pdev->dev, t->icm_dma, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
	__free_page(t->icm_page);
	t->icm_page = NULL;
}

/**
 * mthca_eq_table_init() - create, hook up and arm the three EQs
 * @dev: the device, with the driver PD and MR tables set up; MSI-X
 *	vectors allocated if MTHCA_FLAG_MSI_X is set
 *
 * Return: 0 or a negative errno.
 */
int mthca_eq_table_init(struct mthca_dev *dev)
{
	struct mthca_eq_table *t = &dev->eq_table;
	bool msix = dev->flags & MTHCA_FLAG_MSI_X;
	u32 comp_entries;
	int i, ret;

	ret = mthca_bitmap_init(&t->eqn_bitmap, dev->limits.num_eqs,
				dev->limits.num_eqs - 1,
				dev->limits.reserved_eqs, 0);
	if (ret)
		return ret;
	ret = eq_regs_map(dev);
	if (ret)
		goto free_bitmap;

	t->arm_mask = 0;
	if (msix) {
		t->clr_mask = 0;
		t->clr_int = NULL;
	} else {
		/* 64-bit register; bits 0..31 are in its second dword. */
		t->clr_mask = BIT(t->inta_pin & 31);
		t->clr_int = t->clr_base + (t->inta_pin < 32 ? 4 : 0);
	}

	comp_entries = min_t(u32, dev->limits.num_cqs, COMP_EQ_MAX_ENTRIES);
	ret = eq_create(dev, comp_entries + EQ_SLACK,
			msix ? 128 + MTHCA_EQ_COMP : t->inta_pin,
			&t->eq[MTHCA_EQ_COMP]);
	if (ret)
		goto unmap_regs;
	ret = eq_create(dev, ASYNC_EQ_ENTRIES + EQ_SLACK,
			msix ? 128 + MTHCA_EQ_ASYNC : t->inta_pin,
			&t->eq[MTHCA_EQ_ASYNC]);
	if (ret)
		goto destroy_comp;
	ret = eq_create(dev, CMD_EQ_ENTRIES + EQ_SLACK,
			msix ? 128 + MTHCA_EQ_CMD : t->inta_pin,
			&t->eq[MTHCA_EQ_CMD]);
	if (ret)
		goto destroy_async;

	ret = eq_irqs_request(dev);
	if (ret)
		goto destroy_cmd;

	ret = mthca_MAP_EQ(dev, async_events(dev), false,
			   t->eq[MTHCA_EQ_ASYNC].eqn);
	if (ret)
		goto free_irqs;
	ret = mthca_MAP_EQ(dev, CMD_EVENTS, false, t->eq[MTHCA_EQ_CMD].eqn);
	if (ret)
		goto unmap_async;

	for (i = 0; i < MTHCA_NUM_EQ; i++)
		eq_arm(dev, BIT(t->eq[i].eqn));
	return 0;

unmap_async:
	mthca_MAP_EQ(dev, async_events(dev), true, t->eq[MTHCA_EQ_ASYNC].eqn);
free_irqs:
	eq_irqs_free(dev);
destroy_cmd:
	eq_destroy(dev, &t->eq[MTHCA_EQ_CMD]);
destroy_async:
	eq_destroy(dev, &t->eq[MTHCA_EQ_ASYNC]);
destroy_comp:
	eq_destroy(dev, &t->eq[MTHCA_EQ_COMP]);
unmap_regs:
	eq_regs_unmap(dev);
free_bitmap:
	mthca_bitmap_cleanup(&t->eqn_bitmap);
	return ret;
}

/**
 * mthca_eq_table_cleanup() - undo mthca_eq_table_init()
 * @dev: the device, back in polled command mode
 */
void mthca_eq_table_cleanup(struct mthca_dev *dev)
{
	struct mthca_eq_table *t = &dev->eq_table;
	int i;

	mthca_MAP_EQ(dev, async_events(dev), true, t->eq[MTHCA_EQ_ASYNC].eqn);
	mthca_MAP_EQ(dev, CMD_EVENTS, true, t->eq[MTHCA_EQ_CMD].eqn);
	eq_irqs_free(dev);
	for (i = MTHCA_NUM_EQ - 1; i >= 0; i--)
		eq_destroy(dev, &t->eq[i]);
	eq_regs_unmap(dev);
	mthca_bitmap_cleanup(&t->eqn_bitmap);
}
