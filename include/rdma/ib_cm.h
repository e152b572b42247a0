/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The InfiniBand communication manager (IBA chapter 12): connection
 * identifiers, their event handler, and the calls that send each CM
 * message. The API has the shape of the 2.6.1x kernels.
 *
 * Status (Documentation/cm.md): ib_cm.ko (core/cm.c) implements the
 * connection calls below over per-port CM agents of ib_mad: REQ, REP, RTU,
 * REJ, MRA, DREQ, DREP, establish, init_qp_attr, timewait, stale
 * connections, SIDR_REQ/SIDR_REP, LAP/APR (alternate path loading between
 * peers that support it). Redirect and path migration are not carried out.
 */
#ifndef IB_CM_H
#define IB_CM_H

#include <linux/types.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

/* Class version of the CM MADs (management class IB_MGMT_CLASS_CM). */
#define IB_CM_CLASS_VERSION	2

/* Attribute IDs of the CM messages (IBA 16.7.2 / chapter 12.6). */
enum ib_cm_attr_id {
	IB_CM_ATTR_CLASS_PORT_INFO = 1, IB_CM_ATTR_REQ = 16, IB_CM_ATTR_MRA = 17,
	IB_CM_ATTR_REJ = 18, IB_CM_ATTR_REP = 19, IB_CM_ATTR_RTU = 20,
	IB_CM_ATTR_DREQ = 21, IB_CM_ATTR_DREP = 22, IB_CM_ATTR_SIDR_REQ = 23,
	IB_CM_ATTR_SIDR_REP = 24, IB_CM_ATTR_LAP = 25, IB_CM_ATTR_APR = 26,
};

/* Private data each message carries, in bytes; ARI and info at most. */
enum {
	IB_CM_REQ_PRIVATE_DATA_SIZE = 92, IB_CM_REP_PRIVATE_DATA_SIZE = 196,
	IB_CM_MRA_PRIVATE_DATA_SIZE = 222, IB_CM_REJ_PRIVATE_DATA_SIZE = 148,
	IB_CM_RTU_PRIVATE_DATA_SIZE = 224, IB_CM_DREQ_PRIVATE_DATA_SIZE = 220,
	IB_CM_DREP_PRIVATE_DATA_SIZE = 224, IB_CM_LAP_PRIVATE_DATA_SIZE = 168,
	IB_CM_APR_PRIVATE_DATA_SIZE = 148, IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE = 216,
	IB_CM_SIDR_REP_PRIVATE_DATA_SIZE = 136,
	IB_CM_REJ_ARI_LENGTH = 72, IB_CM_APR_INFO_LENGTH = 72,
	IB_CM_SIDR_REP_INFO_LENGTH = 72,
};

/**
 * enum ib_cm_state - where a connection is (IBA 12.9, the CM state diagrams)
 * @IB_CM_IDLE: no connection; a new or finished cm_id
 * @IB_CM_LISTEN: waiting for REQs (and SIDR_REQs) for a service ID
 * @IB_CM_REQ_SENT: active side, REQ sent, waiting for REP
 * @IB_CM_REQ_RCVD: passive side, REQ handed to the consumer
 * @IB_CM_MRA_REQ_SENT: passive side, MRA sent for the REQ
 * @IB_CM_MRA_REQ_RCVD: active side, the peer MRAed our REQ
 * @IB_CM_REP_SENT: passive side, REP sent, waiting for RTU
 * @IB_CM_REP_RCVD: active side, REP handed to the consumer
 * @IB_CM_MRA_REP_SENT: active side, MRA sent for the REP
 * @IB_CM_MRA_REP_RCVD: passive side, the peer MRAed our REP
 * @IB_CM_ESTABLISHED: connected
 * @IB_CM_DREQ_SENT: DREQ sent, waiting for DREP
 * @IB_CM_DREQ_RCVD: DREQ handed to the consumer, DREP not yet sent
 * @IB_CM_TIMEWAIT: disconnected; the QP number may not be reused yet
 * @IB_CM_SIDR_REQ_SENT: SIDR_REQ sent, waiting for SIDR_REP
 * @IB_CM_SIDR_REQ_RCVD: SIDR_REQ handed to the consumer
 *
 * The values are those of the user CM ABI; do not reorder.
 */
enum ib_cm_state {
	IB_CM_IDLE = 0, IB_CM_LISTEN = 1,
	IB_CM_REQ_SENT = 2, IB_CM_REQ_RCVD = 3,
	IB_CM_MRA_REQ_SENT = 4, IB_CM_MRA_REQ_RCVD = 5,
	IB_CM_REP_SENT = 6, IB_CM_REP_RCVD = 7,
	IB_CM_MRA_REP_SENT = 8, IB_CM_MRA_REP_RCVD = 9,
	IB_CM_ESTABLISHED = 10, IB_CM_DREQ_SENT = 11,
	IB_CM_DREQ_RCVD = 12, IB_CM_TIMEWAIT = 13,
	IB_CM_SIDR_REQ_SENT = 14, IB_CM_SIDR_REQ_RCVD = 15,
	IB_CM_STATE_COUNT
};

/**
 * enum ib_cm_lap_state - alternate path loading, within ESTABLISHED
 * @IB_CM_LAP_IDLE: no LAP exchange under way
 * @IB_CM_LAP_SENT: LAP sent, waiting for APR
 * @IB_CM_LAP_RCVD: LAP handed to the consumer
 * @IB_CM_MRA_LAP_SENT: MRA sent for the LAP
 * @IB_CM_MRA_LAP_RCVD: the peer MRAed our LAP
 */
enum ib_cm_lap_state {
	IB_CM_LAP_IDLE = 0, IB_CM_LAP_SENT = 1,
	IB_CM_LAP_RCVD = 2, IB_CM_MRA_LAP_SENT = 3,
	IB_CM_MRA_LAP_RCVD = 4, IB_CM_LAP_STATE_COUNT,
};

/**
 * enum ib_cm_event_type - what a consumer's handler is told
 * @IB_CM_REQ_ERROR: our REQ was not answered within its retries
 * @IB_CM_REQ_RECEIVED: a REQ for a listened service (new cm_id)
 * @IB_CM_REP_ERROR: our REP was not answered within its retries
 * @IB_CM_REP_RECEIVED: the peer accepted our REQ
 * @IB_CM_RTU_RECEIVED: the active side is ready; connection established
 * @IB_CM_USER_ESTABLISHED: established by ib_cm_establish()
 * @IB_CM_DREQ_ERROR: our DREQ was not answered
 * @IB_CM_DREQ_RECEIVED: the peer disconnects; answer with DREP
 * @IB_CM_DREP_RECEIVED: the peer answered our DREQ
 * @IB_CM_TIMEWAIT_EXIT: timewait is over, the QP may be reused
 * @IB_CM_MRA_RECEIVED: the peer needs more time
 * @IB_CM_REJ_RECEIVED: the peer rejected the connection
 * @IB_CM_LAP_ERROR: our LAP was not answered
 * @IB_CM_LAP_RECEIVED: the peer proposes an alternate path
 * @IB_CM_APR_RECEIVED: the peer answered our LAP
 * @IB_CM_SIDR_REQ_ERROR: our SIDR_REQ was not answered
 * @IB_CM_SIDR_REQ_RECEIVED: a SIDR_REQ for a listened service (new cm_id)
 * @IB_CM_SIDR_REP_RECEIVED: the answer to our SIDR_REQ
 *
 * The values are those of the user CM ABI; do not reorder.
 */
enum ib_cm_event_type {
	IB_CM_REQ_ERROR = 0, IB_CM_REQ_RECEIVED = 1,
	IB_CM_REP_ERROR = 2, IB_CM_REP_RECEIVED = 3,
	IB_CM_RTU_RECEIVED = 4, IB_CM_USER_ESTABLISHED = 5,
	IB_CM_DREQ_ERROR = 6, IB_CM_DREQ_RECEIVED = 7,
	IB_CM_DREP_RECEIVED = 8, IB_CM_TIMEWAIT_EXIT = 9,
	IB_CM_MRA_RECEIVED = 10, IB_CM_REJ_RECEIVED = 11,
	IB_CM_LAP_ERROR = 12, IB_CM_LAP_RECEIVED = 13,
	IB_CM_APR_RECEIVED = 14, IB_CM_SIDR_REQ_ERROR = 15,
	IB_CM_SIDR_REQ_RECEIVED = 16, IB_CM_SIDR_REP_RECEIVED = 17,
	IB_CM_EVENT_COUNT
};

/* Which message a REJ rejects (REJ:MessageRejected, 2 bits). */
enum ib_cm_rej_msg {
	IB_CM_REJ_MSG_REQ	= 0,
	IB_CM_REJ_MSG_REP	= 1,
	IB_CM_REJ_MSG_OTHER	= 2,
};

/* Which message an MRA answers (MRA:MessageMRAed, 2 bits). */
enum ib_cm_mra_msg {
	IB_CM_MRA_MSG_REQ	= 0,
	IB_CM_MRA_MSG_REP	= 1,
	IB_CM_MRA_MSG_LAP	= 2,
};

/*
 * REJ:Reason (IBA table "Reject reason"). Of those we send or read, the ARI
 * of TIMEOUT is a CA GUID, of INVALID_GID the GID, of PORT_CM_REDIRECT a
 * ClassPortInfo.
 */
enum ib_cm_rej_reason {
	IB_CM_REJ_NO_QP = 1, IB_CM_REJ_NO_EEC = 2,
	IB_CM_REJ_NO_RESOURCES = 3, IB_CM_REJ_TIMEOUT = 4,
	IB_CM_REJ_UNSUPPORTED = 5, IB_CM_REJ_INVALID_COMM_ID = 6,
	IB_CM_REJ_INVALID_COMM_INSTANCE = 7, IB_CM_REJ_INVALID_SERVICE_ID = 8,
	IB_CM_REJ_INVALID_TRANSPORT_TYPE = 9, IB_CM_REJ_STALE_CONN = 10,
	IB_CM_REJ_RDC_NOT_EXIST = 11, IB_CM_REJ_INVALID_GID = 12,
	IB_CM_REJ_INVALID_LID = 13, IB_CM_REJ_INVALID_SL = 14,
	IB_CM_REJ_INVALID_TRAFFIC_CLASS = 15, IB_CM_REJ_INVALID_HOP_LIMIT = 16,
	IB_CM_REJ_INVALID_PACKET_RATE = 17, IB_CM_REJ_INVALID_ALT_GID = 18,
	IB_CM_REJ_INVALID_ALT_LID = 19, IB_CM_REJ_INVALID_ALT_SL = 20,
	IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21, IB_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	IB_CM_REJ_INVALID_ALT_PACKET_RATE = 23, IB_CM_REJ_PORT_CM_REDIRECT = 24,
	IB_CM_REJ_PORT_REDIRECT = 25, IB_CM_REJ_INVALID_MTU = 26,
	IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27, IB_CM_REJ_CONSUMER_DEFINED = 28,
	IB_CM_REJ_INVALID_RNR_RETRY = 29, IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	IB_CM_REJ_INVALID_CLASS_VERSION = 31, IB_CM_REJ_INVALID_FLOW_LABEL = 32,
	IB_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
};

/* SIDR_REP:Status. */
enum ib_cm_sidr_status {
	IB_SIDR_SUCCESS = 0, IB_SIDR_UNSUPPORTED = 1, /* no such service ID */
	IB_SIDR_REJECT = 2, IB_SIDR_NO_QP = 3,
	IB_SIDR_REDIRECT = 4, /* info: ClassPortInfo */
	IB_SIDR_UNSUPPORTED_VERSION = 5,
};

/* APR:APStatus. */
enum ib_cm_apr_status {
	IB_CM_APR_SUCCESS = 0, IB_CM_APR_INVALID_COMM_ID = 1,
	IB_CM_APR_UNSUPPORTED = 2, IB_CM_APR_REJECT = 3,
	IB_CM_APR_REDIRECT = 4, IB_CM_APR_IS_CURRENT = 5,
	IB_CM_APR_INVALID_QPN_EECN = 6, IB_CM_APR_INVALID_LID = 7,
	IB_CM_APR_INVALID_GID = 8, IB_CM_APR_INVALID_FLOW_LABEL = 9,
	IB_CM_APR_INVALID_TCLASS = 10, IB_CM_APR_INVALID_HOP_LIMIT = 11,
	IB_CM_APR_INVALID_PACKET_RATE = 12, IB_CM_APR_INVALID_SL = 13,
};

struct ib_cm_id;
struct ib_cm_event;

/*
 * The consumer's event handler. It runs in process context, never from
 * within a call of the consumer's own. Returning non-zero asks the CM to
 * destroy @cm_id (for REQ/SIDR_REQ events: the new id) once it returns;
 * the consumer must not destroy it itself from the handler.
 */
typedef int (*ib_cm_handler)(struct ib_cm_id *cm_id, struct ib_cm_event *event);

/**
 * struct ib_cm_id - a communication identifier
 * @cm_handler: the consumer's event handler
 * @context: the consumer's, passed back untouched
 * @device: the device the id belongs to
 * @service_id: the service listened on or connected to (network order)
 * @service_mask: which bits of @service_id a listen matches on
 * @state: where the connection is
 * @lap_state: where an alternate path exchange is
 * @local_id: our communication ID (network order)
 * @remote_id: the peer's communication ID (network order)
 * @remote_cm_qpn: the QP the peer's CM listens on (1, unless redirected)
 *
 * Fields other than @context are the CM's; consumers read them only.
 */
struct ib_cm_id {
	ib_cm_handler		cm_handler;
	void			*context;
	struct ib_device	*device;
	__be64			service_id, service_mask;
	enum ib_cm_state	state;
	enum ib_cm_lap_state	lap_state;
	__be32			local_id, remote_id;
	u32			remote_cm_qpn;
};

/**
 * struct ib_cm_req_event_param - what a received REQ asks for
 * @listen_id: the listening id the REQ matched
 * @port: the port the REQ arrived on
 * @primary_path: the primary path, as seen from this side
 * @alternate_path: the alternate path, or NULL
 * @remote_ca_guid: the requester's CA GUID
 * @remote_qkey: its Q_Key (UD-like services only)
 * @remote_qpn: its QP number
 * @qp_type: IB_QPT_RC or IB_QPT_UC
 * @starting_psn: its starting PSN
 * @responder_resources: RDMA reads/atomics it will accept
 * @initiator_depth: RDMA reads/atomics it will issue
 * @local_cm_response_timeout: how long it takes to answer (5-bit exponent)
 * @flow_control: whether it generates end-to-end credits
 * @remote_cm_response_timeout: how long it expects us to take
 * @retry_count: transport retries for the QP
 * @rnr_retry_count: RNR NAK retries for the QP
 * @max_cm_retries: CM message retries it uses
 * @srq: whether its QP uses an SRQ
 */
struct ib_cm_req_event_param {
	struct ib_cm_id		*listen_id;
	struct ib_sa_path_rec	*primary_path, *alternate_path;
	__be64			remote_ca_guid;
	u32			remote_qkey, remote_qpn, starting_psn;
	enum ib_qp_type		qp_type;
	u8			port, srq, flow_control;
	u8			responder_resources, initiator_depth;
	u8			local_cm_response_timeout, remote_cm_response_timeout;
	u8			retry_count, rnr_retry_count, max_cm_retries;
};

/**
 * struct ib_cm_rep_event_param - what a received REP accepts
 * @remote_ca_guid: the responder's CA GUID
 * @remote_qkey: its Q_Key
 * @remote_qpn: its QP number
 * @starting_psn: its starting PSN
 * @responder_resources: RDMA reads/atomics it will accept
 * @initiator_depth: RDMA reads/atomics it will issue
 * @target_ack_delay: its CA's ACK delay (5-bit exponent)
 * @failover_accepted: REP:FailoverAccepted
 * @flow_control: whether it generates end-to-end credits
 * @rnr_retry_count: RNR NAK retries for our QP
 * @srq: whether its QP uses an SRQ
 */
struct ib_cm_rep_event_param {
	__be64	remote_ca_guid;
	u32	remote_qkey, remote_qpn, starting_psn;
	u8	responder_resources, initiator_depth, target_ack_delay;
	u8	failover_accepted, flow_control, rnr_retry_count, srq;
};

/**
 * struct ib_cm_rej_event_param - why the peer rejected
 * @reason: &enum ib_cm_rej_reason
 * @ari: additional rejection information, @ari_length bytes
 * @ari_length: up to IB_CM_REJ_ARI_LENGTH
 */
struct ib_cm_rej_event_param {
	enum ib_cm_rej_reason	reason;
	u8			ari_length;
	void			*ari;
};

/**
 * struct ib_cm_mra_event_param - the peer needs more time
 * @service_timeout: how much (5-bit exponent, 4.096 us * 2^t)
 */
struct ib_cm_mra_event_param {
	u8	service_timeout;
};

/**
 * struct ib_cm_lap_event_param - a proposed alternate path
 * @alternate_path: the path, as seen from this side
 */
struct ib_cm_lap_event_param {
	struct ib_sa_path_rec	*alternate_path;
};

/**
 * struct ib_cm_apr_event_param - the answer to our LAP
 * @ap_status: &enum ib_cm_apr_status
 * @apr_info: additional information, @info_len bytes
 * @info_len: up to IB_CM_APR_INFO_LENGTH
 */
struct ib_cm_apr_event_param {
	enum ib_cm_apr_status	ap_status;
	u8			info_len;
	void			*apr_info;
};

/**
 * struct ib_cm_sidr_req_event_param - a received SIDR_REQ
 * @listen_id: the listening id it matched
 * @pkey: the P_Key it asks for
 * @port: the port it arrived on
 */
struct ib_cm_sidr_req_event_param {
	struct ib_cm_id	*listen_id;
	u16		pkey;
	u8		port;
};

/**
 * struct ib_cm_sidr_rep_event_param - the answer to our SIDR_REQ
 * @status: &enum ib_cm_sidr_status
 * @qkey: the service's Q_Key
 * @qpn: the service's QP number
 * @info: additional information, @info_len bytes
 * @info_len: up to IB_CM_SIDR_REP_INFO_LENGTH
 */
struct ib_cm_sidr_rep_event_param {
	enum ib_cm_sidr_status	status;
	u32			qkey, qpn;
	u8			info_len;
	void			*info;
};

/**
 * struct ib_cm_event - one event for a consumer's handler
 * @event: what happened
 * @param: its parameters; the member named after @event
 * @param.req_rcvd: for IB_CM_REQ_RECEIVED
 * @param.rep_rcvd: for IB_CM_REP_RECEIVED
 * @param.rej_rcvd: for IB_CM_REJ_RECEIVED
 * @param.mra_rcvd: for IB_CM_MRA_RECEIVED
 * @param.lap_rcvd: for IB_CM_LAP_RECEIVED
 * @param.apr_rcvd: for IB_CM_APR_RECEIVED
 * @param.sidr_req_rcvd: for IB_CM_SIDR_REQ_RECEIVED
 * @param.sidr_rep_rcvd: for IB_CM_SIDR_REP_RECEIVED
 * @param.send_status: for the *_ERROR events: why the send failed
 * @private_data: the message's private data (its full size), or NULL;
 *	valid only during the handler call
 */
struct ib_cm_event {
	enum ib_cm_event_type event;
	void *private_data;
	union {
		enum ib_wc_status send_status;
		struct ib_cm_req_event_param req_rcvd;
		struct ib_cm_rep_event_param rep_rcvd;
		struct ib_cm_mra_event_param mra_rcvd;
		struct ib_cm_rej_event_param rej_rcvd;
		struct ib_cm_sidr_req_event_param sidr_req_rcvd;
		struct ib_cm_sidr_rep_event_param sidr_rep_rcvd;
		struct ib_cm_lap_event_param lap_rcvd;
		struct ib_cm_apr_event_param apr_rcvd;
	} param;
};

/**
 * struct ib_cm_req_param - what ib_send_cm_req() asks for
 * @primary_path: the primary path (from an SA PathRecord)
 * @alternate_path: an alternate path, or NULL
 * @service_id: the service to connect to (network order)
 * @qp_num: our QP
 * @qp_type: IB_QPT_RC or IB_QPT_UC
 * @starting_psn: our starting PSN (24 bits)
 * @private_data: up to IB_CM_REQ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 * @peer_to_peer: also accept a REQ from the peer (not supported: 0)
 * @responder_resources: RDMA reads/atomics we accept
 * @initiator_depth: RDMA reads/atomics we issue
 * @remote_cm_response_timeout: how long we wait for the peer's CM (5 bits)
 * @flow_control: whether our QP generates end-to-end credits
 * @local_cm_response_timeout: how long our CM takes to answer (5 bits)
 * @retry_count: transport retries (3 bits)
 * @rnr_retry_count: RNR NAK retries (3 bits)
 * @max_cm_retries: CM message retries (4 bits)
 * @srq: whether our QP uses an SRQ
 */
struct ib_cm_req_param {
	struct ib_sa_path_rec	*primary_path, *alternate_path;
	__be64			service_id;
	enum ib_qp_type		qp_type;
	u32			qp_num, starting_psn;
	const void		*private_data;
	u8			private_data_len, peer_to_peer, srq, flow_control;
	u8			responder_resources, initiator_depth;
	u8			remote_cm_response_timeout, local_cm_response_timeout;
	u8			retry_count, rnr_retry_count, max_cm_retries;
};

/**
 * struct ib_cm_rep_param - what ib_send_cm_rep() accepts with
 * @qp_num: our QP
 * @starting_psn: our starting PSN (24 bits)
 * @private_data: up to IB_CM_REP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 * @responder_resources: RDMA reads/atomics we accept
 * @initiator_depth: RDMA reads/atomics we issue
 * @target_ack_delay: our CA's ACK delay (5 bits)
 * @failover_accepted: whether we accept the alternate path of the REQ
 * @flow_control: whether our QP generates end-to-end credits
 * @rnr_retry_count: RNR NAK retries for the peer's QP (3 bits)
 * @srq: whether our QP uses an SRQ
 */
struct ib_cm_rep_param {
	u32		qp_num, starting_psn;
	const void	*private_data;
	u8		private_data_len, srq, flow_control, failover_accepted;
	u8		responder_resources, initiator_depth, target_ack_delay;
	u8		rnr_retry_count;
};

/**
 * struct ib_cm_sidr_req_param - what ib_send_cm_sidr_req() asks for
 * @path: the path to the service's port
 * @service_id: the service (network order)
 * @timeout_ms: how long to wait for each answer
 * @private_data: up to IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 * @max_cm_retries: how many times to resend
 * @pkey: the P_Key the service is asked for
 */
struct ib_cm_sidr_req_param {
	struct ib_sa_path_rec	*path;
	__be64			service_id;
	int			timeout_ms;
	u16			pkey;
	u8			max_cm_retries, private_data_len;
	const void		*private_data;
};

/**
 * struct ib_cm_sidr_rep_param - what ib_send_cm_sidr_rep() answers
 * @qp_num: the service's QP
 * @qkey: its Q_Key
 * @status: &enum ib_cm_sidr_status
 * @info: additional information, or NULL
 * @info_length: up to IB_CM_SIDR_REP_INFO_LENGTH
 * @private_data: up to IB_CM_SIDR_REP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 */
struct ib_cm_sidr_rep_param {
	enum ib_cm_sidr_status	status;
	u32			qp_num, qkey;
	u8			info_length, private_data_len;
	const void		*info, *private_data;
};

/**
 * ib_create_cm_id() - a new communication identifier, in IB_CM_IDLE
 * @device: the device it will use
 * @cm_handler: called for every event of the id
 * @context: handed back in @cm_id->context
 *
 * Return: the id, or an ERR_PTR() (-ENOMEM).
 */
struct ib_cm_id *ib_create_cm_id(struct ib_device *device,
				 ib_cm_handler cm_handler, void *context);

/**
 * ib_destroy_cm_id() - end a communication identifier
 * @cm_id: the id
 *
 * Sends what the state asks for (REJ before establishment, DREQ when
 * established, DREP when a DREQ is pending), waits until no handler of
 * @cm_id runs, and frees it. Must not be called from @cm_id's handler.
 */
void ib_destroy_cm_id(struct ib_cm_id *cm_id);

/**
 * ib_cm_listen() - receive REQs and SIDR_REQs for a service
 * @cm_id: an IB_CM_IDLE id; it moves to IB_CM_LISTEN
 * @service_id: the service (network order)
 * @service_mask: the bits of @service_id to match; 0 means all
 *
 * Return: 0; -EINVAL if @cm_id is not idle; -EBUSY if another listen
 * overlaps it on the same device.
 */
int ib_cm_listen(struct ib_cm_id *cm_id, __be64 service_id,
		 __be64 service_mask);

/**
 * ib_send_cm_req() - send a REQ, the start of a connection
 * @cm_id: an IB_CM_IDLE id
 * @param: what to ask for
 *
 * Return: 0 when the REQ is sent (the id is then IB_CM_REQ_SENT);
 * -EINVAL for a bad parameter or state; another errno if it could not be
 * sent.
 */
int ib_send_cm_req(struct ib_cm_id *cm_id, struct ib_cm_req_param *param);

/**
 * ib_send_cm_rep() - accept a received REQ
 * @cm_id: the id of IB_CM_REQ_RECEIVED, in IB_CM_REQ_RCVD or MRA_REQ_SENT
 * @param: what to accept with
 *
 * Return: 0 (the id is then IB_CM_REP_SENT), -EINVAL, or a send errno.
 */
int ib_send_cm_rep(struct ib_cm_id *cm_id, struct ib_cm_rep_param *param);

/**
 * ib_send_cm_rtu() - tell the passive side the connection is ready
 * @cm_id: an id in IB_CM_REP_RCVD or IB_CM_MRA_REP_SENT
 * @private_data: up to IB_CM_RTU_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_ESTABLISHED), -EINVAL, or a send errno.
 */
int ib_send_cm_rtu(struct ib_cm_id *cm_id, const void *private_data,
		   u8 private_data_len);

/**
 * ib_send_cm_dreq() - start a disconnection
 * @cm_id: an IB_CM_ESTABLISHED id
 * @private_data: up to IB_CM_DREQ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_DREQ_SENT), -EINVAL, or a send errno.
 */
int ib_send_cm_dreq(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len);

/**
 * ib_send_cm_drep() - answer a received DREQ
 * @cm_id: an IB_CM_DREQ_RCVD id
 * @private_data: up to IB_CM_DREP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_TIMEWAIT), -EINVAL, or a send errno.
 */
int ib_send_cm_drep(struct ib_cm_id *cm_id, const void *private_data,
		    u8 private_data_len);

/**
 * ib_cm_establish() - the connection is up before an RTU arrived
 * @cm_id: an id in IB_CM_REP_SENT or IB_CM_MRA_REP_RCVD
 *
 * For a passive side whose QP saw the first data packet (the
 * communication-established affiliated event) before the RTU.
 *
 * Return: 0, or -EINVAL in any other state.
 */
int ib_cm_establish(struct ib_cm_id *cm_id);

/**
 * ib_cm_notify() - tell the CM of an affiliated event of the connection's QP
 * @cm_id: the connection's id
 * @event: IB_EVENT_COMM_EST (as ib_cm_establish()) or IB_EVENT_PATH_MIG
 *
 * IB_EVENT_PATH_MIG: the QP migrated to the alternate path a LAP/APR
 * exchange gave it. Legal in IB_CM_ESTABLISHED with lap_state
 * IB_CM_LAP_IDLE and an alternate path; that path becomes the primary
 * one of ib_cm_init_qp_attr() and the connection keeps no alternate
 * path until a new LAP exchange gives it one.
 *
 * Context: any; does not sleep.
 * Return: 0; -EINVAL for another event, or a state or connection in which
 * the event means nothing.
 */
int ib_cm_notify(struct ib_cm_id *cm_id, enum ib_event_type event);

/**
 * ib_send_cm_rej() - reject a connection request or reply
 * @cm_id: an id with a REQ or REP pending
 * @reason: &enum ib_cm_rej_reason
 * @ari: additional rejection information, or NULL
 * @ari_length: up to IB_CM_REJ_ARI_LENGTH
 * @private_data: up to IB_CM_REJ_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0 (the id is then IB_CM_IDLE or IB_CM_TIMEWAIT), -EINVAL, or a
 * send errno.
 */
int ib_send_cm_rej(struct ib_cm_id *cm_id, enum ib_cm_rej_reason reason,
		   const void *ari, u8 ari_length,
		   const void *private_data, u8 private_data_len);

/**
 * ib_send_cm_mra() - ask the peer for more time
 * @cm_id: an id in IB_CM_REQ_RCVD, IB_CM_REP_RCVD or with a LAP received
 * @service_timeout: how long we need (5-bit exponent, 4.096 us * 2^t)
 * @private_data: up to IB_CM_MRA_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0, -EINVAL, or a send errno.
 */
int ib_send_cm_mra(struct ib_cm_id *cm_id, u8 service_timeout,
		   const void *private_data, u8 private_data_len);

/**
 * ib_send_cm_lap() - propose an alternate path
 * @cm_id: an IB_CM_ESTABLISHED id with no LAP exchange under way
 * @alternate_path: the path, as this side sees it
 * @private_data: up to IB_CM_LAP_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * The answer comes as IB_CM_APR_RECEIVED, none as IB_CM_LAP_ERROR.
 * Upstream 6.1 peers never answer a LAP (Documentation/cm.md).
 *
 * Return: 0, -EINVAL, or a send errno.
 */
int ib_send_cm_lap(struct ib_cm_id *cm_id,
		   struct ib_sa_path_rec *alternate_path,
		   const void *private_data, u8 private_data_len);

/**
 * ib_send_cm_apr() - answer a received LAP
 * @cm_id: an id with a LAP received
 * @status: &enum ib_cm_apr_status
 * @info: additional information, or NULL
 * @info_length: up to IB_CM_APR_INFO_LENGTH
 * @private_data: up to IB_CM_APR_PRIVATE_DATA_SIZE bytes, or NULL
 * @private_data_len: its length
 *
 * Return: 0, -EINVAL, or a send errno.
 */
int ib_send_cm_apr(struct ib_cm_id *cm_id, enum ib_cm_apr_status status,
		   const void *info, u8 info_length,
		   const void *private_data, u8 private_data_len);

/**
 * ib_send_cm_sidr_req() - resolve a service ID to a UD QP
 * @cm_id: an IB_CM_IDLE id
 * @param: the service and the path to it
 *
 * Return: 0 (the id is then IB_CM_SIDR_REQ_SENT), -EINVAL, or a send errno.
 */
int ib_send_cm_sidr_req(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_req_param *param);

/**
 * ib_send_cm_sidr_rep() - answer a received SIDR_REQ
 * @cm_id: the id of IB_CM_SIDR_REQ_RECEIVED
 * @param: the answer
 *
 * Return: 0 (the id is then IB_CM_IDLE), -EINVAL, or a send errno.
 */
int ib_send_cm_sidr_rep(struct ib_cm_id *cm_id,
			struct ib_cm_sidr_rep_param *param);

/**
 * ib_cm_init_qp_attr() - QP attributes for the consumer's next transition
 * @cm_id: a connecting or connected id
 * @qp_attr: in: qp_state, the state the consumer moves the QP to
 *	(IB_QPS_INIT, IB_QPS_RTR or IB_QPS_RTS); out: the attributes
 * @qp_attr_mask: out: which attributes were set, for ib_modify_qp()
 *
 * After a LAP exchange, IB_QPS_RTS gives the RTS to RTS transition that
 * loads the alternate path (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE, REARM):
 * on the LAP's receiver from IB_CM_LAP_RECEIVED on, on its sender once the
 * APR accepted the path.
 *
 * Return: 0, or -EINVAL when the id's state gives no attributes for that
 * transition.
 */
int ib_cm_init_qp_attr(struct ib_cm_id *cm_id, struct ib_qp_attr *qp_attr,
		       int *qp_attr_mask);

#endif /* IB_CM_H */
