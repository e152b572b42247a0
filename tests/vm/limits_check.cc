// SPDX-License-Identifier: GPL-2.0
// The device limits ibv_query_device reports, honoured both ways (issue 9
// §3), run inside a guest on the emulated HCA (mthca0, upstream stack):
// a CQ of max_cqe entries, an RC QP of max_qp_wr send and receive WRs
// (taken to INIT, so the firmware sees its context), an SRQ of max_srq_wr
// and the largest memory region can be created, and one past each limit
// is refused with EINVAL, as on hardware; ibv_resize_cq likewise.
//
// The figures are those of a real MT25208 (mem-free) with the module's
// default profile. The largest region (2^30 bytes, QUERY_DEV_LIM
// log_max_mrw_sz; ibv_query_device reports max_mr_size as ~0 for mthca)
// is built from one small memfd mapped over and over, so that a 1 GiB
// guest can pin it.
//
// Prints "PASS <what>" or "FAIL <what>: ..." per check and "<n> checks,
// <m> failed" at the end; exits 1 on any failure, 2 when the setup fails.
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

unsigned g_checks = 0, g_failed = 0;

void check(const std::string& what, bool ok, const std::string& detail = "")
{
    ++g_checks;
    if (ok) {
        std::printf("PASS %s\n", what.c_str());
    } else {
        ++g_failed;
        std::printf("FAIL %s: %s\n", what.c_str(), detail.c_str());
    }
    std::fflush(stdout);
}

void check_eq(const std::string& what, uint64_t got, uint64_t want)
{
    check(what, got == want, "got " + std::to_string(got) + ", want " + std::to_string(want));
}

// A failed create: NULL (or nonzero) with errno EINVAL.
void check_einval(const std::string& what, bool failed, int err)
{
    check(what + " -> EINVAL", failed && err == EINVAL,
          failed ? std::string("errno ") + std::strerror(err) : std::string("it was created"));
}

[[noreturn]] void die(const char* what, int err)
{
    std::printf("SETUP FAILED %s: %s\n", what, std::strerror(err));
    std::fflush(stdout);
    std::exit(2);
}

// `len` bytes of address space backed by one `chunk`-byte memfd mapped
// over and over (so pinning it costs `chunk` bytes of RAM).
void* repeated_mapping(size_t len, size_t chunk)
{
    int fd = memfd_create("limits_check", 0);
    if (fd < 0 || ftruncate(fd, off_t(chunk)) != 0)
        die("memfd", errno);
    void* base = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        die("reserve address space", errno);
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        void* p = mmap(static_cast<char*>(base) + off, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
        if (p == MAP_FAILED)
            die("map memfd", errno);
    }
    close(fd);
    return base;
}

ibv_qp* rc_qp(ibv_pd* pd, ibv_cq* cq, uint32_t send_wr, uint32_t recv_wr)
{
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = recv_wr;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    return ibv_create_qp(pd, &a);
}

}  // namespace

int main()
{
    int num = 0;
    ibv_device** list = ibv_get_device_list(&num);
    if (!list || num < 1)
        die("no RDMA device", errno ? errno : ENODEV);
    ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx)
        die("ibv_open_device", errno);
    ibv_device_attr da{};
    if (int err = ibv_query_device(ctx, &da))
        die("ibv_query_device", err);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd)
        die("ibv_alloc_pd", errno);
    std::printf("device %s: max_qp_wr %d max_cqe %d max_srq_wr %d max_sge %d max_srq_sge %d max_qp %d max_cq %d "
                "max_srq %d max_mr %d max_mr_size 0x%" PRIx64 " device_cap_flags 0x%08x\n",
                ibv_get_device_name(list[0]), da.max_qp_wr, da.max_cqe, da.max_srq_wr, da.max_sge,
                da.max_srq_sge, da.max_qp, da.max_cq, da.max_srq, da.max_mr, uint64_t(da.max_mr_size),
                unsigned(da.device_cap_flags));

    // What a real MT25208 in mem-free mode reports with the default profile.
    check_eq("max_qp_wr", da.max_qp_wr, 16384);
    check_eq("max_srq_wr", da.max_srq_wr, 16384);
    check_eq("max_cqe", da.max_cqe, 131071);
    check_eq("max_sge", da.max_sge, 27);
    check_eq("max_srq_sge", da.max_srq_sge, 27);
    check_eq("max_qp", da.max_qp, 65536 - 1024);
    check_eq("max_cq", da.max_cq, 65536 - 128);
    check_eq("max_srq", da.max_srq, 1024 - 64);
    check_eq("max_mr", da.max_mr, 131072 - 16);
    check("no AUTO_PATH_MIG without path migration", !(da.device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG));
    check_eq("max_mw", da.max_mw, 0);

    // CQ: max_cqe, then one more; resize to the limit and past it.
    ibv_cq* cq = ibv_create_cq(ctx, da.max_cqe, nullptr, nullptr, 0);
    check("CQ of max_cqe entries", cq != nullptr, std::strerror(errno));
    errno = 0;
    ibv_cq* cq2 = ibv_create_cq(ctx, da.max_cqe + 1, nullptr, nullptr, 0);
    check_einval("CQ of max_cqe + 1 entries", cq2 == nullptr, errno);
    if (cq2)
        ibv_destroy_cq(cq2);
    ibv_cq* small = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    if (!small)
        die("small CQ", errno);
    int err = ibv_resize_cq(small, da.max_cqe);
    check("resize CQ to max_cqe", err == 0, std::strerror(err));
    err = ibv_resize_cq(small, da.max_cqe + 1);
    check_einval("resize CQ to max_cqe + 1", err != 0, err);
    check("CQ keeps its size after the refused resize", small->cqe >= da.max_cqe,
          "cqe " + std::to_string(small->cqe));

    // QP: max_qp_wr on both queues, taken to INIT (the firmware takes the
    // context there), then one more on each queue.
    ibv_cq* qcq = small;
    ibv_qp* qp = rc_qp(pd, qcq, da.max_qp_wr, da.max_qp_wr);
    check("RC QP of max_qp_wr send and receive WRs", qp != nullptr, std::strerror(errno));
    if (qp) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        check("that QP to INIT", err == 0, std::strerror(err));
        ibv_destroy_qp(qp);
    }
    errno = 0;
    ibv_qp* q2 = rc_qp(pd, qcq, da.max_qp_wr + 1, 1);
    check_einval("RC QP of max_qp_wr + 1 send WRs", q2 == nullptr, errno);
    if (q2)
        ibv_destroy_qp(q2);
    errno = 0;
    q2 = rc_qp(pd, qcq, 1, da.max_qp_wr + 1);
    check_einval("RC QP of max_qp_wr + 1 receive WRs", q2 == nullptr, errno);
    if (q2)
        ibv_destroy_qp(q2);

    // SRQ: max_srq_wr, then one more.
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = da.max_srq_wr;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(pd, &sa);
    check("SRQ of max_srq_wr WRs", srq != nullptr, std::strerror(errno));
    if (srq)
        ibv_destroy_srq(srq);
    sa = {};
    sa.attr.max_wr = da.max_srq_wr + 1;
    sa.attr.max_sge = 1;
    errno = 0;
    srq = ibv_create_srq(pd, &sa);
    check_einval("SRQ of max_srq_wr + 1 WRs", srq == nullptr, errno);
    if (srq)
        ibv_destroy_srq(srq);

    // The largest region, then one page more.
    const size_t kLargest = size_t(1) << 30, kChunk = size_t(2) << 20;
    void* big = repeated_mapping(kLargest + 4096, kChunk);
    ibv_mr* mr = ibv_reg_mr(pd, big, kLargest, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    check("MR of 2^30 bytes (the largest region)", mr != nullptr, std::strerror(errno));
    if (mr)
        ibv_dereg_mr(mr);
    errno = 0;
    mr = ibv_reg_mr(pd, big, kLargest + 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    check_einval("MR of 2^30 + 4096 bytes", mr == nullptr, errno);
    if (mr)
        ibv_dereg_mr(mr);
    munmap(big, kLargest + 4096);

    if (cq)
        ibv_destroy_cq(cq);
    ibv_destroy_cq(small);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    std::printf("%u checks, %u failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
