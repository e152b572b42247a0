// SPDX-License-Identifier: GPL-2.0
//
// End-to-end tests of the carrier: the test plays a QEMU shim over a real
// unix socket, with a real sealed memfd as guest RAM, against a Server
// running in a thread.
#include "server/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "hca/config_space.h"
#include "hca/mthca.h"
#include "server/proto.h"
#include "madhost/umad_proto.h"
#include "ib/mad.h"

namespace ibemu {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t kRam = 16 * MiB;

// The PCI identity of the test devices here: the HCA's, with one 64 KiB BAR
// and four MSI-X vectors.
PciIdentity scratch_identity()
{
    PciIdentity id = mthca::build_identity();
    id.bars = {};
    id.bars[0] = {64 * 1024, false, false};
    id.msix_vectors = 4;
    id.msix_table_offset = 0x8000;
    id.msix_pba_offset = 0x9000;
    return id;
}

// A tiny device for testing the carrier's plumbing where the HCA model has
// no simple register to play with: a scratch register, and a "DMA" register
// that writes a value into guest RAM and fires an MSI-X vector.
class ScratchDevice final : public PciFunction {
public:
    ScratchDevice(GuestMemory& mem, InterruptSink& irq) : mem_(mem), irq_(irq)
    {
        id_ = scratch_identity();
    }
    const PciIdentity& identity() const override { return id_; }
    uint32_t config_read(unsigned off, unsigned) override { return off; }
    void config_write(unsigned, unsigned, uint32_t) override {}
    uint64_t mmio_read(unsigned, uint64_t off, unsigned) override
    {
        if (off == 0x0)
            return scratch_;
        if (off == 0x18)
            return dma_ok_;
        if (off == 0x20)
            return writes_;
        return 0xdead;
    }
    void mmio_write(unsigned, uint64_t off, unsigned, uint64_t value) override
    {
        ++writes_;
        if (off == 0x0)
            scratch_ = value;
        else if (off == 0x8)
            dma_addr_ = value;
        else if (off == 0x10) {
            dma_ok_ = mem_.write(dma_addr_, &value, sizeof(value));
            irq_.msix(1);
        } else if (off == 0x28)
            irq_.intx(value != 0);
    }
    void reset() override { scratch_ = 0; }
    uint64_t poll(uint64_t) override { return UINT64_MAX; }

private:
    GuestMemory& mem_;
    InterruptSink& irq_;
    PciIdentity id_;
    uint64_t scratch_ = 0, dma_addr_ = 0, dma_ok_ = 0, writes_ = 0;
};

// The test's end of one connection: what QEMU's ibemu-hca does.
class FakeShim {
public:
    explicit FakeShim(const std::string& path)
    {
        fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strcpy(sa.sun_path, path.c_str());
        EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << strerror(errno);
        memfd_ = memfd_create("guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        EXPECT_EQ(ftruncate(memfd_, kRam), 0);
        EXPECT_EQ(fcntl(memfd_, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
    }
    ~FakeShim()
    {
        close(fd_);
        close(memfd_);
    }

    ibemu_msg_hello hello(const char* node)
    {
        ibemu_msg_hello h;
        shim::set_header(h, IBEMU_MSG_HELLO, tag_++);
        h.magic = IBEMU_SHIM_MAGIC;
        h.version = IBEMU_SHIM_VERSION;
        std::strncpy(h.node, node, sizeof(h.node) - 1);
        h.nregions = 1;
        h.regions[0] = {0, kRam, 0};
        return h;
    }

    void send_raw(const void* p, size_t len, int pass_fd = -1)
    {
        iovec iov{const_cast<void*>(p), len};
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (pass_fd >= 0) {
            mh.msg_control = ctl;
            mh.msg_controllen = sizeof(ctl);
            cmsghdr* c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        }
        ASSERT_EQ(sendmsg(fd_, &mh, MSG_NOSIGNAL), ssize_t(len));
    }

    // Sends HELLO with the memfd and returns the WELCOME.
    ibemu_msg_welcome connect_as(const char* node)
    {
        auto h = hello(node);
        send_raw(&h, sizeof(h), memfd_);
        ibemu_msg_welcome w{};
        EXPECT_TRUE(recv_msg(&w, sizeof(w)));
        EXPECT_EQ(w.hdr.type, IBEMU_MSG_WELCOME);
        EXPECT_EQ(w.hdr.tag, h.hdr.tag);
        return w;
    }

    // Reads exactly one message of len bytes. False on EOF/timeout.
    bool recv_msg(void* out, size_t len)
    {
        auto* p = static_cast<uint8_t*>(out);
        size_t got = 0;
        while (got < len) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, 5000) <= 0)
                return false;
            ssize_t n = recv(fd_, p + got, len - got, 0);
            if (n <= 0)
                return false;
            got += size_t(n);
        }
        return true;
    }

    ibemu_shim_hdr recv_hdr_and_body(std::vector<uint8_t>* body)
    {
        ibemu_shim_hdr h{};
        EXPECT_TRUE(recv_msg(&h, sizeof(h)));
        body->assign(reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h) + sizeof(h));
        if (h.length > sizeof(h) && h.length < 4096) {
            body->resize(h.length);
            EXPECT_TRUE(recv_msg(body->data() + sizeof(h), h.length - sizeof(h)));
        }
        return h;
    }

    // The server closed this connection: EOF within the timeout.
    bool closed_by_peer()
    {
        for (;;) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, 5000) <= 0)
                return false;
            char buf[4096];
            ssize_t n = recv(fd_, buf, sizeof(buf), 0);
            if (n == 0 || (n < 0 && errno == ECONNRESET))
                return true;
            if (n < 0)
                return false;
        }
    }

    void cfg_write(uint16_t off, uint8_t size, uint32_t value)
    {
        ibemu_msg_cfg_write m;
        shim::set_header(m, IBEMU_MSG_CFG_WRITE, tag_++);
        m.offset = off;
        m.size = size;
        m.value = value;
        send_raw(&m, sizeof(m));
    }
    uint32_t cfg_read(uint16_t off, uint8_t size)
    {
        ibemu_msg_cfg_read m;
        shim::set_header(m, IBEMU_MSG_CFG_READ, tag_++);
        m.offset = off;
        m.size = size;
        send_raw(&m, sizeof(m));
        ibemu_msg_cfg_read_reply r{};
        EXPECT_TRUE(recv_msg(&r, sizeof(r)));
        EXPECT_EQ(r.hdr.type, IBEMU_MSG_CFG_READ_REPLY);
        EXPECT_EQ(r.hdr.tag, m.hdr.tag);
        return r.value;
    }
    void mmio_write(uint8_t bar, uint64_t off, uint8_t size, uint64_t value)
    {
        ibemu_msg_mmio_write m;
        shim::set_header(m, IBEMU_MSG_MMIO_WRITE, tag_++);
        m.bar = bar;
        m.offset = off;
        m.size = size;
        m.value = value;
        send_raw(&m, sizeof(m));
    }
    // Sends an MMIO read; interrupt messages that come before the reply are
    // collected in irqs (as they would be handled by the shim's wait loop).
    uint64_t mmio_read(uint8_t bar, uint64_t off, uint8_t size, std::vector<std::vector<uint8_t>>* irqs = nullptr)
    {
        ibemu_msg_mmio_read m;
        shim::set_header(m, IBEMU_MSG_MMIO_READ, tag_++);
        m.bar = bar;
        m.offset = off;
        m.size = size;
        send_raw(&m, sizeof(m));
        for (;;) {
            std::vector<uint8_t> body;
            ibemu_shim_hdr h = recv_hdr_and_body(&body);
            if (h.type == IBEMU_MSG_MMIO_READ_REPLY) {
                EXPECT_EQ(h.tag, m.hdr.tag);
                return shim::decode<ibemu_msg_mmio_read_reply>(body.data()).value;
            }
            if (h.type != IBEMU_MSG_MSIX && h.type != IBEMU_MSG_INTX) {
                ADD_FAILURE() << "unexpected message type " << h.type;
                return 0;
            }
            if (irqs)
                irqs->push_back(body);
        }
    }

    int fd() const { return fd_; }
    int memfd() const { return memfd_; }

private:
    int fd_ = -1;
    int memfd_ = -1;
    uint32_t tag_ = 100;
};

// A device with one IB port, for the carrier's fault boundary: MMIO write
// at 0x30 transmits a packet on its port; a packet that reaches a device
// made with `throws` makes its model throw (a model bug, bad_alloc...).
class PortDevice final : public PciFunction, public MthcaPorts {
public:
    explicit PortDevice(bool throws) : ep_(*this), throws_(throws)
    {
        id_ = scratch_identity();
    }
    const PciIdentity& identity() const override { return id_; }
    uint32_t config_read(unsigned off, unsigned) override { return off; }
    void config_write(unsigned, unsigned, uint32_t) override {}
    uint64_t mmio_read(unsigned, uint64_t off, unsigned) override { return off == 0 ? rx_ : 0x77; }
    void mmio_write(unsigned, uint64_t off, unsigned, uint64_t) override
    {
        if (off != 0x30 || !wire_)
            return;
        Packet p;
        p.hdr.fill(0);
        p.hdr[1] = 2;  // LRH, LNH = IBA local
        p.hdr_len = 20;
        wire_->transmit(p);
    }
    void reset() override {}
    uint64_t poll(uint64_t) override { return UINT64_MAX; }
    unsigned num_ports() const override { return 1; }
    PortEndpoint& endpoint(unsigned) override { return ep_; }
    void attach(unsigned, Wire* w) override { wire_ = w; }
    void raise_catas(uint32_t) override {}
    // Distinct numbers in every field, to see each reach `show traps`.
    TrapCounters trap_counters(unsigned port) const override
    {
        TrapCounters t;
        if (port != 1)
            return t;
        for (unsigned k = 0; k < TrapCounters::kKinds; ++k)
            t.sent[k] = 10 + k;
        t.repressed = 20;
        t.given_up = 30;
        t.held = 40;
        return t;
    }

private:
    struct Ep final : PortEndpoint {
        explicit Ep(PortDevice& d) : d_(d) {}
        void receive(const Packet&) override
        {
            ++d_.rx_;
            if (d_.throws_)
                throw std::runtime_error("model bug on receive");
        }
        void link_changed(bool, const LinkParams&) override {}
        PortDevice& d_;
    };
    PciIdentity id_;
    Ep ep_;
    bool throws_;
    Wire* wire_ = nullptr;
    uint64_t rx_ = 0;
};

class ServerTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/ibemu-server-test.XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir_ = tmpl;
        path_ = dir_ + "/ibemu.sock";
    }
    void start(DeviceFactory factory = nullptr, std::string fabric = "")
    {
        ServerOptions o;
        o.socket_path = path_;
        o.fabric = std::move(fabric);
        if (!o.fabric.empty())
            o.control_path = ctl_path();
        o.node_guids["fixed"] = 0x0002c90300000042ull;
        o.device_factory = std::move(factory);
        if (hca_ports_)
            o.hca_ports = hca_ports_;
        server_ = std::make_unique<Server>(o);
        std::string err;
        ASSERT_TRUE(server_->listen(&err)) << err;
        thread_ = std::thread([this] { rc_ = server_->run(); });
    }
    void TearDown() override
    {
        if (server_) {
            server_->stop();
            thread_.join();
            EXPECT_EQ(rc_, 0);
            server_.reset();
            struct stat st;
            EXPECT_NE(lstat(path_.c_str(), &st), 0) << "the socket is unlinked when the server goes";
            EXPECT_NE(lstat(ctl_path().c_str(), &st), 0) << "so is the control socket";
        }
        rmdir(dir_.c_str());
    }
    static DeviceFactory ports(const std::string& thrower)
    {
        return [thrower](const MthcaConfig& cfg, GuestMemory&, InterruptSink&) -> std::unique_ptr<PciFunction> {
            return std::make_unique<PortDevice>(cfg.name == thrower);
        };
    }
    static DeviceFactory scratch()
    {
        return [](const MthcaConfig&, GuestMemory& mem, InterruptSink& irq) -> std::unique_ptr<PciFunction> {
            return std::make_unique<ScratchDevice>(mem, irq);
        };
    }

    std::string ctl_path() const { return dir_ + "/ctl.sock"; }

    // What ibemu-ctl does: one line to the control socket, the whole reply.
    std::string control(const std::string& line)
    {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strcpy(sa.sun_path, ctl_path().c_str());
        if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
            close(fd);
            return std::string("connect: ") + strerror(errno);
        }
        std::string l = line + "\n";
        EXPECT_EQ(send(fd, l.data(), l.size(), MSG_NOSIGNAL), ssize_t(l.size()));
        std::string reply;
        char buf[1024];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            reply.append(buf, size_t(n));
        close(fd);
        return reply;
    }

    // The state word of the one link in `show links` ("up", "waiting", "down").
    std::string link_state()
    {
        std::string r = control("show links");
        auto nl = r.find('\n');
        if (r.rfind("ok 1 links", 0) != 0 || nl == std::string::npos)
            return "bad reply: " + r;
        std::string line = r.substr(nl + 1);
        auto a = line.find(' ');
        auto b = line.find(' ', a + 1);
        return line.substr(a + 1, b - a - 1);
    }

    // Polls link_state() for up to 2 s; returns the last state seen.
    std::string wait_for_link(const std::string& want)
    {
        std::string got;
        for (int i = 0; i < 200 && (got = link_state()) != want; ++i)
            usleep(10000);
        return got;
    }

    // The state word of the link named `name` in `show links`, "" if none.
    std::string state_of(const std::string& name)
    {
        std::string r = control("show links");
        for (size_t at = r.find('\n'); at != std::string::npos; at = r.find('\n', at + 1))
            if (r.compare(at + 1, name.size() + 1, name + " ") == 0) {
                size_t a = at + 1 + name.size() + 1;
                return r.substr(a, r.find(' ', a) - a);
            }
        return "";
    }
    std::string wait_for(const std::string& name, const std::string& want)
    {
        std::string got;
        for (int i = 0; i < 200 && (got = state_of(name)) != want; ++i)
            usleep(10000);
        return got;
    }

    std::string dir_, path_;
    std::unique_ptr<Server> server_;
    std::thread thread_;
    int rc_ = -1;
    unsigned hca_ports_ = 0;  // 0: the server's default
};

TEST_F(ServerTest, WelcomeCarriesTheRealHcaIdentity)
{
    start();
    FakeShim s(path_);
    auto w = s.connect_as("n0");
    ASSERT_EQ(w.status, IBEMU_WELCOME_OK) << w.text;
    EXPECT_EQ(w.version, IBEMU_SHIM_VERSION);
    EXPECT_EQ(w.config[0] | (w.config[1] << 8), 0x15b3);
    EXPECT_EQ(w.config[2] | (w.config[3] << 8), 0x6282);
    EXPECT_EQ(w.bars[0].size, 1 * MiB);
    EXPECT_TRUE(w.bars[0].flags & IBEMU_BAR_64BIT);
    EXPECT_GT(w.msix_vectors, 0);
    EXPECT_GE(w.msix_cap_offset, 0x40);
}

TEST_F(ServerTest, ConfigWritesReachTheRealHca)
{
    start();
    FakeShim s(path_);
    ASSERT_EQ(s.connect_as("n0").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(s.cfg_read(0x00, 4), 0x628215b3u);
    EXPECT_EQ(s.cfg_read(0x04, 2) & 0x6u, 0u) << "memory and bus master off at power-on";
    s.cfg_write(0x04, 2, 0x0006);
    EXPECT_EQ(s.cfg_read(0x04, 2) & 0x6u, 0x6u);
    s.cfg_write(0x00, 4, 0xffffffff);  // read-only ids
    EXPECT_EQ(s.cfg_read(0x00, 4), 0x628215b3u);
}

TEST_F(ServerTest, RealHcaAnswersBarReads)
{
    start();
    FakeShim s(path_);
    ASSERT_EQ(s.connect_as("n0").status, IBEMU_WELCOME_OK);
    // a dword of the HCR; whatever the model answers, it comes back tagged
    s.mmio_read(0, 0x80698, 4);
    s.mmio_read(0, 0x80698, 4);
}

TEST_F(ServerTest, MmioRoundTripDmaAndInterrupts)
{
    start(scratch());
    FakeShim s(path_);
    auto w = s.connect_as("n0");
    ASSERT_EQ(w.status, IBEMU_WELCOME_OK);
    EXPECT_EQ(w.bars[0].size, 64 * 1024u);

    s.mmio_write(0, 0x0, 8, 0x0123456789abcdefull);
    EXPECT_EQ(s.mmio_read(0, 0x0, 8), 0x0123456789abcdefull);
    EXPECT_EQ(s.mmio_read(0, 0x0, 2), 0xcdefu) << "reads are cut to their size";

    // posted writes are applied in order before a later read
    for (int i = 0; i < 1000; ++i)
        s.mmio_write(0, 0x0, 4, uint64_t(i));
    EXPECT_EQ(s.mmio_read(0, 0x0, 4), 999u);

    // DMA lands in the memfd, and its interrupt comes before the read reply
    s.mmio_write(0, 0x8, 8, 0x3000);
    s.mmio_write(0, 0x10, 8, 0xfeedfacecafebeefull);
    std::vector<std::vector<uint8_t>> irqs;
    EXPECT_EQ(s.mmio_read(0, 0x18, 8, &irqs), 1u);
    ASSERT_EQ(irqs.size(), 1u);
    EXPECT_EQ(shim::decode<ibemu_msg_msix>(irqs[0].data()).hdr.type, IBEMU_MSG_MSIX);
    EXPECT_EQ(shim::decode<ibemu_msg_msix>(irqs[0].data()).vector, 1u);
    uint64_t v = 0;
    ASSERT_EQ(pread(s.memfd(), &v, 8, 0x3000), 8);
    EXPECT_EQ(v, 0xfeedfacecafebeefull);

    // DMA at the device's own BAR (or anywhere outside RAM) is refused
    s.mmio_write(0, 0x8, 8, 0xfe000000);
    s.mmio_write(0, 0x10, 8, 1);
    irqs.clear();
    EXPECT_EQ(s.mmio_read(0, 0x18, 8, &irqs), 0u);

    // INTx: only level changes travel
    s.mmio_write(0, 0x28, 4, 1);
    s.mmio_write(0, 0x28, 4, 1);
    s.mmio_write(0, 0x28, 4, 0);
    irqs.clear();
    s.mmio_read(0, 0x0, 4, &irqs);
    ASSERT_EQ(irqs.size(), 2u);
    EXPECT_EQ(shim::decode<ibemu_msg_intx>(irqs[0].data()).level, 1u);
    EXPECT_EQ(shim::decode<ibemu_msg_intx>(irqs[1].data()).level, 0u);
}

TEST_F(ServerTest, SyncIsAnsweredAfterWhatCameBefore)
{
    start(scratch());
    FakeShim s(path_);
    ASSERT_EQ(s.connect_as("n0").status, IBEMU_WELCOME_OK);
    s.mmio_write(0, 0x28, 4, 1);  // raise INTx
    ibemu_msg_sync m;
    shim::set_header(m, IBEMU_MSG_SYNC, 555);
    s.send_raw(&m, sizeof(m));
    std::vector<uint8_t> body;
    ibemu_shim_hdr h = s.recv_hdr_and_body(&body);
    EXPECT_EQ(h.type, IBEMU_MSG_INTX) << "the interrupt the write raised comes first";
    h = s.recv_hdr_and_body(&body);
    EXPECT_EQ(h.type, IBEMU_MSG_SYNC_REPLY);
    EXPECT_EQ(h.tag, 555u);
}

TEST_F(ServerTest, ResetReachesTheDevice)
{
    start(scratch());
    FakeShim s(path_);
    ASSERT_EQ(s.connect_as("n0").status, IBEMU_WELCOME_OK);
    s.mmio_write(0, 0x0, 4, 77);
    ibemu_msg_reset r;
    shim::set_header(r, IBEMU_MSG_RESET, 1);
    s.send_raw(&r, sizeof(r));
    EXPECT_EQ(s.mmio_read(0, 0x0, 4), 0u);
}

TEST_F(ServerTest, DuplicateNodeNamesAreRefusedWhileConnected)
{
    start();
    auto a = std::make_unique<FakeShim>(path_);
    ASSERT_EQ(a->connect_as("n0").status, IBEMU_WELCOME_OK);
    {
        FakeShim b(path_);
        auto w = b.connect_as("n0");
        EXPECT_EQ(w.status, IBEMU_WELCOME_DUPLICATE_NODE);
        EXPECT_NE(std::string(w.text).find("n0"), std::string::npos) << w.text;
        EXPECT_TRUE(b.closed_by_peer());
    }
    FakeShim c(path_);
    EXPECT_EQ(c.connect_as("n1").status, IBEMU_WELCOME_OK);
    a.reset();  // n0 goes away; its name is free again
    FakeShim d(path_);
    EXPECT_EQ(d.connect_as("n0").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(server_->guid_for("fixed"), 0x0002c90300000042ull);
    EXPECT_EQ(server_->guid_for("n0"), derive_node_guid("n0"));
}

TEST_F(ServerTest, VersionMismatchIsRefusedWithAReason)
{
    start();
    FakeShim s(path_);
    auto h = s.hello("n0");
    h.version = IBEMU_SHIM_VERSION + 1;
    s.send_raw(&h, sizeof(h), s.memfd());
    ibemu_msg_welcome w{};
    ASSERT_TRUE(s.recv_msg(&w, sizeof(w)));
    EXPECT_EQ(w.status, IBEMU_WELCOME_BAD_VERSION);
    EXPECT_EQ(w.version, IBEMU_SHIM_VERSION);
    EXPECT_NE(std::string(w.text).find("version"), std::string::npos) << w.text;
    EXPECT_TRUE(s.closed_by_peer());
}

TEST_F(ServerTest, HelloWithoutMemfdOrWithBadMagicIsRefused)
{
    start();
    {
        FakeShim s(path_);
        auto h = s.hello("n0");
        s.send_raw(&h, sizeof(h));  // no fd
        ibemu_msg_welcome w{};
        ASSERT_TRUE(s.recv_msg(&w, sizeof(w)));
        EXPECT_EQ(w.status, IBEMU_WELCOME_BAD_HELLO);
        EXPECT_TRUE(s.closed_by_peer());
    }
    {
        FakeShim s(path_);
        auto h = s.hello("n0");
        h.magic = 0x12345678;
        s.send_raw(&h, sizeof(h), s.memfd());
        ibemu_msg_welcome w{};
        ASSERT_TRUE(s.recv_msg(&w, sizeof(w)));
        EXPECT_EQ(w.status, IBEMU_WELCOME_BAD_MAGIC);
    }
    {
        FakeShim s(path_);
        auto h = s.hello("n0");
        h.regions[0].size = 2 * kRam;  // more RAM than the memfd has
        s.send_raw(&h, sizeof(h), s.memfd());
        ibemu_msg_welcome w{};
        ASSERT_TRUE(s.recv_msg(&w, sizeof(w)));
        EXPECT_EQ(w.status, IBEMU_WELCOME_BAD_HELLO);
    }
}

// Each malformed input closes its own connection; the server and its other
// connections carry on.
TEST_F(ServerTest, MalformedMessagesCloseOnlyTheirConnection)
{
    start(scratch());
    FakeShim good(path_);
    ASSERT_EQ(good.connect_as("good").status, IBEMU_WELCOME_OK);
    good.mmio_write(0, 0, 4, 5);

    auto expect_closed = [&](const char* what, auto&& act) {
        FakeShim bad(path_);
        act(bad);
        EXPECT_TRUE(bad.closed_by_peer()) << what;
        EXPECT_EQ(good.mmio_read(0, 0, 4), 5u) << "after: " << what;
    };
    expect_closed("garbage", [](FakeShim& b) {
        uint8_t junk[64];
        std::memset(junk, 0xa5, sizeof(junk));
        b.send_raw(junk, sizeof(junk));
    });
    expect_closed("huge length", [](FakeShim& b) {
        ibemu_shim_hdr h{};
        h.type = IBEMU_MSG_MMIO_WRITE;
        h.length = 1u << 30;
        b.send_raw(&h, sizeof(h));
    });
    expect_closed("message before HELLO", [](FakeShim& b) { b.mmio_write(0, 0, 4, 1); });
    expect_closed("second HELLO", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("second").status, IBEMU_WELCOME_OK);
        auto h = b.hello("second");
        b.send_raw(&h, sizeof(h));
    });
    expect_closed("bad config size", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("cfg").status, IBEMU_WELCOME_OK);
        ibemu_msg_cfg_read m;
        shim::set_header(m, IBEMU_MSG_CFG_READ, 1);
        m.offset = 0xff;
        m.size = 4;
        b.send_raw(&m, sizeof(m));
    });
    expect_closed("unimplemented BAR", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("bar").status, IBEMU_WELCOME_OK);
        b.mmio_write(2, 0, 4, 1);
    });
    expect_closed("beyond the BAR", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("beyond").status, IBEMU_WELCOME_OK);
        b.mmio_write(0, 64 * 1024 - 2, 4, 1);
    });
    expect_closed("emulator-only message", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("msix").status, IBEMU_WELCOME_OK);
        ibemu_msg_msix m;
        shim::set_header(m, IBEMU_MSG_MSIX, 1);
        b.send_raw(&m, sizeof(m));
    });
    expect_closed("extra fd", [](FakeShim& b) {
        ASSERT_EQ(b.connect_as("fd").status, IBEMU_WELCOME_OK);
        ibemu_msg_reset r;
        shim::set_header(r, IBEMU_MSG_RESET, 1);
        b.send_raw(&r, sizeof(r), b.memfd());
    });
    expect_closed("truncated then EOF", [](FakeShim& b) {
        ibemu_msg_hello h = b.hello("trunc");
        b.send_raw(&h, 20, b.memfd());
        shutdown(b.fd(), SHUT_WR);
    });
    EXPECT_EQ(good.mmio_read(0, 0, 4), 5u);
}

TEST_F(ServerTest, ListenReplacesAStaleSocketOnly)
{
    // a stale socket from a crashed run
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, path_.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    close(fd);
    start();
    FakeShim s(path_);
    EXPECT_EQ(s.connect_as("n0").status, IBEMU_WELCOME_OK);

    // but never the socket of a live server
    {
        ServerOptions o;
        o.socket_path = path_;
        Server second(o);
        std::string err;
        EXPECT_FALSE(second.listen(&err));
        EXPECT_NE(err.find("another server"), std::string::npos) << err;
    }
    FakeShim again(path_);
    EXPECT_EQ(again.connect_as("n1").status, IBEMU_WELCOME_OK) << "the first server still owns its socket";

    std::string file = dir_ + "/plain";
    close(open(file.c_str(), O_CREAT | O_WRONLY, 0600));
    ServerOptions o;
    o.socket_path = file;
    Server other(o);
    std::string err;
    EXPECT_FALSE(other.listen(&err));
    EXPECT_NE(err.find("not a socket"), std::string::npos) << err;
    unlink(file.c_str());
}


// Two real HCAs cabled back to back by the fabric: with both guests
// connected the cable is plugged at both ends, but the link waits for
// carrier until a driver opens the ports (INIT_IB: the hca unit test
// QpEngine.LinkSurvivesDeviceReset); it follows the control socket, and
// one end detaches when its guest leaves.
TEST_F(ServerTest, FabricCablesHcaPortsAndObeysTheControlSocket)
{
    start(nullptr, "b2b");
    FakeShim a(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(wait_for_link("waiting"), "waiting") << "one end attached";
    {
        FakeShim b(path_);
        ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
        EXPECT_EQ(wait_for_link("no-carrier"), "no-carrier") << "ports nobody opened";
        EXPECT_EQ(control("link vm0:1 down").rfind("ok", 0), 0u);
        EXPECT_EQ(wait_for_link("down"), "down");
        EXPECT_EQ(control("link vm0:1 up").rfind("ok", 0), 0u);
        EXPECT_EQ(wait_for_link("no-carrier"), "no-carrier");
        EXPECT_EQ(control("link nosuch:1 down").rfind("error", 0), 0u);
        EXPECT_EQ(control("").rfind("error", 0), 0u);
    }
    EXPECT_EQ(wait_for_link("waiting"), "waiting") << "vm1 left: its end is detached";
}

// Two HCAs cabled back to back on both ports, as an ibnetdiscover file
// names them: vm0:1-vm1:1 and vm0:2-vm1:2.
const char kTwoCables[] = R"(Ca	2 "H-0002c90300000100"		# "vm0 HCA"
[1](2c90300000101) 	"H-0002c90300000200"[1](2c90300000201) 		# "vm1 HCA" lid 0 4xSDR
[2](2c90300000102) 	"H-0002c90300000200"[2](2c90300000202) 		# "vm1 HCA" lid 0 4xSDR

Ca	2 "H-0002c90300000200"		# "vm1 HCA"
[1](2c90300000201) 	"H-0002c90300000100"[1](2c90300000101) 		# "vm0 HCA" lid 0 4xSDR
[2](2c90300000202) 	"H-0002c90300000100"[2](2c90300000102) 		# "vm0 HCA" lid 0 4xSDR
)";

// With --hca-ports 2 every guest's HCA has two ports, as the MT25208 has, and the server
// cables port 2 where the topology does; `--hca-ports 1` keeps the old
// one-port HCA, whose port-2 cable then never gets an end.
TEST_F(ServerTest, GuestHcasHaveTwoPortsAndTheTopologyCablesPortTwo)
{
    std::string topo = dir_ + "/two.topo";
    {
        FILE* f = fopen(topo.c_str(), "we");
        ASSERT_TRUE(f);
        fputs(kTwoCables, f);
        fclose(f);
    }
    std::vector<unsigned> seen;  // cfg.num_ports of each model made
    auto counting = [&seen](const MthcaConfig& cfg, GuestMemory& mem, InterruptSink& irq) {
        seen.push_back(cfg.num_ports);
        return make_mthca(cfg, mem, irq);
    };
    hca_ports_ = 2;
    start(counting, topo);
    unlink(topo.c_str());
    ASSERT_EQ(state_of("vm0:2-vm1:2"), "waiting") << control("show links");
    FakeShim a(path_), b(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(wait_for("vm0:1-vm1:1", "no-carrier"), "no-carrier");
    EXPECT_EQ(wait_for("vm0:2-vm1:2", "no-carrier"), "no-carrier") << "both ends of the port-2 cable attached";
    EXPECT_EQ(seen, (std::vector<unsigned>{2, 2}));
    EXPECT_EQ(control("link vm0:2 down").rfind("ok", 0), 0u);
    EXPECT_EQ(wait_for("vm0:2-vm1:2", "down"), "down");
    EXPECT_EQ(state_of("vm0:1-vm1:1"), "no-carrier") << "port 1's cable is another link";
}

TEST_F(ServerTest, OnePortHcasLeaveThePortTwoCableUnplugged)
{
    std::string topo = dir_ + "/two.topo";
    {
        FILE* f = fopen(topo.c_str(), "we");
        ASSERT_TRUE(f);
        fputs(kTwoCables, f);
        fclose(f);
    }
    hca_ports_ = 1;
    start(nullptr, topo);
    unlink(topo.c_str());
    FakeShim a(path_), b(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(wait_for("vm0:1-vm1:1", "no-carrier"), "no-carrier");
    EXPECT_EQ(state_of("vm0:2-vm1:2"), "waiting");
}

// `catas <node>` fails that guest's HCA: its error buffer (BAR0 0x40800,
// big-endian) reads the syndrome; a device reset (the machine's, here)
// clears it. (The carrier side is the hca unit test
// QpEngine.CatastrophicErrorStopsTheChipUntilReset: these HCAs never
// opened their ports, so their links wait for carrier throughout.)
TEST_F(ServerTest, CatasFromTheControlSocketFailsTheGuestsHca)
{
    start(nullptr, "b2b");
    FakeShim a(path_), b(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(wait_for_link("no-carrier"), "no-carrier");
    EXPECT_EQ(a.mmio_read(0, 0x40800, 4), 0u);

    EXPECT_EQ(control("catas"), "error: usage: catas <node> [<syndrome>]\n");
    EXPECT_EQ(control("catas nosuch").rfind("error: no guest 'nosuch'", 0), 0u);
    for (const char* bad : {"catas vm0 0", "catas vm0 0x", "catas vm0 12z", "catas vm0 0x100000000"})
        EXPECT_EQ(control(bad).rfind("error: catas: ", 0), 0u) << bad;
    EXPECT_EQ(a.mmio_read(0, 0x40800, 4), 0u) << "a refused command changed nothing";

    EXPECT_EQ(control("catas vm0 0xdeadbeef"), "ok catastrophic error 0xdeadbeef raised on vm0\n");
    EXPECT_EQ(a.mmio_read(0, 0x40800, 4), __builtin_bswap32(0xdeadbeefu));
    EXPECT_EQ(b.mmio_read(0, 0x40800, 4), 0u) << "only vm0 failed";

    ibemu_msg_reset r;
    shim::set_header(r, IBEMU_MSG_RESET, 1);
    a.send_raw(&r, sizeof(r));
    EXPECT_EQ(a.mmio_read(0, 0x40800, 4), 0u);
    EXPECT_NE(control("help").find("catas <node>"), std::string::npos);
}

// `hca <node>` reports the guest's HCA transport counters (the VM tests'
// "zero transport retries"); `show drops` the fabric's link losses.
TEST_F(ServerTest, HcaAndDropCountersFromTheControlSocket)
{
    start(nullptr, "b2b");
    FakeShim a(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    EXPECT_EQ(control("hca vm0"), "ok retransmits 0\n");
    EXPECT_EQ(control("hca"), "error: usage: hca <node>\n");
    EXPECT_EQ(control("hca nosuch").rfind("error: no guest 'nosuch'", 0), 0u);
    EXPECT_EQ(control("show drops").rfind("ok drops 0 fault 0 overflow 0", 0), 0u) << control("show drops");
    EXPECT_NE(control("help").find("hca <node>"), std::string::npos);
}

// `show traps [<node>]`: each HCA port's trap counters, what the VM tests
// read instead of the log (vm.OursTraps). A model's HCA that never met an
// SM has sent nothing; the numbers of a device are passed through field by
// field.
TEST_F(ServerTest, TrapCountersFromTheControlSocket)
{
    start(nullptr, "b2b");
    FakeShim a(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    std::string r = control("show traps vm0");
    EXPECT_EQ(r.rfind("ok ", 0), 0u) << r;
    EXPECT_NE(r.find("\nvm0:1 sent 144:0 256:0 257:0 258:0 repressed 0 given_up 0 held 0"), std::string::npos) << r;
    EXPECT_EQ(control("show traps"), r) << "every guest: the only one";
    EXPECT_EQ(control("show traps nosuch").rfind("error: no guest 'nosuch'", 0), 0u);
    EXPECT_EQ(control("show traps vm0 extra"), "error: usage: show traps [<node>]\n");
    EXPECT_NE(control("help").find("show traps [<node>]"), std::string::npos);
}

TEST_F(ServerTest, TrapCountersOfEachGuestFromTheControlSocket)
{
    start(ports(""), "b2b");
    FakeShim a(path_), b(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
    const char* line = " sent 144:10 256:11 257:12 258:13 repressed 20 given_up 30 held 40";
    EXPECT_EQ(control("show traps vm1"), std::string("ok 1 ports\nvm1:1") + line + "\n");
    std::string all = control("show traps");
    EXPECT_EQ(all.rfind("ok 2 ports\n", 0), 0u) << all;
    EXPECT_NE(all.find(std::string("\nvm0:1") + line + "\n"), std::string::npos) << all;
    EXPECT_NE(all.find(std::string("\nvm1:1") + line + "\n"), std::string::npos) << all;
}

TEST_F(ServerTest, BadFabricSpecIsRefusedAtListen)
{
    ServerOptions o;
    o.socket_path = path_;
    o.fabric = "no-such-topology-or-spec";
    Server s(o);
    std::string err;
    EXPECT_FALSE(s.listen(&err));
    EXPECT_NE(err.find("no-such-topology-or-spec"), std::string::npos) << err;
}

// Review 2.2 item 10: a packet from guest A's transmit reaches guest B's
// model inside A's MMIO write. If B's model throws, B's connection is the
// one closed (the fault is caught at B's port); A goes on.
TEST_F(ServerTest, AModelFaultOnReceiveClosesOnlyThatGuest)
{
    start(ports("vm1"), "b2b");
    FakeShim a(path_), b(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(b.connect_as("vm1").status, IBEMU_WELCOME_OK);
    ASSERT_EQ(wait_for_link("up"), "up");
    a.mmio_write(0, 0x30, 8, 1);  // A transmits; B's model throws on it
    EXPECT_EQ(a.mmio_read(0, 0x8, 8), 0x77u) << "A is still served";
    EXPECT_TRUE(b.closed_by_peer()) << "B, whose model failed, is closed";
    EXPECT_EQ(wait_for_link("waiting"), "waiting") << "B's end is detached";
    a.mmio_write(0, 0x30, 8, 1);  // into a detached link: dropped, no harm
    EXPECT_EQ(a.mmio_read(0, 0x8, 8), 0x77u);
    EXPECT_EQ(server_->connections(), 1u);
}

// Review 2.2 item 11: a control client that trickles its command a byte at
// a time must not hold up the guests: the loop serves shims meanwhile, and
// the client still gets its answer once its line is complete.
TEST_F(ServerTest, SlowControlClientDoesNotStallGuests)
{
    start(scratch(), "b2b");
    FakeShim a(path_);
    ASSERT_EQ(a.connect_as("vm0").status, IBEMU_WELCOME_OK);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, ctl_path().c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    const std::string cmd = "show links\n";
    std::thread trickle([&] {
        for (char ch : cmd) {
            usleep(200000);
            EXPECT_EQ(send(fd, &ch, 1, MSG_NOSIGNAL), 1);
        }
    });
    // While the client is typing (2.2 s), every MMIO round trip is quick.
    double worst = 0;
    auto t_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1800);
    unsigned rounds = 0;
    while (std::chrono::steady_clock::now() < t_end) {
        auto t0 = std::chrono::steady_clock::now();
        a.mmio_write(0, 0x0, 8, rounds);
        EXPECT_EQ(a.mmio_read(0, 0x0, 8), rounds);
        worst = std::max(worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        ++rounds;
        usleep(20000);
    }
    trickle.join();
    EXPECT_LT(worst, 0.15) << "slowest MMIO round trip while a control client trickled, s";
    RecordProperty("worst_round_trip_ms", std::to_string(int(worst * 1000)));
    std::string reply;
    char buf[1024];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        reply.append(buf, size_t(n));
    close(fd);
    EXPECT_EQ(reply.rfind("ok 1 links", 0), 0u) << reply;
}

// With --umad, the topology's HCAs are stub CAs until a guest claims one:
// a host tool on the endpoint sees the stub, then the guest's HCA (whose
// port is closed here: no answer), then the stub again once the guest left.
TEST(ServerScale, StubsServeTheTopologyUntilAGuestTakesItsPort)
{
    char tmpl[] = "/tmp/ibemu-server-scale.XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    std::string dir = tmpl;
    ServerOptions o;
    o.socket_path = dir + "/ibemu.sock";
    o.fabric = "star:3";
    o.umad_path = dir + "/umad.sock";
    o.umad_node = "vm0";
    auto server = std::make_unique<Server>(o);
    std::string err;
    ASSERT_TRUE(server->listen(&err)) << err;
    int rc = -1;
    std::thread t([&] { rc = server->run(); });

    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, o.umad_path.c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    madhost::UmadCtl reg;
    reg.op = madhost::CtlOp::Register;
    reg.mgmt_class = ib::mad::kClassSubnDirected;
    reg.class_version = 1;
    ASSERT_EQ(send(fd, &reg, sizeof reg, 0), ssize_t(sizeof reg));
    // DR Get(NodeDescription) to vm2 (switch port 3); returns the reply's
    // description, "" for a timeout.
    auto ask_vm2 = [&](uint32_t tid) {
        uint8_t b[madhost::kHdrSize + madhost::kMadSize] = {};
        uint32_t timeout = 300;
        std::memcpy(b + 8, &timeout, 4);
        uint8_t* m = b + madhost::kHdrSize;
        m[0] = 1;
        m[1] = ib::mad::kClassSubnDirected;
        m[2] = 1;
        m[3] = ib::mad::kMethodGet;
        m[15] = uint8_t(tid);
        m[17] = ib::smp::kAttrNodeDesc;
        m[7] = 2;                       // hop count
        m[32] = m[33] = m[34] = m[35] = 0xff;  // DrSLID, DrDLID permissive
        m[ib::smp::kInitialPathOffset + 1] = 1;
        m[ib::smp::kInitialPathOffset + 2] = 3;
        EXPECT_EQ(send(fd, b, sizeof b, 0), ssize_t(sizeof b));
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 3000) != 1 || recv(fd, b, sizeof b, 0) != ssize_t(sizeof b))
            return std::string("(nothing)");
        uint32_t status;
        std::memcpy(&status, b + 4, 4);
        if (status)
            return std::string("");
        return std::string(reinterpret_cast<const char*>(m + ib::smp::kDataOffset));
    };
    EXPECT_EQ(ask_vm2(1), "vm2");
    {
        FakeShim guest(o.socket_path);
        EXPECT_EQ(guest.connect_as("vm2").status, IBEMU_WELCOME_OK);
        EXPECT_EQ(ask_vm2(2), "") << "the guest's HCA holds the port now (and its port is not open)";
    }
    // The guest is gone; give the server a moment to notice.
    std::string again;
    for (int i = 0; i < 20 && again != "vm2"; ++i)
        again = ask_vm2(uint32_t(3 + i));
    EXPECT_EQ(again, "vm2");
    close(fd);
    server->stop();
    t.join();
    EXPECT_EQ(rc, 0);
    server.reset();
    rmdir(dir.c_str());
}

}  // namespace
}  // namespace ibemu
