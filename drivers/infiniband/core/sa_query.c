// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_sa: queries to the subnet administrator.
 *
 * Per device, an ib_client instance (struct sa_device) holds one struct
 * sa_port per port: the SA-class MAD agent on QP1 (RMPP version 1, so that
 * multi-segment answers are reassembled by the MAD layer) and a counted
 * address handle for the port's current SM. Port events that can move the
 * SM, or our own LID, schedule a work item that builds a fresh handle from
 * the port attributes; queries in flight keep the handle they were sent
 * with until their send completes.
 *
 * A query is a struct ib_sa_query; a per-kind descriptor (struct
 * sa_rec_kind) says how its record is packed, unpacked and handed to the
 * consumer's typed callback. It is found by ID in sa_queries (for cancel),
 * sends one MAD, and ends in the MAD layer's send handler, which is the
 * only place it is freed. The consumer's callback runs exactly once: from
 * the receive handler with the SA's answer, or from the send handler on
 * timeout, cancel or error.
 */

#include <linux/err.h>
#include <linux/idr.h>
#include <linux/init.h>
#include <linux/kref.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>

#include "sa.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand subnet administration queries");
MODULE_LICENSE("Dual BSD/GPL");

/* An address handle for the SM, shared by the queries sent through it. */
struct sa_sm_ah {
	struct kref	ref;
	struct ib_ah	*ah;
};

/**
 * struct sa_port - ib_sa's state for one port
 * @agent: the SA-class agent on QP1
 * @sm_ah: the handle to the SM, or NULL while the port has none
 * @ah_lock: spinlock, taken with interrupts off; guards @sm_ah (the
 *	pointer; the handle itself is kept alive by its count)
 * @refresh: rebuilds @sm_ah from the port attributes
 * @port_num: the port
 * @dev: the device the port belongs to
 */
struct sa_port {
	struct ib_mad_agent	*agent;
	struct sa_sm_ah		*sm_ah;
	/* guards the sm_ah pointer; irqsave */
	spinlock_t		ah_lock;
	struct work_struct	refresh;
	u8			port_num;
	struct ib_device	*dev;
};

/**
 * struct sa_device - ib_sa's client data for a device
 * @events: our port event handler
 * @first_port: port number of @ports[0]
 * @nports: entries in @ports
 * @ports: one per port
 */
struct sa_device {
	struct ib_event_handler	events;
	u8			first_port;
	u8			nports;
	struct sa_port		ports[];
};

/* The consumer's callback, typed by the kind of record the query asks for. */
union sa_callback {
	void (*path)(int status, struct ib_sa_path_rec *resp, void *context);
	void (*mcmember)(int status, struct ib_sa_mcmember_rec *resp,
			 void *context);
	void (*service)(int status, struct ib_sa_service_rec *resp,
			void *context);
};

/* Room on the stack for any record an answer is unpacked into. */
union sa_any_rec {
	struct ib_sa_path_rec		path;
	struct ib_sa_mcmember_rec	mcmember;
	struct ib_sa_service_rec	service;
};

struct ib_sa_query;

/**
 * struct sa_rec_kind - what differs between the kinds of record queried
 * @attr_id: the SA attribute ID (IB_SA_ATTR_*)
 * @pack: writes a record into a MAD's data area
 * @unpack: reads a record from an answer's data area
 * @notify: calls the query's typed callback with @status and @rec (NULL
 *	on error)
 */
struct sa_rec_kind {
	u16	attr_id;
	void	(*pack)(const void *rec, void *buf);
	void	(*unpack)(const void *buf, union sa_any_rec *rec);
	void	(*notify)(const struct ib_sa_query *query, int status,
			  union sa_any_rec *rec);
};

/**
 * struct ib_sa_query - a query in flight
 * @kind: the kind of record asked for
 * @callback: the consumer's callback, the member @kind names
 * @context: for @callback
 * @port: the port it was sent on
 * @msg: its send buffer
 * @sm_ah: the SM handle it holds a count on
 * @id: its key in sa_queries
 * @answered: set once the callback has run
 */
struct ib_sa_query {
	const struct sa_rec_kind	*kind;
	union sa_callback		callback;
	void				*context;
	struct sa_port			*port;
	struct ib_mad_send_buf		*msg;
	struct sa_sm_ah			*sm_ah;
	int				id;
	bool				answered;
};

static void sa_add_device(struct ib_device *device);
static void sa_remove_device(struct ib_device *device);

static struct ib_client sa_client = {
	.name	= "sa",
	.add	= sa_add_device,
	.remove	= sa_remove_device,
};

/*
 * sa_queries maps query IDs to queries in flight. sa_queries_lock is a
 * spinlock taken with interrupts off (cancel may be called from any
 * context); it guards the IDR, and a query's send buffer stays allocated
 * while the query is in the IDR, so cancel can use it under the lock.
 * It is taken before an agent's lock (ib_cancel_mad()), never after.
 */
static DEFINE_IDR(sa_queries);
static DEFINE_SPINLOCK(sa_queries_lock);

/* Low half of the TIDs; the agent's hi_tid makes them unique per port. */
static atomic_t sa_tid_low = ATOMIC_INIT(0);

static void sa_sm_ah_free(struct kref *ref)
{
	struct sa_sm_ah *sm_ah = container_of(ref, struct sa_sm_ah, ref);

	ib_destroy_ah(sm_ah->ah);
	kfree(sm_ah);
}

static void sa_sm_ah_put(struct sa_sm_ah *sm_ah)
{
	if (sm_ah)
		kref_put(&sm_ah->ref, sa_sm_ah_free);
}

/* Install @fresh (may be NULL) as the port's SM handle, dropping the old. */
static void sa_swap_sm_ah(struct sa_port *port, struct sa_sm_ah *fresh)
{
	struct sa_sm_ah *old;
	unsigned long flags;

	spin_lock_irqsave(&port->ah_lock, flags);
	old = port->sm_ah;
	port->sm_ah = fresh;
	spin_unlock_irqrestore(&port->ah_lock, flags);
	sa_sm_ah_put(old);
}

static void sa_refresh_sm_ah(struct work_struct *work)
{
	struct sa_port *port = container_of(work, struct sa_port, refresh);
	struct ib_port_attr attr;
	struct ib_ah_attr ah_attr = {};
	struct sa_sm_ah *fresh;

	if (ib_query_port(port->dev, port->port_num, &attr)) {
		dev_warn(&port->dev->dev, "sa: port %u query failed\n",
			 port->port_num);
		return;
	}

	/* No SM to talk to until the port is ACTIVE and knows the SM's LID. */
	if (attr.state != IB_PORT_ACTIVE || !attr.sm_lid) {
		sa_swap_sm_ah(port, NULL);
		return;
	}

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return;
	kref_init(&fresh->ref);

	ah_attr.dlid = attr.sm_lid;
	ah_attr.sl = attr.sm_sl;
	ah_attr.port_num = port->port_num;
	fresh->ah = ib_create_ah(port->agent->qp->pd, &ah_attr);
	if (IS_ERR(fresh->ah)) {
		dev_warn(&port->dev->dev, "sa: no AH to SM LID %u on port %u: %ld\n",
			 attr.sm_lid, port->port_num, PTR_ERR(fresh->ah));
		kfree(fresh);
		return;
	}
	sa_swap_sm_ah(port, fresh);
}

static void sa_port_event(struct ib_event_handler *handler,
			  struct ib_event *event)
{
	struct sa_device *sa = container_of(handler, struct sa_device, events);
	int idx;

	if (!ib_event_is_port_change(event->event))
		return;
	idx = event->element.port_num - sa->first_port;
	if (idx >= 0 && idx < sa->nports)
		schedule_work(&sa->ports[idx].refresh);
}

/* Map a send completion that ended a query without an answer to an errno. */
static int sa_send_errno(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IB_WC_WR_FLUSH_ERR:
		return -EINTR;
	default:
		return -EIO;
	}
}

/*
 * Hand the answer (@mad, or NULL with an error in @status) to the consumer
 * in the record's own terms; the record is only valid during the call.
 */
static void sa_deliver(struct ib_sa_query *query, int status,
		       const struct ib_sa_mad *mad)
{
	union sa_any_rec rec;

	if (status || !mad) {
		query->kind->notify(query, status ?: -EIO, NULL);
		return;
	}
	query->kind->unpack(mad->data, &rec);
	query->kind->notify(query, 0, &rec);
}

static void sa_forget_query(struct ib_sa_query *query)
{
	unsigned long flags;

	spin_lock_irqsave(&sa_queries_lock, flags);
	idr_remove(&sa_queries, query->id);
	spin_unlock_irqrestore(&sa_queries_lock, flags);
}

static void sa_send_done(struct ib_mad_agent *agent,
			 struct ib_mad_send_wc *wc)
{
	struct ib_sa_query *query = wc->send_buf->context[0];

	if (!query->answered) {
		query->answered = true;
		sa_deliver(query, wc->status == IB_WC_SUCCESS ? -EIO :
			   sa_send_errno(wc->status), NULL);
	}

	sa_forget_query(query);
	ib_free_send_mad(query->msg);
	sa_sm_ah_put(query->sm_ah);
	kfree(query);
}

static void sa_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *send_buf,
		    struct ib_mad_recv_wc *recv_wc)
{
	const struct ib_sa_mad *mad = (const struct ib_sa_mad *)recv_wc->recv_buf.mad;
	struct ib_sa_query *query;

	/* Unsolicited SA MADs (reports) are not for us: we registered none. */
	if (!send_buf)
		goto out;

	query = send_buf->context[0];
	if (!query->answered) {
		query->answered = true;
		if (recv_wc->wc->status == IB_WC_SUCCESS)
			sa_deliver(query, ib_sa_status_errno(mad), mad);
		else
			sa_deliver(query, -EIO, NULL);
	}
out:
	ib_free_recv_mad(recv_wc);
}

static struct sa_port *sa_find_port(struct ib_device *device, u8 port_num)
{
	struct sa_device *sa = ib_get_client_data(device, &sa_client);

	if (!sa || port_num < sa->first_port ||
	    port_num - sa->first_port >= sa->nports)
		return NULL;
	return &sa->ports[port_num - sa->first_port];
}

/*
 * Post @query on @port: take a count on the SM handle, build the MAD (with
 * @rec packed the way @query's kind says), give it an ID and send it. On
 * failure nothing was sent, no callback will run, and the caller still
 * owns (and frees) @query.
 */
static int sa_post_query(struct ib_sa_query *query, struct sa_port *port,
			 u8 method, ib_sa_comp_mask comp_mask, int timeout_ms,
			 gfp_t gfp, const void *rec)
{
	struct ib_sa_mad *mad;
	unsigned long flags;
	u64 tid;
	int ret, id;

	if (timeout_ms <= 0)
		return -EINVAL;

	spin_lock_irqsave(&port->ah_lock, flags);
	query->sm_ah = port->sm_ah;
	if (query->sm_ah)
		kref_get(&query->sm_ah->ref);
	spin_unlock_irqrestore(&port->ah_lock, flags);
	if (!query->sm_ah)
		return -EAGAIN;

	query->port = port;
	query->msg = ib_create_send_mad(port->agent, 1, 0, 0, IB_MGMT_SA_HDR,
					IB_MGMT_SA_DATA, gfp);
	if (IS_ERR(query->msg)) {
		ret = PTR_ERR(query->msg);
		goto err_ah;
	}
	query->msg->ah = query->sm_ah->ah;
	query->msg->timeout_ms = timeout_ms;
	query->msg->retries = 0;
	query->msg->context[0] = query;

	mad = query->msg->mad;
	tid = (u64)port->agent->hi_tid << 32 |
	      (u32)atomic_inc_return(&sa_tid_low);
	ib_sa_format_request(mad, method, query->kind->attr_id, comp_mask, tid);
	query->kind->pack(rec, mad->data);

	idr_preload(gfp);
	spin_lock_irqsave(&sa_queries_lock, flags);
	ret = idr_alloc_cyclic(&sa_queries, query, 0, 0, GFP_NOWAIT);
	if (ret >= 0)
		query->id = ret;
	spin_unlock_irqrestore(&sa_queries_lock, flags);
	idr_preload_end();
	if (ret < 0)
		goto err_msg;
	id = ret;

	ret = ib_post_send_mad(query->msg, NULL);
	if (ret)
		goto err_id;

	/* From here on the send handler owns (and may free) the query. */
	return id;

err_id:
	sa_forget_query(query);
err_msg:
	ib_free_send_mad(query->msg);
err_ah:
	sa_sm_ah_put(query->sm_ah);
	return ret;
}

/**
 * ib_sa_cancel_query() - stop waiting for a query's answer
 * @id: the ID the query call returned
 * @query: the query pointer it set
 *
 * Only the query that has both @id and @query is cancelled. If it is
 * still in flight its callback runs soon with -EINTR (in the MAD layer's
 * context, not from this call); if it has ended already, nothing happens,
 * even when a newer query has been given the same memory. Any context.
 */
void ib_sa_cancel_query(int id, struct ib_sa_query *query)
{
	unsigned long flags;

	/*
	 * The MAD is cancelled under sa_queries_lock: a query stays in
	 * sa_queries until its send handler has run, and that handler takes
	 * the lock to remove it before the send buffer is freed. So while
	 * the lock is held, a query found here still owns its msg, and the
	 * MAD layer cannot be handed a freed buffer whose address a newer
	 * query has been given. Lock order: sa_queries_lock, then the
	 * agent's lock (ib_cancel_mad() neither sleeps nor calls back).
	 */
	spin_lock_irqsave(&sa_queries_lock, flags);
	if (id >= 0 && idr_find(&sa_queries, id) == query && query &&
	    query->id == id)
		ib_cancel_mad(query->port->agent, query->msg);
	spin_unlock_irqrestore(&sa_queries_lock, flags);
}
EXPORT_SYMBOL(ib_sa_cancel_query);

/*
 * Start a query of @kind: check the method (the only ones the SA takes
 * for a record are Get, Set and Delete) and the port, then allocate the
 * query and post it. Returns the query ID or a negative errno; in the
 * latter case *@query is NULL and no callback will run.
 */
static int sa_start_query(struct ib_device *device, u8 port_num, u8 method,
			  const struct sa_rec_kind *kind, const void *rec,
			  ib_sa_comp_mask comp_mask, int timeout_ms,
			  gfp_t gfp_mask, union sa_callback callback,
			  void *context, struct ib_sa_query **query)
{
	struct sa_port *port;
	struct ib_sa_query *q;
	int ret;

	if (method != IB_MGMT_METHOD_GET && method != IB_MGMT_METHOD_SET &&
	    method != IB_SA_METHOD_DELETE)
		return -EINVAL;
	port = sa_find_port(device, port_num);
	if (!port)
		return -ENODEV;
	q = kzalloc(sizeof(*q), gfp_mask);
	if (!q)
		return -ENOMEM;
	q->kind = kind;
	q->callback = callback;
	q->context = context;
	*query = q;

	ret = sa_post_query(q, port, method, comp_mask, timeout_ms, gfp_mask,
			    rec);
	if (ret < 0) {
		*query = NULL;
		kfree(q);
	}
	return ret;
}

static void sa_pack_path(const void *rec, void *buf)
{
	ib_sa_pack_path_rec(rec, buf);
}

static void sa_unpack_path(const void *buf, union sa_any_rec *rec)
{
	ib_sa_unpack_path_rec(buf, &rec->path);
}

static void sa_notify_path(const struct ib_sa_query *query, int status,
			   union sa_any_rec *rec)
{
	query->callback.path(status, rec ? &rec->path : NULL, query->context);
}

static const struct sa_rec_kind sa_path_kind = {
	.attr_id	= IB_SA_ATTR_PATH_REC,
	.pack		= sa_pack_path,
	.unpack		= sa_unpack_path,
	.notify		= sa_notify_path,
};

/**
 * ib_sa_path_rec_get() - ask the SA for a path
 * @device: the device
 * @port_num: the port to ask through
 * @rec: the known parts of the path (usually SGID, DGID, P_Key)
 * @comp_mask: which parts of @rec the SA must match (IB_SA_PATH_REC_*)
 * @timeout_ms: how long to wait for the answer
 * @gfp_mask: allocation flags, for the caller's context
 * @callback: gets 0 and the path, or a negative errno and NULL: -ETIMEDOUT,
 *	-EINTR when cancelled, -ENOENT when the SA knows no such path,
 *	another errno for other failures; the record is only valid during
 *	the call
 * @context: for @callback
 * @query: set to the query, for ib_sa_cancel_query()
 *
 * A SubnAdmGet(PathRecord). The callback never runs from inside this call.
 *
 * Return: the query ID (>= 0), or a negative errno (-EAGAIN while the
 * port knows no SM, -ENODEV for a device or port ib_sa does not serve)
 * when nothing was sent and no callback will run.
 */
int ib_sa_path_rec_get(struct ib_device *device, u8 port_num,
		       struct ib_sa_path_rec *rec,
		       ib_sa_comp_mask comp_mask,
		       int timeout_ms, gfp_t gfp_mask,
		       void (*callback)(int status,
					struct ib_sa_path_rec *resp,
					void *context),
		       void *context,
		       struct ib_sa_query **query)
{
	union sa_callback cb = { .path = callback };

	return sa_start_query(device, port_num, IB_MGMT_METHOD_GET,
			      &sa_path_kind, rec, comp_mask, timeout_ms,
			      gfp_mask, cb, context, query);
}
EXPORT_SYMBOL(ib_sa_path_rec_get);

static void sa_pack_mcmember(const void *rec, void *buf)
{
	ib_sa_pack_mcmember_rec(rec, buf);
}

static void sa_unpack_mcmember(const void *buf, union sa_any_rec *rec)
{
	ib_sa_unpack_mcmember_rec(buf, &rec->mcmember);
}

static void sa_notify_mcmember(const struct ib_sa_query *query, int status,
			       union sa_any_rec *rec)
{
	query->callback.mcmember(status, rec ? &rec->mcmember : NULL,
				 query->context);
}

static const struct sa_rec_kind sa_mcmember_kind = {
	.attr_id	= IB_SA_ATTR_MC_MEMBER_REC,
	.pack		= sa_pack_mcmember,
	.unpack		= sa_unpack_mcmember,
	.notify		= sa_notify_mcmember,
};

/**
 * ib_sa_mcmember_rec_query() - send an MCMemberRecord request
 * @device: the device
 * @port_num: the port to ask through
 * @method: IB_MGMT_METHOD_GET, IB_MGMT_METHOD_SET (join) or
 *	IB_SA_METHOD_DELETE (leave)
 * @rec: the record
 * @comp_mask: which parts of @rec count (IB_SA_MCMEMBER_REC_*)
 * @timeout_ms: how long to wait for the answer
 * @gfp_mask: allocation flags, for the caller's context
 * @callback: gets 0 and the SA's record, or a negative errno and NULL
 * @context: for @callback
 * @query: set to the query, for ib_sa_cancel_query()
 *
 * Return: the query ID (>= 0), or a negative errno when nothing was sent
 * (-EINVAL for another method).
 */
int ib_sa_mcmember_rec_query(struct ib_device *device, u8 port_num,
			     u8 method,
			     struct ib_sa_mcmember_rec *rec,
			     ib_sa_comp_mask comp_mask,
			     int timeout_ms, gfp_t gfp_mask,
			     void (*callback)(int status,
					      struct ib_sa_mcmember_rec *resp,
					      void *context),
			     void *context,
			     struct ib_sa_query **query)
{
	union sa_callback cb = { .mcmember = callback };

	return sa_start_query(device, port_num, method, &sa_mcmember_kind, rec,
			      comp_mask, timeout_ms, gfp_mask, cb, context,
			      query);
}
EXPORT_SYMBOL(ib_sa_mcmember_rec_query);

static void sa_pack_service(const void *rec, void *buf)
{
	ib_sa_pack_service_rec(rec, buf);
}

static void sa_unpack_service(const void *buf, union sa_any_rec *rec)
{
	ib_sa_unpack_service_rec(buf, &rec->service);
}

static void sa_notify_service(const struct ib_sa_query *query, int status,
			      union sa_any_rec *rec)
{
	query->callback.service(status, rec ? &rec->service : NULL,
				query->context);
}

static const struct sa_rec_kind sa_service_kind = {
	.attr_id	= IB_SA_ATTR_SERVICE_REC,
	.pack		= sa_pack_service,
	.unpack		= sa_unpack_service,
	.notify		= sa_notify_service,
};

/**
 * ib_sa_service_rec_query() - send a ServiceRecord request
 * @device: the device
 * @port_num: the port to ask through
 * @method: IB_MGMT_METHOD_GET, IB_MGMT_METHOD_SET (register a service) or
 *	IB_SA_METHOD_DELETE (withdraw it)
 * @rec: the record
 * @comp_mask: which parts of @rec count (IB_SA_SERVICE_REC_*)
 * @timeout_ms: how long to wait for the answer
 * @gfp_mask: allocation flags, for the caller's context
 * @callback: gets 0 and the SA's record, or a negative errno and NULL
 * @context: for @callback
 * @query: set to the query, for ib_sa_cancel_query()
 *
 * Return: the query ID (>= 0), or a negative errno when nothing was sent
 * (-EINVAL for another method).
 */
int ib_sa_service_rec_query(struct ib_device *device, u8 port_num,
			    u8 method,
			    struct ib_sa_service_rec *rec,
			    ib_sa_comp_mask comp_mask,
			    int timeout_ms, gfp_t gfp_mask,
			    void (*callback)(int status,
					     struct ib_sa_service_rec *resp,
					     void *context),
			    void *context,
			    struct ib_sa_query **query)
{
	union sa_callback cb = { .service = callback };

	return sa_start_query(device, port_num, method, &sa_service_kind, rec,
			      comp_mask, timeout_ms, gfp_mask, cb, context,
			      query);
}
EXPORT_SYMBOL(ib_sa_service_rec_query);

static void sa_add_device(struct ib_device *device)
{
	u8 first = rdma_start_port(device), last = rdma_end_port(device);
	struct sa_device *sa;
	int i;

	sa = kzalloc(struct_size(sa, ports, last - first + 1), GFP_KERNEL);
	if (!sa)
		return;
	sa->first_port = first;
	sa->nports = last - first + 1;

	for (i = 0; i < sa->nports; i++) {
		struct sa_port *port = &sa->ports[i];

		port->dev = device;
		port->port_num = first + i;
		spin_lock_init(&port->ah_lock);
		INIT_WORK(&port->refresh, sa_refresh_sm_ah);
		port->agent = ib_register_mad_agent(device, port->port_num,
						    IB_QPT_GSI, NULL,
						    IB_MGMT_RMPP_VERSION,
						    sa_send_done, sa_recv, port);
		if (IS_ERR(port->agent)) {
			dev_warn(&device->dev, "sa: no MAD agent on port %u: %ld\n",
				 port->port_num, PTR_ERR(port->agent));
			goto err_agents;
		}
	}

	INIT_IB_EVENT_HANDLER(&sa->events, device, sa_port_event);
	if (ib_register_event_handler(&sa->events))
		goto err_agents;

	ib_set_client_data(device, &sa_client, sa);

	/* Learn where the SM is now; events tell us when it moves. */
	for (i = 0; i < sa->nports; i++)
		schedule_work(&sa->ports[i].refresh);
	return;

err_agents:
	while (--i >= 0)
		ib_unregister_mad_agent(sa->ports[i].agent);
	kfree(sa);
}

static void sa_remove_device(struct ib_device *device)
{
	struct sa_device *sa = ib_get_client_data(device, &sa_client);
	int i;

	if (!sa)
		return;

	ib_unregister_event_handler(&sa->events);
	for (i = 0; i < sa->nports; i++)
		cancel_work_sync(&sa->ports[i].refresh);

	/*
	 * Unregistering an agent flushes its sends: every query still in
	 * flight gets its callback (-EINTR) and is freed before this returns.
	 */
	for (i = 0; i < sa->nports; i++) {
		ib_unregister_mad_agent(sa->ports[i].agent);
		sa_swap_sm_ah(&sa->ports[i], NULL);
	}
	kfree(sa);
}

static int __init ib_sa_init(void)
{
	return ib_register_client(&sa_client);
}

static void __exit ib_sa_exit(void)
{
	ib_unregister_client(&sa_client);
	idr_destroy(&sa_queries);
}

module_init(ib_sa_init);
module_exit(ib_sa_exit);
