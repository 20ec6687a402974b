#include "report/format.hpp"

#include <cmath>

#include <fmt/format.h>

namespace shardwise {
namespace {
std::string scaled(double v, const char* const* names, int n, double step) {
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < n && a >= step) {
    a /= step;
    v /= step;
    ++i;
  }
  const int decimals = std::fabs(v) >= 100 ? 1 : (std::fabs(v) >= 10 ? 2 : 3);
  return fmt::format("{:.{}f} {}", v, decimals, names[i]);
}
}  // namespace

std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string si_count(double v) {
  static const char* const n[] = {"", "K", "M", "B", "T"};
  return scaled(v, n, 5, 1000.0);
}
std::string si_bytes(Bytes b) {
  static const char* const n[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  return scaled(b.value(), n, 6, 1000.0);
}
std::string si_rate(BytesPerSecond r) {
  static const char* const n[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
  return scaled(r.value(), n, 6, 1000.0);
}
std::string si_flops(Flops f) {
  static const char* const n[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  return scaled(f.value(), n, 6, 1000.0);
}
std::string si_flop_rate(FlopsPerSecond f) {
  static const char* const n[] = {"FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"};
  return scaled(f.value(), n, 6, 1000.0);
}
std::string ms_text(double ms) { return ms >= 1000 ? fmt::format("{:.2f} s", ms / 1e3) : fmt::format("{:.1f} ms", ms); }

std::string si_time(Seconds s) {
  const double v = s.value();
  if (v < 1e-3) return fmt::format("{:.1f} us", v * 1e6);
  if (v < 1.0) return fmt::format("{:.2f} ms", v * 1e3);
  return fmt::format("{:.2f} s", v);
}
std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-") ==
                                          std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_command(const std::vector<std::string>& parts) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) s += parts[i].starts_with("-") && parts[i] != "-m" ? " \\\n    " : " ";
    s += shell_quote(parts[i]);
  }
  return s + "\n";
}

}  // namespace shardwise
