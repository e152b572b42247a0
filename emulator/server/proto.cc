// SPDX-License-Identifier: GPL-2.0
#include "server/proto.h"

#include <algorithm>
#include <cstdio>

namespace ibemu::shim {
namespace {

std::string fmt(const char* f, auto... args)
{
    char buf[200];
    snprintf(buf, sizeof(buf), f, args...);
    return buf;
}

bool all_zero(const void* p, size_t n)
{
    const auto* b = static_cast<const uint8_t*>(p);
    return std::all_of(b, b + n, [](uint8_t c) { return c == 0; });
}

bool valid_size(unsigned size, bool allow8)
{
    return size == 1 || size == 2 || size == 4 || (allow8 && size == 8);
}

}  // namespace

void FrameBuffer::append(const void* data, size_t len)
{
    if (len == 0)
        return;  // memcpy to an empty buffer's null data() is undefined even for 0 bytes
    if (used_ + len > buf_.size() && start_) {
        std::memmove(buf_.data(), buf_.data() + start_, used_ - start_);
        used_ -= start_;
        start_ = 0;
    }
    if (used_ + len > buf_.size())
        buf_.resize(std::max(used_ + len, 2 * buf_.size()));
    std::memcpy(buf_.data() + used_, data, len);
    used_ += len;
}

FrameBuffer::Result FrameBuffer::next(const uint8_t** msg, size_t* len, std::string* error)
{
    if (start_ == used_)
        start_ = used_ = 0;
    if (buffered() < sizeof(ibemu_shim_hdr))
        return Result::NeedMore;
    auto h = decode<ibemu_shim_hdr>(buf_.data() + start_);
    std::string why = check_header(h);
    if (!why.empty()) {
        if (error)
            *error = why;
        return Result::Error;
    }
    if (buffered() < h.length)
        return Result::NeedMore;
    *msg = buf_.data() + start_;
    *len = h.length;
    start_ += h.length;
    return Result::Message;
}

std::string check_header(const ibemu_shim_hdr& h)
{
    uint32_t want = ibemu_shim_msg_size(h.type);
    if (!want)
        return fmt("unknown message type %u", unsigned(h.type));
    if (h.length != want)
        return fmt("message type %u has length %u, expected %u", unsigned(h.type), h.length, want);
    if (h.flags || h.reserved)
        return fmt("message type %u has nonzero flags/reserved", unsigned(h.type));
    return {};
}

std::string check_from_shim(const uint8_t* msg, size_t len)
{
    if (len < sizeof(ibemu_shim_hdr))
        return "short message";
    auto h = decode<ibemu_shim_hdr>(msg);
    std::string why = check_header(h);
    if (!why.empty())
        return why;
    if (len != h.length)
        return "length does not match the header";

    switch (h.type) {
    case IBEMU_MSG_HELLO: {
        auto m = decode<ibemu_msg_hello>(msg);
        if (m.reserved)
            return "HELLO reserved field is nonzero";
        return {};
    }
    case IBEMU_MSG_CFG_WRITE: {
        auto m = decode<ibemu_msg_cfg_write>(msg);
        if (!valid_size(m.size, false) || m.offset + m.size > IBEMU_SHIM_CONFIG_SIZE || m.reserved)
            return fmt("bad CFG_WRITE offset 0x%x size %u", unsigned(m.offset), unsigned(m.size));
        if (m.size < 4 && (m.value >> (8 * m.size)))
            return "CFG_WRITE value wider than its size";
        return {};
    }
    case IBEMU_MSG_CFG_READ: {
        auto m = decode<ibemu_msg_cfg_read>(msg);
        if (!valid_size(m.size, false) || m.offset + m.size > IBEMU_SHIM_CONFIG_SIZE || m.reserved)
            return fmt("bad CFG_READ offset 0x%x size %u", unsigned(m.offset), unsigned(m.size));
        return {};
    }
    case IBEMU_MSG_MMIO_WRITE: {
        auto m = decode<ibemu_msg_mmio_write>(msg);
        if (m.bar >= IBEMU_SHIM_NUM_BARS || !valid_size(m.size, true) || !all_zero(m.reserved, sizeof(m.reserved)))
            return fmt("bad MMIO_WRITE bar %u size %u", unsigned(m.bar), unsigned(m.size));
        if (m.size < 8 && (m.value >> (8 * m.size)))
            return "MMIO_WRITE value wider than its size";
        return {};
    }
    case IBEMU_MSG_MMIO_READ: {
        auto m = decode<ibemu_msg_mmio_read>(msg);
        if (m.bar >= IBEMU_SHIM_NUM_BARS || !valid_size(m.size, true) || !all_zero(m.reserved, sizeof(m.reserved)))
            return fmt("bad MMIO_READ bar %u size %u", unsigned(m.bar), unsigned(m.size));
        return {};
    }
    case IBEMU_MSG_RESET:
    case IBEMU_MSG_SYNC:
        return {};
    default:
        return fmt("message type %u is not one a shim sends", unsigned(h.type));
    }
}

std::string hello_node(const ibemu_msg_hello& h)
{
    return std::string(h.node, strnlen(h.node, sizeof(h.node)));
}

std::string check_hello_layout(const ibemu_msg_hello& h, uint64_t memfd_size)
{
    size_t nlen = strnlen(h.node, sizeof(h.node));
    if (nlen == 0 || nlen == sizeof(h.node))
        return "node name empty or not NUL-terminated";
    for (size_t i = 0; i < nlen; ++i) {
        char c = h.node[i];
        if (c <= ' ' || c > '~')
            return "node name has a space or non-printable character";
    }
    if (!all_zero(h.node + nlen, sizeof(h.node) - nlen))
        return "node name is not NUL-padded";
    if (h.nregions == 0 || h.nregions > IBEMU_SHIM_MAX_REGIONS)
        return fmt("bad region count %u", h.nregions);
    for (uint32_t i = h.nregions; i < IBEMU_SHIM_MAX_REGIONS; ++i)
        if (!all_zero(&h.regions[i], sizeof(h.regions[i])))
            return "unused region slots are not zero";
    for (uint32_t i = 0; i < h.nregions; ++i) {
        const ibemu_shim_region& r = h.regions[i];
        if (!r.size || r.gpa + r.size < r.gpa || r.offset + r.size < r.offset)
            return fmt("region %u is empty or wraps", i);
        if (r.offset + r.size > memfd_size)
            return fmt("region %u ends at memfd offset 0x%llx, beyond its size 0x%llx", i,
                       (unsigned long long)(r.offset + r.size), (unsigned long long)memfd_size);
        for (uint32_t j = 0; j < i; ++j) {
            const ibemu_shim_region& o = h.regions[j];
            if (r.gpa < o.gpa + o.size && o.gpa < r.gpa + r.size)
                return fmt("regions %u and %u overlap in guest-physical space", j, i);
            if (r.offset < o.offset + o.size && o.offset < r.offset + r.size)
                return fmt("regions %u and %u overlap in the memfd", j, i);
        }
    }
    return {};
}

ibemu_msg_welcome make_welcome(uint32_t tag, const PciIdentity& id)
{
    ibemu_msg_welcome w;
    set_header(w, IBEMU_MSG_WELCOME, tag);
    w.status = IBEMU_WELCOME_OK;
    w.version = IBEMU_SHIM_VERSION;
    std::memcpy(w.config, id.config.data(), sizeof(w.config));
    for (unsigned i = 0; i < IBEMU_SHIM_NUM_BARS; ++i) {
        w.bars[i].size = id.bars[i].size;
        w.bars[i].flags = (id.bars[i].is64 ? IBEMU_BAR_64BIT : 0) | (id.bars[i].prefetch ? IBEMU_BAR_PREFETCH : 0);
    }
    w.msix_vectors = id.msix_vectors;
    w.msix_cap_offset = id.msix_cap_offset;
    w.msix_table_bar = id.msix_table_bar;
    w.msix_table_offset = id.msix_table_offset;
    w.msix_pba_bar = id.msix_pba_bar;
    w.msix_pba_offset = id.msix_pba_offset;
    return w;
}

ibemu_msg_welcome make_refusal(uint32_t tag, int32_t status, const std::string& text)
{
    ibemu_msg_welcome w;
    set_header(w, IBEMU_MSG_WELCOME, tag);
    w.status = status;
    w.version = IBEMU_SHIM_VERSION;
    snprintf(w.text, sizeof(w.text), "%s", text.c_str());
    return w;
}

}  // namespace ibemu::shim
