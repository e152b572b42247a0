/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The data-path half of ib_mthca: completion queues, queue pairs, shared
 * receive queues, address handles and multicast groups of the MT25208 in
 * mem-free (Arbel) mode.
 *
 * struct mthca_dev (mthca_dev.h) embeds one table of each kind below; the
 * probe code calls the mthca_init_*_table() functions after the firmware,
 * ICM, EQs and the driver PD are up, and the mthca_cleanup_*_table() ones
 * in reverse order on removal.  mthca_dev.h includes this header; this
 * header does not include mthca_dev.h.  The EQ interrupt code calls mthca_cq_completion() and the
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
#include <linux/idr.h>
#include <linux/list.h>
#include <rdma/ib_verbs.h>

struct mthca_dev;

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

/*
 * The number -> object tables below are XArrays.  Their internal lock
 * (xa_lock_irqsave) is the table lock: the EQ handler, in hard interrupt
 * context, looks an object up and takes a reference under it; create
 * inserts and destroy erases under it.  CQ pollers look QPs up with
 * xa_load() while holding the CQ lock, and QP destroy erases the QP while
 * holding both of its CQ locks, so a poller never sees a freed QP.
 */

/**
 * struct mthca_cq_table - the device's completion queues
 * @objs: CQ number -> struct mthca_cq (XA_FLAGS_ALLOC, IRQ-safe lock); a
 *	number is reserved with a NULL entry until its CQ is ready
 * @flushing: set once, by mthca_dp_catas(), after the firmware died and
 *	every post in flight has finished; pollers then report the work
 *	requests still outstanding as flushed instead of reading the rings
 *	(smp_store_release/smp_load_acquire)
 */
struct mthca_cq_table {
	struct xarray		objs;
	bool			flushing;
};

/**
 * struct mthca_qp_table - the device's queue pairs
 * @objs: QP number -> struct mthca_qp, as for CQs
 * @next: where the cyclic QP number allocation continues (xa_alloc_cyclic
 *	keeps it under the XArray lock)
 * @sqp_base: first of the four physical QPs given to CONF_SPECIAL_QP:
 *	sqp_base + 2 * (0 for QP0, 1 for QP1) + port - 1
 */
struct mthca_qp_table {
	struct xarray		objs;
	u32			next;
	u32			sqp_base;
};

/**
 * struct mthca_srq_table - the device's shared receive queues
 * @objs: SRQ number -> struct mthca_srq, as for CQs
 */
struct mthca_srq_table {
	struct xarray		objs;
};

/**
 * struct mthca_mcg_table - multicast groups (MGM entries in ICM)
 * @mutex: serialises every attach and detach: a hash chain is read,
 *	changed and written back with firmware commands, which sleep
 * @amgm: allocator of the overflow (AMGM) entries that follow the hash
 *	part; used under @mutex
 */
struct mthca_mcg_table {
	struct mutex		mutex;	/* see the kernel-doc above */
	struct ida		amgm;
};

/**
 * struct mthca_dp_life - lifetime of an object the EQ handler can look up
 * @refs: one for the number table, one per event handler in flight
 * @gone: destroy waits here for @refs to reach zero
 */
struct mthca_dp_life {
	refcount_t		refs;
	wait_queue_head_t	gone;
};

static inline void mthca_dp_life_init(struct mthca_dp_life *life)
{
	refcount_set(&life->refs, 1);
	init_waitqueue_head(&life->gone);
}

static inline void mthca_dp_life_put(struct mthca_dp_life *life)
{
	if (refcount_dec_and_test(&life->refs))
		wake_up(&life->gone);
}

/* Drop the table's reference and wait until no event handler holds one. */
static inline void mthca_dp_life_end(struct mthca_dp_life *life)
{
	mthca_dp_life_put(life);
	wait_event(life->gone, !refcount_read(&life->refs));
}

void *mthca_dp_find_pinned(struct xarray *xa, u32 num, size_t life_offset);

struct mthca_icm_table;

int mthca_dp_number_get(struct mthca_dev *dev, struct xarray *xa,
			u32 first, u32 count, struct mthca_icm_table *icm,
			u32 *num);
void mthca_dp_number_put(struct mthca_dev *dev, struct xarray *xa,
			 struct mthca_icm_table *icm, u32 num);

/* Look up number @num of @xa and pin the object, of @type; NULL if none. */
#define mthca_dp_find(xa, num, type) \
	((type *)mthca_dp_find_pinned(xa, num, offsetof(type, life)))

/*
 * For the EQ handler: look up and pin the object, of @type, that an
 * asynchronous event @ev names by @num in @xa; NULL (with a rate-limited
 * warning naming the object as @what) when there is none.
 */
#define mthca_dp_event_target(mdev, xa, num, ev, what, type)		\
({									\
	struct mthca_dev *__dev = (mdev);				\
	u32 __num = (num);						\
	type *__obj = mthca_dp_find(xa, __num, type);			\
									\
	if (!__obj)							\
		dev_warn_ratelimited(&__dev->pdev->dev,			\
				     "async event %d for unknown "	\
				     what " %06x\n", ev, __num);	\
	__obj;								\
})

void mthca_dp_raise_event(struct mthca_dev *dev, struct ib_event *ev,
			  enum ib_event_type type,
			  void (*handler)(struct ib_event *event, void *context),
			  void *context, struct mthca_dp_life *life);

/**
 * struct mthca_cq - a completion queue
 * @ibcq: the core's view; ibcq.cqe is the usable depth, nent - 1
 * @lock: spinlock, interrupts off; guards @cons_index, the CQE ring
 *	(@buf, @nent, ibcq.cqe) and the tails of the work queues that
 *	complete here
 * @resize_mutex: serialises resize_cq calls (which sleep)
 * @cqn: the CQ number
 * @nent: entries in the ring (a power of two)
 * @cons_index: CQEs consumed so far (free-running)
 * @buf: the CQE ring
 * @set_ci_db_index: doorbell record index of the consumer index record
 * @set_ci_db: the consumer index record
 * @arm_db_index: doorbell record index of the arm record
 * @arm_db: the arm record
 * @arm_sn: arm sequence number, bumped at each completion event (only its
 *	low two bits reach the HCA); READ_ONCE/WRITE_ONCE
 * @send_qps: the QPs whose send queue completes here (struct
 *	mthca_qp.scq_node), under @lock; for flushing after a catastrophic
 *	error
 * @recv_qps: the QPs whose receive queue completes here (rcq_node),
 *	likewise
 * @life: pins the object while an event handler uses it
 * @uctx: the user context of a user CQ (ring and doorbell records in the
 *	process's memory: @buf has no kernel mapping, @set_ci_db and @arm_db
 *	point into the pinned record pages), NULL for a kernel CQ
 */
struct mthca_cq {
	struct ib_cq		ibcq;
	spinlock_t		lock;	/* see the kernel-doc above */
	struct mutex		resize_mutex;	/* see the kernel-doc above */
	u32			cqn;
	u32			nent;
	u32			cons_index;
	struct mthca_dp_buf	buf;
	int			set_ci_db_index;
	__be32			*set_ci_db;
	int			arm_db_index;
	__be32			*arm_db;
	u32			arm_sn;
	struct list_head	send_qps;
	struct list_head	recv_qps;
	struct mthca_dp_life	life;
	struct mthca_ucontext	*uctx;
};

/**
 * struct mthca_wq - one work queue (send or receive) of a QP
 * @lock: spinlock, interrupts off; guards posting (@head, @last, the WQEs
 *	not yet handed over); @tail and @last_comp are under the CQ lock of
 *	the CQ this queue completes to
 * @head: WQEs posted so far (free-running)
 * @tail: WQEs completed so far (free-running)
 * @last_comp: index of the last WQE a CQE reported
 * @max: entries (a power of two, or 0)
 * @max_gs: scatter/gather entries per WQE
 * @wqe_shift: log2 of the WQE stride
 * @offset: byte offset of the queue in the QP buffer
 * @db_index: doorbell record index
 * @db: the doorbell record
 * @last: the previous WQE, whose next segment links to a new one
 */
struct mthca_wq {
	spinlock_t	lock;	/* see the kernel-doc above */
	u32		head;
	u32		tail;
	u32		last_comp;
	u32		max;
	u32		max_gs;
	int		wqe_shift;
	u32		offset;
	int		db_index;
	__be32		*db;
	void		*last;
};

/* Header bytes reserved per send WQE of a special QP for its MLX header. */
#define MTHCA_DP_UD_HEADER_BYTES	128

/**
 * struct mthca_qp - a queue pair
 * @ibqp: the core's view; ibqp.qp_num is 0 or 1 for the special QPs
 * @qpn: the physical QP number (the one CQEs and events carry)
 * @kind: layout of the send queue (enum mthca_sq_kind)
 * @state: the current IBA state; written under @mutex, read by posters
 * @mutex: serialises modify_qp, query_qp and destroy
 * @sq: the send queue
 * @rq: the receive queue (unused with an SRQ)
 * @buf: WQE buffer: receive queue, send queue, then (special QPs) one
 *	MLX header slot per send WQE
 * @hdr_offset: where the header slots start in @buf
 * @max_inline: bytes of inline data a send WQE takes (0: none)
 * @wrid: work request ids, receive queue entries first
 * @sq_policy: IB_SIGNAL_ALL_WR or IB_SIGNAL_REQ_WR
 * @port: port of the QP (1-based), 0 until set; written under @mutex, and
 *	by the PATH_MIG event (the HCA moved the QP to @alt_port) with
 *	WRITE_ONCE; completion polling reads it with READ_ONCE
 * @alt_port: port of the alternate path last loaded (IB_QP_ALT_PATH), 0
 *	until then; written under @mutex, read by the PATH_MIG event
 * @access: remote access flags last set (IB_ACCESS_REMOTE_*)
 * @resp_depth: responder resources last set
 * @qkey: Q_Key of a special QP (the MLX header needs it)
 * @pkey_index: P_Key index of a special QP
 * @send_psn: next PSN of a special QP's MLX sends; under @sq.lock
 * @scq_node: on the send CQ's send_qps list, under that CQ's lock
 * @rcq_node: on the receive CQ's recv_qps list, under that CQ's lock
 * @life: pins the object while an event handler uses it
 * @uctx: the user context of a user QP (WQE buffer and doorbell records
 *	in the process's memory; @buf has only its lkey, @wrid is NULL),
 *	NULL for a kernel QP
 */
struct mthca_qp {
	struct ib_qp		ibqp;
	u32			qpn;
	int			kind;
	int			state;
	struct mutex		mutex;	/* see the kernel-doc above */
	struct mthca_wq		sq;
	struct mthca_wq		rq;
	struct mthca_dp_buf	buf;
	u32			hdr_offset;
	u32			max_inline;
	u64			*wrid;
	enum ib_sig_type	sq_policy;
	u8			port;
	u8			alt_port;
	int			access;
	u8			resp_depth;
	u32			qkey;
	u16			pkey_index;
	u32			send_psn;
	struct list_head	scq_node;
	struct list_head	rcq_node;
	struct mthca_dp_life	life;
	struct mthca_ucontext	*uctx;
};

/**
 * struct mthca_srq - a shared receive queue
 * @ibsrq: the core's view
 * @lock: spinlock, interrupts off; guards the free list, @counter and
 *	@wrid (posting and the CQ poller returning WQEs)
 * @mutex: serialises modify_srq (ARM_SRQ) and query_srq
 * @srqn: the SRQ number
 * @max: WQEs in the queue (a power of two; one is never used)
 * @max_gs: scatter/gather entries per WQE
 * @wqe_shift: log2 of the WQE stride
 * @first_free: index of the first free WQE (-1: none)
 * @last_free: index of the last free WQE
 * @counter: WQEs posted so far (free-running, 16 bits on the HCA)
 * @buf: WQE buffer
 * @wrid: work request id of each WQE
 * @db_index: doorbell record index
 * @db: the doorbell record
 * @life: pins the object while an event handler uses it
 * @uctx: the user context of a user SRQ (buffer and record in the
 *	process's memory), NULL for a kernel SRQ
 */
struct mthca_srq {
	struct ib_srq		ibsrq;
	spinlock_t		lock;	/* see the kernel-doc above */
	struct mutex		mutex;	/* see the kernel-doc above */
	u32			srqn;
	u32			max;
	u32			max_gs;
	int			wqe_shift;
	int			first_free;
	int			last_free;
	u16			counter;
	struct mthca_dp_buf	buf;
	u64			*wrid;
	int			db_index;
	__be32			*db;
	struct mthca_dp_life	life;
	struct mthca_ucontext	*uctx;
};

/**
 * struct mthca_ah - an address handle
 * @ibah: the core's view
 * @av: the 32-byte mem-free address vector (struct mthca_av), copied into
 *	every UD WQE that uses the AH
 * @port: the AH's port
 * @sgid_index: port-relative source GID index, for MLX headers
 */
struct mthca_ah {
	struct ib_ah		ibah;
	__be32			av[8];
	u8			port;
	u8			sgid_index;
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

int mthca_init_cq_table(struct mthca_dev *dev);
void mthca_cleanup_cq_table(struct mthca_dev *dev);
int mthca_init_qp_table(struct mthca_dev *dev);
void mthca_cleanup_qp_table(struct mthca_dev *dev);
int mthca_init_srq_table(struct mthca_dev *dev);
void mthca_cleanup_srq_table(struct mthca_dev *dev);
int mthca_init_mcg_table(struct mthca_dev *dev);
void mthca_cleanup_mcg_table(struct mthca_dev *dev);

void mthca_cq_completion(struct mthca_dev *dev, u32 cqn);
void mthca_cq_event(struct mthca_dev *dev, u32 cqn, enum ib_event_type type);
void mthca_qp_event(struct mthca_dev *dev, u32 qpn, enum ib_event_type type);
void mthca_srq_event(struct mthca_dev *dev, u32 srqn, enum ib_event_type type);

void mthca_dp_init_verbs(struct ib_device *ibdev);
void mthca_dp_catas(struct mthca_dev *dev);

/* Inside the data path. */
struct ib_ud_header;

struct ib_cq *mthca_dp_create_cq(struct ib_device *ibdev, int entries,
				 struct ib_ucontext *uctx,
				 struct ib_udata *udata);
int mthca_dp_destroy_cq(struct ib_cq *ibcq);
int mthca_dp_poll_cq(struct ib_cq *ibcq, int nwc, struct ib_wc *wc);
int mthca_dp_resize_cq(struct ib_cq *ibcq, int entries,
		       struct ib_udata *udata);
int mthca_dp_arm_cq(struct ib_cq *ibcq, enum ib_cq_notify how);
void mthca_dp_cq_clean(struct mthca_cq *cq, u32 qpn, struct mthca_srq *srq);
void mthca_dp_cq_list_qp(struct mthca_qp *qp);
void mthca_dp_cq_unlist_qp(struct mthca_qp *qp);

struct ib_srq *mthca_dp_create_srq(struct ib_pd *pd,
				   struct ib_srq_init_attr *init,
				   struct ib_udata *udata);
int mthca_dp_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask);
int mthca_dp_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int mthca_dp_destroy_srq(struct ib_srq *ibsrq);
int mthca_dp_post_srq_recv(struct ib_srq *ibsrq, struct ib_recv_wr *wr,
			   struct ib_recv_wr **bad_wr);
void mthca_dp_srq_free_wqe(struct mthca_srq *srq, u32 wqe_offset);

struct ib_ah *mthca_dp_create_ah(struct ib_pd *pd, struct ib_ah_attr *attr);
int mthca_dp_query_ah(struct ib_ah *ibah, struct ib_ah_attr *attr);
int mthca_dp_destroy_ah(struct ib_ah *ibah);
void mthca_dp_ah_to_header(struct mthca_ah *ah, struct ib_ud_header *hdr);
bool mthca_dp_ah_has_grh(const struct mthca_ah *ah);

int mthca_dp_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int mthca_dp_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);

#endif /* MTHCA_DP_H */
