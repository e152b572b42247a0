// SPDX-License-Identifier: GPL-2.0
//
// Memory keys are re-read from ICM the way the firmware reads them: a
// mem-free FMR remap, where the driver rewrites the MPT and MTT entries
// in ICM itself and bumps the key (mthca_arbel_map_phys_fmr of the
// 2.6.14..5.7 drivers: status byte to software, MTTs, key/lkey/length/
// start, status byte back to hardware; unmap leaves it software owned),
// takes effect at once, with no stale cached translation.
#include <gtest/gtest.h>

#include "hca/qp_test_support.h"

namespace ibemu::mthca::test {
namespace {

class Fmr : public TwoNodes {
protected:
    void connect()
    {
        qa = a.make_qp(QpService::Rc, acq, acq, 16, 16);
        qb = b.make_qp(QpService::Rc, bcq, bcq, 16, 16);
        QpParams pa, pb;
        pa.dlid = 2, pa.remote_qpn = qb.qpn;
        pb.dlid = 1, pb.remote_qpn = qa.qpn;
        a.to_rts(qa, pa);
        b.to_rts(qb, pb);
    }

    // RDMA WRITE of `len` bytes of A's sbuf to (va, rkey) on B; the CQE.
    TCqe write(uint64_t va, uint32_t rkey, uint32_t len)
    {
        a.post_send(qa, rdma_wr(wqe::kRdmaWrite, {sbuf, len, sk}, va, rkey));
        link.pump();
        TCqe c;
        EXPECT_TRUE(a.poll(acq, &c));
        return c;
    }

    uint8_t* mpt_entry() { return b.d.icm_ptr(b.d.lay.mpt_base + uint64_t(idx) * 64); }

    // mthca_arbel_map_phys_fmr: `pages` at `iova`, returns the new key.
    uint32_t map(const std::vector<uint64_t>& pages, uint64_t iova)
    {
        uint8_t* e = mpt_entry();
        uint32_t hw = key_to_index(key) + (1u << b.d.lay.log_mpts);
        e[0] = 0xf0;  // software owned while it changes
        for (size_t i = 0; i < pages.size(); ++i)
            put64(std::span<uint8_t>(b.d.icm_ptr(mtt + i * 8), 8), 0, pages[i] | 1);
        std::span<uint8_t> m(e, 64);
        put32(m, 0x08, hw);
        put32(m, 0x20, hw);
        put64(m, 0x18, pages.size() * 4096);
        put64(m, 0x10, iova);
        e[0] = 0x00;  // hardware owned again
        key = index_to_key(hw);
        return key;
    }

    void SetUp() override
    {
        TwoNodes::SetUp();
        sbuf = a.alloc(8192);
        sk = a.reg(sbuf, 8192);
        for (unsigned i = 0; i < 8192; ++i)
            a.mem().at(sbuf)[i] = uint8_t(i * 13 + 1);
        old_pages = b.alloc(8192);
        new_pages = b.alloc(8192);
        std::memset(b.mem().at(old_pages), 0, 8192);
        std::memset(b.mem().at(new_pages), 0, 8192);
        // The FMR: an MPT with its MTT segment, mapped first at old_pages.
        key = b.d.alloc_mr(old_pages, 8192, b.pd, &idx, kAccAll, 0x10000);
        mtt = mpt::kMttSeg.get(std::span<const uint8_t>(mpt_entry(), 64));
        connect();
    }

    uint64_t sbuf = 0, old_pages = 0, new_pages = 0, mtt = 0;
    uint32_t sk = 0, key = 0, idx = 0;
};

bool all_zero(const uint8_t* p, size_t n)
{
    return std::all_of(p, p + n, [](uint8_t v) { return v == 0; });
}

TEST_F(Fmr, RemapTakesEffectAndTheOldKeyFails)
{
    uint32_t k1 = key;
    TCqe c = write(0x10000 + 4096, k1, 4096);
    ASSERT_FALSE(c.error) << unsigned(c.syndrome);
    EXPECT_EQ(std::memcmp(b.mem().at(old_pages + 4096), a.mem().at(sbuf), 4096), 0);
    std::memset(b.mem().at(old_pages), 0, 8192);

    // Remap (no command at all: the driver writes ICM) to the new pages,
    // in reverse order, at another iova.
    uint32_t k2 = map({new_pages + 4096, new_pages}, 0x40000);
    ASSERT_NE(k2, k1);
    c = write(0x40000, k2, 8192);
    ASSERT_FALSE(c.error) << unsigned(c.syndrome);
    EXPECT_EQ(std::memcmp(b.mem().at(new_pages + 4096), a.mem().at(sbuf), 4096), 0);
    EXPECT_EQ(std::memcmp(b.mem().at(new_pages), a.mem().at(sbuf + 4096), 4096), 0);
    EXPECT_TRUE(all_zero(b.mem().at(old_pages), 8192)) << "a stale translation wrote the old pages";

    // The key of the earlier mapping no longer names the region.
    c = write(0x10000 + 4096, k1, 4096);
    EXPECT_TRUE(c.error);
    EXPECT_EQ(c.syndrome, cqe::kRemoteAccess);
    EXPECT_TRUE(all_zero(b.mem().at(old_pages), 8192));
}

TEST_F(Fmr, UnmappedFmrRefusesItsKey)
{
    uint32_t k2 = map({new_pages, new_pages + 4096}, 0x40000);
    TCqe c = write(0x40000, k2, 64);
    ASSERT_FALSE(c.error);
    // mthca_arbel_fmr_unmap: the status byte goes back to software.
    mpt_entry()[0] = 0xf0;
    std::memset(b.mem().at(new_pages), 0, 8192);
    c = write(0x40000, k2, 64);
    EXPECT_TRUE(c.error);
    EXPECT_EQ(c.syndrome, cqe::kRemoteAccess);
    EXPECT_TRUE(all_zero(b.mem().at(new_pages), 8192));
}

// A guest that writes nonsense into a live MPT gets its key refused, not
// a translation through whatever the entry now says.
TEST_F(Fmr, HostileMptRewriteIsRefused)
{
    std::span<uint8_t> m(mpt_entry(), 64);
    put64(m, 0x2c, 0x8);  // MTT address below the MTT table
    TCqe c = write(0x10000, key, 64);
    EXPECT_TRUE(c.error);
    EXPECT_EQ(c.syndrome, cqe::kRemoteAccess);
    EXPECT_TRUE(all_zero(b.mem().at(old_pages), 8192));
}

}  // namespace
}  // namespace ibemu::mthca::test
