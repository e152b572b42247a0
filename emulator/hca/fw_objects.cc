// SPDX-License-Identifier: GPL-2.0
//
// Object ownership commands: EQ, CQ, SRQ, MPT/MTT and multicast groups.
// An object handed to the HCA with SW2HW_* is "HW owned" until HW2SW_*;
// the firmware mirrors its context into the ICM slot of the object, which
// therefore has to be mapped.
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/qp_engine.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca {
namespace {

constexpr unsigned kMaxCqLog = kLogMaxCqSz;  // regs.h: what QUERY_DEV_LIM reports
constexpr unsigned kMaxEqLog = kLogMaxEqSz;
// The mem-free driver sizes an SRQ of max_wr entries at
// roundup_pow_of_two(max_wr + 1) (mthca_srq.c: one spare entry), so an SRQ
// at max_srq_wr = 2^kLogMaxSrqSz has a context of twice that.
constexpr unsigned kMaxSrqLog = kLogMaxSrqSz + 1;
constexpr size_t kMailboxSize = 4096;
constexpr unsigned kMaxWriteMtt = kMailboxSize / 8 - 2;  // entries per WRITE_MTT

}  // namespace

bool Core::context_mapped(uint64_t base, uint32_t index, unsigned entry) const
{
    return icm_.is_mapped(base + uint64_t(index) * entry, entry);
}

// ---- EQ ------------------------------------------------------------------

void Core::encode_eq(const Eq& e, std::span<uint8_t> out) const
{
    eqc::kFlags.set(out, e.flags);
    eqc::kStatus.set(out, e.overflow ? 9 : 0);
    eqc::kOwner.set(out, 1);
    eqc::kStart.set(out, e.start);
    eqc::kLogSize.set(out, e.log_size);
    eqc::kIntr.set(out, e.intr);
    eqc::kPd.set(out, e.pd);
    eqc::kLkey.set(out, e.lkey);
    eqc::kConsumer.set(out, e.consumer);
    eqc::kProducer.set(out, e.producer);
}

Status Core::cmd_sw2hw_eq(Cmd& c)
{
    uint32_t eqn = c.in_mod;
    if (eqn >= (1u << layout_.log_eqs) || eqn >= kMaxEqs)
        return fail(c, Status::BadIndex, "EQ %u beyond table (%u)", eqn, 1u << layout_.log_eqs);
    if (events_.owned(eqn))
        return fail(c, Status::BadResState, "EQ %u already owned by HW", eqn);
    if (!context_mapped(layout_.eqc_base, eqn, kEqcEntrySize))
        return fail(c, Status::BadResource, "EQ %u context ICM not mapped", eqn);
    std::array<uint8_t, eqc::kSize> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    Eq e;
    e.eqn = eqn;
    e.flags = uint32_t(eqc::kFlags.get(in));
    e.start = eqc::kStart.get(in);
    e.log_size = unsigned(eqc::kLogSize.get(in));
    e.intr = uint8_t(eqc::kIntr.get(in));
    e.pd = uint32_t(eqc::kPd.get(in));
    e.lkey = uint32_t(eqc::kLkey.get(in));
    e.consumer = uint32_t(eqc::kConsumer.get(in));
    e.producer = uint32_t(eqc::kProducer.get(in));
    if (e.log_size > kMaxEqLog)
        return fail(c, Status::BadParam, "EQ log size %u", e.log_size);
    if (eqc::kOwner.get(in) != 1)
        c.note = "owner field not HW; taking it anyway";
    if (!find_mpt(key_to_index(e.lkey) & ((1u << layout_.log_mpts) - 1)))
        return fail(c, Status::BadParam, "EQ %u buffer lkey 0x%08x has no MPT", eqn, e.lkey);
    // Mirror the context into its ICM slot.
    std::array<uint8_t, eqc::kSize> ctx{};
    encode_eq(e, ctx);
    if (!icm_.write(layout_.eqc_base + uint64_t(eqn) * kEqcEntrySize, ctx.data(), ctx.size()))
        return fail(c, Status::InternalErr, "EQ context write to ICM failed");
    events_.insert(e);
    char buf[80];
    snprintf(buf, sizeof buf, "EQ %u: %u entries, intr %u, lkey 0x%08x", eqn, 1u << e.log_size, e.intr, e.lkey);
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_hw2sw_eq(Cmd& c)
{
    uint32_t eqn = c.in_mod;
    Eq last;
    if (!events_.remove(eqn, &last))
        return fail(c, Status::BadResState, "EQ %u is not owned by HW", eqn);
    std::array<uint8_t, eqc::kSize> out{};
    encode_eq(last, out);
    eqc::kOwner.set(out, 0);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_query_eq(Cmd& c)
{
    const Eq* e = events_.find(c.in_mod);
    if (!e)
        return fail(c, Status::BadResState, "EQ %u is not owned by HW", c.in_mod);
    std::array<uint8_t, eqc::kSize> out{};
    encode_eq(*e, out);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_map_eq(Cmd& c)
{
    bool unmap = c.in_mod & 0x80000000u;
    uint32_t eqn = c.in_mod & 0x7fffffffu;
    uint64_t mask = c.in_param;
    if (!unmap) {
        if (eqn >= kMaxEqs || !events_.owned(eqn))
            return fail(c, Status::BadResState, "EQ %u is not owned by HW", eqn);
        events_.map(mask, eqn);
    } else {
        events_.unmap(mask);
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s mask 0x%016llx EQ %u", unmap ? "unmap" : "map", (unsigned long long)mask, eqn);
    c.note = buf;
    return Status::Ok;
}

// ---- CQ ------------------------------------------------------------------

void Core::encode_cq(const Cq& q, std::span<uint8_t> out) const
{
    cqc::kState.set(out, q.arm == CqArm::Disarmed ? 0 : (q.arm == CqArm::NextCompletion ? 1 : 4));
    cqc::kStart.set(out, q.start);
    cqc::kLogSize.set(out, q.log_size);
    cqc::kUsrPage.set(out, q.uar);
    cqc::kErrorEqn.set(out, q.error_eqn);
    cqc::kCompEqn.set(out, q.comp_eqn);
    cqc::kPd.set(out, q.pd);
    cqc::kLkey.set(out, q.lkey);
    cqc::kConsumer.set(out, q.consumer);
    cqc::kProducer.set(out, q.producer);
    cqc::kCqn.set(out, q.cqn);
    cqc::kCiDb.set(out, q.ci_db);
    cqc::kStateDb.set(out, q.state_db);
}

Status Core::cmd_sw2hw_cq(Cmd& c)
{
    uint32_t cqn = c.in_mod & 0xffffff;
    uint32_t idx = cqn & ((1u << layout_.log_cqs) - 1);
    if (c.in_mod > 0xffffff)
        return fail(c, Status::BadParam, "CQ number 0x%x", c.in_mod);
    if (cqs_.count(idx))
        return fail(c, Status::BadResState, "CQ 0x%x already owned by HW", cqn);
    if (cqs_.size() >= kMaxObjectsPerTable || !room_for(sizeof(Cq)))
        return fail(c, Status::ExceedLim, "too many CQs (%zu, %llu bytes)", cqs_.size(),
                    (unsigned long long)model_bytes());
    if (!context_mapped(layout_.cqc_base, idx, kCqcEntrySize))
        return fail(c, Status::BadResource, "CQ 0x%x context ICM not mapped", cqn);
    std::array<uint8_t, cqc::kSize> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    Cq q;
    q.cqn = cqn;
    q.start = cqc::kStart.get(in);
    q.log_size = unsigned(cqc::kLogSize.get(in));
    q.uar = uint32_t(cqc::kUsrPage.get(in));
    q.error_eqn = uint32_t(cqc::kErrorEqn.get(in));
    q.comp_eqn = uint32_t(cqc::kCompEqn.get(in));
    q.pd = uint32_t(cqc::kPd.get(in));
    q.lkey = uint32_t(cqc::kLkey.get(in));
    q.consumer = uint32_t(cqc::kConsumer.get(in));
    q.producer = uint32_t(cqc::kProducer.get(in));
    q.ci_db = uint32_t(cqc::kCiDb.get(in));
    q.state_db = uint32_t(cqc::kStateDb.get(in));
    if (q.log_size > kMaxCqLog)
        return fail(c, Status::BadParam, "CQ log size %u", q.log_size);
    if (uint32_t(cqc::kCqn.get(in)) != cqn)
        return fail(c, Status::BadParam, "context CQN 0x%x differs from 0x%x", uint32_t(cqc::kCqn.get(in)), cqn);
    if (q.uar >= num_uars())
        return fail(c, Status::BadParam, "UAR %u", q.uar);
    if (q.comp_eqn >= kMaxEqs)
        return fail(c, Status::BadParam, "completion EQ %u", q.comp_eqn);
    if (q.error_eqn >= kMaxEqs)
        return fail(c, Status::BadParam, "error EQ %u", q.error_eqn);
    icm_.write(layout_.cqc_base + uint64_t(idx) * kCqcEntrySize, in.data(), in.size());
    cqs_[idx] = q;
    char buf[80];
    snprintf(buf, sizeof buf, "CQ 0x%x: %u entries, EQ %u, lkey 0x%08x", cqn, 1u << q.log_size, q.comp_eqn, q.lkey);
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_hw2sw_cq(Cmd& c)
{
    uint32_t cqn = c.in_mod;
    auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
    if (it == cqs_.end() || it->second.cqn != cqn)
        return fail(c, Status::BadResState, "CQ 0x%x is not owned by HW", cqn);
    std::array<uint8_t, cqc::kSize> out{};
    encode_cq(it->second, out);
    cqs_.erase(it);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_query_cq(Cmd& c)
{
    const Cq* q = find_cq(c.in_mod);
    if (!q)
        return fail(c, Status::BadResState, "CQ 0x%x is not owned by HW", c.in_mod);
    std::array<uint8_t, cqc::kSize> out{};
    encode_cq(*q, out);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_resize_cq(Cmd& c)
{
    uint32_t cqn = c.in_mod;
    auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
    if (it == cqs_.end() || it->second.cqn != cqn)
        return fail(c, Status::BadResState, "CQ 0x%x is not owned by HW", cqn);
    std::array<uint8_t, 0x40> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    unsigned log_size = unsigned(cqc::kResizeLogSize.get(in));
    uint32_t lkey = uint32_t(cqc::kResizeLkey.get(in));
    if (log_size > kMaxCqLog)
        return fail(c, Status::BadParam, "CQ log size %u", log_size);
    Cq& q = it->second;
    // The new buffer's region (mthca_resize_cq: the driver's or the user's
    // MR of the new CQE buffer): it must be a live region of the CQ's PD
    // that holds the new size, or the CQEs would go nowhere.
    uint32_t hw = key_to_index(lkey);
    auto mi = mpts_.find(hw & ((1u << layout_.log_mpts) - 1));
    if (mi == mpts_.end() || mi->second.key != hw || !mpt_current(mi->second))
        return fail(c, Status::BadParam, "CQ 0x%x: new buffer lkey 0x%08x names no region", cqn, lkey);
    if (mi->second.pd != q.pd)
        return fail(c, Status::BadParam, "CQ 0x%x: new buffer lkey 0x%08x is of PD %u, the CQ's is %u", cqn, lkey,
                    mi->second.pd, q.pd);
    if (mi->second.length < (uint64_t(cqe::kSize) << log_size))
        return fail(c, Status::BadParam, "CQ 0x%x: new buffer region of %llu bytes holds fewer than %u CQEs", cqn,
                    (unsigned long long)mi->second.length, 1u << log_size);
    // More outstanding CQEs than the new size can hold.
    if (q.producer - q.consumer > (1u << log_size))
        return fail(c, Status::BadSize, "%u CQEs outstanding, new size %u", q.producer - q.consumer,
                    1u << log_size);
    q.log_size = log_size;
    q.lkey = lkey;
    q.start = 0;
    return Status::Ok;
}

// ---- SRQ -----------------------------------------------------------------

Status Core::cmd_sw2hw_srq(Cmd& c)
{
    uint32_t srqn = c.in_mod;
    uint32_t idx = srqn & ((1u << layout_.log_srqs) - 1);
    if (srqn > 0xffffff)
        return fail(c, Status::BadParam, "SRQ number 0x%x", srqn);
    if (srqs_.count(idx))
        return fail(c, Status::BadResState, "SRQ 0x%x already owned by HW", srqn);
    if (srqs_.size() >= kMaxObjectsPerTable || !room_for(sizeof(Srq)))
        return fail(c, Status::ExceedLim, "too many SRQs (%zu, %llu bytes)", srqs_.size(),
                    (unsigned long long)model_bytes());
    if (!context_mapped(layout_.srqc_base, idx, kSrqcEntrySize))
        return fail(c, Status::BadResource, "SRQ 0x%x context ICM not mapped", srqn);
    Srq s;
    s.srqn = srqn;
    if (!read_box(c, c.in_param, s.ctx))
        return Status::InternalErr;
    if (srqc::kLogSize.get(s.ctx) > kMaxSrqLog)
        return fail(c, Status::BadParam, "SRQ log size %u", unsigned(srqc::kLogSize.get(s.ctx)));
    if (srqc::kUsrPage.get(s.ctx) >= num_uars())
        return fail(c, Status::BadParam, "UAR %u", unsigned(srqc::kUsrPage.get(s.ctx)));
    icm_.write(layout_.srqc_base + uint64_t(idx) * kSrqcEntrySize, s.ctx.data(), s.ctx.size());
    srqs_[idx] = s;
    return Status::Ok;
}

Status Core::cmd_hw2sw_srq(Cmd& c)
{
    uint32_t srqn = c.in_mod;
    auto it = srqs_.find(srqn & ((1u << layout_.log_srqs) - 1));
    if (it == srqs_.end() || it->second.srqn != srqn)
        return fail(c, Status::BadResState, "SRQ 0x%x is not owned by HW", srqn);
    std::array<uint8_t, srqc::kSize> out = it->second.ctx;
    srqc::kLimit.set(out, it->second.limit);
    srqs_.erase(it);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_query_srq(Cmd& c)
{
    const Srq* s = find_srq(c.in_mod);
    if (!s)
        return fail(c, Status::BadResState, "SRQ 0x%x is not owned by HW", c.in_mod);
    std::array<uint8_t, srqc::kSize> out = s->ctx;
    srqc::kLimit.set(out, s->limit);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_arm_srq(Cmd& c)
{
    auto it = srqs_.find(c.in_mod & ((1u << layout_.log_srqs) - 1));
    if (it == srqs_.end() || it->second.srqn != c.in_mod)
        return fail(c, Status::BadResState, "SRQ 0x%x is not owned by HW", c.in_mod);
    if (c.in_param > 0xffff)
        return fail(c, Status::BadParam, "SRQ limit %llu", (unsigned long long)c.in_param);
    it->second.limit = uint16_t(c.in_param);
    it->second.limit_armed = c.in_param != 0;
    return Status::Ok;
}

// ---- MPT / MTT -----------------------------------------------------------

Status Core::cmd_sw2hw_mpt(Cmd& c)
{
    uint32_t idx = c.in_mod;
    if (idx >= (1u << layout_.log_mpts))
        return fail(c, Status::BadIndex, "MPT %u beyond table (2^%u)", idx, layout_.log_mpts);
    if (mpts_.count(idx))
        return fail(c, Status::BadResState, "MPT %u already owned by HW", idx);
    if (mpts_.size() >= kMaxObjectsPerTable || !room_for(sizeof(Mpt)))
        return fail(c, Status::ExceedLim, "too many MPTs (%zu, %llu bytes)", mpts_.size(),
                    (unsigned long long)model_bytes());
    if (!context_mapped(layout_.mpt_base, idx, kMptEntrySize))
        return fail(c, Status::BadResource, "MPT %u ICM not mapped", idx);
    Mpt m;
    if (!read_box(c, c.in_param, m.raw))
        return Status::InternalErr;
    m.index = idx;
    mpt::kStatus.set(m.raw, 0);  // the status the driver gives is SW-owned
    if (const char* why = mpt_decode(m))
        return fail(c, Status::BadParam, "MPT %u: %s", idx, why);
    // Now owned by hardware: the entry lives in its ICM slot from here on.
    icm_.write(layout_.mpt_base + uint64_t(idx) * kMptEntrySize, m.raw.data(), m.raw.size());
    mpts_[idx] = m;
    ++obj_gen_;
    char buf[96];
    snprintf(buf, sizeof buf, "MPT %u lkey 0x%08x pd %u %s", idx, index_to_key(m.key), m.pd,
             (m.flags & mpt::kFlagPhysical) ? "physical" : "translated");
    c.note = buf;
    return Status::Ok;
}

const char* Core::mpt_decode(Mpt& m) const
{
    m.key = uint32_t(mpt::kKey.get(m.raw));
    m.flags = uint32_t(mpt::kFlags.get(m.raw));
    m.pd = uint32_t(mpt::kPd.get(m.raw));
    m.page_shift = unsigned(mpt::kPageSize.get(m.raw)) + 12;
    m.start = mpt::kStart.get(m.raw);
    m.length = mpt::kLength.get(m.raw);
    m.mtt_addr = mpt::kMttSeg.get(m.raw);
    m.tc_gen = 0;  // whatever was cached came from the old entry
    m.unusable = true;
    if (mpt::kStatus.get(m.raw) != 0)
        return "software owned";
    if ((m.key & ((1u << layout_.log_mpts) - 1)) != m.index)
        return "key does not index the entry";
    if (m.page_shift > 31)
        return "page size code beyond 2 GiB";
    if (!(m.flags & mpt::kFlagPhysical)) {
        if (m.mtt_addr < layout_.mtt_base || m.mtt_addr >= icm_.size() || (m.mtt_addr & 7))
            return "MTT address outside the MTT table";
        // A translated region (or window) is at most 2^kLogMaxMrwSz
        // bytes; the physical one the driver uses for its DMA MR spans
        // everything.
        if (m.length > (uint64_t(1) << kLogMaxMrwSz))
            return "length beyond the largest region (QUERY_DEV_LIM log_max_mrw_sz)";
    }
    m.unusable = false;
    return nullptr;
}

bool Core::mpt_current(const Mpt& cm)
{
    // The entry is one of mpts_ (non-const); callers hold it as const.
    Mpt& m = const_cast<Mpt&>(cm);
    uint64_t slot = layout_.mpt_base + uint64_t(m.index) * kMptEntrySize;
    if (m.icm_gen != tpt_gen_) {
        uint64_t contig = 0;
        if (!icm_.translate(slot, &m.icm_phys, &contig) || contig < mpt::kSize)
            m.icm_phys = 0;
        m.icm_gen = tpt_gen_;
    }
    std::array<uint8_t, mpt::kSize> now;
    bool ok = m.icm_phys ? mem_.read(m.icm_phys, now.data(), now.size())
                         : icm_.read(slot, now.data(), now.size());
    // ICM unreachable (no bus mastering, or unmapped under a live MPT):
    // go on with the entry as last read, as the firmware's MPT cache
    // would; the data access itself then fails the same way.
    if (!ok)
        return !m.unusable;
    if (now == m.raw)
        return !m.unusable;
    m.raw = now;
    if (const char* why = mpt_decode(m)) {
        // A mem-free FMR unmap leaves its entry software owned on purpose.
        if (mpt::kStatus.get(m.raw) == 0)
            IBEMU_GUEST_ERROR(cfg_.name, "MPT %u rewritten in ICM: %s; its key is refused", m.index, why);
        return false;
    }
    IBEMU_DEBUG(cfg_.name, "MPT %u re-read from ICM: key 0x%08x va 0x%llx len 0x%llx", m.index,
                index_to_key(m.key), (unsigned long long)m.start, (unsigned long long)m.length);
    return true;
}

Status Core::cmd_hw2sw_mpt(Cmd& c)
{
    uint32_t idx = c.in_mod;
    auto it = mpts_.find(idx);
    if (it == mpts_.end())
        return fail(c, Status::BadResState, "MPT %u is not owned by HW", idx);
    std::array<uint8_t, mpt::kSize> out = it->second.raw;
    mpt::kStatus.set(out, 0xf);
    mpts_.erase(it);
    ++obj_gen_;
    // Opcode modifier 1: no output mailbox (mthca_HW2SW_MPT with NULL).
    if (c.op_mod == 0 && !write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_query_mpt(Cmd& c)
{
    const Mpt* m = find_mpt(c.in_mod);
    if (!m)
        return fail(c, Status::BadResState, "MPT %u is not owned by HW", c.in_mod);
    if (!write_box(c, c.out_param, m->raw))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_write_mtt(Cmd& c)
{
    unsigned n = c.in_mod;
    if (n == 0 || n > kMaxWriteMtt)
        return fail(c, Status::BadParam, "%u MTT entries (1..%u)", n, kMaxWriteMtt);
    std::vector<uint8_t> in(16 + size_t(n) * 8);
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    uint64_t addr = get64(in, 0);
    if (addr < layout_.mtt_base || (addr & 7))
        return fail(c, Status::BadParam, "MTT address 0x%llx", (unsigned long long)addr);
    if (!icm_.is_mapped(addr, uint64_t(n) * 8))
        return fail(c, Status::BadResource, "MTT ICM at 0x%llx not mapped", (unsigned long long)addr);
    icm_.write(addr, in.data() + 16, size_t(n) * 8);
    ++tpt_gen_;
    return Status::Ok;
}

bool Core::tpt_access(uint32_t lkey, uint32_t pd, uint64_t va, void* buf, size_t len, bool write)
{
    if (state_ != FwState::HcaUp)
        return false;
    uint32_t hw = key_to_index(lkey);
    auto it = mpts_.find(hw & ((1u << layout_.log_mpts) - 1));
    // The driver's own queue buffers (WQEs, CQEs, EQEs): regions that only
    // commands change, so the entry as last read stands (no per-access
    // re-read; the data path's keys go through mr_check and mpt_current).
    if (it == mpts_.end() || it->second.unusable || it->second.key != hw || it->second.pd != pd)
        return false;
    const Mpt& m = it->second;
    if (va < m.start || len > m.length || va - m.start > m.length - len)
        return false;
    auto* p = static_cast<uint8_t*>(buf);
    return mr_walk(m, va, len, [&](uint64_t phys, uint32_t n) {
        bool ok = write ? mem_.write(phys, p, n) : mem_.read(phys, p, n);
        p += n;
        return ok;
    });
}

// ---- multicast groups ----------------------------------------------------

Status Core::cmd_read_mgm(Cmd& c)
{
    if (c.in_mod >= (1u << layout_.log_mc_table))
        return fail(c, Status::BadIndex, "MGM index %u", c.in_mod);
    std::array<uint8_t, kMgmEntrySize> e{};
    if (!icm_.read(layout_.mc_base + uint64_t(c.in_mod) * kMgmEntrySize, e.data(), e.size()))
        return fail(c, Status::BadResource, "MGM %u ICM not mapped", c.in_mod);
    if (!write_box(c, c.out_param, e))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_write_mgm(Cmd& c)
{
    if (c.in_mod >= (1u << layout_.log_mc_table))
        return fail(c, Status::BadIndex, "MGM index %u", c.in_mod);
    std::array<uint8_t, kMgmEntrySize> e{};
    if (!read_box(c, c.in_param, e))
        return Status::InternalErr;
    if (!icm_.write(layout_.mc_base + uint64_t(c.in_mod) * kMgmEntrySize, e.data(), e.size()))
        return fail(c, Status::BadResource, "MGM %u ICM not mapped", c.in_mod);
    return Status::Ok;
}

Status Core::cmd_mgid_hash(Cmd& c)
{
    std::array<uint8_t, 16> gid{};
    if (!read_box(c, c.in_param, gid))
        return Status::InternalErr;
    // The same function the multicast lookup uses (mgid_hash_of).
    c.out_imm = mgid_hash_of(gid);
    c.has_imm = true;
    return Status::Ok;
}

}  // namespace ibemu::mthca
