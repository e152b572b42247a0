// SPDX-License-Identifier: GPL-2.0
//
// The QP engine: send queues driven by the UAR send doorbell, receive
// queues and SRQs read through their doorbell records, CQEs, and the IBA
// transports on the wire (RC, UC, UD, and the MLX transport of QP0/QP1).
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
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/iba.h"
#include "hca/qp_engine.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {

namespace {

using namespace qpe;

bool is_rc_read_or_atomic(uint8_t op) { return is_read_or_atomic(op); }

// How often QPs in ERR are checked for newly posted receives to flush.
constexpr uint64_t kErrPollNs = 1'000'000;

// Call fn(ptr, n) for the payload bytes [off, off + len) of p.
template <class F>
void payload_pieces(const Packet& p, uint32_t off, uint32_t len, F&& fn)
{
    for (unsigned i = 0; i < p.nseg && len; ++i) {
        uint32_t sl = p.seg[i].len;
        if (off >= sl) {
            off -= sl;
            continue;
        }
        uint32_t n = std::min(sl - off, len);
        fn(p.seg[i].data + off, n);
        len -= n;
        off = 0;
    }
}

// Packet-sized copies: a plain vector loop beats the string-instruction
// path libc takes for a few KiB, whose start-up cost we would pay per packet.
// The copy is bound by loads from L2; prefetching the source 1 KiB ahead
// (which runs on into the next packet's payload, the rest of the message)
// keeps the loads from stalling at each new line.
void copy_payload_bytes(uint8_t* d, const uint8_t* s, uint32_t len)
{
    while (len >= 128) {
        __builtin_prefetch(s + 1024);
        __builtin_prefetch(s + 1024 + 64);
        __builtin_memcpy(d, s, 128);
        d += 128, s += 128, len -= 128;
    }
    while (len >= 64) {
        __builtin_memcpy(d, s, 64);
        d += 64, s += 64, len -= 64;
    }
    if (len)
        std::memcpy(d, s, len);
}

void payload_copy(const Packet& p, uint32_t off, uint8_t* dst, uint32_t len)
{
    payload_pieces(p, off, len, [&](const uint8_t* s, uint32_t n) {
        std::memcpy(dst, s, n);
        dst += n;
    });
}

}  // namespace

// ---- lookups and memory -------------------------------------------------

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

bool Core::read_db_record(uint32_t uar, uint32_t index, uint32_t* v)
{
    uint64_t per_uar = uint64_t(kIcmPageSize) << layout_.log_uarc_pages;
    if (uint64_t(index) * 8 >= per_uar)
        return false;
    uint8_t b[4];
    if (!icm_.read(uarc_record(uar, index), b, 4))
        return false;
    *v = be32(b);
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

// ---- CQEs and events ------------------------------------------------------

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
    // Everything but the owner byte first, then the owner byte: the driver
    // reads the entry only once it sees it software-owned.
    if (!tpt_access(q->lkey, q->pd, va, const_cast<uint8_t*>(e.data()), 31, true) ||
        !tpt_access(q->lkey, q->pd, va + 31, const_cast<uint8_t*>(e.data() + 31), 1, true)) {
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

// ---- QP state -------------------------------------------------------------

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

// ---- ports -----------------------------------------------------------------

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

// Copy packet payload [poff, poff+len) to region m at va (already checked).
bool Core::place(const Mpt& m, uint64_t va, const Packet& p, uint32_t poff, uint32_t len)
{
    // Fast path: one payload segment, one cached contiguous run, mappable.
    if (p.nseg >= 1 && poff + len <= p.seg[0].len && m.tc_gen == tpt_gen_ && va >= m.tc_va &&
        va - m.tc_va < m.tc_len && len <= m.tc_len - (va - m.tc_va) && !(m.flags & mpt::kFlagPhysical)) {
        if (uint8_t* d = mem_.map_range(m.tc_phys + (va - m.tc_va), len)) {
            copy_payload_bytes(d, p.seg[0].data + poff, len);
            return true;
        }
    }
    return mr_walk(m, va, len, [&](uint64_t gpa, uint32_t cnt) {
        if (uint8_t* d = mem_.map_range(gpa, cnt)) {
            payload_copy(p, poff, d, cnt);
        } else {
            bool good = true;
            uint64_t g = gpa;
            payload_pieces(p, poff, cnt, [&](const uint8_t* src, uint32_t c2) {
                good = good && mem_.write(g, src, c2);
                g += c2;
            });
            if (!good)
                return false;
        }
        poff += cnt;
        return true;
    });
}

// The source of an RC/UC packet is the QP's primary path: the QP's port,
// SLID = the remote LID the QP sends to (its path bits included), and, when
// either the path or the packet has a GRH, both have one and the SGID is the
// path's remote GID. (No alternate path is ever loaded: APM is a seam.)
bool Core::from_primary_path(unsigned port, const RxCtx& rx, const Qp& q) const
{
    if (port != (q.port ? q.port : 1u) || rx.slid != q.a.rlid)
        return false;
    if (bool(rx.grh) != q.a.grh)
        return false;
    return !rx.grh || std::memcmp(rx.grh + 8, q.a.rgid.data(), 16) == 0;
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
    if ((tr == iba::kTrRc || tr == iba::kTrUc) && st == tr && !from_primary_path(port, rx, q)) {
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
    IBEMU_DEBUG(cfg_.name, "opcode 0x%02x does not match QP 0x%x service %u", rx.opcode, q.qpn, q.service);
}

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

// ---- receive queues ---------------------------------------------------------

bool Core::rq_take(Qp& q, uint32_t* wqe_off, bool peek)
{
    if (q.a.srq) {
        Srq* s = srq_lookup(q.a.srqn);
        if (!s)
            return false;
        uint32_t head = 0;
        uint32_t uar = uint32_t(srqc::kUsrPage.get(s->ctx));
        if (!read_db_record(uar, uint32_t(srqc::kDbIndex.get(s->ctx)), &head))
            return false;
        uint32_t avail = (head - s->tail) & 0xffff;
        if (!avail)
            return false;
        *wqe_off = s->next_wqe;
        if (peek)
            return true;
        uint8_t nx[4];
        uint32_t lkey = uint32_t(srqc::kLkey.get(s->ctx));
        uint32_t pd = uint32_t(srqc::kPd.get(s->ctx));
        if (!tpt_access(lkey, pd, s->next_wqe, nx, 4, false))
            return false;
        s->next_wqe = be32(nx) & ~0x3fu;
        s->tail = (s->tail + 1) & 0xffff;
        if (s->limit_armed && avail - 1 < s->limit) {
            s->limit_armed = false;
            std::array<uint8_t, 24> ev{};
            put32(ev, 0, s->srqn);
            post_async_event(ev::kSrqLimit, 0, ev);
        }
        return true;
    }
    uint32_t head = 0;
    if (!read_db_record(q.a.usr_page, q.a.rcv_db_index, &head))
        return false;
    uint32_t avail = (head - q.r.rq_tail) & 0xffff;
    if (!avail)
        return false;
    if (avail > (1u << q.a.rq_log_size)) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x RQ doorbell record %u is %u ahead of a %u-entry RQ", q.qpn, head,
                          avail, 1u << q.a.rq_log_size);
        return false;
    }
    *wqe_off = (q.r.rq_tail & ((1u << q.a.rq_log_size) - 1)) << q.a.rq_log_stride;
    if (!peek)
        q.r.rq_tail = (q.r.rq_tail + 1) & 0xffff;
    return true;
}

bool Core::rq_scatter(Qp& q, uint32_t wqe_off, uint32_t off, const RxCtx& rx, uint32_t pay_off, uint32_t len,
                      const uint8_t* prefix, uint32_t prefix_len, uint8_t* syndrome)
{
    uint32_t lkey = q.a.wqe_lkey, pd = q.a.pd;
    unsigned stride = q.a.rq_log_stride;
    if (q.a.srq) {
        Srq* s = srq_lookup(q.a.srqn);
        if (!s) {
            *syndrome = cqe::kLocalQpOp;
            return false;
        }
        lkey = uint32_t(srqc::kLkey.get(s->ctx));
        pd = uint32_t(srqc::kPd.get(s->ctx));
        stride = unsigned(srqc::kLogStride.get(s->ctx)) + 4;
    }
    uint32_t bytes = std::min<uint32_t>(1u << stride, kMaxWqeBytes);
    uint8_t w[kMaxWqeBytes];
    if (!tpt_access(lkey, pd, wqe_off, w, bytes, false)) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: receive WQE at 0x%x unreadable", q.qpn, wqe_off);
        *syndrome = cqe::kLocalQpOp;
        return false;
    }
    // Walk the scatter list: first skip `off` bytes of it, then place the
    // prefix and the payload.
    uint32_t total = prefix_len + len;
    uint32_t done = 0;
    uint32_t skip = off;
    for (uint32_t s = 16; s + 16 <= bytes && done < total; s += 16) {
        uint32_t bc = be32(w + s);
        uint32_t key = be32(w + s + 4);
        uint64_t addr = be64(w + s + 8);
        if (key == wqe::kInvalLkey)
            break;
        bc &= 0x7fffffff;
        if (skip >= bc) {
            skip -= bc;
            continue;
        }
        uint64_t va = addr + skip;
        uint32_t room = bc - skip;
        skip = 0;
        uint32_t n = std::min(room, total - done);
        const Mpt* m = nullptr;
        if (mr_check(key, pd, va, n, kMptLocalWrite, &m) != Tpt::Ok) {
            *syndrome = cqe::kLocalProt;
            return false;
        }
        // Prefix part (UD GRH area).
        uint32_t k = 0;
        if (done < prefix_len) {
            k = std::min(n, prefix_len - done);
            if (prefix ? !mr_write(*m, va, prefix + done, k) : false) {
                *syndrome = cqe::kLocalAccess;
                return false;
            }
            done += k;
        }
        uint32_t rest = n - k;
        if (rest) {
            uint32_t poff = pay_off + (done - prefix_len);
            bool ok = mr_walk(*m, va + k, rest, [&](uint64_t gpa, uint32_t cnt) {
                if (uint8_t* d = mem_.map_range(gpa, cnt)) {
                    payload_copy(*rx.p, poff, d, cnt);
                    poff += cnt;
                    return true;
                }
                bool good = true;
                uint64_t g = gpa;
                payload_pieces(*rx.p, poff, cnt, [&](const uint8_t* src, uint32_t c2) {
                    good = good && mem_.write(g, src, c2);
                    g += c2;
                });
                poff += cnt;
                return good;
            });
            if (!ok) {
                *syndrome = cqe::kLocalAccess;
                return false;
            }
            done += rest;
        }
    }
    if (done < total) {
        *syndrome = cqe::kLocalLength;
        return false;
    }
    return true;
}

void Core::rq_complete(Qp& q, uint32_t wqe_off, uint32_t byte_cnt, uint8_t bth_op, uint32_t imm_or_pkey,
                       const RxCtx& rx, bool solicited)
{
    std::array<uint8_t, 32> e{};
    wbe32(&e[0], q.qpn);
    uint32_t src_qp = 0;
    if ((rx.opcode >> 5) == iba::kTrUd && rx.ext_len >= iba::kDethLen)
        src_qp = be32(rx.ext + 4) & 0xffffff;
    wbe32(&e[8], src_qp);
    e[12] = uint8_t(rx.sl << 4);
    Port& pt = ports_[q.port ? q.port - 1 : 0];
    e[13] = uint8_t((rx.grh ? 0x80 : 0) | (rx.dlid & ((1u << pt.lmc) - 1)));
    wbe16(&e[14], rx.slid);
    wbe32(&e[16], imm_or_pkey);
    wbe32(&e[20], byte_cnt);
    wbe32(&e[24], wqe_off);
    e[28] = bth_op;
    e[29] = 0;
    cqe_post(q.a.cqn_rcv, e, solicited);
}

// ---- UD receive ------------------------------------------------------------

void Core::rx_ud(unsigned port, RxCtx& rx, Qp& q)
{
    Port& pt = ports_[port - 1];
    if (q.state != QpState::Rtr && q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return;
    uint8_t o = rx.opcode & 0x1f;
    bool imm = o == iba::opc::kSendOnlyImm;
    if (o != iba::opc::kSendOnly && !imm) {
        ++db_.rx_dropped;
        return;
    }
    if (rx.ext_len < iba::kDethLen + (imm ? iba::kImmLen : 0u)) {
        ++pt.rcv_errors;
        return;
    }
    uint32_t qkey = be32(rx.ext);
    // QP0 ignores the Q_Key; QP1 takes only the well-known GSI Q_Key.
    uint32_t want = q.special == SpecialQp::Gsi ? iba::kQp1Qkey : q.a.qkey;
    if (q.special != SpecialQp::Smi && qkey != want) {
        if (pt.qkey_violations != 0xffff)
            ++pt.qkey_violations;
        trap_key_violation(port, TrapKind::BadQkey, rx, qkey, be32(rx.ext + 4) & 0xffffff);
        ++db_.rx_dropped;
        IBEMU_DEBUG(cfg_.name, "port %u: Q_Key 0x%08x violation on QP 0x%x", port, qkey, q.qpn);
        return;
    }
    if (rx.pay_len > q.a.mtu && q.special == SpecialQp::None) {
        ++db_.rx_dropped;
        return;
    }
    uint32_t w;
    if (!rq_take(q, &w, false)) {
        ++db_.rx_dropped;  // UD: no receive WQE, silently dropped
        return;
    }
    uint8_t syn = 0;
    uint8_t zeros[iba::kGrhLen] = {};
    const uint8_t* prefix = rx.grh ? rx.grh : zeros;
    if (!rq_scatter(q, w, 0, rx, 0, rx.pay_len, prefix, iba::kGrhLen, &syn)) {
        cqe_error(q, false, w, syn, q.a.cqn_rcv);
        if (syn != cqe::kLocalLength)
            qp_to_error(q, syn, false, 0);
        return;
    }
    uint32_t immv = imm ? be32(rx.ext + iba::kDethLen) : uint32_t(rx.pkey_index) << 16;
    rq_complete(q, w, rx.pay_len + iba::kGrhLen, rx.opcode, immv, rx, rx.se);
}

// ---- RC responder -----------------------------------------------------------

void Core::responder_nak(Qp& q, unsigned port, uint8_t code, uint32_t psn, uint32_t msn)
{
    send_ack(port, q, uint8_t(iba::kAethNak | code), psn, msn);
    // Class C responder errors (IBA 9.9.3.1.3): the QP goes to ERR with an
    // affiliated asynchronous error.
    if (code == iba::kNakRemoteAccess)
        qp_to_error(q, 0, false, ev::kWqAccess);
    else if (code == iba::kNakInvalidReq)
        qp_to_error(q, 0, false, ev::kWqInvalReq);
    else if (code == iba::kNakRemoteOp)
        qp_to_error(q, 0, false, 0);
}

void Core::rx_rc_request(unsigned port, RxCtx& rx, Qp& q)
{
    if (q.state != QpState::Rtr && q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return;
    QpRun& r = q.r;
    if (r.resp_nak) {
        ++db_.rx_dropped;  // a NAK that ends the QP is owed: nothing more is taken
        return;
    }
    using namespace iba::opc;
    uint8_t o = rx.opcode & 0x1f;
    int32_t d = iba::psn_diff(rx.psn, r.epsn);
    auto ack = [&](uint8_t syndrome, uint32_t psn) {
        RespEntry x;
        x.kind = RespEntry::Ack;
        x.port = uint8_t(port);
        x.syndrome = syndrome;
        x.psn = psn;
        x.msn = r.msn;
        respond(q, x);
    };
    // The largest message the QP takes: its msg_max, and never over 2^31.
    uint64_t msg_max = std::min<uint64_t>(uint64_t(1) << q.a.msg_max, 0x80000000ull);
    // A READ response owed for [va, va+len) from PSN psn; false if the
    // region refuses it.
    auto queue_read = [&](uint64_t va, uint32_t rkey, uint32_t len, uint32_t psn) {
        const Mpt* mr = nullptr;
        if (len && (!q.a.rre || mr_check(rkey, q.a.pd, va, len, kMptRemoteRead, &mr) != Tpt::Ok))
            return false;
        RespEntry x;
        x.kind = RespEntry::Read;
        x.port = uint8_t(port);
        x.psn = psn;
        x.msn = r.msn;
        x.va = va;
        x.rkey = rkey;
        x.len = len;
        x.npkts = len ? uint32_t((uint64_t(len) + q.a.mtu - 1) / q.a.mtu) : 1;
        x.mr = mr;
        x.mr_gen = obj_gen_;
        respond(q, x);
        return true;
    };
    if (d > 0) {
        if (!r.nak_sent) {
            r.nak_sent = true;
            ack(iba::kAethNak | iba::kNakPsnSeq, r.epsn);  // the PSN expected
        }
        return;
    }
    if (d < 0) {
        // Duplicate: answer again without executing twice. The requester
        // goes back to this PSN, so what is still owed from here on is
        // forgotten: it will be asked for again.
        while (r.resp_head != r.resp_tail &&
               iba::psn_diff(r.resp[(r.resp_head - 1) % r.resp.size()].psn, rx.psn) >= 0)
            --r.resp_head;
        if (o == kReadReq && rx.ext_len >= iba::kRethLen) {
            uint32_t len = be32(rx.ext + 12);
            if (len <= msg_max)
                queue_read(be64(rx.ext), be32(rx.ext + 8), len, rx.psn);
        } else if (o == kCmpSwap || o == kFetchAdd) {
            // Replayed from the saved result, never executed twice; one too
            // old to be remembered gets no answer.
            const QpRun::AtomicResult* ar = r.atomics.empty() ? nullptr : &r.atomics[rx.psn % kMaxOutstanding];
            if (ar && ar->psn == rx.psn) {
                RespEntry x;
                x.kind = RespEntry::Atomic;
                x.port = uint8_t(port);
                x.psn = rx.psn;
                x.msn = r.msn;
                x.orig = ar->orig;
                respond(q, x);
            }
        } else {
            ack(iba::kAethAck | iba::kAethCreditsInvalid, (r.epsn - 1) & iba::kPsnMask);
        }
        return;
    }
    r.nak_sent = false;
    const Mpt* m = nullptr;
    auto nak = [&](uint8_t code) {
        r.in_send = r.in_write = false;
        RespEntry x;
        x.kind = RespEntry::Nak;
        x.port = uint8_t(port);
        x.syndrome = code;
        x.psn = rx.psn;
        x.msn = r.msn;
        if (!respond(q, x))
            responder_nak(q, port, code, rx.psn, r.msn);
    };
    auto rnr = [&]() { ack(uint8_t(iba::kAethRnr | q.a.min_rnr_timer), rx.psn); };
    uint32_t mtu = q.a.mtu;
    bool last = false, has_imm = false;
    uint32_t imm = 0;
    switch (o) {
    case kSendFirst:
    case kSendOnly:
    case kSendOnlyImm: {
        if (r.in_send || r.in_write)
            return nak(iba::kNakInvalidReq);
        has_imm = o == kSendOnlyImm;
        if (has_imm && rx.ext_len < iba::kImmLen)
            return nak(iba::kNakInvalidReq);
        if (o == kSendFirst ? rx.pay_len != mtu : rx.pay_len > mtu)
            return nak(iba::kNakInvalidReq);
        uint32_t w;
        if (!rq_take(q, &w, false)) {
            rnr();
            return;
        }
        uint8_t syn = 0;
        if (!rq_scatter(q, w, 0, rx, 0, rx.pay_len, nullptr, 0, &syn)) {
            cqe_error(q, false, w, syn, q.a.cqn_rcv);
            nak(syn == cqe::kLocalLength ? iba::kNakInvalidReq : iba::kNakRemoteOp);  // the QP goes to ERR
            return;
        }
        if (o == kSendFirst) {
            r.in_send = true;
            r.rwqe = w;
            r.roff = rx.pay_len;
        } else {
            imm = has_imm ? be32(rx.ext) : 0;
            rq_complete(q, w, rx.pay_len, rx.opcode, imm, rx, rx.se);
            last = true;
        }
        break;
    }
    case kSendMiddle:
    case kSendLast:
    case kSendLastImm: {
        if (!r.in_send)
            return nak(iba::kNakInvalidReq);
        has_imm = o == kSendLastImm;
        if ((has_imm && rx.ext_len < iba::kImmLen) || (o == kSendMiddle ? rx.pay_len != mtu : rx.pay_len > mtu))
            return nak(iba::kNakInvalidReq);
        uint8_t syn = 0;
        if (!rq_scatter(q, r.rwqe, r.roff, rx, 0, rx.pay_len, nullptr, 0, &syn)) {
            r.in_send = false;
            cqe_error(q, false, r.rwqe, syn, q.a.cqn_rcv);
            nak(syn == cqe::kLocalLength ? iba::kNakInvalidReq : iba::kNakRemoteOp);  // the QP goes to ERR
            return;
        }
        r.roff += rx.pay_len;
        if (o != kSendMiddle) {
            r.in_send = false;
            imm = has_imm ? be32(rx.ext) : 0;
            rq_complete(q, r.rwqe, r.roff, rx.opcode, imm, rx, rx.se);
            last = true;
        }
        break;
    }
    case kWriteFirst:
    case kWriteOnly:
    case kWriteOnlyImm: {
        if (r.in_send || r.in_write || rx.ext_len < iba::kRethLen)
            return nak(iba::kNakInvalidReq);
        uint64_t va = be64(rx.ext);
        uint32_t rkey = be32(rx.ext + 8);
        uint32_t len = be32(rx.ext + 12);
        has_imm = o == kWriteOnlyImm;
        if (has_imm && rx.ext_len < iba::kRethLen + iba::kImmLen)
            return nak(iba::kNakInvalidReq);
        if (o == kWriteFirst ? (rx.pay_len != mtu || len <= mtu) : rx.pay_len != len)
            return nak(iba::kNakInvalidReq);
        if (len && (!q.a.rwe || mr_check(rkey, q.a.pd, va, len, kMptRemoteWrite, &m) != Tpt::Ok)) {
            IBEMU_DEBUG(cfg_.name, "QP 0x%x: RDMA WRITE rkey 0x%08x va 0x%llx len %u refused", q.qpn, rkey,
                        (unsigned long long)va, len);
            return nak(iba::kNakRemoteAccess);
        }
        uint32_t w = 0;
        if (has_imm && !rq_take(q, &w, true)) {
            rnr();
            return;
        }
        // The R_Key and bounds were good; memory the region maps that
        // cannot be written (an MTT entry not present, a page that is not
        // RAM) is the responder's own failure: remote operational error.
        if (rx.pay_len && !place(*m, va, *rx.p, 0, rx.pay_len))
            return nak(iba::kNakRemoteOp);
        if (o == kWriteFirst) {
            r.in_write = true;
            r.wva = va + rx.pay_len;
            r.wkey = rkey;
            r.wleft = len - rx.pay_len;
            r.wmr = m;
            r.wmr_gen = obj_gen_;
        } else {
            if (has_imm) {
                rq_take(q, &w, false);
                rq_complete(q, w, len, rx.opcode, be32(rx.ext + iba::kRethLen), rx, rx.se);
            }
            last = true;
        }
        break;
    }
    case kWriteMiddle:
    case kWriteLast:
    case kWriteLastImm: {
        if (!r.in_write)
            return nak(iba::kNakInvalidReq);
        has_imm = o == kWriteLastImm;
        if ((has_imm && rx.ext_len < iba::kImmLen) ||
            (o == kWriteMiddle ? (rx.pay_len != mtu || r.wleft <= mtu) : rx.pay_len != r.wleft))
            return nak(iba::kNakInvalidReq);
        if (r.wmr && r.wmr_gen == obj_gen_)
            m = r.wmr;  // the whole message was checked with WRITE First
        else if (mr_check(r.wkey, q.a.pd, r.wva, rx.pay_len, kMptRemoteWrite, &m) != Tpt::Ok)
            return nak(iba::kNakRemoteAccess);
        uint32_t w = 0;
        if (has_imm && !rq_take(q, &w, true)) {
            rnr();
            return;
        }
        if (!place(*m, r.wva, *rx.p, 0, rx.pay_len))
            return nak(iba::kNakRemoteOp);
        r.wva += rx.pay_len;
        r.wleft -= rx.pay_len;
        if (o != kWriteMiddle) {
            r.in_write = false;
            if (has_imm) {
                rq_take(q, &w, false);
                rq_complete(q, w, 0, rx.opcode, be32(rx.ext), rx, rx.se);
            }
            last = true;
        }
        break;
    }
    case kReadReq: {
        if (r.in_send || r.in_write || rx.ext_len < iba::kRethLen)
            return nak(iba::kNakInvalidReq);
        uint64_t va = be64(rx.ext);
        uint32_t rkey = be32(rx.ext + 8);
        uint32_t len = be32(rx.ext + 12);
        // Longer than the QP's largest message (msg_max, never over
        // 2^31), or more READs/atomics owed than its responder resources
        // (RRA_MAX): an invalid request, a class C error.
        if (len > msg_max)
            return nak(iba::kNakInvalidReq);
        if (resp_rd_atomic(r) >= (1u << q.a.rra_max))
            return nak(iba::kNakInvalidReq);
        uint32_t psn = rx.psn;
        uint32_t npkts = len ? uint32_t((uint64_t(len) + mtu - 1) / mtu) : 1;
        r.epsn = (r.epsn + npkts) & iba::kPsnMask;
        r.msn = (r.msn + 1) & iba::kPsnMask;
        if (!queue_read(va, rkey, len, psn)) {
            // Undo: the request is refused, not executed.
            r.epsn = psn;
            r.msn = (r.msn - 1) & iba::kPsnMask;
            return nak(iba::kNakRemoteAccess);
        }
        return;
    }
    case kCmpSwap:
    case kFetchAdd: {
        if (r.in_send || r.in_write || rx.ext_len < iba::kAtomicEthLen)
            return nak(iba::kNakInvalidReq);
        uint64_t va = be64(rx.ext);
        uint32_t rkey = be32(rx.ext + 8);
        uint64_t swap_add = be64(rx.ext + 12);
        uint64_t cmp = be64(rx.ext + 20);
        if (va & 7)
            return nak(iba::kNakInvalidReq);
        if (resp_rd_atomic(r) >= (1u << q.a.rra_max))
            return nak(iba::kNakInvalidReq);
        if (!q.a.rae || mr_check(rkey, q.a.pd, va, 8, kMptAtomic, &m) != Tpt::Ok)
            return nak(iba::kNakRemoteAccess);
        if (r.atomics.empty()) {
            if (!lazy_alloc(kMaxOutstanding * sizeof(QpRun::AtomicResult)))
                return nak(iba::kNakRemoteOp);  // the responder's own failure
            r.atomics.resize(kMaxOutstanding);
        }
        uint8_t b[8];
        if (!mr_read(*m, va, b, 8))
            return nak(iba::kNakRemoteOp);
        uint64_t orig = be64(b);
        uint64_t nv = o == kFetchAdd ? orig + swap_add : (orig == cmp ? swap_add : orig);
        wbe64(b, nv);
        if (!mr_write(*m, va, b, 8))
            return nak(iba::kNakRemoteOp);
        r.atomics[rx.psn % kMaxOutstanding] = {rx.psn, orig};
        r.epsn = (r.epsn + 1) & iba::kPsnMask;
        r.msn = (r.msn + 1) & iba::kPsnMask;
        RespEntry x;
        x.kind = RespEntry::Atomic;
        x.port = uint8_t(port);
        x.psn = rx.psn;
        x.msn = r.msn;
        x.orig = orig;
        respond(q, x);
        return;
    }
    default:
        return nak(iba::kNakInvalidReq);
    }
    r.epsn = (r.epsn + 1) & iba::kPsnMask;
    if (last)
        r.msn = (r.msn + 1) & iba::kPsnMask;
    if (last || rx.ackreq)
        ack(iba::kAethAck | iba::kAethCreditsInvalid, rx.psn);
}

// ---- UC receive -------------------------------------------------------------

void Core::rx_uc(unsigned port, RxCtx& rx, Qp& q)
{
    (void)port;
    if (q.state != QpState::Rtr && q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return;
    QpRun& r = q.r;
    using namespace iba::opc;
    uint8_t o = rx.opcode & 0x1f;
    bool first = o == kSendFirst || o == kSendOnly || o == kSendOnlyImm || o == kWriteFirst || o == kWriteOnly ||
                 o == kWriteOnlyImm;
    if (rx.psn != r.epsn) {
        // Lost packets: the message in progress is dropped silently and its
        // receive WQE serves the next message; a new one may start here.
        if (r.in_send) {
            r.in_send = false;
            r.uc_reuse = true;
        }
        r.in_write = false;
        if (!first)
            return;
    }
    r.epsn = (rx.psn + 1) & iba::kPsnMask;
    const Mpt* m = nullptr;
    uint32_t mtu = q.a.mtu;
    switch (o) {
    case kSendFirst:
    case kSendOnly:
    case kSendOnlyImm: {
        if (r.in_send) {
            r.in_send = false;
            r.uc_reuse = true;
        }
        uint32_t w;
        if (rx.pay_len > mtu)
            return;
        if (r.uc_reuse) {
            w = r.rwqe;
            r.uc_reuse = false;
        } else if (!rq_take(q, &w, false)) {
            return;
        }
        uint8_t syn = 0;
        if (!rq_scatter(q, w, 0, rx, 0, rx.pay_len, nullptr, 0, &syn)) {
            cqe_error(q, false, w, syn, q.a.cqn_rcv);
            return;
        }
        if (o == kSendFirst) {
            r.in_send = true, r.rwqe = w, r.roff = rx.pay_len;
        } else {
            uint32_t imm = o == kSendOnlyImm && rx.ext_len >= 4 ? be32(rx.ext) : 0;
            rq_complete(q, w, rx.pay_len, rx.opcode, imm, rx, rx.se);
        }
        return;
    }
    case kSendMiddle:
    case kSendLast:
    case kSendLastImm: {
        if (!r.in_send)
            return;
        uint8_t syn = 0;
        if (!rq_scatter(q, r.rwqe, r.roff, rx, 0, rx.pay_len, nullptr, 0, &syn)) {
            cqe_error(q, false, r.rwqe, syn, q.a.cqn_rcv);
            r.in_send = false;
            return;
        }
        r.roff += rx.pay_len;
        if (o != kSendMiddle) {
            r.in_send = false;
            uint32_t imm = o == kSendLastImm && rx.ext_len >= 4 ? be32(rx.ext) : 0;
            rq_complete(q, r.rwqe, r.roff, rx.opcode, imm, rx, rx.se);
        }
        return;
    }
    case kWriteFirst:
    case kWriteOnly:
    case kWriteOnlyImm:
    case kWriteMiddle:
    case kWriteLast:
    case kWriteLastImm: {
        bool is_first = o == kWriteFirst || o == kWriteOnly || o == kWriteOnlyImm;
        uint64_t va;
        uint32_t rkey, len;
        unsigned ext_off = 0;
        if (is_first) {
            if (rx.ext_len < iba::kRethLen)
                return;
            va = be64(rx.ext), rkey = be32(rx.ext + 8), len = be32(rx.ext + 12);
            ext_off = iba::kRethLen;
            r.in_write = true, r.wva = va, r.wkey = rkey, r.wleft = len;
        } else if (!r.in_write) {
            return;
        }
        if (rx.pay_len > r.wleft ||
            (rx.pay_len && (!q.a.rwe || mr_check(r.wkey, q.a.pd, r.wva, rx.pay_len, kMptRemoteWrite, &m) != Tpt::Ok))) {
            r.in_write = false;
            return;
        }
        if (rx.pay_len && !place(*m, r.wva, *rx.p, 0, rx.pay_len)) {
            // UC has no NAK: the message is dropped.
            r.in_write = false;
            ++db_.rx_dropped;
            return;
        }
        r.wva += rx.pay_len;
        r.wleft -= rx.pay_len;
        bool is_last = o == kWriteOnly || o == kWriteOnlyImm || o == kWriteLast || o == kWriteLastImm;
        if (is_last) {
            r.in_write = false;
            if (o == kWriteOnlyImm || o == kWriteLastImm) {
                uint32_t w;
                if (rx.ext_len >= ext_off + 4 && rq_take(q, &w, false))
                    rq_complete(q, w, 0, rx.opcode, be32(rx.ext + ext_off), rx, rx.se);
            }
        }
        return;
    }
    default:
        return;
    }
}

// ---- RC requester: responses ---------------------------------------------------

void Core::rc_ack_upto(Qp& q, uint32_t psn, bool data_ok)
{
    QpRun& r = q.r;
    bool progress = false;
    while (r.out_head != r.out_tail) {
        SendEntry& e = r.out[r.out_tail % kMaxOutstanding];
        if (iba::psn_diff(e.last_psn, psn) > 0)
            break;
        if (is_rc_read_or_atomic(e.op) && !data_ok)
            break;
        if (e.signaled)
            cqe_send(q, e.wqe, e.op, e.op == wqe::kRdmaRead ? e.len : 0);
        ++r.out_tail;
        progress = true;
    }
    if (progress) {
        r.retries = q.a.retry_cnt;
        r.rnr_retries = q.a.rnr_retry;
        r.last_acked = psn;
    }
    if (r.out_head == r.out_tail) {
        if (!r.rnr_wait)
            r.deadline = UINT64_MAX;
        if (q.state == QpState::Sqd && r.drained_event) {
            r.drained_event = false;
            qp_event(ev::kSqDrained, q.qpn);
        }
    } else if (progress && !r.rnr_wait) {
        if (uint64_t t = ack_timeout_ns(q.a.ackto))
            arm_timer(q, now() + t);
    }
    if (progress && r.sq_pending && q.state == QpState::Rts)
        sq_progress(q);
}

void Core::rx_rc_response(unsigned port, RxCtx& rx, Qp& q)
{
    (void)port;
    if (q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return;
    QpRun& r = q.r;
    using namespace iba::opc;
    uint8_t o = rx.opcode & 0x1f;
    bool has_aeth = o == kAck || o == kAtomicAck || o == kReadRespFirst || o == kReadRespLast || o == kReadRespOnly;
    if (has_aeth && rx.ext_len < iba::kAethLen)
        return;
    uint8_t syn = has_aeth ? rx.ext[0] : 0;
    if (o == kAck) {
        switch (syn & 0x60) {
        case iba::kAethAck:
            rc_ack_upto(q, rx.psn, false);
            return;
        case iba::kAethRnr: {
            rc_ack_upto(q, (rx.psn - 1) & iba::kPsnMask, false);
            if (r.out_head == r.out_tail)
                return;
            if (r.rnr_retries == 0) {
                qp_to_error(q, cqe::kRnrRetryExc, true, 0);
                return;
            }
            if (q.a.rnr_retry != 7)
                --r.rnr_retries;
            r.rnr_wait = true;
            arm_timer(q, now() + iba::rnr_timer_us(syn & 0x1f) * 1000);
            return;
        }
        case iba::kAethNak: {
            rc_ack_upto(q, (rx.psn - 1) & iba::kPsnMask, false);
            if (r.out_head == r.out_tail)
                return;
            uint8_t code = syn & 0x1f;
            if (code == iba::kNakPsnSeq) {
                // Waiting out an RNR NAK already: that retry resends anyway.
                if (!r.rnr_wait)
                    rc_retransmit(q);
                return;
            }
            uint8_t s = code == iba::kNakInvalidReq     ? cqe::kRemoteInvalReq
                        : code == iba::kNakRemoteAccess ? cqe::kRemoteAccess
                                                        : cqe::kRemoteOp;
            qp_to_error(q, s, true, 0);
            return;
        }
        default:
            return;
        }
    }
    // READ responses and atomic ACKs belong to the oldest outstanding
    // READ/atomic; what came before it is acknowledged implicitly.
    uint32_t idx = r.out_tail;
    while (idx != r.out_head && !is_rc_read_or_atomic(r.out[idx % kMaxOutstanding].op))
        ++idx;
    if (idx == r.out_head)
        return;
    SendEntry& e = r.out[idx % kMaxOutstanding];
    if (iba::psn_diff(rx.psn, e.first_psn) < 0 || iba::psn_diff(rx.psn, e.last_psn) > 0)
        return;  // stale
    rc_ack_upto(q, (e.first_psn - 1) & iba::kPsnMask, false);
    if (r.out_tail != idx)
        return;
    WqeView* wp = nullptr;
    WqeView w;
    w.op = e.op;
    unsigned seg0 = 0;
    if (!sq_fetch(q, e.wqe, e.size, w) || (w.op = e.op, !parse_segments(w, q.service, false, &seg0)) ||
        parse_gather(q, w, seg0, false)) {
        qp_to_error(q, cqe::kLocalQpOp, true, ev::kWqCatas);
        return;
    }
    wp = &w;
    if (o == kAtomicAck) {
        if (e.op == wqe::kRdmaRead || rx.ext_len < iba::kAethLen + iba::kAtomicAckLen)
            return;
        const uint8_t* orig = rx.ext + iba::kAethLen;
        if (wp->nsge && wp->sge[0].mr) {
            const Sge& s = wp->sge[0];
            if (s.len < 8 || !mr_write(*s.mr, s.addr, orig, 8)) {
                qp_to_error(q, cqe::kLocalProt, true, 0);
                return;
            }
        }
        e.got = 8;
        rc_ack_upto(q, e.last_psn, true);
        return;
    }
    if (e.op != wqe::kRdmaRead)
        return;
    uint32_t mtu = q.a.mtu;
    uint32_t expect = (e.first_psn + e.got / mtu) & iba::kPsnMask;
    if (rx.psn != expect)
        return;  // out of order: the ACK timeout retries the READ
    bool lastp = o == kReadRespLast || o == kReadRespOnly;
    uint32_t remaining = e.len - e.got;
    if ((lastp ? rx.pay_len != remaining : (rx.pay_len != mtu || remaining <= mtu))) {
        qp_to_error(q, cqe::kBadResp, true, 0);
        return;
    }
    // Scatter into the local SGEs at offset e.got.
    uint32_t skip = e.got, done = 0;
    for (unsigned i = 0; i < wp->nsge && done < rx.pay_len; ++i) {
        const Sge& s = wp->sge[i];
        if (skip >= s.len) {
            skip -= s.len;
            continue;
        }
        uint32_t n = std::min(s.len - skip, rx.pay_len - done);
        const Mpt* m = nullptr;
        if (mr_check(s.lkey, q.a.pd, s.addr + skip, n, kMptLocalWrite, &m) != Tpt::Ok) {
            qp_to_error(q, cqe::kLocalProt, true, 0);
            return;
        }
        if (!place(*m, s.addr + skip, *rx.p, done, n)) {
            qp_to_error(q, cqe::kLocalAccess, true, 0);
            return;
        }
        done += n;
        skip = 0;
    }
    e.got += rx.pay_len;
    if (lastp)
        rc_ack_upto(q, e.last_psn, true);
    else if (uint64_t t = ack_timeout_ns(q.a.ackto))
        arm_timer(q, now() + t);
}

}  // namespace ibemu::mthca
