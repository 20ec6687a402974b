// libFuzzer harness for the serving trace reader (CSV and JSONL): the input is written to a
// file (the reader takes a path, and refuses anything but a regular file); the first byte
// picks the format. An accepted trace holds what its documentation says.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "workload/serving.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  if (size == 0) return 0;
  const bool jsonl = (data[0] & 1) != 0;
  const std::string path = "/tmp/shardwise-fuzz-trace-" + std::to_string(getpid()) + (jsonl ? ".jsonl" : ".csv");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  auto t = load_trace(path);
  if (!t.ok()) {
    if (t.error().message().empty()) std::abort();
    return 0;
  }
  if (t->empty()) std::abort();  // an accepted trace has a request
  double first = t->front().arrival_s;
  for (const auto& r : *t) {
    if (!std::isfinite(r.arrival_s) || r.arrival_s < 0 || r.input < 1 || r.output < 1) std::abort();
    first = std::min(first, r.arrival_s);
  }
  if (first != 0.0) std::abort();  // shifted so that the first arrival is 0
  return 0;
}
