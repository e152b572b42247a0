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

void DeadlineHeap::up(size_t i)
{
    HeapNode* n = heap_[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(n, heap_[parent]))
            break;
        place(i, heap_[parent]);
        i = parent;
    }
    place(i, n);
}

void DeadlineHeap::down(size_t i)
{
    HeapNode* n = heap_[i];
    size_t size = heap_.size();
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= size)
            break;
        if (c + 1 < size && before(heap_[c + 1], heap_[c]))
            ++c;
        if (!before(heap_[c], n))
            break;
        place(i, heap_[c]);
        i = c;
    }
    place(i, n);
}

void DeadlineHeap::arm(HeapNode* n, uint64_t deadline)
{
    n->deadline = deadline;
    n->seq = seq_++;
    if (!n->armed()) {
        heap_.push_back(n);
        n->pos = heap_.size() - 1;
        up(n->pos);
        return;
    }
    // Moved: it may go either way.
    size_t i = n->pos;
    up(i);
    down(n->pos);
}

void DeadlineHeap::cancel(HeapNode* n)
{
    if (!n->armed() || n->pos >= heap_.size() || heap_[n->pos] != n)
        return;
    size_t i = n->pos;
    HeapNode* last = heap_.back();
    heap_.pop_back();
    n->pos = HeapNode::kNotArmed;
    if (last == n)
        return;
    place(i, last);
    up(i);
    down(last->pos);
}

HeapNode* DeadlineHeap::pop_due(uint64_t now)
{
    if (heap_.empty() || heap_[0]->deadline > now)
        return nullptr;
    HeapNode* n = heap_[0];
    cancel(n);
    return n;
}

void Scheduler::arm(TimedSource* s, uint64_t deadline)
{
    s->timer_.source = s;
    if (deadline == kNever)
        heap_.cancel(&s->timer_);
    else
        heap_.arm(&s->timer_, deadline);
}

void Scheduler::add(TimedSource* s)
{
    if (std::find(sources_.begin(), sources_.end(), s) == sources_.end())
        sources_.push_back(s);
}

void Scheduler::remove(TimedSource* s)
{
    heap_.cancel(&s->timer_);
    if (s->credit_sleeper_) {
        s->credit_sleeper_ = false;
        sleepers_.erase(std::remove(sleepers_.begin(), sleepers_.end(), s), sleepers_.end());
    }
    sources_.erase(std::remove(sources_.begin(), sources_.end(), s), sources_.end());
}

void Scheduler::sleep_on_credits(TimedSource* s)
{
    if (s->credit_sleeper_)
        return;
    s->credit_sleeper_ = true;
    sleepers_.push_back(s);
}

void Scheduler::credits_moved()
{
    ++credit_epoch;
    if (sleepers_.empty())
        return;
    // Swapped out first: a woken source may go back to sleep (or another
    // one may) while we arm them.
    waking_.swap(sleepers_);
    for (TimedSource* s : waking_)
        s->credit_sleeper_ = false;
    for (TimedSource* s : waking_)
        arm(s, s->next_deadline());
    waking_.clear();
}

uint64_t Scheduler::next_deadline() const
{
    uint64_t d = heap_.next();
    for (const TimedSource* s : sources_)
        d = std::min(d, s->next_deadline());
    return d;
}

unsigned Scheduler::run_armed_due() { return fire_armed(clock_.now_ns()); }

// Armed sources due at `now`, earliest first (ties in arm order). One armed
// during this round (re-armed by its own fire(), say) waits for the next
// round, so a source re-arming for `now` cannot spin here.
unsigned Scheduler::fire_armed(uint64_t now)
{
    unsigned fired = 0;
    uint64_t limit = heap_.next_seq();
    while (HeapNode* n = heap_.top()) {
        if (n->deadline > now || n->seq >= limit)
            break;
        heap_.cancel(n);
        static_cast<TimedSource::Node*>(n)->source->fire(now);
        ++fired;
    }
    return fired;
}

unsigned Scheduler::run_due()
{
    uint64_t now = clock_.now_ns();
    unsigned fired = fire_armed(now);
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
