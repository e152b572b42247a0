// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: BAR0 (HCR, EQ, interrupt and reset registers), the UAR BAR
// (doorbells of every kind) and config space, on a brought-up HCA with a
// CQ and RC/UC/UD QPs in RTS (fuzz/hca_harness.h). Input, repeated:
//   [u8 kind][u8 where][u64 offset-or-value bits][u64 value]
//   kind 0/1: MMIO write/read on BAR (where % 6), size from where >> 3;
//             the offset near the HCR, the EQ registers, the reset
//             register, or anywhere (where >> 6).
//   kind 2/3: config-space write/read.
//   kind 4:   a UAR doorbell: page and register from the offset bits.
//   kind 5:   time passes, then the driver's interrupt handler runs.
#include <string>

#include "common/log.h"
#include "fuzz/hca_harness.h"

using namespace ibemu;
using namespace ibemu::fuzz;

namespace {

void record(Writer& w, uint8_t kind, uint8_t where, uint64_t off, uint64_t value)
{
    w.u8(kind);
    w.u8(where);
    w.u64(off);
    w.u64(value);
}

void write_seeds(const std::string& dir)
{
    HcaWorld h(false);
    const uint8_t k4 = 2 << 3, k8 = 3 << 3;
    {
        Writer w;
        // HCR reads and a NOP posted by hand (big-endian registers).
        for (unsigned r = 0; r < 0x1c; r += 4)
            record(w, 1, k4 | (0 << 6), r, 0);
        record(w, 0, k4 | (0 << 6), 0x18, __builtin_bswap32(kHcrGoBit | op::kNop));
        fuzz::save_seed(dir, "hcr", w.buf);
    }
    {
        Writer w;
        record(w, 0, k4 | (1 << 6), 4, __builtin_bswap32(1));
        record(w, 0, k4 | (1 << 6), 0x1000, 0);
        record(w, 1, k4 | (2 << 6), 0x10, 0);
        record(w, 5, 0, 1000, 0);
        fuzz::save_seed(dir, "eq_registers", w.buf);
    }
    {
        // Doorbells on the QPs' and the CQ's UAR page: send, receive, CQ
        // arm and CQ set-CI.
        Writer w;
        uint64_t page = uint64_t(h.a.uar) << 12;
        record(w, 4, k8, page | 0x10, __builtin_bswap64((uint64_t(h.rc_a.qpn) << 8) | 1));
        record(w, 4, k8, page | 0x18, __builtin_bswap64((uint64_t(h.ud_a.qpn) << 8) | 1));
        record(w, 4, k8, page | 0x20, __builtin_bswap64(uint64_t(h.acq.cqn) << 32));
        record(w, 4, k8, page | 0x28, __builtin_bswap64(uint64_t(h.acq.cqn) << 32));
        record(w, 5, 0, 100000, 0);
        fuzz::save_seed(dir, "doorbells", w.buf);
    }
    {
        Writer w;
        record(w, 3, 4, 0, 0);
        record(w, 2, 2, 4, 0x6);
        record(w, 2, 4, 0x10, 0xffffffff);
        record(w, 3, 4, 0x10, 0);
        record(w, 2, 2, 0x4a, 0x8000);
        fuzz::save_seed(dir, "config", w.buf);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    return fuzz::hca_fuzz_initialize(argc, argv, write_seeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const unsigned kSizes[8] = {1, 2, 4, 8, 3, 16, 0, 4};
    Reader in(data, size);
    HcaWorld h(false);
    Hca& hca = h.a.d.hca();
    unsigned n = 0;
    while (!in.empty() && n++ < 1024) {
        uint8_t kind = in.u8() % 6;
        uint8_t where = in.u8();
        uint64_t bits = in.u64();
        uint64_t value = in.u64();
        unsigned sz = kSizes[(where >> 3) & 7];
        switch (kind) {
        case 0:
        case 1: {
            unsigned bar = where % 6;
            uint64_t off;
            switch (where >> 6) {
            case 0: off = kHcrBase + bits % 0x20; break;
            case 1: off = 0x40000 + bits % 0x2000; break;
            case 2: off = 0xf0000 + bits % 0x100; break;
            default: off = bits; break;
            }
            if (kind == 0)
                hca.mmio_write(bar, off, sz, value);
            else
                (void)hca.mmio_read(bar, off, sz);
            break;
        }
        case 2:
            hca.config_write(unsigned(bits % 512), sz, uint32_t(value));
            break;
        case 3:
            (void)hca.config_read(unsigned(bits % 512), sz);
            break;
        case 4:
            hca.mmio_write(2, bits % (2048u << 12), (where & 1) ? 4 : 8, value);
            break;
        default:
            h.tick(bits % 100000000);
            h.a.d.interrupt();
            break;
        }
        h.check();
    }
    return 0;
}
