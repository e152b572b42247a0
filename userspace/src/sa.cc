// SPDX-License-Identifier: GPL-2.0
// SaClient: PathRecord GET to the port's SM through libibumad.
#include <endian.h>
#include <infiniband/umad.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <system_error>
#include <vector>

#include "ibcm/path.h"

namespace ibcm {

namespace {

[[noreturn]] void fail(int err, const std::string &what)
{
	throw std::system_error(err, std::generic_category(), what);
}

constexpr int kQp1 = 1;
constexpr std::uint32_t kQp1Qkey = 0x80010000;

} // namespace

SaClient::SaClient(const std::string &ca, int port)
{
	if (umad_init() < 0)
		fail(ENODEV, "umad_init");
	umad_port_t p{};
	int rc = umad_get_port(ca.c_str(), port, &p);
	if (rc < 0)
		fail(-rc, "umad_get_port " + ca);
	sm_lid_ = static_cast<std::uint16_t>(p.sm_lid);
	sm_sl_ = static_cast<std::uint8_t>(p.sm_sl);
	lid_ = static_cast<std::uint16_t>(p.base_lid);
	const std::uint64_t prefix = be64toh(p.gid_prefix), guid = be64toh(p.port_guid);
	for (int i = 0; i < 8; i++) {
		sgid_[i] = static_cast<std::uint8_t>(prefix >> (56 - 8 * i));
		sgid_[8 + i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
	}
	umad_release_port(&p);
	if (sm_lid_ == 0)
		fail(EHOSTUNREACH, "port has no SM");
	fd_ = umad_open_port(ca.c_str(), port);
	if (fd_ < 0)
		fail(-fd_, "umad_open_port " + ca);
	agent_ = umad_register(fd_, 0x03, 2, 0, nullptr);
	if (agent_ < 0) {
		const int err = -agent_;
		umad_close_port(fd_);
		fail(err, "umad_register SA");
	}
	next_tid_ = std::random_device{}() & 0xffffffffULL;
}

SaClient::~SaClient()
{
	if (fd_ >= 0) {
		umad_unregister(fd_, agent_);
		umad_close_port(fd_);
	}
}

PathRecord SaClient::path_by_dgid(const Gid &dgid, std::chrono::milliseconds timeout)
{
	PathRecord q;
	q.dgid = dgid;
	q.sgid = sgid_;
	q.numb_path = 1;
	return query(kPathDgid | kPathSgid | kPathNumbPath, q, timeout);
}

PathRecord SaClient::path_by_dlid(std::uint16_t dlid, std::chrono::milliseconds timeout)
{
	PathRecord q;
	q.dlid = dlid;
	q.slid = lid_;
	q.numb_path = 1;
	return query(kPathDlid | kPathSlid | kPathNumbPath, q, timeout);
}

PathRecord SaClient::query(std::uint64_t comp_mask, const PathRecord &q, std::chrono::milliseconds timeout)
{
	const std::uint64_t tid = next_tid_++;
	const auto mad = build_path_query(tid, comp_mask, q);
	const std::size_t total = umad_size() + mad.size();
	std::vector<std::uint8_t> buf(total);
	std::memcpy(umad_get_mad(buf.data()), mad.data(), mad.size());
	umad_set_addr(buf.data(), sm_lid_, kQp1, sm_sl_, static_cast<int>(kQp1Qkey));
	int rc = umad_send(fd_, agent_, buf.data(), static_cast<int>(mad.size()), static_cast<int>(timeout.count()), 2);
	if (rc < 0)
		fail(-rc, "umad_send PathRecord");
	const auto deadline = std::chrono::steady_clock::now() + timeout * 3;
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			fail(ETIMEDOUT, "SA PathRecord: no answer");
		std::vector<std::uint8_t> in(total);
		int len = static_cast<int>(mad.size());
		rc = umad_recv(fd_, in.data(), &len, static_cast<int>(left.count()));
		if (rc < 0) {
			if (rc == -ETIMEDOUT || rc == -EWOULDBLOCK)
				fail(ETIMEDOUT, "SA PathRecord: no answer");
			fail(-rc, "umad_recv");
		}
		if (umad_status(in.data()) == ETIMEDOUT)
			fail(ETIMEDOUT, "SA PathRecord: send timed out");
		const auto *m = static_cast<const std::uint8_t *>(umad_get_mad(in.data()));
		const std::size_t mlen = std::min<std::size_t>(static_cast<std::size_t>(std::max(len, 0)), mad.size());
		try {
			return parse_path_response(ByteView(m, mlen), tid);
		} catch (const std::system_error &e) {
			if (e.code().value() != EBADMSG)
				throw;
			// an unrelated MAD (an older TID): keep waiting
		}
	}
}

} // namespace ibcm
