/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_mthca: driver for the Mellanox InfiniHost III Ex (MT25208) in mem-free
 * ("Arbel native") mode.  This header holds the device structure and the
 * services the control half (probe, firmware, ICM, EQs, MRs) offers to the
 * data-path half (mthca_dp.h: CQs, QPs, SRQs, AHs, multicast).
 *
 * Include order: every .c file includes this header.  mthca_dp.h is
 * included from here, after the shared types it may use (bitmaps, MTTs,
 * MRs, PDs, ICM tables) and before struct mthca_dev, which embeds the
 * data-path tables.  mthca_dp.h therefore must not include this file.
 */
#ifndef MTHCA_DEV_H
#define MTHCA_DEV_H

#include <linux/types.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-hi-lo.h>
#include <asm/unaligned.h>
#include <rdma/ib_verbs.h>

#include "mthca_cmd.h"
#include "mthca_trap.h"

#define DRV_NAME	"ib_mthca"

/* Ports of the MT25208. */
#define MTHCA_MAX_PORTS		2

/* The unit of ICM mapping and of the firmware area. */
#define MTHCA_ICM_PAGE_SHIFT	12
#define MTHCA_ICM_PAGE_SIZE	BIT(MTHCA_ICM_PAGE_SHIFT)

/* Length of the board id QUERY_ADAPTER returns (PSID). */
#define MTHCA_BOARD_ID_LEN	64

/* MTT entries per MTT segment (the buddy allocator's unit). */
#define MTHCA_MTTS_PER_SEG	8
#define MTHCA_MTT_SEG_SIZE	(MTHCA_MTTS_PER_SEG * 8)

enum mthca_dev_flag {
	MTHCA_FLAG_MSI_X = BIT(0),	MTHCA_FLAG_SRQ = BIT(1),
	MTHCA_FLAG_DDR_HIDDEN = BIT(2),	MTHCA_FLAG_FMR = BIT(3),
};

/* Doorbell record kinds (the "type" field of a mem-free doorbell record). */
enum mthca_db_kind {
	MTHCA_DB_CQ_SET_CI = 1,	MTHCA_DB_CQ_ARM = 2,
	MTHCA_DB_SQ = 3,	MTHCA_DB_RQ = 4,	MTHCA_DB_SRQ = 5,
};

/* Offsets of the doorbell registers inside a UAR page. */
enum {
	MTHCA_UAR_SEND_DB	= 0x10,
	MTHCA_UAR_RECV_DB	= 0x18,
	MTHCA_UAR_CQ_DB		= 0x20,
};

struct mthca_dev;
struct mthca_mailbox;
struct ib_mad_agent;

/* ------------------------------------------------------------------ */
/* Bitmap allocator and pointer array (mthca_allocator.c)              */
/* ------------------------------------------------------------------ */

/**
 * struct mthca_bitmap - numbers handed out from a fixed range
 * @lock: spinlock, may be taken with interrupts off; guards every field
 *	below after init
 * @hint: where the next search starts
 * @gen: high bits added to returned numbers, bumped on each wrap of the
 *	search so a freed number is not handed out again at once
 * @count: size of the range (a power of two)
 * @gen_mask: the bits of a number that belong to @gen (~(@count - 1)
 *	within the caller's mask)
 * @reserved_top: numbers at the top of the range never handed out
 * @bits: one bit per number, set when in use
 */
struct mthca_bitmap {
	spinlock_t	lock;	/* see the kernel-doc above */
	u32		hint;
	u32		gen;
	u32		count;
	u32		gen_mask;
	u32		reserved_top;
	unsigned long	*bits;
};

#define MTHCA_BITMAP_NONE	((u32)-1)

int mthca_bitmap_init(struct mthca_bitmap *bm, u32 count, u32 mask,
		      u32 reserved_low, u32 reserved_top);
void mthca_bitmap_cleanup(struct mthca_bitmap *bm);
u32 mthca_bitmap_get(struct mthca_bitmap *bm);
u32 mthca_bitmap_get_range(struct mthca_bitmap *bm, u32 cnt, u32 align);
void mthca_bitmap_put(struct mthca_bitmap *bm, u32 num);
void mthca_bitmap_put_range(struct mthca_bitmap *bm, u32 num, u32 cnt);

/**
 * struct mthca_ptr_array - sparse table of pointers indexed by number
 * @pages: second-level pages of pointers, allocated on first use
 * @used: pointers set in each page, to free a page when it empties
 * @npages: entries of @pages
 *
 * No lock of its own: the caller's lock guards set/clear; a lookup needs
 * the same lock or must otherwise exclude a concurrent clear.
 */
struct mthca_ptr_array {
	void		***pages;
	unsigned int	*used;
	unsigned int	npages;
};

int mthca_ptr_array_init(struct mthca_ptr_array *pa, u32 nent);
void mthca_ptr_array_cleanup(struct mthca_ptr_array *pa);
void *mthca_ptr_array_get(struct mthca_ptr_array *pa, u32 idx);
int mthca_ptr_array_set(struct mthca_ptr_array *pa, u32 idx, void *ptr);
void mthca_ptr_array_clear(struct mthca_ptr_array *pa, u32 idx);

/* ------------------------------------------------------------------ */
/* ICM (mthca_icm.c)                                                   */
/* ------------------------------------------------------------------ */

/* ICM tables are backed chunk by chunk, each chunk this big. */
#define MTHCA_ICM_CHUNK_SHIFT	18
#define MTHCA_ICM_CHUNK_SIZE	BIT(MTHCA_ICM_CHUNK_SHIFT)

struct mthca_icm;

/**
 * struct mthca_icm_table - an object table in ICM, backed on demand
 * @virt: ICM address of object 0
 * @nobj: objects in the table
 * @obj_size: bytes per object
 * @nchunks: entries of @chunk
 * @lowmem: back with low memory (addressable by the CPU), for tables the
 *	driver reads or writes directly (MTT, MPT)
 * @mutex: serialises get/put; sleeps (MAP_ICM/UNMAP_ICM run under it)
 * @chunk: backing of each MTHCA_ICM_CHUNK_SIZE piece, with a use count
 */
struct mthca_icm_table {
	u64			virt;
	u32			nobj;
	u32			obj_size;
	u32			nchunks;
	bool			lowmem;
	struct mutex		mutex;	/* see the kernel-doc above */
	struct mthca_icm	*chunk[];
};

struct mthca_icm_table *mthca_icm_table_alloc(struct mthca_dev *dev,
					      u64 virt, u32 obj_size,
					      u32 nobj, u32 reserved,
					      bool lowmem);
void mthca_icm_table_free(struct mthca_dev *dev,
			  struct mthca_icm_table *table);
int mthca_icm_table_get(struct mthca_dev *dev, struct mthca_icm_table *table,
			u32 obj);
void mthca_icm_table_put(struct mthca_dev *dev, struct mthca_icm_table *table,
			 u32 obj);
int mthca_icm_table_get_range(struct mthca_dev *dev,
			      struct mthca_icm_table *table,
			      u32 start, u32 end);
void mthca_icm_table_put_range(struct mthca_dev *dev,
			       struct mthca_icm_table *table,
			       u32 start, u32 end);
void *mthca_icm_table_find(struct mthca_icm_table *table, u32 obj,
			   dma_addr_t *dma);

/*
 * Doorbell records (mem-free).  The kernel's records live in ICM pages of
 * the driver's UAR context (UARC).  Records for CQ arm and SQ are handed
 * out from the start of the group, the others (CQ set_ci, RQ, SRQ) from
 * the end, as the firmware expects of group separation.
 */
int mthca_db_alloc(struct mthca_dev *dev, enum mthca_db_kind kind, u32 qn,
		   __be32 **db);
void mthca_db_free(struct mthca_dev *dev, enum mthca_db_kind kind, int index);

/* ------------------------------------------------------------------ */
/* UARs (mthca_uar.c)                                                  */
/* ------------------------------------------------------------------ */

/**
 * struct mthca_uar - a user access region: page @num of BAR2, whose
 *	doorbells (and, mem-free, whose UARC slot) belong to one owner
 * @num: the UAR number; mthca_uar_pfn() gives the page
 */
struct mthca_uar {
	u32	num;
};

struct mthca_user_db_table;

/**
 * struct mthca_ucontext - what a process opened through ib_uverbs
 * @pdns: numbers of the process's PDs, each mapped to its PD; a user CQ
 *	names its PD by number and must name one of these (the xarray's
 *	own lock)
 * @db_tab: the process's doorbell-record pages (libmthca's memory), each
 *	mapped into the UARC of @uar while a CQ, QP or SRQ uses it
 * @uar: its doorbell page, which mmap() at offset 0 maps
 * @vma_lock: spinlock; guards @vmas.  Taken inside mmap_lock (the vm_ops
 *	open and close run under it), never the other way round.
 * @vmas: struct mthca_uar_vma, one per live mapping of @uar, so that
 *	mthca_disassociate_ucontext() can take them all away
 * @ibucontext: the core's part (container_of)
 */
struct mthca_ucontext {
	struct xarray			pdns;
	struct mthca_user_db_table	*db_tab;
	struct mthca_uar		uar;
	/* guards vmas; inside mmap_lock */
	spinlock_t			vma_lock;
	struct list_head		vmas;
	struct ib_ucontext		ibucontext;
};

/**
 * struct mthca_uar_vma - one mapping of a user context's UAR
 * @list: on mthca_ucontext.vmas
 * @vma: the mapping (its vm_private_data points back here)
 * @uctx: the context whose UAR it maps
 */
struct mthca_uar_vma {
	struct list_head		list;
	struct vm_area_struct		*vma;
	struct mthca_ucontext		*uctx;
};

static inline struct mthca_ucontext *to_mucontext(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct mthca_ucontext, ibucontext);
}

struct mthca_user_db_table *mthca_user_db_tab_alloc(struct mthca_dev *dev);
void mthca_user_db_tab_free(struct mthca_dev *dev, struct mthca_uar *uar,
			    struct mthca_user_db_table *tab);
int mthca_map_user_db(struct mthca_dev *dev, struct mthca_uar *uar,
		      struct mthca_user_db_table *tab, u32 index, u64 uaddr,
		      __be32 **rec);
void mthca_unmap_user_db(struct mthca_dev *dev, struct mthca_uar *uar,
			 struct mthca_user_db_table *tab, u32 index);
int mthca_uar_alloc(struct mthca_dev *dev, struct mthca_uar *uar);
void mthca_uar_free(struct mthca_dev *dev, struct mthca_uar *uar);
unsigned long mthca_uar_pfn(struct mthca_dev *dev,
			    const struct mthca_uar *uar);

/* ------------------------------------------------------------------ */
/* Memory regions (mthca_mr.c)                                         */
/* ------------------------------------------------------------------ */

/**
 * struct mthca_buddy - buddy allocator of MTT segments
 * @lock: spinlock, not taken from interrupt context; guards @bits and
 *	@nfree
 * @max_order: the largest block is 2^@max_order segments
 * @bits: per order, one bit per block of that order, set when free
 * @nfree: per order, free blocks
 */
struct mthca_buddy {
	spinlock_t	lock;	/* see the kernel-doc above */
	int		max_order;
	unsigned long	**bits;
	unsigned int	*nfree;
};

int mthca_buddy_init(struct mthca_buddy *buddy, int max_order);
void mthca_buddy_cleanup(struct mthca_buddy *buddy);
u32 mthca_buddy_alloc(struct mthca_buddy *buddy, int order);
void mthca_buddy_free(struct mthca_buddy *buddy, u32 seg, int order);

/**
 * struct mthca_mtt - a run of MTT segments
 * @order: log2 of the segments
 * @first_seg: first segment
 */
struct mthca_mtt {
	int	order;
	u32	first_seg;
};

/**
 * struct mthca_mr - a memory region
 * @ibmr: the core's view; lkey == rkey == the MPT key
 * @mtt: the translation entries, NULL for a region without translation
 * @umem: the pinned user pages of a user region (reg_user_mr), else NULL
 */
struct mthca_mr {
	struct ib_mr		ibmr;
	struct mthca_mtt	*mtt;
	struct ib_umem		*umem;
};

/**
 * struct mthca_pd - a protection domain
 * @ibpd: the core's view
 * @pdn: PD number
 * @privileged: a kernel PD (its MRs may use physical addresses)
 * @ntmr: a local read/write MR without translation over all of memory,
 *	made for kernel PDs
 */
struct mthca_pd {
	struct ib_pd		ibpd;
	u32			pdn;
	bool			privileged;
	struct mthca_mr		ntmr;
};

static inline struct mthca_pd *to_mpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct mthca_pd, ibpd);
}

static inline struct mthca_mr *to_mmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct mthca_mr, ibmr);
}

/* MPT access flags (bits of the MPT flags word). */
enum {
	MTHCA_MPT_ATOMIC	= 1 << 14,
	MTHCA_MPT_REMOTE_WRITE	= 1 << 13,
	MTHCA_MPT_REMOTE_READ	= 1 << 12,
	MTHCA_MPT_LOCAL_WRITE	= 1 << 11,
	MTHCA_MPT_LOCAL_READ	= 1 << 10,
};

struct mthca_mtt *mthca_mtt_alloc(struct mthca_dev *dev, int nentries);
void mthca_mtt_free(struct mthca_dev *dev, struct mthca_mtt *mtt);
int mthca_mtt_write(struct mthca_dev *dev, struct mthca_mtt *mtt,
		    int start_index, const u64 *addrs, int n);
int mthca_mr_alloc(struct mthca_dev *dev, u32 pdn, int page_shift, u64 iova,
		   u64 length, u32 access, struct mthca_mr *mr);
int mthca_mr_alloc_notrans(struct mthca_dev *dev, u32 pdn, u32 access,
			   struct mthca_mr *mr);
int mthca_mr_alloc_phys(struct mthca_dev *dev, u32 pdn, const u64 *pages,
			int page_shift, int npages, u64 iova, u64 length,
			u32 access, struct mthca_mr *mr);
void mthca_mr_free(struct mthca_dev *dev, struct mthca_mr *mr);
u32 mthca_access_to_mpt(int ib_access);

int mthca_pd_alloc(struct mthca_dev *dev, bool privileged,
		   struct mthca_pd *pd);
void mthca_pd_free(struct mthca_dev *dev, struct mthca_pd *pd);

/* The data-path half: tables, CQ/QP/SRQ/AH structures, struct mthca_dp_buf. */
#include "mthca_dp.h"

/*
 * Queue buffers: mthca_dp_buf_alloc() gets @size bytes of zeroed,
 * physically contiguous coherent memory and registers it as an MR of PD
 * @pdn at IOVA 0 (the HCA reaches queues through their MR at offset 0),
 * HCA-writable when @hca_write.  It fills in every field of @buf.
 */
int mthca_dp_buf_alloc(struct mthca_dev *dev, size_t size, u32 pdn,
		       bool hca_write, struct mthca_dp_buf *buf);
void mthca_dp_buf_free(struct mthca_dev *dev, struct mthca_dp_buf *buf);

/* ------------------------------------------------------------------ */
/* Event queues (mthca_eq.c)                                           */
/* ------------------------------------------------------------------ */

enum {
	MTHCA_EQ_COMP,
	MTHCA_EQ_ASYNC,
	MTHCA_EQ_CMD,
	MTHCA_NUM_EQ
};

/**
 * struct mthca_eq - one event queue
 * @dev: owning device
 * @eqn: EQ number
 * @nent: entries (a power of two)
 * @cons_index: entries consumed (free-running); only the EQ's own
 *	interrupt handler touches it (for INTx, the one shared handler)
 * @npages: pages of the ring
 * @page: kernel addresses of the ring's pages
 * @page_dma: their bus addresses
 * @mr: the MR the HCA writes the ring through (IOVA 0)
 * @vector: Linux IRQ of its MSI-X vector (MSI-X only)
 * @have_irq: @vector was requested
 * @irq_name: name shown in /proc/interrupts
 */
struct mthca_eq {
	struct mthca_dev	*dev;
	u32			eqn;
	u32			nent;
	u32			cons_index;
	int			npages;
	void			**page;
	dma_addr_t		*page_dma;
	struct mthca_mr		mr;
	unsigned int		vector;
	bool			have_irq;
	char			irq_name[48];
};

/**
 * struct mthca_eq_table - the device's EQs and their registers
 * @eq: completion, async and command EQs
 * @eqn_bitmap: EQ numbers
 * @arm_mask: arm register bits of all our EQs (big-endian register)
 * @clr_int: the INTx cause clear register (dword holding our bit)
 * @clr_mask: our cause bit in @clr_int, 0 with MSI-X
 * @inta_pin: INTx cause bit number (QUERY_ADAPTER)
 * @clr_base: mapping of the 64-bit INTx clear register
 * @arm_reg: mapping of the EQ arm register
 * @set_ci_base: mapping of the per-EQ consumer index registers
 * @icm_virt: ICM address of the EQ context table
 * @icm_page: the page backing the EQ contexts
 * @icm_dma: its bus address
 * @have_irq: the INTx IRQ was requested
 */
struct mthca_eq_table {
	struct mthca_eq		eq[MTHCA_NUM_EQ];
	struct mthca_bitmap	eqn_bitmap;
	u32			arm_mask;
	void __iomem		*clr_int;
	u32			clr_mask;
	u8			inta_pin;
	void __iomem		*clr_base;
	void __iomem		*arm_reg;
	void __iomem		*set_ci_base;
	u64			icm_virt;
	struct page		*icm_page;
	dma_addr_t		icm_dma;
	bool			have_irq;
};

/* ------------------------------------------------------------------ */
/* Command interface state (mthca_cmd.c)                               */
/* ------------------------------------------------------------------ */

struct mthca_cmd_waiter;

/**
 * struct mthca_cmd_state - firmware command interface
 * @pool: DMA pool of mailboxes (4 KiB each)
 * @hcr_mutex: serialises writes to the HCR (the go-bit handshake)
 * @poll_sem: one polled command at a time (before EQs exist)
 * @event_sem: at most @max_cmds commands in flight in event mode
 * @wait_lock: spinlock taken with interrupts off; guards @free_waiter
 *	and the waiters' token numbering against the EQ interrupt
 * @waiters: one per command slot in event mode
 * @free_waiter: index of the first free waiter, -1 if none
 * @max_cmds: commands the firmware accepts at once
 * @token_mask: bits of a token beyond the waiter index
 * @use_events: commands complete through the command EQ
 * @dead: the firmware hit a catastrophic error; commands fail at once
 */
struct mthca_cmd_state {
	struct dma_pool		*pool;
	struct mutex		hcr_mutex;	/* see the kernel-doc above */
	struct semaphore	poll_sem;
	struct semaphore	event_sem;
	spinlock_t		wait_lock;	/* see the kernel-doc above */
	struct mthca_cmd_waiter	*waiters;
	int			free_waiter;
	int			max_cmds;
	u16			token_mask;
	bool			use_events;
	bool			dead;
};

/* ------------------------------------------------------------------ */
/* What the firmware reports and what the profile chose                */
/* ------------------------------------------------------------------ */

/**
 * struct mthca_fw_info - QUERY_FW results
 * @version: major << 32 | minor << 16 | subminor
 * @log_max_cmds: log2 of the commands accepted at once
 * @fw_pages: 4 KiB pages the firmware area needs
 * @clr_int_base: BAR0 offset of the INTx clear register
 * @eq_arm_base: BAR0 offset of the EQ arm register
 * @eq_set_ci_base: BAR0 offset of the EQ consumer index registers
 * @catas_base: BAR0 offset of the catastrophic error buffer
 * @catas_size: its size in dwords
 */
struct mthca_fw_info {
	u64	version;
	u8	log_max_cmds;
	u32	fw_pages;
	u64	clr_int_base;
	u64	eq_arm_base;
	u64	eq_set_ci_base;
	u64	catas_base;
	u32	catas_size;
};

/*
 * struct mthca_limits: the device's effective limits (QUERY_DEV_LIM and
 * the profile), as both halves of the driver need them
 *
 * Counts are numbers of objects, not log2 values.  "reserved_*" are the
 * low numbers the firmware keeps for itself.
 */
struct mthca_limits {
	int	num_ports;
	int	vl_cap;
	int	mtu_cap;
	int	port_width_cap;
	int	gid_table_len;
	int	pkey_table_len;
	int	local_ca_ack_delay;
	int	num_uars;
	int	reserved_uars;
	u32	uar_size;
	int	uar_scratch_entry_sz;
	int	max_sg;
	int	max_desc_sz;
	int	max_wqes;
	int	max_qp_init_rdma;
	int	max_qp_dest_rdma;
	int	num_qps;
	int	reserved_qps;
	int	max_srq_wqes;
	int	max_srq_sge;
	int	num_srqs;
	int	reserved_srqs;
	int	num_eecs;
	int	reserved_eecs;
	int	max_cqes;
	int	num_cqs;
	int	reserved_cqs;
	int	num_eqs;
	int	reserved_eqs;
	int	num_mpts;
	int	reserved_mrws;
	int	num_mtt_segs;
	int	reserved_mtts;
	int	mtt_seg_size;
	int	num_mgms;
	int	num_amgms;
	int	reserved_mcgs;
	int	num_qp_per_mcg;
	int	num_pds;
	int	reserved_pds;
	u32	page_size_cap;
	u32	flags;
	u16	stat_rate_support;
	u64	max_mr_size;
};

/*
 * struct mthca_icm_layout: where INIT_HCA put each table in ICM
 *
 * Filled in by the profile; the ICM tables and mthca_dp.h's tables are
 * built over these addresses.
 */
struct mthca_icm_layout {
	/* Per-QP contexts and the RDMA-read buffers. */
	u64	qpc_base, eqpc_base, rdb_base;
	int	rdb_shift;
	/* Other contexts. */
	u64	eec_base, eeec_base, srqc_base, cqc_base, eqc_base;
	/* Multicast, translation and protection tables. */
	u64	mc_base, mpt_base, mtt_base;
	/* Doorbell pages. */
	u64	uar_scratch_base, uarc_base;
	int	uarc_size;
	/* Bytes of ICM in all. */
	u64	total;
};

/* ------------------------------------------------------------------ */
/* The device                                                          */
/* ------------------------------------------------------------------ */

struct mthca_db_pages;

/**
 * struct mthca_dev - one HCA
 * @ib_dev: the core's device; first, for ib_alloc_device()
 * @pdev: the PCI function
 * @flags: enum mthca_dev_flag bits
 * @rev_id: hardware revision (QUERY_ADAPTER)
 * @board_id: PSID (QUERY_ADAPTER)
 * @hcr: mapping of the HCR in BAR0
 * @cmd: command interface
 * @fw: QUERY_FW results
 * @limits: device limits
 * @layout: ICM layout
 * @fw_icm: firmware area
 * @aux_icm: auxiliary ICM the firmware asked for
 * @icm_qpc: QP contexts
 * @icm_eqpc: extended QP contexts
 * @icm_rdb: RDMA read/atomic responder resources
 * @icm_cqc: CQ contexts
 * @icm_srqc: SRQ contexts (NULL without SRQ support)
 * @icm_mpt: MPT entries
 * @icm_mtt: MTT entries
 * @icm_mcg: multicast group entries
 * @uar_bitmap: UAR numbers
 * @driver_uar: the kernel's UAR
 * @kar: mapping of @driver_uar's page
 * @uar_lock: spinlock, interrupts off; makes the two halves of a 64-bit
 *	doorbell write atomic where writeq is not (32-bit kernels)
 * @db_pages: the kernel's doorbell record pages; under @db_mutex
 * @db_mutex: guards @db_pages (allocation maps ICM pages, so it sleeps)
 * @pd_bitmap: PD numbers
 * @mpt_bitmap: MPT indices
 * @mtt_buddy: MTT segments
 * @driver_pd: the driver's own privileged PD
 * @eq_table: event queues
 * @cq_table: data path: CQs
 * @qp_table: data path: QPs
 * @srq_table: data path: SRQs
 * @mcg_table: data path: multicast groups
 * @catas_timer: polls the catastrophic error buffer
 * @catas_buf: mapping of the catastrophic error buffer
 * @catas_node: on the list of devices waiting for a reset after a
 *	catastrophic error (under the list's lock in mthca_catas.c)
 * @cap_mask_mutex: serialises read-modify-write of the port capability
 *	masks
 * @port_cap_mask: capability mask last given to SET_IB, per port
 * @traps: forwarding the firmware's traps to the SM (mthca_trap.h: the
 *	SM address handles, the agents and the lock that guards them)
 * @wq: ordered workqueue of the device (port events found in SMPs);
 *	drained at removal
 * @registered: ib_register_device() succeeded
 */
struct mthca_dev {
	struct ib_device	ib_dev;
	struct pci_dev		*pdev;
	unsigned long		flags;
	u32			rev_id;
	char			board_id[MTHCA_BOARD_ID_LEN];

	void __iomem		*hcr;
	struct mthca_cmd_state	cmd;
	struct mthca_fw_info	fw;
	struct mthca_limits	limits;
	struct mthca_icm_layout	layout;

	struct mthca_icm	*fw_icm;
	struct mthca_icm	*aux_icm;
	struct mthca_icm_table	*icm_qpc;
	struct mthca_icm_table	*icm_eqpc;
	struct mthca_icm_table	*icm_rdb;
	struct mthca_icm_table	*icm_cqc;
	struct mthca_icm_table	*icm_srqc;
	struct mthca_icm_table	*icm_mpt;
	struct mthca_icm_table	*icm_mtt;
	struct mthca_icm_table	*icm_mcg;

	struct mthca_bitmap	uar_bitmap;
	struct mthca_uar	driver_uar;
	void __iomem		*kar;
	spinlock_t		uar_lock;	/* see the kernel-doc above */
	struct mthca_db_pages	*db_pages;
	struct mutex		db_mutex;	/* see the kernel-doc above */

	struct mthca_bitmap	pd_bitmap;
	struct mthca_bitmap	mpt_bitmap;
	struct mthca_buddy	mtt_buddy;
	struct mthca_pd		driver_pd;

	struct mthca_eq_table	eq_table;

	struct mthca_cq_table	cq_table;
	struct mthca_qp_table	qp_table;
	struct mthca_srq_table	srq_table;
	struct mthca_mcg_table	mcg_table;

	struct timer_list	catas_timer;
	u32 __iomem		*catas_buf;
	struct list_head	catas_node;

	struct mutex		cap_mask_mutex;	/* see the kernel-doc above */
	u32			port_cap_mask[MTHCA_MAX_PORTS];
	struct mthca_trap_fwd	traps;
	struct workqueue_struct	*wq;
	bool			registered;
};

static inline struct mthca_dev *to_mdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct mthca_dev, ib_dev);
}

#define mthca_err(mdev, fmt, ...) \
	dev_err(&(mdev)->pdev->dev, fmt, ##__VA_ARGS__)
#define mthca_warn(mdev, fmt, ...) \
	dev_warn(&(mdev)->pdev->dev, fmt, ##__VA_ARGS__)
/*
 * A command of a teardown failed.  Once a catastrophic error has marked the
 * firmware dead every command fails with -EIO, which catas_report() said
 * once; the teardown's failures are then not worth a line each.
 */
#define mthca_teardown_warn(mdev, fmt, ...)				\
	do {								\
		struct mthca_dev *tw_dev = (mdev);			\
									\
		if (!READ_ONCE(tw_dev->cmd.dead))			\
			mthca_warn(tw_dev, fmt, ##__VA_ARGS__);		\
	} while (0)
#define mthca_info(mdev, fmt, ...) \
	dev_info(&(mdev)->pdev->dev, fmt, ##__VA_ARGS__)
#define mthca_dbg(mdev, fmt, ...) \
	dev_dbg(&(mdev)->pdev->dev, fmt, ##__VA_ARGS__)

/**
 * mthca_uar_write64() - ring a 64-bit doorbell in the kernel UAR
 * @dev: the device
 * @hi: first (big-endian) dword, as the doorbell defines it
 * @lo: second dword
 * @offset: doorbell offset in the UAR page (MTHCA_UAR_*_DB)
 *
 * The HCA takes the doorbell when the second dword arrives; the two
 * dwords must not interleave with another doorbell.  On 64-bit kernels a
 * single writeq does it; elsewhere the halves are written under
 * dev->uar_lock.  Callable from any context.
 */
static inline void mthca_uar_write64(struct mthca_dev *dev, u32 hi, u32 lo,
				     unsigned int offset)
{
	__be32 both[2] = { cpu_to_be32(hi), cpu_to_be32(lo) };
	void __iomem *dst = dev->kar + offset;
#if BITS_PER_LONG == 64
	__raw_writeq(*(u64 *)both, dst);
#else
	unsigned long flags;

	spin_lock_irqsave(&dev->uar_lock, flags);
	__raw_writel((__force u32)both[0], dst);
	__raw_writel((__force u32)both[1], dst + 4);
	spin_unlock_irqrestore(&dev->uar_lock, flags);
#endif
}

/* Table set-up in probe order; each cleanup undoes its init. */
int mthca_uar_table_init(struct mthca_dev *dev);
void mthca_uar_table_cleanup(struct mthca_dev *dev);
int mthca_pd_table_init(struct mthca_dev *dev);
void mthca_pd_table_cleanup(struct mthca_dev *dev);
int mthca_mr_table_init(struct mthca_dev *dev);
void mthca_mr_table_cleanup(struct mthca_dev *dev);

/* mthca_reset.c */
int mthca_reset(struct mthca_dev *dev);

/* mthca_eq.c */
int mthca_eq_icm_map(struct mthca_dev *dev, u64 virt);
void mthca_eq_icm_unmap(struct mthca_dev *dev);
int mthca_eq_table_init(struct mthca_dev *dev);
void mthca_eq_table_cleanup(struct mthca_dev *dev);

/**
 * mthca_comp_eqn() - the EQ that CQ contexts should name
 * @dev: the device
 *
 * Return: the completion EQ's number.
 */
static inline u32 mthca_comp_eqn(struct mthca_dev *dev)
{
	return dev->eq_table.eq[MTHCA_EQ_COMP].eqn;
}

/**
 * mthca_async_eqn() - the EQ that async events of CQs/QPs/SRQs go to
 * @dev: the device
 *
 * Return: the async EQ's number.
 */
static inline u32 mthca_async_eqn(struct mthca_dev *dev)
{
	return dev->eq_table.eq[MTHCA_EQ_ASYNC].eqn;
}

/* mthca_catas.c */
int mthca_catas_start(struct mthca_dev *dev);
void mthca_catas_stop(struct mthca_dev *dev);
int mthca_catas_module_init(void);
void mthca_catas_module_exit(void);

/* mthca_main.c: remove and probe again (under the device mutex). */
extern struct mutex mthca_device_mutex;
void mthca_restart(struct pci_dev *pdev);

/* mthca_mad.c */
int mthca_process_mad(struct ib_device *ibdev, int mad_flags, u8 port_num,
		      struct ib_wc *in_wc, struct ib_grh *in_grh,
		      struct ib_mad *in_mad, struct ib_mad *out_mad);

/* mthca_provider.c */
int mthca_register_device(struct mthca_dev *dev);
void mthca_unregister_device(struct mthca_dev *dev);

#endif /* MTHCA_DEV_H */
