// SPDX-License-Identifier: GPL-2.0
#include "common/log.h"

#include <atomic>

namespace ibemu {
namespace {

FILE* g_out = nullptr;
LogLevel g_level = LogLevel::Info;
std::atomic<uint64_t> g_guest_errors{0};

const char* level_name(LogLevel lvl)
{
    switch (lvl) {
    case LogLevel::Error: return "error";
    case LogLevel::GuestError: return "guest-error";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
    }
    return "?";
}

}  // namespace

void Log::set_output(FILE* out) { g_out = out; }
void Log::set_level(LogLevel max_level) { g_level = max_level; }
LogLevel Log::level() { return g_level; }
uint64_t Log::guest_errors() { return g_guest_errors.load(); }
void Log::reset_counters() { g_guest_errors = 0; }

void Log::vwrite(LogLevel lvl, const std::string& who, const char* fmt, va_list ap)
{
    if (lvl == LogLevel::GuestError)
        ++g_guest_errors;
    if (lvl > g_level)
        return;
    FILE* out = g_out ? g_out : stderr;
    char buf[1024];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    fprintf(out, "ibemu %s %s: %s\n", level_name(lvl), who.c_str(), buf);
    fflush(out);
}

void Log::write(LogLevel lvl, const std::string& who, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwrite(lvl, who, fmt, ap);
    va_end(ap);
}

}  // namespace ibemu
