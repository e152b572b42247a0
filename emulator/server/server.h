// SPDX-License-Identifier: GPL-2.0
//
// The carrier between QEMU shims and the HCA models: one unix listening
// socket, any number of shim connections, all served from one thread with
// poll(). Per connection it maps the guest's memfd, builds the HCA with
// make_mthca(), answers WELCOME and then turns messages into PciFunction
// calls and the model's interrupts into messages. No device behaviour lives
// here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibemu {

// Deterministic node GUID for a node name: Mellanox OUI 00:02:c9 in the top
// 24 bits, 40 bits of a hash of the name below.
uint64_t derive_node_guid(const std::string& name);

// "NAME=GUID" with GUID as 16 hex digits, optionally 0x-prefixed and/or
// colon-grouped. Returns false on a malformed argument.
bool parse_node_guid(const std::string& arg, std::string* name, uint64_t* guid);

struct MthcaConfig;
class GuestMemory;
class InterruptSink;
class PciFunction;
namespace fabric {
class Fabric;
class HcaPort;
class MonotonicClock;
}  // namespace fabric
namespace stub {
class StubFarm;
}
namespace madhost {
class MadHost;
}

using DeviceFactory =
    std::function<std::unique_ptr<PciFunction>(const MthcaConfig&, GuestMemory&, InterruptSink&)>;

struct ServerOptions {
    std::string socket_path;
    std::map<std::string, uint64_t> node_guids;  // explicit --node NAME=GUID
    // The device behind each connection; empty means make_mthca(). Tests of
    // the carrier itself may plug in something simpler.
    DeviceFactory device_factory;
    // The fabric the HCA ports are cabled into: a topology file in the
    // ibnetdiscover format, or a built-in spec ("b2b", "star:3", ...; see
    // emulator/fabric/topology.h). Empty: every port stays unconnected.
    std::string fabric;
    // Unix socket of the fabric's control interface (one command line per
    // connection, the reply comes back and the server closes). Empty: none.
    std::string control_path;
    // Serve every HCA of the topology that no guest holds with a stub CA
    // (emulator/stub): a guest that connects takes its port over, and the
    // stub comes back when the guest leaves.
    bool stub_cas = false;
    // The host MAD endpoint (emulator/madhost): host processes with
    // libibemu_umad.so use the port of topology CA `umad_node` through
    // this socket. Implies stub_cas. Empty: none.
    std::string umad_path;
    std::string umad_node;
    // Ports of each guest's HCA: 2, as on the real MT25208 (MHGA28 cards),
    // or 1. A port the topology does not cable stays without a link
    // (PortInfo PhysState Polling, State Down), as an unplugged port does.
    // 1 by default until every VM suite has been run with two ports
    // (Documentation/emulator.md).
    unsigned hca_ports = 1;
};

class Connection;

class Server {
public:
    explicit Server(ServerOptions opts);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Creates the listening socket (unlinking a stale one). False + *error
    // on failure.
    bool listen(std::string* error);
    // Serves until stop(). Returns 0, or 1 on a fatal error of the server
    // itself (never because of what a shim sent).
    int run();
    // Async-signal-safe and thread-safe: makes run() return soon.
    void stop();

    size_t connections() const { return conns_.size(); }
    fabric::Fabric* fabric() { return fabric_.get(); }
    madhost::MadHost* mad_host() { return madhost_; }
    uint64_t guid_for(const std::string& node) const;

private:
    friend class Connection;
    void accept_all();
    bool setup_fabric(std::string* error);
    void port_released(fabric::HcaPort* hp);
    struct CtlClient;
    void accept_control();
    bool serve_control_client(CtlClient& c, short revents, uint64_t now);
    std::string control(std::string_view line);
    bool node_in_use(const std::string& node, const Connection* except) const;
    bool guid_in_use(uint64_t guid, const Connection* except) const;

    ServerOptions opts_;
    int listen_fd_ = -1;
    int wake_rd_ = -1;
    int wake_wr_ = -1;
    bool listening_ = false;
    unsigned next_conn_id_ = 0;
    // The clock of the models and the fabric (always there), and the fabric
    // (null without ServerOptions::fabric);
    // the connections hold attachments into it, so it is declared first and
    // outlives them.
    std::unique_ptr<fabric::MonotonicClock> clock_;
    std::unique_ptr<fabric::Fabric> fabric_;
    // Stub CAs (and the host MAD endpoint among them) on the ports no guest
    // holds; after fabric_, before conns_.
    std::unique_ptr<stub::StubFarm> farm_;
    madhost::MadHost* madhost_ = nullptr;
    std::vector<std::unique_ptr<Connection>> conns_;
    int ctl_fd_ = -1;
    bool ctl_listening_ = false;
    std::vector<std::unique_ptr<CtlClient>> ctl_clients_;
};

}  // namespace ibemu
