// SPDX-License-Identifier: GPL-2.0
//
// For the fabric's tests: a port that records what reaches it and sends
// what a subnet manager or a traffic source would, with real wire headers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "fabric/headers.h"
#include "fabric/packet.h"

namespace ibemu::fabric::test {

using Mad = std::array<uint8_t, mad::kSize>;

struct RxPacket {
    std::vector<uint8_t> bytes;  // flattened
    const uint8_t* first_payload = nullptr;
    PacketView view;
    std::span<const uint8_t> mad() const
    {
        size_t off = view.bth_offset + bth::kSize + deth::kSize;
        return bytes.size() >= off + mad::kSize ? std::span<const uint8_t>(bytes.data() + off, mad::kSize)
                                              : std::span<const uint8_t>();
    }
};

class TestPort : public PortEndpoint {
public:
    Wire* wire = nullptr;
    bool up = false;
    LinkParams params;
    std::vector<bool> link_events;
    std::vector<RxPacket> rx;
    unsigned port_num = 1;

    void receive(const Packet& p) override
    {
        RxPacket r;
        r.bytes.resize(p.hdr_len + p.payload_len);
        flatten(p, r.bytes);
        r.first_payload = p.nseg ? p.seg[0].data : nullptr;
        r.view = view_packet(p);
        rx.push_back(std::move(r));
    }
    unsigned tx_ready_calls = 0;
    void tx_ready() override { ++tx_ready_calls; }
    void link_changed(bool u, const LinkParams& lp) override
    {
        up = u;
        params = lp;
        link_events.push_back(u);
    }

    // A UD packet on VL0 with the given payload.
    void send_data(uint16_t dlid, uint16_t slid, std::span<const uint8_t> payload, uint32_t qp = 2)
    {
        Packet p;
        UdAddress a;
        a.dlid = dlid;
        a.slid = slid;
        a.dest_qp = qp;
        a.src_qp = qp;
        a.qkey = 0x11111111;
        build_ud(p, a, payload);
        wire->transmit(p);
    }

    // An SMP on VL15 to QP0.
    void send_smp(const Mad& mad, uint16_t dlid = kPermissiveLid, uint16_t slid = kPermissiveLid)
    {
        Packet p;
        UdAddress a;
        a.dlid = dlid;
        a.slid = slid;
        a.vl = kSmpVl;
        build_ud(p, a, mad);
        wire->transmit(p);
    }
};

// PortInfo (IBA 14.2.5.6) and SwitchInfo (14.2.5.4) fields the tests look
// at, written out here rather than taken from emulator/ib so that the tests
// do not check the switch against its own tables.
namespace layout {
inline constexpr Field kPiLid{16, 2, 0, 16};
inline constexpr Field kPiSmLid{18, 2, 0, 16};
inline constexpr Field kPiLocalPort{28, 1, 0, 8};
inline constexpr Field kPiState{32, 1, 0, 4};
inline constexpr Field kPiPhys{33, 1, 4, 4};
inline constexpr Field kPiNeighborMtu{36, 1, 4, 4};
inline constexpr Field kSiLftTop{6, 2, 0, 16};
inline constexpr Field kSiPsc{11, 1, 2, 1};
}  // namespace layout

// A zeroed SMP of class `cls` with its common MAD header filled in.
inline Mad smp_header(uint8_t cls, uint8_t method, uint16_t attr, uint32_t mod, uint64_t tid)
{
    Mad m{};
    std::span<uint8_t> s(m);
    const FieldValue hdr[] = {
        {mad::kBaseVersion, 1}, {mad::kMgmtClass, cls}, {mad::kClassVersion, 1}, {mad::kMethod, method},
        {mad::kTid, tid},       {mad::kAttrId, attr},   {mad::kAttrMod, mod},
    };
    fill(s, hdr);
    return m;
}

// A directed route SMP as the SM's own SMI sends it: hop pointer already
// moved to 1 (C14-9:1). `path` lists the ports to leave by, the first being
// the SM's own port.
inline Mad dr_smp(uint8_t method, uint16_t attr, uint32_t mod, std::vector<uint8_t> path, uint64_t tid = 0x1234)
{
    Mad m = smp_header(mad::kClassSubnDirected, method, attr, mod, tid);
    std::span<uint8_t> s(m);
    smp::kHopCount.set(s, path.size());
    smp::kHopPointer.set(s, path.empty() ? 0 : 1);
    smp::kDrSlid.set(s, kPermissiveLid);
    smp::kDrDlid.set(s, kPermissiveLid);
    for (size_t i = 0; i < path.size(); ++i)
        m[smp::kInitialPathOffset + 1 + i] = path[i];
    return m;
}

inline Mad lid_smp(uint8_t method, uint16_t attr, uint32_t mod, uint64_t tid = 0x4321)
{
    return smp_header(mad::kClassSubnLid, method, attr, mod, tid);
}

inline std::span<uint8_t> smp_data(Mad& m) { return std::span<uint8_t>(m).subspan(smp::kDataOffset, smp::kDataSize); }
inline std::span<const uint8_t> smp_data(std::span<const uint8_t> m) { return m.subspan(smp::kDataOffset, smp::kDataSize); }

// A cyclic fabric: four 5-port switches sw0..sw3, each cabled to the three
// others (sw0:2-sw1:2, sw0:3-sw2:2, sw0:4-sw3:2, sw1:3-sw2:3, sw1:4-sw3:3,
// sw2:4-sw3:4), HCA vm<i> on port 1 of sw<i>. From vm0, sw<i> (i > 0) is
// the directed route {1, i + 1}. A multicast forwarding table that sends a
// group out of ports 2-4 everywhere makes a loop that doubles at each hop.
inline constexpr const char kMesh4[] = R"(
Switch	5 "S-0002c90200000001"		# "sw0" enhanced port 0 lid 0 lmc 0
[1]	"H-0002c90300000011"[1]		# "vm0 HCA-1" lid 0 4xSDR
[2]	"S-0002c90200000002"[2]		# "sw1" lid 0 4xSDR
[3]	"S-0002c90200000003"[2]		# "sw2" lid 0 4xSDR
[4]	"S-0002c90200000004"[2]		# "sw3" lid 0 4xSDR

Switch	5 "S-0002c90200000002"		# "sw1" enhanced port 0 lid 0 lmc 0
[1]	"H-0002c90300000012"[1]		# "vm1 HCA-1" lid 0 4xSDR
[3]	"S-0002c90200000003"[3]		# "sw2" lid 0 4xSDR
[4]	"S-0002c90200000004"[3]		# "sw3" lid 0 4xSDR

Switch	5 "S-0002c90200000003"		# "sw2" enhanced port 0 lid 0 lmc 0
[1]	"H-0002c90300000013"[1]		# "vm2 HCA-1" lid 0 4xSDR
[4]	"S-0002c90200000004"[4]		# "sw3" lid 0 4xSDR

Switch	5 "S-0002c90200000004"		# "sw3" enhanced port 0 lid 0 lmc 0
[1]	"H-0002c90300000014"[1]		# "vm3 HCA-1" lid 0 4xSDR

Ca	1 "H-0002c90300000011"		# "vm0 HCA-1"
[1]	"S-0002c90200000001"[1]		# lid 0 lmc 0 "sw0" lid 0 4xSDR

Ca	1 "H-0002c90300000012"		# "vm1 HCA-1"
[1]	"S-0002c90200000002"[1]		# lid 0 lmc 0 "sw1" lid 0 4xSDR

Ca	1 "H-0002c90300000013"		# "vm2 HCA-1"
[1]	"S-0002c90200000003"[1]		# lid 0 lmc 0 "sw2" lid 0 4xSDR

Ca	1 "H-0002c90300000014"		# "vm3 HCA-1"
[1]	"S-0002c90200000004"[1]		# lid 0 lmc 0 "sw3" lid 0 4xSDR
)";

}  // namespace ibemu::fabric::test
