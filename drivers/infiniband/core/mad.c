// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ib_mad: the MAD layer (skeleton; the QP0/QP1 machinery follows).
 */

#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>

#include <rdma/ib_mad.h>

/**
 * ib_register_mad_agent() - register a MAD consumer on a port and QP
 * @device: the device
 * @port_num: the port
 * @qp_type: IB_QPT_SMI or IB_QPT_GSI
 * @mad_reg_req: the class, version and methods served, or NULL for a
 *	send-only agent
 * @rmpp_version: 0, or IB_MGMT_RMPP_VERSION to have RMPP run for it
 * @send_handler: called when a send ends
 * @recv_handler: called for a received MAD
 * @context: the consumer's pointer
 *
 * Return: the agent, or an ERR_PTR().
 */
struct ib_mad_agent *ib_register_mad_agent(struct ib_device *device,
					   u8 port_num,
					   enum ib_qp_type qp_type,
					   struct ib_mad_reg_req *mad_reg_req,
					   u8 rmpp_version,
					   ib_mad_send_handler send_handler,
					   ib_mad_recv_handler recv_handler,
					   void *context)
{
	return ERR_PTR(-ENODEV);
}
EXPORT_SYMBOL(ib_register_mad_agent);

/**
 * ib_unregister_mad_agent() - remove an agent
 * @mad_agent: the agent
 *
 * Return: 0.
 */
int ib_unregister_mad_agent(struct ib_mad_agent *mad_agent)
{
	return 0;
}
EXPORT_SYMBOL(ib_unregister_mad_agent);

/**
 * ib_post_send_mad() - send MADs
 * @send_buf: the first buffer of a list linked by ->next
 * @bad_send_buf: on failure, the first buffer not sent
 *
 * Return: 0, or a negative errno.
 */
int ib_post_send_mad(struct ib_mad_send_buf *send_buf,
		     struct ib_mad_send_buf **bad_send_buf)
{
	if (bad_send_buf)
		*bad_send_buf = send_buf;
	return -ENODEV;
}
EXPORT_SYMBOL(ib_post_send_mad);

/**
 * ib_coalesce_recv_mad() - copy a received, possibly reassembled MAD
 * @mad_recv_wc: the MAD
 * @buf: room for mad_recv_wc->mad_len bytes
 */
void ib_coalesce_recv_mad(struct ib_mad_recv_wc *mad_recv_wc, void *buf)
{
}
EXPORT_SYMBOL(ib_coalesce_recv_mad);

/**
 * ib_free_recv_mad() - release a received MAD
 * @mad_recv_wc: the MAD
 */
void ib_free_recv_mad(struct ib_mad_recv_wc *mad_recv_wc)
{
}
EXPORT_SYMBOL(ib_free_recv_mad);

/**
 * ib_cancel_mad() - cancel a send
 * @mad_agent: its agent
 * @send_buf: the buffer
 */
void ib_cancel_mad(struct ib_mad_agent *mad_agent,
		   struct ib_mad_send_buf *send_buf)
{
}
EXPORT_SYMBOL(ib_cancel_mad);

/**
 * ib_modify_mad() - change the response timeout of a send
 * @mad_agent: its agent
 * @send_buf: the buffer
 * @timeout_ms: the new timeout; 0 cancels
 *
 * Return: 0, or -EINVAL when the send is not pending.
 */
int ib_modify_mad(struct ib_mad_agent *mad_agent,
		  struct ib_mad_send_buf *send_buf, u32 timeout_ms)
{
	return -EINVAL;
}
EXPORT_SYMBOL(ib_modify_mad);

/**
 * ib_create_send_mad() - allocate a send buffer
 * @mad_agent: the agent
 * @remote_qpn: destination QP
 * @pkey_index: P_Key index to send with
 * @rmpp_active: send as RMPP segments
 * @hdr_len: header bytes
 * @data_len: data bytes
 * @gfp_mask: allocation flags
 *
 * Return: the buffer, or an ERR_PTR().
 */
struct ib_mad_send_buf *ib_create_send_mad(struct ib_mad_agent *mad_agent,
					   u32 remote_qpn, u16 pkey_index,
					   int rmpp_active,
					   int hdr_len, int data_len,
					   gfp_t gfp_mask)
{
	return ERR_PTR(-ENODEV);
}
EXPORT_SYMBOL(ib_create_send_mad);

/**
 * ib_get_mad_data_offset() - where the data of a class's MAD starts
 * @mgmt_class: the class
 *
 * Return: the header length in bytes.
 */
int ib_get_mad_data_offset(u8 mgmt_class)
{
	return IB_MGMT_MAD_HDR;
}
EXPORT_SYMBOL(ib_get_mad_data_offset);

/**
 * ib_get_rmpp_segment() - the data of one RMPP segment of a send buffer
 * @send_buf: the buffer
 * @seg_num: 1-based segment number
 *
 * Return: a pointer to its data, or NULL.
 */
void *ib_get_rmpp_segment(struct ib_mad_send_buf *send_buf, int seg_num)
{
	return NULL;
}
EXPORT_SYMBOL(ib_get_rmpp_segment);

/**
 * ib_free_send_mad() - free a send buffer
 * @send_buf: the buffer
 */
void ib_free_send_mad(struct ib_mad_send_buf *send_buf)
{
}
EXPORT_SYMBOL(ib_free_send_mad);

bool ib_response_mad(const struct ib_mad *mad)
{
	return mad->mad_hdr.method & IB_MGMT_METHOD_RESP;
}
EXPORT_SYMBOL(ib_response_mad);

bool ib_is_mad_class_rmpp(u8 mgmt_class)
{
	return false;
}
EXPORT_SYMBOL(ib_is_mad_class_rmpp);

MODULE_AUTHOR("ibstack");
MODULE_DESCRIPTION("InfiniBand MAD layer: QP0/QP1, agents, SMI, RMPP");
MODULE_LICENSE("Dual BSD/GPL");
