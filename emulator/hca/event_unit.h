// SPDX-License-Identifier: GPL-2.0
//
// The EQ and interrupt block of the MT25208: the table of event queues
// owned by HW, which EQ each event type goes to (MAP_EQ), EQE writes, EQ
// arming and consumer indices, and interrupt delivery (MSI-X vectors, or
// the INTx cause register that CLR_INT clears). Its state is its own: the
// firmware commands (SW2HW_EQ, HW2SW_EQ, QUERY_EQ, MAP_EQ, CLOSE_HCA), the
// BAR0 registers and the data path reach it only through this interface.
//
// An EQE is 32 bytes: type in byte 1, subtype in byte 3, 24 bytes of event
// data from byte 4, and the owner bit in byte 31 (mthca_eq.c). The driver
// marks every free entry HW-owned (0x80); the HCA writes entries SW-owned
// (0). An EQ fires its interrupt when it is armed and gets an entry, or is
// armed while it holds entries the driver has not consumed yet.
//
// Interrupt routing follows the EQ's "intr" field: with MSI-X enabled the
// driver programs 128 + vector; otherwise it programs the INTA pin
// number from QUERY_ADAPTER, which becomes a bit in the 64-bit interrupt
// cause register that CLR_INT clears (mthca_arbel_interrupt()).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "hca/config_space.h"
#include "hca/contexts.h"
#include "hca/pci_function.h"

namespace ibemu::mthca {

class EventUnit {
public:
    // Writes an EQE into the EQ's buffer: (lkey, pd, va, bytes) through the
    // HCA's address translation; false on a translation or DMA fault.
    using EqeWriter = std::function<bool(uint32_t lkey, uint32_t pd, uint64_t va, std::span<uint8_t> eqe)>;

    EventUnit(const std::string& name, InterruptSink& irq, const ConfigSpace& cfgspace, EqeWriter dma);

    // Power-on: no EQs, nothing mapped, the INTx pin dropped.
    void power_on();
    // CLOSE_HCA: no EQs, nothing mapped, no cause pending.
    void close();

    // ---- the EQ table (firmware commands) ------------------------------
    const Eq* find(uint32_t eqn) const;
    bool owned(uint32_t eqn) const { return eqs_.count(eqn) != 0; }
    void insert(const Eq& e) { eqs_[e.eqn] = e; }
    // Removes EQ `eqn` (HW2SW_EQ) and returns its last state; false if it
    // was not owned by HW.
    bool remove(uint32_t eqn, Eq* last);
    // MAP_EQ: event types in `mask` go to `eqn` (or to none: unmap).
    void map(uint64_t mask, uint32_t eqn);
    void unmap(uint64_t mask);
    // The EQ event `type` goes to, -1 if none.
    int eq_of(uint8_t type) const { return type < event_eq_.size() ? event_eq_[type] : -1; }
    size_t size() const { return eqs_.size(); }

    // ---- the data path and the firmware --------------------------------
    // Writes one EQE; fires the EQ's interrupt if it is armed.
    bool write_eqe(uint32_t eqn, uint8_t type, uint8_t subtype, std::span<const uint8_t> payload24);

    // ---- BAR0 registers -------------------------------------------------
    void arm(uint64_t eq_mask);
    void set_ci(unsigned eqn, uint32_t ci);
    void clr_int(uint64_t mask);
    // Config space changed (MSI-X enable, INTx disable).
    void interrupt_mode_changed() { update_intx(); }

    uint64_t intx_cause() const { return intx_cause_; }
    bool intx_level() const { return intx_level_; }

private:
    void fire(Eq& eq);
    void update_intx();

    const std::string& name_;
    InterruptSink& irq_;
    const ConfigSpace& cfgspace_;
    EqeWriter dma_;
    std::map<uint32_t, Eq> eqs_;          // by eqn
    std::array<int, 64> event_eq_{};      // event type -> eqn, -1 = unmapped
    uint64_t intx_cause_ = 0;
    bool intx_level_ = false;
};

}  // namespace ibemu::mthca
