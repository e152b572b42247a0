// SPDX-License-Identifier: GPL-2.0
#include "fabric/switch.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "fabric/headers.h"
#include "ib/notice.h"

namespace ibemu::fabric {

namespace {

// NodeInfo (IBA 14.2.5.3) and PortInfo (14.2.5.6), shared with the HCA's SMA.
namespace nodeinfo = ib::nodeinfo;
namespace portinfo = ib::portinfo;

// SwitchInfo (IBA 14.2.5.4).
namespace switchinfo {
constexpr Field kLftCap{0, 2, 0, 16};
constexpr Field kRftCap{2, 2, 0, 16};
constexpr Field kMftCap{4, 2, 0, 16};
constexpr Field kLftTop{6, 2, 0, 16};
constexpr Field kDefaultPort{8, 1, 0, 8};
constexpr Field kDefaultMcPrimary{9, 1, 0, 8};
constexpr Field kDefaultMcNotPrimary{10, 1, 0, 8};
constexpr Field kLifeTime{11, 1, 3, 5};
constexpr Field kPortStateChange{11, 1, 2, 1};
constexpr Field kOptSl2Vl{11, 1, 0, 2};
constexpr Field kLidsPerPort{12, 2, 0, 16};
constexpr Field kEnforceCap{14, 2, 0, 16};
constexpr Field kInboundEnf{16, 1, 7, 1};
constexpr Field kOutboundEnf{16, 1, 6, 1};
constexpr Field kFilterRawIn{16, 1, 5, 1};
constexpr Field kFilterRawOut{16, 1, 4, 1};
constexpr Field kEnhancedPort0{16, 1, 3, 1};
constexpr Field kMftTop{18, 2, 0, 16};
}  // namespace switchinfo

// PortInfo CapabilityMask of port 0: IsTrapSupported (3), IsSLMappingSupported (6).
constexpr uint32_t kSwitchCapMask = (1u << 3) | (1u << 6);

// Notice (IBA 14.2.5.1), shared with the HCA's firmware.
namespace notice = ib::notice;

constexpr unsigned kMadHdrOffset(unsigned bth_off) { return bth_off + bth::kSize + deth::kSize; }

}  // namespace

struct Switch::Port {
    unsigned num = 0;
    Wire* wire = nullptr;
    bool link_up = false;
    bool disabled = false;
    PortState state = PortState::Down;
    LinkParams params;
    uint8_t neighbor_mtu = 4;
    uint8_t operational_vls = 1;
    uint8_t vl_high_limit = 0;
    uint8_t hoq_life = 0;
    uint8_t vl_stall = 0;
    uint8_t width_enabled = 3;
    uint8_t speed_enabled = 1;
    uint8_t down_default = uint8_t(PhysState::Polling);
    uint8_t part_enforce = 0;
    std::vector<uint16_t> pkeys;
    uint8_t vlarb[4 * 64] = {};
    SwitchPortCounters ctr;
};

class Switch::Endpoint final : public PortEndpoint {
public:
    Endpoint(Switch* sw, unsigned n) : sw_(sw), n_(n) {}
    void receive(const Packet& p) override { sw_->receive(n_, p); }
    bool accepts(const Packet& p) override { return sw_->accepts(n_, p); }
    bool offer(const Packet& p) override { return sw_->offer(n_, p); }
    void link_changed(bool up, const LinkParams& params) override { sw_->link_changed(n_, up, params); }

private:
    Switch* sw_;
    unsigned n_;
};

Switch::Switch(Scheduler& sched, const SwitchConfig& cfg) : sched_(sched), cfg_(cfg)
{
    if (cfg_.num_ports < 1)
        cfg_.num_ports = 1;
    if (cfg_.num_ports > 254)
        cfg_.num_ports = 254;
    if (!cfg_.sys_image_guid)
        cfg_.sys_image_guid = cfg_.node_guid;
    ports_.resize(cfg_.num_ports + 1);
    endpoints_.resize(cfg_.num_ports + 1, nullptr);
    for (unsigned n = 0; n <= cfg_.num_ports; ++n) {
        Port& p = ports_[n];
        p.num = n;
        p.pkeys.assign(cfg_.pkey_cap ? cfg_.pkey_cap : 1, 0);
        p.pkeys[0] = 0xffff;
        if (n)
            endpoints_[n] = new Endpoint(this, n);
    }
    // Port 0 is inside the switch: its link is always up (IBA 14.2.5.6, the
    // base management port), so it starts in INIT.
    ports_[0].link_up = true;
    ports_[0].state = PortState::Init;
    lft_.assign(cfg_.lft_cap, 0xff);
    mft_positions_ = (cfg_.num_ports + 1 + 15) / 16;
    mft_.assign(size_t(cfg_.mft_cap) * mft_positions_, 0);
    sl2vl_.assign(size_t(cfg_.num_ports + 1) * (cfg_.num_ports + 1) * 8, 0);
    egress_waiters_.resize(size_t(cfg_.num_ports + 1) * 16);
    waiting_for_.assign(size_t(cfg_.num_ports + 1) * 16, -1);
}

Switch::~Switch()
{
    for (Endpoint* e : endpoints_)
        delete e;
}

PortEndpoint& Switch::endpoint(unsigned n) { return *endpoints_.at(n); }

void Switch::set_wire(unsigned n, Wire* w)
{
    if (n >= 1 && n <= cfg_.num_ports) {
        ports_[n].wire = w;
        push_arbitration(n);
    }
}

void Switch::push_arbitration(unsigned n)
{
    Port& p = ports_[n];
    if (p.wire)
        p.wire->set_arbitration(vl_arbitration_from(p.vlarb, p.vl_high_limit));
}

uint8_t Switch::out_vl(unsigned in, unsigned out, uint8_t sl) const
{
    unsigned N = cfg_.num_ports;
    return sl_to_vl(&sl2vl_[(size_t(in) * (N + 1) + out) * 8], sl);
}

void Switch::stop_waiting(unsigned in, unsigned in_vl)
{
    int32_t& w = waiting_for_[size_t(in) * 16 + in_vl];
    if (w < 0)
        return;
    std::vector<uint16_t>& line = egress_waiters_[size_t(w)];
    auto it = std::find(line.begin(), line.end(), uint16_t(in << 4 | in_vl));
    if (it != line.end())
        line.erase(it);
    w = -1;
}

bool Switch::accepts(unsigned in, const Packet& p)
{
    if (p.vl == kSmpVl) {
        stop_waiting(in, kSmpVl);
        return true;
    }
    return accepts(in, p, view_packet(p));
}

// One pass over the headers for both questions: the hop's hot path.
bool Switch::offer(unsigned in, const Packet& p)
{
    PacketView v = view_packet(p);
    if (!accepts(in, p, v))
        return false;
    receive(in, p, v);
    return true;
}

bool Switch::accepts(unsigned in, const Packet& p, const PacketView& v)
{
    unsigned in_vl = p.vl & 15;
    // Whatever the switch would drop anyway (or hand to its own SMA/PMA) is
    // taken: only a packet it would forward can wait for credits.
    auto take = [&] {
        stop_waiting(in, in_vl);
        return true;
    };
    if (p.vl == kSmpVl)
        return take();
    const Port& ip = ports_[in];
    if (ip.state != PortState::Armed && ip.state != PortState::Active)
        return take();
    if (!v.valid || lid_is_mine(v.dlid))
        return take();
    uint16_t dlid = v.dlid;
    // Multicast is not held back: a copy that finds an egress full is
    // queued past its credits (over_credit), as a loop in the MFT would
    // otherwise circulate for ever (a real switch ends it with the HOQ
    // lifetime, which is not modelled).
    if (dlid >= kMulticastLidBase && dlid != kPermissiveLid)
        return take();
    if (dlid == 0 || dlid == kPermissiveLid || dlid >= lft_.size() || (lft_top_ && dlid > lft_top_))
        return take();
    uint8_t out = lft_[dlid];
    if (out == 0xff || out == 0 || out > cfg_.num_ports || out == in)
        return take();
    uint8_t vl = out_vl(in, out, v.sl) & 15;
    Port& o = ports_[out];
    bool room = !o.wire || !o.link_up || o.disabled || o.state != PortState::Active ||
                o.wire->ready(vl, p.hdr_len + p.payload_len);
    int32_t key = int32_t(out) * 16 + vl;
    std::vector<uint16_t>& line = egress_waiters_[size_t(key)];
    uint16_t me = uint16_t(in << 4 | in_vl);
    if (room && (line.empty() || line.front() == me))
        return take();
    // Wait in line (once); a head that now goes elsewhere leaves its old line.
    if (waiting_for_[size_t(in) * 16 + in_vl] != key) {
        stop_waiting(in, in_vl);
        line.push_back(me);
        waiting_for_[size_t(in) * 16 + in_vl] = key;
    }
    return false;
}

PortState Switch::port_state(unsigned n) const { return n < ports_.size() ? ports_[n].state : PortState::Down; }

PhysState Switch::phys_state(unsigned n) const
{
    if (n >= ports_.size())
        return PhysState::Disabled;
    const Port& p = ports_[n];
    return p.disabled ? PhysState::Disabled : p.link_up ? PhysState::LinkUp : PhysState::Polling;
}

const SwitchPortCounters& Switch::counters(unsigned n) const { return ports_.at(n).ctr; }

bool Switch::lid_is_mine(uint16_t dlid) const
{
    return lid_ != 0 && (dlid >> lmc_) == (lid_ >> lmc_);
}

void Switch::set_state(unsigned n, PortState s)
{
    Port& p = ports_[n];
    if (p.state == s)
        return;
    IBEMU_INFO(cfg_.name, "port %u %s -> %s", n, port_state_name(p.state), port_state_name(s));
    p.state = s;
}

void Switch::link_changed(unsigned n, bool up, const LinkParams& params)
{
    Port& p = ports_[n];
    if (p.link_up && !up)
        ++p.ctr.link_downed;
    p.link_up = up;
    p.params = params;
    if (!up)  // the link flushed whatever waited in this port's buffer
        for (unsigned vl = 0; vl < 16; ++vl)
            stop_waiting(n, vl);
    // IBA 7.2: the logical state follows the physical link: DOWN while it is
    // down, INIT once it trained.
    set_state(n, up ? PortState::Init : PortState::Down);
    // IBA 14.2.5.4: any port changing state sets PortStateChange; trap
    // 128 (IBA 14.2.5.1, Notices and Traps) tells the SM.
    psc_ = true;
    send_trap128();
}

void Switch::send_on(unsigned out, const Packet& p, bool smp, unsigned in)
{
    Port& o = ports_[out];
    if (!o.wire || !o.link_up || o.disabled) {
        ++o.ctr.xmit_discards;
        if (smp)
            ++dropped_smps_;
        return;
    }
    // IBA section 7.2 (link states): a port in INIT or ARMED passes
    // only SMPs; data packets need ACTIVE.
    if (!smp && o.state != PortState::Active) {
        ++o.ctr.xmit_discards;
        return;
    }
    // IBA 7.7.8 / 14.2.5.6: the egress port carries payloads up to its
    // NeighborMTU (1 = 256 .. 5 = 4096 bytes).
    if (p.payload_len > (128u << o.neighbor_mtu)) {
        ++o.ctr.xmit_discards;
        return;
    }
    if (!smp && in) {
        // IBA 7.6.6: a data packet leaves on the VL the SLtoVLMappingTable
        // of (ingress, egress) gives its SL; VL15 means drop, as does a VL
        // the port does not operate.
        uint8_t vl = out_vl(in, out, uint8_t(p.hdr[1] >> 4));
        unsigned nvl = o.operational_vls >= 5 ? 15 : 1u << (std::max<uint8_t>(o.operational_vls, 1) - 1);
        if (vl >= nvl) {
            ++o.ctr.xmit_discards;
            return;
        }
        if (vl != p.vl) {
            Packet q = p;  // rare: only with a programmed mapping
            q.vl = vl;
            q.hdr[0] = uint8_t((q.hdr[0] & 0x0f) | (vl << 4));
            ++o.ctr.xmit_packets;
            o.ctr.xmit_bytes += q.hdr_len + q.payload_len;
            o.wire->transmit(q);
            return;
        }
    }
    ++o.ctr.xmit_packets;
    o.ctr.xmit_bytes += p.hdr_len + p.payload_len;
    o.wire->transmit(p);
}

void Switch::receive(unsigned in, const Packet& p) { receive(in, p, view_packet(p)); }

void Switch::receive(unsigned in, const Packet& p, const PacketView& v)
{
    Port& ip = ports_[in];
    ++ip.ctr.rcv_packets;
    ip.ctr.rcv_bytes += p.hdr_len + p.payload_len;
    if (!v.valid) {
        ++ip.ctr.rcv_discards;
        return;
    }
    if (v.vl == kSmpVl) {
        // IBA 7.6.3: VL15 carries only SMPs, which are UD to QP0 with
        // an LRH-only (local) header.
        if (v.lnh != lrh::kLnhLocal || !v.has_bth || v.dest_qp != 0) {
            ++ip.ctr.rcv_discards;
            ++dropped_smps_;
            return;
        }
        if (v.dlid == kPermissiveLid || lid_is_mine(v.dlid)) {
            smi_receive(in, p, v.bth_offset, v.slid, v.dlid);
            return;
        }
        // LID routed SMP passing through (IBA 18.2.4.1: by the LFT).
        uint8_t out = v.dlid < lft_.size() ? lft_[v.dlid] : 0xff;
        if (out == 0xff || out == 0 || out > cfg_.num_ports) {
            ++ip.ctr.vl15_dropped;
            ++dropped_smps_;
            return;
        }
        send_on(out, p, true);
        return;
    }
    // Data VLs: the ingress port must be ARMED or ACTIVE (IBA 7.2, table of
    // port states: INIT passes only SMPs).
    if (ip.state != PortState::Armed && ip.state != PortState::Active) {
        ++ip.ctr.rcv_discards;
        return;
    }
    if (lid_is_mine(v.dlid)) {
        // To the switch itself: only the PMA behind QP1 listens.
        if (v.has_bth && v.dest_qp == 1 && v.lnh == lrh::kLnhLocal)
            gsi_receive(in, p, v.bth_offset);
        else
            ++ip.ctr.rcv_discards;
        return;
    }
    // Partition enforcement on the way in (IBA 10.9.2, 14.2.5.6).
    if (!partition_ok(ip, v)) {
        ++ip.ctr.rcv_constraint;
        return;
    }
    forward_data(in, p, v);
}

// P_Key match (IBA 10.9.3): the low 15 bits equal and not zero, and at
// least one of the two a full member.
static bool pkey_match(uint16_t a, uint16_t b)
{
    return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

bool Switch::partition_ok(const Port& pt, const PacketView& v, bool outbound) const
{
    // PortInfo PartitionEnforcement: bit 3 inbound, bit 2 outbound P_Key
    // checks; bit 1 / bit 0 drop raw packets (no BTH) inbound / outbound.
    uint8_t pe = pt.part_enforce;
    if (!v.has_bth)
        return !(pe & (outbound ? 1 : 2));
    if (!(pe & (outbound ? 4 : 8)))
        return true;
    for (uint16_t k : pt.pkeys)
        if (pkey_match(k, v.pkey))
            return true;
    return false;
}

void Switch::forward_data(unsigned in, const Packet& p, const PacketView& v)
{
    Port& ip = ports_[in];
    uint16_t dlid = v.dlid;
    // Outbound enforcement: counted at the egress port, the packet dropped.
    auto egress = [&](unsigned out) {
        Port& o = ports_[out];
        if (!partition_ok(o, v, true)) {
            ++o.ctr.xmit_constraint;
            return;
        }
        send_on(out, p, false, in);
    };
    if (dlid >= kMulticastLidBase && dlid != kPermissiveLid) {
        // IBA 18.2.4.2: multicast by the MFT, never back out the ingress port.
        unsigned idx = dlid - kMulticastLidBase;
        if (idx >= cfg_.mft_cap || (mft_top_ && dlid > mft_top_)) {
            ++ip.ctr.relay_errors;
            return;
        }
        bool any = false;
        for (unsigned pos = 0; pos < mft_positions_; ++pos) {
            uint16_t mask = mft_[size_t(idx) * mft_positions_ + pos];
            for (unsigned b = 0; b < 16 && mask; ++b) {
                if (!(mask & (1u << b)))
                    continue;
                unsigned out = pos * 16 + b;
                if (out == 0 || out == in || out > cfg_.num_ports)
                    continue;
                any = true;
                egress(out);
            }
        }
        if (!any)
            ++ip.ctr.relay_errors;
        return;
    }
    if (dlid == 0 || dlid == kPermissiveLid || (lft_top_ && dlid > lft_top_) || dlid >= lft_.size()) {
        ++ip.ctr.relay_errors;
        return;
    }
    uint8_t out = lft_[dlid];
    // Entry 255 is "no route"; 0 is the management port, which has no data
    // consumers in this model; a packet never turns back on its ingress port.
    if (out == 0xff || out == 0 || out > cfg_.num_ports || out == in) {
        ++ip.ctr.relay_errors;
        return;
    }
    egress(out);
}

// Directed route SMPs, IBA 14.2.2.2 (C14-6 .. C14-13).
void Switch::smi_receive(unsigned in, const Packet& p, unsigned bth_off, uint16_t lrh_slid, uint16_t lrh_dlid)
{
    uint8_t buf[lrh::kSize + bth::kSize + deth::kSize + mad::kSize];
    unsigned mad_off = kMadHdrOffset(bth_off);
    if (mad_off + mad::kSize > sizeof buf || flatten(p, buf) < mad_off + mad::kSize) {
        ++ports_[in].ctr.rcv_discards;
        ++dropped_smps_;
        return;
    }
    std::span<const uint8_t> hdr(buf, mad_off);
    std::span<uint8_t> mad(buf + mad_off, mad::kSize);
    uint8_t sl = uint8_t(lrh::kSl.get(hdr));
    uint8_t cls = uint8_t(mad::kMgmtClass.get(mad));

    auto drop = [&](const char* why) {
        ++dropped_smps_;
        IBEMU_DEBUG(cfg_.name, "SMP on port %u dropped: %s", in, why);
    };

    if (cls == mad::kClassSubnLid) {
        if (!lid_is_mine(lrh_dlid))
            return drop("LID routed SMP to the permissive LID");
        sma_process(in, hdr, mad, lrh_slid, sl);
        return;
    }
    if (cls != mad::kClassSubnDirected)
        return drop("not an SMP class on QP0");

    unsigned hop_cnt = unsigned(smp::kHopCount.get(mad));
    unsigned hop_ptr = unsigned(smp::kHopPointer.get(mad));
    bool returning = smp::kDirection.get(mad) != 0;
    uint16_t dr_slid = uint16_t(smp::kDrSlid.get(mad));
    uint16_t dr_dlid = uint16_t(smp::kDrDlid.get(mad));
    uint8_t* initial = mad.data() + smp::kInitialPathOffset;
    uint8_t* ret = mad.data() + smp::kReturnPathOffset;
    auto valid_out = [&](unsigned port) { return port >= 1 && port <= cfg_.num_ports; };

    // C14-6: hop counts 0..63 only.
    if (hop_cnt >= smp::kMaxHops)
        return drop("hop count over 63");

    if (!returning) {
        if (hop_ptr == 0 && hop_cnt > 0) {
            // C14-9:1: the sender increments the hop pointer. A switch is
            // the sender only when an initial LID routed part (DrSLID not
            // permissive) brought the SMP to its LID.
            if (lrh_dlid == kPermissiveLid || !lid_is_mine(lrh_dlid))
                return drop("C14-9:1 hop pointer 0 on the wire");
            hop_ptr = 1;
            if (!valid_out(initial[hop_ptr]))
                return drop("C14-9:1 bad initial path");
            smp::kHopPointer.set(mad, hop_ptr);
            smi_send_dr(initial[hop_ptr], hdr, mad);
            return;
        }
        if (hop_ptr >= 1 && hop_ptr < hop_cnt) {
            // C14-9:2: intermediate hop. Record where it came from, move
            // on along the initial path.
            ret[hop_ptr] = uint8_t(in);
            ++hop_ptr;
            if (!valid_out(initial[hop_ptr]))
                return drop("C14-9:2 bad initial path");
            smp::kHopPointer.set(mad, hop_ptr);
            smi_send_dr(initial[hop_ptr], hdr, mad);
            return;
        }
        if (hop_ptr == hop_cnt) {
            // C14-9:3: end of the directed part.
            if (hop_cnt)
                ret[hop_ptr] = uint8_t(in);
            ++hop_ptr;
            smp::kHopPointer.set(mad, hop_ptr);
            if (dr_dlid == kPermissiveLid) {
                sma_process(in, hdr, mad, lrh_slid, sl);
                return;
            }
            // A final LID routed part toward DrDLID, from this switch.
            if (!lid_ || lid_is_mine(dr_dlid)) {
                if (lid_is_mine(dr_dlid))
                    sma_process(in, hdr, mad, lrh_slid, sl);
                else
                    drop("C14-9:3 LID routed part without a switch LID");
                return;
            }
            smi_lid_route(hdr, mad, dr_dlid, sl);
            return;
        }
        if (hop_ptr == hop_cnt + 1) {
            // C14-9:4: arrived over the final LID routed part.
            if (!lid_is_mine(lrh_dlid))
                return drop("C14-9:4 not addressed to this switch");
            sma_process(in, hdr, mad, lrh_slid, sl);
            return;
        }
        return drop("C14-9:5 unreasonable hop pointer");
    }

    if (hop_cnt && hop_ptr == hop_cnt + 1) {
        // C14-13:1: a response LID routed back to the switch that ended the
        // directed part; it re-enters the return path here.
        if (!lid_is_mine(lrh_dlid))
            return drop("C14-13:1 not addressed to this switch");
        --hop_ptr;
        if (!valid_out(ret[hop_ptr]))
            return drop("C14-13:1 bad return path");
        smp::kHopPointer.set(mad, hop_ptr);
        smi_send_dr(ret[hop_ptr], hdr, mad);
        return;
    }
    if (hop_ptr >= 2 && hop_ptr <= hop_cnt) {
        // C14-13:2: intermediate hop on the way back.
        --hop_ptr;
        if (!valid_out(ret[hop_ptr]))
            return drop("C14-13:2 bad return path");
        smp::kHopPointer.set(mad, hop_ptr);
        smi_send_dr(ret[hop_ptr], hdr, mad);
        return;
    }
    if (hop_ptr == 1) {
        // C14-13:3: end of the directed part of the return path. With a
        // permissive DrSLID the requester (an SM) would be here, and a
        // switch has none; otherwise LID route on to DrSLID.
        smp::kHopPointer.set(mad, 0);
        if (dr_slid == kPermissiveLid || !lid_)
            return drop("C14-13:3 SMP for an SM on the switch");
        smi_lid_route(hdr, mad, dr_slid, sl);
        return;
    }
    drop("C14-13:4/5 unreasonable hop pointer on the return path");
}

void Switch::smi_send_dr(unsigned out, std::span<const uint8_t> hdr, std::span<const uint8_t> mad)
{
    Packet p;
    UdAddress a;
    a.dlid = kPermissiveLid;
    a.slid = kPermissiveLid;
    a.sl = uint8_t(lrh::kSl.get(hdr));
    a.vl = kSmpVl;
    build_ud(p, a, mad);
    send_on(out, p, true);
}

void Switch::smi_lid_route(std::span<const uint8_t> hdr, std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl)
{
    (void)hdr;
    uint8_t out = dlid < lft_.size() ? lft_[dlid] : 0xff;
    if (out == 0xff || out == 0 || out > cfg_.num_ports) {
        ++dropped_smps_;
        return;
    }
    Packet p;
    UdAddress a;
    a.dlid = dlid;
    a.slid = lid_;
    a.sl = sl;
    a.vl = kSmpVl;
    build_ud(p, a, mad);
    send_on(out, p, true);
}

void Switch::sma_process(unsigned in, std::span<const uint8_t> hdr, std::span<uint8_t> mad, uint16_t lrh_slid,
                         uint8_t sl)
{
    ++ports_[in].ctr.smps_handled;
    uint8_t method = uint8_t(mad::kMethod.get(mad));
    bool dr = mad::kMgmtClass.get(mad) == mad::kClassSubnDirected;
    if (method == mad::kMethodTrapRepress)
        return;  // IBA 14.2.5.1: the SM acknowledges a trap; traps are not repeated here
    if (method & 0x80)
        return;  // a response: the switch asked nothing

    uint16_t attr = uint16_t(mad::kAttrId.get(mad));
    uint32_t mod = uint32_t(mad::kAttrMod.get(mad));
    std::span<uint8_t> data = mad.subspan(smp::kDataOffset, smp::kDataSize);
    // M_Key check (IBA 14.2.4.1, C14-17 .. C14-20; the rules live in
    // ib::MkeyGuard): a failing SMP is dropped without a response, counted
    // in MKeyViolations and reported with trap 256. Protect 1 lets a Get
    // through with the M_Key read as zero. The lease expires lazily: only
    // an SMP can observe the protect bits.
    mkey_.expire(sched_.now());
    auto verdict = mkey_.check(method, smp::kMkey.get(mad), sched_.now());
    if (verdict == ib::MkeyGuard::Verdict::Violation) {
        ++dropped_smps_;
        send_trap256(mad, lrh_slid);
        return;
    }
    bool key_ok = verdict == ib::MkeyGuard::Verdict::Pass;
    uint16_t status = 0;
    if (mad::kBaseVersion.get(mad) != 1 || mad::kClassVersion.get(mad) != 1) {
        status = mad::kStatusBadVersion;  // IBA 13.4.7
    } else if (method == mad::kMethodGet) {
        std::fill(data.begin(), data.end(), 0);
        status = sma_get(in, attr, mod, data);
    } else if (method == mad::kMethodSet) {
        status = sma_set(in, attr, mod, data);
        if (status == 0)
            status = sma_get(in, attr, mod, data);
    } else {
        status = mad::kStatusUnsupMethod;
    }

    if (!key_ok && attr == smp::kAttrPortInfo)
        put64(data, 0, 0);  // protect 1: the M_Key reads as zero
    mad::kMethod.set(mad, mad::kMethodGetResp);
    if (dr) {
        smp::kDrStatus.set(mad, status);
        smp::kDirection.set(mad, 1);
    } else {
        mad::kStatus.set(mad, status);
    }

    if (!dr) {
        // LID routed response to the requester's LID (IBA 14.2.1.1).
        if (!lid_)
            return;
        uint8_t out = lrh_slid < lft_.size() ? lft_[lrh_slid] : 0xff;
        if (out == 0xff || out == 0 || out > cfg_.num_ports)
            out = uint8_t(in);
        Packet p;
        UdAddress a;
        a.dlid = lrh_slid;
        a.slid = lid_;
        a.sl = sl;
        a.vl = kSmpVl;
        build_ud(p, a, mad);
        send_on(out, p, true);
    } else {
        unsigned hop_cnt = unsigned(smp::kHopCount.get(mad));
        unsigned hop_ptr = unsigned(smp::kHopPointer.get(mad));
        uint16_t dr_slid = uint16_t(smp::kDrSlid.get(mad));
        uint16_t dr_dlid = uint16_t(smp::kDrDlid.get(mad));
        if (dr_dlid != kPermissiveLid) {
            // Reached over a final LID routed part: back to the switch that
            // began it, which continues with C14-13:1.
            if (lid_)
                smi_lid_route(hdr, mad, lrh_slid, sl);
        } else if (hop_cnt == 0) {
            if (dr_slid != kPermissiveLid && lid_)
                smi_lid_route(hdr, mad, dr_slid, sl);
        } else {
            // C14-13:1 as the sender of the response.
            --hop_ptr;
            smp::kHopPointer.set(mad, hop_ptr);
            const uint8_t* ret = mad.data() + smp::kReturnPathOffset;
            if (ret[hop_ptr] >= 1 && ret[hop_ptr] <= cfg_.num_ports)
                smi_send_dr(ret[hop_ptr], hdr, mad);
            else
                ++dropped_smps_;
        }
    }
    // Port enables/disables requested by the Set take effect after the
    // response left (the SM may have disabled the port it talks through).
    if (!pending_enable_.empty() && enable_hook_) {
        auto pending = std::move(pending_enable_);
        pending_enable_.clear();
        for (auto [port, en] : pending)
            enable_hook_(port, en);
    }
}

namespace {

// What the switch ports' PHYs can do (PortInfo LinkWidth/LinkSpeed
// encodings): 1x | 4x at 2.5 Gb/s (SDR), as the InfiniScale III's 4x ports.
constexpr uint8_t kSwitchWidths = 0x3;
constexpr uint8_t kSwitchSpeeds = 0x1;

// The highest bit of `supported & enabled` not above what the link
// offers (widths 1/2/4/8 = 1x/4x/8x/12x, speeds 1/2/4 = SDR/DDR/QDR are
// both ordered by bit); the lowest supported one when none is common.
uint8_t trained(uint8_t offered, uint8_t enabled, uint8_t supported)
{
    for (uint8_t b : {8, 4, 2, 1})
        if ((enabled & supported & b) && b <= offered)
            return b;
    return 1;
}

}  // namespace

void Switch::fill_port_info(unsigned in, unsigned n, std::span<uint8_t> d) const
{
    using namespace portinfo;
    const Port& p = ports_[n];
    // Port 0 has no physical link of its own; it reports an up 4x SDR link.
    LinkParams lp = n == 0 ? LinkParams{} : p.params;
    // The link trains to the best width and speed both ends can do (IBA
    // 5.6 and 6.6, link training): what the cable offers, clamped to what
    // this port supports and has enabled, as the HCA's ports do. A 12x or
    // DDR cable therefore comes up 4x SDR here.
    bool up = n == 0 || p.link_up;
    uint8_t width_active = up ? trained(lp.width, p.width_enabled, kSwitchWidths) : 0;
    uint8_t speed_active = up ? trained(lp.speed, p.speed_enabled, kSwitchSpeeds) : 0;
    uint8_t phys = uint8_t(n == 0 ? PhysState::LinkUp : phys_state(n));
    // LID, M_Key, GIDPrefix, MasterSMLID, LMC and the timers belong to port
    // 0 (IBA 14.2.5.6, switch notes); external ports report port 0's.
    const FieldValue table[] = {
        {kMkey, mkey_.key()},
        {kGidPrefix, gid_prefix_},
        {kLid, lid_},
        {kMasterSmLid, sm_lid_},
        {kCapMask, n == 0 ? kSwitchCapMask : 0},
        {kDiagCode, 0},
        {kMkeyLease, mkey_.lease_period()},
        {kLocalPortNum, in},
        {kWidthEnabled, p.width_enabled},
        {kWidthSupported, kSwitchWidths},
        {kWidthActive, width_active},
        {kSpeedSupported, kSwitchSpeeds},
        {kPortState, uint64_t(p.state)},
        {kPhysState, phys},
        {kDownDefault, p.down_default},
        {kMkeyProtect, mkey_.protect()},
        {kLmc, lmc_},
        {kSpeedActive, speed_active},
        {kSpeedEnabled, p.speed_enabled},
        {kNeighborMtu, p.neighbor_mtu},
        {kMasterSmSl, sm_sl_},
        {kVlCap, cfg_.vl_cap},
        {kInitType, 0},
        {kVlHighLimit, p.vl_high_limit},
        {kVlArbHighCap, 8},
        {kVlArbLowCap, 8},
        {kMtuCap, cfg_.mtu_cap},
        {kVlStallCount, p.vl_stall},
        {kHoqLife, p.hoq_life},
        {kOperationalVls, p.operational_vls},
        {kPartEnforce, p.part_enforce},
        {kMkeyViolations, mkey_.violations()},
        {kGuidCap, n == 0 ? 1u : 0u},
        {kSubnetTimeout, subnet_timeout_},
        {kRespTime, 8},
    };
    fill(d, table);
}

uint16_t Switch::set_port_info(unsigned n, std::span<const uint8_t> d)
{
    using namespace portinfo;
    Port& p = ports_[n];
    // Validate everything first: an invalid Set changes nothing (IBA
    // 14.2.5.6 on PortState transitions).
    PortState req = PortState(kPortState.get(d));
    PortState next = p.state;
    switch (req) {
    case PortState::NoChange: break;
    case PortState::Down:
        // The link retrains; while it is physically up the port is back in
        // INIT at once.
        next = p.link_up ? PortState::Init : PortState::Down;
        break;
    case PortState::Armed:
        if (p.state != PortState::Init && p.state != PortState::Armed)
            return mad::kStatusInvalidField;
        next = PortState::Armed;
        break;
    case PortState::Active:
        if (p.state != PortState::Armed && p.state != PortState::Active)
            return mad::kStatusInvalidField;
        next = PortState::Active;
        break;
    default:  // INIT cannot be requested; 5..15 are reserved
        return mad::kStatusInvalidField;
    }
    uint8_t phys = uint8_t(kPhysState.get(d));
    if (phys != 0 && phys != uint8_t(PhysState::Polling) && phys != uint8_t(PhysState::Disabled))
        return mad::kStatusInvalidField;
    uint8_t nmtu = uint8_t(kNeighborMtu.get(d));
    if (n != 0 && nmtu > cfg_.mtu_cap)
        return mad::kStatusInvalidField;
    uint8_t opvls = uint8_t(kOperationalVls.get(d));
    if (opvls > cfg_.vl_cap)
        return mad::kStatusInvalidField;

    if (n == 0) {
        // M_Key, GIDPrefix, LID, LMC, MasterSMLID/SL, the M_Key lease and
        // protection and SubnetTimeout belong to port 0; on external ports
        // they are ignored on Set (IBA 14.2.5.6, switch notes), so an SM
        // writing back an old copy of an external port cannot undo them.
        mkey_.assign(kMkey.get(d), uint8_t(kMkeyProtect.get(d)), uint16_t(kMkeyLease.get(d)));
        mkey_.set_violations(uint16_t(kMkeyViolations.get(d)));
        gid_prefix_ = kGidPrefix.get(d);
        lid_ = uint16_t(kLid.get(d));
        lmc_ = uint8_t(kLmc.get(d));
        sm_lid_ = uint16_t(kMasterSmLid.get(d));
        sm_sl_ = uint8_t(kMasterSmSl.get(d));
        subnet_timeout_ = uint8_t(kSubnetTimeout.get(d));
    }
    // LinkWidthEnabled 0xff and LinkSpeedEnabled 15 mean "all supported";
    // 0 means no change.
    if (uint8_t we = uint8_t(kWidthEnabled.get(d)))
        p.width_enabled = we == 0xff ? kSwitchWidths : we;
    if (uint8_t se = uint8_t(kSpeedEnabled.get(d)))
        p.speed_enabled = se == 15 ? kSwitchSpeeds : se;
    if (kDownDefault.get(d))
        p.down_default = uint8_t(kDownDefault.get(d));
    if (n != 0 && nmtu)
        p.neighbor_mtu = nmtu;
    if (opvls)
        p.operational_vls = opvls;
    if (p.vl_high_limit != uint8_t(kVlHighLimit.get(d))) {
        p.vl_high_limit = uint8_t(kVlHighLimit.get(d));
        push_arbitration(n);
    }
    p.hoq_life = uint8_t(kHoqLife.get(d));
    p.vl_stall = uint8_t(kVlStallCount.get(d));
    p.part_enforce = uint8_t(kPartEnforce.get(d));
    if (next != p.state) {
        set_state(n, next);
        // PortStateChange reports link events (to or from DOWN/INIT), not
        // the SM's own ARMED/ACTIVE steps (IBA 14.2.5.4); a Set to DOWN
        // retrains the link, which is one.
        if (n != 0 && req == PortState::Down)
            psc_ = true;
    }
    if (n != 0 && phys == uint8_t(PhysState::Disabled) && !p.disabled) {
        p.disabled = true;
        pending_enable_.emplace_back(n, false);
    } else if (n != 0 && phys == uint8_t(PhysState::Polling) && p.disabled) {
        p.disabled = false;
        pending_enable_.emplace_back(n, true);
    }
    return 0;
}

uint16_t Switch::sma_get(unsigned in, uint16_t attr, uint32_t mod, std::span<uint8_t> d)
{
    const unsigned N = cfg_.num_ports;
    switch (attr) {
    case smp::kAttrNodeDesc: {
        size_t n = std::min<size_t>(cfg_.description.size(), 64);
        std::memcpy(d.data(), cfg_.description.data(), n);
        return 0;
    }
    case smp::kAttrNodeInfo: {
        using namespace nodeinfo;
        const FieldValue table[] = {
            {kBaseVersion, 1},
            {kClassVersion, 1},
            {kNodeType, kNodeTypeSwitch},
            {kNumPorts, N},
            {kSysImageGuid, cfg_.sys_image_guid},
            {kNodeGuid, cfg_.node_guid},
            {kPortGuid, cfg_.node_guid},  // one port GUID, port 0's
            {kPartitionCap, cfg_.pkey_cap},
            {kDeviceId, cfg_.device_id},
            {kRevision, cfg_.revision},
            {kLocalPortNum, in},
            {kVendorId, cfg_.vendor_id},
        };
        fill(d, table);
        return 0;
    }
    case smp::kAttrSwitchInfo: {
        using namespace switchinfo;
        const FieldValue table[] = {
            {kLftCap, cfg_.lft_cap},
            {kRftCap, 0},
            {kMftCap, cfg_.mft_cap},
            {kLftTop, lft_top_},
            {kDefaultPort, default_port_},
            {kDefaultMcPrimary, default_mc_primary_},
            {kDefaultMcNotPrimary, default_mc_not_primary_},
            {kLifeTime, life_time_},
            {kPortStateChange, psc_},
            {kOptSl2Vl, 0},
            {kLidsPerPort, 0},
            {kEnforceCap, cfg_.pkey_cap},
            {kInboundEnf, 1},
            {kOutboundEnf, 1},
            {kFilterRawIn, 0},
            {kFilterRawOut, 0},
            {kEnhancedPort0, 0},
            {kMftTop, mft_top_},
        };
        fill(d, table);
        return 0;
    }
    case smp::kAttrGuidInfo:
        // Port 0 has one GUID (GUIDCap 1), in block 0.
        if (mod != 0)
            return mad::kStatusInvalidField;
        put64(d, 0, cfg_.node_guid);
        return 0;
    case smp::kAttrPortInfo:
        // For a switch the modifier is the port number, 0 included.
        if (mod > N)
            return mad::kStatusInvalidField;
        fill_port_info(in, mod, d);
        return 0;
    case smp::kAttrPkeyTable: {
        // Modifier: port in 31:16, block of 32 P_Keys in 15:0 (14.2.5.7).
        unsigned port = mod >> 16, block = mod & 0xffff;
        if (port > N || block * 32 >= ports_[port].pkeys.size())
            return mad::kStatusInvalidField;
        const auto& pk = ports_[port].pkeys;
        for (unsigned i = 0; i < 32 && block * 32 + i < pk.size(); ++i)
            put16(d, i * 2, pk[block * 32 + i]);
        return 0;
    }
    case smp::kAttrSlToVl: {
        // Modifier: input port 15:8, output port 7:0 (14.2.5.8).
        unsigned ip = (mod >> 8) & 0xff, op = mod & 0xff;
        if (ip > N || op > N || (mod >> 16))
            return mad::kStatusInvalidField;
        std::memcpy(d.data(), &sl2vl_[(size_t(ip) * (N + 1) + op) * 8], 8);
        return 0;
    }
    case smp::kAttrVlArb: {
        // Modifier: block 1..4 in 31:16, port in 15:0 (14.2.5.9).
        unsigned block = mod >> 16, port = mod & 0xffff;
        if (block < 1 || block > 4 || port > N)
            return mad::kStatusInvalidField;
        std::memcpy(d.data(), &ports_[port].vlarb[(block - 1) * 64], 64);
        return 0;
    }
    case smp::kAttrLft: {
        // 64 ports per block, modifier = block (14.2.5.10).
        if (mod >= cfg_.lft_cap / 64u)
            return mad::kStatusInvalidField;
        std::memcpy(d.data(), &lft_[size_t(mod) * 64], 64);
        return 0;
    }
    case smp::kAttrMft: {
        // Modifier: port-mask position in 31:28, block of 32 MLIDs in 8:0
        // (14.2.5.12).
        unsigned pos = mod >> 28, block = mod & 0x1ff;
        if (pos >= mft_positions_ || (mod & 0x0ffffe00) || block >= (cfg_.mft_cap + 31u) / 32u)
            return mad::kStatusInvalidField;
        for (unsigned i = 0; i < 32 && block * 32 + i < cfg_.mft_cap; ++i)
            put16(d, i * 2, mft_[size_t(block * 32 + i) * mft_positions_ + pos]);
        return 0;
    }
    default:
        return mad::kStatusUnsupMethodAttr;
    }
}

uint16_t Switch::sma_set(unsigned in, uint16_t attr, uint32_t mod, std::span<uint8_t> d)
{
    (void)in;
    const unsigned N = cfg_.num_ports;
    switch (attr) {
    case smp::kAttrSwitchInfo: {
        using namespace switchinfo;
        uint16_t top = uint16_t(kLftTop.get(d));
        uint16_t mtop = uint16_t(kMftTop.get(d));
        // Validate before changing anything.
        if (top >= cfg_.lft_cap ||
            (mtop && (mtop < kMulticastLidBase || mtop - kMulticastLidBase >= cfg_.mft_cap)))
            return mad::kStatusInvalidField;
        lft_top_ = top;
        default_port_ = uint8_t(kDefaultPort.get(d));
        default_mc_primary_ = uint8_t(kDefaultMcPrimary.get(d));
        default_mc_not_primary_ = uint8_t(kDefaultMcNotPrimary.get(d));
        life_time_ = uint8_t(kLifeTime.get(d));
        // PortStateChange is cleared by writing 1 (14.2.5.4).
        if (kPortStateChange.get(d))
            psc_ = false;
        mft_top_ = mtop;
        return 0;
    }
    case smp::kAttrPortInfo:
        if (mod > N)
            return mad::kStatusInvalidField;
        return set_port_info(mod, d);
    case smp::kAttrPkeyTable: {
        unsigned port = mod >> 16, block = mod & 0xffff;
        if (port > N || block * 32 >= ports_[port].pkeys.size())
            return mad::kStatusInvalidField;
        auto& pk = ports_[port].pkeys;
        for (unsigned i = 0; i < 32 && block * 32 + i < pk.size(); ++i)
            pk[block * 32 + i] = get16(d, i * 2);
        return 0;
    }
    case smp::kAttrSlToVl: {
        unsigned ip = (mod >> 8) & 0xff, op = mod & 0xff;
        if (ip > N || op > N || (mod >> 16))
            return mad::kStatusInvalidField;
        std::memcpy(&sl2vl_[(size_t(ip) * (N + 1) + op) * 8], d.data(), 8);
        return 0;
    }
    case smp::kAttrVlArb: {
        unsigned block = mod >> 16, port = mod & 0xffff;
        if (block < 1 || block > 4 || port > N)
            return mad::kStatusInvalidField;
        std::memcpy(&ports_[port].vlarb[(block - 1) * 64], d.data(), 64);
        push_arbitration(port);
        return 0;
    }
    case smp::kAttrLft:
        if (mod >= cfg_.lft_cap / 64u)
            return mad::kStatusInvalidField;
        std::memcpy(&lft_[size_t(mod) * 64], d.data(), 64);
        return 0;
    case smp::kAttrMft: {
        unsigned pos = mod >> 28, block = mod & 0x1ff;
        if (pos >= mft_positions_ || (mod & 0x0ffffe00) || block >= (cfg_.mft_cap + 31u) / 32u)
            return mad::kStatusInvalidField;
        for (unsigned i = 0; i < 32 && block * 32 + i < cfg_.mft_cap; ++i)
            mft_[size_t(block * 32 + i) * mft_positions_ + pos] = get16(d, i * 2);
        return 0;
    }
    case smp::kAttrNodeDesc:
    case smp::kAttrNodeInfo:
    case smp::kAttrGuidInfo:
        return mad::kStatusUnsupMethodAttr;  // read-only attributes
    default:
        return mad::kStatusUnsupMethodAttr;
    }
}

namespace {

// PortCounters (IBA 16.1.3.5), offsets in the PMA data.
namespace pc = ib::portcounters;

// PMA counters saturate at their width (IBA 16.1.3.5).
uint64_t sat(uint64_t v, const Field& f) { return std::min(v, f.mask()); }

}  // namespace

uint16_t Switch::pma_port_counters(uint8_t method, std::span<uint8_t> d)
{
    unsigned port = unsigned(pc::kPortSelect.get(d));
    // No AllPortSelect (ClassPortInfo says so): one port, 0..N.
    if (port > cfg_.num_ports)
        return mad::kStatusInvalidField;
    SwitchPortCounters& c = ports_[port].ctr;
    if (method == mad::kMethodSet) {
        uint16_t sel = uint16_t(pc::kCounterSelect.get(d));
        if (sel & pc::kSelLinkDowned)
            c.link_downed = 0;
        if (sel & pc::kSelRcvErrors)
            c.rcv_discards = 0;
        if (sel & pc::kSelRelay)
            c.relay_errors = 0;
        if (sel & pc::kSelXmitDiscards)
            c.xmit_discards = 0;
        if (sel & pc::kSelVl15)
            c.vl15_dropped = 0;
        if (sel & pc::kSelXmitConstraint)
            c.xmit_constraint = 0;
        if (sel & pc::kSelRcvConstraint)
            c.rcv_constraint = 0;
        if (sel & pc::kSelXmitData)
            c.xmit_bytes = 0;
        if (sel & pc::kSelRcvData)
            c.rcv_bytes = 0;
        if (sel & pc::kSelXmitPkts)
            c.xmit_packets = 0;
        if (sel & pc::kSelRcvPkts)
            c.rcv_packets = 0;
    }
    std::fill(d.begin() + 4, d.end(), 0);
    const FieldValue t[] = {
        {pc::kLinkDowned, sat(c.link_downed, pc::kLinkDowned)},
        {pc::kRcvErrors, sat(c.rcv_discards, pc::kRcvErrors)},
        {pc::kRelayErrors, sat(c.relay_errors, pc::kRelayErrors)},
        {pc::kXmitDiscards, sat(c.xmit_discards, pc::kXmitDiscards)},
        {pc::kVl15Dropped, sat(c.vl15_dropped, pc::kVl15Dropped)},
        {pc::kXmitConstraint, sat(c.xmit_constraint, pc::kXmitConstraint)},
        {pc::kRcvConstraint, sat(c.rcv_constraint, pc::kRcvConstraint)},
        {pc::kXmitData, sat(c.xmit_bytes / 4, pc::kXmitData)},
        {pc::kRcvData, sat(c.rcv_bytes / 4, pc::kRcvData)},
        {pc::kXmitPkts, sat(c.xmit_packets, pc::kXmitPkts)},
        {pc::kRcvPkts, sat(c.rcv_packets, pc::kRcvPkts)},
    };
    fill(d, t);
    return 0;
}

void Switch::gsi_receive(unsigned in, const Packet& p, unsigned bth_off)
{
    uint8_t buf[lrh::kSize + bth::kSize + deth::kSize + mad::kSize];
    unsigned mad_off = kMadHdrOffset(bth_off);
    if (mad_off + mad::kSize > sizeof buf || flatten(p, buf) < mad_off + mad::kSize) {
        ++ports_[in].ctr.rcv_discards;
        return;
    }
    std::span<const uint8_t> h(buf, mad_off);
    std::span<uint8_t> mad(buf + mad_off, mad::kSize);
    uint16_t slid = uint16_t(lrh::kSlid.get(h));
    uint8_t sl = uint8_t(lrh::kSl.get(h));
    uint16_t pkey = uint16_t(bth::kPkey.get(h.subspan(bth_off)));
    uint32_t src_qp = uint32_t(deth::kSrcQp.get(h.subspan(bth_off + bth::kSize)));
    uint8_t method = uint8_t(mad::kMethod.get(mad));
    if (mad::kMgmtClass.get(mad) != mad::kClassPerf || (method & 0x80)) {
        ++ports_[in].ctr.rcv_discards;  // no other GSI agent on the switch
        return;
    }
    uint16_t attr = uint16_t(mad::kAttrId.get(mad));
    std::span<uint8_t> data = mad.subspan(pma::kDataOffset);
    uint16_t status = 0;
    if (mad::kBaseVersion.get(mad) != 1 || mad::kClassVersion.get(mad) != 1) {
        status = mad::kStatusBadVersion;
    } else if (method != mad::kMethodGet && method != mad::kMethodSet) {
        status = mad::kStatusUnsupMethod;
    } else if (attr == pma::kAttrClassPortInfo && method == mad::kMethodGet) {
        std::fill(data.begin(), data.end(), 0);
        data[0] = 1;  // BaseVersion
        data[1] = 1;  // ClassVersion
        put32(data, 4, 18);  // CapabilityMask2 0, RespTimeValue 18
    } else if (attr == pma::kAttrPortCounters) {
        status = pma_port_counters(method, data);
    } else {
        status = mad::kStatusUnsupMethodAttr;
    }
    mad::kMethod.set(mad, mad::kMethodGetResp);
    mad::kStatus.set(mad, status);
    uint8_t out = slid < lft_.size() ? lft_[slid] : 0xff;
    if (out == 0xff || out == 0 || out > cfg_.num_ports)
        out = uint8_t(in);
    Packet r;
    UdAddress a;
    a.dlid = slid;
    a.slid = lid_;
    a.sl = sl;
    a.vl = 0;
    a.dest_qp = src_qp;
    a.src_qp = 1;
    a.qkey = kQp1Qkey;
    a.pkey = pkey;
    build_ud(r, a, mad);
    send_on(out, r, false);
}

void Switch::send_trap(std::span<const uint8_t> ntc, unsigned number)
{
    // IBA 14.2.5.1: traps go LID routed to PortInfo:MasterSMLID; without a
    // switch LID or an SM LID there is nobody to tell. The M_Key field
    // carries the switch's M_Key, which the SM's TrapRepress echoes.
    if (!lid_ || !sm_lid_)
        return;
    uint8_t mad[mad::kSize] = {};
    std::span<uint8_t> m(mad, sizeof mad);
    const FieldValue hdr[] = {
        {mad::kBaseVersion, 1},  {mad::kMgmtClass, mad::kClassSubnLid}, {mad::kClassVersion, 1},
        {mad::kMethod, mad::kMethodTrap}, {mad::kTid, ++trap_tid_},   {mad::kAttrId, smp::kAttrNotice},
        {smp::kMkey, mkey_.key()},
    };
    fill(m, hdr);
    std::memcpy(mad + smp::kDataOffset, ntc.data(), std::min<size_t>(ntc.size(), smp::kDataSize));
    uint8_t out = sm_lid_ < lft_.size() ? lft_[sm_lid_] : 0xff;
    if (out == 0xff || out == 0 || out > cfg_.num_ports) {
        IBEMU_DEBUG(cfg_.name, "trap %u: no route to SM LID %u", number, sm_lid_);
        return;
    }
    IBEMU_INFO(cfg_.name, "trap %u to SM LID %u via port %u", number, sm_lid_, out);
    ++ports_[out].ctr.traps_sent;
    smi_lid_route({}, m, sm_lid_, sm_sl_);
}

void Switch::send_trap128()
{
    uint8_t d[smp::kDataSize] = {};
    const FieldValue ntc[] = {
        {notice::kIsGeneric, 1},
        {notice::kType, notice::kTypeUrgent},
        {notice::kProducerType, notice::kProducerSwitch},
        {notice::kTrapNumber, 128},
        {notice::kIssuerLid, lid_},
        {notice::kToggleCount, 0},
        {notice::kTrap128Lid, lid_},
    };
    fill(std::span<uint8_t>(d), ntc);
    send_trap(d, 128);
}

void Switch::send_trap256(std::span<const uint8_t> mad, uint16_t lrh_slid)
{
    // Bad M_Key (IBA 14.2.5.1, table 131): who asked what, with which key.
    uint8_t d[smp::kDataSize] = {};
    bool dr = mad::kMgmtClass.get(mad) == mad::kClassSubnDirected;
    unsigned hops = unsigned(smp::kHopCount.get(mad));
    const FieldValue ntc[] = {
        {notice::kIsGeneric, 1},
        {notice::kType, notice::kTypeSecurity},
        {notice::kProducerType, notice::kProducerSwitch},
        {notice::kTrapNumber, 256},
        {notice::kIssuerLid, lid_},
        {notice::kTrap256Lid, lrh_slid},
        {notice::kTrap256DrSlid, dr ? smp::kDrSlid.get(mad) : 0},
        {notice::kTrap256Method, mad::kMethod.get(mad)},
        {notice::kTrap256AttrId, mad::kAttrId.get(mad)},
        {notice::kTrap256AttrMod, mad::kAttrMod.get(mad)},
        {notice::kTrap256Mkey, smp::kMkey.get(mad)},
        {notice::kTrap256DrNotice, dr},
        {notice::kTrap256DrTrunc, dr && hops > notice::kTrap256PathLen},
        {notice::kTrap256DrHops, dr ? std::min<unsigned>(hops, notice::kTrap256PathLen) : 0},
    };
    fill(std::span<uint8_t>(d), ntc);
    if (dr) {
        // Return path entries 1..hop count (entry 0 is unused).
        unsigned n = std::min<unsigned>(hops, notice::kTrap256PathLen);
        std::memcpy(d + notice::kTrap256PathOffset, mad.data() + smp::kReturnPathOffset + 1, n);
    }
    send_trap(d, 256);
}

}  // namespace ibemu::fabric
