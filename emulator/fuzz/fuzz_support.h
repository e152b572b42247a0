// SPDX-License-Identifier: GPL-2.0
//
// Shared by the libFuzzer targets of emulator/fuzz: a front-to-back reader
// of the fuzz input (and the matching writer the seed generators use), a
// Packet decoded from the input, and the seed-writing mode every target
// has (-write_seeds=DIR: write the target's seed corpus and exit).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fabric/packet.h"

namespace ibemu::fuzz {

// Reads fixed-size little-endian values from the front; past the end every
// value reads as 0 and empty() turns true.
class Reader {
public:
    Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
    bool empty() const { return n_ == 0; }
    size_t left() const { return n_; }
    uint64_t take(unsigned bytes)
    {
        uint64_t v = 0;
        for (unsigned i = 0; i < bytes && n_; ++i, ++p_, --n_)
            v |= uint64_t(*p_) << (8 * i);
        return v;
    }
    uint8_t u8() { return uint8_t(take(1)); }
    uint16_t u16() { return uint16_t(take(2)); }
    uint32_t u32() { return uint32_t(take(4)); }
    uint64_t u64() { return take(8); }
    std::span<const uint8_t> bytes(size_t want)
    {
        size_t k = want < n_ ? want : n_;
        std::span<const uint8_t> s(p_, k);
        p_ += k;
        n_ -= k;
        return s;
    }

private:
    const uint8_t* p_;
    size_t n_;
};

class Writer {
public:
    void put(uint64_t v, unsigned bytes)
    {
        for (unsigned i = 0; i < bytes; ++i)
            buf.push_back(uint8_t(v >> (8 * i)));
    }
    void u8(uint8_t v) { put(v, 1); }
    void u16(uint16_t v) { put(v, 2); }
    void u32(uint32_t v) { put(v, 4); }
    void u64(uint64_t v) { put(v, 8); }
    void bytes(std::span<const uint8_t> s) { buf.insert(buf.end(), s.begin(), s.end()); }
    std::vector<uint8_t> buf;
};

// A packet in the input: [u8 vl][u8 hdr_len][hdr][u16 payload_len][payload].
// The header is clamped to Packet::kMaxHdr; the payload is split into up to
// three segments (the model must not care how).
struct InPacket {
    Packet p;
    std::vector<uint8_t> payload;
};

inline bool read_packet(Reader& r, InPacket* out)
{
    if (r.empty())
        return false;
    Packet& p = out->p;
    p = Packet{};
    p.vl = r.u8() & 15;
    auto hdr = r.bytes(r.u8() % (Packet::kMaxHdr + 1));
    std::memcpy(p.hdr.data(), hdr.data(), hdr.size());
    p.hdr_len = uint16_t(hdr.size());
    auto pl = r.bytes(r.u16() % 4353);
    out->payload.assign(pl.begin(), pl.end());
    p.payload_len = uint32_t(pl.size());
    size_t cut = pl.size() / 3;
    size_t bounds[4] = {0, cut, 2 * cut, pl.size()};
    for (unsigned i = 0; i < 3; ++i) {
        if (bounds[i + 1] == bounds[i])
            continue;
        p.seg[p.nseg++] = {out->payload.data() + bounds[i], uint32_t(bounds[i + 1] - bounds[i])};
    }
    return true;
}

inline void write_packet(Writer& w, const Packet& p)
{
    w.u8(p.vl);
    w.u8(uint8_t(p.hdr_len));
    w.bytes(std::span<const uint8_t>(p.hdr.data(), p.hdr_len));
    w.u16(uint16_t(p.payload_len));
    for (unsigned i = 0; i < p.nseg; ++i)
        w.bytes(std::span<const uint8_t>(p.seg[i].data, p.seg[i].len));
}

// A broken invariant of the model: a crash libFuzzer records as such.
[[noreturn]] inline void invariant_failed(const char* what)
{
    fprintf(stderr, "fuzz invariant failed: %s\n", what);
    abort();
}

// -write_seeds=DIR on the command line: call gen(DIR) and exit. Used from
// LLVMFuzzerInitialize; the seeds in emulator/fuzz/corpus were made so.
inline void maybe_write_seeds(int* argc, char*** argv, const std::function<void(const std::string&)>& gen)
{
    for (int i = 1; i < *argc; ++i) {
        const char* a = (*argv)[i];
        if (!std::strncmp(a, "-write_seeds=", 13)) {
            gen(a + 13);
            std::exit(0);
        }
    }
}

inline void save_seed(const std::string& dir, const std::string& name, const std::vector<uint8_t>& data)
{
    std::string path = dir + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        std::perror(path.c_str());
        std::exit(1);
    }
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
}

}  // namespace ibemu::fuzz
