// SPDX-License-Identifier: GPL-2.0
// ibcm_sidr: SIDR (IBA 12.11) through ib_ucm (libibcmxx), then UD
// datagrams to the QP it resolved, every byte checked by the receiver.
//
//   server: ibcm_sidr --dev mthca0 --server [--sid S] [--count N] [--size B]
//   client: ibcm_sidr --dev mthca0 (--dgid G | --dlid L) [--no-sa] [--sid S]
//           [--count N] [--size B] [--sidr-timeout-ms T] [--cm-retries R]
//
// The server makes a UD QP, posts a receive for each of the --count
// datagrams, listens on the service and answers the first SIDR_REQ with
// its QPN and QKey (status "valid"). The client's SIDR_REQ carries its own
// UD QPN (4 bytes, big endian, in the private data); once the SIDR_REP is
// "valid" it sends --count datagrams of --size bytes there. The server
// checks every datagram: its length, that it comes from the QPN the
// SIDR_REQ named, its sequence number (each once) and every payload byte.
// Exit status: 0 ok, 1 error, 2 usage, 3 wrong data, 4 the SIDR_REP status
// was not "valid" or the SIDR_REQ went unanswered (SidrReqError).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "common.h"
#include "traffic.h"

using namespace ibcm;
using namespace ibcm::tools;
using namespace std::chrono;

namespace {

constexpr std::uint32_t kServerQkey = 0x11223344; // high bit clear: not a controlled QKey
constexpr std::uint32_t kClientQkey = 0x55667788;
constexpr std::size_t kGrh = 40; // a UD receive starts with room for the GRH
constexpr int kServerSide = 0, kClientSide = 1;

struct Config {
	std::string dev;
	int port = 1;
	std::uint64_t sid = kDefaultServiceId;
	std::uint64_t count = 64;
	std::size_t size = 256;
	milliseconds timeout{30000};
};

// One UD QP with its PD, CQ and a registered buffer of @slots slots of
// GRH + @size bytes; members go in reverse order.
class UdQp {
public:
	UdQp(ibv_context *ctx, int port, std::uint32_t qkey, std::size_t size, int slots)
		: port_(port), slot_size_(kGrh + size), buf_(static_cast<std::size_t>(slots) * slot_size_)
	{
		pd_.reset(ibv_alloc_pd(ctx));
		if (!pd_)
			throw std::runtime_error("ibv_alloc_pd failed");
		mr_.reset(ibv_reg_mr(pd_.get(), buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE));
		if (!mr_)
			throw std::runtime_error("ibv_reg_mr failed");
		cq_.reset(ibv_create_cq(ctx, slots + 1, nullptr, nullptr, 0));
		if (!cq_)
			throw std::runtime_error("ibv_create_cq failed");
		ibv_qp_init_attr ia{};
		ia.send_cq = cq_.get();
		ia.recv_cq = cq_.get();
		ia.qp_type = IBV_QPT_UD;
		ia.cap.max_send_wr = static_cast<std::uint32_t>(slots);
		ia.cap.max_recv_wr = static_cast<std::uint32_t>(slots);
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		qp_.reset(ibv_create_qp(pd_.get(), &ia));
		if (!qp_)
			throw std::runtime_error("ibv_create_qp(UD) failed");
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = static_cast<std::uint8_t>(port);
		a.qkey = qkey;
		modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		a = {};
		a.qp_state = IBV_QPS_RTR;
		modify(a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = random_psn();
		modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}

	std::uint32_t qpn() const noexcept { return qp_->qp_num; }
	ibv_cq *cq() const noexcept { return cq_.get(); }
	std::uint8_t *slot(std::size_t i) noexcept { return buf_.data() + i * slot_size_; }

	void post_recv(std::size_t i)
	{
		ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot(i)), static_cast<std::uint32_t>(slot_size_),
			    mr_->lkey};
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp_.get(), &wr, &bad))
			throw std::runtime_error("ibv_post_recv failed");
	}

	// Sends the payload of slot @i (after its GRH room) to @qpn/@qkey.
	void post_send(std::size_t i, std::size_t len, ibv_ah *ah, std::uint32_t qpn, std::uint32_t qkey)
	{
		ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot(i) + kGrh), static_cast<std::uint32_t>(len),
			    mr_->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = qkey;
		if (ibv_post_send(qp_.get(), &wr, &bad))
			throw std::runtime_error("ibv_post_send failed");
	}

	ibv_pd *pd() const noexcept { return pd_.get(); }
	int port() const noexcept { return port_; }

private:
	void modify(ibv_qp_attr &a, int mask)
	{
		if (ibv_modify_qp(qp_.get(), &a, mask))
			throw std::runtime_error("ibv_modify_qp(UD) failed");
	}

	int port_;
	std::size_t slot_size_;
	std::vector<std::uint8_t> buf_;
	PdPtr pd_;
	MrPtr mr_;
	CqPtr cq_;
	QpPtr qp_;
};

using AhPtr = std::unique_ptr<ibv_ah, VerbsDeleter<ibv_ah, ibv_destroy_ah>>;

// Datagram @seq: its sequence number (8 bytes, little endian), then the
// pattern of the pingpong's data phase for the client's side.
void fill(std::uint8_t *p, std::size_t size, std::uint64_t seq)
{
	for (std::size_t j = 0; j < size; j++)
		p[j] = j < 8 ? static_cast<std::uint8_t>(seq >> (8 * j)) : pattern(seq, j, kClientSide);
}

std::uint64_t seq_of(const std::uint8_t *p)
{
	std::uint64_t v = 0;
	for (std::size_t j = 0; j < 8; j++)
		v |= static_cast<std::uint64_t>(p[j]) << (8 * j);
	return v;
}

// One completion, or throws after @timeout without any.
ibv_wc poll_one(ibv_cq *cq, milliseconds timeout)
{
	const auto deadline = steady_clock::now() + timeout;
	ibv_wc wc{};
	for (;;) {
		const int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			throw std::runtime_error("ibv_poll_cq failed");
		if (n == 1)
			break;
		if (steady_clock::now() > deadline)
			throw std::runtime_error("no completion for " + std::to_string(timeout.count()) + " ms");
	}
	if (wc.status != IBV_WC_SUCCESS)
		throw std::runtime_error(std::string("completion error: ") + ibv_wc_status_str(wc.status));
	return wc;
}

int run_server(const Config &c)
{
	ContextPtr ctx = open_verbs(c.dev);
	const int slots = static_cast<int>(c.count);
	UdQp qp(ctx.get(), c.port, kServerQkey, c.size, slots);
	for (std::size_t i = 0; i < c.count; i++)
		qp.post_recv(i);
	Device cm = Device::open(c.dev);
	Listener listener = cm.listen(c.sid);
	std::printf("ibcm_sidr: listening on service 0x%016llx, UD qpn 0x%06x qkey 0x%08x\n",
		    static_cast<unsigned long long>(c.sid), qp.qpn(), kServerQkey);
	std::fflush(stdout);

	SidrReqReceived req = wait_for<SidrReqReceived>(cm, listener.handle(), c.timeout);
	if (req.private_data.size() < 4)
		throw std::runtime_error("SIDR_REQ without the client's QPN");
	const std::uint32_t peer_qpn = static_cast<std::uint32_t>(req.private_data[0]) << 24 |
				       static_cast<std::uint32_t>(req.private_data[1]) << 16 |
				       static_cast<std::uint32_t>(req.private_data[2]) << 8 | req.private_data[3];
	SidrRepParams rep;
	rep.qpn = qp.qpn();
	rep.qkey = kServerQkey;
	rep.status = 0;
	req.conn.sidr_rep(rep);
	std::printf("ibcm_sidr: SIDR_REQ on port %u pkey 0x%04x from qpn 0x%06x answered: qpn 0x%06x qkey 0x%08x\n",
		    req.port, req.pkey, peer_qpn, rep.qpn, rep.qkey);
	std::fflush(stdout);

	std::vector<bool> seen(c.count);
	for (std::uint64_t got = 0; got < c.count; got++) {
		const ibv_wc wc = poll_one(qp.cq(), c.timeout);
		const std::uint8_t *p = qp.slot(wc.wr_id) + kGrh;
		if (wc.byte_len != kGrh + c.size) {
			std::fprintf(stderr, "datagram %llu: %u bytes, want %zu\n", static_cast<unsigned long long>(got),
				     wc.byte_len, kGrh + c.size);
			return kMismatch;
		}
		if (wc.src_qp != peer_qpn) {
			std::fprintf(stderr, "datagram %llu from qpn 0x%06x, want 0x%06x\n",
				     static_cast<unsigned long long>(got), wc.src_qp, peer_qpn);
			return kMismatch;
		}
		const std::uint64_t seq = seq_of(p);
		if (seq >= c.count || seen[seq]) {
			std::fprintf(stderr, "datagram %llu: sequence number %llu unexpected\n",
				     static_cast<unsigned long long>(got), static_cast<unsigned long long>(seq));
			return kMismatch;
		}
		seen[seq] = true;
		for (std::size_t j = 8; j < c.size; j++) {
			if (p[j] != pattern(seq, j, kClientSide)) {
				std::fprintf(stderr, "datagram %llu byte %zu: 0x%02x, want 0x%02x\n",
					     static_cast<unsigned long long>(seq), j, p[j], pattern(seq, j, kClientSide));
				return kMismatch;
			}
		}
	}
	std::printf("ibcm_sidr: server: %llu datagrams of %zu bytes from qpn 0x%06x, data verified\n",
		    static_cast<unsigned long long>(c.count), c.size, peer_qpn);
	return 0;
}

int run_client(const Config &c, const Args &args)
{
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	const int depth = static_cast<int>(std::min<std::uint64_t>(c.count, 16));
	UdQp qp(ctx.get(), c.port, kClientQkey, c.size, depth);
	ConnectionId id = cm.create_id();
	SidrReqParams p;
	p.service_id = c.sid;
	p.path = path;
	p.timeout_ms = static_cast<std::uint32_t>(args.num("sidr-timeout-ms", 1000));
	const std::uint64_t retries = args.num("cm-retries", 3);
	if (retries > 15)
		throw UsageError("--cm-retries 0..15");
	p.max_cm_retries = static_cast<std::uint8_t>(retries);
	const std::uint32_t me = qp.qpn();
	p.private_data = {static_cast<std::uint8_t>(me >> 24), static_cast<std::uint8_t>(me >> 16),
			  static_cast<std::uint8_t>(me >> 8), static_cast<std::uint8_t>(me)};
	std::printf("ibcm_sidr: SIDR_REQ for service 0x%016llx to lid %u from qpn 0x%06x\n",
		    static_cast<unsigned long long>(c.sid), path.dlid, me);
	std::fflush(stdout);
	const auto t0 = steady_clock::now();
	id.sidr_req(p);
	SidrRepReceived rep;
	try {
		rep = wait_for<SidrRepReceived>(cm, id.handle(), c.timeout);
	} catch (const CmEventError &e) {
		std::printf("ibcm_sidr: SIDR failed after %.1f ms: %s\n",
			    duration<double, std::milli>(steady_clock::now() - t0).count(), e.what());
		return kCmFailed;
	}
	std::printf("ibcm_sidr: SIDR_REP status %u (%s), qpn 0x%06x, qkey 0x%08x\n", rep.status,
		    sidr_status_name(rep.status).c_str(), rep.qpn, rep.qkey);
	std::fflush(stdout);
	if (rep.status != 0)
		return kCmFailed;

	ibv_ah_attr aa{};
	aa.dlid = path.dlid;
	aa.sl = path.sl;
	aa.port_num = static_cast<std::uint8_t>(c.port);
	AhPtr ah(ibv_create_ah(qp.pd(), &aa));
	if (!ah)
		throw std::runtime_error("ibv_create_ah failed");
	std::uint64_t sent = 0, done = 0;
	while (done < c.count) {
		while (sent < c.count && sent - done < static_cast<std::uint64_t>(depth)) {
			const std::size_t slot = sent % static_cast<std::uint64_t>(depth);
			fill(qp.slot(slot) + kGrh, c.size, sent);
			qp.post_send(slot, c.size, ah.get(), rep.qpn, rep.qkey);
			sent++;
		}
		poll_one(qp.cq(), c.timeout);
		done++;
	}
	std::printf("ibcm_sidr: client: %llu datagrams of %zu bytes sent to qpn 0x%06x\n",
		    static_cast<unsigned long long>(c.count), c.size, rep.qpn);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"server", "no-sa", "help"},
				{"dev", "port", "sid", "dgid", "dlid", "count", "size", "timeout", "sidr-timeout-ms",
				 "cm-retries"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		Config c;
		c.dev = args.str("dev");
		c.port = static_cast<int>(args.num("port", 1));
		c.sid = args.num("sid", kDefaultServiceId);
		c.count = args.num("count", 64);
		c.size = args.num("size", 256);
		c.timeout = milliseconds(args.num("timeout", 30) * 1000);
		// 256 bytes is the smallest MTU a port may have
		if (c.count == 0 || c.count > 4096 || c.size < 8 || c.size > 256)
			throw UsageError("--count 1..4096, --size 8..256");
		return args.has("server") ? run_server(c) : run_client(c, args);
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_sidr: " << e.what() << "\n";
		std::cerr << "usage: ibcm_sidr --dev IBDEV [--port N] --server [--sid S] [--count N] [--size B]\n"
			     "       ibcm_sidr --dev IBDEV [--port N] (--dgid GID | --dlid LID) [--no-sa] [--sid S]\n"
			     "                 [--count N] [--size B] [--sidr-timeout-ms T] [--cm-retries R]\n"
			     "       [--timeout SECONDS]\n";
		return 2;
	} catch (const CmEventError &e) {
		std::cerr << "ibcm_sidr: " << e.what() << "\n";
		return kCmFailed;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_sidr: " << e.what() << "\n";
		return 1;
	}
}
