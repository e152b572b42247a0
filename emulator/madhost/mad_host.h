// SPDX-License-Identifier: GPL-2.0
//
// A port of the emulated fabric that host processes use as if it were a
// local HCA port with the kernel's ib_umad behind it: Debian's OpenSM,
// ibnetdiscover, smpquery, perfquery run natively, through our LD_PRELOAD
// interposer (emulator/umad_preload), against a fabric of switches and stub
// or guest CAs. See umad_proto.h for the socket protocol.
//
// The endpoint is a stub CA (its own SMA and PMA answer the SM's local
// SMPs, hop count 0, and Set(PortInfo) gives it its LID) plus what the
// kernel's MAD layer does for umad clients:
//  - agents (the REGISTER ioctls): unsolicited MADs (requests, traps) go to
//    the first agent registered for their class, version and method;
//  - requests sent with a timeout: the TID's upper 32 bits are the agent's
//    (as ib_mad does), the response is matched by TID and goes back to the
//    sender; without one in time the request is resent `retries` times and
//    then handed back with status ETIMEDOUT;
//  - the sending side of the directed-route SMI (IBA 14.2.2.2 C14-9:1): the
//    hop pointer goes to 1 and the SMP leaves by the initial path's first
//    port; returning SMPs end at C14-13:3 in the StubCa;
//  - MADs to the port's own LID are answered locally (its SMA/PMA) or looped
//    to the agents (an SA query from smpquery to OpenSM on the same port).
//  - RMPP (IBA 13.6) for agents registered with an rmpp_version: a client
//    writes a message longer than one MAD (an SA GetTable response) as
//    ib_umad takes it, the 64-byte header and the whole reassembled MAD
//    (common, RMPP and class headers once, then all the data). To an agent
//    on this port it is handed over whole (what the kernel's segmentation
//    and reassembly would give the reader); to the wire it leaves as RMPP
//    DATA segments, each with a copy of the headers (as ib_mad segments).
//    A reader whose read() buffer is too short gets ENOSPC and the length
//    from the interposer, as from ib_umad.
// Not modelled: RMPP on the receiving side from the wire (segments are not
// reassembled, ACKs are counted and dropped; the segments are sent in one
// burst, not paced by the receiver's window), GRH-routed MADs, P_Key
// indexes other than 0.
#pragma once

#include <poll.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "madhost/umad_proto.h"
#include "stub/stub_ca.h"

namespace ibemu::madhost {

struct MadHostCounters {
    uint64_t sent = 0;           // MADs clients sent
    uint64_t delivered = 0;      // MADs handed to clients
    uint64_t timeouts = 0;       // requests handed back with ETIMEDOUT
    uint64_t retries = 0;
    uint64_t unmatched = 0;      // responses no request waits for, MADs no agent takes
    uint64_t bad = 0;            // malformed client messages
    uint64_t rmpp_sent = 0;      // multi-MAD RMPP messages sent (looped or segmented)
    uint64_t rmpp_segments = 0;  // RMPP DATA segments put on the wire
    uint64_t rmpp_acks = 0;      // RMPP ACKs (and other non-DATA RMPP MADs) from the wire, dropped
};

// The longest RMPP message a client may write (header excluded): 4096
// segments of one MAD's payload, far beyond any SA table of a subnet here.
inline constexpr size_t kMaxRmppMessage = 1u << 20;

// An RMPP message (the MAD as ib_umad takes it: headers once, then all the
// data) as the DATA segments that carry it on the wire (IBA 13.6): each a
// copy of the class's headers, SegmentNumber 1.., FIRST/LAST flags, and
// PayloadLength as ib_mad fills it. Empty for a message shorter than its
// class's headers.
std::vector<std::array<uint8_t, kMadSize>> rmpp_segments(std::span<const uint8_t> msg);

class MadHost : public stub::StubCa {
public:
    MadHost(fabric::Scheduler& sched, stub::StubCaConfig cfg);
    ~MadHost() override;

    // Creates the listening socket (a stale one is unlinked).
    bool listen(const std::string& path, std::string* error);
    // For the owner's poll() loop: the fds to watch, then what poll said.
    void add_pollfds(std::vector<pollfd>* v) const;
    void handle(const std::vector<pollfd>& v);
    size_t clients() const { return clients_.size(); }
    const MadHostCounters& host_counters() const { return hc_; }
    UmadPortInfo port_info() const;

protected:
    void unhandled_mad(const stub::MadSource& src, std::span<const uint8_t> mad) override;

private:
    struct Agent {
        uint32_t id = 0;
        uint32_t hi_tid = 0;
        uint8_t qpn = 0, mgmt_class = 0, class_version = 0, rmpp_version = 0;
        uint64_t mask[2] = {0, 0};
    };
    struct Client {
        uint64_t id = 0;
        int fd = -1;
        bool issm = false;
        std::map<uint32_t, Agent> agents;
        std::deque<std::vector<uint8_t>> outq;
    };
    struct Pending;
    using Mad = std::array<uint8_t, kMadSize>;
    struct Addr {
        uint16_t lid = 0;  // the peer's LID (as the kernel reports the source)
        uint32_t qpn = 0;
        uint32_t qkey = 0;
        uint8_t sl = 0;
    };

    void accept_all();
    void client_readable(Client& c);
    void client_flush(Client& c);
    void drop_client(uint64_t id);
    void client_ctl(Client& c, const UmadCtl& ctl);
    void client_send(Client& c, const uint8_t* pkt, size_t len);
    // Puts a MAD (or a longer RMPP message) on the wire, or answers or
    // loops it locally.
    void route(std::span<const uint8_t> msg, const Addr& to);
    // An RMPP message longer than one MAD: looped to the agents, or
    // segmented onto the wire.
    void route_rmpp(std::span<const uint8_t> msg, const Addr& to);
    // A MAD (or a reassembled RMPP message) that arrived for the clients: a
    // response for a pending request or something for an agent.
    void incoming(std::span<const uint8_t> m, const Addr& from);
    void deliver(Client& c, uint32_t agent, std::span<const uint8_t> m, const Addr& from, uint32_t status);
    void timed_out(Pending* p);
    void update_issm();

    int listen_fd_ = -1;
    std::string path_;
    uint64_t next_client_ = 1;
    uint32_t next_hi_tid_ = 1;
    std::map<uint64_t, std::unique_ptr<Client>> clients_;
    std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_;  // by TID
    MadHostCounters hc_;
    std::vector<uint8_t> rx_buf_;  // one client message
};

}  // namespace ibemu::madhost
