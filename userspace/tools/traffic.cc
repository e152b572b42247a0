// SPDX-License-Identifier: GPL-2.0
#include "traffic.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace ibcm::tools {

namespace {
constexpr std::uint64_t kSendFlag = 1ULL << 63;

void fill(std::uint8_t *buf, std::size_t size, std::uint64_t msg, int side)
{
	for (std::size_t j = 0; j < size; j++)
		buf[j] = pattern(msg, j, side);
}
} // namespace

RcQp make_traffic_qp(ibv_context *ctx, int port, const TrafficConfig &c)
{
	return RcQp(ctx, port, c.depth, std::max<std::size_t>(c.size, 4096), 2 * c.depth);
}

std::uint8_t pattern(std::uint64_t msg, std::size_t byte, int side)
{
	return static_cast<std::uint8_t>(msg * 7 + byte * 13 + static_cast<std::uint64_t>(side) * 101);
}

std::uint8_t expected_byte(const TrafficConfig &c, std::uint64_t msg, std::size_t byte, int side, int peer_side)
{
	return c.peer_echoes_last ? pattern(c.iters - 1, byte, side) : pattern(msg, byte, peer_side);
}

std::uint64_t prime_receives(RcQp &qp, const TrafficConfig &c)
{
	const auto n = std::min<std::uint64_t>(c.iters, static_cast<std::uint64_t>(c.depth));
	for (std::uint64_t i = 0; i < n; i++)
		qp.post_recv(static_cast<int>(i), i);
	return n;
}

int traffic(RcQp &qp, const TrafficConfig &c, int side, int peer_side, std::uint64_t posted_recv)
{
	using std::chrono::steady_clock;
	std::uint64_t received = 0, sent = 0, send_done = 0;
	const auto depth = static_cast<std::uint64_t>(c.depth);
	auto last_progress = steady_clock::now();
	ibv_wc wc[16];
	while (received < c.iters || send_done < c.iters) {
		while (sent < c.iters && sent - send_done < depth) {
			const int slot = c.depth + static_cast<int>(sent % depth);
			fill(qp.slot(slot), c.size, sent, side);
			qp.post_send(slot, c.size, kSendFlag | sent);
			sent++;
		}
		const int n = ibv_poll_cq(qp.cq(), 16, wc);
		if (n < 0)
			throw std::runtime_error("ibv_poll_cq failed");
		if (n == 0) {
			if (steady_clock::now() - last_progress > c.timeout)
				throw std::runtime_error("traffic stalled: " + std::to_string(send_done) + " sent, " +
							 std::to_string(received) + " received");
			continue;
		}
		last_progress = steady_clock::now();
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				throw std::runtime_error(std::string("completion error: ") +
							 ibv_wc_status_str(wc[i].status));
			if (wc[i].wr_id & kSendFlag) {
				send_done++;
				continue;
			}
			const int slot = static_cast<int>(wc[i].wr_id % depth);
			if (c.verify) {
				if (wc[i].byte_len != c.size) {
					std::fprintf(stderr, "message %llu: %u bytes, want %zu\n",
						     static_cast<unsigned long long>(received), wc[i].byte_len, c.size);
					return kMismatch;
				}
				const std::uint8_t *b = qp.slot(slot);
				for (std::size_t j = 0; j < c.size; j++) {
					const std::uint8_t want = expected_byte(c, received, j, side, peer_side);
					if (b[j] != want) {
						std::fprintf(stderr, "message %llu byte %zu: 0x%02x, want 0x%02x\n",
							     static_cast<unsigned long long>(received), j, b[j], want);
						return kMismatch;
					}
				}
			}
			received++;
			if (posted_recv < c.iters) {
				qp.post_recv(slot, posted_recv);
				posted_recv++;
			}
		}
	}
	return 0;
}

} // namespace ibcm::tools
