// SPDX-License-Identifier: GPL-2.0
// Private: the ib_ucm ABI 5 byte images libibcmxx writes and reads. The
// header is the one the kernel module uses, included by relative path so
// the repository's include/ (kernel headers) never shadows rdma-core's.
#ifndef IBCM_SRC_ABI_H
#define IBCM_SRC_ABI_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <rdma/ib_user_verbs.h>

#include "../../include/rdma/ib_user_cm.h"
#include "ibcm/cm.h"

namespace ibcm::abi {

static_assert(sizeof(ib_ucm_cmd_hdr) == 8);
static_assert(sizeof(ib_user_path_rec) == 64);
static_assert(sizeof(ib_ucm_req) == 64);
static_assert(sizeof(ib_ucm_rep) == 40);
static_assert(sizeof(ib_ucm_event_resp) == 192);
static_assert(sizeof(ib_uverbs_qp_attr) == 144);

// The bytes of one write(): header then payload; hdr.in = sizeof payload,
// hdr.out = @out (the size of the answer the payload's response points at).
std::vector<std::byte> frame(std::uint32_t cmd, const void *payload, std::uint16_t in,
			     std::uint16_t out);
template <typename T> std::vector<std::byte> frame(std::uint32_t cmd, const T &payload, std::uint16_t out)
{
	return frame(cmd, &payload, sizeof(T), out);
}

inline std::uint64_t ptr(const void *p) noexcept
{
	return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

// PathRecord <-> struct ib_user_path_rec (GIDs raw, LIDs/P_Key/flow label
// big endian, the rest host order as the kernel's copy helpers expect).
ib_user_path_rec to_user(const PathRecord &path) noexcept;
PathRecord from_user(const ib_user_path_rec &rec) noexcept;

// The payload of each command. Pointers are written as u64; lengths are
// checked against the CM limits first (EMSGSIZE).
ib_ucm_create_id create_id(std::uint64_t uid, ib_ucm_create_id_resp *resp) noexcept;
ib_ucm_destroy_id destroy_id(std::uint32_t id, ib_ucm_destroy_id_resp *resp) noexcept;
ib_ucm_attr_id attr_id(std::uint32_t id, ib_ucm_attr_id_resp *resp) noexcept;
ib_ucm_listen listen(std::uint32_t id, std::uint64_t service_id, std::uint64_t mask) noexcept;
ib_ucm_notify notify(std::uint32_t id, std::uint32_t event) noexcept;
ib_ucm_req req(std::uint32_t id, const ReqParams &p, const ib_user_path_rec *primary,
	       const ib_user_path_rec *alternate);
ib_ucm_rep rep(std::uint32_t id, std::uint64_t uid, const RepParams &p);
ib_ucm_private_data private_data(std::uint32_t id, ByteView data, std::size_t max);
ib_ucm_info info(std::uint32_t id, std::uint32_t status, ByteView info, std::size_t info_max,
		 ByteView data, std::size_t data_max);
ib_ucm_mra mra(std::uint32_t id, std::uint8_t timeout, ByteView data);
ib_ucm_lap lap(std::uint32_t id, const ib_user_path_rec *path, ByteView data);
ib_ucm_sidr_req sidr_req(std::uint32_t id, const SidrReqParams &p, const ib_user_path_rec *path);
ib_ucm_sidr_rep sidr_rep(std::uint32_t id, const SidrRepParams &p);
ib_ucm_init_qp_attr init_qp_attr(std::uint32_t id, std::uint32_t state, ib_uverbs_qp_attr *resp) noexcept;
ib_ucm_event_get event_get(ib_ucm_event_resp *resp, std::uint8_t *data, std::uint8_t data_len,
			   std::uint8_t *info, std::uint8_t info_len) noexcept;

// struct ib_uverbs_qp_attr -> ibv_qp_attr + mask.
QpAttr from_kernel(const ib_uverbs_qp_attr &k) noexcept;

// The private data / info size each event type carries (0: none).
std::size_t event_data_size(std::uint32_t event) noexcept;
std::size_t event_info_size(std::uint32_t event) noexcept;

// Decodes one event. @resp is what the kernel wrote to the response
// buffer (at least the header and the event's union member, else EBADMSG);
// @data and @info are the buffers handed to the kernel, their sizes the
// data_len/info_len we told it: nothing beyond them is ever read, and no
// more than the event type's own size. An unknown event type, or a
// response too short for its type -> EBADMSG. @channel owns the ids of ReqReceived and
// SidrReqReceived (may be null in tests: then those ids are not destroyed).
Event decode_event(std::span<const std::byte> resp, std::span<const std::uint8_t> data,
		   std::span<const std::uint8_t> info, const std::shared_ptr<detail::Channel> &channel);

} // namespace ibcm::abi

namespace ibcm::detail {

// What a Device and its ids share: the transport and the uid counter.
struct Channel {
	explicit Channel(std::unique_ptr<Transport> t) : transport(std::move(t)) {}
	std::unique_ptr<Transport> transport;
	std::uint64_t next_uid = 1;

	// Writes one command; std::system_error on failure or a short write.
	template <typename T> void command(std::uint32_t cmd, const T &payload, std::uint16_t out)
	{
		send(abi::frame(cmd, payload, out));
	}
	void send(const std::vector<std::byte> &bytes);
};

} // namespace ibcm::detail

#endif
