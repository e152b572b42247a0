// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's verbs side: the PD, a local DMA MR, one CQ for sends and
 * receives, the UD QP; the send ring (filled by xmit), the receive ring
 * (GRH room in every buffer) and the NAPI poll that empties the CQ; the
 * address handles shared by paths, groups and in-flight sends.
 *
 * Contexts: the CQ's completion handler runs in interrupt context and only
 * schedules NAPI. Posting never sleeps. ipoib_ib_up/down run in process
 * context under RTNL (ndo_open/ndo_stop).
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/slab.h>

#include "ipoib.h"

#define IPOIB_POLL_BATCH	16
#define IPOIB_DRAIN_MS		5000
#define IPOIB_WR_RECV		BIT_ULL(31)	/* wr_id of a receive */

/* --- address handles ---------------------------------------------------- */

/**
 * ipoib_ah_create() - make a shared address handle
 * @priv: the interface
 * @attr: the address vector
 *
 * Process context.
 *
 * Return: the handle with one reference, or an ERR_PTR.
 */
struct ipoib_ah *ipoib_ah_create(struct ipoib_dev *priv, struct ib_ah_attr *attr)
{
	struct ipoib_ah *ah;
	int ret;

	ah = kzalloc(sizeof(*ah), GFP_KERNEL);
	if (!ah)
		return ERR_PTR(-ENOMEM);
	ah->ah = ib_create_ah(priv->pd, attr);
	if (IS_ERR(ah->ah)) {
		ret = PTR_ERR(ah->ah);
		kfree(ah);
		return ERR_PTR(ret);
	}
	kref_init(&ah->ref);
	ah->priv = priv;
	INIT_LIST_HEAD(&ah->dead);
	return ah;
}

static void ipoib_ah_release(struct kref *ref)
{
	struct ipoib_ah *ah = container_of(ref, struct ipoib_ah, ref);
	struct ipoib_dev *priv = ah->priv;

	spin_lock_bh(&priv->ah_lock);
	list_add_tail(&ah->dead, &priv->dead_ahs);
	spin_unlock_bh(&priv->ah_lock);
	queue_work(priv->wq, &priv->reap_task);
}

/**
 * ipoib_ah_put() - drop a reference to an address handle
 * @ah: the handle, or NULL
 *
 * Any context; the last put hands the handle to the reaper.
 */
void ipoib_ah_put(struct ipoib_ah *ah)
{
	if (ah)
		kref_put(&ah->ref, ipoib_ah_release);
}

/**
 * ipoib_reap_ahs() - destroy the address handles nobody uses any more
 * @priv: the interface
 *
 * Process context.
 */
void ipoib_reap_ahs(struct ipoib_dev *priv)
{
	struct ipoib_ah *ah, *tmp;
	LIST_HEAD(dead);

	spin_lock_bh(&priv->ah_lock);
	list_splice_init(&priv->dead_ahs, &dead);
	spin_unlock_bh(&priv->ah_lock);
	list_for_each_entry_safe(ah, tmp, &dead, dead) {
		ib_destroy_ah(ah->ah);
		kfree(ah);
	}
}

/**
 * ipoib_reap_task() - the reaper's work item
 * @work: &ipoib_dev.reap_task
 */
void ipoib_reap_task(struct work_struct *work)
{
	ipoib_reap_ahs(container_of(work, struct ipoib_dev, reap_task));
}

/* --- resources ------------------------------------------------------------- */

static void ipoib_cq_event(struct ib_cq *cq, void *context)
{
	struct ipoib_dev *priv = context;

	napi_schedule(&priv->napi);
}

static void ipoib_qp_event(struct ib_event *event, void *context)
{
	struct ipoib_dev *priv = context;

	netdev_warn(priv->dev, "QP event %s\n", ib_event_msg(event->event));
}

/**
 * ipoib_ib_init() - allocate the verbs resources of an interface
 * @priv: the interface (ca, port, rings sizes set)
 *
 * Process context. The QP stays in RESET until ipoib_ib_up().
 *
 * Return: 0 or a negative errno (nothing left allocated).
 */
int ipoib_ib_init(struct ipoib_dev *priv)
{
	struct ib_qp_init_attr init = {
		.cap = {
			.max_send_wr = priv->tx_size,
			.max_recv_wr = priv->rx_size,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UD,
	};
	int ret;

	priv->pd = ib_alloc_pd(priv->ca);
	ret = PTR_ERR_OR_ZERO(priv->pd);
	if (ret)
		return ret;
	priv->mr = ib_get_dma_mr(priv->pd, IB_ACCESS_LOCAL_WRITE);
	ret = PTR_ERR_OR_ZERO(priv->mr);
	if (ret)
		goto err_pd;
	priv->cq = ib_create_cq(priv->ca, ipoib_cq_event, NULL, priv,
				priv->tx_size + priv->rx_size);
	ret = PTR_ERR_OR_ZERO(priv->cq);
	if (ret)
		goto err_mr;
	init.send_cq = priv->cq;
	init.recv_cq = priv->cq;
	init.event_handler = ipoib_qp_event;
	init.qp_context = priv;
	priv->qp = ib_create_qp(priv->pd, &init);
	ret = PTR_ERR_OR_ZERO(priv->qp);
	if (ret)
		goto err_cq;

	/* The rings last: both or neither. */
	priv->rx_ring = kcalloc(priv->rx_size, sizeof(*priv->rx_ring), GFP_KERNEL);
	priv->tx_ring = kcalloc(priv->tx_size, sizeof(*priv->tx_ring), GFP_KERNEL);
	if (priv->rx_ring && priv->tx_ring)
		return 0;
	kfree(priv->tx_ring);
	kfree(priv->rx_ring);
	ret = -ENOMEM;
	ib_destroy_qp(priv->qp);
err_cq:
	ib_destroy_cq(priv->cq);
err_mr:
	ib_dereg_mr(priv->mr);
err_pd:
	ib_dealloc_pd(priv->pd);
	return ret;
}

/**
 * ipoib_ib_cleanup() - free what ipoib_ib_init() allocated
 * @priv: the interface, down (ipoib_ib_down() done)
 *
 * Process context.
 */
void ipoib_ib_cleanup(struct ipoib_dev *priv)
{
	ipoib_reap_ahs(priv);
	if (ib_destroy_qp(priv->qp))
		netdev_warn(priv->dev, "destroying the QP failed\n");
	ib_destroy_cq(priv->cq);
	ib_dereg_mr(priv->mr);
	ib_dealloc_pd(priv->pd);
	kfree(priv->tx_ring);
	kfree(priv->rx_ring);
}

/* --- receive ring ----------------------------------------------------------- */

/**
 * ipoib_dma() - the device to map buffers for
 * @priv: the interface
 *
 * Return: the HCA's DMA device.
 */
struct device *ipoib_dma(struct ipoib_dev *priv)
{
	return priv->ca->dma_device;
}

/*
 * Gives the receive slot @b a fresh skb of @headroom + @size bytes, the
 * @size after the headroom mapped for the HCA to write; does not post it.
 * Shared by the UD ring and the connected mode's SRQ ring.
 */
int ipoib_rx_buf_fill(struct ipoib_dev *priv, struct ipoib_rx_buf *b,
		      unsigned int size, unsigned int headroom, gfp_t gfp)
{
	struct sk_buff *skb;
	dma_addr_t map;

	skb = __netdev_alloc_skb(priv->dev, size + headroom, gfp);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, headroom);
	map = dma_map_single(ipoib_dma(priv), skb->data, size, DMA_FROM_DEVICE);
	if (dma_mapping_error(ipoib_dma(priv), map)) {
		dev_kfree_skb_any(skb);
		return -EIO;
	}
	b->skb = skb;
	b->mapping = map;
	return 0;
}

/* Unmaps and frees the buffer of slot @b (@size as filled), if it has one. */
void ipoib_rx_buf_release(struct ipoib_dev *priv, struct ipoib_rx_buf *b,
			  unsigned int size)
{
	if (!b->skb)
		return;
	dma_unmap_single(ipoib_dma(priv), b->mapping, size, DMA_FROM_DEVICE);
	dev_kfree_skb_any(b->skb);
	b->skb = NULL;
}

static int ipoib_alloc_rx(struct ipoib_dev *priv, unsigned int i, gfp_t gfp)
{
	return ipoib_rx_buf_fill(priv, &priv->rx_ring[i], priv->rx_buf_size, 0, gfp);
}

static void ipoib_free_rx(struct ipoib_dev *priv, unsigned int i)
{
	ipoib_rx_buf_release(priv, &priv->rx_ring[i], priv->rx_buf_size);
}

static int ipoib_post_rx(struct ipoib_dev *priv, unsigned int i)
{
	struct ib_sge sge = {
		.addr = priv->rx_ring[i].mapping,
		.length = priv->rx_buf_size,
		.lkey = priv->mr->lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i | IPOIB_WR_RECV,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ib_recv_wr *bad;
	int ret;

	ret = ib_post_recv(priv->qp, &wr, &bad);
	if (!ret)
		priv->rx_posted++;
	return ret;
}

/**
 * ipoib_hand_up() - give a received packet to the stack
 * @priv: the interface
 * @napi: the NAPI context to use GRO through, or NULL
 * @skb: data at a zeroed pseudo header, then the encap and the payload;
 *	pkt_type set
 *
 * Softirq context (NAPI, or bottom halves disabled).
 */
void ipoib_hand_up(struct ipoib_dev *priv, struct napi_struct *napi,
		   struct sk_buff *skb)
{
	struct net_device *dev = priv->dev;
	struct ipoib_encap *encap;

	skb_reset_mac_header(skb);
	encap = (struct ipoib_encap *)(skb->data + IPOIB_ALEN);
	skb->protocol = encap->proto;
	skb_pull(skb, IPOIB_HARD_LEN);
	skb_reset_network_header(skb);
	skb->dev = dev;

	dev->stats.rx_packets++;
	dev->stats.rx_bytes += skb->len;
	if (skb->pkt_type != PACKET_HOST)
		dev->stats.multicast++;
	if (napi)
		napi_gro_receive(napi, skb);
	else
		netif_receive_skb(skb);
}

/*
 * Hands a received UD packet to the stack: drops the GRH and puts a
 * zeroed pseudo header where the GRH's last 20 bytes were (so the MAC
 * header is IPOIB_HARD_LEN long, as header_ops builds it).
 */
static void ipoib_deliver(struct ipoib_dev *priv, struct sk_buff *skb,
			  struct ib_wc *wc)
{
	struct net_device *dev = priv->dev;
	const struct ib_grh *grh = (const struct ib_grh *)skb->data;

	skb_put(skb, wc->byte_len);
	if (wc->byte_len < IPOIB_GRH_LEN + IPOIB_ENCAP_LEN)
		goto drop;

	if ((wc->wc_flags & IB_WC_GRH) && grh->dgid.raw[0] == 0xff) {
		if (!memcmp(grh->dgid.raw, dev->broadcast + 4, 16))
			skb->pkt_type = PACKET_BROADCAST;
		else
			skb->pkt_type = PACKET_MULTICAST;
	} else {
		skb->pkt_type = PACKET_HOST;
	}

	skb_pull(skb, IPOIB_GRH_LEN - IPOIB_ALEN);
	memset(skb->data, 0, IPOIB_ALEN);
	ipoib_hand_up(priv, &priv->napi, skb);
	return;

drop:
	dev->stats.rx_length_errors++;
	dev_kfree_skb_any(skb);
}

static void ipoib_rx_completion(struct ipoib_dev *priv, struct ib_wc *wc,
				bool draining)
{
	unsigned int i = wc->wr_id & ~IPOIB_WR_RECV;
	struct sk_buff *skb;
	dma_addr_t map;

	if (i >= priv->rx_size || !priv->rx_ring[i].skb) {
		netdev_warn(priv->dev, "receive completion for slot %u\n", i);
		return;
	}
	priv->rx_posted--;
	skb = priv->rx_ring[i].skb;
	map = priv->rx_ring[i].mapping;

	if (wc->status != IB_WC_SUCCESS || draining) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			netdev_dbg(priv->dev, "receive error %s\n",
				   ib_wc_status_msg(wc->status));
		if (draining || wc->status == IB_WC_WR_FLUSH_ERR) {
			ipoib_free_rx(priv, i);
			return;
		}
		priv->dev->stats.rx_errors++;
		goto repost;
	}

	/* Our own multicast, looped back by the fabric: never ours to see. */
	if (wc->src_qp == priv->qp->qp_num && wc->slid == priv->lid)
		goto repost;

	/* A fresh buffer first: without one the packet is dropped. */
	if (ipoib_alloc_rx(priv, i, GFP_ATOMIC)) {
		priv->dev->stats.rx_dropped++;
		priv->rx_ring[i].skb = skb;
		priv->rx_ring[i].mapping = map;
		goto repost;
	}
	dma_unmap_single(ipoib_dma(priv), map, priv->rx_buf_size, DMA_FROM_DEVICE);
	ipoib_deliver(priv, skb, wc);

repost:
	if (ipoib_post_rx(priv, i)) {
		netdev_warn(priv->dev, "reposting receive %u failed\n", i);
		ipoib_free_rx(priv, i);
	}
}

/* --- send ring -------------------------------------------------------------- */

static unsigned int ipoib_tx_outstanding(struct ipoib_dev *priv)
{
	return READ_ONCE(priv->tx_head) - READ_ONCE(priv->tx_tail);
}

static void ipoib_tx_completion(struct ipoib_dev *priv, struct ib_wc *wc)
{
	unsigned int i = wc->wr_id & (priv->tx_size - 1);
	struct ipoib_tx_buf *b = &priv->tx_ring[i];

	if (wc->wr_id != (priv->tx_tail & (priv->tx_size - 1)) || !b->skb) {
		netdev_warn(priv->dev, "send completion for slot %llu, expected %u\n",
			    wc->wr_id, priv->tx_tail & (priv->tx_size - 1));
		return;
	}
	dma_unmap_single(ipoib_dma(priv), b->mapping, b->skb->len, DMA_TO_DEVICE);
	if (wc->status == IB_WC_SUCCESS) {
		priv->dev->stats.tx_packets++;
		priv->dev->stats.tx_bytes += b->skb->len;
	} else {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			netdev_dbg(priv->dev, "send error %s\n",
				   ib_wc_status_msg(wc->status));
		priv->dev->stats.tx_errors++;
	}
	dev_kfree_skb_any(b->skb);
	b->skb = NULL;
	ipoib_ah_put(b->ah);
	b->ah = NULL;

	/* The slot is free before the tail moves. */
	smp_store_release(&priv->tx_tail, priv->tx_tail + 1);
	/*
	 * The tail's store before the queue-stopped test; pairs with the
	 * barrier after netif_stop_queue() in ipoib_post_send().
	 */
	smp_mb();
	if (netif_queue_stopped(priv->dev) &&
	    ipoib_tx_outstanding(priv) <= priv->tx_size / 2 &&
	    test_bit(IPOIB_FLAG_QP_READY, &priv->flags))
		netif_wake_queue(priv->dev);
}

/**
 * ipoib_post_send() - post one packet on the UD QP
 * @priv: the interface
 * @skb: encap header and payload (the pseudo header pulled)
 * @ah: the destination's handle; a reference is taken for the send
 * @qpn: the destination QPN (0xffffff for a group)
 *
 * Called from ndo_start_xmit only (the queue's xmit lock held). Never
 * sleeps. On success the ring owns @skb; on failure the caller frees it.
 *
 * Return: 0 or a negative errno.
 */
int ipoib_post_send(struct ipoib_dev *priv, struct sk_buff *skb,
		    struct ipoib_ah *ah, u32 qpn)
{
	unsigned int slot = priv->tx_head & (priv->tx_size - 1);
	struct ipoib_tx_buf *b = &priv->tx_ring[slot];
	struct ib_send_wr wr = {}, *bad;
	struct ib_sge sge;
	dma_addr_t map;
	int ret;

	if (skb->len > priv->mcast_mtu + 0U || skb->len > priv->max_ib_mtu + 0U)
		return -EMSGSIZE;
	if (ipoib_tx_outstanding(priv) >= priv->tx_size) {
		netif_stop_queue(priv->dev);
		return -ENOBUFS;
	}
	map = dma_map_single(ipoib_dma(priv), skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(ipoib_dma(priv), map))
		return -EIO;

	sge.addr = map;
	sge.length = skb->len;
	sge.lkey = priv->mr->lkey;
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.ud.ah = ah->ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = priv->qkey;

	b->skb = skb;
	b->mapping = map;
	kref_get(&ah->ref);
	b->ah = ah;
	ret = ib_post_send(priv->qp, &wr, &bad);
	if (ret) {
		b->skb = NULL;
		b->ah = NULL;
		ipoib_ah_put(ah);
		dma_unmap_single(ipoib_dma(priv), map, skb->len, DMA_TO_DEVICE);
		return ret;
	}
	/* The slot is filled before the head shows it (to the drain). */
	smp_store_release(&priv->tx_head, priv->tx_head + 1);
	netif_trans_update(priv->dev);

	if (ipoib_tx_outstanding(priv) >= priv->tx_size) {
		netif_stop_queue(priv->dev);
		/* Pairs with the barrier in ipoib_tx_completion(). */
		smp_mb();
		if (ipoib_tx_outstanding(priv) < priv->tx_size)
			netif_wake_queue(priv->dev);
	}
	return 0;
}

/**
 * ipoib_send_and_put() - send @skb through @ah and drop the caller's @ah
 * @priv: the interface
 * @skb: the packet; the ring owns it from here, or it is freed
 * @ah: the destination's handle, a reference the caller holds
 * @qpn: the destination QPN (IB_MULTICAST_QPN for a group)
 *
 * The end of both transmit paths (a group's, a path's) once the lock is
 * dropped: a packet that cannot be posted counts as dropped. Never sleeps.
 */
void ipoib_send_and_put(struct ipoib_dev *priv, struct sk_buff *skb,
			struct ipoib_ah *ah, u32 qpn)
{
	if (ipoib_post_send(priv, skb, ah, qpn))
		ipoib_tx_drop(priv, skb);
	ipoib_ah_put(ah);
}

/* --- polling ---------------------------------------------------------------- */

/* Handles up to @budget receives; sends are not counted. */
static int ipoib_poll_cq(struct ipoib_dev *priv, int budget, bool draining)
{
	struct ib_wc wc[IPOIB_POLL_BATCH];
	int done = 0, n, i;

	while (done < budget) {
		n = ib_poll_cq(priv->cq, min(IPOIB_POLL_BATCH, budget - done), wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			/* A flushed completion's opcode is undefined: wr_id tells. */
			if (wc[i].wr_id & IPOIB_WR_RECV) {
				ipoib_rx_completion(priv, &wc[i], draining);
				done++;
			} else {
				ipoib_tx_completion(priv, &wc[i]);
			}
		}
	}
	return done;
}

/**
 * ipoib_napi_poll() - NAPI poll of the interface's CQ
 * @napi: &ipoib_dev.napi
 * @budget: receives allowed
 *
 * Softirq context. Rearms the CQ when it found less than @budget work; the
 * HCA raises the event at once if completions came in between.
 *
 * Return: the receives handled.
 */
int ipoib_napi_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev *priv = container_of(napi, struct ipoib_dev, napi);
	int done;

	done = ipoib_poll_cq(priv, budget, false);
	if (done < budget && napi_complete_done(napi, done))
		ib_req_notify_cq(priv->cq, IB_CQ_NEXT_COMP);
	return done;
}

/* --- up and down ---------------------------------------------------------- */

/**
 * ipoib_set_qkey() - give the UD QP the broadcast group's Q_Key
 * @priv: the interface
 * @qkey: the Q_Key
 *
 * Process context. RTS to RTS when the QP is up; otherwise only recorded
 * for ipoib_ib_up().
 *
 * Return: 0 or a negative errno.
 */
int ipoib_set_qkey(struct ipoib_dev *priv, u32 qkey)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTS, .qkey = qkey };
	int ret = 0;

	if (test_bit(IPOIB_FLAG_QP_READY, &priv->flags) && qkey != priv->qkey)
		ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_QKEY);
	if (!ret) {
		spin_lock_bh(&priv->lock);
		priv->qkey = qkey;
		spin_unlock_bh(&priv->lock);
	}
	return ret;
}

static int ipoib_qp_to_rts(struct ipoib_dev *priv)
{
	struct ib_qp_attr attr = {};
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = priv->pkey_index;
	attr.port_num = priv->port;
	attr.qkey = priv->qkey;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

static void ipoib_qp_to(struct ipoib_dev *priv, enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };

	if (ib_modify_qp(priv->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "QP to state %d failed\n", state);
}

/**
 * ipoib_ib_up() - bring the QP to RTS and fill the receive ring
 * @priv: the interface, with NAPI disabled
 *
 * Process context (ndo_open).
 *
 * Return: 0, or a negative errno with the QP back in RESET.
 */
int ipoib_ib_up(struct ipoib_dev *priv)
{
	unsigned int i;
	int ret;

	priv->tx_head = 0;
	priv->tx_tail = 0;
	priv->rx_posted = 0;
	ret = ipoib_qp_to_rts(priv);
	if (ret) {
		netdev_warn(priv->dev, "QP to RTS failed: %d\n", ret);
		goto err;
	}
	for (i = 0; i < priv->rx_size; i++) {
		ret = ipoib_alloc_rx(priv, i, GFP_KERNEL);
		if (ret)
			goto err_rx;
		ret = ipoib_post_rx(priv, i);
		if (ret) {
			ipoib_free_rx(priv, i);
			goto err_rx;
		}
	}
	set_bit(IPOIB_FLAG_QP_READY, &priv->flags);
	napi_enable(&priv->napi);
	ib_req_notify_cq(priv->cq, IB_CQ_NEXT_COMP);
	return 0;

err_rx:
	ipoib_qp_to(priv, IB_QPS_RESET);
	for (i = 0; i < priv->rx_size; i++)
		ipoib_free_rx(priv, i);
err:
	ipoib_qp_to(priv, IB_QPS_RESET);
	return ret;
}

/**
 * ipoib_ib_down() - stop the QP and take back every buffer
 * @priv: the interface, its queue stopped
 *
 * Process context (ndo_stop). Moves the QP to ERR, so that every posted
 * work request completes (flushed), polls until the rings are empty (at
 * most IPOIB_DRAIN_MS), then moves it to RESET and frees what is left.
 */
void ipoib_ib_down(struct ipoib_dev *priv)
{
	unsigned long end = jiffies + msecs_to_jiffies(IPOIB_DRAIN_MS);
	unsigned int i;

	if (!test_and_clear_bit(IPOIB_FLAG_QP_READY, &priv->flags))
		return;
	napi_disable(&priv->napi);
	ipoib_qp_to(priv, IB_QPS_ERR);
	while (priv->rx_posted || ipoib_tx_outstanding(priv)) {
		local_bh_disable();
		ipoib_poll_cq(priv, INT_MAX, true);
		local_bh_enable();
		if (time_after(jiffies, end)) {
			netdev_warn(priv->dev, "%u receives and %u sends never completed\n",
				    priv->rx_posted, ipoib_tx_outstanding(priv));
			break;
		}
		if (priv->rx_posted || ipoib_tx_outstanding(priv))
			usleep_range(500, 1000);
	}
	ipoib_qp_to(priv, IB_QPS_RESET);

	for (i = 0; i < priv->rx_size; i++)
		ipoib_free_rx(priv, i);
	for (i = 0; i < priv->tx_size; i++) {
		struct ipoib_tx_buf *b = &priv->tx_ring[i];

		if (!b->skb)
			continue;
		dma_unmap_single(ipoib_dma(priv), b->mapping, b->skb->len,
				 DMA_TO_DEVICE);
		dev_kfree_skb_any(b->skb);
		b->skb = NULL;
		ipoib_ah_put(b->ah);
		b->ah = NULL;
	}
	priv->tx_head = 0;
	priv->tx_tail = 0;
	priv->rx_posted = 0;
}
