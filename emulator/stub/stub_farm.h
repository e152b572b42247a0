// SPDX-License-Identifier: GPL-2.0
//
// Serves every HCA of a fabric that no guest has claimed with a StubCa.
//
//   fabric::Fabric fab(clock);
//   fab.build_from("fattree:100", &err);
//   stub::StubFarm farm(fab);
//   farm.attach_all();        // every unattached HCA port now has a stub CA
//
// A guest that later attaches to an HcaPort replaces the stub there (the
// stub sees its link go down); release(hp) gives the port back to its stub
// after the guest left.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabric/fabric.h"
#include "stub/stub_ca.h"

namespace ibemu::stub {

class StubFarm {
public:
    explicit StubFarm(fabric::Fabric& fab) : fab_(fab) {}

    // Attaches a stub to every HCA port without an endpoint. Returns how
    // many ports it attached.
    unsigned attach_all();
    // Re-attaches the stub of one port (after a guest detached from it).
    bool release(fabric::HcaPort* hp);

    size_t size() const { return cas_.size(); }
    StubCa* find(const std::string& node_key);
    const std::vector<std::unique_ptr<StubCa>>& cas() const { return cas_; }

    // The CA a factory makes for a topology node; the default is a StubCa.
    // A host MAD endpoint (a StubCa subclass) is put in by the caller with
    // adopt() before attach_all().
    void adopt(const std::string& node_key, std::unique_ptr<StubCa> ca);

private:
    StubCa* ca_for(fabric::HcaPort* hp);

    fabric::Fabric& fab_;
    std::vector<std::unique_ptr<StubCa>> cas_;
    std::map<std::string, StubCa*> by_key_;  // node id from the topology
};

// The NodeIdentity a stub for topology node `t` gets.
mthca::NodeIdentity stub_identity(const fabric::TopoNode& t);

}  // namespace ibemu::stub
