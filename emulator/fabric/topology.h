// SPDX-License-Identifier: GPL-2.0
//
// A fabric description: nodes (switches and HCAs) and the cables between
// their ports. Read from the text `ibnetdiscover` prints, or from a short
// built-in spec for tests.
//
// ibnetdiscover format, as accepted here (one item per line; '#' starts a
// comment line; blank lines separate nodes):
//
//   vendid=0x2c9                 optional node attributes, for the node
//   devid=0xb924                 that follows
//   sysimgguid=0x2c90200400cb3
//   switchguid=0x2c90200400cb0(2c90200400cb0)   or caguid=0x...
//   Switch  24 "S-0002c90200400cb0"  # "sw0" enhanced port 0 lid 2 lmc 0
//   Ca      2  "H-0002c903000a1b2c"  # "vm0 HCA-1"
//   [1]     "H-0002c903000a1b2c"[1](2c903000a1b2d)   # "vm0 HCA-1" lid 1 4xSDR
//   [1](2c903000a1b2d)  "S-0002c90200400cb0"[1]    # lid 1 lmc 0 "sw0" lid 2 4xSDR
//
// A node line is `Switch|Ca <ports> "<id>"`, the id being S-/H-/R- and the
// node GUID in hex; the quoted text after '#' is the NodeDescription. A port
// line `[p]` (optionally `(portguid)` and `[ext n]`) names the peer by id and
// port. A cable may be listed from one end or both; both ends must agree.
// "NxSDR|DDR|QDR" in a port line's comment sets the link width and speed.
//
// Names (what the control interface and the server use): every node has
// its id ("S-..."/"H-..."), its GUID ("0x..."), and a name: the first word
// of its NodeDescription ("vm0" for "vm0 HCA-1"), unless that word is used
// by more than one node. HCAs are matched to guests by that name (the
// server's node name, --node NAME=GUID) or by node GUID.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibemu::fabric {

struct TopoNode {
    enum class Kind { Switch, Ca };
    Kind kind = Kind::Ca;
    std::string id;         // "S-0002c9..." as in the file
    uint64_t guid = 0;
    uint64_t sys_image_guid = 0;
    uint32_t vendor_id = 0x0002c9;
    uint32_t device_id = 0;
    unsigned num_ports = 0;
    std::string description;
    std::string name;       // see above; empty when ambiguous
    unsigned line = 0;
};

struct TopoLink {
    unsigned a = 0, a_port = 0;  // node index, port
    unsigned b = 0, b_port = 0;
    uint8_t width = 2;  // 4x
    uint8_t speed = 1;  // SDR
};

struct Topology {
    std::vector<TopoNode> nodes;
    std::vector<TopoLink> links;

    // By name, id or GUID ("0x..." or bare hex of 16 digits).
    std::optional<unsigned> find(std::string_view key) const;
};

// Parses ibnetdiscover text. On error returns false with "line N: what".
bool parse_topology(std::string_view text, Topology* out, std::string* error);
// Parses ibsim's net format (ibsim-utils, net-examples/): the same grammar,
// but node ids are any quoted string ("Switch1", "Hca1"), "Hca" may stand
// for "Ca", a port line may end in "w=1|4|8|12" (width) and "s=1|2|4"
// (speed), and "do <command>" lines are skipped ("include" is refused).
// The GUID comes from a switchguid=/caguid= line before the node, or is
// derived from the id; the NodeDescription (and so the name) is the id.
bool parse_ibsim_net(std::string_view text, Topology* out, std::string* error);
// Reads a file in either format (ibnetdiscover tried first).
bool load_topology_file(const std::string& path, Topology* out, std::string* error);

// Writes t in the ibnetdiscover format (ids "S-<guid>"/"H-<guid>", every
// cable listed from both ends), which parse_topology and ibsim read back.
std::string format_ibnetdiscover(const Topology& t);

// A two-level fat tree: `cas` one-port CAs "ca0".."ca<N-1>" (descriptions
// "ca<i> HCA-1"), leaf switches "leaf<j>" with radix/2 CAs each on ports
// 1..radix/2, and radix/2 spine switches "spine<s>"; port radix/2+1+s of
// every leaf is cabled to spine s, port j+1 of which goes back to leaf j.
// radix 0 picks the smallest even radix >= 8 that fits (radix^2/2 >= cas).
// Every node has a GUID. False with *error when it cannot be built
// (cas 0 or over 4096, radix odd, under 4 or over 254, too few for cas).
bool fattree_topology(unsigned cas, unsigned radix, Topology* out, std::string* error);

// Built-in shorthands:
//   "b2b"              two HCAs vm0, vm1, cabled back to back
//   "b2b:NAME,NAME"    the same with these names
//   "star:N"           one N-port switch "sw0" with HCAs vm0..vm<N-1>
//   "star:NAME,..."    one switch with one HCA per name
//   "chain:N"          two switches sw0-sw1 (port N+1 of each joins them),
//                      HCAs split between them: vm0.. on sw0, the rest on sw1
//   "fattree:N[,R]"    fattree_topology(N, R): ca0..ca<N-1>, leaf*, spine*
// HCA GUIDs are left 0 (match by name); switch GUIDs are fixed per name.
bool builtin_topology(std::string_view spec, Topology* out, std::string* error);

}  // namespace ibemu::fabric
