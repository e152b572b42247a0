// SPDX-License-Identifier: GPL-2.0
//
// A physical link between two PortEndpoints (side 0 and side 1). Each side
// transmits on the Wire the link gives it; the packet arrives at the other
// side's receive().
//
// Delivery:
//  - A link with zero latency and no rate model delivers synchronously,
//    without a copy: the peer's receive() runs inside the sender's
//    transmit() and sees the sender's own payload segments.
//  - Otherwise the packet is copied into a slot of the direction's receive
//    buffer and delivered by the Scheduler when due: after the latency and,
//    with the rate model, one packet per serialisation time at width x
//    speed (8b/10b). Slots are allocated the first time a direction needs
//    them (a link that never queues costs no buffer) and reused. A
//    direction with packets queued is armed in the Scheduler's deadline
//    heap (never scanned); one whose head was refused sleeps until credits
//    move (Scheduler::credits_moved()).
//  - Rate model: the wire carries the packet's bytes (LRH to ICRC, plus the
//    2-byte VCRC) at link_data_rate_gbps(), serialisation times kept to the
//    picosecond so small packets do not round the rate up. A packet starts
//    when the wire is free and no earlier than `rate_burst_ns` before now:
//    with 0, when it is picked (exact in virtual time); with B > 0 the wire
//    may make up for up to B of idle time a late Scheduler wake cost it (a
//    server that polls in 1 ms steps), so over any interval T it carries at
//    most rate x (T + B) and, saturated, rate x T in wall time as well.
//  - Credits (IBA 7.9): each data VL of a direction has a receive buffer of
//    `vl_credits` 64-byte blocks. A queued packet holds its blocks until the
//    receiver takes it. Wire::ready() says whether a packet fits; a sender
//    told no waits for PortEndpoint::tx_ready(). A receiver that cannot
//    take the packet at the head of a VL (a switch whose egress is full:
//    PortEndpoint::accepts()) leaves it there, so the buffer fills and the
//    sender upstream is held back in turn: back-pressure, never a drop. A
//    sender that transmits without asking is still queued (counted in
//    over_credit) up to `slots` packets in all; only past that is a packet
//    dropped (dropped_overflow), which a flow-controlled fabric never does.
//  - Order is kept per VL: while packets wait on a VL, later ones on it
//    queue behind them. Between VLs the transmitter arbitrates: VL15 first,
//    then the VLArbitration tables (set_arbitration), or round robin.
//  - An endpoint attached as non-reentrant (an HCA) never sees receive()
//    while it is inside its own transmit() or receive(): such a packet is
//    deferred to the next Scheduler::run_due(). Switch ports are reentrant.
//    The same holds for link_changed(): one that would reach a busy
//    non-reentrant endpoint is delivered by the next run_due(), before any
//    packet queued after it.
//  - A zero-latency chain deeper than kMaxSyncDepth (a forwarding loop) is
//    dropped and counted (dropped_loop). So is every synchronous delivery
//    past kMaxSyncDeliveries caused by one outermost transmit (a multicast
//    storm: an MFT loop fans out at every hop, so the depth bound alone
//    would allow ~2^64 deliveries) (dropped_storm).
//
// Checks, in order, on transmit: the link is up (else dropped_down), the
// payload fits the link MTU (IBA 7.7.8: else dropped_mtu), fault injection
// (dropped_fault). Capture taps see every packet that passed them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/clock.h"
#include "fabric/packet.h"

namespace ibemu::fabric {

inline constexpr unsigned kMaxSyncDepth = 64;
// Deliveries one transmit may cause synchronously, across every link: far
// more than a multicast to every port of a 1000-node lab needs.
inline constexpr uint64_t kMaxSyncDeliveries = 8192;

// The burst the fabric's `rate on` gives (LinkConfig::rate_burst_ns): the
// server's poll() sleeps in whole milliseconds and wakes late on a loaded
// host, so a wire may have to make up for a few milliseconds of idle time.
inline constexpr uint64_t kDefaultRateBurstNs = 5000000;

struct LinkConfig {
    LinkParams params;
    uint64_t latency_ns = 0;
    bool model_rate = false;
    uint64_t rate_burst_ns = 0;    // rate model: idle wire time it may make up for
    unsigned slots = 1024;         // most packets queued per direction (slots made on demand)
    uint32_t slot_payload = 4096;  // largest payload a slot holds
    uint32_t vl_credits = 2048;    // receive buffer per data VL, 64-byte blocks (128 KiB)
};

struct LinkCounters {
    uint64_t tx_packets = 0;      // accepted onto the wire
    uint64_t tx_bytes = 0;
    uint64_t delivered = 0;
    uint64_t deferred = 0;        // of those, through a slot
    uint64_t dropped_down = 0;
    uint64_t dropped_mtu = 0;
    uint64_t dropped_fault = 0;
    uint64_t dropped_overflow = 0;
    uint64_t dropped_loop = 0;
    uint64_t dropped_storm = 0;   // over kMaxSyncDeliveries in one transmit
    uint64_t credit_waits = 0;    // ready() said no (back-pressure on the sender)
    // Queued into a VL whose receive buffer had no room for the packet: a
    // sender that did not ask ready() (a switch's multicast fan-out, an
    // HCA's MLX MADs or its NAK when its response queue is full; see
    // fabric/README.md "Links").
    uint64_t over_credit = 0;
    uint64_t refused = 0;         // the receiver could not take the head packet yet
    // Every packet lost on this direction, whatever the reason.
    uint64_t dropped() const
    {
        return dropped_down + dropped_mtu + dropped_fault + dropped_overflow + dropped_loop + dropped_storm;
    }
};

// Fault injection, per direction, deterministic.
struct FaultConfig {
    uint32_t drop_every = 0;      // drop the Nth, 2Nth, ... packet (0: off)
    uint32_t drop_ppm = 0;        // drop with this probability, parts per million
    uint64_t seed = 1;
};

class Link;

// Sees packets crossing a link (capture).
class PacketTap {
public:
    virtual ~PacketTap() = default;
    virtual void tap(const Link& link, unsigned from_side, const Packet& p, uint64_t now_ns) = 0;
};

// Data rate in bits per ns (= Gb/s) of an IBA LinkWidthActive x
// LinkSpeedActive pair, after 8b/10b; 0 for an unknown encoding.
double link_data_rate_gbps(uint8_t width, uint8_t speed);

class Link {
public:
    Link(Scheduler& sched, std::string name, const LinkConfig& cfg);
    ~Link();
    Link(const Link&) = delete;
    Link& operator=(const Link&) = delete;

    const std::string& name() const { return name_; }

    // Joins an endpoint to a side (replacing whatever was there, which is
    // told the link went down). nullptr detaches. The link is physically up
    // while administratively up and both sides are attached.
    void attach(unsigned side, PortEndpoint* ep, bool reentrant);
    PortEndpoint* endpoint(unsigned side) const { return ep_[side & 1]; }
    // What the endpoint on `side` transmits on.
    Wire& wire(unsigned side) { return dir_[side & 1]; }

    void set_admin_up(bool up);
    bool admin_up() const { return admin_up_; }
    bool up() const { return phys_up_; }
    // Both endpoints' transmitters are on (see Wire::set_carrier).
    bool carrier() const { return side_[0].carrier && side_[1].carrier; }
    // Both ends are plugged in.
    bool plugged() const { return ep_[0] && ep_[1]; }

    const LinkParams& params() const { return cfg_.params; }
    void set_mtu(uint16_t mtu) { cfg_.params.mtu = mtu; }
    void set_latency(uint64_t ns, bool model_rate);
    uint64_t latency_ns() const { return cfg_.latency_ns; }
    // The rate model on or off, keeping the latency; `burst_ns` as
    // LinkConfig::rate_burst_ns.
    void set_rate_model(bool on, uint64_t burst_ns = 0);
    bool rate_model() const { return cfg_.model_rate; }
    uint64_t rate_burst_ns() const { return cfg_.rate_burst_ns; }
    uint32_t vl_credits() const { return cfg_.vl_credits; }
    void set_vl_credits(uint32_t blocks) { cfg_.vl_credits = blocks ? blocks : 1; }
    // Packets queued in a direction, and the credits they hold on `vl`.
    unsigned queued(unsigned from_side) const { return dir_[from_side & 1].count; }
    uint32_t credits_used(unsigned from_side, uint8_t vl) const { return dir_[from_side & 1].vq[vl & 15].used; }
    // Slots a direction has allocated so far (lazy; tests).
    size_t slots_allocated(unsigned from_side) const { return dir_[from_side & 1].pool.size(); }

    void set_fault(unsigned from_side, const FaultConfig& f);
    const FaultConfig& fault(unsigned from_side) const { return dir_[from_side & 1].fault; }
    const LinkCounters& counters(unsigned from_side) const { return dir_[from_side & 1].ctr; }

    void set_tap(PacketTap* t) { tap_ = t; }
    PacketTap* tap() const { return tap_; }

private:
    struct Slot {
        Packet pkt;
        std::unique_ptr<uint8_t[]> payload;
        uint64_t due = 0;
        uint32_t blocks = 0;  // credits held
        bool crossed = false; // rate model: serialised, arrives at `due`
        Slot* next = nullptr;
    };
    struct VlQueue {
        Slot* head = nullptr;
        Slot* tail = nullptr;
        uint32_t used = 0;          // credits held by queued packets
        bool refused = false;       // the receiver refused the head ...
        uint64_t refused_epoch = 0; // ... at this Scheduler::credit_epoch
        bool sender_waiting = false;  // ready() said no: tx_ready() owed
    };
    // One direction: side `from` transmits, the other side receives.
    struct Direction final : Wire, TimedSource {
        Link* link = nullptr;
        unsigned from = 0;
        FaultConfig fault;
        uint64_t fault_count = 0;
        uint64_t rng = 0;
        LinkCounters ctr;
        std::vector<std::unique_ptr<Slot>> pool;  // grows on demand to cfg_.slots
        Slot* free_slots = nullptr;
        std::array<VlQueue, 16> vq;
        unsigned count = 0;       // packets queued, all VLs
        uint64_t generation = 0;  // bumped when the queue is flushed
        bool notify_pending = false;  // link_changed owed to the receiving side
        uint64_t wire_free = 0;   // rate model: the wire is busy until then
        uint32_t wire_free_ps = 0;  // ... and this many picoseconds (< 1000)
        // VL arbitration state (IBA 7.6.9).
        VlArbitration arb;
        unsigned hi_idx = 0, lo_idx = 0;
        int64_t hi_left = 0, lo_left = 0;  // bytes the current entry may still send
        uint64_t hi_bytes = 0;             // high priority bytes since the last low packet
        bool last_high = false;
        unsigned rr = 0;                   // round robin when not programmed

        void transmit(const Packet& p) override;
        bool ready(uint8_t vl, uint32_t bytes) override;
        void set_arbitration(const VlArbitration& a) override;
        void set_carrier(bool on) override;
        uint64_t next_deadline() const override;
        void fire(uint64_t now) override;
        void rearm();
        void deliver_due(uint64_t now);
        bool fault_drop();
        bool eligible(unsigned vl, uint64_t now) const;
        int pick(uint64_t now);
        int table_pick(const std::array<VlArbEntry, 64>& t, unsigned& idx, int64_t& left, uint64_t now);
        void charge(unsigned vl, uint32_t bytes);
        Slot* take_slot();
        void release(unsigned vl);
    };
    struct SideState {
        bool reentrant = true;
        unsigned busy = 0;
        bool carrier = true;  // the endpoint's transmitter (Wire::set_carrier)
    };

    void update_phys();
    bool offer(Direction& d, const Packet& p);
    void flush(Direction& d);

    Scheduler& sched_;
    std::string name_;
    LinkConfig cfg_;
    Direction dir_[2];
    SideState side_[2];
    PortEndpoint* ep_[2] = {nullptr, nullptr};
    bool admin_up_ = true;
    bool phys_up_ = false;
    PacketTap* tap_ = nullptr;
};

}  // namespace ibemu::fabric
