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
	bool grh = attr->ah_flags & IB_AH_GRH;
	u32 path, gid_rate_hop, stf;
	struct mthca_ah *ah;
	struct mthca_av *av;

	if (attr->port_num < 1 || attr->port_num > dev->limits.num_ports)
		return ERR_PTR(-EINVAL);
	if (grh && attr->grh.sgid_index >= dev->limits.gid_table_len)
		return ERR_PTR(-EINVAL);

	ah = kzalloc(sizeof(*ah), GFP_ATOMIC);
	if (!ah)
		return ERR_PTR(-ENOMEM);
	ah->ibah.device = ibpd->device;
	ah->port = attr->port_num;

	/* full port rate: no inter-packet delay; 2 KiB messages */
	path = (attr->src_path_bits & 0x7f) << 16 | attr->dlid;
	gid_rate_hop = MTHCA_AV_MSG_2K << 8;
	stf = attr->sl << 28;
	if (grh) {
		ah->sgid_index = attr->grh.sgid_index;
		path |= MTHCA_AV_GRH;
		/* the GID tables of the ports follow each other */
		gid_rate_hop |= ((attr->port_num - 1) *
				 dev->limits.gid_table_len +
				 attr->grh.sgid_index) << 16 |
				attr->grh.hop_limit;
		stf |= attr->grh.traffic_class << 20 |
			(attr->grh.flow_label & 0xfffff);
	}

	av = (struct mthca_av *)ah->av;
	av->port_pd = cpu_to_be32(attr->port_num << 24 | to_mpd(ibpd)->pdn);
	av->path = cpu_to_be32(path);
	av->gid_rate_hop = cpu_to_be32(gid_rate_hop);
	av->sl_tclass_flow = cpu_to_be32(stf);
	if (grh)
		memcpy(av->dgid, attr->grh.dgid.raw, sizeof(av->dgid));
	else
		/* without a GRH the HCA wants 2 in the DGID's last byte */
		av->dgid[3] = cpu_to_be32(2);
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
	u32 path = be32_to_cpu(av->path);
	u32 stf = be32_to_cpu(av->sl_tclass_flow);

	memset(attr, 0, sizeof(*attr));
	attr->port_num = ah->port;
	attr->dlid = path & 0xffff;
	attr->src_path_bits = (path >> 16) & 0x7f;
	attr->sl = stf >> 28;
	if (!(path & MTHCA_AV_GRH))
		return 0;
	attr->ah_flags = IB_AH_GRH;
	attr->grh.sgid_index = ah->sgid_index;
	attr->grh.hop_limit = be32_to_cpu(av->gid_rate_hop) & 0xff;
	attr->grh.traffic_class = (stf >> 20) & 0xff;
	attr->grh.flow_label = stf & 0xfffff;
	memcpy(attr->grh.dgid.raw, av->dgid, sizeof(av->dgid));
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
 * mthca_dp_ah_has_grh() - whether sends through an AH carry a GRH
 * @ah: the AH
 *
 * Return: true with a GRH.
 */
bool mthca_dp_ah_has_grh(const struct mthca_ah *ah)
{
	const struct mthca_av *av = (const struct mthca_av *)ah->av;

	return be32_to_cpu(av->path) & MTHCA_AV_GRH;
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
	u32 path = be32_to_cpu(av->path);
	u32 stf = be32_to_cpu(av->sl_tclass_flow);

	hdr->lrh.service_level = stf >> 28;
	hdr->lrh.destination_lid = cpu_to_be16(path & 0xffff);
	hdr->lrh.source_lid = cpu_to_be16((path >> 16) & 0x7f);
	if (!(path & MTHCA_AV_GRH))
		return;
	hdr->grh.traffic_class = (stf >> 20) & 0xff;
	hdr->grh.flow_label = cpu_to_be32(stf & 0xfffff);
	hdr->grh.hop_limit = be32_to_cpu(av->gid_rate_hop) & 0xff;
	ib_get_cached_gid(ah->ibah.device, ah->port, ah->sgid_index,
			  &hdr->grh.source_gid);
	memcpy(hdr->grh.destination_gid.raw, av->dgid, sizeof(av->dgid));
}
