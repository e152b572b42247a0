// SPDX-License-Identifier: GPL-2.0
#include "common.h"

#include <cmath>
#include <random>

namespace ibcm::tools {

Args::Args(int argc, char **argv, const std::vector<std::string> &flags, const std::vector<std::string> &options)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a.rfind("--", 0) != 0)
			throw UsageError("unexpected argument " + a);
		a = a.substr(2);
		bool flag = false, option = false;
		for (const auto &f : flags)
			flag |= f == a;
		for (const auto &o : options)
			option |= o == a;
		if (!flag && !option)
			throw UsageError("unknown option --" + a);
		if (flag) {
			values_[a] = "1";
		} else {
			if (i + 1 >= argc)
				throw UsageError("--" + a + " needs a value");
			values_[a] = argv[++i];
		}
	}
}

std::string Args::str(const std::string &key, const std::string &def) const
{
	auto it = values_.find(key);
	return it == values_.end() ? def : it->second;
}

std::uint64_t Args::num(const std::string &key, std::uint64_t def) const
{
	auto it = values_.find(key);
	if (it == values_.end())
		return def;
	try {
		std::size_t pos = 0;
		const std::uint64_t v = std::stoull(it->second, &pos, 0);
		if (pos != it->second.size())
			throw UsageError("");
		return v;
	} catch (const std::exception &) {
		throw UsageError("--" + key + ": not a number: " + it->second);
	}
}

PathRecord resolve_path(const Args &args, ibv_context *ctx, const std::string &dev, int port)
{
	std::optional<Gid> dgid;
	if (args.has("dgid")) {
		dgid = parse_gid(args.str("dgid"));
		if (!dgid)
			throw UsageError("--dgid: not a GID");
	}
	if (!dgid && !args.has("dlid"))
		throw UsageError("the client needs --dgid or --dlid");
	const auto dlid = static_cast<std::uint16_t>(args.num("dlid", 0));
	if (args.has("no-sa")) {
		const ibv_port_attr pa = query_port(ctx, port);
		const Gid own = query_gid(ctx, port);
		if (!args.has("dlid"))
			throw UsageError("--no-sa needs --dlid");
		if (!dgid) {
			if (dlid != pa.lid)
				throw UsageError("--no-sa to another port needs --dgid too");
			dgid = own;
		}
		return make_path(pa, own, dlid, *dgid);
	}
	SaClient sa(dev, port);
	return dgid ? sa.path_by_dgid(*dgid) : sa.path_by_dlid(dlid);
}

std::string describe_unexpected(const Event &ev)
{
	std::string s = std::string("unexpected CM event ") + event_name(ev);
	if (auto *rej = std::get_if<RejReceived>(&ev))
		s += " (reason " + std::to_string(rej->reason) + ": " + rej_reason_name(rej->reason) + ")";
	std::visit(
		[&](const auto &e) {
			if constexpr (std::is_base_of_v<SendError, std::decay_t<decltype(e)>>)
				s += " (send status " + std::to_string(e.send_status) + ": " +
				     ibv_wc_status_str(static_cast<ibv_wc_status>(e.send_status)) + ")";
		},
		ev);
	return s;
}

std::string rej_reason_name(std::uint32_t reason)
{
	static const char *const names[] = {
		nullptr,
		"no QP",
		"no EEC",
		"no resources",
		"timeout",
		"unsupported request",
		"invalid communication ID",
		"invalid communication instance",
		"invalid service ID",
		"invalid transport type",
		"stale connection",
		"RDC does not exist",
		"invalid GID",
		"invalid LID",
		"invalid SL",
		"invalid traffic class",
		"invalid hop limit",
		"invalid packet rate",
		"invalid alternate GID",
		"invalid alternate LID",
		"invalid alternate SL",
		"invalid alternate traffic class",
		"invalid alternate hop limit",
		"invalid alternate packet rate",
		"port CM redirect",
		"port redirect",
		"invalid MTU",
		"insufficient responder resources",
		"consumer defined",
		"invalid RNR retry count",
		"duplicate local communication ID",
		"invalid class version",
		"invalid flow label",
		"invalid alternate flow label",
	};
	if (reason < std::size(names) && names[reason])
		return names[reason];
	return "reason " + std::to_string(reason);
}

std::string sidr_status_name(std::uint32_t status)
{
	static const char *const names[] = {
		"valid", "unsupported", "rejected", "no QP", "redirect", "unsupported version",
	};
	if (status < std::size(names))
		return names[status];
	return "status " + std::to_string(status);
}

void apply_cm_options(const Args &args, ReqParams &req)
{
	const std::uint64_t t = args.num("cm-timeout", req.remote_cm_response_timeout);
	const std::uint64_t r = args.num("cm-retries", req.max_cm_retries);
	if (t > 31 || r > 15)
		throw UsageError("--cm-timeout 0..31, --cm-retries 0..15");
	req.remote_cm_response_timeout = static_cast<std::uint8_t>(t);
	req.max_cm_retries = static_cast<std::uint8_t>(r);
}

double req_wait_ms(std::uint8_t packet_life_time, std::uint8_t cm_response_timeout)
{
	const auto ms = [](std::uint8_t e) { return 4.096e-3 * std::ldexp(1.0, e); };
	return 2 * ms(packet_life_time) + ms(cm_response_timeout);
}

std::string describe_cma(ByteView pd)
{
	const auto h = parse_cma_header(pd);
	if (!h)
		return "";
	return "rdma_cm peer " + h->src.to_string() + " port " + std::to_string(h->src_port) + " -> " +
	       h->dst.to_string();
}

Listener listen_rdma_cm(Device &cm, std::uint16_t port)
{
	return cm.listen(rdma_cm_service_id(PortSpace::tcp, port));
}

std::uint32_t random_psn()
{
	return std::random_device{}() & 0xffffff;
}

void drain_timewait(Device &cm, ConnectionId &conn)
{
	try {
		wait_for<TimewaitExit>(cm, conn.handle(), std::chrono::milliseconds(5000));
	} catch (const std::exception &) {
		// timewait is the kernel's business; not waiting longer is fine
	}
}

void disconnect_and_drain(Device &cm, ConnectionId &conn, std::chrono::milliseconds timeout)
{
	bool dreq_sent = true;
	try {
		conn.disconnect();
	} catch (const std::system_error &) {
		dreq_sent = false; // the peer disconnected first
	}
	const auto deadline = std::chrono::steady_clock::now() + timeout;
	for (;;) {
		if (std::chrono::steady_clock::now() > deadline)
			throw std::runtime_error(dreq_sent ? "no DREP from the peer" : "no DREQ from the peer");
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
	drain_timewait(cm, conn);
}

} // namespace ibcm::tools
