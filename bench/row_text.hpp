// Reading the text columns of ../shared/calibration/public-measurements.csv (bench only).
#pragma once
#include <cstdint>
#include <string>

namespace shardwise::bench {

inline bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
inline bool contains(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }
// The number after `key` in a column ("gpu_batch_size 512 per rank" -> 512); 0 when absent.
inline std::int64_t number_after(const std::string& col, const char* key) {
  const auto at = col.find(key);
  if (at == std::string::npos) return 0;
  return std::stoll(col.substr(at + std::char_traits<char>::length(key)));
}

}  // namespace shardwise::bench
