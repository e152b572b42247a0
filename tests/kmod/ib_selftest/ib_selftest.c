// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_selftest: an in-kernel data-path test of the verbs.
 *
 * The module is an ib_client.  On the first channel adapter that appears
 * it sets up a protection domain, a local-only DMA memory region for its
 * buffers, a memory region over just the buffer the peer may read and write
 * (its rkey is the only remote key this module hands out), one completion queue,
 * an RC and a UD queue pair on port 1 and a handful of DMA-mapped kmalloc
 * buffers.  Two hosts running it are paired through files under
 * /sys/kernel/ib_selftest/:
 *
 *   local  (read)   "lid rc_qpn ud_qpn rkey addr psn" of this side, in hex;
 *                   addr/rkey name the region the peer may read and write
 *   peer   (write)  the other side's local line; connects the RC QP to the
 *                   peer and points the UD address handle at it (again from
 *                   RESET on every write, so both sides re-pair together)
 *   run    (write)  "query_qp", "rc_send", "rdma_write", "rdma_read",
 *                   "ud_send" or "all"; the write returns when the test is
 *                   over.  "rdma_bounds" (not in "all") reads past the
 *                   peer's region and expects a remote access error; it
 *                   leaves the RC QP in error, so pair again after it
 *          (read)   "PASS <test> ..." or "FAIL <test>: <reason>"
 *   stats  (read)   what this side received and verified for its peer
 *
 * Every test moves a buffer filled from a pseudo-random sequence with a
 * fresh seed and has the data checked where it lands: a sent message by
 * the receiver, which answers with an ACK message carrying the verdict; an
 * RDMA write by the target, on a CHECK message that follows the write on
 * the same connection; an RDMA read by the initiator, after a FILL message
 * had the target fill its region.  Every wait is bounded, so an absent or
 * broken peer ends in FAIL, never in a hang.
 */

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/dma-mapping.h>
#include <rdma/ib_verbs.h>

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand kernel verbs data-path self-test");
MODULE_LICENSE("Dual BSD/GPL");

#define ST_PORT		1
#define ST_RX_DEPTH	8
#define ST_SQ_DEPTH	8
#define ST_CQ_DEPTH	(2 * ST_RX_DEPTH + 2 * ST_SQ_DEPTH)
#define ST_MSG_BYTES	4096		/* RC messages, DATA ones the largest */
#define ST_GRH_BYTES	40		/* in front of every UD receive */
#define ST_UD_MAX	2048		/* UD messages: at most the path MTU */
#define ST_REGION_BYTES	16384		/* the RDMA target region */
#define ST_BOUNDS_PROBE	64		/* bytes read past it by rdma_bounds */
#define ST_QKEY		0x11223344	/* not a controlled Q_Key */
#define ST_ACK_TIMEOUT	17	/* 4.096 us * 2^17: about half a second */
#define ST_RETRY_CNT	6
#define ST_RNR_RETRY	6	/* 7 would retry forever */
#define ST_MAGIC	0x49425354	/* "IBST" */

/*
 * How long a test waits for each thing it expects.  A test that must fail
 * (a peer nobody has) waits it out, so the lab lowers it for that case.
 */
static unsigned int timeout_ms = 15000;
module_param(timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms, "how long a test waits for each step, in ms (default 15000)");

/* Message types (struct st_msg.type). */
enum {
	ST_MSG_DATA = 1,	/* payload follows: verify it, ACK */
	ST_MSG_CHECK,		/* verify your region against seed/len, ACK */
	ST_MSG_FILL,		/* fill your region from seed/len, ACK */
	ST_MSG_ACK,		/* verdict for message @seq */
};

/**
 * struct st_msg - the header of every message between two self-tests
 * @magic: ST_MAGIC
 * @type: ST_MSG_*
 * @status: in an ACK: 0 when the data checked out, 1 when not
 * @reserved: zero
 * @seq: the request's sequence number, echoed in its ACK
 * @seed: the seed of the pattern
 * @len: bytes of pattern (the payload, or the region's first @len bytes)
 * @bad_offset: in a failed ACK, the first byte that differed
 */
struct st_msg {
	__be32	magic;
	u8	type;
	u8	status;
	__be16	reserved;
	__be32	seq;
	__be32	seed;
	__be32	len;
	__be32	bad_offset;
};

/* What a work request is for: bits 32..39 of its wr_id. */
enum {
	ST_WR_RC_RECV = 1,
	ST_WR_UD_RECV,
	ST_WR_REQ,		/* a test's own send, RDMA write or read */
	ST_WR_ACK,		/* an ACK the worker sends */
};

#define ST_WRID(gen, kind, idx)	(((u64)(gen) << 48) | ((u64)(kind) << 32) | (idx))
#define ST_WRID_GEN(id)		((u16)((id) >> 48))
#define ST_WRID_KIND(id)	((u8)((id) >> 32))
#define ST_WRID_IDX(id)		((u32)(id))

/* What a test waits for. */
enum st_wait_kind {
	ST_WAIT_NONE,
	ST_WAIT_ACK,		/* the peer's ACK of request @wait_seq */
	ST_WAIT_WC,		/* the completion of request @wait_seq */
};

/**
 * struct st_buf - a kmalloc'd buffer mapped for the device
 * @cpu: kernel address
 * @dma: bus address (the DMA MR maps bus addresses one to one)
 * @size: bytes
 */
struct st_buf {
	void		*cpu;
	dma_addr_t	dma;
	size_t		size;
};

/**
 * struct st_peer - the other side, as written to the peer file
 * @lid: its port's LID
 * @rc_qpn: its RC QP
 * @ud_qpn: its UD QP
 * @rkey: the rkey of its region
 * @addr: the address of its region
 * @psn: its initial send PSN (our receive PSN)
 */
struct st_peer {
	u16	lid;
	u32	rc_qpn;
	u32	ud_qpn;
	u32	rkey;
	u64	addr;
	u32	psn;
};

/**
 * struct st_stats - what this side did for its peer
 * @rc_recv_ok: DATA messages over RC that verified
 * @rc_recv_bad: ... that did not
 * @ud_recv_ok: DATA messages over UD that verified
 * @ud_recv_bad: ... that did not
 * @region_checks_ok: CHECK messages whose region verified
 * @region_checks_bad: ... whose region did not
 * @region_fills: FILL messages served
 * @bad_msgs: receives that were no valid message
 */
struct st_stats {
	unsigned long rc_recv_ok, rc_recv_bad;
	unsigned long ud_recv_ok, ud_recv_bad;
	unsigned long region_checks_ok, region_checks_bad;
	unsigned long region_fills;
	unsigned long bad_msgs;
};

/**
 * struct st_dev - the self-test's state on its device
 * @device: the device
 * @pd: protection domain
 * @mr: local-only DMA memory region: the lkey of every buffer
 * @region_mr: remote read/write memory region over @region and nothing else
 * @cq: the one CQ of both QPs
 * @rc_qp: the RC QP
 * @ud_qp: the UD QP
 * @ah: address handle to the peer's port, for UD; NULL until paired
 * @rc_rx: RC receive buffers
 * @ud_rx: UD receive buffers (GRH + message)
 * @tx: a test's outgoing messages
 * @ack: the worker's outgoing ACKs (one in flight: the peer runs one
 *	request at a time)
 * @region: the region the peer reads and writes
 * @src: the source of our RDMA writes
 * @sink: the target of our RDMA reads
 * @psn: our initial send PSN
 * @mtu: the path MTU (the port's active MTU at pairing)
 * @peer: the other side
 * @seq: the last request number used
 * @result: what the run file reads
 * @cq_work: polls the CQ after a completion event
 * @done: completed when what a test waits for has happened
 * @event_handler: logs the device's events (the catastrophic-error test
 *	looks for them)
 * @lock: spinlock, taken with interrupts off (the CQ handler takes it);
 *	guards @dying, @gen, @paired, the wait_* fields and @stats
 * @dying: set once teardown began: the CQ handler queues no more work
 * @gen: generation of the QPs' work requests, bumped at every pairing;
 *	completions of older generations are dropped
 * @paired: a peer was written and the QPs are connected to it
 * @wait_kind: what the running test waits for
 * @wait_seq: the request it waits on
 * @wait_result: 0 or a negative errno, set when @done completes
 * @wait_bad: from a failed ACK, the peer's first bad offset
 * @wait_wc_status: from a failed completion, its status
 * @stats: counters for the stats file
 *
 * Everything but the fields under @lock belongs to whoever holds
 * st_mutex (the control files, client add/remove), or to the CQ worker
 * for the receive buffers and @ack.
 */
struct st_dev {
	struct ib_device	*device;
	struct ib_pd		*pd;
	struct ib_mr		*mr;
	struct ib_mr		*region_mr;
	struct ib_cq		*cq;
	struct ib_qp		*rc_qp;
	struct ib_qp		*ud_qp;
	struct ib_ah		*ah;
	struct st_buf		rc_rx[ST_RX_DEPTH];
	struct st_buf		ud_rx[ST_RX_DEPTH];
	struct st_buf		tx, ack, region, src, sink;
	u32			psn;
	enum ib_mtu		mtu;
	struct st_peer		peer;
	u32			seq;
	char			result[160];

	struct work_struct	cq_work;
	struct completion	done;
	struct ib_event_handler	event_handler;

	spinlock_t		lock;	/* see @lock above */
	bool			dying;
	u16			gen;
	bool			paired;
	enum st_wait_kind	wait_kind;
	u32			wait_seq;
	int			wait_result;
	u32			wait_bad;
	enum ib_wc_status	wait_wc_status;
	struct st_stats		stats;
};

/*
 * st_mutex: serializes the control files against each other and against
 * client add/remove, and guards st_current (the device the files act on).
 * A running test holds it while it waits, at most a few timeouts long.
 */
static DEFINE_MUTEX(st_mutex);
static struct st_dev *st_current;
static struct workqueue_struct *st_wq;
static struct kobject *st_kobj;
static struct ib_client st_client;

/* ---- the pattern -------------------------------------------------------- */

static u32 st_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/**
 * st_fill() - fill a buffer with the pattern of a seed
 * @p: the buffer
 * @len: bytes
 * @seed: the seed
 */
static void st_fill(u8 *p, size_t len, u32 seed)
{
	u32 state = seed | 1, word = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 3))
			word = st_rand(&state);
		p[i] = word >> (8 * (i & 3));
	}
}

/**
 * st_check() - compare a buffer with the pattern of a seed
 * @p: the buffer
 * @len: bytes
 * @seed: the seed
 *
 * Return: -1 when all @len bytes match, else the offset of the first
 * byte that does not.
 */
static long st_check(const u8 *p, size_t len, u32 seed)
{
	u32 state = seed | 1, word = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 3))
			word = st_rand(&state);
		if (p[i] != (u8)(word >> (8 * (i & 3))))
			return i;
	}
	return -1;
}

/* ---- buffers ------------------------------------------------------------ */

static int st_buf_alloc(struct st_dev *sd, struct st_buf *b, size_t size)
{
	b->cpu = kzalloc(size, GFP_KERNEL);
	if (!b->cpu)
		return -ENOMEM;
	b->size = size;
	b->dma = dma_map_single(sd->device->dma_device, b->cpu, size,
				DMA_BIDIRECTIONAL);
	if (dma_mapping_error(sd->device->dma_device, b->dma)) {
		kfree(b->cpu);
		b->cpu = NULL;
		return -EIO;
	}
	return 0;
}

static void st_buf_free(struct st_dev *sd, struct st_buf *b)
{
	if (!b->cpu)
		return;
	dma_unmap_single(sd->device->dma_device, b->dma, b->size,
			 DMA_BIDIRECTIONAL);
	kfree(b->cpu);
	b->cpu = NULL;
}

static void st_for_cpu(struct st_dev *sd, struct st_buf *b)
{
	dma_sync_single_for_cpu(sd->device->dma_device, b->dma, b->size,
				DMA_BIDIRECTIONAL);
}

static void st_for_device(struct st_dev *sd, struct st_buf *b)
{
	dma_sync_single_for_device(sd->device->dma_device, b->dma, b->size,
				   DMA_BIDIRECTIONAL);
}

/* ---- posting ------------------------------------------------------------ */

static int st_post_recv(struct st_dev *sd, bool ud, u32 idx, u16 gen)
{
	struct st_buf *b = ud ? &sd->ud_rx[idx] : &sd->rc_rx[idx];
	struct ib_sge sge = {
		.addr = b->dma,
		.length = b->size,
		.lkey = sd->mr->lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = ST_WRID(gen, ud ? ST_WR_UD_RECV : ST_WR_RC_RECV, idx),
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ib_recv_wr *bad;

	st_for_device(sd, b);
	return ib_post_recv(ud ? sd->ud_qp : sd->rc_qp, &wr, &bad);
}

/*
 * Posts one signaled send work request of @len bytes from @b: on the UD QP
 * to the peer's UD QP when @ud, else on the RC QP (a send, or an RDMA
 * operation at @roff bytes into the peer's region when @opcode says so).
 */
static int st_post_send(struct st_dev *sd, bool ud, struct st_buf *b,
			u32 len, enum ib_wr_opcode opcode, u64 wr_id, u64 roff)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = len,
		.lkey = sd->mr->lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = opcode,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_send_wr *bad;

	if (ud) {
		wr.wr.ud.ah = sd->ah;
		wr.wr.ud.remote_qpn = sd->peer.ud_qpn;
		wr.wr.ud.remote_qkey = ST_QKEY;
	} else if (opcode == IB_WR_RDMA_WRITE || opcode == IB_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = sd->peer.addr + roff;
		wr.wr.rdma.rkey = sd->peer.rkey;
	}
	st_for_device(sd, b);
	return ib_post_send(ud ? sd->ud_qp : sd->rc_qp, &wr, &bad);
}

/* ---- the receiving side and the completion worker ------------------------ */

/* Ends the wait of the running test if it waits for this. */
static void st_finish(struct st_dev *sd, enum st_wait_kind kind, u32 seq,
		      int result, u32 bad, enum ib_wc_status wc_status)
{
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	if (sd->wait_kind != ST_WAIT_NONE && sd->wait_seq == seq &&
	    (sd->wait_kind == kind || result)) {
		sd->wait_kind = ST_WAIT_NONE;
		sd->wait_result = result;
		sd->wait_bad = bad;
		sd->wait_wc_status = wc_status;
		complete(&sd->done);
	}
	spin_unlock_irqrestore(&sd->lock, flags);
}

/* Sends the verdict on request @seq back the way it came. */
static void st_send_ack(struct st_dev *sd, bool ud, u32 seq, long bad_at,
			u16 gen)
{
	struct st_msg *m = sd->ack.cpu;
	int ret;

	if (ud && !sd->ah)
		return;
	st_for_cpu(sd, &sd->ack);
	memset(m, 0, sizeof(*m));
	m->magic = cpu_to_be32(ST_MAGIC);
	m->type = ST_MSG_ACK;
	m->status = bad_at < 0 ? 0 : 1;
	m->seq = cpu_to_be32(seq);
	m->bad_offset = cpu_to_be32(bad_at < 0 ? 0 : (u32)bad_at);
	ret = st_post_send(sd, ud, &sd->ack, sizeof(*m), IB_WR_SEND,
			   ST_WRID(gen, ST_WR_ACK, seq), 0);
	if (ret)
		pr_info("ib_selftest: ACK of %u not sent: %d\n", seq, ret);
}

static void st_count(struct st_dev *sd, unsigned long *counter)
{
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	(*counter)++;
	spin_unlock_irqrestore(&sd->lock, flags);
}

/* One received message: @m with @bytes after any GRH. */
static void st_handle_msg(struct st_dev *sd, bool ud, struct st_msg *m,
			  u32 bytes, u16 gen)
{
	u32 len, seed, seq;
	long bad_at;

	if (bytes < sizeof(*m) || be32_to_cpu(m->magic) != ST_MAGIC) {
		st_count(sd, &sd->stats.bad_msgs);
		return;
	}
	len = be32_to_cpu(m->len);
	seed = be32_to_cpu(m->seed);
	seq = be32_to_cpu(m->seq);

	switch (m->type) {
	case ST_MSG_DATA:
		if (len != bytes - sizeof(*m)) {
			st_count(sd, &sd->stats.bad_msgs);
			return;
		}
		bad_at = st_check((u8 *)(m + 1), len, seed);
		if (ud)
			st_count(sd, bad_at < 0 ? &sd->stats.ud_recv_ok :
				 &sd->stats.ud_recv_bad);
		else
			st_count(sd, bad_at < 0 ? &sd->stats.rc_recv_ok :
				 &sd->stats.rc_recv_bad);
		st_send_ack(sd, ud, seq, bad_at, gen);
		break;
	case ST_MSG_CHECK:
		if (ud || len > sd->region.size) {
			st_count(sd, &sd->stats.bad_msgs);
			return;
		}
		st_for_cpu(sd, &sd->region);
		bad_at = st_check(sd->region.cpu, len, seed);
		st_count(sd, bad_at < 0 ? &sd->stats.region_checks_ok :
			 &sd->stats.region_checks_bad);
		st_send_ack(sd, false, seq, bad_at, gen);
		break;
	case ST_MSG_FILL:
		if (ud || len > sd->region.size) {
			st_count(sd, &sd->stats.bad_msgs);
			return;
		}
		st_for_cpu(sd, &sd->region);
		st_fill(sd->region.cpu, len, seed);
		st_for_device(sd, &sd->region);
		st_count(sd, &sd->stats.region_fills);
		st_send_ack(sd, false, seq, -1, gen);
		break;
	case ST_MSG_ACK:
		st_finish(sd, ST_WAIT_ACK, seq, m->status ? -EILSEQ : 0,
			  be32_to_cpu(m->bad_offset), IB_WC_SUCCESS);
		break;
	default:
		st_count(sd, &sd->stats.bad_msgs);
	}
}

static void st_handle_wc(struct st_dev *sd, struct ib_wc *wc)
{
	u16 gen = ST_WRID_GEN(wc->wr_id);
	u32 idx = ST_WRID_IDX(wc->wr_id);
	u8 kind = ST_WRID_KIND(wc->wr_id);
	unsigned long flags;
	bool current_gen;
	struct st_buf *b;
	bool ud;

	spin_lock_irqsave(&sd->lock, flags);
	current_gen = gen == sd->gen && !sd->dying;
	spin_unlock_irqrestore(&sd->lock, flags);

	switch (kind) {
	case ST_WR_RC_RECV:
	case ST_WR_UD_RECV:
		/* Flushed or stale receives are not posted again. */
		if (!current_gen || wc->status != IB_WC_SUCCESS ||
		    idx >= ST_RX_DEPTH)
			return;
		ud = kind == ST_WR_UD_RECV;
		b = ud ? &sd->ud_rx[idx] : &sd->rc_rx[idx];
		st_for_cpu(sd, b);
		if (ud) {
			if (wc->byte_len < ST_GRH_BYTES) {
				st_count(sd, &sd->stats.bad_msgs);
			} else {
				st_handle_msg(sd, true, b->cpu + ST_GRH_BYTES,
					      wc->byte_len - ST_GRH_BYTES, gen);
			}
		} else {
			st_handle_msg(sd, false, b->cpu, wc->byte_len, gen);
		}
		if (st_post_recv(sd, ud, idx, gen))
			pr_info("ib_selftest: receive %u not posted again\n",
				idx);
		break;
	case ST_WR_REQ:
		if (!current_gen)
			return;
		st_finish(sd, ST_WAIT_WC, idx,
			  wc->status == IB_WC_SUCCESS ? 0 : -EIO, 0,
			  wc->status);
		break;
	case ST_WR_ACK:
		if (wc->status != IB_WC_SUCCESS && current_gen)
			pr_info("ib_selftest: ACK %u: %s\n", idx,
				ib_wc_status_msg(wc->status));
		break;
	}
}

static void st_cq_work(struct work_struct *work)
{
	struct st_dev *sd = container_of(work, struct st_dev, cq_work);
	struct ib_wc wc[8];
	bool armed = false;
	int n, i;

	for (;;) {
		n = ib_poll_cq(sd->cq, ARRAY_SIZE(wc), wc);
		if (n > 0) {
			for (i = 0; i < n; i++)
				st_handle_wc(sd, &wc[i]);
			continue;
		}
		if (n < 0 || armed)
			break;
		/* Arm, then look once more for what came in meanwhile. */
		if (ib_req_notify_cq(sd->cq, IB_CQ_NEXT_COMP))
			break;
		armed = true;
	}
}

static void st_cq_event(struct ib_cq *cq, void *context)
{
	struct st_dev *sd = context;
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	if (!sd->dying)
		queue_work(st_wq, &sd->cq_work);
	spin_unlock_irqrestore(&sd->lock, flags);
}

static void st_async_event(struct ib_event *event, void *context)
{
	pr_info("ib_selftest: %s: %s\n", event->device->name,
		ib_event_msg(event->event));
}

/* Device-wide events (port changes, a catastrophic error), for the log. */
static void st_device_event(struct ib_event_handler *handler,
			    struct ib_event *event)
{
	if (event->event == IB_EVENT_DEVICE_FATAL)
		pr_info("ib_selftest: %s: device event: %s\n",
			event->device->name, ib_event_msg(event->event));
	else
		pr_info("ib_selftest: %s: device event: %s (port %u)\n",
			event->device->name, ib_event_msg(event->event),
			event->element.port_num);
}

/* ---- pairing -------------------------------------------------------------- */

static int st_modify(struct ib_qp *qp, struct ib_qp_attr *attr, int mask)
{
	int ret = ib_modify_qp(qp, attr, mask);

	if (ret)
		pr_info("ib_selftest: QP 0x%x to state %d: %d\n", qp->qp_num,
			attr->qp_state, ret);
	return ret;
}

static int st_reset(struct st_dev *sd)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };
	int ret;

	ret = st_modify(sd->rc_qp, &attr, IB_QP_STATE);
	if (!ret)
		ret = st_modify(sd->ud_qp, &attr, IB_QP_STATE);
	return ret;
}

/* The UD QP from RESET to RTS, receives posted. */
static int st_ud_up(struct st_dev *sd, u16 gen)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = ST_PORT,
		.qkey = ST_QKEY,
	};
	int ret, i;

	ret = st_modify(sd->ud_qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			IB_QP_PORT | IB_QP_QKEY);
	for (i = 0; !ret && i < ST_RX_DEPTH; i++)
		ret = st_post_recv(sd, true, i, gen);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTR;
	ret = st_modify(sd->ud_qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = sd->psn;
	return st_modify(sd->ud_qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

/* The RC QP from RESET to RTS, connected to the peer, receives posted. */
static int st_rc_up(struct st_dev *sd, u16 gen)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = ST_PORT,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ,
	};
	int ret, i;

	ret = st_modify(sd->rc_qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	for (i = 0; !ret && i < ST_RX_DEPTH; i++)
		ret = st_post_recv(sd, false, i, gen);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = sd->mtu;
	attr.dest_qp_num = sd->peer.rc_qpn;
	attr.rq_psn = sd->peer.psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = IB_RNR_TIMER_000_16;
	attr.ah_attr.dlid = sd->peer.lid;
	attr.ah_attr.port_num = ST_PORT;
	ret = st_modify(sd->rc_qp, &attr, IB_QP_STATE | IB_QP_AV |
			IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = sd->psn;
	attr.timeout = ST_ACK_TIMEOUT;
	attr.retry_cnt = ST_RETRY_CNT;
	attr.rnr_retry = ST_RNR_RETRY;
	attr.max_rd_atomic = 1;
	return st_modify(sd->rc_qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			 IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			 IB_QP_MAX_QP_RD_ATOMIC);
}

/**
 * st_pair() - connect to a peer, from RESET
 * @sd: our state
 * @peer: the other side
 *
 * Called with st_mutex held.  Work requests of the previous pairing are
 * discarded with the QPs' reset; their late completions are recognized by
 * their generation and dropped.
 *
 * Return: 0, or a negative errno (the QPs are then left unpaired).
 */
static int st_pair(struct st_dev *sd, const struct st_peer *peer)
{
	struct ib_ah_attr ah_attr = {};
	struct ib_port_attr port;
	unsigned long flags;
	struct ib_ah *ah;
	u16 gen;
	int ret;

	ret = ib_query_port(sd->device, ST_PORT, &port);
	if (ret)
		return ret;

	spin_lock_irqsave(&sd->lock, flags);
	sd->paired = false;
	gen = ++sd->gen;
	spin_unlock_irqrestore(&sd->lock, flags);

	ret = st_reset(sd);
	if (ret)
		return ret;
	flush_work(&sd->cq_work);

	if (sd->ah) {
		ib_destroy_ah(sd->ah);
		sd->ah = NULL;
	}
	ah_attr.dlid = peer->lid;
	ah_attr.port_num = ST_PORT;
	ah = ib_create_ah(sd->pd, &ah_attr);
	if (IS_ERR(ah))
		return PTR_ERR(ah);
	sd->ah = ah;
	sd->peer = *peer;
	sd->mtu = min_t(enum ib_mtu, port.active_mtu, IB_MTU_2048);
	if (sd->mtu < IB_MTU_256)
		sd->mtu = IB_MTU_256;

	ret = st_ud_up(sd, gen);
	if (!ret)
		ret = st_rc_up(sd, gen);
	if (ret)
		return ret;

	spin_lock_irqsave(&sd->lock, flags);
	sd->paired = true;
	spin_unlock_irqrestore(&sd->lock, flags);
	return ib_req_notify_cq(sd->cq, IB_CQ_NEXT_COMP);
}

/* ---- the tests ------------------------------------------------------------- */

/*
 * Prepares to wait for @kind of request @seq; the wait itself is
 * st_wait(), after the request was posted.
 */
static void st_expect(struct st_dev *sd, enum st_wait_kind kind, u32 seq)
{
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	reinit_completion(&sd->done);
	sd->wait_kind = kind;
	sd->wait_seq = seq;
	sd->wait_result = -EINPROGRESS;
	sd->wait_bad = 0;
	sd->wait_wc_status = IB_WC_SUCCESS;
	spin_unlock_irqrestore(&sd->lock, flags);
}

static void st_cancel_wait(struct st_dev *sd)
{
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	sd->wait_kind = ST_WAIT_NONE;
	spin_unlock_irqrestore(&sd->lock, flags);
}

/*
 * Waits for what st_expect() named; on failure, describes it after
 * @what in sd->result.  Return: 0 or a negative errno.
 */
static int st_wait(struct st_dev *sd, const char *test, const char *what)
{
	unsigned int limit = READ_ONCE(timeout_ms);
	unsigned long flags;
	int ret;

	if (!wait_for_completion_timeout(&sd->done, msecs_to_jiffies(limit))) {
		st_cancel_wait(sd);
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL %s: no %s within %u ms\n", test, what, limit);
		return -ETIMEDOUT;
	}
	spin_lock_irqsave(&sd->lock, flags);
	ret = sd->wait_result;
	spin_unlock_irqrestore(&sd->lock, flags);
	if (ret == -EIO)
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL %s: %s: completion status %s\n", test, what,
			 ib_wc_status_msg(sd->wait_wc_status));
	else if (ret == -EILSEQ)
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL %s: the peer found bad data at offset %u\n",
			 test, sd->wait_bad);
	else if (ret)
		snprintf(sd->result, sizeof(sd->result), "FAIL %s: %s: %d\n",
			 test, what, ret);
	return ret;
}

static u16 st_gen(struct st_dev *sd)
{
	unsigned long flags;
	u16 gen;

	spin_lock_irqsave(&sd->lock, flags);
	gen = sd->gen;
	spin_unlock_irqrestore(&sd->lock, flags);
	return gen;
}

/*
 * Sends a message (over UD when @ud) of @payload pattern bytes from @seed,
 * with @type, and waits for the peer's ACK.  DATA messages carry the
 * pattern; CHECK and FILL only name it.
 */
static int st_request(struct st_dev *sd, const char *test, bool ud, u8 type,
		      u32 seed, u32 len)
{
	struct st_msg *m = sd->tx.cpu;
	u32 seq = ++sd->seq;
	u32 bytes = sizeof(*m);
	int ret;

	st_for_cpu(sd, &sd->tx);
	memset(m, 0, sizeof(*m));
	m->magic = cpu_to_be32(ST_MAGIC);
	m->type = type;
	m->seq = cpu_to_be32(seq);
	m->seed = cpu_to_be32(seed);
	m->len = cpu_to_be32(len);
	if (type == ST_MSG_DATA) {
		st_fill((u8 *)(m + 1), len, seed);
		bytes += len;
	}
	st_expect(sd, ST_WAIT_ACK, seq);
	ret = st_post_send(sd, ud, &sd->tx, bytes, IB_WR_SEND,
			   ST_WRID(st_gen(sd), ST_WR_REQ, seq), 0);
	if (ret) {
		st_cancel_wait(sd);
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL %s: post send: %d\n", test, ret);
		return ret;
	}
	return st_wait(sd, test, "acknowledgment from the peer");
}

/*
 * An RDMA write or read of @len bytes between @b and the peer's region, at
 * @roff bytes into it.
 */
static int st_rdma(struct st_dev *sd, const char *test, enum ib_wr_opcode op,
		   struct st_buf *b, u32 len, u64 roff)
{
	u32 seq = ++sd->seq;
	int ret;

	st_expect(sd, ST_WAIT_WC, seq);
	ret = st_post_send(sd, false, b, len, op,
			   ST_WRID(st_gen(sd), ST_WR_REQ, seq), roff);
	if (ret) {
		st_cancel_wait(sd);
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL %s: post send: %d\n", test, ret);
		return ret;
	}
	return st_wait(sd, test, op == IB_WR_RDMA_READ ?
		       "RDMA read completion" : "RDMA write completion");
}

/* A send test: @len bytes of data the peer verifies, over RC or UD. */
static int st_send_test(struct st_dev *sd, const char *test, bool ud, u32 len)
{
	int ret;

	ret = st_request(sd, test, ud, ST_MSG_DATA, get_random_u32(), len);
	if (!ret)
		snprintf(sd->result, sizeof(sd->result),
			 "PASS %s: %u bytes verified by the peer\n", test, len);
	return ret;
}

static int st_test_rc_send(struct st_dev *sd)
{
	return st_send_test(sd, "rc_send", false,
			    ST_MSG_BYTES - sizeof(struct st_msg));
}

static int st_test_ud_send(struct st_dev *sd)
{
	return st_send_test(sd, "ud_send", true,
			    min_t(u32, ib_mtu_enum_to_int(sd->mtu), ST_UD_MAX) -
			    sizeof(struct st_msg));
}

static int st_test_rdma_write(struct st_dev *sd)
{
	u32 len = ST_REGION_BYTES, seed = get_random_u32();
	int ret;

	st_for_cpu(sd, &sd->src);
	st_fill(sd->src.cpu, len, seed);
	ret = st_rdma(sd, "rdma_write", IB_WR_RDMA_WRITE, &sd->src, len, 0);
	if (ret)
		return ret;
	/* The CHECK follows the write on the same connection. */
	ret = st_request(sd, "rdma_write", false, ST_MSG_CHECK, seed, len);
	if (!ret)
		snprintf(sd->result, sizeof(sd->result),
			 "PASS rdma_write: %u bytes verified by the peer\n",
			 len);
	return ret;
}

static int st_test_rdma_read(struct st_dev *sd)
{
	u32 len = ST_REGION_BYTES, seed = get_random_u32();
	long bad_at;
	int ret;

	ret = st_request(sd, "rdma_read", false, ST_MSG_FILL, seed, len);
	if (ret)
		return ret;
	st_for_cpu(sd, &sd->sink);
	memset(sd->sink.cpu, 0, len);
	ret = st_rdma(sd, "rdma_read", IB_WR_RDMA_READ, &sd->sink, len, 0);
	if (ret)
		return ret;
	st_for_cpu(sd, &sd->sink);
	bad_at = st_check(sd->sink.cpu, len, seed);
	if (bad_at >= 0) {
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL rdma_read: bad data at offset %ld\n", bad_at);
		return -EILSEQ;
	}
	snprintf(sd->result, sizeof(sd->result),
		 "PASS rdma_read: %u bytes read and verified\n", len);
	return 0;
}

/*
 * The peer's rkey covers its region and nothing else: an RDMA read of the
 * bytes just past the region must be refused by the peer's HCA with a
 * remote access error.  A read, not a write, so that a peer which wrongly
 * allowed it would not have its memory overwritten.  The RC QP ends in the
 * error state: write peer again (on both sides) before the next test.
 */
static int st_test_rdma_bounds(struct st_dev *sd)
{
	int ret;

	ret = st_rdma(sd, "rdma_bounds", IB_WR_RDMA_READ, &sd->sink,
		      ST_BOUNDS_PROBE, ST_REGION_BYTES);
	if (!ret) {
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL rdma_bounds: the peer let %u bytes past its region be read\n",
			 ST_BOUNDS_PROBE);
		return -EACCES;
	}
	if (ret == -EIO && sd->wait_wc_status == IB_WC_REM_ACCESS_ERR) {
		snprintf(sd->result, sizeof(sd->result),
			 "PASS rdma_bounds: a read past the peer's region was refused (%s)\n",
			 ib_wc_status_msg(sd->wait_wc_status));
		return 0;
	}
	return ret;
}

/* One attribute ib_query_qp() gave back, against what st_pair() set. */
static bool st_attr_ok(struct st_dev *sd, const char *what, u32 got, u32 want)
{
	if (got == want)
		return true;
	snprintf(sd->result, sizeof(sd->result),
		 "FAIL query_qp: %s is 0x%x, not 0x%x\n", what, got, want);
	return false;
}

/*
 * ib_query_qp() of both QPs gives back what pairing set (the PSNs move with
 * the traffic, so they are left out).  The driver reads the attributes
 * from the HCA's QP context, not from a copy of its own.
 */
static int st_test_query_qp(struct st_dev *sd)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr a;
	int ret;

	ret = ib_query_qp(sd->rc_qp, &a, IB_QP_STATE, &init);
	if (ret) {
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL query_qp: RC QP: %d\n", ret);
		return ret;
	}
	if (!st_attr_ok(sd, "RC state", a.qp_state, IB_QPS_RTS) ||
	    !st_attr_ok(sd, "path_mtu", a.path_mtu, sd->mtu) ||
	    !st_attr_ok(sd, "dest_qp_num", a.dest_qp_num, sd->peer.rc_qpn) ||
	    !st_attr_ok(sd, "dlid", a.ah_attr.dlid, sd->peer.lid) ||
	    !st_attr_ok(sd, "port_num", a.port_num, ST_PORT) ||
	    !st_attr_ok(sd, "qp_access_flags", a.qp_access_flags,
			IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ) ||
	    !st_attr_ok(sd, "max_dest_rd_atomic", a.max_dest_rd_atomic, 1) ||
	    !st_attr_ok(sd, "max_rd_atomic", a.max_rd_atomic, 1) ||
	    !st_attr_ok(sd, "min_rnr_timer", a.min_rnr_timer,
			IB_RNR_TIMER_000_16) ||
	    !st_attr_ok(sd, "timeout", a.timeout, ST_ACK_TIMEOUT) ||
	    !st_attr_ok(sd, "retry_cnt", a.retry_cnt, ST_RETRY_CNT) ||
	    !st_attr_ok(sd, "rnr_retry", a.rnr_retry, ST_RNR_RETRY))
		return -EINVAL;

	ret = ib_query_qp(sd->ud_qp, &a, IB_QP_STATE, &init);
	if (ret) {
		snprintf(sd->result, sizeof(sd->result),
			 "FAIL query_qp: UD QP: %d\n", ret);
		return ret;
	}
	if (!st_attr_ok(sd, "UD state", a.qp_state, IB_QPS_RTS) ||
	    !st_attr_ok(sd, "qkey", a.qkey, ST_QKEY) ||
	    !st_attr_ok(sd, "UD port_num", a.port_num, ST_PORT))
		return -EINVAL;
	snprintf(sd->result, sizeof(sd->result),
		 "PASS query_qp: the RC and UD QPs read back as set\n");
	return 0;
}

/* The tests of "all": each leaves the QPs ready for the next. */
static const struct {
	const char *name;
	int (*run)(struct st_dev *sd);
} st_tests[] = {
	{ "query_qp", st_test_query_qp },
	{ "rc_send", st_test_rc_send },
	{ "rdma_write", st_test_rdma_write },
	{ "rdma_read", st_test_rdma_read },
	{ "ud_send", st_test_ud_send },
};

/* ---- setup and teardown ---------------------------------------------------- */

static void st_teardown(struct st_dev *sd)
{
	unsigned long flags;
	int i;

	spin_lock_irqsave(&sd->lock, flags);
	sd->dying = true;
	spin_unlock_irqrestore(&sd->lock, flags);
	if (sd->cq)
		cancel_work_sync(&sd->cq_work);

	if (sd->rc_qp)
		ib_destroy_qp(sd->rc_qp);
	if (sd->ud_qp)
		ib_destroy_qp(sd->ud_qp);
	if (sd->ah)
		ib_destroy_ah(sd->ah);
	if (sd->cq)
		ib_destroy_cq(sd->cq);
	if (sd->region_mr)
		ib_dereg_mr(sd->region_mr);
	if (sd->mr)
		ib_dereg_mr(sd->mr);
	if (sd->pd)
		ib_dealloc_pd(sd->pd);
	for (i = 0; i < ST_RX_DEPTH; i++) {
		st_buf_free(sd, &sd->rc_rx[i]);
		st_buf_free(sd, &sd->ud_rx[i]);
	}
	st_buf_free(sd, &sd->tx);
	st_buf_free(sd, &sd->ack);
	st_buf_free(sd, &sd->region);
	st_buf_free(sd, &sd->src);
	st_buf_free(sd, &sd->sink);
	kfree(sd);
}

static struct ib_qp *st_create_qp(struct st_dev *sd, enum ib_qp_type type)
{
	struct ib_qp_init_attr init = {
		.event_handler = st_async_event,
		.qp_context = sd,
		.send_cq = sd->cq,
		.recv_cq = sd->cq,
		.cap = {
			.max_send_wr = ST_SQ_DEPTH,
			.max_recv_wr = ST_RX_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = type,
	};

	return ib_create_qp(sd->pd, &init);
}

/*
 * The peer's RDMA writes and reads may reach @region and nothing else: a
 * memory region of its own, at the region's DMA address (kmalloc memory,
 * so physically contiguous).
 */
static struct ib_mr *st_reg_region(struct st_dev *sd)
{
	struct ib_phys_buf buf = {
		.addr = sd->region.dma,
		.size = sd->region.size,
	};
	u64 iova = sd->region.dma;

	return ib_reg_phys_mr(sd->pd, &buf, 1, IB_ACCESS_LOCAL_WRITE |
			      IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE,
			      &iova);
}

static int st_setup(struct st_dev *sd)
{
	struct ib_qp *qp;
	int ret = 0, i;

	for (i = 0; !ret && i < ST_RX_DEPTH; i++) {
		ret = st_buf_alloc(sd, &sd->rc_rx[i], ST_MSG_BYTES);
		if (!ret)
			ret = st_buf_alloc(sd, &sd->ud_rx[i],
					   ST_GRH_BYTES + ST_UD_MAX);
	}
	if (!ret)
		ret = st_buf_alloc(sd, &sd->tx, ST_MSG_BYTES);
	if (!ret)
		ret = st_buf_alloc(sd, &sd->ack, sizeof(struct st_msg));
	if (!ret)
		ret = st_buf_alloc(sd, &sd->region, ST_REGION_BYTES);
	if (!ret)
		ret = st_buf_alloc(sd, &sd->src, ST_REGION_BYTES);
	if (!ret)
		ret = st_buf_alloc(sd, &sd->sink, ST_REGION_BYTES);
	if (ret)
		return ret;

	sd->pd = ib_alloc_pd(sd->device);
	if (IS_ERR(sd->pd)) {
		ret = PTR_ERR(sd->pd);
		sd->pd = NULL;
		return ret;
	}
	sd->mr = ib_get_dma_mr(sd->pd, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(sd->mr)) {
		ret = PTR_ERR(sd->mr);
		sd->mr = NULL;
		return ret;
	}
	sd->region_mr = st_reg_region(sd);
	if (IS_ERR(sd->region_mr)) {
		ret = PTR_ERR(sd->region_mr);
		sd->region_mr = NULL;
		return ret;
	}
	sd->cq = ib_create_cq(sd->device, st_cq_event, st_async_event, sd,
			      ST_CQ_DEPTH);
	if (IS_ERR(sd->cq)) {
		ret = PTR_ERR(sd->cq);
		sd->cq = NULL;
		return ret;
	}
	qp = st_create_qp(sd, IB_QPT_RC);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	sd->rc_qp = qp;
	qp = st_create_qp(sd, IB_QPT_UD);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	sd->ud_qp = qp;
	return ib_req_notify_cq(sd->cq, IB_CQ_NEXT_COMP);
}

static void st_add_one(struct ib_device *device)
{
	struct st_dev *sd;
	int ret;

	if (device->node_type != IB_NODE_CA)
		return;
	mutex_lock(&st_mutex);
	if (st_current) {
		mutex_unlock(&st_mutex);
		pr_info("ib_selftest: %s: already testing another device\n",
			device->name);
		return;
	}
	mutex_unlock(&st_mutex);

	sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return;
	sd->device = device;
	spin_lock_init(&sd->lock);
	INIT_WORK(&sd->cq_work, st_cq_work);
	init_completion(&sd->done);
	sd->psn = get_random_u32() & 0xffffff;
	sd->mtu = IB_MTU_1024;
	snprintf(sd->result, sizeof(sd->result), "none\n");

	ret = st_setup(sd);
	if (ret) {
		pr_info("ib_selftest: %s: setup failed: %d\n", device->name,
			ret);
		st_teardown(sd);
		return;
	}

	mutex_lock(&st_mutex);
	if (st_current) {
		mutex_unlock(&st_mutex);
		st_teardown(sd);
		return;
	}
	st_current = sd;
	ib_set_client_data(device, &st_client, sd);
	INIT_IB_EVENT_HANDLER(&sd->event_handler, device, st_device_event);
	ib_register_event_handler(&sd->event_handler);
	mutex_unlock(&st_mutex);
	pr_info("ib_selftest: testing %s port %d\n", device->name, ST_PORT);
}

static void st_remove_one(struct ib_device *device)
{
	struct st_dev *sd;

	mutex_lock(&st_mutex);
	sd = ib_get_client_data(device, &st_client);
	if (!sd || sd != st_current) {
		mutex_unlock(&st_mutex);
		return;
	}
	st_current = NULL;
	ib_set_client_data(device, &st_client, NULL);
	mutex_unlock(&st_mutex);
	ib_unregister_event_handler(&sd->event_handler);
	st_teardown(sd);
}

static struct ib_client st_client = {
	.name = "ib_selftest",
	.add = st_add_one,
	.remove = st_remove_one,
};

/* ---- the control files ------------------------------------------------------ */

static ssize_t local_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct ib_port_attr port;
	struct st_dev *sd;
	ssize_t ret;

	mutex_lock(&st_mutex);
	sd = st_current;
	if (!sd) {
		ret = -ENODEV;
		goto out;
	}
	ret = ib_query_port(sd->device, ST_PORT, &port);
	if (ret)
		goto out;
	ret = sysfs_emit(buf, "0x%04x 0x%06x 0x%06x 0x%08x 0x%016llx 0x%06x\n",
			 port.lid, sd->rc_qp->qp_num, sd->ud_qp->qp_num,
			 sd->region_mr->rkey, (unsigned long long)sd->region.dma,
			 sd->psn);
out:
	mutex_unlock(&st_mutex);
	return ret;
}

static ssize_t peer_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct st_dev *sd;
	ssize_t ret;

	mutex_lock(&st_mutex);
	sd = st_current;
	if (!sd)
		ret = -ENODEV;
	else if (!sd->paired)
		ret = sysfs_emit(buf, "none\n");
	else
		ret = sysfs_emit(buf,
				 "0x%04x 0x%06x 0x%06x 0x%08x 0x%016llx 0x%06x\n",
				 sd->peer.lid, sd->peer.rc_qpn,
				 sd->peer.ud_qpn, sd->peer.rkey,
				 (unsigned long long)sd->peer.addr,
				 sd->peer.psn);
	mutex_unlock(&st_mutex);
	return ret;
}

/* Parses "lid rc_qpn ud_qpn rkey addr psn"; -EINVAL for anything else. */
static int st_parse_peer(const char *buf, struct st_peer *p)
{
	unsigned int lid, rc_qpn, ud_qpn, rkey, psn;
	unsigned long long addr;
	int used = 0;

	if (sscanf(buf, "%x %x %x %x %llx %x%n", &lid, &rc_qpn, &ud_qpn,
		   &rkey, &addr, &psn, &used) != 6)
		return -EINVAL;
	buf += used;
	while (*buf == ' ' || *buf == '\t' || *buf == '\n')
		buf++;
	if (*buf)
		return -EINVAL;
	/* A unicast LID, QP numbers of ordinary QPs, 24-bit PSN. */
	if (!lid || lid >= 0xc000 || rc_qpn < 2 || rc_qpn > 0xffffff ||
	    ud_qpn < 2 || ud_qpn > 0xffffff || psn > 0xffffff)
		return -EINVAL;
	*p = (struct st_peer){ .lid = lid, .rc_qpn = rc_qpn, .ud_qpn = ud_qpn,
			       .rkey = rkey, .addr = addr, .psn = psn };
	return 0;
}

static ssize_t peer_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct st_peer peer;
	struct st_dev *sd;
	int ret;

	ret = st_parse_peer(buf, &peer);
	if (ret)
		return ret;
	mutex_lock(&st_mutex);
	sd = st_current;
	ret = sd ? st_pair(sd, &peer) : -ENODEV;
	mutex_unlock(&st_mutex);
	return ret ? ret : count;
}

static ssize_t run_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	ssize_t ret;

	mutex_lock(&st_mutex);
	ret = st_current ? sysfs_emit(buf, "%s", st_current->result) :
			   -ENODEV;
	mutex_unlock(&st_mutex);
	return ret;
}

/* Runs every test in turn; stops at the first that fails. */
static void st_run_all(struct st_dev *sd)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(st_tests); i++)
		if (st_tests[i].run(sd))
			return;
	snprintf(sd->result, sizeof(sd->result),
		 "PASS all: query_qp rc_send rdma_write rdma_read ud_send\n");
}

static ssize_t run_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	struct st_dev *sd;
	int i, which = -1;
	ssize_t ret = count;

	for (i = 0; i < ARRAY_SIZE(st_tests); i++)
		if (sysfs_streq(buf, st_tests[i].name))
			which = i;
	if (which < 0 && !sysfs_streq(buf, "all") &&
	    !sysfs_streq(buf, "rdma_bounds"))
		return -EINVAL;

	mutex_lock(&st_mutex);
	sd = st_current;
	if (!sd)
		ret = -ENODEV;
	else if (!sd->paired)
		ret = -ENOTCONN;
	else if (sysfs_streq(buf, "rdma_bounds"))
		st_test_rdma_bounds(sd);
	else if (which < 0)
		st_run_all(sd);
	else
		st_tests[which].run(sd);
	if (sd && ret >= 0)
		pr_info("ib_selftest: %s", sd->result);
	mutex_unlock(&st_mutex);
	return ret;
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct st_stats s;
	unsigned long flags;
	struct st_dev *sd;
	ssize_t ret;

	mutex_lock(&st_mutex);
	sd = st_current;
	if (!sd) {
		mutex_unlock(&st_mutex);
		return -ENODEV;
	}
	spin_lock_irqsave(&sd->lock, flags);
	s = sd->stats;
	spin_unlock_irqrestore(&sd->lock, flags);
	ret = sysfs_emit(buf,
			 "rc_recv_ok %lu\nrc_recv_bad %lu\nud_recv_ok %lu\nud_recv_bad %lu\n"
			 "region_checks_ok %lu\nregion_checks_bad %lu\nregion_fills %lu\n"
			 "bad_msgs %lu\n",
			 s.rc_recv_ok, s.rc_recv_bad, s.ud_recv_ok, s.ud_recv_bad,
			 s.region_checks_ok, s.region_checks_bad,
			 s.region_fills, s.bad_msgs);
	mutex_unlock(&st_mutex);
	return ret;
}

/* local names a remote key: for root only. */
static struct kobj_attribute st_local_attr = __ATTR(local, 0400, local_show,
						    NULL);
static struct kobj_attribute st_peer_attr = __ATTR_RW(peer);
static struct kobj_attribute st_run_attr = __ATTR_RW(run);
static struct kobj_attribute st_stats_attr = __ATTR_RO(stats);

static struct attribute *st_attrs[] = {
	&st_local_attr.attr,
	&st_peer_attr.attr,
	&st_run_attr.attr,
	&st_stats_attr.attr,
	NULL,
};

static const struct attribute_group st_group = {
	.attrs = st_attrs,
};

static int __init st_init(void)
{
	int ret;

	st_wq = alloc_workqueue("ib_selftest", 0, 0);
	if (!st_wq)
		return -ENOMEM;
	st_kobj = kobject_create_and_add("ib_selftest", kernel_kobj);
	if (!st_kobj) {
		ret = -ENOMEM;
		goto err_wq;
	}
	ret = sysfs_create_group(st_kobj, &st_group);
	if (ret)
		goto err_kobj;
	ret = ib_register_client(&st_client);
	if (ret)
		goto err_kobj;
	return 0;

err_kobj:
	kobject_put(st_kobj);
err_wq:
	destroy_workqueue(st_wq);
	return ret;
}

static void __exit st_exit(void)
{
	/* Removing the files waits for control operations in progress. */
	kobject_put(st_kobj);
	ib_unregister_client(&st_client);
	destroy_workqueue(st_wq);
}

module_init(st_init);
module_exit(st_exit);
