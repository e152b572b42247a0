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
 *    the SM, through MAD agents on QP0/QP1 of each port (mthca_trap.c).
 */

#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"
#include "mthca_trap.h"

static_assert(MTHCA_MAX_PORTS <= MTHCA_TRAP_PORTS);

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

		mthca_trap_sm_update(&dev->traps, port, sm_lid, sm_sl);
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
		mthca_trap_forward(&dev->traps, port_num, in_mad);
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
