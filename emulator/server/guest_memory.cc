// SPDX-License-Identifier: GPL-2.0
#include "server/guest_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace ibemu {

std::unique_ptr<MemfdGuestMemory> MemfdGuestMemory::map(int memfd, const std::vector<RamRegion>& regions,
                                                        std::string who, std::string* error)
{
    auto fail = [&](std::string why) -> std::unique_ptr<MemfdGuestMemory> {
        if (memfd >= 0)
            close(memfd);
        if (error)
            *error = std::move(why);
        return nullptr;
    };

    struct stat st;
    if (fstat(memfd, &st) < 0)
        return fail(std::string("fstat of the memfd: ") + strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_size <= 0)
        return fail("the guest RAM fd is not a non-empty memfd");
    int seals = fcntl(memfd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
        return fail("the guest RAM memfd is not sealed against shrinking (use QEMU's memory-backend-memfd, seal=on)");
    if (regions.empty())
        return fail("no RAM regions");

    std::vector<RamRegion> sorted = regions;
    std::sort(sorted.begin(), sorted.end(), [](const RamRegion& a, const RamRegion& b) { return a.gpa < b.gpa; });
    const uint64_t fsize = uint64_t(st.st_size);
    std::vector<RamRegion> merged;
    for (const RamRegion& r : sorted) {
        if (!r.size || r.gpa + r.size < r.gpa || r.offset + r.size < r.offset || r.offset + r.size > fsize)
            return fail("a RAM region is empty, wraps or lies outside the memfd");
        if (!merged.empty()) {
            RamRegion& last = merged.back();
            if (r.gpa < last.gpa + last.size)
                return fail("RAM regions overlap");
            if (r.gpa == last.gpa + last.size && r.offset == last.offset + last.size) {
                last.size += r.size;
                continue;
            }
        }
        merged.push_back(r);
    }

    void* p = mmap(nullptr, fsize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (p == MAP_FAILED)
        return fail(std::string("mmap of guest RAM: ") + strerror(errno));

    std::unique_ptr<MemfdGuestMemory> m(new MemfdGuestMemory());
    m->fd_ = memfd;
    m->base_ = static_cast<uint8_t*>(p);
    m->size_ = fsize;
    m->regions_ = std::move(merged);
    m->who_ = std::move(who);
    return m;
}

MemfdGuestMemory::~MemfdGuestMemory()
{
    if (base_)
        munmap(base_, size_);
    if (fd_ >= 0)
        close(fd_);
}

uint8_t* MemfdGuestMemory::translate(uint64_t gpa, size_t len) const
{
    if (gpa + len < gpa)
        return nullptr;
    // the last region starting at or below gpa
    auto it = std::upper_bound(regions_.begin(), regions_.end(), gpa,
                               [](uint64_t a, const RamRegion& r) { return a < r.gpa; });
    if (it == regions_.begin())
        return nullptr;
    --it;
    if (gpa + len > it->gpa + it->size)
        return nullptr;
    return base_ + it->offset + (gpa - it->gpa);
}

void MemfdGuestMemory::refuse(const char* what, uint64_t gpa, size_t len)
{
    ++refused_;
    IBEMU_GUEST_ERROR(who_, "DMA %s of %zu bytes at 0x%llx refused: not guest RAM", what, len,
                      (unsigned long long)gpa);
}

bool MemfdGuestMemory::read(uint64_t gpa, void* dst, size_t len)
{
    uint8_t* p = translate(gpa, len);
    if (!p) {
        refuse("read", gpa, len);
        return false;
    }
    std::memcpy(dst, p, len);
    return true;
}

bool MemfdGuestMemory::write(uint64_t gpa, const void* src, size_t len)
{
    uint8_t* p = translate(gpa, len);
    if (!p) {
        refuse("write", gpa, len);
        return false;
    }
    std::memcpy(p, src, len);
    return true;
}

}  // namespace ibemu
