// SPDX-License-Identifier: GPL-2.0
// ibcm_pingpong: an RC connection set up through ib_ucm (libibcmxx), then
// --iters SEND messages of --size bytes each way, every byte checked, and a
// DREQ/DREP disconnect. Exit status: 0 ok, 1 error, 2 usage, 3 data mismatch,
// 4 the connect failed by a CM event (a REJ, REQ_ERROR after the retries):
// the client prints "connect failed after <ms> ms: <event> (reason/status)".
//
// --cm-timeout T and --cm-retries N set the REQ's remote CM response
// timeout (4.096 us * 2^T) and MaxCMRetries; the client prints the time it
// waits for each try (2 * PacketLifeTime + that timeout).
//
//   server: ibcm_pingpong --dev mthca0 --server [--sid S | --rdma-cm-port P] [--echo-of-last]
//   client: ibcm_pingpong --dev mthca0 (--dgid G | --dlid L) [--no-sa]
//           [--sid S | --rdma-cm-port P --src-ip A --dst-ip B] [--no-verify]
//           [--cm-timeout T] [--cm-retries N]
//
// --rdma-cm-port P uses the rdma_cm service ID of RDMA_PS_TCP and P, and
// (client) puts the cma_hdr in the REQ, so an rdma_cm server such as
// "ucmatose -b B -p P" accepts it; its data is not our pattern: --no-verify.
// The server serves an rdma_cm client ("ucmatose -s A -p P", whose REQ has
// a cma_hdr) the same way, and then sends the DREQ itself: ucmatose's
// client waits for the server's. Its client SENDs back its one receive
// buffer, which holds our last message: --echo-of-last checks each reply
// against that.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "common.h"
#include "traffic.h"

using namespace ibcm;
using namespace ibcm::tools;
using namespace std::chrono;

namespace {

struct Config : TrafficConfig {
	std::string dev;
	int port = 1;
	bool server = false;
	std::uint64_t sid = kDefaultServiceId;
};

RcQp make_qp(ibv_context *ctx, const Config &c)
{
	return make_traffic_qp(ctx, c.port, c);
}

int run_server(const Config &c, const Args &args)
{
	ContextPtr ctx = open_verbs(c.dev);
	const ibv_port_attr pa = query_port(ctx.get(), c.port);
	Device cm = Device::open(c.dev);
	Listener listener = args.has("rdma-cm-port")
				    ? listen_rdma_cm(cm, static_cast<std::uint16_t>(args.num("rdma-cm-port", 0)))
				    : cm.listen(c.sid);
	std::printf("ibcm_pingpong: listening on service 0x%016llx, lid %u gid %s\n",
		    static_cast<unsigned long long>(c.sid), pa.lid, format_gid(query_gid(ctx.get(), c.port)).c_str());
	std::fflush(stdout);

	ReqReceived req = wait_for<ReqReceived>(cm, listener.handle(), c.timeout);
	ConnectionId conn = std::move(req.conn);
	bool rdma_cm_peer = false;
	if (args.has("rdma-cm-port")) {
		const std::string who = describe_cma(req.private_data);
		rdma_cm_peer = !who.empty();
		std::printf("ibcm_pingpong: REQ from %s\n", rdma_cm_peer ? who.c_str() : "a peer without cma_hdr");
	}
	RcQp qp = make_qp(ctx.get(), c);
	qp.modify(conn, IBV_QPS_INIT);
	const std::uint64_t primed = prime_receives(qp, c);
	conn.accept(passive_rep(qp, conn, req));
	wait_for<Established>(cm, conn.handle(), c.timeout);
	qp.modify(conn, IBV_QPS_RTS);
	const int rc = traffic(qp, c, 0, 1, primed);
	if (rc)
		return rc;
	if (rdma_cm_peer) {
		// as an rdma_cm server: ucmatose's client waits for our DREQ
		disconnect_and_drain(cm, conn, c.timeout);
	} else {
		wait_for<DreqReceived>(cm, conn.handle(), c.timeout);
		conn.drep();
		drain_timewait(cm, conn);
	}
	std::printf("ibcm_pingpong: server done, %llu messages of %zu bytes each way, %s\n",
		    static_cast<unsigned long long>(c.iters), c.size, c.verify ? "data verified" : "data not verified");
	return 0;
}

int run_client(const Config &c, const Args &args)
{
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	RcQp qp = make_qp(ctx.get(), c);
	ConnectionId conn = cm.create_id();
	ReqParams req;
	req.service_id = c.sid;
	req.qpn = qp.qpn();
	req.psn = random_psn();
	req.primary_path = path;
	req.rnr_retry_count = 7;
	apply_cm_options(args, req);
	if (args.has("rdma-cm-port")) {
		const auto src = IpAddress::parse(args.str("src-ip")), dst = IpAddress::parse(args.str("dst-ip"));
		if (!src || !dst)
			throw UsageError("--rdma-cm-port needs --src-ip and --dst-ip");
		req.private_data = cma_req_private_data({*src, *dst, static_cast<std::uint16_t>(args.num("src-port", 0))});
	}
	std::printf("ibcm_pingpong: REQ to lid %u for service 0x%016llx: packet life time %u, remote CM response "
		    "timeout %u, max CM retries %u: %.1f ms per try\n",
		    path.dlid, static_cast<unsigned long long>(c.sid), path.packet_life_time,
		    req.remote_cm_response_timeout, req.max_cm_retries,
		    req_wait_ms(path.packet_life_time, req.remote_cm_response_timeout));
	std::fflush(stdout);
	const auto t0 = steady_clock::now();
	conn.connect(req);
	RepReceived rep;
	try {
		rep = wait_for<RepReceived>(cm, conn.handle(), c.timeout);
	} catch (const CmEventError &e) {
		std::printf("ibcm_pingpong: connect failed after %.1f ms: %s\n",
			    duration<double, std::milli>(steady_clock::now() - t0).count(), e.what());
		const std::uint32_t reported = conn.destroy();
		std::printf("ibcm_pingpong: id destroyed, %u events reported\n", reported);
		return kCmFailed;
	}
	qp.modify(conn, IBV_QPS_INIT);
	const std::uint64_t primed = prime_receives(qp, c);
	qp.modify(conn, IBV_QPS_RTR);
	qp.modify(conn, IBV_QPS_RTS);
	conn.rtu();
	const auto t1 = steady_clock::now();
	std::printf("ibcm_pingpong: connected to qpn 0x%06x in %.1f ms\n", rep.remote_qpn,
		    duration<double, std::milli>(t1 - t0).count());
	const int rc = traffic(qp, c, 1, 0, primed);
	if (rc)
		return rc;
	const double secs = duration<double>(steady_clock::now() - t1).count();
	disconnect_and_drain(cm, conn, c.timeout);
	std::printf("ibcm_pingpong: %llu messages of %zu bytes each way in %.3f s (%.0f msg/s), %s\n",
		    static_cast<unsigned long long>(c.iters), c.size, secs, 2.0 * static_cast<double>(c.iters) / secs,
		    c.verify ? "data verified" : "data not verified");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"server", "no-sa", "no-verify", "echo-of-last", "help"},
				{"dev", "port", "sid", "rdma-cm-port", "src-ip", "dst-ip", "src-port", "dgid", "dlid",
				 "iters", "size", "depth", "timeout", "cm-timeout", "cm-retries"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		Config c;
		c.dev = args.str("dev");
		c.port = static_cast<int>(args.num("port", 1));
		c.server = args.has("server");
		c.iters = args.num("iters", 1000);
		c.size = args.num("size", 64);
		c.depth = static_cast<int>(args.num("depth", 64));
		c.verify = !args.has("no-verify");
		c.peer_echoes_last = args.has("echo-of-last");
		c.timeout = milliseconds(args.num("timeout", 30) * 1000);
		if (c.size == 0 || c.size > 65536 || c.depth <= 0 || c.depth > 4096 || c.iters == 0)
			throw UsageError("--size 1..65536, --depth 1..4096, --iters >= 1");
		if (args.has("rdma-cm-port")) {
			const auto p = args.num("rdma-cm-port", 0);
			if (p > 0xffff)
				throw UsageError("--rdma-cm-port: 0..65535");
			c.sid = rdma_cm_service_id(PortSpace::tcp, static_cast<std::uint16_t>(p));
		} else {
			c.sid = args.num("sid", kDefaultServiceId);
		}
		return c.server ? run_server(c, args) : run_client(c, args);
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_pingpong: " << e.what() << "\n";
		std::cerr << "usage: ibcm_pingpong --dev IBDEV [--port N] --server [--sid S | --rdma-cm-port P]\n"
			     "       ibcm_pingpong --dev IBDEV [--port N] (--dgid GID | --dlid LID) [--no-sa]\n"
			     "                     [--sid S | --rdma-cm-port P --src-ip A --dst-ip B [--src-port Q]]\n"
			     "                     [--cm-timeout T] [--cm-retries N]\n"
			     "       [--iters N] [--size BYTES] [--depth N] [--timeout SECONDS] [--no-verify | --echo-of-last]\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_pingpong: " << e.what() << "\n";
		return 1;
	}
}
