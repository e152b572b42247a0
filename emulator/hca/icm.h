// SPDX-License-Identifier: GPL-2.0
//
// InfiniHost Context Memory (ICM) of a mem-free HCA.
//
// The HCA keeps its context tables in a private virtual address space whose
// pages live in host RAM. The driver hands pages over with MAP_ICM (virtual
// -> guest-physical), MAP_ICM_AUX (firmware bookkeeping, no virtual address)
// and MAP_FA (the firmware area). Each mailbox entry is 16 bytes: the ICM
// virtual address (big-endian u64), then the physical address with
// log2(size / 4 KiB) in its low 12 bits (mthca_cmd.c, mthca_map_cmd()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "hca/pci_function.h"
#include "hca/status.h"

namespace ibemu::mthca {

// One parsed mapping entry.
struct IcmChunk {
    uint64_t virt = 0;
    uint64_t phys = 0;
    uint64_t size = 0;
};

// Parse and validate a MAP_* mailbox of `nent` entries. `need_virt` selects
// whether the virtual half is meaningful (MAP_ICM) or ignored (MAP_FA,
// MAP_ICM_AUX). On success fills out[0..nent).
Status parse_map_mailbox(std::span<const uint8_t> box, unsigned nent, bool need_virt, IcmChunk* out,
                         std::string* why);

// A set of physical pages handed to the firmware without virtual addresses
// (firmware area, aux area).
class PhysArea {
public:
    void clear() { chunks_.clear(), pages_ = 0; }
    bool empty() const { return chunks_.empty(); }
    uint64_t pages() const { return pages_; }
    // Fails (false) if the area would exceed max_pages or overlap itself.
    bool add(const IcmChunk* c, unsigned n, uint64_t max_pages);

private:
    std::map<uint64_t, uint64_t> chunks_;  // phys -> size
    uint64_t pages_ = 0;
};

class Icm {
public:
    explicit Icm(GuestMemory& mem) : mem_(mem) {}

    void reset();
    // SET_ICM_SIZE: the virtual space is [0, size).
    void set_size(uint64_t size) { size_ = size; }
    uint64_t size() const { return size_; }

    // MAP_ICM: all entries are validated first, then applied, so a failing
    // command leaves the map unchanged.
    Status map(const IcmChunk* c, unsigned n, std::string* why);
    // UNMAP_ICM of `pages` 4 KiB pages from virt. Unmapped holes are
    // skipped; fails if nothing at all was mapped there.
    Status unmap(uint64_t virt, uint64_t pages, std::string* why);

    // Translate one ICM virtual address; `contig` gets the number of bytes
    // physically contiguous from there (within the extent).
    bool translate(uint64_t virt, uint64_t* phys, uint64_t* contig) const;
    bool is_mapped(uint64_t virt, uint64_t len) const;
    // Access ICM through the map; false on unmapped ICM or a DMA fault.
    bool read(uint64_t virt, void* dst, size_t len) const;
    bool write(uint64_t virt, const void* src, size_t len);

    size_t extent_count() const { return map_.size(); }
    uint64_t mapped_bytes() const { return mapped_; }

    // Upper bound on the number of extents we keep, whatever the guest does.
    static constexpr size_t kMaxExtents = 1u << 20;

private:
    struct Extent {
        uint64_t phys;
        uint64_t size;
    };
    GuestMemory& mem_;
    uint64_t size_ = 0;
    uint64_t mapped_ = 0;
    std::map<uint64_t, Extent> map_;  // virt -> extent, non-overlapping
};

}  // namespace ibemu::mthca
