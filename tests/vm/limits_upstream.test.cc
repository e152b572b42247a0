// SPDX-License-Identifier: GPL-2.0
// Issue 9 §3: the device limits of the emulated MT25208, honoured both
// ways, as the upstream Debian stack sees them through libibverbs. One
// guest, no fabric needed: limits_check (tests/vm/limits_check.cc) creates
// a CQ, an RC QP (taken to INIT), an SRQ and an MR at the limits
// ibv_query_device reports and one past each, and checks the errnos
// (EINVAL, as on hardware).
#include <filesystem>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

class MthcaLimits : public VmSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o;
		o.guests = {{"vm0", Stack::Upstream}};
		o.hca = true;
		// limits_check runs from the build tree: share its directory at
		// the same path.
		o.shares.push_back(std::filesystem::path(LIMITS_CHECK_BINARY).parent_path().string());
		StartLab(o, "MthcaLimits");
	}
	static void TearDownTestSuite() { StopLab(); }
};

TEST_F(MthcaLimits, AtTheLimitAndOnePast)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, "modprobe ib_mthca && modprobe ib_uverbs")));
	auto r = Run(g, LIMITS_CHECK_BINARY, 300s);
	std::printf("%s", r.output.c_str());  // the per-check lines, for the log
	EXPECT_TRUE(Ok(r)) << r.output << "\ndmesg:\n" << Run(g, "dmesg | tail -30").output;
	EXPECT_NE(r.output.find(" checks, 0 failed\n"), std::string::npos) << r.output;
	EXPECT_EQ(r.output.find("FAIL "), std::string::npos) << r.output;
	// What ibv_devinfo -v prints agrees.
	auto d = Run(g, "ibv_devinfo -v");
	ASSERT_TRUE(Ok(d));
	EXPECT_EQ(Field(d.output, "max_qp_wr"), "16384") << d.output;
	EXPECT_EQ(Field(d.output, "max_cqe"), "131071") << d.output;
	EXPECT_EQ(Field(d.output, "max_srq_wr"), "16384") << d.output;
	EXPECT_EQ(Field(d.output, "max_sge"), "27") << d.output;
	EXPECT_EQ(d.output.find("AUTO_PATH_MIG"), std::string::npos) << d.output;
	EXPECT_EQ(Field(d.output, "active_speed").rfind("2.5 Gbps", 0), 0u) << d.output;
}

}  // namespace
}  // namespace iblab::vmtest
