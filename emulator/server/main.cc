// SPDX-License-Identifier: GPL-2.0
//
// ibemu --socket PATH [--node NAME=GUID ...] [--fabric TOPOLOGY] [--control PATH]
//       [--stub-cas] [--umad NODE=PATH] [--hca-ports 1|2]
//       [--log FILE] [--log-level info|debug]
//
// Serves ibemu-hca shims on a unix socket, their HCA ports cabled into the
// fabric the topology describes. Prints "ibemu: ready PATH" on
// stdout once it listens; exits cleanly on SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/log.h"
#include "server/server.h"

namespace {

ibemu::Server* g_server = nullptr;

void on_signal(int)
{
    if (g_server)
        g_server->stop();
}

int usage(const char* why)
{
    if (why)
        fprintf(stderr, "ibemu: %s\n", why);
    fprintf(stderr,
            "usage: ibemu --socket PATH [--node NAME=GUID ...] [--fabric TOPOLOGY] [--control PATH]\n"
            "             [--stub-cas] [--umad NODE=PATH] [--hca-ports 1|2] [--log FILE] [--log-level info|debug]\n"
            "  --socket PATH      unix socket the QEMU ibemu-hca devices connect to\n"
            "  --node NAME=GUID   node GUID (16 hex digits) for the device with node=NAME;\n"
            "                     others get one derived from their name (Mellanox OUI)\n"
            "  --fabric TOPOLOGY  cable HCA ports into this fabric: an ibnetdiscover-format\n"
            "                     file, or a built-in spec such as b2b or star:3; HCAs are\n"
            "                     matched by node name (first word of their description)\n"
            "  --control PATH     unix socket for fabric control commands (see ibemu-ctl)\n"
            "  --stub-cas         serve the topology's HCAs that no guest holds with stub CAs\n"
            "  --umad NODE=PATH   host MAD endpoint on CA NODE at socket PATH, for host tools\n"
            "                     with libibemu_umad.so (Documentation/scale.md); implies --stub-cas\n"
            "  --hca-ports N      ports of each guest's HCA, 1 or 2 (default 1; the MT25208 has 2)\n"
            "  --log FILE         append log lines to FILE instead of stderr\n"
            "  --log-level LEVEL  info (default) or debug\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv)
{
    ibemu::ServerOptions opts;
    const char* log_path = nullptr;
    ibemu::LogLevel level = ibemu::LogLevel::Info;

    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* opt) -> const char* {
            if (i + 1 >= argc) {
                fprintf(stderr, "ibemu: %s needs a value\n", opt);
                return nullptr;
            }
            return argv[++i];
        };
        if (a == "--socket") {
            const char* v = value("--socket");
            if (!v)
                return usage(nullptr);
            opts.socket_path = v;
        } else if (a == "--node") {
            const char* v = value("--node");
            if (!v)
                return usage(nullptr);
            std::string name;
            uint64_t guid;
            if (!ibemu::parse_node_guid(v, &name, &guid))
                return usage((std::string("bad --node ") + v + " (want NAME=0123456789abcdef)").c_str());
            opts.node_guids[name] = guid;
        } else if (a == "--fabric") {
            const char* v = value("--fabric");
            if (!v)
                return usage(nullptr);
            opts.fabric = v;
        } else if (a == "--control") {
            const char* v = value("--control");
            if (!v)
                return usage(nullptr);
            opts.control_path = v;
        } else if (a == "--stub-cas") {
            opts.stub_cas = true;
        } else if (a == "--umad") {
            const char* v = value("--umad");
            const char* eq = v ? strchr(v, '=') : nullptr;
            if (!eq || eq == v || !eq[1])
                return usage("--umad takes NODE=PATH");
            opts.umad_node.assign(v, size_t(eq - v));
            opts.umad_path = eq + 1;
            opts.stub_cas = true;
        } else if (a == "--hca-ports") {
            const char* v = value("--hca-ports");
            if (!v)
                return usage(nullptr);
            if (!strcmp(v, "1") || !strcmp(v, "2"))
                opts.hca_ports = unsigned(*v - '0');
            else
                return usage("--hca-ports is 1 or 2");
        } else if (a == "--log") {
            log_path = value("--log");
            if (!log_path)
                return usage(nullptr);
        } else if (a == "--log-level") {
            const char* v = value("--log-level");
            if (!v)
                return usage(nullptr);
            if (!strcmp(v, "info"))
                level = ibemu::LogLevel::Info;
            else if (!strcmp(v, "debug"))
                level = ibemu::LogLevel::Debug;
            else
                return usage("--log-level is info or debug");
        } else if (a == "-h" || a == "--help") {
            usage(nullptr);
            return 0;
        } else {
            return usage(("unknown argument " + a).c_str());
        }
    }
    if (opts.socket_path.empty())
        return usage("--socket is required");

    FILE* log = nullptr;
    if (log_path) {
        log = fopen(log_path, "ae");
        if (!log) {
            fprintf(stderr, "ibemu: cannot open %s: %s\n", log_path, strerror(errno));
            return 1;
        }
        ibemu::Log::set_output(log);
    }
    ibemu::Log::set_level(level);

    std::string socket_path = opts.socket_path;
    ibemu::Server server(std::move(opts));
    std::string err;
    if (!server.listen(&err)) {
        fprintf(stderr, "ibemu: %s\n", err.c_str());
        return 1;
    }

    g_server = &server;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    printf("ibemu: ready %s\n", socket_path.c_str());
    fflush(stdout);

    int rc = server.run();
    g_server = nullptr;
    if (log)
        ibemu::Log::set_output(nullptr);
    // ~Server unlinks the socket; the log file is closed by exit
    return rc;
}
