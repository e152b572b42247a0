// SPDX-License-Identifier: GPL-2.0
#include "madhost/mad_host.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"

namespace ibemu::madhost {

using namespace fabric;  // header tables
using ib::PortState;

namespace {

// struct ib_user_mad_hdr fields (<rdma/ib_user_mad.h>): host-order u32s,
// then the big-endian address.
constexpr unsigned kHdrId = 0, kHdrStatus = 4, kHdrTimeout = 8, kHdrRetries = 12, kHdrLength = 16;
constexpr unsigned kHdrQpn = 20, kHdrQkey = 24, kHdrLid = 28, kHdrSl = 30;

uint32_t host32(const uint8_t* p)
{
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

void put_host32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

bool is_response(uint8_t method) { return (method & 0x80) || method == mad::kMethodTrapRepress; }

constexpr uint8_t kClassSubnAdm = 0x03;

// The classes whose MADs carry an RMPP header (SA, vendor range 2).
bool rmpp_class(uint8_t cls) { return cls == kClassSubnAdm || (cls >= 0x30 && cls <= 0x4f); }

// The RMPP header (IBA 13.6.2.1) after the common MAD header: version,
// type, RRespTime | flags, status, then SegmentNumber and PayloadLength /
// NewWindowLast.
constexpr unsigned kRmppVersion = 24, kRmppType = 25, kRmppFlags = 26, kRmppStatus = 27;
constexpr unsigned kRmppSeg = 28, kRmppPayload = 32, kRmppHdrEnd = 36;
constexpr uint8_t kRmppTypeData = 1;
constexpr uint8_t kRmppActive = 1, kRmppFirst = 2, kRmppLast = 4;

// A MAD or message with RMPP active in its RMPP header (the flag alone, as
// ib_umad tests it: OpenSM leaves RMPPVersion 0 for the kernel to fill).
bool rmpp_active(std::span<const uint8_t> m)
{
    return m.size() >= kRmppHdrEnd && rmpp_class(uint8_t(m[1])) && (m[kRmppFlags] & kRmppActive);
}

// Where a class's data starts in each segment: the headers every segment
// repeats (as ib_mad's ib_get_mad_data_offset: SA 56, device management
// 64, vendor classes 0x30-0x4f 40, others right after the RMPP header).
unsigned rmpp_data_offset(uint8_t cls)
{
    if (cls == kClassSubnAdm)
        return 56;
    if (cls == 0x06)
        return 64;
    if (cls >= 0x30 && cls <= 0x4f)
        return 40;
    return kRmppHdrEnd;
}

}  // namespace

std::vector<std::array<uint8_t, kMadSize>> rmpp_segments(std::span<const uint8_t> msg)
{
    // Segments of one MAD each: the headers repeated, then the next slice
    // of the data. PayloadLength (IBA 13.6.2.1) counts the bytes after the
    // RMPP header: in the first segment for the whole message, in the last
    // for that segment, 0 in between.
    std::vector<std::array<uint8_t, kMadSize>> out;
    if (msg.size() < kRmppHdrEnd)
        return out;
    uint8_t cls = uint8_t(mad::kMgmtClass.get(msg));
    size_t off = rmpp_data_offset(cls);
    if (msg.size() < off)
        return out;
    size_t data = msg.size() - off, per = kMadSize - off;
    size_t nseg = std::max<size_t>(1, (data + per - 1) / per);
    size_t pad = nseg * per - data;
    size_t rmpp_per = kMadSize - kRmppHdrEnd;
    for (size_t i = 0; i < nseg; ++i) {
        std::array<uint8_t, kMadSize> s{};
        std::memcpy(s.data(), msg.data(), off);
        size_t from = off + i * per, n = std::min(per, msg.size() - from);
        std::memcpy(s.data() + off, msg.data() + from, n);
        uint8_t flags = kRmppActive | (i == 0 ? kRmppFirst : 0) | (i + 1 == nseg ? kRmppLast : 0);
        s[kRmppVersion] = 1;
        s[kRmppType] = kRmppTypeData;
        s[kRmppFlags] = uint8_t((msg[kRmppFlags] & 0xf8) | flags);
        s[kRmppStatus] = 0;
        std::span<uint8_t> sp(s);
        put32(sp, kRmppSeg, uint32_t(i + 1));
        uint32_t paylen = i == 0 ? uint32_t(nseg * rmpp_per - pad) : i + 1 == nseg ? uint32_t(rmpp_per - pad) : 0;
        put32(sp, kRmppPayload, paylen);
        out.push_back(s);
    }
    return out;
}

// A request waiting for its response: armed in the scheduler's deadline
// heap for its timeout.
struct MadHost::Pending final : TimedSource {
    MadHost* host = nullptr;
    uint64_t client = 0;
    uint32_t agent = 0;
    uint64_t tid = 0;
    uint32_t timeout_ms = 0;
    uint32_t retries_left = 0;
    std::vector<uint8_t> mad;  // one MAD, or an RMPP message
    Addr to;
    uint64_t next_deadline() const override { return kNever; }
    void fire(uint64_t now) override
    {
        (void)now;
        host->timed_out(this);
    }
};

MadHost::MadHost(Scheduler& sched, stub::StubCaConfig cfg) : StubCa(sched, std::move(cfg)) {}

MadHost::~MadHost()
{
    for (auto& [tid, p] : pending_)
        sched_.disarm(p.get());
    for (auto& [id, c] : clients_)
        close(c->fd);
    if (listen_fd_ >= 0) {
        close(listen_fd_);
        unlink(path_.c_str());
    }
}

bool MadHost::listen(const std::string& path, std::string* error)
{
    sockaddr_un a{};
    if (path.size() >= sizeof a.sun_path) {
        *error = path + ": path too long";
        return false;
    }
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error = std::string("socket: ") + strerror(errno);
        return false;
    }
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd, 64) < 0) {
        *error = path + ": " + strerror(errno);
        close(fd);
        return false;
    }
    listen_fd_ = fd;
    path_ = path;
    return true;
}

void MadHost::add_pollfds(std::vector<pollfd>* v) const
{
    if (listen_fd_ >= 0)
        v->push_back({listen_fd_, POLLIN, 0});
    for (auto& [id, c] : clients_)
        v->push_back({c->fd, short(POLLIN | (c->outq.empty() ? 0 : POLLOUT)), 0});
}

void MadHost::handle(const std::vector<pollfd>& v)
{
    for (const pollfd& p : v) {
        if (!p.revents)
            continue;
        if (p.fd == listen_fd_) {
            accept_all();
            continue;
        }
        for (auto it = clients_.begin(); it != clients_.end(); ++it) {
            if (it->second->fd != p.fd)
                continue;
            Client& c = *it->second;
            if (p.revents & POLLOUT)
                client_flush(c);
            if (p.revents & (POLLIN | POLLHUP | POLLERR))
                client_readable(c);  // may drop the client
            break;
        }
    }
}

void MadHost::accept_all()
{
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        auto c = std::make_unique<Client>();
        c->id = next_client_++;
        c->fd = fd;
        clients_[c->id] = std::move(c);
    }
}

void MadHost::drop_client(uint64_t id)
{
    auto it = clients_.find(id);
    if (it == clients_.end())
        return;
    close(it->second->fd);
    clients_.erase(it);
    update_issm();  // its requests time out into nothing (timed_out finds no client)
}

void MadHost::client_readable(Client& c)
{
    uint64_t id = c.id;
    for (int i = 0; i < 64; ++i) {  // bounded per round: one client cannot hog the loop
        // The message's size first: an RMPP message is longer than a MAD.
        ssize_t want = recv(c.fd, nullptr, 0, MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC);
        if (want < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        size_t cap = std::min<size_t>(std::max<ssize_t>(want, 1), kHdrSize + kMaxRmppMessage + 1);
        if (rx_buf_.size() < cap)
            rx_buf_.resize(cap);
        uint8_t* buf = rx_buf_.data();
        ssize_t n = recv(c.fd, buf, cap, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            drop_client(id);
            return;
        }
        UmadCtl ctl;
        if (size_t(n) == sizeof ctl) {
            std::memcpy(&ctl, buf, sizeof ctl);
            if (ctl.magic == kCtlMagic) {
                client_ctl(c, ctl);
                if (!clients_.count(id))
                    return;
                continue;
            }
        }
        client_send(c, buf, size_t(n));
    }
}

void MadHost::client_flush(Client& c)
{
    while (!c.outq.empty()) {
        const auto& m = c.outq.front();
        ssize_t n = send(c.fd, m.data(), m.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
            return;  // EAGAIN: POLLOUT brings us back; an error: POLLHUP does
        c.outq.pop_front();
    }
}

UmadPortInfo MadHost::port_info() const
{
    const mthca::Port& p = port(1);
    UmadPortInfo i;
    i.num_ports = num_ports();
    i.node_guid = node().node_guid;
    i.sys_image_guid = node().sys_image_guid;
    i.port_guid = p.guid;
    i.gid_prefix = p.gid_prefix;
    i.cap_mask = p.cap_mask;
    i.lid = p.lid;
    i.sm_lid = p.sm_lid;
    i.lmc = p.lmc;
    i.sm_sl = p.sm_sl;
    i.state = uint8_t(p.state);
    i.phys_state = uint8_t(p.phys);
    i.width = p.width_active;
    i.speed = p.speed_active;
    i.pkey0 = p.pkeys[0];
    std::strncpy(i.node_desc, node().description.c_str(), sizeof i.node_desc - 1);
    return i;
}

void MadHost::update_issm()
{
    bool any = false;
    for (auto& [id, c] : clients_)
        any |= c->issm;
    // PortInfo CapabilityMask IsSM (IBA 14.2.5.6, bit 1): set while a process
    // holds the issm file, as ib_umad does.
    if (any)
        port(1).cap_mask |= 1u << 1;
    else
        port(1).cap_mask &= ~(1u << 1);
}

void MadHost::client_ctl(Client& c, const UmadCtl& ctl)
{
    switch (ctl.op) {
    case CtlOp::Register: {
        Agent a;
        a.id = ctl.agent;
        a.hi_tid = next_hi_tid_++;
        a.qpn = ctl.qpn;
        a.mgmt_class = ctl.mgmt_class;
        a.class_version = ctl.class_version;
        a.rmpp_version = ctl.rmpp_version;
        a.mask[0] = ctl.method_mask[0];
        a.mask[1] = ctl.method_mask[1];
        c.agents[a.id] = a;
        return;
    }
    case CtlOp::Unregister:
        c.agents.erase(ctl.agent);
        return;
    case CtlOp::SetIsSm:
        c.issm = true;
        update_issm();
        return;
    case CtlOp::QueryPort: {
        UmadPortInfo i = port_info();
        std::vector<uint8_t> out(sizeof i);
        std::memcpy(out.data(), &i, sizeof i);
        c.outq.push_back(std::move(out));
        client_flush(c);
        return;
    }
    }
    ++hc_.bad;
}

void MadHost::client_send(Client& c, const uint8_t* pkt, size_t len)
{
    // A MAD is the 64-byte header and at least the common MAD header; an
    // RMPP agent may write a longer message with RMPP active (ib_umad
    // segments those).
    if (len < kHdrSize + 24 || len > kHdrSize + kMaxRmppMessage) {
        ++hc_.bad;
        return;
    }
    uint32_t agent = host32(pkt + kHdrId);
    auto ag = c.agents.find(agent);
    if (ag == c.agents.end()) {
        ++hc_.bad;  // ib_umad refuses a send by an unregistered agent
        return;
    }
    // With RMPP active the message keeps its exact length (the reader's
    // ib_mad gives it back from PayloadLength); a plain MAD is 256 bytes.
    std::span<const uint8_t> body(pkt + kHdrSize, len - kHdrSize);
    bool rmpp = ag->second.rmpp_version && rmpp_active(body) &&
                body.size() >= rmpp_data_offset(uint8_t(mad::kMgmtClass.get(body)));
    if (body.size() > kMadSize && !rmpp) {
        ++hc_.bad;  // longer than a MAD without RMPP: ib_umad refuses it
        return;
    }
    std::vector<uint8_t> m(rmpp ? body.size() : kMadSize, 0);
    std::memcpy(m.data(), body.data(), body.size());
    ++hc_.sent;
    Addr to;
    to.qpn = get32(std::span<const uint8_t>(pkt, kHdrSize), kHdrQpn) & 0xffffff;
    to.qkey = get32(std::span<const uint8_t>(pkt, kHdrSize), kHdrQkey);
    to.lid = get16(std::span<const uint8_t>(pkt, kHdrSize), kHdrLid);
    to.sl = pkt[kHdrSl] & 0xf;
    uint32_t timeout = host32(pkt + kHdrTimeout);
    uint8_t method = uint8_t(mad::kMethod.get(m));
    if (!is_response(method) && timeout) {
        // ib_mad: the agent's id in the TID's upper half; the response is
        // matched by TID.
        uint64_t tid = (uint64_t(ag->second.hi_tid) << 32) | (mad::kTid.get(m) & 0xffffffffull);
        mad::kTid.set(m, tid);
        auto p = std::make_unique<Pending>();
        p->host = this;
        p->client = c.id;
        p->agent = agent;
        p->tid = tid;
        p->timeout_ms = timeout;
        p->retries_left = host32(pkt + kHdrRetries);
        p->mad = m;
        p->to = to;
        sched_.arm(p.get(), sched_.now() + uint64_t(timeout) * 1000000ull);
        auto old = pending_.find(tid);
        if (old != pending_.end())
            sched_.disarm(old->second.get());
        pending_[tid] = std::move(p);
    }
    route(m, to);
}

void MadHost::route(std::span<const uint8_t> msg, const Addr& to)
{
    if (msg.size() != kMadSize || rmpp_active(msg)) {
        route_rmpp(msg, to);
        return;
    }
    Mad m{};
    std::memcpy(m.data(), msg.data(), msg.size());
    mthca::Port& p = port(1);
    uint8_t cls = uint8_t(mad::kMgmtClass.get(m));
    uint8_t method = uint8_t(mad::kMethod.get(m));
    Addr self;
    self.lid = p.lid;
    self.qpn = to.qpn;
    self.sl = to.sl;
    if (to.qpn == 0) {
        if (cls == mad::kClassSubnDirected) {
            unsigned hop_cnt = unsigned(smp::kHopCount.get(m));
            bool returning = smp::kDirection.get(m) != 0;
            if (returning || hop_cnt >= smp::kMaxHops) {
                ++hc_.unmatched;  // an SM answering on a DR path: not modelled
                return;
            }
            if (hop_cnt == 0) {
                // To this port's own SMA (C14-9: a local SMP).
                Mad out{};
                if (!local_mad(1, m, out))
                    return;
                smp::kDirection.set(out, 1);
                incoming(out, self);
                return;
            }
            // C14-9:1 at the sender: hop pointer 1, out of initial path [1].
            if (smp::kHopPointer.get(m) != 0 || m[smp::kInitialPathOffset + 1] != 1 ||
                smp::kDrSlid.get(m) != kPermissiveLid) {
                ++hc_.unmatched;
                return;
            }
            smp::kHopPointer.set(m, 1);
            send_smp(1, kPermissiveLid, kPermissiveLid, to.sl, m);
            return;
        }
        if (p.lid && to.lid == p.lid) {
            Mad out{};
            if (!is_response(method) && local_mad(1, m, out))
                incoming(out, self);
            return;
        }
        send_smp(1, to.lid, p.lid, to.sl, m);
        return;
    }
    if (p.lid && to.lid == p.lid) {
        // Looped back: the port's PMA, or the agents (an SA query to an SM
        // on this port).
        Mad out{};
        if (cls == mad::kClassPerf && !is_response(method)) {
            if (local_mad(1, m, out))
                incoming(out, self);
            return;
        }
        self.qpn = 1;
        incoming(m, self);
        return;
    }
    send_gmp(1, to.lid, to.sl, to.qpn ? to.qpn : 1, p.pkeys[0] ? p.pkeys[0] : 0xffff, m);
}

void MadHost::route_rmpp(std::span<const uint8_t> msg, const Addr& to)
{
    ++hc_.rmpp_sent;
    const mthca::Port& p = port(1);
    if (p.lid && to.lid == p.lid) {
        // To an agent of this port: what ib_mad's reassembly hands the
        // reader is the message as written, its RMPP header that of the
        // first segment.
        std::vector<uint8_t> m(msg.begin(), msg.end());
        m[kRmppVersion] = 1;
        m[kRmppType] = kRmppTypeData;
        m[kRmppFlags] = uint8_t((m[kRmppFlags] & 0xf8) | kRmppActive | kRmppFirst | kRmppLast);
        Addr self;
        self.lid = p.lid;
        self.qpn = 1;
        self.sl = to.sl;
        incoming(m, self);
        return;
    }
    if (to.qpn == 0) {
        ++hc_.bad;  // SMPs are never segmented
        return;
    }
    for (const Mad& s : rmpp_segments(msg)) {
        ++hc_.rmpp_segments;
        send_gmp(1, to.lid, to.sl, to.qpn, p.pkeys[0] ? p.pkeys[0] : 0xffff, s);
    }
}

void MadHost::unhandled_mad(const stub::MadSource& src, std::span<const uint8_t> mad_in)
{
    Mad m{};
    std::memcpy(m.data(), mad_in.data(), std::min<size_t>(mad_in.size(), m.size()));
    Addr from;
    from.lid = src.slid;
    from.qpn = src.src_qp;
    from.qkey = src.qkey;
    from.sl = src.sl;
    incoming(m, from);
}

void MadHost::incoming(std::span<const uint8_t> m, const Addr& from)
{
    uint8_t method = uint8_t(mad::kMethod.get(m));
    uint8_t cls = uint8_t(mad::kMgmtClass.get(m));
    if (m.size() == kMadSize && rmpp_class(cls) &&
        m[kRmppVersion] && (m[kRmppFlags] & kRmppActive) &&
        (m[kRmppType] != kRmppTypeData || !(m[kRmppFlags] & kRmppFirst) || !(m[kRmppFlags] & kRmppLast))) {
        // RMPP from the wire that is not a whole one-segment message: ACKs
        // of our segments, or segments we do not reassemble.
        ++hc_.rmpp_acks;
        return;
    }
    if (m.size() == kMadSize && rmpp_class(cls) && rmpp_active(m)) {
        // One whole segment: the reader gets the length its PayloadLength
        // gives (the bytes after the RMPP header).
        size_t paylen = get32(m, kRmppPayload);
        size_t n = std::clamp<size_t>(kRmppHdrEnd + paylen, rmpp_data_offset(cls), kMadSize);
        m = m.first(n);
    }
    if (is_response(method)) {
        auto it = pending_.find(mad::kTid.get(m));
        if (it == pending_.end() || mad::kMgmtClass.get(it->second->mad) != cls) {
            ++hc_.unmatched;
            return;
        }
        std::unique_ptr<Pending> p = std::move(it->second);
        pending_.erase(it);
        sched_.disarm(p.get());
        auto c = clients_.find(p->client);
        if (c != clients_.end())
            deliver(*c->second, p->agent, m, from, 0);
        return;
    }
    // Unsolicited: the first agent for this class, version and method.
    uint8_t ver = uint8_t(mad::kClassVersion.get(m));
    for (auto& [id, c] : clients_) {
        for (auto& [aid, a] : c->agents) {
            if (a.mgmt_class != cls || a.class_version != ver || !(a.mask[method / 64] >> (method % 64) & 1))
                continue;
            deliver(*c, aid, m, from, 0);
            return;
        }
    }
    ++hc_.unmatched;
}

void MadHost::deliver(Client& c, uint32_t agent, std::span<const uint8_t> m, const Addr& from, uint32_t status)
{
    std::vector<uint8_t> out(kHdrSize + m.size(), 0);
    put_host32(&out[kHdrId], agent);
    put_host32(&out[kHdrStatus], status);
    put_host32(&out[kHdrLength], uint32_t(kHdrSize + m.size()));
    std::span<uint8_t> h(out.data(), kHdrSize);
    put32(h, kHdrQpn, from.qpn);
    put32(h, kHdrQkey, from.qkey);
    put16(h, kHdrLid, from.lid);
    out[kHdrSl] = from.sl;
    std::memcpy(out.data() + kHdrSize, m.data(), m.size());
    c.outq.push_back(std::move(out));
    ++hc_.delivered;
    client_flush(c);
}

void MadHost::timed_out(Pending* raw)
{
    auto it = pending_.find(raw->tid);
    if (it == pending_.end() || it->second.get() != raw)
        return;
    Pending& p = *raw;
    if (!clients_.count(p.client)) {
        pending_.erase(it);
        return;
    }
    if (p.retries_left) {
        --p.retries_left;
        ++hc_.retries;
        sched_.arm(&p, sched_.now() + uint64_t(p.timeout_ms) * 1000000ull);
        // The answer may come back inside route() and free p: copies.
        std::vector<uint8_t> m = p.mad;
        Addr to = p.to;
        route(m, to);
        return;
    }
    ++hc_.timeouts;
    std::unique_ptr<Pending> own = std::move(it->second);
    pending_.erase(it);
    // ib_umad hands the request back, status ETIMEDOUT.
    deliver(*clients_[own->client], own->agent, own->mad, own->to, kStatusTimedOut);
}

}  // namespace ibemu::madhost
