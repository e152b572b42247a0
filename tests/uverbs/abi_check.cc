// SPDX-License-Identifier: GPL-2.0
// The seed of the ib_uverbs ABI tester (issue 10): drives
// /dev/infiniband/uverbs0 through write() and ioctl() directly, one case
// per line "<case>: <result>", where the result is "ok" or the errno name.
// The VM test runs it on our stack and on upstream's and compares the
// lines, so every case is checked against what the 6.1 kernel answers.
// Exit status 0 unless the device cannot be opened at all.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string Result(ssize_t r, size_t want)
{
	if (r < 0)
		return strerrorname_np(errno);
	return size_t(r) == want ? "ok" : "short write " + std::to_string(r);
}

// One write() of header + payload; sizes in bytes, as the header wants them
// in 4-byte words unless the caller overrides in_words.
ssize_t Cmd(int fd, uint32_t cmd, const void *payload, size_t len, size_t out_bytes, int in_words = -1)
{
	std::vector<uint8_t> buf(sizeof(ib_uverbs_cmd_hdr) + len);
	ib_uverbs_cmd_hdr h{};
	h.command = cmd;
	h.in_words = in_words >= 0 ? uint16_t(in_words) : uint16_t(buf.size() / 4);
	h.out_words = uint16_t(out_bytes / 4);
	memcpy(buf.data(), &h, sizeof h);
	if (len)
		memcpy(buf.data() + sizeof h, payload, len);
	return write(fd, buf.data(), buf.size());
}

void Report(const char *name, const std::string &r) { printf("%s: %s\n", name, r.c_str()); }

}  // namespace

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/infiniband/uverbs0";
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return 1;
	}

	// The ioctl probe of libibverbs: no ioctl() method at all.
	{
		uint8_t hdr[24] = {};
		int r = ioctl(fd, _IOWR(0x1b, 1, uint8_t[24]), hdr);
		Report("ioctl probe", r < 0 ? strerrorname_np(errno) : "ok");
	}
	// Framing.
	{
		uint32_t w = 0;
		Report("write of 4 bytes", Result(write(fd, &w, sizeof w), sizeof w));
	}
	{
		ib_uverbs_query_device_resp resp;
		ib_uverbs_query_device c{};
		c.response = uintptr_t(&resp);
		Report("in_words too large", Result(Cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof c,
							sizeof resp, 10),
						    0));
		Report("QUERY_DEVICE before GET_CONTEXT",
		       Result(Cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof c, sizeof resp), 0));
	}
	Report("unknown command 200", Result(Cmd(fd, 200, nullptr, 0, 0), 0));
	{
		uint64_t ex[3] = {};
		Report("unknown extended command", Result(Cmd(fd, IB_USER_VERBS_CMD_FLAG_EXTENDED | 0x7f, ex,
							      sizeof ex, 0),
							  0));
	}

	// A context (the async fd comes back), then the commands on it.
	// Core response, then mthca's (mthca_alloc_ucontext_resp, 8 bytes).
	alignas(8) uint8_t ctx_buf[sizeof(ib_uverbs_get_context_resp) + 8] = {};
	auto &ctx = *reinterpret_cast<ib_uverbs_get_context_resp *>(ctx_buf);
	ib_uverbs_get_context gc{};
	gc.response = uintptr_t(ctx_buf);
	Report("GET_CONTEXT", Result(Cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &gc, sizeof gc, sizeof ctx_buf),
				     sizeof(ib_uverbs_cmd_hdr) + sizeof gc));
	Report("async fd is open", ctx.async_fd > 2 && fcntl(int(ctx.async_fd), F_GETFD) >= 0 ? "ok" : "no");
	Report("GET_CONTEXT twice", Result(Cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &gc, sizeof gc, sizeof ctx_buf), 0));
	{
		ib_uverbs_query_device_resp resp;
		ib_uverbs_query_device c{};
		c.response = uintptr_t(&resp);
		Report("QUERY_DEVICE with short response room",
		       Result(Cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &c, sizeof c, sizeof resp - 8), 0));
	}
	{
		ib_uverbs_query_port_resp resp;
		ib_uverbs_query_port c{};
		c.response = uintptr_t(&resp);
		c.port_num = 2;
		Report("QUERY_PORT port 2", Result(Cmd(fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof c, sizeof resp), 0));
		c.port_num = 1;
		c.reserved[0] = 1;
		Report("QUERY_PORT with reserved set",
		       Result(Cmd(fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof c, sizeof resp),
			      sizeof(ib_uverbs_cmd_hdr) + sizeof c));
	}
	{
		// Core response, then mthca's (mthca_alloc_pd_resp, 8 bytes).
		alignas(8) uint8_t pd_buf[sizeof(ib_uverbs_alloc_pd_resp) + 8] = {};
		auto &pd = *reinterpret_cast<ib_uverbs_alloc_pd_resp *>(pd_buf);
		ib_uverbs_alloc_pd c{};
		c.response = uintptr_t(pd_buf);
		Report("ALLOC_PD", Result(Cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, sizeof pd_buf),
					  sizeof(ib_uverbs_cmd_hdr) + sizeof c));
		ib_uverbs_dealloc_pd d{};
		d.pd_handle = pd.pd_handle;
		Report("DEALLOC_PD", Result(Cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &d, sizeof d, 0),
					    sizeof(ib_uverbs_cmd_hdr) + sizeof d));
		Report("DEALLOC_PD twice", Result(Cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &d, sizeof d, 0), 0));
		d.pd_handle = 12345;
		Report("DEALLOC_PD of no handle", Result(Cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &d, sizeof d, 0), 0));
		// A PD left for close to clean up.
		Report("ALLOC_PD left open", Result(Cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof c, sizeof pd_buf),
						    sizeof(ib_uverbs_cmd_hdr) + sizeof c));
	}
	// The async fd: nothing queued, non-blocking read says so.
	{
		int afd = int(ctx.async_fd);
		fcntl(afd, F_SETFL, O_NONBLOCK);
		ib_uverbs_async_event_desc e;
		Report("async read, short buffer", read(afd, &e, 8) < 0 ? strerrorname_np(errno) : "ok");
		Report("async read, nothing queued", read(afd, &e, sizeof e) < 0 ? strerrorname_np(errno) : "ok");
		close(afd);
	}
	close(fd);
	return 0;
}
