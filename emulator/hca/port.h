// SPDX-License-Identifier: GPL-2.0
//
// One IB port of the HCA: what its SMA reports in PortInfo, and the seam
// through which a fabric will later move the link.
#pragma once

#include <array>
#include <cstdint>

#include "ib/attributes.h"

namespace ibemu::mthca {

// IBA 14.2.5.6, PortInfo PortState / PortPhysicalState encodings, shared
// with the fabric.
using ib::PhysState;
using ib::PortState;
using ib::phys_state_name;
using ib::port_state_name;

inline constexpr unsigned kPkeyTableLen = 64;  // QUERY_DEV_LIM max_pkeys
inline constexpr unsigned kGidTableLen = 32;   // QUERY_DEV_LIM max_gids

// PortInfo CapabilityMask the firmware starts with (IBA 14.2.5.6 bits):
// IsTrapSupported(3), IsAutomaticMigrationSupported(5), IsSLMappingSupported(6),
// IsLEDInfoSupported(9), IsSystemImageGUIDSupported(11),
// IsVendorClassSupported(20), IsCapabilityMaskNoticeSupported(22),
// IsClientReregistrationSupported(25).
inline constexpr uint32_t kDefaultPortCapMask = 0x02500a68;

struct Port {
    unsigned num = 1;
    uint64_t guid = 0;

    // INIT_IB / CLOSE_IB.
    bool ib_open = false;
    uint8_t mtu_cap = 4;     // 2048 bytes (IBA MTU encoding)
    uint8_t vl_cap = 4;      // VL0-7
    uint8_t width_cap = 3;   // 1x | 4x
    uint16_t gid_cap = kGidTableLen;
    uint16_t pkey_cap = kPkeyTableLen;

    // Logical state as the SMA reports it.
    PortState state = PortState::Down;
    // A closed port (before INIT_IB / after CLOSE_IB) has its PHY disabled;
    // an open one polls for a peer until the fabric reports a link.
    PhysState phys = PhysState::Disabled;
    bool link_present = false;  // fabric seam
    uint16_t lid = 0;
    uint16_t sm_lid = 0;
    uint8_t lmc = 0;
    uint8_t sm_sl = 0;
    uint64_t mkey = 0;
    uint64_t gid_prefix = 0xfe80000000000000ull;
    uint32_t cap_mask = kDefaultPortCapMask;
    uint8_t subnet_timeout = 0;
    uint8_t neighbor_mtu = 4;
    uint8_t operational_vls = 4;
    uint8_t width_active = 2;  // 4x
    uint8_t speed_active = 1;  // 2.5 Gb/s
    uint16_t pkey_violations = 0;
    uint16_t qkey_violations = 0;
    // PortCounters the data path maintains (data in 4-byte words).
    uint64_t xmit_data = 0, rcv_data = 0, xmit_pkts = 0, rcv_pkts = 0;
    uint64_t rcv_errors = 0, xmit_discards = 0, vl15_dropped = 0;
    uint16_t mtu_active = 2048;  // what the link negotiated
    std::array<uint16_t, kPkeyTableLen> pkeys{};

    void power_on(unsigned n, uint64_t port_guid)
    {
        *this = Port{};
        num = n;
        guid = port_guid;
        pkeys[0] = 0xffff;  // default full-membership partition
    }

    void update_phys()
    {
        phys = !ib_open ? PhysState::Disabled : link_present ? PhysState::LinkUp : PhysState::Polling;
    }
};

}  // namespace ibemu::mthca
