// SPDX-License-Identifier: GPL-2.0
//
// Time for the fabric. Nothing in the fabric reads the system clock or owns
// a thread: a Clock says what time it is (virtual in tests, CLOCK_MONOTONIC
// in the server), and the owner of the event loop asks the Scheduler when it
// next has work (next_deadline(), for a poll() timeout) and lets it run what
// is due (run_due()).
//
// Work comes from TimedSources (a link direction with packets in flight, a
// host MAD endpoint's request timeout). A source arms itself in the
// scheduler's deadline heap for its earliest deadline and does what is due
// when fired; the scheduler keeps no per-event objects, so deferring a
// packet costs no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ibemu::fabric {

inline constexpr uint64_t kNever = UINT64_MAX;

class Clock {
public:
    virtual ~Clock() = default;
    virtual uint64_t now_ns() const = 0;
};

class VirtualClock final : public Clock {
public:
    uint64_t now_ns() const override { return now_; }
    void set(uint64_t t) { now_ = t; }
    void advance(uint64_t dt) { now_ += dt; }

private:
    uint64_t now_ = 0;
};

class MonotonicClock final : public Clock {
public:
    uint64_t now_ns() const override;
};

// An entry of a DeadlineHeap; embed one per timer. Not copyable while
// armed (the heap points at it).
struct HeapNode {
    static constexpr size_t kNotArmed = SIZE_MAX;
    uint64_t deadline = UINT64_MAX;
    uint64_t seq = 0;            // arm order: ties fire first-armed first
    size_t pos = kNotArmed;      // index in the heap, kNotArmed when not armed
    bool armed() const { return pos != kNotArmed; }
};

// A binary min-heap of timers by (deadline, arm order): arm (insert or
// move), cancel and pop are O(log n), the earliest deadline O(1). The order
// is total, so equal deadlines fire in the order they were armed: runs are
// deterministic. Nodes are intrusive: the heap owns no memory per timer
// beyond one pointer.
class DeadlineHeap {
public:
    // Arms n for `deadline` (re-arming moves it; it then counts as armed
    // last among equal deadlines).
    void arm(HeapNode* n, uint64_t deadline);
    void cancel(HeapNode* n);
    // The earliest deadline, or kNever-like UINT64_MAX when empty.
    uint64_t next() const { return heap_.empty() ? UINT64_MAX : heap_[0]->deadline; }
    HeapNode* top() const { return heap_.empty() ? nullptr : heap_[0]; }
    // Removes and returns the earliest node due at `now`, or nullptr.
    HeapNode* pop_due(uint64_t now);
    size_t size() const { return heap_.size(); }
    bool empty() const { return heap_.empty(); }
    // The arm-order number the next arm() gets.
    uint64_t next_seq() const { return seq_; }

private:
    static bool before(const HeapNode* a, const HeapNode* b)
    {
        return a->deadline != b->deadline ? a->deadline < b->deadline : a->seq < b->seq;
    }
    void place(size_t i, HeapNode* n)
    {
        heap_[i] = n;
        n->pos = i;
    }
    void up(size_t i);
    void down(size_t i);

    std::vector<HeapNode*> heap_;
    uint64_t seq_ = 0;
};

class TimedSource {
public:
    virtual ~TimedSource() = default;
    // Earliest time this source has work for, or kNever.
    virtual uint64_t next_deadline() const = 0;
    // Do what is due at `now`. Work that becomes due during the call (a
    // packet deferred at `now`) may be left for the next call.
    virtual void fire(uint64_t now) = 0;

protected:
    // The deadline this source is armed for (Scheduler::arm()), or kNever.
    uint64_t armed_deadline() const { return timer_.armed() ? timer_.deadline : kNever; }

private:
    friend class Scheduler;
    struct Node : HeapNode {
        TimedSource* source = nullptr;
    };
    Node timer_;  // when armed with Scheduler::arm()
    bool credit_sleeper_ = false;  // in Scheduler's list for credits_moved()
};

class Scheduler {
public:
    explicit Scheduler(Clock& clock) : clock_(clock) {}

    Clock& clock() { return clock_; }
    uint64_t now() const { return clock_.now_ns(); }

    // Two kinds of sources. Polled ones (add()) are asked for
    // next_deadline() on every round: fine for a few (nothing in the tree
    // uses them now). Armed ones (link directions, MAD timeouts) say when
    // they are due (arm(), again after every change, kNever to disarm) and
    // sit in a DeadlineHeap: O(log n) per change and nothing per round, for
    // the many timers of a large fabric. An armed source is fired once
    // when due, then disarmed: fire() re-arms it if it has more to do; its
    // next_deadline() is not consulted.
    void add(TimedSource* s);
    void remove(TimedSource* s);  // also disarms, and forgets a credit sleeper
    void arm(TimedSource* s, uint64_t deadline);
    void disarm(TimedSource* s) { heap_.cancel(&s->timer_); }
    bool armed(const TimedSource* s) const { return s->timer_.armed(); }

    uint64_t next_deadline() const;
    // The armed sources alone: no scan of the polled ones.
    uint64_t next_armed_deadline() const { return heap_.next(); }
    unsigned run_armed_due();
    // Fires every source due now, once each. Returns how many fired. A
    // caller that wants everything due to settle calls it until it returns 0
    // (settle() does that, with a bound so a forwarding loop cannot hang).
    unsigned run_due();
    // run_due() until nothing is due, at most max_rounds rounds.
    void settle(unsigned max_rounds = 1000);

    // Virtual time only: advance the clock to `t`, running everything due
    // on the way in time order.
    void run_until(VirtualClock& vc, uint64_t t);

    // How many synchronous deliveries are nested right now (links use it to
    // bound a zero-latency forwarding loop).
    unsigned delivery_depth = 0;
    // Synchronous deliveries since the outermost one began: one transmit
    // and everything it caused at once. Links refuse more than
    // kMaxSyncDeliveries (link.h), so a multicast loop that fans out at
    // every hop ends after that many instead of ~fan-out^depth.
    uint64_t sync_deliveries = 0;
    // Bumped (by credits_moved()) whenever a link direction hands credits
    // back (a packet left its receive buffer). A direction whose head packet
    // the receiver refused (accepts() false) sleeps until this moves.
    uint64_t credit_epoch = 0;
    // An armed source with work that waits for credit_epoch to move (and
    // no deadline before that): credits_moved() arms it at its
    // next_deadline(). Once per sleep: a source asks again after it wakes.
    void sleep_on_credits(TimedSource* s);
    // Credits moved somewhere: bump credit_epoch, wake the sleepers (in the
    // order they went to sleep, so runs stay deterministic).
    void credits_moved();
    size_t credit_sleepers() const { return sleepers_.size(); }

private:
    unsigned fire_armed(uint64_t now);
    Clock& clock_;
    std::vector<TimedSource*> sources_;
    DeadlineHeap heap_;
    std::vector<TimedSource*> sleepers_, waking_;
};

}  // namespace ibemu::fabric
