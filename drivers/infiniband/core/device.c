// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The device and client registry of ib_core.
 *
 * Hardware drivers register struct ib_device objects, consumers register
 * struct ib_client objects, and the core pairs them up: every client's
 * add() runs once for every device, whichever of the two came first, and
 * remove() runs once for every pair when either side goes away.  The
 * per-pair "client data" pointer, the device-wide event handlers and the
 * query/modify calls that go straight to the driver live here too.
 */

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "core_priv.h"

/*
 * registry_mutex guards both lists below and serialises every call of a
 * client's add() and remove().  It is held across those callbacks, so a
 * callback may use ib_get_client_data(), ib_set_client_data() and the
 * event-handler calls, but must not register or unregister a device or a
 * client.  Both lists are kept in registration order.
 */
static DEFINE_MUTEX(registry_mutex);
static LIST_HEAD(registered_devices);
static LIST_HEAD(registered_clients);

/*
 * One entry of ib_device.client_data_list: the pointer a client keeps for
 * a device.  Entries are added before the client's add() and removed after
 * its remove(), under the device's client_data_lock.
 */
struct ib_client_slot {
	struct list_head   node;
	struct ib_client  *client;
	void              *data;
};

/*
 * Methods a driver must provide; the verbs behind them have no fallback.
 * Everything else may be left NULL, and the core answers -EOPNOTSUPP.
 */
struct ib_method_slot {
	size_t      offset;
	const char *name;
};

#define IB_MANDATORY(m) { offsetof(struct ib_device, m), #m }
static const struct ib_method_slot ib_mandatory_methods[] = {
	IB_MANDATORY(query_device),
	IB_MANDATORY(query_port),
	IB_MANDATORY(query_pkey),
	IB_MANDATORY(query_gid),
	IB_MANDATORY(alloc_pd),
	IB_MANDATORY(dealloc_pd),
	IB_MANDATORY(create_ah),
	IB_MANDATORY(destroy_ah),
	IB_MANDATORY(create_qp),
	IB_MANDATORY(modify_qp),
	IB_MANDATORY(destroy_qp),
	IB_MANDATORY(post_send),
	IB_MANDATORY(post_recv),
	IB_MANDATORY(create_cq),
	IB_MANDATORY(destroy_cq),
	IB_MANDATORY(poll_cq),
	IB_MANDATORY(req_notify_cq),
	IB_MANDATORY(get_dma_mr),
	IB_MANDATORY(dereg_mr),
};

#undef IB_MANDATORY

/*
 * Optional methods that come in groups: a driver that has @have must also
 * have @needs, or a verb would call a NULL method (ib_post_srq_recv() is
 * an inline with no check, on the data path) or an object could be made
 * that can never be destroyed.  Pairs that are either-both-or-neither are
 * listed both ways.
 */
struct ib_method_pair {
	struct ib_method_slot	have;
	struct ib_method_slot	needs;
};

#define IB_NEEDS(a, b) \
	{ { offsetof(struct ib_device, a), #a }, \
	  { offsetof(struct ib_device, b), #b } }
static const struct ib_method_pair ib_method_pairs[] = {
	IB_NEEDS(create_srq, destroy_srq),
	IB_NEEDS(create_srq, post_srq_recv),
	IB_NEEDS(destroy_srq, create_srq),
	IB_NEEDS(post_srq_recv, create_srq),
	IB_NEEDS(modify_srq, create_srq),
	IB_NEEDS(query_srq, create_srq),
	IB_NEEDS(attach_mcast, detach_mcast),
	IB_NEEDS(detach_mcast, attach_mcast),
	IB_NEEDS(alloc_ucontext, dealloc_ucontext),
	IB_NEEDS(dealloc_ucontext, alloc_ucontext),
};

#undef IB_NEEDS

static bool ib_has_method(struct ib_device *device,
			  const struct ib_method_slot *m)
{
	void **slot = (void *)device + m->offset;

	return *slot;
}

/*
 * Return: 0 when @device has every mandatory method and every method that
 * one it has depends on, else -EINVAL (and says which is missing).
 */
static int ib_check_methods(struct ib_device *device)
{
	const struct ib_method_pair *pair;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ib_mandatory_methods); i++) {
		if (!ib_has_method(device, &ib_mandatory_methods[i])) {
			pr_err("ib_core: %s lacks the %s method\n",
			       device->name, ib_mandatory_methods[i].name);
			return -EINVAL;
		}
	}
	for (i = 0; i < ARRAY_SIZE(ib_method_pairs); i++) {
		pair = &ib_method_pairs[i];
		if (ib_has_method(device, &pair->have) &&
		    !ib_has_method(device, &pair->needs)) {
			pr_err("ib_core: %s has %s but lacks %s\n", device->name,
			       pair->have.name, pair->needs.name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Caller holds registry_mutex. */
static struct ib_device *ib_find_device_locked(const char *name)
{
	struct ib_device *device;

	list_for_each_entry(device, &registered_devices, core_list)
		if (!strncmp(name, device->name, IB_DEVICE_NAME_MAX))
			return device;
	return NULL;
}

/*
 * Turn a name with a %d in it ("mthca%d") into the lowest-numbered name no
 * registered device has.  A name without % must simply be unused.
 * Caller holds registry_mutex.
 */
static int ib_pick_name_locked(struct ib_device *device)
{
	char candidate[IB_DEVICE_NAME_MAX];
	int index;

	if (!strchr(device->name, '%'))
		return ib_find_device_locked(device->name) ? -EEXIST : 0;

	for (index = 0; index < 1024; index++) {
		int len = snprintf(candidate, sizeof(candidate), device->name,
				   index);

		if (len >= (int)sizeof(candidate))
			return -ENAMETOOLONG;
		if (!ib_find_device_locked(candidate)) {
			strscpy(device->name, candidate, sizeof(device->name));
			return 0;
		}
	}
	return -ENFILE;
}

/**
 * ib_alloc_device() - allocate a zeroed device structure
 * @size: bytes to allocate; at least sizeof(struct ib_device), which must
 *	sit at the start of the driver's own structure
 *
 * The embedded struct device is initialised, so the memory belongs to the
 * driver model from here on: free it with ib_dealloc_device(), never with
 * kfree().  May sleep.
 *
 * Return: the device, or NULL when out of memory or @size is too small.
 */
struct ib_device *ib_alloc_device(size_t size)
{
	struct ib_device *device;

	if (size < sizeof(*device))
		return NULL;

	device = kzalloc(size, GFP_KERNEL);
	if (!device)
		return NULL;

	device->dev.class = &ib_class;
	device_initialize(&device->dev);

	INIT_LIST_HEAD(&device->event_handler_list);
	spin_lock_init(&device->event_handler_lock);
	INIT_LIST_HEAD(&device->client_data_list);
	spin_lock_init(&device->client_data_lock);
	INIT_LIST_HEAD(&device->core_list);
	device->reg_state = IB_DEV_UNINITIALIZED;

	return device;
}
EXPORT_SYMBOL(ib_alloc_device);

/**
 * ib_dealloc_device() - drop the driver's reference to a device
 * @device: from ib_alloc_device(); never registered, or unregistered
 *
 * The memory goes when the last reference does (an open sysfs file may
 * hold one for a moment).  May sleep.
 */
void ib_dealloc_device(struct ib_device *device)
{
	if (device->reg_state == IB_DEV_REGISTERED) {
		pr_err("ib_core: %s freed while registered; leaking it\n",
		       device->name);
		return;
	}
	put_device(&device->dev);
}
EXPORT_SYMBOL(ib_dealloc_device);

/* The class's release: the last reference to the device is gone. */
void ib_device_release(struct device *dev)
{
	struct ib_device *device = container_of(dev, struct ib_device, dev);

	kfree(device);
}

/*
 * Give a client a slot on a device, then call its add().  Caller holds
 * registry_mutex.  Without memory the client does not see the device
 * (the allocator has already logged the failure).
 */
static void ib_attach_client(struct ib_device *device, struct ib_client *client)
{
	struct ib_client_slot *slot;
	unsigned long flags;

	slot = kmalloc(sizeof(*slot), GFP_KERNEL);
	if (!slot)
		return;
	slot->client = client;
	slot->data = NULL;

	spin_lock_irqsave(&device->client_data_lock, flags);
	list_add_tail(&slot->node, &device->client_data_list);
	spin_unlock_irqrestore(&device->client_data_lock, flags);

	if (client->add)
		client->add(device);
}

/*
 * Call a client's remove() for a device, then drop its slot.  Caller holds
 * registry_mutex.  A client whose attach failed has no slot and gets no
 * remove(), as it never got add().
 */
static void ib_detach_client(struct ib_device *device, struct ib_client *client)
{
	struct ib_client_slot *slot, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&device->client_data_lock, flags);
	list_for_each_entry(slot, &device->client_data_list, node)
		if (slot->client == client) {
			found = slot;
			break;
		}
	spin_unlock_irqrestore(&device->client_data_lock, flags);

	if (!found)
		return;

	if (client->remove)
		client->remove(device);

	spin_lock_irqsave(&device->client_data_lock, flags);
	list_del(&found->node);
	spin_unlock_irqrestore(&device->client_data_lock, flags);
	kfree(found);
}

/**
 * ib_register_device() - make a device known to the core and its clients
 * @device: filled in by the driver: name (with %d for an index), node_type,
 *	phys_port_cnt, dma_device, the methods
 *
 * Checks the mandatory methods, gives the device a unique name, fills the
 * GID/P_Key cache, creates /sys/class/infiniband/<name>, and calls add()
 * of every registered client, in the order the clients registered.
 * Process context; sleeps.
 *
 * Return: 0, or a negative errno (the device is then not registered and
 * may be freed with ib_dealloc_device()).
 */
int ib_register_device(struct ib_device *device)
{
	struct ib_client *client;
	int ret;

	mutex_lock(&registry_mutex);

	if (device->reg_state != IB_DEV_UNINITIALIZED) {
		ret = -EINVAL;
		goto out_unlock;
	}

	ret = ib_check_methods(device);
	if (ret)
		goto out_unlock;

	ret = ib_pick_name_locked(device);
	if (ret)
		goto out_unlock;

	ret = dev_set_name(&device->dev, "%s", device->name);
	if (ret)
		goto out_unlock;

	ret = ib_cache_setup_one(device);
	if (ret) {
		pr_err("ib_core: %s: cache set-up failed (%d)\n",
		       device->name, ret);
		goto out_unlock;
	}

	ret = ib_device_register_sysfs(device);
	if (ret) {
		pr_err("ib_core: %s: sysfs registration failed (%d)\n",
		       device->name, ret);
		goto out_cache;
	}

	list_add_tail(&device->core_list, &registered_devices);
	device->reg_state = IB_DEV_REGISTERED;

	list_for_each_entry(client, &registered_clients, list)
		ib_attach_client(device, client);

	mutex_unlock(&registry_mutex);
	return 0;

out_cache:
	ib_cache_cleanup_one(device);
out_unlock:
	mutex_unlock(&registry_mutex);
	return ret;
}
EXPORT_SYMBOL(ib_register_device);

/**
 * ib_unregister_device() - take a device away from the core and its clients
 * @device: a registered device
 *
 * Calls remove() of every client, newest client first; each must release
 * all it holds on the device before returning.  Then the sysfs directory
 * goes (waiting for readers inside its files) and the cache is freed.
 * The driver frees the device afterwards with ib_dealloc_device().
 * Process context; sleeps.
 */
void ib_unregister_device(struct ib_device *device)
{
	struct ib_client *client;

	mutex_lock(&registry_mutex);
	if (device->reg_state != IB_DEV_REGISTERED) {
		mutex_unlock(&registry_mutex);
		pr_err("ib_core: unregistering %s, which is not registered\n",
		       device->name);
		return;
	}

	list_for_each_entry_reverse(client, &registered_clients, list)
		ib_detach_client(device, client);

	/*
	 * The sysfs name must be gone before another device can be given
	 * it, so the directory goes under the mutex too.
	 */
	ib_device_unregister_sysfs(device);
	ib_cache_cleanup_one(device);
	list_del(&device->core_list);
	device->reg_state = IB_DEV_UNREGISTERED;
	mutex_unlock(&registry_mutex);
}
EXPORT_SYMBOL(ib_unregister_device);

/**
 * ib_register_client() - register a consumer of InfiniBand devices
 * @client: name, add() and remove()
 *
 * add() runs at once for every device already registered, oldest first,
 * and later for every device that registers.  Process context; sleeps.
 *
 * Return: 0.
 */
int ib_register_client(struct ib_client *client)
{
	struct ib_device *device;

	mutex_lock(&registry_mutex);
	list_for_each_entry(device, &registered_devices, core_list)
		ib_attach_client(device, client);
	list_add_tail(&client->list, &registered_clients);
	mutex_unlock(&registry_mutex);

	return 0;
}
EXPORT_SYMBOL(ib_register_client);

/**
 * ib_unregister_client() - unregister a consumer of InfiniBand devices
 * @client: a registered client
 *
 * remove() runs for every device the client was given, newest device
 * first; when this returns, the client is called no more.  Process
 * context; sleeps.
 */
void ib_unregister_client(struct ib_client *client)
{
	struct ib_device *device;

	mutex_lock(&registry_mutex);
	list_for_each_entry_reverse(device, &registered_devices, core_list)
		ib_detach_client(device, client);
	list_del(&client->list);
	mutex_unlock(&registry_mutex);
}
EXPORT_SYMBOL(ib_unregister_client);

/**
 * ib_get_client_data() - the pointer a client keeps for a device
 * @device: the device
 * @client: the client
 *
 * Any context.
 *
 * Return: what ib_set_client_data() stored, or NULL (also when the client
 * has no slot on the device).
 */
void *ib_get_client_data(struct ib_device *device, struct ib_client *client)
{
	struct ib_client_slot *slot;
	unsigned long flags;
	void *data = NULL;

	spin_lock_irqsave(&device->client_data_lock, flags);
	list_for_each_entry(slot, &device->client_data_list, node)
		if (slot->client == client) {
			data = slot->data;
			break;
		}
	spin_unlock_irqrestore(&device->client_data_lock, flags);

	return data;
}
EXPORT_SYMBOL(ib_get_client_data);

/**
 * ib_set_client_data() - store the pointer a client keeps for a device
 * @device: the device
 * @client: the client; valid between the start of its add() and the end
 *	of its remove() for @device
 * @data: the pointer
 *
 * Any context.  Outside that window the call is ignored with a message.
 */
void ib_set_client_data(struct ib_device *device, struct ib_client *client,
			void *data)
{
	struct ib_client_slot *slot;
	unsigned long flags;
	bool stored = false;

	spin_lock_irqsave(&device->client_data_lock, flags);
	list_for_each_entry(slot, &device->client_data_list, node)
		if (slot->client == client) {
			slot->data = data;
			stored = true;
			break;
		}
	spin_unlock_irqrestore(&device->client_data_lock, flags);

	if (!stored)
		pr_warn("ib_core: client %s has no data slot on %s\n",
			client->name, device->name);
}
EXPORT_SYMBOL(ib_set_client_data);

/**
 * ib_register_event_handler() - receive a device's asynchronous events
 * @event_handler: set up with INIT_IB_EVENT_HANDLER()
 *
 * From the next ib_dispatch_event() on, the handler sees every event of
 * its device.  Any context.
 *
 * Return: 0.
 */
int ib_register_event_handler(struct ib_event_handler *event_handler)
{
	struct ib_device *device = event_handler->device;
	unsigned long flags;

	spin_lock_irqsave(&device->event_handler_lock, flags);
	list_add_tail(&event_handler->list, &device->event_handler_list);
	spin_unlock_irqrestore(&device->event_handler_lock, flags);

	return 0;
}
EXPORT_SYMBOL(ib_register_event_handler);

/**
 * ib_unregister_event_handler() - stop receiving a device's events
 * @event_handler: a registered handler
 *
 * When this returns the handler is not running and will not be called
 * again.  Any context.
 *
 * Return: 0.
 */
int ib_unregister_event_handler(struct ib_event_handler *event_handler)
{
	struct ib_device *device = event_handler->device;
	unsigned long flags;

	spin_lock_irqsave(&device->event_handler_lock, flags);
	list_del_init(&event_handler->list);
	spin_unlock_irqrestore(&device->event_handler_lock, flags);

	return 0;
}
EXPORT_SYMBOL(ib_unregister_event_handler);

/**
 * ib_dispatch_event() - hand an asynchronous event to the device's handlers
 * @event: the event; only valid during the call
 *
 * Called by drivers, from any context including hard interrupts.  Each
 * registered handler runs once, in registration order, with the handler
 * lock held and interrupts off, so handlers must not sleep.
 */
void ib_dispatch_event(struct ib_event *event)
{
	struct ib_device *device = event->device;
	struct ib_event_handler *handler;
	unsigned long flags;

	spin_lock_irqsave(&device->event_handler_lock, flags);
	list_for_each_entry(handler, &device->event_handler_list, list)
		handler->handler(handler, event);
	spin_unlock_irqrestore(&device->event_handler_lock, flags);
}
EXPORT_SYMBOL(ib_dispatch_event);

static bool ib_port_is_valid(struct ib_device *device, u8 port_num)
{
	return port_num >= rdma_start_port(device) &&
	       port_num <= rdma_end_port(device);
}

/**
 * ib_query_device() - ask the driver for the device's attributes
 * @device: the device
 * @device_attr: filled in
 *
 * May sleep.
 *
 * Return: 0, or a negative errno from the driver.
 */
int ib_query_device(struct ib_device *device,
		    struct ib_device_attr *device_attr)
{
	return device->query_device(device, device_attr);
}
EXPORT_SYMBOL(ib_query_device);

/**
 * ib_query_port() - ask the driver for a port's attributes
 * @device: the device
 * @port_num: the port
 * @port_attr: filled in
 *
 * May sleep.
 *
 * Return: 0, -EINVAL for a port the device has not, or the driver's errno.
 */
int ib_query_port(struct ib_device *device,
		  u8 port_num, struct ib_port_attr *port_attr)
{
	if (!ib_port_is_valid(device, port_num))
		return -EINVAL;
	return device->query_port(device, port_num, port_attr);
}
EXPORT_SYMBOL(ib_query_port);

/**
 * ib_query_gid() - read a GID table entry from the device
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @gid: filled in
 *
 * May sleep; ib_get_cached_gid() does not.
 *
 * Return: 0, -EINVAL for a port the device has not, or the driver's errno.
 */
int ib_query_gid(struct ib_device *device,
		 u8 port_num, int index, union ib_gid *gid)
{
	if (!ib_port_is_valid(device, port_num))
		return -EINVAL;
	return device->query_gid(device, port_num, index, gid);
}
EXPORT_SYMBOL(ib_query_gid);

/**
 * ib_query_pkey() - read a P_Key table entry from the device
 * @device: the device
 * @port_num: the port
 * @index: the entry
 * @pkey: filled in
 *
 * May sleep; ib_get_cached_pkey() does not.
 *
 * Return: 0, -EINVAL for a port the device has not, or the driver's errno.
 */
int ib_query_pkey(struct ib_device *device,
		  u8 port_num, u16 index, u16 *pkey)
{
	if (!ib_port_is_valid(device, port_num))
		return -EINVAL;
	return device->query_pkey(device, port_num, index, pkey);
}
EXPORT_SYMBOL(ib_query_pkey);

/**
 * ib_modify_device() - change device-wide attributes
 * @device: the device
 * @device_modify_mask: IB_DEVICE_MODIFY_* bits saying which fields count
 * @device_modify: the new values
 *
 * May sleep.
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_modify_device(struct ib_device *device,
		     int device_modify_mask,
		     struct ib_device_modify *device_modify)
{
	if (!device->modify_device)
		return -EOPNOTSUPP;
	return device->modify_device(device, device_modify_mask,
				     device_modify);
}
EXPORT_SYMBOL(ib_modify_device);

/**
 * ib_modify_port() - change a port's attributes
 * @device: the device
 * @port_num: the port
 * @port_modify_mask: IB_PORT_* modify flags
 * @port_modify: capability bits to set and clear, init type
 *
 * May sleep.
 *
 * Return: 0, -EINVAL for a port the device has not, -EOPNOTSUPP when the
 * driver cannot, or the driver's errno.
 */
int ib_modify_port(struct ib_device *device,
		   u8 port_num, int port_modify_mask,
		   struct ib_port_modify *port_modify)
{
	if (!ib_port_is_valid(device, port_num))
		return -EINVAL;
	if (!device->modify_port)
		return -EOPNOTSUPP;
	return device->modify_port(device, port_num, port_modify_mask,
				   port_modify);
}
EXPORT_SYMBOL(ib_modify_port);
