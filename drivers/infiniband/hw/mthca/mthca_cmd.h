/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Firmware commands of the MT25208 through the HCR.
 *
 * mthca_cmd_exec() is the one entry point; the wrappers below build the
 * mailboxes of the commands whose layout this file owns.  Every command
 * sleeps: before the EQs exist it polls the go bit, afterwards it waits
 * for the command-completion EQE.  A failing firmware status comes back
 * as a negative errno (and is logged).
 */
#ifndef MTHCA_CMD_H
#define MTHCA_CMD_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct mthca_dev;
struct mthca_icm;

/* Mailboxes are single 4 KiB DMA buffers. */
#define MTHCA_MAILBOX_SIZE	4096

/**
 * struct mthca_mailbox - a command mailbox
 * @buf: kernel address
 * @dma: bus address handed to the firmware
 */
struct mthca_mailbox {
	void		*buf;
	dma_addr_t	dma;
};

/* Command opcodes (the 12-bit opcode field of the HCR). */
enum mthca_cmd_op {
	MTHCA_CMD_SYS_EN		= 0x001,
	MTHCA_CMD_SYS_DIS		= 0x002,
	MTHCA_CMD_QUERY_DEV_LIM		= 0x003,
	MTHCA_CMD_QUERY_FW		= 0x004,
	MTHCA_CMD_QUERY_DDR		= 0x005,
	MTHCA_CMD_QUERY_ADAPTER		= 0x006,
	MTHCA_CMD_INIT_HCA		= 0x007,
	MTHCA_CMD_CLOSE_HCA		= 0x008,
	MTHCA_CMD_INIT_IB		= 0x009,
	MTHCA_CMD_CLOSE_IB		= 0x00a,
	MTHCA_CMD_QUERY_HCA		= 0x00b,
	MTHCA_CMD_SET_IB		= 0x00c,
	MTHCA_CMD_SW2HW_MPT		= 0x00d,
	MTHCA_CMD_QUERY_MPT		= 0x00e,
	MTHCA_CMD_HW2SW_MPT		= 0x00f,
	MTHCA_CMD_READ_MTT		= 0x010,
	MTHCA_CMD_WRITE_MTT		= 0x011,
	MTHCA_CMD_MAP_EQ		= 0x012,
	MTHCA_CMD_SW2HW_EQ		= 0x013,
	MTHCA_CMD_HW2SW_EQ		= 0x014,
	MTHCA_CMD_QUERY_EQ		= 0x015,
	MTHCA_CMD_SW2HW_CQ		= 0x016,
	MTHCA_CMD_HW2SW_CQ		= 0x017,
	MTHCA_CMD_QUERY_CQ		= 0x018,
	MTHCA_CMD_RST2INIT_QP		= 0x019,
	MTHCA_CMD_INIT2RTR_QP		= 0x01a,
	MTHCA_CMD_RTR2RTS_QP		= 0x01b,
	MTHCA_CMD_RTS2RTS_QP		= 0x01c,
	MTHCA_CMD_SQERR2RTS_QP		= 0x01d,
	MTHCA_CMD_2ERR_QP		= 0x01e,
	MTHCA_CMD_RTS2SQD_QP		= 0x01f,
	MTHCA_CMD_SQD2RTS_QP		= 0x020,
	MTHCA_CMD_2RST_QP		= 0x021,
	MTHCA_CMD_QUERY_QP		= 0x022,
	MTHCA_CMD_CONF_SPECIAL_QP	= 0x023,
	MTHCA_CMD_MAD_IFC		= 0x024,
	MTHCA_CMD_READ_MGM		= 0x025,
	MTHCA_CMD_WRITE_MGM		= 0x026,
	MTHCA_CMD_MGID_HASH		= 0x027,
	MTHCA_CMD_RESIZE_CQ		= 0x02c,
	MTHCA_CMD_INIT2INIT_QP		= 0x02d,
	MTHCA_CMD_SYNC_TPT		= 0x02f,
	MTHCA_CMD_NOP			= 0x031,
	MTHCA_CMD_SW2HW_SRQ		= 0x035,
	MTHCA_CMD_HW2SW_SRQ		= 0x036,
	MTHCA_CMD_QUERY_SRQ		= 0x037,
	MTHCA_CMD_SQD2SQD_QP		= 0x038,
	MTHCA_CMD_ARM_SRQ		= 0x040,
	MTHCA_CMD_RUN_FW		= 0xff6,
	MTHCA_CMD_DISABLE_LAM		= 0xff7,
	MTHCA_CMD_ENABLE_LAM		= 0xff8,
	MTHCA_CMD_UNMAP_ICM		= 0xff9,
	MTHCA_CMD_MAP_ICM		= 0xffa,
	MTHCA_CMD_UNMAP_ICM_AUX		= 0xffb,
	MTHCA_CMD_MAP_ICM_AUX		= 0xffc,
	MTHCA_CMD_SET_ICM_SIZE		= 0xffd,
	MTHCA_CMD_UNMAP_FA		= 0xffe,
	MTHCA_CMD_MAP_FA		= 0xfff,
};

/* Firmware status codes (HCR status byte). */
enum mthca_cmd_status {
	/* General errors. */
	MTHCA_STAT_OK = 0x00,		MTHCA_STAT_INTERNAL_ERR = 0x01,
	MTHCA_STAT_BAD_OP = 0x02,	MTHCA_STAT_BAD_PARAM = 0x03,
	MTHCA_STAT_BAD_SYS_STATE = 0x04, MTHCA_STAT_BAD_RESOURCE = 0x05,
	MTHCA_STAT_RESOURCE_BUSY = 0x06, MTHCA_STAT_DDR_MEM_ERR = 0x07,
	MTHCA_STAT_EXCEED_LIM = 0x08,	MTHCA_STAT_BAD_RES_STATE = 0x09,
	MTHCA_STAT_BAD_INDEX = 0x0a,	MTHCA_STAT_BAD_NVMEM = 0x0b,
	/* QP/EE state, memory segments, packets. */
	MTHCA_STAT_BAD_QPEE_STATE = 0x10, MTHCA_STAT_BAD_SEG_PARAM = 0x20,
	MTHCA_STAT_REG_BOUND = 0x21,	MTHCA_STAT_LAM_NOT_PRE = 0x22,
	MTHCA_STAT_BAD_PKT = 0x30,	MTHCA_STAT_BAD_SIZE = 0x40,
};

/* Default command timeout: the firmware may be slow; be generous. */
#define MTHCA_CMD_TIMEOUT_MS	60000

/* The QP transition opcodes take the QP number and this in in_mod. */
#define MTHCA_CMD_QP_IS_EE	BIT(24)

/*
 * Errno for a firmware status: the status itself is logged by
 * mthca_cmd_exec(); callers that care about a particular status (e.g.
 * LAM_NOT_PRE -> -EAGAIN, BAD_PKT from MAD_IFC -> -EBADMSG) test the errno.
 */

int mthca_cmd_exec(struct mthca_dev *dev, u64 in_param, u64 out_param,
		   u64 *out_imm, u32 in_mod, u8 op_mod, u16 op,
		   unsigned int timeout_ms);

struct mthca_mailbox *mthca_mailbox_alloc(struct mthca_dev *dev, gfp_t gfp);
void mthca_mailbox_free(struct mthca_dev *dev, struct mthca_mailbox *mb);

int mthca_cmd_init(struct mthca_dev *dev);
void mthca_cmd_cleanup(struct mthca_dev *dev);
int mthca_cmd_use_events(struct mthca_dev *dev);
void mthca_cmd_use_polling(struct mthca_dev *dev);
void mthca_cmd_event(struct mthca_dev *dev, u16 token, u8 status,
		     u64 out_param);

/*
 * struct mthca_dev_lim: QUERY_DEV_LIM results the profile needs
 *
 * Entry sizes are bytes per object; counts are log2 values as reported.
 */
struct mthca_dev_lim {
	/* What the firmware keeps for itself, per resource type. */
	int	reserved_qps, reserved_srqs, reserved_eecs, reserved_cqs;
	int	reserved_eqs, reserved_mtts, reserved_mrws, reserved_uars;
	int	reserved_mgms, reserved_pds, reserved_rdds;
	/* Table limits. */
	int	max_qps, max_srqs, max_eecs, max_cqs, max_eqs, max_mpts;
	int	max_mcgs, max_pds, max_rdds, max_mtt_seg;
	/* Queue and request limits. */
	int	max_qp_sz, max_srq_sz, max_cq_sz, max_sg, max_desc_sz;
	int	max_qp_per_mcg, max_rdma_global;
	int	max_requester_per_qp, max_responder_per_qp;
	/* Port properties. */
	int	num_ports, max_port_width, max_mtu, max_vl;
	int	max_gids, max_pkeys, local_ca_ack_delay;
	u16	stat_rate_support;
	/* Context entry sizes, in bytes. */
	int	qpc_entry_sz, eec_entry_sz, srq_entry_sz, cqc_entry_sz;
	int	eqc_entry_sz, eqpc_entry_sz, eeec_entry_sz, mpt_entry_sz;
	int	mtt_seg_sz, uar_scratch_entry_sz;
	/* Everything else. */
	int	uar_size, min_page_sz;
	u64	max_mrw_sz, max_icm_sz;
	u32	flags;
};

/* DEV_LIM flags (the bit numbers the firmware reports). */
#define MTHCA_DEV_CAP_RC		BIT(0)
#define MTHCA_DEV_CAP_UC		BIT(1)
#define MTHCA_DEV_CAP_UD		BIT(2)
#define MTHCA_DEV_CAP_SRQ		BIT(6)
#define MTHCA_DEV_CAP_IPOIB_CSUM	BIT(7)
#define MTHCA_DEV_CAP_BAD_PKEY_CNTR	BIT(8)
#define MTHCA_DEV_CAP_BAD_QKEY_CNTR	BIT(9)
#define MTHCA_DEV_CAP_MW		BIT(16)
#define MTHCA_DEV_CAP_AUTO_PATH_MIG	BIT(17)
#define MTHCA_DEV_CAP_ATOMIC		BIT(18)
#define MTHCA_DEV_CAP_RAW_MULTI		BIT(19)
#define MTHCA_DEV_CAP_UD_AV_PORT	BIT(20)
#define MTHCA_DEV_CAP_UD_MULTI		BIT(21)

/**
 * struct mthca_adapter_info - QUERY_ADAPTER results
 * @vendor_id: PCI vendor
 * @device_id: PCI device
 * @revision_id: hardware revision
 * @inta_pin: INTx cause bit of the device
 * @board_id: PSID, NUL-terminated
 */
struct mthca_adapter_info {
	u32	vendor_id;
	u32	device_id;
	u32	revision_id;
	u8	inta_pin;
	char	board_id[64];
};

/*
 * struct mthca_init_hca_param: INIT_HCA input
 *
 * Bases are ICM addresses; log_* are log2 of the table sizes.
 */
struct mthca_init_hca_param {
	/* Queue pair, EE and SRQ contexts and their extensions. */
	u64	qpc_base, eqpc_base, srqc_base, eec_base, eeec_base, rdb_base;
	u8	log_num_qps, log_num_srqs, log_num_eecs;
	/* Completion and event queue contexts. */
	u64	cqc_base, eqc_base;
	u8	log_num_cqs, log_num_eqs;
	/* Multicast groups. */
	u64	mc_base;
	u16	log_mc_entry_sz, mc_hash_sz;
	u8	log_mc_table_sz;
	/* Translation and protection tables. */
	u64	mpt_base, mtt_base;
	u8	log_mpt_sz, mtt_seg_sz;
	/* Doorbell pages. */
	u64	uar_scratch_base, uarc_base;
	u8	log_uar_sz, log_uarc_sz;
};

/*
 * struct mthca_init_ib_param: INIT_IB input for one port
 */
struct mthca_init_ib_param {
	/* Link capabilities. */
	int	port_width, vl_cap, mtu_cap;
	/* Table sizes. */
	u16	gid_cap, pkey_cap;
	/* GUIDs to override; each is used only with its set_* flag. */
	u64	guid0, node_guid, si_guid;
	bool	set_guid0, set_node_guid, set_si_guid;
};

/* Bring-up and tear-down. */
int mthca_QUERY_FW(struct mthca_dev *dev);
int mthca_ENABLE_LAM(struct mthca_dev *dev);
int mthca_DISABLE_LAM(struct mthca_dev *dev);
int mthca_MAP_FA(struct mthca_dev *dev, struct mthca_icm *icm);
int mthca_UNMAP_FA(struct mthca_dev *dev);
int mthca_RUN_FW(struct mthca_dev *dev);
int mthca_QUERY_DEV_LIM(struct mthca_dev *dev, struct mthca_dev_lim *lim);
int mthca_QUERY_ADAPTER(struct mthca_dev *dev,
			struct mthca_adapter_info *info);
int mthca_INIT_HCA(struct mthca_dev *dev,
		   const struct mthca_init_hca_param *param);
int mthca_CLOSE_HCA(struct mthca_dev *dev, bool panic);
int mthca_INIT_IB(struct mthca_dev *dev,
		  const struct mthca_init_ib_param *param, int port);
int mthca_CLOSE_IB(struct mthca_dev *dev, int port);
int mthca_SET_IB(struct mthca_dev *dev, int port, u32 cap_mask,
		 bool reset_qkey_viol);
int mthca_SET_ICM_SIZE(struct mthca_dev *dev, u64 icm_size, u64 *aux_pages);
int mthca_MAP_ICM(struct mthca_dev *dev, struct mthca_icm *icm, u64 virt);
int mthca_MAP_ICM_page(struct mthca_dev *dev, u64 dma_addr, u64 virt);
int mthca_UNMAP_ICM(struct mthca_dev *dev, u64 virt, u32 page_count);
int mthca_MAP_ICM_AUX(struct mthca_dev *dev, struct mthca_icm *icm);
int mthca_UNMAP_ICM_AUX(struct mthca_dev *dev);
int mthca_NOP(struct mthca_dev *dev);

/* Translation and protection tables. */
int mthca_SW2HW_MPT(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 index);
int mthca_HW2SW_MPT(struct mthca_dev *dev, u32 index);
int mthca_WRITE_MTT(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    int nentries);
int mthca_SYNC_TPT(struct mthca_dev *dev);

/* EQs. */
int mthca_MAP_EQ(struct mthca_dev *dev, u64 event_mask, bool unmap, u32 eqn);
int mthca_SW2HW_EQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 eqn);
int mthca_HW2SW_EQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 eqn);

/* CQs: @mb carries the 64-byte CQ context in and (HW2SW) out. */
int mthca_SW2HW_CQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 cqn);
int mthca_HW2SW_CQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 cqn);
int mthca_RESIZE_CQ(struct mthca_dev *dev, u32 cqn, u32 lkey, u8 log_size);

/* SRQs. */
int mthca_SW2HW_SRQ(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 srqn);
int mthca_HW2SW_SRQ(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 srqn);
int mthca_QUERY_SRQ(struct mthca_dev *dev, u32 srqn, struct mthca_mailbox *mb);
int mthca_ARM_SRQ(struct mthca_dev *dev, u32 srqn, u32 limit);

/*
 * QPs.  mthca_MODIFY_QP() runs transition @op (one of the *_QP opcodes
 * above) on @qpn with the opt-param mask @optmask and the QP context in
 * @mb (opt-param mask at offset 0, context at offset 8).  For
 * MTHCA_CMD_2RST_QP, @mb may be NULL (no context is read back).
 */
int mthca_MODIFY_QP(struct mthca_dev *dev, u16 op, u32 qpn, bool is_ee,
		    struct mthca_mailbox *mb, u32 optmask);
int mthca_QUERY_QP(struct mthca_dev *dev, u32 qpn, bool is_ee,
		   struct mthca_mailbox *mb);
/* @type: IB_QPT_SMI or IB_QPT_GSI; @qpn: first of the pair (port 1). */
int mthca_CONF_SPECIAL_QP(struct mthca_dev *dev, enum ib_qp_type type,
			  u32 qpn);

/* MADs: @in_wc/@in_grh may be NULL; @out_mad gets the 256-byte response. */
int mthca_MAD_IFC(struct mthca_dev *dev, bool ignore_mkey, bool ignore_bkey,
		  int port, const struct ib_wc *in_wc,
		  const struct ib_grh *in_grh, const void *in_mad,
		  void *out_mad);

/* Multicast: @mb holds one MGM entry. */
int mthca_READ_MGM(struct mthca_dev *dev, u32 index, struct mthca_mailbox *mb);
int mthca_WRITE_MGM(struct mthca_dev *dev, u32 index,
		    struct mthca_mailbox *mb);
int mthca_MGID_HASH(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u16 *hash);

#endif /* MTHCA_CMD_H */
