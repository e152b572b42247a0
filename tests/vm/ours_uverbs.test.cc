// SPDX-License-Identifier: GPL-2.0
// Issue 10, first slice: our ib_uverbs and ib_mthca's user context under
// Debian's unmodified libibverbs 44 (with its mthca provider).
//
//   OursUverbs  vm0 runs our stack, vm1 the upstream one, cabled back to
//               back (no SM: both ports stay INIT). ibv_devices and
//               ibv_devinfo -v print the same on both, once each guest's
//               GUIDs are replaced by a placeholder; the class and device
//               files libibverbs reads are there; the write() ABI cases
//               of tests/uverbs/abi_check answer as upstream's; ib_uverbs
//               unloads.
//
// With IBSTACK_OURS_STACK=upstream vm0 runs upstream too (vm_fixture.h),
// which checks the test itself.
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

// The stack with ib_uverbs: ours has it as a module of its own; upstream's
// ib_mthca pulls it in.
std::string LoadWithUverbs(Stack s)
{
	return LoadCommand(s) + " && modprobe ib_uverbs";
}

std::string Hex16(uint64_t v)
{
	char b[32];
	snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
	return b;
}

std::string Colons(uint64_t v)
{
	std::string h = Hex16(v);
	return h.substr(0, 4) + ":" + h.substr(4, 4) + ":" + h.substr(8, 4) + ":" + h.substr(12, 4);
}

// Replaces g's node GUID (= system image GUID) and port GUID, in both
// spellings ibv_devices and ibv_devinfo use, by placeholders.
std::string NormaliseGuids(const Guest &g, std::string text)
{
	const uint64_t node = g.node_guid(), port = node + 1;
	for (auto [from, to] : {std::pair{Hex16(node), std::string("<node-guid>")},
				std::pair{Colons(node), std::string("<node-guid>")},
				std::pair{Hex16(port), std::string("<port-guid>")},
				std::pair{Colons(port), std::string("<port-guid>")}})
		for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p))
			text.replace(p, from.size(), to);
	return text;
}

class OursUverbs : public VmSuite {
protected:
	static void SetUpTestSuite()
	{
		LabOptions o = MixedOptions({{"vm0", OursRole()}, {"vm1", Stack::Upstream}}, "b2b");
		// The ABI checker runs from the build tree, which the guest does
		// not see through its root when the tree lies under /tmp (a tmpfs
		// in the guest): share its directory at the same path.
		o.shares.push_back(std::filesystem::path(UVERBS_ABI_CHECK_BINARY).parent_path().string());
		StartLab(std::move(o), "OursUverbs");
		if (!lab_)
			return;
		for (Guest *g : lab_->guests()) {
			auto r = g->exec(LoadWithUverbs(g->stack()), 120s);
			if (!r.ok())
				load_error_ += g->name() + ": loading failed: " + r.output + "\n";
		}
	}
	static void TearDownTestSuite() { StopLab(); }

	void SetUp() override
	{
		VmSuite::SetUp();
		if (!load_error_.empty())
			GTEST_FAIL() << load_error_;
	}

	// Waits until the port's link is up (INIT without an SM).
	static ExecResult WaitInit(Guest &g)
	{
		return g.exec("for i in $(seq 1 90); do grep -q INIT /sys/class/infiniband/mthca0/ports/1/state "
			      "&& exit 0; sleep 1; done; cat /sys/class/infiniband/mthca0/ports/1/state; exit 1",
			      120s);
	}

	static inline std::string load_error_;
};

TEST_F(OursUverbs, SysfsAndDeviceNode)
{
	Guest &g = guest("vm0");
	auto r = Run(g, "cat /sys/class/infiniband_verbs/abi_version /sys/class/infiniband_verbs/uverbs0/ibdev "
			"/sys/class/infiniband_verbs/uverbs0/abi_version /sys/class/infiniband_verbs/uverbs0/dev; "
			"stat -c '%A %t:%T' /dev/infiniband/uverbs0");
	ASSERT_TRUE(Ok(r));
	EXPECT_EQ(r.output, "6\nmthca0\n1\n231:192\ncrw-rw-rw- e7:c0\n");
}

TEST_F(OursUverbs, DevicesAndDevinfoAsUpstream)
{
	Guest &ours = guest("vm0"), &up = guest("vm1");
	ASSERT_TRUE(Ok(WaitInit(ours)));
	ASSERT_TRUE(Ok(WaitInit(up)));
	for (const std::string cmd : {"ibv_devices", "ibv_devinfo -v"}) {
		auto a = Run(ours, cmd + " 2>&1");
		auto b = Run(up, cmd + " 2>&1");
		ASSERT_TRUE(Ok(a)) << cmd;
		ASSERT_TRUE(Ok(b)) << cmd;
		std::string na = NormaliseGuids(ours, a.output), nb = NormaliseGuids(up, b.output);
		EXPECT_EQ(na, nb) << cmd << " differs; ours (vm0):\n" << a.output << "\nupstream (vm1):\n" << b.output;
		// The output is what it should be, so equality means something.
		EXPECT_NE(na.find("mthca0"), std::string::npos) << na;
		EXPECT_NE(na.find("<node-guid>"), std::string::npos) << na;
		if (cmd == "ibv_devinfo -v") {
			EXPECT_EQ(Field(na, "vendor_part_id"), "25218") << na;  // 0x6282
			EXPECT_EQ(Field(na, "transport"), "InfiniBand (0)") << na;
			EXPECT_EQ(Field(na, "state"), "PORT_INIT (2)") << na;
			EXPECT_EQ(Field(na, "max_qp_wr"), "16384") << na;
			EXPECT_NE(na.find("GID[  0]:\t\tfe80:0000:0000:0000:<port-guid>"), std::string::npos) << na;
		}
	}
}

// tests/uverbs/abi_check: each write()/ioctl() case gives the same result
// (the same errno) on our stack as on upstream's.
TEST_F(OursUverbs, AbiCasesAsUpstream)
{
	Guest &ours = guest("vm0"), &up = guest("vm1");
	auto a = Run(ours, UVERBS_ABI_CHECK_BINARY " 2>&1");
	auto b = Run(up, UVERBS_ABI_CHECK_BINARY " 2>&1");
	ASSERT_TRUE(Ok(a));
	ASSERT_TRUE(Ok(b));
	// Cases that differ on purpose or are not understood yet, left out of
	// the comparison (Documentation/uverbs.md): upstream has an ioctl()
	// method (EINVAL for our empty header), we have none (ENOTTY, which is
	// what sends libibverbs to write()); upstream's async fd answered
	// read() with EBADF in this run, which is not explained yet.
	auto without = [](const std::string &text) {
		std::string out, line;
		std::istringstream in(text);
		while (std::getline(in, line))
			if (line.rfind("ioctl probe:", 0) != 0 && line.rfind("async read,", 0) != 0)
				out += line + "\n";
		return out;
	};
	EXPECT_EQ(without(a.output), without(b.output))
		<< "ours (vm0):\n" << a.output << "\nupstream (vm1):\n" << b.output;
	// The cases the issue names, by value, so that equality means something.
	for (const char *line : {"ioctl probe: ENOTTY\n", "unknown command 200: EOPNOTSUPP\n",
				 "unknown extended command: EOPNOTSUPP\n", "GET_CONTEXT: ok\n",
				 "async fd is open: ok\n", "DEALLOC_PD: ok\n", "DEALLOC_PD twice: ENOENT\n",
				 "async read, short buffer: EINVAL\n", "async read, nothing queued: EAGAIN\n"})
		EXPECT_NE(a.output.find(line), std::string::npos) << line << "in:\n" << a.output;
}

// Last: ib_uverbs goes away once nothing uses it, and comes back.
TEST_F(OursUverbs, Reloads)
{
	Guest &g = guest("vm0");
	if (g.stack() != Stack::Ours)
		GTEST_SKIP() << "upstream's ib_mthca holds its ib_uverbs";
	ASSERT_TRUE(Ok(Run(g, "rmmod ib_uverbs && test ! -e /sys/class/infiniband_verbs && modprobe ib_uverbs && "
			      "ibv_devinfo >/dev/null")));
}

}  // namespace
}  // namespace iblab::vmtest
