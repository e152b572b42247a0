// SPDX-License-Identifier: GPL-2.0
// The byte image of every command libibcmxx writes: frame header (cmd, in,
// out) and each field at its ABI 5 offset (payload offset + 8 for the
// header), checked against literal offsets, not only against offsetof.
#include <gtest/gtest.h>

#include "abi.h"
#include "test_util.h"

namespace ibcm {
namespace {

using test::be_at;
using test::host_at;
using test::u8_at;

void expect_hdr(const std::vector<std::byte> &f, std::uint32_t cmd, std::uint16_t in, std::uint16_t out)
{
	ASSERT_EQ(f.size(), 8U + in);
	EXPECT_EQ(host_at<std::uint32_t>(f, 0), cmd);
	EXPECT_EQ(host_at<std::uint16_t>(f, 4), in);
	EXPECT_EQ(host_at<std::uint16_t>(f, 6), out);
}

TEST(IbcmAbiLayout, StructSizesAndOffsets)
{
	EXPECT_EQ(sizeof(ib_ucm_create_id), 16U);
	EXPECT_EQ(sizeof(ib_ucm_destroy_id), 16U);
	EXPECT_EQ(sizeof(ib_ucm_attr_id), 16U);
	EXPECT_EQ(sizeof(ib_ucm_attr_id_resp), 24U);
	EXPECT_EQ(sizeof(ib_ucm_listen), 24U);
	EXPECT_EQ(sizeof(ib_ucm_notify), 8U);
	EXPECT_EQ(sizeof(ib_ucm_private_data), 16U);
	EXPECT_EQ(sizeof(ib_ucm_req), 64U);
	EXPECT_EQ(sizeof(ib_ucm_rep), 40U);
	EXPECT_EQ(sizeof(ib_ucm_info), 32U);
	EXPECT_EQ(sizeof(ib_ucm_mra), 16U);
	EXPECT_EQ(sizeof(ib_ucm_sidr_req), 40U);
	EXPECT_EQ(sizeof(ib_ucm_sidr_rep), 40U);
	EXPECT_EQ(sizeof(ib_ucm_event_get), 32U);
	EXPECT_EQ(sizeof(ib_ucm_init_qp_attr), 16U);
	EXPECT_EQ(sizeof(ib_ucm_req_event_resp), 168U);
	EXPECT_EQ(sizeof(ib_ucm_rep_event_resp), 32U);
	EXPECT_EQ(sizeof(ib_ucm_event_resp), 192U);
	EXPECT_EQ(offsetof(ib_ucm_event_resp, u), 24U);
	EXPECT_EQ(offsetof(ib_ucm_req_event_resp, remote_ca_guid), 128U);
	EXPECT_EQ(offsetof(ib_ucm_req_event_resp, port), 160U);
}

TEST(IbcmAbiCommands, CreateId)
{
	ib_ucm_create_id_resp resp{};
	auto f = abi::frame(IB_USER_CM_CMD_CREATE_ID, abi::create_id(0x1122334455667788ULL, &resp), sizeof(resp));
	expect_hdr(f, 0, 16, 4);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), 0x1122334455667788ULL);
	EXPECT_EQ(host_at<std::uint64_t>(f, 16), abi::ptr(&resp));
}

TEST(IbcmAbiCommands, DestroyAndAttrId)
{
	ib_ucm_destroy_id_resp dresp{};
	auto f = abi::frame(IB_USER_CM_CMD_DESTROY_ID, abi::destroy_id(42, &dresp), sizeof(dresp));
	expect_hdr(f, 1, 16, 4);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(&dresp));
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 42U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 20), 0U);

	ib_ucm_attr_id_resp aresp{};
	f = abi::frame(IB_USER_CM_CMD_ATTR_ID, abi::attr_id(43, &aresp), sizeof(aresp));
	expect_hdr(f, 2, 16, 24);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(&aresp));
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 43U);
}

TEST(IbcmAbiCommands, ListenServiceIdIsBigEndian)
{
	auto f = abi::frame(IB_USER_CM_CMD_LISTEN, abi::listen(5, 0x0000000001061c06ULL, 0xffffffffffff0000ULL), 0);
	expect_hdr(f, 3, 24, 0);
	const std::uint8_t sid[8] = {0, 0, 0, 0, 0x01, 0x06, 0x1c, 0x06};
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(u8_at(f, 8 + i), sid[i]) << i;
	EXPECT_EQ(be_at(f, 16, 8), 0xffffffffffff0000ULL);
	EXPECT_EQ(host_at<std::uint32_t>(f, 24), 5U);
}

TEST(IbcmAbiCommands, Notify)
{
	auto f = abi::frame(IB_USER_CM_CMD_NOTIFY, abi::notify(9, IBV_EVENT_COMM_EST), 0);
	expect_hdr(f, 4, 8, 0);
	EXPECT_EQ(host_at<std::uint32_t>(f, 8), 9U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 12), static_cast<std::uint32_t>(IBV_EVENT_COMM_EST));
}

TEST(IbcmAbiCommands, Req)
{
	ReqParams p;
	p.service_id = 0x0000000001060000ULL | 7174;
	p.qpn = 0x12345678; // masked to 24 bits
	p.psn = 0xabcdef;
	p.private_data = Bytes(40, 0x5a);
	p.peer_to_peer = true;
	p.responder_resources = 4;
	p.initiator_depth = 3;
	p.remote_cm_response_timeout = 20;
	p.flow_control = true;
	p.local_cm_response_timeout = 19;
	p.retry_count = 6;
	p.rnr_retry_count = 7;
	p.max_cm_retries = 15;
	p.srq = true;
	ib_user_path_rec prim{}, alt{};
	auto f = abi::frame(IB_USER_CM_CMD_SEND_REQ, abi::req(77, p, &prim, &alt), 0);
	expect_hdr(f, 5, 64, 0);
	EXPECT_EQ(host_at<std::uint32_t>(f, 8), 77U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 12), 0x345678U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 2U); // IB_QPT_RC
	EXPECT_EQ(host_at<std::uint32_t>(f, 20), 0xabcdefU);
	EXPECT_EQ(be_at(f, 24, 8), 0x0000000001061c06ULL);
	EXPECT_EQ(host_at<std::uint64_t>(f, 32), abi::ptr(p.private_data.data()));
	EXPECT_EQ(host_at<std::uint64_t>(f, 40), abi::ptr(&prim));
	EXPECT_EQ(host_at<std::uint64_t>(f, 48), abi::ptr(&alt));
	const std::uint8_t tail[] = {40, 1, 4, 3, 20, 1, 19, 6, 7, 15, 1, 0, 0, 0, 0, 0};
	for (std::size_t i = 0; i < sizeof(tail); i++)
		EXPECT_EQ(u8_at(f, 56 + i), tail[i]) << "byte " << 56 + i;
}

TEST(IbcmAbiCommands, ReqWithoutDataOrAlternateHasNullPointers)
{
	ReqParams p;
	ib_user_path_rec prim{};
	auto f = abi::frame(IB_USER_CM_CMD_SEND_REQ, abi::req(1, p, &prim, nullptr), 0);
	EXPECT_EQ(host_at<std::uint64_t>(f, 32), 0U);
	EXPECT_EQ(host_at<std::uint64_t>(f, 48), 0U);
	EXPECT_EQ(u8_at(f, 56), 0U);
}

TEST(IbcmAbiCommands, ReqRefusesLongPrivateDataAndUd)
{
	ReqParams p;
	ib_user_path_rec prim{};
	p.private_data = Bytes(kReqPrivateData, 1);
	EXPECT_NO_THROW(abi::req(1, p, &prim, nullptr));
	p.private_data.push_back(1);
	try {
		abi::req(1, p, &prim, nullptr);
		FAIL() << "93 bytes accepted";
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EMSGSIZE);
	}
	p.private_data.clear();
	p.qp_type = IBV_QPT_UD;
	EXPECT_THROW(abi::req(1, p, &prim, nullptr), std::system_error);
}

TEST(IbcmAbiCommands, Rep)
{
	RepParams p;
	p.qpn = 0x1000042;
	p.psn = 0x123456;
	p.private_data = Bytes(kRepPrivateData, 2);
	p.responder_resources = 4;
	p.initiator_depth = 2;
	p.target_ack_delay = 15;
	p.failover_accepted = true;
	p.flow_control = true;
	p.rnr_retry_count = 5;
	p.srq = true;
	auto f = abi::frame(IB_USER_CM_CMD_SEND_REP, abi::rep(12, 0xfeedULL, p), 0);
	expect_hdr(f, 6, 40, 0);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), 0xfeedULL);
	EXPECT_EQ(host_at<std::uint64_t>(f, 16), abi::ptr(p.private_data.data()));
	EXPECT_EQ(host_at<std::uint32_t>(f, 24), 12U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 28), 0x42U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 32), 0x123456U);
	const std::uint8_t tail[] = {196, 4, 2, 15, 1, 1, 5, 1, 0, 0, 0, 0};
	for (std::size_t i = 0; i < sizeof(tail); i++)
		EXPECT_EQ(u8_at(f, 36 + i), tail[i]) << "byte " << 36 + i;
	p.private_data.push_back(0);
	EXPECT_THROW(abi::rep(12, 0, p), std::system_error);
}

TEST(IbcmAbiCommands, RtuDreqDrepPrivateData)
{
	const Bytes d(10, 3);
	for (std::uint32_t cmd : {IB_USER_CM_CMD_SEND_RTU, IB_USER_CM_CMD_SEND_DREQ, IB_USER_CM_CMD_SEND_DREP}) {
		auto f = abi::frame(cmd, abi::private_data(8, d, kRtuPrivateData), 0);
		expect_hdr(f, cmd, 16, 0);
		EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(d.data()));
		EXPECT_EQ(host_at<std::uint32_t>(f, 16), 8U);
		EXPECT_EQ(u8_at(f, 20), 10U);
	}
	EXPECT_NO_THROW(abi::private_data(1, Bytes(kDreqPrivateData), kDreqPrivateData));
	EXPECT_THROW(abi::private_data(1, Bytes(kDreqPrivateData + 1), kDreqPrivateData), std::system_error);
}

TEST(IbcmAbiCommands, Rej)
{
	const Bytes ari(16, 0xaa), d(148, 0xbb);
	auto f = abi::frame(IB_USER_CM_CMD_SEND_REJ, abi::info(3, kRejInvalidGid, ari, kRejAriLength, d, kRejPrivateData), 0);
	expect_hdr(f, 10, 32, 0);
	EXPECT_EQ(host_at<std::uint32_t>(f, 8), 3U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 12), 12U);
	EXPECT_EQ(host_at<std::uint64_t>(f, 16), abi::ptr(ari.data()));
	EXPECT_EQ(host_at<std::uint64_t>(f, 24), abi::ptr(d.data()));
	EXPECT_EQ(u8_at(f, 32), 16U);
	EXPECT_EQ(u8_at(f, 33), 148U);
	EXPECT_THROW(abi::info(3, 1, Bytes(73), kRejAriLength, {}, kRejPrivateData), std::system_error);
}

TEST(IbcmAbiCommands, Mra)
{
	const Bytes d(5, 1);
	auto f = abi::frame(IB_USER_CM_CMD_SEND_MRA, abi::mra(6, 24, d), 0);
	expect_hdr(f, 11, 16, 0);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(d.data()));
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 6U);
	EXPECT_EQ(u8_at(f, 20), 5U);
	EXPECT_EQ(u8_at(f, 21), 24U);
	EXPECT_THROW(abi::mra(6, 32, {}), std::system_error);
}

TEST(IbcmAbiCommands, SidrReqAndRep)
{
	SidrReqParams q;
	q.service_id = 0x0000000001110000ULL | 5000;
	q.timeout_ms = 2000;
	q.max_cm_retries = 4;
	q.private_data = Bytes(36, 0);
	ib_user_path_rec path{};
	auto f = abi::frame(IB_USER_CM_CMD_SEND_SIDR_REQ, abi::sidr_req(9, q, &path), 0);
	expect_hdr(f, 14, 40, 0);
	EXPECT_EQ(host_at<std::uint32_t>(f, 8), 9U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 12), 2000U);
	EXPECT_EQ(be_at(f, 16, 8), 0x0000000001111388ULL);
	EXPECT_EQ(host_at<std::uint64_t>(f, 24), abi::ptr(q.private_data.data()));
	EXPECT_EQ(host_at<std::uint64_t>(f, 32), abi::ptr(&path));
	EXPECT_EQ(u8_at(f, 42), 36U);
	EXPECT_EQ(u8_at(f, 43), 4U);

	SidrRepParams r;
	r.qpn = 0x99;
	r.qkey = 0x01234567;
	r.status = 0;
	r.info = Bytes(8, 1);
	r.private_data = Bytes(136, 2);
	f = abi::frame(IB_USER_CM_CMD_SEND_SIDR_REP, abi::sidr_rep(10, r), 0);
	expect_hdr(f, 15, 40, 0);
	EXPECT_EQ(host_at<std::uint32_t>(f, 8), 10U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 12), 0x99U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 0x01234567U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 20), 0U);
	EXPECT_EQ(host_at<std::uint64_t>(f, 24), abi::ptr(r.info.data()));
	EXPECT_EQ(host_at<std::uint64_t>(f, 32), abi::ptr(r.private_data.data()));
	EXPECT_EQ(u8_at(f, 40), 8U);
	EXPECT_EQ(u8_at(f, 41), 136U);
}

TEST(IbcmAbiCommands, EventAndInitQpAttr)
{
	ib_ucm_event_resp resp{};
	std::uint8_t data[255], info[255];
	auto f = abi::frame(IB_USER_CM_CMD_EVENT, abi::event_get(&resp, data, 255, info, 72), sizeof(resp));
	expect_hdr(f, 16, 32, 192);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(&resp));
	EXPECT_EQ(host_at<std::uint64_t>(f, 16), abi::ptr(data));
	EXPECT_EQ(host_at<std::uint64_t>(f, 24), abi::ptr(info));
	EXPECT_EQ(u8_at(f, 32), 255U);
	EXPECT_EQ(u8_at(f, 33), 72U);

	ib_uverbs_qp_attr qa{};
	f = abi::frame(IB_USER_CM_CMD_INIT_QP_ATTR, abi::init_qp_attr(11, IBV_QPS_RTR, &qa), sizeof(qa));
	expect_hdr(f, 17, 16, 144);
	EXPECT_EQ(host_at<std::uint64_t>(f, 8), abi::ptr(&qa));
	EXPECT_EQ(host_at<std::uint32_t>(f, 16), 11U);
	EXPECT_EQ(host_at<std::uint32_t>(f, 20), 2U);
}

TEST(IbcmAbiQpAttr, FromKernel)
{
	ib_uverbs_qp_attr k{};
	k.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	k.qp_state = IBV_QPS_RTR;
	k.path_mtu = IBV_MTU_2048;
	k.dest_qp_num = 0x404;
	k.rq_psn = 0x777;
	k.max_dest_rd_atomic = 4;
	k.min_rnr_timer = 12;
	k.ah_attr.dlid = 0x11;
	k.ah_attr.sl = 3;
	k.ah_attr.port_num = 1;
	k.ah_attr.is_global = 1;
	k.ah_attr.grh.dgid[15] = 0x22;
	k.ah_attr.grh.hop_limit = 64;
	k.ah_attr.grh.flow_label = 0x12345;
	const QpAttr q = abi::from_kernel(k);
	EXPECT_EQ(q.mask, static_cast<int>(k.qp_attr_mask));
	EXPECT_EQ(q.attr.qp_state, IBV_QPS_RTR);
	EXPECT_EQ(q.attr.path_mtu, IBV_MTU_2048);
	EXPECT_EQ(q.attr.dest_qp_num, 0x404U);
	EXPECT_EQ(q.attr.rq_psn, 0x777U);
	EXPECT_EQ(q.attr.max_dest_rd_atomic, 4);
	EXPECT_EQ(q.attr.min_rnr_timer, 12);
	EXPECT_EQ(q.attr.ah_attr.dlid, 0x11);
	EXPECT_EQ(q.attr.ah_attr.sl, 3);
	EXPECT_EQ(q.attr.ah_attr.port_num, 1);
	EXPECT_EQ(q.attr.ah_attr.is_global, 1);
	EXPECT_EQ(q.attr.ah_attr.grh.dgid.raw[15], 0x22);
	EXPECT_EQ(q.attr.ah_attr.grh.hop_limit, 64);
	EXPECT_EQ(q.attr.ah_attr.grh.flow_label, 0x12345U);
}

} // namespace
} // namespace ibcm
