// SPDX-License-Identifier: GPL-2.0
// RcQp and the QP transitions driven by the CM.
#include "ibcm/verbs.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <unistd.h>

namespace ibcm {

namespace {
[[noreturn]] void fail(int err, const std::string &what)
{
	throw std::system_error(err, std::generic_category(), what);
}
} // namespace

void modify_qp(ibv_qp *qp, const QpAttr &attr)
{
	ibv_qp_attr a = attr.attr;
	const int rc = ibv_modify_qp(qp, &a, attr.mask);
	if (rc)
		fail(rc > 0 ? rc : errno, "ibv_modify_qp");
}

void modify_qp(ibv_qp *qp, ConnectionId &conn, ibv_qp_state state)
{
	modify_qp(qp, conn.init_qp_attr(state));
}

ContextPtr open_verbs(const std::string &ibdev)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		fail(errno ? errno : ENODEV, "ibv_get_device_list");
	ibv_context *ctx = nullptr;
	int err = ENODEV;
	for (int i = 0; i < n; i++) {
		if (ibdev == ibv_get_device_name(list[i])) {
			ctx = ibv_open_device(list[i]);
			err = errno;
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		fail(err ? err : ENODEV, "ibv_open_device " + ibdev);
	return ContextPtr(ctx);
}

ibv_port_attr query_port(ibv_context *ctx, int port)
{
	ibv_port_attr a{};
	const int rc = ibv_query_port(ctx, static_cast<std::uint8_t>(port), &a);
	if (rc)
		fail(rc > 0 ? rc : errno, "ibv_query_port");
	return a;
}

Gid query_gid(ibv_context *ctx, int port, int index)
{
	ibv_gid g{};
	if (ibv_query_gid(ctx, static_cast<std::uint8_t>(port), index, &g))
		fail(errno ? errno : EINVAL, "ibv_query_gid");
	Gid out;
	std::memcpy(out.data(), g.raw, 16);
	return out;
}

void RcQp::Free::operator()(std::uint8_t *p) const noexcept
{
	std::free(p);
}

RcQp::RcQp(ibv_context *ctx, int port, int depth, std::size_t slot_size, int slots)
	: port_(port), slot_size_(slot_size), slots_(slots)
{
	if (depth <= 0 || slots <= 0 || slot_size == 0)
		fail(EINVAL, "RcQp: empty queue or buffer");
	const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	const std::size_t bytes = (slot_size * static_cast<std::size_t>(slots) + page - 1) / page * page;
	void *mem = nullptr;
	if (posix_memalign(&mem, page, bytes))
		fail(ENOMEM, "RcQp buffer");
	std::memset(mem, 0, bytes);
	buf_.reset(static_cast<std::uint8_t *>(mem));
	pd_.reset(ibv_alloc_pd(ctx));
	if (!pd_)
		fail(errno ? errno : ENOMEM, "ibv_alloc_pd");
	const int access = IBV_ACCESS_LOCAL_WRITE; // an int: ibv_reg_mr() masks it with another enum
	mr_.reset(ibv_reg_mr(pd_.get(), buf_.get(), bytes, access));
	if (!mr_)
		fail(errno ? errno : ENOMEM, "ibv_reg_mr");
	cq_.reset(ibv_create_cq(ctx, 2 * depth, nullptr, nullptr, 0));
	if (!cq_)
		fail(errno ? errno : ENOMEM, "ibv_create_cq");
	ibv_qp_init_attr init{};
	init.send_cq = cq_.get();
	init.recv_cq = cq_.get();
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = static_cast<std::uint32_t>(depth);
	init.cap.max_recv_wr = static_cast<std::uint32_t>(depth);
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	qp_.reset(ibv_create_qp(pd_.get(), &init));
	if (!qp_)
		fail(errno ? errno : ENOMEM, "ibv_create_qp");
}

void RcQp::post_recv(int slot, std::uint64_t wr_id)
{
	if (slot < 0 || slot >= slots_)
		fail(EINVAL, "post_recv: slot out of range");
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(this->slot(slot)), static_cast<std::uint32_t>(slot_size_),
		    mr_->lkey};
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad = nullptr;
	const int rc = ibv_post_recv(qp_.get(), &wr, &bad);
	if (rc)
		fail(rc, "ibv_post_recv");
}

void RcQp::post_send(int slot, std::size_t len, std::uint64_t wr_id)
{
	if (slot < 0 || slot >= slots_ || len > slot_size_)
		fail(EINVAL, "post_send: slot or length out of range");
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(this->slot(slot)), static_cast<std::uint32_t>(len), mr_->lkey};
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ibv_send_wr *bad = nullptr;
	const int rc = ibv_post_send(qp_.get(), &wr, &bad);
	if (rc)
		fail(rc, "ibv_post_send");
}

} // namespace ibcm
