/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Memory formats the MT25208 shares with the driver in mem-free mode:
 * work queue entries (WQEs), completion queue entries (CQEs) and the
 * address vector, plus the pure arithmetic that sizes the queues.
 *
 * All multi-byte fields are big-endian.  A WQE is a chain of 16-byte
 * aligned segments that starts with a "next" segment; the next segment of
 * one WQE names the following WQE (its offset, opcode and size in 16-byte
 * units), which is how the HCA walks a queue.
 */
#ifndef MTHCA_WQE_H
#define MTHCA_WQE_H

#include <linux/types.h>
#include <linux/bits.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/build_bug.h>
#include <asm/byteorder.h>

/* Bits of the "next" segment's ee_nds and flags words. */
enum {
	MTHCA_WQE_NDS_DBD	= 1 << 7,	/* doorbell was rung for the next WQE */
	MTHCA_WQE_NDS_FENCE	= 1 << 6,	/* wait for earlier RDMA READs/atomics */
	MTHCA_WQE_NDS_MASK	= 0x3f,		/* next WQE size, 16-byte units */

	MTHCA_WQE_F_CQ_UPDATE	= 1 << 3,	/* signalled: write a CQE */
	MTHCA_WQE_F_EVENT	= 1 << 2,
	MTHCA_WQE_F_SOLICIT	= 1 << 1,	/* SE bit in the BTH */
	MTHCA_WQE_F_ALWAYS	= 1 << 0,	/* set by the driver on sends */

	/* MLX segment flags (the MLX WQE reuses the next segment's words). */
	MTHCA_MLX_F_VL15	= 1 << 17,	/* send on VL15 (QP0) */
	MTHCA_MLX_F_SLR		= 1 << 16,	/* keep the header's SLID */
};

/*
 * Send opcodes of WQEs and send CQEs (the low five bits of nda_op).  Bit 0
 * adds immediate data to an RDMA write or a send.
 */
#define MTHCA_OP_IMM		0x01
#define MTHCA_OP_RDMA_WRITE	0x08
#define MTHCA_OP_SEND		0x0a
#define MTHCA_OP_RDMA_READ	0x10
#define MTHCA_OP_ATOMIC_CS	0x11
#define MTHCA_OP_ATOMIC_FA	0x12

/* An lkey the HCA treats as "end of the scatter list". */
#define MTHCA_LKEY_END_OF_LIST	0x100

/* Inline data: bit 31 of a data segment's first word, then the bytes. */
#define MTHCA_INLINE_BIT	BIT(31)

/* The longest run of send WQEs one doorbell may announce. */
#define MTHCA_SEND_DB_MAX_WQES	255

/* Send doorbell, first word: fence bit (the first WQE is fenced). */
#define MTHCA_SEND_DB_FENCE_BIT	BIT(5)

/* The control ("next") segment that heads every WQE. */
struct mthca_next_seg {
	__be32 nda_op, ee_nds;	/* next WQE: offset [31:6] | opcode [4:0]; DBD, fence, size */
	__be32 flags, imm;	/* CQ update [3], event [2], solicit [1]; immediate data */
};

/* Remote address of RDMA and atomic operations; then the atomic operands. */
struct mthca_raddr_seg {
	__be64 raddr;
	__be32 rkey, reserved;
};

struct mthca_atomic_seg {
	__be64 swap_add, compare;	/* swap or fetch&add addend; compare */
};

/* Mem-free UD segment: the 32-byte address vector travels in the WQE. */
struct mthca_ud_seg {
	__be32 av[8], dqpn, qkey, reserved[2];
};

/* Gather/scatter entry; with MTHCA_INLINE_BIT in the count, inline data. */
struct mthca_data_seg {
	__be32 byte_count, lkey;
	__be64 addr;
};

/* The MLX form of the control segment of a special-QP WQE. */
struct mthca_mlx_seg {
	__be32 nda_op, nds, flags;	/* flags: VL15 [17], SLR [16], SL [11:8] */
	__be16 rlid, vcrc;
};

/* Memory-window bind segment; only its size matters here. */
#define MTHCA_BIND_SEG_BYTES	32

/**
 * struct mthca_av - the mem-free address vector (32 bytes)
 * @port_pd: port [31:24], PD number [23:0]
 * @path: GRH present [23], source path bits [22:16], destination LID [15:0]
 * @gid_rate_hop: source GID index [23:16] (the ports' tables follow each
 *	other), max message [13:12] (3 = 2 KiB) and static rate [10:8],
 *	hop limit [7:0]
 * @sl_tclass_flow: SL [31:28], traffic class [27:20], flow label [19:0]
 * @dgid: destination GID
 */
struct mthca_av {
	__be32 port_pd, path, gid_rate_hop, sl_tclass_flow;
	__be32 dgid[4];
};

#define MTHCA_AV_GRH		BIT(23)

/*
 * CQEs: 32 bytes, as eight big-endian words.  The owner byte is the last
 * one: bit 7 set means the HCA owns the entry.
 */
#define MTHCA_CQE_BYTES		32
#define MTHCA_CQE_OWNER_HW	0x80
#define MTHCA_CQE_ERROR_OPCODE	0xfe	/* 0xfe receive error, 0xff send */

/**
 * struct mthca_cqe - a completion queue entry
 * @qpn: the local QP [23:0]
 * @eecn: EE context (unused)
 * @src_qpn: the remote QP [23:0] (UD)
 * @sl_path_slid: SL [31:28], GRH [23], DLID path bits [22:16], SLID [15:0]
 * @imm_pkey: immediate data, or P_Key index [31:16]; in an error CQE:
 *	syndrome [31:24], vendor syndrome [23:16]
 * @byte_cnt: bytes received (or read)
 * @wqe: offset of the WQE in its queue buffer
 * @op_owner: opcode [31:24], send [23], owner [7]
 */
struct mthca_cqe {
	__be32 qpn, eecn, src_qpn, sl_path_slid;
	__be32 imm_pkey, byte_cnt, wqe, op_owner;
};

#define MTHCA_CQE_SEND		BIT(23)

static inline u8 *mthca_cqe_owner(struct mthca_cqe *cqe)
{
	return (u8 *)cqe + MTHCA_CQE_BYTES - 1;
}

static inline u8 mthca_cqe_opcode(const struct mthca_cqe *cqe)
{
	return be32_to_cpu(cqe->op_owner) >> 24;
}

/* Completion syndromes of error CQEs. */
enum {
	MTHCA_SYN_LOCAL_LENGTH		= 0x01,
	MTHCA_SYN_LOCAL_QP_OP		= 0x02,
	MTHCA_SYN_LOCAL_EEC_OP		= 0x03,
	MTHCA_SYN_LOCAL_PROT		= 0x04,
	MTHCA_SYN_WR_FLUSH		= 0x05,
	MTHCA_SYN_MW_BIND		= 0x06,
	MTHCA_SYN_BAD_RESP		= 0x10,
	MTHCA_SYN_LOCAL_ACCESS		= 0x11,
	MTHCA_SYN_REMOTE_INVAL_REQ	= 0x12,
	MTHCA_SYN_REMOTE_ACCESS		= 0x13,
	MTHCA_SYN_REMOTE_OP		= 0x14,
	MTHCA_SYN_RETRY_EXCEEDED	= 0x15,
	MTHCA_SYN_RNR_RETRY_EXCEEDED	= 0x16,
	MTHCA_SYN_LOCAL_RDD_VIOL	= 0x20,
	MTHCA_SYN_REMOTE_INVAL_RD_REQ	= 0x21,
	MTHCA_SYN_REMOTE_ABORTED	= 0x22,
	MTHCA_SYN_INVAL_EECN		= 0x23,
	MTHCA_SYN_INVAL_EEC_STATE	= 0x24,
};

static inline void mthca_wqe_layout_checks(void)
{
	BUILD_BUG_ON(sizeof(struct mthca_next_seg) != 16);
	BUILD_BUG_ON(sizeof(struct mthca_raddr_seg) != 16);
	BUILD_BUG_ON(sizeof(struct mthca_atomic_seg) != 16);
	BUILD_BUG_ON(sizeof(struct mthca_ud_seg) != 48);
	BUILD_BUG_ON(sizeof(struct mthca_data_seg) != 16);
	BUILD_BUG_ON(sizeof(struct mthca_mlx_seg) != 16);
	BUILD_BUG_ON(sizeof(struct mthca_av) != 32);
	BUILD_BUG_ON(sizeof(struct mthca_cqe) != MTHCA_CQE_BYTES);
}

/*
 * Queue sizing.  WQE strides are powers of two of at least 64 bytes; the
 * send queue of a QP follows its receive queue in one buffer, aligned to
 * the send stride.
 */

/* Kinds of send queue, as far as WQE layout goes. */
enum mthca_sq_kind {
	MTHCA_SQ_RC,
	MTHCA_SQ_UC,
	MTHCA_SQ_UD,
	MTHCA_SQ_MLX,
};

#define MTHCA_MIN_WQE_SHIFT	6

/**
 * mthca_wqe_shift() - log2 of the stride that holds a WQE of @bytes
 * @bytes: the largest WQE the queue must hold
 *
 * Return: at least MTHCA_MIN_WQE_SHIFT.
 */
static inline int mthca_wqe_shift(unsigned int bytes)
{
	if (bytes <= 1u << MTHCA_MIN_WQE_SHIFT)
		return MTHCA_MIN_WQE_SHIFT;
	return order_base_2(bytes);
}

/**
 * mthca_rq_wqe_bytes() - bytes of a receive WQE with @nsge gather entries
 * @nsge: scatter entries
 *
 * Return: the size before rounding up to a stride.
 */
static inline unsigned int mthca_rq_wqe_bytes(unsigned int nsge)
{
	return sizeof(struct mthca_next_seg) +
		nsge * sizeof(struct mthca_data_seg);
}

/* Bytes of the segments a send WQE of @kind carries besides data. */
static inline unsigned int mthca_sq_ctrl_bytes(enum mthca_sq_kind kind)
{
	switch (kind) {
	case MTHCA_SQ_UD:
		return sizeof(struct mthca_ud_seg);
	case MTHCA_SQ_MLX:
		/* the header gather entry and the ICRC placeholder */
		return 2 * sizeof(struct mthca_data_seg);
	default:
		return sizeof(struct mthca_raddr_seg);
	}
}

/**
 * mthca_sq_wqe_bytes() - bytes of the largest send WQE of a queue
 * @kind: the queue's transport
 * @nsge: gather entries per WQE
 *
 * An RC queue must also fit an atomic (remote address, atomic and one
 * gather segment); every queue must fit a bind request.
 *
 * Return: the size before rounding up to a stride.
 */
static inline unsigned int mthca_sq_wqe_bytes(enum mthca_sq_kind kind,
					      unsigned int nsge)
{
	unsigned int body = mthca_sq_ctrl_bytes(kind) +
		nsge * sizeof(struct mthca_data_seg);

	if (kind == MTHCA_SQ_RC)
		body = max_t(unsigned int, body,
			     sizeof(struct mthca_raddr_seg) +
			     sizeof(struct mthca_atomic_seg) +
			     sizeof(struct mthca_data_seg));
	body = max_t(unsigned int, body, MTHCA_BIND_SEG_BYTES);
	return sizeof(struct mthca_next_seg) + body;
}

/**
 * mthca_sq_max_sge() - gather entries a send stride leaves room for
 * @kind: the queue's transport
 * @stride: bytes per WQE
 *
 * Return: the number of data segments after the control segments.
 */
static inline unsigned int mthca_sq_max_sge(enum mthca_sq_kind kind,
					    unsigned int stride)
{
	return (stride - sizeof(struct mthca_next_seg) -
		mthca_sq_ctrl_bytes(kind)) / sizeof(struct mthca_data_seg);
}

/**
 * mthca_sq_offset() - where the send queue starts in a QP buffer
 * @rq_entries: receive WQEs (0 with an SRQ)
 * @rq_shift: log2 of the receive stride
 * @sq_shift: log2 of the send stride
 *
 * Return: the byte offset, aligned to the send stride.
 */
static inline unsigned long mthca_sq_offset(unsigned int rq_entries,
					    int rq_shift, int sq_shift)
{
	unsigned long rq_bytes = (unsigned long)rq_entries << rq_shift;
	unsigned long align = 1ul << sq_shift;

	return (rq_bytes + align - 1) & ~(align - 1);
}

#endif /* MTHCA_WQE_H */
