// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: packets arriving from the wire at an HCA port: LRH, GRH,
// BTH and the extended headers of every transport, and MADs for QP0 (the
// SMA) and QP1 (the PMA). Two HCAs with connected RC/UC QPs and UD QPs
// (fuzz/hca_harness.h); node b answers whatever a sends back. Input,
// repeated:
//   [u8 kind] kind 0/1: a packet (fuzz_support.h) arrives at a (0) or b (1)
//             and the link moves what that causes;
//             kind 2: [u32 ns] time passes (timers, retransmissions).
// The seeds are real traffic of b to a (SEND, RDMA WRITE/READ, atomics on
// RC, UC, UD) and an SMP and a PMA MAD, captured on the link.
#include <string>

#include "common/log.h"
#include "fuzz/hca_harness.h"
#include "ib/headers.h"
#include "ib/mad.h"

using namespace ibemu;
using namespace ibemu::fuzz;

namespace {

void save_captured(const std::string& dir, const std::string& name, HcaWorld& h)
{
    Writer w;
    for (const CopiedPacket& c : h.link.captured) {
        w.u8(uint8_t(1 - c.from));  // delivered to the other side
        Packet v = c.view();
        write_packet(w, v);
    }
    h.link.captured.clear();
    save_seed(dir, name, w.buf);
}

// A MAD to QP0/QP1 of LID 1 as a UD SEND-only from LID 2.
void mad_seed(const std::string& dir, const std::string& name, uint8_t mgmt_class, uint16_t attr, uint32_t qp)
{
    uint8_t hdr[8 + 12 + 8] = {};
    uint8_t mad[256] = {};
    // LRH: VL (15 for QP0), LNH=2 (IBA local: BTH follows), DLID, length, SLID.
    hdr[0] = uint8_t((qp == 0 ? 15 : 0) << 4);
    hdr[1] = 2;
    hdr[2] = 0, hdr[3] = 1;
    unsigned words = (sizeof(hdr) + sizeof(mad) + 4) / 4;
    hdr[4] = uint8_t(words >> 8), hdr[5] = uint8_t(words);
    hdr[6] = 0, hdr[7] = 2;
    // BTH: SEND-only UD (0x64), P_Key 0xffff, dest QP, PSN.
    hdr[8] = 0x64;
    hdr[10] = 0xff, hdr[11] = 0xff;
    hdr[14] = 0, hdr[15] = uint8_t(qp);
    // DETH: Q_Key (QP1's well-known one), source QP.
    uint32_t qkey = qp == 1 ? 0x80010000u : 0;
    hdr[20] = uint8_t(qkey >> 24), hdr[21] = uint8_t(qkey >> 16);
    hdr[27] = uint8_t(qp);
    // MAD header: base version 1, class, class version 1, Get.
    mad[0] = 1, mad[1] = mgmt_class, mad[2] = 1, mad[3] = 1;
    mad[15] = 7;
    mad[16] = uint8_t(attr >> 8), mad[17] = uint8_t(attr);
    Packet p;
    std::memcpy(p.hdr.data(), hdr, sizeof(hdr));
    p.hdr_len = sizeof(hdr);
    p.vl = qp == 0 ? 15 : 0;
    p.nseg = 1;
    p.seg[0] = {mad, sizeof(mad)};
    p.payload_len = sizeof(mad);
    Writer w;
    w.u8(0);
    write_packet(w, p);
    save_seed(dir, name, w.buf);
}

void write_seeds(const std::string& dir)
{
    HcaWorld h;
    h.link.capture = true;
    std::memset(h.b.mem().at(h.bbuf), 0x5a, 4096);
    auto send = [&](TQp& q, uint8_t op, uint32_t len, uint64_t raddr = 0, uint32_t rkey = 0) {
        Node::SendWr wr;
        wr.op = op;
        wr.sges = {{h.bbuf, len, h.bkey}};
        wr.raddr = raddr;
        wr.rkey = rkey;
        wr.imm = 0x1234;
        wr.compare = 1, wr.swap_add = 2;
        if (&q == &h.ud_b) {
            wr.dlid = 1, wr.dqpn = h.ud_a.qpn, wr.qkey = kQkey;
        }
        h.b.post_send(q, wr);
        h.link.pump(4096);
    };
    send(h.rc_b, wqe::kSend, 100);
    save_captured(dir, "rc_send", h);
    send(h.rc_b, wqe::kSend, 5000);
    save_captured(dir, "rc_send_multi", h);
    send(h.rc_b, wqe::kRdmaWriteImm, 3000, h.abuf, h.akey);
    save_captured(dir, "rc_write_imm", h);
    send(h.rc_b, wqe::kRdmaRead, 3000, h.abuf, h.akey);
    save_captured(dir, "rc_read", h);
    send(h.rc_b, wqe::kAtomicCs, 8, h.abuf, h.akey);
    send(h.rc_b, wqe::kAtomicFa, 8, h.abuf + 8, h.akey);
    save_captured(dir, "rc_atomics", h);
    send(h.uc_b, wqe::kSendImm, 2100);
    send(h.uc_b, wqe::kRdmaWrite, 64, h.abuf, h.akey);
    save_captured(dir, "uc", h);
    send(h.ud_b, wqe::kSend, 256);
    save_captured(dir, "ud_send", h);
    mad_seed(dir, "smp_get_node_info", 0x01, 0x0011, 0);
    mad_seed(dir, "smp_get_port_info", 0x01, 0x0015, 0);
    mad_seed(dir, "pma_get_port_counters", 0x04, 0x0012, 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    return fuzz::hca_fuzz_initialize(argc, argv, write_seeds);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    Reader in(data, size);
    HcaWorld h;
    InPacket ip;
    unsigned n = 0;
    while (!in.empty() && n++ < 256) {
        uint8_t kind = in.u8() % 3;
        if (kind == 2) {
            h.tick(in.u32());
            continue;
        }
        if (!read_packet(in, &ip))
            break;
        h.link.ep[kind]->receive(ip.p);
        h.link.pump(4096);
        h.check();
    }
    return 0;
}
