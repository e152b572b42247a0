// SPDX-License-Identifier: GPL-2.0
// Verbs control-path rates, run inside a guest (libibverbs, the first
// device): how many times per second a memory region is registered and
// deregistered, and a QP created and destroyed.
//
//   verbs_rate mr <bytes> <seconds>   ibv_reg_mr + ibv_dereg_mr of one buffer
//   verbs_rate qp <seconds>           ibv_create_qp (RC) + ibv_destroy_qp
//
// Prints one line, "mr bytes=<n> rate=<per s> ok=<n> errors=0" or
// "qp rate=<per s> ok=<n> errors=0", and exits 0; on any failure it prints
// what failed (with errno) and exits 1, so a caller never reads a rate
// that was not measured. The buffer is touched once before the loop, so
// each registration pins pages that are already present.
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
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

int Usage()
{
	std::fprintf(stderr, "usage: verbs_rate mr <bytes> <seconds> | verbs_rate qp <seconds>\n");
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
	return Usage();
}
