/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * RMPP (IBA 13.6): the window arithmetic of sender and receiver, kept pure
 * for the KUnit suite, and the hooks the MAD layer calls.
 */
#ifndef IB_MAD_RMPP_H
#define IB_MAD_RMPP_H

#include <linux/types.h>

/* Segments a receiver lets the sender run ahead between two ACKs. */
#define IB_RMPP_RX_WINDOW	32

/**
 * struct ib_rmpp_txwin - sender side of one RMPP transfer
 * @seg_count: segments in the message
 * @last_sent: highest segment sent since the last rewind
 * @last_ack: highest segment the receiver acknowledged
 * @window_last: highest segment the receiver lets us send (NewWindowLast)
 */
struct ib_rmpp_txwin {
	u32	seg_count;
	u32	last_sent;
	u32	last_ack;
	u32	window_last;
};

/* What an ACK means to the sender. */
enum ib_rmpp_ack_verdict {
	IB_RMPP_ACK_STALE,	/* older than one already seen: ignore */
	IB_RMPP_ACK_MORE,	/* progress; segments remain */
	IB_RMPP_ACK_ALL,	/* every segment acknowledged */
	IB_RMPP_ACK_BAD_SEG,	/* acknowledges a segment never sent (S2B) */
	IB_RMPP_ACK_BAD_WIN,	/* window ends before the ACKed segment (W2S) */
};

/**
 * struct ib_rmpp_rxwin - receiver side of one RMPP transfer
 * @last: highest segment received in order
 * @window_last: NewWindowLast, as last sent in an ACK
 * @done: the last segment arrived
 */
struct ib_rmpp_rxwin {
	u32	last;
	u32	window_last;
	bool	done;
};

/* What to do with a received DATA segment. */
enum ib_rmpp_rx_action {
	IB_RMPP_RX_DROP,	/* out of order or past the window */
	IB_RMPP_RX_TAKE,	/* keep it */
	IB_RMPP_RX_TAKE_ACK,	/* keep it and ACK (window boundary) */
	IB_RMPP_RX_LAST,	/* keep it, ACK, the message is complete */
	IB_RMPP_RX_DUP_ACK,	/* seen before: ACK again what we have */
};

int ib_rmpp_layout(int hdr_len, int data_len, int *seg_size, int *seg_count,
		   int *pad);
u32 ib_rmpp_paylen(u32 seg_num, u32 seg_count, int pad);
int ib_rmpp_recv_len(int hdr_len, u32 seg_count, u32 last_paylen);
bool ib_rmpp_rx_fits(int hdr_len, u32 seg_num, u8 flags, u32 paylen);

void ib_rmpp_tx_start(struct ib_rmpp_txwin *w, u32 seg_count);
u32 ib_rmpp_tx_next(const struct ib_rmpp_txwin *w);
enum ib_rmpp_ack_verdict ib_rmpp_tx_ack(struct ib_rmpp_txwin *w, u32 seg_num,
					u32 newwin);
void ib_rmpp_tx_rewind(struct ib_rmpp_txwin *w);

void ib_rmpp_rx_start(struct ib_rmpp_rxwin *w);
enum ib_rmpp_rx_action ib_rmpp_rx_seg(struct ib_rmpp_rxwin *w, u32 seg_num,
				      bool last, u32 window);

struct ib_mad_agent_priv;
struct ib_mad_rbuf;
struct ib_mad_port;
struct ib_mad;

bool ib_rmpp_active(const struct ib_mad *mad);
struct ib_mad_rbuf *ib_rmpp_recv(struct ib_mad_agent_priv *agent,
				 struct ib_mad_rbuf *rb);
void ib_rmpp_rx_flush(struct ib_mad_agent_priv *agent);
void ib_rmpp_rx_expire(struct ib_mad_agent_priv *agent);
void ib_rmpp_fill_seg(void *wire, u32 seg_num, u32 seg_count, int pad);

#endif /* IB_MAD_RMPP_H */
