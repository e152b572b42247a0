// SPDX-License-Identifier: GPL-2.0
// Paths: ib_user_path_rec conversion, the SA PathRecord wire format (IBA
// 15.2.5.16), the SA GET MAD and its answer, make_path() from an
// ibv_port_attr, and GID text.
#include <gtest/gtest.h>

#include <cstring>

#include "abi.h"
#include "ibcm/path.h"

namespace ibcm {
namespace {

PathRecord sample()
{
	PathRecord p;
	p.dgid = *parse_gid("fe80::2:c903:0:1235");
	p.sgid = *parse_gid("fe80::2:c903:0:1234");
	p.dlid = 0x0012;
	p.slid = 0x0034;
	p.raw_traffic = false;
	p.flow_label = 0xabcde;
	p.hop_limit = 0x40;
	p.traffic_class = 0x11;
	p.reversible = true;
	p.numb_path = 1;
	p.pkey = 0xffff;
	p.sl = 5;
	p.mtu_selector = 2;
	p.mtu = 4;
	p.rate_selector = 2;
	p.rate = 6;
	p.packet_life_time_selector = 2;
	p.packet_life_time = 18;
	p.preference = 0;
	return p;
}

TEST(IbcmGid, ParseAndFormat)
{
	const auto g = parse_gid("fe80:0000:0000:0000:0002:c903:0000:1234");
	ASSERT_TRUE(g.has_value());
	EXPECT_EQ((*g)[0], 0xfe);
	EXPECT_EQ((*g)[15], 0x34);
	EXPECT_EQ(format_gid(*g), "fe80:0000:0000:0000:0002:c903:0000:1234");
	EXPECT_FALSE(parse_gid("fe80::zz").has_value());
}

TEST(IbcmUserPathRec, ByteOrderAndRoundTrip)
{
	const PathRecord p = sample();
	const ib_user_path_rec r = abi::to_user(p);
	const auto *b = reinterpret_cast<const std::uint8_t *>(&r);
	EXPECT_EQ(b[0], 0xfe); // dgid
	EXPECT_EQ(b[31], 0x34); // sgid
	EXPECT_EQ(b[32], 0x00); // dlid, big endian
	EXPECT_EQ(b[33], 0x12);
	EXPECT_EQ(b[35], 0x34); // slid
	EXPECT_EQ(b[40], 0x00); // flow label, big endian
	EXPECT_EQ(b[41], 0x0a);
	EXPECT_EQ(b[42], 0xbc);
	EXPECT_EQ(b[43], 0xde);
	EXPECT_EQ(r.mtu, 4U);
	EXPECT_EQ(b[52], 0xff); // pkey
	EXPECT_EQ(r.sl, 5);
	EXPECT_EQ(r.rate, 6);
	EXPECT_EQ(r.packet_life_time, 18);
	EXPECT_EQ(abi::from_user(r), p);
}

TEST(IbcmSaPathRecord, ByteImage)
{
	const auto b = pack_sa_path(sample());
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(b[i], 0) << i; // ServiceID
	EXPECT_EQ(b[8], 0xfe); // DGID
	EXPECT_EQ(b[23], 0x35);
	EXPECT_EQ(b[39], 0x34); // SGID
	EXPECT_EQ(b[40], 0x00); // DLID
	EXPECT_EQ(b[41], 0x12);
	EXPECT_EQ(b[43], 0x34); // SLID
	// RawTraffic 0 | reserved | FlowLabel 0xabcde | HopLimit 0x40
	EXPECT_EQ(b[44], 0x0a);
	EXPECT_EQ(b[45], 0xbc);
	EXPECT_EQ(b[46], 0xde);
	EXPECT_EQ(b[47], 0x40);
	EXPECT_EQ(b[48], 0x11); // TClass
	EXPECT_EQ(b[49], 0x81); // Reversible | NumbPath 1
	EXPECT_EQ(b[50], 0xff);
	EXPECT_EQ(b[51], 0xff);
	EXPECT_EQ(b[52], 0x00); // QoSClass | SL
	EXPECT_EQ(b[53], 0x05);
	EXPECT_EQ(b[54], 0x84); // selector 2, MTU 4
	EXPECT_EQ(b[55], 0x86);
	EXPECT_EQ(b[56], 0x92);
	EXPECT_EQ(unpack_sa_path(b), sample());
	EXPECT_THROW(unpack_sa_path(ByteView(b).first(63)), std::system_error);
}

TEST(IbcmSaPathRecord, QueryMad)
{
	const auto m = build_path_query(0x0102030405060708ULL, kPathDgid | kPathSgid | kPathNumbPath, sample());
	EXPECT_EQ(m[0], 1); // base version
	EXPECT_EQ(m[1], 0x03); // SA class
	EXPECT_EQ(m[2], 2); // class version
	EXPECT_EQ(m[3], 0x01); // GET
	EXPECT_EQ(m[4], 0);
	EXPECT_EQ(m[5], 0);
	EXPECT_EQ(m[8], 0x01);
	EXPECT_EQ(m[15], 0x08);
	EXPECT_EQ(m[16], 0x00); // PathRecord 0x0035
	EXPECT_EQ(m[17], 0x35);
	EXPECT_EQ(m[44], 0); // AttributeOffset 8 (64 bytes)
	EXPECT_EQ(m[45], 8);
	EXPECT_EQ(m[55], 0x0c); // component mask bits 2 and 3
	EXPECT_EQ(m[54], 0x10); // bit 12
	EXPECT_EQ(m[56 + 8], 0xfe); // DGID in the attribute
}

TEST(IbcmSaPathRecord, Response)
{
	auto m = build_path_query(77, kPathDlid, sample());
	m[3] = 0x81;
	EXPECT_EQ(parse_path_response(m, 77), sample());
	const auto err = [&](std::uint64_t tid, ByteView mad) {
		try {
			parse_path_response(mad, tid);
		} catch (const std::system_error &e) {
			return e.code().value();
		}
		return 0;
	};
	EXPECT_EQ(err(78, m), EBADMSG); // another TID
	m[8] = 0x12; // the upper half is the kernel agent's: ignored
	EXPECT_EQ(err(77, m), 0);
	EXPECT_EQ(err(77, ByteView(m).first(119)), EBADMSG);
	auto m2 = m;
	m2[3] = 0x01;
	EXPECT_EQ(err(77, m2), EBADMSG); // not a response
	m2 = m;
	m2[17] = 0x38;
	EXPECT_EQ(err(77, m2), EBADMSG);
	m2 = m;
	m2[4] = 0x03; // SA status: no records
	EXPECT_EQ(err(77, m2), EHOSTUNREACH);
}

TEST(IbcmMakePath, FromPortAttr)
{
	ibv_port_attr port{};
	port.lid = 3;
	port.sm_sl = 2;
	port.active_mtu = IBV_MTU_2048;
	port.active_width = 2; // 4x
	port.active_speed = 2; // DDR
	const Gid s = *parse_gid("fe80::1"), d = *parse_gid("fe80::2");
	const PathRecord p = make_path(port, s, 7, d);
	EXPECT_EQ(p.slid, 3);
	EXPECT_EQ(p.dlid, 7);
	EXPECT_EQ(p.sgid, s);
	EXPECT_EQ(p.dgid, d);
	EXPECT_EQ(p.mtu, IBV_MTU_2048);
	EXPECT_EQ(p.rate, IBV_RATE_20_GBPS);
	EXPECT_EQ(p.sl, 2);
	EXPECT_EQ(p.pkey, 0xffff);
	port.active_speed = 1;
	EXPECT_EQ(port_rate(port), IBV_RATE_10_GBPS);
	port.active_width = 1;
	EXPECT_EQ(port_rate(port), IBV_RATE_2_5_GBPS);
	port.active_width = 0;
	EXPECT_EQ(port_rate(port), 3);
}

} // namespace
} // namespace ibcm
