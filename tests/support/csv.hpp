// Shared by the tests that read a published data file: one CSV record split into its fields
// (a quoted field may hold commas; the quotes are dropped).
#pragma once
#include <string>
#include <vector>

namespace test_support {

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace test_support
