// libFuzzer harness for the model loader: any bytes must give a ModelSpec or an
// Error, never a crash, a sanitizer report or a hang; accepted models must give
// finite derived counts.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/derived.hpp"
#include "model/loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = parse_model_config(text, "fuzz.json", "fuzz");
  if (!m.ok()) {
    if (m.error().message().empty()) std::abort();
    return 0;
  }
  const ParamCounts p = count_params(*m);
  if (p.total.total() <= 0 || p.active.total() > p.total.total()) std::abort();
  const KvCacheBytes kv = kv_cache_bytes(*m, DType::kBf16);
  if (!std::isfinite(kv.for_context(65536).value())) std::abort();
  if (!std::isfinite(flops_per_token(*m, 65536).total().value())) std::abort();
  (void)m->layer_classes();
  return 0;
}
