// SPDX-License-Identifier: GPL-2.0
//
// The IBA headers the fabric looks at, as field tables (IBA 1.2.1 vol 1):
// LRH (7.7), GRH (8.3), BTH (9.2), DETH (9.3.3), the common MAD header
// (13.4.3) and the SMP layouts (14.2.1.1 LID routed, 14.2.1.2 directed
// route). Plus a parsed view of a Packet and a builder for the UD packets
// the switch SMA sends (GetResp, Trap) and the tests send.
#pragma once

#include <cstdint>
#include <span>

#include "fabric/bytes.h"
#include "fabric/packet.h"

namespace ibemu::fabric {

inline constexpr uint16_t kPermissiveLid = 0xffff;   // IBA 4.1.3
inline constexpr uint16_t kMulticastLidBase = 0xc000;
inline constexpr uint8_t kSmpVl = 15;                 // IBA 7.6.3 C7-? VL15 is for SMPs only
inline constexpr unsigned kMadSize = 256;

// LRH, 8 bytes (IBA 7.7).
namespace lrh {
inline constexpr unsigned kSize = 8;
inline constexpr Field kVl{0, 1, 4, 4};
inline constexpr Field kLver{0, 1, 0, 4};
inline constexpr Field kSl{1, 1, 4, 4};
inline constexpr Field kLnh{1, 1, 0, 2};
inline constexpr Field kDlid{2, 2, 0, 16};
inline constexpr Field kPktLen{4, 2, 0, 11};  // 4-byte words, LRH through ICRC
inline constexpr Field kSlid{6, 2, 0, 16};
// Link Next Header (IBA 7.7.4).
inline constexpr uint8_t kLnhRaw = 0, kLnhIpv6 = 1, kLnhLocal = 2, kLnhGlobal = 3;
}  // namespace lrh

// GRH, 40 bytes (IBA 8.3).
namespace grh {
inline constexpr unsigned kSize = 40;
inline constexpr Field kIpVer{0, 4, 28, 4};
inline constexpr Field kTClass{0, 4, 20, 8};
inline constexpr Field kFlowLabel{0, 4, 0, 20};
inline constexpr Field kPayLen{4, 2, 0, 16};
inline constexpr Field kNxtHdr{6, 1, 0, 8};
inline constexpr Field kHopLmt{7, 1, 0, 8};
inline constexpr unsigned kSgidOffset = 8, kDgidOffset = 24;
}  // namespace grh

// BTH, 12 bytes (IBA 9.2).
namespace bth {
inline constexpr unsigned kSize = 12;
inline constexpr Field kOpcode{0, 1, 0, 8};
inline constexpr Field kSe{1, 1, 7, 1};
inline constexpr Field kMigReq{1, 1, 6, 1};
inline constexpr Field kPadCnt{1, 1, 4, 2};
inline constexpr Field kTver{1, 1, 0, 4};
inline constexpr Field kPkey{2, 2, 0, 16};
inline constexpr Field kResv8a{4, 1, 0, 8};  // FECN/BECN live here; variant for the ICRC
inline constexpr Field kDestQp{4, 4, 0, 24};
inline constexpr Field kAckReq{8, 1, 7, 1};
inline constexpr Field kPsn{8, 4, 0, 24};
inline constexpr uint8_t kOpUdSendOnly = 0x64;
}  // namespace bth

// DETH, 8 bytes (IBA 9.3.3).
namespace deth {
inline constexpr unsigned kSize = 8;
inline constexpr Field kQkey{0, 4, 0, 32};
inline constexpr Field kSrcQp{4, 4, 0, 24};
}  // namespace deth

// Common MAD header (IBA 13.4.3) and the SMP fields that replace parts of it.
namespace mad {
inline constexpr Field kBaseVersion{0, 1, 0, 8};
inline constexpr Field kMgmtClass{1, 1, 0, 8};
inline constexpr Field kClassVersion{2, 1, 0, 8};
inline constexpr Field kMethod{3, 1, 0, 8};  // bit 7 is R (response)
inline constexpr Field kStatus{4, 2, 0, 16};
inline constexpr Field kClassSpecific{6, 2, 0, 16};
inline constexpr Field kTid{8, 8, 0, 64};
inline constexpr Field kAttrId{16, 2, 0, 16};
inline constexpr Field kAttrMod{20, 4, 0, 32};

inline constexpr uint8_t kClassSmpLid = 0x01;
inline constexpr uint8_t kClassSmpDr = 0x81;
inline constexpr uint8_t kClassPerf = 0x04;

inline constexpr uint8_t kMethodGet = 0x01, kMethodSet = 0x02, kMethodGetResp = 0x81;
inline constexpr uint8_t kMethodTrap = 0x05, kMethodTrapRepress = 0x07;

// MAD status (IBA 13.4.7, table 110): the invalid-field code in bits 4:2.
inline constexpr uint16_t kStatusBadVersion = 1 << 2;
inline constexpr uint16_t kStatusUnsupMethod = 2 << 2;
inline constexpr uint16_t kStatusUnsupMethodAttr = 3 << 2;
inline constexpr uint16_t kStatusInvalidField = 7 << 2;
}  // namespace mad

// SMP (IBA 14.2.1). Directed route form; the LID routed one has only M_Key
// and Data at the same offsets.
namespace smp {
inline constexpr Field kDirection{4, 2, 15, 1};   // D bit, top of the status word
inline constexpr Field kDrStatus{4, 2, 0, 15};
inline constexpr Field kHopPointer{6, 1, 0, 8};
inline constexpr Field kHopCount{7, 1, 0, 8};
inline constexpr Field kMkey{24, 8, 0, 64};
inline constexpr Field kDrSlid{32, 2, 0, 16};
inline constexpr Field kDrDlid{34, 2, 0, 16};
inline constexpr unsigned kDataOffset = 64, kDataSize = 64;
inline constexpr unsigned kInitialPathOffset = 128, kReturnPathOffset = 192;
inline constexpr unsigned kMaxHops = 64;  // IBA 14.2.2 C14-6: hop count 0..63

// SMP attribute ids (IBA 14.2.5, table 145).
inline constexpr uint16_t kAttrNotice = 0x0002;
inline constexpr uint16_t kAttrNodeDesc = 0x0010;
inline constexpr uint16_t kAttrNodeInfo = 0x0011;
inline constexpr uint16_t kAttrSwitchInfo = 0x0012;
inline constexpr uint16_t kAttrGuidInfo = 0x0014;
inline constexpr uint16_t kAttrPortInfo = 0x0015;
inline constexpr uint16_t kAttrPkeyTable = 0x0016;
inline constexpr uint16_t kAttrSlToVl = 0x0017;
inline constexpr uint16_t kAttrVlArb = 0x0018;
inline constexpr uint16_t kAttrLft = 0x0019;
inline constexpr uint16_t kAttrRft = 0x001a;
inline constexpr uint16_t kAttrMft = 0x001b;
inline constexpr uint16_t kAttrSmInfo = 0x0020;
}  // namespace smp

// Where the layers of a packet are, after the fabric looked at its LRH.
struct PacketView {
    bool valid = false;     // at least an LRH
    uint8_t vl = 0, sl = 0, lnh = 0;
    uint16_t dlid = 0, slid = 0;
    uint16_t pkt_len_words = 0;
    bool has_bth = false;
    uint8_t opcode = 0;
    uint32_t dest_qp = 0;
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

// QP1 carries this Q_Key (IBA 9.6.1.1 C9-?); QP0 ignores Q_Keys.
inline constexpr uint32_t kQp1Qkey = 0x80010000;

}  // namespace ibemu::fabric
