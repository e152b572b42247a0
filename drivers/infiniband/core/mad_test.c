// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suites of the MAD layer's rules: which received MADs are processed
 * at all (IBA 13.4.2, 14.2: versions, SMP classes on QP0 only), which
 * registrations are legal, which agent a request goes to and which
 * registrations conflict, and the send/receive buffer layouts.
 */

#include <kunit/test.h>
#include <linux/err.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <rdma/ib_mad.h>

#include "ib_kunit.h"
#include "mad_priv.h"

static void hdr_set(struct ib_mad_hdr *h, u8 base, u8 mgmt_class, u8 ver,
		    u8 method)
{
	memset(h, 0, sizeof(*h));
	h->base_version = base;
	h->mgmt_class = mgmt_class;
	h->class_version = ver;
	h->method = method;
}

/* ---- ib_mad_recv: validation of received MADs ---- */

static void recv_base_version(struct kunit *test)
{
	struct ib_mad_hdr h;

	hdr_set(&h, 1, IB_MGMT_CLASS_PERF_MGMT, 1, IB_MGMT_METHOD_GET);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), 0);
	h.base_version = 2;
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
	h.base_version = 0;
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
}

static void recv_smp_only_on_qp0(struct kunit *test)
{
	struct ib_mad_hdr h;

	hdr_set(&h, 1, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, IB_MGMT_METHOD_GET);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, true), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
	hdr_set(&h, 1, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1,
		IB_MGMT_METHOD_GET_RESP);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, true), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
}

static void recv_gsi_never_on_qp0(struct kunit *test)
{
	static const u8 classes[] = {
		IB_MGMT_CLASS_SUBN_ADM, IB_MGMT_CLASS_PERF_MGMT,
		IB_MGMT_CLASS_CM, IB_MGMT_CLASS_DEVICE_MGMT, 0x09, 0x30,
	};
	struct ib_mad_hdr h;
	int i;

	for (i = 0; i < ARRAY_SIZE(classes); i++) {
		hdr_set(&h, 1, classes[i], 2, IB_MGMT_METHOD_GET);
		KUNIT_EXPECT_EQ_MSG(test, ib_mad_check_recv(&h, true), -EINVAL,
				    "class 0x%02x on QP0", classes[i]);
		KUNIT_EXPECT_EQ_MSG(test, ib_mad_check_recv(&h, false), 0,
				    "class 0x%02x on QP1", classes[i]);
	}
}

static void recv_smp_class_version(struct kunit *test)
{
	struct ib_mad_hdr h;

	hdr_set(&h, 1, IB_MGMT_CLASS_SUBN_LID_ROUTED, 2, IB_MGMT_METHOD_GET);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, true), -EINVAL);
	/* GSI class versions are the agents' business (SA is version 2). */
	hdr_set(&h, 1, IB_MGMT_CLASS_SUBN_ADM, 2, IB_MGMT_METHOD_GET);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), 0);
}

/* The shared rule (<rdma/ib_mad.h>, used by mthca too): 0x01 and 0x81. */
static void recv_smp_classes(struct kunit *test)
{
	int c;

	for (c = 0; c < 256; c++)
		KUNIT_EXPECT_EQ_MSG(test, ib_mad_is_smp_class(c),
				    c == 0x01 || c == 0x81, "class 0x%02x", c);
}

static void recv_method_zero(struct kunit *test)
{
	struct ib_mad_hdr h;

	hdr_set(&h, 1, IB_MGMT_CLASS_PERF_MGMT, 1, 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
	h.method = IB_MGMT_METHOD_RESP;
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), -EINVAL);
	h.method = IB_MGMT_METHOD_GET_RESP;
	KUNIT_EXPECT_EQ(test, ib_mad_check_recv(&h, false), 0);
}

static void recv_response_kinds(struct kunit *test)
{
	struct ib_mad mad = {};

	hdr_set(&mad.mad_hdr, 1, IB_MGMT_CLASS_PERF_MGMT, 1,
		IB_MGMT_METHOD_GET);
	KUNIT_EXPECT_FALSE(test, ib_response_mad(&mad));
	mad.mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	KUNIT_EXPECT_TRUE(test, ib_response_mad(&mad));
	mad.mad_hdr.method = IB_MGMT_METHOD_REPORT_RESP;
	KUNIT_EXPECT_TRUE(test, ib_response_mad(&mad));
	mad.mad_hdr.method = IB_MGMT_METHOD_TRAP;
	KUNIT_EXPECT_FALSE(test, ib_response_mad(&mad));
	mad.mad_hdr.method = IB_MGMT_METHOD_TRAP_REPRESS;
	KUNIT_EXPECT_TRUE(test, ib_response_mad(&mad));
	/* Baseboard management answers with a Send and the response bit. */
	hdr_set(&mad.mad_hdr, 1, IB_MGMT_CLASS_BM, 1, IB_MGMT_METHOD_SEND);
	KUNIT_EXPECT_FALSE(test, ib_response_mad(&mad));
	mad.mad_hdr.attr_mod = cpu_to_be32(1);
	KUNIT_EXPECT_TRUE(test, ib_response_mad(&mad));
}

static void recv_class_tables(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, ib_is_mad_class_rmpp(IB_MGMT_CLASS_SUBN_ADM));
	KUNIT_EXPECT_TRUE(test, ib_is_mad_class_rmpp(IB_MGMT_CLASS_BIS));
	KUNIT_EXPECT_TRUE(test, ib_is_mad_class_rmpp(IB_MGMT_CLASS_DEVICE_ADM));
	KUNIT_EXPECT_TRUE(test, ib_is_mad_class_rmpp(0x30));
	KUNIT_EXPECT_TRUE(test, ib_is_mad_class_rmpp(0x4f));
	KUNIT_EXPECT_FALSE(test, ib_is_mad_class_rmpp(0x50));
	KUNIT_EXPECT_FALSE(test, ib_is_mad_class_rmpp(IB_MGMT_CLASS_PERF_MGMT));
	KUNIT_EXPECT_FALSE(test, ib_is_mad_class_rmpp(IB_MGMT_CLASS_SUBN_LID_ROUTED));

	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(IB_MGMT_CLASS_SUBN_ADM), 56);
	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(IB_MGMT_CLASS_DEVICE_MGMT), 64);
	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(IB_MGMT_CLASS_BIS), 64);
	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(0x31), 40);
	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(IB_MGMT_CLASS_PERF_MGMT), 24);
	KUNIT_EXPECT_EQ(test, ib_get_mad_data_offset(IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE), 24);
}

static struct kunit_case mad_recv_cases[] = {
	KUNIT_CASE(recv_base_version),
	KUNIT_CASE(recv_smp_only_on_qp0),
	KUNIT_CASE(recv_gsi_never_on_qp0),
	KUNIT_CASE(recv_smp_class_version),
	KUNIT_CASE(recv_smp_classes),
	KUNIT_CASE(recv_method_zero),
	KUNIT_CASE(recv_response_kinds),
	KUNIT_CASE(recv_class_tables),
	{}
};

static struct kunit_suite mad_recv_suite = {
	.name = "ib_mad_recv",
	.test_cases = mad_recv_cases,
};

/* ---- ib_mad_reg: registration parameters, tables and dispatch ---- */

static void req_set(struct ib_mad_reg_req *req, u8 mgmt_class, u8 ver,
		    u32 oui, const u8 *methods, int n)
{
	int i;

	memset(req, 0, sizeof(*req));
	req->mgmt_class = mgmt_class;
	req->mgmt_class_version = ver;
	req->oui[0] = oui >> 16;
	req->oui[1] = oui >> 8;
	req->oui[2] = oui;
	for (i = 0; i < n; i++)
		set_bit(methods[i], req->method_mask);
}

static const u8 m_get[] = { IB_MGMT_METHOD_GET };
static const u8 m_get_set[] = { IB_MGMT_METHOD_GET, IB_MGMT_METHOD_SET };
static const u8 m_set[] = { IB_MGMT_METHOD_SET };
static const u8 m_gettable[] = { 0x12 };

static void reg_params(struct kunit *test)
{
	struct ib_mad_reg_req r;

	/* Send-only agents on either special QP; nothing else. */
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_SMI, NULL, 0, false), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, NULL, 0, false), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_UD, NULL, 0, false), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_RC, NULL, 0, true), -EINVAL);

	/* RMPP: version 1, never on QP0. */
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, NULL, 1, false), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, NULL, 2, false), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_SMI, NULL, 1, false), -EINVAL);

	req_set(&r, IB_MGMT_CLASS_SUBN_ADM, 2, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 1, true), 0);
	/* Requests need somewhere to go. */
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 1, false), -EINVAL);
	/* SA is not an SMP class. */
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_SMI, &r, 0, true), -EINVAL);

	/* PerfMgmt has no RMPP. */
	req_set(&r, IB_MGMT_CLASS_PERF_MGMT, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 1, true), -EINVAL);

	/* SMP classes on QP0 only. */
	req_set(&r, IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_SMI, &r, 0, true), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	req_set(&r, IB_MGMT_CLASS_SUBN_LID_ROUTED, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_SMI, &r, 0, true), 0);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
}

static void reg_classes_and_versions(struct kunit *test)
{
	struct ib_mad_reg_req r;

	req_set(&r, 0, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	req_set(&r, 0x50, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	req_set(&r, 0x83, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	req_set(&r, IB_MGMT_CLASS_CM, 7, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), 0);
	req_set(&r, IB_MGMT_CLASS_CM, 8, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	/* Vendor range 1 needs no OUI, range 2 does. */
	req_set(&r, 0x09, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), 0);
	req_set(&r, 0x30, 1, 0, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 0, true), -EINVAL);
	req_set(&r, 0x30, 1, IB_OPENIB_OUI, m_get, 1);
	KUNIT_EXPECT_EQ(test, ib_mad_check_reg(IB_QPT_GSI, &r, 1, true), 0);
}

/* A table of registrations, each owned by a distinct fake agent. */
struct reg_fixture {
	struct list_head		regs;
	struct ib_mad_reg		reg[6];
	struct ib_mad_agent_priv	agent[6];
};

static int reg_add(struct reg_fixture *f, int i, u8 mgmt_class, u8 ver,
		   u32 oui, const u8 *methods, int n)
{
	struct ib_mad_reg_req r;

	req_set(&r, mgmt_class, ver, oui, methods, n);
	ib_mad_reg_init(&f->reg[i], &r, &f->agent[i]);
	return ib_mad_reg_insert(&f->regs, &f->reg[i]);
}

static struct reg_fixture *reg_fixture(struct kunit *test)
{
	struct reg_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f);
	INIT_LIST_HEAD(&f->regs);
	return f;
}

static void reg_conflicts(struct kunit *test)
{
	struct reg_fixture *f = reg_fixture(test);

	KUNIT_EXPECT_EQ(test, reg_add(f, 0, IB_MGMT_CLASS_SUBN_ADM, 2, 0,
				      m_get_set, 2), 0);
	/* Disjoint methods of the same class and version: fine. */
	KUNIT_EXPECT_EQ(test, reg_add(f, 1, IB_MGMT_CLASS_SUBN_ADM, 2, 0,
				      m_gettable, 1), 0);
	/* One shared method is enough to refuse. */
	KUNIT_EXPECT_EQ(test, reg_add(f, 2, IB_MGMT_CLASS_SUBN_ADM, 2, 0,
				      m_set, 1), -EBUSY);
	/* Another version is another table. */
	KUNIT_EXPECT_EQ(test, reg_add(f, 3, IB_MGMT_CLASS_SUBN_ADM, 3, 0,
				      m_set, 1), 0);
	/* Vendor range 2: the OUI tells registrations apart. */
	KUNIT_EXPECT_EQ(test, reg_add(f, 4, 0x30, 1, 0x001405, m_get, 1), 0);
	KUNIT_EXPECT_EQ(test, reg_add(f, 5, 0x30, 1, 0x000002, m_get, 1), 0);
	KUNIT_EXPECT_EQ(test, reg_add(f, 2, 0x30, 1, 0x001405, m_get_set, 2),
			-EBUSY);
	KUNIT_EXPECT_EQ(test, list_count_nodes(&f->regs), 5);
}

static struct ib_mad_agent_priv *reg_who(struct reg_fixture *f, u8 mgmt_class,
					 u8 ver, u8 method, u32 oui)
{
	struct ib_vendor_mad mad = {};
	struct ib_mad_reg *r;

	hdr_set(&mad.mad_hdr, 1, mgmt_class, ver, method);
	mad.oui[0] = oui >> 16;
	mad.oui[1] = oui >> 8;
	mad.oui[2] = oui;
	r = ib_mad_reg_lookup(&f->regs, (struct ib_mad *)&mad);
	return r ? r->agent : NULL;
}

static void reg_dispatch(struct kunit *test)
{
	struct reg_fixture *f = reg_fixture(test);

	reg_add(f, 0, IB_MGMT_CLASS_SUBN_ADM, 2, 0, m_get_set, 2);
	reg_add(f, 1, IB_MGMT_CLASS_SUBN_ADM, 2, 0, m_gettable, 1);
	reg_add(f, 3, IB_MGMT_CLASS_SUBN_ADM, 3, 0, m_set, 1);
	reg_add(f, 4, 0x30, 1, 0x001405, m_get, 1);
	reg_add(f, 5, 0x30, 1, 0x000002, m_get, 1);

	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2,
					  IB_MGMT_METHOD_GET, 0), &f->agent[0]);
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2,
					  IB_MGMT_METHOD_SET, 0), &f->agent[0]);
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2, 0x12, 0),
			    &f->agent[1]);
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 3,
					  IB_MGMT_METHOD_SET, 0), &f->agent[3]);
	/* Nobody took Delete, or Get of version 3, or another class. */
	KUNIT_EXPECT_NULL(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2, 0x15, 0));
	KUNIT_EXPECT_NULL(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 3,
					IB_MGMT_METHOD_GET, 0));
	KUNIT_EXPECT_NULL(test, reg_who(f, IB_MGMT_CLASS_PERF_MGMT, 2,
					IB_MGMT_METHOD_GET, 0));
	/* Responses never go by the table (they go by hi_tid). */
	KUNIT_EXPECT_NULL(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2,
					IB_MGMT_METHOD_GET_RESP, 0));
	/* Vendor range 2 by OUI. */
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, 0x30, 1, IB_MGMT_METHOD_GET,
					  0x001405), &f->agent[4]);
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, 0x30, 1, IB_MGMT_METHOD_GET,
					  0x000002), &f->agent[5]);
	KUNIT_EXPECT_NULL(test, reg_who(f, 0x30, 1, IB_MGMT_METHOD_GET,
					0x000003));

	/* After an agent leaves, its methods are free again. */
	list_del(&f->reg[0].list);
	KUNIT_EXPECT_NULL(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2,
					IB_MGMT_METHOD_GET, 0));
	KUNIT_EXPECT_EQ(test, reg_add(f, 2, IB_MGMT_CLASS_SUBN_ADM, 2, 0,
				      m_set, 1), 0);
	KUNIT_EXPECT_PTR_EQ(test, reg_who(f, IB_MGMT_CLASS_SUBN_ADM, 2,
					  IB_MGMT_METHOD_SET, 0), &f->agent[2]);
}

static void reg_hi_tid(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ib_mad_tid_agent(cpu_to_be64(0x1234567800000001ULL)),
			0x12345678U);
	KUNIT_EXPECT_EQ(test, ib_mad_tid_agent(cpu_to_be64(0xffffffffULL)), 0U);
}

static struct kunit_case mad_reg_cases[] = {
	KUNIT_CASE(reg_params),
	KUNIT_CASE(reg_classes_and_versions),
	KUNIT_CASE(reg_conflicts),
	KUNIT_CASE(reg_dispatch),
	KUNIT_CASE(reg_hi_tid),
	{}
};

static struct kunit_suite mad_reg_suite = {
	.name = "ib_mad_reg",
	.test_cases = mad_reg_cases,
};

/* ---- ib_mad_buf: send buffer layout, coalescing a reassembly ---- */

static void buf_single(struct kunit *test)
{
	struct ib_mad_agent_priv *agent = kunit_kzalloc(test, sizeof(*agent),
							GFP_KERNEL);
	struct ib_mad_send_buf *sb;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, agent);
	sb = ib_create_send_mad(&agent->agent, 1, 0, 0, IB_MGMT_MAD_HDR,
				IB_MGMT_MAD_DATA, GFP_KERNEL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sb));
	KUNIT_EXPECT_EQ(test, sb->seg_count, 1);
	KUNIT_EXPECT_PTR_EQ(test, ib_get_rmpp_segment(sb, 1),
			    (void *)((u8 *)sb->mad + IB_MGMT_MAD_HDR));
	KUNIT_EXPECT_NULL(test, ib_get_rmpp_segment(sb, 2));
	KUNIT_EXPECT_NULL(test, ib_get_rmpp_segment(sb, 0));
	ib_free_send_mad(sb);

	/* Too big without RMPP, or RMPP for an agent that does not run it. */
	sb = ib_create_send_mad(&agent->agent, 1, 0, 0, IB_MGMT_MAD_HDR,
				IB_MGMT_MAD_DATA + 1, GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(sb), -EINVAL);
	sb = ib_create_send_mad(&agent->agent, 1, 0, 1, IB_MGMT_SA_HDR, 1000,
				GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(sb), -EINVAL);
	sb = ib_create_send_mad(&agent->agent, 1, 0, 0, 20, 10, GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(sb), -EINVAL);
}

/*
 * Without RMPP, header plus data must fit one MAD even when their sum
 * does not fit an int: lengths near INT_MAX are refused, never wrapped
 * into a "small" negative total that passes.
 */
static void buf_single_int_max(struct kunit *test)
{
	struct ib_mad_agent_priv *agent = kunit_kzalloc(test, sizeof(*agent),
							GFP_KERNEL);
	static const int len[][2] = {
		{ IB_MGMT_MAD_HDR, INT_MAX },
		{ IB_MGMT_MAD_HDR, INT_MAX - IB_MGMT_MAD_HDR + 1 },
		{ INT_MAX, 1 },
		{ INT_MAX, INT_MAX },
		{ IB_MGMT_MAD_SIZE + 1, 0 },
	};
	struct ib_mad_send_buf *sb;
	int i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, agent);
	for (i = 0; i < ARRAY_SIZE(len); i++) {
		sb = ib_create_send_mad(&agent->agent, 1, 0, 0, len[i][0],
					len[i][1], GFP_KERNEL);
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR(sb), -EINVAL,
				    "hdr_len %d data_len %d", len[i][0],
				    len[i][1]);
		if (!IS_ERR(sb))
			ib_free_send_mad(sb);
	}
	/* the exact fit is still allowed */
	sb = ib_create_send_mad(&agent->agent, 1, 0, 0, IB_MGMT_MAD_SIZE, 0,
				GFP_KERNEL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sb));
	ib_free_send_mad(sb);
}

static void buf_rmpp_segments(struct kunit *test)
{
	struct ib_mad_agent_priv *agent = kunit_kzalloc(test, sizeof(*agent),
							GFP_KERNEL);
	struct ib_mad_send_buf *sb;
	struct ib_rmpp_mad *rm;
	u8 *s1, *s5;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, agent);
	agent->agent.rmpp_version = IB_MGMT_RMPP_VERSION;
	/* 1000 bytes of SA data, 200 per segment: 5 segments, no pad. */
	sb = ib_create_send_mad(&agent->agent, 1, 0, 1, IB_MGMT_SA_HDR, 1000,
				GFP_KERNEL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sb));
	KUNIT_EXPECT_EQ(test, sb->seg_count, 5);
	KUNIT_EXPECT_EQ(test, sb->seg_size, 200);
	rm = sb->mad;
	KUNIT_EXPECT_EQ(test, rm->rmpp_hdr.rmpp_version, IB_MGMT_RMPP_VERSION);
	KUNIT_EXPECT_EQ(test, rm->rmpp_hdr.rmpp_type, IB_MGMT_RMPP_TYPE_DATA);
	KUNIT_EXPECT_EQ(test, ib_get_rmpp_flags(&rm->rmpp_hdr),
			IB_MGMT_RMPP_FLAG_ACTIVE);
	s1 = ib_get_rmpp_segment(sb, 1);
	s5 = ib_get_rmpp_segment(sb, 5);
	KUNIT_EXPECT_PTR_EQ(test, (void *)s1,
			    (void *)((u8 *)sb->mad + IB_MGMT_SA_HDR));
	KUNIT_EXPECT_EQ(test, (long)(s5 - s1), 800L);
	KUNIT_EXPECT_NULL(test, ib_get_rmpp_segment(sb, 6));
	/* The segments are writable, all of them. */
	memset(s5, 0xa5, 200);
	ib_free_send_mad(sb);
}

/*
 * RMPP sizes: the cap is allowed, one byte more and sizes near INT_MAX are
 * refused with -EMSGSIZE (no wrap, no WARN from a huge allocation).
 */
static void buf_rmpp_limits(struct kunit *test)
{
	struct ib_mad_agent_priv *agent = kunit_kzalloc(test, sizeof(*agent),
							GFP_KERNEL);
	static const int bad[] = {
		INT_MAX, INT_MAX - 1, IB_MAD_RMPP_MAX_DATA + 1,
	};
	struct ib_mad_send_buf *sb;
	u8 *last;
	int i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, agent);
	agent->agent.rmpp_version = IB_MGMT_RMPP_VERSION;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		sb = ib_create_send_mad(&agent->agent, 1, 0, 1, IB_MGMT_SA_HDR,
					bad[i], GFP_KERNEL);
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR(sb), -EMSGSIZE,
				    "data_len %d", bad[i]);
	}
	sb = ib_create_send_mad(&agent->agent, 1, 0, 1, IB_MGMT_SA_HDR,
				IB_MAD_RMPP_MAX_DATA, GFP_KERNEL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(sb));
	KUNIT_EXPECT_EQ(test, sb->seg_count,
			DIV_ROUND_UP(IB_MAD_RMPP_MAX_DATA, 200));
	KUNIT_EXPECT_EQ(test, sb->data_len, IB_MAD_RMPP_MAX_DATA);
	/* the whole last segment is there and writable */
	last = ib_get_rmpp_segment(sb, sb->seg_count);
	KUNIT_ASSERT_NOT_NULL(test, last);
	memset(last, 0xa5, sb->seg_size);
	ib_free_send_mad(sb);
}

/* Three received SA segments of a 460-byte message (56 + 404 data). */
static void buf_coalesce(struct kunit *test)
{
	struct ib_mad_rbuf *rb[3];
	struct ib_mad_recv_wc *wc;
	u8 *out, want[IB_MGMT_SA_HDR + 404];
	int i, j, len;

	for (i = 0; i < 3; i++) {
		rb[i] = ib_mad_rbuf_alloc(NULL, GFP_KERNEL);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, rb[i]);
		rb[i]->data.mad.mad_hdr.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
		for (j = IB_MGMT_SA_HDR; j < IB_MGMT_MAD_SIZE; j++)
			((u8 *)&rb[i]->data.mad)[j] = i * 50 + j;
	}
	memset(((u8 *)&rb[0]->data.mad) + 30, 0x77, IB_MGMT_SA_HDR - 30);
	wc = &rb[0]->recv_wc;
	list_add_tail(&rb[1]->recv_wc.recv_buf.list, &wc->rmpp_list);
	list_add_tail(&rb[2]->recv_wc.recv_buf.list, &wc->rmpp_list);
	/* Last segment: PayloadLength 20 + 4 of the 200 data bytes. */
	len = ib_rmpp_recv_len(IB_MGMT_SA_HDR, 3, 24);
	KUNIT_EXPECT_EQ(test, len, IB_MGMT_SA_HDR + 404);
	wc->mad_len = len;

	memcpy(want, &rb[0]->data.mad, IB_MGMT_SA_HDR);
	for (i = 0; i < 3; i++)
		memcpy(want + IB_MGMT_SA_HDR + i * 200,
		       (u8 *)&rb[i]->data.mad + IB_MGMT_SA_HDR,
		       i < 2 ? 200 : 4);
	out = kunit_kzalloc(test, len + 16, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, out);
	memset(out + len, 0xee, 16);
	ib_coalesce_recv_mad(wc, out);
	ib_kunit_expect_bytes(test, "coalesced", out, want, len);
	/* Nothing beyond mad_len is written. */
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, out[len + i], 0xee);
	ib_free_recv_mad(wc);
}

static struct kunit_case mad_buf_cases[] = {
	KUNIT_CASE(buf_single),
	KUNIT_CASE(buf_single_int_max),
	KUNIT_CASE(buf_rmpp_segments),
	KUNIT_CASE(buf_rmpp_limits),
	KUNIT_CASE(buf_coalesce),
	{}
};

static struct kunit_suite mad_buf_suite = {
	.name = "ib_mad_buf",
	.test_cases = mad_buf_cases,
};

kunit_test_suites(&mad_recv_suite, &mad_reg_suite, &mad_buf_suite);
