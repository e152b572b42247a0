// SPDX-License-Identifier: GPL-2.0
// rdma_cm interop: service IDs and the cma_hdr private-data prefix.
#include "ibcm/cma.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace ibcm {

std::uint64_t rdma_cm_service_id(PortSpace ps, std::uint16_t port) noexcept
{
	return (static_cast<std::uint64_t>(ps) << 16) | port;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text)
{
	const std::string s(text);
	IpAddress a;
	if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
		a.version = 4;
		return a;
	}
	if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
		a.version = 6;
		return a;
	}
	return std::nullopt;
}

std::string IpAddress::to_string() const
{
	char buf[INET6_ADDRSTRLEN] = {};
	inet_ntop(version == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
	return buf;
}

namespace {

// One 16-byte address field: an IPv6 address as is, an IPv4 address in
// the last 4 bytes after 12 zero bytes.
void put_addr(std::uint8_t *field, const IpAddress &a)
{
	std::memset(field, 0, 16);
	if (a.version == 4)
		std::memcpy(field + 12, a.bytes.data(), 4);
	else
		std::memcpy(field, a.bytes.data(), 16);
}

IpAddress get_addr(const std::uint8_t *field, int version)
{
	IpAddress a;
	a.version = version;
	if (version == 4)
		std::memcpy(a.bytes.data(), field + 12, 4);
	else
		std::memcpy(a.bytes.data(), field, 16);
	return a;
}

} // namespace

std::array<std::uint8_t, kCmaHeaderSize> build_cma_header(const CmaHeader &hdr)
{
	if (hdr.src.version != hdr.dst.version || (hdr.src.version != 4 && hdr.src.version != 6))
		throw std::system_error(EINVAL, std::generic_category(), "cma_hdr: mixed or unknown IP versions");
	std::array<std::uint8_t, kCmaHeaderSize> b{};
	b[0] = kCmaVersion;
	b[1] = static_cast<std::uint8_t>(hdr.src.version << 4);
	b[2] = static_cast<std::uint8_t>(hdr.src_port >> 8);
	b[3] = static_cast<std::uint8_t>(hdr.src_port & 0xff);
	put_addr(&b[4], hdr.src);
	put_addr(&b[20], hdr.dst);
	return b;
}

Bytes cma_req_private_data(const CmaHeader &hdr, ByteView user_data)
{
	if (kCmaHeaderSize + user_data.size() > kReqPrivateData)
		throw std::system_error(EMSGSIZE, std::generic_category(), "cma_hdr + user data > 92 bytes");
	const auto h = build_cma_header(hdr);
	Bytes out(kCmaHeaderSize + user_data.size());
	std::memcpy(out.data(), h.data(), kCmaHeaderSize);
	if (!user_data.empty())
		std::memcpy(out.data() + kCmaHeaderSize, user_data.data(), user_data.size());
	return out;
}

std::optional<CmaHeader> parse_cma_header(ByteView pd)
{
	if (pd.size() < kCmaHeaderSize || pd[0] != kCmaVersion)
		return std::nullopt;
	const int version = pd[1] >> 4;
	if (version != 4 && version != 6)
		return std::nullopt;
	CmaHeader h;
	h.src_port = static_cast<std::uint16_t>((pd[2] << 8) | pd[3]);
	h.src = get_addr(&pd[4], version);
	h.dst = get_addr(&pd[20], version);
	return h;
}

} // namespace ibcm
