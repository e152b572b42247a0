// SPDX-License-Identifier: GPL-2.0
// The command payloads of ib_ucm ABI 5 (see abi.h).
#include "abi.h"

#include <endian.h>

#include <cerrno>
#include <system_error>

namespace ibcm::abi {

namespace {

void check_len(std::size_t len, std::size_t max)
{
	if (len > max)
		throw std::system_error(EMSGSIZE, std::generic_category(), "CM private data too long");
}

const void *data_ptr(ByteView v) noexcept
{
	return v.empty() ? nullptr : v.data();
}

} // namespace

std::vector<std::byte> frame(std::uint32_t cmd, const void *payload, std::uint16_t in, std::uint16_t out)
{
	ib_ucm_cmd_hdr hdr{};
	hdr.cmd = cmd;
	hdr.in = in;
	hdr.out = out;
	std::vector<std::byte> bytes(sizeof(hdr) + in);
	std::memcpy(bytes.data(), &hdr, sizeof(hdr));
	if (in)
		std::memcpy(bytes.data() + sizeof(hdr), payload, in);
	return bytes;
}

ib_user_path_rec to_user(const PathRecord &p) noexcept
{
	ib_user_path_rec r{};
	std::memcpy(r.dgid, p.dgid.data(), 16);
	std::memcpy(r.sgid, p.sgid.data(), 16);
	r.dlid = htobe16(p.dlid);
	r.slid = htobe16(p.slid);
	r.raw_traffic = p.raw_traffic;
	r.flow_label = htobe32(p.flow_label & 0xfffff);
	r.reversible = p.reversible;
	r.mtu = p.mtu;
	r.pkey = htobe16(p.pkey);
	r.hop_limit = p.hop_limit;
	r.traffic_class = p.traffic_class;
	r.numb_path = p.numb_path;
	r.sl = p.sl & 0xf;
	r.mtu_selector = p.mtu_selector;
	r.rate_selector = p.rate_selector;
	r.rate = p.rate;
	r.packet_life_time_selector = p.packet_life_time_selector;
	r.packet_life_time = p.packet_life_time;
	r.preference = p.preference;
	return r;
}

PathRecord from_user(const ib_user_path_rec &r) noexcept
{
	PathRecord p;
	std::memcpy(p.dgid.data(), r.dgid, 16);
	std::memcpy(p.sgid.data(), r.sgid, 16);
	p.dlid = be16toh(r.dlid);
	p.slid = be16toh(r.slid);
	p.raw_traffic = r.raw_traffic != 0;
	p.flow_label = be32toh(r.flow_label) & 0xfffff;
	p.reversible = r.reversible != 0;
	p.mtu = static_cast<std::uint8_t>(r.mtu & 0x3f);
	p.pkey = be16toh(r.pkey);
	p.hop_limit = r.hop_limit;
	p.traffic_class = r.traffic_class;
	p.numb_path = r.numb_path & 0x7f;
	p.sl = r.sl & 0xf;
	p.mtu_selector = r.mtu_selector & 0x3;
	p.rate_selector = r.rate_selector & 0x3;
	p.rate = r.rate & 0x3f;
	p.packet_life_time_selector = r.packet_life_time_selector & 0x3;
	p.packet_life_time = r.packet_life_time & 0x3f;
	p.preference = r.preference;
	return p;
}

ib_ucm_create_id create_id(std::uint64_t uid, ib_ucm_create_id_resp *resp) noexcept
{
	ib_ucm_create_id c{};
	c.uid = uid;
	c.response = ptr(resp);
	return c;
}

ib_ucm_destroy_id destroy_id(std::uint32_t id, ib_ucm_destroy_id_resp *resp) noexcept
{
	ib_ucm_destroy_id c{};
	c.response = ptr(resp);
	c.id = id;
	return c;
}

ib_ucm_attr_id attr_id(std::uint32_t id, ib_ucm_attr_id_resp *resp) noexcept
{
	ib_ucm_attr_id c{};
	c.response = ptr(resp);
	c.id = id;
	return c;
}

ib_ucm_listen listen(std::uint32_t id, std::uint64_t service_id, std::uint64_t mask) noexcept
{
	ib_ucm_listen c{};
	c.service_id = htobe64(service_id);
	c.service_mask = htobe64(mask);
	c.id = id;
	return c;
}

ib_ucm_notify notify(std::uint32_t id, std::uint32_t event) noexcept
{
	ib_ucm_notify c{};
	c.id = id;
	c.event = event;
	return c;
}

ib_ucm_req req(std::uint32_t id, const ReqParams &p, const ib_user_path_rec *primary,
	       const ib_user_path_rec *alternate)
{
	check_len(p.private_data.size(), kReqPrivateData);
	if (p.qp_type != IBV_QPT_RC && p.qp_type != IBV_QPT_UC)
		throw std::system_error(EINVAL, std::generic_category(), "REQ: qp_type must be RC or UC");
	ib_ucm_req c{};
	c.id = id;
	c.qpn = p.qpn & 0xffffff;
	c.qp_type = p.qp_type; // IB_QPT_RC/UC have the values of IBV_QPT_RC/UC
	c.psn = p.psn & 0xffffff;
	c.sid = htobe64(p.service_id);
	c.data = ptr(data_ptr(p.private_data));
	c.primary_path = ptr(primary);
	c.alternate_path = ptr(alternate);
	c.len = static_cast<std::uint8_t>(p.private_data.size());
	c.peer_to_peer = p.peer_to_peer;
	c.responder_resources = p.responder_resources;
	c.initiator_depth = p.initiator_depth;
	c.remote_cm_response_timeout = p.remote_cm_response_timeout;
	c.flow_control = p.flow_control;
	c.local_cm_response_timeout = p.local_cm_response_timeout;
	c.retry_count = p.retry_count;
	c.rnr_retry_count = p.rnr_retry_count;
	c.max_cm_retries = p.max_cm_retries;
	c.srq = p.srq;
	return c;
}

ib_ucm_rep rep(std::uint32_t id, std::uint64_t uid, const RepParams &p)
{
	check_len(p.private_data.size(), kRepPrivateData);
	ib_ucm_rep c{};
	c.uid = uid;
	c.data = ptr(data_ptr(p.private_data));
	c.id = id;
	c.qpn = p.qpn & 0xffffff;
	c.psn = p.psn & 0xffffff;
	c.len = static_cast<std::uint8_t>(p.private_data.size());
	c.responder_resources = p.responder_resources;
	c.initiator_depth = p.initiator_depth;
	c.target_ack_delay = p.target_ack_delay;
	c.failover_accepted = p.failover_accepted;
	c.flow_control = p.flow_control;
	c.rnr_retry_count = p.rnr_retry_count;
	c.srq = p.srq;
	return c;
}

ib_ucm_private_data private_data(std::uint32_t id, ByteView data, std::size_t max)
{
	check_len(data.size(), max);
	ib_ucm_private_data c{};
	c.data = ptr(data_ptr(data));
	c.id = id;
	c.len = static_cast<std::uint8_t>(data.size());
	return c;
}

ib_ucm_info info(std::uint32_t id, std::uint32_t status, ByteView info, std::size_t info_max,
		 ByteView data, std::size_t data_max)
{
	check_len(info.size(), info_max);
	check_len(data.size(), data_max);
	ib_ucm_info c{};
	c.id = id;
	c.status = status;
	c.info = ptr(data_ptr(info));
	c.data = ptr(data_ptr(data));
	c.info_len = static_cast<std::uint8_t>(info.size());
	c.data_len = static_cast<std::uint8_t>(data.size());
	return c;
}

ib_ucm_mra mra(std::uint32_t id, std::uint8_t timeout, ByteView data)
{
	check_len(data.size(), kMraPrivateData);
	if (timeout > 31)
		throw std::system_error(EINVAL, std::generic_category(), "MRA service timeout is 5 bits");
	ib_ucm_mra c{};
	c.data = ptr(data_ptr(data));
	c.id = id;
	c.len = static_cast<std::uint8_t>(data.size());
	c.timeout = timeout;
	return c;
}

ib_ucm_lap lap(std::uint32_t id, const ib_user_path_rec *path, ByteView data)
{
	check_len(data.size(), kLapPrivateData);
	ib_ucm_lap c{};
	c.path = ptr(path);
	c.data = ptr(data_ptr(data));
	c.id = id;
	c.len = static_cast<std::uint8_t>(data.size());
	return c;
}

ib_ucm_sidr_req sidr_req(std::uint32_t id, const SidrReqParams &p, const ib_user_path_rec *path)
{
	check_len(p.private_data.size(), kSidrReqPrivateData);
	ib_ucm_sidr_req c{};
	c.id = id;
	c.timeout = p.timeout_ms;
	c.sid = htobe64(p.service_id);
	c.data = ptr(data_ptr(p.private_data));
	c.path = ptr(path);
	c.len = static_cast<std::uint8_t>(p.private_data.size());
	c.max_cm_retries = p.max_cm_retries;
	return c;
}

ib_ucm_sidr_rep sidr_rep(std::uint32_t id, const SidrRepParams &p)
{
	check_len(p.info.size(), kSidrRepInfoLength);
	check_len(p.private_data.size(), kSidrRepPrivateData);
	ib_ucm_sidr_rep c{};
	c.id = id;
	c.qpn = p.qpn & 0xffffff;
	c.qkey = p.qkey;
	c.status = p.status;
	c.info = ptr(data_ptr(p.info));
	c.data = ptr(data_ptr(p.private_data));
	c.info_len = static_cast<std::uint8_t>(p.info.size());
	c.data_len = static_cast<std::uint8_t>(p.private_data.size());
	return c;
}

ib_ucm_init_qp_attr init_qp_attr(std::uint32_t id, std::uint32_t state, ib_uverbs_qp_attr *resp) noexcept
{
	ib_ucm_init_qp_attr c{};
	c.response = ptr(resp);
	c.id = id;
	c.qp_state = state;
	return c;
}

ib_ucm_event_get event_get(ib_ucm_event_resp *resp, std::uint8_t *data, std::uint8_t data_len,
			   std::uint8_t *info, std::uint8_t info_len) noexcept
{
	ib_ucm_event_get c{};
	c.response = ptr(resp);
	c.data = ptr(data);
	c.info = ptr(info);
	c.data_len = data_len;
	c.info_len = info_len;
	return c;
}

namespace {

ibv_ah_attr ah_from_kernel(const ib_uverbs_ah_attr &k) noexcept
{
	ibv_ah_attr a{};
	std::memcpy(a.grh.dgid.raw, k.grh.dgid, 16);
	a.grh.flow_label = k.grh.flow_label;
	a.grh.sgid_index = k.grh.sgid_index;
	a.grh.hop_limit = k.grh.hop_limit;
	a.grh.traffic_class = k.grh.traffic_class;
	a.dlid = k.dlid;
	a.sl = k.sl;
	a.src_path_bits = k.src_path_bits;
	a.static_rate = k.static_rate;
	a.is_global = k.is_global;
	a.port_num = k.port_num;
	return a;
}

} // namespace

QpAttr from_kernel(const ib_uverbs_qp_attr &k) noexcept
{
	QpAttr q;
	ibv_qp_attr &a = q.attr;
	q.mask = static_cast<int>(k.qp_attr_mask);
	a.qp_state = static_cast<ibv_qp_state>(k.qp_state);
	a.cur_qp_state = static_cast<ibv_qp_state>(k.cur_qp_state);
	a.path_mtu = static_cast<ibv_mtu>(k.path_mtu);
	a.path_mig_state = static_cast<ibv_mig_state>(k.path_mig_state);
	a.qkey = k.qkey;
	a.rq_psn = k.rq_psn;
	a.sq_psn = k.sq_psn;
	a.dest_qp_num = k.dest_qp_num;
	a.qp_access_flags = static_cast<unsigned int>(k.qp_access_flags);
	a.cap.max_send_wr = k.max_send_wr;
	a.cap.max_recv_wr = k.max_recv_wr;
	a.cap.max_send_sge = k.max_send_sge;
	a.cap.max_recv_sge = k.max_recv_sge;
	a.cap.max_inline_data = k.max_inline_data;
	a.ah_attr = ah_from_kernel(k.ah_attr);
	a.alt_ah_attr = ah_from_kernel(k.alt_ah_attr);
	a.pkey_index = k.pkey_index;
	a.alt_pkey_index = k.alt_pkey_index;
	a.en_sqd_async_notify = k.en_sqd_async_notify;
	a.sq_draining = k.sq_draining;
	a.max_rd_atomic = k.max_rd_atomic;
	a.max_dest_rd_atomic = k.max_dest_rd_atomic;
	a.min_rnr_timer = k.min_rnr_timer;
	a.port_num = k.port_num;
	a.timeout = k.timeout;
	a.retry_cnt = k.retry_cnt;
	a.rnr_retry = k.rnr_retry;
	a.alt_port_num = k.alt_port_num;
	a.alt_timeout = k.alt_timeout;
	return q;
}

} // namespace ibcm::abi
