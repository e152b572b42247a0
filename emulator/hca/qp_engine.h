// SPDX-License-Identifier: GPL-2.0
//
// Private to the QP engine (qp_engine.cc and its roles, qp_requester.cc,
// qp_responder.cc, qp_completer.cc, qp_packet.cc): the parsed views of
// a send WQE and of a received packet, the payload gather helper, and
// big-endian accessors for raw pointers.
#pragma once

#include <algorithm>
#include <cstring>

#include "hca/core.h"
#include "hca/iba.h"

namespace ibemu::mthca {
namespace qpe {

inline uint32_t be32(const uint8_t* p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }
inline void wbe16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8), p[1] = uint8_t(v); }
inline void wbe32(uint8_t* p, uint32_t v) { wbe16(p, uint16_t(v >> 16)), wbe16(p + 2, uint16_t(v)); }
inline void wbe64(uint8_t* p, uint64_t v) { wbe32(p, uint32_t(v >> 32)), wbe32(p + 4, uint32_t(v)); }

// MPT access flags (mthca_provider.h).
inline constexpr uint32_t kMptLocalWrite = 1u << 11, kMptRemoteRead = 1u << 12, kMptRemoteWrite = 1u << 13,
                          kMptAtomic = 1u << 14;
inline constexpr unsigned kMaxWqeBytes = 2048;
inline constexpr uint32_t kInlineKey = 0xffffffffu;  // an inline SGE: addr = offset in the WQE copy

// 4.096 us * 2^ackto; 0 = no timeout.
inline uint64_t ack_timeout_ns(uint8_t ackto) { return ackto ? (uint64_t(4096) << (ackto > 31 ? 31 : ackto)) : 0; }

inline bool is_read_or_atomic(uint8_t op)
{
    return op == wqe::kRdmaRead || op == wqe::kAtomicCs || op == wqe::kAtomicFa;
}

}  // namespace qpe

struct Core::WqeView {
    uint32_t off = 0;
    uint8_t op = 0;
    uint8_t size = 0;
    uint32_t flags = 0;
    uint32_t imm = 0;
    uint32_t next_off = 0;
    uint8_t next_op = 0, next_size = 0;
    uint64_t raddr = 0;
    uint32_t rkey = 0;
    uint64_t swap_add = 0, compare = 0;
    const uint8_t* av = nullptr;  // UD address vector (32 bytes, inside buf)
    uint32_t dqpn = 0, qkey = 0;
    unsigned nsge = 0;
    Sge sge[kMaxSge];
    uint64_t len = 0;
    uint8_t buf[qpe::kMaxWqeBytes];
};

struct Core::RxCtx {
    const Packet* p = nullptr;
    uint8_t vl = 0, sl = 0;
    uint16_t dlid = 0, slid = 0;
    const uint8_t* grh = nullptr;
    uint8_t opcode = 0;
    bool se = false;
    bool migreq = false;  // BTH MigReq
    uint8_t pad = 0;
    uint16_t pkey = 0;
    uint32_t dqpn = 0;
    bool ackreq = false;
    uint32_t psn = 0;
    const uint8_t* ext = nullptr;  // headers after the BTH
    unsigned ext_len = 0;
    uint32_t pay_len = 0;          // payload without padding
    uint8_t pkey_index = 0;
};

// Builds a packet's payload list: pointers into guest RAM where it maps,
// copies into a bounce buffer where it does not. One segment is kept free
// for the padding finish_packet adds.
struct Core::Gather {
    Core& c;
    Packet& p;
    uint8_t* bounce;
    uint32_t bused = 0;
    bool ok = true;

    bool append(const uint8_t* d, uint32_t n)
    {
        if (p.nseg && p.seg[p.nseg - 1].data + p.seg[p.nseg - 1].len == d)
            p.seg[p.nseg - 1].len += n;
        else if (p.nseg < Packet::kMaxSegs - 1)
            p.seg[p.nseg++] = {d, n};
        else
            return false;
        p.payload_len += n;
        return true;
    }
    void seg(const uint8_t* d, uint32_t n)
    {
        if (!n || append(d, n))
            return;
        copy(d, n);
    }
    void copy(const uint8_t* d, uint32_t n)
    {
        if (bused + n > 4096) {
            ok = false;
            return;
        }
        std::memcpy(bounce + bused, d, n);
        const uint8_t* at = bounce + bused;
        bused += n;
        if (!append(at, n))
            ok = false;
    }
    bool gpa(uint64_t a, uint32_t n)
    {
        if (!n)
            return ok;
        if (const uint8_t* m = c.mem_.map_range(a, n)) {
            seg(m, n);
            return ok;
        }
        if (bused + n > 4096 || !c.mem_.read(a, bounce + bused, n))
            return ok = false;
        const uint8_t* at = bounce + bused;
        bused += n;
        if (!append(at, n))
            ok = false;
        return ok;
    }
};

template <class F>
bool Core::mr_walk(const Mpt& m, uint64_t va, uint64_t len, F&& fn)
{
    if (m.flags & mpt::kFlagPhysical)
        return len == 0 || fn(va, uint32_t(len));
    while (len) {
        if (m.tc_gen != tpt_gen_ || va < m.tc_va || va - m.tc_va >= m.tc_len) {
            if (!mr_fill_cache(m, va))
                return false;
        }
        uint64_t in = va - m.tc_va;
        uint64_t n = std::min<uint64_t>(len, m.tc_len - in);
        if (!fn(m.tc_phys + in, uint32_t(n)))
            return false;
        va += n;
        len -= n;
    }
    return true;
}

}  // namespace ibemu::mthca
