// SPDX-License-Identifier: GPL-2.0
//
// M_Key protection of a subnet management agent (IBA 1.2.1 vol 1, 14.2.4):
// PortInfo M_Key, M_KeyProtectBits, M_KeyLeasePeriod and M_KeyViolations,
// and the check every SMP passes before its SMA acts on it. The HCA's
// firmware SMA and the switch's SMA both keep one MkeyGuard (per port for a
// CA, for port 0 of a switch).
#pragma once

#include <cstdint>

namespace ibemu::ib {

class MkeyGuard {
public:
    static constexpr uint64_t kNoLease = UINT64_MAX;

    enum class Verdict : uint8_t {
        Pass,      // act on the SMP
        HideKey,   // act on it (a Get), but PortInfo reads M_Key 0
        Violation  // drop it without a response; counted, lease started
    };

    // What Set(PortInfo) assigns.
    void assign(uint64_t key, uint8_t protect, uint16_t lease_period)
    {
        key_ = key;
        protect_ = uint8_t(protect & 3);
        lease_period_ = lease_period;
    }

    // Check an SMP with method `method` carrying `smp_key` (IBA 14.2.4.1,
    // table 141). A zero M_Key or a matching one always passes, and stops a
    // running lease timer. Otherwise a Get passes with protect 0, passes
    // with the key hidden with protect 1 and fails with 2 or 3; a Set or a
    // TrapRepress always fails. A failure counts in M_KeyViolations
    // (saturating) and starts the lease timer (M_KeyLeasePeriod seconds,
    // 0 = never expires) unless it runs already.
    Verdict check(uint8_t method, uint64_t smp_key, uint64_t now_ns);

    // The lease timer ran out (IBA 14.2.4.2): M_KeyProtectBits drop to 0,
    // so the SM that lost its key can read the port again. Returns true
    // when that happened now.
    bool expire(uint64_t now_ns);
    // When expire() has work: kNoLease when the timer is not running.
    uint64_t lease_deadline() const { return lease_end_; }

    uint64_t key() const { return key_; }
    uint8_t protect() const { return protect_; }
    uint16_t lease_period() const { return lease_period_; }
    uint16_t violations() const { return violations_; }
    // PortInfo M_KeyViolations is read-write (the SM clears it).
    void set_violations(uint16_t v) { violations_ = v; }

private:
    uint64_t key_ = 0;
    uint8_t protect_ = 0;
    uint16_t lease_period_ = 0;
    uint16_t violations_ = 0;
    uint64_t lease_end_ = kNoLease;
};

}  // namespace ibemu::ib
