// Number formatting shared by text reports.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace shardwise {
std::string grouped(std::int64_t v);          // 70272 -> "70,272"
std::string si_count(double v);               // 6.71e11 -> "671.0 B" (billions)
std::string si_bytes(Bytes b);                // decimal units: "1.34 TB"
std::string si_rate(BytesPerSecond r);        // "3.35 TB/s"
std::string si_flops(Flops f);                // "1.23 TFLOP"
std::string si_flop_rate(FlopsPerSecond f);   // "989.4 TFLOP/s"
std::string si_time(Seconds s);               // "2.0 us"
std::string ms_text(double ms);               // a latency: "348.0 ms", "2.00 s" from a second up
// One word for a POSIX shell: as it is when it holds only [A-Za-z0-9_@%+=:,./-], else in single
// quotes (a ' inside as '\''). Every user-given string printed into a command goes through it.
std::string shell_quote(const std::string& word);
// One shell command, a word per part, each through shell_quote, continued with a backslash
// before each flag (one flag a line); ends with a newline.
std::string shell_command(const std::vector<std::string>& parts);
}  // namespace shardwise
