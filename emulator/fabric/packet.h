// SPDX-License-Identifier: GPL-2.0
//
// What travels on an emulated InfiniBand link, and the two interfaces that
// join a port (of an HCA or of a switch) to the fabric.
//
// A Packet carries its headers in wire format (big-endian, starting with the
// LRH; GRH, BTH and extended headers follow as IBA chapter 9 lays them out)
// and its payload as a short gather list. ICRC and VCRC are not carried: the
// capture code computes them when it writes a pcap. Payload segments point at
// memory the sender owns and are valid only during the call that hands the
// packet over; whoever keeps a packet beyond that call copies it first
// (PacketBuffer). That keeps the common path free of copies and allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ibemu {

struct PayloadSeg {
    const uint8_t* data = nullptr;
    uint32_t len = 0;
};

struct Packet {
    static constexpr size_t kMaxHdr = 128;   // LRH+GRH+BTH+the largest ext headers
    static constexpr size_t kMaxSegs = 16;

    std::array<uint8_t, kMaxHdr> hdr;
    uint16_t hdr_len = 0;
    uint8_t vl = 0;        // virtual lane it travels on (15 for SMPs)
    uint8_t nseg = 0;
    uint32_t payload_len = 0;  // sum of seg[i].len
    std::array<PayloadSeg, kMaxSegs> seg;

    // Copy the payload out, in order, into dst (payload_len bytes).
    void copy_payload(uint8_t* dst) const
    {
        for (unsigned i = 0; i < nseg; ++i) {
            std::memcpy(dst, seg[i].data, seg[i].len);
            dst += seg[i].len;
        }
    }
};

// Physical link parameters as the two ends negotiated them.
struct LinkParams {
    uint8_t width = 2;        // IBA LinkWidthActive encoding (2 = 4x)
    uint8_t speed = 1;        // IBA LinkSpeedActive encoding (1 = 2.5 Gb/s)
    uint16_t mtu = 2048;      // largest payload the link carries, bytes
};

// The transmit side a port is given by the fabric.
class Wire {
public:
    virtual ~Wire() = default;
    virtual void transmit(const Packet& p) = 0;
    // The port's transmitter is on (the default) or off. A link trains only
    // while the transmitters of both ends are on: a port that turns its
    // carrier off takes the link down for both ends, as a dead chip does.
    virtual void set_carrier(bool on) { (void)on; }
};

// The receive side every port (HCA port or switch port) implements.
class PortEndpoint {
public:
    virtual ~PortEndpoint() = default;
    virtual void receive(const Packet& p) = 0;
    // The physical link came up (with its parameters) or went down.
    virtual void link_changed(bool up, const LinkParams& params) = 0;
};

}  // namespace ibemu
