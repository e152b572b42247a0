// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_uverbs: the character devices, their files, the event files and the
 * write() framing of ABI 6.  The commands are in uverbs_cmd.c; the object
 * lifetimes and the lock order are at the top of uverbs.h.
 *
 * The device is found by libibverbs through sysfs: class infiniband_verbs
 * (class attribute abi_version = 6), one uverbsN per ib_device with the
 * attributes ibdev and abi_version (the driver's), and the node
 * /dev/infiniband/uverbsN (major 231, minors 192 and up, mode 0666).
 * There is no ioctl() method: the VFS answers ENOTTY, which is how
 * libibverbs learns to use write() for everything.
 */

#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/idr.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/cred.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "uverbs.h"

/* The fixed device numbers of /dev/infiniband/uverbsN: 231:192 and up. */
#define UVERBS_MAJOR 231
#define UVERBS_BASE_MINOR 192
#define UVERBS_MAX_DEVICES 32

MODULE_DESCRIPTION("ib_uverbs: verbs for user space through /dev/infiniband/uverbsN");
MODULE_AUTHOR("ibstack");
MODULE_LICENSE("Dual BSD/GPL");

static dev_t uverbs_base = MKDEV(UVERBS_MAJOR, UVERBS_BASE_MINOR);
static DEFINE_IDA(uverbs_numbers);

static void uverbs_add_device(struct ib_device *device);
static void uverbs_remove_device(struct ib_device *device);

static struct ib_client uverbs_client = {
	.name	= "uverbs",
	.add	= uverbs_add_device,
	.remove	= uverbs_remove_device,
};

static char *uverbs_devnode(struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return kasprintf(GFP_KERNEL, "infiniband/%s", dev_name(dev));
}

static CLASS_ATTR_STRING(abi_version, 0444,
			 __stringify(IB_USER_VERBS_ABI_VERSION));

static struct class *uverbs_class;

/* ------------------------------------------------------------------ */
/* event files                                                         */
/* ------------------------------------------------------------------ */

static void uverbs_event_file_free(struct kref *ref)
{
	struct uverbs_event_file *ev =
		container_of(ref, struct uverbs_event_file, ref);

	if (ev->owner) {
		spin_lock(&ev->owner->chans_lock);
		list_del(&ev->chan_list);
		spin_unlock(&ev->owner->chans_lock);
		uverbs_file_put(ev->owner);
	}
	kfree(ev);
}

/**
 * uverbs_event_file_put() - drop a reference to an event file
 * @ev: the event file
 */
void uverbs_event_file_put(struct uverbs_event_file *ev)
{
	kref_put(&ev->ref, uverbs_event_file_free);
}

static ssize_t uverbs_event_read(struct file *filp, char __user *buf,
				 size_t count, loff_t *pos)
{
	struct uverbs_event_file *ev = filp->private_data;
	struct uverbs_event *e;
	size_t len = ev->comp ? sizeof(e->desc.comp) : sizeof(e->desc.async);
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&ev->lock, flags);
	while (list_empty(&ev->events)) {
		/* The device went away: what was queued is read, then EIO. */
		if (ev->gone) {
			spin_unlock_irqrestore(&ev->lock, flags);
			return -EIO;
		}
		spin_unlock_irqrestore(&ev->lock, flags);
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ev->wait,
					       !list_empty(&ev->events) ||
					       READ_ONCE(ev->gone));
		if (ret)
			return ret;
		spin_lock_irqsave(&ev->lock, flags);
	}
	/* As 6.1: an empty queue says so first; a short read loses nothing. */
	if (count < len) {
		spin_unlock_irqrestore(&ev->lock, flags);
		return -EINVAL;
	}
	e = list_first_entry(&ev->events, struct uverbs_event, list);
	list_del(&e->list);
	/* Read: it counts for the object's DESTROY reply. */
	if (e->counter) {
		(*e->counter)++;
		list_del(&e->obj_list);
	}
	spin_unlock_irqrestore(&ev->lock, flags);

	ret = copy_to_user(buf, &e->desc, len) ? -EFAULT : len;
	kfree(e);
	return ret;
}

static __poll_t uverbs_event_poll(struct file *filp,
				  struct poll_table_struct *wait)
{
	struct uverbs_event_file *ev = filp->private_data;
	unsigned long flags;
	__poll_t mask = 0;

	poll_wait(filp, &ev->wait, wait);
	spin_lock_irqsave(&ev->lock, flags);
	if (!list_empty(&ev->events))
		mask = EPOLLIN | EPOLLRDNORM;
	/* read() does not block any more: it returns EIO. */
	if (ev->gone)
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLERR;
	spin_unlock_irqrestore(&ev->lock, flags);
	return mask;
}

static int uverbs_event_fasync(int fd, struct file *filp, int on)
{
	struct uverbs_event_file *ev = filp->private_data;

	return fasync_helper(fd, filp, on, &ev->async_queue);
}

static int uverbs_event_release(struct inode *inode, struct file *filp)
{
	struct uverbs_event_file *ev = filp->private_data;
	struct uverbs_event *e, *tmp;
	unsigned long flags;
	LIST_HEAD(drop);

	spin_lock_irqsave(&ev->lock, flags);
	ev->closed = true;
	list_for_each_entry(e, &ev->events, list)
		if (e->counter)
			list_del(&e->obj_list);
	list_splice_init(&ev->events, &drop);
	spin_unlock_irqrestore(&ev->lock, flags);
	list_for_each_entry_safe(e, tmp, &drop, list)
		kfree(e);
	uverbs_event_file_put(ev);
	return 0;
}

/*
 * The event files' methods (async fd and completion channels): read() and
 * poll() for the events, SIGIO on request, release() drops the file's
 * reference.
 */
static const struct file_operations uverbs_event_fops = {
	.read = uverbs_event_read, .poll = uverbs_event_poll,
	.fasync = uverbs_event_fasync, .release = uverbs_event_release,
	.llseek = no_llseek, .owner = THIS_MODULE,
};

/**
 * uverbs_event_file_create() - a new event file
 * @filp: receives its struct file (not yet installed in an fd)
 * @owner: NULL for the async fd; for a completion channel, the
 *	uverbs_file that made it (a reference is taken on it)
 *
 * The event file has two references: the struct file's and the caller's.
 *
 * Return: the event file, or an ERR_PTR.
 */
struct uverbs_event_file *uverbs_event_file_create(struct file **filp,
						   struct uverbs_file *owner)
{
	struct uverbs_event_file *ev;

	ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		return ERR_PTR(-ENOMEM);
	kref_init(&ev->ref);
	spin_lock_init(&ev->lock);
	INIT_LIST_HEAD(&ev->events);
	init_waitqueue_head(&ev->wait);

	*filp = anon_inode_getfile("[infinibandevent]", &uverbs_event_fops,
				   ev, O_RDONLY);
	if (IS_ERR(*filp)) {
		kfree(ev);
		return ERR_CAST(*filp);
	}
	INIT_LIST_HEAD(&ev->chan_list);
	if (owner) {
		ev->comp = true;
		ev->owner = owner;
		kref_get(&owner->ref);
		spin_lock(&owner->chans_lock);
		list_add_tail(&ev->chan_list, &owner->chans);
		spin_unlock(&owner->chans_lock);
	}
	kref_get(&ev->ref);
	return ev;
}

/**
 * uverbs_comp_file_get() - the completion channel behind an fd
 * @file: the uverbs file asking (a CQ of it will report to the channel)
 * @fd: the channel's fd in the caller's table
 *
 * Return: the channel with a reference taken, or ERR_PTR(-EBADF) when
 * @fd is not a completion channel of @file.
 */
struct uverbs_event_file *uverbs_comp_file_get(struct uverbs_file *file,
					       int fd)
{
	struct uverbs_event_file *ev = ERR_PTR(-EBADF);
	struct file *filp = fget(fd);

	if (!filp)
		return ev;
	if (filp->f_op == &uverbs_event_fops) {
		struct uverbs_event_file *cand = filp->private_data;

		if (cand->comp && cand->owner == file) {
			kref_get(&cand->ref);
			ev = cand;
		}
	}
	fput(filp);
	return ev;
}

/*
 * Queues an event on @ev; any context.  @obj_list and @counter (both or
 * neither) tie it to a user object: see struct uverbs_event.
 */
static void uverbs_event_queue(struct uverbs_event_file *ev, u64 element,
			       u32 type, struct list_head *obj_list,
			       u32 *counter)
{
	struct uverbs_event *e;
	unsigned long flags;

	e = kmalloc(sizeof(*e), GFP_ATOMIC);
	if (!e)
		return;
	if (ev->comp) {
		e->desc.comp.cq_handle = element;
	} else {
		e->desc.async.element = element;
		e->desc.async.event_type = type;
		e->desc.async.reserved = 0;
	}
	e->counter = counter;

	spin_lock_irqsave(&ev->lock, flags);
	if (ev->closed || (!ev->comp && type == IB_EVENT_DEVICE_FATAL &&
			   ev->fatal)) {
		spin_unlock_irqrestore(&ev->lock, flags);
		kfree(e);
		return;
	}
	if (!ev->comp && type == IB_EVENT_DEVICE_FATAL)
		ev->fatal = true;
	list_add_tail(&e->list, &ev->events);
	if (counter)
		list_add_tail(&e->obj_list, obj_list);
	spin_unlock_irqrestore(&ev->lock, flags);
	wake_up_interruptible(&ev->wait);
	kill_fasync(&ev->async_queue, SIGIO, POLL_IN);
}

/**
 * uverbs_event_handler() - the device event handler of a user context
 * @handler: the file's event_handler
 * @event: the event
 *
 * Port and device events go to the file's async event file, with the
 * port number as the element.  Any context; never sleeps.
 */
void uverbs_event_handler(struct ib_event_handler *handler,
			  struct ib_event *event)
{
	struct uverbs_file *file =
		container_of(handler, struct uverbs_file, event_handler);

	if (!ib_event_is_port_change(event->event) &&
	    event->event != IB_EVENT_GID_CHANGE &&
	    event->event != IB_EVENT_DEVICE_FATAL)
		return;
	/* @async is set before the handler is registered. */
	uverbs_event_queue(file->async, event->element.port_num, event->event,
			   NULL, NULL);
}

/**
 * uverbs_comp_handler() - the completion handler of every user CQ
 * @cq: the CQ
 * @cq_context: its struct uverbs_uobj
 *
 * Queues the CQ's user handle on its completion channel, if it has one.
 * Called by the driver from its interrupt handler; never sleeps.
 */
void uverbs_comp_handler(struct ib_cq *cq, void *cq_context)
{
	struct uverbs_uobj *u = cq_context;

	if (u->comp)
		uverbs_event_queue(u->comp, u->uobject.user_handle, 0,
				   &u->comp_list, &u->comp_events_reported);
}

/**
 * uverbs_obj_event_handler() - the event handler of user CQs, QPs, SRQs
 * @event: the event
 * @context: the object's struct uverbs_uobj
 *
 * Queues the event on the async fd with the object's user handle as the
 * element.  Any context; never sleeps.
 */
void uverbs_obj_event_handler(struct ib_event *event, void *context)
{
	struct uverbs_uobj *u = context;

	uverbs_event_queue(u->file->async, u->uobject.user_handle,
			   event->event, &u->async_list,
			   &u->async_events_reported);
}

/**
 * uverbs_event_purge() - drop an object's unread events
 * @ev: the event file they are on
 * @obj_list: the object's list of them
 *
 * For destroy, once the driver's object is gone (no handler can add
 * one any more): what was not read does not count as reported.
 */
void uverbs_event_purge(struct uverbs_event_file *ev,
			struct list_head *obj_list)
{
	struct uverbs_event *e, *tmp;
	unsigned long flags;
	LIST_HEAD(drop);

	spin_lock_irqsave(&ev->lock, flags);
	list_for_each_entry_safe(e, tmp, obj_list, obj_list) {
		list_del(&e->list);
		list_del(&e->obj_list);
		list_add(&e->list, &drop);
	}
	spin_unlock_irqrestore(&ev->lock, flags);
	list_for_each_entry_safe(e, tmp, &drop, list)
		kfree(e);
}

/*
 * The device went away under @ev: wake its readers and pollers, which
 * drain what is queued and then get EIO.
 */
static void uverbs_event_file_gone(struct uverbs_event_file *ev)
{
	unsigned long flags;

	spin_lock_irqsave(&ev->lock, flags);
	ev->gone = true;
	spin_unlock_irqrestore(&ev->lock, flags);
	wake_up_interruptible(&ev->wait);
	kill_fasync(&ev->async_queue, SIGIO, POLL_IN);
}

/* ------------------------------------------------------------------ */
/* the uverbsN files                                                   */
/* ------------------------------------------------------------------ */

static void uverbs_device_put_user(struct uverbs_device *udev)
{
	if (refcount_dec_and_test(&udev->users))
		complete(&udev->users_done);
}

static void uverbs_file_free(struct kref *ref)
{
	struct uverbs_file *file = container_of(ref, struct uverbs_file, ref);

	xa_destroy(&file->objs);
	kfree(file);
}

/**
 * uverbs_file_put() - drop a reference to a uverbs file
 * @file: the file
 */
void uverbs_file_put(struct uverbs_file *file)
{
	kref_put(&file->ref, uverbs_file_free);
}

static int uverbs_open(struct inode *inode, struct file *filp)
{
	struct uverbs_device *udev =
		container_of(inode->i_cdev, struct uverbs_device, cdev);
	struct uverbs_file *file;
	int ret;

	file = kzalloc(sizeof(*file), GFP_KERNEL);
	if (!file)
		return -ENOMEM;
	kref_init(&file->ref);
	file->udev = udev;
	mutex_init(&file->mutex);
	xa_init_flags(&file->objs, XA_FLAGS_ALLOC);
	spin_lock_init(&file->chans_lock);
	INIT_LIST_HEAD(&file->chans);

	mutex_lock(&udev->lock);
	if (udev->dead) {
		ret = -ENXIO;
		goto err_unlock;
	}
	/*
	 * Without disassociation the file calls into the driver until it is
	 * closed, so the driver's module must stay (core.md).  With it,
	 * remove() detaches the file before the driver's code goes.
	 */
	if (!udev->disassociate && !try_module_get(udev->ib_dev->owner)) {
		ret = -ENODEV;
		goto err_unlock;
	}
	refcount_inc(&udev->users);
	list_add_tail(&file->list, &udev->files);
	mutex_unlock(&udev->lock);

	filp->private_data = file;
	return stream_open(inode, filp);

err_unlock:
	mutex_unlock(&udev->lock);
	uverbs_file_put(file);
	return ret;
}

/*
 * Takes @file off the device for good; remove() calls it for each open
 * file, after every command and mmap() has been waited out (udev->srcu).
 * The mappings go first (a doorbell write now faults), then the objects
 * and the context, as at close; the async fd gets IB_EVENT_DEVICE_FATAL,
 * and the async fd and the completion channels wake their readers, which
 * then get EIO.  What is left for release() touches no ib_device.
 */
static void uverbs_file_disassociate(struct uverbs_file *file)
{
	struct ib_device *ib_dev = file->udev->ib_dev;
	struct uverbs_event_file *ev;

	mutex_lock(&file->mutex);
	if (!file->detached) {
		if (file->ucontext)
			ib_dev->disassociate_ucontext(file->ucontext);
		uverbs_file_teardown(file);
		file->detached = true;
	}
	if (file->async) {
		uverbs_event_queue(file->async, 0, IB_EVENT_DEVICE_FATAL,
				   NULL, NULL);
		uverbs_event_file_gone(file->async);
	}
	spin_lock(&file->chans_lock);
	list_for_each_entry(ev, &file->chans, chan_list)
		uverbs_event_file_gone(ev);
	spin_unlock(&file->chans_lock);
	mutex_unlock(&file->mutex);
}

static int uverbs_release(struct inode *inode, struct file *filp)
{
	struct uverbs_file *file = filp->private_data;
	struct uverbs_device *udev = file->udev;

	/*
	 * The file stays on udev->files until it is done with the device, so
	 * that remove() either waits for this (file->mutex) or has detached
	 * it already; then nothing here touches the ib_device.
	 */
	mutex_lock(&file->mutex);
	if (!file->detached) {
		uverbs_file_teardown(file);
		file->detached = true;
	}
	if (file->async) {
		uverbs_event_file_put(file->async);
		file->async = NULL;
	}
	mutex_unlock(&file->mutex);

	mutex_lock(&udev->lock);
	list_del_init(&file->list);
	mutex_unlock(&udev->lock);
	if (!udev->disassociate)
		module_put(udev->ib_dev->owner);
	kref_put(&file->ref, uverbs_file_free);
	uverbs_device_put_user(udev);
	return 0;
}

/*
 * Extended commands: a struct ib_uverbs_ex_cmd_hdr follows the header and
 * the sizes are in 8-byte words.  Only EX_QUERY_DEVICE is implemented.
 */
static ssize_t uverbs_write_ex(struct uverbs_file *file,
			       struct ib_uverbs_cmd_hdr *hdr,
			       const char __user *buf, size_t count)
{
	struct ib_uverbs_ex_cmd_hdr ex;
	struct uverbs_cmd_args args = { .file = file };
	u32 cmd = hdr->command & IB_USER_VERBS_CMD_COMMAND_MASK;
	int ret;

	if (cmd != IB_USER_VERBS_EX_CMD_QUERY_DEVICE)
		return -EOPNOTSUPP;
	if (count < sizeof(*hdr) + sizeof(ex))
		return -EINVAL;
	if (copy_from_user(&ex, buf + sizeof(*hdr), sizeof(ex)))
		return -EFAULT;
	count -= sizeof(*hdr) + sizeof(ex);
	if (((size_t)hdr->in_words + ex.provider_in_words) * 8 != count)
		return -EINVAL;
	if (hdr->in_words * 8 < sizeof(struct ib_uverbs_ex_query_device))
		return -ENOSPC;
	if (ex.cmd_hdr_reserved)
		return -EINVAL;
	if (ex.response) {
		if (!hdr->out_words && !ex.provider_out_words)
			return -EINVAL;
		/*
		 * The response grows by version and says how much of it was
		 * written (response_length): any room will do, as in 6.1.
		 */
		if (!access_ok(u64_to_user_ptr(ex.response),
			       ((size_t)hdr->out_words +
				ex.provider_out_words) * 8))
			return -EFAULT;
	} else if (hdr->out_words || ex.provider_out_words) {
		return -EINVAL;
	}

	args.in = buf + sizeof(*hdr) + sizeof(ex);
	args.inlen = hdr->in_words * 8;
	args.out = ex.response ? u64_to_user_ptr(ex.response) : NULL;
	args.outlen = hdr->out_words * 8;

	mutex_lock(&file->mutex);
	ret = uverbs_ex_query_device(&args);
	mutex_unlock(&file->mutex);
	return ret;
}

/*
 * A descriptor handed to a process of other credentials must not act for
 * it (the CVE-2016-4565 class: write() reached through splice or a setuid
 * helper). Said once.
 */
static bool uverbs_caller_is_opener(struct file *filp)
{
	if (filp->f_cred == current_cred())
		return true;
	pr_err_once("ib_uverbs: %s[%d] wrote to a uverbs file opened with other credentials\n",
		    current->comm, task_tgid_vnr(current));
	return false;
}

static ssize_t uverbs_write_cmd(struct uverbs_file *file,
				const char __user *buf, size_t count)
{
	const struct uverbs_cmd_desc *desc;
	struct uverbs_cmd_args args = { .file = file };
	struct ib_uverbs_cmd_hdr hdr;
	size_t inlen, outlen;
	u64 response = 0;
	u32 cmd;
	int ret;

	if (count < sizeof(hdr))
		return -EINVAL;
	if (copy_from_user(&hdr, buf, sizeof(hdr)))
		return -EFAULT;

	/* Bits outside the command and the extended flag: a bad header. */
	if (hdr.command & ~(u32)(IB_USER_VERBS_CMD_FLAG_EXTENDED |
				 IB_USER_VERBS_CMD_COMMAND_MASK))
		return -EINVAL;
	if (hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		ret = uverbs_write_ex(file, &hdr, buf, count);
		return ret ? ret : count;
	}

	cmd = hdr.command;
	if (cmd >= ARRAY_SIZE(uverbs_cmds) || !uverbs_cmds[cmd].handler)
		return -EOPNOTSUPP;
	desc = &uverbs_cmds[cmd];
	if (!(file->udev->ib_dev->uverbs_cmd_mask & BIT_ULL(cmd)))
		return -EOPNOTSUPP;

	/*
	 * rdma-core 18 and 19 wrote DESTROY_CQ with in_words 4 (16 bytes) but
	 * the whole 24-byte request behind it; 6.1 reads all 24, and so do
	 * we.  write() still returns the count it was given.
	 */
	if (cmd == IB_USER_VERBS_CMD_DESTROY_CQ && count == 16 &&
	    hdr.in_words == 4) {
		hdr.in_words = (sizeof(hdr) +
				sizeof(struct ib_uverbs_destroy_cq)) / 4;
		inlen = hdr.in_words * 4;
	} else {
		inlen = count;
	}
	if ((size_t)hdr.in_words * 4 != inlen)
		return -EINVAL;
	if (inlen < desc->req_size + sizeof(hdr))
		return -ENOSPC;
	if ((size_t)hdr.out_words * 4 < desc->resp_size)
		return -ENOSPC;

	buf += sizeof(hdr);
	inlen -= sizeof(hdr);
	outlen = hdr.out_words * 4;
	if (desc->resp_size) {
		if (get_user(response, (const u64 __user *)buf))
			return -EFAULT;
	}
	if (desc->has_udata) {
		args.udata.inlen = inlen - desc->req_size;
		args.udata.inbuf = args.udata.inlen ? buf + desc->req_size : NULL;
		inlen = desc->req_size;
		if (desc->resp_size) {
			args.udata.outlen = outlen - desc->resp_size;
			args.udata.outbuf = args.udata.outlen ?
				u64_to_user_ptr(response + desc->resp_size) :
				NULL;
			outlen = desc->resp_size;
		}
	}
	args.in = buf;
	args.inlen = inlen;
	args.out = desc->resp_size ? u64_to_user_ptr(response) : NULL;
	args.outlen = desc->resp_size ? outlen : 0;

	mutex_lock(&file->mutex);
	ret = desc->handler(&args);
	mutex_unlock(&file->mutex);
	return ret ? ret : count;
}

static ssize_t uverbs_write(struct file *filp, const char __user *buf,
			    size_t count, loff_t *pos)
{
	struct uverbs_file *file = filp->private_data;
	struct uverbs_device *udev = file->udev;
	ssize_t ret;
	int idx;

	if (!uverbs_caller_is_opener(filp))
		return -EACCES;
	/* A command reaches the device only while it is there (udev->srcu). */
	idx = srcu_read_lock(&udev->srcu);
	if (READ_ONCE(udev->gone))
		ret = -EIO;
	else
		ret = uverbs_write_cmd(file, buf, count);
	srcu_read_unlock(&udev->srcu, idx);
	return ret;
}

static int uverbs_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct uverbs_file *file = filp->private_data;
	struct uverbs_device *udev = file->udev;
	struct ib_device *ib_dev = udev->ib_dev;
	struct ib_ucontext *uctx;
	int idx, ret;

	/*
	 * No file->mutex here: mmap() runs under mmap_lock, and commands that
	 * pin user memory take mmap_lock under file->mutex.  The context is
	 * set once (release order) and freed only at release, which cannot
	 * run while mmap() holds the file, or by remove(), which waits out
	 * this read-side section first.  So a mapping made here is always
	 * seen by the driver's disassociate_ucontext().
	 */
	idx = srcu_read_lock(&udev->srcu);
	if (READ_ONCE(udev->gone)) {
		ret = -EIO;
		goto out;
	}
	/* Pairs with the release in GET_CONTEXT (uverbs_cmd.c). */
	uctx = smp_load_acquire(&file->ucontext);
	if (!ib_dev->mmap || !uctx) {
		ret = -ENODEV;
		goto out;
	}
	ret = ib_dev->mmap(uctx, vma);
out:
	srcu_read_unlock(&udev->srcu, idx);
	return ret;
}

/* /dev/infiniband/uverbsN: commands by write(), the UAR by mmap(). */
static const struct file_operations uverbs_fops = {
	.llseek = no_llseek,
	.mmap = uverbs_mmap,
	.write = uverbs_write,
	.open = uverbs_open,
	.release = uverbs_release,
	.owner = THIS_MODULE,
};

/* ------------------------------------------------------------------ */
/* devices                                                             */
/* ------------------------------------------------------------------ */

static ssize_t ibdev_show(struct device *d, struct device_attribute *attr,
			  char *buf)
{
	struct uverbs_device *udev = container_of(d, struct uverbs_device, dev);

	return sysfs_emit(buf, "%s\n", udev->ib_dev->name);
}
static DEVICE_ATTR_RO(ibdev);

static ssize_t abi_version_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	struct uverbs_device *udev = container_of(d, struct uverbs_device, dev);

	return sysfs_emit(buf, "%d\n", udev->ib_dev->uverbs_abi_ver);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *uverbs_dev_attrs[] = {
	&dev_attr_ibdev.attr,
	&dev_attr_abi_version.attr,
	NULL
};
ATTRIBUTE_GROUPS(uverbs_dev);

static void uverbs_dev_release(struct device *d)
{
	struct uverbs_device *udev = container_of(d, struct uverbs_device, dev);

	cleanup_srcu_struct(&udev->srcu);
	ida_free(&uverbs_numbers, udev->devnum);
	kfree(udev);
}

static void uverbs_add_device(struct ib_device *device)
{
	struct uverbs_device *udev;
	int devnum, ret;

	if (!device->alloc_ucontext)
		return;

	devnum = ida_alloc_max(&uverbs_numbers, UVERBS_MAX_DEVICES - 1,
			       GFP_KERNEL);
	if (devnum < 0) {
		pr_warn("ib_uverbs: no minor left for %s\n", device->name);
		return;
	}
	udev = kzalloc(sizeof(*udev), GFP_KERNEL);
	if (!udev) {
		ida_free(&uverbs_numbers, devnum);
		return;
	}
	if (init_srcu_struct(&udev->srcu)) {
		kfree(udev);
		ida_free(&uverbs_numbers, devnum);
		return;
	}
	udev->devnum = devnum;
	udev->ib_dev = device;
	mutex_init(&udev->lock);
	INIT_LIST_HEAD(&udev->files);
	udev->disassociate = !!device->disassociate_ucontext;
	refcount_set(&udev->users, 1);
	init_completion(&udev->users_done);

	device_initialize(&udev->dev);
	udev->dev.class = uverbs_class;
	udev->dev.parent = device->dma_device;
	udev->dev.devt = uverbs_base + devnum;
	udev->dev.groups = uverbs_dev_groups;
	udev->dev.release = uverbs_dev_release;
	ret = dev_set_name(&udev->dev, "uverbs%d", devnum);
	if (ret)
		goto err_put;

	cdev_init(&udev->cdev, &uverbs_fops);
	udev->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&udev->cdev, &udev->dev);
	if (ret)
		goto err_put;

	ib_set_client_data(device, &uverbs_client, udev);
	return;

err_put:
	/* The release frees the number and @udev. */
	put_device(&udev->dev);
}

static void uverbs_remove_device(struct ib_device *device)
{
	struct uverbs_device *udev = ib_get_client_data(device, &uverbs_client);

	if (!udev)
		return;
	ib_set_client_data(device, &uverbs_client, NULL);

	cdev_device_del(&udev->cdev, &udev->dev);
	mutex_lock(&udev->lock);
	udev->dead = true;
	mutex_unlock(&udev->lock);

	if (!udev->disassociate) {
		/*
		 * The driver cannot take its mappings back: the device stays
		 * until the last file is closed.
		 */
		uverbs_device_put_user(udev);
		wait_for_completion(&udev->users_done);
		put_device(&udev->dev);
		return;
	}

	/*
	 * Disassociation: no command or mmap() reaches the device once the
	 * commands in flight are over; then each open file is detached.  A
	 * file being released meanwhile either finishes first (and leaves
	 * the list) or waits for its detachment on its mutex.
	 */
	WRITE_ONCE(udev->gone, true);
	synchronize_srcu(&udev->srcu);
	for (;;) {
		struct uverbs_file *file;

		mutex_lock(&udev->lock);
		file = list_first_entry_or_null(&udev->files,
						struct uverbs_file, list);
		if (file) {
			list_del_init(&file->list);
			kref_get(&file->ref);
		}
		mutex_unlock(&udev->lock);
		if (!file)
			break;
		uverbs_file_disassociate(file);
		uverbs_file_put(file);
	}
	uverbs_device_put_user(udev);
	put_device(&udev->dev);
}

static int __init uverbs_init(void)
{
	int ret;

	ret = register_chrdev_region(uverbs_base, UVERBS_MAX_DEVICES,
				     "infiniband_verbs");
	if (ret) {
		pr_err("ib_uverbs: cannot get the char region: %d\n", ret);
		return ret;
	}

	uverbs_class = class_create(THIS_MODULE, "infiniband_verbs");
	if (IS_ERR(uverbs_class)) {
		ret = PTR_ERR(uverbs_class);
		goto err_region;
	}
	uverbs_class->devnode = uverbs_devnode;
	ret = class_create_file(uverbs_class, &class_attr_abi_version.attr);
	if (ret)
		goto err_class;

	ret = ib_register_client(&uverbs_client);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_destroy(uverbs_class);
err_region:
	unregister_chrdev_region(uverbs_base, UVERBS_MAX_DEVICES);
	return ret;
}

static void __exit uverbs_cleanup(void)
{
	ib_unregister_client(&uverbs_client);
	class_destroy(uverbs_class);
	unregister_chrdev_region(uverbs_base, UVERBS_MAX_DEVICES);
	ida_destroy(&uverbs_numbers);
}

module_init(uverbs_init);
module_exit(uverbs_cleanup);
