// SPDX-License-Identifier: GPL-2.0
// Decoding of struct ib_ucm_event_resp into ibcm::Event (see abi.h).
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "abi.h"
#include "ibcm/cm.h"

namespace ibcm::abi {

namespace {

struct EventShape {
	std::size_t data; // private data bytes of the message
	std::size_t info; // ARI / additional info bytes
	std::size_t member; // bytes of the union member that must be present
};

EventShape shape(std::uint32_t event) noexcept
{
	switch (event) {
	case 0: // REQ_ERROR
	case 2: // REP_ERROR
	case 6: // DREQ_ERROR
	case 12: // LAP_ERROR
	case 15: // SIDR_REQ_ERROR
		return {0, 0, sizeof(std::uint32_t)};
	case 1:
		return {kReqPrivateData, 0, sizeof(ib_ucm_req_event_resp)};
	case 3:
		return {kRepPrivateData, 0, sizeof(ib_ucm_rep_event_resp)};
	case 4:
		return {kRtuPrivateData, 0, 0};
	case 5:
	case 9:
		return {0, 0, 0};
	case 7:
		return {kDreqPrivateData, 0, 0};
	case 8:
		return {kDrepPrivateData, 0, 0};
	case 10:
		return {kMraPrivateData, 0, sizeof(ib_ucm_mra_event_resp)};
	case 11:
		return {kRejPrivateData, kRejAriLength, sizeof(ib_ucm_rej_event_resp)};
	case 13:
		return {kLapPrivateData, 0, sizeof(ib_ucm_lap_event_resp)};
	case 14:
		return {kAprPrivateData, kAprInfoLength, sizeof(ib_ucm_apr_event_resp)};
	case 16:
		return {kSidrReqPrivateData, 0, sizeof(ib_ucm_sidr_req_event_resp)};
	case 17:
		return {kSidrRepPrivateData, kSidrRepInfoLength, sizeof(ib_ucm_sidr_rep_event_resp)};
	default:
		return {0, 0, ~std::size_t{0}};
	}
}

[[noreturn]] void bad(const char *what)
{
	throw std::system_error(EBADMSG, std::generic_category(), what);
}

// At most @limit bytes of @buf, and only if @present.
Bytes take(std::span<const std::uint8_t> buf, std::size_t limit, bool present)
{
	if (!present)
		return {};
	const std::size_t n = std::min(limit, buf.size());
	return Bytes(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
}

template <typename E> E with_header(const ib_ucm_event_resp &r)
{
	E e{};
	e.uid = r.uid;
	e.id = r.id;
	return e;
}

template <typename E> E send_error(const ib_ucm_event_resp &r)
{
	E e = with_header<E>(r);
	e.send_status = r.u.send_status;
	return e;
}

} // namespace

std::size_t event_data_size(std::uint32_t event) noexcept
{
	return event < 18 ? shape(event).data : 0;
}

std::size_t event_info_size(std::uint32_t event) noexcept
{
	return event < 18 ? shape(event).info : 0;
}

Event decode_event(std::span<const std::byte> resp_bytes, std::span<const std::uint8_t> data,
		   std::span<const std::uint8_t> info, const std::shared_ptr<detail::Channel> &channel)
{
	constexpr std::size_t head = offsetof(ib_ucm_event_resp, u);
	if (resp_bytes.size() < head)
		bad("ucm event: short response");
	ib_ucm_event_resp r{};
	std::memcpy(&r, resp_bytes.data(), std::min(resp_bytes.size(), sizeof(r)));
	const EventShape s = shape(r.event);
	if (s.member == ~std::size_t{0})
		bad("ucm event: unknown event type");
	if (resp_bytes.size() < head + s.member)
		bad("ucm event: response shorter than its event");
	const bool has_data = r.present & IB_UCM_PRES_DATA;
	const bool has_info = r.present & IB_UCM_PRES_INFO;
	Bytes pd = take(data, s.data, has_data);
	Bytes extra = take(info, s.info, has_info);

	switch (r.event) {
	case 0:
		return send_error<ReqError>(r);
	case 1: {
		const ib_ucm_req_event_resp &q = r.u.req_resp;
		if (q.qp_type != IBV_QPT_RC && q.qp_type != IBV_QPT_UC && q.qp_type != IBV_QPT_UD)
			bad("ucm event: REQ with an unknown QP type");
		ReqReceived e = with_header<ReqReceived>(r);
		// The kernel made a new id for the connection; it reports events
		// under the listener's uid, and the new id owns the handle now.
		if (channel)
			e.conn = ConnectionId(channel, r.id, r.uid);
		if (r.present & IB_UCM_PRES_PRIMARY)
			e.primary_path = from_user(q.primary_path);
		if (r.present & IB_UCM_PRES_ALTERNATE)
			e.alternate_path = from_user(q.alternate_path);
		e.remote_ca_guid = be64toh(q.remote_ca_guid);
		e.remote_qkey = q.remote_qkey;
		e.remote_qpn = q.remote_qpn & 0xffffff;
		e.qp_type = static_cast<ibv_qp_type>(q.qp_type);
		e.starting_psn = q.starting_psn & 0xffffff;
		e.responder_resources = q.responder_resources;
		e.initiator_depth = q.initiator_depth;
		e.local_cm_response_timeout = q.local_cm_response_timeout & 0x1f;
		e.flow_control = q.flow_control;
		e.remote_cm_response_timeout = q.remote_cm_response_timeout & 0x1f;
		e.retry_count = q.retry_count & 0x7;
		e.rnr_retry_count = q.rnr_retry_count & 0x7;
		e.srq = q.srq;
		e.port = q.port;
		e.private_data = std::move(pd);
		return e;
	}
	case 2:
		return send_error<RepError>(r);
	case 3: {
		const ib_ucm_rep_event_resp &q = r.u.rep_resp;
		RepReceived e = with_header<RepReceived>(r);
		e.remote_ca_guid = be64toh(q.remote_ca_guid);
		e.remote_qkey = q.remote_qkey;
		e.remote_qpn = q.remote_qpn & 0xffffff;
		e.starting_psn = q.starting_psn & 0xffffff;
		e.responder_resources = q.responder_resources;
		e.initiator_depth = q.initiator_depth;
		e.target_ack_delay = q.target_ack_delay & 0x1f;
		e.failover_accepted = q.failover_accepted & 0x3;
		e.flow_control = q.flow_control;
		e.rnr_retry_count = q.rnr_retry_count & 0x7;
		e.srq = q.srq;
		e.private_data = std::move(pd);
		return e;
	}
	case 4:
	case 5: {
		Established e = with_header<Established>(r);
		e.by_user = r.event == 5;
		e.private_data = std::move(pd);
		return e;
	}
	case 6:
		return send_error<DreqError>(r);
	case 7: {
		DreqReceived e = with_header<DreqReceived>(r);
		e.private_data = std::move(pd);
		return e;
	}
	case 8: {
		DrepReceived e = with_header<DrepReceived>(r);
		e.private_data = std::move(pd);
		return e;
	}
	case 9:
		return with_header<TimewaitExit>(r);
	case 10: {
		MraReceived e = with_header<MraReceived>(r);
		e.service_timeout = r.u.mra_resp.timeout & 0x1f;
		e.private_data = std::move(pd);
		return e;
	}
	case 11: {
		RejReceived e = with_header<RejReceived>(r);
		e.reason = r.u.rej_resp.reason;
		e.ari = std::move(extra);
		e.private_data = std::move(pd);
		return e;
	}
	case 12:
		return send_error<LapError>(r);
	case 13: {
		LapReceived e = with_header<LapReceived>(r);
		e.alternate_path = from_user(r.u.lap_resp.path);
		e.private_data = std::move(pd);
		return e;
	}
	case 14: {
		AprReceived e = with_header<AprReceived>(r);
		e.status = r.u.apr_resp.status;
		e.info = std::move(extra);
		e.private_data = std::move(pd);
		return e;
	}
	case 15:
		return send_error<SidrReqError>(r);
	case 16: {
		SidrReqReceived e = with_header<SidrReqReceived>(r);
		if (channel)
			e.conn = ConnectionId(channel, r.id, r.uid);
		e.pkey = r.u.sidr_req_resp.pkey;
		e.port = r.u.sidr_req_resp.port;
		e.private_data = std::move(pd);
		return e;
	}
	default: {
		SidrRepReceived e = with_header<SidrRepReceived>(r);
		e.status = r.u.sidr_rep_resp.status;
		e.qkey = r.u.sidr_rep_resp.qkey;
		e.qpn = r.u.sidr_rep_resp.qpn & 0xffffff;
		e.info = std::move(extra);
		e.private_data = std::move(pd);
		return e;
	}
	}
}

} // namespace ibcm::abi

namespace ibcm {

const EventHeader &header(const Event &event) noexcept
{
	return std::visit([](const auto &e) -> const EventHeader & { return e; }, event);
}

const char *event_name(const Event &event) noexcept
{
	static const char *const names[] = {
		"ReqReceived", "RepReceived", "Established", "RejReceived", "MraReceived",
		"DreqReceived", "DrepReceived", "TimewaitExit", "LapReceived", "AprReceived",
		"SidrReqReceived", "SidrRepReceived", "ReqError", "RepError", "DreqError",
		"LapError", "SidrReqError",
	};
	static_assert(std::size(names) == std::variant_size_v<Event>);
	return names[event.index()];
}

} // namespace ibcm
