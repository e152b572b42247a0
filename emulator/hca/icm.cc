// SPDX-License-Identifier: GPL-2.0
#include "hca/icm.h"

#include <cstdio>

#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {
namespace {

// Largest chunk one entry may describe: 2^20 pages (4 GiB). The driver
// never maps more than 256 KiB at once.
constexpr unsigned kMaxChunkLog = 20;

std::string fmt(const char* f, unsigned long long a, unsigned long long b = 0)
{
    char buf[160];
    snprintf(buf, sizeof buf, f, a, b);
    return buf;
}

}  // namespace

Status parse_map_mailbox(std::span<const uint8_t> box, unsigned nent, bool need_virt, IcmChunk* out,
                         std::string* why)
{
    if (nent == 0 || nent * 16ull > box.size()) {
        *why = fmt("bad entry count %llu", nent);
        return Status::BadParam;
    }
    for (unsigned i = 0; i < nent; ++i) {
        uint64_t virt = get64(box, i * 16);
        uint64_t pa = get64(box, i * 16 + 8);
        unsigned lg = unsigned(pa & (kIcmPageSize - 1));
        uint64_t phys = pa & ~(kIcmPageSize - 1);
        if (lg > kMaxChunkLog) {
            *why = fmt("entry %llu: chunk log %llu too large", i, lg);
            return Status::BadParam;
        }
        uint64_t size = kIcmPageSize << lg;
        if (phys & (size - 1)) {
            *why = fmt("entry %llu: phys 0x%llx not aligned to its size", i, phys);
            return Status::BadParam;
        }
        if (phys + size < phys) {
            *why = fmt("entry %llu: phys 0x%llx wraps", i, phys);
            return Status::BadParam;
        }
        if (need_virt && (virt & (size - 1))) {
            *why = fmt("entry %llu: virt 0x%llx not aligned to its size", i, virt);
            return Status::BadParam;
        }
        out[i] = {need_virt ? virt : 0, phys, size};
    }
    return Status::Ok;
}

bool PhysArea::add(const IcmChunk* c, unsigned n, uint64_t max_pages)
{
    uint64_t add_pages = 0;
    for (unsigned i = 0; i < n; ++i)
        add_pages += c[i].size >> kIcmPageShift;
    if (pages_ + add_pages > max_pages)
        return false;
    for (unsigned i = 0; i < n; ++i) {
        // Reject overlap with what we already hold (and within the batch,
        // since earlier entries are inserted first).
        auto it = chunks_.upper_bound(c[i].phys);
        if (it != chunks_.end() && it->first < c[i].phys + c[i].size)
            return false;
        if (it != chunks_.begin()) {
            --it;
            if (it->first + it->second > c[i].phys)
                return false;
        }
        chunks_[c[i].phys] = c[i].size;
    }
    pages_ += add_pages;
    return true;
}

void Icm::reset()
{
    size_ = 0;
    mapped_ = 0;
    map_.clear();
}

Status Icm::map(const IcmChunk* c, unsigned n, std::string* why)
{
    if (map_.size() + n > kMaxExtents) {
        *why = "too many ICM extents";
        return Status::ExceedLim;
    }
    for (unsigned i = 0; i < n; ++i) {
        if (c[i].virt >= size_ || c[i].size > size_ - c[i].virt) {
            *why = fmt("virt 0x%llx beyond ICM size 0x%llx", c[i].virt, size_);
            return Status::BadParam;
        }
        auto it = map_.upper_bound(c[i].virt);
        bool overlap = it != map_.end() && it->first < c[i].virt + c[i].size;
        if (!overlap && it != map_.begin()) {
            --it;
            overlap = it->first + it->second.size > c[i].virt;
        }
        // Overlap within the batch itself.
        for (unsigned j = 0; j < i && !overlap; ++j)
            overlap = c[j].virt < c[i].virt + c[i].size && c[i].virt < c[j].virt + c[j].size;
        if (overlap) {
            *why = fmt("virt 0x%llx (size 0x%llx) already mapped", c[i].virt, c[i].size);
            return Status::BadParam;
        }
    }
    for (unsigned i = 0; i < n; ++i) {
        map_[c[i].virt] = {c[i].phys, c[i].size};
        mapped_ += c[i].size;
    }
    return Status::Ok;
}

Status Icm::unmap(uint64_t virt, uint64_t pages, std::string* why)
{
    if (pages == 0 || pages > (uint64_t(1) << 40) || (virt & (kIcmPageSize - 1))) {
        *why = fmt("bad unmap virt 0x%llx pages %llu", virt, pages);
        return Status::BadParam;
    }
    uint64_t end = virt + (pages << kIcmPageShift);
    if (end < virt) {
        *why = "unmap range wraps";
        return Status::BadParam;
    }
    bool any = false;
    auto it = map_.upper_bound(virt);
    if (it != map_.begin())
        --it;
    while (it != map_.end() && it->first < end) {
        uint64_t ev = it->first;
        Extent e = it->second;
        if (ev + e.size <= virt) {
            ++it;
            continue;
        }
        any = true;
        it = map_.erase(it);
        mapped_ -= e.size;
        // Keep the parts outside [virt, end).
        if (ev < virt) {
            map_[ev] = {e.phys, virt - ev};
            mapped_ += virt - ev;
        }
        if (ev + e.size > end) {
            uint64_t cut = end - ev;
            it = map_.emplace(end, Extent{e.phys + cut, e.size - cut}).first;
            mapped_ += e.size - cut;
            ++it;
        }
    }
    if (!any) {
        *why = fmt("nothing mapped at 0x%llx (%llu pages)", virt, pages);
        return Status::BadParam;
    }
    return Status::Ok;
}

bool Icm::translate(uint64_t virt, uint64_t* phys, uint64_t* contig) const
{
    auto it = map_.upper_bound(virt);
    if (it == map_.begin())
        return false;
    --it;
    uint64_t off = virt - it->first;
    if (off >= it->second.size)
        return false;
    *phys = it->second.phys + off;
    *contig = it->second.size - off;
    return true;
}

bool Icm::is_mapped(uint64_t virt, uint64_t len) const
{
    while (len) {
        uint64_t phys, contig;
        if (!translate(virt, &phys, &contig))
            return false;
        uint64_t n = contig < len ? contig : len;
        virt += n;
        len -= n;
    }
    return true;
}

bool Icm::read(uint64_t virt, void* dst, size_t len) const
{
    auto* p = static_cast<uint8_t*>(dst);
    while (len) {
        uint64_t phys, contig;
        if (!translate(virt, &phys, &contig))
            return false;
        size_t n = contig < len ? size_t(contig) : len;
        if (!mem_.read(phys, p, n))
            return false;
        virt += n;
        p += n;
        len -= n;
    }
    return true;
}

bool Icm::write(uint64_t virt, const void* src, size_t len)
{
    auto* p = static_cast<const uint8_t*>(src);
    while (len) {
        uint64_t phys, contig;
        if (!translate(virt, &phys, &contig))
            return false;
        size_t n = contig < len ? size_t(contig) : len;
        if (!mem_.write(phys, p, n))
            return false;
        virt += n;
        p += n;
        len -= n;
    }
    return true;
}

}  // namespace ibemu::mthca
