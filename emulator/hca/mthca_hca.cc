// SPDX-License-Identifier: GPL-2.0
#include "hca/mthca_hca.h"

#include "common/log.h"

namespace ibemu::mthca {

Hca::Hca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq) : cfg_(cfg), mem_(mem), irq_(irq) {}
Hca::~Hca() = default;

uint32_t Hca::config_read(unsigned off, unsigned size) { return cfgspace_.read(off, size); }
void Hca::config_write(unsigned off, unsigned size, uint32_t value) { cfgspace_.write(off, size, value); }
uint64_t Hca::mmio_read(unsigned, uint64_t, unsigned) { return 0; }
void Hca::mmio_write(unsigned, uint64_t, unsigned, uint64_t) {}
void Hca::reset() { cfgspace_.power_on(); }
uint64_t Hca::poll(uint64_t) { return UINT64_MAX; }

}  // namespace ibemu::mthca

namespace ibemu {

std::unique_ptr<PciFunction> make_mthca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq)
{
    return std::make_unique<mthca::Hca>(cfg, mem, irq);
}

}  // namespace ibemu
