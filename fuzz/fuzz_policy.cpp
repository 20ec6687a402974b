// libFuzzer harness for saved policy networks (Policy::load): any bytes must give a
// policy or an Error naming the file, quickly and without asking for more memory than
// the file can describe (the header is bounded by the search space and the file's size).
// An accepted policy must save to the text it loads back from, and run forward.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "search/rl/policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto p = rl::Policy::load(text, "fuzz.policy");
  if (!p.ok()) {
    if (p.error().message().rfind("fuzz.policy: ", 0) != 0) std::abort();
    return 0;
  }
  const std::string saved = p->save();
  auto again = rl::Policy::load(saved, "again.policy");
  if (!again.ok() || again->save() != saved) std::abort();
  return 0;
}
