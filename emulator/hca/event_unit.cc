// SPDX-License-Identifier: GPL-2.0
//
// The EQ and interrupt block (event_unit.h).
#include "hca/event_unit.h"

#include <atomic>
#include <cstring>
#include <utility>

#include "common/log.h"
#include "hca/regs.h"

namespace ibemu::mthca {

namespace {

constexpr uint8_t kMsixIntrBase = 128;
constexpr size_t kEqeEvent = 4;
constexpr size_t kEqeOwner = 31;

}  // namespace

EventUnit::EventUnit(const std::string& name, InterruptSink& irq, const ConfigSpace& cfgspace, EqeWriter dma)
    : name_(name), irq_(irq), cfgspace_(cfgspace), dma_(std::move(dma))
{
    event_eq_.fill(-1);
}

void EventUnit::power_on()
{
    eqs_.clear();
    event_eq_.fill(-1);
    intx_cause_ = 0;
    if (intx_level_) {
        intx_level_ = false;
        irq_.intx(false);
    }
}

void EventUnit::close()
{
    eqs_.clear();
    event_eq_.fill(-1);
    intx_cause_ = 0;
    update_intx();
}

const Eq* EventUnit::find(uint32_t eqn) const
{
    auto it = eqs_.find(eqn);
    return it == eqs_.end() ? nullptr : &it->second;
}

bool EventUnit::remove(uint32_t eqn, Eq* last)
{
    auto it = eqs_.find(eqn);
    if (it == eqs_.end())
        return false;
    *last = it->second;
    eqs_.erase(it);
    return true;
}

void EventUnit::map(uint64_t mask, uint32_t eqn)
{
    for (unsigned t = 0; t < 64; ++t)
        if (mask & (1ull << t))
            event_eq_[t] = int(eqn);
}

void EventUnit::unmap(uint64_t mask)
{
    for (unsigned t = 0; t < 64; ++t)
        if (mask & (1ull << t))
            event_eq_[t] = -1;
}

bool EventUnit::write_eqe(uint32_t eqn, uint8_t type, uint8_t subtype, std::span<const uint8_t> payload24)
{
    auto it = eqs_.find(eqn);
    if (it == eqs_.end()) {
        IBEMU_GUEST_ERROR(name_, "event 0x%02x for EQ %u, which is not owned by HW: dropped", type, eqn);
        return false;
    }
    Eq& eq = it->second;
    uint32_t nent = 1u << eq.log_size;
    if (eq.producer - eq.consumer >= nent) {
        if (!eq.overflow)
            IBEMU_GUEST_ERROR(name_, "EQ %u overflow (producer %u consumer %u): event 0x%02x dropped", eqn,
                              eq.producer, eq.consumer, type);
        eq.overflow = true;
        return false;
    }
    std::array<uint8_t, eqc::kEntrySize> eqe{};
    eqe[1] = type;
    eqe[3] = subtype;
    std::memcpy(eqe.data() + kEqeEvent, payload24.data(), payload24.size() < 24 ? payload24.size() : 24);
    eqe[kEqeOwner] = 0;  // software owns it now
    uint64_t va = eq.start + uint64_t(eq.producer & (nent - 1)) * eqc::kEntrySize;
    // The entry without its owner byte first, then the owner byte alone,
    // ordered after it: the driver (mthca_eq.c next_eqe_sw) reads the
    // entry as soon as it sees the byte software-owned, from another CPU
    // (a vCPU thread) than the one writing here.
    static_assert(kEqeOwner == eqc::kEntrySize - 1);
    std::span<uint8_t> body(eqe.data(), kEqeOwner), owner(eqe.data() + kEqeOwner, 1);
    bool ok = dma_(eq.lkey, eq.pd, va, body);
    std::atomic_thread_fence(std::memory_order_release);
    if (!ok || !dma_(eq.lkey, eq.pd, va + kEqeOwner, owner)) {
        IBEMU_GUEST_ERROR(name_, "EQ %u: cannot write EQE at va 0x%llx (lkey 0x%08x): dropped", eqn,
                          (unsigned long long)va, eq.lkey);
        return false;
    }
    ++eq.producer;
    ++eq.events;
    IBEMU_DEBUG(name_, "EQE type 0x%02x/%u on EQ %u slot %u%s", type, subtype, eqn, (eq.producer - 1) & (nent - 1),
                eq.armed ? " (fires)" : "");
    if (eq.armed)
        fire(eq);
    return true;
}

void EventUnit::fire(Eq& eq)
{
    eq.armed = false;
    if (cfgspace_.msix_enabled()) {
        if (eq.intr >= kMsixIntrBase && eq.intr - kMsixIntrBase < kMsixVectors) {
            irq_.msix(eq.intr - kMsixIntrBase);
        } else {
            IBEMU_GUEST_ERROR(name_, "EQ %u intr %u is not an MSI-X vector while MSI-X is on", eq.eqn, eq.intr);
        }
        return;
    }
    intx_cause_ |= uint64_t(1) << (eq.intr & 63);
    update_intx();
}

void EventUnit::update_intx()
{
    bool level = intx_cause_ && !cfgspace_.msix_enabled() && !cfgspace_.intx_disabled();
    if (level != intx_level_) {
        intx_level_ = level;
        irq_.intx(level);
    }
}

void EventUnit::arm(uint64_t eq_mask)
{
    for (unsigned n = 0; n < kMaxEqs; ++n) {
        if (!(eq_mask & (uint64_t(1) << n)))
            continue;
        auto it = eqs_.find(n);
        if (it == eqs_.end()) {
            IBEMU_DEBUG(name_, "arm of EQ %u, which is not owned by HW", n);
            continue;
        }
        Eq& eq = it->second;
        eq.armed = true;
        if (eq.producer != eq.consumer)
            fire(eq);
    }
}

void EventUnit::set_ci(unsigned eqn, uint32_t ci)
{
    auto it = eqs_.find(eqn);
    if (it == eqs_.end()) {
        IBEMU_GUEST_ERROR(name_, "set CI of EQ %u, which is not owned by HW", eqn);
        return;
    }
    Eq& eq = it->second;
    if (ci - eq.consumer > eq.producer - eq.consumer) {
        IBEMU_GUEST_ERROR(name_, "EQ %u consumer index %u beyond producer %u", eqn, ci, eq.producer);
        return;
    }
    eq.consumer = ci;
    if (eq.producer - eq.consumer < (1u << eq.log_size))
        eq.overflow = false;
}

void EventUnit::clr_int(uint64_t mask)
{
    intx_cause_ &= ~mask;
    update_intx();
}

}  // namespace ibemu::mthca
