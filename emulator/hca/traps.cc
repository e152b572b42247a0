// SPDX-License-Identifier: GPL-2.0
//
// Traps the firmware sends for its ports (IBA 14.2.5.1): 144 (the
// driver changed the CapabilityMask with SET_IB), 256 (an SMP failed the
// M_Key check), 257/258 (a packet failed the P_Key/Q_Key check).
//
// The HCA does not send them to the SM itself. As on the real InfiniHost,
// a locally generated trap arrives in QP0's receive queue like a received
// SMP, but with SLID 0; ib_mthca's process_mad (forward_trap) recognises
// Trap() from SLID 0 and sends it to the SM it learnt from the SM's
// Set(PortInfo) through its own QP0 agent. The SM answers with TrapRepress
// (same TID), which reaches the firmware through MAD_IFC and ends the
// trap; until then it is resent every 4.096 us * 2^SubnetTimeout (not
// more often than kTrapMinIntervalNs), at most kTrapMaxResends times.
#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/iba.h"
#include "hca/qp_engine.h"
#include "hca/wire.h"
#include "ib/notice.h"

namespace ibemu::mthca {

using namespace qpe;

static_assert(TrapCounters::kKinds == kNumTrapKinds);
static_assert(TrapCounters::kNumbers[unsigned(TrapKind::CapMask)] == 144 &&
              TrapCounters::kNumbers[unsigned(TrapKind::BadMkey)] == 256 &&
              TrapCounters::kNumbers[unsigned(TrapKind::BadPkey)] == 257 &&
              TrapCounters::kNumbers[unsigned(TrapKind::BadQkey)] == 258);

uint64_t Core::trap_interval_ns(const Port& p)
{
    uint64_t t = uint64_t(4096) << std::min<unsigned>(p.subnet_timeout, 31);
    return std::max(t, kTrapMinIntervalNs);
}

void Core::raise_trap(unsigned port, TrapKind kind, std::span<const uint8_t> notice)
{
    if (port < 1 || port > num_ports_)
        return;
    Port& p = ports_[port - 1];
    if (!(p.cap_mask & kCapIsTrapSupported))
        return;
    TrapSlot& t = p.traps[unsigned(kind)];
    std::memcpy(t.notice.data(), notice.data(), std::min(notice.size(), t.notice.size()));
    if (t.outstanding)
        return;  // the pending one is resent with the newest details
    t.outstanding = true;
    t.tid = ++trap_tid_;
    t.resends = 0;
    t.next_ns = now() + trap_interval_ns(p);
    next_deadline_ = std::min(next_deadline_, t.next_ns);
    trap_deliver(port, kind, t);
}

void Core::trap_deliver(unsigned port, TrapKind kind, const TrapSlot& t)
{
    Port& p = ports_[port - 1];
    TrapCounters& tc = trap_counters_[port - 1];
    uint16_t number = uint16_t(ib::notice::kTrapNumber.get(t.notice));
    // The driver forwards it to the SM it knows: nothing to do before the
    // SM has configured the port.
    if (!p.lid || !p.sm_lid || p.state != PortState::Active || state_ != FwState::HcaUp) {
        ++tc.held;
        IBEMU_DEBUG(cfg_.name, "port %u: trap %u held (port not configured by an SM)", port, number);
        return;
    }
    if (tx_depth_ + 1 >= tx_pkts_.size())
        return;  // nested too deep for a packet buffer: the resend comes
    Packet& pk = tx_packet();
    uint8_t* h = pk.hdr.data();
    std::memset(h, 0, iba::kLrhLen + iba::kBthLen + iba::kDethLen);
    // LRH: VL15, local; DLID permissive, SLID 0 (generated inside the HCA).
    h[0] = 15 << 4;
    h[1] = iba::kLnhIbaLocal;
    wbe16(h + 2, iba::kPermissiveLid);
    wbe16(h + 4, uint16_t((iba::kLrhLen + iba::kBthLen + iba::kDethLen + mad::kSize + 4) / 4));
    uint8_t* b = h + iba::kLrhLen;
    b[0] = uint8_t(iba::kTrUd << 5 | iba::opc::kSendOnly);
    wbe16(b + 2, 0xffff);
    // DETH: Q_Key 0 (QP0 ignores it), source QP 0.
    pk.hdr_len = uint16_t(iba::kLrhLen + iba::kBthLen + iba::kDethLen);
    pk.vl = 15;
    std::span<uint8_t> m(trap_mad_);
    std::memset(m.data(), 0, m.size());
    const FieldValue hdr[] = {
        {mad::kBaseVersion, 1}, {mad::kMgmtClass, mad::kClassSubnLid}, {mad::kClassVersion, 1},
        {mad::kMethod, mad::kMethodTrap}, {mad::kTid, t.tid}, {mad::kAttrId, smp::kAttrNotice},
        {smp::kMkey, p.mkey.key()},
    };
    fill(m, hdr);
    std::memcpy(m.data() + smp::kDataOffset, t.notice.data(), smp::kDataSize);
    pk.seg[0] = {m.data(), uint32_t(m.size())};
    pk.nseg = 1;
    pk.payload_len = uint32_t(m.size());
    ++tc.sent[unsigned(kind)];
    IBEMU_INFO(cfg_.name, "port %u: trap %u (TID 0x%llx) to QP0 for the SM at LID %u", port, number,
               (unsigned long long)t.tid, p.sm_lid);
    ++tx_depth_;
    rx_packet(port, pk, true);
    --tx_depth_;
}

void Core::trap_repress(unsigned port, uint64_t tid)
{
    Port& p = ports_[port - 1];
    for (TrapSlot& t : p.traps) {
        if (t.outstanding && t.tid == tid) {
            t.outstanding = false;
            ++trap_counters_[port - 1].repressed;
            return;
        }
    }
}

uint64_t Core::trap_poll(uint64_t now_ns)
{
    uint64_t next = UINT64_MAX;
    for (unsigned n = 1; n <= num_ports_; ++n) {
        Port& p = ports_[n - 1];
        for (unsigned k = 0; k < kNumTrapKinds; ++k) {
            TrapSlot& t = p.traps[k];
            if (!t.outstanding)
                continue;
            if (t.next_ns <= now_ns) {
                if (t.resends >= kTrapMaxResends) {
                    IBEMU_INFO(cfg_.name, "port %u: trap %u not repressed after %u resends, given up", n,
                               TrapCounters::kNumbers[k], unsigned(t.resends));
                    t.outstanding = false;
                    ++trap_counters_[n - 1].given_up;
                    continue;
                }
                ++t.resends;
                t.next_ns = now_ns + trap_interval_ns(p);
                trap_deliver(n, TrapKind(k), t);
            }
            next = std::min(next, t.next_ns);
        }
    }
    return next;
}

void Core::trap_key_violation(unsigned port, TrapKind kind, const RxCtx& rx, uint32_t key, uint32_t src_qp)
{
    namespace notice = ib::notice;
    const Port& p = ports_[port - 1];
    uint8_t d[64] = {};
    std::span<uint8_t> s(d);
    const FieldValue ntc[] = {
        {notice::kIsGeneric, 1},
        {notice::kType, notice::kTypeSecurity},
        {notice::kProducerType, notice::kProducerCa},
        {notice::kTrapNumber, kind == TrapKind::BadPkey ? 257u : 258u},
        {notice::kIssuerLid, p.lid},
        {notice::kTrap257Lid1, rx.slid},
        {notice::kTrap257Lid2, p.lid},
        {notice::kTrap257Key, key},
        {notice::kTrap257Qp1, src_qp},
        {notice::kTrap257Sl, rx.sl},
        {notice::kTrap257Qp2, rx.dqpn},
    };
    fill(s, ntc);
    raise_trap(port, kind, s);
}

}  // namespace ibemu::mthca
