// SPDX-License-Identifier: GPL-2.0
//
// The boundary between a device model and whatever carries guest accesses to
// it: the QEMU shim server in a real run, a test harness in unit tests.
//
// A device model is single-threaded and deterministic. It never blocks, never
// reads a clock of its own and never touches guest RAM except through the
// GuestMemory it was given.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ibemu {

// Guest-physical memory as the device sees it for DMA. Every access is
// bounds-checked by the implementation; a false return means the address
// range is not guest RAM (for example a BAR of the device itself) and the
// model must treat it as a DMA error, never as a crash.
class GuestMemory {
public:
    virtual ~GuestMemory() = default;
    virtual bool read(uint64_t gpa, void* dst, size_t len) = 0;
    virtual bool write(uint64_t gpa, const void* src, size_t len) = 0;
    // Zero-copy access: a host pointer to [gpa, gpa + len) if that range is
    // one contiguous piece of guest RAM, else nullptr (then use read/write).
    // The pointer stays valid until the next call into the model's owner.
    virtual uint8_t* map_range(uint64_t gpa, size_t len)
    {
        (void)gpa;
        (void)len;
        return nullptr;
    }
};

// Interrupt delivery. The model decides which of the two to use from its own
// view of config space (the MSI-X enable bit).
class InterruptSink {
public:
    virtual ~InterruptSink() = default;
    virtual void msix(unsigned vector) = 0;  // fire one MSI-X message
    virtual void intx(bool level) = 0;       // set the INTx line level
};

struct BarInfo {
    uint64_t size = 0;  // bytes, a power of two; 0 = BAR not implemented
    bool is64 = false;
    bool prefetch = false;
};

// What the shim needs to present the function on the guest's PCI bus.
struct PciIdentity {
    std::array<uint8_t, 256> config{};  // initial config-space image
    std::array<BarInfo, 6> bars{};      // a 64-bit BAR uses slots n and n+1
    uint16_t msix_vectors = 0;          // 0 = no MSI-X capability
    uint8_t msix_cap_offset = 0;        // offset of the capability in config
    uint8_t msix_table_bar = 0;
    uint32_t msix_table_offset = 0;
    uint8_t msix_pba_bar = 0;
    uint32_t msix_pba_offset = 0;
};

class PciFunction {
public:
    virtual ~PciFunction() = default;
    virtual const PciIdentity& identity() const = 0;
    // Config space. off + size <= 256, size in {1, 2, 4}.
    virtual uint32_t config_read(unsigned off, unsigned size) = 0;
    virtual void config_write(unsigned off, unsigned size, uint32_t value) = 0;
    // BAR space. size in {1, 2, 4, 8}; off may be anything the guest sent.
    virtual uint64_t mmio_read(unsigned bar, uint64_t off, unsigned size) = 0;
    virtual void mmio_write(unsigned bar, uint64_t off, unsigned size, uint64_t value) = 0;
    // Power-on / system reset from the machine (not the device's own reset
    // register, which the model handles itself).
    virtual void reset() = 0;
    // Called by the event loop after each batch of guest accesses and on
    // timers; lets the model finish deferred work. now_ns is the emulator's
    // monotonic time. Returns the absolute time it next wants to be called,
    // or UINT64_MAX if it has no pending work.
    virtual uint64_t poll(uint64_t now_ns) = 0;
};

}  // namespace ibemu
