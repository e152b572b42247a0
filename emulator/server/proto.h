// SPDX-License-Identifier: GPL-2.0
//
// The emulator's side of the shim wire protocol (qemu/ibemu-shim-proto.h):
// framing of the byte stream into messages, validation of what a shim sends,
// and builders for what the emulator sends back.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hca/pci_function.h"
#include "qemu/ibemu-shim-proto.h"

static_assert(std::endian::native == std::endian::little,
              "the shim protocol structs are used in place: little-endian hosts only");

namespace ibemu::shim {

// Collects stream bytes and hands out whole messages. The header is checked
// as soon as it is complete, so a bad length never makes us wait for bytes
// that will not come.
class FrameBuffer {
public:
    enum class Result { Message, NeedMore, Error };

    void append(const void* data, size_t len);

    // On Message, msg/len point into the buffer until the next call of
    // next() or append().
    Result next(const uint8_t** msg, size_t* len, std::string* error);
    size_t buffered() const { return used_ - start_; }

private:
    std::vector<uint8_t> buf_;
    size_t start_ = 0;  // first unconsumed byte
    size_t used_ = 0;   // end of received bytes
};

// Header checks common to every message: known type, exact length, zero
// flags/reserved. Returns an empty string if fine, else the reason.
std::string check_header(const ibemu_shim_hdr& h);

// Checks of a complete message sent by a shim (HELLO, CFG_*, MMIO_*,
// RESET). Messages only an emulator may send are refused. HELLO's magic and
// version are not checked here: the caller answers those with a WELCOME
// that says why.
std::string check_from_shim(const uint8_t* msg, size_t len);

// HELLO layout: node name, regions (nonzero, no wrap, no overlap in either
// guest-physical space or the memfd). memfd_size bounds the offsets.
std::string check_hello_layout(const ibemu_msg_hello& h, uint64_t memfd_size);

// The node name of a HELLO that passed check_from_shim.
std::string hello_node(const ibemu_msg_hello& h);

template <typename T>
T decode(const uint8_t* msg)
{
    T v;
    std::memcpy(&v, msg, sizeof(T));
    return v;
}

template <typename T>
void set_header(T& m, uint16_t type, uint32_t tag)
{
    std::memset(&m, 0, sizeof(m));
    m.hdr.type = type;
    m.hdr.length = sizeof(T);
    m.hdr.tag = tag;
}

ibemu_msg_welcome make_welcome(uint32_t tag, const PciIdentity& id);
ibemu_msg_welcome make_refusal(uint32_t tag, int32_t status, const std::string& text);

}  // namespace ibemu::shim
