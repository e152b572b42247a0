// SPDX-License-Identifier: GPL-2.0
//
// HCR handling, the command table and dispatch.
#include "hca/core.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"
#include "hca/regs.h"

namespace ibemu::mthca {

const char* fw_state_name(FwState s)
{
    switch (s) {
    case FwState::Off: return "OFF";
    case FwState::Running: return "RUNNING";
    case FwState::HcaUp: return "HCA_UP";
    }
    return "?";
}

namespace {
constexpr uint8_t kOff = 1u << unsigned(FwState::Off);
constexpr uint8_t kRun = 1u << unsigned(FwState::Running);
constexpr uint8_t kUp = 1u << unsigned(FwState::HcaUp);
constexpr uint8_t kAny = kOff | kRun | kUp;
}  // namespace

// The command table: opcode, name for the log, handler, and the firmware
// states in which the command is accepted (otherwise BAD_SYS_STATE).
const Core::CommandDesc Core::kCommands[] = {
    {op::kQueryFw, "QUERY_FW", &Core::cmd_query_fw, kAny},
    {op::kEnableLam, "ENABLE_LAM", &Core::cmd_enable_lam, kOff | kRun},
    {op::kSysEn, "SYS_EN", &Core::cmd_sys_en, kOff},
    {op::kSysDis, "SYS_DIS", &Core::cmd_disable_lam, kOff | kRun},
    {op::kMapFa, "MAP_FA", &Core::cmd_map_fa, kOff},
    {op::kUnmapFa, "UNMAP_FA", &Core::cmd_unmap_fa, kOff | kRun},
    {op::kRunFw, "RUN_FW", &Core::cmd_run_fw, kOff},
    {op::kQueryDevLim, "QUERY_DEV_LIM", &Core::cmd_query_dev_lim, kRun | kUp},
    {op::kQueryAdapter, "QUERY_ADAPTER", &Core::cmd_query_adapter, kRun | kUp},
    {op::kSetIcmSize, "SET_ICM_SIZE", &Core::cmd_set_icm_size, kRun},
    {op::kMapIcmAux, "MAP_ICM_AUX", &Core::cmd_map_icm_aux, kRun},
    {op::kUnmapIcmAux, "UNMAP_ICM_AUX", &Core::cmd_unmap_icm_aux, kRun},
    {op::kMapIcm, "MAP_ICM", &Core::cmd_map_icm, kRun | kUp},
    {op::kUnmapIcm, "UNMAP_ICM", &Core::cmd_unmap_icm, kRun | kUp},
    {op::kInitHca, "INIT_HCA", &Core::cmd_init_hca, kRun},
    {op::kCloseHca, "CLOSE_HCA", &Core::cmd_close_hca, kUp},
    {op::kInitIb, "INIT_IB", &Core::cmd_init_ib, kUp},
    {op::kCloseIb, "CLOSE_IB", &Core::cmd_close_ib, kUp},
    {op::kSetIb, "SET_IB", &Core::cmd_set_ib, kUp},
    {op::kNop, "NOP", &Core::cmd_nop, kRun | kUp},
    {op::kSyncTpt, "SYNC_TPT", &Core::cmd_sync_tpt, kUp},
    {op::kMapEq, "MAP_EQ", &Core::cmd_map_eq, kUp},
    {op::kSw2HwEq, "SW2HW_EQ", &Core::cmd_sw2hw_eq, kUp},
    {op::kHw2SwEq, "HW2SW_EQ", &Core::cmd_hw2sw_eq, kUp},
    {op::kQueryEq, "QUERY_EQ", &Core::cmd_query_eq, kUp},
    {op::kSw2HwCq, "SW2HW_CQ", &Core::cmd_sw2hw_cq, kUp},
    {op::kHw2SwCq, "HW2SW_CQ", &Core::cmd_hw2sw_cq, kUp},
    {op::kQueryCq, "QUERY_CQ", &Core::cmd_query_cq, kUp},
    {op::kResizeCq, "RESIZE_CQ", &Core::cmd_resize_cq, kUp},
    {op::kSw2HwSrq, "SW2HW_SRQ", &Core::cmd_sw2hw_srq, kUp},
    {op::kHw2SwSrq, "HW2SW_SRQ", &Core::cmd_hw2sw_srq, kUp},
    {op::kQuerySrq, "QUERY_SRQ", &Core::cmd_query_srq, kUp},
    {op::kArmSrq, "ARM_SRQ", &Core::cmd_arm_srq, kUp},
    {op::kSw2HwMpt, "SW2HW_MPT", &Core::cmd_sw2hw_mpt, kUp},
    {op::kHw2SwMpt, "HW2SW_MPT", &Core::cmd_hw2sw_mpt, kUp},
    {op::kQueryMpt, "QUERY_MPT", &Core::cmd_query_mpt, kUp},
    {op::kWriteMtt, "WRITE_MTT", &Core::cmd_write_mtt, kUp},
    {op::kRst2Init, "RST2INIT_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kInit2Init, "INIT2INIT_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kInit2Rtr, "INIT2RTR_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kRtr2Rts, "RTR2RTS_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kRts2Rts, "RTS2RTS_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kSqerr2Rts, "SQERR2RTS_QPEE", &Core::cmd_modify_qp, kUp},
    {op::k2Err, "2ERR_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kRts2Sqd, "RTS2SQD_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kSqd2Sqd, "SQD2SQD_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kSqd2Rts, "SQD2RTS_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kErr2Rst, "ERR2RST_QPEE", &Core::cmd_modify_qp, kUp},
    {op::kQueryQp, "QUERY_QPEE", &Core::cmd_query_qp, kUp},
    {op::kConfSpecialQp, "CONF_SPECIAL_QP", &Core::cmd_conf_special_qp, kUp},
    {op::kMadIfc, "MAD_IFC", &Core::cmd_mad_ifc, kUp},
    {op::kReadMgm, "READ_MGM", &Core::cmd_read_mgm, kUp},
    {op::kWriteMgm, "WRITE_MGM", &Core::cmd_write_mgm, kUp},
    {op::kMgidHash, "MGID_HASH", &Core::cmd_mgid_hash, kUp},
};

const Core::CommandDesc* Core::find_command(uint16_t opcode)
{
    for (const CommandDesc& d : kCommands)
        if (d.opcode == opcode)
            return &d;
    return nullptr;
}

Core::Core(const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq, const ConfigSpace& cfgspace)
    : cfg_(cfg),
      mem_(mem, cfgspace, cfg_.name),
      irq_(irq),
      cfgspace_(cfgspace),
      num_ports_(cfg.num_ports == 2 ? 2 : 1),
      icm_(mem_),
      events_(cfg_.name, irq, cfgspace,
              [this](uint32_t lkey, uint32_t pd, uint64_t va, std::span<uint8_t> eqe) {
                  return tpt_access(lkey, pd, va, eqe.data(), eqe.size(), true);
              })
{
    if (cfg.num_ports != 1 && cfg.num_ports != 2)
        IBEMU_ERROR(cfg_.name, "num_ports %u unsupported, using 1", cfg.num_ports);
    node_.node_guid = cfg.node_guid;
    node_.sys_image_guid = cfg.node_guid;
    node_.device_id = kDeviceId;
    node_.revision = kRevisionA0;
    node_.vendor_id = 0x0002c9;  // Mellanox OUI
    node_.description = "ibemu " + cfg.name + " MT25208 HCA";
    power_on();
}

bool BusMasterGate::allowed(uint64_t gpa, size_t len)
{
    if (cfg_.bus_master()) {
        warned_ = false;
        return true;
    }
    ++refused_;
    if (!warned_) {
        warned_ = true;
        IBEMU_GUEST_ERROR(name_, "DMA to 0x%llx (+%zu) while Bus Master Enable is clear: refused (and every other "
                          "until it is set)", (unsigned long long)gpa, len);
    }
    return false;
}

uint64_t Core::model_bytes() const
{
    constexpr uint64_t kNode = 48;  // what a std::map node adds, roughly
    return qps_.size() * (sizeof(Qp) + kNode) + cqs_.size() * (sizeof(Cq) + kNode) +
           srqs_.size() * (sizeof(Srq) + kNode) + mpts_.size() * (sizeof(Mpt) + kNode) + lazy_bytes_;
}

uint64_t Core::qp_lazy_bytes(const Qp& q)
{
    return q.r.out.capacity() * sizeof(SendEntry) + q.r.atomics.capacity() * sizeof(QpRun::AtomicResult) +
           q.r.resp.capacity() * sizeof(RespEntry);
}

bool Core::lazy_alloc(uint64_t bytes)
{
    if (!room_for(bytes)) {
        IBEMU_GUEST_ERROR(cfg_.name, "QP state of %llu bytes refused: the model already holds %llu of its %llu",
                          (unsigned long long)bytes, (unsigned long long)model_bytes(),
                          (unsigned long long)cfg_.max_model_bytes);
        return false;
    }
    lazy_bytes_ += bytes;
    return true;
}

void Core::power_on()
{
    state_ = FwState::Off;
    arb_pushed_.fill(~0u);
    hcr_.fill(0);
    icm_.reset();
    fa_.clear();
    aux_.clear();
    aux_needed_ = 0;
    icm_size_set_ = false;
    layout_ = HcaLayout{};
    events_.power_on();
    cqs_.clear();
    srqs_.clear();
    mpts_.clear();
    qps_.clear();
    lazy_bytes_ = 0;
    ++obj_gen_;
    ++tpt_gen_;
    special_base_.fill(0);
    for (unsigned p = 0; p < 2; ++p) {
        // The cable stays plugged across a reset: keep what the fabric
        // told us about the physical link.
        bool link = ports_[p].link_present;
        uint8_t width = ports_[p].width_active, speed = ports_[p].speed_active;
        uint16_t mtu = ports_[p].mtu_active;
        ports_[p].power_on(p + 1, node_.node_guid + p + 1);
        ports_[p].link_present = link;
        ports_[p].width_active = width, ports_[p].speed_active = speed, ports_[p].mtu_active = mtu;
        ports_[p].update_phys();
    }
    db_ = DoorbellStats{};
    db_hi_latch_.fill(0);
    if (catas()) {
        catas_.fill(0);
        IBEMU_INFO(cfg_.name, "reset clears the catastrophic error");
    }
    update_carrier();
}

void Core::raise_catas(uint32_t syndrome)
{
    if (catas()) {
        IBEMU_INFO(cfg_.name, "catastrophic error raised again: the buffer keeps 0x%08x", catas_[0]);
        return;
    }
    catas_[0] = syndrome ? syndrome : 1;
    IBEMU_INFO(cfg_.name, "catastrophic error 0x%08x: data path stopped, carrier off", catas_[0]);
    update_carrier();
}

void Core::update_carrier()
{
    for (unsigned p = 0; p < num_ports_; ++p)
        if (wires_[p])
            wires_[p]->set_carrier(ports_[p].ib_open && !catas());
}

uint32_t Core::hcr_read(unsigned dword) const { return dword < hcr_.size() ? hcr_[dword] : 0; }

void Core::hcr_write(unsigned dword, uint32_t value)
{
    if (dword >= hcr_.size())
        return;
    if (dword != kHcrStatus / 4) {
        hcr_[dword] = value;
        return;
    }
    // The status byte is read-only to software.
    hcr_[dword] = (hcr_[dword] & 0xff000000u) | (value & 0x00ffffffu);
    if (value & kHcrGoBit)
        execute();
}

Status Core::fail(Cmd& c, Status s, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const CommandDesc* d = find_command(c.opcode);
    IBEMU_GUEST_ERROR(cfg_.name, "%s (0x%03x) in_mod 0x%x op_mod %u: %s -> %s", d ? d->name : "?", c.opcode,
                      c.in_mod, c.op_mod, buf, status_name(s));
    return s;
}

bool Core::read_box(Cmd& c, uint64_t gpa, std::span<uint8_t> dst)
{
    if (mem_.read(gpa, dst.data(), dst.size()))
        return true;
    fail(c, Status::InternalErr, "input mailbox 0x%llx (+%zu) is not guest RAM", (unsigned long long)gpa,
         dst.size());
    return false;
}

bool Core::write_box(Cmd& c, uint64_t gpa, std::span<const uint8_t> src)
{
    if (mem_.write(gpa, src.data(), src.size()))
        return true;
    fail(c, Status::InternalErr, "output mailbox 0x%llx (+%zu) is not guest RAM", (unsigned long long)gpa,
         src.size());
    return false;
}

void Core::execute()
{
    Cmd c;
    c.in_param = uint64_t(hcr_[0]) << 32 | hcr_[1];
    c.in_mod = hcr_[2];
    c.out_param = uint64_t(hcr_[3]) << 32 | hcr_[4];
    c.token = uint16_t(hcr_[5] >> 16);
    uint32_t ctl = hcr_[6];
    c.opcode = uint16_t(ctl & 0xfff);
    c.op_mod = uint8_t((ctl >> 12) & 0xff);
    c.event = ctl & kHcrEventBit;
    ++commands_;

    Status s;
    const CommandDesc* d = find_command(c.opcode);
    if (!d) {
        s = fail(c, Status::BadOp, "unknown opcode");
    } else if (!(d->states & (1u << unsigned(state_)))) {
        s = fail(c, Status::BadSysState, "not allowed in firmware state %s", fw_state_name(state_));
    } else {
        s = (this->*d->handler)(c);
    }

    if (c.has_imm) {
        hcr_[3] = uint32_t(c.out_imm >> 32);
        hcr_[4] = uint32_t(c.out_imm);
    }
    // Completion: status in the top byte, go bit cleared.
    hcr_[6] = (uint32_t(s) << 24) | (ctl & 0x003fffffu);
    // The log line integrators will read when the real driver misbehaves.
    IBEMU_INFO(cfg_.name, "cmd %s (0x%03x) in 0x%llx mod 0x%x opmod %u%s -> %s%s%s",
               d ? d->name : "UNKNOWN", c.opcode, (unsigned long long)c.in_param, c.in_mod, c.op_mod,
               c.event ? " [event]" : "", status_name(s), c.note.empty() ? "" : ": ", c.note.c_str());
    if (c.event)
        complete_event(c, s);
}

const Eq* Core::find_eq(uint32_t eqn) const
{
    return events_.find(eqn);
}

const Cq* Core::find_cq(uint32_t cqn) const
{
    auto it = cqs_.find(cqn & ((1u << layout_.log_cqs) - 1));
    return it == cqs_.end() || it->second.cqn != cqn ? nullptr : &it->second;
}

const Qp* Core::find_qp(uint32_t qpn) const
{
    auto it = qps_.find(qpn & ((1u << layout_.log_qps) - 1));
    return it == qps_.end() || it->second.qpn != qpn ? nullptr : &it->second;
}

const Mpt* Core::find_mpt(uint32_t index) const
{
    auto it = mpts_.find(index);
    return it == mpts_.end() ? nullptr : &it->second;
}

const Srq* Core::find_srq(uint32_t srqn) const
{
    auto it = srqs_.find(srqn & ((1u << layout_.log_srqs) - 1));
    return it == srqs_.end() || it->second.srqn != srqn ? nullptr : &it->second;
}

}  // namespace ibemu::mthca
