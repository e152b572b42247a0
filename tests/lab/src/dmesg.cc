// SPDX-License-Identifier: GPL-2.0
#include "iblab/dmesg.h"

#include <cstdlib>

namespace iblab {
namespace {

constexpr auto kFlags = std::regex::ECMAScript | std::regex::optimize;

// Rules on the message text (prefix already stripped).
struct RuleSpec {
	const char *name;
	const char *re;
};

constexpr RuleSpec kRules[] = {
	// WARN_ON() and friends: "WARNING: CPU: 0 PID: 1 at file.c:12 fn+0x1/0x2",
	// and the lockdep reports, which 6.x prints as "WARNING: <what>".
	{"warning", R"(^WARNING:)"},
	{"cut-here", R"(^-+\[ cut here \]-+\s*$)"},
	// BUG(), "BUG: unable to handle page fault", "BUG: KASAN: ...",
	// "BUG: sleeping function called from invalid context",
	// "watchdog: BUG: soft lockup - CPU#0 stuck", and SLUB's
	// "BUG kmalloc-64 (Tainted: G B): Poison overwritten".
	{"bug", R"(^(kernel BUG at |BUG: |watchdog: BUG: |BUG [^ ]+ \(.*\): ))"},
	{"oops", R"(^(Oops(: | - |#)|general protection fault|Internal error: ))"},
	{"panic", R"(^Kernel panic - not syncing)"},
	{"ubsan", R"(^UBSAN: )"},
	{"kasan", R"(^(BUG|WARNING|ERROR): KASAN: )"},
	// Lockdep, also in the older "[ INFO: ... ]" form.
	{"lockdep",
	 R"((possible circular locking dependency detected|possible recursive locking detected|inconsistent lock state|possible irq lock inversion dependency detected|suspicious RCU usage|bad unlock balance detected|held lock freed|lock held when returning to user space|-safe -> [A-Z]+-unsafe lock order detected|Possible unsafe locking scenario))"},
	{"kmemleak", R"((^kmemleak: [0-9]+ new suspected memory leaks|^unreferenced object 0x[0-9a-f]+ \(size ))"},
	{"hung-task", R"(^INFO: task .* blocked for more than [0-9]+ seconds)"},
	{"rcu-stall", R"((^rcu: INFO: .*detected stall|^INFO: rcu_(sched|preempt|bh) (self-)?detected stall))"},
	{"hard-lockup", R"(Watchdog detected hard LOCKUP)"},
	{"call-trace", R"(^Call Trace:\s*$)"},
};

std::string_view ltrim_spaces(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
		s.remove_prefix(1);
	return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

DmesgChecker::DmesgChecker()
{
	for (const auto &r : kRules)
		rules_.push_back({r.name, std::regex(r.re, kFlags)});
}

void DmesgChecker::ignore(const std::string &regex)
{
	ignores_.emplace_back(regex, kFlags);
}

std::string_view DmesgChecker::strip_prefix(std::string_view s)
{
	while (!s.empty() && (s.back() == '\r' || s.back() == '\n'))
		s.remove_suffix(1);
	// Syslog priority "<4>".
	if (s.size() > 2 && s[0] == '<') {
		size_t i = 1;
		while (i < s.size() && is_digit(s[i]))
			i++;
		if (i > 1 && i < s.size() && s[i] == '>')
			s.remove_prefix(i + 1);
	}
	// /dev/kmsg record "4,123,456,-;" (or with flags "c"/"+").
	{
		size_t semi = s.find(';');
		if (semi != std::string_view::npos && semi < 40 && !s.empty() && is_digit(s[0])) {
			std::string_view head = s.substr(0, semi);
			int commas = 0;
			bool ok = true;
			for (char c : head) {
				if (c == ',')
					commas++;
				else if (!is_digit(c) && c != '-' && c != '+' && c != 'c')
					ok = false;
			}
			if (ok && commas >= 3)
				s.remove_prefix(semi + 1);
		}
	}
	// `dmesg -x`: "kern  :warn  : ".
	{
		static const std::regex facility(R"(^[a-z]+ *:[a-z]+ *: )", kFlags);
		std::match_results<std::string_view::const_iterator> m;
		if (std::regex_search(s.begin(), s.end(), m, facility))
			s.remove_prefix(m.length(0));
	}
	// "[   12.345678]" and an optional caller id "[    T1]".
	for (int pass = 0; pass < 2; pass++) {
		std::string_view t = ltrim_spaces(s);
		if (t.empty() || t[0] != '[')
			break;
		size_t close = t.find(']');
		if (close == std::string_view::npos || close > 24)
			break;
		std::string_view inner = ltrim_spaces(t.substr(1, close - 1));
		bool ok = !inner.empty();
		bool ts = true;
		for (char c : inner)
			if (!is_digit(c) && c != '.')
				ts = false;
		if (!ts) {
			// Caller id: T123 or C0.
			ok = inner.size() >= 2 && (inner[0] == 'T' || inner[0] == 'C');
			for (size_t i = 1; ok && i < inner.size(); i++)
				ok = is_digit(inner[i]);
		}
		if (!ok)
			break;
		s = t.substr(close + 1);
		if (!s.empty() && s[0] == ' ')
			s.remove_prefix(1);
	}
	return s;
}

std::optional<double> DmesgChecker::timestamp(std::string_view line)
{
	size_t open = line.find('[');
	if (open == std::string_view::npos || open > 32)
		return std::nullopt;
	size_t close = line.find(']', open);
	if (close == std::string_view::npos || close - open > 24)
		return std::nullopt;
	std::string inner(ltrim_spaces(line.substr(open + 1, close - open - 1)));
	if (inner.empty() || !is_digit(inner[0]) || inner.find('.') == std::string::npos)
		return std::nullopt;
	for (char c : inner)
		if (!is_digit(c) && c != '.')
			return std::nullopt;
	return std::strtod(inner.c_str(), nullptr);
}

std::optional<std::string> DmesgChecker::match(std::string_view line) const
{
	std::string_view msg = strip_prefix(line);
	for (const auto &re : ignores_)
		if (std::regex_search(msg.begin(), msg.end(), re))
			return std::nullopt;
	for (const auto &r : rules_)
		if (std::regex_search(msg.begin(), msg.end(), r.re))
			return r.name;
	return std::nullopt;
}

std::vector<DmesgHit> DmesgChecker::check(std::string_view text) const
{
	std::vector<DmesgHit> hits;
	size_t line_no = 0;
	while (!text.empty()) {
		size_t nl = text.find('\n');
		std::string_view line = text.substr(0, nl);
		text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
		line_no++;
		if (auto rule = match(line)) {
			while (!line.empty() && (line.back() == '\r'))
				line.remove_suffix(1);
			hits.push_back({line_no, std::string(line), *rule});
		}
	}
	return hits;
}

std::string format_hits(const std::string &where, const std::vector<DmesgHit> &hits, size_t max_lines)
{
	std::string out;
	size_t n = 0;
	for (const auto &h : hits) {
		if (n++ == max_lines) {
			out += where + ": ... " + std::to_string(hits.size() - max_lines) + " more\n";
			break;
		}
		out += where + ":" + std::to_string(h.line_no) + ": [" + h.rule + "] " + h.line + "\n";
	}
	return out;
}

}  // namespace iblab
