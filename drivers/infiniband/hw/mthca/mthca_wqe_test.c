// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of the mem-free WQE layouts and queue sizing arithmetic
 * (mthca_wqe.h).  The expected numbers are the ones the HCA's formats
 * imply: 16-byte segments, 64-byte minimum strides, the 48-byte mem-free
 * UD segment and the two extra gather entries of an MLX send.
 */
#include <kunit/test.h>

#include "mthca_wqe.h"

static void wqe_seg_sizes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct mthca_next_seg), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct mthca_ud_seg), 48);
	KUNIT_EXPECT_EQ(test, sizeof(struct mthca_av), 32);
	KUNIT_EXPECT_EQ(test, sizeof(struct mthca_cqe), MTHCA_CQE_BYTES);
	KUNIT_EXPECT_EQ(test, offsetof(struct mthca_cqe, imm_pkey), 16);
	KUNIT_EXPECT_EQ(test, offsetof(struct mthca_cqe, wqe), 24);
	KUNIT_EXPECT_EQ(test, offsetof(struct mthca_av, dgid), 16);
	KUNIT_EXPECT_EQ(test, offsetof(struct mthca_mlx_seg, rlid), 12);
}

static void wqe_cqe_fields(struct kunit *test)
{
	struct mthca_cqe cqe = {};

	/* opcode in byte 28, the send flag in byte 29, owner in byte 31 */
	((u8 *)&cqe)[28] = 0xfe;
	((u8 *)&cqe)[29] = 0x80;
	*mthca_cqe_owner(&cqe) = MTHCA_CQE_OWNER_HW;
	KUNIT_EXPECT_EQ(test, mthca_cqe_opcode(&cqe), 0xfe);
	KUNIT_EXPECT_TRUE(test, be32_to_cpu(cqe.op_owner) & MTHCA_CQE_SEND);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(cqe.op_owner) & 0xff, 0x80);
}

static void wqe_shift_rounds_up(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(0), 6);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(16), 6);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(64), 6);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(65), 7);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(128), 7);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(129), 8);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(1008), 10);
}

static void wqe_recv_sizes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mthca_rq_wqe_bytes(0), 16);
	KUNIT_EXPECT_EQ(test, mthca_rq_wqe_bytes(1), 32);
	/* 3 entries fill a 64-byte stride, the 4th needs 128 */
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(mthca_rq_wqe_bytes(3)), 6);
	KUNIT_EXPECT_EQ(test, mthca_wqe_shift(mthca_rq_wqe_bytes(4)), 7);
}

static void wqe_send_sizes(struct kunit *test)
{
	/* RC: an atomic needs raddr + atomic + one data segment */
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_RC, 0), 64);
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_RC, 1), 64);
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_RC, 3), 80);
	/* UC: raddr + data; a bind segment (32 bytes) is the floor */
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_UC, 0), 48);
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_UC, 2), 64);
	/* UD: the 48-byte segment with the address vector */
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_UD, 1), 80);
	/* MLX: header and ICRC entries on top of the caller's */
	KUNIT_EXPECT_EQ(test, mthca_sq_wqe_bytes(MTHCA_SQ_MLX, 1), 64);
}

static void wqe_sge_room(struct kunit *test)
{
	unsigned int stride;

	KUNIT_EXPECT_EQ(test, mthca_sq_max_sge(MTHCA_SQ_RC, 64), 2);
	KUNIT_EXPECT_EQ(test, mthca_sq_max_sge(MTHCA_SQ_UD, 128), 4);
	KUNIT_EXPECT_EQ(test, mthca_sq_max_sge(MTHCA_SQ_MLX, 64), 1);
	/* what a stride is sized for fits back into it */
	stride = 1u << mthca_wqe_shift(mthca_sq_wqe_bytes(MTHCA_SQ_UD, 5));
	KUNIT_EXPECT_GE(test, mthca_sq_max_sge(MTHCA_SQ_UD, stride), 5u);
}

static void wqe_sq_offset_aligned(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mthca_sq_offset(0, 6, 7), 0ul);
	KUNIT_EXPECT_EQ(test, mthca_sq_offset(4, 6, 6), 256ul);
	/* 3 x 64 bytes of RQ, 128-byte send stride: SQ at 256 */
	KUNIT_EXPECT_EQ(test, mthca_sq_offset(3, 6, 7), 256ul);
	KUNIT_EXPECT_EQ(test, mthca_sq_offset(8, 7, 6), 1024ul);
}

static struct kunit_case mthca_wqe_cases[] = {
	KUNIT_CASE(wqe_seg_sizes),
	KUNIT_CASE(wqe_cqe_fields),
	KUNIT_CASE(wqe_shift_rounds_up),
	KUNIT_CASE(wqe_recv_sizes),
	KUNIT_CASE(wqe_send_sizes),
	KUNIT_CASE(wqe_sge_room),
	KUNIT_CASE(wqe_sq_offset_aligned),
	{}
};

static struct kunit_suite mthca_wqe_suite = {
	.name = "mthca_wqe",
	.test_cases = mthca_wqe_cases,
};

kunit_test_suite(mthca_wqe_suite);
