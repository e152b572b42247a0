/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * The user CM ABI of ib_ucm, version 5: what a program writes to and reads
 * from /dev/infiniband/ucmN (Documentation/ucm.md).
 *
 * Every command is one write(): a struct ib_ucm_cmd_hdr, then @in bytes of
 * the command's own structure. A command with an answer names a user buffer
 * in its "response" field, of at least @out bytes, and the kernel copies the
 * answer there; write() returns the number of bytes written. Private data,
 * ARI/info blobs and path records travel through further user pointers. The
 * layouts are the last ones upstream shipped (Linux 5.2) and are fixed byte
 * for byte; the path record is struct ib_user_path_rec of ib_user_sa.h.
 *
 * This header is used by the kernel module and by userspace/ alike.
 */
#ifndef IB_USER_CM_H
#define IB_USER_CM_H

#include <linux/types.h>
#include <rdma/ib_user_sa.h>

#define IB_USER_CM_ABI_VERSION	5

/* Command numbers: the value of ib_ucm_cmd_hdr.cmd. */
enum {
	IB_USER_CM_CMD_CREATE_ID	= 0,
	IB_USER_CM_CMD_DESTROY_ID	= 1,
	IB_USER_CM_CMD_ATTR_ID		= 2,
	IB_USER_CM_CMD_LISTEN		= 3,
	IB_USER_CM_CMD_NOTIFY		= 4,
	IB_USER_CM_CMD_SEND_REQ		= 5,
	IB_USER_CM_CMD_SEND_REP		= 6,
	IB_USER_CM_CMD_SEND_RTU		= 7,
	IB_USER_CM_CMD_SEND_DREQ	= 8,
	IB_USER_CM_CMD_SEND_DREP	= 9,
	IB_USER_CM_CMD_SEND_REJ		= 10,
	IB_USER_CM_CMD_SEND_MRA		= 11,
	IB_USER_CM_CMD_SEND_LAP		= 12,
	IB_USER_CM_CMD_SEND_APR		= 13,
	IB_USER_CM_CMD_SEND_SIDR_REQ	= 14,
	IB_USER_CM_CMD_SEND_SIDR_REP	= 15,
	IB_USER_CM_CMD_EVENT		= 16,
	IB_USER_CM_CMD_INIT_QP_ATTR	= 17,
};

/* Leads every write(): @in and @out are byte counts of payload and answer. */
struct ib_ucm_cmd_hdr {
	__u32 cmd;
	__u16 in;
	__u16 out;
};

/* CREATE_ID: @uid comes back in every event of the new id. */
struct ib_ucm_create_id {
	__u64 uid;
	__u64 response;
};

struct ib_ucm_create_id_resp {
	__u32 id;
};

/* DESTROY_ID: the answer counts the events delivered for the id. */
struct ib_ucm_destroy_id {
	__u64 response;
	__u32 id;
	__u32 reserved;
};

struct ib_ucm_destroy_id_resp {
	__u32 events_reported;
};

/* ATTR_ID: the id's service and communication IDs. */
struct ib_ucm_attr_id {
	__u64 response;
	__u32 id;
	__u32 reserved;
};

struct ib_ucm_attr_id_resp {
	__be64 service_id;
	__be64 service_mask;
	__be32 local_id;
	__be32 remote_id;
};

/* INIT_QP_ATTR: answered with a struct ib_uverbs_qp_attr (144 bytes). */
struct ib_ucm_init_qp_attr {
	__u64 response;
	__u32 id;
	__u32 qp_state;
};

struct ib_ucm_listen {
	__be64 service_id;
	__be64 service_mask;
	__u32 id;
	__u32 reserved;
};

/* NOTIFY: @event is an enum ib_event_type (communication established). */
struct ib_ucm_notify {
	__u32 id;
	__u32 event;
};

/* SEND_RTU, SEND_DREQ, SEND_DREP: private data only. */
struct ib_ucm_private_data {
	__u64 data;
	__u32 id;
	__u8  len;
	__u8  reserved[3];
};

/* SEND_REQ: @primary_path and @alternate_path point at ib_user_path_rec. */
struct ib_ucm_req {
	__u32 id;
	__u32 qpn;
	__u32 qp_type;
	__u32 psn;
	__be64 sid;
	__u64 data;
	__u64 primary_path;
	__u64 alternate_path;
	__u8  len;
	__u8  peer_to_peer;
	__u8  responder_resources;
	__u8  initiator_depth;
	__u8  remote_cm_response_timeout;
	__u8  flow_control;
	__u8  local_cm_response_timeout;
	__u8  retry_count;
	__u8  rnr_retry_count;
	__u8  max_cm_retries;
	__u8  srq;
	__u8  reserved[5];
};

struct ib_ucm_rep {
	__u64 uid;
	__u64 data;
	__u32 id;
	__u32 qpn;
	__u32 psn;
	__u8  len;
	__u8  responder_resources;
	__u8  initiator_depth;
	__u8  target_ack_delay;
	__u8  failover_accepted;
	__u8  flow_control;
	__u8  rnr_retry_count;
	__u8  srq;
	__u8  reserved[4];
};

/* SEND_REJ and SEND_APR: a status, an info blob (ARI) and private data. */
struct ib_ucm_info {
	__u32 id;
	__u32 status;
	__u64 info;
	__u64 data;
	__u8  info_len;
	__u8  data_len;
	__u8  reserved[6];
};

/* SEND_MRA: @timeout is the 5-bit service timeout. */
struct ib_ucm_mra {
	__u64 data;
	__u32 id;
	__u8  len;
	__u8  timeout;
	__u8  reserved[2];
};

/* SEND_LAP: @path points at the alternate ib_user_path_rec. */
struct ib_ucm_lap {
	__u64 path;
	__u64 data;
	__u32 id;
	__u8  len;
	__u8  reserved[3];
};

struct ib_ucm_sidr_req {
	__u32 id;
	__u32 timeout;
	__be64 sid;
	__u64 data;
	__u64 path;
	__u16 reserved_pkey;
	__u8  len;
	__u8  max_cm_retries;
	__u8  reserved[4];
};

struct ib_ucm_sidr_rep {
	__u32 id;
	__u32 qpn;
	__u32 qkey;
	__u32 status;
	__u64 info;
	__u64 data;
	__u8  info_len;
	__u8  data_len;
	__u8  reserved[6];
};

/*
 * EVENT: blocks (unless the file is non-blocking) until an event is queued,
 * then copies a struct ib_ucm_event_resp to @response, the message's private
 * data to @data (at most @data_len bytes) and its ARI or info to @info.
 */
struct ib_ucm_event_get {
	__u64 response;
	__u64 data;
	__u64 info;
	__u8  data_len;
	__u8  info_len;
	__u8  reserved[6];
};

struct ib_ucm_req_event_resp {
	struct ib_user_path_rec primary_path;
	struct ib_user_path_rec alternate_path;
	__be64 remote_ca_guid;
	__u32  remote_qkey;
	__u32  remote_qpn;
	__u32  qp_type;
	__u32  starting_psn;
	__u8   responder_resources;
	__u8   initiator_depth;
	__u8   local_cm_response_timeout;
	__u8   flow_control;
	__u8   remote_cm_response_timeout;
	__u8   retry_count;
	__u8   rnr_retry_count;
	__u8   srq;
	__u8   port;
	__u8   reserved[7];
};

struct ib_ucm_rep_event_resp {
	__be64 remote_ca_guid;
	__u32 remote_qkey;
	__u32 remote_qpn;
	__u32 starting_psn;
	__u8  responder_resources;
	__u8  initiator_depth;
	__u8  target_ack_delay;
	__u8  failover_accepted;
	__u8  flow_control;
	__u8  rnr_retry_count;
	__u8  srq;
	__u8  reserved[5];
};

/* The ARI goes to ib_ucm_event_get.info. */
struct ib_ucm_rej_event_resp {
	__u32 reason;
};

struct ib_ucm_mra_event_resp {
	__u8  timeout;
	__u8  reserved[3];
};

struct ib_ucm_lap_event_resp {
	struct ib_user_path_rec path;
};

/* The additional info goes to ib_ucm_event_get.info. */
struct ib_ucm_apr_event_resp {
	__u32 status;
};

struct ib_ucm_sidr_req_event_resp {
	__u16 pkey;
	__u8  port;
	__u8  reserved;
};

/* The additional info goes to ib_ucm_event_get.info. */
struct ib_ucm_sidr_rep_event_resp {
	__u32 status;
	__u32 qkey;
	__u32 qpn;
};

/* Bits of ib_ucm_event_resp.present: which extra parts were copied. */
#define IB_UCM_PRES_DATA	0x01
#define IB_UCM_PRES_INFO	0x02
#define IB_UCM_PRES_PRIMARY	0x04
#define IB_UCM_PRES_ALTERNATE	0x08

/* @event is an enum ib_cm_event_type; the union member follows from it. */
struct ib_ucm_event_resp {
	__u64 uid;
	__u32 id;
	__u32 event;
	__u32 present;
	__u32 reserved;
	union {
		struct ib_ucm_req_event_resp req_resp;
		struct ib_ucm_rep_event_resp rep_resp;
		struct ib_ucm_rej_event_resp rej_resp;
		struct ib_ucm_mra_event_resp mra_resp;
		struct ib_ucm_lap_event_resp lap_resp;
		struct ib_ucm_apr_event_resp apr_resp;
		struct ib_ucm_sidr_req_event_resp sidr_req_resp;
		struct ib_ucm_sidr_rep_event_resp sidr_rep_resp;
		__u32 send_status;
	} u;
};

#endif /* IB_USER_CM_H */
