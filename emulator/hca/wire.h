// SPDX-License-Identifier: GPL-2.0
//
// Big-endian wire-format helpers. The HCA speaks big-endian everywhere:
// mailboxes, contexts, EQEs, MADs. Layouts are described as tables of
// Field{offset, word_bytes, shift, bits} so a structure reads like the PRM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ib/wire.h"

namespace ibemu::mthca {

// The big-endian accessors and the Field table type are shared with the
// fabric (emulator/ib/wire.h): reads past the end of a buffer give 0,
// writes past it are ignored.
using namespace ib::wire;

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
