// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's unicast paths: one object per destination GID, in a hash
 * table, holding the SA's PathRecord and the address handle made from it.
 * A send to a GID without a valid path queues the packet (a few at most)
 * and has the path task ask ib_sa (PathRecord: DGID, SGID, P_Key, one
 * path); the answer sends the queued packets again through the device.
 * The QPN comes from the hardware address of each packet, not the path.
 * In connected mode a VALID path also owns the active connection to its
 * GID (ipoib_cm.c), retired when the path is flushed.
 *
 * States (enum ipoib_path_state):
 *   NEW --task--> QUERYING --ok--> VALID --flush--> (freed)
 *                          \-fail-> FAILED --1 s, next send--> NEW
 */
#include <linux/jhash.h>
#include <linux/slab.h>

#include "ipoib.h"

#define IPOIB_PATH_RETRY	HZ

static u32 ipoib_gid_hash(const union ib_gid *gid)
{
	return jhash(gid->raw, sizeof(gid->raw), 0);
}

/* Caller holds priv->lock. */
static struct ipoib_path *ipoib_path_find(struct ipoib_dev *priv,
					  const union ib_gid *gid)
{
	struct ipoib_path *path;

	hash_for_each_possible(priv->paths, path, node, ipoib_gid_hash(gid))
		if (!memcmp(path->dgid.raw, gid->raw, sizeof(gid->raw)))
			return path;
	return NULL;
}

/**
 * ipoib_path_init() - set up an interface's path table
 * @priv: the interface
 */
void ipoib_path_init(struct ipoib_dev *priv)
{
	hash_init(priv->paths);
}

/**
 * ipoib_requeue() - send queued packets again, now that their path or
 * group is known
 * @priv: the interface
 * @list: the packets, their pseudo header pulled; emptied
 *
 * Process context, no lock held: each packet goes through the qdisc and
 * ndo_start_xmit again, with its pseudo header restored (it is still in
 * the headroom).
 */
void ipoib_requeue(struct ipoib_dev *priv, struct sk_buff_head *list)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(list))) {
		skb_push(skb, IPOIB_ALEN);
		skb->dev = priv->dev;
		dev_queue_xmit(skb);
	}
}

/* The SA's answer to a PathRecord query; its workqueue, process context. */
static void ipoib_path_done(int status, struct ib_sa_path_rec *rec, void *context)
{
	struct ipoib_path *path = context;
	struct ipoib_dev *priv = path->priv;
	struct ipoib_ah *ah = NULL, *old = NULL;
	struct sk_buff_head ready;
	struct ib_ah_attr attr = {};
	int ret = status;

	skb_queue_head_init(&ready);
	if (!ret) {
		attr.dlid = be16_to_cpu(rec->dlid);
		attr.sl = rec->sl;
		attr.port_num = priv->port;
		ah = ipoib_ah_create(priv, &attr);
		if (IS_ERR(ah)) {
			ret = PTR_ERR(ah);
			ah = NULL;
		}
	}

	spin_lock_bh(&priv->lock);
	if (!ret) {
		path->rec = *rec;
		old = path->ah;
		path->ah = ah;
		path->state = IPOIB_PATH_VALID;
	} else {
		path->state = IPOIB_PATH_FAILED;
		path->retry_at = jiffies + IPOIB_PATH_RETRY;
	}
	skb_queue_splice_init(&path->queue, &ready);
	spin_unlock_bh(&priv->lock);

	ipoib_ah_put(old);
	if (ret) {
		if (ret != -EINTR)
			netdev_dbg(priv->dev, "no path to %pI6: %d\n", path->dgid.raw, ret);
		ipoib_drop_queue(priv, &ready);
	} else {
		ipoib_requeue(priv, &ready);
	}
	complete(&path->done);
}

static void ipoib_path_query(struct ipoib_dev *priv, struct ipoib_path *path)
{
	struct ib_sa_path_rec rec = {};
	int ret;

	rec.dgid = path->dgid;
	rec.sgid = priv->gid;
	rec.pkey = cpu_to_be16(priv->pkey);
	rec.numb_path = 1;
	reinit_completion(&path->done);
	ret = ib_sa_path_rec_get(priv->ca, priv->port, &rec,
				 IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
				 IB_SA_PATH_REC_NUMB_PATH |
				 IB_SA_PATH_REC_TRAFFIC_CLASS |
				 IB_SA_PATH_REC_PKEY,
				 IPOIB_SA_TIMEOUT_MS, GFP_KERNEL,
				 ipoib_path_done, path, &path->query);
	if (ret < 0) {
		/* Never called back. */
		ipoib_path_done(ret, NULL, path);
		return;
	}
	path->query_id = ret;
}

/**
 * ipoib_path_task() - start the queries of NEW paths
 * @work: &ipoib_dev.path_task
 *
 * On priv->wq: paths are freed only there (or with it cancelled), so a
 * path picked under the lock stays valid outside it.
 */
void ipoib_path_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(work, struct ipoib_dev, path_task);
	struct ipoib_path *path, *pick;
	unsigned int bkt;

	for (;;) {
		pick = NULL;
		spin_lock_bh(&priv->lock);
		if (test_bit(IPOIB_FLAG_UP, &priv->flags)) {
			hash_for_each(priv->paths, bkt, path, node) {
				if (path->state == IPOIB_PATH_NEW) {
					pick = path;
					pick->state = IPOIB_PATH_QUERYING;
					break;
				}
			}
		}
		spin_unlock_bh(&priv->lock);
		if (!pick)
			return;
		ipoib_path_query(priv, pick);
	}
}

/**
 * ipoib_path_flush() - forget every path
 * @priv: the interface
 *
 * Process context, on priv->wq or with the path task cancelled. Queries in
 * flight are cancelled and awaited; queued packets are dropped.
 */
void ipoib_path_flush(struct ipoib_dev *priv)
{
	struct ipoib_path *path;
	struct hlist_node *tmp;
	unsigned int bkt;
	HLIST_HEAD(list);

	spin_lock_bh(&priv->lock);
	hash_for_each_safe(priv->paths, bkt, tmp, path, node) {
		hash_del(&path->node);
		hlist_add_head(&path->node, &list);
		if (path->cm)
			ipoib_cm_retire_locked(priv, path->cm);
		if (path->state == IPOIB_PATH_QUERYING)
			ib_sa_cancel_query(path->query_id, path->query);
	}
	spin_unlock_bh(&priv->lock);

	hlist_for_each_entry_safe(path, tmp, &list, node) {
		wait_for_completion(&path->done);
		hlist_del(&path->node);
		ipoib_drop_queue(priv, &path->queue);
		ipoib_ah_put(path->ah);
		kfree(path);
	}
}

/**
 * ipoib_unicast_send() - send to one port's QP
 * @priv: the interface
 * @hwaddr: the destination hardware address (QPN and GID)
 * @skb: encap and payload, the pseudo header pulled
 *
 * From ndo_start_xmit.
 *
 * Return: NETDEV_TX_OK; @skb is always consumed.
 */
netdev_tx_t ipoib_unicast_send(struct ipoib_dev *priv, const u8 *hwaddr,
			       struct sk_buff *skb)
{
	const union ib_gid *gid = ipoib_hwaddr_gid(hwaddr);
	struct ipoib_ah *ah = NULL;
	struct ipoib_path *path;
	bool kick = false;

	spin_lock_bh(&priv->lock);
	path = ipoib_path_find(priv, gid);
	if (!path) {
		path = kzalloc(sizeof(*path), GFP_ATOMIC);
		if (!path)
			goto drop;
		path->dgid = *gid;
		path->priv = priv;
		path->state = IPOIB_PATH_NEW;
		skb_queue_head_init(&path->queue);
		init_completion(&path->done);
		complete(&path->done);	/* no query in flight */
		hash_add(priv->paths, &path->node, ipoib_gid_hash(gid));
	}
	if (path->state == IPOIB_PATH_FAILED &&
	    time_after_eq(jiffies, path->retry_at))
		path->state = IPOIB_PATH_NEW;

	switch (path->state) {
	case IPOIB_PATH_VALID:
		if (ipoib_cm_wanted(priv, hwaddr) &&
		    ipoib_cm_send_locked(priv, path, hwaddr, skb)) {
			spin_unlock_bh(&priv->lock);
			return NETDEV_TX_OK;
		}
		ah = path->ah;
		kref_get(&ah->ref);
		break;
	case IPOIB_PATH_NEW:
		kick = true;
		fallthrough;
	case IPOIB_PATH_QUERYING:
		if (skb_queue_len(&path->queue) >= IPOIB_MAX_QUEUED)
			goto drop;
		__skb_queue_tail(&path->queue, skb);
		skb = NULL;
		break;
	default:
		goto drop;
	}
	if (kick && test_bit(IPOIB_FLAG_UP, &priv->flags))
		queue_work(priv->wq, &priv->path_task);
	spin_unlock_bh(&priv->lock);

	if (ah)
		ipoib_send_and_put(priv, skb, ah, ipoib_hwaddr_qpn(hwaddr));
	return NETDEV_TX_OK;

drop:
	spin_unlock_bh(&priv->lock);
	ipoib_tx_drop(priv, skb);
	return NETDEV_TX_OK;
}
