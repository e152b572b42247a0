// SPDX-License-Identifier: GPL-2.0
//
// The SMA and PMA attributes an HCA port and a switch both answer, as field
// tables (offsets within the SMP or PMA data, see ib/mad.h): NodeInfo
// (IBA 14.2.5.3), PortInfo (14.2.5.6) with its PortState and
// PortPhysicalState encodings, PortCounters (16.1.3.5).
#pragma once

#include <cstdint>

#include "ib/wire.h"

namespace ibemu::ib {

// NodeInfo (IBA 14.2.5.3), offsets within the SMP data.
namespace nodeinfo {
inline constexpr Field kBaseVersion{0, 1, 0, 8};
inline constexpr Field kClassVersion{1, 1, 0, 8};
inline constexpr Field kNodeType{2, 1, 0, 8};
inline constexpr Field kNumPorts{3, 1, 0, 8};
inline constexpr Field kSysImageGuid{4, 8, 0, 64};
inline constexpr Field kNodeGuid{12, 8, 0, 64};
inline constexpr Field kPortGuid{20, 8, 0, 64};
inline constexpr Field kPartitionCap{28, 2, 0, 16};
inline constexpr Field kDeviceId{30, 2, 0, 16};
inline constexpr Field kRevision{32, 4, 0, 32};
inline constexpr Field kLocalPortNum{36, 4, 24, 8};
inline constexpr Field kVendorId{36, 4, 0, 24};
// NodeType.
inline constexpr uint8_t kNodeTypeCa = 1, kNodeTypeSwitch = 2, kNodeTypeRouter = 3;
}  // namespace nodeinfo

// PortInfo (IBA 14.2.5.6), offsets within the SMP data.
namespace portinfo {
inline constexpr Field kMkey{0, 8, 0, 64};
inline constexpr Field kGidPrefix{8, 8, 0, 64};
inline constexpr Field kLid{16, 2, 0, 16};
inline constexpr Field kMasterSmLid{18, 2, 0, 16};
inline constexpr Field kCapMask{20, 4, 0, 32};
inline constexpr Field kDiagCode{24, 2, 0, 16};
inline constexpr Field kMkeyLease{26, 2, 0, 16};
inline constexpr Field kLocalPortNum{28, 1, 0, 8};
inline constexpr Field kWidthEnabled{29, 1, 0, 8};
inline constexpr Field kWidthSupported{30, 1, 0, 8};
inline constexpr Field kWidthActive{31, 1, 0, 8};
inline constexpr Field kSpeedSupported{32, 1, 4, 4};
inline constexpr Field kPortState{32, 1, 0, 4};
inline constexpr Field kPhysState{33, 1, 4, 4};
inline constexpr Field kDownDefault{33, 1, 0, 4};
inline constexpr Field kMkeyProtect{34, 1, 6, 2};
inline constexpr Field kLmc{34, 1, 0, 3};
inline constexpr Field kSpeedActive{35, 1, 4, 4};
inline constexpr Field kSpeedEnabled{35, 1, 0, 4};
inline constexpr Field kNeighborMtu{36, 1, 4, 4};
inline constexpr Field kMasterSmSl{36, 1, 0, 4};
inline constexpr Field kVlCap{37, 1, 4, 4};
inline constexpr Field kInitType{37, 1, 0, 4};
inline constexpr Field kVlHighLimit{38, 1, 0, 8};
inline constexpr Field kVlArbHighCap{39, 1, 0, 8};
inline constexpr Field kVlArbLowCap{40, 1, 0, 8};
inline constexpr Field kInitTypeReply{41, 1, 4, 4};
inline constexpr Field kMtuCap{41, 1, 0, 4};
inline constexpr Field kVlStallCount{42, 1, 5, 3};
inline constexpr Field kHoqLife{42, 1, 0, 5};
inline constexpr Field kOperationalVls{43, 1, 4, 4};
inline constexpr Field kPartEnforce{43, 1, 0, 4};
inline constexpr Field kMkeyViolations{44, 2, 0, 16};
inline constexpr Field kPkeyViolations{46, 2, 0, 16};
inline constexpr Field kQkeyViolations{48, 2, 0, 16};
inline constexpr Field kGuidCap{50, 1, 0, 8};
inline constexpr Field kClientRereg{51, 1, 7, 1};
inline constexpr Field kSubnetTimeout{51, 1, 0, 5};
inline constexpr Field kRespTime{52, 1, 0, 5};
inline constexpr Field kLocalPhyErrors{53, 1, 4, 4};
inline constexpr Field kOverrunErrors{53, 1, 0, 4};
}  // namespace portinfo

// IBA 14.2.5.6, PortInfo PortState / PortPhysicalState encodings.
enum class PortState : uint8_t { NoChange = 0, Down = 1, Init = 2, Armed = 3, Active = 4 };
enum class PhysState : uint8_t {
    NoChange = 0,
    Sleep = 1,
    Polling = 2,
    Disabled = 3,
    Training = 4,
    LinkUp = 5,
    ErrorRecovery = 6,
};
// Upper-case names as the IBA (and ibstat) spell them; "?" for a reserved value.
const char* port_state_name(PortState s);
const char* phys_state_name(PhysState s);

// PortCounters (IBA 16.1.3.5), offsets within the PMA data.
namespace portcounters {
inline constexpr Field kPortSelect{1, 1, 0, 8};
inline constexpr Field kCounterSelect{2, 2, 0, 16};
inline constexpr Field kLinkDowned{7, 1, 0, 8};
inline constexpr Field kRcvErrors{8, 2, 0, 16};
inline constexpr Field kRelayErrors{12, 2, 0, 16};
inline constexpr Field kXmitDiscards{14, 2, 0, 16};
inline constexpr Field kXmitConstraint{16, 1, 0, 8};
inline constexpr Field kRcvConstraint{17, 1, 0, 8};
inline constexpr Field kVl15Dropped{22, 2, 0, 16};
inline constexpr Field kXmitData{24, 4, 0, 32};  // in 4-byte words
inline constexpr Field kRcvData{28, 4, 0, 32};
inline constexpr Field kXmitPkts{32, 4, 0, 32};
inline constexpr Field kRcvPkts{36, 4, 0, 32};
// CounterSelect bits (which counters a Set clears).
inline constexpr uint16_t kSelLinkDowned = 1 << 2, kSelRcvErrors = 1 << 3, kSelRelay = 1 << 5,
                          kSelXmitDiscards = 1 << 6, kSelXmitConstraint = 1 << 7,
                          kSelRcvConstraint = 1 << 8, kSelVl15 = 1 << 11, kSelXmitData = 1 << 12,
                          kSelRcvData = 1 << 13, kSelXmitPkts = 1 << 14, kSelRcvPkts = 1 << 15;
}  // namespace portcounters

}  // namespace ibemu::ib
