// SPDX-License-Identifier: GPL-2.0
// Verbs control-path rates, run inside a guest (libibverbs, the first
// device): how many times per second a memory region is registered and
// deregistered, and a QP created and destroyed.
//
//   verbs_rate mr <bytes> <seconds>   ibv_reg_mr + ibv_dereg_mr of one buffer
//   verbs_rate qp <seconds>           ibv_create_qp (RC) + ibv_destroy_qp
//   verbs_rate mrcheck <bytes>         data through two MRs of <bytes>
//
// mrcheck is a check, not a rate: it fills one buffer with a pattern that
// differs in every 8 bytes, registers it and a zeroed one, and RDMA-writes
// the first into the second over an RC QP connected to itself (port 1,
// its own LID; the port must be ACTIVE), 1 MiB per work request; then it
// compares the second buffer with the first. Every page of both regions
// goes through its MTT entry, so a wrong or missing entry shows as a
// mismatch (printed with its offset) or an error completion. It prints
// "mrcheck bytes=<n> ok" and exits 0, or what failed and exits 1.
// Prints one line, "mr bytes=<n> rate=<per s> ok=<n> errors=0" or
// "qp rate=<per s> ok=<n> errors=0", and exits 0; on any failure it prints
// what failed (with errno) and exits 1, so a caller never reads a rate
// that was not measured. The buffer is touched once before the loop, so
// each registration pins pages that are already present.
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

int Fail(const char *what, int err)
{
	std::printf("verbs_rate: %s failed: %s (errno %d)\n", what, std::strerror(err), err);
	return 1;
}

struct Device {
	ibv_device **list = nullptr;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;

	~Device()
	{
		if (pd)
			ibv_dealloc_pd(pd);
		if (ctx)
			ibv_close_device(ctx);
		if (list)
			ibv_free_device_list(list);
	}

	int open()
	{
		int n = 0;
		list = ibv_get_device_list(&n);
		if (!list || n < 1)
			return Fail("ibv_get_device_list (no device)", errno ? errno : ENODEV);
		ctx = ibv_open_device(list[0]);
		if (!ctx)
			return Fail("ibv_open_device", errno);
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			return Fail("ibv_alloc_pd", errno);
		return 0;
	}
};

// Runs `one` until `seconds` have passed; returns the count or -errno.
template <typename F> long Loop(double seconds, F one, double *elapsed)
{
	auto start = Clock::now();
	long n = 0;
	for (;;) {
		int err = one();
		if (err)
			return -err;
		++n;
		// The clock is read every 8 rounds: cheap enough for 4 KiB MRs.
		if ((n & 7) == 0) {
			std::chrono::duration<double> d = Clock::now() - start;
			if (d.count() >= seconds) {
				*elapsed = d.count();
				return n;
			}
		}
	}
}

int Mr(size_t bytes, double seconds)
{
	Device d;
	if (int r = d.open())
		return r;
	void *buf = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return Fail("mmap", errno);
	std::memset(buf, 0x5a, bytes);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	double elapsed = 0;
	long n = Loop(
		seconds,
		[&]() -> int {
			ibv_mr *mr = ibv_reg_mr(d.pd, buf, bytes, access);
			if (!mr)
				return errno ? errno : EIO;
			return ibv_dereg_mr(mr);
		},
		&elapsed);
	munmap(buf, bytes);
	if (n < 0)
		return Fail("ibv_reg_mr/ibv_dereg_mr", int(-n));
	std::printf("mr bytes=%zu rate=%.1f ok=%ld errors=0\n", bytes, double(n) / elapsed, n);
	return 0;
}

int Qp(double seconds)
{
	Device d;
	if (int r = d.open())
		return r;
	ibv_cq *cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	if (!cq)
		return Fail("ibv_create_cq", errno);
	ibv_qp_init_attr a{};
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	double elapsed = 0;
	long n = Loop(
		seconds,
		[&]() -> int {
			ibv_qp_init_attr attr = a;
			ibv_qp *qp = ibv_create_qp(d.pd, &attr);
			if (!qp)
				return errno ? errno : EIO;
			return ibv_destroy_qp(qp);
		},
		&elapsed);
	ibv_destroy_cq(cq);
	if (n < 0)
		return Fail("ibv_create_qp/ibv_destroy_qp", int(-n));
	std::printf("qp rate=%.1f ok=%ld errors=0\n", double(n) / elapsed, n);
	return 0;
}

ibv_qp *LoopbackQp(Device &d, ibv_cq *cq, std::string *why)
{
	ibv_port_attr port{};
	if (ibv_query_port(d.ctx, 1, &port)) {
		*why = "ibv_query_port";
		return nullptr;
	}
	if (port.state != IBV_PORT_ACTIVE || port.lid == 0) {
		*why = "port 1 is not ACTIVE with a LID";
		return nullptr;
	}
	ibv_qp_init_attr a{};
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	ibv_qp *qp = ibv_create_qp(d.pd, &a);
	if (!qp) {
		*why = "ibv_create_qp";
		return nullptr;
	}
	ibv_qp_attr m{};
	m.qp_state = IBV_QPS_INIT;
	m.port_num = 1;
	m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		*why = "modify to INIT";
		ibv_destroy_qp(qp);
		return nullptr;
	}
	m = {};
	m.qp_state = IBV_QPS_RTR;
	m.path_mtu = port.active_mtu;
	m.dest_qp_num = qp->qp_num;
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 12;
	m.ah_attr.dlid = port.lid;
	m.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &m,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		*why = "modify to RTR";
		ibv_destroy_qp(qp);
		return nullptr;
	}
	m = {};
	m.qp_state = IBV_QPS_RTS;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &m,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC)) {
		*why = "modify to RTS";
		ibv_destroy_qp(qp);
		return nullptr;
	}
	return qp;
}

int MrCheck(size_t bytes)
{
	Device d;
	if (int r = d.open())
		return r;
	auto *src = static_cast<uint64_t *>(
		mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	auto *dst = static_cast<uint64_t *>(
		mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (src == MAP_FAILED || dst == MAP_FAILED)
		return Fail("mmap", errno);
	for (size_t i = 0; i < bytes / 8; i++)
		src[i] = 0x9e3779b97f4a7c15ull * (i + 1);
	std::memset(dst, 0, bytes);
	ibv_mr *smr = ibv_reg_mr(d.pd, src, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!smr)
		return Fail("ibv_reg_mr (source)", errno);
	ibv_mr *dmr = ibv_reg_mr(d.pd, dst, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!dmr)
		return Fail("ibv_reg_mr (destination)", errno);
	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	if (!cq)
		return Fail("ibv_create_cq", errno);
	std::string why;
	ibv_qp *qp = LoopbackQp(d, cq, &why);
	if (!qp)
		return Fail(why.c_str(), errno ? errno : EIO);
	const size_t chunk = 1 << 20;
	int rc = 0;
	for (size_t off = 0; off < bytes && !rc; off += chunk) {
		ibv_sge sge{uintptr_t(src) + off, uint32_t(std::min(chunk, bytes - off)), smr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = off;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = uintptr_t(dst) + off;
		wr.wr.rdma.rkey = dmr->rkey;
		if (ibv_post_send(qp, &wr, &bad)) {
			rc = Fail("ibv_post_send", errno);
			break;
		}
		ibv_wc wc{};
		auto start = Clock::now();
		int n = 0;
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && Clock::now() - start < std::chrono::seconds(30))
			;
		if (n != 1) {
			std::printf("verbs_rate: no completion for the write at offset %zu\n", off);
			rc = 1;
		} else if (wc.status != IBV_WC_SUCCESS) {
			std::printf("verbs_rate: the write at offset %zu completed with %s\n", off,
				    ibv_wc_status_str(wc.status));
			rc = 1;
		}
	}
	if (!rc) {
		for (size_t i = 0; i < bytes / 8; i++) {
			if (dst[i] != src[i]) {
				std::printf("verbs_rate: mrcheck mismatch at offset %zu: 0x%llx, expected 0x%llx\n",
					    i * 8, (unsigned long long)dst[i], (unsigned long long)src[i]);
				rc = 1;
				break;
			}
		}
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(smr);
	munmap(src, bytes);
	munmap(dst, bytes);
	if (!rc)
		std::printf("mrcheck bytes=%zu ok\n", bytes);
	return rc;
}

int Usage()
{
	std::fprintf(stderr, "usage: verbs_rate mr <bytes> <seconds> | verbs_rate qp <seconds> | "
			     "verbs_rate mrcheck <bytes>\n");
	return 2;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc == 4 && std::string(argv[1]) == "mr") {
		char *end = nullptr;
		unsigned long long bytes = std::strtoull(argv[2], &end, 0);
		double seconds = std::atof(argv[3]);
		if (*end || bytes == 0 || bytes > (1ull << 32) || seconds <= 0)
			return Usage();
		return Mr(size_t(bytes), seconds);
	}
	if (argc == 3 && std::string(argv[1]) == "qp") {
		double seconds = std::atof(argv[2]);
		if (seconds <= 0)
			return Usage();
		return Qp(seconds);
	}
	if (argc == 3 && std::string(argv[1]) == "mrcheck") {
		char *end = nullptr;
		unsigned long long bytes = std::strtoull(argv[2], &end, 0);
		if (*end || bytes < 8 || bytes % 8 || bytes > (1ull << 32))
			return Usage();
		return MrCheck(size_t(bytes));
	}
	return Usage();
}
