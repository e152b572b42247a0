// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_core: module load and unload.  The parts (device registry, verbs,
 * cache, sysfs, wire formats, SMI rules) live in their own files; the ones
 * with global state are set up here, in dependency order.
 */

#include <linux/init.h>
#include <linux/module.h>

#include "core_priv.h"

static int __init ib_core_init(void)
{
	int ret;

	ret = ib_cache_init();
	if (ret)
		return ret;

	ret = ib_sysfs_init();
	if (ret)
		goto err_cache;
	return 0;

err_cache:
	ib_cache_exit();
	return ret;
}

static void __exit ib_core_exit(void)
{
	ib_sysfs_exit();
	ib_cache_exit();
}

module_init(ib_core_init);
module_exit(ib_core_exit);

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand core: device and client registry, verbs, GID/P_Key cache, sysfs");
MODULE_LICENSE("Dual BSD/GPL");
