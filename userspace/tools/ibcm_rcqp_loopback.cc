// SPDX-License-Identifier: GPL-2.0
// ibcm_rcqp_loopback: a check of RcQp, modify_qp() and ibcm_pingpong's data
// phase without a CM: two RcQps on one active port, connected to each other
// with hand-made attributes (what INIT_QP_ATTR would give), then the same
// traffic as ibcm_pingpong, one thread per QP. Not installed.
// Exit 0 ok, 1 error, 2 usage, 3 data mismatch (--wrong-pattern makes the
// second QP send another side's pattern, to see the check fire).
//
//   ibcm_rcqp_loopback --dev mthca0 [--port N] [--iters N] [--size B] [--depth N] [--wrong-pattern]
#include <unistd.h>

#include <cstdio>
#include <future>
#include <iostream>

#include "common.h"
#include "traffic.h"

using namespace ibcm;
using namespace ibcm::tools;

namespace {

QpAttr init_attr(int port)
{
	QpAttr q;
	q.attr.qp_state = IBV_QPS_INIT;
	q.attr.pkey_index = 0;
	q.attr.port_num = static_cast<std::uint8_t>(port);
	q.attr.qp_access_flags = 0;
	q.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	return q;
}

QpAttr rtr_attr(const ibv_port_attr &pa, int port, std::uint32_t dest_qpn, std::uint32_t rq_psn)
{
	QpAttr q;
	q.attr.qp_state = IBV_QPS_RTR;
	q.attr.path_mtu = pa.active_mtu;
	q.attr.dest_qp_num = dest_qpn;
	q.attr.rq_psn = rq_psn;
	q.attr.max_dest_rd_atomic = 1;
	q.attr.min_rnr_timer = 12;
	q.attr.ah_attr.dlid = pa.lid;
	q.attr.ah_attr.port_num = static_cast<std::uint8_t>(port);
	q.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return q;
}

QpAttr rts_attr(std::uint32_t sq_psn)
{
	QpAttr q;
	q.attr.qp_state = IBV_QPS_RTS;
	q.attr.timeout = 14;
	q.attr.retry_cnt = 7;
	q.attr.rnr_retry = 7;
	q.attr.sq_psn = sq_psn;
	q.attr.max_rd_atomic = 1;
	q.mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		 IBV_QP_MAX_QP_RD_ATOMIC;
	return q;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"wrong-pattern", "help"}, {"dev", "port", "iters", "size", "depth", "timeout"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		const int port = static_cast<int>(args.num("port", 1));
		TrafficConfig c;
		c.iters = args.num("iters", 1000);
		c.size = args.num("size", 64);
		c.depth = static_cast<int>(args.num("depth", 64));
		c.timeout = std::chrono::milliseconds(args.num("timeout", 30) * 1000);
		if (c.size == 0 || c.size > 65536 || c.depth <= 0 || c.depth > 4096 || c.iters == 0)
			throw UsageError("--size 1..65536, --depth 1..4096, --iters >= 1");
		ContextPtr ctx = open_verbs(args.str("dev"));
		const ibv_port_attr pa = query_port(ctx.get(), port);
		if (pa.state != IBV_PORT_ACTIVE)
			throw std::runtime_error("port " + std::to_string(port) + " is not ACTIVE");
		RcQp a = make_traffic_qp(ctx.get(), port, c);
		RcQp b = make_traffic_qp(ctx.get(), port, c);
		const std::uint32_t psn_a = random_psn(), psn_b = random_psn();
		modify_qp(a.qp(), init_attr(port));
		modify_qp(b.qp(), init_attr(port));
		const std::uint64_t primed_a = prime_receives(a, c), primed_b = prime_receives(b, c);
		modify_qp(a.qp(), rtr_attr(pa, port, b.qpn(), psn_b));
		modify_qp(b.qp(), rtr_attr(pa, port, a.qpn(), psn_a));
		modify_qp(a.qp(), rts_attr(psn_a));
		modify_qp(b.qp(), rts_attr(psn_b));
		const int b_side = args.has("wrong-pattern") ? 5 : 1;
		const auto t0 = std::chrono::steady_clock::now();
		auto fb = std::async(std::launch::async, [&] { return traffic(b, c, b_side, 0, primed_b); });
		const int ra = traffic(a, c, 0, 1, primed_a);
		if (ra) {
			std::fprintf(stderr, "ibcm_rcqp_loopback: data mismatch on QP 0x%06x\n", a.qpn());
			std::fflush(nullptr);
			_exit(ra); // b may wait for receives a no longer posts
		}
		const int rb = fb.get();
		if (rb)
			return rb;
		const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		std::printf("ibcm_rcqp_loopback: QPs 0x%06x <-> 0x%06x on LID %u: %llu messages of %zu bytes each "
			    "way in %.3f s, data verified\n",
			    a.qpn(), b.qpn(), pa.lid, static_cast<unsigned long long>(c.iters), c.size, s);
		return 0;
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_rcqp_loopback: " << e.what() << "\n";
		std::cerr << "usage: ibcm_rcqp_loopback --dev IBDEV [--port N] [--iters N] [--size B] [--depth N] "
			     "[--timeout S] [--wrong-pattern]\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_rcqp_loopback: " << e.what() << "\n";
		return 1;
	}
}
