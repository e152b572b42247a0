// SPDX-License-Identifier: GPL-2.0
#include "iblab/protocol.h"

#include <gtest/gtest.h>

namespace iblab::proto {
namespace {

TEST(Protocol, RoundTripAndByteLayout)
{
	std::string wire = encode({Type::Output, 0x01020304, "abc"});
	ASSERT_EQ(wire.size(), kHeaderSize + 3);
	EXPECT_EQ(wire.substr(0, 4), "IBLB");
	EXPECT_EQ(static_cast<unsigned char>(wire[4]), static_cast<unsigned>(Type::Output));
	EXPECT_EQ(static_cast<unsigned char>(wire[8]), 0x04);  // little endian id
	EXPECT_EQ(static_cast<unsigned char>(wire[12]), 3);    // payload length
	Decoder d;
	d.feed(wire);
	auto f = d.next();
	ASSERT_TRUE(f);
	EXPECT_EQ(f->type, Type::Output);
	EXPECT_EQ(f->id, 0x01020304u);
	EXPECT_EQ(f->payload, "abc");
	EXPECT_FALSE(d.next());
}

TEST(Protocol, ByteByByteAndManyFrames)
{
	std::string wire;
	for (uint32_t i = 0; i < 50; i++)
		wire += encode({Type::Output, i, std::string(i * 37, static_cast<char>('a' + i % 26))});
	Decoder d;
	std::vector<Frame> got;
	for (char c : wire) {
		d.feed(std::string_view(&c, 1));
		while (auto f = d.next())
			got.push_back(*f);
	}
	ASSERT_EQ(got.size(), 50u);
	for (uint32_t i = 0; i < 50; i++) {
		EXPECT_EQ(got[i].id, i);
		EXPECT_EQ(got[i].payload.size(), i * 37);
	}
	EXPECT_EQ(d.skipped_bytes(), 0u);
	EXPECT_EQ(d.buffered(), 0u);
}

TEST(Protocol, ResyncAfterGarbage)
{
	Decoder d;
	std::string half = encode({Type::Exec, 7, "lost"}).substr(0, 9);
	d.feed("garbage" + half + encode({Type::Ping, 8, ""}) + "IB" + encode({Type::Hello, 9, "x"}));
	auto a = d.next();
	ASSERT_TRUE(a);
	EXPECT_EQ(a->type, Type::Ping);
	EXPECT_EQ(a->id, 8u);
	auto b = d.next();
	ASSERT_TRUE(b);
	EXPECT_EQ(b->type, Type::Hello);
	EXPECT_GT(d.skipped_bytes(), 0u);
}

TEST(Protocol, OversizedLengthIsRejected)
{
	std::string bad = encode({Type::Output, 1, ""});
	bad[15] = 0x7f;  // length 0x7f000000 > kMaxPayload
	Decoder d;
	d.feed(bad + encode({Type::Ping, 2, ""}));
	auto f = d.next();
	ASSERT_TRUE(f);
	EXPECT_EQ(f->id, 2u);
}

TEST(Protocol, Messages)
{
	ExecRequest e{"vm1", "echo 'hi'; exit 3", 1500, kExecBackground};
	auto e2 = ExecRequest::decode(e.encode());
	EXPECT_EQ(e2.guest, "vm1");
	EXPECT_EQ(e2.command, e.command);
	EXPECT_EQ(e2.timeout_ms, 1500u);
	EXPECT_EQ(e2.flags, kExecBackground);

	ExitInfo x{-1, kExitTimedOut, "timed out"};
	auto x2 = ExitInfo::decode(x.encode());
	EXPECT_EQ(x2.status, -1);
	EXPECT_EQ(x2.flags, kExitTimedOut);
	EXPECT_EQ(x2.message, "timed out");

	HelloInfo h{"vm0", "6.1.0-56-amd64", 1};
	auto h2 = HelloInfo::decode(h.encode());
	EXPECT_EQ(h2.name, "vm0");
	EXPECT_EQ(h2.kernel, "6.1.0-56-amd64");
	EXPECT_EQ(h2.agent_pid, 1u);

	EXPECT_THROW(ExecRequest::decode(std::string("\x05\x00\x00\x00" "ab", 6)), DecodeError);
	EXPECT_THROW(ExitInfo::decode(""), DecodeError);
}

}  // namespace
}  // namespace iblab::proto
