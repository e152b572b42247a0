// SPDX-License-Identifier: GPL-2.0
// libibcmxx: everything (Documentation/userspace.md).
#ifndef IBCM_IBCM_H
#define IBCM_IBCM_H

#include "ibcm/cm.h"
#include "ibcm/cma.h"
#include "ibcm/path.h"
#include "ibcm/transport.h"
#include "ibcm/types.h"
#include "ibcm/verbs.h"

#endif
