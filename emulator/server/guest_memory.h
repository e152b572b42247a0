// SPDX-License-Identifier: GPL-2.0
//
// Guest RAM as the device model sees it: the guest's memfd, mapped shared,
// plus the guest-physical layout the shim announced in HELLO. Every DMA is
// checked against that layout; an access that leaves guest RAM (the PCI
// hole, a BAR of the device itself, beyond the top of memory) is refused and
// logged as a guest error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hca/pci_function.h"

namespace ibemu {

struct RamRegion {
    uint64_t gpa = 0;     // guest-physical base
    uint64_t size = 0;
    uint64_t offset = 0;  // offset of gpa in the memfd
};

class MemfdGuestMemory final : public GuestMemory {
public:
    // Maps the memfd (which it then owns and closes). The memfd must be
    // sealed against shrinking (F_SEAL_SHRINK, QEMU's memfd backend does
    // that by default) so the mapping cannot turn into SIGBUS under us.
    // Regions must lie inside the memfd and not overlap. Returns nullptr and
    // sets *error on failure; the fd is closed then too.
    static std::unique_ptr<MemfdGuestMemory> map(int memfd, const std::vector<RamRegion>& regions,
                                                 std::string who, std::string* error);
    ~MemfdGuestMemory() override;

    bool read(uint64_t gpa, void* dst, size_t len) override;
    bool write(uint64_t gpa, const void* src, size_t len) override;
    // Zero-copy: the mapping itself, for ranges inside guest RAM.
    uint8_t* map_range(uint64_t gpa, size_t len) override { return translate(gpa, len); }

    uint64_t memfd_size() const { return size_; }
    uint64_t refused() const { return refused_; }  // DMA errors so far

private:
    MemfdGuestMemory() = default;
    // Host pointer for [gpa, gpa+len) if it lies inside guest RAM, else
    // nullptr. A range may run across regions only where they are
    // contiguous in both spaces.
    uint8_t* translate(uint64_t gpa, size_t len) const;
    void refuse(const char* what, uint64_t gpa, size_t len);

    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    std::vector<RamRegion> regions_;  // sorted by gpa
    std::string who_;
    uint64_t refused_ = 0;
};

}  // namespace ibemu
