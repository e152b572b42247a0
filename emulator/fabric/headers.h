// SPDX-License-Identifier: GPL-2.0
//
// The IBA headers the fabric looks at: the field tables of LRH, GRH, BTH,
// DETH, the MAD and SMP headers come from emulator/ib (shared with the HCA
// model); here are a parsed view of a Packet and a builder for the UD
// packets the switch SMA sends (GetResp, Trap) and the tests send.
#pragma once

#include <cstdint>
#include <span>

#include "fabric/packet.h"
#include "ib/headers.h"
#include "ib/mad.h"
#include "ib/wire.h"

namespace ibemu::fabric {

// The IBA definitions the fabric shares with the HCA model (emulator/ib):
// big-endian field access, the header and MAD field tables, LID and QP
// constants.
using namespace ib::wire;
using ib::kMulticastLidBase;
using ib::kPermissiveLid;
using ib::kQp1Qkey;
using ib::kSmpVl;
namespace lrh = ib::lrh;
namespace grh = ib::grh;
namespace bth = ib::bth;
namespace deth = ib::deth;
namespace mad = ib::mad;
namespace smp = ib::smp;
namespace pma = ib::pma;

// Where the layers of a packet are, after the fabric looked at its LRH.
struct PacketView {
    bool valid = false;     // at least an LRH
    uint8_t vl = 0, sl = 0, lnh = 0;
    uint16_t dlid = 0, slid = 0;
    uint16_t pkt_len_words = 0;
    bool has_bth = false;
    uint8_t opcode = 0;
    uint32_t dest_qp = 0;
    uint16_t pkey = 0;           // BTH P_Key
    unsigned bth_offset = 0;     // in the flattened packet
    unsigned total_len = 0;      // hdr_len + payload_len
};

// Reads the LRH (and BTH when LNH says there is one) of p.
PacketView view_packet(const Packet& p);

// Copies headers and payload, in order, into dst (at most dst.size() bytes).
// Returns how many bytes were copied.
size_t flatten(const Packet& p, std::span<uint8_t> dst);

// Parameters of a UD packet built by build_ud().
struct UdAddress {
    uint16_t dlid = 0, slid = 0;
    uint8_t sl = 0, vl = 0;
    uint32_t dest_qp = 0, src_qp = 0;
    uint32_t qkey = 0;
    uint16_t pkey = 0xffff;
};

// Fills p with LRH/BTH/DETH for a UD SEND-only of `payload` (pad to 4 bytes
// counted in PadCnt, PktLen including the ICRC). The payload stays where it
// is: p points at it.
void build_ud(Packet& p, const UdAddress& a, std::span<const uint8_t> payload);

}  // namespace ibemu::fabric
