// SPDX-License-Identifier: GPL-2.0
// ibcm_rping: an rping client over ib_ucm (libibcmxx), for an upstream
// `rping -s` (librdmacm) on an IPoIB address. Exit status: 0 ok, 1 error,
// 2 usage, 3 the data written back differs from what was sent.
//
//   ibcm_rping --dev mthca0 (--dgid G | --dlid L) [--no-sa]
//              --src-ip A --dst-ip B [--rdma-cm-port P] [--src-port Q]
//              [--count N] [--size S] [--verbose] [--timeout SECONDS]
//
// The REQ goes to rdma_cm's TCP service ID for port P (rping's default
// 7174) with a cma_hdr naming A (ours; any address on the server's IPoIB
// subnet) and B (the server's address). Then, --count times: the source
// buffer holds rping's text for that ping (rping_wire.h) and is advertised;
// the server RDMA READs it and says go ahead; the zeroed sink buffer is
// advertised; the server RDMA WRITEs the text back and says go ahead; the
// sink must equal the source, byte for byte. Then DREQ, and the server's
// DREP. --size must not exceed the server's -S (64 by default on both).
#include <cstdio>
#include <cstring>
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
constexpr std::uint64_t kSendWr = 1ULL << 63;

struct Config {
	std::string dev;
	int port = 1;
	std::uint16_t cm_port = kRpingDefaultPort;
	std::uint64_t count = 10;
	std::size_t size = 64;
	bool verbose = false;
	milliseconds timeout{30000};
};

// One buffer the server reaches by RDMA (the source or the sink).
class RemoteBuffer {
public:
	RemoteBuffer(ibv_pd *pd, std::size_t size) : mem_(size, 0)
	{
		const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		mr_.reset(ibv_reg_mr(pd, mem_.data(), size, access));
		if (!mr_)
			throw std::system_error(errno, std::generic_category(), "ibv_reg_mr");
	}
	char *data() noexcept { return mem_.data(); }
	RpingInfo info() const
	{
		return {reinterpret_cast<std::uintptr_t>(mem_.data()), mr_->rkey,
			static_cast<std::uint32_t>(mem_.size())};
	}

private:
	std::vector<char> mem_;
	MrPtr mr_;
};

// Posts and polls the control messages: one SEND of an advertisement at a
// time, answered by one 16-byte go-ahead.
class Control {
public:
	Control(RcQp &qp, milliseconds timeout) : qp_(qp), timeout_(timeout) {}

	void prime()
	{
		for (int i = 0; i < kRecvSlots; i++)
			qp_.post_recv(i, static_cast<std::uint64_t>(i));
	}

	// SENDs @info, then waits for its completion and for the go-ahead.
	void advertise_and_wait(const RpingInfo &info)
	{
		const auto bytes = encode_rping_info(info);
		std::memcpy(qp_.slot(kSendSlot), bytes.data(), bytes.size());
		qp_.post_send(kSendSlot, bytes.size(), kSendWr);
		bool sent = false, answered = false;
		auto last = steady_clock::now();
		while (!sent || !answered) {
			ibv_wc wc[4];
			const int n = ibv_poll_cq(qp_.cq(), 4, wc);
			if (n < 0)
				throw std::runtime_error("ibv_poll_cq failed");
			if (n == 0) {
				if (steady_clock::now() - last > timeout_)
					throw std::runtime_error(std::string("no ") + (sent ? "go-ahead" : "send completion") +
								 " from the server");
				continue;
			}
			last = steady_clock::now();
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					throw std::runtime_error(std::string("completion error: ") +
								 ibv_wc_status_str(wc[i].status));
				if (wc[i].wr_id == kSendWr) {
					sent = true;
					continue;
				}
				if (wc[i].byte_len != kRpingInfoSize)
					throw std::runtime_error("go-ahead of " + std::to_string(wc[i].byte_len) +
								 " bytes, want 16");
				if (answered)
					throw std::runtime_error("a second go-ahead for one advertisement");
				answered = true;
				const int slot = static_cast<int>(wc[i].wr_id);
				qp_.post_recv(slot, static_cast<std::uint64_t>(slot));
			}
		}
	}

private:
	RcQp &qp_;
	milliseconds timeout_;
};

void finish_disconnect(Device &cm, ConnectionId &conn, milliseconds timeout)
{
	bool dreq_sent = true;
	try {
		conn.disconnect();
	} catch (const std::system_error &) {
		dreq_sent = false; // the server disconnected first
	}
	const auto deadline = steady_clock::now() + timeout;
	for (;;) {
		if (steady_clock::now() > deadline)
			throw std::runtime_error("no DREP from the server");
		std::optional<Event> ev = cm.next_event(timeout);
		if (!ev || header(*ev).id != conn.handle())
			continue;
		if (std::holds_alternative<DrepReceived>(*ev) && dreq_sent)
			break;
		if (std::holds_alternative<DreqReceived>(*ev)) {
			try {
				conn.drep();
			} catch (const std::system_error &) {
				// both DREQs crossed: ib_cm has gone to timewait
			}
			break;
		}
		if (std::holds_alternative<MraReceived>(*ev))
			continue;
		throw std::runtime_error(describe_unexpected(*ev));
	}
	try {
		wait_for<TimewaitExit>(cm, conn.handle(), milliseconds(5000));
	} catch (const std::exception &) {
		// timewait is the kernel's business
	}
}

int run(const Config &c, const Args &args)
{
	const auto src = IpAddress::parse(args.str("src-ip")), dst = IpAddress::parse(args.str("dst-ip"));
	if (!src || !dst)
		throw UsageError("--src-ip and --dst-ip are needed (IPv4 or IPv6)");
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	RcQp qp(ctx.get(), c.port, 4, kRpingInfoSize, kRecvSlots + 1);
	RemoteBuffer source(qp.pd(), c.size), sink(qp.pd(), c.size);
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
	finish_disconnect(cm, conn, c.timeout);
	std::printf("ibcm_rping: %llu pings of %zu bytes echoed and verified in %.3f s, disconnected\n",
		    static_cast<unsigned long long>(c.count), c.size, secs);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"no-sa", "verbose", "help"},
				{"dev", "port", "rdma-cm-port", "src-ip", "dst-ip", "src-port", "dgid", "dlid", "count",
				 "size", "timeout"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		Config c;
		c.dev = args.str("dev");
		c.port = static_cast<int>(args.num("port", 1));
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
		return run(c, args);
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_rping: " << e.what() << "\n";
		std::cerr << "usage: ibcm_rping --dev IBDEV [--port N] (--dgid GID | --dlid LID) [--no-sa]\n"
			     "                  --src-ip A --dst-ip B [--rdma-cm-port P] [--src-port Q]\n"
			     "                  [--count N] [--size BYTES] [--verbose] [--timeout SECONDS]\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_rping: " << e.what() << "\n";
		return 1;
	}
}
