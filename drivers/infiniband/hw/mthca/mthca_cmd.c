// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The HCR command interface of the MT25208 and the commands the driver
 * uses.
 *
 * A command is seven big-endian dwords written to the HCR: input
 * parameter (2), input modifier, output parameter (2), token, and a last
 * dword with the go bit, the event bit, the opcode modifier and the
 * opcode.  The firmware clears the go bit when it is done and leaves the
 * status in the top byte of that last dword.  In event mode it instead
 * posts a command-completion EQE carrying the token, status and
 * immediate output.
 */

#include <linux/delay.h>
#include <linux/dmapool.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/jiffies.h>
#include <linux/completion.h>
#include <linux/semaphore.h>

#include "mthca_dev.h"
#include "mthca_cmd.h"
#include "mthca_icm.h"

/* HCR dword indices. */
enum {
	HCR_IN_HI	= 0,
	HCR_IN_LO	= 1,
	HCR_IN_MOD	= 2,
	HCR_OUT_HI	= 3,
	HCR_OUT_LO	= 4,
	HCR_TOKEN	= 5,
	HCR_CTRL	= 6,
};

#define HCR_CTRL_GO		BIT(23)
#define HCR_CTRL_EVENT		BIT(22)
#define HCR_CTRL_OPMOD_SHIFT	12

/* The token of polled commands; event-mode tokens never take this value. */
#define POLL_TOKEN		0xffff

/* How long to wait for a previous command to release the HCR. */
#define HCR_FREE_TIMEOUT_MS	10000

/**
 * struct mthca_cmd_waiter - one command slot in event mode
 * @done: completed by the EQ handler
 * @token: token of the command now in this slot; the low bits are the
 *	slot index, the high bits change with every use so a late
 *	completion of a timed-out command is recognised
 * @next_free: next free slot index (free list), under wait_lock
 * @status: firmware status from the EQE
 * @imm: immediate output from the EQE
 */
struct mthca_cmd_waiter {
	struct completion	done;
	u16			token;
	int			next_free;
	u8			status;
	u64			imm;
};

static inline u32 hcr_read(struct mthca_dev *dev, int idx)
{
	return be32_to_cpu((__force __be32)__raw_readl(dev->hcr + idx * 4));
}

static inline void hcr_write(struct mthca_dev *dev, int idx, u32 val)
{
	__raw_writel((__force u32)cpu_to_be32(val), dev->hcr + idx * 4);
}

static bool hcr_busy(struct mthca_dev *dev)
{
	return hcr_read(dev, HCR_CTRL) & HCR_CTRL_GO;
}

/* Sleep-polls the go bit for up to @ms milliseconds; true if it cleared. */
static bool hcr_wait_idle(struct mthca_dev *dev, unsigned int ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);

	while (hcr_busy(dev)) {
		if (time_after(jiffies, deadline))
			return !hcr_busy(dev);
		cond_resched();
	}
	return true;
}

static int hcr_issue(struct mthca_dev *dev, u64 in_param, u64 out_param,
		     u32 in_mod, u8 op_mod, u16 op, u16 token, bool event)
{
	int ret = 0;

	mutex_lock(&dev->cmd.hcr_mutex);
	if (!hcr_wait_idle(dev, event ? HCR_FREE_TIMEOUT_MS : 0)) {
		ret = -EAGAIN;
		goto unlock;
	}

	/* The HCR takes only full dwords; the last one starts the command. */
	hcr_write(dev, HCR_IN_HI, upper_32_bits(in_param));
	hcr_write(dev, HCR_IN_LO, lower_32_bits(in_param));
	hcr_write(dev, HCR_IN_MOD, in_mod);
	hcr_write(dev, HCR_OUT_HI, upper_32_bits(out_param));
	hcr_write(dev, HCR_OUT_LO, lower_32_bits(out_param));
	hcr_write(dev, HCR_TOKEN, (u32)token << 16);
	wmb(); /* parameters before the go bit */
	hcr_write(dev, HCR_CTRL, HCR_CTRL_GO | (event ? HCR_CTRL_EVENT : 0) |
		  ((u32)op_mod << HCR_CTRL_OPMOD_SHIFT) | op);
unlock:
	mutex_unlock(&dev->cmd.hcr_mutex);
	return ret;
}

static int status_errno(u8 status)
{
	switch (status) {
	case MTHCA_STAT_OK:
		return 0;
	case MTHCA_STAT_INTERNAL_ERR:
		return -EIO;
	case MTHCA_STAT_BAD_OP:
		return -EPERM;
	case MTHCA_STAT_BAD_SYS_STATE:
		return -ENXIO;
	case MTHCA_STAT_BAD_RESOURCE:
	case MTHCA_STAT_BAD_RES_STATE:
	case MTHCA_STAT_BAD_INDEX:
		return -EBADF;
	case MTHCA_STAT_RESOURCE_BUSY:
	case MTHCA_STAT_REG_BOUND:
		return -EBUSY;
	case MTHCA_STAT_DDR_MEM_ERR:
	case MTHCA_STAT_EXCEED_LIM:
	case MTHCA_STAT_BAD_SIZE:
		return -ENOMEM;
	case MTHCA_STAT_BAD_NVMEM:
	case MTHCA_STAT_BAD_SEG_PARAM:
		return -EFAULT;
	case MTHCA_STAT_LAM_NOT_PRE:
		return -EAGAIN;
	case MTHCA_STAT_BAD_PKT:
		return -EBADMSG;
	default:
		return -EINVAL;
	}
}

static int cmd_result(struct mthca_dev *dev, u16 op, u8 status)
{
	if (!status)
		return 0;
	/*
	 * Expected "failures": ENABLE_LAM on a mem-free board, MAD_IFC of a
	 * MAD the firmware has no agent for.
	 */
	if ((op == MTHCA_CMD_ENABLE_LAM && status == MTHCA_STAT_LAM_NOT_PRE) ||
	    (op == MTHCA_CMD_MAD_IFC && status == MTHCA_STAT_BAD_PKT))
		mthca_dbg(dev, "command 0x%03x: status 0x%02x\n", op, status);
	else
		mthca_warn(dev, "command 0x%03x failed: status 0x%02x\n",
			   op, status);
	return status_errno(status);
}

static int cmd_polled(struct mthca_dev *dev, u64 in_param, u64 out_param,
		      u64 *out_imm, u32 in_mod, u8 op_mod, u16 op,
		      unsigned int timeout_ms)
{
	int ret;

	down(&dev->cmd.poll_sem);
	ret = hcr_issue(dev, in_param, out_param, in_mod, op_mod, op,
			POLL_TOKEN, false);
	if (ret)
		goto out;

	if (!hcr_wait_idle(dev, timeout_ms)) {
		mthca_err(dev, "command 0x%03x timed out\n", op);
		ret = -EBUSY;
		goto out;
	}
	if (out_imm)
		*out_imm = (u64)hcr_read(dev, HCR_OUT_HI) << 32 |
			   hcr_read(dev, HCR_OUT_LO);
	ret = cmd_result(dev, op, hcr_read(dev, HCR_CTRL) >> 24);
out:
	up(&dev->cmd.poll_sem);
	return ret;
}

static int cmd_evented(struct mthca_dev *dev, u64 in_param, u64 out_param,
		       u64 *out_imm, u32 in_mod, u8 op_mod, u16 op,
		       unsigned int timeout_ms)
{
	struct mthca_cmd_state *cs = &dev->cmd;
	struct mthca_cmd_waiter *w;
	unsigned long flags;
	int slot, ret;

	down(&cs->event_sem);

	spin_lock_irqsave(&cs->wait_lock, flags);
	slot = cs->free_waiter;
	w = &cs->waiters[slot];
	cs->free_waiter = w->next_free;
	/* A fresh token: same slot bits, new generation. */
	w->token += cs->token_mask + 1;
	if (w->token == POLL_TOKEN)
		w->token += cs->token_mask + 1;
	reinit_completion(&w->done);
	spin_unlock_irqrestore(&cs->wait_lock, flags);

	ret = hcr_issue(dev, in_param, out_param, in_mod, op_mod, op,
			w->token, true);
	if (ret)
		goto release;

	if (!wait_for_completion_timeout(&w->done,
					 msecs_to_jiffies(timeout_ms))) {
		mthca_err(dev, "command 0x%03x timed out\n", op);
		ret = -EBUSY;
		goto release;
	}
	ret = cmd_result(dev, op, w->status);
	if (!ret && out_imm)
		*out_imm = w->imm;

release:
	spin_lock_irqsave(&cs->wait_lock, flags);
	/* A completion arriving from now on no longer matches the token. */
	w->token += cs->token_mask + 1;
	if (w->token == POLL_TOKEN)
		w->token += cs->token_mask + 1;
	w->next_free = cs->free_waiter;
	cs->free_waiter = slot;
	spin_unlock_irqrestore(&cs->wait_lock, flags);
	up(&cs->event_sem);
	return ret;
}

/**
 * mthca_cmd_exec() - run one firmware command
 * @dev: the device
 * @in_param: input parameter (an inbox bus address, or an immediate)
 * @out_param: output parameter (an outbox bus address, or 0)
 * @out_imm: where to store an immediate result, or NULL
 * @in_mod: input modifier
 * @op_mod: opcode modifier
 * @op: opcode (enum mthca_cmd_op)
 * @timeout_ms: how long to wait for completion
 *
 * Sleeps.  Polls the HCR until mthca_cmd_use_events() has switched to
 * event mode, then waits for the command-completion EQE.
 *
 * Return: 0, or a negative errno (the firmware status mapped, -EBUSY on
 * timeout).
 */
int mthca_cmd_exec(struct mthca_dev *dev, u64 in_param, u64 out_param,
		   u64 *out_imm, u32 in_mod, u8 op_mod, u16 op,
		   unsigned int timeout_ms)
{
	might_sleep();
	if (READ_ONCE(dev->cmd.dead))
		return -EIO;
	if (READ_ONCE(dev->cmd.use_events))
		return cmd_evented(dev, in_param, out_param, out_imm, in_mod,
				   op_mod, op, timeout_ms);
	return cmd_polled(dev, in_param, out_param, out_imm, in_mod, op_mod,
			  op, timeout_ms);
}

/**
 * mthca_cmd_event() - a command-completion EQE arrived
 * @dev: the device
 * @token: the token of the command
 * @status: its firmware status
 * @out_param: its immediate output
 *
 * Called from the command EQ's interrupt handler.  A token that matches no
 * command in flight (one that timed out) is ignored.
 */
void mthca_cmd_event(struct mthca_dev *dev, u16 token, u8 status,
		     u64 out_param)
{
	struct mthca_cmd_state *cs = &dev->cmd;
	struct mthca_cmd_waiter *w;
	unsigned long flags;

	spin_lock_irqsave(&cs->wait_lock, flags);
	if (cs->waiters) {
		w = &cs->waiters[token & cs->token_mask];
		if (w->token == token) {
			w->status = status;
			w->imm = out_param;
			complete(&w->done);
		}
	}
	spin_unlock_irqrestore(&cs->wait_lock, flags);
}

/**
 * mthca_cmd_init() - map the HCR and create the mailbox pool
 * @dev: the device, with @dev->pdev set and BAR0 requested
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_cmd_init(struct mthca_dev *dev)
{
	mutex_init(&dev->cmd.hcr_mutex);
	sema_init(&dev->cmd.poll_sem, 1);
	spin_lock_init(&dev->cmd.wait_lock);
	dev->cmd.use_events = false;
	dev->cmd.dead = false;
	dev->cmd.waiters = NULL;

	dev->hcr = ioremap(pci_resource_start(dev->pdev, 0) + 0x80680, 0x1c);
	if (!dev->hcr)
		return -ENOMEM;

	dev->cmd.pool = dma_pool_create("mthca_mbox", &dev->pdev->dev,
					MTHCA_MAILBOX_SIZE, MTHCA_MAILBOX_SIZE,
					0);
	if (!dev->cmd.pool) {
		iounmap(dev->hcr);
		dev->hcr = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * mthca_cmd_cleanup() - undo mthca_cmd_init()
 * @dev: the device
 */
void mthca_cmd_cleanup(struct mthca_dev *dev)
{
	dma_pool_destroy(dev->cmd.pool);
	dev->cmd.pool = NULL;
	iounmap(dev->hcr);
	dev->hcr = NULL;
}

/**
 * mthca_cmd_use_events() - complete commands through the command EQ
 * @dev: the device, with the command EQ armed and mapped to command events
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_cmd_use_events(struct mthca_dev *dev)
{
	struct mthca_cmd_state *cs = &dev->cmd;
	int i;

	cs->waiters = kcalloc(cs->max_cmds, sizeof(*cs->waiters), GFP_KERNEL);
	if (!cs->waiters)
		return -ENOMEM;

	cs->token_mask = roundup_pow_of_two(cs->max_cmds) - 1;
	for (i = 0; i < cs->max_cmds; i++) {
		init_completion(&cs->waiters[i].done);
		cs->waiters[i].token = i;
		cs->waiters[i].next_free = i + 1 < cs->max_cmds ? i + 1 : -1;
	}
	cs->free_waiter = 0;
	sema_init(&cs->event_sem, cs->max_cmds);

	/* No polled command may run from now on. */
	down(&cs->poll_sem);
	WRITE_ONCE(cs->use_events, true);
	return 0;
}

/**
 * mthca_cmd_use_polling() - go back to polling, before the EQs go away
 * @dev: the device
 *
 * Waits for every command in flight to finish.
 */
void mthca_cmd_use_polling(struct mthca_dev *dev)
{
	struct mthca_cmd_state *cs = &dev->cmd;
	struct mthca_cmd_waiter *w;
	int i;

	if (!cs->use_events)
		return;

	for (i = 0; i < cs->max_cmds; i++)
		down(&cs->event_sem);
	WRITE_ONCE(cs->use_events, false);
	/* A late completion of a timed-out command finds no waiters. */
	spin_lock_irq(&cs->wait_lock);
	w = cs->waiters;
	cs->waiters = NULL;
	spin_unlock_irq(&cs->wait_lock);
	kfree(w);
	up(&cs->poll_sem);
}

/**
 * mthca_mailbox_alloc() - get a 4 KiB command mailbox
 * @dev: the device
 * @gfp: allocation flags
 *
 * Return: the mailbox or ERR_PTR(-ENOMEM).
 */
struct mthca_mailbox *mthca_mailbox_alloc(struct mthca_dev *dev, gfp_t gfp)
{
	struct mthca_mailbox *mb;

	mb = kmalloc(sizeof(*mb), gfp);
	if (!mb)
		return ERR_PTR(-ENOMEM);
	mb->buf = dma_pool_zalloc(dev->cmd.pool, gfp, &mb->dma);
	if (!mb->buf) {
		kfree(mb);
		return ERR_PTR(-ENOMEM);
	}
	return mb;
}

/**
 * mthca_mailbox_free() - return a mailbox
 * @dev: the device
 * @mb: the mailbox, or NULL or an error pointer (ignored)
 */
void mthca_mailbox_free(struct mthca_dev *dev, struct mthca_mailbox *mb)
{
	if (IS_ERR_OR_NULL(mb))
		return;
	dma_pool_free(dev->cmd.pool, mb->buf, mb->dma);
	kfree(mb);
}

/* Big-endian fields of mailboxes. */
static inline u8 mb_u8(const void *box, unsigned int off)
{
	return ((const u8 *)box)[off];
}

static inline u16 mb_u16(const void *box, unsigned int off)
{
	return get_unaligned_be16((const u8 *)box + off);
}

static inline u32 mb_u32(const void *box, unsigned int off)
{
	return get_unaligned_be32((const u8 *)box + off);
}

static inline u64 mb_u64(const void *box, unsigned int off)
{
	return get_unaligned_be64((const u8 *)box + off);
}

static inline void mb_set8(void *box, unsigned int off, u8 v)
{
	((u8 *)box)[off] = v;
}

static inline void mb_set16(void *box, unsigned int off, u16 v)
{
	put_unaligned_be16(v, (u8 *)box + off);
}

static inline void mb_set32(void *box, unsigned int off, u32 v)
{
	put_unaligned_be32(v, (u8 *)box + off);
}

static inline void mb_set64(void *box, unsigned int off, u64 v)
{
	put_unaligned_be64(v, (u8 *)box + off);
}

#define TMO	MTHCA_CMD_TIMEOUT_MS

/* A command whose only output is a mailbox. */
static int cmd_query(struct mthca_dev *dev, u16 op, u32 in_mod,
		     struct mthca_mailbox **out)
{
	struct mthca_mailbox *mb;
	int ret;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	ret = mthca_cmd_exec(dev, 0, mb->dma, NULL, in_mod, 0, op, TMO);
	if (ret) {
		mthca_mailbox_free(dev, mb);
		return ret;
	}
	*out = mb;
	return 0;
}

/**
 * mthca_QUERY_FW() - read the firmware version and register locations
 * @dev: the device; fills in @dev->fw and @dev->cmd.max_cmds
 *
 * Return: 0 or a negative errno.
 */
int mthca_QUERY_FW(struct mthca_dev *dev)
{
	struct mthca_mailbox *mb;
	void *box;
	u64 ver;
	int ret;

	ret = cmd_query(dev, MTHCA_CMD_QUERY_FW, 0, &mb);
	if (ret)
		return ret;
	box = mb->buf;

	/* Word 0: pages (16) | major (16) | subminor (16) | minor (16). */
	ver = mb_u64(box, 0x00);
	dev->fw.fw_pages = ver >> 48;
	dev->fw.version = ((ver >> 32) & 0xffff) << 32 |
			  (ver & 0xffff) << 16 | ((ver >> 16) & 0xffff);
	dev->fw.log_max_cmds = mb_u8(box, 0x0f);
	dev->cmd.max_cmds = 1 << dev->fw.log_max_cmds;
	dev->fw.clr_int_base = mb_u64(box, 0x20);
	dev->fw.catas_base = mb_u64(box, 0x30);
	dev->fw.catas_size = mb_u32(box, 0x38);
	dev->fw.eq_arm_base = mb_u64(box, 0x40);
	dev->fw.eq_set_ci_base = mb_u64(box, 0x48);

	/* The firmware counts 4 KiB pages; round up to system pages. */
	dev->fw.fw_pages = ALIGN(dev->fw.fw_pages,
				 PAGE_SIZE / MTHCA_ICM_PAGE_SIZE) >>
			   (PAGE_SHIFT - MTHCA_ICM_PAGE_SHIFT);

	mthca_dbg(dev, "firmware %llu.%llu.%llu, %d commands, %u pages\n",
		  dev->fw.version >> 32, (dev->fw.version >> 16) & 0xffff,
		  dev->fw.version & 0xffff, dev->cmd.max_cmds,
		  dev->fw.fw_pages);
	mthca_mailbox_free(dev, mb);
	return 0;
}

/**
 * mthca_ENABLE_LAM() - try to enable HCA-attached memory
 * @dev: the device
 *
 * Return: 0 if the board has attached memory, -EAGAIN if it has none
 * (mem-free), another negative errno on failure.
 */
int mthca_ENABLE_LAM(struct mthca_dev *dev)
{
	struct mthca_mailbox *mb;
	int ret;

	ret = cmd_query(dev, MTHCA_CMD_ENABLE_LAM, 0, &mb);
	if (!ret)
		mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_DISABLE_LAM() - disable HCA-attached memory
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_DISABLE_LAM(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, 0, MTHCA_CMD_DISABLE_LAM, TMO);
}

/*
 * MAP_FA, MAP_ICM_AUX and MAP_ICM take a list of 16-byte entries: the
 * ICM address (MAP_ICM only) and the bus address of a naturally aligned
 * power-of-two block, whose log2 size in 4 KiB pages is in the low bits.
 */
static int icm_map_cmd(struct mthca_dev *dev, u16 op, struct mthca_icm *icm,
		       u64 virt)
{
	struct mthca_icm_iter it;
	struct mthca_mailbox *mb;
	__be64 *ent;
	unsigned int n = 0;
	int ret = 0;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	ent = mb->buf;

	for (mthca_icm_iter_start(icm, &it); !mthca_icm_iter_done(&it);
	     mthca_icm_iter_next(&it)) {
		u64 addr = mthca_icm_iter_addr(&it);
		u64 len = mthca_icm_iter_len(&it);
		int lg = __ffs64(addr | len);
		u64 off;

		if (lg < MTHCA_ICM_PAGE_SHIFT) {
			mthca_err(dev, "ICM block %llx+%llx not 4 KiB aligned\n",
				  addr, len);
			ret = -EINVAL;
			goto out;
		}
		for (off = 0; off < len; off += 1ULL << lg) {
			ent[2 * n] = cpu_to_be64(virt);
			ent[2 * n + 1] = cpu_to_be64((addr + off) |
						     (lg - MTHCA_ICM_PAGE_SHIFT));
			if (op == MTHCA_CMD_MAP_ICM)
				virt += 1ULL << lg;
			if (++n == MTHCA_MAILBOX_SIZE / 16) {
				ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, n,
						     0, op, TMO);
				if (ret)
					goto out;
				n = 0;
			}
		}
	}
	if (n)
		ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, n, 0, op, TMO);
out:
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_MAP_FA() - give the firmware its area
 * @dev: the device
 * @icm: the pages
 *
 * Return: 0 or a negative errno.
 */
int mthca_MAP_FA(struct mthca_dev *dev, struct mthca_icm *icm)
{
	return icm_map_cmd(dev, MTHCA_CMD_MAP_FA, icm, 0);
}

/**
 * mthca_UNMAP_FA() - take the firmware area back (stops the firmware)
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_UNMAP_FA(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, 0, MTHCA_CMD_UNMAP_FA, TMO);
}

/**
 * mthca_RUN_FW() - start the firmware in its area
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_RUN_FW(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, 0, MTHCA_CMD_RUN_FW, TMO);
}

static int log_field(u8 v, u8 mask)
{
	return 1 << (v & mask);
}

/**
 * mthca_QUERY_DEV_LIM() - read the device limits
 * @dev: the device
 * @lim: the results
 *
 * Return: 0 or a negative errno.
 */
int mthca_QUERY_DEV_LIM(struct mthca_dev *dev, struct mthca_dev_lim *lim)
{
	struct mthca_mailbox *mb;
	void *b;
	int ret;
	u8 v;

	ret = cmd_query(dev, MTHCA_CMD_QUERY_DEV_LIM, 0, &mb);
	if (ret)
		return ret;
	b = mb->buf;
	memset(lim, 0, sizeof(*lim));

	lim->max_srq_sz = 1 << mb_u8(b, 0x10);
	lim->max_qp_sz = 1 << mb_u8(b, 0x11);
	lim->reserved_qps = log_field(mb_u8(b, 0x12), 0xf);
	lim->max_qps = log_field(mb_u8(b, 0x13), 0x1f);
	lim->reserved_srqs = 1 << (mb_u8(b, 0x14) >> 4);
	lim->max_srqs = log_field(mb_u8(b, 0x15), 0x1f);
	lim->reserved_eecs = log_field(mb_u8(b, 0x16), 0xf);
	lim->max_eecs = log_field(mb_u8(b, 0x17), 0x1f);
	lim->max_cq_sz = 1 << mb_u8(b, 0x19);
	lim->reserved_cqs = log_field(mb_u8(b, 0x1a), 0xf);
	lim->max_cqs = log_field(mb_u8(b, 0x1b), 0x1f);
	lim->max_mpts = log_field(mb_u8(b, 0x1d), 0x3f);
	lim->reserved_eqs = log_field(mb_u8(b, 0x1e), 0xf);
	lim->max_eqs = log_field(mb_u8(b, 0x1f), 0x7);
	/* Reserved MTT entries (not segments) for mem-free firmware. */
	lim->reserved_mtts = 1 << (mb_u8(b, 0x20) >> 4);
	lim->max_mrw_sz = 1ULL << mb_u8(b, 0x21);
	lim->reserved_mrws = log_field(mb_u8(b, 0x22), 0xf);
	lim->max_mtt_seg = log_field(mb_u8(b, 0x23), 0x3f);
	lim->max_requester_per_qp = log_field(mb_u8(b, 0x29), 0x3f);
	lim->max_responder_per_qp = log_field(mb_u8(b, 0x2b), 0x3f);
	lim->max_rdma_global = log_field(mb_u8(b, 0x2f), 0x3f);
	lim->local_ca_ack_delay = mb_u8(b, 0x35) & 0x1f;
	v = mb_u8(b, 0x36);
	lim->max_mtu = v >> 4;
	lim->max_port_width = v & 0xf;
	v = mb_u8(b, 0x37);
	lim->max_vl = v >> 4;
	lim->num_ports = v & 0xf;
	lim->max_gids = log_field(mb_u8(b, 0x3b), 0xf);
	lim->stat_rate_support = mb_u16(b, 0x3c);
	lim->max_pkeys = log_field(mb_u8(b, 0x3f), 0xf);
	lim->flags = mb_u32(b, 0x44);
	lim->reserved_uars = mb_u8(b, 0x48) >> 4;
	lim->uar_size = 1 << ((mb_u8(b, 0x49) & 0x3f) + 20);
	lim->min_page_sz = 1 << mb_u8(b, 0x4b);
	lim->max_sg = min(mb_u8(b, 0x51), mb_u8(b, 0x55));
	lim->max_desc_sz = min(mb_u16(b, 0x52), mb_u16(b, 0x56));
	lim->max_qp_per_mcg = 1 << mb_u8(b, 0x61);
	lim->reserved_mgms = mb_u8(b, 0x62) & 0xf;
	lim->max_mcgs = 1 << mb_u8(b, 0x63);
	lim->reserved_pds = mb_u8(b, 0x64) >> 4;
	lim->max_pds = log_field(mb_u8(b, 0x65), 0x3f);
	lim->reserved_rdds = mb_u8(b, 0x66) >> 4;
	lim->max_rdds = log_field(mb_u8(b, 0x67), 0x3f);
	lim->eec_entry_sz = mb_u16(b, 0x80);
	lim->qpc_entry_sz = mb_u16(b, 0x82);
	lim->eeec_entry_sz = mb_u16(b, 0x84);
	lim->eqpc_entry_sz = mb_u16(b, 0x86);
	lim->eqc_entry_sz = mb_u16(b, 0x88);
	lim->cqc_entry_sz = mb_u16(b, 0x8a);
	lim->srq_entry_sz = mb_u16(b, 0x8c);
	lim->uar_scratch_entry_sz = mb_u16(b, 0x8e);
	lim->mtt_seg_sz = mb_u16(b, 0x90);
	lim->mpt_entry_sz = mb_u16(b, 0x92);
	lim->max_icm_sz = mb_u64(b, 0xa0);

	mthca_mailbox_free(dev, mb);
	return 0;
}

/**
 * mthca_QUERY_ADAPTER() - read the adapter identity
 * @dev: the device
 * @info: the results
 *
 * Return: 0 or a negative errno.
 */
int mthca_QUERY_ADAPTER(struct mthca_dev *dev,
			struct mthca_adapter_info *info)
{
	struct mthca_mailbox *mb;
	const u8 *vsd;
	int ret, i;

	ret = cmd_query(dev, MTHCA_CMD_QUERY_ADAPTER, 0, &mb);
	if (ret)
		return ret;

	memset(info, 0, sizeof(*info));
	info->vendor_id = mb_u32(mb->buf, 0x00);
	info->device_id = mb_u32(mb->buf, 0x04);
	info->revision_id = mb_u32(mb->buf, 0x08);
	info->inta_pin = mb_u8(mb->buf, 0x10);

	/*
	 * The vendor-specific data holds the PSID at 0xd0, each dword of it
	 * byte-swapped by the firmware.
	 */
	vsd = (const u8 *)mb->buf + 0x20 + 0xd0;
	for (i = 0; i < 16; i++)
		info->board_id[i] = vsd[(i & ~3) + 3 - (i & 3)];
	info->board_id[16] = '\0';

	mthca_mailbox_free(dev, mb);
	return 0;
}

/**
 * mthca_INIT_HCA() - lay the tables out in ICM and start the HCA
 * @dev: the device
 * @p: the layout
 *
 * Return: 0 or a negative errno.
 */
int mthca_INIT_HCA(struct mthca_dev *dev,
		   const struct mthca_init_hca_param *p)
{
	/*
	 * Bit 0 of this word makes the HCA check the port of UD address
	 * vectors; bit 1 tells it the host is big-endian.
	 */
	u32 flags2 = BIT(0);
	struct mthca_mailbox *mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	void *b;
	int ret;

#ifdef __BIG_ENDIAN
	flags2 |= BIT(1);
#endif
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	b = mb->buf;
	mb_set32(b, 0x014, flags2);

	/* Each log2 size shares the last byte of its page-aligned base. */
	mb_set64(b, 0x030, p->qpc_base);
	mb_set8(b, 0x037, p->log_num_qps);
	mb_set64(b, 0x040, p->eec_base);
	mb_set8(b, 0x047, p->log_num_eecs);
	mb_set64(b, 0x048, p->srqc_base);
	mb_set8(b, 0x04f, p->log_num_srqs);
	mb_set64(b, 0x050, p->cqc_base);
	mb_set8(b, 0x057, p->log_num_cqs);
	mb_set64(b, 0x060, p->eqpc_base);
	mb_set64(b, 0x070, p->eeec_base);
	mb_set64(b, 0x080, p->eqc_base);
	mb_set8(b, 0x087, p->log_num_eqs);
	mb_set64(b, 0x090, p->rdb_base);

	mb_set64(b, 0x0c0, p->mc_base);
	mb_set16(b, 0x0d2, p->log_mc_entry_sz);
	mb_set16(b, 0x0d6, p->mc_hash_sz);
	mb_set8(b, 0x0db, p->log_mc_table_sz);

	mb_set64(b, 0x0f0, p->mpt_base);
	mb_set8(b, 0x0fb, p->log_mpt_sz);
	mb_set64(b, 0x100, p->mtt_base);

	mb_set8(b, 0x129, p->log_uarc_sz);
	mb_set8(b, 0x12a, p->log_uar_sz);
	mb_set8(b, 0x12b, PAGE_SHIFT - 12);
	mb_set64(b, 0x130, p->uar_scratch_base);
	mb_set64(b, 0x138, p->uarc_base);

	ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, 0, 0, MTHCA_CMD_INIT_HCA,
			     TMO);
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_CLOSE_HCA() - stop the HCA (back to the firmware-running state)
 * @dev: the device
 * @panic: close after a catastrophic error
 *
 * Return: 0 or a negative errno.
 */
int mthca_CLOSE_HCA(struct mthca_dev *dev, bool panic)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, panic, MTHCA_CMD_CLOSE_HCA,
			      TMO);
}

/**
 * mthca_INIT_IB() - bring a port's IB logic up
 * @dev: the device
 * @p: port capabilities and GUIDs
 * @port: port number (1-based)
 *
 * Return: 0 or a negative errno.
 */
int mthca_INIT_IB(struct mthca_dev *dev,
		  const struct mthca_init_ib_param *p, int port)
{
	struct mthca_mailbox *mb;
	u32 flags;
	int ret;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);

	flags = (p->set_si_guid ? BIT(18) : 0) |
		(p->set_node_guid ? BIT(17) : 0) |
		(p->set_guid0 ? BIT(16) : 0) |
		(p->mtu_cap << 12) | (p->port_width << 8) | (p->vl_cap << 4);
	mb_set32(mb->buf, 0x00, flags);
	mb_set16(mb->buf, 0x06, p->gid_cap);
	mb_set16(mb->buf, 0x0a, p->pkey_cap);
	mb_set64(mb->buf, 0x10, p->guid0);
	mb_set64(mb->buf, 0x18, p->node_guid);
	mb_set64(mb->buf, 0x20, p->si_guid);

	ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, port, 0,
			     MTHCA_CMD_INIT_IB, TMO);
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_CLOSE_IB() - take a port's IB logic down
 * @dev: the device
 * @port: port number
 *
 * Return: 0 or a negative errno.
 */
int mthca_CLOSE_IB(struct mthca_dev *dev, int port)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, port, 0, MTHCA_CMD_CLOSE_IB,
			      TMO);
}

/**
 * mthca_SET_IB() - set a port's capability mask
 * @dev: the device
 * @port: port number
 * @cap_mask: PortInfo:CapabilityMask
 * @reset_qkey_viol: clear the Q_Key violation counter
 *
 * Return: 0 or a negative errno.
 */
int mthca_SET_IB(struct mthca_dev *dev, int port, u32 cap_mask,
		 bool reset_qkey_viol)
{
	struct mthca_mailbox *mb;
	int ret;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	mb_set32(mb->buf, 0x00, reset_qkey_viol ? BIT(0) : 0);
	mb_set32(mb->buf, 0x04, cap_mask);
	ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, port, 0, MTHCA_CMD_SET_IB,
			     TMO);
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_SET_ICM_SIZE() - tell the firmware how much ICM we will map
 * @dev: the device
 * @icm_size: bytes of ICM
 * @aux_pages: system pages of auxiliary ICM the firmware needs
 *
 * Return: 0 or a negative errno.
 */
int mthca_SET_ICM_SIZE(struct mthca_dev *dev, u64 icm_size, u64 *aux_pages)
{
	u64 n = 0;
	int ret;

	ret = mthca_cmd_exec(dev, icm_size, 0, &n, 0, 0,
			     MTHCA_CMD_SET_ICM_SIZE, TMO);
	if (ret)
		return ret;
	/* 4 KiB pages to system pages, rounding up. */
	*aux_pages = ALIGN(n, PAGE_SIZE / MTHCA_ICM_PAGE_SIZE) >>
		     (PAGE_SHIFT - MTHCA_ICM_PAGE_SHIFT);
	return 0;
}

/**
 * mthca_MAP_ICM() - back ICM at @virt with the pages of @icm
 * @dev: the device
 * @icm: the pages
 * @virt: ICM address of the first
 *
 * Return: 0 or a negative errno.
 */
int mthca_MAP_ICM(struct mthca_dev *dev, struct mthca_icm *icm, u64 virt)
{
	return icm_map_cmd(dev, MTHCA_CMD_MAP_ICM, icm, virt);
}

/**
 * mthca_MAP_ICM_page() - back one 4 KiB ICM page
 * @dev: the device
 * @dma_addr: bus address of the page
 * @virt: ICM address
 *
 * Return: 0 or a negative errno.
 */
int mthca_MAP_ICM_page(struct mthca_dev *dev, u64 dma_addr, u64 virt)
{
	struct mthca_mailbox *mb;
	int ret;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	mb_set64(mb->buf, 0, virt);
	mb_set64(mb->buf, 8, dma_addr);
	ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, 1, 0, MTHCA_CMD_MAP_ICM,
			     TMO);
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_UNMAP_ICM() - drop the backing of ICM pages
 * @dev: the device
 * @virt: ICM address of the first page
 * @page_count: 4 KiB pages
 *
 * Return: 0 or a negative errno.
 */
int mthca_UNMAP_ICM(struct mthca_dev *dev, u64 virt, u32 page_count)
{
	return mthca_cmd_exec(dev, virt, 0, NULL, page_count, 0,
			      MTHCA_CMD_UNMAP_ICM, TMO);
}

/**
 * mthca_MAP_ICM_AUX() - give the firmware its auxiliary ICM
 * @dev: the device
 * @icm: the pages
 *
 * Return: 0 or a negative errno.
 */
int mthca_MAP_ICM_AUX(struct mthca_dev *dev, struct mthca_icm *icm)
{
	return icm_map_cmd(dev, MTHCA_CMD_MAP_ICM_AUX, icm, 0);
}

/**
 * mthca_UNMAP_ICM_AUX() - take the auxiliary ICM back
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_UNMAP_ICM_AUX(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, 0, MTHCA_CMD_UNMAP_ICM_AUX,
			      TMO);
}

/**
 * mthca_NOP() - a command that does nothing but raise an event on each EQ
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_NOP(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0x1f, 0, MTHCA_CMD_NOP, 1000);
}

/**
 * mthca_SW2HW_MPT() - hand an MPT entry to the HCA
 * @dev: the device
 * @mb: the 64-byte MPT entry
 * @index: MPT index
 *
 * Return: 0 or a negative errno.
 */
int mthca_SW2HW_MPT(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 index)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, index, 0,
			      MTHCA_CMD_SW2HW_MPT, TMO);
}

/**
 * mthca_HW2SW_MPT() - take an MPT entry back (its contents are not read)
 * @dev: the device
 * @index: MPT index
 *
 * Return: 0 or a negative errno.
 */
int mthca_HW2SW_MPT(struct mthca_dev *dev, u32 index)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, index, 1, MTHCA_CMD_HW2SW_MPT,
			      TMO);
}

/**
 * mthca_WRITE_MTT() - write MTT entries
 * @dev: the device
 * @mb: first MTT index (64 bits), a reserved qword, then the entries
 * @nentries: entries in @mb
 *
 * Return: 0 or a negative errno.
 */
int mthca_WRITE_MTT(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    int nentries)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, nentries, 0,
			      MTHCA_CMD_WRITE_MTT, TMO);
}

/**
 * mthca_SYNC_TPT() - make the HCA drop cached translations
 * @dev: the device
 *
 * Return: 0 or a negative errno.
 */
int mthca_SYNC_TPT(struct mthca_dev *dev)
{
	return mthca_cmd_exec(dev, 0, 0, NULL, 0, 0, MTHCA_CMD_SYNC_TPT, TMO);
}

/**
 * mthca_MAP_EQ() - route event types to an EQ
 * @dev: the device
 * @event_mask: one bit per event type
 * @unmap: remove the routing instead
 * @eqn: EQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_MAP_EQ(struct mthca_dev *dev, u64 event_mask, bool unmap, u32 eqn)
{
	return mthca_cmd_exec(dev, event_mask, 0, NULL,
			      (unmap ? BIT(31) : 0) | eqn, 0,
			      MTHCA_CMD_MAP_EQ, TMO);
}

/**
 * mthca_SW2HW_EQ() - hand an EQ context to the HCA
 * @dev: the device
 * @mb: the EQ context
 * @eqn: EQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_SW2HW_EQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 eqn)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, eqn, 0,
			      MTHCA_CMD_SW2HW_EQ, TMO);
}

/**
 * mthca_HW2SW_EQ() - take an EQ back
 * @dev: the device
 * @mb: receives the EQ context
 * @eqn: EQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_HW2SW_EQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 eqn)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL, eqn, 0,
			      MTHCA_CMD_HW2SW_EQ, TMO);
}

/**
 * mthca_SW2HW_CQ() - hand a CQ context to the HCA
 * @dev: the device
 * @mb: the CQ context
 * @cqn: CQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_SW2HW_CQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 cqn)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, cqn, 0,
			      MTHCA_CMD_SW2HW_CQ, TMO);
}

/**
 * mthca_HW2SW_CQ() - take a CQ back
 * @dev: the device
 * @mb: receives the CQ context
 * @cqn: CQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_HW2SW_CQ(struct mthca_dev *dev, struct mthca_mailbox *mb, u32 cqn)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL, cqn, 0,
			      MTHCA_CMD_HW2SW_CQ, TMO);
}

/**
 * mthca_RESIZE_CQ() - move a CQ to a new buffer
 * @dev: the device
 * @cqn: CQ number
 * @lkey: key of the new buffer's MR (starting at IOVA 0), at mailbox byte 0x1c
 * @log_size: log2 of the new number of entries, at mailbox byte 0x0c
 *
 * Return: 0 or a negative errno.
 */
int mthca_RESIZE_CQ(struct mthca_dev *dev, u32 cqn, u32 lkey, u8 log_size)
{
	struct mthca_mailbox *mb;
	int ret;

	mb = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(mb))
		return PTR_ERR(mb);
	mb_set8(mb->buf, 0x0c, log_size);
	mb_set32(mb->buf, 0x1c, lkey);
	ret = mthca_cmd_exec(dev, mb->dma, 0, NULL, cqn, 1,
			     MTHCA_CMD_RESIZE_CQ, TMO);
	mthca_mailbox_free(dev, mb);
	return ret;
}

/**
 * mthca_SW2HW_SRQ() - hand an SRQ context to the HCA
 * @dev: the device
 * @mb: the SRQ context
 * @srqn: SRQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_SW2HW_SRQ(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 srqn)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, srqn, 0,
			      MTHCA_CMD_SW2HW_SRQ, TMO);
}

/**
 * mthca_HW2SW_SRQ() - take an SRQ back
 * @dev: the device
 * @mb: receives the SRQ context
 * @srqn: SRQ number
 *
 * Return: 0 or a negative errno.
 */
int mthca_HW2SW_SRQ(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u32 srqn)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL, srqn, 0,
			      MTHCA_CMD_HW2SW_SRQ, TMO);
}

/**
 * mthca_QUERY_SRQ() - read an SRQ context
 * @dev: the device
 * @srqn: SRQ number
 * @mb: receives the SRQ context
 *
 * Return: 0 or a negative errno.
 */
int mthca_QUERY_SRQ(struct mthca_dev *dev, u32 srqn, struct mthca_mailbox *mb)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL, srqn, 0,
			      MTHCA_CMD_QUERY_SRQ, TMO);
}

/**
 * mthca_ARM_SRQ() - set an SRQ's limit event
 * @dev: the device
 * @srqn: SRQ number
 * @limit: the limit
 *
 * Return: 0 or a negative errno.
 */
int mthca_ARM_SRQ(struct mthca_dev *dev, u32 srqn, u32 limit)
{
	return mthca_cmd_exec(dev, limit, 0, NULL, srqn, 0, MTHCA_CMD_ARM_SRQ,
			      TMO);
}

/**
 * mthca_MODIFY_QP() - run a QP state transition
 * @dev: the device
 * @op: the transition opcode (MTHCA_CMD_*_QP)
 * @qpn: QP number
 * @is_ee: an EE context rather than a QP
 * @mb: opt-param mask and QP context; for MTHCA_CMD_2RST_QP, NULL or a
 *	mailbox to receive the final context
 * @optmask: opt-param mask (ignored for 2RST)
 *
 * Return: 0 or a negative errno.
 */
int mthca_MODIFY_QP(struct mthca_dev *dev, u16 op, u32 qpn, bool is_ee,
		    struct mthca_mailbox *mb, u32 optmask)
{
	u32 num = (is_ee ? MTHCA_CMD_QP_IS_EE : 0) | qpn;

	if (op == MTHCA_CMD_2RST_QP)
		/* op_mod 3: no output; 2: write the context to the outbox. */
		return mthca_cmd_exec(dev, 0, mb ? mb->dma : 0, NULL, num,
				      mb ? 2 : 3, op, TMO);
	if (!mb)
		return -EINVAL;
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, optmask | num, 0, op,
			      TMO);
}

/**
 * mthca_QUERY_QP() - read a QP context
 * @dev: the device
 * @qpn: QP number
 * @is_ee: an EE context rather than a QP
 * @mb: receives the opt-param word and the QP context
 *
 * Return: 0 or a negative errno.
 */
int mthca_QUERY_QP(struct mthca_dev *dev, u32 qpn, bool is_ee,
		   struct mthca_mailbox *mb)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL,
			      (is_ee ? MTHCA_CMD_QP_IS_EE : 0) | qpn, 0,
			      MTHCA_CMD_QUERY_QP, TMO);
}

/**
 * mthca_CONF_SPECIAL_QP() - tell the HCA which QPs stand for QP0/QP1
 * @dev: the device
 * @type: IB_QPT_SMI or IB_QPT_GSI
 * @qpn: the QP of port 1; port 2's is the next one
 *
 * Return: 0 or a negative errno.
 */
int mthca_CONF_SPECIAL_QP(struct mthca_dev *dev, enum ib_qp_type type,
			  u32 qpn)
{
	u8 which;

	if (type == IB_QPT_SMI)
		which = 0;
	else if (type == IB_QPT_GSI)
		which = 1;
	else
		return -EINVAL;
	return mthca_cmd_exec(dev, 0, 0, NULL, qpn, which,
			      MTHCA_CMD_CONF_SPECIAL_QP, TMO);
}

/* MAD_IFC inbox: the MAD, then (with op_mod bit 2) what the WC says. */
#define MAD_IFC_WC		0x100
#define MAD_IFC_GRH		0x140

/**
 * mthca_MAD_IFC() - let the firmware's SMA/PMA process a MAD
 * @dev: the device
 * @ignore_mkey: skip the M_Key check
 * @ignore_bkey: skip the B_Key check
 * @port: port the MAD arrived on
 * @in_wc: the receive completion of the MAD, or NULL
 * @in_grh: its GRH, or NULL
 * @in_mad: 256 bytes
 * @out_mad: 256 bytes of response
 *
 * Sleeps.  Return: 0, -EBADMSG if the firmware has nothing to do with
 * the MAD, or another negative errno.
 */
int mthca_MAD_IFC(struct mthca_dev *dev, bool ignore_mkey, bool ignore_bkey,
		  int port, const struct ib_wc *in_wc,
		  const struct ib_grh *in_grh, const void *in_mad,
		  void *out_mad)
{
	struct mthca_mailbox *in, *out;
	u32 in_mod = port;
	u8 op_mod = 0;
	int ret;

	in = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(in))
		return PTR_ERR(in);
	out = mthca_mailbox_alloc(dev, GFP_KERNEL);
	if (IS_ERR(out)) {
		mthca_mailbox_free(dev, in);
		return PTR_ERR(out);
	}
	memcpy(in->buf, in_mad, 256);

	/* Without a WC there is nowhere to send a key-violation trap. */
	if (ignore_mkey || !in_wc)
		op_mod |= 1;
	if (ignore_bkey || !in_wc)
		op_mod |= 2;

	if (in_wc) {
		u16 slid = in_wc->slid;

		mb_set32(in->buf, MAD_IFC_WC + 0x00, in_wc->qp_num);
		mb_set32(in->buf, MAD_IFC_WC + 0x08, in_wc->src_qp);
		mb_set8(in->buf, MAD_IFC_WC + 0x0c, in_wc->sl << 4);
		mb_set8(in->buf, MAD_IFC_WC + 0x0d,
			in_wc->dlid_path_bits |
			((in_wc->wc_flags & IB_WC_GRH) ? 0x80 : 0));
		mb_set16(in->buf, MAD_IFC_WC + 0x0e, slid);
		mb_set16(in->buf, MAD_IFC_WC + 0x12, in_wc->pkey_index);
		if (in_grh)
			memcpy((u8 *)in->buf + MAD_IFC_GRH, in_grh, 40);
		op_mod |= 4;
		in_mod |= (u32)slid << 16;
	}

	ret = mthca_cmd_exec(dev, in->dma, out->dma, NULL, in_mod, op_mod,
			     MTHCA_CMD_MAD_IFC, TMO);
	if (!ret)
		memcpy(out_mad, out->buf, 256);

	mthca_mailbox_free(dev, in);
	mthca_mailbox_free(dev, out);
	return ret;
}

/**
 * mthca_READ_MGM() - read a multicast group entry
 * @dev: the device
 * @index: MGM index
 * @mb: receives the entry
 *
 * Return: 0 or a negative errno.
 */
int mthca_READ_MGM(struct mthca_dev *dev, u32 index, struct mthca_mailbox *mb)
{
	return mthca_cmd_exec(dev, 0, mb->dma, NULL, index, 0,
			      MTHCA_CMD_READ_MGM, TMO);
}

/**
 * mthca_WRITE_MGM() - write a multicast group entry
 * @dev: the device
 * @index: MGM index
 * @mb: the entry
 *
 * Return: 0 or a negative errno.
 */
int mthca_WRITE_MGM(struct mthca_dev *dev, u32 index,
		    struct mthca_mailbox *mb)
{
	return mthca_cmd_exec(dev, mb->dma, 0, NULL, index, 0,
			      MTHCA_CMD_WRITE_MGM, TMO);
}

/**
 * mthca_MGID_HASH() - hash an MGID to its MGM bucket
 * @dev: the device
 * @mb: the 16-byte MGID
 * @hash: the bucket
 *
 * Return: 0 or a negative errno.
 */
int mthca_MGID_HASH(struct mthca_dev *dev, struct mthca_mailbox *mb,
		    u16 *hash)
{
	u64 v = 0;
	int ret;

	ret = mthca_cmd_exec(dev, mb->dma, 0, &v, 0, 0, MTHCA_CMD_MGID_HASH,
			     TMO);
	*hash = v;
	return ret;
}
