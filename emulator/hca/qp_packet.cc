// SPDX-License-Identifier: GPL-2.0
//
// Packets out of the QP engine, for the requester and the responder alike:
// the route of a QP, LRH/GRH/BTH construction, padding and ICRC room, the
// MLX fix-ups of QP0/QP1, the bounce buffers, link-credit checks and the
// transmit onto a port's wire (or the loopback into this HCA's own rx).
#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/iba.h"
#include "hca/qp_engine.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {

using namespace qpe;

namespace {
constexpr uint8_t kZeroPad[4] = {0, 0, 0, 0};
}  // namespace

// ---- headers ---------------------------------------------------------------

Core::Route Core::route_of(const Qp& q) const
{
    Route rt;
    rt.port = q.port ? q.port : 1;
    rt.dlid = q.a.rlid;
    rt.sl = q.a.sl;
    rt.path_bits = q.a.path_bits;
    rt.grh = q.a.grh;
    rt.dgid = q.a.rgid.data();
    rt.hop = q.a.hop_limit;
    rt.tclass = q.a.tclass;
    rt.flow = q.a.flow;
    rt.migreq = (q.service == uint8_t(QpService::Rc) || q.service == uint8_t(QpService::Uc)) &&
                q.a.pm_state == qpc::kPmMigrated;
    return rt;
}

size_t Core::build_headers(Packet& p, const Route& rt, uint8_t opcode, bool se, uint16_t pkey, uint32_t dqpn,
                           bool ackreq, uint32_t psn)
{
    const Port& pt = ports_[rt.port - 1];
    uint8_t* h = p.hdr.data();
    p.vl = data_vl(pt, rt.sl);  // IBA 7.6.6: SL to VL by the port's table
    h[0] = uint8_t(p.vl << 4);  // LVer 0
    h[1] = uint8_t(rt.sl << 4 | (rt.grh ? iba::kLnhIbaGlobal : iba::kLnhIbaLocal));
    wbe16(h + 2, rt.dlid);
    wbe16(h + 4, 0);
    wbe16(h + 6, uint16_t(pt.lid | (rt.path_bits & ((1u << pt.lmc) - 1))));
    size_t off = iba::kLrhLen;
    if (rt.grh) {
        uint8_t* g = h + off;
        wbe32(g, 6u << 28 | uint32_t(rt.tclass) << 20 | (rt.flow & 0xfffff));
        wbe16(g + 4, 0);
        g[6] = iba::kGrhNextHdrIba;
        g[7] = rt.hop;
        wbe64(g + 8, pt.gid_prefix);
        wbe64(g + 16, pt.guid);
        if (rt.dgid)
            std::memcpy(g + 24, rt.dgid, 16);
        else
            std::memset(g + 24, 0, 16);
        off += iba::kGrhLen;
    }
    uint8_t* b = h + off;
    b[0] = opcode;
    b[1] = uint8_t((se ? 0x80 : 0) | (rt.migreq ? 0x40 : 0));  // pad count filled in by finish_packet
    wbe16(b + 2, pkey);
    wbe32(b + 4, dqpn & 0xffffff);
    wbe32(b + 8, (ackreq ? 0x80000000u : 0) | (psn & iba::kPsnMask));
    return off + iba::kBthLen;
}

void Core::finish_packet(Packet& p, size_t hdr_len)
{
    p.hdr_len = uint16_t(hdr_len);
    unsigned pad = (4 - (p.payload_len & 3)) & 3;
    uint8_t* h = p.hdr.data();
    size_t bth = (h[1] & 3) == iba::kLnhIbaGlobal ? iba::kLrhLen + iba::kGrhLen : iba::kLrhLen;
    if (pad) {
        p.seg[p.nseg++] = {kZeroPad, pad};
        p.payload_len += pad;
        h[bth + 1] = uint8_t((h[bth + 1] & 0xcf) | pad << 4);
    }
    uint32_t total = uint32_t(hdr_len) + p.payload_len + 4;  // + ICRC
    wbe16(h + 4, uint16_t((total / 4) & 0x7ff));
    if (bth != iba::kLrhLen)
        wbe16(h + iba::kLrhLen + 4, uint16_t(total - iba::kLrhLen - iba::kGrhLen));
}

// The fields of a driver-built MLX header that the HCA itself supplies.
// ib_mthca (build_mlx_header, mthca_read_ah) puts only the AV's source path
// bits in the LRH SLID, and the permissive LID with the SLR bit for a
// permissive DLID; the VL comes from the MLX segment's VL15 bit (QP0 only:
// sq_execute refuses it elsewhere), else from the SL through the port's
// SL-to-VL table, as for every data packet.
void Core::mlx_fixup(unsigned port, Packet& p, uint32_t flags)
{
    uint8_t* h = p.hdr.data();
    bool ok_port = port >= 1 && port <= num_ports_;
    p.vl = (flags & wqe::kMlxVl15) ? 15 : ok_port ? data_vl(ports_[port - 1], uint8_t((flags >> 8) & 0xf)) : 0;
    h[0] = uint8_t(p.vl << 4 | (h[0] & 0x0f));
    if (!(flags & wqe::kMlxSlr) && ok_port) {
        const Port& pt = ports_[port - 1];
        uint16_t path_mask = uint16_t((1u << pt.lmc) - 1);
        wbe16(h + 6, uint16_t((pt.lid & ~path_mask) | (be16(h + 6) & path_mask)));
    }
}

// ---- transmit --------------------------------------------------------------

const uint8_t* Core::map_whole_message(const WqeView& w)
{
    if (w.nsge != 1 || !w.sge[0].mr || !w.len)
        return nullptr;
    const Sge& s = w.sge[0];
    const Mpt& m = *s.mr;
    if (m.flags & mpt::kFlagPhysical)
        return mem_.map_range(s.addr, s.len);
    if (m.tc_gen != tpt_gen_ || s.addr < m.tc_va || s.addr - m.tc_va >= m.tc_len) {
        if (!mr_fill_cache(m, s.addr))
            return nullptr;
    }
    uint64_t in = s.addr - m.tc_va;
    if (s.len > m.tc_len - in)
        return nullptr;
    return mem_.map_range(m.tc_phys + in, s.len);
}

void Core::transmit(unsigned port, Packet& p)
{
    if (port < 1 || port > num_ports_)
        return;
    Port& pt = ports_[port - 1];
    Wire* w = wires_[port - 1];
    ++db_.tx_packets;
    // Only SMPs (VL15) leave a port that is not yet ARMED/ACTIVE.
    bool up = pt.state == PortState::Active || (p.vl == 15 && pt.state != PortState::Down);
    if (!w || !pt.link_present || !pt.ib_open || !up) {
        ++pt.xmit_discards;
        return;
    }
    if (tx_depth_ + 1 >= tx_pkts_.size()) {
        // A synchronous wire nested us this deep: the per-level packet and
        // bounce buffers are all in use. Drop; RC recovers by retrying.
        ++pt.xmit_discards;
        IBEMU_DEBUG(cfg_.name, "port %u: transmit nested %u deep, packet dropped", port, tx_depth_);
        return;
    }
    ++tx_depth_;
    if (is_own_lid(pt, be16(p.hdr.data() + 2))) {
        // Addressed to this port (its LID within the LMC range): the port
        // delivers it itself, as a real port loops it back; it never
        // reaches the link and is not counted as link traffic.
        rx_packet(port, p, true);
    } else {
        ++pt.xmit_pkts;
        pt.xmit_data += be16(p.hdr.data() + 4) & 0x7ff;
        w->transmit(p);
        // Multicast is also replicated to the QPs of this port attached to
        // the group, the sending QP included (no switch sends a packet back
        // out its ingress port; IPoIB drops its own copies by SLID/QPN).
        uint16_t dlid = be16(p.hdr.data() + 2);
        if (dlid >= iba::kMulticastLidBase && dlid != iba::kPermissiveLid && p.vl != 15)
            rx_packet(port, p, true);
    }
    --tx_depth_;
}

bool Core::tx_room(const Route& rt, uint32_t payload)
{
    if (rt.port < 1 || rt.port > num_ports_)
        return true;
    Wire* w = wires_[rt.port - 1];
    const Port& pt = ports_[rt.port - 1];
    if (!w || is_own_lid(pt, rt.dlid))
        return true;  // loopback takes no link credits
    if (arb_pushed_[rt.port - 1] != pt.arb_gen) {
        // The SM changed VLArbitrationTable or VLHighLimit: the port's
        // transmitter arbitrates by them from now on.
        w->set_arbitration(vl_arbitration_from(pt.vlarb, pt.vl_high_limit));
        arb_pushed_[rt.port - 1] = pt.arb_gen;
    }
    // The largest headers a data packet of ours carries: LRH, GRH, BTH,
    // RETH/AETH and ImmDt, plus the pad.
    uint32_t bytes = iba::kLrhLen + (rt.grh ? iba::kGrhLen : 0) + iba::kBthLen + 20 + payload + 3;
    return w->ready(data_vl(pt, rt.sl), bytes);
}

Packet& Core::tx_packet()
{
    // Preallocated per transmit nesting level (a synchronous wire may make
    // the peer answer, and us transmit again, inside transmit()).
    Packet& p = tx_pkts_[std::min<unsigned>(tx_depth_, unsigned(tx_pkts_.size()) - 1)];
    p.hdr_len = 0;
    p.vl = 0;
    p.nseg = 0;
    p.payload_len = 0;
    return p;
}

uint8_t* Core::bounce()
{
    return bounce_[std::min<unsigned>(tx_depth_, unsigned(bounce_.size()) - 1)].data();
}

}  // namespace ibemu::mthca
