// SPDX-License-Identifier: GPL-2.0
//
// Big-endian field access for the fabric's wire formats. A layout is a table
// of Field{offset, word_bytes, shift, bits}: the field is `bits` wide, sits
// `shift` bits above the least significant bit of the big-endian word of
// `word_bytes` bytes at byte `offset`. Reads past the end of a buffer give 0
// and writes past it are ignored, so a short packet never overruns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibemu::fabric {

inline uint8_t be8(std::span<const uint8_t> b, size_t off) { return off < b.size() ? b[off] : 0; }
inline uint16_t be16(std::span<const uint8_t> b, size_t off) { return uint16_t(be8(b, off) << 8 | be8(b, off + 1)); }
inline uint32_t be32(std::span<const uint8_t> b, size_t off) { return uint32_t(be16(b, off)) << 16 | be16(b, off + 2); }
inline uint64_t be64(std::span<const uint8_t> b, size_t off) { return uint64_t(be32(b, off)) << 32 | be32(b, off + 4); }

inline void put_be8(std::span<uint8_t> b, size_t off, uint8_t v)
{
    if (off < b.size())
        b[off] = v;
}
inline void put_be16(std::span<uint8_t> b, size_t off, uint16_t v)
{
    put_be8(b, off, uint8_t(v >> 8));
    put_be8(b, off + 1, uint8_t(v));
}
inline void put_be32(std::span<uint8_t> b, size_t off, uint32_t v)
{
    put_be16(b, off, uint16_t(v >> 16));
    put_be16(b, off + 2, uint16_t(v));
}
inline void put_be64(std::span<uint8_t> b, size_t off, uint64_t v)
{
    put_be32(b, off, uint32_t(v >> 32));
    put_be32(b, off + 4, uint32_t(v));
}

struct Field {
    uint16_t offset;
    uint8_t word_bytes;  // 1, 2, 4 or 8
    uint8_t shift;
    uint8_t bits;

    uint64_t word(std::span<const uint8_t> b) const
    {
        switch (word_bytes) {
        case 1: return be8(b, offset);
        case 2: return be16(b, offset);
        case 4: return be32(b, offset);
        default: return be64(b, offset);
        }
    }
    uint64_t mask() const { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }
    uint64_t get(std::span<const uint8_t> b) const { return (word(b) >> shift) & mask(); }
    void set(std::span<uint8_t> b, uint64_t v) const
    {
        uint64_t m = mask() << shift;
        uint64_t w = (word(b) & ~m) | ((v << shift) & m);
        switch (word_bytes) {
        case 1: put_be8(b, offset, uint8_t(w)); break;
        case 2: put_be16(b, offset, uint16_t(w)); break;
        case 4: put_be32(b, offset, uint32_t(w)); break;
        default: put_be64(b, offset, w); break;
        }
    }
};

struct FieldValue {
    Field field;
    uint64_t value;
};

template <size_t N>
void fill_fields(std::span<uint8_t> b, const FieldValue (&table)[N])
{
    for (const FieldValue& fv : table)
        fv.field.set(b, fv.value);
}

}  // namespace ibemu::fabric
