// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the ICM profile: with the limits an MT25208 with 5.x
 * firmware reports, the table counts, their INIT_HCA encodings, and the
 * layout (each table aligned to its size, no overlaps, the total what
 * SET_ICM_SIZE gets); requests capped by the device and rounded to powers
 * of two; requests or ICM sizes that cannot work refused.
 */

#include <kunit/test.h>
#include <linux/log2.h>
#include <linux/sort.h>

#include "mthca_profile.h"

/* QUERY_DEV_LIM of the MT25208 as the firmware reports it. */
static void devlim_mt25208(struct mthca_dev_lim *l)
{
	memset(l, 0, sizeof(*l));
	l->max_qps = 1 << 24;
	l->reserved_qps = 1 << 10;
	l->max_srqs = 1 << 16;
	l->reserved_srqs = 1 << 4;
	l->max_cqs = 1 << 24;
	l->reserved_cqs = 1 << 7;
	l->max_eqs = 1 << 6;
	l->reserved_eqs = 1;
	l->max_mpts = 1 << 24;
	l->reserved_mrws = 1 << 4;
	l->max_mtt_seg = 1 << 24;
	l->max_mcgs = 1 << 13;
	l->reserved_uars = 1;
	l->qpc_entry_sz = 256;
	l->eec_entry_sz = 256;
	l->eqpc_entry_sz = 32;
	l->eeec_entry_sz = 32;
	l->eqc_entry_sz = 64;
	l->cqc_entry_sz = 64;
	l->srq_entry_sz = 64;
	l->uar_scratch_entry_sz = 32;
	l->mpt_entry_sz = 64;
	l->max_icm_sz = 1ULL << 36;
}

static void req_default(struct mthca_profile_req *r)
{
	r->num_qp = 1 << 16;
	r->rdb_per_qp = 4;
	r->num_srq = 1 << 16;
	r->num_cq = 1 << 16;
	r->num_mcg = 1 << 13;
	r->num_mpt = 1 << 17;
	r->num_mtt = 1 << 20;
	r->num_uar = 2048;
	r->uarc_size = 1 << 18;
	r->mtt_seg_size = 64;
}

struct span {
	u64 base;
	u64 size;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

static void profile_default_counts(struct kunit *test)
{
	struct mthca_profile_result res;
	struct mthca_profile_req req;
	struct mthca_dev_lim lim;

	devlim_mt25208(&lim);
	req_default(&req);
	KUNIT_ASSERT_EQ(test, mthca_profile_compute(&req, &lim, &res), 0);

	KUNIT_EXPECT_EQ(test, res.num_qps, 1U << 16);
	KUNIT_EXPECT_EQ(test, res.num_srqs, 1U << 16);
	KUNIT_EXPECT_EQ(test, res.num_cqs, 1U << 16);
	KUNIT_EXPECT_EQ(test, res.num_eqs, 32U);
	KUNIT_EXPECT_EQ(test, res.num_mpts, 1U << 17);
	KUNIT_EXPECT_EQ(test, res.num_mtt_segs, 1U << 20);
	KUNIT_EXPECT_EQ(test, res.num_uars, 2048U);
	KUNIT_EXPECT_EQ(test, res.num_mgms, 4096U);
	KUNIT_EXPECT_EQ(test, res.num_amgms, 4096U);
	KUNIT_EXPECT_EQ(test, res.rdb_shift, 2);

	KUNIT_EXPECT_EQ(test, res.hca.log_num_qps, 16);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_srqs, 16);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_cqs, 16);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_eqs, 5);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_eecs, 0);
	KUNIT_EXPECT_EQ(test, res.hca.log_mpt_sz, 17);
	KUNIT_EXPECT_EQ(test, res.hca.log_mc_entry_sz, 8);
	KUNIT_EXPECT_EQ(test, res.hca.log_mc_table_sz, 13);
	KUNIT_EXPECT_EQ(test, res.hca.mc_hash_sz, 4096);
	KUNIT_EXPECT_EQ(test, res.hca.log_uar_sz, 11);
	/* 256 KiB of doorbell records per UAR: 64 pages. */
	KUNIT_EXPECT_EQ(test, res.hca.log_uarc_sz, 6);
	KUNIT_EXPECT_EQ(test, res.hca.mtt_seg_sz, 0);
}

static void profile_layout_packed(struct kunit *test)
{
	struct mthca_profile_result res;
	struct mthca_profile_req req;
	struct mthca_dev_lim lim;
	struct span s[13];
	u64 sum = 0;
	int i;

	devlim_mt25208(&lim);
	req_default(&req);
	KUNIT_ASSERT_EQ(test, mthca_profile_compute(&req, &lim, &res), 0);

	s[0] = (struct span){ res.hca.qpc_base, 256ULL << 16 };
	s[1] = (struct span){ res.hca.eec_base, PAGE_SIZE };
	s[2] = (struct span){ res.hca.srqc_base, 64ULL << 16 };
	s[3] = (struct span){ res.hca.cqc_base, 64ULL << 16 };
	s[4] = (struct span){ res.hca.eqpc_base, 32ULL << 16 };
	s[5] = (struct span){ res.hca.eeec_base, PAGE_SIZE };
	s[6] = (struct span){ res.hca.eqc_base, PAGE_SIZE };
	s[7] = (struct span){ res.hca.rdb_base, 32ULL << 18 };
	s[8] = (struct span){ res.hca.mc_base, 256ULL << 13 };
	s[9] = (struct span){ res.hca.mpt_base, 64ULL << 17 };
	s[10] = (struct span){ res.hca.mtt_base, 64ULL << 20 };
	s[11] = (struct span){ res.hca.uar_scratch_base, 32ULL << 11 };
	s[12] = (struct span){ res.hca.uarc_base, (1ULL << 18) << 11 };

	for (i = 0; i < 13; i++) {
		KUNIT_EXPECT_EQ_MSG(test, s[i].base & (s[i].size - 1), 0ULL,
				    "table %d at %llx, size %llx", i,
				    s[i].base, s[i].size);
		sum += s[i].size;
	}
	KUNIT_EXPECT_EQ(test, res.total, sum);

	/* Back to back, no overlaps, no gaps. */
	sort(s, 13, sizeof(s[0]), span_cmp, NULL);
	KUNIT_EXPECT_EQ(test, s[0].base, 0ULL);
	for (i = 1; i < 13; i++)
		KUNIT_EXPECT_EQ_MSG(test, s[i].base, s[i - 1].base + s[i - 1].size,
				    "span %d", i);
	/* The largest table (the UAR contexts, 512 MiB) comes first. */
	KUNIT_EXPECT_EQ(test, res.hca.uarc_base, 0ULL);
}

static void profile_caps_and_rounds(struct kunit *test)
{
	struct mthca_profile_result res;
	struct mthca_profile_req req;
	struct mthca_dev_lim lim;

	devlim_mt25208(&lim);
	req_default(&req);
	req.num_qp = 1U << 30;		/* above the device's 2^24 */
	req.num_cq = 100000;		/* not a power of two */
	req.num_mcg = 3000;
	KUNIT_ASSERT_EQ(test, mthca_profile_compute(&req, &lim, &res), 0);
	KUNIT_EXPECT_EQ(test, res.num_qps, 1U << 24);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_qps, 24);
	KUNIT_EXPECT_EQ(test, res.num_cqs, 65536U);
	KUNIT_EXPECT_EQ(test, res.num_mgms, 1024U);
	KUNIT_EXPECT_EQ(test, res.hca.mc_hash_sz, 1024);
	KUNIT_EXPECT_EQ(test, res.hca.log_mc_table_sz, 11);
}

static void profile_without_srq(struct kunit *test)
{
	struct mthca_profile_result res;
	struct mthca_profile_req req;
	struct mthca_dev_lim lim;

	devlim_mt25208(&lim);
	req_default(&req);
	req.num_srq = 0;
	KUNIT_ASSERT_EQ(test, mthca_profile_compute(&req, &lim, &res), 0);
	KUNIT_EXPECT_EQ(test, res.num_srqs, 0U);
	KUNIT_EXPECT_EQ(test, res.hca.log_num_srqs, 0);
}

static void profile_refuses_impossible(struct kunit *test)
{
	struct mthca_profile_result res;
	struct mthca_profile_req req;
	struct mthca_dev_lim lim;

	devlim_mt25208(&lim);
	req_default(&req);
	req.num_qp = 1024;	/* all of them reserved */
	KUNIT_EXPECT_EQ(test, mthca_profile_compute(&req, &lim, &res), -EINVAL);

	req_default(&req);
	req.uarc_size = 3 << 12;
	KUNIT_EXPECT_EQ(test, mthca_profile_compute(&req, &lim, &res), -EINVAL);

	req_default(&req);
	lim.max_icm_sz = 256ULL << 20;	/* the tables need more */
	KUNIT_EXPECT_EQ(test, mthca_profile_compute(&req, &lim, &res), -ENOMEM);
}

static struct kunit_case mthca_profile_cases[] = {
	KUNIT_CASE(profile_default_counts),
	KUNIT_CASE(profile_layout_packed),
	KUNIT_CASE(profile_caps_and_rounds),
	KUNIT_CASE(profile_without_srq),
	KUNIT_CASE(profile_refuses_impossible),
	{}
};

static struct kunit_suite mthca_profile_suite = {
	.name = "mthca_profile",
	.test_cases = mthca_profile_cases,
};

kunit_test_suite(mthca_profile_suite);
