// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The kernel verbs: thin wrappers that call the driver's method, fill in
 * the generic part of the object it returns, and keep the reference counts
 * that stop a PD, CQ, SRQ or MR from going away while something built on it
 * still exists.  Counts are atomics, so the wrappers need no lock of their
 * own; a destroy that finds its object in use fails with -EBUSY and leaves
 * it alone.
 *
 * The data-path calls (post, poll, arm) are inline in ib_verbs.h and go
 * straight to the driver.
 */

#include <linux/errno.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/string.h>

#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

/* ---- names ------------------------------------------------------------ */

/**
 * ib_event_msg() - a printable name for an asynchronous event type
 * @event: the type
 *
 * Return: a static string; "unrecognized event" for a value outside the
 * enumeration.
 */
const char *ib_event_msg(enum ib_event_type event)
{
	switch (event) {
	case IB_EVENT_CQ_ERR:		 return "completion queue error";
	case IB_EVENT_QP_FATAL:		 return "QP catastrophic error";
	case IB_EVENT_QP_REQ_ERR:	 return "QP invalid request";
	case IB_EVENT_QP_ACCESS_ERR:	 return "QP access violation";
	case IB_EVENT_COMM_EST:		 return "QP communication established";
	case IB_EVENT_SQ_DRAINED:	 return "SQ drained";
	case IB_EVENT_PATH_MIG:		 return "path migrated";
	case IB_EVENT_PATH_MIG_ERR:	 return "path migration failed";
	case IB_EVENT_DEVICE_FATAL:	 return "device catastrophic error";
	case IB_EVENT_PORT_ACTIVE:	 return "port became active";
	case IB_EVENT_PORT_ERR:		 return "port went down";
	case IB_EVENT_LID_CHANGE:	 return "port LID changed";
	case IB_EVENT_PKEY_CHANGE:	 return "P_Key table changed";
	case IB_EVENT_SM_CHANGE:	 return "subnet manager changed";
	case IB_EVENT_SRQ_ERR:		 return "SRQ catastrophic error";
	case IB_EVENT_SRQ_LIMIT_REACHED: return "SRQ below its limit";
	case IB_EVENT_QP_LAST_WQE_REACHED: return "QP last WQE reached";
	case IB_EVENT_CLIENT_REREGISTER: return "SA client reregistration asked";
	case IB_EVENT_GID_CHANGE:	 return "GID table changed";
	}
	return "unrecognized event";
}
EXPORT_SYMBOL(ib_event_msg);

/**
 * ib_wc_status_msg() - a printable name for a work completion status
 * @status: the status
 *
 * Return: a static string; "unrecognized status" for a value outside the
 * enumeration.
 */
const char *ib_wc_status_msg(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_SUCCESS:		return "success";
	case IB_WC_LOC_LEN_ERR:		return "local length error";
	case IB_WC_LOC_QP_OP_ERR:	return "local QP operation error";
	case IB_WC_LOC_EEC_OP_ERR:	return "local EEC operation error";
	case IB_WC_LOC_PROT_ERR:	return "local protection error";
	case IB_WC_WR_FLUSH_ERR:	return "flushed";
	case IB_WC_MW_BIND_ERR:		return "window bind error";
	case IB_WC_BAD_RESP_ERR:	return "bad response";
	case IB_WC_LOC_ACCESS_ERR:	return "local access violation";
	case IB_WC_REM_INV_REQ_ERR:	return "remote invalid request";
	case IB_WC_REM_ACCESS_ERR:	return "remote access violation";
	case IB_WC_REM_OP_ERR:		return "remote operation error";
	case IB_WC_RETRY_EXC_ERR:	return "retries exhausted";
	case IB_WC_RNR_RETRY_EXC_ERR:	return "RNR retries exhausted";
	case IB_WC_LOC_RDD_VIOL_ERR:	return "local RDD violation";
	case IB_WC_REM_INV_RD_REQ_ERR:	return "remote invalid RD request";
	case IB_WC_REM_ABORT_ERR:	return "remote aborted";
	case IB_WC_INV_EECN_ERR:	return "bad EEC number";
	case IB_WC_INV_EEC_STATE_ERR:	return "bad EEC state";
	case IB_WC_FATAL_ERR:		return "fatal error";
	case IB_WC_RESP_TIMEOUT_ERR:	return "response timeout";
	case IB_WC_GENERAL_ERR:		return "general error";
	}
	return "unrecognized status";
}
EXPORT_SYMBOL(ib_wc_status_msg);

/* Static rate codes as multiples of the 2.5 Gb/s 1X SDR lane. */
static const u8 ib_rate_mults[] = {
	[IB_RATE_2_5_GBPS] = 1,
	[IB_RATE_10_GBPS]  = 4,
	[IB_RATE_30_GBPS]  = 12,
	[IB_RATE_5_GBPS]   = 2,
	[IB_RATE_20_GBPS]  = 8,
	[IB_RATE_40_GBPS]  = 16,
	[IB_RATE_60_GBPS]  = 24,
	[IB_RATE_80_GBPS]  = 32,
	[IB_RATE_120_GBPS] = 48,
};

/**
 * ib_rate_to_mult() - a static rate code as a multiple of 2.5 Gb/s
 * @rate: an IBA 9.11 rate code
 *
 * Return: 1 for 2.5 Gb/s up to 48 for 120 Gb/s, or -1 for
 * IB_RATE_PORT_CURRENT and codes that name no rate.
 */
int ib_rate_to_mult(enum ib_rate rate)
{
	size_t code = rate;

	if (code >= ARRAY_SIZE(ib_rate_mults) || !ib_rate_mults[code])
		return -1;
	return ib_rate_mults[code];
}
EXPORT_SYMBOL(ib_rate_to_mult);

/* ---- protection domains ----------------------------------------------- */

/**
 * ib_alloc_pd() - allocate a protection domain for a kernel consumer
 * @device: the device
 *
 * May sleep.
 *
 * Return: the PD, or an ERR_PTR() from the driver.
 */
struct ib_pd *ib_alloc_pd(struct ib_device *device)
{
	struct ib_pd *pd;

	pd = device->alloc_pd(device, NULL, NULL);
	if (IS_ERR(pd))
		return pd;

	pd->device = device;
	pd->uobject = NULL;
	atomic_set(&pd->usecnt, 0);
	return pd;
}
EXPORT_SYMBOL(ib_alloc_pd);

/**
 * ib_dealloc_pd() - free a protection domain
 * @pd: the PD
 *
 * May sleep.
 *
 * Return: 0, -EBUSY while an AH, QP, SRQ or MR still uses it, or the
 * driver's errno.
 */
int ib_dealloc_pd(struct ib_pd *pd)
{
	if (atomic_read(&pd->usecnt))
		return -EBUSY;
	return pd->device->dealloc_pd(pd);
}
EXPORT_SYMBOL(ib_dealloc_pd);

/* ---- address handles -------------------------------------------------- */

/**
 * ib_create_ah() - create an address handle
 * @pd: its protection domain
 * @ah_attr: where it points
 *
 * Never sleeps; callable from any context.
 *
 * Return: the AH, or an ERR_PTR() from the driver.
 */
struct ib_ah *ib_create_ah(struct ib_pd *pd, struct ib_ah_attr *ah_attr)
{
	struct ib_ah *ah;

	ah = pd->device->create_ah(pd, ah_attr);
	if (IS_ERR(ah))
		return ah;

	ah->device = pd->device;
	ah->pd = pd;
	ah->uobject = NULL;
	atomic_inc(&pd->usecnt);
	return ah;
}
EXPORT_SYMBOL(ib_create_ah);

/**
 * ib_init_ah_from_wc() - the address of the sender of a received packet
 * @device: the device it arrived on
 * @port_num: the port it arrived on
 * @wc: its completion
 * @grh: its GRH (the first 40 bytes of the buffer), used when @wc says
 *	there is one
 * @ah_attr: filled with an address that replies to the sender
 *
 * Never sleeps.
 *
 * Return: 0, or -ENOENT when the packet's destination GID is not one of
 * the device's (so no source GID index can be chosen for the reply).
 */
int ib_init_ah_from_wc(struct ib_device *device, u8 port_num, struct ib_wc *wc,
		       struct ib_grh *grh, struct ib_ah_attr *ah_attr)
{
	u32 flow_class;
	u16 gid_index;
	int ret;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;

	if (!(wc->wc_flags & IB_WC_GRH))
		return 0;

	ret = ib_find_cached_gid(device, &grh->dgid, NULL, &gid_index);
	if (ret)
		return ret;

	/* version (4 bits), traffic class (8), flow label (20) */
	flow_class = be32_to_cpu(grh->version_tclass_flow);
	ah_attr->ah_flags = IB_AH_GRH;
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.sgid_index = (u8)gid_index;
	ah_attr->grh.flow_label = flow_class & 0xfffff;
	ah_attr->grh.traffic_class = (flow_class >> 20) & 0xff;
	ah_attr->grh.hop_limit = 0xff;
	return 0;
}
EXPORT_SYMBOL(ib_init_ah_from_wc);

/**
 * ib_create_ah_from_wc() - an address handle that replies to a received packet
 * @pd: the AH's protection domain
 * @wc: the packet's completion
 * @grh: its GRH, used when @wc says there is one
 * @port_num: the port it arrived on
 *
 * Never sleeps.
 *
 * Return: the AH, or an ERR_PTR().
 */
struct ib_ah *ib_create_ah_from_wc(struct ib_pd *pd, struct ib_wc *wc,
				   struct ib_grh *grh, u8 port_num)
{
	struct ib_ah_attr ah_attr;
	int ret;

	ret = ib_init_ah_from_wc(pd->device, port_num, wc, grh, &ah_attr);
	if (ret)
		return ERR_PTR(ret);
	return ib_create_ah(pd, &ah_attr);
}
EXPORT_SYMBOL(ib_create_ah_from_wc);

/**
 * ib_modify_ah() - point an address handle elsewhere
 * @ah: the AH
 * @ah_attr: the new address
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_modify_ah(struct ib_ah *ah, struct ib_ah_attr *ah_attr)
{
	if (!ah->device->modify_ah)
		return -EOPNOTSUPP;
	return ah->device->modify_ah(ah, ah_attr);
}
EXPORT_SYMBOL(ib_modify_ah);

/**
 * ib_query_ah() - read back an address handle
 * @ah: the AH
 * @ah_attr: filled in
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_query_ah(struct ib_ah *ah, struct ib_ah_attr *ah_attr)
{
	if (!ah->device->query_ah)
		return -EOPNOTSUPP;
	return ah->device->query_ah(ah, ah_attr);
}
EXPORT_SYMBOL(ib_query_ah);

/**
 * ib_destroy_ah() - free an address handle
 * @ah: the AH
 *
 * Never sleeps.
 *
 * Return: 0, or the driver's errno (the AH then still exists).
 */
int ib_destroy_ah(struct ib_ah *ah)
{
	struct ib_pd *pd = ah->pd;
	int ret;

	ret = ah->device->destroy_ah(ah);
	if (!ret)
		atomic_dec(&pd->usecnt);
	return ret;
}
EXPORT_SYMBOL(ib_destroy_ah);

/* ---- shared receive queues -------------------------------------------- */

/**
 * ib_create_srq() - create a shared receive queue
 * @pd: its protection domain
 * @srq_init_attr: its size, event handler and context; on return the
 *	sizes the driver allocated
 *
 * May sleep.
 *
 * Return: the SRQ, ERR_PTR(-EOPNOTSUPP) when the driver has no SRQs, or an
 * ERR_PTR() from the driver.
 */
struct ib_srq *ib_create_srq(struct ib_pd *pd,
			     struct ib_srq_init_attr *srq_init_attr)
{
	struct ib_srq *srq;

	if (!pd->device->create_srq)
		return ERR_PTR(-EOPNOTSUPP);

	srq = pd->device->create_srq(pd, srq_init_attr, NULL);
	if (IS_ERR(srq))
		return srq;

	srq->device = pd->device;
	srq->pd = pd;
	srq->uobject = NULL;
	srq->event_handler = srq_init_attr->event_handler;
	srq->srq_context = srq_init_attr->srq_context;
	atomic_set(&srq->usecnt, 0);
	atomic_inc(&pd->usecnt);
	return srq;
}
EXPORT_SYMBOL(ib_create_srq);

/**
 * ib_modify_srq() - resize an SRQ or arm its limit event
 * @srq: the SRQ
 * @srq_attr: new max_wr and/or srq_limit
 * @srq_attr_mask: which of them count
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_modify_srq(struct ib_srq *srq, struct ib_srq_attr *srq_attr,
		  enum ib_srq_attr_mask srq_attr_mask)
{
	if (!srq->device->modify_srq)
		return -EOPNOTSUPP;
	return srq->device->modify_srq(srq, srq_attr, srq_attr_mask);
}
EXPORT_SYMBOL(ib_modify_srq);

/**
 * ib_query_srq() - read an SRQ's attributes
 * @srq: the SRQ
 * @srq_attr: filled in
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_query_srq(struct ib_srq *srq, struct ib_srq_attr *srq_attr)
{
	if (!srq->device->query_srq)
		return -EOPNOTSUPP;
	return srq->device->query_srq(srq, srq_attr);
}
EXPORT_SYMBOL(ib_query_srq);

/**
 * ib_destroy_srq() - free a shared receive queue
 * @srq: the SRQ
 *
 * May sleep.
 *
 * Return: 0, -EBUSY while a QP still uses it, -EOPNOTSUPP when the driver has
 * no SRQs, or the driver's errno.
 */
int ib_destroy_srq(struct ib_srq *srq)
{
	struct ib_pd *pd = srq->pd;
	int ret;

	if (atomic_read(&srq->usecnt))
		return -EBUSY;
	if (!srq->device->destroy_srq)
		return -EOPNOTSUPP;

	ret = srq->device->destroy_srq(srq);
	if (!ret)
		atomic_dec(&pd->usecnt);
	return ret;
}
EXPORT_SYMBOL(ib_destroy_srq);

/* ---- queue pairs ------------------------------------------------------ */

/**
 * ib_create_qp() - create a queue pair
 * @pd: its protection domain
 * @qp_init_attr: its CQs, optional SRQ, sizes, type, event handler and
 *	context; on return @qp_init_attr->cap holds what was allocated
 *
 * The new QP is in the RESET state.  May sleep.
 *
 * Return: the QP, or an ERR_PTR() from the driver.
 */
struct ib_qp *ib_create_qp(struct ib_pd *pd,
			   struct ib_qp_init_attr *qp_init_attr)
{
	struct ib_qp *qp;

	qp = pd->device->create_qp(pd, qp_init_attr, NULL);
	if (IS_ERR(qp))
		return qp;

	qp->qp_type = qp_init_attr->qp_type;
	qp->event_handler = qp_init_attr->event_handler;
	qp->qp_context = qp_init_attr->qp_context;
	qp->uobject = NULL;
	qp->device = pd->device;

	/* the QP holds its PD, CQs and SRQ until ib_destroy_qp() */
	qp->pd = pd;
	atomic_inc(&pd->usecnt);
	qp->send_cq = qp_init_attr->send_cq;
	atomic_inc(&qp->send_cq->usecnt);
	qp->recv_cq = qp_init_attr->recv_cq;
	atomic_inc(&qp->recv_cq->usecnt);
	qp->srq = qp_init_attr->srq;
	if (qp->srq)
		atomic_inc(&qp->srq->usecnt);
	return qp;
}
EXPORT_SYMBOL(ib_create_qp);

/**
 * ib_modify_qp() - change a queue pair's state and attributes
 * @qp: the QP
 * @qp_attr: the new values
 * @qp_attr_mask: IB_QP_* bits saying which values count
 *
 * The driver checks the call with ib_modify_qp_is_ok().  May sleep.
 *
 * Return: 0, or the driver's errno (-EINVAL for an illegal transition).
 */
int ib_modify_qp(struct ib_qp *qp, struct ib_qp_attr *qp_attr,
		 int qp_attr_mask)
{
	return qp->device->modify_qp(qp, qp_attr, qp_attr_mask);
}
EXPORT_SYMBOL(ib_modify_qp);

/**
 * ib_query_qp() - read a queue pair's attributes
 * @qp: the QP
 * @qp_attr: filled in
 * @qp_attr_mask: the attributes wanted (the driver may fill more)
 * @qp_init_attr: filled with the creation attributes
 *
 * May sleep.
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_query_qp(struct ib_qp *qp, struct ib_qp_attr *qp_attr, int qp_attr_mask,
		struct ib_qp_init_attr *qp_init_attr)
{
	if (!qp->device->query_qp)
		return -EOPNOTSUPP;
	return qp->device->query_qp(qp, qp_attr, qp_attr_mask, qp_init_attr);
}
EXPORT_SYMBOL(ib_query_qp);

/**
 * ib_destroy_qp() - free a queue pair
 * @qp: the QP
 *
 * Outstanding work requests are dropped without completions.  May sleep.
 *
 * Return: 0, or the driver's errno (the QP then still exists).
 */
int ib_destroy_qp(struct ib_qp *qp)
{
	struct ib_pd *pd = qp->pd;
	struct ib_cq *scq = qp->send_cq;
	struct ib_cq *rcq = qp->recv_cq;
	struct ib_srq *srq = qp->srq;
	int ret;

	ret = qp->device->destroy_qp(qp);
	if (ret)
		return ret;

	atomic_dec(&pd->usecnt);
	atomic_dec(&scq->usecnt);
	atomic_dec(&rcq->usecnt);
	if (srq)
		atomic_dec(&srq->usecnt);
	return 0;
}
EXPORT_SYMBOL(ib_destroy_qp);

/*
 * IBA 11.2.4.2 (Modify QP): for each transition, whether it is legal, and
 * per QP type the attributes it requires and the ones it also accepts.
 * IB_QP_STATE itself is always allowed and never listed.  Transitions and
 * types not listed are illegal or take no attributes.  RESET and ERR can be
 * entered from every state with no further attributes.
 */
struct ib_qp_transition {
	bool			legal;
	enum ib_qp_attr_mask	required[IB_QPT_RAW_ETY + 1];
	enum ib_qp_attr_mask	optional[IB_QPT_RAW_ETY + 1];
};

/* The attributes RTR->RTS, RTS->RTS and SQD->RTS accept, per type. */
#define IB_TO_RTS_UD_OPT	(IB_QP_CUR_STATE | IB_QP_QKEY)
#define IB_TO_RTS_UC_OPT	(IB_QP_CUR_STATE | IB_QP_ALT_PATH |	\
				 IB_QP_ACCESS_FLAGS | IB_QP_PATH_MIG_STATE)
#define IB_TO_RTS_RC_OPT	(IB_TO_RTS_UC_OPT | IB_QP_MIN_RNR_TIMER)

/*
 * SQD->SQD: a drained UC QP may get new paths and rights; an RC QP may
 * also change port, timers, retry counts and RDMA read/atomic depths.
 */
#define IB_SQD_UC_OPT		(IB_QP_PKEY_INDEX | IB_QP_ACCESS_FLAGS |	\
				 IB_QP_AV | IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE)
#define IB_SQD_RC_MORE		(IB_QP_PORT | IB_QP_MIN_RNR_TIMER |	\
				 IB_QP_TIMEOUT | IB_QP_RETRY_CNT |	\
				 IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC |	\
				 IB_QP_MAX_DEST_RD_ATOMIC)

/* What every connected type names at RESET->INIT (and may repeat later). */
#define IB_INIT_CONN		(IB_QP_PKEY_INDEX | IB_QP_PORT |	\
				 IB_QP_ACCESS_FLAGS)
#define IB_INIT_UD		(IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY)
#define IB_INIT_SPECIAL		(IB_QP_PKEY_INDEX | IB_QP_QKEY)

/* Per-type initialisers in the order of enum ib_qp_type. */
#define IB_PER_TYPE(smi, gsi, rc, uc, ud)				\
	{ [IB_QPT_SMI] = (smi), [IB_QPT_GSI] = (gsi),			\
	  [IB_QPT_RC] = (rc), [IB_QPT_UC] = (uc), [IB_QPT_UD] = (ud) }

static const struct ib_qp_transition
ib_qp_transitions[IB_QPS_ERR + 1][IB_QPS_ERR + 1] = {
	[IB_QPS_RESET] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_INIT]  = {
			.legal = true,
			.required = IB_PER_TYPE(IB_INIT_SPECIAL,
						IB_INIT_SPECIAL,
						IB_INIT_CONN, IB_INIT_CONN,
						IB_INIT_UD),
		},
	},
	[IB_QPS_INIT] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_INIT]  = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_INIT_SPECIAL,
						IB_INIT_SPECIAL,
						IB_INIT_CONN, IB_INIT_CONN,
						IB_INIT_UD),
		},
		[IB_QPS_RTR]   = {
			.legal = true,
			.required = IB_PER_TYPE(0, 0,
						IB_QP_AV | IB_QP_PATH_MTU |
						IB_QP_DEST_QPN | IB_QP_RQ_PSN |
						IB_QP_MAX_DEST_RD_ATOMIC |
						IB_QP_MIN_RNR_TIMER,
						IB_QP_AV | IB_QP_PATH_MTU |
						IB_QP_DEST_QPN | IB_QP_RQ_PSN,
						0),
			.optional = IB_PER_TYPE(IB_INIT_SPECIAL,
						IB_INIT_SPECIAL,
						IB_QP_ALT_PATH |
						IB_QP_ACCESS_FLAGS |
						IB_QP_PKEY_INDEX,
						IB_QP_ALT_PATH |
						IB_QP_ACCESS_FLAGS |
						IB_QP_PKEY_INDEX,
						IB_QP_PKEY_INDEX | IB_QP_QKEY),
		},
	},
	[IB_QPS_RTR] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_RTS]   = {
			.legal = true,
			.required = IB_PER_TYPE(IB_QP_SQ_PSN, IB_QP_SQ_PSN,
						IB_QP_SQ_PSN | IB_QP_TIMEOUT |
						IB_QP_RETRY_CNT |
						IB_QP_RNR_RETRY |
						IB_QP_MAX_QP_RD_ATOMIC,
						IB_QP_SQ_PSN, IB_QP_SQ_PSN),
			.optional = IB_PER_TYPE(IB_TO_RTS_UD_OPT,
						IB_TO_RTS_UD_OPT,
						IB_TO_RTS_RC_OPT,
						IB_TO_RTS_UC_OPT,
						IB_TO_RTS_UD_OPT),
		},
	},
	[IB_QPS_RTS] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_RTS]   = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_TO_RTS_UD_OPT,
						IB_TO_RTS_UD_OPT,
						IB_TO_RTS_RC_OPT,
						IB_TO_RTS_UC_OPT,
						IB_TO_RTS_UD_OPT),
		},
		[IB_QPS_SQD]   = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_QP_EN_SQD_ASYNC_NOTIFY,
						IB_QP_EN_SQD_ASYNC_NOTIFY,
						IB_QP_EN_SQD_ASYNC_NOTIFY,
						IB_QP_EN_SQD_ASYNC_NOTIFY,
						IB_QP_EN_SQD_ASYNC_NOTIFY),
		},
	},
	[IB_QPS_SQD] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_RTS]   = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_TO_RTS_UD_OPT,
						IB_TO_RTS_UD_OPT,
						IB_TO_RTS_RC_OPT,
						IB_TO_RTS_UC_OPT,
						IB_TO_RTS_UD_OPT),
		},
		[IB_QPS_SQD]   = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_INIT_SPECIAL,
						IB_INIT_SPECIAL,
						IB_SQD_UC_OPT | IB_SQD_RC_MORE,
						IB_SQD_UC_OPT,
						IB_QP_PKEY_INDEX | IB_QP_QKEY),
		},
	},
	[IB_QPS_SQE] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
		[IB_QPS_RTS]   = {
			.legal = true,
			.optional = IB_PER_TYPE(IB_TO_RTS_UD_OPT,
						IB_TO_RTS_UD_OPT,
						0,
						IB_QP_CUR_STATE |
						IB_QP_ACCESS_FLAGS,
						IB_TO_RTS_UD_OPT),
		},
	},
	[IB_QPS_ERR] = {
		[IB_QPS_RESET] = { .legal = true },
		[IB_QPS_ERR]   = { .legal = true },
	},
};

/**
 * ib_modify_qp_is_ok() - is a QP state transition with this mask legal?
 * @cur_state: the QP's current state
 * @next_state: the state asked for (the current one when @mask lacks
 *	IB_QP_STATE)
 * @type: the QP's type
 * @mask: the attribute mask of the modify call
 *
 * Checks the transition, then that @mask holds every attribute the
 * transition requires for @type and nothing it does not accept.
 * IB_QP_CUR_STATE is only accepted when leaving RTR, RTS, SQD or SQE.
 * Pure function; any context.
 *
 * Return: true when the call is legal.
 */
bool ib_modify_qp_is_ok(enum ib_qp_state cur_state, enum ib_qp_state next_state,
			enum ib_qp_type type, enum ib_qp_attr_mask mask)
{
	const struct ib_qp_transition *t;
	u32 required, allowed;

	if ((u32)cur_state > IB_QPS_ERR || (u32)next_state > IB_QPS_ERR ||
	    (u32)type > IB_QPT_RAW_ETY)
		return false;

	if ((mask & IB_QP_CUR_STATE) &&
	    cur_state != IB_QPS_RTR && cur_state != IB_QPS_RTS &&
	    cur_state != IB_QPS_SQD && cur_state != IB_QPS_SQE)
		return false;

	t = &ib_qp_transitions[cur_state][next_state];
	if (!t->legal)
		return false;

	required = t->required[type];
	allowed = required | t->optional[type] | IB_QP_STATE;

	if ((mask & required) != required)
		return false;
	return !(mask & ~allowed);
}
EXPORT_SYMBOL(ib_modify_qp_is_ok);

/* ---- completion queues ------------------------------------------------ */

/**
 * ib_create_cq() - create a completion queue
 * @device: the device
 * @comp_handler: called (in interrupt context) when an armed CQ gets a
 *	completion
 * @event_handler: called for asynchronous errors of the CQ
 * @cq_context: passed to both handlers
 * @cqe: the minimum number of entries; the driver may give more
 *	(see cq->cqe)
 *
 * May sleep.
 *
 * Return: the CQ, or an ERR_PTR() from the driver.
 */
struct ib_cq *ib_create_cq(struct ib_device *device,
			   ib_comp_handler comp_handler,
			   void (*event_handler)(struct ib_event *, void *),
			   void *cq_context, int cqe)
{
	struct ib_cq *cq;

	cq = device->create_cq(device, cqe, NULL, NULL);
	if (IS_ERR(cq))
		return cq;

	atomic_set(&cq->usecnt, 0);
	cq->uobject = NULL;
	cq->device = device;
	/* the handlers run in interrupt context, both with cq_context */
	cq->cq_context = cq_context;
	cq->comp_handler = comp_handler;
	cq->event_handler = event_handler;
	return cq;
}
EXPORT_SYMBOL(ib_create_cq);

/**
 * ib_resize_cq() - change the number of entries of a CQ
 * @cq: the CQ (a kernel one: a user CQ's new ring comes through ib_uverbs)
 * @cqe: the minimum number of entries wanted
 *
 * May sleep.
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_resize_cq(struct ib_cq *cq, int cqe)
{
	if (!cq->device->resize_cq)
		return -EOPNOTSUPP;
	return cq->device->resize_cq(cq, cqe, NULL);
}
EXPORT_SYMBOL(ib_resize_cq);

/**
 * ib_destroy_cq() - free a completion queue
 * @cq: the CQ
 *
 * May sleep.
 *
 * Return: 0, -EBUSY while a QP still uses it, or the driver's errno.
 */
int ib_destroy_cq(struct ib_cq *cq)
{
	if (atomic_read(&cq->usecnt))
		return -EBUSY;
	return cq->device->destroy_cq(cq);
}
EXPORT_SYMBOL(ib_destroy_cq);

/**
 * ib_peek_cq() - are there at least this many completions waiting?
 * @cq: the CQ
 * @wc_cnt: the number asked about
 *
 * Never sleeps.
 *
 * Return: the driver's answer, or -EOPNOTSUPP when it cannot tell.
 */
int ib_peek_cq(struct ib_cq *cq, int wc_cnt)
{
	if (!cq->device->peek_cq)
		return -EOPNOTSUPP;
	return cq->device->peek_cq(cq, wc_cnt);
}
EXPORT_SYMBOL(ib_peek_cq);

/**
 * ib_req_ncomp_notif() - arm a CQ for an event after this many completions
 * @cq: the CQ
 * @wc_cnt: the number of completions
 *
 * Never sleeps.
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_req_ncomp_notif(struct ib_cq *cq, int wc_cnt)
{
	if (!cq->device->req_ncomp_notif)
		return -EOPNOTSUPP;
	return cq->device->req_ncomp_notif(cq, wc_cnt);
}
EXPORT_SYMBOL(ib_req_ncomp_notif);

/* ---- memory regions --------------------------------------------------- */

static struct ib_mr *ib_mr_created(struct ib_pd *pd, struct ib_mr *mr)
{
	if (IS_ERR(mr))
		return mr;

	mr->device = pd->device;
	mr->pd = pd;
	mr->uobject = NULL;
	atomic_set(&mr->usecnt, 0);
	atomic_inc(&pd->usecnt);
	return mr;
}

/**
 * ib_get_dma_mr() - a memory region covering all DMA addresses
 * @pd: its protection domain
 * @mr_access_flags: IB_ACCESS_* rights
 *
 * May sleep.
 *
 * Return: the MR, or an ERR_PTR() from the driver.
 */
struct ib_mr *ib_get_dma_mr(struct ib_pd *pd, int mr_access_flags)
{
	return ib_mr_created(pd, pd->device->get_dma_mr(pd, mr_access_flags));
}
EXPORT_SYMBOL(ib_get_dma_mr);

/**
 * ib_reg_phys_mr() - register physically addressed memory
 * @pd: its protection domain
 * @phys_buf_array: the physical pieces
 * @num_phys_buf: how many
 * @mr_access_flags: IB_ACCESS_* rights
 * @iova_start: the I/O virtual address wanted for the first byte; on
 *	return the one given
 *
 * May sleep.
 *
 * Return: the MR, ERR_PTR(-EOPNOTSUPP) when the driver cannot, or an
 * ERR_PTR() from the driver.
 */
struct ib_mr *ib_reg_phys_mr(struct ib_pd *pd,
			     struct ib_phys_buf *phys_buf_array,
			     int num_phys_buf, int mr_access_flags,
			     u64 *iova_start)
{
	if (!pd->device->reg_phys_mr)
		return ERR_PTR(-EOPNOTSUPP);
	return ib_mr_created(pd, pd->device->reg_phys_mr(pd, phys_buf_array,
							 num_phys_buf,
							 mr_access_flags,
							 iova_start));
}
EXPORT_SYMBOL(ib_reg_phys_mr);

/**
 * ib_query_mr() - read a memory region's attributes
 * @mr: the MR
 * @mr_attr: filled in
 *
 * Return: 0, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_query_mr(struct ib_mr *mr, struct ib_mr_attr *mr_attr)
{
	if (!mr->device->query_mr)
		return -EOPNOTSUPP;
	return mr->device->query_mr(mr, mr_attr);
}
EXPORT_SYMBOL(ib_query_mr);

/**
 * ib_dereg_mr() - free a memory region
 * @mr: the MR
 *
 * May sleep.
 *
 * Return: 0, -EBUSY while a memory window is bound to it, or the driver's
 * errno.
 */
int ib_dereg_mr(struct ib_mr *mr)
{
	struct ib_pd *pd = mr->pd;
	int ret;

	if (atomic_read(&mr->usecnt))
		return -EBUSY;

	ret = mr->device->dereg_mr(mr);
	if (!ret)
		atomic_dec(&pd->usecnt);
	return ret;
}
EXPORT_SYMBOL(ib_dereg_mr);

/* ---- multicast -------------------------------------------------------- */

static int ib_check_mcast(struct ib_qp *qp, union ib_gid *gid)
{
	/* Only UD QPs join groups, and a multicast GID starts with 0xff. */
	if (qp->qp_type != IB_QPT_UD || gid->raw[0] != 0xff)
		return -EINVAL;
	return 0;
}

/**
 * ib_attach_mcast() - let a UD QP receive a multicast group's packets
 * @qp: the QP
 * @gid: the group's MGID
 * @lid: the group's MLID
 *
 * May sleep.
 *
 * Return: 0, -EINVAL for a QP that is not UD or a GID that is not
 * multicast, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_attach_mcast(struct ib_qp *qp, union ib_gid *gid, u16 lid)
{
	int ret;

	if (!qp->device->attach_mcast)
		return -EOPNOTSUPP;
	ret = ib_check_mcast(qp, gid);
	if (ret)
		return ret;
	return qp->device->attach_mcast(qp, gid, lid);
}
EXPORT_SYMBOL(ib_attach_mcast);

/**
 * ib_detach_mcast() - stop a UD QP receiving a multicast group's packets
 * @qp: the QP
 * @gid: the group's MGID
 * @lid: the group's MLID
 *
 * May sleep.
 *
 * Return: 0, -EINVAL for a QP that is not UD or a GID that is not
 * multicast, -EOPNOTSUPP when the driver cannot, or the driver's errno.
 */
int ib_detach_mcast(struct ib_qp *qp, union ib_gid *gid, u16 lid)
{
	int ret;

	if (!qp->device->detach_mcast)
		return -EOPNOTSUPP;
	ret = ib_check_mcast(qp, gid);
	if (ret)
		return ret;
	return qp->device->detach_mcast(qp, gid, lid);
}
EXPORT_SYMBOL(ib_detach_mcast);
