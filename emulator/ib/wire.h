// SPDX-License-Identifier: GPL-2.0
//
// Big-endian wire-format access, shared by the HCA model and the fabric.
// InfiniBand is big-endian everywhere (IBA 1.2.1 vol 1, 1.4 "byte
// ordering"), and so are the mthca mailboxes, contexts and EQEs.
//
// A layout is a table of Field{offset, word_bytes, shift, bits}, so a
// structure reads like the specification: the field is `bits` wide and sits
// `shift` bits above the least significant bit of the big-endian word of
// `word_bytes` bytes at byte `offset`.
//
// Everything here is bounds-safe: reads past the end of a buffer give 0 and
// writes past it are ignored, so a short packet or mailbox never overruns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibemu::ib {

// The accessors, Field, FieldValue and fill() are also reachable as
// ib::wire::..., so that a component can take just these with one
// `using namespace ib::wire;`.
inline namespace wire {

inline uint8_t get8(std::span<const uint8_t> b, size_t off) { return off < b.size() ? b[off] : 0; }
inline uint16_t get16(std::span<const uint8_t> b, size_t off) { return uint16_t(get8(b, off) << 8 | get8(b, off + 1)); }
inline uint32_t get32(std::span<const uint8_t> b, size_t off) { return uint32_t(get16(b, off)) << 16 | get16(b, off + 2); }
inline uint64_t get64(std::span<const uint8_t> b, size_t off) { return uint64_t(get32(b, off)) << 32 | get32(b, off + 4); }

inline void put8(std::span<uint8_t> b, size_t off, uint8_t v)
{
    if (off < b.size())
        b[off] = v;
}
inline void put16(std::span<uint8_t> b, size_t off, uint16_t v)
{
    put8(b, off, uint8_t(v >> 8));
    put8(b, off + 1, uint8_t(v));
}
inline void put32(std::span<uint8_t> b, size_t off, uint32_t v)
{
    put16(b, off, uint16_t(v >> 16));
    put16(b, off + 2, uint16_t(v));
}
inline void put64(std::span<uint8_t> b, size_t off, uint64_t v)
{
    put32(b, off, uint32_t(v >> 32));
    put32(b, off + 4, uint32_t(v));
}

// One field of a big-endian structure (see the top of this file).
struct Field {
    uint16_t offset;
    uint8_t word_bytes;  // 1, 2, 4 or 8
    uint8_t shift;
    uint8_t bits;

    // The whole big-endian word the field lives in.
    uint64_t word(std::span<const uint8_t> b) const
    {
        switch (word_bytes) {
        case 1: return get8(b, offset);
        case 2: return get16(b, offset);
        case 4: return get32(b, offset);
        default: return get64(b, offset);
        }
    }
    // The largest value the field holds.
    uint64_t mask() const { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }
    uint64_t get(std::span<const uint8_t> b) const { return (word(b) >> shift) & mask(); }
    // Read-modify-write of the word: the other fields in it are kept; a
    // value wider than the field is truncated to it.
    void set(std::span<uint8_t> b, uint64_t v) const
    {
        uint64_t m = mask() << shift;
        uint64_t w = (word(b) & ~m) | ((v << shift) & m);
        switch (word_bytes) {
        case 1: put8(b, offset, uint8_t(w)); break;
        case 2: put16(b, offset, uint16_t(w)); break;
        case 4: put32(b, offset, uint32_t(w)); break;
        default: put64(b, offset, w); break;
        }
    }
};

// A field and its value, for filling a buffer from a table.
struct FieldValue {
    Field field;
    uint64_t value;
};

template <size_t N>
void fill(std::span<uint8_t> b, const FieldValue (&table)[N])
{
    for (const FieldValue& fv : table)
        fv.field.set(b, fv.value);
}

}  // namespace wire
}  // namespace ibemu::ib
