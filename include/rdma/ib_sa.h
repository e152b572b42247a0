/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Subnet administration queries (ib_sa).
 *
 * ib_sa registers an SA-class MAD agent on every port of every device and
 * keeps an address handle for the port's subnet manager.  A kernel consumer
 * asks for a PathRecord, joins or leaves a multicast group through
 * MCMemberRecord, or reads and writes ServiceRecords; each call returns at
 * once with a query ID, and the answer arrives later at the consumer's
 * callback (in process context, from the MAD layer's workqueue; never from
 * inside the call that started the query).  A query can be cancelled; its
 * callback then runs with -EINTR.
 *
 * Record layouts are IBA 15.2.5.16 (PathRecord), 15.2.5.17 (MCMemberRecord)
 * and 15.2.5.14 (ServiceRecord).  Every multi-byte member of the records
 * below is big-endian, as on the wire; the narrow fields are plain u8.
 */
#ifndef IB_SA_H
#define IB_SA_H

#include <linux/types.h>

#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>

/* The class version ib_sa speaks (IBA 15.2.1.1). */
#define IB_SA_CLASS_VERSION		2

/* SA-specific methods (IBA 15.4.2); Get/Set/GetResp are the common ones. */
enum {
	IB_SA_METHOD_GET_TABLE		= 0x12,
	IB_SA_METHOD_GET_TRACE_TBL	= 0x13,
	IB_SA_METHOD_GET_MULTI		= 0x14,
	IB_SA_METHOD_DELETE		= 0x15,
	IB_SA_METHOD_GET_TABLE_RESP	= IB_SA_METHOD_GET_TABLE | 0x80,
	IB_SA_METHOD_GET_MULTI_RESP	= IB_SA_METHOD_GET_MULTI | 0x80,
	IB_SA_METHOD_DELETE_RESP	= IB_SA_METHOD_DELETE | 0x80,
};

/* SA attribute IDs (IBA 15.2.5), host order. */
enum {
	IB_SA_ATTR_CLASS_PORTINFO = 0x01, IB_SA_ATTR_NOTICE = 0x02,
	IB_SA_ATTR_INFORM_INFO = 0x03, IB_SA_ATTR_NODE_REC = 0x11,
	IB_SA_ATTR_PORT_INFO_REC = 0x12, IB_SA_ATTR_SL2VL_REC = 0x13,
	IB_SA_ATTR_SWITCH_REC = 0x14, IB_SA_ATTR_LINEAR_FDB_REC = 0x15,
	IB_SA_ATTR_RANDOM_FDB_REC = 0x16, IB_SA_ATTR_MCAST_FDB_REC = 0x17,
	IB_SA_ATTR_SM_INFO_REC = 0x18, IB_SA_ATTR_LINK_REC = 0x20,
	IB_SA_ATTR_GUID_INFO_REC = 0x30, IB_SA_ATTR_SERVICE_REC = 0x31,
	IB_SA_ATTR_PARTITION_REC = 0x33, IB_SA_ATTR_PATH_REC = 0x35,
	IB_SA_ATTR_VL_ARB_REC = 0x36, IB_SA_ATTR_MC_MEMBER_REC = 0x38,
	IB_SA_ATTR_TRACE_REC = 0x39, IB_SA_ATTR_MULTI_PATH_REC = 0x3a,
	IB_SA_ATTR_SERVICE_ASSOC_REC = 0x3b, IB_SA_ATTR_INFORM_INFO_REC = 0xf3,
};

/* Selectors of the MTU, rate and packet lifetime fields (IBA 15.2.5.16). */
enum ib_sa_selector {
	IB_SA_GT	= 0,
	IB_SA_LT	= 1,
	IB_SA_EQ	= 2,
	IB_SA_BEST	= 3,	/* "largest available" in a PathRecord query */
};

/* Bytes each record takes in an SA MAD's data area (IBA 15.2.5). */
enum {
	IB_SA_PATH_REC_BYTES		= 64,
	IB_SA_MCMEMBER_REC_BYTES	= 52,
	IB_SA_SERVICE_REC_BYTES		= 176,
};

/*
 * Component mask bits: bit n of the mask says the record's n-th component
 * (in IBA's numbering, reserved fields counted) is to be matched.  Numbers
 * first, masks built from them after.
 */
enum ib_sa_path_rec_comp {
	IB_SA_PR_C_SERVICE_ID_HI = 0, IB_SA_PR_C_SERVICE_ID_LO = 1,
	IB_SA_PR_C_DGID = 2, IB_SA_PR_C_SGID = 3, IB_SA_PR_C_DLID = 4,
	IB_SA_PR_C_SLID = 5, IB_SA_PR_C_RAW_TRAFFIC = 6, /* 7 reserved */
	IB_SA_PR_C_FLOW_LABEL = 8, IB_SA_PR_C_HOP_LIMIT = 9,
	IB_SA_PR_C_TCLASS = 10, IB_SA_PR_C_REVERSIBLE = 11,
	IB_SA_PR_C_NUMB_PATH = 12, IB_SA_PR_C_PKEY = 13,
	IB_SA_PR_C_QOS_CLASS = 14, IB_SA_PR_C_SL = 15,
	IB_SA_PR_C_MTU_SEL = 16, IB_SA_PR_C_MTU = 17,
	IB_SA_PR_C_RATE_SEL = 18, IB_SA_PR_C_RATE = 19,
	IB_SA_PR_C_PLT_SEL = 20, IB_SA_PR_C_PLT = 21,
	IB_SA_PR_C_PREFERENCE = 22,
};

#define IB_SA_PATH_REC_SERVICE_ID \
	(IB_SA_COMP_MASK(IB_SA_PR_C_SERVICE_ID_HI) | IB_SA_COMP_MASK(IB_SA_PR_C_SERVICE_ID_LO))
#define IB_SA_PATH_REC_DGID		IB_SA_COMP_MASK(IB_SA_PR_C_DGID)
#define IB_SA_PATH_REC_SGID		IB_SA_COMP_MASK(IB_SA_PR_C_SGID)
#define IB_SA_PATH_REC_DLID		IB_SA_COMP_MASK(IB_SA_PR_C_DLID)
#define IB_SA_PATH_REC_SLID		IB_SA_COMP_MASK(IB_SA_PR_C_SLID)
#define IB_SA_PATH_REC_RAW_TRAFFIC	IB_SA_COMP_MASK(IB_SA_PR_C_RAW_TRAFFIC)
#define IB_SA_PATH_REC_FLOW_LABEL	IB_SA_COMP_MASK(IB_SA_PR_C_FLOW_LABEL)
#define IB_SA_PATH_REC_HOP_LIMIT	IB_SA_COMP_MASK(IB_SA_PR_C_HOP_LIMIT)
#define IB_SA_PATH_REC_TRAFFIC_CLASS	IB_SA_COMP_MASK(IB_SA_PR_C_TCLASS)
#define IB_SA_PATH_REC_REVERSIBLE	IB_SA_COMP_MASK(IB_SA_PR_C_REVERSIBLE)
#define IB_SA_PATH_REC_NUMB_PATH	IB_SA_COMP_MASK(IB_SA_PR_C_NUMB_PATH)
#define IB_SA_PATH_REC_PKEY		IB_SA_COMP_MASK(IB_SA_PR_C_PKEY)
#define IB_SA_PATH_REC_QOS_CLASS	IB_SA_COMP_MASK(IB_SA_PR_C_QOS_CLASS)
#define IB_SA_PATH_REC_SL		IB_SA_COMP_MASK(IB_SA_PR_C_SL)
#define IB_SA_PATH_REC_MTU_SELECTOR	IB_SA_COMP_MASK(IB_SA_PR_C_MTU_SEL)
#define IB_SA_PATH_REC_MTU		IB_SA_COMP_MASK(IB_SA_PR_C_MTU)
#define IB_SA_PATH_REC_RATE_SELECTOR	IB_SA_COMP_MASK(IB_SA_PR_C_RATE_SEL)
#define IB_SA_PATH_REC_RATE		IB_SA_COMP_MASK(IB_SA_PR_C_RATE)
#define IB_SA_PATH_REC_PACKET_LIFE_TIME_SELECTOR IB_SA_COMP_MASK(IB_SA_PR_C_PLT_SEL)
#define IB_SA_PATH_REC_PACKET_LIFE_TIME	IB_SA_COMP_MASK(IB_SA_PR_C_PLT)
#define IB_SA_PATH_REC_PREFERENCE	IB_SA_COMP_MASK(IB_SA_PR_C_PREFERENCE)

/**
 * struct ib_sa_path_rec - PathRecord (IBA 15.2.5.16)
 * @service_id: ServiceID
 * @dgid: DGID
 * @sgid: SGID
 * @dlid: DLID
 * @slid: SLID
 * @raw_traffic: RawTraffic, 1 bit
 * @flow_label: FlowLabel, 20 bits
 * @hop_limit: HopLimit
 * @traffic_class: TClass
 * @reversible: Reversible, 1 bit
 * @numb_path: NumbPath, 7 bits (a query asks for up to this many paths)
 * @pkey: P_Key
 * @qos_class: QoSClass, 12 bits
 * @sl: SL, 4 bits
 * @mtu_selector: MTUSelector, 2 bits (&enum ib_sa_selector)
 * @mtu: MTU, 6 bits (&enum ib_mtu)
 * @rate_selector: RateSelector, 2 bits
 * @rate: Rate, 6 bits (&enum ib_rate)
 * @packet_life_time_selector: PacketLifeTimeSelector, 2 bits
 * @packet_life_time: PacketLifeTime, 6 bits
 * @preference: Preference
 */
struct ib_sa_path_rec {
	__be64		service_id;
	union ib_gid	dgid;
	union ib_gid	sgid;
	__be16		dlid;
	__be16		slid;
	__be32		flow_label;
	__be16		pkey;
	__be16		qos_class;
	u8		raw_traffic, hop_limit, traffic_class, reversible;
	u8		numb_path, sl, preference;
	u8		mtu_selector, mtu, rate_selector, rate;
	u8		packet_life_time_selector, packet_life_time;
};

enum ib_sa_mcmember_rec_comp {
	IB_SA_MC_C_MGID = 0, IB_SA_MC_C_PORT_GID = 1, IB_SA_MC_C_QKEY = 2,
	IB_SA_MC_C_MLID = 3, IB_SA_MC_C_MTU_SEL = 4, IB_SA_MC_C_MTU = 5,
	IB_SA_MC_C_TCLASS = 6, IB_SA_MC_C_PKEY = 7, IB_SA_MC_C_RATE_SEL = 8,
	IB_SA_MC_C_RATE = 9, IB_SA_MC_C_PLT_SEL = 10, IB_SA_MC_C_PLT = 11,
	IB_SA_MC_C_SL = 12, IB_SA_MC_C_FLOW_LABEL = 13,
	IB_SA_MC_C_HOP_LIMIT = 14, IB_SA_MC_C_SCOPE = 15,
	IB_SA_MC_C_JOIN_STATE = 16, IB_SA_MC_C_PROXY_JOIN = 17,
};

#define IB_SA_MCMEMBER_REC_MGID		IB_SA_COMP_MASK(IB_SA_MC_C_MGID)
#define IB_SA_MCMEMBER_REC_PORT_GID	IB_SA_COMP_MASK(IB_SA_MC_C_PORT_GID)
#define IB_SA_MCMEMBER_REC_QKEY		IB_SA_COMP_MASK(IB_SA_MC_C_QKEY)
#define IB_SA_MCMEMBER_REC_MLID		IB_SA_COMP_MASK(IB_SA_MC_C_MLID)
#define IB_SA_MCMEMBER_REC_MTU_SELECTOR	IB_SA_COMP_MASK(IB_SA_MC_C_MTU_SEL)
#define IB_SA_MCMEMBER_REC_MTU		IB_SA_COMP_MASK(IB_SA_MC_C_MTU)
#define IB_SA_MCMEMBER_REC_TRAFFIC_CLASS IB_SA_COMP_MASK(IB_SA_MC_C_TCLASS)
#define IB_SA_MCMEMBER_REC_PKEY		IB_SA_COMP_MASK(IB_SA_MC_C_PKEY)
#define IB_SA_MCMEMBER_REC_RATE_SELECTOR IB_SA_COMP_MASK(IB_SA_MC_C_RATE_SEL)
#define IB_SA_MCMEMBER_REC_RATE		IB_SA_COMP_MASK(IB_SA_MC_C_RATE)
#define IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR IB_SA_COMP_MASK(IB_SA_MC_C_PLT_SEL)
#define IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME IB_SA_COMP_MASK(IB_SA_MC_C_PLT)
#define IB_SA_MCMEMBER_REC_SL		IB_SA_COMP_MASK(IB_SA_MC_C_SL)
#define IB_SA_MCMEMBER_REC_FLOW_LABEL	IB_SA_COMP_MASK(IB_SA_MC_C_FLOW_LABEL)
#define IB_SA_MCMEMBER_REC_HOP_LIMIT	IB_SA_COMP_MASK(IB_SA_MC_C_HOP_LIMIT)
#define IB_SA_MCMEMBER_REC_SCOPE	IB_SA_COMP_MASK(IB_SA_MC_C_SCOPE)
#define IB_SA_MCMEMBER_REC_JOIN_STATE	IB_SA_COMP_MASK(IB_SA_MC_C_JOIN_STATE)
#define IB_SA_MCMEMBER_REC_PROXY_JOIN	IB_SA_COMP_MASK(IB_SA_MC_C_PROXY_JOIN)

/**
 * struct ib_sa_mcmember_rec - MCMemberRecord (IBA 15.2.5.17)
 * @mgid: MGID
 * @port_gid: PortGID
 * @qkey: Q_Key
 * @mlid: MLID
 * @mtu_selector: MTUSelector, 2 bits
 * @mtu: MTU, 6 bits
 * @traffic_class: TClass
 * @pkey: P_Key
 * @rate_selector: RateSelector, 2 bits
 * @rate: Rate, 6 bits
 * @packet_life_time_selector: PacketLifeTimeSelector, 2 bits
 * @packet_life_time: PacketLifeTime, 6 bits
 * @sl: SL, 4 bits
 * @flow_label: FlowLabel, 20 bits
 * @hop_limit: HopLimit
 * @scope: Scope, 4 bits
 * @join_state: JoinState, 4 bits (full, non-, send-only member)
 * @proxy_join: ProxyJoin, 1 bit
 */
struct ib_sa_mcmember_rec {
	union ib_gid	mgid;
	union ib_gid	port_gid;
	__be32		qkey;
	__be32		flow_label;
	__be16		mlid;
	__be16		pkey;
	u8		mtu_selector, mtu, rate_selector, rate;
	u8		packet_life_time_selector, packet_life_time;
	u8		traffic_class, sl, hop_limit;
	u8		scope, join_state, proxy_join;
};

/*
 * ServiceRecord components: ServiceID, GID, P_Key, a reserved one, Lease,
 * Key, Name, then each ServiceData element has a bit of its own (16 of
 * Data8, 8 of Data16, 4 of Data32, 2 of Data64).
 */
enum ib_sa_service_rec_comp {
	IB_SA_SR_C_ID = 0, IB_SA_SR_C_GID = 1, IB_SA_SR_C_PKEY = 2,
	IB_SA_SR_C_LEASE = 4, IB_SA_SR_C_KEY = 5, IB_SA_SR_C_NAME = 6,
	IB_SA_SR_C_DATA8 = 7, IB_SA_SR_C_DATA16 = 23, IB_SA_SR_C_DATA32 = 31,
	IB_SA_SR_C_DATA64 = 35,
};

#define IB_SA_SERVICE_REC_SERVICE_ID	IB_SA_COMP_MASK(IB_SA_SR_C_ID)
#define IB_SA_SERVICE_REC_SERVICE_GID	IB_SA_COMP_MASK(IB_SA_SR_C_GID)
#define IB_SA_SERVICE_REC_SERVICE_PKEY	IB_SA_COMP_MASK(IB_SA_SR_C_PKEY)
#define IB_SA_SERVICE_REC_SERVICE_LEASE	IB_SA_COMP_MASK(IB_SA_SR_C_LEASE)
#define IB_SA_SERVICE_REC_SERVICE_KEY	IB_SA_COMP_MASK(IB_SA_SR_C_KEY)
#define IB_SA_SERVICE_REC_SERVICE_NAME	IB_SA_COMP_MASK(IB_SA_SR_C_NAME)
/* One element of the ServiceData arrays: (n) counts from 0 within each. */
#define IB_SA_SERVICE_REC_SERVICE_DATA8(n)  IB_SA_COMP_MASK(IB_SA_SR_C_DATA8 + (n))
#define IB_SA_SERVICE_REC_SERVICE_DATA16(n) IB_SA_COMP_MASK(IB_SA_SR_C_DATA16 + (n))
#define IB_SA_SERVICE_REC_SERVICE_DATA32(n) IB_SA_COMP_MASK(IB_SA_SR_C_DATA32 + (n))
#define IB_SA_SERVICE_REC_SERVICE_DATA64(n) IB_SA_COMP_MASK(IB_SA_SR_C_DATA64 + (n))

/**
 * struct ib_sa_service_rec - ServiceRecord (IBA 15.2.5.14)
 * @id: ServiceID
 * @gid: ServiceGID
 * @pkey: ServiceP_Key
 * @lease: ServiceLease, seconds (0xffffffff: forever)
 * @key: ServiceKey
 * @name: ServiceName, NUL-padded
 * @data8: ServiceData8
 * @data16: ServiceData16, big-endian elements
 * @data32: ServiceData32, big-endian elements
 * @data64: ServiceData64, big-endian elements
 */
struct ib_sa_service_rec {
	__be64		id;
	union ib_gid	gid;
	__be16		pkey;
	__be32		lease;
	u8		key[16];
	u8		name[64];
	u8		data8[16];
	__be16		data16[8];
	__be32		data32[4];
	__be64		data64[2];
};

struct ib_sa_query;

void ib_sa_cancel_query(int id, struct ib_sa_query *query);

int ib_sa_path_rec_get(struct ib_device *device, u8 port_num,
		       struct ib_sa_path_rec *rec,
		       ib_sa_comp_mask comp_mask,
		       int timeout_ms, gfp_t gfp_mask,
		       void (*callback)(int status,
					struct ib_sa_path_rec *resp,
					void *context),
		       void *context,
		       struct ib_sa_query **query);

int ib_sa_mcmember_rec_query(struct ib_device *device, u8 port_num,
			     u8 method,
			     struct ib_sa_mcmember_rec *rec,
			     ib_sa_comp_mask comp_mask,
			     int timeout_ms, gfp_t gfp_mask,
			     void (*callback)(int status,
					      struct ib_sa_mcmember_rec *resp,
					      void *context),
			     void *context,
			     struct ib_sa_query **query);

int ib_sa_service_rec_query(struct ib_device *device, u8 port_num,
			    u8 method,
			    struct ib_sa_service_rec *rec,
			    ib_sa_comp_mask comp_mask,
			    int timeout_ms, gfp_t gfp_mask,
			    void (*callback)(int status,
					     struct ib_sa_service_rec *resp,
					     void *context),
			    void *context,
			    struct ib_sa_query **query);

/*
 * Wire conversion of single records, for consumers that carry them in
 * other MADs (the CM puts path data in its REQ) or parse GetTable answers.
 * @buf holds at least IB_SA_*_REC_BYTES.
 */
void ib_sa_pack_path_rec(const struct ib_sa_path_rec *rec, void *buf);
void ib_sa_unpack_path_rec(const void *buf, struct ib_sa_path_rec *rec);
void ib_sa_pack_mcmember_rec(const struct ib_sa_mcmember_rec *rec, void *buf);
void ib_sa_unpack_mcmember_rec(const void *buf, struct ib_sa_mcmember_rec *rec);
void ib_sa_pack_service_rec(const struct ib_sa_service_rec *rec, void *buf);
void ib_sa_unpack_service_rec(const void *buf, struct ib_sa_service_rec *rec);

/**
 * ib_sa_mcmember_rec_set() - join a multicast group (or create it)
 * @device: the device
 * @port_num: the port whose SM is asked
 * @rec: the member record; @comp_mask says which fields count
 * @comp_mask: IB_SA_MCMEMBER_REC_* bits
 * @timeout_ms: how long to wait for each try
 * @gfp_mask: allocation flags for the query
 * @callback: gets 0 and the SA's record, or a negative errno and NULL
 * @context: passed to @callback
 * @query: set to the query, for ib_sa_cancel_query()
 *
 * A SubnAdmSet(MCMemberRecord).
 *
 * Return: the query ID (>= 0), or a negative errno when nothing was sent.
 */
static inline int
ib_sa_mcmember_rec_set(struct ib_device *device, u8 port_num,
		       struct ib_sa_mcmember_rec *rec,
		       ib_sa_comp_mask comp_mask,
		       int timeout_ms, gfp_t gfp_mask,
		       void (*callback)(int status,
					struct ib_sa_mcmember_rec *resp,
					void *context),
		       void *context,
		       struct ib_sa_query **query)
{
	return ib_sa_mcmember_rec_query(device, port_num, IB_MGMT_METHOD_SET,
					rec, comp_mask, timeout_ms, gfp_mask,
					callback, context, query);
}

/**
 * ib_sa_mcmember_rec_delete() - leave a multicast group
 * @device: the device
 * @port_num: the port whose SM is asked
 * @rec: the member record (MGID, PortGID and JoinState at least)
 * @comp_mask: IB_SA_MCMEMBER_REC_* bits
 * @timeout_ms: how long to wait for each try
 * @gfp_mask: allocation flags for the query
 * @callback: gets 0 and the SA's record, or a negative errno and NULL
 * @context: passed to @callback
 * @query: set to the query, for ib_sa_cancel_query()
 *
 * A SubnAdmDelete(MCMemberRecord).
 *
 * Return: the query ID (>= 0), or a negative errno when nothing was sent.
 */
static inline int
ib_sa_mcmember_rec_delete(struct ib_device *device, u8 port_num,
			  struct ib_sa_mcmember_rec *rec,
			  ib_sa_comp_mask comp_mask,
			  int timeout_ms, gfp_t gfp_mask,
			  void (*callback)(int status,
					   struct ib_sa_mcmember_rec *resp,
					   void *context),
			  void *context,
			  struct ib_sa_query **query)
{
	return ib_sa_mcmember_rec_query(device, port_num, IB_SA_METHOD_DELETE,
					rec, comp_mask, timeout_ms, gfp_mask,
					callback, context, query);
}

#endif /* IB_SA_H */
