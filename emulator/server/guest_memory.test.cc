// SPDX-License-Identifier: GPL-2.0
#include "server/guest_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/log.h"

namespace ibemu {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

// A memfd like QEMU's memory-backend-memfd makes: sealed against resizing.
int sealed_memfd(uint64_t size, bool seal = true)
{
    int fd = memfd_create("guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, off_t(size)), 0);
    if (seal) {
        EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
    }
    return fd;
}

class GuestMemoryTest : public ::testing::Test {
protected:
    // 2 MiB of RAM: the first MiB at gpa 0, the second at 4 GiB, with a
    // "PCI hole" between them, like the pc machine's layout scaled down.
    void SetUp() override
    {
        fd_ = sealed_memfd(2 * MiB);
        int dup_fd = dup(fd_);
        std::string err;
        mem_ = MemfdGuestMemory::map(dup_fd, {{0, MiB, 0}, {4 * GiB, MiB, MiB}}, "test", &err);
        ASSERT_TRUE(mem_) << err;
        Log::reset_counters();
    }
    void TearDown() override { close(fd_); }

    uint32_t peek(uint64_t memfd_off)
    {
        uint32_t v = 0;
        EXPECT_EQ(pread(fd_, &v, sizeof(v), off_t(memfd_off)), ssize_t(sizeof(v)));
        return v;
    }

    int fd_ = -1;
    std::unique_ptr<MemfdGuestMemory> mem_;
};

TEST_F(GuestMemoryTest, AccessesInsideRegionsReachTheMemfd)
{
    uint32_t v = 0x11223344;
    ASSERT_TRUE(mem_->write(0x1000, &v, 4));
    EXPECT_EQ(peek(0x1000), 0x11223344u);

    v = 0xa5a5a5a5;
    ASSERT_TRUE(mem_->write(4 * GiB + 0x20, &v, 4));
    EXPECT_EQ(peek(MiB + 0x20), 0xa5a5a5a5u) << "above-4G RAM sits after the low part in the memfd";

    uint32_t back = 0;
    ASSERT_TRUE(mem_->read(4 * GiB + 0x20, &back, 4));
    EXPECT_EQ(back, 0xa5a5a5a5u);
    // the very last bytes of each region
    ASSERT_TRUE(mem_->read(MiB - 4, &back, 4));
    ASSERT_TRUE(mem_->read(4 * GiB + MiB - 4, &back, 4));
    EXPECT_EQ(mem_->refused(), 0u);
    EXPECT_EQ(Log::guest_errors(), 0u);
}

TEST_F(GuestMemoryTest, AccessesOutsideGuestRamAreRefused)
{
    uint64_t v = ~0ull;
    EXPECT_FALSE(mem_->write(MiB - 4, &v, 8)) << "across the end of the low region";
    EXPECT_FALSE(mem_->read(MiB, &v, 4)) << "just past the low region";
    EXPECT_FALSE(mem_->write(0xfe000000, &v, 8)) << "a BAR in the PCI hole";
    EXPECT_FALSE(mem_->read(4 * GiB - 4, &v, 8)) << "into the high region from below";
    EXPECT_FALSE(mem_->write(4 * GiB + MiB - 4, &v, 8)) << "past the top of RAM";
    EXPECT_FALSE(mem_->read(~0ull - 2, &v, 8)) << "wrapping";
    EXPECT_EQ(mem_->refused(), 6u);
    EXPECT_EQ(Log::guest_errors(), 6u) << "each refusal is a logged guest error";
    EXPECT_EQ(peek(MiB - 4), 0u) << "a refused write leaves RAM alone";
}

TEST_F(GuestMemoryTest, MapRangeGivesTheMappingOnlyInsideRam)
{
    uint8_t* p = mem_->map_range(4 * GiB + 0x40, 16);
    ASSERT_NE(p, nullptr);
    p[0] = 0x5a;
    EXPECT_EQ(peek(MiB + 0x40) & 0xff, 0x5au) << "the pointer is the memfd mapping";
    EXPECT_EQ(mem_->map_range(MiB - 4, 8), nullptr) << "across the end of the low region";
    EXPECT_EQ(mem_->map_range(0xfe000000, 4), nullptr) << "a BAR in the PCI hole";
    EXPECT_EQ(mem_->map_range(~0ull - 2, 8), nullptr) << "wrapping";
}

TEST(GuestMemory, ContiguousRegionsActAsOne)
{
    int fd = sealed_memfd(2 * MiB);
    std::string err;
    auto mem = MemfdGuestMemory::map(fd, {{MiB, MiB, MiB}, {0, MiB, 0}}, "test", &err);
    ASSERT_TRUE(mem) << err;
    uint64_t v = 0x0102030405060708ull;
    EXPECT_TRUE(mem->write(MiB - 4, &v, 8));
    uint64_t back = 0;
    EXPECT_TRUE(mem->read(MiB - 4, &back, 8));
    EXPECT_EQ(back, v);
}

TEST(GuestMemory, MapRefusesBadSetups)
{
    std::string err;
    EXPECT_FALSE(MemfdGuestMemory::map(sealed_memfd(MiB, false), {{0, MiB, 0}}, "t", &err));
    EXPECT_NE(err.find("sealed"), std::string::npos) << err;
    EXPECT_FALSE(MemfdGuestMemory::map(sealed_memfd(MiB), {{0, 2 * MiB, 0}}, "t", &err)) << "beyond the memfd";
    EXPECT_FALSE(MemfdGuestMemory::map(sealed_memfd(2 * MiB), {{0, MiB, 0}, {MiB / 2, MiB, MiB}}, "t", &err))
        << "overlapping regions";
    EXPECT_FALSE(MemfdGuestMemory::map(sealed_memfd(MiB), {}, "t", &err)) << "no regions";
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    close(pipefd[1]);
    EXPECT_FALSE(MemfdGuestMemory::map(pipefd[0], {{0, MiB, 0}}, "t", &err)) << "not a memfd";
}

}  // namespace
}  // namespace ibemu
