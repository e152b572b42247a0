// SPDX-License-Identifier: GPL-2.0
// The ib_ucm ABI tester (issue 11): drives /dev/infiniband/ucmN through
// write() directly (<rdma/ib_user_cm.h>, no libibcm), inside a guest whose
// port is ACTIVE (the loopback cases connect the port to its own LID).
//
//   ucm_abi_check [--device /dev/infiniband/ucm0]      the cases
//   ucm_abi_check --cycles N                           N loopback connect/
//                                                      disconnect cycles
//   ucm_abi_check --fuzz N [--seed S]                  N random commands
//
// Each case prints "PASS <name>" or "FAIL <name>: <why>"; the run ends with
// "<p> passed, <f> failed" and exits non-zero when anything failed.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <atomic>
#include <thread>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <endian.h>

#include "../../include/rdma/ib_user_cm.h"
#include <rdma/ib_user_verbs.h>

namespace {

std::string g_device = "/dev/infiniband/ucm0";
int g_pass, g_fail;

void Pass(const std::string &name)
{
	std::printf("PASS %s\n", name.c_str());
	g_pass++;
}

void Fail(const std::string &name, const std::string &why)
{
	std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
	g_fail++;
}

void Check(bool ok, const std::string &name, const std::string &why = "")
{
	if (ok)
		Pass(name);
	else
		Fail(name, why);
}

std::string ReadFile(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	std::getline(f, s);
	return s;
}

std::string ErrName(int e)
{
	switch (e) {
	case 0: return "ok";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	case EAGAIN: return "EAGAIN";
	case EACCES: return "EACCES";
	case ENOSPC: return "ENOSPC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EIO: return "EIO";
	default: return "errno " + std::to_string(e);
	}
}

int OpenDev(bool nonblock = false)
{
	int fd = open(g_device.c_str(), O_RDWR | O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
	if (fd < 0) {
		std::perror(g_device.c_str());
		std::exit(2);
	}
	return fd;
}

// One write(): the header with explicit sizes, then `in` bytes of `cmd`.
int RawCmd(int fd, uint32_t op, const void *cmd, uint16_t in, uint16_t out, size_t count)
{
	std::vector<uint8_t> buf(sizeof(ib_ucm_cmd_hdr) + in + 64, 0);
	ib_ucm_cmd_hdr hdr{op, in, out};
	std::memcpy(buf.data(), &hdr, sizeof(hdr));
	if (cmd)
		std::memcpy(buf.data() + sizeof(hdr), cmd, in);
	ssize_t r = write(fd, buf.data(), count);
	if (r < 0)
		return errno;
	return r == ssize_t(count) ? 0 : -1;
}

template <class T> int Cmd(int fd, uint32_t op, const T &cmd, uint16_t out = 0)
{
	return RawCmd(fd, op, &cmd, sizeof(T), out, sizeof(ib_ucm_cmd_hdr) + sizeof(T));
}

int CreateId(int fd, uint64_t uid, uint32_t *id)
{
	ib_ucm_create_id c{};
	ib_ucm_create_id_resp r{};
	c.uid = uid;
	c.response = uintptr_t(&r);
	int e = Cmd(fd, IB_USER_CM_CMD_CREATE_ID, c, sizeof(r));
	*id = r.id;
	return e;
}

int DestroyId(int fd, uint32_t id, uint32_t *reported = nullptr)
{
	ib_ucm_destroy_id c{};
	ib_ucm_destroy_id_resp r{};
	c.id = id;
	c.response = uintptr_t(&r);
	int e = Cmd(fd, IB_USER_CM_CMD_DESTROY_ID, c, sizeof(r));
	if (reported)
		*reported = r.events_reported;
	return e;
}

int AttrId(int fd, uint32_t id)
{
	ib_ucm_attr_id c{};
	ib_ucm_attr_id_resp r{};
	c.id = id;
	c.response = uintptr_t(&r);
	return Cmd(fd, IB_USER_CM_CMD_ATTR_ID, c, sizeof(r));
}

int Listen(int fd, uint32_t id, uint64_t sid, uint64_t mask = ~0ULL)
{
	ib_ucm_listen c{};
	c.id = id;
	c.service_id = htobe64(sid);
	c.service_mask = htobe64(mask);
	return Cmd(fd, IB_USER_CM_CMD_LISTEN, c);
}

struct Event {
	ib_ucm_event_resp resp{};
	uint8_t data[256]{};
	uint8_t info[80]{};
};

int GetEvent(int fd, Event *ev)
{
	ib_ucm_event_get g{};
	g.response = uintptr_t(&ev->resp);
	g.data = uintptr_t(ev->data);
	g.data_len = 255;
	g.info = uintptr_t(ev->info);
	g.info_len = 80;
	return Cmd(fd, IB_USER_CM_CMD_EVENT, g, sizeof(ev->resp));
}

// Waits up to `ms` for an event of type `type` (others are skipped and
// counted in *skipped). Returns 0 or an errno / ETIMEDOUT.
int WaitEvent(int fd, uint32_t type, Event *ev, int ms = 20000, int *skipped = nullptr)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
	for (;;) {
		int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count());
		if (left <= 0)
			return ETIMEDOUT;
		pollfd p{fd, POLLIN, 0};
		if (poll(&p, 1, left) <= 0)
			continue;
		int e = GetEvent(fd, ev);
		if (e)
			return e;
		if (ev->resp.event == type)
			return 0;
		if (skipped)
			++*skipped;
	}
}

// The port the device belongs to: port 1's LID and GID 0.
struct Port {
	uint16_t lid = 0;
	uint8_t gid[16]{};
};

Port ReadPort()
{
	Port p;
	std::string name = g_device.substr(g_device.rfind('/') + 1);
	std::string ibdev = ReadFile("/sys/class/infiniband_cm/" + name + "/ibdev");
	std::string base = "/sys/class/infiniband/" + ibdev + "/ports/1/";
	p.lid = uint16_t(std::strtoul(ReadFile(base + "lid").c_str(), nullptr, 0));
	std::string g = ReadFile(base + "gids/0");
	std::string hex;
	for (char c : g)
		if (c != ':')
			hex += c;
	for (int i = 0; i < 16 && size_t(2 * i + 1) < hex.size(); i++)
		p.gid[i] = uint8_t(std::strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16));
	return p;
}

ib_user_path_rec LoopPath(const Port &port)
{
	ib_user_path_rec r{};
	std::memcpy(r.dgid, port.gid, 16);
	std::memcpy(r.sgid, port.gid, 16);
	r.dlid = htons(port.lid);
	r.slid = htons(port.lid);
	r.pkey = htons(0xffff);
	r.mtu = 4;		// 2048
	r.rate = 3;		// 10 Gb/s
	r.packet_life_time = 12;
	r.numb_path = 1;
	return r;
}

int SendReq(int fd, uint32_t id, uint64_t sid, const ib_user_path_rec *path, const void *data, uint8_t len,
	    uint32_t qpn = 0x1234)
{
	ib_ucm_req c{};
	c.id = id;
	c.qpn = qpn;
	c.qp_type = 2;	// RC
	c.psn = 0x100;
	c.sid = htobe64(sid);
	c.data = uintptr_t(data);
	c.len = len;
	c.primary_path = uintptr_t(path);
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.remote_cm_response_timeout = 18;
	c.local_cm_response_timeout = 18;
	c.retry_count = 7;
	c.rnr_retry_count = 7;
	c.max_cm_retries = 5;
	return Cmd(fd, IB_USER_CM_CMD_SEND_REQ, c);
}

int SendRep(int fd, uint32_t id, uint64_t uid, uint32_t qpn)
{
	ib_ucm_rep c{};
	c.id = id;
	c.uid = uid;
	c.qpn = qpn;
	c.psn = 0x200;
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.rnr_retry_count = 7;
	return Cmd(fd, IB_USER_CM_CMD_SEND_REP, c);
}

int SendPriv(int fd, uint32_t op, uint32_t id, const void *data = nullptr, uint8_t len = 0)
{
	ib_ucm_private_data c{};
	c.id = id;
	c.data = uintptr_t(data);
	c.len = len;
	return Cmd(fd, op, c);
}

uint64_t Dropped()
{
	std::string name = g_device.substr(g_device.rfind('/') + 1);
	return std::strtoull(ReadFile("/sys/class/infiniband_cm/" + name + "/events_dropped").c_str(), nullptr, 0);
}

const char *kMaxEvents = "/sys/module/ib_ucm/parameters/max_events";

void SetMaxEvents(const std::string &v)
{
	std::ofstream f(kMaxEvents);
	f << v << "\n";
}

// ---------------------------------------------------------------- cases

void CaseSysfs()
{
	Check(ReadFile("/sys/class/infiniband_cm/abi_version") == "5", "class abi_version is 5",
	      ReadFile("/sys/class/infiniband_cm/abi_version"));
	std::string name = g_device.substr(g_device.rfind('/') + 1);
	Check(!ReadFile("/sys/class/infiniband_cm/" + name + "/ibdev").empty(), "ucmN has ibdev");
	struct stat st{};
	Check(stat(g_device.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && (st.st_mode & 0777) == 0600 &&
		      major(st.st_rdev) == 231 && minor(st.st_rdev) >= 224,
	      "node is 231:224+ with mode 0600", "mode " + std::to_string(st.st_mode & 0777));
}

void CaseFraming()
{
	int fd = OpenDev();
	uint32_t r = 0;
	ib_ucm_create_id c{};
	c.response = uintptr_t(&r);
	const uint16_t in = sizeof(c), out = 4;
	struct Row {
		const char *name;
		uint32_t op;
		uint16_t in, out;
		size_t count;
	} rows[] = {
		{"write shorter than the header", 0, in, out, 7},
		{"empty write", 0, in, out, 0},
		{"unknown command 18", 18, in, out, 8 + in},
		{"unknown command 0xffffffff", 0xffffffffu, in, out, 8 + in},
		{"in one short", 0, uint16_t(in - 1), out, size_t(8 + in - 1)},
		{"in one long", 0, uint16_t(in + 1), out, size_t(8 + in + 1)},
		{"in 0xffff", 0, 0xffff, out, 8 + in},
		{"out one short", 0, in, 3, 8 + in},
		{"out one long", 0, in, 5, 8 + in},
		{"count one short of hdr.in", 0, in, out, size_t(8 + in - 1)},
		{"count one past hdr.in", 0, in, out, size_t(8 + in + 1)},
		{"EVENT with out 191", IB_USER_CM_CMD_EVENT, 32, 191, 8 + 32},
		{"LISTEN with out 4", IB_USER_CM_CMD_LISTEN, 24, 4, 8 + 24},
	};
	for (auto &row : rows) {
		int e = RawCmd(fd, row.op, &c, row.in <= in ? row.in : in, row.out, row.count);
		if (row.in > in) {
			// the header claims more than the buffer carries
			std::vector<uint8_t> buf(8 + 0x10000, 0);
			ib_ucm_cmd_hdr h{row.op, row.in, row.out};
			std::memcpy(buf.data(), &h, 8);
			std::memcpy(buf.data() + 8, &c, in);
			e = write(fd, buf.data(), row.count) < 0 ? errno : 0;
		}
		Check(e == EINVAL, std::string("framing: ") + row.name + " -> EINVAL", ErrName(e));
	}
	// a NULL buffer
	void *volatile nothing = nullptr;
	Check(write(fd, nothing, 24) < 0 && errno == EFAULT, "framing: NULL buffer -> EFAULT", ErrName(errno));
	close(fd);
}

void CaseIds()
{
	int a = OpenDev(), b = OpenDev();
	uint32_t ids[3], bid;
	bool ok = true;
	for (auto &id : ids)
		ok &= CreateId(a, 7, &id) == 0;
	Check(ok && ids[0] != ids[1] && ids[1] != ids[2], "CREATE_ID gives distinct ids");
	Check(AttrId(a, ids[2]) == 0, "ATTR_ID of an own id");
	Check(CreateId(b, 8, &bid) == 0, "CREATE_ID in a second file");
	uint32_t other = ids[0] == bid ? ids[2] : ids[0];
	for (uint32_t id : ids)
		if (id != bid)
			other = id;
	Check(AttrId(b, other) == ENOENT, "ATTR_ID of another file's id -> ENOENT", ErrName(AttrId(b, other)));
	Check(Listen(b, other, 0x5000) == ENOENT, "LISTEN on another file's id -> ENOENT");
	Check(Listen(a, ids[0], 0x01000005, 0xffffffffff000000ULL) == EINVAL,
	      "LISTEN on a range of rdma_cm service IDs -> EINVAL");
	Check(Listen(a, ids[0], 0x061d2f, 0xffffff) == EINVAL,
	      "LISTEN under a mask that takes an rdma_cm service ID -> EINVAL");
	{
		// One exact rdma_cm ID is allowed (a server for librdmacm
		// clients); a second listener on it gets EBUSY from ib_cm.
		uint32_t l1 = 0, l2 = 0;
		bool made = CreateId(a, 9, &l1) == 0 && CreateId(a, 10, &l2) == 0;
		Check(made && Listen(a, l1, 0x01061d2f) == 0, "LISTEN on one exact rdma_cm service ID");
		Check(made && Listen(a, l2, 0x01061d2f) == EBUSY, "a second LISTEN on it -> EBUSY");
		Check(made && DestroyId(a, l1) == 0 && DestroyId(a, l2) == 0, "both ids destroyed");
	}
	Check(Listen(a, ids[0], 0x00010005) == EINVAL, "LISTEN on an SDP service ID -> EINVAL");
	Check(DestroyId(b, other) == ENOENT, "DESTROY_ID of another file's id -> ENOENT");
	Check(AttrId(a, 0x7fffffff) == ENOENT, "ATTR_ID of an unknown id -> ENOENT");
	Check(AttrId(a, 0xffffffff) == ENOENT, "ATTR_ID of id 0xffffffff -> ENOENT");
	uint32_t rep = 99;
	Check(DestroyId(a, ids[1], &rep) == 0 && rep == 0, "DESTROY_ID reports 0 events");
	Check(AttrId(a, ids[1]) == ENOENT, "a destroyed id is gone -> ENOENT");
	Check(DestroyId(a, ids[1]) == ENOENT, "DESTROY_ID twice -> ENOENT");
	// bad response pointers
	ib_ucm_create_id c{};
	c.response = 1;
	Check(Cmd(a, IB_USER_CM_CMD_CREATE_ID, c, 4) == EFAULT, "CREATE_ID to a bad response -> EFAULT");
	ib_ucm_attr_id at{};
	at.id = ids[0];
	at.response = 0xffffffffffff0000ULL;
	Check(Cmd(a, IB_USER_CM_CMD_ATTR_ID, at, 24) == EFAULT, "ATTR_ID to a kernel address -> EFAULT");
	ib_ucm_init_qp_attr qa{};
	uint8_t qbuf[144];
	qa.id = ids[0];
	qa.response = uintptr_t(qbuf);
	qa.qp_state = 2;
	Check(Cmd(a, IB_USER_CM_CMD_INIT_QP_ATTR, qa, 144) == EINVAL, "INIT_QP_ATTR of an idle id -> EINVAL");
	qa.qp_state = 1000;
	Check(Cmd(a, IB_USER_CM_CMD_INIT_QP_ATTR, qa, 144) == EINVAL, "INIT_QP_ATTR state 1000 -> EINVAL");
	ib_ucm_notify n{ids[0], 1000};
	Check(Cmd(a, IB_USER_CM_CMD_NOTIFY, n) == EINVAL, "NOTIFY of an unknown event -> EINVAL");
	n.event = 4;	// IB_EVENT_COMM_EST
	int e = Cmd(a, IB_USER_CM_CMD_NOTIFY, n);
	Check(e == EINVAL, "NOTIFY COMM_EST of an idle id -> EINVAL", ErrName(e));
	n.event = 6;	// IB_EVENT_PATH_MIG
	e = Cmd(a, IB_USER_CM_CMD_NOTIFY, n);
	Check(e == EINVAL, "NOTIFY PATH_MIG of an idle id -> EINVAL", ErrName(e));
	n.id = 0x7fffffff;
	e = Cmd(a, IB_USER_CM_CMD_NOTIFY, n);
	Check(e == ENOENT, "NOTIFY of an unknown id -> ENOENT", ErrName(e));
	n.id = other;
	e = Cmd(b, IB_USER_CM_CMD_NOTIFY, n);
	Check(e == ENOENT, "NOTIFY of another file's id -> ENOENT", ErrName(e));
	close(a);
	close(b);
}

void CasePrivateData(const Port &port)
{
	int fd = OpenDev();
	uint32_t id;
	CreateId(fd, 1, &id);
	static uint8_t big[256];
	ib_user_path_rec path = LoopPath(port);
	int e = SendReq(fd, id, 0x6000, &path, big, 93);
	Check(e == EINVAL, "REQ with 93 bytes of private data -> EINVAL", ErrName(e));
	auto priv = [&](uint32_t op, const char *name, uint8_t len) {
		int r = SendPriv(fd, op, id, big, len);
		Check(r == EINVAL, std::string(name) + " with " + std::to_string(len) + " bytes -> EINVAL", ErrName(r));
	};
	priv(IB_USER_CM_CMD_SEND_RTU, "RTU", 225);
	priv(IB_USER_CM_CMD_SEND_DREQ, "DREQ", 221);
	priv(IB_USER_CM_CMD_SEND_DREP, "DREP", 225);
	ib_ucm_rep rep{};
	rep.id = id;
	rep.data = uintptr_t(big);
	rep.len = 197;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_REP, rep);
	Check(e == EINVAL, "REP with 197 bytes -> EINVAL", ErrName(e));
	ib_ucm_info rej{};
	rej.id = id;
	rej.status = 28;
	rej.data = uintptr_t(big);
	rej.data_len = 149;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_REJ, rej);
	Check(e == EINVAL, "REJ with 149 bytes -> EINVAL", ErrName(e));
	rej.data_len = 0;
	rej.info = uintptr_t(big);
	rej.info_len = 73;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_REJ, rej);
	Check(e == EINVAL, "REJ with a 73-byte ARI -> EINVAL", ErrName(e));
	ib_ucm_mra mra{};
	mra.id = id;
	mra.data = uintptr_t(big);
	mra.len = 223;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_MRA, mra);
	Check(e == EINVAL, "MRA with 223 bytes -> EINVAL", ErrName(e));
	ib_ucm_sidr_req sreq{};
	sreq.id = id;
	sreq.path = uintptr_t(&path);
	sreq.data = uintptr_t(big);
	sreq.len = 217;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_SIDR_REQ, sreq);
	Check(e == EINVAL, "SIDR_REQ with 217 bytes -> EINVAL", ErrName(e));
	ib_ucm_sidr_rep srep{};
	srep.id = id;
	srep.data = uintptr_t(big);
	srep.data_len = 137;
	e = Cmd(fd, IB_USER_CM_CMD_SEND_SIDR_REP, srep);
	Check(e == EINVAL, "SIDR_REP with 137 bytes -> EINVAL", ErrName(e));
	// private data at an unmapped address
	e = SendReq(fd, id, 0x6000, &path, reinterpret_cast<void *>(8), 10);
	Check(e == EFAULT, "REQ with private data at address 8 -> EFAULT", ErrName(e));
	// path records
	e = SendReq(fd, id, 0x6000, nullptr, nullptr, 0);
	Check(e == EINVAL, "REQ without a primary path -> EINVAL", ErrName(e));
	ib_user_path_rec bad = path;
	bad.mtu = 9;
	e = SendReq(fd, id, 0x6000, &bad, nullptr, 0);
	Check(e == EINVAL, "REQ with path MTU 9 -> EINVAL", ErrName(e));
	bad = path;
	bad.dlid = 0;
	e = SendReq(fd, id, 0x6000, &bad, nullptr, 0);
	Check(e == EINVAL, "REQ with DLID 0 -> EINVAL", ErrName(e));
	bad = path;
	bad.sl = 16;
	e = SendReq(fd, id, 0x6000, &bad, nullptr, 0);
	Check(e == EINVAL, "REQ with SL 16 -> EINVAL", ErrName(e));
	e = SendReq(fd, id, 0x6000, reinterpret_cast<ib_user_path_rec *>(16), nullptr, 0);
	Check(e == EFAULT, "REQ with the path at address 16 -> EFAULT", ErrName(e));
	ib_ucm_req q{};
	q.id = id;
	q.qp_type = 4;	// UD
	q.primary_path = uintptr_t(&path);
	e = Cmd(fd, IB_USER_CM_CMD_SEND_REQ, q);
	Check(e == EINVAL, "REQ for a UD QP -> EINVAL", ErrName(e));
	close(fd);
}

void CaseEventEmpty()
{
	int fd = OpenDev(true);
	Event ev;
	int e = GetEvent(fd, &ev);
	Check(e == EAGAIN, "EVENT with O_NONBLOCK on an empty queue -> EAGAIN", ErrName(e));
	pollfd p{fd, POLLIN, 0};
	Check(poll(&p, 1, 50) == 0, "poll() on an empty queue times out");
	close(fd);
}

void CaseCredentials()
{
	int fd = OpenDev();
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534))
			_exit(3);
		uint32_t id;
		_exit(CreateId(fd, 1, &id) == EACCES ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	Check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "write() under other credentials -> EACCES",
	      "child status " + std::to_string(st));
	close(fd);
}

// One loopback connection: passive file p (listener lid), active file a.
// Returns "" or what went wrong.
std::string Connect(int p, uint32_t lid, int a, const Port &port, uint64_t sid, bool check_all, std::string *log)
{
	uint32_t cid, nid;
	Event ev;
	int e;
	if ((e = CreateId(a, 0xAAAA, &cid)))
		return "CREATE_ID " + ErrName(e);
	ib_user_path_rec path = LoopPath(port);
	const char hello[] = "hello, ucm";
	if ((e = SendReq(a, cid, sid, &path, hello, sizeof(hello))))
		return "SEND_REQ " + ErrName(e);
	if ((e = WaitEvent(p, 1 /* REQ_RECEIVED */, &ev)))
		return "no REQ event: " + ErrName(e);
	nid = ev.resp.id;
	if (check_all) {
		bool ok = nid != lid && ev.resp.uid == 0x1111 && (ev.resp.present & IB_UCM_PRES_DATA) &&
			  (ev.resp.present & IB_UCM_PRES_PRIMARY) && !std::memcmp(ev.data, hello, sizeof(hello)) &&
			  ev.resp.u.req_resp.remote_qpn == 0x1234 && ntohs(ev.resp.u.req_resp.primary_path.dlid) == port.lid;
		if (!ok)
			return "REQ event fields: id " + std::to_string(nid) + " uid " + std::to_string(ev.resp.uid) +
			       " present " + std::to_string(ev.resp.present) + " qpn " +
			       std::to_string(ev.resp.u.req_resp.remote_qpn);
		*log += " REQ";
		ib_ucm_init_qp_attr qa{};
		uint8_t qbuf[144]{};
		qa.id = nid;
		qa.qp_state = 2;	// RTR
		qa.response = uintptr_t(qbuf);
		if ((e = Cmd(p, IB_USER_CM_CMD_INIT_QP_ATTR, qa, 144)))
			return "INIT_QP_ATTR RTR " + ErrName(e);
		uint32_t dest;
		std::memcpy(&dest, qbuf + 32, 4);	// dest_qp_num
		if (dest != 0x1234)
			return "INIT_QP_ATTR RTR dest_qp_num " + std::to_string(dest);
	}
	if ((e = SendRep(p, nid, 0xBBBB, 0x5678)))
		return "SEND_REP " + ErrName(e);
	if ((e = WaitEvent(a, 3 /* REP_RECEIVED */, &ev)))
		return "no REP event: " + ErrName(e);
	if (check_all) {
		if (ev.resp.u.rep_resp.remote_qpn != 0x5678 || ev.resp.id != cid || ev.resp.uid != 0xAAAA)
			return "REP event fields";
		*log += " REP";
	}
	if ((e = SendPriv(a, IB_USER_CM_CMD_SEND_RTU, cid)))
		return "SEND_RTU " + ErrName(e);
	if ((e = WaitEvent(p, 4 /* RTU_RECEIVED */, &ev)))
		return "no RTU event: " + ErrName(e);
	if (check_all) {
		if (ev.resp.uid != 0xBBBB || ev.resp.id != nid)
			return "RTU event: uid not the one REP set";
		*log += " RTU(established)";
	}
	if ((e = SendPriv(a, IB_USER_CM_CMD_SEND_DREQ, cid)))
		return "SEND_DREQ " + ErrName(e);
	if ((e = WaitEvent(p, 7 /* DREQ_RECEIVED */, &ev)))
		return "no DREQ event: " + ErrName(e);
	if ((e = SendPriv(p, IB_USER_CM_CMD_SEND_DREP, nid)))
		return "SEND_DREP " + ErrName(e);
	if ((e = WaitEvent(a, 8 /* DREP_RECEIVED */, &ev)))
		return "no DREP event: " + ErrName(e);
	if (check_all)
		*log += " DREQ DREP";
	uint32_t rep_p = 0, rep_a = 0;
	if ((e = DestroyId(p, nid, &rep_p)))
		return "DESTROY_ID passive " + ErrName(e);
	if ((e = DestroyId(a, cid, &rep_a)))
		return "DESTROY_ID active " + ErrName(e);
	if (check_all && (rep_p != 3 || rep_a != 2))
		return "events_reported " + std::to_string(rep_p) + "/" + std::to_string(rep_a) + ", want 3/2";
	return "";
}

void CaseLoopback(const Port &port)
{
	int p = OpenDev(), a = OpenDev();
	uint32_t lid;
	CreateId(p, 0x1111, &lid);
	int e = Listen(p, lid, 0x7000);
	Check(e == 0, "LISTEN", ErrName(e));
	ib_ucm_attr_id at{};
	ib_ucm_attr_id_resp ar{};
	at.id = lid;
	at.response = uintptr_t(&ar);
	Check(Cmd(p, IB_USER_CM_CMD_ATTR_ID, at, sizeof(ar)) == 0 && be64toh(ar.service_id) == 0x7000,
	      "ATTR_ID shows the listened service ID");
	std::string log;
	std::string err = Connect(p, lid, a, port, 0x7000, true, &log);
	Check(err.empty(), "loopback connection:" + log, err);
	// the id of the REQ belongs to the passive file only
	close(p);
	close(a);
}

void CaseClosePending(const Port &port)
{
	int p = OpenDev(), a = OpenDev();
	uint32_t lid, cid;
	CreateId(p, 1, &lid);
	Listen(p, lid, 0x7100);
	CreateId(a, 2, &cid);
	ib_user_path_rec path = LoopPath(port);
	int e = SendReq(a, cid, 0x7100, &path, nullptr, 0);
	pollfd pf{p, POLLIN, 0};
	bool queued = e == 0 && poll(&pf, 1, 20000) == 1;
	Check(queued, "a REQ event is pending", ErrName(e));
	close(p);	// the REQ's new id and its event go with the file
	Event ev;
	e = WaitEvent(a, 11 /* REJ_RECEIVED */, &ev);
	Check(e == 0 && ev.resp.u.rej_resp.reason == 28,
	      "close with a REQ pending: the active side gets REJ CONSUMER_DEFINED",
	      ErrName(e) + " reason " + std::to_string(ev.resp.u.rej_resp.reason));
	close(a);
}

void CaseQueueBound(const Port &port)
{
	std::string saved = ReadFile(kMaxEvents);
	if (saved.empty()) {
		Fail("queue bound", std::string("cannot read ") + kMaxEvents);
		return;
	}
	SetMaxEvents("2");
	uint64_t before = Dropped();
	int p = OpenDev(true), a = OpenDev();
	uint32_t lid;
	CreateId(p, 1, &lid);
	Listen(p, lid, 0x7200);
	ib_user_path_rec path = LoopPath(port);
	int sent = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t cid;
		CreateId(a, 100 + i, &cid);
		sent += SendReq(a, cid, 0x7200, &path, nullptr, 0, 0x100 + i) == 0;
	}
	// two REJs for the REQs beyond the bound
	Event ev;
	int rejs = 0;
	for (int i = 0; i < 2; i++)
		rejs += WaitEvent(a, 11, &ev) == 0 && ev.resp.u.rej_resp.reason == 28;
	int reqs = 0;
	while (GetEvent(p, &ev) == 0)
		reqs++;
	uint64_t after = Dropped();
	SetMaxEvents(saved);
	Check(sent == 4 && reqs == 2 && rejs == 2 && after - before == 2,
	      "max_events 2: 2 REQ events queued, 2 REQs rejected and counted",
	      "sent " + std::to_string(sent) + " queued " + std::to_string(reqs) + " rejected " +
		      std::to_string(rejs) + " dropped +" + std::to_string(after - before));
	close(p);
	close(a);
}

// Listeners destroyed while REQs for them arrive: a second thread sends
// REQs while the listener goes, so handlers for it are under way when
// DESTROY_ID runs, which must wait for them before the id's memory goes
// (the debug kernel's KASAN would see a use after free otherwise). Every
// REQ is answered: by a REQ event on a new id (rejected when the passive
// file closes) or by a REJ for an unknown service.
void CaseDestroyUnderLoad(const Port &port)
{
	const int rounds = 10, n = 40;
	int sent = 0, rejs = 0, late = 0;
	for (int round = 0; round < rounds; round++) {
		int p = OpenDev(true), a = OpenDev();
		uint32_t lid;
		uint64_t sid = 0x7500 + round;
		CreateId(p, 1, &lid);
		Listen(p, lid, sid);
		ib_user_path_rec path = LoopPath(port);
		std::atomic<int> count{0};
		std::thread sender([&] {
			for (int i = 0; i < n; i++) {
				uint32_t cid;
				CreateId(a, 200 + i, &cid);
				count += SendReq(a, cid, sid, &path, nullptr, 0, 0x2000 + round * n + i) == 0;
			}
		});
		while (count < n / 4)
			sched_yield();
		DestroyId(p, lid);
		sender.join();
		sent += count;
		late += DestroyId(p, lid) == ENOENT;
		close(p);
		Event ev;
		int r = 0;
		while (r < n && WaitEvent(a, 11, &ev, 20000) == 0)
			r++;
		rejs += r;
		close(a);
	}
	Check(sent == rounds * n && late == rounds && rejs == rounds * n,
	      "listeners destroyed while REQs arrive: every REQ rejected",
	      "sent " + std::to_string(sent) + " REJs " + std::to_string(rejs) + " gone " + std::to_string(late));
}

// DESTROY_ID of a listener while a handler for its REQ sleeps (the
// module's test-only delay_handler_ms): the destroy must wait for the
// handler, whose event then names the new id; freeing the listener's
// memory first would be a use after free (KASAN on the debug kernel).
void CaseDestroyRacesHandler(const Port &port)
{
	const char *knob = "/sys/module/ib_ucm/parameters/delay_handler_ms";
	if (ReadFile(knob).empty()) {
		Fail("destroy waits for a running handler", std::string("no ") + knob);
		return;
	}
	int p = OpenDev(true), a = OpenDev();
	uint32_t lid, cid;
	CreateId(p, 0x77, &lid);
	Listen(p, lid, 0x7600);
	CreateId(a, 1, &cid);
	ib_user_path_rec path = LoopPath(port);
	{
		std::ofstream f(knob);
		f << "400\n";
	}
	int e = SendReq(a, cid, 0x7600, &path, nullptr, 0, 0x3000);
	usleep(150000);	// the REQ's handler is asleep in its delay now
	auto t0 = std::chrono::steady_clock::now();
	int d = DestroyId(p, lid);
	double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	{
		std::ofstream f(knob);
		f << "0\n";
	}
	Event ev;
	int g = GetEvent(p, &ev);
	Check(e == 0 && d == 0 && g == 0 && ev.resp.event == 1 && ev.resp.uid == 0x77 && ev.resp.id != lid,
	      "destroy waits for a running handler (its REQ event names the new id)",
	      "req " + ErrName(e) + " destroy " + ErrName(d) + " event " + ErrName(g) + " after " +
		      std::to_string(int(ms)) + " ms");
	close(p);
	close(a);
}

int Cycles(const Port &port, int n)
{
	int p = OpenDev(), a = OpenDev();
	uint32_t lid;
	CreateId(p, 0x1111, &lid);
	if (int e = Listen(p, lid, 0x7300)) {
		std::printf("cycles: LISTEN %s\n", ErrName(e).c_str());
		return 1;
	}
	auto start = std::chrono::steady_clock::now();
	for (int i = 0; i < n; i++) {
		std::string log;
		std::string err = Connect(p, lid, a, port, 0x7300, false, &log);
		if (!err.empty()) {
			std::printf("cycles: cycle %d failed: %s\n", i, err.c_str());
			return 1;
		}
	}
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	close(p);
	close(a);
	std::printf("cycles: %d connect/disconnect cycles ok (%.1f s)\n", n, s);
	return 0;
}

// N random commands over a few files and ids. Sizes are usually right
// (else the command never gets past the framing), fields random, pointers
// valid, NULL, unmapped or kernel addresses; a third of the REQs go to a
// live loopback listener so that events flow. Nothing is checked but
// that the kernel answers; the VM test checks dmesg and kmemleak.
int Fuzz(const Port &port, long n, unsigned seed)
{
	std::mt19937_64 rng(seed);
	auto rnd = [&](uint64_t m) { return m ? rng() % m : 0; };
	static uint8_t room[4096];
	const uint64_t ptrs[] = {0, 8, 0xffffffffffff0000ULL, uintptr_t(room), uintptr_t(room + 2048),
				 uintptr_t(room + 4096 - 16)};
	ib_user_path_rec path = LoopPath(port);
	std::memcpy(room + 1024, &path, sizeof(path));
	int lfd = OpenDev(true);
	uint32_t lid;
	CreateId(lfd, 1, &lid);
	Listen(lfd, lid, 0x7400);
	std::vector<int> fds;
	for (int i = 0; i < 3; i++)
		fds.push_back(OpenDev(true));
	long errs[256] = {};
	for (long i = 0; i < n; i++) {
		int &fd = fds[rnd(fds.size())];
		if (rnd(500) == 0) {
			close(fd);
			fd = OpenDev(true);
			continue;
		}
		uint8_t cmd[64];
		for (auto &b : cmd)
			b = uint8_t(rng());
		uint32_t op = uint32_t(rnd(20));
		static const uint16_t in[] = {16, 16, 16, 24, 8, 64, 40, 16, 16, 16, 32, 16, 24, 32, 40, 40, 32, 16};
		static const uint16_t out[] = {4, 4, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 144};
		uint16_t i_len = op < 18 ? in[op] : 16, o_len = op < 18 ? out[op] : 0;
		if (rnd(10) == 0)
			i_len = uint16_t(rnd(66));
		if (rnd(10) == 0)
			o_len = uint16_t(rnd(200));
		// ids mostly small, pointers from the list, lengths as they come
		uint32_t id = uint32_t(rnd(6));
		uint64_t p1 = ptrs[rnd(6)], p2 = ptrs[rnd(6)], p3 = ptrs[rnd(6)];
		switch (op) {
		case 0: case 1: case 2: case 17:
			std::memcpy(cmd + 8 * (op == 0), &p1, 8);
			if (op != 0)
				std::memcpy(cmd + 8, &id, 4);
			if (op == 0)
				std::memcpy(cmd, &p2, 8);
			if (op == 17) {
				uint32_t st = uint32_t(rnd(8));
				std::memcpy(cmd + 12, &st, 4);
			}
			break;
		case 5: {
			std::memcpy(cmd, &id, 4);
			uint32_t t = rnd(3) ? 2 : uint32_t(rnd(6));
			std::memcpy(cmd + 8, &t, 4);
			uint64_t sid = htobe64(rnd(3) == 0 ? 0x7400 : rng());
			std::memcpy(cmd + 16, &sid, 8);
			std::memcpy(cmd + 24, &p2, 8);
			uint64_t pp = rnd(2) ? uintptr_t(room + 1024) : p3;
			std::memcpy(cmd + 32, &pp, 8);
			uint64_t alt = rnd(4) ? 0 : p1;
			std::memcpy(cmd + 40, &alt, 8);
			break;
		}
		case 16:
			std::memcpy(cmd, &p1, 8);
			std::memcpy(cmd + 8, &p2, 8);
			std::memcpy(cmd + 16, &p3, 8);
			break;
		default:
			// the id sits at 0 in most, at 8 or 16 in the rest
			std::memcpy(cmd, &id, 4);
			std::memcpy(cmd + 8, &p1, 8);
			std::memcpy(cmd + 16, &p2, 8);
			if (op == 7 || op == 8 || op == 9 || op == 11 || op == 12)
				std::memcpy(cmd + 8, &id, 4), std::memcpy(cmd, &p1, 8);
			break;
		}
		size_t count = 8 + i_len;
		if (rnd(20) == 0)
			count = rnd(100);
		std::vector<uint8_t> buf(8 + 0x10000, 0);
		ib_ucm_cmd_hdr h{op, i_len, o_len};
		std::memcpy(buf.data(), &h, 8);
		std::memcpy(buf.data() + 8, cmd, std::min<size_t>(i_len, 64));
		ssize_t r = write(fd, buf.data(), count);
		errs[r < 0 ? (errno & 0xff) : 0]++;
		// drain the listener now and then
		Event ev;
		if (rnd(8) == 0)
			while (GetEvent(lfd, &ev) == 0)
				if (ev.resp.event == 1 && rnd(2))
					SendRep(lfd, ev.resp.id, 0, 0x999);
	}
	for (int fd : fds)
		close(fd);
	close(lfd);
	std::printf("fuzz: %ld commands (seed %u); answers:", n, seed);
	for (int e = 0; e < 256; e++)
		if (errs[e])
			std::printf(" %s=%ld", ErrName(e).c_str(), errs[e]);
	std::printf("\nfuzz: done\n");
	// the device still answers a simple command
	int fd = OpenDev();
	uint32_t id;
	int e = CreateId(fd, 1, &id);
	close(fd);
	std::printf("fuzz: a fresh file afterwards: %s\n", e ? ErrName(e).c_str() : "ok");
	return e ? 1 : 0;
}

}  // namespace

// LAP/APR (IBA 12.8) over one loopback connection: the framing and the
// bounds of both commands, LAP outside ESTABLISHED, then a LAP answered
// with an accepting APR (each side's INIT_QP_ATTR RTS loads the alternate
// path) and one answered with a refusing APR (the status passes through).
const uint32_t kLapReceived = 13, kAprReceived = 14;

int SendLap(int fd, uint32_t id, const ib_user_path_rec *path, const void *data, uint8_t len)
{
	ib_ucm_lap c{};
	c.id = id;
	c.path = uintptr_t(path);
	c.data = uintptr_t(data);
	c.len = len;
	return Cmd(fd, IB_USER_CM_CMD_SEND_LAP, c);
}

int SendApr(int fd, uint32_t id, uint32_t status, const void *info, uint8_t info_len, const void *data,
	    uint8_t len)
{
	ib_ucm_info c{};
	c.id = id;
	c.status = status;
	c.info = uintptr_t(info);
	c.info_len = info_len;
	c.data = uintptr_t(data);
	c.data_len = len;
	return Cmd(fd, IB_USER_CM_CMD_SEND_APR, c);
}

int InitAttr(int fd, uint32_t id, uint32_t state, ib_uverbs_qp_attr *qa)
{
	ib_ucm_init_qp_attr c{};
	*qa = {};
	c.id = id;
	c.qp_state = state;
	c.response = uintptr_t(qa);
	return Cmd(fd, IB_USER_CM_CMD_INIT_QP_ATTR, c, sizeof(*qa));
}

int InitRts(int fd, uint32_t id, ib_uverbs_qp_attr *qa)
{
	return InitAttr(fd, id, 3 /* RTS */, qa);
}

int NotifyPathMig(int fd, uint32_t id)
{
	ib_ucm_notify n{id, 6 /* IB_EVENT_PATH_MIG */};
	return Cmd(fd, IB_USER_CM_CMD_NOTIFY, n);
}

// After NOTIFY PATH_MIG: RTR's address vector is the alternate path (SL 1)
// and RTS gives the plain RTS attributes, no alternate path left.
std::string CheckMigrated(int fd, uint32_t id, const Port &port)
{
	ib_uverbs_qp_attr qa;
	int e = InitAttr(fd, id, 2 /* RTR */, &qa);
	if (e)
		return "INIT_QP_ATTR RTR " + ErrName(e);
	if (!(qa.qp_attr_mask & (1u << 7)) /* AV */ || qa.ah_attr.dlid != port.lid || qa.ah_attr.sl != 1 ||
	    qa.ah_attr.port_num != 1)
		return "INIT_QP_ATTR RTR: mask " + std::to_string(qa.qp_attr_mask) + " dlid " +
		       std::to_string(qa.ah_attr.dlid) + " sl " + std::to_string(qa.ah_attr.sl) + " port " +
		       std::to_string(qa.ah_attr.port_num);
	e = InitRts(fd, id, &qa);
	if (e)
		return "INIT_QP_ATTR RTS " + ErrName(e);
	const uint32_t alt = (1u << 14) /* ALT_PATH */ | (1u << 18) /* PATH_MIG_STATE */;
	const uint32_t rts = (1u << 9) /* TIMEOUT */ | (1u << 16) /* SQ_PSN */;
	if ((qa.qp_attr_mask & alt) || (qa.qp_attr_mask & rts) != rts)
		return "INIT_QP_ATTR RTS: mask " + std::to_string(qa.qp_attr_mask);
	return "";
}

// The RTS attributes load the alternate path with SL 1 toward our LID.
std::string CheckAlt(int fd, uint32_t id, const Port &port)
{
	ib_uverbs_qp_attr qa;
	int e = InitRts(fd, id, &qa);
	if (e)
		return "INIT_QP_ATTR RTS " + ErrName(e);
	const uint32_t want = 1u /* STATE */ | (1u << 14) /* ALT_PATH */ | (1u << 18) /* PATH_MIG_STATE */;
	if (qa.qp_attr_mask != want || qa.path_mig_state != 1 /* REARM */ || qa.alt_ah_attr.dlid != port.lid ||
	    qa.alt_ah_attr.sl != 1 || qa.alt_port_num != 1)
		return "INIT_QP_ATTR RTS: mask " + std::to_string(qa.qp_attr_mask) + " mig " +
		       std::to_string(qa.path_mig_state) + " alt dlid " + std::to_string(qa.alt_ah_attr.dlid) +
		       " sl " + std::to_string(qa.alt_ah_attr.sl) + " port " + std::to_string(qa.alt_port_num);
	return "";
}

void CaseLap(const Port &port)
{
	int p = OpenDev(), a = OpenDev();
	static uint8_t big[256];
	uint32_t lid, cid, nid;
	Event ev;
	int e;
	CreateId(p, 0x1111, &lid);
	Listen(p, lid, 0x7100);
	CreateId(a, 0xAAAA, &cid);
	ib_user_path_rec path = LoopPath(port), alt = LoopPath(port);
	alt.sl = 1;

	// framing: the sizes are exact
	ib_ucm_lap lap{};
	lap.id = cid;
	lap.path = uintptr_t(&alt);
	for (uint16_t in : {uint16_t(sizeof(lap) - 1), uint16_t(sizeof(lap) + 1)}) {
		e = RawCmd(a, IB_USER_CM_CMD_SEND_LAP, &lap, in, 0, 8 + in);
		Check(e == EINVAL, "LAP with hdr.in " + std::to_string(in) + " -> EINVAL", ErrName(e));
	}
	ib_ucm_info apr{};
	apr.id = cid;
	for (uint16_t in : {uint16_t(sizeof(apr) - 1), uint16_t(sizeof(apr) + 1)}) {
		e = RawCmd(a, IB_USER_CM_CMD_SEND_APR, &apr, in, 0, 8 + in);
		Check(e == EINVAL, "APR with hdr.in " + std::to_string(in) + " -> EINVAL", ErrName(e));
	}
	// not connected
	e = SendLap(a, cid, &alt, nullptr, 0);
	Check(e == EINVAL, "LAP on an idle id -> EINVAL", ErrName(e));
	e = SendApr(a, cid, 0, nullptr, 0, nullptr, 0);
	Check(e == EINVAL, "APR on an idle id -> EINVAL", ErrName(e));
	e = SendLap(a, 0x7fffffff, &alt, nullptr, 0);
	Check(e == ENOENT, "LAP on an unknown id -> ENOENT", ErrName(e));

	// connect
	const char hello[] = "lap";
	bool up = SendReq(a, cid, 0x7100, &path, hello, sizeof(hello)) == 0 && WaitEvent(p, 1, &ev) == 0;
	nid = ev.resp.id;
	up = up && SendRep(p, nid, 0xBBBB, 0x5678) == 0 && WaitEvent(a, 3, &ev) == 0 &&
	     SendPriv(a, IB_USER_CM_CMD_SEND_RTU, cid) == 0 && WaitEvent(p, 4, &ev) == 0;
	Check(up, "LAP: the connection is up");
	if (!up) {
		close(p);
		close(a);
		return;
	}
	e = SendLap(a, cid, &alt, big, 169);
	Check(e == EINVAL, "LAP with 169 bytes -> EINVAL", ErrName(e));
	e = SendLap(a, cid, nullptr, nullptr, 0);
	Check(e == EINVAL, "LAP without a path -> EINVAL", ErrName(e));
	e = SendLap(a, cid, reinterpret_cast<const ib_user_path_rec *>(16), nullptr, 0);
	Check(e == EFAULT, "LAP with the path at address 16 -> EFAULT", ErrName(e));
	e = SendApr(p, nid, 0, nullptr, 0, nullptr, 0);
	Check(e == EINVAL, "APR with no LAP received -> EINVAL", ErrName(e));
	e = NotifyPathMig(a, cid);
	Check(e == EINVAL, "NOTIFY PATH_MIG with no alternate path -> EINVAL", ErrName(e));

	// LAP -> accepting APR
	const char lapdata[] = "alternate, please";
	e = SendLap(a, cid, &alt, lapdata, sizeof(lapdata));
	Check(e == 0, "SEND_LAP on an established id", ErrName(e));
	e = SendLap(a, cid, &alt, nullptr, 0);
	Check(e == EINVAL, "a second LAP while one is out -> EINVAL", ErrName(e));
	e = WaitEvent(p, kLapReceived, &ev);
	Check(e == 0 && ev.resp.id == nid && ev.resp.uid == 0xBBBB &&
		      (ev.resp.present & IB_UCM_PRES_ALTERNATE) && (ev.resp.present & IB_UCM_PRES_DATA) &&
		      ntohs(ev.resp.u.lap_resp.path.dlid) == port.lid && ev.resp.u.lap_resp.path.sl == 1 &&
		      !std::memcmp(ev.data, lapdata, sizeof(lapdata)),
	      "LAP_RECEIVED carries the path and the private data",
	      ErrName(e) + " present " + std::to_string(ev.resp.present));
	std::string err = CheckAlt(p, nid, port);
	Check(err.empty(), "the LAP receiver's RTS loads the alternate path", err);
	e = SendApr(p, nid, 0, big, 73, nullptr, 0);
	Check(e == EINVAL, "APR with a 73-byte info -> EINVAL", ErrName(e));
	e = SendApr(p, nid, 0, nullptr, 0, big, 149);
	Check(e == EINVAL, "APR with 149 bytes -> EINVAL", ErrName(e));
	const char info[] = "info", aprdata[] = "accepted";
	e = SendApr(p, nid, 0, info, sizeof(info), aprdata, sizeof(aprdata));
	Check(e == 0, "SEND_APR success", ErrName(e));
	e = WaitEvent(a, kAprReceived, &ev);
	Check(e == 0 && ev.resp.id == cid && ev.resp.u.apr_resp.status == 0 &&
		      (ev.resp.present & IB_UCM_PRES_INFO) && (ev.resp.present & IB_UCM_PRES_DATA) &&
		      !std::memcmp(ev.info, info, sizeof(info)) && !std::memcmp(ev.data, aprdata, sizeof(aprdata)),
	      "APR_RECEIVED carries the status, the info and the private data",
	      ErrName(e) + " status " + std::to_string(ev.resp.u.apr_resp.status));
	err = CheckAlt(a, cid, port);
	Check(err.empty(), "the LAP sender's RTS loads the alternate path after the APR", err);

	// the QPs migrated: the alternate path is the primary one
	e = NotifyPathMig(a, cid);
	Check(e == 0, "NOTIFY PATH_MIG on the LAP sender", ErrName(e));
	err = CheckMigrated(a, cid, port);
	Check(err.empty(), "after PATH_MIG the sender's RTR is the alternate path, RTS has none left", err);
	e = NotifyPathMig(a, cid);
	Check(e == EINVAL, "a second NOTIFY PATH_MIG -> EINVAL", ErrName(e));
	e = NotifyPathMig(p, nid);
	Check(e == 0, "NOTIFY PATH_MIG on the LAP receiver", ErrName(e));
	err = CheckMigrated(p, nid, port);
	Check(err.empty(), "after PATH_MIG the receiver's RTR is the alternate path, RTS has none left", err);

	// LAP -> refusing APR
	e = SendLap(a, cid, &alt, nullptr, 0);
	bool got = e == 0 && WaitEvent(p, kLapReceived, &ev) == 0;
	e = SendApr(p, nid, 3 /* REJECT */, nullptr, 0, nullptr, 0);
	got = got && e == 0 && WaitEvent(a, kAprReceived, &ev) == 0;
	Check(got && ev.resp.u.apr_resp.status == 3, "a refusing APR's status reaches the LAP sender",
	      ErrName(e) + " status " + std::to_string(ev.resp.u.apr_resp.status));

	SendPriv(a, IB_USER_CM_CMD_SEND_DREQ, cid);
	if (WaitEvent(p, 7, &ev) == 0)
		SendPriv(p, IB_USER_CM_CMD_SEND_DREP, nid);
	WaitEvent(a, 8, &ev);
	DestroyId(p, nid);
	DestroyId(a, cid);
	close(p);
	close(a);
}

int main(int argc, char **argv)
{
	long fuzz = -1, cycles = -1;
	unsigned seed = 1;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--device" && i + 1 < argc)
			g_device = argv[++i];
		else if (a == "--fuzz" && i + 1 < argc)
			fuzz = std::atol(argv[++i]);
		else if (a == "--seed" && i + 1 < argc)
			seed = unsigned(std::atol(argv[++i]));
		else if (a == "--cycles" && i + 1 < argc)
			cycles = std::atol(argv[++i]);
		else {
			std::fprintf(stderr, "usage: %s [--device PATH] [--fuzz N [--seed S]] [--cycles N]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	Port port = ReadPort();
	if (!port.lid) {
		std::printf("FAIL the port has no LID (is it ACTIVE?)\n");
		return 1;
	}
	if (fuzz >= 0)
		return Fuzz(port, fuzz, seed);
	if (cycles >= 0)
		return Cycles(port, int(cycles));

	CaseSysfs();
	CaseFraming();
	CaseIds();
	CasePrivateData(port);
	CaseEventEmpty();
	CaseCredentials();
	CaseLoopback(port);
	CaseLap(port);
	CaseClosePending(port);
	CaseQueueBound(port);
	CaseDestroyUnderLoad(port);
	CaseDestroyRacesHandler(port);
	std::printf("%d passed, %d failed\n", g_pass, g_fail);
	return g_fail ? 1 : 0;
}
