/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The data-path half of ib_mthca: completion queues, queue pairs, shared
 * receive queues, address handles and multicast groups of the MT25208 in
 * mem-free (Arbel) mode.
 *
 * struct mthca_dev (mthca_dev.h) embeds one table of each kind below; the
 * probe code calls the mthca_init_*_table() functions after the firmware
 * and ICM are up and the mthca_cleanup_*_table() ones in reverse order on
 * removal.  The EQ interrupt code calls mthca_cq_completion() and the
 * mthca_*_event() functions with the object numbers the EQEs carry.
 */
#ifndef MTHCA_DP_H
#define MTHCA_DP_H

#include <linux/types.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/refcount.h>
#include <linux/wait.h>
#include <linux/dmapool.h>
#include <rdma/ib_verbs.h>

struct mthca_dev;
struct mthca_icm_table;

/* Special QPs per port: QP0 (SMI) and QP1 (GSI). */
#define MTHCA_DP_SQP_PER_PORT	2

/**
 * struct mthca_dp_buf - a physically contiguous DMA queue buffer
 * @cpu: kernel address of the buffer
 * @dma: bus address of the buffer
 * @size: bytes, a multiple of PAGE_SIZE
 * @mtt_seg: first MTT entry the buffer's pages are written to (-1: none)
 * @lkey: the key of the memory region that covers the buffer
 */
struct mthca_dp_buf {
	void		*cpu;
	dma_addr_t	dma;
	size_t		size;
	int		mtt_seg;
	u32		lkey;
};

/**
 * struct mthca_cq_table - the device's completion queues
 * @lock: spinlock taken with interrupts off; guards @objs lookups that take
 *	a reference together with the lookup (the EQ handler runs in hard
 *	interrupt context) and the insert/erase done at create/destroy
 * @objs: CQ number -> struct mthca_cq, for the EQ handler
 * @num: how many CQ numbers the device has (a power of two)
 * @reserved: numbers below this belong to the firmware
 * @next: round-robin hint for the next number to try; under @lock
 * @icm: the ICM table holding the CQ contexts (set up by the probe code)
 */
struct mthca_cq_table {
	spinlock_t		lock;
	struct xarray		objs;
	u32			num;
	u32			reserved;
	u32			next;
	struct mthca_icm_table	*icm;
};

/**
 * struct mthca_qp_table - the device's queue pairs
 * @lock: spinlock, interrupts off; guards @objs as for the CQ table
 * @objs: QP number -> struct mthca_qp
 * @num: QP numbers on the device
 * @reserved: numbers below this belong to the firmware
 * @next: allocation hint, under @lock
 * @sqp_base: first of the 2 * ports physical QPs given to CONF_SPECIAL_QP
 * @rdb_shift: log2 of the RDMA-read/atomic responder slots per QP
 * @rdb_base: ICM address of responder slot 0 (RDB table)
 * @sqp_mutex: serialises CONF_SPECIAL_QP and @sqp_users
 * @sqp_users: whether each special QP number is in use; under @sqp_mutex
 * @icm_qpc: ICM table of QP contexts
 * @icm_eqpc: ICM table of extended QP contexts
 * @icm_rdb: ICM table of responder resources
 */
struct mthca_qp_table {
	spinlock_t		lock;
	struct xarray		objs;
	u32			num;
	u32			reserved;
	u32			next;
	u32			sqp_base;
	int			rdb_shift;
	u64			rdb_base;
	struct mutex		sqp_mutex;
	bool			sqp_users[2 * MTHCA_DP_SQP_PER_PORT];
	struct mthca_icm_table	*icm_qpc;
	struct mthca_icm_table	*icm_eqpc;
	struct mthca_icm_table	*icm_rdb;
};

/**
 * struct mthca_srq_table - the device's shared receive queues
 * @lock: spinlock, interrupts off; guards @objs as for the CQ table
 * @objs: SRQ number -> struct mthca_srq
 * @num: SRQ numbers on the device (0: the device has no SRQs)
 * @reserved: numbers below this belong to the firmware
 * @next: allocation hint, under @lock
 * @icm: ICM table of SRQ contexts
 */
struct mthca_srq_table {
	spinlock_t		lock;
	struct xarray		objs;
	u32			num;
	u32			reserved;
	u32			next;
	struct mthca_icm_table	*icm;
};

/**
 * struct mthca_av_table - address vectors
 * @pool: DMA pool of 32-byte address vectors in host memory; mem-free HCAs
 *	read the AV of a UD send from there through the WQE's AV pointer.
 *	dma_pool_alloc() with GFP_ATOMIC never sleeps, so create_ah may be
 *	called from any context.
 */
struct mthca_av_table {
	struct dma_pool		*pool;
};

/**
 * struct mthca_mcg_table - multicast groups (MGM entries in ICM)
 * @mutex: serialises every attach and detach: the hash chain is read,
 *	modified and written back with firmware commands that sleep
 * @num_mgm: entries in the hash part (MGM, indexed by MGID_HASH)
 * @num_amgm: overflow entries after the hash part (AMGM)
 * @amgm_used: bitmap of the AMGM entries in use; under @mutex
 * @entry_size: bytes per MGM entry
 * @icm: ICM table of MGM entries
 */
struct mthca_mcg_table {
	struct mutex		mutex;
	u32			num_mgm;
	u32			num_amgm;
	unsigned long		*amgm_used;
	u32			entry_size;
	struct mthca_icm_table	*icm;
};

/**
 * struct mthca_cq - a completion queue
 * @ibcq: the core's view; ibcq.cqe is the usable depth
 * @lock: spinlock, interrupts off; guards @cons_index and the CQE ring
 *	against concurrent pollers and the QP-destroy cleanup
 * @cqn: the CQ number
 * @nent: entries in the ring (a power of two, one more than usable)
 * @cons_index: CQEs consumed so far (free-running)
 * @buf: the CQE ring
 * @set_ci_db_index: doorbell record index of the consumer index record
 * @set_ci_db: the consumer index record
 * @arm_db_index: doorbell record index of the arm record
 * @arm_db: the arm record
 * @arm_sn: arm sequence number (2 bits), bumped at each completion event
 * @refs: references held by the table and by event handlers in flight
 * @wait: destroy waits here for @refs to drop to zero
 */
struct mthca_cq {
	struct ib_cq		ibcq;
	spinlock_t		lock;
	u32			cqn;
	u32			nent;
	u32			cons_index;
	struct mthca_dp_buf	buf;
	int			set_ci_db_index;
	__be32			*set_ci_db;
	int			arm_db_index;
	__be32			*arm_db;
	int			arm_sn;
	refcount_t		refs;
	wait_queue_head_t	wait;
};

/**
 * struct mthca_wq - one work queue (send or receive) of a QP
 * @lock: spinlock, interrupts off; guards posting on this queue
 * @head: WQEs posted so far (free-running)
 * @tail: WQEs completed so far (free-running)
 * @max: usable entries (a power of two)
 * @max_gs: scatter/gather entries per WQE
 * @wqe_shift: log2 of the WQE stride
 * @offset: byte offset of the queue in the QP buffer
 * @db_index: doorbell record index (mem-free)
 * @db: the doorbell record
 * @last: the previous WQE, whose next-segment links to a new one
 */
struct mthca_wq {
	spinlock_t	lock;
	u32		head;
	u32		tail;
	u32		max;
	u32		max_gs;
	int		wqe_shift;
	u32		offset;
	int		db_index;
	__be32		*db;
	void		*last;
};

/**
 * struct mthca_qp - a queue pair
 * @ibqp: the core's view
 * @state: the current IBA state (enum ib_qp_state); under @mutex for
 *	writers, read locklessly by post_send/post_recv
 * @mutex: serialises modify_qp, query_qp and destroy
 * @sq: the send queue
 * @rq: the receive queue (unused with an SRQ)
 * @buf: WQE buffer holding the receive queue then the send queue
 * @wrid: work request ids, receive queue entries first
 * @sq_policy: IB_SIGNAL_ALL_WR or IB_SIGNAL_REQ_WR
 * @port: port of the QP's primary path (1-based), 0 if not yet set
 * @is_sqp: QP0/QP1 proxy on a special QP number
 * @qkey: Q_Key of a special QP (the MLX send header needs it)
 * @pkey_index: P_Key index of a special QP
 * @send_psn: next PSN of a special QP's MLX sends
 * @header_buf: DMA buffer of UD headers for MLX sends, one slot per SQ WQE
 * @refs: references held by the table and by event handlers in flight
 * @wait: destroy waits here for @refs to drop to zero
 */
struct mthca_qp {
	struct ib_qp		ibqp;
	int			state;
	struct mutex		mutex;
	struct mthca_wq		sq;
	struct mthca_wq		rq;
	struct mthca_dp_buf	buf;
	u64			*wrid;
	enum ib_sig_type	sq_policy;
	u8			port;
	bool			is_sqp;
	u32			qkey;
	u16			pkey_index;
	u32			send_psn;
	struct mthca_dp_buf	header_buf;
	refcount_t		refs;
	wait_queue_head_t	wait;
};

/**
 * struct mthca_srq - a shared receive queue
 * @ibsrq: the core's view
 * @lock: spinlock, interrupts off; guards the free list and posting
 * @srqn: the SRQ number
 * @max: WQEs in the queue (a power of two)
 * @max_gs: scatter/gather entries per WQE
 * @wqe_shift: log2 of the WQE stride
 * @limit: the armed limit (0: not armed)
 * @first_free: index of the first free WQE
 * @last_free: index of the last free WQE
 * @counter: WQEs posted so far (free-running), written to the doorbell
 *	record
 * @buf: WQE buffer
 * @wrid: work request id of each WQE
 * @db_index: doorbell record index
 * @db: the doorbell record
 * @refs: references held by the table and by event handlers in flight
 * @wait: destroy waits here for @refs to drop to zero
 */
struct mthca_srq {
	struct ib_srq		ibsrq;
	spinlock_t		lock;
	u32			srqn;
	u32			max;
	u32			max_gs;
	int			wqe_shift;
	u32			limit;
	int			first_free;
	int			last_free;
	u16			counter;
	struct mthca_dp_buf	buf;
	u64			*wrid;
	int			db_index;
	__be32			*db;
	refcount_t		refs;
	wait_queue_head_t	wait;
};

/**
 * struct mthca_ah - an address handle
 * @ibah: the core's view
 * @av: the address vector, in @av_table.pool memory
 * @av_dma: bus address of @av
 */
struct mthca_ah {
	struct ib_ah		ibah;
	void			*av;
	dma_addr_t		av_dma;
};

static inline struct mthca_cq *to_mcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct mthca_cq, ibcq);
}

static inline struct mthca_qp *to_mqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct mthca_qp, ibqp);
}

static inline struct mthca_srq *to_msrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct mthca_srq, ibsrq);
}

static inline struct mthca_ah *to_mah(struct ib_ah *ibah)
{
	return container_of(ibah, struct mthca_ah, ibah);
}

/*
 * What the data path uses from the base half (MTHCA), by these names
 * unless the base half publishes others first:
 *
 *   struct mthca_dev *to_mdev(struct ib_device *);  dev->ib_dev, dev->pdev
 *   dev->limits.{num_cqs,reserved_cqs,num_qps,reserved_qps,num_srqs,
 *	reserved_srqs,max_wqes,max_sg,max_desc_sz,num_mgms,num_amgms,
 *	pkey_table_len,gid_table_len,num_ports,max_srq_wqes,max_srq_sge}
 *   dev->driver_uar.index, dev->kar (the driver UAR page, mapped)
 *   comp/async EQ numbers of the EQs CQs report to
 *   u32 pd number of an ib_pd; lkey of the MR that covers a queue buffer
 *   struct mthca_mailbox { void *buf; dma_addr_t dma; } with
 *	mthca_alloc_mailbox(dev, gfp) / mthca_free_mailbox(dev, box)
 *   mthca_cmd(dev, in_param, in_mod, op_mod, op, timeout)   no output
 *   mthca_cmd_box(dev, in_param, out_param, in_mod, op_mod, op, timeout)
 *   mthca_cmd_imm(dev, in_param, &out_param, in_mod, op_mod, op, timeout)
 *   mthca_table_get(dev, icm_table, obj) / mthca_table_put(...)
 *   mthca_alloc_db(dev, type, qn, &db) -> index / mthca_free_db(dev, type,
 *	index): doorbell records, types CQ_SET_CI 1, CQ_ARM 2, SQ 3, RQ 4,
 *	SRQ 5
 *   a way to get a physically contiguous (or MTT-mapped) DMA buffer with
 *	an MR at iova 0 over it and its lkey (queue buffers)
 */

int mthca_init_cq_table(struct mthca_dev *dev);
void mthca_cleanup_cq_table(struct mthca_dev *dev);
int mthca_init_qp_table(struct mthca_dev *dev);
void mthca_cleanup_qp_table(struct mthca_dev *dev);
int mthca_init_srq_table(struct mthca_dev *dev);
void mthca_cleanup_srq_table(struct mthca_dev *dev);
int mthca_init_av_table(struct mthca_dev *dev);
void mthca_cleanup_av_table(struct mthca_dev *dev);
int mthca_init_mcg_table(struct mthca_dev *dev);
void mthca_cleanup_mcg_table(struct mthca_dev *dev);

void mthca_cq_completion(struct mthca_dev *dev, u32 cqn);
void mthca_cq_event(struct mthca_dev *dev, u32 cqn, enum ib_event_type type);
void mthca_qp_event(struct mthca_dev *dev, u32 qpn, enum ib_event_type type);
void mthca_srq_event(struct mthca_dev *dev, u32 srqn, enum ib_event_type type);

void mthca_dp_init_verbs(struct ib_device *ibdev);

#endif /* MTHCA_DP_H */
