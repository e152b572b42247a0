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
 * and one of ours (upstream has none):
 *   cm_connections (ro) the connected-mode connections, one a line
 */
#include <linux/device.h>
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

static struct attribute *ipoib_attrs[] = {
	&dev_attr_mode.attr,
	&dev_attr_pkey.attr,
	&dev_attr_umcast.attr,
	&dev_attr_cm_connections.attr,
	NULL,
};

const struct attribute_group ipoib_attr_group = {
	.attrs = ipoib_attrs,
};
