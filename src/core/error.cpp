#include "core/error.hpp"

#include <string>

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
  throw InternalError(std::string("internal invariant broken at ") + file + ":" + std::to_string(line) + ": " + msg + " (" + expr + ")");
}

}  // namespace shardwise
