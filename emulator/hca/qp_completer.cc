// SPDX-License-Identifier: GPL-2.0
//
// The completer role of the QP engine (rxe's comp.c): the RC requester's
// handling of what comes back (ACKs, NAKs, RNR NAKs, READ responses and
// atomic ACKs), the completion of acknowledged send WQEs, and go-back-N
// retransmission after a NAK, an ACK timeout or an RNR wait.
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

// ---- retransmission --------------------------------------------------------

void Core::rc_retransmit(Qp& q)
{
    QpRun& r = q.r;
    if (q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return;
    if (r.out_head == r.out_tail)
        return;
    IBEMU_DEBUG(cfg_.name, "QP 0x%x: retransmitting from PSN 0x%06x", q.qpn, r.out[r.out_tail % kMaxOutstanding].first_psn);
    ++db_.retransmits;
    // Go back N: every started WQE is sent again from its first packet,
    // by sq_progress and within its budget.
    for (uint32_t i = r.out_tail; i != r.out_head; ++i) {
        SendEntry& e = r.out[i % kMaxOutstanding];
        e.sent = 0;
        if (e.op == wqe::kRdmaRead)
            e.got = 0;
    }
    r.tx_idx = r.out_tail;
    ++r.tx_gen;
    if (uint64_t t = ack_timeout_ns(q.a.ackto))
        arm_timer(q, now() + t);
    sq_progress(q);
}

// ---- responses -------------------------------------------------------------

void Core::rc_ack_upto(Qp& q, uint32_t psn, bool data_ok)
{
    QpRun& r = q.r;
    bool progress = false;
    while (r.out_head != r.out_tail) {
        SendEntry& e = r.out[r.out_tail % kMaxOutstanding];
        if (iba::psn_diff(e.last_psn, psn) > 0)
            break;
        if (is_read_or_atomic(e.op) && !data_ok)
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

// End-to-end credits (IBA 9.7.7.2): an ACK, an atomic ACK or a READ
// response whose AETH syndrome is ACK carries the responder's MSN and its
// credit code. The requester's limit (lsn) becomes MSN + credits when that
// is beyond the limit it has (an older ACK arriving late never lowers it);
// code 31 means the responder does not count (an SRQ): no limit from then
// on. True when the limit moved while a message waited for credits.
bool Core::rc_take_credits(Qp& q, const RxCtx& rx)
{
    using namespace iba::opc;
    QpRun& r = q.r;
    uint8_t o = rx.opcode & 0x1f;
    bool has_aeth = o == kAck || o == kAtomicAck || o == kReadRespFirst || o == kReadRespLast || o == kReadRespOnly;
    if (!has_aeth || rx.ext_len < iba::kAethLen || r.credits_unlimited)
        return false;
    if (q.state != QpState::Rts && q.state != QpState::Sqd && q.state != QpState::Sqe)
        return false;
    uint32_t aeth = be32(rx.ext);
    uint8_t syn = uint8_t(aeth >> 24);
    if ((syn & 0x60) != iba::kAethAck)
        return false;  // an RNR NAK's or NAK's low bits are a timer or a code
    uint8_t code = syn & 0x1f;
    if (code == iba::kAethCreditsInvalid) {
        r.credits_unlimited = true;
        return r.credit_wait;
    }
    uint32_t limit = (aeth + iba::kAethCreditCount[code]) & iba::kPsnMask;
    if (iba::psn_diff(limit, r.lsn) <= 0)
        return false;
    r.lsn = limit;
    return r.credit_wait;
}

void Core::rx_rc_response(unsigned port, RxCtx& rx, Qp& q)
{
    bool more = rc_take_credits(q, rx);
    rc_response(port, rx, q);
    // Resume a message held for credits, unless the response itself did.
    if (more && q.r.credit_wait && q.r.sq_pending && q.state == QpState::Rts)
        sq_progress(q);
}

void Core::rc_response(unsigned port, RxCtx& rx, Qp& q)
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
                if (r.rnr_wait)
                    return;
                // A sequence-error NAK costs a transport retry, as a local
                // ACK timeout does (the transport retry count bounds both;
                // rxe counts it the same way). With IPoIB-CM's retry count
                // of 0 a lost packet fails the connection, as on hardware.
                if (r.retries == 0) {
                    IBEMU_INFO(cfg_.name, "QP 0x%x: transport retry counter exceeded (sequence error NAK)", q.qpn);
                    qp_to_error(q, cqe::kRetryExc, true, 0);
                    return;
                }
                --r.retries;
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
    while (idx != r.out_head && !is_read_or_atomic(r.out[idx % kMaxOutstanding].op))
        ++idx;
    if (idx == r.out_head)
        return;
    SendEntry& e = r.out[idx % kMaxOutstanding];
    if (iba::psn_diff(rx.psn, e.first_psn) < 0 || iba::psn_diff(rx.psn, e.last_psn) > 0)
        return;  // stale
    rc_ack_upto(q, (e.first_psn - 1) & iba::kPsnMask, false);
    if (r.out_tail != idx)
        return;
    // The WQE again, for where its READ or atomic result goes: the opcode
    // is the one the entry was started with (sq_fetch clears it).
    WqeView w;
    unsigned seg0 = 0;
    bool fetched = sq_fetch(q, e.wqe, e.size, w);
    w.op = e.op;
    if (!fetched || !parse_segments(w, q.service, &seg0) || parse_gather(q, w, seg0, false)) {
        qp_to_error(q, cqe::kLocalQpOp, true, ev::kWqCatas);
        return;
    }
    WqeView* wp = &w;
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
