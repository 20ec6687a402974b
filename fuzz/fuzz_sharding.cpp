// libFuzzer harness for sharding files (parse_sharding, YAML or JSON): any bytes must give
// a Sharding or an Error naming the file; an accepted sharding must round-trip through
// its text form ("slot: choice" lines) to the same choices.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "plan/plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = parse_sharding(text, "fuzz.yaml");
  if (!s.ok()) {
    if (s.error().message().rfind("fuzz.yaml: ", 0) != 0) std::abort();
    return 0;
  }
  std::string yaml;
  for (int i = 0; i < kNumSlots; ++i) {
    const auto c = (*s)[static_cast<std::size_t>(i)];
    if (c >= slot_info(i).num_choices) std::abort();  // an accepted choice exists
    yaml += std::string(slot_info(i).name) + ": " + slot_info(i).choices[c] + "\n";
  }
  auto again = parse_sharding(yaml, "again.yaml");
  if (!again.ok() || *again != *s) std::abort();
  (void)sharding_to_string(*s);
  return 0;
}
