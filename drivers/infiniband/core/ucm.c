// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_ucm: the communication manager for user space, ABI 5
 * (<rdma/ib_user_cm.h>, Documentation/ucm.md).
 *
 * One /dev/infiniband/ucmN per ib_device (class infiniband_cm, major 231,
 * minors 224 and up, mode 0600 like umadN: a ucm file can listen on any
 * service ID and answer for any QP number, so it is root's unless udev
 * says otherwise). Every command is one write() of a struct
 * ib_ucm_cmd_hdr and the command's structure, both of exact sizes.
 *
 * Lifetimes. A file owns its ids (xarray, per file: an id names nothing
 * outside it). An id is freed only after its cm_id is destroyed, which
 * waits for a running handler, so no handler sees a freed id; its queued
 * events are dropped under the file's mutex afterwards. Commands hold a
 * reference on the id they use; DESTROY_ID and close wait for those.
 * Lock order: ucm_device.lock, then ucm_file.mutex. The cm handler takes
 * only ucm_file.mutex, and nothing calls into ib_cm holding it.
 */

#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <rdma/ib_cm.h>
#include <rdma/ib_user_cm.h>
#include <rdma/ib_user_verbs.h>

MODULE_DESCRIPTION("ib_ucm: the InfiniBand CM for user space (/dev/infiniband/ucmN)");
MODULE_AUTHOR("ibstack");
MODULE_LICENSE("Dual BSD/GPL");

#define UCM_MAJOR	231
#define UCM_BASE_MINOR	224
#define UCM_MAX_DEVICES	32
/* The longest private data of any CM message (RTU, DREP). */
#define UCM_MAX_DATA	IB_CM_RTU_PRIVATE_DATA_SIZE
/* The longest ARI or additional info (REJ, APR, SIDR_REP). */
#define UCM_MAX_INFO	IB_CM_REJ_ARI_LENGTH
/* Above this max_events is clamped: 65536 events are about 34 MiB. */
#define UCM_EVENTS_CAP	65536

static unsigned int max_events = 1024;
module_param(max_events, uint, 0644);
MODULE_PARM_DESC(max_events,
		 "events queued per open file (1..65536, default 1024); when full, new connections are rejected and other events dropped, counted in events_dropped");

/*
 * Test only (tests/ucm/abi_check): each event handler sleeps this long
 * before it queues its event, so a test can destroy an id while a handler
 * of it is under way. Capped at 1000 ms.
 */
static unsigned int delay_handler_ms;
module_param(delay_handler_ms, uint, 0644);
MODULE_PARM_DESC(delay_handler_ms,
		 "test only: ms each event handler sleeps before queueing its event (0..1000, default 0)");

static unsigned int ucm_max_events(void)
{
	return clamp_t(unsigned int, READ_ONCE(max_events), 1, UCM_EVENTS_CAP);
}

/**
 * struct ucm_device - /dev/infiniband/ucmN of one ib_device
 * @dev: the class device; its reference count keeps this structure
 * @cdev: the character device
 * @ib_dev: the device; used only while @rwsem is read-held and !@dead
 * @devnum: N
 * @rwsem: commands that reach ib_cm hold it for reading; remove() for
 *	writing while it sets @dead and destroys every id
 * @dead: the ib_device is going or gone (under @rwsem)
 * @lock: guards @files
 * @files: the open files (struct ucm_file.list)
 * @events_dropped: events lost to a full queue (sysfs events_dropped)
 */
struct ucm_device {
	struct device		dev;
	struct cdev		cdev;
	struct ib_device	*ib_dev;
	int			devnum;
	struct rw_semaphore	rwsem;
	bool			dead;
	struct mutex		lock;	/* guards @files; before ucm_file.mutex */
	struct list_head	files;
	atomic64_t		events_dropped;
};

/**
 * struct ucm_file - one open file of ucmN
 * @udev: its device (a reference on @udev->dev)
 * @mutex: guards @ctxs, @events, @n_events, @closed and each id's uid
 *	and events_reported; never held across a call into ib_cm or a
 *	user copy
 * @ctxs: id -> struct ucm_ctx
 * @next_id: where the cyclic allocation of ids goes on, so a destroyed
 *	id's number is not handed out again at once
 * @events: queued struct ucm_event, oldest first
 * @n_events: their number, at most ucm_max_events()
 * @closed: no new id may be added (close or device removal)
 * @wait: woken when an event is queued or the device goes
 * @list: on @udev->files, under @udev->lock
 * @filp: the file, for the credential check
 */
struct ucm_file {
	struct ucm_device	*udev;
	struct mutex		mutex;	/* see above; the cm handler takes it */
	struct xarray		ctxs;
	u32			next_id;
	struct list_head	events;
	unsigned int		n_events;
	bool			closed;
	wait_queue_head_t	wait;
	struct list_head	list;
	struct file		*filp;
};

/**
 * struct ucm_ctx - one id of a file
 * @file: the owner
 * @cm_id: its cm_id, destroyed before the ctx is freed
 * @uid: the user's tag, returned in every event (under @file->mutex)
 * @id: its key in @file->ctxs
 * @events_reported: events delivered by EVENT (under @file->mutex)
 * @refs: one for the table, one per command using it
 * @done: completed when @refs reaches zero
 */
struct ucm_ctx {
	struct ucm_file		*file;
	struct ib_cm_id		*cm_id;
	u64			uid;
	u32			id;
	u32			events_reported;
	refcount_t		refs;
	struct completion	done;
};

/**
 * struct ucm_event - a queued event, with copies of what it carried
 * @list: on the file's @events
 * @ctx: the id it is for (alive while the event is queued)
 * @resp: the answer of EVENT, filled but for @resp.present
 * @data_len: bytes of @data
 * @info_len: bytes of @info
 * @data: the message's private data
 * @info: the ARI or additional info
 */
struct ucm_event {
	struct list_head	list;
	struct ucm_ctx		*ctx;
	struct ib_ucm_event_resp resp;
	u8			data_len, info_len;
	u8			data[UCM_MAX_DATA];
	u8			info[UCM_MAX_INFO];
};

/* ------------------------------------------------------------------ */
/* Pure parts (KUnit: ucm_test.c)                                      */
/* ------------------------------------------------------------------ */

/* Sizes of each command's structure and answer: both must match exactly. */
struct ucm_cmd_size {
	u16 in, out;
};

static const struct ucm_cmd_size ucm_cmd_sizes[] = {
	[IB_USER_CM_CMD_CREATE_ID] = { sizeof(struct ib_ucm_create_id),
				       sizeof(struct ib_ucm_create_id_resp) },
	[IB_USER_CM_CMD_DESTROY_ID] = { sizeof(struct ib_ucm_destroy_id),
					sizeof(struct ib_ucm_destroy_id_resp) },
	[IB_USER_CM_CMD_ATTR_ID] = { sizeof(struct ib_ucm_attr_id),
				     sizeof(struct ib_ucm_attr_id_resp) },
	[IB_USER_CM_CMD_LISTEN] = { sizeof(struct ib_ucm_listen), 0 },
	[IB_USER_CM_CMD_NOTIFY] = { sizeof(struct ib_ucm_notify), 0 },
	[IB_USER_CM_CMD_SEND_REQ] = { sizeof(struct ib_ucm_req), 0 },
	[IB_USER_CM_CMD_SEND_REP] = { sizeof(struct ib_ucm_rep), 0 },
	[IB_USER_CM_CMD_SEND_RTU] = { sizeof(struct ib_ucm_private_data), 0 },
	[IB_USER_CM_CMD_SEND_DREQ] = { sizeof(struct ib_ucm_private_data), 0 },
	[IB_USER_CM_CMD_SEND_DREP] = { sizeof(struct ib_ucm_private_data), 0 },
	[IB_USER_CM_CMD_SEND_REJ] = { sizeof(struct ib_ucm_info), 0 },
	[IB_USER_CM_CMD_SEND_MRA] = { sizeof(struct ib_ucm_mra), 0 },
	[IB_USER_CM_CMD_SEND_LAP] = { sizeof(struct ib_ucm_lap), 0 },
	[IB_USER_CM_CMD_SEND_APR] = { sizeof(struct ib_ucm_info), 0 },
	[IB_USER_CM_CMD_SEND_SIDR_REQ] = { sizeof(struct ib_ucm_sidr_req), 0 },
	[IB_USER_CM_CMD_SEND_SIDR_REP] = { sizeof(struct ib_ucm_sidr_rep), 0 },
	[IB_USER_CM_CMD_EVENT] = { sizeof(struct ib_ucm_event_get),
				   sizeof(struct ib_ucm_event_resp) },
	[IB_USER_CM_CMD_INIT_QP_ATTR] = { sizeof(struct ib_ucm_init_qp_attr),
					  sizeof(struct ib_uverbs_qp_attr) },
};

/*
 * ucm_check_hdr() - is @hdr a command, with exactly its sizes, in a
 * write() of @count bytes? 0 or -EINVAL.
 */
static int ucm_check_hdr(const struct ib_ucm_cmd_hdr *hdr, size_t count)
{
	if (hdr->cmd >= ARRAY_SIZE(ucm_cmd_sizes))
		return -EINVAL;
	if (hdr->in != ucm_cmd_sizes[hdr->cmd].in ||
	    hdr->out != ucm_cmd_sizes[hdr->cmd].out)
		return -EINVAL;
	if (count != sizeof(*hdr) + hdr->in)
		return -EINVAL;
	return 0;
}

/*
 * ucm_path_from_user() - a path record of the user ABI as the CM's, each
 * field checked against what the IBA allows: LIDs unicast and not 0, a
 * P_Key with a partition, MTU 256..4096, a defined rate, SL 4 bits, flow
 * label 20 bits, PacketLifeTime 6 bits, selectors 2 bits, NumbPath 7 bits,
 * the two flags 0 or 1. 0 or -EINVAL.
 */
static int ucm_path_from_user(struct ib_sa_path_rec *dst,
			      const struct ib_user_path_rec *src)
{
	u16 dlid = be16_to_cpu(src->dlid), slid = be16_to_cpu(src->slid);

	if (!dlid || dlid >= 0xc000 || !slid || slid >= 0xc000)
		return -EINVAL;
	if (!(be16_to_cpu(src->pkey) & 0x7fff))
		return -EINVAL;
	if (src->mtu < IB_MTU_256 || src->mtu > IB_MTU_4096)
		return -EINVAL;
	if (src->rate == 1 || src->rate > IB_RATE_120_GBPS)
		return -EINVAL;
	if (src->sl > 15 || be32_to_cpu(src->flow_label) > 0xfffff ||
	    src->packet_life_time > 63 || src->numb_path > 127)
		return -EINVAL;
	if (src->mtu_selector > 3 || src->rate_selector > 3 ||
	    src->packet_life_time_selector > 3)
		return -EINVAL;
	if (src->raw_traffic > 1 || src->reversible > 1)
		return -EINVAL;

	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid.raw, src->dgid, sizeof(src->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(src->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->flow_label = src->flow_label;
	dst->pkey = src->pkey;
	dst->raw_traffic = src->raw_traffic;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->preference = src->preference;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	return 0;
}

/* The CM's path record in the user ABI's layout (event answers). */
static void ucm_path_to_user(struct ib_user_path_rec *dst,
			     const struct ib_sa_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/*
 * The service ID ranges of kernel consumers: rdma_cm's (its port space and
 * port in the low 24 bits) and SDP's (the port in the low 16).
 */
#define UCM_RDMA_CM_SID		0x0000000001000000ULL
#define UCM_RDMA_CM_MASK	0xffffffffff000000ULL
#define UCM_SDP_SID		0x0000000000010000ULL
#define UCM_SDP_MASK		0xffffffffffff0000ULL

/* Whether a listen on @sid under @mask matches some ID of a range. */
static bool ucm_listen_meets(u64 sid, u64 mask, u64 range, u64 range_mask)
{
	return !((sid ^ range) & mask & range_mask);
}

/*
 * ucm_check_listen() - a listen (a @service_mask of 0 means all bits) that
 * would match SDP's IDs, or a range of rdma_cm's, is -EINVAL: those belong
 * to kernel consumers. One exact rdma_cm ID is allowed, so that a program
 * can serve librdmacm clients (ucmatose, rping) on a node whose stack has
 * no rdma_cm of its own; the device is root's (0600), and ib_cm refuses a
 * second listener on the same ID (-EBUSY), whoever came first.
 */
static int ucm_check_listen(__be64 service_id, __be64 service_mask)
{
	u64 mask = service_mask ? be64_to_cpu(service_mask) : ~0ULL;
	u64 sid = be64_to_cpu(service_id) & mask;

	if (ucm_listen_meets(sid, mask, UCM_SDP_SID, UCM_SDP_MASK))
		return -EINVAL;
	if (ucm_listen_meets(sid, mask, UCM_RDMA_CM_SID, UCM_RDMA_CM_MASK) && mask != ~0ULL)
		return -EINVAL;
	return 0;
}

/* Bytes of private data an event's message carries (0: none). */
static u8 ucm_event_data_size(enum ib_cm_event_type event)
{
	switch (event) {
	case IB_CM_REQ_RECEIVED:
		return IB_CM_REQ_PRIVATE_DATA_SIZE;
	case IB_CM_REP_RECEIVED:
		return IB_CM_REP_PRIVATE_DATA_SIZE;
	case IB_CM_RTU_RECEIVED:
		return IB_CM_RTU_PRIVATE_DATA_SIZE;
	case IB_CM_DREQ_RECEIVED:
		return IB_CM_DREQ_PRIVATE_DATA_SIZE;
	case IB_CM_DREP_RECEIVED:
		return IB_CM_DREP_PRIVATE_DATA_SIZE;
	case IB_CM_MRA_RECEIVED:
		return IB_CM_MRA_PRIVATE_DATA_SIZE;
	case IB_CM_REJ_RECEIVED:
		return IB_CM_REJ_PRIVATE_DATA_SIZE;
	case IB_CM_LAP_RECEIVED:
		return IB_CM_LAP_PRIVATE_DATA_SIZE;
	case IB_CM_APR_RECEIVED:
		return IB_CM_APR_PRIVATE_DATA_SIZE;
	case IB_CM_SIDR_REQ_RECEIVED:
		return IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE;
	case IB_CM_SIDR_REP_RECEIVED:
		return IB_CM_SIDR_REP_PRIVATE_DATA_SIZE;
	default:
		return 0;
	}
}

/* Private data a command may send, by command (0: none). */
static u8 ucm_cmd_data_max(u32 cmd)
{
	switch (cmd) {
	case IB_USER_CM_CMD_SEND_REQ:
		return IB_CM_REQ_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_REP:
		return IB_CM_REP_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_RTU:
		return IB_CM_RTU_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_DREQ:
		return IB_CM_DREQ_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_DREP:
		return IB_CM_DREP_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_REJ:
		return IB_CM_REJ_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_MRA:
		return IB_CM_MRA_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_LAP:
		return IB_CM_LAP_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_APR:
		return IB_CM_APR_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_SIDR_REQ:
		return IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE;
	case IB_USER_CM_CMD_SEND_SIDR_REP:
		return IB_CM_SIDR_REP_PRIVATE_DATA_SIZE;
	default:
		return 0;
	}
}

/*
 * ucm_fill_event() - copy what @event carries into @ev (not its ids):
 * the parameters, the private data and ARI/info, the paths of a REQ.
 */
static void ucm_fill_event(struct ucm_event *ev, const struct ib_cm_event *event)
{
	struct ib_ucm_event_resp *r = &ev->resp;
	const void *info = NULL;
	u8 info_len = 0;

	r->event = event->event;
	switch (event->event) {
	case IB_CM_REQ_RECEIVED: {
		const struct ib_cm_req_event_param *p = &event->param.req_rcvd;
		struct ib_ucm_req_event_resp *q = &r->u.req_resp;

		if (p->primary_path) {
			ucm_path_to_user(&q->primary_path, p->primary_path);
			r->present |= IB_UCM_PRES_PRIMARY;
		}
		if (p->alternate_path) {
			ucm_path_to_user(&q->alternate_path, p->alternate_path);
			r->present |= IB_UCM_PRES_ALTERNATE;
		}
		q->remote_ca_guid = p->remote_ca_guid;
		q->remote_qkey = p->remote_qkey;
		q->remote_qpn = p->remote_qpn;
		q->qp_type = p->qp_type;
		q->starting_psn = p->starting_psn;
		q->responder_resources = p->responder_resources;
		q->initiator_depth = p->initiator_depth;
		q->local_cm_response_timeout = p->local_cm_response_timeout;
		q->flow_control = p->flow_control;
		q->remote_cm_response_timeout = p->remote_cm_response_timeout;
		q->retry_count = p->retry_count;
		q->rnr_retry_count = p->rnr_retry_count;
		q->srq = p->srq;
		q->port = p->port;
		break;
	}
	case IB_CM_REP_RECEIVED: {
		const struct ib_cm_rep_event_param *p = &event->param.rep_rcvd;
		struct ib_ucm_rep_event_resp *q = &r->u.rep_resp;

		q->remote_ca_guid = p->remote_ca_guid;
		q->remote_qkey = p->remote_qkey;
		q->remote_qpn = p->remote_qpn;
		q->starting_psn = p->starting_psn;
		q->responder_resources = p->responder_resources;
		q->initiator_depth = p->initiator_depth;
		q->target_ack_delay = p->target_ack_delay;
		q->failover_accepted = p->failover_accepted;
		q->flow_control = p->flow_control;
		q->rnr_retry_count = p->rnr_retry_count;
		q->srq = p->srq;
		break;
	}
	case IB_CM_REJ_RECEIVED:
		r->u.rej_resp.reason = event->param.rej_rcvd.reason;
		info = event->param.rej_rcvd.ari;
		info_len = event->param.rej_rcvd.ari_length;
		break;
	case IB_CM_MRA_RECEIVED:
		r->u.mra_resp.timeout = event->param.mra_rcvd.service_timeout;
		break;
	case IB_CM_LAP_RECEIVED:
		if (event->param.lap_rcvd.alternate_path) {
			ucm_path_to_user(&r->u.lap_resp.path,
					 event->param.lap_rcvd.alternate_path);
			r->present |= IB_UCM_PRES_ALTERNATE;
		}
		break;
	case IB_CM_APR_RECEIVED:
		r->u.apr_resp.status = event->param.apr_rcvd.ap_status;
		info = event->param.apr_rcvd.apr_info;
		info_len = event->param.apr_rcvd.info_len;
		break;
	case IB_CM_SIDR_REQ_RECEIVED:
		r->u.sidr_req_resp.pkey = event->param.sidr_req_rcvd.pkey;
		r->u.sidr_req_resp.port = event->param.sidr_req_rcvd.port;
		break;
	case IB_CM_SIDR_REP_RECEIVED:
		r->u.sidr_rep_resp.status = event->param.sidr_rep_rcvd.status;
		r->u.sidr_rep_resp.qkey = event->param.sidr_rep_rcvd.qkey;
		r->u.sidr_rep_resp.qpn = event->param.sidr_rep_rcvd.qpn;
		info = event->param.sidr_rep_rcvd.info;
		info_len = event->param.sidr_rep_rcvd.info_len;
		break;
	default:
		r->u.send_status = event->param.send_status;
		break;
	}

	ev->data_len = event->private_data ? ucm_event_data_size(event->event) : 0;
	if (ev->data_len)
		memcpy(ev->data, event->private_data, ev->data_len);
	ev->info_len = info ? min_t(u8, info_len, UCM_MAX_INFO) : 0;
	if (ev->info_len)
		memcpy(ev->info, info, ev->info_len);
}

/* ------------------------------------------------------------------ */
/* Ids and events                                                      */
/* ------------------------------------------------------------------ */

static void ucm_ctx_put(struct ucm_ctx *ctx)
{
	if (refcount_dec_and_test(&ctx->refs))
		complete(&ctx->done);
}

/* The file's id @id with a reference, or NULL. */
static struct ucm_ctx *ucm_ctx_get(struct ucm_file *file, u32 id)
{
	struct ucm_ctx *ctx;

	mutex_lock(&file->mutex);
	ctx = xa_load(&file->ctxs, id);
	if (ctx)
		refcount_inc(&ctx->refs);
	mutex_unlock(&file->mutex);
	return ctx;
}

/*
 * End an id already taken out of the table: wait for the commands using
 * it, destroy its cm_id (which waits for a running handler), then drop
 * its undelivered events and free it. Returns the events it delivered.
 */
static u32 ucm_ctx_destroy(struct ucm_ctx *ctx)
{
	struct ucm_file *file = ctx->file;
	struct ucm_event *ev, *tmp;
	u32 reported;

	ucm_ctx_put(ctx);
	wait_for_completion(&ctx->done);
	ib_destroy_cm_id(ctx->cm_id);

	mutex_lock(&file->mutex);
	list_for_each_entry_safe(ev, tmp, &file->events, list) {
		if (ev->ctx != ctx)
			continue;
		list_del(&ev->list);
		file->n_events--;
		kfree(ev);
	}
	reported = ctx->events_reported;
	mutex_unlock(&file->mutex);
	kfree(ctx);
	return reported;
}

/*
 * Close or device removal: no new id, and every id ended. Each is taken
 * out under the mutex one by one, so a handler that adds an id for a
 * new connection before @closed is set has it ended here as well.
 */
static void ucm_file_end_ids(struct ucm_file *file)
{
	struct ucm_ctx *ctx;
	unsigned long index;

	mutex_lock(&file->mutex);
	file->closed = true;
	for (;;) {
		index = 0;
		ctx = xa_find(&file->ctxs, &index, ULONG_MAX, XA_PRESENT);
		if (!ctx)
			break;
		xa_erase(&file->ctxs, index);
		mutex_unlock(&file->mutex);
		ucm_ctx_destroy(ctx);
		mutex_lock(&file->mutex);
	}
	mutex_unlock(&file->mutex);
}

static bool ucm_new_conn(enum ib_cm_event_type event)
{
	return event == IB_CM_REQ_RECEIVED || event == IB_CM_SIDR_REQ_RECEIVED;
}

/*
 * The cm handler. Queues a copy of the event on the id's file. A REQ or
 * SIDR_REQ gets a new id of the file (uid of the listener). When the
 * queue is full (or the file closing) the event is not queued: a new
 * connection is refused (non-zero: ib_cm destroys its id and rejects it),
 * any other event is dropped; both count in events_dropped (as do those
 * lost to a failed allocation; not those of a closing file).
 */
static int ucm_event_handler(struct ib_cm_id *cm_id, struct ib_cm_event *event)
{
	struct ucm_ctx *ctx = cm_id->context, *nctx = NULL;
	struct ucm_file *file = ctx->file;
	bool new_conn = ucm_new_conn(event->event), full = false;
	struct ucm_event *ev;
	unsigned int delay;
	u32 id;

	ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		goto drop;
	ucm_fill_event(ev, event);
	if (new_conn) {
		nctx = kzalloc(sizeof(*nctx), GFP_KERNEL);
		if (!nctx)
			goto drop;
		nctx->file = file;
		nctx->cm_id = cm_id;
		refcount_set(&nctx->refs, 1);
		init_completion(&nctx->done);
	}

	delay = min(READ_ONCE(delay_handler_ms), 1000U);
	if (delay)
		msleep(delay);

	mutex_lock(&file->mutex);
	full = file->n_events >= ucm_max_events();
	if (file->closed || full)
		goto drop_unlock;
	if (nctx) {
		nctx->uid = ctx->uid;
		if (xa_alloc_cyclic(&file->ctxs, &id, nctx, xa_limit_31b,
				    &file->next_id, GFP_KERNEL) < 0)
			goto drop_unlock;
		nctx->id = id;
		/* The new cm_id's events run after this one returns. */
		cm_id->context = nctx;
		ev->ctx = nctx;
	} else {
		ev->ctx = ctx;
	}
	ev->resp.uid = ctx->uid;
	ev->resp.id = ev->ctx->id;
	list_add_tail(&ev->list, &file->events);
	file->n_events++;
	mutex_unlock(&file->mutex);
	wake_up_interruptible(&file->wait);
	return 0;

drop_unlock:
	mutex_unlock(&file->mutex);
drop:
	if (full || !ev || (new_conn && !nctx))
		atomic64_inc(&file->udev->events_dropped);
	kfree(nctx);
	kfree(ev);
	return new_conn;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

/* @len bytes at user address @ptr, checked against @max; NULL if none. */
static void *ucm_copy_data(u64 ptr, u8 len, u8 max, int *err)
{
	void *p;

	*err = 0;
	if (len > max) {
		*err = -EINVAL;
		return NULL;
	}
	if (!len)
		return NULL;
	p = memdup_user(u64_to_user_ptr(ptr), len);
	if (IS_ERR(p)) {
		*err = PTR_ERR(p);
		return NULL;
	}
	return p;
}

static int ucm_copy_path(struct ib_sa_path_rec *dst, u64 ptr)
{
	struct ib_user_path_rec u;

	if (copy_from_user(&u, u64_to_user_ptr(ptr), sizeof(u)))
		return -EFAULT;
	return ucm_path_from_user(dst, &u);
}

static int ucm_cmd_create_id(struct ucm_file *file, const void *in)
{
	const struct ib_ucm_create_id *cmd = in;
	struct ib_ucm_create_id_resp resp = {};
	struct ib_cm_id *cm_id;
	struct ucm_ctx *ctx;
	int ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return -ENOMEM;
	ctx->file = file;
	ctx->uid = cmd->uid;
	refcount_set(&ctx->refs, 1);
	init_completion(&ctx->done);

	cm_id = ib_create_cm_id(file->udev->ib_dev, ucm_event_handler, ctx);
	if (IS_ERR(cm_id)) {
		ret = PTR_ERR(cm_id);
		goto err_free;
	}
	ctx->cm_id = cm_id;

	mutex_lock(&file->mutex);
	ret = file->closed ? -ENODEV :
		xa_alloc_cyclic(&file->ctxs, &ctx->id, ctx, xa_limit_31b,
				&file->next_id, GFP_KERNEL);
	mutex_unlock(&file->mutex);
	if (ret < 0)
		goto err_cm;

	resp.id = ctx->id;
	if (copy_to_user(u64_to_user_ptr(cmd->response), &resp, sizeof(resp))) {
		ret = -EFAULT;
		goto err_erase;
	}
	return 0;

err_erase:
	mutex_lock(&file->mutex);
	xa_erase(&file->ctxs, ctx->id);
	mutex_unlock(&file->mutex);
	ucm_ctx_destroy(ctx);
	return ret;
err_cm:
	ib_destroy_cm_id(cm_id);
err_free:
	kfree(ctx);
	return ret;
}

static int ucm_cmd_destroy_id(struct ucm_file *file, const void *in)
{
	const struct ib_ucm_destroy_id *cmd = in;
	struct ib_ucm_destroy_id_resp resp = {};
	struct ucm_ctx *ctx;

	mutex_lock(&file->mutex);
	ctx = xa_erase(&file->ctxs, cmd->id);
	mutex_unlock(&file->mutex);
	if (!ctx)
		return -ENOENT;
	resp.events_reported = ucm_ctx_destroy(ctx);
	if (copy_to_user(u64_to_user_ptr(cmd->response), &resp, sizeof(resp)))
		return -EFAULT;
	return 0;
}

static int ucm_cmd_attr_id(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_attr_id *cmd = in;
	struct ib_ucm_attr_id_resp resp = {
		.service_id = ctx->cm_id->service_id,
		.service_mask = ctx->cm_id->service_mask,
		.local_id = ctx->cm_id->local_id,
		.remote_id = ctx->cm_id->remote_id,
	};

	if (copy_to_user(u64_to_user_ptr(cmd->response), &resp, sizeof(resp)))
		return -EFAULT;
	return 0;
}

static void ucm_ah_to_user(struct ib_uverbs_ah_attr *dst,
			   const struct ib_ah_attr *src)
{
	memcpy(dst->grh.dgid, src->grh.dgid.raw, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = !!(src->ah_flags & IB_AH_GRH);
	dst->port_num = src->port_num;
}

static int ucm_cmd_init_qp_attr(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_init_qp_attr *cmd = in;
	struct ib_uverbs_qp_attr resp = {};
	struct ib_qp_attr attr = {};
	int mask = 0, ret;

	if (cmd->qp_state > IB_QPS_ERR)
		return -EINVAL;
	attr.qp_state = cmd->qp_state;
	ret = ib_cm_init_qp_attr(ctx->cm_id, &attr, &mask);
	if (ret)
		return ret;

	resp.qp_attr_mask = mask;
	resp.qp_state = attr.qp_state;
	resp.cur_qp_state = attr.cur_qp_state;
	resp.path_mtu = attr.path_mtu;
	resp.path_mig_state = attr.path_mig_state;
	resp.qkey = attr.qkey;
	resp.rq_psn = attr.rq_psn;
	resp.sq_psn = attr.sq_psn;
	resp.dest_qp_num = attr.dest_qp_num;
	resp.qp_access_flags = attr.qp_access_flags;
	ucm_ah_to_user(&resp.ah_attr, &attr.ah_attr);
	ucm_ah_to_user(&resp.alt_ah_attr, &attr.alt_ah_attr);
	resp.max_send_wr = attr.cap.max_send_wr;
	resp.max_recv_wr = attr.cap.max_recv_wr;
	resp.max_send_sge = attr.cap.max_send_sge;
	resp.max_recv_sge = attr.cap.max_recv_sge;
	resp.max_inline_data = attr.cap.max_inline_data;
	resp.pkey_index = attr.pkey_index;
	resp.alt_pkey_index = attr.alt_pkey_index;
	resp.en_sqd_async_notify = attr.en_sqd_async_notify;
	resp.sq_draining = attr.sq_draining;
	resp.max_rd_atomic = attr.max_rd_atomic;
	resp.max_dest_rd_atomic = attr.max_dest_rd_atomic;
	resp.min_rnr_timer = attr.min_rnr_timer;
	resp.port_num = attr.port_num;
	resp.timeout = attr.timeout;
	resp.retry_cnt = attr.retry_cnt;
	resp.rnr_retry = attr.rnr_retry;
	resp.alt_port_num = attr.alt_port_num;
	resp.alt_timeout = attr.alt_timeout;
	if (copy_to_user(u64_to_user_ptr(cmd->response), &resp, sizeof(resp)))
		return -EFAULT;
	return 0;
}

static int ucm_cmd_notify(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_notify *cmd = in;

	/* the two events ib_cm_notify() takes; anything else is EINVAL */
	if (cmd->event != IB_EVENT_COMM_EST && cmd->event != IB_EVENT_PATH_MIG)
		return -EINVAL;
	return ib_cm_notify(ctx->cm_id, cmd->event);
}

static int ucm_cmd_send_req(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_req *cmd = in;
	struct ib_sa_path_rec *paths;
	struct ib_cm_req_param p = {};
	void *data;
	int ret;

	if (cmd->qp_type != IB_QPT_RC && cmd->qp_type != IB_QPT_UC)
		return -EINVAL;
	if (!cmd->primary_path)
		return -EINVAL;
	data = ucm_copy_data(cmd->data, cmd->len, IB_CM_REQ_PRIVATE_DATA_SIZE,
			     &ret);
	if (ret)
		return ret;
	paths = kcalloc(2, sizeof(*paths), GFP_KERNEL);
	if (!paths) {
		ret = -ENOMEM;
		goto out_data;
	}
	ret = ucm_copy_path(&paths[0], cmd->primary_path);
	if (ret)
		goto out_paths;
	if (cmd->alternate_path) {
		ret = ucm_copy_path(&paths[1], cmd->alternate_path);
		if (ret)
			goto out_paths;
		p.alternate_path = &paths[1];
	}
	p.primary_path = &paths[0];
	p.service_id = cmd->sid;
	p.qp_num = cmd->qpn;
	p.qp_type = cmd->qp_type;
	p.starting_psn = cmd->psn;
	p.private_data = data;
	p.private_data_len = cmd->len;
	p.peer_to_peer = cmd->peer_to_peer;
	p.responder_resources = cmd->responder_resources;
	p.initiator_depth = cmd->initiator_depth;
	p.remote_cm_response_timeout = cmd->remote_cm_response_timeout;
	p.flow_control = cmd->flow_control;
	p.local_cm_response_timeout = cmd->local_cm_response_timeout;
	p.retry_count = cmd->retry_count;
	p.rnr_retry_count = cmd->rnr_retry_count;
	p.max_cm_retries = cmd->max_cm_retries;
	p.srq = cmd->srq;
	ret = ib_send_cm_req(ctx->cm_id, &p);
out_paths:
	kfree(paths);
out_data:
	kfree(data);
	return ret;
}

static int ucm_cmd_send_rep(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_rep *cmd = in;
	struct ib_cm_rep_param p = {};
	void *data;
	int ret;

	data = ucm_copy_data(cmd->data, cmd->len, IB_CM_REP_PRIVATE_DATA_SIZE,
			     &ret);
	if (ret)
		return ret;
	p.qp_num = cmd->qpn;
	p.starting_psn = cmd->psn;
	p.private_data = data;
	p.private_data_len = cmd->len;
	p.responder_resources = cmd->responder_resources;
	p.initiator_depth = cmd->initiator_depth;
	p.target_ack_delay = cmd->target_ack_delay;
	p.failover_accepted = cmd->failover_accepted;
	p.flow_control = cmd->flow_control;
	p.rnr_retry_count = cmd->rnr_retry_count;
	p.srq = cmd->srq;
	ret = ib_send_cm_rep(ctx->cm_id, &p);
	if (!ret) {
		/* The passive side names its new id here (as ABI 5 did). */
		mutex_lock(&ctx->file->mutex);
		ctx->uid = cmd->uid;
		mutex_unlock(&ctx->file->mutex);
	}
	kfree(data);
	return ret;
}

/* RTU, DREQ, DREP: private data only. */
static int ucm_cmd_send_private(struct ucm_ctx *ctx, u32 op, const void *in)
{
	const struct ib_ucm_private_data *cmd = in;
	void *data;
	int ret;

	data = ucm_copy_data(cmd->data, cmd->len, ucm_cmd_data_max(op), &ret);
	if (ret)
		return ret;
	if (op == IB_USER_CM_CMD_SEND_RTU)
		ret = ib_send_cm_rtu(ctx->cm_id, data, cmd->len);
	else if (op == IB_USER_CM_CMD_SEND_DREQ)
		ret = ib_send_cm_dreq(ctx->cm_id, data, cmd->len);
	else
		ret = ib_send_cm_drep(ctx->cm_id, data, cmd->len);
	kfree(data);
	return ret;
}

/* REJ and APR: a status, an ARI/info of up to 72 bytes, private data. */
static int ucm_cmd_send_info(struct ucm_ctx *ctx, u32 op, const void *in)
{
	const struct ib_ucm_info *cmd = in;
	void *info, *data;
	int ret;

	info = ucm_copy_data(cmd->info, cmd->info_len, UCM_MAX_INFO, &ret);
	if (ret)
		return ret;
	data = ucm_copy_data(cmd->data, cmd->data_len, ucm_cmd_data_max(op),
			     &ret);
	if (ret)
		goto out;
	if (op == IB_USER_CM_CMD_SEND_REJ)
		ret = ib_send_cm_rej(ctx->cm_id, cmd->status, info,
				     cmd->info_len, data, cmd->data_len);
	else
		ret = ib_send_cm_apr(ctx->cm_id, cmd->status, info,
				     cmd->info_len, data, cmd->data_len);
	kfree(data);
out:
	kfree(info);
	return ret;
}

static int ucm_cmd_send_mra(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_mra *cmd = in;
	void *data;
	int ret;

	if (cmd->timeout > 31)
		return -EINVAL;
	data = ucm_copy_data(cmd->data, cmd->len, IB_CM_MRA_PRIVATE_DATA_SIZE,
			     &ret);
	if (ret)
		return ret;
	ret = ib_send_cm_mra(ctx->cm_id, cmd->timeout, data, cmd->len);
	kfree(data);
	return ret;
}

static int ucm_cmd_send_lap(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_lap *cmd = in;
	struct ib_sa_path_rec path;
	void *data;
	int ret;

	if (!cmd->path)
		return -EINVAL;
	ret = ucm_copy_path(&path, cmd->path);
	if (ret)
		return ret;
	data = ucm_copy_data(cmd->data, cmd->len, IB_CM_LAP_PRIVATE_DATA_SIZE,
			     &ret);
	if (ret)
		return ret;
	ret = ib_send_cm_lap(ctx->cm_id, &path, data, cmd->len);
	kfree(data);
	return ret;
}

static int ucm_cmd_send_sidr_req(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_sidr_req *cmd = in;
	struct ib_cm_sidr_req_param p = {};
	struct ib_sa_path_rec path;
	void *data;
	int ret;

	if (cmd->timeout > INT_MAX)
		return -EINVAL;
	ret = ucm_copy_path(&path, cmd->path);
	if (ret)
		return ret;
	data = ucm_copy_data(cmd->data, cmd->len,
			     IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE, &ret);
	if (ret)
		return ret;
	p.path = &path;
	p.service_id = cmd->sid;
	p.timeout_ms = cmd->timeout;
	p.pkey = be16_to_cpu(path.pkey);
	p.max_cm_retries = cmd->max_cm_retries;
	p.private_data = data;
	p.private_data_len = cmd->len;
	ret = ib_send_cm_sidr_req(ctx->cm_id, &p);
	kfree(data);
	return ret;
}

static int ucm_cmd_send_sidr_rep(struct ucm_ctx *ctx, const void *in)
{
	const struct ib_ucm_sidr_rep *cmd = in;
	struct ib_cm_sidr_rep_param p = {};
	void *info, *data;
	int ret;

	info = ucm_copy_data(cmd->info, cmd->info_len,
			     IB_CM_SIDR_REP_INFO_LENGTH, &ret);
	if (ret)
		return ret;
	data = ucm_copy_data(cmd->data, cmd->data_len,
			     IB_CM_SIDR_REP_PRIVATE_DATA_SIZE, &ret);
	if (ret)
		goto out;
	p.status = cmd->status;
	p.qp_num = cmd->qpn;
	p.qkey = cmd->qkey;
	p.info = info;
	p.info_length = cmd->info_len;
	p.private_data = data;
	p.private_data_len = cmd->data_len;
	ret = ib_send_cm_sidr_rep(ctx->cm_id, &p);
	kfree(data);
out:
	kfree(info);
	return ret;
}

/*
 * EVENT: the oldest event. The user's buffers are checked against the
 * head event before it is taken (ENOSPC: too small for its data or info;
 * the event stays). It is then taken off the queue and copied out with
 * no lock held, so a stalled copy stalls only this caller; a copy that
 * faults loses the event (EFAULT).
 */
static int ucm_cmd_event(struct ucm_file *file, struct file *filp,
			 const void *in)
{
	const struct ib_ucm_event_get *cmd = in;
	struct ucm_event *ev;
	int ret;

	mutex_lock(&file->mutex);
	while (list_empty(&file->events)) {
		mutex_unlock(&file->mutex);
		if (READ_ONCE(file->udev->dead))
			return -EIO;
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(file->wait,
					       !list_empty(&file->events) ||
					       READ_ONCE(file->udev->dead));
		if (ret)
			return ret;
		mutex_lock(&file->mutex);
	}
	ev = list_first_entry(&file->events, struct ucm_event, list);
	if ((cmd->data && ev->data_len > cmd->data_len) ||
	    (cmd->info && ev->info_len > cmd->info_len)) {
		mutex_unlock(&file->mutex);
		return -ENOSPC;
	}
	list_del(&ev->list);
	file->n_events--;
	ev->ctx->events_reported++;
	mutex_unlock(&file->mutex);

	ret = 0;
	if (cmd->data && ev->data_len) {
		if (copy_to_user(u64_to_user_ptr(cmd->data), ev->data,
				 ev->data_len))
			ret = -EFAULT;
		ev->resp.present |= IB_UCM_PRES_DATA;
	}
	if (cmd->info && ev->info_len) {
		if (copy_to_user(u64_to_user_ptr(cmd->info), ev->info,
				 ev->info_len))
			ret = -EFAULT;
		ev->resp.present |= IB_UCM_PRES_INFO;
	}
	if (copy_to_user(u64_to_user_ptr(cmd->response), &ev->resp,
			 sizeof(ev->resp)))
		ret = -EFAULT;
	kfree(ev);
	return ret;
}

/* The commands that act on one id of the file. */
static int ucm_cmd_on_id(struct ucm_file *file, u32 op, const void *in)
{
	struct ucm_ctx *ctx;
	u32 id;
	int ret;

	/* Every such structure names the id; where depends on the command. */
	switch (op) {
	case IB_USER_CM_CMD_ATTR_ID:
		id = ((const struct ib_ucm_attr_id *)in)->id;
		break;
	case IB_USER_CM_CMD_INIT_QP_ATTR:
		id = ((const struct ib_ucm_init_qp_attr *)in)->id;
		break;
	case IB_USER_CM_CMD_LISTEN:
		id = ((const struct ib_ucm_listen *)in)->id;
		break;
	case IB_USER_CM_CMD_NOTIFY:
		id = ((const struct ib_ucm_notify *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_REQ:
		id = ((const struct ib_ucm_req *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_REP:
		id = ((const struct ib_ucm_rep *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_RTU:
	case IB_USER_CM_CMD_SEND_DREQ:
	case IB_USER_CM_CMD_SEND_DREP:
		id = ((const struct ib_ucm_private_data *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_REJ:
	case IB_USER_CM_CMD_SEND_APR:
		id = ((const struct ib_ucm_info *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_MRA:
		id = ((const struct ib_ucm_mra *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_LAP:
		id = ((const struct ib_ucm_lap *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_SIDR_REQ:
		id = ((const struct ib_ucm_sidr_req *)in)->id;
		break;
	case IB_USER_CM_CMD_SEND_SIDR_REP:
		id = ((const struct ib_ucm_sidr_rep *)in)->id;
		break;
	default:
		return -EINVAL;
	}

	ctx = ucm_ctx_get(file, id);
	if (!ctx)
		return -ENOENT;

	switch (op) {
	case IB_USER_CM_CMD_ATTR_ID:
		ret = ucm_cmd_attr_id(ctx, in);
		break;
	case IB_USER_CM_CMD_INIT_QP_ATTR:
		ret = ucm_cmd_init_qp_attr(ctx, in);
		break;
	case IB_USER_CM_CMD_LISTEN: {
		const struct ib_ucm_listen *cmd = in;

		ret = ucm_check_listen(cmd->service_id, cmd->service_mask);
		if (!ret)
			ret = ib_cm_listen(ctx->cm_id, cmd->service_id,
					   cmd->service_mask);
		break;
	}
	case IB_USER_CM_CMD_NOTIFY:
		ret = ucm_cmd_notify(ctx, in);
		break;
	case IB_USER_CM_CMD_SEND_REQ:
		ret = ucm_cmd_send_req(ctx, in);
		break;
	case IB_USER_CM_CMD_SEND_REP:
		ret = ucm_cmd_send_rep(ctx, in);
		break;
	case IB_USER_CM_CMD_SEND_RTU:
	case IB_USER_CM_CMD_SEND_DREQ:
	case IB_USER_CM_CMD_SEND_DREP:
		ret = ucm_cmd_send_private(ctx, op, in);
		break;
	case IB_USER_CM_CMD_SEND_REJ:
	case IB_USER_CM_CMD_SEND_APR:
		ret = ucm_cmd_send_info(ctx, op, in);
		break;
	case IB_USER_CM_CMD_SEND_MRA:
		ret = ucm_cmd_send_mra(ctx, in);
		break;
	case IB_USER_CM_CMD_SEND_LAP:
		ret = ucm_cmd_send_lap(ctx, in);
		break;
	case IB_USER_CM_CMD_SEND_SIDR_REQ:
		ret = ucm_cmd_send_sidr_req(ctx, in);
		break;
	default:
		ret = ucm_cmd_send_sidr_rep(ctx, in);
		break;
	}
	ucm_ctx_put(ctx);
	return ret;
}

/*
 * A descriptor handed to a process of other credentials must not act for
 * it (write() reached through a setuid program or splice): as ib_uverbs.
 */
static bool ucm_caller_is_opener(struct file *filp)
{
	if (filp->f_cred == current_cred())
		return true;
	pr_err_once("ib_ucm: %s[%d] wrote to a ucm file opened with other credentials\n",
		    current->comm, task_tgid_vnr(current));
	return false;
}

static ssize_t ucm_write(struct file *filp, const char __user *buf,
			 size_t count, loff_t *pos)
{
	struct ucm_file *file = filp->private_data;
	struct ucm_device *udev = file->udev;
	struct ib_ucm_cmd_hdr hdr;
	/* the largest command structure (SEND_REQ) */
	u64 in[sizeof(struct ib_ucm_req) / sizeof(u64)];
	int ret;

	BUILD_BUG_ON(sizeof(struct ib_ucm_req) % sizeof(u64));
	if (!ucm_caller_is_opener(filp))
		return -EACCES;
	if (count < sizeof(hdr))
		return -EINVAL;
	if (copy_from_user(&hdr, buf, sizeof(hdr)))
		return -EFAULT;
	ret = ucm_check_hdr(&hdr, count);
	if (ret)
		return ret;
	if (WARN_ON_ONCE(hdr.in > sizeof(in)))
		return -EINVAL;
	if (copy_from_user(in, buf + sizeof(hdr), hdr.in))
		return -EFAULT;

	if (hdr.cmd == IB_USER_CM_CMD_EVENT) {
		ret = ucm_cmd_event(file, filp, in);
		return ret ? ret : count;
	}

	down_read(&udev->rwsem);
	if (udev->dead)
		ret = -EIO;
	else if (hdr.cmd == IB_USER_CM_CMD_CREATE_ID)
		ret = ucm_cmd_create_id(file, in);
	else if (hdr.cmd == IB_USER_CM_CMD_DESTROY_ID)
		ret = ucm_cmd_destroy_id(file, in);
	else
		ret = ucm_cmd_on_id(file, hdr.cmd, in);
	up_read(&udev->rwsem);
	return ret ? ret : count;
}

static __poll_t ucm_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct ucm_file *file = filp->private_data;
	__poll_t mask = 0;

	poll_wait(filp, &file->wait, wait);
	mutex_lock(&file->mutex);
	if (!list_empty(&file->events))
		mask |= EPOLLIN | EPOLLRDNORM;
	mutex_unlock(&file->mutex);
	if (READ_ONCE(file->udev->dead))
		mask |= EPOLLERR;
	return mask;
}

static int ucm_open(struct inode *inode, struct file *filp)
{
	struct ucm_device *udev = container_of(inode->i_cdev,
					       struct ucm_device, cdev);
	struct ucm_file *file;
	int ret;

	file = kzalloc(sizeof(*file), GFP_KERNEL_ACCOUNT);
	if (!file)
		return -ENOMEM;
	mutex_init(&file->mutex);
	xa_init_flags(&file->ctxs, XA_FLAGS_ALLOC);
	INIT_LIST_HEAD(&file->events);
	init_waitqueue_head(&file->wait);
	file->filp = filp;

	mutex_lock(&udev->lock);
	if (READ_ONCE(udev->dead)) {
		ret = -ENODEV;
		goto err_unlock;
	}
	get_device(&udev->dev);
	file->udev = udev;
	list_add_tail(&file->list, &udev->files);
	mutex_unlock(&udev->lock);

	filp->private_data = file;
	return stream_open(inode, filp);

err_unlock:
	mutex_unlock(&udev->lock);
	kfree(file);
	return ret;
}

static int ucm_release(struct inode *inode, struct file *filp)
{
	struct ucm_file *file = filp->private_data;
	struct ucm_device *udev = file->udev;
	struct ucm_event *ev, *tmp;

	/* After remove() has ended this file's ids, if it ran. */
	mutex_lock(&udev->lock);
	list_del(&file->list);
	mutex_unlock(&udev->lock);

	ucm_file_end_ids(file);
	list_for_each_entry_safe(ev, tmp, &file->events, list)
		kfree(ev);
	xa_destroy(&file->ctxs);
	kfree(file);
	put_device(&udev->dev);
	return 0;
}

static const struct file_operations ucm_fops = {
	.owner	 = THIS_MODULE,
	.open	 = ucm_open,
	.release = ucm_release,
	.write	 = ucm_write,
	.poll	 = ucm_poll,
	.llseek	 = no_llseek,
};

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

static dev_t ucm_base = MKDEV(UCM_MAJOR, UCM_BASE_MINOR);
static DEFINE_IDA(ucm_numbers);

static ssize_t ibdev_show(struct device *d, struct device_attribute *attr,
			  char *buf)
{
	struct ucm_device *udev = container_of(d, struct ucm_device, dev);

	return sysfs_emit(buf, "%s\n", udev->ib_dev->name);
}
static DEVICE_ATTR_RO(ibdev);

static ssize_t events_dropped_show(struct device *d,
				   struct device_attribute *attr, char *buf)
{
	struct ucm_device *udev = container_of(d, struct ucm_device, dev);

	return sysfs_emit(buf, "%lld\n",
			  (long long)atomic64_read(&udev->events_dropped));
}
static DEVICE_ATTR_RO(events_dropped);

static struct attribute *ucm_dev_attrs[] = {
	&dev_attr_ibdev.attr,
	&dev_attr_events_dropped.attr,
	NULL
};
ATTRIBUTE_GROUPS(ucm_dev);

static CLASS_ATTR_STRING(abi_version, 0444,
			 __stringify(IB_USER_CM_ABI_VERSION));

static struct attribute *ucm_class_attrs[] = {
	&class_attr_abi_version.attr.attr,
	NULL
};
ATTRIBUTE_GROUPS(ucm_class);

/* /dev/infiniband/ucmN, mode 0600 (the default: root's, like umadN). */
static char *ucm_devnode(struct device *dev, umode_t *mode)
{
	return kasprintf(GFP_KERNEL, "infiniband/%s", dev_name(dev));
}

static struct class ucm_class = {
	.name		= "infiniband_cm",
	.devnode	= ucm_devnode,
	.class_groups	= ucm_class_groups,
	.dev_groups	= ucm_dev_groups,
};

static void ucm_dev_release(struct device *d)
{
	struct ucm_device *udev = container_of(d, struct ucm_device, dev);

	ida_free(&ucm_numbers, udev->devnum);
	kfree(udev);
}

static void ucm_add_device(struct ib_device *device);
static void ucm_remove_device(struct ib_device *device);

static struct ib_client ucm_client = {
	.name	= "ucm",
	.add	= ucm_add_device,
	.remove	= ucm_remove_device,
};

static void ucm_add_device(struct ib_device *device)
{
	struct ucm_device *udev;
	int devnum;

	devnum = ida_alloc_max(&ucm_numbers, UCM_MAX_DEVICES - 1, GFP_KERNEL);
	if (devnum < 0) {
		pr_warn("ib_ucm: no minor left for %s\n", device->name);
		return;
	}
	udev = kzalloc(sizeof(*udev), GFP_KERNEL);
	if (!udev) {
		ida_free(&ucm_numbers, devnum);
		return;
	}
	udev->devnum = devnum;
	udev->ib_dev = device;
	init_rwsem(&udev->rwsem);
	mutex_init(&udev->lock);
	INIT_LIST_HEAD(&udev->files);
	atomic64_set(&udev->events_dropped, 0);

	device_initialize(&udev->dev);
	udev->dev.class = &ucm_class;
	udev->dev.parent = device->dma_device;
	udev->dev.devt = ucm_base + devnum;
	udev->dev.release = ucm_dev_release;
	if (dev_set_name(&udev->dev, "ucm%d", devnum))
		goto err_put;
	cdev_init(&udev->cdev, &ucm_fops);
	udev->cdev.owner = THIS_MODULE;
	if (cdev_device_add(&udev->cdev, &udev->dev))
		goto err_put;
	ib_set_client_data(device, &ucm_client, udev);
	return;

err_put:
	/* The release frees the number and @udev. */
	put_device(&udev->dev);
}

/*
 * The device goes: no command reaches ib_cm any more (rwsem), every id
 * of every open file is ended before ib_cm's own remove runs (clients are
 * removed in the reverse order of registration, and ib_ucm needs ib_cm).
 * The files stay until closed: their queued events can still be read,
 * then EVENT answers EIO.
 */
static void ucm_remove_device(struct ib_device *device)
{
	struct ucm_device *udev = ib_get_client_data(device, &ucm_client);
	struct ucm_file *file;

	if (!udev)
		return;
	ib_set_client_data(device, &ucm_client, NULL);
	cdev_device_del(&udev->cdev, &udev->dev);

	down_write(&udev->rwsem);
	mutex_lock(&udev->lock);
	WRITE_ONCE(udev->dead, true);
	list_for_each_entry(file, &udev->files, list) {
		ucm_file_end_ids(file);
		wake_up_interruptible(&file->wait);
	}
	mutex_unlock(&udev->lock);
	up_write(&udev->rwsem);
	put_device(&udev->dev);
}

static int __init ucm_init(void)
{
	int ret;

	ret = register_chrdev_region(ucm_base, UCM_MAX_DEVICES, "infiniband_cm");
	if (ret) {
		pr_err("ib_ucm: cannot get the char region: %d\n", ret);
		return ret;
	}
	ret = class_register(&ucm_class);
	if (ret)
		goto err_region;
	ret = ib_register_client(&ucm_client);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_unregister(&ucm_class);
err_region:
	unregister_chrdev_region(ucm_base, UCM_MAX_DEVICES);
	return ret;
}

static void __exit ucm_cleanup(void)
{
	ib_unregister_client(&ucm_client);
	class_unregister(&ucm_class);
	unregister_chrdev_region(ucm_base, UCM_MAX_DEVICES);
	ida_destroy(&ucm_numbers);
}

module_init(ucm_init);
module_exit(ucm_cleanup);

#if IS_ENABLED(CONFIG_INFINIBAND_USER_CM_KUNIT_TEST)
#include "ucm_test.c"
#endif
