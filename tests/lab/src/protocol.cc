// SPDX-License-Identifier: GPL-2.0
#include "iblab/protocol.h"

#include <cstring>

namespace iblab::proto {
namespace {

void put_le(std::string &out, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
	return v;
}

}  // namespace

std::string encode(const Frame &f)
{
	if (f.payload.size() > kMaxPayload)
		throw std::length_error("iblab frame payload too large");
	std::string out;
	out.reserve(kHeaderSize + f.payload.size());
	put_le(out, kMagic, 4);
	put_le(out, static_cast<uint16_t>(f.type), 2);
	put_le(out, kVersion, 2);
	put_le(out, f.id, 4);
	put_le(out, f.payload.size(), 4);
	out += f.payload;
	return out;
}

void Decoder::feed(std::string_view bytes)
{
	if (pos_ > 0 && pos_ >= buf_.size() / 2) {
		buf_.erase(0, pos_);
		pos_ = 0;
	}
	buf_.append(bytes);
}

std::optional<Frame> Decoder::next()
{
	for (;;) {
		if (buf_.size() - pos_ < kHeaderSize)
			return std::nullopt;
		const char *h = buf_.data() + pos_;
		uint32_t magic = get_le(h, 4);
		uint16_t version = get_le(h + 6, 2);
		uint32_t len = get_le(h + 12, 4);
		if (magic != kMagic || version != kVersion || len > kMaxPayload) {
			// Resynchronise: drop one byte and look for the next magic.
			pos_++;
			skipped_++;
			while (buf_.size() - pos_ >= 4 && get_le(buf_.data() + pos_, 4) != kMagic) {
				pos_++;
				skipped_++;
			}
			continue;
		}
		if (buf_.size() - pos_ < kHeaderSize + len)
			return std::nullopt;
		Frame f;
		f.type = static_cast<Type>(get_le(h + 4, 2));
		f.id = get_le(h + 8, 4);
		f.payload.assign(h + kHeaderSize, len);
		pos_ += kHeaderSize + len;
		return f;
	}
}

Writer &Writer::u32(uint32_t v)
{
	put_le(out_, v, 4);
	return *this;
}

Writer &Writer::u64(uint64_t v)
{
	put_le(out_, v, 8);
	return *this;
}

Writer &Writer::str(std::string_view s)
{
	put_le(out_, s.size(), 4);
	out_.append(s);
	return *this;
}

uint32_t Reader::u32()
{
	if (in_.size() - pos_ < 4)
		throw DecodeError("truncated u32");
	uint32_t v = get_le(in_.data() + pos_, 4);
	pos_ += 4;
	return v;
}

uint64_t Reader::u64()
{
	if (in_.size() - pos_ < 8)
		throw DecodeError("truncated u64");
	uint64_t v = get_le(in_.data() + pos_, 8);
	pos_ += 8;
	return v;
}

std::string Reader::str()
{
	uint32_t len = u32();
	if (in_.size() - pos_ < len)
		throw DecodeError("truncated string");
	std::string s(in_.substr(pos_, len));
	pos_ += len;
	return s;
}

std::string ExecRequest::encode() const
{
	return Writer().str(guest).str(command).u32(timeout_ms).u32(flags).take();
}

ExecRequest ExecRequest::decode(std::string_view payload)
{
	Reader r(payload);
	ExecRequest e;
	e.guest = r.str();
	e.command = r.str();
	e.timeout_ms = r.u32();
	e.flags = r.u32();
	return e;
}

std::string ExitInfo::encode() const
{
	return Writer().i32(status).u32(flags).str(message).take();
}

ExitInfo ExitInfo::decode(std::string_view payload)
{
	Reader r(payload);
	ExitInfo e;
	e.status = r.i32();
	e.flags = r.u32();
	e.message = r.str();
	return e;
}

std::string HelloInfo::encode() const
{
	return Writer().str(name).str(kernel).u32(agent_pid).take();
}

HelloInfo HelloInfo::decode(std::string_view payload)
{
	Reader r(payload);
	HelloInfo h;
	h.name = r.str();
	h.kernel = r.str();
	h.agent_pid = r.u32();
	return h;
}

}  // namespace iblab::proto
