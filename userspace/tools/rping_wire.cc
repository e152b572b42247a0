// SPDX-License-Identifier: GPL-2.0
#include "rping_wire.h"

#include <cstdio>
#include <cstring>

namespace ibcm::tools {

namespace {
constexpr char kFirst = 'A', kLast = 'z';
constexpr int kLetters = kLast - kFirst + 1;

void put_be(std::uint8_t *p, std::uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		p[i] = static_cast<std::uint8_t>(v & 0xff);
		v >>= 8;
	}
}

std::uint64_t get_be(const std::uint8_t *p, int bytes)
{
	std::uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}
} // namespace

std::array<std::uint8_t, kRpingInfoSize> encode_rping_info(const RpingInfo &info)
{
	std::array<std::uint8_t, kRpingInfoSize> out{};
	put_be(out.data(), info.addr, 8);
	put_be(out.data() + 8, info.rkey, 4);
	put_be(out.data() + 12, info.size, 4);
	return out;
}

std::optional<RpingInfo> decode_rping_info(const std::uint8_t *data, std::size_t len)
{
	if (len != kRpingInfoSize)
		return std::nullopt;
	return RpingInfo{get_be(data, 8), static_cast<std::uint32_t>(get_be(data + 8, 4)),
			 static_cast<std::uint32_t>(get_be(data + 12, 4))};
}

std::vector<char> rping_ping_data(int ping, std::size_t size)
{
	std::vector<char> buf(size, 0);
	const int head = std::snprintf(buf.data(), size, "rdma-ping-%d: ", ping);
	int letter = ping % kLetters;
	if (letter < 0)
		letter += kLetters;
	for (std::size_t i = static_cast<std::size_t>(head); i + 1 < size; i++) {
		buf[i] = static_cast<char>(kFirst + letter);
		letter = (letter + 1) % kLetters;
	}
	if (size)
		buf[size - 1] = 0;
	return buf;
}

std::string rping_adv_problem(const RpingInfo &info, std::size_t room)
{
	if (info.size == 0)
		return "an advertisement of 0 bytes";
	if (info.size > room)
		return "an advertisement of " + std::to_string(info.size) + " bytes, more than the " +
		       std::to_string(room) + " of our buffer (--size)";
	return "";
}

std::size_t rping_echo_length(const char *data, std::size_t len)
{
	const void *nul = std::memchr(data, 0, len);
	return nul ? static_cast<std::size_t>(static_cast<const char *>(nul) - data) + 1 : len;
}

} // namespace ibcm::tools
