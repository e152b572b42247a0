// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: topology files (fabric/topology.cc) and the fabric built
// from what parses. Input: ibnetdiscover text, '!' and a built-in spec
// ("!star:3"), or '%' and ibsim net text (parse_ibsim_net, ibsim's own
// dialect: "%Switch 8 \"Switch1\"..."). Whatever parses is instantiated as a Fabric (links with few
// slots, so a big fabric stays cheap) and looked up by every node's names.
#include <string>
#include <string_view>

#include "common/log.h"
#include "fabric/clock.h"
#include "fabric/fabric.h"
#include "fabric/topology.h"
#include "fuzz/fuzz_support.h"

using namespace ibemu;
using namespace ibemu::fabric;

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    Log::set_level(LogLevel::Error);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::string_view text(reinterpret_cast<const char*>(data), size);
    Topology t;
    std::string err;
    char mode = text.empty() ? 0 : text[0];
    bool ok = mode == '!'   ? builtin_topology(text.substr(1), &t, &err)
              : mode == '%' ? parse_ibsim_net(text.substr(1), &t, &err)
                            : parse_topology(text, &t, &err);
    if (!ok) {
        if (err.empty())
            fuzz::invariant_failed("a refused topology has no reason");
        return 0;
    }
    for (const TopoLink& l : t.links) {
        if (l.a >= t.nodes.size() || l.b >= t.nodes.size() || l.a_port == 0 || l.b_port == 0 ||
            l.a_port > t.nodes[l.a].num_ports || l.b_port > t.nodes[l.b].num_ports)
            fuzz::invariant_failed("a link names a node or port that does not exist");
    }
    for (unsigned i = 0; i < t.nodes.size(); ++i) {
        const TopoNode& n = t.nodes[i];
        if (!n.name.empty()) {
            auto f = t.find(n.name);
            if (!f || *f != i)
                fuzz::invariant_failed("a node is not found by its own name");
        }
        (void)t.find(n.id);
    }
    if (t.nodes.size() > 64)
        return 0;
    VirtualClock clock;
    FabricOptions opts;
    opts.link.slots = 4;
    opts.link.slot_payload = 256;
    Fabric fab(clock, opts);
    if (fab.build(t, &err)) {
        (void)fab.control("show links");
        (void)fab.control("show nodes");
        fab.run_due();
    }
    return 0;
}
