// SPDX-License-Identifier: GPL-2.0
//
// The HCA firmware's own management agents behind MAD_IFC: the SMA
// (subnet management class, LID-routed 0x01 and directed-route 0x81) and
// the PMA (performance management class 0x04). MADs are 256 bytes in IBA
// wire format (big-endian).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hca/port.h"
#include "hca/status.h"
#include "ib/mad.h"

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

// MAD header fields and constants (IBA 13.4.3, 14.2.1), shared with the
// fabric (emulator/ib/mad.h). The SMP and PMA attribute ids the firmware's
// agents answer are re-exported here, so they read mad::kAttr... as before.
namespace mad {
using namespace ib::mad;
// SMP attributes (IBA 14.2.5, table 145).
using ib::smp::kAttrGuidInfo;
using ib::smp::kAttrNodeDesc;
using ib::smp::kAttrNodeInfo;
using ib::smp::kAttrPkeyTable;
using ib::smp::kAttrPortInfo;
using ib::smp::kAttrSlToVl;
using ib::smp::kAttrSmInfo;
using ib::smp::kAttrVlArb;
// PMA attributes (IBA 16.1.3, 16.1.4).
using ib::pma::kAttrClassPortInfo;
using ib::pma::kAttrPortCounters;
using ib::pma::kAttrPortCountersExt;
}  // namespace mad
namespace smp = ib::smp;
namespace pma = ib::pma;

// How MAD_IFC presents a MAD: from the driver with the ignore-M_Key opcode
// modifier bit (its own queries; every MAD without a work completion), or
// received from the fabric and checked.
struct MadIfcInfo {
    bool check_mkey = false;  // op_mod bit 0 clear
    uint16_t slid = 0;        // the requester's LID (in_mod 31:16, with a WC)
    uint64_t now_ns = 0;
};

// What the firmware does besides answering: a Bad M_Key trap to raise, a
// TrapRepress that ends an outstanding trap.
struct MadEffects {
    bool bad_mkey = false;
    std::array<uint8_t, 64> notice{};  // trap 256, when bad_mkey
    bool repress = false;
    uint64_t repress_tid = 0;
};

class Sma {
public:
    // Process one MAD for `port` (1-based, already range-checked). Fills
    // `out` (256 bytes) and returns the command status: BadPkt when the
    // firmware would silently drop the MAD, Ok otherwise (a MAD-level
    // error is reported in the response's status field). `log` gets a
    // short description for the command log.
    // M_Key (IBA 14.2.4): an SMP that fails the port's M_Key check is
    // dropped (BadPkt) and reported in `fx` for trap 256.
    Status process(const NodeIdentity& node, std::span<Port> ports, unsigned port, std::span<const uint8_t> in,
                   std::span<uint8_t> out, std::string* log, const MadIfcInfo& info, MadEffects* fx);

private:
    uint16_t smp_get(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                     std::span<uint8_t> data);
    uint16_t smp_set(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                     std::span<const uint8_t> in_data, std::span<uint8_t> data);
    uint16_t pma(Port& p, uint8_t method, uint16_t attr, std::span<const uint8_t> in_data, std::span<uint8_t> data);
};

}  // namespace ibemu::mthca
