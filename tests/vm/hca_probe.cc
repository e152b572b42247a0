// SPDX-License-Identifier: GPL-2.0
//
// Runs inside a guest (tests/vm/mmio_fairness.test.cc): times round trips
// to the emulated HCA's firmware from user space.
//
//   hca_probe SECONDS [GAP_US]
//
// For SECONDS, calls ibv_query_port(mthca0, port 1), sleeping GAP_US
// (default 500) between calls. ib_mthca answers every query_port with a
// MAD_IFC firmware command: the HCR written and read through BAR0 (MMIO
// writes, then reads of the go bit and the status), the mailboxes by DMA,
// and in event mode the completion as an EQE and an MSI-X interrupt. Each
// MMIO access is a round trip guest -> QEMU -> ibemu; the whole call is
// what a guest sees when the emulator is slow to serve it. (The BAR itself
// cannot be mapped from user space while ib_mthca owns it: the kernel
// refuses mmap of an exclusive region, EINVAL.)
// Prints one line:
//   hca_probe: N round trips, median X us, p99 Y us, max Z us
// Exit 0; 1 when the device is missing, a query fails, or the port is not
// ACTIVE.
#include <infiniband/verbs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: hca_probe SECONDS [GAP_US]\n");
        return 2;
    }
    double secs = std::atof(argv[1]);
    long gap_us = argc > 2 ? std::atol(argv[2]) : 500;
    int num = 0;
    ibv_device** list = ibv_get_device_list(&num);
    if (!list || num < 1) {
        std::printf("hca_probe: no RDMA device\n");
        return 1;
    }
    ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) {
        std::printf("hca_probe: ibv_open_device: %s\n", std::strerror(errno));
        return 1;
    }
    std::vector<uint64_t> us;
    uint64_t end = now_ns() + uint64_t(secs * 1e9);
    while (now_ns() < end) {
        ibv_port_attr attr;
        uint64_t t0 = now_ns();
        int rc = ibv_query_port(ctx, 1, &attr);
        uint64_t t1 = now_ns();
        if (rc) {
            std::printf("hca_probe: ibv_query_port failed (%d) after %zu calls\n", rc, us.size());
            return 1;
        }
        if (attr.state != IBV_PORT_ACTIVE) {
            std::printf("hca_probe: port state %d, not ACTIVE, after %zu calls\n", int(attr.state), us.size());
            return 1;
        }
        us.push_back((t1 - t0) / 1000);
        if (gap_us > 0)
            usleep(useconds_t(gap_us));
    }
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    if (us.empty()) {
        std::printf("hca_probe: no call done\n");
        return 1;
    }
    std::sort(us.begin(), us.end());
    std::printf("hca_probe: %zu round trips, median %llu us, p99 %llu us, max %llu us\n", us.size(),
                (unsigned long long)us[us.size() / 2], (unsigned long long)us[us.size() * 99 / 100],
                (unsigned long long)us.back());
    return 0;
}
