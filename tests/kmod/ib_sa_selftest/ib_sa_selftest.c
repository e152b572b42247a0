// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_sa_selftest: ib_sa's queries, run against the SA of a live fabric.
 *
 * The module is an ib_client.  It takes the first channel adapter it is
 * offered and sends every query through that adapter's port 1.  It has one
 * control file, /sys/kernel/ib_sa_selftest/run: a write names a command and
 * returns when the command is over; a read then gives one line,
 * "PASS <command>: <what the SA said>" or "FAIL <command>: <why>".
 *
 *   path <gid>|<lid>   SubnAdmGet(PathRecord) from our port to a port GID
 *                      (in the format of sysfs) or a LID; the line has
 *                      the record's DLID, SLID, MTU, rate, SL and P_Key
 *   path_unknown       the same to a GID no port has: the SA must refuse
 *   cancel             a PathRecord query cancelled right after it was
 *                      sent; its callback must run once, with -EINTR
 *   mcast_join [mgid]  SubnAdmSet(MCMemberRecord) as a full member of a
 *                      group, by default the IPoIB broadcast group of the
 *                      P_Key at index 0; the line has MLID and Q_Key
 *   mcast_leave [mgid] SubnAdmDelete(MCMemberRecord) of that membership
 *   service [id]       SubnAdmGet(ServiceRecord) by ServiceID
 *
 * Every wait is bounded: a query whose callback has not come within its
 * timeout and a grace period is cancelled, and one whose callback does not
 * come even then is reported as a FAIL.  Without an SM, ib_sa refuses to
 * send at all (-EAGAIN), which is a FAIL at once.
 */

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/kref.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/delay.h>
#include <linux/string.h>
#include <linux/inet.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_sa.h>

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("Runtime test of the InfiniBand SA queries (ib_sa)");
MODULE_LICENSE("Dual BSD/GPL");

#define SAT_PORT		1
#define SAT_QUERY_MS		15000	/* the timeout ib_sa is given: room for a starved TCG SM */
#define SAT_CANCEL_QUERY_MS	1000	/* ... for the query that is cancelled */
#define SAT_GRACE_MS		5000	/* waited beyond a query's timeout */
#define SAT_AFTER_CANCEL_MS	10000	/* waited for the callback of a cancel */
#define SAT_CANCEL_TRIES	5
#define SAT_LINE_BYTES		128	/* longest command accepted */
#define SAT_RESULT_BYTES	512
/* A port GUID that no emulated (or real) Mellanox HCA is given. */
#define SAT_NOBODY_GUID		0x0002c9ffdeadbeefULL
/* The ServiceID "service" asks for when given none; nobody registers it. */
#define SAT_SERVICE_ID		0x1000000053415431ULL
#define SAT_FULL_MEMBER		1	/* JoinState bit 0 (IBA 15.2.5.17) */
#define SAT_MLID_FIRST		0xc000
#define SAT_MLID_LAST		0xfffe

/**
 * struct sat_call - one query and what its callback reported
 * @ref: one count for the command that issued the query, one for the
 *	callback until its first run
 * @done: completed by the callback's first run
 * @calls: how many times the callback ran (ib_sa promises once)
 * @status: the status of the first run
 * @has_rec: the first run came with a record, copied into @rec
 * @id: the query ID ib_sa returned, for ib_sa_cancel_query()
 * @query: the query pointer ib_sa set, for ib_sa_cancel_query()
 * @rec: the answer's record, of the query's kind
 *
 * The callback writes @status, @has_rec and @rec before it completes
 * @done; the command reads them only after @done has completed.  @id and
 * @query belong to the command.
 */
struct sat_call {
	struct kref		ref;
	struct completion	done;
	atomic_t		calls;
	int			status;
	bool			has_rec;
	int			id;
	struct ib_sa_query	*query;
	union {
		struct ib_sa_path_rec		path;
		struct ib_sa_mcmember_rec	mc;
		struct ib_sa_service_rec	svc;
	} rec;
};

/* Starts a query of one kind for @call; the ib_sa call's return value. */
typedef int (*sat_start_fn)(struct sat_call *call, void *rec,
			    ib_sa_comp_mask mask, int timeout_ms);

/**
 * struct sat_port_info - what our port knows about itself
 * @gid: GID index 0
 * @lid: its LID
 * @pkey: P_Key index 0
 */
struct sat_port_info {
	union ib_gid	gid;
	u16		lid;
	u16		pkey;
};

/*
 * sat_mutex serializes the commands against each other, against client
 * add/remove and against module removal.  It guards sat_device (the device
 * the commands use), sat_result, sat_joined and sat_joined_mgid.  A command
 * holds it while it waits for ib_sa, which is bounded (at most about
 * SAT_CANCEL_TRIES * 13 s for "cancel", 19 s for the others).
 */
static DEFINE_MUTEX(sat_mutex);
static struct ib_device *sat_device;
static char sat_result[SAT_RESULT_BYTES] = "none\n";
static bool sat_joined;
static union ib_gid sat_joined_mgid;

/*
 * Callbacks still to come; atomic, no lock.  Module removal waits on
 * sat_idle until it is zero, so no callback runs into freed module text.
 */
static atomic_t sat_pending = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(sat_idle);

static struct kobject *sat_kobj;
static struct ib_client sat_client;

/* ---- queries and their callbacks ------------------------------------------ */

static void sat_call_free(struct kref *ref)
{
	kfree(container_of(ref, struct sat_call, ref));
}

static void sat_call_put(struct sat_call *call)
{
	kref_put(&call->ref, sat_call_free);
}

static void sat_pending_done(void)
{
	if (atomic_dec_and_test(&sat_pending))
		wake_up(&sat_idle);
}

/*
 * What every callback does.  Only the first run counts; a later one (which
 * would be a bug of ib_sa) is only counted in @calls, which the command
 * looks at while it still holds its own reference.
 */
static void sat_note(struct sat_call *call, int status, const void *rec,
		     size_t len)
{
	if (atomic_inc_return(&call->calls) != 1)
		return;
	call->status = status;
	if (rec) {
		memcpy(&call->rec, rec, len);
		call->has_rec = true;
	}
	complete(&call->done);
	sat_call_put(call);
	sat_pending_done();
}

static void sat_path_cb(int status, struct ib_sa_path_rec *resp, void *context)
{
	sat_note(context, status, resp, sizeof(*resp));
}

static void sat_mc_cb(int status, struct ib_sa_mcmember_rec *resp,
		      void *context)
{
	sat_note(context, status, resp, sizeof(*resp));
}

static void sat_service_cb(int status, struct ib_sa_service_rec *resp,
			   void *context)
{
	sat_note(context, status, resp, sizeof(*resp));
}

static int sat_start_path(struct sat_call *call, void *rec,
			  ib_sa_comp_mask mask, int timeout_ms)
{
	return ib_sa_path_rec_get(sat_device, SAT_PORT, rec, mask, timeout_ms,
				  GFP_KERNEL, sat_path_cb, call, &call->query);
}

static int sat_start_join(struct sat_call *call, void *rec,
			  ib_sa_comp_mask mask, int timeout_ms)
{
	return ib_sa_mcmember_rec_set(sat_device, SAT_PORT, rec, mask,
				      timeout_ms, GFP_KERNEL, sat_mc_cb, call,
				      &call->query);
}

static int sat_start_leave(struct sat_call *call, void *rec,
			   ib_sa_comp_mask mask, int timeout_ms)
{
	return ib_sa_mcmember_rec_delete(sat_device, SAT_PORT, rec, mask,
					 timeout_ms, GFP_KERNEL, sat_mc_cb,
					 call, &call->query);
}

static int sat_start_service(struct sat_call *call, void *rec,
			     ib_sa_comp_mask mask, int timeout_ms)
{
	return ib_sa_service_rec_query(sat_device, SAT_PORT,
				       IB_MGMT_METHOD_GET, rec, mask,
				       timeout_ms, GFP_KERNEL, sat_service_cb,
				       call, &call->query);
}

/**
 * sat_issue() - start a query for a fresh &struct sat_call
 * @start: the ib_sa call of the query's kind
 * @rec: the request record
 * @mask: its component mask
 * @timeout_ms: the timeout ib_sa is given
 * @callp: set to the call (the caller puts it) when the query was sent
 *
 * Context: process; sat_mutex held.
 *
 * Return: 0 when the query is in flight, else the errno of the ib_sa call
 * (nothing was sent and no callback will run) or -ENOMEM.
 */
static int sat_issue(sat_start_fn start, void *rec, ib_sa_comp_mask mask,
		     int timeout_ms, struct sat_call **callp)
{
	struct sat_call *call;
	int id;

	call = kzalloc(sizeof(*call), GFP_KERNEL);
	if (!call)
		return -ENOMEM;
	kref_init(&call->ref);
	init_completion(&call->done);

	/* The callback's reference, taken before it can run. */
	kref_get(&call->ref);
	atomic_inc(&sat_pending);
	id = start(call, rec, mask, timeout_ms);
	if (id < 0) {
		/* Nothing was sent and no callback will run. */
		sat_pending_done();
		kfree(call);
		return id;
	}
	call->id = id;
	*callp = call;
	return 0;
}

/**
 * sat_wait() - wait, bounded, for a query's callback
 * @call: the query
 * @timeout_ms: the timeout ib_sa was given
 *
 * ib_sa ends every query within its timeout, so the callback is given that
 * plus SAT_GRACE_MS.  If it has not run by then, the query is cancelled and
 * the callback is given SAT_AFTER_CANCEL_MS more.
 *
 * Context: process, may sleep.
 *
 * Return: 0 when the callback ran in time, -ETIME when it ran only after
 * the cancel, -ETIMEDOUT when it did not run at all (its reference on
 * @call then keeps the call alive for it).
 */
static int sat_wait(struct sat_call *call, int timeout_ms)
{
	if (wait_for_completion_timeout(&call->done,
					msecs_to_jiffies(timeout_ms + SAT_GRACE_MS)))
		return 0;
	ib_sa_cancel_query(call->id, call->query);
	if (wait_for_completion_timeout(&call->done,
					msecs_to_jiffies(SAT_AFTER_CANCEL_MS)))
		return -ETIME;
	return -ETIMEDOUT;
}

/* ---- the result line -------------------------------------------------------- */

static __printf(3, 4) void sat_report(bool pass, const char *cmd,
				      const char *fmt, ...)
{
	va_list args;
	size_t len;

	len = scnprintf(sat_result, sizeof(sat_result), "%s %s: ",
			pass ? "PASS" : "FAIL", cmd);
	va_start(args, fmt);
	len += vscnprintf(sat_result + len, sizeof(sat_result) - len, fmt,
			  args);
	va_end(args);
	scnprintf(sat_result + len, sizeof(sat_result) - len, "\n");
}

/**
 * sat_query() - run one query to its end
 * @cmd: the command, for the result line
 * @start: the ib_sa call of the query's kind
 * @rec: the request record
 * @mask: its component mask
 * @callp: set to the finished call (the caller puts it) on success
 *
 * Sends the query with SAT_QUERY_MS and waits for its callback.  Trouble
 * on the way (not sent, no callback in time, a callback that ran twice, a
 * success without a record) is written as the FAIL line.
 *
 * Context: process, may sleep; sat_mutex held.
 *
 * Return: 0 when the callback ran once in time, with the status of the
 * query in (*@callp)->status; a negative errno after a FAIL line.
 */
static int sat_query(const char *cmd, sat_start_fn start, void *rec,
		     ib_sa_comp_mask mask, struct sat_call **callp)
{
	struct sat_call *call;
	int ret;

	ret = sat_issue(start, rec, mask, SAT_QUERY_MS, &call);
	if (ret) {
		sat_report(false, cmd, "query not sent: %d", ret);
		return ret;
	}
	ret = sat_wait(call, SAT_QUERY_MS);
	if (ret == -ETIME) {
		sat_report(false, cmd,
			   "no callback within %d ms; it ran after a cancel, status %d",
			   SAT_QUERY_MS + SAT_GRACE_MS, call->status);
	} else if (ret) {
		sat_report(false, cmd,
			   "no callback within %d ms, nor %d ms after a cancel",
			   SAT_QUERY_MS + SAT_GRACE_MS, SAT_AFTER_CANCEL_MS);
	} else if (atomic_read(&call->calls) != 1) {
		sat_report(false, cmd, "the callback ran %d times",
			   atomic_read(&call->calls));
		ret = -EPROTO;
	} else if (!call->status && !call->has_rec) {
		sat_report(false, cmd, "status 0 without a record");
		ret = -EPROTO;
	} else {
		*callp = call;
		return 0;
	}
	sat_call_put(call);
	return ret;
}

/* ---- the commands ------------------------------------------------------------ */

static int sat_port_info(struct sat_port_info *me)
{
	struct ib_port_attr attr;
	int ret;

	ret = ib_query_port(sat_device, SAT_PORT, &attr);
	if (ret)
		return ret;
	me->lid = attr.lid;
	ret = ib_query_gid(sat_device, SAT_PORT, 0, &me->gid);
	if (ret)
		return ret;
	return ib_query_pkey(sat_device, SAT_PORT, 0, &me->pkey);
}

/* A GID in the text form of sysfs (any IPv6 form); -EINVAL if it is not one. */
static int sat_parse_gid(const char *s, union ib_gid *gid)
{
	const char *end;

	if (!in6_pton(s, strlen(s), gid->raw, -1, &end) || *end)
		return -EINVAL;
	return 0;
}

/* The MGID of the IPoIB broadcast group of @pkey (RFC 4391, scope 2). */
static void sat_broadcast_mgid(u16 pkey, union ib_gid *mgid)
{
	static const u8 head[4] = { 0xff, 0x12, 0x40, 0x1b };

	memset(mgid, 0, sizeof(*mgid));
	memcpy(mgid->raw, head, sizeof(head));
	mgid->raw[4] = (pkey | 0x8000) >> 8;
	mgid->raw[5] = pkey & 0xff;
	memset(mgid->raw + 12, 0xff, 4);
}

static bool sat_gid_eq(const union ib_gid *a, const union ib_gid *b)
{
	return !memcmp(a->raw, b->raw, sizeof(a->raw));
}

/* Writes the FAIL line of a port that cannot be queried; true if so. */
static bool sat_no_port(const char *cmd, struct sat_port_info *me)
{
	int ret = sat_port_info(me);

	if (ret)
		sat_report(false, cmd, "querying port %d: %d", SAT_PORT, ret);
	return ret;
}

static int sat_cmd_path(const char *cmd, char *arg)
{
	struct ib_sa_path_rec req = { .numb_path = 1 };
	ib_sa_comp_mask mask = IB_SA_PATH_REC_NUMB_PATH;
	const struct ib_sa_path_rec *p;
	struct sat_port_info me;
	struct sat_call *call;
	bool by_gid;
	u16 lid = 0;

	by_gid = !!strchr(arg, ':');
	if (by_gid) {
		if (sat_parse_gid(arg, &req.dgid))
			return -EINVAL;
	} else if (kstrtou16(arg, 0, &lid) || !lid || lid >= SAT_MLID_FIRST) {
		return -EINVAL;
	}
	if (sat_no_port(cmd, &me))
		return 0;
	if (by_gid) {
		req.sgid = me.gid;
		mask |= IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID;
	} else {
		req.dlid = cpu_to_be16(lid);
		req.slid = cpu_to_be16(me.lid);
		mask |= IB_SA_PATH_REC_DLID | IB_SA_PATH_REC_SLID;
	}
	if (sat_query(cmd, sat_start_path, &req, mask, &call))
		return 0;

	p = &call->rec.path;
	if (call->status)
		sat_report(false, cmd, "the SA answered with status %d",
			   call->status);
	else if (by_gid && !sat_gid_eq(&p->dgid, &req.dgid))
		sat_report(false, cmd, "asked for DGID %pI6, got %pI6",
			   req.dgid.raw, p->dgid.raw);
	else if (!by_gid && be16_to_cpu(p->dlid) != lid)
		sat_report(false, cmd, "asked for DLID 0x%04x, got 0x%04x",
			   lid, be16_to_cpu(p->dlid));
	else if (be16_to_cpu(p->slid) != me.lid)
		sat_report(false, cmd, "SLID 0x%04x is not ours (0x%04x)",
			   be16_to_cpu(p->slid), me.lid);
	else
		sat_report(true, cmd,
			   "dlid 0x%04x slid 0x%04x mtu %u rate %u sl %u pkey 0x%04x hop_limit %u dgid %pI6 sgid %pI6",
			   be16_to_cpu(p->dlid), be16_to_cpu(p->slid), p->mtu,
			   p->rate, p->sl, be16_to_cpu(p->pkey), p->hop_limit,
			   p->dgid.raw, p->sgid.raw);
	sat_call_put(call);
	return 0;
}

static int sat_cmd_path_unknown(const char *cmd, char *arg)
{
	struct ib_sa_path_rec req = { .numb_path = 1 };
	struct sat_port_info me;
	struct sat_call *call;
	int status;

	if (arg)
		return -EINVAL;
	if (sat_no_port(cmd, &me))
		return 0;
	req.sgid = me.gid;
	req.dgid.global.subnet_prefix = me.gid.global.subnet_prefix;
	req.dgid.global.interface_id = cpu_to_be64(SAT_NOBODY_GUID);
	if (sat_query(cmd, sat_start_path, &req,
		      IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
		      IB_SA_PATH_REC_NUMB_PATH, &call))
		return 0;

	/*
	 * The SA refuses with ERR_NO_RECORDS (-ENOENT; OpenSM 3.3 does so)
	 * or ERR_REQ_INVALID_GID (-EINVAL, an "other" status to ib_sa).
	 * Anything else is not an answer to this question.
	 */
	status = call->status;
	if (status == -ENOENT || status == -EINVAL)
		sat_report(true, cmd, "status %d for dgid %pI6", status,
			   req.dgid.raw);
	else if (!status)
		sat_report(false, cmd, "the SA has a path to %pI6: dlid 0x%04x",
			   req.dgid.raw, be16_to_cpu(call->rec.path.dlid));
	else
		sat_report(false, cmd, "status %d is not the SA's refusal",
			   status);
	sat_call_put(call);
	return 0;
}

/*
 * One attempt of "cancel": a path query to ourselves, cancelled at once.
 * Return: the callback's status (0 when the answer beat the cancel), or 1
 * after a FAIL line.
 */
static int sat_cancel_once(const char *cmd, struct ib_sa_path_rec *req,
			   ib_sa_comp_mask mask)
{
	struct sat_call *call;
	int ret, calls;

	ret = sat_issue(sat_start_path, req, mask, SAT_CANCEL_QUERY_MS, &call);
	if (ret) {
		sat_report(false, cmd, "query not sent: %d", ret);
		return 1;
	}
	ib_sa_cancel_query(call->id, call->query);
	ret = sat_wait(call, SAT_CANCEL_QUERY_MS);
	if (ret) {
		sat_report(false, cmd, "no callback after the cancel (%d)", ret);
		sat_call_put(call);
		return 1;
	}
	/*
	 * Stay past the query's own timeout and the SA's answer: a second run
	 * of the callback would come in this time.
	 */
	msleep(SAT_CANCEL_QUERY_MS + 1000);
	calls = atomic_read(&call->calls);
	ret = call->status;
	sat_call_put(call);
	if (calls != 1) {
		sat_report(false, cmd, "the callback ran %d times", calls);
		return 1;
	}
	return ret;
}

static int sat_cmd_cancel(const char *cmd, char *arg)
{
	struct ib_sa_path_rec req = { .numb_path = 1 };
	struct sat_port_info me;
	int try, status;

	if (arg)
		return -EINVAL;
	if (sat_no_port(cmd, &me))
		return 0;
	req.sgid = me.gid;
	req.dgid = me.gid;
	for (try = 1; try <= SAT_CANCEL_TRIES; try++) {
		status = sat_cancel_once(cmd, &req, IB_SA_PATH_REC_DGID |
					 IB_SA_PATH_REC_SGID |
					 IB_SA_PATH_REC_NUMB_PATH);
		if (status == 1)
			return 0;
		if (status == -EINTR) {
			sat_report(true, cmd,
				   "status %d on try %d of %d, the callback ran once",
				   status, try, SAT_CANCEL_TRIES);
			return 0;
		}
		if (status) {
			sat_report(false, cmd, "status %d instead of %d",
				   status, -EINTR);
			return 0;
		}
		/* The SA's answer came before the cancel took: again. */
	}
	sat_report(false, cmd, "the SA's answer beat the cancel %d times",
		   SAT_CANCEL_TRIES);
	return 0;
}

static int sat_cmd_join(const char *cmd, char *arg)
{
	struct ib_sa_mcmember_rec req = { .join_state = SAT_FULL_MEMBER };
	const struct ib_sa_mcmember_rec *m;
	struct sat_port_info me;
	struct sat_call *call;
	u16 mlid;

	if (arg && sat_parse_gid(arg, &req.mgid))
		return -EINVAL;
	if (sat_no_port(cmd, &me))
		return 0;
	if (!arg)
		sat_broadcast_mgid(me.pkey, &req.mgid);
	req.port_gid = me.gid;
	req.pkey = cpu_to_be16(me.pkey);
	if (sat_query(cmd, sat_start_join, &req,
		      IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PORT_GID |
		      IB_SA_MCMEMBER_REC_PKEY | IB_SA_MCMEMBER_REC_JOIN_STATE,
		      &call))
		return 0;

	m = &call->rec.mc;
	mlid = be16_to_cpu(m->mlid);
	if (call->status) {
		sat_report(false, cmd, "the SA answered with status %d",
			   call->status);
	} else if (!sat_gid_eq(&m->mgid, &req.mgid)) {
		sat_report(false, cmd, "asked for MGID %pI6, got %pI6",
			   req.mgid.raw, m->mgid.raw);
	} else if (mlid < SAT_MLID_FIRST || mlid > SAT_MLID_LAST) {
		sat_report(false, cmd, "MLID 0x%04x is not a multicast LID",
			   mlid);
	} else {
		sat_joined = true;
		sat_joined_mgid = req.mgid;
		sat_report(true, cmd,
			   "mlid 0x%04x qkey 0x%08x pkey 0x%04x mtu %u rate %u sl %u join_state %u mgid %pI6",
			   mlid, be32_to_cpu(m->qkey), be16_to_cpu(m->pkey),
			   m->mtu, m->rate, m->sl, m->join_state, m->mgid.raw);
	}
	sat_call_put(call);
	return 0;
}

/* Leaves @mgid as a full member; writes the result line for @cmd. */
static void sat_leave(const char *cmd, const union ib_gid *mgid,
		      const struct sat_port_info *me)
{
	struct ib_sa_mcmember_rec req = { .join_state = SAT_FULL_MEMBER };
	struct sat_call *call;

	req.mgid = *mgid;
	req.port_gid = me->gid;
	if (sat_query(cmd, sat_start_leave, &req,
		      IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PORT_GID |
		      IB_SA_MCMEMBER_REC_JOIN_STATE, &call))
		return;
	if (call->status) {
		sat_report(false, cmd, "the SA answered with status %d",
			   call->status);
	} else {
		if (sat_joined && sat_gid_eq(mgid, &sat_joined_mgid))
			sat_joined = false;
		/* The SA echoes the member record it deleted. */
		sat_report(true, cmd, "mgid %pI6 port_gid %pI6 join_state %u",
			   call->rec.mc.mgid.raw, call->rec.mc.port_gid.raw,
			   call->rec.mc.join_state);
	}
	sat_call_put(call);
}

static int sat_cmd_leave(const char *cmd, char *arg)
{
	struct sat_port_info me;
	union ib_gid mgid;

	if (arg && sat_parse_gid(arg, &mgid))
		return -EINVAL;
	if (sat_no_port(cmd, &me))
		return 0;
	if (!arg && sat_joined)
		mgid = sat_joined_mgid;
	else if (!arg)
		sat_broadcast_mgid(me.pkey, &mgid);
	sat_leave(cmd, &mgid, &me);
	return 0;
}

static int sat_cmd_service(const char *cmd, char *arg)
{
	struct ib_sa_service_rec req = {};
	const struct ib_sa_service_rec *s;
	struct sat_call *call;
	u64 id = SAT_SERVICE_ID;

	if (arg && kstrtou64(arg, 0, &id))
		return -EINVAL;
	req.id = cpu_to_be64(id);
	if (sat_query(cmd, sat_start_service, &req,
		      IB_SA_SERVICE_REC_SERVICE_ID, &call))
		return 0;

	s = &call->rec.svc;
	if (call->status == -ENOENT)
		sat_report(true, cmd, "no records for id 0x%016llx (status %d)",
			   id, call->status);
	else if (call->status)
		sat_report(false, cmd, "the SA answered with status %d",
			   call->status);
	else if (be64_to_cpu(s->id) != id)
		sat_report(false, cmd, "asked for id 0x%016llx, got 0x%016llx",
			   id, be64_to_cpu(s->id));
	else
		sat_report(true, cmd, "id 0x%016llx gid %pI6 name \"%.*s\"",
			   id, s->gid.raw, (int)strnlen(s->name, sizeof(s->name)),
			   s->name);
	sat_call_put(call);
	return 0;
}

/**
 * struct sat_cmd - a command of the run file
 * @name: its first word
 * @arg: whether it needs an argument (false: it takes an optional one)
 * @run: runs it with the argument (or NULL); -EINVAL when the argument is
 *	malformed, otherwise 0 with the result line written
 */
struct sat_cmd {
	const char	*name;
	bool		arg;
	int		(*run)(const char *cmd, char *arg);
};

static const struct sat_cmd sat_cmds[] = {
	{ "path",		true,	sat_cmd_path },
	{ "path_unknown",	false,	sat_cmd_path_unknown },
	{ "cancel",		false,	sat_cmd_cancel },
	{ "mcast_join",		false,	sat_cmd_join },
	{ "mcast_leave",	false,	sat_cmd_leave },
	{ "service",		false,	sat_cmd_service },
};

/* ---- the ib_client ---------------------------------------------------------- */

static void sat_add_one(struct ib_device *device)
{
	if (device->node_type != IB_NODE_CA)
		return;
	mutex_lock(&sat_mutex);
	if (!sat_device) {
		sat_device = device;
		pr_info("ib_sa_selftest: querying through %s port %d\n",
			device->name, SAT_PORT);
	}
	mutex_unlock(&sat_mutex);
}

static void sat_remove_one(struct ib_device *device)
{
	struct sat_port_info me;

	mutex_lock(&sat_mutex);
	if (device != sat_device) {
		mutex_unlock(&sat_mutex);
		return;
	}
	/*
	 * A membership of ours would outlive us in the SA: leave first.  Our
	 * remove() runs before ib_sa's (the newer client goes first), so
	 * ib_sa still serves the device.
	 */
	if (sat_joined && !sat_port_info(&me))
		sat_leave("mcast_leave", &sat_joined_mgid, &me);
	sat_joined = false;
	sat_device = NULL;
	mutex_unlock(&sat_mutex);
}

static struct ib_client sat_client = {
	.name	= "ib_sa_selftest",
	.add	= sat_add_one,
	.remove	= sat_remove_one,
};

/* ---- the control file -------------------------------------------------------- */

static ssize_t run_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	ssize_t ret;

	mutex_lock(&sat_mutex);
	ret = sysfs_emit(buf, "%s", sat_result);
	mutex_unlock(&sat_mutex);
	return ret;
}

static ssize_t run_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	const struct sat_cmd *cmd = NULL;
	char line[SAT_LINE_BYTES];
	char *rest, *word;
	int i, ret;

	if (count >= sizeof(line))
		return -EINVAL;
	memcpy(line, buf, count);
	line[count] = '\0';
	rest = strim(line);
	word = strsep(&rest, " \t");
	if (rest) {
		rest = skip_spaces(rest);
		if (!*rest)
			rest = NULL;
	}
	for (i = 0; i < ARRAY_SIZE(sat_cmds); i++)
		if (!strcmp(word, sat_cmds[i].name))
			cmd = &sat_cmds[i];
	if (!cmd || (cmd->arg && !rest))
		return -EINVAL;

	mutex_lock(&sat_mutex);
	if (!sat_device)
		ret = -ENODEV;
	else
		ret = cmd->run(cmd->name, rest);
	if (!ret)
		pr_info("ib_sa_selftest: %s", sat_result);
	mutex_unlock(&sat_mutex);
	return ret ? ret : count;
}

static struct kobj_attribute sat_run_attr = __ATTR_RW(run);

static struct attribute *sat_attrs[] = {
	&sat_run_attr.attr,
	NULL,
};

static const struct attribute_group sat_group = {
	.attrs = sat_attrs,
};

static int __init sat_init(void)
{
	int ret;

	sat_kobj = kobject_create_and_add("ib_sa_selftest", kernel_kobj);
	if (!sat_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(sat_kobj, &sat_group);
	if (ret)
		goto err_kobj;
	ret = ib_register_client(&sat_client);
	if (ret)
		goto err_kobj;
	return 0;

err_kobj:
	kobject_put(sat_kobj);
	return ret;
}

static void __exit sat_exit(void)
{
	/* Removing the file waits for a command in progress. */
	kobject_put(sat_kobj);
	ib_unregister_client(&sat_client);
	/* A callback that never came (a FAIL line said so) is waited for. */
	wait_event(sat_idle, !atomic_read(&sat_pending));
}

module_init(sat_init);
module_exit(sat_exit);
