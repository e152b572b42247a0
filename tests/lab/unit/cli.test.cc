// SPDX-License-Identifier: GPL-2.0
#include "iblab/cli.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace iblab::cli {
namespace {

TEST(Cli, RunDefaults)
{
	auto r = parse_run({"--", "true"});
	ASSERT_EQ(r.lab.guests.size(), 1u);
	EXPECT_EQ(r.lab.guests[0].name, "vm0");
	EXPECT_EQ(r.lab.guests[0].stack, Stack::Upstream);
	EXPECT_TRUE(r.lab.hca);
	EXPECT_TRUE(r.lab.mgmt_net);
	EXPECT_EQ(r.lab.mem_mb, 1024);
	EXPECT_EQ(r.command, std::vector<std::string>{"true"});
}

TEST(Cli, RunOptions)
{
	auto r = parse_run({"--guest", "a:ours", "--guest", "b", "--modules", "/m", "--mem", "512", "--timeout", "5m",
			    "--no-hca", "--no-mgmt-net", "--workdir", "/tmp/w", "--smp", "2", "--", "sh", "-c",
			    "echo --guest"});
	ASSERT_EQ(r.lab.guests.size(), 2u);
	EXPECT_EQ(r.lab.guests[0].stack, Stack::Ours);
	EXPECT_EQ(r.lab.guests[1].stack, Stack::Upstream);
	EXPECT_EQ(r.lab.modules_dir, "/m");
	EXPECT_EQ(r.lab.mem_mb, 512);
	EXPECT_EQ(r.lab.smp, 2);
	EXPECT_EQ(r.timeout, std::chrono::seconds(300));
	EXPECT_FALSE(r.lab.hca);
	EXPECT_FALSE(r.lab.mgmt_net);
	EXPECT_EQ(r.lab.run_dir, "/tmp/w");
	EXPECT_EQ(r.command, (std::vector<std::string>{"sh", "-c", "echo --guest"}));
}

TEST(Cli, RunErrors)
{
	EXPECT_THROW(parse_run({"--guest", "a:ours"}), UsageError);  // no --modules
	EXPECT_THROW(parse_run({"--guest", "a:mine"}), UsageError);
	EXPECT_THROW(parse_run({"--guest", "a", "--guest", "a"}), UsageError);
	EXPECT_THROW(parse_run({"--guest", "a/b"}), UsageError);
	EXPECT_THROW(parse_run({"--mem", "lots"}), UsageError);
	EXPECT_THROW(parse_run({"--mem", "4096"}), UsageError);
	EXPECT_THROW(parse_run({"--timeout", "5x"}), UsageError);
	EXPECT_THROW(parse_run({"--bogus"}), UsageError);
	EXPECT_THROW(parse_run({"--mem"}), UsageError);
	EXPECT_THROW(parse_run({"--"}), UsageError);
}

TEST(Cli, Exec)
{
	auto e = parse_exec({"vm1", "--timeout", "30", "--bg", "--ctl", "/x.sock", "--", "ib_write_bw", "-d", "mthca0"});
	EXPECT_EQ(e.guest, "vm1");
	EXPECT_EQ(e.timeout, std::chrono::seconds(30));
	EXPECT_TRUE(e.background);
	EXPECT_EQ(e.ctl, "/x.sock");
	EXPECT_EQ(e.command, "ib_write_bw -d mthca0");

	setenv("IBLAB_CTL", "/env.sock", 1);
	auto f = parse_exec({"vm0", "--", "echo", "a;", "exit 3"});
	EXPECT_EQ(f.ctl, "/env.sock");
	EXPECT_EQ(f.command, "echo a; exit 3");
	EXPECT_EQ(f.timeout, std::chrono::seconds(600));
	auto g = parse_exec({"vm0", "uname", "-r"});  // "--" is optional
	EXPECT_EQ(g.command, "uname -r");
	EXPECT_THROW(parse_exec({"vm0"}), UsageError);
	EXPECT_THROW(parse_exec({"--", "ls"}), UsageError);
	EXPECT_THROW(parse_exec({"vm0", "--frob", "--", "ls"}), UsageError);
	unsetenv("IBLAB_CTL");
	EXPECT_THROW(parse_exec({"vm0", "--", "ls"}), UsageError);
}

TEST(Cli, Durations)
{
	EXPECT_EQ(parse_duration("30"), std::chrono::seconds(30));
	EXPECT_EQ(parse_duration("30s"), std::chrono::seconds(30));
	EXPECT_EQ(parse_duration("2m"), std::chrono::seconds(120));
	EXPECT_EQ(parse_duration("1h"), std::chrono::seconds(3600));
	EXPECT_THROW(parse_duration(""), UsageError);
	EXPECT_THROW(parse_duration("-1"), UsageError);
	EXPECT_THROW(parse_duration("1d"), UsageError);
}

}  // namespace
}  // namespace iblab::cli
