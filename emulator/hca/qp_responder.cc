// SPDX-License-Identifier: GPL-2.0
//
// The responder role of the QP engine (rxe's resp.c): incoming requests on
// RC, UC and UD (SEND, RDMA WRITE, RDMA READ, atomics), placing their data
// through the receive queues and memory regions, and what the responder
// sends back: ACKs, NAKs (PSN sequence error, RNR, invalid request, remote
// access and operational errors), READ responses and atomic ACKs, queued
// as owed responses and sent under the per-call work budget.
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

namespace {

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

// ---- placing payload -------------------------------------------------------

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

// ---- receive queues --------------------------------------------------------

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

// ---- RC requests -----------------------------------------------------------

void Core::responder_nak(Qp& q, unsigned port, uint8_t code, uint32_t psn, uint32_t msn)
{
    // A NAK asks for link credits like every packet on a data VL (IBA
    // 7.9). The queued ones were let through by resp_progress; the one sent
    // directly when the response queue is full, or when a READ response
    // fails half way, is not sent without credits: it is counted and lost
    // as if on the wire, and the requester times out and retries (it used
    // to be sent regardless, queued past the credits: over_credit).
    Route rt = route_of(q);
    rt.port = uint8_t(port);
    if (tx_room(rt, 0))
        send_ack(port, q, uint8_t(iba::kAethNak | code), psn, msn);
    else
        ++db_.naks_unsent;
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

// ---- UC receive ------------------------------------------------------------

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

// ---- responder packets -----------------------------------------------------

uint8_t Core::aeth_credits(Qp& q)
{
    // End-to-end credits (IBA 9.7.7.2): the receive WQEs the responder has
    // for new SENDs, as the largest code of the AETH credit encoding not
    // above that count. A QP on an SRQ advertises none (code 31, invalid).
    if (q.a.srq)
        return iba::kAethCreditsInvalid;
    uint32_t head = 0;
    if (!read_db_record(q.a.usr_page, q.a.rcv_db_index, &head))
        return 0;
    uint32_t avail = std::min((head - q.r.rq_tail) & 0xffff, 1u << q.a.rq_log_size);
    uint8_t code = 0;
    while (code + 1 < 31 && iba::kAethCreditCount[code + 1] <= avail)
        ++code;
    return code;
}

void Core::send_ack(unsigned port, Qp& q, uint8_t syndrome, uint32_t psn, uint32_t msn)
{
    if (syndrome == (iba::kAethAck | iba::kAethCreditsInvalid))
        syndrome = iba::kAethAck | aeth_credits(q);
    Route rt = route_of(q);
    rt.port = uint8_t(port);
    Packet& p = tx_packet();
    const Port& pt = ports_[port - 1];
    size_t h = build_headers(p, rt, iba::opc::kAck, false, pt.pkeys[q.a.pkey_index % kPkeyTableLen], q.a.remote_qpn,
                             false, psn);
    wbe32(p.hdr.data() + h, uint32_t(syndrome) << 24 | (msn & 0xffffff));
    h += iba::kAethLen;
    finish_packet(p, h);
    transmit(port, p);
}

void Core::send_atomic_ack(unsigned port, Qp& q, uint32_t psn, uint64_t orig, uint32_t msn)
{
    Route rt = route_of(q);
    rt.port = uint8_t(port);
    Packet& p = tx_packet();
    const Port& pt = ports_[port - 1];
    size_t h = build_headers(p, rt, iba::opc::kAtomicAck, false, pt.pkeys[q.a.pkey_index % kPkeyTableLen],
                             q.a.remote_qpn, false, psn);
    wbe32(p.hdr.data() + h, uint32_t(iba::kAethAck | aeth_credits(q)) << 24 | (msn & 0xffffff));
    wbe64(p.hdr.data() + h + 4, orig);
    h += iba::kAethLen + iba::kAtomicAckLen;
    finish_packet(p, h);
    transmit(port, p);
}

// ---- the responder's queue of owed responses -------------------------------

uint32_t Core::resp_rd_atomic(const QpRun& r) const
{
    uint32_t n = 0;
    for (uint32_t i = r.resp_tail; i != r.resp_head; ++i) {
        const RespEntry& x = r.resp[i % r.resp.size()];
        n += x.kind == RespEntry::Read || x.kind == RespEntry::Atomic;
    }
    return n;
}

// Owe response x. With nothing owed before it and link credits for it, an
// ACK or atomic ACK goes at once; anything else (and everything behind a
// READ still being sent, or behind an ACK waiting for credits) is queued
// and sent in order by resp_progress. False if there is no room (the
// request is then dropped, as if lost: the requester retries).
bool Core::respond(Qp& q, const RespEntry& x)
{
    QpRun& r = q.r;
    if (r.resp_head == r.resp_tail && x.kind != RespEntry::Read && x.kind != RespEntry::Nak &&
        resp_tx_room(q, x)) {
        if (x.kind == RespEntry::Atomic)
            send_atomic_ack(x.port, q, x.psn, x.orig, x.msn);
        else
            send_ack(x.port, q, x.syndrome, x.psn, x.msn);
        return true;
    }
    // Room for every READ/atomic RRA_MAX allows, an ACK and a NAK.
    size_t cap = (size_t(1) << q.a.rra_max) + 2;
    if (r.resp.size() < cap) {
        if (!lazy_alloc((cap - r.resp.capacity()) * sizeof(RespEntry))) {
            ++db_.rx_dropped;
            return false;
        }
        std::vector<RespEntry> grown(cap);
        uint32_t n = 0;
        for (uint32_t i = r.resp_tail; i != r.resp_head; ++i)
            grown[n++] = r.resp[i % r.resp.size()];
        r.resp = std::move(grown);
        r.resp_tail = 0;
        r.resp_head = n;
    }
    if (x.kind == RespEntry::Ack && (x.syndrome & 0x60) == iba::kAethAck && r.resp_head != r.resp_tail) {
        // ACKs coalesce: a later one says all an earlier one said.
        RespEntry& last = r.resp[(r.resp_head - 1) % r.resp.size()];
        if (last.kind == RespEntry::Ack && (last.syndrome & 0x60) == iba::kAethAck) {
            last = x;
            return true;
        }
    }
    if (r.resp_head - r.resp_tail >= r.resp.size()) {
        ++db_.rx_dropped;
        return false;
    }
    r.resp[r.resp_head++ % r.resp.size()] = x;
    if (x.kind == RespEntry::Nak)
        r.resp_nak = true;
    resp_progress(q);
    return true;
}

// Link credits for an ACK, NAK or atomic ACK (IBA 7.9): like every packet
// on a data VL, it waits for them. (It used to be sent regardless, queued
// past the credits of a full VL: the over_credit counts of bidirectional
// RC traffic.)
bool Core::resp_tx_room(Qp& q, const RespEntry& x)
{
    Route rt = route_of(q);
    rt.port = x.port;
    return tx_room(rt, x.kind == RespEntry::Atomic ? iba::kAtomicAckLen : 0);
}

// Send owed responses in order, at most kSqBudget packets; a READ response
// longer than that goes on from poll().
void Core::resp_progress(Qp& q)
{
    using namespace iba::opc;
    QpRun& r = q.r;
    if (r.resp_busy)
        return;  // the outer call goes on
    r.resp_busy = true;
    r.resp_resume = false;
    r.resp_blocked = false;
    uint32_t budget = kSqBudget;
    while (r.resp_head != r.resp_tail && budget && !r.resp_blocked) {
        if (q.state == QpState::Err || q.state == QpState::Rst) {
            r.resp_head = r.resp_tail = 0;
            r.resp_nak = false;
            break;
        }
        RespEntry& x = r.resp[r.resp_tail % r.resp.size()];
        if (x.kind != RespEntry::Read && !resp_tx_room(q, x)) {
            r.resp_blocked = true;  // no link credits: held back until tx_ready
            break;
        }
        if (x.kind == RespEntry::Ack) {
            ++r.resp_tail;
            --budget;
            send_ack(x.port, q, x.syndrome, x.psn, x.msn);
            continue;
        }
        if (x.kind == RespEntry::Atomic) {
            ++r.resp_tail;
            --budget;
            send_atomic_ack(x.port, q, x.psn, x.orig, x.msn);
            continue;
        }
        if (x.kind == RespEntry::Nak) {
            RespEntry n = x;
            ++r.resp_tail;
            r.resp_nak = false;
            --budget;
            responder_nak(q, n.port, n.syndrome & 0x1f, n.psn, n.msn);
            continue;
        }
        // READ response: packets [sent, npkts) from the region. The
        // entry is found again after each transmit (which may loop back).
        uint32_t t = r.resp_tail;
        uint8_t port = x.port;
        Route rt = route_of(q);
        rt.port = port;
        uint16_t pkey = ports_[port - 1].pkeys[q.a.pkey_index % kPkeyTableLen];
        uint32_t mtu = q.a.mtu;
        uint8_t failed = 0;  // a NAK code
        bool moved = false;
        while (budget) {
            RespEntry& y = r.resp[t % r.resp.size()];
            if (y.sent >= y.npkts)
                break;
            uint32_t i = y.sent;
            bool first = i == 0, last = i + 1 == y.npkts;
            uint8_t opc = first && last ? kReadRespOnly : first ? kReadRespFirst : last ? kReadRespLast : kReadRespMiddle;
            uint64_t off = uint64_t(i) * mtu;
            uint32_t n = uint32_t(std::min<uint64_t>(mtu, y.len - std::min<uint64_t>(y.len, off)));
            if (n && y.mr_gen != obj_gen_) {
                // An MPT changed since the request was checked: again.
                const Mpt* m = nullptr;
                if (mr_check(y.rkey, q.a.pd, y.va + off, y.len - off, kMptRemoteRead, &m) != Tpt::Ok) {
                    failed = 0x80 | iba::kNakRemoteAccess;
                    break;
                }
                y.mr = m;
                y.mr_gen = obj_gen_;
            }
            if (!tx_room(rt, n)) {
                r.resp_blocked = true;  // no link credits: held back until tx_ready
                break;
            }
            Packet& p = tx_packet();
            size_t h = build_headers(p, rt, opc, false, pkey, q.a.remote_qpn, false, (y.psn + i) & iba::kPsnMask);
            if (first || last) {
                wbe32(p.hdr.data() + h, uint32_t(iba::kAethAck | aeth_credits(q)) << 24 | (y.msn & 0xffffff));
                h += iba::kAethLen;
            }
            if (n) {
                Gather g{*this, p, bounce()};
                if (!mr_walk(*y.mr, y.va + off, n, [&](uint64_t gpa, uint32_t cnt) { return g.gpa(gpa, cnt); }) ||
                    !g.ok) {
                    failed = 0x80 | iba::kNakRemoteOp;  // memory the region maps cannot be read
                    break;
                }
            }
            finish_packet(p, h);
            ++y.sent;
            --budget;
            transmit(port, p);
            if (r.resp_tail != t || r.resp_head == r.resp_tail || q.state == QpState::Err) {
                moved = true;  // the queue changed under us (the QP failed)
                break;
            }
        }
        if (failed) {
            // The region went away (remote access error) or its memory
            // cannot be read (remote operational error): a class C
            // responder error, which ends the QP.
            RespEntry y = r.resp[t % r.resp.size()];
            r.resp_head = r.resp_tail = 0;
            r.resp_nak = false;
            IBEMU_GUEST_ERROR(cfg_.name, "QP 0x%x: READ response from va 0x%llx unreadable", q.qpn,
                              (unsigned long long)y.va);
            responder_nak(q, y.port, failed & 0x1f, (y.psn + y.sent) & iba::kPsnMask, y.msn);
            break;
        }
        if (!moved && r.resp[t % r.resp.size()].sent >= r.resp[t % r.resp.size()].npkts)
            ++r.resp_tail;
    }
    r.resp_busy = false;
    if (r.resp_head != r.resp_tail && q.state != QpState::Err && q.state != QpState::Rst) {
        r.resp_resume = true;
        if (!r.resp_blocked)  // else once the port's wire has credits again
            next_deadline_ = std::min(next_deadline_, now());
    }
}

}  // namespace ibemu::mthca
