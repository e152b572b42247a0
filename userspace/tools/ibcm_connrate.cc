// SPDX-License-Identifier: GPL-2.0
// ibcm_connrate: --count connect/accept/disconnect cycles through ib_ucm
// (libibcmxx), one at a time; prints connections per second.
//
//   server: ibcm_connrate --dev mthca0 --server [--count N] [--sid S] [--no-qp]
//   client: ibcm_connrate --dev mthca0 (--dgid G | --dlid L) [--no-sa]
//           [--count N] [--sid S] [--no-qp] [--concurrent] [--cm-timeout T]
//           [--cm-retries N]
//
// The client connects one at a time, or with --concurrent all at once (as
// `ucmatose -c` does): all REQs first, then every connection up, then all
// disconnected.
// Each cycle creates an RC QP and moves it INIT/RTR/RTS with the CM's
// attributes, unless --no-qp (then the REQ/REP name made-up QPNs and only
// the CM exchange is timed). --cm-timeout/--cm-retries: the REQ's remote CM
// response timeout and MaxCMRetries (as ibcm_pingpong). Exit status: 0 ok,
// 1 error, 2 usage, 4 a connect failed by a CM event (REJ, REQ_ERROR, ...),
// printed as "cycle N: connect failed: <event> (...)".
#include <cstdio>
#include <iostream>
#include <map>

#include "common.h"

using namespace ibcm;
using namespace ibcm::tools;
using namespace std::chrono;

namespace {

struct Config {
	std::string dev;
	int port = 1;
	std::uint64_t sid = kDefaultServiceId;
	std::uint64_t count = 100;
	bool qps = true;
	milliseconds timeout{30000};
};

std::optional<RcQp> new_qp(ibv_context *ctx, const Config &c)
{
	if (!c.qps)
		return std::nullopt;
	return RcQp(ctx, c.port, 4, 64, 1);
}

// Sends connection `i`'s REQ on `conn`, for `qp` or, with --no-qp, a
// made-up QPN.
void send_req(ConnectionId &conn, const std::optional<RcQp> &qp, std::uint64_t i, const Config &c,
	      const Args &args, const PathRecord &path)
{
	ReqParams req;
	req.service_id = c.sid;
	req.qpn = qp ? qp->qpn() : static_cast<std::uint32_t>((0x400 + i) & 0xffffff);
	req.psn = random_psn();
	req.primary_path = path;
	apply_cm_options(args, req);
	conn.connect(req);
}

// The active side's answer to a REP: its QP (if any) to RTS, then the RTU.
void answer_rep(ConnectionId &conn, std::optional<RcQp> &qp)
{
	if (qp) {
		qp->modify(conn, IBV_QPS_INIT);
		qp->modify(conn, IBV_QPS_RTR);
		qp->modify(conn, IBV_QPS_RTS);
	}
	conn.rtu();
}

void report(const char *who, std::uint64_t n, steady_clock::duration d)
{
	const double s = duration<double>(d).count();
	std::printf("ibcm_connrate: %s: %llu connections in %.3f s: %.1f connections/s\n", who,
		    static_cast<unsigned long long>(n), s, static_cast<double>(n) / s);
}

int run_server(const Config &c)
{
	ContextPtr ctx = open_verbs(c.dev);
	Device cm = Device::open(c.dev);
	Listener listener = cm.listen(c.sid);
	std::printf("ibcm_connrate: listening on service 0x%016llx\n", static_cast<unsigned long long>(c.sid));
	std::fflush(stdout);
	struct Conn {
		ConnectionId id;
		std::optional<RcQp> qp;
	};
	std::map<std::uint32_t, Conn> conns;
	std::uint64_t served = 0, fake_qpn = 0x800;
	std::optional<steady_clock::time_point> t0;
	while (served < c.count || !conns.empty()) {
		std::optional<Event> ev = cm.next_event(c.timeout);
		if (!ev) {
			if (served >= c.count)
				break; // timewaits not reported in time: done anyway
			throw std::runtime_error("no CM event for " + std::to_string(c.timeout.count()) + " ms");
		}
		const std::uint32_t id = header(*ev).id;
		if (auto *req = std::get_if<ReqReceived>(&*ev)) {
			if (!t0)
				t0 = steady_clock::now();
			Conn conn{std::move(req->conn), new_qp(ctx.get(), c)};
			RepParams rep;
			rep.psn = random_psn();
			rep.rnr_retry_count = 7;
			// RTS before the REP, as rdma_accept() does. Not after it:
			// the client sends its DREQ right after its RTU, and once
			// the DREQ is in, the CM gives no RTS attributes (EINVAL,
			// as Linux's), which a slow server then met.
			if (conn.qp) {
				conn.qp->modify(conn.id, IBV_QPS_INIT);
				passive_rtr(*conn.qp, conn.id, rep.psn);
				conn.qp->modify(conn.id, IBV_QPS_RTS);
				rep.qpn = conn.qp->qpn();
			} else {
				rep.qpn = static_cast<std::uint32_t>(fake_qpn++ & 0xffffff);
			}
			conn.id.accept(rep);
			conns.emplace(id, std::move(conn));
			continue;
		}
		auto it = conns.find(id);
		if (it == conns.end())
			continue;
		if (std::holds_alternative<Established>(*ev)) {
			// the RTU: nothing left to do
		} else if (std::holds_alternative<DreqReceived>(*ev)) {
			it->second.id.drep();
			served++;
			if (served == c.count)
				report("server", served, steady_clock::now() - *t0);
		} else if (std::holds_alternative<TimewaitExit>(*ev)) {
			conns.erase(it);
		} else if (std::holds_alternative<MraReceived>(*ev)) {
			// the peer needs more time: fine
		} else {
			std::fprintf(stderr, "ibcm_connrate: %s\n", describe_unexpected(*ev).c_str());
			conns.erase(it);
			return 1;
		}
	}
	return 0;
}

int run_client(const Config &c, const Args &args)
{
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	const auto t0 = steady_clock::now();
	for (std::uint64_t i = 0; i < c.count; i++) {
		std::optional<RcQp> qp = new_qp(ctx.get(), c);
		ConnectionId conn = cm.create_id();
		send_req(conn, qp, i, c, args, path);
		try {
			wait_for<RepReceived>(cm, conn.handle(), c.timeout);
		} catch (const CmEventError &e) {
			std::printf("ibcm_connrate: cycle %llu: connect failed: %s\n",
				    static_cast<unsigned long long>(i), e.what());
			return kCmFailed;
		}
		answer_rep(conn, qp);
		conn.disconnect();
		wait_for<DrepReceived>(cm, conn.handle(), c.timeout);
		// conn is destroyed in timewait; the kernel finishes it.
	}
	report("client", c.count, steady_clock::now() - t0);
	return 0;
}

// --concurrent: all --count connections at once, as `ucmatose -c` makes
// them: every REQ goes out first, each REP is answered (the QP to RTS, the
// RTU) as it comes, and once all are established all are disconnected
// (every DREQ, then every DREP).
int run_client_concurrent(const Config &c, const Args &args)
{
	ContextPtr ctx = open_verbs(c.dev);
	const PathRecord path = resolve_path(args, ctx.get(), c.dev, c.port);
	Device cm = Device::open(c.dev);
	struct Conn {
		ConnectionId id;
		std::optional<RcQp> qp;
		std::uint64_t n;
	};
	std::map<std::uint32_t, Conn> conns;
	const auto t0 = steady_clock::now();
	for (std::uint64_t i = 0; i < c.count; i++) {
		Conn conn{cm.create_id(), new_qp(ctx.get(), c), i};
		send_req(conn.id, conn.qp, i, c, args, path);
		const std::uint32_t h = conn.id.handle();
		conns.emplace(h, std::move(conn));
	}
	// One wanted event from every connection; an MRA or a TIMEWAIT_EXIT
	// is passed over, anything else fails the run.
	auto collect = [&](auto is_wanted, auto on_wanted, const char *what) {
		for (std::uint64_t got = 0; got < c.count;) {
			std::optional<Event> ev = cm.next_event(c.timeout);
			if (!ev)
				throw std::runtime_error("no CM event for " + std::to_string(c.timeout.count()) + " ms (" +
							 std::to_string(got) + " " + what + ")");
			auto it = conns.find(header(*ev).id);
			if (it == conns.end() || std::holds_alternative<MraReceived>(*ev) ||
			    std::holds_alternative<TimewaitExit>(*ev))
				continue;
			if (!is_wanted(*ev)) {
				std::printf("ibcm_connrate: cycle %llu: connect failed: %s\n",
					    static_cast<unsigned long long>(it->second.n), describe_unexpected(*ev).c_str());
				return false;
			}
			on_wanted(it->second);
			got++;
		}
		return true;
	};
	const bool established = collect([](const Event &e) { return std::holds_alternative<RepReceived>(e); },
					 [](Conn &k) { answer_rep(k.id, k.qp); }, "established");
	if (!established)
		return kCmFailed;
	for (auto &[h, k] : conns)
		k.id.disconnect();
	if (!collect([](const Event &e) { return std::holds_alternative<DrepReceived>(e); }, [](Conn &) {},
		     "disconnected"))
		return kCmFailed;
	report("client", c.count, steady_clock::now() - t0);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"server", "no-sa", "no-qp", "concurrent", "help"},
				{"dev", "port", "sid", "dgid", "dlid", "count", "timeout", "cm-timeout", "cm-retries"});
		if (args.has("help") || !args.has("dev"))
			throw UsageError("");
		Config c;
		c.dev = args.str("dev");
		c.port = static_cast<int>(args.num("port", 1));
		c.sid = args.num("sid", kDefaultServiceId);
		c.count = args.num("count", 100);
		c.qps = !args.has("no-qp");
		c.timeout = milliseconds(args.num("timeout", 30) * 1000);
		if (c.count == 0)
			throw UsageError("--count >= 1");
		if (args.has("server"))
			return run_server(c);
		return args.has("concurrent") ? run_client_concurrent(c, args) : run_client(c, args);
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_connrate: " << e.what() << "\n";
		std::cerr << "usage: ibcm_connrate --dev IBDEV [--port N] --server [--count N] [--sid S] [--no-qp]\n"
			     "       ibcm_connrate --dev IBDEV [--port N] (--dgid GID | --dlid LID) [--no-sa]\n"
			     "                     [--count N] [--sid S] [--no-qp] [--concurrent] [--timeout SECONDS]\n"
			     "                     [--cm-timeout T] [--cm-retries N]\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_connrate: " << e.what() << "\n";
		return 1;
	}
}
