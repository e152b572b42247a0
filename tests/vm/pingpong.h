// SPDX-License-Identifier: GPL-2.0
// A server and a client of a libibverbs example (ibv_*_pingpong) or of
// perftest, each in its guest: used by the suites that run user verbs
// between two guests (OursVerbs: ours and upstream; OursSelftest: two
// guests of ours on the debug kernel). The side channel of these tools is
// TCP over the lab's management network (vm0, vm1, ... by name).
#pragma once

#include <regex>
#include <string>
#include <thread>

#include "vm_fixture.h"

namespace iblab::vmtest {

struct ServerClient {
	std::string server, client;
	ExecResult srv, cli;
	bool srv_done = false;
};

// Runs `server` in `sg` and, once it listens, `client` (which names the
// server's host) in `cg`. The server listens right after it prints its
// "local address" (the ibv_*_pingpong examples) or "Waiting for client"
// (perftest): on the debug kernel under load that took over 2 s, so the
// client starts a second after that line, or after 30 s. The callers run
// the server under `stdbuf -oL`, or the line would wait in its stdio
// buffer until the end. A server that
// has not ended 60 s after the client counts as hung (srv_done false,
// srv.output what it printed so far).
inline ServerClient RunServerClient(Guest &sg, const std::string &server, Guest &cg, const std::string &client)
{
	using namespace std::chrono_literals;
	ServerClient p{server, client, {}, {}, false};
	// 50 round trips take a few seconds; a hang is a failure.
	auto srv = sg.start_exec(server, 120s);
	std::string early;
	for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 30s;) {
		early += srv->take_new_output();
		if (early.find("local address") != std::string::npos ||
		    early.find("Waiting for client") != std::string::npos)
			break;
		std::this_thread::sleep_for(200ms);
	}
	std::this_thread::sleep_for(1s);  // from the line to listen()
	p.cli = cg.exec(client, 60s);
	p.srv_done = srv->wait_for(60s);
	if (p.srv_done)
		p.srv = srv->result();
	else
		p.srv.output = early + srv->take_new_output();
	return p;
}

// `tool` (an ibv_*_pingpong example) with -c, which checks every received
// buffer, for 50 iterations: server in `sg`, client in `cg` naming `host`.
// Both sides must exit 0 and report "50 iters in"; false (with the
// failures recorded) if not.
inline bool ExpectPingpong(const std::string &tool, Guest &sg, Guest &cg, const std::string &host,
			   const std::string &extra = "")
{
	const std::string args = " -g 0 -n 50 -c" + extra;
	ServerClient p = RunServerClient(sg, "stdbuf -oL " + tool + args + " 2>&1", cg, tool + args + " " + host + " 2>&1");
	const std::string where = tool + ": server " + sg.name() + " (" + to_string(sg.stack()) + "), client " +
				  cg.name() + " (" + to_string(cg.stack()) + ")";
	EXPECT_TRUE(p.cli.ok()) << where << ": client " << p.cli.describe() << "\n"
				<< p.cli.output << "\n--- server ---\n"
				<< p.srv.output;
	EXPECT_TRUE(p.srv_done && p.srv.ok()) << where << ": server " << (p.srv_done ? p.srv.describe() : "did not finish")
					      << "\n"
					      << p.srv.output << "\n--- client ---\n"
					      << p.cli.output;
	const std::regex iters("(^|\\n)[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec\\n50 iters in ");
	EXPECT_TRUE(std::regex_search(p.cli.output, iters)) << where << ": client:\n" << p.cli.output;
	EXPECT_TRUE(std::regex_search(p.srv.output, iters)) << where << ": server:\n" << p.srv.output;
	return p.cli.ok() && p.srv_done && p.srv.ok() && std::regex_search(p.cli.output, iters) &&
	       std::regex_search(p.srv.output, iters);
}

// A perftest tool (ib_write_bw, ...) with -n 100 of `bytes`: server in `sg`,
// client in `cg` naming `host`. perftest converts cycles to time with a
// clock it calibrates at the end of a run and may refuse to report
// ("Correlation coefficient r^2") when TCG on a loaded host scatters its
// samples; such a run (the traffic already done) is repeated, at most
// twice. The run must report its result row: "<bytes> 100 ...".
inline void ExpectPerftest(const std::string &tool, unsigned bytes, Guest &sg, Guest &cg, const std::string &host)
{
	const std::string n = " -n 100";
	const std::regex row("(^|\\n)\\s*" + std::to_string(bytes) + "\\s+100\\s+[0-9]+\\.[0-9]+");
	SCOPED_TRACE(tool + ": server " + sg.name() + ", client " + cg.name());
	ServerClient p;
	for (int tries = 0; tries < 3; ++tries) {
		p = RunServerClient(sg, "stdbuf -oL " + tool + n + " 2>&1", cg, tool + n + " " + host + " 2>&1");
		if (p.cli.output.find("Correlation coefficient r^2") == std::string::npos &&
		    p.srv.output.find("Correlation coefficient r^2") == std::string::npos)
			break;
		std::fprintf(stderr, "perftest could not calibrate its clock; running again\n");
	}
	EXPECT_TRUE(p.cli.ok()) << "client " << p.cli.describe() << "\n"
				<< p.cli.output << "\n--- server ---\n"
				<< p.srv.output;
	EXPECT_TRUE(p.srv_done && p.srv.ok()) << "server\n" << p.srv.output;
	EXPECT_TRUE(std::regex_search(p.cli.output, row) || std::regex_search(p.srv.output, row))
		<< "no result row for " << bytes << " bytes x 100:\n"
		<< p.cli.output << "\n--- server ---\n"
		<< p.srv.output;
}

}  // namespace iblab::vmtest
