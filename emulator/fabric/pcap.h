// SPDX-License-Identifier: GPL-2.0
//
// Packet capture (formats: PcapFormat): each record is a whole packet as it
// is on the wire, LRH first, padded to 4 bytes, then the ICRC (for IBA
// transport packets) and the VCRC (IBA 7.8).
//
//  - ICRC (IBA 7.8.1): CRC-32, polynomial 0x04C11DB7 (reflected 0xEDB88320),
//    initial value all ones, complemented, over the packet from the LRH to
//    the end of the payload with the variant fields replaced by ones: the
//    whole LRH (8 bytes), in the GRH TClass, FlowLabel and HopLmt, and in
//    the BTH the 8 reserved bits after the P_Key (resv8a, where FECN/BECN
//    live). Sent least significant byte first.
//  - VCRC (IBA 7.8.2): CRC-16, polynomial 0x100B (reflected 0xD008), initial
//    value all ones, complemented, over everything from the LRH through the
//    ICRC. Sent least significant byte first.
//
// The CRCs are computed only here: the fabric itself never needs them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/link.h"
#include "fabric/packet.h"

namespace ibemu::fabric {

inline constexpr uint32_t kLinktypeInfiniband = 247;
inline constexpr uint32_t kLinktypeErf = 197;
inline constexpr uint8_t kErfTypeInfiniband = 21;

// LINKTYPE_INFINIBAND is the registered link type (tcpdump.org linktypes),
// but Wireshark 4.0 (Debian 12) does not map it to its InfiniBand
// dissector. ERF (Endace Extensible Record Format) type 21 is InfiniBand,
// which Wireshark has long decoded. So:
//  - PcapErf (the default, "pcap"): a pcap file with LINKTYPE_ERF (197),
//    each pcap record an ERF record header (16 bytes) and the packet;
//  - Erf ("erf"): a native ERF file, the same ERF records back to back
//    with no pcap headers;
//  - PcapInfiniband ("ib"): pcap with LINKTYPE_INFINIBAND (247), the
//    packet alone (for tools that know the registered link type).
enum class PcapFormat { PcapErf, Erf, PcapInfiniband };

// The control protocol's names: "pcap", "erf", "ib"/"infiniband"/"247";
// false for anything else.
bool parse_capture_format(std::string_view name, PcapFormat* fmt);

uint32_t crc32_ieee(std::span<const uint8_t> data, uint32_t crc = 0);  // standard CRC-32 (check "123456789" = 0xCBF43926)
uint16_t crc16_vcrc(std::span<const uint8_t> data);                      // IBA VCRC engine

// ICRC of a flat packet (LRH .. end of payload and pad).
uint32_t compute_icrc(std::span<const uint8_t> pkt);
// VCRC of a flat packet (LRH .. ICRC).
uint16_t compute_vcrc(std::span<const uint8_t> pkt);

// The packet as on the wire: headers, payload, pad, ICRC (if LNH says IBA
// transport), VCRC. Returns the length written into out (resized).
size_t wire_image(const Packet& p, std::vector<uint8_t>& out);

class PcapWriter {
public:
    PcapWriter() = default;
    ~PcapWriter() { close(); }
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // Creates (truncates) the file and, for the pcap forms, writes the
    // global header (nanosecond-resolution magic 0xa1b23c4d, version 2.4,
    // the link type).
    bool open(const std::string& path, std::string* error, PcapFormat fmt = PcapFormat::PcapErf);
    bool is_open() const { return f_ != nullptr; }
    void write(const Packet& p, uint64_t time_ns);
    void close();
    uint64_t packets() const { return packets_; }
    const std::string& path() const { return path_; }

private:
    FILE* f_ = nullptr;
    std::string path_;
    PcapFormat fmt_ = PcapFormat::PcapErf;
    std::vector<uint8_t> buf_;
    uint64_t packets_ = 0;
};

// A tap that writes every packet crossing the links it is set on.
class Capture final : public PacketTap {
public:
    PcapWriter& writer() { return w_; }
    void tap(const Link& link, unsigned from_side, const Packet& p, uint64_t now_ns) override;

private:
    PcapWriter w_;
};

}  // namespace ibemu::fabric
