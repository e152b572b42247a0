#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# ib_umad ABI checks (Documentation/umad.md), run inside a guest: umad0 on a
# two-node fabric whose SM (OpenSM, holding issm0) is at LID 1, this guest,
# with the peer at LID 2. Registration and flag validation, every errno of
# read/write/ioctl, an SMP round trip, a timeout reported as ETIMEDOUT, the
# duplicate-TID refusal, an RMPP SA answer with ENOSPC for a short buffer,
# issm exclusivity, close with sends outstanding, and the old 56-byte
# header. Prints one line per check and "N passed, N failed".
import errno, fcntl, os, select, struct, sys, time

ok = fail = 0


def check(name, cond, detail=""):
    global ok, fail
    if cond:
        ok += 1
        print("ok   " + name)
    else:
        fail += 1
        print("FAIL " + name + " " + str(detail))


def err_of(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno


def IOC(d, nr, size):
    return (d << 30) | (size << 16) | (0x1b << 8) | nr


REG1 = IOC(3, 1, 28)
UNREG = IOC(1, 2, 4)
PKEY = IOC(0, 3, 0)
REG2 = IOC(3, 4, 40)


def reg2(fd, qpn, mgmt_class=0, version=0, flags=0, oui=0, rmpp=0, methods=(0, 0)):
    b = bytearray(struct.pack("<IIBBHIQQIB3x", 0, qpn, mgmt_class, version, 0, flags,
                              methods[0], methods[1], oui, rmpp))
    fcntl.ioctl(fd, REG2, b)
    return struct.unpack_from("<I", b, 0)[0], struct.unpack_from("<I", b, 12)[0], b


def hdr(agent, lid, qpn, qkey=0, timeout=0, retries=0, sl=0, pkey_index=0):
    return struct.pack("<IIIII", agent, 0, timeout, retries, 0) + struct.pack(">IIH", qpn, qkey, lid) + \
        bytes([sl, 0, 0, 0, 0, 0]) + bytes(16) + struct.pack(">I", 0) + struct.pack("<H", pkey_index) + bytes(6)


def mad(mgmt_class, version, method, attr, tid, data=b"", size=256):
    m = struct.pack(">BBBBHHQHHI", 1, mgmt_class, version, method, 0, 0, tid, attr, 0, 0) + data
    return m + bytes(size - len(m))


def rd(fd, n=64 + 2048, wait=5.0):
    r, _, _ = select.select([fd], [], [], wait)
    if not r:
        return None
    return os.read(fd, n)


dev = "/dev/infiniband/umad0"
fd = os.open(dev, os.O_RDWR | os.O_NONBLOCK)

# ENABLE_PKEY on a fresh file works; REGISTER_AGENT2 turns it on anyway.
check("enable_pkey fresh", err_of(lambda: fcntl.ioctl(fd, PKEY)) == 0)

# REGISTER_AGENT2 validation.
e = 0
b = None
try:
    reg2(fd, 1, flags=0x6)
except OSError as x:
    e = x.errno
check("reg2 unknown flag -> EINVAL", e == errno.EINVAL, e)
b = bytearray(struct.pack("<IIBBHIQQIB3x", 0, 1, 0, 0, 0, 0x6, 0, 0, 0, 0))
try:
    fcntl.ioctl(fd, REG2, b)
except OSError:
    pass
check("reg2 writes back supported flags (1)", struct.unpack_from("<I", b, 12)[0] == 1,
      struct.unpack_from("<I", b, 12)[0])
check("reg2 qpn 2 -> EINVAL", err_of(lambda: reg2(fd, 2)) == errno.EINVAL)
check("reg2 rmpp_version 2 -> EINVAL", err_of(lambda: reg2(fd, 1, rmpp=2)) == errno.EINVAL)
check("reg2 oui > 24 bits -> EINVAL",
      err_of(lambda: reg2(fd, 1, mgmt_class=0x30, version=1, oui=0x1000000)) == errno.EINVAL)

smp_agent = reg2(fd, 0)[0]
sa_agent = reg2(fd, 1, mgmt_class=3, version=2, rmpp=1)[0]
check("two agents with distinct ids", smp_agent != sa_agent, (smp_agent, sa_agent))
check("enable_pkey after register -> EINVAL", err_of(lambda: fcntl.ioctl(fd, PKEY)) == errno.EINVAL)
check("unregister id 40 -> EINVAL",
      err_of(lambda: fcntl.ioctl(fd, UNREG, struct.pack("<I", 40))) == errno.EINVAL)
check("unregister unused id 20 -> EINVAL",
      err_of(lambda: fcntl.ioctl(fd, UNREG, struct.pack("<I", 20))) == errno.EINVAL)
check("unknown ioctl -> ENOTTY", err_of(lambda: fcntl.ioctl(fd, IOC(0, 9, 0))) == errno.ENOTTY)

# read/write validation.
check("read shorter than header -> EINVAL", err_of(lambda: os.read(fd, 10)) == errno.EINVAL)
check("read empty nonblocking -> EAGAIN", err_of(lambda: os.read(fd, 1024)) == errno.EAGAIN)
check("short write -> EINVAL", err_of(lambda: os.write(fd, hdr(smp_agent, 2, 0) + bytes(10))) == errno.EINVAL)
check("write agent id 99 -> EINVAL",
      err_of(lambda: os.write(fd, hdr(99, 2, 0) + mad(1, 1, 1, 0x11, 1))) == errno.EINVAL)
check("write unregistered agent 17 -> EIO",
      err_of(lambda: os.write(fd, hdr(17, 2, 0) + mad(1, 1, 1, 0x11, 1))) == errno.EIO)
check("write sl 16 -> EINVAL",
      err_of(lambda: os.write(fd, hdr(smp_agent, 2, 0, sl=16) + mad(1, 1, 1, 0x11, 1))) == errno.EINVAL)
check("write MAD longer than a packet -> EINVAL",
      err_of(lambda: os.write(fd, hdr(smp_agent, 2, 0) + mad(1, 1, 1, 0x11, 1, size=300))) == errno.EINVAL)
p = select.poll()
p.register(fd, select.POLLIN | select.POLLOUT)
ev = p.poll(0)
check("poll: writable, not readable", ev and ev[0][1] & select.POLLOUT and not ev[0][1] & select.POLLIN, ev)

# SubnGet(NodeInfo) to LID 2 on QP0.
n = os.write(fd, hdr(smp_agent, 2, 0, timeout=1000, retries=2) + mad(1, 1, 1, 0x11, 0x1234))
check("write SMP returns the byte count", n == 64 + 256, n)
r = rd(fd)
check("NodeInfo response arrives", r is not None)
if r:
    aid, status, _, _, length = struct.unpack_from("<IIIII", r, 0)
    qpn, _, lid = struct.unpack_from(">IIH", r, 20)
    m = r[64:]
    check("response header: agent, status 0, length, from LID 2 QP0",
          aid == smp_agent and status == 0 and length == 64 + 256 and lid == 2 and qpn == 0,
          (aid, status, length, lid, qpn))
    check("response is GetResp NodeInfo, TID low half kept",
          m[3] == 0x81 and struct.unpack_from(">H", m, 16)[0] == 0x11 and
          struct.unpack_from(">Q", m, 8)[0] & 0xffffffff == 0x1234, m[:24].hex())
    check("NodeInfo GUID is the peer's", m[64 + 12:64 + 20].hex() == "0002c90300000200", m[64:104].hex())

# A request nobody answers comes back with ETIMEDOUT.
t0 = time.time()
os.write(fd, hdr(smp_agent, 0x77, 0, timeout=200, retries=1) + mad(1, 1, 1, 0x11, 0x5555))
r = rd(fd, wait=10)
check("timeout reported", r is not None and struct.unpack_from("<I", r, 4)[0] == errno.ETIMEDOUT,
      r and r[:8].hex())
if r:
    check("timeout report is header + MAD header", len(r) == 64 + 24, len(r))
    check("timeout after the retries (>= 0.35 s)", time.time() - t0 >= 0.35, time.time() - t0)

# A second request with a TID in flight is refused.
os.write(fd, hdr(smp_agent, 0x78, 0, timeout=3000) + mad(1, 1, 1, 0x11, 0x7777))
check("duplicate TID in flight -> EINVAL",
      err_of(lambda: os.write(fd, hdr(smp_agent, 0x79, 0, timeout=3000) + mad(1, 1, 1, 0x11, 0x7777)))
      == errno.EINVAL)

# SA GetTable(PathRecord): an RMPP answer; too short a buffer -> ENOSPC.
sa_data = bytes(12) + bytes(8) + struct.pack(">HHQ", 0, 0, 0)  # RMPP hdr, SM_Key, offset, comp mask
os.write(fd, hdr(sa_agent, 1, 1, qkey=0x80010000, timeout=2000, retries=2) +
         mad(3, 2, 0x12, 0x35, 0x4242, data=sa_data))
r, _, _ = select.select([fd], [], [], 10)
e = err_of(lambda: os.read(fd, 64 + 256))
check("RMPP answer into 64+256 bytes -> ENOSPC", e == errno.ENOSPC, e)
r = None
for _ in range(50):
    try:
        r = os.read(fd, 64 + 4096)
        break
    except OSError as x:
        if x.errno != errno.EAGAIN:
            print("read error", x)
            break
        time.sleep(0.1)
if r and struct.unpack_from("<I", r, 0)[0] != sa_agent:
    # the timed-out duplicate-TID probe may come first
    r2 = rd(fd, 64 + 4096, 5)
    r = r2
check("RMPP answer read whole", r is not None and len(r) > 64 + 256, r and len(r))
if r:
    length = struct.unpack_from("<I", r, 16)[0]
    m = r[64:]
    attr_off = struct.unpack_from(">H", m, 44)[0] * 8
    nrec = (len(m) - 56) // attr_off if attr_off else 0
    check("header length matches the bytes read", length == len(r), (length, len(r)))
    check("GetTableResp with >= 4 PathRecords", m[3] == 0x92 and nrec >= 4, (hex(m[3]), attr_off, nrec))
    recs = [m[56 + i * attr_off:56 + (i + 1) * attr_off] for i in range(nrec)]
    dl = sorted(struct.unpack_from(">HH", x, 40) for x in recs)
    check("records are the 4 LID pairs", dl[:4] == [(1, 1), (1, 2), (2, 1), (2, 2)], dl)

# issm: opensm holds it; a non-blocking second open is EAGAIN.
check("issm0 busy -> EAGAIN", err_of(lambda: os.open("/dev/infiniband/issm0", os.O_RDWR | os.O_NONBLOCK))
      == errno.EAGAIN)

# Close with a send outstanding (3 s timeout still running).
os.write(fd, hdr(smp_agent, 0x7a, 0, timeout=3000) + mad(1, 1, 1, 0x11, 0x8888))
os.close(fd)
check("close with outstanding sends", True)

# The old header format: 56 bytes, no pkey_index.
fd = os.open(dev, os.O_RDWR)
b = bytearray(struct.pack("<I", 0) + bytes(16) + bytes([0, 0, 0]) + bytes(3) + bytes([0]) + bytes(1))
fcntl.ioctl(fd, REG1, b)
a = struct.unpack_from("<I", b, 0)[0]
oldh = hdr(a, 2, 0, timeout=1000)[:56]
os.write(fd, oldh + mad(1, 1, 1, 0x11, 0x99))
r = rd(fd)
check("old format: 56-byte header + MAD", r is not None and len(r) == 56 + 256 and
      struct.unpack_from("<I", r, 16)[0] == 56 + 256, r and len(r))
check("old format: unregister", err_of(lambda: fcntl.ioctl(fd, UNREG, struct.pack("<I", a))) == 0)
check("old format: write after unregister -> EIO",
      err_of(lambda: os.write(fd, oldh + mad(1, 1, 1, 0x11, 0x98))) == errno.EIO)
os.close(fd)

print("%d passed, %d failed" % (ok, fail))
sys.exit(1 if fail else 0)
