// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib's sysfs files under /sys/class/net/ib%d/, as the 6.1 IPoIB
 * has them:
 *   mode    (rw) "datagram"; only datagram mode exists here, so writing
 *           "connected\n" fails (EOPNOTSUPP) and "datagram\n" is accepted;
 *           anything else is EINVAL (the strings include the newline)
 *   pkey    (ro) "0x%04x\n", the full-member bit set
 *   umcast  (rw) 0/1: let sends to groups outside IPoIB's (no 0x401b or
 *           0x601b signature) join them as a send-only member
 */
#include <linux/device.h>
#include <linux/netdevice.h>
#include <linux/string.h>

#include "ipoib.h"

static struct ipoib_dev *ipoib_from_dev(struct device *d)
{
	return ipoib_priv(to_net_dev(d));
}

static ssize_t mode_show(struct device *d, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "datagram\n");
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	if (!strcmp(buf, "datagram\n"))
		return count;
	if (!strcmp(buf, "connected\n"))
		return -EOPNOTSUPP;
	return -EINVAL;
}
static DEVICE_ATTR_RW(mode);

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
	NULL,
};

const struct attribute_group ipoib_attr_group = {
	.attrs = ipoib_attrs,
};
