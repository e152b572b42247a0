// SPDX-License-Identifier: GPL-2.0
//
// The QP engine's shared state and dispatch: QP/CQ/SRQ lookups, memory
// region checks and accesses for the data path, CQE posting, QP state
// transitions and flushes, port attachment, the timer poll() that drives
// all QPs, and the receive dispatch that hands each packet to its role.
//
// The protocol roles have a file each, as rxe splits them:
//   qp_requester.cc  send doorbell, WQE fetch and parse, packetisation;
//   qp_responder.cc  incoming requests (SEND/WRITE/READ/atomic on RC, UC,
//                    UD), receive queues, ACK/NAK/RNR generation and the
//                    owed READ/atomic responses;
//   qp_completer.cc  ACK/NAK/READ-response handling, retries and the
//                    requester's CQEs;
//   qp_packet.cc     building and transmitting packets (both directions).
//
// Everything is guest-written and untrusted: WQE chains are bounded by the
// doorbell counts and the queue sizes, segment lists by the WQE size, and
// every address goes through MPT/MTT checks. A malformed WQE completes in
// error and moves its QP to ERR; it never stops the model.
//
// Per-packet work does not allocate: a Packet lives on the stack, its
// payload segments point into guest RAM (GuestMemory::map_range) or, where
// the memory cannot be mapped, into a bounce buffer owned by the Core.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/iba.h"
#include "hca/qp_engine.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {

using namespace qpe;

namespace {

// How often QPs in ERR are checked for newly posted receives to flush.
constexpr uint64_t kErrPollNs = 1'000'000;

}  // namespace

// ---- lookups and memory ----------------------------------------------------

Qp* Core::qp_lookup(uint32_t qpn)
{
    if (!layout_.log_qps)
        return nullptr;
    if (last_qp_ && last_qpn_ == qpn && last_qp_gen_ == obj_gen_)
        return last_qp_;
    auto it = qps_.find(qpn & ((1u << layout_.log_qps) - 1));
    if (it == qps_.end() || it->second.qpn != qpn)
        return nullptr;
    last_qpn_ = qpn;
    last_qp_ = &it->second;
    last_qp_gen_ = obj_gen_;
    return last_qp_;
}

Cq* Core::cq_lookup(uint32_t cqn)
{
    auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
    return it == cqs_.end() || it->second.cqn != cqn ? nullptr : &it->second;
}

Srq* Core::srq_lookup(uint32_t srqn)
{
    auto it = srqs_.find(srqn & ((1u << layout_.log_srqs) - 1));
    return it == srqs_.end() || it->second.srqn != srqn ? nullptr : &it->second;
}

uint64_t Core::uarc_record(uint32_t uar, uint32_t index) const
{
    uint64_t per_uar = uint64_t(kIcmPageSize) << layout_.log_uarc_pages;
    return layout_.uarc_base + uint64_t(uar) * per_uar + uint64_t(index) * 8;
}

bool Core::read_db_record(uint32_t uar, uint32_t index, uint32_t* v, uint32_t* v1)
{
    uint64_t per_uar = uint64_t(kIcmPageSize) << layout_.log_uarc_pages;
    if (uint64_t(index) * 8 >= per_uar)
        return false;
    uint8_t b[8];
    if (!icm_.read(uarc_record(uar, index), b, v1 ? 8 : 4))
        return false;
    *v = be32(b);
    if (v1)
        *v1 = be32(b + 4);
    return true;
}

Core::Tpt Core::mr_check(uint32_t key, uint32_t pd, uint64_t va, uint64_t len, uint32_t need, const Mpt** out)
{
    const Mpt* mp;
    if (last_mpt_ && last_key_ == key && last_mpt_gen_ == obj_gen_) {
        mp = last_mpt_;
    } else {
        uint32_t hw = key_to_index(key);
        auto it = mpts_.find(hw & ((1u << layout_.log_mpts) - 1));
        if (it == mpts_.end())
            return Tpt::BadKey;
        mp = &it->second;
        last_key_ = key;
        last_mpt_ = mp;
        last_mpt_gen_ = obj_gen_;
    }
    const Mpt& m = *mp;
    // The firmware reads the entry at each use: a key the driver changed
    // in ICM (mem-free FMR remap) is no longer this one.
    if (!mpt_current(m) || m.key != key_to_index(key) || m.pd != pd)
        return Tpt::BadKey;
    if (va < m.start || len > m.length || va - m.start > m.length - len)
        return Tpt::Bounds;
    if ((m.flags & need) != need)
        return Tpt::Access;
    *out = &m;
    return Tpt::Ok;
}

bool Core::mr_fill_cache(const Mpt& m, uint64_t va)
{
    uint64_t page = uint64_t(1) << m.page_shift;
    uint64_t base = m.start & ~(page - 1);
    if (va < base)
        return false;
    uint64_t idx = (va - base) >> m.page_shift;
    uint8_t e[8];
    if (!icm_.read(m.mtt_addr + idx * 8, e, sizeof e))
        return false;
    uint64_t entry = be64(e);
    if (!(entry & mpt::kMttPresent))
        return false;
    uint64_t phys = entry & ~(page - 1);
    uint64_t run = page;
    // Extend over physically contiguous pages, within the region and 1 GiB.
    uint64_t end = m.start + m.length;
    while (base + (idx << m.page_shift) + run < end && run + page <= (1ull << 30)) {
        if (!icm_.read(m.mtt_addr + (idx + run / page) * 8, e, sizeof e))
            break;
        uint64_t ne = be64(e);
        if (!(ne & mpt::kMttPresent) || (ne & ~(page - 1)) != phys + run)
            break;
        run += page;
    }
    m.tc_va = base + (idx << m.page_shift);
    m.tc_len = run;
    m.tc_phys = phys;
    m.tc_gen = tpt_gen_;
    return true;
}

bool Core::mr_write(const Mpt& m, uint64_t va, const uint8_t* src, uint32_t len)
{
    return mr_walk(m, va, len, [&](uint64_t gpa, uint32_t n) {
        bool ok = mem_.write(gpa, src, n);
        src += n;
        return ok;
    });
}

bool Core::mr_read(const Mpt& m, uint64_t va, uint8_t* dst, uint32_t len)
{
    return mr_walk(m, va, len, [&](uint64_t gpa, uint32_t n) {
        bool ok = mem_.read(gpa, dst, n);
        dst += n;
        return ok;
    });
}

const char* Core::tpt_name(Tpt t)
{
    static const char* const names[] = {"ok", "bad key", "out of bounds", "access denied"};
    unsigned i = unsigned(t);
    return i < 4 ? names[i] : "?";
}

// ---- CQEs and events -------------------------------------------------------

bool Core::cqe_post(uint32_t cqn, std::span<const uint8_t, 32> e, bool solicited)
{
    Cq* q = cq_lookup(cqn);
    if (!q) {
        IBEMU_GUEST_ERROR(cfg_.name, "completion for CQ 0x%x, which is not owned by HW: dropped", cqn);
        return false;
    }
    uint32_t nent = 1u << q->log_size;
    uint32_t ci = 0;
    if (read_db_record(q->uar, q->ci_db, &ci))
        q->consumer = ci;
    if (q->producer - q->consumer >= nent) {
        if (!q->overflow) {
            q->overflow = true;
            IBEMU_GUEST_ERROR(cfg_.name, "CQ 0x%x overrun (producer %u consumer %u)", cqn, q->producer,
                              q->consumer);
            std::array<uint8_t, 24> ev{};
            put32(ev, 0, cqn);
            put8(ev, 11, 1);  // syndrome: overrun
            post_async_event(ev::kCqError, 0, ev);
        }
        return false;
    }
    uint64_t va = q->start + uint64_t(q->producer & (nent - 1)) * cqe::kSize;
    // Everything but the owner byte first, then the owner byte, ordered
    // after it (release): the driver, on another CPU, reads the entry only
    // once it sees it software-owned.
    bool ok = tpt_access(q->lkey, q->pd, va, const_cast<uint8_t*>(e.data()), 31, true);
    std::atomic_thread_fence(std::memory_order_release);
    if (!ok || !tpt_access(q->lkey, q->pd, va + 31, const_cast<uint8_t*>(e.data() + 31), 1, true)) {
        IBEMU_GUEST_ERROR(cfg_.name, "CQ 0x%x: cannot write CQE at va 0x%llx", cqn, (unsigned long long)va);
        return false;
    }
    ++q->producer;
    ++db_.cqes;
    cq_completion(cqn, solicited);
    return true;
}

void Core::cqe_send(Qp& q, uint32_t wqe_off, uint8_t op, uint32_t byte_cnt)
{
    std::array<uint8_t, 32> e{};
    wbe32(&e[0], q.qpn);
    wbe32(&e[20], byte_cnt);
    wbe32(&e[24], wqe_off);
    e[28] = op;
    e[29] = 0x80;
    e[31] = 0;
    cqe_post(q.a.cqn_snd, e, false);
}

void Core::cqe_error(Qp& q, bool is_send, uint32_t wqe_off, uint8_t syndrome, uint32_t cqn)
{
    std::array<uint8_t, 32> e{};
    wbe32(&e[0], q.qpn);
    e[16] = syndrome;
    wbe32(&e[24], wqe_off);
    e[28] = uint8_t(cqe::kErrOpcode | (is_send ? 1 : 0));
    cqe_post(cqn, e, true);
}

void Core::qp_event(uint8_t type, uint32_t qpn)
{
    std::array<uint8_t, 24> ev{};
    put32(ev, 0, qpn & 0xffffff);
    post_async_event(type, 0, ev);
}

// ---- QP state --------------------------------------------------------------

void Core::apply_qp_context(Qp& q, uint16_t opcode)
{
    // q.ctx is already merged (merge_qp_context decides which fields a
    // transition takes), so every attribute is read from it.
    QpAttr& a = q.a;
    std::span<const uint8_t> ctx(q.ctx);
    auto g = [&](const Field& f) { return f.get(ctx); };
    auto u8 = [&](const Field& f) { return uint8_t(f.get(ctx)); };
    unsigned mtu = unsigned(g(qpc::kMtu));
    if (mtu >= 1 && mtu <= 5)
        a.mtu = 128u << mtu;
    a.rq_log_size = unsigned(g(qpc::kRqSize));
    a.rq_log_stride = unsigned(g(qpc::kRqStride)) + 4;
    a.sq_log_size = unsigned(g(qpc::kSqSize));
    a.sq_log_stride = unsigned(g(qpc::kSqStride)) + 4;
    a.has_rq = a.has_sq = true;
    a.usr_page = uint32_t(g(qpc::kUsrPage));
    a.remote_qpn = uint32_t(g(qpc::kRemoteQpn));
    a.pkey_index = u8(qpc::kPriPkeyIndex);
    a.rnr_retry = u8(qpc::kPriRnrRetry);
    a.grh = g(qpc::kPriGrh);
    a.path_bits = u8(qpc::kPriPathBits);
    a.rlid = uint16_t(g(qpc::kPriRlid));
    a.sgid_index = u8(qpc::kPriSgidIndex);
    a.hop_limit = u8(qpc::kPriHopLimit);
    a.sl = u8(qpc::kPriSl);
    a.tclass = u8(qpc::kPriTclass);
    a.flow = uint32_t(g(qpc::kPriFlowLabel));
    put64(a.rgid, 0, g(qpc::kPriRgidHi));
    put64(a.rgid, 8, g(qpc::kPriRgidLo));
    a.ackto = u8(qpc::kPriAckTimeout);
    a.pd = uint32_t(g(qpc::kPd));
    a.wqe_lkey = uint32_t(g(qpc::kWqeLkey));
    a.sig_all = g(qpc::kSsc);
    a.retry_cnt = u8(qpc::kRetryCount);
    a.sra_max = u8(qpc::kSraMax);  // fls(max_rd_atomic - 1)
    a.rra_max = u8(qpc::kRraMax);
    a.msg_max = u8(qpc::kMsgMax);
    a.sq_psn = uint32_t(g(qpc::kSqPsn));
    a.cqn_snd = uint32_t(g(qpc::kCqnSnd));
    a.send_wqe_offset = uint32_t(g(qpc::kSndWqeBase));
    a.snd_db_index = uint32_t(g(qpc::kSndDbIndex));
    a.rre = g(qpc::kRre);
    a.rwe = g(qpc::kRwe);
    a.rae = g(qpc::kRae);
    a.min_rnr_timer = u8(qpc::kMinRnrTimer);
    a.rq_psn = uint32_t(g(qpc::kRqPsn));
    a.cqn_rcv = uint32_t(g(qpc::kCqnRcv));
    a.rcv_db_index = uint32_t(g(qpc::kRcvDbIndex));
    a.qkey = uint32_t(g(qpc::kQkey));
    a.srq = g(qpc::kSrqEnable);
    a.srqn = uint32_t(g(qpc::kSrqn));
    a.pm_state = u8(qpc::kPmState);
    a.alt_port = u8(qpc::at(qpc::kAltPath, qpc::path::kPort));
    a.alt_rlid = uint16_t(g(qpc::at(qpc::kAltPath, qpc::path::kRlid)));
    a.alt_grh = g(qpc::at(qpc::kAltPath, qpc::path::kGrh));
    put64(a.alt_rgid, 0, g(qpc::at(qpc::kAltPath, qpc::path::kRgidHi)));
    put64(a.alt_rgid, 8, g(qpc::at(qpc::kAltPath, qpc::path::kRgidLo)));
    if (opcode == op::kInit2Rtr) {
        q.r.epsn = a.rq_psn;
        q.r.msn = 0;
        q.r.in_send = q.r.in_write = q.r.nak_sent = false;
    }
    if (opcode == op::kRtr2Rts) {
        q.r.npsn = a.sq_psn;
        q.r.retries = a.retry_cnt;
        q.r.rnr_retries = a.rnr_retry;
    }
}

void Core::qp_state_changed(Qp& q, QpState from)
{
    if (q.state == QpState::Rst) {
        return;
    }
    if (from == QpState::Rst) {
        q.r = QpRun{};
    }
    if (q.state == QpState::Err && from != QpState::Err) {
        ++err_qps_;
        next_deadline_ = std::min(next_deadline_, now() + kErrPollNs);
        qp_flush(q);
        // An SRQ-attached QP reports that no more WQEs will be consumed.
        if (q.a.srq)
            qp_event(ev::kSrqLastWqe, q.qpn);
    }
    if (q.state == QpState::Sqd && from == QpState::Rts) {
        if (q.r.out_head == q.r.out_tail && q.r.drained_event && !q.r.sq_busy) {
            q.r.drained_event = false;
            qp_event(ev::kSqDrained, q.qpn);
        }
    }
    // WQEs rung before RTS (or during SQD/SQE) go now.
    if (q.state == QpState::Rts && from != QpState::Rts && q.r.sq_pending)
        sq_progress(q);
}

void Core::qp_to_error(Qp& q, uint8_t syndrome, bool send_side, uint8_t event)
{
    if (q.state == QpState::Err || q.state == QpState::Rst)
        return;
    // The WQE that failed gets the real syndrome; the rest flush.
    if (send_side && q.r.out_head != q.r.out_tail) {
        SendEntry& e = q.r.out[q.r.out_tail % kMaxOutstanding];
        cqe_error(q, true, e.wqe, syndrome, q.a.cqn_snd);
        ++q.r.out_tail;
    }
    QpState from = q.state;
    q.state = QpState::Err;
    qpc::kState.set(q.ctx, uint8_t(QpState::Err));
    IBEMU_INFO(cfg_.name, "QP 0x%x %s->ERR (syndrome 0x%02x)", q.qpn, qp_state_name(from), syndrome);
    if (event)
        qp_event(event, q.qpn);
    qp_state_changed(q, from);
}

void Core::qp_to_sqe(Qp& q)
{
    if (q.state != QpState::Rts && q.state != QpState::Sqd)
        return;
    sq_flush(q);
    QpState from = q.state;
    q.state = QpState::Sqe;
    qpc::kState.set(q.ctx, uint8_t(QpState::Sqe));
    IBEMU_INFO(cfg_.name, "QP 0x%x %s->SQE", q.qpn, qp_state_name(from));
}

void Core::sq_flush(Qp& q)
{
    QpRun& r = q.r;
    r.deadline = UINT64_MAX;
    r.rnr_wait = false;
    ++r.tx_gen;  // a message being sent stops
    r.sq_resume = false;
    // Started send WQEs, oldest first.
    while (r.out_head != r.out_tail) {
        SendEntry& e = r.out[r.out_tail % kMaxOutstanding];
        cqe_error(q, true, e.wqe, cqe::kFlush, q.a.cqn_snd);
        ++r.out_tail;
    }
    // Rung but not started: follow the chain, bounded by the count.
    uint32_t limit = std::max<uint32_t>(1u << q.a.sq_log_size, 1);
    uint32_t n = std::min(r.sq_pending, limit);
    uint32_t off = r.sq_next_wqe;
    for (uint32_t i = 0; i < n && r.sq_have_next; ++i) {
        cqe_error(q, true, off, cqe::kFlush, q.a.cqn_snd);
        uint8_t nx[16];
        if (!tpt_access(q.a.wqe_lkey, q.a.pd, off, nx, 16, false))
            break;
        off = be32(nx) & ~0x3fu;
    }
    r.sq_pending = 0;
    r.sq_have_next = false;
}

void Core::qp_flush(Qp& q)
{
    QpRun& r = q.r;
    sq_flush(q);
    // Posted receives (not with an SRQ: those stay on the SRQ).
    if (r.in_send || r.uc_reuse) {
        r.in_send = r.uc_reuse = false;
        cqe_error(q, false, r.rwqe, cqe::kFlush, q.a.cqn_rcv);
    }
    if (!q.a.srq) {
        uint32_t head = 0;
        if (read_db_record(q.a.usr_page, q.a.rcv_db_index, &head)) {
            uint32_t avail = (head - r.rq_tail) & 0xffff;
            avail = std::min<uint32_t>(avail, 1u << q.a.rq_log_size);
            for (uint32_t i = 0; i < avail; ++i) {
                uint32_t off2 = (r.rq_tail & ((1u << q.a.rq_log_size) - 1)) << q.a.rq_log_stride;
                cqe_error(q, false, off2, cqe::kFlush, q.a.cqn_rcv);
                ++r.rq_tail;
            }
        }
    }
}

// ---- ports and timers ------------------------------------------------------

void Core::attach_port(unsigned port, Wire* wire)
{
    if (port < 1 || port > num_ports_)
        return;
    wires_[port - 1] = wire;
    arb_pushed_[port - 1] = ~0u;  // the new wire learns the port's VL arbitration
    update_carrier();
}

void Core::port_link_changed(unsigned port, bool up, const LinkParams& lp)
{
    if (port < 1 || port > num_ports_)
        return;
    Port& p = ports_[port - 1];
    if (up) {
        p.width_active = lp.width;
        p.speed_active = lp.speed;
        p.mtu_active = lp.mtu;
    }
    set_port_link(port, up);
}

void Core::set_port_lid(unsigned port, uint16_t lid, uint8_t lmc)
{
    if (port < 1 || port > num_ports_)
        return;
    ports_[port - 1].lid = lid;
    ports_[port - 1].lmc = lmc & 7;
}

uint64_t Core::now()
{
    uint64_t t = cfg_.clock ? cfg_.clock->now_ns() : 0;
    if (t > now_)
        now_ = t;
    return now_;
}

uint64_t Core::poll(uint64_t now_ns)
{
    if (now_ns > now_)
        now_ = now_ns;
    if (state_ != FwState::HcaUp || catas())
        return UINT64_MAX;
    if (now_ns < next_deadline_)
        return next_deadline_;
    uint64_t next = UINT64_MAX;
    unsigned errs = 0;
    // Round robin: start after the QP served first last time, so that QPs
    // held back by link credits take turns at the credits that come back
    // (requesters and responders alike).
    auto start = qps_.upper_bound(rr_qpn_);
    bool first = true;
    for (size_t k = 0, n = qps_.size(); k < n; ++k, ++start) {
        if (start == qps_.end())
            start = qps_.begin();
        Qp& q = start->second;
        if (q.state == QpState::Err) {
            ++errs;
            qp_flush(q);
            continue;
        }
        QpRun& r = q.r;
        // Work a call's budget (or the link's credits) left over.
        if (first && (r.sq_resume || r.resp_resume)) {
            rr_qpn_ = start->first;
            first = false;
        }
        if (r.sq_resume)
            sq_progress(q);
        if (r.resp_resume)
            resp_progress(q);
        if (q.state == QpState::Err) {
            ++errs;
            continue;
        }
        if ((r.sq_resume && !r.sq_blocked) || (r.resp_resume && !r.resp_blocked))
            next = std::min(next, now_ns);
        if (r.deadline <= now_ns) {
            r.deadline = UINT64_MAX;
            if (r.rnr_wait) {
                r.rnr_wait = false;
                rc_retransmit(q);
            } else if (r.out_head != r.out_tail) {
                if (r.retries == 0) {
                    IBEMU_INFO(cfg_.name, "QP 0x%x: transport retry counter exceeded", q.qpn);
                    qp_to_error(q, cqe::kRetryExc, true, 0);
                    continue;
                }
                --r.retries;
                rc_retransmit(q);
            }
        }
        next = std::min(next, r.deadline);
    }
    err_qps_ = errs;
    // Receives posted to a QP in ERR arrive without any MMIO (only the
    // doorbell record changes): look again soon for them to flush.
    if (errs)
        next = std::min(next, now_ns + kErrPollNs);
    next = std::min(next, trap_poll(now_ns));
    next_deadline_ = next;
    return next;
}

void Core::arm_timer(Qp& q, uint64_t when)
{
    q.r.deadline = when;
    next_deadline_ = std::min(next_deadline_, when);
}

// ---- receive dispatch ------------------------------------------------------

void Core::port_receive(unsigned port, const Packet& p) { rx_packet(port, p, false); }

void Core::port_tx_ready(unsigned port)
{
    (void)port;
    // Called from the fabric, possibly inside our own transmit: only ask
    // for a poll(), which resumes the QPs that were held back.
    next_deadline_ = 0;
}

void Core::rx_packet(unsigned port, const Packet& p, bool loopback)
{
    if (port < 1 || port > num_ports_ || state_ != FwState::HcaUp || catas())
        return;
    Port& pt = ports_[port - 1];
    ++db_.rx_packets;
    RxCtx rx;
    rx.p = &p;
    auto drop = [&](const char* why) {
        ++db_.rx_dropped;
        IBEMU_DEBUG(cfg_.name,
                    "port %u: %spacket dropped: %s (DLID 0x%04x SLID 0x%04x VL %u QP 0x%x; LID 0x%04x LMC %u)", port,
                    loopback ? "looped-back " : "", why, rx.dlid, rx.slid, rx.vl, rx.dqpn, pt.lid, pt.lmc);
    };
    if (p.hdr_len < iba::kLrhLen + iba::kBthLen || p.hdr_len > Packet::kMaxHdr || p.nseg > Packet::kMaxSegs) {
        ++pt.rcv_errors;
        return drop("short header");
    }
    const uint8_t* h = p.hdr.data();
    rx.vl = h[0] >> 4;
    rx.sl = h[1] >> 4;
    uint8_t lnh = h[1] & 3;
    rx.dlid = be16(h + 2);
    uint16_t pktlen = be16(h + 4) & 0x7ff;
    rx.slid = be16(h + 6);
    if (!loopback) {
        ++pt.rcv_pkts;
        pt.rcv_data += pktlen;
    }
    if (!pt.link_present || !pt.ib_open)
        return drop("port down");
    size_t off = iba::kLrhLen;
    if (lnh == iba::kLnhIbaGlobal) {
        if (p.hdr_len < off + iba::kGrhLen + iba::kBthLen) {
            ++pt.rcv_errors;
            return drop("short GRH");
        }
        rx.grh = h + off;
        off += iba::kGrhLen;
    } else if (lnh != iba::kLnhIbaLocal) {
        return drop("raw packet");
    }
    const uint8_t* bth = h + off;
    rx.opcode = bth[0];
    rx.se = bth[1] & 0x80;
    rx.migreq = bth[1] & 0x40;
    rx.pad = (bth[1] >> 4) & 3;
    rx.pkey = be16(bth + 2);
    rx.dqpn = be32(bth + 4) & 0xffffff;
    rx.ackreq = bth[8] & 0x80;
    rx.psn = be32(bth + 8) & iba::kPsnMask;
    off += iba::kBthLen;
    rx.ext = h + off;
    rx.ext_len = unsigned(p.hdr_len - off);
    if (p.payload_len < rx.pad) {
        ++pt.rcv_errors;
        return drop("pad beyond payload");
    }
    rx.pay_len = p.payload_len - rx.pad;

    // Addressing.
    bool smp = rx.dqpn == 0;
    if (rx.vl == 15 && !smp) {
        ++pt.vl15_dropped;
        return drop("VL15 packet not for QP0");
    }
    if (smp && rx.vl != 15)
        return drop("QP0 packet not on VL15");
    bool mcast = rx.dlid >= iba::kMulticastLidBase && rx.dlid != iba::kPermissiveLid;
    bool for_me = is_own_lid(pt, rx.dlid) || (smp && rx.dlid == iba::kPermissiveLid) || mcast;
    if (!for_me)
        return drop("DLID not ours");
    if (!smp && pt.state != PortState::Active && pt.state != PortState::Armed)
        return drop("port not active");
    if (mcast) {
        if (rx.dqpn != iba::kMulticastQpn || !rx.grh)
            return drop("multicast without GRH/QPN");
        return rx_multicast(port, rx);
    }
    Qp* q = nullptr;
    if (rx.dqpn <= 1) {
        uint32_t base = special_base_[rx.dqpn];
        if (base)
            q = qp_lookup(base + port - 1);
    } else {
        q = qp_lookup(rx.dqpn);
    }
    if (!q || q->state == QpState::Rst || q->state == QpState::Init)
        return drop("no such QP (or not ready)");
    rx_deliver(port, rx, *q);
}

bool Core::pkey_ok(const Port& pt, uint16_t pkey, const Qp& q, uint8_t* index)
{
    auto match = [](uint16_t a, uint16_t b) {
        return (a & 0x7fff) == (b & 0x7fff) && (a & 0x7fff) && ((a | b) & 0x8000);
    };
    if (q.special == SpecialQp::Gsi || q.service == uint8_t(QpService::Mlx)) {
        // QP1 accepts any P_Key in the port's table.
        for (unsigned i = 0; i < kPkeyTableLen; ++i)
            if (match(pt.pkeys[i], pkey)) {
                *index = uint8_t(i);
                return true;
            }
        return false;
    }
    uint16_t mine = pt.pkeys[q.a.pkey_index % kPkeyTableLen];
    *index = q.a.pkey_index;
    return match(mine, pkey);
}

// The source of an RC/UC packet is the QP's primary path: the QP's port,
// SLID = the remote LID the QP sends to (its path bits included), and, when
// either the path or the packet has a GRH, both have one and the SGID is the
// path's remote GID. While the QP is ARMED its alternate path is a source
// too: the first packet from it migrates the QP (rx_deliver).
bool Core::from_primary_path(unsigned port, const RxCtx& rx, const Qp& q) const
{
    if (port != (q.port ? q.port : 1u) || rx.slid != q.a.rlid)
        return false;
    if (bool(rx.grh) != q.a.grh)
        return false;
    return !rx.grh || std::memcmp(rx.grh + 8, q.a.rgid.data(), 16) == 0;
}

bool Core::from_alternate_path(unsigned port, const RxCtx& rx, const Qp& q) const
{
    if (port != q.a.alt_port || rx.slid != q.a.alt_rlid)
        return false;
    if (bool(rx.grh) != q.a.alt_grh)
        return false;
    return !rx.grh || std::memcmp(rx.grh + 8, q.a.alt_rgid.data(), 16) == 0;
}

void Core::set_pm_state(Qp& q, uint8_t pm)
{
    q.a.pm_state = pm;
    qpc::kPmState.set(q.ctx, pm);
}

bool Core::qp_migrate(Qp& q, bool event)
{
    unsigned alt_port = unsigned(qpc::at(qpc::kAltPath, qpc::path::kPort).get(q.ctx));
    if (alt_port < 1 || alt_port > num_ports_)
        return false;
    uint8_t tmp[qpc::path::kSize];
    std::memcpy(tmp, q.ctx.data() + qpc::kPriPath, sizeof tmp);
    std::memcpy(q.ctx.data() + qpc::kPriPath, q.ctx.data() + qpc::kAltPath, sizeof tmp);
    std::memcpy(q.ctx.data() + qpc::kAltPath, tmp, sizeof tmp);
    qpc::kPmState.set(q.ctx, qpc::kPmMigrated);
    if (q.special == SpecialQp::None)
        q.port = uint8_t(alt_port);
    // Decode the swapped paths; opcode 0 touches no run state (PSNs, retry
    // budgets: a migration keeps the connection as it stands).
    apply_qp_context(q, 0);
    ++db_.path_migrations;
    IBEMU_INFO(cfg_.name, "QP 0x%x migrated to its alternate path (port %u, DLID 0x%04x)%s", q.qpn, alt_port,
               q.a.rlid, event ? ": PATH_MIG" : "");
    if (event)
        qp_event(ev::kPathMig, q.qpn);
    return true;
}

void Core::rx_deliver(unsigned port, RxCtx& rx, Qp& q)
{
    Port& pt = ports_[port - 1];
    if (q.special != SpecialQp::Smi) {
        if (!pkey_ok(pt, rx.pkey, q, &rx.pkey_index)) {
            if (pt.pkey_violations != 0xffff)
                ++pt.pkey_violations;
            uint32_t src_qp = (rx.opcode >> 5) == iba::kTrUd && rx.ext_len >= iba::kDethLen
                                  ? be32(rx.ext + 4) & 0xffffff
                                  : q.a.remote_qpn;
            trap_key_violation(port, TrapKind::BadPkey, rx, rx.pkey, src_qp);
            ++db_.rx_dropped;
            IBEMU_DEBUG(cfg_.name, "port %u: P_Key 0x%04x violation on QP 0x%x", port, rx.pkey, q.qpn);
            return;
        }
    }
    uint8_t tr = rx.opcode >> 5;
    uint8_t st = q.service == uint8_t(QpService::Mlx) ? uint8_t(QpService::Ud) : q.service;
    bool connected = (tr == iba::kTrRc || tr == iba::kTrUc) && st == tr;
    if (connected && q.a.pm_state == qpc::kPmArmed && !from_primary_path(port, rx, q) &&
        from_alternate_path(port, rx, q)) {
        // The remote side migrated (IBA 17.2.8): its first packet on the
        // alternate path moves this QP there too, and the consumer hears
        // of it. Later packets on the old path are dropped below.
        qp_migrate(q, true);
    }
    if (connected && !from_primary_path(port, rx, q)) {
        // A connected QP takes packets only from its peer (IBA vol 1 9.6,
        // transport header validation): requests, responses and ACKs from
        // any other port, LID or GID are dropped without a reply, so a third
        // node that knows the QPN, a PSN and an R_Key can neither write
        // memory, complete the requester's WQEs, nor probe PSNs.
        ++db_.rx_dropped;
        ++db_.rx_bad_source;
        IBEMU_DEBUG(cfg_.name, "port %u: QP 0x%x: packet from SLID 0x%04x%s is not from its path (port %u LID 0x%04x)",
                    port, q.qpn, rx.slid, rx.grh ? " (with GRH)" : "", q.port ? q.port : 1, q.a.rlid);
        return;
    }
    // REARM: a packet with MigReq 0 shows the remote side has re-armed too
    // (it left MIGRATED): the QP is ARMED from here on.
    if (connected && q.a.pm_state == qpc::kPmRearm && !rx.migreq)
        set_pm_state(q, qpc::kPmArmed);
    // The first packet a connected QP receives while in RTR tells its
    // consumer the connection works (the CM's RTU may have been lost):
    // the communication-established event, once per connection.
    if (q.state == QpState::Rtr && (tr == iba::kTrRc || tr == iba::kTrUc) && st == tr && !q.r.comm_est) {
        q.r.comm_est = true;
        qp_event(ev::kCommEst, q.qpn);
    }
    if (tr == iba::kTrUd && st == uint8_t(QpService::Ud))
        return rx_ud(port, rx, q);
    if (tr == iba::kTrRc && st == uint8_t(QpService::Rc)) {
        uint8_t o = rx.opcode & 0x1f;
        if ((o >= iba::opc::kReadRespFirst && o <= iba::opc::kAtomicAck))
            return rx_rc_response(port, rx, q);
        return rx_rc_request(port, rx, q);
    }
    if (tr == iba::kTrUc && st == uint8_t(QpService::Uc))
        return rx_uc(port, rx, q);
    ++db_.rx_dropped;
    IBEMU_DEBUG(cfg_.name, "opcode 0x%02x does not match QP 0x%x service %s", rx.opcode, q.qpn,
                qp_service_name(q.service));
}

// Any fixed function will do, as long as it stays below the hash size the
// driver configured: fold the GID into 16 bits (FNV-1a). MGID_HASH answers
// with it and rx_multicast looks groups up by it.
uint32_t Core::mgid_hash_of(std::span<const uint8_t, 16> gid) const
{
    uint32_t h = 2166136261u;
    for (uint8_t b : gid)
        h = (h ^ b) * 16777619u;
    h = (h ^ (h >> 16)) & 0xffff;
    return layout_.mc_hash_size ? h % layout_.mc_hash_size : 0;
}

void Core::rx_multicast(unsigned port, RxCtx& rx)
{
    std::span<const uint8_t, 16> dgid(rx.grh + 24, 16);
    uint32_t idx = mgid_hash_of(dgid);
    uint32_t table = 1u << layout_.log_mc_table;
    for (unsigned hops = 0; hops < 1024 && idx < table; ++hops) {
        uint8_t e[kMgmEntrySize];
        if (!icm_.read(layout_.mc_base + uint64_t(idx) * kMgmEntrySize, e, sizeof e))
            return;
        if (std::memcmp(e + 16, dgid.data(), 16) == 0) {
            for (unsigned i = 0; i < (kMgmEntrySize - 32) / 4; ++i) {
                uint32_t v = be32(e + 32 + i * 4);
                if (!(v & 0x80000000u))
                    continue;
                Qp* q = qp_lookup(v & 0xffffff);
                if (q && q->port == port && (q->state == QpState::Rtr || q->state == QpState::Rts ||
                                             q->state == QpState::Sqd || q->state == QpState::Sqe))
                    rx_deliver(port, rx, *q);
            }
            return;
        }
        uint32_t next = be32(e) >> 6;
        if (!next)
            return;
        idx = next;
    }
}

}  // namespace ibemu::mthca
