// SPDX-License-Identifier: GPL-2.0
//
// Time for the fabric. Nothing in the fabric reads the system clock or owns
// a thread: a Clock says what time it is (virtual in tests, CLOCK_MONOTONIC
// in the server), and the owner of the event loop asks the Scheduler when it
// next has work (next_deadline(), for a poll() timeout) and lets it run what
// is due (run_due()).
//
// Work comes from TimedSources (a link direction with packets in flight, a
// switch with a trap to repeat). A source reports its earliest deadline and
// does what is due when fired; the scheduler keeps no per-event objects, so
// deferring a packet costs no allocation.
#pragma once

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

class TimedSource {
public:
    virtual ~TimedSource() = default;
    // Earliest time this source has work for, or kNever.
    virtual uint64_t next_deadline() const = 0;
    // Do what is due at `now`. Work that becomes due during the call (a
    // packet deferred at `now`) may be left for the next call.
    virtual void fire(uint64_t now) = 0;
};

class Scheduler {
public:
    explicit Scheduler(Clock& clock) : clock_(clock) {}

    Clock& clock() { return clock_; }
    uint64_t now() const { return clock_.now_ns(); }

    void add(TimedSource* s);
    void remove(TimedSource* s);

    uint64_t next_deadline() const;
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
    // Bumped whenever a link direction hands credits back (a packet left
    // its receive buffer). A direction whose head packet the receiver
    // refused (accepts() false) sleeps until this moves.
    uint64_t credit_epoch = 0;

private:
    Clock& clock_;
    std::vector<TimedSource*> sources_;
};

}  // namespace ibemu::fabric
