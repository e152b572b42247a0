// SPDX-License-Identifier: GPL-2.0
#include "hca/mthca_hca.h"

#include "common/log.h"
#include "hca/regs.h"

namespace ibemu::mthca {
namespace {

uint32_t swap32(uint32_t v) { return __builtin_bswap32(v); }

bool in_range(uint64_t off, unsigned size, uint64_t base, uint64_t len)
{
    return off >= base && off - base < len && size <= len - (off - base);
}

bool valid_size(unsigned size) { return size == 1 || size == 2 || size == 4 || size == 8; }

constexpr unsigned kPciCommand = 0x04;  // PCI command register (header)

// A read of `size` bytes at byte `rel` of a block of big-endian dwords,
// presented little-endian to the CPU; dword(i) gives dword i.
template <class Dword>
uint64_t read_be_dwords(uint64_t rel, unsigned size, Dword dword)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < size; ++i) {
        uint64_t b = rel + i;
        uint8_t byte = uint8_t(dword(unsigned(b / 4)) >> (8 * (3 - b % 4)));
        v |= uint64_t(byte) << (8 * i);
    }
    return v;
}

}  // namespace

Hca::Hca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq)
    : name_(cfg.name), num_ports_(cfg.num_ports == 2 ? 2 : 1), core_(cfg, mem, irq, cfgspace_)
{
    IBEMU_INFO(name_, "MT25208 (15b3:6282) mem-free, %u port(s), node GUID %016llx, FW %u.%u.%u", num_ports_,
               (unsigned long long)cfg.node_guid, kFwMajor, kFwMinor, kFwSubminor);
}

Hca::~Hca() = default;

uint32_t Hca::config_read(unsigned off, unsigned size) { return cfgspace_.read(off, size); }

void Hca::config_write(unsigned off, unsigned size, uint32_t value)
{
    bool msix = cfgspace_.msix_enabled();
    cfgspace_.write(off, size, value);
    if (msix != cfgspace_.msix_enabled())
        IBEMU_INFO(name_, "MSI-X %s", cfgspace_.msix_enabled() ? "enabled" : "disabled");
    core_.interrupt_mode_changed();
}

void Hca::device_reset()
{
    IBEMU_INFO(name_, "device reset");
    // The standard header, the command register with it, is owned by the
    // shim's PCI core (QEMU), which the HCA's reset register does not
    // reset: the guest reads back the command it set, and a driver that
    // restores only the registers that read differently (pci_restore_state)
    // never writes it again. Keep the model's copy equal to what the
    // guest sees, so Bus Master Enable survives the reset as it appears to.
    uint32_t command = cfgspace_.read(kPciCommand, 2);
    core_.power_on();
    cfgspace_.power_on();
    cfgspace_.write(kPciCommand, 2, command);
    core_.interrupt_mode_changed();
}

void Hca::reset() { device_reset(); }

uint64_t Hca::poll(uint64_t now_ns) { return core_.poll(now_ns); }

PortEndpoint& Hca::endpoint(unsigned port) { return port == 2 && num_ports_ == 2 ? ep2_ : ep1_; }

uint64_t Hca::mmio_read(unsigned bar, uint64_t off, unsigned size)
{
    if (!valid_size(size)) {
        IBEMU_GUEST_ERROR(name_, "BAR%u read of size %u at 0x%llx", bar, size, (unsigned long long)off);
        return 0;
    }
    if (bar == 0)
        return bar0_read(off, size);
    // UAR pages are write-only doorbells.
    IBEMU_DEBUG(name_, "BAR%u read at 0x%llx size %u", bar, (unsigned long long)off, size);
    return 0;
}

void Hca::mmio_write(unsigned bar, uint64_t off, unsigned size, uint64_t value)
{
    if (!valid_size(size)) {
        IBEMU_GUEST_ERROR(name_, "BAR%u write of size %u at 0x%llx", bar, size, (unsigned long long)off);
        return;
    }
    if (bar == 0)
        bar0_write(off, size, value);
    else if (bar == 2)
        bar2_write(off, size, value);
    else
        IBEMU_GUEST_ERROR(name_, "write to unimplemented BAR%u at 0x%llx", bar, (unsigned long long)off);
}

uint64_t Hca::bar0_read(uint64_t off, unsigned size)
{
    if (in_range(off, size, kHcrBase, kHcrSize))
        return read_be_dwords(off - kHcrBase, size, [&](unsigned i) { return core_.hcr_read(i); });
    // The catastrophic error buffer, all zero while the chip is healthy.
    // The driver polls it dword by dword.
    if (in_range(off, size, kCatasBase, kCatasDwords * 4 + 4))
        return read_be_dwords(off - kCatasBase, size, [&](unsigned i) { return core_.catas_word(i); });
    IBEMU_DEBUG(name_, "BAR0 read at 0x%llx size %u: 0", (unsigned long long)off, size);
    return 0;
}

void Hca::bar0_write(uint64_t off, unsigned size, uint64_t value)
{
    if (in_range(off, size, kHcrBase, kHcrSize)) {
        // Writes narrower than 32 bits do not work on the real HCR.
        if ((size != 4 && size != 8) || (off & 3)) {
            IBEMU_GUEST_ERROR(name_, "HCR write of size %u at +0x%llx ignored", size,
                              (unsigned long long)(off - kHcrBase));
            return;
        }
        unsigned dw = unsigned((off - kHcrBase) / 4);
        core_.hcr_write(dw, swap32(uint32_t(value)));
        if (size == 8)
            core_.hcr_write(dw + 1, swap32(uint32_t(value >> 32)));
        return;
    }
    if (in_range(off, size, kResetOffset, 4)) {
        if (size == 4 && swap32(uint32_t(value)) == kResetMagic) {
            device_reset();
            return;
        }
        IBEMU_GUEST_ERROR(name_, "reset register write 0x%llx size %u ignored", (unsigned long long)value, size);
        return;
    }
    if (in_range(off, size, kEqArmBase, 8) && (size == 4 || size == 8) && !(off & 3)) {
        // Big-endian 64-bit mask: the dword at +0 holds EQs 63..32, the
        // one at +4 EQs 31..0.
        if (size == 8) {
            uint64_t be = __builtin_bswap64(value);
            core_.eq_arm(be);
        } else {
            uint64_t m = swap32(uint32_t(value));
            core_.eq_arm(off == kEqArmBase ? m << 32 : m);
        }
        return;
    }
    if (in_range(off, size, kEqSetCiBase, kMaxEqs * 8) && (size == 4 || size == 8)) {
        uint64_t rel = off - kEqSetCiBase;
        if ((rel & 7) == 0) {
            core_.eq_set_ci(unsigned(rel / 8), swap32(uint32_t(value)));
            return;
        }
        if ((rel & 7) == 4 && size == 4)
            return;  // reserved half of the slot
    }
    if (in_range(off, size, kClrIntBase, 8) && (size == 4 || size == 8) && !(off & 3)) {
        if (size == 8)
            core_.clr_int(__builtin_bswap64(value));
        else {
            uint64_t m = swap32(uint32_t(value));
            core_.clr_int(off == kClrIntBase ? m << 32 : m);
        }
        return;
    }
    if (in_range(off, size, kEcrBase, kEcrSize)) {
        IBEMU_DEBUG(name_, "ECR write at 0x%llx ignored (mem-free)", (unsigned long long)off);
        return;
    }
    IBEMU_GUEST_ERROR(name_, "BAR0 write 0x%llx size %u at 0x%llx: no register there", (unsigned long long)value,
                      size, (unsigned long long)off);
}

void Hca::bar2_write(uint64_t off, unsigned size, uint64_t value)
{
    if (off >= kBar2Size) {
        IBEMU_GUEST_ERROR(name_, "BAR2 write beyond the BAR at 0x%llx", (unsigned long long)off);
        return;
    }
    uint32_t uar = uint32_t(off >> kUarPageShift);
    unsigned in_page = unsigned(off & ((1u << kUarPageShift) - 1));
    unsigned db = in_page & ~7u;
    bool known = db == kUarSendDoorbell || db == kUarRecvDoorbell || db == kUarCqDoorbell;
    if (!known || (size != 4 && size != 8) || (in_page & 3)) {
        IBEMU_GUEST_ERROR(name_, "UAR %u write of size %u at +0x%x ignored", uar, size, in_page);
        return;
    }
    // A doorbell is a big-endian 64-bit value: hi dword at +0, lo at +4.
    // A 64-bit CPU writes it at once; otherwise hi comes first.
    if (size == 8) {
        if (in_page & 7) {
            IBEMU_GUEST_ERROR(name_, "UAR %u misaligned 64-bit doorbell at +0x%x", uar, in_page);
            return;
        }
        uint64_t be = __builtin_bswap64(value);
        core_.uar_doorbell(uar, db, uint32_t(be >> 32), uint32_t(be));
        return;
    }
    core_.uar_doorbell_half(uar, db, in_page & 4, swap32(uint32_t(value)));
}

}  // namespace ibemu::mthca

namespace ibemu {

std::unique_ptr<PciFunction> make_mthca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq)
{
    return std::make_unique<mthca::Hca>(cfg, mem, irq);
}

MthcaPorts* mthca_ports(PciFunction& f) { return dynamic_cast<MthcaPorts*>(&f); }

}  // namespace ibemu
