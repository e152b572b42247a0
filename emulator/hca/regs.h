// SPDX-License-Identifier: GPL-2.0
//
// BAR0 register map of the model and the constants it reports through
// QUERY_FW / QUERY_DEV_LIM / QUERY_ADAPTER.
//
// Fixed offsets (HCR, ECR, reset, Tavor CLR_INT) come from the driver
// (mthca_config_reg.h, mthca_reset.c). The mem-free doorbell areas are
// ours to choose: the driver learns them from QUERY_FW and masks them with
// the BAR0 size, so we report plain BAR0 offsets.
#pragma once

#include <cstdint>

namespace ibemu::mthca {

// --- BAR0 -----------------------------------------------------------------
inline constexpr uint64_t kHcrBase = 0x80680;  // 7 big-endian dwords
inline constexpr uint64_t kHcrSize = 0x1c;
inline constexpr uint64_t kEcrBase = 0x80700;  // Tavor event cause; unused in mem-free
inline constexpr uint64_t kEcrSize = 0x10;
inline constexpr uint64_t kResetOffset = 0xf0010;
inline constexpr uint32_t kResetMagic = 1;  // big-endian 1 (the driver writes swab32(1))

// Our choices, announced in QUERY_FW.
inline constexpr uint64_t kClrIntBase = 0xf00d8;   // 64-bit, bit n clears INTx cause n
inline constexpr uint64_t kEqArmBase = 0x40000;    // 64-bit, bit n arms EQ n
inline constexpr uint64_t kEqSetCiBase = 0x40200;  // 8 bytes per EQ, dword 0 = CI
inline constexpr unsigned kMaxEqs = 64;
inline constexpr uint64_t kCatasBase = 0x40800;  // catastrophic error buffer
inline constexpr uint32_t kCatasDwords = 0x10;   // reported size (in dwords)

// --- HCR layout (mthca_cmd.c) ---------------------------------------------
inline constexpr unsigned kHcrInParamHi = 0x00;
inline constexpr unsigned kHcrInParamLo = 0x04;
inline constexpr unsigned kHcrInMod = 0x08;
inline constexpr unsigned kHcrOutParamHi = 0x0c;
inline constexpr unsigned kHcrOutParamLo = 0x10;
inline constexpr unsigned kHcrToken = 0x14;  // token in bits 31:16
inline constexpr unsigned kHcrStatus = 0x18;  // status 31:24, go 23, e 22, opmod 19:12, op 11:0
inline constexpr uint32_t kHcrGoBit = 1u << 23;
inline constexpr uint32_t kHcrEventBit = 1u << 22;

// --- UAR pages (BAR2) -----------------------------------------------------
inline constexpr unsigned kUarSendDoorbell = 0x10;
inline constexpr unsigned kUarRecvDoorbell = 0x18;
inline constexpr unsigned kUarCqDoorbell = 0x20;
inline constexpr unsigned kUarEqDoorbell = 0x28;  // Tavor only

// --- Firmware identity ----------------------------------------------------
// 5.3.0 is what the driver calls current for MT25208 in native mode.
inline constexpr uint16_t kFwMajor = 5;
inline constexpr uint16_t kFwMinor = 3;
inline constexpr uint16_t kFwSubminor = 0;
inline constexpr unsigned kLogMaxCmds = 4;      // 16 outstanding commands
inline constexpr uint16_t kFwPages = 64;        // firmware area, 4 KiB pages
inline constexpr uint8_t kIntaPin = 0;          // INTx cause bit reported in QUERY_ADAPTER
inline constexpr const char kBoardId[] = "IBEMU_MT25208";

// ICM geometry.
inline constexpr unsigned kIcmPageShift = 12;
inline constexpr uint64_t kIcmPageSize = 1ull << kIcmPageShift;
inline constexpr uint64_t kMaxIcmSize = 1ull << 36;  // reported in QUERY_DEV_LIM

// --- Device limits (QUERY_DEV_LIM), honoured by the object commands -------
// Those of an MT25208 in mem-free mode as ib_mthca turns them into
// ibv_devinfo's figures: max_qp_wr = max_srq_wr = 2^14 (the mem-free
// driver takes 1 << field, no "- 1"), max_cqe = 2^17 - 1 (one CQE kept
// spare), max_sge = 27 (the driver's UD bound (496 - 16 - 48) / 16 under
// the firmware's 30), max_srq = 2^10 - 64 with the default profile.
// Every queue can be created at its limit (an SRQ with the driver's
// spare entry: 2^15 at max_srq_wr) and the firmware refuses one size
// step more with BAD_PARAM (EINVAL in the driver), as it does a
// region longer than 2^kLogMaxMrwSz.
inline constexpr unsigned kLogMaxQpSz = 14, kLogMaxSrqSz = 14, kLogMaxCqSz = 17, kLogMaxEqSz = 17;
inline constexpr unsigned kLogMaxMrwSz = 30;  // largest MR/MW: 1 GiB
inline constexpr unsigned kMaxSg = 30, kMaxDescSz = 496;

}  // namespace ibemu::mthca
