// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's sysfs files under /sys/class/net/ib%d/, as the 6.1 IPoIB
 * has them:
 *   mode    (rw) "datagram" or "connected"; "connected\n" switches to
 *           connected mode (MTU 65520; EOPNOTSUPP on an HCA without
 *           SRQs), "datagram\n" back (MTU lowered to the datagram one);
 *           anything else is EINVAL (the strings include the newline)
 *   pkey    (ro) "0x%04x\n", the full-member bit set
 *   umcast  (rw) 0/1: let sends to groups outside IPoIB's (no 0x401b or
 *           0x601b signature) join them as a send-only member
 *   create_child (wo, port interfaces) a P_Key: makes the child
 *           "<parent>.<pkey as 4 hex digits>"; 0, 0x8000 and > 0xffff are
 *           EINVAL, the parent's or another sysfs child's P_Key ENOTUNIQ
 *   delete_child (wo, port interfaces) a P_Key: unregisters that sysfs
 *           child, ENODEV if there is none
 *   parent  (ro, sysfs children) the parent's name
 * and one of ours (upstream has none):
 *   cm_connections (ro) the connected-mode connections, one a line
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/string.h>

#include "ipoib.h"

static struct ipoib_dev *ipoib_from_dev(struct device *d)
{
	return ipoib_priv(to_net_dev(d));
}

static ssize_t mode_show(struct device *d, struct device_attribute *attr, char *buf)
{
	bool cm = test_bit(IPOIB_FLAG_CM_ADMIN, &ipoib_from_dev(d)->flags);

	return sysfs_emit(buf, cm ? "connected\n" : "datagram\n");
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	bool connected;
	int ret;

	if (!strcmp(buf, "connected\n"))
		connected = true;
	else if (!strcmp(buf, "datagram\n"))
		connected = false;
	else
		return -EINVAL;
	/* The MTU change needs RTNL, which may be waiting on sysfs. */
	if (!rtnl_trylock())
		return restart_syscall();
	ret = ipoib_cm_set_mode(ipoib_from_dev(d), connected);
	rtnl_unlock();
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t cm_connections_show(struct device *d, struct device_attribute *attr,
				   char *buf)
{
	return ipoib_cm_show(ipoib_from_dev(d), buf);
}
static DEVICE_ATTR_RO(cm_connections);

static ssize_t pkey_show(struct device *d, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", ipoib_from_dev(d)->pkey);
}
static DEVICE_ATTR_RO(pkey);

static ssize_t umcast_show(struct device *d, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  test_bit(IPOIB_FLAG_UMCAST, &ipoib_from_dev(d)->flags));
}

static ssize_t umcast_store(struct device *d, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct ipoib_dev *priv = ipoib_from_dev(d);
	unsigned long on;
	int ret;

	ret = kstrtoul(buf, 0, &on);
	if (ret)
		return ret;
	if (on)
		set_bit(IPOIB_FLAG_UMCAST, &priv->flags);
	else
		clear_bit(IPOIB_FLAG_UMCAST, &priv->flags);
	return count;
}
static DEVICE_ATTR_RW(umcast);

/* create_child and delete_child read a number as "%i" does: 0x.., 0.., decimal. */
static int ipoib_parse_pkey(const char *buf, int *pkey)
{
	return kstrtoint(buf, 0, pkey) ? -EINVAL : 0;
}

static ssize_t create_child_store(struct device *d, struct device_attribute *attr,
				  const char *buf, size_t count)
{
	int pkey, ret;

	ret = ipoib_parse_pkey(buf, &pkey);
	if (!ret)
		ret = ipoib_child_pkey_check(pkey);
	if (!ret)
		ret = ipoib_child_add(to_net_dev(d), pkey);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(create_child);

static ssize_t delete_child_store(struct device *d, struct device_attribute *attr,
				  const char *buf, size_t count)
{
	int pkey, ret;

	ret = ipoib_parse_pkey(buf, &pkey);
	if (!ret && (pkey < 0 || pkey > 0xffff))
		ret = -EINVAL;
	if (!ret)
		ret = ipoib_child_del(to_net_dev(d), pkey);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(delete_child);

/* A child's parent; RTNL keeps the pointer (and the parent) alive. */
static ssize_t parent_show(struct device *d, struct device_attribute *attr, char *buf)
{
	struct ipoib_dev *priv = ipoib_from_dev(d);
	ssize_t ret;

	if (!rtnl_trylock())
		return restart_syscall();
	ret = sysfs_emit(buf, "%s\n", priv->parent ? priv->parent->name : "");
	rtnl_unlock();
	return ret;
}
static DEVICE_ATTR_RO(parent);

/* A port's interface: no parent file, children made from here. */
static struct attribute *ipoib_attrs[] = {
	&dev_attr_mode.attr,
	&dev_attr_pkey.attr,
	&dev_attr_umcast.attr,
	&dev_attr_cm_connections.attr,
	&dev_attr_create_child.attr,
	&dev_attr_delete_child.attr,
	NULL,
};

const struct attribute_group ipoib_attr_group = {
	.attrs = ipoib_attrs,
};

/* A create_child child: a parent file, no children of its own (as 6.1). */
static struct attribute *ipoib_child_attrs[] = {
	&dev_attr_mode.attr,
	&dev_attr_pkey.attr,
	&dev_attr_umcast.attr,
	&dev_attr_cm_connections.attr,
	&dev_attr_parent.attr,
	NULL,
};

const struct attribute_group ipoib_child_attr_group = {
	.attrs = ipoib_child_attrs,
};
