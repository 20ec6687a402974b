#include "core/error.hpp"

#include <cstdio>
#include <string>

namespace shardwise {

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;  // printable ASCII and UTF-8 bytes
    }
  }
  return out;
}

std::string Error::message() const {
  // every part may carry input as typed: control bytes and escapes are shown, never sent
  std::string m = file.empty() ? std::string("<input>") : printable(file);
  m += ": ";
  if (!field.empty()) m += "field '" + printable(field) + "': ";
  m += "expected " + printable(expected);
  if (!found.empty()) m += ", found " + printable(found);
  return m;
}

void invariant_failed(const char* expr, const char* file, int line, const char* msg) {
  throw InternalError(std::string("internal invariant broken at ") + file + ":" + std::to_string(line) + ": " + msg + " (" + expr + ")");
}

}  // namespace shardwise
