// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the directed-route SMP rules of IBA 14.2.2: each case of
 * C14-9 (outbound) and C14-13 (returning) on the send and the receive side,
 * for CAs and switches, with and without permissive DrSLID/DrDLID, the
 * discard cases, the forwarding decision, and a whole trip through two
 * switches and back.
 */

#include <kunit/test.h>
#include <linux/string.h>

#include <rdma/ib_smi.h>

#include "smi.h"

#define SW	true	/* is_switch */
#define CA	false

#define LID(x)	cpu_to_be16(x)
#define PERM	IB_LID_PERMISSIVE

/* A DR SMP at @ptr of a @cnt-hop path, going out or coming back. */
static void smp_at(struct ib_smp *smp, bool back, u8 ptr, u8 cnt,
		   __be16 dr_slid, __be16 dr_dlid)
{
	memset(smp, 0, sizeof(*smp));
	smp->base_version = 1;
	smp->mgmt_class = 0x81;
	smp->class_version = 1;
	smp->status = back ? IB_SMP_DIRECTION : 0;
	smp->hop_ptr = ptr;
	smp->hop_cnt = cnt;
	smp->dr_slid = dr_slid;
	smp->dr_dlid = dr_dlid;
}

/* ---- send, outbound (C14-9) ---- */

static void smi_send_out_start(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-9:1: the originator steps to hop 1, whose port it must use. */
	smp_at(&smp, false, 0, 2, PERM, PERM);
	smp.initial_path[1] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 1);

	smp_at(&smp, false, 0, 2, PERM, PERM);
	smp.initial_path[1] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 2), IB_SMI_DISCARD);
}

static void smi_send_out_middle(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-9:2: a switch relays out of initial_path[hop_ptr + 1]. */
	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 5;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 5), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);

	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 5;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 4), IB_SMI_DISCARD);

	/* ... and a CA never does. */
	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 5;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 5), IB_SMI_DISCARD);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 1);
}

static void smi_send_out_end(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-9:3: leaving the last DR hop; a switch goes on by LID. */
	smp_at(&smp, false, 2, 2, PERM, LID(9));
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 3), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);

	/* a CA only with a permissive DrDLID */
	smp_at(&smp, false, 2, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);

	smp_at(&smp, false, 2, 2, PERM, LID(9));
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_DISCARD);

	/* a zero-hop SMP sent from the SM to its own port */
	smp_at(&smp, false, 0, 0, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 1);
}

static void smi_send_out_done_and_bad(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-9:4 */
	smp_at(&smp, false, 3, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);

	/* C14-9:5 */
	smp_at(&smp, false, 4, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 1), IB_SMI_DISCARD);
	smp_at(&smp, false, 255, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 1), IB_SMI_DISCARD);

	/* C14-6: at most 63 hops */
	smp_at(&smp, false, 0, 64, PERM, PERM);
	smp.initial_path[1] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_DISCARD);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);
	smp_at(&smp, false, 0, 63, PERM, PERM);
	smp.initial_path[1] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
}

/* ---- send, returning (C14-13) ---- */

static void smi_send_back(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-13:1: the responder steps back and leaves by return_path. */
	smp_at(&smp, true, 3, 2, PERM, PERM);
	smp.return_path[2] = 4;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 4), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);
	smp_at(&smp, true, 3, 2, PERM, PERM);
	smp.return_path[2] = 4;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_DISCARD);

	/* C14-13:2: intermediate hops are switches */
	smp_at(&smp, true, 3, 3, PERM, PERM);
	smp.return_path[2] = 7;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 7), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);
	smp_at(&smp, true, 2, 3, PERM, PERM);
	smp.return_path[1] = 7;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 6), IB_SMI_DISCARD);
	smp_at(&smp, true, 3, 3, PERM, PERM);
	smp.return_path[2] = 7;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 7), IB_SMI_DISCARD);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);

	/* C14-13:3: a switch goes on towards DrSLID, a CA only if it is permissive */
	smp_at(&smp, true, 1, 2, LID(1), PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);
	smp_at(&smp, true, 1, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);
	smp_at(&smp, true, 1, 2, LID(1), PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_DISCARD);

	/* C14-13:4 */
	smp_at(&smp, true, 0, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);

	/* C14-13:5 */
	smp_at(&smp, true, 4, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 1), IB_SMI_DISCARD);
	/* C14-6 */
	smp_at(&smp, true, 0, 200, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 1), IB_SMI_DISCARD);
}

/* ---- receive, outbound (C14-9) ---- */

static void smi_recv_out(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-9:1: the sender should have stepped the hop pointer */
	smp_at(&smp, false, 0, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 1, 8), IB_SMI_DISCARD);

	/* C14-9:2: a switch records the arrival port; the next port must exist */
	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 8;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 2, 8), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.return_path[1], 2);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 1);
	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 9;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 2, 8), IB_SMI_DISCARD);
	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);
	KUNIT_EXPECT_EQ(test, smp.return_path[1], 0);

	/* C14-9:3: end of the DR part; the arrival port is recorded */
	smp_at(&smp, false, 2, 2, PERM, LID(5));
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 3, 8), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.return_path[2], 3);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);
	smp_at(&smp, false, 2, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.return_path[2], 1);
	smp_at(&smp, false, 2, 2, PERM, LID(5));
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);
	/* zero hops: nothing to record */
	smp_at(&smp, false, 0, 0, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.return_path[0], 0);

	/* C14-9:4 and C14-9:5 */
	smp_at(&smp, false, 3, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	smp_at(&smp, false, 5, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 1, 8), IB_SMI_DISCARD);
	/* C14-6 */
	smp_at(&smp, false, 1, 64, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 1, 8), IB_SMI_DISCARD);
}

/* ---- receive, returning (C14-13) ---- */

static void smi_recv_back(struct kunit *test)
{
	struct ib_smp smp;

	/* C14-13:1: it must come back in where it went out */
	smp_at(&smp, true, 3, 2, PERM, PERM);
	smp.return_path[2] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);
	smp_at(&smp, true, 3, 2, PERM, PERM);
	smp.return_path[2] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 2, 2), IB_SMI_DISCARD);

	/* C14-13:2: a switch, whose next port on the way back exists */
	smp_at(&smp, true, 2, 3, PERM, PERM);
	smp.return_path[1] = 6;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 3, 8), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 2);
	smp_at(&smp, true, 2, 3, PERM, PERM);
	smp.return_path[1] = 9;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 3, 8), IB_SMI_DISCARD);
	smp_at(&smp, true, 2, 3, PERM, PERM);
	smp.return_path[1] = 1;
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);

	/* C14-13:3: a permissive DrSLID means the SM is here */
	smp_at(&smp, true, 1, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);
	smp_at(&smp, true, 1, 2, LID(3), PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 1, 8), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 1);
	smp_at(&smp, true, 1, 2, LID(3), PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);

	/* C14-13:4, C14-13:5, C14-6 */
	smp_at(&smp, true, 0, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	smp_at(&smp, true, 7, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);
	smp_at(&smp, true, 0, 64, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_DISCARD);
}

/* ---- where a received SMP goes ---- */

static void smi_forward_decision(struct kunit *test)
{
	struct ib_smp smp;

	smp_at(&smp, false, 1, 3, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	smp_at(&smp, false, 2, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_SEND);
	smp_at(&smp, false, 2, 2, PERM, LID(4));
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);
	smp_at(&smp, false, 3, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_SEND);
	smp_at(&smp, false, 0, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);

	smp_at(&smp, true, 2, 3, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	smp_at(&smp, true, 1, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);
	smp_at(&smp, true, 1, 2, LID(4), PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_SEND);
	smp_at(&smp, true, 0, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);
	smp_at(&smp, true, 3, 2, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);
}

static void smi_forward_port(struct kunit *test)
{
	struct ib_smp smp;

	smp_at(&smp, false, 1, 3, PERM, PERM);
	smp.initial_path[2] = 6;
	KUNIT_EXPECT_EQ(test, smi_get_fwd_port(&smp), 6);
	smp_at(&smp, true, 2, 3, PERM, PERM);
	smp.return_path[1] = 4;
	KUNIT_EXPECT_EQ(test, smi_get_fwd_port(&smp), 4);
	/* no entry beyond the ends of the path arrays */
	smp_at(&smp, false, 63, 63, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_get_fwd_port(&smp), -1);
	smp_at(&smp, true, 0, 3, PERM, PERM);
	KUNIT_EXPECT_EQ(test, smi_get_fwd_port(&smp), -1);
}

/*
 * The SM on CA port 1 reads an attribute of a CA two switches away:
 * SM(1) -> (1)S1(4) -> (2)S2(7) -> (1)CA, and back. Each node applies the
 * receive rule, the forwarding decision, and the send rule, as the MAD
 * layer will.
 */
static void smi_whole_trip(struct kunit *test)
{
	struct ib_smp smp;

	smp_at(&smp, false, 0, 3, PERM, PERM);
	smp.initial_path[1] = 1;
	smp.initial_path[2] = 4;
	smp.initial_path[3] = 7;

	/* SM node sends out of port 1 */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	/* S1: in on 1, relay out of 4 */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 1, 8), IB_SMI_HANDLE);
	KUNIT_ASSERT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	KUNIT_ASSERT_EQ(test, smi_get_fwd_port(&smp), 4);
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 4), IB_SMI_HANDLE);
	/* S2: in on 2, relay out of 7 */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 2, 8), IB_SMI_HANDLE);
	KUNIT_ASSERT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	KUNIT_ASSERT_EQ(test, smi_get_fwd_port(&smp), 7);
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 7), IB_SMI_HANDLE);
	/* target CA: in on 1, at the end of the path, DrDLID permissive */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);
	KUNIT_EXPECT_EQ(test, smp.return_path[1], 1);
	KUNIT_EXPECT_EQ(test, smp.return_path[2], 2);
	KUNIT_EXPECT_EQ(test, smp.return_path[3], 1);
	/* looped to its SMA through the send rule: hop_ptr = hop_cnt + 1 */
	KUNIT_ASSERT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_SEND);
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 4);

	/* the SMA answers: same path, D bit set */
	smp.status |= IB_SMP_DIRECTION;
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, CA, 1), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 3);
	/* S2: in on 7, back out of 2 */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 7, 8), IB_SMI_HANDLE);
	KUNIT_ASSERT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	KUNIT_ASSERT_EQ(test, smi_get_fwd_port(&smp), 2);
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 2), IB_SMI_HANDLE);
	/* S1: in on 4, back out of 1 */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, SW, 4, 8), IB_SMI_HANDLE);
	KUNIT_ASSERT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_FORWARD);
	KUNIT_ASSERT_EQ(test, smi_get_fwd_port(&smp), 1);
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_send(&smp, SW, 1), IB_SMI_HANDLE);
	/* SM node: DrSLID permissive, so it is for the SM here */
	KUNIT_ASSERT_EQ(test, smi_handle_dr_smp_recv(&smp, CA, 1, 2), IB_SMI_HANDLE);
	KUNIT_EXPECT_EQ(test, smp.hop_ptr, 0);
	KUNIT_EXPECT_EQ(test, smi_check_forward_dr_smp(&smp), IB_SMI_LOCAL);
}

static struct kunit_case ib_smi_cases[] = {
	KUNIT_CASE(smi_send_out_start),
	KUNIT_CASE(smi_send_out_middle),
	KUNIT_CASE(smi_send_out_end),
	KUNIT_CASE(smi_send_out_done_and_bad),
	KUNIT_CASE(smi_send_back),
	KUNIT_CASE(smi_recv_out),
	KUNIT_CASE(smi_recv_back),
	KUNIT_CASE(smi_forward_decision),
	KUNIT_CASE(smi_forward_port),
	KUNIT_CASE(smi_whole_trip),
	{}
};

static struct kunit_suite ib_smi_suite = {
	.name = "ib_smi",
	.test_cases = ib_smi_cases,
};

kunit_test_suite(ib_smi_suite);
