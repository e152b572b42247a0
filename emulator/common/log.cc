// SPDX-License-Identifier: GPL-2.0
#include "common/log.h"

#include <time.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace ibemu {
namespace {

FILE* g_out = nullptr;
LogLevel g_level = LogLevel::Info;
std::atomic<uint64_t> g_guest_errors{0};

// The guest-error limiter, per source.
struct Bucket {
    uint64_t window_start = 0;
    unsigned printed = 0;           // in this window
    uint64_t suppressed_window = 0; // in this window
    uint64_t suppressed_total = 0;
};
std::mutex g_mu;
std::unordered_map<std::string, Bucket> g_buckets;
unsigned g_limit_lines = 50;
uint64_t g_limit_window = 1000000000ull;
uint64_t (*g_now)() = nullptr;
std::atomic<uint64_t> g_suppressed{0};

uint64_t mono_ns()
{
    if (g_now)
        return g_now();
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

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
void Log::reset_counters()
{
    g_guest_errors = 0;
    g_suppressed = 0;
    std::lock_guard<std::mutex> lk(g_mu);
    g_buckets.clear();
}

void Log::set_guest_error_limit(unsigned lines, uint64_t window_ns)
{
    std::lock_guard<std::mutex> lk(g_mu);
    g_limit_lines = lines;
    g_limit_window = window_ns;
}

uint64_t Log::suppressed() { return g_suppressed.load(); }

uint64_t Log::suppressed(const std::string& who)
{
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_buckets.find(who);
    return it == g_buckets.end() ? 0 : it->second.suppressed_total;
}

void Log::set_time_source(uint64_t (*now_ns)()) { g_now = now_ns; }

void Log::vwrite(LogLevel lvl, const std::string& who, const char* fmt, va_list ap)
{
    if (lvl == LogLevel::GuestError)
        ++g_guest_errors;
    if (lvl > g_level)
        return;
    FILE* out = g_out ? g_out : stderr;
    if (lvl == LogLevel::GuestError) {
        std::lock_guard<std::mutex> lk(g_mu);
        Bucket& b = g_buckets[who];
        uint64_t now = mono_ns();
        if (b.printed == 0 && b.suppressed_window == 0) {
            b.window_start = now;  // first line of this source
        } else if (now - b.window_start >= g_limit_window) {
            if (b.suppressed_window)
                fprintf(out, "ibemu %s %s: %llu guest-error lines suppressed (%llu in all)\n",
                        level_name(lvl), who.c_str(), (unsigned long long)b.suppressed_window,
                        (unsigned long long)b.suppressed_total);
            b.window_start = now;
            b.printed = 0;
            b.suppressed_window = 0;
        }
        if (b.printed >= g_limit_lines) {
            ++b.suppressed_window;
            ++b.suppressed_total;
            ++g_suppressed;
            return;
        }
        ++b.printed;
    }
    char buf[1024];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    fprintf(out, "ibemu %s %s: %s\n", level_name(lvl), who.c_str(), buf);
    // Only errors of the emulator itself are flushed at once: guest errors
    // and debug lines can come per packet or per MMIO access.
    if (lvl == LogLevel::Error)
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
