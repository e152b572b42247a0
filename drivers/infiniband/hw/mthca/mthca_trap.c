// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Traps the firmware's SMA generates (they come back from MAD_IFC, or
 * arrive on QP0 with SLID 0) go on to the SM, whose address the SM's
 * Set(PortInfo) told the port.  See mthca_trap.h for the state and its
 * lock.
 */

#include <linux/kref.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "mthca_trap.h"

/**
 * struct mthca_sm_ah - the address handle of a port's SM, shared
 * @ref: one for mthca_trap_fwd.sm_ah[], one per forwarded trap whose send
 *	has not completed yet
 * @ah: the address handle; destroyed with the last reference
 *
 * The MAD layer may post a trap later than ib_post_send_mad() (behind a
 * full send queue, or on a retry), and reads the AH then; so a trap keeps
 * the AH it was given until its send handler runs.
 */
struct mthca_sm_ah {
	struct kref	ref;
	struct ib_ah	*ah;
};

/* Any context: destroying an AH never sleeps. */
static void sm_ah_release(struct kref *ref)
{
	struct mthca_sm_ah *sa = container_of(ref, struct mthca_sm_ah, ref);

	ib_destroy_ah(sa->ah);
	kfree(sa);
}

static void sm_ah_put(struct mthca_sm_ah *sa)
{
	if (sa)
		kref_put(&sa->ref, sm_ah_release);
}

/**
 * mthca_trap_fwd_init() - empty trap forwarding state
 * @f: the state
 * @ibdev: its device
 *
 * Before the device is registered: process_mad may use @f from then on.
 */
void mthca_trap_fwd_init(struct mthca_trap_fwd *f, struct ib_device *ibdev)
{
	memset(f, 0, sizeof(*f));
	f->ibdev = ibdev;
	spin_lock_init(&f->lock);
}

/**
 * mthca_trap_sm_update() - the SM told @port where it is
 * @f: the state
 * @port: the port
 * @lid: the SM's LID
 * @sl: the SL to reach it
 *
 * Replaces the port's SM address handle; traps still holding the old one
 * keep it alive.  Nothing happens before the agents exist or once
 * teardown began.
 *
 * Context: process context (allocates with GFP_KERNEL).
 */
void mthca_trap_sm_update(struct mthca_trap_fwd *f, u8 port, u16 lid, u8 sl)
{
	struct ib_ah_attr attr = {
		.dlid = lid,
		.sl = sl,
		.port_num = port,
	};
	struct mthca_sm_ah *sa, *old = NULL;
	struct ib_mad_agent *agent;
	unsigned long flags;

	if (port < 1 || port > MTHCA_TRAP_PORTS)
		return;
	sa = kmalloc(sizeof(*sa), GFP_KERNEL);
	if (!sa)
		return;
	kref_init(&sa->ref);

	spin_lock_irqsave(&f->lock, flags);
	agent = f->send_agent[port - 1][0];
	if (f->closing || !agent) {
		spin_unlock_irqrestore(&f->lock, flags);
		kfree(sa);
		return;
	}
	sa->ah = ib_create_ah(agent->qp->pd, &attr);
	if (IS_ERR(sa->ah)) {
		spin_unlock_irqrestore(&f->lock, flags);
		kfree(sa);
		return;
	}
	old = f->sm_ah[port - 1];
	f->sm_ah[port - 1] = sa;
	spin_unlock_irqrestore(&f->lock, flags);
	sm_ah_put(old);
}

/* The MAD layer's send handler of the trap agents (process context). */
static void trap_send_done(struct ib_mad_agent *agent,
			   struct ib_mad_send_wc *wc)
{
	struct mthca_sm_ah *sa = wc->send_buf->context[0];

	ib_free_send_mad(wc->send_buf);
	sm_ah_put(sa);
}

/**
 * mthca_trap_forward() - send a trap the firmware generated to the SM
 * @f: the state
 * @port: the port it is about
 * @mad: the trap
 *
 * The send holds a reference on the SM's AH (send_buf->context[0]) until
 * its send handler runs.  All under the lock, so teardown never
 * unregisters the agent under us.  Never sleeps.
 *
 * Return: 0 when it was posted, -ENODEV when there is no agent or no SM
 * yet, or teardown began, else the MAD layer's error.
 */
int mthca_trap_forward(struct mthca_trap_fwd *f, u8 port,
		       const struct ib_mad *mad)
{
	int qpn = mad->mad_hdr.mgmt_class != IB_MGMT_CLASS_SUBN_LID_ROUTED;
	struct ib_mad_send_buf *sb = NULL;
	struct ib_mad_agent *agent;
	struct mthca_sm_ah *sa;
	unsigned long flags;
	int ret = -ENODEV;

	if (port < 1 || port > MTHCA_TRAP_PORTS)
		return -ENODEV;
	spin_lock_irqsave(&f->lock, flags);
	agent = f->send_agent[port - 1][qpn];
	sa = f->sm_ah[port - 1];
	if (f->closing || !agent || !sa)
		goto out;
	sb = ib_create_send_mad(agent, qpn, 0, 0, IB_MGMT_MAD_HDR,
				IB_MGMT_MAD_DATA, GFP_ATOMIC);
	if (IS_ERR(sb)) {
		ret = PTR_ERR(sb);
		sb = NULL;
		goto out;
	}
	memcpy(sb->mad, mad, sizeof(*mad));
	kref_get(&sa->ref);
	sb->ah = sa->ah;
	sb->context[0] = sa;
	ret = ib_post_send_mad(sb, NULL);
	if (ret)
		/* not the last reference: sm_ah[] holds one */
		kref_put(&sa->ref, sm_ah_release);
out:
	spin_unlock_irqrestore(&f->lock, flags);
	if (ret && sb)
		ib_free_send_mad(sb);
	return ret;
}

/**
 * mthca_trap_agents_create() - agents to send forwarded traps with
 * @f: the state, of a registered device
 * @num_ports: the device's ports (those beyond MTHCA_TRAP_PORTS get none)
 *
 * Return: 0 or a negative errno (nothing left registered then).
 */
int mthca_trap_agents_create(struct mthca_trap_fwd *f, int num_ports)
{
	struct ib_mad_agent *agent;
	unsigned long flags;
	int p, q;

	for (p = 0; p < min(num_ports, MTHCA_TRAP_PORTS); p++) {
		for (q = 0; q < 2; q++) {
			agent = ib_register_mad_agent(f->ibdev, p + 1,
						      q ? IB_QPT_GSI :
						      IB_QPT_SMI,
						      NULL, 0, trap_send_done,
						      NULL, NULL);
			if (IS_ERR(agent)) {
				mthca_trap_agents_destroy(f);
				return PTR_ERR(agent);
			}
			/* process_mad may already run: publish under the lock */
			spin_lock_irqsave(&f->lock, flags);
			f->send_agent[p][q] = agent;
			spin_unlock_irqrestore(&f->lock, flags);
		}
	}
	return 0;
}

/**
 * mthca_trap_agents_destroy() - undo mthca_trap_agents_create()
 * @f: the state
 *
 * The MAD layer may still call process_mad (it stops only when the
 * device is unregistered, after this): from here on nothing forwards
 * traps or makes SM address handles.  Unregistering an agent returns once
 * its traps' send handlers have run, so the last SM AH reference is the
 * one dropped here.
 */
void mthca_trap_agents_destroy(struct mthca_trap_fwd *f)
{
	struct ib_mad_agent *agents[MTHCA_TRAP_PORTS][2];
	struct mthca_sm_ah *sm_ah[MTHCA_TRAP_PORTS];
	unsigned long flags;
	int p, q;

	spin_lock_irqsave(&f->lock, flags);
	f->closing = true;
	memcpy(agents, f->send_agent, sizeof(agents));
	memset(f->send_agent, 0, sizeof(f->send_agent));
	spin_unlock_irqrestore(&f->lock, flags);

	for (p = 0; p < MTHCA_TRAP_PORTS; p++)
		for (q = 0; q < 2; q++)
			if (agents[p][q])
				ib_unregister_mad_agent(agents[p][q]);

	spin_lock_irqsave(&f->lock, flags);
	memcpy(sm_ah, f->sm_ah, sizeof(sm_ah));
	memset(f->sm_ah, 0, sizeof(f->sm_ah));
	spin_unlock_irqrestore(&f->lock, flags);
	for (p = 0; p < MTHCA_TRAP_PORTS; p++)
		sm_ah_put(sm_ah[p]);
}
