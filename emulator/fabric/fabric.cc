// SPDX-License-Identifier: GPL-2.0
#include "fabric/fabric.h"

#include <cstdio>

#include "common/log.h"

namespace ibemu::fabric {

Wire& HcaPort::attach(PortEndpoint* ep, bool reentrant)
{
    link_->attach(side_, ep, reentrant);
    return link_->wire(side_);
}

void HcaPort::detach() { link_->attach(side_, nullptr, false); }

Fabric::Fabric(Clock& clock, FabricOptions opts) : sched_(clock), opts_(opts) {}

Fabric::~Fabric()
{
    capture_stop();
    // Links go first: they hold pointers to switch endpoints but never call
    // them from their destructors.
    links_.clear();
}

void Fabric::set_rate_model(bool on, uint64_t burst_ns)
{
    for (auto& l : links_)
        l->set_rate_model(on, burst_ns);
}

std::string Fabric::node_label(unsigned node) const
{
    const TopoNode& n = topo_.nodes[node];
    return n.name.empty() ? n.id : n.name;
}

bool Fabric::build(const Topology& t, std::string* error)
{
    if (built_) {
        if (error)
            *error = "fabric already built";
        return false;
    }
    topo_ = t;
    nodes_.resize(topo_.nodes.size());
    for (unsigned i = 0; i < topo_.nodes.size(); ++i) {
        const TopoNode& n = topo_.nodes[i];
        NodeRef& r = nodes_[i];
        r.port_link.assign(n.num_ports + 1, nullptr);
        r.port_side.assign(n.num_ports + 1, 0);
        if (n.kind == TopoNode::Kind::Switch) {
            SwitchConfig c;
            c.name = node_label(i);
            c.description = n.description.empty() ? n.id : n.description;
            c.node_guid = n.guid;
            c.sys_image_guid = n.sys_image_guid;
            c.num_ports = n.num_ports;
            c.vendor_id = n.vendor_id;
            if (n.device_id)
                c.device_id = uint16_t(n.device_id);
            r.sw = std::make_unique<Switch>(sched_, c);
        }
    }
    for (const TopoLink& tl : topo_.links) {
        LinkConfig lc = opts_.link;
        lc.params.width = tl.width;
        lc.params.speed = tl.speed;
        std::string name = node_label(tl.a) + ":" + std::to_string(tl.a_port) + "-" + node_label(tl.b) + ":" +
                           std::to_string(tl.b_port);
        auto link = std::make_unique<Link>(sched_, name, lc);
        Link* l = link.get();
        links_.push_back(std::move(link));
        const unsigned ends[2][2] = {{tl.a, tl.a_port}, {tl.b, tl.b_port}};
        for (unsigned side = 0; side < 2; ++side) {
            unsigned node = ends[side][0], port = ends[side][1];
            NodeRef& r = nodes_[node];
            r.port_link[port] = l;
            r.port_side[port] = side;
            if (r.sw) {
                r.sw->set_wire(port, &l->wire(side));
                l->attach(side, &r.sw->endpoint(port), /*reentrant=*/true);
            } else {
                auto hp = std::make_unique<HcaPort>();
                hp->name_ = topo_.nodes[node].name;
                hp->guid_ = topo_.nodes[node].guid;
                hp->node_ = node;
                hp->port_ = port;
                hp->link_ = l;
                hp->side_ = side;
                hca_ports_.push_back(std::move(hp));
            }
        }
    }
    for (unsigned i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i].sw)
            continue;
        NodeRef* r = &nodes_[i];
        r->sw->set_port_enable_hook([r](unsigned port, bool en) {
            if (port < r->port_link.size() && r->port_link[port])
                r->port_link[port]->set_admin_up(en);
        });
    }
    built_ = true;
    return true;
}

bool Fabric::build_spec(std::string_view spec, std::string* error)
{
    Topology t;
    return builtin_topology(spec, &t, error) && build(t, error);
}

bool Fabric::build_file(const std::string& path, std::string* error)
{
    Topology t;
    return load_topology_file(path, &t, error) && build(t, error);
}

bool Fabric::build_from(std::string_view arg, std::string* error)
{
    std::string_view kind = arg.substr(0, arg.find(':'));
    if (kind == "b2b" || kind == "star" || kind == "chain" || kind == "fattree")
        return build_spec(arg, error);
    return build_file(std::string(arg), error);
}

HcaPort* Fabric::hca_port(std::string_view name, uint64_t guid, unsigned port)
{
    for (auto& hp : hca_ports_)
        if (!name.empty() && hp->name_ == name && hp->port_ == port)
            return hp.get();
    for (auto& hp : hca_ports_)
        if (guid && hp->guid_ == guid && hp->port_ == port)
            return hp.get();
    return nullptr;
}

std::vector<HcaPort*> Fabric::hca_ports()
{
    std::vector<HcaPort*> v;
    for (auto& hp : hca_ports_)
        v.push_back(hp.get());
    return v;
}

Switch* Fabric::find_switch(std::string_view key)
{
    auto i = topo_.find(key);
    return i && *i < nodes_.size() ? nodes_[*i].sw.get() : nullptr;
}

Link* Fabric::link_at(std::string_view node, unsigned port, unsigned* side)
{
    auto i = topo_.find(node);
    if (!i || *i >= nodes_.size())
        return nullptr;
    const NodeRef& r = nodes_[*i];
    if (port >= r.port_link.size() || !r.port_link[port])
        return nullptr;
    if (side)
        *side = r.port_side[port];
    return r.port_link[port];
}

bool Fabric::capture_start(const std::string& path, const std::vector<Link*>& links, std::string* error,
                           PcapFormat fmt)
{
    capture_stop();
    auto c = std::make_unique<Capture>();
    if (!c->writer().open(path, error, fmt))
        return false;
    capture_ = std::move(c);
    if (links.empty()) {
        for (auto& l : links_)
            l->set_tap(capture_.get());
    } else {
        for (Link* l : links)
            l->set_tap(capture_.get());
    }
    IBEMU_INFO("fabric", "capture to %s started", path.c_str());
    return true;
}

void Fabric::capture_stop()
{
    if (!capture_)
        return;
    for (auto& l : links_)
        if (l->tap() == capture_.get())
            l->set_tap(nullptr);
    capture_->writer().close();
    capture_.reset();
}

}  // namespace ibemu::fabric
