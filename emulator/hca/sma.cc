// SPDX-License-Identifier: GPL-2.0
#include "hca/sma.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "hca/wire.h"
#include "ib/attributes.h"
#include "ib/notice.h"

namespace ibemu::mthca {

namespace {

// NodeInfo (IBA 14.2.5.3), PortInfo (14.2.5.6) and PortCounters
// (16.1.3.5), shared with the switch's SMA and PMA.
namespace nodeinfo = ib::nodeinfo;
namespace portinfo = ib::portinfo;
namespace portcounters = ib::portcounters;

void fill_port_info(const Port& p, std::span<uint8_t> d)
{
    using namespace portinfo;
    const FieldValue table[] = {
        {kMkey, p.mkey.key()},
        {kGidPrefix, p.gid_prefix},
        {kLid, p.lid},
        {kMasterSmLid, p.sm_lid},
        {kCapMask, p.cap_mask},
        {kDiagCode, 0},
        {kMkeyLease, p.mkey.lease_period()},
        {kLocalPortNum, p.num},
        // Active within enabled within supported, whatever the fabric's
        // link description offers (an SDR-only 4x port on a DDR or 12x
        // link trains at SDR, 4x).
        {kWidthEnabled, uint64_t(p.width_cap & kHcaWidths)},
        {kWidthSupported, kHcaWidths},
        {kWidthActive, trained_width(p.width_active, p.width_cap)},
        {kSpeedSupported, kHcaSpeeds},
        {kPortState, uint64_t(p.state)},
        {kPhysState, uint64_t(p.phys)},
        {kDownDefault, uint64_t(PhysState::Polling)},
        {kMkeyProtect, p.mkey.protect()},
        {kLmc, p.lmc},
        {kSpeedActive, kHcaSpeeds},  // SDR: the only speed there is
        {kSpeedEnabled, kHcaSpeeds},
        {kNeighborMtu, p.neighbor_mtu},
        {kMasterSmSl, p.sm_sl},
        {kVlCap, p.vl_cap},
        {kInitType, 0},
        {kVlHighLimit, p.vl_high_limit},
        {kVlArbHighCap, 8},
        {kVlArbLowCap, 8},
        {kInitTypeReply, 0},
        {kMtuCap, p.mtu_cap},
        {kVlStallCount, 0},
        {kHoqLife, 0},
        {kOperationalVls, p.operational_vls},
        {kPartEnforce, 0},
        {kMkeyViolations, p.mkey.violations()},
        {kPkeyViolations, p.pkey_violations},
        {kQkeyViolations, p.qkey_violations},
        {kGuidCap, p.gid_cap},
        {kClientRereg, 0},
        {kSubnetTimeout, p.subnet_timeout},
        {kRespTime, 16},
        {kLocalPhyErrors, 0},
        {kOverrunErrors, 0},
    };
    fill(d, table);
}

// Trap 256 (IBA 14.2.5.1): who sent which SMP with what M_Key.
void bad_mkey_notice(const Port& p, std::span<const uint8_t> in, uint16_t slid, MadEffects* fx)
{
    namespace notice = ib::notice;
    bool dr = mad::kMgmtClass.get(in) == mad::kClassSubnDirected;
    unsigned hops = unsigned(smp::kHopCount.get(in));
    std::span<uint8_t> d(fx->notice);
    std::memset(d.data(), 0, d.size());
    const FieldValue ntc[] = {
        {notice::kIsGeneric, 1},
        {notice::kType, notice::kTypeSecurity},
        {notice::kProducerType, notice::kProducerCa},
        {notice::kTrapNumber, 256},
        {notice::kIssuerLid, p.lid},
        {notice::kTrap256Lid, slid},
        {notice::kTrap256DrSlid, dr ? smp::kDrSlid.get(in) : 0},
        {notice::kTrap256Method, mad::kMethod.get(in)},
        {notice::kTrap256AttrId, mad::kAttrId.get(in)},
        {notice::kTrap256AttrMod, mad::kAttrMod.get(in)},
        {notice::kTrap256Mkey, smp::kMkey.get(in)},
        {notice::kTrap256DrNotice, dr},
        {notice::kTrap256DrTrunc, dr && hops > notice::kTrap256PathLen},
        {notice::kTrap256DrHops, dr ? std::min<unsigned>(hops, notice::kTrap256PathLen) : 0},
    };
    fill(d, ntc);
    if (dr) {
        unsigned n = std::min<unsigned>(hops, notice::kTrap256PathLen);
        std::memcpy(d.data() + notice::kTrap256PathOffset, in.data() + smp::kReturnPathOffset + 1, n);
    }
    fx->bad_mkey = true;
}

}  // namespace

uint16_t Sma::smp_get(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                      std::span<uint8_t> d)
{
    switch (attr) {
    case mad::kAttrNodeDesc: {
        size_t n = node.description.size() < 64 ? node.description.size() : 64;
        std::memcpy(d.data(), node.description.data(), n);
        return 0;
    }
    case mad::kAttrNodeInfo: {
        using namespace nodeinfo;
        const FieldValue table[] = {
            {kBaseVersion, 1},
            {kClassVersion, 1},
            {kNodeType, kNodeTypeCa},
            {kNumPorts, ports.size()},
            {kSysImageGuid, node.sys_image_guid},
            {kNodeGuid, node.node_guid},
            {kPortGuid, p.guid},
            {kPartitionCap, node.partition_cap},
            {kDeviceId, node.device_id},
            {kRevision, node.revision},
            {kLocalPortNum, p.num},
            {kVendorId, node.vendor_id},
        };
        fill(d, table);
        return 0;
    }
    case mad::kAttrPortInfo: {
        // The attribute modifier names the port; 0 means "the port the
        // SMP arrived on" (IBA 14.2.5.6).
        Port* target = &p;
        if (mod != 0) {
            if (mod > ports.size())
                return mad::kStatusInvalidField;
            target = &ports[mod - 1];
        }
        fill_port_info(*target, d);
        return 0;
    }
    case mad::kAttrPkeyTable: {
        // 32 P_Keys per block (IBA 14.2.5.7).
        uint32_t block = mod & 0xffff;
        if (block >= kPkeyTableLen / 32)
            return mad::kStatusInvalidField;
        for (unsigned i = 0; i < 32; ++i)
            put16(d, i * 2, p.pkeys[block * 32 + i]);
        return 0;
    }
    case mad::kAttrGuidInfo: {
        // 8 GUIDs per block (IBA 14.2.5.5); only index 0 is assigned.
        if (mod >= kGidTableLen / 8)
            return mad::kStatusInvalidField;
        if (mod == 0)
            put64(d, 0, p.guid);
        return 0;
    }
    case mad::kAttrSlToVl:
        // All SLs on VL0 until an SM programs the table (IBA 14.2.5.8).
        // A CA's table is the port's the SMP arrived on.
        std::copy(p.sl2vl.begin(), p.sl2vl.end(), d.begin());
        return 0;
    case mad::kAttrVlArb: {
        // Blocks 1..4 (IBA 14.2.5.9), 32 entries of 2 bytes each.
        uint32_t block = (mod >> 16) & 0xffff;
        if (block < 1 || block > 4)
            return mad::kStatusInvalidField;
        std::copy(p.vlarb + (block - 1) * 64, p.vlarb + block * 64, d.begin());
        return 0;
    }
    default:
        return mad::kStatusUnsupMethodAttr;
    }
}

uint16_t Sma::smp_set(const NodeIdentity& node, std::span<Port> ports, Port& p, uint16_t attr, uint32_t mod,
                      std::span<const uint8_t> in, std::span<uint8_t> d)
{
    switch (attr) {
    case mad::kAttrPortInfo: {
        // Seam for the SM: take the fields a subnet manager assigns.
        using namespace portinfo;
        Port* target = &p;
        if (mod != 0) {
            if (mod > ports.size())
                return mad::kStatusInvalidField;
            target = &ports[mod - 1];
        }
        Port& t = *target;
        // Validate first: a Set refused with InvalidField changes nothing
        // (IBA 14.2.5.6; as the switch SMA does). PortState may ask for
        // NOP, DOWN, ARMED (from INIT or ARMED) or ACTIVE (from ARMED or
        // ACTIVE): the SM walks INIT -> ARMED -> ACTIVE, never INIT ->
        // ACTIVE, and a DOWN port (no trained link) takes neither. INIT
        // itself cannot be asked for; 5..15 are reserved.
        // PortPhysicalState may ask for NOP, POLLING or DISABLED (OpenSM
        // writes NOP); the HCA does not act on DISABLED (hca/README.md).
        auto ns = PortState(kPortState.get(in));
        bool trained = t.phys == PhysState::LinkUp;
        switch (ns) {
        case PortState::NoChange:
        case PortState::Down:
            break;
        case PortState::Armed:
            if (t.state != PortState::Init && t.state != PortState::Armed)
                return mad::kStatusInvalidField;
            break;
        case PortState::Active:
            if (t.state != PortState::Armed && t.state != PortState::Active)
                return mad::kStatusInvalidField;
            break;
        default:
            return mad::kStatusInvalidField;
        }
        uint8_t phys = uint8_t(kPhysState.get(in));
        if (phys != 0 && phys != uint8_t(PhysState::Polling) && phys != uint8_t(PhysState::Disabled))
            return mad::kStatusInvalidField;
        t.mkey.assign(kMkey.get(in), uint8_t(kMkeyProtect.get(in)), uint16_t(kMkeyLease.get(in)));
        t.mkey.set_violations(uint16_t(kMkeyViolations.get(in)));
        t.gid_prefix = kGidPrefix.get(in);
        t.lid = uint16_t(kLid.get(in));
        t.sm_lid = uint16_t(kMasterSmLid.get(in));
        t.lmc = uint8_t(kLmc.get(in));
        t.sm_sl = uint8_t(kMasterSmSl.get(in));
        t.subnet_timeout = uint8_t(kSubnetTimeout.get(in));
        if (uint8_t n = uint8_t(kNeighborMtu.get(in)); n >= 1 && n <= t.mtu_cap)
            t.neighbor_mtu = n;
        if (uint8_t v = uint8_t(kOperationalVls.get(in)); v >= 1 && v <= t.vl_cap)
            t.operational_vls = v;
        if (t.vl_high_limit != uint8_t(kVlHighLimit.get(in))) {
            t.vl_high_limit = uint8_t(kVlHighLimit.get(in));
            ++t.arb_gen;
        }
        if (ns == PortState::Down)
            t.state = PortState::Down;
        else if (ns != PortState::NoChange && trained)
            t.state = ns;
        return smp_get(node, ports, p, attr, mod, d);
    }
    case mad::kAttrPkeyTable: {
        uint32_t block = mod & 0xffff;
        if (block >= kPkeyTableLen / 32)
            return mad::kStatusInvalidField;
        for (unsigned i = 0; i < 32; ++i)
            p.pkeys[block * 32 + i] = get16(in, i * 2);
        return smp_get(node, ports, p, attr, mod, d);
    }
    case mad::kAttrSlToVl:
        // The data path maps each packet's SL to its VL with it.
        std::copy(in.begin(), in.begin() + 8, p.sl2vl.begin());
        return smp_get(node, ports, p, attr, mod, d);
    case mad::kAttrVlArb: {
        uint32_t block = (mod >> 16) & 0xffff;
        if (block < 1 || block > 4)
            return mad::kStatusInvalidField;
        // VLArbLowCap/HighCap: 8 entries of each table; the rest read 0.
        if (block == 1 || block == 3) {
            std::copy(in.begin(), in.begin() + 16, p.vlarb + (block - 1) * 64);
            ++p.arb_gen;
        }
        return smp_get(node, ports, p, attr, mod, d);
    }
    case mad::kAttrNodeInfo:
    case mad::kAttrNodeDesc:
    case mad::kAttrGuidInfo:
        // Accepted and ignored: answer with the current contents.
        return smp_get(node, ports, p, attr, mod, d);
    default:
        return mad::kStatusUnsupMethodAttr;
    }
}

uint16_t Sma::pma(Port& p, uint8_t method, uint16_t attr, std::span<const uint8_t> in, std::span<uint8_t> d)
{
    switch (attr) {
    case mad::kAttrClassPortInfo:
        // BaseVersion 1, ClassVersion 1, no optional capabilities
        // (IBA 13.4.8.1).
        put8(d, 0, 1);
        put8(d, 1, 1);
        return method == mad::kMethodGet ? 0 : mad::kStatusUnsupMethodAttr;
    case mad::kAttrPortCounters:
    case mad::kAttrPortCountersExt: {
        // Echo PortSelect (and CounterSelect) as the PMA does. A Set
        // clears the counters CounterSelect names (all of them for the
        // extended attribute), then reads back like a Get.
        portcounters::kPortSelect.set(d, portcounters::kPortSelect.get(in));
        if (method == mad::kMethodSet) {
            uint16_t sel = attr == mad::kAttrPortCounters ? uint16_t(portcounters::kCounterSelect.get(in)) : 0xffff;
            if (attr == mad::kAttrPortCountersExt)
                sel = 0xf000;
            // CounterSelect bits (IBA 16.1.3.5): 3 PortRcvErrors,
            // 6 PortXmitDiscards, 12..15 the data and packet counters.
            if (sel & (1u << 3))
                p.rcv_errors = 0;
            if (sel & (1u << 6))
                p.xmit_discards = 0;
            if (sel & (1u << 12))
                p.xmit_data = 0;
            if (sel & (1u << 13))
                p.rcv_data = 0;
            if (sel & (1u << 14))
                p.xmit_pkts = 0;
            if (sel & (1u << 15))
                p.rcv_pkts = 0;
        }
        auto sat16 = [](uint64_t v) { return v > 0xffff ? 0xffffu : unsigned(v); };
        auto sat32 = [](uint64_t v) { return v > 0xffffffffull ? 0xffffffffu : uint32_t(v); };
        if (attr == mad::kAttrPortCounters) {
            portcounters::kCounterSelect.set(d, portcounters::kCounterSelect.get(in));
            put16(d, 8, uint16_t(sat16(p.rcv_errors)));
            put16(d, 14, uint16_t(sat16(p.xmit_discards)));
            put16(d, 22, uint16_t(sat16(p.vl15_dropped)));
            put32(d, 24, sat32(p.xmit_data));
            put32(d, 28, sat32(p.rcv_data));
            put32(d, 32, sat32(p.xmit_pkts));
            put32(d, 36, sat32(p.rcv_pkts));
        } else {
            put64(d, 8, p.xmit_data);
            put64(d, 16, p.rcv_data);
            put64(d, 24, p.xmit_pkts);
            put64(d, 32, p.rcv_pkts);
        }
        return 0;
    }
    default:
        return mad::kStatusUnsupMethodAttr;
    }
}

Status Sma::process(const NodeIdentity& node, std::span<Port> ports, unsigned port, std::span<const uint8_t> in,
                    std::span<uint8_t> out, std::string* log, const MadIfcInfo& info, MadEffects* fx)
{
    char buf[128];
    uint8_t base_version = uint8_t(mad::kBaseVersion.get(in));
    uint8_t mclass = uint8_t(mad::kMgmtClass.get(in));
    uint8_t class_version = uint8_t(mad::kClassVersion.get(in));
    uint8_t method = uint8_t(mad::kMethod.get(in));
    uint16_t attr = uint16_t(mad::kAttrId.get(in));
    uint32_t mod = uint32_t(mad::kAttrMod.get(in));
    snprintf(buf, sizeof buf, "class 0x%02x method 0x%02x attr 0x%04x mod 0x%x", mclass, method, attr, mod);
    *log = buf;

    bool smp = mclass == mad::kClassSubnLid || mclass == mad::kClassSubnDirected;
    bool perf = mclass == mad::kClassPerf;
    if (!smp && !perf)
        return Status::BadPkt;  // no agent for that class in firmware

    Port& p = ports[port - 1];
    bool hide_key = false;
    if (smp && info.check_mkey) {
        // IBA 14.2.4.1. The lease runs out lazily: only an SMP can see
        // the protect bits.
        p.mkey.expire(info.now_ns);
        auto v = p.mkey.check(method, smp::kMkey.get(in), info.now_ns);
        if (v == ib::MkeyGuard::Verdict::Violation) {
            bad_mkey_notice(p, in, info.slid, fx);
            *log += " -> bad M_Key, dropped";
            return Status::BadPkt;
        }
        hide_key = v == ib::MkeyGuard::Verdict::HideKey;
    }

    // Trap represses end an outstanding trap; the driver sends no reply.
    if (smp && method == mad::kMethodTrapRepress) {
        fx->repress = true;
        fx->repress_tid = mad::kTid.get(in);
        std::memcpy(out.data(), in.data(), mad::kSize);
        return Status::Ok;
    }

    std::memcpy(out.data(), in.data(), mad::kSize);
    std::span<uint8_t> data = out.subspan(smp ? smp::kDataOffset : pma::kDataOffset, smp ? smp::kDataSize : pma::kDataSize);
    std::span<const uint8_t> in_data = in.subspan(smp ? smp::kDataOffset : pma::kDataOffset, smp ? smp::kDataSize : pma::kDataSize);
    std::memset(data.data(), 0, data.size());
    mad::kMethod.set(out, mad::kMethodGetResp);

    uint16_t mstatus = 0;
    if (base_version != 1 || class_version != 1) {
        mstatus = mad::kStatusBadVersion;
    } else if (method != mad::kMethodGet && method != mad::kMethodSet) {
        mstatus = mad::kStatusUnsupMethod;
    } else if (smp) {
        mstatus = method == mad::kMethodGet ? smp_get(node, ports, p, attr, mod, data)
                                            : smp_set(node, ports, p, attr, mod, in_data, data);
    } else {
        mstatus = pma(p, method, attr, in_data, data);
    }
    // The directed-route D bit lives in the top of the status word; keep it
    // as it came, the driver sets it on the way back.
    uint16_t st = uint16_t(mad::kStatus.get(in) & 0x8000);
    mad::kStatus.set(out, uint16_t(st | mstatus));
    if (mstatus)
        std::memset(data.data(), 0, data.size());
    else if (hide_key && attr == mad::kAttrPortInfo)
        portinfo::kMkey.set(data, 0);  // protect 1: the M_Key reads as zero
    return Status::Ok;
}

}  // namespace ibemu::mthca
