// SPDX-License-Identifier: GPL-2.0
//
// An N-port InfiniBand switch (IBA chapter 18) with its own SMA (chapter
// 14). Port 0 is the base management port: it holds the switch's LID and the
// SMA; ports 1..N are external and each is a PortEndpoint joined to a Link.
//
// Forwarding (IBA 18.2.4):
//  - VL15 carries SMPs only (IBA 7.6.3). A VL15 packet to the
//    permissive LID or to the switch's LID goes to the SMI (directed route
//    rules of 14.2.2, C14-6 .. C14-13); one to another LID is LID routed, on
//    any port whose link is up, whatever its logical state.
//  - Other VLs: DLID 0xC000-0xFFFE by the MulticastForwardingTable, never
//    back out of the ingress port; others by the LinearForwardingTable.
//    Dropped and counted: ingress port not ARMED/ACTIVE, egress port not
//    ACTIVE, DLID above LinearFDBTop or with LFT entry 255, DLID of the
//    switch itself (no PMA/GSI on port 0 yet).
//
// Port state machine (IBA 7.2, PortInfo PortState): DOWN while the link is
// down; INIT when it comes up; Set(PortInfo) moves INIT -> ARMED -> ACTIVE
// and any of them -> DOWN (the link stays up, so the port is back in INIT).
// Other requested transitions fail the whole Set with status InvalidField.
// Each external state change sets SwitchInfo.PortStateChange and, when the
// SM has given the switch a LID and PortInfo.MasterSMLID, sends trap 128 to
// the SM (IBA 14.2.5.1, Notices and Traps: trap 128 is "link state
// change").
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fabric/clock.h"
#include "fabric/packet.h"
#include "ib/attributes.h"
#include "ib/mkey.h"

namespace ibemu::fabric {

// IBA 14.2.5.6 PortState / PortPhysicalState, shared with the HCA model.
using ib::PhysState;
using ib::PortState;
using ib::phys_state_name;
using ib::port_state_name;

struct SwitchConfig {
    std::string name;          // how the control interface names it
    std::string description;   // NodeDescription
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;  // 0: the node GUID
    unsigned num_ports = 8;    // external ports, 1..254
    uint32_t vendor_id = 0x0002c9;
    uint16_t device_id = 0xb924;  // MT47396 InfiniScale III
    uint32_t revision = 0xa1;
    uint16_t lft_cap = 0xc000;   // LinearFDBCap
    uint16_t mft_cap = 1024;     // MulticastFDBCap (entries from 0xC000)
    uint8_t mtu_cap = 4;         // 2048
    uint8_t vl_cap = 4;          // VL0-7
    uint16_t pkey_cap = 32;      // PartitionEnforcementCap / NodeInfo PartitionCap
};

struct SwitchPortCounters {
    uint64_t rcv_packets = 0;
    uint64_t xmit_packets = 0;
    uint64_t rcv_bytes = 0;
    uint64_t xmit_bytes = 0;
    uint64_t rcv_discards = 0;     // malformed, ingress state, not an SMP on VL15 (PortRcvErrors)
    uint64_t relay_errors = 0;     // at the ingress: no route, above LinearFDBTop, hairpin
                                   // (PortRcvSwitchRelayErrors)
    uint64_t xmit_discards = 0;    // at the egress: down, not ACTIVE, over NeighborMTU
    uint64_t rcv_constraint = 0;   // refused by inbound partition enforcement / raw filter
    uint64_t xmit_constraint = 0;  // refused by outbound partition enforcement / raw filter
    uint64_t link_downed = 0;
    uint64_t vl15_dropped = 0;
    uint64_t smps_handled = 0;
    uint64_t traps_sent = 0;
};

struct PacketView;

class Switch {
public:
    Switch(Scheduler& sched, const SwitchConfig& cfg);
    ~Switch();
    Switch(const Switch&) = delete;
    Switch& operator=(const Switch&) = delete;

    const SwitchConfig& config() const { return cfg_; }
    const std::string& name() const { return cfg_.name; }
    unsigned num_ports() const { return cfg_.num_ports; }

    // The receive side of external port n (1..N), and where it transmits.
    PortEndpoint& endpoint(unsigned n);
    void set_wire(unsigned n, Wire* w);
    // Called when the SM disables (false) or re-enables (true) port n
    // through PortInfo.PortPhysicalState; the fabric moves the link.
    void set_port_enable_hook(std::function<void(unsigned port, bool enable)> h) { enable_hook_ = std::move(h); }

    // Inspection (tests, control interface).
    PortState port_state(unsigned n) const;
    PhysState phys_state(unsigned n) const;
    uint16_t lid() const { return lid_; }
    uint16_t sm_lid() const { return sm_lid_; }
    bool port_state_change() const { return psc_; }
    uint8_t lft(uint16_t lid) const { return lid < lft_.size() ? lft_[lid] : 0xff; }
    const SwitchPortCounters& counters(unsigned n) const;
    uint64_t dropped_smps() const { return dropped_smps_; }
    uint16_t mkey_violations() const { return mkey_.violations(); }

private:
    struct Port;
    class Endpoint;

    void receive(unsigned in, const Packet& p);
    void receive(unsigned in, const Packet& p, const PacketView& v);
    // accepts() then receive(), reading the headers once (PortEndpoint::offer).
    bool offer(unsigned in, const Packet& p);
    // Flow control: whether the packet at the head of ingress port `in`'s VL
    // may be taken now (PortEndpoint::accepts): its egress port has credits
    // for it on its VL and it is that ingress port's turn there (ingress
    // arbitration, below).
    bool accepts(unsigned in, const Packet& p);
    bool accepts(unsigned in, const Packet& p, const PacketView& v);
    // Ingress `in`'s VL `in_vl` no longer waits for an egress port.
    void stop_waiting(unsigned in, unsigned in_vl);
    // The VL a data packet with `sl` leaves port `out` on (SLtoVLMappingTable).
    uint8_t out_vl(unsigned in, unsigned out, uint8_t sl) const;
    // Port n's transmitter gets its VLArbitrationTable and VLHighLimit.
    void push_arbitration(unsigned n);
    void link_changed(unsigned n, bool up, const LinkParams& params);
    void forward_data(unsigned in, const Packet& p, const PacketView& v);
    bool partition_ok(const Port& pt, const PacketView& v, bool outbound = false) const;
    bool lid_is_mine(uint16_t dlid) const;
    void send_on(unsigned out, const Packet& p, bool smp, unsigned in = 0);
    // SMI: directed route and LID routed SMPs addressed to the switch.
    void smi_receive(unsigned in, const Packet& p, unsigned bth_off, uint16_t lrh_slid, uint16_t lrh_dlid);
    void smi_lid_route(std::span<const uint8_t> hdr, std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl);
    void smi_send_dr(unsigned out, std::span<const uint8_t> hdr, std::span<const uint8_t> mad);
    void sma_process(unsigned in, std::span<const uint8_t> hdr, std::span<uint8_t> mad, uint16_t lrh_slid,
                     uint8_t sl);
    uint16_t sma_get(unsigned in, uint16_t attr, uint32_t mod, std::span<uint8_t> data);
    uint16_t sma_set(unsigned in, uint16_t attr, uint32_t mod, std::span<uint8_t> data);
    void fill_port_info(unsigned in, unsigned n, std::span<uint8_t> d) const;
    uint16_t set_port_info(unsigned n, std::span<const uint8_t> d);
    void set_state(unsigned n, PortState s);
    // PMA on port 0 (IBA 16.1): GMPs of class PerfMgt to QP1 at the switch LID.
    void gsi_receive(unsigned in, const Packet& p, unsigned bth_off);
    uint16_t pma_port_counters(uint8_t method, std::span<uint8_t> data);
    void send_trap128();
    void send_trap256(std::span<const uint8_t> mad, uint16_t lrh_slid);
    // A Trap() with Notice `ntc` (64 bytes) to PortInfo:MasterSMLID.
    void send_trap(std::span<const uint8_t> ntc, unsigned number);

    Scheduler& sched_;
    SwitchConfig cfg_;
    std::vector<Port> ports_;              // 0..N
    std::vector<Endpoint*> endpoints_;     // 1..N (index 0 unused)
    std::function<void(unsigned, bool)> enable_hook_;

    // Port 0 / SMA state.
    uint16_t lid_ = 0;
    uint8_t lmc_ = 0;
    uint16_t sm_lid_ = 0;
    uint8_t sm_sl_ = 0;
    ib::MkeyGuard mkey_;
    uint64_t gid_prefix_ = 0xfe80000000000000ull;
    uint8_t subnet_timeout_ = 0;
    // SwitchInfo.
    uint16_t lft_top_ = 0;
    uint16_t mft_top_ = 0;
    uint8_t default_port_ = 0;
    uint8_t default_mc_primary_ = 0xff;
    uint8_t default_mc_not_primary_ = 0xff;
    uint8_t life_time_ = 0;
    bool psc_ = false;
    std::vector<uint8_t> lft_;                 // LID -> port, 0xff invalid
    std::vector<uint16_t> mft_;                // [mlid index][16-port position]
    unsigned mft_positions_ = 1;
    std::vector<uint8_t> sl2vl_;               // [(in * (N+1) + out) * 8]
    std::vector<std::pair<unsigned, bool>> pending_enable_;
    // Ingress arbitration: the ingress ports whose head packet waits for an
    // egress port and VL are served in the order they first found it busy,
    // one packet each, then to the back of the line; so one busy ingress port
    // cannot take every credit the egress frees and starve another (links
    // retry refused heads in a fixed scan order). Entries are (in << 4 |
    // in_vl), oldest first, per (out * 16 + out_vl). A head leaves the line
    // when accepts() takes it (or would drop it) and when its link goes down,
    // the only ways it can leave the ingress buffer; waiting_for_ says, per
    // (in * 16 + in_vl), which line it is in (-1: none).
    std::vector<std::vector<uint16_t>> egress_waiters_;
    std::vector<int32_t> waiting_for_;
    uint64_t trap_tid_ = 0x5357000000000000ull;
    uint64_t dropped_smps_ = 0;
};

}  // namespace ibemu::fabric
