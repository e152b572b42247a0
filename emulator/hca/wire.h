// SPDX-License-Identifier: GPL-2.0
//
// Big-endian wire-format helpers. The HCA speaks big-endian everywhere:
// mailboxes, contexts, EQEs, MADs. Layouts are described as tables of
// Field{offset, width-in-bits, shift} so a structure reads like the PRM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibemu::mthca {

inline uint8_t get8(std::span<const uint8_t> b, size_t off) { return off < b.size() ? b[off] : 0; }

inline uint16_t get16(std::span<const uint8_t> b, size_t off)
{
    return uint16_t(get8(b, off) << 8 | get8(b, off + 1));
}

inline uint32_t get32(std::span<const uint8_t> b, size_t off)
{
    return uint32_t(get16(b, off)) << 16 | get16(b, off + 2);
}

inline uint64_t get64(std::span<const uint8_t> b, size_t off)
{
    return uint64_t(get32(b, off)) << 32 | get32(b, off + 4);
}

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

// One field of a big-endian structure: `bits` wide, located in the
// big-endian word of `word_bytes` bytes at `offset`, `shift` bits up from
// that word's least significant bit.
struct Field {
    uint16_t offset;
    uint8_t word_bytes;  // 1, 2, 4 or 8
    uint8_t shift;
    uint8_t bits;

    uint64_t get(std::span<const uint8_t> b) const
    {
        uint64_t w = 0;
        switch (word_bytes) {
        case 1: w = get8(b, offset); break;
        case 2: w = get16(b, offset); break;
        case 4: w = get32(b, offset); break;
        default: w = get64(b, offset); break;
        }
        w >>= shift;
        return bits >= 64 ? w : (w & ((uint64_t(1) << bits) - 1));
    }

    void set(std::span<uint8_t> b, uint64_t v) const
    {
        uint64_t mask = bits >= 64 ? ~uint64_t(0) : ((uint64_t(1) << bits) - 1);
        mask <<= shift;
        uint64_t w = 0;
        switch (word_bytes) {
        case 1: w = get8(b, offset); break;
        case 2: w = get16(b, offset); break;
        case 4: w = get32(b, offset); break;
        default: w = get64(b, offset); break;
        }
        w = (w & ~mask) | ((v << shift) & mask);
        switch (word_bytes) {
        case 1: put8(b, offset, uint8_t(w)); break;
        case 2: put16(b, offset, uint16_t(w)); break;
        case 4: put32(b, offset, uint32_t(w)); break;
        default: put64(b, offset, w); break;
        }
    }
};

// A field and its value, for filling an outbox from a table.
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

// Integer log2 of a power of two; -1 if v is not one.
inline int exact_log2(uint64_t v)
{
    if (v == 0 || (v & (v - 1)))
        return -1;
    int l = 0;
    while (v > 1) {
        v >>= 1;
        ++l;
    }
    return l;
}

}  // namespace ibemu::mthca
