// SPDX-License-Identifier: GPL-2.0
// ibcm: paths. make_path() builds one without the SA (loopback, or a peer
// whose LID and GID are known); SaClient asks the port's SM for a
// PathRecord through libibumad.
#ifndef IBCM_PATH_H
#define IBCM_PATH_H

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <infiniband/verbs.h>

#include "ibcm/types.h"

namespace ibcm {

// A path from the port described by @port (its LID, MTU, speed, ...) and
// GID @sgid to @dlid / @dgid. For loopback pass the port's own LID and GID.
PathRecord make_path(const ibv_port_attr &port, const Gid &sgid, std::uint16_t dlid,
		     const Gid &dgid, std::uint16_t pkey = 0xffff);
// The IBA rate encoding of a port's active width and speed (3 if unknown).
std::uint8_t port_rate(const ibv_port_attr &port) noexcept;

// The 64-byte SA PathRecord attribute (IBA 15.2.5.16), network order.
using SaPathRecordBytes = std::array<std::uint8_t, 64>;
SaPathRecordBytes pack_sa_path(const PathRecord &path);
PathRecord unpack_sa_path(ByteView bytes); // EBADMSG if shorter than 64

// PathRecord component mask bits (IBA 15.2.5.16).
inline constexpr std::uint64_t kPathDgid = 1ULL << 2;
inline constexpr std::uint64_t kPathSgid = 1ULL << 3;
inline constexpr std::uint64_t kPathDlid = 1ULL << 4;
inline constexpr std::uint64_t kPathSlid = 1ULL << 5;
inline constexpr std::uint64_t kPathNumbPath = 1ULL << 12;
inline constexpr std::uint64_t kPathPkey = 1ULL << 13;

// A 256-byte SA GET(PathRecord) MAD with transaction ID @tid.
std::array<std::uint8_t, 256> build_path_query(std::uint64_t tid, std::uint64_t comp_mask,
					       const PathRecord &query);
// The PathRecord of a GET_RESP to @tid (its lower 32 bits: ib_umad owns
// the upper half). EBADMSG for a MAD that is not one (short, wrong
// class/method/attribute/TID); EHOSTUNREACH if the SA
// answered with a non-zero status (no such path).
PathRecord parse_path_response(ByteView mad, std::uint64_t tid);

// The SA of one local port, through /dev/infiniband/umadN.
class SaClient {
public:
	SaClient(const std::string &ca, int port);
	~SaClient();
	SaClient(const SaClient &) = delete;
	SaClient &operator=(const SaClient &) = delete;

	PathRecord path_by_dgid(const Gid &dgid, std::chrono::milliseconds timeout = std::chrono::seconds(2));
	PathRecord path_by_dlid(std::uint16_t dlid, std::chrono::milliseconds timeout = std::chrono::seconds(2));
	const Gid &port_gid() const noexcept { return sgid_; }
	std::uint16_t port_lid() const noexcept { return lid_; }

private:
	PathRecord query(std::uint64_t comp_mask, const PathRecord &q, std::chrono::milliseconds timeout);
	int fd_ = -1;
	int agent_ = -1;
	std::uint16_t sm_lid_ = 0;
	std::uint8_t sm_sl_ = 0;
	std::uint16_t lid_ = 0;
	Gid sgid_{};
	std::uint64_t next_tid_ = 0;
};

} // namespace ibcm

#endif
