// SPDX-License-Identifier: GPL-2.0
// Shared by the ibcm_* tools: options, paths, event waits, disconnects.
#ifndef IBCM_TOOLS_COMMON_H
#define IBCM_TOOLS_COMMON_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ibcm/ibcm.h"

namespace ibcm::tools {

inline constexpr std::uint64_t kDefaultServiceId = 0x0000000000abcd01ULL;

// --key value and --flag options; positional arguments are refused.
class Args {
public:
	// @flags: the options that take no value; @options: those that take
	// one. Anything else is a UsageError.
	Args(int argc, char **argv, const std::vector<std::string> &flags,
	     const std::vector<std::string> &options);
	bool has(const std::string &key) const { return values_.count(key) != 0; }
	std::string str(const std::string &key, const std::string &def = "") const;
	std::uint64_t num(const std::string &key, std::uint64_t def) const; // 0x.. accepted

private:
	std::map<std::string, std::string> values_;
};

class UsageError : public std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Exit status of a tool whose connect (or SIDR) the CM refused or gave up
// on: a REJ, a REQ_ERROR after the retries, a SIDR_REP that is not "valid".
inline constexpr int kCmFailed = 4;

// An event where another was awaited (wait_for()): what() describes it
// (describe_unexpected()), event() is its name ("RejReceived", "ReqError").
class CmEventError : public std::runtime_error {
public:
	CmEventError(const std::string &what, std::string event)
		: std::runtime_error(what), event_(std::move(event))
	{
	}
	const std::string &event() const noexcept { return event_; }

private:
	std::string event_;
};

// "invalid service ID" for REJ reason 8 (IBA 12.6.7.2), "reason N" if unknown.
std::string rej_reason_name(std::uint32_t reason);
// "valid", "unsupported" (the service ID), ... for a SIDR_REP status
// (IBA 12.11.2), "status N" if unknown.
std::string sidr_status_name(std::uint32_t status);

// --cm-timeout T (the REQ's remote CM response timeout, 4.096 us * 2^T,
// 0..31) and --cm-retries N (its MaxCMRetries, 0..15) onto @req; the
// library's defaults (20 and 15) stay when they are absent.
void apply_cm_options(const Args &args, ReqParams &req);

// The time the active side waits for a REP, in ms, as ib_cm computes it:
// (2 * PacketLifeTime + remote CM response timeout), each 4.096 us * 2^n.
double req_wait_ms(std::uint8_t packet_life_time, std::uint8_t cm_response_timeout);

// The path to the peer from --dgid / --dlid: through the SA, or with
// --no-sa from make_path() (--dgid defaults to our own GID when --dlid is
// our own LID: loopback).
PathRecord resolve_path(const Args &args, ibv_context *ctx, const std::string &dev, int port);

// Waits for an event of type T for connection @id, skipping MRAs (and
// anything for other ids). A REJ, a send error or any other event is
// thrown as CmEventError naming it. Timeout -> std::runtime_error.
template <typename T> T wait_for(Device &cm, std::uint32_t id, std::chrono::milliseconds timeout);

// A listen for the REQs an rdma_cm client sends to @port in the TCP port
// space: the exact service ID 0x0000000001060000 | port, which ib_ucm
// allows (one exact rdma_cm ID, not a range: ucm_check_listen()); ib_cm
// refuses it with EBUSY when another listener holds it.
Listener listen_rdma_cm(Device &cm, std::uint16_t port);

// The cma_hdr of a REQ's private data, as text, or "" if none.
std::string describe_cma(ByteView private_data);

std::uint32_t random_psn();

// Waits (up to 5 s) for @conn's TimewaitExit; not seeing it is no error
// (timewait is the kernel's business).
void drain_timewait(Device &cm, ConnectionId &conn);

// Ends an established connection from either side: our DREQ, then the
// peer's DREP; if the peer disconnected first (an rdma_cm server does) or
// the DREQs crossed, our DREP to its DREQ. Then drain_timewait().
// Any other event, or nothing within @timeout, throws.
void disconnect_and_drain(Device &cm, ConnectionId &conn, std::chrono::milliseconds timeout);

// The passive side's INIT->RTR before its REP: the CM learns the receive
// PSN only from the REP it has not sent yet, so (as Linux's consumers do)
// the QP gets @rq_psn, the REP's starting PSN, here.
inline void passive_rtr(RcQp &qp, ConnectionId &conn, std::uint32_t rq_psn)
{
	QpAttr rtr = conn.init_qp_attr(IBV_QPS_RTR);
	rtr.attr.rq_psn = rq_psn;
	modify_qp(qp.qp(), rtr);
}

// The REP for @req on a QP in INIT with its receives posted: a random PSN
// (passive_rtr() takes the QP to RTR with it), at most 1 responder
// resource and initiator depth and no more than the REQ offers the other
// way, RNR retry 7.
inline RepParams passive_rep(RcQp &qp, ConnectionId &conn, const ReqReceived &req)
{
	RepParams rep;
	rep.qpn = qp.qpn();
	rep.psn = random_psn();
	passive_rtr(qp, conn, rep.psn);
	rep.responder_resources = std::min<std::uint8_t>(req.initiator_depth, 1);
	rep.initiator_depth = std::min<std::uint8_t>(req.responder_resources, 1);
	rep.rnr_retry_count = 7;
	return rep;
}

} // namespace ibcm::tools

#include "common_wait.h"

#endif
