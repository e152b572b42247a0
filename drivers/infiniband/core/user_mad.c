// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_umad: MAD access from user space (ABI 5, include/rdma/ib_user_mad.h).
 *
 * Every port of every device gets two character devices: umadN, through
 * which a process registers MAD agents and reads and writes MADs, and
 * issmN, whose opening marks the port as hosting a subnet manager (the
 * IsSM capability bit) for as long as it stays open.
 *
 * Objects and their lifetimes:
 *  - struct umad_device: one per ib_device, holding one struct umad_port
 *    per port; counted by the client (until remove) and by each port's two
 *    struct devices (until their release).
 *  - struct umad_port: the two cdevs and devices. An open file pins its
 *    cdev, the cdev its device, the device the umad_device: so the port
 *    outlives every file opened on it, even across device removal. At
 *    removal @ib_dev becomes NULL and every open file is marked dead.
 *  - struct umad_file: one per open umadN, with up to UMAD_MAX_AGENTS
 *    agents, a queue of MADs to read and a list of sends in flight.
 *  - struct umad_packet: one received MAD, or one send in flight (which
 *    comes back to the reader with status ETIMEDOUT if it timed out).
 *
 * Lock order: port->lock, then file->mutex, then file->send_lock. The MAD
 * layer's handlers take file->mutex and send_lock only, so agents are
 * unregistered with port->lock held but never file->mutex.
 */

#include <linux/bitmap.h>
#include <linux/cdev.h>
#include <linux/compat.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/init.h>
#include <linux/kref.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/semaphore.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_mad.h>

#include "user_mad.h"

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand userspace MAD access");
MODULE_LICENSE("Dual BSD/GPL");

enum {
	UMAD_MAJOR		= 231,
	UMAD_MAX_PORTS		= 64,		/* umad minors 0..63 */
	UMAD_ISSM_MINOR0	= UMAD_MAX_PORTS,	/* issm minors 64..127 */
	UMAD_MINORS		= 2 * UMAD_MAX_PORTS,
	UMAD_MAX_QUEUED		= 20000,	/* received MADs waiting per file */
	UMAD_SEG_BYTES		= sizeof(struct ib_mad),
};

struct umad_device;

/**
 * struct umad_port - the umadN and issmN of one port
 * @cdev: umadN's character device
 * @dev: umadN in class infiniband_mad
 * @sm_cdev: issmN's character device
 * @sm_dev: issmN
 * @sm_sem: held by the one process that has issmN open
 * @lock: mutex; guards @ib_dev and @files, and serializes agent
 *	(un)registration against device removal
 * @files: the open umadN files
 * @ib_dev: the device, NULL once it has been removed
 * @owner: the umad_device this port is part of
 * @devnum: N
 * @port_num: the port on @ib_dev
 */
struct umad_port {
	struct cdev		cdev;
	struct device		dev;
	struct cdev		sm_cdev;
	struct device		sm_dev;
	struct semaphore	sm_sem;
	/* guards ib_dev, files; orders (un)registration against removal */
	struct mutex		lock;
	struct list_head	files;
	struct ib_device	*ib_dev;
	struct umad_device	*owner;
	int			devnum;
	u8			port_num;
};

/**
 * struct umad_device - ib_umad's client data for an ib_device
 * @ref: see the lifetimes at the top of the file
 * @nports: entries in @ports
 * @ports: one per port
 */
struct umad_device {
	struct kref		ref;
	int			nports;
	struct umad_port	ports[];
};

/**
 * struct umad_file - an open umadN
 * @port: its port
 * @node: on @port->files
 * @mutex: guards @agents, @recv_list, @queued, @dead, @pkey_hdr and @used;
 *	never held across a copy from or to user space, since the port's
 *	MAD handlers take it
 * @send_lock: spinlock; guards @send_list (taken with interrupts off)
 * @recv_list: packets for read(), oldest first
 * @send_list: sends in flight, for the duplicate-TID check
 * @wait: readers and pollers wait here for @recv_list
 * @agents: the registered agents by ID
 * @queued: received packets on @recv_list
 * @dead: the device is gone or the file is closing; no more traffic
 * @pkey_hdr: the file uses the 64-byte header with pkey_index
 * @used: an agent has been registered (ENABLE_PKEY is too late after that)
 */
struct umad_file {
	struct umad_port	*port;
	struct list_head	node;
	/* guards agents, recv_list, queued and the flags */
	struct mutex		mutex;
	/* guards send_list; irq-off */
	spinlock_t		send_lock;
	struct list_head	recv_list;
	struct list_head	send_list;
	wait_queue_head_t	wait;
	struct ib_mad_agent	*agents[UMAD_MAX_AGENTS];
	int			queued;
	bool			dead;
	bool			pkey_hdr;
	bool			used;
};

/**
 * struct umad_packet - a MAD on its way to or from user space
 * @list: on the file's recv_list or send_list
 * @recv_wc: a received MAD (NULL for a send)
 * @msg: for a send in flight, its send buffer
 * @ah: for a send in flight, its address handle
 * @length: MAD bytes that follow the header for the reader
 * @umad: the header, then (sends only) the first IB_MGMT_RMPP_HDR bytes
 *	of the MAD as the user wrote them, TID completed
 */
struct umad_packet {
	struct list_head	list;
	struct ib_mad_recv_wc	*recv_wc;
	struct ib_mad_send_buf	*msg;
	struct ib_ah		*ah;
	size_t			length;
	struct ib_user_mad	umad;
};

static dev_t umad_base = MKDEV(UMAD_MAJOR, 0);
static DEFINE_IDA(umad_numbers);

static void umad_add_device(struct ib_device *device);
static void umad_remove_device(struct ib_device *device);

static struct ib_client umad_client = {
	.name	= "umad",
	.add	= umad_add_device,
	.remove	= umad_remove_device,
};

static size_t umad_hdr_bytes(const struct umad_file *file)
{
	return file->pkey_hdr ? sizeof(struct ib_user_mad_hdr) :
				sizeof(struct ib_user_mad_hdr_old);
}

static void umad_device_free(struct kref *ref)
{
	kfree(container_of(ref, struct umad_device, ref));
}

/* The agent's ID in @file, or -1. Caller holds file->mutex. */
static int umad_agent_id(struct umad_file *file, struct ib_mad_agent *agent)
{
	int id;

	for (id = 0; id < UMAD_MAX_AGENTS; id++)
		if (file->agents[id] == agent)
			return id;
	return -1;
}

/*
 * Put @packet on the read queue of @agent's file. On false the caller
 * still owns it: the file is dead, the agent gone, or (for received MADs)
 * the queue full.
 */
static bool umad_enqueue(struct umad_file *file, struct ib_mad_agent *agent,
			 struct umad_packet *packet, bool received)
{
	bool ok = false;
	int id;

	mutex_lock(&file->mutex);
	if (file->dead || (received && file->queued >= UMAD_MAX_QUEUED))
		goto out;
	id = umad_agent_id(file, agent);
	if (id < 0)
		goto out;
	packet->umad.hdr.id = id;
	list_add_tail(&packet->list, &file->recv_list);
	if (received)
		file->queued++;
	ok = true;
	wake_up_interruptible(&file->wait);
out:
	mutex_unlock(&file->mutex);
	return ok;
}

static void umad_forget_send(struct umad_file *file, struct umad_packet *packet)
{
	spin_lock_irq(&file->send_lock);
	list_del(&packet->list);
	spin_unlock_irq(&file->send_lock);
}

/*
 * Describe where a received MAD came from, in the header the reader gets.
 * With a GRH, the GRH fields are those a reply needs. Return: 0 or -errno.
 */
static int umad_describe_sender(struct ib_mad_agent *agent,
				struct ib_mad_recv_wc *recv_wc,
				struct ib_user_mad_hdr *hdr)
{
	struct ib_wc *wc = recv_wc->wc;
	struct ib_ah_attr back = {};
	int ret;

	hdr->qpn = cpu_to_be32(wc->src_qp);
	hdr->lid = cpu_to_be16(wc->slid);
	hdr->sl = wc->sl;
	hdr->path_bits = wc->dlid_path_bits;
	hdr->pkey_index = wc->pkey_index;
	if (!(wc->wc_flags & IB_WC_GRH))
		return 0;

	ret = ib_init_ah_from_wc(agent->device, agent->port_num, wc,
				 recv_wc->recv_buf.grh, &back);
	if (ret)
		return ret;
	hdr->grh_present = 1;
	hdr->gid_index = back.grh.sgid_index;
	hdr->hop_limit = back.grh.hop_limit;
	hdr->traffic_class = back.grh.traffic_class;
	memcpy(hdr->gid, back.grh.dgid.raw, sizeof(hdr->gid));
	hdr->flow_label = cpu_to_be32(back.grh.flow_label);
	return 0;
}

static void umad_send_done(struct ib_mad_agent *agent,
			   struct ib_mad_send_wc *wc)
{
	struct umad_packet *packet = wc->send_buf->context[0];
	bool unanswered = wc->status == IB_WC_RESP_TIMEOUT_ERR;
	struct umad_file *file = agent->context;

	umad_forget_send(file, packet);
	ib_free_send_mad(packet->msg);
	ib_destroy_ah(packet->ah);
	packet->msg = NULL;
	packet->ah = NULL;

	/* A request nobody answered goes back to its sender, marked. */
	if (unanswered) {
		packet->umad.hdr.status = ETIMEDOUT;
		packet->length = IB_MGMT_MAD_HDR;
	}
	if (!unanswered || !umad_enqueue(file, agent, packet, false))
		kfree(packet);
}

static void umad_recv(struct ib_mad_agent *agent,
		      struct ib_mad_send_buf *send_buf,
		      struct ib_mad_recv_wc *recv_wc)
{
	struct umad_packet *packet = NULL;

	if (recv_wc->wc->status == IB_WC_SUCCESS)
		packet = kzalloc(sizeof(*packet), GFP_KERNEL);
	if (packet) {
		packet->recv_wc = recv_wc;
		packet->length = recv_wc->mad_len;
		if (!umad_describe_sender(agent, recv_wc, &packet->umad.hdr) &&
		    umad_enqueue(agent->context, agent, packet, true))
			return;	/* the reader owns it now */
		kfree(packet);
	}
	ib_free_recv_mad(recv_wc);
}

/* Copy a timed-out send back out: the header and the MAD header. */
static ssize_t umad_copy_send(struct umad_file *file, char __user *buf,
			      struct umad_packet *packet, size_t count)
{
	size_t hdr_bytes = umad_hdr_bytes(file);

	if (count < hdr_bytes + packet->length)
		return -EINVAL;
	if (copy_to_user(buf, &packet->umad.hdr, hdr_bytes) ||
	    copy_to_user(buf + hdr_bytes, packet->umad.data, packet->length))
		return -EFAULT;
	return hdr_bytes + packet->length;
}

/*
 * Copy a received MAD out: the header, then the first segment whole, then
 * the data part of every further RMPP segment. A buffer too short for the
 * first segment gets -EINVAL; one too short for the rest gets the header
 * (whose length field tells what is needed) and -ENOSPC.
 */
static ssize_t umad_copy_recv(struct umad_file *file, char __user *buf,
			      struct umad_packet *packet, size_t count)
{
	size_t hdr_bytes = umad_hdr_bytes(file);
	size_t first = min_t(size_t, packet->length, UMAD_SEG_BYTES);
	struct ib_mad_recv_wc *recv_wc = packet->recv_wc;
	struct ib_mad_recv_buf *seg;
	size_t done, skip;

	if (count < hdr_bytes + first)
		return -EINVAL;

	packet->umad.hdr.length = hdr_bytes + packet->length;
	if (copy_to_user(buf, &packet->umad.hdr, hdr_bytes))
		return -EFAULT;
	buf += hdr_bytes;
	if (copy_to_user(buf, recv_wc->recv_buf.mad, first))
		return -EFAULT;
	if (first == packet->length)
		return hdr_bytes + first;

	if (count < hdr_bytes + packet->length)
		return -ENOSPC;

	skip = ib_get_mad_data_offset(recv_wc->recv_buf.mad->mad_hdr.mgmt_class);
	done = first;
	list_for_each_entry(seg, &recv_wc->rmpp_list, list) {
		size_t piece;

		if (seg == &recv_wc->recv_buf)
			continue;
		if (done >= packet->length)
			break;
		piece = min(packet->length - done, UMAD_SEG_BYTES - skip);
		if (copy_to_user(buf + done, (u8 *)seg->mad + skip, piece))
			return -EFAULT;
		done += piece;
	}
	if (done != packet->length)
		return -EIO;	/* the MAD layer gave fewer bytes than it said */
	return hdr_bytes + done;
}

static void umad_free_packet(struct umad_packet *packet)
{
	if (packet->recv_wc)
		ib_free_recv_mad(packet->recv_wc);
	kfree(packet);
}

/* Put @packet back at the head of the queue; false if the file is dead. */
static bool umad_requeue(struct umad_file *file, struct umad_packet *packet)
{
	bool back;

	mutex_lock(&file->mutex);
	back = !file->dead;
	if (back) {
		list_add(&packet->list, &file->recv_list);
		file->queued += !!packet->recv_wc;
	}
	mutex_unlock(&file->mutex);
	return back;
}

static ssize_t umad_read(struct file *filp, char __user *buf, size_t count,
			 loff_t *pos)
{
	struct umad_file *file = filp->private_data;
	struct umad_packet *packet;
	ssize_t ret;

	mutex_lock(&file->mutex);
	if (count < umad_hdr_bytes(file)) {
		mutex_unlock(&file->mutex);
		return -EINVAL;
	}

	while (list_empty(&file->recv_list) && !file->dead) {
		mutex_unlock(&file->mutex);
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(file->wait,
					     !list_empty(&file->recv_list) ||
					     READ_ONCE(file->dead)))
			return -ERESTARTSYS;
		mutex_lock(&file->mutex);
	}
	if (file->dead) {
		mutex_unlock(&file->mutex);
		return -EIO;
	}
	packet = list_first_entry(&file->recv_list, struct umad_packet, list);
	list_del(&packet->list);
	file->queued -= !!packet->recv_wc;
	mutex_unlock(&file->mutex);

	ret = packet->recv_wc ? umad_copy_recv(file, buf, packet, count) :
				umad_copy_send(file, buf, packet, count);
	/* A failed copy leaves the MAD first in line, for a bigger buffer. */
	if (ret >= 0 || !umad_requeue(file, packet))
		umad_free_packet(packet);
	return ret;
}

static bool umad_same_peer(const struct ib_user_mad_hdr *a,
			   const struct ib_user_mad_hdr *b)
{
	if (a->grh_present != b->grh_present)
		return false;
	if (a->grh_present)
		return !memcmp(a->gid, b->gid, sizeof(a->gid));
	return a->lid == b->lid;
}

/*
 * Is a send with this TID and class already in flight? Two requests may
 * not share a TID; two responses may, unless they go to the same peer.
 * Caller holds file->send_lock.
 */
static bool umad_tid_busy(struct umad_file *file, struct umad_packet *packet)
{
	const struct ib_mad *mad = (const struct ib_mad *)packet->umad.data;
	bool response = ib_response_mad(mad);
	struct umad_packet *other;

	list_for_each_entry(other, &file->send_list, list) {
		const struct ib_mad *sent = (const struct ib_mad *)other->umad.data;

		if (sent->mad_hdr.tid != mad->mad_hdr.tid ||
		    sent->mad_hdr.mgmt_class != mad->mad_hdr.mgmt_class ||
		    ib_response_mad(sent) != response)
			continue;
		if (!response || umad_same_peer(&packet->umad.hdr,
						&other->umad.hdr))
			return true;
	}
	return false;
}

/**
 * umad_mad_bytes() - the MAD part of a write() of @count bytes
 * @count: the bytes written
 * @hdr_bytes: the size of the file's header (56 or 64)
 *
 * Return: the bytes after the header, or -EINVAL when they are fewer than
 * an RMPP header (36), -EMSGSIZE when more than UMAD_MAX_MAD_BYTES.
 */
ssize_t umad_mad_bytes(size_t count, size_t hdr_bytes)
{
	size_t mad_bytes;

	if (check_sub_overflow(count, hdr_bytes, &mad_bytes) ||
	    mad_bytes < IB_MGMT_RMPP_HDR)
		return -EINVAL;
	if (mad_bytes > UMAD_MAX_MAD_BYTES)
		return -EMSGSIZE;
	return mad_bytes;
}

/**
 * umad_check_send_hdr() - the header fields of a send that need no agent
 * @hdr: the header as written
 *
 * Return: 0, or -EINVAL for an agent ID out of range, an SL over 15,
 * more than UMAD_MAX_RETRIES retries or a timeout over UMAD_MAX_TIMEOUT_MS.
 */
int umad_check_send_hdr(const struct ib_user_mad_hdr *hdr)
{
	if (hdr->id >= UMAD_MAX_AGENTS || hdr->sl > 15 ||
	    hdr->retries > UMAD_MAX_RETRIES ||
	    hdr->timeout_ms > UMAD_MAX_TIMEOUT_MS)
		return -EINVAL;
	return 0;
}

/* The RMPP header's Active flag (ib_get_rmpp_flags() takes no const). */
static bool umad_rmpp_flag_active(const struct ib_rmpp_mad *head)
{
	return head->rmpp_hdr.rmpp_rtime_flags & IB_MGMT_RMPP_FLAG_ACTIVE;
}

/*
 * One segment of an RMPP message the user segments: the agent does no
 * RMPP, the class has RMPP and the segment says it is Active.
 */
static bool umad_user_rmpp_segment(u8 agent_rmpp_version,
				   const struct ib_rmpp_mad *head)
{
	return !agent_rmpp_version &&
	       ib_is_mad_class_rmpp(head->mad_hdr.mgmt_class) &&
	       umad_rmpp_flag_active(head);
}

/**
 * umad_plan_send() - how to send the MAD of a write()
 * @head: its first IB_MGMT_RMPP_HDR bytes
 * @mad_bytes: its length, from umad_mad_bytes()
 * @agent_rmpp_version: the sending agent's (0: no kernel RMPP)
 * @layout: filled in
 *
 * Return: 0, -EINVAL when @mad_bytes is shorter than the class header or
 * a MAD without kernel RMPP is longer than one packet, -EMSGSIZE for an
 * RMPP message of more than UMAD_MAX_RMPP_DATA data bytes.
 */
int umad_plan_send(const struct ib_rmpp_mad *head, size_t mad_bytes,
		   u8 agent_rmpp_version, struct umad_send_layout *layout)
{
	u8 mgmt_class = head->mad_hdr.mgmt_class;
	struct umad_send_layout l = {};

	l.hdr_len = ib_get_mad_data_offset(mgmt_class);
	l.kernel_rmpp = agent_rmpp_version && ib_is_mad_class_rmpp(mgmt_class);
	l.rmpp_active = l.kernel_rmpp && umad_rmpp_flag_active(head);
	l.user_rmpp_segment = umad_user_rmpp_segment(agent_rmpp_version, head);

	if (check_sub_overflow(mad_bytes, (size_t)l.hdr_len, &l.data_len))
		return -EINVAL;
	if (l.rmpp_active) {
		if (l.data_len > UMAD_MAX_RMPP_DATA)
			return -EMSGSIZE;
	} else if (mad_bytes > IB_MGMT_MAD_SIZE) {
		return -EINVAL;
	}
	*layout = l;
	return 0;
}

/**
 * umad_send_checks_tid() - does the duplicate-TID rule apply to a send?
 * @layout: from umad_plan_send()
 *
 * Every send is checked, kernel-RMPP messages too, except a segment of a
 * message the user segments itself: those all carry the message's TID.
 *
 * Return: true when a send with the same TID must not be in flight.
 */
bool umad_send_checks_tid(const struct umad_send_layout *layout)
{
	return !layout->user_rmpp_segment;
}

/*
 * Copy a MAD as written into its send buffer: with kernel RMPP the class
 * header beyond the RMPP header, then the data segment by segment; else
 * everything after the part already in place (@done bytes).
 */
static void umad_fill_msg(struct ib_mad_send_buf *msg, const u8 *mad,
			  const struct umad_send_layout *l, size_t done)
{
	size_t left = l->data_len, piece;
	const u8 *src;
	int seg;

	if (!l->rmpp_active) {
		memcpy((u8 *)msg->mad + done, mad + done,
		       l->hdr_len + l->data_len - done);
		return;
	}
	if (l->hdr_len > IB_MGMT_RMPP_HDR)
		memcpy((u8 *)msg->mad + IB_MGMT_RMPP_HDR,
		       mad + IB_MGMT_RMPP_HDR, l->hdr_len - IB_MGMT_RMPP_HDR);
	src = mad + l->hdr_len;
	for (seg = 1; left; seg++) {
		void *dst = ib_get_rmpp_segment(msg, seg);

		/* the MAD layer made seg_count * seg_size >= data_len */
		if (WARN_ON_ONCE(!dst))
			return;
		piece = min_t(size_t, left, msg->seg_size);
		memcpy(dst, src, piece);
		src += piece;
		left -= piece;
	}
}

static struct ib_ah *umad_make_ah(struct umad_file *file,
				  struct ib_mad_agent *agent,
				  const struct ib_user_mad_hdr *hdr)
{
	struct ib_ah_attr attr = {
		.dlid = be16_to_cpu(hdr->lid),
		.sl = hdr->sl,
		.src_path_bits = hdr->path_bits,
		.port_num = file->port->port_num,
	};

	if (hdr->grh_present) {
		attr.ah_flags = IB_AH_GRH;
		memcpy(attr.grh.dgid.raw, hdr->gid, sizeof(hdr->gid));
		attr.grh.flow_label = be32_to_cpu(hdr->flow_label) & 0xfffff;
		attr.grh.sgid_index = hdr->gid_index;
		attr.grh.hop_limit = hdr->hop_limit;
		attr.grh.traffic_class = hdr->traffic_class;
	}
	return ib_create_ah(agent->qp->pd, &attr);
}

/*
 * Send the MAD at @mad (@mad_bytes, already copied in) as @packet says,
 * on @file's agent. Caller holds file->mutex. On success the send handler
 * owns @packet; on failure the caller still does.
 */
static int umad_send_locked(struct umad_file *file, struct umad_packet *packet,
			    const u8 *mad, size_t mad_bytes)
{
	struct ib_rmpp_mad *head = (struct ib_rmpp_mad *)packet->umad.data;
	struct ib_user_mad_hdr *hdr = &packet->umad.hdr;
	struct umad_send_layout l;
	struct ib_mad_send_buf *msg;
	struct ib_mad_agent *agent;
	u16 pkey;
	int ret;

	agent = file->dead ? NULL :
		file->agents[array_index_nospec(hdr->id, UMAD_MAX_AGENTS)];
	if (!agent)
		return -EIO;

	ret = umad_plan_send(head, mad_bytes, agent->rmpp_version, &l);
	if (ret)
		return ret;
	/* Only an index inside the port's table: never a P_Key made up. */
	if (ib_get_cached_pkey(agent->device, agent->port_num,
			       hdr->pkey_index, &pkey))
		return -EINVAL;

	packet->ah = umad_make_ah(file, agent, hdr);
	if (IS_ERR(packet->ah))
		return PTR_ERR(packet->ah);

	/* The buffer is charged to the writer, as is the copy it came from. */
	msg = ib_create_send_mad(agent, be32_to_cpu(hdr->qpn), hdr->pkey_index,
				 l.rmpp_active, l.hdr_len, l.data_len,
				 GFP_KERNEL_ACCOUNT);
	if (IS_ERR(msg)) {
		ret = PTR_ERR(msg);
		goto out_ah;
	}
	packet->msg = msg;
	msg->ah = packet->ah;
	msg->timeout_ms = hdr->timeout_ms;
	msg->retries = hdr->retries;
	msg->context[0] = packet;

	/* With the kernel doing RMPP, the user's RMPP header is not used. */
	memcpy(msg->mad, mad, IB_MGMT_MAD_HDR);
	umad_fill_msg(msg, mad, &l,
		      l.kernel_rmpp ? IB_MGMT_RMPP_HDR : IB_MGMT_MAD_HDR);

	/* Requests carry the agent's hi_tid on top, so answers find it. */
	if (!ib_response_mad(msg->mad)) {
		struct ib_mad_hdr *sent = msg->mad;
		u64 tid = (u64)agent->hi_tid << 32 |
			  (be64_to_cpu(sent->tid) & 0xffffffff);

		sent->tid = cpu_to_be64(tid);
		head->mad_hdr.tid = sent->tid;
	}

	spin_lock_irq(&file->send_lock);
	if (umad_send_checks_tid(&l) && umad_tid_busy(file, packet)) {
		spin_unlock_irq(&file->send_lock);
		ret = -EINVAL;
		goto out_msg;
	}
	list_add_tail(&packet->list, &file->send_list);
	spin_unlock_irq(&file->send_lock);

	ret = ib_post_send_mad(msg, NULL);
	if (ret) {
		umad_forget_send(file, packet);
		goto out_msg;
	}
	return 0;

out_msg:
	ib_free_send_mad(msg);
	packet->msg = NULL;
out_ah:
	ib_destroy_ah(packet->ah);
	packet->ah = NULL;
	return ret;
}

/*
 * The user's bytes are checked and copied in before file->mutex is taken,
 * so a slow or faulting user buffer never holds up the port's receive
 * handlers, which take that mutex.
 */
static ssize_t umad_write(struct file *filp, const char __user *buf,
			  size_t count, loff_t *pos)
{
	struct umad_file *file = filp->private_data;
	struct umad_packet *packet;
	size_t hdr_bytes;
	ssize_t mad_bytes;
	u8 *mad = NULL;
	int ret;

	mutex_lock(&file->mutex);
	hdr_bytes = umad_hdr_bytes(file);
	mutex_unlock(&file->mutex);

	mad_bytes = umad_mad_bytes(count, hdr_bytes);
	if (mad_bytes < 0)
		return mad_bytes;

	packet = kzalloc(sizeof(*packet) + IB_MGMT_RMPP_HDR, GFP_KERNEL);
	if (!packet)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(&packet->umad.hdr, buf, hdr_bytes))
		goto out;
	ret = umad_check_send_hdr(&packet->umad.hdr);
	if (ret)
		goto out;

	ret = -ENOMEM;
	mad = kvmalloc(mad_bytes, GFP_KERNEL_ACCOUNT);
	if (!mad)
		goto out;
	ret = -EFAULT;
	if (copy_from_user(mad, buf + hdr_bytes, mad_bytes))
		goto out;
	memcpy(packet->umad.data, mad, IB_MGMT_RMPP_HDR);

	mutex_lock(&file->mutex);
	/* ENABLE_PKEY came in between: the bytes were read as the wrong header */
	if (umad_hdr_bytes(file) != hdr_bytes)
		ret = -EINVAL;
	else
		ret = umad_send_locked(file, packet, mad, mad_bytes);
	mutex_unlock(&file->mutex);
	if (!ret)
		packet = NULL;	/* the send handler owns it */
out:
	kvfree(mad);
	kfree(packet);
	return ret ? ret : count;
}

static __poll_t umad_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct umad_file *file = filp->private_data;
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;	/* a write never waits */

	poll_wait(filp, &file->wait, wait);
	mutex_lock(&file->mutex);
	if (file->dead)
		mask = EPOLLERR;
	else if (!list_empty(&file->recv_list))
		mask |= EPOLLIN | EPOLLRDNORM;
	mutex_unlock(&file->mutex);
	return mask;
}

/* A free agent slot of @file, or -ENOMEM. Caller holds file->mutex. */
static int umad_free_slot(struct umad_file *file)
{
	int id = umad_agent_id(file, NULL);

	return id < 0 ? -ENOMEM : id;
}

/*
 * Register an agent for @file from the decoded request; store its ID at
 * @id_out. @user_rmpp asks the MAD layer not to run RMPP for the class.
 */
static int umad_register(struct umad_file *file, u32 qpn,
			 struct ib_mad_reg_req *req, u8 rmpp_version,
			 bool user_rmpp, bool pkey_hdr, u32 __user *id_out)
{
	struct umad_port *port = file->port;
	struct ib_mad_agent *agent;
	int id, ret;

	if (qpn > 1 || rmpp_version > IB_MGMT_RMPP_VERSION)
		return -EINVAL;

	mutex_lock(&port->lock);
	mutex_lock(&file->mutex);
	ret = -ENODEV;
	if (!port->ib_dev || file->dead)
		goto out;
	ret = umad_free_slot(file);
	if (ret < 0)
		goto out;
	id = ret;

	agent = ib_register_mad_agent(port->ib_dev, port->port_num,
				      qpn ? IB_QPT_GSI : IB_QPT_SMI, req,
				      user_rmpp ? 0 : rmpp_version,
				      umad_send_done, umad_recv, file);
	if (IS_ERR(agent)) {
		ret = PTR_ERR(agent);
		goto out;
	}
	if (put_user(id, id_out)) {
		mutex_unlock(&file->mutex);
		ib_unregister_mad_agent(agent);
		mutex_unlock(&port->lock);
		return -EFAULT;
	}
	file->agents[id] = agent;
	if (!file->used) {
		file->used = true;
		file->pkey_hdr |= pkey_hdr;
	}
	ret = 0;
out:
	mutex_unlock(&file->mutex);
	mutex_unlock(&port->lock);
	return ret;
}

static int umad_ioctl_register(struct umad_file *file, void __user *arg)
{
	struct ib_user_mad_reg_req ureq;
	struct ib_mad_reg_req req = {};

	if (copy_from_user(&ureq, arg, sizeof(ureq)))
		return -EFAULT;
	if (ureq.mgmt_class) {
		req.mgmt_class = ureq.mgmt_class;
		req.mgmt_class_version = ureq.mgmt_class_version;
		memcpy(req.oui, ureq.oui, sizeof(req.oui));
		BUILD_BUG_ON(sizeof(ureq.method_mask) != sizeof(req.method_mask));
		memcpy(req.method_mask, ureq.method_mask, sizeof(req.method_mask));
	}
	return umad_register(file, ureq.qpn, ureq.mgmt_class ? &req : NULL,
			     ureq.rmpp_version, false, false,
			     arg + offsetof(struct ib_user_mad_reg_req, id));
}

static int umad_ioctl_register2(struct umad_file *file, void __user *arg)
{
	u32 __user *flags_out = arg + offsetof(struct ib_user_mad_reg_req2, flags);
	struct ib_user_mad_reg_req2 ureq;
	struct ib_mad_reg_req req = {};

	if (copy_from_user(&ureq, arg, sizeof(ureq)))
		return -EFAULT;
	if (ureq.flags & ~IB_USER_MAD_REG_FLAGS_CAP) {
		/* Tell the caller what it may ask for. */
		if (put_user((u32)IB_USER_MAD_REG_FLAGS_CAP, flags_out))
			return -EFAULT;
		return -EINVAL;
	}
	if (ureq.mgmt_class) {
		if (ureq.oui & 0xff000000)
			return -EINVAL;
		req.mgmt_class = ureq.mgmt_class;
		req.mgmt_class_version = ureq.mgmt_class_version;
		req.oui[0] = ureq.oui >> 16;
		req.oui[1] = ureq.oui >> 8;
		req.oui[2] = ureq.oui;
		bitmap_from_arr64(req.method_mask, ureq.method_mask,
				  IB_MGMT_MAX_METHODS);
	}
	return umad_register(file, ureq.qpn, ureq.mgmt_class ? &req : NULL,
			     ureq.rmpp_version,
			     ureq.flags & IB_USER_MAD_USER_RMPP, true,
			     arg + offsetof(struct ib_user_mad_reg_req2, id));
}

static int umad_ioctl_unregister(struct umad_file *file, u32 __user *arg)
{
	struct ib_mad_agent *agent;
	u32 id;

	if (get_user(id, arg))
		return -EFAULT;
	if (id >= UMAD_MAX_AGENTS)
		return -EINVAL;
	id = array_index_nospec(id, UMAD_MAX_AGENTS);

	mutex_lock(&file->port->lock);
	mutex_lock(&file->mutex);
	agent = file->agents[id];
	file->agents[id] = NULL;
	mutex_unlock(&file->mutex);
	if (agent)
		ib_unregister_mad_agent(agent);
	mutex_unlock(&file->port->lock);
	return agent ? 0 : -EINVAL;
}

static int umad_ioctl_enable_pkey(struct umad_file *file)
{
	bool late;

	/* Too late once an agent exists: its reader expects the old header. */
	mutex_lock(&file->mutex);
	late = file->used;
	file->pkey_hdr |= !late;
	mutex_unlock(&file->mutex);
	return late ? -EINVAL : 0;
}

static long umad_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct umad_file *file = filp->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case IB_USER_MAD_REGISTER_AGENT:
		return umad_ioctl_register(file, uarg);
	case IB_USER_MAD_UNREGISTER_AGENT:
		return umad_ioctl_unregister(file, uarg);
	case IB_USER_MAD_ENABLE_PKEY:
		return umad_ioctl_enable_pkey(file);
	case IB_USER_MAD_REGISTER_AGENT2:
		return umad_ioctl_register2(file, uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

static int umad_open(struct inode *inode, struct file *filp)
{
	struct umad_port *port = container_of(inode->i_cdev, struct umad_port,
					      cdev);
	struct umad_file *file = kzalloc(sizeof(*file), GFP_KERNEL);
	bool gone;

	if (!file)
		return -ENOMEM;
	file->port = port;
	mutex_init(&file->mutex);
	spin_lock_init(&file->send_lock);
	INIT_LIST_HEAD(&file->recv_list);
	INIT_LIST_HEAD(&file->send_list);
	init_waitqueue_head(&file->wait);

	mutex_lock(&port->lock);
	gone = !port->ib_dev;
	if (!gone)
		list_add_tail(&file->node, &port->files);
	mutex_unlock(&port->lock);
	if (gone) {
		mutex_destroy(&file->mutex);
		kfree(file);
		return -ENXIO;
	}
	filp->private_data = file;
	return stream_open(inode, filp);
}

/*
 * Stop all traffic of @file: mark it dead, wake its readers and unregister
 * its agents, which flushes their sends through umad_send_done (and frees
 * them, since a dead file queues nothing). Caller holds port->lock.
 */
static void umad_kill_file(struct umad_file *file)
{
	struct ib_mad_agent *agents[UMAD_MAX_AGENTS];
	int id;

	mutex_lock(&file->mutex);
	file->dead = true;
	memcpy(agents, file->agents, sizeof(agents));
	memset(file->agents, 0, sizeof(file->agents));
	wake_up_interruptible(&file->wait);
	mutex_unlock(&file->mutex);

	for (id = 0; id < UMAD_MAX_AGENTS; id++)
		if (agents[id])
			ib_unregister_mad_agent(agents[id]);
}

static int umad_release(struct inode *inode, struct file *filp)
{
	struct umad_file *file = filp->private_data;
	struct umad_packet *packet, *next;
	struct umad_port *port = file->port;

	mutex_lock(&port->lock);
	umad_kill_file(file);
	list_del(&file->node);
	mutex_unlock(&port->lock);

	/* Nothing can be queued any more: drop what nobody read. */
	list_for_each_entry_safe(packet, next, &file->recv_list, list)
		umad_free_packet(packet);
	WARN_ON_ONCE(!list_empty(&file->send_list));
	mutex_destroy(&file->mutex);
	kfree(file);
	return 0;
}

static const struct file_operations umad_fops = {
	.owner = THIS_MODULE, .llseek = no_llseek,
	.open = umad_open, .release = umad_release,
	.read = umad_read, .write = umad_write, .poll = umad_poll,
	.unlocked_ioctl = umad_ioctl, .compat_ioctl = compat_ptr_ioctl,
};

/* Set or clear IsSM on the port, unless the device is gone. */
static int umad_set_issm(struct umad_port *port, bool on)
{
	struct ib_port_modify change = {};
	int ret = -ENXIO;

	if (on)
		change.set_port_cap_mask = IB_PORT_SM;
	else
		change.clr_port_cap_mask = IB_PORT_SM;

	mutex_lock(&port->lock);
	if (port->ib_dev)
		ret = ib_modify_port(port->ib_dev, port->port_num, 0, &change);
	mutex_unlock(&port->lock);
	return ret;
}

static int issm_open(struct inode *inode, struct file *filp)
{
	struct umad_port *port = container_of(inode->i_cdev, struct umad_port,
					      sm_cdev);
	int ret;

	/* One SM per port: a second opener waits, or fails if it won't. */
	if (filp->f_flags & O_NONBLOCK) {
		if (down_trylock(&port->sm_sem))
			return -EAGAIN;
	} else if (down_interruptible(&port->sm_sem)) {
		return -ERESTARTSYS;
	}

	ret = umad_set_issm(port, true);
	if (ret) {
		up(&port->sm_sem);
		return ret;
	}
	filp->private_data = port;
	nonseekable_open(inode, filp);
	return 0;
}

static int issm_release(struct inode *inode, struct file *filp)
{
	struct umad_port *port = filp->private_data;

	/* After removal there is no port to clear the bit on. */
	umad_set_issm(port, false);
	up(&port->sm_sem);
	return 0;
}

/* issmN does nothing but exist while open. */
static const struct file_operations issm_fops = {
	.owner = THIS_MODULE, .llseek = no_llseek,
	.open = issm_open, .release = issm_release,
};

static ssize_t ibdev_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct umad_port *port = dev_get_drvdata(dev);
	struct ib_device *ib_dev = READ_ONCE(port->ib_dev);

	if (!ib_dev)
		return -ENODEV;
	return sysfs_emit(buf, "%s\n", ib_dev->name);
}
static DEVICE_ATTR_RO(ibdev);

static ssize_t port_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct umad_port *port = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", port->port_num);
}
static DEVICE_ATTR_RO(port);

static struct attribute *umad_port_attrs[] = {
	&dev_attr_ibdev.attr, &dev_attr_port.attr, NULL
};
ATTRIBUTE_GROUPS(umad_port);

static ssize_t abi_version_show(struct class *class, struct class_attribute *attr,
				char *buf)
{
	return sysfs_emit(buf, "%d\n", IB_USER_MAD_ABI_VERSION);
}
static CLASS_ATTR_RO(abi_version);

static struct attribute *umad_class_attrs[] = {
	&class_attr_abi_version.attr, NULL
};
ATTRIBUTE_GROUPS(umad_class);

/* /dev/infiniband/umadN and issmN, made by devtmpfs. */
static char *umad_devnode(struct device *dev, umode_t *mode)
{
	return kasprintf(GFP_KERNEL, "infiniband/%s", dev_name(dev));
}

static struct class umad_class = {
	.name = "infiniband_mad", .devnode = umad_devnode,
	.class_groups = umad_class_groups, .dev_groups = umad_port_groups,
};

static void umad_port_dev_release(struct device *dev)
{
	struct umad_port *port = dev_get_drvdata(dev);

	kref_put(&port->owner->ref, umad_device_free);
}

/* Set up one of the port's two devices; it holds a count on the owner. */
static void umad_init_dev(struct umad_port *port, struct device *dev,
			  struct ib_device *ib_dev, dev_t devt,
			  const char *kind)
{
	device_initialize(dev);
	kref_get(&port->owner->ref);
	dev->class = &umad_class;
	dev->parent = ib_dev->dma_device;
	dev->devt = devt;
	dev->release = umad_port_dev_release;
	dev_set_drvdata(dev, port);
	dev_set_name(dev, "%s%d", kind, port->devnum);
}

/* Make one of the port's (already initialized) devices visible. */
static int umad_publish(struct cdev *cdev, struct device *dev,
			const struct file_operations *fops)
{
	cdev_init(cdev, fops);
	cdev->owner = THIS_MODULE;
	return cdev_device_add(cdev, dev);
}

static int umad_add_port(struct ib_device *ib_dev, struct umad_port *port)
{
	int ret;

	ret = ida_alloc_max(&umad_numbers, UMAD_MAX_PORTS - 1, GFP_KERNEL);
	if (ret < 0)
		return ret;
	port->devnum = ret;
	port->ib_dev = ib_dev;
	sema_init(&port->sm_sem, 1);
	mutex_init(&port->lock);
	INIT_LIST_HEAD(&port->files);

	umad_init_dev(port, &port->dev, ib_dev, umad_base + port->devnum, "umad");
	umad_init_dev(port, &port->sm_dev, ib_dev,
		      umad_base + UMAD_ISSM_MINOR0 + port->devnum, "issm");
	ret = umad_publish(&port->cdev, &port->dev, &umad_fops);
	if (ret)
		goto err_devices;
	ret = umad_publish(&port->sm_cdev, &port->sm_dev, &issm_fops);
	if (ret)
		goto err_umad_visible;
	return 0;

err_umad_visible:
	cdev_device_del(&port->cdev, &port->dev);
err_devices:
	put_device(&port->sm_dev);
	put_device(&port->dev);
	ida_free(&umad_numbers, port->devnum);
	return ret;
}

/*
 * Take a port away from user space: its open files go dead (they stay
 * valid until closed), then its device nodes disappear.
 */
static void umad_remove_port(struct umad_port *port)
{
	struct umad_file *file;

	mutex_lock(&port->lock);
	WRITE_ONCE(port->ib_dev, NULL);
	list_for_each_entry(file, &port->files, node)
		umad_kill_file(file);
	mutex_unlock(&port->lock);

	cdev_device_del(&port->sm_cdev, &port->sm_dev);
	cdev_device_del(&port->cdev, &port->dev);
	ida_free(&umad_numbers, port->devnum);
	put_device(&port->sm_dev);
	put_device(&port->dev);
}

static void umad_add_device(struct ib_device *ib_dev)
{
	u8 first = rdma_start_port(ib_dev), last = rdma_end_port(ib_dev);
	struct umad_device *udev;
	int i;

	udev = kzalloc(struct_size(udev, ports, last - first + 1), GFP_KERNEL);
	if (!udev)
		return;
	kref_init(&udev->ref);
	udev->nports = last - first + 1;

	for (i = 0; i < udev->nports; i++) {
		udev->ports[i].owner = udev;
		udev->ports[i].port_num = first + i;
		if (umad_add_port(ib_dev, &udev->ports[i]))
			goto err_ports;
	}
	ib_set_client_data(ib_dev, &umad_client, udev);
	return;

err_ports:
	dev_warn(&ib_dev->dev, "umad: cannot create the device files of port %d\n",
		 first + i);
	while (--i >= 0)
		umad_remove_port(&udev->ports[i]);
	kref_put(&udev->ref, umad_device_free);
}

static void umad_remove_device(struct ib_device *ib_dev)
{
	struct umad_device *udev = ib_get_client_data(ib_dev, &umad_client);
	int i;

	if (!udev)
		return;
	for (i = 0; i < udev->nports; i++)
		umad_remove_port(&udev->ports[i]);
	kref_put(&udev->ref, umad_device_free);
}

static int __init ib_umad_init(void)
{
	int ret = class_register(&umad_class);

	if (ret)
		return ret;
	ret = register_chrdev_region(umad_base, UMAD_MINORS, "infiniband_mad");
	if (ret)
		goto drop_class;
	ret = ib_register_client(&umad_client);
	if (ret)
		goto drop_minors;
	return 0;

drop_minors:
	unregister_chrdev_region(umad_base, UMAD_MINORS);
drop_class:
	class_unregister(&umad_class);
	pr_err("ib_umad: not started (%d)\n", ret);
	return ret;
}

static void __exit ib_umad_exit(void)
{
	ib_unregister_client(&umad_client);
	unregister_chrdev_region(umad_base, UMAD_MINORS);
	class_unregister(&umad_class);
	ida_destroy(&umad_numbers);
}

module_init(ib_umad_init);
module_exit(ib_umad_exit);
