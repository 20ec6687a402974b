#include "core/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace shardwise {

std::string Error::message() const {
  std::string m = file.empty() ? std::string("<input>") : file;
  m += ": ";
  if (!field.empty()) m += "field '" + field + "': ";
  m += "expected " + expected;
  if (!found.empty()) m += ", found " + found;
  return m;
}

void invariant_failed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "shardwise: internal invariant broken at %s:%d: %s (%s)\n", file, line, msg, expr);
  std::abort();
}

}  // namespace shardwise
