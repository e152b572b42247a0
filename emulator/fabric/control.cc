// SPDX-License-Identifier: GPL-2.0
//
// The fabric's control protocol: one command per line, words separated by
// blanks, a reply starting with "ok" or "error:". Ports are named
// <node>:<port>, node being a name, an id ("S-..."/"H-...") or a GUID.
//
//   help
//   show links | nodes | switch <node> | drops
//        (drops: every packet any link lost, by reason, summed over the
//        fabric, with the flow-control counters beside them)
//   link <node>:<port> up|down
//   drop <node>:<port> off | <percent>[%] | every <n>  [seed <n>]
//        (packets leaving that port; deterministic for a seed)
//   mtu <node>:<port> 256|512|1024|2048|4096
//   latency <node>:<port> <ns> [rate]
//   rate [on [burst <ns>] | off]
//        (the rate model on every link: no more than width x speed; burst:
//        idle wire time a late wake may make up for, default 5 ms; see link.h)
//   counters <node>:<port>
//   capture start <file> [pcap|erf|ib] [<node>:<port> ...] | capture stop
//        (pcap: LINKTYPE_ERF with ERF InfiniBand records, which tshark 4.0
//        decodes, the default; erf: a native ERF file; ib: LINKTYPE_INFINIBAND)
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "fabric/fabric.h"

namespace ibemu::fabric {
namespace {

constexpr size_t kMaxLine = 1024;
constexpr size_t kMaxWords = 64;

const char* const kHelp =
    "ok commands:\n"
    "  show links | show nodes | show switch <node> | show drops\n"
    "  link <node>:<port> up|down\n"
    "  drop <node>:<port> off | <percent>[%] | every <n>  [seed <n>]\n"
    "  mtu <node>:<port> 256|512|1024|2048|4096\n"
    "  latency <node>:<port> <ns> [rate]\n"
    "  rate [on [burst <ns>] | off]\n"
    "  counters <node>:<port>\n"
    "  capture start <file> [pcap|erf|ib] [<node>:<port> ...] | capture stop";

bool to_u64(std::string_view s, uint64_t* v)
{
    if (s.empty() || s.size() > 19)
        return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
    return ec == std::errc() && p == s.data() + s.size();
}

bool to_percent(std::string_view s, uint32_t* ppm)
{
    if (!s.empty() && s.back() == '%')
        s.remove_suffix(1);
    if (s.empty() || s.size() > 12)
        return false;
    double d = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d) || d < 0 || d > 100)
        return false;
    *ppm = uint32_t(std::lround(d * 10000.0));
    return true;
}

std::string error(const std::string& what) { return "error: " + what; }

}  // namespace

bool split_control_line(std::string_view line, std::vector<std::string_view>* words, std::string* err)
{
    words->clear();
    if (line.size() > kMaxLine) {
        *err = "line too long";
        return false;
    }
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n'))
            ++i;
        size_t s = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n')
            ++i;
        if (i > s)
            words->push_back(line.substr(s, i - s));
        if (words->size() > kMaxWords) {
            *err = "too many words";
            return false;
        }
    }
    for (std::string_view x : *words)
        for (char c : x)
            if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7f) {
                *err = "non-printable character";
                return false;
            }
    return true;
}

std::string Fabric::show_links() const
{
    std::ostringstream o;
    o << "ok " << links_.size() << " links";
    for (const auto& l : links_) {
        const LinkCounters& a = l->counters(0);
        const LinkCounters& b = l->counters(1);
        char line[256];
        std::snprintf(line, sizeof line,
                      "\n%s %s mtu %u latency %lluns tx %llu/%llu drop(mtu %llu/%llu fault %llu/%llu down %llu/%llu)%s%s",
                      l->name().c_str(), l->up() ? "up" : !l->admin_up() ? "down" : !l->plugged() ? "waiting" : "no-carrier",
                      unsigned(l->params().mtu), (unsigned long long)l->latency_ns(),
                      (unsigned long long)a.tx_packets, (unsigned long long)b.tx_packets,
                      (unsigned long long)a.dropped_mtu, (unsigned long long)b.dropped_mtu,
                      (unsigned long long)a.dropped_fault, (unsigned long long)b.dropped_fault,
                      (unsigned long long)a.dropped_down, (unsigned long long)b.dropped_down,
                      l->tap() ? " captured" : "", l->rate_model() ? " rate" : "");
        o << line;
    }
    return o.str();
}

std::string Fabric::show_drops() const
{
    LinkCounters t;
    for (const auto& l : links_) {
        for (unsigned side = 0; side < 2; ++side) {
            const LinkCounters& c = l->counters(side);
            t.dropped_down += c.dropped_down;
            t.dropped_mtu += c.dropped_mtu;
            t.dropped_fault += c.dropped_fault;
            t.dropped_overflow += c.dropped_overflow;
            t.dropped_loop += c.dropped_loop;
            t.dropped_storm += c.dropped_storm;
            t.credit_waits += c.credit_waits;
            t.over_credit += c.over_credit;
            t.refused += c.refused;
        }
    }
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "ok drops %llu fault %llu overflow %llu down %llu mtu %llu loop %llu storm %llu "
                  "credit_waits %llu over_credit %llu refused %llu",
                  (unsigned long long)t.dropped(), (unsigned long long)t.dropped_fault,
                  (unsigned long long)t.dropped_overflow, (unsigned long long)t.dropped_down,
                  (unsigned long long)t.dropped_mtu, (unsigned long long)t.dropped_loop,
                  (unsigned long long)t.dropped_storm, (unsigned long long)t.credit_waits,
                  (unsigned long long)t.over_credit, (unsigned long long)t.refused);
    return buf;
}

std::string Fabric::show_nodes() const
{
    std::ostringstream o;
    o << "ok " << topo_.nodes.size() << " nodes";
    for (unsigned i = 0; i < topo_.nodes.size(); ++i) {
        const TopoNode& n = topo_.nodes[i];
        char line[200];
        std::snprintf(line, sizeof line, "\n%s %s %s guid 0x%016llx ports %u", node_label(i).c_str(),
                      n.kind == TopoNode::Kind::Switch ? "switch" : "ca", n.id.c_str(),
                      (unsigned long long)n.guid, n.num_ports);
        o << line;
        if (const Switch* sw = nodes_[i].sw.get()) {
            o << " lid " << sw->lid() << " states";
            for (unsigned p = 0; p <= sw->num_ports(); ++p)
                o << ' ' << port_state_name(sw->port_state(p));
        }
    }
    return o.str();
}

std::string Fabric::show_switch(const Switch& sw) const
{
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line, "ok %s guid 0x%016llx lid %u sm_lid %u port_state_change %u smps_dropped %llu",
                  sw.name().c_str(), (unsigned long long)sw.config().node_guid, sw.lid(), sw.sm_lid(),
                  unsigned(sw.port_state_change()), (unsigned long long)sw.dropped_smps());
    o << line;
    for (unsigned p = 0; p <= sw.num_ports(); ++p) {
        const SwitchPortCounters& c = sw.counters(p);
        std::snprintf(line, sizeof line,
                      "\nport %u %s %s rx %llu tx %llu rcv_err %llu relay_err %llu xmit_disc %llu smps %llu traps %llu",
                      p, port_state_name(sw.port_state(p)), phys_state_name(sw.phys_state(p)),
                      (unsigned long long)c.rcv_packets, (unsigned long long)c.xmit_packets,
                      (unsigned long long)c.rcv_discards, (unsigned long long)c.relay_errors,
                      (unsigned long long)c.xmit_discards, (unsigned long long)c.smps_handled,
                      (unsigned long long)c.traps_sent);
        o << line;
    }
    unsigned routes = 0;
    o << "\nlft";
    for (unsigned lid = 1; lid < sw.config().lft_cap && routes < 256; ++lid) {
        uint8_t port = sw.lft(uint16_t(lid));
        if (port != 0xff) {
            o << ' ' << lid << ':' << unsigned(port);
            ++routes;
        }
    }
    return o.str();
}

std::string Fabric::control(std::string_view line)
{
    std::vector<std::string_view> w;
    std::string err;
    if (!split_control_line(line, &w, &err))
        return error(err);
    if (w.empty())
        return error("empty command (try help)");
    if (!built_ && w[0] != "help")
        return error("no fabric");

    // <node>:<port> -> link and side.
    auto port_arg = [&](std::string_view a, Link** l, unsigned* side, std::string* why) {
        size_t c = a.rfind(':');
        uint64_t port = 0;
        if (c == std::string_view::npos || c == 0 || !to_u64(a.substr(c + 1), &port) || port > 254) {
            *why = "expected <node>:<port>, got '" + std::string(a.substr(0, 64)) + "'";
            return false;
        }
        std::string_view node = a.substr(0, c);
        if (!topo_.find(node)) {
            *why = "no node '" + std::string(node.substr(0, 64)) + "'";
            return false;
        }
        *l = link_at(node, unsigned(port), side);
        if (!*l) {
            *why = "no link at " + std::string(a.substr(0, 80));
            return false;
        }
        return true;
    };

    Link* l = nullptr;
    unsigned side = 0;
    std::string_view cmd = w[0];
    if (cmd == "help")
        return kHelp;
    if (cmd == "show") {
        if (w.size() == 2 && w[1] == "links")
            return show_links();
        if (w.size() == 2 && w[1] == "drops")
            return show_drops();
        if (w.size() == 2 && w[1] == "nodes")
            return show_nodes();
        if (w.size() == 3 && w[1] == "switch") {
            Switch* sw = find_switch(w[2]);
            if (!sw)
                return error("no switch '" + std::string(w[2].substr(0, 64)) + "'");
            return show_switch(*sw);
        }
        return error("usage: show links|nodes|switch <node>");
    }
    if (cmd == "link") {
        if (w.size() != 3 || (w[2] != "up" && w[2] != "down"))
            return error("usage: link <node>:<port> up|down");
        if (!port_arg(w[1], &l, &side, &err))
            return error(err);
        l->set_admin_up(w[2] == "up");
        return "ok " + l->name() + (l->up() ? " up" : l->admin_up() ? " waiting for both ends" : " down");
    }
    if (cmd == "drop") {
        if (w.size() < 3)
            return error("usage: drop <node>:<port> off|<percent>|every <n> [seed <n>]");
        if (!port_arg(w[1], &l, &side, &err))
            return error(err);
        FaultConfig f;
        size_t next = 3;
        if (w[2] == "off") {
        } else if (w[2] == "every") {
            uint64_t n = 0;
            if (w.size() < 4 || !to_u64(w[3], &n) || n < 1 || n > 0xffffffffu)
                return error("drop every: expected a count >= 1");
            f.drop_every = uint32_t(n);
            next = 4;
        } else if (!to_percent(w[2], &f.drop_ppm)) {
            return error("drop: expected off, every <n> or a percentage 0..100");
        }
        if (next < w.size()) {
            uint64_t seed = 0;
            if (w.size() != next + 2 || w[next] != "seed" || !to_u64(w[next + 1], &seed))
                return error("drop: trailing words (only 'seed <n>')");
            f.seed = seed;
        }
        l->set_fault(side, f);
        char buf[160];
        std::snprintf(buf, sizeof buf, "ok %s from side %u: every %u, %u ppm, seed %llu", l->name().c_str(), side,
                      f.drop_every, f.drop_ppm, (unsigned long long)f.seed);
        return buf;
    }
    if (cmd == "mtu") {
        uint64_t m = 0;
        if (w.size() != 3 || !to_u64(w[2], &m) || (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096))
            return error("usage: mtu <node>:<port> 256|512|1024|2048|4096");
        if (!port_arg(w[1], &l, &side, &err))
            return error(err);
        l->set_mtu(uint16_t(m));
        return "ok " + l->name() + " mtu " + std::to_string(m);
    }
    if (cmd == "latency") {
        uint64_t ns = 0;
        if (w.size() < 3 || w.size() > 4 || !to_u64(w[2], &ns) || ns > 10000000000ull ||
            (w.size() == 4 && w[3] != "rate"))
            return error("usage: latency <node>:<port> <ns> [rate]");
        if (!port_arg(w[1], &l, &side, &err))
            return error(err);
        l->set_latency(ns, w.size() == 4);
        return "ok " + l->name() + " latency " + std::to_string(ns) + "ns" + (w.size() == 4 ? " rate" : "");
    }
    if (cmd == "rate") {
        // The whole fabric at once; a link's own `latency ... rate` still
        // sets one link.
        uint64_t burst = kDefaultRateBurstNs;
        bool on = false;
        if (w.size() == 1) {
            unsigned n = 0;
            for (const auto& x : links_)
                n += x->rate_model() ? 1 : 0;
            return "ok rate on " + std::to_string(n) + " of " + std::to_string(links_.size()) + " links";
        }
        if (w[1] == "on" && (w.size() == 2 || (w.size() == 4 && w[2] == "burst" && to_u64(w[3], &burst) &&
                                               burst <= 1000000000ull)))
            on = true;
        else if (!(w[1] == "off" && w.size() == 2))
            return error("usage: rate [on [burst <ns>] | off]");
        set_rate_model(on, burst);
        return on ? "ok rate on, burst " + std::to_string(burst) + "ns" : std::string("ok rate off");
    }
    if (cmd == "counters") {
        if (w.size() != 2)
            return error("usage: counters <node>:<port>");
        if (!port_arg(w[1], &l, &side, &err))
            return error(err);
        const LinkCounters& c = l->counters(side);
        char buf[440];
        std::snprintf(buf, sizeof buf,
                      "ok tx_packets %llu tx_bytes %llu delivered %llu deferred %llu dropped_down %llu "
                      "dropped_mtu %llu dropped_fault %llu dropped_overflow %llu dropped_loop %llu "
                      "dropped_storm %llu credit_waits %llu over_credit %llu refused %llu",
                      (unsigned long long)c.tx_packets, (unsigned long long)c.tx_bytes,
                      (unsigned long long)c.delivered, (unsigned long long)c.deferred,
                      (unsigned long long)c.dropped_down, (unsigned long long)c.dropped_mtu,
                      (unsigned long long)c.dropped_fault, (unsigned long long)c.dropped_overflow,
                      (unsigned long long)c.dropped_loop, (unsigned long long)c.dropped_storm,
                      (unsigned long long)c.credit_waits, (unsigned long long)c.over_credit,
                      (unsigned long long)c.refused);
        return buf;
    }
    if (cmd == "capture") {
        if (w.size() == 2 && w[1] == "stop") {
            if (!capture_)
                return error("not capturing");
            uint64_t n = capture_->writer().packets();
            std::string path = capture_->writer().path();
            capture_stop();
            return "ok " + path + " " + std::to_string(n) + " packets";
        }
        if (w.size() >= 3 && w[1] == "start") {
            std::vector<Link*> sel;
            size_t k = 3;
            PcapFormat fmt = PcapFormat::PcapErf;
            if (k < w.size() && parse_capture_format(w[k], &fmt))
                ++k;
            for (; k < w.size(); ++k) {
                if (!port_arg(w[k], &l, &side, &err))
                    return error(err);
                sel.push_back(l);
            }
            if (!capture_start(std::string(w[2]), sel, &err, fmt))
                return error(err);
            return "ok capturing to " + std::string(w[2]);
        }
        return error("usage: capture start <file> [pcap|erf|ib] [<node>:<port> ...] | capture stop");
    }
    return error("unknown command '" + std::string(cmd.substr(0, 32)) + "' (try help)");
}

}  // namespace ibemu::fabric
