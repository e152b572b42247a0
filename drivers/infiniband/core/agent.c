// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The SMA/PMA agent: what the driver's process_mad answers for this port
 * (SubnGet/Set from a subnet manager, PerfMgmt from perfquery, ...) is
 * sent back from here, on the QP the request came in on, to its sender.
 * One send-only MAD agent per special QP of each port does the sending;
 * each reply has its own address handle, made from the request's
 * completion, and both are freed when the send is reported.
 */

#include <linux/err.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <rdma/ib_mad.h>

#include "agent.h"
#include "mad_priv.h"

static void agent_send_handler(struct ib_mad_agent *mad_agent,
			       struct ib_mad_send_wc *mad_send_wc)
{
	struct ib_mad_send_buf *sb = mad_send_wc->send_buf;
	struct ib_ah *ah = sb->context[0];

	ib_free_send_mad(sb);
	ib_destroy_ah(ah);
}

/**
 * ib_agent_reply() - send a reply of the local SMA/PMA (or MAD layer)
 * @port: the port the request came in on
 * @qp_index: IB_MAD_QP0 or IB_MAD_QP1, the QP it came in on
 * @wc: the request's completion: the reply goes to its source LID, QP
 *	and P_Key index
 * @grh: the request's GRH, used when @wc says it has one
 * @reply: the 256-byte reply
 *
 * A directed-route reply passes the outgoing SMI rules in
 * ib_post_send_mad().  Failures are dropped: the requester retries.
 *
 * Context: process context.
 */
void ib_agent_reply(struct ib_mad_port *port, int qp_index,
		    const struct ib_wc *wc, const struct ib_grh *grh,
		    const struct ib_mad *reply)
{
	struct ib_mad_agent_priv *priv = NULL;
	struct ib_wc wc_copy = *wc;
	struct ib_grh grh_copy = *grh;
	struct ib_mad_send_buf *sb;
	struct ib_mad_agent *agent;
	unsigned long irq;
	struct ib_ah *ah;

	/* The reference keeps a closing port's agent until we are done. */
	spin_lock_irqsave(&port->reg_lock, irq);
	agent = port->reply_agent[qp_index];
	if (agent) {
		priv = ib_mad_agent_priv(agent);
		ib_mad_agent_get(priv);
	}
	spin_unlock_irqrestore(&port->reg_lock, irq);
	if (!agent)
		return;
	ah = ib_create_ah_from_wc(port->pd, &wc_copy, &grh_copy,
				  port->port_num);
	if (IS_ERR(ah)) {
		dev_dbg(&port->device->dev,
			"ib_mad: port %u: no AH for a reply (%ld)\n",
			port->port_num, PTR_ERR(ah));
		goto put_agent;
	}
	sb = ib_create_send_mad(agent, wc->src_qp, wc->pkey_index, 0,
				IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA, GFP_KERNEL);
	if (IS_ERR(sb))
		goto put_ah;
	memcpy(sb->mad, reply, sizeof(*reply));
	sb->ah = ah;
	sb->context[0] = ah;
	if (!ib_post_send_mad(sb, NULL))
		goto put_agent;
	ib_free_send_mad(sb);
put_ah:
	ib_destroy_ah(ah);
put_agent:
	ib_mad_agent_put(priv);
}

/**
 * ib_agent_port_open() - register the reply agents of a port
 * @port: the port, already on the MAD layer's port list
 *
 * Return: 0, or a negative errno.
 */
int ib_agent_port_open(struct ib_mad_port *port)
{
	static const enum ib_qp_type types[IB_MAD_NUM_QPS] = {
		[IB_MAD_QP0] = IB_QPT_SMI,
		[IB_MAD_QP1] = IB_QPT_GSI,
	};
	struct ib_mad_agent *agent;
	unsigned long irq;
	int i;

	for (i = 0; i < IB_MAD_NUM_QPS; i++) {
		agent = ib_register_mad_agent(port->device, port->port_num,
					      types[i], NULL, 0,
					      agent_send_handler, NULL, NULL);
		if (IS_ERR(agent)) {
			ib_agent_port_close(port);
			return PTR_ERR(agent);
		}
		spin_lock_irqsave(&port->reg_lock, irq);
		port->reply_agent[i] = agent;
		spin_unlock_irqrestore(&port->reg_lock, irq);
	}
	return 0;
}

/**
 * ib_agent_port_close() - unregister the reply agents of a port
 * @port: the port
 *
 * Replies still on the way are flushed (and freed by the send handler).
 */
void ib_agent_port_close(struct ib_mad_port *port)
{
	struct ib_mad_agent *agent;
	unsigned long irq;
	int i;

	for (i = IB_MAD_NUM_QPS - 1; i >= 0; i--) {
		spin_lock_irqsave(&port->reg_lock, irq);
		agent = port->reply_agent[i];
		port->reply_agent[i] = NULL;
		spin_unlock_irqrestore(&port->reg_lock, irq);
		if (agent)
			ib_unregister_mad_agent(agent);
	}
}
