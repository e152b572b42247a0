// SPDX-License-Identifier: GPL-2.0
// The tools' shared pieces: option parsing, wait_for() over the fake ucm
// (MRAs skipped, other ids ignored, REJ and send errors thrown as
// CmEventError with their names, timeout), describe_cma(), the REJ reason
// and SIDR status names, --cm-timeout/--cm-retries, the REQ wait formula.
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

// The rdma_cm TCP ID for port 7471, exactly: 0x0000000001061d2f under a
// full mask (ib_ucm allows one exact rdma_cm ID, no range).
TEST_F(IbcmWaitFor, RdmaCmListenIsTheExactId)
{
	Listener l = listen_rdma_cm(dev, 7471);
	ASSERT_FALSE(k->commands.empty());
	const test::Command &c = k->commands.back();
	ASSERT_EQ(c.hdr.cmd, static_cast<std::uint32_t>(IB_USER_CM_CMD_LISTEN));
	const auto cmd = c.payload<ib_ucm_listen>();
	EXPECT_EQ(be64toh(cmd.service_id), 0x0000000001061d2fULL);
	EXPECT_EQ(be64toh(cmd.service_mask), ~0ULL);
}

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
		EXPECT_NE(std::string(e.what()).find("RejReceived (reason 8: invalid service ID)"), std::string::npos)
			<< e.what();
	}
	queue(5, 0, IBV_WC_RESP_TIMEOUT_ERR);
	try {
		wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(100));
		FAIL();
	} catch (const CmEventError &e) {
		EXPECT_EQ(e.event(), "ReqError");
		EXPECT_NE(std::string(e.what()).find("ReqError (send status 20: "), std::string::npos) << e.what();
	}
	queue(5, 11, kRejStaleConn);
	try {
		wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(100));
		FAIL();
	} catch (const CmEventError &e) {
		EXPECT_EQ(e.event(), "RejReceived");
		EXPECT_NE(std::string(e.what()).find("(reason 10: stale connection)"), std::string::npos) << e.what();
	}
}

// A SIDR_REQ, like a REQ, comes with the id the kernel made for it, not
// the listener's: wait_for() on the listener takes it.
TEST_F(IbcmWaitFor, SidrReqCarriesItsNewId)
{
	queue(6, 3); // a REP for another id is skipped
	queue(9, 16);
	const SidrReqReceived req = wait_for<SidrReqReceived>(dev, 5, std::chrono::milliseconds(100));
	EXPECT_EQ(req.id, 9U);
	EXPECT_EQ(req.conn.handle(), 9U);
}

TEST_F(IbcmWaitFor, TimesOut)
{
	queue(6, 3);
	EXPECT_THROW(wait_for<RepReceived>(dev, 5, std::chrono::milliseconds(30)), std::runtime_error);
}

TEST(IbcmToolNames, RejReasonsAndSidrStatus)
{
	EXPECT_EQ(rej_reason_name(1), "no QP");
	EXPECT_EQ(rej_reason_name(kRejInvalidServiceId), "invalid service ID");
	EXPECT_EQ(rej_reason_name(kRejConsumerDefined), "consumer defined");
	EXPECT_EQ(rej_reason_name(33), "invalid alternate flow label");
	EXPECT_EQ(rej_reason_name(0), "reason 0");
	EXPECT_EQ(rej_reason_name(34), "reason 34");
	EXPECT_EQ(sidr_status_name(0), "valid");
	EXPECT_EQ(sidr_status_name(1), "unsupported");
	EXPECT_EQ(sidr_status_name(3), "no QP");
	EXPECT_EQ(sidr_status_name(6), "status 6");
}

TEST(IbcmToolArgs, CmTimeoutAndRetries)
{
	std::vector<std::string> v = {"--cm-timeout", "14", "--cm-retries", "3"};
	std::vector<char *> argv;
	static std::string name = "tool";
	argv.push_back(name.data());
	for (auto &x : v)
		argv.push_back(x.data());
	const std::vector<std::string> opts = {"cm-timeout", "cm-retries"};
	ReqParams req;
	apply_cm_options(Args(static_cast<int>(argv.size()), argv.data(), {}, opts), req);
	EXPECT_EQ(req.remote_cm_response_timeout, 14);
	EXPECT_EQ(req.max_cm_retries, 3);
	ReqParams untouched;
	apply_cm_options(Args(1, argv.data(), {}, opts), untouched);
	EXPECT_EQ(untouched.remote_cm_response_timeout, 20);
	EXPECT_EQ(untouched.max_cm_retries, 15);
	v = {"--cm-timeout", "32"};
	argv.resize(1);
	for (auto &x : v)
		argv.push_back(x.data());
	EXPECT_THROW(apply_cm_options(Args(3, argv.data(), {}, opts), req), UsageError);
	v = {"--cm-retries", "16"};
	argv.resize(1);
	for (auto &x : v)
		argv.push_back(x.data());
	EXPECT_THROW(apply_cm_options(Args(3, argv.data(), {}, opts), req), UsageError);
}

// ib_cm's cm_req_timeout_ms(14, 20) is 4430 ms (its KUnit case): the same
// formula here, unrounded.
TEST(IbcmToolTimes, ReqWait)
{
	EXPECT_NEAR(req_wait_ms(14, 20), 4429.185, 0.001);
	EXPECT_NEAR(req_wait_ms(14, 14), 3 * 67.108864, 0.001);
	EXPECT_NEAR(req_wait_ms(0, 0), 0.012288, 1e-6);
}

TEST(IbcmToolCma, Describe)
{
	const Bytes pd = cma_req_private_data({*IpAddress::parse("10.0.0.1"), *IpAddress::parse("10.0.0.2"), 4000});
	EXPECT_EQ(describe_cma(pd), "rdma_cm peer 10.0.0.1 port 4000 -> 10.0.0.2");
	EXPECT_EQ(describe_cma(Bytes(10)), "");
}

} // namespace
} // namespace ibcm::tools
