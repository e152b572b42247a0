/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * InfiniBand verbs: the interface between the core, the hardware drivers
 * and the kernel consumers.
 *
 * The shape is that of the 2.6.11 OpenIB core: a driver fills a struct
 * ib_device with function pointers and registers it; consumers register a
 * struct ib_client and get add/remove calls for every device; the ib_*()
 * calls below dispatch through the device's function pointers and keep the
 * object reference counts.  SRQs and the user-data arguments of the later
 * 2.6 kernels are included so user-space verbs can follow.
 *
 * Driver contract (Documentation/infiniband/core_locking.rst): post_send,
 * post_recv, post_srq_recv, poll_cq, req_notify_cq and the AH calls may be
 * called from any context and never sleep.  Completion and event handlers
 * are never called from inside a consumer's own call into the driver.
 */
#ifndef IB_VERBS_H
#define IB_VERBS_H

#include <linux/types.h>
#include <linux/bits.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <linux/uaccess.h>
#include <asm/byteorder.h>

struct module;

/**
 * union ib_gid - a 128-bit global identifier, in network byte order
 * @raw: the 16 bytes as they appear on the wire
 * @global: the same bytes as subnet prefix and interface ID
 * @global.subnet_prefix: upper 64 bits
 * @global.interface_id: lower 64 bits (a port GUID for the default GID)
 */
union ib_gid {
	u8 raw[16];
	struct {
		__be64 subnet_prefix, interface_id;
	} global;
};

/* LID 0xFFFF: the permissive LID, accepted by any port (IBA 4.1.3). */
#define IB_LID_PERMISSIVE	cpu_to_be16(0xffff)

/* Default partition key: full membership of the default partition. */
#define IB_DEFAULT_PKEY_FULL	0xffff
#define IB_DEFAULT_PKEY_MASK	0x7fff

/* Q_Key used on QP1 (IBA 13.4.6.2); 0x80000000 and above are controlled. */
#define IB_QP1_QKEY		0x80010000
#define IB_QP_SET_QKEY		0x80000000

/* Node types, as in NodeInfo:NodeType (and sysfs node_type). */
enum ib_node_type {
	IB_NODE_CA = 1, IB_NODE_SWITCH, IB_NODE_ROUTER,
};

enum ib_device_cap_flags {
	IB_DEVICE_RESIZE_MAX_WR = BIT(0), IB_DEVICE_BAD_PKEY_CNTR = BIT(1),
	IB_DEVICE_BAD_QKEY_CNTR = BIT(2), IB_DEVICE_RAW_MULTI = BIT(3),
	IB_DEVICE_AUTO_PATH_MIG = BIT(4), IB_DEVICE_CHANGE_PHY_PORT = BIT(5),
	IB_DEVICE_UD_AV_PORT_ENFORCE = BIT(6),
	IB_DEVICE_CURR_QP_STATE_MOD = BIT(7), IB_DEVICE_SHUTDOWN_PORT = BIT(8),
	IB_DEVICE_INIT_TYPE = BIT(9), IB_DEVICE_PORT_ACTIVE_EVENT = BIT(10),
	IB_DEVICE_SYS_IMAGE_GUID = BIT(11), IB_DEVICE_RC_RNR_NAK_GEN = BIT(12),
	IB_DEVICE_SRQ_RESIZE = BIT(13), IB_DEVICE_N_NOTIFY_CQ = BIT(14),
};

enum ib_atomic_cap {
	IB_ATOMIC_NONE, IB_ATOMIC_HCA, IB_ATOMIC_GLOB,
};

/**
 * struct ib_device_attr - what ib_query_device() reports
 *
 * The fields are the IBA 11.2.1.2 "Query HCA" attributes.
 */
struct ib_device_attr {
	u64			fw_ver;
	__be64 node_guid, sys_image_guid;
	u64 max_mr_size, page_size_cap;
	u32 vendor_id, vendor_part_id, hw_ver;
	int max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd, max_cq;
	int max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom;
	int max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom;
	enum ib_atomic_cap	atomic_cap;
	int max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp;
	int max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
	int max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge;
	u16			max_pkeys;
	u8			local_ca_ack_delay;
};

enum ib_mtu {
	IB_MTU_256 = 1, IB_MTU_512 = 2, IB_MTU_1024 = 3, IB_MTU_2048 = 4,
	IB_MTU_4096 = 5,
};

/**
 * ib_mtu_enum_to_int() - the MTU in bytes of an IBA MTU code
 * @mtu: the code
 *
 * Return: 256..4096, or -1 for a code that names no MTU.
 */
static inline int ib_mtu_enum_to_int(enum ib_mtu mtu)
{
	if (mtu < IB_MTU_256 || mtu > IB_MTU_4096)
		return -1;
	return 128 << mtu;
}

/* PortInfo:PortState. */
enum ib_port_state {
	IB_PORT_NOP = 0, IB_PORT_DOWN = 1, IB_PORT_INIT = 2, IB_PORT_ARMED = 3,
	IB_PORT_ACTIVE = 4, IB_PORT_ACTIVE_DEFER = 5,
};

/* PortInfo:CapabilityMask bits. */
enum ib_port_cap_flags {
	IB_PORT_SM = BIT(1), IB_PORT_NOTICE_SUP = BIT(2),
	IB_PORT_TRAP_SUP = BIT(3), IB_PORT_OPT_IPD_SUP = BIT(4),
	IB_PORT_AUTO_MIGR_SUP = BIT(5), IB_PORT_SL_MAP_SUP = BIT(6),
	IB_PORT_MKEY_NVRAM = BIT(7), IB_PORT_PKEY_NVRAM = BIT(8),
	IB_PORT_LED_INFO_SUP = BIT(9), IB_PORT_SM_DISABLED = BIT(10),
	IB_PORT_SYS_IMAGE_GUID_SUP = BIT(11),
	IB_PORT_PKEY_SW_EXT_PORT_TRAP_SUP = BIT(12), IB_PORT_CM_SUP = BIT(16),
	IB_PORT_SNMP_TUNNEL_SUP = BIT(17), IB_PORT_REINIT_SUP = BIT(18),
	IB_PORT_DEVICE_MGMT_SUP = BIT(19), IB_PORT_VENDOR_CLASS_SUP = BIT(20),
	IB_PORT_DR_NOTICE_SUP = BIT(21), IB_PORT_CAP_MASK_NOTICE_SUP = BIT(22),
	IB_PORT_BOOT_MGMT_SUP = BIT(23), IB_PORT_LINK_LATENCY_SUP = BIT(24),
	IB_PORT_CLIENT_REG_SUP = BIT(25),
};

/* PortInfo:LinkWidthActive. */
enum ib_port_width {
	IB_WIDTH_1X = 1, IB_WIDTH_4X = 2, IB_WIDTH_8X = 4, IB_WIDTH_12X = 8,
};

/**
 * ib_width_enum_to_int() - lane count of a LinkWidth code
 * @width: the code
 *
 * Return: 1, 4, 8 or 12, or -1 for a code that names no width.
 */
static inline int ib_width_enum_to_int(enum ib_port_width width)
{
	switch (width) {
	case IB_WIDTH_1X:  return  1;
	case IB_WIDTH_4X:  return  4;
	case IB_WIDTH_8X:  return  8;
	case IB_WIDTH_12X: return 12;
	default:	   return -1;
	}
}

/**
 * struct ib_port_attr - what ib_query_port() reports
 *
 * The fields come from the port's PortInfo (IBA 14.2.5.6).
 */
struct ib_port_attr {
	enum ib_port_state	state;
	enum ib_mtu max_mtu, active_mtu;
	int			gid_tbl_len;
	u32 port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;
	u16 pkey_tbl_len, lid, sm_lid;
	u8 lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply;
	u8 active_width, active_speed, phys_state;
};

enum ib_device_modify_flags {
	IB_DEVICE_MODIFY_SYS_IMAGE_GUID = BIT(0),
	IB_DEVICE_MODIFY_NODE_DESC = BIT(1),
};

struct ib_device_modify {
	u64	sys_image_guid;
	char	node_desc[64];
};

enum ib_port_modify_flags {
	IB_PORT_SHUTDOWN = BIT(0), IB_PORT_INIT_TYPE = BIT(2),
	IB_PORT_RESET_QKEY_CNTR = BIT(3),
};

struct ib_port_modify {
	u32 set_port_cap_mask, clr_port_cap_mask;
	u8	init_type;
};

/* Asynchronous events (IBA 11.6.3). */
enum ib_event_type {
	IB_EVENT_CQ_ERR, IB_EVENT_QP_FATAL, IB_EVENT_QP_REQ_ERR,
	IB_EVENT_QP_ACCESS_ERR, IB_EVENT_COMM_EST, IB_EVENT_SQ_DRAINED,
	IB_EVENT_PATH_MIG, IB_EVENT_PATH_MIG_ERR, IB_EVENT_DEVICE_FATAL,
	IB_EVENT_PORT_ACTIVE, IB_EVENT_PORT_ERR, IB_EVENT_LID_CHANGE,
	IB_EVENT_PKEY_CHANGE, IB_EVENT_SM_CHANGE, IB_EVENT_SRQ_ERR,
	IB_EVENT_SRQ_LIMIT_REACHED, IB_EVENT_QP_LAST_WQE_REACHED,
	IB_EVENT_CLIENT_REREGISTER, IB_EVENT_GID_CHANGE,
};

/**
 * ib_event_msg() - a printable name for an event type
 * @event: the type
 *
 * Return: a static string; "unrecognized event" for an unknown value.
 */
const char *ib_event_msg(enum ib_event_type event);

/**
 * ib_event_is_port_change() - whether a port event changes what a port's
 *	users learnt from the SM
 * @type: the event
 *
 * The port going up or down, its LID, P_Key table or SM changing, or the
 * SM asking its clients to register again: after each, whoever caches
 * the port's attributes, paths or memberships (the caches, the SA
 * client, IPoIB) looks again.
 *
 * Return: true for those six events.
 */
static inline bool ib_event_is_port_change(enum ib_event_type type)
{
	switch (type) {
	case IB_EVENT_PORT_ACTIVE:
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_PKEY_CHANGE:
	case IB_EVENT_SM_CHANGE:
	case IB_EVENT_CLIENT_REREGISTER:
		return true;
	default:
		return false;
	}
}

struct ib_device;
struct ib_cq;
struct ib_qp;
struct ib_srq;
struct ib_pd;
struct ib_ah;
struct ib_mr;
struct ib_grh;
struct ib_mad;
struct ib_ucontext;
struct ib_uobject;
struct ib_udata;

/**
 * struct ib_event - an asynchronous event
 * @device: the device it happened on
 * @element: the object it names, as selected by @event
 * @element.cq: for CQ events
 * @element.qp: for QP events
 * @element.srq: for SRQ events
 * @element.port_num: for port events
 * @event: what happened
 */
struct ib_event {
	enum ib_event_type event;
	struct ib_device *device;
	union {
		u8 port_num;
		struct ib_cq *cq;
		struct ib_srq *srq;
		struct ib_qp *qp;
	} element;
};

/**
 * struct ib_event_handler - a consumer's device-wide event callback
 * @device: the device
 * @handler: called for every device/port event, in process or interrupt
 *	context; it must not sleep
 * @list: on the device's event_handler_list
 */
struct ib_event_handler {
	struct ib_device *device;
	void		(*handler)(struct ib_event_handler *handler,
				   struct ib_event *event);
	struct list_head  list;
};

static inline void
ib_init_event_handler(struct ib_event_handler *eh, struct ib_device *device,
		      void (*handler)(struct ib_event_handler *handler,
				      struct ib_event *event))
{
	eh->device = device;
	eh->handler = handler;
	INIT_LIST_HEAD(&eh->list);
}

/* Set up an event handler for ib_register_event_handler(). */
#define INIT_IB_EVENT_HANDLER(_ptr, _device, _handler)		\
	ib_init_event_handler(_ptr, _device, _handler)

struct ib_global_route {
	union ib_gid	dgid;
	u32		flow_label;
	u8 sgid_index, hop_limit, traffic_class;
};

/* The GRH as it sits in front of a received UD payload (IBA 8.3). */
struct ib_grh {
	__be32		version_tclass_flow;
	__be16		paylen;
	u8 next_hdr, hop_limit;
	union ib_gid sgid, dgid;
};

enum {
	IB_MULTICAST_QPN = 0xffffff
};

enum ib_ah_flags {
	IB_AH_GRH = 1,
};

/* IBA 9.11 static rate codes (PortInfo / path record encoding). */
enum ib_rate {
	IB_RATE_PORT_CURRENT = 0, IB_RATE_2_5_GBPS = 2, IB_RATE_5_GBPS = 5,
	IB_RATE_10_GBPS = 3, IB_RATE_20_GBPS = 6, IB_RATE_30_GBPS = 4,
	IB_RATE_40_GBPS = 7, IB_RATE_60_GBPS = 8, IB_RATE_80_GBPS = 9,
	IB_RATE_120_GBPS = 10,
};

struct ib_ah_attr {
	struct ib_global_route	grh;
	u16			dlid;
	u8 sl, src_path_bits, static_rate, ah_flags, port_num;
};

enum ib_wc_status {
	IB_WC_SUCCESS, IB_WC_LOC_LEN_ERR, IB_WC_LOC_QP_OP_ERR,
	IB_WC_LOC_EEC_OP_ERR, IB_WC_LOC_PROT_ERR, IB_WC_WR_FLUSH_ERR,
	IB_WC_MW_BIND_ERR, IB_WC_BAD_RESP_ERR, IB_WC_LOC_ACCESS_ERR,
	IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, IB_WC_REM_OP_ERR,
	IB_WC_RETRY_EXC_ERR, IB_WC_RNR_RETRY_EXC_ERR, IB_WC_LOC_RDD_VIOL_ERR,
	IB_WC_REM_INV_RD_REQ_ERR, IB_WC_REM_ABORT_ERR, IB_WC_INV_EECN_ERR,
	IB_WC_INV_EEC_STATE_ERR, IB_WC_FATAL_ERR, IB_WC_RESP_TIMEOUT_ERR,
	IB_WC_GENERAL_ERR,
};

/**
 * ib_wc_status_msg() - a printable name for a completion status
 * @status: the status
 *
 * Return: a static string; "unrecognized status" for an unknown value.
 */
const char *ib_wc_status_msg(enum ib_wc_status status);

enum ib_wc_opcode {
	IB_WC_SEND,
	IB_WC_RDMA_WRITE,
	IB_WC_RDMA_READ,
	IB_WC_COMP_SWAP,
	IB_WC_FETCH_ADD,
	IB_WC_BIND_MW,
/*
 * A receive completion has this bit set, so a consumer can test
 * (opcode & IB_WC_RECV) to tell receives from sends.
 */
	IB_WC_RECV			= 1 << 7,
	IB_WC_RECV_RDMA_WITH_IMM
};

enum ib_wc_flags {
	IB_WC_GRH = BIT(0), IB_WC_WITH_IMM = BIT(1),
};

/**
 * struct ib_wc - a work completion
 *
 * For receives on UD QPs, @src_qp, @slid, @sl, @pkey_index and
 * @dlid_path_bits describe the sender; @wc_flags says whether a GRH sits
 * in the first 40 bytes of the buffer.
 */
struct ib_wc {
	u64			wr_id;
	enum ib_wc_status	status;
	enum ib_wc_opcode	opcode;
	u32 vendor_err, byte_len;
	__be32			imm_data;
	u32 qp_num, src_qp;
	int			wc_flags;
	u16 pkey_index, slid;
	u8 sl, dlid_path_bits, port_num;
};

enum ib_cq_notify {
	IB_CQ_SOLICITED, IB_CQ_NEXT_COMP,
};

enum ib_srq_attr_mask {
	IB_SRQ_MAX_WR = BIT(0), IB_SRQ_LIMIT = BIT(1),
};

struct ib_srq_attr {
	u32 max_wr, max_sge, srq_limit;
};

struct ib_srq_init_attr {
	void		      (*event_handler)(struct ib_event *event, void *context);
	void		       *srq_context;
	struct ib_srq_attr	attr;
};

struct ib_qp_cap {
	u32 max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	u32 max_inline_data;
};

enum ib_sig_type {
	IB_SIGNAL_ALL_WR, IB_SIGNAL_REQ_WR,
};

enum ib_qp_type {
	/*
	 * IB_QPT_SMI and IB_QPT_GSI name QP0 and QP1 of a port; the driver
	 * decides which physical QP numbers back them.
	 */
	IB_QPT_SMI,
	IB_QPT_GSI,

	IB_QPT_RC,
	IB_QPT_UC,
	IB_QPT_UD,
	IB_QPT_RAW_IPV6,
	IB_QPT_RAW_ETY
};

/**
 * struct ib_qp_init_attr - what ib_create_qp() is asked for
 * @port_num: the port of a special QP (IB_QPT_SMI/GSI); ignored otherwise
 *
 * On return @cap holds what the driver actually allocated, which may be
 * more than requested.
 */
struct ib_qp_init_attr {
	void                  (*event_handler)(struct ib_event *event, void *context);
	void		       *qp_context;
	struct ib_cq *send_cq, *recv_cq;
	struct ib_srq	       *srq;
	struct ib_qp_cap	cap;
	enum ib_sig_type	sq_sig_type;
	enum ib_qp_type		qp_type;
	u8			port_num;
};

/* IBA 9.7.5.2.8 RNR NAK timer codes. */
enum ib_rnr_timeout {
	IB_RNR_TIMER_655_36 = 0, IB_RNR_TIMER_000_01 = 1,
	IB_RNR_TIMER_000_02 = 2, IB_RNR_TIMER_000_03 = 3,
	IB_RNR_TIMER_000_04 = 4, IB_RNR_TIMER_000_06 = 5,
	IB_RNR_TIMER_000_08 = 6, IB_RNR_TIMER_000_12 = 7,
	IB_RNR_TIMER_000_16 = 8, IB_RNR_TIMER_000_24 = 9,
	IB_RNR_TIMER_000_32 = 10, IB_RNR_TIMER_000_48 = 11,
	IB_RNR_TIMER_000_64 = 12, IB_RNR_TIMER_000_96 = 13,
	IB_RNR_TIMER_001_28 = 14, IB_RNR_TIMER_001_92 = 15,
	IB_RNR_TIMER_002_56 = 16, IB_RNR_TIMER_003_84 = 17,
	IB_RNR_TIMER_005_12 = 18, IB_RNR_TIMER_007_68 = 19,
	IB_RNR_TIMER_010_24 = 20, IB_RNR_TIMER_015_36 = 21,
	IB_RNR_TIMER_020_48 = 22, IB_RNR_TIMER_030_72 = 23,
	IB_RNR_TIMER_040_96 = 24, IB_RNR_TIMER_061_44 = 25,
	IB_RNR_TIMER_081_92 = 26, IB_RNR_TIMER_122_88 = 27,
	IB_RNR_TIMER_163_84 = 28, IB_RNR_TIMER_245_76 = 29,
	IB_RNR_TIMER_327_68 = 30, IB_RNR_TIMER_491_52 = 31,
};

enum ib_qp_attr_mask {
	IB_QP_STATE = BIT(0), IB_QP_CUR_STATE = BIT(1),
	IB_QP_EN_SQD_ASYNC_NOTIFY = BIT(2), IB_QP_ACCESS_FLAGS = BIT(3),
	IB_QP_PKEY_INDEX = BIT(4), IB_QP_PORT = BIT(5), IB_QP_QKEY = BIT(6),
	IB_QP_AV = BIT(7), IB_QP_PATH_MTU = BIT(8), IB_QP_TIMEOUT = BIT(9),
	IB_QP_RETRY_CNT = BIT(10), IB_QP_RNR_RETRY = BIT(11),
	IB_QP_RQ_PSN = BIT(12), IB_QP_MAX_QP_RD_ATOMIC = BIT(13),
	IB_QP_ALT_PATH = BIT(14), IB_QP_MIN_RNR_TIMER = BIT(15),
	IB_QP_SQ_PSN = BIT(16), IB_QP_MAX_DEST_RD_ATOMIC = BIT(17),
	IB_QP_PATH_MIG_STATE = BIT(18), IB_QP_CAP = BIT(19),
	IB_QP_DEST_QPN = BIT(20),
};

enum ib_qp_state {
	IB_QPS_RESET, IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS, IB_QPS_SQD,
	IB_QPS_SQE, IB_QPS_ERR,
};

enum ib_mig_state {
	IB_MIG_MIGRATED, IB_MIG_REARM, IB_MIG_ARMED,
};

struct ib_qp_attr {
	enum ib_qp_state qp_state, cur_qp_state;
	enum ib_mtu		path_mtu;
	enum ib_mig_state	path_mig_state;
	u32 qkey, rq_psn, sq_psn, dest_qp_num;
	int			qp_access_flags;
	struct ib_qp_cap	cap;
	struct ib_ah_attr ah_attr, alt_ah_attr;
	u16 pkey_index, alt_pkey_index;
	u8 en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic;
	u8 min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num;
	u8 alt_timeout;
};

/**
 * ib_modify_qp_is_ok() - is a QP state transition with this mask legal?
 * @cur_state: the QP's current state
 * @next_state: the state asked for
 * @type: the QP's transport
 * @mask: the attribute mask of the modify call
 *
 * Checks the transition and its required and optional attributes against
 * IBA 11.2.4.2 (the Modify QP table).  Drivers call it before touching
 * the hardware.
 *
 * Return: true when the call is legal.
 */
bool ib_modify_qp_is_ok(enum ib_qp_state cur_state, enum ib_qp_state next_state,
			enum ib_qp_type type, enum ib_qp_attr_mask mask);

enum ib_wr_opcode {
	IB_WR_RDMA_WRITE, IB_WR_RDMA_WRITE_WITH_IMM, IB_WR_SEND,
	IB_WR_SEND_WITH_IMM, IB_WR_RDMA_READ, IB_WR_ATOMIC_CMP_AND_SWP,
	IB_WR_ATOMIC_FETCH_AND_ADD,
};

enum ib_send_flags {
	IB_SEND_FENCE = BIT(0), IB_SEND_SIGNALED = BIT(1),
	IB_SEND_SOLICITED = BIT(2), IB_SEND_INLINE = BIT(3),
};

struct ib_sge {
	u64	addr;
	u32 length, lkey;
};

/**
 * struct ib_send_wr - a send work request
 * @wr.ud.port_num: for a directed-route SMP on QP0, the port to send on
 *
 * A list of them is linked through @next.
 */
struct ib_send_wr {
	struct ib_send_wr      *next;
	u64			wr_id;
	struct ib_sge	       *sg_list;
	int			num_sge;
	enum ib_wr_opcode	opcode;
	int			send_flags;
	__be32			imm_data;
	union {
		struct {
			u64	remote_addr;
			u32	rkey;
		} rdma;
		struct {
			u64	remote_addr;
			u64	compare_add;
			u64	swap;
			u32	rkey;
		} atomic;
		struct {
			struct ib_ah *ah;
			u32	remote_qpn;
			u32	remote_qkey;
			u16	pkey_index;
			u8	port_num;
		} ud;
	} wr;
};

struct ib_recv_wr {
	struct ib_recv_wr      *next;
	u64			wr_id;
	struct ib_sge	       *sg_list;
	int			num_sge;
};

enum ib_access_flags {
	IB_ACCESS_LOCAL_WRITE = BIT(0), IB_ACCESS_REMOTE_WRITE = BIT(1),
	IB_ACCESS_REMOTE_READ = BIT(2), IB_ACCESS_REMOTE_ATOMIC = BIT(3),
	IB_ACCESS_MW_BIND = BIT(4),
};

/* A physically contiguous piece of a region for ib_reg_phys_mr(). */
struct ib_phys_buf {
	u64 addr, size;
};

struct ib_mr_attr {
	struct ib_pd	*pd;
	u64 device_virt_addr, size;
	int		mr_access_flags;
	u32 lkey, rkey;
};

/**
 * struct ib_udata - a user-space verb's private input and output
 * @inbuf: user pointer to the driver's input
 * @outbuf: user pointer to the driver's output
 * @inlen: bytes at @inbuf
 * @outlen: room at @outbuf
 *
 * Kernel consumers pass NULL where a verb takes a struct ib_udata.
 */
struct ib_udata {
	const void __user *inbuf;
	void __user *outbuf;
	size_t inlen, outlen;
};

/**
 * ib_copy_from_udata() - read a verb's private input from user space
 * @dest: where to
 * @udata: the user data
 * @len: bytes wanted; more than @udata->inlen is an error
 *
 * Return: 0, -EINVAL when the user gave fewer bytes, or -EFAULT.
 */
static inline int ib_copy_from_udata(void *dest, struct ib_udata *udata,
				     size_t len)
{
	if (len > udata->inlen)
		return -EINVAL;
	return copy_from_user(dest, udata->inbuf, len) ? -EFAULT : 0;
}

/**
 * ib_copy_to_udata() - write a verb's private output to user space
 * @udata: the user data
 * @src: what to write
 * @len: its length
 *
 * User space sizes the room for its driver ABI.  Less room than @len is
 * -EFAULT: 6.1 copies @len bytes whatever the room, which fails when there
 * is none (a NULL @udata->outbuf) and writes past a short one; ours never
 * writes past the room (Documentation/uverbs.md).
 *
 * Return: 0 or -EFAULT.
 */
static inline int ib_copy_to_udata(struct ib_udata *udata, const void *src,
				   size_t len)
{
	if (len > udata->outlen)
		return -EFAULT;
	return copy_to_user(udata->outbuf, src, len) ? -EFAULT : 0;
}

/* A user-space process's context on a device (see ib_uverbs). */
struct ib_ucontext {
	struct ib_device       *device;
	struct list_head pd_list, mr_list, cq_list, qp_list, srq_list, ah_list;
};

/* User-space handle of a kernel object (see ib_uverbs). */
struct ib_uobject {
	u64			user_handle;
	struct ib_ucontext     *context;
	struct list_head	list;
	u32			id;
};

struct ib_pd {
	struct ib_device       *device;
	struct ib_uobject      *uobject;
	atomic_t		usecnt; /* count all resources */
};

struct ib_ah {
	struct ib_device	*device;
	struct ib_pd		*pd;
	struct ib_uobject	*uobject;
};

typedef void (*ib_comp_handler)(struct ib_cq *cq, void *cq_context);

struct ib_cq {
	struct ib_device       *device;
	struct ib_uobject      *uobject;
	ib_comp_handler		comp_handler;
	void                  (*event_handler)(struct ib_event *event, void *context);
	void		       *cq_context;
	int			cqe;
	atomic_t		usecnt; /* count number of work queues */
};

struct ib_srq {
	struct ib_device       *device;
	struct ib_pd	       *pd;
	struct ib_uobject      *uobject;
	void		      (*event_handler)(struct ib_event *event, void *context);
	void		       *srq_context;
	atomic_t		usecnt;
};

struct ib_qp {
	struct ib_device       *device;
	struct ib_pd	       *pd;
	struct ib_cq *send_cq, *recv_cq;
	struct ib_srq	       *srq;
	struct ib_uobject      *uobject;
	void                  (*event_handler)(struct ib_event *event, void *context);
	void		       *qp_context;
	u32			qp_num;
	enum ib_qp_type		qp_type;
};

struct ib_mr {
	struct ib_device  *device;
	struct ib_pd	  *pd;
	struct ib_uobject *uobject;
	u32 lkey, rkey;
	atomic_t	   usecnt; /* count number of MWs */
};

/*
 * What process_mad() returns: a combination of these bits.  SUCCESS alone
 * means "not handled here"; REPLY means the driver filled in the out MAD,
 * which the MAD layer sends back; CONSUMED means nobody else should see the
 * incoming MAD.
 */
enum ib_mad_result {
	IB_MAD_RESULT_FAILURE = 0, IB_MAD_RESULT_SUCCESS = BIT(0),
	IB_MAD_RESULT_REPLY = BIT(1), IB_MAD_RESULT_CONSUMED = BIT(2),
};

#define IB_DEVICE_NAME_MAX 64

/**
 * struct ib_cache - the core's copy of each port's GID and P_Key tables
 * @lock: guards the table pointers; readers may run in any context, the
 *	update work replaces a table under the write lock
 * @refresh_mutex: serialises the refreshes of the device's ports (the
 *	first fill at registration and those queued by events), each held
 *	from the first query to the driver until its tables are swapped
 *	in, so the tables swapped in last are those read last
 * @event_handler: the cache's own event handler, refreshing a port's tables
 *	on port, LID, P_Key, GID, SM and reregistration events
 * @pkey_cache: one table per port, indexed by port - start port
 * @gid_cache: likewise
 * @lmc_cache: the port's LMC, likewise
 */
struct ib_cache {
	rwlock_t                lock;
	/* serialises refreshes: query the driver and swap, as one step */
	struct mutex            refresh_mutex;
	struct ib_event_handler event_handler;
	struct ib_pkey_cache  **pkey_cache;
	struct ib_gid_cache   **gid_cache;
	u8                     *lmc_cache;
};

struct ib_port;

/**
 * struct ib_device - a registered InfiniBand device
 * @dma_device: the device DMA mappings are made for (the PCI function)
 * @name: "mthca%d" style name, resolved to a unique name at registration
 * @event_handler_list: consumers' event handlers, under @event_handler_lock
 * @event_handler_lock: spinlock; guards @event_handler_list, taken with
 *	interrupts off because events are dispatched from interrupt context
 * @core_list: on the core's device list (under the core's device mutex)
 * @client_data_list: per-client data, under @client_data_lock
 * @client_data_lock: spinlock; guards @client_data_list
 * @cache: GID/P_Key cache
 * @node_guid: NodeInfo:NodeGUID, network order
 * @node_desc: NodeDescription (64 bytes, not necessarily NUL-terminated
 *	when all 64 are used)
 * @node_type: IB_NODE_CA for an HCA
 * @phys_port_cnt: number of ports
 * @uverbs_abi_ver: the driver's user-verbs ABI (0 when it has none)
 * @uverbs_cmd_mask: the user verbs the driver implements
 * @owner: the driver's module (THIS_MODULE). The core does not pin it:
 *	a driver unregisters its devices before its code goes (module exit
 *	or PCI remove), and ib_unregister_device() returns only after every
 *	client's remove() has let go of the device, so no driver code runs
 *	after that. A client whose files go on calling into the driver past
 *	remove() (a user-verbs context without disassociation, say) must
 *	pin @owner with try_module_get() for as long as they do; ib_umad
 *	needs no pin, since its files go dead at remove() and never reach
 *	the driver again (Documentation/core.md, "Module references").
 * @dev: the device under /sys/class/infiniband
 * @driver_attr_group: optional; the driver's own files in the device's
 *	sysfs directory (for an HCA: fw_ver, hca_type, hw_rev, board_id).
 *	Its show methods get &ib_device.dev as their struct device.
 * @sysfs_groups: the core's; the attribute groups of @dev
 * @ports_kobj: the core's; the ports/ directory
 * @port_data: the core's per-port sysfs state, indexed by port number
 * @reg_state: where in its life the device is
 *
 * A driver allocates it with ib_alloc_device() (embedded at the start of
 * its own structure), fills in the identity fields and the function
 * pointers, and calls ib_register_device().  Optional methods may be NULL;
 * the core then returns -EOPNOTSUPP for the verb.
 */
struct ib_device {
	struct device                *dma_device;

	char                          name[IB_DEVICE_NAME_MAX];

	struct list_head              event_handler_list;
	/* guards event_handler_list; irqsave, held while handlers run */
	spinlock_t                    event_handler_lock;

	struct list_head core_list, client_data_list;
	/* guards client_data_list; irqsave, never held across a callback */
	spinlock_t                    client_data_lock;

	struct ib_cache               cache;

	int		           (*query_device)(struct ib_device *device,
						   struct ib_device_attr *device_attr);
	int		           (*query_port)(struct ib_device *device,
						 u8 port_num,
						 struct ib_port_attr *port_attr);
	int		           (*query_gid)(struct ib_device *device,
						u8 port_num, int index,
						union ib_gid *gid);
	int		           (*query_pkey)(struct ib_device *device,
						 u8 port_num, u16 index, u16 *pkey);
	int		           (*modify_device)(struct ib_device *device,
						    int device_modify_mask,
						    struct ib_device_modify *device_modify);
	int		           (*modify_port)(struct ib_device *device,
						  u8 port_num, int port_modify_mask,
						  struct ib_port_modify *port_modify);
	struct ib_ucontext *       (*alloc_ucontext)(struct ib_device *device,
						     struct ib_udata *udata);
	int                        (*dealloc_ucontext)(struct ib_ucontext *context);
	int                        (*mmap)(struct ib_ucontext *context,
					   struct vm_area_struct *vma);
	/*
	 * Optional.  The device is going away while a process still holds
	 * @context: take every mapping made by mmap() away from it (a later
	 * access faults) and see that no driver code is reached through
	 * those mappings afterwards.  Called once, in process context (may
	 * sleep, takes mmap_lock), before the objects of @context are
	 * destroyed and dealloc_ucontext() frees it.  A driver with it lets
	 * ib_uverbs drop a process from the device at remove() instead of
	 * waiting for it to close the device (Documentation/uverbs.md).
	 */
	void                       (*disassociate_ucontext)(struct ib_ucontext *context);
	struct ib_pd *             (*alloc_pd)(struct ib_device *device,
					       struct ib_ucontext *context,
					       struct ib_udata *udata);
	int                        (*dealloc_pd)(struct ib_pd *pd);
	struct ib_ah *             (*create_ah)(struct ib_pd *pd,
						struct ib_ah_attr *ah_attr);
	int                        (*modify_ah)(struct ib_ah *ah,
						struct ib_ah_attr *ah_attr);
	int                        (*query_ah)(struct ib_ah *ah,
					       struct ib_ah_attr *ah_attr);
	int                        (*destroy_ah)(struct ib_ah *ah);
	struct ib_srq *            (*create_srq)(struct ib_pd *pd,
						 struct ib_srq_init_attr *srq_init_attr,
						 struct ib_udata *udata);
	int                        (*modify_srq)(struct ib_srq *srq,
						 struct ib_srq_attr *srq_attr,
						 enum ib_srq_attr_mask srq_attr_mask);
	int                        (*query_srq)(struct ib_srq *srq,
						struct ib_srq_attr *srq_attr);
	int                        (*destroy_srq)(struct ib_srq *srq);
	int                        (*post_srq_recv)(struct ib_srq *srq,
						    struct ib_recv_wr *recv_wr,
						    struct ib_recv_wr **bad_recv_wr);
	struct ib_qp *             (*create_qp)(struct ib_pd *pd,
						struct ib_qp_init_attr *qp_init_attr,
						struct ib_udata *udata);
	int                        (*modify_qp)(struct ib_qp *qp,
						struct ib_qp_attr *qp_attr,
						int qp_attr_mask);
	int                        (*query_qp)(struct ib_qp *qp,
					       struct ib_qp_attr *qp_attr,
					       int qp_attr_mask,
					       struct ib_qp_init_attr *qp_init_attr);
	int                        (*destroy_qp)(struct ib_qp *qp);
	int                        (*post_send)(struct ib_qp *qp,
						struct ib_send_wr *send_wr,
						struct ib_send_wr **bad_send_wr);
	int                        (*post_recv)(struct ib_qp *qp,
						struct ib_recv_wr *recv_wr,
						struct ib_recv_wr **bad_recv_wr);
	struct ib_cq *             (*create_cq)(struct ib_device *device, int cqe,
						struct ib_ucontext *context,
						struct ib_udata *udata);
	int                        (*destroy_cq)(struct ib_cq *cq);
	int                        (*resize_cq)(struct ib_cq *cq, int cqe,
						struct ib_udata *udata);
	int                        (*poll_cq)(struct ib_cq *cq, int num_entries,
					      struct ib_wc *wc);
	int                        (*peek_cq)(struct ib_cq *cq, int wc_cnt);
	int                        (*req_notify_cq)(struct ib_cq *cq,
						    enum ib_cq_notify cq_notify);
	int                        (*req_ncomp_notif)(struct ib_cq *cq,
						      int wc_cnt);
	struct ib_mr *             (*get_dma_mr)(struct ib_pd *pd,
						 int mr_access_flags);
	struct ib_mr *             (*reg_phys_mr)(struct ib_pd *pd,
						  struct ib_phys_buf *phys_buf_array,
						  int num_phys_buf,
						  int mr_access_flags,
						  u64 *iova_start);
	struct ib_mr *             (*reg_user_mr)(struct ib_pd *pd,
						  u64 start, u64 length,
						  u64 virt_addr,
						  int mr_access_flags,
						  struct ib_udata *udata);
	int                        (*query_mr)(struct ib_mr *mr,
					       struct ib_mr_attr *mr_attr);
	int                        (*dereg_mr)(struct ib_mr *mr);
	int                        (*attach_mcast)(struct ib_qp *qp,
						   union ib_gid *gid,
						   u16 lid);
	int                        (*detach_mcast)(struct ib_qp *qp,
						   union ib_gid *gid,
						   u16 lid);
	int                        (*process_mad)(struct ib_device *device,
						  int process_mad_flags,
						  u8 port_num,
						  struct ib_wc *in_wc,
						  struct ib_grh *in_grh,
						  struct ib_mad *in_mad,
						  struct ib_mad *out_mad);

	struct module               *owner;
	struct device                dev;
	const struct attribute_group *driver_attr_group, *sysfs_groups[3];
	struct kobject              *ports_kobj;
	struct ib_port             **port_data;

	int			     uverbs_abi_ver;
	u64			     uverbs_cmd_mask;

	char			     node_desc[64];
	__be64			     node_guid;
	u8 node_type, phys_port_cnt;

	enum {
		IB_DEV_UNINITIALIZED,
		IB_DEV_REGISTERED,
		IB_DEV_UNREGISTERED
	}                            reg_state;
};

/* process_mad() flags. */
enum {
	IB_MAD_IGNORE_MKEY	= 1,
	IB_MAD_IGNORE_BKEY	= 2,
	IB_MAD_IGNORE_ALL	= IB_MAD_IGNORE_MKEY | IB_MAD_IGNORE_BKEY
};

/**
 * struct ib_client - a consumer of InfiniBand devices
 * @name: for messages
 * @add: called for every registered device, existing and future, in
 *	process context; may sleep
 * @remove: called when the device goes away or the client unregisters;
 *	the client must release everything it holds on the device
 * @list: on the core's client list
 */
struct ib_client {
	char  *name;
	void (*add)(struct ib_device *device);
	void (*remove)(struct ib_device *device);

	struct list_head list;
};

struct ib_device *ib_alloc_device(size_t size);
void ib_dealloc_device(struct ib_device *device);

int ib_register_device(struct ib_device *device);
void ib_unregister_device(struct ib_device *device);

int ib_register_client(struct ib_client *client);
void ib_unregister_client(struct ib_client *client);

void *ib_get_client_data(struct ib_device *device, struct ib_client *client);
void  ib_set_client_data(struct ib_device *device, struct ib_client *client,
			 void *data);

int ib_register_event_handler(struct ib_event_handler *event_handler);
int ib_unregister_event_handler(struct ib_event_handler *event_handler);
void ib_dispatch_event(struct ib_event *event);

/* Straight to the driver; process context (see ib_cache.h for atomic). */
int ib_query_device(struct ib_device *device, struct ib_device_attr *device_attr);
int ib_query_port(struct ib_device *device, u8 port_num,
		  struct ib_port_attr *port_attr);
int ib_query_gid(struct ib_device *device, u8 port_num, int index,
		 union ib_gid *gid);
int ib_query_pkey(struct ib_device *device, u8 port_num, u16 index, u16 *pkey);
int ib_modify_device(struct ib_device *device, int device_modify_mask,
		     struct ib_device_modify *device_modify);
int ib_modify_port(struct ib_device *device, u8 port_num, int port_modify_mask,
		   struct ib_port_modify *port_modify);

struct ib_pd *ib_alloc_pd(struct ib_device *device);
int ib_dealloc_pd(struct ib_pd *pd);

struct ib_ah *ib_create_ah(struct ib_pd *pd, struct ib_ah_attr *ah_attr);
int ib_init_ah_from_wc(struct ib_device *device, u8 port_num, struct ib_wc *wc,
		       struct ib_grh *grh, struct ib_ah_attr *ah_attr);
struct ib_ah *ib_create_ah_from_wc(struct ib_pd *pd, struct ib_wc *wc,
				   struct ib_grh *grh, u8 port_num);
int ib_modify_ah(struct ib_ah *ah, struct ib_ah_attr *ah_attr);
int ib_query_ah(struct ib_ah *ah, struct ib_ah_attr *ah_attr);
int ib_destroy_ah(struct ib_ah *ah);

struct ib_srq *ib_create_srq(struct ib_pd *pd,
			     struct ib_srq_init_attr *srq_init_attr);
int ib_modify_srq(struct ib_srq *srq, struct ib_srq_attr *srq_attr,
		  enum ib_srq_attr_mask srq_attr_mask);
int ib_query_srq(struct ib_srq *srq, struct ib_srq_attr *srq_attr);
int ib_destroy_srq(struct ib_srq *srq);

/**
 * ib_post_srq_recv() - post receive buffers on a shared receive queue
 * @srq: the SRQ
 * @recv_wr: a list of work requests
 * @bad_recv_wr: on failure, the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, or a negative errno.
 */
static inline int ib_post_srq_recv(struct ib_srq *srq,
				   struct ib_recv_wr *recv_wr,
				   struct ib_recv_wr **bad_recv_wr)
{
	return srq->device->post_srq_recv(srq, recv_wr, bad_recv_wr);
}

struct ib_qp *ib_create_qp(struct ib_pd *pd,
			   struct ib_qp_init_attr *qp_init_attr);
int ib_modify_qp(struct ib_qp *qp, struct ib_qp_attr *qp_attr,
		 int qp_attr_mask);
int ib_query_qp(struct ib_qp *qp, struct ib_qp_attr *qp_attr, int qp_attr_mask,
		struct ib_qp_init_attr *qp_init_attr);
int ib_destroy_qp(struct ib_qp *qp);

/**
 * ib_post_send() - post work requests on a QP's send queue
 * @qp: the QP
 * @send_wr: a list of work requests
 * @bad_send_wr: on failure, the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, or a negative errno.
 */
static inline int ib_post_send(struct ib_qp *qp,
			       struct ib_send_wr *send_wr,
			       struct ib_send_wr **bad_send_wr)
{
	return qp->device->post_send(qp, send_wr, bad_send_wr);
}

/**
 * ib_post_recv() - post work requests on a QP's receive queue
 * @qp: the QP
 * @recv_wr: a list of work requests
 * @bad_recv_wr: on failure, the first request not posted
 *
 * Never sleeps.
 *
 * Return: 0, or a negative errno.
 */
static inline int ib_post_recv(struct ib_qp *qp,
			       struct ib_recv_wr *recv_wr,
			       struct ib_recv_wr **bad_recv_wr)
{
	return qp->device->post_recv(qp, recv_wr, bad_recv_wr);
}

struct ib_cq *ib_create_cq(struct ib_device *device,
			   ib_comp_handler comp_handler,
			   void (*event_handler)(struct ib_event *event, void *context),
			   void *cq_context, int cqe);
int ib_resize_cq(struct ib_cq *cq, int cqe);
int ib_destroy_cq(struct ib_cq *cq);

/**
 * ib_poll_cq() - take completions off a CQ
 * @cq: the CQ
 * @num_entries: room in @wc
 * @wc: where to put them
 *
 * Never sleeps.
 *
 * Return: the number of completions taken (0 if none), or a negative errno.
 */
static inline int ib_poll_cq(struct ib_cq *cq, int num_entries,
			     struct ib_wc *wc)
{
	return cq->device->poll_cq(cq, num_entries, wc);
}

int ib_peek_cq(struct ib_cq *cq, int wc_cnt);

/**
 * ib_req_notify_cq() - arm a CQ's completion event
 * @cq: the CQ
 * @cq_notify: IB_CQ_SOLICITED for the next solicited completion only,
 *	IB_CQ_NEXT_COMP for the next completion of any kind
 *
 * The CQ's comp_handler runs once when the event fires; arm again to get
 * another.  Never sleeps.
 *
 * Return: 0, or a negative errno.
 */
static inline int ib_req_notify_cq(struct ib_cq *cq,
				   enum ib_cq_notify cq_notify)
{
	return cq->device->req_notify_cq(cq, cq_notify);
}

int ib_req_ncomp_notif(struct ib_cq *cq, int wc_cnt);

struct ib_mr *ib_get_dma_mr(struct ib_pd *pd, int mr_access_flags);
struct ib_mr *ib_reg_phys_mr(struct ib_pd *pd,
			     struct ib_phys_buf *phys_buf_array,
			     int num_phys_buf, int mr_access_flags,
			     u64 *iova_start);
int ib_query_mr(struct ib_mr *mr, struct ib_mr_attr *mr_attr);
int ib_dereg_mr(struct ib_mr *mr);

int ib_attach_mcast(struct ib_qp *qp, union ib_gid *gid, u16 lid);
int ib_detach_mcast(struct ib_qp *qp, union ib_gid *gid, u16 lid);

/**
 * ib_rate_to_mult() - a static rate as a multiple of 2.5 Gb/s
 * @rate: the rate code
 *
 * Return: the multiple, or -1 for an unknown code.
 */
int ib_rate_to_mult(enum ib_rate rate);

/* Port numbers of a device: 0 for a switch, 1..phys_port_cnt otherwise. */
static inline u8 rdma_start_port(const struct ib_device *device)
{
	return device->node_type == IB_NODE_SWITCH ? 0 : 1;
}

static inline u8 rdma_end_port(const struct ib_device *device)
{
	return device->node_type == IB_NODE_SWITCH ? 0 : device->phys_port_cnt;
}

#endif /* IB_VERBS_H */
