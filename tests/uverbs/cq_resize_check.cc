// SPDX-License-Identifier: GPL-2.0
// A libibverbs program around ibv_resize_cq() (issue 10): a CQ in use by a
// QP is resized while it holds completions not polled yet, and still
// delivers every completion, old and new, afterwards. With libmthca this
// is the RESIZE_CQ write() command with struct mthca_resize_cq (the lkey
// of the new ring libmthca registered); libmthca copies the CQEs it had not
// polled into the new ring once the kernel answers.
//
// The completions come without a fabric (no SM, port INIT): receives posted
// on an RC QP in INIT are flushed (IBV_WC_WR_FLUSH_ERR, in posting order)
// when the QP moves to ERR.
//
//   cq_resize_check [device]
//
// Prints one line per check, "ok <what>" or "FAIL <what>: <detail>", and a
// last line "cq_resize_check: N failed"; exits 1 when any failed.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failed;

void Check(bool ok, const std::string &what, const std::string &detail = "")
{
	if (ok) {
		printf("ok %s\n", what.c_str());
	} else {
		printf("FAIL %s: %s\n", what.c_str(), detail.c_str());
		g_failed++;
	}
}

// An RC QP whose receives complete on cq, moved to INIT.
ibv_qp *InitQp(ibv_pd *pd, ibv_cq *cq, uint32_t max_recv)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = max_recv;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return nullptr;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return nullptr;
	}
	return qp;
}

// Posts n receives with wr_id first..first+n-1; 0 or the errno.
int PostRecvs(ibv_qp *qp, ibv_mr *mr, uint64_t first, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		ibv_sge sge{uintptr_t(mr->addr), 64, mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = first + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (int e = ibv_post_recv(qp, &wr, &bad))
			return e;
	}
	return 0;
}

int ToErr(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

// Polls until want completions arrived (or a poll finds none 1000 times
// in a row); returns their wr_ids, with UINT64_MAX for a completion that
// is not a flush of qp.
std::vector<uint64_t> Poll(ibv_cq *cq, ibv_qp *qp, size_t want)
{
	std::vector<uint64_t> ids;
	for (int idle = 0; ids.size() < want && idle < 1000;) {
		ibv_wc wc[8];
		int n = ibv_poll_cq(cq, int(std::min<size_t>(8, want - ids.size())), wc);
		if (n < 0)
			break;
		idle = n ? 0 : idle + 1;
		for (int i = 0; i < n; i++)
			ids.push_back(wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].qp_num == qp->qp_num ? wc[i].wr_id
												   : UINT64_MAX);
	}
	return ids;
}

std::string Ids(const std::vector<uint64_t> &v)
{
	std::string s;
	for (uint64_t x : v)
		s += (s.empty() ? "" : ",") + std::to_string(x);
	return s;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t n)
{
	std::vector<uint64_t> v;
	for (uint64_t i = 0; i < n; i++)
		v.push_back(first + i);
	return v;
}

}  // namespace

int main(int argc, char **argv)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_device *dev = nullptr;
	for (int i = 0; list && i < n; i++)
		if (argc < 2 || !strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = list[i];
	if (!dev) {
		printf("FAIL no device\ncq_resize_check: 1 failed\n");
		return 1;
	}
	ibv_context *ctx = ibv_open_device(dev);
	ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
	static char buf[4096];
	ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE) : nullptr;
	ibv_cq *cq = ctx ? ibv_create_cq(ctx, 15, nullptr, nullptr, 0) : nullptr;
	ibv_qp *qp1 = cq && mr ? InitQp(pd, cq, 16) : nullptr;
	ibv_qp *qp2 = cq && mr ? InitQp(pd, cq, 32) : nullptr;
	if (!qp1 || !qp2) {
		printf("FAIL setup (context, PD, MR, CQ, two QPs in INIT): %s\ncq_resize_check: 1 failed\n",
		       strerror(errno));
		return 1;
	}
	Check(cq->cqe == 15, "a CQ of 15", "cqe " + std::to_string(cq->cqe));

	// 12 completions in the ring of 16; 4 polled, 8 left outstanding.
	Check(PostRecvs(qp1, mr, 0, 12) == 0 && ToErr(qp1) == 0, "12 receives flushed");
	std::vector<uint64_t> got = Poll(cq, qp1, 4);
	Check(got == Range(0, 4), "4 polled before the resize", Ids(got));

	// Too small for the 8 outstanding: refused, the CQ as it was.
	int e = ibv_resize_cq(cq, 3);
	Check(e != 0 && cq->cqe == 15, "resize to 3 with 8 outstanding refused",
	      "errno " + std::to_string(e) + ", cqe " + std::to_string(cq->cqe));
	printf("resize to 3 with 8 outstanding: %s\n", e ? strerrorname_np(e) : "ok");

	e = ibv_resize_cq(cq, 63);
	Check(e == 0 && cq->cqe == 63, "resize to 63", "errno " + std::to_string(e) + ", cqe " +
							       std::to_string(cq->cqe));
	got = Poll(cq, qp1, 8);
	Check(got == Range(4, 8), "the 8 outstanding after the resize, in order", Ids(got));

	// New completions land in the new ring: 24, more than the old one held.
	Check(PostRecvs(qp2, mr, 100, 24) == 0 && ToErr(qp2) == 0, "24 more receives flushed");
	got = Poll(cq, qp2, 24);
	Check(got == Range(100, 24), "24 completions from the new ring", Ids(got));
	got = Poll(cq, qp2, 1);
	Check(got.empty(), "nothing more", Ids(got));

	Check(ibv_destroy_qp(qp1) == 0 && ibv_destroy_qp(qp2) == 0 && ibv_destroy_cq(cq) == 0 &&
		      ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0,
	      "everything destroyed");
	ibv_free_device_list(list);
	printf("cq_resize_check: %d failed\n", g_failed);
	return g_failed ? 1 : 0;
}
