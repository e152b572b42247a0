// SPDX-License-Identifier: GPL-2.0
//
// Fuzz target: the shim protocol (server/proto.*). The input is a byte
// stream from a shim, cut into reads: [u8 n][n bytes] repeated. Every
// message FrameBuffer hands out goes through check_from_shim; what passes
// is applied, as the server does, to a real HCA model (config space, BARs,
// reset); a HELLO's layout is checked against a memfd size taken from the
// message. After a framing error the stream is dead, as in the server.
#include <string>

#include "common/log.h"
#include "fuzz/fuzz_support.h"
#include "hca/mthca.h"
#include "hca/test_support.h"
#include "server/proto.h"

using namespace ibemu;
using namespace ibemu::shim;

namespace {

template <typename T>
std::vector<uint8_t> bytes_of(const T& m)
{
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&m);
    return std::vector<uint8_t>(p, p + sizeof(T));
}

void write_seeds(const std::string& dir)
{
    auto chunked = [](const std::vector<uint8_t>& stream, unsigned chunk) {
        fuzz::Writer w;
        for (size_t i = 0; i < stream.size(); i += chunk) {
            size_t n = std::min<size_t>(chunk, stream.size() - i);
            w.u8(uint8_t(n));
            w.bytes(std::span<const uint8_t>(stream.data() + i, n));
        }
        return w.buf;
    };
    ibemu_msg_hello h;
    set_header(h, IBEMU_MSG_HELLO, 1);
    h.magic = IBEMU_SHIM_MAGIC;
    h.version = IBEMU_SHIM_VERSION;
    h.nregions = 2;
    std::strcpy(h.node, "vm0");
    h.regions[0] = {0, 0x80000000ull, 0};
    h.regions[1] = {0x100000000ull, 0x40000000ull, 0x80000000ull};
    std::vector<uint8_t> s = bytes_of(h);
    ibemu_msg_cfg_write cw;
    set_header(cw, IBEMU_MSG_CFG_WRITE, 2);
    cw.offset = 4, cw.size = 2, cw.value = 6;
    auto add = [&](const std::vector<uint8_t>& m) { s.insert(s.end(), m.begin(), m.end()); };
    add(bytes_of(cw));
    ibemu_msg_cfg_read cr;
    set_header(cr, IBEMU_MSG_CFG_READ, 3);
    cr.offset = 0, cr.size = 4;
    add(bytes_of(cr));
    ibemu_msg_mmio_read mr;
    set_header(mr, IBEMU_MSG_MMIO_READ, 4);
    mr.bar = 0, mr.offset = 0x80698, mr.size = 4;
    add(bytes_of(mr));
    ibemu_msg_mmio_write mw;
    set_header(mw, IBEMU_MSG_MMIO_WRITE, 5);
    mw.bar = 0, mw.offset = 0x80680 + 24, mw.size = 4, mw.value = 0x01000080;
    add(bytes_of(mw));
    mw.bar = 2, mw.offset = 0x18, mw.size = 8, mw.value = 0x1122334455667788ull;
    add(bytes_of(mw));
    ibemu_msg_sync sy;
    set_header(sy, IBEMU_MSG_SYNC, 6);
    add(bytes_of(sy));
    ibemu_msg_reset rs;
    set_header(rs, IBEMU_MSG_RESET, 7);
    add(bytes_of(rs));
    fuzz::save_seed(dir, "session_whole", chunked(s, 255));
    fuzz::save_seed(dir, "session_small_reads", chunked(s, 7));
    fuzz::save_seed(dir, "hello_only", chunked(bytes_of(h), 200));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    Log::set_level(LogLevel::Error);
    fuzz::maybe_write_seeds(argc, argv, write_seeds);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    mthca::test::FakeMemory mem(1u << 20);
    mthca::test::RecordingIrq irq;
    MthcaConfig cfg;
    cfg.name = "fuzz";
    auto fn = make_mthca(cfg, mem, irq);
    const PciIdentity& id = fn->identity();
    FrameBuffer fb;
    while (!in.empty()) {
        auto chunk = in.bytes(in.u8());
        fb.append(chunk.data(), chunk.size());
        for (;;) {
            const uint8_t* msg;
            size_t len;
            std::string err;
            FrameBuffer::Result r = fb.next(&msg, &len, &err);
            if (r == FrameBuffer::Result::NeedMore)
                break;
            if (r == FrameBuffer::Result::Error) {
                if (err.empty())
                    fuzz::invariant_failed("framing error without a reason");
                return 0;
            }
            if (len < sizeof(ibemu_shim_hdr))
                fuzz::invariant_failed("a message shorter than its header");
            if (!check_from_shim(msg, len).empty())
                return 0;  // the server closes the connection
            auto h = decode<ibemu_shim_hdr>(msg);
            switch (h.type) {
            case IBEMU_MSG_HELLO: {
                auto m = decode<ibemu_msg_hello>(msg);
                (void)hello_node(m);
                (void)check_hello_layout(m, m.regions[0].offset ^ m.regions[0].size);
                (void)check_hello_layout(m, ~0ull);
                break;
            }
            case IBEMU_MSG_CFG_WRITE: {
                auto m = decode<ibemu_msg_cfg_write>(msg);
                fn->config_write(m.offset, m.size, m.value);
                break;
            }
            case IBEMU_MSG_CFG_READ: {
                auto m = decode<ibemu_msg_cfg_read>(msg);
                (void)fn->config_read(m.offset, m.size);
                break;
            }
            case IBEMU_MSG_MMIO_WRITE:
            case IBEMU_MSG_MMIO_READ: {
                auto m = decode<ibemu_msg_mmio_read>(msg);
                uint64_t bsize = id.bars[m.bar].size;
                if (!bsize || m.offset >= bsize || m.size > bsize - m.offset)
                    return 0;  // the server drops the connection
                if (h.type == IBEMU_MSG_MMIO_WRITE) {
                    auto w = decode<ibemu_msg_mmio_write>(msg);
                    fn->mmio_write(w.bar, w.offset, w.size, w.value);
                } else {
                    (void)fn->mmio_read(m.bar, m.offset, m.size);
                }
                break;
            }
            case IBEMU_MSG_RESET:
                fn->reset();
                break;
            default:
                break;
            }
        }
    }
    return 0;
}
