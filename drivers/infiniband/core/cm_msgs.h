/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The CM messages (IBA 12.6) unpacked: one structure per message, with a
 * member per field, in host-independent form (big-endian integers, u8 for
 * fields of up to 8 bits). cm_msgs.c holds the tables that map them to
 * and from the 232 bytes that follow the MAD header.
 */
#ifndef IB_CM_MSGS_H
#define IB_CM_MSGS_H

#include <linux/types.h>

#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

/*
 * struct cm_msg_path - a path as REQ (primary, alternate) and LAP carry it
 * @local_lid, @remote_lid: from the sender's point of view
 * @local_gid, @remote_gid: likewise
 * @flow_label: 20 bits
 * @packet_rate: 6 bits (&enum ib_rate)
 * @traffic_class, @hop_limit: as in the GRH
 * @sl: 4 bits
 * @subnet_local: 1 bit: the peer is in the sender's subnet
 * @local_ack_timeout: 5 bits, the QP's transport timeout exponent
 */
struct cm_msg_path {
	__be16		local_lid, remote_lid;
	union ib_gid	local_gid, remote_gid;
	__be32		flow_label;
	u8		packet_rate, traffic_class, hop_limit, sl;
	u8		subnet_local, local_ack_timeout;
};

/* REQ (attribute 0x0010). */
struct cm_req {
	__be32	local_comm_id;
	__be32	vendor_id;			/* 24 bits */
	__be64	service_id;
	__be64	local_ca_guid;
	__be32	local_qkey;
	__be32	local_qpn;			/* 24 bits */
	u8	responder_resources;
	__be32	local_eecn;			/* 24 bits */
	u8	initiator_depth;
	__be32	remote_eecn;			/* 24 bits */
	u8	remote_cm_response_timeout;	/* 5 bits */
	u8	transport_type;			/* 2 bits: 0 RC, 1 UC, 3 RD */
	u8	end_to_end_flow_control;	/* 1 bit */
	__be32	starting_psn;			/* 24 bits */
	u8	local_cm_response_timeout;	/* 5 bits */
	u8	retry_count;			/* 3 bits */
	__be16	pkey;
	u8	path_mtu;			/* 4 bits, &enum ib_mtu */
	u8	rdc_exists;			/* 1 bit */
	u8	rnr_retry_count;		/* 3 bits */
	u8	max_cm_retries;			/* 4 bits */
	u8	srq;				/* 1 bit */
	u8	extended_transport;		/* 3 bits */
	struct cm_msg_path primary, alternate;
	u8	private_data[IB_CM_REQ_PRIVATE_DATA_SIZE];
};

/* MRA (0x0011). */
struct cm_mra {
	__be32	local_comm_id, remote_comm_id;
	u8	message_mraed;			/* 2 bits, &enum ib_cm_mra_msg */
	u8	service_timeout;		/* 5 bits */
	u8	private_data[IB_CM_MRA_PRIVATE_DATA_SIZE];
};

/* REJ (0x0012). */
struct cm_rej {
	__be32	local_comm_id, remote_comm_id;
	u8	message_rejected;		/* 2 bits, &enum ib_cm_rej_msg */
	u8	ari_length;			/* 7 bits */
	__be16	reason;
	u8	ari[IB_CM_REJ_ARI_LENGTH];
	u8	private_data[IB_CM_REJ_PRIVATE_DATA_SIZE];
};

/* REP (0x0013). */
struct cm_rep {
	__be32	local_comm_id, remote_comm_id;
	__be32	local_qkey;
	__be32	local_qpn;			/* 24 bits */
	__be32	local_eecn;			/* 24 bits */
	__be32	starting_psn;			/* 24 bits */
	u8	responder_resources, initiator_depth;
	u8	target_ack_delay;		/* 5 bits */
	u8	failover_accepted;		/* 2 bits */
	u8	end_to_end_flow_control;	/* 1 bit */
	u8	rnr_retry_count;		/* 3 bits */
	u8	srq;				/* 1 bit */
	__be64	local_ca_guid;
	u8	private_data[IB_CM_REP_PRIVATE_DATA_SIZE];
};

/* RTU (0x0014). */
struct cm_rtu {
	__be32	local_comm_id, remote_comm_id;
	u8	private_data[IB_CM_RTU_PRIVATE_DATA_SIZE];
};

/* DREQ (0x0015). */
struct cm_dreq {
	__be32	local_comm_id, remote_comm_id;
	__be32	remote_qpn_eecn;		/* 24 bits */
	u8	private_data[IB_CM_DREQ_PRIVATE_DATA_SIZE];
};

/* DREP (0x0016). */
struct cm_drep {
	__be32	local_comm_id, remote_comm_id;
	u8	private_data[IB_CM_DREP_PRIVATE_DATA_SIZE];
};

/* SIDR_REQ (0x0017). */
struct cm_sidr_req {
	__be32	request_id;
	__be16	pkey;
	__be64	service_id;
	u8	private_data[IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE];
};

/* SIDR_REP (0x0018). */
struct cm_sidr_rep {
	__be32	request_id;
	u8	status;				/* &enum ib_cm_sidr_status */
	u8	info_length;
	__be32	qpn;				/* 24 bits */
	__be64	service_id;
	__be32	qkey;
	u8	info[IB_CM_SIDR_REP_INFO_LENGTH];
	u8	private_data[IB_CM_SIDR_REP_PRIVATE_DATA_SIZE];
};

/* LAP (0x0019). */
struct cm_lap {
	__be32	local_comm_id, remote_comm_id;
	__be32	remote_qpn_eecn;		/* 24 bits */
	u8	remote_cm_response_timeout;	/* 5 bits */
	struct cm_msg_path alternate;
	u8	private_data[IB_CM_LAP_PRIVATE_DATA_SIZE];
};

/* APR (0x001A). */
struct cm_apr {
	__be32	local_comm_id, remote_comm_id;
	u8	info_length;
	u8	ap_status;			/* &enum ib_cm_apr_status */
	u8	info[IB_CM_APR_INFO_LENGTH];
	u8	private_data[IB_CM_APR_PRIVATE_DATA_SIZE];
};

/*
 * ClassPortInfo (IBA 13.4.8.1) as the CM uses it: a REJ with reason
 * PORT_CM_REDIRECT or a SIDR_REP with status REDIRECT carries one in its
 * ARI / additional information, naming where to send the CM MADs instead.
 */
struct cm_class_port_info {
	u8	base_version, class_version;
	__be16	capability_mask;
	__be32	capability_mask2;		/* 27 bits */
	u8	resp_time_value;		/* 5 bits */
	union ib_gid redirect_gid;
	u8	redirect_tc;
	u8	redirect_sl;			/* 4 bits */
	__be32	redirect_fl;			/* 20 bits */
	__be16	redirect_lid, redirect_pkey;
	__be32	redirect_qp;			/* 24 bits */
	__be32	redirect_qkey;
	union ib_gid trap_gid;
	u8	trap_tc;
	u8	trap_sl;			/* 4 bits */
	__be32	trap_fl;			/* 20 bits */
	__be16	trap_lid, trap_pkey;
	u8	trap_hl;
	__be32	trap_qp;			/* 24 bits */
	__be32	trap_qkey;
};

#define CM_CLASS_PORT_INFO_BYTES	72

/* The messages, in attribute ID order; the index of the cm_msg_desc table. */
enum cm_msg_kind {
	CM_MSG_CLASS_PORT_INFO,
	CM_MSG_REQ,
	CM_MSG_MRA,
	CM_MSG_REJ,
	CM_MSG_REP,
	CM_MSG_RTU,
	CM_MSG_DREQ,
	CM_MSG_DREP,
	CM_MSG_SIDR_REQ,
	CM_MSG_SIDR_REP,
	CM_MSG_LAP,
	CM_MSG_APR,
	CM_MSG_KIND_COUNT
};

int cm_msg_kind_of_attr(u16 attr_id);
u16 cm_msg_attr_id(enum cm_msg_kind kind);
const char *cm_msg_name(enum cm_msg_kind kind);
size_t cm_msg_struct_size(enum cm_msg_kind kind);
size_t cm_msg_wire_size(enum cm_msg_kind kind);
int cm_msg_pack(enum cm_msg_kind kind, const void *msg, void *buf);
int cm_msg_unpack(enum cm_msg_kind kind, const void *buf, void *msg);
void cm_format_mad_hdr(struct ib_mad_hdr *hdr, enum cm_msg_kind kind, u64 tid);
int cm_check_mad_hdr(const struct ib_mad_hdr *hdr);
const struct ib_field *cm_msg_rows(enum cm_msg_kind kind, int *nrows);

u8 cm_ack_timeout(u8 ca_ack_delay, u8 packet_life_time);
int cm_format_req(struct cm_req *m, const struct ib_cm_req_param *p,
		  __be32 local_comm_id, __be64 local_ca_guid, u8 ca_ack_delay);
int cm_format_lap(struct cm_lap *m, __be32 local_comm_id, __be32 remote_comm_id,
		  u32 remote_qpn, u8 remote_cm_response_timeout,
		  const struct ib_sa_path_rec *alt, u8 ca_ack_delay,
		  const void *pdata, u8 pdata_len);

#endif /* IB_CM_MSGS_H */
