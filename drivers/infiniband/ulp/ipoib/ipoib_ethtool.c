// SPDX-License-Identifier: GPL-2.0
/*
 * ethtool for ib_ipoib's interfaces: `ethtool -i` gives the driver name
 * "ib_ipoib" (as 6.1's) and, as bus-info, the name of the HCA's parent
 * device (its PCI function); `ethtool -S` the interface's counters under
 * 6.1's names, then two of ours: the connected-mode connections up now,
 * active (tx) and passive (rx).
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/string.h>

#include "ipoib.h"

/* The counters of dev->stats that ethtool -S shows, in this order. */
static const struct {
	char	name[ETH_GSTRING_LEN];
	size_t	offset;
} ipoib_netdev_counters[] = {
	{ "rx_packets",	offsetof(struct net_device_stats, rx_packets) },
	{ "tx_packets",	offsetof(struct net_device_stats, tx_packets) },
	{ "rx_bytes",	offsetof(struct net_device_stats, rx_bytes) },
	{ "tx_bytes",	offsetof(struct net_device_stats, tx_bytes) },
	{ "tx_errors",	offsetof(struct net_device_stats, tx_errors) },
	{ "rx_dropped",	offsetof(struct net_device_stats, rx_dropped) },
	{ "tx_dropped",	offsetof(struct net_device_stats, tx_dropped) },
	{ "multicast",	offsetof(struct net_device_stats, multicast) },
};

static const char ipoib_cm_counters[][ETH_GSTRING_LEN] = {
	"cm_tx_connections",
	"cm_rx_connections",
};

#define IPOIB_NR_COUNTERS \
	(ARRAY_SIZE(ipoib_netdev_counters) + ARRAY_SIZE(ipoib_cm_counters))

static void ipoib_get_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	struct device *bus = ipoib_priv(dev)->ca->dev.parent;

	strscpy(info->driver, "ib_ipoib", sizeof(info->driver));
	if (bus)
		strscpy(info->bus_info, dev_name(bus), sizeof(info->bus_info));
}

static int ipoib_get_sset_count(struct net_device *dev, int sset)
{
	return sset == ETH_SS_STATS ? IPOIB_NR_COUNTERS : -EOPNOTSUPP;
}

static void ipoib_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(ipoib_netdev_counters); i++, data += ETH_GSTRING_LEN)
		memcpy(data, ipoib_netdev_counters[i].name, ETH_GSTRING_LEN);
	for (i = 0; i < ARRAY_SIZE(ipoib_cm_counters); i++, data += ETH_GSTRING_LEN)
		memcpy(data, ipoib_cm_counters[i], ETH_GSTRING_LEN);
}

/* Counts the connections of @list in state UP; caller holds priv->lock. */
static u64 ipoib_count_up_tx(struct list_head *list)
{
	struct ipoib_cm_tx *tx;
	u64 n = 0;

	list_for_each_entry(tx, list, list)
		n += tx->state == IPOIB_CM_UP;
	return n;
}

static u64 ipoib_count_up_rx(struct list_head *list)
{
	struct ipoib_cm_rx *rx;
	u64 n = 0;

	list_for_each_entry(rx, list, list)
		n += rx->state == IPOIB_CM_UP;
	return n;
}

static void ipoib_get_stats(struct net_device *dev, struct ethtool_stats *stats,
			    u64 *data)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	const u8 *base = (const u8 *)&dev->stats;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ipoib_netdev_counters); i++)
		*data++ = *(const unsigned long *)(base + ipoib_netdev_counters[i].offset);
	spin_lock_bh(&priv->lock);
	*data++ = ipoib_count_up_tx(&priv->cm_tx);
	*data++ = ipoib_count_up_rx(&priv->cm_rx);
	spin_unlock_bh(&priv->lock);
}

const struct ethtool_ops ipoib_ethtool_ops = {
	.get_drvinfo		= ipoib_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_sset_count		= ipoib_get_sset_count,
	.get_strings		= ipoib_get_strings,
	.get_ethtool_stats	= ipoib_get_stats,
};
