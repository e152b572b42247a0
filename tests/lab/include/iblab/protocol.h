// SPDX-License-Identifier: GPL-2.0
// Wire protocol of the VM lab. The same framing is used on two channels:
//   * lab <-> guest agent, over a virtio-serial port (QEMU chardev socket);
//   * `iblab exec` client <-> `iblab run` control socket (IBLAB_CTL).
//
// A frame is a 16-byte little-endian header followed by the payload:
//   u32 magic ("IBLB")  u16 type  u16 version  u32 id  u32 payload length
// Payload fields are u32/u64/i32 (little endian) and strings (u32 length +
// bytes). A decoder that meets a bad header skips bytes up to the next magic,
// so a reconnect in the middle of a frame cannot wedge the channel.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace iblab::proto {

inline constexpr uint32_t kMagic = 0x424c4249;  // "IBLB" in memory order
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kHeaderSize = 16;
inline constexpr uint32_t kMaxPayload = 16u << 20;

enum class Type : uint16_t {
	Hello = 1,     // agent -> lab: HelloInfo (also the answer to Ping)
	Ping = 2,      // lab -> agent: empty
	Exec = 3,      // lab -> agent, client -> ctl: ExecRequest
	Output = 4,    // agent -> lab, ctl -> client: raw output bytes
	Exit = 5,      // agent -> lab, ctl -> client: ExitInfo; ends a request
	Kill = 6,      // lab -> agent: kill the process group of request `id`
	Poweroff = 7,  // lab -> agent: sync and power the guest off
	List = 8,      // client -> ctl: empty
	ListReply = 9, // ctl -> client: strings, one line per guest
};

struct Frame {
	Type type{};
	uint32_t id = 0;
	std::string payload;
};

std::string encode(const Frame &f);

class DecodeError : public std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Incremental decoder: feed() bytes as they arrive, then next() until empty.
class Decoder {
public:
	void feed(std::string_view bytes);
	std::optional<Frame> next();
	size_t skipped_bytes() const { return skipped_; }
	size_t buffered() const { return buf_.size() - pos_; }

private:
	std::string buf_;
	size_t pos_ = 0;
	size_t skipped_ = 0;
};

// Payload builder / parser.
class Writer {
public:
	Writer &u32(uint32_t v);
	Writer &i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
	Writer &u64(uint64_t v);
	Writer &str(std::string_view s);
	std::string take() { return std::move(out_); }

private:
	std::string out_;
};

class Reader {
public:
	explicit Reader(std::string_view in) : in_(in) {}
	uint32_t u32();
	int32_t i32() { return static_cast<int32_t>(u32()); }
	uint64_t u64();
	std::string str();
	bool at_end() const { return pos_ == in_.size(); }

private:
	std::string_view in_;
	size_t pos_ = 0;
};

inline constexpr uint32_t kExecBackground = 1u << 0;

struct ExecRequest {
	std::string guest;        // used on the control socket only
	std::string command;      // run with /bin/sh -c
	uint32_t timeout_ms = 0;  // 0: no timeout
	uint32_t flags = 0;       // kExecBackground
	std::string encode() const;
	static ExecRequest decode(std::string_view payload);
};

inline constexpr uint32_t kExitTimedOut = 1u << 0;
inline constexpr uint32_t kExitKilled = 1u << 1;
inline constexpr uint32_t kExitError = 1u << 2;  // could not run; see message

struct ExitInfo {
	int32_t status = -1;  // exit code, or 128 + signal number
	uint32_t flags = 0;
	std::string message;
	std::string encode() const;
	static ExitInfo decode(std::string_view payload);
};

struct HelloInfo {
	std::string name;
	std::string kernel;
	uint32_t agent_pid = 0;
	std::string encode() const;
	static HelloInfo decode(std::string_view payload);
};

}  // namespace iblab::proto
