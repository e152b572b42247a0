// SPDX-License-Identifier: GPL-2.0
// Issue 8: tests/kmod/mthca_smoke in `make check`. The module drives our
// ib_mthca through the kernel verbs in one guest, looping traffic back to
// the port's own LID: RC send with immediate, RDMA write and read,
// fetch&add, an error completion, query_qp and an illegal modify, UD, an
// SRQ, multicast attach/detach through an AMGM chain, resize_cq with
// completions pending and inline sends. It logs one "mthca_smoke: PASS
// <check> (<value>)" or "FAIL" line per check and "DONE <n> failures" at
// the end. The test asserts every check by name (and how often it runs),
// not just the last line, so a check that silently stops running fails too.
//
// One guest: vm0 (ours) alone on an emulated switch ("star:1"), which only
// gives the link a peer to train with; the module sets the port's LID and
// state itself, no SM is involved. It is vm.OursAlone's debug guest
// (ours_alone.h), after OursMadRace and OursUverbsFuzz.
#include <map>
#include <regex>
#include <sstream>

#include "ours_alone.h"

namespace iblab::vmtest {
namespace {

// Each check of mthca_smoke.c with the number of times it reports (with
// ib_mad loaded, which owns QP0, so "create QP0"/"QP0 to RTS" do not run).
const std::vector<std::pair<std::string, int>> kChecks = {
	{"port INIT after QP0 RTR", 1},
	{"port ACTIVE with LID", 1},
	{"create RC", 1},
	{"RC to RTS (loopback to itself)", 1},
	{"query_qp reads back the RTS attributes", 1},
	{"RTS -> INIT refused", 1},
	{"post_recv", 1},
	{"post_send", 1},
	{"RC send completion", 2},
	{"RC send data", 1},
	{"RDMA write completion", 1},
	{"RDMA write data", 1},
	{"RDMA read completion", 1},
	{"RDMA read data", 1},
	{"fetch&add completion", 1},
	{"fetch&add data", 1},
	{"bad lkey -> LOC_PROT_ERR", 1},
	{"create UD", 1},
	{"UD to RTS", 1},
	{"create AH", 1},
	{"UD completion", 2},
	{"UD receive fields", 1},
	{"UD data", 1},
	{"colliding MGIDs", 1},
	{"attach G0 (bucket)", 1},
	{"attach G1 (AMGM, same bucket)", 1},
	{"attach G1 again is a no-op", 1},
	{"G0 send delivered once", 1},
	{"G1 (chained) send delivered once", 1},
	{"detach G0 (bucket takes G1 over)", 1},
	{"G0 send after detach not delivered", 1},
	{"G1 send still delivered", 1},
	{"detach G0 twice -> EINVAL", 1},
	{"detach G1", 1},
	{"G1 send after detach not delivered", 1},
	{"re-attach both", 1},
	{"both delivered", 1},
	{"detach both (AMGM entry unlinked, then bucket)", 1},
	{"nothing delivered after detach", 1},
	{"create SRQ", 1},
	{"create RC on SRQ", 1},
	{"SRQ RC to RTS", 1},
	{"post_srq_recv", 1},
	{"SRQ completion", 2},
	{"SRQ data", 1},
	{"create 7-entry CQ", 1},
	{"resize 7 -> 100 with 6 CQEs pending", 1},
	{"all 12 completions across the resize, in order", 1},
	{"resize to 0 refused", 1},
	{"create RC with 100 bytes inline", 1},
	{"post inline send", 1},
	{"inline send completions", 1},
	{"inline data", 1},
	{"too much inline data refused", 1},
	{"QP1 post with pkey_index beyond the table -> EINVAL", 1},
	{"QP1 post with pkey_index 0 accepted", 1},
};

class OursSmoke : public OursAlone {
protected:
	static void SetUpTestSuite()
	{
		if (OursRole() != Stack::Ours)
			return;  // mthca_smoke is built against our ib_core only
		BootOnce();
	}
	void SetUp() override
	{
		if (OursRole() != Stack::Ours)
			GTEST_SKIP() << "mthca_smoke is built against our ib_core; nothing to run with "
					"IBSTACK_OURS_STACK=upstream";
		VmSuite::SetUp();
	}
};

TEST_F(OursSmoke, EveryCheckPasses)
{
	Guest &g = guest("vm0");
	ASSERT_TRUE(Ok(Run(g, LoadCommand(Stack::Ours), 120s)));
	// The checks run in the module's client add(), inside modprobe.
	ASSERT_TRUE(Ok(Run(g, "modprobe mthca_smoke", 300s)));
	auto r = Run(g, "dmesg | grep 'mthca_smoke: '", 30s);
	ASSERT_TRUE(Ok(r));

	std::map<std::string, int> pass, fail;
	std::regex line(R"(mthca_smoke: (PASS|FAIL) (.*) \((-?[0-9]+)\)$)");
	std::istringstream in(r.output);
	std::string l, done;
	while (std::getline(in, l)) {
		std::smatch m;
		if (std::regex_search(l, m, line))
			(m[1] == "PASS" ? pass : fail)[m[2]]++;
		else if (l.find("mthca_smoke: DONE") != std::string::npos)
			done = l.substr(l.find("DONE"));
	}
	for (const auto &[name, times] : kChecks) {
		EXPECT_EQ(pass[name], times) << "check \"" << name << "\" passed " << pass[name] << " times, not "
					     << times;
		pass.erase(name);
	}
	for (const auto &[name, times] : fail)
		ADD_FAILURE() << "FAIL " << name << " (" << times << "x)";
	for (const auto &[name, times] : pass)
		if (times)
			ADD_FAILURE() << "a check this test does not know passed: \"" << name << "\"";
	EXPECT_EQ(done, "DONE 0 failures");
	if (HasFailure())
		std::cerr << "mthca_smoke's log:\n" << r.output;
	EXPECT_TRUE(Ok(Run(g, "rmmod mthca_smoke", 60s)));
}

}  // namespace
}  // namespace iblab::vmtest
