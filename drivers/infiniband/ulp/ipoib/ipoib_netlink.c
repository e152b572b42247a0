// SPDX-License-Identifier: GPL-2.0
/*
 * The rtnetlink link kind "ipoib": `ip link add link ib0 name ib0.8002
 * type ipoib pkey 0x8002 mode connected umcast 1` makes a P_Key child of
 * a port interface, `ip link set ib0.8002 type ipoib mode datagram`
 * changes it, `ip link del ib0.8002` removes it, and `ip -d link show`
 * prints the three attributes (IFLA_IPOIB_PKEY, _MODE, _UMCAST, each a
 * u16). MODULE_ALIAS_RTNL_LINK lets `ip link add` load the module.
 */
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/netlink.h>
#include <net/rtnetlink.h>

#include "ipoib.h"

MODULE_ALIAS_RTNL_LINK("ipoib");

/* The values of IFLA_IPOIB_MODE (iproute2's "mode datagram|connected"). */
enum {
	IPOIB_LINK_MODE_DATAGRAM	= 0,
	IPOIB_LINK_MODE_CONNECTED	= 1,
};

static const struct nla_policy ipoib_link_policy[IFLA_IPOIB_MAX + 1] = {
	[IFLA_IPOIB_PKEY]	= { .type = NLA_U16 },
	[IFLA_IPOIB_MODE]	= { .type = NLA_U16 },
	[IFLA_IPOIB_UMCAST]	= { .type = NLA_U16 },
};

static int ipoib_link_change(struct net_device *dev, struct nlattr *tb[],
			     struct nlattr *data[], struct netlink_ext_ack *extack)
{
	struct ipoib_dev *priv = ipoib_priv(dev);
	int ret;

	if (!data)
		return 0;
	if (data[IFLA_IPOIB_MODE]) {
		switch (nla_get_u16(data[IFLA_IPOIB_MODE])) {
		case IPOIB_LINK_MODE_DATAGRAM:
			ret = ipoib_cm_set_mode(priv, false);
			break;
		case IPOIB_LINK_MODE_CONNECTED:
			ret = ipoib_cm_set_mode(priv, true);
			break;
		default:
			NL_SET_ERR_MSG(extack, "ipoib mode is 0 (datagram) or 1 (connected)");
			return -EINVAL;
		}
		if (ret)
			return ret;
	}
	if (data[IFLA_IPOIB_UMCAST]) {
		if (nla_get_u16(data[IFLA_IPOIB_UMCAST]))
			set_bit(IPOIB_FLAG_UMCAST, &priv->flags);
		else
			clear_bit(IPOIB_FLAG_UMCAST, &priv->flags);
	}
	return 0;
}

static int ipoib_link_new(struct net *src_net, struct net_device *dev,
			  struct nlattr *tb[], struct nlattr *data[],
			  struct netlink_ext_ack *extack)
{
	struct net_device *pdev;
	struct ipoib_dev *ppriv;
	u16 pkey;
	int ret;

	if (!tb[IFLA_LINK]) {
		NL_SET_ERR_MSG(extack, "ipoib needs a parent (link)");
		return -EINVAL;
	}
	pdev = __dev_get_by_index(src_net, nla_get_u32(tb[IFLA_LINK]));
	if (!pdev || pdev->type != ARPHRD_INFINIBAND || !ipoib_is_ours(pdev))
		return -ENODEV;
	ppriv = ipoib_priv(pdev);
	if (ppriv->parent) {
		NL_SET_ERR_MSG(extack, "a P_Key child has no children");
		return -EINVAL;
	}
	pkey = ppriv->pkey;
	if (data && data[IFLA_IPOIB_PKEY])
		pkey = nla_get_u16(data[IFLA_IPOIB_PKEY]);

	ret = ipoib_child_register(ppriv, dev, pkey, false);
	if (ret)
		return ret;
	ret = ipoib_link_change(dev, tb, data, extack);
	if (ret) {
		ipoib_child_unlink(ipoib_priv(dev));
		unregister_netdevice(dev);
	}
	return ret;
}

/* Only children go; a port's interface stays as long as its port. */
static void ipoib_link_del(struct net_device *dev, struct list_head *head)
{
	struct ipoib_dev *priv = ipoib_priv(dev);

	if (!priv->parent)
		return;
	ipoib_child_unlink(priv);
	unregister_netdevice_queue(dev, head);
}

static size_t ipoib_link_size(const struct net_device *dev)
{
	return 3 * nla_total_size(sizeof(u16));
}

static int ipoib_link_fill(struct sk_buff *skb, const struct net_device *dev)
{
	struct ipoib_dev *priv = ipoib_priv(dev);

	if (nla_put_u16(skb, IFLA_IPOIB_PKEY, priv->pkey) ||
	    nla_put_u16(skb, IFLA_IPOIB_MODE,
			test_bit(IPOIB_FLAG_CM_ADMIN, &priv->flags) ?
			IPOIB_LINK_MODE_CONNECTED : IPOIB_LINK_MODE_DATAGRAM) ||
	    nla_put_u16(skb, IFLA_IPOIB_UMCAST,
			test_bit(IPOIB_FLAG_UMCAST, &priv->flags)))
		return -EMSGSIZE;
	return 0;
}

struct rtnl_link_ops ipoib_link_ops = {
	.kind		= "ipoib",
	.priv_size	= sizeof(struct ipoib_dev),
	.setup		= ipoib_setup,
	.maxtype	= IFLA_IPOIB_MAX,
	.policy		= ipoib_link_policy,
	.newlink	= ipoib_link_new,
	.changelink	= ipoib_link_change,
	.dellink	= ipoib_link_del,
	.get_size	= ipoib_link_size,
	.fill_info	= ipoib_link_fill,
};
