// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ICM layout of the context tables.
 *
 * Every table is a power of two in size (entry sizes and counts are), so
 * placing the tables from the largest to the smallest, back to back from
 * ICM address 0, keeps each one aligned to its own size with no gaps.
 * Empty tables still get one page, as the firmware wants a valid base.
 */

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "mthca_profile.h"

enum prof_table {
	PT_QPC,
	PT_EEC,
	PT_SRQC,
	PT_CQC,
	PT_EQPC,
	PT_EEEC,
	PT_EQC,
	PT_RDB,
	PT_MCG,
	PT_MPT,
	PT_MTT,
	PT_UAR_SCRATCH,
	PT_UARC,
	PT_COUNT
};

struct prof_slot {
	enum prof_table	table;
	u32		count;
	u64		bytes;
	u64		base;
};

/* Largest first; equal sizes keep the order of enum prof_table. */
static int prof_slot_cmp(const void *a, const void *b)
{
	const struct prof_slot *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (int)x->table - (int)y->table;
}

/* A power of two not above @want nor @cap (0 stays 0). */
static u32 prof_count(u32 want, u32 cap)
{
	u32 n = min(want, cap);

	return n ? rounddown_pow_of_two(n) : 0;
}

/**
 * mthca_profile_compute() - size and place the ICM tables
 * @req: what the driver asks for
 * @lim: what QUERY_DEV_LIM reported
 * @res: the counts, the INIT_HCA parameters and the ICM size
 *
 * Return: 0, -EINVAL if a request cannot cover the firmware's reserved
 * objects, or -ENOMEM if the tables do not fit in the device's ICM.
 */
int mthca_profile_compute(const struct mthca_profile_req *req,
			  const struct mthca_dev_lim *lim,
			  struct mthca_profile_result *res)
{
	struct prof_slot s[PT_COUNT];
	struct mthca_init_hca_param *h = &res->hca;
	u32 entry[PT_COUNT];
	u64 at = 0;
	int i;

	memset(res, 0, sizeof(*res));
	memset(s, 0, sizeof(s));

	entry[PT_QPC] = lim->qpc_entry_sz;
	entry[PT_EEC] = lim->eec_entry_sz;
	entry[PT_SRQC] = lim->srq_entry_sz;
	entry[PT_CQC] = lim->cqc_entry_sz;
	entry[PT_EQPC] = lim->eqpc_entry_sz;
	entry[PT_EEEC] = lim->eeec_entry_sz;
	entry[PT_EQC] = lim->eqc_entry_sz;
	entry[PT_RDB] = MTHCA_RDB_ENTRY_SIZE;
	entry[PT_MCG] = MTHCA_MGM_ENTRY_SIZE;
	entry[PT_MPT] = lim->mpt_entry_sz;
	entry[PT_MTT] = req->mtt_seg_size;
	entry[PT_UAR_SCRATCH] = lim->uar_scratch_entry_sz;
	entry[PT_UARC] = req->uarc_size;

	res->num_qps = prof_count(req->num_qp, lim->max_qps);
	res->num_srqs = prof_count(req->num_srq, lim->max_srqs);
	res->num_cqs = prof_count(req->num_cq, lim->max_cqs);
	res->num_eqs = prof_count(MTHCA_PROFILE_NUM_EQS, lim->max_eqs);
	res->num_mpts = prof_count(req->num_mpt, lim->max_mpts);
	res->num_mtt_segs = prof_count(req->num_mtt, lim->max_mtt_seg);
	res->num_uars = prof_count(req->num_uar, req->num_uar);
	res->rdb_shift = req->rdb_per_qp ? ilog2(req->rdb_per_qp) : 0;
	i = prof_count(req->num_mcg, lim->max_mcgs);
	res->num_mgms = i / 2;
	res->num_amgms = i / 2;

	if (res->num_qps <= lim->reserved_qps ||
	    res->num_cqs <= lim->reserved_cqs ||
	    res->num_eqs <= lim->reserved_eqs ||
	    res->num_mpts <= lim->reserved_mrws ||
	    (res->num_srqs && res->num_srqs <= lim->reserved_srqs) ||
	    res->num_uars <= lim->reserved_uars || !res->num_mgms ||
	    !req->uarc_size || !is_power_of_2(req->uarc_size) ||
	    !res->num_mtt_segs)
		return -EINVAL;

	s[PT_QPC].count = res->num_qps;
	s[PT_EEC].count = 0;
	s[PT_SRQC].count = res->num_srqs;
	s[PT_CQC].count = res->num_cqs;
	s[PT_EQPC].count = res->num_qps;
	s[PT_EEEC].count = 0;
	s[PT_EQC].count = res->num_eqs;
	s[PT_RDB].count = res->num_qps << res->rdb_shift;
	s[PT_MCG].count = res->num_mgms + res->num_amgms;
	s[PT_MPT].count = res->num_mpts;
	s[PT_MTT].count = res->num_mtt_segs;
	s[PT_UAR_SCRATCH].count = res->num_uars;
	s[PT_UARC].count = res->num_uars;

	for (i = 0; i < PT_COUNT; i++) {
		s[i].table = i;
		s[i].bytes = max_t(u64, (u64)entry[i] * s[i].count, PAGE_SIZE);
		if (!is_power_of_2(s[i].bytes))
			return -EINVAL;
	}

	sort(s, PT_COUNT, sizeof(s[0]), prof_slot_cmp, NULL);
	for (i = 0; i < PT_COUNT; i++) {
		s[i].base = at;
		at += s[i].bytes;
	}
	if (at > lim->max_icm_sz)
		return -ENOMEM;
	res->total = at;

	for (i = 0; i < PT_COUNT; i++) {
		u8 lg = s[i].count ? ilog2(s[i].count) : 0;

		switch (s[i].table) {
		case PT_QPC:
			h->qpc_base = s[i].base;
			h->log_num_qps = lg;
			break;
		case PT_EEC:
			h->eec_base = s[i].base;
			h->log_num_eecs = lg;
			break;
		case PT_SRQC:
			h->srqc_base = s[i].base;
			h->log_num_srqs = lg;
			break;
		case PT_CQC:
			h->cqc_base = s[i].base;
			h->log_num_cqs = lg;
			break;
		case PT_EQPC:
			h->eqpc_base = s[i].base;
			break;
		case PT_EEEC:
			h->eeec_base = s[i].base;
			break;
		case PT_EQC:
			h->eqc_base = s[i].base;
			h->log_num_eqs = lg;
			break;
		case PT_RDB:
			h->rdb_base = s[i].base;
			break;
		case PT_MCG:
			h->mc_base = s[i].base;
			h->log_mc_entry_sz = ilog2(MTHCA_MGM_ENTRY_SIZE);
			h->log_mc_table_sz = lg;
			/* The first half is the hash table. */
			h->mc_hash_sz = res->num_mgms;
			break;
		case PT_MPT:
			h->mpt_base = s[i].base;
			h->log_mpt_sz = lg;
			break;
		case PT_MTT:
			h->mtt_base = s[i].base;
			h->mtt_seg_sz = ilog2(req->mtt_seg_size) - 6;
			break;
		case PT_UAR_SCRATCH:
			h->uar_scratch_base = s[i].base;
			break;
		case PT_UARC:
			h->uarc_base = s[i].base;
			h->log_uar_sz = lg;
			h->log_uarc_sz = ilog2(req->uarc_size) - 12;
			break;
		default:
			break;
		}
	}
	return 0;
}
