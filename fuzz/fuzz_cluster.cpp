// libFuzzer harness for the cluster loaders: YAML files and '<gpu>x<count>' names.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hardware/cluster.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size < 32) {
    auto p = cluster_from_preset(std::string(text));
    if (p.ok() && (p->levels.empty() || p->levels.back().size != p->num_gpus)) std::abort();
  }
  auto c = parse_cluster_yaml(text, "fuzz.yaml");
  if (!c.ok()) {
    if (c.error().message().empty()) std::abort();
    return 0;
  }
  if (c->levels.empty() || c->num_gpus < 1) std::abort();
  for (std::int64_t a : {std::int64_t{0}, c->num_gpus / 2, c->num_gpus - 1}) {
    if (c->level_for_span(0, a) >= c->levels.size()) std::abort();
  }
  return 0;
}
