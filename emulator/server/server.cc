// SPDX-License-Identifier: GPL-2.0
#include "server/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <exception>

#include "common/log.h"
#include "fabric/fabric.h"
#include "madhost/mad_host.h"
#include "stub/stub_farm.h"
#include "hca/mthca.h"
#include "hca/pci_function.h"
#include "server/guest_memory.h"
#include "server/proto.h"

namespace ibemu {
namespace {

constexpr const char* kWho = "server";
// A shim that stops reading its socket while we keep queueing interrupts
// and replies is dropped rather than allowed to grow our memory.
constexpr size_t kMaxTxBacklog = 16u << 20;
// Bytes read from one connection per poll() round, for fairness.
constexpr size_t kMaxRxPerRound = 256u << 10;
constexpr size_t kCtlMaxLine = 4096;
constexpr size_t kCtlMaxClients = 16;
constexpr uint64_t kCtlTimeoutNs = 5'000'000'000ull;

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void set_nonblock_cloexec(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace

uint64_t derive_node_guid(const std::string& name)
{
    // FNV-1a, 64 bit
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return (0x0002c9ull << 40) | (h & 0xffffffffffull);
}

bool parse_node_guid(const std::string& arg, std::string* name, uint64_t* guid)
{
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
        return false;
    std::string n = arg.substr(0, eq);
    std::string g = arg.substr(eq + 1);
    if (n.size() >= IBEMU_SHIM_NODE_NAME_LEN)
        return false;
    if (g.size() > 2 && g[0] == '0' && (g[1] == 'x' || g[1] == 'X'))
        g = g.substr(2);
    uint64_t v = 0;
    unsigned digits = 0;
    for (char c : g) {
        if (c == ':')
            continue;
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = (v << 4) | unsigned(d);
        ++digits;
    }
    if (digits != 16 || v == 0)
        return false;
    *name = n;
    *guid = v;
    return true;
}

// ---------------------------------------------------------------------------

// One shim. Lives from accept() to close; owns the mapping of guest RAM and
// the device model.
class Connection final : public InterruptSink {
public:
    Connection(Server& srv, int fd, unsigned id) : srv_(srv), fd_(fd), who_("conn" + std::to_string(id)) {}
    ~Connection() override
    {
        detach_fabric();
        fn_.reset();  // the model may reference mem_ and *this
        mem_.reset();
        if (memfd_ >= 0)
            close(memfd_);
        if (fd_ >= 0)
            close(fd_);
    }

    int fd() const { return fd_; }
    bool dead() const { return dead_; }
    bool wants_write() const { return tx_off_ < tx_.size(); }
    const std::string& node() const { return node_; }
    uint64_t guid() const { return guid_; }
    bool running() const { return fn_ != nullptr; }

    // Fails this guest's HCA with a catastrophic error; false if it has no
    // HCA (not connected yet, or a device without one).
    bool raise_catas(uint32_t syndrome)
    {
        MthcaPorts* ports = fn_ && !dead_ ? mthca_ports(*fn_) : nullptr;
        if (!ports)
            return false;
        ports->raise_catas(syndrome);
        return true;
    }
    // The HCA's transport counters as the control channel reports them; ""
    // without an HCA.
    std::string hca_stats()
    {
        MthcaPorts* ports = fn_ && !dead_ ? mthca_ports(*fn_) : nullptr;
        if (!ports)
            return "";
        return "retransmits " + std::to_string(ports->retransmits());
    }
    // The trap counters of each port of the guest's HCA, one line a port
    // ("<node>:<port> sent 144:N 256:N 257:N 258:N repressed N given_up N
    // held N"); "" without an HCA.
    std::string trap_report()
    {
        MthcaPorts* ports = fn_ && !dead_ ? mthca_ports(*fn_) : nullptr;
        if (!ports)
            return "";
        std::string out;
        for (unsigned p = 1; p <= ports->num_ports(); ++p) {
            TrapCounters t = ports->trap_counters(p);
            out += (out.empty() ? "" : "\n") + node_ + ":" + std::to_string(p) + " sent";
            for (unsigned k = 0; k < TrapCounters::kKinds; ++k)
                out += " " + std::to_string(TrapCounters::kNumbers[k]) + ":" + std::to_string(t.sent[k]);
            out += " repressed " + std::to_string(t.repressed) + " given_up " + std::to_string(t.given_up) +
                   " held " + std::to_string(t.held);
        }
        return out;
    }
    uint64_t deadline() const { return deadline_; }

    // poll() said readable: take what is there and act on every whole message.
    void on_readable()
    {
        size_t total = 0;
        while (!dead_ && total < kMaxRxPerRound) {
            uint8_t buf[64 << 10];
            iovec iov{buf, sizeof(buf)};
            alignas(cmsghdr) char ctl[CMSG_SPACE(4 * sizeof(int))];
            msghdr mh{};
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = ctl;
            mh.msg_controllen = sizeof(ctl);
            ssize_t n = recvmsg(fd_, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            take_fds(mh);
            if (n < 0) {
                drop(std::string("recv: ") + strerror(errno));
                return;
            }
            if (n == 0) {
                IBEMU_INFO(name(), "shim disconnected");
                dead_ = true;
                return;
            }
            if (mh.msg_flags & MSG_CTRUNC) {
                drop("control data truncated (too many fds)");
                return;
            }
            total += size_t(n);
            rx_.append(buf, size_t(n));
            dispatch_all();
        }
        if (!dead_)
            poll_model(now_ns());
    }

    void on_writable() { flush(); }

    // Send what is queued, as far as the socket takes it.
    void flush()
    {
        while (!dead_ && tx_off_ < tx_.size()) {
            ssize_t n = send(fd_, tx_.data() + tx_off_, tx_.size() - tx_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                tx_off_ += size_t(n);
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            IBEMU_INFO(name(), "shim went away: %s", n < 0 ? strerror(errno) : "short send");
            dead_ = true;
        }
        if (tx_off_ == tx_.size() || tx_off_ > (1u << 20)) {
            tx_.erase(tx_.begin(), tx_.begin() + ptrdiff_t(tx_off_));
            tx_off_ = 0;
        }
    }

    void on_timer(uint64_t now)
    {
        if (!dead_ && fn_ && now >= deadline_)
            poll_model(now);
    }

    // InterruptSink
    void msix(unsigned vector) override
    {
        ibemu_msg_msix m;
        shim::set_header(m, IBEMU_MSG_MSIX, tag_++);
        m.vector = vector;
        queue(&m, sizeof(m));
    }
    void intx(bool level) override
    {
        if (level == intx_level_)
            return;
        intx_level_ = level;
        ibemu_msg_intx m;
        shim::set_header(m, IBEMU_MSG_INTX, tag_++);
        m.level = level ? 1 : 0;
        queue(&m, sizeof(m));
    }

    // Protocol error or worse: log it and close only this connection.
    void drop(const std::string& why)
    {
        if (dead_)
            return;
        IBEMU_GUEST_ERROR(name(), "closing shim connection: %s", why.c_str());
        dead_ = true;
    }

private:
    const std::string& name() const { return node_.empty() ? who_ : node_; }

    void take_fds(msghdr& mh)
    {
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < nfds; ++i) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (memfd_ < 0 && !fn_ && i == 0) {
                    memfd_ = fd;
                } else {
                    close(fd);
                    drop("unexpected file descriptor");
                }
            }
        }
    }

    void dispatch_all()
    {
        const uint8_t* msg;
        size_t len;
        std::string err;
        while (!dead_) {
            auto r = rx_.next(&msg, &len, &err);
            if (r == shim::FrameBuffer::Result::NeedMore)
                return;
            if (r == shim::FrameBuffer::Result::Error) {
                drop(err);
                return;
            }
            try {
                handle(msg, len);
            } catch (const std::exception& e) {
                drop(std::string("device model threw: ") + e.what());
            } catch (...) {
                drop("device model threw");
            }
        }
    }

    void handle(const uint8_t* msg, size_t len)
    {
        std::string why = shim::check_from_shim(msg, len);
        if (!why.empty()) {
            drop(why);
            return;
        }
        auto h = shim::decode<ibemu_shim_hdr>(msg);
        if (h.type == IBEMU_MSG_HELLO) {
            if (fn_ || hello_seen_)
                drop("second HELLO");
            else
                hello(shim::decode<ibemu_msg_hello>(msg));
            return;
        }
        if (!fn_) {
            drop("message before HELLO");
            return;
        }
        const PciIdentity& id = fn_->identity();
        switch (h.type) {
        case IBEMU_MSG_CFG_WRITE: {
            auto m = shim::decode<ibemu_msg_cfg_write>(msg);
            IBEMU_DEBUG(name(), "cfg write 0x%02x/%u = 0x%x", unsigned(m.offset), unsigned(m.size), m.value);
            fn_->config_write(m.offset, m.size, m.value);
            break;
        }
        case IBEMU_MSG_CFG_READ: {
            auto m = shim::decode<ibemu_msg_cfg_read>(msg);
            ibemu_msg_cfg_read_reply r;
            shim::set_header(r, IBEMU_MSG_CFG_READ_REPLY, h.tag);
            r.value = fn_->config_read(m.offset, m.size);
            IBEMU_DEBUG(name(), "cfg read 0x%02x/%u -> 0x%x", unsigned(m.offset), unsigned(m.size), r.value);
            queue(&r, sizeof(r));
            break;
        }
        case IBEMU_MSG_MMIO_WRITE: {
            auto m = shim::decode<ibemu_msg_mmio_write>(msg);
            if (!bar_access_ok(id, m.bar, m.offset, m.size))
                return;
            IBEMU_DEBUG(name(), "mmio write bar%u+0x%llx/%u = 0x%llx", unsigned(m.bar),
                        (unsigned long long)m.offset, unsigned(m.size), (unsigned long long)m.value);
            fn_->mmio_write(m.bar, m.offset, m.size, m.value);
            break;
        }
        case IBEMU_MSG_MMIO_READ: {
            auto m = shim::decode<ibemu_msg_mmio_read>(msg);
            if (!bar_access_ok(id, m.bar, m.offset, m.size))
                return;
            ibemu_msg_mmio_read_reply r;
            shim::set_header(r, IBEMU_MSG_MMIO_READ_REPLY, h.tag);
            r.value = fn_->mmio_read(m.bar, m.offset, m.size);
            if (m.size < 8)
                r.value &= (1ull << (8 * m.size)) - 1;
            IBEMU_DEBUG(name(), "mmio read bar%u+0x%llx/%u -> 0x%llx", unsigned(m.bar),
                        (unsigned long long)m.offset, unsigned(m.size), (unsigned long long)r.value);
            queue(&r, sizeof(r));
            break;
        }
        case IBEMU_MSG_SYNC: {
            // everything before it is done; interrupts it raised are queued
            ibemu_msg_sync r;
            shim::set_header(r, IBEMU_MSG_SYNC_REPLY, h.tag);
            queue(&r, sizeof(r));
            break;
        }
        case IBEMU_MSG_RESET:
            IBEMU_INFO(name(), "reset");
            intx_level_ = false;  // QEMU lowers the line itself on reset
            fn_->reset();
            break;
        default:
            drop("unexpected message type");  // check_from_shim lets none through
            break;
        }
    }

    bool bar_access_ok(const PciIdentity& id, unsigned bar, uint64_t off, unsigned size)
    {
        uint64_t bsize = id.bars[bar].size;
        if (!bsize || off >= bsize || size > bsize - off) {
            drop("access to BAR" + std::to_string(bar) + " offset 0x" + hex(off) + " outside the BAR");
            return false;
        }
        return true;
    }

    static std::string hex(uint64_t v)
    {
        char b[20];
        snprintf(b, sizeof(b), "%llx", (unsigned long long)v);
        return b;
    }

    void refuse(uint32_t tag, int32_t status, const std::string& text)
    {
        IBEMU_ERROR(name(), "refusing shim: %s", text.c_str());
        auto w = shim::make_refusal(tag, status, text);
        queue(&w, sizeof(w));
        flush();
        dead_ = true;
    }

    void hello(const ibemu_msg_hello& h)
    {
        hello_seen_ = true;
        if (h.magic != IBEMU_SHIM_MAGIC) {
            refuse(h.hdr.tag, IBEMU_WELCOME_BAD_MAGIC, "bad magic: not an ibemu shim");
            return;
        }
        if (h.version != IBEMU_SHIM_VERSION) {
            char t[120];
            snprintf(t, sizeof(t), "protocol version %u not supported; this emulator speaks %u", h.version,
                     IBEMU_SHIM_VERSION);
            refuse(h.hdr.tag, IBEMU_WELCOME_BAD_VERSION, t);
            return;
        }
        if (memfd_ < 0) {
            refuse(h.hdr.tag, IBEMU_WELCOME_BAD_HELLO, "HELLO came without the guest RAM memfd");
            return;
        }
        struct stat st;
        if (fstat(memfd_, &st) < 0) {
            refuse(h.hdr.tag, IBEMU_WELCOME_BAD_HELLO, "cannot stat the guest RAM fd");
            return;
        }
        std::string why = shim::check_hello_layout(h, uint64_t(st.st_size));
        if (!why.empty()) {
            refuse(h.hdr.tag, IBEMU_WELCOME_BAD_HELLO, why);
            return;
        }
        std::string node = shim::hello_node(h);
        if (srv_.node_in_use(node, this)) {
            refuse(h.hdr.tag, IBEMU_WELCOME_DUPLICATE_NODE, "node name '" + node + "' is already connected");
            return;
        }
        uint64_t guid = srv_.guid_for(node);
        if (srv_.guid_in_use(guid, this)) {
            refuse(h.hdr.tag, IBEMU_WELCOME_DUPLICATE_NODE,
                   "node GUID of '" + node + "' collides with a connected node; give it one with --node");
            return;
        }

        std::vector<RamRegion> regions;
        for (uint32_t i = 0; i < h.nregions; ++i)
            regions.push_back({h.regions[i].gpa, h.regions[i].size, h.regions[i].offset});
        std::string err;
        int fd = memfd_;
        memfd_ = -1;  // map() owns it now
        mem_ = MemfdGuestMemory::map(fd, regions, node, &err);
        if (!mem_) {
            refuse(h.hdr.tag, IBEMU_WELCOME_INTERNAL, err);
            return;
        }
        node_ = node;
        guid_ = guid;
        MthcaConfig cfg;
        cfg.name = node;
        cfg.node_guid = guid;
        cfg.num_ports = srv_.opts_.hca_ports;
        cfg.clock = srv_.clock_.get();  // the time poll_model() is given
        fn_ = srv_.opts_.device_factory ? srv_.opts_.device_factory(cfg, *mem_, *this)
                                        : make_mthca(cfg, *mem_, *this);
        if (!fn_) {
            node_.clear();
            refuse(h.hdr.tag, IBEMU_WELCOME_INTERNAL, "the device model could not be created");
            return;
        }
        auto w = shim::make_welcome(h.hdr.tag, fn_->identity());
        queue(&w, sizeof(w));
        attach_fabric();
        IBEMU_INFO(name(), "connected: guid %016llx, %u RAM region(s), %llu MiB of guest RAM",
                   (unsigned long long)guid, h.nregions, (unsigned long long)(mem_->memfd_size() >> 20));
        for (uint32_t i = 0; i < h.nregions; ++i)
            IBEMU_DEBUG(name(), "  region %u: gpa 0x%llx size 0x%llx memfd offset 0x%llx", i,
                        (unsigned long long)h.regions[i].gpa, (unsigned long long)h.regions[i].size,
                        (unsigned long long)h.regions[i].offset);
    }

    // Cable each HCA port into the fabric, where the topology has it.
    void attach_fabric()
    {
        fabric::Fabric* fab = srv_.fabric_.get();
        MthcaPorts* ports = fn_ ? mthca_ports(*fn_) : nullptr;
        if (!fab || !ports)
            return;
        for (unsigned p = 1; p <= ports->num_ports(); ++p) {
            fabric::HcaPort* hp = fab->hca_port(node_, guid_, p);
            if (!hp) {
                IBEMU_INFO(name(), "port %u is not in the topology: left unconnected", p);
                continue;
            }
            ports->attach(p, &hp->wire());
            guards_.push_back(std::make_unique<GuardedPort>(*this, ports->endpoint(p)));
            hp->attach(guards_.back().get());
            cabled_.push_back({p, hp});
        }
    }

    void detach_fabric()
    {
        MthcaPorts* ports = fn_ ? mthca_ports(*fn_) : nullptr;
        for (auto& [p, hp] : cabled_) {
            hp->detach();  // the peer sees its link go down
            if (ports)
                ports->attach(p, nullptr);
            srv_.port_released(hp);
        }
        cabled_.clear();
        guards_.clear();
    }

public:
    void poll_model(uint64_t now)
    {
        if (!fn_ || dead_)
            return;
        try {
            deadline_ = fn_->poll(now);
        } catch (const std::exception& e) {
            drop(std::string("device model threw: ") + e.what());
        } catch (...) {
            drop("device model threw");
        }
        flush();
    }

private:
    void queue(const void* p, size_t len)
    {
        if (dead_)
            return;
        if (tx_.size() - tx_off_ + len > kMaxTxBacklog) {
            drop("shim is not reading its socket");
            return;
        }
        const auto* b = static_cast<const uint8_t*>(p);
        tx_.insert(tx_.end(), b, b + len);
    }

    Server& srv_;
    int fd_;
    std::string who_;
    std::string node_;
    uint64_t guid_ = 0;
    bool dead_ = false;
    bool hello_seen_ = false;
    bool intx_level_ = false;
    int memfd_ = -1;  // received with HELLO, until map() takes it
    uint32_t tag_ = 0;
    uint64_t deadline_ = UINT64_MAX;
    shim::FrameBuffer rx_;
    std::vector<uint8_t> tx_;
    size_t tx_off_ = 0;
    std::unique_ptr<MemfdGuestMemory> mem_;
    std::unique_ptr<PciFunction> fn_;
    std::vector<std::pair<unsigned, fabric::HcaPort*>> cabled_;  // port -> attachment

    // What the fabric calls for one of this guest's ports. Packets and link
    // changes reach a model from another guest's call chain (its transmit)
    // or from the fabric's timers: a fault of *this* model (an exception)
    // stops here and closes this connection, never the sender's. A dead
    // connection's ports take nothing more until it is gone.
    class GuardedPort final : public PortEndpoint {
    public:
        GuardedPort(Connection& c, PortEndpoint& inner) : c_(c), inner_(inner) {}
        void receive(const Packet& p) override
        {
            if (c_.dead_)
                return;
            try {
                inner_.receive(p);
            } catch (const std::exception& e) {
                c_.drop(std::string("device model threw on a received packet: ") + e.what());
            } catch (...) {
                c_.drop("device model threw on a received packet");
            }
        }
        void tx_ready() override
        {
            if (!c_.dead_)
                inner_.tx_ready();  // only asks the model for a poll()
        }
        void link_changed(bool up, const LinkParams& params) override
        {
            if (c_.dead_)
                return;
            try {
                inner_.link_changed(up, params);
            } catch (const std::exception& e) {
                c_.drop(std::string("device model threw on a link change: ") + e.what());
            } catch (...) {
                c_.drop("device model threw on a link change");
            }
        }

    private:
        Connection& c_;
        PortEndpoint& inner_;
    };
    std::vector<std::unique_ptr<GuardedPort>> guards_;
};

// ---------------------------------------------------------------------------

struct Server::CtlClient {
    int fd = -1;
    uint64_t deadline = 0;
    std::string in, out;
    size_t out_off = 0;
    bool replying = false;
};

Server::Server(ServerOptions opts)
    : opts_(std::move(opts)), clock_(std::make_unique<fabric::MonotonicClock>())
{
}

Server::~Server()
{
    conns_.clear();
    if (listen_fd_ >= 0)
        close(listen_fd_);
    if (listening_)
        unlink(opts_.socket_path.c_str());
    if (wake_rd_ >= 0)
        close(wake_rd_);
    if (wake_wr_ >= 0)
        close(wake_wr_);
    for (auto& c : ctl_clients_)
        close(c->fd);
    if (ctl_fd_ >= 0)
        close(ctl_fd_);
    if (ctl_listening_)
        unlink(opts_.control_path.c_str());
}

uint64_t Server::guid_for(const std::string& node) const
{
    auto it = opts_.node_guids.find(node);
    return it != opts_.node_guids.end() ? it->second : derive_node_guid(node);
}

bool Server::node_in_use(const std::string& node, const Connection* except) const
{
    return std::any_of(conns_.begin(), conns_.end(), [&](const auto& c) {
        return c.get() != except && !c->dead() && c->running() && c->node() == node;
    });
}

bool Server::guid_in_use(uint64_t guid, const Connection* except) const
{
    return std::any_of(conns_.begin(), conns_.end(), [&](const auto& c) {
        return c.get() != except && !c->dead() && c->running() && c->guid() == guid;
    });
}

namespace {

// A non-blocking listening unix socket at `path`. A stale socket file (no
// server answers on it) is replaced; a live one is not. *bound tells the
// caller that it now owns the path and must unlink it.
int open_listener(const std::string& path, bool* bound, std::string* error)
{
    *bound = false;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(sa.sun_path)) {
        *error = "socket path is empty or longer than " + std::to_string(sizeof(sa.sun_path) - 1) + " bytes";
        return -1;
    }
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *error = std::string("socket: ") + strerror(errno);
        return -1;
    }
    auto fail = [&](const std::string& what) {
        *error = what;
        close(fd);
        return -1;
    };
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return fail(path + " exists and is not a socket");
        // a live server answers; only a dead one's socket is stale
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
        if (probe >= 0)
            close(probe);
        if (live)
            return fail("another server is listening on " + path);
        unlink(path.c_str());
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0)
        return fail("bind " + path + ": " + strerror(errno));
    *bound = true;
    if (::listen(fd, 64) < 0)
        return fail(std::string("listen: ") + strerror(errno));
    return fd;
}

}  // namespace

bool Server::listen(std::string* error)
{
    std::string err;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        if (error)
            *error = std::string("pipe: ") + strerror(errno);
        return false;
    }
    wake_rd_ = p[0];
    wake_wr_ = p[1];
    if (!setup_fabric(&err)) {
        if (error)
            *error = err;
        return false;
    }
    listen_fd_ = open_listener(opts_.socket_path, &listening_, &err);
    if (listen_fd_ < 0) {
        if (error)
            *error = err;
        return false;
    }
    IBEMU_INFO(kWho, "listening on %s", opts_.socket_path.c_str());
    if (!opts_.control_path.empty()) {
        ctl_fd_ = open_listener(opts_.control_path, &ctl_listening_, &err);
        if (ctl_fd_ < 0) {
            if (error)
                *error = "control socket: " + err;
            return false;
        }
        IBEMU_INFO(kWho, "fabric control on %s", opts_.control_path.c_str());
    }
    return true;
}

bool Server::setup_fabric(std::string* error)
{
    if (opts_.fabric.empty())
        return true;
    fabric_ = std::make_unique<fabric::Fabric>(*clock_);
    if (!fabric_->build_from(opts_.fabric, error)) {
        *error = "fabric " + opts_.fabric + ": " + *error;
        fabric_.reset();
        return false;
    }
    IBEMU_INFO(kWho, "fabric: %s", opts_.fabric.c_str());
    if (!opts_.stub_cas && opts_.umad_path.empty())
        return true;
    farm_ = std::make_unique<stub::StubFarm>(*fabric_);
    if (!opts_.umad_path.empty()) {
        const fabric::Topology& t = fabric_->topology();
        std::optional<unsigned> i = t.find(opts_.umad_node);
        if (!i || t.nodes[*i].kind != fabric::TopoNode::Kind::Ca) {
            *error = "umad node '" + opts_.umad_node + "' is not a CA of the topology";
            return false;
        }
        stub::StubCaConfig cfg;
        cfg.name = opts_.umad_node;
        cfg.node = stub::stub_identity(t.nodes[*i]);
        cfg.num_ports = t.nodes[*i].num_ports;
        auto mh = std::make_unique<madhost::MadHost>(fabric_->scheduler(), cfg);
        if (!mh->listen(opts_.umad_path, error)) {
            *error = "umad endpoint: " + *error;
            return false;
        }
        madhost_ = mh.get();
        farm_->adopt(t.nodes[*i].id, std::move(mh));
        IBEMU_INFO(kWho, "host MAD endpoint at %s on %s", opts_.umad_path.c_str(), opts_.umad_node.c_str());
    }
    unsigned n = farm_->attach_all();
    IBEMU_INFO(kWho, "%u HCA ports served by stub CAs until a guest claims them", n);
    return true;
}

void Server::port_released(fabric::HcaPort* hp)
{
    if (farm_)
        farm_->release(hp);
}

// The control protocol: the fabric's commands (emulator/fabric/control.cc)
// and those of a guest's HCA:
//   catas <node> [<syndrome>]   fail the HCA of guest <node> with a
//                               catastrophic error (syndrome: a 32-bit
//                               number, decimal or 0x-hex; default 1)
//   hca <node>                  that HCA's transport counters
//                               ("ok retransmits N")
//   show traps [<node>]         the traps each HCA port's firmware sent
//                               (by trap number, resends included), saw
//                               repressed, gave up on, or held for want of
//                               an SM: "ok N ports", then a line a port
//                               (every connected guest's, or <node>'s)
std::string Server::control(std::string_view line)
{
    std::vector<std::string_view> w;
    std::string err;
    if (!fabric::split_control_line(line, &w, &err))
        return "error: " + err;
    if (!w.empty() && w[0] == "catas") {
        uint64_t syndrome = 1;
        if (w.size() < 2 || w.size() > 3)
            return "error: usage: catas <node> [<syndrome>]";
        if (w.size() == 3) {
            std::string_view a = w[2];
            bool hex = a.size() > 2 && a[0] == '0' && (a[1] == 'x' || a[1] == 'X');
            std::string_view digits = a.substr(hex ? 2 : 0);
            auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), syndrome, hex ? 16 : 10);
            if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || syndrome == 0 ||
                syndrome > 0xffffffffu)
                return "error: catas: the syndrome is a non-zero 32-bit number";
        }
        std::string node(w[1].substr(0, 64));
        for (auto& c : conns_)
            if (c->running() && c->node() == w[1]) {
                if (!c->raise_catas(uint32_t(syndrome)))
                    return "error: " + node + " has no HCA";
                char buf[32];
                std::snprintf(buf, sizeof buf, "0x%08x", unsigned(syndrome));
                return "ok catastrophic error " + std::string(buf) + " raised on " + node;
            }
        return "error: no guest '" + node + "' is connected";
    }
    if (!w.empty() && w[0] == "hca") {
        if (w.size() != 2)
            return "error: usage: hca <node>";
        std::string node(w[1].substr(0, 64));
        for (auto& c : conns_)
            if (c->running() && c->node() == w[1]) {
                std::string s = c->hca_stats();
                return s.empty() ? "error: " + node + " has no HCA" : "ok " + s;
            }
        return "error: no guest '" + node + "' is connected";
    }
    if (w.size() >= 2 && w[0] == "show" && w[1] == "traps") {
        if (w.size() > 3)
            return "error: usage: show traps [<node>]";
        std::string lines;
        unsigned n = 0;
        bool found = false;
        for (auto& c : conns_) {
            if (!c->running() || (w.size() == 3 && c->node() != w[2]))
                continue;
            found = true;
            std::string r = c->trap_report();
            if (r.empty())
                continue;
            lines += "\n" + r;
            n += unsigned(std::count(r.begin(), r.end(), '\n')) + 1;
        }
        if (w.size() == 3 && !found)
            return "error: no guest '" + std::string(w[2].substr(0, 64)) + "' is connected";
        if (w.size() == 3 && !n)
            return "error: " + std::string(w[2].substr(0, 64)) + " has no HCA";
        return "ok " + std::to_string(n) + " ports" + lines;
    }
    if (!fabric_)
        return "error: the emulator runs without a fabric";
    std::string reply = fabric_->control(line);
    if (!w.empty() && w[0] == "help")
        reply += "\n  catas <node> [<syndrome>]\n  hca <node>\n  show traps [<node>]";
    return reply;
}

// Control clients: a command line in (at most kCtlMaxLine bytes), the
// fabric's reply out, then close. The sockets are non-blocking and in the
// poll set like the shims', so a slow or stuck client never holds up the
// loop; one that has not finished within kCtlTimeoutNs is closed, and past
// kCtlMaxClients the newest is refused.

void Server::accept_control()
{
    for (;;) {
        int fd = accept4(ctl_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (ctl_clients_.size() >= kCtlMaxClients) {
            IBEMU_ERROR(kWho, "control: more than %zu clients at once; one refused", kCtlMaxClients);
            close(fd);
            continue;
        }
        auto c = std::make_unique<CtlClient>();
        c->fd = fd;
        c->deadline = now_ns() + kCtlTimeoutNs;
        ctl_clients_.push_back(std::move(c));
    }
}

// Returns false when the client is done (answered, gone or too slow).
bool Server::serve_control_client(CtlClient& c, short revents, uint64_t now)
{
    if (!c.replying && (revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[512];
        bool eof = false;
        for (;;) {
            ssize_t n = read(c.fd, buf, sizeof(buf));
            if (n > 0) {
                c.in.append(buf, size_t(n));
                if (c.in.size() >= kCtlMaxLine || c.in.find('\n') != std::string::npos)
                    break;
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
            break;
        }
        size_t nl = c.in.find('\n');
        if (nl != std::string::npos || c.in.size() >= kCtlMaxLine || eof) {
            std::string line = c.in.substr(0, std::min({nl, c.in.size(), kCtlMaxLine}));
            std::string reply;
            try {
                reply = control(line);
            } catch (const std::exception& e) {
                reply = std::string("error: internal: ") + e.what();
            } catch (...) {
                reply = "error: internal";
            }
            if (reply.empty() || reply.back() != '\n')
                reply += '\n';
            c.out = std::move(reply);
            c.replying = true;
        }
    }
    if (c.replying) {
        while (c.out_off < c.out.size()) {
            ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
            if (n > 0) {
                c.out_off += size_t(n);
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            return false;  // the client went away
        }
        if (c.out_off == c.out.size())
            return false;
    }
    if (now >= c.deadline) {
        IBEMU_INFO(kWho, "control: a client did not finish within %llu s; closed",
                   (unsigned long long)(kCtlTimeoutNs / 1000000000ull));
        return false;
    }
    return true;
}

void Server::stop()
{
    if (wake_wr_ >= 0) {
        char c = 1;
        ssize_t r = write(wake_wr_, &c, 1);
        (void)r;
    }
}

void Server::accept_all()
{
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                IBEMU_ERROR(kWho, "accept: %s", strerror(errno));
            return;
        }
        set_nonblock_cloexec(fd);
        conns_.push_back(std::make_unique<Connection>(*this, fd, next_conn_id_++));
    }
}

int Server::run()
{
    if (listen_fd_ < 0) {
        IBEMU_ERROR(kWho, "run() without a successful listen()");
        return 1;
    }
    std::vector<pollfd> pfds;
    for (;;) {
        // connections that died in the last round go now
        conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->dead(); }),
                     conns_.end());

        pfds.clear();
        pfds.push_back({wake_rd_, POLLIN, 0});
        pfds.push_back({listen_fd_, POLLIN, 0});
        pfds.push_back({ctl_fd_, POLLIN, 0});  // fd -1: ignored by poll()
        uint64_t next = fabric_ ? fabric_->next_deadline() : UINT64_MAX;
        for (auto& c : conns_) {
            pfds.push_back({c->fd(), short(POLLIN | (c->wants_write() ? POLLOUT : 0)), 0});
            next = std::min(next, c->deadline());
        }
        // pfds[3 + conns_.size() + j] belongs to ctl_clients_[j]
        for (auto& c : ctl_clients_) {
            pfds.push_back({c->fd, short(c->replying ? POLLOUT : POLLIN), 0});
            next = std::min(next, c->deadline);
        }
        // then the host MAD endpoint's listening socket and clients
        size_t mh_at = pfds.size();
        if (madhost_)
            madhost_->add_pollfds(&pfds);
        int timeout = -1;
        if (next != UINT64_MAX) {
            uint64_t now = now_ns();
            timeout = next <= now ? 0 : int(std::min<uint64_t>((next - now + 999999) / 1000000, 60000));
        }
        int r = poll(pfds.data(), pfds.size(), timeout);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            IBEMU_ERROR(kWho, "poll: %s", strerror(errno));
            return 1;
        }
        if (pfds[0].revents) {
            char buf[64];
            while (read(wake_rd_, buf, sizeof(buf)) > 0) {
            }
            IBEMU_INFO(kWho, "stopping");
            return 0;
        }
        // pfds[3 + i] belongs to conns_[i]; accept appends behind them
        size_t n = conns_.size();
        size_t nctl = ctl_clients_.size();
        for (size_t i = 0; i < n; ++i) {
            Connection& c = *conns_[i];
            short ev = pfds[3 + i].revents;
            if (ev & (POLLIN | POLLHUP | POLLERR))
                c.on_readable();
            if (!c.dead() && (ev & POLLOUT))
                c.on_writable();
        }
        if (madhost_ && pfds.size() > mh_at)
            madhost_->handle(std::vector<pollfd>(pfds.begin() + long(mh_at), pfds.end()));
        uint64_t now = now_ns();
        if (fabric_) {
            // Packets in flight that are due, then every model: traffic from
            // one guest may have given another new work, timers or interrupts.
            // A model's exception is caught at its port (GuardedPort); this
            // is for the fabric itself (allocation failure).
            try {
                fabric_->run_due();
            } catch (const std::exception& e) {
                IBEMU_ERROR(kWho, "fabric: %s", e.what());
            }
            for (size_t i = 0; i < n; ++i)
                conns_[i]->poll_model(now);
        } else {
            for (size_t i = 0; i < n; ++i)
                conns_[i]->on_timer(now);
        }
        if (pfds[1].revents & POLLIN)
            accept_all();
        for (size_t j = 0; j < nctl; ++j) {
            CtlClient& c = *ctl_clients_[j];
            if (!serve_control_client(c, pfds[3 + n + j].revents, now)) {
                close(c.fd);
                c.fd = -1;
            }
        }
        ctl_clients_.erase(std::remove_if(ctl_clients_.begin(), ctl_clients_.end(),
                                          [](const auto& c) { return c->fd < 0; }),
                           ctl_clients_.end());
        if (pfds[2].revents & POLLIN)
            accept_control();
    }
}

}  // namespace ibemu
