// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite for /sys/class/infiniband (sysfs.c): a test device
 * (ktest_dev.h) is registered and its files are read and written through a
 * kernel mount of sysfs, as user space would, checking names, modes and
 * the value formats rdma-core and infiniband-diags parse.  A fake PMA in
 * the test device's process_mad answers the counters.
 */

#include <kunit/test.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mount.h>

#include <rdma/ib_mad.h>

#include "core_priv.h"
#include "ktest_dev.h"

static struct vfsmount *st_mnt;

/* What the fake PMA reports in ClassPortInfo:CapabilityMask. */
static __be16 st_pma_caps;
static u8 st_last_port_select;

static int st_process_mad(struct ib_device *ibdev, int flags, u8 port,
			  struct ib_wc *in_wc, struct ib_grh *in_grh,
			  struct ib_mad *in, struct ib_mad *out)
{
	u8 *d = out->data + 40;		/* the attribute data */

	if (in->mad_hdr.mgmt_class != IB_MGMT_CLASS_PERF_MGMT ||
	    in->mad_hdr.method != IB_MGMT_METHOD_GET)
		return IB_MAD_RESULT_SUCCESS;

	memset(out, 0, sizeof(*out));
	out->mad_hdr = in->mad_hdr;
	out->mad_hdr.method = 0x81;	/* GetResp */

	switch (be16_to_cpu(in->mad_hdr.attr_id)) {
	case 0x0001:	/* ClassPortInfo */
		d[0] = 1;
		d[1] = 1;
		memcpy(d + 2, &st_pma_caps, 2);
		break;
	case 0x0012:	/* PortCounters */
		st_last_port_select = in->data[41];
		d[1] = in->data[41];
		d[4] = 0x12;	/* SymbolErrorCounter 0x1234 */
		d[5] = 0x34;
		d[6] = 0xab;	/* LinkErrorRecoveryCounter */
		d[19] = 0x96;	/* LocalLinkIntegrity 9, ExcessiveBufferOverrun 6 */
		d[24] = 0xde;	/* PortXmitData */
		d[25] = 0xad;
		d[26] = 0xbe;
		d[27] = 0xef;
		d[43] = 7;	/* PortXmitWait */
		break;
	case 0x001d:	/* PortCountersExtended */
		d[1] = in->data[41];
		d[8] = 1;	/* PortXmitData: 0x0100000000000002 */
		d[15] = 2;
		d[47] = 9;	/* PortUnicastXmitPkts */
		break;
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

static int st_suite_init(struct kunit_suite *suite)
{
	struct file_system_type *type = get_fs_type("sysfs");

	if (!type)
		return -ENODEV;
	st_mnt = kern_mount(type);
	return IS_ERR(st_mnt) ? PTR_ERR(st_mnt) : 0;
}

static void st_suite_exit(struct kunit_suite *suite)
{
	if (!IS_ERR_OR_NULL(st_mnt))
		kern_unmount(st_mnt);
}

static struct file *st_open(struct ktest_dev *kd, const char *rel, int flags)
{
	char path[128];

	snprintf(path, sizeof(path), "class/infiniband/%s/%s", kd->ibdev.name,
		 rel);
	return file_open_root_mnt(st_mnt, path, flags, 0);
}

/* The file's contents, or "E<errno>" when it cannot be opened or read. */
static const char *st_read(struct kunit *test, struct ktest_dev *kd,
			   const char *rel)
{
	char *buf = kunit_kzalloc(test, PAGE_SIZE + 1, GFP_KERNEL);
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	f = st_open(kd, rel, O_RDONLY);
	if (IS_ERR(f)) {
		snprintf(buf, PAGE_SIZE, "E%ld", PTR_ERR(f));
		return buf;
	}
	n = kernel_read(f, buf, PAGE_SIZE, &pos);
	fput(f);
	if (n < 0)
		snprintf(buf, PAGE_SIZE, "E%zd", n);
	return buf;
}

static umode_t st_mode(struct ktest_dev *kd, const char *rel)
{
	struct file *f = st_open(kd, rel, O_PATH);
	umode_t mode;

	if (IS_ERR(f))
		return 0;
	mode = file_inode(f)->i_mode & 0777;
	fput(f);
	return mode;
}

static struct ktest_dev *st_register(struct kunit *test, bool with_pma)
{
	struct ktest_dev *kd = ktest_dev_alloc(test, "stest%d");

	memcpy(kd->ibdev.node_desc, "test node", 10);
	if (with_pma)
		kd->ibdev.process_mad = st_process_mad;
	KUNIT_ASSERT_EQ(test, ib_register_device(&kd->ibdev), 0);
	return kd;
}

static void st_put(struct ktest_dev *kd)
{
	ib_unregister_device(&kd->ibdev);
	ib_dealloc_device(&kd->ibdev);
}

/* A file and what reading it gives ("E<errno>" when it cannot be opened). */
struct st_file_case {
	const char *path;
	const char *want;
};

static void st_expect_files(struct kunit *test, struct ktest_dev *kd,
			    const struct st_file_case *cases, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		KUNIT_EXPECT_STREQ_MSG(test, st_read(test, kd, cases[i].path),
				       cases[i].want, "%s", cases[i].path);
}

static void st_device_files(struct kunit *test)
{
	struct ktest_dev *kd = st_register(test, false);
	struct file *f;
	loff_t pos = 0;

	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_type"), "1: CA\n");
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_guid"),
			   "0002:c903:0000:1234\n");
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "sys_image_guid"),
			   "0002:c903:0000:1234\n");
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_desc"),
			   "test node\n");
	KUNIT_EXPECT_EQ(test, st_mode(kd, "node_type"), 0444);
	KUNIT_EXPECT_EQ(test, st_mode(kd, "node_guid"), 0444);
	KUNIT_EXPECT_EQ(test, st_mode(kd, "node_desc"), 0644);

	/* a write becomes the node description through modify_device */
	f = st_open(kd, "node_desc", O_WRONLY);
	KUNIT_ASSERT_FALSE(test, IS_ERR(f));
	KUNIT_EXPECT_EQ(test, kernel_write(f, "renamed", 7, &pos), 7);
	fput(f);
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_desc"), "renamed\n");

	/* without modify_device the write is refused */
	kd->ibdev.modify_device = NULL;
	pos = 0;
	f = st_open(kd, "node_desc", O_WRONLY);
	KUNIT_ASSERT_FALSE(test, IS_ERR(f));
	KUNIT_EXPECT_EQ(test, kernel_write(f, "x", 1, &pos),
			(ssize_t)-EOPNOTSUPP);
	fput(f);

	st_put(kd);
}

static void st_port_files(struct kunit *test)
{
	static const struct st_file_case cases[] = {
		{ "ports/1/state", "4: ACTIVE\n" },
		{ "ports/1/phys_state", "5: LinkUp\n" },
		{ "ports/1/rate", "10 Gb/sec (4X SDR)\n" },
		{ "ports/2/lid", "0x12\n" },
		{ "ports/1/sm_lid", "0x1\n" },
		{ "ports/1/sm_sl", "3\n" },
		{ "ports/1/lid_mask_count", "0\n" },
		{ "ports/1/cap_mask", "0x02510a68\n" },
		{ "ports/1/link_layer", "InfiniBand\n" },
		{ "ports/2/gids/3", "fe80:0000:0000:0000:0000:0000:0002:0003\n" },
		{ "ports/2/pkeys/0", "0xffff\n" },
		{ "ports/2/pkeys/1", "0x8201\n" },
		{ "ports/1/gids/4", "E-2" },
		{ "ports/3/state", "E-2" },
		{ "ports/1/gid_attrs/types/0", "IB/RoCE v1\n" },
		{ "ports/1/gid_attrs/ndevs/0", "E-22" },
	};
	struct ktest_dev *kd = st_register(test, false);
	struct ib_event ev = {
		.event = IB_EVENT_GID_CHANGE,
		.element.port_num = 1,
	};

	st_expect_files(test, kd, cases, ARRAY_SIZE(cases));
	KUNIT_EXPECT_EQ(test, st_mode(kd, "ports/1/state"), 0444);

	/* an all-zero GID is an empty entry: no type, and shown as zeros */
	memset(&kd->gids[0][2], 0, sizeof(kd->gids[0][2]));
	ev.device = &kd->ibdev;
	ib_dispatch_event(&ev);
	ib_cache_flush();
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "ports/1/gids/2"),
			   "0000:0000:0000:0000:0000:0000:0000:0000\n");
	KUNIT_EXPECT_STREQ(test, st_read(test, kd,
					 "ports/1/gid_attrs/types/2"),
			   "E-22");

	/* no process_mad, no counters */
	KUNIT_EXPECT_STREQ(test, st_read(test, kd,
					 "ports/1/counters/symbol_error"),
			   "E-2");
	st_put(kd);
}

static void st_counters_basic(struct kunit *test)
{
	static const struct st_file_case cases[] = {
		{ "ports/1/counters/local_link_integrity_errors", "9\n" },
		{ "ports/1/counters/excessive_buffer_overrun_errors", "6\n" },
		{ "ports/1/counters/port_xmit_data", "3735928559\n" },
		{ "ports/1/counters/port_xmit_wait", "7\n" },
		{ "ports/1/counters/VL15_dropped", "0\n" },
		/* the extended-only counters are not there */
		{ "ports/1/counters/unicast_xmit_packets", "E-2" },
	};
	struct ktest_dev *kd;

	st_pma_caps = 0;
	kd = st_register(test, true);

	KUNIT_EXPECT_STREQ(test, st_read(test, kd,
					 "ports/2/counters/symbol_error"),
			   "4660\n");
	KUNIT_EXPECT_EQ(test, st_last_port_select, 2);
	KUNIT_EXPECT_STREQ(test, st_read(test, kd,
					 "ports/1/counters/link_error_recovery"),
			   "171\n");
	KUNIT_EXPECT_EQ(test, st_last_port_select, 1);
	st_expect_files(test, kd, cases, ARRAY_SIZE(cases));
	KUNIT_EXPECT_EQ(test, st_mode(kd, "ports/1/counters/symbol_error"),
			0444);
	st_put(kd);
}

static void st_counters_extended(struct kunit *test)
{
	static const struct st_file_case full[] = {
		{ "ports/1/counters/port_xmit_data", "72057594037927938\n" },
		{ "ports/1/counters/unicast_xmit_packets", "9\n" },
		{ "ports/1/counters/symbol_error", "4660\n" },
	};
	/* without the IETF counters: 64-bit data, no unicast/multicast */
	static const struct st_file_case noietf[] = {
		{ "ports/1/counters/port_xmit_data", "72057594037927938\n" },
		{ "ports/1/counters/unicast_xmit_packets", "E-2" },
	};
	struct ktest_dev *kd;

	st_pma_caps = cpu_to_be16(1 << 9);
	kd = st_register(test, true);
	st_expect_files(test, kd, full, ARRAY_SIZE(full));
	st_put(kd);

	st_pma_caps = cpu_to_be16(1 << 10);
	kd = st_register(test, true);
	st_expect_files(test, kd, noietf, ARRAY_SIZE(noietf));
	st_put(kd);
	st_pma_caps = 0;
}

/* The directory goes with the device, and its name can be reused. */
static void st_teardown(struct kunit *test)
{
	struct ktest_dev *kd = st_register(test, false);
	char name[IB_DEVICE_NAME_MAX];
	struct file *f;

	strscpy(name, kd->ibdev.name, sizeof(name));
	ib_unregister_device(&kd->ibdev);
	f = file_open_root_mnt(st_mnt, "class/infiniband", O_RDONLY, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(f));
	fput(f);
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_type"), "E-2");
	ib_dealloc_device(&kd->ibdev);

	kd = st_register(test, false);
	KUNIT_EXPECT_STREQ(test, kd->ibdev.name, name);
	KUNIT_EXPECT_STREQ(test, st_read(test, kd, "node_type"), "1: CA\n");
	st_put(kd);
}

static struct kunit_case st_cases[] = {
	KUNIT_CASE(st_device_files),
	KUNIT_CASE(st_port_files),
	KUNIT_CASE(st_counters_basic),
	KUNIT_CASE(st_counters_extended),
	KUNIT_CASE(st_teardown),
	{}
};

static struct kunit_suite st_suite = {
	.name = "ib_sysfs",
	.suite_init = st_suite_init,
	.suite_exit = st_suite_exit,
	.test_cases = st_cases,
};

kunit_test_suite(st_suite);
