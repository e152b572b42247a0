// SPDX-License-Identifier: GPL-2.0
// ibcm: connections through ib_ucm. A Device is one /dev/infiniband/ucmN;
// ConnectionId and Listener own a kernel cm_id each (DESTROY_ID in their
// destructor); Device::next_event() pumps the typed events.
//
// Lifetime: ids keep the Device's channel alive (shared ownership), so a
// ConnectionId may outlive the Device object that made it.
// Threads: a Device and its ids share unsynchronized state; use them from
// one thread at a time.
// Errors: std::system_error with the errno (see types.h).
#ifndef IBCM_CM_H
#define IBCM_CM_H

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>

#include <infiniband/verbs.h>

#include "ibcm/transport.h"
#include "ibcm/types.h"

namespace ibcm {

namespace detail {
struct Channel;
}

// What connect() sends in the REQ. Defaults are those of rdma_cm.
struct ReqParams {
	std::uint64_t service_id = 0; // host order
	std::uint32_t qpn = 0;
	std::uint32_t psn = 0; // 24 bits
	ibv_qp_type qp_type = IBV_QPT_RC;
	PathRecord primary_path;
	std::optional<PathRecord> alternate_path;
	Bytes private_data; // up to kReqPrivateData
	bool peer_to_peer = false;
	std::uint8_t responder_resources = 1;
	std::uint8_t initiator_depth = 1;
	std::uint8_t remote_cm_response_timeout = 20;
	bool flow_control = true;
	std::uint8_t local_cm_response_timeout = 20;
	std::uint8_t retry_count = 7;
	std::uint8_t rnr_retry_count = 7;
	std::uint8_t max_cm_retries = 15;
	bool srq = false;
};

// What accept() sends in the REP.
struct RepParams {
	std::uint32_t qpn = 0;
	std::uint32_t psn = 0;
	Bytes private_data; // up to kRepPrivateData
	std::uint8_t responder_resources = 1;
	std::uint8_t initiator_depth = 1;
	std::uint8_t target_ack_delay = 0;
	bool failover_accepted = false;
	bool flow_control = true;
	std::uint8_t rnr_retry_count = 7;
	bool srq = false;
};

struct SidrReqParams {
	std::uint64_t service_id = 0;
	PathRecord path;
	std::uint32_t timeout_ms = 1000;
	std::uint8_t max_cm_retries = 3;
	Bytes private_data; // up to kSidrReqPrivateData
};

struct SidrRepParams {
	std::uint32_t qpn = 0;
	std::uint32_t qkey = 0;
	std::uint32_t status = 0; // 0 = valid
	Bytes info; // up to kSidrRepInfoLength
	Bytes private_data; // up to kSidrRepPrivateData
};

// ATTR_ID's answer, host order.
struct IdAttr {
	std::uint64_t service_id = 0;
	std::uint64_t service_mask = 0;
	std::uint32_t local_id = 0;
	std::uint32_t remote_id = 0;
};

// INIT_QP_ATTR's answer, ready for ibv_modify_qp().
struct QpAttr {
	ibv_qp_attr attr{};
	int mask = 0;
};

class ConnectionId {
public:
	ConnectionId() = default;
	ConnectionId(std::shared_ptr<detail::Channel> channel, std::uint32_t id,
		     std::uint64_t uid) noexcept;
	ConnectionId(ConnectionId &&other) noexcept;
	ConnectionId &operator=(ConnectionId &&other) noexcept;
	ConnectionId(const ConnectionId &) = delete;
	ConnectionId &operator=(const ConnectionId &) = delete;
	~ConnectionId();

	explicit operator bool() const noexcept { return channel_ != nullptr; }
	std::uint32_t handle() const noexcept { return id_; }
	std::uint64_t uid() const noexcept { return uid_; }

	void listen(std::uint64_t service_id, std::uint64_t service_mask = ~0ULL);
	void connect(const ReqParams &params);
	// Sends the REP with a new uid for this id (uid() changes): the events
	// of an id from a ReqReceived carry the listener's uid until then.
	void accept(const RepParams &params);
	void rtu(ByteView private_data = {});
	void reject(std::uint32_t reason, ByteView ari = {}, ByteView private_data = {});
	void disconnect(ByteView private_data = {}); // DREQ
	void drep(ByteView private_data = {}); // answers a DREQ
	void mra(std::uint8_t service_timeout, ByteView private_data = {}); // REQ, REP or LAP
	// LAP (IBA 12.8): proposes an alternate path (as this side sees it) for
	// an established connection; the answer comes as AprReceived, none as
	// LapError.
	void lap(const PathRecord &alternate_path, ByteView private_data = {});
	// APR: answers a LapReceived; kAprSuccess accepts the path.
	void apr(std::uint32_t status, ByteView info = {}, ByteView private_data = {});
	void notify(std::uint32_t ib_event); // e.g. IBV_EVENT_COMM_EST
	void sidr_req(const SidrReqParams &params);
	void sidr_rep(const SidrRepParams &params);
	IdAttr attr();
	QpAttr init_qp_attr(ibv_qp_state state);
	// The RTS->RTS transition that loads the alternate path of a LAP
	// exchange (alt AV, port, P_Key index, timeout, PATH_MIG_STATE REARM):
	// on the LAP's receiver from LapReceived on, on its sender once an APR
	// accepted it. EINVAL (std::system_error) when the CM has none.
	QpAttr init_alt_path_attr();
	// Destroys the kernel id now; returns how many events it had reported.
	// The object is empty afterwards.
	std::uint32_t destroy();

private:
	std::shared_ptr<detail::Channel> channel_;
	std::uint32_t id_ = 0;
	std::uint64_t uid_ = 0;
};

// A ConnectionId that listens; REQs for it arrive as ReqReceived events.
class Listener {
public:
	Listener() = default;
	explicit Listener(ConnectionId id) noexcept : id_(std::move(id)) {}
	ConnectionId &id() noexcept { return id_; }
	std::uint32_t handle() const noexcept { return id_.handle(); }
	std::uint64_t uid() const noexcept { return id_.uid(); }

private:
	ConnectionId id_;
};

// ---- events (decoded from struct ib_ucm_event_resp) ----
struct EventHeader {
	std::uint64_t uid = 0; // of the id the event is for (a listener's for ReqReceived)
	std::uint32_t id = 0; // kernel handle of that id (the new one for ReqReceived)
};

struct ReqReceived : EventHeader {
	ConnectionId conn; // the new connection's id; owned by the event
	PathRecord primary_path;
	std::optional<PathRecord> alternate_path;
	std::uint64_t remote_ca_guid = 0;
	std::uint32_t remote_qkey = 0;
	std::uint32_t remote_qpn = 0;
	ibv_qp_type qp_type = IBV_QPT_RC;
	std::uint32_t starting_psn = 0;
	std::uint8_t responder_resources = 0;
	std::uint8_t initiator_depth = 0;
	std::uint8_t local_cm_response_timeout = 0;
	bool flow_control = false;
	std::uint8_t remote_cm_response_timeout = 0;
	std::uint8_t retry_count = 0;
	std::uint8_t rnr_retry_count = 0;
	bool srq = false;
	std::uint8_t port = 0;
	Bytes private_data;
};

struct RepReceived : EventHeader {
	std::uint64_t remote_ca_guid = 0;
	std::uint32_t remote_qkey = 0;
	std::uint32_t remote_qpn = 0;
	std::uint32_t starting_psn = 0;
	std::uint8_t responder_resources = 0;
	std::uint8_t initiator_depth = 0;
	std::uint8_t target_ack_delay = 0;
	std::uint8_t failover_accepted = 0;
	bool flow_control = false;
	std::uint8_t rnr_retry_count = 0;
	bool srq = false;
	Bytes private_data;
};

// RTU received (by_user false) or USER_ESTABLISHED (by_user true).
struct Established : EventHeader {
	bool by_user = false;
	Bytes private_data;
};

struct RejReceived : EventHeader {
	std::uint32_t reason = 0;
	Bytes ari;
	Bytes private_data;
};

struct MraReceived : EventHeader {
	std::uint8_t service_timeout = 0;
	Bytes private_data;
};

struct DreqReceived : EventHeader {
	Bytes private_data;
};

struct DrepReceived : EventHeader {
	Bytes private_data;
};

struct TimewaitExit : EventHeader {};

struct LapReceived : EventHeader {
	PathRecord alternate_path;
	Bytes private_data;
};

struct AprReceived : EventHeader {
	std::uint32_t status = 0;
	Bytes info;
	Bytes private_data;
};

struct SidrReqReceived : EventHeader {
	ConnectionId conn; // answer with sidr_rep()
	std::uint16_t pkey = 0;
	std::uint8_t port = 0;
	Bytes private_data;
};

struct SidrRepReceived : EventHeader {
	std::uint32_t status = 0;
	std::uint32_t qkey = 0;
	std::uint32_t qpn = 0;
	Bytes info;
	Bytes private_data;
};

// A message we sent was not answered; @send_status is an ibv_wc_status.
struct SendError : EventHeader {
	std::uint32_t send_status = 0;
};
struct ReqError : SendError {};
struct RepError : SendError {};
struct DreqError : SendError {};
struct LapError : SendError {};
struct SidrReqError : SendError {};

using Event = std::variant<ReqReceived, RepReceived, Established, RejReceived, MraReceived,
			   DreqReceived, DrepReceived, TimewaitExit, LapReceived, AprReceived,
			   SidrReqReceived, SidrRepReceived, ReqError, RepError, DreqError,
			   LapError, SidrReqError>;

// The uid and id of any event.
const EventHeader &header(const Event &event) noexcept;
// "ReqReceived", "RejReceived", ... for logs.
const char *event_name(const Event &event) noexcept;

class Device {
public:
	// Opens the ucm device of @ibdev ("mthca0"): the ucmN under
	// <sysfs>/class/infiniband_cm whose ibdev file names it, after checking
	// <sysfs>/class/infiniband_cm/abi_version is 5. ENODEV if none,
	// EPROTONOSUPPORT on another ABI version.
	static Device open(std::string_view ibdev, const std::filesystem::path &sysfs = "/sys",
			   const std::filesystem::path &dev = "/dev");
	// The node /dev/infiniband/ucmN of @ibdev, with the same checks as open().
	static std::filesystem::path find_node(std::string_view ibdev,
					       const std::filesystem::path &sysfs = "/sys",
					       const std::filesystem::path &dev = "/dev");
	explicit Device(std::unique_ptr<Transport> transport);

	// poll() for POLLIN on this descriptor, then call next_event().
	int fd() const noexcept;
	ConnectionId create_id();
	Listener listen(std::uint64_t service_id, std::uint64_t service_mask = ~0ULL);
	// The next event, or nullopt if none arrives within @timeout (negative
	// = wait for ever). Throws std::system_error(EBADMSG) for an event the
	// kernel reported malformed (unknown type, ...).
	std::optional<Event> next_event(std::chrono::milliseconds timeout);

private:
	std::shared_ptr<detail::Channel> channel_;
};

} // namespace ibcm

#endif
