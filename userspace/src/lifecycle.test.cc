// SPDX-License-Identifier: GPL-2.0
// A whole connection through the library, both sides in one process over a
// fake ib_ucm + ib_cm (fake_cm.h): an rdma_cm-style REQ (cma_hdr + user
// data), REP, RTU, DREQ, DREP and timewait, with the ids, uids and private
// data each side must see; and a REQ nobody listens for.
#include <gtest/gtest.h>

#include "fake_cm.h"
#include "ibcm/cma.h"

namespace ibcm {
namespace {

using namespace std::chrono_literals;

struct IbcmLifecycle : ::testing::Test {
	std::shared_ptr<test::FakeCm> cm = std::make_shared<test::FakeCm>();
	Device server{std::make_unique<test::FakeCmTransport>(cm, cm->add_device())};
	Device client{std::make_unique<test::FakeCmTransport>(cm, cm->add_device())};

	template <typename T> T next(Device &d)
	{
		std::optional<Event> ev = d.next_event(0ms);
		EXPECT_TRUE(ev.has_value());
		if (!ev)
			throw std::runtime_error("no event");
		if (!std::holds_alternative<T>(*ev))
			throw std::runtime_error(std::string("got ") + event_name(*ev));
		return std::move(std::get<T>(*ev));
	}
};

TEST_F(IbcmLifecycle, ConnectAcceptDisconnect)
{
	const std::uint64_t sid = rdma_cm_service_id(PortSpace::tcp, 7174);
	Listener l = server.listen(sid);

	ConnectionId a = client.create_id();
	ReqParams req;
	req.service_id = sid;
	req.qpn = 0x404;
	req.psn = 0x1234;
	req.primary_path.dlid = 2;
	req.primary_path.slid = 1;
	const CmaHeader hdr{*IpAddress::parse("192.168.77.1"), *IpAddress::parse("192.168.77.2"), 40000};
	req.private_data = cma_req_private_data(hdr, Bytes{'h', 'i'});
	a.connect(req);

	ReqReceived in = next<ReqReceived>(server);
	EXPECT_EQ(in.uid, l.uid());
	EXPECT_NE(in.id, l.handle());
	EXPECT_EQ(in.conn.handle(), in.id);
	EXPECT_EQ(in.remote_qpn, 0x404U);
	EXPECT_EQ(in.starting_psn, 0x1234U);
	EXPECT_EQ(in.primary_path.dlid, 2);
	ASSERT_EQ(in.private_data.size(), kReqPrivateData); // the whole field
	const auto got = parse_cma_header(in.private_data);
	ASSERT_TRUE(got.has_value());
	EXPECT_EQ(*got, hdr);
	EXPECT_EQ(in.private_data[36], 'h');
	EXPECT_EQ(in.private_data[37], 'i');

	ConnectionId b = std::move(in.conn);
	RepParams rep;
	rep.qpn = 0x505;
	rep.private_data = {7, 7, 7};
	b.accept(rep);
	EXPECT_NE(b.uid(), l.uid());

	RepReceived r = next<RepReceived>(client);
	EXPECT_EQ(r.id, a.handle());
	EXPECT_EQ(r.uid, a.uid());
	EXPECT_EQ(r.remote_qpn, 0x505U);
	ASSERT_EQ(r.private_data.size(), kRepPrivateData);
	EXPECT_EQ(r.private_data[2], 7);
	EXPECT_EQ(r.private_data[3], 0);

	a.rtu();
	Established est = next<Established>(server);
	EXPECT_EQ(est.id, b.handle());
	EXPECT_EQ(est.uid, b.uid()); // its own uid since the REP
	EXPECT_FALSE(est.by_user);

	a.disconnect(Bytes{1});
	DreqReceived dreq = next<DreqReceived>(server);
	EXPECT_EQ(dreq.id, b.handle());
	EXPECT_EQ(dreq.private_data.at(0), 1);
	b.drep();
	EXPECT_EQ(next<DrepReceived>(client).id, a.handle());
	EXPECT_EQ(next<TimewaitExit>(client).id, a.handle());
	EXPECT_EQ(next<TimewaitExit>(server).id, b.handle());
	EXPECT_FALSE(server.next_event(0ms).has_value());
	EXPECT_FALSE(client.next_event(0ms).has_value());

	a = ConnectionId();
	b = ConnectionId();
	EXPECT_EQ(cm->ids.size(), 1U); // the listener
}

// LAP/APR on an established connection: the receiver sees the path turned
// around and the private data; the sender the status, info and data.
TEST_F(IbcmLifecycle, LapThenApr)
{
	Listener l = server.listen(0x42);
	ConnectionId a = client.create_id();
	ReqParams req;
	req.service_id = 0x42;
	req.primary_path.dlid = 2;
	req.primary_path.slid = 1;
	a.connect(req);
	ConnectionId b = std::move(next<ReqReceived>(server).conn);
	b.accept(RepParams{});
	next<RepReceived>(client);
	a.rtu();
	next<Established>(server);

	PathRecord alt = req.primary_path;
	alt.sl = 5;
	alt.sgid[15] = 1;
	alt.dgid[15] = 2;
	a.lap(alt, Bytes{'a', 'l', 't'});
	LapReceived lap = next<LapReceived>(server);
	EXPECT_EQ(lap.id, b.handle());
	EXPECT_EQ(lap.uid, b.uid());
	EXPECT_EQ(lap.alternate_path.dlid, 1);
	EXPECT_EQ(lap.alternate_path.slid, 2);
	EXPECT_EQ(lap.alternate_path.dgid[15], 1);
	EXPECT_EQ(lap.alternate_path.sl, 5);
	ASSERT_EQ(lap.private_data.size(), kLapPrivateData);
	EXPECT_EQ(lap.private_data[2], 't');

	b.mra(20);
	EXPECT_EQ(next<MraReceived>(client).service_timeout, 20);
	b.apr(kAprSuccess, Bytes{1, 2}, Bytes{9});
	AprReceived apr = next<AprReceived>(client);
	EXPECT_EQ(apr.id, a.handle());
	EXPECT_EQ(apr.status, kAprSuccess);
	ASSERT_EQ(apr.info.size(), kAprInfoLength);
	EXPECT_EQ(apr.info[1], 2);
	EXPECT_EQ(apr.info[2], 0);
	ASSERT_EQ(apr.private_data.size(), kAprPrivateData);
	EXPECT_EQ(apr.private_data[0], 9);

	a.lap(alt);
	next<LapReceived>(server);
	b.apr(kAprReject);
	EXPECT_EQ(next<AprReceived>(client).status, kAprReject);
	EXPECT_FALSE(server.next_event(0ms).has_value());
	EXPECT_FALSE(client.next_event(0ms).has_value());
}

TEST_F(IbcmLifecycle, NobodyListens)
{
	ConnectionId a = client.create_id();
	ReqParams req;
	req.service_id = 0x99;
	a.connect(req);
	RejReceived rej = next<RejReceived>(client);
	EXPECT_EQ(rej.reason, kRejInvalidServiceId);
	EXPECT_EQ(rej.id, a.handle());
}

TEST_F(IbcmLifecycle, RejectWithAri)
{
	Listener l = server.listen(0x42);
	ConnectionId a = client.create_id();
	ReqParams req;
	req.service_id = 0x42;
	a.connect(req);
	{
		ReqReceived in = next<ReqReceived>(server);
		in.conn.reject(kRejConsumerDefined, Bytes{1, 2, 3, 4}, Bytes{9});
	}
	RejReceived rej = next<RejReceived>(client);
	EXPECT_EQ(rej.reason, kRejConsumerDefined);
	ASSERT_EQ(rej.ari.size(), kRejAriLength);
	EXPECT_EQ(rej.ari[3], 4);
	EXPECT_EQ(rej.ari[4], 0);
	EXPECT_EQ(rej.private_data.at(0), 9);
	// The rejected REQ's id went with its event.
	EXPECT_EQ(cm->ids.size(), 2U);
}

} // namespace
} // namespace ibcm
