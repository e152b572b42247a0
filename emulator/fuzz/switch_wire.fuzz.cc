// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: packets arriving at switches: SMPs (directed route and
// LID-routed) for the switch SMA, PMA MADs, unicast and multicast data,
// through a cyclic fabric of four switches (fabric/test_support.h, kMesh4) with
// zero-latency links. Input, repeated:
//   [u8 host] a packet (fuzz_support.h) sent by HCA port vm<host % 4>;
//   then whatever is due runs.
// Deliveries per transmit are bounded (link.h), so a forwarding loop the
// input programs cannot hang the target.
#include <map>
#include <string>

#include "common/log.h"
#include "fabric/fabric.h"
#include "fabric/test_support.h"
#include "fabric/topology.h"
#include "fuzz/fuzz_support.h"

using namespace ibemu;
using namespace ibemu::fabric;

namespace {

struct World {
    VirtualClock clock;
    std::unique_ptr<Fabric> fab;
    test::TestPort hosts[4];

    World()
    {
        FabricOptions opts;
        opts.link.slots = 16;
        opts.link.slot_payload = 4096;
        fab = std::make_unique<Fabric>(clock, opts);
        Topology t;
        std::string err;
        if (!parse_topology(test::kMesh4, &t, &err) || !fab->build(t, &err)) {
            fprintf(stderr, "mesh topology: %s\n", err.c_str());
            abort();
        }
        for (HcaPort* hp : fab->hca_ports()) {
            unsigned i = unsigned(hp->node_name()[2] - '0');
            hosts[i].wire = &hp->attach(&hosts[i]);
        }
        fab->run_due();
    }
    void clear()
    {
        for (auto& h : hosts)
            h.rx.clear();
    }
};

void smp_seed(fuzz::Writer& w, unsigned host, const test::Mad& m, uint16_t dlid = kPermissiveLid,
              uint16_t slid = kPermissiveLid)
{
    Packet p;
    UdAddress a;
    a.dlid = dlid;
    a.slid = slid;
    a.vl = kSmpVl;
    build_ud(p, a, m);
    w.u8(uint8_t(host));
    fuzz::write_packet(w, p);
}

void write_seeds(const std::string& dir)
{
    using test::dr_smp;
    {
        fuzz::Writer w;
        smp_seed(w, 0, dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1}));
        smp_seed(w, 0, dr_smp(mad::kMethodGet, smp::kAttrSwitchInfo, 0, {1}));
        smp_seed(w, 0, dr_smp(mad::kMethodGet, smp::kAttrPortInfo, 2, {1}));
        smp_seed(w, 0, dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1, 2}));
        smp_seed(w, 0, dr_smp(mad::kMethodGet, smp::kAttrNodeDesc, 0, {1, 3, 2}));
        fuzz::save_seed(dir, "dr_gets", w.buf);
    }
    {
        // Give sw0 LID 10, a route to it, and a multicast group 0xc001
        // out of every port of every switch; then send to the group.
        fuzz::Writer w;
        for (unsigned sw = 0; sw < 4; ++sw) {
            std::vector<uint8_t> path = {1};
            if (sw)
                path.push_back(uint8_t(sw + 1));
            test::Mad pi = dr_smp(mad::kMethodSet, smp::kAttrPortInfo, 0, path);
            test::layout::kPiLid.set(test::smp_data(pi), 10 + sw);
            test::layout::kPiState.set(test::smp_data(pi), 0);
            smp_seed(w, 0, pi, kPermissiveLid, kPermissiveLid);
            test::Mad mft = dr_smp(mad::kMethodSet, smp::kAttrMft, 0, path);
            for (unsigned e = 0; e < 32; ++e) {
                test::smp_data(mft)[2 * e] = 0;
                test::smp_data(mft)[2 * e + 1] = 0x1e;
            }
            smp_seed(w, 0, mft);
        }
        Packet p;
        UdAddress a;
        a.dlid = 0xc001;
        a.slid = 1;
        a.dest_qp = 0xffffff;
        a.qkey = 0x11111111;
        uint8_t payload[64] = {1, 2, 3};
        build_ud(p, a, payload);
        w.u8(1);
        fuzz::write_packet(w, p);
        fuzz::save_seed(dir, "multicast_loop", w.buf);
    }
    {
        fuzz::Writer w;
        test::Mad lft = dr_smp(mad::kMethodSet, smp::kAttrLft, 0, {1});
        for (unsigned e = 0; e < 64; ++e)
            test::smp_data(lft)[e] = uint8_t(e % 4);
        smp_seed(w, 0, lft);
        Packet p;
        UdAddress a;
        a.dlid = 2;
        a.slid = 1;
        a.dest_qp = 2;
        a.qkey = 0x11111111;
        uint8_t payload[256] = {};
        build_ud(p, a, payload);
        w.u8(0);
        fuzz::write_packet(w, p);
        test::Mad pma = test::smp_header(mad::kClassPerf, mad::kMethodGet, 0x0012, 0, 9);
        a.dest_qp = 1;
        a.qkey = kQp1Qkey;
        a.dlid = 10;
        build_ud(p, a, pma);
        w.u8(0);
        fuzz::write_packet(w, p);
        fuzz::save_seed(dir, "unicast_and_pma", w.buf);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    Log::set_level(LogLevel::Error);
    fuzz::maybe_write_seeds(argc, argv, write_seeds);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    World w;
    fuzz::InPacket ip;
    unsigned n = 0;
    while (!in.empty() && n++ < 256) {
        unsigned host = in.u8() % 4;
        if (!fuzz::read_packet(in, &ip))
            break;
        w.hosts[host].wire->transmit(ip.p);
        w.clock.advance(1000);
        w.fab->run_due();
        w.clear();
    }
    return 0;
}
