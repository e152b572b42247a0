// SPDX-License-Identifier: GPL-2.0
// Test-only helpers: read integers out of byte images.
#ifndef IBCM_SRC_TEST_UTIL_H
#define IBCM_SRC_TEST_UTIL_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ibcm::test {

// Host order (the ABI's __u16/__u32/__u64 fields).
template <typename T> T host_at(const std::vector<std::byte> &b, std::size_t off)
{
	T v{};
	std::memcpy(&v, b.data() + off, sizeof(T));
	return v;
}

// Big endian, @n bytes.
inline std::uint64_t be_at(const std::vector<std::byte> &b, std::size_t off, std::size_t n)
{
	std::uint64_t v = 0;
	for (std::size_t i = 0; i < n; i++)
		v = (v << 8) | std::to_integer<std::uint64_t>(b[off + i]);
	return v;
}

inline std::uint8_t u8_at(const std::vector<std::byte> &b, std::size_t off)
{
	return std::to_integer<std::uint8_t>(b[off]);
}

} // namespace ibcm::test

#endif
