/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * The user MAD ABI of ib_umad, version 5: what libibumad (rdma-core) reads
 * and writes on /dev/infiniband/umadN.
 *
 * A read() or write() moves one struct ib_user_mad: a header giving the
 * agent, the outcome and the remote address, followed by the MAD itself
 * (for RMPP classes, the whole reassembled message). Until the file has
 * done IB_USER_MAD_ENABLE_PKEY (or registered through REGISTER_AGENT2) the
 * header is the older 56-byte one without pkey_index. The layouts below
 * are fixed by that ABI, byte for byte.
 */
#ifndef IB_USER_MAD_H
#define IB_USER_MAD_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define IB_USER_MAD_ABI_VERSION	5

/**
 * struct ib_user_mad_hdr - the 64-byte header
 * @id: on write, the agent to send with; on read, the agent that got it
 * @status: 0, or ETIMEDOUT for a request whose answer never came
 * @timeout_ms: how long to wait for a response (0: none expected)
 * @retries: resends on timeout
 * @length: on read, header plus MAD bytes
 * @qpn: remote QP
 * @qkey: remote Q_Key
 * @lid: remote LID
 * @sl: service level
 * @path_bits: source path bits
 * @grh_present: whether the fields from @gid_index on are used
 * @gid_index: source GID index
 * @hop_limit: GRH hop limit
 * @traffic_class: GRH traffic class
 * @gid: remote GID
 * @flow_label: GRH flow label
 * @pkey_index: P_Key table index to send with, or that the MAD came in on
 * @reserved: zero
 */
struct ib_user_mad_hdr {
	__u32	id, status, timeout_ms, retries, length;
	__be32	qpn, qkey;
	__be16	lid;
	__u8	sl, path_bits, grh_present, gid_index, hop_limit,
		traffic_class, gid[16];
	__be32	flow_label;
	__u16	pkey_index;
	__u8	reserved[6];
};

/*
 * The 56-byte header of a file that has not enabled P_Key indexes: the
 * same fields as struct ib_user_mad_hdr, up to and with flow_label.
 */
struct ib_user_mad_hdr_old {
	__u32	id, status, timeout_ms, retries, length;
	__be32	qpn, qkey;
	__be16	lid;
	__u8	sl, path_bits, grh_present, gid_index, hop_limit,
		traffic_class, gid[16];
	__be32	flow_label;
};

/**
 * struct ib_user_mad - a header and the MAD after it
 * @hdr: the header (of the file's format)
 * @data: the MAD
 */
struct ib_user_mad {
	struct ib_user_mad_hdr	hdr;
	__aligned_u64		data[];
};

/**
 * struct ib_user_mad_reg_req2 - IB_USER_MAD_REGISTER_AGENT2
 * @id: out: the agent ID
 * @qpn: 0 or 1
 * @mgmt_class: 0 to send only (and receive the answers)
 * @mgmt_class_version: class version
 * @res: zero
 * @flags: IB_USER_MAD_USER_RMPP or nothing; for any other bit the call
 *	fails with -EINVAL and the kernel writes back what it supports
 * @method_mask: methods whose requests the agent takes, 128 bits
 * @oui: for vendor classes 0x30..0x4f, the OUI in the low 24 bits
 * @rmpp_version: 0, or 1 to have the kernel run RMPP for the class
 * @reserved: zero
 */
struct ib_user_mad_reg_req2 {
	__u32		id, qpn;
	__u8		mgmt_class, mgmt_class_version;
	__u16		res;
	__u32		flags;
	__aligned_u64	method_mask[2];
	__u32		oui;
	__u8		rmpp_version, reserved[3];
};

/* REGISTER_AGENT2 flag: the caller runs RMPP itself, segment by segment. */
#define IB_USER_MAD_USER_RMPP		0x1
#define IB_USER_MAD_REG_FLAGS_CAP	IB_USER_MAD_USER_RMPP

/*
 * The method mask of the first registration call is an array of longs
 * packed on 4 bytes, so 32-bit and 64-bit callers differ in its type but
 * not in its bytes.
 */
typedef unsigned long __aligned(4) packed_ulong;
#define IB_USER_MAD_LONGS_PER_METHOD_MASK (128 / (8 * sizeof(long)))

/**
 * struct ib_user_mad_reg_req - IB_USER_MAD_REGISTER_AGENT
 * @id: out: the agent ID (0..31)
 * @method_mask: as in &struct ib_user_mad_reg_req2
 * @qpn: likewise
 * @mgmt_class: likewise
 * @mgmt_class_version: likewise
 * @oui: the OUI as three bytes, most significant first
 * @rmpp_version: likewise
 */
struct ib_user_mad_reg_req {
	__u32		id;
	packed_ulong	method_mask[IB_USER_MAD_LONGS_PER_METHOD_MASK];
	__u8		qpn, mgmt_class, mgmt_class_version, oui[3], rmpp_version;
};

/* ioctl type byte shared by the RDMA user ABIs. */
#define IB_USER_MAD_IOCTL_MAGIC		0x1b

#define IB_USER_MAD_REGISTER_AGENT \
	_IOWR(IB_USER_MAD_IOCTL_MAGIC, 0x01, struct ib_user_mad_reg_req)
#define IB_USER_MAD_UNREGISTER_AGENT \
	_IOW(IB_USER_MAD_IOCTL_MAGIC, 0x02, __u32)
#define IB_USER_MAD_ENABLE_PKEY \
	_IO(IB_USER_MAD_IOCTL_MAGIC, 0x03)
#define IB_USER_MAD_REGISTER_AGENT2 \
	_IOWR(IB_USER_MAD_IOCTL_MAGIC, 0x04, struct ib_user_mad_reg_req2)

#endif /* IB_USER_MAD_H */
