// SPDX-License-Identifier: GPL-2.0
// Test-only: a fake ib_ucm + ib_cm joining several Devices in one process,
// enough for the connection life cycle (LISTEN, REQ, REP, RTU, REJ, DREQ,
// DREP, timewait, LAP/APR) with the event images ib_ucm would queue: each
// message's whole private-data field (zero-padded), the listener's uid on a
// REQ's new id until the REP names another, REJ 8 for a service nobody
// listens on, a LAP's path turned around to the receiver's view.
#ifndef IBCM_SRC_FAKE_CM_H
#define IBCM_SRC_FAKE_CM_H

#include <deque>
#include <map>
#include <memory>
#include <system_error>
#include <vector>

#include "fake_kernel.h"

namespace ibcm::test {

struct FakeCm {
	struct Id {
		int dev;
		std::uint64_t uid;
		std::uint32_t peer = 0;
		std::uint64_t sid = 0;
		bool listening = false;
	};
	std::map<std::uint32_t, Id> ids;
	std::vector<std::deque<QueuedEvent>> queues;
	std::uint32_t next_id = 1;

	int add_device()
	{
		queues.emplace_back();
		return static_cast<int>(queues.size() - 1);
	}

	static std::vector<std::uint8_t> field(std::uint64_t ptr, std::size_t len, std::size_t size)
	{
		std::vector<std::uint8_t> v(size, 0);
		if (ptr && len)
			std::memcpy(v.data(), user_ptr<void>(ptr), std::min(len, size));
		return v;
	}

	void post(std::uint32_t id, std::uint32_t event, std::vector<std::uint8_t> data = {},
		  std::vector<std::uint8_t> info = {}, const ib_ucm_event_resp *u = nullptr)
	{
		const Id &to = ids.at(id);
		QueuedEvent q;
		if (u)
			q.resp = *u;
		q.resp.uid = to.uid;
		q.resp.id = id;
		q.resp.event = event;
		q.resp.present = (data.empty() ? 0 : IB_UCM_PRES_DATA) | (info.empty() ? 0 : IB_UCM_PRES_INFO) |
				 (event == 1 ? IB_UCM_PRES_PRIMARY : 0) | (event == 13 ? IB_UCM_PRES_ALTERNATE : 0);
		q.data = std::move(data);
		q.info = std::move(info);
		queues[static_cast<std::size_t>(to.dev)].push_back(std::move(q));
	}

	[[noreturn]] static void err(int e) { throw std::system_error(e, std::generic_category()); }

	void command(int dev, const Command &c)
	{
		switch (c.hdr.cmd) {
		case IB_USER_CM_CMD_CREATE_ID: {
			auto p = c.payload<ib_ucm_create_id>();
			ids[next_id] = {dev, p.uid};
			user_ptr<ib_ucm_create_id_resp>(p.response)->id = next_id++;
			return;
		}
		case IB_USER_CM_CMD_DESTROY_ID: {
			auto p = c.payload<ib_ucm_destroy_id>();
			if (!ids.erase(p.id))
				err(ENOENT);
			user_ptr<ib_ucm_destroy_id_resp>(p.response)->events_reported = 0;
			return;
		}
		case IB_USER_CM_CMD_LISTEN: {
			auto p = c.payload<ib_ucm_listen>();
			Id &l = ids.at(p.id);
			l.listening = true;
			l.sid = be64toh(p.service_id);
			return;
		}
		case IB_USER_CM_CMD_SEND_REQ: {
			auto p = c.payload<ib_ucm_req>();
			const std::uint64_t sid = be64toh(p.sid);
			for (auto &[lid, l] : ids) {
				if (!l.listening || l.sid != sid)
					continue;
				const std::uint32_t nid = next_id++;
				ids[nid] = {l.dev, l.uid, p.id};
				ids.at(p.id).peer = nid;
				ib_ucm_event_resp r{};
				r.u.req_resp.primary_path = *user_ptr<ib_user_path_rec>(p.primary_path);
				r.u.req_resp.remote_qpn = p.qpn;
				r.u.req_resp.qp_type = p.qp_type;
				r.u.req_resp.starting_psn = p.psn;
				r.u.req_resp.responder_resources = p.responder_resources;
				r.u.req_resp.initiator_depth = p.initiator_depth;
				r.u.req_resp.rnr_retry_count = p.rnr_retry_count;
				post(nid, 1, field(p.data, p.len, kReqPrivateData), {}, &r);
				return;
			}
			ib_ucm_event_resp r{};
			r.u.rej_resp.reason = kRejInvalidServiceId;
			post(p.id, 11, std::vector<std::uint8_t>(kRejPrivateData), {}, &r);
			return;
		}
		case IB_USER_CM_CMD_SEND_REP: {
			auto p = c.payload<ib_ucm_rep>();
			Id &me = ids.at(p.id);
			me.uid = p.uid;
			ib_ucm_event_resp r{};
			r.u.rep_resp.remote_qpn = p.qpn;
			r.u.rep_resp.starting_psn = p.psn;
			post(me.peer, 3, field(p.data, p.len, kRepPrivateData), {}, &r);
			return;
		}
		case IB_USER_CM_CMD_SEND_REJ: {
			auto p = c.payload<ib_ucm_info>();
			ib_ucm_event_resp r{};
			r.u.rej_resp.reason = p.status;
			post(ids.at(p.id).peer, 11, field(p.data, p.data_len, kRejPrivateData),
			     field(p.info, p.info_len, kRejAriLength), &r);
			return;
		}
		case IB_USER_CM_CMD_SEND_RTU:
		case IB_USER_CM_CMD_SEND_DREQ:
		case IB_USER_CM_CMD_SEND_DREP: {
			auto p = c.payload<ib_ucm_private_data>();
			const Id &me = ids.at(p.id);
			if (!me.peer)
				err(EINVAL);
			if (c.hdr.cmd == IB_USER_CM_CMD_SEND_RTU)
				post(me.peer, 4, field(p.data, p.len, kRtuPrivateData));
			else if (c.hdr.cmd == IB_USER_CM_CMD_SEND_DREQ)
				post(me.peer, 7, field(p.data, p.len, kDreqPrivateData));
			else {
				post(me.peer, 8, field(p.data, p.len, kDrepPrivateData));
				post(me.peer, 9);
				post(p.id, 9);
			}
			return;
		}
		case IB_USER_CM_CMD_SEND_MRA: {
			auto p = c.payload<ib_ucm_mra>();
			const Id &me = ids.at(p.id);
			if (!me.peer)
				err(EINVAL);
			ib_ucm_event_resp r{};
			r.u.mra_resp.timeout = p.timeout;
			post(me.peer, 10, field(p.data, p.len, kMraPrivateData), {}, &r);
			return;
		}
		case IB_USER_CM_CMD_SEND_LAP: {
			auto p = c.payload<ib_ucm_lap>();
			const Id &me = ids.at(p.id);
			if (!me.peer || !p.path)
				err(EINVAL);
			ib_ucm_event_resp r{};
			ib_user_path_rec &path = r.u.lap_resp.path;
			path = *user_ptr<ib_user_path_rec>(p.path);
			std::swap(path.dlid, path.slid);
			std::swap(path.dgid, path.sgid);
			post(me.peer, 13, field(p.data, p.len, kLapPrivateData), {}, &r);
			return;
		}
		case IB_USER_CM_CMD_SEND_APR: {
			auto p = c.payload<ib_ucm_info>();
			const Id &me = ids.at(p.id);
			if (!me.peer)
				err(EINVAL);
			ib_ucm_event_resp r{};
			r.u.apr_resp.status = p.status;
			post(me.peer, 14, field(p.data, p.data_len, kAprPrivateData),
			     field(p.info, p.info_len, kAprInfoLength), &r);
			return;
		}
		case IB_USER_CM_CMD_EVENT: {
			auto &q = queues[static_cast<std::size_t>(dev)];
			if (q.empty())
				err(EAGAIN);
			auto p = c.payload<ib_ucm_event_get>();
			const QueuedEvent &e = q.front();
			if (p.data_len < e.data.size() || p.info_len < e.info.size())
				err(ENOMEM);
			*user_ptr<ib_ucm_event_resp>(p.response) = e.resp;
			if (!e.data.empty())
				std::memcpy(user_ptr<void>(p.data), e.data.data(), e.data.size());
			if (!e.info.empty())
				std::memcpy(user_ptr<void>(p.info), e.info.data(), e.info.size());
			q.pop_front();
			return;
		}
		default:
			err(ENOSYS);
		}
	}
};

class FakeCmTransport final : public Transport {
public:
	FakeCmTransport(std::shared_ptr<FakeCm> cm, int dev) : cm_(std::move(cm)), dev_(dev) {}
	std::size_t write(std::span<const std::byte> frame) override
	{
		Command c;
		std::memcpy(&c.hdr, frame.data(), sizeof(c.hdr));
		c.bytes.assign(frame.begin(), frame.end());
		cm_->command(dev_, c);
		return frame.size();
	}
	int fd() const noexcept override { return -1; }
	bool wait(std::chrono::milliseconds) override { return !cm_->queues[static_cast<std::size_t>(dev_)].empty(); }

private:
	std::shared_ptr<FakeCm> cm_;
	int dev_;
};

} // namespace ibcm::test

#endif
