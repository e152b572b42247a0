// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The CM connection state machine as tables.
 *
 * cm_conn_rows[state][input] says what an input does to a connection
 * (IBA 12.9: the active, passive and SIDR state diagrams), and
 * cm_lap_rows[lap state][input] what it does to an alternate-path
 * exchange within ESTABLISHED. An input without a row is illegal there:
 * a consumer call fails with -EINVAL and changes nothing, a received
 * message or a timer is dropped. The rules where the IBA leaves a choice
 * follow what 6.1's ib_cm does on the wire (../shared/facts/
 * wave2-protocols.md §2.2), so that its peers see what they expect.
 *
 * Also here: the REQ classifier (new, duplicate, stale, no listener), the
 * IBA timeout formula and the retransmission count. All of it is pure.
 */

#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/time64.h>

#include "cm_state.h"

/*
 * struct cm_row - one cell of a transition table
 * @ok: the input is legal in the state
 * @next: the next state (of the connection or of the LAP exchange)
 * @event: the consumer's event, or CM_NO_EVENT
 * @actions: &enum cm_action bits
 * @rej: the reason of a REJ the CM sends itself
 */
struct cm_row {
	u8	ok, next;
	s8	event;
	u8	rej;
	u16	actions;
};

#define CM_T(st, in, nx, ev, act)					\
	[IB_CM_##st][CM_IN_##in] = {					\
		.ok = 1, .next = IB_CM_##nx, .event = (ev), .actions = (act) }

/* A row in which the CM sends a REJ with reason @why. */
#define CM_TR(st, in, nx, ev, act, why)					\
	[IB_CM_##st][CM_IN_##in] = {					\
		.ok = 1, .next = IB_CM_##nx, .event = (ev),		\
		.actions = (act) | CM_DO_SEND_REJ, .rej = IB_CM_REJ_##why }

#define NOEV	CM_NO_EVENT
#define EV(e)	IB_CM_##e

static const struct cm_row cm_conn_rows[IB_CM_STATE_COUNT][CM_IN_COUNT] = {
	CM_T(IDLE, LISTEN, LISTEN, NOEV, 0),
	CM_T(IDLE, SEND_REQ, REQ_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(IDLE, SEND_SIDR_REQ, SIDR_REQ_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(IDLE, DESTROY, IDLE, NOEV, 0),

	/* A REQ or SIDR_REQ makes a new id; the listener stays. */
	CM_T(LISTEN, RECV_REQ, REQ_RCVD, EV(REQ_RECEIVED), CM_DO_SPAWN),
	CM_T(LISTEN, RECV_SIDR_REQ, SIDR_REQ_RCVD, EV(SIDR_REQ_RECEIVED), CM_DO_SPAWN),
	CM_T(LISTEN, DESTROY, IDLE, NOEV, 0),

	/* Active side, waiting for the REP. */
	CM_T(REQ_SENT, RECV_REP, REP_RCVD, EV(REP_RECEIVED), CM_DO_CANCEL),
	CM_T(REQ_SENT, RECV_MRA_REQ, MRA_REQ_RCVD, EV(MRA_RECEIVED), CM_DO_MRA_WAIT),
	/*
	 * IBA 12.9.8.3.1: a REP from a QP (or comm ID) of the peer that another
	 * connection of ours holds: abort with REJ STALE_CONN. The consumer
	 * gets that REJ as IB_CM_REJ_RECEIVED and the id waits out timewait,
	 * where a 6.1 active id ends one REQ timeout later (the peer's
	 * timewait answers its resent REQ with REJ STALE_CONN).
	 */
	CM_TR(REQ_SENT, RECV_REP_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	      CM_DO_CANCEL | CM_DO_TIMEWAIT, STALE_CONN),
	CM_T(REQ_SENT, RECV_REJ, IDLE, EV(REJ_RECEIVED), CM_DO_CANCEL),
	CM_T(REQ_SENT, RECV_REJ_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	     CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_TR(REQ_SENT, TIMEOUT, IDLE, EV(REQ_ERROR), 0, TIMEOUT),
	CM_TR(REQ_SENT, DESTROY, IDLE, NOEV, CM_DO_CANCEL, TIMEOUT),

	CM_T(MRA_REQ_RCVD, RECV_REP, REP_RCVD, EV(REP_RECEIVED), CM_DO_CANCEL),
	CM_T(MRA_REQ_RCVD, RECV_MRA_REQ, MRA_REQ_RCVD, NOEV, CM_DO_MRA_WAIT),
	CM_TR(MRA_REQ_RCVD, RECV_REP_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	      CM_DO_CANCEL | CM_DO_TIMEWAIT, STALE_CONN),
	CM_T(MRA_REQ_RCVD, RECV_REJ, IDLE, EV(REJ_RECEIVED), CM_DO_CANCEL),
	CM_T(MRA_REQ_RCVD, RECV_REJ_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	     CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_TR(MRA_REQ_RCVD, TIMEOUT, IDLE, EV(REQ_ERROR), 0, TIMEOUT),
	CM_TR(MRA_REQ_RCVD, DESTROY, IDLE, NOEV, CM_DO_CANCEL, TIMEOUT),

	/* Passive side, the REQ with the consumer. */
	CM_T(REQ_RCVD, SEND_REP, REP_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(REQ_RCVD, SEND_MRA, MRA_REQ_SENT, NOEV, CM_DO_SEND),
	CM_T(REQ_RCVD, SEND_REJ, IDLE, NOEV, CM_DO_SEND),
	CM_T(REQ_RCVD, RECV_REQ, REQ_RCVD, NOEV, CM_DO_DROP),
	CM_T(REQ_RCVD, RECV_REJ, IDLE, EV(REJ_RECEIVED), 0),
	CM_TR(REQ_RCVD, DESTROY, IDLE, NOEV, 0, CONSUMER_DEFINED),

	CM_T(MRA_REQ_SENT, SEND_REP, REP_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(MRA_REQ_SENT, SEND_REJ, IDLE, NOEV, CM_DO_SEND),
	CM_T(MRA_REQ_SENT, RECV_REQ, MRA_REQ_SENT, NOEV, CM_DO_RESEND),
	CM_T(MRA_REQ_SENT, RECV_REJ, IDLE, EV(REJ_RECEIVED), 0),
	CM_TR(MRA_REQ_SENT, DESTROY, IDLE, NOEV, 0, CONSUMER_DEFINED),

	/* Passive side, waiting for the RTU (or the first packet). */
	CM_T(REP_SENT, RECV_RTU, ESTABLISHED, EV(RTU_RECEIVED), CM_DO_CANCEL),
	CM_T(REP_SENT, ESTABLISH, ESTABLISHED, EV(USER_ESTABLISHED), CM_DO_CANCEL),
	CM_T(REP_SENT, RECV_MRA_REP, MRA_REP_RCVD, EV(MRA_RECEIVED), CM_DO_MRA_WAIT),
	CM_T(REP_SENT, RECV_REQ, REP_SENT, NOEV, CM_DO_RESEND),
	CM_T(REP_SENT, RECV_REJ, IDLE, EV(REJ_RECEIVED), CM_DO_CANCEL),
	CM_T(REP_SENT, RECV_REJ_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	     CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_T(REP_SENT, SEND_REJ, IDLE, NOEV, CM_DO_SEND | CM_DO_CANCEL),
	CM_TR(REP_SENT, TIMEOUT, IDLE, EV(REP_ERROR), 0, TIMEOUT),
	CM_TR(REP_SENT, DESTROY, IDLE, NOEV, CM_DO_CANCEL, CONSUMER_DEFINED),

	CM_T(MRA_REP_RCVD, RECV_RTU, ESTABLISHED, EV(RTU_RECEIVED), CM_DO_CANCEL),
	CM_T(MRA_REP_RCVD, ESTABLISH, ESTABLISHED, EV(USER_ESTABLISHED), CM_DO_CANCEL),
	CM_T(MRA_REP_RCVD, RECV_MRA_REP, MRA_REP_RCVD, NOEV, CM_DO_MRA_WAIT),
	CM_T(MRA_REP_RCVD, RECV_REQ, MRA_REP_RCVD, NOEV, CM_DO_RESEND),
	CM_T(MRA_REP_RCVD, RECV_REJ, IDLE, EV(REJ_RECEIVED), CM_DO_CANCEL),
	CM_T(MRA_REP_RCVD, RECV_REJ_STALE, TIMEWAIT, EV(REJ_RECEIVED),
	     CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_T(MRA_REP_RCVD, SEND_REJ, IDLE, NOEV, CM_DO_SEND | CM_DO_CANCEL),
	CM_TR(MRA_REP_RCVD, TIMEOUT, IDLE, EV(REP_ERROR), 0, TIMEOUT),
	CM_TR(MRA_REP_RCVD, DESTROY, IDLE, NOEV, CM_DO_CANCEL, CONSUMER_DEFINED),

	/* Active side, the REP with the consumer; its QP may be RTR. */
	CM_T(REP_RCVD, SEND_RTU, ESTABLISHED, NOEV, CM_DO_SEND),
	CM_T(REP_RCVD, SEND_MRA, MRA_REP_SENT, NOEV, CM_DO_SEND),
	CM_T(REP_RCVD, SEND_REJ, IDLE, NOEV, CM_DO_SEND),
	CM_T(REP_RCVD, RECV_REP, REP_RCVD, NOEV, CM_DO_DROP),
	CM_T(REP_RCVD, RECV_REJ, TIMEWAIT, EV(REJ_RECEIVED), CM_DO_TIMEWAIT),
	CM_TR(REP_RCVD, DESTROY, IDLE, NOEV, 0, CONSUMER_DEFINED),

	CM_T(MRA_REP_SENT, SEND_RTU, ESTABLISHED, NOEV, CM_DO_SEND),
	CM_T(MRA_REP_SENT, SEND_REJ, IDLE, NOEV, CM_DO_SEND),
	CM_T(MRA_REP_SENT, RECV_REP, MRA_REP_SENT, NOEV, CM_DO_RESEND),
	CM_T(MRA_REP_SENT, RECV_REJ, TIMEWAIT, EV(REJ_RECEIVED), CM_DO_TIMEWAIT),
	CM_TR(MRA_REP_SENT, DESTROY, IDLE, NOEV, 0, CONSUMER_DEFINED),

	/* Connected: a repeated REP means our RTU was lost. */
	CM_T(ESTABLISHED, SEND_DREQ, DREQ_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(ESTABLISHED, RECV_DREQ, DREQ_RCVD, EV(DREQ_RECEIVED), 0),
	CM_T(ESTABLISHED, RECV_REP, ESTABLISHED, NOEV, CM_DO_RESEND),
	CM_T(ESTABLISHED, RECV_REJ, TIMEWAIT, EV(REJ_RECEIVED), CM_DO_TIMEWAIT),
	CM_T(ESTABLISHED, STALE, DREQ_SENT, NOEV, CM_DO_SEND_DREQ | CM_DO_ARM),
	CM_T(ESTABLISHED, DESTROY, TIMEWAIT, NOEV, CM_DO_SEND_DREQ | CM_DO_TIMEWAIT),

	CM_T(DREQ_SENT, RECV_DREP, TIMEWAIT, EV(DREP_RECEIVED), CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_T(DREQ_SENT, RECV_DREQ, DREQ_RCVD, EV(DREQ_RECEIVED), CM_DO_CANCEL),
	CM_T(DREQ_SENT, RECV_REJ, TIMEWAIT, EV(REJ_RECEIVED), CM_DO_CANCEL | CM_DO_TIMEWAIT),
	CM_T(DREQ_SENT, TIMEOUT, TIMEWAIT, EV(DREQ_ERROR), CM_DO_TIMEWAIT),
	CM_T(DREQ_SENT, DESTROY, TIMEWAIT, NOEV, CM_DO_CANCEL | CM_DO_TIMEWAIT),

	CM_T(DREQ_RCVD, SEND_DREP, TIMEWAIT, NOEV, CM_DO_SEND | CM_DO_TIMEWAIT),
	CM_T(DREQ_RCVD, RECV_DREQ, DREQ_RCVD, NOEV, CM_DO_DROP),
	CM_T(DREQ_RCVD, DESTROY, TIMEWAIT, NOEV, CM_DO_SEND_DREP | CM_DO_TIMEWAIT),

	/*
	 * Timewait: a repeated DREQ gets a DREP again; a REQ repeating the
	 * old connection's is stale. The id outlives the consumer's handle.
	 */
	CM_T(TIMEWAIT, TIMEWAIT_DONE, IDLE, EV(TIMEWAIT_EXIT), 0),
	CM_T(TIMEWAIT, RECV_DREQ, TIMEWAIT, NOEV, CM_DO_RESEND),
	CM_TR(TIMEWAIT, RECV_REQ, TIMEWAIT, NOEV, 0, STALE_CONN),
	CM_T(TIMEWAIT, DESTROY, TIMEWAIT, NOEV, 0),

	CM_T(SIDR_REQ_SENT, RECV_SIDR_REP, IDLE, EV(SIDR_REP_RECEIVED), CM_DO_CANCEL),
	CM_T(SIDR_REQ_SENT, TIMEOUT, IDLE, EV(SIDR_REQ_ERROR), 0),
	CM_T(SIDR_REQ_SENT, DESTROY, IDLE, NOEV, CM_DO_CANCEL),

	CM_T(SIDR_REQ_RCVD, SEND_SIDR_REP, IDLE, NOEV, CM_DO_SEND),
	CM_T(SIDR_REQ_RCVD, RECV_SIDR_REQ, SIDR_REQ_RCVD, NOEV, CM_DO_DROP),
	CM_T(SIDR_REQ_RCVD, DESTROY, IDLE, NOEV, CM_DO_SIDR_REJECT),
};

/* The alternate path exchange, consulted only in ESTABLISHED. */
static const struct cm_row cm_lap_rows[IB_CM_LAP_STATE_COUNT][CM_IN_COUNT] = {
	CM_T(LAP_IDLE, SEND_LAP, LAP_SENT, NOEV, CM_DO_SEND | CM_DO_ARM),
	CM_T(LAP_IDLE, RECV_LAP, LAP_RCVD, EV(LAP_RECEIVED), 0),

	CM_T(LAP_SENT, RECV_APR, LAP_IDLE, EV(APR_RECEIVED), CM_DO_CANCEL),
	CM_T(LAP_SENT, RECV_MRA_LAP, MRA_LAP_RCVD, EV(MRA_RECEIVED), CM_DO_MRA_WAIT),
	CM_T(LAP_SENT, TIMEOUT, LAP_IDLE, EV(LAP_ERROR), 0),

	CM_T(MRA_LAP_RCVD, RECV_APR, LAP_IDLE, EV(APR_RECEIVED), CM_DO_CANCEL),
	CM_T(MRA_LAP_RCVD, RECV_MRA_LAP, MRA_LAP_RCVD, NOEV, CM_DO_MRA_WAIT),
	CM_T(MRA_LAP_RCVD, TIMEOUT, LAP_IDLE, EV(LAP_ERROR), 0),

	CM_T(LAP_RCVD, SEND_APR, LAP_IDLE, NOEV, CM_DO_SEND),
	CM_T(LAP_RCVD, SEND_MRA, MRA_LAP_SENT, NOEV, CM_DO_SEND),
	CM_T(LAP_RCVD, RECV_LAP, LAP_RCVD, NOEV, CM_DO_DROP),

	CM_T(MRA_LAP_SENT, SEND_APR, LAP_IDLE, NOEV, CM_DO_SEND),
	CM_T(MRA_LAP_SENT, RECV_LAP, MRA_LAP_SENT, NOEV, CM_DO_RESEND),
};

static const char *const cm_state_names[IB_CM_STATE_COUNT] = {
	[IB_CM_IDLE] = "IDLE",
	[IB_CM_LISTEN] = "LISTEN",
	[IB_CM_REQ_SENT] = "REQ_SENT",
	[IB_CM_REQ_RCVD] = "REQ_RCVD",
	[IB_CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
	[IB_CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
	[IB_CM_REP_SENT] = "REP_SENT",
	[IB_CM_REP_RCVD] = "REP_RCVD",
	[IB_CM_MRA_REP_SENT] = "MRA_REP_SENT",
	[IB_CM_MRA_REP_RCVD] = "MRA_REP_RCVD",
	[IB_CM_ESTABLISHED] = "ESTABLISHED",
	[IB_CM_DREQ_SENT] = "DREQ_SENT",
	[IB_CM_DREQ_RCVD] = "DREQ_RCVD",
	[IB_CM_TIMEWAIT] = "TIMEWAIT",
	[IB_CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
	[IB_CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
};

static const char *const cm_lap_state_names[IB_CM_LAP_STATE_COUNT] = {
	[IB_CM_LAP_IDLE] = "LAP_IDLE",
	[IB_CM_LAP_SENT] = "LAP_SENT",
	[IB_CM_LAP_RCVD] = "LAP_RCVD",
	[IB_CM_MRA_LAP_SENT] = "MRA_LAP_SENT",
	[IB_CM_MRA_LAP_RCVD] = "MRA_LAP_RCVD",
};

static const char *const cm_input_names[CM_IN_COUNT] = {
	[CM_IN_LISTEN] = "LISTEN",
	[CM_IN_SEND_REQ] = "SEND_REQ",
	[CM_IN_SEND_REP] = "SEND_REP",
	[CM_IN_SEND_RTU] = "SEND_RTU",
	[CM_IN_SEND_REJ] = "SEND_REJ",
	[CM_IN_SEND_MRA] = "SEND_MRA",
	[CM_IN_SEND_DREQ] = "SEND_DREQ",
	[CM_IN_SEND_DREP] = "SEND_DREP",
	[CM_IN_ESTABLISH] = "ESTABLISH",
	[CM_IN_SEND_SIDR_REQ] = "SEND_SIDR_REQ",
	[CM_IN_SEND_SIDR_REP] = "SEND_SIDR_REP",
	[CM_IN_SEND_LAP] = "SEND_LAP",
	[CM_IN_SEND_APR] = "SEND_APR",
	[CM_IN_DESTROY] = "DESTROY",
	[CM_IN_RECV_REQ] = "RECV_REQ",
	[CM_IN_RECV_MRA_REQ] = "RECV_MRA_REQ",
	[CM_IN_RECV_MRA_REP] = "RECV_MRA_REP",
	[CM_IN_RECV_MRA_LAP] = "RECV_MRA_LAP",
	[CM_IN_RECV_REP] = "RECV_REP",
	[CM_IN_RECV_REP_STALE] = "RECV_REP_STALE",
	[CM_IN_RECV_RTU] = "RECV_RTU",
	[CM_IN_RECV_REJ] = "RECV_REJ",
	[CM_IN_RECV_REJ_STALE] = "RECV_REJ_STALE",
	[CM_IN_RECV_DREQ] = "RECV_DREQ",
	[CM_IN_RECV_DREP] = "RECV_DREP",
	[CM_IN_RECV_SIDR_REQ] = "RECV_SIDR_REQ",
	[CM_IN_RECV_SIDR_REP] = "RECV_SIDR_REP",
	[CM_IN_RECV_LAP] = "RECV_LAP",
	[CM_IN_RECV_APR] = "RECV_APR",
	[CM_IN_TIMEOUT] = "TIMEOUT",
	[CM_IN_TIMEWAIT_DONE] = "TIMEWAIT_DONE",
	[CM_IN_STALE] = "STALE",
};

static const char *const cm_event_names[IB_CM_EVENT_COUNT] = {
	[IB_CM_REQ_ERROR] = "REQ_ERROR",
	[IB_CM_REQ_RECEIVED] = "REQ_RECEIVED",
	[IB_CM_REP_ERROR] = "REP_ERROR",
	[IB_CM_REP_RECEIVED] = "REP_RECEIVED",
	[IB_CM_RTU_RECEIVED] = "RTU_RECEIVED",
	[IB_CM_USER_ESTABLISHED] = "USER_ESTABLISHED",
	[IB_CM_DREQ_ERROR] = "DREQ_ERROR",
	[IB_CM_DREQ_RECEIVED] = "DREQ_RECEIVED",
	[IB_CM_DREP_RECEIVED] = "DREP_RECEIVED",
	[IB_CM_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	[IB_CM_MRA_RECEIVED] = "MRA_RECEIVED",
	[IB_CM_REJ_RECEIVED] = "REJ_RECEIVED",
	[IB_CM_LAP_ERROR] = "LAP_ERROR",
	[IB_CM_LAP_RECEIVED] = "LAP_RECEIVED",
	[IB_CM_APR_RECEIVED] = "APR_RECEIVED",
	[IB_CM_SIDR_REQ_ERROR] = "SIDR_REQ_ERROR",
	[IB_CM_SIDR_REQ_RECEIVED] = "SIDR_REQ_RECEIVED",
	[IB_CM_SIDR_REP_RECEIVED] = "SIDR_REP_RECEIVED",
};

static const char *cm_name(const char *const *names, unsigned int n, unsigned int i)
{
	return i < n && names[i] ? names[i] : "?";
}

/**
 * cm_state_name() - a connection state's name
 * @state: the state
 *
 * Return: "IDLE", "REQ_SENT", ...; "?" for a value out of range.
 */
const char *cm_state_name(enum ib_cm_state state)
{
	return cm_name(cm_state_names, ARRAY_SIZE(cm_state_names), state);
}

/**
 * cm_lap_state_name() - a LAP state's name
 * @lap: the state
 *
 * Return: "LAP_IDLE", ...; "?" for a value out of range.
 */
const char *cm_lap_state_name(enum ib_cm_lap_state lap)
{
	return cm_name(cm_lap_state_names, ARRAY_SIZE(cm_lap_state_names), lap);
}

/**
 * cm_input_name() - an input's name
 * @in: the input
 *
 * Return: "SEND_REQ", "RECV_REP", ...; "?" for a value out of range.
 */
const char *cm_input_name(enum cm_input in)
{
	return cm_name(cm_input_names, ARRAY_SIZE(cm_input_names), in);
}

/**
 * cm_event_name() - an event's name
 * @event: the event
 *
 * Return: "REQ_RECEIVED", ...; "?" for a value out of range.
 */
const char *cm_event_name(enum ib_cm_event_type event)
{
	return cm_name(cm_event_names, ARRAY_SIZE(cm_event_names), event);
}

/**
 * cm_input_is_call() - whether an input is a consumer's call
 * @in: the input
 *
 * Return: true for the calls, false for messages and timers.
 */
bool cm_input_is_call(enum cm_input in)
{
	return in < CM_IN_FIRST_RECV;
}

static void cm_take(const struct cm_row *row, struct cm_step *step)
{
	step->event = row->event;
	step->actions = row->actions;
	step->rej_reason = row->rej;
}

/**
 * cm_step() - what an input does to a connection
 * @state: the connection's state
 * @lap: its LAP state (IB_CM_LAP_IDLE outside ESTABLISHED)
 * @in: the input
 * @step: filled in: the next states, the event and the actions
 *
 * The connection table is consulted first; in ESTABLISHED an input it
 * has no row for goes to the LAP table. Leaving ESTABLISHED ends any LAP
 * exchange.
 *
 * Return: 0 when the input is legal. -EINVAL for a consumer call that is
 * not legal in @state (nothing is to be done); for a message or a timer
 * without a row, 0 with CM_DO_DROP and the states unchanged. -EINVAL also
 * for values out of range.
 */
int cm_step(enum ib_cm_state state, enum ib_cm_lap_state lap,
	    enum cm_input in, struct cm_step *step)
{
	const struct cm_row *row;

	if ((unsigned int)state >= IB_CM_STATE_COUNT ||
	    (unsigned int)lap >= IB_CM_LAP_STATE_COUNT ||
	    (unsigned int)in >= CM_IN_COUNT)
		return -EINVAL;

	step->next = state;
	step->next_lap = lap;
	step->event = CM_NO_EVENT;
	step->actions = 0;
	step->rej_reason = 0;

	row = &cm_conn_rows[state][in];
	if (row->ok) {
		cm_take(row, step);
		step->next = row->next;
		if (step->next != IB_CM_ESTABLISHED)
			step->next_lap = IB_CM_LAP_IDLE;
		return 0;
	}

	if (state == IB_CM_ESTABLISHED) {
		row = &cm_lap_rows[lap][in];
		if (row->ok) {
			cm_take(row, step);
			step->next_lap = row->next;
			return 0;
		}
	}

	if (cm_input_is_call(in))
		return -EINVAL;
	step->actions = CM_DO_DROP;
	return 0;
}

/**
 * cm_classify_req() - what to do with a received REQ
 * @match: what the CM's lookups found for it
 * @rej_reason: set to the REJ reason to answer with, 0 if none
 *
 * A REQ repeating one we know is a duplicate, whatever else matches; one
 * from a remote QP that is still connected under another comm ID means
 * that connection is stale (the peer lost it): the REQ is rejected and
 * the old connection torn down; otherwise it needs a listener.
 *
 * Return: the &enum cm_req_verdict.
 */
enum cm_req_verdict cm_classify_req(const struct cm_req_match *match,
				    u8 *rej_reason)
{
	*rej_reason = 0;
	if (match->dup_comm_id)
		return CM_REQ_DUPLICATE;
	if (match->dup_qpn) {
		*rej_reason = IB_CM_REJ_STALE_CONN;
		return CM_REQ_STALE;
	}
	if (!match->listener) {
		*rej_reason = IB_CM_REJ_INVALID_SERVICE_ID;
		return CM_REQ_NO_LISTENER;
	}
	return CM_REQ_NEW;
}

/* The exponents are 5-bit fields. */
#define CM_EXP_MAX	31

/**
 * cm_timeout_ns() - the IBA time of an exponent: 4.096 us * 2^@exp
 * @exp: a 5-bit exponent; larger values count as 31
 *
 * Return: nanoseconds.
 */
u64 cm_timeout_ns(u8 exp)
{
	return 4096ULL << min_t(u8, exp, CM_EXP_MAX);
}

static unsigned long cm_ns_to_ms(u64 ns)
{
	return (unsigned long)div64_u64(ns + NSEC_PER_MSEC - 1, NSEC_PER_MSEC);
}

/**
 * cm_timeout_ms() - cm_timeout_ns() in milliseconds, rounded up
 * @exp: a 5-bit exponent
 *
 * Return: milliseconds, at least 1.
 */
unsigned long cm_timeout_ms(u8 exp)
{
	return cm_ns_to_ms(cm_timeout_ns(exp));
}

/**
 * cm_req_timeout_ms() - how long the active side waits for an answer
 * @packet_life_time: the path's PacketLifeTime exponent
 * @remote_cm_response_timeout: the REQ's exponent for the peer's CM
 *
 * A round trip on the path plus the time the peer's CM said it needs.
 *
 * Return: milliseconds, rounded up.
 */
unsigned long cm_req_timeout_ms(u8 packet_life_time, u8 remote_cm_response_timeout)
{
	return cm_ns_to_ms(2 * cm_timeout_ns(packet_life_time) +
			   cm_timeout_ns(remote_cm_response_timeout));
}

/**
 * cm_mra_timeout_ms() - how long to wait after an MRA
 * @service_timeout: the MRA's ServiceTimeout exponent
 * @packet_life_time: the path's PacketLifeTime exponent
 *
 * The time the peer asked for plus a round trip on the path.
 *
 * Return: milliseconds, rounded up.
 */
unsigned long cm_mra_timeout_ms(u8 service_timeout, u8 packet_life_time)
{
	return cm_ns_to_ms(cm_timeout_ns(service_timeout) +
			   2 * cm_timeout_ns(packet_life_time));
}

/**
 * cm_retry_start() - a message was sent and waits for its answer
 * @r: its retransmission state
 * @timeout_ms: how long each wait lasts
 * @max_retries: how many times it may be sent again (the REQ's
 *	MaxCMRetries, 4 bits)
 */
void cm_retry_start(struct cm_retry *r, unsigned long timeout_ms, u8 max_retries)
{
	r->base_ms = timeout_ms;
	r->wait_ms = timeout_ms;
	r->retries_left = max_retries;
}

/**
 * cm_retry_mra() - the peer MRAed the message: wait longer, do not resend
 * @r: its retransmission state
 * @mra_ms: the wait the MRA asks for (cm_mra_timeout_ms())
 *
 * The current wait is replaced by @mra_ms without spending a retry; a
 * resend after it goes back to the normal wait.
 */
void cm_retry_mra(struct cm_retry *r, unsigned long mra_ms)
{
	r->wait_ms = mra_ms;
}

/**
 * cm_retry_expired() - a wait ended with no answer
 * @r: its retransmission state
 *
 * Return: CM_RETRY_RESEND (one retry spent, the next wait is the normal
 * one), or CM_RETRY_GIVE_UP when none is left.
 */
enum cm_retry_verdict cm_retry_expired(struct cm_retry *r)
{
	if (!r->retries_left)
		return CM_RETRY_GIVE_UP;
	r->retries_left--;
	r->wait_ms = r->base_ms;
	return CM_RETRY_RESEND;
}

#define CM_BIT(st)	BIT(IB_CM_##st)

/*
 * The CM states in which the consumer may ask for the attributes of each
 * QP transition: INIT once a REQ is sent or received, RTR once the peer's
 * QPN and PSN are known, RTS once the send PSN is: on the passive side
 * from the REQ on, so that it can take its QP to RTS before it sends the
 * REP (rdma_accept() does; Linux's CM allows it too), on the active side
 * from the REP on.
 */
static const u32 cm_qp_ok[] = {
	[IB_QPS_INIT] = CM_BIT(REQ_SENT) | CM_BIT(MRA_REQ_RCVD) |
			CM_BIT(REQ_RCVD) | CM_BIT(MRA_REQ_SENT) |
			CM_BIT(REP_SENT) | CM_BIT(MRA_REP_RCVD) |
			CM_BIT(REP_RCVD) | CM_BIT(MRA_REP_SENT) |
			CM_BIT(ESTABLISHED),
	[IB_QPS_RTR] = CM_BIT(REQ_RCVD) | CM_BIT(MRA_REQ_SENT) |
		       CM_BIT(REP_SENT) | CM_BIT(MRA_REP_RCVD) |
		       CM_BIT(REP_RCVD) | CM_BIT(MRA_REP_SENT) |
		       CM_BIT(ESTABLISHED),
	[IB_QPS_RTS] = CM_BIT(REQ_RCVD) | CM_BIT(MRA_REQ_SENT) |
		       CM_BIT(REP_SENT) | CM_BIT(MRA_REP_RCVD) |
		       CM_BIT(REP_RCVD) | CM_BIT(MRA_REP_SENT) |
		       CM_BIT(ESTABLISHED),
};

/**
 * cm_qp_attr() - the attributes of the consumer's next QP transition
 * @state: the connection's state
 * @p: what the CM keeps of the connection
 * @attr: in: qp_state, the state the QP moves to (INIT, RTR or RTS);
 *	out: the attributes of that transition
 * @mask: out: the &enum ib_qp_attr_mask bits of ib_modify_qp() for it
 *
 * RC QPs get the RDMA read/atomic and timer attributes on top of what UC
 * QPs get (IBA 11.2.4.2, the Modify QP table).
 *
 * Once a LAP exchange has given the connection an alternate path
 * (@p->alt_valid), RTS in ESTABLISHED is the RTS to RTS transition that
 * loads it: the alternate address vector, port, P_Key index and timeout,
 * and the path migration state REARM (IBA 17.2.8, 12.8.1), as the 2.6.1x
 * CM gave it; the attributes of RTR to RTS are not repeated, since RTS
 * to RTS does not take them.
 *
 * Return: 0, or -EINVAL for another target state, a state of the
 * connection that gives none for it, or a QP type other than RC or UC.
 */
int cm_qp_attr(enum ib_cm_state state, const struct cm_qp_params *p,
	       struct ib_qp_attr *attr, int *mask)
{
	enum ib_qp_state to = attr->qp_state;
	bool rc = p->qp_type == IB_QPT_RC;

	if ((unsigned int)to >= ARRAY_SIZE(cm_qp_ok) ||
	    (unsigned int)state >= IB_CM_STATE_COUNT ||
	    !(cm_qp_ok[to] & BIT(state)) ||
	    (!rc && p->qp_type != IB_QPT_UC))
		return -EINVAL;

	*mask = IB_QP_STATE;
	switch (to) {
	case IB_QPS_INIT:
		*mask |= IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT;
		attr->qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
		if (rc && p->responder_resources)
			attr->qp_access_flags |= IB_ACCESS_REMOTE_READ |
						 IB_ACCESS_REMOTE_ATOMIC;
		attr->pkey_index = p->pkey_index;
		attr->port_num = p->port_num;
		break;
	case IB_QPS_RTR:
		*mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN;
		attr->ah_attr = p->ah_attr;
		attr->path_mtu = p->path_mtu;
		attr->dest_qp_num = p->remote_qpn;
		attr->rq_psn = p->rq_psn;
		if (rc) {
			*mask |= IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER;
			attr->max_dest_rd_atomic = p->responder_resources;
			attr->min_rnr_timer = p->min_rnr_timer;
		}
		break;
	default:	/* IB_QPS_RTS */
		if (state == IB_CM_ESTABLISHED && p->alt_valid) {
			*mask |= IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE;
			attr->alt_ah_attr = p->alt_ah_attr;
			attr->alt_port_num = p->alt_port_num;
			attr->alt_pkey_index = p->alt_pkey_index;
			attr->alt_timeout = p->alt_timeout;
			attr->path_mig_state = IB_MIG_REARM;
			break;
		}
		*mask |= IB_QP_SQ_PSN;
		attr->sq_psn = p->sq_psn;
		if (rc) {
			*mask |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				 IB_QP_MAX_QP_RD_ATOMIC;
			attr->timeout = p->local_ack_timeout;
			attr->retry_cnt = p->retry_count;
			attr->rnr_retry = p->rnr_retry_count;
			attr->max_rd_atomic = p->initiator_depth;
		}
		break;
	}
	return 0;
}
