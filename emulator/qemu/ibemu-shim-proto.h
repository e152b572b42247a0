/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wire protocol between the ibemu-hca QEMU device (the "shim", client) and
 * the ibemu fabric emulator (server). One unix stream socket per guest
 * device. Documented in Documentation/shim-protocol.rst; keep the two in
 * step and bump IBEMU_SHIM_VERSION on any incompatible change.
 *
 * Every message is a fixed-size packed little-endian struct that starts with
 * struct ibemu_shim_hdr. hdr.length is the size of the whole message and
 * must equal the size defined here for hdr.type; anything else is a
 * protocol error and the receiver drops the connection.
 *
 * Usable from C (QEMU, gnu11) and C++ (the emulator, C++20). Only
 * fixed-width integer types; no pointers, no enums in the wire structs.
 * The multi-byte fields are little-endian; both ends run on x86-64 hosts,
 * so the structs are read and written in place (the server checks the host
 * byte order at compile time).
 */
#ifndef IBEMU_SHIM_PROTO_H
#define IBEMU_SHIM_PROTO_H

#include <stdint.h>

#define IBEMU_SHIM_MAGIC   0x48534249u   /* "IBSH" as little-endian bytes */
#define IBEMU_SHIM_VERSION 1u

#define IBEMU_SHIM_NODE_NAME_LEN   64    /* including the terminating NUL */
#define IBEMU_SHIM_MAX_REGIONS     8
#define IBEMU_SHIM_ERROR_TEXT_LEN  128
#define IBEMU_SHIM_CONFIG_SIZE     256
#define IBEMU_SHIM_NUM_BARS        6

/* Message types. Direction in brackets. */
enum {
    IBEMU_MSG_HELLO           = 1,  /* [shim->emu] first message, carries the memfd */
    IBEMU_MSG_WELCOME         = 2,  /* [emu->shim] answer to HELLO */
    IBEMU_MSG_CFG_WRITE       = 3,  /* [shim->emu] posted */
    IBEMU_MSG_CFG_READ        = 4,  /* [shim->emu] expects CFG_READ_REPLY */
    IBEMU_MSG_CFG_READ_REPLY  = 5,  /* [emu->shim] same tag as the request */
    IBEMU_MSG_MMIO_WRITE      = 6,  /* [shim->emu] posted */
    IBEMU_MSG_MMIO_READ       = 7,  /* [shim->emu] expects MMIO_READ_REPLY */
    IBEMU_MSG_MMIO_READ_REPLY = 8,  /* [emu->shim] same tag as the request */
    IBEMU_MSG_MSIX            = 9,  /* [emu->shim] fire one MSI-X vector */
    IBEMU_MSG_INTX            = 10, /* [emu->shim] set the INTx line level */
    IBEMU_MSG_RESET           = 11, /* [shim->emu] device or system reset */
    IBEMU_MSG_SYNC            = 12, /* [shim->emu] expects SYNC_REPLY */
    IBEMU_MSG_SYNC_REPLY      = 13, /* [emu->shim] all earlier messages are done */
    IBEMU_MSG_TYPE_MAX        = 13,
};

/* WELCOME status codes. */
enum {
    IBEMU_WELCOME_OK               = 0,
    IBEMU_WELCOME_BAD_MAGIC        = 1,
    IBEMU_WELCOME_BAD_VERSION      = 2,
    IBEMU_WELCOME_BAD_HELLO        = 3,  /* malformed layout, no memfd, ... */
    IBEMU_WELCOME_DUPLICATE_NODE   = 4,
    IBEMU_WELCOME_INTERNAL         = 5,  /* mmap failed, model refused, ... */
};

/* BAR descriptor flags. */
#define IBEMU_BAR_64BIT     (1u << 0)
#define IBEMU_BAR_PREFETCH  (1u << 1)

#pragma pack(push, 1)

struct ibemu_shim_hdr {
    uint16_t type;
    uint16_t flags;     /* 0; receivers reject anything else */
    uint32_t length;    /* whole message in bytes, header included */
    uint32_t tag;       /* sender's sequence number; replies echo the request's */
    uint32_t reserved;  /* 0 */
};

struct ibemu_shim_region {
    uint64_t gpa;       /* guest-physical base */
    uint64_t size;      /* bytes */
    uint64_t offset;    /* offset of gpa in the memfd */
};

struct ibemu_msg_hello {
    struct ibemu_shim_hdr hdr;
    uint32_t magic;     /* IBEMU_SHIM_MAGIC */
    uint32_t version;   /* IBEMU_SHIM_VERSION */
    uint32_t nregions;  /* 1..IBEMU_SHIM_MAX_REGIONS */
    uint32_t reserved;
    char node[IBEMU_SHIM_NODE_NAME_LEN];  /* NUL-terminated, NUL-padded */
    struct ibemu_shim_region regions[IBEMU_SHIM_MAX_REGIONS];
};

struct ibemu_shim_bar {
    uint64_t size;      /* 0 = not implemented; else a power of two */
    uint32_t flags;     /* IBEMU_BAR_* */
    uint32_t reserved;
};

/*
 * The first four fields (header, status, version, text) are frozen for all
 * protocol versions so that a peer of another version can still read why it
 * was refused.
 */
struct ibemu_msg_welcome {
    struct ibemu_shim_hdr hdr;
    int32_t status;     /* IBEMU_WELCOME_* */
    uint32_t version;   /* the emulator's IBEMU_SHIM_VERSION */
    char text[IBEMU_SHIM_ERROR_TEXT_LEN];  /* NUL-terminated reason if status != OK */
    uint8_t config[IBEMU_SHIM_CONFIG_SIZE];  /* power-on config image */
    struct ibemu_shim_bar bars[IBEMU_SHIM_NUM_BARS];
    uint16_t msix_vectors;      /* 0 = no MSI-X */
    uint8_t msix_cap_offset;
    uint8_t msix_table_bar;
    uint8_t msix_pba_bar;
    uint8_t reserved[3];
    uint32_t msix_table_offset;
    uint32_t msix_pba_offset;
};

struct ibemu_msg_cfg_write {
    struct ibemu_shim_hdr hdr;
    uint16_t offset;    /* offset + size <= 256 */
    uint8_t size;       /* 1, 2 or 4 */
    uint8_t reserved;
    uint32_t value;     /* as written by the guest, in the low 'size' bytes */
};

struct ibemu_msg_cfg_read {
    struct ibemu_shim_hdr hdr;
    uint16_t offset;
    uint8_t size;
    uint8_t reserved;
};

struct ibemu_msg_cfg_read_reply {
    struct ibemu_shim_hdr hdr;
    uint32_t value;
};

struct ibemu_msg_mmio_write {
    struct ibemu_shim_hdr hdr;
    uint8_t bar;        /* 0..5, an implemented BAR */
    uint8_t size;       /* 1, 2, 4 or 8 */
    uint8_t reserved[6];
    uint64_t offset;    /* offset + size <= BAR size */
    uint64_t value;
};

struct ibemu_msg_mmio_read {
    struct ibemu_shim_hdr hdr;
    uint8_t bar;
    uint8_t size;
    uint8_t reserved[6];
    uint64_t offset;
};

struct ibemu_msg_mmio_read_reply {
    struct ibemu_shim_hdr hdr;
    uint64_t value;
};

struct ibemu_msg_msix {
    struct ibemu_shim_hdr hdr;
    uint32_t vector;
};

struct ibemu_msg_intx {
    struct ibemu_shim_hdr hdr;
    uint32_t level;     /* 0 or 1 */
};

struct ibemu_msg_reset {
    struct ibemu_shim_hdr hdr;
};

/*
 * A barrier: the emulator answers SYNC_REPLY (same tag) once it has acted
 * on everything sent before the SYNC, so interrupt messages those caused
 * arrive before the reply. The shim sends it after a BAR write while the
 * INTx line is asserted, so that a write which deasserts it takes effect
 * before the vCPU goes on (as it would on real hardware) instead of the
 * guest taking the still-asserted level interrupt over and over.
 */
struct ibemu_msg_sync {
    struct ibemu_shim_hdr hdr;
};

#pragma pack(pop)

/* The largest message; a receive buffer of this size holds any one. */
#define IBEMU_SHIM_MAX_MSG_SIZE sizeof(struct ibemu_msg_welcome)

/* Wire sizes, checked at build time on both sides. */
#define IBEMU_SHIM_HDR_SIZE          16
#define IBEMU_SHIM_HELLO_SIZE        (16 + 16 + 64 + 8 * 24)
#define IBEMU_SHIM_WELCOME_SIZE      (16 + 8 + 128 + 256 + 6 * 16 + 16)

#ifdef __cplusplus
#define IBEMU_SHIM_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define IBEMU_SHIM_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_shim_hdr) == IBEMU_SHIM_HDR_SIZE, "header size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_hello) == IBEMU_SHIM_HELLO_SIZE, "HELLO size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_welcome) == IBEMU_SHIM_WELCOME_SIZE, "WELCOME size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_cfg_write) == 24, "CFG_WRITE size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_cfg_read) == 20, "CFG_READ size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_cfg_read_reply) == 20, "CFG_READ_REPLY size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_mmio_write) == 40, "MMIO_WRITE size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_mmio_read) == 32, "MMIO_READ size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_mmio_read_reply) == 24, "MMIO_READ_REPLY size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_msix) == 20, "MSIX size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_intx) == 20, "INTX size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_reset) == 16, "RESET size");
IBEMU_SHIM_ASSERT(sizeof(struct ibemu_msg_sync) == 16, "SYNC size");

/*
 * Size of a message of the given type, or 0 for an unknown type. Everything
 * except HELLO and WELCOME is small and fixed.
 */
static inline uint32_t ibemu_shim_msg_size(uint32_t type)
{
    switch (type) {
    case IBEMU_MSG_HELLO:           return sizeof(struct ibemu_msg_hello);
    case IBEMU_MSG_WELCOME:         return sizeof(struct ibemu_msg_welcome);
    case IBEMU_MSG_CFG_WRITE:       return sizeof(struct ibemu_msg_cfg_write);
    case IBEMU_MSG_CFG_READ:        return sizeof(struct ibemu_msg_cfg_read);
    case IBEMU_MSG_CFG_READ_REPLY:  return sizeof(struct ibemu_msg_cfg_read_reply);
    case IBEMU_MSG_MMIO_WRITE:      return sizeof(struct ibemu_msg_mmio_write);
    case IBEMU_MSG_MMIO_READ:       return sizeof(struct ibemu_msg_mmio_read);
    case IBEMU_MSG_MMIO_READ_REPLY: return sizeof(struct ibemu_msg_mmio_read_reply);
    case IBEMU_MSG_MSIX:            return sizeof(struct ibemu_msg_msix);
    case IBEMU_MSG_INTX:            return sizeof(struct ibemu_msg_intx);
    case IBEMU_MSG_RESET:           return sizeof(struct ibemu_msg_reset);
    case IBEMU_MSG_SYNC:            return sizeof(struct ibemu_msg_sync);
    case IBEMU_MSG_SYNC_REPLY:      return sizeof(struct ibemu_msg_sync);
    default:                        return 0;
    }
}

#endif /* IBEMU_SHIM_PROTO_H */
