// libFuzzer harness for the sweep's price table (--prices): accepted prices are positive,
// finite and for GPUs of the catalog.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "hardware/gpu.hpp"
#include "search/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  const std::string path = "/tmp/shardwise-fuzz-prices-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto p = load_prices(path);
  if (!p.ok()) {
    if (p.error().message().empty()) std::abort();
    return 0;
  }
  for (const auto& [gpu, usd] : *p) {
    if (!find_gpu(gpu) || !(usd > 0) || !std::isfinite(usd)) std::abort();
  }
  return 0;
}
