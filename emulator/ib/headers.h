// SPDX-License-Identifier: GPL-2.0
//
// The IBA packet headers as field tables (IBA 1.2.1 vol 1): LRH (7.7), GRH
// (8.3), BTH (9.2), DETH (9.3.3); and the addressing constants both the HCA
// model and the fabric need. Offsets are from the start of each header.
#pragma once

#include <cstdint>

#include "ib/wire.h"

namespace ibemu::ib {

inline constexpr uint16_t kPermissiveLid = 0xffff;  // IBA 4.1.3
inline constexpr uint16_t kMulticastLidBase = 0xc000;
inline constexpr uint8_t kSmpVl = 15;  // IBA 7.6.3: VL15 is for SMPs only
// QP1 carries this Q_Key (IBA 9.6.1.1); QP0 ignores Q_Keys.
inline constexpr uint32_t kQp1Qkey = 0x80010000;

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
inline constexpr uint8_t kNxtHdrIba = 0x1b;  // an IBA transport header follows
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

}  // namespace ibemu::ib
