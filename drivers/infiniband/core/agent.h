/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The SMA/PMA agent of ib_mad: sends the replies of the driver's
 * process_mad (and the MAD layer's own "unsupported" replies).
 */
#ifndef IB_MAD_AGENT_H
#define IB_MAD_AGENT_H

#include <rdma/ib_mad.h>

struct ib_mad_port;

int ib_agent_port_open(struct ib_mad_port *port);
void ib_agent_port_close(struct ib_mad_port *port);
void ib_agent_reply(struct ib_mad_port *port, int qp_index,
		    const struct ib_wc *wc, const struct ib_grh *grh,
		    const struct ib_mad *reply);

#endif /* IB_MAD_AGENT_H */
