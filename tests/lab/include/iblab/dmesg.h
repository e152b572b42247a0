// SPDX-License-Identifier: GPL-2.0
// Kernel log checker: finds the lines that make a run fail, as blktests'
// _check_dmesg does (WARNING, BUG, Oops, lockdep, KASAN/UBSAN, kmemleak,
// hung tasks, RCU stalls, panics). Matching is done on the message text
// after the log prefixes are removed ("<4>", "[  1.234567]", "kern  :warn  : ",
// /dev/kmsg "4,123,456,-;"), and most rules are anchored at the start of the
// message, so that ordinary lines such as "RETBleed: WARNING: Spectre v2
// mitigation leaves CPU vulnerable" or a command line containing "oops=panic"
// do not trip the check.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace iblab {

struct DmesgHit {
	size_t line_no = 0;  // 1-based, in the text given to check()
	std::string line;    // the whole original line
	std::string rule;    // name of the rule that matched
};

class DmesgChecker {
public:
	DmesgChecker();

	// Lines whose message matches `regex` (ECMAScript) are never reported,
	// like blktests' DMESG_FILTER.
	void ignore(const std::string &regex);

	// The name of the first rule matching `line`, or nullopt.
	std::optional<std::string> match(std::string_view line) const;

	std::vector<DmesgHit> check(std::string_view text) const;

	// Removes syslog/kmsg/dmesg prefixes and timestamps.
	static std::string_view strip_prefix(std::string_view line);

	// "[ 12.345678] ..." -> 12.345678; nullopt if the line has no timestamp.
	static std::optional<double> timestamp(std::string_view line);

private:
	struct Rule {
		std::string name;
		std::regex re;
	};
	std::vector<Rule> rules_;
	std::vector<std::regex> ignores_;
};

// Human-readable summary of hits ("guest vm0: dmesg.txt:123: [rule] line").
std::string format_hits(const std::string &where, const std::vector<DmesgHit> &hits,
			size_t max_lines = 20);

}  // namespace iblab
