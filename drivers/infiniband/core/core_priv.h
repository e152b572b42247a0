/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the parts of ib_core (device.c, cache.c, sysfs.c, core_module.c)
 * share with each other and with nobody else.
 */
#ifndef IB_CORE_PRIV_H
#define IB_CORE_PRIV_H

#include <linux/device.h>
#include <rdma/ib_verbs.h>

/* The "infiniband" device class; registered at module load (sysfs.c). */
extern struct class ib_class;

int ib_sysfs_init(void);
void ib_sysfs_exit(void);

/*
 * Put a device into / take it out of sysfs. The device's name is set;
 * called under the core's device mutex; may sleep.
 */
int ib_device_register_sysfs(struct ib_device *device);
void ib_device_unregister_sysfs(struct ib_device *device);

/* The GID/P_Key cache of one device, built at registration (cache.c). */
int ib_cache_init(void);
void ib_cache_exit(void);
int ib_cache_setup_one(struct ib_device *device);
void ib_cache_cleanup_one(struct ib_device *device);
/* Wait until every cache refresh queued so far has run (for tests). */
void ib_cache_flush(void);

/* Device release for the class: frees what ib_alloc_device() allocated. */
void ib_device_release(struct device *dev);

#endif /* IB_CORE_PRIV_H */
