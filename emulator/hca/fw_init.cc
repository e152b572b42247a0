// SPDX-License-Identifier: GPL-2.0
//
// Bring-up and tear-down commands: firmware area, queries, ICM, INIT_HCA,
// ports, MAD_IFC. Outbox layouts follow the offsets the driver reads in
// mthca_cmd.c (mthca_QUERY_FW, mthca_QUERY_DEV_LIM, ...).
#include <cstring>

#include "common/log.h"
#include "hca/core.h"
#include "hca/regs.h"
#include "hca/wire.h"
#include "ib/notice.h"

namespace ibemu::mthca {
namespace {

constexpr size_t kMailboxSize = 4096;

// QUERY_FW outbox.
namespace queryfw {
constexpr Field kFwPages{0x00, 8, 48, 16};
constexpr Field kMajor{0x00, 8, 32, 16};
constexpr Field kSubminor{0x00, 8, 16, 16};
constexpr Field kMinor{0x00, 8, 0, 16};
constexpr Field kLogMaxCmds{0x0f, 1, 0, 8};
constexpr Field kCmdDbEnable{0x10, 4, 0, 1};
constexpr Field kClrIntBase{0x20, 8, 0, 64};
constexpr Field kCatasBase{0x30, 8, 0, 64};
constexpr Field kCatasSize{0x38, 4, 0, 32};
constexpr Field kEqArmBase{0x40, 8, 0, 64};
constexpr Field kEqSetCiBase{0x48, 8, 0, 64};
}  // namespace queryfw

// QUERY_DEV_LIM outbox. Most fields are log2 values.
namespace devlim {
constexpr Field kLogMaxSrqSz{0x10, 1, 0, 8}, kLogMaxQpSz{0x11, 1, 0, 8}, kLogRsvdQps{0x12, 1, 0, 4},
    kLogMaxQps{0x13, 1, 0, 5}, kLogRsvdSrqs{0x14, 1, 4, 4}, kLogMaxSrqs{0x15, 1, 0, 5},
    kLogRsvdEecs{0x16, 1, 0, 4}, kLogMaxEecs{0x17, 1, 0, 5}, kLogMaxCqSz{0x19, 1, 0, 8},
    kLogRsvdCqs{0x1a, 1, 0, 4}, kLogMaxCqs{0x1b, 1, 0, 5}, kLogMaxMpts{0x1d, 1, 0, 6}, kLogRsvdEqs{0x1e, 1, 0, 4},
    kLogMaxEqs{0x1f, 1, 0, 3}, kLogRsvdMtts{0x20, 1, 4, 4}, kLogMaxMrwSz{0x21, 1, 0, 8},
    kLogRsvdMrws{0x22, 1, 0, 4}, kLogMaxMttSeg{0x23, 1, 0, 6}, kLogMaxReqQp{0x29, 1, 0, 6},
    kLogMaxResQp{0x2b, 1, 0, 6}, kLogMaxRdma{0x2f, 1, 0, 6}, kResizeSrq{0x33, 1, 0, 1}, kAckDelay{0x35, 1, 0, 5},
    kMaxMtu{0x36, 1, 4, 4}, kMaxPortWidth{0x36, 1, 0, 4}, kMaxVl{0x37, 1, 4, 4}, kNumPorts{0x37, 1, 0, 4},
    kLogMaxGids{0x3b, 1, 0, 4}, kRateSupport{0x3c, 2, 0, 16}, kLogMaxPkeys{0x3f, 1, 0, 4},
    kFlags{0x44, 4, 0, 32}, kRsvdUars{0x48, 1, 4, 4}, kLogUarSz{0x49, 1, 0, 6}, kLogPageSz{0x4b, 1, 0, 8},
    kMaxSg{0x51, 1, 0, 8}, kMaxDescSz{0x52, 2, 0, 16}, kMaxSgRq{0x55, 1, 0, 8}, kMaxDescSzRq{0x56, 2, 0, 16},
    kLogMaxQpMcg{0x61, 1, 0, 8}, kRsvdMcgs{0x62, 1, 0, 4}, kLogMaxMcgs{0x63, 1, 0, 8},
    kRsvdPds{0x64, 1, 4, 4}, kLogMaxPds{0x65, 1, 0, 6}, kRsvdRdds{0x66, 1, 4, 4}, kLogMaxRdds{0x67, 1, 0, 6},
    kEecEntry{0x80, 2, 0, 16}, kQpcEntry{0x82, 2, 0, 16}, kEeecEntry{0x84, 2, 0, 16}, kEqpcEntry{0x86, 2, 0, 16},
    kEqcEntry{0x88, 2, 0, 16}, kCqcEntry{0x8a, 2, 0, 16}, kSrqEntry{0x8c, 2, 0, 16},
    kUarScratchEntry{0x8e, 2, 0, 16}, kMttEntry{0x90, 2, 0, 16}, kMptEntry{0x92, 2, 0, 16},
    kLogMaxPbl{0x96, 1, 0, 6}, kBmmeFlags{0x97, 1, 0, 8}, kRsvdLkey{0x98, 4, 0, 32}, kLamRequired{0x9f, 1, 0, 1},
    kMaxIcmSz{0xa0, 8, 0, 64};
// DEV_LIM flags (mthca_cmd.h).
constexpr uint32_t kFlagRc = 1u << 0, kFlagUc = 1u << 1, kFlagUd = 1u << 2, kFlagSrq = 1u << 6,
                   kFlagBadPkeyCntr = 1u << 8, kFlagBadQkeyCntr = 1u << 9, kFlagMw = 1u << 16,
                   kFlagAutoPathMig = 1u << 17, kFlagAtomic = 1u << 18, kFlagRawMulti = 1u << 19,
                   kFlagUdAvPortEnforce = 1u << 20, kFlagUdMulti = 1u << 21;
// Not advertised (see cmd_query_dev_lim), named for the record.
static_assert((kFlagMw | kFlagAutoPathMig) == 0x30000);
}  // namespace devlim

// Device limits we advertise (roughly those of a real MT25208 with
// 5.x firmware). Log values unless noted.
// Queue sizes, S/G and descriptor limits: regs.h.
constexpr unsigned kLogRsvdQps = 10, kLogMaxQps = 24, kLogRsvdSrqs = 6, kLogMaxSrqs = 10, kLogRsvdCqs = 7,
                   kLogMaxCqs = 24, kLogMaxMpts = 24, kLogRsvdEqs = 0, kLogMaxEqs = 6, kLogRsvdMtts = 4,
                   kLogRsvdMrws = 4, kLogMaxMttSeg = 24, kLogMaxMcgs = 13, kLogMaxPds = 24;
constexpr unsigned kLogUarSize = 3;  // 8 MiB = BAR2 (the driver checks it fits)

// QUERY_ADAPTER outbox.
namespace adapter {
constexpr Field kVendorId{0x00, 4, 0, 32};
constexpr Field kDeviceId{0x04, 4, 0, 32};
constexpr Field kRevision{0x08, 4, 0, 32};
constexpr Field kIntaPin{0x10, 1, 0, 8};
constexpr size_t kVsd = 0x20;
constexpr size_t kVsdBoardId = 0xd0;  // 16 bytes, each dword byte-swapped
}  // namespace adapter

// INIT_HCA inbox.
namespace inithca {
constexpr Field kFlags2{0x014, 4, 0, 32};
constexpr Field kQpcBase{0x030, 8, 0, 64}, kLogQps{0x037, 1, 0, 5};
constexpr Field kEecBase{0x040, 8, 0, 64}, kLogEecs{0x047, 1, 0, 5};
constexpr Field kSrqcBase{0x048, 8, 0, 64}, kLogSrqs{0x04f, 1, 0, 5};
constexpr Field kCqcBase{0x050, 8, 0, 64}, kLogCqs{0x057, 1, 0, 5};
constexpr Field kEqpcBase{0x060, 8, 0, 64};
constexpr Field kEeecBase{0x070, 8, 0, 64};
constexpr Field kEqcBase{0x080, 8, 0, 64}, kLogEqs{0x087, 1, 0, 5};
constexpr Field kRdbBase{0x090, 8, 0, 64};
constexpr Field kMcBase{0x0c0, 8, 0, 64};
constexpr Field kLogMcEntry{0x0d2, 2, 0, 16};
constexpr Field kMcHashSize{0x0d6, 2, 0, 16};
constexpr Field kLogMcTable{0x0db, 1, 0, 5};
constexpr Field kMptBase{0x0f0, 8, 0, 64};
constexpr Field kLogMpts{0x0fb, 1, 0, 6};
constexpr Field kMttBase{0x100, 8, 0, 64};
constexpr Field kLogUarcPages{0x129, 1, 0, 8};
constexpr Field kLogUars{0x12a, 1, 0, 8};
constexpr Field kUarPageSz{0x12b, 1, 0, 8};
constexpr Field kUarScratchBase{0x130, 8, 0, 64};
constexpr Field kUarcBase{0x138, 8, 0, 64};
constexpr size_t kSize = 0x200;
}  // namespace inithca

// INIT_IB / SET_IB inboxes.
namespace initib {
constexpr Field kFlagSig{0x00, 4, 18, 1}, kFlagNg{0x00, 4, 17, 1}, kFlagG0{0x00, 4, 16, 1};
constexpr Field kMtuCap{0x00, 4, 12, 4}, kPortWidth{0x00, 4, 8, 4}, kVlCap{0x00, 4, 4, 4};
constexpr Field kGidCap{0x06, 2, 0, 16}, kPkeyCap{0x0a, 2, 0, 16};
constexpr Field kGuid0{0x10, 8, 0, 64}, kNodeGuid{0x18, 8, 0, 64}, kSiGuid{0x20, 8, 0, 64};
constexpr size_t kSize = 0x38;
}  // namespace initib
namespace setib {
constexpr Field kFlagSig{0x00, 4, 18, 1}, kFlagRqk{0x00, 4, 0, 1};
constexpr Field kCapMask{0x04, 4, 0, 32}, kSiGuid{0x08, 8, 0, 64};
constexpr size_t kSize = 0x40;
}  // namespace setib

// MAD_IFC.
constexpr unsigned kMadIfcIgnoreMkey = 0x1, kMadIfcHasWc = 0x4;

// Aux ICM the firmware wants: one page per 2 MiB of ICM, at least one.
uint64_t aux_pages_for(uint64_t icm_size) { return (icm_size + (2ull << 20) - 1) >> 21 ?: 1; }

}  // namespace

Status Core::cmd_query_fw(Cmd& c)
{
    std::array<uint8_t, 0x100> out{};
    const FieldValue table[] = {
        {queryfw::kFwPages, kFwPages},
        {queryfw::kMajor, kFwMajor},
        {queryfw::kSubminor, kFwSubminor},
        {queryfw::kMinor, kFwMinor},
        {queryfw::kLogMaxCmds, kLogMaxCmds},
        {queryfw::kCmdDbEnable, 0},  // no posting of commands through doorbells
        {queryfw::kClrIntBase, kClrIntBase},
        {queryfw::kCatasBase, kCatasBase},
        {queryfw::kCatasSize, kCatasDwords},
        {queryfw::kEqArmBase, kEqArmBase},
        {queryfw::kEqSetCiBase, kEqSetCiBase},
    };
    fill(out, table);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_enable_lam(Cmd& c)
{
    // A mem-free board has no HCA-attached memory: the driver takes
    // LAM_NOT_PRE (-EAGAIN) as "run in MemFree mode".
    c.note = "no HCA-attached memory";
    return Status::LamNotPre;
}

Status Core::cmd_disable_lam(Cmd&) { return Status::Ok; }

Status Core::cmd_sys_en(Cmd& c)
{
    // Tavor-mode bring-up; this firmware runs mem-free only.
    c.note = "mem-free firmware";
    return Status::LamNotPre;
}

Status Core::map_chunks(Cmd& c, bool need_virt, std::vector<IcmChunk>* out)
{
    unsigned nent = c.in_mod;
    if (nent == 0 || nent > kMailboxSize / 16)
        return fail(c, Status::BadParam, "entry count %u (1..%zu)", nent, kMailboxSize / 16);
    std::vector<uint8_t> box(nent * 16);
    if (!read_box(c, c.in_param, box))
        return Status::InternalErr;
    out->resize(nent);
    std::string why;
    Status s = parse_map_mailbox(box, nent, need_virt, out->data(), &why);
    if (s != Status::Ok)
        return fail(c, s, "%s", why.c_str());
    for (const IcmChunk& ch : *out) {
        // Every page handed to the firmware must be guest RAM, not only the
        // chunk's ends (a chunk may straddle a hole, e.g. the PCI hole
        // below 4 GiB). One contiguous mapping proves it at once; without
        // one, each page is probed, the last first, so that a chunk
        // reaching past RAM fails before any loop.
        if (mem_.map_range(ch.phys, ch.size))
            continue;
        uint8_t probe;
        bool ok = mem_.read(ch.phys + ch.size - 1, &probe, 1);
        for (uint64_t off = 0; ok && off < ch.size; off += kIcmPageSize)
            ok = mem_.read(ch.phys + off, &probe, 1);
        if (!ok)
            return fail(c, Status::BadParam, "chunk 0x%llx (+0x%llx) is not guest RAM",
                        (unsigned long long)ch.phys, (unsigned long long)ch.size);
    }
    return Status::Ok;
}

Status Core::cmd_map_fa(Cmd& c)
{
    std::vector<IcmChunk> chunks;
    if (Status s = map_chunks(c, false, &chunks); s != Status::Ok)
        return s;
    if (!fa_.add(chunks.data(), unsigned(chunks.size()), kFwPages))
        return fail(c, Status::ExceedLim, "firmware area would exceed %u pages or overlap", kFwPages);
    c.note = std::to_string(fa_.pages()) + " FA pages";
    return Status::Ok;
}

Status Core::cmd_unmap_fa(Cmd& c)
{
    // Stops the firmware: what it had in ICM goes with it.
    if (state_ == FwState::Running && (icm_.extent_count() || !aux_.empty()))
        c.note = "ICM still mapped, dropped";
    fa_.clear();
    aux_.clear();
    icm_.reset();
    icm_size_set_ = false;
    aux_needed_ = 0;
    state_ = FwState::Off;
    return Status::Ok;
}

Status Core::cmd_run_fw(Cmd& c)
{
    if (fa_.pages() < kFwPages)
        return fail(c, Status::BadSysState, "firmware area has %llu of %u pages",
                    (unsigned long long)fa_.pages(), kFwPages);
    state_ = FwState::Running;
    return Status::Ok;
}

Status Core::cmd_query_dev_lim(Cmd& c)
{
    std::array<uint8_t, 0x100> out{};
    const FieldValue table[] = {
        {devlim::kLogMaxSrqSz, kLogMaxSrqSz},
        {devlim::kLogMaxQpSz, kLogMaxQpSz},
        {devlim::kLogRsvdQps, kLogRsvdQps},
        {devlim::kLogMaxQps, kLogMaxQps},
        {devlim::kLogRsvdSrqs, kLogRsvdSrqs},
        {devlim::kLogMaxSrqs, kLogMaxSrqs},
        {devlim::kLogRsvdEecs, 0},
        {devlim::kLogMaxEecs, 0},
        {devlim::kLogMaxCqSz, kLogMaxCqSz},
        {devlim::kLogRsvdCqs, kLogRsvdCqs},
        {devlim::kLogMaxCqs, kLogMaxCqs},
        {devlim::kLogMaxMpts, kLogMaxMpts},
        {devlim::kLogRsvdEqs, kLogRsvdEqs},
        {devlim::kLogMaxEqs, kLogMaxEqs},
        {devlim::kLogRsvdMtts, kLogRsvdMtts},
        {devlim::kLogMaxMrwSz, kLogMaxMrwSz},
        {devlim::kLogRsvdMrws, kLogRsvdMrws},
        {devlim::kLogMaxMttSeg, kLogMaxMttSeg},
        {devlim::kLogMaxReqQp, 7},
        {devlim::kLogMaxResQp, 7},
        {devlim::kLogMaxRdma, 23},
        {devlim::kResizeSrq, 1},
        {devlim::kAckDelay, 15},
        {devlim::kMaxMtu, 4},        // 2048
        {devlim::kMaxPortWidth, 3},  // 1x | 4x
        {devlim::kMaxVl, 4},         // VL0-7
        {devlim::kNumPorts, num_ports_},
        {devlim::kLogMaxGids, 5},   // 32
        {devlim::kRateSupport, 0xf},
        {devlim::kLogMaxPkeys, 6},  // 64
        // Not kFlagMw (BIND_MW is not implemented; ib_mthca offers no
        // windows anyway) nor kFlagAutoPathMig (migration only when
        // software or the remote side starts it, never on retry
        // exhaustion): the model does not claim what it cannot do.
        {devlim::kFlags, devlim::kFlagRc | devlim::kFlagUc | devlim::kFlagUd | devlim::kFlagSrq |
                             devlim::kFlagBadPkeyCntr | devlim::kFlagBadQkeyCntr | devlim::kFlagAtomic |
                             devlim::kFlagRawMulti | devlim::kFlagUdAvPortEnforce | devlim::kFlagUdMulti},
        {devlim::kRsvdUars, 1},
        {devlim::kLogUarSz, kLogUarSize},
        {devlim::kLogPageSz, 12},
        {devlim::kMaxSg, kMaxSg},
        {devlim::kMaxDescSz, kMaxDescSz},
        {devlim::kMaxSgRq, kMaxSg},
        {devlim::kMaxDescSzRq, kMaxDescSz},
        {devlim::kLogMaxQpMcg, 6},
        {devlim::kRsvdMcgs, 0},
        {devlim::kLogMaxMcgs, kLogMaxMcgs},
        {devlim::kRsvdPds, 0},
        {devlim::kLogMaxPds, kLogMaxPds},
        {devlim::kRsvdRdds, 0},
        {devlim::kLogMaxRdds, 0},
        {devlim::kEecEntry, kEecEntrySize},
        {devlim::kQpcEntry, kQpcEntrySize},
        {devlim::kEeecEntry, kEeecEntrySize},
        {devlim::kEqpcEntry, kEqpcEntrySize},
        {devlim::kEqcEntry, kEqcEntrySize},
        {devlim::kCqcEntry, kCqcEntrySize},
        {devlim::kSrqEntry, kSrqcEntrySize},
        {devlim::kUarScratchEntry, kUarScratchEntrySize},
        {devlim::kMttEntry, 8},
        {devlim::kMptEntry, kMptEntrySize},
        {devlim::kLogMaxPbl, 31},
        {devlim::kBmmeFlags, 0},
        {devlim::kRsvdLkey, 0},
        {devlim::kLamRequired, 0},
        {devlim::kMaxIcmSz, kMaxIcmSize},
    };
    fill(out, table);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_query_adapter(Cmd& c)
{
    std::array<uint8_t, 0x100> out{};
    adapter::kVendorId.set(out, kVendorId);
    adapter::kDeviceId.set(out, kDeviceId);
    adapter::kRevision.set(out, kRevisionA0);
    adapter::kIntaPin.set(out, kIntaPin);
    // The firmware hands the board id back with every dword byte-swapped
    // (mthca_cmd.c, get_board_id()).
    char id[16] = {};
    std::memcpy(id, kBoardId, sizeof(kBoardId) < 16 ? sizeof(kBoardId) : 15);
    for (unsigned i = 0; i < 16; ++i)
        out[adapter::kVsd + adapter::kVsdBoardId + (i & ~3u) + (3 - (i & 3))] = uint8_t(id[i]);
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    return Status::Ok;
}

Status Core::cmd_set_icm_size(Cmd& c)
{
    uint64_t size = c.in_param;
    if (size == 0 || size > kMaxIcmSize || (size & (kIcmPageSize - 1)))
        return fail(c, Status::BadParam, "ICM size 0x%llx (max 0x%llx, 4 KiB multiple)", (unsigned long long)size,
                    (unsigned long long)kMaxIcmSize);
    if (icm_.extent_count() || !aux_.empty())
        return fail(c, Status::BadSysState, "ICM already in use");
    icm_.set_size(size);
    icm_size_set_ = true;
    aux_needed_ = aux_pages_for(size);
    c.out_imm = aux_needed_;
    c.has_imm = true;
    c.note = std::to_string(size >> 10) + " KB ICM needs " + std::to_string(aux_needed_) + " aux pages";
    return Status::Ok;
}

Status Core::cmd_map_icm_aux(Cmd& c)
{
    if (!icm_size_set_)
        return fail(c, Status::BadSysState, "SET_ICM_SIZE first");
    std::vector<IcmChunk> chunks;
    if (Status s = map_chunks(c, false, &chunks); s != Status::Ok)
        return s;
    if (!aux_.add(chunks.data(), unsigned(chunks.size()), aux_needed_))
        return fail(c, Status::ExceedLim, "aux area would exceed %llu pages or overlap",
                    (unsigned long long)aux_needed_);
    return Status::Ok;
}

Status Core::cmd_unmap_icm_aux(Cmd&)
{
    aux_.clear();
    return Status::Ok;
}

Status Core::cmd_map_icm(Cmd& c)
{
    if (!icm_size_set_)
        return fail(c, Status::BadSysState, "SET_ICM_SIZE first");
    std::vector<IcmChunk> chunks;
    if (Status s = map_chunks(c, true, &chunks); s != Status::Ok)
        return s;
    std::string why;
    if (Status s = icm_.map(chunks.data(), unsigned(chunks.size()), &why); s != Status::Ok)
        return fail(c, s, "%s", why.c_str());
    ++tpt_gen_;
    char buf[64];
    snprintf(buf, sizeof buf, "virt 0x%llx, %zu chunks", (unsigned long long)chunks[0].virt, chunks.size());
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_unmap_icm(Cmd& c)
{
    std::string why;
    if (Status s = icm_.unmap(c.in_param, c.in_mod, &why); s != Status::Ok)
        return fail(c, s, "%s", why.c_str());
    ++tpt_gen_;
    return Status::Ok;
}

Status Core::cmd_init_hca(Cmd& c)
{
    if (aux_.pages() < aux_needed_ || !icm_size_set_)
        return fail(c, Status::BadSysState, "aux ICM has %llu of %llu pages", (unsigned long long)aux_.pages(),
                    (unsigned long long)aux_needed_);
    std::array<uint8_t, inithca::kSize> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    using namespace inithca;
    HcaLayout l;
    // Log sizes share the low byte of the table bases; bases are page
    // aligned, so drop the low bits.
    const uint64_t mask = ~(kIcmPageSize - 1);
    l.flags2 = uint32_t(kFlags2.get(in));
    l.qpc_base = kQpcBase.get(in) & mask;
    l.log_qps = unsigned(kLogQps.get(in));
    l.eec_base = kEecBase.get(in) & mask;
    l.log_eecs = unsigned(kLogEecs.get(in));
    l.srqc_base = kSrqcBase.get(in) & mask;
    l.log_srqs = unsigned(kLogSrqs.get(in));
    l.cqc_base = kCqcBase.get(in) & mask;
    l.log_cqs = unsigned(kLogCqs.get(in));
    l.eqpc_base = kEqpcBase.get(in);
    l.eeec_base = kEeecBase.get(in);
    l.eqc_base = kEqcBase.get(in) & mask;
    l.log_eqs = unsigned(kLogEqs.get(in));
    l.rdb_base = kRdbBase.get(in);
    l.mc_base = kMcBase.get(in);
    l.log_mc_entry = unsigned(kLogMcEntry.get(in));
    l.mc_hash_size = unsigned(kMcHashSize.get(in));
    l.log_mc_table = unsigned(kLogMcTable.get(in));
    l.mpt_base = kMptBase.get(in);
    l.log_mpts = unsigned(kLogMpts.get(in));
    l.mtt_base = kMttBase.get(in);
    l.log_uarc_pages = unsigned(kLogUarcPages.get(in));
    l.log_uars = unsigned(kLogUars.get(in));
    l.uar_page_shift = unsigned(kUarPageSz.get(in));
    l.uar_scratch_base = kUarScratchBase.get(in);
    l.uarc_base = kUarcBase.get(in);

    if (l.log_qps > kLogMaxQps || l.log_srqs > kLogMaxSrqs || l.log_cqs > kLogMaxCqs || l.log_eqs > kLogMaxEqs ||
        l.log_mpts > kLogMaxMpts || l.log_mc_table > kLogMaxMcgs)
        return fail(c, Status::BadParam, "table size beyond device limits (qp %u srq %u cq %u eq %u mpt %u mc %u)",
                    l.log_qps, l.log_srqs, l.log_cqs, l.log_eqs, l.log_mpts, l.log_mc_table);
    if (l.log_mc_entry != 8 || l.mc_hash_size == 0 || l.mc_hash_size > (1u << l.log_mc_table))
        return fail(c, Status::BadParam, "multicast table: entry log %u, hash size %u, table log %u",
                    l.log_mc_entry, l.mc_hash_size, l.log_mc_table);
    if (l.uar_page_shift != 0)
        return fail(c, Status::BadParam, "UAR page size code %u (only 4 KiB pages)", l.uar_page_shift);
    // log_uars is an 8-bit field: test its range before shifting by it.
    if (l.log_uars >= 32 || (1ull << l.log_uars) > num_uars() || l.log_uarc_pages > 8)
        return fail(c, Status::BadParam, "UAR log %u / UAR context log %u", l.log_uars, l.log_uarc_pages);
    // Every table must lie inside the ICM space.
    const struct {
        const char* name;
        uint64_t base;
        uint64_t size;
    } tables[] = {
        {"QPC", l.qpc_base, uint64_t(kQpcEntrySize) << l.log_qps},
        {"SRQC", l.srqc_base, uint64_t(kSrqcEntrySize) << l.log_srqs},
        {"CQC", l.cqc_base, uint64_t(kCqcEntrySize) << l.log_cqs},
        {"EQC", l.eqc_base, uint64_t(kEqcEntrySize) << l.log_eqs},
        {"MC", l.mc_base, uint64_t(kMgmEntrySize) << l.log_mc_table},
        {"MPT", l.mpt_base, uint64_t(kMptEntrySize) << l.log_mpts},
        {"MTT", l.mtt_base, 8},
        {"UARC", l.uarc_base, (kIcmPageSize << l.log_uarc_pages) << l.log_uars},
    };
    for (const auto& t : tables)
        if (t.base >= icm_.size() || t.size > icm_.size() - t.base)
            return fail(c, Status::BadParam, "%s table 0x%llx+0x%llx outside ICM (0x%llx)", t.name,
                        (unsigned long long)t.base, (unsigned long long)t.size, (unsigned long long)icm_.size());
    layout_ = l;
    state_ = FwState::HcaUp;
    char buf[128];
    snprintf(buf, sizeof buf, "QPs 2^%u CQs 2^%u SRQs 2^%u EQs 2^%u MPTs 2^%u MCGs 2^%u UARs 2^%u", l.log_qps,
             l.log_cqs, l.log_srqs, l.log_eqs, l.log_mpts, l.log_mc_table, l.log_uars);
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_close_hca(Cmd& c)
{
    if (c.op_mod)
        c.note = "panic close";
    cqs_.clear();
    srqs_.clear();
    mpts_.clear();
    qps_.clear();
    lazy_bytes_ = 0;
    ++obj_gen_;
    ++tpt_gen_;
    special_base_.fill(0);
    for (unsigned p = 0; p < num_ports_; ++p) {
        ports_[p].ib_open = false;
        ports_[p].state = PortState::Down;
        ports_[p].update_phys();
    }
    update_carrier();
    events_.close();
    layout_ = HcaLayout{};
    state_ = FwState::Running;
    return Status::Ok;
}

Status Core::cmd_init_ib(Cmd& c)
{
    unsigned port = c.in_mod;
    if (port < 1 || port > num_ports_)
        return fail(c, Status::BadParam, "port %u", port);
    std::array<uint8_t, initib::kSize> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    using namespace initib;
    unsigned mtu = unsigned(kMtuCap.get(in)), vl = unsigned(kVlCap.get(in)), width = unsigned(kPortWidth.get(in));
    unsigned gids = unsigned(kGidCap.get(in)), pkeys = unsigned(kPkeyCap.get(in));
    if (mtu < 1 || mtu > 4 || vl < 1 || vl > 4 || width < 1 || width > 3 || gids > kGidTableLen ||
        pkeys > kPkeyTableLen)
        return fail(c, Status::BadParam, "mtu %u vl %u width %u gids %u pkeys %u beyond port caps", mtu, vl,
                    width, gids, pkeys);
    Port& p = ports_[port - 1];
    p.mtu_cap = uint8_t(mtu);
    p.vl_cap = uint8_t(vl);
    p.width_cap = uint8_t(width);
    p.gid_cap = uint16_t(gids ? gids : kGidTableLen);
    p.pkey_cap = uint16_t(pkeys ? pkeys : kPkeyTableLen);
    if (p.neighbor_mtu > p.mtu_cap)
        p.neighbor_mtu = p.mtu_cap;
    if (kFlagG0.get(in))
        p.guid = kGuid0.get(in);
    if (kFlagNg.get(in))
        node_.node_guid = kNodeGuid.get(in);
    if (kFlagSig.get(in))
        node_.sys_image_guid = kSiGuid.get(in);
    p.ib_open = true;
    // Without a fabric the PHY keeps polling for a peer; a fabric reports
    // the link through set_port_link(), which the carrier turned on here
    // may call at once.
    p.update_phys();
    update_carrier();
    if (p.link_present && p.state == PortState::Down)
        p.state = PortState::Init;
    c.note = std::string("port ") + std::to_string(port) + " " + port_state_name(p.state) + "/" +
             phys_state_name(p.phys);
    return Status::Ok;
}

Status Core::cmd_close_ib(Cmd& c)
{
    unsigned port = c.in_mod;
    if (port < 1 || port > num_ports_)
        return fail(c, Status::BadParam, "port %u", port);
    Port& p = ports_[port - 1];
    if (!p.ib_open)
        c.note = "port already closed";
    p.ib_open = false;
    p.update_phys();
    if (p.state != PortState::Down)
        set_port_state(port, PortState::Down);
    update_carrier();
    return Status::Ok;
}

Status Core::cmd_set_ib(Cmd& c)
{
    unsigned port = c.in_mod;
    if (port < 1 || port > num_ports_)
        return fail(c, Status::BadParam, "port %u", port);
    std::array<uint8_t, setib::kSize> in{};
    if (!read_box(c, c.in_param, in))
        return Status::InternalErr;
    Port& p = ports_[port - 1];
    // The SM bit is the subnet manager's to claim; everything else is the
    // driver's to set (IBA 14.2.5.6, CapabilityMask).
    uint32_t old_mask = p.cap_mask;
    p.cap_mask = uint32_t(setib::kCapMask.get(in));
    if (p.cap_mask != old_mask && (p.cap_mask & kCapIsCapMaskNoticeSupported)) {
        // Trap 144 tells the SM (IBA 14.2.5.1): OpenSM, say, learns that
        // a port now has IsSM set.
        namespace notice = ib::notice;
        uint8_t d[64] = {};
        const FieldValue ntc[] = {
            {notice::kIsGeneric, 1},
            {notice::kType, notice::kTypeInfo},
            {notice::kProducerType, notice::kProducerCa},
            {notice::kTrapNumber, 144},
            {notice::kIssuerLid, p.lid},
            {notice::kTrap144Lid, p.lid},
            {notice::kTrap144LocalChanges, 0},
            {notice::kTrap144CapMask, p.cap_mask},
        };
        fill(std::span<uint8_t>(d), ntc);
        raise_trap(port, TrapKind::CapMask, d);
    }
    if (setib::kFlagRqk.get(in))
        p.qkey_violations = 0;
    if (setib::kFlagSig.get(in))
        node_.sys_image_guid = setib::kSiGuid.get(in);
    char buf[48];
    snprintf(buf, sizeof buf, "port %u cap_mask 0x%08x", port, p.cap_mask);
    c.note = buf;
    return Status::Ok;
}

Status Core::cmd_mad_ifc(Cmd& c)
{
    unsigned port = c.in_mod & 0xffff;
    if (port < 1 || port > num_ports_)
        return fail(c, Status::BadParam, "port %u", port);
    std::array<uint8_t, 512> in{};
    size_t in_len = (c.op_mod & kMadIfcHasWc) ? 512 : mad::kSize;
    if (!read_box(c, c.in_param, std::span<uint8_t>(in.data(), in_len)))
        return Status::InternalErr;
    std::array<uint8_t, mad::kSize> out{};
    std::span<Port> ports(ports_.data(), num_ports_);
    std::array<PortState, 2> before{ports_[0].state, ports_[1].state};
    // ib_mthca sets op_mod bit 0 (ignore M_Key) for its own queries and
    // for every MAD without a work completion; only SMPs received from
    // the fabric (or from a local SM through the MAD layer) are checked.
    MadIfcInfo info;
    info.check_mkey = !(c.op_mod & kMadIfcIgnoreMkey);
    info.slid = uint16_t(c.in_mod >> 16);
    info.now_ns = now();
    MadEffects fx;
    Status s = sma_.process(node_, ports, port, std::span<const uint8_t>(in.data(), mad::kSize), out, &c.note, info,
                            &fx);
    if (fx.bad_mkey && (c.op_mod & kMadIfcHasWc))
        raise_trap(port, TrapKind::BadMkey, fx.notice);
    if (fx.repress)
        trap_repress(port, fx.repress_tid);
    // An SM Set(PortInfo) may have moved a port; raise PORT_CHANGE as the
    // firmware does.
    for (unsigned p = 0; p < num_ports_; ++p) {
        PortState now = ports_[p].state;
        if (now != before[p]) {
            ports_[p].state = before[p];
            set_port_state(p + 1, now);
        }
    }
    if (s != Status::Ok)
        return s;  // BAD_PKT: dropped, as firmware does with MADs it has no agent for
    if (!write_box(c, c.out_param, out))
        return Status::InternalErr;
    uint16_t mstatus = uint16_t(mad::kStatus.get(out) & 0x7fff);
    if (mstatus) {
        char buf[32];
        snprintf(buf, sizeof buf, " -> MAD status 0x%04x", mstatus);
        c.note += buf;
    }
    return Status::Ok;
}

Status Core::cmd_nop(Cmd&) { return Status::Ok; }
Status Core::cmd_sync_tpt(Cmd&)
{
    ++tpt_gen_;  // drop cached MTT translations
    return Status::Ok;
}

}  // namespace ibemu::mthca
