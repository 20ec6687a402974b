// libFuzzer harness for the workload loader and the command-line overrides.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workload/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto w = parse_workload_yaml(text, "fuzz.yaml", "fuzz");
  if (!w.ok()) {
    if (w.error().message().empty()) std::abort();
    return 0;
  }
  if (validate_workload(*w, "fuzz.yaml")) std::abort();  // accepted means valid
  // The first line, if short, doubles as --batch and --mode override values.
  const std::string first(text.substr(0, std::min<std::size_t>(text.find('\n'), 24)));
  WorkloadOverrides o;
  o.batch = first;
  (void)apply_overrides(*w, o);
  o = {};
  o.mode = first;
  (void)apply_overrides(*w, o);
  return 0;
}
