// SPDX-License-Identifier: GPL-2.0
//
// The requester role of the QP engine (rxe's req.c): the send doorbell,
// fetching and parsing send WQEs (the mem-free layouts of mthca_wqe.h: a
// "next" segment, then remote-address / atomic / UD address-vector
// segments, then data segments), and packetising messages per transport
// (RC, UC, UD and the MLX transport of QP0/QP1). Responses to what it sends
// are the completer's (qp_completer.cc).
//
// A WQE's opcode and size are not in the WQE itself: they are in the "next"
// segment of the WQE before it (or, for the first WQE of a doorbell, in the
// doorbell). The engine follows that chain only as far as the doorbells
// have counted WQEs.
#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/iba.h"
#include "hca/qp_engine.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {

using namespace qpe;

// ---- WQE fetch -------------------------------------------------------------

bool Core::sq_fetch(Qp& q, uint32_t off, uint8_t size, WqeView& w)
{
    // Reset the scalars only: buf and sge are filled before use.
    w.op = 0;
    w.raddr = 0, w.rkey = 0, w.swap_add = 0, w.compare = 0;
    w.av = nullptr;
    w.dqpn = 0, w.qkey = 0;
    w.nsge = 0;
    w.len = 0;
    w.off = off;
    w.size = size;
    uint32_t stride = 1u << q.a.sq_log_stride;
    uint32_t sq_bytes = (1u << q.a.sq_log_size) << q.a.sq_log_stride;
    if (off < q.a.send_wqe_offset || off - q.a.send_wqe_offset >= sq_bytes || (off & 63) ||
        ((off - q.a.send_wqe_offset) & (stride - 1))) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: send WQE address 0x%x outside the SQ", q.qpn, off);
        return false;
    }
    uint32_t bytes = uint32_t(size) * 16;
    if (bytes < 16 || bytes > stride || bytes > sizeof w.buf) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: send WQE size %u (stride %u)", q.qpn, bytes, stride);
        return false;
    }
    if (!tpt_access(q.a.wqe_lkey, q.a.pd, off, w.buf, bytes, false)) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: send WQE at 0x%x unreadable through lkey 0x%08x", q.qpn, off,
                          q.a.wqe_lkey);
        return false;
    }
    uint32_t nda = be32(w.buf);
    uint32_t nds = be32(w.buf + 4);
    w.next_off = nda & ~0x3fu;
    w.next_op = uint8_t(nda & 0x1f);
    w.next_size = uint8_t(nds & 0x3f);
    w.flags = be32(w.buf + 8);
    w.imm = be32(w.buf + 12);
    return true;
}

// Parse the segments after the "next" segment for opcode w.op.
bool Core::parse_segments(WqeView& w, uint8_t service, unsigned* seg_start)
{
    unsigned o = wqe::kNextSegLen;
    unsigned end = unsigned(w.size) * 16;
    auto need = [&](unsigned n) { return o + n <= end; };
    switch (service) {
    case uint8_t(QpService::Rc):
    case uint8_t(QpService::Uc):
        if (w.op == wqe::kRdmaWrite || w.op == wqe::kRdmaWriteImm || w.op == wqe::kRdmaRead) {
            if (!need(wqe::kRaddrSegLen))
                return false;
            w.raddr = be64(w.buf + o);
            w.rkey = be32(w.buf + o + 8);
            o += wqe::kRaddrSegLen;
        } else if (w.op == wqe::kAtomicCs || w.op == wqe::kAtomicFa) {
            if (!need(wqe::kRaddrSegLen + wqe::kAtomicSegLen))
                return false;
            w.raddr = be64(w.buf + o);
            w.rkey = be32(w.buf + o + 8);
            w.swap_add = be64(w.buf + o + 16);
            w.compare = be64(w.buf + o + 24);
            o += wqe::kRaddrSegLen + wqe::kAtomicSegLen;
        }
        break;
    case uint8_t(QpService::Ud):
        if (!need(wqe::kUdSegLen))
            return false;
        w.av = w.buf + o;
        w.dqpn = be32(w.buf + o + 32) & 0xffffff;
        w.qkey = be32(w.buf + o + 36);
        o += wqe::kUdSegLen;
        break;
    default:
        break;
    }
    *seg_start = o;
    return true;
}

// ---- the send doorbell and the SQ engine -----------------------------------

void Core::send_doorbell(Qp& q, uint32_t hi, uint32_t lo)
{
    QpRun& r = q.r;
    uint32_t nreq = hi >> 24;
    uint32_t head = (hi >> 8) & 0xffff;
    uint8_t op0 = uint8_t(hi & 0x1f);
    uint8_t size0 = uint8_t(lo & 0x3f);
    if (!nreq)
        return;
    if (!q.a.has_sq) {
        IBEMU_GUEST_ERROR(cfg_.name, "send doorbell for QP 0x%x in %s, which has no send queue", q.qpn,
                          qp_state_name(q.state));
        return;
    }
    uint32_t sq_n = 1u << q.a.sq_log_size;
    if (!r.sq_pending || !r.sq_have_next) {
        r.sq_next_wqe = ((head & (sq_n - 1)) << q.a.sq_log_stride) + q.a.send_wqe_offset;
        r.sq_next_op = op0;
        r.sq_next_size = size0;
        r.sq_have_next = true;
    }
    if (r.sq_pending + nreq > sq_n) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: %u send WQEs rung on a %u-entry SQ", q.qpn, r.sq_pending + nreq, sq_n);
        nreq = sq_n - std::min(r.sq_pending, sq_n);
    }
    r.sq_pending += nreq;
    if (q.state == QpState::Err) {
        qp_flush(q);
        return;
    }
    if (q.state == QpState::Rts)
        sq_progress(q);
}

namespace {

// A message that takes a receive WQE at the responder, the messages
// end-to-end credits count (IBA 9.7.7.2).
bool consumes_rwqe(uint8_t op)
{
    return op == wqe::kSend || op == wqe::kSendImm || op == wqe::kRdmaWriteImm;
}

// May the RC requester start its next message, a SEND or RDMA WRITE with
// immediate, now (IBA 9.7.7.2, end-to-end flow control)? Within the
// credits the responder advertised: its sequence number is not beyond the
// limit (MSN + credits of the newest ACK). Beyond them only as the one
// message a requester without credits may send to learn whether receive
// WQEs were posted since: when nothing else is unacknowledged. The
// responder answers it with an ACK carrying its credits, or with an RNR
// NAK, retried as any RNR NAK is.
bool credits_allow(const QpRun& r)
{
    if (r.credits_unlimited)
        return true;
    if (iba::psn_diff((r.ssn + 1) & iba::kPsnMask, r.lsn) <= 0)
        return true;
    return r.out_head == r.out_tail;
}

unsigned rd_atomic_in_flight(const QpRun& r)
{
    unsigned n = 0;
    for (uint32_t i = r.out_tail; i != r.out_head; ++i)
        n += is_read_or_atomic(r.out[i % kMaxOutstanding].op);
    return n;
}

// Packets a started WQE sends: one request for a READ or an atomic, else
// one per MTU of the message (the PSNs it takes).
uint32_t tx_packets(const SendEntry& e)
{
    if (is_read_or_atomic(e.op))
        return 1;
    return ((e.last_psn - e.first_psn) & iba::kPsnMask) + 1;
}

}  // namespace

// The SQ engine. One call sends at most kSqBudget packets: first what the
// started WQEs (the out ring from tx_idx on) still owe, then new WQEs. When
// the budget is spent with work left, poll() calls again, so one doorbell
// (one MMIO write) never makes the model run for long.
void Core::sq_progress(Qp& q)
{
    QpRun& r = q.r;
    if (r.sq_busy) {
        r.sq_again = true;
        return;
    }
    r.sq_busy = true;
    r.sq_resume = false;
    r.sq_blocked = false;
    r.budget = kSqBudget;
    do {
        r.sq_again = false;
        sq_pump(q, nullptr);
        while (r.budget && !r.sq_blocked && r.tx_idx == r.out_head && r.sq_pending && r.sq_have_next &&
               q.state == QpState::Rts && !r.rnr_wait) {
            bool rc = q.service == uint8_t(QpService::Rc);
            if (r.out_head - r.out_tail >= kMaxOutstanding)
                break;
            if (rc && is_read_or_atomic(r.sq_next_op) && rd_atomic_in_flight(r) >= (1u << q.a.sra_max))
                break;  // the initiator depth (max_rd_atomic): resumed by the responses
            if (rc && consumes_rwqe(r.sq_next_op)) {
                if (!credits_allow(r)) {
                    // No end-to-end credits: resumed by the ACK that brings
                    // some (rx_rc_response) or acknowledges the rest (the
                    // probe).
                    if (!r.credit_wait)
                        ++db_.credit_waits;
                    r.credit_wait = true;
                    break;
                }
                r.credit_wait = false;
            }
            WqeView w;
            uint32_t off = r.sq_next_wqe;
            if (!sq_fetch(q, off, r.sq_next_size, w)) {
                // Unusable WQE: it completes in error, the QP goes to ERR.
                r.sq_pending--;
                r.sq_have_next = false;
                cqe_error(q, true, off, cqe::kLocalQpOp, q.a.cqn_snd);
                qp_to_error(q, cqe::kLocalQpOp, true, ev::kWqCatas);
                break;
            }
            w.op = r.sq_next_op;
            if ((q.service == uint8_t(QpService::Ud) && !ud_tx_room(q, w)) ||
                (q.service == uint8_t(QpService::Mlx) && !mlx_tx_room(q, w))) {
                // No link credits for the datagram (IBA 7.9): the WQE
                // stays next, poll() goes on after tx_ready. (UD sends
                // used to go regardless, queued past a full VL's credits:
                // over_credit.)
                r.sq_blocked = true;
                break;
            }
            // Advance the chain before executing: execution may re-enter.
            r.sq_pending--;
            if (r.sq_pending) {
                r.sq_next_wqe = w.next_off;
                r.sq_next_op = w.next_op;
                r.sq_next_size = w.next_size;
            } else {
                r.sq_have_next = false;
            }
            uint8_t syn = sq_execute(q, w);
            if (!syn && q.service != uint8_t(QpService::Rc) && q.service != uint8_t(QpService::Uc) && r.budget)
                --r.budget;  // UD and MLX: one packet
            if (syn) {
                cqe_error(q, true, w.off, syn, q.a.cqn_snd);
                // RC goes to ERR; UD/UC (and MLX) only stop their send
                // queue in SQE (IBA 10.3.1), recovered with SQERR2RTS.
                if (q.service == uint8_t(QpService::Rc))
                    qp_to_error(q, syn, true, 0);
                else
                    qp_to_sqe(q);
                break;
            }
        }
    } while (r.sq_again && r.budget && !r.sq_blocked && (q.state == QpState::Rts || q.state == QpState::Sqd));
    r.sq_busy = false;
    if (r.sq_blocked && (q.state == QpState::Rts || q.state == QpState::Sqd || q.state == QpState::Sqe)) {
        // No link credits: poll() goes on once the port's wire says so.
        r.sq_resume = true;
    } else if (!r.budget && (q.state == QpState::Rts || q.state == QpState::Sqd)) {
        // Spent: the rest goes from poll(), at once.
        r.sq_resume = true;
        next_deadline_ = std::min(next_deadline_, now());
    }
    if (q.state == QpState::Sqd && r.out_head == r.out_tail && r.drained_event) {
        r.drained_event = false;
        qp_event(ev::kSqDrained, q.qpn);
    }
}

// Send what the started WQEs still owe, within the budget. `fresh` is the
// parsed WQE just executed (saves fetching it again).
void Core::sq_pump(Qp& q, const WqeView* fresh)
{
    QpRun& r = q.r;
    bool sent_any = false;
    while (r.budget && (q.state == QpState::Rts || q.state == QpState::Sqd || q.state == QpState::Sqe)) {
        // Completions (or a flush) may have moved the tail past tx_idx.
        if (r.tx_idx - r.out_tail > r.out_head - r.out_tail)
            r.tx_idx = r.out_tail;
        if (r.tx_idx == r.out_head)
            break;
        uint32_t idx = r.tx_idx;
        SendEntry& e = r.out[idx % kMaxOutstanding];
        uint32_t total = tx_packets(e);
        if (e.sent < total) {
            WqeView w;
            const WqeView* wp = fresh && fresh->off == e.wqe && e.sent == 0 ? fresh : nullptr;
            fresh = nullptr;
            if (!wp) {
                unsigned o = 0;
                if (!sq_fetch(q, e.wqe, e.size, w)) {
                    qp_to_error(q, cqe::kLocalQpOp, true, ev::kWqCatas);
                    return;
                }
                w.op = e.op;
                if (!parse_segments(w, q.service, &o) || parse_gather(q, w, o, false) != 0) {
                    qp_to_error(q, cqe::kLocalProt, true, 0);
                    return;
                }
                if (e.op == wqe::kAtomicCs || e.op == wqe::kAtomicFa)
                    w.len = 8;
                wp = &w;
            }
            uint32_t gen = r.tx_gen;
            sent_any = true;
            if (!emit_message(q, *wp, idx, total))
                return;  // a gather failure took the QP to ERR
            if (r.tx_gen != gen || r.tx_idx != idx)
                continue;  // restarted (go-back-N) or flushed meanwhile
            if (e.sent < total)
                break;  // budget spent
        }
        ++r.tx_idx;
        if (q.service == uint8_t(QpService::Uc) && r.out_tail == idx) {
            // UC is done with a message once it is sent.
            if (e.signaled)
                cqe_send(q, e.wqe, e.op, 0);
            ++r.out_tail;
        }
    }
    if (sent_any && q.service == uint8_t(QpService::Rc) && r.out_head != r.out_tail && !r.rnr_wait)
        if (uint64_t t = ack_timeout_ns(q.a.ackto))
            arm_timer(q, now() + t);  // counted from the last request sent
}

// Build the gather list of w's data segments; a syndrome on failure.
uint8_t Core::parse_gather(Qp& q, WqeView& w, unsigned o, bool mlx)
{
    unsigned end = unsigned(w.size) * 16;
    bool scatter = w.op == wqe::kRdmaRead || w.op == wqe::kAtomicCs || w.op == wqe::kAtomicFa;
    for (; o + 16 <= end; o += 16) {
        uint32_t bc = be32(w.buf + o);
        if (bc & wqe::kInlineBit) {
            uint32_t n = bc & 0x3ff;
            if (mlx) {  // the ICRC placeholder of an MLX WQE
                o += ((4 + n + 15) & ~15u) - 16;
                continue;
            }
            // Inline data follows the byte count directly.
            if (o + 4 + n > end || w.nsge >= kMaxSge)
                return cqe::kLocalLength;
            w.sge[w.nsge++] = {n, kInlineKey, uint64_t(o + 4), nullptr};
            w.len += n;
            o += ((4 + n + 15) & ~15u) - 16;
            continue;
        }
        uint32_t lkey = be32(w.buf + o + 4);
        uint64_t addr = be64(w.buf + o + 8);
        if (lkey == wqe::kInvalLkey && bc == 0)
            break;
        if (w.nsge >= kMaxSge)
            return cqe::kLocalLength;
        const Mpt* m = nullptr;
        Tpt t = bc ? mr_check(lkey, q.a.pd, addr, bc, scatter ? kMptLocalWrite : 0, &m) : Tpt::Ok;
        if (t != Tpt::Ok) {
            IBEMU_DEBUG(cfg_.name, "QP 0x%x: SGE lkey 0x%08x va 0x%llx len %u refused: %s", q.qpn, lkey,
                        (unsigned long long)addr, bc, tpt_name(t));
            return cqe::kLocalProt;
        }
        w.sge[w.nsge++] = {bc, lkey, addr, m};
        w.len += bc;
    }
    if (w.len > 0x80000000ull)
        return cqe::kLocalLength;
    return 0;
}

bool Core::gather_range(const WqeView& w, uint64_t off, uint32_t n, Gather& g, unsigned first_sge)
{
    for (unsigned i = first_sge; i < w.nsge && n; ++i) {
        const Sge& s = w.sge[i];
        if (off >= s.len) {
            off -= s.len;
            continue;
        }
        uint32_t k = uint32_t(std::min<uint64_t>(s.len - off, n));
        if (!s.mr) {
            g.seg(w.buf + s.addr + off, k);
        } else if (!mr_walk(*s.mr, s.addr + off, k, [&](uint64_t gpa, uint32_t cnt) { return g.gpa(gpa, cnt); })) {
            return false;
        }
        n -= k;
        off = 0;
    }
    return g.ok && n == 0;
}

// Link credits for the UD send WQE w (fetched, not yet executed): its
// address vector names the port, DLID and SL; the payload is at most the
// path MTU. A WQE the send would refuse anyway is let through to fail
// there.
bool Core::ud_tx_room(Qp& q, WqeView& w)
{
    unsigned o = 0;
    if (!parse_segments(w, q.service, &o) || !w.av)
        return true;
    const uint8_t* av = w.av;
    Route rt;
    rt.port = av[0];
    if (rt.port < 1 || rt.port > num_ports_)
        rt.port = q.port ? q.port : 1;
    rt.dlid = be16(av + 6);
    rt.sl = uint8_t(be32(av + 12) >> 28);
    rt.grh = av[5] & 0x80;
    return tx_room(rt, q.a.mtu);
}

// Link credits for the MLX send WQE w (a QP1 GMP, or a QP0 SMP on a data
// VL): the MLX segment names the DLID (rlid, the high half of the word the
// other services use for immediate data) and the SL. A MAD is at most 256
// bytes after a GRH, BTH and DETH. VL15 takes no credits.
bool Core::mlx_tx_room(Qp& q, const WqeView& w)
{
    if (w.flags & wqe::kMlxVl15)
        return true;
    Route rt;
    rt.port = q.port ? q.port : 1;
    rt.dlid = uint16_t(w.imm >> 16);
    rt.sl = uint8_t((w.flags >> 8) & 0xf);
    rt.grh = true;
    return tx_room(rt, iba::kDethLen + 256);
}

uint8_t Core::sq_execute(Qp& q, WqeView& w)
{
    bool mlx = q.service == uint8_t(QpService::Mlx);
    uint8_t svc = mlx ? uint8_t(QpService::Mlx) : q.service;
    bool op_ok;
    switch (svc) {
    case uint8_t(QpService::Rc):
        op_ok = w.op == wqe::kSend || w.op == wqe::kSendImm || w.op == wqe::kRdmaWrite ||
                w.op == wqe::kRdmaWriteImm || w.op == wqe::kRdmaRead || w.op == wqe::kAtomicCs ||
                w.op == wqe::kAtomicFa;
        break;
    case uint8_t(QpService::Uc):
        op_ok = w.op == wqe::kSend || w.op == wqe::kSendImm || w.op == wqe::kRdmaWrite || w.op == wqe::kRdmaWriteImm;
        break;
    default:
        op_ok = w.op == wqe::kSend || w.op == wqe::kSendImm;
        break;
    }
    if (!op_ok) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: send opcode 0x%02x not valid for service %s", q.qpn, w.op,
                          qp_service_name(svc));
        return cqe::kLocalQpOp;
    }
    unsigned o = 0;
    if (!parse_segments(w, svc, &o))
        return cqe::kLocalLength;
    if (uint8_t s = parse_gather(q, w, o, mlx))
        return s;
    bool signaled = (w.flags & wqe::kFlagCqUpdate) || q.a.sig_all;
    bool se = w.flags & wqe::kFlagSolicit;
    const Port& pt = ports_[(q.port ? q.port : 1) - 1];
    uint16_t pkey = pt.pkeys[q.a.pkey_index % kPkeyTableLen];

    if (mlx) {
        if ((w.flags & wqe::kMlxVl15) && q.special != SpecialQp::Smi) {
            // VL15 is for subnet management packets, which QP0
            // alone sends: a GMP or a hostile WQE on QP1 may not use it.
            IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: MLX send on VL15 from a QP other than QP0", q.qpn);
            return cqe::kLocalQpOp;
        }
        // The driver built LRH..DETH itself in the first gather entry.
        if (!w.nsge || w.sge[0].len < iba::kLrhLen + iba::kBthLen || w.sge[0].len > Packet::kMaxHdr)
            return cqe::kLocalLength;
        Packet& p = tx_packet();
        Gather g{*this, p, bounce()};
        if (w.sge[0].mr) {
            if (!mr_read(*w.sge[0].mr, w.sge[0].addr, p.hdr.data(), w.sge[0].len))
                return cqe::kLocalProt;
        } else {
            std::memcpy(p.hdr.data(), w.buf + w.sge[0].addr, w.sge[0].len);
        }
        p.hdr_len = uint16_t(w.sge[0].len);
        uint32_t plen = uint32_t(w.len - w.sge[0].len);
        if (!gather_range(w, 0, plen, g, 1))
            return cqe::kLocalProt;
        mlx_fixup(q.port, p, w.flags);
        transmit(q.port, p);
        if (signaled)
            cqe_send(q, w.off, w.op, 0);
        return 0;
    }

    if (svc == uint8_t(QpService::Ud)) {
        const uint8_t* av = w.av;
        uint8_t port = uint8_t(av[0]);
        uint32_t av_pd = be32(av) & 0xffffff;
        if (av_pd != q.a.pd)
            return cqe::kLocalProt;
        if (port < 1 || port > num_ports_)
            port = q.port ? q.port : 1;
        if (w.len > q.a.mtu)
            return cqe::kLocalLength;
        Route rt;
        rt.port = port;
        rt.dlid = be16(av + 6);
        uint32_t stf = be32(av + 12);
        rt.sl = uint8_t(stf >> 28);
        rt.path_bits = av[5] & 0x7f;
        rt.grh = av[5] & 0x80;
        rt.dgid = av + 16;
        rt.hop = av[11];
        rt.tclass = uint8_t(stf >> 20);
        rt.flow = stf & 0xfffff;
        Packet& p = tx_packet();
        bool imm = w.op == wqe::kSendImm;
        size_t h = build_headers(p, rt, imm ? 0x65 : 0x64, se, pkey, w.dqpn, false, q.r.npsn);
        q.r.npsn = (q.r.npsn + 1) & iba::kPsnMask;
        uint32_t qkey = (w.qkey & 0x80000000u) ? q.a.qkey : w.qkey;
        wbe32(p.hdr.data() + h, qkey);
        wbe32(p.hdr.data() + h + 4, q.qpn);
        h += iba::kDethLen;
        if (imm) {
            wbe32(p.hdr.data() + h, w.imm);
            h += iba::kImmLen;
        }
        Gather g{*this, p, bounce()};
        if (!gather_range(w, 0, uint32_t(w.len), g, 0))
            return cqe::kLocalProt;
        finish_packet(p, h);
        transmit(port, p);
        if (signaled)
            cqe_send(q, w.off, w.op, 0);
        return 0;
    }

    // RC / UC: the WQE goes on the out ring; sq_pump sends its packets.
    uint64_t mtu = q.a.mtu;
    uint32_t npkts;
    if (w.op == wqe::kAtomicCs || w.op == wqe::kAtomicFa) {
        if (!w.nsge || w.sge[0].len < 8)
            return cqe::kLocalLength;
        w.len = 8;
        npkts = 1;
    } else {
        npkts = w.len ? uint32_t((w.len + mtu - 1) / mtu) : 1;  // w.len <= 2^31: no wrap
    }
    QpRun& r = q.r;
    if (r.out.empty()) {
        if (!lazy_alloc(kMaxOutstanding * sizeof(SendEntry)))
            return cqe::kLocalQpOp;
        r.out.resize(kMaxOutstanding);
    }
    SendEntry& e = r.out[r.out_head % kMaxOutstanding];
    e = SendEntry{};
    e.wqe = w.off;
    e.op = w.op;
    e.size = w.size;
    e.signaled = signaled;
    e.first_psn = r.npsn;
    e.last_psn = (r.npsn + npkts - 1) & iba::kPsnMask;
    e.len = uint32_t(w.len);
    r.npsn = (r.npsn + npkts) & iba::kPsnMask;
    ++r.out_head;
    if (q.service == uint8_t(QpService::Rc)) {
        // One more message in the responder's MSN; one that takes no
        // receive WQE moves the credit limit along with it.
        r.ssn = (r.ssn + 1) & iba::kPsnMask;
        if (!consumes_rwqe(w.op) && !r.credits_unlimited)
            r.lsn = (r.lsn + 1) & iba::kPsnMask;
    }
    sq_pump(q, &w);
    return 0;
}

// Send the packets of the started WQE at out ring index idx (parsed in w)
// from its `sent` count on, while the budget lasts. False if the QP went
// to ERR.
bool Core::emit_message(Qp& q, const WqeView& w, uint32_t idx, uint32_t npkts)
{
    using namespace iba::opc;
    QpRun& r = q.r;
    SendEntry& e = r.out[idx % kMaxOutstanding];
    uint32_t gen = r.tx_gen;
    uint8_t tr = uint8_t((q.service == uint8_t(QpService::Uc) ? iba::kTrUc : iba::kTrRc) << 5);
    bool rc = q.service == uint8_t(QpService::Rc);
    Route rt = route_of(q);
    const Port& pt = ports_[rt.port - 1];
    uint16_t pkey = pt.pkeys[q.a.pkey_index % kPkeyTableLen];
    bool se = w.flags & wqe::kFlagSolicit;
    uint32_t mtu = q.a.mtu;
    uint32_t first_psn = e.first_psn;

    if (w.op == wqe::kRdmaRead || w.op == wqe::kAtomicCs || w.op == wqe::kAtomicFa) {
        if (!tx_room(rt, 28)) {
            r.sq_blocked = true;
            return true;
        }
        Packet& p = tx_packet();
        bool rd = w.op == wqe::kRdmaRead;
        uint8_t opc = rd ? kReadReq : (w.op == wqe::kAtomicCs ? kCmpSwap : kFetchAdd);
        size_t h = build_headers(p, rt, uint8_t(tr | opc), false, pkey, q.a.remote_qpn, true, first_psn);
        uint8_t* x = p.hdr.data() + h;
        wbe64(x, w.raddr);
        wbe32(x + 8, w.rkey);
        if (rd) {
            wbe32(x + 12, uint32_t(w.len));
            h += iba::kRethLen;
        } else {
            wbe64(x + 12, w.swap_add);
            wbe64(x + 20, w.compare);
            h += iba::kAtomicEthLen;
        }
        finish_packet(p, h);
        e.sent = 1;
        --r.budget;
        transmit(rt.port, p);
        return true;
    }
    bool write = w.op == wqe::kRdmaWrite || w.op == wqe::kRdmaWriteImm;
    bool imm = w.op == wqe::kSendImm || w.op == wqe::kRdmaWriteImm;
    uint8_t tmpl[iba::kLrhLen + iba::kGrhLen + iba::kBthLen];
    size_t tmpl_len = 0;
    const uint8_t* whole = map_whole_message(w);
    for (uint32_t i = e.sent; i < npkts && r.budget; ++i) {
        if (!tx_room(rt, mtu)) {
            r.sq_blocked = true;  // no link credits: held back until tx_ready
            break;
        }
        uint32_t psn = (first_psn + i) & iba::kPsnMask;
        bool first = i == 0, last = i + 1 == npkts;
        uint8_t opc;
        if (write)
            opc = first && last ? (imm ? kWriteOnlyImm : kWriteOnly)
                  : first       ? kWriteFirst
                  : last        ? (imm ? kWriteLastImm : kWriteLast)
                                : kWriteMiddle;
        else
            opc = first && last ? (imm ? kSendOnlyImm : kSendOnly)
                  : first       ? kSendFirst
                  : last        ? (imm ? kSendLastImm : kSendLast)
                                : kSendMiddle;
        Packet& p = tx_packet();
        size_t h;
        if (!tmpl_len) {
            h = build_headers(p, rt, uint8_t(tr | opc), last && se, pkey, q.a.remote_qpn, rc && last, psn);
            tmpl_len = h;
            std::memcpy(tmpl, p.hdr.data(), h);
        } else {
            // Same LRH/GRH/BTH (MigReq included) as the previous packet
            // but for opcode, SE, AckReq and PSN.
            h = tmpl_len;
            std::memcpy(p.hdr.data(), tmpl, h);
            p.vl = uint8_t(tmpl[0] >> 4);
            uint8_t* b = p.hdr.data() + h - iba::kBthLen;
            b[0] = uint8_t(tr | opc);
            b[1] = uint8_t((last && se ? 0x80 : 0) | (rt.migreq ? 0x40 : 0));
            wbe32(b + 8, (rc && last ? 0x80000000u : 0) | psn);
        }
        uint8_t* x = p.hdr.data() + h;
        if (write && first) {
            wbe64(x, w.raddr);
            wbe32(x + 8, w.rkey);
            wbe32(x + 12, uint32_t(w.len));
            h += iba::kRethLen;
            x += iba::kRethLen;
        }
        if (imm && last) {
            wbe32(x, w.imm);
            h += iba::kImmLen;
        }
        uint64_t off = uint64_t(i) * mtu;
        uint32_t n = uint32_t(std::min<uint64_t>(mtu, w.len - std::min<uint64_t>(w.len, off)));
        if (whole) {
            // Fast path: a slice of the one mapped run.
            if (n) {
                p.seg[0] = {whole + off, n};
                p.nseg = 1;
                p.payload_len = n;
            }
        } else {
            Gather g{*this, p, bounce()};
            if (!gather_range(w, off, n, g, 0)) {
                IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: gather failed for WQE 0x%x", q.qpn, w.off);
                if (rc)
                    qp_to_error(q, cqe::kLocalProt, true, 0);
                else
                    qp_to_sqe(q);
                return false;
            }
        }
        finish_packet(p, h);
        // Counted before it leaves: the packet may come back (loopback)
        // and its answer restart the sending (tx_gen).
        e.sent = i + 1;
        --r.budget;
        transmit(rt.port, p);
        if (r.tx_gen != gen)
            return true;
    }
    return true;
}

}  // namespace ibemu::mthca
