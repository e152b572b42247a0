// SPDX-License-Identifier: GPL-2.0
//
// The MT25208 model as a PCI function: a thin shell that decodes config
// and BAR accesses and hands them to the Core.
//
// Byte order: BAR accesses arrive as the guest CPU's little-endian view
// of the bytes (QEMU's DEVICE_LITTLE_ENDIAN convention). The HCA's
// registers are big-endian, so a 32-bit register value is the byte swap of
// the access value.
#pragma once

#include <memory>

#include "hca/config_space.h"
#include "hca/core.h"
#include "hca/mthca.h"
#include "hca/pci_function.h"

namespace ibemu::mthca {

class Hca final : public PciFunction, public MthcaPorts {
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

    // MthcaPorts.
    unsigned num_ports() const override { return num_ports_; }
    PortEndpoint& endpoint(unsigned port) override;
    void attach(unsigned port, Wire* wire) override { core_.attach_port(port, wire); }
    void raise_catas(uint32_t syndrome) override { core_.raise_catas(syndrome); }
    uint64_t retransmits() const override { return core_.doorbells().retransmits; }
    TrapCounters trap_counters(unsigned port) const override { return core_.trap_counters(port); }

    Core& core() { return core_; }
    const ConfigSpace& config() const { return cfgspace_; }

private:
    uint64_t bar0_read(uint64_t off, unsigned size);
    void bar0_write(uint64_t off, unsigned size, uint64_t value);
    void bar2_write(uint64_t off, unsigned size, uint64_t value);
    void device_reset();

    // The receive side of one port, handed to the fabric.
    class Endpoint final : public PortEndpoint {
    public:
        Endpoint(Core& core, unsigned port) : core_(core), port_(port) {}
        void receive(const Packet& p) override { core_.port_receive(port_, p); }
        void link_changed(bool up, const LinkParams& params) override { core_.port_link_changed(port_, up, params); }
        void tx_ready() override { core_.port_tx_ready(port_); }

    private:
        Core& core_;
        unsigned port_;
    };

    std::string name_;
    unsigned num_ports_;
    ConfigSpace cfgspace_;
    Core core_;
    Endpoint ep1_{core_, 1}, ep2_{core_, 2};
};

}  // namespace ibemu::mthca
