// SPDX-License-Identifier: GPL-2.0
//
// The Notice attribute (IBA 1.2.1 vol 1, 14.2.5.1) that Trap() SMPs carry,
// in its generic form, with the DataDetails of the traps the emulated
// devices send: 128 (a switch's link state changed), 144 (a port's
// CapabilityMask changed), 256 (bad M_Key), 257/258 (bad P_Key/Q_Key).
// Offsets are within the SMP data (64 bytes: in an SMP the Notice ends
// before IssuerGID). Layouts as OpenSM and infiniband-diags decode them.
#pragma once

#include <cstdint>

#include "ib/wire.h"

namespace ibemu::ib::notice {

inline constexpr Field kIsGeneric{0, 1, 7, 1};
inline constexpr Field kType{0, 1, 0, 7};
inline constexpr Field kProducerType{0, 4, 0, 24};  // bytes 1..3
inline constexpr Field kTrapNumber{4, 2, 0, 16};
inline constexpr Field kIssuerLid{6, 2, 0, 16};
inline constexpr Field kToggleCount{8, 2, 0, 16};

// Notice types (IBA table 127) and producer (node) types.
inline constexpr uint8_t kTypeUrgent = 1, kTypeSecurity = 2, kTypeSm = 3, kTypeInfo = 4;
inline constexpr uint32_t kProducerCa = 1, kProducerSwitch = 2;

// Trap 128: LIDADDR of the switch.
inline constexpr Field kTrap128Lid{10, 2, 0, 16};

// Trap 144: LIDADDR, LocalChanges (changes other than the mask),
// NewCapabilityMask.
inline constexpr Field kTrap144Lid{12, 2, 0, 16};
inline constexpr Field kTrap144LocalChanges{15, 1, 0, 1};
inline constexpr Field kTrap144CapMask{16, 4, 0, 32};

// Trap 256 (Bad M_Key): LIDADDR, DRSLID, Method, AttributeID,
// AttributeModifier, the M_Key the SMP carried, DRNotice/DRPathTruncated/
// DRHopCount and the directed route's return path (30 bytes).
inline constexpr Field kTrap256Lid{12, 2, 0, 16};
inline constexpr Field kTrap256DrSlid{14, 2, 0, 16};
inline constexpr Field kTrap256Method{16, 1, 0, 8};
inline constexpr Field kTrap256AttrId{18, 2, 0, 16};
inline constexpr Field kTrap256AttrMod{20, 4, 0, 32};
inline constexpr Field kTrap256Mkey{24, 8, 0, 64};
inline constexpr Field kTrap256DrNotice{33, 1, 7, 1};
inline constexpr Field kTrap256DrTrunc{33, 1, 6, 1};
inline constexpr Field kTrap256DrHops{33, 1, 0, 6};
inline constexpr unsigned kTrap256PathOffset = 34, kTrap256PathLen = 30;

// Traps 257/258 (Bad P_Key / Bad Q_Key): LID1/LID2 (the requester and the
// port that refused), the key, SL with QP1, QP2 (GID1/GID2 do not fit in
// the SMP data and stay zero).
inline constexpr Field kTrap257Lid1{12, 2, 0, 16};
inline constexpr Field kTrap257Lid2{14, 2, 0, 16};
inline constexpr Field kTrap257Key{16, 4, 0, 32};
inline constexpr Field kTrap257Sl{20, 1, 4, 4};
inline constexpr Field kTrap257Qp1{20, 4, 0, 24};
inline constexpr Field kTrap257Qp2{24, 4, 0, 24};

}  // namespace ibemu::ib::notice
