/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The CM connection state machine (IBA 12.9) as pure logic: what an input
 * (a consumer call, a received message, a timer) does in a state. The
 * caller holds whatever lock guards the cm_id and carries out the actions
 * the step names; nothing here sends, sleeps or keeps state.
 */
#ifndef IB_CM_STATE_H
#define IB_CM_STATE_H

#include <linux/bits.h>
#include <linux/types.h>

#include <rdma/ib_cm.h>

enum cm_input {
	/* the consumer's calls */
	CM_IN_LISTEN, CM_IN_SEND_REQ, CM_IN_SEND_REP, CM_IN_SEND_RTU,
	CM_IN_SEND_REJ, CM_IN_SEND_MRA, CM_IN_SEND_DREQ, CM_IN_SEND_DREP,
	CM_IN_ESTABLISH, CM_IN_SEND_SIDR_REQ, CM_IN_SEND_SIDR_REP,
	CM_IN_SEND_LAP, CM_IN_SEND_APR, CM_IN_DESTROY,
	/*
	 * messages received for the id (MRA split by MessageMRAed; a REP
	 * naming a peer QP or comm ID another connection holds apart)
	 */
	CM_IN_RECV_REQ, CM_IN_RECV_MRA_REQ, CM_IN_RECV_MRA_REP,
	CM_IN_RECV_MRA_LAP, CM_IN_RECV_REP, CM_IN_RECV_REP_STALE,
	CM_IN_RECV_RTU, CM_IN_RECV_REJ,
	CM_IN_RECV_REJ_STALE, CM_IN_RECV_DREQ, CM_IN_RECV_DREP,
	CM_IN_RECV_SIDR_REQ, CM_IN_RECV_SIDR_REP, CM_IN_RECV_LAP,
	CM_IN_RECV_APR,
	/* timers: retries of the outstanding message spent; timewait over */
	CM_IN_TIMEOUT, CM_IN_TIMEWAIT_DONE,
	/* a new REQ names this connection's remote QPN: it is stale */
	CM_IN_STALE,
	CM_IN_COUNT
};

#define CM_IN_FIRST_RECV	CM_IN_RECV_REQ

/* What the caller does for a step, besides moving to the next state. */
enum cm_action {
	CM_DO_SEND		= BIT(0),  /* send the consumer's message */
	CM_DO_ARM		= BIT(1),  /* retransmit it until answered */
	CM_DO_CANCEL		= BIT(2),  /* stop retransmitting */
	CM_DO_MRA_WAIT		= BIT(3),  /* rearm for the MRA's service time */
	CM_DO_RESEND		= BIT(4),  /* answer again with the stored message */
	CM_DO_SEND_REJ		= BIT(5),  /* the CM sends REJ (step's reason) */
	CM_DO_SEND_DREQ		= BIT(6),  /* the CM sends DREQ */
	CM_DO_SEND_DREP		= BIT(7),  /* the CM sends DREP */
	CM_DO_SIDR_REJECT	= BIT(8),  /* the CM sends SIDR_REP REJECT */
	CM_DO_TIMEWAIT		= BIT(9),  /* start the timewait timer */
	CM_DO_SPAWN		= BIT(10), /* a new id takes the next state */
	CM_DO_DROP		= BIT(11), /* ignore the message */
};

#define CM_NO_EVENT	(-1)

/*
 * struct cm_step - the outcome of one input
 * @next: the id's next state (with CM_DO_SPAWN: the new id's; the
 *	listener stays in IB_CM_LISTEN)
 * @next_lap: its next LAP state
 * @event: &enum ib_cm_event_type for the consumer, or CM_NO_EVENT
 * @actions: &enum cm_action bits
 * @rej_reason: with CM_DO_SEND_REJ, the reason
 */
struct cm_step {
	enum ib_cm_state	next;
	enum ib_cm_lap_state	next_lap;
	int			event;
	unsigned int		actions;
	u8			rej_reason;
};

int cm_step(enum ib_cm_state state, enum ib_cm_lap_state lap,
	    enum cm_input in, struct cm_step *step);
bool cm_input_is_call(enum cm_input in);

const char *cm_state_name(enum ib_cm_state state);
const char *cm_lap_state_name(enum ib_cm_lap_state lap);
const char *cm_input_name(enum cm_input in);
const char *cm_event_name(enum ib_cm_event_type event);

/* What to do with a REQ, given what the CM found for it (IBA 12.9.8). */
enum cm_req_verdict {
	CM_REQ_NEW,		/* hand it to the listener (CM_IN_RECV_REQ) */
	CM_REQ_DUPLICATE,	/* feed CM_IN_RECV_REQ to the id it repeats */
	CM_REQ_STALE,		/* REJ STALE_CONN, CM_IN_STALE to the old id */
	CM_REQ_NO_LISTENER,	/* REJ INVALID_SERVICE_ID */
};

/*
 * struct cm_req_match - what the lookups found for a received REQ
 * @dup_comm_id: an id has the same (remote comm ID, remote CA GUID)
 * @dup_qpn: another id is connected to the same (remote QPN, CA GUID)
 * @listener: a listen matches the service ID
 */
struct cm_req_match {
	bool dup_comm_id, dup_qpn, listener;
};

enum cm_req_verdict cm_classify_req(const struct cm_req_match *match,
				    u8 *rej_reason);

/* Timeouts: the IBA's 5-bit exponents, 4.096 us * 2^t. */
u64 cm_timeout_ns(u8 exp);
unsigned long cm_timeout_ms(u8 exp);
unsigned long cm_req_timeout_ms(u8 packet_life_time, u8 remote_cm_response_timeout);
unsigned long cm_mra_timeout_ms(u8 service_timeout, u8 packet_life_time);

/*
 * struct cm_retry - the retransmission of one outstanding message
 * @base_ms: the wait for an answer
 * @wait_ms: the current wait (@base_ms, or an MRA's longer one)
 * @retries_left: resends still allowed
 */
struct cm_retry {
	unsigned long	base_ms, wait_ms;
	u8		retries_left;
};

enum cm_retry_verdict {
	CM_RETRY_RESEND,	/* send it again, wait wait_ms */
	CM_RETRY_GIVE_UP,	/* feed CM_IN_TIMEOUT */
};

void cm_retry_start(struct cm_retry *r, unsigned long timeout_ms, u8 max_retries);
void cm_retry_mra(struct cm_retry *r, unsigned long mra_ms);
enum cm_retry_verdict cm_retry_expired(struct cm_retry *r);

/*
 * struct cm_qp_params - what the CM keeps of a connection for the
 * consumer's QP transitions (ib_cm_init_qp_attr())
 * @qp_type: IB_QPT_RC or IB_QPT_UC
 * @port_num, @pkey_index: where the QP lives
 * @ah_attr: the primary path as an address vector
 * @path_mtu: the path's MTU
 * @remote_qpn: the peer's QP
 * @sq_psn: our starting PSN; @rq_psn: the peer's
 * @responder_resources: RDMA reads/atomics our QP answers at once
 * @initiator_depth: RDMA reads/atomics our QP has outstanding at once
 * @local_ack_timeout: the transport timeout exponent of our QP
 * @retry_count, @rnr_retry_count: transport and RNR retries of our QP
 * @min_rnr_timer: the RNR NAK timer our QP advertises
 * @alt_valid: a LAP exchange gave the connection an alternate path (the
 *	fields below), which an RTS to RTS transition loads
 * @alt_ah_attr: the alternate path as an address vector
 * @alt_port_num, @alt_pkey_index: where it leaves our CA
 * @alt_timeout: the transport timeout exponent on it
 */
struct cm_qp_params {
	enum ib_qp_type		qp_type;
	u8			port_num;
	u16			pkey_index;
	struct ib_ah_attr	ah_attr;
	enum ib_mtu		path_mtu;
	u32			remote_qpn, sq_psn, rq_psn;
	u8			responder_resources, initiator_depth;
	u8			local_ack_timeout, retry_count, rnr_retry_count;
	u8			min_rnr_timer;
	bool			alt_valid;
	struct ib_ah_attr	alt_ah_attr;
	u8			alt_port_num, alt_timeout;
	u16			alt_pkey_index;
};

int cm_qp_attr(enum ib_cm_state state, const struct cm_qp_params *p,
	       struct ib_qp_attr *attr, int *mask);

#endif /* IB_CM_STATE_H */
