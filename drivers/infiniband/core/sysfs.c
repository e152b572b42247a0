// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * /sys/class/infiniband/<device>: what user space (libibverbs, libibumad,
 * infiniband-diags, rdma-ndd) reads about a device and its ports.
 *
 *   node_type node_guid sys_image_guid node_desc (+ the driver's group)
 *   ports/<n>/{state,lid,lid_mask_count,sm_lid,sm_sl,cap_mask,rate,
 *              phys_state,link_layer}
 *   ports/<n>/gids/<i>  ports/<n>/pkeys/<i>
 *   ports/<n>/gid_attrs/{ndevs,types}/<i>
 *   ports/<n>/counters/<name>  (PMA PortCounters through process_mad)
 *
 * File names, value formats and modes are those of the Linux 6.1 core, as
 * user space parses them.
 */

#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/stat.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <asm/unaligned.h>

#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "core_priv.h"

/* PMA attributes (IBA 16.1.3). */
#define IB_PMA_ATTR_CLASS_PORT_INFO	cpu_to_be16(0x0001)
#define IB_PMA_ATTR_PORT_COUNTERS	cpu_to_be16(0x0012)
#define IB_PMA_ATTR_PORT_COUNTERS_EXT	cpu_to_be16(0x001d)
/* PMA ClassPortInfo:CapabilityMask bits (IBA 16.1.2). */
#define IB_PMA_CAP_EXT_WIDTH		cpu_to_be16(1 << 9)
#define IB_PMA_CAP_EXT_WIDTH_NOIETF	cpu_to_be16(1 << 10)
/* Attribute data starts this far into a PMA MAD's data area. */
#define IB_PMA_DATA_OFFSET		40

struct ib_port;

/*
 * An attribute of a port directory, or of one of its sub-directories.
 * @index is the table entry for gids/pkeys/gid_attrs files, and the
 * enum ib_port_field for the default files ib_port_field_show() prints.
 */
struct ib_port_file {
	struct attribute attr;
	ssize_t (*show)(struct ib_port *port, struct ib_port_file *file,
			char *buf);
	int index;
	char name[8];
};

/*
 * A PortCounters (or PortCountersExtended) field: @bit_offset into the
 * attribute data, @width in bits (4, 8, 16, 32 or 64).
 */
struct ib_pma_counter {
	struct ib_port_file	file;
	__be16			attr_id;
	u16			bit_offset;
	u8			width;
};

/* ports/<n>/gid_attrs: a kobject of its own, freed on its last reference. */
struct ib_gid_attrs_dir {
	struct kobject		 kobj;
	struct ib_port		*port;
	struct attribute_group	 groups[2];
	const struct attribute_group *group_list[3];
	struct ib_port_file	*files;
	struct attribute	**attr_ptrs;
};

/*
 * ports/<n>.  Lives in device->port_data[] from registration until the
 * directory is torn down at unregistration; freed on the kobject's last
 * reference.
 */
struct ib_port {
	struct kobject		 kobj;
	struct ib_device	*ibdev;
	u8			 port_num;
	struct ib_gid_attrs_dir	*gid_attrs;
	struct attribute_group	 gids;
	struct attribute_group	 pkeys;
	const struct attribute_group *group_list[4];
	struct ib_port_file	*files;
	struct attribute	**attr_ptrs;
};

/* ---- the port directory: default attributes --------------------------- */

static ssize_t ib_port_state_show(struct ib_port *port,
				  struct ib_port_file *file, char *buf)
{
	static const char * const names[] = {
		[IB_PORT_NOP]		= "NOP",
		[IB_PORT_DOWN]		= "DOWN",
		[IB_PORT_INIT]		= "INIT",
		[IB_PORT_ARMED]		= "ARMED",
		[IB_PORT_ACTIVE]	= "ACTIVE",
		[IB_PORT_ACTIVE_DEFER]	= "ACTIVE_DEFER",
	};
	struct ib_port_attr pa;
	int ret = ib_query_port(port->ibdev, port->port_num, &pa);

	if (ret)
		return ret;
	return sysfs_emit(buf, "%d: %s\n", pa.state,
			  (unsigned int)pa.state < ARRAY_SIZE(names) ?
			  names[pa.state] : "UNKNOWN");
}

/* What ib_port_field_show() prints; the file's @index holds one. */
enum ib_port_field {
	IB_PORT_FIELD_LID,
	IB_PORT_FIELD_LMC,
	IB_PORT_FIELD_SM_LID,
	IB_PORT_FIELD_SM_SL,
	IB_PORT_FIELD_CAP_MASK,
};

/* lid, lid_mask_count, sm_lid, sm_sl, cap_mask: one field of the port's. */
static ssize_t ib_port_field_show(struct ib_port *port,
				  struct ib_port_file *file, char *buf)
{
	struct ib_port_attr pa;
	int ret = ib_query_port(port->ibdev, port->port_num, &pa);

	if (ret)
		return ret;
	switch (file->index) {
	case IB_PORT_FIELD_LID:
		return sysfs_emit(buf, "0x%x\n", pa.lid);
	case IB_PORT_FIELD_LMC:
		return sysfs_emit(buf, "%u\n", pa.lmc);
	case IB_PORT_FIELD_SM_LID:
		return sysfs_emit(buf, "0x%x\n", pa.sm_lid);
	case IB_PORT_FIELD_SM_SL:
		return sysfs_emit(buf, "%u\n", pa.sm_sl);
	default:
		return sysfs_emit(buf, "0x%08x\n", pa.port_cap_flags);
	}
}

/*
 * "<Gb/s> Gb/sec (<width>X <speed>)", e.g. "10 Gb/sec (4X SDR)".  The
 * PortInfo:LinkSpeedActive codes are 1 SDR, 2 DDR, 4 QDR, 8 FDR10, 16 FDR,
 * 32 EDR, 64 HDR, 128 NDR; anything else counts as SDR.
 */
static ssize_t ib_port_rate_show(struct ib_port *port,
				 struct ib_port_file *file, char *buf)
{
	static const struct {
		u8		code;
		u16		lane_tenths;	/* Gb/s per lane, x10 */
		const char	*name;
	} speeds[] = {
		{   2,   50, "DDR" },
		{   4,  100, "QDR" },
		{   8,  100, "FDR10" },
		{  16,  140, "FDR" },
		{  32,  250, "EDR" },
		{  64,  500, "HDR" },
		{ 128, 1000, "NDR" },
	};
	const char *speed = "SDR";
	int lane = 25, lanes, tenths;
	struct ib_port_attr pa;
	size_t i;
	int ret;

	ret = ib_query_port(port->ibdev, port->port_num, &pa);
	if (ret)
		return ret;

	for (i = 0; i < ARRAY_SIZE(speeds); i++)
		if (pa.active_speed == speeds[i].code) {
			lane = speeds[i].lane_tenths;
			speed = speeds[i].name;
		}

	lanes = ib_width_enum_to_int(pa.active_width);
	if (lanes < 0)
		return -EINVAL;
	tenths = lane * lanes;

	return sysfs_emit(buf, "%d%s Gb/sec (%dX %s)\n", tenths / 10,
			  tenths % 10 ? ".5" : "", lanes, speed);
}

static ssize_t ib_port_phys_state_show(struct ib_port *port,
				       struct ib_port_file *file, char *buf)
{
	/* PortInfo:PortPhysicalState, IBA 14.2.5.6 */
	static const char * const names[] = {
		"<unknown>", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
		"Phy Test",
	};
	struct ib_port_attr pa;
	int ret = ib_query_port(port->ibdev, port->port_num, &pa);

	if (ret)
		return ret;
	return sysfs_emit(buf, "%u: %s\n", pa.phys_state,
			  pa.phys_state < ARRAY_SIZE(names) ?
			  names[pa.phys_state] : "<unknown>");
}

static ssize_t ib_port_link_layer_show(struct ib_port *port,
				       struct ib_port_file *file, char *buf)
{
	return sysfs_emit(buf, "InfiniBand\n");
}

#define IB_PORT_RO(_file, _fn)						\
	static struct ib_port_file ib_port_file_##_file = {		\
		.attr = { .name = #_file, .mode = 0444 },		\
		.show = _fn,						\
	}

/* A default port file printing one field, @_which of enum ib_port_field. */
#define IB_PORT_FIELD(_file, _which)					\
	static struct ib_port_file ib_port_file_##_file = {		\
		.attr = { .name = #_file, .mode = 0444 },		\
		.show = ib_port_field_show,				\
		.index = _which,					\
	}

IB_PORT_RO(state, ib_port_state_show);
IB_PORT_FIELD(lid, IB_PORT_FIELD_LID);
IB_PORT_FIELD(lid_mask_count, IB_PORT_FIELD_LMC);
IB_PORT_FIELD(sm_lid, IB_PORT_FIELD_SM_LID);
IB_PORT_FIELD(sm_sl, IB_PORT_FIELD_SM_SL);
IB_PORT_FIELD(cap_mask, IB_PORT_FIELD_CAP_MASK);
IB_PORT_RO(rate, ib_port_rate_show);
IB_PORT_RO(phys_state, ib_port_phys_state_show);
IB_PORT_RO(link_layer, ib_port_link_layer_show);

static struct attribute *ib_port_default_attrs[] = {
	&ib_port_file_state.attr,
	&ib_port_file_lid.attr,
	&ib_port_file_lid_mask_count.attr,
	&ib_port_file_sm_lid.attr,
	&ib_port_file_sm_sl.attr,
	&ib_port_file_cap_mask.attr,
	&ib_port_file_rate.attr,
	&ib_port_file_phys_state.attr,
	&ib_port_file_link_layer.attr,
	NULL
};
ATTRIBUTE_GROUPS(ib_port_default);

/* ---- gids, pkeys, gid_attrs ------------------------------------------- */

static ssize_t ib_port_gid_show(struct ib_port *port,
				struct ib_port_file *file, char *buf)
{
	union ib_gid gid;
	int ret;

	ret = ib_get_cached_gid(port->ibdev, port->port_num, file->index,
				&gid);
	if (ret)
		memset(&gid, 0, sizeof(gid));
	return sysfs_emit(buf, "%pI6\n", gid.raw);
}

static ssize_t ib_port_pkey_show(struct ib_port *port,
				 struct ib_port_file *file, char *buf)
{
	u16 pkey;
	int ret;

	ret = ib_get_cached_pkey(port->ibdev, port->port_num, file->index,
				 &pkey);
	return ret ? ret : sysfs_emit(buf, "0x%04x\n", pkey);
}

/* An all-zero GID marks an unused table entry, which has no attributes. */
static bool ib_port_gid_in_use(struct ib_port *port, int index)
{
	static const union ib_gid zero;
	union ib_gid gid;

	if (ib_get_cached_gid(port->ibdev, port->port_num, index, &gid))
		return false;
	return memcmp(&gid, &zero, sizeof(gid)) != 0;
}

/*
 * gid_attrs/types/<i>: InfiniBand GIDs are all of the one type user space
 * calls "IB/RoCE v1"; unused entries read as EINVAL.
 */
static ssize_t ib_port_gid_type_show(struct ib_port *port,
				     struct ib_port_file *file, char *buf)
{
	if (!ib_port_gid_in_use(port, file->index))
		return -EINVAL;
	return sysfs_emit(buf, "IB/RoCE v1\n");
}

/* gid_attrs/ndevs/<i>: an InfiniBand GID has no net_device behind it. */
static ssize_t ib_port_gid_ndev_show(struct ib_port *port,
				     struct ib_port_file *file, char *buf)
{
	return -EINVAL;
}

/* Fill @count numbered read-only files "0".."count-1" into a group. */
static void ib_port_fill_table(struct attribute_group *group,
			       const char *name, struct ib_port_file *files,
			       struct attribute **ptrs, int count,
			       ssize_t (*show)(struct ib_port *,
					       struct ib_port_file *, char *))
{
	int i;

	for (i = 0; i < count; i++) {
		struct ib_port_file *f = &files[i];

		snprintf(f->name, sizeof(f->name), "%d", i);
		sysfs_attr_init(&f->attr);
		f->attr.name = f->name;
		f->attr.mode = 0444;
		f->show = show;
		f->index = i;
		ptrs[i] = &f->attr;
	}
	ptrs[count] = NULL;
	group->name = name;
	group->attrs = ptrs;
}

/* ---- counters --------------------------------------------------------- */

/*
 * Ask the device's own PMA for one attribute (a Get of the performance
 * management class, as the MAD layer would hand it to process_mad) and
 * copy @len bytes from @offset of the attribute data into @out.
 * Process context; sleeps.
 */
static int ib_port_pma_get(struct ib_port *port, __be16 attr_id,
			   size_t offset, void *out, size_t len)
{
	struct ib_device *dev = port->ibdev;
	struct ib_mad *req, *resp;
	int result, ret = 0;

	if (!dev->process_mad)
		return -EOPNOTSUPP;
	if (IB_PMA_DATA_OFFSET + offset + len > IB_MGMT_MAD_DATA)
		return -EINVAL;

	req = kzalloc(sizeof(*req), GFP_KERNEL);
	resp = kzalloc(sizeof(*resp), GFP_KERNEL);
	if (!req || !resp) {
		ret = -ENOMEM;
		goto out;
	}

	req->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	req->mad_hdr.mgmt_class = IB_MGMT_CLASS_PERF_MGMT;
	req->mad_hdr.class_version = 1;
	req->mad_hdr.method = IB_MGMT_METHOD_GET;
	req->mad_hdr.attr_id = attr_id;
	/* PortSelect is byte 1 of PortCounters(Extended) */
	if (attr_id != IB_PMA_ATTR_CLASS_PORT_INFO)
		req->data[IB_PMA_DATA_OFFSET + 1] = port->port_num;

	result = dev->process_mad(dev, IB_MAD_IGNORE_MKEY, port->port_num,
				  NULL, NULL, req, resp);
	if ((result & (IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY)) !=
	    (IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY)) {
		ret = -EINVAL;
		goto out;
	}
	memcpy(out, resp->data + IB_PMA_DATA_OFFSET + offset, len);
out:
	kfree(req);
	kfree(resp);
	return ret;
}

static ssize_t ib_pma_counter_show(struct ib_port *port,
				   struct ib_port_file *file, char *buf)
{
	struct ib_pma_counter *c = container_of(file, struct ib_pma_counter,
						file);
	u8 raw[8];
	int ret;

	ret = ib_port_pma_get(port, c->attr_id, c->bit_offset / 8, raw,
			      c->width == 4 ? 1 : c->width / 8);
	if (ret)
		return ret;

	switch (c->width) {
	case 4:
		/* the high nibble comes first on the wire */
		return sysfs_emit(buf, "%d\n",
				  c->bit_offset % 8 ? raw[0] & 0xf : raw[0] >> 4);
	case 8:
		return sysfs_emit(buf, "%u\n", raw[0]);
	case 16:
		return sysfs_emit(buf, "%u\n", get_unaligned_be16(raw));
	case 32:
		return sysfs_emit(buf, "%u\n", get_unaligned_be32(raw));
	default:
		return sysfs_emit(buf, "%llu\n", get_unaligned_be64(raw));
	}
}

#define IB_PMA(_var, _name, _attr, _bit, _width)			\
	static struct ib_pma_counter ib_pma_##_var = {			\
		.file = {						\
			.attr = { .name = _name, .mode = 0444 },	\
			.show = ib_pma_counter_show,			\
		},							\
		.attr_id = _attr,					\
		.bit_offset = _bit,					\
		.width = _width,					\
	}
#define IB_PC(_var, _bit, _width)					\
	IB_PMA(_var, #_var, IB_PMA_ATTR_PORT_COUNTERS, _bit, _width)
#define IB_PCX(_var, _file, _bit)					\
	IB_PMA(_var, #_file, IB_PMA_ATTR_PORT_COUNTERS_EXT, _bit, 64)

/* PortCounters fields (IBA 16.1.3.5): bit offset, width */
IB_PC(symbol_error,				 32, 16);
IB_PC(link_error_recovery,			 48,  8);
IB_PC(link_downed,				 56,  8);
IB_PC(port_rcv_errors,				 64, 16);
IB_PC(port_rcv_remote_physical_errors,		 80, 16);
IB_PC(port_rcv_switch_relay_errors,		 96, 16);
IB_PC(port_xmit_discards,			112, 16);
IB_PC(port_xmit_constraint_errors,		128,  8);
IB_PC(port_rcv_constraint_errors,		136,  8);
IB_PC(local_link_integrity_errors,		152,  4);
IB_PC(excessive_buffer_overrun_errors,		156,  4);
IB_PC(VL15_dropped,				176, 16);
IB_PC(port_xmit_data,				192, 32);
IB_PC(port_rcv_data,				224, 32);
IB_PC(port_xmit_packets,			256, 32);
IB_PC(port_rcv_packets,				288, 32);
IB_PC(port_xmit_wait,				320, 32);

/* PortCountersExtended fields (IBA 16.1.4.11): bit offset */
IB_PCX(x_port_xmit_data, port_xmit_data,				 64);
IB_PCX(x_port_rcv_data, port_rcv_data,				128);
IB_PCX(x_port_xmit_packets, port_xmit_packets,			192);
IB_PCX(x_port_rcv_packets, port_rcv_packets,			256);
IB_PCX(x_unicast_xmit_packets, unicast_xmit_packets,			320);
IB_PCX(x_unicast_rcv_packets, unicast_rcv_packets,			384);
IB_PCX(x_multicast_xmit_packets, multicast_xmit_packets,			448);
IB_PCX(x_multicast_rcv_packets, multicast_rcv_packets,			512);

/*
 * Every counters/ directory has the error counters; a PMA without the
 * extended attribute gives 32-bit data and packet counts.
 */
static struct attribute *ib_pma_basic_attrs[] = {
	&ib_pma_symbol_error.file.attr,
	&ib_pma_link_error_recovery.file.attr,
	&ib_pma_link_downed.file.attr,
	&ib_pma_port_rcv_errors.file.attr,
	&ib_pma_port_rcv_remote_physical_errors.file.attr,
	&ib_pma_port_rcv_switch_relay_errors.file.attr,
	&ib_pma_port_xmit_discards.file.attr,
	&ib_pma_port_xmit_constraint_errors.file.attr,
	&ib_pma_port_rcv_constraint_errors.file.attr,
	&ib_pma_local_link_integrity_errors.file.attr,
	&ib_pma_excessive_buffer_overrun_errors.file.attr,
	&ib_pma_VL15_dropped.file.attr,
	&ib_pma_port_xmit_wait.file.attr,
	&ib_pma_port_xmit_data.file.attr,
	&ib_pma_port_rcv_data.file.attr,
	&ib_pma_port_xmit_packets.file.attr,
	&ib_pma_port_rcv_packets.file.attr,
	NULL
};

/* PortCountersExtended without the unicast/multicast counts. */
static struct attribute *ib_pma_ext_noietf_attrs[] = {
	&ib_pma_symbol_error.file.attr,
	&ib_pma_link_error_recovery.file.attr,
	&ib_pma_link_downed.file.attr,
	&ib_pma_port_rcv_errors.file.attr,
	&ib_pma_port_rcv_remote_physical_errors.file.attr,
	&ib_pma_port_rcv_switch_relay_errors.file.attr,
	&ib_pma_port_xmit_discards.file.attr,
	&ib_pma_port_xmit_constraint_errors.file.attr,
	&ib_pma_port_rcv_constraint_errors.file.attr,
	&ib_pma_local_link_integrity_errors.file.attr,
	&ib_pma_excessive_buffer_overrun_errors.file.attr,
	&ib_pma_VL15_dropped.file.attr,
	&ib_pma_port_xmit_wait.file.attr,
	&ib_pma_x_port_xmit_data.file.attr,
	&ib_pma_x_port_rcv_data.file.attr,
	&ib_pma_x_port_xmit_packets.file.attr,
	&ib_pma_x_port_rcv_packets.file.attr,
	NULL
};

/* The full PortCountersExtended. */
static struct attribute *ib_pma_ext_attrs[] = {
	&ib_pma_symbol_error.file.attr,
	&ib_pma_link_error_recovery.file.attr,
	&ib_pma_link_downed.file.attr,
	&ib_pma_port_rcv_errors.file.attr,
	&ib_pma_port_rcv_remote_physical_errors.file.attr,
	&ib_pma_port_rcv_switch_relay_errors.file.attr,
	&ib_pma_port_xmit_discards.file.attr,
	&ib_pma_port_xmit_constraint_errors.file.attr,
	&ib_pma_port_rcv_constraint_errors.file.attr,
	&ib_pma_local_link_integrity_errors.file.attr,
	&ib_pma_excessive_buffer_overrun_errors.file.attr,
	&ib_pma_VL15_dropped.file.attr,
	&ib_pma_port_xmit_wait.file.attr,
	&ib_pma_x_port_xmit_data.file.attr,
	&ib_pma_x_port_rcv_data.file.attr,
	&ib_pma_x_port_xmit_packets.file.attr,
	&ib_pma_x_port_rcv_packets.file.attr,
	&ib_pma_x_unicast_xmit_packets.file.attr,
	&ib_pma_x_unicast_rcv_packets.file.attr,
	&ib_pma_x_multicast_xmit_packets.file.attr,
	&ib_pma_x_multicast_rcv_packets.file.attr,
	NULL
};

static const struct attribute_group ib_pma_basic_group = {
	.name = "counters",
	.attrs = ib_pma_basic_attrs,
};

static const struct attribute_group ib_pma_ext_noietf_group = {
	.name = "counters",
	.attrs = ib_pma_ext_noietf_attrs,
};

static const struct attribute_group ib_pma_ext_group = {
	.name = "counters",
	.attrs = ib_pma_ext_attrs,
};

/* Which counters the port's PMA offers, from its ClassPortInfo. */
static const struct attribute_group *ib_port_counter_group(struct ib_port *port)
{
	struct ib_class_port_info cpi;

	if (ib_port_pma_get(port, IB_PMA_ATTR_CLASS_PORT_INFO, 0, &cpi,
			    sizeof(cpi)))
		return &ib_pma_basic_group;
	if (cpi.capability_mask & IB_PMA_CAP_EXT_WIDTH)
		return &ib_pma_ext_group;
	if (cpi.capability_mask & IB_PMA_CAP_EXT_WIDTH_NOIETF)
		return &ib_pma_ext_noietf_group;
	return &ib_pma_basic_group;
}

/* ---- kobject plumbing ------------------------------------------------- */

static ssize_t ib_port_file_show(struct ib_port *port, struct attribute *attr,
				 char *buf)
{
	struct ib_port_file *file = container_of(attr, struct ib_port_file,
						 attr);

	if (!file->show)
		return -EIO;
	return file->show(port, file, buf);
}

static ssize_t ib_port_kobj_show(struct kobject *kobj, struct attribute *attr,
				 char *buf)
{
	return ib_port_file_show(container_of(kobj, struct ib_port, kobj),
				 attr, buf);
}

static ssize_t ib_gid_attrs_kobj_show(struct kobject *kobj,
				      struct attribute *attr, char *buf)
{
	struct ib_gid_attrs_dir *dir = container_of(kobj,
						    struct ib_gid_attrs_dir,
						    kobj);

	return ib_port_file_show(dir->port, attr, buf);
}

static const struct sysfs_ops ib_port_sysfs_ops = {
	.show = ib_port_kobj_show,
};

static const struct sysfs_ops ib_gid_attrs_sysfs_ops = {
	.show = ib_gid_attrs_kobj_show,
};

static void ib_port_release(struct kobject *kobj)
{
	struct ib_port *port = container_of(kobj, struct ib_port, kobj);

	kfree(port->files);
	kfree(port->attr_ptrs);
	kfree(port);
}

static void ib_gid_attrs_release(struct kobject *kobj)
{
	struct ib_gid_attrs_dir *dir = container_of(kobj,
						    struct ib_gid_attrs_dir,
						    kobj);

	kfree(dir->files);
	kfree(dir->attr_ptrs);
	kfree(dir);
}

static struct kobj_type ib_port_ktype = {
	.release = ib_port_release,
	.sysfs_ops = &ib_port_sysfs_ops,
	.default_groups = ib_port_default_groups,
};

static struct kobj_type ib_gid_attrs_ktype = {
	.release = ib_gid_attrs_release,
	.sysfs_ops = &ib_gid_attrs_sysfs_ops,
};

/* ports/<n>/gid_attrs with ndevs/ and types/, one file per GID entry. */
static int ib_port_add_gid_attrs(struct ib_port *port, int gid_count)
{
	struct ib_gid_attrs_dir *dir;
	int ret;

	dir = kzalloc(sizeof(*dir), GFP_KERNEL);
	if (!dir)
		return -ENOMEM;
	kobject_init(&dir->kobj, &ib_gid_attrs_ktype);
	dir->port = port;

	dir->files = kcalloc(2 * gid_count, sizeof(*dir->files), GFP_KERNEL);
	dir->attr_ptrs = kcalloc(2 * (gid_count + 1), sizeof(*dir->attr_ptrs),
				 GFP_KERNEL);
	if (!dir->files || !dir->attr_ptrs) {
		ret = -ENOMEM;
		goto err_put;
	}

	ib_port_fill_table(&dir->groups[0], "ndevs", dir->files,
			   dir->attr_ptrs, gid_count, ib_port_gid_ndev_show);
	ib_port_fill_table(&dir->groups[1], "types", dir->files + gid_count,
			   dir->attr_ptrs + gid_count + 1, gid_count,
			   ib_port_gid_type_show);
	dir->group_list[0] = &dir->groups[0];
	dir->group_list[1] = &dir->groups[1];

	ret = kobject_add(&dir->kobj, &port->kobj, "gid_attrs");
	if (ret)
		goto err_put;
	ret = sysfs_create_groups(&dir->kobj, dir->group_list);
	if (ret)
		goto err_del;

	port->gid_attrs = dir;
	return 0;

err_del:
	kobject_del(&dir->kobj);
err_put:
	kobject_put(&dir->kobj);
	return ret;
}

static void ib_port_remove(struct ib_port *port)
{
	if (port->gid_attrs) {
		sysfs_remove_groups(&port->gid_attrs->kobj,
				    port->gid_attrs->group_list);
		kobject_del(&port->gid_attrs->kobj);
		kobject_put(&port->gid_attrs->kobj);
	}
	sysfs_remove_groups(&port->kobj, port->group_list);
	kobject_del(&port->kobj);
	kobject_put(&port->kobj);
}

static struct ib_port *ib_port_add(struct ib_device *device, u8 port_num)
{
	struct ib_port_attr pa;
	struct ib_port *port;
	int n_gid, n_pkey, g = 0;
	int ret;

	ret = ib_query_port(device, port_num, &pa);
	if (ret)
		return ERR_PTR(ret);
	n_gid = max(pa.gid_tbl_len, 0);
	n_pkey = pa.pkey_tbl_len;

	port = kzalloc(sizeof(*port), GFP_KERNEL);
	if (!port)
		return ERR_PTR(-ENOMEM);
	kobject_init(&port->kobj, &ib_port_ktype);
	port->ibdev = device;
	port->port_num = port_num;

	port->files = kcalloc(n_gid + n_pkey, sizeof(*port->files),
			      GFP_KERNEL);
	port->attr_ptrs = kcalloc(n_gid + n_pkey + 2,
				  sizeof(*port->attr_ptrs), GFP_KERNEL);
	if ((n_gid + n_pkey && !port->files) || !port->attr_ptrs) {
		ret = -ENOMEM;
		goto err_put;
	}

	ib_port_fill_table(&port->gids, "gids", port->files, port->attr_ptrs,
			   n_gid, ib_port_gid_show);
	port->group_list[g++] = &port->gids;
	if (n_pkey) {
		ib_port_fill_table(&port->pkeys, "pkeys", port->files + n_gid,
				   port->attr_ptrs + n_gid + 1, n_pkey,
				   ib_port_pkey_show);
		port->group_list[g++] = &port->pkeys;
	}
	if (device->process_mad)
		port->group_list[g++] = ib_port_counter_group(port);

	ret = kobject_add(&port->kobj, device->ports_kobj, "%u", port_num);
	if (ret)
		goto err_put;
	ret = sysfs_create_groups(&port->kobj, port->group_list);
	if (ret)
		goto err_del;

	ret = ib_port_add_gid_attrs(port, n_gid);
	if (ret)
		goto err_groups;
	return port;

err_groups:
	sysfs_remove_groups(&port->kobj, port->group_list);
err_del:
	kobject_del(&port->kobj);
err_put:
	kobject_put(&port->kobj);
	return ERR_PTR(ret);
}

/* ---- the device directory --------------------------------------------- */

static struct ib_device *ib_dev_of(struct device *dev)
{
	return container_of(dev, struct ib_device, dev);
}

static ssize_t ib_print_guid(char *buf, __be64 guid)
{
	u64 v = be64_to_cpu(guid);

	return sysfs_emit(buf, "%04x:%04x:%04x:%04x\n",
			  (unsigned int)(v >> 48) & 0xffff,
			  (unsigned int)(v >> 32) & 0xffff,
			  (unsigned int)(v >> 16) & 0xffff,
			  (unsigned int)v & 0xffff);
}

static ssize_t node_type_show(struct device *dev, struct device_attribute *da,
			      char *buf)
{
	struct ib_device *ibdev = ib_dev_of(dev);
	const char *what;

	switch (ibdev->node_type) {
	case IB_NODE_CA:
		what = "CA";
		break;
	case IB_NODE_SWITCH:
		what = "switch";
		break;
	case IB_NODE_ROUTER:
		what = "router";
		break;
	default:
		what = "<unknown>";
		break;
	}
	return sysfs_emit(buf, "%u: %s\n", ibdev->node_type, what);
}
static DEVICE_ATTR_RO(node_type);

static ssize_t node_guid_show(struct device *dev, struct device_attribute *da,
			      char *buf)
{
	return ib_print_guid(buf, ib_dev_of(dev)->node_guid);
}
static DEVICE_ATTR_RO(node_guid);

static ssize_t sys_image_guid_show(struct device *dev,
				   struct device_attribute *da, char *buf)
{
	struct ib_device_attr *attr;
	ssize_t ret;

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	ret = ib_query_device(ib_dev_of(dev), attr);
	if (!ret)
		ret = ib_print_guid(buf, attr->sys_image_guid);
	kfree(attr);
	return ret;
}
static DEVICE_ATTR_RO(sys_image_guid);

static ssize_t node_desc_show(struct device *dev, struct device_attribute *da,
			      char *buf)
{
	return sysfs_emit(buf, "%.64s\n", ib_dev_of(dev)->node_desc);
}

/*
 * The written bytes (at most 64, a trailing newline included, as the
 * upstream core does) become the NodeDescription through the driver.
 */
static ssize_t node_desc_store(struct device *dev, struct device_attribute *da,
			       const char *buf, size_t count)
{
	struct ib_device *ibdev = ib_dev_of(dev);
	struct ib_device_modify mod = {};
	int ret;

	if (!ibdev->modify_device)
		return -EOPNOTSUPP;

	memcpy(mod.node_desc, buf, min(count, sizeof(mod.node_desc)));
	ret = ib_modify_device(ibdev, IB_DEVICE_MODIFY_NODE_DESC, &mod);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(node_desc);

static struct attribute *ib_core_dev_attrs[] = {
	&dev_attr_node_type.attr,
	&dev_attr_node_guid.attr,
	&dev_attr_sys_image_guid.attr,
	&dev_attr_node_desc.attr,
	NULL
};

static const struct attribute_group ib_core_dev_group = {
	.attrs = ib_core_dev_attrs,
};

static int ib_device_uevent(struct device *dev, struct kobj_uevent_env *env)
{
	return add_uevent_var(env, "NAME=%s", dev_name(dev));
}

/* The class of /sys/class/infiniband; see core_priv.h. */
struct class ib_class = {
	.name		= "infiniband",
	.dev_release	= ib_device_release,
	.dev_uevent	= ib_device_uevent,
};

static void ib_remove_ports(struct ib_device *device)
{
	u8 p;

	if (device->port_data)
		for (p = 0; p <= rdma_end_port(device); p++)
			if (device->port_data[p])
				ib_port_remove(device->port_data[p]);
	kfree(device->port_data);
	device->port_data = NULL;
	kobject_put(device->ports_kobj);
	device->ports_kobj = NULL;
}

/**
 * ib_device_register_sysfs() - create /sys/class/infiniband/<name>
 * @device: a device being registered, its name set
 *
 * The directory hangs under the device's dma_device (so its `device` link
 * leads to the PCI function).  The add uevent is held back until the
 * ports/ tree is complete.  Process context; sleeps.
 *
 * Return: 0, or a negative errno with nothing left behind.
 */
int ib_device_register_sysfs(struct ib_device *device)
{
	u8 p;
	int ret;

	device->dev.parent = device->dma_device;
	device->sysfs_groups[0] = &ib_core_dev_group;
	device->sysfs_groups[1] = device->driver_attr_group;
	device->sysfs_groups[2] = NULL;
	device->dev.groups = device->sysfs_groups;

	dev_set_uevent_suppress(&device->dev, true);
	ret = device_add(&device->dev);
	if (ret)
		goto err_uevent;

	device->port_data = kcalloc(rdma_end_port(device) + 1,
				    sizeof(*device->port_data), GFP_KERNEL);
	device->ports_kobj = kobject_create_and_add("ports",
						    &device->dev.kobj);
	if (!device->port_data || !device->ports_kobj) {
		ret = -ENOMEM;
		goto err_ports;
	}

	for (p = rdma_start_port(device); p <= rdma_end_port(device); p++) {
		struct ib_port *port = ib_port_add(device, p);

		if (IS_ERR(port)) {
			ret = PTR_ERR(port);
			goto err_ports;
		}
		device->port_data[p] = port;
	}

	dev_set_uevent_suppress(&device->dev, false);
	kobject_uevent(&device->dev.kobj, KOBJ_ADD);
	return 0;

err_ports:
	ib_remove_ports(device);
	device_del(&device->dev);
err_uevent:
	dev_set_uevent_suppress(&device->dev, false);
	return ret;
}

/**
 * ib_device_unregister_sysfs() - remove /sys/class/infiniband/<name>
 * @device: a device being unregistered
 *
 * Returns once no reader is inside one of its files.  Process context;
 * sleeps.
 */
void ib_device_unregister_sysfs(struct ib_device *device)
{
	ib_remove_ports(device);
	device_del(&device->dev);
}

int ib_sysfs_init(void)
{
	return class_register(&ib_class);
}

void ib_sysfs_exit(void)
{
	class_unregister(&ib_class);
}
