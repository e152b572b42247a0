// SPDX-License-Identifier: GPL-2.0
//
// ibemu-fabric: an emulated fabric with no guests, for host tools.
//
//   ibemu-fabric --topology fattree:100 --umad /tmp/fab.sock [--sm-node ca0]
//   LD_PRELOAD=build/emulator/umad_preload/libibemu_umad.so
//     IBEMU_UMAD_SOCKET=/tmp/fab.sock opensm -o      (one command line)
//
// Every CA of the topology is a stub CA (emulator/stub) except the one
// named by --sm-node (the first CA by default), whose port is the host MAD
// endpoint the interposed processes use (madhost/mad_host.h).
// --write-topology FILE writes the topology in the ibnetdiscover format
// (for ibsim, or to see what a shorthand expands to) and exits.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/log.h"
#include "fabric/fabric.h"
#include "madhost/mad_host.h"
#include "stub/stub_farm.h"

using namespace ibemu;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int usage(const char* why)
{
    if (why)
        fprintf(stderr, "ibemu-fabric: %s\n", why);
    fprintf(stderr,
            "usage: ibemu-fabric --topology SPEC|FILE [--umad PATH] [--sm-node NAME]\n"
            "                    [--write-topology FILE] [--link-slots N] [--log-level error|info|debug]\n"
            "  --topology       a shorthand (fattree:N[,R], star:N, chain:N, b2b) or a file in the\n"
            "                   ibnetdiscover or ibsim net format\n"
            "  --umad PATH      unix socket of the host MAD endpoint (for libibemu_umad.so)\n"
            "  --sm-node NAME   the CA whose port 1 is the endpoint (default: the first CA)\n"
            "  --write-topology write the topology as ibnetdiscover text to FILE and exit\n"
            "  --link-slots N   deferred packets per link direction (default 16)\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string topo, sock, sm_node, write_to;
    unsigned slots = 16;
    LogLevel level = LogLevel::Error;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "-h" || a == "--help")
            return usage(nullptr);
        if (!(v = value()))
            return usage(("missing value for " + a).c_str());
        if (a == "--topology")
            topo = v;
        else if (a == "--umad")
            sock = v;
        else if (a == "--sm-node")
            sm_node = v;
        else if (a == "--write-topology")
            write_to = v;
        else if (a == "--link-slots")
            slots = unsigned(std::max(1, atoi(v)));
        else if (a == "--log-level")
            level = std::string(v) == "debug" ? LogLevel::Debug : std::string(v) == "info" ? LogLevel::Info : LogLevel::Error;
        else
            return usage(("unknown option " + a).c_str());
    }
    if (topo.empty())
        return usage("--topology is required");
    Log::set_level(level);

    fabric::MonotonicClock clock;
    fabric::FabricOptions fo;
    fo.link.slots = slots;  // MADs only: a few slots per direction suffice
    fabric::Fabric fab(clock, fo);
    std::string err;
    if (!fab.build_from(topo, &err)) {
        fprintf(stderr, "ibemu-fabric: %s\n", err.c_str());
        return 1;
    }
    if (!write_to.empty()) {
        std::ofstream f(write_to);
        f << fabric::format_ibnetdiscover(fab.topology());
        return f ? 0 : 1;
    }
    if (sock.empty())
        return usage("--umad is required");

    const fabric::Topology& t = fab.topology();
    std::optional<unsigned> smi;
    if (!sm_node.empty()) {
        smi = t.find(sm_node);
    } else {
        for (unsigned i = 0; i < t.nodes.size() && !smi; ++i)
            if (t.nodes[i].kind == fabric::TopoNode::Kind::Ca)
                smi = i;
    }
    if (!smi || t.nodes[*smi].kind != fabric::TopoNode::Kind::Ca) {
        fprintf(stderr, "ibemu-fabric: no CA '%s' for the endpoint\n", sm_node.c_str());
        return 1;
    }
    const fabric::TopoNode& sn = t.nodes[*smi];
    stub::StubCaConfig cfg;
    cfg.name = sn.name.empty() ? sn.id : sn.name;
    cfg.node = stub::stub_identity(sn);
    cfg.num_ports = sn.num_ports;
    auto host = std::make_unique<madhost::MadHost>(fab.scheduler(), cfg);
    madhost::MadHost* mh = host.get();
    if (!mh->listen(sock, &err)) {
        fprintf(stderr, "ibemu-fabric: %s\n", err.c_str());
        return 1;
    }
    stub::StubFarm farm(fab);
    farm.adopt(sn.id, std::move(host));
    unsigned attached = farm.attach_all();
    if (mh->port(1).phys != ib::PhysState::LinkUp) {
        fprintf(stderr, "ibemu-fabric: port 1 of %s is not cabled\n", cfg.name.c_str());
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    printf("ibemu-fabric: ready %s: %zu nodes, %zu links, %u CA ports served, endpoint %s\n", sock.c_str(),
           t.nodes.size(), t.links.size(), attached, cfg.name.c_str());
    fflush(stdout);

    // Every timer here (the endpoint's request timeouts, a link direction
    // with packets queued) sits in the scheduler's deadline heap: a round
    // costs nothing per idle link, however many thousands there are.
    fabric::Scheduler& sched = fab.scheduler();
    fab.run_due();
    std::vector<pollfd> fds;
    while (!g_stop) {
        fds.clear();
        mh->add_pollfds(&fds);
        uint64_t now = clock.now_ns();
        uint64_t d = sched.next_deadline();
        int timeout = d <= now ? 0 : int(std::min<uint64_t>((d - now + 999999) / 1000000, 1000));
        int n = poll(fds.data(), fds.size(), timeout);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0)
            mh->handle(fds);
        fab.run_due();
    }
    const auto& c = mh->host_counters();
    fprintf(stderr, "ibemu-fabric: MADs sent %llu delivered %llu timeouts %llu retries %llu unmatched %llu\n",
            (unsigned long long)c.sent, (unsigned long long)c.delivered, (unsigned long long)c.timeouts,
            (unsigned long long)c.retries, (unsigned long long)c.unmatched);
    return 0;
}
