// SPDX-License-Identifier: GPL-2.0
//
// Factory for the InfiniHost III Ex (MT25208, PCI 15b3:6282) model in
// mem-free ("Arbel native") mode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "fabric/clock.h"
#include "fabric/packet.h"
#include "hca/pci_function.h"

namespace ibemu {

struct MthcaConfig {
    std::string name = "mthca";     // used in log lines
    uint64_t node_guid = 0x0002c90300000001ull;
    unsigned num_ports = 1;         // 1 or 2
    // The emulator's time (the same clock poll() is given). The model reads
    // it wherever it arms a timer, so a deadline never starts from the time
    // of the last poll(). Null (tests only): time is what poll() last said.
    // Not owned; must outlive the model.
    const fabric::Clock* clock = nullptr;
    // The most host memory the model may spend on one guest's objects (QPs
    // with their run-time state, CQs, SRQs, MPTs): creating one beyond it
    // fails with EXCEED_LIM, a send or atomic that needs new state fails.
    uint64_t max_model_bytes = uint64_t(256) << 20;
};

// What the firmware did with the traps of one port (emulator/hca/traps.cc),
// counted since the model was made (a device reset does not clear them):
// the operator's and the VM tests' view (`show traps` on the control
// socket), where the log may lag.
struct TrapCounters {
    static constexpr unsigned kKinds = 4;
    // The trap numbers, in the order of `sent`.
    static constexpr uint16_t kNumbers[kKinds] = {144, 256, 257, 258};
    uint64_t sent[kKinds] = {};  // placed on QP0 for the SM, resends included
    uint64_t repressed = 0;      // ended by the SM's TrapRepress (its TID)
    uint64_t given_up = 0;       // ended unrepressed after the last resend
    uint64_t held = 0;           // a send (or resend) skipped: no SM had configured the port

    uint64_t sent_total() const
    {
        uint64_t n = 0;
        for (uint64_t x : sent)
            n += x;
        return n;
    }
};

// The HCA's IB ports as the fabric sees them. Every PciFunction that
// make_mthca returns implements this too; mthca_ports() finds it.
class MthcaPorts {
public:
    virtual ~MthcaPorts() = default;
    virtual unsigned num_ports() const = 0;
    // The receive side of port `port` (1-based) for the fabric to call.
    virtual PortEndpoint& endpoint(unsigned port) = 0;
    // Where port `port` transmits; nullptr detaches it (packets are then
    // dropped). Not owned; must outlive the attachment.
    virtual void attach(unsigned port, Wire* wire) = 0;
    // Fails the chip with a catastrophic error (an operator and test seam:
    // see Core::raise_catas).
    virtual void raise_catas(uint32_t syndrome) = 0;
    // RC go-back-N restarts since power-on (NAK, ACK timeout, RNR wait):
    // the transport retries the server's control channel reports.
    virtual uint64_t retransmits() const { return 0; }
    // The trap counters of port `port` (1-based; zeros past num_ports).
    virtual TrapCounters trap_counters(unsigned port) const
    {
        (void)port;
        return {};
    }
};

// The ports of an HCA made by make_mthca (nullptr for anything else).
MthcaPorts* mthca_ports(PciFunction& f);

std::unique_ptr<PciFunction> make_mthca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq);

}  // namespace ibemu
