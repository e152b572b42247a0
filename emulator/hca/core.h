// SPDX-License-Identifier: GPL-2.0
//
// The firmware and hardware state of the MT25208 model: the command
// interface (HCR), the firmware state machine, ICM, the object tables
// (EQ/CQ/SRQ/MPT/QP/MGM), event queues and interrupts, the ports and their
// SMA. The PCI shell (mthca_hca.h) decodes BAR accesses into calls here.
//
// Command handlers are spread over fw_init.cc (bring-up, ICM, ports),
// fw_objects.cc (EQ/CQ/SRQ/MPT/MTT/MGM), fw_qp.cc (QP state machine) and
// events.cc (EQEs and interrupts).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "fabric/packet.h"
#include "hca/config_space.h"
#include "hca/contexts.h"
#include "hca/event_unit.h"
#include "hca/icm.h"
#include "hca/mthca.h"
#include "hca/pci_function.h"
#include "hca/port.h"
#include "hca/regs.h"
#include "hca/sma.h"
#include "hca/status.h"

namespace ibemu::mthca {

// Firmware life cycle (mthca_main.c: mthca_init_arbel / mthca_close_hca).
enum class FwState : uint8_t {
    Off,      // after reset: only the boot ROM answers (QUERY_FW, MAP_FA, RUN_FW)
    Running,  // RUN_FW done: queries, ICM set-up, INIT_HCA
    HcaUp,    // INIT_HCA done: everything until CLOSE_HCA
};
const char* fw_state_name(FwState s);

// Command opcodes (mthca_cmd.c).
namespace op {
inline constexpr uint16_t kSysEn = 0x001, kSysDis = 0x002, kQueryDevLim = 0x003, kQueryFw = 0x004,
                          kQueryDdr = 0x005, kQueryAdapter = 0x006, kInitHca = 0x007, kCloseHca = 0x008,
                          kInitIb = 0x009, kCloseIb = 0x00a, kQueryHca = 0x00b, kSetIb = 0x00c,
                          kSw2HwMpt = 0x00d, kQueryMpt = 0x00e, kHw2SwMpt = 0x00f, kReadMtt = 0x010,
                          kWriteMtt = 0x011, kMapEq = 0x012, kSw2HwEq = 0x013, kHw2SwEq = 0x014,
                          kQueryEq = 0x015, kSw2HwCq = 0x016, kHw2SwCq = 0x017, kQueryCq = 0x018,
                          kRst2Init = 0x019, kInit2Rtr = 0x01a, kRtr2Rts = 0x01b, kRts2Rts = 0x01c,
                          kSqerr2Rts = 0x01d, k2Err = 0x01e, kRts2Sqd = 0x01f, kSqd2Rts = 0x020,
                          kErr2Rst = 0x021, kQueryQp = 0x022, kConfSpecialQp = 0x023, kMadIfc = 0x024,
                          kReadMgm = 0x025, kWriteMgm = 0x026, kMgidHash = 0x027, kResizeCq = 0x02c,
                          kInit2Init = 0x02d, kSyncTpt = 0x02f, kNop = 0x031, kSw2HwSrq = 0x035,
                          kHw2SwSrq = 0x036, kQuerySrq = 0x037, kSqd2Sqd = 0x038, kArmSrq = 0x040,
                          kRunFw = 0xff6, kDisableLam = 0xff7, kEnableLam = 0xff8, kUnmapIcm = 0xff9,
                          kMapIcm = 0xffa, kUnmapIcmAux = 0xffb, kMapIcmAux = 0xffc, kSetIcmSize = 0xffd,
                          kUnmapFa = 0xffe, kMapFa = 0xfff;
}  // namespace op

// EQE event types (mthca_eq.c).
namespace ev {
inline constexpr uint8_t kComp = 0x00, kPathMig = 0x01, kCommEst = 0x02, kSqDrained = 0x03, kCqError = 0x04,
                         kWqCatas = 0x05, kEecCatas = 0x06, kPathMigFailed = 0x07, kLocalCatas = 0x08,
                         kPortChange = 0x09, kCmd = 0x0a, kEccDetect = 0x0e, kEqOverflow = 0x0f,
                         kWqInvalReq = 0x10, kWqAccess = 0x11, kSrqCatas = 0x12, kSrqLastWqe = 0x13,
                         kSrqLimit = 0x14;
inline constexpr uint8_t kPortActive = 0x4;  // PORT_CHANGE subtypes
inline constexpr uint8_t kPortDown = 0x1;
}  // namespace ev

// Context entry sizes we report in QUERY_DEV_LIM (all powers of two, as
// mthca_profile.c assumes).
inline constexpr unsigned kQpcEntrySize = 256, kEecEntrySize = 256, kEqpcEntrySize = 32, kEeecEntrySize = 32,
                          kEqcEntrySize = 64, kCqcEntrySize = 64, kSrqcEntrySize = 64, kUarScratchEntrySize = 32,
                          kMptEntrySize = 64, kMgmEntrySize = 256;

// Object-count ceilings, whatever the guest asks for.
inline constexpr size_t kMaxObjectsPerTable = 1u << 18;

// INIT_HCA parameters (mthca_cmd.c, mthca_INIT_HCA()).
struct HcaLayout {
    uint64_t qpc_base = 0, eec_base = 0, srqc_base = 0, cqc_base = 0, eqpc_base = 0, eeec_base = 0,
             eqc_base = 0, rdb_base = 0, mc_base = 0, mpt_base = 0, mtt_base = 0, uar_scratch_base = 0,
             uarc_base = 0;
    unsigned log_qps = 0, log_eecs = 0, log_srqs = 0, log_cqs = 0, log_eqs = 0, log_mc_entry = 0,
             log_mc_table = 0, log_mpts = 0, log_uarc_pages = 0, log_uars = 0, uar_page_shift = 0;
    unsigned mc_hash_size = 0;
    uint32_t flags2 = 0;
};

// One firmware command as posted through the HCR.
struct Cmd {
    uint64_t in_param = 0;
    uint64_t out_param = 0;
    uint32_t in_mod = 0;
    uint8_t op_mod = 0;
    uint16_t opcode = 0;
    uint16_t token = 0;
    bool event = false;
    // Filled by the handler.
    uint64_t out_imm = 0;
    bool has_imm = false;
    std::string note;  // extra text for the command log line
};

// Doorbell statistics (seam for the data path).
struct DoorbellStats {
    uint64_t send = 0, recv = 0, cq_arm = 0, cq_other = 0, bogus = 0;
    uint64_t tx_packets = 0, rx_packets = 0, rx_dropped = 0, cqes = 0;
    // RC/UC packets dropped because their source (port, SLID, SGID) is not
    // the QP's primary path (also in rx_dropped).
    uint64_t rx_bad_source = 0;
    // Path migrations (software-commanded or started by the remote side).
    uint64_t path_migrations = 0;
    // Send doorbells and CQ arms rung through a UAR page other than the
    // QP's usr_page / the CQ's UAR: ignored.
    uint64_t wrong_uar = 0;
    // RC go-back-N restarts (NAK, ACK timeout, RNR wait ended).
    uint64_t retransmits = 0;
    // RC requester: times a SEND or RDMA WRITE with immediate was held
    // back for want of end-to-end credits (IBA 9.7.7.2).
    uint64_t credit_waits = 0;
    // NAKs not sent for want of link credits when they could not be queued
    // behind the QP's owed responses (responder_nak).
    uint64_t naks_unsent = 0;
    // CQ arm doorbells whose arm record (the CQ's state_db) was not this
    // CQ's, so the doorbell's own fields were taken; and arms ignored for
    // a stale sequence number.
    uint64_t cq_arm_no_record = 0, cq_stale_arm = 0;
    uint32_t last_hi = 0, last_lo = 0;
};

// The device's view of guest memory: every DMA (mailboxes, ICM, WQEs,
// CQEs, EQEs, payload) goes through here, and none passes while the
// driver keeps Bus Master Enable clear in the PCI command register (before
// pci_set_master, after pci_clear_master, or in a kdump/kexec kernel that
// finds the old HCA still running), as the bus refuses the device's
// requests then.
class BusMasterGate final : public GuestMemory {
public:
    BusMasterGate(GuestMemory& mem, const ConfigSpace& cfg, const std::string& name)
        : mem_(mem), cfg_(cfg), name_(name)
    {
    }
    bool read(uint64_t gpa, void* dst, size_t len) override
    {
        return allowed(gpa, len) && mem_.read(gpa, dst, len);
    }
    bool write(uint64_t gpa, const void* src, size_t len) override
    {
        return allowed(gpa, len) && mem_.write(gpa, src, len);
    }
    uint8_t* map_range(uint64_t gpa, size_t len) override
    {
        // A refused mapping makes the caller fall back on read/write,
        // which refuse (and count) it.
        return cfg_.bus_master() ? mem_.map_range(gpa, len) : nullptr;
    }
    uint64_t refused() const { return refused_; }

private:
    bool allowed(uint64_t gpa, size_t len);

    GuestMemory& mem_;
    const ConfigSpace& cfg_;
    const std::string& name_;
    uint64_t refused_ = 0;
    bool warned_ = false;  // logged since BME was last seen set
};

class Core {
public:
    Core(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq, const ConfigSpace& cfgspace);

    // Everything back to power-on (reset register or machine reset).
    void power_on();

    // --- HCR --------------------------------------------------------------
    uint32_t hcr_read(unsigned dword) const;
    void hcr_write(unsigned dword, uint32_t value);

    // --- mem-free EQ/interrupt registers in BAR0 --------------------------
    void eq_arm(uint64_t eq_mask);
    void eq_set_ci(unsigned eqn, uint32_t ci);
    void clr_int(uint64_t mask);
    // Config space changed (MSI-X enable, INTx disable).
    void interrupt_mode_changed();

    // --- UAR doorbells (BAR2) ---------------------------------------------
    void uar_doorbell(uint32_t uar, unsigned offset, uint32_t hi, uint32_t lo);
    // One 32-bit half of a doorbell at `offset` (a kUar*Doorbell) of UAR
    // page `uar`, as mthca_write64 writes it on a 32-bit CPU: the hi dword
    // (at +0, `lo_half` false) is latched per (uar, doorbell); the lo dword
    // (at +4) rings the doorbell with the latched hi, or 0 if none was.
    void uar_doorbell_half(uint32_t uar, unsigned offset, bool lo_half, uint32_t value);
    uint32_t num_uars() const { return uint32_t(kBar2Size >> kUarPageShift); }

    // --- seams for the fabric and the data path --------------------------
    // Queue an asynchronous event on the EQ mapped for its type.
    bool post_async_event(uint8_t type, uint8_t subtype, std::span<const uint8_t> payload24);
    // A completion landed in `cqn`: raise the completion event if armed.
    // Solicited-only arming fires only for solicited or error completions.
    bool cq_completion(uint32_t cqn, bool solicited = true);
    // The physical link of a port came up or went down (fabric seam).
    void set_port_link(unsigned port, bool up);
    // Logical port state change (SM seam); emits PORT_CHANGE events.
    void set_port_state(unsigned port, PortState s);

    // --- fabric ports and the QP engine (qp_engine.cc) --------------------
    void attach_port(unsigned port, Wire* wire);
    void port_receive(unsigned port, const Packet& p);
    void port_link_changed(unsigned port, bool up, const LinkParams& lp);
    // The port's wire has link credits again (PortEndpoint::tx_ready): the
    // QPs it held back resume from the next poll().
    void port_tx_ready(unsigned port);
    // Timers (RC ACK timeout, RNR wait) and deferred flushes; returns the
    // next time it wants to run (UINT64_MAX: none).
    uint64_t poll(uint64_t now_ns);
    // SM seam: the port's LID/LMC as an SM would set them with PortInfo.
    void set_port_lid(unsigned port, uint16_t lid, uint8_t lmc = 0);

    // --- catastrophic error (operator and test seam) ----------------------
    // The chip fails as an internal error fails it: the error buffer in
    // BAR0 reads `syndrome` (0 becomes 1), the data path stops (doorbells,
    // received packets, transport timers), no completion or asynchronous
    // event is raised any more, and the ports turn their carrier off, which
    // takes their links down. Firmware commands keep being answered, so a
    // driver can tear the device down; the reset register (power_on)
    // clears the error, and the carrier comes back with the next INIT_IB.
    void raise_catas(uint32_t syndrome);
    bool catas() const { return catas_[0] != 0; }
    // Dword `i` of the error buffer (0 past its end).
    uint32_t catas_word(unsigned i) const { return i < catas_.size() ? catas_[i] : 0; }

    // --- introspection (tests, debugging) --------------------------------
    FwState fw_state() const { return state_; }
    const HcaLayout& layout() const { return layout_; }
    const Icm& icm() const { return icm_; }
    const Eq* find_eq(uint32_t eqn) const;
    const Cq* find_cq(uint32_t cqn) const;
    const Qp* find_qp(uint32_t qpn) const;
    const Mpt* find_mpt(uint32_t index) const;
    const Srq* find_srq(uint32_t srqn) const;
    std::span<const Port> ports() const { return {ports_.data(), num_ports_}; }
    // Port `port`'s trap counters (1-based; zeros past num_ports).
    TrapCounters trap_counters(unsigned port) const
    {
        return port >= 1 && port <= num_ports_ ? trap_counters_[port - 1] : TrapCounters{};
    }
    uint64_t intx_cause() const { return events_.intx_cause(); }
    bool intx_level() const { return events_.intx_level(); }
    const DoorbellStats& doorbells() const { return db_; }
    // Host memory the model spends on this guest's objects, as counted
    // against MthcaConfig::max_model_bytes (set_model_memory_cap: tests).
    uint64_t model_bytes() const;
    void set_model_memory_cap(uint64_t bytes) { cfg_.max_model_bytes = bytes; }
    // DMA accesses refused while Bus Master Enable was clear.
    uint64_t dma_refused() const { return mem_.refused(); }
    uint64_t commands_executed() const { return commands_; }
    // Translate (lkey, va) to guest-physical through MPT/MTT; used for EQ
    // and CQ buffers and later the data path.
    bool tpt_access(uint32_t lkey, uint32_t pd, uint64_t va, void* buf, size_t len, bool write);

    const std::string& name() const { return cfg_.name; }

private:
    // ---- QP engine (qp_engine.cc) ----------------------------------------
    struct Sge {
        uint32_t len;
        uint32_t lkey;
        uint64_t addr;
        const Mpt* mr;
    };
    static constexpr unsigned kMaxSge = 64;
    // Packets one call of the SQ engine, or of a READ response, may send
    // before it leaves the rest to poll(): bounds the work of one MMIO
    // write or one received packet (about 1 MiB at a 4 KiB MTU).
    static constexpr uint32_t kSqBudget = 256;
    struct WqeView;  // a fetched and parsed send WQE
    struct RxCtx;    // a parsed received packet
    struct Gather;   // builds a packet's payload list

    Qp* qp_lookup(uint32_t qpn);
    Cq* cq_lookup(uint32_t cqn);
    Srq* srq_lookup(uint32_t srqn);
    // A doorbell for a queue that `owner` (its context's UAR) owns arrived
    // through page `uar`; false (counted, logged once) if they differ.
    bool uar_owns(uint32_t uar, uint32_t owner, const char* what, uint32_t num);
    // Room for `bytes` more under the model memory cap; lazy_alloc also
    // counts them (the per-QP state allocated at first use).
    bool room_for(uint64_t bytes) const { return model_bytes() + bytes <= cfg_.max_model_bytes; }
    bool lazy_alloc(uint64_t bytes);
    static uint64_t qp_lazy_bytes(const Qp& q);
    uint64_t uarc_record(uint32_t uar, uint32_t index) const;
    bool read_db_record(uint32_t uar, uint32_t index, uint32_t* v, uint32_t* v1 = nullptr);
    // MPT checks for a data access.
    enum class Tpt : uint8_t { Ok, BadKey, Bounds, Access };
    static const char* tpt_name(Tpt t);
    Tpt mr_check(uint32_t key, uint32_t pd, uint64_t va, uint64_t len, uint32_t need, const Mpt** out);
    // Guest-physical pieces of [va, va+len) in region m: fn(gpa, n) -> bool.
    template <class F>
    bool mr_walk(const Mpt& m, uint64_t va, uint64_t len, F&& fn);
    bool mr_fill_cache(const Mpt& m, uint64_t va);
    // Re-read MPT `m` from its ICM slot, as the firmware does when it uses
    // a key: a driver that rewrote the entry in place (a mem-free FMR map
    // or unmap) is seen at once, and a changed entry drops the cached
    // translation. False if the entry is now unusable (fw_objects.cc).
    bool mpt_current(const Mpt& m);
    // Decode and check m.raw into m's fields; nullptr, or why it is bad.
    const char* mpt_decode(Mpt& m) const;
    bool place(const Mpt& m, uint64_t va, const Packet& p, uint32_t poff, uint32_t len);
    bool mr_write(const Mpt& m, uint64_t va, const uint8_t* src, uint32_t len);
    bool mr_read(const Mpt& m, uint64_t va, uint8_t* dst, uint32_t len);

    // CQEs and events.
    bool cqe_post(uint32_t cqn, std::span<const uint8_t, 32> e, bool solicited);
    void cqe_send(Qp& q, uint32_t wqe, uint8_t op, uint32_t byte_cnt);
    void cqe_error(Qp& q, bool is_send, uint32_t wqe, uint8_t syndrome, uint32_t cqn);
    void qp_event(uint8_t type, uint32_t qpn);
    // To ERR: the oldest started send WQE completes with `syndrome` (if
    // send_side), everything else flushes; `event` (0 = none) is raised.
    void qp_to_error(Qp& q, uint8_t syndrome, bool send_side, uint8_t event);
    void qp_to_sqe(Qp& q);
    void sq_flush(Qp& q);
    void qp_flush(Qp& q);
    void qp_state_changed(Qp& q, QpState from);
    // The data path's QpAttr, decoded from the merged q.ctx; run state
    // (expected/next PSNs, retry budgets) starts at INIT2RTR/RTR2RTS.
    void apply_qp_context(Qp& q, uint16_t opcode);
    // Path migration (IBA 17.2.8): the alternate path becomes the primary
    // (the two 0x20-byte path blocks of the context swap places, so QUERY_QP
    // shows the old primary as the alternate), the state goes to MIGRATED
    // and, for a migration the remote side started, the PATH_MIG event is
    // raised. False (and nothing changes) when the alternate path names no
    // port of this HCA.
    bool qp_migrate(Qp& q, bool event);
    Status check_path_migration(Cmd& c, const Qp& q, QpState to, uint32_t optmask, std::span<const uint8_t> ctx,
                                bool* migrate);
    void set_pm_state(Qp& q, uint8_t pm);

    // Packets out (qp_packet.cc) and the requester (qp_requester.cc).
    struct Route {
        uint8_t port = 1;
        uint16_t dlid = 0;
        uint8_t sl = 0, path_bits = 0;
        bool grh = false;
        const uint8_t* dgid = nullptr;
        uint8_t hop = 0, tclass = 0;
        uint32_t flow = 0;
        bool migreq = false;  // BTH MigReq: an RC/UC QP in MIGRATED sends 1
    };
    Route route_of(const Qp& q) const;
    size_t build_headers(Packet& p, const Route& rt, uint8_t opcode, bool se, uint16_t pkey, uint32_t dqpn,
                         bool ackreq, uint32_t psn);
    void finish_packet(Packet& p, size_t hdr_len);
    void transmit(unsigned port, Packet& p);
    // Link-level flow control: the port's wire has credits for a packet of
    // `payload` bytes on route `rt` (IBA 7.9). A QP told no stops sending
    // and resumes from poll() once port_tx_ready() says credits came back.
    bool tx_room(const Route& rt, uint32_t payload);
    bool ud_tx_room(Qp& q, WqeView& w);
    bool mlx_tx_room(Qp& q, const WqeView& w);
    void mlx_fixup(unsigned port, Packet& p, uint32_t flags);
    // Unicast DLID addressed to this port (LID 0 is never anyone's).
    static bool is_own_lid(const Port& pt, uint16_t dlid)
    {
        if (dlid == 0 || dlid >= 0xc000 || pt.lid == 0)  // none, multicast/permissive, no LID yet
            return false;
        uint16_t mask = uint16_t(~((1u << pt.lmc) - 1));
        return (dlid & mask) == (pt.lid & mask);
    }
    // One host pointer for the whole gather list of `w` when it is a single
    // SGE in one mapped contiguous run (the common RDMA WRITE/SEND case);
    // valid for the current call only.
    const uint8_t* map_whole_message(const WqeView& w);
    uint8_t* bounce();
    Packet& tx_packet();
    void send_doorbell(Qp& q, uint32_t hi, uint32_t lo);
    void sq_progress(Qp& q);
    void sq_pump(Qp& q, const WqeView* fresh);
    bool sq_fetch(Qp& q, uint32_t wqe, uint8_t size, WqeView& w);
    bool parse_segments(WqeView& w, uint8_t service, unsigned* seg_start);
    uint8_t parse_gather(Qp& q, WqeView& w, unsigned seg_start, bool mlx);
    bool gather_range(const WqeView& w, uint64_t off, uint32_t n, Gather& g, unsigned first_sge);
    uint8_t sq_execute(Qp& q, WqeView& w);  // 0 or a CQE syndrome
    bool emit_message(Qp& q, const WqeView& w, uint32_t idx, uint32_t npkts);
    void rc_retransmit(Qp& q);
    void arm_timer(Qp& q, uint64_t when);
    // An ACK syndrome of kAethAck | kAethCreditsInvalid goes out with the
    // responder's real credit count (aeth_credits).
    void send_ack(unsigned port, Qp& q, uint8_t syndrome, uint32_t psn, uint32_t msn);
    uint8_t aeth_credits(Qp& q);
    bool resp_tx_room(Qp& q, const RespEntry& x);
    void send_atomic_ack(unsigned port, Qp& q, uint32_t psn, uint64_t orig, uint32_t msn);
    // The RC responder's owed responses (qp_responder.cc).
    bool respond(Qp& q, const RespEntry& x);
    void resp_progress(Qp& q);
    uint32_t resp_rd_atomic(const QpRun& r) const;
    // Send NAK `code` for `psn`; the class C codes take the QP to ERR with
    // their affiliated asynchronous event (qp_responder.cc).
    void responder_nak(Qp& q, unsigned port, uint8_t code, uint32_t psn, uint32_t msn);

    // Receive dispatch (qp_engine.cc); requests go to the responder
    // (qp_responder.cc), responses to the completer (qp_completer.cc).
    // loopback: sent by this port to itself.
    void rx_packet(unsigned port, const Packet& p, bool loopback);
    void rx_deliver(unsigned port, RxCtx& rx, Qp& q);
    void rx_ud(unsigned port, RxCtx& rx, Qp& q);
    bool from_primary_path(unsigned port, const RxCtx& rx, const Qp& q) const;
    bool from_alternate_path(unsigned port, const RxCtx& rx, const Qp& q) const;
    void rx_rc_request(unsigned port, RxCtx& rx, Qp& q);
    void rx_uc(unsigned port, RxCtx& rx, Qp& q);
    void rx_rc_response(unsigned port, RxCtx& rx, Qp& q);
    void rx_multicast(unsigned port, RxCtx& rx);
    bool rq_take(Qp& q, uint32_t* wqe_off, bool peek);
    bool rq_scatter(Qp& q, uint32_t wqe_off, uint32_t off, const RxCtx& rx, uint32_t pay_off, uint32_t len,
                    const uint8_t* prefix, uint32_t prefix_len, uint8_t* syndrome);
    void rq_complete(Qp& q, uint32_t wqe_off, uint32_t byte_cnt, uint8_t bth_op, uint32_t imm_or_pkey,
                     const RxCtx& rx, bool solicited);
    void rc_ack_upto(Qp& q, uint32_t psn, bool data_ok);
    // End-to-end credits of the RC requester (qp_completer.cc).
    bool rc_take_credits(Qp& q, const RxCtx& rx);
    void rc_response(unsigned port, RxCtx& rx, Qp& q);
    bool pkey_ok(const Port& pt, uint16_t pkey, const Qp& q, uint8_t* index);

    // Traps (traps.cc).
    static uint64_t trap_interval_ns(const Port& p);
    void raise_trap(unsigned port, TrapKind kind, std::span<const uint8_t> notice);
    void trap_deliver(unsigned port, TrapKind kind, const TrapSlot& t);
    void trap_repress(unsigned port, uint64_t tid);
    uint64_t trap_poll(uint64_t now_ns);
    void trap_key_violation(unsigned port, TrapKind kind, const RxCtx& rx, uint32_t key, uint32_t src_qp);
    uint64_t trap_tid_ = 0x4d54000000000000ull;
    std::array<uint8_t, 256> trap_mad_{};
    // By port; not cleared by power_on (the slots in Port are).
    std::array<TrapCounters, 2> trap_counters_{};
    uint32_t mgid_hash_of(std::span<const uint8_t, 16> gid) const;

    std::array<Wire*, 2> wires_{};
    // Port::arb_gen last given to each port's wire (set_arbitration).
    std::array<uint32_t, 2> arb_pushed_{~0u, ~0u};
    // The VL a data packet with `sl` leaves `pt` on (its SLtoVLMappingTable;
    // VL15 is for SMPs only, so a data SL mapped there goes on VL0).
    static uint8_t data_vl(const Port& pt, uint8_t sl)
    {
        uint8_t vl = sl_to_vl(pt.sl2vl.data(), sl);
        return vl == 15 ? 0 : vl;
    }
    // Bumped whenever cached translations may be stale (MTT writes, ICM
    // map changes, SYNC_TPT) or objects go away (MPTs, QPs).
    uint64_t tpt_gen_ = 1;
    uint64_t obj_gen_ = 1;
    uint32_t last_key_ = 0;
    const Mpt* last_mpt_ = nullptr;
    uint64_t last_mpt_gen_ = 0;
    uint32_t last_qpn_ = 0;
    Qp* last_qp_ = nullptr;
    uint64_t last_qp_gen_ = 0;
    // The current time: one read of cfg_.clock, never earlier than the last
    // poll(). Every timer is armed from it.
    uint64_t now();
    uint64_t now_ = 0;
    uint64_t next_deadline_ = UINT64_MAX;
    // Send arbitration: poll() serves the QPs round robin from the one
    // after the QP it served first last time, so no QP always goes first
    // when link credits come back.
    uint32_t rr_qpn_ = 0;
    unsigned err_qps_ = 0;          // QPs in ERR whose RQ may need flushing
    unsigned tx_depth_ = 0;
    std::array<std::array<uint8_t, 4096 + 64>, 4> bounce_{};
    std::array<Packet, 4> tx_pkts_{};

    using Handler = Status (Core::*)(Cmd&);
    struct CommandDesc {
        uint16_t opcode;
        const char* name;
        Handler handler;
        uint8_t states;  // bit per FwState
    };
    static const CommandDesc kCommands[];
    static const CommandDesc* find_command(uint16_t opcode);

    void execute();
    Status fail(Cmd& c, Status s, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

    // Mailbox helpers: false (and a guest error) on a DMA fault.
    bool read_box(Cmd& c, uint64_t gpa, std::span<uint8_t> dst);
    bool write_box(Cmd& c, uint64_t gpa, std::span<const uint8_t> src);

    // fw_init.cc
    Status cmd_query_fw(Cmd&);
    Status cmd_enable_lam(Cmd&);
    Status cmd_disable_lam(Cmd&);
    Status cmd_sys_en(Cmd&);
    Status cmd_map_fa(Cmd&);
    Status cmd_unmap_fa(Cmd&);
    Status cmd_run_fw(Cmd&);
    Status cmd_query_dev_lim(Cmd&);
    Status cmd_query_adapter(Cmd&);
    Status cmd_set_icm_size(Cmd&);
    Status cmd_map_icm_aux(Cmd&);
    Status cmd_unmap_icm_aux(Cmd&);
    Status cmd_map_icm(Cmd&);
    Status cmd_unmap_icm(Cmd&);
    Status cmd_init_hca(Cmd&);
    Status cmd_close_hca(Cmd&);
    Status cmd_init_ib(Cmd&);
    Status cmd_close_ib(Cmd&);
    Status cmd_set_ib(Cmd&);
    Status cmd_mad_ifc(Cmd&);
    Status cmd_nop(Cmd&);
    Status cmd_sync_tpt(Cmd&);
    Status map_chunks(Cmd& c, bool need_virt, std::vector<IcmChunk>* out);

    // fw_objects.cc
    Status cmd_sw2hw_eq(Cmd&);
    Status cmd_hw2sw_eq(Cmd&);
    Status cmd_query_eq(Cmd&);
    Status cmd_map_eq(Cmd&);
    Status cmd_sw2hw_cq(Cmd&);
    Status cmd_hw2sw_cq(Cmd&);
    Status cmd_query_cq(Cmd&);
    Status cmd_resize_cq(Cmd&);
    Status cmd_sw2hw_srq(Cmd&);
    Status cmd_hw2sw_srq(Cmd&);
    Status cmd_query_srq(Cmd&);
    Status cmd_arm_srq(Cmd&);
    Status cmd_sw2hw_mpt(Cmd&);
    Status cmd_hw2sw_mpt(Cmd&);
    Status cmd_query_mpt(Cmd&);
    Status cmd_write_mtt(Cmd&);
    Status cmd_read_mgm(Cmd&);
    Status cmd_write_mgm(Cmd&);
    Status cmd_mgid_hash(Cmd&);
    void encode_eq(const Eq& e, std::span<uint8_t> out) const;
    void encode_cq(const Cq& q, std::span<uint8_t> out) const;
    // Context slot of object `index` in table at `base` with `entry` bytes;
    // false if that ICM is not mapped.
    bool context_mapped(uint64_t base, uint32_t index, unsigned entry) const;

    // fw_qp.cc
    Status cmd_modify_qp(Cmd&);
    Status cmd_query_qp(Cmd&);
    Status cmd_conf_special_qp(Cmd&);
    SpecialQp special_kind(uint32_t qpn, uint8_t* port) const;

    // Every attached port's transmitter on or off (core.cc).
    // A port's transmitter is on while the port is open (INIT_IB until
    // CLOSE_IB, CLOSE_HCA or a reset) and the chip has not failed: an
    // InfiniHost port only trains its link once the driver has opened it,
    // so the switch (and the SM behind it) sees the link come up when the
    // port's SMA can answer, and go down again when the driver closes it.
    // Called wherever one of those inputs changes.
    void update_carrier();

    // events.cc
    void complete_event(const Cmd& c, Status s);

    MthcaConfig cfg_;
    BusMasterGate mem_;
    uint64_t lazy_bytes_ = 0;  // sum of qp_lazy_bytes over qps_
    InterruptSink& irq_;
    const ConfigSpace& cfgspace_;
    unsigned num_ports_;

    FwState state_ = FwState::Off;
    std::array<uint32_t, 7> hcr_{};
    uint64_t commands_ = 0;

    Icm icm_;
    PhysArea fa_, aux_;
    uint64_t aux_needed_ = 0;  // pages, from SET_ICM_SIZE
    bool icm_size_set_ = false;
    HcaLayout layout_;

    EventUnit events_;  // EQs and interrupts
    std::map<uint32_t, Cq> cqs_;    // by index (cqn & (num_cqs - 1))
    std::map<uint32_t, Srq> srqs_;  // by index
    std::map<uint32_t, Mpt> mpts_;  // by index
    std::map<uint32_t, Qp> qps_;    // by index; absent = RESET
    std::array<uint32_t, 4> special_base_{};  // by CONF_SPECIAL_QP op_mod; 0 = none

    std::array<uint32_t, kCatasDwords> catas_{};  // the error buffer; all 0 = healthy

    std::array<Port, 2> ports_;
    NodeIdentity node_;
    Sma sma_;
    DoorbellStats db_;
    // The hi dwords written by uar_doorbell_half, by (uar, doorbell): one
    // slot for each of the three doorbells of every UAR page. Cleared by
    // power_on and as each is consumed.
    static constexpr unsigned kUarDoorbells = 3;
    std::array<uint32_t, (kBar2Size >> kUarPageShift) * kUarDoorbells> db_hi_latch_{};
    friend struct Gather;
};

}  // namespace ibemu::mthca
