// SPDX-License-Identifier: GPL-2.0
// ibcm::Transport: how a Device reaches ib_ucm. The real one writes to
// /dev/infiniband/ucmN; unit tests inject a fake kernel.
#ifndef IBCM_TRANSPORT_H
#define IBCM_TRANSPORT_H

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace ibcm {

class Transport {
public:
	virtual ~Transport() = default;
	// One command: struct ib_ucm_cmd_hdr and its payload in one write().
	// Returns the byte count written; throws std::system_error with the
	// errno. EAGAIN from the EVENT command means "no event queued".
	virtual std::size_t write(std::span<const std::byte> frame) = 0;
	// A descriptor poll() reports readable when an event is queued, or -1.
	virtual int fd() const noexcept = 0;
	// Waits until an event is queued or @timeout passes; false on timeout.
	// A negative timeout waits for ever.
	virtual bool wait(std::chrono::milliseconds timeout) = 0;
};

// The character device, opened read-write, close-on-exec and non-blocking
// (the EVENT command then fails with EAGAIN instead of sleeping).
std::unique_ptr<Transport> open_file_transport(const std::filesystem::path &node);

} // namespace ibcm

#endif
