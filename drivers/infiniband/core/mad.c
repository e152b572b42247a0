// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mad: management datagrams on the special QPs (IBA 13.4, 13.5, 14.2).
 *
 * For every port of every device the MAD layer owns QP0 and QP1, one CQ
 * for both, a DMA MR and a ring of receive buffers.  The CQ's completion
 * handler only queues work on the port's ordered workqueue; polling,
 * validation, the driver's SMA/PMA (process_mad), dispatch to agents,
 * RMPP, timeouts and the reports to send handlers all run there, in
 * process context and one at a time per port.
 *
 * Agents register per port and QP for a management class, class version
 * and a set of request methods (and an OUI for the vendor classes
 * 0x30-0x4f); no two agents share a method.  Each agent also owns the
 * upper 32 bits of a TID space (hi_tid), by which responses find it.
 *
 * A send moves through these states, under its agent's lock: posted (a
 * segment is on the QP or with the local SMA), waiting (for a response,
 * or for an RMPP ACK, with a deadline), finished (on the agent's done
 * list, to be reported).  An error, a cancel or the last timeout sets its
 * status; it finishes as soon as nothing of it is on the QP.
 */

#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "agent.h"
#include "mad_priv.h"
#include "mad_rmpp.h"
#include "smi.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand MAD layer: QP0/QP1, agents, SMI, RMPP");
MODULE_LICENSE("Dual BSD/GPL");

/* Receive completions are told apart from sends by this bit of wr_id. */
#define MAD_WRID_RECV		1ULL

/* How long a sender waits for an RMPP ACK at most. */
#define MAD_RMPP_ACK_MS		2000

/* Completions handled per run of the CQ work before it yields. */
#define MAD_CQ_BUDGET		64

/*
 * After a receive ring could not be topped up, it is tried again this
 * long later, twice as long after each failure up to the maximum.
 */
#define MAD_REFILL_MIN_MS	10
#define MAD_REFILL_MAX_MS	2000

/* LIDs from here up are multicast (and 0xffff permissive). */
#define MAD_MCAST_LID_BASE	0xc000

/* ib_mad_ports_lock: spinlock; guards ib_mad_ports (open ports). */
static DEFINE_SPINLOCK(ib_mad_ports_lock);
static LIST_HEAD(ib_mad_ports);

/* The last hi_tid handed out; agents take the next one. */
static atomic_t ib_mad_last_hi_tid = ATOMIC_INIT(0);

/* ------------------------------------------------------------------ */
/* Class rules                                                          */

/**
 * ib_mad_is_vendor2_class() - is this a vendor class that carries an OUI?
 * @mgmt_class: the class
 *
 * Return: true for 0x30..0x4f.
 */
bool ib_mad_is_vendor2_class(u8 mgmt_class)
{
	return mgmt_class >= IB_MGMT_CLASS_VENDOR_RANGE2_START &&
	       mgmt_class <= IB_MGMT_CLASS_VENDOR_RANGE2_END;
}

/* Classes an agent may register: 0x01..0x4f and directed-route SMPs. */
static bool mad_class_registrable(u8 mgmt_class)
{
	return (mgmt_class && mgmt_class <= IB_MGMT_CLASS_VENDOR_RANGE2_END) ||
	       mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

/**
 * ib_response_mad() - is this MAD a response?
 * @mad: the MAD
 *
 * Return: true for methods with the R bit, TrapRepress, and Baseboard
 * Management MADs whose attribute modifier has the response bit.
 */
bool ib_response_mad(const struct ib_mad *mad)
{
	const struct ib_mad_hdr *h = &mad->mad_hdr;

	if (h->method & IB_MGMT_METHOD_RESP)
		return true;
	if (h->method == IB_MGMT_METHOD_TRAP_REPRESS)
		return true;
	return h->mgmt_class == IB_MGMT_CLASS_BM &&
	       (h->attr_mod & cpu_to_be32(1));
}
EXPORT_SYMBOL(ib_response_mad);

/**
 * ib_is_mad_class_rmpp() - does this class use RMPP?
 * @mgmt_class: the class
 *
 * Return: true for SA, BIS, device administration and vendor range 2.
 */
bool ib_is_mad_class_rmpp(u8 mgmt_class)
{
	return mgmt_class == IB_MGMT_CLASS_SUBN_ADM ||
	       mgmt_class == IB_MGMT_CLASS_BIS ||
	       mgmt_class == IB_MGMT_CLASS_DEVICE_ADM ||
	       ib_mad_is_vendor2_class(mgmt_class);
}
EXPORT_SYMBOL(ib_is_mad_class_rmpp);

/**
 * ib_get_mad_data_offset() - where the data of a class's MAD starts
 * @mgmt_class: the class
 *
 * Return: the length of the headers in front of the data: SA 56, device
 * management, device administration and BIS 64, vendor range 2 40, all
 * other classes 24.
 */
int ib_get_mad_data_offset(u8 mgmt_class)
{
	switch (mgmt_class) {
	case IB_MGMT_CLASS_SUBN_ADM:
		return IB_MGMT_SA_HDR;
	case IB_MGMT_CLASS_DEVICE_MGMT:
	case IB_MGMT_CLASS_DEVICE_ADM:
	case IB_MGMT_CLASS_BIS:
		return IB_MGMT_DEVICE_HDR;
	default:
		if (ib_mad_is_vendor2_class(mgmt_class))
			return IB_MGMT_VENDOR_HDR;
		return IB_MGMT_MAD_HDR;
	}
}
EXPORT_SYMBOL(ib_get_mad_data_offset);

/**
 * ib_mad_check_recv() - may this received MAD be processed at all?
 * @hdr: its header
 * @on_qp0: it arrived on QP0
 *
 * IBA 13.4.2 and 14.2: base version 1; SMP classes only on QP0, every
 * other class only off it; SMPs of class version 1; a method other than 0
 * (with or without the R bit).
 *
 * Return: 0, or -EINVAL to drop it.
 */
int ib_mad_check_recv(const struct ib_mad_hdr *hdr, bool on_qp0)
{
	bool smp = ib_mad_is_smp_class(hdr->mgmt_class);

	if (hdr->base_version != IB_MGMT_BASE_VERSION)
		return -EINVAL;
	if (smp != on_qp0)
		return -EINVAL;
	if (smp && hdr->class_version != 1)
		return -EINVAL;
	if (!(hdr->method & ~IB_MGMT_METHOD_RESP))
		return -EINVAL;
	return 0;
}

/**
 * ib_mad_check_reg() - are these registration parameters sane?
 * @qp_type: IB_QPT_SMI or IB_QPT_GSI
 * @req: what the agent serves, or NULL for a send-only agent
 * @rmpp_version: 0 or IB_MGMT_RMPP_VERSION
 * @has_recv_handler: the agent can receive
 *
 * Return: 0, or -EINVAL: a QP other than the special ones; RMPP on QP0, of
 * an unknown version or for a class without RMPP; a request without a
 * receive handler; a reserved class; a class version above 7; an SMP
 * class off QP0 or another class on it; a vendor range 2 class without an
 * OUI.
 */
int ib_mad_check_reg(enum ib_qp_type qp_type,
		     const struct ib_mad_reg_req *req, u8 rmpp_version,
		     bool has_recv_handler)
{
	bool smi = qp_type == IB_QPT_SMI;

	if (qp_type != IB_QPT_SMI && qp_type != IB_QPT_GSI)
		return -EINVAL;
	if (rmpp_version && (rmpp_version != IB_MGMT_RMPP_VERSION ||
			     qp_type == IB_QPT_SMI))
		return -EINVAL;
	if (!req)
		return 0;
	if (!has_recv_handler || !mad_class_registrable(req->mgmt_class))
		return -EINVAL;
	if (req->mgmt_class_version >= IB_MAD_MAX_CLASS_VERSION)
		return -EINVAL;
	if (ib_mad_is_smp_class(req->mgmt_class) != smi)
		return -EINVAL;
	if (ib_mad_is_vendor2_class(req->mgmt_class) &&
	    !(req->oui[0] | req->oui[1] | req->oui[2]))
		return -EINVAL;
	if (rmpp_version && !ib_is_mad_class_rmpp(req->mgmt_class))
		return -EINVAL;
	return 0;
}

/**
 * ib_mad_reg_init() - fill a registration from a request
 * @reg: the registration
 * @req: checked by ib_mad_check_reg()
 * @agent: its owner
 */
void ib_mad_reg_init(struct ib_mad_reg *reg, const struct ib_mad_reg_req *req,
		     struct ib_mad_agent_priv *agent)
{
	INIT_LIST_HEAD(&reg->list);
	reg->mgmt_class = req->mgmt_class;
	reg->class_version = req->mgmt_class_version;
	memcpy(reg->oui, req->oui, sizeof(reg->oui));
	bitmap_copy(reg->methods, req->method_mask, IB_MGMT_MAX_METHODS);
	reg->agent = agent;
}

static bool mad_reg_same_class(const struct ib_mad_reg *reg, u8 mgmt_class,
			       u8 class_version, const u8 *oui)
{
	if (reg->mgmt_class != mgmt_class || reg->class_version != class_version)
		return false;
	return !ib_mad_is_vendor2_class(mgmt_class) ||
	       !memcmp(reg->oui, oui, sizeof(reg->oui));
}

/**
 * ib_mad_regs_conflict() - would two registrations share a method?
 * @a: one
 * @b: the other
 *
 * Return: true when both name the same class, version and (vendor range
 * 2) OUI, and claim at least one method in common.
 */
bool ib_mad_regs_conflict(const struct ib_mad_reg *a,
			  const struct ib_mad_reg *b)
{
	return mad_reg_same_class(a, b->mgmt_class, b->class_version, b->oui) &&
	       bitmap_intersects(a->methods, b->methods, IB_MGMT_MAX_METHODS);
}

/**
 * ib_mad_reg_insert() - add a registration to a QP's table
 * @regs: the table
 * @reg: the registration
 *
 * Context: the port's reg_lock held (or a table nobody else sees).
 *
 * Return: 0, or -EBUSY when another registration claims one of its
 * methods.
 */
int ib_mad_reg_insert(struct list_head *regs, struct ib_mad_reg *reg)
{
	struct ib_mad_reg *r;

	list_for_each_entry(r, regs, list)
		if (ib_mad_regs_conflict(r, reg))
			return -EBUSY;
	list_add_tail(&reg->list, regs);
	return 0;
}

/**
 * ib_mad_reg_lookup() - which registration takes this request?
 * @regs: a QP's table
 * @mad: the request
 *
 * Context: the port's reg_lock held (or a table nobody else sees).
 *
 * Return: the registration of its class, version, method (and OUI), or
 * NULL.
 */
struct ib_mad_reg *ib_mad_reg_lookup(struct list_head *regs,
				     const struct ib_mad *mad)
{
	const struct ib_vendor_mad *vm = (const struct ib_vendor_mad *)mad;
	const struct ib_mad_hdr *h = &mad->mad_hdr;
	struct ib_mad_reg *r;

	if (h->method >= IB_MGMT_MAX_METHODS)
		return NULL;
	list_for_each_entry(r, regs, list)
		if (mad_reg_same_class(r, h->mgmt_class, h->class_version,
				       vm->oui) &&
		    test_bit(h->method, r->methods))
			return r;
	return NULL;
}

/**
 * ib_mad_tid_agent() - the hi_tid part of a transaction ID
 * @tid: the TID, as on the wire
 *
 * Return: its upper 32 bits.
 */
u32 ib_mad_tid_agent(__be64 tid)
{
	return be64_to_cpu(tid) >> 32;
}

/* ------------------------------------------------------------------ */
/* Ports and agents                                                     */

/**
 * ib_mad_port_get() - the MAD layer's state of a port
 * @device: the device
 * @port_num: the port
 *
 * Return: the port, or NULL when the MAD layer has not opened it.
 */
struct ib_mad_port *ib_mad_port_get(struct ib_device *device, u8 port_num)
{
	struct ib_mad_port *port, *found = NULL;
	unsigned long irq;

	spin_lock_irqsave(&ib_mad_ports_lock, irq);
	list_for_each_entry(port, &ib_mad_ports, list)
		if (port->device == device && port->port_num == port_num) {
			found = port;
			break;
		}
	spin_unlock_irqrestore(&ib_mad_ports_lock, irq);
	return found;
}

/**
 * ib_mad_agent_get() - take a reference on an agent
 * @agent: the agent
 */
void ib_mad_agent_get(struct ib_mad_agent_priv *agent)
{
	refcount_inc(&agent->refs);
}

/**
 * ib_mad_agent_put() - drop a reference on an agent
 * @agent: the agent
 *
 * The registration's own reference is dropped only by unregister, which
 * then waits for the others.  The caller must not touch the agent after
 * this returns: the last put completes &ib_mad_agent_priv.released, and
 * the unregistering thread may free the agent at once.
 */
void ib_mad_agent_put(struct ib_mad_agent_priv *agent)
{
	if (refcount_dec_and_test(&agent->refs))
		complete(&agent->released);
}

/**
 * ib_mad_arm_timer() - make the agent's timeout work run by @when
 * @agent: the agent
 * @when: a deadline, in jiffies
 *
 * Context: the agent's lock held.
 */
void ib_mad_arm_timer(struct ib_mad_agent_priv *agent, unsigned long when)
{
	unsigned long now = jiffies;

	if (agent->dying)
		return;
	if (agent->timer_armed && !time_before(when, agent->next_timeout))
		return;
	agent->timer_armed = true;
	agent->next_timeout = when;
	mod_delayed_work(agent->port->wq, &agent->timeout_work,
			 time_after(when, now) ? when - now : 0);
}

static void mad_arm_send(struct ib_mad_send_priv *sp, u32 ms)
{
	sp->deadline = jiffies + msecs_to_jiffies(ms);
	sp->timer_on = true;
	ib_mad_arm_timer(sp->agent, sp->deadline);
}

/* Hand a send to done_work, which reports it (or frees an internal one). */
static void mad_finish(struct ib_mad_send_priv *sp)
{
	struct ib_mad_agent_priv *agent = sp->agent;

	if (sp->finished)
		return;
	sp->finished = true;
	sp->want_resp = false;
	sp->timer_on = false;
	list_move_tail(&sp->list, &agent->done);
	queue_work(agent->port->wq, &agent->done_work);
}

/**
 * ib_mad_send_progress() - take a send to its next state
 * @sp: the send, not finished
 *
 * With a bad status it finishes once nothing of it is on the QP.  An RMPP
 * send posts its next segment when the window allows, or waits for an
 * ACK.  Then it waits for its response if it expects one, or finishes.
 *
 * Context: the agent's lock held.
 */
void ib_mad_send_progress(struct ib_mad_send_priv *sp)
{
	u32 seg, ms;

	if (sp->finished)
		return;
	if (sp->status != IB_WC_SUCCESS)
		goto end;
	if (sp->posted)
		return;
	if (sp->rmpp && sp->tx.last_ack < sp->tx.seg_count) {
		seg = ib_rmpp_tx_next(&sp->tx);
		if (seg) {
			if (ib_mad_post_seg(sp, seg))
				goto fail;
			return;
		}
		if (!sp->timer_on) {
			ms = sp->send_buf.timeout_ms;
			if (!ms || ms > MAD_RMPP_ACK_MS)
				ms = MAD_RMPP_ACK_MS;
			mad_arm_send(sp, ms);
		}
		return;
	}
	if (sp->want_resp) {
		if (!sp->timer_on)
			mad_arm_send(sp, sp->send_buf.timeout_ms);
		return;
	}
	goto end;
fail:
	sp->status = IB_WC_GENERAL_ERR;
end:
	sp->timer_on = false;
	if (!sp->posted)
		mad_finish(sp);
}

/**
 * ib_mad_find_send() - an unfinished send of an agent by TID
 * @agent: the agent
 * @tid: the transaction ID
 * @mgmt_class: and class
 * @rmpp_only: only RMPP sends
 *
 * Context: the agent's lock held.
 *
 * Return: the send, or NULL.
 */
struct ib_mad_send_priv *ib_mad_find_send(struct ib_mad_agent_priv *agent,
					  __be64 tid, u8 mgmt_class,
					  bool rmpp_only)
{
	struct ib_mad_send_priv *sp;

	list_for_each_entry(sp, &agent->sends, list)
		if (sp->tid == tid && sp->mgmt_class == mgmt_class &&
		    (!rmpp_only || sp->rmpp))
			return sp;
	return NULL;
}

static void mad_done_work(struct work_struct *work)
{
	struct ib_mad_agent_priv *agent =
		container_of(work, struct ib_mad_agent_priv, done_work);
	struct ib_mad_send_wc wc;
	struct ib_mad_send_priv *sp;
	unsigned long irq;
	struct ib_ah *ah;

	for (;;) {
		spin_lock_irqsave(&agent->lock, irq);
		sp = list_first_entry_or_null(&agent->done,
					      struct ib_mad_send_priv, list);
		if (sp) {
			list_del_init(&sp->list);
			sp->in_use = false;
		}
		spin_unlock_irqrestore(&agent->lock, irq);
		if (!sp)
			break;

		if (sp->internal) {
			ah = sp->send_buf.ah;
			ib_free_send_mad(&sp->send_buf);
			if (ah)
				ib_destroy_ah(ah);
		} else {
			wc.send_buf = &sp->send_buf;
			wc.status = sp->status;
			wc.vendor_err = sp->vendor_err;
			agent->agent.send_handler(&agent->agent, &wc);
		}
		ib_mad_agent_put(agent);
	}
}

static void mad_timeout_work(struct work_struct *work)
{
	struct ib_mad_agent_priv *agent =
		container_of(to_delayed_work(work), struct ib_mad_agent_priv,
			     timeout_work);
	struct ib_mad_send_priv *sp, *tmp;
	unsigned long irq;

	spin_lock_irqsave(&agent->lock, irq);
	agent->timer_armed = false;
	list_for_each_entry_safe(sp, tmp, &agent->sends, list) {
		if (!sp->timer_on)
			continue;
		if (time_before(jiffies, sp->deadline)) {
			ib_mad_arm_timer(agent, sp->deadline);
			continue;
		}
		sp->timer_on = false;
		if (sp->retries_left <= 0) {
			sp->status = IB_WC_RESP_TIMEOUT_ERR;
		} else {
			sp->retries_left--;
			if (!sp->rmpp) {
				if (ib_mad_post_seg(sp, 0))
					sp->status = IB_WC_GENERAL_ERR;
			} else if (sp->tx.last_ack < sp->tx.seg_count) {
				ib_rmpp_tx_rewind(&sp->tx);
			} else {
				/* No response to the whole message: again. */
				ib_rmpp_tx_start(&sp->tx, sp->tx.seg_count);
			}
		}
		ib_mad_send_progress(sp);
	}
	ib_rmpp_rx_expire(agent);
	spin_unlock_irqrestore(&agent->lock, irq);
}

/**
 * ib_register_mad_agent() - register a MAD consumer on a port and QP
 * @device: the device
 * @port_num: the port
 * @qp_type: IB_QPT_SMI (QP0) or IB_QPT_GSI (QP1)
 * @mad_reg_req: the class, version, methods (and OUI) whose requests it
 *	takes, or NULL for an agent that only sends (and gets responses)
 * @rmpp_version: 0, or IB_MGMT_RMPP_VERSION to have the MAD layer
 *	segment its sends and reassemble its receives
 * @send_handler: reports the end of each send; required to send
 * @recv_handler: delivers received MADs; required with @mad_reg_req
 * @context: the consumer's pointer, kept in the agent
 *
 * Context: process context.
 *
 * Return: the agent, or ERR_PTR(-EINVAL) for bad parameters (see
 * ib_mad_check_reg()), ERR_PTR(-ENODEV) for a port the MAD layer does not
 * serve, ERR_PTR(-EBUSY) when another agent on the port and QP already
 * takes one of the methods, ERR_PTR(-ENOMEM).
 */
struct ib_mad_agent *ib_register_mad_agent(struct ib_device *device,
					   u8 port_num,
					   enum ib_qp_type qp_type,
					   struct ib_mad_reg_req *mad_reg_req,
					   u8 rmpp_version,
					   ib_mad_send_handler send_handler,
					   ib_mad_recv_handler recv_handler,
					   void *context)
{
	struct ib_mad_agent_priv *agent;
	struct ib_mad_port *port;
	struct ib_mad_reg *reg = NULL;
	unsigned long irq;
	u32 hi_tid;
	int ret;

	ret = ib_mad_check_reg(qp_type, mad_reg_req, rmpp_version,
			       recv_handler);
	if (ret)
		return ERR_PTR(ret);
	port = ib_mad_port_get(device, port_num);
	if (!port)
		return ERR_PTR(-ENODEV);

	agent = kzalloc(sizeof(*agent), GFP_KERNEL);
	if (!agent)
		return ERR_PTR(-ENOMEM);
	if (mad_reg_req) {
		reg = kzalloc(sizeof(*reg), GFP_KERNEL);
		if (!reg) {
			ret = -ENOMEM;
			goto free_agent;
		}
		ib_mad_reg_init(reg, mad_reg_req, agent);
	}

	do {
		hi_tid = atomic_inc_return(&ib_mad_last_hi_tid);
	} while (!hi_tid);

	agent->port = port;
	agent->mqp = &port->qp[qp_type == IB_QPT_SMI ? IB_MAD_QP0 : IB_MAD_QP1];
	agent->reg = reg;
	agent->agent = (struct ib_mad_agent) {
		.device = device, .qp = agent->mqp->qp, .mr = port->mr,
		.recv_handler = recv_handler, .send_handler = send_handler,
		.context = context, .hi_tid = hi_tid, .port_num = port_num,
		.rmpp_version = rmpp_version,
	};
	spin_lock_init(&agent->lock);
	INIT_LIST_HEAD(&agent->sends);
	INIT_LIST_HEAD(&agent->done);
	INIT_LIST_HEAD(&agent->rmpp_rx);
	INIT_DELAYED_WORK(&agent->timeout_work, mad_timeout_work);
	INIT_WORK(&agent->done_work, mad_done_work);
	refcount_set(&agent->refs, 1);
	init_completion(&agent->released);

	spin_lock_irqsave(&port->reg_lock, irq);
	if (reg) {
		ret = ib_mad_reg_insert(&agent->mqp->regs, reg);
		if (ret) {
			spin_unlock_irqrestore(&port->reg_lock, irq);
			goto free_reg;
		}
	}
	list_add_tail(&agent->port_list, &port->agents);
	spin_unlock_irqrestore(&port->reg_lock, irq);
	return &agent->agent;

free_reg:
	kfree(reg);
free_agent:
	kfree(agent);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL(ib_register_mad_agent);

/**
 * ib_unregister_mad_agent() - remove an agent
 * @mad_agent: the agent
 *
 * No new MAD reaches it once this starts.  Its unfinished sends are
 * reported to its send handler with IB_WC_WR_FLUSH_ERR (from the MAD
 * layer's workqueue), and the call returns when every handler call of the
 * agent has returned.  It must not be called from the agent's own
 * handlers.  A send still on the QP is waited for, unless the device has
 * reported IB_EVENT_DEVICE_FATAL: then the MAD layer reaps it as flushed
 * (a dead HCA never completes it).
 *
 * Context: process context; sleeps.
 *
 * Return: 0.
 */
int ib_unregister_mad_agent(struct ib_mad_agent *mad_agent)
{
	struct ib_mad_agent_priv *agent = ib_mad_agent_priv(mad_agent);
	struct ib_mad_port *port = agent->port;
	struct ib_mad_send_priv *sp, *tmp;
	unsigned long irq;

	spin_lock_irqsave(&port->reg_lock, irq);
	list_del(&agent->port_list);
	if (agent->reg)
		list_del(&agent->reg->list);
	spin_unlock_irqrestore(&port->reg_lock, irq);

	spin_lock_irqsave(&agent->lock, irq);
	agent->dying = true;
	list_for_each_entry_safe(sp, tmp, &agent->sends, list) {
		if (sp->status == IB_WC_SUCCESS)
			sp->status = IB_WC_WR_FLUSH_ERR;
		ib_mad_send_progress(sp);
	}
	spin_unlock_irqrestore(&agent->lock, irq);

	cancel_delayed_work_sync(&agent->timeout_work);
	ib_rmpp_rx_flush(agent);
	/* Our own reference; then every other holder's last touch. */
	ib_mad_agent_put(agent);
#ifndef IB_MAD_TEST_BREAK_AGENT_REF
	wait_for_completion(&agent->released);
#else
	/*
	 * The debug lane's proof (make modules-debug-broken, never the
	 * normal build): the agent is freed while others still hold it, and
	 * tests/kmod/mad_agent_race must make KASAN report their puts.
	 */
	pr_warn_once("ib_mad: built with IB_MAD_TEST_BREAK_AGENT_REF: unregister does not wait\n");
#endif
	cancel_work_sync(&agent->done_work);
	kfree(agent->reg);
	kfree(agent);
	return 0;
}
EXPORT_SYMBOL(ib_unregister_mad_agent);

/* ------------------------------------------------------------------ */
/* Send buffers                                                         */

/**
 * ib_create_send_mad() - allocate a send buffer
 * @mad_agent: the agent that will send it
 * @remote_qpn: destination QP (0 or 1 for MADs to the special QPs)
 * @pkey_index: P_Key index to send with
 * @rmpp_active: send as RMPP segments (the agent must run RMPP)
 * @hdr_len: bytes of header repeated in each segment (at least the common
 *	MAD header; with RMPP, at least the RMPP header)
 * @data_len: bytes of data; with RMPP, the whole message's
 * @gfp_mask: allocation flags
 *
 * The buffer is zeroed; send_buf->mad holds the header and the first
 * segment's data, ib_get_rmpp_segment() the others.  For @rmpp_active the
 * RMPP header gets the agent's version, type DATA and the Active flag;
 * the MAD layer fills in the segment fields when it sends.  The consumer
 * sets ->ah, ->timeout_ms and ->retries.
 *
 * The buffer (header plus all segments) is allocated with @gfp_mask: a
 * caller that sends on behalf of user space (ib_umad) passes
 * GFP_KERNEL_ACCOUNT so the memory is charged to that process's cgroup.
 * An RMPP message carries at most IB_MAD_RMPP_MAX_DATA bytes of data.
 *
 * Return: the buffer, or ERR_PTR(-EINVAL) for bad lengths or RMPP the
 * agent does not run, ERR_PTR(-EMSGSIZE) for RMPP data longer than
 * IB_MAD_RMPP_MAX_DATA, ERR_PTR(-ENOMEM).
 */
struct ib_mad_send_buf *ib_create_send_mad(struct ib_mad_agent *mad_agent,
					   u32 remote_qpn, u16 pkey_index,
					   int rmpp_active,
					   int hdr_len, int data_len,
					   gfp_t gfp_mask)
{
	struct ib_mad_agent_priv *agent = ib_mad_agent_priv(mad_agent);
	int seg_size, seg_count, pad, ret;
	struct ib_mad_send_priv *sp;
	struct ib_rmpp_mad *rm;
	size_t area_len;

	if (hdr_len < IB_MGMT_MAD_HDR || data_len < 0)
		return ERR_PTR(-EINVAL);
	if (rmpp_active) {
		if (!mad_agent->rmpp_version)
			return ERR_PTR(-EINVAL);
		ret = ib_rmpp_layout(hdr_len, data_len, &seg_size, &seg_count,
				     &pad);
		if (ret)
			return ERR_PTR(ret);
		if (check_mul_overflow((size_t)seg_count, (size_t)seg_size,
				       &area_len) ||
		    check_add_overflow(area_len, (size_t)hdr_len, &area_len))
			return ERR_PTR(-EMSGSIZE);
	} else {
		/* no sum of the two: each may be anything up to INT_MAX */
		if (hdr_len > IB_MGMT_MAD_SIZE ||
		    data_len > IB_MGMT_MAD_SIZE - hdr_len)
			return ERR_PTR(-EINVAL);
		seg_size = IB_MGMT_MAD_SIZE - hdr_len;
		seg_count = 1;
		pad = 0;
		area_len = IB_MGMT_MAD_SIZE;
	}

	sp = kzalloc(sizeof(*sp), gfp_mask);
	if (!sp)
		return ERR_PTR(-ENOMEM);
	sp->wire = kmalloc(IB_MGMT_MAD_SIZE, gfp_mask);
	if (!sp->wire)
		goto free_sp;
	sp->area = kvzalloc(area_len, gfp_mask);
	if (!sp->area)
		goto free_wire;

	INIT_LIST_HEAD(&sp->list);
	INIT_LIST_HEAD(&sp->qlist);
	sp->agent = agent;
	sp->rmpp = rmpp_active;
	sp->pad = pad;
	sp->send_buf.mad = sp->area;
	sp->send_buf.mad_agent = mad_agent;
	sp->send_buf.hdr_len = hdr_len;
	sp->send_buf.data_len = data_len;
	sp->send_buf.seg_count = seg_count;
	sp->send_buf.seg_size = seg_size;
	sp->wr.wr.ud.remote_qpn = remote_qpn;
	sp->wr.wr.ud.remote_qkey = remote_qpn ? IB_QP1_QKEY : 0;
	sp->wr.wr.ud.pkey_index = pkey_index;
	sp->wr.wr.ud.port_num = mad_agent->port_num;

	if (rmpp_active) {
		rm = sp->area;
		rm->rmpp_hdr.rmpp_version = mad_agent->rmpp_version;
		rm->rmpp_hdr.rmpp_type = IB_MGMT_RMPP_TYPE_DATA;
		ib_set_rmpp_flags(&rm->rmpp_hdr, IB_MGMT_RMPP_FLAG_ACTIVE);
	}
	return &sp->send_buf;

free_wire:
	kfree(sp->wire);
free_sp:
	kfree(sp);
	return ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL(ib_create_send_mad);

/**
 * ib_get_rmpp_segment() - the data of one segment of a send buffer
 * @send_buf: the buffer
 * @seg_num: the segment, from 1
 *
 * Return: where its data starts (seg_size bytes), or NULL for a segment
 * number out of range.
 */
void *ib_get_rmpp_segment(struct ib_mad_send_buf *send_buf, int seg_num)
{
	struct ib_mad_send_priv *sp = ib_mad_send_priv(send_buf);

	if (seg_num < 1 || seg_num > send_buf->seg_count)
		return NULL;
	return (u8 *)sp->area + send_buf->hdr_len +
	       (size_t)(seg_num - 1) * send_buf->seg_size;
}
EXPORT_SYMBOL(ib_get_rmpp_segment);

/**
 * ib_free_send_mad() - free a send buffer
 * @send_buf: the buffer, not posted (or already reported)
 */
void ib_free_send_mad(struct ib_mad_send_buf *send_buf)
{
	struct ib_mad_send_priv *sp = ib_mad_send_priv(send_buf);

	kvfree(sp->area);
	kfree(sp->wire);
	kfree(sp);
}
EXPORT_SYMBOL(ib_free_send_mad);

/* ------------------------------------------------------------------ */
/* Posting                                                              */

/*
 * Post on the QP, or queue behind a full send queue.  Return: 0, -EIO
 * after a fatal error, or the driver's error.
 */
static int mad_qp_post(struct ib_mad_qp *mqp, struct ib_mad_send_priv *sp)
{
	struct ib_send_wr *bad;
	unsigned long irq;
	int ret = 0;

	spin_lock_irqsave(&mqp->lock, irq);
	if (mqp->dead) {
		ret = -EIO;
	} else if (mqp->send_count < IB_MAD_SEND_DEPTH) {
		ret = ib_post_send(mqp->qp, &sp->wr, &bad);
		if (!ret) {
			mqp->send_count++;
			list_add_tail(&sp->qlist, &mqp->posted);
		}
	} else {
		list_add_tail(&sp->qlist, &mqp->overflow);
	}
	spin_unlock_irqrestore(&mqp->lock, irq);
	return ret;
}

static void mad_unmap_send(struct ib_mad_send_priv *sp)
{
	dma_unmap_single(sp->agent->port->device->dma_device, sp->dma,
			 IB_MGMT_MAD_SIZE, DMA_TO_DEVICE);
}

/**
 * ib_mad_post_seg() - put a send's segment on the wire
 * @sp: the send
 * @seg: the RMPP segment, from 1, or 0 for a MAD without RMPP
 *
 * Copies the header and the segment into the wire buffer, fills in the
 * RMPP fields, and posts it on the agent's QP; a send for the port's own
 * SMA goes to the local work instead.
 *
 * Context: the agent's lock held; does not sleep.
 *
 * Return: 0 (the send is posted), or a negative errno.
 */
int ib_mad_post_seg(struct ib_mad_send_priv *sp, u32 seg)
{
	struct ib_mad_agent_priv *agent = sp->agent;
	struct ib_mad_port *port = agent->port;
	struct ib_device *dev = port->device;
	int hdr_len = sp->send_buf.hdr_len;
	int seg_size = sp->send_buf.seg_size;
	int ret;

	if (seg) {
		memcpy(sp->wire, sp->area, hdr_len);
		memcpy((u8 *)sp->wire + hdr_len,
		       (u8 *)sp->area + hdr_len + (size_t)(seg - 1) * seg_size,
		       seg_size);
		ib_rmpp_fill_seg(sp->wire, seg, sp->tx.seg_count, sp->pad);
		sp->tx.last_sent = seg;
	} else {
		memcpy(sp->wire, sp->area, IB_MGMT_MAD_SIZE);
	}

	if (sp->local) {
		sp->posted = true;
		spin_lock(&port->local_lock);
		list_add_tail(&sp->qlist, &port->local_list);
		spin_unlock(&port->local_lock);
		queue_work(port->wq, &port->local_work);
		return 0;
	}
	if (!sp->send_buf.ah)
		return -EINVAL;

	sp->dma = dma_map_single(dev->dma_device, sp->wire, IB_MGMT_MAD_SIZE,
				 DMA_TO_DEVICE);
	if (dma_mapping_error(dev->dma_device, sp->dma))
		return -ENOMEM;
	sp->sge.addr = sp->dma;
	sp->sge.length = IB_MGMT_MAD_SIZE;
	sp->sge.lkey = port->mr->lkey;
	sp->wr.next = NULL;
	sp->wr.wr_id = (uintptr_t)sp;
	sp->wr.sg_list = &sp->sge;
	sp->wr.num_sge = 1;
	sp->wr.opcode = IB_WR_SEND;
	sp->wr.send_flags = IB_SEND_SIGNALED;
	sp->wr.wr.ud.ah = sp->send_buf.ah;

	sp->posted = true;
	ret = mad_qp_post(agent->mqp, sp);
	if (ret) {
		sp->posted = false;
		mad_unmap_send(sp);
	}
	return ret;
}

/* A DR SMP that has reached the end of its path at this port. */
static bool mad_smp_is_local(const struct ib_smp *smp)
{
	return !ib_get_smp_direction(smp) && smp->hop_ptr == smp->hop_cnt + 1;
}

/* A send starts afresh: flags, outcome, matching keys, retry budget. */
static void mad_send_begin(struct ib_mad_send_priv *sp,
			   const struct ib_mad_hdr *hdr, bool local)
{
	sp->finished = false;
	sp->in_use = true;
	sp->posted = false;
	sp->timer_on = false;
	sp->local = local;
	sp->want_resp = sp->send_buf.timeout_ms > 0;

	sp->status = IB_WC_SUCCESS;
	sp->vendor_err = 0;

	/* Responses and RMPP control MADs are matched by these. */
	sp->tid = hdr->tid;
	sp->mgmt_class = hdr->mgmt_class;

	sp->retries_left = sp->send_buf.retries;
}

/*
 * Where a response to @sp must come from: the address its AH sends to.
 * Not checked for directed-route SMPs (their LIDs may be permissive), for
 * a permissive or multicast destination, or when the driver cannot read
 * an AH back.  Return: 0, or the driver's error.
 */
static int mad_note_peer(struct ib_mad_send_priv *sp,
			 const struct ib_mad_hdr *hdr)
{
	struct ib_ah_attr attr;
	int ret;

	sp->peer_check = false;
	if (hdr->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ||
	    !sp->send_buf.ah)
		return 0;
	ret = ib_query_ah(sp->send_buf.ah, &attr);
	if (ret == -EOPNOTSUPP)
		return 0;
	if (ret)
		return ret;
	sp->peer_grh = attr.ah_flags & IB_AH_GRH;
	sp->peer_lid = attr.dlid;
	sp->peer_gid = attr.grh.dgid;
	sp->peer_check = sp->peer_grh ||
			 (attr.dlid && attr.dlid < MAD_MCAST_LID_BASE);
	return 0;
}

/* Did @rb come from where @sp was sent to? */
static bool mad_from_peer(const struct ib_mad_send_priv *sp,
			  const struct ib_mad_rbuf *rb)
{
	if (!sp->peer_check)
		return true;
	if (sp->peer_grh)
		return (rb->wc.wc_flags & IB_WC_GRH) &&
		       !memcmp(sp->peer_gid.raw, rb->data.grh.sgid.raw,
			       sizeof(sp->peer_gid.raw));
	return rb->wc.slid == sp->peer_lid;
}

static int mad_post_one(struct ib_mad_send_priv *sp)
{
	struct ib_mad_agent_priv *agent = sp->agent;
	struct ib_mad_port *port = agent->port;
	struct ib_mad_hdr *hdr = sp->area;
	bool local = false;
	unsigned long irq;
	u16 pkey;
	int ret;

	if (!agent->agent.send_handler)
		return -EINVAL;
	if (sp->send_buf.timeout_ms && !agent->agent.recv_handler)
		return -EINVAL;
	/* An index outside the port's table must not pick a default P_Key. */
	if (ib_get_cached_pkey(port->device, port->port_num,
			       sp->wr.wr.ud.pkey_index, &pkey))
		return -EINVAL;

	if (agent->mqp->index == IB_MAD_QP0 &&
	    hdr->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		struct ib_smp *smp = sp->area;

		if (smi_handle_dr_smp_send(smp,
					   port->device->node_type == IB_NODE_SWITCH,
					   port->port_num) == IB_SMI_DISCARD)
			return -EINVAL;
		local = mad_smp_is_local(smp) && port->device->process_mad;
	}
	if (!local && !sp->send_buf.ah)
		return -EINVAL;

	spin_lock_irqsave(&agent->lock, irq);
	if (agent->dying || sp->in_use) {
		spin_unlock_irqrestore(&agent->lock, irq);
		return -EINVAL;
	}
	/* ACKs and responses find an RMPP send by TID: one at a time. */
	if (sp->rmpp &&
	    ib_mad_find_send(agent, hdr->tid, hdr->mgmt_class, true)) {
		spin_unlock_irqrestore(&agent->lock, irq);
		return -EBUSY;
	}
	ret = mad_note_peer(sp, hdr);
	if (ret) {
		spin_unlock_irqrestore(&agent->lock, irq);
		return ret;
	}
	mad_send_begin(sp, hdr, local);
	if (sp->rmpp)
		ib_rmpp_tx_start(&sp->tx, sp->send_buf.seg_count);
	list_add_tail(&sp->list, &agent->sends);
	ib_mad_agent_get(agent);

	ret = ib_mad_post_seg(sp, sp->rmpp ? 1 : 0);
	if (ret) {
		list_del_init(&sp->list);
		sp->in_use = false;
	}
	spin_unlock_irqrestore(&agent->lock, irq);
	if (ret)
		ib_mad_agent_put(agent);
	return ret;
}

/**
 * ib_post_send_mad() - send MADs
 * @send_buf: the first of a list of buffers linked by ->next
 * @bad_send_buf: on failure, set to the first buffer not sent
 *
 * Each buffer's MAD goes out on its agent's QP to ->ah (a directed-route
 * SMP first passes the outgoing SMI rules; one whose path ends at this
 * port goes to the driver's SMA instead, and its reply comes back to the
 * agent as a received response).  The send handler reports each buffer
 * once: after the send completes, or when a response expected within
 * ->timeout_ms has arrived (then after the receive handler), or after
 * ->retries resends all timed out, or on cancel.
 *
 * Context: any; does not sleep.
 *
 * A response completes the send it answers when it has the send's TID and
 * class and comes from the address the send went to (its AH's DLID, or
 * DGID with a GRH; not checked for directed-route SMPs, a permissive or
 * multicast DLID).
 *
 * Return: 0, or -EINVAL for a buffer that cannot be sent (no AH, already
 * posted, a timeout without a receive handler, a P_Key index outside the
 * port's table, an SMP the SMI rules discard, an agent going away),
 * -EBUSY for an RMPP send whose TID and class an unfinished RMPP send of
 * the agent already uses, -EIO after the device reported a fatal error,
 * or the driver's error.
 */
int ib_post_send_mad(struct ib_mad_send_buf *send_buf,
		     struct ib_mad_send_buf **bad_send_buf)
{
	struct ib_mad_send_buf *next;
	int ret;

	for (; send_buf; send_buf = next) {
		next = send_buf->next;
		ret = mad_post_one(ib_mad_send_priv(send_buf));
		if (ret) {
			if (bad_send_buf)
				*bad_send_buf = send_buf;
			return ret;
		}
	}
	return 0;
}
EXPORT_SYMBOL(ib_post_send_mad);

/**
 * ib_modify_mad() - change the response timeout of a send, or cancel it
 * @mad_agent: its agent
 * @send_buf: the buffer
 * @timeout_ms: the new timeout from now; 0 cancels the send, which is
 *	then reported with IB_WC_WR_FLUSH_ERR
 *
 * Context: any; does not sleep.
 *
 * Return: 0, or -EINVAL when the send is not pending.
 */
int ib_modify_mad(struct ib_mad_agent *mad_agent,
		  struct ib_mad_send_buf *send_buf, u32 timeout_ms)
{
	struct ib_mad_agent_priv *agent = ib_mad_agent_priv(mad_agent);
	struct ib_mad_send_priv *sp, *found = NULL;
	unsigned long irq;

	if (!send_buf)
		return -EINVAL;
	spin_lock_irqsave(&agent->lock, irq);
	list_for_each_entry(sp, &agent->sends, list)
		if (&sp->send_buf == send_buf) {
			found = sp;
			break;
		}
	if (!found || found->status != IB_WC_SUCCESS) {
		spin_unlock_irqrestore(&agent->lock, irq);
		return -EINVAL;
	}
	if (!timeout_ms) {
		found->status = IB_WC_WR_FLUSH_ERR;
	} else {
		found->send_buf.timeout_ms = timeout_ms;
		if (found->timer_on && found->want_resp &&
		    (!found->rmpp || found->tx.last_ack == found->tx.seg_count))
			mad_arm_send(found, timeout_ms);
	}
	ib_mad_send_progress(found);
	spin_unlock_irqrestore(&agent->lock, irq);
	return 0;
}
EXPORT_SYMBOL(ib_modify_mad);

/**
 * ib_cancel_mad() - cancel a send
 * @mad_agent: its agent
 * @send_buf: the buffer
 *
 * A pending send is reported with IB_WC_WR_FLUSH_ERR, from the MAD layer's
 * workqueue; one already reported is left alone.
 *
 * Context: any; does not sleep.
 */
void ib_cancel_mad(struct ib_mad_agent *mad_agent,
		   struct ib_mad_send_buf *send_buf)
{
	ib_modify_mad(mad_agent, send_buf, 0);
}
EXPORT_SYMBOL(ib_cancel_mad);

/* ------------------------------------------------------------------ */
/* Receive buffers                                                      */

/**
 * ib_mad_rbuf_alloc() - a receive buffer, its recv_wc set up
 * @mqp: the QP it belongs to
 * @gfp: allocation flags
 *
 * Return: the buffer, or NULL.
 */
struct ib_mad_rbuf *ib_mad_rbuf_alloc(struct ib_mad_qp *mqp, gfp_t gfp)
{
	struct ib_mad_rbuf *rb = kzalloc(sizeof(*rb), gfp);

	if (!rb)
		return NULL;
	INIT_LIST_HEAD(&rb->qp_list);
	rb->mqp = mqp;
	rb->recv_wc.wc = &rb->wc;
	rb->recv_wc.recv_buf.grh = &rb->data.grh;
	rb->recv_wc.recv_buf.mad = &rb->data.mad;
	INIT_LIST_HEAD(&rb->recv_wc.rmpp_list);
	list_add(&rb->recv_wc.recv_buf.list, &rb->recv_wc.rmpp_list);
	rb->recv_wc.mad_len = IB_MGMT_MAD_SIZE;
	return rb;
}

/**
 * ib_free_recv_mad() - release a received MAD
 * @mad_recv_wc: the MAD, with all its RMPP segments
 *
 * Context: any.
 */
void ib_free_recv_mad(struct ib_mad_recv_wc *mad_recv_wc)
{
	struct ib_mad_recv_buf *buf, *tmp;
	struct ib_mad_rbuf *rb;

	list_for_each_entry_safe(buf, tmp, &mad_recv_wc->rmpp_list, list) {
		if (buf == &mad_recv_wc->recv_buf)
			continue;
		rb = container_of(buf, struct ib_mad_rbuf, recv_wc.recv_buf);
		kfree(rb);
	}
	kfree(container_of(mad_recv_wc, struct ib_mad_rbuf, recv_wc));
}
EXPORT_SYMBOL(ib_free_recv_mad);

/**
 * ib_coalesce_recv_mad() - copy a received MAD into one buffer
 * @mad_recv_wc: the MAD
 * @buf: room for mad_recv_wc->mad_len bytes
 *
 * A reassembled RMPP message comes out as its first header followed by
 * the data of every segment, without the repeated headers.
 */
void ib_coalesce_recv_mad(struct ib_mad_recv_wc *mad_recv_wc, void *buf)
{
	struct ib_mad_recv_buf *rbuf;
	int hdr_len, chunk, left = mad_recv_wc->mad_len;
	u8 *out = buf;

	if (list_is_singular(&mad_recv_wc->rmpp_list)) {
		memcpy(out, mad_recv_wc->recv_buf.mad,
		       min(left, (int)IB_MGMT_MAD_SIZE));
		return;
	}
	hdr_len = ib_get_mad_data_offset(mad_recv_wc->recv_buf.mad->mad_hdr.mgmt_class);
	memcpy(out, mad_recv_wc->recv_buf.mad, hdr_len);
	out += hdr_len;
	left -= hdr_len;
	list_for_each_entry(rbuf, &mad_recv_wc->rmpp_list, list) {
		if (left <= 0)
			break;
		chunk = min(left, IB_MGMT_MAD_SIZE - hdr_len);
		memcpy(out, (u8 *)rbuf->mad + hdr_len, chunk);
		out += chunk;
		left -= chunk;
	}
}
EXPORT_SYMBOL(ib_coalesce_recv_mad);

static int mad_post_recv(struct ib_mad_qp *mqp, struct ib_mad_rbuf *rb)
{
	struct ib_mad_port *port = mqp->port;
	struct device *dma = port->device->dma_device;
	struct ib_recv_wr wr, *bad;
	struct ib_sge sge;
	unsigned long irq;
	int ret;

	rb->dma = dma_map_single(dma, &rb->data, sizeof(rb->data),
				 DMA_FROM_DEVICE);
	if (dma_mapping_error(dma, rb->dma))
		return -ENOMEM;
	sge.addr = rb->dma;
	sge.length = sizeof(rb->data);
	sge.lkey = port->mr->lkey;
	wr.next = NULL;
	wr.wr_id = (uintptr_t)rb | MAD_WRID_RECV;
	wr.sg_list = &sge;
	wr.num_sge = 1;

	/* The caller reserved the slot (recv_count) already. */
	spin_lock_irqsave(&mqp->lock, irq);
	list_add_tail(&rb->qp_list, &mqp->recv_posted);
	ret = ib_post_recv(mqp->qp, &wr, &bad);
	if (ret)
		list_del(&rb->qp_list);
	spin_unlock_irqrestore(&mqp->lock, irq);
	if (ret)
		dma_unmap_single(dma, rb->dma, sizeof(rb->data),
				 DMA_FROM_DEVICE);
	return ret;
}

/*
 * Top the receive queue up to IB_MAD_RECV_DEPTH buffers.  Each buffer's
 * slot is reserved under the QP's lock before the buffer is made, and
 * given back if it cannot be posted: the port's open and a refill after
 * a receive completion may fill the same ring at once.
 */
int ib_mad_fill_recv(struct ib_mad_qp *mqp)
{
	struct ib_mad_rbuf *rb;
	unsigned long irq;
	int ret;

	for (;;) {
		spin_lock_irqsave(&mqp->lock, irq);
		if (mqp->recv_count >= IB_MAD_RECV_DEPTH) {
			spin_unlock_irqrestore(&mqp->lock, irq);
			return 0;
		}
		mqp->recv_count++;
		spin_unlock_irqrestore(&mqp->lock, irq);

		rb = ib_mad_rbuf_alloc(mqp, GFP_KERNEL);
		ret = rb ? mad_post_recv(mqp, rb) : -ENOMEM;
		if (ret) {
			kfree(rb);
			spin_lock_irqsave(&mqp->lock, irq);
			mqp->recv_count--;
			spin_unlock_irqrestore(&mqp->lock, irq);
			return ret;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Receiving                                                            */

static bool mad_is_rmpp_ctl(const struct ib_mad *mad)
{
	const struct ib_rmpp_mad *rm = (const struct ib_rmpp_mad *)mad;

	return ib_is_mad_class_rmpp(mad->mad_hdr.mgmt_class) &&
	       ib_rmpp_active(mad) &&
	       rm->rmpp_hdr.rmpp_type != IB_MGMT_RMPP_TYPE_DATA;
}

/*
 * The agent a received MAD is for, with a reference: an RMPP ACK, STOP or
 * ABORT goes to the agent with an RMPP send of that TID; a response to
 * the agent whose hi_tid it carries; a request to the registration of its
 * class, version and method.
 */
static struct ib_mad_agent_priv *mad_find_agent(struct ib_mad_port *port,
						struct ib_mad_qp *mqp,
						const struct ib_mad *mad)
{
	const struct ib_mad_hdr *h = &mad->mad_hdr;
	struct ib_mad_agent_priv *a, *agent = NULL;
	struct ib_mad_reg *reg;
	unsigned long irq;
	bool has;

	spin_lock_irqsave(&port->reg_lock, irq);
	if (mad_is_rmpp_ctl(mad)) {
		list_for_each_entry(a, &port->agents, port_list) {
			if (a->mqp != mqp || !a->agent.rmpp_version)
				continue;
			spin_lock(&a->lock);
			has = ib_mad_find_send(a, h->tid, h->mgmt_class, true);
			spin_unlock(&a->lock);
			if (has) {
				agent = a;
				break;
			}
		}
	}
	if (!agent && ib_response_mad(mad)) {
		list_for_each_entry(a, &port->agents, port_list)
			if (a->mqp == mqp &&
			    a->agent.hi_tid == ib_mad_tid_agent(h->tid)) {
				if (a->agent.recv_handler)
					agent = a;
				break;
			}
	} else if (!agent) {
		reg = ib_mad_reg_lookup(&mqp->regs, mad);
		if (reg)
			agent = reg->agent;
	}
	if (agent)
		ib_mad_agent_get(agent);
	spin_unlock_irqrestore(&port->reg_lock, irq);
	return agent;
}

/* The send a response answers: TID, class, sender.  Agent lock held. */
static struct ib_mad_send_priv *mad_awaiting(struct ib_mad_agent_priv *agent,
					     const struct ib_mad_rbuf *rb)
{
	const struct ib_mad_hdr *h = &rb->data.mad.mad_hdr;
	struct ib_mad_send_priv *sp;

	list_for_each_entry(sp, &agent->sends, list)
		if (sp->tid == h->tid && sp->mgmt_class == h->mgmt_class &&
		    sp->want_resp && sp->status == IB_WC_SUCCESS &&
		    mad_from_peer(sp, rb))
			return sp;
	return NULL;
}

/* An RMPP packet of an agent that runs RMPP itself (user-space RMPP). */
static bool mad_user_rmpp(const struct ib_mad_agent_priv *agent,
			  const struct ib_mad *mad)
{
	return !agent->agent.rmpp_version &&
	       ib_is_mad_class_rmpp(mad->mad_hdr.mgmt_class) &&
	       ib_rmpp_active(mad);
}

/* The first DATA segment of an RMPP message. */
static bool mad_rmpp_first(const struct ib_mad *mad)
{
	const struct ib_rmpp_mad *rm = (const struct ib_rmpp_mad *)mad;

	return rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_DATA &&
	       (ib_get_rmpp_flags(&rm->rmpp_hdr) & IB_MGMT_RMPP_FLAG_FIRST);
}

/*
 * A response: to the send waiting for it, then to the receive handler.
 * For an agent that runs RMPP itself, only the first DATA segment can
 * complete a send; the other segments, its control MADs and any RMPP
 * response no send waits for go to the receive handler without a send, to
 * be put together there.  Other responses nobody waits for are dropped.
 */
static void mad_recv_response(struct ib_mad_agent_priv *agent,
			      struct ib_mad_rbuf *rb)
{
	bool user_rmpp = mad_user_rmpp(agent, &rb->data.mad);
	struct ib_mad_send_priv *found = NULL;
	unsigned long irq;

	spin_lock_irqsave(&agent->lock, irq);
	if (!user_rmpp || mad_rmpp_first(&rb->data.mad))
		found = mad_awaiting(agent, rb);
	if (found) {
		found->want_resp = false;
		found->timer_on = false;
		/*
		 * If this finishes it, the report is queued behind us on the
		 * ordered workqueue: the buffer outlives the receive handler.
		 */
		ib_mad_send_progress(found);
	}
	spin_unlock_irqrestore(&agent->lock, irq);

	if (!found) {
		if (user_rmpp)
			agent->agent.recv_handler(&agent->agent, NULL,
						  &rb->recv_wc);
		else
			ib_free_recv_mad(&rb->recv_wc);
		return;
	}
	agent->agent.recv_handler(&agent->agent, &found->send_buf,
				  &rb->recv_wc);
}

/* Give a MAD to its agent.  Return: false when no agent takes it. */
static bool mad_deliver(struct ib_mad_port *port, struct ib_mad_qp *mqp,
			struct ib_mad_rbuf *rb)
{
	struct ib_mad_agent_priv *agent;
	struct ib_mad *mad = &rb->data.mad;

	struct ib_mad_send_priv *awaited;
	unsigned long irq;

	agent = mad_find_agent(port, mqp, mad);
	if (!agent)
		return false;
	if (agent->agent.rmpp_version &&
	    ib_is_mad_class_rmpp(mad->mad_hdr.mgmt_class) &&
	    ib_rmpp_active(mad)) {
		/* No reassembly of a response nobody asked for. */
		if (ib_response_mad(mad) && mad_rmpp_first(mad)) {
			spin_lock_irqsave(&agent->lock, irq);
			awaited = mad_awaiting(agent, rb);
			spin_unlock_irqrestore(&agent->lock, irq);
			if (!awaited) {
				ib_free_recv_mad(&rb->recv_wc);
				goto out;
			}
		}
		rb = ib_rmpp_recv(agent, rb);
		if (!rb)
			goto out;
		mad = &rb->data.mad;
	}
	if (ib_response_mad(mad))
		mad_recv_response(agent, rb);
	else
		agent->agent.recv_handler(&agent->agent, NULL, &rb->recv_wc);
out:
	ib_mad_agent_put(agent);
	return true;
}

/*
 * Incoming directed-route SMP (IBA 14.2.2): true when it is for this
 * port's SMA or SM.  A CA forwards nothing.
 */
static bool mad_smi_recv(struct ib_mad_port *port, struct ib_smp *smp)
{
	bool sw = port->device->node_type == IB_NODE_SWITCH;

	if (smi_handle_dr_smp_recv(smp, sw, port->port_num,
				   port->device->phys_port_cnt) == IB_SMI_DISCARD)
		return false;
	switch (smi_check_forward_dr_smp(smp)) {
	case IB_SMI_LOCAL:
		return true;
	case IB_SMI_SEND:
		if (smi_handle_dr_smp_send(smp, sw, port->port_num) ==
		    IB_SMI_DISCARD)
			return false;
		return mad_smp_is_local(smp);
	default:
		return false;
	}
}

/* A Get or Set nobody serves: answer "unsupported method/attribute". */
static void mad_reply_unsupported(struct ib_mad_port *port,
				  struct ib_mad_qp *mqp,
				  const struct ib_mad_rbuf *rb)
{
	const struct ib_mad *mad = &rb->data.mad;
	struct ib_mad *reply;

	if (mad->mad_hdr.method != IB_MGMT_METHOD_GET &&
	    mad->mad_hdr.method != IB_MGMT_METHOD_SET)
		return;
	reply = kmemdup(mad, sizeof(*mad), GFP_KERNEL);
	if (!reply)
		return;
	reply->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	reply->mad_hdr.status =
		cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	if (reply->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		reply->mad_hdr.status |= IB_SMP_DIRECTION;
	ib_agent_reply(port, mqp->index, &rb->wc, &rb->data.grh, reply);
	kfree(reply);
}

/* Ask the driver's SMA/PMA.  Return: true when it dealt with the MAD. */
static bool mad_process_local(struct ib_mad_port *port, struct ib_mad_qp *mqp,
			      struct ib_mad_rbuf *rb)
{
	struct ib_device *dev = port->device;
	struct ib_mad *reply;
	bool done = false;
	int ret;

	if (!dev->process_mad)
		return false;
	reply = kzalloc(sizeof(*reply), GFP_KERNEL);
	if (!reply)
		return false;
	ret = dev->process_mad(dev, 0, port->port_num, &rb->wc,
			       (rb->wc.wc_flags & IB_WC_GRH) ? &rb->data.grh :
							       NULL,
			       &rb->data.mad, reply);
	if (ret & IB_MAD_RESULT_SUCCESS) {
		if (ret & IB_MAD_RESULT_REPLY)
			ib_agent_reply(port, mqp->index, &rb->wc,
				       &rb->data.grh, reply);
		done = ret & (IB_MAD_RESULT_REPLY | IB_MAD_RESULT_CONSUMED);
	}
	kfree(reply);
	return done;
}

static void mad_handle_recv(struct ib_mad_port *port, struct ib_mad_qp *mqp,
			    struct ib_mad_rbuf *rb)
{
	struct ib_mad *mad = &rb->data.mad;

	if (rb->wc.byte_len < sizeof(struct ib_grh) + IB_MGMT_MAD_HDR)
		goto drop;
	if (ib_mad_check_recv(&mad->mad_hdr, mqp->index == IB_MAD_QP0))
		goto drop;
	if (mad->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE &&
	    !mad_smi_recv(port, (struct ib_smp *)mad))
		goto drop;
	if (mad_process_local(port, mqp, rb))
		goto drop;
	if (mad_deliver(port, mqp, rb))
		return;
	mad_reply_unsupported(port, mqp, rb);
drop:
	ib_free_recv_mad(&rb->recv_wc);
}

/*
 * The receive ring of @mqp will not be refilled any more: its receives
 * were flushed (the QP is in the error state).  Said once.
 */
static void mad_rq_stop(struct ib_mad_port *port, struct ib_mad_qp *mqp)
{
	if (mqp->rq_stopped)
		return;
	mqp->rq_stopped = true;
	mqp->rq_short = false;
	port->rq_reports++;
	dev_warn(&port->device->dev,
		 "ib_mad: port %u QP%d: receives flushed; receive queue no longer refilled\n",
		 port->port_num, mqp->index);
}

/*
 * Top up the receive ring of @mqp (on the port's workqueue).  Nothing is
 * tried, and nothing said, once the ring is stopped or the device had a
 * fatal error (its event said so already).  A failure while the device
 * lives is said once, and left to the retry work.
 *
 * Return: true when a retry is needed.
 */
static bool mad_refill(struct ib_mad_port *port, struct ib_mad_qp *mqp)
{
	int ret, i;

	if (mqp->rq_stopped || READ_ONCE(port->fatal))
		return false;
	ret = ib_mad_fill_recv(mqp);
	if (!ret) {
		mqp->rq_short = false;
		return false;
	}
	if (READ_ONCE(port->fatal))
		return false;
	if (!mqp->rq_short) {
		mqp->rq_short = true;
		port->rq_reports++;
		dev_warn(&port->device->dev,
			 "ib_mad: port %u QP%d: receive queue not refilled (%d); retrying\n",
			 port->port_num, mqp->index, ret);
		/* a new episode starts with the shortest delay */
		for (i = 0; i < IB_MAD_NUM_QPS; i++)
			if (&port->qp[i] != mqp && port->qp[i].rq_short)
				break;
		if (i == IB_MAD_NUM_QPS)
			port->refill_ms = MAD_REFILL_MIN_MS;
	}
	return true;
}

/* Tries again to refill the short receive rings, backing off. */
static void mad_refill_work(struct work_struct *work)
{
	struct ib_mad_port *port =
		container_of(to_delayed_work(work), struct ib_mad_port,
			     refill_work);
	bool again = false;
	int i;

	if (READ_ONCE(port->cq_dead))
		return;
	for (i = 0; i < IB_MAD_NUM_QPS; i++)
		if (port->qp[i].rq_short && mad_refill(port, &port->qp[i]))
			again = true;
	if (!again)
		return;
	port->refill_ms = min_t(unsigned int, port->refill_ms * 2,
				MAD_REFILL_MAX_MS);
	queue_delayed_work(port->wq, &port->refill_work,
			   msecs_to_jiffies(port->refill_ms));
}

static void mad_recv_done(struct ib_mad_port *port, struct ib_wc *wc)
{
	struct ib_mad_rbuf *rb =
		(struct ib_mad_rbuf *)(uintptr_t)(wc->wr_id & ~MAD_WRID_RECV);
	struct ib_mad_qp *mqp = rb->mqp;
	unsigned long irq;

	spin_lock_irqsave(&mqp->lock, irq);
	list_del_init(&rb->qp_list);
	mqp->recv_count--;
	spin_unlock_irqrestore(&mqp->lock, irq);
	dma_unmap_single(port->device->dma_device, rb->dma, sizeof(rb->data),
			 DMA_FROM_DEVICE);
	rb->wc = *wc;
	if (wc->status == IB_WC_SUCCESS)
		mad_handle_recv(port, mqp, rb);
	else
		kfree(rb);
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		if (!READ_ONCE(port->fatal))
			mad_rq_stop(port, mqp);
		return;
	}
	/* while a retry is pending, the retry work refills, backing off */
	if (mqp->rq_short)
		return;
	if (mad_refill(port, mqp))
		queue_delayed_work(port->wq, &port->refill_work,
				   msecs_to_jiffies(port->refill_ms));
}

/*
 * Take the send a completion names off its QP's posted list.  Return:
 * the send, or NULL when it is not there (reaped after a fatal error: the
 * completion is stale and @wr_id may name freed memory, so it is only
 * compared, never followed).
 */
static struct ib_mad_send_priv *mad_take_posted(struct ib_mad_port *port,
						u64 wr_id,
						struct ib_mad_qp **mqpp)
{
	struct ib_mad_send_priv *sp;
	struct ib_mad_qp *mqp;
	unsigned long irq;
	int i;

	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		mqp = &port->qp[i];
		spin_lock_irqsave(&mqp->lock, irq);
		list_for_each_entry(sp, &mqp->posted, qlist)
			if ((uintptr_t)sp == wr_id) {
				list_del_init(&sp->qlist);
				mqp->send_count--;
				spin_unlock_irqrestore(&mqp->lock, irq);
				*mqpp = mqp;
				return sp;
			}
		spin_unlock_irqrestore(&mqp->lock, irq);
	}
	return NULL;
}

static void mad_send_done(struct ib_mad_port *port, struct ib_wc *wc)
{
	struct ib_mad_send_priv *next, *tmp, *sp;
	struct ib_mad_agent_priv *agent;
	struct ib_send_wr *bad;
	struct ib_mad_qp *mqp;
	LIST_HEAD(failed);
	unsigned long irq;

	sp = mad_take_posted(port, wc->wr_id, &mqp);
	if (!sp)
		return;
	agent = sp->agent;
	mad_unmap_send(sp);

	/* A slot is free: post what waits for one. */
	spin_lock_irqsave(&mqp->lock, irq);
	while (!mqp->dead && mqp->send_count < IB_MAD_SEND_DEPTH &&
	       !list_empty(&mqp->overflow)) {
		next = list_first_entry(&mqp->overflow,
					struct ib_mad_send_priv, qlist);
		list_del_init(&next->qlist);
		if (ib_post_send(mqp->qp, &next->wr, &bad)) {
			list_add_tail(&next->qlist, &failed);
		} else {
			mqp->send_count++;
			list_add_tail(&next->qlist, &mqp->posted);
		}
	}
	spin_unlock_irqrestore(&mqp->lock, irq);

	list_for_each_entry_safe(next, tmp, &failed, qlist) {
		list_del_init(&next->qlist);
		mad_unmap_send(next);
		spin_lock_irqsave(&next->agent->lock, irq);
		next->posted = false;
		if (next->status == IB_WC_SUCCESS)
			next->status = IB_WC_GENERAL_ERR;
		ib_mad_send_progress(next);
		spin_unlock_irqrestore(&next->agent->lock, irq);
	}

	spin_lock_irqsave(&agent->lock, irq);
	sp->posted = false;
	if (wc->status != IB_WC_SUCCESS && sp->status == IB_WC_SUCCESS) {
		sp->status = wc->status;
		sp->vendor_err = wc->vendor_err;
	}
	ib_mad_send_progress(sp);
	spin_unlock_irqrestore(&agent->lock, irq);
}

static void mad_cq_work(struct work_struct *work)
{
	struct ib_mad_port *port =
		container_of(work, struct ib_mad_port, cq_work);
	int budget = MAD_CQ_BUDGET;
	struct ib_wc wc;

	if (READ_ONCE(port->cq_dead))
		return;
	for (;;) {
		while (ib_poll_cq(port->cq, 1, &wc) > 0) {
			if (wc.wr_id & MAD_WRID_RECV)
				mad_recv_done(port, &wc);
			else
				mad_send_done(port, &wc);
			if (!--budget) {
				/* Let the port's other work run too. */
				queue_work(port->wq, &port->cq_work);
				return;
			}
		}
		ib_req_notify_cq(port->cq, IB_CQ_NEXT_COMP);
		/* A completion that raced with arming gets no event. */
		if (ib_poll_cq(port->cq, 1, &wc) <= 0)
			return;
		if (wc.wr_id & MAD_WRID_RECV)
			mad_recv_done(port, &wc);
		else
			mad_send_done(port, &wc);
	}
}

/* The CQ's completion handler, in the driver's interrupt context. */
static void mad_cq_event(struct ib_cq *cq, void *context)
{
	struct ib_mad_port *port = context;

	queue_work(port->wq, &port->cq_work);
}

/* ------------------------------------------------------------------ */
/* SMPs for this port's own SMA                                         */

static void mad_local_one(struct ib_mad_port *port,
			  struct ib_mad_send_priv *sp)
{
	struct ib_mad_agent_priv *agent = sp->agent;
	struct ib_mad_qp *mqp = &port->qp[IB_MAD_QP0];
	struct ib_device *dev = port->device;
	enum ib_wc_status status = IB_WC_SUCCESS;
	struct ib_mad_rbuf *in, *out;
	unsigned long irq;
	int ret;

	in = ib_mad_rbuf_alloc(mqp, GFP_KERNEL);
	out = ib_mad_rbuf_alloc(mqp, GFP_KERNEL);
	if (!in || !out) {
		status = IB_WC_GENERAL_ERR;
		goto done;
	}
	memcpy(&in->data.mad, sp->wire, sizeof(in->data.mad));
	in->wc.status = IB_WC_SUCCESS;
	in->wc.opcode = IB_WC_RECV;
	in->wc.byte_len = sizeof(in->data);
	in->wc.qp_num = mqp->qp->qp_num;
	in->wc.src_qp = 0;
	in->wc.pkey_index = sp->wr.wr.ud.pkey_index;
	in->wc.slid = be16_to_cpu(((struct ib_smp *)sp->wire)->dr_slid);
	in->wc.port_num = port->port_num;
	out->wc = in->wc;

	ret = dev->process_mad(dev, IB_MAD_IGNORE_MKEY, port->port_num,
			       &in->wc, NULL, &in->data.mad, &out->data.mad);
	if (!(ret & IB_MAD_RESULT_SUCCESS)) {
		status = IB_WC_GENERAL_ERR;
	} else if (ret & IB_MAD_RESULT_REPLY) {
		/* The reply comes back as if received, to our own agent. */
		if (mad_deliver(port, mqp, out))
			out = NULL;
	} else if (!(ret & IB_MAD_RESULT_CONSUMED)) {
		/* Not the SMA's: a local agent's, or else the wire's. */
		if (mad_deliver(port, mqp, in)) {
			in = NULL;
		} else {
			spin_lock_irqsave(&agent->lock, irq);
			sp->posted = false;
			sp->local = false;
			if (sp->status == IB_WC_SUCCESS &&
			    ib_mad_post_seg(sp, 0))
				sp->status = IB_WC_GENERAL_ERR;
			ib_mad_send_progress(sp);
			spin_unlock_irqrestore(&agent->lock, irq);
			goto free;
		}
	}
done:
	spin_lock_irqsave(&agent->lock, irq);
	sp->posted = false;
	if (status != IB_WC_SUCCESS && sp->status == IB_WC_SUCCESS)
		sp->status = status;
	ib_mad_send_progress(sp);
	spin_unlock_irqrestore(&agent->lock, irq);
free:
	if (in)
		ib_free_recv_mad(&in->recv_wc);
	if (out)
		ib_free_recv_mad(&out->recv_wc);
}

static void mad_local_work(struct work_struct *work)
{
	struct ib_mad_port *port =
		container_of(work, struct ib_mad_port, local_work);
	struct ib_mad_send_priv *sp;
	unsigned long irq;

	for (;;) {
		spin_lock_irqsave(&port->local_lock, irq);
		sp = list_first_entry_or_null(&port->local_list,
					      struct ib_mad_send_priv, qlist);
		if (sp)
			list_del_init(&sp->qlist);
		spin_unlock_irqrestore(&port->local_lock, irq);
		if (!sp)
			break;
		mad_local_one(port, sp);
	}
}

/* ------------------------------------------------------------------ */
/* A device that died                                                   */

/*
 * After IB_EVENT_DEVICE_FATAL the HCA completes nothing any more: every
 * send on the QPs (or waiting for room) ends now as flushed, and nothing
 * new is posted.  A completion the driver still makes for one of them
 * finds it gone from the posted list and is ignored.
 */
static void mad_fatal_work(struct work_struct *work)
{
	struct ib_mad_port *port =
		container_of(work, struct ib_mad_port, fatal_work);
	struct ib_mad_send_priv *sp, *tmp;
	struct ib_mad_qp *mqp;
	unsigned long irq;
	LIST_HEAD(reaped);
	int i;

	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		mqp = &port->qp[i];
		spin_lock_irqsave(&mqp->lock, irq);
		mqp->dead = true;
		list_splice_tail_init(&mqp->posted, &reaped);
		list_splice_tail_init(&mqp->overflow, &reaped);
		mqp->send_count = 0;
		spin_unlock_irqrestore(&mqp->lock, irq);
	}
	list_for_each_entry_safe(sp, tmp, &reaped, qlist) {
		list_del_init(&sp->qlist);
		mad_unmap_send(sp);
		spin_lock_irqsave(&sp->agent->lock, irq);
		sp->posted = false;
		if (sp->status == IB_WC_SUCCESS)
			sp->status = IB_WC_WR_FLUSH_ERR;
		ib_mad_send_progress(sp);
		spin_unlock_irqrestore(&sp->agent->lock, irq);
	}
}

/* Device events, in any context. */
static void mad_event(struct ib_event_handler *handler, struct ib_event *event)
{
	struct ib_mad_port *port =
		container_of(handler, struct ib_mad_port, event_handler);

	if (event->event != IB_EVENT_DEVICE_FATAL)
		return;
	/* before fatal_work: the receive rings stop being refilled now */
	WRITE_ONCE(port->fatal, true);
	dev_err(&port->device->dev,
		"ib_mad: port %u: fatal device error, flushing sends; receive queues no longer refilled\n",
		port->port_num);
	queue_work(port->wq, &port->fatal_work);
}

/* ------------------------------------------------------------------ */
/* Port set-up                                                          */

static void mad_qp_event(struct ib_event *event, void *context)
{
	struct ib_mad_port *port = context;

	dev_err(&port->device->dev, "ib_mad: port %u: QP event %s\n",
		port->port_num, ib_event_msg(event->event));
}

static int mad_qp_open(struct ib_mad_port *port, int index)
{
	struct ib_mad_qp *mqp = &port->qp[index];
	struct ib_qp_init_attr init = {
		.event_handler = mad_qp_event,
		.qp_context = port,
		.send_cq = port->cq,
		.recv_cq = port->cq,
		.cap = {
			.max_send_wr = IB_MAD_SEND_DEPTH,
			.max_recv_wr = IB_MAD_RECV_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = index == IB_MAD_QP0 ? IB_QPT_SMI : IB_QPT_GSI,
		.port_num = port->port_num,
	};
	struct ib_qp_attr attr = {};
	int ret;

	mqp->port = port;
	mqp->index = index;
	spin_lock_init(&mqp->lock);
	INIT_LIST_HEAD(&mqp->posted);
	INIT_LIST_HEAD(&mqp->overflow);
	INIT_LIST_HEAD(&mqp->recv_posted);
	INIT_LIST_HEAD(&mqp->regs);

	mqp->qp = ib_create_qp(port->pd, &init);
	if (IS_ERR(mqp->qp)) {
		ret = PTR_ERR(mqp->qp);
		mqp->qp = NULL;
		return ret;
	}

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.qkey = index == IB_MAD_QP0 ? 0 : IB_QP1_QKEY;
	ret = ib_modify_qp(mqp->qp, &attr,
			   IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_QKEY);
	if (ret)
		goto destroy;
	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(mqp->qp, &attr, IB_QP_STATE);
	if (ret)
		goto destroy;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	ret = ib_modify_qp(mqp->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
	if (ret)
		goto destroy;
	return 0;

destroy:
	ib_destroy_qp(mqp->qp);
	mqp->qp = NULL;
	return ret;
}

/* Free the receive buffers a destroyed QP still held. */
static void mad_qp_drain(struct ib_mad_qp *mqp)
{
	struct ib_mad_rbuf *rb, *tmp;

	list_for_each_entry_safe(rb, tmp, &mqp->recv_posted, qp_list) {
		list_del(&rb->qp_list);
		dma_unmap_single(mqp->port->device->dma_device, rb->dma,
				 sizeof(rb->data), DMA_FROM_DEVICE);
		kfree(rb);
	}
	mqp->recv_count = 0;
}

/*
 * Objects (QP, CQ, MR, PD) a port's teardown could not free since the
 * module was loaded; read-only parameter teardown_leaks.
 */
static atomic_t mad_teardown_leaks = ATOMIC_INIT(0);

static int mad_teardown_leaks_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&mad_teardown_leaks));
}

static const struct kernel_param_ops mad_teardown_leaks_ops = {
	.get = mad_teardown_leaks_get,
};

module_param_cb(teardown_leaks, &mad_teardown_leaks_ops, NULL, 0444);
MODULE_PARM_DESC(teardown_leaks,
		 "objects (QP, CQ, MR, PD) a port's teardown could not free");

/**
 * ib_mad_teardown_leaks() - objects port teardowns could not free
 *
 * Return: how many since the module was loaded (each was warned about).
 */
int ib_mad_teardown_leaks(void)
{
	return atomic_read(&mad_teardown_leaks);
}

/*
 * A teardown verb that failed leaves its object (and whatever it holds)
 * behind for good: say so loudly, each time, and count it.
 */
static void mad_teardown_check(struct ib_mad_port *port, const char *what,
			       int ret)
{
	if (!ret)
		return;
	atomic_inc(&mad_teardown_leaks);
	WARN(1, "ib_mad: %s port %u: cannot free the %s (%d); leaked\n",
	     port->device->name, port->port_num, what, ret);
}

static void mad_port_free(struct ib_mad_port *port)
{
	int i;

	if (port->event_handler.device)
		ib_unregister_event_handler(&port->event_handler);
	/* No completion work after this: nothing posts on the QPs any more. */
	WRITE_ONCE(port->cq_dead, true);
	flush_workqueue(port->wq);
	/*
	 * Only a completion work that ran before the flush could have queued
	 * the refill work; it does not queue itself again now.
	 */
	cancel_delayed_work_sync(&port->refill_work);
	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		if (!port->qp[i].qp)
			continue;
		mad_teardown_check(port, i ? "QP1" : "QP0",
				   ib_destroy_qp(port->qp[i].qp));
		mad_qp_drain(&port->qp[i]);
	}
	if (port->cq)
		mad_teardown_check(port, "CQ", ib_destroy_cq(port->cq));
	if (port->mr)
		mad_teardown_check(port, "MR", ib_dereg_mr(port->mr));
	if (port->pd)
		mad_teardown_check(port, "PD", ib_dealloc_pd(port->pd));
	destroy_workqueue(port->wq);
	kfree(port);
}

static int mad_port_open(struct ib_device *device, u8 port_num)
{
	struct ib_mad_port *port;
	unsigned long irq;
	int i, ret;

	port = kzalloc(sizeof(*port), GFP_KERNEL);
	if (!port)
		return -ENOMEM;
	port->device = device;
	port->port_num = port_num;
	spin_lock_init(&port->reg_lock);
	INIT_LIST_HEAD(&port->agents);
	spin_lock_init(&port->local_lock);
	INIT_LIST_HEAD(&port->local_list);
	INIT_WORK(&port->cq_work, mad_cq_work);
	INIT_WORK(&port->local_work, mad_local_work);
	INIT_WORK(&port->fatal_work, mad_fatal_work);
	INIT_DELAYED_WORK(&port->refill_work, mad_refill_work);
	port->refill_ms = MAD_REFILL_MIN_MS;
	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		spin_lock_init(&port->qp[i].lock);
		INIT_LIST_HEAD(&port->qp[i].regs);
		INIT_LIST_HEAD(&port->qp[i].posted);
		INIT_LIST_HEAD(&port->qp[i].overflow);
		INIT_LIST_HEAD(&port->qp[i].recv_posted);
	}

	port->wq = alloc_ordered_workqueue("ib_mad-%s-%u", WQ_MEM_RECLAIM,
					   device->name, port_num);
	if (!port->wq) {
		kfree(port);
		return -ENOMEM;
	}

	port->pd = ib_alloc_pd(device);
	if (IS_ERR(port->pd)) {
		ret = PTR_ERR(port->pd);
		port->pd = NULL;
		goto fail;
	}
	port->mr = ib_get_dma_mr(port->pd, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(port->mr)) {
		ret = PTR_ERR(port->mr);
		port->mr = NULL;
		goto fail;
	}
	port->cq = ib_create_cq(device, mad_cq_event, NULL, port,
				IB_MAD_NUM_QPS *
				(IB_MAD_SEND_DEPTH + IB_MAD_RECV_DEPTH));
	if (IS_ERR(port->cq)) {
		ret = PTR_ERR(port->cq);
		port->cq = NULL;
		goto fail;
	}
	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		ret = mad_qp_open(port, i);
		if (ret)
			goto fail;
	}
	ret = ib_req_notify_cq(port->cq, IB_CQ_NEXT_COMP);
	if (ret)
		goto fail;
	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		ret = ib_mad_fill_recv(&port->qp[i]);
		if (ret)
			goto fail;
	}
	INIT_IB_EVENT_HANDLER(&port->event_handler, device, mad_event);
	ret = ib_register_event_handler(&port->event_handler);
	if (ret) {
		port->event_handler.device = NULL;
		goto fail;
	}

	spin_lock_irqsave(&ib_mad_ports_lock, irq);
	list_add_tail(&port->list, &ib_mad_ports);
	spin_unlock_irqrestore(&ib_mad_ports_lock, irq);

	ret = ib_agent_port_open(port);
	if (ret)
		goto unlist;
	return 0;

unlist:
	spin_lock_irqsave(&ib_mad_ports_lock, irq);
	list_del(&port->list);
	spin_unlock_irqrestore(&ib_mad_ports_lock, irq);
fail:
	dev_err(&device->dev, "ib_mad: port %u: cannot open (%d)\n",
		port_num, ret);
	mad_port_free(port);
	return ret;
}

static void mad_port_close(struct ib_mad_port *port)
{
	unsigned long irq;

	ib_agent_port_close(port);
	spin_lock_irqsave(&ib_mad_ports_lock, irq);
	list_del(&port->list);
	spin_unlock_irqrestore(&ib_mad_ports_lock, irq);
	if (!list_empty(&port->agents))
		dev_err(&port->device->dev,
			"ib_mad: port %u closed with agents registered\n",
			port->port_num);
	mad_port_free(port);
}

static void ib_mad_remove_device(struct ib_device *device);

static void ib_mad_add_device(struct ib_device *device)
{
	u8 p;

	for (p = rdma_start_port(device); p <= rdma_end_port(device); p++)
		if (mad_port_open(device, p))
			break;
}

static void ib_mad_remove_device(struct ib_device *device)
{
	struct ib_mad_port *port;
	int p;

	for (p = rdma_end_port(device); p >= rdma_start_port(device); p--) {
		port = ib_mad_port_get(device, p);
		if (port)
			mad_port_close(port);
	}
}

static struct ib_client ib_mad_client = {
	.name = "mad",
	.add = ib_mad_add_device,
	.remove = ib_mad_remove_device,
};

static int __init ib_mad_init(void)
{
	return ib_register_client(&ib_mad_client);
}

static void __exit ib_mad_exit(void)
{
	ib_unregister_client(&ib_mad_client);
}

module_init(ib_mad_init);
module_exit(ib_mad_exit);
