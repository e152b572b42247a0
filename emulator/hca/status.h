// SPDX-License-Identifier: GPL-2.0
//
// Command completion status codes of the InfiniHost firmware, as the
// driver decodes them (mthca_cmd.h / mthca_status_to_errno()).
#pragma once

#include <cstdint>

namespace ibemu::mthca {

enum class Status : uint8_t {
    Ok = 0x00,
    InternalErr = 0x01,  // e.g. a DMA fault on a mailbox
    BadOp = 0x02,        // opcode or opcode modifier not supported
    BadParam = 0x03,
    BadSysState = 0x04,  // command not allowed in this firmware state
    BadResource = 0x05,  // reserved or unallocated resource
    ResourceBusy = 0x06,
    DdrMemErr = 0x07,
    ExceedLim = 0x08,
    BadResState = 0x09,  // object not in the right state/ownership
    BadIndex = 0x0a,
    BadNvmem = 0x0b,
    BadQpeeState = 0x10,  // QP not in the state the transition presumes
    BadSegParam = 0x20,
    RegBound = 0x21,
    LamNotPre = 0x22,  // no HCA-attached memory (mem-free board)
    BadPkt = 0x30,     // MAD_IFC: bad management packet, silently dropped
    BadSize = 0x40,
};

inline const char* status_name(Status s)
{
    switch (s) {
    case Status::Ok: return "OK";
    case Status::InternalErr: return "INTERNAL_ERR";
    case Status::BadOp: return "BAD_OP";
    case Status::BadParam: return "BAD_PARAM";
    case Status::BadSysState: return "BAD_SYS_STATE";
    case Status::BadResource: return "BAD_RESOURCE";
    case Status::ResourceBusy: return "RESOURCE_BUSY";
    case Status::DdrMemErr: return "DDR_MEM_ERR";
    case Status::ExceedLim: return "EXCEED_LIM";
    case Status::BadResState: return "BAD_RES_STATE";
    case Status::BadIndex: return "BAD_INDEX";
    case Status::BadNvmem: return "BAD_NVMEM";
    case Status::BadQpeeState: return "BAD_QPEE_STATE";
    case Status::BadSegParam: return "BAD_SEG_PARAM";
    case Status::RegBound: return "REG_BOUND";
    case Status::LamNotPre: return "LAM_NOT_PRE";
    case Status::BadPkt: return "BAD_PKT";
    case Status::BadSize: return "BAD_SIZE";
    }
    return "?";
}

}  // namespace ibemu::mthca
