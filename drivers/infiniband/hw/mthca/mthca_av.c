// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mthca: address handles.
 *
 * On a mem-free HCA the 32-byte address vector (struct mthca_av) of a UD
 * send travels inside the WQE, so an AH is the vector in kernel memory,
 * built once at creation and copied by post_send.  Creating and
 * destroying an AH never sleeps: the MAD layer does both in its
 * completion paths.
 */
#include <linux/slab.h>

#include <rdma/ib_pack.h>
#include <rdma/ib_cache.h>

#include "mthca_dev.h"
#include "mthca_wqe.h"

/* Max message size code of the AV: 2 KiB. */
#define MTHCA_AV_MSG_2K		(3 << 4)

/**
 * mthca_dp_create_ah() - create an address handle
 * @ibpd: the protection domain
 * @attr: the address
 *
 * May be called in any context.
 *
 * Return: the AH, or an ERR_PTR (-EINVAL for a bad port or GID index).
 */
struct ib_ah *mthca_dp_create_ah(struct ib_pd *ibpd, struct ib_ah_attr *attr)
{
	struct mthca_dev *dev = to_mdev(ibpd->device);
	struct mthca_ah *ah;
	struct mthca_av *av;

	if (attr->port_num < 1 || attr->port_num > dev->limits.num_ports)
		return ERR_PTR(-EINVAL);
	if ((attr->ah_flags & IB_AH_GRH) &&
	    attr->grh.sgid_index >= dev->limits.gid_table_len)
		return ERR_PTR(-EINVAL);

	ah = kzalloc(sizeof(*ah), GFP_ATOMIC);
	if (!ah)
		return ERR_PTR(-ENOMEM);
	ah->ibah.device = ibpd->device;
	ah->port = attr->port_num;
	av = (struct mthca_av *)ah->av;
	av->port_pd = cpu_to_be32(attr->port_num << 24 |
				  to_mpd(ibpd)->pdn);
	av->g_slid = attr->src_path_bits & 0x7f;
	av->dlid = cpu_to_be16(attr->dlid);
	/* full port rate: the HCA applies no inter-packet delay */
	av->msg_sr = MTHCA_AV_MSG_2K;
	av->sl_tclass_flowlabel = cpu_to_be32(attr->sl << 28);
	if (attr->ah_flags & IB_AH_GRH) {
		av->g_slid |= 0x80;
		ah->sgid_index = attr->grh.sgid_index;
		/* the GID tables of the ports follow each other */
		av->gid_index = (attr->port_num - 1) *
			dev->limits.gid_table_len + attr->grh.sgid_index;
		av->hop_limit = attr->grh.hop_limit;
		av->sl_tclass_flowlabel |=
			cpu_to_be32(attr->grh.traffic_class << 20 |
				    (attr->grh.flow_label & 0xfffff));
		memcpy(av->dgid, attr->grh.dgid.raw, 16);
	} else {
		/* the HCA wants 2 in the low byte of an unused DGID */
		av->dgid[3] = cpu_to_be32(2);
	}
	return &ah->ibah;
}

/**
 * mthca_dp_query_ah() - read an address handle's attributes
 * @ibah: the AH
 * @attr: where they go
 *
 * Return: 0.
 */
int mthca_dp_query_ah(struct ib_ah *ibah, struct ib_ah_attr *attr)
{
	struct mthca_ah *ah = to_mah(ibah);
	const struct mthca_av *av = (const struct mthca_av *)ah->av;
	u32 stf = be32_to_cpu(av->sl_tclass_flowlabel);

	memset(attr, 0, sizeof(*attr));
	attr->port_num = ah->port;
	attr->dlid = be16_to_cpu(av->dlid);
	attr->sl = stf >> 28;
	attr->src_path_bits = av->g_slid & 0x7f;
	if (av->g_slid & 0x80) {
		attr->ah_flags = IB_AH_GRH;
		attr->grh.sgid_index = ah->sgid_index;
		attr->grh.hop_limit = av->hop_limit;
		attr->grh.traffic_class = (stf >> 20) & 0xff;
		attr->grh.flow_label = stf & 0xfffff;
		memcpy(attr->grh.dgid.raw, av->dgid, 16);
	}
	return 0;
}

/**
 * mthca_dp_destroy_ah() - destroy an address handle
 * @ibah: the AH
 *
 * May be called in any context.
 *
 * Return: 0.
 */
int mthca_dp_destroy_ah(struct ib_ah *ibah)
{
	kfree(to_mah(ibah));
	return 0;
}

/**
 * mthca_dp_ah_to_header() - copy an AH's addressing into a UD header
 * @ah: the AH
 * @hdr: a header set up by ib_ud_header_init()
 *
 * Fills the LRH SL, DLID and source path bits (the HCA adds the port's
 * LID) and, with a GRH, its routing fields.
 */
void mthca_dp_ah_to_header(struct mthca_ah *ah, struct ib_ud_header *hdr)
{
	const struct mthca_av *av = (const struct mthca_av *)ah->av;
	u32 stf = be32_to_cpu(av->sl_tclass_flowlabel);

	hdr->lrh.service_level = stf >> 28;
	hdr->lrh.destination_lid = av->dlid;
	hdr->lrh.source_lid = cpu_to_be16(av->g_slid & 0x7f);
	if (av->g_slid & 0x80) {
		hdr->grh.traffic_class = (stf >> 20) & 0xff;
		hdr->grh.flow_label = cpu_to_be32(stf & 0xfffff);
		hdr->grh.hop_limit = av->hop_limit;
		ib_get_cached_gid(ah->ibah.device, ah->port, ah->sgid_index,
				  &hdr->grh.source_gid);
		memcpy(hdr->grh.destination_gid.raw, av->dgid, 16);
	}
}

/**
 * mthca_init_av_table() - set up address vector state
 * @dev: the device
 *
 * Return: 0; mem-free AVs need no device-wide state.
 */
int mthca_init_av_table(struct mthca_dev *dev)
{
	return 0;
}

/**
 * mthca_cleanup_av_table() - release address vector state
 * @dev: the device
 */
void mthca_cleanup_av_table(struct mthca_dev *dev)
{
}
