// SPDX-License-Identifier: GPL-2.0
//
// Factory for the InfiniHost III Ex (MT25208, PCI 15b3:6282) model in
// mem-free ("Arbel native") mode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hca/pci_function.h"

namespace ibemu {

struct MthcaConfig {
    std::string name = "mthca";     // used in log lines
    uint64_t node_guid = 0x0002c90300000001ull;
    unsigned num_ports = 1;         // 1 or 2
};

std::unique_ptr<PciFunction> make_mthca(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq);

}  // namespace ibemu
