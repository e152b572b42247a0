// SPDX-License-Identifier: GPL-2.0
//
// The HCA firmware's own management agents behind MAD_IFC: the SMA
// (subnet management class, LID-routed 0x01 and directed-route 0x81) and
// the PMA (performance management class 0x04). MADs are 256 bytes in IBA
// wire format (big-endian).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hca/port.h"
#include "hca/status.h"

namespace ibemu::mthca {

struct NodeIdentity {
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    uint16_t device_id = 0;
    uint32_t revision = 0;
    uint32_t vendor_id = 0;  // 24-bit OUI
    uint16_t partition_cap = kPkeyTableLen;
    std::string description;  // NodeDescription, up to 64 bytes
};

// MAD header fields and constants (IBA 13.4.3, 14.2.1).
namespace mad {
inline constexpr size_t kSize = 256;
inline constexpr unsigned kBaseVersion = 0;
inline constexpr unsigned kMgmtClass = 1;
inline constexpr unsigned kClassVersion = 2;
inline constexpr unsigned kMethod = 3;
inline constexpr unsigned kStatus = 4;
inline constexpr unsigned kHopPtr = 6;
inline constexpr unsigned kHopCnt = 7;
inline constexpr unsigned kAttrId = 16;
inline constexpr unsigned kAttrMod = 20;
inline constexpr unsigned kSmpMkey = 24;
inline constexpr unsigned kSmpData = 64;  // SMP data, 64 bytes
inline constexpr unsigned kGmpData = 64;  // PMA data after 40 reserved bytes

inline constexpr uint8_t kClassSubnLid = 0x01;
inline constexpr uint8_t kClassSubnDirected = 0x81;
inline constexpr uint8_t kClassPerf = 0x04;

inline constexpr uint8_t kMethodGet = 0x01;
inline constexpr uint8_t kMethodSet = 0x02;
inline constexpr uint8_t kMethodGetResp = 0x81;
inline constexpr uint8_t kMethodTrapRepress = 0x07;

// MAD status (IBA 13.4.7, table 109): the "invalid field" code in bits 4:2.
inline constexpr uint16_t kStatusBadVersion = 1 << 2;
inline constexpr uint16_t kStatusUnsupMethod = 2 << 2;
inline constexpr uint16_t kStatusUnsupMethodAttr = 3 << 2;
inline constexpr uint16_t kStatusInvalidField = 7 << 2;

// SMP attributes (IBA 14.2.5, table 145).
inline constexpr uint16_t kAttrNodeDesc = 0x0010;
inline constexpr uint16_t kAttrNodeInfo = 0x0011;
inline constexpr uint16_t kAttrGuidInfo = 0x0014;
inline constexpr uint16_t kAttrPortInfo = 0x0015;
inline constexpr uint16_t kAttrPkeyTable = 0x0016;
inline constexpr uint16_t kAttrSlToVl = 0x0017;
inline constexpr uint16_t kAttrVlArb = 0x0018;
inline constexpr uint16_t kAttrSmInfo = 0x0020;
// PMA attributes (IBA 16.1.3, 16.1.4).
inline constexpr uint16_t kAttrClassPortInfo = 0x0001;
inline constexpr uint16_t kAttrPortCounters = 0x0012;
inline constexpr uint16_t kAttrPortCountersExt = 0x001d;
}  // namespace mad

class Sma {
public:
    // Process one MAD for `port` (1-based, already range-checked). Fills
    // `out` (256 bytes) and returns the command status: BadPkt when the
    // firmware would silently drop the MAD, Ok otherwise (a MAD-level
    // error is reported in the response's status field). `log` gets a
    // short description for the command log.
    Status process(const NodeIdentity& node, std::span<Port> ports, unsigned port, std::span<const uint8_t> in,
                   std::span<uint8_t> out, std::string* log);

private:
    uint16_t smp_get(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                     std::span<uint8_t> data);
    uint16_t smp_set(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                     std::span<const uint8_t> in_data, std::span<uint8_t> data);
    uint16_t pma(Port& p, uint8_t method, uint16_t attr, std::span<const uint8_t> in_data, std::span<uint8_t> data);
};

}  // namespace ibemu::mthca
