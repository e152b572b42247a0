// SPDX-License-Identifier: GPL-2.0
#include "ib/mkey.h"

#include "ib/mad.h"

namespace ibemu::ib {

MkeyGuard::Verdict MkeyGuard::check(uint8_t method, uint64_t smp_key, uint64_t now_ns)
{
    if (key_ == 0 || smp_key == key_) {
        lease_end_ = kNoLease;
        return Verdict::Pass;
    }
    if (method == mad::kMethodGet) {
        if (protect_ == 0)
            return Verdict::Pass;
        if (protect_ == 1)
            return Verdict::HideKey;
    } else if (method != mad::kMethodSet && method != mad::kMethodTrapRepress) {
        return Verdict::Pass;  // nothing the key protects (answered UnsupMethod)
    }
    if (violations_ != 0xffff)
        ++violations_;
    if (lease_period_ && lease_end_ == kNoLease)
        lease_end_ = now_ns + uint64_t(lease_period_) * 1'000'000'000ull;
    return Verdict::Violation;
}

bool MkeyGuard::expire(uint64_t now_ns)
{
    if (lease_end_ == kNoLease || now_ns < lease_end_)
        return false;
    lease_end_ = kNoLease;
    protect_ = 0;
    return true;
}

}  // namespace ibemu::ib
