// SPDX-License-Identifier: GPL-2.0
#include "fabric/pcap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "fabric/fabric.h"
#include "fabric/test_support.h"

namespace ibemu::fabric {
namespace {

// Bit-serial references, written from the polynomial definitions (IBA
// 7.8.1 and 7.8.2: the bits of each byte enter least significant first).
uint32_t ref_crc32(const std::vector<uint8_t>& d)
{
    uint32_t r = 0xffffffff;
    for (uint8_t byte : d)
        for (int i = 0; i < 8; ++i) {
            bool in = ((byte >> i) & 1) ^ (r >> 31);
            r <<= 1;
            if (in)
                r ^= 0x04c11db7;
        }
    // Reflect and complement.
    uint32_t out = 0;
    for (int i = 0; i < 32; ++i)
        out |= ((r >> i) & 1u) << (31 - i);
    return ~out;
}

uint16_t ref_crc16(const std::vector<uint8_t>& d)
{
    uint16_t r = 0xffff;
    for (uint8_t byte : d)
        for (int i = 0; i < 8; ++i) {
            bool in = ((byte >> i) & 1) ^ (r >> 15);
            r = uint16_t(r << 1);
            if (in)
                r ^= 0x100b;
        }
    uint16_t out = 0;
    for (int i = 0; i < 16; ++i)
        out = uint16_t(out | (((r >> i) & 1u) << (15 - i)));
    return uint16_t(~out);
}

std::vector<uint8_t> bytes_of(const char* s) { return std::vector<uint8_t>(s, s + std::strlen(s)); }

TEST(Crc, KnownCheckValues)
{
    // The CRC-32 catalogue check value.
    auto check = bytes_of("123456789");
    EXPECT_EQ(crc32_ieee(check), 0xcbf43926u);
    EXPECT_EQ(ref_crc32(check), 0xcbf43926u);
    EXPECT_EQ(crc16_vcrc(check), ref_crc16(check));
    std::vector<uint8_t> ramp(300);
    for (size_t i = 0; i < ramp.size(); ++i)
        ramp[i] = uint8_t(i * 7 + 3);
    EXPECT_EQ(crc32_ieee(ramp), ref_crc32(ramp));
    EXPECT_EQ(crc16_vcrc(ramp), ref_crc16(ramp));
}

Packet sample_ud(std::span<const uint8_t> payload, uint8_t vl = 0)
{
    Packet p;
    UdAddress a;
    a.dlid = 0x0002;
    a.slid = 0x0001;
    a.vl = vl;
    a.sl = 3;
    a.dest_qp = 0x000048;
    a.src_qp = 0x000049;
    a.qkey = 0x80010000;
    a.pkey = 0xffff;
    build_ud(p, a, payload);
    return p;
}

TEST(Crc, IcrcMasksTheVariantFieldsOnly)
{
    uint8_t payload[32];
    for (unsigned i = 0; i < sizeof payload; ++i)
        payload[i] = uint8_t(i);
    Packet p = sample_ud(payload);
    std::vector<uint8_t> img;
    wire_image(p, img);
    ASSERT_EQ(img.size(), 8u + 12 + 8 + 32 + 4 + 2);
    // Against the reference over the masked copy.
    std::vector<uint8_t> masked(img.begin(), img.end() - 6);
    std::fill(masked.begin(), masked.begin() + 8, 0xff);  // LRH
    masked[8 + 4] = 0xff;                                 // BTH resv8a
    uint32_t icrc = ref_crc32(masked);
    EXPECT_EQ(compute_icrc(std::span(img.data(), img.size() - 6)), icrc);
    // Little-endian on the wire, then the VCRC over everything before it.
    EXPECT_EQ(img[img.size() - 6], uint8_t(icrc));
    EXPECT_EQ(img[img.size() - 3], uint8_t(icrc >> 24));
    uint16_t vcrc = ref_crc16(std::vector<uint8_t>(img.begin(), img.end() - 2));
    EXPECT_EQ(img[img.size() - 2], uint8_t(vcrc));
    EXPECT_EQ(img[img.size() - 1], uint8_t(vcrc >> 8));

    // Variant fields (VL, LIDs in the LRH; FECN/BECN byte) leave the ICRC
    // alone but change the VCRC; the P_Key changes both.
    Packet q = sample_ud(payload, 1);
    q.hdr[2] = 0x12;
    q.hdr[8 + 4] = 0xc0;
    std::vector<uint8_t> img2;
    wire_image(q, img2);
    EXPECT_TRUE(std::equal(img.end() - 6, img.end() - 2, img2.end() - 6));
    EXPECT_FALSE(std::equal(img.end() - 2, img.end(), img2.end() - 2));
    q.hdr[8 + 2] = 0x7f;
    wire_image(q, img2);
    EXPECT_FALSE(std::equal(img.end() - 6, img.end() - 2, img2.end() - 6));

    // Frozen vector for this packet (from the bit-serial reference), so a
    // change in the engines or the masking shows.
    EXPECT_EQ(icrc, 0xc3288874u);
}

TEST(Crc, GrhVariantFieldsAreMasked)
{
    // LRH (LNH=3) + GRH + BTH, no payload.
    std::vector<uint8_t> pkt(8 + 40 + 12, 0);
    pkt[1] = 0x03;
    pkt[8] = 0x60;  // IPVer 6
    auto base = compute_icrc(pkt);
    pkt[8] = 0x6a;   // TClass high bits
    pkt[9] = 0xbc;   // TClass low / FlowLabel
    pkt[15] = 0x40;  // HopLmt
    EXPECT_EQ(compute_icrc(pkt), base);
    pkt[14] = 0x1b;  // NxtHdr is invariant
    EXPECT_NE(compute_icrc(pkt), base);
}

std::string temp_path(const char* name)
{
    return std::string("/tmp/ibemu-fabric-") + std::to_string(getpid()) + "-" + name;
}

std::vector<uint8_t> read_file(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

TEST(Pcap, HeaderAndRecordBytes)
{
    std::string path = temp_path("hdr.pcap");
    PcapWriter w;
    std::string err;
    ASSERT_TRUE(w.open(path, &err, PcapFormat::PcapInfiniband)) << err;
    uint8_t payload[4] = {1, 2, 3, 4};
    w.write(sample_ud(payload), 5000000123ull);
    w.close();
    auto b = read_file(path);
    ASSERT_EQ(b.size(), 24u + 16 + 8 + 12 + 8 + 4 + 6);
    const uint8_t ghdr[24] = {0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 247, 0, 0, 0};
    EXPECT_TRUE(std::equal(ghdr, ghdr + 24, b.begin()));
    const uint8_t rhdr[16] = {5, 0, 0, 0, 123, 0, 0, 0, 38, 0, 0, 0, 38, 0, 0, 0};
    EXPECT_TRUE(std::equal(rhdr, rhdr + 16, b.begin() + 24));
    EXPECT_EQ(b[40 + 1], 0x32);  // SL 3, LNH 2
    EXPECT_EQ(b[40 + 5], 9);     // PktLen: (28 + 4 + 4) / 4 words
    unlink(path.c_str());
}

TEST(Pcap, PktLenCountsHeadersPayloadPadAndIcrc)
{
    uint8_t payload[5] = {};
    Packet p = sample_ud(payload);
    std::span<const uint8_t> h(p.hdr.data(), p.hdr_len);
    EXPECT_EQ(lrh::kPktLen.get(h), (28u + 8 + 4) / 4);
    EXPECT_EQ(bth::kPadCnt.get(h.subspan(8)), 3u);
    std::vector<uint8_t> img;
    wire_image(p, img);
    EXPECT_EQ(img.size(), 28u + 8 + 4 + 2);
}

TEST(Pcap, DefaultIsPcapWithErfRecords)
{
    std::string path = temp_path("erf.pcap");
    PcapWriter w;
    std::string err;
    ASSERT_TRUE(w.open(path, &err)) << err;
    uint8_t payload[4] = {1, 2, 3, 4};
    w.write(sample_ud(payload), 5000000123ull);
    w.close();
    auto b = read_file(path);
    ASSERT_EQ(b.size(), 24u + 16 + 16 + 8 + 12 + 8 + 4 + 6);
    EXPECT_EQ(b[20], 197);  // LINKTYPE_ERF
    EXPECT_EQ(b[24 + 8], 16 + 38);  // captured length: ERF header + packet
    const uint8_t* e = b.data() + 40;
    EXPECT_EQ(e[4] | e[5] << 8 | e[6] << 16 | uint32_t(e[7]) << 24, 5u);  // seconds
    EXPECT_EQ(e[8], kErfTypeInfiniband);
    EXPECT_EQ(e[10] << 8 | e[11], 16 + 38);  // rlen
    EXPECT_EQ(e[14] << 8 | e[15], 38);       // wlen
    EXPECT_EQ(e[16 + 1], 0x32);              // the LRH follows
    unlink(path.c_str());

    // Native ERF: the same record, no pcap headers.
    ASSERT_TRUE(w.open(path, &err, PcapFormat::Erf)) << err;
    w.write(sample_ud(payload), 5000000123ull);
    w.close();
    auto n = read_file(path);
    ASSERT_EQ(n.size(), 16u + 38);
    EXPECT_TRUE(std::equal(n.begin(), n.end(), b.begin() + 40));
    unlink(path.c_str());

    PcapFormat f{};
    EXPECT_TRUE(parse_capture_format("pcap", &f));
    EXPECT_EQ(f, PcapFormat::PcapErf);
    EXPECT_TRUE(parse_capture_format("erf", &f));
    EXPECT_EQ(f, PcapFormat::Erf);
    EXPECT_TRUE(parse_capture_format("ib", &f));
    EXPECT_EQ(f, PcapFormat::PcapInfiniband);
    EXPECT_TRUE(parse_capture_format("247", &f));
    EXPECT_FALSE(parse_capture_format("vm0:1", &f));
}

// Capture through the control protocol in `format` ("" = default) and run
// tshark -V on the file; empty when tshark is missing.
std::string capture_and_decode(const std::string& format, std::string* path_out)
{
    VirtualClock clock;
    clock.set(1000);
    Fabric fab(clock);
    std::string err;
    EXPECT_TRUE(fab.build_spec("star:2", &err)) << err;
    test::TestPort a, b;
    a.wire = &fab.hca_port("vm0", 0, 1)->attach(&a);
    b.wire = &fab.hca_port("vm1", 0, 1)->attach(&b);
    std::string path = temp_path(("cap-" + (format.empty() ? std::string("default") : format)).c_str());
    *path_out = path;
    auto reply = fab.control("capture start " + path + (format.empty() ? "" : " " + format) + " vm0:1");
    EXPECT_EQ(reply.substr(0, 2), "ok") << reply;
    a.send_smp(test::dr_smp(mad::kMethodGet, smp::kAttrNodeInfo, 0, {1}));
    fab.run_due();
    EXPECT_EQ(a.rx.size(), 1u);
    uint8_t payload[64] = {0xde, 0xad};
    a.send_data(2, 1, payload);  // dropped at the switch (port INIT), but it crossed vm0's link
    reply = fab.control("capture stop");
    EXPECT_EQ(reply, "ok " + path + " 3 packets");
    auto bytes = read_file(path);
    size_t records = 2 * (28 + 256 + 6) + (28 + 64 + 6);
    if (format == "erf")
        EXPECT_EQ(bytes.size(), 3 * 16 + records);
    else
        EXPECT_EQ(bytes.size(), 24u + 3 * (16 + 16) + records);

    if (access("/usr/bin/tshark", X_OK) != 0)
        return "";
    std::string cmd = "/usr/bin/tshark -r " + path + " -V 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    EXPECT_NE(f, nullptr);
    std::string out;
    if (!f)
        return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        out.append(buf, n);
    pclose(f);
    return out;
}

class PcapTshark : public ::testing::TestWithParam<const char*> {};

TEST_P(PcapTshark, CapturesSelectedLinksAndTsharkDecodesThem)
{
    std::string path;
    std::string out = capture_and_decode(GetParam(), &path);
    if (out.empty()) {
        unlink(path.c_str());
        GTEST_SKIP() << "tshark not installed";
    }
    for (const char* want :
         {"Record type: 0x15 (Type 21: INFINIBAND)", "Local Route Header", "Virtual Lane: 0xf",
          "Destination Local ID: 65535", "Packet Length: 72", "Base Transport Header",
          "Unreliable Datagram (UD) - SEND only", "Destination Queue Pair: 0x000000",
          "SMP (Directed Route) SubnGet(NodeInfo)", "Hop Pointer: 0x01", "Method: GetResp() (0x81)", "Status: 0x8000" /* D bit */,
          "NodeType: 0x02", "Destination Local ID: 2", "Destination Queue Pair: 0x000002", "Invariant CRC",
          "Variant CRC"})
        EXPECT_NE(out.find(want), std::string::npos) << "tshark output lacks '" << want << "':\n"
                                                     << out.substr(0, 6000);
    if (::testing::Test::HasFailure())
        std::ofstream(path + ".txt") << out;
    else
        unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Formats, PcapTshark, ::testing::Values("", "pcap", "erf"),
                         [](const auto& p) { return std::string(*p.param ? p.param : "default"); });

}  // namespace
}  // namespace ibemu::fabric
