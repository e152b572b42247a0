// SPDX-License-Identifier: GPL-2.0
// What the data phase expects from the peer: its own pattern, or (a
// ucmatose client) our last message each time.
#include <gtest/gtest.h>

#include "traffic.h"

namespace ibcm::tools {
namespace {

TEST(IbcmTraffic, ExpectsThePeersPattern)
{
	TrafficConfig c;
	c.iters = 10;
	for (std::uint64_t msg : {0u, 3u, 9u})
		for (std::size_t byte : {0u, 1u, 99u})
			EXPECT_EQ(expected_byte(c, msg, byte, 0, 1), pattern(msg, byte, 1));
	EXPECT_NE(pattern(3, 0, 1), pattern(3, 0, 0)); // the sides differ
}

TEST(IbcmTraffic, AnEchoOfOurLastMessageIsTheSameEveryTime)
{
	TrafficConfig c;
	c.iters = 10;
	c.peer_echoes_last = true;
	for (std::uint64_t msg : {0u, 3u, 9u})
		for (std::size_t byte : {0u, 1u, 99u})
			EXPECT_EQ(expected_byte(c, msg, byte, 0, 1), pattern(9, byte, 0)) << msg << " " << byte;
	EXPECT_NE(pattern(9, 0, 0), pattern(8, 0, 0)); // an echo of another message shows
}

} // namespace
} // namespace ibcm::tools
