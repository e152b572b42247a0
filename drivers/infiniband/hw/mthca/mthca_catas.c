// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Catastrophic errors.  The firmware reports an internal error only by
 * writing a non-zero value into an error buffer in BAR0 (QUERY_FW gives
 * its place and size); nothing interrupts.  A timer reads the buffer
 * every few seconds.  On an error the device's consumers get
 * IB_EVENT_DEVICE_FATAL, the buffer is logged, and (unless the
 * catas_reset_disable parameter says not to) the device is removed and
 * probed again from a workqueue.
 */

#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "mthca_dev.h"

#define CATAS_POLL_MS	5000

static int catas_reset_disable;
module_param(catas_reset_disable, int, 0644);
MODULE_PARM_DESC(catas_reset_disable,
		 "do not reset the device after a catastrophic error");

/*
 * The error type is the top byte of the buffer's first dword; types the
 * firmware documents get a name, the rest are "unknown".
 */
static const char * const catas_type_names[] = {
	[0] = "internal error",
	[3] = "uplink bus error",
	[4] = "DDR data error",
	[5] = "internal parity error",
};

static const char *catas_type_name(u32 word0)
{
	u32 type = word0 >> 24;

	if (type < ARRAY_SIZE(catas_type_names) && catas_type_names[type])
		return catas_type_names[type];
	return "unknown error";
}

/* Devices waiting for a reset; the lock is taken from the timer. */
static LIST_HEAD(catas_pending);
static DEFINE_SPINLOCK(catas_lock);
static struct workqueue_struct *catas_wq;

static void catas_reset_all(struct work_struct *work)
{
	struct mthca_dev *dev;
	struct pci_dev *pdev;

	/* Removal takes the same mutex and drops the device off the list. */
	mutex_lock(&mthca_device_mutex);
	for (;;) {
		spin_lock_irq(&catas_lock);
		dev = list_first_entry_or_null(&catas_pending,
					       struct mthca_dev, catas_node);
		if (dev)
			list_del_init(&dev->catas_node);
		spin_unlock_irq(&catas_lock);
		if (!dev)
			break;
		pdev = dev->pdev;
		dev_info(&pdev->dev, "resetting after a catastrophic error\n");
		mthca_restart(pdev);
	}
	mutex_unlock(&mthca_device_mutex);
}

static DECLARE_WORK(catas_reset_work, catas_reset_all);

static void catas_report(struct mthca_dev *dev)
{
	struct ib_event ev = {
		.device = &dev->ib_dev,
		.event = IB_EVENT_DEVICE_FATAL,
	};
	unsigned long flags;
	u32 i;

	mthca_err(dev, "catastrophic error detected: %s; commands fail from now on\n",
		  catas_type_name(swab32(readl(dev->catas_buf))));
	/*
	 * The firmware is gone: commands of the teardown fail at once, posts
	 * fail, and the work the HCA still had completes as flushed.
	 */
	WRITE_ONCE(dev->cmd.dead, true);
	mthca_dp_catas(dev);
	for (i = 0; i < dev->fw.catas_size; i++)
		mthca_err(dev, "  buffer[%02x]: %08x\n", i,
			  swab32(readl(dev->catas_buf + i)));

	if (dev->registered)
		ib_dispatch_event(&ev);

	if (catas_reset_disable)
		return;
	spin_lock_irqsave(&catas_lock, flags);
	if (list_empty(&dev->catas_node))
		list_add_tail(&dev->catas_node, &catas_pending);
	spin_unlock_irqrestore(&catas_lock, flags);
	queue_work(catas_wq, &catas_reset_work);
}

static void catas_poll(struct timer_list *t)
{
	struct mthca_dev *dev = from_timer(dev, t, catas_timer);
	u32 i;

	for (i = 0; i < dev->fw.catas_size; i++) {
		if (readl(dev->catas_buf + i)) {
			/* No more polling: the reset starts a new timer. */
			catas_report(dev);
			return;
		}
	}
	mod_timer(&dev->catas_timer,
		  round_jiffies(jiffies + msecs_to_jiffies(CATAS_POLL_MS)));
}

/**
 * mthca_catas_start() - map the error buffer and start polling it
 * @dev: the device, with QUERY_FW done
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_catas_start(struct mthca_dev *dev)
{
	u64 bar_len = pci_resource_len(dev->pdev, 0);
	u64 off = dev->fw.catas_base & (bar_len - 1);

	INIT_LIST_HEAD(&dev->catas_node);
	if (!dev->fw.catas_size ||
	    off + dev->fw.catas_size * 4ULL > bar_len) {
		mthca_warn(dev, "no usable catastrophic error buffer\n");
		dev->catas_buf = NULL;
		return 0;
	}
	dev->catas_buf = ioremap(pci_resource_start(dev->pdev, 0) + off,
				 dev->fw.catas_size * 4);
	if (!dev->catas_buf)
		return -ENOMEM;

	timer_setup(&dev->catas_timer, catas_poll, 0);
	mod_timer(&dev->catas_timer,
		  round_jiffies(jiffies + msecs_to_jiffies(CATAS_POLL_MS)));
	return 0;
}

/**
 * mthca_catas_stop() - stop polling and drop a pending reset
 * @dev: the device
 *
 * Called with mthca_device_mutex held (removal and restart).
 */
void mthca_catas_stop(struct mthca_dev *dev)
{
	if (!dev->catas_buf)
		return;
	del_timer_sync(&dev->catas_timer);
	iounmap(dev->catas_buf);
	dev->catas_buf = NULL;

	spin_lock_irq(&catas_lock);
	list_del_init(&dev->catas_node);
	spin_unlock_irq(&catas_lock);
}

/**
 * mthca_catas_module_init() - the reset workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int mthca_catas_module_init(void)
{
	catas_wq = alloc_ordered_workqueue("mthca_catas", WQ_MEM_RECLAIM);
	return catas_wq ? 0 : -ENOMEM;
}

/**
 * mthca_catas_module_exit() - after every device is gone
 */
void mthca_catas_module_exit(void)
{
	destroy_workqueue(catas_wq);
}
