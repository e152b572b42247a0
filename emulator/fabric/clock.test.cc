// SPDX-License-Identifier: GPL-2.0
//
// The deadline heap and the scheduler's armed sources.
#include "fabric/clock.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace ibemu::fabric {
namespace {

TEST(DeadlineHeap, MatchesAnOrderedReferenceUnderRandomArmCancelAndPop)
{
    constexpr unsigned kTimers = 512;
    std::vector<HeapNode> nodes(kTimers);
    DeadlineHeap h;
    // Reference: (deadline, seq) -> index, and what each index holds.
    std::set<std::tuple<uint64_t, uint64_t, unsigned>> ref;
    std::map<unsigned, std::pair<uint64_t, uint64_t>> at;
    uint64_t seq = 0;
    uint32_t x = 99;
    auto rnd = [&] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return x;
    };
    for (int step = 0; step < 200000; ++step) {
        unsigned i = rnd() % kTimers;
        switch (rnd() % 4) {
        case 0:
        case 1: {  // arm or move; few distinct deadlines, so many ties
            uint64_t d = rnd() % 64;
            if (at.count(i))
                ref.erase({at[i].first, at[i].second, i});
            h.arm(&nodes[i], d);
            at[i] = {d, seq};
            ref.insert({d, seq, i});
            ++seq;
            break;
        }
        case 2:
            h.cancel(&nodes[i]);
            if (at.count(i)) {
                ref.erase({at[i].first, at[i].second, i});
                at.erase(i);
            }
            break;
        case 3: {
            uint64_t now = rnd() % 64;
            HeapNode* n = h.pop_due(now);
            if (ref.empty() || std::get<0>(*ref.begin()) > now) {
                ASSERT_EQ(n, nullptr);
            } else {
                auto [d, s, idx] = *ref.begin();
                ASSERT_EQ(n, &nodes[idx]) << "step " << step;
                EXPECT_FALSE(n->armed());
                ref.erase(ref.begin());
                at.erase(idx);
            }
            break;
        }
        }
        ASSERT_EQ(h.size(), ref.size());
        ASSERT_EQ(h.next(), ref.empty() ? UINT64_MAX : std::get<0>(*ref.begin()));
    }
}

TEST(DeadlineHeap, EqualDeadlinesFireInArmOrder)
{
    HeapNode a, b, c;
    DeadlineHeap h;
    h.arm(&b, 5);
    h.arm(&a, 5);
    h.arm(&c, 5);
    h.arm(&b, 5);  // re-armed: now last
    EXPECT_EQ(h.pop_due(5), &a);
    EXPECT_EQ(h.pop_due(5), &c);
    EXPECT_EQ(h.pop_due(5), &b);
    EXPECT_EQ(h.pop_due(5), nullptr);
    h.cancel(&a);  // not armed: nothing happens
    EXPECT_TRUE(h.empty());
}

TEST(DeadlineHeap, ManyTimersStayCheap)
{
    // 300k timers armed, half cancelled, all moved once: quadratic work
    // here would take minutes, O(log n) takes milliseconds.
    constexpr unsigned kN = 300000;
    std::vector<HeapNode> nodes(kN);
    DeadlineHeap h;
    for (unsigned i = 0; i < kN; ++i)
        h.arm(&nodes[i], (i * 2654435761u) % 1000003);
    for (unsigned i = 0; i < kN; i += 2)
        h.cancel(&nodes[i]);
    for (unsigned i = 1; i < kN; i += 2)
        h.arm(&nodes[i], nodes[i].deadline + 7);
    uint64_t last = 0;
    unsigned popped = 0;
    while (HeapNode* n = h.pop_due(UINT64_MAX - 1)) {
        EXPECT_GE(n->deadline, last);
        last = n->deadline;
        ++popped;
    }
    EXPECT_EQ(popped, kN / 2);
}

struct Recorder : TimedSource {
    Scheduler* sched = nullptr;
    std::vector<std::pair<int, uint64_t>>* log = nullptr;
    int id = 0;
    uint64_t rearm_every = 0;  // 0: one shot
    unsigned rearms_left = 0;
    uint64_t next_deadline() const override { return kNever; }  // armed, never polled
    void fire(uint64_t now) override
    {
        log->push_back({id, now});
        if (rearms_left) {
            --rearms_left;
            sched->arm(this, now + rearm_every);
        }
    }
};

TEST(Scheduler, ArmedSourcesFireInDeadlineThenArmOrder)
{
    VirtualClock clock;
    Scheduler sched(clock);
    std::vector<std::pair<int, uint64_t>> log;
    std::vector<std::unique_ptr<Recorder>> r;
    for (int i = 0; i < 4; ++i) {
        r.push_back(std::make_unique<Recorder>());
        r[i]->sched = &sched;
        r[i]->log = &log;
        r[i]->id = i;
    }
    sched.arm(r[0].get(), 300);
    sched.arm(r[1].get(), 100);
    sched.arm(r[2].get(), 100);
    sched.arm(r[3].get(), 200);
    r[3]->rearm_every = 150;
    r[3]->rearms_left = 2;
    EXPECT_EQ(sched.next_deadline(), 100u);
    sched.arm(r[0].get(), kNever);  // disarm
    EXPECT_FALSE(sched.armed(r[0].get()));
    sched.run_until(clock, 1000);
    std::vector<std::pair<int, uint64_t>> want = {{1, 100}, {2, 100}, {3, 200}, {3, 350}, {3, 500}};
    EXPECT_EQ(log, want);
    EXPECT_EQ(sched.next_deadline(), kNever);
    // A source that re-arms for `now` fires once per round, not in a loop.
    log.clear();
    r[1]->rearm_every = 0;
    r[1]->rearms_left = 1000000;
    sched.arm(r[1].get(), clock.now_ns());
    EXPECT_EQ(sched.run_due(), 1u);
    EXPECT_EQ(log.size(), 1u);
    sched.remove(r[1].get());  // disarms
    EXPECT_EQ(sched.next_deadline(), kNever);
}

struct Polled : TimedSource {
    uint64_t due = kNever;
    unsigned fired = 0;
    uint64_t next_deadline() const override { return due; }
    void fire(uint64_t) override
    {
        ++fired;
        due = kNever;
    }
};

TEST(Scheduler, TheArmedPathLeavesPolledSourcesAlone)
{
    VirtualClock clock;
    Scheduler sched(clock);
    Polled p;
    p.due = 5;
    sched.add(&p);
    std::vector<std::pair<int, uint64_t>> log;
    Recorder r;
    r.sched = &sched;
    r.log = &log;
    sched.arm(&r, 5);
    clock.set(10);
    EXPECT_EQ(sched.next_armed_deadline(), 5u);
    EXPECT_EQ(sched.run_armed_due(), 1u);
    EXPECT_EQ(p.fired, 0u);
    EXPECT_EQ(sched.next_armed_deadline(), kNever);
    EXPECT_EQ(sched.next_deadline(), 5u);  // the polled one still waits
    EXPECT_EQ(sched.run_due(), 1u);
    EXPECT_EQ(p.fired, 1u);
    sched.remove(&p);
}

}  // namespace
}  // namespace ibemu::fabric
