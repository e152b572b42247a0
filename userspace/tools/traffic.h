// SPDX-License-Identifier: GPL-2.0
// The data phase of ibcm_pingpong (and of the loopback check): SEND
// messages both ways on one RC QP, every byte checked.
#ifndef IBCM_TOOLS_TRAFFIC_H
#define IBCM_TOOLS_TRAFFIC_H

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "ibcm/verbs.h"

namespace ibcm::tools {

inline constexpr int kMismatch = 3; // exit status on wrong data

struct TrafficConfig {
	std::uint64_t iters = 1000;
	std::size_t size = 64;
	int depth = 64;
	bool verify = true;
	// The peer sends back our last message each time instead of its own
	// pattern: ucmatose's client receives all of ours into one buffer and
	// SENDs that buffer (ibcm_pingpong --echo-of-last).
	bool peer_echoes_last = false;
	std::chrono::milliseconds timeout{30000};
};

// Receive slots 0..depth-1, send slots depth..2*depth-1, each at least
// 4096 bytes (a peer may send more than we do: ucmatose sends 100).
RcQp make_traffic_qp(ibv_context *ctx, int port, const TrafficConfig &c);

// Byte @byte of message @msg as side @side sends it.
std::uint8_t pattern(std::uint64_t msg, std::size_t byte, int side);

// Byte @byte of the @msg-th message we receive, as @side from @peer_side:
// the peer's pattern, or with c.peer_echoes_last our last message's.
std::uint8_t expected_byte(const TrafficConfig &c, std::uint64_t msg, std::size_t byte, int side, int peer_side);

// The first receives: post them once the QP is in INIT and before the
// peer may send. Returns how many were posted.
std::uint64_t prime_receives(RcQp &qp, const TrafficConfig &c);

// Sends c.iters messages as @side and receives c.iters from @peer_side,
// up to c.depth outstanding each way (RNR retry covers a slow receiver).
// Returns 0, or kMismatch at the first wrong length or byte (printed);
// throws std::runtime_error on a completion error or a stall.
int traffic(RcQp &qp, const TrafficConfig &c, int side, int peer_side, std::uint64_t posted_recv);

} // namespace ibcm::tools

#endif
