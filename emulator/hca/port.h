// SPDX-License-Identifier: GPL-2.0
//
// One IB port of the HCA: what its SMA reports in PortInfo, and the seam
// through which a fabric will later move the link.
#pragma once

#include <array>
#include <cstdint>

#include "ib/attributes.h"
#include "ib/mkey.h"

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
// IsTrapSupported(3), IsSLMappingSupported(6), IsLEDInfoSupported(9),
// IsSystemImageGUIDSupported(11), IsVendorClassSupported(20),
// IsCapabilityMaskNoticeSupported(22), IsClientReregistrationSupported(25).
// Not IsAutomaticMigrationSupported(5): the model migrates a QP to its
// alternate path when software asks (MIGRATED while ARMED) or the remote
// side did, but not by itself on retry exhaustion, so neither the port nor
// QUERY_DEV_LIM claims automatic migration.
inline constexpr uint32_t kDefaultPortCapMask = 0x02500a48;

// What the MT25208's PHY can do (PortInfo LinkSpeed/LinkWidth encodings):
// 2.5 Gb/s (SDR) only, 1x or 4x.
inline constexpr uint8_t kHcaSpeeds = 1;
inline constexpr uint8_t kHcaWidths = 0x3;  // 1x | 4x

// The width a link trains to (LinkWidthActive, 1 = 1x, 2 = 4x, 4 = 8x,
// 8 = 12x): the widest one this port has enabled that the link offers.
// A 12x or 8x cable trains at 4x here; with nothing in common, 1x.
inline uint8_t trained_width(uint8_t offered, uint8_t enabled)
{
    for (uint8_t w : {8, 4, 2, 1})
        if ((enabled & kHcaWidths & w) && w <= offered)
            return w;
    return 1;
}

// PortInfo CapabilityMask bits the firmware itself acts on.
inline constexpr uint32_t kCapIsTrapSupported = 1u << 3;
inline constexpr uint32_t kCapIsCapMaskNoticeSupported = 1u << 22;

// The traps the firmware sends for a port (IBA 14.2.5.1), one slot each: a
// trap is outstanding from its first send until the SM's TrapRepress with
// its TID; while outstanding it is resent on a timer, and a new event of
// the same kind only updates the Notice it carries.
enum class TrapKind : uint8_t { CapMask, BadMkey, BadPkey, BadQkey, Count };
inline constexpr unsigned kNumTrapKinds = unsigned(TrapKind::Count);

// Resent every 4.096 us * 2^SubnetTimeout, but not more often than once a
// second, and given up after this many resends without a TrapRepress.
inline constexpr uint64_t kTrapMinIntervalNs = 1'000'000'000;
inline constexpr uint8_t kTrapMaxResends = 16;

struct TrapSlot {
    bool outstanding = false;
    uint64_t tid = 0;
    uint64_t next_ns = 0;  // next resend
    uint8_t resends = 0;
    std::array<uint8_t, 64> notice{};
};

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
    ib::MkeyGuard mkey;  // M_Key, protect bits, lease, violations
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
    std::array<TrapSlot, kNumTrapKinds> traps{};
    std::array<uint16_t, kPkeyTableLen> pkeys{};
    // SLtoVLMappingTable (IBA 14.2.5.8; zeros: every SL on VL0, the
    // default), VLArbitrationTable blocks 1-4 (14.2.5.9; the first
    // VLArbLow/HighCap = 8 entries of the low and high tables are used) and
    // PortInfo VLHighLimit, as the SM set them. arb_gen moves with every
    // change of the arbitration, for the transmitter to pick it up.
    std::array<uint8_t, 8> sl2vl{};
    uint8_t vlarb[256] = {};
    uint8_t vl_high_limit = 0;
    uint32_t arb_gen = 0;

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
