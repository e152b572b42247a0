// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RMPP, the reliable multi-packet protocol of IBA 13.6, for agents
 * registered with rmpp_version 1.
 *
 * Sending: a message of N segments goes out one segment at a time (the
 * next one when the previous send completes), as far as the receiver's
 * window allows; the window starts at segment 1 and each ACK moves it.  A
 * missing ACK rewinds to the first unacknowledged segment, up to the
 * send's retry count.  The send is reported when every segment is
 * acknowledged (and, for a request, its response has arrived).
 *
 * Receiving: segments are collected in order per transaction (TID, class,
 * source LID and QP); the first segment is acknowledged at once with a
 * window of IB_RMPP_RX_WINDOW, then each window boundary and the last
 * segment.  Duplicates are acknowledged again, out-of-order segments
 * dropped.  A transfer whose first segment announces more than
 * IB_MAD_RMPP_MAX_DATA bytes of data, or that grows past it, is stopped
 * (STOP, status RESX) and what it gathered is freed.  A finished
 * transaction lingers a little so that a lost final ACK can be repeated.
 * A STOP or ABORT from the sender drops the reassembly; one from the
 * receiver ends our send with IB_WC_REM_ABORT_ERR.
 *
 * All of this runs from the port's workqueue, under the agent's lock for
 * state changes; control MADs are sent after the lock is dropped.
 */

#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <rdma/ib_mad.h>

#include "mad_priv.h"
#include "mad_rmpp.h"

/* A reassembly gives up after this long without a new segment. */
#define RMPP_RX_IDLE_MS		10000
/* A finished one is kept this long to answer a repeated last segment. */
#define RMPP_RX_LINGER_MS	5000

/*
 * One transfer being received: its key, the address to ACK to, a copy of
 * the header for building control MADs, and the segments so far.
 */
struct rmpp_rx {
	struct list_head	list;
	__be64			tid;
	u8			mgmt_class;
	u16			slid;
	u32			src_qp;
	struct ib_wc		wc;
	struct ib_grh		grh;
	u8			hdr[IB_MGMT_RMPP_HDR];
	struct ib_mad_rbuf	*first;
	u32			last_paylen;
	struct ib_rmpp_rxwin	win;
	unsigned long		deadline;
};

/**
 * ib_rmpp_layout() - cut a message into RMPP segments
 * @hdr_len: header bytes repeated in every segment (MAD, RMPP and class
 *	headers)
 * @data_len: data bytes in the whole message, at most
 *	IB_MAD_RMPP_MAX_DATA
 * @seg_size: set to data bytes per segment
 * @seg_count: set to the number of segments (at least 1)
 * @pad: set to unused bytes at the end of the last segment
 *
 * Return: 0, -EINVAL for a header that leaves no room or a negative
 * length, or -EMSGSIZE for more data than IB_MAD_RMPP_MAX_DATA.
 */
int ib_rmpp_layout(int hdr_len, int data_len, int *seg_size, int *seg_count,
		   int *pad)
{
	size_t size, count, room;

	if (hdr_len < IB_MGMT_RMPP_HDR || hdr_len >= IB_MGMT_MAD_SIZE ||
	    data_len < 0)
		return -EINVAL;
	if (data_len > IB_MAD_RMPP_MAX_DATA)
		return -EMSGSIZE;
	size = IB_MGMT_MAD_SIZE - hdr_len;
	count = data_len ? DIV_ROUND_UP((size_t)data_len, size) : 1;
	if (check_mul_overflow(count, size, &room) || count > INT_MAX)
		return -EMSGSIZE;
	*seg_size = size;
	*seg_count = count;
	*pad = room - data_len;
	return 0;
}

/**
 * ib_rmpp_paylen() - the PayloadLength field of a DATA segment
 * @seg_num: the segment, from 1
 * @seg_count: segments in the message
 * @pad: unused bytes in the last one
 *
 * PayloadLength counts the bytes after the RMPP header (IB_MGMT_RMPP_DATA
 * per segment, class header included): the whole message in the first
 * segment, what the last segment carries in the last, 0 in between.
 *
 * Return: the value, in host order.
 */
u32 ib_rmpp_paylen(u32 seg_num, u32 seg_count, int pad)
{
	if (seg_num == seg_count)
		return IB_MGMT_RMPP_DATA - pad;
	if (seg_num == 1)
		return seg_count * IB_MGMT_RMPP_DATA - pad;
	return 0;
}

/**
 * ib_rmpp_recv_len() - length of a reassembled message
 * @hdr_len: the class's header length (ib_get_mad_data_offset())
 * @seg_count: segments received
 * @last_paylen: PayloadLength of the last segment
 *
 * Return: header plus data bytes, as ib_coalesce_recv_mad() copies them.
 */
int ib_rmpp_recv_len(int hdr_len, u32 seg_count, u32 last_paylen)
{
	int pad = IB_MGMT_RMPP_DATA - (int)last_paylen;

	if (last_paylen > IB_MGMT_RMPP_DATA || pad < 0)
		pad = 0;
	return hdr_len + seg_count * (IB_MGMT_MAD_SIZE - hdr_len) - pad;
}

/**
 * ib_rmpp_rx_fits() - does a transfer being received stay within the cap?
 * @hdr_len: the class's header length (ib_get_mad_data_offset())
 * @seg_num: the DATA segment about to be taken (in order), from 1
 * @flags: its RMPP flags
 * @paylen: its PayloadLength
 *
 * Two totals are held against IB_MAD_RMPP_MAX_DATA, the cap of the data
 * bytes of a message (as ib_rmpp_layout() applies it to sends): the one
 * the first segment announces in PayloadLength (IB_MGMT_RMPP_DATA bytes
 * per segment, class header included; 0 when the sender did not say), and
 * the running one, @seg_num segments' worth (less the last one's padding
 * when this is the last).  Sizes are size_t with overflow checks, so no
 * value on the wire can wrap them.
 *
 * Return: true when both stay within the cap; false too for a header
 * shorter than the RMPP one or leaving no data, or segment 0.
 */
bool ib_rmpp_rx_fits(int hdr_len, u32 seg_num, u8 flags, u32 paylen)
{
	size_t seg_data, segs, total, wire, pad = 0;

	if (hdr_len < IB_MGMT_RMPP_HDR || hdr_len >= IB_MGMT_MAD_SIZE ||
	    !seg_num)
		return false;
	seg_data = IB_MGMT_MAD_SIZE - hdr_len;

	if ((flags & IB_MGMT_RMPP_FLAG_FIRST) && paylen) {
		/* segments announced, rounded up without overflow */
		segs = paylen / IB_MGMT_RMPP_DATA +
		       !!(paylen % IB_MGMT_RMPP_DATA);
		/* data = paylen + segs * (seg_data - IB_MGMT_RMPP_DATA) */
		if (check_mul_overflow(segs, seg_data, &total) ||
		    check_add_overflow(total, (size_t)paylen, &total) ||
		    check_mul_overflow(segs, (size_t)IB_MGMT_RMPP_DATA, &wire))
			return false;
		if (total >= wire && total - wire > IB_MAD_RMPP_MAX_DATA)
			return false;
	}

	if ((flags & IB_MGMT_RMPP_FLAG_LAST) && paylen <= IB_MGMT_RMPP_DATA)
		pad = IB_MGMT_RMPP_DATA - paylen;
	if (check_mul_overflow((size_t)seg_num, seg_data, &total))
		return false;
	return total - min(pad, total) <= IB_MAD_RMPP_MAX_DATA;
}

/**
 * ib_rmpp_tx_start() - a sender window before the first segment
 * @w: the window
 * @seg_count: segments to send
 *
 * Until the receiver says otherwise, only segment 1 may go.
 */
void ib_rmpp_tx_start(struct ib_rmpp_txwin *w, u32 seg_count)
{
	w->seg_count = seg_count;
	w->last_sent = 0;
	w->last_ack = 0;
	w->window_last = 1;
}

/**
 * ib_rmpp_tx_next() - the segment to send now
 * @w: the window
 *
 * Return: its number, or 0 when the window is used up (wait for an ACK)
 * or everything has been sent.
 */
u32 ib_rmpp_tx_next(const struct ib_rmpp_txwin *w)
{
	u32 next = w->last_sent + 1;

	if (next > w->seg_count || next > w->window_last)
		return 0;
	return next;
}

/**
 * ib_rmpp_tx_ack() - take an ACK into the sender window
 * @w: the window
 * @seg_num: the ACK's SegmentNumber (last segment received in order)
 * @newwin: its NewWindowLast
 *
 * Return: what the ACK means; the window changes only for
 * IB_RMPP_ACK_MORE and IB_RMPP_ACK_ALL.
 */
enum ib_rmpp_ack_verdict ib_rmpp_tx_ack(struct ib_rmpp_txwin *w, u32 seg_num,
					u32 newwin)
{
	if (seg_num > w->seg_count)
		return IB_RMPP_ACK_BAD_SEG;
	if (newwin < seg_num)
		return IB_RMPP_ACK_BAD_WIN;
	if (seg_num < w->last_ack)
		return IB_RMPP_ACK_STALE;
	w->last_ack = seg_num;
	w->window_last = min(newwin, w->seg_count);
	if (w->last_sent < seg_num)
		w->last_sent = seg_num;
	return seg_num == w->seg_count ? IB_RMPP_ACK_ALL : IB_RMPP_ACK_MORE;
}

/**
 * ib_rmpp_tx_rewind() - go back to the first unacknowledged segment
 * @w: the window
 *
 * After an ACK timeout: whatever was sent beyond the last ACK is sent
 * again.
 */
void ib_rmpp_tx_rewind(struct ib_rmpp_txwin *w)
{
	w->last_sent = w->last_ack;
	if (w->window_last <= w->last_ack)
		w->window_last = w->last_ack + 1;
}

/**
 * ib_rmpp_rx_start() - a receiver window before segment 1
 * @w: the window
 */
void ib_rmpp_rx_start(struct ib_rmpp_rxwin *w)
{
	w->last = 0;
	w->window_last = 1;
	w->done = false;
}

/**
 * ib_rmpp_rx_seg() - take a DATA segment into the receiver window
 * @w: the window
 * @seg_num: its SegmentNumber
 * @last: it has the LAST flag
 * @window: how far to open the window at each ACK
 *
 * Return: the action; @w->last and @w->window_last are updated for the
 * ones that keep the segment, and @w->window_last is what the ACK carries.
 */
enum ib_rmpp_rx_action ib_rmpp_rx_seg(struct ib_rmpp_rxwin *w, u32 seg_num,
				      bool last, u32 window)
{
	if (seg_num <= w->last)
		return IB_RMPP_RX_DUP_ACK;
	if (w->done || seg_num != w->last + 1)
		return IB_RMPP_RX_DROP;
	w->last = seg_num;
	if (last) {
		/* The ACK's window must not end before the segment it ACKs. */
		if (w->window_last < seg_num)
			w->window_last = seg_num;
		w->done = true;
		return IB_RMPP_RX_LAST;
	}
	if (seg_num >= w->window_last) {
		w->window_last = seg_num + window;
		return IB_RMPP_RX_TAKE_ACK;
	}
	return IB_RMPP_RX_TAKE;
}

/**
 * ib_rmpp_active() - is this MAD an RMPP packet?
 * @mad: the MAD (of an RMPP class)
 *
 * Return: true when its RMPP header has the Active flag.
 */
bool ib_rmpp_active(const struct ib_mad *mad)
{
	const struct ib_rmpp_mad *rm = (const struct ib_rmpp_mad *)mad;

	return rm->rmpp_hdr.rmpp_rtime_flags & IB_MGMT_RMPP_FLAG_ACTIVE;
}

/**
 * ib_rmpp_fill_seg() - write the RMPP header of a DATA segment on the wire
 * @wire: the 256-byte segment, header already copied in
 * @seg_num: the segment, from 1
 * @seg_count: segments in the message
 * @pad: unused bytes in the last one
 */
void ib_rmpp_fill_seg(void *wire, u32 seg_num, u32 seg_count, int pad)
{
	struct ib_rmpp_hdr *rh = &((struct ib_rmpp_mad *)wire)->rmpp_hdr;
	u8 flags = IB_MGMT_RMPP_FLAG_ACTIVE;

	if (seg_num == 1)
		flags |= IB_MGMT_RMPP_FLAG_FIRST;
	if (seg_num == seg_count)
		flags |= IB_MGMT_RMPP_FLAG_LAST;
	rh->rmpp_version = IB_MGMT_RMPP_VERSION;
	rh->rmpp_type = IB_MGMT_RMPP_TYPE_DATA;
	ib_set_rmpp_flags(rh, flags);
	rh->rmpp_status = IB_MGMT_RMPP_STATUS_SUCCESS;
	rh->seg_num = cpu_to_be32(seg_num);
	rh->paylen_newwin =
		cpu_to_be32(ib_rmpp_paylen(seg_num, seg_count, pad));
}

/* A control MAD (ACK, STOP, ABORT) to be sent once the lock is dropped. */
struct rmpp_ctl {
	struct ib_wc	wc;
	struct ib_grh	grh;
	u8		hdr[IB_MGMT_RMPP_HDR];
	u8		type;
	u8		status;
	u32		seg_num;
	u32		newwin;
};

static void rmpp_send_ctl(struct ib_mad_agent_priv *agent,
			  struct rmpp_ctl *ctl)
{
	const struct ib_mad_hdr *tmpl = (const struct ib_mad_hdr *)ctl->hdr;
	struct ib_mad_send_buf *sb;
	struct ib_rmpp_mad *rm;
	struct ib_ah *ah;
	int hdr_len;

	ah = ib_create_ah_from_wc(agent->port->pd, &ctl->wc, &ctl->grh,
				  agent->agent.port_num);
	if (IS_ERR(ah))
		return;
	hdr_len = ib_get_mad_data_offset(tmpl->mgmt_class);
	sb = ib_create_send_mad(&agent->agent, ctl->wc.src_qp,
				ctl->wc.pkey_index, 0, hdr_len,
				IB_MGMT_MAD_SIZE - hdr_len, GFP_KERNEL);
	if (IS_ERR(sb))
		goto put_ah;
	rm = sb->mad;
	memcpy(rm, ctl->hdr, IB_MGMT_RMPP_HDR);
	/* A control MAD travels the other way: flip the R bit. */
	rm->mad_hdr.method ^= IB_MGMT_METHOD_RESP;
	rm->rmpp_hdr.rmpp_version = IB_MGMT_RMPP_VERSION;
	rm->rmpp_hdr.rmpp_type = ctl->type;
	ib_set_rmpp_flags(&rm->rmpp_hdr, IB_MGMT_RMPP_FLAG_ACTIVE);
	rm->rmpp_hdr.rmpp_status = ctl->status;
	rm->rmpp_hdr.seg_num = cpu_to_be32(ctl->seg_num);
	rm->rmpp_hdr.paylen_newwin = cpu_to_be32(ctl->newwin);
	sb->ah = ah;
	sb->context[0] = ah;
	ib_mad_send_priv(sb)->internal = true;
	if (!ib_post_send_mad(sb, NULL))
		return;
	ib_free_send_mad(sb);
put_ah:
	ib_destroy_ah(ah);
}

static void rmpp_ctl_from_rx(struct rmpp_ctl *ctl, const struct rmpp_rx *rx,
			     u8 type, u8 status)
{
	ctl->wc = rx->wc;
	ctl->grh = rx->grh;
	memcpy(ctl->hdr, rx->hdr, sizeof(ctl->hdr));
	ctl->type = type;
	ctl->status = status;
	ctl->seg_num = type == IB_MGMT_RMPP_TYPE_ACK ? rx->win.last : 0;
	ctl->newwin = type == IB_MGMT_RMPP_TYPE_ACK ? rx->win.window_last : 0;
}

static void rmpp_ctl_from_rbuf(struct rmpp_ctl *ctl,
			       const struct ib_mad_rbuf *rb, u8 type, u8 status)
{
	ctl->wc = rb->wc;
	ctl->grh = rb->data.grh;
	memcpy(ctl->hdr, &rb->data.mad, sizeof(ctl->hdr));
	ctl->type = type;
	ctl->status = status;
	ctl->seg_num = 0;
	ctl->newwin = 0;
}

static struct rmpp_rx *rmpp_rx_find(struct ib_mad_agent_priv *agent,
				    const struct ib_mad_rbuf *rb)
{
	const struct ib_mad_hdr *h = &rb->data.mad.mad_hdr;
	struct rmpp_rx *rx;

	list_for_each_entry(rx, &agent->rmpp_rx, list)
		if (rx->tid == h->tid && rx->mgmt_class == h->mgmt_class &&
		    rx->slid == rb->wc.slid && rx->src_qp == rb->wc.src_qp)
			return rx;
	return NULL;
}

static void rmpp_rx_free(struct rmpp_rx *rx)
{
	if (rx->first)
		ib_free_recv_mad(&rx->first->recv_wc);
	kfree(rx);
}

static struct rmpp_rx *rmpp_rx_new(const struct ib_mad_rbuf *rb)
{
	struct rmpp_rx *rx = kzalloc(sizeof(*rx), GFP_KERNEL);

	if (!rx)
		return NULL;
	rx->tid = rb->data.mad.mad_hdr.tid;
	rx->mgmt_class = rb->data.mad.mad_hdr.mgmt_class;
	rx->slid = rb->wc.slid;
	rx->src_qp = rb->wc.src_qp;
	rx->wc = rb->wc;
	rx->grh = rb->data.grh;
	memcpy(rx->hdr, &rb->data.mad, sizeof(rx->hdr));
	ib_rmpp_rx_start(&rx->win);
	return rx;
}

/* Keep a DATA segment: the first one carries the recv_wc for all. */
static void rmpp_rx_append(struct rmpp_rx *rx, struct ib_mad_rbuf *rb)
{
	if (!rx->first) {
		rx->first = rb;
		return;
	}
	list_add_tail(&rb->recv_wc.recv_buf.list, &rx->first->recv_wc.rmpp_list);
}

static struct ib_mad_rbuf *rmpp_recv_data(struct ib_mad_agent_priv *agent,
					  struct ib_mad_rbuf *rb)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)&rb->data.mad;
	u8 flags = ib_get_rmpp_flags(&rm->rmpp_hdr);
	u32 seg = be32_to_cpu(rm->rmpp_hdr.seg_num);
	struct ib_mad_rbuf *whole = NULL;
	enum ib_rmpp_rx_action act;
	struct rmpp_rx *rx, *fresh = NULL;
	struct rmpp_ctl ctl;
	bool send_ack = false;
	unsigned long irq;

	/* Only the receive path adds reassemblies, so this cannot race. */
	spin_lock_irqsave(&agent->lock, irq);
	rx = rmpp_rx_find(agent, rb);
	spin_unlock_irqrestore(&agent->lock, irq);
	if (!rx) {
		if (seg != 1 || !(flags & IB_MGMT_RMPP_FLAG_FIRST))
			goto drop;
		fresh = rmpp_rx_new(rb);
		if (!fresh)
			goto drop;
	}

	spin_lock_irqsave(&agent->lock, irq);
	if (agent->dying) {
		spin_unlock_irqrestore(&agent->lock, irq);
		kfree(fresh);
		goto drop;
	}
	if (fresh) {
		rx = fresh;
		list_add_tail(&rx->list, &agent->rmpp_rx);
	}
	if (!rx->win.done && seg == rx->win.last + 1 &&
	    !ib_rmpp_rx_fits(ib_get_mad_data_offset(rx->mgmt_class), seg,
			     flags, be32_to_cpu(rm->rmpp_hdr.paylen_newwin))) {
		/*
		 * More than IB_MAD_RMPP_MAX_DATA: the receiver is out of
		 * resources for it, which IBA 13.6 says with STOP and
		 * status 1 (no ABORT status means that).  What was gathered
		 * goes now.
		 */
		list_del(&rx->list);
		rmpp_ctl_from_rx(&ctl, rx, IB_MGMT_RMPP_TYPE_STOP,
				 IB_MGMT_RMPP_STATUS_RESX);
		spin_unlock_irqrestore(&agent->lock, irq);
		rmpp_rx_free(rx);
		rmpp_send_ctl(agent, &ctl);
		goto drop;
	}
	act = ib_rmpp_rx_seg(&rx->win, seg, flags & IB_MGMT_RMPP_FLAG_LAST,
			     IB_RMPP_RX_WINDOW);
	switch (act) {
	case IB_RMPP_RX_DROP:
		break;
	case IB_RMPP_RX_DUP_ACK:
		send_ack = true;
		break;
	case IB_RMPP_RX_TAKE:
	case IB_RMPP_RX_TAKE_ACK:
	case IB_RMPP_RX_LAST:
		rmpp_rx_append(rx, rb);
		rb = NULL;
		send_ack = act != IB_RMPP_RX_TAKE;
		if (act == IB_RMPP_RX_LAST) {
			whole = rx->first;
			rx->first = NULL;
			whole->recv_wc.mad_len =
				ib_rmpp_recv_len(ib_get_mad_data_offset(rx->mgmt_class),
						 rx->win.last,
						 be32_to_cpu(rm->rmpp_hdr.paylen_newwin));
		}
		break;
	}
	rx->deadline = jiffies + msecs_to_jiffies(rx->win.done ?
						  RMPP_RX_LINGER_MS :
						  RMPP_RX_IDLE_MS);
	ib_mad_arm_timer(agent, rx->deadline);
	if (send_ack)
		rmpp_ctl_from_rx(&ctl, rx, IB_MGMT_RMPP_TYPE_ACK, 0);
	spin_unlock_irqrestore(&agent->lock, irq);

	if (send_ack)
		rmpp_send_ctl(agent, &ctl);
drop:
	if (rb)
		ib_free_recv_mad(&rb->recv_wc);
	return whole;
}

/* An ACK for one of our sends. */
static void rmpp_recv_ack(struct ib_mad_agent_priv *agent,
			  struct ib_mad_rbuf *rb)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)&rb->data.mad;
	struct ib_mad_send_priv *sp;
	enum ib_rmpp_ack_verdict v;
	struct rmpp_ctl ctl;
	bool abort = false;
	unsigned long irq;

	spin_lock_irqsave(&agent->lock, irq);
	sp = ib_mad_find_send(agent, rm->mad_hdr.tid, rm->mad_hdr.mgmt_class,
			      true);
	if (!sp || sp->status != IB_WC_SUCCESS)
		goto out;
	v = ib_rmpp_tx_ack(&sp->tx, be32_to_cpu(rm->rmpp_hdr.seg_num),
			   be32_to_cpu(rm->rmpp_hdr.paylen_newwin));
	switch (v) {
	case IB_RMPP_ACK_STALE:
		goto out;
	case IB_RMPP_ACK_BAD_SEG:
	case IB_RMPP_ACK_BAD_WIN:
		sp->status = IB_WC_REM_ABORT_ERR;
		abort = true;
		rmpp_ctl_from_rbuf(&ctl, rb, IB_MGMT_RMPP_TYPE_ABORT,
				   v == IB_RMPP_ACK_BAD_SEG ?
				   IB_MGMT_RMPP_STATUS_S2B :
				   IB_MGMT_RMPP_STATUS_W2S);
		break;
	case IB_RMPP_ACK_MORE:
	case IB_RMPP_ACK_ALL:
		/* Progress: the retry budget starts afresh. */
		sp->retries_left = sp->send_buf.retries;
		sp->timer_on = false;
		break;
	}
	ib_mad_send_progress(sp);
out:
	spin_unlock_irqrestore(&agent->lock, irq);
	if (abort)
		rmpp_send_ctl(agent, &ctl);
}

/* STOP or ABORT: for one of our sends, or for a reassembly. */
static void rmpp_recv_stop(struct ib_mad_agent_priv *agent,
			   struct ib_mad_rbuf *rb)
{
	const struct ib_mad_hdr *h = &rb->data.mad.mad_hdr;
	struct ib_mad_send_priv *sp;
	struct rmpp_rx *rx;
	unsigned long irq;

	spin_lock_irqsave(&agent->lock, irq);
	sp = ib_mad_find_send(agent, h->tid, h->mgmt_class, true);
	if (sp && sp->status == IB_WC_SUCCESS) {
		sp->status = IB_WC_REM_ABORT_ERR;
		ib_mad_send_progress(sp);
	}
	rx = rmpp_rx_find(agent, rb);
	if (rx)
		list_del(&rx->list);
	spin_unlock_irqrestore(&agent->lock, irq);
	if (rx)
		rmpp_rx_free(rx);
}

/**
 * ib_rmpp_recv() - RMPP processing of a received MAD
 * @agent: the RMPP agent it was dispatched to (a reference held)
 * @rb: the MAD, RMPP active; consumed
 *
 * Context: the port's workqueue.
 *
 * Return: a complete message to deliver (possibly @rb itself, possibly a
 * reassembly whose recv_wc lists all segments), or NULL when there is
 * nothing to deliver yet.
 */
struct ib_mad_rbuf *ib_rmpp_recv(struct ib_mad_agent_priv *agent,
				 struct ib_mad_rbuf *rb)
{
	struct ib_rmpp_mad *rm = (struct ib_rmpp_mad *)&rb->data.mad;
	struct rmpp_ctl ctl;

	if (rm->rmpp_hdr.rmpp_version != IB_MGMT_RMPP_VERSION) {
		/* C13-22 style answer: tell the sender we cannot do it. */
		if (rm->rmpp_hdr.rmpp_type == IB_MGMT_RMPP_TYPE_DATA) {
			rmpp_ctl_from_rbuf(&ctl, rb, IB_MGMT_RMPP_TYPE_ABORT,
					   IB_MGMT_RMPP_STATUS_UNV);
			rmpp_send_ctl(agent, &ctl);
		}
		goto done;
	}

	switch (rm->rmpp_hdr.rmpp_type) {
	case IB_MGMT_RMPP_TYPE_DATA:
		return rmpp_recv_data(agent, rb);
	case IB_MGMT_RMPP_TYPE_ACK:
		rmpp_recv_ack(agent, rb);
		break;
	case IB_MGMT_RMPP_TYPE_STOP:
	case IB_MGMT_RMPP_TYPE_ABORT:
		rmpp_recv_stop(agent, rb);
		break;
	default:
		rmpp_ctl_from_rbuf(&ctl, rb, IB_MGMT_RMPP_TYPE_ABORT,
				   IB_MGMT_RMPP_STATUS_BADT);
		rmpp_send_ctl(agent, &ctl);
		break;
	}
done:
	ib_free_recv_mad(&rb->recv_wc);
	return NULL;
}

/**
 * ib_rmpp_rx_flush() - drop every reassembly of an agent
 * @agent: the agent, unregistering (dying already set)
 */
void ib_rmpp_rx_flush(struct ib_mad_agent_priv *agent)
{
	struct rmpp_rx *rx, *tmp;
	unsigned long irq;
	LIST_HEAD(gone);

	spin_lock_irqsave(&agent->lock, irq);
	list_splice_init(&agent->rmpp_rx, &gone);
	spin_unlock_irqrestore(&agent->lock, irq);
	list_for_each_entry_safe(rx, tmp, &gone, list)
		rmpp_rx_free(rx);
}

/**
 * ib_rmpp_rx_expire() - drop reassemblies whose time is up
 * @agent: the agent
 *
 * Context: the agent's lock held.  Re-arms the agent's timer for the
 * rest.
 */
void ib_rmpp_rx_expire(struct ib_mad_agent_priv *agent)
{
	struct rmpp_rx *rx, *tmp;

	list_for_each_entry_safe(rx, tmp, &agent->rmpp_rx, list) {
		if (time_after_eq(jiffies, rx->deadline)) {
			list_del(&rx->list);
			rmpp_rx_free(rx);
		} else {
			ib_mad_arm_timer(agent, rx->deadline);
		}
	}
}
