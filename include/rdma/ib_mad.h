/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The MAD layer (ib_mad): management datagrams on QP0 and QP1.
 *
 * A consumer registers a MAD agent on a device port and a special QP, for
 * the management classes, versions and methods it serves.  It sends by
 * allocating a send buffer (ib_create_send_mad()), filling in the MAD and
 * posting it; the send handler reports the outcome: a response matched,
 * a timeout after the retries, or an error.  Requests the agent registered
 * for arrive at its receive handler, reassembled when they came in RMPP
 * segments.  Responses to its own requests arrive there too, matched by
 * transaction ID.
 *
 * Handlers run in process context (the MAD layer's workqueue), never from
 * inside the consumer's own call.
 */
#ifndef IB_MAD_H
#define IB_MAD_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/list.h>

#include <rdma/ib_verbs.h>

/* The MAD format of IBA 13.4, and the RMPP of 13.6, in numbers. */
enum {
	IB_MGMT_BASE_VERSION = 1,
	IB_MGMT_RMPP_VERSION = 1,
	IB_MGMT_MAX_METHODS = 128,	/* methods 0..127; bit 7 is R */
	IB_OPENIB_OUI = 0x001405,
};

/* Management classes (IBA table 103). */
enum {
	IB_MGMT_CLASS_SUBN_LID_ROUTED = 0x01,	/* SMPs, QP0 */
	IB_MGMT_CLASS_SUBN_ADM = 0x03,		/* SA, RMPP */
	IB_MGMT_CLASS_PERF_MGMT = 0x04,		/* PMA */
	IB_MGMT_CLASS_BM = 0x05,
	IB_MGMT_CLASS_DEVICE_MGMT = 0x06,
	IB_MGMT_CLASS_CM = 0x07,
	IB_MGMT_CLASS_SNMP = 0x08,
	IB_MGMT_CLASS_DEVICE_ADM = 0x10,	/* RMPP */
	IB_MGMT_CLASS_BOOT_MGMT = 0x11,
	IB_MGMT_CLASS_BIS = 0x12,		/* RMPP */
	IB_MGMT_CLASS_CONG_MGMT = 0x21,
	/* vendor classes with an OUI, RMPP */
	IB_MGMT_CLASS_VENDOR_RANGE2_START = 0x30,
	IB_MGMT_CLASS_VENDOR_RANGE2_END = 0x4f,
	IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE = 0x81,	/* SMPs, QP0 */
};

/* Methods (IBA 13.4.5); a response is its request with 0x80 added. */
enum {
	IB_MGMT_METHOD_GET = 0x01,
	IB_MGMT_METHOD_SET = 0x02,
	IB_MGMT_METHOD_SEND = 0x03,
	IB_MGMT_METHOD_TRAP = 0x05,
	IB_MGMT_METHOD_REPORT = 0x06,
	IB_MGMT_METHOD_TRAP_REPRESS = 0x07,
	IB_MGMT_METHOD_RESP = 0x80,
	IB_MGMT_METHOD_GET_RESP = IB_MGMT_METHOD_RESP | IB_MGMT_METHOD_GET,
	IB_MGMT_METHOD_REPORT_RESP = IB_MGMT_METHOD_RESP | IB_MGMT_METHOD_REPORT,
};

/* RMPP packet types and flags (IBA 13.6.2.1). */
enum {
	IB_MGMT_RMPP_TYPE_DATA = 1,
	IB_MGMT_RMPP_TYPE_ACK = 2,
	IB_MGMT_RMPP_TYPE_STOP = 3,
	IB_MGMT_RMPP_TYPE_ABORT = 4,

	IB_MGMT_RMPP_FLAG_ACTIVE = BIT(0),
	IB_MGMT_RMPP_FLAG_FIRST = BIT(1),
	IB_MGMT_RMPP_FLAG_LAST = BIT(2),

	IB_MGMT_RMPP_NO_RESPTIME = 0x1f,
};

/*
 * RMPPStatus (IBA table 171): 0 and 1 in ACKs and STOPs, 118..127 give
 * the reason of an ABORT.
 */
enum {
	IB_MGMT_RMPP_STATUS_SUCCESS = 0,
	IB_MGMT_RMPP_STATUS_RESX = 1,		/* out of resources: STOP */
	IB_MGMT_RMPP_STATUS_ABORT_MIN = 118,
	IB_MGMT_RMPP_STATUS_T2L = IB_MGMT_RMPP_STATUS_ABORT_MIN,
	IB_MGMT_RMPP_STATUS_BAD_LEN,		/* 119 */
	IB_MGMT_RMPP_STATUS_BAD_SEG,		/* 120 */
	IB_MGMT_RMPP_STATUS_BADT,		/* 121: illegal type */
	IB_MGMT_RMPP_STATUS_W2S,		/* 122: window too small */
	IB_MGMT_RMPP_STATUS_S2B,		/* 123: segment too big */
	IB_MGMT_RMPP_STATUS_BAD_STATUS,		/* 124 */
	IB_MGMT_RMPP_STATUS_UNV,		/* 125: unsupported version */
	IB_MGMT_RMPP_STATUS_TMR,		/* 126: too many retries */
	IB_MGMT_RMPP_STATUS_UNSPEC,		/* 127 */
	IB_MGMT_RMPP_STATUS_ABORT_MAX = IB_MGMT_RMPP_STATUS_UNSPEC,
};

#define IB_QP0		0
#define IB_QP1		cpu_to_be32(1)

/* MAD Status field values (IBA 13.4.7): the bits of the "invalid" code. */
enum {
	IB_MGMT_MAD_STATUS_SUCCESS = 0,
	IB_MGMT_MAD_STATUS_BUSY = 1 << 0,
	IB_MGMT_MAD_STATUS_REDIRECT_REQD = 1 << 1,
	IB_MGMT_MAD_STATUS_BAD_VERSION = 1 << 2,		/* code 1 */
	IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD = 2 << 2,		/* code 2 */
	IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB = 3 << 2,	/* code 3 */
	IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE = 7 << 2,	/* code 7 */
};

/*
 * Sizes in bytes: each header (cumulative, from the start of the MAD) and
 * the data after it, the two always adding up to the 256-byte MAD.
 */
enum {
	IB_MGMT_MAD_SIZE = 256,
	IB_MGMT_MAD_HDR = 24,		IB_MGMT_MAD_DATA = 232,
	IB_MGMT_RMPP_HDR = 36,		IB_MGMT_RMPP_DATA = 220,
	IB_MGMT_VENDOR_HDR = 40,	IB_MGMT_VENDOR_DATA = 216,
	IB_MGMT_SA_HDR = 56,		IB_MGMT_SA_DATA = 200,
	IB_MGMT_DEVICE_HDR = 64,	IB_MGMT_DEVICE_DATA = 192,
};

/**
 * struct ib_mad_hdr - the common MAD header (IBA 13.4.2), 24 bytes
 * @base_version: 1
 * @mgmt_class: management class
 * @class_version: version of that class
 * @method: Get, Set, GetResp, ...; bit 7 is the R (response) bit
 * @status: MAD status
 * @class_specific: per class (the hop pointer and count of DR SMPs)
 * @tid: transaction ID; the upper half is the sending agent's hi_tid
 * @attr_id: attribute
 * @resv: reserved
 * @attr_mod: attribute modifier
 */
struct ib_mad_hdr {
	u8	base_version, mgmt_class, class_version, method;
	__be16	status, class_specific;
	__be64	tid;
	__be16	attr_id, resv;
	__be32	attr_mod;
};

/**
 * struct ib_rmpp_hdr - the RMPP header after it (IBA 13.6.2.1), 12 bytes
 * @rmpp_version: RMPP version (1)
 * @rmpp_type: DATA, ACK, STOP or ABORT
 * @rmpp_rtime_flags: RRespTime in the top 5 bits, the flags below
 * @rmpp_status: 0, or why a STOP/ABORT was sent
 * @seg_num: segment number (DATA), last segment received (ACK)
 * @paylen_newwin: PayloadLength in DATA segments, NewWindowLast in ACKs
 */
struct ib_rmpp_hdr {
	u8	rmpp_version, rmpp_type, rmpp_rtime_flags, rmpp_status;
	__be32	seg_num, paylen_newwin;
};

typedef u64 __bitwise ib_sa_comp_mask;

#define IB_SA_COMP_MASK(n) ((__force ib_sa_comp_mask) cpu_to_be64(1ull << (n)))

/* The SA class header (IBA 15.2.1.1) after the RMPP header: 20 bytes. */
struct ib_sa_hdr {
	__be64			sm_key;
	__be16			attr_offset, reserved;
	ib_sa_comp_mask		comp_mask;
} __packed;

/* A MAD as the MAD layer sees it: the common header, then data. */
struct ib_mad {
	struct ib_mad_hdr	mad_hdr;
	u8			data[IB_MGMT_MAD_DATA];
};

/* A MAD of an RMPP class: the RMPP header comes first in the data. */
struct ib_rmpp_mad {
	struct ib_mad_hdr	mad_hdr;
	struct ib_rmpp_hdr	rmpp_hdr;
	u8			data[IB_MGMT_RMPP_DATA];
};

/* Vendor range 2 (0x30-0x4f): a reserved byte and the OUI follow. */
struct ib_vendor_mad {
	struct ib_mad_hdr	mad_hdr;
	struct ib_rmpp_hdr	rmpp_hdr;
	u8			reserved, oui[3];
	u8			data[IB_MGMT_VENDOR_DATA];
};

/* Subnet administration: the SA header, then the records. */
struct __packed ib_sa_mad {
	struct ib_mad_hdr	mad_hdr;
	struct ib_rmpp_hdr	rmpp_hdr;
	struct ib_sa_hdr	sa_hdr;		/* bytes 36..55 */
	u8			data[IB_MGMT_SA_DATA];
};

/* ClassPortInfo (IBA 13.4.8.1): where to redirect, where traps go. */
struct ib_class_port_info {
	u8			base_version, class_version;
	__be16			capability_mask;
	__be32			cap_mask2_resp_time;
	/* redirection */
	u8			redirect_gid[16];
	__be32			redirect_tcslfl;
	__be16			redirect_lid, redirect_pkey;
	__be32			redirect_qp, redirect_qkey;
	/* traps */
	u8			trap_gid[16];
	__be32			trap_tcslfl;
	__be16			trap_lid, trap_pkey;
	__be32			trap_hlqp, trap_qkey;
};

static_assert(sizeof(struct ib_mad) == IB_MGMT_MAD_SIZE);
static_assert(sizeof(struct ib_rmpp_mad) == IB_MGMT_MAD_SIZE);
static_assert(sizeof(struct ib_vendor_mad) == IB_MGMT_MAD_SIZE);
static_assert(sizeof(struct ib_sa_mad) == IB_MGMT_MAD_SIZE);
static_assert(sizeof(struct ib_class_port_info) == 72);

/*
 * RMPP header byte 2: RRespTime in bits 7..3, the Active/First/Last flags
 * in bits 2..0.  The accessors below read and write one part and leave
 * the other alone.
 */
#define IB_RMPP_FLAGS_BITS	0x07
#define IB_RMPP_RTIME_SHIFT	3

/**
 * ib_get_rmpp_flags() - the flags of an RMPP header
 * @rmpp_hdr: the header
 *
 * Return: the IB_MGMT_RMPP_FLAG_* bits.
 */
static inline u8 ib_get_rmpp_flags(const struct ib_rmpp_hdr *rmpp_hdr)
{
	u8 byte = rmpp_hdr->rmpp_rtime_flags;

	return byte & IB_RMPP_FLAGS_BITS;
}

/**
 * ib_get_rmpp_resptime() - RRespTime of an RMPP header
 * @rmpp_hdr: the header
 *
 * Return: the 5-bit response time code.
 */
static inline u8 ib_get_rmpp_resptime(struct ib_rmpp_hdr *rmpp_hdr)
{
	u8 byte = rmpp_hdr->rmpp_rtime_flags;

	return byte >> IB_RMPP_RTIME_SHIFT;
}

/**
 * ib_set_rmpp_flags() - replace the flags, RRespTime unchanged
 * @rmpp_hdr: the header
 * @flags: IB_MGMT_RMPP_FLAG_* bits
 */
static inline void ib_set_rmpp_flags(struct ib_rmpp_hdr *rmpp_hdr, u8 flags)
{
	u8 keep = rmpp_hdr->rmpp_rtime_flags & ~IB_RMPP_FLAGS_BITS;

	rmpp_hdr->rmpp_rtime_flags = keep | (flags & IB_RMPP_FLAGS_BITS);
}

/**
 * ib_set_rmpp_resptime() - replace RRespTime, the flags unchanged
 * @rmpp_hdr: the header
 * @rtime: the 5-bit response time code
 */
static inline void ib_set_rmpp_resptime(struct ib_rmpp_hdr *rmpp_hdr, u8 rtime)
{
	u8 keep = rmpp_hdr->rmpp_rtime_flags & IB_RMPP_FLAGS_BITS;

	rmpp_hdr->rmpp_rtime_flags = keep | (u8)(rtime << IB_RMPP_RTIME_SHIFT);
}

/*
 * The most data one RMPP message may carry, in bytes (over all its
 * segments): ib_create_send_mad() refuses more with -EMSGSIZE.  Four MiB
 * is about 20000 segments, far beyond any SA table answer of a subnet
 * this stack serves, and bounds what one send can pin in the kernel.
 */
#define IB_MAD_RMPP_MAX_DATA	(4 << 20)

/* Declared further down, used by the send buffer. */
struct ib_mad_agent;

/**
 * struct ib_mad_send_buf - a MAD to send, from ib_create_send_mad()
 * @next: links buffers for one ib_post_send_mad() call
 * @mad_agent: the agent it belongs to
 * @mad: the MAD header and the first segment's data; fill this in
 * @ah: the address handle to send to; the consumer sets it
 * @hdr_len: bytes of header in front of the data of each segment
 * @data_len: total bytes of data (over all RMPP segments)
 * @seg_count: number of RMPP segments (1 without RMPP)
 * @seg_size: data bytes per segment
 * @timeout_ms: time to wait for the response; 0 when none is expected
 * @retries: how many times to resend on timeout
 * @context: two pointers for the consumer
 */
struct ib_mad_send_buf {
	struct ib_mad_send_buf	*next;
	struct ib_mad_agent	*mad_agent;
	void			*mad;
	struct ib_ah		*ah;
	int			hdr_len, data_len;
	int			seg_count, seg_size;
	int			timeout_ms, retries;
	void			*context[2];
};

/**
 * struct ib_mad_send_wc - the outcome of a send
 * @status: IB_WC_SUCCESS, IB_WC_RESP_TIMEOUT_ERR after the last retry,
 *	IB_WC_WR_FLUSH_ERR when cancelled, or the transport's error
 * @vendor_err: the driver's error detail
 * @send_buf: the buffer
 */
struct ib_mad_send_wc {
	enum ib_wc_status	status;
	u32			vendor_err;
	struct ib_mad_send_buf	*send_buf;
};

/**
 * struct ib_mad_recv_buf - one received MAD segment
 * @list: on the recv_wc's rmpp_list, in segment order
 * @mad: the MAD
 * @grh: the GRH, valid when the completion has IB_WC_GRH
 */
struct ib_mad_recv_buf {
	struct list_head	list;
	struct ib_mad		*mad;
	struct ib_grh		*grh;
};

/**
 * struct ib_mad_recv_wc - a received MAD, possibly reassembled
 * @wc: the completion of its (first) segment
 * @mad_len: header plus all data, in bytes
 * @recv_buf: the first segment
 * @rmpp_list: all the segments
 */
struct ib_mad_recv_wc {
	struct ib_wc		*wc;
	int			mad_len;
	struct ib_mad_recv_buf	recv_buf;
	struct list_head	rmpp_list;
};

/**
 * typedef ib_mad_send_handler - reports the end of a send
 * @agent: the agent that posted it
 * @send_wc: the buffer and its status
 *
 * Called once per posted send buffer, in process context; the consumer
 * frees the buffer here (ib_free_send_mad()) or reposts it.
 */
typedef void (*ib_mad_send_handler)(struct ib_mad_agent *agent,
				    struct ib_mad_send_wc *send_wc);

/**
 * typedef ib_mad_recv_handler - delivers a received MAD
 * @agent: the agent it was dispatched to
 * @request: for a response, the send buffer of the request it answers
 *	(reported to the send handler only after this returns); NULL for an
 *	unsolicited MAD
 * @recv_wc: the MAD; the consumer owns it and releases it with
 *	ib_free_recv_mad()
 */
typedef void (*ib_mad_recv_handler)(struct ib_mad_agent *agent,
				    struct ib_mad_send_buf *request,
				    struct ib_mad_recv_wc *recv_wc);

/**
 * struct ib_mad_agent - a registered MAD consumer
 * @device: its device
 * @port_num: its port
 * @rmpp_version: 0, or the RMPP version the MAD layer runs for it
 * @hi_tid: upper 32 bits of the TIDs this agent owns; the consumer puts it
 *	in the top half of every request's TID so responses find their way
 * @qp: the special QP it sends and receives on
 * @mr: a DMA MR for the consumer's own use
 * @send_handler: see &typedef ib_mad_send_handler
 * @recv_handler: see &typedef ib_mad_recv_handler
 * @context: the consumer's pointer
 */
struct ib_mad_agent {
	struct ib_device	*device;
	u8			port_num, rmpp_version;
	u32			hi_tid;
	struct ib_qp		*qp;
	struct ib_mr		*mr;
	ib_mad_send_handler	send_handler;
	ib_mad_recv_handler	recv_handler;
	void			*context;
};

/**
 * struct ib_mad_reg_req - what an agent serves
 * @mgmt_class: the class
 * @mgmt_class_version: its version
 * @oui: for vendor classes 0x30..0x4f, the vendor's OUI
 * @method_mask: the methods it takes requests for
 *
 * A class/version/method (and OUI) belongs to at most one agent per port
 * and QP.
 */
struct ib_mad_reg_req {
	DECLARE_BITMAP(method_mask, IB_MGMT_MAX_METHODS);
	u8	mgmt_class, mgmt_class_version, oui[3];
};

/* Agents (see mad.c for the kernel-doc of each call). */
struct ib_mad_agent *ib_register_mad_agent(struct ib_device *device,
					   u8 port_num, enum ib_qp_type qp_type,
					   struct ib_mad_reg_req *reg,
					   u8 rmpp_version,
					   ib_mad_send_handler on_send,
					   ib_mad_recv_handler on_recv,
					   void *context);
int ib_unregister_mad_agent(struct ib_mad_agent *agent);

/* Send buffers. */
struct ib_mad_send_buf *ib_create_send_mad(struct ib_mad_agent *agent,
					   u32 remote_qpn, u16 pkey_index,
					   int rmpp_active, int hdr_len,
					   int data_len, gfp_t gfp);
void *ib_get_rmpp_segment(struct ib_mad_send_buf *buf, int seg_num);
int ib_get_mad_data_offset(u8 mgmt_class);
void ib_free_send_mad(struct ib_mad_send_buf *buf);

/* Sending, and changing one's mind. */
int ib_post_send_mad(struct ib_mad_send_buf *buf,
		     struct ib_mad_send_buf **bad_buf);
int ib_modify_mad(struct ib_mad_agent *agent, struct ib_mad_send_buf *buf,
		  u32 timeout_ms);
void ib_cancel_mad(struct ib_mad_agent *agent, struct ib_mad_send_buf *buf);

/* Received MADs. */
void ib_coalesce_recv_mad(struct ib_mad_recv_wc *recv_wc, void *buf);
void ib_free_recv_mad(struct ib_mad_recv_wc *recv_wc);

/**
 * ib_response_mad() - is this MAD a response?
 * @mad: the MAD
 *
 * Return: true for GetResp-style responses (the R bit), TrapRepress and
 * BM responses.
 */
bool ib_response_mad(const struct ib_mad *mad);

/**
 * ib_mad_is_smp_class() - is this a subnet management class?
 * @mgmt_class: the class
 *
 * For the MAD layer and for drivers that look at the MADs process_mad is
 * given.
 *
 * Return: true for LID-routed and directed-route SMPs, the classes that
 * travel on QP0 only.
 */
static inline bool ib_mad_is_smp_class(u8 mgmt_class)
{
	return mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
	       mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

/**
 * ib_is_mad_class_rmpp() - does this class use RMPP?
 * @mgmt_class: the class
 *
 * Return: true for SA, BIS, device admin and the second vendor range.
 */
bool ib_is_mad_class_rmpp(u8 mgmt_class);

#endif /* IB_MAD_H */
