// SPDX-License-Identifier: GPL-2.0
#include "hca/qp_test_support.h"

#include <bit>

namespace ibemu::mthca::test {
namespace {

unsigned lg(uint64_t v)
{
    unsigned l = 0;
    while ((uint64_t(1) << l) < v)
        ++l;
    return l;
}

void be32w(uint8_t* p, uint32_t v) { put32(std::span<uint8_t>(p, 4), 0, v); }
void be64w(uint8_t* p, uint64_t v) { put64(std::span<uint8_t>(p, 8), 0, v); }
uint32_t be32r(const uint8_t* p) { return get32(std::span<const uint8_t>(p, 4), 0); }

}  // namespace

void Node::up(uint16_t lid, Wire* wire, PortEndpoint** my_ep)
{
    d.bring_up(true);
    uar = std::max(d.lim.rsvd_uars, 1u);
    uarc_virt = d.lay.uarc_base + uint64_t(uar) * (uint64_t(4096) << d.lay.log_uarc_pages);
    ASSERT_EQ(d.map_icm(uarc_virt, 4096), Status::Ok);
    std::memset(d.in().data(), 0, 0x38);
    put32(d.in(), 0, (4u << 12) | (3u << 8) | (4u << 4));
    put16(d.in(), 0x06, 32);
    put16(d.in(), 0x0a, 64);
    ASSERT_EQ(d.cmd(op::kInitIb, d.in_box(), 0, 1), Status::Ok);
    MthcaPorts* ports = mthca_ports(d.hca());
    ASSERT_NE(ports, nullptr);
    ports->attach(1, wire);
    *my_ep = &ports->endpoint(1);
    (void)lid;
}

void Node::activate(uint16_t lid)
{
    core().set_port_lid(1, lid);
    core().set_port_state(1, PortState::Active);
}

TCq Node::make_cq(uint32_t n)
{
    TCq cq;
    cq.cqn = d.lim.rsvd_cqs + next_cqn++;
    cq.n = n;
    EXPECT_EQ(d.table_get(d.lay.cqc_base, cq.cqn, d.lim.cqc_sz), Status::Ok);
    cq.buf = alloc(uint64_t(n) * 32);
    uint8_t* cqe = mem().at(cq.buf);
    for (uint32_t i = 0; i < n; ++i)
        cqe[i * 32 + 31] = 0x80;
    cq.lkey = d.alloc_mr(cq.buf, uint64_t(n) * 32, d.driver_pd, nullptr, kAccLocalWrite | kAccLocalRead, 0);
    cq.ci_db = next_db++;
    cq.arm_db = next_db++;
    std::memset(d.in().data(), 0, 0x40);
    put32(d.in(), 0x00, 1u << 18);
    put64(d.in(), 0x04, 0);
    put32(d.in(), 0x0c, lg(n) << 24 | uar);
    put32(d.in(), 0x14, d.eqs_[0].eqn);
    put32(d.in(), 0x18, d.driver_pd);
    put32(d.in(), 0x1c, cq.lkey);
    put32(d.in(), 0x30, cq.cqn);
    put32(d.in(), 0x34, cq.ci_db);
    put32(d.in(), 0x38, cq.arm_db);
    EXPECT_EQ(d.cmd(op::kSw2HwCq, d.in_box(), 0, cq.cqn), Status::Ok);
    return cq;
}

TSrq Node::make_srq(uint32_t n, unsigned max_sge)
{
    TSrq s;
    s.srqn = next_srqn++;
    s.n = n;
    s.shift = std::max(6u, lg(16 + 16 * max_sge));
    EXPECT_EQ(d.table_get(d.lay.srqc_base, s.srqn, d.lim.srq_sz), Status::Ok);
    uint64_t bytes = std::max<uint64_t>(4096, uint64_t(n) << s.shift);
    s.buf = alloc(bytes);
    for (uint32_t i = 0; i < n; ++i) {
        uint8_t* w = mem().at(s.buf + (uint64_t(i) << s.shift));
        be32w(w, ((i + 1) << s.shift) | 1);
        for (unsigned k = 16; k < (1u << s.shift); k += 16)
            be32w(w + k + 4, wqe::kInvalLkey);
    }
    s.lkey = d.alloc_mr(s.buf, bytes, pd, nullptr, kAccLocalWrite | kAccLocalRead, 0);
    s.db = next_db++;
    std::memset(d.in().data(), 0, 0x40);
    put32(d.in(), 0x00, lg(n) << 24 | s.srqn);
    put32(d.in(), 0x04, s.lkey);
    put32(d.in(), 0x08, s.db);
    put32(d.in(), 0x0c, (s.shift - 4) << 29 | uar);
    put32(d.in(), 0x18, pd);
    EXPECT_EQ(d.cmd(op::kSw2HwSrq, d.in_box(), 0, s.srqn), Status::Ok);
    return s;
}

TQp Node::make_qp(QpService st, const TCq& scq, const TCq& rcq, uint32_t sq_n, uint32_t rq_n, unsigned max_sge,
                  uint32_t qpn, const TSrq* srq)
{
    TQp q;
    q.service = uint8_t(st);
    q.qpn = qpn ? qpn : d.sqp_start + 16 + next_qpn++;
    EXPECT_EQ(d.table_get(d.lay.qpc_base, q.qpn, d.lim.qpc_sz), Status::Ok);
    q.rq_n = rq_n;
    q.sq_n = sq_n;
    q.rq_shift = std::max(6u, lg(16 + 16 * max_sge));
    q.sq_shift = std::max(6u, lg(16 + 48 + 32 + 16 * max_sge + 16));
    uint64_t rq_bytes = uint64_t(rq_n) << q.rq_shift;
    q.sq_off = uint32_t((rq_bytes + (1u << q.sq_shift) - 1) & ~uint64_t((1u << q.sq_shift) - 1));
    uint64_t bytes = q.sq_off + (uint64_t(sq_n) << q.sq_shift);
    bytes = (bytes + 4095) & ~uint64_t(4095);
    q.buf = alloc(bytes);
    q.lkey = d.alloc_mr(q.buf, bytes, pd, nullptr, kAccLocalWrite | kAccLocalRead, 0);
    for (uint32_t i = 0; i < rq_n; ++i) {
        uint8_t* w = mem().at(q.buf + (uint64_t(i) << q.rq_shift));
        be32w(w, ((i + 1) & (rq_n - 1)) << q.rq_shift);
        be32w(w + 4, (16 + 16 * max_sge) / 16);
        for (unsigned k = 16; k < (1u << q.rq_shift); k += 16)
            be32w(w + k + 4, wqe::kInvalLkey);
    }
    for (uint32_t i = 0; i < sq_n; ++i) {
        uint8_t* w = mem().at(q.buf + q.sq_off + (uint64_t(i) << q.sq_shift));
        be32w(w, (((i + 1) & (sq_n - 1)) << q.sq_shift) + q.sq_off);
    }
    q.prev_sq = q.sq_off + ((sq_n - 1) << q.sq_shift);
    q.sq_db = next_db++;
    q.rq_db = next_db++;
    q.scq = scq.cqn;
    q.rcq = rcq.cqn;
    if (srq) {
        q.srq = true;
        q.srqn = srq->srqn;
    }
    return q;
}

Status Node::modify(TQp& q, uint16_t opcode, QpState to, const QpParams& p, uint32_t optmask, uint32_t in_mod_hi)
{
    std::memset(d.in().data(), 0, 0x200);
    auto c = d.in().subspan(8);
    put32(d.in(), 0, optmask);
    bool ud = q.service == uint8_t(QpService::Ud) || q.service == uint8_t(QpService::Mlx);
    put32(c, 0x00, uint32_t(to) << 28 | uint32_t(q.service) << 16 | uint32_t(p.pm_state & 3) << 11);
    if (ud)
        put8(c, 0x08, 4 << 5 | 11);
    else if (opcode == op::kInit2Rtr)
        put8(c, 0x08, uint8_t(p.mtu << 5 | (p.log_msg_max & 31)));
    put8(c, 0x09, uint8_t((q.rq_n ? lg(q.rq_n) << 3 : 0) | (q.rq_shift - 4)));
    put8(c, 0x0a, uint8_t((q.sq_n ? lg(q.sq_n) << 3 : 0) | (q.sq_shift - 4)));
    put32(c, 0x0c, uar);
    put32(c, 0x10, q.qpn);
    if (opcode == op::kInit2Rtr)
        put32(c, 0x14, p.remote_qpn);
    uint32_t port_pkey = 0;
    if (q.service == uint8_t(QpService::Mlx) || (optmask & (1u << 11)))
        port_pkey |= uint32_t(p.port) << 24;
    if (optmask & (1u << 4))
        port_pkey |= p.pkey_index;
    put32(c, 0x20, port_pkey);
    if (optmask & (1u << 15))
        put8(c, 0x24, uint8_t(p.rnr_retry << 5));
    if (optmask & (1u << 7)) {
        put8(c, 0x25, uint8_t((p.grh ? 0x80 : 0) | (p.path_bits & 0x7f)));
        put16(c, 0x26, p.dlid);
        put8(c, 0x2a, p.static_rate);
        if (p.grh) {
            put8(c, 0x29, p.sgid_index);
            put8(c, 0x2b, p.hop_limit);
            put32(c, 0x2c, uint32_t(p.sl) << 28 | uint32_t(p.tclass) << 20 | (p.flow_label & 0xfffff));
            for (unsigned i = 0; i < 16; ++i)
                put8(c, 0x30 + i, p.dgid[i]);
        } else {
            put8(c, 0x2b, p.hop_limit);
            put32(c, 0x2c, uint32_t(p.sl) << 28);
        }
    }
    if (optmask & (1u << 0)) {  // alternate path, as mthca_path_set() + the port/P_Key/timeout
        put32(c, 0x40, uint32_t(p.alt_port) << 24 | p.alt_pkey_index);
        put8(c, 0x45, uint8_t(p.alt_path_bits & 0x7f));
        put16(c, 0x46, p.alt_dlid);
        put8(c, 0x48, uint8_t(p.alt_timeout << 3));
        put32(c, 0x4c, uint32_t(p.alt_sl) << 28);
    }
    if (optmask & (1u << 14))
        put8(c, 0x28, uint8_t(p.timeout << 3));
    put32(c, 0x64, pd);
    put32(c, 0x6c, q.lkey);
    uint32_t p1 = 1u << 14 | (q.sig_all ? 1u << 3 : 0);
    if (optmask & (1u << 12))
        p1 |= uint32_t(p.retry_cnt) << 16;
    if ((optmask & (1u << 8)) && p.max_rd_atomic)  // SRA_MAX, as mthca_qp.c writes it
        p1 |= uint32_t(std::bit_width(unsigned(p.max_rd_atomic - 1))) << 21;
    put32(c, 0x70, p1);
    if (opcode == op::kRtr2Rts)
        put32(c, 0x78, p.sq_psn);
    put32(c, 0x7c, q.scq);
    put32(c, 0x80, q.sq_off);
    put32(c, 0x84, q.sq_db);
    uint32_t p2 = 1u << 3 | (q.srq ? 1u << 4 : 0);
    if (optmask & (7u << 1))
        p2 |= (p.rre ? 1u << 15 : 0) | (p.rwe ? 1u << 14 : 0) | (p.rae ? 1u << 13 : 0);
    if ((optmask & (1u << 9)) && p.max_dest_rd_atomic)  // RRA_MAX
        p2 |= uint32_t(std::bit_width(unsigned(p.max_dest_rd_atomic - 1))) << 21;
    put32(c, 0x90, p2);
    uint32_t rnr = 0;
    if (optmask & (1u << 6))
        rnr |= uint32_t(p.min_rnr_timer) << 24;
    if (opcode == op::kInit2Rtr)
        rnr |= p.rq_psn;
    put32(c, 0x94, rnr);
    put32(c, 0x9c, q.rcq);
    put32(c, 0xa4, q.rq_db);
    if (optmask & (1u << 5))
        put32(c, 0xa8, p.qkey);
    if (q.srq)
        put32(c, 0xac, 1u << 24 | q.srqn);
    return d.cmd(opcode, d.in_box(), 0, in_mod_hi | q.qpn);
}

void Node::to_rts(TQp& q, const QpParams& p)
{
    bool ud = q.service == uint8_t(QpService::Ud) || q.service == uint8_t(QpService::Mlx);
    if (ud) {
        uint32_t m = 1u << 4 | 1u << 5 | (q.service == uint8_t(QpService::Ud) ? 1u << 11 : 0);
        ASSERT_EQ(modify(q, op::kRst2Init, QpState::Init, p, m), Status::Ok);
        ASSERT_EQ(modify(q, op::kInit2Rtr, QpState::Rtr, p, 0), Status::Ok);
        ASSERT_EQ(modify(q, op::kRtr2Rts, QpState::Rts, p, 0), Status::Ok);
        return;
    }
    ASSERT_EQ(modify(q, op::kRst2Init, QpState::Init, p, 1u << 4 | 1u << 11 | 7u << 1), Status::Ok);
    uint32_t m = 1u << 7 | (q.service == uint8_t(QpService::Rc) ? (1u << 9 | 7u << 1 | 1u << 6) : 0);
    ASSERT_EQ(modify(q, op::kInit2Rtr, QpState::Rtr, p, m), Status::Ok);
    uint32_t m2 = q.service == uint8_t(QpService::Rc) ? (1u << 14 | 1u << 12 | 1u << 15 | 1u << 8) : 0;
    ASSERT_EQ(modify(q, op::kRtr2Rts, QpState::Rts, p, m2), Status::Ok);
}

void Node::post_recv(TQp& q, const std::vector<TSge>& sges)
{
    uint32_t idx = q.rq_head & (q.rq_n - 1);
    uint8_t* w = mem().at(q.buf + (uint64_t(idx) << q.rq_shift));
    be32w(w + 8, 0);
    unsigned o = 16;
    for (const TSge& s : sges) {
        be32w(w + o, s.len);
        be32w(w + o + 4, s.lkey);
        be64w(w + o + 8, s.addr);
        o += 16;
    }
    if (o < (1u << q.rq_shift)) {
        be32w(w + o, 0);
        be32w(w + o + 4, wqe::kInvalLkey);
        be64w(w + o + 8, 0);
    }
    ++q.rq_head;
    be32w(db_rec(q.rq_db), q.rq_head & 0xffff);
}

void Node::post_srq_recv(TSrq& s, const std::vector<TSge>& sges)
{
    uint32_t idx = s.first_free;
    s.first_free = (s.first_free + 1) % s.n;
    uint8_t* w = mem().at(s.buf + (uint64_t(idx) << s.shift));
    be32w(w + 4, 0);
    unsigned o = 16;
    for (const TSge& g : sges) {
        be32w(w + o, g.len);
        be32w(w + o + 4, g.lkey);
        be64w(w + o + 8, g.addr);
        o += 16;
    }
    if (o < (1u << s.shift)) {
        be32w(w + o, 0);
        be32w(w + o + 4, wqe::kInvalLkey);
    }
    ++s.counter;
    be32w(db_rec(s.db), s.counter & 0xffff);
}

uint32_t Node::post_send(TQp& q, const SendWr& wr, bool ring)
{
    uint32_t idx = q.sq_head & (q.sq_n - 1);
    uint32_t off = q.sq_off + (idx << q.sq_shift);
    uint8_t* w = mem().at(q.buf + off);
    std::memset(w + 4, 0, (1u << q.sq_shift) - 4);  // keep nda_op (pre-linked)
    be32w(w + 8, (wr.signaled ? wqe::kFlagCqUpdate : 0) | (wr.solicited ? wqe::kFlagSolicit : 0) | 1);
    be32w(w + 12, wr.imm);
    unsigned o = 16;
    bool rdma = wr.op == wqe::kRdmaWrite || wr.op == wqe::kRdmaWriteImm || wr.op == wqe::kRdmaRead;
    bool atomic = wr.op == wqe::kAtomicCs || wr.op == wqe::kAtomicFa;
    if (q.service == uint8_t(QpService::Ud)) {
        be32w(w + o, uint32_t(q.port) << 24 | pd);
        w[o + 5] = wr.grh ? 0x80 : 0;
        put16(std::span<uint8_t>(w + o + 6, 2), 0, wr.dlid);
        w[o + 11] = 64;
        be32w(w + o + 12, uint32_t(wr.sl) << 28);
        std::memcpy(w + o + 16, wr.dgid.data(), 16);
        be32w(w + o + 32, wr.dqpn);
        be32w(w + o + 36, wr.qkey);
        o += 48;
    } else if (rdma || atomic) {
        be64w(w + o, wr.raddr);
        be32w(w + o + 8, wr.rkey);
        o += 16;
        if (atomic) {
            be64w(w + o, wr.swap_add);
            be64w(w + o + 8, wr.compare);
            o += 16;
        }
    }
    for (const TSge& s : wr.sges) {
        be32w(w + o, s.len);
        be32w(w + o + 4, s.lkey);
        be64w(w + o + 8, s.addr);
        o += 16;
    }
    if (!wr.inline_data.empty()) {
        be32w(w + o, 0x80000000u | uint32_t(wr.inline_data.size()));
        std::memcpy(w + o + 4, wr.inline_data.data(), wr.inline_data.size());
        o += (4 + unsigned(wr.inline_data.size()) + 15) & ~15u;
    }
    uint8_t size = uint8_t(o / 16);
    // Link it from the previous WQE: opcode and size live there.
    uint8_t* prev = mem().at(q.buf + q.prev_sq);
    be32w(prev, off | wr.op);
    be32w(prev + 4, wqe::kDbd | size);
    q.prev_sq = off;
    last_op0 = wr.op;
    last_size0 = size;
    if (ring)
        ring_send(q, q.sq_head, 1, wr.op, size);
    else
        ++q.sq_head;
    return off;
}

uint32_t Node::post_mlx(TQp& q, const MlxWr& wr)
{
    bool qp0 = q.qpn == d.sqp_start || q.qpn == d.sqp_start + 1;
    bool permissive = wr.dlid == 0xffff;
    // ib_ud_header_pack(): LRH, BTH (UD SEND ONLY), DETH; 256-byte payload.
    uint8_t* h = mem().at(wr.hdr_buf.addr);
    std::memset(h, 0, 28);
    auto hs = std::span<uint8_t>(h, 28);
    h[0] = qp0 ? 0xf0 : 0x00;  // VL, LVer 0
    h[1] = uint8_t(wr.sl << 4 | 2);
    put16(hs, 2, wr.dlid);
    put16(hs, 4, uint16_t((28 + 256 + 4) / 4));
    put16(hs, 6, permissive ? 0xffff : wr.path_bits & 0x7f);
    h[8] = 0x64;
    put16(hs, 10, wr.pkey);
    put32(hs, 12, wr.dqpn);
    put32(hs, 20, wr.qkey);
    put32(hs, 24, qp0 ? 0 : 1);
    uint32_t idx = q.sq_head & (q.sq_n - 1);
    uint32_t off = q.sq_off + (idx << q.sq_shift);
    uint8_t* w = mem().at(q.buf + off);
    std::memset(w + 4, 0, (1u << q.sq_shift) - 4);  // keep nda_op (pre-linked)
    be32w(w + 8, (qp0 || wr.force_vl15 ? wqe::kMlxVl15 : 0) | (permissive ? wqe::kMlxSlr : 0) | uint32_t(wr.sl) << 8 |
                     wqe::kFlagCqUpdate);
    put16(std::span<uint8_t>(w + 12, 2), 0, wr.dlid);
    be32w(w + 16, 28), be32w(w + 20, wr.hdr_buf.lkey), be64w(w + 24, wr.hdr_buf.addr);
    be32w(w + 32, wr.mad.len), be32w(w + 36, wr.mad.lkey), be64w(w + 40, wr.mad.addr);
    be32w(w + 48, 0x80000004u);  // ICRC placeholder
    be32w(w + 52, 0);
    uint8_t size = 4;
    uint8_t* prev = mem().at(q.buf + q.prev_sq);
    be32w(prev, off | wqe::kSend);
    be32w(prev + 4, wqe::kDbd | size);
    q.prev_sq = off;
    ring_send(q, q.sq_head, 1, wqe::kSend, size);
    return off;
}

void Node::ring_send(TQp& q, uint32_t first_head, uint32_t nreq, uint8_t op0, uint8_t size0)
{
    q.sq_head = first_head + nreq;
    be32w(db_rec(q.sq_db), q.sq_head & 0xffff);
    uint32_t hi = nreq << 24 | (first_head & 0xffff) << 8 | op0;
    uint32_t lo = q.qpn << 8 | size0;
    d.write_be64(2, uint64_t(uar) * 4096 + kUarSendDoorbell, uint64_t(hi) << 32 | lo);
}

bool Node::poll(TCq& cq, TCqe* out)
{
    uint8_t* e = mem().at(cq.buf + (cq.cons & (cq.n - 1)) * 32);
    if (e[31] & 0x80)
        return false;
    TCqe c;
    c.qpn = be32r(e);
    c.opcode = e[28];
    c.error = (c.opcode & 0xfe) == 0xfe;
    c.is_send = c.error ? (c.opcode & 1) : (e[29] & 0x80);
    c.syndrome = c.error ? e[16] : 0;
    c.rqpn = be32r(e + 8) & 0xffffff;
    c.sl = e[12] >> 4;
    c.grh = e[13] & 0x80;
    c.path_bits = e[13] & 0x7f;
    c.rlid = uint16_t(e[14] << 8 | e[15]);
    c.imm = be32r(e + 16);
    c.byte_cnt = be32r(e + 20);
    c.wqe = be32r(e + 24);
    e[31] = 0x80;
    ++cq.cons;
    be32w(db_rec(cq.ci_db), cq.cons);
    *out = c;
    return true;
}

std::vector<TCqe> Node::drain(TCq& cq)
{
    std::vector<TCqe> v;
    TCqe c;
    while (poll(cq, &c))
        v.push_back(c);
    return v;
}

void Node::arm(TCq& cq, bool solicited)
{
    // mthca_arbel_arm_cq / libmthca: the arm record first (consumer
    // index; cqn, type 2 = CQ arm, sequence number, 1 solicited or 2
    // next), then the doorbell with the same request.
    uint32_t cmd = solicited ? 1 : 2;
    uint32_t sn = cq.arm_sn & 3;
    uint32_t hi = sn << 28 | cmd << 24 | cq.cqn;
    be32w(db_rec(cq.arm_db), cq.cons);
    be32w(db_rec(cq.arm_db) + 4, cq.cqn << 8 | 2u << 5 | sn << 3 | cmd);
    d.write_be64(2, uint64_t(uar) * 4096 + kUarCqDoorbell, uint64_t(hi) << 32 | cq.cons);
}

}  // namespace ibemu::mthca::test
