// SPDX-License-Identifier: GPL-2.0
//
// The whole emulated fabric: switches and links built from a Topology, the
// attachment points of the HCAs, capture and the control interface.
//
// How the server and an HCA plug in:
//
//   fabric::MonotonicClock clock;
//   fabric::Fabric fab(clock);
//   fab.build_from(option, &err);              // "star:3", "b2b", or an ibnetdiscover file
//   ...
//   // When guest "vm0" (node GUID g) connects and its HCA port 1 exists:
//   fabric::HcaPort* hp = fab.hca_port("vm0", g, 1);  // nullptr: not in the topology
//   ports->attach(1, &hp->wire());                    // the HCA port transmits here
//   hp->attach(&ports->endpoint(1));                  // link_changed(true, params) follows
//   // When the guest goes away:
//   hp->detach();                                     // the peer sees the link go down
//   ports->attach(1, nullptr);
//
//   // In the poll() loop: timeout from next_deadline(), then run_due().
//   uint64_t d = fab.next_deadline();           // kNever: nothing pending
//   fab.run_due();
//
//   // Control socket: one line in, one reply out.
//   std::string reply = fab.control("link vm0:1 down");
//
// The HCA's PortEndpoint may see receive() from inside its own transmit()
// only for another port; never re-entered for the same attachment (see
// link.h). Everything runs on the caller's thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/clock.h"
#include "fabric/link.h"
#include "fabric/pcap.h"
#include "fabric/switch.h"
#include "fabric/topology.h"

namespace ibemu::fabric {

class Fabric;

// Splits a control-protocol line into its words (blank-separated). False
// with *err for a line the protocol refuses: too long, too many words, a
// non-printable character. Shared by Fabric::control and the emulator
// server's own commands.
bool split_control_line(std::string_view line, std::vector<std::string_view>* words, std::string* err);

// Where one HCA port joins the fabric.
class HcaPort {
public:
    const std::string& node_name() const { return name_; }
    uint64_t node_guid() const { return guid_; }
    unsigned port() const { return port_; }
    Link& link() { return *link_; }
    bool attached() const { return link_->endpoint(side_) != nullptr; }

    // Where the HCA port transmits; valid before attach(), so the HCA can
    // hold it before it hears link_changed().
    Wire& wire() { return link_->wire(side_); }
    // Joins the HCA's port; returns wire(). Replaces a previous endpoint
    // (which sees its link go down). The link comes up (link_changed on
    // both ends) once both ends are attached and it is administratively up.
    // An HCA model is attached non-reentrant (the default); an endpoint
    // that may take receive() from inside its own transmit() (a stub CA)
    // says `reentrant`, and its answers then travel without a deferral.
    Wire& attach(PortEndpoint* ep, bool reentrant = false);
    void detach();

private:
    friend class Fabric;
    std::string name_;
    uint64_t guid_ = 0;
    unsigned node_ = 0;
    unsigned port_ = 0;
    Link* link_ = nullptr;
    unsigned side_ = 0;
};

struct FabricOptions {
    LinkConfig link;  // defaults for every link (rate comes from the topology)
};

class Fabric {
public:
    explicit Fabric(Clock& clock, FabricOptions opts = {});
    ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    // Instantiates a topology (once). False + *error on a bad one.
    bool build(const Topology& t, std::string* error);
    bool build_spec(std::string_view builtin_spec, std::string* error);
    bool build_file(const std::string& path, std::string* error);
    // What a --topology option gives: a built-in shorthand (b2b..., star:...,
    // chain:...) or else the path of an ibnetdiscover file.
    bool build_from(std::string_view arg, std::string* error);

    const Topology& topology() const { return topo_; }
    Scheduler& scheduler() { return sched_; }

    // The attachment of an HCA port, found by node name, else by node GUID.
    HcaPort* hca_port(std::string_view name, uint64_t guid, unsigned port);
    std::vector<HcaPort*> hca_ports();
    Switch* find_switch(std::string_view key);
    // The link at <node>:<port> and which side that port is on.
    Link* link_at(std::string_view node, unsigned port, unsigned* side);
    const std::vector<std::unique_ptr<Link>>& links() const { return links_; }

    // The rate model (link.h) on or off on every link; `burst_ns` as
    // LinkConfig::rate_burst_ns. Off by default (FabricOptions::link).
    void set_rate_model(bool on, uint64_t burst_ns = kDefaultRateBurstNs);

    uint64_t next_deadline() const { return sched_.next_deadline(); }
    void run_due() { sched_.settle(); }

    // One command line in, a reply out: "ok[ ...]" or "error: ...", possibly
    // several lines (show). See control.cc for the commands.
    std::string control(std::string_view line);

    // Capture: every packet crossing the given links (all when empty).
    bool capture_start(const std::string& path, const std::vector<Link*>& links, std::string* error,
                       PcapFormat fmt = PcapFormat::PcapErf);
    void capture_stop();
    bool capturing() const { return capture_ && capture_->writer().is_open(); }

private:
    struct NodeRef {
        std::unique_ptr<Switch> sw;  // for switches
        std::vector<Link*> port_link;  // by port number
        std::vector<unsigned> port_side;
    };
    std::string node_label(unsigned node) const;
    std::string show_links() const;
    std::string show_drops() const;
    std::string show_nodes() const;
    std::string show_switch(const Switch& sw) const;

    Scheduler sched_;
    FabricOptions opts_;
    Topology topo_;
    bool built_ = false;
    std::vector<NodeRef> nodes_;
    std::vector<std::unique_ptr<Link>> links_;
    std::vector<std::unique_ptr<HcaPort>> hca_ports_;
    std::unique_ptr<Capture> capture_;
};

}  // namespace ibemu::fabric
