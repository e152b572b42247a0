// SPDX-License-Identifier: GPL-2.0
#include "stub/stub_farm.h"

namespace ibemu::stub {

mthca::NodeIdentity stub_identity(const fabric::TopoNode& t)
{
    mthca::NodeIdentity id;
    id.node_guid = t.guid;
    if (!id.node_guid) {
        // Built-in topologies match guests by name and leave GUIDs 0; an SM
        // needs them unique: derive one from the id (Mellanox OUI, FNV-1a),
        // with room below for the port GUIDs.
        uint64_t h = 0xcbf29ce484222325ull;
        for (unsigned char c : t.id) {
            h ^= c;
            h *= 0x100000001b3ull;
        }
        id.node_guid = (0x0002c9ull << 40) | (h & 0xfffffffff0ull);
    }
    id.sys_image_guid = t.sys_image_guid ? t.sys_image_guid : id.node_guid;
    id.vendor_id = t.vendor_id;
    id.device_id = uint16_t(t.device_id ? t.device_id : 0x6282);  // MT25208 mem-free
    id.revision = 0xa0;
    id.description = t.description.empty() ? t.id : t.description;
    return id;
}

static std::string key_of(const fabric::Topology& topo, fabric::HcaPort* hp)
{
    std::optional<unsigned> i;
    if (!hp->node_name().empty())
        i = topo.find(hp->node_name());
    if (!i && hp->node_guid()) {
        char g[24];
        snprintf(g, sizeof g, "0x%016llx", (unsigned long long)hp->node_guid());
        i = topo.find(g);
    }
    return i ? topo.nodes[*i].id : std::string();
}

void StubFarm::adopt(const std::string& node_key, std::unique_ptr<StubCa> ca)
{
    std::optional<unsigned> i = fab_.topology().find(node_key);
    std::string key = i ? fab_.topology().nodes[*i].id : node_key;
    by_key_[key] = ca.get();
    cas_.push_back(std::move(ca));
}

StubCa* StubFarm::find(const std::string& node_key)
{
    std::optional<unsigned> i = fab_.topology().find(node_key);
    auto it = by_key_.find(i ? fab_.topology().nodes[*i].id : node_key);
    return it == by_key_.end() ? nullptr : it->second;
}

StubCa* StubFarm::ca_for(fabric::HcaPort* hp)
{
    const fabric::Topology& topo = fab_.topology();
    std::string key = key_of(topo, hp);
    if (key.empty())
        return nullptr;
    auto it = by_key_.find(key);
    if (it != by_key_.end())
        return it->second;
    const fabric::TopoNode& t = topo.nodes[*topo.find(key)];
    StubCaConfig cfg;
    cfg.name = t.name.empty() ? t.id : t.name;
    cfg.node = stub_identity(t);
    cfg.num_ports = t.num_ports ? t.num_ports : 1;
    auto ca = std::make_unique<StubCa>(fab_.scheduler(), std::move(cfg));
    StubCa* raw = ca.get();
    by_key_[key] = raw;
    cas_.push_back(std::move(ca));
    return raw;
}

bool StubFarm::release(fabric::HcaPort* hp)
{
    if (hp->attached())
        return false;
    StubCa* ca = ca_for(hp);
    if (!ca || hp->port() < 1 || hp->port() > ca->num_ports())
        return false;
    ca->set_wire(hp->port(), &hp->wire());
    // Stubs keep no state across a receive(): an answer that comes back
    // while they transmit is taken at once, not deferred to run_due().
    hp->attach(&ca->endpoint(hp->port()), /*reentrant=*/true);
    return true;
}

unsigned StubFarm::attach_all()
{
    unsigned n = 0;
    for (fabric::HcaPort* hp : fab_.hca_ports())
        if (release(hp))
            ++n;
    return n;
}

}  // namespace ibemu::stub
