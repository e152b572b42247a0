// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_uverbs: the write() commands.  Each handler runs with the file's
 * mutex held (uverbs_write()), so the objects it looks up stay until it
 * returns.  Errnos follow what the 6.1 kernel returns for the same call:
 * a handle that names nothing is ENOENT, one that names an object of
 * another type EINVAL, a command before GET_CONTEXT EINVAL.
 */

#include <linux/file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <rdma/ib_user_ioctl_verbs.h>

#include "uverbs.h"

/* ibv_port_attr.link_layer of an InfiniBand port. */
#define UVERBS_LINK_LAYER_IB	1

/* Copies the core request in; bytes past what we know must be zero. */
static int uverbs_request(struct uverbs_cmd_args *args, void *req, size_t len)
{
	if (copy_from_user(req, args->in, min(args->inlen, len)))
		return -EFAULT;
	if (args->inlen < len) {
		memset(req + args->inlen, 0, len - args->inlen);
	} else if (args->inlen > len) {
		size_t i;
		u8 c;

		for (i = len; i < args->inlen; i++) {
			if (get_user(c, (const u8 __user *)args->in + i))
				return -EFAULT;
			if (c)
				return -EOPNOTSUPP;
		}
	}
	return 0;
}

/*
 * uverbs_request() for the commands that need the file's context: -EINVAL
 * before GET_CONTEXT.  Commands on an existing handle use uverbs_request():
 * before GET_CONTEXT there is no object, so their lookup says -ENOENT, as
 * 6.1 does.
 */
static int uverbs_request_ctx(struct uverbs_cmd_args *args, void *req,
			      size_t len)
{
	int ret = uverbs_request(args, req, len);

	if (ret)
		return ret;
	return args->file->ucontext ? 0 : -EINVAL;
}

/* Copies the core response out, zero-filling the rest of the room. */
static int uverbs_response(struct uverbs_cmd_args *args, const void *resp,
			   size_t len)
{
	if (copy_to_user(args->out, resp, min(args->outlen, len)))
		return -EFAULT;
	if (args->outlen > len &&
	    clear_user(args->out + len, args->outlen - len))
		return -EFAULT;
	return 0;
}

static struct ib_device *uverbs_ibdev(struct uverbs_cmd_args *args)
{
	return args->file->udev->ib_dev;
}

/* The object behind @handle if it is of @type; file->mutex held. */
static struct uverbs_uobj *uobj_get(struct uverbs_file *file, u32 handle,
				    enum uverbs_obj_type type)
{
	struct uverbs_uobj *u = xa_load(&file->objs, handle);

	if (!u)
		return ERR_PTR(-ENOENT);
	if (u->type != type)
		return ERR_PTR(-EINVAL);
	return u;
}

/* A new user object in the table; its handle is u->uobject.id. */
static struct uverbs_uobj *uobj_new(struct uverbs_file *file,
				    enum uverbs_obj_type type, u64 user_handle)
{
	struct uverbs_uobj *u;
	int ret;

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return ERR_PTR(-ENOMEM);
	u->type = type;
	u->file = file;
	u->uobject.user_handle = user_handle;
	u->uobject.context = file->ucontext;
	INIT_LIST_HEAD(&u->uobject.list);
	INIT_LIST_HEAD(&u->comp_list);
	INIT_LIST_HEAD(&u->async_list);
	/* Reserve the handle now; the object is stored once it exists. */
	ret = xa_alloc(&file->objs, &u->uobject.id, NULL,
		       xa_limit_31b, GFP_KERNEL);
	if (ret) {
		kfree(u);
		return ERR_PTR(ret);
	}
	return u;
}

static void uobj_commit(struct uverbs_file *file, struct uverbs_uobj *u)
{
	xa_store(&file->objs, u->uobject.id, u, GFP_KERNEL);
}

/*
 * Forgets a new object whose creation failed, after the driver's object is
 * gone (or was never made): an event it raised meanwhile is dropped, and
 * the reference to its completion channel.
 */
static void uobj_abort(struct uverbs_file *file, struct uverbs_uobj *u)
{
	if (file->async)
		uverbs_event_purge(file->async, &u->async_list);
	if (u->comp) {
		uverbs_event_purge(u->comp, &u->comp_list);
		uverbs_event_file_put(u->comp);
	}
	xa_erase(&file->objs, u->uobject.id);
	kfree(u);
}

static int uobj_publish(struct uverbs_cmd_args *args, struct uverbs_uobj *u,
			const void *resp, size_t len);

/* ------------------------------------------------------------------ */
/* device and context                                                  */
/* ------------------------------------------------------------------ */

static int uverbs_get_context(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_get_context cmd;
	struct ib_uverbs_get_context_resp resp = {};
	struct uverbs_event_file *async;
	struct ib_ucontext *uctx;
	struct file *filp;
	int ret, fd;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (file->ucontext)
		return -EINVAL;

	uctx = ib_dev->alloc_ucontext(ib_dev, &args->udata);
	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	uctx->device = ib_dev;
	INIT_LIST_HEAD(&uctx->pd_list);
	INIT_LIST_HEAD(&uctx->mr_list);
	INIT_LIST_HEAD(&uctx->cq_list);
	INIT_LIST_HEAD(&uctx->qp_list);
	INIT_LIST_HEAD(&uctx->srq_list);
	INIT_LIST_HEAD(&uctx->ah_list);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_ctx;
	}
	async = uverbs_event_file_create(&filp, NULL);
	if (IS_ERR(async)) {
		ret = PTR_ERR(async);
		goto err_fd;
	}

	resp.async_fd = fd;
	resp.num_comp_vectors = 1;
	ret = uverbs_response(args, &resp, sizeof(resp));
	if (ret)
		goto err_file;

	file->async = async;
	/* Pairs with the acquire in uverbs_mmap(), which has no mutex. */
	smp_store_release(&file->ucontext, uctx);
	ib_init_event_handler(&file->event_handler, ib_dev,
			      uverbs_event_handler);
	ib_register_event_handler(&file->event_handler);
	file->handler_registered = true;
	/* Nothing can fail past this point: the fd goes live. */
	fd_install(fd, filp);
	return 0;

err_file:
	/* The struct file's release drops its reference. */
	fput(filp);
	uverbs_event_file_put(async);
err_fd:
	put_unused_fd(fd);
err_ctx:
	ib_dev->dealloc_ucontext(uctx);
	return ret;
}

static void copy_device_attr(struct ib_device *ib_dev,
			     struct ib_uverbs_query_device_resp *r,
			     const struct ib_device_attr *a)
{
	r->fw_ver = a->fw_ver;
	r->node_guid = ib_dev->node_guid;
	r->sys_image_guid = a->sys_image_guid;
	r->max_mr_size = a->max_mr_size;
	r->page_size_cap = a->page_size_cap;
	r->vendor_id = a->vendor_id;
	r->vendor_part_id = a->vendor_part_id;
	r->hw_ver = a->hw_ver;
	r->max_qp = a->max_qp;
	r->max_qp_wr = a->max_qp_wr;
	r->device_cap_flags = a->device_cap_flags;
	r->max_sge = a->max_sge;
	r->max_sge_rd = a->max_sge_rd;
	r->max_cq = a->max_cq;
	r->max_cqe = a->max_cqe;
	r->max_mr = a->max_mr;
	r->max_pd = a->max_pd;
	r->max_qp_rd_atom = a->max_qp_rd_atom;
	r->max_ee_rd_atom = a->max_ee_rd_atom;
	r->max_res_rd_atom = a->max_res_rd_atom;
	r->max_qp_init_rd_atom = a->max_qp_init_rd_atom;
	r->max_ee_init_rd_atom = a->max_ee_init_rd_atom;
	r->atomic_cap = a->atomic_cap;
	r->max_ee = a->max_ee;
	r->max_rdd = a->max_rdd;
	r->max_mw = a->max_mw;
	r->max_raw_ipv6_qp = a->max_raw_ipv6_qp;
	r->max_raw_ethy_qp = a->max_raw_ethy_qp;
	r->max_mcast_grp = a->max_mcast_grp;
	r->max_mcast_qp_attach = a->max_mcast_qp_attach;
	r->max_total_mcast_qp_attach = a->max_total_mcast_qp_attach;
	r->max_ah = a->max_ah;
	r->max_srq = a->max_srq;
	r->max_srq_wr = a->max_srq_wr;
	r->max_srq_sge = a->max_srq_sge;
	r->max_pkeys = a->max_pkeys;
	r->local_ca_ack_delay = a->local_ca_ack_delay;
	r->phys_port_cnt = ib_dev->phys_port_cnt;
}

static int uverbs_query_device(struct uverbs_cmd_args *args)
{
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_query_device cmd;
	struct ib_uverbs_query_device_resp resp = {};
	struct ib_device_attr attr;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	ret = ib_query_device(ib_dev, &attr);
	if (ret)
		return ret;
	copy_device_attr(ib_dev, &resp, &attr);
	return uverbs_response(args, &resp, sizeof(resp));
}

/**
 * uverbs_ex_query_device() - EX_QUERY_DEVICE
 * @args: the command; file->mutex held
 *
 * The legacy attributes, then the extended ones (all zero on this
 * hardware but device_cap_flags_ex), and response_length: the bytes
 * written, which libibverbs trusts.
 *
 * Return: 0 or a negative errno.
 */
int uverbs_ex_query_device(struct uverbs_cmd_args *args)
{
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_ex_query_device cmd;
	struct ib_uverbs_ex_query_device_resp resp = {};
	struct ib_device_attr attr;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	ret = ib_query_device(ib_dev, &attr);
	if (ret)
		return ret;
	copy_device_attr(ib_dev, &resp.base, &attr);
	resp.device_cap_flags_ex = attr.device_cap_flags;
	resp.response_length = min_t(size_t, args->outlen, sizeof(resp));
	return uverbs_response(args, &resp, sizeof(resp));
}

static int uverbs_query_port(struct uverbs_cmd_args *args)
{
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_query_port cmd;
	struct ib_uverbs_query_port_resp resp = {};
	struct ib_port_attr attr;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.port_num < rdma_start_port(ib_dev) ||
	    cmd.port_num > rdma_end_port(ib_dev))
		return -EINVAL;
	ret = ib_query_port(ib_dev, cmd.port_num, &attr);
	if (ret)
		return ret;

	resp.state = attr.state;
	resp.max_mtu = attr.max_mtu;
	resp.active_mtu = attr.active_mtu;
	resp.gid_tbl_len = attr.gid_tbl_len;
	resp.port_cap_flags = attr.port_cap_flags;
	resp.max_msg_sz = attr.max_msg_sz;
	resp.bad_pkey_cntr = attr.bad_pkey_cntr;
	resp.qkey_viol_cntr = attr.qkey_viol_cntr;
	resp.pkey_tbl_len = attr.pkey_tbl_len;
	resp.lid = attr.lid;
	resp.sm_lid = attr.sm_lid;
	resp.lmc = attr.lmc;
	resp.max_vl_num = attr.max_vl_num;
	resp.sm_sl = attr.sm_sl;
	resp.subnet_timeout = attr.subnet_timeout;
	resp.init_type_reply = attr.init_type_reply;
	resp.active_width = attr.active_width;
	resp.active_speed = attr.active_speed;
	resp.phys_state = attr.phys_state;
	resp.link_layer = UVERBS_LINK_LAYER_IB;
	return uverbs_response(args, &resp, sizeof(resp));
}

/* ------------------------------------------------------------------ */
/* protection domains                                                  */
/* ------------------------------------------------------------------ */

static int uverbs_alloc_pd(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_alloc_pd cmd;
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct uverbs_uobj *u;
	struct ib_pd *pd;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (!file->ucontext)
		return -EINVAL;

	u = uobj_new(file, UVERBS_OBJ_PD, 0);
	if (IS_ERR(u))
		return PTR_ERR(u);
	pd = ib_dev->alloc_pd(ib_dev, file->ucontext, &args->udata);
	if (IS_ERR(pd)) {
		ret = PTR_ERR(pd);
		goto err_uobj;
	}
	pd->device = ib_dev;
	pd->uobject = &u->uobject;
	atomic_set(&pd->usecnt, 0);
	u->object = pd;

	resp.pd_handle = u->uobject.id;
	return uobj_publish(args, u, &resp, sizeof(resp));

err_uobj:
	uobj_abort(file, u);
	return ret;
}

/*
 * Destroys @u's object and forgets @u; file->mutex held.  The driver's
 * object goes first: after it, no handler can queue an event for @u, and
 * the events not read yet are dropped (the counts then say what user
 * space has read, which is what libibverbs waits to have acknowledged).
 */
static int uobj_destroy(struct uverbs_file *file, struct uverbs_uobj *u,
			u32 *comp, u32 *async)
{
	int ret;

	switch (u->type) {
	case UVERBS_OBJ_QP:
		ret = ib_destroy_qp(u->object);
		break;
	case UVERBS_OBJ_SRQ:
		ret = ib_destroy_srq(u->object);
		break;
	case UVERBS_OBJ_CQ:
		ret = ib_destroy_cq(u->object);
		break;
	case UVERBS_OBJ_MR:
		ret = ib_dereg_mr(u->object);
		break;
	case UVERBS_OBJ_PD:
		ret = ib_dealloc_pd(u->object);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret)
		return ret;
	if (file->async)
		uverbs_event_purge(file->async, &u->async_list);
	if (u->comp) {
		uverbs_event_purge(u->comp, &u->comp_list);
		uverbs_event_file_put(u->comp);
	}
	/* Final now: no event of @u is left to be read. */
	if (comp)
		*comp = READ_ONCE(u->comp_events_reported);
	if (async)
		*async = READ_ONCE(u->async_events_reported);
	xa_erase(&file->objs, u->uobject.id);
	kfree(u);
	return 0;
}

/*
 * The last step of a create, file->mutex held: the response goes out, and
 * then the object is the user's.  When the response cannot be written the
 * object is destroyed again and forgotten (and forgotten even if its
 * driver refuses to destroy it: nothing could reach it any more).
 */
static int uobj_publish(struct uverbs_cmd_args *args, struct uverbs_uobj *u,
			const void *resp, size_t len)
{
	struct uverbs_file *file = args->file;
	int ret = uverbs_response(args, resp, len);

	if (!ret) {
		uobj_commit(file, u);
		return 0;
	}
	if (uobj_destroy(file, u, NULL, NULL))
		uobj_abort(file, u);
	return ret;
}

/*
 * Looks up @handle as @type and destroys it; the counts of events read
 * are left in @comp and @async (either may be NULL).
 */
static int uobj_destroy_handle(struct uverbs_file *file, u32 handle,
			       enum uverbs_obj_type type, u32 *comp,
			       u32 *async)
{
	struct uverbs_uobj *u = uobj_get(file, handle, type);

	if (IS_ERR(u))
		return PTR_ERR(u);
	return uobj_destroy(file, u, comp, async);
}

static int uverbs_dealloc_pd(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_dealloc_pd cmd;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	return uobj_destroy_handle(args->file, cmd.pd_handle, UVERBS_OBJ_PD,
				   NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* memory regions                                                      */
/* ------------------------------------------------------------------ */

/* The access bits of ABI 6: the defined ones and the optional range. */
#define UVERBS_ACCESS_DEFINED	(IB_UVERBS_ACCESS_HUGETLB * 2 - 1)
#define UVERBS_ACCESS_OPTIONAL	GENMASK(29, 20)

/* The 6.1 checks of REG_MR's access flags; the optional bits are dropped. */
static int uverbs_mr_access(u32 flags, int *access)
{
	if (flags & ~(UVERBS_ACCESS_DEFINED | UVERBS_ACCESS_OPTIONAL))
		return -EINVAL;
	if ((flags & (IB_UVERBS_ACCESS_REMOTE_WRITE |
		      IB_UVERBS_ACCESS_REMOTE_ATOMIC)) &&
	    !(flags & IB_UVERBS_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (flags & IB_UVERBS_ACCESS_ON_DEMAND)
		return -EOPNOTSUPP;
	*access = flags & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |
			   IB_ACCESS_MW_BIND);
	return 0;
}

static int uverbs_reg_mr(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp = {};
	struct uverbs_uobj *u, *upd;
	struct ib_pd *pd;
	struct ib_mr *mr;
	int access, ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if ((cmd.start & ~PAGE_MASK) != (cmd.hca_va & ~PAGE_MASK))
		return -EINVAL;
	ret = uverbs_mr_access(cmd.access_flags, &access);
	if (ret)
		return ret;
	upd = uobj_get(file, cmd.pd_handle, UVERBS_OBJ_PD);
	if (IS_ERR(upd))
		return PTR_ERR(upd);
	pd = upd->object;

	u = uobj_new(file, UVERBS_OBJ_MR, 0);
	if (IS_ERR(u))
		return PTR_ERR(u);
	mr = ib_dev->reg_user_mr(pd, cmd.start, cmd.length, cmd.hca_va,
				 access, &args->udata);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto err_uobj;
	}
	mr->device = ib_dev;
	mr->pd = pd;
	mr->uobject = &u->uobject;
	atomic_set(&mr->usecnt, 0);
	atomic_inc(&pd->usecnt);
	u->object = mr;

	resp.mr_handle = u->uobject.id;
	resp.lkey = mr->lkey;
	resp.rkey = mr->rkey;
	return uobj_publish(args, u, &resp, sizeof(resp));

err_uobj:
	uobj_abort(file, u);
	return ret;
}

static int uverbs_dereg_mr(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_dereg_mr cmd;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	return uobj_destroy_handle(args->file, cmd.mr_handle, UVERBS_OBJ_MR,
				   NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* completion channels and CQs                                         */
/* ------------------------------------------------------------------ */

static int uverbs_create_comp_channel(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_uverbs_create_comp_channel cmd;
	struct ib_uverbs_create_comp_channel_resp resp = {};
	struct uverbs_event_file *ev;
	struct file *filp;
	int ret, fd;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	ev = uverbs_event_file_create(&filp, file);
	if (IS_ERR(ev)) {
		put_unused_fd(fd);
		return PTR_ERR(ev);
	}
	/* Only the struct file holds the channel; CQs take their own. */
	uverbs_event_file_put(ev);
	resp.fd = fd;
	ret = uverbs_response(args, &resp, sizeof(resp));
	if (ret) {
		fput(filp);
		put_unused_fd(fd);
		return ret;
	}
	fd_install(fd, filp);
	return 0;
}

static int uverbs_create_cq(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_create_cq cmd;
	struct ib_uverbs_create_cq_resp resp = {};
	struct uverbs_uobj *u;
	struct ib_cq *cq;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	/* One completion vector (GET_CONTEXT's num_comp_vectors). */
	if (cmd.comp_vector >= 1)
		return -EINVAL;

	u = uobj_new(file, UVERBS_OBJ_CQ, cmd.user_handle);
	if (IS_ERR(u))
		return PTR_ERR(u);
	if (cmd.comp_channel >= 0) {
		u->comp = uverbs_comp_file_get(file, cmd.comp_channel);
		if (IS_ERR(u->comp)) {
			ret = PTR_ERR(u->comp);
			u->comp = NULL;
			goto err_uobj;
		}
	}

	cq = ib_dev->create_cq(ib_dev, cmd.cqe, file->ucontext, &args->udata);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto err_uobj;
	}
	cq->device = ib_dev;
	cq->uobject = &u->uobject;
	cq->comp_handler = uverbs_comp_handler;
	cq->event_handler = uverbs_obj_event_handler;
	cq->cq_context = u;
	atomic_set(&cq->usecnt, 0);
	u->object = cq;

	resp.cq_handle = u->uobject.id;
	resp.cqe = cq->cqe;
	return uobj_publish(args, u, &resp, sizeof(resp));

err_uobj:
	uobj_abort(file, u);
	return ret;
}

static int uverbs_destroy_cq(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_destroy_cq cmd;
	struct ib_uverbs_destroy_cq_resp resp = {};
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	ret = uobj_destroy_handle(args->file, cmd.cq_handle, UVERBS_OBJ_CQ,
				  &resp.comp_events_reported,
				  &resp.async_events_reported);
	if (ret)
		return ret;
	return uverbs_response(args, &resp, sizeof(resp));
}

/*
 * RESIZE_CQ: the driver moves the CQ (for mthca, to the ring named in its
 * udata) and the reply carries the number of entries it now has.
 */
static int uverbs_resize_cq(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_resize_cq cmd;
	struct ib_uverbs_resize_cq_resp resp = {};
	struct uverbs_uobj *u;
	struct ib_cq *cq;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	u = uobj_get(args->file, cmd.cq_handle, UVERBS_OBJ_CQ);
	if (IS_ERR(u))
		return PTR_ERR(u);
	cq = u->object;
	if (!cq->device->resize_cq)
		return -EOPNOTSUPP;
	/* u32 in the ABI; past INT_MAX it is negative, which drivers refuse */
	ret = cq->device->resize_cq(cq, (int)cmd.cqe, &args->udata);
	if (ret)
		return ret;
	resp.cqe = cq->cqe;
	return uverbs_response(args, &resp, sizeof(resp));
}

/* ------------------------------------------------------------------ */
/* queue pairs                                                         */
/* ------------------------------------------------------------------ */

/* The CQ behind @handle, or an ERR_PTR. */
static struct ib_cq *uverbs_cq_get(struct uverbs_file *file, u32 handle)
{
	struct uverbs_uobj *u = uobj_get(file, handle, UVERBS_OBJ_CQ);

	return IS_ERR(u) ? ERR_CAST(u) : u->object;
}

static int uverbs_create_qp(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_create_qp cmd;
	struct ib_uverbs_create_qp_resp resp = {};
	struct ib_qp_init_attr init = {};
	struct uverbs_uobj *u, *upd, *usrq;
	struct ib_qp *qp;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.qp_type != IB_QPT_RC && cmd.qp_type != IB_QPT_UC &&
	    cmd.qp_type != IB_QPT_UD)
		return -EINVAL;

	upd = uobj_get(file, cmd.pd_handle, UVERBS_OBJ_PD);
	if (IS_ERR(upd))
		return PTR_ERR(upd);
	init.send_cq = uverbs_cq_get(file, cmd.send_cq_handle);
	if (IS_ERR(init.send_cq))
		return PTR_ERR(init.send_cq);
	init.recv_cq = uverbs_cq_get(file, cmd.recv_cq_handle);
	if (IS_ERR(init.recv_cq))
		return PTR_ERR(init.recv_cq);
	if (cmd.is_srq) {
		usrq = uobj_get(file, cmd.srq_handle, UVERBS_OBJ_SRQ);
		if (IS_ERR(usrq))
			return PTR_ERR(usrq);
		init.srq = usrq->object;
	}

	u = uobj_new(file, UVERBS_OBJ_QP, cmd.user_handle);
	if (IS_ERR(u))
		return PTR_ERR(u);
	init.event_handler = uverbs_obj_event_handler;
	init.qp_context = u;
	init.sq_sig_type = cmd.sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init.qp_type = cmd.qp_type;
	init.cap.max_send_wr = cmd.max_send_wr;
	init.cap.max_recv_wr = cmd.max_recv_wr;
	init.cap.max_send_sge = cmd.max_send_sge;
	init.cap.max_recv_sge = cmd.max_recv_sge;
	init.cap.max_inline_data = cmd.max_inline_data;

	qp = ib_dev->create_qp(upd->object, &init, &args->udata);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err_uobj;
	}
	qp->device = ib_dev;
	qp->pd = upd->object;
	qp->send_cq = init.send_cq;
	qp->recv_cq = init.recv_cq;
	qp->srq = init.srq;
	qp->uobject = &u->uobject;
	qp->event_handler = init.event_handler;
	qp->qp_context = u;
	qp->qp_type = init.qp_type;
	atomic_inc(&qp->pd->usecnt);
	atomic_inc(&qp->send_cq->usecnt);
	atomic_inc(&qp->recv_cq->usecnt);
	if (qp->srq)
		atomic_inc(&qp->srq->usecnt);
	u->object = qp;

	resp.qp_handle = u->uobject.id;
	resp.qpn = qp->qp_num;
	resp.max_send_wr = init.cap.max_send_wr;
	resp.max_recv_wr = init.cap.max_recv_wr;
	resp.max_send_sge = init.cap.max_send_sge;
	resp.max_recv_sge = init.cap.max_recv_sge;
	resp.max_inline_data = init.cap.max_inline_data;
	return uobj_publish(args, u, &resp, sizeof(resp));

err_uobj:
	uobj_abort(file, u);
	return ret;
}

static void uverbs_dest_to_ah(const struct ib_uverbs_qp_dest *d,
			      struct ib_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = d->dlid;
	ah->sl = d->sl;
	ah->src_path_bits = d->src_path_bits;
	ah->static_rate = d->static_rate;
	ah->port_num = d->port_num;
	if (d->is_global) {
		ah->ah_flags = IB_AH_GRH;
		memcpy(ah->grh.dgid.raw, d->dgid, sizeof(d->dgid));
		ah->grh.flow_label = d->flow_label;
		ah->grh.sgid_index = d->sgid_index;
		ah->grh.hop_limit = d->hop_limit;
		ah->grh.traffic_class = d->traffic_class;
	}
}

static void uverbs_ah_to_dest(const struct ib_ah_attr *ah,
			      struct ib_uverbs_qp_dest *d)
{
	const struct ib_global_route *g = &ah->grh;
	bool grh = ah->ah_flags & IB_AH_GRH;

	/* the GRH fields only with a GRH, zero otherwise */
	*d = (struct ib_uverbs_qp_dest) {
		.is_global	= grh,
		.port_num	= ah->port_num,
		.static_rate	= ah->static_rate,
		.src_path_bits	= ah->src_path_bits,
		.sl		= ah->sl,
		.dlid		= ah->dlid,
		.traffic_class	= grh ? g->traffic_class : 0,
		.hop_limit	= grh ? g->hop_limit : 0,
		.sgid_index	= grh ? g->sgid_index : 0,
		.flow_label	= grh ? g->flow_label : 0,
	};
	if (grh)
		memcpy(d->dgid, g->dgid.raw, sizeof(d->dgid));
}

static int uverbs_query_qp(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_query_qp cmd;
	struct ib_uverbs_query_qp_resp resp = {};
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	struct uverbs_uobj *u;
	struct ib_qp *qp;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	u = uobj_get(args->file, cmd.qp_handle, UVERBS_OBJ_QP);
	if (IS_ERR(u))
		return PTR_ERR(u);
	qp = u->object;
	ret = qp->device->query_qp(qp, &attr, cmd.attr_mask, &init);
	if (ret)
		return ret;

	uverbs_ah_to_dest(&attr.ah_attr, &resp.dest);
	uverbs_ah_to_dest(&attr.alt_ah_attr, &resp.alt_dest);
	resp.max_send_wr = init.cap.max_send_wr;
	resp.max_recv_wr = init.cap.max_recv_wr;
	resp.max_send_sge = init.cap.max_send_sge;
	resp.max_recv_sge = init.cap.max_recv_sge;
	resp.max_inline_data = init.cap.max_inline_data;
	resp.qkey = attr.qkey;
	resp.rq_psn = attr.rq_psn;
	resp.sq_psn = attr.sq_psn;
	resp.dest_qp_num = attr.dest_qp_num;
	resp.qp_access_flags = attr.qp_access_flags;
	resp.pkey_index = attr.pkey_index;
	resp.alt_pkey_index = attr.alt_pkey_index;
	resp.qp_state = attr.qp_state;
	resp.cur_qp_state = attr.cur_qp_state;
	resp.path_mtu = attr.path_mtu;
	resp.path_mig_state = attr.path_mig_state;
	resp.sq_draining = attr.sq_draining;
	resp.max_rd_atomic = attr.max_rd_atomic;
	resp.max_dest_rd_atomic = attr.max_dest_rd_atomic;
	resp.min_rnr_timer = attr.min_rnr_timer;
	resp.port_num = attr.port_num;
	resp.timeout = attr.timeout;
	resp.retry_cnt = attr.retry_cnt;
	resp.rnr_retry = attr.rnr_retry;
	resp.alt_port_num = attr.alt_port_num;
	resp.alt_timeout = attr.alt_timeout;
	resp.sq_sig_all = init.sq_sig_type == IB_SIGNAL_ALL_WR;
	return uverbs_response(args, &resp, sizeof(resp));
}

static int uverbs_modify_qp(struct uverbs_cmd_args *args)
{
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_modify_qp cmd;
	struct ib_qp_attr attr = {};
	struct uverbs_uobj *u;
	struct ib_qp *qp;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	/* ABI 6 knows the attributes up to the destination QPN. */
	if (cmd.attr_mask & ~(IB_QP_DEST_QPN * 2 - 1))
		return -EOPNOTSUPP;
	u = uobj_get(args->file, cmd.qp_handle, UVERBS_OBJ_QP);
	if (IS_ERR(u))
		return PTR_ERR(u);
	qp = u->object;
	if ((cmd.attr_mask & IB_QP_PORT) &&
	    (cmd.port_num < rdma_start_port(ib_dev) ||
	     cmd.port_num > rdma_end_port(ib_dev)))
		return -EINVAL;
	if ((cmd.attr_mask & IB_QP_ALT_PATH) &&
	    (cmd.alt_port_num < rdma_start_port(ib_dev) ||
	     cmd.alt_port_num > rdma_end_port(ib_dev)))
		return -EINVAL;

	attr.qp_state = cmd.qp_state;
	attr.cur_qp_state = cmd.cur_qp_state;
	attr.path_mtu = cmd.path_mtu;
	attr.path_mig_state = cmd.path_mig_state;
	attr.qkey = cmd.qkey;
	attr.rq_psn = cmd.rq_psn;
	attr.sq_psn = cmd.sq_psn;
	attr.dest_qp_num = cmd.dest_qp_num;
	attr.qp_access_flags = cmd.qp_access_flags;
	attr.pkey_index = cmd.pkey_index;
	attr.alt_pkey_index = cmd.alt_pkey_index;
	attr.en_sqd_async_notify = cmd.en_sqd_async_notify;
	attr.max_rd_atomic = cmd.max_rd_atomic;
	attr.max_dest_rd_atomic = cmd.max_dest_rd_atomic;
	attr.min_rnr_timer = cmd.min_rnr_timer;
	attr.port_num = cmd.port_num;
	attr.timeout = cmd.timeout;
	attr.retry_cnt = cmd.retry_cnt;
	attr.rnr_retry = cmd.rnr_retry;
	attr.alt_port_num = cmd.alt_port_num;
	attr.alt_timeout = cmd.alt_timeout;
	uverbs_dest_to_ah(&cmd.dest, &attr.ah_attr);
	uverbs_dest_to_ah(&cmd.alt_dest, &attr.alt_ah_attr);
	return qp->device->modify_qp(qp, &attr, cmd.attr_mask);
}

static int uverbs_destroy_qp(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_destroy_qp cmd;
	struct ib_uverbs_destroy_qp_resp resp = {};
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	ret = uobj_destroy_handle(args->file, cmd.qp_handle, UVERBS_OBJ_QP,
				  NULL, &resp.events_reported);
	if (ret)
		return ret;
	return uverbs_response(args, &resp, sizeof(resp));
}

static int uverbs_mcast(struct uverbs_cmd_args *args, bool attach)
{
	struct ib_uverbs_attach_mcast cmd;
	struct uverbs_uobj *u;
	union ib_gid gid;
	struct ib_qp *qp;
	int ret;

	/* DETACH_MCAST has the same layout. */
	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	u = uobj_get(args->file, cmd.qp_handle, UVERBS_OBJ_QP);
	if (IS_ERR(u))
		return PTR_ERR(u);
	qp = u->object;
	/* Only UD QPs join, and only multicast GIDs (ff00::/8). */
	if (qp->qp_type != IB_QPT_UD || cmd.gid[0] != 0xff)
		return -EINVAL;
	memcpy(gid.raw, cmd.gid, sizeof(gid.raw));
	if (attach)
		return qp->device->attach_mcast(qp, &gid, cmd.mlid);
	return qp->device->detach_mcast(qp, &gid, cmd.mlid);
}

static int uverbs_attach_mcast(struct uverbs_cmd_args *args)
{
	return uverbs_mcast(args, true);
}

static int uverbs_detach_mcast(struct uverbs_cmd_args *args)
{
	return uverbs_mcast(args, false);
}

/* ------------------------------------------------------------------ */
/* shared receive queues                                               */
/* ------------------------------------------------------------------ */

static int uverbs_create_srq(struct uverbs_cmd_args *args)
{
	struct uverbs_file *file = args->file;
	struct ib_device *ib_dev = uverbs_ibdev(args);
	struct ib_uverbs_create_srq cmd;
	struct ib_uverbs_create_srq_resp resp = {};
	struct ib_srq_init_attr init = {};
	struct uverbs_uobj *u, *upd;
	struct ib_srq *srq;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	upd = uobj_get(file, cmd.pd_handle, UVERBS_OBJ_PD);
	if (IS_ERR(upd))
		return PTR_ERR(upd);
	u = uobj_new(file, UVERBS_OBJ_SRQ, cmd.user_handle);
	if (IS_ERR(u))
		return PTR_ERR(u);
	init.event_handler = uverbs_obj_event_handler;
	init.srq_context = u;
	init.attr.max_wr = cmd.max_wr;
	init.attr.max_sge = cmd.max_sge;
	init.attr.srq_limit = cmd.srq_limit;

	srq = ib_dev->create_srq(upd->object, &init, &args->udata);
	if (IS_ERR(srq)) {
		ret = PTR_ERR(srq);
		goto err_uobj;
	}
	srq->device = ib_dev;
	srq->pd = upd->object;
	srq->uobject = &u->uobject;
	srq->event_handler = init.event_handler;
	srq->srq_context = u;
	atomic_set(&srq->usecnt, 0);
	atomic_inc(&srq->pd->usecnt);
	u->object = srq;

	resp.srq_handle = u->uobject.id;
	resp.max_wr = init.attr.max_wr;
	resp.max_sge = init.attr.max_sge;
	return uobj_publish(args, u, &resp, sizeof(resp));

err_uobj:
	uobj_abort(file, u);
	return ret;
}

static int uverbs_modify_srq(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_modify_srq cmd;
	struct ib_srq_attr attr = {};
	struct uverbs_uobj *u;
	struct ib_srq *srq;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	u = uobj_get(args->file, cmd.srq_handle, UVERBS_OBJ_SRQ);
	if (IS_ERR(u))
		return PTR_ERR(u);
	srq = u->object;
	attr.max_wr = cmd.max_wr;
	attr.srq_limit = cmd.srq_limit;
	return srq->device->modify_srq(srq, &attr, cmd.attr_mask);
}

static int uverbs_query_srq(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_query_srq cmd;
	struct ib_uverbs_query_srq_resp resp = {};
	struct ib_srq_attr attr = {};
	struct uverbs_uobj *u;
	struct ib_srq *srq;
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	u = uobj_get(args->file, cmd.srq_handle, UVERBS_OBJ_SRQ);
	if (IS_ERR(u))
		return PTR_ERR(u);
	srq = u->object;
	ret = srq->device->query_srq(srq, &attr);
	if (ret)
		return ret;
	resp.max_wr = attr.max_wr;
	resp.max_sge = attr.max_sge;
	resp.srq_limit = attr.srq_limit;
	return uverbs_response(args, &resp, sizeof(resp));
}

static int uverbs_destroy_srq(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_destroy_srq cmd;
	struct ib_uverbs_destroy_srq_resp resp = {};
	int ret;

	ret = uverbs_request(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	ret = uobj_destroy_handle(args->file, cmd.srq_handle, UVERBS_OBJ_SRQ,
				  NULL, &resp.events_reported);
	if (ret)
		return ret;
	return uverbs_response(args, &resp, sizeof(resp));
}

/**
 * uverbs_file_teardown() - destroy everything a file created
 * @file: the file, its @mutex held: at its release, or when the device
 *	goes away under it (disassociation)
 *
 * Objects go in type order (users before what they use), then the
 * context; the async event file stays with @file (uverbs_main.c).
 */
void uverbs_file_teardown(struct uverbs_file *file)
{
	struct ib_device *ib_dev = file->udev->ib_dev;
	struct uverbs_uobj *u;
	unsigned long id;
	int type;

	lockdep_assert_held(&file->mutex);
	if (file->handler_registered) {
		ib_unregister_event_handler(&file->event_handler);
		file->handler_registered = false;
	}
	for (type = 0; type < UVERBS_OBJ_TYPES; type++) {
		xa_for_each(&file->objs, id, u) {
			if (u->type != type)
				continue;
			if (uobj_destroy(file, u, NULL, NULL))
				pr_warn("ib_uverbs: %s: object %lu of type %d not destroyed at close\n",
					ib_dev->name, id, type);
		}
	}
	if (file->ucontext) {
		ib_dev->dealloc_ucontext(file->ucontext);
		file->ucontext = NULL;
	}
}

#define UVERBS_CMD(_cmd, _fn, _req, _resp, _udata)			\
	[IB_USER_VERBS_CMD_##_cmd] = {					\
		.handler = _fn, .req_size = _req, .resp_size = _resp,	\
		.has_udata = _udata,					\
	}

const struct uverbs_cmd_desc uverbs_cmds[IB_USER_VERBS_CMD_OPEN_QP + 1] = {
	UVERBS_CMD(GET_CONTEXT, uverbs_get_context,
		   sizeof(struct ib_uverbs_get_context),
		   sizeof(struct ib_uverbs_get_context_resp), true),
	UVERBS_CMD(QUERY_DEVICE, uverbs_query_device,
		   sizeof(struct ib_uverbs_query_device),
		   sizeof(struct ib_uverbs_query_device_resp), false),
	UVERBS_CMD(QUERY_PORT, uverbs_query_port,
		   sizeof(struct ib_uverbs_query_port),
		   sizeof(struct ib_uverbs_query_port_resp), false),
	UVERBS_CMD(ALLOC_PD, uverbs_alloc_pd,
		   sizeof(struct ib_uverbs_alloc_pd),
		   sizeof(struct ib_uverbs_alloc_pd_resp), true),
	UVERBS_CMD(DEALLOC_PD, uverbs_dealloc_pd,
		   sizeof(struct ib_uverbs_dealloc_pd), 0, false),
	UVERBS_CMD(REG_MR, uverbs_reg_mr, sizeof(struct ib_uverbs_reg_mr),
		   sizeof(struct ib_uverbs_reg_mr_resp), true),
	UVERBS_CMD(DEREG_MR, uverbs_dereg_mr,
		   sizeof(struct ib_uverbs_dereg_mr), 0, false),
	UVERBS_CMD(CREATE_COMP_CHANNEL, uverbs_create_comp_channel,
		   sizeof(struct ib_uverbs_create_comp_channel),
		   sizeof(struct ib_uverbs_create_comp_channel_resp), false),
	UVERBS_CMD(CREATE_CQ, uverbs_create_cq,
		   sizeof(struct ib_uverbs_create_cq),
		   sizeof(struct ib_uverbs_create_cq_resp), true),
	UVERBS_CMD(RESIZE_CQ, uverbs_resize_cq,
		   sizeof(struct ib_uverbs_resize_cq),
		   sizeof(struct ib_uverbs_resize_cq_resp), true),
	UVERBS_CMD(DESTROY_CQ, uverbs_destroy_cq,
		   sizeof(struct ib_uverbs_destroy_cq),
		   sizeof(struct ib_uverbs_destroy_cq_resp), false),
	UVERBS_CMD(CREATE_QP, uverbs_create_qp,
		   sizeof(struct ib_uverbs_create_qp),
		   sizeof(struct ib_uverbs_create_qp_resp), true),
	UVERBS_CMD(QUERY_QP, uverbs_query_qp, sizeof(struct ib_uverbs_query_qp),
		   sizeof(struct ib_uverbs_query_qp_resp), false),
	UVERBS_CMD(MODIFY_QP, uverbs_modify_qp,
		   sizeof(struct ib_uverbs_modify_qp), 0, true),
	UVERBS_CMD(DESTROY_QP, uverbs_destroy_qp,
		   sizeof(struct ib_uverbs_destroy_qp),
		   sizeof(struct ib_uverbs_destroy_qp_resp), false),
	UVERBS_CMD(ATTACH_MCAST, uverbs_attach_mcast,
		   sizeof(struct ib_uverbs_attach_mcast), 0, true),
	UVERBS_CMD(DETACH_MCAST, uverbs_detach_mcast,
		   sizeof(struct ib_uverbs_detach_mcast), 0, true),
	UVERBS_CMD(CREATE_SRQ, uverbs_create_srq,
		   sizeof(struct ib_uverbs_create_srq),
		   sizeof(struct ib_uverbs_create_srq_resp), true),
	UVERBS_CMD(MODIFY_SRQ, uverbs_modify_srq,
		   sizeof(struct ib_uverbs_modify_srq), 0, true),
	UVERBS_CMD(QUERY_SRQ, uverbs_query_srq,
		   sizeof(struct ib_uverbs_query_srq),
		   sizeof(struct ib_uverbs_query_srq_resp), false),
	UVERBS_CMD(DESTROY_SRQ, uverbs_destroy_srq,
		   sizeof(struct ib_uverbs_destroy_srq),
		   sizeof(struct ib_uverbs_destroy_srq_resp), false),
};
