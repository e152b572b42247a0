// SPDX-License-Identifier: GPL-2.0
//
// A channel adapter the emulator serves by itself, with no guest behind it:
// its ports answer SMPs (LID routed and directed route) and PerfMgt GMPs on
// QP1 as an HCA with its firmware's SMA and PMA would. The attribute logic is
// the HCA model's own (mthca::Sma, emulator/hca/sma.h); what a real host adds
// around the firmware (the kernel's directed-route SMI rules for a CA, IBA
// 14.2.2.2, and the GetResp addressing) lives here.
//
// Used for fabrics larger than the guests this machine can boot: every HCA
// of a topology that no guest claims becomes a StubCa (StubFarm), so a
// subnet manager sweeps the whole fabric. A guest that connects later takes
// the port over (HcaPort::attach replaces the endpoint).
//
// Reentrant: receive() may run inside the stub's own transmit() (its answer
// to something it sent); nothing is kept across calls.
//
// Not modelled: traps (the SMA's bad M_Key violation drops the SMP and counts
// it, without trap 256), SA or CM agents, data traffic (counted, dropped).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fabric/clock.h"
#include "fabric/headers.h"
#include "fabric/packet.h"
#include "hca/sma.h"

namespace ibemu::stub {

struct StubCaConfig {
    std::string name;               // for logs
    mthca::NodeIdentity node;       // NodeInfo / NodeDescription
    unsigned num_ports = 1;
};

struct StubCounters {
    uint64_t smps = 0;         // SMPs given to the SMA
    uint64_t pma = 0;          // PerfMgt GMPs answered
    uint64_t dropped = 0;      // everything else (bad SMI, data, no agent)
};

// Where a MAD came from, for the agents behind a port.
struct MadSource {
    unsigned port = 0;
    uint16_t slid = 0, dlid = 0;
    uint8_t sl = 0;
    uint32_t src_qp = 0;
    uint16_t pkey = 0xffff;
    uint32_t qkey = 0;
};

class StubCa {
public:
    StubCa(fabric::Scheduler& sched, StubCaConfig cfg);
    virtual ~StubCa();
    StubCa(const StubCa&) = delete;
    StubCa& operator=(const StubCa&) = delete;

    const std::string& name() const { return cfg_.name; }
    unsigned num_ports() const { return cfg_.num_ports; }
    const mthca::NodeIdentity& node() const { return cfg_.node; }
    // 1-based.
    PortEndpoint& endpoint(unsigned n);
    void set_wire(unsigned n, Wire* w);
    const mthca::Port& port(unsigned n) const { return ports_.at(n - 1); }
    mthca::Port& port(unsigned n) { return ports_.at(n - 1); }
    const StubCounters& counters() const { return ctr_; }

protected:
    // A MAD that no agent of the stub takes: a response, a trap, a class the
    // SMA and PMA do not serve. For SMPs the SMI rules have already run
    // (hop pointer as the receiving CA leaves it). The stub drops it.
    virtual void unhandled_mad(const MadSource& src, std::span<const uint8_t> mad);
    // The link of port n came up or went down.
    virtual void port_link(unsigned n, bool up) { (void)n; (void)up; }

    // Sends a MAD out of port n: an SMP on VL15 to QP0 (LRH addressed by
    // `dlid`/`slid`) or a GMP on VL0 to `dest_qp` with the QP1 Q_Key.
    void send_smp(unsigned n, uint16_t dlid, uint16_t slid, uint8_t sl, std::span<const uint8_t> mad);
    void send_gmp(unsigned n, uint16_t dlid, uint8_t sl, uint32_t dest_qp, uint16_t pkey,
                  std::span<const uint8_t> mad);
    // Runs this port's SMA/PMA on a MAD the CA itself sends (a local SMP,
    // hop count 0, or a MAD to its own LID). Returns false when the SMA
    // drops it; `out` is the response.
    bool local_mad(unsigned n, std::span<const uint8_t> in, std::span<uint8_t> out);
    fabric::Scheduler& sched_;

private:
    class Ep;
    void receive(unsigned n, const Packet& p);
    void link_changed(unsigned n, bool up, const LinkParams& params);
    void smp_receive(unsigned n, const MadSource& src, std::span<uint8_t> mad);
    void gmp_receive(unsigned n, const MadSource& src, std::span<uint8_t> mad);

    StubCaConfig cfg_;
    std::vector<mthca::Port> ports_;
    std::vector<std::unique_ptr<Ep>> eps_;
    std::vector<Wire*> wires_;
    mthca::Sma sma_;
    StubCounters ctr_;
};

}  // namespace ibemu::stub
