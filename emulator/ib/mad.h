// SPDX-License-Identifier: GPL-2.0
//
// MADs (IBA 1.2.1 vol 1, chapter 13): the common MAD header (13.4.3) as a
// field table, the management classes, methods and status codes both the
// HCA's firmware agents and the switch's SMA/PMA use; the SMP layouts
// (14.2.1.1 LID routed, 14.2.1.2 directed route) with the SMP attribute ids
// (14.2.5), and the PMA's (16.1). A MAD is 256 bytes, big-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ib/wire.h"

namespace ibemu::ib {

// Common MAD header (IBA 13.4.3).
namespace mad {
inline constexpr size_t kSize = 256;

inline constexpr Field kBaseVersion{0, 1, 0, 8};
inline constexpr Field kMgmtClass{1, 1, 0, 8};
inline constexpr Field kClassVersion{2, 1, 0, 8};
inline constexpr Field kMethod{3, 1, 0, 8};  // bit 7 is R (response)
inline constexpr Field kStatus{4, 2, 0, 16};
inline constexpr Field kClassSpecific{6, 2, 0, 16};
inline constexpr Field kTid{8, 8, 0, 64};
inline constexpr Field kAttrId{16, 2, 0, 16};
inline constexpr Field kAttrMod{20, 4, 0, 32};

// Management classes (IBA 13.4.4).
inline constexpr uint8_t kClassSubnLid = 0x01;       // SubnMgt, LID routed
inline constexpr uint8_t kClassSubnDirected = 0x81;  // SubnMgt, directed route
inline constexpr uint8_t kClassPerf = 0x04;          // PerfMgt

inline constexpr uint8_t kMethodGet = 0x01, kMethodSet = 0x02, kMethodGetResp = 0x81;
inline constexpr uint8_t kMethodTrap = 0x05, kMethodTrapRepress = 0x07;

// MAD status (IBA 13.4.7): the invalid-field code in bits 4:2.
inline constexpr uint16_t kStatusBadVersion = 1 << 2;
inline constexpr uint16_t kStatusUnsupMethod = 2 << 2;
inline constexpr uint16_t kStatusUnsupMethodAttr = 3 << 2;
inline constexpr uint16_t kStatusInvalidField = 7 << 2;
}  // namespace mad

// SMP (IBA 14.2.1). Directed route form; the LID routed one has only M_Key
// and Data at the same offsets. In a directed route SMP the top bit of the
// common header's status word is the D (direction) bit.
namespace smp {
inline constexpr Field kDirection{4, 2, 15, 1};
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

// PerfMgt MADs (IBA 16.1): the data follows the common header and 40
// reserved bytes.
namespace pma {
inline constexpr unsigned kDataOffset = 64, kDataSize = 192;

// PMA attribute ids (IBA 16.1.3, 16.1.4).
inline constexpr uint16_t kAttrClassPortInfo = 0x0001;
inline constexpr uint16_t kAttrPortCounters = 0x0012;
inline constexpr uint16_t kAttrPortCountersExt = 0x001d;
}  // namespace pma

}  // namespace ibemu::ib
