// SPDX-License-Identifier: GPL-2.0
#include "hca/test_support.h"

#include <algorithm>
#include <map>
#include <string>

namespace ibemu::mthca::test {
namespace {

constexpr uint64_t kPage = 4096;

// FakeMemory recycling: RAM kept for the next FakeMemory of its size, all
// zero. A few per size (a fuzz target's world has two).
bool g_recycling = false;
std::map<size_t, std::vector<std::vector<uint8_t>>>& ram_pool()
{
    static std::map<size_t, std::vector<std::vector<uint8_t>>> pool;
    return pool;
}
constexpr size_t kPoolPerSize = 4;

constexpr uint64_t kChunk = 1u << 18;  // MTHCA_TABLE_CHUNK_SIZE

unsigned log2_of(uint64_t v)
{
    unsigned l = 0;
    while ((uint64_t(1) << l) < v)
        ++l;
    return l;
}

}  // namespace

FakeMemory::FakeMemory(size_t size, uint64_t base) : base_(base), recycled_(g_recycling)
{
    if (recycled_) {
        auto& free = ram_pool()[size];
        if (!free.empty()) {
            ram_ = std::move(free.back());
            free.pop_back();
        }
        dirty_.assign((size / kPage + 64) / 64, 0);
    }
    if (ram_.size() != size)
        ram_.assign(size, 0);
}

FakeMemory::~FakeMemory()
{
    if (!recycled_ || !g_recycling)
        return;
    auto& free = ram_pool()[ram_.size()];
    if (free.size() >= kPoolPerSize)
        return;
    // Back to all zeros: what the allocator handed out, and every page
    // written some other way.
    std::memset(ram_.data(), 0, std::min<uint64_t>(high_, ram_.size()));
    uint64_t first = high_ / kPage;
    for (uint64_t w = first / 64; w < dirty_.size(); ++w) {
        for (uint64_t bits = dirty_[w]; bits; bits &= bits - 1) {
            uint64_t pg = w * 64 + uint64_t(__builtin_ctzll(bits));
            uint64_t off = pg * kPage;
            if (off < ram_.size())
                std::memset(ram_.data() + off, 0, std::min<uint64_t>(kPage, ram_.size() - off));
        }
    }
    free.push_back(std::move(ram_));
}

void FakeMemory::set_recycling(bool on)
{
    g_recycling = on;
    if (!on)
        ram_pool().clear();
}

void FakeMemory::mark_dirty(uint64_t off, size_t len)
{
    if (len == 0)
        return;
    uint64_t last = (off + len - 1) / kPage;
    for (uint64_t pg = off / kPage; pg <= last; ++pg)
        dirty_[pg / 64] |= uint64_t(1) << (pg % 64);
}

uint64_t FakeMemory::alloc(uint64_t len, uint64_t align)
{
    uint64_t start = (next_ + align - 1) & ~(align - 1);
    if (start < next_ || start > ram_.size() || len > ram_.size() - start)
        throw Exhausted("FakeMemory exhausted: " + std::to_string(len) + " bytes aligned to " +
                        std::to_string(align) + " at offset " + std::to_string(next_) + " of " +
                        std::to_string(ram_.size()));
    uint64_t end = start + len;
    if (!recycled_) {
        std::memset(ram_.data() + start, 0, len);
    } else {
        // Recycled RAM is zero except below the high-water mark and in the
        // pages marked dirty.
        if (start < high_)
            std::memset(ram_.data() + start, 0, std::min(end, high_) - start);
        for (uint64_t pg = std::max(start, high_) / kPage; pg * kPage < end; ++pg) {
            if (dirty_[pg / 64] & (uint64_t(1) << (pg % 64))) {
                uint64_t lo = std::max(pg * kPage, std::max(start, high_));
                std::memset(ram_.data() + lo, 0, std::min(end, (pg + 1) * kPage) - lo);
            }
        }
    }
    next_ = end;
    high_ = std::max(high_, next_);
    return base_ + start;
}

Status DriverSim::table_get(uint64_t base, uint64_t obj, unsigned obj_size)
{
    uint64_t virt = base + (obj * obj_size / kChunk) * kChunk;
    if (chunks_.count(virt))
        return Status::Ok;
    // A table smaller than a chunk (the 1024 SRQ contexts) gets a chunk of
    // its own size, as mthca_alloc_icm_table clips the last chunk.
    uint64_t len = kChunk;
    if (base == lay.srqc_base && lay.log_srqs && (uint64_t(lim.srq_sz) << lay.log_srqs) < kChunk)
        len = uint64_t(lim.srq_sz) << lay.log_srqs;
    Status s = map_icm(virt, len);
    if (s == Status::Ok)
        chunks_[virt] = true;
    return s;
}

uint32_t DriverSim::alloc_mr(uint64_t buf, uint64_t len, uint32_t pd, uint32_t* mpt_index, uint32_t access,
                             uint64_t iova)
{
    uint64_t npages = (len + 4095) / 4096;
    // MTT segments of 8 entries; the first segments are reserved.
    uint32_t first_seg = std::max<uint32_t>(mtt_next_seg, lim.rsvd_mtts);
    mtt_next_seg = first_seg + uint32_t((npages + 7) / 8);
    uint64_t mtt = lay.mtt_base + uint64_t(first_seg) * 64;
    EXPECT_EQ(table_get(lay.mtt_base, first_seg, 64), Status::Ok);
    for (uint64_t i = 0; i < npages; ++i) {
        uint8_t* e = icm_ptr(mtt + i * 8);
        EXPECT_NE(e, nullptr);
        if (e)
            put64(std::span<uint8_t>(e, 8), 0, (buf + i * 4096) | 1);
    }
    uint32_t idx = std::max<uint32_t>(mpt_next, lim.rsvd_mrws);
    mpt_next = idx + 1;
    EXPECT_EQ(table_get(lay.mpt_base, idx, lim.mpt_sz), Status::Ok);
    std::memset(in().data(), 0, 64);
    put32(in(), 0x00, (0xfu << 28) | (1u << 17) | (1u << 8) | access);  // SW owns, MIO, region, access
    put32(in(), 0x04, 0);                                                // 4 KiB pages
    put32(in(), 0x08, idx);
    put32(in(), 0x0c, pd);
    put64(in(), 0x10, iova);
    put64(in(), 0x18, npages * 4096);
    put64(in(), 0x2c, mtt);
    EXPECT_EQ(cmd(op::kSw2HwMpt, in_box(), 0, idx), Status::Ok);
    if (mpt_index)
        *mpt_index = idx;
    return index_to_key(idx);
}

uint32_t DriverSim::alloc_phys_mr(uint32_t pd, uint32_t* mpt_index)
{
    uint32_t idx = std::max<uint32_t>(mpt_next, lim.rsvd_mrws);
    mpt_next = idx + 1;
    EXPECT_EQ(table_get(lay.mpt_base, idx, lim.mpt_sz), Status::Ok);
    std::memset(in().data(), 0, 64);
    put32(in(), 0x00, (0xfu << 28) | (1u << 17) | (1u << 9) | (1u << 8) | 0x3);
    put32(in(), 0x08, idx);
    put32(in(), 0x0c, pd);
    put64(in(), 0x18, ~0ull);
    EXPECT_EQ(cmd(op::kSw2HwMpt, in_box(), 0, idx), Status::Ok);
    if (mpt_index)
        *mpt_index = idx;
    return index_to_key(idx);
}

void DriverSim::create_eq(SimEq& eq, uint32_t eqn, uint32_t nent, uint8_t intr)
{
    eq.eqn = eqn;
    eq.nent = nent;
    eq.intr = intr;
    eq.buf = mem().alloc(uint64_t(nent) * 32);
    uint8_t* ent = mem().at(eq.buf);
    for (uint32_t i = 0; i < nent; ++i)
        ent[i * 32 + 31] = 0x80;  // all entries HW owned
    eq.lkey = alloc_mr(eq.buf, uint64_t(nent) * 32, driver_pd, &eq.mpt);
    std::memset(in().data(), 0, 64);
    put32(in(), 0x00, (1u << 24) | (1u << 8) | (1u << 18) | (8u << 8));  // HW owner, armed, TR, Arbel
    put32(in(), 0x0c, log2_of(nent) << 24);
    put8(in(), 0x17, intr);
    put32(in(), 0x18, driver_pd);
    put32(in(), 0x1c, eq.lkey);
    EXPECT_EQ(cmd(op::kSw2HwEq, in_box(), 0, eqn), Status::Ok);
}

void DriverSim::bring_up(bool msi_x)
{
    msi_x_ = msi_x;
    // mthca_reset(): the magic at 0xf0010, then the config header comes back.
    write_be32(0, kResetOffset, 1);
    ASSERT_EQ(dev_->config_read(0, 4), 0x628215b3u);
    dev_->config_write(4, 2, 0x0006);  // memory + bus master

    // mthca_QUERY_FW.
    ASSERT_EQ(cmd(op::kQueryFw, 0, out_box()), Status::Ok);
    fw_ver = get64(out(), 0);
    unsigned fw_pages = get16(out(), 0);
    // mthca_ENABLE_LAM: mem-free, so LAM_NOT_PRE.
    ASSERT_EQ(cmd(op::kEnableLam, 0, out_box()), Status::LamNotPre);
    // mthca_load_fw: MAP_FA + RUN_FW.
    uint64_t fa = mem().alloc(uint64_t(fw_pages) * 4096, uint64_t(fw_pages) * 4096);
    put64(in(), 0, 0);
    put64(in(), 8, fa | log2_of(fw_pages));
    ASSERT_EQ(cmd(op::kMapFa, in_box(), 0, 1), Status::Ok);
    ASSERT_EQ(cmd(op::kRunFw), Status::Ok);

    // mthca_dev_lim.
    ASSERT_EQ(cmd(op::kQueryDevLim, 0, out_box()), Status::Ok);
    auto o = out();
    lim.rsvd_qps = 1u << (o[0x12] & 0xf);
    lim.max_srqs = 1u << (o[0x15] & 0x1f);
    lim.rsvd_cqs = 1u << (o[0x1a] & 0xf);
    lim.rsvd_eqs = 1u << (o[0x1e] & 0xf);
    lim.rsvd_mtts = unsigned(((1u << (o[0x20] >> 4)) * 8 + 63) / 64);
    lim.rsvd_mrws = 1u << (o[0x22] & 0xf);
    lim.num_ports = o[0x37] & 0xf;
    lim.rsvd_uars = o[0x48] >> 4;
    lim.uar_size = 1u << ((o[0x49] & 0x3f) + 20);
    lim.flags = get32(o, 0x44);
    lim.eec_sz = get16(o, 0x80);
    lim.qpc_sz = get16(o, 0x82);
    lim.eeec_sz = get16(o, 0x84);
    lim.eqpc_sz = get16(o, 0x86);
    lim.eqc_sz = get16(o, 0x88);
    lim.cqc_sz = get16(o, 0x8a);
    lim.srq_sz = get16(o, 0x8c);
    lim.uar_scratch_sz = get16(o, 0x8e);
    lim.mpt_sz = get16(o, 0x92);
    lim.max_icm = get64(o, 0xa0);

    // mthca_make_profile with the module defaults.
    struct Res {
        int type;
        uint64_t size;
        uint64_t num;
        uint64_t start = 0;
    };
    const uint64_t num_uar = lim.uar_size / 4096;
    std::vector<Res> res = {
        {0, lim.qpc_sz, 1 << 16},      {1, lim.eec_sz, 0},           {2, lim.srq_sz, lim.max_srqs},
        {3, lim.cqc_sz, 1 << 16},      {4, lim.eqpc_sz, 1 << 16},    {5, lim.eeec_sz, 0},
        {6, lim.eqc_sz, 32},           {7, 32, (1 << 16) * 4},       {8, 256, 1 << 13},
        {9, lim.mpt_sz, 1 << 17},      {10, 64, 1 << 20},            {11, lim.uar_scratch_sz, num_uar},
        {12, 32, 0},                   {13, 1 << 18, num_uar},
    };
    for (Res& r : res)
        r.size = std::max<uint64_t>(r.size * r.num, 4096);
    std::stable_sort(res.begin(), res.end(), [](const Res& a, const Res& b) { return a.size > b.size; });
    uint64_t total = 0;
    for (Res& r : res) {
        r.start = total;
        total += r.size;
    }
    ASSERT_LE(total, lim.max_icm);
    auto lg = [](uint64_t n) { return n ? unsigned(__builtin_ctzll(n)) : 0u; };
    for (const Res& r : res) {
        switch (r.type) {
        case 0: lay.qpc_base = r.start, lay.log_qps = lg(r.num); break;
        case 1: lay.eec_base = r.start, lay.log_eecs = lg(r.num); break;
        case 2: lay.srqc_base = r.start, lay.log_srqs = lg(r.num); break;
        case 3: lay.cqc_base = r.start, lay.log_cqs = lg(r.num); break;
        case 4: lay.eqpc_base = r.start; break;
        case 5: lay.eeec_base = r.start; break;
        case 6: lay.eqc_base = r.start, lay.log_eqs = lg(r.num); break;
        case 7: lay.rdb_base = r.start; break;
        case 8:
            lay.mc_base = r.start, lay.log_mc_table = lg(r.num), lay.mc_hash_size = unsigned(r.num / 2);
            lay.log_mc_entry = 8;
            break;
        case 9: lay.mpt_base = r.start, lay.log_mpts = lg(r.num); break;
        case 10: lay.mtt_base = r.start; break;
        case 11: lay.uar_scratch_base = r.start; break;
        case 13: lay.uarc_base = r.start, lay.log_uarc_pages = 6, lay.log_uars = lg(num_uar); break;
        default: break;
        }
    }
    icm_size = total;

    // mthca_init_icm.
    uint64_t aux_pages = 0;
    ASSERT_EQ(cmd(op::kSetIcmSize, icm_size, 0, 0, 0, &aux_pages), Status::Ok);
    ASSERT_GT(aux_pages, 0u);
    uint64_t aux = mem().alloc(aux_pages * 4096);
    for (uint64_t i = 0; i < aux_pages; ++i) {
        put64(in(), i % 256 * 16, 0);
        put64(in(), i % 256 * 16 + 8, aux + i * 4096);
        if (i % 256 == 255 || i + 1 == aux_pages) {
            ASSERT_EQ(cmd(op::kMapIcmAux, in_box(), 0, unsigned(i % 256 + 1)), Status::Ok);
        }
    }
    ASSERT_EQ(map_icm(lay.eqc_base, 4096), Status::Ok);  // mthca_map_eq_icm
    // Reserved parts of the tables, and the whole multicast table.
    ASSERT_EQ(table_get(lay.mtt_base, 0, 64), Status::Ok);
    ASSERT_EQ(table_get(lay.mpt_base, 0, lim.mpt_sz), Status::Ok);
    ASSERT_EQ(table_get(lay.qpc_base, 0, lim.qpc_sz), Status::Ok);
    ASSERT_EQ(table_get(lay.eqpc_base, 0, lim.eqpc_sz), Status::Ok);
    ASSERT_EQ(table_get(lay.cqc_base, 0, lim.cqc_sz), Status::Ok);
    ASSERT_EQ(table_get(lay.srqc_base, 0, lim.srq_sz), Status::Ok);
    for (uint64_t off = 0; off < 256ull << 13; off += kChunk)
        ASSERT_EQ(table_get(lay.mc_base, off / 256, 256), Status::Ok);

    // mthca_INIT_HCA.
    std::memset(in().data(), 0, 0x200);
    put32(in(), 0x14, 1);  // check port for UD AVs; little-endian host
    auto put_base_log = [&](size_t off, uint64_t base, unsigned log) {
        put64(in(), off, base);
        put8(in(), off + 7, uint8_t(log));
    };
    put_base_log(0x30, lay.qpc_base, lay.log_qps);
    put_base_log(0x40, lay.eec_base, lay.log_eecs);
    put_base_log(0x48, lay.srqc_base, lay.log_srqs);
    put_base_log(0x50, lay.cqc_base, lay.log_cqs);
    put64(in(), 0x60, lay.eqpc_base);
    put64(in(), 0x70, lay.eeec_base);
    put_base_log(0x80, lay.eqc_base, lay.log_eqs);
    put64(in(), 0x90, lay.rdb_base);
    put64(in(), 0xc0, lay.mc_base);
    put16(in(), 0xd2, uint16_t(lay.log_mc_entry));
    put16(in(), 0xd6, uint16_t(lay.mc_hash_size));
    put8(in(), 0xdb, uint8_t(lay.log_mc_table));
    put64(in(), 0xf0, lay.mpt_base);
    put8(in(), 0xfb, uint8_t(lay.log_mpts));
    put64(in(), 0x100, lay.mtt_base);
    put8(in(), 0x129, uint8_t(lay.log_uarc_pages));
    put8(in(), 0x12a, uint8_t(lay.log_uars));
    put8(in(), 0x12b, 0);
    put64(in(), 0x130, lay.uar_scratch_base);
    put64(in(), 0x138, lay.uarc_base);
    if (before_init_hca)
        before_init_hca(in());
    ASSERT_EQ(cmd(op::kInitHca, in_box()), init_hca_expect);
    if (init_hca_expect != Status::Ok)
        return;
    ASSERT_EQ(cmd(op::kQueryAdapter, 0, out_box()), Status::Ok);

    // mthca_setup_hca: driver PD, EQ table, then events.
    driver_pd = 0;
    if (!msi_x)
        dev_->config_write(kMsixCapOffset + 2, 2, 0);
    else
        dev_->config_write(kMsixCapOffset + 2, 2, 0x8000);
    eqs_.resize(3);
    uint8_t pin = kIntaPin;
    create_eq(eqs_[0], lim.rsvd_eqs + 0, comp_eq_entries, msi_x ? 128 : pin);
    create_eq(eqs_[1], lim.rsvd_eqs + 1, 256, msi_x ? 129 : pin);
    create_eq(eqs_[2], lim.rsvd_eqs + 2, 256, msi_x ? 130 : pin);
    // MTHCA_ASYNC_EVENT_MASK | MTHCA_SRQ_EVENT_MASK (mthca_eq.c).
    const uint64_t async_mask = 0xfeull | (1ull << 0x10) | (1ull << 0x11) | (1ull << 0x08) | (1ull << 0x09) |
                                (1ull << 0x0e) | (7ull << 0x12);
    ASSERT_EQ(cmd(op::kMapEq, async_mask, 0, eqs_[1].eqn), Status::Ok);
    ASSERT_EQ(cmd(op::kMapEq, 1ull << ev::kCmd, 0, eqs_[2].eqn), Status::Ok);
    for (SimEq& eq : eqs_)
        write_be32(0, kEqArmBase + 4, 1u << eq.eqn);
    events_ = true;
    ASSERT_EQ(cmd(op::kNop, 0, 0, 0x1f), Status::Ok);

    // mthca_init_qp_table: the special QPs.
    sqp_start = (lim.rsvd_qps + 1) & ~1u;
    ASSERT_EQ(cmd(op::kConfSpecialQp, 0, 0, sqp_start, 0), Status::Ok);
    ASSERT_EQ(cmd(op::kConfSpecialQp, 0, 0, sqp_start + 2, 1), Status::Ok);
}

void DriverSim::tear_down()
{
    ASSERT_EQ(cmd(op::kConfSpecialQp, 0, 0, 0, 0), Status::Ok);
    ASSERT_EQ(cmd(op::kConfSpecialQp, 0, 0, 0, 1), Status::Ok);
    events_ = false;  // mthca_cmd_use_polling
    ASSERT_EQ(cmd(op::kMapEq, 0x52ff, 0, 0x80000000u | eqs_[1].eqn), Status::Ok);
    ASSERT_EQ(cmd(op::kMapEq, 1ull << ev::kCmd, 0, 0x80000000u | eqs_[2].eqn), Status::Ok);
    for (SimEq& eq : eqs_) {
        ASSERT_EQ(cmd(op::kHw2SwEq, 0, out_box(), eq.eqn), Status::Ok);
        ASSERT_EQ(cmd(op::kHw2SwMpt, 0, 0, eq.mpt, 1), Status::Ok);
    }
    ASSERT_EQ(cmd(op::kCloseHca), Status::Ok);
    for (auto& [virt, m] : icm_)
        ASSERT_EQ(cmd(op::kUnmapIcm, virt, 0, uint32_t(m.second / 4096)), Status::Ok);
    icm_.clear();
    chunks_.clear();
    ASSERT_EQ(cmd(op::kUnmapIcmAux), Status::Ok);
    ASSERT_EQ(cmd(op::kUnmapFa), Status::Ok);
    eqs_.clear();
}

}  // namespace ibemu::mthca::test
