// SPDX-License-Identifier: GPL-2.0
// The tools' shared pieces: option parsing, wait_for() over the fake ucm
// (MRAs skipped, other ids ignored, REJ and send errors thrown, timeout),
// describe_cma().
#include <gtest/gtest.h>

#include "common.h"
#include "fake_kernel.h"

namespace ibcm::tools {
namespace {

Args parse(std::vector<std::string> v)
{
	std::vector<char *> argv;
	static std::string name = "tool";
	argv.push_back(name.data());
	for (auto &s : v)
		argv.push_back(s.data());
	return Args(static_cast<int>(argv.size()), argv.data(), {"server", "no-sa"}, {"dev", "dlid", "sid"});
}

TEST(IbcmToolArgs, FlagsOptionsNumbers)
{
	const Args a = parse({"--dev", "mthca0", "--server", "--sid", "0x1060000", "--dlid", "12"});
	EXPECT_TRUE(a.has("server"));
	EXPECT_FALSE(a.has("no-sa"));
	EXPECT_EQ(a.str("dev"), "mthca0");
	EXPECT_EQ(a.num("sid", 0), 0x1060000U);
	EXPECT_EQ(a.num("dlid", 0), 12U);
	EXPECT_EQ(a.num("missing", 7), 7U);
	EXPECT_THROW(parse({"--bogus", "1"}), UsageError);
	EXPECT_THROW(parse({"--dev"}), UsageError);
	EXPECT_THROW(parse({"mthca0"}), UsageError);
	EXPECT_THROW(parse({"--dlid", "12x"}).num("dlid", 0), UsageError);
}

struct IbcmWaitFor : ::testing::Test {
	std::shared_ptr<test::KernelState> k = std::make_shared<test::KernelState>();
	Device dev{std::make_unique<test::FakeKernel>(k)};

	void queue(std::uint32_t id, std::uint32_t event, std::uint32_t extra = 0)
	{
		test::QueuedEvent q;
		q.resp.id = id;
		q.resp.event = event;
		if (event == 11)
			q.resp.u.rej_resp.reason = extra;
		else
			q.resp.u.send_status = extra;
		k->events.push_back(q);
	}
};

TEST_F(IbcmWaitFor, SkipsMraAndOtherIds)
{
	queue(5, 10); // MRA for us
	queue(6, 3); // REP for another id
	queue(5, 3); // our REP
	const RepReceived rep = wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(100));
	EXPECT_EQ(rep.id, 5U);
	EXPECT_TRUE(k->events.empty());
}

TEST_F(IbcmWaitFor, RejectIsAnError)
{
	queue(5, 11, kRejInvalidServiceId);
	try {
		wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(100));
		FAIL();
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("RejReceived (reason 8)"), std::string::npos) << e.what();
	}
	queue(5, 0, IBV_WC_RESP_TIMEOUT_ERR);
	try {
		wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(100));
		FAIL();
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("ReqError (send status"), std::string::npos) << e.what();
	}
}

TEST_F(IbcmWaitFor, TimesOut)
{
	queue(6, 3);
	EXPECT_THROW(wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(30)), std::runtime_error);
}

TEST(IbcmToolCma, Describe)
{
	const Bytes pd = cma_req_private_data({*IpAddress::parse("10.0.0.1"), *IpAddress::parse("10.0.0.2"), 4000});
	EXPECT_EQ(describe_cma(pd), "rdma_cm peer 10.0.0.1 port 4000 -> 10.0.0.2");
	EXPECT_EQ(describe_cma(Bytes(10)), "");
}

} // namespace
} // namespace ibcm::tools
