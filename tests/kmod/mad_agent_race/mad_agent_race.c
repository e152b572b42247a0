// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mad_agent_race: unregistering a MAD agent while its completions and
 * receives are still running (issue 8, the agent lifetime fix of ib_mad).
 *
 * ib_unregister_mad_agent() must not return, and must not free the agent,
 * before every handler call of the agent has returned and the MAD layer
 * has dropped the reference it held for that call.  This module registers
 * a "victim" agent on QP1 of port 1 again and again and unregisters it
 * while MADs looped back to the port's own LID are in flight for it, in
 * two ways:
 *
 *  - held: a long-lived sender agent sends one request of the victim's
 *    class; the victim's receive handler, once entered, waits until the
 *    test thread has called unregister and then sleeps 20 ms.  The MAD
 *    layer's reference for the delivery is dropped after the handler
 *    returns, inside unregister's wait: the overlap is certain.
 *  - storm: the victim sends a burst of requests to itself and is
 *    unregistered at once (or after a varying short sleep), while the
 *    sends complete, are flushed and reported, and its own requests are
 *    delivered to it.
 *
 * Every iteration counts as overlapped when a handler call of the victim
 * was running while unregister was (its reference is dropped after it
 * returns).  The checks: unregister returned with no handler call of the
 * victim still running (early), no handler call began after it returned
 * (late), every send of the victim was reported to its send handler
 * before it returned (lost), and both ways overlapped at least once.
 * With the fix broken (unregister freeing the agent without waiting for
 * the last reference, ib_mad built with IB_MAD_TEST_BREAK_AGENT_REF), the
 * held iterations return early and the put after the handler touches the
 * freed agent: KASAN reports a use-after-free in ib_mad.
 *
 * It runs when the module is loaded (the client's add(), inside modprobe),
 * on the first device, which needs a cable for its link to come up; the
 * port is given LID 1 and made ACTIVE through process_mad when no SM did
 * it.  The result is one kernel log line:
 *
 *   mad_agent_race: DONE iterations=.. held=.. storm=.. overlapped=..
 *	held_overlapped=.. storm_overlapped=.. sends=.. early=.. late=..
 *	lost=.. errors=..
 *
 * then "mad_agent_race: PASS" or "mad_agent_race: FAIL <reason>".
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ib_mad agent unregister against its in-flight references");

static int iterations = 200;
module_param(iterations, int, 0444);
MODULE_PARM_DESC(iterations, "victim agents registered and unregistered");
static int hold_every = 4;
module_param(hold_every, int, 0444);
MODULE_PARM_DESC(hold_every, "every n-th iteration is a held one (1: all)");
static int burst = 16;
module_param(burst, int, 0444);
MODULE_PARM_DESC(burst, "requests the victim sends itself in a storm iteration");

#define RACE_LID	1
/* A vendor range 1 class that neither the firmware nor ib_mad serves. */
#define RACE_CLASS	0x0b
#define RACE_HOLD_MS	20

/**
 * struct race - the state of a run, shared with the agents' handlers
 * @dev: the device
 * @sender: the long-lived agent that sends the held iterations' requests
 * @ah: to the port's own LID (on the MAD layer's PD)
 * @gen: the current victim's generation, also its agent context; 0 when
 *	no victim is registered
 * @hold: this iteration's victim holds its receive handler
 * @entered: the held handler was entered
 * @unreg_active: unregister of the current victim has been called
 * @unreg_done: and has returned
 * @in_cb: handler calls of victims now running
 * @cb_during: handler calls that ran while unregister did, this iteration
 * @posted: sends of the current victim posted
 * @reported: and reported to its send handler
 * @sender_posted: sends of @sender posted
 * @sender_reported: and reported
 * @late: handler calls that began after their victim's unregister returned,
 *	or of a victim that is not the current one
 *
 * The handlers run on the MAD layer's workqueue, the test in the client's
 * add(); they share only these atomics.
 */
struct race {
	struct ib_device	*dev;
	struct ib_mad_agent	*sender;
	struct ib_ah		*ah;
	atomic_t		gen;
	atomic_t		hold;
	struct completion	entered;
	atomic_t		unreg_active;
	atomic_t		unreg_done;
	atomic_t		in_cb;
	atomic_t		cb_during;
	atomic_t		posted;
	atomic_t		reported;
	atomic_t		sender_posted;
	atomic_t		sender_reported;
	atomic_t		late;
};

static struct race race;

/* A handler call of a victim begins: is it the current one, in time? */
static void cb_enter(struct ib_mad_agent *agent)
{
	atomic_inc(&race.in_cb);
	if ((unsigned long)agent->context != (unsigned long)atomic_read(&race.gen) ||
	    atomic_read(&race.unreg_done))
		atomic_inc(&race.late);
	if (atomic_read(&race.unreg_active))
		atomic_inc(&race.cb_during);
}

/* It returns: the MAD layer drops its reference after this. */
static void cb_leave(void)
{
	if (atomic_read(&race.unreg_active) && !atomic_read(&race.unreg_done))
		atomic_inc(&race.cb_during);
	atomic_dec(&race.in_cb);
}

static void victim_send_handler(struct ib_mad_agent *agent,
				struct ib_mad_send_wc *wc)
{
	cb_enter(agent);
	atomic_inc(&race.reported);
	ib_free_send_mad(wc->send_buf);
	cb_leave();
}

static void victim_recv_handler(struct ib_mad_agent *agent,
				struct ib_mad_send_buf *request,
				struct ib_mad_recv_wc *recv_wc)
{
	int i;

	cb_enter(agent);
	ib_free_recv_mad(recv_wc);
	if (atomic_read(&race.hold) && !completion_done(&race.entered)) {
		complete(&race.entered);
		for (i = 0; i < 2000 && !atomic_read(&race.unreg_active); i++)
			usleep_range(1000, 2000);
		msleep(RACE_HOLD_MS);
	}
	cb_leave();
}

static void sender_send_handler(struct ib_mad_agent *agent,
				struct ib_mad_send_wc *wc)
{
	ib_free_send_mad(wc->send_buf);
	atomic_inc(&race.sender_reported);
}

/* A Get of RACE_CLASS from @agent to the port's own LID, QP1. */
static int send_request(struct ib_mad_agent *agent, u32 seq)
{
	struct ib_mad_send_buf *sb;
	struct ib_mad_hdr *hdr;
	int ret;

	sb = ib_create_send_mad(agent, 1, 0, 0, IB_MGMT_MAD_HDR,
				IB_MGMT_MAD_DATA, GFP_KERNEL);
	if (IS_ERR(sb))
		return PTR_ERR(sb);
	hdr = sb->mad;
	hdr->base_version = IB_MGMT_BASE_VERSION;
	hdr->mgmt_class = RACE_CLASS;
	hdr->class_version = 1;
	hdr->method = IB_MGMT_METHOD_GET;
	hdr->tid = cpu_to_be64(((u64)agent->hi_tid << 32) | seq);
	hdr->attr_id = cpu_to_be16(0x10);
	sb->ah = race.ah;
	sb->timeout_ms = 0;
	sb->retries = 0;
	ret = ib_post_send_mad(sb, NULL);
	if (ret)
		ib_free_send_mad(sb);
	return ret;
}

/* Get or Set PortInfo of port 1 through the driver's SMA. */
static int port_smp(struct ib_smp *in, struct ib_smp *out, int method)
{
	in->base_version = IB_MGMT_BASE_VERSION;
	in->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	in->class_version = 1;
	in->method = method;
	in->attr_id = cpu_to_be16(0x0015);	/* PortInfo */
	in->attr_mod = cpu_to_be32(1);
	memset(out, 0, sizeof(*out));
	return race.dev->process_mad(race.dev, IB_MAD_IGNORE_MKEY, 1, NULL,
				     NULL, (struct ib_mad *)in,
				     (struct ib_mad *)out);
}

/*
 * Port 1 ACTIVE with a LID: wait for the link, then, unless an SM did it
 * already, LID 1 and ARMED, then ACTIVE.  Return: 0, or -EIO.
 */
static int port_up(void)
{
	struct ib_smp *in, *out;
	struct ib_port_attr pa = {};
	int i, st, ret = -EIO;

	for (i = 0; i < 100; i++) {
		if (!ib_query_port(race.dev, 1, &pa) && pa.state >= IB_PORT_INIT)
			break;
		msleep(100);
	}
	if (pa.state == IB_PORT_ACTIVE && pa.lid)
		return 0;
	in = kzalloc(sizeof(*in), GFP_KERNEL);
	out = kzalloc(sizeof(*out), GFP_KERNEL);
	if (!in || !out)
		goto out;
	for (st = IB_PORT_ARMED; st <= IB_PORT_ACTIVE; st++) {
		memset(in, 0, sizeof(*in));
		port_smp(in, out, IB_MGMT_METHOD_GET);
		memcpy(in->data, out->data, sizeof(in->data));
		*(__be16 *)(in->data + 16) = cpu_to_be16(RACE_LID);
		in->data[32] = (in->data[32] & 0xf0) | st;
		in->data[33] &= 0x0f;
		port_smp(in, out, IB_MGMT_METHOD_SET);
	}
	if (!ib_query_port(race.dev, 1, &pa) && pa.state == IB_PORT_ACTIVE &&
	    pa.lid == RACE_LID)
		ret = 0;
out:
	kfree(in);
	kfree(out);
	return ret;
}

/* Both agents' outcome, summed over the run. */
struct tally {
	int held, storm, overlapped, held_overlapped, storm_overlapped;
	int sends, early, lost, errors;
};

/* One victim: register, load it, unregister it under load. */
static void one_iteration(int i, struct tally *t)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = RACE_CLASS, .mgmt_class_version = 1,
	};
	struct ib_mad_agent *victim;
	bool held = hold_every > 0 && i % hold_every == 0;
	int j, delay;

	set_bit(IB_MGMT_METHOD_GET, req.method_mask);
	atomic_set(&race.unreg_active, 0);
	atomic_set(&race.unreg_done, 0);
	atomic_set(&race.cb_during, 0);
	atomic_set(&race.posted, 0);
	atomic_set(&race.reported, 0);
	atomic_set(&race.hold, held);
	reinit_completion(&race.entered);
	atomic_set(&race.gen, i + 1);
	victim = ib_register_mad_agent(race.dev, 1, IB_QPT_GSI, &req, 0,
				       victim_send_handler, victim_recv_handler,
				       (void *)(unsigned long)(i + 1));
	if (IS_ERR(victim)) {
		pr_info("mad_agent_race: iteration %d: register: %ld\n", i,
			PTR_ERR(victim));
		t->errors++;
		return;
	}

	if (held) {
		t->held++;
		atomic_inc(&race.sender_posted);
		if (send_request(race.sender, i)) {
			atomic_dec(&race.sender_posted);
			t->errors++;
		} else if (!wait_for_completion_timeout(&race.entered, 10 * HZ)) {
			pr_info("mad_agent_race: iteration %d: request not received\n",
				i);
			t->errors++;
		}
	} else {
		t->storm++;
		for (j = 0; j < burst; j++) {
			atomic_inc(&race.posted);
			if (send_request(victim, j)) {
				atomic_dec(&race.posted);
				t->errors++;
				break;
			}
		}
		t->sends += atomic_read(&race.posted);
		/* Unregister at a different point of the burst's life. */
		delay = (i * 37) % 1500;
		if (delay > 100)
			usleep_range(delay, delay + 50);
	}

	atomic_set(&race.unreg_active, 1);
	ib_unregister_mad_agent(victim);
	if (atomic_read(&race.in_cb))
		t->early++;
	atomic_set(&race.unreg_done, 1);
	if (atomic_read(&race.reported) != atomic_read(&race.posted))
		t->lost += atomic_read(&race.posted) - atomic_read(&race.reported);
	if (atomic_read(&race.cb_during)) {
		t->overlapped++;
		if (held)
			t->held_overlapped++;
		else
			t->storm_overlapped++;
	}
}

static void race_run(void)
{
	struct ib_ah_attr attr = { .dlid = RACE_LID, .port_num = 1 };
	struct tally t = {};
	const char *why = NULL;
	int i;

	if (port_up()) {
		pr_info("mad_agent_race: FAIL port 1 did not become ACTIVE\n");
		return;
	}
	race.sender = ib_register_mad_agent(race.dev, 1, IB_QPT_GSI, NULL, 0,
					    sender_send_handler, NULL, NULL);
	if (IS_ERR(race.sender)) {
		pr_info("mad_agent_race: FAIL sender agent: %ld\n",
			PTR_ERR(race.sender));
		return;
	}
	race.ah = ib_create_ah(race.sender->qp->pd, &attr);
	if (IS_ERR(race.ah)) {
		pr_info("mad_agent_race: FAIL AH: %ld\n", PTR_ERR(race.ah));
		goto unregister;
	}

	for (i = 0; i < iterations; i++)
		one_iteration(i, &t);
	atomic_set(&race.gen, 0);
	/* Stragglers of the sender, and late calls of any victim. */
	for (i = 0; i < 500 && atomic_read(&race.sender_reported) !=
			       atomic_read(&race.sender_posted); i++)
		msleep(20);
	msleep(200);
	if (atomic_read(&race.sender_reported) != atomic_read(&race.sender_posted))
		t.errors++;
	ib_destroy_ah(race.ah);

	pr_info("mad_agent_race: DONE iterations=%d held=%d storm=%d overlapped=%d held_overlapped=%d storm_overlapped=%d sends=%d early=%d late=%d lost=%d errors=%d\n",
		iterations, t.held, t.storm, t.overlapped, t.held_overlapped,
		t.storm_overlapped, t.sends, t.early, atomic_read(&race.late),
		t.lost, t.errors);
	if (t.early)
		why = "unregister returned while a handler of its agent ran";
	else if (atomic_read(&race.late))
		why = "a handler ran after its agent was unregistered";
	else if (t.lost)
		why = "a send was never reported";
	else if (t.errors)
		why = "errors";
	else if (t.held && !t.held_overlapped)
		why = "no held iteration overlapped unregister";
	else if (t.storm && !t.storm_overlapped)
		why = "no storm iteration overlapped unregister";
	if (why)
		pr_info("mad_agent_race: FAIL %s\n", why);
	else
		pr_info("mad_agent_race: PASS\n");
unregister:
	ib_unregister_mad_agent(race.sender);
}

static void race_add(struct ib_device *dev)
{
	if (race.dev)
		return;
	race.dev = dev;
	init_completion(&race.entered);
	race_run();
}

static void race_remove(struct ib_device *dev)
{
}

static struct ib_client race_client = {
	.name = "mad_agent_race", .add = race_add, .remove = race_remove,
};

static int __init race_init(void)
{
	if (iterations < 1 || burst < 1 || burst > 64 || hold_every < 0)
		return -EINVAL;
	return ib_register_client(&race_client);
}

static void __exit race_exit(void)
{
	ib_unregister_client(&race_client);
}

module_init(race_init);
module_exit(race_exit);
