// SPDX-License-Identifier: GPL-2.0
//
// The QP state machine driven by the MODIFY_QP command family, QUERY_QP
// and CONF_SPECIAL_QP. A QP in RESET has no entry in the table. The QP's
// context is kept merged transition by transition, as the firmware does.
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/wire.h"

namespace ibemu::mthca {

const char* qp_state_name(QpState s)
{
    static const char* const names[] = {"RST", "INIT", "RTR", "RTS", "SQE", "SQD", "ERR"};
    unsigned i = unsigned(s);
    return i < 7 ? names[i] : "?";
}

const char* qp_service_name(uint8_t st)
{
    static const char* const names[] = {"RC", "UC", "RD", "UD", "?", "?", "?", "MLX"};
    return st < 8 ? names[st] : "?";
}

namespace {

constexpr uint8_t bit(QpState s) { return uint8_t(1u << unsigned(s)); }
constexpr uint8_t kAnyState = 0x7f;

// One transition command: the states it may start from and where it
// leaves the QP (IBA 10.3.1; opcodes from mthca_cmd.c).
struct Transition {
    uint16_t opcode;
    uint8_t from;
    QpState to;
    bool has_context;
};

constexpr Transition kTransitions[] = {
    {op::kRst2Init, bit(QpState::Rst), QpState::Init, true},
    {op::kInit2Init, bit(QpState::Init), QpState::Init, true},
    {op::kInit2Rtr, bit(QpState::Init), QpState::Rtr, true},
    {op::kRtr2Rts, bit(QpState::Rtr), QpState::Rts, true},
    {op::kRts2Rts, bit(QpState::Rts), QpState::Rts, true},
    {op::kSqerr2Rts, bit(QpState::Sqe), QpState::Rts, true},
    {op::k2Err, kAnyState, QpState::Err, false},
    {op::kRts2Sqd, bit(QpState::Rts), QpState::Sqd, false},
    {op::kSqd2Sqd, bit(QpState::Sqd), QpState::Sqd, true},
    {op::kSqd2Rts, bit(QpState::Sqd), QpState::Rts, true},
    {op::kErr2Rst, kAnyState, QpState::Rst, false},
};

constexpr size_t kQpMailbox = qpc::kCtxOffset + qpc::kSize;

// How a MODIFY_QP context merges into the one the firmware keeps (IBA
// 10.3.1, as ib_mthca fills the mailbox): RST2INIT takes it all; every
// later transition with a context takes the fields the driver owns (queues,
// CQs, PD, doorbells: the same each time), the attributes the transition
// requires (no opt-param bit stands for them) and those its opt-param mask
// selects. Everything else keeps its value.
constexpr Field kDriverOwned[] = {
    qpc::kDe,          qpc::kRqSize,      qpc::kRqStride,   qpc::kSqSize,   qpc::kSqStride, qpc::kUsrPage,
    qpc::kLocalQpn,    qpc::kRdd,         qpc::kPd,         qpc::kWqeBase,  qpc::kWqeLkey,  qpc::kAckReqFreq,
    qpc::kFlightLimit, qpc::kSwe,         qpc::kSic,        qpc::kSsc,      qpc::kCqnSnd,   qpc::kSndWqeBase,
    qpc::kSndDbIndex,  qpc::kRic,         qpc::kRsc,        qpc::kRaBuffIndex, qpc::kCqnRcv, qpc::kRcvWqeBase,
    qpc::kRcvDbIndex,  qpc::kSrqn,        qpc::kSrqEnable,
};

struct RequiredField {
    uint16_t opcode;
    Field field;
};

constexpr RequiredField kRequired[] = {
    {op::kInit2Rtr, qpc::kMtu},  {op::kInit2Rtr, qpc::kMsgMax}, {op::kInit2Rtr, qpc::kRemoteQpn},
    {op::kInit2Rtr, qpc::kRqPsn}, {op::kRtr2Rts, qpc::kSqPsn},
};

struct OptField {
    uint32_t bit;
    Field field;
};

// The address of a path, which PRIMARY_ADDR_PATH / ALT_ADDR_PATH select.
constexpr Field kAddressFields[] = {
    qpc::path::kGrh,      qpc::path::kPathBits, qpc::path::kRlid,      qpc::path::kSgidIndex,
    qpc::path::kStaticRate, qpc::path::kHopLimit, qpc::path::kSl,      qpc::path::kTclass,
    qpc::path::kFlowLabel, qpc::path::kRgidHi,  qpc::path::kRgidLo,
};

struct OptPath {
    uint32_t bit;
    size_t base;
};

constexpr OptPath kOptionalPaths[] = {{qpc::opt::kPriAddrPath, qpc::kPriPath}, {qpc::opt::kAltAddrPath, qpc::kAltPath}};

constexpr OptField kOptional[] = {
    {qpc::opt::kAltAddrPath, qpc::at(qpc::kAltPath, qpc::path::kPort)},
    {qpc::opt::kAltAddrPath, qpc::at(qpc::kAltPath, qpc::path::kPkeyIndex)},
    {qpc::opt::kAltAddrPath, qpc::at(qpc::kAltPath, qpc::path::kAckTimeout)},
    {qpc::opt::kRre, qpc::kRre},
    {qpc::opt::kRae, qpc::kRae},
    {qpc::opt::kRwe, qpc::kRwe},
    {qpc::opt::kPkeyIndex, qpc::kPriPkeyIndex},
    {qpc::opt::kQkey, qpc::kQkey},
    {qpc::opt::kRnrTimeout, qpc::kMinRnrTimer},
    {qpc::opt::kSraMax, qpc::kSraMax},
    {qpc::opt::kSraMax, qpc::kSre},
    {qpc::opt::kSraMax, qpc::kSae},
    {qpc::opt::kRraMax, qpc::kRraMax},
    {qpc::opt::kPmState, qpc::kPmState},
    {qpc::opt::kPortNum, qpc::kPriPort},
    {qpc::opt::kRetryCount, qpc::kRetryCount},
    {qpc::opt::kAltRnrRetry, qpc::at(qpc::kAltPath, qpc::path::kRnrRetry)},
    {qpc::opt::kAckTimeout, qpc::kPriAckTimeout},
    {qpc::opt::kRnrRetry, qpc::kPriRnrRetry},
    {qpc::opt::kSchedQueue, qpc::kSchedQueue},
};

void merge_qp_context(std::span<uint8_t> kept, uint16_t opcode, uint32_t optmask, std::span<const uint8_t> ctx)
{
    if (opcode == op::kRst2Init) {
        std::memcpy(kept.data(), ctx.data(), qpc::kSize);
        return;
    }
    auto take = [&](const Field& f) { f.set(kept, f.get(ctx)); };
    for (const Field& f : kDriverOwned)
        take(f);
    for (const RequiredField& r : kRequired)
        if (r.opcode == opcode)
            take(r.field);
    for (const OptField& o : kOptional)
        if (optmask & o.bit)
            take(o.field);
    for (const OptPath& p : kOptionalPaths)
        if (optmask & p.bit)
            for (const Field& f : kAddressFields)
                take(qpc::at(p.base, f));
}

// The context QUERY_QP reports: the merged one in the QP's current state,
// engine-made transitions (ERR, SQE) included; an SQD QP whose requester
// still has WQEs outstanding reads as "draining".
void report_qp_context(const Qp& q, std::span<uint8_t> out)
{
    std::memcpy(out.data(), q.ctx.data(), qpc::kSize);
    unsigned state = unsigned(q.state);
    if (q.state == QpState::Sqd && (q.r.out_head != q.r.out_tail || q.r.sq_busy))
        state = qpc::kStateDraining;
    qpc::kState.set(out, state);
}

bool valid_service(uint8_t st)
{
    return st == uint8_t(QpService::Rc) || st == uint8_t(QpService::Uc) || st == uint8_t(QpService::Ud) ||
           st == uint8_t(QpService::Mlx);
}

}  // namespace

// The alternate path and the path migration state a transition may load
// (IBA 10.3.1, 17.2.8; the transitions ib_modify_qp_is_ok allows them on),
// checked before anything is merged. ARMED needs an alternate path on a
// port of this HCA; MIGRATED is a migration when the QP is ARMED and goes
// to RTS (*migrate), nothing when it is already MIGRATED, and refused from
// REARM. The model also takes ARMED straight from software, as consumers
// that skip REARM expect; REARM becomes ARMED when the first packet with
// MigReq 0 arrives (rx_deliver).
Status Core::check_path_migration(Cmd& c, const Qp& q, QpState to, uint32_t optmask, std::span<const uint8_t> ctx,
                                  bool* migrate)
{
    bool connected = q.service == uint8_t(QpService::Rc) || q.service == uint8_t(QpService::Uc);
    bool alt_ok = c.opcode == op::kInit2Rtr || c.opcode == op::kRtr2Rts || c.opcode == op::kRts2Rts ||
                  c.opcode == op::kSqd2Sqd || c.opcode == op::kSqd2Rts;
    bool pm_ok = alt_ok && c.opcode != op::kInit2Rtr;
    const Field alt_port_f = qpc::at(qpc::kAltPath, qpc::path::kPort);
    uint32_t qpn = q.qpn;
    if (optmask & qpc::opt::kAltAddrPath) {
        if (!connected || !alt_ok)
            return fail(c, Status::BadParam, "QP 0x%x (%s): no alternate path on this transition", qpn,
                        qp_service_name(q.service));
        unsigned port = unsigned(alt_port_f.get(ctx));
        if (port < 1 || port > num_ports_)
            return fail(c, Status::BadParam, "QP 0x%x: alternate path port %u", qpn, port);
        unsigned pkey = unsigned(qpc::at(qpc::kAltPath, qpc::path::kPkeyIndex).get(ctx));
        if (pkey >= kPkeyTableLen)
            return fail(c, Status::BadParam, "QP 0x%x: alternate path P_Key index %u", qpn, pkey);
    }
    if (!(optmask & qpc::opt::kPmState))
        return Status::Ok;
    if (!connected || !pm_ok)
        return fail(c, Status::BadParam, "QP 0x%x (%s): no path migration state on this transition", qpn,
                    qp_service_name(q.service));
    std::span<const uint8_t> alt_from = (optmask & qpc::opt::kAltAddrPath) ? ctx : std::span<const uint8_t>(q.ctx);
    unsigned alt_port = unsigned(alt_port_f.get(alt_from));
    bool have_alt = alt_port >= 1 && alt_port <= num_ports_;
    uint8_t cur = q.a.pm_state, want = uint8_t(qpc::kPmState.get(ctx));
    switch (want) {
    case qpc::kPmMigrated:
        if (cur == qpc::kPmMigrated)
            return Status::Ok;
        if (cur != qpc::kPmArmed)
            return fail(c, Status::BadParam, "QP 0x%x: MIGRATED while REARM (not armed)", qpn);
        if (to != QpState::Rts || !have_alt)
            return fail(c, Status::BadParam, "QP 0x%x: migration needs RTS and an alternate path (port %u)", qpn,
                        alt_port);
        *migrate = true;
        return Status::Ok;
    case qpc::kPmArmed:
        if (!have_alt)
            return fail(c, Status::BadParam, "QP 0x%x: ARMED without an alternate path (port %u)", qpn, alt_port);
        return Status::Ok;
    case qpc::kPmRearm:
        return Status::Ok;
    default:
        return fail(c, Status::BadParam, "QP 0x%x: path migration state %u (reserved)", qpn, want);
    }
}

SpecialQp Core::special_kind(uint32_t qpn, uint8_t* port) const
{
    for (unsigned kind = 0; kind < 2; ++kind) {
        uint32_t base = special_base_[kind];
        if (base && qpn >= base && qpn < base + num_ports_) {
            *port = uint8_t(qpn - base + 1);
            return kind == 0 ? SpecialQp::Smi : SpecialQp::Gsi;
        }
    }
    return SpecialQp::None;
}

Status Core::cmd_modify_qp(Cmd& c)
{
    const Transition* t = nullptr;
    for (const Transition& tr : kTransitions)
        if (tr.opcode == c.opcode)
            t = &tr;
    if (!t)
        return fail(c, Status::BadOp, "not a QP transition");
    if (c.in_mod & (1u << 24))
        return fail(c, Status::BadParam, "EE contexts are not supported");
    uint32_t qpn = c.in_mod & 0xffffff;
    uint32_t idx = qpn & ((1u << layout_.log_qps) - 1);
    auto it = qps_.find(idx);
    if (it != qps_.end() && it->second.qpn != qpn)
        return fail(c, Status::BadResState, "QP slot %u is held by QP 0x%x", idx, it->second.qpn);
    QpState cur = it == qps_.end() ? QpState::Rst : it->second.state;
    if (!(t->from & bit(cur)))
        return fail(c, Status::BadQpeeState, "QP 0x%x is in %s", qpn, qp_state_name(cur));
    if (c.opcode == op::kErr2Rst && c.op_mod > 3)
        return fail(c, Status::BadOp, "opcode modifier %u", c.op_mod);

    if (t->to == QpState::Rst) {
        // Opcode modifier 2: hand the last context back in the outbox.
        if (c.op_mod == 2 && it != qps_.end()) {
            std::array<uint8_t, kQpMailbox> out{};
            std::span<uint8_t> octx = std::span<uint8_t>(out).subspan(qpc::kCtxOffset, qpc::kSize);
            report_qp_context(it->second, octx);
            qpc::kState.set(octx, uint8_t(QpState::Rst));
            if (!write_box(c, c.out_param, out))
                return Status::InternalErr;
        }
        if (it != qps_.end()) {
            lazy_bytes_ -= qp_lazy_bytes(it->second);
            qps_.erase(it);
        }
        ++obj_gen_;
        char buf[64];
        snprintf(buf, sizeof buf, "QP 0x%x %s->RST", qpn, qp_state_name(cur));
        c.note = buf;
        return Status::Ok;
    }

    std::array<uint8_t, kQpMailbox> in{};
    if (t->has_context && !read_box(c, c.in_param, in))
        return Status::InternalErr;
    std::span<const uint8_t> ctx(in.data() + qpc::kCtxOffset, qpc::kSize);
    if (t->has_context) {
        // Work queues up to the QUERY_DEV_LIM size, none larger (checked
        // before a QP in RESET takes its slot): the driver's EINVAL for
        // one WR past max_qp_wr has this behind it.
        unsigned sq_log = unsigned(qpc::kSqSize.get(ctx)), rq_log = unsigned(qpc::kRqSize.get(ctx));
        if (sq_log > kLogMaxQpSz || rq_log > kLogMaxQpSz)
            return fail(c, Status::BadParam, "QP 0x%x queue sizes 2^%u/2^%u beyond 2^%u", qpn, sq_log, rq_log,
                        kLogMaxQpSz);
    }

    if (cur == QpState::Rst) {
        // First transition: the QP gets its slot and context.
        if (qps_.size() >= kMaxObjectsPerTable || !room_for(sizeof(Qp)))
            return fail(c, Status::ExceedLim, "too many QPs (%zu, %llu bytes)", qps_.size(),
                        (unsigned long long)model_bytes());
        if (!context_mapped(layout_.qpc_base, idx, kQpcEntrySize))
            return fail(c, Status::BadResource, "QP 0x%x context ICM not mapped", qpn);
        if (t->opcode == op::k2Err) {
            Qp q;
            q.qpn = qpn;
            q.state = QpState::Err;
            q.special = special_kind(qpn, &q.port);
            qps_[idx] = q;
            ++obj_gen_;
            char buf[64];
            snprintf(buf, sizeof buf, "QP 0x%x RST->ERR", qpn);
            c.note = buf;
            return Status::Ok;
        }
        uint8_t st = uint8_t(qpc::kServiceType.get(ctx));
        if (!valid_service(st))
            return fail(c, Status::BadParam, "service type %u", st);
        Qp q;
        q.qpn = qpn;
        q.service = st;
        q.special = special_kind(qpn, &q.port);
        if (q.special != SpecialQp::None && st != uint8_t(QpService::Mlx))
            return fail(c, Status::BadParam, "special QP 0x%x must be MLX, not %u", qpn, st);
        it = qps_.emplace(idx, q).first;
        ++obj_gen_;
    }

    Qp& q = it->second;
    if (t->has_context) {
        unsigned port = unsigned(qpc::kPriPort.get(ctx));
        if (port > num_ports_)
            return fail(c, Status::BadParam, "port %u", port);
        if (port && q.special == SpecialQp::None)
            q.port = uint8_t(port);
        if (uint32_t(qpc::kUsrPage.get(ctx)) >= num_uars())
            return fail(c, Status::BadParam, "UAR %u", uint32_t(qpc::kUsrPage.get(ctx)));
        uint32_t optmask = uint32_t(qpc::kOptMask.get(in));
        bool migrate = false;
        if (Status s = check_path_migration(c, q, t->to, optmask, ctx, &migrate); s != Status::Ok)
            return s;
        merge_qp_context(q.ctx, c.opcode, optmask, ctx);
        // Every QP starts MIGRATED, with no alternate path armed (IBA
        // 17.2.8), whatever RST2INIT carries.
        if (c.opcode == op::kRst2Init)
            qpc::kPmState.set(q.ctx, qpc::kPmMigrated);
        apply_qp_context(q, c.opcode);
        if (migrate)
            qp_migrate(q, false);
    }
    QpState from = q.state;
    q.state = t->to;
    qpc::kState.set(q.ctx, uint8_t(t->to));
    if (c.opcode == op::kRts2Sqd)
        q.r.drained_event = c.in_mod & (1u << 31);
    qp_state_changed(q, from);
    // Mirror the context into its ICM slot, as the firmware keeps it there.
    icm_.write(layout_.qpc_base + uint64_t(idx) * kQpcEntrySize, q.ctx.data(), q.ctx.size());
    char buf[96];
    snprintf(buf, sizeof buf, "QP 0x%x %s->%s%s", qpn, qp_state_name(from), qp_state_name(t->to),
             q.special == SpecialQp::Smi ? " (QP0)" : q.special == SpecialQp::Gsi ? " (QP1)" : "");
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_query_qp(Cmd& c)
{
    if (c.in_mod & (1u << 24))
        return fail(c, Status::BadParam, "EE contexts are not supported");
    uint32_t qpn = c.in_mod & 0xffffff;
    std::array<uint8_t, kQpMailbox> out{};
    auto it = qps_.find(qpn & ((1u << layout_.log_qps) - 1));
    // A QP in RESET (no entry, or one whose first transition failed) reads
    // back as a zeroed context in state RST.
    if (it != qps_.end() && it->second.qpn == qpn && it->second.state != QpState::Rst)
        report_qp_context(it->second, std::span<uint8_t>(out).subspan(qpc::kCtxOffset, qpc::kSize));
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_conf_special_qp(Cmd& c)
{
    // Opcode modifier: 0 SMI (QP0), 1 GSI (QP1), 2 raw IPv6, 3 raw Ethertype.
    if (c.op_mod > 3)
        return fail(c, Status::BadParam, "special QP type %u", c.op_mod);
    uint32_t base = c.in_mod & 0xffffff;
    if (base && base + num_ports_ > (1u << layout_.log_qps))
        return fail(c, Status::BadParam, "special QP base 0x%x beyond the QP table", base);
    special_base_[c.op_mod] = base;
    static const char* const kinds[] = {"SMI", "GSI", "raw IPv6", "raw Ethertype"};
    char buf[64];
    snprintf(buf, sizeof buf, base ? "%s at QP 0x%x" : "%s disabled", kinds[c.op_mod], base);
    c.note = buf;
    return Status::Ok;
}

}  // namespace ibemu::mthca
