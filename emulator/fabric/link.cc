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
        d.ring.resize(std::max(1u, cfg_.slots));
        for (Slot& sl : d.ring)
            sl.payload.reset(new uint8_t[cfg_.slot_payload]);
        d.rng = d.fault.seed;
        sched_.add(&d);
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
            continue;
        }
        ep_[s]->link_changed(up, cfg_.params);
    }
}

void Link::set_latency(uint64_t ns, bool model_rate)
{
    cfg_.latency_ns = ns;
    cfg_.model_rate = model_rate;
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
    d.head = 0;
    d.count = 0;
    d.busy_until = 0;
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

void Link::Direction::transmit(const Packet& p)
{
    Link& l = *link;
    if (!l.phys_up_) {
        ++ctr.dropped_down;
        return;
    }
    if (p.payload_len > l.cfg_.params.mtu) {
        // IBA 7.7.8 / C7-?: a packet longer than the link's MTU is not
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
    bool timed = l.cfg_.latency_ns != 0 || l.cfg_.model_rate;
    bool dst_busy = !l.side_[to].reentrant && l.side_[to].busy != 0;
    if (!timed && count == 0 && !dst_busy) {
        if (l.sched_.delivery_depth >= kMaxSyncDepth) {
            ++ctr.dropped_loop;
            return;
        }
        if (l.sched_.delivery_depth && l.sched_.sync_deliveries >= kMaxSyncDeliveries) {
            ++ctr.dropped_storm;
            return;
        }
        ++l.side_[from].busy;
        l.deliver(*this, p);
        --l.side_[from].busy;
        return;
    }

    // Deferred: copy into a slot.
    if (count == ring.size() || p.payload_len > l.cfg_.slot_payload) {
        ++ctr.dropped_overflow;
        return;
    }
    if (!l.tap_)
        now = l.sched_.now();
    uint64_t due = now;
    if (l.cfg_.model_rate) {
        double gbps = link_data_rate_gbps(l.cfg_.params.width, l.cfg_.params.speed);
        // The wire carries headers, payload, ICRC and VCRC (6 bytes).
        uint64_t bits = uint64_t(p.hdr_len + p.payload_len + 6) * 8;
        uint64_t ser = gbps > 0 ? uint64_t(double(bits) / gbps) : 0;
        uint64_t start = std::max(now, busy_until);
        busy_until = start + ser;
        due = busy_until;
    }
    due += l.cfg_.latency_ns;
    Slot& s = ring[(head + count) % ring.size()];
    s.pkt.hdr = p.hdr;
    s.pkt.hdr_len = std::min<uint16_t>(p.hdr_len, Packet::kMaxHdr);
    s.pkt.vl = p.vl;
    // Bounded by the slot whatever the segments claim.
    uint32_t copied = 0;
    for (unsigned i = 0; i < p.nseg && i < Packet::kMaxSegs; ++i) {
        uint32_t c = std::min(p.seg[i].len, l.cfg_.slot_payload - copied);
        std::memcpy(s.payload.get() + copied, p.seg[i].data, c);
        copied += c;
    }
    s.pkt.payload_len = copied;
    s.pkt.nseg = copied ? 1 : 0;
    s.pkt.seg[0] = PayloadSeg{s.payload.get(), copied};
    // In order: never due before the packet ahead of it.
    if (count)
        due = std::max(due, ring[(head + count - 1) % ring.size()].due);
    s.due = due;
    ++count;
    ++ctr.deferred;
}

uint64_t Link::Direction::next_deadline() const
{
    if (notify_pending)
        return 0;
    return count ? ring[head].due : kNever;
}

void Link::Direction::fire(uint64_t now)
{
    Link& l = *link;
    // Only what is queued now: a packet that comes back round a loop waits
    // for the next call.
    unsigned n = count;
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
    while (n-- && count && ring[head].due <= now) {
        if (!l.side_[to].reentrant && l.side_[to].busy != 0)
            break;
        // The slot stays counted while its packet is delivered, so a
        // transmit from inside receive() queues behind it and cannot
        // overwrite it.
        uint64_t gen = generation;
        l.deliver(*this, ring[head].pkt);
        if (gen != generation)
            break;  // the link went down during delivery and was flushed
        head = (head + 1) % ring.size();
        --count;
    }
}

void Link::deliver(Direction& d, const Packet& p)
{
    unsigned to = d.from ^ 1;
    PortEndpoint* ep = ep_[to];
    if (!ep) {
        ++d.ctr.dropped_down;
        return;
    }
    ++d.ctr.delivered;
    if (sched_.delivery_depth == 0)
        sched_.sync_deliveries = 0;  // an outermost delivery: a new budget
    ++sched_.sync_deliveries;
    ++sched_.delivery_depth;
    ++side_[to].busy;
    ep->receive(p);
    --side_[to].busy;
    --sched_.delivery_depth;
}

}  // namespace ibemu::fabric
