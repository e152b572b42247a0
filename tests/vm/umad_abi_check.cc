// SPDX-License-Identifier: GPL-2.0
//
// umad_abi_check: the user ABI of ib_umad (ABI 5, Documentation/umad.md),
// exercised from inside a guest through /dev/infiniband/umad0 and issm0.
// Built against the system uapi header <rdma/ib_user_mad.h>, which is what
// user space (libibumad, OpenSM) compiles against.
//
// Setting (tests/vm/ours_umad_abi.test.cc): this guest's port is ACTIVE on a
// two-node fabric, OpenSM runs in this guest and holds issm0, the peer's
// LID and node GUID are given on the command line:
//
//   umad_abi_check [--upstream] <peer LID> <peer node GUID, hex>
//
// Every case prints "PASS <name>" or "FAIL <name>: <detail>"; the last line
// is "<n> passed, <n> failed" and the exit status is 1 if any case failed.
// --upstream leaves out the cases where our ib_umad is deliberately stricter
// than Linux 6.1's (each is marked "ours only" below).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

static_assert(sizeof(ib_user_mad_hdr) == 64);
static_assert(sizeof(ib_user_mad_hdr_old) == 56);
static_assert(sizeof(ib_user_mad_reg_req2) == 40);

constexpr const char *kUmad = "/dev/infiniband/umad0";
constexpr const char *kIssm = "/dev/infiniband/issm0";
constexpr const char *kPortDir = "/sys/class/infiniband/mthca0/ports/1/";
constexpr size_t kHdr = sizeof(ib_user_mad_hdr);
constexpr size_t kOldHdr = sizeof(ib_user_mad_hdr_old);
constexpr size_t kMad = 256;  // one MAD packet
constexpr size_t kMadHdr = 24;  // the common MAD header
constexpr size_t kSaData = 56;  // where SA attributes start in an SA MAD

// MAD classes, methods and attributes used here (IBTA vol. 1, ch. 13-15).
constexpr uint8_t kClassSmpLid = 0x01;
constexpr uint8_t kClassSa = 0x03;
constexpr uint8_t kMethodGet = 0x01;
constexpr uint8_t kMethodSet = 0x02;
constexpr uint8_t kMethodGetResp = 0x81;
constexpr uint8_t kMethodGetTable = 0x12;
constexpr uint8_t kMethodGetTableResp = 0x92;
constexpr uint16_t kAttrNodeInfo = 0x0011;
constexpr uint16_t kAttrPathRecord = 0x0035;
constexpr uint32_t kGsiQkey = 0x80010000;
// Ours: the most data bytes one kernel-RMPP message may carry (4 MiB,
// IB_MAD_RMPP_MAX_DATA), the most retries of one send and its longest
// timeout (Documentation/umad.md).
constexpr size_t kMaxRmppData = 4u << 20;
constexpr uint32_t kMaxRetries = 100;
constexpr uint32_t kMaxTimeoutMs = 8796093;

int passed, failed;

void Report(const std::string &name, bool ok, const std::string &detail = "")
{
	if (ok) {
		passed++;
		std::printf("PASS %s\n", name.c_str());
	} else {
		failed++;
		std::printf("FAIL %s: %s\n", name.c_str(), detail.c_str());
	}
	std::fflush(stdout);
}

// Checks that a call failing with -1/errno gave `want` (0: succeeded).
template <typename F>
void ExpectErrno(const std::string &name, int want, F call)
{
	errno = 0;
	long r = call();
	int got = r < 0 ? errno : 0;
	Report(name, got == want,
	       "got " + std::string(got ? std::strerror(got) : "success") + " (" + std::to_string(got) +
		       "), want " + (want ? std::strerror(want) : "success"));
}

uint16_t Be16At(const std::vector<uint8_t> &b, size_t off)
{
	return static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
}

uint32_t Le32At(const std::vector<uint8_t> &b, size_t off)
{
	uint32_t v;
	std::memcpy(&v, b.data() + off, 4);
	return v;
}

uint64_t Be64At(const std::vector<uint8_t> &b, size_t off)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 8; i++)
		v = v << 8 | b[off + i];
	return v;
}

void PutBe(std::vector<uint8_t> &b, size_t off, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[off + i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
}

std::string Hex(uint64_t v)
{
	char s[24];
	std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(v));
	return s;
}

// The address part of a send: where to, how long to wait, how often to retry.
struct Dest {
	uint16_t lid = 0;
	uint32_t qpn = 0;
	uint32_t qkey = 0;
	uint32_t timeout_ms = 0;
	uint32_t retries = 0;
	uint8_t sl = 0;
	uint16_t pkey_index = 0;
};

// A header of the current format for agent `id` sending to `d`.
std::vector<uint8_t> Header(uint32_t id, const Dest &d)
{
	ib_user_mad_hdr h{};
	h.id = id;
	h.timeout_ms = d.timeout_ms;
	h.retries = d.retries;
	h.qpn = htonl(d.qpn);
	h.qkey = htonl(d.qkey);
	h.lid = htons(d.lid);
	h.sl = d.sl;
	h.pkey_index = d.pkey_index;
	std::vector<uint8_t> out(kHdr);
	std::memcpy(out.data(), &h, kHdr);
	return out;
}

// A MAD of `size` bytes: common header plus `payload` after it.
std::vector<uint8_t> Mad(uint8_t mgmt_class, uint8_t version, uint8_t method, uint16_t attr, uint64_t tid,
			 const std::vector<uint8_t> &payload = {}, size_t size = kMad)
{
	std::vector<uint8_t> m(size);
	m[0] = 1;  // base version
	m[1] = mgmt_class;
	m[2] = version;
	m[3] = method;
	PutBe(m, 8, tid, 8);
	PutBe(m, 16, attr, 2);
	std::copy(payload.begin(), payload.end(), m.begin() + kMadHdr);
	return m;
}

// An SA MAD with the RMPP header of a first, Active DATA segment, with
// `data` bytes of data after the SA header: the kernel segments it.
std::vector<uint8_t> RmppSaMad(uint8_t method, uint64_t tid, size_t data)
{
	std::vector<uint8_t> m = Mad(kClassSa, 2, method, kAttrPathRecord, tid, {}, kSaData + data);
	m[24] = 1;  // RMPP version
	m[25] = 1;  // DATA
	m[26] = 0x07;  // Active, First, Last
	return m;
}

std::vector<uint8_t> Cat(std::vector<uint8_t> a, const std::vector<uint8_t> &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

std::vector<uint8_t> SubnGetNodeInfo(uint64_t tid)
{
	return Mad(kClassSmpLid, 1, kMethodGet, kAttrNodeInfo, tid);
}

ssize_t Write(int fd, const std::vector<uint8_t> &b)
{
	return write(fd, b.data(), b.size());
}

// Waits up to `ms` for something to read, then reads up to `n` bytes.
// nullopt: nothing came (or read failed; *err says which errno, 0 = none).
std::optional<std::vector<uint8_t>> ReadWait(int fd, size_t n, int ms, int *err = nullptr)
{
	if (err)
		*err = 0;
	pollfd p{fd, POLLIN, 0};
	if (poll(&p, 1, ms) != 1)
		return std::nullopt;
	std::vector<uint8_t> b(n);
	ssize_t r = read(fd, b.data(), n);
	if (r < 0) {
		if (err)
			*err = errno;
		return std::nullopt;
	}
	b.resize(static_cast<size_t>(r));
	return b;
}

// REGISTER_AGENT2; returns 0 or the errno, the request as the kernel left it in *req.
int Register2(int fd, ib_user_mad_reg_req2 *req)
{
	return ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, req) < 0 ? errno : 0;
}

ib_user_mad_reg_req2 Req2(uint32_t qpn, uint8_t mgmt_class = 0, uint8_t version = 0, uint32_t flags = 0,
			  uint32_t oui = 0, uint8_t rmpp = 0)
{
	ib_user_mad_reg_req2 r{};
	r.qpn = qpn;
	r.mgmt_class = mgmt_class;
	r.mgmt_class_version = version;
	r.flags = flags;
	r.oui = oui;
	r.rmpp_version = rmpp;
	return r;
}

long SysfsNumber(const std::string &file)
{
	std::ifstream in(std::string(kPortDir) + file);
	std::string s;
	in >> s;
	return s.empty() ? -1 : std::strtol(s.c_str(), nullptr, 0);
}

double Since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Setting {
	bool upstream = false;
	uint16_t own_lid = 0;
	uint16_t sm_lid = 0;
	uint16_t peer_lid = 0;
	uint64_t peer_guid = 0;
};

// Registration, ioctl, read/write and poll validation on a fresh file.
// Returns the SMP (QP0, no class) and SA (QP1, class 3 v2, RMPP) agent ids.
std::pair<uint32_t, uint32_t> Registration(int fd, const Setting &s)
{
	ExpectErrno("ENABLE_PKEY on a fresh file succeeds", 0, [&] { return ioctl(fd, IB_USER_MAD_ENABLE_PKEY); });

	auto bad_flags = Req2(1, 0, 0, 0x6);
	int e = Register2(fd, &bad_flags);
	Report("REGISTER_AGENT2 with unknown flags -> EINVAL", e == EINVAL, std::strerror(e));
	Report("REGISTER_AGENT2 writes the supported flags (USER_RMPP) back",
	       bad_flags.flags == IB_USER_MAD_REG_FLAGS_CAP, Hex(bad_flags.flags));
	auto qp2 = Req2(2);
	e = Register2(fd, &qp2);
	Report("REGISTER_AGENT2 on QPN 2 -> EINVAL", e == EINVAL, std::strerror(e));
	auto rmpp2 = Req2(1, 0, 0, 0, 0, 2);
	e = Register2(fd, &rmpp2);
	Report("REGISTER_AGENT2 with RMPP version 2 -> EINVAL", e == EINVAL, std::strerror(e));
	auto big_oui = Req2(1, 0x30, 1, 0, 0x1000000);
	e = Register2(fd, &big_oui);
	Report("REGISTER_AGENT2 with an OUI over 24 bits -> EINVAL", e == EINVAL, std::strerror(e));

	auto smp = Req2(0);
	e = Register2(fd, &smp);
	Report("REGISTER_AGENT2 of a QP0 agent", e == 0, std::strerror(e));
	auto sa = Req2(1, kClassSa, 2, 0, 0, 1);
	e = Register2(fd, &sa);
	Report("REGISTER_AGENT2 of an SA agent with kernel RMPP", e == 0, std::strerror(e));
	Report("the two agents have distinct ids", smp.id != sa.id,
	       std::to_string(smp.id) + " == " + std::to_string(sa.id));

	ExpectErrno("ENABLE_PKEY after a registration -> EINVAL", EINVAL,
		    [&] { return ioctl(fd, IB_USER_MAD_ENABLE_PKEY); });
	uint32_t id = 40;
	ExpectErrno("UNREGISTER_AGENT of id 40 (out of range) -> EINVAL", EINVAL,
		    [&] { return ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id); });
	id = 20;
	ExpectErrno("UNREGISTER_AGENT of an unused id -> EINVAL", EINVAL,
		    [&] { return ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id); });
	ExpectErrno("an unknown ioctl -> ENOTTY", ENOTTY, [&] { return ioctl(fd, _IO(IB_IOCTL_MAGIC, 9)); });

	std::vector<uint8_t> buf(kHdr + 2048);
	ExpectErrno("read shorter than the header -> EINVAL", EINVAL, [&] { return read(fd, buf.data(), 10); });
	ExpectErrno("read with nothing queued, O_NONBLOCK -> EAGAIN", EAGAIN,
		    [&] { return read(fd, buf.data(), 1024); });

	Dest peer{.lid = s.peer_lid};
	ExpectErrno("write shorter than header + RMPP header -> EINVAL", EINVAL,
		    [&] { return Write(fd, Cat(Header(smp.id, peer), std::vector<uint8_t>(10))); });
	ExpectErrno("write for agent id 99 -> EINVAL", EINVAL,
		    [&] { return Write(fd, Cat(Header(99, peer), SubnGetNodeInfo(1))); });
	ExpectErrno("write for an unregistered agent id -> EIO", EIO,
		    [&] { return Write(fd, Cat(Header(17, peer), SubnGetNodeInfo(1))); });
	// Ours only: Linux 6.1 does not check the SL and sends the MAD; ours
	// refuses an SL that does not exist.
	if (!s.upstream) {
		Dest bad_sl = peer;
		bad_sl.sl = 16;
		ExpectErrno("write with SL 16 -> EINVAL (ours only)", EINVAL,
			    [&] { return Write(fd, Cat(Header(smp.id, bad_sl), SubnGetNodeInfo(1))); });
	}
	ExpectErrno("write of a non-RMPP MAD longer than a packet -> EINVAL", EINVAL, [&] {
		return Write(fd, Cat(Header(smp.id, peer), Mad(kClassSmpLid, 1, kMethodGet, kAttrNodeInfo, 1, {}, 300)));
	});

	// Ours only: Linux 6.1 sends with whatever P_Key the driver makes of an
	// index outside the table, takes any retry count and any RMPP size.
	if (!s.upstream) {
		Dest bad_pkey = peer;
		bad_pkey.pkey_index = 200;
		ExpectErrno("write with pkey_index 200 (beyond the P_Key table) -> EINVAL (ours only)", EINVAL,
			    [&] { return Write(fd, Cat(Header(smp.id, bad_pkey), SubnGetNodeInfo(2))); });
		Dest many = peer;
		many.retries = kMaxRetries + 1;
		ExpectErrno("write with 101 retries -> EINVAL (ours only)", EINVAL,
			    [&] { return Write(fd, Cat(Header(smp.id, many), SubnGetNodeInfo(3))); });
		Dest slow = peer;
		slow.timeout_ms = kMaxTimeoutMs + 1;
		ExpectErrno("write with timeout_ms 8796094 (over 4.096 us * 2^31) -> EINVAL (ours only)", EINVAL,
			    [&] { return Write(fd, Cat(Header(smp.id, slow), SubnGetNodeInfo(4))); });
		Dest sm{.lid = s.sm_lid, .qpn = 1, .qkey = kGsiQkey, .timeout_ms = 100};
		ExpectErrno("write of a kernel-RMPP message with 4 MiB + 1 data bytes -> EMSGSIZE (ours only)",
			    EMSGSIZE, [&] {
				    return Write(fd, Cat(Header(sa.id, sm),
							 RmppSaMad(kMethodSet, 4, kMaxRmppData + 1)));
			    });
		// Refused on the byte count alone: nothing is read from the
		// buffer, which is much shorter than the count.
		ExpectErrno("write of 1 GiB -> EMSGSIZE before anything is copied (ours only)", EMSGSIZE, [&] {
			std::vector<uint8_t> small(kHdr + kMad);
			return write(fd, small.data(), 1u << 30);
		});
	}

	pollfd p{fd, POLLIN | POLLOUT, 0};
	int n = poll(&p, 1, 0);
	Report("poll: writable, nothing to read", n == 1 && (p.revents & POLLOUT) && !(p.revents & POLLIN),
	       "poll " + std::to_string(n) + " revents " + Hex(static_cast<uint16_t>(p.revents)));
	return {smp.id, sa.id};
}

// SubnGet(NodeInfo) to the peer on QP0 and its answer.
void SmpRoundTrip(int fd, uint32_t agent, const Setting &s)
{
	Dest d{.lid = s.peer_lid, .timeout_ms = 1000, .retries = 2};
	ssize_t n = Write(fd, Cat(Header(agent, d), SubnGetNodeInfo(0x1234)));
	Report("write of a SubnGet returns the byte count", n == static_cast<ssize_t>(kHdr + kMad),
	       std::to_string(n) + (n < 0 ? std::string(" ") + std::strerror(errno) : ""));
	auto r = ReadWait(fd, kHdr + 2048, 5000);
	Report("the NodeInfo answer arrives", r.has_value(), "nothing within 5 s");
	if (!r)
		return;
	ib_user_mad_hdr h;
	std::memcpy(&h, r->data(), std::min(r->size(), kHdr));
	Report("answer header: our agent, status 0, length, from the peer's LID on QP0",
	       r->size() == kHdr + kMad && h.id == agent && h.status == 0 && h.length == kHdr + kMad &&
		       ntohs(h.lid) == s.peer_lid && ntohl(h.qpn) == 0,
	       "read " + std::to_string(r->size()) + ", id " + std::to_string(h.id) + ", status " +
		       std::to_string(h.status) + ", length " + std::to_string(h.length) + ", lid " +
		       std::to_string(ntohs(h.lid)) + ", qpn " + std::to_string(ntohl(h.qpn)));
	if (r->size() < kHdr + kMad)
		return;
	std::vector<uint8_t> m(r->begin() + kHdr, r->end());
	Report("answer is a GetResp(NodeInfo) with the low half of our TID",
	       m[3] == kMethodGetResp && Be16At(m, 16) == kAttrNodeInfo && (Be64At(m, 8) & 0xffffffff) == 0x1234,
	       "method " + Hex(m[3]) + " attr " + Hex(Be16At(m, 16)) + " tid " + Hex(Be64At(m, 8)));
	// SMP data starts at 64; NodeInfo's NodeGUID is at byte 12 of it.
	Report("NodeInfo carries the peer's node GUID", Be64At(m, 64 + 12) == s.peer_guid,
	       Hex(Be64At(m, 64 + 12)) + " != " + Hex(s.peer_guid));
}

// Sends nobody answers: ETIMEDOUT after the retries; a TID in flight is refused.
void TimeoutsAndDuplicates(int fd, uint32_t agent)
{
	auto t0 = std::chrono::steady_clock::now();
	Dest nowhere{.lid = 0x77, .timeout_ms = 200, .retries = 1};
	Write(fd, Cat(Header(agent, nowhere), SubnGetNodeInfo(0x5555)));
	auto r = ReadWait(fd, kHdr + 2048, 10000);
	double waited = Since(t0);
	Report("an unanswered request comes back with status ETIMEDOUT",
	       r && r->size() >= kHdr && Le32At(*r, 4) == ETIMEDOUT,
	       r ? "status " + std::to_string(r->size() >= kHdr ? Le32At(*r, 4) : 0) : "nothing within 10 s");
	if (r) {
		Report("the timeout report is the header and the MAD header", r->size() == kHdr + kMadHdr,
		       std::to_string(r->size()) + " bytes");
		Report("the timeout comes after timeout * (1 + retries)", waited >= 0.35,
		       std::to_string(waited) + " s");
	}

	Dest first{.lid = 0x78, .timeout_ms = 500};
	Dest second{.lid = 0x79, .timeout_ms = 500};
	ssize_t n = Write(fd, Cat(Header(agent, first), SubnGetNodeInfo(0x7777)));
	Report("a request to a LID nobody has is accepted", n == static_cast<ssize_t>(kHdr + kMad),
	       n < 0 ? std::strerror(errno) : std::to_string(n));
	ExpectErrno("a second request with the TID in flight -> EINVAL", EINVAL,
		    [&] { return Write(fd, Cat(Header(agent, second), SubnGetNodeInfo(0x7777))); });
	r = ReadWait(fd, kHdr + 2048, 10000);
	Report("the first one times out, not the refused one",
	       r && r->size() == kHdr + kMadHdr && Le32At(*r, 4) == ETIMEDOUT &&
		       (Be64At(*r, kHdr + 8) & 0xffffffff) == 0x7777,
	       r ? std::to_string(r->size()) + " bytes" : "nothing within 10 s");
	r = ReadWait(fd, kHdr + 2048, 1000);
	Report("and nothing else is queued", !r, "an extra message came");
}

// SA GetTable(PathRecord): the answer is RMPP (more than one packet).
void RmppAnswer(int fd, uint32_t agent, const Setting &s)
{
	// RMPP header (12 bytes), SM_Key (8), attribute offset, reserved,
	// component mask (0: all path records).
	std::vector<uint8_t> sa_head(kSaData - kMadHdr);
	Dest sm{.lid = s.sm_lid, .qpn = 1, .qkey = kGsiQkey, .timeout_ms = 2000, .retries = 2};
	ssize_t n = Write(fd, Cat(Header(agent, sm), Mad(kClassSa, 2, kMethodGetTable, kAttrPathRecord, 0x4242,
							  sa_head)));
	Report("write of an SA GetTable(PathRecord)", n == static_cast<ssize_t>(kHdr + kMad),
	       n < 0 ? std::strerror(errno) : std::to_string(n));
	pollfd p{fd, POLLIN, 0};
	poll(&p, 1, 10000);
	std::vector<uint8_t> small(kHdr + kMad);
	ExpectErrno("read of the RMPP answer into header + one packet -> ENOSPC", ENOSPC,
		    [&] { return read(fd, small.data(), small.size()); });
	int err = 0;
	auto r = ReadWait(fd, kHdr + 8192, 1000, &err);
	Report("the answer stays queued and is read whole with a larger buffer", r && r->size() > kHdr + kMad,
	       r ? std::to_string(r->size()) + " bytes" : "read failed: " + std::string(std::strerror(err)));
	if (!r || r->size() <= kHdr + kMad)
		return;
	ib_user_mad_hdr h;
	std::memcpy(&h, r->data(), kHdr);
	Report("header: the SA agent, status 0, length = bytes read",
	       h.id == agent && h.status == 0 && h.length == r->size(),
	       "id " + std::to_string(h.id) + " status " + std::to_string(h.status) + " length " +
		       std::to_string(h.length) + " read " + std::to_string(r->size()));
	std::vector<uint8_t> m(r->begin() + kHdr, r->end());
	size_t stride = Be16At(m, 44) * 8u;
	Report("a GetTableResp for TID 0x4242 with 64-byte PathRecords",
	       m[3] == kMethodGetTableResp && stride == 64 && (Be64At(m, 8) & 0xffffffff) == 0x4242,
	       "method " + Hex(m[3]) + " attribute offset " + std::to_string(stride) + " tid " + Hex(Be64At(m, 8)));
	if (stride != 64)
		return;
	// The records: DLID at byte 40, SLID at 42; RMPP padding after the
	// last one (if any) is all zeroes.
	std::vector<std::pair<uint16_t, uint16_t>> got, want;
	for (size_t off = kSaData; off + stride <= m.size(); off += stride)
		if (Be16At(m, off + 40))
			got.emplace_back(Be16At(m, off + 40), Be16At(m, off + 42));
	for (uint16_t d : {s.own_lid, s.peer_lid})
		for (uint16_t sl : {s.own_lid, s.peer_lid})
			want.emplace_back(d, sl);
	std::sort(got.begin(), got.end());
	std::sort(want.begin(), want.end());
	std::string list = "got";
	for (auto [d, sl] : got) {
		char one[32];
		std::snprintf(one, sizeof one, " %u<-%u", d, sl);
		list += one;
	}
	Report("the records are the four LID pairs of the fabric", got == want, list);
}

// Two kernel-RMPP sends with one TID: the second is refused, as for any
// other request (Linux 6.1 checks them too).
void RmppDuplicateTid(int fd, uint32_t agent)
{
	Dest nowhere{.lid = 0x7b, .qpn = 1, .qkey = kGsiQkey, .timeout_ms = 500};
	auto mad = RmppSaMad(kMethodSet, 0x6666, 1000);
	ssize_t n = Write(fd, Cat(Header(agent, nowhere), mad));
	Report("a kernel-RMPP request (5 segments) to a LID nobody has is accepted",
	       n == static_cast<ssize_t>(kHdr + mad.size()), n < 0 ? std::strerror(errno) : std::to_string(n));
	ExpectErrno("a second kernel-RMPP request with the TID in flight -> EINVAL", EINVAL,
		    [&] { return Write(fd, Cat(Header(agent, nowhere), mad)); });
	auto r = ReadWait(fd, kHdr + 2048, 10000);
	Report("the first kernel-RMPP request times out",
	       r && r->size() == kHdr + kMadHdr && Le32At(*r, 4) == ETIMEDOUT &&
		       (Be64At(*r, kHdr + 8) & 0xffffffff) == 0x6666,
	       r ? std::to_string(r->size()) + " bytes" : "nothing within 10 s");
	r = ReadWait(fd, kHdr + 2048, 1000);
	Report("and nothing else is queued after it", !r, "an extra message came");
}

// The old ABI: no ENABLE_PKEY, REGISTER_AGENT and a 56-byte header.
void OldHeader(const Setting &s)
{
	int fd = open(kUmad, O_RDWR);
	Report("open umad0 again (blocking)", fd >= 0, std::strerror(errno));
	if (fd < 0)
		return;
	ib_user_mad_reg_req req{};
	int e = ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req) < 0 ? errno : 0;
	Report("REGISTER_AGENT (old) of a QP0 agent", e == 0, std::strerror(e));
	ib_user_mad_hdr_old h{};
	h.id = req.id;
	h.timeout_ms = 1000;
	h.lid = htons(s.peer_lid);
	std::vector<uint8_t> head(kOldHdr);
	std::memcpy(head.data(), &h, kOldHdr);
	ssize_t n = Write(fd, Cat(head, SubnGetNodeInfo(0x99)));
	Report("old format: write of header + MAD", n == static_cast<ssize_t>(kOldHdr + kMad),
	       n < 0 ? std::strerror(errno) : std::to_string(n));
	auto r = ReadWait(fd, kHdr + 2048, 5000);
	Report("old format: the answer is a 56-byte header and the MAD",
	       r && r->size() == kOldHdr + kMad && Le32At(*r, 16) == kOldHdr + kMad,
	       r ? std::to_string(r->size()) + " bytes, length " + std::to_string(Le32At(*r, 16))
		 : "nothing within 5 s");
	uint32_t id = req.id;
	ExpectErrno("old format: UNREGISTER_AGENT", 0, [&] { return ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id); });
	ExpectErrno("old format: write after unregistering -> EIO", EIO,
		    [&] { return Write(fd, Cat(head, SubnGetNodeInfo(0x98))); });
	Report("close", close(fd) == 0, std::strerror(errno));
}

// Writes `text` into the file `path`; 0 or the errno.
int WriteFile(const std::string &path, const std::string &text)
{
	int f = open(path.c_str(), O_WRONLY);
	if (f < 0)
		return errno;
	int e = write(f, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
	close(f);
	return e;
}

// A number from a cgroup file (memory.current), or -1.
long long CgroupNumber(const std::string &path)
{
	std::ifstream in(path);
	long long v = -1;
	in >> v;
	return in ? v : -1;
}

// Ours only (Linux 6.1 allocates the send buffer with GFP_KERNEL): the
// buffers of a user's sends are charged to the writer's memory cgroup.
//
// The test process moves into a child cgroup of its own and queues kSends
// kernel-RMPP sends of kData bytes each to a LID nobody has, with a long
// timeout, so the kernel holds every send buffer (about kData bytes each)
// until the file is closed. memory.current of the child must grow by at
// least half of what the kernel holds, and fall back once the file is
// closed (the sends are cancelled and their buffers freed).
//
// Why growth and not memory.max with ENOMEM: a charge over memory.max
// first reclaims and may call the OOM killer on the test itself, and
// the transient copy of the user's bytes (charged too) would make a
// single write fail the same with or without the send buffer charged.
// Growth measures only what stays charged once write() returned; every
// user buffer is touched before the first reading, and the noise (the
// per-CPU charge stock, 64 pages a CPU) is far below kSends * kData / 2.
void MemcgCharge()
{
	constexpr const char *kRoot = "/sys/fs/cgroup";
	const std::string child = std::string(kRoot) + "/umad_abi_check";
	constexpr int kSends = 16;
	constexpr size_t kData = 1u << 20;
	const std::string name = "MemcgCharge: in-flight sends are charged to the writer's memory cgroup (ours only)";

	struct statfs sf{};
	if (statfs(kRoot, &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
		if (mount("cgroup2", kRoot, "cgroup2", 0, nullptr) != 0) {
			Report(name, false, std::string("cannot mount cgroup2 on /sys/fs/cgroup: ") +
						    std::strerror(errno));
			return;
		}
	}
	int e = WriteFile(std::string(kRoot) + "/cgroup.subtree_control", "+memory");
	if (e) {
		Report(name, false, "cannot enable the memory controller: " + std::string(std::strerror(e)));
		return;
	}
	if (mkdir(child.c_str(), 0755) != 0 && errno != EEXIST) {
		Report(name, false, "mkdir " + child + ": " + std::strerror(errno));
		return;
	}

	// The file, its agent and every user buffer of this case come before
	// the process joins the cgroup: only the sends are charged there.
	int fd = open(kUmad, O_RDWR | O_NONBLOCK);
	auto sa = Req2(1, kClassSa, 2, 0, 0, 1);
	if (fd < 0 || Register2(fd, &sa) != 0) {
		Report(name, false, std::string("open and register: ") + std::strerror(errno));
		if (fd >= 0)
			close(fd);
		rmdir(child.c_str());
		return;
	}
	Dest nowhere{.lid = 0x7c, .qpn = 1, .qkey = kGsiQkey, .timeout_ms = 60000};
	auto buf = Cat(Header(sa.id, nowhere), RmppSaMad(kMethodSet, 0, kData));
	const std::string pid = std::to_string(getpid());

	e = WriteFile(child + "/cgroup.procs", pid);
	if (e) {
		Report(name, false, "cannot join " + child + ": " + std::strerror(e));
		close(fd);
		rmdir(child.c_str());
		return;
	}
	long long before = CgroupNumber(child + "/memory.current");
	int sent = 0;
	std::string why;
	for (int i = 0; i < kSends; i++) {
		PutBe(buf, kHdr + 8, 0x9000 + i, 8);  // a TID of its own
		if (Write(fd, buf) != static_cast<ssize_t>(buf.size())) {
			why = "send " + std::to_string(i) + ": " + std::strerror(errno);
			break;
		}
		sent++;
	}
	long long after = CgroupNumber(child + "/memory.current");
	WriteFile(std::string(kRoot) + "/cgroup.procs", pid);  // back to the root

	// Closing cancels the sends; their buffers are uncharged from the child.
	close(fd);
	long long closed;
	auto t0 = std::chrono::steady_clock::now();
	for (;;) {
		closed = CgroupNumber(child + "/memory.current");
		if (after < 0 || closed < after - static_cast<long long>(sent * kData / 2) || Since(t0) > 5)
			break;
		usleep(100000);
	}
	rmdir(child.c_str());

	const long long held = static_cast<long long>(sent) * static_cast<long long>(kData);
	const std::string numbers = "memory.current " + std::to_string(before) + " before, " +
				    std::to_string(after) + " with " + std::to_string(sent) + " sends of " +
				    std::to_string(kData) + " bytes in flight, " + std::to_string(closed) +
				    " after close";
	std::printf("MemcgCharge: %s\n", numbers.c_str());
	if (!why.empty() || sent != kSends || before < 0 || after < 0) {
		Report(name, false, why.empty() ? numbers : why);
		return;
	}
	Report(name, after - before >= held / 2, numbers);
	Report("MemcgCharge: the charge goes when close() cancels the sends (ours only)",
	       after - closed >= held / 2, numbers);
}

// Ours only (Linux 6.1 copies the MAD, beyond its first 36 bytes, with
// file->mutex held): a writer stalled in a fault on its own buffer does not
// hold up other users of the file.
//
// Thread A writes a SubnGet whose header and first 64 MAD bytes lie at the
// end of an ordinary page and whose rest lies on the next page, registered
// with userfaultfd (missing mode) and not yet there: A's copy faults and
// waits. With A stalled, thread B does on the same file what takes
// file->mutex (a write from ordinary memory, REGISTER_AGENT2, a
// non-blocking read, poll); it must be done within kBound. Then the page
// is supplied (UFFDIO_COPY) and A's write must complete. If B is held up,
// supplying the page (or closing the userfaultfd) releases it, so a
// failure never hangs the program.
void StalledWriter()
{
	using namespace std::chrono_literals;
	constexpr auto kBound = 5s;  // generous for a slow (TCG) guest; held up is forever
	const std::string name = "StalledWriter: ";
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	constexpr size_t kFirst = 64;  // MAD bytes on the ordinary page

	int fd = open(kUmad, O_RDWR | O_NONBLOCK);
	auto smp = Req2(0);
	if (fd < 0 || Register2(fd, &smp) != 0) {
		Report(name + "open and register (ours only)", false, std::strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
	uffdio_api api{.api = UFFD_API, .features = 0, .ioctls = 0};
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0) {
		Report(name + "userfaultfd (ours only)", false, std::strerror(errno));
		if (uffd >= 0)
			close(uffd);
		close(fd);
		return;
	}
	void *map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		Report(name + "mmap (ours only)", false, std::strerror(errno));
		close(uffd);
		close(fd);
		return;
	}
	auto *region = static_cast<uint8_t *>(map);
	uffdio_register reg{};
	reg.range.start = reinterpret_cast<uintptr_t>(region + page);
	reg.range.len = page;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	int e = ioctl(uffd, UFFDIO_REGISTER, &reg) == 0 ? 0 : errno;
	Report(name + "the second page is registered with userfaultfd (ours only)", e == 0, std::strerror(e));

	// A's message: the header and kFirst MAD bytes end the first page.
	Dest nowhere{.lid = 0x7d, .timeout_ms = 1000};
	auto a_msg = Cat(Header(smp.id, nowhere), SubnGetNodeInfo(0xa000));
	uint8_t *a_buf = region + page - (kHdr + kFirst);
	std::memcpy(a_buf, a_msg.data(), kHdr + kFirst);
	std::vector<uint8_t> second(page);  // what UFFDIO_COPY puts on the page
	std::memcpy(second.data(), a_msg.data() + kHdr + kFirst, kMad - kFirst);

	std::atomic<bool> a_done{false};
	ssize_t a_ret = 0;
	int a_err = 0;
	std::thread a([&] {
		a_ret = write(fd, a_buf, kHdr + kMad);
		a_err = errno;
		a_done = true;
	});

	// A's fault arrives on the userfaultfd.
	pollfd p{uffd, POLLIN, 0};
	uffd_msg msg{};
	bool faulted = e == 0 && poll(&p, 1, 5000) == 1 && read(uffd, &msg, sizeof msg) == sizeof msg &&
		       msg.event == UFFD_EVENT_PAGEFAULT;
	Report(name + "A's write faults on the missing page (ours only)",
	       faulted && msg.arg.pagefault.address >= reg.range.start &&
		       msg.arg.pagefault.address < reg.range.start + page && !a_done,
	       faulted ? "fault at " + Hex(msg.arg.pagefault.address) : "no fault within 5 s");

	// B: what takes file->mutex, from ordinary memory.
	std::atomic<bool> b_done{false};
	ssize_t b_write = 0;
	int b_write_err = 0, b_reg = 0, b_read_err = 0, b_poll = 0;
	auto b_msg = Cat(Header(smp.id, nowhere), SubnGetNodeInfo(0xb000));
	std::vector<uint8_t> b_buf(kHdr + 2048);
	auto b_start = std::chrono::steady_clock::now();
	std::thread b([&] {
		b_write = Write(fd, b_msg);
		b_write_err = errno;
		auto extra = Req2(0);
		b_reg = Register2(fd, &extra);
		b_read_err = read(fd, b_buf.data(), b_buf.size()) < 0 ? errno : 0;
		pollfd bp{fd, POLLIN | POLLOUT, 0};
		b_poll = poll(&bp, 1, 0);
		b_done = true;
	});
	while (!b_done && std::chrono::steady_clock::now() - b_start < kBound)
		usleep(10000);
	double b_took = Since(b_start);
	bool b_in_time = b_done;
	bool a_still = !a_done;
	Report(name + "with A stalled, B's write, REGISTER_AGENT2, read and poll are done within 5 s (ours only)",
	       b_in_time, "B still blocked after " + std::to_string(b_took) + " s: A holds file->mutex");
	Report(name + "A is still stalled while B ran (ours only)", a_still, "A's write returned early");

	// Supply the page: A's copy goes on and its write completes.
	uffdio_copy cp{};
	cp.dst = reg.range.start;
	cp.src = reinterpret_cast<uintptr_t>(second.data());
	cp.len = page;
	cp.mode = 0;
	e = ioctl(uffd, UFFDIO_COPY, &cp) == 0 ? 0 : errno;
	Report(name + "UFFDIO_COPY supplies the page (ours only)", e == 0, std::strerror(e));
	if (e)
		close(uffd);  // wakes A: its fault is then served as an ordinary one
	auto t0 = std::chrono::steady_clock::now();
	while (!a_done && Since(t0) < 10)
		usleep(10000);
	bool a_finished = a_done;
	Report(name + "then A's write completes with the byte count (ours only)",
	       a_finished && a_ret == static_cast<ssize_t>(kHdr + kMad),
	       a_finished ? std::to_string(a_ret) + (a_ret < 0 ? std::string(" ") + std::strerror(a_err) : "")
			  : "still blocked 10 s after UFFDIO_COPY");
	if (!e)
		close(uffd);
	if (!a_finished) {
		// Not expected (closing the userfaultfd wakes a stalled fault):
		// A, and B behind it, may never return; stop here.
		std::printf("%d passed, %d failed\n", passed, failed);
		std::fflush(stdout);
		_exit(1);
	}
	a.join();
	b.join();
	Report(name + "B's operations succeeded (ours only)",
	       b_write == static_cast<ssize_t>(kHdr + kMad) && b_reg == 0 &&
		       (b_read_err == 0 || b_read_err == EAGAIN) && b_poll == 1,
	       "write " + std::to_string(b_write) + (b_write < 0 ? std::string(" ") + std::strerror(b_write_err) : "") +
		       ", register " + std::strerror(b_reg) + ", read " + std::strerror(b_read_err) + ", poll " +
		       std::to_string(b_poll));
	close(fd);
	munmap(map, 2 * page);
}

}  // namespace

int main(int argc, char **argv)
{
	Setting s;
	int a = 1;
	if (a < argc && std::string(argv[a]) == "--upstream") {
		s.upstream = true;
		a++;
	}
	if (argc - a != 2) {
		std::fprintf(stderr, "usage: %s [--upstream] <peer LID> <peer node GUID>\n", argv[0]);
		return 2;
	}
	s.peer_lid = static_cast<uint16_t>(std::strtoul(argv[a], nullptr, 0));
	s.peer_guid = std::strtoull(argv[a + 1], nullptr, 16);
	s.own_lid = static_cast<uint16_t>(SysfsNumber("lid"));
	s.sm_lid = static_cast<uint16_t>(SysfsNumber("sm_lid"));
	std::printf("own LID %u, SM LID %u, peer LID %u, peer GUID %s%s\n", s.own_lid, s.sm_lid, s.peer_lid,
		    Hex(s.peer_guid).c_str(), s.upstream ? " (upstream: ours-only cases left out)" : "");

	int fd = open(kUmad, O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		std::printf("FAIL open %s: %s\n0 passed, 1 failed\n", kUmad, std::strerror(errno));
		return 1;
	}
	auto [smp, sa] = Registration(fd, s);
	SmpRoundTrip(fd, smp, s);
	TimeoutsAndDuplicates(fd, smp);
	RmppAnswer(fd, sa, s);
	RmppDuplicateTid(fd, sa);

	// OpenSM holds issm0: a second, non-blocking open is refused.
	ExpectErrno("non-blocking open of issm0 held by OpenSM -> EAGAIN", EAGAIN, [] {
		int f = open(kIssm, O_RDWR | O_NONBLOCK);
		if (f >= 0)
			close(f);
		return f;
	});

	// Close while a send (3 s timeout) is still outstanding; the file and
	// its agents go, the send is cancelled (the guest's dmesg is checked
	// by the test around this program).
	Dest nowhere{.lid = 0x7a, .timeout_ms = 3000};
	ssize_t n = Write(fd, Cat(Header(smp, nowhere), SubnGetNodeInfo(0x8888)));
	Report("a send outstanding before close", n == static_cast<ssize_t>(kHdr + kMad),
	       n < 0 ? std::strerror(errno) : std::to_string(n));
	Report("close with the send outstanding", close(fd) == 0, std::strerror(errno));

	OldHeader(s);

	// Ours only: both need the debug guest kernel (memory cgroups,
	// userfaultfd), on which OursUmadAbi runs.
	if (!s.upstream) {
		StalledWriter();
		MemcgCharge();
	}

	std::printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
