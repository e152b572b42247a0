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
 * before GET_CONTEXT.
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
	u->uobject.user_handle = user_handle;
	u->uobject.context = file->ucontext;
	INIT_LIST_HEAD(&u->uobject.list);
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

static void uobj_abort(struct uverbs_file *file, struct uverbs_uobj *u)
{
	xa_erase(&file->objs, u->uobject.id);
	kfree(u);
}

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
	async = uverbs_async_file_create(&filp);
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
	ret = uverbs_response(args, &resp, sizeof(resp));
	if (ret)
		goto err_pd;
	uobj_commit(file, u);
	return 0;

err_pd:
	ib_dealloc_pd(pd);
err_uobj:
	uobj_abort(file, u);
	return ret;
}

/* Destroys @u's object and forgets @u; file->mutex held. */
static int uobj_destroy(struct uverbs_file *file, struct uverbs_uobj *u)
{
	int ret;

	switch (u->type) {
	case UVERBS_OBJ_PD:
		ret = ib_dealloc_pd(u->object);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret)
		return ret;
	xa_erase(&file->objs, u->uobject.id);
	kfree(u);
	return 0;
}

static int uverbs_dealloc_pd(struct uverbs_cmd_args *args)
{
	struct ib_uverbs_dealloc_pd cmd;
	struct uverbs_uobj *u;
	int ret;

	ret = uverbs_request_ctx(args, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	u = uobj_get(args->file, cmd.pd_handle, UVERBS_OBJ_PD);
	if (IS_ERR(u))
		return PTR_ERR(u);
	return uobj_destroy(args->file, u);
}

/**
 * uverbs_file_teardown() - destroy everything a file created
 * @file: the file, at its release
 *
 * Objects go in type order (users before what they use), then the
 * context; the async event file lives on until its own fd is closed.
 */
void uverbs_file_teardown(struct uverbs_file *file)
{
	struct ib_device *ib_dev = file->udev->ib_dev;
	struct uverbs_uobj *u;
	unsigned long id;
	int type;

	mutex_lock(&file->mutex);
	if (file->handler_registered) {
		ib_unregister_event_handler(&file->event_handler);
		file->handler_registered = false;
	}
	for (type = 0; type < UVERBS_OBJ_TYPES; type++) {
		xa_for_each(&file->objs, id, u) {
			if (u->type != type)
				continue;
			if (uobj_destroy(file, u))
				pr_warn("ib_uverbs: %s: object %lu of type %d not destroyed at close\n",
					ib_dev->name, id, type);
		}
	}
	if (file->ucontext) {
		ib_dev->dealloc_ucontext(file->ucontext);
		file->ucontext = NULL;
	}
	if (file->async) {
		uverbs_event_file_put(file->async);
		file->async = NULL;
	}
	mutex_unlock(&file->mutex);
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
};
