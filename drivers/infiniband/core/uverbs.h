/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_uverbs: verbs from user space over /dev/infiniband/uverbsN (the
 * write() ABI 6 of include/uapi/rdma/ib_user_verbs.h).  Shared between
 * uverbs_main.c (devices, files, event files, the write() framing) and
 * uverbs_cmd.c (the commands).  Documentation/uverbs.md tells the story.
 *
 * Objects and their lifetimes:
 *  - struct uverbs_device: one per ib_device.  Its struct device (uverbsN
 *    in class infiniband_verbs) owns the memory; the cdev's kobject pins
 *    it, so an open file keeps it.  When the driver can disassociate a
 *    user context, remove() takes every open file off the device
 *    (uverbs_file_disassociate()) and returns without waiting for them;
 *    otherwise @users counts the open files plus one for the client, and
 *    remove() drops that one and waits on @users_done.
 *  - struct uverbs_file: one per open uverbsN.  Counted by the open file
 *    and by each of its completion channels (which may outlive it).
 *  - struct uverbs_event_file: the async event fd of GET_CONTEXT (counted
 *    by its struct file and by the uverbs_file) or a completion channel
 *    (counted by its struct file and by each CQ reporting to it).
 *  - struct uverbs_uobj: one per user object (PD, MR, CQ, QP, SRQ), in the
 *    file's @objs table, created and destroyed only under the file's
 *    @mutex.  Its unread events are on its lists, under the lock of the
 *    event file they are queued on.
 *
 * Lock order: uverbs_device.lock and uverbs_file.mutex are never held
 * together; uverbs_file.mutex, then mmap_lock (pinning, and the driver's
 * disassociate_ucontext()), then uverbs_file.chans_lock, then
 * uverbs_event_file.lock.  The device's event handler and the CQ/QP/SRQ
 * handlers take only an event file's lock (from any context, interrupts
 * off).  uverbs_device.srcu is a read-side section, not a lock: no
 * writer ever waits for it while holding anything a reader takes.
 */
#ifndef UVERBS_H
#define UVERBS_H

#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <rdma/ib_verbs.h>
#include <rdma/ib_user_verbs.h>

/**
 * struct uverbs_device - ib_uverbs' client data for an ib_device
 * @dev: uverbsN in class infiniband_verbs; its release frees this
 * @cdev: the character device; its kobject's parent is @dev
 * @ib_dev: the device.  Valid until remove() returns; a file reaches it
 *	only inside an @srcu read-side section that found @gone false, or
 *	under its own @mutex before it is detached (see @files).
 * @lock: mutex; guards @dead against open(), and @files
 * @dead: remove() has begun; open() fails with -ENXIO
 * @gone: set by remove() before it waits out @srcu: from then on write()
 *	and mmap() fail with -EIO without reaching @ib_dev
 * @srcu: every write() command and every mmap() runs inside a read-side
 *	section of it and checks @gone first; remove() sets @gone and then
 *	synchronize_srcu(), after which no command or mmap() is in flight
 *	and none can start.  Readers sleep in it (commands pin memory); the
 *	only waiter is remove(), which holds nothing a reader takes.
 * @files: the open files not yet detached (uverbs_file.list); a file
 *	leaves it at release only after it is done with @ib_dev, and
 *	remove() takes each one off it and detaches it
 * @disassociate: the driver has disassociate_ucontext(): remove() does
 *	not wait for the files, and open() does not pin the driver
 * @users: open files, plus one held by the client until remove()
 * @users_done: completed when @users drops to zero (waited on by
 *	remove() only without @disassociate)
 * @devnum: N
 */
struct uverbs_device {
	struct device		dev;
	struct cdev		cdev;
	struct ib_device	*ib_dev;
	/* guards dead and files: open() checks dead and joins files under it */
	struct mutex		lock;
	bool			dead;
	bool			gone;
	/* read side: write() and mmap(); writer: remove() (see above) */
	struct srcu_struct	srcu;
	struct list_head	files;
	bool			disassociate;
	refcount_t		users;
	struct completion	users_done;
	int			devnum;
};

struct uverbs_file;

/**
 * struct uverbs_event_file - an event fd: GET_CONTEXT's async fd or a
 *	completion channel (CREATE_COMP_CHANNEL)
 * @ref: held by the struct file, by the uverbs_file (async fd) and by
 *	every CQ that reports to it (completion channel)
 * @lock: spinlock, taken with interrupts off (events arrive from the
 *	driver's interrupt handler); guards @events, @closed and every
 *	event's place on its object's list (struct uverbs_uobj.comp_list
 *	and async_list) together with the counter it bumps when read
 * @events: struct uverbs_event, oldest first
 * @wait: readers and pollers
 * @async_queue: SIGIO subscribers
 * @closed: the fd was released; events are dropped
 * @gone: the device went away under the file (disassociation): read()
 *	returns what is queued and then -EIO, poll() reports EPOLLERR
 * @fatal: an IB_EVENT_DEVICE_FATAL is (or was) queued on this async fd;
 *	another one is not queued
 * @chan_list: a completion channel's place on its owner's @chans
 * @comp: a completion channel: read() returns struct
 *	ib_uverbs_comp_event_desc (8 bytes), else the async descriptor
 * @owner: a completion channel's uverbs_file (holds its @ref); only
 *	CQs of that file may use the channel.  NULL for the async fd.
 */
struct uverbs_event_file {
	struct kref		ref;
	/* guards events, closed and the events' object lists; irqsave */
	spinlock_t		lock;
	struct list_head	events;
	wait_queue_head_t	wait;
	struct fasync_struct	*async_queue;
	bool			closed;
	bool			gone;
	bool			fatal;
	bool			comp;
	struct uverbs_file	*owner;
	struct list_head	chan_list;
};

/**
 * struct uverbs_event - one queued event
 * @list: on the event file's @events
 * @obj_list: on the object's list of unread events (when @counter)
 * @counter: the object's count of events read, bumped by read(); NULL
 *	for port and device events
 * @desc: what read() returns (@desc.comp for a completion channel)
 */
struct uverbs_event {
	struct list_head	list;
	struct list_head	obj_list;
	u32			*counter;
	union {
		struct ib_uverbs_async_event_desc async;
		struct ib_uverbs_comp_event_desc comp;
	} desc;
};

/**
 * struct uverbs_file - an open uverbsN
 * @ref: held by the struct file (dropped at release) and by each of its
 *	completion channels
 * @udev: the device (one of its @users)
 * @mutex: held across every write() command and the teardown at
 *	release; guards @ucontext (set once, with release order, so that
 *	mmap() may read it without the mutex), @async, @handler_registered
 *	and the
 *	existence of every object in @objs (objects are added and removed
 *	only under it, so a command's lookups stay valid until it returns)
 * @ucontext: the driver context of GET_CONTEXT, or NULL before it
 * @async: the async event file of GET_CONTEXT, or NULL
 * @event_handler: delivers port events to @async
 * @handler_registered: @event_handler is registered
 * @objs: user handle -> struct uverbs_uobj (the xarray's own lock
 *	covers its internals; its contents change only under @mutex)
 * @list: on udev->files while not @detached (under udev->lock)
 * @detached: under @mutex; the file is done with the device: its objects
 *	and context are gone (at release, or by disassociation)
 * @chans_lock: spinlock (process context only); guards @chans
 * @chans: the completion channels this file made (uverbs_event_file
 *	.chan_list), so that disassociation can wake their readers
 */
struct uverbs_file {
	struct kref		ref;
	struct uverbs_device	*udev;
	/* serialises commands and teardown; never taken under mmap_lock */
	struct mutex		mutex;
	struct ib_ucontext	*ucontext;
	struct uverbs_event_file *async;
	struct ib_event_handler	event_handler;
	bool			handler_registered;
	struct xarray		objs;
	struct list_head	list;
	bool			detached;
	/* guards chans; inside mutex, outside the channels' locks */
	spinlock_t		chans_lock;
	struct list_head	chans;
};

/*
 * Types of user objects; teardown at close runs in this order (users
 * before what they use: QPs, SRQs, CQs, MRs, PDs).
 */
enum uverbs_obj_type {
	UVERBS_OBJ_QP,
	UVERBS_OBJ_SRQ,
	UVERBS_OBJ_CQ,
	UVERBS_OBJ_MR,
	UVERBS_OBJ_PD,
	UVERBS_OBJ_TYPES
};

/**
 * struct uverbs_uobj - a user object
 * @uobject: the core's view (handle, user_handle, context)
 * @type: what @object is
 * @object: the verbs object (struct ib_pd *, ...)
 * @file: the file that created it (its async fd gets the object's events)
 * @comp: a CQ's completion channel (a reference), or NULL
 * @comp_list: a CQ's completion events not read yet (on @comp)
 * @async_list: the object's async events not read yet (on @file's async
 *	fd)
 * @comp_events_reported: completion events read (DESTROY_CQ reports it)
 * @async_events_reported: async events read (the DESTROY_* replies)
 *
 * The lists and counters are under the lock of the event file the events
 * are on.  The object's handlers run only while the driver's object
 * exists, and destroy purges the unread events after the driver's object
 * is gone, so no event refers to a freed uverbs_uobj.
 */
struct uverbs_uobj {
	struct ib_uobject	uobject;
	enum uverbs_obj_type	type;
	void			*object;
	struct uverbs_file	*file;
	struct uverbs_event_file *comp;
	struct list_head	comp_list;
	struct list_head	async_list;
	u32			comp_events_reported;
	u32			async_events_reported;
};

/**
 * struct uverbs_cmd_args - one write() command, unpacked
 * @file: the file it came in on (its @mutex held)
 * @in: the core request (after the header)
 * @inlen: its length
 * @out: the core response buffer (user pointer), or NULL
 * @outlen: its length
 * @udata: the driver's part of request and response
 */
struct uverbs_cmd_args {
	struct uverbs_file	*file;
	const void __user	*in;
	size_t			inlen;
	void __user		*out;
	size_t			outlen;
	struct ib_udata		udata;
};

/**
 * struct uverbs_cmd_desc - a write() command
 * @handler: runs it; returns 0 or a negative errno
 * @req_size: bytes of the core request, at least
 * @resp_size: bytes of the core response, at least (0: no response)
 * @has_udata: bytes past the core request/response belong to the driver
 */
struct uverbs_cmd_desc {
	int	(*handler)(struct uverbs_cmd_args *args);
	u16	req_size;
	u16	resp_size;
	bool	has_udata;
};

extern const struct uverbs_cmd_desc uverbs_cmds[IB_USER_VERBS_CMD_OPEN_QP + 1];

int uverbs_ex_query_device(struct uverbs_cmd_args *args);

/* uverbs_main.c */
struct uverbs_event_file *uverbs_event_file_create(struct file **filp,
						   struct uverbs_file *owner);
struct uverbs_event_file *uverbs_comp_file_get(struct uverbs_file *file,
					       int fd);
void uverbs_event_file_put(struct uverbs_event_file *ev);
void uverbs_event_handler(struct ib_event_handler *handler,
			  struct ib_event *event);
void uverbs_comp_handler(struct ib_cq *cq, void *cq_context);
void uverbs_obj_event_handler(struct ib_event *event, void *context);
void uverbs_event_purge(struct uverbs_event_file *ev,
			struct list_head *obj_list);
void uverbs_file_put(struct uverbs_file *file);
void uverbs_file_teardown(struct uverbs_file *file);

#endif /* UVERBS_H */
