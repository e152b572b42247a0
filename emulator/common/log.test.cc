// SPDX-License-Identifier: GPL-2.0
#include "common/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace ibemu {
namespace {

uint64_t g_fake_now = 0;
uint64_t fake_now() { return g_fake_now; }

class LogLimit : public ::testing::Test {
protected:
    void SetUp() override
    {
        out_ = tmpfile();
        ASSERT_NE(out_, nullptr);
        Log::set_output(out_);
        Log::set_time_source(fake_now);
        Log::set_guest_error_limit(5, 1000);
        Log::reset_counters();
        g_fake_now = 1;
    }
    void TearDown() override
    {
        Log::set_output(nullptr);
        Log::set_time_source(nullptr);
        Log::set_guest_error_limit(50, 1000000000ull);
        Log::reset_counters();
        fclose(out_);
    }
    std::string text()
    {
        fflush(out_);
        rewind(out_);
        std::string s;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), out_)) > 0)
            s.append(buf, n);
        return s;
    }
    static size_t count(const std::string& s, const std::string& what)
    {
        size_t n = 0;
        for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
            ++n;
        return n;
    }
    FILE* out_ = nullptr;
};

TEST_F(LogLimit, GuestErrorsAreLimitedPerSourceAndCounted)
{
    // A guest looping on a bad access: 1000 lines in one window.
    for (int i = 0; i < 1000; ++i)
        IBEMU_GUEST_ERROR("vm0", "bad access %d", i);
    // Another source is not held back by vm0's flood.
    for (int i = 0; i < 3; ++i)
        IBEMU_GUEST_ERROR("vm1", "other %d", i);
    std::string t = text();
    EXPECT_EQ(count(t, "guest-error vm0: bad access"), 5u);
    EXPECT_EQ(count(t, "guest-error vm1: other"), 3u);
    EXPECT_EQ(Log::suppressed("vm0"), 995u);
    EXPECT_EQ(Log::suppressed("vm1"), 0u);
    EXPECT_EQ(Log::suppressed(), 995u);
    EXPECT_EQ(Log::guest_errors(), 1003u) << "every guest error is counted, printed or not";

    // The next window: the count of what was suppressed, then lines again.
    g_fake_now += 1000;
    IBEMU_GUEST_ERROR("vm0", "after");
    t = text();
    EXPECT_NE(t.find("vm0: 995 guest-error lines suppressed (995 in all)"), std::string::npos) << t;
    EXPECT_EQ(count(t, "guest-error vm0: after"), 1u);
}

TEST_F(LogLimit, OtherLevelsAreNotLimited)
{
    for (int i = 0; i < 20; ++i)
        IBEMU_ERROR("emu", "error %d", i);
    EXPECT_EQ(count(text(), "error emu: error"), 20u);
    EXPECT_EQ(Log::suppressed(), 0u);
}

}  // namespace
}  // namespace ibemu
