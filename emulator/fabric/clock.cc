// SPDX-License-Identifier: GPL-2.0
#include "fabric/clock.h"

#include <time.h>

#include <algorithm>

namespace ibemu::fabric {

uint64_t MonotonicClock::now_ns() const
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void Scheduler::add(TimedSource* s)
{
    if (std::find(sources_.begin(), sources_.end(), s) == sources_.end())
        sources_.push_back(s);
}

void Scheduler::remove(TimedSource* s)
{
    sources_.erase(std::remove(sources_.begin(), sources_.end(), s), sources_.end());
}

uint64_t Scheduler::next_deadline() const
{
    uint64_t d = kNever;
    for (const TimedSource* s : sources_)
        d = std::min(d, s->next_deadline());
    return d;
}

unsigned Scheduler::run_due()
{
    uint64_t now = clock_.now_ns();
    unsigned fired = 0;
    // Index loop: a source may be added while firing.
    for (size_t i = 0; i < sources_.size(); ++i) {
        if (sources_[i]->next_deadline() <= now) {
            sources_[i]->fire(now);
            ++fired;
        }
    }
    return fired;
}

void Scheduler::settle(unsigned max_rounds)
{
    for (unsigned i = 0; i < max_rounds && run_due() != 0; ++i) {
    }
}

void Scheduler::run_until(VirtualClock& vc, uint64_t t)
{
    for (;;) {
        settle();
        uint64_t d = next_deadline();
        // Still due after settle(): a forwarding loop at zero latency.
        // Leave it for the next call rather than spin.
        if (d > t || d <= vc.now_ns())
            break;
        if (d > vc.now_ns())
            vc.set(d);
    }
    if (t > vc.now_ns())
        vc.set(t);
    settle();
}

}  // namespace ibemu::fabric
