/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ib_umad internals shared by user_mad.c and its KUnit suite: the limits
 * of a send and the checks of write() that need no file, agent or device.
 */
#ifndef IB_USER_MAD_PRIV_H
#define IB_USER_MAD_PRIV_H

#include <linux/types.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_user_mad.h>

enum {
	/* agents per open file; IDs 0..31 */
	UMAD_MAX_AGENTS		= 32,
	/*
	 * Data bytes of one RMPP message sent with kernel RMPP (EMSGSIZE
	 * above): the MAD layer's own cap, IB_MAD_RMPP_MAX_DATA (4 MiB is
	 * about 20000 SA segments), far more than a GetTable answer of a
	 * real subnet needs; it bounds what one write() can make the kernel
	 * hold (the buffers are charged to the writer).
	 */
	UMAD_MAX_RMPP_DATA	= IB_MAD_RMPP_MAX_DATA,
	/* The MAD bytes of a write() beyond which nothing can be valid. */
	UMAD_MAX_MAD_BYTES	= IB_MGMT_MAD_SIZE + UMAD_MAX_RMPP_DATA,
	/*
	 * Resends of one request (EINVAL above); tools use a handful,
	 * OpenSM 3 by default. Keeps a send from living for ever.
	 */
	UMAD_MAX_RETRIES	= 100,
	/*
	 * The longest wait for one answer, in ms (EINVAL above): the longest
	 * response time the IBA can express (RespTimeValue 31: 4.096 us *
	 * 2^31, about 2.4 hours). With the retries it bounds a send's life
	 * to about ten days instead of 101 * 49.7.
	 */
	UMAD_MAX_TIMEOUT_MS	= 8796093,
};

/**
 * struct umad_send_layout - how the MAD of a write() is sent
 * @hdr_len: the class header, repeated in every RMPP segment
 * @data_len: the data after it (the whole message's, with RMPP)
 * @kernel_rmpp: an RMPP class, and the agent runs RMPP in the kernel
 * @rmpp_active: and the message has the Active flag: the MAD layer cuts
 *	it into segments
 * @user_rmpp_segment: an RMPP class with the Active flag, but the agent
 *	leaves RMPP to the user: this is one segment of a message the user
 *	segments, and all its segments share one TID
 */
struct umad_send_layout {
	int	hdr_len;
	size_t	data_len;
	bool	kernel_rmpp;
	bool	rmpp_active;
	bool	user_rmpp_segment;
};

ssize_t umad_mad_bytes(size_t count, size_t hdr_bytes);
int umad_check_send_hdr(const struct ib_user_mad_hdr *hdr);
int umad_plan_send(const struct ib_rmpp_mad *head, size_t mad_bytes,
		   u8 agent_rmpp_version, struct umad_send_layout *layout);
bool umad_send_checks_tid(const struct umad_send_layout *layout);

#endif /* IB_USER_MAD_PRIV_H */
