// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite ib_ucm: the pure parts of ucm.c, which includes this file
 * (so the static helpers are in reach): the framing of write(), the path
 * records taken from user space, the private-data bounds, and what an
 * event copies.
 */

#include <kunit/test.h>

static void ucm_test_sizes(struct kunit *test)
{
	/* The ABI's sizes, as libibcm and the 5.2 kernel had them. */
	KUNIT_EXPECT_EQ(test, sizeof(struct ib_ucm_cmd_hdr), 8);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_CREATE_ID].in, 16);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_CREATE_ID].out, 4);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_DESTROY_ID].in, 16);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_DESTROY_ID].out, 4);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_ATTR_ID].out, 24);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_LISTEN].in, 24);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_NOTIFY].in, 8);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_REQ].in, 64);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_REP].in, 40);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_RTU].in, 16);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_REJ].in, 32);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_MRA].in, 16);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_LAP].in, 24);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_SIDR_REQ].in, 40);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_SEND_SIDR_REP].in, 40);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_EVENT].in, 32);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_EVENT].out, 192);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_INIT_QP_ATTR].in, 16);
	KUNIT_EXPECT_EQ(test, ucm_cmd_sizes[IB_USER_CM_CMD_INIT_QP_ATTR].out, 144);
	/* every command has a row with a structure */
	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(ucm_cmd_sizes), 18);
}

static void ucm_test_hdr(struct kunit *test)
{
	struct ib_ucm_cmd_hdr h;
	u32 cmd;

	for (cmd = 0; cmd < ARRAY_SIZE(ucm_cmd_sizes); cmd++) {
		const struct ucm_cmd_size *s = &ucm_cmd_sizes[cmd];

		KUNIT_EXPECT_NE(test, s->in, 0);
		h = (struct ib_ucm_cmd_hdr){ cmd, s->in, s->out };
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + s->in), 0);
		/* the write() one byte short or long */
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + s->in - 1), -EINVAL);
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + s->in + 1), -EINVAL);
		/* in one off either way */
		h.in = s->in - 1;
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + h.in), -EINVAL);
		h.in = s->in + 1;
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + h.in), -EINVAL);
		h.in = 0xffff;
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + h.in), -EINVAL);
		/* out one off either way */
		h.in = s->in;
		h.out = s->out + 1;
		KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + h.in), -EINVAL);
		if (s->out) {
			h.out = s->out - 1;
			KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 8 + h.in), -EINVAL);
		}
	}
	h = (struct ib_ucm_cmd_hdr){ 18, 16, 0 };
	KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 24), -EINVAL);
	h.cmd = U32_MAX;
	KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, 24), -EINVAL);
	/* count far beyond what any command can be */
	h = (struct ib_ucm_cmd_hdr){ IB_USER_CM_CMD_NOTIFY, 8, 0 };
	KUNIT_EXPECT_EQ(test, ucm_check_hdr(&h, SIZE_MAX), -EINVAL);
}

static void ucm_test_good_path(struct ib_user_path_rec *u)
{
	memset(u, 0, sizeof(*u));
	u->dgid[0] = 0xfe;
	u->dgid[1] = 0x80;
	u->dgid[15] = 1;
	u->sgid[15] = 2;
	u->dlid = cpu_to_be16(1);
	u->slid = cpu_to_be16(0xbfff);
	u->pkey = cpu_to_be16(0xffff);
	u->mtu = IB_MTU_4096;
	u->rate = IB_RATE_120_GBPS;
	u->sl = 15;
	u->flow_label = cpu_to_be32(0xfffff);
	u->packet_life_time = 63;
	u->numb_path = 127;
	u->mtu_selector = 3;
	u->rate_selector = 3;
	u->packet_life_time_selector = 3;
	u->raw_traffic = 1;
	u->reversible = 1;
	u->hop_limit = 255;
	u->traffic_class = 0xab;
	u->preference = 0xcd;
}

static void ucm_test_path(struct kunit *test)
{
	struct ib_user_path_rec u, back;
	struct ib_sa_path_rec p;

	/* every field at its largest legal value, and back */
	ucm_test_good_path(&u);
	KUNIT_ASSERT_EQ(test, ucm_path_from_user(&p, &u), 0);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(p.dlid), 1);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(p.slid), 0xbfff);
	KUNIT_EXPECT_EQ(test, p.mtu, IB_MTU_4096);
	KUNIT_EXPECT_EQ(test, p.sl, 15);
	KUNIT_EXPECT_EQ(test, p.hop_limit, 255);
	KUNIT_EXPECT_EQ(test, p.preference, 0xcd);
	KUNIT_EXPECT_EQ(test, p.dgid.raw[0], 0xfe);
	KUNIT_EXPECT_EQ(test, p.sgid.raw[15], 2);
	KUNIT_EXPECT_TRUE(test, !p.service_id);
	ucm_path_to_user(&back, &p);
	KUNIT_EXPECT_EQ(test, memcmp(&back, &u, sizeof(u)), 0);

	/* one past, field by field */
#define BAD(field, value) do {						\
		ucm_test_good_path(&u);					\
		u.field = (value);					\
		KUNIT_EXPECT_EQ_MSG(test, ucm_path_from_user(&p, &u),	\
				    -EINVAL, #field " = " #value);	\
	} while (0)
	BAD(dlid, 0);
	BAD(dlid, cpu_to_be16(0xc000));
	BAD(dlid, cpu_to_be16(0xffff));
	BAD(slid, 0);
	BAD(slid, cpu_to_be16(0xc000));
	BAD(pkey, 0);
	BAD(pkey, cpu_to_be16(0x8000));
	BAD(mtu, 0);
	BAD(mtu, IB_MTU_4096 + 1);
	BAD(mtu, U32_MAX);
	BAD(rate, 1);
	BAD(rate, IB_RATE_120_GBPS + 1);
	BAD(sl, 16);
	BAD(flow_label, cpu_to_be32(0x100000));
	BAD(packet_life_time, 64);
	BAD(numb_path, 128);
	BAD(mtu_selector, 4);
	BAD(rate_selector, 4);
	BAD(packet_life_time_selector, 4);
	BAD(raw_traffic, 2);
	BAD(reversible, 2);
#undef BAD
	/* the smallest legal values */
	ucm_test_good_path(&u);
	u.mtu = IB_MTU_256;
	u.rate = 0;
	u.pkey = cpu_to_be16(1);
	u.dlid = cpu_to_be16(0xbfff);
	u.slid = cpu_to_be16(1);
	KUNIT_EXPECT_EQ(test, ucm_path_from_user(&p, &u), 0);
	u.rate = 2;
	KUNIT_EXPECT_EQ(test, ucm_path_from_user(&p, &u), 0);
}

static void ucm_test_data_bounds(struct kunit *test)
{
	static const struct { u32 cmd; u8 max; } rows[] = {
		{ IB_USER_CM_CMD_SEND_REQ, 92 }, { IB_USER_CM_CMD_SEND_REP, 196 },
		{ IB_USER_CM_CMD_SEND_RTU, 224 }, { IB_USER_CM_CMD_SEND_DREQ, 220 },
		{ IB_USER_CM_CMD_SEND_DREP, 224 }, { IB_USER_CM_CMD_SEND_REJ, 148 },
		{ IB_USER_CM_CMD_SEND_MRA, 222 }, { IB_USER_CM_CMD_SEND_LAP, 168 },
		{ IB_USER_CM_CMD_SEND_APR, 148 },
		{ IB_USER_CM_CMD_SEND_SIDR_REQ, 216 },
		{ IB_USER_CM_CMD_SEND_SIDR_REP, 136 },
		{ IB_USER_CM_CMD_CREATE_ID, 0 }, { IB_USER_CM_CMD_EVENT, 0 },
	};
	void *p;
	int err, i;

	for (i = 0; i < ARRAY_SIZE(rows); i++)
		KUNIT_EXPECT_EQ(test, ucm_cmd_data_max(rows[i].cmd), rows[i].max);

	/* over the bound: EINVAL before any user access */
	p = ucm_copy_data(0, 93, ucm_cmd_data_max(IB_USER_CM_CMD_SEND_REQ), &err);
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, p);
	p = ucm_copy_data(0, 255, 224, &err);
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	/* nothing to copy */
	p = ucm_copy_data(0, 0, 92, &err);
	KUNIT_EXPECT_EQ(test, err, 0);
	KUNIT_EXPECT_NULL(test, p);
}

static void ucm_test_event_copy(struct kunit *test)
{
	struct ucm_event *ev = kunit_kzalloc(test, sizeof(*ev), GFP_KERNEL);
	struct ib_sa_path_rec path = { .dlid = cpu_to_be16(7), .mtu = 4 };
	u8 pd[IB_CM_RTU_PRIVATE_DATA_SIZE], ari[100];
	struct ib_cm_event e = {};

	KUNIT_ASSERT_NOT_NULL(test, ev);
	memset(pd, 0x5a, sizeof(pd));
	memset(ari, 0xa5, sizeof(ari));

	/* a REQ: 92 bytes of data, the primary path, no alternate */
	e.event = IB_CM_REQ_RECEIVED;
	e.private_data = pd;
	e.param.req_rcvd.primary_path = &path;
	e.param.req_rcvd.remote_qpn = 0x123456;
	ucm_fill_event(ev, &e);
	KUNIT_EXPECT_EQ(test, ev->data_len, 92);
	KUNIT_EXPECT_EQ(test, ev->info_len, 0);
	KUNIT_EXPECT_EQ(test, ev->resp.present, IB_UCM_PRES_PRIMARY);
	KUNIT_EXPECT_EQ(test, be16_to_cpu(ev->resp.u.req_resp.primary_path.dlid), 7);
	KUNIT_EXPECT_EQ(test, ev->resp.u.req_resp.remote_qpn, 0x123456);

	/* a REJ whose ARI claims more than 72 bytes: clamped */
	memset(ev, 0, sizeof(*ev));
	e = (struct ib_cm_event){ .event = IB_CM_REJ_RECEIVED,
				  .private_data = pd };
	e.param.rej_rcvd.reason = IB_CM_REJ_CONSUMER_DEFINED;
	e.param.rej_rcvd.ari = ari;
	e.param.rej_rcvd.ari_length = 100;
	ucm_fill_event(ev, &e);
	KUNIT_EXPECT_EQ(test, ev->data_len, 148);
	KUNIT_EXPECT_EQ(test, ev->info_len, 72);
	KUNIT_EXPECT_EQ(test, ev->resp.u.rej_resp.reason, 28);

	/* an RTU: the largest data; a timewait exit: none even if given */
	memset(ev, 0, sizeof(*ev));
	e = (struct ib_cm_event){ .event = IB_CM_RTU_RECEIVED,
				  .private_data = pd };
	ucm_fill_event(ev, &e);
	KUNIT_EXPECT_EQ(test, ev->data_len, 224);
	memset(ev, 0, sizeof(*ev));
	e = (struct ib_cm_event){ .event = IB_CM_TIMEWAIT_EXIT,
				  .private_data = pd };
	ucm_fill_event(ev, &e);
	KUNIT_EXPECT_EQ(test, ev->data_len, 0);
	KUNIT_EXPECT_EQ(test, ev->resp.event, IB_CM_TIMEWAIT_EXIT);

	/* no event carries more than the buffer holds */
	for (e.event = 0; e.event < IB_CM_EVENT_COUNT; e.event++)
		KUNIT_EXPECT_LE(test, ucm_event_data_size(e.event), UCM_MAX_DATA);
	KUNIT_EXPECT_TRUE(test, ucm_new_conn(IB_CM_REQ_RECEIVED));
	KUNIT_EXPECT_TRUE(test, ucm_new_conn(IB_CM_SIDR_REQ_RECEIVED));
	KUNIT_EXPECT_FALSE(test, ucm_new_conn(IB_CM_REP_RECEIVED));
}

static void ucm_test_max_events(struct kunit *test)
{
	unsigned int saved = max_events;

	KUNIT_EXPECT_EQ(test, ucm_max_events(), 1024);
	max_events = 0;
	KUNIT_EXPECT_EQ(test, ucm_max_events(), 1);
	max_events = UINT_MAX;
	KUNIT_EXPECT_EQ(test, ucm_max_events(), UCM_EVENTS_CAP);
	max_events = saved;
}

static void ucm_test_listen(struct kunit *test)
{
	__be64 all = cpu_to_be64(~0ULL);

	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x7000), all), 0);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x1000000000000000ULL), 0), 0);
	/* one exact rdma_cm ID (TCP port 7471), first and last of the range */
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x01061d2f), all), 0);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x01000000), all), 0);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x01ffffff), 0), 0);
	/* a mask that takes more than one of rdma_cm's IDs */
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x01000000),
					       cpu_to_be64(0xffffffffff000000ULL)), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x061d2f),
					       cpu_to_be64(0xffffff)), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(0, cpu_to_be64(1ULL << 63)), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(1ULL << 63),
					       cpu_to_be64(1ULL << 63)), 0);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x02000000), all), 0);
	/* SDP's, exact or not */
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x00010000), all), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x0001ffff), all), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x00010000),
					       cpu_to_be64(0xffff0000)), -EINVAL);
	KUNIT_EXPECT_EQ(test, ucm_check_listen(cpu_to_be64(0x00020000), all), 0);
}

static struct kunit_case ucm_test_cases[] = {
	KUNIT_CASE(ucm_test_listen),
	KUNIT_CASE(ucm_test_sizes),
	KUNIT_CASE(ucm_test_hdr),
	KUNIT_CASE(ucm_test_path),
	KUNIT_CASE(ucm_test_data_bounds),
	KUNIT_CASE(ucm_test_event_copy),
	KUNIT_CASE(ucm_test_max_events),
	{}
};

static struct kunit_suite ucm_test_suite = {
	.name = "ib_ucm",
	.test_cases = ucm_test_cases,
};

kunit_test_suite(ucm_test_suite);
