// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MADs for the firmware's SMA and PMA.
 *
 * The MAD layer hands the driver every SMP and PMA MAD for the local port;
 * the firmware answers them through MAD_IFC.  On the way the driver
 *  - watches successful SM Set(PortInfo) and Set(P_KeyTable) for what the
 *    SM changed, and reports it as LID/SM/P_Key change and client
 *    reregister events (the firmware raises no event for these),
 *  - answers Get(NodeDescription) with the description the host set,
 *  - sends traps the firmware generated (they arrive with SLID 0) on to
 *    the SM, through MAD agents on QP0/QP1 of each port.
 */

#include <linux/kref.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"

/* Mellanox vendor classes the firmware answers. */
#define MTHCA_VENDOR_CLASS1	0x09
#define MTHCA_VENDOR_CLASS2	0x0a

/* SMP attributes. */
#define SMP_ATTR_NODE_DESC	cpu_to_be16(0x0010)
#define SMP_ATTR_PORT_INFO	cpu_to_be16(0x0015)
#define SMP_ATTR_PKEY_TABLE	cpu_to_be16(0x0016)
#define SMP_ATTR_SM_INFO	cpu_to_be16(0x0020)
#define SMP_ATTR_VENDOR_MASK	cpu_to_be16(0xff00)

/* Offsets in PortInfo. */
#define PI_LID			16
#define PI_SM_LID		18
#define PI_SM_SL		36	/* low nibble */
#define PI_CLIENT_REREG		51	/* bit 7 */

/**
 * struct mthca_port_work - events found in an SMP, reported later
 * @work: runs in process context
 * @dev: the device
 * @port: the port
 * @nevents: entries of @events
 * @events: what to dispatch, in order
 */
struct mthca_port_work {
	struct work_struct	work;
	struct mthca_dev	*dev;
	u8			port;
	int			nevents;
	enum ib_event_type	events[4];
};

static void port_work_run(struct work_struct *work)
{
	struct mthca_port_work *pw =
		container_of(work, struct mthca_port_work, work);
	struct ib_event ev = {
		.device = &pw->dev->ib_dev,
		.element.port_num = pw->port,
	};
	int i;

	for (i = 0; i < pw->nevents; i++) {
		ev.event = pw->events[i];
		ib_dispatch_event(&ev);
	}
	kfree(pw);
}

/**
 * struct mthca_sm_ah - the address handle of a port's SM, shared
 * @ref: one for mthca_dev.sm_ah[], one per forwarded trap whose send has
 *	not completed yet
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

/*
 * Replaces the SM address handle of a port after the SM told the port
 * where it is.  Traps still holding the old one keep it alive.
 */
static void sm_ah_update(struct mthca_dev *dev, u8 port, u16 lid, u8 sl)
{
	struct ib_ah_attr attr = {
		.dlid = lid,
		.sl = sl,
		.port_num = port,
	};
	struct mthca_sm_ah *sa, *old = NULL;
	struct ib_mad_agent *agent;
	unsigned long flags;

	sa = kmalloc(sizeof(*sa), GFP_KERNEL);
	if (!sa)
		return;
	kref_init(&sa->ref);

	spin_lock_irqsave(&dev->sm_lock, flags);
	agent = dev->send_agent[port - 1][0];
	if (dev->mad_closing || !agent) {
		spin_unlock_irqrestore(&dev->sm_lock, flags);
		kfree(sa);
		return;
	}
	sa->ah = ib_create_ah(agent->qp->pd, &attr);
	if (IS_ERR(sa->ah)) {
		spin_unlock_irqrestore(&dev->sm_lock, flags);
		kfree(sa);
		return;
	}
	old = dev->sm_ah[port - 1];
	dev->sm_ah[port - 1] = sa;
	spin_unlock_irqrestore(&dev->sm_lock, flags);
	sm_ah_put(old);
}

/*
 * After a successful Set from the SM: what changed on @port.  @before
 * holds the port attributes from before the Set (valid if @have_before).
 */
static void smp_watch(struct mthca_dev *dev, u8 port,
		      const struct ib_mad *in, bool have_before,
		      const struct ib_port_attr *before)
{
	const u8 *pi = ((const struct ib_smp *)in)->data;
	struct mthca_port_work *pw;

	if (!ib_mad_is_smp_class(in->mad_hdr.mgmt_class) ||
	    in->mad_hdr.method != IB_MGMT_METHOD_SET)
		return;
	if (in->mad_hdr.attr_id != SMP_ATTR_PORT_INFO &&
	    in->mad_hdr.attr_id != SMP_ATTR_PKEY_TABLE)
		return;

	pw = kzalloc(sizeof(*pw), GFP_KERNEL);
	if (!pw)
		return;
	INIT_WORK(&pw->work, port_work_run);
	pw->dev = dev;
	pw->port = port;

	if (in->mad_hdr.attr_id == SMP_ATTR_PKEY_TABLE) {
		pw->events[pw->nevents++] = IB_EVENT_PKEY_CHANGE;
	} else {
		u16 lid = get_unaligned_be16(pi + PI_LID);
		u16 sm_lid = get_unaligned_be16(pi + PI_SM_LID);
		u8 sm_sl = pi[PI_SM_SL] & 0xf;

		sm_ah_update(dev, port, sm_lid, sm_sl);
		if (pi[PI_CLIENT_REREG] & 0x80)
			pw->events[pw->nevents++] = IB_EVENT_CLIENT_REREGISTER;
		if (!have_before || before->lid != lid)
			pw->events[pw->nevents++] = IB_EVENT_LID_CHANGE;
		if (!have_before || before->sm_lid != sm_lid ||
		    before->sm_sl != sm_sl)
			pw->events[pw->nevents++] = IB_EVENT_SM_CHANGE;
	}

	if (pw->nevents)
		queue_work(dev->wq, &pw->work);
	else
		kfree(pw);
}

/* The MAD layer's send handler of the trap agents (process context). */
static void trap_send_done(struct ib_mad_agent *agent,
			   struct ib_mad_send_wc *wc)
{
	struct mthca_sm_ah *sa = wc->send_buf->context[0];

	ib_free_send_mad(wc->send_buf);
	sm_ah_put(sa);
}

/*
 * Sends a trap the firmware generated to the port's SM.  The send holds a
 * reference on the SM's AH (send_buf->context[0]) until trap_send_done().
 * All under sm_lock, so teardown never unregisters the agent under us.
 */
static void trap_forward(struct mthca_dev *dev, u8 port,
			 const struct ib_mad *mad)
{
	int qpn = mad->mad_hdr.mgmt_class != IB_MGMT_CLASS_SUBN_LID_ROUTED;
	struct ib_mad_send_buf *sb = NULL;
	struct ib_mad_agent *agent;
	struct mthca_sm_ah *sa;
	unsigned long flags;
	int ret = -ENODEV;

	spin_lock_irqsave(&dev->sm_lock, flags);
	agent = dev->send_agent[port - 1][qpn];
	sa = dev->sm_ah[port - 1];
	if (dev->mad_closing || !agent || !sa)
		goto out;
	sb = ib_create_send_mad(agent, qpn, 0, 0, IB_MGMT_MAD_HDR,
				IB_MGMT_MAD_DATA, GFP_ATOMIC);
	if (IS_ERR(sb)) {
		sb = NULL;
		goto out;
	}
	memcpy(sb->mad, mad, sizeof(*mad));
	kref_get(&sa->ref);
	sb->ah = sa->ah;
	sb->context[0] = sa;
	ret = ib_post_send_mad(sb, NULL);
	if (ret)
		/* not the last reference: dev->sm_ah[] holds one */
		kref_put(&sa->ref, sm_ah_release);
out:
	spin_unlock_irqrestore(&dev->sm_lock, flags);
	if (ret && sb)
		ib_free_send_mad(sb);
}

/* Which MADs the firmware's agents answer. */
static bool mad_for_firmware(const struct ib_mad *in)
{
	u8 cls = in->mad_hdr.mgmt_class, method = in->mad_hdr.method;

	if (ib_mad_is_smp_class(cls)) {
		if (method != IB_MGMT_METHOD_GET &&
		    method != IB_MGMT_METHOD_SET &&
		    method != IB_MGMT_METHOD_TRAP_REPRESS)
			return false;
		/* SMInfo and vendor attributes are for an SM, not the SMA. */
		if (in->mad_hdr.attr_id == SMP_ATTR_SM_INFO ||
		    (in->mad_hdr.attr_id & SMP_ATTR_VENDOR_MASK) ==
		    SMP_ATTR_VENDOR_MASK)
			return false;
		return true;
	}
	if (cls == IB_MGMT_CLASS_PERF_MGMT || cls == MTHCA_VENDOR_CLASS1 ||
	    cls == MTHCA_VENDOR_CLASS2)
		return method == IB_MGMT_METHOD_GET ||
		       method == IB_MGMT_METHOD_SET;
	return false;
}

/**
 * mthca_process_mad() - the driver's process_mad method
 * @ibdev: the device
 * @mad_flags: IB_MAD_IGNORE_* bits
 * @port_num: port the MAD is for
 * @in_wc: its receive completion, or NULL for a locally made MAD
 * @in_grh: its GRH, or NULL
 * @in_mad: the MAD
 * @out_mad: the response, when IB_MAD_RESULT_REPLY is returned
 *
 * Sleeps.
 *
 * Return: enum ib_mad_result bits.
 */
int mthca_process_mad(struct ib_device *ibdev, int mad_flags, u8 port_num,
		      struct ib_wc *in_wc, struct ib_grh *in_grh,
		      struct ib_mad *in_mad, struct ib_mad *out_mad)
{
	struct mthca_dev *dev = to_mdev(ibdev);
	u16 slid = in_wc ? in_wc->slid : 0xffff;
	struct ib_port_attr before;
	bool have_before = false;
	int ret;

	if (port_num < 1 || port_num > dev->limits.num_ports)
		return IB_MAD_RESULT_FAILURE;

	/* A trap the firmware made: the SM must get it. */
	if (in_mad->mad_hdr.method == IB_MGMT_METHOD_TRAP && !slid) {
		trap_forward(dev, port_num, in_mad);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	}

	if (!mad_for_firmware(in_mad))
		return IB_MAD_RESULT_SUCCESS;

	if (ib_mad_is_smp_class(in_mad->mad_hdr.mgmt_class) &&
	    in_mad->mad_hdr.method == IB_MGMT_METHOD_SET &&
	    in_mad->mad_hdr.attr_id == SMP_ATTR_PORT_INFO)
		have_before = !ibdev->query_port(ibdev, port_num, &before);

	ret = mthca_MAD_IFC(dev, mad_flags & IB_MAD_IGNORE_MKEY,
			    mad_flags & IB_MAD_IGNORE_BKEY, port_num, in_wc,
			    in_grh, in_mad, out_mad);
	if (ret == -EBADMSG)
		return IB_MAD_RESULT_SUCCESS;
	if (ret) {
		mthca_err(dev, "MAD_IFC: %d\n", ret);
		return IB_MAD_RESULT_FAILURE;
	}

	if (!out_mad->mad_hdr.status) {
		smp_watch(dev, port_num, in_mad, have_before, &before);
		if (ib_mad_is_smp_class(out_mad->mad_hdr.mgmt_class) &&
		    out_mad->mad_hdr.method == IB_MGMT_METHOD_GET_RESP &&
		    out_mad->mad_hdr.attr_id == SMP_ATTR_NODE_DESC) {
			mutex_lock(&dev->cap_mask_mutex);
			memcpy(((struct ib_smp *)out_mad)->data,
			       ibdev->node_desc, sizeof(ibdev->node_desc));
			mutex_unlock(&dev->cap_mask_mutex);
		}
	}

	/* A directed-route response travels back: set the D bit. */
	if (in_mad->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		out_mad->mad_hdr.status |= IB_SMP_DIRECTION;

	/* The firmware answers a TrapRepress; nobody expects a reply. */
	if (in_mad->mad_hdr.method == IB_MGMT_METHOD_TRAP_REPRESS)
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;

	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/**
 * mthca_mad_agents_create() - agents to send forwarded traps with
 * @dev: the registered device
 *
 * Return: 0 or a negative errno.
 */
int mthca_mad_agents_create(struct mthca_dev *dev)
{
	struct ib_mad_agent *agent;
	unsigned long flags;
	int p, q;

	for (p = 0; p < dev->limits.num_ports; p++) {
		for (q = 0; q < 2; q++) {
			agent = ib_register_mad_agent(&dev->ib_dev, p + 1,
						      q ? IB_QPT_GSI :
						      IB_QPT_SMI,
						      NULL, 0, trap_send_done,
						      NULL, NULL);
			if (IS_ERR(agent)) {
				mthca_mad_agents_destroy(dev);
				return PTR_ERR(agent);
			}
			/* process_mad may already run: publish under the lock */
			spin_lock_irqsave(&dev->sm_lock, flags);
			dev->send_agent[p][q] = agent;
			spin_unlock_irqrestore(&dev->sm_lock, flags);
		}
	}
	return 0;
}

/**
 * mthca_mad_agents_destroy() - undo mthca_mad_agents_create()
 * @dev: the device
 *
 * The MAD layer may still call process_mad (it stops only when the
 * device is unregistered, after this): from here on it neither forwards
 * traps nor makes SM address handles.  Unregistering an agent returns
 * once its traps' send handlers have run, so the last SM AH reference is
 * the device's own.
 */
void mthca_mad_agents_destroy(struct mthca_dev *dev)
{
	struct ib_mad_agent *agents[MTHCA_MAX_PORTS][2];
	unsigned long flags;
	int p, q;

	spin_lock_irqsave(&dev->sm_lock, flags);
	dev->mad_closing = true;
	memcpy(agents, dev->send_agent, sizeof(agents));
	memset(dev->send_agent, 0, sizeof(dev->send_agent));
	spin_unlock_irqrestore(&dev->sm_lock, flags);

	for (p = 0; p < MTHCA_MAX_PORTS; p++)
		for (q = 0; q < 2; q++)
			if (agents[p][q])
				ib_unregister_mad_agent(agents[p][q]);

	spin_lock_irqsave(&dev->sm_lock, flags);
	for (p = 0; p < MTHCA_MAX_PORTS; p++) {
		sm_ah_put(dev->sm_ah[p]);
		dev->sm_ah[p] = NULL;
	}
	spin_unlock_irqrestore(&dev->sm_lock, flags);
}
