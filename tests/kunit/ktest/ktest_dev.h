/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A driver for the KUnit suites of the device registry, the verbs and the
 * cache: UML has no HCA, so the suites register this one.  It keeps two
 * ports with small GID and P_Key tables in memory that a test can change,
 * and allocates plain objects for the verbs, counting them so a test can
 * see that every object it created was freed.
 */
#ifndef IB_KTEST_DEV_H
#define IB_KTEST_DEV_H

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <rdma/ib_verbs.h>

#define KTEST_PORTS	2
#define KTEST_GIDS	4
#define KTEST_PKEYS	4

struct ktest_dev {
	struct ib_device	ibdev;
	/* the "hardware" tables, port 1 at index 0 */
	union ib_gid		gids[KTEST_PORTS][KTEST_GIDS];
	u16			pkeys[KTEST_PORTS][KTEST_PKEYS];
	u8			lmc[KTEST_PORTS];
	atomic_t		live_objects;
};

static inline struct ktest_dev *to_ktest(struct ib_device *ibdev)
{
	return container_of(ibdev, struct ktest_dev, ibdev);
}

static inline int ktest_query_device(struct ib_device *ibdev,
				     struct ib_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = cpu_to_be64(0x0002c90300001234ULL);
	return 0;
}

static inline int ktest_query_port(struct ib_device *ibdev, u8 port,
				   struct ib_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->state = IB_PORT_ACTIVE;
	attr->gid_tbl_len = KTEST_GIDS;
	attr->pkey_tbl_len = KTEST_PKEYS;
	attr->lmc = to_ktest(ibdev)->lmc[port - 1];
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = 1;
	attr->phys_state = 5;
	attr->lid = 0x10 + port;
	attr->sm_lid = 1;
	attr->sm_sl = 3;
	attr->port_cap_flags = 0x02510a68;
	return 0;
}

static inline int ktest_modify_device(struct ib_device *ibdev, int mask,
				      struct ib_device_modify *mod)
{
	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	memcpy(ibdev->node_desc, mod->node_desc, sizeof(ibdev->node_desc));
	return 0;
}

static inline int ktest_query_gid(struct ib_device *ibdev, u8 port, int index,
				  union ib_gid *gid)
{
	if (index < 0 || index >= KTEST_GIDS)
		return -EINVAL;
	*gid = to_ktest(ibdev)->gids[port - 1][index];
	return 0;
}

static inline int ktest_query_pkey(struct ib_device *ibdev, u8 port, u16 index,
				   u16 *pkey)
{
	if (index >= KTEST_PKEYS)
		return -EINVAL;
	*pkey = to_ktest(ibdev)->pkeys[port - 1][index];
	return 0;
}

/* Every object this driver hands out: zeroed memory of the object's size. */
static inline void *ktest_new(struct ib_device *ibdev, size_t size)
{
	void *obj = kzalloc(size, GFP_KERNEL);

	if (!obj)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&to_ktest(ibdev)->live_objects);
	return obj;
}

static inline int ktest_free(struct ib_device *ibdev, void *obj)
{
	atomic_dec(&to_ktest(ibdev)->live_objects);
	kfree(obj);
	return 0;
}

static inline struct ib_pd *ktest_alloc_pd(struct ib_device *ibdev,
					   struct ib_ucontext *ctx,
					   struct ib_udata *udata)
{
	return ktest_new(ibdev, sizeof(struct ib_pd));
}

static inline int ktest_dealloc_pd(struct ib_pd *pd)
{
	return ktest_free(pd->device, pd);
}

static inline struct ib_ah *ktest_create_ah(struct ib_pd *pd,
					    struct ib_ah_attr *attr)
{
	return ktest_new(pd->device, sizeof(struct ib_ah));
}

static inline int ktest_destroy_ah(struct ib_ah *ah)
{
	return ktest_free(ah->device, ah);
}

static inline struct ib_srq *ktest_create_srq(struct ib_pd *pd,
					      struct ib_srq_init_attr *attr,
					      struct ib_udata *udata)
{
	return ktest_new(pd->device, sizeof(struct ib_srq));
}

static inline int ktest_destroy_srq(struct ib_srq *srq)
{
	return ktest_free(srq->device, srq);
}

static inline int ktest_post_srq_recv(struct ib_srq *srq,
				      struct ib_recv_wr *wr,
				      struct ib_recv_wr **bad)
{
	return 0;
}

static inline struct ib_qp *ktest_create_qp(struct ib_pd *pd,
					    struct ib_qp_init_attr *attr,
					    struct ib_udata *udata)
{
	return ktest_new(pd->device, sizeof(struct ib_qp));
}

static inline int ktest_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr,
				  int mask)
{
	return 0;
}

static inline int ktest_destroy_qp(struct ib_qp *qp)
{
	return ktest_free(qp->device, qp);
}

static inline int ktest_post_send(struct ib_qp *qp, struct ib_send_wr *wr,
				  struct ib_send_wr **bad)
{
	return 0;
}

static inline int ktest_post_recv(struct ib_qp *qp, struct ib_recv_wr *wr,
				  struct ib_recv_wr **bad)
{
	return 0;
}

static inline struct ib_cq *ktest_create_cq(struct ib_device *ibdev, int cqe,
					    struct ib_ucontext *ctx,
					    struct ib_udata *udata)
{
	struct ib_cq *cq = ktest_new(ibdev, sizeof(struct ib_cq));

	if (!IS_ERR(cq))
		cq->cqe = cqe;
	return cq;
}

static inline int ktest_destroy_cq(struct ib_cq *cq)
{
	return ktest_free(cq->device, cq);
}

static inline int ktest_poll_cq(struct ib_cq *cq, int n, struct ib_wc *wc)
{
	return 0;
}

static inline int ktest_req_notify_cq(struct ib_cq *cq,
				      enum ib_cq_notify notify)
{
	return 0;
}

static inline struct ib_mr *ktest_get_dma_mr(struct ib_pd *pd, int access)
{
	return ktest_new(pd->device, sizeof(struct ib_mr));
}

static inline int ktest_dereg_mr(struct ib_mr *mr)
{
	return ktest_free(mr->device, mr);
}

/*
 * The "PCI function" of a test device: a root device that can do DMA (the
 * MAD layer, registered on UML too, maps its buffers for every device it
 * is given).  It lives until the end of the test, after the ib_device.
 */
static inline int ktest_parent_init(struct kunit_resource *res, void *kd)
{
	static atomic_t serial = ATOMIC_INIT(0);
	char name[48];
	struct device *dev;

	/* unique in this test file; test files run one after the other */
	snprintf(name, sizeof(name), "%s_%d", KBUILD_BASENAME,
		 atomic_inc_return(&serial));
	dev = root_device_register(name);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	dev->coherent_dma_mask = DMA_BIT_MASK(64);
	dev->dma_mask = &dev->coherent_dma_mask;
	res->data = dev;
	return 0;
}

static inline void ktest_parent_free(struct kunit_resource *res)
{
	root_device_unregister(res->data);
}

/*
 * A test device named @name (a "%d" in it is resolved at registration),
 * with every mandatory method, SRQs, and GIDs/P_Keys that tell ports and
 * indices apart: GID i of port p is fe80::p:i, P_Key i is 0xffff for i 0,
 * else 0x8000 | (p << 8 | i).  Freed with ib_dealloc_device().
 */
static inline struct ktest_dev *ktest_dev_alloc(struct kunit *test,
						const char *name)
{
	struct ktest_dev *kd;
	int p, i;

	kd = (struct ktest_dev *)ib_alloc_device(sizeof(*kd));
	KUNIT_ASSERT_NOT_NULL(test, kd);
	kd->ibdev.dma_device = kunit_alloc_resource(test, ktest_parent_init,
						    ktest_parent_free,
						    GFP_KERNEL, kd);
	KUNIT_ASSERT_NOT_NULL(test, kd->ibdev.dma_device);

	strscpy(kd->ibdev.name, name, sizeof(kd->ibdev.name));
	kd->ibdev.owner = THIS_MODULE;
	kd->ibdev.node_type = IB_NODE_CA;
	kd->ibdev.phys_port_cnt = KTEST_PORTS;
	kd->ibdev.node_guid = cpu_to_be64(0x0002c90300001234ULL);

	for (p = 0; p < KTEST_PORTS; p++) {
		for (i = 0; i < KTEST_GIDS; i++) {
			kd->gids[p][i].global.subnet_prefix =
				cpu_to_be64(0xfe80000000000000ULL);
			kd->gids[p][i].global.interface_id =
				cpu_to_be64(((u64)(p + 1) << 16) | i);
		}
		for (i = 0; i < KTEST_PKEYS; i++)
			kd->pkeys[p][i] = i ? 0x8000 | ((p + 1) << 8 | i) :
				0xffff;
	}

	kd->ibdev.query_device = ktest_query_device;
	kd->ibdev.query_port = ktest_query_port;
	kd->ibdev.query_gid = ktest_query_gid;
	kd->ibdev.query_pkey = ktest_query_pkey;
	kd->ibdev.modify_device = ktest_modify_device;
	kd->ibdev.alloc_pd = ktest_alloc_pd;
	kd->ibdev.dealloc_pd = ktest_dealloc_pd;
	kd->ibdev.create_ah = ktest_create_ah;
	kd->ibdev.destroy_ah = ktest_destroy_ah;
	kd->ibdev.create_srq = ktest_create_srq;
	kd->ibdev.destroy_srq = ktest_destroy_srq;
	kd->ibdev.post_srq_recv = ktest_post_srq_recv;
	kd->ibdev.create_qp = ktest_create_qp;
	kd->ibdev.modify_qp = ktest_modify_qp;
	kd->ibdev.destroy_qp = ktest_destroy_qp;
	kd->ibdev.post_send = ktest_post_send;
	kd->ibdev.post_recv = ktest_post_recv;
	kd->ibdev.create_cq = ktest_create_cq;
	kd->ibdev.destroy_cq = ktest_destroy_cq;
	kd->ibdev.poll_cq = ktest_poll_cq;
	kd->ibdev.req_notify_cq = ktest_req_notify_cq;
	kd->ibdev.get_dma_mr = ktest_get_dma_mr;
	kd->ibdev.dereg_mr = ktest_dereg_mr;
	return kd;
}

#endif /* IB_KTEST_DEV_H */
