// SPDX-License-Identifier: GPL-2.0
//
// What the Core raises through its EQ and interrupt block (event_unit.h):
// command-completion events, asynchronous events, CQ completion events,
// and the UAR doorbells (CQ arming, send doorbells) and port changes that
// lead to them.
#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {

const char* cq_arm_name(CqArm a)
{
    static const char* const names[] = {"disarmed", "next", "solicited"};
    unsigned i = unsigned(a);
    return i < 3 ? names[i] : "?";
}
namespace {

// Command completion event data (offsets within the 24 event bytes).
constexpr Field kCmdToken{2, 2, 0, 16};
constexpr Field kCmdStatus{11, 1, 0, 8};
constexpr Field kCmdOutParam{12, 8, 0, 64};

// Arbel CQ doorbell commands (mthca_cq.c): hi dword bits 27:24.
constexpr uint32_t kCqDbReqNotSol = 1, kCqDbReqNot = 2, kCqDbReqNotMult = 3;

}  // namespace

void Core::interrupt_mode_changed() { events_.interrupt_mode_changed(); }

void Core::complete_event(const Cmd& c, Status s)
{
    std::array<uint8_t, 24> ev{};
    kCmdToken.set(ev, c.token);
    kCmdStatus.set(ev, uint8_t(s));
    kCmdOutParam.set(ev, c.has_imm ? c.out_imm : 0);
    int eqn = events_.eq_of(ev::kCmd);
    if (eqn < 0) {
        IBEMU_GUEST_ERROR(cfg_.name, "event-mode command 0x%03x but no EQ is mapped for command events",
                          c.opcode);
        return;
    }
    events_.write_eqe(uint32_t(eqn), ev::kCmd, 0, ev);
}

void Core::eq_arm(uint64_t eq_mask) { events_.arm(eq_mask); }

void Core::eq_set_ci(unsigned eqn, uint32_t ci) { events_.set_ci(eqn, ci); }

void Core::clr_int(uint64_t mask) { events_.clr_int(mask); }

bool Core::post_async_event(uint8_t type, uint8_t subtype, std::span<const uint8_t> payload24)
{
    if (type >= 64 || state_ != FwState::HcaUp || catas())
        return false;
    int eqn = events_.eq_of(type);
    if (eqn < 0) {
        IBEMU_DEBUG(cfg_.name, "event 0x%02x not mapped to any EQ: dropped", type);
        return false;
    }
    return events_.write_eqe(uint32_t(eqn), type, subtype, payload24);
}

bool Core::cq_completion(uint32_t cqn, bool solicited)
{
    if (state_ != FwState::HcaUp || catas())
        return false;
    auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
    if (it == cqs_.end() || it->second.cqn != cqn)
        return false;
    Cq& q = it->second;
    if (q.arm == CqArm::Disarmed || (q.arm == CqArm::NextSolicited && !solicited))
        return false;
    q.arm = CqArm::Disarmed;
    std::array<uint8_t, 24> ev{};
    put32(ev, 0, cqn);
    if (!events_.write_eqe(q.comp_eqn, ev::kComp, 0, ev))
        return false;
    ++q.event_sn;  // the driver counts the event it will find
    return true;
}

void Core::set_port_link(unsigned port, bool up)
{
    if (port < 1 || port > num_ports_)
        return;
    Port& p = ports_[port - 1];
    p.link_present = up;
    p.update_phys();
    if (up && p.ib_open && p.state == PortState::Down)
        p.state = PortState::Init;  // trained; waits for the SM (IBA 14.2.5.6)
    if (!up)
        set_port_state(port, PortState::Down);
}

void Core::set_port_state(unsigned port, PortState s)
{
    if (port < 1 || port > num_ports_)
        return;
    Port& p = ports_[port - 1];
    PortState old = p.state;
    p.state = s;
    // The driver hears about entering and leaving ACTIVE (mthca_eq.c,
    // port_change(): subtype 4 = active).
    if ((old == PortState::Active) != (s == PortState::Active)) {
        std::array<uint8_t, 24> ev{};
        put32(ev, 8, uint32_t(port) << 28);
        post_async_event(ev::kPortChange, s == PortState::Active ? ev::kPortActive : ev::kPortDown, ev);
    }
}

// Each UAR page belongs to one user context (or the driver), and the QP
// and CQ contexts name the page of their owner (usr_page; the CQ's UAR):
// the HCA takes a doorbell for a queue only through that page, which is
// what keeps one process from ringing, arming or replaying another's
// queues. Mem-free doorbell records are already per UAR (read from the
// owner's UAR context page), so they need no check here.
bool Core::uar_owns(uint32_t uar, uint32_t owner, const char* what, uint32_t num)
{
    if (uar == owner)
        return true;
    // A user process can do this at will: log the first one only.
    if (db_.wrong_uar++ == 0)
        IBEMU_GUEST_ERROR(cfg_.name, "doorbell for %s 0x%x through UAR %u, but it belongs to UAR %u: ignored", what,
                          num, uar, owner);
    else
        IBEMU_DEBUG(cfg_.name, "doorbell for %s 0x%x through UAR %u, not its UAR %u: ignored", what, num, uar, owner);
    return false;
}

void Core::uar_doorbell_half(uint32_t uar, unsigned offset, bool lo_half, uint32_t value)
{
    unsigned slot = offset == kUarSendDoorbell ? 0 : offset == kUarRecvDoorbell ? 1 : 2;
    if (uar >= num_uars() || (offset != kUarCqDoorbell && slot == 2)) {
        ++db_.bogus;
        IBEMU_GUEST_ERROR(cfg_.name, "UAR %u: 32-bit write at +0x%x is not a doorbell", uar, offset + (lo_half ? 4 : 0));
        return;
    }
    uint32_t& hi = db_hi_latch_[size_t(uar) * kUarDoorbells + slot];
    if (!lo_half) {
        hi = value;
        return;
    }
    uint32_t h = hi;
    hi = 0;
    uar_doorbell(uar, offset, h, value);
}

void Core::uar_doorbell(uint32_t uar, unsigned offset, uint32_t hi, uint32_t lo)
{
    db_.last_hi = hi;
    db_.last_lo = lo;
    if (catas()) {
        ++db_.bogus;
        IBEMU_DEBUG(cfg_.name, "doorbell on UAR %u +0x%x after a catastrophic error: ignored", uar, offset);
        return;
    }
    if (state_ != FwState::HcaUp || uint64_t(uar) >= (uint64_t(1) << std::min(layout_.log_uars, 32u))) {
        ++db_.bogus;
        IBEMU_GUEST_ERROR(cfg_.name, "doorbell on UAR %u +0x%x (%08x %08x) while no such UAR is active", uar, offset,
                          hi, lo);
        return;
    }
    switch (offset) {
    case kUarCqDoorbell: {
        uint32_t cmd = (hi >> 24) & 0xf;
        uint32_t cqn = hi & 0xffffff;
        auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
        if (it == cqs_.end() || it->second.cqn != cqn) {
            ++db_.bogus;
            IBEMU_GUEST_ERROR(cfg_.name, "CQ doorbell for CQ 0x%x, which is not owned by HW", cqn);
            return;
        }
        Cq& q = it->second;
        if (!uar_owns(uar, q.uar, "CQ", cqn))
            return;
        uint32_t sn = (hi >> 28) & 3, ci = lo;
        if (cmd == kCqDbReqNot || cmd == kCqDbReqNotSol || cmd == kCqDbReqNotMult) {
            // Arbel: the driver wrote the request to the CQ's arm doorbell
            // record (the context's state_db) before ringing: word 0 the
            // consumer index, word 1 cqn << 8 | type 2 << 5 | sn << 3 |
            // 1 (solicited) or 2 (next). The HCA takes the request from the
            // record; the doorbell only rings it. A record that is not this
            // CQ's arm record (unmapped, another CQ, another type) leaves
            // the doorbell's own fields.
            uint32_t r0 = 0, r1 = 0;
            if (read_db_record(q.uar, q.state_db, &r0, &r1) && (r1 >> 8) == cqn && ((r1 >> 5) & 7) == 2 &&
                (r1 & 7) >= 1 && (r1 & 7) <= 2) {
                sn = (r1 >> 3) & 3;
                cmd = (r1 & 7) == 1 ? kCqDbReqNotSol : kCqDbReqNot;
                ci = r0;
            } else {
                ++db_.cq_arm_no_record;
            }
        }
        if (cmd == kCqDbReqNot || cmd == kCqDbReqNotSol || cmd == kCqDbReqNotMult) {
            if (sn != (q.event_sn & 3)) {
                // Stale: sent before the driver counted the last event
                // (another thread's arm racing the event handler). The
                // arm that event consumed is not renewed by it.
                ++db_.cq_stale_arm;
                IBEMU_DEBUG(cfg_.name, "CQ 0x%x arm with sequence number %u, expected %u: stale, ignored", cqn, sn,
                            q.event_sn & 3);
                return;
            }
        }
        if (cmd == kCqDbReqNot || cmd == kCqDbReqNotMult) {
            q.arm = CqArm::NextCompletion;
        } else if (cmd == kCqDbReqNotSol) {
            q.arm = CqArm::NextSolicited;
        } else {
            ++db_.cq_other;
            IBEMU_DEBUG(cfg_.name, "CQ 0x%x doorbell command %u", cqn, cmd);
            return;
        }
        ++db_.cq_arm;
        IBEMU_DEBUG(cfg_.name, "CQ 0x%x armed (%s), sn %u, ci %u", cqn, cq_arm_name(q.arm), sn, ci);
        // Armed while CQEs beyond the consumer index it gives are already
        // there: the event is due at once.
        if (q.arm == CqArm::NextCompletion && q.producer != ci)
            cq_completion(cqn, true);
        return;
    }
    case kUarSendDoorbell: {
        // lo = qpn << 8 | size of the first WQE (mthca_arbel_post_send).
        uint32_t qpn = lo >> 8;
        ++db_.send;
        auto it = qps_.find(qpn & ((1u << layout_.log_qps) - 1));
        if (it == qps_.end() || it->second.qpn != qpn) {
            IBEMU_GUEST_ERROR(cfg_.name, "send doorbell for QP 0x%x, which is in RESET", qpn);
            return;
        }
        if (!uar_owns(uar, it->second.a.usr_page, "QP", qpn))
            return;
        ++it->second.send_doorbells;
        send_doorbell(it->second, hi, lo);
        return;
    }
    case kUarRecvDoorbell:
        ++db_.recv;
        IBEMU_DEBUG(cfg_.name, "receive doorbell (%08x %08x)", hi, lo);
        return;
    default:
        ++db_.bogus;
        IBEMU_GUEST_ERROR(cfg_.name, "write to UAR %u offset 0x%x (%08x %08x) is not a mem-free doorbell", uar, offset,
                          hi, lo);
        return;
    }
}

}  // namespace ibemu::mthca
