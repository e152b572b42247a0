/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_mad internals: the per-port special QPs, agents, send and receive
 * buffers, and the pure rules (validation, registration tables) that the
 * KUnit suites test without an HCA.
 */
#ifndef IB_MAD_PRIV_H
#define IB_MAD_PRIV_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <rdma/ib_mad.h>

#include "mad_rmpp.h"

/* Work requests kept on each special QP. */
#define IB_MAD_SEND_DEPTH	128
#define IB_MAD_RECV_DEPTH	256

/* Highest class version an agent may register (IBA allows 0..7). */
#define IB_MAD_MAX_CLASS_VERSION	8

/* Index of a special QP in struct ib_mad_port::qp. */
enum {
	IB_MAD_QP0,
	IB_MAD_QP1,
	IB_MAD_NUM_QPS,
};

struct ib_mad_port;
struct ib_mad_agent_priv;

/**
 * struct ib_mad_reg - one agent's claim on a class of one port and QP
 * @list: on &ib_mad_qp.regs
 * @mgmt_class: the class
 * @class_version: its version
 * @oui: the vendor OUI, compared only for vendor range 2 classes
 * @methods: the request methods claimed
 * @agent: the owner
 */
struct ib_mad_reg {
	struct list_head		list;
	u8				mgmt_class;
	u8				class_version;
	u8				oui[3];
	DECLARE_BITMAP(methods, IB_MGMT_MAX_METHODS);
	struct ib_mad_agent_priv	*agent;
};

/**
 * struct ib_mad_rbuf - a receive buffer, and the MAD it receives
 * @qp_list: on &ib_mad_qp.recv_posted while the HCA owns it
 * @mqp: the QP it was posted on
 * @dma: bus address of @data while posted
 * @recv_wc: what the consumer gets
 * @wc: the completion, copied
 * @data: GRH space followed by the MAD, as one scatter entry
 * @data.grh: GRH (valid with IB_WC_GRH)
 * @data.mad: the MAD
 */
struct ib_mad_rbuf {
	struct list_head	qp_list;
	struct ib_mad_qp	*mqp;
	u64			dma;
	struct ib_mad_recv_wc	recv_wc;
	struct ib_wc		wc;
	struct {
		struct ib_grh	grh;
		struct ib_mad	mad;
	} data;
};

/**
 * struct ib_mad_qp - one special QP of a port
 * @port: its port
 * @qp: the QP
 * @index: IB_MAD_QP0 or IB_MAD_QP1
 * @lock: spinlock (irqsave); guards @send_count, @posted, @overflow,
 *	@dead, @recv_posted and @recv_count.  Never held while taking an
 *	agent's lock.
 * @send_count: sends posted and not yet completed
 * @posted: those sends (by &ib_mad_send_priv.qlist).  A send completion
 *	counts only for a send found here: whoever takes a send off this
 *	list (its completion, or the reaping at a fatal error) owns its end.
 * @overflow: sends waiting for room on the send queue (by
 *	&ib_mad_send_priv.qlist)
 * @dead: the device had a fatal error: nothing is posted any more, and
 *	what was posted has been reaped as flushed
 * @recv_posted: receive buffers the HCA holds
 * @recv_count: how many, plus the slots a filler has reserved and not yet
 *	posted.  A filler reserves its slot under @lock before it allocates
 *	and posts, so two fillers (the port's open and the refill after a
 *	receive completion, which can run at once) never post more than
 *	IB_MAD_RECV_DEPTH receives between them.
 * @rq_short: the receive ring could not be topped up; the port's
 *	refill_work tries again.  Only on the port's workqueue.
 * @rq_stopped: the receives were flushed: the ring is not refilled any
 *	more.  Only on the port's workqueue.
 * @regs: registrations (&struct ib_mad_reg); guarded by the port's reg_lock
 */
struct ib_mad_qp {
	struct ib_mad_port	*port;
	struct ib_qp		*qp;
	int			index;
	/* send/recv bookkeeping; never held while taking an agent lock */
	spinlock_t		lock;
	int			send_count;
	struct list_head	posted;
	struct list_head	overflow;
	bool			dead;
	struct list_head	recv_posted;
	int			recv_count;
	bool			rq_short;
	bool			rq_stopped;
	struct list_head	regs;
};

/**
 * struct ib_mad_port - the MAD layer on one port of a device
 * @list: on the global port list (under its lock)
 * @device: the device
 * @port_num: the port
 * @pd: protection domain of the special QPs
 * @mr: DMA MR for the receive and send buffers
 * @cq: one CQ for both QPs
 * @wq: ordered workqueue: completions, local SMPs, timeouts, send reports
 * @cq_work: polls @cq; the CQ's comp_handler only queues it
 * @cq_dead: set before the CQ goes away; @cq_work then does nothing
 * @reg_lock: spinlock (irqsave); guards @agents and every qp's regs
 * @agents: the registered agents (&ib_mad_agent_priv.port_list)
 * @qp: QP0 and QP1
 * @local_lock: spinlock (irqsave); guards @local_list
 * @local_list: SMPs for this port's own SMA (&ib_mad_send_priv.qlist)
 * @local_work: hands them to the driver's process_mad
 * @reply_agent: the SMA/PMA agents of agent.c, sending replies on QP0/QP1;
 *	guarded by @reg_lock
 * @event_handler: watches for IB_EVENT_DEVICE_FATAL
 * @fatal_work: after a fatal error, reaps the sends the dead HCA will
 *	never complete (on @wq)
 * @fatal: set by the event handler (any context) at a fatal error, read
 *	with READ_ONCE(): from then on the receive rings are not refilled
 * @refill_work: tries again to top up the receive rings that are short
 *	(on @wq), while the device lives
 * @refill_ms: its current delay, doubled after each failure up to a
 *	maximum.  Only on @wq.
 * @rq_reports: lines said about the receive rings (a failed refill, once
 *	per episode; receives flushed, once).  Only on @wq.
 */
struct ib_mad_port {
	struct list_head		list;
	struct ib_device		*device;
	u8				port_num;
	struct ib_pd			*pd;
	struct ib_mr			*mr;
	struct ib_cq			*cq;
	struct workqueue_struct		*wq;
	struct work_struct		cq_work;
	bool				cq_dead;
	/* agents, registrations, reply agents; may nest an agent lock */
	spinlock_t			reg_lock;
	struct list_head		agents;
	struct ib_mad_qp		qp[IB_MAD_NUM_QPS];
	/* local_list only; innermost */
	spinlock_t			local_lock;
	struct list_head		local_list;
	struct work_struct		local_work;
	struct ib_mad_agent		*reply_agent[IB_MAD_NUM_QPS];
	struct ib_event_handler		event_handler;
	struct work_struct		fatal_work;
	bool				fatal;
	struct delayed_work		refill_work;
	unsigned int			refill_ms;
	int				rq_reports;
};

/**
 * struct ib_mad_agent_priv - an agent and its state
 * @agent: what the consumer sees
 * @port: its port
 * @mqp: its QP
 * @reg: its registration, NULL for a send-only agent
 * @port_list: on &ib_mad_port.agents
 * @lock: spinlock (irqsave); guards @sends, @done, @rmpp_rx, @dying and
 *	the state of every send and reassembly on them.  May be followed by a
 *	qp lock or the port's local_lock, never the other way round.
 * @sends: sends not yet reported (&ib_mad_send_priv.list)
 * @done: sends to report to the send handler
 * @rmpp_rx: RMPP reassemblies in progress or recently finished
 * @timeout_work: response, ACK and reassembly timeouts
 * @done_work: calls the send handler for @done
 * @refs: references: the registration itself, each unreported send, each
 *	handler call in progress.  A new reference is taken only from one
 *	already held, or while the agent is on the port's list (under the
 *	port's reg_lock), or under @lock while !@dying; unregister takes the
 *	agent off the list and sets @dying before it drops the
 *	registration's reference, so @refs never rises from zero.
 * @released: completed by whoever drops @refs to zero, as the last thing
 *	it does with the agent; unregister waits for it and only then frees
 *	the agent (wait_for_completion() returns only once complete() is
 *	done with the completion).
 * @dying: unregistering; no new sends
 * @timer_armed: @timeout_work is queued for @next_timeout
 * @next_timeout: the earliest deadline it serves (jiffies)
 */
struct ib_mad_agent_priv {
	struct ib_mad_agent	agent;
	struct ib_mad_port	*port;
	struct ib_mad_qp	*mqp;
	struct ib_mad_reg	*reg;
	struct list_head	port_list;
	/* the agent's sends, reassemblies and their state; see above */
	spinlock_t		lock;
	struct list_head	sends;
	struct list_head	done;
	struct list_head	rmpp_rx;
	struct delayed_work	timeout_work;
	struct work_struct	done_work;
	refcount_t		refs;
	struct completion	released;
	bool			dying;
	bool			timer_armed;
	unsigned long		next_timeout;
};

/**
 * struct ib_mad_send_priv - a send buffer and its progress
 * @list: on the agent's sends or done list
 * @qlist: on a qp's posted or overflow list, or the port's local list
 * @agent: its agent
 * @send_buf: what the consumer sees
 * @area: header and data, as the consumer fills them in
 * @wire: the 256 bytes of the segment on the wire (DMA-mapped while posted)
 * @dma: bus address of @wire
 * @sge: scatter entry for @wire
 * @wr: the UD work request
 * @tid: the transaction ID it was posted with
 * @mgmt_class: and its class
 * @peer_check: a response must come from the address below (not for
 *	directed-route SMPs, permissive or multicast LIDs, or a driver that
 *	cannot read an AH back)
 * @peer_grh: the request had a GRH: compare the response's source GID
 * @peer_lid: the request's destination LID
 * @peer_gid: the request's destination GID
 * @pad: unused data bytes in the last RMPP segment
 * @in_use: between ib_post_send_mad() and the send report
 * @finished: moved to the done list; nothing changes it any more
 * @posted: a segment is on the QP (or with the local SMA)
 * @want_resp: a response is awaited
 * @local: for the port's own SMA (a DR SMP at the end of its path)
 * @rmpp: sent as RMPP segments (see @tx)
 * @internal: the MAD layer's own (an RMPP ACK or ABORT); freed, not
 *	reported
 * @timer_on: @deadline is armed
 * @deadline: when the awaited response or ACK is late (jiffies)
 * @retries_left: resends still allowed
 * @status: the outcome so far; not IB_WC_SUCCESS ends the send
 * @vendor_err: the driver's detail for @status
 * @tx: RMPP sender window
 */
struct ib_mad_send_priv {
	struct list_head		list;
	struct list_head		qlist;
	struct ib_mad_agent_priv	*agent;
	struct ib_mad_send_buf		send_buf;
	void				*area;
	void				*wire;
	u64				dma;
	struct ib_sge			sge;
	struct ib_send_wr		wr;
	__be64				tid;
	u8				mgmt_class;
	bool				peer_check;
	bool				peer_grh;
	u16				peer_lid;
	union ib_gid			peer_gid;
	int				pad;
	bool				in_use;
	bool				finished;
	bool				posted;
	bool				want_resp;
	bool				local;
	bool				rmpp;
	bool				internal;
	bool				timer_on;
	unsigned long			deadline;
	int				retries_left;
	enum ib_wc_status		status;
	u32				vendor_err;
	struct ib_rmpp_txwin		tx;
};

/* Pure rules (mad.c), tested by mad_test.c. */
bool ib_mad_is_vendor2_class(u8 mgmt_class);
int ib_mad_check_recv(const struct ib_mad_hdr *hdr, bool on_qp0);
int ib_mad_check_reg(enum ib_qp_type qp_type,
		     const struct ib_mad_reg_req *req, u8 rmpp_version,
		     bool has_recv_handler);
void ib_mad_reg_init(struct ib_mad_reg *reg, const struct ib_mad_reg_req *req,
		     struct ib_mad_agent_priv *agent);
bool ib_mad_regs_conflict(const struct ib_mad_reg *a,
			  const struct ib_mad_reg *b);
int ib_mad_reg_insert(struct list_head *regs, struct ib_mad_reg *reg);
struct ib_mad_reg *ib_mad_reg_lookup(struct list_head *regs,
				     const struct ib_mad *mad);
u32 ib_mad_tid_agent(__be64 tid);

/* For the suites: objects port teardowns could not free. */
int ib_mad_teardown_leaks(void);

/* Between mad.c, mad_rmpp.c and agent.c. */
struct ib_mad_port *ib_mad_port_get(struct ib_device *device, u8 port_num);
void ib_mad_agent_get(struct ib_mad_agent_priv *agent);
void ib_mad_agent_put(struct ib_mad_agent_priv *agent);
struct ib_mad_rbuf *ib_mad_rbuf_alloc(struct ib_mad_qp *mqp, gfp_t gfp);
int ib_mad_fill_recv(struct ib_mad_qp *mqp);
void ib_mad_send_progress(struct ib_mad_send_priv *sp);
struct ib_mad_send_priv *ib_mad_find_send(struct ib_mad_agent_priv *agent,
					  __be64 tid, u8 mgmt_class,
					  bool rmpp_only);
void ib_mad_arm_timer(struct ib_mad_agent_priv *agent, unsigned long when);
int ib_mad_post_seg(struct ib_mad_send_priv *sp, u32 seg);

static inline struct ib_mad_agent_priv *
ib_mad_agent_priv(struct ib_mad_agent *agent)
{
	return container_of(agent, struct ib_mad_agent_priv, agent);
}

static inline struct ib_mad_send_priv *
ib_mad_send_priv(struct ib_mad_send_buf *send_buf)
{
	return container_of(send_buf, struct ib_mad_send_priv, send_buf);
}

#endif /* IB_MAD_PRIV_H */
