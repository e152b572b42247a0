// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The GID/P_Key/LMC cache.
 *
 * Each port of a registered device has one snapshot of its GID table, one
 * of its P_Key table and its LMC.  A snapshot is built by querying the
 * driver (which sleeps), so it is built outside any lock and then swapped
 * in under the device's cache rwlock; readers only take that lock for
 * reading, so they never sleep and may run in interrupt context.
 *
 * A snapshot is rebuilt at registration and, from an ordered workqueue,
 * after each port event that may have changed the tables.  Those two
 * writers are serialised by the device's cache.refresh_mutex, held from
 * the first query until the swap: without it a registration that read the
 * old tables could swap them in after an event's refresh had swapped in
 * newer ones, and the stale snapshot would stay until the next event.
 */

#include <linux/errno.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <rdma/ib_cache.h>

#include "core_priv.h"

struct ib_gid_cache {
	int		count;
	union ib_gid	entries[];
};

struct ib_pkey_cache {
	int		count;
	u16		entries[];
};

/* One queued refresh of one port. */
struct ib_cache_refresh {
	struct work_struct	work;
	struct ib_device	*device;
	u8			port_num;
};

/*
 * Refreshes run here, one at a time.  ib_cache_cleanup_one() flushes it
 * after unhooking the device's event handler, so no refresh outlives its
 * device.
 */
static struct workqueue_struct *ib_cache_wq;

static int ib_cache_port_count(struct ib_device *device)
{
	return rdma_end_port(device) - rdma_start_port(device) + 1;
}

/* Index into the per-port arrays, or -1 for a port the device lacks. */
static int ib_cache_slot(struct ib_device *device, u8 port_num)
{
	if (port_num < rdma_start_port(device) ||
	    port_num > rdma_end_port(device))
		return -1;
	return port_num - rdma_start_port(device);
}

/*
 * Query one port's tables from the driver and swap them into the cache.
 * Process context; sleeps.  On failure the old snapshot stays.  Caller
 * holds device->cache.refresh_mutex.
 */
static int ib_cache_refresh_port_locked(struct ib_device *device, u8 port_num)
{
	struct ib_gid_cache *gids, *old_gids;
	struct ib_pkey_cache *pkeys, *old_pkeys;
	struct ib_port_attr *attr;
	unsigned long flags;
	int slot = ib_cache_slot(device, port_num);
	int i, ret;

	if (slot < 0)
		return -EINVAL;

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;

	ret = device->query_port(device, port_num, attr);
	if (ret)
		goto out_attr;
	if (attr->gid_tbl_len < 0) {
		ret = -EINVAL;
		goto out_attr;
	}

	ret = -ENOMEM;
	gids = kmalloc(struct_size(gids, entries, attr->gid_tbl_len),
		       GFP_KERNEL);
	if (!gids)
		goto out_attr;
	pkeys = kmalloc(struct_size(pkeys, entries, attr->pkey_tbl_len),
			GFP_KERNEL);
	if (!pkeys)
		goto out_gids;

	gids->count = attr->gid_tbl_len;
	for (i = 0; i < gids->count; i++) {
		ret = device->query_gid(device, port_num, i, &gids->entries[i]);
		if (ret)
			goto out_pkeys;
	}

	pkeys->count = attr->pkey_tbl_len;
	for (i = 0; i < pkeys->count; i++) {
		ret = device->query_pkey(device, port_num, i,
					 &pkeys->entries[i]);
		if (ret)
			goto out_pkeys;
	}

	write_lock_irqsave(&device->cache.lock, flags);
	old_gids = device->cache.gid_cache[slot];
	old_pkeys = device->cache.pkey_cache[slot];
	device->cache.gid_cache[slot] = gids;
	device->cache.pkey_cache[slot] = pkeys;
	device->cache.lmc_cache[slot] = attr->lmc;
	write_unlock_irqrestore(&device->cache.lock, flags);

	kfree(old_gids);
	kfree(old_pkeys);
	kfree(attr);
	return 0;

out_pkeys:
	kfree(pkeys);
out_gids:
	kfree(gids);
out_attr:
	kfree(attr);
	return ret;
}

/* One refresh of one port, in turn with the device's other refreshes. */
static int ib_cache_refresh_port(struct ib_device *device, u8 port_num)
{
	int ret;

	mutex_lock(&device->cache.refresh_mutex);
	ret = ib_cache_refresh_port_locked(device, port_num);
	mutex_unlock(&device->cache.refresh_mutex);
	return ret;
}

static void ib_cache_refresh_work(struct work_struct *work)
{
	struct ib_cache_refresh *r =
		container_of(work, struct ib_cache_refresh, work);
	int ret;

	ret = ib_cache_refresh_port(r->device, r->port_num);
	if (ret)
		pr_warn("ib_core: %s port %u: cache refresh failed (%d)\n",
			r->device->name, r->port_num, ret);
	kfree(r);
}

static bool ib_cache_event_matters(enum ib_event_type type)
{
	return ib_event_is_port_change(type) || type == IB_EVENT_GID_CHANGE;
}

/* Event handler: any context, so only queue the refresh. */
static void ib_cache_event(struct ib_event_handler *handler,
			   struct ib_event *event)
{
	struct ib_cache_refresh *r;

	if (!ib_cache_event_matters(event->event))
		return;

	/* without memory the cache stays stale until the next event */
	r = kmalloc(sizeof(*r), GFP_ATOMIC);
	if (!r)
		return;
	INIT_WORK(&r->work, ib_cache_refresh_work);
	r->device = event->device;
	r->port_num = event->element.port_num;
	queue_work(ib_cache_wq, &r->work);
}

static void ib_cache_free_tables(struct ib_device *device)
{
	int i, n = ib_cache_port_count(device);

	if (device->cache.gid_cache)
		for (i = 0; i < n; i++)
			kfree(device->cache.gid_cache[i]);
	if (device->cache.pkey_cache)
		for (i = 0; i < n; i++)
			kfree(device->cache.pkey_cache[i]);
	kfree(device->cache.gid_cache);
	kfree(device->cache.pkey_cache);
	kfree(device->cache.lmc_cache);
	device->cache.gid_cache = NULL;
	device->cache.pkey_cache = NULL;
	device->cache.lmc_cache = NULL;
}

/**
 * ib_cache_setup_one() - build a device's cache and start following events
 * @device: a device being registered
 *
 * Process context; sleeps.
 *
 * Return: 0, or a negative errno (nothing is left allocated).
 */
int ib_cache_setup_one(struct ib_device *device)
{
	int n = ib_cache_port_count(device);
	u8 port;
	int ret;

	rwlock_init(&device->cache.lock);
	mutex_init(&device->cache.refresh_mutex);

	device->cache.gid_cache = kcalloc(n, sizeof(*device->cache.gid_cache),
					  GFP_KERNEL);
	device->cache.pkey_cache = kcalloc(n,
					   sizeof(*device->cache.pkey_cache),
					   GFP_KERNEL);
	device->cache.lmc_cache = kcalloc(n, sizeof(*device->cache.lmc_cache),
					  GFP_KERNEL);
	if (!device->cache.gid_cache || !device->cache.pkey_cache ||
	    !device->cache.lmc_cache) {
		ret = -ENOMEM;
		goto err;
	}

	/*
	 * Follow events before the first read, so a port change that comes
	 * while the tables are read is not lost: its refresh waits for ours
	 * on refresh_mutex, then reads the tables again and swaps last.
	 */
	INIT_IB_EVENT_HANDLER(&device->cache.event_handler, device,
			      ib_cache_event);
	ib_register_event_handler(&device->cache.event_handler);

	for (port = rdma_start_port(device); port <= rdma_end_port(device);
	     port++) {
		ret = ib_cache_refresh_port(device, port);
		if (ret)
			goto err_handler;
	}
	return 0;

err_handler:
	ib_unregister_event_handler(&device->cache.event_handler);
	flush_workqueue(ib_cache_wq);
err:
	ib_cache_free_tables(device);
	mutex_destroy(&device->cache.refresh_mutex);
	return ret;
}

/**
 * ib_cache_cleanup_one() - stop following events and free a device's cache
 * @device: a device being unregistered (or whose registration failed
 *	after ib_cache_setup_one())
 *
 * Process context; sleeps until queued refreshes have run.
 */
void ib_cache_cleanup_one(struct ib_device *device)
{
	ib_unregister_event_handler(&device->cache.event_handler);
	flush_workqueue(ib_cache_wq);
	ib_cache_free_tables(device);
	mutex_destroy(&device->cache.refresh_mutex);
}

/**
 * ib_get_cached_gid() - a GID table entry from the cache
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @gid: filled in
 *
 * Any context; never sleeps.
 *
 * Return: 0, or -EINVAL for a port or index outside the table.
 */
int ib_get_cached_gid(struct ib_device *device, u8 port_num, int index,
		      union ib_gid *gid)
{
	const struct ib_gid_cache *table;
	int slot = ib_cache_slot(device, port_num);
	unsigned long flags;
	int ret = -EINVAL;

	if (slot < 0)
		return -EINVAL;

	read_lock_irqsave(&device->cache.lock, flags);
	table = device->cache.gid_cache[slot];
	if (table && index >= 0 && index < table->count) {
		*gid = table->entries[index];
		ret = 0;
	}
	read_unlock_irqrestore(&device->cache.lock, flags);

	return ret;
}
EXPORT_SYMBOL(ib_get_cached_gid);

/**
 * ib_find_cached_gid() - look a GID up in all ports' cached tables
 * @device: the device
 * @gid: the GID to find
 * @port_num: if not NULL, set to the port it was found on
 * @index: if not NULL, set to its index in that port's table
 *
 * Ports are searched in order, each table from index 0; the first match
 * wins.  Any context; never sleeps.
 *
 * Return: 0, or -ENOENT when no port has it.
 */
int ib_find_cached_gid(struct ib_device *device, union ib_gid *gid,
		       u8 *port_num, u16 *index)
{
	const struct ib_gid_cache *table;
	unsigned long flags;
	int slot, i, n = ib_cache_port_count(device);
	int ret = -ENOENT;

	read_lock_irqsave(&device->cache.lock, flags);
	for (slot = 0; slot < n && ret; slot++) {
		table = device->cache.gid_cache[slot];
		for (i = 0; table && i < table->count; i++) {
			if (memcmp(gid, &table->entries[i], sizeof(*gid)))
				continue;
			if (port_num)
				*port_num = slot + rdma_start_port(device);
			if (index)
				*index = i;
			ret = 0;
			break;
		}
	}
	read_unlock_irqrestore(&device->cache.lock, flags);

	return ret;
}
EXPORT_SYMBOL(ib_find_cached_gid);

/**
 * ib_get_cached_pkey() - a P_Key table entry from the cache
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @pkey: filled in
 *
 * Any context; never sleeps.
 *
 * Return: 0, or -EINVAL for a port or index outside the table.
 */
int ib_get_cached_pkey(struct ib_device *device, u8 port_num, int index,
		       u16 *pkey)
{
	const struct ib_pkey_cache *table;
	int slot = ib_cache_slot(device, port_num);
	unsigned long flags;
	int ret = -EINVAL;

	if (slot < 0)
		return -EINVAL;

	read_lock_irqsave(&device->cache.lock, flags);
	table = device->cache.pkey_cache[slot];
	if (table && index >= 0 && index < table->count) {
		*pkey = table->entries[index];
		ret = 0;
	}
	read_unlock_irqrestore(&device->cache.lock, flags);

	return ret;
}
EXPORT_SYMBOL(ib_get_cached_pkey);

/**
 * ib_find_cached_pkey() - look a P_Key up in a port's cached table
 * @device: the device
 * @port_num: the port
 * @pkey: the P_Key; its membership bit (0x8000) is ignored in the match
 * @index: set to the index found; a full-member entry wins over a
 *	limited-member one, and among equals the lowest index wins
 *
 * Any context; never sleeps.
 *
 * Return: 0, -EINVAL for a bad port, or -ENOENT when the table lacks it.
 */
int ib_find_cached_pkey(struct ib_device *device, u8 port_num, u16 pkey,
			u16 *index)
{
	const struct ib_pkey_cache *table;
	int slot = ib_cache_slot(device, port_num);
	unsigned long flags;
	int i, limited = -1, full = -1;

	if (slot < 0)
		return -EINVAL;

	read_lock_irqsave(&device->cache.lock, flags);
	table = device->cache.pkey_cache[slot];
	for (i = 0; table && i < table->count && full < 0; i++) {
		u16 entry = table->entries[i];

		if ((entry & 0x7fff) != (pkey & 0x7fff))
			continue;
		if (entry & 0x8000)
			full = i;
		else if (limited < 0)
			limited = i;
	}
	read_unlock_irqrestore(&device->cache.lock, flags);

	if (full >= 0)
		*index = full;
	else if (limited >= 0)
		*index = limited;
	else
		return -ENOENT;
	return 0;
}
EXPORT_SYMBOL(ib_find_cached_pkey);

/**
 * ib_get_cached_lmc() - a port's LID mask control from the cache
 * @device: the device
 * @port_num: the port
 * @lmc: filled in
 *
 * Any context; never sleeps.
 *
 * Return: 0, or -EINVAL for a bad port.
 */
int ib_get_cached_lmc(struct ib_device *device, u8 port_num, u8 *lmc)
{
	int slot = ib_cache_slot(device, port_num);
	unsigned long flags;

	if (slot < 0)
		return -EINVAL;

	read_lock_irqsave(&device->cache.lock, flags);
	*lmc = device->cache.lmc_cache[slot];
	read_unlock_irqrestore(&device->cache.lock, flags);
	return 0;
}
EXPORT_SYMBOL(ib_get_cached_lmc);

void ib_cache_flush(void)
{
	flush_workqueue(ib_cache_wq);
}

int ib_cache_init(void)
{
	ib_cache_wq = alloc_ordered_workqueue("ib_cache", WQ_MEM_RECLAIM);
	return ib_cache_wq ? 0 : -ENOMEM;
}

void ib_cache_exit(void)
{
	destroy_workqueue(ib_cache_wq);
}
