// SPDX-License-Identifier: GPL-2.0
// The ib_uverbs ABI tester (issue 10): drives /dev/infiniband/uverbsN
// through write() (and the one ioctl() probe) directly.
//
//   abi_check [--device PATH] [--families a,b,...] [--stack ours|upstream]
//             [--list] [--mutate]
//   abi_check --fuzz N --seed S [--device PATH]
//
// Cases are a table (kCases below): a family (the command family it is
// about), a name, the steps it runs and the exact result wanted for each
// step ("ok" or an errno name, or a value such as "events=0"). Each case
// runs on a fresh open of the device and prints one line:
//
//   <family>/<name>: <result of step 1> <result of step 2> ...
//
// followed by "  [want ...]" when a result is not the one the table wants.
// The wanted results are what the Linux 6.1 stack answers: the VM test
// (tests/vm/ours_uverbs.test.cc) runs the tester on an upstream guest (every
// line must match the table there) and on a guest of ours, and compares the
// lines of the families ours implements. A case whose answer differs on
// purpose between the stacks is marked with a leading '~' and has one
// wanted list per stack (--stack says which); Documentation/uverbs.md lists
// those differences and why.
//
// --mutate checks the checker: every wanted result is replaced by one no
// kernel gives, so every case must report a mismatch (exit status = the
// number of cases that did NOT, which must be 0 for the check to pass).
//
// The fuzz mode sends N bounded random write() calls (see Fuzz()).
//
// Exit status: 0 when every case printed matched its table, 1 otherwise,
// 2 when the device cannot be opened, 3 when a call hung (alarm).
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mthca-abi.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ABI values the uapi headers leave to libibverbs (enum ibv_qp_attr_mask,
// ibv_qp_state, ibv_srq_attr_mask).
enum : uint32_t {
	IB_QP_STATE = 1,
	IB_QP_ACCESS_FLAGS = 8,
	IB_QP_PKEY_INDEX = 16,
	IB_QP_PORT = 32,
	IB_QPS_INIT = 1,
	IB_QPS_RTS = 3,
	IB_QPS_ERR = 6,
	IB_SRQ_MAX_WR = 1,
	IB_SRQ_LIMIT = 2,
};

std::string g_device = "/dev/infiniband/uverbs0";
bool g_ours = false;
const char *g_call = "";	// the call in flight, for the alarm's report
unsigned long long g_seed;
bool g_fuzzing;
long g_fuzz_call;
bool g_trace;  // --trace: each fuzz call and its result on stderr

void OnAlarm(int)
{
	char b[256];
	int n = g_fuzzing ? snprintf(b, sizeof b, "HUNG: %s of fuzz call %ld did not return within the alarm; seed %llu\n",
				     g_call, g_fuzz_call, g_seed)
			  : snprintf(b, sizeof b, "HUNG: %s did not return within the alarm\n", g_call);
	if (write(2, b, size_t(n)) < 0) {
		// nothing more to do
	}
	_exit(3);
}

// Arms the per-call alarm (seconds) around one system call.
struct Guard {
	explicit Guard(const char *what, unsigned secs = 10)
	{
		g_call = what;
		alarm(secs);
	}
	~Guard() { alarm(0); }
};

std::string ErrName(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "errno" + std::to_string(e);
}

// A failed setup step (the objects a case needs before its own steps):
// the case's line reports it, and it never matches a table.
struct SetupFailed {
	std::string what;
};

// Page-aligned anonymous memory, unmapped with the case.
struct Mapping {
	void *p = MAP_FAILED;
	size_t len = 0;
	Mapping(size_t n) : len(n) { p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }
	~Mapping()
	{
		if (p != MAP_FAILED)
			munmap(p, len);
	}
	Mapping(const Mapping &) = delete;
	uint64_t addr() const { return uint64_t(uintptr_t(p)); }
};

// An address that is never mapped: below vm.mmap_min_addr (64 KiB on
// Debian), where no mapping can be made.
uint64_t UnmappedAddr() { return 0x1000; }

// One write() of header + core request + driver udata. out_bytes is the
// response room given in the header. in_words < 0: computed from the
// length. Returns "ok" when write() returned the count, else the errno name.
std::string Send(int fd, uint32_t cmd, const void *core, size_t core_len, size_t out_bytes,
		 const void *udata = nullptr, size_t ulen = 0, int in_words = -1)
{
	std::vector<uint8_t> buf(sizeof(ib_uverbs_cmd_hdr) + core_len + ulen);
	ib_uverbs_cmd_hdr h{};
	h.command = cmd;
	h.in_words = in_words >= 0 ? uint16_t(in_words) : uint16_t(buf.size() / 4);
	h.out_words = uint16_t(out_bytes / 4);
	memcpy(buf.data(), &h, sizeof h);
	if (core_len)
		memcpy(buf.data() + sizeof h, core, core_len);
	if (ulen)
		memcpy(buf.data() + sizeof h + core_len, udata, ulen);
	Guard g("write");
	ssize_t r = write(fd, buf.data(), buf.size());
	if (r < 0)
		return ErrName(errno);
	return size_t(r) == buf.size() ? "ok" : "count=" + std::to_string(r);
}

// An extended command: header, ex header, request of req_len bytes.
std::string SendEx(int fd, uint32_t cmd, const void *req, size_t req_len, uint64_t response, size_t out_bytes,
		   uint32_t reserved = 0)
{
	std::vector<uint8_t> buf(sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_ex_cmd_hdr) + req_len);
	ib_uverbs_cmd_hdr h{};
	h.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd;
	h.in_words = uint16_t(req_len / 8);
	h.out_words = uint16_t(out_bytes / 8);
	ib_uverbs_ex_cmd_hdr x{};
	x.response = response;
	x.cmd_hdr_reserved = reserved;
	memcpy(buf.data(), &h, sizeof h);
	memcpy(buf.data() + sizeof h, &x, sizeof x);
	if (req_len)
		memcpy(buf.data() + sizeof h + sizeof x, req, req_len);
	Guard g("write (extended)");
	ssize_t r = write(fd, buf.data(), buf.size());
	if (r < 0)
		return ErrName(errno);
	return size_t(r) == buf.size() ? "ok" : "count=" + std::to_string(r);
}

// QUERY_DEVICE sent as command `cmd` (its id, with bits added at times)
// with the header's in_words (< 0: the right one).
std::string QueryDeviceAs(int fd, uint32_t cmd, int in_words = -1)
{
	ib_uverbs_query_device_resp resp;
	ib_uverbs_query_device c{uintptr_t(&resp)};
	return Send(fd, cmd, &c, sizeof c, sizeof resp, nullptr, 0, in_words);
}

// --- one open of the device and the objects on it ------------------------

struct Pd {
	uint32_t handle, pdn;
};
struct Mr {
	uint32_t handle, lkey, rkey;
};
struct Cq {
	uint32_t handle, cqe, cqn;
};
struct Qp {
	uint32_t handle, qpn;
};
struct Srq {
	uint32_t handle, srqn;
};

class Session {
public:
	Session()
	{
		Guard g("open");
		fd = open(g_device.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			throw SetupFailed{"open " + ErrName(errno)};
	}
	// A file received from elsewhere (closed with the session).
	explicit Session(int received) : fd(received) {}
	~Session() { Close(); }
	Session(const Session &) = delete;

	void Close()
	{
		for (int c : channels)
			close(c);
		channels.clear();
		if (async_fd >= 0)
			close(async_fd);
		async_fd = -1;
		if (fd >= 0) {
			Guard g("close");
			close(fd);
		}
		fd = -1;
	}

	// GET_CONTEXT with the core and mthca response: "ok" or the errno.
	std::string TryContext()
	{
		alignas(8) uint8_t resp[sizeof(ib_uverbs_get_context_resp) + sizeof(mthca_alloc_ucontext_resp)];
		memset(resp, 0xa5, sizeof resp);
		ib_uverbs_get_context c{};
		c.response = uintptr_t(resp);
		std::string r = Send(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, sizeof resp);
		if (r == "ok") {
			memcpy(&async_fd, resp, sizeof async_fd);
			memcpy(&ucontext, resp + sizeof(ib_uverbs_get_context_resp), sizeof ucontext);
		}
		return r;
	}
	Session &Context()
	{
		Need("GET_CONTEXT", TryContext());
		return *this;
	}

	std::string TryPd(Pd *out)
	{
		alignas(8) uint8_t resp[sizeof(ib_uverbs_alloc_pd_resp) + sizeof(mthca_alloc_pd_resp)] = {};
		ib_uverbs_alloc_pd c{};
		c.response = uintptr_t(resp);
		std::string r = Send(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, sizeof resp);
		if (r == "ok" && out) {
			memcpy(&out->handle, resp, 4);
			memcpy(&out->pdn, resp + sizeof(ib_uverbs_alloc_pd_resp), 4);
		}
		return r;
	}
	Pd AllocPd()
	{
		Pd pd{};
		Need("ALLOC_PD", TryPd(&pd));
		return pd;
	}

	std::string TryMr(uint32_t pd, uint64_t start, uint64_t len, uint64_t hca_va, uint32_t access, Mr *out,
			  bool udata = true)
	{
		ib_uverbs_reg_mr c{};
		alignas(8) uint8_t resp[sizeof(ib_uverbs_reg_mr_resp)] = {};
		c.response = uintptr_t(resp);
		c.start = start;
		c.length = len;
		c.hca_va = hca_va;
		c.pd_handle = pd;
		c.access_flags = access;
		mthca_reg_mr u{};
		std::string r = Send(fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof c, sizeof resp, udata ? &u : nullptr,
				     udata ? sizeof u : 0);
		if (r == "ok" && out)
			memcpy(out, resp, sizeof *out);
		return r;
	}
	// Registers a fresh buffer of len bytes (kept with the session).
	Mr RegMr(uint32_t pd, size_t len, uint64_t hca_va = ~0ULL,
		 uint32_t access = IB_UVERBS_ACCESS_LOCAL_WRITE)
	{
		Mapping &m = Buffer(len);
		Mr mr{};
		Need("REG_MR", TryMr(pd, m.addr(), len, hca_va == ~0ULL ? m.addr() : hca_va, access, &mr));
		return mr;
	}

	std::string TryChannel(int *out)
	{
		ib_uverbs_create_comp_channel c{};
		ib_uverbs_create_comp_channel_resp resp{};
		c.response = uintptr_t(&resp);
		std::string r = Send(fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &c, sizeof c, sizeof resp);
		if (r == "ok") {
			channels.push_back(int(resp.fd));
			if (out)
				*out = int(resp.fd);
		}
		return r;
	}

	// The mthca udata of a user CQ: its buffer registered at VA 0, the
	// context's PD number, two doorbell records on the session's page.
	mthca_create_cq CqUdata(uint32_t cqe, uint32_t pdn)
	{
		uint32_t nent = 1;
		while (nent <= cqe)
			nent <<= 1;
		Mr mr = RegMr(LibPd().handle, size_t(nent) * 32, 0);
		mthca_create_cq u{};
		u.lkey = mr.lkey;
		u.pdn = pdn;
		u.arm_db_page = u.set_db_page = DbPage();
		u.arm_db_index = NextDb();
		u.set_db_index = NextDb();
		return u;
	}
	std::string TryCq(uint32_t cqe, int channel, uint32_t vector, const void *udata, size_t ulen, Cq *out,
			  uint64_t response = 0, size_t out_bytes = 0)
	{
		ib_uverbs_create_cq c{};
		alignas(8) uint8_t resp[sizeof(ib_uverbs_create_cq_resp) + sizeof(mthca_create_cq_resp)] = {};
		c.response = response ? response : uintptr_t(resp);
		c.user_handle = 0x1234;
		c.cqe = cqe;
		c.comp_vector = vector;
		c.comp_channel = channel;
		std::string r = Send(fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof c, out_bytes ? out_bytes : sizeof resp,
				     udata, ulen);
		if (r == "ok" && out) {
			memcpy(out, resp, 8);
			memcpy(&out->cqn, resp + 8, 4);
		}
		return r;
	}
	Cq CreateCq(uint32_t cqe = 15, int channel = -1)
	{
		mthca_create_cq u = CqUdata(cqe, LibPd().pdn);
		Cq cq{};
		Need("CREATE_CQ", TryCq(cqe, channel, 0, &u, sizeof u, &cq));
		return cq;
	}

	// RESIZE_CQ with mthca's udata (or none: ulen 0); the reply's cqe
	// goes to *got as "cqe=N".
	std::string TryResize(uint32_t cq, uint32_t cqe, const mthca_resize_cq *u, size_t ulen,
			      std::string *got = nullptr)
	{
		ib_uverbs_resize_cq c{};
		ib_uverbs_resize_cq_resp resp{};
		resp.cqe = ~0U;
		c.response = uintptr_t(&resp);
		c.cq_handle = cq;
		c.cqe = cqe;
		std::string r = Send(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof c, sizeof resp, u, ulen);
		if (got)
			*got = "cqe=" + std::to_string(resp.cqe);
		return r;
	}
	// As libmthca resizes: a new ring for cqe entries registered at VA 0.
	mthca_resize_cq ResizeUdata(uint32_t cqe)
	{
		uint32_t nent = 1;
		while (nent <= cqe)
			nent <<= 1;
		mthca_resize_cq u{};
		u.lkey = RegMr(LibPd().handle, size_t(nent) * 32, 0).lkey;
		return u;
	}

	// The receive queue of a QP made with QpUdata(): its buffer and record.
	struct RecvQueue {
		uint8_t *buf = nullptr;
		uint32_t *record = nullptr;
	};
	mthca_create_qp QpUdata(RecvQueue *rq = nullptr)
	{
		Mr mr = RegMr(LibPd().handle, 64 * 1024, 0);
		uint8_t *buf = static_cast<uint8_t *>(buffers.back()->p);
		mthca_create_qp u{};
		u.lkey = mr.lkey;
		u.sq_db_page = u.rq_db_page = DbPage();
		u.sq_db_index = NextDb();
		u.rq_db_index = NextDb();
		if (rq) {
			rq->buf = buf;
			rq->record = reinterpret_cast<uint32_t *>(uintptr_t(u.rq_db_page + uint64_t(u.rq_db_index) * 8));
		}
		return u;
	}
	static ib_uverbs_create_qp QpCmd(uint32_t pd, uint32_t scq, uint32_t rcq, uint8_t type)
	{
		ib_uverbs_create_qp c{};
		c.user_handle = 0x5678;
		c.pd_handle = pd;
		c.send_cq_handle = scq;
		c.recv_cq_handle = rcq;
		c.max_send_wr = 16;
		c.max_recv_wr = 16;
		c.max_send_sge = 1;
		c.max_recv_sge = 1;
		c.sq_sig_all = 0;
		c.qp_type = type;
		return c;
	}
	std::string TryQp(ib_uverbs_create_qp c, const void *udata, size_t ulen, Qp *out)
	{
		ib_uverbs_create_qp_resp resp{};
		c.response = uintptr_t(&resp);
		std::string r = Send(fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof c, sizeof resp, udata, ulen);
		if (r == "ok" && out) {
			out->handle = resp.qp_handle;
			out->qpn = resp.qpn;
		}
		return r;
	}
	// An RC QP with cq for both queues and fresh udata.
	std::string TryRcQp(uint32_t pd, uint32_t cq, Qp *out)
	{
		mthca_create_qp u = QpUdata();
		return TryQp(QpCmd(pd, cq, cq, IB_UVERBS_QPT_RC), &u, sizeof u, out);
	}
	Qp CreateQp(uint32_t pd, uint32_t scq, uint32_t rcq, uint8_t type = IB_UVERBS_QPT_RC, int srq = -1)
	{
		ib_uverbs_create_qp c = QpCmd(pd, scq, rcq, type);
		if (srq >= 0) {
			c.is_srq = 1;
			c.srq_handle = uint32_t(srq);
			c.max_recv_wr = 0;
			c.max_recv_sge = 0;
		}
		mthca_create_qp u = QpUdata();
		Qp qp{};
		Need("CREATE_QP", TryQp(c, &u, sizeof u, &qp));
		return qp;
	}

	mthca_create_srq SrqUdata()
	{
		Mr mr = RegMr(LibPd().handle, 64 * 1024, 0);
		mthca_create_srq u{};
		u.lkey = mr.lkey;
		u.db_index = NextDb();
		u.db_page = DbPage();
		return u;
	}
	std::string TrySrq(uint32_t pd, uint32_t max_wr, const void *udata, size_t ulen, Srq *out)
	{
		ib_uverbs_create_srq c{};
		alignas(8) uint8_t resp[sizeof(ib_uverbs_create_srq_resp) + sizeof(mthca_create_srq_resp)] = {};
		c.response = uintptr_t(resp);
		c.user_handle = 0x9abc;
		c.pd_handle = pd;
		c.max_wr = max_wr;
		c.max_sge = 1;
		std::string r = Send(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof c, sizeof resp, udata, ulen);
		if (r == "ok" && out) {
			memcpy(&out->handle, resp, 4);
			memcpy(&out->srqn, resp + sizeof(ib_uverbs_create_srq_resp), 4);
		}
		return r;
	}
	Srq CreateSrq(uint32_t pd)
	{
		mthca_create_srq u = SrqUdata();
		Srq srq{};
		Need("CREATE_SRQ", TrySrq(pd, 16, &u, sizeof u, &srq));
		return srq;
	}

	// Destroys with a response: result, and the event counts in *events.
	std::string DestroyCq(uint32_t h, std::string *events = nullptr)
	{
		ib_uverbs_destroy_cq c{};
		ib_uverbs_destroy_cq_resp resp{~0U, ~0U};
		c.response = uintptr_t(&resp);
		c.cq_handle = h;
		std::string r = Send(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof c, sizeof resp);
		if (events)
			*events = "events=" + std::to_string(resp.comp_events_reported) + "," +
				  std::to_string(resp.async_events_reported);
		return r;
	}
	// DESTROY_QP and DESTROY_SRQ: the same request and response layouts.
	std::string DestroyCounted(uint32_t cmd, uint32_t h, std::string *events)
	{
		static_assert(sizeof(ib_uverbs_destroy_srq) == sizeof(ib_uverbs_destroy_qp) &&
			      sizeof(ib_uverbs_destroy_srq_resp) == sizeof(ib_uverbs_destroy_qp_resp));
		ib_uverbs_destroy_qp c{};
		ib_uverbs_destroy_qp_resp resp{~0U};
		c.response = uintptr_t(&resp);
		c.qp_handle = h;
		std::string r = Send(fd, cmd, &c, sizeof c, sizeof resp);
		if (events)
			*events = "events=" + std::to_string(resp.events_reported);
		return r;
	}
	std::string DestroyQp(uint32_t h, std::string *events = nullptr)
	{
		return DestroyCounted(IB_USER_VERBS_CMD_DESTROY_QP, h, events);
	}
	std::string DestroySrq(uint32_t h, std::string *events = nullptr)
	{
		return DestroyCounted(IB_USER_VERBS_CMD_DESTROY_SRQ, h, events);
	}
	std::string DeallocPd(uint32_t h)
	{
		ib_uverbs_dealloc_pd c{};
		c.pd_handle = h;
		return Send(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &c, sizeof c, 0);
	}
	std::string DeregMr(uint32_t h)
	{
		ib_uverbs_dereg_mr c{};
		c.mr_handle = h;
		return Send(fd, IB_USER_VERBS_CMD_DEREG_MR, &c, sizeof c, 0);
	}
	std::string QueryDevice(size_t out_bytes, uint64_t response)
	{
		ib_uverbs_query_device c{};
		c.response = response;
		return Send(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof c, out_bytes);
	}
	std::string QueryDevice()
	{
		ib_uverbs_query_device_resp resp;
		return QueryDevice(sizeof resp, uintptr_t(&resp));
	}
	std::string ModifyQp(uint32_t qp, uint32_t mask, uint8_t state, uint8_t port = 1)
	{
		ib_uverbs_modify_qp c{};
		c.qp_handle = qp;
		c.attr_mask = mask;
		c.qp_state = state;
		c.port_num = port;
		c.qkey = 0x11111111;
		return Send(fd, IB_USER_VERBS_CMD_MODIFY_QP, &c, sizeof c, 0);
	}
	std::string QueryQp(uint32_t qp, std::string *state = nullptr)
	{
		ib_uverbs_query_qp c{};
		ib_uverbs_query_qp_resp resp{};
		c.response = uintptr_t(&resp);
		c.qp_handle = qp;
		c.attr_mask = 0xffff;
		std::string r = Send(fd, IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof c, sizeof resp);
		if (state)
			*state = "state=" + std::to_string(resp.qp_state);
		return r;
	}
	std::string QuerySrq(uint32_t srq)
	{
		ib_uverbs_query_srq c{};
		ib_uverbs_query_srq_resp resp{};
		c.response = uintptr_t(&resp);
		c.srq_handle = srq;
		return Send(fd, IB_USER_VERBS_CMD_QUERY_SRQ, &c, sizeof c, sizeof resp);
	}
	std::string Mcast(bool attach, uint32_t qp, bool multicast = true)
	{
		ib_uverbs_attach_mcast c{};
		c.gid[0] = multicast ? 0xff : 0xfe;
		c.gid[1] = multicast ? 0x12 : 0x80;
		c.gid[15] = 1;
		c.qp_handle = qp;
		c.mlid = 0xc001;
		return Send(fd, attach ? IB_USER_VERBS_CMD_ATTACH_MCAST : IB_USER_VERBS_CMD_DETACH_MCAST, &c, sizeof c,
			    0);
	}

	// The PD libmthca keeps for its own buffers and CQs.
	Pd LibPd()
	{
		if (!lib_pd_set) {
			lib_pd = AllocPd();
			lib_pd_set = true;
		}
		return lib_pd;
	}
	Mapping &Buffer(size_t len)
	{
		buffers.push_back(std::make_unique<Mapping>((len + 4095) & ~size_t(4095)));
		if (buffers.back()->p == MAP_FAILED)
			throw SetupFailed{"mmap"};
		return *buffers.back();
	}
	uint64_t DbPage()
	{
		if (!db_page)
			db_page = Buffer(4096).addr();
		return db_page;
	}
	// Doorbell records from page 0 of the context's table (512 per page).
	uint32_t NextDb() { return next_db++; }

	static void Need(const char *what, const std::string &r)
	{
		if (r != "ok")
			throw SetupFailed{std::string(what) + " " + r};
	}

	int fd = -1;
	int async_fd = -1;
	mthca_alloc_ucontext_resp ucontext{};
	std::vector<int> channels;

private:
	std::vector<std::unique_ptr<Mapping>> buffers;
	uint64_t db_page = 0;
	uint32_t next_db = 0;
	Pd lib_pd{};
	bool lib_pd_set = false;
};

// The result of a read() of n bytes on fd.
std::string ReadResult(int fd, size_t n)
{
	alignas(8) uint8_t b[64];
	Guard g("read");
	ssize_t r = read(fd, b, n);
	if (r < 0)
		return ErrName(errno);
	return "read=" + std::to_string(r);
}

// Runs fn in a forked child and returns the line it wrote to a pipe.
std::string InChild(const std::function<std::string()> &fn)
{
	int p[2];
	if (pipe(p))
		throw SetupFailed{"pipe"};
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		throw SetupFailed{"fork"};
	if (pid == 0) {
		close(p[0]);
		std::string s;
		try {
			s = fn();
		} catch (const SetupFailed &f) {
			s = "setup:" + f.what;
		}
		if (write(p[1], s.data(), s.size()) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	std::string s;
	char b[256];
	ssize_t n;
	Guard g("child", 20);
	while ((n = read(p[0], b, sizeof b)) > 0)
		s.append(b, size_t(n));
	close(p[0]);
	waitpid(pid, nullptr, 0);
	return s;
}

// Passes fd over a unix socket (SCM_RIGHTS).
void SendFd(int sock, int fd)
{
	char byte = 0;
	iovec iov{&byte, 1};
	alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
	msghdr m{};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof ctl;
	cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) != 1)
		throw SetupFailed{"sendmsg " + ErrName(errno)};
}

// The fd SendFd() passed, or -1.
int RecvFd(int sock)
{
	char byte;
	iovec iov{&byte, 1};
	alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
	msghdr m{};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof ctl;
	Guard g("recvmsg");
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

// Drops capabilities from the effective set (CAP_IPC_LOCK lifts the
// memlock limit, CAP_SETUID is not needed after setresuid).
void DropEffectiveCaps()
{
	__user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct d[2]{};
	syscall(SYS_capset, &h, d);
}

// --- the cases -------------------------------------------------------------

using Steps = std::vector<std::string>;

struct Case {
	const char *family;
	const char *name;
	Steps want;	     // what 6.1 answers (and ours, unless want_ours is set)
	Steps want_ours;     // non-empty: ours differs on purpose (a '~' case)
	std::function<void(Steps &)> run;
};

constexpr uint32_t kHuge = 0xfffffff0;

const std::vector<Case> &Cases()
{
	static const std::vector<Case> cases = {
		// ---- framing: the header, before any context -------------
		{"framing", "ioctl probe", {"EINVAL"}, {"ENOTTY"},
		 [](Steps &s) {
			 Session a;
			 uint8_t hdr[24] = {};
			 Guard g("ioctl");
			 int r = ioctl(a.fd, _IOWR(0x1b, 1, uint8_t[24]), hdr);
			 s.push_back(r < 0 ? ErrName(errno) : "ok");
		 }},
		{"framing", "write of 4 bytes", {"EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 uint32_t w = 0;
			 s.push_back(write(a.fd, &w, sizeof w) < 0 ? ErrName(errno) : "ok");
		 }},
		{"framing", "NULL buffer", {"EFAULT"}, {},
		 [](Steps &s) {
			 Session a;
			 void *volatile null = nullptr;
			 s.push_back(write(a.fd, null, 16) < 0 ? ErrName(errno) : "ok");
		 }},
		{"framing", "in_words larger than the write", {"EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(QueryDeviceAs(a.fd, IB_USER_VERBS_CMD_QUERY_DEVICE, 10));
		 }},
		{"framing", "in_words smaller than the write", {"EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(QueryDeviceAs(a.fd, IB_USER_VERBS_CMD_QUERY_DEVICE, 3));
		 }},
		{"framing", "unknown command 200", {"EOPNOTSUPP"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(Send(a.fd, 200, nullptr, 0, 0));
		 }},
		{"framing", "command with bits above the mask", {"EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(QueryDeviceAs(a.fd, 0x100 | IB_USER_VERBS_CMD_QUERY_DEVICE));
		 }},
		{"framing", "unknown extended command", {"EOPNOTSUPP"}, {},
		 [](Steps &s) {
			 Session a;
			 uint64_t ex[3] = {};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_FLAG_EXTENDED | 0x7f, ex, sizeof ex, 0));
		 }},
		{"framing", "request shorter than the command", {"ENOSPC"}, {},
		 [](Steps &s) {
			 Session a;
			 uint32_t half = 0;  // ALLOC_PD wants 8 bytes
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_ALLOC_PD, &half, sizeof half, 4));
		 }},
		{"framing", "response room shorter than the response", {"ENOSPC"}, {},
		 [](Steps &s) {
			 Session a;
			 ib_uverbs_query_device_resp resp;
			 s.push_back(a.QueryDevice(sizeof resp - 8, uintptr_t(&resp)));
		 }},

		// ---- context: order, GET_CONTEXT itself ----------------------
		{"context", "commands before GET_CONTEXT",
		 {"EINVAL", "EINVAL", "EINVAL", "ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(a.QueryDevice());
			 ib_uverbs_query_port_resp pr;
			 ib_uverbs_query_port qp{};
			 qp.response = uintptr_t(&pr);
			 qp.port_num = 1;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_QUERY_PORT, &qp, sizeof qp, sizeof pr));
			 s.push_back(a.TryPd(nullptr));
			 s.push_back(a.DeallocPd(0));
			 uint64_t ex[2] = {};
			 ib_uverbs_ex_query_device_resp xr;
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, ex, sizeof ex, uintptr_t(&xr),
					    sizeof xr));
		 }},
		{"context", "GET_CONTEXT and its async fd", {"ok", "fd-open", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(a.TryContext());
			 s.push_back(a.async_fd > 2 && fcntl(a.async_fd, F_GETFD) >= 0 ? "fd-open" : "fd-closed");
			 s.push_back(a.QueryDevice());
		 }},
		{"context", "GET_CONTEXT twice", {"ok", "EINVAL", "fd-open", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 s.push_back(a.TryContext());
			 // Its own response buffer: the first context's fd stays known.
			 alignas(8) uint8_t resp[16];
			 ib_uverbs_get_context c{uintptr_t(resp)};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, sizeof resp));
			 s.push_back(fcntl(a.async_fd, F_GETFD) >= 0 ? "fd-open" : "fd-closed");
			 s.push_back(a.QueryDevice());
		 }},
		// 6.1 copies the response (a new async_fd number) to the user
		// before it finds the file already has a context, then fails:
		// the number names no open file. This is what upstream's EBADF on
		// the seed's async read came from (it reused the response buffer).
		{"context", "failed second GET_CONTEXT writes no response", {"EINVAL", "written"}, {"EINVAL", "untouched"},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 alignas(8) uint8_t resp[16];
			 memset(resp, 0xa5, sizeof resp);
			 ib_uverbs_get_context c{uintptr_t(resp)};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, sizeof resp));
			 s.push_back(resp[0] == 0xa5 && resp[3] == 0xa5 ? "untouched" : "written");
		 }},
		{"context", "GET_CONTEXT with NULL response, then again", {"EFAULT", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 ib_uverbs_get_context c{0};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, 16));
			 s.push_back(a.TryContext());
		 }},
		{"context", "GET_CONTEXT without room for mthca's response", {"EFAULT", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 ib_uverbs_get_context_resp resp;
			 ib_uverbs_get_context c{uintptr_t(&resp)};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, sizeof resp));
			 s.push_back(a.TryContext());
		 }},
		{"context", "GET_CONTEXT with short response room", {"ENOSPC"}, {},
		 [](Steps &s) {
			 Session a;
			 uint8_t resp[8];
			 ib_uverbs_get_context c{uintptr_t(resp)};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof c, 4));
		 }},

		// ---- device: QUERY_DEVICE, EX_QUERY_DEVICE, QUERY_PORT -------
		{"device", "QUERY_DEVICE room", {"ENOSPC", "ok", "zeroed", "EFAULT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 alignas(8) uint8_t resp[sizeof(ib_uverbs_query_device_resp) + 16];
			 s.push_back(a.QueryDevice(sizeof(ib_uverbs_query_device_resp) - 8, uintptr_t(resp)));
			 memset(resp, 0xa5, sizeof resp);
			 s.push_back(a.QueryDevice(sizeof resp, uintptr_t(resp)));
			 bool zero = true;
			 for (size_t i = sizeof(ib_uverbs_query_device_resp); i < sizeof resp; i++)
				 zero = zero && resp[i] == 0;
			 s.push_back(zero ? "zeroed" : "not-zeroed");
			 s.push_back(a.QueryDevice(sizeof(ib_uverbs_query_device_resp), 0));
		 }},
		{"device", "QUERY_DEVICE request tail", {"ok", "EOPNOTSUPP"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 ib_uverbs_query_device_resp resp;
			 uint64_t req[2] = {uintptr_t(&resp), 0};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_QUERY_DEVICE, req, sizeof req, sizeof resp));
			 req[1] = 1;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_QUERY_DEVICE, req, sizeof req, sizeof resp));
		 }},
		{"device", "EX_QUERY_DEVICE", {"ok", "EINVAL", "EINVAL", "ok", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 ib_uverbs_ex_query_device_resp resp;
			 ib_uverbs_ex_query_device c{};
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c, uintptr_t(&resp),
					    sizeof resp));
			 c.comp_mask = 1;
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c, uintptr_t(&resp),
					    sizeof resp));
			 c.comp_mask = 0;
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c, uintptr_t(&resp),
					    sizeof resp, 1));
			 // 8 bytes hold comp_mask and response_length: enough for 6.1.
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c, uintptr_t(&resp), 8));
			 s.push_back(SendEx(a.fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c, 0, sizeof resp));
		 }},
		{"device", "QUERY_PORT", {"ok", "EINVAL", "EINVAL", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 ib_uverbs_query_port_resp resp;
			 ib_uverbs_query_port c{};
			 c.response = uintptr_t(&resp);
			 for (uint8_t port : {1, 0, 2}) {
				 c.port_num = port;
				 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof c, sizeof resp));
			 }
			 c.port_num = 1;
			 c.reserved[0] = 1;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof c, sizeof resp));
		 }},

		// ---- pd ----------------------------------------------------------
		{"pd", "ALLOC_PD, DEALLOC_PD, twice", {"ok", "ok", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd{};
			 s.push_back(a.TryPd(&pd));
			 s.push_back(a.DeallocPd(pd.handle));
			 s.push_back(a.DeallocPd(pd.handle));
		 }},
		{"pd", "DEALLOC_PD of bad handles", {"ENOENT", "ENOENT", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 s.push_back(a.DeallocPd(0));
			 a.AllocPd();
			 s.push_back(a.DeallocPd(12345));
			 s.push_back(a.DeallocPd(kHuge));
		 }},
		{"pd", "DEALLOC_PD of another file's handle", {"ENOENT", "ok"}, {},
		 [](Steps &s) {
			 Session a, b;
			 a.Context();
			 b.Context();
			 a.AllocPd();
			 Pd p1 = a.AllocPd();
			 s.push_back(b.DeallocPd(p1.handle));
			 s.push_back(a.DeallocPd(p1.handle));
		 }},
		{"pd", "ALLOC_PD response room", {"ENOSPC", "EFAULT", "EFAULT", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 alignas(8) uint8_t resp[16];
			 ib_uverbs_alloc_pd c{uintptr_t(resp)};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, 0));
			 // Room for the core response only: mthca's pdn has none.
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, 4));
			 c.response = 0;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, 8));
			 // None of the failed ones left a PD behind: handle 0 is free.
			 Pd pd{};
			 std::string r = a.TryPd(&pd);
			 s.push_back(r == "ok" ? (pd.handle == 0 ? "ok" : "handle=" + std::to_string(pd.handle)) : r);
		 }},
		{"pd", "ALLOC_PD with a driver request", {"ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 alignas(8) uint8_t resp[16];
			 uint64_t req[2] = {uintptr_t(resp), 0xffff};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_ALLOC_PD, req, sizeof req, sizeof resp));
		 }},
		{"pd", "use after close", {"ok", "ENOENT", "ok"}, {},
		 [](Steps &s) {
			 Pd pd{};
			 {
				 Session a;
				 a.Context();
				 pd = a.AllocPd();
				 a.AllocPd();
				 s.push_back("ok");
			 }
			 Session b;
			 b.Context();
			 s.push_back(b.DeallocPd(pd.handle + 1));
			 s.push_back(b.TryPd(nullptr));
		 }},
		{"pd", "close with live PDs, reopen", {"ok", "ok", "ok"}, {},
		 [](Steps &s) {
			 for (int round = 0; round < 2; round++) {
				 Session a;
				 a.Context();
				 for (int i = 0; i < 64; i++)
					 a.AllocPd();
			 }
			 s.push_back("ok");
			 Session b;
			 s.push_back(b.TryContext());
			 s.push_back(b.TryPd(nullptr));
		 }},

		// ---- async: the event fd of GET_CONTEXT --------------------------
		{"async", "reads", {"EAGAIN", "EAGAIN", "nothing", "EBADF"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 fcntl(a.async_fd, F_SETFL, O_NONBLOCK);
			 // An empty queue answers EAGAIN before it looks at the size.
			 s.push_back(ReadResult(a.async_fd, 8));
			 s.push_back(ReadResult(a.async_fd, sizeof(ib_uverbs_async_event_desc)));
			 pollfd p{a.async_fd, POLLIN, 0};
			 s.push_back(poll(&p, 1, 0) == 0 ? "nothing" : "revents=" + std::to_string(p.revents));
			 uint64_t w = 0;
			 s.push_back(write(a.async_fd, &w, sizeof w) < 0 ? ErrName(errno) : "ok");
		 }},
		{"async", "async fd outlives its file", {"EAGAIN"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 int afd = a.async_fd;
			 a.async_fd = -1;
			 a.Close();
			 fcntl(afd, F_SETFL, O_NONBLOCK);
			 s.push_back(ReadResult(afd, sizeof(ib_uverbs_async_event_desc)));
			 close(afd);
		 }},

		// ---- fork and credentials ----------------------------------------
		{"fork", "the child writes on the parent's file", {"EACCES", "ok", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 s.push_back(InChild([&] { return a.QueryDevice(); }));
			 s.push_back(InChild([&] {
				 Session c;
				 c.Context();
				 return c.TryPd(nullptr);
			 }));
			 s.push_back(a.QueryDevice());
		 }},
		{"fork", "a file written after setresuid", {"EACCES", "ok"}, {},
		 [](Steps &s) {
			 s.push_back(InChild([] {
				 Session a;
				 a.Context();
				 if (setresuid(65534, 65534, 65534))
					 return std::string("setresuid failed");
				 return a.QueryDevice();
			 }));
			 s.push_back(InChild([] {
				 if (setresuid(65534, 65534, 65534))
					 return std::string("setresuid failed");
				 Session a;
				 a.Context();
				 return a.TryPd(nullptr);
			 }));
		 }},

		// The file (root's, with a context and a PD) reaches a process of
		// another uid over a unix socket (SCM_RIGHTS): every write() on it
		// there is EACCES (the CVE-2016-4565 check), and the owner's file
		// still works.
		{"fork", "a file passed to another uid over a unix socket", {"EACCES EACCES", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 int sp[2];
			 if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
				 throw SetupFailed{"socketpair"};
			 SendFd(sp[0], a.fd);
			 close(sp[0]);
			 s.push_back(InChild([&] {
				 if (setresuid(65534, 65534, 65534))
					 return std::string("setresuid failed");
				 int fd = RecvFd(sp[1]);
				 if (fd < 0)
					 return std::string("no fd");
				 Session b(fd);
				 // one step: QUERY_DEVICE, then DEALLOC_PD of root's PD
				 std::string r = b.QueryDevice();
				 return r + " " + b.DeallocPd(pd.handle);
			 }));
			 close(sp[1]);
			 s.push_back(a.DeallocPd(pd.handle));
		 }},

		// ---- mr ----------------------------------------------------------
		{"mr", "REG_MR, DEREG_MR, twice", {"ok", "ok", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Mapping &m = a.Buffer(8192);
			 Mr mr{};
			 s.push_back(a.TryMr(pd.handle, m.addr(), 8192, m.addr(), IB_UVERBS_ACCESS_LOCAL_WRITE, &mr));
			 s.push_back(a.DeregMr(mr.handle));
			 s.push_back(a.DeregMr(mr.handle));
		 }},
		{"mr", "REG_MR bad PD handles", {"ENOENT", "ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Mapping &m = a.Buffer(4096);
			 s.push_back(a.TryMr(0, m.addr(), 4096, m.addr(), 0, nullptr));
			 Pd pd = a.AllocPd();
			 s.push_back(a.TryMr(kHuge, m.addr(), 4096, m.addr(), 0, nullptr));
			 Mr mr = a.RegMr(pd.handle, 4096);
			 s.push_back(a.TryMr(mr.handle, m.addr(), 4096, m.addr(), 0, nullptr));  // an MR, not a PD
		 }},
		{"mr", "REG_MR bad ranges and flags", {"EFAULT", "EINVAL", "EINVAL", "ok", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Mapping &m = a.Buffer(8192);
			 s.push_back(a.TryMr(pd.handle, UnmappedAddr(), 4096, UnmappedAddr(), 0, nullptr));
			 // start and hca_va must agree within the page.
			 s.push_back(a.TryMr(pd.handle, m.addr() + 8, 64, m.addr(), 0, nullptr));
			 // Remote write without local write.
			 s.push_back(a.TryMr(pd.handle, m.addr(), 4096, m.addr(), IB_UVERBS_ACCESS_REMOTE_WRITE, nullptr));
			 // hca_va 0 (libmthca's queue buffers), and without mthca's udata.
			 s.push_back(a.TryMr(pd.handle, m.addr(), 4096, 0, IB_UVERBS_ACCESS_LOCAL_WRITE, nullptr));
			 s.push_back(a.TryMr(pd.handle, m.addr(), 4096, m.addr(), 0, nullptr, false));
		 }},
		{"mr", "DEREG_MR of bad handles", {"ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 s.push_back(a.DeregMr(kHuge));
			 s.push_back(a.DeregMr(pd.handle));  // a PD, not an MR
		 }},
		{"mr", "DEALLOC_PD of a PD with an MR", {"EBUSY", "ok", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Mr mr = a.RegMr(pd.handle, 4096);
			 s.push_back(a.DeallocPd(pd.handle));
			 s.push_back(a.DeregMr(mr.handle));
			 s.push_back(a.DeallocPd(pd.handle));
		 }},
		{"mr", "REG_MR over RLIMIT_MEMLOCK", {"ENOMEM", "ok"}, {},
		 [](Steps &s) {
			 s.push_back(InChild([] {
				 DropEffectiveCaps();
				 rlimit l{64 * 1024, 64 * 1024};
				 setrlimit(RLIMIT_MEMLOCK, &l);
				 Session a;
				 a.Context();
				 Pd pd = a.AllocPd();
				 Mapping &m = a.Buffer(1 << 20);
				 return a.TryMr(pd.handle, m.addr(), 1 << 20, m.addr(), 0, nullptr);
			 }));
			 s.push_back(InChild([] {
				 DropEffectiveCaps();
				 rlimit l{64 * 1024, 64 * 1024};
				 setrlimit(RLIMIT_MEMLOCK, &l);
				 Session a;
				 a.Context();
				 Pd pd = a.AllocPd();
				 Mapping &m = a.Buffer(16384);
				 return a.TryMr(pd.handle, m.addr(), 16384, m.addr(), 0, nullptr);
			 }));
		 }},
		{"mr", "close with live MRs, reopen", {"ok", "ok"}, {},
		 [](Steps &s) {
			 {
				 Session a;
				 a.Context();
				 Pd pd = a.AllocPd();
				 for (int i = 0; i < 16; i++)
					 a.RegMr(pd.handle, 65536);
			 }
			 Session b;
			 b.Context();
			 Pd pd = b.AllocPd();
			 Mapping &m = b.Buffer(65536);
			 s.push_back(b.TryMr(pd.handle, m.addr(), 65536, m.addr(), 0, nullptr));
			 s.push_back(b.QueryDevice());
		 }},

		// ---- cq: completion channels and CQs ------------------------------
		{"cq", "CREATE_COMP_CHANNEL", {"ok", "EAGAIN", "EAGAIN"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 int ch = -1;
			 s.push_back(a.TryChannel(&ch));
			 fcntl(ch, F_SETFL, O_NONBLOCK);
			 s.push_back(ReadResult(ch, sizeof(ib_uverbs_comp_event_desc)));
			 s.push_back(ReadResult(ch, 4));
		 }},
		{"cq", "CREATE_CQ, DESTROY_CQ, twice", {"ok", "ok", "events=0,0", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
			 Cq cq{};
			 s.push_back(a.TryCq(15, -1, 0, &u, sizeof u, &cq));
			 std::string ev;
			 s.push_back(a.DestroyCq(cq.handle, &ev));
			 s.push_back(ev);
			 s.push_back(a.DestroyCq(cq.handle));
		 }},
		{"cq", "CREATE_CQ with a completion channel", {"ok", "ok", "EBADF", "EBADF"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 int ch = -1;
			 s.push_back(a.TryChannel(&ch));
			 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, ch, 0, &u, sizeof u, nullptr));
			 u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, a.async_fd, 0, &u, sizeof u, nullptr));  // not a channel
			 u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, 1000, 0, &u, sizeof u, nullptr));  // no such fd
		 }},
		{"cq", "CREATE_CQ bad sizes and vector", {"EINVAL", "EINVAL", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 for (uint32_t cqe : {0U, 1U << 30}) {
				 mthca_create_cq u = a.CqUdata(1, a.LibPd().pdn);
				 s.push_back(a.TryCq(cqe, -1, 0, &u, sizeof u, nullptr));
			 }
			 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, -1, 1000, &u, sizeof u, nullptr));
		 }},
		{"cq", "CREATE_CQ bad doorbell pages", {"EINVAL", "EFAULT", "EINVAL", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
			 mthca_create_cq bad = u;
			 bad.set_db_page += 8;  // not 4 KiB aligned
			 s.push_back(a.TryCq(15, -1, 0, &bad, sizeof bad, nullptr));
			 bad = u;
			 bad.set_db_index = 511 * 64;  // the last page, unmapped
			 bad.set_db_page = UnmappedAddr();
			 s.push_back(a.TryCq(15, -1, 0, &bad, sizeof bad, nullptr));
			 bad = u;
			 bad.set_db_index = 1U << 20;  // past the table
			 s.push_back(a.TryCq(15, -1, 0, &bad, sizeof bad, nullptr));
			 s.push_back(a.TryCq(15, -1, 0, &u, sizeof u, nullptr));
		 }},
		// 6.1 reads mthca's request past what the user gave (EFAULT when
		// there is none); ours refuses to read past it (EINVAL).
		{"cq", "CREATE_CQ without mthca's request", {"EFAULT"}, {"EINVAL"},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 s.push_back(a.TryCq(15, -1, 0, nullptr, 0, nullptr));
		 }},
		{"cq", "CREATE_CQ response room", {"EFAULT", "ENOSPC", "EFAULT"}, {},
		 [](Steps &s) {
			 alignas(8) uint8_t resp[16];
			 for (auto [ptr, room] : {std::pair{UnmappedAddr(), 16}, std::pair{uint64_t(uintptr_t(resp)), 4},
						  std::pair{uint64_t(uintptr_t(resp)), 8}}) {
				 Session a;  // each on a context of its own (see the next case)
				 a.Context();
				 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
				 s.push_back(a.TryCq(15, -1, 0, &u, sizeof u, nullptr, ptr, size_t(room)));
			 }
		 }},
		// 6.1 leaves a doorbell page mapped when its last record goes, then
		// maps it again over itself, which the emulator refuses (EINVAL);
		// ours unmaps it with its last record (Documentation/uverbs.md).
		{"cq", "CREATE_CQ after one that failed late", {"EFAULT", "EINVAL"}, {"EFAULT", "ok"},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 mthca_create_cq u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, -1, 0, &u, sizeof u, nullptr, UnmappedAddr(), 16));
			 u = a.CqUdata(15, a.LibPd().pdn);
			 s.push_back(a.TryCq(15, -1, 0, &u, sizeof u, nullptr));
		 }},
		{"cq", "DESTROY_CQ of bad handles", {"ENOENT", "EINVAL", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 s.push_back(a.DestroyCq(kHuge));
			 s.push_back(a.DestroyCq(pd.handle));
			 Session b;
			 b.Context();
			 Cq cq = b.CreateCq();
			 s.push_back(a.DestroyCq(cq.handle + 1));
		 }},
		// rdma-core 18 and 19 sent DESTROY_CQ as a 16-byte write; 6.1
		// takes it as the full 24.
		{"cq", "DESTROY_CQ of 16 bytes", {"ok", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Cq cq = a.CreateCq();
			 ib_uverbs_destroy_cq_resp resp{};
			 ib_uverbs_destroy_cq c{uintptr_t(&resp), cq.handle, 0};
			 // The header says 16 bytes; the request's 24 follow it in memory.
			 std::vector<uint8_t> buf(8 + sizeof c);
			 ib_uverbs_cmd_hdr h{IB_USER_VERBS_CMD_DESTROY_CQ, 4, uint16_t(sizeof resp / 4)};
			 memcpy(buf.data(), &h, 8);
			 memcpy(buf.data() + 8, &c, sizeof c);
			 ssize_t r = write(a.fd, buf.data(), 16);
			 s.push_back(r == 16 ? "ok" : r < 0 ? ErrName(errno) : "count=" + std::to_string(r));
			 s.push_back(a.DestroyCq(cq.handle));
		 }},
		{"cq", "DESTROY_CQ with a bad response pointer", {"EFAULT", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Cq cq = a.CreateCq();
			 ib_uverbs_destroy_cq c{UnmappedAddr(), cq.handle, 0};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof c, 8));
			 s.push_back(a.DestroyCq(cq.handle));  // it was destroyed all the same
		 }},
		{"cq", "RESIZE_CQ", {"ok", "ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Cq cq = a.CreateCq(15);
			 Pd pd = a.AllocPd();
			 ib_uverbs_resize_cq c{};
			 ib_uverbs_resize_cq_resp resp{};
			 c.response = uintptr_t(&resp);
			 c.cq_handle = cq.handle;
			 c.cqe = 15;  // the size it has: nothing to do
			 mthca_resize_cq u{};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof c, sizeof resp, &u, sizeof u));
			 c.cq_handle = kHuge;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof c, sizeof resp, &u, sizeof u));
			 c.cq_handle = pd.handle;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof c, sizeof resp, &u, sizeof u));
		 }},
		// libmthca's ibv_resize_cq: a new ring registered at VA 0, named
		// by lkey; the reply has the entries the CQ now has.
		{"cq", "RESIZE_CQ grow and shrink",
		 {"ok", "cqe=127", "ok", "cqe=3", "EINVAL", "EINVAL", "cqe=4294967295", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Cq cq = a.CreateCq(15);
			 std::string got;
			 mthca_resize_cq u = a.ResizeUdata(100);
			 s.push_back(a.TryResize(cq.handle, 100, &u, sizeof u, &got));
			 s.push_back(got);
			 u = a.ResizeUdata(3);
			 s.push_back(a.TryResize(cq.handle, 3, &u, sizeof u, &got));
			 s.push_back(got);
			 s.push_back(a.TryResize(cq.handle, 0, &u, sizeof u));
			 // past INT_MAX, and past the device's max_cqe: nothing written
			 s.push_back(a.TryResize(cq.handle, 0x80000000, &u, sizeof u));
			 s.push_back(a.TryResize(cq.handle, 1 << 24, &u, sizeof u, &got) == "EINVAL" ? got : "resized");
			 s.push_back(a.DestroyCq(cq.handle));
		 }},
		// 6.1's mthca fails a user CQ's resize with EFAULT when its
		// request cannot be read (none given: a NULL udata pointer); a
		// size the CQ has already returns before the request is read.
		{"cq", "RESIZE_CQ without mthca's request", {"EFAULT", "ok", "ENOSPC"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Cq cq = a.CreateCq(15);
			 s.push_back(a.TryResize(cq.handle, 100, nullptr, 0));
			 s.push_back(a.TryResize(cq.handle, 15, nullptr, 0));
			 ib_uverbs_resize_cq c{};
			 ib_uverbs_resize_cq_resp resp{};
			 c.response = uintptr_t(&resp);
			 c.cq_handle = cq.handle;
			 c.cqe = 100;
			 mthca_resize_cq u = a.ResizeUdata(100);
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof c, 4, &u, sizeof u));
		 }},
		// CQEs outstanding: 12 receives flushed into a CQ of 15 by moving
		// their QP to ERR (the WQEs laid out as libmthca's post_recv does
		// on a mem-free HCA, the record counts them). A ring of 8 cannot
		// hold them: the firmware refuses (ENOMEM); one of 32 can.
		{"cq", "RESIZE_CQ below the CQEs outstanding", {"ok", "ok", "ENOMEM", "cqe=4294967295", "ok", "cqe=31"},
		 {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq(15);
			 Session::RecvQueue rq;
			 mthca_create_qp qu = a.QpUdata(&rq);
			 Qp qp{};
			 Session::Need("CREATE_QP",
				       a.TryQp(Session::QpCmd(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_RC), &qu,
					       sizeof qu, &qp));
			 s.push_back(a.ModifyQp(qp.handle, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
							   IB_QP_ACCESS_FLAGS,
						IB_QPS_INIT));
			 // 16 receive WQEs of 64 bytes (next segment, one scatter
			 // entry with the invalid lkey 0x100), 12 of them posted.
			 const uint32_t posted = 12;
			 for (uint32_t i = 0; i < 16; i++) {
				 uint32_t *w = reinterpret_cast<uint32_t *>(rq.buf + i * 64);
				 w[0] = htobe32(((i + 1) & 15) << 6);
				 w[1] = htobe32(2);
				 w[5] = htobe32(0x100);
			 }
			 rq.record[1] = htobe32(qp.qpn << 8 | 4 << 5);
			 rq.record[0] = htobe32(posted);
			 s.push_back(a.ModifyQp(qp.handle, IB_QP_STATE, IB_QPS_ERR));
			 std::string got;
			 mthca_resize_cq u = a.ResizeUdata(7);
			 s.push_back(a.TryResize(cq.handle, 7, &u, sizeof u, &got));
			 s.push_back(got);
			 u = a.ResizeUdata(31);
			 s.push_back(a.TryResize(cq.handle, 31, &u, sizeof u, &got));
			 s.push_back(got);
		 }},
		// libmthca arms CQs in user space and never sends REQ_NOTIFY_CQ;
		// 6.1 answers it EOPNOTSUPP on mthca, whatever the handle.
		{"cq", "REQ_NOTIFY_CQ", {"EOPNOTSUPP", "EOPNOTSUPP"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 ib_uverbs_req_notify_cq c{kHuge, 0};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof c, 0));
			 Cq cq = a.CreateCq();
			 c.cq_handle = cq.handle;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &c, sizeof c, 0));
		 }},
		{"cq", "close with live CQs and a channel, reopen", {"ok", "ok"}, {},
		 [](Steps &s) {
			 int keep = -1;
			 {
				 Session a;
				 a.Context();
				 int ch = -1;
				 a.TryChannel(&ch);
				 keep = dup(ch);	 // the channel fd outlives the file
				 for (int i = 0; i < 4; i++)
					 a.CreateCq(15, ch);
				 a.CreateCq();
			 }
			 close(keep);
			 Session b;
			 b.Context();
			 Cq cq{};
			 mthca_create_cq u = b.CqUdata(15, b.LibPd().pdn);
			 s.push_back(b.TryCq(15, -1, 0, &u, sizeof u, &cq));
			 s.push_back(b.DestroyCq(cq.handle));
		 }},

		// ---- qp -----------------------------------------------------------
		{"qp", "CREATE_QP, QUERY, MODIFY, DESTROY, twice",
		 {"ok", "ok", "state=0", "ok", "ok", "state=1", "ok", "events=0", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 Qp qp{};
			 s.push_back(a.TryRcQp(pd.handle, cq.handle, &qp));
			 std::string st;
			 s.push_back(a.QueryQp(qp.handle, &st));
			 s.push_back(st);
			 ib_uverbs_modify_qp m{};
			 m.qp_handle = qp.handle;
			 m.attr_mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
			 m.qp_state = IB_QPS_INIT;
			 m.port_num = 1;
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_MODIFY_QP, &m, sizeof m, 0));
			 s.push_back(a.QueryQp(qp.handle, &st));
			 s.push_back(st);
			 std::string ev;
			 s.push_back(a.DestroyQp(qp.handle, &ev));
			 s.push_back(ev);
			 s.push_back(a.DestroyQp(qp.handle));
		 }},
		{"qp", "CREATE_QP bad handles", {"ENOENT", "ENOENT", "ENOENT", "EINVAL", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 mthca_create_qp u = a.QpUdata();
			 auto qp = [&](uint32_t p, uint32_t sc, uint32_t rc) {
				 return a.TryQp(Session::QpCmd(p, sc, rc, IB_UVERBS_QPT_RC), &u, sizeof u, nullptr);
			 };
			 s.push_back(qp(kHuge, cq.handle, cq.handle));
			 s.push_back(qp(pd.handle, kHuge, cq.handle));
			 s.push_back(qp(pd.handle, cq.handle, kHuge));
			 s.push_back(qp(cq.handle, cq.handle, cq.handle));  // a CQ as the PD
			 s.push_back(qp(pd.handle, pd.handle, pd.handle));  // a PD as the CQs
		 }},
		{"qp", "CREATE_QP bad types and sizes", {"EINVAL", "EINVAL", "EINVAL", "EINVAL", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 auto qp = [&](ib_uverbs_create_qp c) {
				 mthca_create_qp u = a.QpUdata();
				 return a.TryQp(c, &u, sizeof u, nullptr);
			 };
			 ib_uverbs_create_qp c = Session::QpCmd(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_RC);
			 c.qp_type = 0;	 // SMI
			 s.push_back(qp(c));
			 c.qp_type = 1;	 // GSI
			 s.push_back(qp(c));
			 c.qp_type = IB_UVERBS_QPT_RC;
			 c.max_send_wr = 1U << 30;
			 s.push_back(qp(c));
			 c.max_send_wr = 16;
			 c.max_recv_sge = 1000;
			 s.push_back(qp(c));
			 c.max_recv_sge = 1;
			 c.qp_type = IB_UVERBS_QPT_UD;
			 s.push_back(qp(c));
		 }},
		{"qp", "CREATE_QP without mthca's request", {"EFAULT"}, {"EINVAL"},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 s.push_back(a.TryQp(Session::QpCmd(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_RC), nullptr,
					     0, nullptr));
		 }},
		{"qp", "MODIFY_QP and QUERY_QP of bad handles and states", {"ENOENT", "ENOENT", "EINVAL", "EINVAL"},
		 {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 Qp qp = a.CreateQp(pd.handle, cq.handle, cq.handle);
			 s.push_back(a.ModifyQp(kHuge, IB_QP_STATE, IB_QPS_INIT));
			 s.push_back(a.QueryQp(kHuge));
			 s.push_back(a.QueryQp(pd.handle));
			 s.push_back(a.ModifyQp(qp.handle, IB_QP_STATE, IB_QPS_RTS));  // RESET -> RTS
		 }},
		{"qp", "destroy what a QP uses", {"EBUSY", "EBUSY", "ok", "ok", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 Qp qp = a.CreateQp(pd.handle, cq.handle, cq.handle);
			 s.push_back(a.DestroyCq(cq.handle));
			 s.push_back(a.DeallocPd(pd.handle));
			 s.push_back(a.DestroyQp(qp.handle));
			 s.push_back(a.DestroyCq(cq.handle));
			 s.push_back(a.DeallocPd(pd.handle));
		 }},
		{"qp", "DESTROY_QP of bad handles", {"ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 s.push_back(a.DestroyQp(kHuge));
			 s.push_back(a.DestroyQp(pd.handle));
		 }},
		{"qp", "close with live QPs, reopen", {"ok", "ok"}, {},
		 [](Steps &s) {
			 {
				 Session a;
				 a.Context();
				 Pd pd = a.AllocPd();
				 Cq cq = a.CreateCq();
				 for (int i = 0; i < 4; i++) {
					 Qp qp = a.CreateQp(pd.handle, cq.handle, cq.handle);
					 a.ModifyQp(qp.handle, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
								       IB_QP_ACCESS_FLAGS,
						    IB_QPS_INIT);
				 }
			 }
			 Session b;
			 b.Context();
			 Pd pd = b.AllocPd();
			 Cq cq = b.CreateCq();
			 Qp qp{};
			 s.push_back(b.TryRcQp(pd.handle, cq.handle, &qp));
			 s.push_back(b.DestroyQp(qp.handle));
		 }},

		// ---- srq ----------------------------------------------------------
		{"srq", "CREATE_SRQ, QUERY, MODIFY, DESTROY, twice",
		 {"ok", "ok", "EINVAL", "ok", "events=0", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 mthca_create_srq u = a.SrqUdata();
			 Srq srq{};
			 s.push_back(a.TrySrq(pd.handle, 16, &u, sizeof u, &srq));
			 s.push_back(a.QuerySrq(srq.handle));
			 ib_uverbs_modify_srq m{srq.handle, IB_SRQ_MAX_WR, 64, 0};  // mthca cannot resize
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &m, sizeof m, 0));
			 std::string ev;
			 s.push_back(a.DestroySrq(srq.handle, &ev));
			 s.push_back(ev);
			 s.push_back(a.DestroySrq(srq.handle));
		 }},
		{"srq", "SRQ bad handles and sizes", {"ENOENT", "EINVAL", "ENOENT", "ENOENT", "ENOENT", "EINVAL"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 mthca_create_srq u = a.SrqUdata();
			 s.push_back(a.TrySrq(kHuge, 16, &u, sizeof u, nullptr));
			 s.push_back(a.TrySrq(pd.handle, 1U << 30, &u, sizeof u, nullptr));
			 s.push_back(a.QuerySrq(kHuge));
			 ib_uverbs_modify_srq m{kHuge, IB_SRQ_LIMIT, 0, 1};
			 s.push_back(Send(a.fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &m, sizeof m, 0));
			 s.push_back(a.DestroySrq(kHuge));
			 s.push_back(a.DestroySrq(pd.handle));
		 }},
		{"srq", "a QP on an SRQ, destroy order", {"ok", "EBUSY", "ok", "ok"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 Srq srq = a.CreateSrq(pd.handle);
			 ib_uverbs_create_qp c = Session::QpCmd(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_RC);
			 c.is_srq = 1;
			 c.srq_handle = srq.handle;
			 c.max_recv_wr = c.max_recv_sge = 0;
			 mthca_create_qp u = a.QpUdata();
			 Qp qp{};
			 s.push_back(a.TryQp(c, &u, sizeof u, &qp));
			 s.push_back(a.DestroySrq(srq.handle));
			 s.push_back(a.DestroyQp(qp.handle));
			 s.push_back(a.DestroySrq(srq.handle));
		 }},

		// ---- mcast --------------------------------------------------------
		{"mcast", "ATTACH and DETACH", {"ok", "ok", "EINVAL", "EINVAL", "EINVAL", "ENOENT"}, {},
		 [](Steps &s) {
			 Session a;
			 a.Context();
			 Pd pd = a.AllocPd();
			 Cq cq = a.CreateCq();
			 Qp ud = a.CreateQp(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_UD);
			 Qp rc = a.CreateQp(pd.handle, cq.handle, cq.handle, IB_UVERBS_QPT_RC);
			 s.push_back(a.Mcast(true, ud.handle));
			 s.push_back(a.Mcast(false, ud.handle));
			 s.push_back(a.Mcast(false, ud.handle));	 // not attached any more
			 s.push_back(a.Mcast(true, rc.handle));	 // not a UD QP
			 s.push_back(a.Mcast(true, ud.handle, false));  // not a multicast GID
			 s.push_back(a.Mcast(true, kHuge));
		 }},
	};
	return cases;
}

// A wanted result that no kernel gives, for --mutate.
std::string Mutated(const std::string &w) { return w == "ok" ? "EPERM" : "ok"; }

int RunCases(const std::set<std::string> &families, bool mutate)
{
	int bad = 0, not_caught = 0, run = 0;
	for (const Case &c : Cases()) {
		if (!families.empty() && !families.count(c.family))
			continue;
		Steps want = g_ours && !c.want_ours.empty() ? c.want_ours : c.want;
		if (mutate)
			for (auto &w : want)
				w = Mutated(w);
		Steps got;
		try {
			c.run(got);
		} catch (const SetupFailed &f) {
			got.push_back("setup:" + f.what);
		}
		std::ostringstream line;
		line << (c.want_ours.empty() ? "" : "~") << c.family << "/" << c.name << ":";
		for (auto &g : got)
			line << " " << g;
		if (got != want) {
			line << "  [want";
			for (auto &w : want)
				line << " " << w;
			line << "]";
			bad++;
		} else if (mutate) {
			not_caught++;
			line << "  [MUTATION NOT CAUGHT]";
		}
		run++;
		printf("%s\n", line.str().c_str());
		fflush(stdout);
	}
	if (mutate) {
		printf("mutate: %d cases, %d caught, %d not caught\n", run, bad, not_caught);
		return not_caught ? 1 : 0;
	}
	printf("cases: %d run, %d as wanted, %d not\n", run, run - bad, bad);
	return bad ? 1 : 0;
}

// --- fuzz --------------------------------------------------------------------
//
// N bounded random write() calls. Each call picks a known command (or an
// unknown one), builds its request from the template a real caller would
// send, then perturbs it: handles drawn from those created so far or junk,
// counts and sizes from a set of edge values, in/out lengths shortened or
// lengthened within bounds, the response pointer NULL, unmapped or short.
// Now and then the file is closed (with whatever lives on it) and reopened.
// Every call runs under an alarm: a hang prints the seed and exits 3. At
// the end a fresh file must get a context, a PD and a device query.
// Not sent: doorbell indices at exactly the end of the table (6.1's
// mthca_map_user_db checks it off by one and would index past its table).

class Fuzzer {
public:
	explicit Fuzzer(uint64_t seed) : rng(seed), resp_map(64 * 1024), mem(1 << 20) {}

	int Run(long n)
	{
		Reopen();
		for (long i = 0; i < n; i++) {
			calls = g_fuzz_call = i;
			unsigned pick = R(100);
			if (pick < 2) {
				Reopen();
				continue;
			}
			OneCommand();
		}
		s.reset();
		// The device still works for a fresh file.
		Session f;
		std::string r = f.TryContext();
		if (r == "ok")
			r = f.TryPd(nullptr);
		if (r == "ok")
			r = f.QueryDevice();
		std::ostringstream hist;
		for (auto &[k, v] : results)
			hist << " " << k << "=" << v;
		printf("fuzz: %ld calls, seed %llu, results:%s\n", n, g_seed, hist.str().c_str());
		printf("fuzz: writes outside the response room: %ld%s%s\n", outside, outside ? ", first: " : "",
		       outside_first.c_str());
		printf("fuzz: a fresh context afterwards: %s\n", r.c_str());
		return r == "ok" && !outside ? 0 : 1;
	}

private:
	uint32_t R(uint32_t n) { return n ? uint32_t(rng() % n) : 0; }
	bool P(unsigned pct) { return R(100) < pct; }

	void Reopen()
	{
		s.reset();
		handles.clear();
		s = std::make_unique<Session>();
		if (P(95))
			Count(s->TryContext());
	}

	void Count(const std::string &r) { results[r]++; }

	// A handle: one of a type's live ones, another type's, or junk.
	uint32_t Handle(int type)
	{
		unsigned p = R(100);
		auto &v = handles[type];
		if (p < 70 && !v.empty())
			return v[R(uint32_t(v.size()))];
		if (p < 85) {
			auto &o = handles[R(5)];
			if (!o.empty())
				return o[R(uint32_t(o.size()))];
		}
		static const uint32_t junk[] = {0, 1, 2, 100, kHuge, 0xffffffff, 0x7fffffff};
		return junk[R(7)];
	}
	uint32_t Count32()
	{
		static const uint32_t v[] = {0, 1, 2, 15, 16, 255, 256, 1023, 4096, 65535, 65536, 1U << 24, 1U << 30,
					     0xffffffff};
		return P(50) ? 1 + R(64) : v[R(sizeof v / 4)];
	}
	uint64_t Addr(uint64_t good)
	{
		unsigned p = R(100);
		if (p < 80)
			return good;
		if (p < 88)
			return 0;
		if (p < 94)
			return UnmappedAddr();
		return good + 4 * (1 + R(4));  // elsewhere in the buffer, unaligned to 8
	}
	uint64_t MemAddr(uint64_t len)
	{
		if (P(90) && len <= mem.len)
			return mem.addr() + (R(uint32_t(mem.len - len) + 1) & ~4095U);
		return P(50) ? UnmappedAddr() : R(0x100000) * 4096ULL;
	}
	uint32_t DbIndex()
	{
		if (P(90))
			return R(512);
		return P(50) ? (1U << 20) + R(100) : 0xffffffff;
	}
	uint64_t DbPage() { return P(90) ? mem.addr() + 4096 * R(4) : P(50) ? mem.addr() + 8 : UnmappedAddr(); }

	enum { kPd, kMr, kCq, kQp, kSrq };

	void OneCommand()
	{
		std::vector<uint8_t> req(256, 0), udata;
		size_t core = 0, out = 0;
		uint32_t cmd = 0;
		int creates = -1;  // the type whose handle a success returns
		int destroys = -1;
		uint32_t destroyed = 0;
		uint64_t resp = uintptr_t(resp_buf.data());
		auto put = [&](size_t off, const void *p, size_t n) { memcpy(req.data() + off, p, n); };
		auto put32 = [&](size_t off, uint32_t v) { put(off, &v, 4); };
		switch (R(21)) {
		case 0:
			cmd = IB_USER_VERBS_CMD_GET_CONTEXT, core = 8, out = 16;
			break;
		case 1:
			cmd = IB_USER_VERBS_CMD_QUERY_DEVICE, core = 8, out = sizeof(ib_uverbs_query_device_resp);
			break;
		case 2:
			cmd = IB_USER_VERBS_CMD_QUERY_PORT, core = 16, out = sizeof(ib_uverbs_query_port_resp);
			req[8] = uint8_t(R(4));
			break;
		case 3:
			cmd = IB_USER_VERBS_CMD_ALLOC_PD, core = 8, out = 12, creates = kPd;
			break;
		case 4:
			cmd = IB_USER_VERBS_CMD_DEALLOC_PD, core = 4, destroys = kPd;
			put32(0, destroyed = Handle(kPd));
			break;
		case 5: {
			cmd = IB_USER_VERBS_CMD_REG_MR, core = sizeof(ib_uverbs_reg_mr), out = 12, creates = kMr;
			uint64_t len = P(80) ? 4096ULL * (1 + R(64)) : Count32();
			uint64_t start = MemAddr(len), va = P(50) ? start : 0;
			put(8, &start, 8);
			put(16, &len, 8);
			put(24, &va, 8);
			put32(32, Handle(kPd));
			put32(36, P(70) ? uint32_t(IB_UVERBS_ACCESS_LOCAL_WRITE) : R(256));
			udata.assign(8, 0);
			break;
		}
		case 6:
			cmd = IB_USER_VERBS_CMD_DEREG_MR, core = 4, destroys = kMr;
			put32(0, destroyed = Handle(kMr));
			break;
		case 7:
			cmd = IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, core = 8, out = 4;
			break;
		case 8: {
			cmd = IB_USER_VERBS_CMD_CREATE_CQ, core = sizeof(ib_uverbs_create_cq), out = 16, creates = kCq;
			put32(16, Count32());
			put32(20, P(90) ? 0 : Count32());
			int32_t ch = P(80) ? -1 : int32_t(R(40));
			put(24, &ch, 4);
			mthca_create_cq u{};
			u.lkey = Handle(kMr);
			u.pdn = R(8);
			u.arm_db_page = DbPage();
			u.set_db_page = P(90) ? u.arm_db_page : DbPage();
			u.arm_db_index = DbIndex();
			u.set_db_index = DbIndex();
			udata.assign(reinterpret_cast<uint8_t *>(&u), reinterpret_cast<uint8_t *>(&u) + sizeof u);
			break;
		}
		case 9: {
			cmd = IB_USER_VERBS_CMD_RESIZE_CQ, core = sizeof(ib_uverbs_resize_cq), out = 8;
			put32(8, Handle(kCq));
			put32(12, P(80) ? 15 : Count32());
			udata.assign(8, 0);
			break;
		}
		case 10:
			cmd = IB_USER_VERBS_CMD_DESTROY_CQ, core = 16, out = 8, destroys = kCq;
			put32(8, destroyed = Handle(kCq));
			break;
		case 11: {
			cmd = IB_USER_VERBS_CMD_CREATE_QP, core = sizeof(ib_uverbs_create_qp), out = 32, creates = kQp;
			ib_uverbs_create_qp c{};
			c.pd_handle = Handle(kPd);
			c.send_cq_handle = Handle(kCq);
			c.recv_cq_handle = P(70) ? c.send_cq_handle : Handle(kCq);
			c.is_srq = P(20);
			c.srq_handle = Handle(kSrq);
			c.max_send_wr = P(70) ? 16 : Count32();
			c.max_recv_wr = P(70) ? 16 : Count32();
			c.max_send_sge = P(80) ? 1 : Count32();
			c.max_recv_sge = P(80) ? 1 : Count32();
			c.max_inline_data = P(80) ? 0 : Count32();
			static const uint8_t types[] = {2, 2, 3, 4, 4, 0, 1, 8, 9, 200};
			c.qp_type = types[R(10)];
			put(8, reinterpret_cast<uint8_t *>(&c) + 8, sizeof c - 8);
			mthca_create_qp u{};
			u.lkey = Handle(kMr);
			u.sq_db_page = u.rq_db_page = DbPage();
			u.sq_db_index = DbIndex();
			u.rq_db_index = DbIndex();
			udata.assign(reinterpret_cast<uint8_t *>(&u), reinterpret_cast<uint8_t *>(&u) + sizeof u);
			break;
		}
		case 12:
			cmd = IB_USER_VERBS_CMD_QUERY_QP, core = 16, out = sizeof(ib_uverbs_query_qp_resp);
			put32(8, Handle(kQp));
			put32(12, R(2) ? 0xffffffff : R(1 << 20));
			break;
		case 13: {
			cmd = IB_USER_VERBS_CMD_MODIFY_QP, core = sizeof(ib_uverbs_modify_qp);
			ib_uverbs_modify_qp m{};
			m.qp_handle = Handle(kQp);
			m.attr_mask = P(50) ? (IB_QP_STATE | R(1 << 21)) : R(1 << 21);
			m.qp_state = uint8_t(R(8));
			m.cur_qp_state = uint8_t(R(8));
			m.port_num = uint8_t(R(3));
			m.pkey_index = uint16_t(R(3) ? 0 : R(0x10000));
			m.path_mtu = uint8_t(R(7));
			m.dest.dlid = uint16_t(R(0x10000));
			m.dest.sgid_index = uint8_t(R(3) ? 0 : R(256));
			m.dest.is_global = uint8_t(R(2));
			m.dest.port_num = uint8_t(R(3));
			m.dest_qp_num = R(1 << 24);
			m.qp_access_flags = R(16);
			m.max_rd_atomic = uint8_t(R(20));
			m.max_dest_rd_atomic = uint8_t(R(20));
			m.timeout = uint8_t(R(32));
			m.retry_cnt = uint8_t(R(8));
			m.rnr_retry = uint8_t(R(8));
			m.min_rnr_timer = uint8_t(R(32));
			m.qkey = R(2) ? 0x11111111 : uint32_t(rng());
			m.alt_port_num = uint8_t(R(3));
			put(0, &m, sizeof m);
			break;
		}
		case 14:
			cmd = IB_USER_VERBS_CMD_DESTROY_QP, core = 16, out = 4, destroys = kQp;
			put32(8, destroyed = Handle(kQp));
			break;
		case 15: {
			cmd = IB_USER_VERBS_CMD_CREATE_SRQ, core = sizeof(ib_uverbs_create_srq), out = 24, creates = kSrq;
			put32(16, Handle(kPd));
			put32(20, P(70) ? 16 : Count32());
			put32(24, P(80) ? 1 : Count32());
			put32(28, P(80) ? 0 : Count32());
			mthca_create_srq u{};
			u.lkey = Handle(kMr);
			u.db_index = DbIndex();
			u.db_page = DbPage();
			udata.assign(reinterpret_cast<uint8_t *>(&u), reinterpret_cast<uint8_t *>(&u) + sizeof u);
			break;
		}
		case 16:
			cmd = IB_USER_VERBS_CMD_MODIFY_SRQ, core = 16;
			put32(0, Handle(kSrq));
			put32(4, R(4));
			put32(8, Count32());
			put32(12, Count32());
			break;
		case 17:
			cmd = R(2) ? IB_USER_VERBS_CMD_QUERY_SRQ : IB_USER_VERBS_CMD_DESTROY_SRQ, core = 16,
			out = cmd == IB_USER_VERBS_CMD_QUERY_SRQ ? 16 : 4;
			put32(8, destroyed = Handle(kSrq));
			if (cmd == IB_USER_VERBS_CMD_DESTROY_SRQ)
				destroys = kSrq;
			break;
		case 18: {
			cmd = R(2) ? IB_USER_VERBS_CMD_ATTACH_MCAST : IB_USER_VERBS_CMD_DETACH_MCAST, core = 24;
			req[0] = P(80) ? 0xff : uint8_t(R(256));
			req[1] = 0x12;
			req[15] = uint8_t(R(4));
			put32(16, Handle(kQp));
			uint16_t lid = uint16_t(0xc000 + R(4));
			put(20, &lid, 2);
			break;
		}
		case 19:
			cmd = IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, core = 8;
			put32(0, Handle(kCq));
			put32(4, R(2));
			break;
		default: {
			// EX_QUERY_DEVICE, or an unknown command.
			if (R(2)) {
				ib_uverbs_ex_query_device c{};
				c.comp_mask = P(80) ? 0 : R(4);
				Count(SendEx(s->fd, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &c, sizeof c,
					     Addr(resp),
					     P(80) ? sizeof(ib_uverbs_ex_query_device_resp) : 8 * R(40), P(95) ? 0 : 1));
			} else {
				Count(Send(s->fd, 40 + R(200), req.data(), 8 * R(4), 8 * R(4)));
			}
			return;
		}
		}
		uint64_t rptr = 0;
		if (out) {
			rptr = Addr(resp);
			put(0, &rptr, 8);
		}
		// The response lands in resp_buf (at an odd place at times), or
		// nowhere the fuzzer reads.
		uint8_t *rp = nullptr;
		if (rptr >= resp && rptr + 64 <= resp + resp_buf.size())
			rp = resp_buf.data() + (rptr - resp);
		memset(resp_buf.data(), kFill, kWindow);
		// Lengths: mostly right, else shortened or lengthened (the tail
		// zero or not), within bounds.
		size_t len = core + udata.size();
		std::vector<uint8_t> body(req.begin(), req.begin() + long(core));
		body.insert(body.end(), udata.begin(), udata.end());
		unsigned p = R(100);
		if (p < 8 && len >= 4)
			body.resize(len - 4 * (1 + R(uint32_t(len / 4))));
		else if (p < 16) {
			body.resize(len + 4 * (1 + R(8)), 0);
			if (P(50))
				body.back() = 1;
		}
		size_t out_bytes = out;
		if (P(8))
			out_bytes = 4 * R(uint32_t(out / 4 + 8));
		std::string r = Send(s->fd, cmd, body.data(), body.size(), out_bytes, nullptr, 0,
				     P(3) ? int(R(64)) : -1);
		Count(r);
		// The kernel writes nowhere but the response room it was given.
		size_t lo = rp ? size_t(rp - resp_buf.data()) : kWindow, hi = rp ? lo + out_bytes : kWindow;
		for (size_t i = 0; i < kWindow; i++)
			if (resp_buf.data()[i] != kFill && (i < lo || i >= hi)) {
				if (!outside++) {
					outside_first = "call " + std::to_string(calls) + " command " + std::to_string(cmd) +
							" (" + r + "): byte " + std::to_string(int(i) - int(lo)) +
							" of a room of " + std::to_string(out_bytes);
					printf("fuzz: a write outside the response room: %s\n", outside_first.c_str());
				}
				break;
			}
		if (g_trace)
			fprintf(stderr, "%ld: cmd %u len %zu out %zu resp %+lld: %s\n", calls, cmd, body.size(), out_bytes,
				(long long)(rptr - resp), r.c_str());
		if (r != "ok")
			return;
		if (destroys >= 0) {
			auto &v = handles[destroys];
			for (size_t i = 0; i < v.size(); i++)
				if (v[i] == destroyed) {
					v.erase(v.begin() + long(i));
					break;
				}
		}
		uint32_t first = kFill * 0x01010101U;
		if (rp)
			memcpy(&first, rp, 4);
		if (first == kFill * 0x01010101U)
			return;  // nothing written where the fuzzer reads
		if (cmd == IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL)
			s->channels.push_back(int(first));
		if (cmd == IB_USER_VERBS_CMD_GET_CONTEXT && s->async_fd < 0)
			s->async_fd = int(first);
		if (creates >= 0)
			handles[creates].push_back(first);
	}

	std::mt19937_64 rng;
	// Responses land in a mapping of their own, not on the heap.
	Mapping resp_map;
	struct {
		Mapping &m;
		uint8_t *data() { return static_cast<uint8_t *>(m.p); }
		size_t size() const { return m.len; }
	} resp_buf{resp_map};
	Mapping mem;
	std::unique_ptr<Session> s;
	std::map<int, std::vector<uint32_t>> handles;
	std::map<std::string, long> results;
	long calls = 0;
	static constexpr size_t kWindow = 4096;	 // where responses land
	static constexpr uint8_t kFill = 0xa5;
	long outside = 0;
	std::string outside_first;
};

std::set<std::string> SplitFamilies(const std::string &arg)
{
	std::set<std::string> out;
	std::stringstream in(arg);
	std::string f;
	while (std::getline(in, f, ','))
		if (!f.empty())
			out.insert(f);
	return out;
}

}  // namespace

int main(int argc, char **argv)
{
	std::set<std::string> families;
	bool mutate = false, list = false;
	long fuzz = -1;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto next = [&]() -> std::string {
			if (i + 1 >= argc) {
				fprintf(stderr, "%s needs a value\n", a.c_str());
				exit(2);
			}
			return argv[++i];
		};
		if (a == "--device")
			g_device = next();
		else if (a == "--families")
			families = SplitFamilies(next());
		else if (a == "--stack")
			g_ours = next() == "ours";
		else if (a == "--trace")
			g_trace = true;
		else if (a == "--mutate")
			mutate = true;
		else if (a == "--list")
			list = true;
		else if (a == "--fuzz")
			fuzz = atol(next().c_str());
		else if (a == "--seed")
			g_seed = strtoull(next().c_str(), nullptr, 0);
		else if (a[0] != '-')
			g_device = a;  // the seed's calling convention
		else {
			fprintf(stderr,
				"usage: %s [--device PATH] [--families a,b] [--stack ours|upstream] [--list] "
				"[--mutate] | --fuzz N --seed S\n",
				argv[0]);
			return 2;
		}
	}
	if (list) {
		for (const Case &c : Cases())
			printf("%s/%s\n", c.family, c.name);
		return 0;
	}
	signal(SIGALRM, OnAlarm);
	signal(SIGPIPE, SIG_IGN);
	{
		int fd = open(g_device.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			perror(g_device.c_str());
			return 2;
		}
		close(fd);
	}
	if (fuzz >= 0) {
		g_fuzzing = true;
		setvbuf(stdout, nullptr, _IOLBF, 0);
		printf("fuzz: seed %llu\n", g_seed);
		fflush(stdout);
		Fuzzer f(g_seed);
		int r = f.Run(fuzz);
		if (r)
			printf("fuzz: FAILED, seed %llu\n", g_seed);
		return r;
	}
	return RunCases(families, mutate);
}
