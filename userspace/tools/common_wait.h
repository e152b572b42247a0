// SPDX-License-Identifier: GPL-2.0
// wait_for<T>() of common.h.
#ifndef IBCM_TOOLS_COMMON_WAIT_H
#define IBCM_TOOLS_COMMON_WAIT_H

#include <string>
#include <typeinfo>

namespace ibcm::tools {

std::string describe_unexpected(const Event &ev);

template <typename T> T wait_for(Device &cm, std::uint32_t id, std::chrono::milliseconds timeout)
{
	const auto deadline = std::chrono::steady_clock::now() + timeout;
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			throw std::runtime_error(std::string("timed out waiting for ") + typeid(T).name());
		std::optional<Event> ev = cm.next_event(left);
		if (!ev)
			continue;
		// a REQ or SIDR_REQ comes with the new id the kernel made for it
		if (header(*ev).id != id && !std::holds_alternative<ReqReceived>(*ev) &&
		    !std::holds_alternative<SidrReqReceived>(*ev))
			continue;
		if (auto *t = std::get_if<T>(&*ev))
			return std::move(*t);
		if (std::holds_alternative<MraReceived>(*ev))
			continue;
		throw CmEventError(describe_unexpected(*ev), event_name(*ev));
	}
}

} // namespace ibcm::tools

#endif
