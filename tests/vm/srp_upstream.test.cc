// SPDX-License-Identifier: GPL-2.0
// SCSI RDMA Protocol across the emulated fabric with the upstream Debian
// stack: vm0 exports a brd ramdisk through LIO's ib_srpt (configured with
// targetcli), vm1 finds it with srp_daemon, logs in with ib_srp and runs
// fio with data verification on the new SCSI disk. Two guests back to back,
// OpenSM in vm0.
#include <regex>
#include <sstream>
#include <string>

#include "vm_fixture.h"

namespace iblab::vmtest {
namespace {

const char *const kPort = "/sys/class/infiniband/mthca0/ports/1";
// brd rd_size is in KiB: 64 MiB, i.e. 131072 sectors of 512 bytes.
const unsigned kRamdiskKiB = 65536;
// targetcli wants a system D-Bus (it asks tcmu-runner for user backstores);
// the guests have none, so a private bus stands in for it.
const char *const kTargetcli = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/srp-dbus.sock targetcli ";

std::string Trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
		s.pop_back();
	return s;
}

class Srp : public PairSuite {
protected:
	static void SetUpTestSuite()
	{
		StartLab(PairOptions(), "Srp");
		if (!lab_)
			return;
		setup_error_ = BringUpPair();
		if (setup_error_.empty())
			setup_error_ = Prepare();
	}
	static void TearDownTestSuite() { StopLab(); }

	// ib_srpt + ramdisk + configfs in vm0, ib_srp and sd_mod (no udev to
	// load it) in vm1; "" when all went well.
	static std::string Prepare()
	{
		auto t = guest("vm0").exec("modprobe ib_srpt && modprobe brd rd_nr=1 rd_size=" +
						   std::to_string(kRamdiskKiB) +
						   " && { mountpoint -q /sys/kernel/config || "
						   "mount -t configfs none /sys/kernel/config; } && "
						   "mkdir -p /etc/target && "
						   "dbus-daemon --session --fork --address=unix:path=/run/srp-dbus.sock",
					   120s);
		if (!t.ok())
			return "vm0: target side setup failed: " + t.output;
		auto i = guest("vm1").exec("modprobe ib_srp && modprobe sd_mod", 120s);
		if (!i.ok())
			return "vm1: initiator side setup failed: " + i.output;
		return "";
	}

	// Port GID 0 without colons (32 hex digits).
	static std::string Gid(Guest &g)
	{
		auto r = g.exec(std::string("cat ") + kPort + "/gids/0 | tr -d ':'", 30s);
		return r.ok() ? Trim(r.output) : "";
	}

	// The disks of ib_srp's SCSI hosts in vm1 ("sda"), "" if none.
	static std::string SrpDisks()
	{
		auto r = guest("vm1").exec("for h in /sys/class/scsi_host/host*; do "
					   "  grep -qx ib_srp $h/proc_name 2>/dev/null && "
					   "  ls $h/device/target*/*/block/ 2>/dev/null; "
					   "done; true",
					   30s);
		return r.ok() ? Trim(r.output) : "";
	}

	static inline std::string target_gid_;    // vm0 port GID, the srpt target name
	static inline std::string target_string_; // what srp_daemon printed for it
	static inline std::string disk_;          // e.g. "sda" in vm1

	static ::testing::AssertionResult FioVerify(const std::string &name, const std::string &job);
};

// targetcli builds the LIO configuration: block backstore on /dev/ram0, an
// srpt target named after vm0's port GID, LUN 0.
TEST_F(Srp, TargetcliExportsRamdisk)
{
	target_gid_ = Gid(guest("vm0"));
	ASSERT_EQ(target_gid_.size(), 32u) << target_gid_;
	std::string tgt = "/srpt/ib." + target_gid_;
	ASSERT_TRUE(Ok(Run(guest("vm0"), std::string(kTargetcli) + "/backstores/block create name=ram0 dev=/dev/ram0")));
	ASSERT_TRUE(Ok(Run(guest("vm0"), std::string(kTargetcli) + "/srpt create ib." + target_gid_)));
	ASSERT_TRUE(Ok(Run(guest("vm0"), kTargetcli + tgt + "/luns create /backstores/block/ram0")));
	auto ls = Run(guest("vm0"), std::string(kTargetcli) + "ls /");
	ASSERT_TRUE(Ok(ls));
	EXPECT_NE(ls.output.find("ib." + target_gid_), std::string::npos) << ls.output;
	EXPECT_NE(ls.output.find("[block/ram0 (/dev/ram0)"), std::string::npos) << ls.output;
	EXPECT_NE(ls.output.find("64.0MiB"), std::string::npos) << ls.output;
}

// srp_daemon in vm1 finds the target through the SA and the DM (I/O unit,
// controller and service entries of ib_srpt) and prints its add_target line.
TEST_F(Srp, SrpDaemonDiscoversTarget)
{
	ASSERT_FALSE(target_gid_.empty()) << "no target was configured";
	auto r = Run(guest("vm1"), "srp_daemon -o -c -n -i mthca0 -p 1", 120s);
	ASSERT_TRUE(Ok(r));
	std::smatch m;
	std::regex line("(^|\n)(id_ext=[0-9a-f]{16},ioc_guid=[0-9a-f]{16},dgid=" + target_gid_ +
			",pkey=ffff,service_id=[0-9a-f]{16},initiator_ext=[0-9a-f]{16})");
	ASSERT_TRUE(std::regex_search(r.output, m, line)) << "no target line for dgid " << target_gid_ << " in:\n"
							     << r.output;
	target_string_ = m[2];
}

// An ACL for vm1's 128-bit initiator port id (initiator_ext + port GUID),
// then add_target: ib_srp logs in and a SCSI disk of the ramdisk's size,
// vendor LIO-ORG, model ram0 appears.
TEST_F(Srp, LoginCreatesDisk)
{
	ASSERT_FALSE(target_string_.empty()) << "srp_daemon found no target";
	std::string ext = target_string_.substr(target_string_.find("initiator_ext=") + 14, 16);
	std::string gid1 = Gid(guest("vm1"));
	ASSERT_EQ(gid1.size(), 32u) << gid1;
	std::string acl = "ib." + ext + gid1.substr(16);
	ASSERT_TRUE(Ok(Run(guest("vm0"), kTargetcli + std::string("/srpt/ib.") + target_gid_ + "/acls create " + acl)));
	EXPECT_EQ(SrpDisks(), "") << "a disk before the login";

	ASSERT_TRUE(Ok(Run(guest("vm1"), "echo '" + target_string_ + "' > /sys/class/infiniband_srp/srp-mthca0-1/add_target")));
	for (int i = 0; i < 60 && disk_.empty(); i++) {
		disk_ = SrpDisks();
		if (disk_.empty())
			Run(guest("vm1"), "sleep 1");
	}
	ASSERT_FALSE(disk_.empty()) << "no ib_srp disk in vm1; dmesg:\n"
				    << Run(guest("vm1"), "dmesg | tail -20").output << "\nvm0:\n"
				    << Run(guest("vm0"), "dmesg | tail -20").output;
	ASSERT_EQ(disk_.find('\n'), std::string::npos) << "more than one disk: " << disk_;
	auto r = Run(guest("vm1"), "cat /sys/block/" + disk_ + "/size /sys/block/" + disk_ +
					   "/device/vendor /sys/block/" + disk_ + "/device/model; "
					   "for i in $(seq 1 20); do [ -b /dev/" + disk_ + " ] && exit 0; sleep 1; done; "
					   "echo no device node; exit 1");
	ASSERT_TRUE(Ok(r));
	std::istringstream in(r.output);
	std::string sectors, vendor, model;
	in >> sectors >> vendor >> model;
	EXPECT_EQ(sectors, std::to_string(kRamdiskKiB * 2)) << r.output;
	EXPECT_EQ(vendor, "LIO-ORG") << r.output;
	EXPECT_EQ(model, "ram0") << r.output;
	auto sess = Run(guest("vm0"), kTargetcli + std::string("ls /srpt/ib.") + target_gid_ + "/acls");
	EXPECT_TRUE(Ok(sess));
	EXPECT_NE(sess.output.find(acl), std::string::npos) << sess.output;
}

// fio writes random blocks with a crc32c header on each and reads them all
// back: every byte went through SRP over the emulated RC QPs (RDMA read and
// write by the target) and came back intact.
::testing::AssertionResult FioClean(const ExecResult &r)
{
	if (!r.ok())
		return ::testing::AssertionFailure() << r.describe() << ", output:\n" << r.output;
	if (r.output.find("err= 0") == std::string::npos || r.output.find("verify: bad") != std::string::npos || r.output.find("verify failed") != std::string::npos ||
	    r.output.find("WRITE: bw=") == std::string::npos || r.output.find("READ: bw=") == std::string::npos)
		return ::testing::AssertionFailure() << "fio did not write and verify cleanly:\n" << r.output;
	return ::testing::AssertionSuccess();
}

// One fio job on the SRP disk in vm1 that writes, then reads back and
// checks crc32c of every block; `job` gives the pattern, block size, engine.
::testing::AssertionResult Srp::FioVerify(const std::string &name, const std::string &job)
{
	auto r = Run(guest("vm1"),
			      "fio --name=" + name + " --filename=/dev/" + disk_ + " " + job +
				      " --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting 2>&1",
			      900s);
	return FioClean(r);
}

TEST_F(Srp, FioVerify4kLibaio)
{
	ASSERT_FALSE(disk_.empty()) << "no SRP disk";
	EXPECT_TRUE(FioVerify("srp4k", "--rw=randwrite --bs=4k --size=32M --ioengine=libaio --iodepth=16"));
}

TEST_F(Srp, FioVerify64kPsync)
{
	ASSERT_FALSE(disk_.empty()) << "no SRP disk";
	EXPECT_TRUE(FioVerify("srp64k", "--rw=randwrite --bs=64k --size=32M --offset=32M --ioengine=psync"));
}

// Requests of the disk's largest size, four in flight: the target pulls each
// with a 124 KiB RDMA READ, several at once (a burst that once overflowed
// the emulated link and ended in retry-exceeded).
TEST_F(Srp, FioVerify124kQueued)
{
	ASSERT_FALSE(disk_.empty()) << "no SRP disk";
	EXPECT_TRUE(FioVerify("srp124k", "--rw=write --bs=124k --size=32M --ioengine=libaio --iodepth=4"));
}

// What vm1 sees on the SRP disk is what vm0's ramdisk holds.
TEST_F(Srp, InitiatorAndTargetSeeSameData)
{
	ASSERT_FALSE(disk_.empty()) << "no SRP disk";
	// md5 of what dd read; the command fails when dd does (its status
	// goes through a file: the pipe's status is md5sum's).
	auto md5 = [](const std::string &dev) {
		return "{ dd if=" + dev + " bs=1M count=64 iflag=direct status=none; echo $? >/tmp/dd.rc; } | md5sum "
		       "&& exit $(cat /tmp/dd.rc)";
	};
	auto a = Run(guest("vm1"), md5("/dev/" + disk_), 300s);
	auto b = Run(guest("vm0"), md5("/dev/ram0"), 300s);
	ASSERT_TRUE(Ok(a));
	ASSERT_TRUE(Ok(b));
	EXPECT_EQ(a.output.substr(0, 32), b.output.substr(0, 32));
	EXPECT_NE(a.output.substr(0, 32), "7f614da9329cd3aebf59b91aadc30bf0") << "all zeroes, fio wrote nothing";
}

}  // namespace
}  // namespace iblab::vmtest
