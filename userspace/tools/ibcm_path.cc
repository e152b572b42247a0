// SPDX-License-Identifier: GPL-2.0
// ibcm_path: one SA PathRecord from the port's SM (libibcmxx's SaClient),
// printed as "field value" lines. Exit 0 ok, 1 error (no path, no SM, ...),
// 2 usage.
//
//   ibcm_path --dev mthca0 [--port N] (--dgid GID | --dlid LID)
#include <cstdio>
#include <iostream>

#include "common.h"

using namespace ibcm;
using namespace ibcm::tools;

int main(int argc, char **argv)
{
	try {
		const Args args(argc, argv, {"help"}, {"dev", "port", "dgid", "dlid"});
		if (args.has("help") || !args.has("dev") || args.has("dgid") == args.has("dlid"))
			throw UsageError("");
		SaClient sa(args.str("dev"), static_cast<int>(args.num("port", 1)));
		PathRecord p;
		if (args.has("dgid")) {
			const auto g = parse_gid(args.str("dgid"));
			if (!g)
				throw UsageError("--dgid: not a GID");
			p = sa.path_by_dgid(*g);
		} else {
			p = sa.path_by_dlid(static_cast<std::uint16_t>(args.num("dlid", 0)));
		}
		std::printf("dgid %s\nsgid %s\ndlid %u\nslid %u\nflow_label 0x%x\nhop_limit %u\n"
			    "traffic_class %u\nreversible %d\nnumb_path %u\npkey 0x%04x\nsl %u\nmtu %u\n"
			    "rate %u\npacket_life_time %u\npreference %u\n",
			    format_gid(p.dgid).c_str(), format_gid(p.sgid).c_str(), p.dlid, p.slid, p.flow_label,
			    p.hop_limit, p.traffic_class, p.reversible, p.numb_path, p.pkey, p.sl, p.mtu, p.rate,
			    p.packet_life_time, p.preference);
		return 0;
	} catch (const UsageError &e) {
		if (*e.what())
			std::cerr << "ibcm_path: " << e.what() << "\n";
		std::cerr << "usage: ibcm_path --dev IBDEV [--port N] (--dgid GID | --dlid LID)\n";
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "ibcm_path: " << e.what() << "\n";
		return 1;
	}
}
