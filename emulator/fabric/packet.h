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

// IBA 7.6.9 VL arbitration as a port's transmitter applies it: the SM's
// VLArbitrationTable (high and low priority, entries of VL and weight in
// 64-byte units) and PortInfo VLHighLimit (4 KiB units of high priority
// traffic while low priority traffic waits; 255: no limit).
struct VlArbEntry {
    uint8_t vl = 0;
    uint8_t weight = 0;
};
struct VlArbitration {
    std::array<VlArbEntry, 64> high{}, low{};
    uint8_t high_limit = 0;
    // False: nothing programmed yet; the transmitter serves its VLs round
    // robin (IBA defaults map every SL to VL0, so only VL0 carries data).
    bool programmed = false;
};

// A port's VLArbitrationTable as its four blocks (IBA 14.2.5.9: blocks 1
// and 2 the low priority entries 0-31 and 32-63, blocks 3 and 4 the high
// priority ones; each entry a byte with the VL in its low 4 bits and a byte
// of weight) and its PortInfo VLHighLimit, as a transmitter applies them.
inline VlArbitration vl_arbitration_from(const uint8_t (&blocks)[256], uint8_t high_limit)
{
    VlArbitration a;
    a.high_limit = high_limit;
    for (unsigned i = 0; i < 64; ++i) {
        a.low[i] = {uint8_t(blocks[i * 2] & 15), blocks[i * 2 + 1]};
        a.high[i] = {uint8_t(blocks[128 + i * 2] & 15), blocks[128 + i * 2 + 1]};
        if ((a.low[i].weight && a.low[i].vl < 15) || (a.high[i].weight && a.high[i].vl < 15))
            a.programmed = true;
    }
    return a;
}

// The VL an SLtoVLMappingTable (IBA 14.2.5.8: 16 SLs, 4 bits each, SL0 in
// the high nibble of byte 0) gives `sl`.
inline uint8_t sl_to_vl(const uint8_t* table8, uint8_t sl)
{
    uint8_t b = table8[(sl & 15) / 2];
    return sl & 1 ? b & 15 : b >> 4;
}

// Credits a packet of `bytes` (LRH to the end of the payload, pad included)
// takes in a receive buffer: 64-byte blocks of the packet with its ICRC and
// VCRC (IBA 7.9.4.2: FCTBS/FCCL count 64-byte blocks).
inline uint32_t credit_blocks(uint32_t bytes) { return (bytes + 6 + 63) / 64; }

// The transmit side a port is given by the fabric.
class Wire {
public:
    virtual ~Wire() = default;
    virtual void transmit(const Packet& p) = 0;
    // Link-level flow control (IBA 7.9): whether the receiver has buffer
    // credits on `vl` for a packet of `bytes` (hdr_len + payload_len). A
    // flow-controlled sender asks before it transmits and, told no, stops
    // until its endpoint's tx_ready(). VL15 is not flow-controlled.
    virtual bool ready(uint8_t vl, uint32_t bytes)
    {
        (void)vl;
        (void)bytes;
        return true;
    }
    // The transmitter's VL arbitration, as the port's SM-programmed tables
    // say (IBA 7.6.9).
    virtual void set_arbitration(const VlArbitration& arb) { (void)arb; }
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
    // Whether the endpoint can take `p` now. A switch whose egress for `p`
    // has no credits says no: the packet then stays in the link's receive
    // buffer (holding its credits) until the egress drains, which is how
    // back-pressure travels upstream. Must not change any state.
    virtual bool accepts(const Packet& p)
    {
        (void)p;
        return true;
    }
    // accepts() and, if it says yes, receive(), in one call: true when the
    // endpoint took `p` (nothing changed when false). This is what a link
    // calls; an endpoint that reads the same headers for both (a switch
    // parses and routes a packet once) overrides it with one pass.
    virtual bool offer(const Packet& p)
    {
        if (!accepts(p))
            return false;
        receive(p);
        return true;
    }
    // The Wire this endpoint transmits on said no to ready() and now has
    // credits again. Runs from the fabric's scheduler, possibly while the
    // endpoint is inside one of its own calls: note it and send later.
    virtual void tx_ready() {}
};

}  // namespace ibemu
