// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the pure functions of verbs.c: ib_modify_qp_is_ok()
 * against cases read off IBA 11.2.4.2 (table 91 "QP state transition
 * properties"), and the name and rate tables.
 */

#include <kunit/test.h>

#include <rdma/ib_verbs.h>

struct qp_case {
	const char		*what;
	enum ib_qp_state	cur, next;
	enum ib_qp_type		type;
	u32			mask;
	bool			ok;
};

#define S	IB_QP_STATE
/* what RESET->INIT needs for connected QPs, and RC's INIT->RTR and RTR->RTS */
#define RC_INIT	(S | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS)
#define RC_RTR	(S | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |	\
		 IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER)
#define RC_RTS	(S | IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |	\
		 IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC)

static const struct qp_case qp_cases[] = {
	/* RESET -> INIT */
	{ "RC reset->init", IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC, RC_INIT, true },
	{ "RC reset->init without access flags", IB_QPS_RESET, IB_QPS_INIT,
	  IB_QPT_RC, RC_INIT & ~IB_QP_ACCESS_FLAGS, false },
	{ "RC reset->init with a Q_Key", IB_QPS_RESET, IB_QPS_INIT,
	  IB_QPT_RC, RC_INIT | IB_QP_QKEY, false },
	{ "UC reset->init", IB_QPS_RESET, IB_QPS_INIT, IB_QPT_UC, RC_INIT, true },
	{ "UD reset->init", IB_QPS_RESET, IB_QPS_INIT, IB_QPT_UD,
	  S | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY, true },
	{ "UD reset->init without a Q_Key", IB_QPS_RESET, IB_QPS_INIT,
	  IB_QPT_UD, S | IB_QP_PKEY_INDEX | IB_QP_PORT, false },
	{ "UD reset->init with access flags", IB_QPS_RESET, IB_QPS_INIT,
	  IB_QPT_UD, S | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY |
	  IB_QP_ACCESS_FLAGS, false },
	{ "GSI reset->init", IB_QPS_RESET, IB_QPS_INIT, IB_QPT_GSI,
	  S | IB_QP_PKEY_INDEX | IB_QP_QKEY, true },
	{ "SMI reset->init naming a port", IB_QPS_RESET, IB_QPS_INIT,
	  IB_QPT_SMI, S | IB_QP_PKEY_INDEX | IB_QP_QKEY | IB_QP_PORT, false },

	/* INIT -> INIT and INIT -> RTR */
	{ "RC init->init, nothing changed", IB_QPS_INIT, IB_QPS_INIT,
	  IB_QPT_RC, S, true },
	{ "UD init->init, new Q_Key", IB_QPS_INIT, IB_QPS_INIT, IB_QPT_UD,
	  S | IB_QP_QKEY, true },
	{ "RC init->rtr", IB_QPS_INIT, IB_QPS_RTR, IB_QPT_RC, RC_RTR, true },
	{ "RC init->rtr with an alternate path", IB_QPS_INIT, IB_QPS_RTR,
	  IB_QPT_RC, RC_RTR | IB_QP_ALT_PATH, true },
	{ "RC init->rtr without the RNR timer", IB_QPS_INIT, IB_QPS_RTR,
	  IB_QPT_RC, RC_RTR & ~IB_QP_MIN_RNR_TIMER, false },
	{ "UC init->rtr", IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UC,
	  S | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN, true },
	{ "UC init->rtr with RC's read depth", IB_QPS_INIT, IB_QPS_RTR,
	  IB_QPT_UC, S | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
	  IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC, false },
	{ "UD init->rtr", IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UD, S, true },
	{ "UD init->rtr with an address", IB_QPS_INIT, IB_QPS_RTR, IB_QPT_UD,
	  S | IB_QP_AV, false },
	{ "init->rts skips a state", IB_QPS_INIT, IB_QPS_RTS, IB_QPT_UD,
	  S | IB_QP_SQ_PSN, false },

	/* RTR -> RTS */
	{ "RC rtr->rts", IB_QPS_RTR, IB_QPS_RTS, IB_QPT_RC, RC_RTS, true },
	{ "RC rtr->rts with current state", IB_QPS_RTR, IB_QPS_RTS,
	  IB_QPT_RC, RC_RTS | IB_QP_CUR_STATE | IB_QP_MIN_RNR_TIMER, true },
	{ "RC rtr->rts without retry count", IB_QPS_RTR, IB_QPS_RTS,
	  IB_QPT_RC, RC_RTS & ~IB_QP_RETRY_CNT, false },
	{ "UC rtr->rts with RNR timer", IB_QPS_RTR, IB_QPS_RTS, IB_QPT_UC,
	  S | IB_QP_SQ_PSN | IB_QP_MIN_RNR_TIMER, false },
	{ "UD rtr->rts", IB_QPS_RTR, IB_QPS_RTS, IB_QPT_UD,
	  S | IB_QP_SQ_PSN, true },
	{ "GSI rtr->rts without SQ PSN", IB_QPS_RTR, IB_QPS_RTS, IB_QPT_GSI,
	  S, false },

	/* RTS, SQD, SQE */
	{ "RC rts->rts, new alternate path", IB_QPS_RTS, IB_QPS_RTS,
	  IB_QPT_RC, S | IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE, true },
	{ "RC rts->rts, new timeout", IB_QPS_RTS, IB_QPS_RTS, IB_QPT_RC,
	  S | IB_QP_TIMEOUT, false },
	{ "UD rts->sqd with async notify", IB_QPS_RTS, IB_QPS_SQD, IB_QPT_UD,
	  S | IB_QP_EN_SQD_ASYNC_NOTIFY, true },
	{ "RC sqd->sqd, new timeout", IB_QPS_SQD, IB_QPS_SQD, IB_QPT_RC,
	  S | IB_QP_TIMEOUT | IB_QP_AV, true },
	{ "UC sqd->sqd, new timeout", IB_QPS_SQD, IB_QPS_SQD, IB_QPT_UC,
	  S | IB_QP_TIMEOUT, false },
	{ "RC sqd->rts", IB_QPS_SQD, IB_QPS_RTS, IB_QPT_RC,
	  S | IB_QP_CUR_STATE, true },
	{ "UD sqe->rts", IB_QPS_SQE, IB_QPS_RTS, IB_QPT_UD,
	  S | IB_QP_QKEY, true },
	{ "sqd->rtr goes backwards", IB_QPS_SQD, IB_QPS_RTR, IB_QPT_RC,
	  S, false },

	/* RESET and ERR are reachable from everywhere, without attributes */
	{ "rts->reset", IB_QPS_RTS, IB_QPS_RESET, IB_QPT_RC, S, true },
	{ "sqe->err", IB_QPS_SQE, IB_QPS_ERR, IB_QPT_UD, S, true },
	{ "err->reset", IB_QPS_ERR, IB_QPS_RESET, IB_QPT_UC, S, true },
	{ "init->err with a P_Key index", IB_QPS_INIT, IB_QPS_ERR, IB_QPT_RC,
	  S | IB_QP_PKEY_INDEX, false },
	{ "err->rts", IB_QPS_ERR, IB_QPS_RTS, IB_QPT_RC, S, false },
	{ "reset->reset", IB_QPS_RESET, IB_QPS_RESET, IB_QPT_UD, S, true },

	/* IB_QP_CUR_STATE only when leaving RTR, RTS, SQD or SQE */
	{ "init->init with current state", IB_QPS_INIT, IB_QPS_INIT,
	  IB_QPT_UD, S | IB_QP_CUR_STATE, false },
	{ "rts->err with current state", IB_QPS_RTS, IB_QPS_ERR,
	  IB_QPT_UD, S | IB_QP_CUR_STATE, false },

	/* out of range */
	{ "state 7", 7, IB_QPS_RESET, IB_QPT_RC, S, false },
	{ "to state 9", IB_QPS_RESET, 9, IB_QPT_RC, S, false },
	{ "type 42", IB_QPS_RESET, IB_QPS_ERR, 42, S, false },
};

static void qp_case_desc(const struct qp_case *c, char *desc)
{
	strscpy(desc, c->what, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(qp, qp_cases, qp_case_desc);

static void vt_modify_qp_is_ok(struct kunit *test)
{
	const struct qp_case *c = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, ib_modify_qp_is_ok(c->cur, c->next, c->type,
						     c->mask), c->ok,
			    "%s: mask 0x%x", c->what, c->mask);
}

/* A state the table does not list as reachable refuses every mask. */
static void vt_illegal_refuses_all(struct kunit *test)
{
	u32 bit;

	for (bit = 0; bit <= 20; bit++) {
		u32 mask = S | (1u << bit);

		KUNIT_EXPECT_FALSE(test, ib_modify_qp_is_ok(IB_QPS_RESET,
							    IB_QPS_RTR,
							    IB_QPT_RC, mask));
		KUNIT_EXPECT_FALSE(test, ib_modify_qp_is_ok(IB_QPS_RTR,
							    IB_QPS_SQD,
							    IB_QPT_UD, mask));
	}
}

static void vt_rate_to_mult(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_2_5_GBPS), 1);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_10_GBPS), 4);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_30_GBPS), 12);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_5_GBPS), 2);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_120_GBPS), 48);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(IB_RATE_PORT_CURRENT), -1);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(1), -1);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(11), -1);
	KUNIT_EXPECT_EQ(test, ib_rate_to_mult(255), -1);
}

static void vt_names(struct kunit *test)
{
	int i;

	KUNIT_EXPECT_STREQ(test, ib_event_msg(IB_EVENT_PORT_ACTIVE),
			   "port became active");
	KUNIT_EXPECT_STREQ(test, ib_event_msg(IB_EVENT_GID_CHANGE + 1),
			   "unrecognized event");
	KUNIT_EXPECT_STREQ(test, ib_event_msg(-1), "unrecognized event");
	KUNIT_EXPECT_STREQ(test, ib_wc_status_msg(IB_WC_SUCCESS), "success");
	KUNIT_EXPECT_STREQ(test, ib_wc_status_msg(IB_WC_GENERAL_ERR + 1),
			   "unrecognized status");

	/* every defined value has a name of its own */
	for (i = IB_EVENT_CQ_ERR; i <= IB_EVENT_GID_CHANGE; i++)
		KUNIT_EXPECT_STRNEQ(test, ib_event_msg(i),
				    "unrecognized event");
	for (i = IB_WC_SUCCESS; i <= IB_WC_GENERAL_ERR; i++)
		KUNIT_EXPECT_STRNEQ(test, ib_wc_status_msg(i),
				    "unrecognized status");
}

static struct kunit_case vt_cases[] = {
	KUNIT_CASE_PARAM(vt_modify_qp_is_ok, qp_gen_params),
	KUNIT_CASE(vt_illegal_refuses_all),
	KUNIT_CASE(vt_rate_to_mult),
	KUNIT_CASE(vt_names),
	{}
};

static struct kunit_suite vt_suite = {
	.name = "ib_verbs",
	.test_cases = vt_cases,
};

kunit_test_suite(vt_suite);
