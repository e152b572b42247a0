// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mthca_smoke: a one-guest data-path check of ib_mthca through the kernel
 * verbs.  It brings port 1 up by itself (QP0 to RTS runs INIT_IB; Set
 * PortInfo through process_mad gives the port LID 1 and moves it to
 * ARMED, then ACTIVE), then loops traffic back to its own LID: RC send,
 * RDMA write, RDMA read, fetch&add, UD send, an SRQ receive and an error
 * completion.  Results go to the kernel log as "mthca_smoke: PASS/FAIL".
 * The port needs a cable (any peer) for the link to come up.  With ib_mad
 * loaded, QP0 is already ib_mad's and only the port setup runs here.
 *
 * It adds what ib_selftest (the two-guest data path) does not: atomics,
 * an error completion, SRQ, query/illegal modify, multicast attach/detach
 * through an AMGM chain, resize_cq with completions pending, an inline
 * send, a QP1 (MLX) post with a P_Key index beyond the table.  `make`
 * builds it (`make test-modules`) into build/modules with our modules;
 * vm.OursSmoke (tests/vm/ours_smoke.test.cc) runs it in `make check` and
 * checks every PASS line by name, so a new check here goes into that
 * test's list too.  By hand:
 *
 *   build/tests/lab/iblab run --guest vm0:ours --fabric star:1 \
 *	--modules build/modules -- build/tests/lab/iblab exec vm0 -- \
 *	'modprobe ib_mthca; modprobe mthca_smoke; dmesg | grep smoke'
 *
 * The last line is "mthca_smoke: DONE <n> failures".
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

MODULE_LICENSE("Dual BSD/GPL");

#define BUF	8192
#define LID	1

struct smoke {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_mr *mr;
	struct ib_cq *cq;
	void *buf;
	dma_addr_t dma;
	int fails;
};

static void say(struct smoke *s, bool ok, const char *what, long v)
{
	pr_info("mthca_smoke: %s %s (%ld)\n", ok ? "PASS" : "FAIL", what, v);
	if (!ok)
		s->fails++;
}

static int poll_one(struct smoke *s, struct ib_wc *wc)
{
	int i, n;

	for (i = 0; i < 2000; i++) {
		n = ib_poll_cq(s->cq, 1, wc);
		if (n)
			return n;
		usleep_range(1000, 2000);
	}
	return 0;
}

static int smp(struct smoke *s, int method, struct ib_smp *in, struct ib_smp *out)
{
	in->base_version = 1;
	in->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	in->class_version = 1;
	in->method = method;
	in->attr_id = cpu_to_be16(0x0015);
	in->attr_mod = cpu_to_be32(1);
	memset(out, 0, sizeof(*out));
	return s->dev->process_mad(s->dev, IB_MAD_IGNORE_MKEY, 1, NULL, NULL,
				   (struct ib_mad *)in, (struct ib_mad *)out);
}

static int port_up(struct smoke *s)
{
	struct ib_smp *in, *out;
	struct ib_port_attr pa;
	int i, ret, st;

	in = kzalloc(sizeof(*in), GFP_KERNEL);
	out = kzalloc(sizeof(*out), GFP_KERNEL);
	for (i = 0; i < 100; i++) {
		ib_query_port(s->dev, 1, &pa);
		if (pa.state >= IB_PORT_INIT)
			break;
		msleep(100);
	}
	say(s, pa.state >= IB_PORT_INIT, "port INIT after QP0 RTR", pa.state);
	for (st = IB_PORT_ARMED; st <= IB_PORT_ACTIVE; st++) {
		memset(in, 0, sizeof(*in));
		ret = smp(s, IB_MGMT_METHOD_GET, in, out);
		memcpy(in->data, out->data, sizeof(in->data));
		*(__be16 *)(in->data + 16) = cpu_to_be16(LID);
		in->data[32] = (in->data[32] & 0xf0) | st;
		in->data[33] &= 0x0f;
		ret = smp(s, IB_MGMT_METHOD_SET, in, out);
		pr_info("mthca_smoke: Set PortInfo state %d: ret %#x status %#x state now %d\n",
			st, ret, be16_to_cpu(out->status), out->data[32] & 0xf);
	}
	ib_query_port(s->dev, 1, &pa);
	say(s, pa.state == IB_PORT_ACTIVE && pa.lid == LID, "port ACTIVE with LID", pa.state);
	kfree(in);
	kfree(out);
	return pa.state == IB_PORT_ACTIVE ? 0 : -EIO;
}

static int to_rts(struct ib_qp *qp, enum ib_qp_type t, u32 dqpn, bool special)
{
	struct ib_qp_attr a = {};
	int ret;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = 0x1234;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			    IB_ACCESS_REMOTE_ATOMIC;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   (special ? 0 : IB_QP_PORT) |
			   (t == IB_QPT_RC ? IB_QP_ACCESS_FLAGS : IB_QP_QKEY));
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	if (t == IB_QPT_RC) {
		a.path_mtu = IB_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 7;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.dlid = LID;
		a.ah_attr.port_num = 1;
		ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	} else {
		ret = ib_modify_qp(qp, &a, IB_QP_STATE);
	}
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    (t == IB_QPT_RC ? IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			     IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC : 0));
}

static struct ib_qp *mkqp(struct smoke *s, enum ib_qp_type t, struct ib_srq *srq)
{
	struct ib_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.sq_sig_type = IB_SIGNAL_ALL_WR, .qp_type = t, .port_num = 1,
	};

	return ib_create_qp(s->pd, &ia);
}

static u32 fnv_fold(const u8 *g)
{
	u32 h = 2166136261u;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ g[i]) * 16777619u;
	return (h ^ (h >> 16)) & 0xffff;
}

/* Send 200 bytes to a multicast group; return how many receives arrived. */
static int mc_send(struct smoke *s, struct ib_qp *ud, struct ib_ah *ah)
{
	struct ib_sge sg = { .addr = s->dma, .length = 200, .lkey = s->mr->lkey };
	struct ib_send_wr sw = { .wr_id = 99, .sg_list = &sg, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct ib_send_wr *bsw;
	struct ib_wc wc;
	int got = 0, i, n;

	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = 0xffffff;
	sw.wr.ud.remote_qkey = 0x1234;
	if (ib_post_send(ud, &sw, &bsw))
		return -1;
	for (i = 0; i < 200; i++) {
		n = ib_poll_cq(s->cq, 1, &wc);
		if (!n) {
			usleep_range(1000, 2000);
			continue;
		}
		if (wc.wr_id == 99)
			continue;
		if (wc.status == IB_WC_SUCCESS && (wc.wc_flags & IB_WC_GRH) &&
		    wc.byte_len == 240)
			got++;
		else
			pr_info("mthca_smoke: mc odd wc id=%llu st=%d len=%u\n",
				wc.wr_id, wc.status, wc.byte_len);
	}
	return got;
}

static void mc_test(struct smoke *s, struct ib_qp *ud)
{
	union ib_gid g[2];
	struct ib_ah *ah[2];
	struct ib_ah_attr aa = { .port_num = 1, .ah_flags = IB_AH_GRH };
	struct ib_sge sg = { .length = 1024, .lkey = s->mr->lkey };
	struct ib_recv_wr rw = { .sg_list = &sg, .num_sge = 1 }, *brw;
	u16 *seen;
	u32 x, h;
	int i, ret;

	seen = kcalloc(65536, sizeof(u16), GFP_KERNEL);
	memset(g, 0, sizeof(g));
	g[0].raw[0] = 0xff;
	g[0].raw[1] = 0x12;
	g[1] = g[0];
	for (x = 1; x < 65536; x++) {
		g[1].raw[14] = x >> 8;
		g[1].raw[15] = x;
		h = fnv_fold(g[1].raw);
		if (seen[h])
			break;
		seen[h] = x;
	}
	g[0].raw[14] = seen[h] >> 8;
	g[0].raw[15] = seen[h];
	kfree(seen);
	say(s, fnv_fold(g[0].raw) == fnv_fold(g[1].raw), "colliding MGIDs", x);

	for (i = 0; i < 2; i++) {
		aa.dlid = 0xc001 + i;
		aa.grh.dgid = g[i];
		aa.grh.hop_limit = 1;
		ah[i] = ib_create_ah(s->pd, &aa);
	}
	for (i = 0; i < 8; i++) {
		sg.addr = s->dma + 4096;
		rw.wr_id = 100 + i;
		ib_post_recv(ud, &rw, &brw);
	}
	ret = ib_attach_mcast(ud, &g[0], 0xc001);
	say(s, !ret, "attach G0 (bucket)", ret);
	ret = ib_attach_mcast(ud, &g[1], 0xc002);
	say(s, !ret, "attach G1 (AMGM, same bucket)", ret);
	ret = ib_attach_mcast(ud, &g[1], 0xc002);
	say(s, !ret, "attach G1 again is a no-op", ret);
	ret = mc_send(s, ud, ah[0]);
	say(s, ret == 1, "G0 send delivered once", ret);
	ret = mc_send(s, ud, ah[1]);
	say(s, ret == 1, "G1 (chained) send delivered once", ret);
	ret = ib_detach_mcast(ud, &g[0], 0xc001);
	say(s, !ret, "detach G0 (bucket takes G1 over)", ret);
	ret = mc_send(s, ud, ah[0]);
	say(s, ret == 0, "G0 send after detach not delivered", ret);
	ret = mc_send(s, ud, ah[1]);
	say(s, ret == 1, "G1 send still delivered", ret);
	ret = ib_detach_mcast(ud, &g[0], 0xc001);
	say(s, ret == -EINVAL, "detach G0 twice -> EINVAL", ret);
	ret = ib_detach_mcast(ud, &g[1], 0xc002);
	say(s, !ret, "detach G1", ret);
	ret = mc_send(s, ud, ah[1]);
	say(s, ret == 0, "G1 send after detach not delivered", ret);
	/* chain again after the bucket emptied: G1 first, then G0 */
	ret = ib_attach_mcast(ud, &g[1], 0xc002) ||
	      ib_attach_mcast(ud, &g[0], 0xc001);
	say(s, !ret, "re-attach both", ret);
	ret = mc_send(s, ud, ah[0]) + 10 * mc_send(s, ud, ah[1]);
	say(s, ret == 11, "both delivered", ret);
	ret = ib_detach_mcast(ud, &g[0], 0xc001) ||
	      ib_detach_mcast(ud, &g[1], 0xc002);
	say(s, !ret, "detach both (AMGM entry unlinked, then bucket)", ret);
	ret = mc_send(s, ud, ah[0]) + mc_send(s, ud, ah[1]);
	say(s, ret == 0, "nothing delivered after detach", ret);
	for (i = 0; i < 2; i++)
		ib_destroy_ah(ah[i]);
}

/* Resize a CQ while it holds completions; none may be lost or reordered. */
static void resize_test(struct smoke *s)
{
	struct ib_cq *small = ib_create_cq(s->dev, NULL, NULL, NULL, 7);
	struct ib_cq *keep = s->cq;
	struct ib_sge sg = { .addr = s->dma, .length = 64, .lkey = s->mr->lkey };
	struct ib_send_wr sw = { .sg_list = &sg, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct ib_recv_wr rw = { .sg_list = &sg, .num_sge = 1 }, *brw;
	struct ib_send_wr *bsw;
	struct ib_qp *qp;
	struct ib_wc wc;
	int i, ret, got = 0, sends = 0, recvs = 0, order_ok = 1;
	u64 next_send = 200, next_recv = 300;

	say(s, !IS_ERR(small) && small->cqe == 7, "create 7-entry CQ",
	    IS_ERR(small) ? PTR_ERR(small) : small->cqe);
	if (IS_ERR(small))
		return;
	s->cq = small;
	qp = mkqp(s, IB_QPT_RC, NULL);
	s->cq = keep;
	if (IS_ERR(qp)) {
		say(s, false, "create RC on the small CQ", PTR_ERR(qp));
		goto out_cq;
	}
	to_rts(qp, IB_QPT_RC, qp->qp_num, false);
	for (i = 0; i < 6; i++) {
		rw.wr_id = 300 + i;
		ib_post_recv(qp, &rw, &brw);
	}
	for (i = 0; i < 3; i++) {
		sw.wr_id = 200 + i;
		ib_post_send(qp, &sw, &bsw);
	}
	msleep(50);
	ret = ib_resize_cq(small, 100);
	say(s, !ret && small->cqe == 127, "resize 7 -> 100 with 6 CQEs pending",
	    ret ? ret : small->cqe);
	for (i = 3; i < 6; i++) {
		sw.wr_id = 200 + i;
		ib_post_send(qp, &sw, &bsw);
	}
	for (i = 0; i < 2000 && got < 12; i++) {
		if (!ib_poll_cq(small, 1, &wc)) {
			usleep_range(1000, 2000);
			continue;
		}
		got++;
		if (wc.status != IB_WC_SUCCESS)
			order_ok = 0;
		if (wc.opcode & IB_WC_RECV) {
			order_ok &= wc.wr_id == next_recv++;
			recvs++;
		} else {
			order_ok &= wc.wr_id == next_send++;
			sends++;
		}
	}
	say(s, got == 12 && sends == 6 && recvs == 6 && order_ok,
	    "all 12 completions across the resize, in order", got);
	ret = ib_resize_cq(small, 0);
	say(s, ret == -EINVAL && small->cqe == 127, "resize to 0 refused", ret);
	ib_destroy_qp(qp);
out_cq:
	ib_destroy_cq(small);
}

/* An inline RC send: the data is copied into the WQE from CPU addresses. */
static void inline_test(struct smoke *s)
{
	struct ib_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 100 },
		.sq_sig_type = IB_SIGNAL_ALL_WR, .qp_type = IB_QPT_RC,
	};
	u8 *b = s->buf;
	struct ib_sge in[2] = {
		{ .addr = (uintptr_t)b, .length = 60 },
		{ .addr = (uintptr_t)(b + 200), .length = 37 },
	};
	struct ib_sge rs = { .addr = s->dma + 4096, .length = 256,
			     .lkey = s->mr->lkey };
	struct ib_send_wr sw = { .wr_id = 41, .sg_list = in, .num_sge = 2,
				 .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED };
	struct ib_recv_wr rw = { .wr_id = 42, .sg_list = &rs, .num_sge = 1 };
	struct ib_recv_wr *brw;
	struct ib_send_wr *bsw;
	struct ib_qp *qp;
	struct ib_wc wc;
	int i, ret, ok = 0;

	qp = ib_create_qp(s->pd, &ia);
	say(s, !IS_ERR(qp) && ia.cap.max_inline_data >= 100,
	    "create RC with 100 bytes inline", IS_ERR(qp) ? PTR_ERR(qp) :
	    ia.cap.max_inline_data);
	if (IS_ERR(qp))
		return;
	to_rts(qp, IB_QPT_RC, qp->qp_num, false);
	memset(b + 4096, 0, 256);
	ib_post_recv(qp, &rw, &brw);
	ret = ib_post_send(qp, &sw, &bsw);
	say(s, !ret, "post inline send", ret);
	for (i = 0; i < 2; i++) {
		ret = poll_one(s, &wc);
		if (ret == 1 && wc.status == IB_WC_SUCCESS &&
		    (wc.wr_id == 41 || (wc.wr_id == 42 && wc.byte_len == 97)))
			ok++;
	}
	say(s, ok == 2, "inline send completions", ok);
	say(s, !memcmp(b + 4096, b, 60) && !memcmp(b + 4096 + 60, b + 200, 37),
	    "inline data", 0);
	in[1].length = 200;
	ret = ib_post_send(qp, &sw, &bsw);
	say(s, ret == -EINVAL, "too much inline data refused", ret);
	ib_destroy_qp(qp);
}

static void pkey_send_done(struct ib_mad_agent *agent,
			   struct ib_mad_send_wc *wc)
{
}

/*
 * A kernel post on QP1 with a P_Key index beyond the port's table: the MLX
 * path (qp_build_mlx) must refuse it with -EINVAL and post nothing, never
 * send with a P_Key it made up.  QP1 is ib_mad's, so the post goes to the
 * QP of a send-only agent directly, past ib_mad's own check.  The same
 * work request with index 0 is accepted, so the refusal is the index's.
 * That control send is a GetResp to our own LID that nobody waits for;
 * ib_mad drops its completion (a wr_id it did not post) and the answer.
 */
static void pkey_test(struct smoke *s)
{
	struct ib_ah_attr aa = { .dlid = LID, .port_num = 1 };
	struct ib_sge sg = { .addr = s->dma + 6400, .length = 256 };
	struct ib_send_wr sw = { .wr_id = 0x736d6f6b6500ULL, .sg_list = &sg,
				 .num_sge = 1, .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	struct ib_mad_hdr *mh = (struct ib_mad_hdr *)((u8 *)s->buf + 6400);
	struct ib_mad_agent *agent;
	struct ib_send_wr *bsw = NULL;
	struct ib_port_attr pa;
	struct ib_ah *ah;
	int ret;

	ret = ib_query_port(s->dev, 1, &pa);
	agent = ib_register_mad_agent(s->dev, 1, IB_QPT_GSI, NULL, 0,
				      pkey_send_done, NULL, NULL);
	if (ret || IS_ERR(agent)) {
		say(s, false, "QP1 post with pkey_index beyond the table -> EINVAL",
		    ret ? ret : PTR_ERR(agent));
		return;
	}
	/* the QP is on ib_mad's PD: its AH and its MR's lkey, not ours */
	sg.lkey = agent->mr->lkey;
	ah = ib_create_ah(agent->qp->pd, &aa);
	if (IS_ERR(ah)) {
		say(s, false, "QP1 post with pkey_index beyond the table -> EINVAL",
		    PTR_ERR(ah));
		goto out_agent;
	}
	memset(mh, 0, 256);
	mh->base_version = 1;
	mh->mgmt_class = IB_MGMT_CLASS_PERF_MGMT;
	mh->class_version = 1;
	mh->method = IB_MGMT_METHOD_GET_RESP;
	mh->tid = cpu_to_be64(0x736d6f6b65ULL);
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = 1;
	sw.wr.ud.remote_qkey = IB_QP1_QKEY;
	sw.wr.ud.pkey_index = pa.pkey_tbl_len;
	ret = ib_post_send(agent->qp, &sw, &bsw);
	say(s, ret == -EINVAL && bsw == &sw,
	    "QP1 post with pkey_index beyond the table -> EINVAL", ret);
	sw.wr.ud.pkey_index = 0;
	ret = ib_post_send(agent->qp, &sw, &bsw);
	say(s, !ret, "QP1 post with pkey_index 0 accepted", ret);
	/* the send completes on ib_mad's CQ; let it go before the AH does */
	msleep(200);
	ib_destroy_ah(ah);
out_agent:
	ib_unregister_mad_agent(agent);
}

static void run(struct smoke *s)
{
	u8 *b = s->buf;
	u64 a = s->dma;
	struct ib_sge sg = { .lkey = s->mr->lkey };
	struct ib_send_wr sw = {}, *bsw;
	struct ib_recv_wr rw = {}, *brw;
	struct ib_wc wc;
	struct ib_qp *qp0, *rc, *ud, *srqp;
	struct ib_srq *srq;
	struct ib_ah *ah;
	struct ib_ah_attr aa = { .dlid = LID, .port_num = 1 };
	struct ib_srq_init_attr sia = { .attr = { .max_wr = 8, .max_sge = 1 } };
	int ret, i;

	qp0 = mkqp(s, IB_QPT_SMI, NULL);
	if (PTR_ERR_OR_ZERO(qp0) == -EBUSY) {
		pr_info("mthca_smoke: QP0 exists (ib_mad has it)\n");
	} else {
		say(s, !IS_ERR(qp0), "create QP0", PTR_ERR_OR_ZERO(qp0));
		if (IS_ERR(qp0))
			return;
		ret = to_rts(qp0, IB_QPT_SMI, 0, true);
		say(s, !ret, "QP0 to RTS", ret);
	}
	if (port_up(s))
		goto out_qp0;

	rc = mkqp(s, IB_QPT_RC, NULL);
	say(s, !IS_ERR(rc), "create RC", PTR_ERR_OR_ZERO(rc));
	if (IS_ERR(rc))
		goto out_qp0;
	ret = to_rts(rc, IB_QPT_RC, rc->qp_num, false);
	say(s, !ret, "RC to RTS (loopback to itself)", ret);
	{
		struct ib_qp_attr qa;
		struct ib_qp_init_attr qi;

		ret = ib_query_qp(rc, &qa, 0, &qi);
		pr_info("mthca_smoke: query: ret %d state %d timeout %u retry %u rnr %u sq_psn %u\n",
			ret, qa.qp_state, qa.timeout, qa.retry_cnt,
			qa.rnr_retry, qa.sq_psn);
		/* the emulator returns the context of the last transition */
		say(s, !ret && qa.qp_state == IB_QPS_RTS && qa.timeout == 14 &&
		    qa.retry_cnt == 7 && qa.rnr_retry == 7 && qa.sq_psn == 7 &&
		    qi.qp_type == IB_QPT_RC && qi.cap.max_send_wr == 8,
		    "query_qp reads back the RTS attributes", ret);
		qa.qp_state = IB_QPS_INIT;
		ret = ib_modify_qp(rc, &qa, IB_QP_STATE);
		say(s, ret == -EINVAL, "RTS -> INIT refused", ret);
	}

	/* RC send: 0..1023 -> 1024..2047 */
	for (i = 0; i < 1024; i++)
		b[i] = i * 7 + 3;
	memset(b + 1024, 0, 1024);
	sg.addr = a + 1024;
	sg.length = 1024;
	rw.wr_id = 1;
	rw.sg_list = &sg;
	rw.num_sge = 1;
	ret = ib_post_recv(rc, &rw, &brw);
	say(s, !ret, "post_recv", ret);
	sg.addr = a;
	sw.wr_id = 2;
	sw.sg_list = &sg;
	sw.num_sge = 1;
	sw.opcode = IB_WR_SEND_WITH_IMM;
	sw.imm_data = cpu_to_be32(0xabcd);
	sw.send_flags = IB_SEND_SIGNALED;
	ret = ib_post_send(rc, &sw, &bsw);
	say(s, !ret, "post_send", ret);
	for (i = 0; i < 2; i++) {
		ret = poll_one(s, &wc);
		pr_info("mthca_smoke: wc n=%d id=%llu status=%d op=%d len=%u imm=%x flags=%x\n",
			ret, wc.wr_id, wc.status, wc.opcode, wc.byte_len,
			be32_to_cpu(wc.imm_data), wc.wc_flags);
		say(s, ret == 1 && wc.status == IB_WC_SUCCESS, "RC send completion", wc.wr_id);
	}
	say(s, !memcmp(b, b + 1024, 1024), "RC send data", 0);

	/* RDMA write 0..511 -> 2048.. */
	memset(b + 2048, 0, 512);
	sg.addr = a;
	sg.length = 512;
	sw.opcode = IB_WR_RDMA_WRITE;
	sw.wr_id = 3;
	sw.wr.rdma.remote_addr = a + 2048;
	sw.wr.rdma.rkey = s->mr->rkey;
	ret = ib_post_send(rc, &sw, &bsw);
	ret = poll_one(s, &wc);
	say(s, ret == 1 && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RDMA_WRITE,
	    "RDMA write completion", wc.status);
	say(s, !memcmp(b, b + 2048, 512), "RDMA write data", 0);

	/* RDMA read 4096..4351 <- 0.. */
	memset(b + 4096, 0, 256);
	sg.addr = a + 4096;
	sg.length = 256;
	sw.opcode = IB_WR_RDMA_READ;
	sw.wr_id = 4;
	sw.wr.rdma.remote_addr = a;
	ret = ib_post_send(rc, &sw, &bsw);
	ret = poll_one(s, &wc);
	say(s, ret == 1 && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RDMA_READ &&
	    wc.byte_len == 256, "RDMA read completion", wc.status);
	say(s, !memcmp(b, b + 4096, 256), "RDMA read data", 0);

	/* fetch&add on 6144 */
	*(__be64 *)(b + 6144) = cpu_to_be64(40);
	sg.addr = a + 6152;
	sg.length = 8;
	sw.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
	sw.wr_id = 5;
	sw.wr.atomic.remote_addr = a + 6144;
	sw.wr.atomic.compare_add = 2;
	sw.wr.atomic.rkey = s->mr->rkey;
	ret = ib_post_send(rc, &sw, &bsw);
	ret = poll_one(s, &wc);
	say(s, ret == 1 && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_FETCH_ADD,
	    "fetch&add completion", wc.status);
	say(s, be64_to_cpu(*(__be64 *)(b + 6144)) == 42 &&
	    be64_to_cpu(*(__be64 *)(b + 6152)) == 40, "fetch&add data",
	    be64_to_cpu(*(__be64 *)(b + 6144)));

	/* a send with a bad lkey completes in error */
	sg.addr = a;
	sg.length = 64;
	sg.lkey = 0x12345;
	sw.opcode = IB_WR_SEND;
	sw.wr_id = 6;
	ret = ib_post_send(rc, &sw, &bsw);
	for (i = 0; i < 3; i++) {
		ret = poll_one(s, &wc);
		if (!ret)
			break;
		pr_info("mthca_smoke: err wc id=%llu status=%d (%s) vendor=%#x\n",
			wc.wr_id, wc.status, ib_wc_status_msg(wc.status), wc.vendor_err);
		if (wc.wr_id == 6)
			break;
	}
	say(s, ret == 1 && wc.wr_id == 6 && wc.status == IB_WC_LOC_PROT_ERR,
	    "bad lkey -> LOC_PROT_ERR", wc.status);
	sg.lkey = s->mr->lkey;
	ib_destroy_qp(rc);
	while (ib_poll_cq(s->cq, 1, &wc))
		;

	/* UD send to itself */
	ud = mkqp(s, IB_QPT_UD, NULL);
	say(s, !IS_ERR(ud), "create UD", PTR_ERR_OR_ZERO(ud));
	if (IS_ERR(ud))
		goto out_qp0;
	ret = to_rts(ud, IB_QPT_UD, 0, false);
	say(s, !ret, "UD to RTS", ret);
	ah = ib_create_ah(s->pd, &aa);
	say(s, !IS_ERR(ah), "create AH", PTR_ERR_OR_ZERO(ah));
	memset(b + 1024, 0, 1024);
	sg.addr = a + 1024;
	sg.length = 40 + 300;
	rw.wr_id = 11;
	ret = ib_post_recv(ud, &rw, &brw);
	sg.addr = a;
	sg.length = 300;
	sw.opcode = IB_WR_SEND;
	sw.wr_id = 12;
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = ud->qp_num;
	sw.wr.ud.remote_qkey = 0x1234;
	ret = ib_post_send(ud, &sw, &bsw);
	for (i = 0; i < 2; i++) {
		ret = poll_one(s, &wc);
		pr_info("mthca_smoke: ud wc n=%d id=%llu status=%d op=%d len=%u src_qp=%u slid=%u\n",
			ret, wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.src_qp, wc.slid);
		say(s, ret == 1 && wc.status == IB_WC_SUCCESS, "UD completion", wc.wr_id);
		if (wc.wr_id == 11)
			say(s, wc.byte_len == 340 && wc.src_qp == ud->qp_num &&
			    wc.slid == LID, "UD receive fields", wc.byte_len);
	}
	say(s, !memcmp(b, b + 1024 + 40, 300), "UD data", 0);
	ib_destroy_ah(ah);
	mc_test(s, ud);
	ib_destroy_qp(ud);

	/* RC with an SRQ */
	srq = ib_create_srq(s->pd, &sia);
	say(s, !IS_ERR(srq), "create SRQ", PTR_ERR_OR_ZERO(srq));
	if (IS_ERR(srq))
		goto out_qp0;
	srqp = mkqp(s, IB_QPT_RC, srq);
	say(s, !IS_ERR(srqp), "create RC on SRQ", PTR_ERR_OR_ZERO(srqp));
	if (!IS_ERR(srqp)) {
		ret = to_rts(srqp, IB_QPT_RC, srqp->qp_num, false);
		say(s, !ret, "SRQ RC to RTS", ret);
		memset(b + 1024, 0, 1024);
		sg.addr = a + 1024;
		sg.length = 1024;
		rw.wr_id = 21;
		ret = ib_post_srq_recv(srq, &rw, &brw);
		say(s, !ret, "post_srq_recv", ret);
		sg.addr = a;
		sg.length = 700;
		sw.opcode = IB_WR_SEND;
		sw.wr_id = 22;
		ret = ib_post_send(srqp, &sw, &bsw);
		for (i = 0; i < 2; i++) {
			ret = poll_one(s, &wc);
			say(s, ret == 1 && wc.status == IB_WC_SUCCESS, "SRQ completion", wc.wr_id);
		}
		say(s, !memcmp(b, b + 1024, 700), "SRQ data", 0);
		ib_destroy_qp(srqp);
	}
	ib_destroy_srq(srq);
	resize_test(s);
	inline_test(s);
	pkey_test(s);
out_qp0:
	if (!IS_ERR(qp0))
		ib_destroy_qp(qp0);
}

static void smoke_add(struct ib_device *dev)
{
	struct smoke s = { .dev = dev };

	s.pd = ib_alloc_pd(dev);
	s.mr = ib_get_dma_mr(s.pd, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			     IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC);
	s.cq = ib_create_cq(dev, NULL, NULL, NULL, 64);
	s.buf = kzalloc(BUF, GFP_KERNEL);
	if (IS_ERR(s.pd) || IS_ERR(s.mr) || IS_ERR(s.cq) || !s.buf) {
		pr_info("mthca_smoke: FAIL setup pd %ld mr %ld cq %ld\n",
			(long)PTR_ERR_OR_ZERO(s.pd), (long)PTR_ERR_OR_ZERO(s.mr),
			(long)PTR_ERR_OR_ZERO(s.cq));
		return;
	}
	s.dma = dma_map_single(dev->dma_device, s.buf, BUF, DMA_BIDIRECTIONAL);
	run(&s);
	dma_unmap_single(dev->dma_device, s.dma, BUF, DMA_BIDIRECTIONAL);
	kfree(s.buf);
	ib_destroy_cq(s.cq);
	ib_dereg_mr(s.mr);
	ib_dealloc_pd(s.pd);
	pr_info("mthca_smoke: DONE %d failures\n", s.fails);
}

static void smoke_remove(struct ib_device *dev)
{
}

static struct ib_client smoke_client = {
	.name = "mthca_smoke", .add = smoke_add, .remove = smoke_remove,
};

static int __init smoke_init(void)
{
	return ib_register_client(&smoke_client);
}

static void __exit smoke_exit(void)
{
	ib_unregister_client(&smoke_client);
}

module_init(smoke_init);
module_exit(smoke_exit);
