// SPDX-License-Identifier: GPL-2.0
// Issue 11: path migration on the emulated MT25208, from user space. One
// guest on a switch (fabric "star:1") runs OpenSM with LMC 1, so
// its port answers to two LIDs; apm_check (tests/vm/apm_check.cc) connects
// two RC QPs of one process through the port (the HCA loops the packets
// back) with the primary path on the base LID and the alternate on base
// LID + 1, migrates the requester by software and checks that traffic goes
// on with the data intact, that ibv_query_qp shows the paths swapped on
// both QPs and that the responder gets its PATH_MIG async event.
//
// ApmUpstream (apm.test.cc) runs Debian's stack (stock kernel, upstream
// ib_mthca) in a lab of its own: it proves the emulator. ApmOurs
// (apm_ours.test.cc, in vm.OursAlone's debug guest) runs our modules: it
// proves our ib_mthca drives the same registers.
#pragma once

#include <cstdio>
#include <string>

#include "vm_fixture.h"

namespace iblab::vmtest {

// The port's LID and LMC as the kernel read them from PortInfo (the
// emulator's SMA), then the check program, in `g`.
inline void RunApmCheck(Guest &g)
{
	const std::string port = "/sys/class/infiniband/mthca0/ports/1";
	auto lmc = g.exec("cat " + port + "/lid_mask_count " + port + "/lid", 120s);
	ASSERT_TRUE(Ok(lmc));
	unsigned l = 0, lid = 0;
	ASSERT_EQ(std::sscanf(lmc.output.c_str(), "%u %x", &l, &lid), 2) << lmc.output;
	EXPECT_EQ(l, 1u) << "PortInfo LMC as OpenSM -l 1 set it";
	EXPECT_EQ(lid & 1, 0u) << "base LID 0x" << std::hex << lid << " not aligned to LMC 1";
	auto r = g.exec(APM_CHECK_BINARY, 120s);
	std::printf("%s", r.output.c_str());  // the per-check lines, for the log
	EXPECT_TRUE(Ok(r)) << r.output << "\ndmesg:\n" << g.exec("dmesg | tail -30", 120s).output;
	EXPECT_NE(r.output.find(" checks, 0 failed\n"), std::string::npos) << r.output;
	EXPECT_EQ(r.output.find("FAIL "), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("PASS responder: one PATH_MIG async event"), std::string::npos) << r.output;
}

}  // namespace iblab::vmtest
