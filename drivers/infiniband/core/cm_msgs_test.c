// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for the CM message tables (cm_msgs.c).
 *
 * The expected byte images here are written from the message layouts of
 * IBA 12.6 (byte offsets in ../shared/facts/wave2-protocols.md §2.1), not
 * from the tables: each sample message has its image spelled out byte by
 * byte, with the bit arithmetic of every shared byte in a comment, and
 * each message has a list of its reserved bits, from which the image of
 * "every field at its largest value" follows.
 */

#include <kunit/test.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include "cm_msgs.h"
#include "ib_kunit.h"

#define CM_DATA	IB_MGMT_MAD_DATA

static const u8 gid_a[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0x11, 0x11,
};

static const u8 gid_b[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0x22, 0x22,
};

/* Private data, ARI and info samples: byte i of an array is 0x80 ^ i. */
static void cm_fill(u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = 0x80 ^ (u8)i;
}

/* One message's sample: a structure filler and its image builder. */
struct cm_sample {
	enum cm_msg_kind kind;
	void (*fill)(void *msg);
	void (*image)(u8 *img);
};

/* ---- REQ ---- */

static void req_fill(void *p)
{
	struct cm_req *m = p;

	m->local_comm_id = cpu_to_be32(0x11223344);
	m->vendor_id = cpu_to_be32(0xabcdef);
	m->service_id = cpu_to_be64(0x0102030405060708ULL);
	m->local_ca_guid = cpu_to_be64(0x0002c90300001111ULL);
	m->local_qkey = cpu_to_be32(0x01234567);
	m->local_qpn = cpu_to_be32(0x123456);
	m->responder_resources = 4;
	m->local_eecn = cpu_to_be32(0xfedcba);
	m->initiator_depth = 7;
	m->remote_eecn = cpu_to_be32(0x0a0b0c);
	m->remote_cm_response_timeout = 20;
	m->transport_type = 1;
	m->end_to_end_flow_control = 1;
	m->starting_psn = cpu_to_be32(0x654321);
	m->local_cm_response_timeout = 18;
	m->retry_count = 5;
	m->pkey = cpu_to_be16(0x8001);
	m->path_mtu = IB_MTU_2048;
	m->rdc_exists = 1;
	m->rnr_retry_count = 7;
	m->max_cm_retries = 15;
	m->srq = 1;
	m->extended_transport = 2;
	m->primary.local_lid = cpu_to_be16(0x0013);
	m->primary.remote_lid = cpu_to_be16(0x0024);
	memcpy(m->primary.local_gid.raw, gid_a, 16);
	memcpy(m->primary.remote_gid.raw, gid_b, 16);
	m->primary.flow_label = cpu_to_be32(0xabcde);
	m->primary.packet_rate = IB_RATE_20_GBPS;
	m->primary.traffic_class = 0x5a;
	m->primary.hop_limit = 0x40;
	m->primary.sl = 0xd;
	m->primary.subnet_local = 1;
	m->primary.local_ack_timeout = 0x13;
	m->alternate.local_lid = cpu_to_be16(0xbeef);
	m->alternate.remote_lid = cpu_to_be16(0xc0de);
	memcpy(m->alternate.local_gid.raw, gid_b, 16);
	memcpy(m->alternate.remote_gid.raw, gid_a, 16);
	m->alternate.flow_label = cpu_to_be32(0x00001);
	m->alternate.packet_rate = 0x3f;
	m->alternate.hop_limit = 0xff;
	m->alternate.local_ack_timeout = 0x1f;
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void req_image(u8 *img)
{
	static const u8 head[] = {
		0x11, 0x22, 0x33, 0x44,	0x00, 0xab, 0xcd, 0xef,		/* 0 */
		1, 2, 3, 4, 5, 6, 7, 8,					/* 8 */
		0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x11, 0x11,		/* 16 */
		0, 0, 0, 0, 0x01, 0x23, 0x45, 0x67,			/* 24 */
		0x12, 0x34, 0x56, 0x04, 0xfe, 0xdc, 0xba, 0x07,		/* 32 */
		/* 43: timeout 20 = 10100, transport 01, e2e 1 -> a3 */
		0x0a, 0x0b, 0x0c, 0xa3,					/* 40 */
		/* 47: timeout 18 = 10010, retry 101 -> 95 */
		0x65, 0x43, 0x21, 0x95,					/* 44 */
		/* 50: MTU 0100, RDC 1, RNR 111 -> 4f; 51: 1111, 1, 010 -> fa */
		0x80, 0x01, 0x4f, 0xfa,					/* 48 */
		0x00, 0x13, 0x00, 0x24,					/* 52 */
	};
	/*
	 * Primary, from 88: flow label abcde then 6 reserved bits and rate
	 * 000110 -> ab cd e0 06; TC 5a, hop 40; SL 1101, local 1, 000 -> d8;
	 * ACK timeout 10011, 000 -> 98.
	 */
	static const u8 prim_tail[] = { 0xab, 0xcd, 0xe0, 0x06, 0x5a, 0x40, 0xd8, 0x98 };
	/*
	 * Alternate, from 96: LIDs beef c0de, GIDs b then a; from 132: flow
	 * label 00001 -> 00 00 10, rate 111111 -> 3f; TC 00, hop ff;
	 * SL 0, local 0 -> 00; timeout 11111, 000 -> f8.
	 */
	static const u8 alt_lids[] = { 0xbe, 0xef, 0xc0, 0xde };
	static const u8 alt_tail[] = { 0x00, 0x00, 0x10, 0x3f, 0x00, 0xff, 0x00, 0xf8 };

	memcpy(img, head, sizeof(head));
	memcpy(img + 56, gid_a, 16);
	memcpy(img + 72, gid_b, 16);
	memcpy(img + 88, prim_tail, 8);
	memcpy(img + 96, alt_lids, 4);
	memcpy(img + 100, gid_b, 16);
	memcpy(img + 116, gid_a, 16);
	memcpy(img + 132, alt_tail, 8);
	cm_fill(img + 140, 92);
}

/* ---- MRA ---- */

static void mra_fill(void *p)
{
	struct cm_mra *m = p;

	m->local_comm_id = cpu_to_be32(0xdeadbeef);
	m->remote_comm_id = cpu_to_be32(0x01020304);
	m->message_mraed = IB_CM_MRA_MSG_LAP;
	m->service_timeout = 24;
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void mra_image(u8 *img)
{
	/* 8: MRAed 10, 000000 -> 80; 9: timeout 24 = 11000, 000 -> c0 */
	static const u8 head[] = {
		0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x80, 0xc0,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 10, 222);
}

/* ---- REJ ---- */

static void rej_fill(void *p)
{
	struct cm_rej *m = p;

	m->local_comm_id = cpu_to_be32(0xcafef00d);
	m->remote_comm_id = cpu_to_be32(0x00000001);
	m->message_rejected = IB_CM_REJ_MSG_REP;
	m->ari_length = 72;
	m->reason = cpu_to_be16(IB_CM_REJ_INVALID_GID);
	cm_fill(m->ari, sizeof(m->ari));
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void rej_image(u8 *img)
{
	/* 8: rejected 01, 000000 -> 40; 9: length 72 = 1001000, 0 -> 90 */
	static const u8 head[] = {
		0xca, 0xfe, 0xf0, 0x0d, 0x00, 0x00, 0x00, 0x01,
		0x40, 0x90, 0x00, 0x0c,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 12, 72);
	cm_fill(img + 84, 148);
}

/* ---- REP ---- */

static void rep_fill(void *p)
{
	static const struct cm_rep sample = {
		.local_comm_id = cpu_to_be32(0x0a0b0c0d),
		.remote_comm_id = cpu_to_be32(0x11223344),
		.local_qkey = cpu_to_be32(0x01234567),
		.local_qpn = cpu_to_be32(0xabcdef),
		.local_eecn = cpu_to_be32(0x000001),
		.starting_psn = cpu_to_be32(0xfffffe),
		.responder_resources = 0x10, .initiator_depth = 0x20,
		.target_ack_delay = 0x11, .failover_accepted = 2,
		.end_to_end_flow_control = 1, .rnr_retry_count = 6, .srq = 1,
		.local_ca_guid = cpu_to_be64(0x0002c90300002222ULL),
	};
	struct cm_rep *m = p;

	memcpy(m, &sample, sizeof(*m));
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void rep_image(u8 *img)
{
	static const u8 head[] = {
		0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33, 0x44,
		0x01, 0x23, 0x45, 0x67, 0xab, 0xcd, 0xef, 0x00,
		0x00, 0x00, 0x01, 0x00, 0xff, 0xff, 0xfe, 0x00,
		/* 26: delay 10001, failover 10, e2e 1 -> 8d; 27: 110, 1, 0000 -> d0 */
		0x10, 0x20, 0x8d, 0xd0,
		0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x22, 0x22,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 36, 196);
}

/* ---- RTU, DREQ, DREP ---- */

static void rtu_fill(void *p)
{
	struct cm_rtu *m = p;

	m->local_comm_id = cpu_to_be32(0x11111111);
	m->remote_comm_id = cpu_to_be32(0xfffffffe);
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void rtu_image(u8 *img)
{
	static const u8 head[] = { 0x11, 0x11, 0x11, 0x11, 0xff, 0xff, 0xff, 0xfe };

	memcpy(img, head, sizeof(head));
	cm_fill(img + 8, 224);
}

static void dreq_fill(void *p)
{
	struct cm_dreq *m = p;

	m->local_comm_id = cpu_to_be32(0x01000002);
	m->remote_comm_id = cpu_to_be32(0x03000004);
	m->remote_qpn_eecn = cpu_to_be32(0x000abc);
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void dreq_image(u8 *img)
{
	static const u8 head[] = {
		0x01, 0x00, 0x00, 0x02, 0x03, 0x00, 0x00, 0x04, 0x00, 0x0a, 0xbc, 0x00,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 12, 220);
}

static void drep_fill(void *p)
{
	struct cm_drep *m = p;

	m->local_comm_id = cpu_to_be32(0x89abcdef);
	m->remote_comm_id = cpu_to_be32(0x76543210);
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void drep_image(u8 *img)
{
	static const u8 head[] = { 0x89, 0xab, 0xcd, 0xef, 0x76, 0x54, 0x32, 0x10 };

	memcpy(img, head, sizeof(head));
	cm_fill(img + 8, 224);
}

/* ---- SIDR ---- */

static void sidr_req_fill(void *p)
{
	struct cm_sidr_req *m = p;

	m->request_id = cpu_to_be32(0x55aa55aa);
	m->pkey = cpu_to_be16(0x7fff);
	m->service_id = cpu_to_be64(0x0000000001110000ULL | 4791);
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void sidr_req_image(u8 *img)
{
	/* service ID 0x1110000 | 4791 (0x12b7) */
	static const u8 head[] = {
		0x55, 0xaa, 0x55, 0xaa, 0x7f, 0xff, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x01, 0x11, 0x12, 0xb7,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 16, 216);
}

static void sidr_rep_fill(void *p)
{
	struct cm_sidr_rep *m = p;

	m->request_id = cpu_to_be32(0x55aa55aa);
	m->status = IB_SIDR_REDIRECT;
	m->info_length = 72;
	m->qpn = cpu_to_be32(0x123456);
	m->service_id = cpu_to_be64(0xfedcba9876543210ULL);
	m->qkey = cpu_to_be32(0x01234567);
	cm_fill(m->info, sizeof(m->info));
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void sidr_rep_image(u8 *img)
{
	static const u8 head[] = {
		0x55, 0xaa, 0x55, 0xaa, 0x04, 0x48, 0x00, 0x00,
		0x12, 0x34, 0x56, 0x00, 0xfe, 0xdc, 0xba, 0x98,
		0x76, 0x54, 0x32, 0x10, 0x01, 0x23, 0x45, 0x67,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 24, 72);
	cm_fill(img + 96, 136);
}

/* ---- LAP, APR ---- */

static void lap_fill(void *p)
{
	static const struct cm_lap sample = {
		.local_comm_id = cpu_to_be32(0x10203040),
		.remote_comm_id = cpu_to_be32(0x50607080),
		.remote_qpn_eecn = cpu_to_be32(0xfedcba),
		.remote_cm_response_timeout = 0x17,
		.alternate = {
			.local_lid = cpu_to_be16(0x0001),
			.remote_lid = cpu_to_be16(0xfffe),
			.flow_label = cpu_to_be32(0xfffff),
			.traffic_class = 0x80, .hop_limit = 0x01,
			.packet_rate = 0x2a, .sl = 0xf, .subnet_local = 1,
			.local_ack_timeout = 0x01,
		},
	};
	struct cm_lap *m = p;

	memcpy(m, &sample, sizeof(*m));
	memcpy(m->alternate.local_gid.raw, gid_a, 16);
	memcpy(m->alternate.remote_gid.raw, gid_b, 16);
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void lap_image(u8 *img)
{
	/* 15: timeout 10111, 000 -> b8 */
	static const u8 head[] = {
		0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80,
		0x00, 0x00, 0x00, 0x00, 0xfe, 0xdc, 0xba, 0xb8,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0xfe,
	};
	/*
	 * From 56: flow label fffff, 4 reserved bits -> ff ff f0; TC 80;
	 * hop 01; 00, rate 101010 -> 2a; SL 1111, local 1, 000 -> f8;
	 * timeout 00001, 000 -> 08.
	 */
	static const u8 tail[] = { 0xff, 0xff, 0xf0, 0x80, 0x01, 0x2a, 0xf8, 0x08 };

	memcpy(img, head, sizeof(head));
	memcpy(img + 24, gid_a, 16);
	memcpy(img + 40, gid_b, 16);
	memcpy(img + 56, tail, sizeof(tail));
	cm_fill(img + 64, 168);
}

static void apr_fill(void *p)
{
	struct cm_apr *m = p;

	m->local_comm_id = cpu_to_be32(0x0badcafe);
	m->remote_comm_id = cpu_to_be32(0x00c0ffee);
	m->info_length = 72;
	m->ap_status = IB_CM_APR_INVALID_SL;
	cm_fill(m->info, sizeof(m->info));
	cm_fill(m->private_data, sizeof(m->private_data));
}

static void apr_image(u8 *img)
{
	static const u8 head[] = {
		0x0b, 0xad, 0xca, 0xfe, 0x00, 0xc0, 0xff, 0xee,
		0x48, 0x0d, 0x00, 0x00,
	};

	memcpy(img, head, sizeof(head));
	cm_fill(img + 12, 72);
	cm_fill(img + 84, 148);
}

/* ---- ClassPortInfo ---- */

static void cpi_fill(void *p)
{
	struct cm_class_port_info *m = p;

	m->base_version = 1;
	m->class_version = 2;
	m->capability_mask = cpu_to_be16(0x0102);
	m->capability_mask2 = cpu_to_be32(0x4000001);
	m->resp_time_value = 0x12;
	memcpy(m->redirect_gid.raw, gid_a, 16);
	m->redirect_tc = 0xa5;
	m->redirect_sl = 0x3;
	m->redirect_fl = cpu_to_be32(0x12345);
	m->redirect_lid = cpu_to_be16(0x0042);
	m->redirect_pkey = cpu_to_be16(0xffff);
	m->redirect_qp = cpu_to_be32(0x000001);
	m->redirect_qkey = cpu_to_be32(0x80010000);
	memcpy(m->trap_gid.raw, gid_b, 16);
	m->trap_tc = 0x01;
	m->trap_sl = 0xf;
	m->trap_fl = cpu_to_be32(0xfffff);
	m->trap_lid = cpu_to_be16(0x1234);
	m->trap_pkey = cpu_to_be16(0x7fff);
	m->trap_hl = 0x40;
	m->trap_qp = cpu_to_be32(0xabcdef);
	m->trap_qkey = cpu_to_be32(0x00000001);
}

static void cpi_image(u8 *img)
{
	/* 4: CapabilityMask2 0x4000001 << 5 | RespTime 0x12 = 80000032 */
	static const u8 head[] = { 0x01, 0x02, 0x01, 0x02, 0x80, 0x00, 0x00, 0x32 };
	/* 24: TC a5; SL 0011 and FL 12345 -> 31 23 45 */
	static const u8 redir[] = {
		0xa5, 0x31, 0x23, 0x45, 0x00, 0x42, 0xff, 0xff,
		0x00, 0x00, 0x00, 0x01, 0x80, 0x01, 0x00, 0x00,
	};
	/* 56: TC 01; SL 1111 and FL fffff -> ff ff ff */
	static const u8 trap[] = {
		0x01, 0xff, 0xff, 0xff, 0x12, 0x34, 0x7f, 0xff,
		0x40, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x01,
	};

	memcpy(img, head, sizeof(head));
	memcpy(img + 8, gid_a, 16);
	memcpy(img + 24, redir, sizeof(redir));
	memcpy(img + 40, gid_b, 16);
	memcpy(img + 56, trap, sizeof(trap));
}

static const struct cm_sample cm_samples[] = {
	{ CM_MSG_CLASS_PORT_INFO, cpi_fill, cpi_image },
	{ CM_MSG_REQ, req_fill, req_image },
	{ CM_MSG_MRA, mra_fill, mra_image },
	{ CM_MSG_REJ, rej_fill, rej_image },
	{ CM_MSG_REP, rep_fill, rep_image },
	{ CM_MSG_RTU, rtu_fill, rtu_image },
	{ CM_MSG_DREQ, dreq_fill, dreq_image },
	{ CM_MSG_DREP, drep_fill, drep_image },
	{ CM_MSG_SIDR_REQ, sidr_req_fill, sidr_req_image },
	{ CM_MSG_SIDR_REP, sidr_rep_fill, sidr_rep_image },
	{ CM_MSG_LAP, lap_fill, lap_image },
	{ CM_MSG_APR, apr_fill, apr_image },
};

/*
 * The reserved bits of each message: (byte, mask of reserved bits). With
 * every field at its largest value, a message packs to 0xff except here.
 */
struct cm_reserved {
	u8 byte, mask;
};

#define CM_RSV_END { 0, 0 }

static const struct cm_reserved cm_rsv_req[] = {
	{ 4, 0xff }, { 24, 0xff }, { 25, 0xff }, { 26, 0xff }, { 27, 0xff },
	/* primary path from 52, alternate from 96 */
	{ 90, 0x0f }, { 91, 0xc0 }, { 94, 0x07 }, { 95, 0x07 },
	{ 134, 0x0f }, { 135, 0xc0 }, { 138, 0x07 }, { 139, 0x07 }, CM_RSV_END,
};

static const struct cm_reserved cm_rsv_mra[] = { { 8, 0x3f }, { 9, 0x07 }, CM_RSV_END };
static const struct cm_reserved cm_rsv_rej[] = { { 8, 0x3f }, { 9, 0x01 }, CM_RSV_END };
static const struct cm_reserved cm_rsv_rep[] = {
	{ 15, 0xff }, { 19, 0xff }, { 23, 0xff }, { 27, 0x0f }, CM_RSV_END,
};

static const struct cm_reserved cm_rsv_none[] = { CM_RSV_END };
static const struct cm_reserved cm_rsv_dreq[] = { { 11, 0xff }, CM_RSV_END };
static const struct cm_reserved cm_rsv_sidr_req[] = { { 6, 0xff }, { 7, 0xff }, CM_RSV_END };
static const struct cm_reserved cm_rsv_sidr_rep[] = {
	{ 6, 0xff }, { 7, 0xff }, { 11, 0xff }, CM_RSV_END,
};

static const struct cm_reserved cm_rsv_lap[] = {
	{ 8, 0xff }, { 9, 0xff }, { 10, 0xff }, { 11, 0xff }, { 15, 0x07 },
	{ 16, 0xff }, { 17, 0xff }, { 18, 0xff }, { 19, 0xff },
	{ 58, 0x0f }, { 61, 0xc0 }, { 62, 0x07 }, { 63, 0x07 }, CM_RSV_END,
};

static const struct cm_reserved cm_rsv_apr[] = { { 10, 0xff }, { 11, 0xff }, CM_RSV_END };
static const struct cm_reserved cm_rsv_cpi[] = { { 32, 0xff }, CM_RSV_END };

static const struct cm_reserved *const cm_rsv[CM_MSG_KIND_COUNT] = {
	[CM_MSG_CLASS_PORT_INFO] = cm_rsv_cpi,
	[CM_MSG_REQ] = cm_rsv_req,	[CM_MSG_MRA] = cm_rsv_mra,
	[CM_MSG_REJ] = cm_rsv_rej,	[CM_MSG_REP] = cm_rsv_rep,
	[CM_MSG_RTU] = cm_rsv_none,	[CM_MSG_DREQ] = cm_rsv_dreq,
	[CM_MSG_DREP] = cm_rsv_none,	[CM_MSG_SIDR_REQ] = cm_rsv_sidr_req,
	[CM_MSG_SIDR_REP] = cm_rsv_sidr_rep,
	[CM_MSG_LAP] = cm_rsv_lap,	[CM_MSG_APR] = cm_rsv_apr,
};

/* The image of @kind with every field at its largest value. */
static void cm_max_image(enum cm_msg_kind kind, u8 *img)
{
	const struct cm_reserved *r;

	memset(img, 0xff, cm_msg_wire_size(kind));
	for (r = cm_rsv[kind]; r->mask; r++)
		img[r->byte] &= ~r->mask;
}

/* Each sample packs to its image; reserved bits come out zero. */
static void cm_pack_samples(struct kunit *test)
{
	const struct cm_sample *s;

	for (s = cm_samples; s < cm_samples + ARRAY_SIZE(cm_samples); s++) {
		size_t wire = cm_msg_wire_size(s->kind);
		u8 got[CM_DATA], want[CM_DATA];
		void *msg;

		msg = kunit_kzalloc(test, cm_msg_struct_size(s->kind), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, msg);
		memset(want, 0, sizeof(want));
		s->fill(msg);
		s->image(want);
		memset(got, 0xa5, sizeof(got));
		KUNIT_EXPECT_EQ(test, cm_msg_pack(s->kind, msg, got), 0);
		ib_kunit_expect_bytes(test, cm_msg_name(s->kind), got, want, wire);
	}
}

/* Each image unpacks to exactly the sample it came from. */
static void cm_unpack_samples(struct kunit *test)
{
	const struct cm_sample *s;

	for (s = cm_samples; s < cm_samples + ARRAY_SIZE(cm_samples); s++) {
		size_t size = cm_msg_struct_size(s->kind);
		u8 img[CM_DATA];
		void *want, *got;

		want = kunit_kzalloc(test, size, GFP_KERNEL);
		got = kunit_kmalloc(test, size, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, want);
		KUNIT_ASSERT_NOT_NULL(test, got);
		memset(img, 0, sizeof(img));
		s->fill(want);
		s->image(img);
		memset(got, 0xee, size);
		KUNIT_EXPECT_EQ(test, cm_msg_unpack(s->kind, img, got), 0);
		ib_kunit_expect_bytes(test, cm_msg_name(s->kind), got, want, size);
	}
}

/*
 * Every field at its largest value (a structure of 0xff bytes: each value
 * is cut to its field's width) packs to all ones but the reserved bits; a
 * structure of zeros packs to all zeros, whatever the buffer held.
 */
static void cm_pack_boundaries(struct kunit *test)
{
	int k;

	for (k = 0; k < CM_MSG_KIND_COUNT; k++) {
		size_t wire = cm_msg_wire_size(k), size = cm_msg_struct_size(k);
		u8 got[CM_DATA], want[CM_DATA];
		void *msg;

		msg = kunit_kmalloc(test, size, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, msg);
		memset(msg, 0xff, size);
		memset(got, 0x00, sizeof(got));
		cm_max_image(k, want);
		KUNIT_EXPECT_EQ(test, cm_msg_pack(k, msg, got), 0);
		ib_kunit_expect_bytes(test, cm_msg_name(k), got, want, wire);

		memset(msg, 0, size);
		memset(got, 0xff, sizeof(got));
		memset(want, 0, sizeof(want));
		cm_msg_pack(k, msg, got);
		ib_kunit_expect_bytes(test, cm_msg_name(k), got, want, wire);
	}
}

/*
 * Round trips: a buffer of all ones (reserved bits set too) unpacks and
 * packs again to the largest-value image, so reserved bits never leak
 * into a structure; and each sample survives pack then unpack.
 */
static void cm_round_trips(struct kunit *test)
{
	const struct cm_sample *s;
	int k;

	for (k = 0; k < CM_MSG_KIND_COUNT; k++) {
		u8 ones[CM_DATA], got[CM_DATA], want[CM_DATA];
		void *msg;

		msg = kunit_kmalloc(test, cm_msg_struct_size(k), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, msg);
		memset(ones, 0xff, sizeof(ones));
		cm_max_image(k, want);
		cm_msg_unpack(k, ones, msg);
		memset(got, 0, sizeof(got));
		cm_msg_pack(k, msg, got);
		ib_kunit_expect_bytes(test, cm_msg_name(k), got, want,
				      cm_msg_wire_size(k));
	}

	for (s = cm_samples; s < cm_samples + ARRAY_SIZE(cm_samples); s++) {
		size_t size = cm_msg_struct_size(s->kind);
		void *in, *out;
		u8 buf[CM_DATA];

		in = kunit_kzalloc(test, size, GFP_KERNEL);
		out = kunit_kmalloc(test, size, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, in);
		KUNIT_ASSERT_NOT_NULL(test, out);
		s->fill(in);
		cm_msg_pack(s->kind, in, buf);
		cm_msg_unpack(s->kind, buf, out);
		ib_kunit_expect_bytes(test, cm_msg_name(s->kind), out, in, size);
	}
}

/* Each table covers every bit of its message exactly once. */
static void cm_tables_cover(struct kunit *test)
{
	int k;

	for (k = 0; k < CM_MSG_KIND_COUNT; k++) {
		unsigned int wire_bits = cm_msg_wire_size(k) * 8, covered = 0;
		const struct ib_field *rows, *f;
		u8 seen[CM_DATA];
		int nrows;

		memset(seen, 0, sizeof(seen));
		rows = cm_msg_rows(k, &nrows);
		KUNIT_ASSERT_NOT_NULL(test, rows);
		for (f = rows; f < rows + nrows; f++) {
			unsigned int b = f->offset_words * 32 + f->offset_bits;
			unsigned int end = b + f->size_bits;

			KUNIT_EXPECT_LE_MSG(test, end, wire_bits, "%s: %s ends past the message",
					    cm_msg_name(k), f->field_name);
			for (; b < end && b < wire_bits; b++) {
				u8 bit = 0x80 >> (b % 8);

				KUNIT_EXPECT_FALSE_MSG(test, seen[b / 8] & bit,
						       "%s: bit %u covered twice (%s)",
						       cm_msg_name(k), b, f->field_name);
				seen[b / 8] |= bit;
				covered++;
			}
		}
		KUNIT_EXPECT_EQ_MSG(test, covered, wire_bits, "%s", cm_msg_name(k));
	}
}

/* The attribute IDs, names and sizes of IBA 16.7.2 / 12.6. */
static void cm_attr_ids(struct kunit *test)
{
	static const struct {
		enum cm_msg_kind kind;
		u16 attr;
		const char *name;
	} want[] = {
		{ CM_MSG_CLASS_PORT_INFO, 0x0001, "ClassPortInfo" },
		{ CM_MSG_REQ, 0x0010, "REQ" },	{ CM_MSG_MRA, 0x0011, "MRA" },
		{ CM_MSG_REJ, 0x0012, "REJ" },	{ CM_MSG_REP, 0x0013, "REP" },
		{ CM_MSG_RTU, 0x0014, "RTU" },	{ CM_MSG_DREQ, 0x0015, "DREQ" },
		{ CM_MSG_DREP, 0x0016, "DREP" },
		{ CM_MSG_SIDR_REQ, 0x0017, "SIDR_REQ" },
		{ CM_MSG_SIDR_REP, 0x0018, "SIDR_REP" },
		{ CM_MSG_LAP, 0x0019, "LAP" },	{ CM_MSG_APR, 0x001a, "APR" },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		KUNIT_EXPECT_EQ(test, cm_msg_attr_id(want[i].kind), want[i].attr);
		KUNIT_EXPECT_EQ(test, cm_msg_kind_of_attr(want[i].attr), (int)want[i].kind);
		KUNIT_EXPECT_STREQ(test, cm_msg_name(want[i].kind), want[i].name);
		KUNIT_EXPECT_EQ(test, cm_msg_wire_size(want[i].kind),
				want[i].kind == CM_MSG_CLASS_PORT_INFO ? 72 : 232);
	}
	KUNIT_EXPECT_EQ(test, cm_msg_kind_of_attr(0x001b), -ENOMSG);
	KUNIT_EXPECT_EQ(test, cm_msg_kind_of_attr(0x0000), -ENOMSG);
	KUNIT_EXPECT_EQ(test, cm_msg_pack(CM_MSG_KIND_COUNT, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, cm_msg_unpack(-1, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_STREQ(test, cm_msg_name(CM_MSG_KIND_COUNT), "?");
}

/* The MAD header of a CM Send, and what the receive side accepts. */
static void cm_mad_header(struct kunit *test)
{
	static const u8 want[24] = {
		0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00,
		0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
		0x00, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	struct ib_mad_hdr hdr;

	memset(&hdr, 0xff, sizeof(hdr));
	cm_format_mad_hdr(&hdr, CM_MSG_REP, 0x123456789abcdef0ULL);
	ib_kunit_expect_bytes(test, "CM MAD header", &hdr, want, sizeof(want));
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), (int)CM_MSG_REP);

	hdr.attr_id = cpu_to_be16(0x0001);	/* ClassPortInfo is no Send */
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -ENOMSG);
	hdr.attr_id = cpu_to_be16(0x0020);
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -ENOMSG);
	cm_format_mad_hdr(&hdr, CM_MSG_REQ, 1);
	hdr.class_version = 1;
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -EPROTONOSUPPORT);
	cm_format_mad_hdr(&hdr, CM_MSG_REQ, 1);
	hdr.method = IB_MGMT_METHOD_GET;
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -EOPNOTSUPP);
	cm_format_mad_hdr(&hdr, CM_MSG_REQ, 1);
	hdr.mgmt_class = IB_MGMT_CLASS_SUBN_ADM;
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -EINVAL);
	cm_format_mad_hdr(&hdr, CM_MSG_REQ, 1);
	hdr.base_version = 2;
	KUNIT_EXPECT_EQ(test, cm_check_mad_hdr(&hdr), -EINVAL);
}

/* ACK timeout exponents: 2 * PLT + CA ACK delay, rounded up, capped. */
static void cm_ack_timeouts(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(15, 14), 16);	/* 2^15 + 2^15 */
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(0, 14), 16);	/* just over 2^15 */
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(17, 14), 18);	/* 2^15 + 2^17 */
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(0, 0), 2);		/* 3 units */
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(0, 30), 31);
	KUNIT_EXPECT_EQ(test, cm_ack_timeout(31, 31), 31);
}

/* A consumer's REQ parameters, checked and laid into the message. */
static void cm_format_req_param(struct kunit *test)
{
	struct ib_sa_path_rec path = {
		.slid = cpu_to_be16(0x13), .dlid = cpu_to_be16(0x24),
		.flow_label = cpu_to_be32(0xabcde), .rate = IB_RATE_20_GBPS,
		.traffic_class = 0x5a, .hop_limit = 0x40, .sl = 0xd,
		.packet_life_time = 14, .pkey = cpu_to_be16(0x8001),
		.mtu = IB_MTU_2048,
	};
	u8 pd[IB_CM_REQ_PRIVATE_DATA_SIZE + 1], buf[CM_DATA];
	struct ib_cm_req_param p = {
		.primary_path = &path, .qp_type = IB_QPT_RC,
		.service_id = cpu_to_be64(0x0102030405060708ULL),
		.qp_num = 0x123456, .starting_psn = 0x654321,
		.private_data = pd, .private_data_len = IB_CM_REQ_PRIVATE_DATA_SIZE,
		.responder_resources = 4, .initiator_depth = 7,
		.remote_cm_response_timeout = 20, .flow_control = 1,
		.local_cm_response_timeout = 18, .retry_count = 5,
		.rnr_retry_count = 7, .max_cm_retries = 15, .srq = 1,
	};
	/* 40: remote EECN 0; 43: 10100, RC 00, e2e 1 -> a1 */
	static const u8 mid[] = {
		0x12, 0x34, 0x56, 0x04, 0x00, 0x00, 0x00, 0x07,		/* 32 */
		0x00, 0x00, 0x00, 0xa1, 0x65, 0x43, 0x21, 0x95,		/* 40 */
		/* 50: MTU 0100, no RDC, RNR 111 -> 47; 51: 1111, SRQ, 000 -> f8 */
		0x80, 0x01, 0x47, 0xf8, 0x00, 0x13, 0x00, 0x24,		/* 48 */
	};
	/* from 88: flow label, rate 6; TC, hop; SL 1101, not local -> d0;
	 * ACK timeout 2 * 2^14 + 2^15 = 2^16 -> 10000, 000 -> 80
	 */
	static const u8 prim_tail[] = { 0xab, 0xcd, 0xe0, 0x06, 0x5a, 0x40, 0xd0, 0x80 };
	struct ib_cm_req_param bad;
	struct cm_req m;
	u8 zeros[44] = {};

	memcpy(path.sgid.raw, gid_a, 16);
	memcpy(path.dgid.raw, gid_b, 16);
	cm_fill(pd, sizeof(pd));
	KUNIT_ASSERT_EQ(test, cm_format_req(&m, &p, cpu_to_be32(0x11223344),
					    cpu_to_be64(0x0002c90300001111ULL), 15), 0);
	cm_msg_pack(CM_MSG_REQ, &m, buf);
	ib_kunit_expect_bytes(test, "REQ 0..7", buf, "\x11\x22\x33\x44\0\0\0\0", 8);
	ib_kunit_expect_bytes(test, "REQ 32..55", buf + 32, mid, sizeof(mid));
	ib_kunit_expect_bytes(test, "REQ primary GIDs", buf + 56, gid_a, 16);
	ib_kunit_expect_bytes(test, "REQ primary tail", buf + 88, prim_tail, 8);
	ib_kunit_expect_bytes(test, "REQ no alternate", buf + 96, zeros, 44);
	ib_kunit_expect_bytes(test, "REQ private data", buf + 140, pd, 92);

	/* each out-of-field value is refused and nothing is written */
#define CM_BAD(field, value, err) do {					\
		bad = p;						\
		bad.field = value;					\
		memset(&m, 0xee, sizeof(m));				\
		KUNIT_EXPECT_EQ_MSG(test, cm_format_req(&m, &bad, 0, 0, 15), err, \
				    #field " = " #value);		\
		KUNIT_EXPECT_EQ(test, be16_to_cpu(m.pkey), 0xeeee);	\
	} while (0)
	CM_BAD(primary_path, NULL, -EINVAL);
	CM_BAD(qp_type, IB_QPT_UD, -EINVAL);
	CM_BAD(qp_num, 0x1000000, -EINVAL);
	CM_BAD(starting_psn, 0x1000000, -EINVAL);
	CM_BAD(remote_cm_response_timeout, 32, -EINVAL);
	CM_BAD(local_cm_response_timeout, 32, -EINVAL);
	CM_BAD(retry_count, 8, -EINVAL);
	CM_BAD(rnr_retry_count, 8, -EINVAL);
	CM_BAD(max_cm_retries, 16, -EINVAL);
	CM_BAD(private_data_len, IB_CM_REQ_PRIVATE_DATA_SIZE + 1, -EINVAL);
	CM_BAD(private_data, NULL, -EINVAL);
	CM_BAD(peer_to_peer, 1, -EOPNOTSUPP);
#undef CM_BAD

	/* UC, a short private data, and an alternate path inside the subnet */
	bad = p;
	bad.qp_type = IB_QPT_UC;
	bad.private_data_len = 3;
	path.hop_limit = 1;
	bad.alternate_path = &path;
	KUNIT_ASSERT_EQ(test, cm_format_req(&m, &bad, 0, 0, 15), 0);
	KUNIT_EXPECT_EQ(test, m.transport_type, 1);
	KUNIT_EXPECT_EQ(test, m.alternate.subnet_local, 1);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(m.alternate.remote_lid), 0x24);
	KUNIT_EXPECT_EQ(test, m.private_data[2], pd[2]);
	KUNIT_EXPECT_EQ(test, m.private_data[3], 0);
}

/* A consumer's LAP: the comm IDs, QPN, timeout and path in place. */
static void cm_format_lap_param(struct kunit *test)
{
	struct ib_sa_path_rec path = {
		.slid = cpu_to_be16(0x13), .dlid = cpu_to_be16(0x24),
		.flow_label = cpu_to_be32(0xabcde), .rate = IB_RATE_20_GBPS,
		.traffic_class = 0x5a, .hop_limit = 0x40, .sl = 0xd,
		.packet_life_time = 14,
	};
	/* 12: QPN; 15: timeout 10100, 000 -> a0; 16..19 reserved; LIDs */
	static const u8 head[] = {
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0xa0,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x13, 0x00, 0x24,
	};
	/* 56: flow label, TC, hop; rate; SL 1101, not local -> d0; 2^16 -> 80 */
	static const u8 tail[] = { 0xab, 0xcd, 0xe0, 0x5a, 0x40, 0x06, 0xd0, 0x80 };
	u8 pd[IB_CM_LAP_PRIVATE_DATA_SIZE + 1], buf[CM_DATA];
	struct cm_lap m;

	memcpy(path.sgid.raw, gid_a, 16);
	memcpy(path.dgid.raw, gid_b, 16);
	cm_fill(pd, sizeof(pd));
	KUNIT_ASSERT_EQ(test, cm_format_lap(&m, cpu_to_be32(0x11223344),
					    cpu_to_be32(0x55667788), 0x123456, 20,
					    &path, 15, pd,
					    IB_CM_LAP_PRIVATE_DATA_SIZE), 0);
	cm_msg_pack(CM_MSG_LAP, &m, buf);
	ib_kunit_expect_bytes(test, "LAP 0..23", buf, head, sizeof(head));
	ib_kunit_expect_bytes(test, "LAP local GID", buf + 24, gid_a, 16);
	ib_kunit_expect_bytes(test, "LAP remote GID", buf + 40, gid_b, 16);
	ib_kunit_expect_bytes(test, "LAP path tail", buf + 56, tail, sizeof(tail));
	ib_kunit_expect_bytes(test, "LAP private data", buf + 64, pd, 168);

	/* out-of-field values are refused and nothing is written */
	memset(&m, 0xee, sizeof(m));
	KUNIT_EXPECT_EQ(test, cm_format_lap(&m, 0, 0, 0x1000000, 20, &path, 15,
					    NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, cm_format_lap(&m, 0, 0, 1, 32, &path, 15, NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cm_format_lap(&m, 0, 0, 1, 20, NULL, 15, NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cm_format_lap(&m, 0, 0, 1, 20, &path, 15, pd,
					    IB_CM_LAP_PRIVATE_DATA_SIZE + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cm_format_lap(&m, 0, 0, 1, 20, &path, 15, NULL, 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, m.remote_cm_response_timeout, 0xee);

	/* a path inside the subnet, a short private data */
	path.hop_limit = 1;
	KUNIT_ASSERT_EQ(test, cm_format_lap(&m, 0, 0, 1, 20, &path, 15, pd, 3), 0);
	KUNIT_EXPECT_EQ(test, m.alternate.subnet_local, 1);
	KUNIT_EXPECT_EQ(test, m.private_data[2], pd[2]);
	KUNIT_EXPECT_EQ(test, m.private_data[3], 0);
}

static struct kunit_case cm_msgs_cases[] = {
	KUNIT_CASE(cm_pack_samples),
	KUNIT_CASE(cm_unpack_samples),
	KUNIT_CASE(cm_pack_boundaries),
	KUNIT_CASE(cm_round_trips),
	KUNIT_CASE(cm_tables_cover),
	KUNIT_CASE(cm_attr_ids),
	KUNIT_CASE(cm_mad_header),
	KUNIT_CASE(cm_ack_timeouts),
	KUNIT_CASE(cm_format_req_param),
	KUNIT_CASE(cm_format_lap_param),
	{}
};

static struct kunit_suite cm_msgs_suite = {
	.name = "ib_cm_msgs",
	.test_cases = cm_msgs_cases,
};

kunit_test_suite(cm_msgs_suite);
