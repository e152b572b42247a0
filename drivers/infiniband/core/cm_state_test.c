// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the CM state machine (cm_state.c): connections walked
 * through the IBA 12.9 diagrams step by step, every consumer call and
 * every message in every state (legal ones by the lists below, written
 * from the diagrams; all others must fail with -EINVAL or be dropped),
 * duplicates answered from the stored message, stale connections, what
 * destroying an id sends, the timeout formula, retries and MRA.
 */

#include <kunit/test.h>
#include <linux/string.h>

#include "cm_state.h"

#define S(x)	IB_CM_##x
#define I(x)	CM_IN_##x
#define E(x)	IB_CM_##x

/* One expected step: from (state, lap) on @in, to (next, next_lap). */
struct cm_expect {
	enum ib_cm_state state;
	enum ib_cm_lap_state lap;
	enum cm_input in;
	enum ib_cm_state next;
	enum ib_cm_lap_state next_lap;
	int event;
	unsigned int actions;
	u8 rej;
};

static void cm_check(struct kunit *test, const struct cm_expect *e)
{
	struct cm_step st;
	int ret;

	ret = cm_step(e->state, e->lap, e->in, &st);
	KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%s/%s on %s", cm_state_name(e->state),
			    cm_lap_state_name(e->lap), cm_input_name(e->in));
	if (ret)
		return;
	KUNIT_EXPECT_EQ_MSG(test, st.next, e->next, "%s on %s: next %s",
			    cm_state_name(e->state), cm_input_name(e->in),
			    cm_state_name(st.next));
	KUNIT_EXPECT_EQ_MSG(test, st.next_lap, e->next_lap, "%s on %s: lap %s",
			    cm_state_name(e->state), cm_input_name(e->in),
			    cm_lap_state_name(st.next_lap));
	KUNIT_EXPECT_EQ_MSG(test, st.event, e->event, "%s on %s: event %d",
			    cm_state_name(e->state), cm_input_name(e->in), st.event);
	KUNIT_EXPECT_EQ_MSG(test, st.actions, e->actions, "%s on %s: actions %#x",
			    cm_state_name(e->state), cm_input_name(e->in), st.actions);
	KUNIT_EXPECT_EQ_MSG(test, st.rej_reason, e->rej, "%s on %s: REJ reason",
			    cm_state_name(e->state), cm_input_name(e->in));
}

static void cm_check_all(struct kunit *test, const struct cm_expect *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cm_check(test, &e[i]);
}

#define L0	IB_CM_LAP_IDLE
#define NOEV	CM_NO_EVENT

/* Active side: connect (the peer MRAs our REQ), disconnect, timewait. */
static void cm_walk_active(struct kunit *test)
{
	static const struct cm_expect walk[] = {
		{ S(IDLE), L0, I(SEND_REQ), S(REQ_SENT), L0, NOEV, CM_DO_SEND | CM_DO_ARM },
		{ S(REQ_SENT), L0, I(RECV_MRA_REQ), S(MRA_REQ_RCVD), L0, E(MRA_RECEIVED),
		  CM_DO_MRA_WAIT },
		{ S(MRA_REQ_RCVD), L0, I(RECV_MRA_REQ), S(MRA_REQ_RCVD), L0, NOEV,
		  CM_DO_MRA_WAIT },
		{ S(MRA_REQ_RCVD), L0, I(RECV_REP), S(REP_RCVD), L0, E(REP_RECEIVED),
		  CM_DO_CANCEL },
		{ S(REQ_SENT), L0, I(RECV_REP), S(REP_RCVD), L0, E(REP_RECEIVED), CM_DO_CANCEL },
		{ S(REP_RCVD), L0, I(SEND_MRA), S(MRA_REP_SENT), L0, NOEV, CM_DO_SEND },
		{ S(MRA_REP_SENT), L0, I(SEND_RTU), S(ESTABLISHED), L0, NOEV, CM_DO_SEND },
		{ S(REP_RCVD), L0, I(SEND_RTU), S(ESTABLISHED), L0, NOEV, CM_DO_SEND },
		{ S(ESTABLISHED), L0, I(SEND_DREQ), S(DREQ_SENT), L0, NOEV,
		  CM_DO_SEND | CM_DO_ARM },
		{ S(DREQ_SENT), L0, I(RECV_DREP), S(TIMEWAIT), L0, E(DREP_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(TIMEWAIT), L0, I(TIMEWAIT_DONE), S(IDLE), L0, E(TIMEWAIT_EXIT), 0 },
		/* the ways it fails */
		{ S(REQ_SENT), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), CM_DO_CANCEL },
		{ S(MRA_REQ_RCVD), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), CM_DO_CANCEL },
		{ S(REQ_SENT), L0, I(TIMEOUT), S(IDLE), L0, E(REQ_ERROR), CM_DO_SEND_REJ,
		  IB_CM_REJ_TIMEOUT },
		{ S(MRA_REQ_RCVD), L0, I(TIMEOUT), S(IDLE), L0, E(REQ_ERROR), CM_DO_SEND_REJ,
		  IB_CM_REJ_TIMEOUT },
		{ S(REP_RCVD), L0, I(SEND_REJ), S(IDLE), L0, NOEV, CM_DO_SEND },
		{ S(MRA_REP_SENT), L0, I(SEND_REJ), S(IDLE), L0, NOEV, CM_DO_SEND },
		{ S(REP_RCVD), L0, I(RECV_REJ), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_TIMEWAIT },
		{ S(MRA_REP_SENT), L0, I(RECV_REJ), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_TIMEWAIT },
		{ S(DREQ_SENT), L0, I(TIMEOUT), S(TIMEWAIT), L0, E(DREQ_ERROR), CM_DO_TIMEWAIT },
		{ S(DREQ_SENT), L0, I(RECV_REJ), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(ESTABLISHED), L0, I(RECV_REJ), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_TIMEWAIT },
	};

	cm_check_all(test, walk, ARRAY_SIZE(walk));
}

/* Passive side: listen, MRA the REQ, accept, establish early, DREQ. */
static void cm_walk_passive(struct kunit *test)
{
	static const struct cm_expect walk[] = {
		{ S(IDLE), L0, I(LISTEN), S(LISTEN), L0, NOEV, 0 },
		{ S(LISTEN), L0, I(RECV_REQ), S(REQ_RCVD), L0, E(REQ_RECEIVED), CM_DO_SPAWN },
		{ S(REQ_RCVD), L0, I(SEND_MRA), S(MRA_REQ_SENT), L0, NOEV, CM_DO_SEND },
		{ S(MRA_REQ_SENT), L0, I(SEND_REP), S(REP_SENT), L0, NOEV,
		  CM_DO_SEND | CM_DO_ARM },
		{ S(REQ_RCVD), L0, I(SEND_REP), S(REP_SENT), L0, NOEV, CM_DO_SEND | CM_DO_ARM },
		{ S(REP_SENT), L0, I(RECV_MRA_REP), S(MRA_REP_RCVD), L0, E(MRA_RECEIVED),
		  CM_DO_MRA_WAIT },
		{ S(MRA_REP_RCVD), L0, I(RECV_MRA_REP), S(MRA_REP_RCVD), L0, NOEV,
		  CM_DO_MRA_WAIT },
		{ S(MRA_REP_RCVD), L0, I(RECV_RTU), S(ESTABLISHED), L0, E(RTU_RECEIVED),
		  CM_DO_CANCEL },
		{ S(REP_SENT), L0, I(RECV_RTU), S(ESTABLISHED), L0, E(RTU_RECEIVED),
		  CM_DO_CANCEL },
		{ S(REP_SENT), L0, I(ESTABLISH), S(ESTABLISHED), L0, E(USER_ESTABLISHED),
		  CM_DO_CANCEL },
		{ S(MRA_REP_RCVD), L0, I(ESTABLISH), S(ESTABLISHED), L0, E(USER_ESTABLISHED),
		  CM_DO_CANCEL },
		{ S(ESTABLISHED), L0, I(RECV_DREQ), S(DREQ_RCVD), L0, E(DREQ_RECEIVED), 0 },
		{ S(DREQ_RCVD), L0, I(SEND_DREP), S(TIMEWAIT), L0, NOEV,
		  CM_DO_SEND | CM_DO_TIMEWAIT },
		/* both sides disconnect at once */
		{ S(DREQ_SENT), L0, I(RECV_DREQ), S(DREQ_RCVD), L0, E(DREQ_RECEIVED),
		  CM_DO_CANCEL },
		/* the ways it fails */
		{ S(REQ_RCVD), L0, I(SEND_REJ), S(IDLE), L0, NOEV, CM_DO_SEND },
		{ S(MRA_REQ_SENT), L0, I(SEND_REJ), S(IDLE), L0, NOEV, CM_DO_SEND },
		{ S(REQ_RCVD), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), 0 },
		{ S(MRA_REQ_SENT), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), 0 },
		{ S(REP_SENT), L0, I(SEND_REJ), S(IDLE), L0, NOEV, CM_DO_SEND | CM_DO_CANCEL },
		{ S(MRA_REP_RCVD), L0, I(SEND_REJ), S(IDLE), L0, NOEV,
		  CM_DO_SEND | CM_DO_CANCEL },
		{ S(REP_SENT), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), CM_DO_CANCEL },
		{ S(MRA_REP_RCVD), L0, I(RECV_REJ), S(IDLE), L0, E(REJ_RECEIVED), CM_DO_CANCEL },
		{ S(REP_SENT), L0, I(TIMEOUT), S(IDLE), L0, E(REP_ERROR), CM_DO_SEND_REJ,
		  IB_CM_REJ_TIMEOUT },
		{ S(MRA_REP_RCVD), L0, I(TIMEOUT), S(IDLE), L0, E(REP_ERROR), CM_DO_SEND_REJ,
		  IB_CM_REJ_TIMEOUT },
	};

	cm_check_all(test, walk, ARRAY_SIZE(walk));
}

static void cm_walk_sidr(struct kunit *test)
{
	static const struct cm_expect walk[] = {
		{ S(IDLE), L0, I(SEND_SIDR_REQ), S(SIDR_REQ_SENT), L0, NOEV,
		  CM_DO_SEND | CM_DO_ARM },
		{ S(SIDR_REQ_SENT), L0, I(RECV_SIDR_REP), S(IDLE), L0, E(SIDR_REP_RECEIVED),
		  CM_DO_CANCEL },
		{ S(SIDR_REQ_SENT), L0, I(TIMEOUT), S(IDLE), L0, E(SIDR_REQ_ERROR), 0 },
		{ S(LISTEN), L0, I(RECV_SIDR_REQ), S(SIDR_REQ_RCVD), L0,
		  E(SIDR_REQ_RECEIVED), CM_DO_SPAWN },
		{ S(SIDR_REQ_RCVD), L0, I(SEND_SIDR_REP), S(IDLE), L0, NOEV, CM_DO_SEND },
		{ S(SIDR_REQ_RCVD), L0, I(RECV_SIDR_REQ), S(SIDR_REQ_RCVD), L0, NOEV,
		  CM_DO_DROP },
	};

	cm_check_all(test, walk, ARRAY_SIZE(walk));
}

#define LS(x)	IB_CM_##x

/* LAP/APR within ESTABLISHED, and what leaving ESTABLISHED does to it. */
static void cm_walk_lap(struct kunit *test)
{
	static const struct cm_expect walk[] = {
		{ S(ESTABLISHED), L0, I(SEND_LAP), S(ESTABLISHED), LS(LAP_SENT), NOEV,
		  CM_DO_SEND | CM_DO_ARM },
		{ S(ESTABLISHED), LS(LAP_SENT), I(RECV_MRA_LAP), S(ESTABLISHED),
		  LS(MRA_LAP_RCVD), E(MRA_RECEIVED), CM_DO_MRA_WAIT },
		{ S(ESTABLISHED), LS(MRA_LAP_RCVD), I(RECV_APR), S(ESTABLISHED), L0,
		  E(APR_RECEIVED), CM_DO_CANCEL },
		{ S(ESTABLISHED), LS(LAP_SENT), I(RECV_APR), S(ESTABLISHED), L0,
		  E(APR_RECEIVED), CM_DO_CANCEL },
		{ S(ESTABLISHED), LS(LAP_SENT), I(TIMEOUT), S(ESTABLISHED), L0,
		  E(LAP_ERROR), 0 },
		{ S(ESTABLISHED), LS(MRA_LAP_RCVD), I(TIMEOUT), S(ESTABLISHED), L0,
		  E(LAP_ERROR), 0 },
		{ S(ESTABLISHED), L0, I(RECV_LAP), S(ESTABLISHED), LS(LAP_RCVD),
		  E(LAP_RECEIVED), 0 },
		{ S(ESTABLISHED), LS(LAP_RCVD), I(SEND_MRA), S(ESTABLISHED),
		  LS(MRA_LAP_SENT), NOEV, CM_DO_SEND },
		{ S(ESTABLISHED), LS(MRA_LAP_SENT), I(RECV_LAP), S(ESTABLISHED),
		  LS(MRA_LAP_SENT), NOEV, CM_DO_RESEND },
		{ S(ESTABLISHED), LS(MRA_LAP_SENT), I(SEND_APR), S(ESTABLISHED), L0,
		  NOEV, CM_DO_SEND },
		{ S(ESTABLISHED), LS(LAP_RCVD), I(SEND_APR), S(ESTABLISHED), L0,
		  NOEV, CM_DO_SEND },
		/* a disconnection ends the exchange */
		{ S(ESTABLISHED), LS(LAP_SENT), I(SEND_DREQ), S(DREQ_SENT), L0, NOEV,
		  CM_DO_SEND | CM_DO_ARM },
		{ S(ESTABLISHED), LS(LAP_RCVD), I(RECV_DREQ), S(DREQ_RCVD), L0,
		  E(DREQ_RECEIVED), 0 },
	};
	struct cm_step st;

	cm_check_all(test, walk, ARRAY_SIZE(walk));
	/* No LAP outside ESTABLISHED, no second LAP while one is out. */
	KUNIT_EXPECT_EQ(test, cm_step(S(REP_SENT), L0, I(SEND_LAP), &st), -EINVAL);
	KUNIT_EXPECT_EQ(test, cm_step(S(ESTABLISHED), LS(LAP_SENT), I(SEND_LAP), &st),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cm_step(S(ESTABLISHED), L0, I(SEND_APR), &st), -EINVAL);
	KUNIT_EXPECT_EQ(test, cm_step(S(ESTABLISHED), L0, I(SEND_MRA), &st), -EINVAL);
	/* an APR nobody asked for is dropped */
	KUNIT_EXPECT_EQ(test, cm_step(S(ESTABLISHED), L0, I(RECV_APR), &st), 0);
	KUNIT_EXPECT_EQ(test, st.actions, (unsigned int)CM_DO_DROP);
	KUNIT_EXPECT_EQ(test, st.next_lap, L0);
}

#define B(x)	BIT_ULL(CM_IN_##x)

/*
 * The consumer calls legal in each state (LAP idle), from the diagrams;
 * every other call must fail with -EINVAL and leave the state alone.
 */
static const u64 cm_legal_calls[IB_CM_STATE_COUNT] = {
	[IB_CM_IDLE] = B(LISTEN) | B(SEND_REQ) | B(SEND_SIDR_REQ),
	[IB_CM_REQ_RCVD] = B(SEND_REP) | B(SEND_MRA) | B(SEND_REJ),
	[IB_CM_MRA_REQ_SENT] = B(SEND_REP) | B(SEND_REJ),
	[IB_CM_REP_SENT] = B(ESTABLISH) | B(SEND_REJ),
	[IB_CM_MRA_REP_RCVD] = B(ESTABLISH) | B(SEND_REJ),
	[IB_CM_REP_RCVD] = B(SEND_RTU) | B(SEND_MRA) | B(SEND_REJ),
	[IB_CM_MRA_REP_SENT] = B(SEND_RTU) | B(SEND_REJ),
	[IB_CM_ESTABLISHED] = B(SEND_DREQ) | B(SEND_LAP),
	[IB_CM_DREQ_RCVD] = B(SEND_DREP),
	[IB_CM_SIDR_REQ_RCVD] = B(SEND_SIDR_REP),
};

/* The messages and timers that do something in each state (LAP idle). */
static const u64 cm_heeded_inputs[IB_CM_STATE_COUNT] = {
	[IB_CM_LISTEN] = B(RECV_REQ) | B(RECV_SIDR_REQ),
	[IB_CM_REQ_SENT] = B(RECV_REP) | B(RECV_REP_STALE) | B(RECV_MRA_REQ) |
			   B(RECV_REJ) | B(RECV_REJ_STALE) | B(TIMEOUT),
	[IB_CM_MRA_REQ_RCVD] = B(RECV_REP) | B(RECV_REP_STALE) |
			       B(RECV_MRA_REQ) | B(RECV_REJ) |
			       B(RECV_REJ_STALE) | B(TIMEOUT),
	[IB_CM_REQ_RCVD] = B(RECV_REJ),
	[IB_CM_MRA_REQ_SENT] = B(RECV_REQ) | B(RECV_REJ),
	[IB_CM_REP_SENT] = B(RECV_RTU) | B(RECV_MRA_REP) | B(RECV_REQ) |
			   B(RECV_REJ) | B(RECV_REJ_STALE) | B(TIMEOUT),
	[IB_CM_MRA_REP_RCVD] = B(RECV_RTU) | B(RECV_MRA_REP) | B(RECV_REQ) |
			       B(RECV_REJ) | B(RECV_REJ_STALE) | B(TIMEOUT),
	[IB_CM_REP_RCVD] = B(RECV_REJ),
	[IB_CM_MRA_REP_SENT] = B(RECV_REP) | B(RECV_REJ),
	[IB_CM_ESTABLISHED] = B(RECV_DREQ) | B(RECV_REP) | B(RECV_REJ) |
			      B(STALE) | B(RECV_LAP),
	[IB_CM_DREQ_SENT] = B(RECV_DREP) | B(RECV_DREQ) | B(RECV_REJ) | B(TIMEOUT),
	[IB_CM_TIMEWAIT] = B(TIMEWAIT_DONE) | B(RECV_DREQ) | B(RECV_REQ),
	[IB_CM_SIDR_REQ_SENT] = B(RECV_SIDR_REP) | B(TIMEOUT),
};

static void cm_illegal_calls(struct kunit *test)
{
	int s, in;

	for (s = 0; s < IB_CM_STATE_COUNT; s++) {
		for (in = 0; in < CM_IN_COUNT; in++) {
			struct cm_step st = { .next = IB_CM_STATE_COUNT };
			int ret;

			if (!cm_input_is_call(in) || in == CM_IN_DESTROY)
				continue;
			ret = cm_step(s, L0, in, &st);
			if (cm_legal_calls[s] & BIT_ULL(in)) {
				KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%s in %s",
						    cm_input_name(in), cm_state_name(s));
				continue;
			}
			KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL, "%s in %s",
					    cm_input_name(in), cm_state_name(s));
			KUNIT_EXPECT_EQ_MSG(test, st.next, s, "%s in %s moved it",
					    cm_input_name(in), cm_state_name(s));
			KUNIT_EXPECT_EQ(test, st.actions, 0U);
			KUNIT_EXPECT_EQ(test, st.event, NOEV);
		}
	}
}

static void cm_unexpected_messages(struct kunit *test)
{
	int s, in;

	for (s = 0; s < IB_CM_STATE_COUNT; s++) {
		for (in = CM_IN_FIRST_RECV; in < CM_IN_COUNT; in++) {
			struct cm_step st;
			bool heeded = cm_heeded_inputs[s] & BIT_ULL(in);

			KUNIT_EXPECT_EQ(test, cm_step(s, L0, in, &st), 0);
			if (heeded) {
				KUNIT_EXPECT_FALSE_MSG(test, st.actions & CM_DO_DROP,
						       "%s in %s dropped",
						       cm_input_name(in), cm_state_name(s));
				continue;
			}
			KUNIT_EXPECT_EQ_MSG(test, st.actions, (unsigned int)CM_DO_DROP,
					    "%s in %s not dropped",
					    cm_input_name(in), cm_state_name(s));
			KUNIT_EXPECT_EQ(test, st.next, s);
			KUNIT_EXPECT_EQ(test, st.event, NOEV);
		}
	}
}

/* Repeated REQs, REPs and DREQs are answered from what was sent. */
static void cm_duplicates(struct kunit *test)
{
	static const struct cm_expect dup[] = {
		/* REQ again: nothing sent yet, the MRA, the REP, or stale */
		{ S(REQ_RCVD), L0, I(RECV_REQ), S(REQ_RCVD), L0, NOEV, CM_DO_DROP },
		{ S(MRA_REQ_SENT), L0, I(RECV_REQ), S(MRA_REQ_SENT), L0, NOEV, CM_DO_RESEND },
		{ S(REP_SENT), L0, I(RECV_REQ), S(REP_SENT), L0, NOEV, CM_DO_RESEND },
		{ S(MRA_REP_RCVD), L0, I(RECV_REQ), S(MRA_REP_RCVD), L0, NOEV, CM_DO_RESEND },
		{ S(ESTABLISHED), L0, I(RECV_REQ), S(ESTABLISHED), L0, NOEV, CM_DO_DROP },
		{ S(TIMEWAIT), L0, I(RECV_REQ), S(TIMEWAIT), L0, NOEV, CM_DO_SEND_REJ,
		  IB_CM_REJ_STALE_CONN },
		/* REP again: the consumer has it, our MRA, our RTU */
		{ S(REP_RCVD), L0, I(RECV_REP), S(REP_RCVD), L0, NOEV, CM_DO_DROP },
		{ S(MRA_REP_SENT), L0, I(RECV_REP), S(MRA_REP_SENT), L0, NOEV, CM_DO_RESEND },
		{ S(ESTABLISHED), L0, I(RECV_REP), S(ESTABLISHED), L0, NOEV, CM_DO_RESEND },
		/* RTU again */
		{ S(ESTABLISHED), L0, I(RECV_RTU), S(ESTABLISHED), L0, NOEV, CM_DO_DROP },
		/* DREQ again: the consumer has it; our DREP */
		{ S(DREQ_RCVD), L0, I(RECV_DREQ), S(DREQ_RCVD), L0, NOEV, CM_DO_DROP },
		{ S(TIMEWAIT), L0, I(RECV_DREQ), S(TIMEWAIT), L0, NOEV, CM_DO_RESEND },
	};

	cm_check_all(test, dup, ARRAY_SIZE(dup));
}

/* A REQ from a QP we think is connected: REJ it, tear the old one down. */
static void cm_stale(struct kunit *test)
{
	static const struct cm_expect steps[] = {
		{ S(ESTABLISHED), L0, I(STALE), S(DREQ_SENT), L0, NOEV,
		  CM_DO_SEND_DREQ | CM_DO_ARM },
		{ S(REQ_SENT), L0, I(RECV_REJ_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(MRA_REQ_RCVD), L0, I(RECV_REJ_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(REP_SENT), L0, I(RECV_REJ_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(MRA_REP_RCVD), L0, I(RECV_REJ_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		/* the active side finds it in the REP (12.9.8.3.1): REJ, abort */
		{ S(REQ_SENT), L0, I(RECV_REP_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT | CM_DO_SEND_REJ, IB_CM_REJ_STALE_CONN },
		{ S(MRA_REQ_RCVD), L0, I(RECV_REP_STALE), S(TIMEWAIT), L0, E(REJ_RECEIVED),
		  CM_DO_CANCEL | CM_DO_TIMEWAIT | CM_DO_SEND_REJ, IB_CM_REJ_STALE_CONN },
	};
	struct cm_req_match m = {};
	u8 why = 0xff;

	cm_check_all(test, steps, ARRAY_SIZE(steps));

	m.listener = true;
	KUNIT_EXPECT_EQ(test, cm_classify_req(&m, &why), CM_REQ_NEW);
	KUNIT_EXPECT_EQ(test, why, 0);
	m.dup_qpn = true;
	KUNIT_EXPECT_EQ(test, cm_classify_req(&m, &why), CM_REQ_STALE);
	KUNIT_EXPECT_EQ(test, why, IB_CM_REJ_STALE_CONN);
	m.dup_comm_id = true;	/* a repeat of a REQ we know wins */
	KUNIT_EXPECT_EQ(test, cm_classify_req(&m, &why), CM_REQ_DUPLICATE);
	KUNIT_EXPECT_EQ(test, why, 0);
	m = (struct cm_req_match){};
	KUNIT_EXPECT_EQ(test, cm_classify_req(&m, &why), CM_REQ_NO_LISTENER);
	KUNIT_EXPECT_EQ(test, why, IB_CM_REJ_INVALID_SERVICE_ID);
	m.dup_qpn = true;	/* stale even without a listener */
	KUNIT_EXPECT_EQ(test, cm_classify_req(&m, &why), CM_REQ_STALE);
}

/* What destroying an id sends in each state, and where the id ends. */
static void cm_destroy(struct kunit *test)
{
	static const struct cm_expect d[] = {
		{ S(IDLE), L0, I(DESTROY), S(IDLE), L0, NOEV, 0 },
		{ S(LISTEN), L0, I(DESTROY), S(IDLE), L0, NOEV, 0 },
		{ S(REQ_SENT), L0, I(DESTROY), S(IDLE), L0, NOEV,
		  CM_DO_CANCEL | CM_DO_SEND_REJ, IB_CM_REJ_TIMEOUT },
		{ S(MRA_REQ_RCVD), L0, I(DESTROY), S(IDLE), L0, NOEV,
		  CM_DO_CANCEL | CM_DO_SEND_REJ, IB_CM_REJ_TIMEOUT },
		{ S(REQ_RCVD), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_SEND_REJ,
		  IB_CM_REJ_CONSUMER_DEFINED },
		{ S(MRA_REQ_SENT), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_SEND_REJ,
		  IB_CM_REJ_CONSUMER_DEFINED },
		{ S(REP_SENT), L0, I(DESTROY), S(IDLE), L0, NOEV,
		  CM_DO_CANCEL | CM_DO_SEND_REJ, IB_CM_REJ_CONSUMER_DEFINED },
		{ S(MRA_REP_RCVD), L0, I(DESTROY), S(IDLE), L0, NOEV,
		  CM_DO_CANCEL | CM_DO_SEND_REJ, IB_CM_REJ_CONSUMER_DEFINED },
		{ S(REP_RCVD), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_SEND_REJ,
		  IB_CM_REJ_CONSUMER_DEFINED },
		{ S(MRA_REP_SENT), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_SEND_REJ,
		  IB_CM_REJ_CONSUMER_DEFINED },
		{ S(ESTABLISHED), L0, I(DESTROY), S(TIMEWAIT), L0, NOEV,
		  CM_DO_SEND_DREQ | CM_DO_TIMEWAIT },
		{ S(ESTABLISHED), LS(LAP_SENT), I(DESTROY), S(TIMEWAIT), L0, NOEV,
		  CM_DO_SEND_DREQ | CM_DO_TIMEWAIT },
		{ S(DREQ_SENT), L0, I(DESTROY), S(TIMEWAIT), L0, NOEV,
		  CM_DO_CANCEL | CM_DO_TIMEWAIT },
		{ S(DREQ_RCVD), L0, I(DESTROY), S(TIMEWAIT), L0, NOEV,
		  CM_DO_SEND_DREP | CM_DO_TIMEWAIT },
		{ S(TIMEWAIT), L0, I(DESTROY), S(TIMEWAIT), L0, NOEV, 0 },
		{ S(SIDR_REQ_SENT), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_CANCEL },
		{ S(SIDR_REQ_RCVD), L0, I(DESTROY), S(IDLE), L0, NOEV, CM_DO_SIDR_REJECT },
	};

	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(d), IB_CM_STATE_COUNT + 1);
	cm_check_all(test, d, ARRAY_SIZE(d));
}

/* 4.096 us * 2^t, and the waits built from it. */
static void cm_timeouts(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, cm_timeout_ns(0), 4096ULL);
	KUNIT_EXPECT_EQ(test, cm_timeout_ns(8), 1048576ULL);	/* ~1 ms */
	KUNIT_EXPECT_EQ(test, cm_timeout_ns(31), 8796093022208ULL);
	KUNIT_EXPECT_EQ(test, cm_timeout_ns(32), cm_timeout_ns(31));
	KUNIT_EXPECT_EQ(test, cm_timeout_ns(255), cm_timeout_ns(31));
	/* rounded up to whole milliseconds */
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(0), 1UL);
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(8), 2UL);
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(18), 1074UL);	/* 1073.741824 */
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(20), 4295UL);	/* 4294.967296 */
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(24), 68720UL);	/* 68719.476736 */
	KUNIT_EXPECT_EQ(test, cm_timeout_ms(31), 8796094UL);
	/* REQ: 2 * PLT + remote CM response: 2 * 67.108864 + 4294.967296 */
	KUNIT_EXPECT_EQ(test, cm_req_timeout_ms(14, 20), 4430UL);
	/* MRA: service timeout + 2 * PLT: 68719.476736 + 2 * 67.108864 */
	KUNIT_EXPECT_EQ(test, cm_mra_timeout_ms(24, 14), 68854UL);
	KUNIT_EXPECT_EQ(test, cm_req_timeout_ms(0, 0), 1UL);	/* 12.288 us */
}

/* MaxCMRetries resends, then give up; an MRA waits without spending one. */
static void cm_retries(struct kunit *test)
{
	struct cm_retry r;
	int i;

	cm_retry_start(&r, 4430, 3);
	KUNIT_EXPECT_EQ(test, r.wait_ms, 4430UL);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_RESEND);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_GIVE_UP);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_GIVE_UP);

	cm_retry_start(&r, 100, 0);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_GIVE_UP);

	/* rdma_cm's MRA(24) after our first resend */
	cm_retry_start(&r, 4430, 2);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_RESEND);
	cm_retry_mra(&r, cm_mra_timeout_ms(24, 14));
	KUNIT_EXPECT_EQ(test, r.wait_ms, 68854UL);
	KUNIT_EXPECT_EQ(test, r.retries_left, 1);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_RESEND);
	KUNIT_EXPECT_EQ(test, r.wait_ms, 4430UL);
	KUNIT_EXPECT_EQ(test, cm_retry_expired(&r), CM_RETRY_GIVE_UP);
}

static void cm_names(struct kunit *test)
{
	int i;

	for (i = 0; i < IB_CM_STATE_COUNT; i++)
		KUNIT_EXPECT_STRNEQ(test, cm_state_name(i), "?");
	for (i = 0; i < IB_CM_LAP_STATE_COUNT; i++)
		KUNIT_EXPECT_STRNEQ(test, cm_lap_state_name(i), "?");
	for (i = 0; i < CM_IN_COUNT; i++)
		KUNIT_EXPECT_STRNEQ(test, cm_input_name(i), "?");
	for (i = 0; i < IB_CM_EVENT_COUNT; i++)
		KUNIT_EXPECT_STRNEQ(test, cm_event_name(i), "?");
	KUNIT_EXPECT_STREQ(test, cm_state_name(IB_CM_MRA_REP_RCVD), "MRA_REP_RCVD");
	KUNIT_EXPECT_STREQ(test, cm_input_name(CM_IN_RECV_REJ_STALE), "RECV_REJ_STALE");
	KUNIT_EXPECT_STREQ(test, cm_event_name(IB_CM_SIDR_REP_RECEIVED), "SIDR_REP_RECEIVED");
	KUNIT_EXPECT_STREQ(test, cm_state_name(IB_CM_STATE_COUNT), "?");
	KUNIT_EXPECT_STREQ(test, cm_input_name(-1), "?");
}

static void cm_out_of_range(struct kunit *test)
{
	struct cm_step st;

	KUNIT_EXPECT_EQ(test, cm_step(IB_CM_STATE_COUNT, L0, I(DESTROY), &st), -EINVAL);
	KUNIT_EXPECT_EQ(test, cm_step(S(IDLE), IB_CM_LAP_STATE_COUNT, I(DESTROY), &st),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cm_step(S(IDLE), L0, CM_IN_COUNT, &st), -EINVAL);
}

/* The CM states that give attributes for each QP transition. */
static const u32 cm_qp_states[] = {
	[IB_QPS_INIT] = BIT(IB_CM_REQ_SENT) | BIT(IB_CM_MRA_REQ_RCVD) |
			BIT(IB_CM_REQ_RCVD) | BIT(IB_CM_MRA_REQ_SENT) |
			BIT(IB_CM_REP_SENT) | BIT(IB_CM_MRA_REP_RCVD) |
			BIT(IB_CM_REP_RCVD) | BIT(IB_CM_MRA_REP_SENT) |
			BIT(IB_CM_ESTABLISHED),
	[IB_QPS_RTR] = BIT(IB_CM_REQ_RCVD) | BIT(IB_CM_MRA_REQ_SENT) |
		       BIT(IB_CM_REP_SENT) | BIT(IB_CM_MRA_REP_RCVD) |
		       BIT(IB_CM_REP_RCVD) | BIT(IB_CM_MRA_REP_SENT) |
		       BIT(IB_CM_ESTABLISHED),
	[IB_QPS_RTS] = BIT(IB_CM_REQ_RCVD) | BIT(IB_CM_MRA_REQ_SENT) |
		       BIT(IB_CM_REP_SENT) | BIT(IB_CM_MRA_REP_RCVD) |
		       BIT(IB_CM_REP_RCVD) | BIT(IB_CM_MRA_REP_SENT) |
		       BIT(IB_CM_ESTABLISHED),
};

static const struct cm_qp_params cm_qp_sample = {
	.qp_type = IB_QPT_RC, .port_num = 2, .pkey_index = 3,
	.ah_attr = { .dlid = 0x24, .sl = 5, .port_num = 2 },
	.path_mtu = IB_MTU_2048, .remote_qpn = 0x123456,
	.sq_psn = 0xabcdef, .rq_psn = 0x654321,
	.responder_resources = 4, .initiator_depth = 2,
	.local_ack_timeout = 14, .retry_count = 7, .rnr_retry_count = 6,
	.min_rnr_timer = 12,
};

/* ib_cm_init_qp_attr()'s rules: which states, which attributes. */
static void cm_qp_attrs(struct kunit *test)
{
	static const enum ib_qp_state to[] = { IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS };
	struct cm_qp_params p = cm_qp_sample;
	struct ib_qp_attr a;
	int mask[3], i, s;

	for (i = 0; i < ARRAY_SIZE(to); i++)
		for (s = 0; s < IB_CM_STATE_COUNT; s++) {
			int m, ret;

			a.qp_state = to[i];
			ret = cm_qp_attr(s, &p, &a, &m);
			KUNIT_EXPECT_EQ_MSG(test, ret, cm_qp_states[to[i]] & BIT(s) ? 0 : -EINVAL,
					    "QP state %d in %s", to[i], cm_state_name(s));
		}

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_INIT;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_REQ_SENT, &p, &a, &mask[0]), 0);
	KUNIT_EXPECT_EQ(test, mask[0], IB_QP_STATE | IB_QP_ACCESS_FLAGS |
			IB_QP_PKEY_INDEX | IB_QP_PORT);
	KUNIT_EXPECT_EQ(test, a.qp_access_flags, IB_ACCESS_LOCAL_WRITE |
			IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			IB_ACCESS_REMOTE_ATOMIC);
	KUNIT_EXPECT_EQ(test, a.pkey_index, 3);
	KUNIT_EXPECT_EQ(test, a.port_num, 2);

	a.qp_state = IB_QPS_RTR;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_REP_RCVD, &p, &a, &mask[1]), 0);
	KUNIT_EXPECT_EQ(test, mask[1], IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			IB_QP_MIN_RNR_TIMER);
	KUNIT_EXPECT_EQ(test, a.ah_attr.dlid, 0x24);
	KUNIT_EXPECT_EQ(test, a.ah_attr.sl, 5);
	KUNIT_EXPECT_EQ(test, a.path_mtu, IB_MTU_2048);
	KUNIT_EXPECT_EQ(test, a.dest_qp_num, 0x123456U);
	KUNIT_EXPECT_EQ(test, a.rq_psn, 0x654321U);
	KUNIT_EXPECT_EQ(test, a.max_dest_rd_atomic, 4);
	KUNIT_EXPECT_EQ(test, a.min_rnr_timer, 12);

	a.qp_state = IB_QPS_RTS;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_REP_RCVD, &p, &a, &mask[2]), 0);
	KUNIT_EXPECT_EQ(test, mask[2], IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
	KUNIT_EXPECT_EQ(test, a.sq_psn, 0xabcdefU);
	KUNIT_EXPECT_EQ(test, a.timeout, 14);
	KUNIT_EXPECT_EQ(test, a.retry_cnt, 7);
	KUNIT_EXPECT_EQ(test, a.rnr_retry, 6);
	KUNIT_EXPECT_EQ(test, a.max_rd_atomic, 2);

	/* the core's Modify QP table (verbs.c) accepts each mask */
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC, mask[0]));
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_RC, mask[1]));
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_RC, mask[2]));

	/* UC: no RDMA read, atomics or transport timers */
	p.qp_type = IB_QPT_UC;
	for (i = 0; i < ARRAY_SIZE(to); i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = to[i];
		KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask[i]), 0);
	}
	KUNIT_EXPECT_EQ(test, mask[1], IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			IB_QP_DEST_QPN | IB_QP_RQ_PSN);
	KUNIT_EXPECT_EQ(test, mask[2], IB_QP_STATE | IB_QP_SQ_PSN);
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_UC, mask[0]));
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UC, mask[1]));
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_UC, mask[2]));

	/* RC without responder resources: no remote read or atomic */
	p = cm_qp_sample;
	p.responder_resources = 0;
	a.qp_state = IB_QPS_INIT;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_REQ_RCVD, &p, &a, &mask[0]), 0);
	KUNIT_EXPECT_EQ(test, a.qp_access_flags, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);

	/* no other target state, no UD */
	a.qp_state = IB_QPS_RESET;
	KUNIT_EXPECT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask[0]), -EINVAL);
	a.qp_state = IB_QPS_ERR;
	KUNIT_EXPECT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask[0]), -EINVAL);
	p.qp_type = IB_QPT_UD;
	a.qp_state = IB_QPS_INIT;
	KUNIT_EXPECT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask[0]), -EINVAL);
}

/*
 * After a LAP exchange, RTS in ESTABLISHED is RTS to RTS loading the
 * alternate path, with the migration state REARM; before it, and in the
 * other states, RTS is the primary transition.
 */
static void cm_qp_attrs_alt(struct kunit *test)
{
	struct cm_qp_params p = cm_qp_sample;
	struct ib_qp_attr a = {};
	int mask;

	p.alt_valid = true;
	p.alt_ah_attr = (struct ib_ah_attr) { .dlid = 0x31, .sl = 9, .port_num = 1 };
	p.alt_port_num = 1;
	p.alt_pkey_index = 4;
	p.alt_timeout = 17;
	a.qp_state = IB_QPS_RTS;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask), 0);
	KUNIT_EXPECT_EQ(test, mask, IB_QP_STATE | IB_QP_ALT_PATH |
			IB_QP_PATH_MIG_STATE);
	KUNIT_EXPECT_EQ(test, a.path_mig_state, IB_MIG_REARM);
	KUNIT_EXPECT_EQ(test, a.alt_ah_attr.dlid, 0x31);
	KUNIT_EXPECT_EQ(test, a.alt_ah_attr.sl, 9);
	KUNIT_EXPECT_EQ(test, a.alt_port_num, 1);
	KUNIT_EXPECT_EQ(test, a.alt_pkey_index, 4);
	KUNIT_EXPECT_EQ(test, a.alt_timeout, 17);
	/* the primary's attributes are not repeated */
	KUNIT_EXPECT_EQ(test, a.sq_psn, 0U);
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RTS, IB_QPS_RTS,
						   IB_QPT_RC, mask));
	p.qp_type = IB_QPT_UC;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask), 0);
	KUNIT_EXPECT_TRUE(test, ib_modify_qp_is_ok(IB_QPS_RTS, IB_QPS_RTS,
						   IB_QPT_UC, mask));

	/* before ESTABLISHED the alternate path of a LAP plays no part */
	p.qp_type = IB_QPT_RC;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_REP_RCVD, &p, &a, &mask), 0);
	KUNIT_EXPECT_FALSE(test, mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE));
	/* nor in ESTABLISHED without one */
	p.alt_valid = false;
	KUNIT_ASSERT_EQ(test, cm_qp_attr(IB_CM_ESTABLISHED, &p, &a, &mask), 0);
	KUNIT_EXPECT_FALSE(test, mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE));
	KUNIT_EXPECT_TRUE(test, mask & IB_QP_SQ_PSN);
}

static struct kunit_case cm_state_cases[] = {
	KUNIT_CASE(cm_walk_active),
	KUNIT_CASE(cm_walk_passive),
	KUNIT_CASE(cm_walk_sidr),
	KUNIT_CASE(cm_walk_lap),
	KUNIT_CASE(cm_illegal_calls),
	KUNIT_CASE(cm_unexpected_messages),
	KUNIT_CASE(cm_duplicates),
	KUNIT_CASE(cm_stale),
	KUNIT_CASE(cm_destroy),
	KUNIT_CASE(cm_timeouts),
	KUNIT_CASE(cm_retries),
	KUNIT_CASE(cm_names),
	KUNIT_CASE(cm_out_of_range),
	KUNIT_CASE(cm_qp_attrs),
	KUNIT_CASE(cm_qp_attrs_alt),
	{}
};

static struct kunit_suite cm_state_suite = {
	.name = "ib_cm_state",
	.test_cases = cm_state_cases,
};

kunit_test_suite(cm_state_suite);
