// SPDX-License-Identifier: GPL-2.0
#include "ib/attributes.h"

namespace ibemu::ib {

const char* port_state_name(PortState s)
{
    static const char* const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE"};
    unsigned i = unsigned(s);
    return i < 5 ? names[i] : "?";
}

const char* phys_state_name(PhysState s)
{
    static const char* const names[] = {"NOP",      "SLEEP",  "POLLING",  "DISABLED",
                                        "TRAINING", "LINKUP", "ERR_RECOVERY"};
    unsigned i = unsigned(s);
    return i < 7 ? names[i] : "?";
}

}  // namespace ibemu::ib
