// SPDX-License-Identifier: GPL-2.0
// umad_rate: MAD round trips per second through /dev/infiniband/umad*,
// with libibumad, one request in flight at a time. Runs inside a guest
// (the host's build tree is visible there at the same path).
//
//   umad_rate smp <lid> <seconds>   SubnGet(NodeInfo), LID-routed, to <lid>
//   umad_rate sa <dlid> <seconds>   SubnAdmGet(PathRecord) from this port
//                                   to <dlid>, sent to the port's SM
//
// Prints one line "<kind> rate=<round trips/s> ok=<n> errors=<n>" and
// exits 0 if at least one round trip succeeded and none failed.
#include <infiniband/umad.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kMadBytes = 256;
constexpr uint8_t kClassSmiLid = 0x01, kClassSa = 0x03;
constexpr uint8_t kMethodGet = 0x01, kMethodGetResp = 0x81;
constexpr uint16_t kAttrNodeInfo = 0x0011, kAttrPathRecord = 0x0035;
constexpr uint32_t kQp1Qkey = 0x80010000;

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (24 - 8 * i);
}

void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (56 - 8 * i);
}

uint16_t get16(const uint8_t *p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

uint32_t get32(const uint8_t *p)
{
	return static_cast<uint32_t>(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

[[noreturn]] void die(const std::string &what)
{
	fprintf(stderr, "umad_rate: %s\n", what.c_str());
	exit(2);
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 4)
		die("usage: umad_rate smp|sa <lid> <seconds>");
	const std::string kind = argv[1];
	const int target = atoi(argv[2]);
	const int seconds = atoi(argv[3]);
	if ((kind != "smp" && kind != "sa") || target <= 0 || target >= 0xc000 || seconds <= 0)
		die("bad arguments");

	if (umad_init() < 0)
		die("umad_init failed");
	umad_port_t port;
	if (umad_get_port(nullptr, 0, &port) < 0)
		die("no umad port");
	const int my_lid = port.base_lid, sm_lid = port.sm_lid;
	const std::string ca = port.ca_name;
	const int portnum = port.portnum;
	umad_release_port(&port);
	if (kind == "sa" && !sm_lid)
		die("the port knows no SM");

	int fd = umad_open_port(const_cast<char *>(ca.c_str()), portnum);
	if (fd < 0)
		die("umad_open_port " + ca + " failed");
	const bool sa = kind == "sa";
	int agent = umad_register(fd, sa ? kClassSa : kClassSmiLid, sa ? 2 : 1, 0, nullptr);
	if (agent < 0)
		die("umad_register failed");

	std::vector<uint8_t> sbuf(umad_size() + kMadBytes), rbuf(umad_size() + kMadBytes);
	void *snd = sbuf.data(), *rcv = rbuf.data();
	auto *mad = static_cast<uint8_t *>(umad_get_mad(snd));
	auto *resp = static_cast<uint8_t *>(umad_get_mad(rcv));

	unsigned long ok = 0, errors = 0;
	uint32_t tid = 1;
	const auto start = std::chrono::steady_clock::now();
	const auto end = start + std::chrono::seconds(seconds);
	auto now = start;
	while (now < end) {
		memset(mad, 0, kMadBytes);
		mad[0] = 1;  // base version
		mad[1] = sa ? kClassSa : kClassSmiLid;
		mad[2] = sa ? 2 : 1;
		mad[3] = kMethodGet;
		put32(mad + 12, ++tid);  // the kernel owns the upper half of the TID
		if (sa) {
			put16(mad + 16, kAttrPathRecord);
			put64(mad + 48, (1u << 4) | (1u << 5));  // ComponentMask: DLID, SLID
			put16(mad + 56 + 40, static_cast<uint16_t>(target));
			put16(mad + 56 + 42, static_cast<uint16_t>(my_lid));
			umad_set_addr(snd, sm_lid, 1, 0, kQp1Qkey);
		} else {
			put16(mad + 16, kAttrNodeInfo);
			umad_set_addr(snd, target, 0, 0, 0);
		}
		if (umad_send(fd, agent, snd, kMadBytes, 2000, 2) < 0)
			die("umad_send failed");
		int len = kMadBytes;
		int got = umad_recv(fd, rcv, &len, 10000);
		now = std::chrono::steady_clock::now();
		if (got != agent || umad_status(rcv) != 0 || resp[3] != kMethodGetResp || get32(resp + 12) != tid ||
		    get16(resp + 4) != 0) {
			errors++;
			fprintf(stderr, "umad_rate: bad response (recv %d, status %d, method 0x%x, MAD status 0x%x)\n",
				got, umad_status(rcv), resp[3], get16(resp + 4));
			if (errors > 10)
				break;
			continue;
		}
		ok++;
	}
	double secs = std::chrono::duration<double>(now - start).count();
	printf("%s rate=%.1f ok=%lu errors=%lu\n", kind.c_str(), secs > 0 ? ok / secs : 0.0, ok, errors);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	return ok > 0 && errors == 0 ? 0 : 1;
}
