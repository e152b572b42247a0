// SPDX-License-Identifier: GPL-2.0
#include "hca/config_space.h"

#include <cstring>

namespace ibemu::mthca {
namespace {

// Standard type-0 header offsets (PCI Local Bus spec 3.0, section 6.1).
constexpr unsigned kCfgVendor = 0x00;
constexpr unsigned kCfgDevice = 0x02;
constexpr unsigned kCfgCommand = 0x04;
constexpr unsigned kCfgStatus = 0x06;
constexpr unsigned kCfgRevision = 0x08;
constexpr unsigned kCfgClass = 0x09;
constexpr unsigned kCfgCacheLine = 0x0c;
constexpr unsigned kCfgLatency = 0x0d;
constexpr unsigned kCfgBar0 = 0x10;
constexpr unsigned kCfgSubVendor = 0x2c;
constexpr unsigned kCfgSubDevice = 0x2e;
constexpr unsigned kCfgCapPtr = 0x34;
constexpr unsigned kCfgIntLine = 0x3c;
constexpr unsigned kCfgIntPin = 0x3d;

constexpr uint16_t kCmdMemory = 1u << 1;
constexpr uint16_t kCmdMaster = 1u << 2;
constexpr uint16_t kCmdIntxDisable = 1u << 10;
constexpr uint16_t kStatusCapList = 1u << 4;

// MSI-X capability (PCI 3.0, section 6.8.2): id, next, message control,
// table offset/BIR, PBA offset/BIR.
constexpr uint8_t kCapIdMsix = 0x11;
constexpr uint16_t kMsixCtlEnable = 1u << 15;
constexpr uint16_t kMsixCtlMask = 1u << 14;

// BAR low-dword type bits.
constexpr uint32_t kBarMem64 = 0x4;
constexpr uint32_t kBarPrefetch = 0x8;

void put16(uint8_t* p, uint16_t v)
{
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}

void put32(uint8_t* p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = uint8_t(v >> (8 * i));
}

uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

// Which bits of each config byte the guest may change. Everything else is
// read-only (ids, class, capability contents, BAR type bits).
void build_write_mask(uint8_t* mask)
{
    std::memset(mask, 0, 256);
    put16(mask + kCfgCommand, kCmdMemory | kCmdMaster | kCmdIntxDisable | (1u << 6) | (1u << 8));
    mask[kCfgCacheLine] = 0xff;
    mask[kCfgLatency] = 0xff;
    mask[kCfgIntLine] = 0xff;
    const PciIdentity id = build_identity();
    for (unsigned bar = 0; bar < 6; ++bar) {
        const BarInfo& b = id.bars[bar];
        if (!b.size)
            continue;
        uint64_t addr_mask = ~(b.size - 1) & ~uint64_t(0xf);
        put32(mask + kCfgBar0 + 4 * bar, uint32_t(addr_mask));
        if (b.is64)
            put32(mask + kCfgBar0 + 4 * (bar + 1), uint32_t(addr_mask >> 32));
    }
    put16(mask + kMsixCapOffset + 2, kMsixCtlEnable | kMsixCtlMask);
}

}  // namespace

PciIdentity build_identity()
{
    PciIdentity id;
    uint8_t* c = id.config.data();
    put16(c + kCfgVendor, kVendorId);
    put16(c + kCfgDevice, kDeviceId);
    put16(c + kCfgStatus, kStatusCapList);
    c[kCfgRevision] = kRevisionA0;
    c[kCfgClass] = uint8_t(kClassInfiniBand);
    c[kCfgClass + 1] = uint8_t(kClassInfiniBand >> 8);
    c[kCfgClass + 2] = uint8_t(kClassInfiniBand >> 16);
    put16(c + kCfgSubVendor, kVendorId);
    put16(c + kCfgSubDevice, kDeviceId);
    c[kCfgCapPtr] = kMsixCapOffset;
    c[kCfgIntPin] = 1;  // INTA#

    id.bars[0] = {kBar0Size, true, false};
    id.bars[2] = {kBar2Size, true, true};
    put32(c + kCfgBar0 + 0, kBarMem64);
    put32(c + kCfgBar0 + 8, kBarMem64 | kBarPrefetch);

    uint8_t* cap = c + kMsixCapOffset;
    cap[0] = kCapIdMsix;
    cap[1] = 0;  // end of list
    put16(cap + 2, uint16_t(kMsixVectors - 1));
    put32(cap + 4, kMsixTableOffset | 0);  // BIR 0
    put32(cap + 8, kMsixPbaOffset | 0);

    id.msix_vectors = kMsixVectors;
    id.msix_cap_offset = kMsixCapOffset;
    id.msix_table_bar = 0;
    id.msix_table_offset = kMsixTableOffset;
    id.msix_pba_bar = 0;
    id.msix_pba_offset = kMsixPbaOffset;
    return id;
}

ConfigSpace::ConfigSpace() : ident_(build_identity())
{
    build_write_mask(wmask_);
    power_on();
}

void ConfigSpace::power_on() { std::memcpy(cfg_, ident_.config.data(), sizeof(cfg_)); }

uint32_t ConfigSpace::read(unsigned off, unsigned size) const
{
    if (off >= 256 || (size != 1 && size != 2 && size != 4) || off + size > 256)
        return 0xffffffffu;
    uint32_t v = 0;
    for (unsigned i = 0; i < size; ++i)
        v |= uint32_t(cfg_[off + i]) << (8 * i);
    return v;
}

void ConfigSpace::write(unsigned off, unsigned size, uint32_t value)
{
    if (off >= 256 || (size != 1 && size != 2 && size != 4) || off + size > 256)
        return;
    for (unsigned i = 0; i < size; ++i) {
        uint8_t b = uint8_t(value >> (8 * i));
        uint8_t m = wmask_[off + i];
        cfg_[off + i] = uint8_t((cfg_[off + i] & ~m) | (b & m));
    }
}

bool ConfigSpace::memory_enabled() const { return get16(cfg_ + kCfgCommand) & kCmdMemory; }
static_assert(kCfgCommand == 0x04 && kCmdMaster == 1u << 2, "ConfigSpace::bus_master() reads this bit");
bool ConfigSpace::intx_disabled() const { return get16(cfg_ + kCfgCommand) & kCmdIntxDisable; }
bool ConfigSpace::msix_enabled() const { return get16(cfg_ + kMsixCapOffset + 2) & kMsixCtlEnable; }
bool ConfigSpace::msix_masked() const { return get16(cfg_ + kMsixCapOffset + 2) & kMsixCtlMask; }

}  // namespace ibemu::mthca
