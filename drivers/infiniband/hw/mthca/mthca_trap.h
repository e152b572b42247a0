/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Forwarding the traps the firmware's SMA generates to the SM: the SM's
 * address handle per port (reference counted, so a trap keeps the one it
 * was sent with) and the send-only MAD agents.  Only ib_mad and the verbs
 * are used here, so the UML KUnit build runs this file over the fake HCA
 * (mthca_trap_test.c).
 */
#ifndef MTHCA_TRAP_H
#define MTHCA_TRAP_H

#include <linux/spinlock.h>
#include <linux/types.h>

#include <rdma/ib_mad.h>

/* Ports of the MT25208. */
#define MTHCA_TRAP_PORTS	2

struct mthca_sm_ah;

/**
 * struct mthca_trap_fwd - trap forwarding of one device
 * @ibdev: the device
 * @lock: spinlock, interrupts off; guards @sm_ah, @send_agent and
 *	@closing.  Everything done under it never sleeps: AH creation,
 *	building and posting a trap (GFP_ATOMIC), dropping an SM AH
 *	reference.  Teardown sets @closing under it before it unregisters
 *	the agents, so no forward or SM AH update still uses them and none
 *	creates an AH afterwards.
 * @sm_ah: SM address handle of each port (NULL until the SM set one); each
 *	forwarded trap holds a reference until its send completes, so a new
 *	SM LID can replace it meanwhile
 * @send_agent: MAD agents on QP0 ([p][0]) and QP1 ([p][1]) of each port
 * @closing: the agents are being (or have been) unregistered
 */
struct mthca_trap_fwd {
	struct ib_device	*ibdev;
	spinlock_t		lock;	/* see the kernel-doc above */
	struct mthca_sm_ah	*sm_ah[MTHCA_TRAP_PORTS];
	struct ib_mad_agent	*send_agent[MTHCA_TRAP_PORTS][2];
	bool			closing;
};

void mthca_trap_fwd_init(struct mthca_trap_fwd *f, struct ib_device *ibdev);
int mthca_trap_agents_create(struct mthca_trap_fwd *f, int num_ports);
void mthca_trap_agents_destroy(struct mthca_trap_fwd *f);
void mthca_trap_sm_update(struct mthca_trap_fwd *f, u8 port, u16 lid, u8 sl);
int mthca_trap_forward(struct mthca_trap_fwd *f, u8 port,
		       const struct ib_mad *mad);

#endif /* MTHCA_TRAP_H */
