// SPDX-License-Identifier: GPL-2.0
// rping's wire protocol (librdmacm/examples/rping.c, read for the facts):
// the 16-byte buffer advertisement each side SENDs and the text the
// client puts in its source buffer for each ping.
//
//   advertisement: address (8 bytes), rkey (4), length (4), all big endian
//
// The client advertises its source buffer, the server RDMA READs it and
// SENDs a 16-byte "go ahead"; the client advertises its sink buffer, the
// server RDMA WRITEs what it read (up to and including the first NUL) and
// SENDs another "go ahead". The server accepts only receives of exactly 16
// bytes.
#ifndef IBCM_TOOLS_RPING_WIRE_H
#define IBCM_TOOLS_RPING_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ibcm::tools {

inline constexpr std::size_t kRpingInfoSize = 16;
inline constexpr std::uint16_t kRpingDefaultPort = 7174;
// rping refuses -S below this: room for "rdma-ping-<INT_MAX>: " and a NUL.
inline constexpr std::size_t kRpingMinSize = 26;
inline constexpr std::size_t kRpingMaxSize = 65535;

struct RpingInfo {
	std::uint64_t addr = 0;
	std::uint32_t rkey = 0;
	std::uint32_t size = 0;
	bool operator==(const RpingInfo &) const = default;
};

std::array<std::uint8_t, kRpingInfoSize> encode_rping_info(const RpingInfo &info);
// nullopt unless exactly 16 bytes.
std::optional<RpingInfo> decode_rping_info(const std::uint8_t *data, std::size_t len);

// The client's source buffer for ping number @ping: "rdma-ping-<ping>: ",
// then letters 'A'..'z' (58 of them, in ASCII order) starting at the
// (@ping mod 58)-th, wrapping after 'z', and a NUL as the last byte.
// @size >= kRpingMinSize.
std::vector<char> rping_ping_data(int ping, std::size_t size);

// The server's side. What is wrong with advertisement @info for a buffer
// of @room bytes ("" if nothing): an empty one or one larger than @room.
std::string rping_adv_problem(const RpingInfo &info, std::size_t room);
// How much the server writes back of the @len bytes it read: up to and
// including the first NUL, all @len if there is none.
std::size_t rping_echo_length(const char *data, std::size_t len);

} // namespace ibcm::tools

#endif
