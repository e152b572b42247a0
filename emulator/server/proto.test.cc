// SPDX-License-Identifier: GPL-2.0
#include "server/proto.h"

#include <gtest/gtest.h>

#include "hca/config_space.h"
#include "server/server.h"

namespace ibemu::shim {
namespace {

template <typename T>
std::vector<uint8_t> bytes(const T& m)
{
    const auto* p = reinterpret_cast<const uint8_t*>(&m);
    return std::vector<uint8_t>(p, p + sizeof(m));
}

ibemu_msg_cfg_write cfg_write(uint16_t off, uint8_t size, uint32_t value)
{
    ibemu_msg_cfg_write m;
    set_header(m, IBEMU_MSG_CFG_WRITE, 7);
    m.offset = off;
    m.size = size;
    m.value = value;
    return m;
}

ibemu_msg_mmio_read mmio_read(uint8_t bar, uint8_t size, uint64_t off)
{
    ibemu_msg_mmio_read m;
    set_header(m, IBEMU_MSG_MMIO_READ, 8);
    m.bar = bar;
    m.size = size;
    m.offset = off;
    return m;
}

ibemu_msg_hello good_hello()
{
    ibemu_msg_hello h;
    set_header(h, IBEMU_MSG_HELLO, 0);
    h.magic = IBEMU_SHIM_MAGIC;
    h.version = IBEMU_SHIM_VERSION;
    std::strcpy(h.node, "n0");
    h.nregions = 2;
    h.regions[0] = {0, 3u << 30, 0};
    h.regions[1] = {4ull << 30, 1u << 30, 3u << 30};
    return h;
}

TEST(ShimProto, WireSizesAreFixed)
{
    EXPECT_EQ(ibemu_shim_msg_size(IBEMU_MSG_HELLO), 288u);
    EXPECT_EQ(ibemu_shim_msg_size(IBEMU_MSG_WELCOME), 520u);
    EXPECT_EQ(ibemu_shim_msg_size(IBEMU_MSG_MMIO_WRITE), 40u);
    EXPECT_EQ(ibemu_shim_msg_size(IBEMU_MSG_SYNC_REPLY), 16u);
    EXPECT_EQ(ibemu_shim_msg_size(0), 0u);
    EXPECT_EQ(ibemu_shim_msg_size(IBEMU_MSG_TYPE_MAX + 1), 0u);
}

TEST(ShimProto, FrameBufferSplitsAStream)
{
    auto a = bytes(cfg_write(4, 2, 6));
    auto b = bytes(mmio_read(0, 4, 0x80698));
    std::vector<uint8_t> stream = a;
    stream.insert(stream.end(), b.begin(), b.end());

    FrameBuffer fb;
    const uint8_t* msg;
    size_t len;
    // byte by byte: nothing until a message is whole
    size_t seen = 0;
    std::vector<size_t> lens;
    for (uint8_t c : stream) {
        fb.append(&c, 1);
        ++seen;
        while (fb.next(&msg, &len, nullptr) == FrameBuffer::Result::Message) {
            lens.push_back(len);
            EXPECT_TRUE(check_from_shim(msg, len).empty());
            EXPECT_EQ(seen, a.size() + (lens.size() == 2 ? b.size() : 0));
        }
    }
    ASSERT_EQ(lens.size(), 2u);
    EXPECT_EQ(lens[0], a.size());
    EXPECT_EQ(lens[1], b.size());
    EXPECT_EQ(fb.buffered(), 0u);

    // all at once
    fb.append(stream.data(), stream.size());
    ASSERT_EQ(fb.next(&msg, &len, nullptr), FrameBuffer::Result::Message);
    EXPECT_EQ(decode<ibemu_shim_hdr>(msg).type, IBEMU_MSG_CFG_WRITE);
    ASSERT_EQ(fb.next(&msg, &len, nullptr), FrameBuffer::Result::Message);
    EXPECT_EQ(decode<ibemu_msg_mmio_read>(msg).offset, 0x80698u);
    EXPECT_EQ(fb.next(&msg, &len, nullptr), FrameBuffer::Result::NeedMore);
}

TEST(ShimProto, BadHeadersAreErrorsAsSoonAsTheHeaderIsIn)
{
    auto check = [](ibemu_shim_hdr h, const char* what) {
        FrameBuffer fb;
        fb.append(&h, sizeof(h));
        const uint8_t* msg;
        size_t len;
        std::string err;
        EXPECT_EQ(fb.next(&msg, &len, &err), FrameBuffer::Result::Error) << what;
        EXPECT_FALSE(err.empty()) << what;
    };
    ibemu_shim_hdr h{};
    h.type = 0;
    h.length = 16;
    check(h, "type 0");
    h.type = 99;
    check(h, "unknown type");
    h.type = IBEMU_MSG_CFG_WRITE;
    h.length = 23;
    check(h, "short length");
    h.length = 0xffffffff;
    check(h, "huge length");
    h.length = sizeof(ibemu_msg_cfg_write);
    h.flags = 1;
    check(h, "flags");
    h.flags = 0;
    h.reserved = 5;
    check(h, "reserved");
}

TEST(ShimProto, ShimMessagesAreValidated)
{
    EXPECT_TRUE(check_from_shim(bytes(cfg_write(0x04, 2, 0x6)).data(), sizeof(ibemu_msg_cfg_write)).empty());
    EXPECT_TRUE(check_from_shim(bytes(cfg_write(0xfc, 4, 1)).data(), sizeof(ibemu_msg_cfg_write)).empty());
    EXPECT_FALSE(check_from_shim(bytes(cfg_write(0xfe, 4, 1)).data(), sizeof(ibemu_msg_cfg_write)).empty());
    EXPECT_FALSE(check_from_shim(bytes(cfg_write(0x10, 3, 1)).data(), sizeof(ibemu_msg_cfg_write)).empty());
    EXPECT_FALSE(check_from_shim(bytes(cfg_write(0x10, 1, 0x100)).data(), sizeof(ibemu_msg_cfg_write)).empty());

    EXPECT_TRUE(check_from_shim(bytes(mmio_read(2, 8, 0x1000)).data(), sizeof(ibemu_msg_mmio_read)).empty());
    EXPECT_FALSE(check_from_shim(bytes(mmio_read(6, 4, 0)).data(), sizeof(ibemu_msg_mmio_read)).empty());
    EXPECT_FALSE(check_from_shim(bytes(mmio_read(0, 16, 0)).data(), sizeof(ibemu_msg_mmio_read)).empty());
    EXPECT_FALSE(check_from_shim(bytes(mmio_read(0, 0, 0)).data(), sizeof(ibemu_msg_mmio_read)).empty());

    ibemu_msg_mmio_write w;
    set_header(w, IBEMU_MSG_MMIO_WRITE, 1);
    w.bar = 0;
    w.size = 2;
    w.value = 0x1ffff;  // wider than 2 bytes
    EXPECT_FALSE(check_from_shim(bytes(w).data(), sizeof(w)).empty());
    w.value = 0xffff;
    EXPECT_TRUE(check_from_shim(bytes(w).data(), sizeof(w)).empty());
    w.reserved[3] = 1;
    EXPECT_FALSE(check_from_shim(bytes(w).data(), sizeof(w)).empty());

    // messages only the emulator sends
    ibemu_msg_msix x;
    set_header(x, IBEMU_MSG_MSIX, 1);
    EXPECT_FALSE(check_from_shim(bytes(x).data(), sizeof(x)).empty());
    ibemu_msg_sync sr;
    set_header(sr, IBEMU_MSG_SYNC_REPLY, 1);
    EXPECT_FALSE(check_from_shim(bytes(sr).data(), sizeof(sr)).empty());
    set_header(sr, IBEMU_MSG_SYNC, 1);
    EXPECT_TRUE(check_from_shim(bytes(sr).data(), sizeof(sr)).empty());
    auto wel = make_welcome(0, mthca::build_identity());
    EXPECT_FALSE(check_from_shim(bytes(wel).data(), sizeof(wel)).empty());

    // the length handed in must match the header
    auto cw = bytes(cfg_write(4, 2, 6));
    EXPECT_FALSE(check_from_shim(cw.data(), cw.size() - 1).empty());
}

TEST(ShimProto, HelloLayoutIsValidated)
{
    const uint64_t memfd = 4ull << 30;
    ibemu_msg_hello h = good_hello();
    EXPECT_EQ(check_hello_layout(h, memfd), "");
    EXPECT_EQ(hello_node(h), "n0");

    h = good_hello();
    h.node[0] = 0;
    EXPECT_NE(check_hello_layout(h, memfd), "") << "empty name";
    h = good_hello();
    std::memset(h.node, 'a', sizeof(h.node));
    EXPECT_NE(check_hello_layout(h, memfd), "") << "unterminated name";
    h = good_hello();
    std::strcpy(h.node, "a b");
    EXPECT_NE(check_hello_layout(h, memfd), "") << "space in name";
    h = good_hello();
    h.nregions = 0;
    EXPECT_NE(check_hello_layout(h, memfd), "");
    h = good_hello();
    h.nregions = IBEMU_SHIM_MAX_REGIONS + 1;
    EXPECT_NE(check_hello_layout(h, memfd), "");
    h = good_hello();
    EXPECT_NE(check_hello_layout(h, memfd - 1), "") << "region 1 beyond the memfd";
    h = good_hello();
    h.regions[1].gpa = (3ull << 30) - 4096;
    EXPECT_NE(check_hello_layout(h, memfd), "") << "overlap in guest-physical space";
    h = good_hello();
    h.regions[1].offset = 0;
    EXPECT_NE(check_hello_layout(h, memfd), "") << "overlap in the memfd";
    h = good_hello();
    h.regions[1].gpa = ~0ull - 100;
    EXPECT_NE(check_hello_layout(h, memfd), "") << "wraps";
    h = good_hello();
    h.regions[0].size = 0;
    EXPECT_NE(check_hello_layout(h, memfd), "") << "empty region";
}

TEST(ShimProto, WelcomeCarriesTheIdentity)
{
    PciIdentity id = mthca::build_identity();
    auto w = make_welcome(42, id);
    EXPECT_EQ(w.hdr.type, IBEMU_MSG_WELCOME);
    EXPECT_EQ(w.hdr.length, sizeof(w));
    EXPECT_EQ(w.hdr.tag, 42u);
    EXPECT_EQ(w.status, IBEMU_WELCOME_OK);
    EXPECT_EQ(w.version, IBEMU_SHIM_VERSION);
    EXPECT_EQ(0, std::memcmp(w.config, id.config.data(), 256));
    for (unsigned i = 0; i < 6; ++i) {
        EXPECT_EQ(w.bars[i].size, id.bars[i].size);
        EXPECT_EQ(!!(w.bars[i].flags & IBEMU_BAR_64BIT), id.bars[i].is64);
        EXPECT_EQ(!!(w.bars[i].flags & IBEMU_BAR_PREFETCH), id.bars[i].prefetch);
    }
    EXPECT_EQ(w.msix_vectors, id.msix_vectors);
    EXPECT_EQ(w.msix_cap_offset, id.msix_cap_offset);
    EXPECT_EQ(w.msix_table_bar, id.msix_table_bar);
    EXPECT_EQ(w.msix_table_offset, id.msix_table_offset);
    EXPECT_EQ(w.msix_pba_bar, id.msix_pba_bar);
    EXPECT_EQ(w.msix_pba_offset, id.msix_pba_offset);

    auto r = make_refusal(3, IBEMU_WELCOME_BAD_VERSION, std::string(500, 'x'));
    EXPECT_EQ(r.status, IBEMU_WELCOME_BAD_VERSION);
    EXPECT_EQ(r.text[sizeof(r.text) - 1], 0) << "long reasons are cut and terminated";
}

TEST(NodeGuid, DerivedFromTheNameWithTheMellanoxOui)
{
    uint64_t a = derive_node_guid("n0");
    uint64_t b = derive_node_guid("n1");
    EXPECT_EQ(a >> 40, 0x0002c9u);
    EXPECT_EQ(b >> 40, 0x0002c9u);
    EXPECT_NE(a, b);
    EXPECT_EQ(a, derive_node_guid("n0"));
}

TEST(NodeGuid, ParsesNameEqualsGuid)
{
    std::string name;
    uint64_t guid = 0;
    ASSERT_TRUE(parse_node_guid("n0=0x0002c90300001234", &name, &guid));
    EXPECT_EQ(name, "n0");
    EXPECT_EQ(guid, 0x0002c90300001234ull);
    ASSERT_TRUE(parse_node_guid("host-b=0002:c903:0000:abcd", &name, &guid));
    EXPECT_EQ(name, "host-b");
    EXPECT_EQ(guid, 0x0002c9030000abcdull);
    EXPECT_FALSE(parse_node_guid("n0", &name, &guid));
    EXPECT_FALSE(parse_node_guid("=0002c90300001234", &name, &guid));
    EXPECT_FALSE(parse_node_guid("n0=", &name, &guid));
    EXPECT_FALSE(parse_node_guid("n0=1234", &name, &guid)) << "too short";
    EXPECT_FALSE(parse_node_guid("n0=0002c90300001234ff", &name, &guid)) << "too long";
    EXPECT_FALSE(parse_node_guid("n0=0002c9030000123g", &name, &guid));
}

}  // namespace
}  // namespace ibemu::shim
