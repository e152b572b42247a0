// SPDX-License-Identifier: GPL-2.0
// Event decoding from hand-built ib_ucm_event_resp buffers, hostile ones
// included: short responses, unknown types, present bits without data, and
// private data / info bounded by the buffer lengths handed to the kernel.
#include <gtest/gtest.h>

#include "abi.h"

namespace ibcm {
namespace {

std::span<const std::byte> bytes_of(const ib_ucm_event_resp &r, std::size_t n = sizeof(ib_ucm_event_resp))
{
	return std::as_bytes(std::span(&r, 1)).first(n);
}

std::vector<std::uint8_t> counting(std::size_t n)
{
	std::vector<std::uint8_t> v(n);
	for (std::size_t i = 0; i < n; i++)
		v[i] = static_cast<std::uint8_t>(i + 1);
	return v;
}

ib_ucm_event_resp make(std::uint32_t event, std::uint32_t present = 0)
{
	ib_ucm_event_resp r{};
	r.uid = 0x1122334455ULL;
	r.id = 17;
	r.event = event;
	r.present = present;
	return r;
}

int decode_errno(std::span<const std::byte> resp)
{
	try {
		abi::decode_event(resp, {}, {}, nullptr);
	} catch (const std::system_error &e) {
		return e.code().value();
	}
	return 0;
}

TEST(IbcmEventDecode, ReqReceivedWithPaths)
{
	auto r = make(1, IB_UCM_PRES_DATA | IB_UCM_PRES_PRIMARY | IB_UCM_PRES_ALTERNATE);
	auto &q = r.u.req_resp;
	q.primary_path.dlid = htobe16(0x12);
	q.primary_path.slid = htobe16(0x34);
	q.primary_path.mtu = IBV_MTU_2048;
	q.primary_path.pkey = htobe16(0xffff);
	q.primary_path.dgid[0] = 0xfe;
	q.alternate_path.dlid = htobe16(0x56);
	q.remote_ca_guid = htobe64(0x0002c90300001234ULL);
	q.remote_qkey = 0x11;
	q.remote_qpn = 0x0a0b0c;
	q.qp_type = 2;
	q.starting_psn = 0x123456;
	q.responder_resources = 4;
	q.initiator_depth = 2;
	q.local_cm_response_timeout = 20;
	q.flow_control = 1;
	q.remote_cm_response_timeout = 18;
	q.retry_count = 7;
	q.rnr_retry_count = 6;
	q.srq = 1;
	q.port = 1;
	const auto data = counting(255);
	Event ev = abi::decode_event(bytes_of(r), data, {}, nullptr);
	auto *e = std::get_if<ReqReceived>(&ev);
	ASSERT_NE(e, nullptr);
	EXPECT_EQ(e->uid, 0x1122334455ULL);
	EXPECT_EQ(e->id, 17U);
	EXPECT_FALSE(e->conn); // no channel given
	EXPECT_EQ(e->primary_path.dlid, 0x12);
	EXPECT_EQ(e->primary_path.slid, 0x34);
	EXPECT_EQ(e->primary_path.mtu, IBV_MTU_2048);
	EXPECT_EQ(e->primary_path.dgid[0], 0xfe);
	ASSERT_TRUE(e->alternate_path.has_value());
	EXPECT_EQ(e->alternate_path->dlid, 0x56);
	EXPECT_EQ(e->remote_ca_guid, 0x0002c90300001234ULL);
	EXPECT_EQ(e->remote_qpn, 0x0a0b0cU);
	EXPECT_EQ(e->qp_type, IBV_QPT_RC);
	EXPECT_EQ(e->starting_psn, 0x123456U);
	EXPECT_EQ(e->responder_resources, 4);
	EXPECT_EQ(e->initiator_depth, 2);
	EXPECT_EQ(e->local_cm_response_timeout, 20);
	EXPECT_TRUE(e->flow_control);
	EXPECT_EQ(e->remote_cm_response_timeout, 18);
	EXPECT_EQ(e->retry_count, 7);
	EXPECT_EQ(e->rnr_retry_count, 6);
	EXPECT_TRUE(e->srq);
	EXPECT_EQ(e->port, 1);
	// Exactly the REQ's 92 bytes of the 255-byte buffer: not one more.
	ASSERT_EQ(e->private_data.size(), kReqPrivateData);
	EXPECT_EQ(e->private_data.front(), 1);
	EXPECT_EQ(e->private_data.back(), 92);
	EXPECT_STREQ(event_name(ev), "ReqReceived");
	EXPECT_EQ(header(ev).id, 17U);
}

TEST(IbcmEventDecode, PrivateDataNeverBeyondTheBufferWeGave)
{
	const auto data = counting(10);
	for (std::uint32_t ev : {1U, 3U, 4U, 7U, 8U, 10U, 11U, 13U, 14U, 16U, 17U}) {
		auto r = make(ev, IB_UCM_PRES_DATA);
		if (ev == 1)
			r.u.req_resp.qp_type = 2;
		Event e = abi::decode_event(bytes_of(r), data, {}, nullptr);
		const Bytes *pd = std::visit(
			[](auto &x) -> const Bytes * {
				if constexpr (requires { x.private_data; })
					return &x.private_data;
				else
					return nullptr;
			},
			e);
		ASSERT_NE(pd, nullptr) << ev;
		EXPECT_EQ(pd->size(), 10U) << "event " << ev;
	}
}

TEST(IbcmEventDecode, PrivateDataSizeOfEachType)
{
	const auto data = counting(255);
	const std::pair<std::uint32_t, std::size_t> sizes[] = {
		{3, 196}, {4, 224}, {7, 220}, {8, 224}, {10, 222}, {11, 148}, {13, 168}, {14, 148}, {16, 216}, {17, 136},
	};
	for (auto [ev, n] : sizes) {
		EXPECT_EQ(abi::event_data_size(ev), n) << ev;
		auto r = make(ev, IB_UCM_PRES_DATA);
		Event e = abi::decode_event(bytes_of(r), data, {}, nullptr);
		const std::size_t got = std::visit(
			[](auto &x) -> std::size_t {
				if constexpr (requires { x.private_data; })
					return x.private_data.size();
				else
					return 0;
			},
			e);
		EXPECT_EQ(got, n) << "event " << ev;
	}
	EXPECT_EQ(abi::event_data_size(9), 0U);
	EXPECT_EQ(abi::event_data_size(1000), 0U);
}

// The buffer we told the kernel about is one byte short of the message's
// private data, or exactly its size: never a byte beyond either bound.
TEST(IbcmEventDecode, DataLenBoundExact)
{
	const auto data = counting(255);
	for (std::uint32_t ev : {1U, 3U, 4U, 7U, 8U, 10U, 11U, 13U, 14U, 16U, 17U}) {
		const std::size_t n = abi::event_data_size(ev);
		for (std::size_t cap : {n - 1, n, n + 1}) {
			auto r = make(ev, IB_UCM_PRES_DATA);
			if (ev == 1)
				r.u.req_resp.qp_type = 2;
			Event e = abi::decode_event(bytes_of(r), std::span(data).first(cap), {}, nullptr);
			const std::size_t got = std::visit(
				[](auto &x) -> std::size_t {
					if constexpr (requires { x.private_data; })
						return x.private_data.size();
					else
						return 0;
				},
				e);
			EXPECT_EQ(got, std::min(cap, n)) << "event " << ev << " buffer " << cap;
		}
	}
}

TEST(IbcmEventDecode, PresentBitClearMeansNoData)
{
	auto r = make(7); // DREQ, no PRES_DATA
	const auto data = counting(255);
	Event e = abi::decode_event(bytes_of(r), data, data, nullptr);
	EXPECT_TRUE(std::get<DreqReceived>(e).private_data.empty());
}

TEST(IbcmEventDecode, RejWithAri)
{
	auto r = make(11, IB_UCM_PRES_DATA | IB_UCM_PRES_INFO);
	r.u.rej_resp.reason = kRejInvalidServiceId;
	const auto data = counting(255), info = counting(255);
	Event e = abi::decode_event(bytes_of(r), data, info, nullptr);
	auto &rej = std::get<RejReceived>(e);
	EXPECT_EQ(rej.reason, 8U);
	EXPECT_EQ(rej.ari.size(), kRejAriLength);
	EXPECT_EQ(rej.private_data.size(), kRejPrivateData);
	// Info shorter than the ARI: only what the buffer holds.
	e = abi::decode_event(bytes_of(r), data, std::span(info).first(16), nullptr);
	EXPECT_EQ(std::get<RejReceived>(e).ari.size(), 16U);
	// Info present bit clear: none.
	r.present = IB_UCM_PRES_DATA;
	e = abi::decode_event(bytes_of(r), data, info, nullptr);
	EXPECT_TRUE(std::get<RejReceived>(e).ari.empty());
}

TEST(IbcmEventDecode, RepMraApSidr)
{
	auto r = make(3);
	r.u.rep_resp.remote_qpn = 0xff000abc; // masked to 24 bits
	r.u.rep_resp.starting_psn = 5;
	r.u.rep_resp.target_ack_delay = 0xff;
	r.u.rep_resp.remote_ca_guid = htobe64(7);
	auto rep = std::get<RepReceived>(abi::decode_event(bytes_of(r), {}, {}, nullptr));
	EXPECT_EQ(rep.remote_qpn, 0xabcU);
	EXPECT_EQ(rep.target_ack_delay, 0x1f);
	EXPECT_EQ(rep.remote_ca_guid, 7U);

	r = make(10);
	r.u.mra_resp.timeout = 24;
	EXPECT_EQ(std::get<MraReceived>(abi::decode_event(bytes_of(r), {}, {}, nullptr)).service_timeout, 24);

	r = make(17, IB_UCM_PRES_INFO);
	r.u.sidr_rep_resp.status = 0;
	r.u.sidr_rep_resp.qkey = 0x01234567;
	r.u.sidr_rep_resp.qpn = 0x48;
	const auto info = counting(255);
	auto sr = std::get<SidrRepReceived>(abi::decode_event(bytes_of(r), {}, info, nullptr));
	EXPECT_EQ(sr.qkey, 0x01234567U);
	EXPECT_EQ(sr.qpn, 0x48U);
	EXPECT_EQ(sr.info.size(), kSidrRepInfoLength);

	r = make(16);
	r.u.sidr_req_resp.pkey = 0xffff;
	r.u.sidr_req_resp.port = 2;
	auto sq = std::get<SidrReqReceived>(abi::decode_event(bytes_of(r), {}, {}, nullptr));
	EXPECT_EQ(sq.pkey, 0xffff);
	EXPECT_EQ(sq.port, 2);

	r = make(14, IB_UCM_PRES_INFO);
	r.u.apr_resp.status = 3;
	auto apr = std::get<AprReceived>(abi::decode_event(bytes_of(r), {}, info, nullptr));
	EXPECT_EQ(apr.status, 3U);
	EXPECT_EQ(apr.info.size(), kAprInfoLength);
}

TEST(IbcmEventDecode, EstablishedAndErrors)
{
	auto r = make(4);
	EXPECT_FALSE(std::get<Established>(abi::decode_event(bytes_of(r), {}, {}, nullptr)).by_user);
	r = make(5);
	EXPECT_TRUE(std::get<Established>(abi::decode_event(bytes_of(r), {}, {}, nullptr)).by_user);
	r = make(9);
	EXPECT_TRUE(std::holds_alternative<TimewaitExit>(abi::decode_event(bytes_of(r), {}, {}, nullptr)));
	r = make(8);
	EXPECT_TRUE(std::holds_alternative<DrepReceived>(abi::decode_event(bytes_of(r), {}, {}, nullptr)));
	const std::pair<std::uint32_t, std::size_t> errors[] = {{0, 12}, {2, 13}, {6, 14}, {12, 15}, {15, 16}};
	for (auto [ev, index] : errors) {
		r = make(ev);
		r.u.send_status = IBV_WC_RESP_TIMEOUT_ERR;
		Event e = abi::decode_event(bytes_of(r), {}, {}, nullptr);
		EXPECT_EQ(e.index(), index) << ev;
		const auto status = std::visit(
			[](auto &x) -> std::uint32_t {
				if constexpr (std::is_base_of_v<SendError, std::decay_t<decltype(x)>>)
					return x.send_status;
				else
					return 0;
			},
			e);
		EXPECT_EQ(status, static_cast<std::uint32_t>(IBV_WC_RESP_TIMEOUT_ERR)) << ev;
	}
}

TEST(IbcmEventDecode, HostileResponses)
{
	auto r = make(9);
	EXPECT_EQ(decode_errno(bytes_of(r, 23)), EBADMSG); // shorter than the header
	EXPECT_EQ(decode_errno(bytes_of(r, 24)), 0); // TIMEWAIT_EXIT needs no union
	r = make(18);
	EXPECT_EQ(decode_errno(bytes_of(r)), EBADMSG); // IB_CM_EVENT_COUNT
	r = make(0xffffffffU);
	EXPECT_EQ(decode_errno(bytes_of(r)), EBADMSG);
	r = make(1, IB_UCM_PRES_PRIMARY);
	r.u.req_resp.qp_type = 2;
	EXPECT_EQ(decode_errno(bytes_of(r, 24 + 167)), EBADMSG); // REQ cut short
	EXPECT_EQ(decode_errno(bytes_of(r, 24 + 168)), 0);
	r.u.req_resp.qp_type = 77;
	EXPECT_EQ(decode_errno(bytes_of(r)), EBADMSG);
	r = make(3);
	EXPECT_EQ(decode_errno(bytes_of(r, 24 + 31)), EBADMSG);
	r = make(0);
	EXPECT_EQ(decode_errno(bytes_of(r, 24 + 3)), EBADMSG);
	// Out-of-range path fields are masked to their widths.
	r = make(1, IB_UCM_PRES_PRIMARY);
	r.u.req_resp.qp_type = 2;
	r.u.req_resp.primary_path.sl = 0xff;
	r.u.req_resp.primary_path.flow_label = 0xffffffff;
	r.u.req_resp.primary_path.mtu = 0xffffffff;
	auto req = std::get<ReqReceived>(abi::decode_event(bytes_of(r), {}, {}, nullptr));
	EXPECT_EQ(req.primary_path.sl, 0xf);
	EXPECT_EQ(req.primary_path.flow_label, 0xfffffU);
	EXPECT_EQ(req.primary_path.mtu, 0x3f);
	EXPECT_FALSE(req.alternate_path.has_value());
}

} // namespace
} // namespace ibcm
