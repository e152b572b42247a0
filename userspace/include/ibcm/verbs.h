// SPDX-License-Identifier: GPL-2.0
// ibcm: an RC QP over libibverbs, owned RAII-style, moved through its states
// by the CM's INIT_QP_ATTR answers.
#ifndef IBCM_VERBS_H
#define IBCM_VERBS_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <infiniband/verbs.h>

#include "ibcm/cm.h"
#include "ibcm/types.h"

namespace ibcm {

// ibv_modify_qp(qp, attr, mask); std::system_error on failure.
void modify_qp(ibv_qp *qp, const QpAttr &attr);
// The three steps INIT, RTR, RTS, each from conn.init_qp_attr().
void modify_qp(ibv_qp *qp, ConnectionId &conn, ibv_qp_state state);

template <typename T, int (*Destroy)(T *)> struct VerbsDeleter {
	void operator()(T *p) const noexcept
	{
		if (p)
			Destroy(p);
	}
};
using ContextPtr = std::unique_ptr<ibv_context, VerbsDeleter<ibv_context, ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, VerbsDeleter<ibv_pd, ibv_dealloc_pd>>;
using CqPtr = std::unique_ptr<ibv_cq, VerbsDeleter<ibv_cq, ibv_destroy_cq>>;
using QpPtr = std::unique_ptr<ibv_qp, VerbsDeleter<ibv_qp, ibv_destroy_qp>>;
using MrPtr = std::unique_ptr<ibv_mr, VerbsDeleter<ibv_mr, ibv_dereg_mr>>;

// Opens the verbs device named @ibdev (ENODEV if absent).
ContextPtr open_verbs(const std::string &ibdev);
ibv_port_attr query_port(ibv_context *ctx, int port);
Gid query_gid(ibv_context *ctx, int port, int index = 0);

// One RC QP with its own PD, CQ (sends and receives) and a registered
// buffer of @slots slots of @slot_size bytes; members are destroyed in
// reverse order. Move-only.
class RcQp {
public:
	RcQp(ibv_context *ctx, int port, int depth, std::size_t slot_size, int slots);
	std::uint32_t qpn() const noexcept { return qp_->qp_num; }
	ibv_qp *qp() const noexcept { return qp_.get(); }
	ibv_cq *cq() const noexcept { return cq_.get(); }
	ibv_pd *pd() const noexcept { return pd_.get(); }
	std::uint8_t *slot(int i) noexcept { return buf_.get() + static_cast<std::size_t>(i) * slot_size_; }
	std::size_t slot_size() const noexcept { return slot_size_; }
	int slots() const noexcept { return slots_; }
	int port() const noexcept { return port_; }

	// Moves the QP to @state with the CM's attributes for it.
	void modify(ConnectionId &conn, ibv_qp_state state) { modify_qp(qp_.get(), conn, state); }
	// RTS->RTS: loads the alternate path of a LAP exchange and rearms path
	// migration (ConnectionId::init_alt_path_attr()).
	void load_alternate_path(ConnectionId &conn) { modify_qp(qp_.get(), conn.init_alt_path_attr()); }
	void post_recv(int slot, std::uint64_t wr_id);
	void post_send(int slot, std::size_t len, std::uint64_t wr_id);

private:
	struct Free {
		void operator()(std::uint8_t *p) const noexcept;
	};
	int port_;
	std::size_t slot_size_;
	int slots_;
	std::unique_ptr<std::uint8_t, Free> buf_;
	PdPtr pd_;
	MrPtr mr_;
	CqPtr cq_;
	QpPtr qp_;
};

} // namespace ibcm

#endif
