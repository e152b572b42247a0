// SPDX-License-Identifier: GPL-2.0
// ibcm: common types of the connection manager library (Documentation/userspace.md).
//
// Error policy: every function that talks to the kernel or checks its input
// throws std::system_error in std::generic_category() with the errno (the
// kernel's, or EINVAL/EMSGSIZE/EBADMSG/... for what the library refuses
// itself). Destructors never throw. Functions that merely parse bytes
// (parse_cma_header, ...) return std::optional instead.
#ifndef IBCM_TYPES_H
#define IBCM_TYPES_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ibcm {

using Gid = std::array<std::uint8_t, 16>;
using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;

// Largest private data / ARI / info of each CM message (IBA 12.6).
inline constexpr std::size_t kReqPrivateData = 92;
inline constexpr std::size_t kRepPrivateData = 196;
inline constexpr std::size_t kRejPrivateData = 148;
inline constexpr std::size_t kMraPrivateData = 222;
inline constexpr std::size_t kRtuPrivateData = 224;
inline constexpr std::size_t kDreqPrivateData = 220;
inline constexpr std::size_t kDrepPrivateData = 224;
inline constexpr std::size_t kLapPrivateData = 168;
inline constexpr std::size_t kAprPrivateData = 148;
inline constexpr std::size_t kSidrReqPrivateData = 216;
inline constexpr std::size_t kSidrRepPrivateData = 136;
inline constexpr std::size_t kRejAriLength = 72;
inline constexpr std::size_t kAprInfoLength = 72;
inline constexpr std::size_t kSidrRepInfoLength = 72;

// REJ reasons used by the tools and tests (IBA 12.6.7.2).
inline constexpr std::uint32_t kRejNoQp = 1;
inline constexpr std::uint32_t kRejInvalidServiceId = 8;
inline constexpr std::uint32_t kRejStaleConn = 10;
inline constexpr std::uint32_t kRejInvalidGid = 12;
inline constexpr std::uint32_t kRejConsumerDefined = 28;

// APR:APStatus values used by the tools and tests (IBA 12.6.15).
inline constexpr std::uint32_t kAprSuccess = 0;
inline constexpr std::uint32_t kAprReject = 3;

// A path between two ports, host byte order, as an SA PathRecord gives it.
// mtu, rate and packet_life_time are the IBA encodings (mtu 1..5 = 256..4096,
// rate 2 = 2.5 Gb/s, 3 = 10 Gb/s, ...; packet life time 4.096 us * 2^n).
struct PathRecord {
	Gid dgid{};
	Gid sgid{};
	std::uint16_t dlid = 0;
	std::uint16_t slid = 0;
	bool raw_traffic = false;
	std::uint32_t flow_label = 0; // 20 bits
	std::uint8_t hop_limit = 0;
	std::uint8_t traffic_class = 0;
	bool reversible = true;
	std::uint8_t numb_path = 1; // 7 bits
	std::uint16_t pkey = 0xffff;
	std::uint8_t sl = 0; // 4 bits
	std::uint8_t mtu_selector = 2; // 2 = exactly
	std::uint8_t mtu = 4; // 2048
	std::uint8_t rate_selector = 2;
	std::uint8_t rate = 3; // 10 Gb/s
	std::uint8_t packet_life_time_selector = 2;
	std::uint8_t packet_life_time = 14;
	std::uint8_t preference = 0;

	bool operator==(const PathRecord &) const = default;
};

// "fe80:0000:...:0001" or "fe80::1": a GID as text. Returns nullopt if malformed.
std::optional<Gid> parse_gid(std::string_view text);
std::string format_gid(const Gid &gid);

} // namespace ibcm

#endif
