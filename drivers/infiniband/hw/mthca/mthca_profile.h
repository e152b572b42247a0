/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The HCA profile: how many objects of each kind the driver asks for, and
 * where their context tables go in ICM.  Pure arithmetic over what
 * QUERY_DEV_LIM reported, so the KUnit suite in mthca_profile_test.c
 * runs it on UML.
 */
#ifndef MTHCA_PROFILE_H
#define MTHCA_PROFILE_H

#include <linux/types.h>

#include "mthca_cmd.h"

/* Fixed entry sizes (not reported by QUERY_DEV_LIM). */
#define MTHCA_RDB_ENTRY_SIZE	0x20
#define MTHCA_MGM_ENTRY_SIZE	0x100
#define MTHCA_PROFILE_NUM_EQS	32

/**
 * struct mthca_profile_req - what the driver asks for
 * @num_qp: QPs
 * @rdb_per_qp: RDMA read/atomic responder slots per QP
 * @num_srq: SRQs (0 without SRQ support)
 * @num_cq: CQs
 * @num_mcg: multicast group entries (hash and overflow halves together)
 * @num_mpt: MPT entries
 * @num_mtt: MTT segments
 * @num_uar: UARs
 * @uarc_size: bytes of doorbell-record context per UAR
 * @mtt_seg_size: bytes per MTT segment
 *
 * Each count is rounded down to a power of two and capped by the device.
 */
struct mthca_profile_req {
	u32	num_qp;
	u32	rdb_per_qp;
	u32	num_srq;
	u32	num_cq;
	u32	num_mcg;
	u32	num_mpt;
	u32	num_mtt;
	u32	num_uar;
	u32	uarc_size;
	u32	mtt_seg_size;
};

/**
 * struct mthca_profile_result - what the profile chose
 * @hca: the INIT_HCA parameters (table bases and sizes)
 * @total: bytes of ICM the tables span (what SET_ICM_SIZE is given)
 * @num_qps: QPs
 * @num_srqs: SRQs
 * @num_cqs: CQs
 * @num_eqs: EQs
 * @num_mgms: MGM hash entries
 * @num_amgms: overflow (AMGM) entries
 * @num_mpts: MPT entries
 * @num_mtt_segs: MTT segments
 * @num_uars: UARs
 * @rdb_shift: log2 of responder slots per QP
 */
struct mthca_profile_result {
	struct mthca_init_hca_param hca;
	u64	total;
	u32	num_qps;
	u32	num_srqs;
	u32	num_cqs;
	u32	num_eqs;
	u32	num_mgms;
	u32	num_amgms;
	u32	num_mpts;
	u32	num_mtt_segs;
	u32	num_uars;
	int	rdb_shift;
};

int mthca_profile_compute(const struct mthca_profile_req *req,
			  const struct mthca_dev_lim *lim,
			  struct mthca_profile_result *res);

#endif /* MTHCA_PROFILE_H */
