// SPDX-License-Identifier: GPL-2.0
//
// The HCA model as the fuzz targets see it: two one-port HCAs a (LID 1)
// and b (LID 2) on a TestLink, brought up by the simulated ib_mthca of
// hca/test_support, each with a CQ, an RC, a UC and a UD QP in RTS (RC and
// UC connected to the other node's), receives posted and a buffer
// registered with every access right. Built afresh for every input, so a
// target is deterministic: the same input, the same QPNs, keys and PSNs.
// The targets turn on FakeMemory recycling, so building the world reuses
// the last one's RAM (zeroed where it was written) instead of faulting in
// fresh pages: that, not the model, was most of an input's cost.
#pragma once

#include <memory>

#include "fuzz/fuzz_support.h"
#include "hca/qp_test_support.h"

namespace ibemu::fuzz {

using namespace ibemu::mthca;
using namespace ibemu::mthca::test;

inline constexpr uint32_t kQkey = 0x11111111;
inline constexpr size_t kNodeRam = 24u << 20;

struct HcaWorld {
    TestLink link;
    Node a{1, kNodeRam}, b{2, kNodeRam};
    TCq acq, bcq;
    TQp rc_a, rc_b, uc_a, uc_b, ud_a, ud_b;
    uint64_t abuf = 0, bbuf = 0;
    uint32_t akey = 0, bkey = 0;
    uint64_t now = 0;

    // with_b false: only node a, its link end drops what it sends.
    explicit HcaWorld(bool with_b = true)
    {
        // A small completion EQ: ib_mthca's 2^17 entries would be most of
        // the cost of building the world, and 64 CQEs cannot fill 1024.
        a.d.comp_eq_entries = b.d.comp_eq_entries = 1024;
        a.up(1, &link.a, &link.ep[0]);
        LinkParams lp;
        if (with_b)
            b.up(2, &link.b, &link.ep[1]);
        else
            link.drop_all = true;
        link.ep[0]->link_changed(true, lp);
        if (with_b)
            link.ep[1]->link_changed(true, lp);
        a.activate(1);
        acq = a.make_cq(64);
        abuf = a.alloc(16384);
        akey = a.reg(abuf, 16384);
        rc_a = a.make_qp(QpService::Rc, acq, acq, 16, 16);
        uc_a = a.make_qp(QpService::Uc, acq, acq, 16, 16);
        ud_a = a.make_qp(QpService::Ud, acq, acq, 16, 16);
        if (with_b) {
            b.activate(2);
            bcq = b.make_cq(64);
            bbuf = b.alloc(16384);
            bkey = b.reg(bbuf, 16384);
            rc_b = b.make_qp(QpService::Rc, bcq, bcq, 16, 16);
            uc_b = b.make_qp(QpService::Uc, bcq, bcq, 16, 16);
            ud_b = b.make_qp(QpService::Ud, bcq, bcq, 16, 16);
        }
        QpParams pa, pb;
        pa.dlid = 2, pb.dlid = 1;
        pa.remote_qpn = with_b ? rc_b.qpn : 0x50;
        pb.remote_qpn = rc_a.qpn;
        pa.sq_psn = pb.rq_psn = 0x123;
        pb.sq_psn = pa.rq_psn = 0x456;
        a.to_rts(rc_a, pa);
        if (with_b)
            b.to_rts(rc_b, pb);
        pa.remote_qpn = with_b ? uc_b.qpn : 0x51;
        pb.remote_qpn = uc_a.qpn;
        a.to_rts(uc_a, pa);
        if (with_b)
            b.to_rts(uc_b, pb);
        QpParams pu;
        pu.qkey = kQkey;
        a.to_rts(ud_a, pu);
        if (with_b)
            b.to_rts(ud_b, pu);
        for (int i = 0; i < 4; ++i) {
            a.post_recv(rc_a, {{abuf + 4096, 4096, akey}});
            a.post_recv(uc_a, {{abuf + 8192, 4096, akey}});
            a.post_recv(ud_a, {{abuf + 12288, 4096, akey}});
            if (with_b) {
                b.post_recv(rc_b, {{bbuf + 4096, 4096, bkey}});
                b.post_recv(uc_b, {{bbuf + 8192, 4096, bkey}});
                b.post_recv(ud_b, {{bbuf + 12288, 4096, bkey}});
            }
        }
    }

    // Time passes for both nodes, then what the link holds moves (bounded:
    // two RC QPs may keep talking for a while).
    void tick(uint64_t dt_ns)
    {
        now += dt_ns;
        a.d.hca().poll(now);
        if (link.ep[1])
            b.d.hca().poll(now);
        link.pump(4096);
    }

    // What must hold whatever the guest or the wire did.
    void check()
    {
        if (a.core().icm().extent_count() > Icm::kMaxExtents)
            invariant_failed("ICM extents beyond the bound");
    }
};

// LLVMFuzzerInitialize of the HCA targets: quiet logs, a fresh HcaWorld per
// input on RAM recycled from the last one, and the seeds when asked.
inline int hca_fuzz_initialize(int* argc, char*** argv, const std::function<void(const std::string&)>& seeds)
{
    Log::set_level(LogLevel::Error);
    FakeMemory::set_recycling(true);
    maybe_write_seeds(argc, argv, seeds);
    return 0;
}

}  // namespace ibemu::fuzz
