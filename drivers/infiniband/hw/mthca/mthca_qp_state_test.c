// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of the QP state machine of mthca_qp_state.h: the context
 * codes of the IBA states, a firmware command for exactly the transitions
 * of the IBA QP state diagram, and the core's Modify QP table
 * (ib_modify_qp_is_ok) refusing the others.
 */
#include <kunit/test.h>

#include "mthca_qp_state.h"

static void qps_codes_round_trip(struct kunit *test)
{
	enum ib_qp_state s;

	for (s = IB_QPS_RESET; s <= IB_QPS_ERR; s++)
		KUNIT_EXPECT_EQ(test, mthca_qps_from_hw(mthca_qps_to_hw(s)), s);
	KUNIT_EXPECT_EQ(test, mthca_qps_to_hw(IB_QPS_SQE), 4);
	KUNIT_EXPECT_EQ(test, mthca_qps_to_hw(IB_QPS_SQD), 5);
	KUNIT_EXPECT_EQ(test, mthca_qps_from_hw(MTHCA_HW_QPS_DRAINING),
			IB_QPS_SQD);
	KUNIT_EXPECT_STREQ(test, mthca_qps_name(IB_QPS_SQE), "SQE");
}

/* The transitions of the IBA QP state diagram, besides any -> RESET/ERR. */
static bool diagram_has(enum ib_qp_state cur, enum ib_qp_state next)
{
	static const u8 edges[][2] = {
		{ IB_QPS_RESET, IB_QPS_INIT }, { IB_QPS_INIT, IB_QPS_INIT },
		{ IB_QPS_INIT, IB_QPS_RTR }, { IB_QPS_RTR, IB_QPS_RTS },
		{ IB_QPS_RTS, IB_QPS_RTS }, { IB_QPS_RTS, IB_QPS_SQD },
		{ IB_QPS_SQD, IB_QPS_RTS }, { IB_QPS_SQD, IB_QPS_SQD },
		{ IB_QPS_SQE, IB_QPS_RTS },
	};
	int i;

	if (next == IB_QPS_RESET || next == IB_QPS_ERR)
		return true;
	for (i = 0; i < ARRAY_SIZE(edges); i++)
		if (edges[i][0] == cur && edges[i][1] == next)
			return true;
	return false;
}

/* Every attribute bit of a Modify QP call. */
#define ALL_ATTRS	(IB_QP_DEST_QPN * 2 - 1)

static bool core_ok(enum ib_qp_state cur, enum ib_qp_state next,
		    enum ib_qp_type type, int mask)
{
	return ib_modify_qp_is_ok(cur, next, type, mask);
}

static void qps_commands_follow_the_diagram(struct kunit *test)
{
	enum ib_qp_state cur, next;
	u16 cmd;

	for (cur = IB_QPS_RESET; cur <= IB_QPS_ERR; cur++)
		for (next = IB_QPS_RESET; next <= IB_QPS_ERR; next++) {
			cmd = mthca_qp_transition(cur, next);
			KUNIT_EXPECT_EQ_MSG(test, cmd != 0, diagram_has(cur, next),
					    "%s -> %s", mthca_qps_name(cur),
					    mthca_qps_name(next));
			if (diagram_has(cur, next))
				continue;
			/* the core refuses these whatever the mask */
			KUNIT_EXPECT_FALSE(test, core_ok(cur, next, IB_QPT_RC,
							 IB_QP_STATE));
			KUNIT_EXPECT_FALSE(test, core_ok(cur, next, IB_QPT_UD,
							 ALL_ATTRS));
		}
}

/* Masks the core accepts for the usual bring-up of each QP type. */
static void qps_core_accepts_bring_up(struct kunit *test)
{
	const int rc_init = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
		IB_QP_ACCESS_FLAGS;
	const int rc_rtr = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
		IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
		IB_QP_MIN_RNR_TIMER;
	const int rc_rts = IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
		IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC;
	const int smi_init = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_QKEY;

	KUNIT_EXPECT_TRUE(test, core_ok(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_RC,
					rc_init));
	KUNIT_EXPECT_TRUE(test, core_ok(IB_QPS_INIT, IB_QPS_RTR, IB_QPT_RC,
					rc_rtr));
	KUNIT_EXPECT_TRUE(test, core_ok(IB_QPS_RTR, IB_QPS_RTS, IB_QPT_RC,
					rc_rts));
	KUNIT_EXPECT_TRUE(test, core_ok(IB_QPS_RESET, IB_QPS_INIT, IB_QPT_SMI,
					smi_init));
	KUNIT_EXPECT_TRUE(test, core_ok(IB_QPS_SQE, IB_QPS_RTS, IB_QPT_UD,
					IB_QP_STATE));
}

static void qps_commands(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_RESET, IB_QPS_INIT),
			0x19);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_INIT, IB_QPS_RTR),
			0x1a);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_RTR, IB_QPS_RTS),
			0x1b);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_SQE, IB_QPS_RTS),
			0x1d);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_RTS, IB_QPS_ERR),
			0x1e);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_SQD, IB_QPS_RESET),
			0x21);
	/* no shortcuts through the diagram */
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_RESET, IB_QPS_RTR), 0);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_INIT, IB_QPS_RTS), 0);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_RTR, IB_QPS_SQD), 0);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_ERR, IB_QPS_RTS), 0);
	KUNIT_EXPECT_EQ(test, mthca_qp_transition(IB_QPS_SQE, IB_QPS_SQD), 0);
}

static struct kunit_case mthca_qp_state_cases[] = {
	KUNIT_CASE(qps_codes_round_trip),
	KUNIT_CASE(qps_commands_follow_the_diagram),
	KUNIT_CASE(qps_core_accepts_bring_up),
	KUNIT_CASE(qps_commands),
	{}
};

static struct kunit_suite mthca_qp_state_suite = {
	.name = "mthca_qp_state",
	.test_cases = mthca_qp_state_cases,
};

kunit_test_suite(mthca_qp_state_suite);
