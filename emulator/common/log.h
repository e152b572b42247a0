// SPDX-License-Identifier: GPL-2.0
//
// Logging for the emulator. Guest errors (a bad command, a wild DMA address,
// a malformed MMIO access) are logged and counted, never asserted on: the
// guest is untrusted.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ibemu {

enum class LogLevel { Error, GuestError, Info, Debug };

class Log {
public:
    // Where lines go; stderr by default. Not owned.
    static void set_output(FILE* out);
    static void set_level(LogLevel max_level);
    static LogLevel level();

    // "who" names the source, e.g. "mthca0" or "shim".
    static void write(LogLevel lvl, const std::string& who, const char* fmt, ...)
        __attribute__((format(printf, 3, 4)));
    static void vwrite(LogLevel lvl, const std::string& who, const char* fmt, va_list ap);

    // Number of guest errors logged since start (or since reset_counters()).
    static uint64_t guest_errors();
    static void reset_counters();

    // Guest-error lines are rate limited per source ("who"): at most
    // `lines` in each `window_ns` (default 50 per second). The rest are
    // counted, not printed; the first line of the source's next window
    // says how many were suppressed. Counted per source and in all.
    static void set_guest_error_limit(unsigned lines, uint64_t window_ns);
    static uint64_t suppressed();
    static uint64_t suppressed(const std::string& who);
    // Where the limiter reads the time (monotonic ns); nullptr: the clock.
    static void set_time_source(uint64_t (*now_ns)());
};

}  // namespace ibemu

#define IBEMU_GUEST_ERROR(who, ...) ::ibemu::Log::write(::ibemu::LogLevel::GuestError, (who), __VA_ARGS__)
#define IBEMU_INFO(who, ...) ::ibemu::Log::write(::ibemu::LogLevel::Info, (who), __VA_ARGS__)
#define IBEMU_DEBUG(who, ...)                                              \
    do {                                                                   \
        if (::ibemu::Log::level() >= ::ibemu::LogLevel::Debug)            \
            ::ibemu::Log::write(::ibemu::LogLevel::Debug, (who), __VA_ARGS__); \
    } while (0)
#define IBEMU_ERROR(who, ...) ::ibemu::Log::write(::ibemu::LogLevel::Error, (who), __VA_ARGS__)
