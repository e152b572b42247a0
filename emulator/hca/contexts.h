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
const char* cq_arm_name(CqArm a);

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
    // The arm sequence number the HCA takes an arm request for: 1 from
    // SW2HW_CQ on, one more for each completion event written, as the
    // drivers count it (mthca_cq.c and libmthca start at 1 and add one for
    // each completion event they receive). Only its low 2 bits travel.
    uint32_t event_sn = 1;
    bool overflow = false;
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
    uint32_t tail = 0;  // WQEs consumed (16-bit counter space)
    std::array<uint8_t, srqc::kSize> ctx{};
    uint16_t limit = 0;
    bool limit_armed = false;
    uint32_t next_wqe = 0;  // offset of the next WQE the HCA takes (free-list chain)
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
    // Translation cache: one physically contiguous run [tc_va, tc_va+tc_len)
    // at tc_phys, valid while tc_gen equals the Core's TPT generation.
    mutable uint64_t tc_va = 0, tc_len = 0, tc_phys = 0, tc_gen = 0;
    // Where the entry lives in guest RAM (its ICM slot), valid while
    // icm_gen equals the Core's TPT generation; the firmware re-reads the
    // entry there at each use of the key (Core::mpt_current).
    uint64_t icm_phys = 0, icm_gen = 0;
    // The entry as last read is unusable: software owned (status 0xf, as
    // a mem-free FMR unmap leaves it) or inconsistent.
    bool unusable = false;
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
// Offsets below are relative to the context (struct mthca_qp_context).
inline constexpr Field kState{0x00, 4, 28, 4};
inline constexpr Field kServiceType{0x00, 4, 16, 8};
inline constexpr Field kPmState{0x00, 4, 11, 2};
inline constexpr Field kDe{0x00, 4, 8, 1};
inline constexpr Field kMtu{0x08, 1, 5, 3};
inline constexpr Field kMsgMax{0x08, 1, 0, 5};
inline constexpr Field kRqSize{0x09, 1, 3, 5};
inline constexpr Field kRqStride{0x09, 1, 0, 3};
inline constexpr Field kSqSize{0x0a, 1, 3, 5};
inline constexpr Field kSqStride{0x0a, 1, 0, 3};
inline constexpr Field kSchedQueue{0x0b, 1, 0, 8};
inline constexpr Field kUsrPage{0x0c, 4, 0, 24};
inline constexpr Field kLocalQpn{0x10, 4, 0, 24};
inline constexpr Field kRemoteQpn{0x14, 4, 0, 24};
// An address path (struct mthca_qp_path, 0x20 bytes); the primary path is
// at 0x20, the alternate at 0x40. Offsets relative to the path.
namespace path {
inline constexpr size_t kSize = 0x20;
inline constexpr Field kPort{0x00, 4, 24, 8};
inline constexpr Field kPkeyIndex{0x00, 4, 0, 7};
inline constexpr Field kRnrRetry{0x04, 1, 5, 3};
inline constexpr Field kGrh{0x05, 1, 7, 1};
inline constexpr Field kPathBits{0x05, 1, 0, 7};
inline constexpr Field kRlid{0x06, 2, 0, 16};
inline constexpr Field kAckTimeout{0x08, 1, 3, 5};
inline constexpr Field kSgidIndex{0x09, 1, 0, 8};
inline constexpr Field kStaticRate{0x0a, 1, 0, 8};
inline constexpr Field kHopLimit{0x0b, 1, 0, 8};
inline constexpr Field kSl{0x0c, 4, 28, 4};
inline constexpr Field kTclass{0x0c, 4, 20, 8};
inline constexpr Field kFlowLabel{0x0c, 4, 0, 20};
inline constexpr Field kRgidHi{0x10, 8, 0, 64};
inline constexpr Field kRgidLo{0x18, 8, 0, 64};
}  // namespace path
inline constexpr size_t kPriPath = 0x20, kAltPath = 0x40;
// A path field moved to the primary or alternate path.
constexpr Field at(size_t path_base, Field f) { return Field{uint16_t(path_base + f.offset), f.word_bytes, f.shift, f.bits}; }
inline constexpr Field kPriPort = at(kPriPath, path::kPort);
inline constexpr Field kPriPkeyIndex = at(kPriPath, path::kPkeyIndex);
inline constexpr Field kPriRnrRetry = at(kPriPath, path::kRnrRetry);
inline constexpr Field kPriGrh = at(kPriPath, path::kGrh);
inline constexpr Field kPriPathBits = at(kPriPath, path::kPathBits);
inline constexpr Field kPriRlid = at(kPriPath, path::kRlid);
inline constexpr Field kPriAckTimeout = at(kPriPath, path::kAckTimeout);
inline constexpr Field kPriSgidIndex = at(kPriPath, path::kSgidIndex);
inline constexpr Field kPriHopLimit = at(kPriPath, path::kHopLimit);
inline constexpr Field kPriSl = at(kPriPath, path::kSl);
inline constexpr Field kPriTclass = at(kPriPath, path::kTclass);
inline constexpr Field kPriFlowLabel = at(kPriPath, path::kFlowLabel);
inline constexpr Field kPriRgidHi = at(kPriPath, path::kRgidHi);
inline constexpr Field kPriRgidLo = at(kPriPath, path::kRgidLo);
inline constexpr Field kRdd{0x60, 4, 0, 24};
inline constexpr Field kPd{0x64, 4, 0, 24};
inline constexpr Field kWqeBase{0x68, 4, 0, 32};
inline constexpr Field kWqeLkey{0x6c, 4, 0, 32};
// params1: the requester.
inline constexpr Field kAckReqFreq{0x70, 4, 28, 4};
inline constexpr Field kFlightLimit{0x70, 4, 24, 4};
inline constexpr Field kSraMax{0x70, 4, 21, 3};  // log2 of max_rd_atomic
inline constexpr Field kRetryCount{0x70, 4, 16, 3};
inline constexpr Field kSre{0x70, 4, 15, 1};
inline constexpr Field kSwe{0x70, 4, 14, 1};
inline constexpr Field kSae{0x70, 4, 13, 1};
inline constexpr Field kSic{0x70, 4, 4, 1};
inline constexpr Field kSsc{0x70, 4, 3, 1};  // signal all send WQEs
inline constexpr Field kSqPsn{0x78, 4, 0, 24};  // next_send_psn
inline constexpr Field kCqnSnd{0x7c, 4, 0, 24};
inline constexpr Field kSndWqeBase{0x80, 4, 0, 32};
inline constexpr Field kSndDbIndex{0x84, 4, 0, 32};
inline constexpr Field kLastAckedPsn{0x88, 4, 0, 24};
inline constexpr Field kSsn{0x8c, 4, 0, 24};
// params2: the responder.
inline constexpr Field kRraMax{0x90, 4, 21, 3};  // log2 of max_dest_rd_atomic
inline constexpr Field kRre{0x90, 4, 15, 1};
inline constexpr Field kRwe{0x90, 4, 14, 1};
inline constexpr Field kRae{0x90, 4, 13, 1};
inline constexpr Field kRic{0x90, 4, 4, 1};
inline constexpr Field kRsc{0x90, 4, 3, 1};
inline constexpr Field kMinRnrTimer{0x94, 4, 24, 5};
inline constexpr Field kRqPsn{0x94, 4, 0, 24};  // next receive PSN
inline constexpr Field kRaBuffIndex{0x98, 4, 0, 32};
inline constexpr Field kCqnRcv{0x9c, 4, 0, 24};
inline constexpr Field kRcvWqeBase{0xa0, 4, 0, 32};
inline constexpr Field kRcvDbIndex{0xa4, 4, 0, 32};
inline constexpr Field kQkey{0xa8, 4, 0, 32};
inline constexpr Field kSrqn{0xac, 4, 0, 24};
inline constexpr Field kSrqEnable{0xac, 4, 24, 1};

// MODIFY_QP opt_param_mask bits (mthca_qp.c): each selects the fields of
// the context a transition takes besides those it requires.
namespace opt {
inline constexpr uint32_t kAltAddrPath = 1u << 0;
inline constexpr uint32_t kRre = 1u << 1;
inline constexpr uint32_t kRae = 1u << 2;
inline constexpr uint32_t kRwe = 1u << 3;
inline constexpr uint32_t kPkeyIndex = 1u << 4;
inline constexpr uint32_t kQkey = 1u << 5;
inline constexpr uint32_t kRnrTimeout = 1u << 6;
inline constexpr uint32_t kPriAddrPath = 1u << 7;
inline constexpr uint32_t kSraMax = 1u << 8;
inline constexpr uint32_t kRraMax = 1u << 9;
inline constexpr uint32_t kPmState = 1u << 10;
inline constexpr uint32_t kPortNum = 1u << 11;
inline constexpr uint32_t kRetryCount = 1u << 12;
inline constexpr uint32_t kAltRnrRetry = 1u << 13;
inline constexpr uint32_t kAckTimeout = 1u << 14;
inline constexpr uint32_t kRnrRetry = 1u << 15;
inline constexpr uint32_t kSchedQueue = 1u << 16;
}  // namespace opt
// State value QUERY_QP reports for an SQD QP still draining its send queue.
inline constexpr unsigned kStateDraining = 7;
// Path migration states in kPmState (mthca_qp.c; IBA 17.2.8). 2 is reserved.
inline constexpr uint8_t kPmArmed = 0, kPmRearm = 1, kPmMigrated = 3;
}  // namespace qpc

// Service types (mthca_qp.c).
enum class QpService : uint8_t { Rc = 0, Uc = 1, Rd = 2, Ud = 3, Mlx = 7 };
// The name of a context's service type (its raw 3-bit field: "?" for
// the reserved values a guest may write).
const char* qp_service_name(uint8_t st);

enum class SpecialQp : uint8_t { None, Smi, Gsi };

// The QP attributes the data path uses, decoded from the QP's merged
// context (merge_qp_context in fw_qp.cc decides what each transition
// takes; apply_qp_context in qp_engine.cc decodes).
struct QpAttr {
    uint32_t mtu = 2048;  // path MTU, bytes
    unsigned rq_log_size = 0, rq_log_stride = 4, sq_log_size = 0, sq_log_stride = 4;
    bool has_rq = false, has_sq = false;
    uint32_t usr_page = 0;
    uint32_t remote_qpn = 0;
    uint32_t pd = 0;
    uint32_t wqe_lkey = 0;
    uint32_t cqn_snd = 0, cqn_rcv = 0;
    uint32_t snd_db_index = 0, rcv_db_index = 0;
    uint32_t send_wqe_offset = 0;
    uint32_t qkey = 0;
    uint32_t srqn = 0;
    bool srq = false;
    uint8_t pkey_index = 0;
    uint8_t retry_cnt = 7, rnr_retry = 7, ackto = 0, min_rnr_timer = 0;
    uint8_t sra_max = 0;  // log2 of the RDMA READs/atomics the requester keeps in flight
    uint8_t rra_max = 0;  // log2 of those the responder accepts (RRA_MAX)
    uint8_t msg_max = 31;  // log2 of the longest message (mtu_msgmax)
    bool rre = false, rwe = false, rae = false;
    bool sig_all = false;
    uint32_t sq_psn = 0, rq_psn = 0;
    // Primary path.
    uint16_t rlid = 0;
    uint8_t sl = 0, path_bits = 0;
    bool grh = false;
    uint8_t sgid_index = 0, hop_limit = 0, tclass = 0;
    uint32_t flow = 0;
    std::array<uint8_t, 16> rgid{};
    // Path migration (IBA 17.2.8): the state (qpc::kPm*), and the parts of
    // the alternate path a packet's source is matched against while ARMED.
    // The rest of the alternate path stays in the context until a
    // migration swaps it with the primary (Core::qp_migrate).
    uint8_t pm_state = qpc::kPmMigrated;
    uint8_t alt_port = 0;
    uint16_t alt_rlid = 0;
    bool alt_grh = false;
    std::array<uint8_t, 16> alt_rgid{};
};

// One send WQE the requester has started and not yet completed.
struct SendEntry {
    uint32_t wqe = 0;       // offset of the WQE in the WQ buffer
    uint8_t op = 0;         // mthca opcode
    uint8_t size = 0;       // 16-byte units
    bool signaled = false;
    uint32_t first_psn = 0, last_psn = 0;
    uint32_t len = 0;       // message length
    uint32_t got = 0;       // READ: response bytes placed so far
    uint32_t sent = 0;      // request packets transmitted so far
};

// One response the RC responder owes, in the order it owes them: READ
// responses are sent a slice at a time (from poll() once a call's budget is
// spent), and the ACKs, atomic ACKs and NAKs behind one wait for it.
struct RespEntry {
    enum Kind : uint8_t { Read, Atomic, Ack, Nak };
    Kind kind = Ack;
    uint8_t port = 1;
    uint8_t syndrome = 0;   // Ack/Nak: the AETH syndrome
    uint32_t psn = 0;       // first PSN of the response
    uint32_t msn = 0;       // MSN to report in the AETH
    // Read: the region, where the response stands, how far it has got.
    uint64_t va = 0;
    uint32_t rkey = 0, len = 0;
    uint32_t npkts = 0, sent = 0;
    const Mpt* mr = nullptr;
    uint64_t mr_gen = 0;
    uint64_t orig = 0;      // Atomic: the value before the operation
};

inline constexpr unsigned kMaxOutstanding = 128;  // per QP, power of two

// Run-time state of the QP engine (preallocated with the QP).
struct QpRun {
    // Send queue fetch: WQEs rung but not started, and where the next one is.
    uint32_t sq_pending = 0;
    uint32_t sq_next_wqe = 0;
    uint8_t sq_next_op = 0, sq_next_size = 0;
    bool sq_have_next = false;
    uint32_t npsn = 0;  // next PSN the requester sends
    // Requester: started WQEs, oldest first (ring of kMaxOutstanding,
    // allocated at the QP's first RC/UC send; indexed only while non-empty).
    std::vector<SendEntry> out;
    uint32_t out_head = 0, out_tail = 0;
    // The next started WQE with request packets still to send; the budget
    // of packets the current sq_progress call may still send; tx_gen
    // changes when a retransmission restarts the sending.
    uint32_t tx_idx = 0;
    uint32_t budget = 0;
    uint32_t tx_gen = 0;
    bool sq_resume = false;  // budget spent: poll() goes on
    bool sq_blocked = false; // ... or no link credits: poll() after tx_ready
    uint64_t deadline = UINT64_MAX;  // ACK timeout / RNR wait expiry
    bool rnr_wait = false;
    unsigned retries = 0, rnr_retries = 0;
    uint32_t last_acked = 0;  // last PSN acknowledged (for reporting)
    // End-to-end credits (IBA 9.7.7.2), RC requester: ssn is the sequence
    // number of the last message started (the responder's MSN counts the
    // same messages, from 0 at RTR); lsn the last message the responder
    // has a receive WQE for: the MSN plus the credits of the newest ACK,
    // moved on by each started message that consumes none (RDMA WRITE,
    // READ, atomics). An ACK with credits "invalid" (an SRQ responder)
    // lifts the limit for good. credit_wait: a SEND or WRITE with
    // immediate waits for credits; an ACK that raises lsn resumes it.
    uint32_t ssn = 0, lsn = 0;
    bool credits_unlimited = false;
    bool credit_wait = false;
    // Receive queue: WQEs consumed so far (16-bit counter like the doorbell record).
    uint32_t rq_tail = 0;
    // Responder.
    uint32_t epsn = 0;
    uint32_t msn = 0;
    bool nak_sent = false;
    bool in_send = false;      // a multi-packet SEND is being received
    bool uc_reuse = false;     // UC: rwqe was taken by a dropped message, reuse it
    uint32_t rwqe = 0;         // its receive WQE offset
    uint32_t roff = 0;         // bytes of it written so far
    bool in_write = false;     // a multi-packet RDMA WRITE is being received
    uint64_t wva = 0;
    uint32_t wkey = 0, wleft = 0;
    // The region WRITE First checked for the whole message, while no MPT
    // has changed since (obj_gen): the later packets need no new lookup.
    const Mpt* wmr = nullptr;
    uint64_t wmr_gen = 0;
    // Results of the atomics executed, by PSN, to answer duplicates of any
    // of them (a requester has at most kMaxOutstanding in flight).
    struct AtomicResult {
        uint32_t psn = 0xffffffff;  // none
        uint64_t orig = 0;
    };
    std::vector<AtomicResult> atomics;  // kMaxOutstanding, at the first atomic
    // Responses owed, oldest first (a ring; sized at first use from RRA_MAX).
    std::vector<RespEntry> resp;
    uint32_t resp_head = 0, resp_tail = 0;
    bool resp_resume = false;  // budget spent: poll() goes on
    bool resp_blocked = false; // ... or no link credits: poll() after tx_ready
    bool resp_nak = false;     // a NAK is queued: later requests are dropped
    bool resp_busy = false;    // resp_progress re-entry guard
    bool drained_event = false;  // SQD: raise SQ_DRAINED once drained
    bool comm_est = false;       // COMM_EST raised (first packet in RTR)
    bool sq_busy = false, sq_again = false;  // sq_progress re-entry guard
    bool err_flushed = false;
};

struct Qp {
    uint32_t qpn = 0;
    QpState state = QpState::Rst;
    uint8_t service = 0;
    uint8_t port = 0;
    SpecialQp special = SpecialQp::None;
    // The context as the firmware keeps it: each MODIFY_QP merges into it
    // only the fields its transition requires or its opt-param mask selects
    // (merge_qp_context in fw_qp.cc); QUERY_QP reports it with the current
    // state.
    std::array<uint8_t, qpc::kSize> ctx{};
    uint64_t send_doorbells = 0;
    QpAttr a;
    QpRun r;
};

}  // namespace ibemu::mthca
