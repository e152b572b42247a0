// SPDX-License-Identifier: GPL-2.0
#include "stub/stub_ca.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"

namespace ibemu::stub {

using namespace fabric;  // the header tables and build_ud()
using ib::PhysState;
using ib::PortState;

class StubCa::Ep final : public PortEndpoint {
public:
    Ep(StubCa& ca, unsigned n) : ca_(ca), n_(n) {}
    void receive(const Packet& p) override { ca_.receive(n_, p); }
    void link_changed(bool up, const LinkParams& params) override { ca_.link_changed(n_, up, params); }

private:
    StubCa& ca_;
    unsigned n_;
};

StubCa::StubCa(Scheduler& sched, StubCaConfig cfg) : sched_(sched), cfg_(std::move(cfg))
{
    if (cfg_.num_ports == 0)
        cfg_.num_ports = 1;
    ports_.resize(cfg_.num_ports);
    wires_.assign(cfg_.num_ports, nullptr);
    for (unsigned n = 1; n <= cfg_.num_ports; ++n) {
        mthca::Port& p = ports_[n - 1];
        // Port GUIDs follow the node GUID, as on the MT25208.
        p.power_on(n, cfg_.node.node_guid + n);
        // The host's driver has the port open (INIT_IB done): it polls for
        // a peer until a link trains.
        p.ib_open = true;
        p.update_phys();
        eps_.push_back(std::make_unique<Ep>(*this, n));
    }
}

StubCa::~StubCa() = default;

PortEndpoint& StubCa::endpoint(unsigned n) { return *eps_.at(n - 1); }

void StubCa::set_wire(unsigned n, Wire* w) { wires_.at(n - 1) = w; }

void StubCa::link_changed(unsigned n, bool up, const LinkParams& params)
{
    mthca::Port& p = ports_[n - 1];
    p.link_present = up;
    p.update_phys();
    if (up) {
        p.width_active = params.width;
        p.speed_active = params.speed;
        p.mtu_active = params.mtu;
        if (p.state == PortState::Down)
            p.state = PortState::Init;  // trained; waits for the SM (IBA 14.2.5.6)
    } else {
        p.state = PortState::Down;
    }
    port_link(n, up);
}

void StubCa::send_smp(unsigned n, uint16_t dlid, uint16_t slid, uint8_t sl, std::span<const uint8_t> mad)
{
    Wire* w = wires_[n - 1];
    mthca::Port& p = ports_[n - 1];
    if (!w || !p.link_present) {
        ++p.xmit_discards;
        return;
    }
    Packet pk;
    UdAddress a;
    a.dlid = dlid;
    a.slid = slid;
    a.sl = sl;
    a.vl = kSmpVl;
    build_ud(pk, a, mad);
    ++p.xmit_pkts;
    p.xmit_data += (pk.hdr_len + pk.payload_len) / 4;
    w->transmit(pk);
}

void StubCa::send_gmp(unsigned n, uint16_t dlid, uint8_t sl, uint32_t dest_qp, uint16_t pkey,
                      std::span<const uint8_t> mad)
{
    Wire* w = wires_[n - 1];
    mthca::Port& p = ports_[n - 1];
    // IBA 7.2: only SMPs leave a port that is not ACTIVE.
    if (!w || !p.link_present || p.state != PortState::Active) {
        ++p.xmit_discards;
        return;
    }
    Packet pk;
    UdAddress a;
    a.dlid = dlid;
    a.slid = p.lid;
    a.sl = sl;
    a.vl = 0;
    a.dest_qp = dest_qp;
    a.src_qp = 1;
    a.qkey = kQp1Qkey;
    a.pkey = pkey;
    build_ud(pk, a, mad);
    ++p.xmit_pkts;
    p.xmit_data += (pk.hdr_len + pk.payload_len) / 4;
    w->transmit(pk);
}

bool StubCa::local_mad(unsigned n, std::span<const uint8_t> in, std::span<uint8_t> out)
{
    std::string log;
    mthca::MadIfcInfo info;
    info.check_mkey = true;
    info.slid = ports_[n - 1].lid;
    info.now_ns = sched_.now();
    mthca::MadEffects fx;
    return sma_.process(cfg_.node, ports_, n, in, out, &log, info, &fx) == mthca::Status::Ok && !fx.repress;
}

void StubCa::unhandled_mad(const MadSource& src, std::span<const uint8_t> mad)
{
    (void)src;
    (void)mad;
    ++ctr_.dropped;
}

void StubCa::receive(unsigned n, const Packet& p)
{
    mthca::Port& pt = ports_[n - 1];
    ++pt.rcv_pkts;
    pt.rcv_data += (p.hdr_len + p.payload_len) / 4;
    PacketView v = view_packet(p);
    uint8_t buf[lrh::kSize + bth::kSize + deth::kSize + mad::kSize];
    unsigned mad_off = v.bth_offset + bth::kSize + deth::kSize;
    // Only UD MADs to QP0/QP1 without a GRH reach an agent here.
    if (!v.valid || !v.has_bth || v.lnh != lrh::kLnhLocal || v.dest_qp > 1 || v.opcode != bth::kOpUdSendOnly ||
        mad_off + mad::kSize > sizeof buf || flatten(p, buf) < mad_off + mad::kSize) {
        ++pt.rcv_errors;
        ++ctr_.dropped;
        return;
    }
    std::span<const uint8_t> h(buf, mad_off);
    MadSource src;
    src.port = n;
    src.slid = v.slid;
    src.dlid = v.dlid;
    src.sl = v.sl;
    src.pkey = v.pkey;
    src.src_qp = uint32_t(deth::kSrcQp.get(h.subspan(v.bth_offset + bth::kSize)));
    src.qkey = uint32_t(deth::kQkey.get(h.subspan(v.bth_offset + bth::kSize)));
    std::span<uint8_t> m(buf + mad_off, mad::kSize);
    bool for_me = v.dlid == kPermissiveLid || (pt.lid != 0 && v.dlid == pt.lid);
    if (v.dest_qp == 0) {
        // IBA 7.6.3: QP0 traffic travels on VL15 only.
        if (v.vl != kSmpVl) {
            ++ctr_.dropped;
            return;
        }
        smp_receive(n, src, m);
        return;
    }
    if (v.vl == kSmpVl || !for_me || (pt.state != PortState::Active && pt.state != PortState::Armed)) {
        ++ctr_.dropped;
        return;
    }
    gmp_receive(n, src, m);
}

// Directed route SMPs at a CA, IBA 14.2.2.2: a CA is only ever the end of
// the directed part (C14-9:3), the end of a final LID routed part (C14-9:4)
// or, for its own SM, the end of the return path (C14-13:3).
void StubCa::smp_receive(unsigned n, const MadSource& src, std::span<uint8_t> m)
{
    mthca::Port& pt = ports_[n - 1];
    uint8_t cls = uint8_t(mad::kMgmtClass.get(m));
    uint8_t method = uint8_t(mad::kMethod.get(m));
    bool request = !(method & 0x80) && method != mad::kMethodTrap && method != mad::kMethodTrapRepress;
    if (cls == mad::kClassSubnLid) {
        if (pt.lid == 0 || src.dlid != pt.lid) {
            ++ctr_.dropped;  // LID routed SMPs need a LID (not the permissive one)
            return;
        }
        if (!request) {
            unhandled_mad(src, m);
            return;
        }
        uint8_t out[mad::kSize];
        ++ctr_.smps;
        if (!local_mad(n, m, out)) {
            ++ctr_.dropped;
            return;
        }
        send_smp(n, src.slid, pt.lid, src.sl, out);
        return;
    }
    if (cls != mad::kClassSubnDirected) {
        ++ctr_.dropped;
        return;
    }
    unsigned hop_cnt = unsigned(smp::kHopCount.get(m));
    unsigned hop_ptr = unsigned(smp::kHopPointer.get(m));
    bool returning = smp::kDirection.get(m) != 0;
    uint16_t dr_slid = uint16_t(smp::kDrSlid.get(m));
    uint16_t dr_dlid = uint16_t(smp::kDrDlid.get(m));
    if (hop_cnt >= smp::kMaxHops) {
        ++ctr_.dropped;  // C14-6
        return;
    }
    if (returning) {
        // C14-13:3 at the requester: the end of the return path.
        if (hop_cnt && hop_ptr == 1 && dr_slid == kPermissiveLid) {
            smp::kHopPointer.set(m, 0);
            unhandled_mad(src, m);
        } else if (dr_slid != kPermissiveLid && pt.lid && src.dlid == pt.lid) {
            unhandled_mad(src, m);  // a final LID routed part back to us
        } else {
            ++ctr_.dropped;
        }
        return;
    }
    if (!request) {
        ++ctr_.dropped;
        return;
    }
    bool via_lid;
    if (hop_cnt && hop_ptr == hop_cnt && dr_dlid == kPermissiveLid) {
        // C14-9:3: record the return port and step past the end.
        m[smp::kReturnPathOffset + hop_ptr] = uint8_t(n);
        smp::kHopPointer.set(m, hop_ptr + 1);
        via_lid = false;
    } else if (hop_ptr == hop_cnt + 1 && dr_dlid != kPermissiveLid && pt.lid && src.dlid == pt.lid) {
        via_lid = true;  // C14-9:4
    } else {
        ++ctr_.dropped;  // C14-9:5, or a path that ends at a switch
        return;
    }
    uint8_t out[mad::kSize];
    ++ctr_.smps;
    if (!local_mad(n, m, out)) {
        ++ctr_.dropped;
        return;
    }
    smp::kDirection.set(out, 1);
    if (via_lid) {
        // Back to the switch that began the LID routed part (C14-13:1 there).
        send_smp(n, src.slid, pt.lid, src.sl, out);
        return;
    }
    // C14-12/13: the responder steps the hop pointer back and sends on the
    // port the request came in.
    smp::kHopPointer.set(out, hop_cnt);
    send_smp(n, kPermissiveLid, kPermissiveLid, src.sl, out);
}

void StubCa::gmp_receive(unsigned n, const MadSource& src, std::span<uint8_t> m)
{
    uint8_t cls = uint8_t(mad::kMgmtClass.get(m));
    uint8_t method = uint8_t(mad::kMethod.get(m));
    if (cls != mad::kClassPerf || (method & 0x80) || method == mad::kMethodTrap) {
        unhandled_mad(src, m);
        return;
    }
    // IBA 13.5.3: GMPs carry the QP1 Q_Key.
    if (src.qkey != kQp1Qkey) {
        ++ports_[n - 1].qkey_violations;
        ++ctr_.dropped;
        return;
    }
    uint8_t out[mad::kSize];
    ++ctr_.pma;
    if (!local_mad(n, m, out)) {
        ++ctr_.dropped;
        return;
    }
    send_gmp(n, src.slid, src.sl, src.src_qp, src.pkey, out);
}

}  // namespace ibemu::stub
