// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_cm: the InfiniBand communication manager (Documentation/cm.md).
 *
 * The runtime over the pure parts: an ib_client puts a GSI agent for the
 * CM class (0x07, version 2) on each port of each device; received CM
 * MADs and the consumer's calls become inputs of cm_step() (cm_state.c),
 * and the actions of each step are carried out here with the message
 * tables of cm_msgs.c. Retransmission is ib_mad's: an outstanding REQ,
 * REP or DREQ is sent with a timeout and MaxCMRetries retries, an answer
 * cancels it, an MRA stretches its timeout with ib_modify_mad().
 *
 * Consumer handlers run from the ib_cm workqueue, one id's events in
 * order through that id's own work item, never from a call of the
 * consumer's own. SIDR (IBA 12.11) resolves a service ID to a UD QP
 * with one SIDR_REQ/SIDR_REP exchange. LAP/APR (IBA 12.8) load an
 * alternate path into an established connection: the LAP is the
 * outstanding message until the APR (or an MRA for it) comes, and
 * ib_cm_init_qp_attr() gives the path to each side's RTS to RTS
 * transition once it may be loaded.
 */

#include <linux/completion.h>
#include <linux/err.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>

#include "cm_msgs.h"
#include "cm_state.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand communication manager");
MODULE_LICENSE("Dual BSD/GPL");

/* Every message we send or receive, unpacked. */
union cm_any {
	struct cm_req		req;
	struct cm_mra		mra;
	struct cm_rej		rej;
	struct cm_rep		rep;
	struct cm_rtu		rtu;
	struct cm_dreq		dreq;
	struct cm_drep		drep;
	struct cm_sidr_req	sidr_req;
	struct cm_sidr_rep	sidr_rep;
	struct cm_lap		lap;
	struct cm_apr		apr;
};

/*
 * struct cm_alt - an alternate path of a LAP exchange, as our QP loads it
 * @ah_attr: the address vector toward the peer on it
 * @port_num: the port of ours it leaves from
 * @pkey_index: the connection's P_Key there
 * @timeout: the transport timeout exponent on it
 */
struct cm_alt {
	struct ib_ah_attr	ah_attr;
	u8			port_num, timeout;
	u16			pkey_index;
};

struct cm_port {
	struct cm_device	*dev;
	u8			port_num;
	struct ib_mad_agent	*agent;
};

struct cm_device {
	struct ib_device	*ib;
	u8			ack_delay, first_port, nports;
	struct cm_port		ports[];
};

/**
 * struct cm_id_priv - the CM's side of a cm_id
 * @id: what the consumer sees
 * @lock: guards @id's state fields, @port, @ah, @msg, @last, @have_last,
 *	@qp and the timing fields, @events and @async_destroy; taken with
 *	interrupts off, inside cm.lock or alone; nothing that sleeps runs
 *	under it (sends and cancels of ib_mad do not sleep)
 * @port: the port the connection goes through (set by REQ sent/received)
 * @ah: the address of the peer's CM
 * @msg: the outstanding message ib_mad retransmits (REQ, REP, DREQ)
 * @last: the last message we sent, answering duplicates
 * @have_last: @last holds one
 * @qp: the connection's parameters for ib_cm_init_qp_attr()
 * @pkey: the connection's P_Key (network order)
 * @lap_alt: the alternate path of the LAP under way (the one we sent, or
 *	the one we received once its event ran), valid with @lap_alt_ok
 * @lap_alt_ok: @lap_alt holds the path of the current LAP exchange
 * @remote_ca_guid: the peer's CA GUID (with @id.remote_id: remote lookup)
 * @local_qpn: our QP of the connection (the REQ's or the REP's), which a
 *	received LAP must name
 * @plt: the path's PacketLifeTime exponent
 * @resp_timeout: the peer CM's response time exponent
 * @mra_timeout: the ServiceTimeout of the last MRA received
 * @max_cm_retries: resends of an outstanding message
 * @timewait_ms: how long timewait lasts
 * @destroying: no handler is called any more (written under @lock, read
 *	without it by the event work)
 * @async_destroy: a handler's non-zero return queued @destroy_work
 * @events: events waiting for the handler, run in order by @event_work
 * @event_work: runs the handler for each of @events
 * @destroy_work: destroys the id after its handler returned non-zero
 * @listen_node: on cm.listen (under cm.lock)
 * @remote_node: on cm.remote (under cm.lock): a passive id from its REQ
 *	on, an active one from the REP it accepted on
 * @in_remote: on cm.remote
 * @sidr_node: on cm.sidr while a received SIDR_REQ is unanswered (under
 *	cm.lock)
 * @sidr_lid: the requester's LID, for duplicate SIDR_REQs
 * @sidr_gid: the requester's GID (from the GRH; zero without one)
 * @timewait: ends timewait; holds a reference while queued
 * @refs: one for the consumer's handle, one per queued event, pending send
 *	and queued timewait; @done completes when it reaches zero
 * @done: what ib_destroy_cm_id() waits for
 */
struct cm_id_priv {
	struct ib_cm_id		id;
	/* the rule is @lock above */
	spinlock_t		lock;
	struct cm_port		*port;
	struct ib_ah		*ah;
	struct ib_mad_send_buf	*msg;
	u8			last[IB_MGMT_MAD_SIZE];
	bool			have_last;
	struct cm_qp_params	qp;
	__be16			pkey;
	struct cm_alt		lap_alt;
	bool			lap_alt_ok;
	__be64			remote_ca_guid;
	u32			local_qpn;
	u8			plt, resp_timeout, mra_timeout, max_cm_retries;
	unsigned long		timewait_ms;
	bool			destroying, async_destroy;
	struct list_head	events;
	struct work_struct	event_work;
	struct work_struct	destroy_work;
	struct list_head	listen_node, remote_node, sidr_node;
	bool			in_remote;
	u16			sidr_lid;
	union ib_gid		sidr_gid;
	struct delayed_work	timewait;
	refcount_t		refs;
	struct completion	done;
};

/* One event waiting for an id's handler. */
struct cm_work {
	struct list_head	list;
	enum ib_cm_event_type	event;
	/* for IB_CM_REQ_RECEIVED: the listener (a reference is held) */
	struct cm_id_priv	*listener;
	enum cm_msg_kind	kind;
	bool			have_mad;
	u8			port;
	u8			mad[IB_MGMT_MAD_SIZE];
};

static struct {
	/*
	 * Guards the listen and remote lists, the inserting and erasing of
	 * ->ids and the step from a lookup to taking a reference. Taken with
	 * interrupts off; an id's ->lock may be taken inside it (listen),
	 * never the other way round.
	 */
	spinlock_t		lock;
	struct list_head	listen;
	struct list_head	remote;
	/* passive ids of unanswered SIDR_REQs, for duplicates */
	struct list_head	sidr;
	/* local comm ID -> id; entries inserted and erased under ->lock */
	struct xarray		ids;
	u32			next_id;
	atomic64_t		tid;
	struct workqueue_struct	*wq;
	/* destroys asked for by a handler's non-zero return */
	struct workqueue_struct	*dwq;
} cm;

static struct ib_client cm_client;

static struct cm_id_priv *to_priv(struct ib_cm_id *id)
{
	return container_of(id, struct cm_id_priv, id);
}

static void cm_deref(struct cm_id_priv *priv)
{
	if (refcount_dec_and_test(&priv->refs))
		complete(&priv->done);
}

static struct cm_id_priv *cm_get_id(__be32 local_id)
{
	struct cm_id_priv *priv;
	unsigned long irq;

	spin_lock_irqsave(&cm.lock, irq);
	priv = xa_load(&cm.ids, be32_to_cpu(local_id));
	if (priv && !refcount_inc_not_zero(&priv->refs))
		priv = NULL;
	spin_unlock_irqrestore(&cm.lock, irq);
	return priv;
}

/* ------------------------------------------------------------------ */
/* Sending                                                              */

static struct ib_mad_send_buf *cm_alloc_msg(struct cm_port *port,
					    struct ib_ah *ah, gfp_t gfp)
{
	struct ib_mad_send_buf *m;

	m = ib_create_send_mad(port->agent, 1, 0, 0, IB_MGMT_MAD_HDR,
			       IB_MGMT_MAD_DATA, gfp);
	if (!IS_ERR(m))
		m->ah = ah;
	return m;
}

static void cm_pack(struct ib_mad_send_buf *m, enum cm_msg_kind kind,
		    const void *msg)
{
	cm_format_mad_hdr(m->mad, kind, atomic64_inc_return(&cm.tid));
	cm_msg_pack(kind, msg, (u8 *)m->mad + IB_MGMT_MAD_HDR);
}

/*
 * Post @m, packed, for @priv; with @timeout_ms it is the id's outstanding
 * message, resent up to @retries times. The copy is kept for duplicates.
 *
 * Context: @priv->lock held.
 */
static int cm_post(struct cm_id_priv *priv, struct ib_mad_send_buf *m,
		   int timeout_ms, int retries)
{
	const struct ib_mad_hdr *hdr = m->mad;
	int ret;

	/*
	 * A LAP is resent by ib_mad and an APR answers no duplicate: the
	 * stored message stays what answers a repeated REQ, REP or DREQ.
	 */
	if (hdr->attr_id != cpu_to_be16(IB_CM_ATTR_LAP) &&
	    hdr->attr_id != cpu_to_be16(IB_CM_ATTR_APR)) {
		memcpy(priv->last, m->mad, IB_MGMT_MAD_SIZE);
		priv->have_last = true;
	}
	m->context[0] = priv;
	m->timeout_ms = timeout_ms;
	m->retries = retries;
	refcount_inc(&priv->refs);
	ret = ib_post_send_mad(m, NULL);
	if (ret) {
		refcount_dec(&priv->refs);
		ib_free_send_mad(m);
		return ret;
	}
	if (timeout_ms) {
		/* a DREQ sent while our LAP is unanswered replaces it */
		if (priv->msg)
			ib_cancel_mad(priv->port->agent, priv->msg);
		priv->msg = m;
	}
	return 0;
}

/* Send one of our messages, not retransmitted. Context: @priv->lock. */
static void cm_post_once(struct cm_id_priv *priv, enum cm_msg_kind kind,
			 const void *msg)
{
	struct ib_mad_send_buf *m;

	if (!priv->port || !priv->ah)
		return;
	m = cm_alloc_msg(priv->port, priv->ah, GFP_ATOMIC);
	if (IS_ERR(m))
		return;
	cm_pack(m, kind, msg);
	cm_post(priv, m, 0, 0);
}

/* Answer a duplicate with the stored message. Context: @priv->lock. */
static void cm_resend_last(struct cm_id_priv *priv)
{
	struct ib_mad_send_buf *m;

	if (!priv->have_last || !priv->port || !priv->ah)
		return;
	m = cm_alloc_msg(priv->port, priv->ah, GFP_ATOMIC);
	if (IS_ERR(m))
		return;
	memcpy(m->mad, priv->last, IB_MGMT_MAD_SIZE);
	m->context[0] = priv;
	refcount_inc(&priv->refs);
	if (ib_post_send_mad(m, NULL)) {
		refcount_dec(&priv->refs);
		ib_free_send_mad(m);
	}
}

static u8 cm_rej_msg_of(enum ib_cm_state state)
{
	switch (state) {
	case IB_CM_REQ_RCVD:
	case IB_CM_MRA_REQ_SENT:
		return IB_CM_REJ_MSG_REQ;
	case IB_CM_REP_RCVD:
	case IB_CM_MRA_REP_SENT:
		return IB_CM_REJ_MSG_REP;
	default:
		return IB_CM_REJ_MSG_OTHER;
	}
}

static int cm_format_rej(struct cm_rej *r, struct cm_id_priv *priv, u8 reason,
			 const void *ari, u8 ari_length,
			 const void *pdata, u8 pdata_len)
{
	if (ari_length > IB_CM_REJ_ARI_LENGTH || (ari_length && !ari) ||
	    pdata_len > IB_CM_REJ_PRIVATE_DATA_SIZE || (pdata_len && !pdata))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	r->message_rejected = cm_rej_msg_of(priv->id.state);
	r->reason = cpu_to_be16(reason);
	r->ari_length = ari_length;
	if (ari_length)
		memcpy(r->ari, ari, ari_length);
	if (pdata_len)
		memcpy(r->private_data, pdata, pdata_len);
	return 0;
}

/*
 * The REJ the CM sends itself (a timeout, a destroy, a stale REP); @in is
 * the input that sends it. Context: @priv->lock.
 *
 * Return: the REJ as sent (a copy in @priv->last, valid while the lock is
 * held), or NULL if it could not be sent.
 */
static const struct ib_mad *cm_send_own_rej(struct cm_id_priv *priv, u8 reason,
					    enum cm_input in)
{
	__be64 guid = priv->id.device->node_guid;
	struct cm_rej *r = kmalloc(sizeof(*r), GFP_ATOMIC);
	struct ib_mad_send_buf *m;
	const struct ib_mad *sent = NULL;

	if (!r)
		return NULL;
	if (reason == IB_CM_REJ_TIMEOUT)
		cm_format_rej(r, priv, reason, &guid, sizeof(guid), NULL, 0);
	else
		cm_format_rej(r, priv, reason, NULL, 0, NULL, 0);
	/* the state is still REQ_SENT: name the message it refuses */
	if (in == CM_IN_RECV_REP_STALE)
		r->message_rejected = IB_CM_REJ_MSG_REP;
	if (!priv->port || !priv->ah)
		goto out;
	m = cm_alloc_msg(priv->port, priv->ah, GFP_ATOMIC);
	if (IS_ERR(m))
		goto out;
	cm_pack(m, CM_MSG_REJ, r);
	if (!cm_post(priv, m, 0, 0))
		sent = (const struct ib_mad *)priv->last;
out:
	kfree(r);
	return sent;
}

/*
 * The DREQ the CM sends itself (a destroy, a stale connection); with
 * @arm it is the outstanding message, resent until the DREP comes.
 * Context: @priv->lock.
 */
static void cm_send_own_dreq(struct cm_id_priv *priv, bool arm)
{
	struct cm_dreq *d = kzalloc(sizeof(*d), GFP_ATOMIC);
	struct ib_mad_send_buf *m;

	if (!d)
		return;
	d->local_comm_id = priv->id.local_id;
	d->remote_comm_id = priv->id.remote_id;
	d->remote_qpn_eecn = cpu_to_be32(priv->qp.remote_qpn);
	if (!arm) {
		cm_post_once(priv, CM_MSG_DREQ, d);
		goto out;
	}
	if (!priv->port || !priv->ah)
		goto out;
	m = cm_alloc_msg(priv->port, priv->ah, GFP_ATOMIC);
	if (IS_ERR(m))
		goto out;
	cm_pack(m, CM_MSG_DREQ, d);
	cm_post(priv, m, cm_req_timeout_ms(priv->plt, priv->resp_timeout),
		priv->max_cm_retries);
out:
	kfree(d);
}

/* SIDR_REP REJECT for a SIDR_REQ the consumer dropped. Context: lock. */
static void cm_send_own_sidr_rej(struct cm_id_priv *priv)
{
	struct cm_sidr_rep *r = kzalloc(sizeof(*r), GFP_ATOMIC);

	if (!r)
		return;
	r->request_id = priv->id.remote_id;
	r->status = IB_SIDR_REJECT;
	r->service_id = priv->id.service_id;
	cm_post_once(priv, CM_MSG_SIDR_REP, r);
	kfree(r);
}

static void cm_send_own_drep(struct cm_id_priv *priv)
{
	struct cm_drep *d = kzalloc(sizeof(*d), GFP_ATOMIC);

	if (!d)
		return;
	d->local_comm_id = priv->id.local_id;
	d->remote_comm_id = priv->id.remote_id;
	cm_post_once(priv, CM_MSG_DREP, d);
	kfree(d);
}

/* ------------------------------------------------------------------ */
/* Events                                                               */

/*
 * Queue @event for @priv's handler, with a copy of the MAD it came in.
 *
 * Context: @priv->lock held.
 */
static void cm_queue_event(struct cm_id_priv *priv, enum ib_cm_event_type event,
			   const struct ib_mad *mad, struct cm_id_priv *listener)
{
	struct cm_work *w;

	if (priv->destroying)
		return;
	w = kzalloc(sizeof(*w), GFP_ATOMIC);
	if (!w) {
		pr_warn_ratelimited("ib_cm: no memory for the %s event of id %#x\n",
				    cm_event_name(event),
				    be32_to_cpu(priv->id.local_id));
		return;
	}
	w->event = event;
	w->port = priv->port ? priv->port->port_num : 0;
	if (mad) {
		w->have_mad = true;
		w->kind = cm_msg_kind_of_attr(be16_to_cpu(mad->mad_hdr.attr_id));
		memcpy(w->mad, mad, IB_MGMT_MAD_SIZE);
	}
	if (listener) {
		refcount_inc(&listener->refs);
		w->listener = listener;
	}
	refcount_inc(&priv->refs);
	list_add_tail(&w->list, &priv->events);
	queue_work(cm.wq, &priv->event_work);
}

static void cm_destroy_async(struct cm_id_priv *priv)
{
	unsigned long irq;
	bool first;

	spin_lock_irqsave(&priv->lock, irq);
	first = !priv->async_destroy;
	priv->async_destroy = true;
	spin_unlock_irqrestore(&priv->lock, irq);
	if (first)
		queue_work(cm.dwq, &priv->destroy_work);
}

static void cm_destroy_work(struct work_struct *work)
{
	ib_destroy_cm_id(&container_of(work, struct cm_id_priv,
				       destroy_work)->id);
}

/*
 * A path block of a REQ or LAP as its receiver sees the path. The service
 * ID, P_Key and MTU come from elsewhere: a LAP carries none of them (they
 * stay the connection's).
 */
static void cm_path_from_msg(struct ib_sa_path_rec *p, __be64 service_id,
			     __be16 pkey, u8 mtu, const struct cm_msg_path *mp)
{
	/* the sender's "local" end is our remote one, and the reverse */
	*p = (struct ib_sa_path_rec) {
		.service_id	= service_id,
		.pkey		= pkey,
		.mtu		= mtu,
		.mtu_selector	= IB_SA_EQ,
		.sgid		= mp->remote_gid,
		.slid		= mp->remote_lid,
		.dgid		= mp->local_gid,
		.dlid		= mp->local_lid,
		.sl		= mp->sl,
		.traffic_class	= mp->traffic_class,
		.flow_label	= mp->flow_label,
		.hop_limit	= mp->hop_limit,
		.rate		= mp->packet_rate,
		.rate_selector	= IB_SA_EQ,
		.reversible	= 1,
		.numb_path	= 1,
		/* the ACK timeout covers two lifetimes and the CA's delay */
		.packet_life_time = mp->local_ack_timeout ?
				    mp->local_ack_timeout - 1 : 0,
		.packet_life_time_selector = IB_SA_EQ,
	};
}

/* Fill @ev from the message @m of @w for @priv. */
static void cm_fill_event(struct ib_cm_event *ev, struct cm_id_priv *priv,
			  struct cm_work *w, union cm_any *m,
			  struct ib_sa_path_rec *paths)
{
	switch (w->kind) {
	case CM_MSG_REQ: {
		struct ib_cm_req_event_param *p = &ev->param.req_rcvd;
		const struct cm_req *r = &m->req;

		/* The sender's "local" fields are our "remote" ones. */
		*p = (struct ib_cm_req_event_param) {
			.listen_id = w->listener ? &w->listener->id : NULL,
			.port = w->port,
			.primary_path = &paths[0],
			.remote_ca_guid = r->local_ca_guid,
			.remote_qkey = be32_to_cpu(r->local_qkey),
			.remote_qpn = be32_to_cpu(r->local_qpn),
			.starting_psn = be32_to_cpu(r->starting_psn),
			.qp_type = r->transport_type ? IB_QPT_UC : IB_QPT_RC,
			.srq = r->srq,
			.flow_control = r->end_to_end_flow_control,
			.responder_resources = r->responder_resources,
			.initiator_depth = r->initiator_depth,
			.local_cm_response_timeout = r->local_cm_response_timeout,
			.remote_cm_response_timeout = r->remote_cm_response_timeout,
			.retry_count = r->retry_count,
			.rnr_retry_count = r->rnr_retry_count,
			.max_cm_retries = r->max_cm_retries,
		};
		cm_path_from_msg(&paths[0], r->service_id, r->pkey,
				 r->path_mtu, &r->primary);
		if (r->alternate.local_lid || r->alternate.remote_lid) {
			cm_path_from_msg(&paths[1], r->service_id, r->pkey,
					 r->path_mtu, &r->alternate);
			p->alternate_path = &paths[1];
		}
		ev->private_data = m->req.private_data;
		break;
	}
	case CM_MSG_REP: {
		struct ib_cm_rep_event_param *p = &ev->param.rep_rcvd;
		const struct cm_rep *r = &m->rep;

		*p = (struct ib_cm_rep_event_param) {
			.remote_ca_guid = r->local_ca_guid,
			.remote_qkey = be32_to_cpu(r->local_qkey),
			.remote_qpn = be32_to_cpu(r->local_qpn),
			.starting_psn = be32_to_cpu(r->starting_psn),
			.srq = r->srq,
			.flow_control = r->end_to_end_flow_control,
			.failover_accepted = r->failover_accepted,
			.target_ack_delay = r->target_ack_delay,
			.responder_resources = r->responder_resources,
			.initiator_depth = r->initiator_depth,
			.rnr_retry_count = r->rnr_retry_count,
		};
		ev->private_data = m->rep.private_data;
		break;
	}
	case CM_MSG_REJ:
		ev->param.rej_rcvd.reason = be16_to_cpu(m->rej.reason);
		ev->param.rej_rcvd.ari_length = min_t(u8, m->rej.ari_length,
						      IB_CM_REJ_ARI_LENGTH);
		ev->param.rej_rcvd.ari = m->rej.ari;
		ev->private_data = m->rej.private_data;
		break;
	case CM_MSG_MRA:
		ev->param.mra_rcvd.service_timeout = m->mra.service_timeout;
		ev->private_data = m->mra.private_data;
		break;
	case CM_MSG_RTU:
		ev->private_data = m->rtu.private_data;
		break;
	case CM_MSG_DREQ:
		ev->private_data = m->dreq.private_data;
		break;
	case CM_MSG_DREP:
		ev->private_data = m->drep.private_data;
		break;
	case CM_MSG_SIDR_REQ:
		ev->param.sidr_req_rcvd = (struct ib_cm_sidr_req_event_param) {
			.listen_id = w->listener ? &w->listener->id : NULL,
			.pkey = be16_to_cpu(m->sidr_req.pkey),
			.port = w->port,
		};
		ev->private_data = m->sidr_req.private_data;
		break;
	case CM_MSG_SIDR_REP:
		ev->param.sidr_rep_rcvd = (struct ib_cm_sidr_rep_event_param) {
			.status = m->sidr_rep.status,
			.qkey = be32_to_cpu(m->sidr_rep.qkey),
			.qpn = be32_to_cpu(m->sidr_rep.qpn),
			.info_len = min_t(u8, m->sidr_rep.info_length,
					  IB_CM_SIDR_REP_INFO_LENGTH),
			.info = m->sidr_rep.info,
		};
		ev->private_data = m->sidr_rep.private_data;
		break;
	case CM_MSG_LAP:
		cm_path_from_msg(&paths[0], priv->id.service_id, priv->pkey,
				 priv->qp.path_mtu, &m->lap.alternate);
		ev->param.lap_rcvd.alternate_path = &paths[0];
		ev->private_data = m->lap.private_data;
		break;
	case CM_MSG_APR:
		ev->param.apr_rcvd = (struct ib_cm_apr_event_param) {
			.ap_status = m->apr.ap_status,
			.info_len = min_t(u8, m->apr.info_length,
					  IB_CM_APR_INFO_LENGTH),
			.apr_info = m->apr.info,
		};
		ev->private_data = m->apr.private_data;
		break;
	default:
		break;
	}
}

static struct cm_port *cm_port_of_lid(struct cm_device *cdev, u16 lid);

/* The address vector of a path block, seen from its receiver's side. */
static void cm_ah_attr_of_msg_path(struct ib_ah_attr *ah,
				   const struct cm_msg_path *mp, u8 port_num)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = be16_to_cpu(mp->local_lid);
	ah->sl = mp->sl;
	ah->static_rate = mp->packet_rate;
	ah->port_num = port_num;
	if (!mp->subnet_local) {
		ah->ah_flags = IB_AH_GRH;
		ah->grh.dgid = mp->local_gid;
		ah->grh.flow_label = be32_to_cpu(mp->flow_label);
		ah->grh.hop_limit = mp->hop_limit;
		ah->grh.traffic_class = mp->traffic_class;
	}
}

/*
 * A received LAP's alternate path, as our QP will load it: the port is
 * the one whose LID the path names as ours (the LAP's port if none),
 * the P_Key the connection's. Found before the consumer hears of the
 * LAP, since the lookups may sleep.
 *
 * Context: process (the event work).
 */
static void cm_lap_alt_in(struct cm_id_priv *priv, u8 port_num,
			  const struct cm_lap *lap)
{
	struct cm_device *cdev = ib_get_client_data(priv->id.device, &cm_client);
	const struct cm_msg_path *mp = &lap->alternate;
	struct cm_port *port = NULL;
	struct cm_alt alt = {};
	unsigned long irq;
	u16 idx = 0;

	if (cdev)
		port = cm_port_of_lid(cdev, be16_to_cpu(mp->remote_lid));
	if (port)
		port_num = port->port_num;
	cm_ah_attr_of_msg_path(&alt.ah_attr, mp, port_num);
	alt.port_num = port_num;
	alt.timeout = mp->local_ack_timeout;
	if (!ib_find_cached_pkey(priv->id.device, port_num,
				 be16_to_cpu(priv->pkey), &idx))
		alt.pkey_index = idx;
	spin_lock_irqsave(&priv->lock, irq);
	if (priv->id.lap_state == IB_CM_LAP_RCVD ||
	    priv->id.lap_state == IB_CM_MRA_LAP_SENT) {
		priv->lap_alt = alt;
		priv->lap_alt_ok = true;
	}
	spin_unlock_irqrestore(&priv->lock, irq);
}

static void cm_alt_to_qp(struct cm_qp_params *q, const struct cm_alt *a)
{
	q->alt_valid = true;
	q->alt_ah_attr = a->ah_attr;
	q->alt_port_num = a->port_num;
	q->alt_pkey_index = a->pkey_index;
	q->alt_timeout = a->timeout;
}

/* The alternate path of the exchange is the connection's now. Context: lock. */
static void cm_lap_alt_commit(struct cm_id_priv *priv)
{
	if (priv->lap_alt_ok)
		cm_alt_to_qp(&priv->qp, &priv->lap_alt);
	priv->lap_alt_ok = false;
}

static void cm_run_one(struct cm_id_priv *priv, struct cm_work *w)
{
	struct ib_sa_path_rec *paths = NULL;
	union cm_any *m = NULL;
	struct ib_cm_event ev;
	int ret;

	if (READ_ONCE(priv->destroying))
		return;
	if (w->listener && READ_ONCE(w->listener->destroying)) {
		/* nobody is left to take the new connection */
		cm_destroy_async(priv);
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.event = w->event;
	if (w->have_mad) {
		m = kmalloc(sizeof(*m), GFP_KERNEL);
		paths = kcalloc(2, sizeof(*paths), GFP_KERNEL);
		if (!m || !paths) {
			cm_destroy_async(priv);
			goto out;
		}
		cm_msg_unpack(w->kind, w->mad + IB_MGMT_MAD_HDR, m);
		if (w->kind == CM_MSG_LAP)
			cm_lap_alt_in(priv, w->port, &m->lap);
		cm_fill_event(&ev, priv, w, m, paths);
	} else if (w->event == IB_CM_REQ_ERROR || w->event == IB_CM_REP_ERROR ||
		   w->event == IB_CM_DREQ_ERROR || w->event == IB_CM_LAP_ERROR ||
		   w->event == IB_CM_SIDR_REQ_ERROR) {
		ev.param.send_status = IB_WC_RESP_TIMEOUT_ERR;
	} else if (w->event == IB_CM_REJ_RECEIVED) {
		/* a stale REP whose REJ could not be sent (no memory) */
		ev.param.rej_rcvd.reason = IB_CM_REJ_STALE_CONN;
	}
	ret = priv->id.cm_handler(&priv->id, &ev);
	if (ret)
		cm_destroy_async(priv);
out:
	kfree(paths);
	kfree(m);
}

static void cm_event_work(struct work_struct *work)
{
	struct cm_id_priv *priv = container_of(work, struct cm_id_priv,
					       event_work);
	struct cm_work *w;
	unsigned long irq;

	for (;;) {
		spin_lock_irqsave(&priv->lock, irq);
		w = list_first_entry_or_null(&priv->events, struct cm_work, list);
		if (w)
			list_del(&w->list);
		spin_unlock_irqrestore(&priv->lock, irq);
		if (!w)
			break;
		cm_run_one(priv, w);
		if (w->listener)
			cm_deref(w->listener);
		kfree(w);
		cm_deref(priv);
	}
}

/* ------------------------------------------------------------------ */
/* Steps                                                                */

static void cm_timewait_start(struct cm_id_priv *priv)
{
	if (priv->destroying)
		return;
	refcount_inc(&priv->refs);
	if (!queue_delayed_work(cm.wq, &priv->timewait,
				msecs_to_jiffies(priv->timewait_ms)))
		refcount_dec(&priv->refs);
}

/*
 * Feed @in to @priv and carry out what the step asks, except sending
 * the consumer's own message (the caller does that). @mad is the
 * received message, handed to the event.
 *
 * Context: @priv->lock held.
 *
 * Return: 0; 1 when the input was dropped; -EINVAL for a call not legal
 * in the id's state.
 */
static int cm_do_step(struct cm_id_priv *priv, enum cm_input in,
		      const struct ib_mad *mad, struct cm_id_priv *listener)
{
	const struct ib_mad *rej;
	struct cm_step st;
	int ret;

	ret = cm_step(priv->id.state, priv->id.lap_state, in, &st);
	if (ret)
		return ret;
	if (st.actions & CM_DO_DROP)
		return 1;
	/*
	 * Leaving ESTABLISHED ends the LAP exchange: our LAP is not resent.
	 * (A call that sends posted its message already; cm_post() replaced
	 * the LAP with it.)
	 */
	if (!(cm_input_is_call(in) && (st.actions & CM_DO_SEND)) &&
	    st.next != IB_CM_ESTABLISHED && priv->msg &&
	    (priv->id.lap_state == IB_CM_LAP_SENT ||
	     priv->id.lap_state == IB_CM_MRA_LAP_RCVD)) {
		ib_cancel_mad(priv->port->agent, priv->msg);
		priv->msg = NULL;
	}
	if ((st.actions & CM_DO_CANCEL) && priv->msg) {
		ib_cancel_mad(priv->port->agent, priv->msg);
		priv->msg = NULL;
	}
	if ((st.actions & CM_DO_MRA_WAIT) && priv->msg)
		ib_modify_mad(priv->port->agent, priv->msg,
			      cm_mra_timeout_ms(priv->mra_timeout, priv->plt));
	if (st.actions & CM_DO_RESEND)
		cm_resend_last(priv);
	if (st.actions & CM_DO_SEND_REJ) {
		rej = cm_send_own_rej(priv, st.rej_reason, in);
		/* the consumer gets the REJ its id's CM sent for it */
		if (in == CM_IN_RECV_REP_STALE)
			mad = rej;
	}
	if (st.actions & CM_DO_SEND_DREQ)
		cm_send_own_dreq(priv, st.actions & CM_DO_ARM);
	if (st.actions & CM_DO_SIDR_REJECT)
		cm_send_own_sidr_rej(priv);
	if (st.actions & CM_DO_SEND_DREP)
		cm_send_own_drep(priv);
	priv->id.state = st.next;
	priv->id.lap_state = st.next_lap;
	if (st.actions & CM_DO_TIMEWAIT)
		cm_timewait_start(priv);
	if (st.event != CM_NO_EVENT)
		cm_queue_event(priv, st.event, mad, listener);
	return 0;
}

static void cm_timewait_work(struct work_struct *work)
{
	struct cm_id_priv *priv = container_of(to_delayed_work(work),
					       struct cm_id_priv, timewait);
	unsigned long irq;

	spin_lock_irqsave(&priv->lock, irq);
	cm_do_step(priv, CM_IN_TIMEWAIT_DONE, NULL, NULL);
	spin_unlock_irqrestore(&priv->lock, irq);
	cm_deref(priv);
}

/* ------------------------------------------------------------------ */
/* Receiving                                                            */

static struct cm_id_priv *cm_find_remote(__be32 remote_id, __be64 guid)
{
	struct cm_id_priv *p;

	list_for_each_entry(p, &cm.remote, remote_node)
		if (p->id.remote_id == remote_id && p->remote_ca_guid == guid &&
		    refcount_inc_not_zero(&p->refs))
			return p;
	return NULL;
}

static bool cm_sid_match(__be64 sid, __be64 lsid, __be64 mask)
{
	return !((sid ^ lsid) & mask);
}

static struct cm_id_priv *cm_find_listen(struct ib_device *dev, __be64 sid)
{
	struct cm_id_priv *p;

	list_for_each_entry(p, &cm.listen, listen_node)
		if (p->id.device == dev &&
		    cm_sid_match(sid, p->id.service_id, p->id.service_mask) &&
		    refcount_inc_not_zero(&p->refs))
			return p;
	return NULL;
}

/*
 * Send @msg to where @rwc came from, for no id: the answer to a message
 * no id takes (a REQ nobody wants, a SIDR_REQ for an unknown service, a
 * DREQ for an unknown comm ID). The send handler frees the AH.
 */
static void cm_answer_sender(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			     enum cm_msg_kind kind, const void *msg)
{
	struct ib_mad_send_buf *m;
	struct ib_ah *ah;

	ah = ib_create_ah_from_wc(port->agent->qp->pd, rwc->wc,
				  rwc->recv_buf.grh, port->port_num);
	if (IS_ERR(ah))
		return;
	m = cm_alloc_msg(port, ah, GFP_ATOMIC);
	if (IS_ERR(m))
		goto err;
	cm_pack(m, kind, msg);
	m->context[0] = NULL;
	m->context[1] = ah;
	if (ib_post_send_mad(m, NULL)) {
		ib_free_send_mad(m);
		goto err;
	}
	return;
err:
	ib_destroy_ah(ah);
}

/* REJ to a REQ nobody takes (no listener, stale), to where it came from. */
static void cm_rej_unknown(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			   const struct cm_req *req, u8 reason)
{
	struct cm_rej *r = kzalloc(sizeof(*r), GFP_ATOMIC);

	if (!r)
		return;
	r->remote_comm_id = req->local_comm_id;
	r->message_rejected = IB_CM_REJ_MSG_REQ;
	r->reason = cpu_to_be16(reason);
	cm_answer_sender(port, rwc, CM_MSG_REJ, r);
	kfree(r);
}

/*
 * A connection, other than @skip's, that holds the peer CA @guid's QP
 * @qpn or (when @comm_id is not 0) its comm ID @comm_id: a new REQ or REP
 * naming either finds a stale connection (IBA 12.9.8.3.1). It must not be
 * idle; with @connected not in timewait either (the REP's rule: the IBA's
 * "considers connected", and 6.1 drops an id from its remote tables as it
 * enters timewait). Passive ids are on cm.remote from their REQ, active
 * ones from the REP they accepted.
 *
 * Context: cm.lock held; a reference is taken.
 */
static struct cm_id_priv *cm_find_live(__be64 guid, __be32 comm_id, u32 qpn,
				       struct cm_id_priv *skip, bool connected)
{
	struct cm_id_priv *p;
	bool hit;

	list_for_each_entry(p, &cm.remote, remote_node) {
		if (p == skip)
			continue;
		spin_lock(&p->lock);
		hit = p->id.state != IB_CM_IDLE &&
		      !(connected && p->id.state == IB_CM_TIMEWAIT) &&
		      p->remote_ca_guid == guid &&
		      (p->qp.remote_qpn == qpn ||
		       (comm_id && p->id.remote_id == comm_id));
		spin_unlock(&p->lock);
		if (hit && refcount_inc_not_zero(&p->refs))
			return p;
	}
	return NULL;
}

/* The id whose connection a REQ from (@qpn, @guid) would repeat. */
static struct cm_id_priv *cm_find_stale(u32 qpn, __be64 guid)
{
	return cm_find_live(guid, 0, qpn, NULL, false);
}

/*
 * An active id whose REP was accepted joins cm.remote, so that a later
 * REQ or REP naming the same peer QP finds it. Not once ib_destroy_cm_id()
 * has begun: it takes the id off the lists after marking it.
 */
static void cm_remote_add(struct cm_id_priv *priv)
{
	unsigned long irq;

	spin_lock_irqsave(&cm.lock, irq);
	spin_lock(&priv->lock);
	if (!priv->destroying && list_empty(&priv->remote_node)) {
		list_add_tail(&priv->remote_node, &cm.remote);
		priv->in_remote = true;
	}
	spin_unlock(&priv->lock);
	spin_unlock_irqrestore(&cm.lock, irq);
}

static struct cm_id_priv *cm_alloc_priv(struct ib_device *device,
					ib_cm_handler handler, void *context,
					gfp_t gfp);
static void cm_free_priv(struct cm_id_priv *priv);

/* The connection parameters of a passive id, from the REQ. */
static void cm_passive_params(struct cm_id_priv *priv, struct cm_port *port,
			      const struct cm_req *req)
{
	struct cm_qp_params *q = &priv->qp;
	const struct cm_msg_path *pp = &req->primary;
	u16 idx = 0;

	q->qp_type = req->transport_type ? IB_QPT_UC : IB_QPT_RC;
	q->port_num = port->port_num;
	priv->pkey = req->pkey;
	if (!ib_find_cached_pkey(port->dev->ib, port->port_num,
				 be16_to_cpu(req->pkey), &idx))
		q->pkey_index = idx;
	cm_ah_attr_of_msg_path(&q->ah_attr, pp, port->port_num);
	q->path_mtu = req->path_mtu;
	q->remote_qpn = be32_to_cpu(req->local_qpn);
	q->sq_psn = be32_to_cpu(req->starting_psn);
	q->local_ack_timeout = pp->local_ack_timeout;
	q->retry_count = req->retry_count;
	q->rnr_retry_count = req->rnr_retry_count;
	/*
	 * What the REQ offers, seen from this side, until the REP says what
	 * was accepted: the RTS a consumer may ask for before its REP.
	 */
	q->initiator_depth = req->responder_resources;
	q->responder_resources = req->initiator_depth;
	priv->plt = pp->local_ack_timeout ? pp->local_ack_timeout - 1 : 0;
	/* our REP waits for the active CM's answer */
	priv->resp_timeout = req->local_cm_response_timeout;
	priv->max_cm_retries = req->max_cm_retries;
	priv->timewait_ms = cm_req_timeout_ms(priv->plt,
					      req->remote_cm_response_timeout);
}

static void cm_recv_req(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			const struct cm_req *req)
{
	struct ib_mad *mad = rwc->recv_buf.mad;
	struct cm_id_priv *old, *stale = NULL, *listener = NULL, *priv;
	struct cm_req_match match = {};
	unsigned long irq;
	u8 reason;
	u32 id;

	spin_lock_irqsave(&cm.lock, irq);
	old = cm_find_remote(req->local_comm_id, req->local_ca_guid);
	if (!old)
		stale = cm_find_stale(be32_to_cpu(req->local_qpn),
				      req->local_ca_guid);
	if (!old && !stale)
		listener = cm_find_listen(port->dev->ib, req->service_id);
	spin_unlock_irqrestore(&cm.lock, irq);
	match.dup_comm_id = old;
	match.dup_qpn = stale;
	match.listener = listener;

	switch (cm_classify_req(&match, &reason)) {
	case CM_REQ_DUPLICATE:
		/* a repeat: answered from what we sent (cm_step decides) */
		spin_lock_irqsave(&old->lock, irq);
		cm_do_step(old, CM_IN_RECV_REQ, mad, NULL);
		spin_unlock_irqrestore(&old->lock, irq);
		cm_deref(old);
		return;
	case CM_REQ_STALE:
		/* IBA 12.9.8.3.1: REJ the REQ, tear the old connection down */
		cm_rej_unknown(port, rwc, req, reason);
		spin_lock_irqsave(&stale->lock, irq);
		cm_do_step(stale, CM_IN_STALE, NULL, NULL);
		spin_unlock_irqrestore(&stale->lock, irq);
		cm_deref(stale);
		return;
	case CM_REQ_NO_LISTENER:
		cm_rej_unknown(port, rwc, req, reason);
		return;
	case CM_REQ_NEW:
		break;
	}

	priv = cm_alloc_priv(port->dev->ib, listener->id.cm_handler,
			     listener->id.context, GFP_ATOMIC);
	if (IS_ERR(priv))
		goto out;
	priv->port = port;
	priv->ah = ib_create_ah_from_wc(port->agent->qp->pd, rwc->wc,
					rwc->recv_buf.grh, port->port_num);
	if (IS_ERR(priv->ah)) {
		priv->ah = NULL;
		cm_free_priv(priv);
		goto out;
	}
	priv->id.service_id = req->service_id;
	priv->id.remote_id = req->local_comm_id;
	priv->remote_ca_guid = req->local_ca_guid;
	cm_passive_params(priv, port, req);
	priv->id.state = IB_CM_REQ_RCVD;

	if (xa_alloc_cyclic(&cm.ids, &id, NULL, xa_limit_32b, &cm.next_id,
			    GFP_ATOMIC) < 0) {
		cm_free_priv(priv);
		goto out;
	}
	priv->id.local_id = cpu_to_be32(id);
	spin_lock_irqsave(&cm.lock, irq);
	xa_store(&cm.ids, id, priv, GFP_ATOMIC);
	list_add_tail(&priv->remote_node, &cm.remote);
	priv->in_remote = true;
	spin_unlock_irqrestore(&cm.lock, irq);

	spin_lock_irqsave(&priv->lock, irq);
	cm_queue_event(priv, IB_CM_REQ_RECEIVED, mad, listener);
	spin_unlock_irqrestore(&priv->lock, irq);
out:
	cm_deref(listener);
}

/*
 * The passive id of an unanswered SIDR_REQ that @req repeats: the same
 * RequestID from the same port (LID and GID). Context: cm.lock held; a
 * reference is taken.
 */
static struct cm_id_priv *cm_find_sidr(__be32 request_id, u16 lid,
				       const union ib_gid *gid)
{
	struct cm_id_priv *p;

	list_for_each_entry(p, &cm.sidr, sidr_node)
		if (p->id.remote_id == request_id && p->sidr_lid == lid &&
		    !memcmp(&p->sidr_gid, gid, sizeof(*gid)) &&
		    refcount_inc_not_zero(&p->refs))
			return p;
	return NULL;
}

/*
 * A SIDR_REQ (IBA 12.11): a repeat goes to the id it repeats (the table
 * drops it), a new one to a new id of the listener of its service; one
 * for a service nobody listens on is answered SIDR_REP UNSUPPORTED.
 */
static void cm_recv_sidr_req(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			     const struct cm_sidr_req *req)
{
	struct cm_id_priv *listener = NULL, *dup, *priv;
	struct ib_mad *mad = rwc->recv_buf.mad;
	union ib_gid gid = {};
	struct cm_sidr_rep *r;
	unsigned long irq;
	u32 id;

	if ((rwc->wc->wc_flags & IB_WC_GRH) && rwc->recv_buf.grh)
		gid = rwc->recv_buf.grh->sgid;

	/* everything a new id needs, before the lookups that publish it */
	priv = cm_alloc_priv(port->dev->ib, NULL, NULL, GFP_ATOMIC);
	if (IS_ERR(priv))
		return;
	priv->port = port;
	priv->id.service_id = req->service_id;
	priv->id.remote_id = req->request_id;
	priv->sidr_lid = rwc->wc->slid;
	priv->sidr_gid = gid;
	priv->id.state = IB_CM_SIDR_REQ_RCVD;
	priv->ah = ib_create_ah_from_wc(port->agent->qp->pd, rwc->wc,
					rwc->recv_buf.grh, port->port_num);
	if (IS_ERR(priv->ah)) {
		priv->ah = NULL;
		goto free;
	}
	if (xa_alloc_cyclic(&cm.ids, &id, NULL, xa_limit_32b, &cm.next_id,
			    GFP_ATOMIC) < 0)
		goto free;
	priv->id.local_id = cpu_to_be32(id);

	spin_lock_irqsave(&cm.lock, irq);
	dup = cm_find_sidr(req->request_id, priv->sidr_lid, &gid);
	if (!dup)
		listener = cm_find_listen(port->dev->ib, req->service_id);
	if (listener) {
		priv->id.cm_handler = listener->id.cm_handler;
		priv->id.context = listener->id.context;
		xa_store(&cm.ids, id, priv, GFP_ATOMIC);
		list_add_tail(&priv->sidr_node, &cm.sidr);
	} else {
		xa_erase(&cm.ids, id);
	}
	spin_unlock_irqrestore(&cm.lock, irq);

	if (dup) {
		spin_lock_irqsave(&dup->lock, irq);
		cm_do_step(dup, CM_IN_RECV_SIDR_REQ, mad, NULL);
		spin_unlock_irqrestore(&dup->lock, irq);
		cm_deref(dup);
		goto free;
	}
	if (!listener) {
		r = kzalloc(sizeof(*r), GFP_ATOMIC);
		if (r) {
			r->request_id = req->request_id;
			r->status = IB_SIDR_UNSUPPORTED;
			r->service_id = req->service_id;
			cm_answer_sender(port, rwc, CM_MSG_SIDR_REP, r);
			kfree(r);
		}
		goto free;
	}
	spin_lock_irqsave(&priv->lock, irq);
	cm_queue_event(priv, IB_CM_SIDR_REQ_RECEIVED, mad, listener);
	spin_unlock_irqrestore(&priv->lock, irq);
	cm_deref(listener);
	return;
free:
	cm_free_priv(priv);
}

/* The id a message names as ours, and the input it is. */
static int cm_recv_input(enum cm_msg_kind kind, const union cm_any *m,
			 __be32 *ours, __be32 *theirs)
{
	switch (kind) {
	case CM_MSG_MRA:
		*ours = m->mra.remote_comm_id;
		*theirs = m->mra.local_comm_id;
		switch (m->mra.message_mraed) {
		case IB_CM_MRA_MSG_REQ:
			return CM_IN_RECV_MRA_REQ;
		case IB_CM_MRA_MSG_REP:
			return CM_IN_RECV_MRA_REP;
		case IB_CM_MRA_MSG_LAP:
			return CM_IN_RECV_MRA_LAP;
		default:
			return -EINVAL;
		}
	case CM_MSG_REJ:
		*ours = m->rej.remote_comm_id;
		*theirs = m->rej.local_comm_id;
		return be16_to_cpu(m->rej.reason) == IB_CM_REJ_STALE_CONN ?
			CM_IN_RECV_REJ_STALE : CM_IN_RECV_REJ;
	case CM_MSG_REP:
		*ours = m->rep.remote_comm_id;
		*theirs = m->rep.local_comm_id;
		return CM_IN_RECV_REP;
	case CM_MSG_RTU:
		*ours = m->rtu.remote_comm_id;
		*theirs = m->rtu.local_comm_id;
		return CM_IN_RECV_RTU;
	case CM_MSG_DREQ:
		*ours = m->dreq.remote_comm_id;
		*theirs = m->dreq.local_comm_id;
		return CM_IN_RECV_DREQ;
	case CM_MSG_DREP:
		*ours = m->drep.remote_comm_id;
		*theirs = m->drep.local_comm_id;
		return CM_IN_RECV_DREP;
	case CM_MSG_SIDR_REP:
		*ours = m->sidr_rep.request_id;
		*theirs = 0;
		return CM_IN_RECV_SIDR_REP;
	case CM_MSG_LAP:
		*ours = m->lap.remote_comm_id;
		*theirs = m->lap.local_comm_id;
		return CM_IN_RECV_LAP;
	case CM_MSG_APR:
		*ours = m->apr.remote_comm_id;
		*theirs = m->apr.local_comm_id;
		return CM_IN_RECV_APR;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * A DREQ for a comm ID we do not know: the peer still thinks it is
 * connected (our side lost the connection, or our DREP was lost after
 * timewait ended). Answer with a DREP so that it can leave (IBA 12.9.8.4).
 */
static void cm_drep_unknown(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			    const struct cm_dreq *dreq)
{
	struct cm_drep *d = kzalloc(sizeof(*d), GFP_ATOMIC);

	if (!d)
		return;
	d->local_comm_id = dreq->remote_comm_id;
	d->remote_comm_id = dreq->local_comm_id;
	cm_answer_sender(port, rwc, CM_MSG_DREP, d);
	kfree(d);
}

/*
 * APR refusing a LAP the CM itself finds invalid; the consumer never hears
 * of the LAP. Context: @priv->lock.
 */
static void cm_refuse_lap(struct cm_id_priv *priv, u8 status)
{
	struct cm_apr *r = kzalloc(sizeof(*r), GFP_ATOMIC);

	if (!r)
		return;
	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	r->ap_status = status;
	cm_post_once(priv, CM_MSG_APR, r);
	kfree(r);
}

static void cm_recv_conn(struct cm_port *port, struct ib_mad_recv_wc *rwc,
			 enum cm_msg_kind kind, const union cm_any *m)
{
	struct ib_mad *mad = rwc->recv_buf.mad;
	struct cm_id_priv *priv, *old = NULL;
	enum ib_cm_lap_state lap_was;
	bool accepted = false;
	__be32 ours, theirs;
	unsigned long irq;
	int in;

	in = cm_recv_input(kind, m, &ours, &theirs);
	if (in < 0)
		return;
	priv = cm_get_id(ours);
	if (!priv) {
		if (kind == CM_MSG_DREQ)
			cm_drep_unknown(port, rwc, &m->dreq);
		return;
	}
	/* cm.lock is never taken inside an id's lock: look before locking */
	if (kind == CM_MSG_REP) {
		spin_lock_irqsave(&cm.lock, irq);
		old = cm_find_live(m->rep.local_ca_guid, m->rep.local_comm_id,
				   be32_to_cpu(m->rep.local_qpn), priv, true);
		spin_unlock_irqrestore(&cm.lock, irq);
	}
	spin_lock_irqsave(&priv->lock, irq);
	/*
	 * After the REP, each message must come from the peer we know: a LAP
	 * or an APR names both comm IDs of the connection (IBA 12.8).
	 */
	if (kind != CM_MSG_REP && priv->id.remote_id && theirs &&
	    theirs != priv->id.remote_id)
		goto out;
	if ((kind == CM_MSG_LAP || kind == CM_MSG_APR) && !theirs)
		goto out;
	if (kind == CM_MSG_MRA)
		priv->mra_timeout = m->mra.service_timeout;
	/* a SIDR_REP echoes the service it answers */
	if (kind == CM_MSG_SIDR_REP &&
	    m->sidr_rep.service_id != priv->id.service_id)
		goto out;
	/*
	 * IBA 12.8: the LAP names our QP (LAP:Remote QPN/EECN). One naming
	 * another is answered APR "Invalid QPN/EECN" by the CM and changes
	 * nothing (6.1 does not check it).
	 */
	if (kind == CM_MSG_LAP && priv->id.state == IB_CM_ESTABLISHED &&
	    be32_to_cpu(m->lap.remote_qpn_eecn) != priv->local_qpn) {
		cm_refuse_lap(priv, IB_CM_APR_INVALID_QPN_EECN);
		goto out;
	}
	if (kind == CM_MSG_REP && (priv->id.state == IB_CM_REQ_SENT ||
				   priv->id.state == IB_CM_MRA_REQ_RCVD)) {
		/* the REJ of a stale REP names the comm ID it refuses */
		priv->id.remote_id = m->rep.local_comm_id;
		priv->remote_ca_guid = m->rep.local_ca_guid;
		if (old) {
			/* IBA 12.9.8.3.1: another connection holds its QP */
			in = CM_IN_RECV_REP_STALE;
		} else {
			priv->qp.remote_qpn = be32_to_cpu(m->rep.local_qpn);
			priv->qp.sq_psn = be32_to_cpu(m->rep.starting_psn);
			priv->qp.rnr_retry_count = m->rep.rnr_retry_count;
			accepted = true;
		}
	}
	lap_was = priv->id.lap_state;
	if (cm_do_step(priv, in, mad, NULL)) {
		accepted = false;
		goto out;
	}
	/* a new LAP: its path is found by the event work (cm_lap_alt_in()) */
	if (kind == CM_MSG_LAP && lap_was == IB_CM_LAP_IDLE)
		priv->lap_alt_ok = false;
	/* the LAP sender loads the path once the peer accepted it */
	if (kind == CM_MSG_APR && lap_was != IB_CM_LAP_IDLE) {
		if (m->apr.ap_status == IB_CM_APR_SUCCESS)
			cm_lap_alt_commit(priv);
		priv->lap_alt_ok = false;
	}
out:
	spin_unlock_irqrestore(&priv->lock, irq);
	if (accepted)
		cm_remote_add(priv);
	if (old) {
		/* ... and is torn down as a stale one is (DREQ, timewait) */
		if (in == CM_IN_RECV_REP_STALE) {
			spin_lock_irqsave(&old->lock, irq);
			cm_do_step(old, CM_IN_STALE, NULL, NULL);
			spin_unlock_irqrestore(&old->lock, irq);
		}
		cm_deref(old);
	}
	cm_deref(priv);
}

static void cm_recv_handler(struct ib_mad_agent *agent,
			    struct ib_mad_send_buf *request,
			    struct ib_mad_recv_wc *rwc)
{
	struct cm_port *port = agent->context;
	struct ib_mad *mad = rwc->recv_buf.mad;
	union cm_any *m;
	int kind;

	kind = cm_check_mad_hdr(&mad->mad_hdr);
	if (kind < 0)
		goto out;
	m = kmalloc(sizeof(*m), GFP_ATOMIC);
	if (!m)
		goto out;
	if (kind != CM_MSG_CLASS_PORT_INFO) {
		cm_msg_unpack(kind, mad->data, m);
		if (kind == CM_MSG_REQ)
			cm_recv_req(port, rwc, &m->req);
		else if (kind == CM_MSG_SIDR_REQ)
			cm_recv_sidr_req(port, rwc, &m->sidr_req);
		else
			cm_recv_conn(port, rwc, kind, m);
	}
	kfree(m);
out:
	ib_free_recv_mad(rwc);
}

static void cm_send_handler(struct ib_mad_agent *agent,
			    struct ib_mad_send_wc *wc)
{
	struct ib_mad_send_buf *m = wc->send_buf;
	struct cm_id_priv *priv = m->context[0];
	struct ib_ah *ah = m->context[1];
	unsigned long irq;

	if (!priv) {
		ib_free_send_mad(m);
		if (ah)
			ib_destroy_ah(ah);
		return;
	}
	spin_lock_irqsave(&priv->lock, irq);
	if (priv->msg == m) {
		priv->msg = NULL;
		if (wc->status == IB_WC_RESP_TIMEOUT_ERR)
			cm_do_step(priv, CM_IN_TIMEOUT, NULL, NULL);
	}
	spin_unlock_irqrestore(&priv->lock, irq);
	ib_free_send_mad(m);
	cm_deref(priv);
}

/* ------------------------------------------------------------------ */
/* IDs                                                                  */

static struct cm_id_priv *cm_alloc_priv(struct ib_device *device,
					ib_cm_handler handler, void *context,
					gfp_t gfp)
{
	struct cm_id_priv *priv = kzalloc(sizeof(*priv), gfp);

	if (!priv)
		return ERR_PTR(-ENOMEM);
	priv->id.device = device;
	priv->id.cm_handler = handler;
	priv->id.context = context;
	priv->id.state = IB_CM_IDLE;
	priv->id.remote_cm_qpn = 1;
	spin_lock_init(&priv->lock);
	INIT_LIST_HEAD(&priv->events);
	INIT_LIST_HEAD(&priv->listen_node);
	INIT_LIST_HEAD(&priv->remote_node);
	INIT_LIST_HEAD(&priv->sidr_node);
	INIT_WORK(&priv->event_work, cm_event_work);
	INIT_WORK(&priv->destroy_work, cm_destroy_work);
	INIT_DELAYED_WORK(&priv->timewait, cm_timewait_work);
	refcount_set(&priv->refs, 1);
	init_completion(&priv->done);
	return priv;
}

/* Free an id that was never published or whose references are gone. */
static void cm_free_priv(struct cm_id_priv *priv)
{
	if (priv->ah)
		ib_destroy_ah(priv->ah);
	kfree(priv);
}

/**
 * ib_create_cm_id() - a new communication identifier, in IB_CM_IDLE
 * @device: the device it will use
 * @cm_handler: called for every event of the id
 * @context: handed back in @cm_id->context
 *
 * Return: the id, or an ERR_PTR() (-ENOMEM, or -ENODEV for a device the
 * CM has no agents on).
 */
struct ib_cm_id *ib_create_cm_id(struct ib_device *device,
				 ib_cm_handler cm_handler, void *context)
{
	struct cm_id_priv *priv;
	unsigned long irq;
	u32 id;

	if (!ib_get_client_data(device, &cm_client))
		return ERR_PTR(-ENODEV);
	priv = cm_alloc_priv(device, cm_handler, context, GFP_KERNEL);
	if (IS_ERR(priv))
		return ERR_CAST(priv);
	if (xa_alloc_cyclic(&cm.ids, &id, NULL, xa_limit_32b, &cm.next_id,
			    GFP_KERNEL) < 0) {
		kfree(priv);
		return ERR_PTR(-ENOMEM);
	}
	priv->id.local_id = cpu_to_be32(id);
	spin_lock_irqsave(&cm.lock, irq);
	xa_store(&cm.ids, id, priv, GFP_ATOMIC);
	spin_unlock_irqrestore(&cm.lock, irq);
	return &priv->id;
}
EXPORT_SYMBOL(ib_create_cm_id);

/**
 * ib_destroy_cm_id() - end a communication identifier
 * @cm_id: the id
 *
 * Sends what the state asks for (REJ before establishment, DREQ when
 * established, DREP when a DREQ is pending), stops its retransmission and
 * timewait, waits until no handler of @cm_id runs and no send of it is
 * pending, and frees it. Events still queued are not delivered. Must not
 * be called from @cm_id's own handler.
 *
 * Context: process; sleeps.
 */
void ib_destroy_cm_id(struct ib_cm_id *cm_id)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	unsigned long irq;

	spin_lock_irqsave(&priv->lock, irq);
	WRITE_ONCE(priv->destroying, true);
	cm_do_step(priv, CM_IN_DESTROY, NULL, NULL);
	if (priv->msg) {
		ib_cancel_mad(priv->port->agent, priv->msg);
		priv->msg = NULL;
	}
	spin_unlock_irqrestore(&priv->lock, irq);

	spin_lock_irqsave(&cm.lock, irq);
	xa_erase(&cm.ids, be32_to_cpu(cm_id->local_id));
	list_del_init(&priv->listen_node);
	list_del_init(&priv->remote_node);
	list_del_init(&priv->sidr_node);
	spin_unlock_irqrestore(&cm.lock, irq);

	if (cancel_delayed_work_sync(&priv->timewait))
		cm_deref(priv);
	cm_deref(priv);
	wait_for_completion(&priv->done);
	cm_free_priv(priv);
}
EXPORT_SYMBOL(ib_destroy_cm_id);

/**
 * ib_cm_listen() - receive REQs for a service
 * @cm_id: an IB_CM_IDLE id; it moves to IB_CM_LISTEN
 * @service_id: the service (network order)
 * @service_mask: the bits of @service_id to match; 0 means all
 *
 * Return: 0; -EINVAL if @cm_id is not idle; -EBUSY if another listen
 * overlaps it on the same device.
 */
int ib_cm_listen(struct ib_cm_id *cm_id, __be64 service_id,
		 __be64 service_mask)
{
	struct cm_id_priv *priv = to_priv(cm_id), *p;
	__be64 mask = service_mask ? service_mask : cpu_to_be64(~0ULL);
	unsigned long irq, irq2;
	struct cm_step st;
	int ret = 0;

	spin_lock_irqsave(&cm.lock, irq);
	list_for_each_entry(p, &cm.listen, listen_node)
		if (p->id.device == cm_id->device &&
		    cm_sid_match(service_id, p->id.service_id,
				 mask & p->id.service_mask)) {
			ret = -EBUSY;
			goto out;
		}
	spin_lock_irqsave(&priv->lock, irq2);
	ret = cm_step(cm_id->state, cm_id->lap_state, CM_IN_LISTEN, &st);
	if (!ret) {
		cm_id->state = st.next;
		cm_id->service_id = service_id & mask;
		cm_id->service_mask = mask;
	}
	spin_unlock_irqrestore(&priv->lock, irq2);
	if (!ret)
		list_add_tail(&priv->listen_node, &cm.listen);
out:
	spin_unlock_irqrestore(&cm.lock, irq);
	return ret;
}
EXPORT_SYMBOL(ib_cm_listen);

/* ------------------------------------------------------------------ */
/* The consumer's calls                                                 */

typedef int (*cm_build_fn)(struct cm_id_priv *priv, void *msg,
			   const void *arg);
typedef void (*cm_commit_fn)(struct cm_id_priv *priv, const void *arg);

/*
 * One consumer call that sends a message: legal in the id's state, the
 * message built by @build (under the id's lock, so it sees the state),
 * posted (retransmitted when the step arms it), then the step taken and,
 * with @commit, what the call changes besides the state.
 */
static int cm_send_call_commit(struct cm_id_priv *priv, enum cm_input in,
			       enum cm_msg_kind kind, size_t size,
			       cm_build_fn build, cm_commit_fn commit,
			       const void *arg)
{
	struct ib_mad_send_buf *m = NULL;
	struct cm_step st;
	unsigned long irq;
	int timeout = 0;
	void *msg;
	int ret;

	msg = kzalloc(size, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	spin_lock_irqsave(&priv->lock, irq);
	ret = cm_step(priv->id.state, priv->id.lap_state, in, &st);
	if (ret || !priv->port || priv->destroying) {
		ret = -EINVAL;
		goto out;
	}
	ret = build(priv, msg, arg);
	if (ret)
		goto out;
	m = cm_alloc_msg(priv->port, priv->ah, GFP_ATOMIC);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto out;
	}
	cm_pack(m, kind, msg);
	if (st.actions & CM_DO_ARM)
		timeout = cm_req_timeout_ms(priv->plt, priv->resp_timeout);
	ret = cm_post(priv, m, timeout, priv->max_cm_retries);
	if (!ret) {
		cm_do_step(priv, in, NULL, NULL);
		if (commit)
			commit(priv, arg);
	}
out:
	spin_unlock_irqrestore(&priv->lock, irq);
	kfree(msg);
	return ret;
}

static int cm_send_call(struct cm_id_priv *priv, enum cm_input in,
			enum cm_msg_kind kind, size_t size, cm_build_fn build,
			const void *arg)
{
	return cm_send_call_commit(priv, in, kind, size, build, NULL, arg);
}

static bool cm_pdata_bad(const void *pdata, u8 len, u8 max)
{
	return len > max || (len && !pdata);
}

/* Our port with LID @lid (within its LMC range). Context: may sleep. */
static struct cm_port *cm_port_of_lid(struct cm_device *cdev, u16 lid)
{
	struct ib_port_attr attr;
	int i;

	for (i = 0; i < cdev->nports; i++) {
		struct cm_port *port = &cdev->ports[i];

		if (ib_query_port(cdev->ib, port->port_num, &attr))
			continue;
		if ((attr.lid & ~((1U << attr.lmc) - 1)) ==
		    (lid & ~((1U << attr.lmc) - 1)))
			return port;
	}
	return NULL;
}

static struct cm_port *cm_port_of_path(struct cm_device *cdev,
				       const struct ib_sa_path_rec *path)
{
	return cm_port_of_lid(cdev, be16_to_cpu(path->slid));
}

static void cm_ah_attr_of_path(struct ib_ah_attr *ah,
			       const struct ib_sa_path_rec *path, u8 port_num)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = be16_to_cpu(path->dlid);
	ah->sl = path->sl;
	ah->static_rate = path->rate;
	ah->port_num = port_num;
	if (path->hop_limit > 1) {
		ah->ah_flags = IB_AH_GRH;
		ah->grh.dgid = path->dgid;
		ah->grh.flow_label = be32_to_cpu(path->flow_label);
		ah->grh.hop_limit = path->hop_limit;
		ah->grh.traffic_class = path->traffic_class;
	}
}

/*
 * cm_path_msg() - the send buffer of an exchange's first message (REQ,
 * SIDR_REQ): an address handle toward @path, returned in *@ah with its
 * attributes in *@ah_attr, and a MAD buffer on it. On failure nothing
 * is left (*@ah is NULL) and the errno comes as an ERR_PTR.
 */
static struct ib_mad_send_buf *cm_path_msg(struct cm_port *port,
					   const struct ib_sa_path_rec *path,
					   struct ib_ah_attr *ah_attr,
					   struct ib_ah **ah)
{
	struct ib_mad_send_buf *m;

	cm_ah_attr_of_path(ah_attr, path, port->port_num);
	*ah = ib_create_ah(port->agent->qp->pd, ah_attr);
	if (IS_ERR(*ah)) {
		m = ERR_CAST(*ah);
		*ah = NULL;
		return m;
	}
	m = cm_alloc_msg(port, *ah, GFP_KERNEL);
	if (IS_ERR(m)) {
		ib_destroy_ah(*ah);
		*ah = NULL;
	}
	return m;
}

/**
 * ib_send_cm_req() - send a REQ, the start of a connection
 * @cm_id: an IB_CM_IDLE id
 * @param: what to ask for; the primary path's SLID names our port
 *
 * The REQ is resent every 2 * PacketLifeTime + remote CM response time
 * until answered, @param->max_cm_retries times; then the consumer gets
 * IB_CM_REQ_ERROR and the peer a REJ TIMEOUT.
 *
 * Return: 0 when the REQ is sent (the id is then IB_CM_REQ_SENT);
 * -EINVAL for a bad parameter or state; -EOPNOTSUPP for peer-to-peer;
 * another errno if it could not be sent.
 */
int ib_send_cm_req(struct ib_cm_id *cm_id, struct ib_cm_req_param *param)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	struct cm_device *cdev = ib_get_client_data(cm_id->device, &cm_client);
	const struct ib_sa_path_rec *path = param->primary_path;
	struct ib_mad_send_buf *m = NULL;
	struct ib_ah *ah = NULL;
	struct ib_ah_attr ah_attr;
	struct cm_port *port;
	struct cm_step st;
	struct cm_req *req;
	unsigned long irq;
	u16 idx = 0;
	int ret;

	if (!cdev || !path)
		return -EINVAL;
	port = cm_port_of_path(cdev, path);
	if (!port)
		return -EINVAL;
	req = kmalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	ret = cm_format_req(req, param, cm_id->local_id, cm_id->device->node_guid,
			    cdev->ack_delay);
	if (ret)
		goto out;
	m = cm_path_msg(port, path, &ah_attr, &ah);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto out;
	}
	cm_pack(m, CM_MSG_REQ, req);
	ib_find_cached_pkey(cm_id->device, port->port_num,
			    be16_to_cpu(path->pkey), &idx);

	spin_lock_irqsave(&priv->lock, irq);
	ret = cm_step(cm_id->state, cm_id->lap_state, CM_IN_SEND_REQ, &st);
	if (ret || priv->destroying) {
		spin_unlock_irqrestore(&priv->lock, irq);
		ret = -EINVAL;
		goto out_free;
	}
	priv->port = port;
	priv->ah = ah;
	cm_id->service_id = param->service_id;
	cm_id->service_mask = cpu_to_be64(~0ULL);
	priv->qp.qp_type = param->qp_type;
	priv->qp.port_num = port->port_num;
	priv->qp.pkey_index = idx;
	priv->pkey = path->pkey;
	priv->qp.ah_attr = ah_attr;
	priv->qp.path_mtu = path->mtu;
	priv->qp.rq_psn = param->starting_psn;
	priv->local_qpn = param->qp_num;
	priv->qp.responder_resources = param->responder_resources;
	priv->qp.initiator_depth = param->initiator_depth;
	priv->qp.local_ack_timeout = req->primary.local_ack_timeout;
	priv->qp.retry_count = param->retry_count;
	priv->plt = path->packet_life_time;
	priv->resp_timeout = param->remote_cm_response_timeout;
	priv->max_cm_retries = param->max_cm_retries;
	priv->timewait_ms = cm_req_timeout_ms(priv->plt,
					      param->remote_cm_response_timeout);
	ret = cm_post(priv, m, cm_req_timeout_ms(priv->plt, priv->resp_timeout),
		      priv->max_cm_retries);
	if (ret) {
		priv->port = NULL;
		priv->ah = NULL;
		spin_unlock_irqrestore(&priv->lock, irq);
		m = NULL;
		goto out;
	}
	cm_do_step(priv, CM_IN_SEND_REQ, NULL, NULL);
	spin_unlock_irqrestore(&priv->lock, irq);
	kfree(req);
	return 0;

out_free:
	ib_free_send_mad(m);
out:
	if (ah)
		ib_destroy_ah(ah);
	kfree(req);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_req);

static int cm_build_rep(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct ib_cm_rep_param *p = arg;
	struct cm_rep *r = msg;

	if (p->qp_num > 0xffffff || p->starting_psn > 0xffffff ||
	    p->target_ack_delay > 31 || p->rnr_retry_count > 7 ||
	    p->failover_accepted > 3 ||
	    cm_pdata_bad(p->private_data, p->private_data_len,
			 IB_CM_REP_PRIVATE_DATA_SIZE))
		return -EINVAL;
	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	r->local_qpn = cpu_to_be32(p->qp_num);
	r->starting_psn = cpu_to_be32(p->starting_psn);
	r->responder_resources = p->responder_resources;
	r->initiator_depth = p->initiator_depth;
	r->target_ack_delay = p->target_ack_delay;
	r->failover_accepted = p->failover_accepted;
	r->end_to_end_flow_control = !!p->flow_control;
	r->rnr_retry_count = p->rnr_retry_count;
	r->srq = !!p->srq;
	r->local_ca_guid = priv->id.device->node_guid;
	if (p->private_data_len)
		memcpy(r->private_data, p->private_data, p->private_data_len);
	priv->qp.rq_psn = p->starting_psn;
	priv->local_qpn = p->qp_num;
	priv->qp.responder_resources = p->responder_resources;
	priv->qp.initiator_depth = p->initiator_depth;
	return 0;
}

/**
 * ib_send_cm_rep() - accept a received REQ
 * @cm_id: the id of IB_CM_REQ_RECEIVED, in IB_CM_REQ_RCVD or MRA_REQ_SENT
 * @param: what to accept with
 *
 * The REP is resent until the RTU comes (or the consumer establishes the
 * connection), as many times as the REQ's MaxCMRetries; then
 * IB_CM_REP_ERROR.
 *
 * Return: 0 (the id is then IB_CM_REP_SENT), -EINVAL, or a send errno.
 */
int ib_send_cm_rep(struct ib_cm_id *cm_id, struct ib_cm_rep_param *param)
{
	return cm_send_call(to_priv(cm_id), CM_IN_SEND_REP, CM_MSG_REP,
			    sizeof(struct cm_rep), cm_build_rep, param);
}
EXPORT_SYMBOL(ib_send_cm_rep);

struct cm_pdata {
	const void	*data;
	u8		len;
};

static int cm_build_rtu(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_pdata *pd = arg;
	struct cm_rtu *r = msg;

	if (cm_pdata_bad(pd->data, pd->len, IB_CM_RTU_PRIVATE_DATA_SIZE))
		return -EINVAL;
	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	if (pd->len)
		memcpy(r->private_data, pd->data, pd->len);
	return 0;
}

/**
 * ib_send_cm_rtu() - tell the passive side the connection is ready
 * @cm_id: an id in IB_CM_REP_RCVD or IB_CM_MRA_REP_SENT
 * @private_data: up to IB_CM_RTU_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_ESTABLISHED), -EINVAL, or a send errno.
 */
int ib_send_cm_rtu(struct ib_cm_id *cm_id, const void *private_data,
		   u8 private_data_len)
{
	struct cm_pdata pd = { private_data, private_data_len };

	return cm_send_call(to_priv(cm_id), CM_IN_SEND_RTU, CM_MSG_RTU,
			    sizeof(struct cm_rtu), cm_build_rtu, &pd);
}
EXPORT_SYMBOL(ib_send_cm_rtu);

static int cm_build_dreq(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_pdata *pd = arg;
	struct cm_dreq *d = msg;

	if (cm_pdata_bad(pd->data, pd->len, IB_CM_DREQ_PRIVATE_DATA_SIZE))
		return -EINVAL;
	d->local_comm_id = priv->id.local_id;
	d->remote_comm_id = priv->id.remote_id;
	d->remote_qpn_eecn = cpu_to_be32(priv->qp.remote_qpn);
	if (pd->len)
		memcpy(d->private_data, pd->data, pd->len);
	return 0;
}

/**
 * ib_send_cm_dreq() - start a disconnection
 * @cm_id: an IB_CM_ESTABLISHED id
 * @private_data: up to IB_CM_DREQ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * The DREQ is resent until the DREP comes; then IB_CM_DREQ_ERROR and
 * timewait.
 *
 * Return: 0 (the id is then IB_CM_DREQ_SENT), -EINVAL, or a send errno.
 */
int ib_send_cm_dreq(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len)
{
	struct cm_pdata pd = { private_data, private_data_len };

	return cm_send_call(to_priv(cm_id), CM_IN_SEND_DREQ, CM_MSG_DREQ,
			    sizeof(struct cm_dreq), cm_build_dreq, &pd);
}
EXPORT_SYMBOL(ib_send_cm_dreq);

static int cm_build_drep(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_pdata *pd = arg;
	struct cm_drep *d = msg;

	if (cm_pdata_bad(pd->data, pd->len, IB_CM_DREP_PRIVATE_DATA_SIZE))
		return -EINVAL;
	d->local_comm_id = priv->id.local_id;
	d->remote_comm_id = priv->id.remote_id;
	if (pd->len)
		memcpy(d->private_data, pd->data, pd->len);
	return 0;
}

/**
 * ib_send_cm_drep() - answer a received DREQ
 * @cm_id: an IB_CM_DREQ_RCVD id
 * @private_data: up to IB_CM_DREP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_TIMEWAIT), -EINVAL, or a send errno.
 */
int ib_send_cm_drep(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len)
{
	struct cm_pdata pd = { private_data, private_data_len };

	return cm_send_call(to_priv(cm_id), CM_IN_SEND_DREP, CM_MSG_DREP,
			    sizeof(struct cm_drep), cm_build_drep, &pd);
}
EXPORT_SYMBOL(ib_send_cm_drep);

/**
 * ib_cm_establish() - the connection is up before an RTU arrived
 * @cm_id: an id in IB_CM_REP_SENT or IB_CM_MRA_REP_RCVD
 *
 * Stops the REP's retransmission; the consumer gets
 * IB_CM_USER_ESTABLISHED from the workqueue.
 *
 * Return: 0, or -EINVAL in any other state.
 */
int ib_cm_establish(struct ib_cm_id *cm_id)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	unsigned long irq;
	int ret;

	spin_lock_irqsave(&priv->lock, irq);
	ret = priv->destroying ? -EINVAL :
	      cm_do_step(priv, CM_IN_ESTABLISH, NULL, NULL);
	spin_unlock_irqrestore(&priv->lock, irq);
	return ret < 0 ? -EINVAL : 0;
}
EXPORT_SYMBOL(ib_cm_establish);

/*
 * The QP migrated (IB_EVENT_PATH_MIG): the alternate path is the primary
 * one now. Like 6.1's cm_migrate(), only in ESTABLISHED with no LAP
 * exchange under way, and lap_state stays (6.1: becomes) idle. Unlike it,
 * an alternate path must exist (6.1 would take an empty one) and is not
 * kept afterwards: re-arming migration to the path the QP is already on
 * means nothing, so RTS gives the plain RTS attributes of the new primary
 * path until a LAP exchange loads another. The CM's own messages keep
 * the address they had (6.1 moves them with the primary path).
 *
 * Context: @priv->lock held.
 */
static int cm_migrate(struct cm_id_priv *priv)
{
	struct cm_qp_params *q = &priv->qp;

	if (priv->destroying || priv->id.state != IB_CM_ESTABLISHED ||
	    priv->id.lap_state != IB_CM_LAP_IDLE || !q->alt_valid)
		return -EINVAL;
	q->ah_attr = q->alt_ah_attr;
	q->port_num = q->alt_port_num;
	q->pkey_index = q->alt_pkey_index;
	q->local_ack_timeout = q->alt_timeout;
	q->alt_valid = false;
	return 0;
}

/**
 * ib_cm_notify() - tell the CM of an affiliated event of the connection's QP
 * @cm_id: the connection's id
 * @event: IB_EVENT_COMM_EST (as ib_cm_establish()) or IB_EVENT_PATH_MIG
 *
 * IB_EVENT_PATH_MIG makes the alternate path of a LAP/APR exchange the
 * primary one of ib_cm_init_qp_attr(); legal in IB_CM_ESTABLISHED with
 * lap_state IB_CM_LAP_IDLE and an alternate path.
 *
 * Context: any; does not sleep.
 * Return: 0, or -EINVAL (another event, or a state in which it means
 * nothing).
 */
int ib_cm_notify(struct ib_cm_id *cm_id, enum ib_event_type event)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	unsigned long irq;
	int ret;

	switch (event) {
	case IB_EVENT_COMM_EST:
		return ib_cm_establish(cm_id);
	case IB_EVENT_PATH_MIG:
		spin_lock_irqsave(&priv->lock, irq);
		ret = cm_migrate(priv);
		spin_unlock_irqrestore(&priv->lock, irq);
		return ret;
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL(ib_cm_notify);

struct cm_rej_args {
	u8		reason, ari_length, len;
	const void	*ari, *data;
};

static int cm_build_rej(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_rej_args *a = arg;

	return cm_format_rej(msg, priv, a->reason, a->ari, a->ari_length,
			     a->data, a->len);
}

/**
 * ib_send_cm_rej() - reject a connection request or reply
 * @cm_id: an id with a REQ or REP pending
 * @reason: &enum ib_cm_rej_reason
 * @ari: additional rejection information, or NULL
 * @ari_length: up to IB_CM_REJ_ARI_LENGTH
 * @private_data: up to IB_CM_REJ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_IDLE), -EINVAL, or a send errno.
 */
int ib_send_cm_rej(struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason,
		   const void *ari, u8 ari_length,
		   const void *private_data, u8 private_data_len)
{
	struct cm_rej_args a = {
		.reason = reason, .ari_length = ari_length, .len = private_data_len,
		.ari = ari, .data = private_data,
	};

	if ((unsigned int)reason > 0xffff)
		return -EINVAL;
	return cm_send_call(to_priv(cm_id), CM_IN_SEND_REJ, CM_MSG_REJ,
			    sizeof(struct cm_rej), cm_build_rej, &a);
}
EXPORT_SYMBOL(ib_send_cm_rej);

struct cm_mra_args {
	u8		service_timeout, len;
	const void	*data;
};

static int cm_build_mra(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_mra_args *a = arg;
	struct cm_mra *r = msg;

	if (a->service_timeout > 31 ||
	    cm_pdata_bad(a->data, a->len, IB_CM_MRA_PRIVATE_DATA_SIZE))
		return -EINVAL;
	switch (priv->id.state) {
	case IB_CM_REQ_RCVD:
		r->message_mraed = IB_CM_MRA_MSG_REQ;
		break;
	case IB_CM_REP_RCVD:
		r->message_mraed = IB_CM_MRA_MSG_REP;
		break;
	case IB_CM_ESTABLISHED:
		/* the table lets it through in LAP_RCVD only */
		r->message_mraed = IB_CM_MRA_MSG_LAP;
		break;
	default:
		return -EINVAL;
	}
	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	r->service_timeout = a->service_timeout;
	if (a->len)
		memcpy(r->private_data, a->data, a->len);
	return 0;
}

/**
 * ib_send_cm_mra() - ask the peer for more time
 * @cm_id: an id in IB_CM_REQ_RCVD or IB_CM_REP_RCVD, or ESTABLISHED with
 *	a LAP received (lap_state IB_CM_LAP_RCVD)
 * @service_timeout: how long we need (5-bit exponent, 4.096 us * 2^t)
 * @private_data: up to IB_CM_MRA_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * A repeat of the REQ, REP or LAP is answered with this MRA again.
 *
 * Return: 0, -EINVAL, or a send errno.
 */
int ib_send_cm_mra(struct ib_cm_id *cm_id, u8 service_timeout,
		   const void *private_data, u8 private_data_len)
{
	struct cm_mra_args a = {
		.service_timeout = service_timeout, .len = private_data_len,
		.data = private_data,
	};

	return cm_send_call(to_priv(cm_id), CM_IN_SEND_MRA, CM_MSG_MRA,
			    sizeof(struct cm_mra), cm_build_mra, &a);
}
EXPORT_SYMBOL(ib_send_cm_mra);

struct cm_lap_args {
	const struct ib_sa_path_rec	*path;
	const void			*data;
	u8				len, ack_delay;
	struct cm_alt			alt;
};

static int cm_build_lap(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_lap_args *a = arg;
	int ret;

	/* LAP:RemoteCMResponseTimeout: the time the peer's CM gave us */
	ret = cm_format_lap(msg, priv->id.local_id, priv->id.remote_id,
			    priv->qp.remote_qpn, priv->resp_timeout, a->path,
			    a->ack_delay, a->data, a->len);
	if (ret)
		return ret;
	priv->lap_alt = a->alt;
	priv->lap_alt_ok = true;
	return 0;
}

/**
 * ib_send_cm_lap() - propose an alternate path to the peer (IBA 12.8)
 * @cm_id: an IB_CM_ESTABLISHED id with no LAP exchange under way
 * @alternate_path: the path, as we see it; its SLID names our port
 * @private_data: up to IB_CM_LAP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * The LAP is resent like the REQ was (every 2 * PacketLifeTime of the
 * primary path plus the peer's CM response time, MaxCMRetries times)
 * until the APR comes; an MRA for it stretches the wait. The answer
 * comes as IB_CM_APR_RECEIVED; no answer as IB_CM_LAP_ERROR with
 * send_status IB_WC_RESP_TIMEOUT_ERR. Once an APR with status
 * IB_CM_APR_SUCCESS came, ib_cm_init_qp_attr() for IB_QPS_RTS gives the
 * path to load (RTS to RTS, path migration state REARM).
 *
 * Context: process; may sleep.
 * Return: 0 (the id's lap_state is then IB_CM_LAP_SENT); -EINVAL for a
 * bad parameter, a path from none of our ports, or a state other than
 * ESTABLISHED with lap_state IB_CM_LAP_IDLE; another errno if it could
 * not be sent.
 */
int ib_send_cm_lap(struct ib_cm_id *cm_id,
		   struct ib_sa_path_rec *alternate_path,
		   const void *private_data, u8 private_data_len)
{
	struct cm_device *cdev = ib_get_client_data(cm_id->device, &cm_client);
	struct cm_lap_args a = {
		.path = alternate_path, .data = private_data,
		.len = private_data_len,
	};
	struct cm_port *port;
	u16 idx = 0;

	if (!cdev || !alternate_path ||
	    cm_pdata_bad(private_data, private_data_len,
			 IB_CM_LAP_PRIVATE_DATA_SIZE))
		return -EINVAL;
	port = cm_port_of_path(cdev, alternate_path);
	if (!port)
		return -EINVAL;
	a.ack_delay = cdev->ack_delay;
	cm_ah_attr_of_path(&a.alt.ah_attr, alternate_path, port->port_num);
	a.alt.port_num = port->port_num;
	a.alt.timeout = cm_ack_timeout(cdev->ack_delay,
				       alternate_path->packet_life_time);
	if (!ib_find_cached_pkey(cm_id->device, port->port_num,
				 be16_to_cpu(alternate_path->pkey), &idx))
		a.alt.pkey_index = idx;
	return cm_send_call(to_priv(cm_id), CM_IN_SEND_LAP, CM_MSG_LAP,
			    sizeof(struct cm_lap), cm_build_lap, &a);
}
EXPORT_SYMBOL(ib_send_cm_lap);

struct cm_apr_args {
	u8		status, info_length, len;
	const void	*info, *data;
};

static int cm_build_apr(struct cm_id_priv *priv, void *msg, const void *arg)
{
	const struct cm_apr_args *a = arg;
	struct cm_apr *r = msg;

	r->local_comm_id = priv->id.local_id;
	r->remote_comm_id = priv->id.remote_id;
	r->ap_status = a->status;
	r->info_length = a->info_length;
	if (a->info_length)
		memcpy(r->info, a->info, a->info_length);
	if (a->len)
		memcpy(r->private_data, a->data, a->len);
	return 0;
}

/* The LAP receiver's QP holds the path it accepted. Context: lock. */
static void cm_commit_apr(struct cm_id_priv *priv, const void *arg)
{
	const struct cm_apr_args *a = arg;

	if (a->status == IB_CM_APR_SUCCESS)
		cm_lap_alt_commit(priv);
	priv->lap_alt_ok = false;
}

/**
 * ib_send_cm_apr() - answer a received LAP (IBA 12.8)
 * @cm_id: an IB_CM_ESTABLISHED id whose lap_state is IB_CM_LAP_RCVD or
 *	IB_CM_MRA_LAP_SENT
 * @status: &enum ib_cm_apr_status; IB_CM_APR_SUCCESS accepts the path
 * @info: additional information, or NULL
 * @info_length: up to IB_CM_APR_INFO_LENGTH
 * @private_data: up to IB_CM_APR_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * The IBA has the receiver load the alternate path into its QP before
 * it accepts: from IB_CM_LAP_RECEIVED on, ib_cm_init_qp_attr() for
 * IB_QPS_RTS gives it; after an accepting APR it stays the connection's,
 * after a refusing one the earlier alternate path (if any) is given
 * again. The APR is sent once; the peer's LAP is resent if it is lost.
 *
 * Context: process; may sleep.
 * Return: 0 (lap_state is then IB_CM_LAP_IDLE), -EINVAL for a bad
 * parameter or state, or a send errno.
 */
int ib_send_cm_apr(struct ib_cm_id *cm_id, enum ib_cm_apr_status status,
		   const void *info, u8 info_length,
		   const void *private_data, u8 private_data_len)
{
	struct cm_apr_args a = {
		.status = status, .info_length = info_length,
		.len = private_data_len, .info = info, .data = private_data,
	};

	if ((unsigned int)status > IB_CM_APR_INVALID_SL ||
	    cm_pdata_bad(info, info_length, IB_CM_APR_INFO_LENGTH) ||
	    cm_pdata_bad(private_data, private_data_len,
			 IB_CM_APR_PRIVATE_DATA_SIZE))
		return -EINVAL;
	return cm_send_call_commit(to_priv(cm_id), CM_IN_SEND_APR, CM_MSG_APR,
				   sizeof(struct cm_apr), cm_build_apr,
				   cm_commit_apr, &a);
}
EXPORT_SYMBOL(ib_send_cm_apr);

/*
 * The CM response time assumed of a SIDR peer when the consumer names no
 * timeout: 4.096 us * 2^20 = 4.3 s, the REQ's largest usual value.
 */
#define CM_SIDR_RESP_TIMEOUT	20

/**
 * ib_send_cm_sidr_req() - resolve a service ID to a UD QP
 * @cm_id: an IB_CM_IDLE id
 * @param: the service and the path to it; the path's SLID names our port
 *
 * The SIDR_REQ goes to the CM (QP1) at the path's DLID. It is resent
 * every @param->timeout_ms ms, or when that is 0 every 2 * PacketLifeTime
 * plus 2^20 * 4.096 us (the IBA formula with the CM response time SIDR
 * does not carry), @param->max_cm_retries times; unanswered, the consumer
 * gets IB_CM_SIDR_REQ_ERROR with send_status IB_WC_RESP_TIMEOUT_ERR. The
 * answer comes as IB_CM_SIDR_REP_RECEIVED; the id is IB_CM_IDLE again.
 *
 * Context: process; may sleep.
 * Return: 0 (the id is then IB_CM_SIDR_REQ_SENT); -EINVAL for a bad
 * parameter or state; another errno if it could not be sent.
 */
int ib_send_cm_sidr_req(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_req_param *param)
{
	struct cm_device *cdev = ib_get_client_data(cm_id->device, &cm_client);
	struct cm_id_priv *priv = to_priv(cm_id);
	struct ib_mad_send_buf *m = NULL;
	struct ib_ah *ah = NULL, *old_ah;
	const struct ib_sa_path_rec *path;
	struct ib_ah_attr ah_attr;
	struct cm_sidr_req *req;
	struct cm_port *port;
	struct cm_step st;
	unsigned long irq;
	int timeout, ret;

	if (!cdev || !param || !param->path || param->timeout_ms < 0 ||
	    param->max_cm_retries > 15 ||
	    cm_pdata_bad(param->private_data, param->private_data_len,
			 IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE))
		return -EINVAL;
	path = param->path;
	port = cm_port_of_path(cdev, path);
	if (!port)
		return -EINVAL;
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	req->request_id = cm_id->local_id;
	req->pkey = cpu_to_be16(param->pkey);
	req->service_id = param->service_id;
	if (param->private_data_len)
		memcpy(req->private_data, param->private_data,
		       param->private_data_len);
	m = cm_path_msg(port, path, &ah_attr, &ah);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto out;
	}
	cm_pack(m, CM_MSG_SIDR_REQ, req);
	timeout = param->timeout_ms ? param->timeout_ms :
		cm_req_timeout_ms(path->packet_life_time, CM_SIDR_RESP_TIMEOUT);

	spin_lock_irqsave(&priv->lock, irq);
	ret = cm_step(cm_id->state, cm_id->lap_state, CM_IN_SEND_SIDR_REQ, &st);
	if (ret || priv->destroying) {
		spin_unlock_irqrestore(&priv->lock, irq);
		ret = -EINVAL;
		goto out_free;
	}
	/* an earlier SIDR exchange of this id left its AH */
	old_ah = priv->ah;
	priv->port = port;
	priv->ah = ah;
	cm_id->service_id = param->service_id;
	cm_id->service_mask = cpu_to_be64(~0ULL);
	priv->plt = path->packet_life_time;
	priv->max_cm_retries = param->max_cm_retries;
	ret = cm_post(priv, m, timeout, param->max_cm_retries);
	if (ret) {
		priv->ah = old_ah;
		spin_unlock_irqrestore(&priv->lock, irq);
		goto out;
	}
	cm_do_step(priv, CM_IN_SEND_SIDR_REQ, NULL, NULL);
	spin_unlock_irqrestore(&priv->lock, irq);
	if (old_ah)
		ib_destroy_ah(old_ah);
	kfree(req);
	return 0;

out_free:
	ib_free_send_mad(m);
out:
	if (ah)
		ib_destroy_ah(ah);
	kfree(req);
	return ret;
}
EXPORT_SYMBOL(ib_send_cm_sidr_req);

static int cm_build_sidr_rep(struct cm_id_priv *priv, void *msg,
			     const void *arg)
{
	const struct ib_cm_sidr_rep_param *p = arg;
	struct cm_sidr_rep *r = msg;

	if (p->qp_num > 0xffffff || p->status > IB_SIDR_UNSUPPORTED_VERSION ||
	    cm_pdata_bad(p->info, p->info_length, IB_CM_SIDR_REP_INFO_LENGTH) ||
	    cm_pdata_bad(p->private_data, p->private_data_len,
			 IB_CM_SIDR_REP_PRIVATE_DATA_SIZE))
		return -EINVAL;
	r->request_id = priv->id.remote_id;
	r->status = p->status;
	r->info_length = p->info_length;
	r->qpn = cpu_to_be32(p->qp_num);
	r->service_id = priv->id.service_id;
	r->qkey = cpu_to_be32(p->qkey);
	if (p->info_length)
		memcpy(r->info, p->info, p->info_length);
	if (p->private_data_len)
		memcpy(r->private_data, p->private_data, p->private_data_len);
	return 0;
}

/**
 * ib_send_cm_sidr_rep() - answer a received SIDR_REQ
 * @cm_id: the id of IB_CM_SIDR_REQ_RECEIVED, in IB_CM_SIDR_REQ_RCVD
 * @param: the status and, for IB_SIDR_SUCCESS, the service's QPN and Q_Key
 *
 * The SIDR_REP is sent once (the requester resends its SIDR_REQ if it is
 * lost); the id is then IB_CM_IDLE and a later SIDR_REQ with the same
 * RequestID is a new request.
 *
 * Context: process; may sleep.
 * Return: 0, -EINVAL for a bad parameter or state, or a send errno.
 */
int ib_send_cm_sidr_rep(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_rep_param *param)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	unsigned long irq;
	int ret;

	if (!param)
		return -EINVAL;
	ret = cm_send_call(priv, CM_IN_SEND_SIDR_REP, CM_MSG_SIDR_REP,
			   sizeof(struct cm_sidr_rep), cm_build_sidr_rep, param);
	if (ret)
		return ret;
	spin_lock_irqsave(&cm.lock, irq);
	list_del_init(&priv->sidr_node);
	spin_unlock_irqrestore(&cm.lock, irq);
	return 0;
}
EXPORT_SYMBOL(ib_send_cm_sidr_rep);

/**
 * ib_cm_init_qp_attr() - QP attributes for the consumer's next transition
 * @cm_id: a connecting or connected id
 * @qp_attr: in: qp_state (IB_QPS_INIT, IB_QPS_RTR or IB_QPS_RTS); out:
 *	the attributes
 * @qp_attr_mask: out: which attributes were set, for ib_modify_qp()
 *
 * The rules are cm_qp_attr()'s (Documentation/cm.md). With an
 * alternate path from a LAP exchange, RTS gives the RTS to RTS
 * transition that loads it: on the LAP's receiver from
 * IB_CM_LAP_RECEIVED on (the IBA has it load the path before accepting),
 * on its sender once the APR accepted it.
 *
 * Return: 0, or -EINVAL when the id's state gives no attributes for that
 * transition.
 */
int ib_cm_init_qp_attr(struct ib_cm_id *cm_id, struct ib_qp_attr *qp_attr,
		       int *qp_attr_mask)
{
	struct cm_id_priv *priv = to_priv(cm_id);
	struct cm_qp_params *q;
	unsigned long irq;
	int ret;

	q = kmalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	spin_lock_irqsave(&priv->lock, irq);
	*q = priv->qp;
	if ((cm_id->lap_state == IB_CM_LAP_RCVD ||
	     cm_id->lap_state == IB_CM_MRA_LAP_SENT) && priv->lap_alt_ok)
		cm_alt_to_qp(q, &priv->lap_alt);
	ret = cm_qp_attr(cm_id->state, q, qp_attr, qp_attr_mask);
	spin_unlock_irqrestore(&priv->lock, irq);
	kfree(q);
	return ret;
}
EXPORT_SYMBOL(ib_cm_init_qp_attr);

/* ------------------------------------------------------------------ */
/* Devices and the module                                               */

static void cm_add_device(struct ib_device *device)
{
	u8 first = rdma_start_port(device), last = rdma_end_port(device);
	struct ib_mad_reg_req reg = {
		.mgmt_class = IB_MGMT_CLASS_CM,
		.mgmt_class_version = IB_CM_CLASS_VERSION,
	};
	struct ib_device_attr attr;
	struct cm_device *cdev;
	int i;

	if (ib_query_device(device, &attr))
		return;
	cdev = kzalloc(struct_size(cdev, ports, last - first + 1), GFP_KERNEL);
	if (!cdev)
		return;
	cdev->ib = device;
	cdev->ack_delay = attr.local_ca_ack_delay;
	cdev->first_port = first;
	cdev->nports = last - first + 1;
	set_bit(IB_MGMT_METHOD_SEND, reg.method_mask);

	for (i = 0; i < cdev->nports; i++) {
		struct cm_port *port = &cdev->ports[i];

		port->dev = cdev;
		port->port_num = first + i;
		port->agent = ib_register_mad_agent(device, port->port_num,
						    IB_QPT_GSI, &reg, 0,
						    cm_send_handler,
						    cm_recv_handler, port);
		if (IS_ERR(port->agent)) {
			dev_warn(&device->dev, "ib_cm: no CM agent on port %u: %ld\n",
				 port->port_num, PTR_ERR(port->agent));
			goto err;
		}
	}
	ib_set_client_data(device, &cm_client, cdev);
	return;

err:
	while (--i >= 0)
		ib_unregister_mad_agent(cdev->ports[i].agent);
	kfree(cdev);
}

static void cm_remove_device(struct ib_device *device)
{
	struct cm_device *cdev = ib_get_client_data(device, &cm_client);
	int i;

	if (!cdev)
		return;
	ib_set_client_data(device, &cm_client, NULL);
	/*
	 * Ids destroyed by their handler's return may still be on their way
	 * out through our agents; the consumers' own ids are gone already
	 * (their clients were removed before ours).
	 */
	flush_workqueue(cm.dwq);
	/* every send still pending is flushed to cm_send_handler() first */
	for (i = 0; i < cdev->nports; i++)
		ib_unregister_mad_agent(cdev->ports[i].agent);
	kfree(cdev);
}

static struct ib_client cm_client = {
	.name = "cm",
	.add = cm_add_device,
	.remove = cm_remove_device,
};

static int __init ib_cm_init(void)
{
	int ret;

	spin_lock_init(&cm.lock);
	INIT_LIST_HEAD(&cm.listen);
	INIT_LIST_HEAD(&cm.remote);
	INIT_LIST_HEAD(&cm.sidr);
	xa_init_flags(&cm.ids, XA_FLAGS_ALLOC1);
	/* comm IDs start at a random place, so a reboot does not reuse them */
	cm.next_id = get_random_u32();
	cm.wq = alloc_workqueue("ib_cm", 0, 0);
	if (!cm.wq)
		return -ENOMEM;
	cm.dwq = alloc_workqueue("ib_cm_destroy", 0, 0);
	if (!cm.dwq) {
		ret = -ENOMEM;
		goto err_wq;
	}
	ret = ib_register_client(&cm_client);
	if (ret)
		goto err_dwq;
	return 0;

err_dwq:
	destroy_workqueue(cm.dwq);
err_wq:
	destroy_workqueue(cm.wq);
	return ret;
}

static void __exit ib_cm_exit(void)
{
	ib_unregister_client(&cm_client);
	destroy_workqueue(cm.dwq);
	destroy_workqueue(cm.wq);
	xa_destroy(&cm.ids);
}

module_init(ib_cm_init);
module_exit(ib_cm_exit);
