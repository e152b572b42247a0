// SPDX-License-Identifier: GPL-2.0
// Device and ConnectionId through a fake ib_ucm (fake_kernel.h; no ucm
// device exists on the build machine): what each call writes, RAII of ids
// (moved-from objects do not destroy), the event pump, and opening by
// ib device name against a fake sysfs.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "abi.h"
#include "fake_kernel.h"

namespace ibcm {
namespace {

using test::KernelState;

struct IbcmDeviceTest : ::testing::Test {
	std::shared_ptr<KernelState> k = std::make_shared<KernelState>();
	Device dev{std::make_unique<test::FakeKernel>(k)};

	const test::Command &last() const { return k->commands.back(); }
};

TEST_F(IbcmDeviceTest, CreateIdGivesDistinctUidsAndKernelIds)
{
	ConnectionId a = dev.create_id();
	ConnectionId b = dev.create_id();
	EXPECT_EQ(a.handle(), 100U);
	EXPECT_EQ(b.handle(), 101U);
	EXPECT_NE(a.uid(), b.uid());
	ASSERT_EQ(k->commands.size(), 2U);
	EXPECT_EQ(k->commands[0].hdr.cmd, 0U);
	EXPECT_EQ(k->commands[0].payload<ib_ucm_create_id>().uid, a.uid());
}

TEST_F(IbcmDeviceTest, DestructorDestroysOnce)
{
	{
		ConnectionId a = dev.create_id();
	}
	ASSERT_EQ(k->destroyed.size(), 1U);
	EXPECT_EQ(k->destroyed[0], 100U);
	EXPECT_EQ(last().hdr.cmd, 1U);
	EXPECT_EQ(last().hdr.out, 4U);
}

TEST_F(IbcmDeviceTest, MovedFromDoesNotDestroy)
{
	{
		ConnectionId a = dev.create_id();
		ConnectionId b = std::move(a);
		EXPECT_FALSE(a); // NOLINT: testing the moved-from state
		ConnectionId c;
		c = std::move(b);
		EXPECT_FALSE(b);
		EXPECT_TRUE(c);
		EXPECT_TRUE(k->destroyed.empty());
	}
	EXPECT_EQ(k->destroyed, std::vector<std::uint32_t>{100});
}

TEST_F(IbcmDeviceTest, MoveAssignDestroysTheOldId)
{
	ConnectionId a = dev.create_id();
	ConnectionId b = dev.create_id();
	a = std::move(b);
	EXPECT_EQ(k->destroyed, std::vector<std::uint32_t>{100});
	EXPECT_EQ(a.handle(), 101U);
}

TEST_F(IbcmDeviceTest, ExplicitDestroyReturnsEventCountAndEmpties)
{
	ConnectionId a = dev.create_id();
	EXPECT_EQ(a.destroy(), 7U);
	EXPECT_FALSE(a);
	EXPECT_THROW(a.destroy(), std::system_error);
	EXPECT_THROW(a.listen(1), std::system_error);
	EXPECT_EQ(k->destroyed.size(), 1U);
}

TEST_F(IbcmDeviceTest, IdsOutliveTheDevice)
{
	ConnectionId a;
	{
		Device d2{std::make_unique<test::FakeKernel>(k)};
		a = d2.create_id();
	}
	a.disconnect();
	a = ConnectionId();
	EXPECT_EQ(k->destroyed.size(), 1U);
}

TEST_F(IbcmDeviceTest, ListenWritesServiceIdAndMask)
{
	Listener l = dev.listen(0x0000000001060000ULL | 7174, 0xffffffffffffffffULL);
	const auto p = last().payload<ib_ucm_listen>();
	EXPECT_EQ(last().hdr.cmd, 3U);
	EXPECT_EQ(be64toh(p.service_id), 0x0000000001061c06ULL);
	EXPECT_EQ(p.service_mask, ~0ULL);
	EXPECT_EQ(p.id, l.handle());
}

TEST_F(IbcmDeviceTest, ConnectCopiesPathsAndData)
{
	ConnectionId a = dev.create_id();
	ReqParams p;
	p.service_id = 0x42;
	p.qpn = 0x404;
	p.primary_path.dlid = 0x12;
	p.primary_path.slid = 0x34;
	p.primary_path.pkey = 0x8001;
	p.primary_path.flow_label = 0x54321;
	p.alternate_path = PathRecord{};
	p.alternate_path->dlid = 0x99;
	p.private_data = {1, 2, 3};
	a.connect(p);
	const auto &c = last();
	EXPECT_EQ(c.hdr.cmd, 5U);
	EXPECT_EQ(c.hdr.in, 64U);
	ASSERT_EQ(c.paths.size(), 2U);
	EXPECT_EQ(c.paths[0].dlid, htobe16(0x12));
	EXPECT_EQ(c.paths[0].slid, htobe16(0x34));
	EXPECT_EQ(c.paths[0].pkey, htobe16(0x8001));
	EXPECT_EQ(c.paths[0].flow_label, htobe32(0x54321));
	EXPECT_EQ(c.paths[1].dlid, htobe16(0x99));
	EXPECT_EQ(c.data, (std::vector<std::uint8_t>{1, 2, 3}));
	EXPECT_EQ(c.payload<ib_ucm_req>().id, a.handle());
}

TEST_F(IbcmDeviceTest, OversizedPrivateDataWritesNothing)
{
	ConnectionId a = dev.create_id();
	const std::size_t before = k->commands.size();
	ReqParams p;
	p.private_data = Bytes(93);
	EXPECT_THROW(a.connect(p), std::system_error);
	RepParams r;
	r.private_data = Bytes(197);
	EXPECT_THROW(a.accept(r), std::system_error);
	EXPECT_THROW(a.rtu(Bytes(225)), std::system_error);
	EXPECT_THROW(a.disconnect(Bytes(221)), std::system_error);
	EXPECT_THROW(a.drep(Bytes(225)), std::system_error);
	EXPECT_THROW(a.reject(1, Bytes(73)), std::system_error);
	EXPECT_THROW(a.reject(1, {}, Bytes(149)), std::system_error);
	EXPECT_THROW(a.mra(1, Bytes(223)), std::system_error);
	EXPECT_THROW(a.lap(PathRecord{}, Bytes(169)), std::system_error);
	EXPECT_THROW(a.apr(kAprSuccess, Bytes(73)), std::system_error);
	EXPECT_THROW(a.apr(kAprSuccess, {}, Bytes(149)), std::system_error);
	EXPECT_EQ(k->commands.size(), before);
}

TEST_F(IbcmDeviceTest, LapCopiesThePathAndAprTheStatus)
{
	ConnectionId a = dev.create_id();
	PathRecord alt;
	alt.dlid = 0x21;
	alt.slid = 0x43;
	alt.sl = 5;
	alt.pkey = 0x8001;
	a.lap(alt, Bytes(kLapPrivateData, 0x5a));
	const auto &c = last();
	EXPECT_EQ(c.hdr.cmd, 12U);
	EXPECT_EQ(c.hdr.in, 24U);
	EXPECT_EQ(c.payload<ib_ucm_lap>().id, a.handle());
	EXPECT_EQ(c.payload<ib_ucm_lap>().len, kLapPrivateData);
	ASSERT_EQ(c.paths.size(), 1U);
	EXPECT_EQ(c.paths[0].dlid, htobe16(0x21));
	EXPECT_EQ(c.paths[0].slid, htobe16(0x43));
	EXPECT_EQ(c.paths[0].sl, 5);
	EXPECT_EQ(c.paths[0].pkey, htobe16(0x8001));
	EXPECT_EQ(c.data, Bytes(kLapPrivateData, 0x5a));

	a.apr(kAprReject, Bytes(kAprInfoLength, 1), Bytes{7, 8});
	const auto p = last().payload<ib_ucm_info>();
	EXPECT_EQ(last().hdr.cmd, 13U);
	EXPECT_EQ(last().hdr.in, 32U);
	EXPECT_EQ(p.id, a.handle());
	EXPECT_EQ(p.status, kAprReject);
	EXPECT_EQ(p.info_len, kAprInfoLength);
	EXPECT_EQ(p.data_len, 2U);
	EXPECT_EQ(last().data, (Bytes{7, 8}));
}

TEST_F(IbcmDeviceTest, EveryCommandNumber)
{
	ConnectionId a = dev.create_id();
	const std::uint64_t before = a.uid();
	a.accept(RepParams{});
	EXPECT_EQ(last().hdr.cmd, 6U);
	EXPECT_EQ(last().payload<ib_ucm_rep>().uid, a.uid());
	EXPECT_NE(a.uid(), before);
	EXPECT_NE(dev.create_id().uid(), a.uid());
	a.rtu(Bytes{9});
	EXPECT_EQ(last().hdr.cmd, 7U);
	EXPECT_EQ(last().data, std::vector<std::uint8_t>{9});
	a.disconnect();
	EXPECT_EQ(last().hdr.cmd, 8U);
	a.drep();
	EXPECT_EQ(last().hdr.cmd, 9U);
	a.reject(kRejConsumerDefined);
	EXPECT_EQ(last().hdr.cmd, 10U);
	EXPECT_EQ(last().payload<ib_ucm_info>().status, 28U);
	a.mra(24);
	EXPECT_EQ(last().hdr.cmd, 11U);
	a.notify(IBV_EVENT_COMM_EST);
	EXPECT_EQ(last().hdr.cmd, 4U);
	a.sidr_req(SidrReqParams{});
	EXPECT_EQ(last().hdr.cmd, 14U);
	EXPECT_EQ(last().paths.size(), 1U);
	a.sidr_rep(SidrRepParams{});
	EXPECT_EQ(last().hdr.cmd, 15U);
	const IdAttr at = a.attr();
	EXPECT_EQ(last().hdr.cmd, 2U);
	EXPECT_EQ(at.service_id, 0x1234U);
	EXPECT_EQ(at.local_id, 0xabcdU);
	EXPECT_EQ(at.remote_id, 0x5678U);
}

TEST_F(IbcmDeviceTest, InitQpAttr)
{
	ConnectionId a = dev.create_id();
	k->qp_attr.qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	k->qp_attr.port_num = 1;
	k->qp_attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	const QpAttr q = a.init_qp_attr(IBV_QPS_INIT);
	EXPECT_EQ(last().hdr.cmd, 17U);
	EXPECT_EQ(last().hdr.out, 144U);
	EXPECT_EQ(last().payload<ib_ucm_init_qp_attr>().qp_state, 1U);
	EXPECT_EQ(q.attr.qp_state, IBV_QPS_INIT);
	EXPECT_EQ(q.attr.port_num, 1);
	EXPECT_EQ(q.mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

// The alternate path of a LAP exchange, RTS->RTS, as RcQp::load_alternate_path() applies it.
TEST_F(IbcmDeviceTest, InitAltPathAttr)
{
	ConnectionId a = dev.create_id();
	k->qp_attr.qp_attr_mask = IBV_QP_STATE | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
	k->qp_attr.path_mig_state = IBV_MIG_REARM;
	k->qp_attr.alt_ah_attr.dlid = 0x12;
	k->qp_attr.alt_ah_attr.sl = 5;
	k->qp_attr.alt_ah_attr.port_num = 2;
	k->qp_attr.alt_port_num = 2;
	k->qp_attr.alt_pkey_index = 3;
	k->qp_attr.alt_timeout = 17;
	const QpAttr q = a.init_alt_path_attr();
	EXPECT_EQ(last().hdr.cmd, 17U);
	EXPECT_EQ(last().payload<ib_ucm_init_qp_attr>().qp_state, 3U);
	EXPECT_EQ(q.mask, IBV_QP_STATE | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE);
	EXPECT_EQ(q.attr.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(q.attr.path_mig_state, IBV_MIG_REARM);
	EXPECT_EQ(q.attr.alt_ah_attr.dlid, 0x12);
	EXPECT_EQ(q.attr.alt_ah_attr.sl, 5);
	EXPECT_EQ(q.attr.alt_ah_attr.port_num, 2);
	EXPECT_EQ(q.attr.alt_port_num, 2);
	EXPECT_EQ(q.attr.alt_pkey_index, 3);
	EXPECT_EQ(q.attr.alt_timeout, 17);

	// The CM gives the primary RTS transition: there is nothing to load.
	k->qp_attr = {};
	k->qp_attr.qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	try {
		a.init_alt_path_attr();
		FAIL();
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EINVAL);
	}
}

TEST_F(IbcmDeviceTest, KernelErrnoBecomesSystemError)
{
	ConnectionId a = dev.create_id();
	k->fail_next = EISCONN;
	try {
		a.disconnect();
		FAIL();
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EISCONN);
	}
}

TEST_F(IbcmDeviceTest, NextEventPumpsAndOwnsTheNewId)
{
	EXPECT_FALSE(dev.next_event(std::chrono::milliseconds(0)).has_value());
	Listener l = dev.listen(0x42);
	test::QueuedEvent q;
	q.resp.uid = l.uid();
	q.resp.id = 555;
	q.resp.event = 1;
	q.resp.present = IB_UCM_PRES_DATA | IB_UCM_PRES_PRIMARY;
	q.resp.u.req_resp.qp_type = 2;
	q.resp.u.req_resp.remote_qpn = 0x77;
	q.data = std::vector<std::uint8_t>(92, 0x33);
	k->events.push_back(q);
	{
		auto ev = dev.next_event(std::chrono::milliseconds(0));
		ASSERT_TRUE(ev.has_value());
		const auto &get = last().payload<ib_ucm_event_get>();
		EXPECT_EQ(last().hdr.cmd, 16U);
		EXPECT_EQ(last().hdr.out, 192U);
		EXPECT_EQ(get.data_len, 255U);
		EXPECT_EQ(get.info_len, 255U);
		auto &req = std::get<ReqReceived>(*ev);
		EXPECT_EQ(req.conn.handle(), 555U);
		EXPECT_EQ(req.conn.uid(), l.uid());
		EXPECT_EQ(req.remote_qpn, 0x77U);
		EXPECT_EQ(req.private_data, Bytes(92, 0x33));
		EXPECT_TRUE(k->destroyed.empty());
	}
	// The event went out of scope: its new id was destroyed, not the listener.
	EXPECT_EQ(k->destroyed, std::vector<std::uint32_t>{555});
	EXPECT_FALSE(dev.next_event(std::chrono::milliseconds(0)).has_value());
}

TEST_F(IbcmDeviceTest, MalformedEventIsEbadmsg)
{
	test::QueuedEvent q;
	q.resp.event = 99;
	k->events.push_back(q);
	try {
		dev.next_event(std::chrono::milliseconds(0));
		FAIL();
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EBADMSG);
	}
}

// The real transport, on a FIFO instead of a ucm node: one write() per
// command, poll() readiness as wait().
TEST(IbcmFileTransport, OneWritePerCommandAndWait)
{
	char tmpl[] = "/tmp/ibcmxx-fifo-XXXXXX";
	ASSERT_NE(mkdtemp(tmpl), nullptr);
	const std::filesystem::path dir = tmpl, fifo = dir / "ucm0";
	ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
	{
		auto t = open_file_transport(fifo);
		EXPECT_GE(t->fd(), 0);
		EXPECT_FALSE(t->wait(std::chrono::milliseconds(0)));
		const auto frame = abi::frame(IB_USER_CM_CMD_LISTEN, abi::listen(3, 0x42, ~0ULL), 0);
		EXPECT_EQ(t->write(frame), frame.size());
		EXPECT_TRUE(t->wait(std::chrono::milliseconds(0)));
		std::vector<std::byte> back(64);
		EXPECT_EQ(::read(t->fd(), back.data(), back.size()), static_cast<ssize_t>(frame.size()));
		back.resize(frame.size());
		EXPECT_EQ(back, frame);
		EXPECT_FALSE(t->wait(std::chrono::milliseconds(10)));
		// Non-blocking: a read of the empty FIFO does not sleep.
		EXPECT_EQ(::read(t->fd(), back.data(), back.size()), -1);
		EXPECT_EQ(errno, EAGAIN);
	}
	std::filesystem::remove_all(dir);
	try {
		open_file_transport(dir / "ucm9");
		FAIL();
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), ENOENT);
	}
}

struct IbcmFakeSysfs : ::testing::Test {
	std::filesystem::path root;
	void SetUp() override
	{
		char tmpl[] = "/tmp/ibcmxx-sysfs-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		root = tmpl;
		std::filesystem::create_directories(root / "class/infiniband_cm/ucm0");
		std::filesystem::create_directories(root / "class/infiniband_cm/ucm1");
		write("class/infiniband_cm/abi_version", "5\n");
		write("class/infiniband_cm/ucm0/ibdev", "mthca0\n");
		write("class/infiniband_cm/ucm1/ibdev", "mthca1\n");
	}
	void TearDown() override { std::filesystem::remove_all(root); }
	void write(const std::string &rel, const std::string &text) { std::ofstream(root / rel) << text; }
	int find_errno(std::string_view dev)
	{
		try {
			Device::find_node(dev, root, "/dev");
		} catch (const std::system_error &e) {
			return e.code().value();
		}
		return 0;
	}
};

TEST_F(IbcmFakeSysfs, FindsTheNodeByIbdev)
{
	EXPECT_EQ(Device::find_node("mthca1", root, "/dev"), std::filesystem::path("/dev/infiniband/ucm1"));
	EXPECT_EQ(Device::find_node("mthca0", root, "/dev"), std::filesystem::path("/dev/infiniband/ucm0"));
	EXPECT_EQ(find_errno("mthca2"), ENODEV);
	EXPECT_EQ(find_errno("mthca"), ENODEV);
}

TEST_F(IbcmFakeSysfs, ChecksAbiVersion)
{
	write("class/infiniband_cm/abi_version", "4\n");
	EXPECT_EQ(find_errno("mthca0"), EPROTONOSUPPORT);
	std::filesystem::remove(root / "class/infiniband_cm/abi_version");
	EXPECT_EQ(find_errno("mthca0"), ENODEV);
}

TEST_F(IbcmFakeSysfs, OpenOfAMissingNodeFails)
{
	EXPECT_THROW(Device::open("mthca0", root, root / "nodev"), std::system_error);
}

} // namespace
} // namespace ibcm
