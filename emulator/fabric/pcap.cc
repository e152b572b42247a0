// SPDX-License-Identifier: GPL-2.0
#include "fabric/pcap.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "fabric/headers.h"

namespace ibemu::fabric {
namespace {

constexpr std::array<uint32_t, 256> make_crc32_table()
{
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? (0xedb88320u ^ (c >> 1)) : (c >> 1);
        t[n] = c;
    }
    return t;
}

constexpr std::array<uint16_t, 256> make_crc16_table()
{
    std::array<uint16_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint16_t c = uint16_t(n);
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? uint16_t(0xd008u ^ (c >> 1)) : uint16_t(c >> 1);
        t[n] = c;
    }
    return t;
}

constexpr auto kCrc32 = make_crc32_table();
constexpr auto kCrc16 = make_crc16_table();

void put_le16(std::vector<uint8_t>& v, uint16_t x)
{
    v.push_back(uint8_t(x));
    v.push_back(uint8_t(x >> 8));
}

void put_le32(std::vector<uint8_t>& v, uint32_t x)
{
    put_le16(v, uint16_t(x));
    put_le16(v, uint16_t(x >> 16));
}

}  // namespace

uint32_t crc32_ieee(std::span<const uint8_t> data, uint32_t crc)
{
    uint32_t c = ~crc;
    for (uint8_t b : data)
        c = kCrc32[(c ^ b) & 0xff] ^ (c >> 8);
    return ~c;
}

uint16_t crc16_vcrc(std::span<const uint8_t> data)
{
    uint16_t c = 0xffff;
    for (uint8_t b : data)
        c = uint16_t(kCrc16[(c ^ b) & 0xff] ^ (c >> 8));
    return uint16_t(~c);
}

uint32_t compute_icrc(std::span<const uint8_t> pkt)
{
    // The masked copy of the headers: LRH, optional GRH, BTH.
    uint8_t hdr[lrh::kSize + grh::kSize + bth::kSize];
    size_t n = std::min(pkt.size(), sizeof hdr);
    std::memcpy(hdr, pkt.data(), n);
    std::span<uint8_t> h(hdr, n);
    uint8_t lnh = uint8_t(lrh::kLnh.get(h));
    size_t off = lrh::kSize;
    std::memset(hdr, 0xff, std::min<size_t>(n, lrh::kSize));
    if (lnh == lrh::kLnhGlobal) {
        std::span<uint8_t> g = h.subspan(std::min(n, off));
        grh::kTClass.set(g, 0xff);
        grh::kFlowLabel.set(g, 0xfffff);
        grh::kHopLmt.set(g, 0xff);
        off += grh::kSize;
    }
    if (off + bth::kSize <= n)
        bth::kResv8a.set(h.subspan(off), 0xff);
    size_t masked = std::min(n, off + bth::kSize);
    uint32_t c = crc32_ieee(std::span<const uint8_t>(hdr, masked));
    return crc32_ieee(pkt.subspan(masked), c);
}

uint16_t compute_vcrc(std::span<const uint8_t> pkt) { return crc16_vcrc(pkt); }

size_t wire_image(const Packet& p, std::vector<uint8_t>& out)
{
    size_t len = std::min<size_t>(p.hdr_len, Packet::kMaxHdr) + p.payload_len;
    out.resize(len);
    out.resize(flatten(p, out));
    while (out.size() % 4)
        out.push_back(0);  // pad (BTH PadCnt) the sender did not carry
    uint8_t lnh = p.hdr_len ? uint8_t(p.hdr[1] & 3) : 0;
    if (lnh == lrh::kLnhLocal || lnh == lrh::kLnhGlobal)
        put_le32(out, compute_icrc(out));
    put_le16(out, compute_vcrc(out));
    return out.size();
}

bool parse_capture_format(std::string_view name, PcapFormat* fmt)
{
    if (name == "pcap")
        *fmt = PcapFormat::PcapErf;
    else if (name == "erf")
        *fmt = PcapFormat::Erf;
    else if (name == "ib" || name == "infiniband" || name == "247")
        *fmt = PcapFormat::PcapInfiniband;
    else
        return false;
    return true;
}

bool PcapWriter::open(const std::string& path, std::string* error, PcapFormat fmt)
{
    fmt_ = fmt;
    close();
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) {
        if (error)
            *error = path + ": " + std::strerror(errno);
        return false;
    }
    path_ = path;
    packets_ = 0;
    if (fmt == PcapFormat::Erf)
        return true;  // ERF has no file header
    std::vector<uint8_t> h;
    put_le32(h, 0xa1b23c4d);  // nanosecond timestamps
    put_le16(h, 2);
    put_le16(h, 4);
    put_le32(h, 0);           // thiszone
    put_le32(h, 0);           // sigfigs
    put_le32(h, 65535);       // snaplen
    put_le32(h, fmt == PcapFormat::PcapErf ? kLinktypeErf : kLinktypeInfiniband);
    std::fwrite(h.data(), 1, h.size(), f_);
    return true;
}

void PcapWriter::write(const Packet& p, uint64_t time_ns)
{
    if (!f_)
        return;
    wire_image(p, buf_);
    uint32_t sec = uint32_t(time_ns / 1000000000u), nsec = uint32_t(time_ns % 1000000000u);
    std::vector<uint8_t> rec;
    rec.reserve(32);
    uint32_t len = uint32_t(buf_.size());
    bool erf = fmt_ != PcapFormat::PcapInfiniband;
    uint32_t erf_len = erf ? 16 : 0;
    if (fmt_ != PcapFormat::Erf) {
        put_le32(rec, sec);
        put_le32(rec, nsec);
        put_le32(rec, len + erf_len);
        put_le32(rec, len + erf_len);
    }
    if (erf) {
        // ERF record header: 32.32 fixed-point time (little-endian), type,
        // flags (varying length), rlen, loss counter, wlen (big-endian).
        uint64_t frac = (uint64_t(nsec) << 32) / 1000000000u;
        put_le32(rec, uint32_t(frac));
        put_le32(rec, sec);
        rec.push_back(kErfTypeInfiniband);
        rec.push_back(0x04);
        rec.push_back(uint8_t((len + 16) >> 8));
        rec.push_back(uint8_t(len + 16));
        rec.push_back(0);
        rec.push_back(0);
        rec.push_back(uint8_t(len >> 8));
        rec.push_back(uint8_t(len));
    }
    std::fwrite(rec.data(), 1, rec.size(), f_);
    std::fwrite(buf_.data(), 1, buf_.size(), f_);
    ++packets_;
}

void PcapWriter::close()
{
    if (f_)
        std::fclose(f_);
    f_ = nullptr;
}

void Capture::tap(const Link& link, unsigned from_side, const Packet& p, uint64_t now_ns)
{
    (void)link;
    (void)from_side;
    w_.write(p, now_ns);
}

}  // namespace ibemu::fabric
