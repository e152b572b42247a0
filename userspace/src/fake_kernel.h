// SPDX-License-Identifier: GPL-2.0
// Test-only: a fake ib_ucm behind ibcm::Transport. No ucm device exists on
// the build machine, so the unit tests drive a Device through this. It
// checks the framing as the kernel does (hdr.in + 8 must fit the write),
// records every command, answers CREATE_ID/DESTROY_ID/ATTR_ID/INIT_QP_ATTR,
// copies path records out of the user pointers while the command is being
// written, and hands out queued events through EVENT like the kernel
// (ENOMEM if the caller's data/info buffer is smaller than the event's,
// EAGAIN when none is queued).
#ifndef IBCM_SRC_FAKE_KERNEL_H
#define IBCM_SRC_FAKE_KERNEL_H

#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <system_error>
#include <vector>

#include "abi.h"

namespace ibcm::test {

struct QueuedEvent {
	ib_ucm_event_resp resp{};
	std::vector<std::uint8_t> data; // what the kernel would copy (its data_len)
	std::vector<std::uint8_t> info;
};

struct Command {
	ib_ucm_cmd_hdr hdr{};
	std::vector<std::byte> bytes; // the whole write
	std::vector<ib_user_path_rec> paths; // records the pointers named
	std::vector<std::uint8_t> data; // private data the pointer named
	template <typename T> T payload() const
	{
		T t{};
		std::memcpy(&t, bytes.data() + sizeof(ib_ucm_cmd_hdr), std::min(sizeof(T), bytes.size() - 8));
		return t;
	}
};

struct KernelState {
	std::vector<Command> commands;
	std::deque<QueuedEvent> events;
	std::uint32_t next_id = 100;
	std::vector<std::uint32_t> destroyed;
	ib_uverbs_qp_attr qp_attr{};
	int fail_next = 0; // errno for the next command
	std::size_t count(std::uint32_t cmd) const
	{
		std::size_t n = 0;
		for (const auto &c : commands)
			n += c.hdr.cmd == cmd;
		return n;
	}
};

template <typename T> T *user_ptr(std::uint64_t p)
{
	return reinterpret_cast<T *>(static_cast<std::uintptr_t>(p));
}

class FakeKernel final : public Transport {
public:
	explicit FakeKernel(std::shared_ptr<KernelState> s) : s_(std::move(s)) {}

	std::size_t write(std::span<const std::byte> frame) override
	{
		Command c;
		if (frame.size() < sizeof(c.hdr))
			throw std::system_error(EINVAL, std::generic_category());
		std::memcpy(&c.hdr, frame.data(), sizeof(c.hdr));
		if (c.hdr.in + sizeof(c.hdr) > frame.size() || c.hdr.cmd > IB_USER_CM_CMD_INIT_QP_ATTR)
			throw std::system_error(EINVAL, std::generic_category());
		c.bytes.assign(frame.begin(), frame.end());
		if (s_->fail_next) {
			const int e = s_->fail_next;
			s_->fail_next = 0;
			throw std::system_error(e, std::generic_category());
		}
		answer(c);
		s_->commands.push_back(std::move(c));
		return frame.size();
	}
	int fd() const noexcept override { return -1; }
	bool wait(std::chrono::milliseconds) override { return !s_->events.empty(); }

private:
	static void grab(std::vector<std::uint8_t> &to, std::uint64_t p, std::size_t n)
	{
		if (p && n)
			to.assign(user_ptr<std::uint8_t>(p), user_ptr<std::uint8_t>(p) + n);
	}
	static void path(Command &c, std::uint64_t p)
	{
		if (p)
			c.paths.push_back(*user_ptr<ib_user_path_rec>(p));
	}

	void answer(Command &c)
	{
		switch (c.hdr.cmd) {
		case IB_USER_CM_CMD_CREATE_ID: {
			auto p = c.payload<ib_ucm_create_id>();
			user_ptr<ib_ucm_create_id_resp>(p.response)->id = s_->next_id++;
			break;
		}
		case IB_USER_CM_CMD_DESTROY_ID: {
			auto p = c.payload<ib_ucm_destroy_id>();
			s_->destroyed.push_back(p.id);
			user_ptr<ib_ucm_destroy_id_resp>(p.response)->events_reported = 7;
			break;
		}
		case IB_USER_CM_CMD_ATTR_ID: {
			auto p = c.payload<ib_ucm_attr_id>();
			auto *r = user_ptr<ib_ucm_attr_id_resp>(p.response);
			r->service_id = htobe64(0x1234);
			r->service_mask = htobe64(~0ULL);
			r->local_id = htobe32(0xabcd);
			r->remote_id = htobe32(0x5678);
			break;
		}
		case IB_USER_CM_CMD_INIT_QP_ATTR: {
			auto p = c.payload<ib_ucm_init_qp_attr>();
			*user_ptr<ib_uverbs_qp_attr>(p.response) = s_->qp_attr;
			user_ptr<ib_uverbs_qp_attr>(p.response)->qp_state = p.qp_state;
			break;
		}
		case IB_USER_CM_CMD_SEND_REQ: {
			auto p = c.payload<ib_ucm_req>();
			path(c, p.primary_path);
			path(c, p.alternate_path);
			grab(c.data, p.data, p.len);
			break;
		}
		case IB_USER_CM_CMD_SEND_REP: {
			auto p = c.payload<ib_ucm_rep>();
			grab(c.data, p.data, p.len);
			break;
		}
		case IB_USER_CM_CMD_SEND_LAP: {
			auto p = c.payload<ib_ucm_lap>();
			path(c, p.path);
			grab(c.data, p.data, p.len);
			break;
		}
		case IB_USER_CM_CMD_SEND_APR: {
			auto p = c.payload<ib_ucm_info>();
			grab(c.data, p.data, p.data_len);
			break;
		}
		case IB_USER_CM_CMD_SEND_SIDR_REQ: {
			auto p = c.payload<ib_ucm_sidr_req>();
			path(c, p.path);
			grab(c.data, p.data, p.len);
			break;
		}
		case IB_USER_CM_CMD_SEND_RTU:
		case IB_USER_CM_CMD_SEND_DREQ:
		case IB_USER_CM_CMD_SEND_DREP: {
			auto p = c.payload<ib_ucm_private_data>();
			grab(c.data, p.data, p.len);
			break;
		}
		case IB_USER_CM_CMD_EVENT: {
			if (s_->events.empty())
				throw std::system_error(EAGAIN, std::generic_category());
			auto p = c.payload<ib_ucm_event_get>();
			QueuedEvent &e = s_->events.front();
			if ((p.data && p.data_len < e.data.size()) || (p.info && p.info_len < e.info.size()))
				throw std::system_error(ENOMEM, std::generic_category());
			*user_ptr<ib_ucm_event_resp>(p.response) = e.resp;
			if (p.data && !e.data.empty())
				std::memcpy(user_ptr<void>(p.data), e.data.data(), e.data.size());
			if (p.info && !e.info.empty())
				std::memcpy(user_ptr<void>(p.info), e.info.data(), e.info.size());
			s_->events.pop_front();
			break;
		}
		default:
			break;
		}
	}

	std::shared_ptr<KernelState> s_;
};

} // namespace ibcm::test

#endif
