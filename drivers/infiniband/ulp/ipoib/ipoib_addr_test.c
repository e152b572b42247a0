// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite ib_ipoib_addr: the pure helpers of ib_ipoib (ipoib_addr.c)
 * against byte images worked out from RFC 4391 and against the kernel's
 * own multicast mappings (ip_ib_mc_map, ipv6_ib_mc_map), which build the
 * group addresses that reach ndo_set_rx_mode and xmit.
 */
#include <kunit/test.h>
#include <linux/string.h>
#include <net/if_inet6.h>
#include <net/ip.h>

#include "ipoib.h"

static const union ib_gid ia_gid = { .raw = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0,
	0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0xa0, 0x01 } };

static void ia_hwaddr(struct kunit *test)
{
	static const u8 want[IPOIB_ALEN] = {
		0x00, 0x12, 0x34, 0x56,
		0xfe, 0x80, 0, 0, 0, 0, 0, 0,
		0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0xa0, 0x01 };
	u8 addr[IPOIB_ALEN];

	ipoib_build_hwaddr(addr, 0x123456, &ia_gid, 0);
	KUNIT_EXPECT_EQ(test, memcmp(addr, want, IPOIB_ALEN), 0);
	KUNIT_EXPECT_EQ(test, ipoib_hwaddr_qpn(addr), 0x123456U);
	KUNIT_EXPECT_EQ(test, memcmp(ipoib_hwaddr_gid(addr)->raw, ia_gid.raw, 16), 0);
	KUNIT_EXPECT_FALSE(test, ipoib_hwaddr_is_mcast(addr));

	/* Only the low 24 bits of a QPN; the flags byte as given. */
	ipoib_build_hwaddr(addr, 0xff000001, &ia_gid, IPOIB_FLAGS_RC);
	KUNIT_EXPECT_EQ(test, addr[0], IPOIB_FLAGS_RC);
	KUNIT_EXPECT_EQ(test, ipoib_hwaddr_qpn(addr), 1U);
}

static void ia_broadcast(struct kunit *test)
{
	static const u8 want[IPOIB_ALEN] = {
		0x00, 0xff, 0xff, 0xff,
		0xff, 0x12, 0x40, 0x1b, 0x80, 0x01, 0, 0,
		0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	u8 addr[IPOIB_ALEN];

	/* A limited-member P_Key: the group is named by the full one. */
	ipoib_build_broadcast(addr, 0x0001);
	KUNIT_EXPECT_EQ(test, memcmp(addr, want, IPOIB_ALEN), 0);
	KUNIT_EXPECT_TRUE(test, ipoib_hwaddr_is_mcast(addr));
	KUNIT_EXPECT_EQ(test, ipoib_hwaddr_qpn(addr), (u32)IB_MULTICAST_QPN);
	KUNIT_EXPECT_TRUE(test, ipoib_mgid_is_ipoib(ipoib_hwaddr_gid(addr)));

	ipoib_build_broadcast(addr, 0xffff);
	KUNIT_EXPECT_EQ(test, addr[8], 0xff);
	KUNIT_EXPECT_EQ(test, addr[9], 0xff);
	KUNIT_EXPECT_EQ(test, ipoib_full_pkey(0x7fff), 0xffff);
	KUNIT_EXPECT_EQ(test, ipoib_full_pkey(0x8001), 0x8001);
}

/*
 * The kernel's IPv4 mapping takes scope and P_Key from our broadcast (with
 * CONFIG_INET; the UML build has no INET).
 */
static void ia_ipv4_groups(struct kunit *test)
{
	static const u8 want[IPOIB_ALEN] = {
		0x00, 0xff, 0xff, 0xff,
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
		0, 0, 0, 0, 0x00, 0x00, 0x00, 0xfb };
	u8 bcast[IPOIB_ALEN];
	char group[IPOIB_ALEN];

	ipoib_build_broadcast(bcast, 0xffff);
	/* What the mapping keeps of the broadcast address: all but the group. */
	KUNIT_EXPECT_EQ(test, memcmp(bcast, want, 16), 0);
#if IS_ENABLED(CONFIG_INET)
	ip_ib_mc_map(htonl(0xe00000fb), bcast, group);	/* 224.0.0.251 */
#else
	/* UML without INET has no ip_ib_mc_map: its result, by hand. */
	memcpy(group, bcast, 16);
	memcpy(group + 16, "\x00\x00\x00\xfb", 4);
#endif
	KUNIT_EXPECT_EQ(test, memcmp(group, want, IPOIB_ALEN), 0);
	KUNIT_EXPECT_TRUE(test, ipoib_hwaddr_is_mcast((u8 *)group));
	KUNIT_EXPECT_TRUE(test, ipoib_mgid_is_ipoib(ipoib_hwaddr_gid((u8 *)group)));
	KUNIT_EXPECT_EQ(test, ipoib_hwaddr_qpn((u8 *)group), (u32)IB_MULTICAST_QPN);
}

/* IPv6: a solicited-node group, signature 0x601b, the low 10 bytes kept. */
static void ia_ipv6_groups(struct kunit *test)
{
	static const struct in6_addr sn = { .s6_addr = {
		0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0x00, 0xa0, 0x01 } };
	static const u8 want[IPOIB_ALEN] = {
		0x00, 0xff, 0xff, 0xff,
		0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0,
		0, 0, 0, 0x01, 0xff, 0x00, 0xa0, 0x01 };
	u8 bcast[IPOIB_ALEN];
	char group[IPOIB_ALEN];

	ipoib_build_broadcast(bcast, 0xffff);
	ipv6_ib_mc_map(&sn, bcast, group);
	KUNIT_EXPECT_EQ(test, memcmp(group, want, IPOIB_ALEN), 0);
	KUNIT_EXPECT_TRUE(test, ipoib_mgid_is_ipoib(ipoib_hwaddr_gid((u8 *)group)));
}

static void ia_foreign_groups(struct kunit *test)
{
	union ib_gid g = { .raw = { 0xff, 0x12, 0xab, 0x1b, 0xff, 0xff } };

	KUNIT_EXPECT_FALSE(test, ipoib_mgid_is_ipoib(&g));
	g.raw[2] = 0x40;
	g.raw[3] = 0x1c;
	KUNIT_EXPECT_FALSE(test, ipoib_mgid_is_ipoib(&g));
	KUNIT_EXPECT_FALSE(test, ipoib_mgid_is_ipoib(&ia_gid));
}

static void ia_sizes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ipoib_mtu_from_ib(2048), 2044);
	KUNIT_EXPECT_EQ(test, ipoib_mtu_from_ib(4096), 4092);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(-1, 2, 8192), 2U);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(2, 2, 8192), 2U);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(3, 2, 8192), 4U);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(128, 2, 8192), 128U);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(200, 2, 8192), 256U);
	KUNIT_EXPECT_EQ(test, ipoib_ring_size(8193, 2, 8192), 8192U);
}

static void ia_state_names(struct kunit *test)
{
	int s;

	for (s = 0; s < IPOIB_MC_NR_STATES; s++)
		KUNIT_EXPECT_STRNEQ(test, ipoib_mcast_state_name(s), "?");
	for (s = 0; s < IPOIB_PATH_NR_STATES; s++)
		KUNIT_EXPECT_STRNEQ(test, ipoib_path_state_name(s), "?");
	KUNIT_EXPECT_STREQ(test, ipoib_mcast_state_name(IPOIB_MC_JOINED), "joined");
	KUNIT_EXPECT_STREQ(test, ipoib_path_state_name(IPOIB_PATH_VALID), "valid");
	KUNIT_EXPECT_STREQ(test, ipoib_mcast_state_name(IPOIB_MC_NR_STATES), "?");
	KUNIT_EXPECT_STREQ(test, ipoib_path_state_name(-1), "?");
	for (s = 0; s < IPOIB_CM_NR_STATES; s++)
		KUNIT_EXPECT_STRNEQ(test, ipoib_cm_state_name(s), "?");
	KUNIT_EXPECT_STREQ(test, ipoib_cm_state_name(IPOIB_CM_UP), "up");
	KUNIT_EXPECT_STREQ(test, ipoib_cm_state_name(IPOIB_CM_NR_STATES), "?");
}

/* RFC 4755: the service ID and the 8 bytes of REQ/REP private data. */
static void ia_cm_wire(struct kunit *test)
{
	static const u8 want_sid[8] = { 0x10, 0, 0, 0, 0, 0x12, 0x34, 0x56 };
	static const u8 want_data[8] = { 0x00, 0x12, 0x34, 0x56,
					 0x00, 0x00, 0xff, 0xf4 };
	struct ipoib_cm_data data;
	__be64 sid;
	u32 qpn = 0, size = 0;
	u8 raw[8];

	sid = ipoib_cm_service_id(0x123456);
	KUNIT_EXPECT_EQ(test, memcmp(&sid, want_sid, 8), 0);
	/* Only the QPN's 24 bits reach the service ID. */
	sid = ipoib_cm_service_id(0xab123456);
	KUNIT_EXPECT_EQ(test, memcmp(&sid, want_sid, 8), 0);

	KUNIT_ASSERT_EQ(test, sizeof(data), 8UL);
	ipoib_cm_data_pack(&data, 0x123456, 65524);
	KUNIT_EXPECT_EQ(test, memcmp(&data, want_data, 8), 0);
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(&data, 8, &qpn, &size), 0);
	KUNIT_EXPECT_EQ(test, qpn, 0x123456U);
	KUNIT_EXPECT_EQ(test, size, 65524U);

	/* The peer's top QPN byte is ignored; longer data is fine. */
	memcpy(raw, want_data, 8);
	raw[0] = 0xee;
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(raw, 8, &qpn, &size), 0);
	KUNIT_EXPECT_EQ(test, qpn, 0x123456U);

	/* Missing, short, or no room for a payload: refused. */
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(NULL, 8, &qpn, &size), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(raw, 7, &qpn, &size), -EINVAL);
	raw[4] = 0;
	raw[5] = 0;
	raw[6] = 0;
	raw[7] = 4;
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(raw, 8, &qpn, &size), -EINVAL);
	raw[7] = 5;
	KUNIT_EXPECT_EQ(test, ipoib_cm_data_unpack(raw, 8, &qpn, &size), 0);
	KUNIT_EXPECT_EQ(test, size, 5U);
}

static void ia_cm_mtu(struct kunit *test)
{
	/* 6.1 shows 65520 on an HCA with 16 or more SRQ scatter entries. */
	KUNIT_EXPECT_EQ(test, ipoib_cm_max_mtu(27, 4096), 65520);
	KUNIT_EXPECT_EQ(test, ipoib_cm_max_mtu(16, 4096), 65520);
	KUNIT_EXPECT_EQ(test, ipoib_cm_max_mtu(4, 4096), 16368);
	KUNIT_EXPECT_EQ(test, ipoib_cm_max_mtu(0, 4096), 0);

	KUNIT_EXPECT_EQ(test, ipoib_mtu_limit(true, 65520, 2044), 65520);
	KUNIT_EXPECT_EQ(test, ipoib_mtu_limit(false, 65520, 2044), 2044);
	KUNIT_EXPECT_EQ(test, ipoib_mtu_limit(true, 0, 2044), 2044);
}

static void ia_child(struct kunit *test)
{
	char name[16];

	/* The numbers 6.1's create_child refuses, and its edges. */
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(0), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(-1), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(0x8000), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(0x10000), -EINVAL);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(1), 0);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(0x8001), 0);
	KUNIT_EXPECT_EQ(test, ipoib_child_pkey_check(0xffff), 0);

	ipoib_child_name(name, sizeof(name), "ib0", 0x8001);
	KUNIT_EXPECT_STREQ(test, name, "ib0.8001");
	ipoib_child_name(name, sizeof(name), "ib1", 0x12);
	KUNIT_EXPECT_STREQ(test, name, "ib1.0012");
	/* A long parent name is cut to 10 characters: 15 in all. */
	ipoib_child_name(name, sizeof(name), "ibp0s8f0abcdefgh", 0xffff);
	KUNIT_EXPECT_STREQ(test, name, "ibp0s8f0ab.ffff");
}

static struct kunit_case ia_cases[] = {
	KUNIT_CASE(ia_hwaddr),
	KUNIT_CASE(ia_broadcast),
	KUNIT_CASE(ia_ipv4_groups),
	KUNIT_CASE(ia_ipv6_groups),
	KUNIT_CASE(ia_foreign_groups),
	KUNIT_CASE(ia_sizes),
	KUNIT_CASE(ia_state_names),
	KUNIT_CASE(ia_cm_wire),
	KUNIT_CASE(ia_cm_mtu),
	KUNIT_CASE(ia_child),
	{}
};

static struct kunit_suite ia_suite = {
	.name = "ib_ipoib_addr",
	.test_cases = ia_cases,
};

kunit_test_suite(ia_suite);
