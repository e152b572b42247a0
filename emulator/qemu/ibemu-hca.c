/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ibemu-hca: a PCI device whose behaviour lives in the ibemu emulator.
 *
 * This file is a thin shell. It connects to the emulator's unix socket,
 * hands it guest RAM (the memfd behind the machine's memory backend) and the
 * guest-physical layout, and takes the PCI identity, BAR sizes and MSI-X
 * geometry from its answer. After that it forwards config writes and BAR
 * accesses (writes posted, reads synchronous) and turns the emulator's
 * interrupt messages into msix_notify() or the INTx level.
 *
 * QEMU keeps the standard config header, the BAR address registers and the
 * MSI-X capability, table and PBA. The emulator sees every config write
 * after QEMU has applied it.
 *
 * Threading: the MMIO callbacks run with the BQL held (the regions are not
 * marked lockless), and so does the main-loop fd handler; the receive state
 * below is only ever touched under the BQL.
 *
 * The wire protocol is in ibemu-shim-proto.h and
 * Documentation/shim-protocol.rst of the ibstack project.
 */
#include "qemu/osdep.h"

#include <poll.h>
#include <sys/socket.h>

#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/sockets.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "exec/cpu-common.h"
#include "hw/boards.h"
#include "hw/i386/x86.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"

#include "ibemu-shim-proto.h"

#define TYPE_IBEMU_HCA "ibemu-hca"
OBJECT_DECLARE_SIMPLE_TYPE(IbemuHcaState, IBEMU_HCA)

typedef struct IbemuBar {
    struct IbemuHcaState *s;
    MemoryRegion mr;
    uint8_t index;
} IbemuBar;

/* Any one message, for the receive path. */
typedef union IbemuMsg {
    struct ibemu_shim_hdr hdr;
    struct ibemu_msg_welcome welcome;
    struct ibemu_msg_cfg_read_reply cfg_reply;
    struct ibemu_msg_mmio_read_reply mmio_reply;
    struct ibemu_msg_msix msix;
    struct ibemu_msg_intx intx;
    struct ibemu_msg_sync sync;
} IbemuMsg;

struct IbemuHcaState {
    PCIDevice parent_obj;

    /* properties */
    char *socket_path;
    char *node;
    uint32_t reply_timeout_ms;  /* 0 = wait for ever */

    int fd;             /* -1 once the emulator is gone */
    bool ready;         /* WELCOME accepted, device fully set up */
    bool intx_level;    /* last INTX level from the emulator */
    uint32_t next_tag;

    /* bytes received but not yet consumed as messages */
    uint8_t rx[2 * IBEMU_SHIM_MAX_MSG_SIZE];
    size_t rx_len;

    IbemuBar bars[IBEMU_SHIM_NUM_BARS];
    bool msix_on;
    uint8_t msix_table_bar;
    uint8_t msix_pba_bar;
    uint16_t msix_vectors;
};

/* ---------------------------------------------------------------------- */
/* connection */

static const char *ibemu_name(IbemuHcaState *s)
{
    return s->node ? s->node : "?";
}

/*
 * The emulator is gone or spoke nonsense. Say so once; from then on reads
 * return all-ones and writes vanish, and the guest keeps running.
 */
static void ibemu_disconnect(IbemuHcaState *s, const char *why)
{
    if (s->fd < 0) {
        return;
    }
    error_report("ibemu-hca %s: lost the emulator at %s: %s; "
                 "the device now reads as all-ones",
                 ibemu_name(s), s->socket_path, why);
    qemu_set_fd_handler(s->fd, NULL, NULL, NULL);
    close(s->fd);
    s->fd = -1;
    s->rx_len = 0;
    if (s->ready) {
        s->intx_level = false;
        pci_set_irq(PCI_DEVICE(s), 0);
    }
}

static void ibemu_fill_hdr(IbemuHcaState *s, struct ibemu_shim_hdr *h,
                           uint16_t type, uint32_t len)
{
    memset(h, 0, sizeof(*h));
    h->type = type;
    h->length = len;
    h->tag = s->next_tag++;
}

static int ibemu_poll_fd(IbemuHcaState *s, short events)
{
    struct pollfd pfd = { .fd = s->fd, .events = events };
    int timeout = s->reply_timeout_ms ? (int)s->reply_timeout_ms : -1;
    int r;

    do {
        r = poll(&pfd, 1, timeout);
    } while (r < 0 && errno == EINTR);
    return r;
}

/*
 * Send one whole message. The socket is non-blocking; if the emulator is
 * slow to drain it we wait for room, which is the back-pressure a posted
 * write on a real bus has too. An optional fd rides on the first byte.
 */
static bool ibemu_send(IbemuHcaState *s, const void *buf, size_t len, int pass_fd)
{
    const uint8_t *p = buf;
    size_t done = 0;

    while (s->fd >= 0 && done < len) {
        struct iovec iov = { .iov_base = (void *)(p + done), .iov_len = len - done };
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (pass_fd >= 0 && done == 0) {
            struct cmsghdr *c;

            memset(&ctl, 0, sizeof(ctl));
            mh.msg_control = ctl.buf;
            mh.msg_controllen = sizeof(ctl.buf);
            c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        }
        n = sendmsg(s->fd, &mh, MSG_NOSIGNAL);
        if (n > 0) {
            done += n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = ibemu_poll_fd(s, POLLOUT);
            if (r == 0) {
                ibemu_disconnect(s, "timed out sending to the emulator");
            } else if (r < 0) {
                ibemu_disconnect(s, strerror(errno));
            }
            continue;
        }
        ibemu_disconnect(s, n < 0 ? strerror(errno) : "short send");
    }
    return s->fd >= 0;
}

/*
 * Take one complete message out of the receive buffer.
 * Returns 1 and fills *m, 0 if more bytes are needed, -1 on a protocol
 * error (already reported by disconnecting).
 */
static int ibemu_take(IbemuHcaState *s, IbemuMsg *m)
{
    struct ibemu_shim_hdr h;
    uint32_t want;

    if (s->rx_len < sizeof(h)) {
        return 0;
    }
    memcpy(&h, s->rx, sizeof(h));
    want = ibemu_shim_msg_size(h.type);
    if (!want || h.length != want || h.flags || h.reserved ||
        want > sizeof(*m)) {
        ibemu_disconnect(s, "malformed message from the emulator");
        return -1;
    }
    if (s->rx_len < want) {
        return 0;
    }
    memcpy(m, s->rx, want);
    memmove(s->rx, s->rx + want, s->rx_len - want);
    s->rx_len -= want;
    return 1;
}

/* Read whatever is there. Returns false if the connection died. */
static bool ibemu_recv_some(IbemuHcaState *s)
{
    ssize_t n;

    do {
        n = recv(s->fd, s->rx + s->rx_len, sizeof(s->rx) - s->rx_len,
                 MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        s->rx_len += n;
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return true;
    }
    ibemu_disconnect(s, n == 0 ? "connection closed" : strerror(errno));
    return false;
}

/* An interrupt message. Anything else unsolicited is a protocol error. */
static void ibemu_handle_async(IbemuHcaState *s, const IbemuMsg *m)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!s->ready) {
        ibemu_disconnect(s, "unexpected message before WELCOME");
        return;
    }
    switch (m->hdr.type) {
    case IBEMU_MSG_MSIX:
        if (m->msix.vector >= s->msix_vectors) {
            ibemu_disconnect(s, "MSI-X vector out of range");
        } else if (!msix_enabled(pdev)) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ibemu-hca %s: MSI-X vector %u fired while MSI-X "
                          "is disabled; dropped\n", ibemu_name(s),
                          m->msix.vector);
        } else {
            msix_notify(pdev, m->msix.vector);
        }
        break;
    case IBEMU_MSG_INTX:
        s->intx_level = m->intx.level != 0;
        pci_set_irq(pdev, s->intx_level);
        break;
    default:
        ibemu_disconnect(s, "unexpected message type from the emulator");
        break;
    }
}

/*
 * Wait for the reply of the given type and tag, serving interrupt messages
 * that arrive before it. Returns false if the emulator is gone.
 */
static bool ibemu_wait_reply(IbemuHcaState *s, uint16_t type, uint32_t tag,
                             IbemuMsg *reply)
{
    while (s->fd >= 0) {
        int r = ibemu_take(s, reply);

        if (r < 0) {
            return false;
        }
        if (r > 0) {
            if (reply->hdr.type == type) {
                if (reply->hdr.tag != tag) {
                    ibemu_disconnect(s, "reply with the wrong tag");
                    return false;
                }
                return true;
            }
            ibemu_handle_async(s, reply);
            continue;
        }
        r = ibemu_poll_fd(s, POLLIN);
        if (r == 0) {
            ibemu_disconnect(s, "timed out waiting for a reply");
        } else if (r < 0) {
            ibemu_disconnect(s, strerror(errno));
        } else {
            ibemu_recv_some(s);
        }
    }
    return false;
}

/* Main-loop handler: interrupts that arrive while no access is in flight. */
static void ibemu_fd_read(void *opaque)
{
    IbemuHcaState *s = opaque;
    IbemuMsg m;

    if (!ibemu_recv_some(s)) {
        return;
    }
    while (s->fd >= 0 && ibemu_take(s, &m) > 0) {
        ibemu_handle_async(s, &m);
    }
}

/* ---------------------------------------------------------------------- */
/* BAR accesses */

static uint64_t ibemu_bar_read(void *opaque, hwaddr addr, unsigned size)
{
    IbemuBar *bar = opaque;
    IbemuHcaState *s = bar->s;
    struct ibemu_msg_mmio_read req;
    IbemuMsg reply;
    uint64_t all_ones = size == 8 ? ~0ull : (1ull << (size * 8)) - 1;

    if (s->fd < 0) {
        return all_ones;
    }
    memset(&req, 0, sizeof(req));
    ibemu_fill_hdr(s, &req.hdr, IBEMU_MSG_MMIO_READ, sizeof(req));
    req.bar = bar->index;
    req.size = size;
    req.offset = addr;
    if (!ibemu_send(s, &req, sizeof(req), -1) ||
        !ibemu_wait_reply(s, IBEMU_MSG_MMIO_READ_REPLY, req.hdr.tag, &reply)) {
        return all_ones;
    }
    return reply.mmio_reply.value & all_ones;
}

static void ibemu_bar_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    IbemuBar *bar = opaque;
    IbemuHcaState *s = bar->s;
    struct ibemu_msg_mmio_write req;

    if (s->fd < 0) {
        return;
    }
    memset(&req, 0, sizeof(req));
    ibemu_fill_hdr(s, &req.hdr, IBEMU_MSG_MMIO_WRITE, sizeof(req));
    req.bar = bar->index;
    req.size = size;
    req.offset = addr;
    req.value = val;
    if (!ibemu_send(s, &req, sizeof(req), -1)) {
        return;
    }
    /*
     * With INTx asserted this write may be the one that deasserts it: wait
     * until the emulator has acted on it, or the guest would take the
     * level interrupt again and again while the write is on its way.
     */
    if (s->intx_level) {
        struct ibemu_msg_sync sync;
        IbemuMsg reply;

        ibemu_fill_hdr(s, &sync.hdr, IBEMU_MSG_SYNC, sizeof(sync));
        if (ibemu_send(s, &sync, sizeof(sync), -1)) {
            ibemu_wait_reply(s, IBEMU_MSG_SYNC_REPLY, sync.hdr.tag, &reply);
        }
    }
}

/*
 * Unaligned accesses are passed on as the guest made them; the device model
 * decides what they mean.
 */
static const MemoryRegionOps ibemu_bar_ops = {
    .read = ibemu_bar_read,
    .write = ibemu_bar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---------------------------------------------------------------------- */
/* config space */

/*
 * Config reads in the device-specific area (0x40..0xff) that touch no
 * capability QEMU placed there go to the device model; everything else is
 * answered from QEMU's image.
 */
static bool ibemu_cfg_forwarded(PCIDevice *pdev, uint32_t addr, int len)
{
    int i;

    if (addr < PCI_CONFIG_HEADER_SIZE || addr + len > PCI_CONFIG_SPACE_SIZE) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (pdev->used[addr + i]) {
            return false;
        }
    }
    return true;
}

static uint32_t ibemu_config_read(PCIDevice *pdev, uint32_t addr, int len)
{
    IbemuHcaState *s = IBEMU_HCA(pdev);
    struct ibemu_msg_cfg_read req;
    IbemuMsg reply;
    uint32_t mask = len == 4 ? ~0u : (1u << (len * 8)) - 1;

    if (!s->ready || !ibemu_cfg_forwarded(pdev, addr, len)) {
        return pci_default_read_config(pdev, addr, len);
    }
    if (s->fd < 0) {
        return mask;
    }
    memset(&req, 0, sizeof(req));
    ibemu_fill_hdr(s, &req.hdr, IBEMU_MSG_CFG_READ, sizeof(req));
    req.offset = addr;
    req.size = len;
    if (!ibemu_send(s, &req, sizeof(req), -1) ||
        !ibemu_wait_reply(s, IBEMU_MSG_CFG_READ_REPLY, req.hdr.tag, &reply)) {
        return mask;
    }
    return reply.cfg_reply.value & mask;
}

static void ibemu_config_write(PCIDevice *pdev, uint32_t addr, uint32_t val,
                               int len)
{
    IbemuHcaState *s = IBEMU_HCA(pdev);
    struct ibemu_msg_cfg_write req;

    pci_default_write_config(pdev, addr, val, len);
    if (!s->ready || s->fd < 0) {
        return;
    }
    memset(&req, 0, sizeof(req));
    ibemu_fill_hdr(s, &req.hdr, IBEMU_MSG_CFG_WRITE, sizeof(req));
    req.offset = addr;
    req.size = len;
    req.value = len == 4 ? val : val & ((1u << (len * 8)) - 1);
    ibemu_send(s, &req, sizeof(req), -1);
}

/* ---------------------------------------------------------------------- */
/* realize / exit / reset */

/*
 * Guest RAM as the emulator must see it: the memfd of the machine's memory
 * backend and where each part of it sits in guest-physical space.
 */
static bool ibemu_build_hello(IbemuHcaState *s, struct ibemu_msg_hello *h,
                              int *memfd, Error **errp)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    X86MachineState *x86ms;
    uint32_t n = 0;

    if (!ms->ram) {
        error_setg(errp, "guest RAM has no memory backend; start QEMU with "
                   "-object memory-backend-memfd,id=mem,size=...,share=on "
                   "-machine memory-backend=mem");
        return false;
    }
    *memfd = memory_region_get_fd(ms->ram);
    if (*memfd < 0 || !ms->ram->ram_block ||
        !qemu_ram_is_shared(ms->ram->ram_block)) {
        error_setg(errp, "guest RAM must be a shared memfd: use "
                   "-object memory-backend-memfd,id=mem,size=...,share=on "
                   "-machine memory-backend=mem");
        return false;
    }

    memset(h, 0, sizeof(*h));
    ibemu_fill_hdr(s, &h->hdr, IBEMU_MSG_HELLO, sizeof(*h));
    h->magic = IBEMU_SHIM_MAGIC;
    h->version = IBEMU_SHIM_VERSION;
    pstrcpy(h->node, sizeof(h->node), s->node);

    x86ms = (X86MachineState *)object_dynamic_cast(OBJECT(ms), TYPE_X86_MACHINE);
    if (x86ms) {
        /* pc/q35: RAM below the PCI hole, the rest from above_4g_mem_start */
        if (x86ms->below_4g_mem_size) {
            h->regions[n].gpa = 0;
            h->regions[n].size = x86ms->below_4g_mem_size;
            h->regions[n].offset = 0;
            n++;
        }
        if (x86ms->above_4g_mem_size) {
            h->regions[n].gpa = x86ms->above_4g_mem_start;
            h->regions[n].size = x86ms->above_4g_mem_size;
            h->regions[n].offset = x86ms->below_4g_mem_size;
            n++;
        }
    } else {
        h->regions[n].gpa = 0;
        h->regions[n].size = memory_region_size(ms->ram);
        h->regions[n].offset = 0;
        n++;
    }
    h->nregions = n;
    return true;
}

/* Check what the emulator announced before QEMU asserts on any of it. */
static bool ibemu_check_welcome(const struct ibemu_msg_welcome *w, Error **errp)
{
    int i;

    for (i = 0; i < IBEMU_SHIM_NUM_BARS; i++) {
        const struct ibemu_shim_bar *b = &w->bars[i];

        if (!b->size) {
            continue;
        }
        if (!is_power_of_2(b->size) || b->size < 16 ||
            (b->flags & ~(IBEMU_BAR_64BIT | IBEMU_BAR_PREFETCH))) {
            error_setg(errp, "emulator announced a bad BAR%d (size 0x%" PRIx64
                       ", flags 0x%x)", i, b->size, b->flags);
            return false;
        }
        if (!(b->flags & IBEMU_BAR_64BIT) && b->size > 0x80000000ull) {
            error_setg(errp, "emulator announced a 32-bit BAR%d of 0x%" PRIx64
                       " bytes", i, b->size);
            return false;
        }
        if (b->flags & IBEMU_BAR_64BIT) {
            if (i == IBEMU_SHIM_NUM_BARS - 1 || w->bars[i + 1].size) {
                error_setg(errp, "emulator announced 64-bit BAR%d without a "
                           "free upper slot", i);
                return false;
            }
            i++;
        }
    }
    if (w->msix_vectors) {
        uint64_t table_end = (uint64_t)w->msix_table_offset +
                             w->msix_vectors * PCI_MSIX_ENTRY_SIZE;
        uint64_t pba_end = (uint64_t)w->msix_pba_offset +
                           QEMU_ALIGN_UP(w->msix_vectors, 64) / 8;

        if (w->msix_vectors > PCI_MSIX_FLAGS_QSIZE + 1 ||
            w->msix_table_bar >= IBEMU_SHIM_NUM_BARS ||
            w->msix_pba_bar >= IBEMU_SHIM_NUM_BARS ||
            table_end > w->bars[w->msix_table_bar].size ||
            pba_end > w->bars[w->msix_pba_bar].size ||
            ((w->msix_table_offset | w->msix_pba_offset) &
             PCI_MSIX_FLAGS_BIRMASK) ||
            (w->msix_table_bar == w->msix_pba_bar &&
             w->msix_table_offset < pba_end &&
             w->msix_pba_offset < table_end) ||
            w->msix_cap_offset < PCI_CONFIG_HEADER_SIZE ||
            w->msix_cap_offset > PCI_CONFIG_SPACE_SIZE - MSIX_CAP_LENGTH) {
            error_setg(errp, "emulator announced an impossible MSI-X layout");
            return false;
        }
    }
    return true;
}

static void ibemu_apply_identity(IbemuHcaState *s,
                                 const struct ibemu_msg_welcome *w)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint8_t *c = pdev->config;

    pci_set_word(c + PCI_VENDOR_ID, pci_get_word(w->config + PCI_VENDOR_ID));
    pci_set_word(c + PCI_DEVICE_ID, pci_get_word(w->config + PCI_DEVICE_ID));
    c[PCI_REVISION_ID] = w->config[PCI_REVISION_ID];
    memcpy(c + PCI_CLASS_PROG, w->config + PCI_CLASS_PROG, 3);
    pci_set_word(c + PCI_SUBSYSTEM_VENDOR_ID,
                 pci_get_word(w->config + PCI_SUBSYSTEM_VENDOR_ID));
    pci_set_word(c + PCI_SUBSYSTEM_ID,
                 pci_get_word(w->config + PCI_SUBSYSTEM_ID));
    pci_config_set_interrupt_pin(c, w->config[PCI_INTERRUPT_PIN]);
}

static void ibemu_realize(PCIDevice *pdev, Error **errp)
{
    IbemuHcaState *s = IBEMU_HCA(pdev);
    struct ibemu_msg_hello hello;
    struct ibemu_msg_welcome *w;
    IbemuMsg reply;
    int memfd = -1;
    int i;

    s->fd = -1;
    s->ready = false;
    s->rx_len = 0;
    if (!s->socket_path || !*s->socket_path) {
        error_setg(errp, "ibemu-hca needs socket=<path of the emulator's socket>");
        return;
    }
    if (!s->node || !*s->node || strlen(s->node) >= IBEMU_SHIM_NODE_NAME_LEN) {
        error_setg(errp, "ibemu-hca needs node=<name of 1..%d characters>",
                   IBEMU_SHIM_NODE_NAME_LEN - 1);
        return;
    }
    /*
     * The emulator reads and writes guest RAM through the memfd, at the
     * addresses the driver programs (MTTs, ICM, queue bases). Behind a
     * vIOMMU (intel-iommu, amd-iommu, virtio-iommu) those are IOVAs of this
     * device's DMA address space, not guest-physical addresses, and nothing
     * translates them on the way: DMA would land on the wrong pages. So the
     * device must see plain guest-physical memory, or it is not created.
     */
    if (pci_device_iommu_address_space(pdev) != &address_space_memory) {
        error_setg(errp, "ibemu-hca %s: the device is behind a vIOMMU; the "
                   "emulator takes DMA addresses as guest-physical and "
                   "cannot translate IOVAs: remove the IOMMU or let this "
                   "bus bypass it (-machine default_bus_bypass_iommu=on)",
                   s->node);
        return;
    }
    if (!ibemu_build_hello(s, &hello, &memfd, errp)) {
        return;
    }

    s->fd = unix_connect(s->socket_path, errp);
    if (s->fd < 0) {
        error_prepend(errp, "ibemu-hca %s: cannot reach the emulator: ",
                      s->node);
        return;
    }
    qemu_socket_set_nonblock(s->fd);

    if (!ibemu_send(s, &hello, sizeof(hello), memfd) ||
        !ibemu_wait_reply(s, IBEMU_MSG_WELCOME, hello.hdr.tag, &reply)) {
        error_setg(errp, "ibemu-hca %s: no WELCOME from the emulator at %s",
                   s->node, s->socket_path);
        goto fail;
    }
    w = &reply.welcome;
    if (w->status != IBEMU_WELCOME_OK || w->version != IBEMU_SHIM_VERSION) {
        w->text[sizeof(w->text) - 1] = 0;
        error_setg(errp, "ibemu-hca %s: the emulator refused the device "
                   "(status %d, emulator protocol v%u, ours v%u): %s",
                   s->node, w->status, w->version, IBEMU_SHIM_VERSION,
                   w->status != IBEMU_WELCOME_OK ? w->text :
                   "protocol version mismatch");
        goto fail;
    }
    if (!ibemu_check_welcome(w, errp)) {
        goto fail;
    }

    ibemu_apply_identity(s, w);
    for (i = 0; i < IBEMU_SHIM_NUM_BARS; i++) {
        const struct ibemu_shim_bar *b = &w->bars[i];
        IbemuBar *bar = &s->bars[i];
        uint8_t type = PCI_BASE_ADDRESS_SPACE_MEMORY;
        g_autofree char *name = NULL;

        if (!b->size) {
            continue;
        }
        if (b->flags & IBEMU_BAR_64BIT) {
            type |= PCI_BASE_ADDRESS_MEM_TYPE_64;
        }
        if (b->flags & IBEMU_BAR_PREFETCH) {
            type |= PCI_BASE_ADDRESS_MEM_PREFETCH;
        }
        bar->s = s;
        bar->index = i;
        name = g_strdup_printf("ibemu-hca-bar%d", i);
        memory_region_init_io(&bar->mr, OBJECT(s), &ibemu_bar_ops, bar,
                              name, b->size);
        pci_register_bar(pdev, i, type, &bar->mr);
    }

    if (w->msix_vectors) {
        if (msix_init(pdev, w->msix_vectors,
                      &s->bars[w->msix_table_bar].mr, w->msix_table_bar,
                      w->msix_table_offset,
                      &s->bars[w->msix_pba_bar].mr, w->msix_pba_bar,
                      w->msix_pba_offset, w->msix_cap_offset, errp) < 0) {
            error_prepend(errp, "ibemu-hca %s: ", s->node);
            goto fail;
        }
        s->msix_on = true;
        s->msix_vectors = w->msix_vectors;
        s->msix_table_bar = w->msix_table_bar;
        s->msix_pba_bar = w->msix_pba_bar;
        /* the model decides which vectors it fires; QEMU gates on "used" */
        for (i = 0; i < w->msix_vectors; i++) {
            msix_vector_use(pdev, i);
        }
    }

    s->ready = true;
    qemu_set_fd_handler(s->fd, ibemu_fd_read, NULL, s);
    /* anything that came right behind the WELCOME */
    while (s->fd >= 0 && ibemu_take(s, &reply) > 0) {
        ibemu_handle_async(s, &reply);
    }
    return;

fail:
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
}

static void ibemu_exit(PCIDevice *pdev)
{
    IbemuHcaState *s = IBEMU_HCA(pdev);

    if (s->msix_on) {
        msix_unuse_all_vectors(pdev);
        msix_uninit(pdev, &s->bars[s->msix_table_bar].mr,
                    &s->bars[s->msix_pba_bar].mr);
        s->msix_on = false;
    }
    if (s->fd >= 0) {
        qemu_set_fd_handler(s->fd, NULL, NULL, NULL);
        close(s->fd);
        s->fd = -1;
    }
    s->ready = false;
}

static void ibemu_reset(DeviceState *dev)
{
    IbemuHcaState *s = IBEMU_HCA(dev);
    struct ibemu_msg_reset req;

    s->intx_level = false;  /* the PCI core lowers the line on reset */
    if (!s->ready || s->fd < 0) {
        return;
    }
    memset(&req, 0, sizeof(req));
    ibemu_fill_hdr(s, &req.hdr, IBEMU_MSG_RESET, sizeof(req));
    ibemu_send(s, &req, sizeof(req), -1);
}

/* The device state lives in the emulator, which cannot migrate. */
static const VMStateDescription ibemu_vmstate = {
    .name = TYPE_IBEMU_HCA,
    .unmigratable = 1,
};

static Property ibemu_properties[] = {
    DEFINE_PROP_STRING("socket", IbemuHcaState, socket_path),
    DEFINE_PROP_STRING("node", IbemuHcaState, node),
    DEFINE_PROP_UINT32("reply-timeout-ms", IbemuHcaState, reply_timeout_ms,
                       30000),
    DEFINE_PROP_END_OF_LIST(),
};

static void ibemu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = ibemu_realize;
    k->exit = ibemu_exit;
    k->config_read = ibemu_config_read;
    k->config_write = ibemu_config_write;
    /* a placeholder: the real identity comes from the emulator at realize */
    k->class_id = PCI_CLASS_OTHERS;

    dc->desc = "InfiniBand HCA modelled by the ibemu emulator";
    dc->reset = ibemu_reset;
    dc->vmsd = &ibemu_vmstate;
    device_class_set_props(dc, ibemu_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo ibemu_info = {
    .name = TYPE_IBEMU_HCA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(IbemuHcaState),
    .class_init = ibemu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void ibemu_register_types(void)
{
    type_register_static(&ibemu_info);
}

type_init(ibemu_register_types)
