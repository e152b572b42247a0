// SPDX-License-Identifier: GPL-2.0
//
// Test doubles for the HCA model: vector-backed guest RAM, an interrupt
// recorder, and DriverSim, which talks to the model the way ib_mthca does
// (HCR protocol of mthca_cmd.c, EQ handling of mthca_eq.c, bring-up order
// of mthca_main.c).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "hca/core.h"
#include "hca/mthca.h"
#include "hca/mthca_hca.h"
#include "hca/regs.h"
#include "hca/wire.h"

namespace ibemu::mthca::test {

// Guest RAM at guest-physical [base, base + size).
//
// Recycling (FakeMemory::set_recycling, for the fuzz targets, which build a
// fresh model for every input): the RAM of a destroyed FakeMemory is kept
// for the next one of the same size instead of being freed, with every
// page that was written zeroed again, so building one costs neither an
// allocation nor a page fault. "Written" means: below the allocator's
// high-water mark, through write() or map_range(), or the page of an at()
// pointer (a harness writing through at() beyond one page must stay inside
// memory it allocated).
class FakeMemory : public GuestMemory {
public:
    explicit FakeMemory(size_t size, uint64_t base = 0x100000);
    ~FakeMemory() override;
    FakeMemory(const FakeMemory&) = delete;
    FakeMemory& operator=(const FakeMemory&) = delete;

    bool read(uint64_t gpa, void* dst, size_t len) override
    {
        if (!contains(gpa, len))
            return false;
        std::memcpy(dst, ram_.data() + (gpa - base_), len);
        return true;
    }
    bool write(uint64_t gpa, const void* src, size_t len) override
    {
        if (!contains(gpa, len))
            return false;
        if (recycled_)
            mark_dirty(gpa - base_, len);
        std::memcpy(ram_.data() + (gpa - base_), src, len);
        return true;
    }
    uint8_t* map_range(uint64_t gpa, size_t len) override
    {
        if (!mappable_ || !contains(gpa, len))
            return nullptr;
        if (recycled_)
            mark_dirty(gpa - base_, len);
        return ram_.data() + (gpa - base_);
    }
    // Off: the model must fall back to read/write (like a GuestMemory
    // without zero-copy support).
    void set_mappable(bool on) { mappable_ = on; }
    bool contains(uint64_t gpa, size_t len) const
    {
        if (hole_len_ && gpa < hole_ + hole_len_ && hole_ < gpa + len)
            return false;
        return gpa >= base_ && gpa - base_ <= ram_.size() && len <= ram_.size() - (gpa - base_);
    }
    // A range that is not RAM (as the PCI hole below 4 GiB is not): no
    // read, write or mapping touching it succeeds. len 0 removes it.
    void set_hole(uint64_t gpa, uint64_t len) { hole_ = gpa, hole_len_ = len; }
    uint8_t* at(uint64_t gpa)
    {
        if (recycled_ && gpa - base_ >= high_ && contains(gpa, 1))
            mark_dirty(gpa - base_, 1);
        return ram_.data() + (gpa - base_);
    }
    uint64_t base() const { return base_; }
    uint64_t mark() const { return next_; }
    void rewind(uint64_t mark) { next_ = mark; }
    size_t size() const { return ram_.size(); }

    // What alloc() throws when the RAM cannot hold the request: a test
    // that gave its FakeMemory too little RAM fails (GoogleTest reports the
    // exception) instead of writing past the end.
    struct Exhausted : std::length_error {
        using std::length_error::length_error;
    };

    // Page allocator for the simulated driver: aligned to `align` (a power
    // of two), the pages zeroed. Throws Exhausted, allocating nothing, when
    // [aligned start, + len) does not fit.
    uint64_t alloc(uint64_t len, uint64_t align = 4096);

    // See the class comment. Off by default; affects FakeMemory objects
    // created (and destroyed) while it is on.
    static void set_recycling(bool on);

private:
    void mark_dirty(uint64_t off, size_t len);

    uint64_t base_;
    std::vector<uint8_t> ram_;
    uint64_t next_ = 0;
    uint64_t high_ = 0;             // highest next_ so far
    bool mappable_ = true;
    uint64_t hole_ = 0, hole_len_ = 0;
    bool recycled_ = false;         // created while recycling was on
    std::vector<uint64_t> dirty_;   // one bit per 4 KiB page, with recycled_
};

class RecordingIrq : public InterruptSink {
public:
    void msix(unsigned vector) override { msix_.push_back(vector); }
    void intx(bool level) override
    {
        level_ = level;
        intx_changes_.push_back(level);
    }
    std::vector<unsigned> msix_;
    std::vector<bool> intx_changes_;
    bool level_ = false;
};

// What QUERY_DEV_LIM told the simulated driver.
struct DevLim {
    unsigned rsvd_qps, rsvd_cqs, rsvd_mtts, rsvd_mrws, rsvd_eqs, rsvd_uars, num_ports, uar_size, max_srqs;
    unsigned qpc_sz, eec_sz, eqpc_sz, eeec_sz, eqc_sz, cqc_sz, srq_sz, uar_scratch_sz, mpt_sz;
    uint64_t max_icm;
    uint32_t flags;
};

inline constexpr size_t kMailbox = 4096;

class DriverSim {
public:
    explicit DriverSim(size_t ram = 96u << 20, unsigned ports = 1)
        : mem_(ram)
    {
        MthcaConfig cfg;
        cfg.name = "mthca-test";
        cfg.num_ports = ports;
        cfg.node_guid = 0x0002c90300001230ull;
        cfg.clock = &clock_;
        dev_ = std::make_unique<Hca>(cfg, mem_, irq_);
        in_box_ = mem_.alloc(kMailbox);
        out_box_ = mem_.alloc(kMailbox);
        mark_ = mem_.mark();
    }

    // Forget everything the simulated driver allocated (between rounds).
    void rewind()
    {
        mem_.rewind(mark_);
        icm_.clear();
        chunks_.clear();
        eqs_.clear();
        mpt_next = mtt_next_seg = 0;
        events_ = false;
    }

    Hca& hca() { return *dev_; }
    Core& core() { return dev_->core(); }
    FakeMemory& mem() { return mem_; }
    RecordingIrq& irq() { return irq_; }
    // The model's clock: stays at 0 unless a test sets it (the model then
    // takes the later of it and the last poll() time).
    fabric::VirtualClock& clock() { return clock_; }
    uint64_t in_box() const { return in_box_; }
    uint64_t out_box() const { return out_box_; }
    std::span<uint8_t> in() { return {mem_.at(in_box_), kMailbox}; }
    std::span<uint8_t> out() { return {mem_.at(out_box_), kMailbox}; }

    // ---- raw MMIO as the CPU does it (big-endian registers) ------------
    void write_be32(unsigned bar, uint64_t off, uint32_t v) { dev_->mmio_write(bar, off, 4, __builtin_bswap32(v)); }
    uint32_t read_be32(unsigned bar, uint64_t off) { return __builtin_bswap32(uint32_t(dev_->mmio_read(bar, off, 4))); }
    void write_be64(unsigned bar, uint64_t off, uint64_t v) { dev_->mmio_write(bar, off, 8, __builtin_bswap64(v)); }

    // ---- the HCR protocol (mthca_cmd_post_hcr) --------------------------
    bool go_bit() { return read_be32(0, kHcrBase + kHcrStatus) & kHcrGoBit; }

    void post(uint64_t in_param, uint64_t out_param, uint32_t in_mod, uint8_t op_mod, uint16_t op, uint16_t token,
              bool event)
    {
        write_be32(0, kHcrBase + 0, uint32_t(in_param >> 32));
        write_be32(0, kHcrBase + 4, uint32_t(in_param));
        write_be32(0, kHcrBase + 8, in_mod);
        write_be32(0, kHcrBase + 12, uint32_t(out_param >> 32));
        write_be32(0, kHcrBase + 16, uint32_t(out_param));
        write_be32(0, kHcrBase + 20, uint32_t(token) << 16);
        write_be32(0, kHcrBase + 24,
                   kHcrGoBit | (event ? kHcrEventBit : 0) | (uint32_t(op_mod) << 12) | op);
    }

    // Run one command; returns the firmware status. In event mode the
    // status comes from the command-completion EQE.
    Status cmd(uint16_t op, uint64_t in_param = 0, uint64_t out_param = 0, uint32_t in_mod = 0,
               uint8_t op_mod = 0, uint64_t* imm = nullptr)
    {
        uint64_t outp = imm ? *imm : out_param;
        if (!events_) {
            post(in_param, outp, in_mod, op_mod, op, 0xffff, false);
            EXPECT_FALSE(go_bit()) << "command did not complete synchronously";
            if (imm)
                *imm = uint64_t(read_be32(0, kHcrBase + kHcrOutParamHi)) << 32 |
                       read_be32(0, kHcrBase + kHcrOutParamLo);
            return Status(read_be32(0, kHcrBase + kHcrStatus) >> 24);
        }
        uint16_t token = uint16_t(next_token_++);
        size_t msix_before = irq_.msix_.size();
        post(in_param, outp, in_mod, op_mod, op, token, true);
        EXPECT_FALSE(go_bit());
        // The interrupt of the command EQ must have fired.
        if (msi_x_) {
            // At least the command EQ's; a command may also raise an
            // asynchronous event first (e.g. 2ERR of an SRQ QP).
            EXPECT_GE(irq_.msix_.size(), msix_before + 1) << "no MSI-X for command completion";
            if (irq_.msix_.size() > msix_before) {
                EXPECT_EQ(irq_.msix_.back(), 2u) << "command EQ uses vector 2";
            }
        } else {
            EXPECT_TRUE(irq_.level_) << "INTx not asserted for command completion";
        }
        last_event_ok_ = false;
        interrupt();
        EXPECT_TRUE(last_event_ok_) << "no command completion EQE with token " << token;
        EXPECT_EQ(last_token_, token);
        if (imm)
            *imm = last_out_;
        return last_status_;
    }

    // ---- EQ handling (mthca_eq_int + the Arbel interrupt handlers) -----
    struct SimEq {
        uint32_t eqn = 0;
        uint32_t nent = 0;
        uint64_t buf = 0;  // guest-physical, contiguous
        uint32_t cons = 0;
        uint32_t lkey = 0;
        uint32_t mpt = 0;
        uint8_t intr = 0;
        std::vector<std::array<uint8_t, 32>> seen;
    };

    void interrupt()
    {
        if (!msi_x_)
            write_be32(0, kClrIntBase + 4, 1u << (kIntaPin & 31));
        for (SimEq& eq : eqs_) {
            if (!eq.nent)
                continue;
            bool work = false;
            for (;;) {
                uint8_t* e = mem_.at(eq.buf + (eq.cons & (eq.nent - 1)) * 32);
                if (e[31] & 0x80)
                    break;
                std::array<uint8_t, 32> copy;
                std::memcpy(copy.data(), e, 32);
                eq.seen.push_back(copy);
                if (e[1] == ev::kCmd) {
                    last_token_ = get16(copy, 4 + 2);
                    last_status_ = Status(copy[4 + 11]);
                    last_out_ = get64(copy, 4 + 12);
                    last_event_ok_ = true;
                }
                e[31] = 0x80;
                ++eq.cons;
                work = true;
            }
            if (work || msi_x_)
                write_be32(0, kEqSetCiBase + eq.eqn * 8, eq.cons);
            write_be32(0, kEqArmBase + 4, 1u << eq.eqn);
        }
    }

    // ---- ICM bookkeeping of the simulated driver ------------------------
    // Map `bytes` of ICM at `virt` with freshly allocated pages, in one
    // chunk aligned to its size (like mthca_alloc_icm with order > 0).
    Status map_icm(uint64_t virt, uint64_t bytes)
    {
        uint64_t phys = mem_.alloc(bytes, bytes);
        put64(in(), 0, virt);
        unsigned lg = 0;
        while ((4096ull << lg) < bytes)
            ++lg;
        put64(in(), 8, phys | lg);
        Status s = cmd(op::kMapIcm, in_box_, 0, 1);
        if (s == Status::Ok)
            icm_[virt] = {phys, bytes};
        return s;
    }
    uint8_t* icm_ptr(uint64_t virt)
    {
        auto it = icm_.upper_bound(virt);
        if (it == icm_.begin())
            return nullptr;
        --it;
        if (virt - it->first >= it->second.second)
            return nullptr;
        return mem_.at(it->second.first + (virt - it->first));
    }

    // ---- the bring-up of mthca_init_arbel + mthca_setup_hca -------------
    void bring_up(bool msi_x = true);
    // A test's edit of the INIT_HCA mailbox, and the status INIT_HCA must
    // then give (bring_up stops there if it is not Ok).
    std::function<void(std::span<uint8_t>)> before_init_hca;
    Status init_hca_expect = Status::Ok;
    void tear_down();
    // Memory region over a contiguous buffer (mthca_mr_alloc_phys),
    // writing the MTT entries straight into ICM as the mem-free driver
    // does. Returns the lkey.
    uint32_t alloc_mr(uint64_t buf, uint64_t len, uint32_t pd, uint32_t* mpt_index, uint32_t access = 0x3,
                      uint64_t iova = 0);
    uint32_t alloc_phys_mr(uint32_t pd, uint32_t* mpt_index);
    void create_eq(SimEq& eq, uint32_t eqn, uint32_t nent, uint8_t intr);

    DevLim lim{};
    HcaLayout lay{};
    // Entries of the completion EQ bring_up() creates: ib_mthca's size for
    // the default profile (65536 CQs plus spares, rounded up), 4 MiB of
    // RAM. A harness that builds many HCAs (the fuzz targets) may set less.
    uint32_t comp_eq_entries = 1u << 17;
    uint64_t fw_ver = 0;
    uint64_t icm_size = 0;
    uint32_t mpt_next = 0, mtt_next_seg = 0;
    std::vector<SimEq> eqs_;
    bool events_ = false;
    bool msi_x_ = true;
    uint32_t driver_pd = 0;
    unsigned sqp_start = 0;

    // Rounds a chunk-table mapping like mthca_table_get: 256 KiB chunks.
    Status table_get(uint64_t base, uint64_t obj, unsigned obj_size);
    std::map<uint64_t, bool> chunks_;

private:
    FakeMemory mem_;
    RecordingIrq irq_;
    fabric::VirtualClock clock_;
    std::unique_ptr<Hca> dev_;
    uint64_t in_box_, out_box_, mark_;
    unsigned next_token_ = 1;
    uint16_t last_token_ = 0;
    Status last_status_ = Status::Ok;
    uint64_t last_out_ = 0;
    bool last_event_ok_ = false;
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> icm_;  // virt -> (phys, size)
};

}  // namespace ibemu::mthca::test
