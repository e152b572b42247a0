// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device reset.  Writing big-endian 1 to the reset register in BAR0
 * returns the HCA to its power-on state, config space included, so the
 * config space is saved first and written back once the device answers
 * config reads again.
 */

#include <linux/delay.h>
#include <linux/pci.h>

#include "mthca_dev.h"

#define RESET_REG		0xf0010
#define RESET_SETTLE_MS		1000
#define RESET_POLL_MS		100
#define RESET_POLL_TRIES	100

/**
 * mthca_reset() - reset the HCA and restore its PCI configuration
 * @dev: the device, PCI-enabled, before any firmware command
 *
 * Sleeps for about a second.
 *
 * Return: 0, -ENOMEM, or -ENODEV if the device never came back.
 */
int mthca_reset(struct mthca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	void __iomem *reg;
	u32 id;
	int i, ret;

	ret = pci_save_state(pdev);
	if (ret)
		return ret;

	reg = ioremap(pci_resource_start(pdev, 0) + RESET_REG, 4);
	if (!reg)
		return -ENOMEM;
	__raw_writel((__force u32)cpu_to_be32(1), reg);
	iounmap(reg);

	/* The HCA ignores config cycles while it comes out of reset. */
	msleep(RESET_SETTLE_MS);

	for (i = 0; i < RESET_POLL_TRIES; i++) {
		if (!pci_read_config_dword(pdev, PCI_VENDOR_ID, &id) &&
		    id != 0xffffffff)
			break;
		msleep(RESET_POLL_MS);
	}
	if (i == RESET_POLL_TRIES) {
		mthca_err(dev, "no response after reset\n");
		return -ENODEV;
	}

	pci_restore_state(pdev);
	return 0;
}
