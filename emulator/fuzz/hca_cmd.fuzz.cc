// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: firmware commands through the HCR, as a driver posts them,
// on a brought-up HCA that has a CQ and RC/UC/UD QPs (fuzz/hca_harness.h).
// Input, repeated:
//   [u8 kind]
//   kind 0..3: a command: [u16 opcode][u32 in_mod][u8 op_mod][u8 how]
//              [u64 param][u16 n][n bytes written at the start of the
//              input mailbox]. how: bit 0 event mode; bits 1-2 the input
//              parameter (in-mailbox, out-mailbox, param, 0), bits 3-4 the
//              output parameter (the same choices).
//   kind 4:    the driver's interrupt handler runs (EQs drained, re-armed).
//   kind 5:    [u32 ns] time passes.
// The go bit must be clear when the post returns (commands are synchronous).
#include <string>

#include "common/log.h"
#include "fuzz/hca_harness.h"

using namespace ibemu;
using namespace ibemu::fuzz;

namespace {

void command(Writer& w, uint16_t op, uint32_t in_mod, uint8_t op_mod, uint8_t how, std::vector<uint8_t> box = {})
{
    w.u8(0);
    w.u16(op);
    w.u32(in_mod);
    w.u8(op_mod);
    w.u8(how);
    w.u64(0);
    w.u16(uint16_t(box.size()));
    w.bytes(box);
}

void write_seeds(const std::string& dir)
{
    HcaWorld h(false);
    const unsigned kIn = 0 << 1, kOut = 1 << 3, kNone = 3 << 3;
    {
        Writer w;
        command(w, op::kQueryFw, 0, 0, kOut);
        command(w, op::kQueryDevLim, 0, 0, kOut);
        command(w, op::kQueryAdapter, 0, 0, kOut | 1);
        w.u8(4);
        fuzz::save_seed(dir, "queries", w.buf);
    }
    {
        Writer w;
        command(w, op::kQueryQp, h.rc_a.qpn, 0, kOut);
        command(w, op::kQueryCq, h.acq.cqn, 0, kOut);
        command(w, op::kQueryEq, 0, 0, kOut);
        command(w, op::kQueryMpt, 0, 0, kOut);
        fuzz::save_seed(dir, "query_objects", w.buf);
    }
    {
        // Take the RC QP back to RESET and through the transitions with
        // mailboxes of zeros (the fuzzer fills them in).
        Writer w;
        std::vector<uint8_t> box(0x100);
        command(w, op::k2Err, h.rc_a.qpn, 0, kIn | kNone, box);
        command(w, op::kErr2Rst, h.rc_a.qpn, 0, kIn | kNone, box);
        command(w, op::kRst2Init, h.rc_a.qpn, 0, kIn | kNone, box);
        command(w, op::kInit2Rtr, h.rc_a.qpn, 0, kIn | kNone, box);
        command(w, op::kRtr2Rts, h.rc_a.qpn, 0, kIn | kNone, box);
        w.u8(5);
        w.u32(1000000);
        fuzz::save_seed(dir, "qp_cycle", w.buf);
    }
    {
        Writer w;
        std::vector<uint8_t> box(0x40);
        command(w, op::kHw2SwCq, h.acq.cqn, 0, kOut, {});
        command(w, op::kSw2HwCq, h.acq.cqn, 0, kIn | kNone, box);
        command(w, op::kResizeCq, h.acq.cqn, 0, kIn | kNone, box);
        command(w, op::kHw2SwMpt, 1, 0, kOut, {});
        command(w, op::kSw2HwMpt, 1, 0, kIn | kNone, box);
        command(w, op::kWriteMtt, 1, 0, kIn | kNone, std::vector<uint8_t>(32));
        command(w, op::kMadIfc, 1, 0, kIn | kOut, std::vector<uint8_t>(256));
        command(w, op::kReadMgm, 0, 0, kOut, {});
        command(w, op::kMgidHash, 0, 0, kIn | (2 << 3), std::vector<uint8_t>(16));
        fuzz::save_seed(dir, "objects", w.buf);
    }
    {
        // Bring-up commands again, in the wrong state.
        Writer w;
        std::vector<uint8_t> box(0x200);
        command(w, op::kCloseIb, 1, 0, kNone);
        command(w, op::kCloseHca, 0, 0, kNone);
        command(w, op::kSysDis, 0, 0, kNone);
        command(w, op::kSetIcmSize, 0, 0, kNone);
        command(w, op::kInitHca, 0, 0, kIn | kNone, box);
        command(w, op::kMapIcm, 1, 0, kIn | kNone, box);
        command(w, op::kUnmapIcm, 1, 0, (2 << 1) | kNone);
        fuzz::save_seed(dir, "bring_up_again", w.buf);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    return fuzz::hca_fuzz_initialize(argc, argv, write_seeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    Reader in(data, size);
    HcaWorld h(false);
    DriverSim& d = h.a.d;
    unsigned n = 0;
    while (!in.empty() && n++ < 256) {
        uint8_t kind = in.u8() % 6;
        if (kind <= 3) {
            uint16_t op = in.u16() & 0xfff;
            uint32_t in_mod = in.u32();
            uint8_t op_mod = in.u8();
            uint8_t how = in.u8();
            uint64_t param = in.u64();
            auto box = in.bytes(in.u16() % (kMailbox + 1));
            std::memcpy(d.in().data(), box.data(), box.size());
            auto pick = [&](unsigned sel) -> uint64_t {
                switch (sel & 3) {
                case 0: return d.in_box();
                case 1: return d.out_box();
                case 2: return param;
                default: return 0;
                }
            };
            bool event = how & 1;
            d.post(pick(how >> 1), pick(how >> 3), in_mod, op_mod, op, uint16_t(n), event);
            if (d.go_bit())
                invariant_failed("go bit still set after a command");
            if (event)
                d.interrupt();
        } else if (kind == 4) {
            d.interrupt();
        } else {
            h.tick(in.u32());
        }
        h.check();
    }
    return 0;
}
