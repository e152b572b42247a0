// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of the checks write() on umadN makes before anything is
 * sent (user_mad.h): the split of the byte count, the header fields, the
 * size of a MAD by class and RMPP mode, and which sends the duplicate-TID
 * rule applies to. Boundaries on both sides, up to SIZE_MAX.
 */

#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/string.h>

#include "user_mad.h"

#define HDR	sizeof(struct ib_user_mad_hdr)
#define OLD_HDR	sizeof(struct ib_user_mad_hdr_old)

static void umad_test_mad_bytes(struct kunit *test)
{
	/* at least the RMPP header after the header, of either format */
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR + IB_MGMT_RMPP_HDR - 1, HDR),
			(ssize_t)-EINVAL);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR + IB_MGMT_RMPP_HDR, HDR),
			(ssize_t)IB_MGMT_RMPP_HDR);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(OLD_HDR + IB_MGMT_RMPP_HDR, OLD_HDR),
			(ssize_t)IB_MGMT_RMPP_HDR);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(0, HDR), (ssize_t)-EINVAL);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR - 1, HDR), (ssize_t)-EINVAL);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR + IB_MGMT_MAD_SIZE, HDR),
			(ssize_t)IB_MGMT_MAD_SIZE);

	/* the cap, then everything beyond it, up to the largest counts */
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR + UMAD_MAX_MAD_BYTES, HDR),
			(ssize_t)UMAD_MAX_MAD_BYTES);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(HDR + UMAD_MAX_MAD_BYTES + 1, HDR),
			(ssize_t)-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(INT_MAX, HDR), (ssize_t)-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes((size_t)INT_MAX + 1, HDR),
			(ssize_t)-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes((size_t)UINT_MAX + HDR + 1, HDR),
			(ssize_t)-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(SIZE_MAX, HDR), (ssize_t)-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_mad_bytes(SIZE_MAX, SIZE_MAX), (ssize_t)-EINVAL);
}

static void umad_test_send_hdr(struct kunit *test)
{
	struct ib_user_mad_hdr hdr = {};

	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), 0);

	hdr.id = UMAD_MAX_AGENTS - 1;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), 0);
	hdr.id = UMAD_MAX_AGENTS;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.id = U32_MAX;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.id = 0;

	hdr.sl = 15;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), 0);
	hdr.sl = 16;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.sl = 0;

	hdr.retries = UMAD_MAX_RETRIES;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), 0);
	hdr.retries = UMAD_MAX_RETRIES + 1;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.retries = INT_MAX;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.retries = U32_MAX;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.retries = 0;

	hdr.timeout_ms = UMAD_MAX_TIMEOUT_MS;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), 0);
	hdr.timeout_ms = UMAD_MAX_TIMEOUT_MS + 1;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
	hdr.timeout_ms = U32_MAX;
	KUNIT_EXPECT_EQ(test, umad_check_send_hdr(&hdr), -EINVAL);
}

/* The first bytes of a MAD of @mgmt_class, RMPP Active or not. */
static void umad_test_head(struct ib_rmpp_mad *head, u8 mgmt_class,
			   bool active)
{
	memset(head, 0, sizeof(*head));
	head->mad_hdr.base_version = 1;
	head->mad_hdr.mgmt_class = mgmt_class;
	head->mad_hdr.class_version = 2;
	if (active)
		ib_set_rmpp_flags(&head->rmpp_hdr, IB_MGMT_RMPP_FLAG_ACTIVE);
}

/* Kernel RMPP, Active: up to UMAD_MAX_RMPP_DATA data bytes. */
static void umad_test_plan_kernel_rmpp(struct kunit *test)
{
	struct umad_send_layout l;
	struct ib_rmpp_mad head;

	umad_test_head(&head, IB_MGMT_CLASS_SUBN_ADM, true);

	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_SA_HDR, 1, &l), 0);
	KUNIT_EXPECT_EQ(test, l.hdr_len, IB_MGMT_SA_HDR);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)0);
	KUNIT_EXPECT_TRUE(test, l.kernel_rmpp);
	KUNIT_EXPECT_TRUE(test, l.rmpp_active);
	KUNIT_EXPECT_FALSE(test, l.user_rmpp_segment);

	/* shorter than the SA header: no data length to speak of */
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_SA_HDR - 1, 1, &l),
			-EINVAL);

	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_SA_HDR + 10000, 1,
					     &l), 0);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)10000);

	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_SA_HDR +
					     UMAD_MAX_RMPP_DATA, 1, &l), 0);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)UMAD_MAX_RMPP_DATA);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_SA_HDR +
					     UMAD_MAX_RMPP_DATA + 1, 1, &l),
			-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, INT_MAX, 1, &l), -EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, (size_t)INT_MAX + 1, 1, &l),
			-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, SIZE_MAX, 1, &l),
			-EMSGSIZE);

	/* the cap holds for the classes with a longer header too */
	umad_test_head(&head, IB_MGMT_CLASS_DEVICE_ADM, true);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_DEVICE_HDR +
					     UMAD_MAX_RMPP_DATA, 1, &l), 0);
	KUNIT_EXPECT_EQ(test, l.hdr_len, IB_MGMT_DEVICE_HDR);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_DEVICE_HDR +
					     UMAD_MAX_RMPP_DATA + 1, 1, &l),
			-EMSGSIZE);
}

/* Everything that is not sent as kernel RMPP fits one packet. */
static void umad_test_plan_one_packet(struct kunit *test)
{
	struct umad_send_layout l;
	struct ib_rmpp_mad head;

	/* an SMP: no RMPP class, the common header only */
	umad_test_head(&head, IB_MGMT_CLASS_SUBN_LID_ROUTED, false);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 1, &l), 0);
	KUNIT_EXPECT_EQ(test, l.hdr_len, IB_MGMT_MAD_HDR);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)IB_MGMT_MAD_DATA);
	KUNIT_EXPECT_FALSE(test, l.kernel_rmpp);
	KUNIT_EXPECT_FALSE(test, l.rmpp_active);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE + 1, 1, &l),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, SIZE_MAX, 0, &l), -EINVAL);

	/* an SA MAD without the Active flag, kernel RMPP or not */
	umad_test_head(&head, IB_MGMT_CLASS_SUBN_ADM, false);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 1, &l), 0);
	KUNIT_EXPECT_TRUE(test, l.kernel_rmpp);
	KUNIT_EXPECT_FALSE(test, l.rmpp_active);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)IB_MGMT_SA_DATA);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE + 1, 1, &l),
			-EINVAL);

	/* Active, but the agent leaves RMPP to the user: one segment */
	umad_test_head(&head, IB_MGMT_CLASS_SUBN_ADM, true);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 0, &l), 0);
	KUNIT_EXPECT_FALSE(test, l.kernel_rmpp);
	KUNIT_EXPECT_FALSE(test, l.rmpp_active);
	KUNIT_EXPECT_TRUE(test, l.user_rmpp_segment);
	KUNIT_EXPECT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE + 1, 0, &l),
			-EINVAL);

	/* a vendor class of range 2: its own header length */
	umad_test_head(&head, IB_MGMT_CLASS_VENDOR_RANGE2_START, false);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_RMPP_HDR, 0, &l),
			-EINVAL);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_VENDOR_HDR, 0, &l),
			0);
	KUNIT_EXPECT_EQ(test, l.hdr_len, IB_MGMT_VENDOR_HDR);
	KUNIT_EXPECT_EQ(test, l.data_len, (size_t)0);
}

/*
 * A TID may be in flight once, whatever does the segmenting; only the
 * segments of a message the user cuts up itself share theirs.
 */
static void umad_test_tid_rule(struct kunit *test)
{
	struct umad_send_layout l;
	struct ib_rmpp_mad head;

	umad_test_head(&head, IB_MGMT_CLASS_SUBN_ADM, true);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, 1000, 1, &l), 0);
	KUNIT_EXPECT_TRUE(test, l.rmpp_active);
	KUNIT_EXPECT_TRUE(test, umad_send_checks_tid(&l));

	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 0, &l), 0);
	KUNIT_EXPECT_FALSE(test, umad_send_checks_tid(&l));

	umad_test_head(&head, IB_MGMT_CLASS_SUBN_ADM, false);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 0, &l), 0);
	KUNIT_EXPECT_TRUE(test, umad_send_checks_tid(&l));
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 1, &l), 0);
	KUNIT_EXPECT_TRUE(test, umad_send_checks_tid(&l));

	/* the Active flag means nothing outside the RMPP classes */
	umad_test_head(&head, IB_MGMT_CLASS_PERF_MGMT, true);
	KUNIT_ASSERT_EQ(test, umad_plan_send(&head, IB_MGMT_MAD_SIZE, 0, &l), 0);
	KUNIT_EXPECT_FALSE(test, l.user_rmpp_segment);
	KUNIT_EXPECT_TRUE(test, umad_send_checks_tid(&l));
}

static struct kunit_case umad_write_cases[] = {
	KUNIT_CASE(umad_test_mad_bytes),
	KUNIT_CASE(umad_test_send_hdr),
	KUNIT_CASE(umad_test_plan_kernel_rmpp),
	KUNIT_CASE(umad_test_plan_one_packet),
	KUNIT_CASE(umad_test_tid_rule),
	{}
};

static struct kunit_suite umad_write_suite = {
	.name = "ib_umad_write",
	.test_cases = umad_write_cases,
};

kunit_test_suite(umad_write_suite);
