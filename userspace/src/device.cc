// SPDX-License-Identifier: GPL-2.0
// ibcm::Device, ConnectionId and the file transport over /dev/infiniband/ucmN.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <system_error>

#include "abi.h"
#include "ibcm/cm.h"

namespace ibcm {

namespace {

[[noreturn]] void fail(int err, const std::string &what)
{
	throw std::system_error(err, std::generic_category(), what);
}

class FileTransport final : public Transport {
public:
	explicit FileTransport(const std::filesystem::path &node)
	{
		fd_ = ::open(node.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fd_ < 0)
			fail(errno, "open " + node.string());
	}
	~FileTransport() override { ::close(fd_); }

	std::size_t write(std::span<const std::byte> frame) override
	{
		for (;;) {
			const ssize_t n = ::write(fd_, frame.data(), frame.size());
			if (n >= 0)
				return static_cast<std::size_t>(n);
			if (errno != EINTR)
				fail(errno, "ucm write");
		}
	}

	int fd() const noexcept override { return fd_; }

	bool wait(std::chrono::milliseconds timeout) override
	{
		pollfd p{fd_, POLLIN, 0};
		const int ms = timeout.count() < 0 ? -1 : static_cast<int>(std::min<long long>(timeout.count(), 1 << 30));
		for (;;) {
			const int n = ::poll(&p, 1, ms);
			if (n >= 0)
				return n > 0;
			if (errno != EINTR)
				fail(errno, "ucm poll");
		}
	}

private:
	int fd_ = -1;
};

std::string read_line(const std::filesystem::path &p)
{
	std::ifstream in(p);
	std::string s;
	if (!in || !std::getline(in, s))
		return {};
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

} // namespace

std::unique_ptr<Transport> open_file_transport(const std::filesystem::path &node)
{
	return std::make_unique<FileTransport>(node);
}

void detail::Channel::send(const std::vector<std::byte> &bytes)
{
	const std::size_t n = transport->write(bytes);
	if (n != bytes.size())
		fail(EIO, "ucm: short write");
}

// ---- ConnectionId ----

ConnectionId::ConnectionId(std::shared_ptr<detail::Channel> channel, std::uint32_t id, std::uint64_t uid) noexcept
	: channel_(std::move(channel)), id_(id), uid_(uid)
{
}

ConnectionId::ConnectionId(ConnectionId &&other) noexcept
	: channel_(std::move(other.channel_)), id_(other.id_), uid_(other.uid_)
{
	other.channel_.reset();
}

ConnectionId &ConnectionId::operator=(ConnectionId &&other) noexcept
{
	if (this != &other) {
		if (channel_) {
			try {
				destroy();
			} catch (...) {
			}
		}
		channel_ = std::move(other.channel_);
		other.channel_.reset();
		id_ = other.id_;
		uid_ = other.uid_;
	}
	return *this;
}

ConnectionId::~ConnectionId()
{
	if (channel_) {
		try {
			destroy();
		} catch (...) {
			// The kernel frees the id when the file closes anyway.
		}
	}
}

std::uint32_t ConnectionId::destroy()
{
	if (!channel_)
		fail(EBADF, "destroy: empty ConnectionId");
	auto ch = std::move(channel_);
	channel_.reset();
	ib_ucm_destroy_id_resp resp{};
	ch->command(IB_USER_CM_CMD_DESTROY_ID, abi::destroy_id(id_, &resp), sizeof(resp));
	return resp.events_reported;
}

namespace {
detail::Channel &need(const std::shared_ptr<detail::Channel> &ch)
{
	if (!ch)
		fail(EBADF, "empty ConnectionId");
	return *ch;
}
} // namespace

void ConnectionId::listen(std::uint64_t service_id, std::uint64_t service_mask)
{
	need(channel_).command(IB_USER_CM_CMD_LISTEN, abi::listen(id_, service_id, service_mask), 0);
}

void ConnectionId::connect(const ReqParams &p)
{
	auto &ch = need(channel_);
	const ib_user_path_rec primary = abi::to_user(p.primary_path);
	ib_user_path_rec alternate{};
	if (p.alternate_path)
		alternate = abi::to_user(*p.alternate_path);
	ch.command(IB_USER_CM_CMD_SEND_REQ,
		   abi::req(id_, p, &primary, p.alternate_path ? &alternate : nullptr), 0);
}

void ConnectionId::accept(const RepParams &p)
{
	// An id born from a REQ reports under its listener's uid until the
	// REP names one of its own (ib_ucm takes the REP's uid for the id).
	auto &ch = need(channel_);
	const std::uint64_t uid = ch.next_uid;
	ch.command(IB_USER_CM_CMD_SEND_REP, abi::rep(id_, uid, p), 0);
	ch.next_uid++;
	uid_ = uid;
}

void ConnectionId::rtu(ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_RTU, abi::private_data(id_, data, kRtuPrivateData), 0);
}

void ConnectionId::reject(std::uint32_t reason, ByteView ari, ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_REJ,
			       abi::info(id_, reason, ari, kRejAriLength, data, kRejPrivateData), 0);
}

void ConnectionId::disconnect(ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_DREQ, abi::private_data(id_, data, kDreqPrivateData), 0);
}

void ConnectionId::drep(ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_DREP, abi::private_data(id_, data, kDrepPrivateData), 0);
}

void ConnectionId::mra(std::uint8_t service_timeout, ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_MRA, abi::mra(id_, service_timeout, data), 0);
}

void ConnectionId::lap(const PathRecord &alternate_path, ByteView data)
{
	auto &ch = need(channel_);
	const ib_user_path_rec path = abi::to_user(alternate_path);
	ch.command(IB_USER_CM_CMD_SEND_LAP, abi::lap(id_, &path, data), 0);
}

void ConnectionId::apr(std::uint32_t status, ByteView info, ByteView data)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_APR,
			       abi::info(id_, status, info, kAprInfoLength, data, kAprPrivateData), 0);
}

void ConnectionId::notify(std::uint32_t ib_event)
{
	need(channel_).command(IB_USER_CM_CMD_NOTIFY, abi::notify(id_, ib_event), 0);
}

void ConnectionId::sidr_req(const SidrReqParams &p)
{
	auto &ch = need(channel_);
	const ib_user_path_rec path = abi::to_user(p.path);
	ch.command(IB_USER_CM_CMD_SEND_SIDR_REQ, abi::sidr_req(id_, p, &path), 0);
}

void ConnectionId::sidr_rep(const SidrRepParams &p)
{
	need(channel_).command(IB_USER_CM_CMD_SEND_SIDR_REP, abi::sidr_rep(id_, p), 0);
}

IdAttr ConnectionId::attr()
{
	ib_ucm_attr_id_resp resp{};
	need(channel_).command(IB_USER_CM_CMD_ATTR_ID, abi::attr_id(id_, &resp), sizeof(resp));
	return {be64toh(resp.service_id), be64toh(resp.service_mask), be32toh(resp.local_id),
		be32toh(resp.remote_id)};
}

QpAttr ConnectionId::init_qp_attr(ibv_qp_state state)
{
	ib_uverbs_qp_attr resp{};
	need(channel_).command(IB_USER_CM_CMD_INIT_QP_ATTR, abi::init_qp_attr(id_, state, &resp), sizeof(resp));
	return abi::from_kernel(resp);
}

QpAttr ConnectionId::init_alt_path_attr()
{
	QpAttr q = init_qp_attr(IBV_QPS_RTS);
	const int need_mask = IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
	if ((q.mask & need_mask) != need_mask)
		fail(EINVAL, "no alternate path to load");
	return q;
}

// ---- Device ----

std::filesystem::path Device::find_node(std::string_view ibdev, const std::filesystem::path &sysfs,
					const std::filesystem::path &dev)
{
	const auto cls = sysfs / "class" / "infiniband_cm";
	const std::string abi = read_line(cls / "abi_version");
	if (abi.empty())
		fail(ENODEV, "no " + (cls / "abi_version").string() + " (is ib_ucm loaded?)");
	if (abi != std::to_string(IB_USER_CM_ABI_VERSION))
		fail(EPROTONOSUPPORT, "ib_ucm ABI " + abi + ", want " + std::to_string(IB_USER_CM_ABI_VERSION));
	std::error_code ec;
	for (const auto &entry : std::filesystem::directory_iterator(cls, ec)) {
		const std::string name = entry.path().filename().string();
		if (name.rfind("ucm", 0) != 0)
			continue;
		if (read_line(entry.path() / "ibdev") == ibdev)
			return dev / "infiniband" / name;
	}
	fail(ENODEV, "no ucm device for " + std::string(ibdev));
}

Device Device::open(std::string_view ibdev, const std::filesystem::path &sysfs, const std::filesystem::path &dev)
{
	return Device(open_file_transport(find_node(ibdev, sysfs, dev)));
}

Device::Device(std::unique_ptr<Transport> transport)
	: channel_(std::make_shared<detail::Channel>(std::move(transport)))
{
	if (!channel_->transport)
		fail(EINVAL, "Device: no transport");
}

int Device::fd() const noexcept
{
	return channel_->transport->fd();
}

ConnectionId Device::create_id()
{
	const std::uint64_t uid = channel_->next_uid++;
	ib_ucm_create_id_resp resp{};
	channel_->command(IB_USER_CM_CMD_CREATE_ID, abi::create_id(uid, &resp), sizeof(resp));
	return ConnectionId(channel_, resp.id, uid);
}

Listener Device::listen(std::uint64_t service_id, std::uint64_t service_mask)
{
	ConnectionId id = create_id();
	id.listen(service_id, service_mask);
	return Listener(std::move(id));
}

std::optional<Event> Device::next_event(std::chrono::milliseconds timeout)
{
	if (!channel_->transport->wait(timeout))
		return std::nullopt;
	ib_ucm_event_resp resp{};
	// Room for the largest private data (224) and info (72) of any event;
	// the lengths we tell the kernel are the bounds decode_event() keeps.
	std::uint8_t data[255] = {};
	std::uint8_t info[255] = {};
	const auto cmd = abi::event_get(&resp, data, sizeof(data), info, sizeof(info));
	try {
		channel_->command(IB_USER_CM_CMD_EVENT, cmd, sizeof(resp));
	} catch (const std::system_error &e) {
		if (e.code().value() == EAGAIN)
			return std::nullopt; // another reader took it
		throw;
	}
	return abi::decode_event(std::as_bytes(std::span(&resp, 1)), std::span<const std::uint8_t>(data, cmd.data_len),
				 std::span<const std::uint8_t>(info, cmd.info_len), channel_);
}

} // namespace ibcm
