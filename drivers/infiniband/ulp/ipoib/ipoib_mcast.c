// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's multicast groups. The broadcast group (ff12:401b:PPPP::
 * ffff:ffff) is joined first, through our ib_sa (SubnAdmSet of an
 * MCMemberRecord, full member); its Q_Key and MTU become the interface's.
 * Then every group of the net_device's mc list (the IPv4 and IPv6 groups
 * the kernel maps to IPoIB hardware addresses) is joined with the
 * broadcast group's parameters (RFC 4391 wants them equal), and the QP
 * attached. A group that leaves the list is detached and left
 * (SubnAdmDelete). A send to a group nobody here listens to joins it as a
 * send-only member.
 *
 * Each group moves through enum ipoib_mcast_state:
 *   IDLE --task--> JOINING --ok--> JOINED --unlisted/flush--> LEAVING (freed)
 *                          \-fail-> FAILED --backoff--> IDLE
 * All joins and leaves start from process context (the mcast task on
 * priv->wq, or a flush); the SA calls back on its own workqueue.
 */
#include <linux/delay.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>

#include "ipoib.h"

#define IPOIB_MC_BACKOFF_MAX	16	/* seconds */
#define IPOIB_JOIN_FULL		1	/* JoinState: FullMember */
#define IPOIB_JOIN_SENDONLY	4	/* JoinState: SendOnlyNonMember */

static struct ipoib_mcast *ipoib_mcast_alloc(struct ipoib_dev *priv,
					     const union ib_gid *mgid,
					     bool sendonly, gfp_t gfp)
{
	struct ipoib_mcast *mc = kzalloc(sizeof(*mc), gfp);

	if (!mc)
		return NULL;
	mc->mgid = *mgid;
	mc->sendonly = sendonly;
	mc->state = IPOIB_MC_IDLE;
	mc->priv = priv;
	mc->backoff = 1;
	skb_queue_head_init(&mc->queue);
	init_completion(&mc->done);
	complete(&mc->done);	/* no query in flight */
	return mc;
}

/**
 * ipoib_drop_queue() - free queued sends, counting them as dropped
 * @priv: the interface
 * @q: a queue nobody else touches any more
 */
void ipoib_drop_queue(struct ipoib_dev *priv, struct sk_buff_head *q)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(q))) {
		priv->dev->stats.tx_dropped++;
		dev_kfree_skb_any(skb);
	}
}

static void ipoib_mcast_free(struct ipoib_mcast *mc)
{
	ipoib_drop_queue(mc->priv, &mc->queue);
	ipoib_ah_put(mc->ah);
	kfree(mc);
}

/* Caller holds priv->lock. */
static struct ipoib_mcast *ipoib_mcast_find(struct ipoib_dev *priv,
					    const union ib_gid *mgid)
{
	struct ipoib_mcast *mc;

	list_for_each_entry(mc, &priv->mcasts, list)
		if (!memcmp(mc->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return mc;
	return NULL;
}

/**
 * ipoib_mcast_init() - set up an interface's group list
 * @priv: the interface
 */
void ipoib_mcast_init(struct ipoib_dev *priv)
{
	INIT_LIST_HEAD(&priv->mcasts);
	priv->broadcast = NULL;
}

/**
 * ipoib_mcast_restart() - have the mcast task look at the groups again
 * @priv: the interface
 *
 * Any context. Nothing happens unless the interface is up.
 */
void ipoib_mcast_restart(struct ipoib_dev *priv)
{
	if (test_bit(IPOIB_FLAG_UP, &priv->flags))
		mod_delayed_work(priv->wq, &priv->mcast_task, 0);
}

/**
 * ipoib_mcast_mtu_task() - apply the broadcast group's MTU to the netdev
 * @work: &ipoib_dev.mtu_task.work
 *
 * Needs RTNL; ndo_stop holds RTNL while it cancels this work, so it only
 * tries for it, and comes back later when it is taken. In connected mode
 * the MTU is the mode's, not the group's.
 */
void ipoib_mcast_mtu_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(to_delayed_work(work),
					      struct ipoib_dev, mtu_task);
	int mtu;

	if (!rtnl_trylock()) {
		queue_delayed_work(priv->wq, &priv->mtu_task, msecs_to_jiffies(10));
		return;
	}
	spin_lock_bh(&priv->lock);
	mtu = ipoib_mtu_from_ib(min(priv->mcast_mtu, priv->max_ib_mtu));
	spin_unlock_bh(&priv->lock);
	if (test_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags))
		mtu = 0;
	if (mtu > 0 && priv->dev->mtu != mtu && dev_set_mtu(priv->dev, mtu))
		netdev_warn(priv->dev, "MTU %d refused\n", mtu);
	rtnl_unlock();
}

static void ipoib_mcast_ah_attr(struct ipoib_dev *priv,
				const struct ib_sa_mcmember_rec *rec,
				struct ib_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->dlid = be16_to_cpu(rec->mlid);
	attr->sl = rec->sl;
	attr->port_num = priv->port;
	attr->ah_flags = IB_AH_GRH;
	attr->grh.dgid = rec->mgid;
	attr->grh.sgid_index = 0;
	attr->grh.hop_limit = rec->hop_limit;
	attr->grh.flow_label = be32_to_cpu(rec->flow_label);
	attr->grh.traffic_class = rec->traffic_class;
}

/* The SA's answer to a join; its workqueue, process context. */
static void ipoib_mcast_join_done(int status, struct ib_sa_mcmember_rec *rec,
				  void *context)
{
	struct ipoib_mcast *mc = context;
	struct ipoib_dev *priv = mc->priv;
	struct sk_buff_head ready;
	struct ib_ah_attr attr;
	struct ipoib_ah *ah = NULL;
	bool is_bcast, attached = false;
	int ret = status;

	skb_queue_head_init(&ready);
	if (!ret) {
		ipoib_mcast_ah_attr(priv, rec, &attr);
		ah = ipoib_ah_create(priv, &attr);
		if (IS_ERR(ah)) {
			ret = PTR_ERR(ah);
			ah = NULL;
		}
	}
	if (!ret && !mc->sendonly) {
		ret = ib_attach_mcast(priv->qp, &rec->mgid, be16_to_cpu(rec->mlid));
		attached = !ret;
	}

	spin_lock_bh(&priv->lock);
	is_bcast = priv->broadcast == mc;
	spin_unlock_bh(&priv->lock);
	if (!ret && is_bcast)
		ret = ipoib_set_qkey(priv, be32_to_cpu(rec->qkey));

	spin_lock_bh(&priv->lock);
	if (!ret) {
		mc->rec = *rec;
		mc->ah = ah;
		mc->attached = attached;
		mc->state = IPOIB_MC_JOINED;
		mc->backoff = 1;
		if (is_bcast)
			priv->mcast_mtu = ib_mtu_enum_to_int(rec->mtu);
	} else {
		mc->state = IPOIB_MC_FAILED;
		mc->retry_at = jiffies + mc->backoff * HZ;
		mc->backoff = min(mc->backoff * 2, IPOIB_MC_BACKOFF_MAX);
	}
	skb_queue_splice_init(&mc->queue, &ready);
	if (test_bit(IPOIB_FLAG_UP, &priv->flags)) {
		if (!ret && is_bcast)
			queue_delayed_work(priv->wq, &priv->mtu_task, 0);
		mod_delayed_work(priv->wq, &priv->mcast_task,
				 ret ? mc->backoff * HZ / 2 : 0);
	}
	spin_unlock_bh(&priv->lock);

	if (ret) {
		if (attached)
			ib_detach_mcast(priv->qp, &rec->mgid, be16_to_cpu(rec->mlid));
		ipoib_ah_put(ah);
		if (status != -EINTR)
			netdev_dbg(priv->dev, "join of %pI6 failed: %d\n",
				   mc->mgid.raw, ret);
		ipoib_drop_queue(priv, &ready);
	} else {
		if (is_bcast) {
			netdev_dbg(priv->dev, "joined the broadcast group, MLID 0x%04x Q_Key 0x%x\n",
				   be16_to_cpu(rec->mlid), be32_to_cpu(rec->qkey));
			if (test_bit(IPOIB_FLAG_UP, &priv->flags))
				netif_carrier_on(priv->dev);
		}
		ipoib_requeue(priv, &ready);
	}
	complete(&mc->done);
}

/* Starts the join of @mc, which the caller set JOINING. Process context. */
static void ipoib_mcast_join(struct ipoib_dev *priv, struct ipoib_mcast *mc,
			     const struct ib_sa_mcmember_rec *bcast)
{
	struct ib_sa_mcmember_rec rec = {};
	ib_sa_comp_mask mask = IB_SA_MCMEMBER_REC_MGID |
			       IB_SA_MCMEMBER_REC_PORT_GID |
			       IB_SA_MCMEMBER_REC_PKEY |
			       IB_SA_MCMEMBER_REC_JOIN_STATE;
	int ret;

	rec.mgid = mc->mgid;
	rec.port_gid = priv->gid;
	rec.pkey = cpu_to_be16(priv->pkey);
	rec.join_state = mc->sendonly ? IPOIB_JOIN_SENDONLY : IPOIB_JOIN_FULL;
	if (bcast && !mc->sendonly) {
		/* Created with the broadcast group's parameters if new. */
		rec.qkey = bcast->qkey;
		rec.mtu_selector = IB_SA_EQ;
		rec.mtu = bcast->mtu;
		rec.traffic_class = bcast->traffic_class;
		rec.rate_selector = IB_SA_EQ;
		rec.rate = bcast->rate;
		rec.sl = bcast->sl;
		rec.flow_label = bcast->flow_label;
		rec.hop_limit = bcast->hop_limit;
		mask |= IB_SA_MCMEMBER_REC_QKEY | IB_SA_MCMEMBER_REC_MTU_SELECTOR |
			IB_SA_MCMEMBER_REC_MTU | IB_SA_MCMEMBER_REC_TRAFFIC_CLASS |
			IB_SA_MCMEMBER_REC_RATE_SELECTOR | IB_SA_MCMEMBER_REC_RATE |
			IB_SA_MCMEMBER_REC_SL | IB_SA_MCMEMBER_REC_FLOW_LABEL |
			IB_SA_MCMEMBER_REC_HOP_LIMIT;
	}

	reinit_completion(&mc->done);
	ret = ib_sa_mcmember_rec_set(priv->ca, priv->port, &rec, mask,
				     IPOIB_SA_TIMEOUT_MS, GFP_KERNEL,
				     ipoib_mcast_join_done, mc, &mc->query);
	if (ret < 0) {
		struct sk_buff_head drop;

		/* Never called back: the join ends here. */
		skb_queue_head_init(&drop);
		spin_lock_bh(&priv->lock);
		mc->state = IPOIB_MC_FAILED;
		mc->retry_at = jiffies + mc->backoff * HZ;
		mc->backoff = min(mc->backoff * 2, IPOIB_MC_BACKOFF_MAX);
		skb_queue_splice_init(&mc->queue, &drop);
		spin_unlock_bh(&priv->lock);
		ipoib_drop_queue(priv, &drop);
		complete(&mc->done);
		return;
	}
	mc->query_id = ret;
}

static void ipoib_mcast_leave_done(int status, struct ib_sa_mcmember_rec *rec,
				   void *context)
{
	struct ipoib_mcast *mc = context;

	complete(&mc->done);
}

/*
 * Takes a group off the fabric: detaches the QP and, if @leave, sends the
 * SubnAdmDelete. The group is off priv->mcasts and has no query in
 * flight. Process context.
 *
 * Return: true when a query was sent: mc->done completes with its answer.
 */
static bool ipoib_mcast_leave(struct ipoib_dev *priv, struct ipoib_mcast *mc,
			      bool leave)
{
	struct ib_sa_mcmember_rec rec = {};
	int ret;

	if (mc->attached) {
		ret = ib_detach_mcast(priv->qp, &mc->rec.mgid, be16_to_cpu(mc->rec.mlid));
		if (ret)
			netdev_warn(priv->dev, "detach from %pI6 failed: %d\n",
				    mc->mgid.raw, ret);
		mc->attached = false;
	}
	if (!leave || mc->state != IPOIB_MC_JOINED)
		return false;
	mc->state = IPOIB_MC_LEAVING;
	rec.mgid = mc->mgid;
	rec.port_gid = priv->gid;
	rec.pkey = cpu_to_be16(priv->pkey);
	rec.join_state = mc->sendonly ? IPOIB_JOIN_SENDONLY : IPOIB_JOIN_FULL;
	reinit_completion(&mc->done);
	ret = ib_sa_mcmember_rec_delete(priv->ca, priv->port, &rec,
					IB_SA_MCMEMBER_REC_MGID |
					IB_SA_MCMEMBER_REC_PORT_GID |
					IB_SA_MCMEMBER_REC_PKEY |
					IB_SA_MCMEMBER_REC_JOIN_STATE,
					IPOIB_LEAVE_TIMEOUT_MS, GFP_KERNEL,
					ipoib_mcast_leave_done, mc, &mc->query);
	if (ret < 0)
		complete(&mc->done);
	return true;
}

/*
 * Leaves and frees every group of @list (off priv->mcasts). A group's
 * done has been completed once more than it was waited for whenever no
 * query is in flight (ipoib_mcast_alloc() completes it once, every query
 * re-arms it and completes it once): each wait below consumes that.
 */
static void ipoib_mcast_reap(struct ipoib_dev *priv, struct list_head *list,
			     bool leave)
{
	struct ipoib_mcast *mc, *tmp;

	/* Joins in flight end first (cancelled: -EINTR). */
	list_for_each_entry(mc, list, list) {
		if (mc->state == IPOIB_MC_JOINING)
			ib_sa_cancel_query(mc->query_id, mc->query);
	}
	list_for_each_entry(mc, list, list)
		wait_for_completion(&mc->done);
	list_for_each_entry(mc, list, list)
		mc->leave_sent = ipoib_mcast_leave(priv, mc, leave);
	list_for_each_entry_safe(mc, tmp, list, list) {
		if (mc->leave_sent)
			wait_for_completion(&mc->done);
		list_del(&mc->list);
		ipoib_mcast_free(mc);
	}
}

/**
 * ipoib_mcast_flush() - drop every group
 * @priv: the interface
 * @leave: also tell the SA (SubnAdmDelete); false after the port went
 *	down or the SM forgot its records
 *
 * Process context, on priv->wq or with the mcast task cancelled. Waits for
 * every query it started or cancelled.
 */
void ipoib_mcast_flush(struct ipoib_dev *priv, bool leave)
{
	LIST_HEAD(list);

	spin_lock_bh(&priv->lock);
	list_splice_init(&priv->mcasts, &list);
	priv->broadcast = NULL;
	spin_unlock_bh(&priv->lock);
	ipoib_mcast_reap(priv, &list, leave);
}

/*
 * The mc-list diff: adds an IDLE group for every listed MGID not known,
 * turns send-only groups that are now listed into full ones, and moves
 * full groups no longer listed (and not joining) to @gone.
 */
static void ipoib_mcast_sync(struct ipoib_dev *priv, struct list_head *gone)
{
	struct net_device *dev = priv->dev;
	struct ipoib_mcast *mc, *tmp;
	struct netdev_hw_addr *ha;
	LIST_HEAD(fresh);

	netif_addr_lock_bh(dev);
	spin_lock(&priv->lock);
	list_for_each_entry(mc, &priv->mcasts, list)
		mc->listed = false;
	netdev_for_each_mc_addr(ha, dev) {
		const union ib_gid *mgid = ipoib_hwaddr_gid(ha->addr);

		if (!memcmp(ha->addr + 4, dev->broadcast + 4, 16))
			continue;
		mc = ipoib_mcast_find(priv, mgid);
		if (mc && mc->sendonly && mc->state != IPOIB_MC_JOINING) {
			/* Rejoined as a full member below. */
			list_move_tail(&mc->list, gone);
			mc = NULL;
		}
		if (mc) {
			mc->listed = true;
			continue;
		}
		mc = ipoib_mcast_alloc(priv, mgid, false, GFP_ATOMIC);
		if (!mc)
			continue;
		mc->listed = true;
		list_add_tail(&mc->list, &fresh);
	}
	list_splice_tail(&fresh, &priv->mcasts);
	list_for_each_entry_safe(mc, tmp, &priv->mcasts, list) {
		if (mc == priv->broadcast || mc->sendonly || mc->listed ||
		    mc->state == IPOIB_MC_JOINING)
			continue;
		list_move_tail(&mc->list, gone);
	}
	spin_unlock(&priv->lock);
	netif_addr_unlock_bh(dev);
}

/**
 * ipoib_mcast_task() - join what needs joining, leave what is gone
 * @work: &ipoib_dev.mcast_task.work
 *
 * On priv->wq. The broadcast group first: the others wait for its
 * parameters. Failed joins come back after their backoff.
 */
void ipoib_mcast_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(to_delayed_work(work),
					      struct ipoib_dev, mcast_task);
	struct ib_sa_mcmember_rec bcast_rec;
	struct ipoib_mcast *mc, *next_mc;
	unsigned long next = 0;
	struct ib_port_attr attr;
	bool have_bcast;
	LIST_HEAD(gone);

	if (!test_bit(IPOIB_FLAG_UP, &priv->flags))
		return;
	if (ib_query_port(priv->ca, priv->port, &attr) || attr.state != IB_PORT_ACTIVE)
		return;	/* PORT_ACTIVE brings us back */
	priv->lid = attr.lid;

	ipoib_mcast_sync(priv, &gone);
	ipoib_mcast_reap(priv, &gone, true);

	spin_lock_bh(&priv->lock);
	if (!priv->broadcast) {
		spin_unlock_bh(&priv->lock);
		mc = ipoib_mcast_alloc(priv, ipoib_hwaddr_gid(priv->dev->broadcast),
				       false, GFP_KERNEL);
		if (!mc)
			return;
		spin_lock_bh(&priv->lock);
		priv->broadcast = mc;
		list_add(&mc->list, &priv->mcasts);
	}
	have_bcast = priv->broadcast->state == IPOIB_MC_JOINED;
	if (have_bcast)
		bcast_rec = priv->broadcast->rec;
	spin_unlock_bh(&priv->lock);

	/*
	 * Pick one group at a time under the lock, join it outside. Groups
	 * are freed only on this workqueue (or with it cancelled), so @mc
	 * stays valid; the list may grow meanwhile (xmit's send-only groups).
	 */
	for (;;) {
		next_mc = NULL;
		spin_lock_bh(&priv->lock);
		list_for_each_entry(mc, &priv->mcasts, list) {
			if (mc->state == IPOIB_MC_FAILED) {
				if (time_before(jiffies, mc->retry_at)) {
					if (!next || time_before(mc->retry_at, next))
						next = mc->retry_at;
					continue;
				}
				mc->state = IPOIB_MC_IDLE;
			}
			if (mc->state != IPOIB_MC_IDLE)
				continue;
			if (mc != priv->broadcast && !have_bcast)
				continue;
			next_mc = mc;
			break;
		}
		if (next_mc)
			next_mc->state = IPOIB_MC_JOINING;
		spin_unlock_bh(&priv->lock);
		if (!next_mc)
			break;
		ipoib_mcast_join(priv, next_mc, have_bcast ? &bcast_rec : NULL);
		if (!have_bcast)
			break;	/* the rest after the broadcast group's answer */
	}

	if (next) {
		spin_lock_bh(&priv->lock);
		if (test_bit(IPOIB_FLAG_UP, &priv->flags))
			queue_delayed_work(priv->wq, &priv->mcast_task,
					   max_t(long, next - jiffies, 1));
		spin_unlock_bh(&priv->lock);
	}
}

/**
 * ipoib_mcast_send() - send to a group
 * @priv: the interface
 * @hwaddr: the destination hardware address (QPN 0xffffff, an MGID)
 * @skb: encap and payload, the pseudo header pulled
 *
 * From ndo_start_xmit. A group not joined yet queues the packet (a few at
 * most); an unknown one is joined as a send-only member, if it is an IPoIB
 * group or umcast is on.
 *
 * Return: NETDEV_TX_OK; @skb is always consumed.
 */
netdev_tx_t ipoib_mcast_send(struct ipoib_dev *priv, const u8 *hwaddr,
			     struct sk_buff *skb)
{
	const union ib_gid *mgid = ipoib_hwaddr_gid(hwaddr);
	struct ipoib_ah *ah = NULL;
	struct ipoib_mcast *mc;
	bool kick = false;

	spin_lock_bh(&priv->lock);
	if (!priv->broadcast || priv->broadcast->state != IPOIB_MC_JOINED)
		goto drop;
	mc = ipoib_mcast_find(priv, mgid);
	if (!mc) {
		if (!ipoib_mgid_is_ipoib(mgid) &&
		    !test_bit(IPOIB_FLAG_UMCAST, &priv->flags))
			goto drop;
		mc = ipoib_mcast_alloc(priv, mgid, true, GFP_ATOMIC);
		if (!mc)
			goto drop;
		list_add_tail(&mc->list, &priv->mcasts);
	}
	if (mc->state == IPOIB_MC_JOINED && mc->ah) {
		ah = mc->ah;
		kref_get(&ah->ref);
	} else if (skb_queue_len(&mc->queue) < IPOIB_MAX_QUEUED &&
		   mc->state != IPOIB_MC_LEAVING) {
		__skb_queue_tail(&mc->queue, skb);
		skb = NULL;
		kick = mc->state == IPOIB_MC_IDLE ||
		       (mc->state == IPOIB_MC_FAILED &&
			time_after_eq(jiffies, mc->retry_at));
	} else {
		goto drop;
	}
	if (kick && test_bit(IPOIB_FLAG_UP, &priv->flags))
		mod_delayed_work(priv->wq, &priv->mcast_task, 0);
	spin_unlock_bh(&priv->lock);

	if (ah)
		ipoib_send_and_put(priv, skb, ah, IB_MULTICAST_QPN);
	return NETDEV_TX_OK;

drop:
	spin_unlock_bh(&priv->lock);
	ipoib_tx_drop(priv, skb);
	return NETDEV_TX_OK;
}
