// SPDX-License-Identifier: GPL-2.0
//
// libibemu_umad.so: LD_PRELOAD it into a host process (OpenSM, ibnetdiscover,
// smpquery, perfquery, anything on libibumad) to give it one InfiniBand port:
// the emulator's host MAD endpoint (emulator/madhost) at the unix socket
// named by $IBEMU_UMAD_SOCKET. Written for this project in the spirit of
// ibsim's umad2sim.
//
// What libibumad touches, and what we do instead:
//  - sysfs: /sys/class/infiniband/<ca>/... (node_type, node_guid, ports/N/
//    lid, state, gids/0, pkeys/...) and /sys/class/infiniband_mad/
//    (abi_version, umadN/ibdev, umadN/port). Those paths are redirected into
//    a private directory tree this library writes (one per process, removed
//    at exit), so open/read/opendir/readdir/scandir/stat all work on real
//    files. The port's files are rewritten from the endpoint's answer when
//    they are opened (its LID and state change as the SM works).
//  - /dev/infiniband/umadN: open() returns a SOCK_SEQPACKET socket connected
//    to the endpoint, which speaks the ib_umad read/write format, so write,
//    poll and close need no help; ioctl() (REGISTER_AGENT[2],
//    UNREGISTER_AGENT, ENABLE_PKEY) becomes a control message. read() of a
//    message longer than the caller's buffer (an RMPP response) fails with
//    ENOSPC, the header (its length field) copied and the message kept, as
//    ib_umad does; a plain socket read would cut it.
//  - /dev/infiniband/issmN: a socket that sets the port's IsSM bit while open.
// The CA is called "ibemu0", one port, umad0/issm0.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "madhost/umad_proto.h"

using ibemu::madhost::CtlOp;
using ibemu::madhost::UmadCtl;
using ibemu::madhost::UmadPortInfo;

namespace {

constexpr const char kCa[] = "ibemu0";
constexpr std::string_view kSysIb = "/sys/class/infiniband";
constexpr std::string_view kSysMad = "/sys/class/infiniband_mad";
constexpr std::string_view kDevUmad = "/dev/infiniband/umad0";
constexpr std::string_view kDevIssm = "/dev/infiniband/issm0";
constexpr int kMaxFd = 65536;

// What an fd of ours is.
enum : uint8_t { kNone = 0, kUmad = 1, kIssm = 2 };
std::atomic<uint8_t> g_fd_kind[kMaxFd];
std::atomic<uint32_t> g_fd_agents[kMaxFd];  // ib_umad: agent ids 0..31 per file

std::once_flag g_once;
bool g_ready = false;
std::string g_sock;
std::string g_root;  // the private tree: g_root + "/sys/class/infiniband/..."
std::mutex g_refresh_mu;
uint64_t g_refreshed_ns = 0;

// Our own file operations go straight to the kernel: calling open() here
// would come back into this library.
int sys_open(const char* p, int flags, mode_t mode = 0) { return int(syscall(SYS_openat, AT_FDCWD, p, flags, mode)); }
int sys_close(int fd) { return int(syscall(SYS_close, fd)); }

bool write_file(const std::string& path, const std::string& text)
{
    std::string tmp = path + ".new";
    int fd = sys_open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    bool ok = syscall(SYS_write, fd, text.data(), text.size()) == ssize_t(text.size());
    sys_close(fd);
    // Rename: a reader never sees a half-written file.
    return ok && syscall(SYS_renameat, AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str()) == 0;
}

bool make_dirs(const std::string& path)
{
    for (size_t i = 1; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') {
            std::string d = path.substr(0, i);
            if (syscall(SYS_mkdirat, AT_FDCWD, d.c_str(), 0755) < 0 && errno != EEXIST)
                return false;
        }
    }
    return true;
}

int connect_endpoint(int flags)
{
    sockaddr_un a{};
    if (g_sock.size() >= sizeof a.sun_path)
        return -1;
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, g_sock.c_str(), g_sock.size() + 1);
    int fd = int(syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | flags, 0));
    if (fd < 0)
        return -1;
    if (syscall(SYS_connect, fd, &a, sizeof a) < 0) {
        sys_close(fd);
        return -1;
    }
    return fd;
}

bool query(UmadPortInfo* out)
{
    int fd = connect_endpoint(SOCK_CLOEXEC);
    if (fd < 0)
        return false;
    UmadCtl c;
    c.op = CtlOp::QueryPort;
    bool ok = syscall(SYS_sendto, fd, &c, sizeof c, MSG_NOSIGNAL, nullptr, 0) == ssize_t(sizeof c);
    if (ok) {
        pollfd p{fd, POLLIN, 0};
        ok = syscall(SYS_poll, &p, 1, 5000) == 1 &&
             syscall(SYS_recvfrom, fd, out, sizeof *out, 0, nullptr, nullptr) == ssize_t(sizeof *out) &&
             out->magic == ibemu::madhost::kCtlMagic;
    }
    sys_close(fd);
    return ok;
}

std::string guid_text(uint64_t g)
{
    char b[32];
    snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff, unsigned(g >> 32) & 0xffff,
             unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
    return b;
}

const char* state_name(unsigned s)
{
    static const char* n[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    return s < 6 ? n[s] : "UNKNOWN";
}

const char* phys_name(unsigned s)
{
    static const char* n[] = {"<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
                              "LinkErrorRecovery", "Phy Test"};
    return s < 8 ? n[s] : "<unknown>";
}

// Rewrites the port's files from the endpoint (at most every 2 ms).
void refresh_port(bool force)
{
    std::lock_guard<std::mutex> l(g_refresh_mu);
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
    if (!force && now - g_refreshed_ns < 2000000)
        return;
    UmadPortInfo i;
    if (!query(&i))
        return;
    g_refreshed_ns = now;
    std::string ca = g_root + std::string(kSysIb) + "/" + kCa;
    std::string p = ca + "/ports/1";
    char b[128];
    auto put = [&](const std::string& f, const std::string& v) { write_file(f, v + "\n"); };
    snprintf(b, sizeof b, "0x%x", i.lid);
    put(p + "/lid", b);
    put(p + "/lid_mask_count", std::to_string(i.lmc));
    snprintf(b, sizeof b, "0x%x", i.sm_lid);
    put(p + "/sm_lid", b);
    put(p + "/sm_sl", std::to_string(i.sm_sl));
    snprintf(b, sizeof b, "%u: %s", i.state, state_name(i.state));
    put(p + "/state", b);
    snprintf(b, sizeof b, "%u: %s", i.phys_state, phys_name(i.phys_state));
    put(p + "/phys_state", b);
    // Width x lane speed (IBA encodings): 1x/4x/8x/12x, 2.5/5/10 Gb/s.
    unsigned lanes = i.width == 1 ? 1 : i.width == 2 ? 4 : i.width == 4 ? 8 : i.width == 8 ? 12 : 4;
    double lane = i.speed == 4 ? 10 : i.speed == 2 ? 5 : 2.5;
    const char* sp = i.speed == 4 ? "QDR" : i.speed == 2 ? "DDR" : "SDR";
    snprintf(b, sizeof b, "%g Gb/sec (%uX %s)", lanes * lane, lanes, sp);
    put(p + "/rate", b);
    snprintf(b, sizeof b, "0x%08x", i.cap_mask);
    put(p + "/cap_mask", b);
    put(p + "/link_layer", "InfiniBand");
    put(p + "/gids/0", guid_text(i.gid_prefix) + ":" + guid_text(i.port_guid));
    snprintf(b, sizeof b, "0x%04x", i.pkey0);
    put(p + "/pkeys/0", b);
    put(ca + "/node_desc", std::string(i.node_desc, strnlen(i.node_desc, sizeof i.node_desc)));
}

void cleanup()
{
    if (g_root.empty())
        return;
    // Remove the tree we made (only files and directories we wrote).
    for (const char* d : {"/sys/class/infiniband/ibemu0/ports/1/gids", "/sys/class/infiniband/ibemu0/ports/1/pkeys",
                          "/sys/class/infiniband/ibemu0/ports/1", "/sys/class/infiniband/ibemu0/ports",
                          "/sys/class/infiniband/ibemu0", "/sys/class/infiniband_mad/umad0",
                          "/sys/class/infiniband_mad/issm0", "/sys/class/infiniband_mad", "/sys/class/infiniband",
                          "/sys/class", "/sys", ""}) {
        std::string dir = g_root + d;
        int fd = sys_open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[4096];
        for (;;) {
            long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0)
                break;
            for (long off = 0; off < n;) {
                auto* e = reinterpret_cast<struct dirent64*>(buf + off);
                if (e->d_type == DT_REG)
                    syscall(SYS_unlinkat, fd, e->d_name, 0);
                off += e->d_reclen;
            }
        }
        sys_close(fd);
        syscall(SYS_unlinkat, AT_FDCWD, dir.c_str(), AT_REMOVEDIR);
    }
}

void init()
{
    const char* s = getenv("IBEMU_UMAD_SOCKET");
    if (!s || !*s)
        return;
    g_sock = s;
    UmadPortInfo i;
    if (!query(&i)) {
        fprintf(stderr, "libibemu_umad: no endpoint at %s\n", s);
        return;
    }
    char tmpl[] = "/tmp/ibemu-umad-XXXXXX";
    if (!mkdtemp(tmpl))
        return;
    g_root = tmpl;
    std::string ca = g_root + std::string(kSysIb) + "/" + kCa;
    std::string mad = g_root + std::string(kSysMad);
    if (!make_dirs(ca + "/ports/1/gids") || !make_dirs(ca + "/ports/1/pkeys") || !make_dirs(mad + "/umad0") ||
        !make_dirs(mad + "/issm0"))
        return;
    write_file(ca + "/node_type", "1: CA\n");
    write_file(ca + "/node_guid", guid_text(i.node_guid) + "\n");
    write_file(ca + "/sys_image_guid", guid_text(i.sys_image_guid) + "\n");
    write_file(ca + "/fw_ver", "5.3.0\n");
    write_file(ca + "/hw_rev", "a0\n");
    write_file(ca + "/hca_type", "MT25208\n");
    write_file(ca + "/board_id", "IBEMU0000000001\n");
    write_file(mad + "/abi_version", std::to_string(IB_USER_MAD_ABI_VERSION) + "\n");
    for (const char* d : {"/umad0", "/issm0"}) {
        write_file(mad + d + "/ibdev", std::string(kCa) + "\n");
        write_file(mad + d + "/port", "1\n");
    }
    refresh_port(true);
    atexit(cleanup);
    g_ready = true;
}

bool ready()
{
    std::call_once(g_once, init);
    return g_ready;
}

bool under(std::string_view path, std::string_view dir)
{
    return path.substr(0, dir.size()) == dir && (path.size() == dir.size() || path[dir.size()] == '/');
}

// The private path for a sysfs path of ours, or empty.
std::string redirect(const char* path)
{
    if (!path || strncmp(path, "/sys/class/infiniband", 21) != 0)
        return {};
    std::string_view p(path);
    if (!under(p, kSysIb) && !under(p, kSysMad))
        return {};
    if (!ready())
        return {};
    if (p.find("/ports/") != std::string_view::npos || p.ends_with("node_desc"))
        refresh_port(false);
    return g_root + std::string(p);
}

template <typename F>
F real(const char* name)
{
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// open() of our devices; -2 when the path is not ours.
int open_dev(const char* path, int flags)
{
    if (!path || strncmp(path, "/dev/infiniband/", 16) != 0)
        return -2;
    std::string_view p(path);
    bool umad = p == kDevUmad, issm = p == kDevIssm;
    if (!umad && !issm)
        return -2;
    if (!ready()) {
        errno = ENODEV;
        return -1;
    }
    int fd = connect_endpoint(((flags & O_NONBLOCK) ? SOCK_NONBLOCK : 0) | ((flags & O_CLOEXEC) ? SOCK_CLOEXEC : 0));
    if (fd < 0 || fd >= kMaxFd) {
        if (fd >= 0)
            sys_close(fd);
        errno = EIO;
        return -1;
    }
    g_fd_agents[fd] = 0;
    g_fd_kind[fd] = umad ? kUmad : kIssm;
    if (issm) {
        UmadCtl c;
        c.op = CtlOp::SetIsSm;
        syscall(SYS_sendto, fd, &c, sizeof c, MSG_NOSIGNAL, nullptr, 0);
    }
    return fd;
}

int send_ctl(int fd, const UmadCtl& c)
{
    // The socket may be non-blocking; a control message is tiny and the
    // endpoint reads promptly, so wait for room rather than fail.
    for (int i = 0; i < 1000; ++i) {
        if (syscall(SYS_sendto, fd, &c, sizeof c, MSG_NOSIGNAL, nullptr, 0) == ssize_t(sizeof c))
            return 0;
        if (errno != EAGAIN)
            return -1;
        pollfd p{fd, POLLOUT, 0};
        syscall(SYS_poll, &p, 1, 10);
    }
    return -1;
}

int umad_ioctl(int fd, unsigned long req, void* arg)
{
    if (req == IB_USER_MAD_ENABLE_PKEY)
        return 0;
    if (req == IB_USER_MAD_UNREGISTER_AGENT) {
        uint32_t id;
        memcpy(&id, arg, sizeof id);
        if (id >= 32 || !(g_fd_agents[fd] & (1u << id))) {
            errno = EINVAL;
            return -1;
        }
        g_fd_agents[fd] &= ~(1u << id);
        UmadCtl c;
        c.op = CtlOp::Unregister;
        c.agent = id;
        return send_ctl(fd, c);
    }
    if (req != IB_USER_MAD_REGISTER_AGENT && req != IB_USER_MAD_REGISTER_AGENT2) {
        errno = ENOTTY;
        return -1;
    }
    UmadCtl c;
    c.op = CtlOp::Register;
    if (req == IB_USER_MAD_REGISTER_AGENT2) {
        ib_user_mad_reg_req2 r;
        memcpy(&r, arg, sizeof r);
        if (r.flags & ~0u) {
            // No user RMPP here: report what is supported, as ib_umad does.
            r.flags = 0;
            memcpy(arg, &r, sizeof r);
            errno = EINVAL;
            return -1;
        }
        c.qpn = uint8_t(r.qpn);
        c.mgmt_class = r.mgmt_class;
        c.class_version = r.mgmt_class_version;
        c.rmpp_version = r.rmpp_version;
        memcpy(c.method_mask, r.method_mask, sizeof c.method_mask);
    } else {
        ib_user_mad_reg_req r;
        memcpy(&r, arg, sizeof r);
        c.qpn = r.qpn;
        c.mgmt_class = r.mgmt_class;
        c.class_version = r.mgmt_class_version;
        c.rmpp_version = r.rmpp_version;
        memcpy(c.method_mask, r.method_mask, sizeof c.method_mask);
    }
    uint32_t used = g_fd_agents[fd];
    uint32_t id = 0;
    while (id < 32 && (used & (1u << id)))
        ++id;
    if (id == 32) {
        errno = ENOMEM;
        return -1;
    }
    c.agent = id;
    if (send_ctl(fd, c) < 0)
        return -1;
    g_fd_agents[fd] |= 1u << id;
    if (req == IB_USER_MAD_REGISTER_AGENT2) {
        ib_user_mad_reg_req2 r;
        memcpy(&r, arg, sizeof r);
        r.id = id;
        memcpy(arg, &r, sizeof r);
    } else {
        ib_user_mad_reg_req r;
        memcpy(&r, arg, sizeof r);
        r.id = id;
        memcpy(arg, &r, sizeof r);
    }
    return 0;
}

// read() of a umad fd: the whole message, or ENOSPC with its header.
ssize_t umad_read(int fd, void* buf, size_t count)
{
    ssize_t want = syscall(SYS_recvfrom, fd, nullptr, 0, MSG_PEEK | MSG_TRUNC, nullptr, nullptr);
    if (want < 0)
        return -1;
    if (size_t(want) > count && count >= sizeof(ib_user_mad_hdr)) {
        if (syscall(SYS_recvfrom, fd, buf, sizeof(ib_user_mad_hdr), MSG_PEEK, nullptr, nullptr) < 0)
            return -1;
        errno = ENOSPC;
        return -1;
    }
    return syscall(SYS_recvfrom, fd, buf, count, 0, nullptr, nullptr);
}

mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode_t(va_arg(ap, int)) : 0;
}

}  // namespace

// The C library declares these pointers nonnull; a caller may still pass
// one that is not, and we would rather pass it on than crash here.
#pragma GCC diagnostic ignored "-Wnonnull-compare"

extern "C" {

int open(const char* path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int r = open_dev(path, flags);
    if (r != -2)
        return r;
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, int, ...)>("open");
    return f(alt.empty() ? path : alt.c_str(), flags, m);
}

int open64(const char* path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    // On 64-bit glibc open64 is open (as openat64 is openat below).
    return open(path, flags, m);
}

int __open_2(const char* path, int flags)
{
    return open(path, flags);
}

int __open64_2(const char* path, int flags)
{
    return open64(path, flags);
}

int openat(int dirfd, const char* path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    if (path && path[0] == '/') {
        int r = open_dev(path, flags);
        if (r != -2)
            return r;
    }
    std::string alt = path && path[0] == '/' ? redirect(path) : std::string();
    static auto f = real<int (*)(int, const char*, int, ...)>("openat");
    return f(dirfd, alt.empty() ? path : alt.c_str(), flags, m);
}

int openat64(int dirfd, const char* path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return openat(dirfd, path, flags, m);
}

FILE* fopen(const char* path, const char* mode)
{
    std::string alt = redirect(path);
    static auto f = real<FILE* (*)(const char*, const char*)>("fopen");
    return f(alt.empty() ? path : alt.c_str(), mode);
}

FILE* fopen64(const char* path, const char* mode)
{
    std::string alt = redirect(path);
    static auto f = real<FILE* (*)(const char*, const char*)>("fopen64");
    return f(alt.empty() ? path : alt.c_str(), mode);
}

DIR* opendir(const char* path)
{
    std::string alt = redirect(path);
    static auto f = real<DIR* (*)(const char*)>("opendir");
    return f(alt.empty() ? path : alt.c_str());
}

int scandir(const char* path, struct dirent*** list, int (*sel)(const struct dirent*),
            int (*cmp)(const struct dirent**, const struct dirent**))
{
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, struct dirent***, int (*)(const struct dirent*),
                                 int (*)(const struct dirent**, const struct dirent**))>("scandir");
    return f(alt.empty() ? path : alt.c_str(), list, sel, cmp);
}

int scandir64(const char* path, struct dirent64*** list, int (*sel)(const struct dirent64*),
              int (*cmp)(const struct dirent64**, const struct dirent64**))
{
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, struct dirent64***, int (*)(const struct dirent64*),
                                 int (*)(const struct dirent64**, const struct dirent64**))>("scandir64");
    return f(alt.empty() ? path : alt.c_str(), list, sel, cmp);
}

int stat(const char* path, struct stat* st)
{
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, struct stat*)>("stat");
    return f(alt.empty() ? path : alt.c_str(), st);
}

int lstat(const char* path, struct stat* st)
{
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, struct stat*)>("lstat");
    return f(alt.empty() ? path : alt.c_str(), st);
}

int access(const char* path, int mode)
{
    std::string alt = redirect(path);
    static auto f = real<int (*)(const char*, int)>("access");
    return f(alt.empty() ? path : alt.c_str(), mode);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (fd >= 0 && fd < kMaxFd && g_fd_kind[fd] != kNone) {
        if (g_fd_kind[fd] == kIssm) {
            errno = ENOTTY;
            return -1;
        }
        return umad_ioctl(fd, req, arg);
    }
    static auto f = real<int (*)(int, unsigned long, ...)>("ioctl");
    return f(fd, req, arg);
}

ssize_t read(int fd, void* buf, size_t count)
{
    if (fd >= 0 && fd < kMaxFd && g_fd_kind[fd] == kUmad)
        return umad_read(fd, buf, count);
    static auto f = real<ssize_t (*)(int, void*, size_t)>("read");
    return f(fd, buf, count);
}

// What read() becomes under _FORTIFY_SOURCE.
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen)
{
    if (fd >= 0 && fd < kMaxFd && g_fd_kind[fd] == kUmad)
        return umad_read(fd, buf, std::min(count, buflen));
    static auto f = real<ssize_t (*)(int, void*, size_t, size_t)>("__read_chk");
    return f(fd, buf, count, buflen);
}

int close(int fd)
{
    if (fd >= 0 && fd < kMaxFd) {
        g_fd_kind[fd] = kNone;
        g_fd_agents[fd] = 0;
    }
    static auto f = real<int (*)(int)>("close");
    return f(fd);
}

}  // extern "C"
