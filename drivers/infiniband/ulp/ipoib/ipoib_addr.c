// SPDX-License-Identifier: GPL-2.0
/*
 * The pure part of ib_ipoib: the 20-byte hardware address, the broadcast
 * address and its MGID, P_Key and MTU arithmetic, and the names of the
 * state machines' states. No device, no lock: KUnit tests it on UML
 * (ipoib_addr_test.c).
 *
 * Hardware address (RFC 4391, 9.1.1): byte 0 flags, bytes 1-3 the UD QPN,
 * bytes 4-19 the port GID. A multicast one has QPN 0xffffff and an MGID.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/string.h>

#include "ipoib.h"

/**
 * ipoib_build_hwaddr() - fill a 20-byte IPoIB hardware address
 * @addr: 20 bytes to fill
 * @qpn: the UD QP number (24 bits)
 * @gid: the port GID
 * @flags: byte 0 (0: datagram only; IPOIB_FLAGS_RC offers connected mode)
 */
void ipoib_build_hwaddr(u8 *addr, u32 qpn, const union ib_gid *gid, u8 flags)
{
	addr[0] = flags;
	addr[1] = (qpn >> 16) & 0xff;
	addr[2] = (qpn >> 8) & 0xff;
	addr[3] = qpn & 0xff;
	memcpy(addr + 4, gid->raw, sizeof(gid->raw));
}

/**
 * ipoib_full_pkey() - a P_Key with the full-member bit set
 * @pkey: the P_Key as in the table
 *
 * Return: @pkey | 0x8000.
 */
u16 ipoib_full_pkey(u16 pkey)
{
	return pkey | 0x8000;
}

/**
 * ipoib_build_broadcast() - fill the broadcast hardware address
 * @addr: 20 bytes to fill
 * @pkey: the interface's P_Key; the full-member bit is forced on
 *
 * QPN 0xffffff and the link-local IPv4 broadcast MGID
 * ff12:401b:PPPP::ffff:ffff (signature 0x401b, scope 2).
 */
void ipoib_build_broadcast(u8 *addr, u16 pkey)
{
	u16 full = ipoib_full_pkey(pkey);

	memset(addr, 0, IPOIB_ALEN);
	addr[1] = 0xff;
	addr[2] = 0xff;
	addr[3] = 0xff;
	addr[4] = 0xff;
	addr[5] = 0x12;			/* flags 1 (transient), scope 2 */
	addr[6] = 0x40;			/* IPv4 signature */
	addr[7] = 0x1b;
	addr[8] = full >> 8;
	addr[9] = full & 0xff;
	memset(addr + 16, 0xff, 4);
}

/**
 * ipoib_hwaddr_qpn() - the QPN of a hardware address
 * @addr: 20 bytes
 *
 * Return: bytes 1-3 as a 24-bit number.
 */
u32 ipoib_hwaddr_qpn(const u8 *addr)
{
	return (u32)addr[1] << 16 | (u32)addr[2] << 8 | addr[3];
}

/**
 * ipoib_hwaddr_gid() - the GID (or MGID) of a hardware address
 * @addr: 20 bytes
 *
 * Return: a pointer into @addr.
 */
const union ib_gid *ipoib_hwaddr_gid(const u8 *addr)
{
	return (const union ib_gid *)(addr + 4);
}

/**
 * ipoib_hwaddr_is_mcast() - does a hardware address name a group?
 * @addr: 20 bytes
 *
 * Return: true when its GID is a multicast GID (first byte 0xff).
 */
bool ipoib_hwaddr_is_mcast(const u8 *addr)
{
	return addr[4] == 0xff;
}

/**
 * ipoib_mgid_is_ipoib() - is an MGID one of IPoIB's (IPv4 or IPv6)?
 * @mgid: the group
 *
 * Return: true for ffXY:401b:... and ffXY:601b:...
 */
bool ipoib_mgid_is_ipoib(const union ib_gid *mgid)
{
	return mgid->raw[0] == 0xff && mgid->raw[3] == 0x1b &&
	       (mgid->raw[2] == 0x40 || mgid->raw[2] == 0x60);
}

/**
 * ipoib_mtu_from_ib() - the netdev MTU of an IB MTU in bytes
 * @ib_mtu: 256..4096
 *
 * Return: @ib_mtu less the encapsulation header.
 */
int ipoib_mtu_from_ib(int ib_mtu)
{
	return ib_mtu - IPOIB_ENCAP_LEN;
}

/**
 * ipoib_ring_size() - a ring size from a module parameter
 * @requested: the parameter
 * @min: the smallest allowed
 * @max: the largest allowed
 *
 * Return: @requested rounded up to a power of two and clamped to
 * [@min, @max] (both powers of two).
 */
unsigned int ipoib_ring_size(int requested, unsigned int min, unsigned int max)
{
	if (requested <= (int)min)
		return min;
	if (requested >= (int)max)
		return max;
	return roundup_pow_of_two(requested);
}

/**
 * ipoib_cm_service_id() - the IPoIB-CM service ID of an interface
 * @qpn: the interface's UD QPN (24 bits)
 *
 * Return: 0x1000000000000000 | @qpn, in network order: what the passive
 * side listens on and the active side connects to.
 */
__be64 ipoib_cm_service_id(u32 qpn)
{
	return cpu_to_be64(IPOIB_CM_SERVICE_BASE | (qpn & 0xffffff));
}

/**
 * ipoib_cm_data_pack() - the private data of our REQ or REP
 * @data: to fill
 * @qpn: our UD QPN
 * @buf_size: the largest packet we receive, encapsulation header included
 */
void ipoib_cm_data_pack(struct ipoib_cm_data *data, u32 qpn, u32 buf_size)
{
	data->qpn = cpu_to_be32(qpn & 0xffffff);
	data->mtu = cpu_to_be32(buf_size);
}

/**
 * ipoib_cm_data_unpack() - read a peer's REQ or REP private data
 * @pdata: the message's private data, or NULL
 * @len: its length
 * @qpn: out: the peer's UD QPN (the top byte dropped)
 * @buf_size: out: the largest packet it receives, encap included
 *
 * Return: 0, or -EINVAL when the data is missing, short, or offers no
 * room for a payload (a size of 4 bytes or less).
 */
int ipoib_cm_data_unpack(const void *pdata, size_t len, u32 *qpn, u32 *buf_size)
{
	struct ipoib_cm_data data;

	if (!pdata || len < sizeof(data))
		return -EINVAL;
	memcpy(&data, pdata, sizeof(data));
	if (be32_to_cpu(data.mtu) <= IPOIB_ENCAP_LEN)
		return -EINVAL;
	*qpn = be32_to_cpu(data.qpn) & 0xffffff;
	*buf_size = be32_to_cpu(data.mtu);
	return 0;
}

/**
 * ipoib_cm_max_mtu() - the netdev MTU of connected mode
 * @max_srq_sge: the HCA's scatter entries per SRQ receive
 * @page_size: PAGE_SIZE
 *
 * As the 6.1 IPoIB sizes it, so that both ends show the same MTU: one page
 * per scatter entry, 16 at most, less 16 bytes (65520 with 4 KiB pages).
 *
 * Return: the MTU, or 0 when the HCA gives no scatter entry.
 */
int ipoib_cm_max_mtu(int max_srq_sge, unsigned long page_size)
{
	int pages = min(max_srq_sge, IPOIB_CM_MAX_RX_SGE);

	if (pages <= 0)
		return 0;
	return pages * (int)page_size - IPOIB_CM_MTU_SLACK;
}

/**
 * ipoib_mtu_limit() - the largest netdev MTU in a mode
 * @connected: the interface is in connected mode
 * @cm_mtu: the connected-mode MTU (0: connected mode unavailable)
 * @ud_mtu: the datagram MTU (the broadcast group's, less the encap)
 *
 * Return: @cm_mtu in connected mode when there is one, else @ud_mtu.
 */
int ipoib_mtu_limit(bool connected, int cm_mtu, int ud_mtu)
{
	return connected && cm_mtu > 0 ? cm_mtu : ud_mtu;
}

static const char *const mcast_state_names[IPOIB_MC_NR_STATES] = {
	[IPOIB_MC_IDLE]		= "idle",
	[IPOIB_MC_JOINING]	= "joining",
	[IPOIB_MC_JOINED]	= "joined",
	[IPOIB_MC_FAILED]	= "failed",
	[IPOIB_MC_LEAVING]	= "leaving",
};

static const char *const path_state_names[IPOIB_PATH_NR_STATES] = {
	[IPOIB_PATH_NEW]	= "new",
	[IPOIB_PATH_QUERYING]	= "querying",
	[IPOIB_PATH_VALID]	= "valid",
	[IPOIB_PATH_FAILED]	= "failed",
};

static const char *const cm_state_names[IPOIB_CM_NR_STATES] = {
	[IPOIB_CM_NEW]		= "new",
	[IPOIB_CM_CONNECTING]	= "connecting",
	[IPOIB_CM_UP]		= "up",
	[IPOIB_CM_DEAD]		= "dead",
};

/**
 * ipoib_mcast_state_name() - a group state's name, for messages
 * @s: the state
 *
 * Return: a static string; "?" for an unknown value.
 */
const char *ipoib_mcast_state_name(enum ipoib_mcast_state s)
{
	return (unsigned int)s < IPOIB_MC_NR_STATES ? mcast_state_names[s] : "?";
}

/**
 * ipoib_path_state_name() - a path state's name, for messages
 * @s: the state
 *
 * Return: a static string; "?" for an unknown value.
 */
const char *ipoib_path_state_name(enum ipoib_path_state s)
{
	return (unsigned int)s < IPOIB_PATH_NR_STATES ? path_state_names[s] : "?";
}

/**
 * ipoib_cm_state_name() - a connection state's name, for messages and sysfs
 * @s: the state
 *
 * Return: a static string; "?" for an unknown value.
 */
const char *ipoib_cm_state_name(enum ipoib_cm_state s)
{
	return (unsigned int)s < IPOIB_CM_NR_STATES ? cm_state_names[s] : "?";
}

/**
 * ipoib_child_pkey_check() - is a number written to create_child a P_Key?
 * @pkey: the number as parsed
 *
 * Zero, the bare full-member bit 0x8000 (both mean "no partition") and
 * anything outside 16 bits are refused, as 6.1 refuses them.
 *
 * Return: 0, or -EINVAL.
 */
int ipoib_child_pkey_check(long pkey)
{
	if (pkey <= 0 || pkey > 0xffff || pkey == 0x8000)
		return -EINVAL;
	return 0;
}

/**
 * ipoib_child_name() - the name create_child gives a P_Key child
 * @buf: where the name goes
 * @len: its size (IFNAMSIZ)
 * @parent: the parent's name; at most its first 10 characters are kept
 * @pkey: the P_Key as written, in four hex digits
 *
 * E.g. "ib0" and 0x8001 give "ib0.8001".
 */
void ipoib_child_name(char *buf, size_t len, const char *parent, u16 pkey)
{
	snprintf(buf, len, "%.10s.%04x", parent, pkey);
}
