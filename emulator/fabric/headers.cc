// SPDX-License-Identifier: GPL-2.0
#include "fabric/headers.h"

#include <algorithm>
#include <cstring>

namespace ibemu::fabric {

PacketView view_packet(const Packet& p)
{
    PacketView v;
    size_t hdr_len = std::min<size_t>(p.hdr_len, Packet::kMaxHdr);
    std::span<const uint8_t> h(p.hdr.data(), hdr_len);
    v.total_len = unsigned(hdr_len + p.payload_len);
    if (hdr_len < lrh::kSize)
        return v;
    v.valid = true;
    v.vl = uint8_t(lrh::kVl.get(h));
    v.sl = uint8_t(lrh::kSl.get(h));
    v.lnh = uint8_t(lrh::kLnh.get(h));
    v.dlid = uint16_t(lrh::kDlid.get(h));
    v.slid = uint16_t(lrh::kSlid.get(h));
    v.pkt_len_words = uint16_t(lrh::kPktLen.get(h));
    unsigned off = lrh::kSize;
    if (v.lnh == lrh::kLnhGlobal)
        off += grh::kSize;
    if (v.lnh == lrh::kLnhLocal || v.lnh == lrh::kLnhGlobal) {
        // The BTH normally sits in hdr; read it from the flattened bytes
        // if a sender put it in the payload.
        uint8_t b[bth::kSize];
        std::span<uint8_t> bs(b, sizeof b);
        if (off + bth::kSize <= hdr_len) {
            std::memcpy(b, p.hdr.data() + off, bth::kSize);
        } else {
            uint8_t flat[lrh::kSize + grh::kSize + bth::kSize];
            if (flatten(p, flat) < off + bth::kSize)
                return v;
            std::memcpy(b, flat + off, bth::kSize);
        }
        v.has_bth = true;
        v.bth_offset = off;
        v.opcode = uint8_t(bth::kOpcode.get(bs));
        v.dest_qp = uint32_t(bth::kDestQp.get(bs));
        v.pkey = uint16_t(bth::kPkey.get(bs));
    }
    return v;
}

size_t flatten(const Packet& p, std::span<uint8_t> dst)
{
    // Defensive against an inconsistent sender: never past hdr[] or seg[].
    size_t n = std::min<size_t>({p.hdr_len, Packet::kMaxHdr, dst.size()});
    std::memcpy(dst.data(), p.hdr.data(), n);
    for (unsigned i = 0; i < p.nseg && i < Packet::kMaxSegs && n < dst.size(); ++i) {
        size_t c = std::min<size_t>(p.seg[i].len, dst.size() - n);
        std::memcpy(dst.data() + n, p.seg[i].data, c);
        n += c;
    }
    return n;
}

void build_ud(Packet& p, const UdAddress& a, std::span<const uint8_t> payload)
{
    p.hdr.fill(0);
    std::span<uint8_t> h(p.hdr.data(), p.hdr.size());
    unsigned pad = (4 - payload.size() % 4) % 4;
    unsigned hdr = lrh::kSize + bth::kSize + deth::kSize;
    const FieldValue t[] = {
        {lrh::kVl, a.vl},
        {lrh::kLver, 0},
        {lrh::kSl, a.sl},
        {lrh::kLnh, lrh::kLnhLocal},
        {lrh::kDlid, a.dlid},
        {lrh::kPktLen, (hdr + payload.size() + pad + 4) / 4},
        {lrh::kSlid, a.slid},
        {Field{lrh::kSize + 0, 1, 0, 8}, bth::kOpUdSendOnly},
        {Field{lrh::kSize + 1, 1, 4, 2}, pad},
        {Field{lrh::kSize + 2, 2, 0, 16}, a.pkey},
        {Field{lrh::kSize + 4, 4, 0, 24}, a.dest_qp},
        {Field{lrh::kSize + bth::kSize + 0, 4, 0, 32}, a.qkey},
        {Field{lrh::kSize + bth::kSize + 4, 4, 0, 24}, a.src_qp},
    };
    fill(h, t);
    p.hdr_len = uint16_t(hdr);
    p.vl = a.vl;
    p.nseg = payload.empty() ? 0 : 1;
    p.seg[0] = PayloadSeg{payload.data(), uint32_t(payload.size())};
    p.payload_len = uint32_t(payload.size());
}

}  // namespace ibemu::fabric
