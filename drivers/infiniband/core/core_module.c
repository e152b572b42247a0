// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_core: module identity. The core's parts (wire formats, SMI rules, and
 * later devices, MADs, verbs) live in their own files; those that need
 * set-up at load time hook in here.
 */

#include <linux/init.h>
#include <linux/module.h>

static int __init ib_core_init(void)
{
	return 0;
}

static void __exit ib_core_exit(void)
{
}

module_init(ib_core_init);
module_exit(ib_core_exit);

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand core: wire formats and subnet management rules");
MODULE_LICENSE("Dual BSD/GPL");
