// SPDX-License-Identifier: GPL-2.0
// ibv_query_qp against what ibv_modify_qp set, run inside a guest on the
// emulated HCA (mthca0). An RC QP goes RST -> INIT -> RTR -> RTS with a
// distinct value for every attribute, a UD QP likewise with its Q_Key;
// each query asks for every attribute and each value is compared. Then an
// RTS -> RTS that changes one attribute must change only that one, and a
// QP the HCA itself moves to ERR (retries exhausted) must read back ERR.
//
// Prints "PASS <what>" or "FAIL <what>: got <x>, want <y>" per check and
// "<n> checks, <m> failed" at the end; exits 1 on any failure, 2 when the
// setup itself fails.
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

unsigned g_checks = 0, g_failed = 0;

void check(const std::string& what, uint64_t got, uint64_t want)
{
    ++g_checks;
    if (got == want) {
        std::printf("PASS %s\n", what.c_str());
        return;
    }
    ++g_failed;
    std::printf("FAIL %s: got 0x%" PRIx64 ", want 0x%" PRIx64 "\n", what.c_str(), got, want);
}

[[noreturn]] void die(const char* what, int err)
{
    std::printf("SETUP FAILED %s: %s\n", what, std::strerror(err));
    std::fflush(stdout);
    std::exit(2);
}

void modify(ibv_qp* qp, ibv_qp_attr& a, int mask, const char* what)
{
    if (int err = ibv_modify_qp(qp, &a, mask))
        die(what, err);
}

constexpr int kEveryAttr = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
                           IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU |
                           IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE | IBV_QP_CAP | IBV_QP_DEST_QPN;

ibv_qp_attr query(ibv_qp* qp, const char* when)
{
    ibv_qp_attr a{};
    ibv_qp_init_attr init{};
    if (int err = ibv_query_qp(qp, &a, kEveryAttr, &init))
        die(when, err);
    return a;
}

// What the RC QP is given, transition by transition.
struct RcValues {
    uint16_t pkey_index = 1;
    int access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;  // no remote write
    ibv_mtu mtu = IBV_MTU_1024;
    uint32_t dest_qpn = 0x4321;
    uint32_t rq_psn = 0xabcdef;
    uint8_t max_dest_rd_atomic = 2;
    uint8_t min_rnr_timer = 12;
    uint16_t dlid = 0x37;
    uint8_t sl = 5;
    uint8_t hop_limit = 33, tclass = 0x5a;
    uint32_t flow_label = 0x9abcd;
    uint32_t sq_psn = 0x123456;
    uint8_t timeout = 17, retry_cnt = 5, rnr_retry = 6;
    uint8_t max_rd_atomic = 4;
};

void check_rc(const std::string& when, const ibv_qp_attr& a, const RcValues& v, const ibv_gid& dgid)
{
    auto c = [&](const char* what, uint64_t got, uint64_t want) { check(when + ": " + what, got, want); };
    c("qp_state", a.qp_state, IBV_QPS_RTS);
    c("path_mtu", a.path_mtu, v.mtu);
    c("dest_qp_num", a.dest_qp_num, v.dest_qpn);
    c("rq_psn", a.rq_psn, v.rq_psn);
    c("sq_psn", a.sq_psn, v.sq_psn);
    c("qp_access_flags", unsigned(a.qp_access_flags), unsigned(v.access));
    c("pkey_index", a.pkey_index, v.pkey_index);
    c("port_num", a.port_num, 1);
    c("max_rd_atomic", a.max_rd_atomic, v.max_rd_atomic);
    c("max_dest_rd_atomic", a.max_dest_rd_atomic, v.max_dest_rd_atomic);
    c("min_rnr_timer", a.min_rnr_timer, v.min_rnr_timer);
    c("timeout", a.timeout, v.timeout);
    c("retry_cnt", a.retry_cnt, v.retry_cnt);
    c("rnr_retry", a.rnr_retry, v.rnr_retry);
    c("ah_attr.dlid", a.ah_attr.dlid, v.dlid);
    c("ah_attr.sl", a.ah_attr.sl, v.sl);
    c("ah_attr.src_path_bits", a.ah_attr.src_path_bits, 0);
    c("ah_attr.port_num", a.ah_attr.port_num, 1);
    c("ah_attr.is_global", a.ah_attr.is_global, 1);
    c("ah_attr.grh.sgid_index", a.ah_attr.grh.sgid_index, 0);
    c("ah_attr.grh.hop_limit", a.ah_attr.grh.hop_limit, v.hop_limit);
    c("ah_attr.grh.traffic_class", a.ah_attr.grh.traffic_class, v.tclass);
    c("ah_attr.grh.flow_label", a.ah_attr.grh.flow_label, v.flow_label);
    c("ah_attr.grh.dgid", std::memcmp(a.ah_attr.grh.dgid.raw, dgid.raw, 16) == 0, 1);
    c("alt_timeout (no alternate path)", a.alt_timeout, 0);
    c("alt_ah_attr.dlid (no alternate path)", a.alt_ah_attr.dlid, 0);
}

bool wait_completion(ibv_cq* cq, ibv_wc* wc, std::chrono::seconds limit)
{
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n > 0)
            return true;
        if (n < 0)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

}  // namespace

int main()
{
    int num = 0;
    ibv_device** list = ibv_get_device_list(&num);
    if (!list)
        die("ibv_get_device_list", errno);
    ibv_device* dev = nullptr;
    for (int i = 0; i < num; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), "mthca0") == 0)
            dev = list[i];
    if (!dev)
        die("no mthca0", ENODEV);
    ibv_context* ctx = ibv_open_device(dev);
    if (!ctx)
        die("ibv_open_device", errno);
    ibv_device_attr da{};
    if (int err = ibv_query_device(ctx, &da))
        die("ibv_query_device", err);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
    if (!cq)
        die("PD/CQ", errno);

    RcValues v;
    // Powers of two (the HCA keeps their log2) within what the HCA allows.
    while (v.max_rd_atomic > 1 && v.max_rd_atomic > da.max_qp_init_rd_atom)
        v.max_rd_atomic /= 2;
    while (v.max_dest_rd_atomic > 1 && v.max_dest_rd_atomic > da.max_qp_rd_atom)
        v.max_dest_rd_atomic /= 2;
    ibv_gid dgid{};
    for (unsigned i = 0; i < 16; ++i)
        dgid.raw[i] = uint8_t(0xf0 + i);
    dgid.raw[0] = 0xfe, dgid.raw[1] = 0x80;

    // ---- RC ----
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* rc = ibv_create_qp(pd, &ia);
    if (!rc)
        die("ibv_create_qp RC", errno);
    check("RC in RESET reads RESET", query(rc, "query RC in RESET").qp_state, IBV_QPS_RESET);

    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = v.pkey_index;
    a.port_num = 1;
    a.qp_access_flags = v.access;
    modify(rc, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "RC RST->INIT");

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = v.mtu;
    a.dest_qp_num = v.dest_qpn;
    a.rq_psn = v.rq_psn;
    a.max_dest_rd_atomic = v.max_dest_rd_atomic;
    a.min_rnr_timer = v.min_rnr_timer;
    a.ah_attr.dlid = v.dlid;
    a.ah_attr.sl = v.sl;
    a.ah_attr.port_num = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = v.hop_limit;
    a.ah_attr.grh.traffic_class = v.tclass;
    a.ah_attr.grh.flow_label = v.flow_label;
    modify(rc, a,
           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
           "RC INIT->RTR");

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = v.sq_psn;
    a.timeout = v.timeout;
    a.retry_cnt = v.retry_cnt;
    a.rnr_retry = v.rnr_retry;
    a.max_rd_atomic = v.max_rd_atomic;
    modify(rc, a,
           IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
               IBV_QP_MAX_QP_RD_ATOMIC,
           "RC RTR->RTS");
    check_rc("RC after RTR->RTS", query(rc, "query RC"), v, dgid);

    // RTS -> RTS changing the minimum RNR timer only.
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.min_rnr_timer = 3;
    modify(rc, a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, "RC RTS->RTS");
    v.min_rnr_timer = 3;
    check_rc("RC after RTS->RTS(min_rnr_timer)", query(rc, "query RC"), v, dgid);

    // ---- UD ----
    ia.qp_type = IBV_QPT_UD;
    ibv_qp* ud = ibv_create_qp(pd, &ia);
    if (!ud)
        die("ibv_create_qp UD", errno);
    a = {};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = 0x11223344;
    modify(ud, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "UD RST->INIT");
    a = {};
    a.qp_state = IBV_QPS_RTR;
    modify(ud, a, IBV_QP_STATE, "UD INIT->RTR");
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x3456;
    modify(ud, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTR->RTS");
    ibv_qp_attr u = query(ud, "query UD");
    check("UD after RTR->RTS: qp_state", u.qp_state, IBV_QPS_RTS);
    check("UD after RTR->RTS: qkey", u.qkey, 0x11223344);
    check("UD after RTR->RTS: sq_psn", u.sq_psn, 0x3456);
    check("UD after RTR->RTS: pkey_index", u.pkey_index, 0);
    check("UD after RTR->RTS: port_num", u.port_num, 1);
    check("UD after RTR->RTS: path_mtu", u.path_mtu, IBV_MTU_2048);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.qkey = 0x55667788;
    modify(ud, a, IBV_QP_STATE | IBV_QP_QKEY, "UD RTS->RTS");
    u = query(ud, "query UD");
    check("UD after RTS->RTS(qkey): qkey", u.qkey, 0x55667788);
    check("UD after RTS->RTS(qkey): sq_psn", u.sq_psn, 0x3456);
    check("UD after RTS->RTS(qkey): port_num", u.port_num, 1);

    // ---- An RC QP the HCA moves to ERR: a send to a LID nobody has,
    // short ACK timeout, one retry.
    ia.qp_type = IBV_QPT_RC;
    ibv_qp* lost = ibv_create_qp(pd, &ia);
    if (!lost)
        die("ibv_create_qp RC (lost)", errno);
    a = {};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    modify(lost, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "lost RST->INIT");
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = 0x99;
    a.rq_psn = 7;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.dlid = 0x3fff;
    a.ah_attr.port_num = 1;
    modify(lost, a,
           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
           "lost INIT->RTR");
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x777;
    a.timeout = 10;  // 4 ms
    a.retry_cnt = 1;
    a.rnr_retry = 1;
    a.max_rd_atomic = 1;
    modify(lost, a,
           IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
               IBV_QP_MAX_QP_RD_ATOMIC,
           "lost RTR->RTS");
    static char buf[64];
    ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    if (!mr)
        die("ibv_reg_mr", errno);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), sizeof buf, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (int err = ibv_post_send(lost, &wr, &bad))
        die("ibv_post_send", err);
    ibv_wc wc{};
    bool done = wait_completion(cq, &wc, std::chrono::seconds(30));
    check("lost send completes", done, 1);
    if (done)
        check("lost send: status is retry exceeded", wc.status, IBV_WC_RETRY_EXC_ERR);
    ibv_qp_attr l = query(lost, "query lost");
    check("lost after retries: qp_state", l.qp_state, IBV_QPS_ERR);
    check("lost after retries: dest_qp_num", l.dest_qp_num, 0x99);
    check("lost after retries: sq_psn", l.sq_psn, 0x777);
    check("lost after retries: ah_attr.dlid", l.ah_attr.dlid, 0x3fff);

    ibv_destroy_qp(lost);
    ibv_dereg_mr(mr);
    ibv_destroy_qp(ud);
    ibv_destroy_qp(rc);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    std::printf("%u checks, %u failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
