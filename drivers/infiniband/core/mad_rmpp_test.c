// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit suite of the RMPP arithmetic (IBA 13.6): cutting a message into
 * segments, the PayloadLength of each and the length of a reassembly, the
 * sender's window under ACKs (stale, bad, progress, timeouts) and the
 * receiver's (in order, duplicates, gaps, window boundaries, the end).
 */

#include <kunit/test.h>
#include <linux/math64.h>

#include <rdma/ib_mad.h>

#include "mad_rmpp.h"

static void rmpp_layout(struct kunit *test)
{
	int size, count, pad;

	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_SA_HDR, 0, &size, &count,
					     &pad), 0);
	KUNIT_EXPECT_EQ(test, size, 200);
	KUNIT_EXPECT_EQ(test, count, 1);
	KUNIT_EXPECT_EQ(test, pad, 200);

	ib_rmpp_layout(IB_MGMT_SA_HDR, 200, &size, &count, &pad);
	KUNIT_EXPECT_EQ(test, count, 1);
	KUNIT_EXPECT_EQ(test, pad, 0);

	ib_rmpp_layout(IB_MGMT_SA_HDR, 201, &size, &count, &pad);
	KUNIT_EXPECT_EQ(test, count, 2);
	KUNIT_EXPECT_EQ(test, pad, 199);

	ib_rmpp_layout(IB_MGMT_VENDOR_HDR, 216 * 3 + 1, &size, &count, &pad);
	KUNIT_EXPECT_EQ(test, size, 216);
	KUNIT_EXPECT_EQ(test, count, 4);
	KUNIT_EXPECT_EQ(test, pad, 215);

	/* The RMPP header must fit; some data must fit too. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_MAD_HDR, 10, &size,
					     &count, &pad), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_MAD_SIZE, 10, &size,
					     &count, &pad), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_SA_HDR, -1, &size,
					     &count, &pad), -EINVAL);
}

/* Sizes near the cap and near INT_MAX: refused, never wrapped. */
static void rmpp_layout_limits(struct kunit *test)
{
	int size = -1, count = -1, pad = -1;

	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_SA_HDR, INT_MAX, &size,
					     &count, &pad), -EMSGSIZE);
	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_RMPP_HDR, INT_MAX - 1,
					     &size, &count, &pad), -EMSGSIZE);
	KUNIT_EXPECT_EQ(test, ib_rmpp_layout(IB_MGMT_SA_HDR,
					     IB_MAD_RMPP_MAX_DATA + 1, &size,
					     &count, &pad), -EMSGSIZE);
	/* nothing written on failure */
	KUNIT_EXPECT_EQ(test, count, -1);

	KUNIT_ASSERT_EQ(test, ib_rmpp_layout(IB_MGMT_SA_HDR,
					     IB_MAD_RMPP_MAX_DATA, &size,
					     &count, &pad), 0);
	KUNIT_EXPECT_EQ(test, size, 200);
	KUNIT_EXPECT_EQ(test, count, DIV_ROUND_UP(IB_MAD_RMPP_MAX_DATA, 200));
	KUNIT_EXPECT_EQ(test, (long)count * size - pad,
			(long)IB_MAD_RMPP_MAX_DATA);
	KUNIT_EXPECT_GE(test, pad, 0);
	KUNIT_EXPECT_LT(test, pad, size);
}

static void rmpp_paylen(struct kunit *test)
{
	/* SA: 3 segments of 200, 10 unused: 220 per segment on the wire. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_paylen(1, 3, 10), 650U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_paylen(2, 3, 10), 0U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_paylen(3, 3, 10), 210U);
	/* A single segment is first and last: what it carries. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_paylen(1, 1, 150), 70U);
}

/* Cut and reassemble: the receiver's length is the sender's message. */
static void rmpp_len_round_trip(struct kunit *test)
{
	static const int hdrs[] = { IB_MGMT_RMPP_HDR, IB_MGMT_VENDOR_HDR,
				    IB_MGMT_SA_HDR, IB_MGMT_DEVICE_HDR };
	static const int lens[] = { 1, 100, 199, 200, 201, 1000, 4096, 65000 };
	int size, count, pad, i, j;

	for (i = 0; i < ARRAY_SIZE(hdrs); i++)
		for (j = 0; j < ARRAY_SIZE(lens); j++) {
			ib_rmpp_layout(hdrs[i], lens[j], &size, &count, &pad);
			KUNIT_EXPECT_EQ_MSG(test,
					    ib_rmpp_recv_len(hdrs[i], count,
							     ib_rmpp_paylen(count, count, pad)),
					    hdrs[i] + lens[j],
					    "header %d, data %d", hdrs[i], lens[j]);
		}
	/* A nonsense PayloadLength counts as a full last segment. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_recv_len(IB_MGMT_SA_HDR, 2, 5000),
			IB_MGMT_SA_HDR + 400);
}

/* PayloadLength of the first segment of @data bytes under @hdr bytes. */
static u32 rmpp_first_paylen(int hdr, u64 data)
{
	u64 size = IB_MGMT_MAD_SIZE - hdr;
	u64 count = div64_u64(data + size - 1, size);

	return count * IB_MGMT_RMPP_DATA - (count * size - data);
}

/* The receive-size cap: what the first segment announces, what arrives. */
static void rmpp_rx_cap(struct kunit *test)
{
	static const int hdrs[] = { IB_MGMT_RMPP_HDR,
				    IB_MGMT_VENDOR_HDR, IB_MGMT_SA_HDR,
				    IB_MGMT_DEVICE_HDR };
	const u8 first = IB_MGMT_RMPP_FLAG_ACTIVE | IB_MGMT_RMPP_FLAG_FIRST;
	const u8 mid = IB_MGMT_RMPP_FLAG_ACTIVE;
	const u8 last = IB_MGMT_RMPP_FLAG_ACTIVE | IB_MGMT_RMPP_FLAG_LAST;
	u32 segs = DIV_ROUND_UP(IB_MAD_RMPP_MAX_DATA, 200);
	u32 cap_pad = segs * 200 - IB_MAD_RMPP_MAX_DATA;
	int i;

	/* announced: the cap exactly is taken, one byte more is not */
	for (i = 0; i < ARRAY_SIZE(hdrs); i++) {
		u32 at = rmpp_first_paylen(hdrs[i], IB_MAD_RMPP_MAX_DATA);
		u32 past = rmpp_first_paylen(hdrs[i], IB_MAD_RMPP_MAX_DATA + 1);

		KUNIT_EXPECT_TRUE_MSG(test, ib_rmpp_rx_fits(hdrs[i], 1, first, at),
				      "header %d", hdrs[i]);
		KUNIT_EXPECT_FALSE_MSG(test,
				       ib_rmpp_rx_fits(hdrs[i], 1, first, past),
				       "header %d", hdrs[i]);
	}
	/* 0: the sender did not say; the largest u32 does not wrap */
	KUNIT_EXPECT_TRUE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, 1, first, 0));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, 1, first,
						 U32_MAX));
	KUNIT_EXPECT_TRUE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, 1,
						first | last, 100));
	/* only the first segment's PayloadLength is a total */
	KUNIT_EXPECT_TRUE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, 2, mid,
						U32_MAX));

	/* running: SA segments of 200 bytes; 20972 of them pass 4 MiB */
	KUNIT_EXPECT_EQ(test, segs, 20972U);
	KUNIT_EXPECT_TRUE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, segs - 1, mid,
						0));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, segs, mid,
						 0));
	/* ... unless it is the last one and short enough */
	KUNIT_EXPECT_TRUE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, segs, last,
						IB_MGMT_RMPP_DATA - cap_pad));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, segs, last,
						 IB_MGMT_RMPP_DATA - cap_pad + 1));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, segs, last,
						 IB_MGMT_RMPP_DATA));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, U32_MAX, mid,
						 0));
	/* nonsense arguments are refused */
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_SA_HDR, 0, first, 0));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_MAD_SIZE, 1, first,
						 0));
	KUNIT_EXPECT_FALSE(test, ib_rmpp_rx_fits(IB_MGMT_MAD_HDR, 1, first,
						 0));
}

static void rmpp_tx_window(struct kunit *test)
{
	struct ib_rmpp_txwin w;

	ib_rmpp_tx_start(&w, 5);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 1U);
	w.last_sent = 1;
	/* Segment 1 alone until the receiver opens the window. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 0U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 1, 4), IB_RMPP_ACK_MORE);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 2U);
	w.last_sent = 4;
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 0U);
	/* Bad ACKs change nothing. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 6, 6), IB_RMPP_ACK_BAD_SEG);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 4, 3), IB_RMPP_ACK_BAD_WIN);
	KUNIT_EXPECT_EQ(test, w.last_ack, 1U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 3, 4), IB_RMPP_ACK_MORE);
	/* An ACK older than the last one is ignored. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 2, 8), IB_RMPP_ACK_STALE);
	KUNIT_EXPECT_EQ(test, w.window_last, 4U);
	/* A window beyond the message stops at its end. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 4, 40), IB_RMPP_ACK_MORE);
	KUNIT_EXPECT_EQ(test, w.window_last, 5U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 5U);
	w.last_sent = 5;
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 0U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_ack(&w, 5, 5), IB_RMPP_ACK_ALL);
}

static void rmpp_tx_rewind(struct kunit *test)
{
	struct ib_rmpp_txwin w;

	ib_rmpp_tx_start(&w, 10);
	w.last_sent = 1;
	ib_rmpp_tx_ack(&w, 1, 8);
	w.last_sent = 8;
	/* ACK lost for 2..8: after the timeout, 2 goes again. */
	ib_rmpp_tx_rewind(&w);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 2U);
	/* The first segment's ACK lost: segment 1 again. */
	ib_rmpp_tx_start(&w, 3);
	w.last_sent = 1;
	ib_rmpp_tx_rewind(&w);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 1U);
	/* An ACK for less than was sent moves last_sent only forward. */
	ib_rmpp_tx_start(&w, 10);
	w.last_sent = 6;
	ib_rmpp_tx_ack(&w, 3, 9);
	KUNIT_EXPECT_EQ(test, ib_rmpp_tx_next(&w), 7U);
}

static void rmpp_rx_window(struct kunit *test)
{
	struct ib_rmpp_rxwin w;
	u32 s;

	ib_rmpp_rx_start(&w);
	/* Only in order: 2 before 1 is dropped. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 2, false, 8), IB_RMPP_RX_DROP);
	/* Segment 1 is ACKed at once, opening the window. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 1, false, 8),
			IB_RMPP_RX_TAKE_ACK);
	KUNIT_EXPECT_EQ(test, w.window_last, 9U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 2, false, 8), IB_RMPP_RX_TAKE);
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 2, false, 8),
			IB_RMPP_RX_DUP_ACK);
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 4, false, 8), IB_RMPP_RX_DROP);
	for (s = 3; s < 9; s++)
		KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, s, false, 8),
				IB_RMPP_RX_TAKE);
	/* The window's last segment is ACKed, with the next window. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 9, false, 8),
			IB_RMPP_RX_TAKE_ACK);
	KUNIT_EXPECT_EQ(test, w.last, 9U);
	KUNIT_EXPECT_EQ(test, w.window_last, 17U);
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 10, true, 8), IB_RMPP_RX_LAST);
	KUNIT_EXPECT_TRUE(test, w.done);
	/* After the end: the last one again is re-ACKed, beyond it dropped. */
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 10, true, 8),
			IB_RMPP_RX_DUP_ACK);
	KUNIT_EXPECT_EQ(test, ib_rmpp_rx_seg(&w, 11, true, 8), IB_RMPP_RX_DROP);
}

/* Sender and receiver windows driven against each other, lossless. */
static void rmpp_both_ends(struct kunit *test)
{
	struct ib_rmpp_txwin tx;
	struct ib_rmpp_rxwin rx;
	enum ib_rmpp_rx_action act;
	int acks = 0, sent = 0;
	u32 seg;

	ib_rmpp_tx_start(&tx, 20);
	ib_rmpp_rx_start(&rx);
	for (;;) {
		seg = ib_rmpp_tx_next(&tx);
		KUNIT_ASSERT_NE(test, seg, 0U);
		tx.last_sent = seg;
		sent++;
		act = ib_rmpp_rx_seg(&rx, seg, seg == 20, 6);
		KUNIT_ASSERT_NE(test, act, IB_RMPP_RX_DROP);
		if (act == IB_RMPP_RX_TAKE)
			continue;
		acks++;
		if (ib_rmpp_tx_ack(&tx, rx.last, rx.window_last) ==
		    IB_RMPP_ACK_ALL)
			break;
	}
	KUNIT_EXPECT_EQ(test, sent, 20);
	/* Segment 1, then at 7, 13, 19, and the last. */
	KUNIT_EXPECT_EQ(test, acks, 5);
}

static void rmpp_fill(struct kunit *test)
{
	struct ib_rmpp_mad m = {};

	ib_rmpp_fill_seg(&m, 1, 3, 10);
	KUNIT_EXPECT_EQ(test, m.rmpp_hdr.rmpp_version, 1);
	KUNIT_EXPECT_EQ(test, m.rmpp_hdr.rmpp_type, IB_MGMT_RMPP_TYPE_DATA);
	KUNIT_EXPECT_EQ(test, ib_get_rmpp_flags(&m.rmpp_hdr),
			IB_MGMT_RMPP_FLAG_ACTIVE | IB_MGMT_RMPP_FLAG_FIRST);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(m.rmpp_hdr.seg_num), 1U);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(m.rmpp_hdr.paylen_newwin), 650U);
	KUNIT_EXPECT_TRUE(test, ib_rmpp_active((struct ib_mad *)&m));

	/* RRespTime survives; the flags are replaced. */
	ib_set_rmpp_resptime(&m.rmpp_hdr, 0x1f);
	ib_rmpp_fill_seg(&m, 3, 3, 10);
	KUNIT_EXPECT_EQ(test, ib_get_rmpp_resptime(&m.rmpp_hdr), 0x1f);
	KUNIT_EXPECT_EQ(test, ib_get_rmpp_flags(&m.rmpp_hdr),
			IB_MGMT_RMPP_FLAG_ACTIVE | IB_MGMT_RMPP_FLAG_LAST);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(m.rmpp_hdr.seg_num), 3U);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(m.rmpp_hdr.paylen_newwin), 210U);

	ib_rmpp_fill_seg(&m, 2, 3, 10);
	KUNIT_EXPECT_EQ(test, ib_get_rmpp_flags(&m.rmpp_hdr),
			IB_MGMT_RMPP_FLAG_ACTIVE);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(m.rmpp_hdr.paylen_newwin), 0U);
}

static struct kunit_case rmpp_cases[] = {
	KUNIT_CASE(rmpp_layout),
	KUNIT_CASE(rmpp_layout_limits),
	KUNIT_CASE(rmpp_paylen),
	KUNIT_CASE(rmpp_len_round_trip),
	KUNIT_CASE(rmpp_rx_cap),
	KUNIT_CASE(rmpp_tx_window),
	KUNIT_CASE(rmpp_tx_rewind),
	KUNIT_CASE(rmpp_rx_window),
	KUNIT_CASE(rmpp_both_ends),
	KUNIT_CASE(rmpp_fill),
	{}
};

static struct kunit_suite rmpp_suite = {
	.name = "ib_mad_rmpp",
	.test_cases = rmpp_cases,
};

kunit_test_suite(rmpp_suite);
