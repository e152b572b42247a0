// SPDX-License-Identifier: GPL-2.0
#include "fabric/link.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"

namespace ibemu::fabric {

double link_data_rate_gbps(uint8_t width, uint8_t speed)
{
    // LinkWidthActive (IBA 14.2.5.6): 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x.
    unsigned lanes = width == 1 ? 1 : width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 : 0;
    // LinkSpeedActive: 1 = 2.5, 2 = 5.0, 4 = 10.0 Gb/s signalling per lane;
    // 8b/10b leaves 4/5 of it for data.
    double lane = speed == 1 ? 2.0 : speed == 2 ? 4.0 : speed == 4 ? 8.0 : 0.0;
    return lanes * lane;
}

Link::Link(Scheduler& sched, std::string name, const LinkConfig& cfg)
    : sched_(sched), name_(std::move(name)), cfg_(cfg)
{
    for (unsigned s = 0; s < 2; ++s) {
        Direction& d = dir_[s];
        d.link = this;
        d.from = s;
        d.rng = d.fault.seed;
    }
}

Link::~Link()
{
    for (Direction& d : dir_)
        sched_.remove(&d);
}

void Link::attach(unsigned side, PortEndpoint* ep, bool reentrant)
{
    side &= 1;
    if (ep_[side] == ep)
        return;
    if (ep_[side] && phys_up_) {
        // The old endpoint loses its link first.
        PortEndpoint* old = ep_[side];
        ep_[side] = nullptr;
        update_phys();
        old->link_changed(false, cfg_.params);
    }
    ep_[side] = ep;
    side_[side].reentrant = reentrant;
    // The side's transmitter is its owner's (Wire::set_carrier): an HCA
    // sets it through the wire before its endpoint plugs in, and keeps it
    // off until its port is opened. Unplugged, the side forgets it.
    if (!ep)
        side_[side].carrier = true;
    side_[side].busy = 0;
    dir_[side ^ 1].notify_pending = false;
    update_phys();
}

void Link::set_admin_up(bool up)
{
    admin_up_ = up;
    update_phys();
}

void Link::update_phys()
{
    bool up = admin_up_ && ep_[0] && ep_[1] && carrier();
    if (up == phys_up_)
        return;
    phys_up_ = up;
    if (!up) {
        flush(dir_[0]);
        flush(dir_[1]);
    }
    IBEMU_INFO("fabric", "link %s %s", name_.c_str(), up ? "up" : "down");
    for (unsigned s = 0; s < 2; ++s) {
        if (!ep_[s])
            continue;
        if (!side_[s].reentrant && side_[s].busy) {
            dir_[s ^ 1].notify_pending = true;  // told by the direction that delivers to s
            dir_[s ^ 1].rearm();
            continue;
        }
        ep_[s]->link_changed(up, cfg_.params);
    }
}

void Link::set_latency(uint64_t ns, bool model_rate)
{
    cfg_.latency_ns = ns;
    cfg_.model_rate = model_rate;
    dir_[0].rearm();
    dir_[1].rearm();
}

void Link::set_rate_model(bool on, uint64_t burst_ns)
{
    cfg_.model_rate = on;
    cfg_.rate_burst_ns = on ? burst_ns : 0;
    dir_[0].rearm();
    dir_[1].rearm();
}

void Link::set_fault(unsigned from_side, const FaultConfig& f)
{
    Direction& d = dir_[from_side & 1];
    d.fault = f;
    d.fault_count = 0;
    d.rng = f.seed ? f.seed : 1;
}

void Link::flush(Direction& d)
{
    d.ctr.dropped_down += d.count;
    ++d.generation;
    for (VlQueue& q : d.vq) {
        while (Slot* s = q.head) {
            q.head = s->next;
            s->next = d.free_slots;
            d.free_slots = s;
        }
        q = VlQueue{};
    }
    d.count = 0;
    d.wire_free = 0;
    d.wire_free_ps = 0;
    d.rearm();
}

bool Link::Direction::fault_drop()
{
    if (!fault.drop_every && !fault.drop_ppm)
        return false;
    ++fault_count;
    if (fault.drop_every && fault_count % fault.drop_every == 0)
        return true;
    if (fault.drop_ppm) {
        // xorshift64*: deterministic for a seed, independent of timing.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        uint64_t r = (rng * 0x2545f4914f6cdd1dull) >> 32;
        if (r % 1000000u < fault.drop_ppm)
            return true;
    }
    return false;
}

void Link::Direction::set_carrier(bool on)
{
    if (link->side_[from].carrier == on)
        return;
    link->side_[from].carrier = on;
    IBEMU_INFO("fabric", "link %s: side %u carrier %s", link->name_.c_str(), from, on ? "on" : "off");
    link->update_phys();
}

Link::Slot* Link::Direction::take_slot()
{
    if (Slot* s = free_slots) {
        free_slots = s->next;
        s->next = nullptr;
        return s;
    }
    if (pool.size() >= std::max(1u, link->cfg_.slots))
        return nullptr;
    // Lazily: a direction that never queues never allocates.
    auto s = std::make_unique<Slot>();
    s->payload.reset(new uint8_t[link->cfg_.slot_payload]);
    pool.push_back(std::move(s));
    return pool.back().get();
}

// The head packet of `vl` left the buffer: its slot and credits come back.
void Link::Direction::release(unsigned vl)
{
    Link& l = *link;
    VlQueue& q = vq[vl];
    Slot* s = q.head;
    q.head = s->next;
    if (!q.head)
        q.tail = nullptr;
    q.used -= std::min(q.used, s->blocks);
    q.refused = false;
    s->next = free_slots;
    free_slots = s;
    --count;
    l.sched_.credits_moved();
    if (q.sender_waiting) {
        q.sender_waiting = false;
        if (PortEndpoint* ep = l.ep_[from])
            ep->tx_ready();
    }
}

bool Link::Direction::ready(uint8_t vl, uint32_t bytes)
{
    Link& l = *link;
    vl &= 15;
    if (vl == 15 || !l.phys_up_)
        return true;  // VL15 has no credits; a down link drops (and counts) anyway
    VlQueue& q = vq[vl];
    uint32_t b = credit_blocks(bytes);
    bool room = q.used == 0 || q.used + b <= l.cfg_.vl_credits;
    if (room && count < std::max(1u, l.cfg_.slots))
        return true;
    q.sender_waiting = true;
    ++ctr.credit_waits;
    return false;
}

void Link::Direction::set_arbitration(const VlArbitration& a)
{
    arb = a;
    hi_idx = lo_idx = 0;
    hi_left = int64_t(arb.high[0].weight) * 64;
    lo_left = int64_t(arb.low[0].weight) * 64;
    hi_bytes = 0;
}

void Link::Direction::transmit(const Packet& p)
{
    Link& l = *link;
    if (!l.phys_up_) {
        ++ctr.dropped_down;
        return;
    }
    if (p.payload_len > l.cfg_.params.mtu) {
        // IBA 7.7.8 (C7-37): a packet longer than the link's MTU is not
        // carried. Count it where the sender can see it.
        ++ctr.dropped_mtu;
        IBEMU_DEBUG("fabric", "link %s: %u-byte payload over MTU %u dropped", l.name_.c_str(),
                    unsigned(p.payload_len), unsigned(l.cfg_.params.mtu));
        return;
    }
    if (fault_drop()) {
        ++ctr.dropped_fault;
        return;
    }
    ++ctr.tx_packets;
    ctr.tx_bytes += p.hdr_len + p.payload_len;
    // The clock only when something uses it: a clock read costs about as
    // much as the rest of a synchronous hop.
    uint64_t now = 0;
    if (l.tap_)
        l.tap_->tap(l, from, p, now = l.sched_.now());

    unsigned to = from ^ 1;
    unsigned vl = p.vl & 15;
    VlQueue& q = vq[vl];
    bool timed = l.cfg_.latency_ns != 0 || l.cfg_.model_rate;
    bool dst_busy = !l.side_[to].reentrant && l.side_[to].busy != 0;
    bool refused = false;
    if (!timed && !q.head && !dst_busy) {
        if (l.sched_.delivery_depth >= kMaxSyncDepth) {
            ++ctr.dropped_loop;
            return;
        }
        if (l.sched_.delivery_depth && l.sched_.sync_deliveries >= kMaxSyncDeliveries) {
            ++ctr.dropped_storm;
            return;
        }
        ++l.side_[from].busy;
        bool took = l.offer(*this, p);
        --l.side_[from].busy;
        if (took)
            return;
        refused = true;  // into the receive buffer, to wait for the receiver
    }

    // Queued: copy into a slot of the receive buffer.
    Slot* s = p.payload_len <= l.cfg_.slot_payload ? take_slot() : nullptr;
    if (!s) {
        ++ctr.dropped_overflow;
        return;
    }
    uint32_t blocks = credit_blocks(p.hdr_len + p.payload_len);
    if (vl != 15 && q.used && q.used + blocks > l.cfg_.vl_credits)
        ++ctr.over_credit;
    s->pkt.hdr = p.hdr;
    s->pkt.hdr_len = std::min<uint16_t>(p.hdr_len, Packet::kMaxHdr);
    s->pkt.vl = p.vl;
    // Bounded by the slot whatever the segments claim.
    uint32_t copied = 0;
    for (unsigned i = 0; i < p.nseg && i < Packet::kMaxSegs; ++i) {
        uint32_t c = std::min(p.seg[i].len, l.cfg_.slot_payload - copied);
        std::memcpy(s->payload.get() + copied, p.seg[i].data, c);
        copied += c;
    }
    s->pkt.payload_len = copied;
    s->pkt.nseg = copied ? 1 : 0;
    s->pkt.seg[0] = PayloadSeg{s->payload.get(), copied};
    s->blocks = blocks;
    s->crossed = false;
    if (!l.tap_)
        now = l.sched_.now();
    s->due = now + l.cfg_.latency_ns;
    // In order: never due before the packet ahead of it.
    if (q.tail)
        s->due = std::max(s->due, q.tail->due);
    if (q.tail)
        q.tail->next = s;
    else
        q.head = s;
    q.tail = s;
    q.used += blocks;
    if (refused) {
        q.refused = true;
        q.refused_epoch = l.sched_.credit_epoch;
        ++ctr.refused;
    }
    ++count;
    ++ctr.deferred;
    // Due no later than the new packet. A direction already armed as early
    // keeps its place among equal deadlines. (Outside fire(), a direction
    // with a packet that is not refused is always armed.)
    if (refused || l.cfg_.model_rate)
        rearm();
    else if (s->due < armed_deadline())
        l.sched_.arm(this, s->due);
}

// Onto the scheduler's heap at next_deadline(), or off it when nothing is
// due. A head the receiver refused also sleeps until credits move
// (Scheduler::credits_moved()), which re-arms the direction then.
void Link::Direction::rearm()
{
    Scheduler& s = link->sched_;
    s.arm(this, next_deadline());
    if (!count)
        return;
    for (const VlQueue& q : vq) {
        if (q.head && q.refused && q.refused_epoch == s.credit_epoch) {
            s.sleep_on_credits(this);
            break;
        }
    }
}

// The head of `vl` may go: due, and not refused since credits last moved.
bool Link::Direction::eligible(unsigned vl, uint64_t now) const
{
    const VlQueue& q = vq[vl];
    if (!q.head || q.head->due > now)
        return false;
    return !q.refused || q.refused_epoch != link->sched_.credit_epoch;
}

uint64_t Link::Direction::next_deadline() const
{
    if (notify_pending)
        return 0;
    if (!count)
        return kNever;
    // Rate model: a packet on the wire arrives when due; a waiting one
    // starts when the wire is free.
    uint64_t waiting = kNever, arriving = kNever;
    for (const VlQueue& q : vq) {
        if (!q.head || (q.refused && q.refused_epoch == link->sched_.credit_epoch))
            continue;
        uint64_t& d = q.head->crossed ? arriving : waiting;
        d = std::min(d, q.head->due);
    }
    if (waiting != kNever && link->cfg_.model_rate)
        waiting = std::max(waiting, wire_free);
    return std::min(waiting, arriving);
}

// The current entry of table `t` while it has weight left and its VL has a
// packet, else the next such entry (IBA 7.6.9: weights in 64-byte units; a
// packet that starts is finished even past the weight). -1: none.
int Link::Direction::table_pick(const std::array<VlArbEntry, 64>& t, unsigned& idx, int64_t& left, uint64_t now)
{
    for (unsigned k = 0; k <= t.size(); ++k) {
        const VlArbEntry& e = t[idx];
        if (left > 0 && e.weight && e.vl < 15 && eligible(e.vl, now))
            return e.vl;
        idx = (idx + 1) % t.size();
        left = int64_t(t[idx].weight) * 64;
    }
    return -1;
}

int Link::Direction::pick(uint64_t now)
{
    // VL15 goes ahead of every data VL (IBA 7.6.9.1).
    if (eligible(15, now))
        return 15;
    if (!arb.programmed) {
        for (unsigned k = 0; k < 15; ++k) {
            unsigned vl = (rr + k) % 15;
            if (eligible(vl, now)) {
                rr = (vl + 1) % 15;
                return int(vl);
            }
        }
        return -1;
    }
    // High priority first, unless it has sent its limit (VLHighLimit x
    // 4 KiB; 255 = unlimited) while low priority traffic waits.
    bool limit_hit = arb.high_limit != 255 && hi_bytes >= uint64_t(arb.high_limit) * 4096 && hi_bytes > 0;
    if (!limit_hit) {
        int vl = table_pick(arb.high, hi_idx, hi_left, now);
        if (vl >= 0) {
            last_high = true;
            return vl;
        }
    }
    int vl = table_pick(arb.low, lo_idx, lo_left, now);
    if (vl >= 0) {
        last_high = false;
        return vl;
    }
    if (limit_hit) {  // nothing low after all
        vl = table_pick(arb.high, hi_idx, hi_left, now);
        if (vl >= 0) {
            last_high = true;
            return vl;
        }
    }
    return -1;
}

void Link::Direction::charge(unsigned vl, uint32_t bytes)
{
    if (!arb.programmed || vl == 15)
        return;
    if (last_high) {
        hi_left -= bytes;
        hi_bytes += bytes;
    } else {
        lo_left -= bytes;
        hi_bytes = 0;
    }
}

// Fired from the scheduler's heap (disarmed meanwhile): delivers what is
// due, then arms itself again for whatever is left.
void Link::Direction::fire(uint64_t now)
{
    deliver_due(now);
    rearm();
}

void Link::Direction::deliver_due(uint64_t now)
{
    Link& l = *link;
    unsigned to = from ^ 1;
    if (notify_pending) {
        if (!l.side_[to].reentrant && l.side_[to].busy != 0)
            return;
        notify_pending = false;
        if (PortEndpoint* ep = l.ep_[to]) {
            ++l.side_[to].busy;
            ep->link_changed(l.phys_up_, l.cfg_.params);
            --l.side_[to].busy;
        }
    }
    // Only what is queued now: a packet that comes back round a loop waits
    // for the next call.
    unsigned n = count;
    bool rate = l.cfg_.model_rate;
    while (n && count) {
        if (!l.side_[to].reentrant && l.side_[to].busy != 0)
            break;
        // A packet that has crossed the wire (rate model) is handed over
        // first; otherwise the arbiter picks the next VL.
        int vl = -1;
        if (rate) {
            for (unsigned v = 0; v < 16 && vl < 0; ++v)
                if (vq[v].head && vq[v].head->crossed && eligible(v, now))
                    vl = int(v);
        }
        if (vl < 0) {
            if (rate && wire_free > now)
                break;
            vl = pick(now);
            if (vl < 0)
                break;
            if (rate) {
                // Onto the wire: one packet per serialisation time (headers,
                // payload, ICRC and VCRC at the link's data rate), from when
                // the wire is free, or up to rate_burst_ns earlier than now
                // if it has been idle (see link.h).
                Slot* s = vq[unsigned(vl)].head;
                uint32_t bytes = s->pkt.hdr_len + s->pkt.payload_len;
                uint64_t burst = l.cfg_.rate_burst_ns;
                uint64_t floor = now > burst ? now - burst : 0;
                if (wire_free + (wire_free_ps ? 1 : 0) < floor) {  // idle since before `floor`
                    wire_free = floor;
                    wire_free_ps = 0;
                }
                double gbps = link_data_rate_gbps(l.cfg_.params.width, l.cfg_.params.speed);
                uint64_t ps = gbps > 0 ? uint64_t(double(uint64_t(bytes + 6) * 8) * 1000.0 / gbps + 0.5) : 0;
                ps += wire_free_ps;
                wire_free += ps / 1000;
                wire_free_ps = uint32_t(ps % 1000);
                charge(unsigned(vl), bytes);
                s->crossed = true;
                // Arrives when its last byte has crossed (the next whole ns).
                s->due = wire_free + (wire_free_ps ? 1 : 0);
                continue;
            }
        }
        --n;
        VlQueue& q = vq[unsigned(vl)];
        Slot* s = q.head;
        // The slot stays queued while its packet is delivered, so a
        // transmit from inside receive() queues behind it and cannot
        // overwrite it.
        uint64_t gen = generation;
        uint32_t bytes = s->pkt.hdr_len + s->pkt.payload_len;
        if (!l.offer(*this, s->pkt)) {
            // Stays in the buffer, holding its credits, until credits move
            // somewhere (the receiver's egress drained).
            q.refused = true;
            q.refused_epoch = l.sched_.credit_epoch;
            ++ctr.refused;
            continue;
        }
        if (gen != generation)
            break;  // the link went down during delivery and was flushed
        release(unsigned(vl));
        if (!rate)
            charge(unsigned(vl), bytes);
    }
}

// Offers p to the receiving side (PortEndpoint::offer): false, with nothing
// counted, when it refused the packet for now.
bool Link::offer(Direction& d, const Packet& p)
{
    unsigned to = d.from ^ 1;
    PortEndpoint* ep = ep_[to];
    if (!ep) {
        ++d.ctr.dropped_down;
        return true;
    }
    ++d.ctr.delivered;
    if (sched_.delivery_depth == 0)
        sched_.sync_deliveries = 0;  // an outermost delivery: a new budget
    ++sched_.sync_deliveries;
    ++sched_.delivery_depth;
    ++side_[to].busy;
    bool took = ep->offer(p);
    --side_[to].busy;
    --sched_.delivery_depth;
    if (!took) {
        --d.ctr.delivered;
        --sched_.sync_deliveries;
    }
    return took;
}

}  // namespace ibemu::fabric
