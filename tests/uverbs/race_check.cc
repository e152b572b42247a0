// SPDX-License-Identifier: GPL-2.0
// The ib_uverbs lifetime races (issue 10), through Debian's libibverbs:
// destroy racing with completion events, and close racing with commands
// and events. Meant for the debug kernel lane (KASAN, lockdep, kmemleak),
// where a use-after-free or a leak these provoke is reported; here the
// checks are what user space can see.
//
//   race_check [--device mthca0] [--rounds N] [--kills N] [--seed S]
//
// Completions need no traffic: a QP in the error state completes every
// send it is given as flushed, so the port need not be ACTIVE.
//
//   unread   N rounds: one completion event is queued on the channel and
//            not read; the QP and then the CQ are destroyed. The destroy
//            must take the unread event back (the reply's count excludes
//            it, so ibv_destroy_cq returns at once) and the channel must
//            then be empty.
//   inflight N rounds: a thread re-arms the CQ and posts sends, another
//            reads and acks events, and the QP and CQ are destroyed at a
//            random moment while events keep coming. Every event read is
//            acked; the destroy returns.
//   kill     N child processes, each with threads doing the above plus a
//            loop of PD/MR/CQ create and destroy commands, are killed with
//            SIGKILL at a random moment: the kernel closes every file of a
//            process whose threads are inside commands and whose CQs are
//            raising events.
//   after    one "unread" and one "inflight" round on a fresh context: the
//            device still works.
//
// Each phase prints one line "race_check: <phase>: ok ..." or
// "race_check: <phase>: FAIL ...". Exit status: the number of phases that
// failed (0 when all passed), 2 for a usage error, 3 when a step hung.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

std::string g_dev = "mthca0";
constexpr int kSendDepth = 32;

void OnAlarm(int)
{
	static const char msg[] = "race_check: a step hung (alarm)\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(3);
}

ibv_context *OpenDevice()
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_context *ctx = nullptr;
	for (int i = 0; list && i < n; i++)
		if (g_dev == ibv_get_device_name(list[i]))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

// A PD, a completion channel, a CQ on it and an RC QP in the error state.
struct Flusher {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	std::string error;

	explicit Flusher(ibv_context *c) : ctx(c)
	{
		pd = ibv_alloc_pd(ctx);
		ch = pd ? ibv_create_comp_channel(ctx) : nullptr;
		cq = ch ? ibv_create_cq(ctx, 64, nullptr, ch, 0) : nullptr;
		if (!cq) {
			error = std::string("pd/channel/cq: ") + strerror(errno);
			return;
		}
		ibv_qp_init_attr ia{};
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = kSendDepth;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &ia);
		if (!qp) {
			error = std::string("create_qp: ") + strerror(errno);
			return;
		}
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = 1;
		a.qp_access_flags = 0;
		int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
		if (!rc) {
			a = {};
			a.qp_state = IBV_QPS_ERR;
			rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		}
		if (rc)
			error = std::string("modify_qp to INIT/ERR: ") + strerror(rc);
	}

	bool ok() const { return error.empty(); }

	// Arms the CQ and posts @n signalled sends, which complete flushed.
	int Kick(int n)
	{
		int rc = ibv_req_notify_cq(cq, 0);
		for (int i = 0; !rc && i < n; i++) {
			ibv_send_wr wr{}, *bad = nullptr;
			wr.wr_id = static_cast<uint64_t>(i);
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			rc = ibv_post_send(qp, &wr, &bad);
		}
		return rc;
	}

	// Polls the CQ empty; returns how many completions it held, or -1
	// when one of them was not a flushed send.
	int Drain()
	{
		ibv_wc wc[16];
		int total = 0, n;
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
			for (int i = 0; i < n; i++)
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					return -1;
			total += n;
		}
		return n < 0 ? -1 : total;
	}

	// True when the channel has an event to read within @ms.
	bool Readable(int ms)
	{
		pollfd p{ch->fd, POLLIN, 0};
		return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
	}

	// Reads and acks one event; false when none came or it is not ours.
	bool ReadOne()
	{
		ibv_cq *ev_cq = nullptr;
		void *ev_ctx = nullptr;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			return false;
		ibv_ack_cq_events(ev_cq, 1);
		return ev_cq == cq;
	}

	// Destroys the QP and the CQ (the channel and PD stay).
	std::string DestroyQpCq()
	{
		if (qp && ibv_destroy_qp(qp))
			return std::string("destroy_qp: ") + strerror(errno);
		qp = nullptr;
		if (cq && ibv_destroy_cq(cq))
			return std::string("destroy_cq: ") + strerror(errno);
		cq = nullptr;
		return "";
	}

	~Flusher()
	{
		DestroyQpCq();
		if (ch)
			ibv_destroy_comp_channel(ch);
		if (pd)
			ibv_dealloc_pd(pd);
	}
};

// One event left unread on the channel when its CQ goes.
std::string UnreadRound(ibv_context *ctx)
{
	Flusher f(ctx);
	if (!f.ok())
		return f.error;
	if (f.Kick(1))
		return "post_send/req_notify failed";
	if (!f.Readable(5000))
		return "no completion event within 5 s";
	if (f.Drain() != 1)
		return "the CQ did not hold exactly one flushed send";
	alarm(20);
	std::string e = f.DestroyQpCq();
	alarm(0);
	if (!e.empty())
		return e;
	if (f.Readable(100))
		return "an event of the destroyed CQ is still on the channel";
	return "";
}

// Events flowing while the QP and CQ are destroyed.
std::string InflightRound(ibv_context *ctx, std::mt19937 &rng, long *events)
{
	Flusher f(ctx);
	if (!f.ok())
		return f.error;
	std::atomic<bool> stop_gen{false}, stop_read{false}, bad{false};
	std::atomic<long> read{0};
	// The flushes complete asynchronously: at most a send queue's worth
	// is posted and not yet polled.
	std::thread gen([&] {
		int outstanding = 0;
		while (!stop_gen.load()) {
			if (outstanding + 4 <= kSendDepth) {
				if (f.Kick(4)) {
					bad = true;
					return;
				}
				outstanding += 4;
			}
			const int n = f.Drain();
			if (n < 0) {
				bad = true;
				return;
			}
			outstanding -= n;
			if (n == 0)
				std::this_thread::yield();
		}
	});
	std::thread reader([&] {
		while (!stop_read.load())
			if (f.Readable(5) && f.ReadOne())
				read++;
	});
	std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
	stop_gen = true;
	gen.join();
	// The reader keeps acking while the destroy waits for the acks of
	// what the kernel reports.
	alarm(20);
	std::string e = f.DestroyQpCq();
	alarm(0);
	stop_read = true;
	reader.join();
	*events += read.load();
	if (bad.load())
		return "a post, an arm or a completion went wrong";
	return e;
}

// A child's life: everything at once until it is killed.
[[noreturn]] void Victim(int ready_fd, unsigned seed)
{
	ibv_context *ctx = OpenDevice();
	if (!ctx)
		_exit(10);
	std::mt19937 rng(seed);
	std::vector<std::thread> threads;
	for (int t = 0; t < 2; t++)
		threads.emplace_back([ctx, seed, t] {
			std::mt19937 r(seed + static_cast<unsigned>(t));
			long ev = 0;
			for (;;)
				InflightRound(ctx, r, &ev);
		});
	threads.emplace_back([ctx] {
		static char buf[8192];
		for (;;) {
			ibv_pd *pd = ibv_alloc_pd(ctx);
			ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : nullptr;
			ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
			if (cq)
				ibv_destroy_cq(cq);
			if (mr)
				ibv_dereg_mr(mr);
			if (pd)
				ibv_dealloc_pd(pd);
		}
	});
	(void)!write(ready_fd, "r", 1);
	for (;;)
		pause();
}

struct Options {
	int rounds = 200;
	int kills = 50;
	unsigned seed = 1;
};

int Usage()
{
	std::fprintf(stderr, "usage: race_check [--device IBDEV] [--rounds N] [--kills N] [--seed S]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (i + 1 >= argc)
			return Usage();
		const char *v = argv[++i];
		if (a == "--device")
			g_dev = v;
		else if (a == "--rounds")
			o.rounds = std::atoi(v);
		else if (a == "--kills")
			o.kills = std::atoi(v);
		else if (a == "--seed")
			o.seed = static_cast<unsigned>(std::strtoul(v, nullptr, 0));
		else
			return Usage();
	}
	if (o.rounds < 1 || o.kills < 0)
		return Usage();
	signal(SIGALRM, OnAlarm);
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::mt19937 rng(o.seed);
	int failed = 0;

	ibv_context *ctx = OpenDevice();
	if (!ctx) {
		std::printf("race_check: cannot open %s: %s\n", g_dev.c_str(), strerror(errno));
		return 1;
	}

	using Clock = std::chrono::steady_clock;
	auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
	std::string err;
	int i;
	auto t = Clock::now();
	for (i = 0; i < o.rounds && err.empty(); i++)
		err = UnreadRound(ctx);
	if (err.empty()) {
		std::printf("race_check: unread: ok, %d rounds, each unread event taken back by the destroy (%.1f s)\n",
			    o.rounds, since(t));
	} else {
		std::printf("race_check: unread: FAIL in round %d: %s\n", i, err.c_str());
		failed++;
	}

	long events = 0;
	err.clear();
	t = Clock::now();
	for (i = 0; i < o.rounds && err.empty(); i++)
		err = InflightRound(ctx, rng, &events);
	if (err.empty() && events == 0)
		err = "no event was read in any round";
	if (err.empty()) {
		std::printf("race_check: inflight: ok, %d rounds, %ld events read and acked (%.1f s)\n", o.rounds,
			    events, since(t));
	} else {
		std::printf("race_check: inflight: FAIL in round %d: %s\n", i, err.c_str());
		failed++;
	}
	ibv_close_device(ctx);

	int killed = 0, early = 0;
	t = Clock::now();
	for (int k = 0; k < o.kills; k++) {
		int p[2];
		if (pipe(p))
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			Victim(p[1], o.seed + static_cast<unsigned>(k) * 7919);
		}
		close(p[1]);
		char c;
		alarm(30);
		ssize_t n = read(p[0], &c, 1);
		alarm(0);
		close(p[0]);
		if (n == 1) {
			std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
			kill(pid, SIGKILL);
		}
		int status = 0;
		alarm(60);
		waitpid(pid, &status, 0);
		alarm(0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			early++;
	}
	if (early == 0) {
		std::printf("race_check: kill: ok, %d processes killed inside commands and events (%.1f s)\n",
			    killed, since(t));
	} else {
		std::printf("race_check: kill: FAIL %d of %d processes ended before the kill\n", early,
			    o.kills);
		failed++;
	}

	ctx = OpenDevice();
	if (!ctx) {
		std::printf("race_check: after: FAIL cannot open %s again: %s\n", g_dev.c_str(), strerror(errno));
		return failed + 1;
	}
	err = UnreadRound(ctx);
	events = 0;
	if (err.empty())
		err = InflightRound(ctx, rng, &events);
	ibv_close_device(ctx);
	if (err.empty()) {
		std::printf("race_check: after: ok, the device still works\n");
	} else {
		std::printf("race_check: after: FAIL %s\n", err.c_str());
		failed++;
	}
	std::printf("race_check: %d failed\n", failed);
	return failed;
}
