// SPDX-License-Identifier: GPL-2.0
//
// PCI configuration space of the InfiniHost III Ex (MT25208) in mem-free
// mode: identity, BAR layout, MSI-X capability, and the few control bits
// the model itself needs to track (command register, MSI-X enable/mask).
#pragma once

#include <cstdint>

#include "hca/pci_function.h"

namespace ibemu::mthca {

// PCI identity. 0x15b3 is Mellanox; 0x6282 the MT25208 in native mode.
inline constexpr uint16_t kVendorId = 0x15b3;
inline constexpr uint16_t kDeviceId = 0x6282;
inline constexpr uint8_t kRevisionA0 = 0xa0;
inline constexpr uint32_t kClassInfiniBand = 0x0c0600;  // serial bus / InfiniBand

// BAR0: device configuration space (HCR, ECR, doorbell regions of the
// firmware, reset register). mthca_main.c insists on exactly 1 MiB.
inline constexpr uint64_t kBar0Size = 1u << 20;
// BAR2: UAR pages, 4 KiB each. 8 MiB = 2048 UARs, matching QUERY_DEV_LIM.
inline constexpr uint64_t kUarPageShift = 12;
inline constexpr uint64_t kBar2Size = 8u << 20;
// BAR4 (HCA-attached DDR) is not implemented: the driver then sets its
// "DDR hidden" flag, which is what a mem-free board looks like.

// MSI-X: table and PBA in the top of BAR0, away from every register the
// driver maps (HCR 0x80680, ECR 0x80700, reset 0xf0010, CLR_INT 0xf00d8 and
// the doorbell areas announced in QUERY_FW, all below 0xfe000).
inline constexpr uint16_t kMsixVectors = 32;
inline constexpr uint8_t kMsixCapOffset = 0x9c;
inline constexpr uint32_t kMsixTableOffset = 0xfe000;
inline constexpr uint32_t kMsixPbaOffset = 0xff000;

// Build the power-on identity (config image, BARs, MSI-X placement).
PciIdentity build_identity();

// Live view of config space. The shim (QEMU) owns the authoritative image
// and BAR address decoding; it forwards every config write after applying
// it, so the model only mirrors what it needs.
class ConfigSpace {
public:
    ConfigSpace();
    void power_on();  // back to the power-on image
    uint32_t read(unsigned off, unsigned size) const;
    void write(unsigned off, unsigned size, uint32_t value);

    const PciIdentity& identity() const { return ident_; }
    bool memory_enabled() const;
    // Inline: the DMA gate asks on every access (every packet placed).
    // Command register (0x04, little-endian) bit 2.
    bool bus_master() const { return cfg_[0x04] & (1u << 2); }
    bool intx_disabled() const;
    bool msix_enabled() const;
    bool msix_masked() const;

private:
    PciIdentity ident_;
    uint8_t cfg_[256];
    uint8_t wmask_[256];
};

}  // namespace ibemu::mthca
