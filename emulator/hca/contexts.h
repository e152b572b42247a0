// SPDX-License-Identifier: GPL-2.0
//
// Hardware object contexts the firmware keeps: EQ, CQ, SRQ, MPT, QP. Each
// has a wire layout (a table of big-endian fields, offsets from the
// driver's context structures in mthca_eq.c, mthca_cq.c, mthca_srq.c,
// mthca_mr.c and mthca_qp.c) and the model's parsed view.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hca/wire.h"

namespace ibemu::mthca {

// ---- EQ context (64 bytes) ----------------------------------------------
namespace eqc {
inline constexpr size_t kSize = 0x40;
inline constexpr Field kStatus{0x00, 4, 28, 4};
inline constexpr Field kOwner{0x00, 4, 24, 4};  // 1 = HW
inline constexpr Field kFlags{0x00, 4, 0, 24};
inline constexpr Field kStart{0x04, 8, 0, 64};
inline constexpr Field kLogSize{0x0c, 4, 24, 5};
inline constexpr Field kUsrPage{0x0c, 4, 0, 24};
inline constexpr Field kIntr{0x17, 1, 0, 8};
inline constexpr Field kPd{0x18, 4, 0, 24};
inline constexpr Field kLkey{0x1c, 4, 0, 32};
inline constexpr Field kConsumer{0x28, 4, 0, 32};
inline constexpr Field kProducer{0x2c, 4, 0, 32};
inline constexpr unsigned kEntrySize = 0x20;
}  // namespace eqc

struct Eq {
    uint32_t eqn = 0;
    unsigned log_size = 0;
    uint8_t intr = 0;
    uint32_t pd = 0;
    uint32_t lkey = 0;
    uint64_t start = 0;
    uint32_t flags = 0;
    uint32_t producer = 0;  // next EQE slot the HCA writes (free running)
    uint32_t consumer = 0;  // last consumer index the driver reported
    bool armed = false;
    bool overflow = false;
    uint64_t events = 0;  // statistics
};

// ---- CQ context (64 bytes) ----------------------------------------------
namespace cqc {
inline constexpr size_t kSize = 0x40;
inline constexpr Field kStatus{0x00, 4, 28, 4};
inline constexpr Field kState{0x00, 4, 8, 4};
inline constexpr Field kFlags{0x00, 4, 0, 32};
inline constexpr Field kStart{0x04, 8, 0, 64};
inline constexpr Field kLogSize{0x0c, 4, 24, 5};
inline constexpr Field kUsrPage{0x0c, 4, 0, 24};
inline constexpr Field kErrorEqn{0x10, 4, 0, 8};
inline constexpr Field kCompEqn{0x14, 4, 0, 8};
inline constexpr Field kPd{0x18, 4, 0, 24};
inline constexpr Field kLkey{0x1c, 4, 0, 32};
inline constexpr Field kLastNotified{0x20, 4, 0, 32};
inline constexpr Field kSolicitProducer{0x24, 4, 0, 32};
inline constexpr Field kConsumer{0x28, 4, 0, 32};
inline constexpr Field kProducer{0x2c, 4, 0, 32};
inline constexpr Field kCqn{0x30, 4, 0, 24};
inline constexpr Field kCiDb{0x34, 4, 0, 32};
inline constexpr Field kStateDb{0x38, 4, 0, 32};
inline constexpr unsigned kEntrySize = 0x20;
// RESIZE_CQ inbox.
inline constexpr Field kResizeLogSize{0x0c, 1, 0, 5};
inline constexpr Field kResizeLkey{0x1c, 4, 0, 32};
}  // namespace cqc

enum class CqArm : uint8_t { Disarmed, NextCompletion, NextSolicited };

struct Cq {
    uint32_t cqn = 0;
    unsigned log_size = 0;
    uint32_t uar = 0;
    uint32_t comp_eqn = 0;
    uint32_t error_eqn = 0;
    uint32_t pd = 0;
    uint32_t lkey = 0;
    uint64_t start = 0;
    uint32_t ci_db = 0;
    uint32_t state_db = 0;
    uint32_t producer = 0;
    uint32_t consumer = 0;
    CqArm arm = CqArm::Disarmed;
    uint32_t arm_sn = 0;
};

// ---- SRQ context, Arbel layout (48 bytes, 64-byte slot) -------------------
namespace srqc {
inline constexpr size_t kSize = 0x30;
inline constexpr Field kLogSize{0x00, 4, 24, 5};
inline constexpr Field kSrqn{0x00, 4, 0, 24};
inline constexpr Field kLkey{0x04, 4, 0, 32};
inline constexpr Field kDbIndex{0x08, 4, 0, 32};
inline constexpr Field kLogStride{0x0c, 4, 29, 3};
inline constexpr Field kUsrPage{0x0c, 4, 0, 24};
inline constexpr Field kWqeBase{0x10, 8, 0, 64};
inline constexpr Field kPd{0x18, 4, 0, 24};
inline constexpr Field kLimit{0x1c, 2, 0, 16};
inline constexpr Field kWqeCnt{0x1e, 2, 0, 16};
inline constexpr Field kWqeCounter{0x22, 2, 0, 16};
}  // namespace srqc

struct Srq {
    uint32_t srqn = 0;
    std::array<uint8_t, srqc::kSize> ctx{};
    uint16_t limit = 0;
    bool limit_armed = false;
};

// ---- MPT entry (64 bytes) ------------------------------------------------
namespace mpt {
inline constexpr size_t kSize = 0x40;
inline constexpr Field kStatus{0x00, 4, 28, 4};  // 0xf = SW owned, 0 = HW
inline constexpr Field kFlags{0x00, 4, 0, 28};
inline constexpr uint32_t kFlagPhysical = 1u << 9;
inline constexpr uint32_t kFlagRegion = 1u << 8;
inline constexpr Field kPageSize{0x04, 4, 0, 5};  // log2(page) - 12
inline constexpr Field kKey{0x08, 4, 0, 32};
inline constexpr Field kPd{0x0c, 4, 0, 24};
inline constexpr Field kStart{0x10, 8, 0, 64};
inline constexpr Field kLength{0x18, 8, 0, 64};
inline constexpr Field kLkey{0x20, 4, 0, 32};
inline constexpr Field kMttSeg{0x2c, 8, 0, 64};
inline constexpr Field kMttSize{0x34, 4, 0, 32};
inline constexpr uint64_t kMttPresent = 1;
}  // namespace mpt

struct Mpt {
    uint32_t index = 0;
    uint32_t key = 0;
    uint32_t flags = 0;
    uint32_t pd = 0;
    unsigned page_shift = 12;
    uint64_t start = 0;
    uint64_t length = 0;
    uint64_t mtt_addr = 0;  // ICM virtual address of the first MTT entry
    std::array<uint8_t, mpt::kSize> raw{};
};

// Memory keys of a mem-free HCA are the MPT index rotated by 8 bits
// (mthca_mr.c, arbel_hw_index_to_key / arbel_key_to_hw_index).
inline uint32_t key_to_index(uint32_t key) { return (key << 24) | (key >> 8); }
inline uint32_t index_to_key(uint32_t ind) { return (ind >> 24) | (ind << 8); }

// ---- QP context (mailbox: 8-byte opt mask + 0x100 context) ---------------
enum class QpState : uint8_t { Rst = 0, Init = 1, Rtr = 2, Rts = 3, Sqe = 4, Sqd = 5, Err = 6 };
const char* qp_state_name(QpState s);

namespace qpc {
inline constexpr size_t kCtxOffset = 8;  // after opt_param_mask + reserved
inline constexpr size_t kSize = 0x100;
inline constexpr Field kOptMask{0x00, 4, 0, 32};
// Offsets below are relative to the context.
inline constexpr Field kState{0x00, 4, 28, 4};
inline constexpr Field kServiceType{0x00, 4, 16, 8};
inline constexpr Field kPmState{0x00, 4, 11, 2};
inline constexpr Field kMtu{0x08, 1, 5, 3};
inline constexpr Field kMsgMax{0x08, 1, 0, 5};
inline constexpr Field kRqSize{0x09, 1, 3, 5};
inline constexpr Field kRqStride{0x09, 1, 0, 3};
inline constexpr Field kSqSize{0x0a, 1, 3, 5};
inline constexpr Field kSqStride{0x0a, 1, 0, 3};
inline constexpr Field kUsrPage{0x0c, 4, 0, 24};
inline constexpr Field kLocalQpn{0x10, 4, 0, 24};
inline constexpr Field kRemoteQpn{0x14, 4, 0, 24};
inline constexpr Field kPriPort{0x20, 4, 24, 8};
inline constexpr Field kPriPkeyIndex{0x20, 4, 0, 7};
inline constexpr Field kPd{0x64, 4, 0, 24};
inline constexpr Field kWqeLkey{0x6c, 4, 0, 32};
inline constexpr Field kCqnSnd{0x7c, 4, 0, 24};
inline constexpr Field kSndDbIndex{0x84, 4, 0, 32};
inline constexpr Field kCqnRcv{0x9c, 4, 0, 24};
inline constexpr Field kRcvDbIndex{0xa4, 4, 0, 32};
inline constexpr Field kQkey{0xa8, 4, 0, 32};
inline constexpr Field kSrqn{0xac, 4, 0, 24};
inline constexpr Field kSrqEnable{0xac, 4, 24, 1};
}  // namespace qpc

// Service types (mthca_qp.c).
enum class QpService : uint8_t { Rc = 0, Uc = 1, Rd = 2, Ud = 3, Mlx = 7 };

enum class SpecialQp : uint8_t { None, Smi, Gsi };

struct Qp {
    uint32_t qpn = 0;
    QpState state = QpState::Rst;
    uint8_t service = 0;
    uint8_t port = 0;
    SpecialQp special = SpecialQp::None;
    std::array<uint8_t, qpc::kSize> ctx{};  // last context the driver gave us
    uint64_t send_doorbells = 0;
};

}  // namespace ibemu::mthca
