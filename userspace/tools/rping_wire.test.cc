// SPDX-License-Identifier: GPL-2.0
// rping's wire format as ibcm_rping speaks it: the advertisement's byte
// image and the ping text (values worked out by hand from rping.c's
// description: big-endian fields; "rdma-ping-N: " and letters from 'A').
#include <gtest/gtest.h>

#include <string>

#include "rping_wire.h"

namespace ibcm::tools {
namespace {

TEST(IbcmRpingWire, AdvertisementIsBigEndianAddrRkeySize)
{
	const auto b = encode_rping_info({0x0102030405060708ULL, 0x11223344U, 64});
	const std::array<std::uint8_t, 16> want{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
						0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x40};
	EXPECT_EQ(b, want);
	const auto back = decode_rping_info(b.data(), b.size());
	ASSERT_TRUE(back);
	EXPECT_EQ(*back, (RpingInfo{0x0102030405060708ULL, 0x11223344U, 64}));
}

TEST(IbcmRpingWire, DecodeWantsExactly16Bytes)
{
	const std::uint8_t buf[17] = {};
	EXPECT_FALSE(decode_rping_info(buf, 15));
	EXPECT_FALSE(decode_rping_info(buf, 17));
	EXPECT_TRUE(decode_rping_info(buf, 16));
}

TEST(IbcmRpingWire, FirstPingText)
{
	const auto d = rping_ping_data(0, 64);
	ASSERT_EQ(d.size(), 64U);
	EXPECT_EQ(d[63], 0);
	// 13 characters of header, 50 letters from 'A', the NUL.
	EXPECT_EQ(std::string(d.data()), "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr");
}

TEST(IbcmRpingWire, LettersStartOneLaterEachPingAndWrapAfterLowercaseZ)
{
	EXPECT_EQ(std::string(rping_ping_data(1, 26).data()), "rdma-ping-1: BCDEFGHIJKLM");
	// Ping 57 starts at 'z' (the 58th letter) and wraps to 'A'.
	EXPECT_EQ(std::string(rping_ping_data(57, 26).data()), "rdma-ping-57: zABCDEFGHIJ");
	// Ping 58 starts at 'A' again.
	EXPECT_EQ(std::string(rping_ping_data(58, 26).data()), "rdma-ping-58: ABCDEFGHIJK");
	// Within one ping, 'z' is followed by 'A'.
	const std::string s(rping_ping_data(40, 40).data());
	EXPECT_EQ(s, "rdma-ping-40: ijklmnopqrstuvwxyzABCDEFG");
}

TEST(IbcmRpingWire, ShortestBufferHoldsTheLongestHeader)
{
	const auto d = rping_ping_data(2147483647, kRpingMinSize);
	// 22 characters of header, 3 letters (2147483647 mod 58 = 7: 'H'), the NUL.
	EXPECT_EQ(std::string(d.data()), "rdma-ping-2147483647: HIJ");
	EXPECT_EQ(d[kRpingMinSize - 1], 0);
}

TEST(IbcmRpingWire, ServerRefusesEmptyOrOversizedAdvertisements)
{
	EXPECT_EQ(rping_adv_problem({0x1000, 7, 64}, 64), "");
	EXPECT_EQ(rping_adv_problem({0x1000, 7, 26}, 64), "");
	EXPECT_EQ(rping_adv_problem({0x1000, 7, 0}, 64), "an advertisement of 0 bytes");
	EXPECT_EQ(rping_adv_problem({0x1000, 7, 65}, 64),
		  "an advertisement of 65 bytes, more than the 64 of our buffer (--size)");
}

TEST(IbcmRpingWire, EchoLengthStopsAfterTheFirstNul)
{
	const char text[] = {'a', 'b', 0, 'c', 0};
	EXPECT_EQ(rping_echo_length(text, 5), 3u);
	EXPECT_EQ(rping_echo_length(text, 2), 2u); // no NUL: all of it
	EXPECT_EQ(rping_echo_length(text, 0), 0u);
	const auto ping = rping_ping_data(3, 64);
	EXPECT_EQ(rping_echo_length(ping.data(), ping.size()), 64u); // the NUL is the last byte
}

} // namespace
} // namespace ibcm::tools
