// SPDX-License-Identifier: GPL-2.0
//
// IBA wire formats the QP engine speaks (IBA 1.x chapter 9): LRH, GRH,
// BTH and the extended transport headers, the BTH opcodes, AETH
// syndromes; and the mthca WQE/CQE encodings (the driver's mthca_wqe.h,
// mthca_cq.c and mthca_dev.h are the behavioural reference).
#pragma once

#include <cstdint>

#include "ib/headers.h"

namespace ibemu::mthca::iba {

// LRH, GRH, BTH and DETH come from emulator/ib/headers.h (shared with the
// fabric); the extended transport headers only the QP engine parses are here.
inline constexpr unsigned kLrhLen = ib::lrh::kSize, kGrhLen = ib::grh::kSize, kBthLen = ib::bth::kSize,
                          kDethLen = ib::deth::kSize, kRethLen = 16, kAethLen = 4, kAtomicEthLen = 28,
                          kAtomicAckLen = 8, kImmLen = 4;

// LRH link next header.
inline constexpr uint8_t kLnhIbaLocal = ib::lrh::kLnhLocal, kLnhIbaGlobal = ib::lrh::kLnhGlobal;
inline constexpr uint8_t kGrhNextHdrIba = ib::grh::kNxtHdrIba;

using ib::kMulticastLidBase;
using ib::kPermissiveLid;
using ib::kQp1Qkey;
inline constexpr uint32_t kMulticastQpn = 0xffffff;

// Transport (opcode bits 7:5).
inline constexpr uint8_t kTrRc = 0, kTrUc = 1, kTrRd = 2, kTrUd = 3;

// Operation (opcode bits 4:0).
namespace opc {
inline constexpr uint8_t kSendFirst = 0x00, kSendMiddle = 0x01, kSendLast = 0x02, kSendLastImm = 0x03,
                         kSendOnly = 0x04, kSendOnlyImm = 0x05, kWriteFirst = 0x06, kWriteMiddle = 0x07,
                         kWriteLast = 0x08, kWriteLastImm = 0x09, kWriteOnly = 0x0a, kWriteOnlyImm = 0x0b,
                         kReadReq = 0x0c, kReadRespFirst = 0x0d, kReadRespMiddle = 0x0e, kReadRespLast = 0x0f,
                         kReadRespOnly = 0x10, kAck = 0x11, kAtomicAck = 0x12, kCmpSwap = 0x13, kFetchAdd = 0x14;
}  // namespace opc

// AETH syndrome (IBA 9.7.5.2.6): bits 6:5 select ACK / RNR NAK / NAK.
inline constexpr uint8_t kAethAck = 0x00, kAethRnr = 0x20, kAethNak = 0x60;
inline constexpr uint8_t kAethCreditsInvalid = 0x1f;

// The receive WQEs an AETH credit code (0..30) stands for (IBA 9.7.7.2's
// encoding: exact to 4, then two steps per power of two up to 32768).
// Code 31 is "invalid": the responder does not count (an SRQ).
inline constexpr uint16_t kAethCreditCount[31] = {0,    1,     2,     3,     4,     6,    8,    12,
                                                  16,   24,    32,    48,    64,    96,   128,  192,
                                                  256,  384,   512,   768,   1024,  1536, 2048, 3072,
                                                  4096, 6144,  8192,  12288, 16384, 24576, 32768};
inline constexpr uint8_t kNakPsnSeq = 0, kNakInvalidReq = 1, kNakRemoteAccess = 2, kNakRemoteOp = 3;

// PSN arithmetic in the 24-bit space.
inline constexpr uint32_t kPsnMask = 0xffffff;
inline int32_t psn_diff(uint32_t a, uint32_t b)  // a - b, signed, in 24 bits
{
    return int32_t((a - b) << 8) >> 8;
}

// RNR NAK timer field -> microseconds (IBA table 45).
inline uint64_t rnr_timer_us(uint8_t code)
{
    static const uint32_t kUs[32] = {655360, 10,    20,    30,    40,    60,     80,     120,
                                     160,    240,   320,   480,   640,   960,    1280,   1920,
                                     2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
                                     40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return kUs[code & 31];
}

}  // namespace ibemu::mthca::iba

namespace ibemu::mthca::wqe {

// Opcodes in the "next" segment's nda_op low bits.
inline constexpr uint8_t kNop = 0x00, kRdmaWrite = 0x08, kRdmaWriteImm = 0x09, kSend = 0x0a, kSendImm = 0x0b,
                         kRdmaRead = 0x10, kAtomicCs = 0x11, kAtomicFa = 0x12, kBindMw = 0x18;

// Next-segment flag bits.
inline constexpr uint32_t kDbd = 1u << 7;           // in ee_nds
inline constexpr uint32_t kFlagCqUpdate = 1u << 3;  // in flags
inline constexpr uint32_t kFlagSolicit = 1u << 1;
inline constexpr uint32_t kMlxVl15 = 1u << 17;
inline constexpr uint32_t kMlxSlr = 1u << 16;

inline constexpr unsigned kNextSegLen = 16, kDataSegLen = 16, kRaddrSegLen = 16, kAtomicSegLen = 16,
                          kUdSegLen = 48;
inline constexpr uint32_t kInvalLkey = 0x100;
inline constexpr uint32_t kInlineBit = 1u << 31;

}  // namespace ibemu::mthca::wqe

namespace ibemu::mthca::cqe {

inline constexpr unsigned kSize = 32;
// Error syndromes (mthca_cq.c).
inline constexpr uint8_t kLocalLength = 0x01, kLocalQpOp = 0x02, kLocalProt = 0x04, kFlush = 0x05,
                         kBadResp = 0x10, kLocalAccess = 0x11, kRemoteInvalReq = 0x12, kRemoteAccess = 0x13,
                         kRemoteOp = 0x14, kRetryExc = 0x15, kRnrRetryExc = 0x16;
inline constexpr uint8_t kErrOpcode = 0xfe;  // | 1 for the send queue

}  // namespace ibemu::mthca::cqe
