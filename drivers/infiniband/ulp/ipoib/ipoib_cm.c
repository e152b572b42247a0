// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's connected mode (RFC 4755) over our ib_cm.
 *
 * Every connection carries traffic one way. The passive side listens on
 * the service ID of the interface's UD QPN and answers each REQ with a
 * receive-only RC QP whose buffers come from one SRQ per interface. The
 * active side is a send-only RC QP per peer (GID and UD QPN), made on the
 * first unicast send to a peer whose hardware address has IPOIB_FLAGS_RC
 * while the interface is in connected mode; packets wait while the REQ,
 * REP and RTU go by. Groups, and peers without the flag, stay on UD.
 *
 * All RC QPs (both roles) complete on one CQ, emptied by @cm_napi: a
 * receive's wr_id is its SRQ slot with IPOIB_CM_WR_RECV, a send's the
 * connection's table index and its ring slot.
 *
 * Connection states (enum ipoib_cm_state):
 *   active:  NEW --task: QP, REQ--> CONNECTING --REP, RTU--> UP
 *   passive: (REQ) --QP, REP--> CONNECTING --RTU or first data--> UP
 *   both:    any --REJ, DREQ, errors, flush, idle--> DEAD --reaper--> freed
 *
 * Contexts: the CM's handlers run in process context on its workqueue;
 * the connecting and reaping task and the idle check on priv->wq; xmit
 * and NAPI never sleep. See "Locking" in ipoib.h.
 */
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>

#include "ipoib.h"

#define IPOIB_CM_SRQ_SIZE	64
#define IPOIB_CM_TX_SIZE	64	/* a power of two, below 1 << 16 */
#define IPOIB_CM_WR_RECV	BIT_ULL(31)
#define IPOIB_CM_POLL_BATCH	16
#define IPOIB_CM_DRAIN_MS	2000
#define IPOIB_CM_RETRY		HZ	/* after a failed connection: UD */

/* What the 6.1 IPoIB asks for in its REQ (wave2-protocols.md 2.2). */
#define IPOIB_CM_RESPONSE_TIMEOUT	20
#define IPOIB_CM_MAX_CM_RETRIES		15
#define IPOIB_CM_RESPONDER_RESOURCES	4

int ipoib_cm_rx_idle_secs = 512;
module_param_named(cm_rx_idle_secs, ipoib_cm_rx_idle_secs, int, 0644);
MODULE_PARM_DESC(cm_rx_idle_secs,
		 "Seconds without a packet after which a passive connection is closed (>= 4)");

static unsigned int ipoib_cm_idle_secs(void)
{
	return max(READ_ONCE(ipoib_cm_rx_idle_secs), 4);
}

/**
 * ipoib_cm_init() - set up an interface's connected-mode lists and tasks
 * @priv: the interface, not registered yet
 */
void ipoib_cm_init(struct ipoib_dev *priv)
{
	INIT_LIST_HEAD(&priv->cm_tx);
	INIT_LIST_HEAD(&priv->cm_dead_tx);
	INIT_LIST_HEAD(&priv->cm_rx);
	INIT_LIST_HEAD(&priv->cm_dead_rx);
	INIT_WORK(&priv->cm_task, ipoib_cm_task);
	INIT_DELAYED_WORK(&priv->cm_stale_task, ipoib_cm_stale_task);
	mutex_init(&priv->cm_accept_mutex);
}

static void ipoib_cm_kick(struct ipoib_dev *priv)
{
	if (test_bit(IPOIB_FLAG_CM_UP, &priv->flags))
		queue_work(priv->wq, &priv->cm_task);
}

/* --- the SRQ ---------------------------------------------------------------- */

static int ipoib_cm_alloc_rx(struct ipoib_dev *priv, unsigned int i, gfp_t gfp)
{
	/* Room in front for the pseudo header the stack expects. */
	return ipoib_rx_buf_fill(priv, &priv->cm_srq_ring[i], priv->cm_buf_size,
				 IPOIB_ALEN, gfp);
}

static void ipoib_cm_free_rx(struct ipoib_dev *priv, unsigned int i)
{
	ipoib_rx_buf_release(priv, &priv->cm_srq_ring[i], priv->cm_buf_size);
}

static int ipoib_cm_post_rx(struct ipoib_dev *priv, unsigned int i)
{
	struct ib_sge sge = {
		.addr = priv->cm_srq_ring[i].mapping,
		.length = priv->cm_buf_size,
		.lkey = priv->mr->lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i | IPOIB_CM_WR_RECV,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ib_recv_wr *bad;

	return ib_post_srq_recv(priv->cm_srq, &wr, &bad);
}

/* Caller holds priv->lock. */
static struct ipoib_cm_rx *ipoib_cm_rx_by_qpn(struct ipoib_dev *priv, u32 qpn)
{
	struct ipoib_cm_rx *rx;

	list_for_each_entry(rx, &priv->cm_rx, list)
		if (rx->qp_num == qpn)
			return rx;
	return NULL;
}

static void ipoib_cm_rx_completion(struct ipoib_dev *priv, struct ib_wc *wc,
				   bool draining)
{
	unsigned int i = wc->wr_id & ~IPOIB_CM_WR_RECV;
	struct ipoib_cm_rx *rx;
	struct sk_buff *skb;
	dma_addr_t map;

	if (i >= priv->cm_srq_size || !priv->cm_srq_ring[i].skb) {
		netdev_warn(priv->dev, "CM receive completion for slot %u\n", i);
		return;
	}
	if (draining) {
		ipoib_cm_free_rx(priv, i);
		return;
	}
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			netdev_dbg(priv->dev, "CM receive error %s\n",
				   ib_wc_status_msg(wc->status));
			priv->dev->stats.rx_errors++;
		}
		goto repost;
	}

	spin_lock(&priv->lock);
	rx = ipoib_cm_rx_by_qpn(priv, wc->qp_num);
	if (rx)
		rx->last_rx = jiffies;
	spin_unlock(&priv->lock);

	skb = priv->cm_srq_ring[i].skb;
	map = priv->cm_srq_ring[i].mapping;
	if (ipoib_cm_alloc_rx(priv, i, GFP_ATOMIC)) {
		priv->dev->stats.rx_dropped++;
		priv->cm_srq_ring[i].skb = skb;
		priv->cm_srq_ring[i].mapping = map;
		goto repost;
	}
	dma_unmap_single(ipoib_dma(priv), map, priv->cm_buf_size, DMA_FROM_DEVICE);
	if (wc->byte_len < IPOIB_ENCAP_LEN) {
		priv->dev->stats.rx_length_errors++;
		dev_kfree_skb_any(skb);
		goto repost;
	}
	skb_put(skb, wc->byte_len);
	/* No GRH on RC: the pseudo header goes in the room reserved for it. */
	skb_push(skb, IPOIB_ALEN);
	memset(skb->data, 0, IPOIB_ALEN);
	skb->pkt_type = PACKET_HOST;
	ipoib_hand_up(priv, NULL, skb);

repost:
	if (ipoib_cm_post_rx(priv, i)) {
		netdev_warn(priv->dev, "reposting SRQ receive %u failed\n", i);
		ipoib_cm_free_rx(priv, i);
	}
}

/* --- active connections: sends ---------------------------------------------- */

static unsigned int ipoib_cm_tx_outstanding(struct ipoib_cm_tx *tx)
{
	return READ_ONCE(tx->head) - READ_ONCE(tx->tail);
}

/**
 * ipoib_cm_retire_locked() - take a connection off its path and the live list
 * @priv: the interface
 * @tx: the connection; nothing happens if it is already DEAD
 *
 * Caller holds priv->lock. Never sleeps: the reaper (cm_task) sends the
 * DREQ, drains the ring and frees it. The path gets UD for a second.
 */
void ipoib_cm_retire_locked(struct ipoib_dev *priv, struct ipoib_cm_tx *tx)
{
	if (tx->state == IPOIB_CM_DEAD)
		return;
	netdev_dbg(priv->dev, "connection to %pI6 qpn 0x%06x: %s -> dead\n",
		   tx->dgid.raw, tx->peer_qpn, ipoib_cm_state_name(tx->state));
	if (tx->path) {
		tx->path->cm = NULL;
		tx->path->cm_retry_at = jiffies + IPOIB_CM_RETRY;
		tx->path = NULL;
	}
	tx->state = IPOIB_CM_DEAD;
	list_move_tail(&tx->list, &priv->cm_dead_tx);
	ipoib_cm_kick(priv);
}

static void ipoib_cm_tx_completion(struct ipoib_dev *priv, struct ib_wc *wc)
{
	unsigned int index = (wc->wr_id >> 16) & 0xffff;
	unsigned int slot = wc->wr_id & 0xffff;
	struct ipoib_tx_buf *b;
	struct ipoib_cm_tx *tx;
	bool wake;

	tx = index < IPOIB_CM_MAX_TX ? READ_ONCE(priv->cm_tx_table[index]) : NULL;
	if (!tx || slot != (tx->tail & (IPOIB_CM_TX_SIZE - 1)) ||
	    !tx->ring[slot].skb) {
		netdev_warn(priv->dev, "CM send completion %#llx unexpected\n",
			    wc->wr_id);
		return;
	}
	b = &tx->ring[slot];
	dma_unmap_single(ipoib_dma(priv), b->mapping, b->skb->len, DMA_TO_DEVICE);
	if (wc->status == IB_WC_SUCCESS) {
		priv->dev->stats.tx_packets++;
		priv->dev->stats.tx_bytes += b->skb->len;
	} else {
		priv->dev->stats.tx_errors++;
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			netdev_dbg(priv->dev, "CM send error %s\n",
				   ib_wc_status_msg(wc->status));
			/* The QP is in error: the connection is lost. */
			spin_lock(&priv->lock);
			ipoib_cm_retire_locked(priv, tx);
			spin_unlock(&priv->lock);
		}
	}
	dev_kfree_skb_any(b->skb);
	b->skb = NULL;

	wake = ipoib_cm_tx_outstanding(tx) - 1 <= IPOIB_CM_TX_SIZE / 2;
	/*
	 * The last touch of @tx: once the tail reaches the head, the reaper
	 * may free it.
	 */
	smp_store_release(&tx->tail, tx->tail + 1);
	/* Pairs with the barrier after netif_stop_queue() in the post. */
	smp_mb();
	if (wake && netif_queue_stopped(priv->dev) &&
	    test_bit(IPOIB_FLAG_QP_READY, &priv->flags))
		netif_wake_queue(priv->dev);
}

/* Caller holds priv->lock, @tx is UP. On success the ring owns @skb. */
static int ipoib_cm_post_send(struct ipoib_dev *priv, struct ipoib_cm_tx *tx,
			      struct sk_buff *skb)
{
	unsigned int slot = tx->head & (IPOIB_CM_TX_SIZE - 1);
	struct ipoib_tx_buf *b = &tx->ring[slot];
	struct ib_send_wr wr = {}, *bad;
	struct ib_sge sge;
	dma_addr_t map;
	int ret;

	if (skb->len > tx->peer_mtu)
		return -EMSGSIZE;
	if (ipoib_cm_tx_outstanding(tx) >= IPOIB_CM_TX_SIZE) {
		netif_stop_queue(priv->dev);
		return -ENOBUFS;
	}
	map = dma_map_single(ipoib_dma(priv), skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(ipoib_dma(priv), map))
		return -EIO;
	sge.addr = map;
	sge.length = skb->len;
	sge.lkey = priv->mr->lkey;
	wr.wr_id = (u64)tx->index << 16 | slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;

	b->skb = skb;
	b->mapping = map;
	ret = ib_post_send(tx->qp, &wr, &bad);
	if (ret) {
		b->skb = NULL;
		dma_unmap_single(ipoib_dma(priv), map, skb->len, DMA_TO_DEVICE);
		return ret;
	}
	/* The slot is filled before the head shows it (to the completion). */
	smp_store_release(&tx->head, tx->head + 1);
	netif_trans_update(priv->dev);
	if (ipoib_cm_tx_outstanding(tx) >= IPOIB_CM_TX_SIZE) {
		netif_stop_queue(priv->dev);
		/* Pairs with the barrier in ipoib_cm_tx_completion(). */
		smp_mb();
		if (ipoib_cm_tx_outstanding(tx) < IPOIB_CM_TX_SIZE)
			netif_wake_queue(priv->dev);
	}
	return 0;
}

/* Caller holds priv->lock. Returns the new connection or NULL. */
static struct ipoib_cm_tx *ipoib_cm_tx_new_locked(struct ipoib_dev *priv,
						  struct ipoib_path *path,
						  u32 qpn)
{
	struct ipoib_cm_tx *tx;
	unsigned int i;

	for (i = 0; i < IPOIB_CM_MAX_TX; i++)
		if (!priv->cm_tx_table[i])
			break;
	if (i == IPOIB_CM_MAX_TX)
		return NULL;
	tx = kzalloc(sizeof(*tx), GFP_ATOMIC);
	if (!tx)
		return NULL;
	tx->priv = priv;
	tx->state = IPOIB_CM_NEW;
	tx->dgid = path->dgid;
	tx->peer_qpn = qpn;
	tx->index = i;
	tx->rec = path->rec;
	tx->path = path;
	skb_queue_head_init(&tx->queue);
	list_add_tail(&tx->list, &priv->cm_tx);
	WRITE_ONCE(priv->cm_tx_table[i], tx);
	path->cm = tx;
	ipoib_cm_kick(priv);
	return tx;
}

/**
 * ipoib_cm_wanted() - does a unicast send go over connected mode?
 * @priv: the interface
 * @hwaddr: the destination's hardware address
 *
 * Return: true in connected mode, with the CM up, for a peer that offers it.
 */
bool ipoib_cm_wanted(struct ipoib_dev *priv, const u8 *hwaddr)
{
	return (hwaddr[0] & IPOIB_FLAGS_RC) &&
	       test_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags) &&
	       test_bit(IPOIB_FLAG_CM_UP, &priv->flags);
}

/**
 * ipoib_cm_send_locked() - send, queue or start a connection for a packet
 * @priv: the interface
 * @path: the destination's path, VALID
 * @hwaddr: the destination's hardware address (its QPN names the peer)
 * @skb: encap and payload, the pseudo header pulled
 *
 * From xmit, priv->lock held; never sleeps. A connection to another QPN
 * of the same GID (the peer's interface came back) is retired first.
 *
 * Return: true when @skb was consumed (posted, queued or dropped); false
 * when the caller sends it over UD (no connection can be had now).
 */
bool ipoib_cm_send_locked(struct ipoib_dev *priv, struct ipoib_path *path,
			  const u8 *hwaddr, struct sk_buff *skb)
{
	u32 qpn = ipoib_hwaddr_qpn(hwaddr);
	struct ipoib_cm_tx *tx = path->cm;

	if (tx && tx->peer_qpn != qpn) {
		ipoib_cm_retire_locked(priv, tx);
		path->cm_retry_at = jiffies;
		tx = NULL;
	}
	if (!tx) {
		if (time_before(jiffies, path->cm_retry_at))
			return false;
		tx = ipoib_cm_tx_new_locked(priv, path, qpn);
		if (!tx)
			return false;
	}
	switch (tx->state) {
	case IPOIB_CM_UP:
		if (ipoib_cm_post_send(priv, tx, skb))
			ipoib_tx_drop(priv, skb);
		return true;
	case IPOIB_CM_NEW:
	case IPOIB_CM_CONNECTING:
		if (skb_queue_len(&tx->queue) >= IPOIB_MAX_QUEUED)
			ipoib_tx_drop(priv, skb);
		else
			__skb_queue_tail(&tx->queue, skb);
		return true;
	default:
		return false;
	}
}

/* --- active connections: the CM --------------------------------------------- */

static void ipoib_cm_qp_event(struct ib_event *event, void *context)
{
	struct ipoib_dev *priv = context;

	netdev_dbg(priv->dev, "CM QP event %s\n", ib_event_msg(event->event));
}

static int ipoib_cm_modify(struct ib_cm_id *id, struct ib_qp *qp,
			   enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask, ret;

	ret = ib_cm_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	return ib_modify_qp(qp, &attr, mask);
}

/* The REP to our REQ: the QP to RTS, the RTU, and the waiting packets. */
static int ipoib_cm_tx_rep(struct ipoib_cm_tx *tx, struct ib_cm_event *event)
{
	struct ipoib_dev *priv = tx->priv;
	struct sk_buff_head ready;
	u32 qpn, size;
	int ret;

	ret = ipoib_cm_data_unpack(event->private_data, IB_CM_REP_PRIVATE_DATA_SIZE,
				   &qpn, &size);
	if (ret) {
		netdev_warn(priv->dev, "REP from %pI6 without a receive size\n",
			    tx->dgid.raw);
		return ret;
	}
	ret = ipoib_cm_modify(tx->id, tx->qp, IB_QPS_RTR);
	if (!ret)
		ret = ipoib_cm_modify(tx->id, tx->qp, IB_QPS_RTS);
	if (ret) {
		netdev_warn(priv->dev, "connection QP to RTS: %d\n", ret);
		return ret;
	}
	ret = ib_send_cm_rtu(tx->id, NULL, 0);
	if (ret)
		return ret;

	skb_queue_head_init(&ready);
	spin_lock_bh(&priv->lock);
	if (tx->state == IPOIB_CM_CONNECTING) {
		tx->peer_mtu = size;
		tx->state = IPOIB_CM_UP;
		skb_queue_splice_init(&tx->queue, &ready);
	}
	spin_unlock_bh(&priv->lock);
	netdev_dbg(priv->dev, "connected to %pI6 qpn 0x%06x, its buffers %u bytes\n",
		   tx->dgid.raw, tx->peer_qpn, size);
	ipoib_requeue(priv, &ready);
	return 0;
}

static int ipoib_cm_tx_handler(struct ib_cm_id *id, struct ib_cm_event *event)
{
	struct ipoib_cm_tx *tx = id->context;
	struct ipoib_dev *priv = tx->priv;

	switch (event->event) {
	case IB_CM_REP_RECEIVED:
		if (!ipoib_cm_tx_rep(tx, event))
			return 0;
		ib_send_cm_rej(id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		break;
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		break;
	case IB_CM_REQ_ERROR:
	case IB_CM_REJ_RECEIVED:
	case IB_CM_DREQ_ERROR:
	case IB_CM_DREP_RECEIVED:
	case IB_CM_TIMEWAIT_EXIT:
		break;
	default:
		return 0;
	}
	netdev_dbg(priv->dev, "connection to %pI6: CM event %d\n",
		   tx->dgid.raw, event->event);
	spin_lock_bh(&priv->lock);
	ipoib_cm_retire_locked(priv, tx);
	spin_unlock_bh(&priv->lock);
	return 0;
}

/*
 * An RC QP of either role: its completions on the CM's CQ, its receives
 * (a passive one's; an active one posts none) from the SRQ.
 */
static struct ib_qp *ipoib_cm_create_qp(struct ipoib_dev *priv, u32 send_wr,
					void (*handler)(struct ib_event *, void *),
					void *context)
{
	struct ib_qp_init_attr init = {
		.send_cq = priv->cm_cq, .recv_cq = priv->cm_cq,
		.srq = priv->cm_srq, .qp_type = IB_QPT_RC,
		.cap.max_send_wr = send_wr, .cap.max_send_sge = 1,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.event_handler = handler, .qp_context = context,
	};

	return ib_create_qp(priv->pd, &init);
}

/* The QP, its INIT, the cm_id and the REQ of a NEW connection. */
static int ipoib_cm_tx_connect(struct ipoib_dev *priv, struct ipoib_cm_tx *tx)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = priv->pkey_index,
		.port_num = priv->port,
	};
	struct ib_cm_req_param req = {
		.primary_path = &tx->rec,
		.service_id = ipoib_cm_service_id(tx->peer_qpn),
		.qp_type = IB_QPT_RC,
		.starting_psn = get_random_u32() & 0xffffff,
		.private_data_len = sizeof(struct ipoib_cm_data),
		.responder_resources = IPOIB_CM_RESPONDER_RESOURCES,
		.remote_cm_response_timeout = IPOIB_CM_RESPONSE_TIMEOUT,
		.local_cm_response_timeout = IPOIB_CM_RESPONSE_TIMEOUT,
		.max_cm_retries = IPOIB_CM_MAX_CM_RETRIES,
		.srq = 1,
	};
	struct ipoib_cm_data data;
	int ret;

	tx->ring = kcalloc(IPOIB_CM_TX_SIZE, sizeof(*tx->ring), GFP_KERNEL);
	if (!tx->ring)
		return -ENOMEM;
	tx->qp = ipoib_cm_create_qp(priv, IPOIB_CM_TX_SIZE, ipoib_cm_qp_event, priv);
	if (IS_ERR(tx->qp)) {
		ret = PTR_ERR(tx->qp);
		tx->qp = NULL;
		return ret;
	}
	ret = ib_modify_qp(tx->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	tx->id = ib_create_cm_id(priv->ca, ipoib_cm_tx_handler, tx);
	if (IS_ERR(tx->id)) {
		ret = PTR_ERR(tx->id);
		tx->id = NULL;
		return ret;
	}
	ipoib_cm_data_pack(&data, priv->qp->qp_num, priv->cm_buf_size);
	req.private_data = &data;
	req.qp_num = tx->qp->qp_num;
	WRITE_ONCE(tx->qp_num, req.qp_num);
	return ib_send_cm_req(tx->id, &req);
}

/* --- passive connections ----------------------------------------------------- */

/* Caller holds priv->lock. */
static void ipoib_cm_rx_dead_locked(struct ipoib_dev *priv, struct ipoib_cm_rx *rx)
{
	if (rx->state == IPOIB_CM_DEAD)
		return;
	netdev_dbg(priv->dev, "passive connection from qpn 0x%06x: %s -> dead\n",
		   rx->peer_qpn, ipoib_cm_state_name(rx->state));
	rx->state = IPOIB_CM_DEAD;
	list_move_tail(&rx->list, &priv->cm_dead_rx);
	ipoib_cm_kick(priv);
}

static void ipoib_cm_rx_qp_event(struct ib_event *event, void *context)
{
	struct ipoib_cm_rx *rx = context;

	/* Data before the RTU: the connection is up all the same. */
	if (event->event == IB_EVENT_COMM_EST)
		ib_cm_notify(rx->id, IB_EVENT_COMM_EST);
}

static int ipoib_cm_rx_handler(struct ib_cm_id *id, struct ib_cm_event *event)
{
	struct ipoib_cm_rx *rx = id->context;
	struct ipoib_dev *priv = rx->priv;

	switch (event->event) {
	case IB_CM_RTU_RECEIVED:
	case IB_CM_USER_ESTABLISHED:
		spin_lock_bh(&priv->lock);
		if (rx->state == IPOIB_CM_CONNECTING)
			rx->state = IPOIB_CM_UP;
		spin_unlock_bh(&priv->lock);
		return 0;
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		break;
	case IB_CM_REJ_RECEIVED:
	case IB_CM_REP_ERROR:
	case IB_CM_DREQ_ERROR:
	case IB_CM_DREP_RECEIVED:
	case IB_CM_TIMEWAIT_EXIT:
		break;
	default:
		return 0;
	}
	spin_lock_bh(&priv->lock);
	ipoib_cm_rx_dead_locked(priv, rx);
	spin_unlock_bh(&priv->lock);
	return 0;
}

/*
 * A REQ for our service: a receive-only RC QP on the SRQ, taken to RTS,
 * and the REP. Non-zero makes the CM reject the REQ and destroy @id.
 */
static int ipoib_cm_rx_accept(struct ipoib_dev *priv, struct ib_cm_id *id,
			      struct ib_cm_event *event)
{
	struct ib_cm_rep_param rep = {
		.private_data_len = sizeof(struct ipoib_cm_data),
		.srq = 1,
		.rnr_retry_count = event->param.req_rcvd.rnr_retry_count,
		.target_ack_delay = priv->ca_ack_delay,
	};
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	u32 psn = get_random_u32() & 0xffffff;
	struct ipoib_cm_data data;
	struct ipoib_cm_rx *rx;
	u32 qpn, size;
	int mask, ret;

	ret = ipoib_cm_data_unpack(event->private_data, IB_CM_REQ_PRIVATE_DATA_SIZE,
				   &qpn, &size);
	if (ret)
		return ret;
	rx = kzalloc(sizeof(*rx), GFP_KERNEL);
	if (!rx)
		return -ENOMEM;
	if (!test_bit(IPOIB_FLAG_CM_UP, &priv->flags)) {
		ret = -ENETDOWN;
		goto err_rx;
	}
	*rx = (struct ipoib_cm_rx) { .priv = priv, .id = id, .peer_qpn = qpn,
				     .state = IPOIB_CM_CONNECTING };
	rx->qp = ipoib_cm_create_qp(priv, 1, ipoib_cm_rx_qp_event, rx);
	if (IS_ERR(rx->qp)) {
		ret = PTR_ERR(rx->qp);
		goto err_rx;
	}
	rx->qp_num = rx->qp->qp_num;
	ret = ipoib_cm_modify(id, rx->qp, IB_QPS_INIT);
	if (ret)
		goto err_qp;
	/*
	 * The peer sends from the PSN our REP names, which the CM learns
	 * only when the REP goes: the receive PSN is set here, by hand.
	 */
	ret = ib_cm_init_qp_attr(id, &attr, &mask);
	if (!ret) {
		attr.rq_psn = psn;
		ret = ib_modify_qp(rx->qp, &attr, mask);
	}
	if (!ret)
		ret = ipoib_cm_modify(id, rx->qp, IB_QPS_RTS);
	if (ret)
		goto err_qp;

	id->context = rx;
	spin_lock_bh(&priv->lock);
	rx->last_rx = jiffies;
	list_add_tail(&rx->list, &priv->cm_rx);
	spin_unlock_bh(&priv->lock);

	ipoib_cm_data_pack(&data, priv->qp->qp_num, priv->cm_buf_size);
	rep.private_data = &data;
	rep.qp_num = rx->qp_num;
	rep.starting_psn = psn;
	ret = ib_send_cm_rep(id, &rep);
	if (ret) {
		/* The CM destroys @id; the reaper frees the rest. */
		spin_lock_bh(&priv->lock);
		rx->id = NULL;
		ipoib_cm_rx_dead_locked(priv, rx);
		spin_unlock_bh(&priv->lock);
		return ret;
	}
	netdev_dbg(priv->dev, "accepted qpn 0x%06x on RC QP 0x%06x\n",
		   qpn, rx->qp_num);
	return 0;

err_qp:
	ib_destroy_qp(rx->qp);
err_rx:
	kfree(rx);
	return ret;
}

/*
 * The handler of the listening id and of the ids its REQs make: a REQ's
 * new id starts with the listener's context (the interface) and gets its
 * connection's once accepted. The accept runs under @cm_accept_mutex, so
 * that ipoib_cm_down() can wait for it to end before the SRQ goes.
 */
static int ipoib_cm_listen_handler(struct ib_cm_id *id, struct ib_cm_event *event)
{
	struct ipoib_dev *priv;
	int ret;

	if (event->event != IB_CM_REQ_RECEIVED)
		return ipoib_cm_rx_handler(id, event);
	priv = id->context;
	mutex_lock(&priv->cm_accept_mutex);
	ret = ipoib_cm_rx_accept(priv, id, event);
	mutex_unlock(&priv->cm_accept_mutex);
	return ret;
}

/* --- polling ------------------------------------------------------------------ */

/* Handles up to @budget receives of the CM's CQ; sends are not counted. */
static int ipoib_cm_poll(struct ipoib_dev *priv, int budget, bool draining)
{
	struct ib_wc wc[IPOIB_CM_POLL_BATCH];
	int done = 0, n, i;

	while (done < budget) {
		n = ib_poll_cq(priv->cm_cq, min(IPOIB_CM_POLL_BATCH, budget - done), wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & IPOIB_CM_WR_RECV) {
				ipoib_cm_rx_completion(priv, &wc[i], draining);
				done++;
			} else {
				ipoib_cm_tx_completion(priv, &wc[i]);
			}
		}
	}
	return done;
}

/**
 * ipoib_cm_napi_poll() - NAPI poll of the connected-mode CQ
 * @napi: &ipoib_dev.cm_napi
 * @budget: receives allowed
 *
 * Softirq context.
 *
 * Return: the receives handled.
 */
int ipoib_cm_napi_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev *priv = container_of(napi, struct ipoib_dev, cm_napi);
	int done;

	done = ipoib_cm_poll(priv, budget, false);
	if (done < budget && napi_complete_done(napi, done))
		ib_req_notify_cq(priv->cm_cq, IB_CQ_NEXT_COMP);
	return done;
}

static void ipoib_cm_cq_event(struct ib_cq *cq, void *context)
{
	struct ipoib_dev *priv = context;

	napi_schedule(&priv->cm_napi);
}

/* --- the reaper ----------------------------------------------------------------- */

static bool ipoib_cm_drained(struct list_head *txs)
{
	struct ipoib_cm_tx *tx;

	list_for_each_entry(tx, txs, list)
		if (ipoib_cm_tx_outstanding(tx))
			return false;
	return true;
}

static void ipoib_cm_free_tx(struct ipoib_dev *priv, struct ipoib_cm_tx *tx)
{
	unsigned int i;

	spin_lock_bh(&priv->lock);
	WRITE_ONCE(priv->cm_tx_table[tx->index], NULL);
	spin_unlock_bh(&priv->lock);
	if (tx->qp && ib_destroy_qp(tx->qp))
		netdev_warn(priv->dev, "destroying a connection's QP failed\n");
	for (i = 0; tx->ring && i < IPOIB_CM_TX_SIZE; i++) {
		struct ipoib_tx_buf *b = &tx->ring[i];

		if (!b->skb)
			continue;
		dma_unmap_single(ipoib_dma(priv), b->mapping, b->skb->len,
				 DMA_TO_DEVICE);
		ipoib_tx_drop(priv, b->skb);
	}
	ipoib_drop_queue(priv, &tx->queue);
	kfree(tx->ring);
	kfree(tx);
}

/*
 * Frees the DEAD connections: their cm_ids first (a DREQ for an
 * established one; no handler runs after), then their QPs to ERR, the
 * CQ polled (with @cm_napi held off) until their sends are back, then
 * the QPs. @stopping: ipoib_cm_down() has disabled @cm_napi itself and
 * receives are freed, not delivered.
 */
static void ipoib_cm_reap(struct ipoib_dev *priv, bool stopping)
{
	unsigned long end = jiffies + msecs_to_jiffies(IPOIB_CM_DRAIN_MS);
	struct ipoib_cm_tx *tx, *ttmp;
	struct ipoib_cm_rx *rx, *rtmp;
	LIST_HEAD(txs);
	LIST_HEAD(rxs);

	spin_lock_bh(&priv->lock);
	list_splice_init(&priv->cm_dead_tx, &txs);
	list_splice_init(&priv->cm_dead_rx, &rxs);
	spin_unlock_bh(&priv->lock);
	if (list_empty(&txs) && list_empty(&rxs))
		return;

	list_for_each_entry(tx, &txs, list)
		if (tx->id)
			ib_destroy_cm_id(tx->id);
	list_for_each_entry(rx, &rxs, list)
		if (rx->id)
			ib_destroy_cm_id(rx->id);

	if (!stopping)
		napi_disable(&priv->cm_napi);
	list_for_each_entry(tx, &txs, list) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		if (tx->qp && ib_modify_qp(tx->qp, &attr, IB_QP_STATE))
			netdev_warn(priv->dev, "connection QP to ERR failed\n");
	}
	list_for_each_entry(rx, &rxs, list) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		if (ib_modify_qp(rx->qp, &attr, IB_QP_STATE))
			netdev_warn(priv->dev, "passive QP to ERR failed\n");
	}
	for (;;) {
		local_bh_disable();
		ipoib_cm_poll(priv, INT_MAX, stopping);
		local_bh_enable();
		if (ipoib_cm_drained(&txs))
			break;
		if (time_after(jiffies, end)) {
			netdev_warn(priv->dev, "connection sends never completed\n");
			break;
		}
		usleep_range(500, 1000);
	}
	list_for_each_entry_safe(tx, ttmp, &txs, list) {
		list_del(&tx->list);
		ipoib_cm_free_tx(priv, tx);
	}
	list_for_each_entry_safe(rx, rtmp, &rxs, list) {
		list_del(&rx->list);
		if (ib_destroy_qp(rx->qp))
			netdev_warn(priv->dev, "destroying a passive QP failed\n");
		kfree(rx);
	}
	if (!stopping) {
		napi_enable(&priv->cm_napi);
		/* Completions polled above may have raised no event. */
		local_bh_disable();
		napi_schedule(&priv->cm_napi);
		local_bh_enable();
	}
}

/**
 * ipoib_cm_task() - send the REQs of new connections, free dead ones
 * @work: &ipoib_dev.cm_task
 *
 * On priv->wq.
 */
void ipoib_cm_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(work, struct ipoib_dev, cm_task);
	struct ipoib_cm_tx *tx, *pick;
	int ret;

	for (;;) {
		pick = NULL;
		spin_lock_bh(&priv->lock);
		list_for_each_entry(tx, &priv->cm_tx, list) {
			if (tx->state == IPOIB_CM_NEW) {
				pick = tx;
				pick->state = IPOIB_CM_CONNECTING;
				break;
			}
		}
		spin_unlock_bh(&priv->lock);
		if (!pick)
			break;
		ret = ipoib_cm_tx_connect(priv, pick);
		if (ret) {
			netdev_dbg(priv->dev, "no connection to %pI6: %d\n",
				   pick->dgid.raw, ret);
			spin_lock_bh(&priv->lock);
			ipoib_cm_retire_locked(priv, pick);
			spin_unlock_bh(&priv->lock);
		}
	}
	ipoib_cm_reap(priv, false);
}

/**
 * ipoib_cm_stale_task() - close passive connections that went quiet
 * @work: &ipoib_dev.cm_stale_task.work
 *
 * On priv->wq, every quarter of cm_rx_idle_secs while the CM is up: a
 * passive connection without a receive for cm_rx_idle_secs is closed
 * (DREQ), as a peer that vanished without one would leave it forever.
 */
void ipoib_cm_stale_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(to_delayed_work(work),
					      struct ipoib_dev, cm_stale_task);
	unsigned long idle = ipoib_cm_idle_secs() * HZ;
	struct ipoib_cm_rx *rx, *tmp;

	spin_lock_bh(&priv->lock);
	list_for_each_entry_safe(rx, tmp, &priv->cm_rx, list)
		if (time_after(jiffies, rx->last_rx + idle))
			ipoib_cm_rx_dead_locked(priv, rx);
	if (test_bit(IPOIB_FLAG_CM_UP, &priv->flags))
		queue_delayed_work(priv->wq, &priv->cm_stale_task, idle / 4);
	spin_unlock_bh(&priv->lock);
}

/* --- up and down ------------------------------------------------------------------ */

static void ipoib_cm_srq_event(struct ib_event *event, void *context)
{
	struct ipoib_dev *priv = context;

	netdev_warn(priv->dev, "SRQ event %s\n", ib_event_msg(event->event));
}

static void ipoib_cm_free_srq(struct ipoib_dev *priv)
{
	unsigned int i;

	if (ib_destroy_srq(priv->cm_srq))
		netdev_warn(priv->dev, "destroying the SRQ failed\n");
	for (i = 0; i < priv->cm_srq_size; i++)
		ipoib_cm_free_rx(priv, i);
	kfree(priv->cm_srq_ring);
	priv->cm_srq_ring = NULL;
}

/**
 * ipoib_cm_up() - the CQ, the SRQ with its buffers, and the listener
 * @priv: the interface, its UD QP up
 *
 * Process context (ndo_open). Nothing to do on an HCA without SRQs.
 *
 * Return: 0 or a negative errno (nothing left allocated).
 */
int ipoib_cm_up(struct ipoib_dev *priv)
{
	struct ib_srq_init_attr sattr = {
		.event_handler = ipoib_cm_srq_event,
		.srq_context = priv,
		.attr = { .max_wr = IPOIB_CM_SRQ_SIZE, .max_sge = 1 },
	};
	unsigned int i;
	int ret;

	if (!priv->cm_supported)
		return 0;
	priv->cm_srq_size = IPOIB_CM_SRQ_SIZE;
	priv->cm_cq = ib_create_cq(priv->ca, ipoib_cm_cq_event, NULL, priv,
				   priv->cm_srq_size + IPOIB_CM_MAX_TX * IPOIB_CM_TX_SIZE);
	ret = PTR_ERR_OR_ZERO(priv->cm_cq);
	if (ret)
		return ret;
	priv->cm_srq_ring = kcalloc(priv->cm_srq_size, sizeof(*priv->cm_srq_ring),
				    GFP_KERNEL);
	if (!priv->cm_srq_ring) {
		ret = -ENOMEM;
		goto err_cq;
	}
	priv->cm_srq = ib_create_srq(priv->pd, &sattr);
	ret = PTR_ERR_OR_ZERO(priv->cm_srq);
	if (ret)
		goto err_ring;
	for (i = 0; i < priv->cm_srq_size; i++) {
		ret = ipoib_cm_alloc_rx(priv, i, GFP_KERNEL);
		if (ret)
			goto err_srq;
		ret = ipoib_cm_post_rx(priv, i);
		if (ret)
			goto err_srq;
	}
	priv->cm_listen = ib_create_cm_id(priv->ca, ipoib_cm_listen_handler, priv);
	ret = PTR_ERR_OR_ZERO(priv->cm_listen);
	if (ret)
		goto err_srq;

	spin_lock_bh(&priv->lock);
	set_bit(IPOIB_FLAG_CM_UP, &priv->flags);
	spin_unlock_bh(&priv->lock);
	napi_enable(&priv->cm_napi);
	ib_req_notify_cq(priv->cm_cq, IB_CQ_NEXT_COMP);
	ret = ib_cm_listen(priv->cm_listen, ipoib_cm_service_id(priv->qp->qp_num), 0);
	if (ret) {
		netdev_warn(priv->dev, "listening for IPoIB-CM failed: %d\n", ret);
		spin_lock_bh(&priv->lock);
		clear_bit(IPOIB_FLAG_CM_UP, &priv->flags);
		spin_unlock_bh(&priv->lock);
		napi_disable(&priv->cm_napi);
		goto err_id;
	}
	queue_delayed_work(priv->wq, &priv->cm_stale_task,
			   ipoib_cm_idle_secs() * HZ / 4);
	return 0;

err_id:
	ib_destroy_cm_id(priv->cm_listen);
	priv->cm_listen = NULL;
err_srq:
	/* The SRQ's destruction gives every posted buffer back. */
	ib_destroy_srq(priv->cm_srq);
	for (i = 0; i < priv->cm_srq_size; i++)
		ipoib_cm_free_rx(priv, i);
err_ring:
	kfree(priv->cm_srq_ring);
	priv->cm_srq_ring = NULL;
err_cq:
	ib_destroy_cq(priv->cm_cq);
	priv->cm_cq = NULL;
	return ret;
}

/**
 * ipoib_cm_down() - close every connection and free what ipoib_cm_up() made
 * @priv: the interface, its queue stopped and its paths flushed
 *
 * Process context (ndo_stop). Established connections get a DREQ.
 */
void ipoib_cm_down(struct ipoib_dev *priv)
{
	struct ipoib_cm_tx *tx, *ttmp;
	struct ipoib_cm_rx *rx, *rtmp;

	spin_lock_bh(&priv->lock);
	if (!test_and_clear_bit(IPOIB_FLAG_CM_UP, &priv->flags)) {
		spin_unlock_bh(&priv->lock);
		return;
	}
	spin_unlock_bh(&priv->lock);

	cancel_work_sync(&priv->cm_task);
	cancel_delayed_work_sync(&priv->cm_stale_task);
	/* An accept under way ends before this; later ones see CM_UP clear. */
	mutex_lock(&priv->cm_accept_mutex);
	mutex_unlock(&priv->cm_accept_mutex);
	ib_destroy_cm_id(priv->cm_listen);
	priv->cm_listen = NULL;

	spin_lock_bh(&priv->lock);
	list_for_each_entry_safe(tx, ttmp, &priv->cm_tx, list)
		ipoib_cm_retire_locked(priv, tx);
	list_for_each_entry_safe(rx, rtmp, &priv->cm_rx, list)
		ipoib_cm_rx_dead_locked(priv, rx);
	spin_unlock_bh(&priv->lock);

	napi_disable(&priv->cm_napi);
	ipoib_cm_reap(priv, true);
	ipoib_cm_free_srq(priv);
	ib_destroy_cq(priv->cm_cq);
	priv->cm_cq = NULL;
}

/**
 * ipoib_cm_set_mode() - the sysfs mode switch
 * @priv: the interface
 * @connected: connected (true) or datagram mode
 *
 * Caller holds RTNL. Connected mode raises the MTU to the connected-mode
 * one; datagram mode lowers it to the datagram limit, if above, and
 * closes every active connection.
 *
 * Return: 0, -EOPNOTSUPP without SRQs, or dev_set_mtu()'s error.
 */
int ipoib_cm_set_mode(struct ipoib_dev *priv, bool connected)
{
	struct net_device *dev = priv->dev;
	struct ipoib_cm_tx *tx, *tmp;
	int ud;

	ASSERT_RTNL();
	if (connected) {
		if (!priv->cm_supported)
			return -EOPNOTSUPP;
		set_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags);
		return dev_set_mtu(dev, priv->cm_mtu);
	}
	clear_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags);
	spin_lock_bh(&priv->lock);
	ud = ipoib_mtu_from_ib(priv->mcast_mtu ? min(priv->mcast_mtu, priv->max_ib_mtu)
					       : priv->max_ib_mtu);
	list_for_each_entry_safe(tx, tmp, &priv->cm_tx, list)
		ipoib_cm_retire_locked(priv, tx);
	spin_unlock_bh(&priv->lock);
	return dev->mtu > ud ? dev_set_mtu(dev, ud) : 0;
}

/**
 * ipoib_cm_show() - the sysfs listing of the connections
 * @priv: the interface
 * @buf: the sysfs page
 *
 * One line per connection: "tx <peer GID> qpn <its UD QPN> rc <our RC
 * QPN> <state>" for the active ones (rc 0x000000 until the QP exists),
 * "rx qpn <peer's UD QPN> rc <our RC QPN> <state>" for the passive ones.
 *
 * Return: the length written.
 */
ssize_t ipoib_cm_show(struct ipoib_dev *priv, char *buf)
{
	struct ipoib_cm_tx *tx;
	struct ipoib_cm_rx *rx;
	int len = 0;

	spin_lock_bh(&priv->lock);
	list_for_each_entry(tx, &priv->cm_tx, list)
		len += sysfs_emit_at(buf, len, "tx %pI6 qpn 0x%06x rc 0x%06x %s\n",
				     tx->dgid.raw, tx->peer_qpn, READ_ONCE(tx->qp_num),
				     ipoib_cm_state_name(tx->state));
	list_for_each_entry(rx, &priv->cm_rx, list)
		len += sysfs_emit_at(buf, len, "rx qpn 0x%06x rc 0x%06x %s\n", rx->peer_qpn,
				     rx->qp_num, ipoib_cm_state_name(rx->state));
	spin_unlock_bh(&priv->lock);
	return len;
}
