// SPDX-License-Identifier: GPL-2.0
//
// ibemu-ctl SOCKET COMMAND...
//
// Sends one command line to a running ibemu's fabric control socket
// (ibemu --control SOCKET) and prints the reply. Exit status 0 when the
// reply starts with "ok", 1 for an error reply, 2 if the emulator could not
// be reached. Commands: see emulator/fabric/README.md (e.g. "link vm0:1 down",
// "show links", "capture start /tmp/x.pcap") and the server's own
// "catas <node> [<syndrome>]" (Server::control in server.cc).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ibemu-ctl SOCKET COMMAND...\n");
        return 2;
    }
    std::string line;
    for (int i = 2; i < argc; ++i) {
        if (i > 2)
            line += ' ';
        line += argv[i];
    }
    line += '\n';

    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "ibemu-ctl: socket path too long\n");
        return 2;
    }
    strcpy(sa.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
        fprintf(stderr, "ibemu-ctl: cannot reach %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != ssize_t(line.size())) {
        fprintf(stderr, "ibemu-ctl: send: %s\n", strerror(errno));
        return 2;
    }
    std::string reply;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        reply.append(buf, size_t(n));
    close(fd);
    if (reply.empty()) {
        fprintf(stderr, "ibemu-ctl: no reply\n");
        return 2;
    }
    fputs(reply.c_str(), stdout);
    return reply.rfind("ok", 0) == 0 ? 0 : 1;
}
