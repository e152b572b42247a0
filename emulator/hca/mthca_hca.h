// SPDX-License-Identifier: GPL-2.0
//
// The MT25208 model: a thin shell that routes PCI accesses to the parts
// (config space, BAR0 registers, command interface, UAR doorbells).
#pragma once

#include <memory>

#include "hca/config_space.h"
#include "hca/mthca.h"
#include "hca/pci_function.h"

namespace ibemu::mthca {

class Hca final : public PciFunction {
public:
    Hca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq);
    ~Hca() override;

    const PciIdentity& identity() const override { return cfgspace_.identity(); }
    uint32_t config_read(unsigned off, unsigned size) override;
    void config_write(unsigned off, unsigned size, uint32_t value) override;
    uint64_t mmio_read(unsigned bar, uint64_t off, unsigned size) override;
    void mmio_write(unsigned bar, uint64_t off, unsigned size, uint64_t value) override;
    void reset() override;
    uint64_t poll(uint64_t now_ns) override;

private:
    MthcaConfig cfg_;
    GuestMemory& mem_;
    InterruptSink& irq_;
    ConfigSpace cfgspace_;
};

}  // namespace ibemu::mthca
