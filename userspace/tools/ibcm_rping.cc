// SPDX-License-Identifier: GPL-2.0
// ibcm_rping: rping (librdmacm's protocol, rping_wire.h) over ib_ucm
// (libibcmxx), either side. Exit status: 0 ok, 1 error (a malformed REQ or
// advertisement too), 2 usage, 3 the data written back differs from what
// was sent (client).
//
//   client: ibcm_rping --dev mthca0 (--dgid G | --dlid L) [--no-sa]
//           --src-ip A --dst-ip B [--rdma-cm-port P] [--src-port Q]
//           [--count N] [--size S] [--verbose] [--timeout SECONDS]
//   server: ibcm_rping --dev mthca0 --server [--rdma-cm-port P] [--size S]
//           [--verbose] [--timeout SECONDS]
//
// Client, for an upstream `rping -s` on an IPoIB address: the REQ goes to
// rdma_cm's TCP service ID for port P (rping's default 7174) with a
// cma_hdr naming A (ours; any address on the server's IPoIB subnet) and B
// (the server's address). Then, --count times: the source buffer holds
// rping's text for that ping (rping_wire.h) and is advertised; the server
// RDMA READs it and says go ahead; the zeroed sink buffer is advertised;
// the server RDMA WRITEs the text back and says go ahead; the sink must
// equal the source, byte for byte. Then DREQ, and the server's DREP.
// --size must not exceed the server's -S (64 by default on both).
//
// Server, for an upstream `rping -c -a <our IPoIB address>`: listens for
// the same service ID (listen_rdma_cm()), accepts one REQ whose private
// data starts with a cma_hdr (anything else is rejected, "consumer defined"), and per ping:
// receives the source advertisement, RDMA READs it into its buffer of
// --size bytes (at least the client's -S), says go ahead, receives the
// sink advertisement, RDMA WRITEs back what it read up to and including
// the first NUL, says go ahead. It checks only lengths; --verbose prints
// each ping's text ("server ping data: ..."). The client's DREQ ends it:
// DREP, and a summary line with the number of pings.
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>

#include "common.h"
#include "rping_wire.h"

using namespace ibcm;
using namespace ibcm::tools;
using namespace std::chrono;

namespace {

constexpr int kMismatch = 3;
// Control slots of the RcQp: two receives (the server sends a go-ahead per
// advertisement), one send.
constexpr int kRecvSlots = 2, kSendSlot = 2;
constexpr std::uint64_t kSendWr = 1ULL << 63, kRdmaWr = 1ULL << 62;

struct Config {
	std::string dev;
	int port = 1;
	bool server = false;
	std::uint16_t cm_port = kRpingDefaultPort;
	std::uint64_t count = 10;
	std::size_t size = 64;
	bool verbose = false;
	milliseconds timeout{30000};
};

// A registered ping buffer: the client's source and sink, which the server
// reaches by RDMA (@remote), or the server's own, which it READs into and
// WRITEs from.
class PingBuffer {
public:
	PingBuffer(ibv_pd *pd, std::size_t size, bool remote) : mem_(size, 0)
	{
		const int access = IBV_ACCESS_LOCAL_WRITE |
				   (remote ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE : 0);
		mr_.reset(ibv_reg_mr(pd, mem_.data(), size, access));
		if (!mr_)
			throw std::system_error(errno, std::generic_category(), "ibv_reg_mr");
	}
	char *data() noexcept { return mem_.data(); }
	std::size_t size() const noexcept { return mem_.size(); }
	std::uint32_t lkey() const noexcept { return mr_->lkey; }
	RpingInfo info() const
	{
		return {reinterpret_cast<std::uintptr_t>(mem_.data()), mr_->rkey,
			static_cast<std::uint32_t>(mem_.size())};
	}

private:
	std::vector<char> mem_;
	MrPtr mr_;
};

// The control messages on the RcQp (both sides): 16-byte SENDs of an
// advertisement or a go-ahead, one at a time, and the 16-byte receives
// that answer them; the server's RDMA READ and WRITE go through here too.
// Completions are taken in any order: a SEND's may come after the answer.
class Control {
public:
	Control(RcQp &qp, milliseconds timeout) : qp_(qp), timeout_(timeout) {}

	void prime()
	{
		for (int i = 0; i < kRecvSlots; i++)
			qp_.post_recv(i, static_cast<std::uint64_t>(i));
	}

	// SENDs @info (a go-ahead: anything) without waiting.
	void send(const RpingInfo &info)
	{
		const auto bytes = encode_rping_info(info);
		std::memcpy(qp_.slot(kSendSlot), bytes.data(), bytes.size());
		qp_.post_send(kSendSlot, bytes.size(), kSendWr);
		sends_++;
	}

	// The next 16-byte message, as an advertisement; its receive is posted
	// again at once. nullopt if @stop (asked while nothing completes)
	// says so. A completion error, a message of another length or no
	// message within the timeout throws.
	std::optional<RpingInfo> receive(const std::function<bool()> &stop, const std::string &what)
	{
		const std::optional<ibv_wc> wc = next(stop, what + " from the peer");
		if (!wc)
			return std::nullopt;
		if (wc->wr_id == kRdmaWr)
			throw std::runtime_error("an RDMA completion nobody waits for");
		if (wc->byte_len != kRpingInfoSize)
			throw std::runtime_error(what + " of " + std::to_string(wc->byte_len) + " bytes, want 16");
		const int slot = static_cast<int>(wc->wr_id);
		const auto info = decode_rping_info(qp_.slot(slot), wc->byte_len);
		qp_.post_recv(slot, static_cast<std::uint64_t>(slot));
		return info;
	}
	std::optional<RpingInfo> receive(const std::string &what)
	{
		return receive([] { return false; }, what);
	}

	// SENDs @info, then waits for its completion and for the go-ahead.
	void advertise_and_wait(const RpingInfo &info)
	{
		send(info);
		receive("go-ahead");
		if (next([this] { return sends_ == 0; }, "send completion"))
			throw std::runtime_error("an unexpected completion while waiting for a send");
	}

	// An RDMA READ (@write false) or WRITE of @len bytes between @local and
	// the peer's @remote, waited for.
	void rdma(bool write, PingBuffer &local, std::size_t len, const RpingInfo &remote)
	{
		ibv_sge sge{reinterpret_cast<std::uintptr_t>(local.data()), static_cast<std::uint32_t>(len),
			    local.lkey()};
		ibv_send_wr wr{};
		wr.wr_id = kRdmaWr;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = remote.addr;
		wr.wr.rdma.rkey = remote.rkey;
		ibv_send_wr *bad = nullptr;
		if (const int rc = ibv_post_send(qp_.qp(), &wr, &bad))
			throw std::system_error(rc, std::generic_category(), "ibv_post_send (RDMA)");
		const std::optional<ibv_wc> wc =
			next([] { return false; }, std::string("RDMA ") + (write ? "WRITE" : "READ") + " completion");
		if (wc->wr_id != kRdmaWr)
			throw std::runtime_error("a message from the peer before our RDMA completed");
	}

private:
	// The next completion that is not one of our SENDs' (those are counted
	// off), or nullopt once @stop says so while nothing completes. An
	// error status, or nothing for the timeout, throws (@what names it).
	std::optional<ibv_wc> next(const std::function<bool()> &stop, const std::string &what)
	{
		for (auto last = steady_clock::now();;) {
			ibv_wc wc;
			const int n = ibv_poll_cq(qp_.cq(), 1, &wc);
			if (n < 0)
				throw std::runtime_error("ibv_poll_cq failed");
			if (n == 0) {
				if (stop())
					return std::nullopt;
				if (steady_clock::now() - last > timeout_)
					throw std::runtime_error("no " + what);
				continue;
			}
			last = steady_clock::now();
			if (wc.status != IBV_WC_SUCCESS)
				throw std::runtime_error(std::string("completion error: ") + ibv_wc_status_str(wc.status));
			if (wc.wr_id == kSendWr) {
				sends_--;
				continue;
			}
			return wc;
		}
	}

	RcQp &qp_;
	milliseconds timeout_;
	int sends_ = 0;
};

int run_client(const Config &c, const Args &args)
{
	const auto src = IpAddress::parse(args.str("src-ip")), dst = IpAddress::parse(args.str("dst-ip"));
	if (!src || !dst)
		throw UsageError("--src-ip and --dst-ip are needed (IPv4 or IPv6)");
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	RcQp qp(ctx.get(), c.port, 4, kRpingInfoSize, kRecvSlots + 1);
	PingBuffer source(qp.pd(), c.size, true), sink(qp.pd(), c.size, true);
	Control ctl(qp, c.timeout);

	ConnectionId conn = cm.create_id();
	ReqParams req;
	req.service_id = rdma_cm_service_id(PortSpace::tcp, c.cm_port);
	req.qpn = qp.qpn();
	req.psn = random_psn();
	req.primary_path = path;
	// The server RDMA READs our source: it needs an initiator depth, which
	// rdma_cm takes from our responder resources.
	req.responder_resources = 1;
	req.initiator_depth = 1;
	req.retry_count = 7;
	req.rnr_retry_count = 7;
	req.private_data = cma_req_private_data({*src, *dst, static_cast<std::uint16_t>(args.num("src-port", 0))});
	conn.connect(req);
	RepReceived rep = wait_for<RepReceived>(cm, conn.handle(), c.timeout);
	qp.modify(conn, IBV_QPS_INIT);
	ctl.prime();
	qp.modify(conn, IBV_QPS_RTR);
	qp.modify(conn, IBV_QPS_RTS);
	conn.rtu();
	std::printf("ibcm_rping: connected to %s port %u (qpn 0x%06x)\n", dst->to_string().c_str(), c.cm_port,
		    rep.remote_qpn);
	std::fflush(stdout);

	const auto t0 = steady_clock::now();
	for (std::uint64_t ping = 0; ping < c.count; ping++) {
		const std::vector<char> text = rping_ping_data(static_cast<int>(ping), c.size);
		std::memcpy(source.data(), text.data(), c.size);
		std::memset(sink.data(), 0, c.size);
		ctl.advertise_and_wait(source.info());
		ctl.advertise_and_wait(sink.info());
		if (std::memcmp(sink.data(), text.data(), c.size) != 0) {
			std::size_t at = 0;
			while (sink.data()[at] == text[at])
				at++;
			std::fprintf(stderr, "ibcm_rping: ping %llu: byte %zu came back as 0x%02x, sent 0x%02x\n",
				     static_cast<unsigned long long>(ping), at, static_cast<unsigned char>(sink.data()[at]),
				     static_cast<unsigned char>(text[at]));
			return kMismatch;
		}
		if (c.verbose)
			std::printf("ping data: %s\n", sink.data());
	}
	const double secs = duration<double>(steady_clock::now() - t0).count();
	disconnect_and_drain(cm, conn, c.timeout);
	std::printf("ibcm_rping: %llu pings of %zu bytes echoed and verified in %.3f s, disconnected\n",
		    static_cast<unsigned long long>(c.count), c.size, secs);
	return 0;
}

int run_server(const Config &c)
{
	ContextPtr ctx = open_verbs(c.dev);
	const ibv_port_attr pa = query_port(ctx.get(), c.port);
	Device cm = Device::open(c.dev);
	const std::uint64_t sid = rdma_cm_service_id(PortSpace::tcp, c.cm_port);
	Listener listener = listen_rdma_cm(cm, c.cm_port);
	std::printf("ibcm_rping: listening on port %u (service 0x%016llx), lid %u\n", c.cm_port,
		    static_cast<unsigned long long>(sid), pa.lid);
	std::fflush(stdout);

	ReqReceived req = wait_for<ReqReceived>(cm, listener.handle(), c.timeout);
	ConnectionId conn = std::move(req.conn);
	const std::string who = describe_cma(req.private_data);
	if (who.empty()) {
		conn.reject(kRejConsumerDefined);
		throw std::runtime_error("a REQ without a cma_hdr (" + std::to_string(req.private_data.size()) +
					 " bytes of private data): not an rdma_cm client; rejected");
	}
	std::printf("ibcm_rping: REQ from %s\n", who.c_str());
	RcQp qp(ctx.get(), c.port, 4, kRpingInfoSize, kRecvSlots + 1);
	PingBuffer buf(qp.pd(), c.size, false);
	Control ctl(qp, c.timeout);
	qp.modify(conn, IBV_QPS_INIT);
	ctl.prime();
	// We RDMA READ the client's source: our initiator depth is the
	// client's responder resources.
	const RepParams rep = passive_rep(qp, conn, req);
	if (rep.initiator_depth == 0)
		std::printf("ibcm_rping: the REQ offers no responder resources: the RDMA READs will fail\n");
	conn.accept(rep);
	wait_for<Established>(cm, conn.handle(), c.timeout);
	qp.modify(conn, IBV_QPS_RTS);
	std::printf("ibcm_rping: connected (qpn 0x%06x)\n", req.remote_qpn);
	std::fflush(stdout);

	// The client's DREQ, looked for while no advertisement comes.
	const auto dreq_arrived = [&] {
		std::optional<Event> ev = cm.next_event(milliseconds(0));
		if (!ev || header(*ev).id != conn.handle() || std::holds_alternative<MraReceived>(*ev))
			return false;
		if (!std::holds_alternative<DreqReceived>(*ev))
			throw std::runtime_error(describe_unexpected(*ev));
		return true;
	};
	const auto t0 = steady_clock::now();
	std::uint64_t pings = 0;
	for (;; pings++) {
		const std::optional<RpingInfo> src = ctl.receive(dreq_arrived, "source advertisement");
		if (!src)
			break;
		if (const std::string bad = rping_adv_problem(*src, buf.size()); !bad.empty())
			throw std::runtime_error("ping " + std::to_string(pings) + ": source: " + bad);
		std::memset(buf.data(), 0, buf.size());
		ctl.rdma(false, buf, src->size, *src);
		const std::size_t len = rping_echo_length(buf.data(), src->size);
		if (c.verbose) // the text, without its NUL
			std::printf("server ping data: %.*s\n", static_cast<int>(len && !buf.data()[len - 1] ? len - 1 : len),
				    buf.data());
		ctl.send({});
		const std::optional<RpingInfo> sink = ctl.receive("sink advertisement");
		if (const std::string bad = rping_adv_problem(*sink, buf.size()); !bad.empty())
			throw std::runtime_error("ping " + std::to_string(pings) + ": sink: " + bad);
		if (sink->size < len)
			throw std::runtime_error("ping " + std::to_string(pings) + ": a sink of " +
						 std::to_string(sink->size) + " bytes for " + std::to_string(len));
		ctl.rdma(true, buf, len, *sink);
		ctl.send({});
	}
	const double secs = duration<double>(steady_clock::now() - t0).count();
	conn.drep();
	drain_timewait(cm, conn);
	std::printf("ibcm_rping: server done, %llu pings in %.3f s, the client disconnected\n",
		    static_cast<unsigned long long>(pings), secs);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"server", "no-sa", "verbose", "help"},
				{"dev", "port", "rdma-cm-port", "src-ip", "dst-ip", "src-port", "dgid", "dlid", "count",
				 "size", "timeout"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		Config c;
		c.dev = args.str("dev");
		c.port = static_cast<int>(args.num("port", 1));
		c.server = args.has("server");
		const auto p = args.num("rdma-cm-port", kRpingDefaultPort);
		if (p > 0xffff)
			throw UsageError("--rdma-cm-port: 0..65535");
		c.cm_port = static_cast<std::uint16_t>(p);
		c.count = args.num("count", 10);
		c.size = args.num("size", 64);
		c.verbose = args.has("verbose");
		c.timeout = milliseconds(args.num("timeout", 30) * 1000);
		if (c.size < kRpingMinSize || c.size > kRpingMaxSize || c.count == 0 || c.count > 0x7fffffff)
			throw UsageError("--size 26..65535, --count >= 1");
		return c.server ? run_server(c) : run_client(c, args);
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_rping: " << e.what() << "\n";
		std::cerr << "usage: ibcm_rping --dev IBDEV [--port N] (--dgid GID | --dlid LID) [--no-sa]\n"
			     "                  --src-ip A --dst-ip B [--rdma-cm-port P] [--src-port Q]\n"
			     "                  [--count N] [--size BYTES] [--verbose] [--timeout SECONDS]\n"
			     "       ibcm_rping --dev IBDEV [--port N] --server [--rdma-cm-port P] [--size BYTES]\n"
			     "                  [--verbose] [--timeout SECONDS]\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_rping: " << e.what() << "\n";
		return 1;
	}
}
