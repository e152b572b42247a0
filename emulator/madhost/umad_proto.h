// SPDX-License-Identifier: GPL-2.0
//
// The socket protocol between a host process's umad interposer
// (emulator/umad_preload) and the emulator's host MAD endpoint (MadHost).
//
// A umad file descriptor of the process IS a connected AF_UNIX
// SOCK_SEQPACKET socket to the endpoint. Each packet the process write()s
// or read()s is exactly what the kernel's ib_umad would take or give: a
// struct ib_user_mad_hdr (64 bytes, <rdma/ib_user_mad.h>, the "new" ABI with
// pkey_index) followed by the MAD (256 bytes). So read/write/poll need no
// interposing. Besides MADs, the interposer sends control messages of
// exactly sizeof(UmadCtl) bytes (a MAD send is never that short): agent
// registration (the ioctls), the IsSM bit (an open issm file), and a query
// of the port's attributes (for the sysfs files libibumad reads), which is
// answered on that socket with one UmadPortInfo.
#pragma once

#include <cstdint>

namespace ibemu::madhost {

inline constexpr uint32_t kCtlMagic = 0x49424543;  // "IBEC"
inline constexpr unsigned kHdrSize = 64;            // struct ib_user_mad_hdr
inline constexpr unsigned kMadSize = 256;
inline constexpr uint32_t kStatusTimedOut = 110;    // ETIMEDOUT in hdr.status

enum class CtlOp : uint32_t {
    Register = 1,    // agent, qpn, class, version, method mask
    Unregister = 2,  // agent
    SetIsSm = 3,     // this connection holds the issm file: IsSM while open
    QueryPort = 4,   // answered with a UmadPortInfo
};

struct UmadCtl {
    uint32_t magic = kCtlMagic;
    CtlOp op = CtlOp::QueryPort;
    uint32_t agent = 0;
    uint8_t qpn = 0;
    uint8_t mgmt_class = 0;
    uint8_t class_version = 0;
    uint8_t rmpp_version = 0;
    uint64_t method_mask[2] = {0, 0};  // bit m: method m is received
};
static_assert(sizeof(UmadCtl) == 32);

// What sysfs shows of the endpoint's CA and its port 1, host byte order.
struct UmadPortInfo {
    uint32_t magic = kCtlMagic;
    uint32_t num_ports = 1;
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    uint64_t port_guid = 0;
    uint64_t gid_prefix = 0;
    uint32_t cap_mask = 0;
    uint16_t lid = 0;
    uint16_t sm_lid = 0;
    uint8_t lmc = 0;
    uint8_t sm_sl = 0;
    uint8_t state = 0;       // PortInfo PortState
    uint8_t phys_state = 0;  // PortInfo PortPhysicalState
    uint8_t width = 0;       // LinkWidthActive encoding
    uint8_t speed = 0;       // LinkSpeedActive encoding
    uint16_t pkey0 = 0;
    char node_desc[64] = {};
};

}  // namespace ibemu::madhost
