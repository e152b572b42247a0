// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Directed-route SMP processing at a port (IBA vol 1, 14.2.2).
 *
 * A directed-route SMP carries its path: on the way out, initial_path[i] is
 * the port hop i leaves by, and each hop records the port it came in on in
 * return_path[i]; on the way back the packet retraces return_path. The hop
 * pointer says where on the path the packet is, and the hop count how long
 * the directed-route part is. Before or after the directed-route part there
 * may be a LID-routed part, from DrSLID or towards DrDLID; a permissive
 * DrSLID or DrDLID means that part is empty.
 *
 * Every rule below first places the packet on its trip, from the hop
 * pointer, hop count and direction; the compliance statement of IBA 14.2.2
 * that applies is given with each case (C14-9 outbound, C14-13 returning).
 */

#include <linux/export.h>
#include <linux/types.h>

#include <rdma/ib_smi.h>

#include "smi.h"

/* Where a directed-route SMP stands on its current trip. */
enum smi_dr_stage {
	SMI_DR_START,	/* at the node where this trip starts */
	SMI_DR_MIDDLE,	/* at an intermediate hop, which must be a switch */
	SMI_DR_END,	/* at the last hop of the directed-route part */
	SMI_DR_DONE,	/* the trip is over: for the local SMA or SM */
	SMI_DR_BAD,	/* hop count or hop pointer out of range */
};

static bool smi_outbound(const struct ib_smp *smp)
{
	return !ib_get_smp_direction(smp);
}

static enum smi_dr_stage smi_dr_stage(const struct ib_smp *smp)
{
	unsigned int ptr = smp->hop_ptr;
	unsigned int cnt = smp->hop_cnt;

	/* C14-6: the hop count is 0..63. */
	if (cnt >= IB_SMP_MAX_PATH_HOPS)
		return SMI_DR_BAD;

	if (smi_outbound(smp)) {
		if (cnt && ptr == 0)
			return SMI_DR_START;	/* C14-9:1 */
		if (ptr && ptr < cnt)
			return SMI_DR_MIDDLE;	/* C14-9:2 */
		if (ptr == cnt)
			return SMI_DR_END;	/* C14-9:3 */
		if (ptr == cnt + 1)
			return SMI_DR_DONE;	/* C14-9:4 */
		return SMI_DR_BAD;		/* C14-9:5 */
	}

	if (cnt && ptr == cnt + 1)
		return SMI_DR_START;		/* C14-13:1 */
	if (ptr >= 2 && ptr <= cnt)
		return SMI_DR_MIDDLE;		/* C14-13:2 */
	if (ptr == 1)
		return SMI_DR_END;		/* C14-13:3 */
	if (ptr == 0)
		return SMI_DR_DONE;		/* C14-13:4 */
	return SMI_DR_BAD;			/* C14-13:5 */
}

static enum smi_action smi_verdict(bool pass)
{
	return pass ? IB_SMI_HANDLE : IB_SMI_DISCARD;
}

/*
 * The LID-routed part beyond the end of the directed-route part is empty:
 * DrDLID permissive on the way out, DrSLID permissive on the way back.
 */
static bool smi_no_lid_route_beyond(const struct ib_smp *smp)
{
	return smi_outbound(smp) ? smp->dr_dlid == IB_LID_PERMISSIVE :
				   smp->dr_slid == IB_LID_PERMISSIVE;
}

/* Move the hop pointer one hop along the trip. */
static void smi_advance(struct ib_smp *smp)
{
	if (smi_outbound(smp))
		smp->hop_ptr++;
	else
		smp->hop_ptr--;
}

/* The port the path names at the current hop pointer. */
static u8 smi_port_here(const struct ib_smp *smp)
{
	return smi_outbound(smp) ? smp->initial_path[smp->hop_ptr] :
				   smp->return_path[smp->hop_ptr];
}

/**
 * smi_handle_dr_smp_send() - apply the DR rules to an SMP about to be sent
 * @smp: the directed-route SMP; its hop pointer is advanced when it leaves
 * @is_switch: whether this node is a switch
 * @port_num: the port it is to leave by
 *
 * Return: IB_SMI_HANDLE to send it (or, at the end of its trip, give it to
 * the local SMA or SM), IB_SMI_DISCARD to drop it.
 */
enum smi_action smi_handle_dr_smp_send(struct ib_smp *smp, bool is_switch,
				       u32 port_num)
{
	switch (smi_dr_stage(smp)) {
	case SMI_DR_MIDDLE:
		/* C14-9:2, C14-13:2: only a switch relays. */
		if (!is_switch)
			return IB_SMI_DISCARD;
		fallthrough;
	case SMI_DR_START:
		/*
		 * C14-9:1, C14-9:2, C14-13:1, C14-13:2: step the hop pointer;
		 * the path must name the port the SMP leaves by.
		 */
		smi_advance(smp);
		return smi_verdict(smi_port_here(smp) == port_num);
	case SMI_DR_END:
		/*
		 * C14-9:3, C14-13:3: leaving the directed-route part. A switch
		 * goes on by LID routing; a CA only when there is no
		 * LID-routed part left, i.e. DrDLID (out) or DrSLID (back) is
		 * permissive.
		 */
		smi_advance(smp);
		return smi_verdict(is_switch || smi_no_lid_route_beyond(smp));
	case SMI_DR_DONE:
		/* C14-9:4, C14-13:4: for the SMA or the SM. */
		return IB_SMI_HANDLE;
	default:
		/* C14-6, C14-9:5, C14-13:5 */
		return IB_SMI_DISCARD;
	}
}
EXPORT_SYMBOL(smi_handle_dr_smp_send);

/**
 * smi_handle_dr_smp_recv() - apply the DR rules to a received SMP
 * @smp: the directed-route SMP; on the way out, the arrival port is recorded
 *	in its return path
 * @is_switch: whether this node is a switch
 * @port_num: the port it came in on
 * @phys_port_cnt: number of physical ports of this node
 *
 * Return: IB_SMI_HANDLE to process it further (see
 * smi_check_forward_dr_smp()), IB_SMI_DISCARD to drop it.
 */
enum smi_action smi_handle_dr_smp_recv(struct ib_smp *smp, bool is_switch,
				       u32 port_num, int phys_port_cnt)
{
	bool out = smi_outbound(smp);
	unsigned int ptr = smp->hop_ptr;

	switch (smi_dr_stage(smp)) {
	case SMI_DR_START:
		if (out)
			return IB_SMI_DISCARD;	/* C14-9:1: sender did not step */
		/* C14-13:1: back at its start; it must come in where it left. */
		smi_advance(smp);
		return smi_verdict(smi_port_here(smp) == port_num);
	case SMI_DR_MIDDLE:
		/* C14-9:2, C14-13:2: a relay, so a switch with the next port. */
		if (!is_switch)
			return IB_SMI_DISCARD;
		if (out) {
			smp->return_path[ptr] = port_num;
			return smi_verdict(smp->initial_path[ptr + 1] <= phys_port_cnt);
		}
		return smi_verdict(smp->return_path[ptr - 1] <= phys_port_cnt);
	case SMI_DR_END:
		if (out) {
			/*
			 * C14-9:3: record the arrival port (there is no hop
			 * to record for a zero-hop path). A CA takes it only
			 * if DrDLID is permissive: nothing is LID-routed on.
			 */
			if (smp->hop_cnt)
				smp->return_path[ptr] = port_num;
			return smi_verdict(is_switch || smi_no_lid_route_beyond(smp));
		}
		/*
		 * C14-13:3: a permissive DrSLID means the SM is right here:
		 * step to 0 for it. Otherwise only a switch goes on, by LID
		 * routing towards DrSLID.
		 */
		if (smi_no_lid_route_beyond(smp)) {
			smi_advance(smp);
			return IB_SMI_HANDLE;
		}
		return smi_verdict(is_switch);
	case SMI_DR_DONE:
		/* C14-9:4, C14-13:4 */
		return IB_SMI_HANDLE;
	default:
		/* C14-6, C14-9:5, C14-13:5 */
		return IB_SMI_DISCARD;
	}
}
EXPORT_SYMBOL(smi_handle_dr_smp_recv);

/**
 * smi_check_forward_dr_smp() - where a received and accepted SMP goes next
 * @smp: the directed-route SMP, after smi_handle_dr_smp_recv()
 *
 * Return: IB_SMI_FORWARD when a switch relays it out of the next port of
 * the path (smi_get_fwd_port()); IB_SMI_SEND when it goes back through
 * smi_handle_dr_smp_send() on this port, to continue by LID routing or to
 * be looped to the local SMA; IB_SMI_LOCAL when the local SMA or SM
 * takes it.
 */
enum smi_forward_action smi_check_forward_dr_smp(const struct ib_smp *smp)
{
	bool out = smi_outbound(smp);

	switch (smi_dr_stage(smp)) {
	case SMI_DR_MIDDLE:
		return IB_SMI_FORWARD;		/* C14-9:2, C14-13:2 */
	case SMI_DR_END:
		/* C14-9:3, C14-13:3 */
		if (out)
			return smi_no_lid_route_beyond(smp) ? IB_SMI_SEND :
							      IB_SMI_LOCAL;
		return smi_no_lid_route_beyond(smp) ? IB_SMI_LOCAL :
						      IB_SMI_SEND;
	case SMI_DR_DONE:
		/* C14-9:4: outbound, for the SMA; C14-13:4: back at the SM. */
		return out ? IB_SMI_SEND : IB_SMI_LOCAL;
	default:
		return IB_SMI_LOCAL;
	}
}
EXPORT_SYMBOL(smi_check_forward_dr_smp);

/**
 * smi_get_fwd_port() - the port a switch relays a DR SMP out of
 * @smp: the directed-route SMP, at an intermediate hop
 *
 * Return: the next port of the path in the SMP's direction, or -1 if the
 * hop pointer leaves no next entry in the path.
 */
int smi_get_fwd_port(const struct ib_smp *smp)
{
	unsigned int ptr = smp->hop_ptr;

	if (smi_outbound(smp))
		return ptr + 1 < IB_SMP_MAX_PATH_HOPS ? smp->initial_path[ptr + 1] : -1;
	return ptr >= 1 ? smp->return_path[ptr - 1] : -1;
}
EXPORT_SYMBOL(smi_get_fwd_port);
