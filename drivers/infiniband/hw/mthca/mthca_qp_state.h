/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The QP state machine as the MT25208 sees it: how the QP context encodes
 * the IBA states, and which firmware command makes each transition.  Pure
 * functions, shared by mthca_qp.c and its KUnit suite.
 *
 * ib_modify_qp_is_ok() (the Modify QP table of IBA 11.2.4.2) decides
 * whether a transition and its attributes are legal; every transition it
 * accepts has a command here.
 */
#ifndef MTHCA_QP_STATE_H
#define MTHCA_QP_STATE_H

#include <rdma/ib_verbs.h>
#include "mthca_cmd.h"

/* QP states as the QP context encodes them (flags [31:28]). */
enum {
	MTHCA_HW_QPS_RESET	= 0,
	MTHCA_HW_QPS_INIT	= 1,
	MTHCA_HW_QPS_RTR	= 2,
	MTHCA_HW_QPS_RTS	= 3,
	MTHCA_HW_QPS_SQE	= 4,
	MTHCA_HW_QPS_SQD	= 5,
	MTHCA_HW_QPS_ERR	= 6,
	MTHCA_HW_QPS_DRAINING	= 7,	/* SQD, still draining */
};

/* The name of an IBA QP state, for messages. */
static inline const char *mthca_qps_name(enum ib_qp_state s)
{
	static const char * const name[] = {
		[IB_QPS_RESET]	= "RESET",
		[IB_QPS_INIT]	= "INIT",
		[IB_QPS_RTR]	= "RTR",
		[IB_QPS_RTS]	= "RTS",
		[IB_QPS_SQD]	= "SQD",
		[IB_QPS_SQE]	= "SQE",
		[IB_QPS_ERR]	= "ERR",
	};

	return s <= IB_QPS_ERR ? name[s] : "?";
}

/* The context code of an IBA state (callers pass a valid state). */
static inline u8 mthca_qps_to_hw(enum ib_qp_state s)
{
	static const u8 code[] = {
		[IB_QPS_RESET]	= MTHCA_HW_QPS_RESET,
		[IB_QPS_INIT]	= MTHCA_HW_QPS_INIT,
		[IB_QPS_RTR]	= MTHCA_HW_QPS_RTR,
		[IB_QPS_RTS]	= MTHCA_HW_QPS_RTS,
		[IB_QPS_SQD]	= MTHCA_HW_QPS_SQD,
		[IB_QPS_SQE]	= MTHCA_HW_QPS_SQE,
		[IB_QPS_ERR]	= MTHCA_HW_QPS_ERR,
	};

	return code[s];
}

/* The IBA state of a context code (4 bits); DRAINING is SQD. */
static inline enum ib_qp_state mthca_qps_from_hw(unsigned int code)
{
	static const u8 state[16] = {
		[MTHCA_HW_QPS_RESET]	= IB_QPS_RESET,
		[MTHCA_HW_QPS_INIT]	= IB_QPS_INIT,
		[MTHCA_HW_QPS_RTR]	= IB_QPS_RTR,
		[MTHCA_HW_QPS_RTS]	= IB_QPS_RTS,
		[MTHCA_HW_QPS_SQE]	= IB_QPS_SQE,
		[MTHCA_HW_QPS_SQD]	= IB_QPS_SQD,
		[MTHCA_HW_QPS_ERR]	= IB_QPS_ERR,
		[MTHCA_HW_QPS_DRAINING]	= IB_QPS_SQD,
		[8 ... 15]		= IB_QPS_ERR,
	};

	return state[code & 15];
}

/**
 * mthca_qp_transition() - the firmware command of a QP transition
 * @cur: the current state
 * @next: the state asked for
 *
 * Any state may go to RESET or ERR; the others follow the QP state
 * diagram of the IBA (chapter 10).
 *
 * Return: the command opcode, or 0 when there is no such transition.
 */
static inline u16 mthca_qp_transition(enum ib_qp_state cur,
				      enum ib_qp_state next)
{
	static const u8 cmd[IB_QPS_ERR + 1][IB_QPS_ERR + 1] = {
		[IB_QPS_RESET] = {
			[IB_QPS_INIT] = MTHCA_CMD_RST2INIT_QP,
		},
		[IB_QPS_INIT] = {
			[IB_QPS_INIT] = MTHCA_CMD_INIT2INIT_QP,
			[IB_QPS_RTR] = MTHCA_CMD_INIT2RTR_QP,
		},
		[IB_QPS_RTR] = {
			[IB_QPS_RTS] = MTHCA_CMD_RTR2RTS_QP,
		},
		[IB_QPS_RTS] = {
			[IB_QPS_RTS] = MTHCA_CMD_RTS2RTS_QP,
			[IB_QPS_SQD] = MTHCA_CMD_RTS2SQD_QP,
		},
		[IB_QPS_SQD] = {
			[IB_QPS_RTS] = MTHCA_CMD_SQD2RTS_QP,
			[IB_QPS_SQD] = MTHCA_CMD_SQD2SQD_QP,
		},
		[IB_QPS_SQE] = {
			[IB_QPS_RTS] = MTHCA_CMD_SQERR2RTS_QP,
		},
	};

	if (cur > IB_QPS_ERR || next > IB_QPS_ERR)
		return 0;
	if (next == IB_QPS_RESET)
		return MTHCA_CMD_2RST_QP;
	if (next == IB_QPS_ERR)
		return MTHCA_CMD_2ERR_QP;
	return cmd[cur][next];
}

#endif /* MTHCA_QP_STATE_H */
