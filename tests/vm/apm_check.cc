// SPDX-License-Identifier: GPL-2.0
// Path migration of an RC connection (issue 11: "LAP/APR migrates to an
// alternate path" needs the hardware), run inside a guest on the emulated
// HCA (mthca0 port 1, whose LMC must be 1 or more: OpenSM -l 1). Two RC QPs
// of one process, connected to each other through the port (the HCA loops
// the packets back): primary path DLID = base LID, alternate DLID = base
// LID + 1 with source path bits 1, both loaded at INIT->RTR, REARM at
// RTR->RTS. Traffic arms both; the requester is migrated by software
// (IBV_QP_PATH_MIG_STATE = IBV_MIG_MIGRATED); traffic goes on with the data
// verified both ways; ibv_query_qp shows both QPs MIGRATED with the paths
// swapped, and the responder's PATH_MIG async event arrives (none for the
// requester, whose consumer asked).
//
// Prints "PASS <what>" or "FAIL <what>: ..." per check and "<n> checks,
// <m> failed" at the end; exits 1 on any failure, 2 when the setup fails.
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

void check_eq(const std::string& what, long long got, long long want)
{
    check(what, got == want, "got " + std::to_string(got) + ", want " + std::to_string(want));
}

[[noreturn]] void die(const char* what, int err)
{
    std::printf("SETUP FAILED %s: %s\n", what, std::strerror(err));
    std::fflush(stdout);
    std::exit(2);
}

constexpr unsigned kLen = 8192;  // four 2 KiB packets a message
constexpr uint8_t kPort = 1;

const char* mig_name(ibv_mig_state s)
{
    return s == IBV_MIG_MIGRATED ? "MIGRATED" : s == IBV_MIG_REARM ? "REARM" : s == IBV_MIG_ARMED ? "ARMED" : "?";
}

struct Side {
    ibv_qp* qp = nullptr;
    uint8_t* sbuf = nullptr;
    uint8_t* rbuf = nullptr;
    ibv_mr* smr = nullptr;
    ibv_mr* rmr = nullptr;
};

ibv_context* g_ctx;
ibv_pd* g_pd;
ibv_cq* g_cq;
uint16_t g_lid;

ibv_ah_attr path(uint16_t dlid, uint8_t path_bits)
{
    ibv_ah_attr ah{};
    ah.dlid = dlid;
    ah.src_path_bits = path_bits;
    ah.sl = 0;
    ah.port_num = kPort;
    return ah;
}

void connect(Side& me, const Side& peer)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = kPort;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (ibv_modify_qp(me.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        die("RESET->INIT", errno);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_2048;
    a.dest_qp_num = peer.qp->qp_num;
    a.rq_psn = 0x100;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr = path(g_lid, 0);
    a.alt_ah_attr = path(uint16_t(g_lid + 1), 1);
    a.alt_port_num = kPort;
    a.alt_pkey_index = 0;
    a.alt_timeout = 14;
    int r = ibv_modify_qp(me.qp, &a,
                          IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_ALT_PATH);
    check("INIT->RTR with the alternate path", r == 0, std::strerror(r));
    if (r)
        die("INIT->RTR", r);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x100;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    a.path_mig_state = IBV_MIG_REARM;
    r = ibv_modify_qp(me.qp, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_PATH_MIG_STATE);
    check("RTR->RTS with REARM", r == 0, std::strerror(r));
    if (r)
        die("RTR->RTS", r);
}

bool poll_one(ibv_wc* wc)
{
    for (int spin = 0; spin < 20000; ++spin) {
        int n = ibv_poll_cq(g_cq, 1, wc);
        if (n < 0)
            return false;
        if (n == 1)
            return true;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, nullptr);
    }
    return false;  // 10 s
}

// One SEND of kLen bytes from `from` to `to`, its data checked.
void send_and_check(const std::string& what, Side& from, Side& to, uint8_t seed)
{
    for (unsigned i = 0; i < kLen; ++i)
        from.sbuf[i] = uint8_t(seed + i * 31 + (i >> 9));
    std::memset(to.rbuf, 0, kLen);
    ibv_sge rs{reinterpret_cast<uintptr_t>(to.rbuf), kLen, to.rmr->lkey};
    ibv_recv_wr rwr{}, *bad_r;
    rwr.wr_id = 2;
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    if (ibv_post_recv(to.qp, &rwr, &bad_r))
        die("post_recv", errno);
    ibv_sge ss{reinterpret_cast<uintptr_t>(from.sbuf), kLen, from.smr->lkey};
    ibv_send_wr swr{}, *bad_s;
    swr.wr_id = 1;
    swr.sg_list = &ss;
    swr.num_sge = 1;
    swr.opcode = IBV_WR_SEND;
    swr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(from.qp, &swr, &bad_s))
        die("post_send", errno);
    bool got_send = false, got_recv = false, ok = true;
    std::string detail;
    for (int i = 0; i < 2; ++i) {
        ibv_wc wc{};
        if (!poll_one(&wc)) {
            ok = false;
            detail = "no completion within 10 s";
            break;
        }
        if (wc.status != IBV_WC_SUCCESS) {
            ok = false;
            detail = std::string("completion ") + ibv_wc_status_str(wc.status);
        }
        (wc.wr_id == 1 ? got_send : got_recv) = true;
        if (wc.wr_id == 2 && wc.byte_len != kLen) {
            ok = false;
            detail = "received " + std::to_string(wc.byte_len) + " bytes";
        }
    }
    check(what + ": both completions successful", ok && got_send && got_recv, detail);
    check(what + ": data arrived intact", std::memcmp(from.sbuf, to.rbuf, kLen) == 0);
}

void query(ibv_qp* qp, ibv_qp_attr* a)
{
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE, &ia))
        die("query_qp", errno);
}

// Async events within `ms`: the number of PATH_MIG for `qp`, and of the
// other migration events (PATH_MIG of another QP, PATH_MIG_ERR); all are
// logged.
void collect_events(int ms, ibv_qp* qp, unsigned* mine, unsigned* others, std::string* log)
{
    pollfd p{g_ctx->async_fd, POLLIN, 0};
    while (poll(&p, 1, ms) > 0) {
        ibv_async_event ev;
        if (ibv_get_async_event(g_ctx, &ev))
            break;
        bool qp_event = ev.event_type == IBV_EVENT_PATH_MIG || ev.event_type == IBV_EVENT_PATH_MIG_ERR ||
                        ev.event_type == IBV_EVENT_COMM_EST;
        if (ev.event_type == IBV_EVENT_PATH_MIG && ev.element.qp == qp)
            ++*mine;
        else if (ev.event_type == IBV_EVENT_PATH_MIG || ev.event_type == IBV_EVENT_PATH_MIG_ERR)
            ++*others;
        *log += std::string(ibv_event_type_str(ev.event_type)) +
                (qp_event ? " on QP " + std::to_string(ev.element.qp->qp_num) : std::string()) + "; ";
        ibv_ack_async_event(&ev);
        ms = 500;  // a second one would follow soon
    }
}

}  // namespace

int main()
{
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1)
        die("no RDMA device", errno);
    g_ctx = ibv_open_device(list[0]);
    if (!g_ctx)
        die("open_device", errno);
    ibv_port_attr pa{};
    if (ibv_query_port(g_ctx, kPort, &pa))
        die("query_port", errno);
    std::printf("port %u: LID 0x%x LMC %u state %s\n", kPort, pa.lid, pa.lmc, ibv_port_state_str(pa.state));
    check("port ACTIVE", pa.state == IBV_PORT_ACTIVE);
    check("LMC >= 1 (two LIDs)", pa.lmc >= 1, "LMC " + std::to_string(pa.lmc));
    check("base LID aligned to the LMC", pa.lid && !(pa.lid & ((1u << pa.lmc) - 1)),
          "LID " + std::to_string(pa.lid));
    if (pa.lmc < 1 || pa.state != IBV_PORT_ACTIVE)
        die("port", EINVAL);
    g_lid = pa.lid;
    int fl = fcntl(g_ctx->async_fd, F_GETFL);
    if (fcntl(g_ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
        die("async_fd O_NONBLOCK", errno);

    g_pd = ibv_alloc_pd(g_ctx);
    g_cq = g_pd ? ibv_create_cq(g_ctx, 64, nullptr, nullptr, 0) : nullptr;
    if (!g_cq)
        die("pd/cq", errno);
    Side s[2];
    for (Side& x : s) {
        x.sbuf = static_cast<uint8_t*>(std::aligned_alloc(4096, kLen));
        x.rbuf = static_cast<uint8_t*>(std::aligned_alloc(4096, kLen));
        x.smr = ibv_reg_mr(g_pd, x.sbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        x.rmr = ibv_reg_mr(g_pd, x.rbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = g_cq;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        x.qp = x.smr && x.rmr ? ibv_create_qp(g_pd, &ia) : nullptr;
        if (!x.qp)
            die("mr/qp", errno);
    }
    Side &req = s[0], &resp = s[1];
    connect(req, resp);
    connect(resp, req);
    std::printf("requester QP 0x%x, responder QP 0x%x\n", req.qp->qp_num, resp.qp->qp_num);

    ibv_qp_attr a{};
    query(req.qp, &a);
    check_eq("requester: primary DLID = base LID", a.ah_attr.dlid, g_lid);
    check_eq("requester: alternate DLID = base LID + 1", a.alt_ah_attr.dlid, g_lid + 1);
    check_eq("requester: alternate path bits", a.alt_ah_attr.src_path_bits, 1);
    check_eq("requester: alternate port", a.alt_port_num, kPort);
    check_eq("requester: alternate timeout", a.alt_timeout, 14);
    check("requester: REARM after RTR->RTS", a.path_mig_state == IBV_MIG_REARM, mig_name(a.path_mig_state));

    // Traffic both ways on the primary path arms both sides.
    send_and_check("primary path, requester -> responder", req, resp, 1);
    send_and_check("primary path, responder -> requester", resp, req, 2);
    for (Side* x : {&req, &resp}) {
        const char* who = x == &req ? "requester" : "responder";
        query(x->qp, &a);
        check(std::string(who) + ": ARMED after traffic", a.path_mig_state == IBV_MIG_ARMED,
              mig_name(a.path_mig_state));
    }
    unsigned mine = 0, others = 0;
    std::string log;
    collect_events(0, resp.qp, &mine, &others, &log);
    check("no PATH_MIG before the migration", mine == 0 && others == 0, log);

    // The migration, commanded on the requester (RTS->RTS).
    a = {};
    a.path_mig_state = IBV_MIG_MIGRATED;
    int r = ibv_modify_qp(req.qp, &a, IBV_QP_PATH_MIG_STATE);
    check("requester: ibv_modify_qp(PATH_MIG_STATE = MIGRATED)", r == 0, std::strerror(r));
    query(req.qp, &a);
    check("requester: MIGRATED", a.path_mig_state == IBV_MIG_MIGRATED, mig_name(a.path_mig_state));
    check_eq("requester: primary DLID is now base LID + 1", a.ah_attr.dlid, g_lid + 1);
    check_eq("requester: primary path bits now 1", a.ah_attr.src_path_bits, 1);
    check_eq("requester: alternate DLID is now the old primary", a.alt_ah_attr.dlid, g_lid);

    send_and_check("alternate path, requester -> responder", req, resp, 3);
    collect_events(3000, resp.qp, &mine, &others, &log);
    check_eq("responder: one PATH_MIG async event", mine, 1);
    check("no other async event (none for the requester)", others == 0, log);
    query(resp.qp, &a);
    check("responder: MIGRATED", a.path_mig_state == IBV_MIG_MIGRATED, mig_name(a.path_mig_state));
    check_eq("responder: primary DLID is now base LID + 1", a.ah_attr.dlid, g_lid + 1);
    check_eq("responder: alternate DLID is now the old primary", a.alt_ah_attr.dlid, g_lid);
    send_and_check("alternate path, responder -> requester", resp, req, 4);
    send_and_check("alternate path, requester -> responder again", req, resp, 5);
    query(req.qp, &a);
    check("requester: still RTS", a.qp_state == IBV_QPS_RTS, std::to_string(a.qp_state));
    query(resp.qp, &a);
    check("responder: still RTS", a.qp_state == IBV_QPS_RTS, std::to_string(a.qp_state));

    for (Side& x : s) {
        ibv_destroy_qp(x.qp);
        ibv_dereg_mr(x.smr);
        ibv_dereg_mr(x.rmr);
    }
    ibv_destroy_cq(g_cq);
    ibv_dealloc_pd(g_pd);
    ibv_close_device(g_ctx);
    ibv_free_device_list(list);
    std::printf("%u checks, %u failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
