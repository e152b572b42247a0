// SPDX-License-Identifier: GPL-2.0
// Paths: GID text, make_path(), and the SA PathRecord wire format.
#include "ibcm/path.h"

#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/umad_sa.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace ibcm {

namespace {

// Offsets in the SA MAD (IBA 15.2.1.1): the MAD header, the RMPP header,
// then SM_Key, AttributeOffset, ComponentMask and the attribute.
constexpr std::size_t kMadMethod = 3, kMadStatus = 4, kMadTid = 8, kMadAttrId = 16;
constexpr std::size_t kSaSmKey = 36, kSaAttrOffset = 44, kSaCompMask = 48, kSaData = 56;
static_assert(offsetof(umad_sa_packet, sm_key) == kSaSmKey);
static_assert(offsetof(umad_sa_packet, attr_offset) == kSaAttrOffset);
static_assert(offsetof(umad_sa_packet, comp_mask) == kSaCompMask);
static_assert(offsetof(umad_sa_packet, data) == kSaData);
constexpr std::uint8_t kSaClass = 0x03, kSaClassVersion = 2, kMethodGet = 0x01, kMethodGetResp = 0x81;
constexpr std::uint16_t kAttrPathRecord = 0x0035;

void put16(std::uint8_t *p, std::uint16_t v)
{
	p[0] = static_cast<std::uint8_t>(v >> 8);
	p[1] = static_cast<std::uint8_t>(v);
}
void put32(std::uint8_t *p, std::uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
void put64(std::uint8_t *p, std::uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = static_cast<std::uint8_t>(v >> (56 - 8 * i));
}
std::uint16_t get16(const std::uint8_t *p)
{
	return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
std::uint32_t get32(const std::uint8_t *p)
{
	return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}
std::uint64_t get64(const std::uint8_t *p)
{
	return (std::uint64_t{get32(p)} << 32) | get32(p + 4);
}

[[noreturn]] void bad(int err, const char *what)
{
	throw std::system_error(err, std::generic_category(), what);
}

} // namespace

std::optional<Gid> parse_gid(std::string_view text)
{
	Gid g{};
	const std::string s(text);
	if (inet_pton(AF_INET6, s.c_str(), g.data()) != 1)
		return std::nullopt;
	return g;
}

std::string format_gid(const Gid &gid)
{
	char buf[40];
	std::snprintf(buf, sizeof(buf), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		      gid[0], gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7], gid[8], gid[9], gid[10],
		      gid[11], gid[12], gid[13], gid[14], gid[15]);
	return buf;
}

std::uint8_t port_rate(const ibv_port_attr &port) noexcept
{
	int lanes;
	switch (port.active_width) {
	case 1: lanes = 1; break;
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	default: return 3;
	}
	int per_lane; // in 2.5 Gb/s units
	switch (port.active_speed) {
	case 1: per_lane = 1; break; // SDR
	case 2: per_lane = 2; break; // DDR
	case 4: per_lane = 4; break; // QDR
	default: return 3;
	}
	const ibv_rate r = mult_to_ibv_rate(lanes * per_lane);
	return r == IBV_RATE_MAX ? 3 : static_cast<std::uint8_t>(r);
}

PathRecord make_path(const ibv_port_attr &port, const Gid &sgid, std::uint16_t dlid, const Gid &dgid,
		     std::uint16_t pkey)
{
	PathRecord p;
	p.sgid = sgid;
	p.dgid = dgid;
	p.slid = port.lid;
	p.dlid = dlid;
	p.pkey = pkey;
	p.sl = port.sm_sl & 0xf;
	p.mtu = static_cast<std::uint8_t>(port.active_mtu);
	p.rate = port_rate(port);
	p.packet_life_time = 14; // ~67 ms; no SA to ask
	p.hop_limit = 0; // same subnet: no GRH
	return p;
}

SaPathRecordBytes pack_sa_path(const PathRecord &p)
{
	SaPathRecordBytes b{};
	// bytes 0..7: ServiceID, left zero
	std::memcpy(&b[8], p.dgid.data(), 16);
	std::memcpy(&b[24], p.sgid.data(), 16);
	put16(&b[40], p.dlid);
	put16(&b[42], p.slid);
	put32(&b[44], (p.raw_traffic ? 1U << 31 : 0) | ((p.flow_label & 0xfffff) << 8) | p.hop_limit);
	b[48] = p.traffic_class;
	b[49] = static_cast<std::uint8_t>((p.reversible ? 0x80 : 0) | (p.numb_path & 0x7f));
	put16(&b[50], p.pkey);
	put16(&b[52], p.sl & 0xf);
	b[54] = static_cast<std::uint8_t>((p.mtu_selector & 3) << 6 | (p.mtu & 0x3f));
	b[55] = static_cast<std::uint8_t>((p.rate_selector & 3) << 6 | (p.rate & 0x3f));
	b[56] = static_cast<std::uint8_t>((p.packet_life_time_selector & 3) << 6 | (p.packet_life_time & 0x3f));
	b[57] = p.preference;
	return b;
}

PathRecord unpack_sa_path(ByteView b)
{
	if (b.size() < 64)
		bad(EBADMSG, "PathRecord shorter than 64 bytes");
	PathRecord p;
	std::memcpy(p.dgid.data(), &b[8], 16);
	std::memcpy(p.sgid.data(), &b[24], 16);
	p.dlid = get16(&b[40]);
	p.slid = get16(&b[42]);
	const std::uint32_t w = get32(&b[44]);
	p.raw_traffic = w >> 31;
	p.flow_label = (w >> 8) & 0xfffff;
	p.hop_limit = static_cast<std::uint8_t>(w);
	p.traffic_class = b[48];
	p.reversible = b[49] >> 7;
	p.numb_path = b[49] & 0x7f;
	p.pkey = get16(&b[50]);
	p.sl = b[53] & 0xf;
	p.mtu_selector = b[54] >> 6;
	p.mtu = b[54] & 0x3f;
	p.rate_selector = b[55] >> 6;
	p.rate = b[55] & 0x3f;
	p.packet_life_time_selector = b[56] >> 6;
	p.packet_life_time = b[56] & 0x3f;
	p.preference = b[57];
	return p;
}

std::array<std::uint8_t, 256> build_path_query(std::uint64_t tid, std::uint64_t comp_mask, const PathRecord &q)
{
	std::array<std::uint8_t, 256> m{};
	m[0] = 1; // base version
	m[1] = kSaClass;
	m[2] = kSaClassVersion;
	m[kMadMethod] = kMethodGet;
	put64(&m[kMadTid], tid);
	put16(&m[kMadAttrId], kAttrPathRecord);
	put16(&m[kSaAttrOffset], 64 / 8);
	put64(&m[kSaCompMask], comp_mask);
	const auto rec = pack_sa_path(q);
	std::memcpy(&m[kSaData], rec.data(), rec.size());
	(void)kSaSmKey; // SM_Key 0: a query needs none
	return m;
}

PathRecord parse_path_response(ByteView m, std::uint64_t tid)
{
	if (m.size() < kSaData + 64)
		bad(EBADMSG, "SA response too short");
	// The upper half of a TID is the kernel's (ib_umad puts its agent's
	// number there on the way out): compare the lower half only.
	const bool same_tid = (get64(&m[kMadTid]) & 0xffffffffULL) == (tid & 0xffffffffULL);
	if (m[1] != kSaClass || m[kMadMethod] != kMethodGetResp || get16(&m[kMadAttrId]) != kAttrPathRecord ||
	    !same_tid)
		bad(EBADMSG, "not the SA PathRecord response asked for");
	const std::uint16_t status = get16(&m[kMadStatus]);
	if (status != 0)
		bad(EHOSTUNREACH, "SA PathRecord: no path (MAD status non-zero)");
	return unpack_sa_path(m.subspan(kSaData, 64));
}

} // namespace ibcm
