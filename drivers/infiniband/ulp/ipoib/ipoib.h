/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ib_ipoib: IP over InfiniBand, datagram mode (RFC 4391) and connected
 * mode (RFC 4755), as an ib_client of our core. One net_device per port
 * (named ib%d) carries the port's default P_Key; P_Key children
 * (ib0.8001) have their own. See
 * Documentation/ipoib.md.
 *
 * The roles, one file each:
 *   ipoib_main.c   module, ib_client, net_device, header_ops, events
 *   ipoib_ib.c     PD/MR/CQ/UD QP, send and receive rings, NAPI
 *   ipoib_mcast.c  multicast groups: the broadcast group and the mc list
 *   ipoib_path.c   unicast path records and address handles, by GID
 *   ipoib_cm.c     connected mode: the SRQ, the listener, RC connections
 *   ipoib_fs.c     the sysfs files mode, pkey, umcast, cm_connections,
 *                  create_child, delete_child, parent
 *   ipoib_netlink.c the rtnl link kind "ipoib" (ip link add ... type ipoib)
 *   ipoib_ethtool.c ethtool driver info and statistics
 *   ipoib_addr.c   pure helpers: hw address, MGIDs, CM private data,
 *                  MTUs, state names
 */
#ifndef IPOIB_H
#define IPOIB_H

#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include <rdma/ib_cm.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

#define IPOIB_ALEN		20	/* INFINIBAND_ALEN */
#define IPOIB_ENCAP_LEN		4	/* struct ipoib_encap */
#define IPOIB_HARD_LEN		(IPOIB_ALEN + IPOIB_ENCAP_LEN)
#define IPOIB_GRH_LEN		40
#define IPOIB_FLAGS_RC		0x80	/* hw address byte 0: IPoIB-CM accepted */
#define IPOIB_QKEY_UNSET	0
#define IPOIB_MAX_QUEUED	16	/* skbs waiting on one path or group */
#define IPOIB_SA_TIMEOUT_MS	3000
#define IPOIB_LEAVE_TIMEOUT_MS	1000

/* The 4 bytes in front of every IPoIB payload on the wire. */
struct ipoib_encap {
	__be16	proto;
	__be16	reserved;
};

/*
 * What header_ops->create puts in front of the encap: the destination
 * hardware address, so that xmit knows where a packet goes without a
 * route or neighbour lookup. It never reaches the wire.
 */
struct ipoib_pseudo {
	u8	hwaddr[IPOIB_ALEN];
};

/*
 * Connected mode (RFC 4755). The service ID of an interface is this OR
 * its UD QPN; the REQ and REP carry struct ipoib_cm_data.
 */
#define IPOIB_CM_SERVICE_BASE	0x1000000000000000ULL
#define IPOIB_CM_MAX_RX_SGE	16	/* the page count the MTU is sized by */
#define IPOIB_CM_MTU_SLACK	0x10	/* pages * PAGE_SIZE less this */

/* The private data of an IPoIB-CM REQ or REP (RFC 4755, 4.3). */
struct ipoib_cm_data {
	__be32	qpn;	/* the sender's UD QPN; the top byte is ignored */
	__be32	mtu;	/* the largest packet it receives, encap included */
};

/* --- ipoib_addr.c: pure helpers (KUnit: ipoib_addr_test.c) -------------- */

void ipoib_build_hwaddr(u8 *addr, u32 qpn, const union ib_gid *gid, u8 flags);
void ipoib_build_broadcast(u8 *addr, u16 pkey);
u32 ipoib_hwaddr_qpn(const u8 *addr);
const union ib_gid *ipoib_hwaddr_gid(const u8 *addr);
bool ipoib_hwaddr_is_mcast(const u8 *addr);
bool ipoib_mgid_is_ipoib(const union ib_gid *mgid);
u16 ipoib_full_pkey(u16 pkey);
int ipoib_mtu_from_ib(int ib_mtu);
unsigned int ipoib_ring_size(int requested, unsigned int min, unsigned int max);
__be64 ipoib_cm_service_id(u32 qpn);
void ipoib_cm_data_pack(struct ipoib_cm_data *data, u32 qpn, u32 buf_size);
int ipoib_cm_data_unpack(const void *pdata, size_t len, u32 *qpn, u32 *buf_size);
int ipoib_cm_max_mtu(int max_srq_sge, unsigned long page_size);
int ipoib_mtu_limit(bool connected, int cm_mtu, int ud_mtu);
int ipoib_child_pkey_check(long pkey);
void ipoib_child_name(char *buf, size_t len, const char *parent, u16 pkey);

/* The multicast group states (ipoib_mcast.c), named in mcast_state_names. */
enum ipoib_mcast_state {
	IPOIB_MC_IDLE,		/* not joined, no query */
	IPOIB_MC_JOINING,	/* SubnAdmSet in flight */
	IPOIB_MC_JOINED,	/* member; AH made, QP attached unless send-only */
	IPOIB_MC_FAILED,	/* last join failed; retried after a backoff */
	IPOIB_MC_LEAVING,	/* SubnAdmDelete in flight, off the list */
	IPOIB_MC_NR_STATES
};

/* The path states (ipoib_path.c), named in path_state_names. */
enum ipoib_path_state {
	IPOIB_PATH_NEW,		/* no record yet; the path work asks the SA */
	IPOIB_PATH_QUERYING,	/* PathRecord query in flight */
	IPOIB_PATH_VALID,	/* record and AH: packets go out at once */
	IPOIB_PATH_FAILED,	/* the SA said no; packets dropped until retry */
	IPOIB_PATH_NR_STATES
};

/* The states of a connection (ipoib_cm.c), named in cm_state_names. */
enum ipoib_cm_state {
	IPOIB_CM_NEW,		/* active: waits for the CM task to send the REQ */
	IPOIB_CM_CONNECTING,	/* REQ sent (active) or REP sent (passive) */
	IPOIB_CM_UP,		/* RTU sent or received: traffic flows */
	IPOIB_CM_DEAD,		/* off every live list; the reaper frees it */
	IPOIB_CM_NR_STATES
};

const char *ipoib_mcast_state_name(enum ipoib_mcast_state s);
const char *ipoib_path_state_name(enum ipoib_path_state s);
const char *ipoib_cm_state_name(enum ipoib_cm_state s);

/* --- the device ------------------------------------------------------------ */

/*
 * An address handle shared by a path or group and the sends using it. Each
 * posted send holds a reference; the last put hands it to the reaper
 * (ib_destroy_ah may sleep; the puts come from NAPI).
 */
struct ipoib_ah {
	struct kref		ref;
	struct ib_ah		*ah;
	struct ipoib_dev	*priv;
	struct list_head	dead;	/* on priv->dead_ahs once released */
};

struct ipoib_tx_buf {
	struct sk_buff		*skb;
	u64			mapping;
	struct ipoib_ah		*ah;
};

struct ipoib_rx_buf {
	struct sk_buff		*skb;
	u64			mapping;
};

struct ipoib_mcast {
	struct list_head	list;		/* priv->mcasts, or a local list */
	union ib_gid		mgid;
	struct ib_sa_mcmember_rec rec;		/* the SA's answer once JOINED */
	enum ipoib_mcast_state	state;
	bool			sendonly;
	bool			attached;
	bool			listed;		/* scratch of the mc-list diff */
	bool			leave_sent;	/* scratch of ipoib_mcast_reap() */
	struct ipoib_ah		*ah;
	struct sk_buff_head	queue;		/* sends waiting for the join */
	unsigned long		retry_at;	/* jiffies, when FAILED */
	unsigned int		backoff;	/* seconds, doubled per failure */
	int			query_id;
	struct ib_sa_query	*query;
	struct completion	done;		/* the query's callback ran */
	struct ipoib_dev	*priv;
};

struct ipoib_path;

/*
 * The active side of a connection: an RC QP that only sends, to one peer
 * (GID and UD QPN), owned by the path of that GID.
 */
struct ipoib_cm_tx {
	struct list_head	list;		/* priv->cm_tx or priv->cm_dead_tx */
	struct ipoib_dev	*priv;
	struct ipoib_path	*path;		/* the owner; NULL once DEAD */
	enum ipoib_cm_state	state;
	union ib_gid		dgid;
	u32			peer_qpn;	/* the peer's UD QPN */
	u32			peer_mtu;	/* its REP's buffer size */
	unsigned int		index;		/* in priv->cm_tx_table, wr_id */
	struct ib_sa_path_rec	rec;
	struct ib_cm_id		*id;
	struct ib_qp		*qp;
	u32			qp_num;		/* for the listing; 0 before the QP */
	struct ipoib_tx_buf	*ring;
	unsigned int		head;		/* see ipoib_dev's "Locking" */
	unsigned int		tail;
	struct sk_buff_head	queue;		/* sends waiting for the REP */
};

/*
 * The passive side of a connection: an RC QP that only receives, into
 * the interface's SRQ.
 */
struct ipoib_cm_rx {
	struct list_head	list;		/* priv->cm_rx or priv->cm_dead_rx */
	struct ipoib_dev	*priv;
	enum ipoib_cm_state	state;
	u32			peer_qpn;	/* the peer's UD QPN (its REQ) */
	u32			qp_num;		/* our RC QP's */
	unsigned long		last_rx;	/* jiffies of the last receive */
	struct ib_cm_id		*id;
	struct ib_qp		*qp;
};

struct ipoib_path {
	struct hlist_node	node;		/* priv->paths */
	union ib_gid		dgid;
	enum ipoib_path_state	state;
	struct ib_sa_path_rec	rec;
	struct ipoib_ah		*ah;
	struct ipoib_cm_tx	*cm;		/* connected mode, or NULL */
	unsigned long		cm_retry_at;	/* jiffies: no new one before */
	struct sk_buff_head	queue;		/* sends waiting for the record */
	unsigned long		retry_at;	/* jiffies, when FAILED */
	int			query_id;
	struct ib_sa_query	*query;
	struct completion	done;
	struct ipoib_dev	*priv;
};

enum ipoib_flags {
	IPOIB_FLAG_UP,		/* ndo_open done, ndo_stop not begun */
	IPOIB_FLAG_QP_READY,	/* the QP is in RTS with receives posted */
	IPOIB_FLAG_UMCAST,	/* sysfs umcast: non-IPoIB groups allowed */
	IPOIB_FLAG_CM_ADMIN,	/* sysfs mode: connected */
	IPOIB_FLAG_CM_UP,	/* SRQ, CQ and listener up (ipoib_cm_up) */
	IPOIB_FLAG_NO_PKEY,	/* a child "up" without its P_Key: no QP, no carrier */
};

#define IPOIB_CM_MAX_TX		32	/* active connections per interface */

/*
 * struct ipoib_dev - the private part of one ib%d net_device
 *
 * Locking:
 * - @lock (spin_lock_bh) guards @mcasts, @broadcast, @paths, each path's
 *   and group's state, AH pointer and queue, @qkey, @mcast_mtu and
 *   @pkey_index; xmit, NAPI and the SA callbacks take it. Never held
 *   across a verb that may sleep or an SA call.
 * - @ah_lock (spin_lock_bh) guards @dead_ahs only; it nests inside @lock
 *   (an AH's last put may happen under @lock).
 * - The send ring: @tx_head is advanced by xmit alone (under the netdev
 *   queue's xmit lock), @tx_tail by the completion side alone (NAPI, or
 *   the drain in ipoib_ib_down() with NAPI disabled); each reads the
 *   other's with READ_ONCE and orders with smp_mb around the queue stop.
 * - The receive ring is touched by NAPI alone (and by up/down with NAPI
 *   disabled). The same holds for the SRQ ring and @cm_napi.
 * - Connected mode: @lock also guards @cm_tx, @cm_dead_tx, @cm_rx,
 *   @cm_dead_rx, @cm_tx_table, each connection's state and queue, and a
 *   path's @cm pointer. An active connection's ring head is advanced by
 *   xmit with @lock held and the state UP (so the reaper, which marks it
 *   DEAD under @lock, sees the last head); its tail by @cm_napi, or by the
 *   reaper with @cm_napi disabled. A connection is freed only by the
 *   reaper (@cm_task) or ipoib_cm_down(), after its cm_id is destroyed
 *   (no handler runs any more) and its ring is empty.
 * - RTNL guards @children, @child_list, @parent and @sysfs_child: a
 *   child is added and unregistered under it, and the port's removal
 *   unregisters the children, then the parent, in one RTNL section.
 * - @mcast_task, @path_task, @flush_task, @reap_task and @mtu_task run on
 *   @wq (ordered, so they never run at once); ndo_stop clears
 *   IPOIB_FLAG_UP under @lock before cancelling them, and nothing queues
 *   them (under @lock) once that flag is clear, except the reaper.
 */
struct ipoib_dev {
	struct net_device	*dev;
	struct ib_device	*ca;
	u8			port;
	u16			pkey;		/* as advertised: 0x8000 set */
	u16			pkey_index;
	union ib_gid		gid;
	u16			lid;
	unsigned long		flags;

	struct ib_pd		*pd;
	struct ib_mr		*mr;
	struct ib_cq		*cq;
	struct ib_qp		*qp;
	u32			qkey;
	int			max_ib_mtu;	/* the port's, sizes rx buffers */
	int			mcast_mtu;	/* the broadcast group's */
	unsigned int		rx_buf_size;

	struct napi_struct	napi;
	struct ipoib_rx_buf	*rx_ring;
	unsigned int		rx_size;
	unsigned int		rx_posted;
	struct ipoib_tx_buf	*tx_ring;
	unsigned int		tx_size;
	unsigned int		tx_head;
	unsigned int		tx_tail;

	spinlock_t		lock;		/* see "Locking" above */
	struct list_head	mcasts;
	struct ipoib_mcast	*broadcast;
	DECLARE_HASHTABLE(paths, 6);

	spinlock_t		ah_lock;	/* @dead_ahs only */
	struct list_head	dead_ahs;

	struct workqueue_struct	*wq;
	struct delayed_work	mcast_task;
	struct work_struct	path_task;
	struct work_struct	flush_task;
	struct work_struct	reap_task;
	struct delayed_work	mtu_task;
	unsigned long		pending_events;	/* bits of enum ib_event_type */

	/* connected mode (ipoib_cm.c) */
	bool			cm_supported;	/* the HCA has SRQs: 0x80 offered */
	int			cm_mtu;		/* the netdev MTU in connected mode */
	unsigned int		cm_buf_size;	/* cm_mtu + encap */
	struct ib_cq		*cm_cq;
	struct ib_srq		*cm_srq;
	struct ipoib_rx_buf	*cm_srq_ring;
	unsigned int		cm_srq_size;
	struct ib_cm_id		*cm_listen;
	u8			ca_ack_delay;	/* for our REPs */
	/*
	 * Held by the listener's handler while it accepts a REQ (creates a
	 * QP on @cm_srq); ipoib_cm_down() takes it once after clearing
	 * IPOIB_FLAG_CM_UP, so no accept outlives the SRQ.
	 */
	struct mutex		cm_accept_mutex;
	struct napi_struct	cm_napi;
	struct list_head	cm_tx;
	struct list_head	cm_dead_tx;
	struct list_head	cm_rx;
	struct list_head	cm_dead_rx;
	struct ipoib_cm_tx	*cm_tx_table[IPOIB_CM_MAX_TX];
	struct work_struct	cm_task;	/* connects and reaps */
	struct delayed_work	cm_stale_task;	/* idle passive connections */

	struct ib_event_handler	event_handler;
	struct list_head	list;		/* the device's ipoib_dev list */

	/* P_Key children (RTNL) */
	struct net_device	*parent;	/* NULL for a port's interface */
	bool			sysfs_child;	/* create_child made it */
	struct list_head	children;	/* a parent's: its children */
	struct list_head	child_list;	/* a child's: on the parent's */
};

static inline struct ipoib_dev *ipoib_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

extern int ipoib_sendq_size;
extern int ipoib_recvq_size;

/* ipoib_ib.c */
int ipoib_ib_init(struct ipoib_dev *priv);
void ipoib_ib_cleanup(struct ipoib_dev *priv);
int ipoib_ib_up(struct ipoib_dev *priv);
void ipoib_ib_down(struct ipoib_dev *priv);
int ipoib_set_qkey(struct ipoib_dev *priv, u32 qkey);
int ipoib_post_send(struct ipoib_dev *priv, struct sk_buff *skb,
		    struct ipoib_ah *ah, u32 qpn);
void ipoib_send_and_put(struct ipoib_dev *priv, struct sk_buff *skb,
			struct ipoib_ah *ah, u32 qpn);

/* A packet the interface will not send: counted and freed. */
static inline void ipoib_tx_drop(struct ipoib_dev *priv, struct sk_buff *skb)
{
	priv->dev->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
}

int ipoib_napi_poll(struct napi_struct *napi, int budget);
void ipoib_hand_up(struct ipoib_dev *priv, struct napi_struct *napi,
		   struct sk_buff *skb);
struct device *ipoib_dma(struct ipoib_dev *priv);
int ipoib_rx_buf_fill(struct ipoib_dev *priv, struct ipoib_rx_buf *b,
		      unsigned int size, unsigned int headroom, gfp_t gfp);
void ipoib_rx_buf_release(struct ipoib_dev *priv, struct ipoib_rx_buf *b,
			  unsigned int size);

/* ipoib_ah helpers (ipoib_ib.c) */
struct ipoib_ah *ipoib_ah_create(struct ipoib_dev *priv,
				 struct ib_ah_attr *attr);
void ipoib_ah_put(struct ipoib_ah *ah);
void ipoib_reap_ahs(struct ipoib_dev *priv);
void ipoib_reap_task(struct work_struct *work);

/* ipoib_mcast.c */
void ipoib_mcast_init(struct ipoib_dev *priv);
void ipoib_mcast_task(struct work_struct *work);
void ipoib_mcast_mtu_task(struct work_struct *work);
void ipoib_mcast_restart(struct ipoib_dev *priv);
void ipoib_mcast_flush(struct ipoib_dev *priv, bool leave);
void ipoib_drop_queue(struct ipoib_dev *priv, struct sk_buff_head *q);
netdev_tx_t ipoib_mcast_send(struct ipoib_dev *priv, const u8 *hwaddr,
			     struct sk_buff *skb);

/* ipoib_path.c */
void ipoib_path_init(struct ipoib_dev *priv);
void ipoib_path_task(struct work_struct *work);
void ipoib_path_flush(struct ipoib_dev *priv);
netdev_tx_t ipoib_unicast_send(struct ipoib_dev *priv, const u8 *hwaddr,
			       struct sk_buff *skb);
void ipoib_requeue(struct ipoib_dev *priv, struct sk_buff_head *list);

/* ipoib_cm.c */
extern int ipoib_cm_rx_idle_secs;
void ipoib_cm_init(struct ipoib_dev *priv);
int ipoib_cm_up(struct ipoib_dev *priv);
void ipoib_cm_down(struct ipoib_dev *priv);
int ipoib_cm_napi_poll(struct napi_struct *napi, int budget);
void ipoib_cm_task(struct work_struct *work);
void ipoib_cm_stale_task(struct work_struct *work);
bool ipoib_cm_wanted(struct ipoib_dev *priv, const u8 *hwaddr);
bool ipoib_cm_send_locked(struct ipoib_dev *priv, struct ipoib_path *path,
			  const u8 *hwaddr, struct sk_buff *skb);
void ipoib_cm_retire_locked(struct ipoib_dev *priv, struct ipoib_cm_tx *tx);
int ipoib_cm_set_mode(struct ipoib_dev *priv, bool connected);
ssize_t ipoib_cm_show(struct ipoib_dev *priv, char *buf);

/* ipoib_main.c: interfaces and P_Key children */
void ipoib_setup(struct net_device *dev);
bool ipoib_is_ours(const struct net_device *dev);
int ipoib_child_register(struct ipoib_dev *ppriv, struct net_device *dev,
			 u16 pkey, bool sysfs_child);
int ipoib_child_add(struct net_device *pdev, u16 pkey);
int ipoib_child_del(struct net_device *pdev, u16 pkey);
void ipoib_child_unlink(struct ipoib_dev *priv);

/* ipoib_netlink.c */
extern struct rtnl_link_ops ipoib_link_ops;

/* ipoib_ethtool.c */
extern const struct ethtool_ops ipoib_ethtool_ops;

/* ipoib_fs.c */
extern const struct attribute_group ipoib_attr_group;
extern const struct attribute_group ipoib_child_attr_group;

#endif /* IPOIB_H */
