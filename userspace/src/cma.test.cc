// SPDX-License-Identifier: GPL-2.0
// rdma_cm interop: cma_hdr byte images for IPv4 and IPv6 (wave2-protocols
// §2.4: version 0x00, ip_version << 4, be16 source port, 16-byte source and
// destination addresses, IPv4 in the last 4 bytes), and service IDs.
#include <gtest/gtest.h>

#include <system_error>

#include "ibcm/cma.h"

namespace ibcm {
namespace {

CmaHeader v4()
{
	return {*IpAddress::parse("192.168.77.1"), *IpAddress::parse("192.168.77.2"), 0x1234};
}

TEST(IbcmCma, ServiceIds)
{
	EXPECT_EQ(rdma_cm_service_id(PortSpace::tcp, 7174), 0x0000000001061c06ULL);
	EXPECT_EQ(rdma_cm_service_id(PortSpace::tcp, 0), 0x0000000001060000ULL);
	EXPECT_EQ(rdma_cm_service_id(PortSpace::udp, 0xffff), 0x000000000111ffffULL);
	EXPECT_EQ(rdma_cm_service_id(PortSpace::ib, 1), 0x00000000013f0001ULL);
	EXPECT_EQ(rdma_cm_service_id(PortSpace::ipoib, 2), 0x0000000000020002ULL);
}

TEST(IbcmCma, Ipv4ByteImage)
{
	const std::array<std::uint8_t, 36> want = {
		0x00, 0x40, 0x12, 0x34,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 77, 1,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 77, 2,
	};
	EXPECT_EQ(build_cma_header(v4()), want);
}

TEST(IbcmCma, Ipv6ByteImage)
{
	CmaHeader h{*IpAddress::parse("fe80::1"), *IpAddress::parse("2001:db8::abcd"), 18515};
	const std::array<std::uint8_t, 36> want = {
		0x00, 0x60, 0x48, 0x53,
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd,
	};
	EXPECT_EQ(build_cma_header(h), want);
	const auto parsed = parse_cma_header(ByteView(want));
	ASSERT_TRUE(parsed.has_value());
	EXPECT_EQ(*parsed, h);
	EXPECT_EQ(parsed->src.to_string(), "fe80::1");
}

TEST(IbcmCma, ParseRoundTripAndUserData)
{
	const Bytes pd = cma_req_private_data(v4(), Bytes{7, 8, 9});
	ASSERT_EQ(pd.size(), 39U);
	EXPECT_EQ(pd[36], 7);
	const auto h = parse_cma_header(pd);
	ASSERT_TRUE(h.has_value());
	EXPECT_EQ(*h, v4());
	EXPECT_EQ(h->dst.to_string(), "192.168.77.2");
	EXPECT_EQ(cma_req_private_data(v4(), Bytes(56)).size(), 92U);
	try {
		cma_req_private_data(v4(), Bytes(57));
		FAIL() << "93 bytes of REQ private data";
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EMSGSIZE);
	}
}

TEST(IbcmCma, ParseRejects)
{
	auto b = build_cma_header(v4());
	EXPECT_FALSE(parse_cma_header(ByteView(b).first(35)).has_value());
	auto bad = b;
	bad[0] = 0x01; // cma_version
	EXPECT_FALSE(parse_cma_header(bad).has_value());
	bad = b;
	bad[1] = 0x04; // the version in the low nibble
	EXPECT_FALSE(parse_cma_header(bad).has_value());
	bad[1] = 0x50;
	EXPECT_FALSE(parse_cma_header(bad).has_value());
	bad[1] = 0x00;
	EXPECT_FALSE(parse_cma_header(bad).has_value());
}

TEST(IbcmCma, MixedVersionsRefused)
{
	CmaHeader h{*IpAddress::parse("10.0.0.1"), *IpAddress::parse("::1"), 1};
	EXPECT_THROW(build_cma_header(h), std::system_error);
	EXPECT_FALSE(IpAddress::parse("10.0.0.256").has_value());
	EXPECT_FALSE(IpAddress::parse("").has_value());
}

} // namespace
} // namespace ibcm
