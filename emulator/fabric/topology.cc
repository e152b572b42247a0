// SPDX-License-Identifier: GPL-2.0
#include "fabric/topology.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ibemu::fabric {
namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && std::isspace(uint8_t(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.remove_suffix(1);
    return s;
}

bool parse_hex(std::string_view s, uint64_t* v)
{
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s.remove_prefix(2);
    if (s.empty() || s.size() > 16)
        return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
    return ec == std::errc() && p == s.data() + s.size();
}

bool parse_uint(std::string_view s, unsigned* v)
{
    if (s.empty() || s.size() > 9)
        return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
    return ec == std::errc() && p == s.data() + s.size();
}

// Reads a "quoted" token at the front of s.
bool take_quoted(std::string_view& s, std::string* out)
{
    s = trim(s);
    if (s.empty() || s.front() != '"')
        return false;
    size_t end = s.find('"', 1);
    if (end == std::string_view::npos)
        return false;
    *out = std::string(s.substr(1, end - 1));
    s.remove_prefix(end + 1);
    return true;
}

// Reads "[n]" at the front of s.
bool take_bracket_num(std::string_view& s, unsigned* n)
{
    if (s.empty() || s.front() != '[')
        return false;
    size_t end = s.find(']');
    if (end == std::string_view::npos)
        return false;
    if (!parse_uint(trim(s.substr(1, end - 1)), n))
        return false;
    s.remove_prefix(end + 1);
    return true;
}

// Skips an optional "(hex)" at the front of s.
bool skip_paren(std::string_view& s)
{
    if (s.empty() || s.front() != '(')
        return true;
    size_t end = s.find(')');
    if (end == std::string_view::npos)
        return false;
    uint64_t dummy;
    if (!parse_hex(trim(s.substr(1, end - 1)), &dummy))
        return false;
    s.remove_prefix(end + 1);
    return true;
}

// "4xSDR" style rate in a comment.
void parse_rate(std::string_view c, uint8_t* width, uint8_t* speed)
{
    static const struct { const char* s; uint8_t w; } widths[] = {{"12x", 8}, {"8x", 4}, {"4x", 2}, {"1x", 1}};
    static const struct { const char* s; uint8_t v; } speeds[] = {{"SDR", 1}, {"DDR", 2}, {"QDR", 4}};
    for (auto w : widths) {
        for (auto sp : speeds) {
            std::string tok = std::string(w.s) + sp.s;
            size_t at = c.find(tok);
            if (at != std::string_view::npos && (at == 0 || !std::isdigit(uint8_t(c[at - 1])))) {
                *width = w.w;
                *speed = sp.v;
                return;
            }
        }
    }
}

uint64_t name_guid(std::string_view name)
{
    // FNV-1a; Mellanox OUI on top, like the server's guest GUIDs.
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return (0x0002c9ull << 40) | (h & 0xffffffffffull);
}

std::string hex16(uint64_t v)
{
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
    return b;
}

struct PendingPort {
    unsigned node, port;
    std::string peer_id;
    unsigned peer_port;
    uint8_t width, speed;
    unsigned line;
};

}  // namespace

std::optional<unsigned> Topology::find(std::string_view key) const
{
    // Names first: a shorthand HCA may be named like another node's id
    // ("H-vm0" beside "vm0", whose id that is).
    for (unsigned i = 0; i < nodes.size(); ++i)
        if (nodes[i].name == key)
            return i;
    for (unsigned i = 0; i < nodes.size(); ++i)
        if (nodes[i].id == key)
            return i;
    uint64_t g;
    if (parse_hex(key, &g) && g != 0)
        for (unsigned i = 0; i < nodes.size(); ++i)
            if (nodes[i].guid == g)
                return i;
    return std::nullopt;
}

namespace {

// The two dialects share everything but the node ids: ibnetdiscover's carry
// the GUID ("S-<hex>"), ibsim's are any unique string, with the GUID from a
// preceding switchguid=/caguid= line or else derived from the id.
bool parse_any(std::string_view text, Topology* out, std::string* error, bool ibsim)
{
    Topology t;
    std::vector<PendingPort> ports;
    // The node the port lines belong to; kNoNode between node blocks. A
    // plain index rather than std::optional: GCC's -O3 flow analysis cannot
    // see that the optional is engaged where it is read.
    constexpr unsigned kNoNode = ~0u;
    unsigned cur = kNoNode;
    std::set<std::string, std::less<>> seen_ids;
    // Attributes for the next node line.
    uint32_t vendid = 0x0002c9, devid = 0;
    uint64_t sysimg = 0, node_guid = 0;
    unsigned lineno = 0;
    auto fail = [&](const std::string& what) {
        if (error)
            *error = "line " + std::to_string(lineno) + ": " + what;
        return false;
    };

    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view raw = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        ++lineno;
        std::string_view line = trim(raw);
        if (line.empty()) {
            cur = kNoNode;
            continue;
        }
        if (line.front() == '#')
            continue;
        if (line.size() > 4096)
            return fail("line too long");
        if (ibsim && (line.substr(0, 8) == "include " || line.substr(0, 8) == "include\t"))
            return fail("include is not supported");
        if (ibsim && (line.substr(0, 3) == "do " || line.substr(0, 3) == "do\t"))
            continue;  // an ibsim console command: not ours to run

        size_t eq = line.find('=');
        if (eq != std::string_view::npos && line.front() != '[' && line.find('"') == std::string_view::npos) {
            std::string_view key = trim(line.substr(0, eq));
            std::string_view val = trim(line.substr(eq + 1));
            size_t paren = val.find('(');
            if (paren != std::string_view::npos)
                val = trim(val.substr(0, paren));
            uint64_t v;
            if (!parse_hex(val, &v))
                return fail("bad value for " + std::string(key));
            if (key == "vendid")
                vendid = uint32_t(v);
            else if (key == "devid")
                devid = uint32_t(v);
            else if (key == "sysimgguid")
                sysimg = v;
            else if (key == "switchguid" || key == "caguid" || key == "routerguid")
                node_guid = v;  // ibnetdiscover's node id carries it as well
            else
                return fail("unknown attribute '" + std::string(key) + "'");
            continue;
        }

        if (line.front() == '[') {
            if (cur == kNoNode)
                return fail("port line outside a node");
            std::string_view s = line;
            PendingPort pp{};
            pp.node = cur;
            pp.line = lineno;
            pp.width = 2;
            pp.speed = 1;
            if (!take_bracket_num(s, &pp.port))
                return fail("bad port number");
            s = trim(s);
            if (!skip_paren(s))
                return fail("bad port GUID");
            s = trim(s);
            if (s.size() > 4 && s.substr(0, 4) == "[ext") {
                size_t end = s.find(']');
                if (end == std::string_view::npos)
                    return fail("bad [ext n]");
                s.remove_prefix(end + 1);
            }
            if (!take_quoted(s, &pp.peer_id))
                return fail("expected \"peer-id\"[port]");
            s = trim(s);
            if (!take_bracket_num(s, &pp.peer_port))
                return fail("expected [port] after the peer id");
            s = trim(s);
            if (!skip_paren(s))
                return fail("bad peer port GUID");
            s = trim(s);
            // ibsim: "w=1|4|8|12" width and "s=1|2|4" speed after the peer.
            while (ibsim && s.size() >= 2 && (s[0] == 'w' || s[0] == 's') && s[1] == '=') {
                size_t end = s.find_first_of(" \t");
                unsigned v = 0;
                if (!parse_uint(s.substr(2, end == std::string_view::npos ? end : end - 2), &v))
                    return fail("bad " + std::string(s.substr(0, 2)));
                if (s[0] == 'w') {
                    static const uint8_t kWidth[13] = {0, 1, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 8};
                    if (v > 12 || !kWidth[v])
                        return fail("bad width w=" + std::to_string(v));
                    pp.width = kWidth[v];
                } else {
                    if (v != 1 && v != 2 && v != 4)
                        return fail("bad speed s=" + std::to_string(v));
                    pp.speed = uint8_t(v);
                }
                s = trim(end == std::string_view::npos ? std::string_view() : s.substr(end));
            }
            if (!s.empty() && s.front() != '#')
                return fail("unexpected text after the peer");
            parse_rate(s, &pp.width, &pp.speed);
            const TopoNode& n = t.nodes[pp.node];
            if (pp.port < 1 || pp.port > n.num_ports)
                return fail("port " + std::to_string(pp.port) + " outside 1.." + std::to_string(n.num_ports));
            ports.push_back(pp);
            continue;
        }

        // Node line.
        std::string_view s = line;
        size_t sp = s.find_first_of(" \t");
        std::string_view kind = s.substr(0, sp);
        TopoNode n;
        if (kind == "Switch")
            n.kind = TopoNode::Kind::Switch;
        else if (kind == "Ca" || (ibsim && kind == "Hca"))
            n.kind = TopoNode::Kind::Ca;
        else if (kind == "Rt")
            return fail("routers are not supported");
        else
            return fail("expected Switch, Ca, a port line or an attribute, got '" +
                        std::string(kind.substr(0, 32)) + "'");
        if (sp == std::string_view::npos)
            return fail("node line without port count");
        s = trim(s.substr(sp));
        sp = s.find_first_of(" \t");
        if (sp == std::string_view::npos || !parse_uint(s.substr(0, sp), &n.num_ports) || n.num_ports < 1 ||
            n.num_ports > 254)
            return fail("bad port count");
        s = s.substr(sp);
        if (!take_quoted(s, &n.id))
            return fail("expected \"S-<guid>\" or \"H-<guid>\"");
        char want = n.kind == TopoNode::Kind::Switch ? 'S' : 'H';
        bool guid_id = n.id.size() >= 3 && n.id[0] == want && n.id[1] == '-' &&
                       parse_hex(std::string_view(n.id).substr(2), &n.guid);
        if (!guid_id && !ibsim)
            return fail("bad node id '" + n.id + "'");
        if (!guid_id) {
            if (n.id.empty() || n.id.size() > 64)
                return fail("bad node id '" + n.id.substr(0, 64) + "'");
            n.guid = node_guid ? node_guid
                               : name_guid((n.kind == TopoNode::Kind::Switch ? "ibsim-switch:" : "ibsim-ca:") + n.id);
            n.description = n.id;
        }
        s = trim(s);
        if (!s.empty() && s.front() == '#') {
            s.remove_prefix(1);
            std::string desc;
            if (take_quoted(s, &desc))
                n.description = desc;
        } else if (!s.empty()) {
            return fail("unexpected text after the node id");
        }
        if (!seen_ids.insert(n.id).second)
            return fail("node " + n.id + " listed twice");
        n.vendor_id = vendid;
        n.device_id = devid;
        n.sys_image_guid = sysimg ? sysimg : n.guid;
        n.line = lineno;
        vendid = 0x0002c9;
        devid = 0;
        sysimg = 0;
        node_guid = 0;
        t.nodes.push_back(n);
        cur = unsigned(t.nodes.size() - 1);
    }

    // Names: first word of the description, if unique and not some node's
    // id (find() looks a key up as either).
    std::map<std::string, unsigned> uses;
    std::set<std::string, std::less<>> ids;
    for (TopoNode& n : t.nodes) {
        std::string_view d = trim(n.description);
        n.name = std::string(d.substr(0, d.find_first_of(" \t")));
        if (!n.name.empty())
            ++uses[n.name];
        ids.insert(n.id);
    }
    for (TopoNode& n : t.nodes)
        if (!n.name.empty() && (uses[n.name] > 1 || (ids.count(n.name) && n.name != n.id)))
            n.name.clear();

    std::set<uint64_t> guids;
    for (const TopoNode& n : t.nodes) {
        lineno = n.line;
        if (n.guid && !guids.insert(n.guid).second)
            return fail("GUID " + hex16(n.guid) + " of " + n.id + " used twice");
    }

    // Cables: resolve peers, merge the two listings of each.
    std::map<std::string, unsigned, std::less<>> by_id;
    for (unsigned i = 0; i < t.nodes.size(); ++i)
        by_id.emplace(t.nodes[i].id, i);
    std::map<std::pair<unsigned, unsigned>, std::pair<unsigned, unsigned>> peer_of;
    for (const PendingPort& pp : ports) {
        lineno = pp.line;
        auto it = by_id.find(pp.peer_id);
        if (it == by_id.end())
            return fail("unknown peer \"" + pp.peer_id + "\"");
        unsigned peer = it->second;
        if (pp.peer_port < 1 || pp.peer_port > t.nodes[peer].num_ports)
            return fail("peer port " + std::to_string(pp.peer_port) + " outside 1.." +
                        std::to_string(t.nodes[peer].num_ports) + " of " + pp.peer_id);
        if (peer == pp.node && pp.peer_port == pp.port)
            return fail("port cabled to itself");
        auto here = std::make_pair(pp.node, pp.port);
        auto there = std::make_pair(peer, pp.peer_port);
        auto a = peer_of.find(here);
        auto b = peer_of.find(there);
        if (a != peer_of.end() || b != peer_of.end()) {
            // The other end's listing of the same cable is fine; anything
            // else means a port with two cables.
            if (a != peer_of.end() && a->second == there && b != peer_of.end() && b->second == here)
                continue;
            return fail("port " + t.nodes[pp.node].id + "[" + std::to_string(pp.port) + "] or " + pp.peer_id + "[" +
                        std::to_string(pp.peer_port) + "] has two cables");
        }
        peer_of[here] = there;
        peer_of[there] = here;
        TopoLink l;
        l.a = pp.node;
        l.a_port = pp.port;
        l.b = peer;
        l.b_port = pp.peer_port;
        l.width = pp.width;
        l.speed = pp.speed;
        t.links.push_back(l);
    }
    if (t.nodes.empty()) {
        if (error)
            *error = "no nodes";
        return false;
    }
    *out = std::move(t);
    return true;
}

}  // namespace

bool parse_topology(std::string_view text, Topology* out, std::string* error)
{
    return parse_any(text, out, error, false);
}

bool parse_ibsim_net(std::string_view text, Topology* out, std::string* error)
{
    return parse_any(text, out, error, true);
}

bool load_topology_file(const std::string& path, Topology* out, std::string* error)
{
    std::ifstream f(path);
    if (!f) {
        if (error)
            *error = path + ": cannot open";
        return false;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    // ibnetdiscover first; a file it refuses may be in ibsim's dialect.
    std::string e1, e2;
    if (parse_topology(text, out, &e1) || parse_ibsim_net(text, out, &e2))
        return true;
    if (error)
        *error = path + ": " + e1 + " (as ibsim net: " + e2 + ")";
    return false;
}

namespace {

void split_names(std::string_view list, std::vector<std::string>* names)
{
    while (!list.empty()) {
        size_t c = list.find(',');
        std::string_view n = trim(list.substr(0, c));
        names->emplace_back(n);
        list.remove_prefix(c == std::string_view::npos ? list.size() : c + 1);
    }
}

bool valid_name(const std::string& n)
{
    if (n.empty() || n.size() > 63)
        return false;
    for (char c : n)
        if (!std::isalnum(uint8_t(c)) && c != '-' && c != '_' && c != '.')
            return false;
    return true;
}

TopoNode make_node(TopoNode::Kind k, const std::string& name, unsigned nports)
{
    TopoNode n;
    n.kind = k;
    n.num_ports = nports;
    n.name = name;
    n.description = name;
    if (k == TopoNode::Kind::Switch) {
        n.guid = name_guid("switch:" + name);
        n.id = "S-" + hex16(n.guid);
        n.device_id = 0xb924;
    } else {
        n.id = "H-" + name;  // no GUID: matched by name
        n.device_id = 0x6282;
    }
    n.sys_image_guid = n.guid;
    return n;
}

}  // namespace

bool builtin_topology(std::string_view spec, Topology* out, std::string* error)
{
    auto fail = [&](const std::string& what) {
        if (error)
            *error = "topology '" + std::string(spec.substr(0, 64)) + "': " + what;
        return false;
    };
    std::string_view kind = spec.substr(0, spec.find(':'));
    std::string_view arg = spec.find(':') == std::string_view::npos ? "" : spec.substr(spec.find(':') + 1);
    std::vector<std::string> names;
    unsigned count = 0;
    if (kind == "fattree") {
        // its own argument syntax, below
    } else if (!arg.empty() && std::isdigit(uint8_t(arg.front()))) {
        if (!parse_uint(arg, &count) || count < 1 || count > 200)
            return fail("bad HCA count");
        for (unsigned i = 0; i < count; ++i)
            names.push_back("vm" + std::to_string(i));
    } else if (!arg.empty()) {
        split_names(arg, &names);
    }
    for (const std::string& n : names)
        if (!valid_name(n))
            return fail("bad name '" + n + "'");
    for (size_t i = 0; i < names.size(); ++i)
        for (size_t j = i + 1; j < names.size(); ++j)
            if (names[i] == names[j])
                return fail("name '" + names[i] + "' twice");
    // star and chain name their switches sw0 (and sw1): no HCA may take
    // such a name, or find() would give the switch for it.
    for (const std::string& n : names)
        if ((kind == "star" || kind == "chain") && (n == "sw0" || (kind == "chain" && n == "sw1")))
            return fail("name '" + n + "' is a switch's");

    Topology t;
    if (kind == "b2b") {
        if (names.empty())
            names = {"vm0", "vm1"};
        if (names.size() != 2)
            return fail("b2b takes two names");
        t.nodes.push_back(make_node(TopoNode::Kind::Ca, names[0], 1));
        t.nodes.push_back(make_node(TopoNode::Kind::Ca, names[1], 1));
        t.links.push_back(TopoLink{0, 1, 1, 1, 2, 1});
    } else if (kind == "star") {
        if (names.empty())
            return fail("star needs a count or names");
        unsigned nports = std::max<unsigned>(unsigned(names.size()), 8);
        t.nodes.push_back(make_node(TopoNode::Kind::Switch, "sw0", nports));
        for (unsigned i = 0; i < names.size(); ++i) {
            t.nodes.push_back(make_node(TopoNode::Kind::Ca, names[i], 1));
            t.links.push_back(TopoLink{0, i + 1, i + 1, 1, 2, 1});
        }
    } else if (kind == "chain") {
        if (names.size() < 2)
            return fail("chain needs at least two HCAs");
        unsigned left = unsigned(names.size() + 1) / 2, right = unsigned(names.size()) - left;
        unsigned nports = std::max<unsigned>(left + 1, 8);
        t.nodes.push_back(make_node(TopoNode::Kind::Switch, "sw0", nports));
        t.nodes.push_back(make_node(TopoNode::Kind::Switch, "sw1", nports));
        t.links.push_back(TopoLink{0, nports, 1, nports, 2, 1});
        for (unsigned i = 0; i < names.size(); ++i) {
            t.nodes.push_back(make_node(TopoNode::Kind::Ca, names[i], 1));
            unsigned sw = i < left ? 0 : 1;
            unsigned port = i < left ? i + 1 : i - left + 1;
            t.links.push_back(TopoLink{sw, port, unsigned(t.nodes.size() - 1), 1, 2, 1});
        }
        (void)right;
    } else if (kind == "fattree") {
        // "fattree:N" or "fattree:N,R": count (and radix), not names.
        unsigned n = 0, radix = 0;
        std::string_view a = arg, r;
        if (size_t c = a.find(','); c != std::string_view::npos) {
            r = a.substr(c + 1);
            a = a.substr(0, c);
        }
        if (!parse_uint(a, &n) || (!r.empty() && !parse_uint(r, &radix)))
            return fail("fattree takes N[,RADIX]");
        std::string err;
        if (!fattree_topology(n, radix, &t, &err))
            return fail(err);
    } else {
        return fail("unknown shorthand (b2b, star:N, chain:N, fattree:N[,R])");
    }
    *out = std::move(t);
    return true;
}

bool fattree_topology(unsigned cas, unsigned radix, Topology* out, std::string* error)
{
    auto fail = [&](const std::string& what) {
        if (error)
            *error = "fattree: " + what;
        return false;
    };
    // Bounded so that a shorthand from a hostile or mistyped option stays
    // cheap to build and to look names up in (find() is linear).
    if (cas == 0 || cas > 4096)
        return fail("CA count must be 1..4096");
    if (radix == 0) {
        radix = 8;
        while (radix * radix / 2 < cas)
            radix += 2;
    }
    if (radix < 4 || radix > 254 || radix % 2)
        return fail("radix must be even, 4..254");
    unsigned down = radix / 2, spines = radix / 2;
    unsigned leaves = (cas + down - 1) / down;
    if (leaves > radix)
        return fail(std::to_string(cas) + " CAs need radix^2/2 >= CAs; radix " + std::to_string(radix) +
                    " is too small");
    Topology t;
    auto add = [&](TopoNode::Kind k, const std::string& name, const std::string& desc, unsigned nports, uint64_t guid) {
        TopoNode n;
        n.kind = k;
        n.num_ports = nports;
        n.guid = guid;
        n.sys_image_guid = guid;
        n.description = desc;
        n.name = name;
        n.id = std::string(k == TopoNode::Kind::Switch ? "S-" : "H-") + hex16(guid);
        n.device_id = k == TopoNode::Kind::Switch ? 0xb924 : 0x6282;
        t.nodes.push_back(n);
        return unsigned(t.nodes.size() - 1);
    };
    // GUIDs by role and index, Mellanox OUI, so they read well in a sweep.
    std::vector<unsigned> leaf(leaves), spine(spines);
    for (unsigned s = 0; s < spines; ++s)
        spine[s] = add(TopoNode::Kind::Switch, "spine" + std::to_string(s), "spine" + std::to_string(s), radix,
                       0x0002c90200000000ull | (0x2ull << 20) | s);
    for (unsigned j = 0; j < leaves; ++j)
        leaf[j] = add(TopoNode::Kind::Switch, "leaf" + std::to_string(j), "leaf" + std::to_string(j), radix,
                      0x0002c90200000000ull | (0x1ull << 20) | j);
    for (unsigned j = 0; j < leaves; ++j)
        for (unsigned s = 0; s < spines; ++s)
            t.links.push_back(TopoLink{leaf[j], down + 1 + s, spine[s], j + 1, 2, 1});
    for (unsigned i = 0; i < cas; ++i) {
        std::string name = "ca" + std::to_string(i);
        // Port GUIDs follow the node GUID (stub CAs use node GUID + port).
        unsigned c = add(TopoNode::Kind::Ca, name, name + " HCA-1", 1, 0x0002c90300000000ull | (uint64_t(i + 1) << 4));
        t.links.push_back(TopoLink{leaf[i / down], i % down + 1, c, 1, 2, 1});
    }
    *out = std::move(t);
    return true;
}

std::string format_ibnetdiscover(const Topology& t)
{
    // Peers of every port, from the cable list.
    struct Peer {
        unsigned node, port;
        const TopoLink* link;
    };
    std::vector<std::map<unsigned, Peer>> peers(t.nodes.size());
    for (const TopoLink& l : t.links) {
        if (l.a >= t.nodes.size() || l.b >= t.nodes.size())
            continue;
        peers[l.a][l.a_port] = {l.b, l.b_port, &l};
        peers[l.b][l.b_port] = {l.a, l.a_port, &l};
    }
    auto rate = [](const TopoLink* l) {
        static const char* w[9] = {"", "1x", "4x", "", "8x", "", "", "", "12x"};
        uint8_t width = l ? l->width : 2, speed = l ? l->speed : 1;
        const char* sp = speed == 4 ? "QDR" : speed == 2 ? "DDR" : "SDR";
        return std::string(width < 9 && *w[width] ? w[width] : "4x") + sp;
    };
    std::string o = "#\n# Topology file: generated by ibemu\n#\n";
    char b[512];
    for (unsigned i = 0; i < t.nodes.size(); ++i) {
        const TopoNode& n = t.nodes[i];
        bool sw = n.kind == TopoNode::Kind::Switch;
        snprintf(b, sizeof b, "\nvendid=0x%x\ndevid=0x%x\nsysimgguid=0x%llx\n%s=0x%llx(%llx)\n", n.vendor_id,
                 n.device_id, (unsigned long long)n.sys_image_guid, sw ? "switchguid" : "caguid",
                 (unsigned long long)n.guid, (unsigned long long)n.guid);
        o += b;
        std::string desc = n.description.empty() ? n.id : n.description;
        snprintf(b, sizeof b, "%s\t%u \"%s\"\t\t# \"%s\"%s\n", sw ? "Switch" : "Ca", n.num_ports, n.id.c_str(),
                 desc.c_str(), sw ? " base port 0 lid 0 lmc 0" : "");
        o += b;
        for (auto& [port, pr] : peers[i]) {
            const TopoNode& p = t.nodes[pr.node];
            const TopoLink* lk = pr.link;
            std::string pdesc = p.description.empty() ? p.id : p.description;
            if (sw)
                snprintf(b, sizeof b, "[%u]\t\"%s\"[%u]\t\t# \"%s\" lid 0 %s\n", port, p.id.c_str(), pr.port,
                         pdesc.c_str(), rate(lk).c_str());
            else
                snprintf(b, sizeof b, "[%u](%llx) \t\"%s\"[%u]\t\t# lid 0 lmc 0 \"%s\" lid 0 %s\n", port,
                         (unsigned long long)(n.guid + port), p.id.c_str(), pr.port, pdesc.c_str(),
                         rate(lk).c_str());
            o += b;
        }
    }
    return o;
}

}  // namespace ibemu::fabric
