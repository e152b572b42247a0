// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib: the module, the ib_client and the net_devices. For every port
 * of every device our core reports, an "ib%d" net_device with the port's
 * P_Key at index 0: ARPHRD_INFINIBAND, 20-byte addresses (flags, QPN,
 * GID; the flags offer connected mode when the HCA has SRQs), a 24-byte
 * hard header (the destination address, which xmit reads,
 * and the 4-byte encap that goes on the wire). ARP and neighbour
 * discovery are the kernel's; this file routes each packet to a group
 * (ipoib_mcast.c) or a path (ipoib_path.c), and turns port events into a
 * flush of paths and groups and a rejoin.
 */
#include <linux/if_arp.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/rtnetlink.h>
#include <linux/slab.h>

#include <rdma/ib_cache.h>

#include "ipoib.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("IP over InfiniBand, datagram and connected mode (ibstack)");
MODULE_LICENSE("GPL");

int ipoib_sendq_size = 128;
int ipoib_recvq_size = 256;
module_param_named(send_queue_size, ipoib_sendq_size, int, 0444);
MODULE_PARM_DESC(send_queue_size, "Number of descriptors in send queue (2..8192, power of two)");
module_param_named(recv_queue_size, ipoib_recvq_size, int, 0444);
MODULE_PARM_DESC(recv_queue_size, "Number of descriptors in receive queue (2..8192, power of two)");

#define IPOIB_RING_MIN	2
#define IPOIB_RING_MAX	8192

/* The ipoib_dev of every port of one device: the client data. */
struct ipoib_ca {
	struct list_head	devs;
};

static void ipoib_add_one(struct ib_device *device);
static void ipoib_remove_one(struct ib_device *device);

static struct ib_client ipoib_client = {
	.name	= "ipoib",
	.add	= ipoib_add_one,
	.remove	= ipoib_remove_one,
};

/* --- header_ops ------------------------------------------------------------- */

static int ipoib_hard_header(struct sk_buff *skb, struct net_device *dev,
			     unsigned short type, const void *daddr,
			     const void *saddr, unsigned int len)
{
	struct ipoib_encap *encap;
	struct ipoib_pseudo *pseudo;

	if (!daddr)
		return -EINVAL;
	encap = skb_push(skb, sizeof(*encap));
	encap->proto = htons(type);
	encap->reserved = 0;
	pseudo = skb_push(skb, sizeof(*pseudo));
	memcpy(pseudo->hwaddr, daddr, IPOIB_ALEN);
	return IPOIB_HARD_LEN;
}

static const struct header_ops ipoib_header_ops = {
	.create	= ipoib_hard_header,
};

/* --- net_device_ops ------------------------------------------------------- */

static int ipoib_open(struct net_device *dev)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	u16 index;
	int ret;

	netif_carrier_off(dev);
	if (priv->parent) {
		/*
		 * As 6.1: a child whose P_Key the port's table lacks (the SM
		 * did not make the port a member) comes up without a QP or
		 * carrier; ifdown/ifup looks again.
		 */
		if (ib_find_cached_pkey(priv->ca, priv->port, priv->pkey, &index)) {
			netdev_info(dev, "P_Key 0x%04x not found in the port's table: no carrier\n",
				    priv->pkey);
			set_bit(IPOIB_FLAG_NO_PKEY, &priv->flags);
			return 0;
		}
		priv->pkey_index = index;
	}
	ret = ipoib_ib_up(priv);
	if (ret)
		return ret;
	ret = ipoib_cm_up(priv);
	if (ret) {
		netdev_warn(dev, "connected mode resources: %d\n", ret);
		ipoib_ib_down(priv);
		return ret;
	}
	spin_lock_bh(&priv->lock);
	set_bit(IPOIB_FLAG_UP, &priv->flags);
	spin_unlock_bh(&priv->lock);
	ipoib_mcast_restart(priv);
	netif_start_queue(dev);
	return 0;
}

static int ipoib_stop(struct net_device *dev)
{
	struct ipoib_dev *priv = ipoib_priv(dev);

	netif_stop_queue(dev);
	netif_carrier_off(dev);
	if (test_and_clear_bit(IPOIB_FLAG_NO_PKEY, &priv->flags))
		return 0;	/* nothing was brought up */
	spin_lock_bh(&priv->lock);
	clear_bit(IPOIB_FLAG_UP, &priv->flags);
	spin_unlock_bh(&priv->lock);

	cancel_delayed_work_sync(&priv->mcast_task);
	cancel_work_sync(&priv->path_task);
	cancel_work_sync(&priv->flush_task);
	cancel_delayed_work_sync(&priv->mtu_task);

	ipoib_mcast_flush(priv, true);
	ipoib_path_flush(priv);
	ipoib_cm_down(priv);
	/* A callback that ran before the flush may have queued these. */
	cancel_delayed_work_sync(&priv->mcast_task);
	cancel_delayed_work_sync(&priv->mtu_task);

	ipoib_ib_down(priv);
	spin_lock_bh(&priv->lock);
	priv->mcast_mtu = 0;
	spin_unlock_bh(&priv->lock);
	return 0;
}

static netdev_tx_t ipoib_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	u8 hwaddr[IPOIB_ALEN];

	if (skb->len < IPOIB_HARD_LEN || !test_bit(IPOIB_FLAG_QP_READY, &priv->flags)) {
		dev->stats.tx_dropped++;
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	memcpy(hwaddr, skb->data, IPOIB_ALEN);
	skb_pull(skb, IPOIB_ALEN);

	if (ipoib_hwaddr_is_mcast(hwaddr))
		return ipoib_mcast_send(priv, hwaddr, skb);
	return ipoib_unicast_send(priv, hwaddr, skb);
}

static void ipoib_set_rx_mode(struct net_device *dev)
{
	ipoib_mcast_restart(ipoib_priv(dev));
}

static int ipoib_change_mtu(struct net_device *dev, int new_mtu)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	int limit;

	spin_lock_bh(&priv->lock);
	limit = priv->mcast_mtu ? min(priv->mcast_mtu, priv->max_ib_mtu) : priv->max_ib_mtu;
	spin_unlock_bh(&priv->lock);
	if (new_mtu > ipoib_mtu_limit(test_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags),
				      priv->cm_mtu, ipoib_mtu_from_ib(limit)))
		return -EINVAL;
	dev->mtu = new_mtu;
	return 0;
}

static void ipoib_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct ipoib_dev *priv = ipoib_priv(dev);

	netdev_warn(dev, "transmit timeout: %u sends outstanding\n",
		    READ_ONCE(priv->tx_head) - READ_ONCE(priv->tx_tail));
}

static const struct net_device_ops ipoib_netdev_ops = {
	.ndo_open		= ipoib_open,
	.ndo_stop		= ipoib_stop,
	.ndo_start_xmit		= ipoib_start_xmit,
	.ndo_set_rx_mode	= ipoib_set_rx_mode,
	.ndo_change_mtu		= ipoib_change_mtu,
	.ndo_tx_timeout		= ipoib_tx_timeout,
};

void ipoib_setup(struct net_device *dev)
{
	dev->netdev_ops = &ipoib_netdev_ops;
	dev->header_ops = &ipoib_header_ops;
	dev->ethtool_ops = &ipoib_ethtool_ops;
	dev->type = ARPHRD_INFINIBAND;
	dev->addr_len = IPOIB_ALEN;
	dev->hard_header_len = IPOIB_HARD_LEN;
	dev->flags = IFF_BROADCAST | IFF_MULTICAST;
	dev->watchdog_timeo = 5 * HZ;
	dev->min_mtu = 68;
	dev->mtu = 2044;
	dev->max_mtu = 2044;
}

/* --- events ----------------------------------------------------------------- */

/*
 * The flush after a port event: paths and groups are forgotten (the SM may
 * have new LIDs, or have lost every membership), the carrier stays off
 * until the broadcast group is joined again. On priv->wq; it may run after
 * ndo_stop began (the event handler cannot take priv->lock), and then only
 * finds empty lists.
 */
static void ipoib_flush_task(struct work_struct *work)
{
	struct ipoib_dev *priv = container_of(work, struct ipoib_dev, flush_task);
	unsigned long events = xchg(&priv->pending_events, 0);
	union ib_gid gid;
	u16 index;

	netdev_dbg(priv->dev, "flush after events 0x%lx\n", events);
	netif_carrier_off(priv->dev);
	ipoib_path_flush(priv);
	ipoib_mcast_flush(priv, false);

	if (!ib_query_gid(priv->ca, priv->port, 0, &gid) &&
	    memcmp(gid.raw, priv->gid.raw, sizeof(gid.raw)))
		netdev_warn(priv->dev, "port GID changed to %pI6; the hardware address keeps the old one\n",
			    gid.raw);
	if (events & BIT(IB_EVENT_PKEY_CHANGE)) {
		if (ib_find_cached_pkey(priv->ca, priv->port, priv->pkey, &index) &&
		    ib_find_cached_pkey(priv->ca, priv->port, priv->pkey & 0x7fff, &index))
			netdev_warn(priv->dev, "P_Key 0x%04x is no longer in the table\n",
				    priv->pkey);
		else if (index != priv->pkey_index)
			netdev_warn(priv->dev, "P_Key 0x%04x moved to index %u: ifdown/ifup to use it\n",
				    priv->pkey, index);
	}
	if (!(events & BIT(IB_EVENT_PORT_ERR)) || (events & BIT(IB_EVENT_PORT_ACTIVE)))
		ipoib_mcast_restart(priv);
}

static void ipoib_event(struct ib_event_handler *handler, struct ib_event *event)
{
	struct ipoib_dev *priv = container_of(handler, struct ipoib_dev, event_handler);

	if (!ib_event_is_port_change(event->event) ||
	    event->element.port_num != priv->port)
		return;
	set_bit(event->event, &priv->pending_events);
	if (event->event == IB_EVENT_PORT_ERR)
		netif_carrier_off(priv->dev);
	if (test_bit(IPOIB_FLAG_UP, &priv->flags))
		queue_work(priv->wq, &priv->flush_task);
}

/* --- devices ---------------------------------------------------------------- */

/*
 * Fills the private part of @dev, an allocated and not yet registered
 * net_device, for @port of @ca and the P_Key @pkey (full-member bit set):
 * work queue, PD/CQ/UD QP, NAPI contexts, hardware and broadcast
 * addresses, the event handler. Undone by ipoib_dev_uninit(); on error
 * nothing is left but @dev itself.
 */
static int ipoib_dev_init(struct net_device *dev, struct ib_device *ca, u8 port,
			  u16 pkey)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	struct ib_device_attr dattr;
	struct ib_port_attr attr;
	u8 addr[IPOIB_ALEN];
	int ret;

	ret = ib_query_port(ca, port, &attr);
	if (ret)
		return ret;
	ret = ib_query_device(ca, &dattr);
	if (ret)
		return ret;

	priv->dev = dev;
	priv->ca = ca;
	priv->port = port;
	priv->pkey = pkey;
	priv->pkey_index = 0;
	INIT_LIST_HEAD(&priv->children);
	INIT_LIST_HEAD(&priv->child_list);
	priv->lid = attr.lid;
	priv->max_ib_mtu = ib_mtu_enum_to_int(attr.max_mtu);
	priv->rx_buf_size = priv->max_ib_mtu + IPOIB_GRH_LEN;
	priv->tx_size = ipoib_ring_size(ipoib_sendq_size, IPOIB_RING_MIN, IPOIB_RING_MAX);
	priv->rx_size = ipoib_ring_size(ipoib_recvq_size, IPOIB_RING_MIN, IPOIB_RING_MAX);
	spin_lock_init(&priv->lock);
	spin_lock_init(&priv->ah_lock);
	INIT_LIST_HEAD(&priv->dead_ahs);
	ipoib_mcast_init(priv);
	ipoib_path_init(priv);
	INIT_DELAYED_WORK(&priv->mcast_task, ipoib_mcast_task);
	INIT_WORK(&priv->path_task, ipoib_path_task);
	INIT_WORK(&priv->flush_task, ipoib_flush_task);
	INIT_WORK(&priv->reap_task, ipoib_reap_task);
	INIT_DELAYED_WORK(&priv->mtu_task, ipoib_mcast_mtu_task);
	ipoib_cm_init(priv);
	priv->cm_mtu = ipoib_cm_max_mtu(dattr.max_srq_sge, PAGE_SIZE);
	priv->cm_supported = dattr.max_srq > 0 && priv->cm_mtu > 0;
	priv->cm_buf_size = priv->cm_mtu + IPOIB_ENCAP_LEN;
	priv->ca_ack_delay = dattr.local_ca_ack_delay;

	ret = ib_query_gid(ca, port, 0, &priv->gid);
	if (ret)
		return ret;

	priv->wq = alloc_ordered_workqueue("ipoib_%s_%u_%04x", WQ_MEM_RECLAIM,
					   dev_name(&ca->dev), port, pkey);
	if (!priv->wq)
		return -ENOMEM;
	ret = ipoib_ib_init(priv);
	if (ret)
		goto err_wq;

	netif_napi_add(dev, &priv->napi, ipoib_napi_poll);
	netif_napi_add(dev, &priv->cm_napi, ipoib_cm_napi_poll);
	dev->mtu = ipoib_mtu_from_ib(priv->max_ib_mtu);
	dev->max_mtu = priv->cm_supported ? priv->cm_mtu : dev->mtu;
	dev->tx_queue_len = priv->tx_size * 2;
	dev->dev_port = port - 1;
	ipoib_build_hwaddr(addr, priv->qp->qp_num, &priv->gid,
			   priv->cm_supported ? IPOIB_FLAGS_RC : 0);
	dev_addr_set(dev, addr);
	ipoib_build_broadcast(dev->broadcast, priv->pkey);
	netif_carrier_off(dev);

	INIT_IB_EVENT_HANDLER(&priv->event_handler, ca, ipoib_event);
	ret = ib_register_event_handler(&priv->event_handler);
	if (ret)
		goto err_ib;
	return 0;

err_ib:
	netif_napi_del(&priv->cm_napi);
	netif_napi_del(&priv->napi);
	ipoib_ib_cleanup(priv);
err_wq:
	destroy_workqueue(priv->wq);
	return ret;
}

/*
 * Undoes ipoib_dev_init() once the net_device is unregistered (or never
 * was): no event can queue work once the handler is gone, ndo_stop ran if
 * the interface was up, and what the work queue still holds (a reaper
 * run) ends with it. The net_device itself is the caller's to free.
 */
static void ipoib_dev_uninit(struct ipoib_dev *priv)
{
	ib_unregister_event_handler(&priv->event_handler);
	destroy_workqueue(priv->wq);
	netif_napi_del(&priv->cm_napi);
	netif_napi_del(&priv->napi);
	ipoib_ib_cleanup(priv);		/* reaps the last address handles */
}

static struct ipoib_dev *ipoib_add_port(struct ib_device *ca, u8 port)
{
	struct net_device *dev;
	u16 pkey;
	int ret;

	ret = ib_query_pkey(ca, port, 0, &pkey);
	if (ret)
		return ERR_PTR(ret);
	dev = alloc_netdev(sizeof(struct ipoib_dev), "ib%d", NET_NAME_UNKNOWN,
			   ipoib_setup);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	ret = ipoib_dev_init(dev, ca, port, ipoib_full_pkey(pkey));
	if (ret)
		goto err_free;
	dev->sysfs_groups[0] = &ipoib_attr_group;
	dev->rtnl_link_ops = &ipoib_link_ops;
	/* The PCI function: for a port's interface only (none for children, as 6.1). */
	SET_NETDEV_DEV(dev, ca->dma_device);
	ret = register_netdev(dev);
	if (ret)
		goto err_uninit;
	return ipoib_priv(dev);

err_uninit:
	ipoib_dev_uninit(ipoib_priv(dev));
err_free:
	free_netdev(dev);
	return ERR_PTR(ret);
}

/*
 * Unregisters a port's net_device and its P_Key children, children
 * first, in one RTNL section (no child can be added in between); the
 * children's destructors run in rtnl_unlock().
 */
static void ipoib_remove_port(struct ipoib_dev *priv)
{
	struct ipoib_dev *child, *tmp;

	rtnl_lock();
	list_for_each_entry_safe_reverse(child, tmp, &priv->children, child_list) {
		list_del_init(&child->child_list);
		unregister_netdevice(child->dev);
	}
	unregister_netdevice(priv->dev);
	rtnl_unlock();
	ipoib_dev_uninit(priv);
	free_netdev(priv->dev);
}

/* The priv_destructor of a child: after its unregistration, without RTNL. */
static void ipoib_child_destructor(struct net_device *dev)
{
	ipoib_dev_uninit(ipoib_priv(dev));
}

/* Is @pkey free for a sysfs child of @ppriv? 6.1 refuses duplicates there. */
static bool ipoib_child_pkey_free(struct ipoib_dev *ppriv, u16 pkey)
{
	struct ipoib_dev *child;

	if (ppriv->pkey == pkey)
		return false;
	list_for_each_entry(child, &ppriv->children, child_list)
		if (child->sysfs_child && child->pkey == pkey)
			return false;
	return true;
}

/**
 * ipoib_child_register() - make @dev a P_Key child of @ppriv and register it
 * @ppriv: the parent, a registered port interface (not a child)
 * @dev: allocated with ipoib_setup(), not initialised yet
 * @pkey: the P_Key as given; the full-member bit is forced on
 * @sysfs_child: made through create_child (its own sysfs files, found by
 *	delete_child), else through rtnetlink
 *
 * The child gets its own UD QP, CM listener and broadcast group; the
 * P_Key's index is looked up when it goes up. Caller holds RTNL. On
 * error @dev is left for the caller to free.
 *
 * Return: 0 or a negative errno.
 */
int ipoib_child_register(struct ipoib_dev *ppriv, struct net_device *dev,
			 u16 pkey, bool sysfs_child)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	int ret;

	ASSERT_RTNL();
	if (ipoib_child_pkey_check(pkey))
		return -EINVAL;
	if (sysfs_child && !ipoib_child_pkey_free(ppriv, ipoib_full_pkey(pkey)))
		return -ENOTUNIQ;
	ret = ipoib_dev_init(dev, ppriv->ca, ppriv->port, ipoib_full_pkey(pkey));
	if (ret)
		return ret;
	priv->parent = ppriv->dev;
	priv->sysfs_child = sysfs_child;
	dev->sysfs_groups[0] = sysfs_child ? &ipoib_child_attr_group : NULL;
	dev->rtnl_link_ops = &ipoib_link_ops;
	ret = register_netdevice(dev);
	if (ret) {
		ipoib_dev_uninit(priv);
		return ret;
	}
	dev->priv_destructor = ipoib_child_destructor;
	dev->needs_free_netdev = true;
	list_add_tail(&priv->child_list, &ppriv->children);
	return 0;
}

/**
 * ipoib_child_add() - sysfs create_child: a child named "<parent>.<pkey>"
 * @pdev: the parent's net_device
 * @pkey: checked by ipoib_child_pkey_check()
 *
 * Return: 0, -EPERM (no CAP_NET_ADMIN, parent going away), -ENOTUNIQ
 * (the parent's or another sysfs child's P_Key), or what the creation
 * gives.
 */
int ipoib_child_add(struct net_device *pdev, u16 pkey)
{
	char name[IFNAMSIZ];
	struct net_device *dev;
	int ret;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	/* The parent's sysfs files go away under RTNL. */
	if (!rtnl_trylock())
		return restart_syscall();
	if (pdev->reg_state != NETREG_REGISTERED || ipoib_priv(pdev)->parent) {
		ret = -EPERM;
		goto out;
	}
	ipoib_child_name(name, sizeof(name), pdev->name, pkey);
	dev = alloc_netdev(sizeof(struct ipoib_dev), name, NET_NAME_UNKNOWN,
			   ipoib_setup);
	if (!dev) {
		ret = -ENOMEM;
		goto out;
	}
	ret = ipoib_child_register(ipoib_priv(pdev), dev, pkey, true);
	if (ret)
		free_netdev(dev);
out:
	rtnl_unlock();
	return ret;
}

/**
 * ipoib_child_del() - sysfs delete_child: unregister the sysfs child @pkey
 * @pdev: the parent's net_device
 * @pkey: the P_Key as written (the full-member bit is forced on)
 *
 * Return: 0, -EPERM, or -ENODEV when no sysfs child has that P_Key.
 */
int ipoib_child_del(struct net_device *pdev, u16 pkey)
{
	struct ipoib_dev *ppriv = ipoib_priv(pdev), *child;
	int ret = -ENODEV;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	if (!rtnl_trylock())
		return restart_syscall();
	if (pdev->reg_state != NETREG_REGISTERED) {
		ret = -EPERM;
		goto out;
	}
	list_for_each_entry(child, &ppriv->children, child_list) {
		if (child->sysfs_child && child->pkey == ipoib_full_pkey(pkey)) {
			ipoib_child_unlink(child);
			unregister_netdevice(child->dev);
			ret = 0;
			break;
		}
	}
out:
	rtnl_unlock();	/* the child's destructor runs here */
	return ret;
}

/**
 * ipoib_child_unlink() - take a child off its parent's list
 * @priv: the child, about to be unregistered; caller holds RTNL
 */
void ipoib_child_unlink(struct ipoib_dev *priv)
{
	ASSERT_RTNL();
	list_del_init(&priv->child_list);
}

/**
 * ipoib_is_ours() - is @dev one of ib_ipoib's net_devices?
 * @dev: any net_device
 *
 * Return: true if its ops are ours (so its private part is an ipoib_dev).
 */
bool ipoib_is_ours(const struct net_device *dev)
{
	return dev->netdev_ops == &ipoib_netdev_ops;
}

static void ipoib_add_one(struct ib_device *device)
{
	struct ipoib_dev *priv;
	struct ipoib_ca *ca;
	u8 p;

	ca = kzalloc(sizeof(*ca), GFP_KERNEL);
	if (!ca)
		return;
	INIT_LIST_HEAD(&ca->devs);
	for (p = rdma_start_port(device); p <= rdma_end_port(device); p++) {
		if (p == 0)
			continue;	/* a switch's management port */
		priv = ipoib_add_port(device, p);
		if (IS_ERR(priv)) {
			dev_warn(device->dma_device, "ipoib: port %u: %ld\n",
				 p, PTR_ERR(priv));
			continue;
		}
		list_add_tail(&priv->list, &ca->devs);
	}
	ib_set_client_data(device, &ipoib_client, ca);
}

static void ipoib_remove_one(struct ib_device *device)
{
	struct ipoib_ca *ca = ib_get_client_data(device, &ipoib_client);
	struct ipoib_dev *priv, *tmp;

	if (!ca)
		return;
	list_for_each_entry_safe(priv, tmp, &ca->devs, list) {
		list_del(&priv->list);
		ipoib_remove_port(priv);
	}
	kfree(ca);
}

static int __init ipoib_init(void)
{
	int ret;

	ret = rtnl_link_register(&ipoib_link_ops);
	if (ret)
		return ret;
	ret = ib_register_client(&ipoib_client);
	if (ret)
		rtnl_link_unregister(&ipoib_link_ops);
	return ret;
}

/*
 * The client goes first: its removal unregisters every interface, the
 * children before their parent; rtnl_link_unregister() then finds none.
 */
static void __exit ipoib_exit(void)
{
	ib_unregister_client(&ipoib_client);
	rtnl_link_unregister(&ipoib_link_ops);
}

module_init(ipoib_init);
module_exit(ipoib_exit);
