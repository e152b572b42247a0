// SPDX-License-Identifier: GPL-2.0
// ibcm: interop with rdma_cm peers (rping -s, ucmatose -s, ...). An rdma_cm
// server listens on the service ID (port space << 16) | port and expects
// the REQ's private data to begin with a 36-byte cma_hdr naming the IP
// addresses; REPs carry no header. Nothing here touches a device.
#ifndef IBCM_CMA_H
#define IBCM_CMA_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ibcm/types.h"

namespace ibcm {

enum class PortSpace : std::uint16_t {
	ipoib = 0x0002,
	tcp = 0x0106, // RDMA_PS_TCP: rping, ucmatose, perftest -R
	udp = 0x0111, // RDMA_PS_UDP: SIDR
	ib = 0x013f, // RDMA_PS_IB: no cma_hdr
};

// (ps << 16) | port, host order: 0x0000000001060000 | port for TCP.
std::uint64_t rdma_cm_service_id(PortSpace ps, std::uint16_t port) noexcept;

// An IPv4 or IPv6 address; IPv4 kept in the first 4 bytes of @bytes.
struct IpAddress {
	int version = 4; // 4 or 6
	std::array<std::uint8_t, 16> bytes{};

	static std::optional<IpAddress> parse(std::string_view text);
	std::string to_string() const;
	bool operator==(const IpAddress &) const = default;
};

inline constexpr std::size_t kCmaHeaderSize = 36;
inline constexpr std::uint8_t kCmaVersion = 0x00;

struct CmaHeader {
	IpAddress src;
	IpAddress dst;
	std::uint16_t src_port = 0;
	bool operator==(const CmaHeader &) const = default;
};

// The 36 header bytes: version 0x00, ip_version << 4, source port (big
// endian), source and destination addresses (IPv4 in the last 4 bytes of
// each 16). EINVAL (std::system_error) if the versions of src and dst differ.
std::array<std::uint8_t, kCmaHeaderSize> build_cma_header(const CmaHeader &hdr);
// The header followed by @user_data; EMSGSIZE beyond the REQ's 92 bytes.
Bytes cma_req_private_data(const CmaHeader &hdr, ByteView user_data = {});
// nullopt if shorter than 36 bytes, cma_version is not 0 or ip_version is
// neither 4 nor 6.
std::optional<CmaHeader> parse_cma_header(ByteView private_data);

} // namespace ibcm

#endif
