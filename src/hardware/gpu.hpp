// GPU specifications from vendor datasheets (see docs/clusters.md for sources).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace shardwise {

struct GpuSpec {
  std::string name;
  FlopsPerSecond bf16;  // dense (no sparsity) tensor-core peak; fp16 is the same
  FlopsPerSecond fp8;   // 0 when the GPU has no fp8 tensor cores
  FlopsPerSecond fp4;   // 0 when unsupported
  Bytes hbm_capacity;
  BytesPerSecond hbm_bandwidth;
  BytesPerSecond nvlink_bandwidth;   // per GPU, per direction
  Seconds nvlink_latency;            // per-message start-up (alpha)
  BytesPerSecond pcie_bandwidth;     // per GPU, per direction (node level without NVLink)
  BytesPerSecond network_bandwidth;  // per GPU (one NIC), per direction
  Seconds network_latency;
  int gpus_per_node = 8;
  int nvlink_domain = 8;  // GPUs that share one NVLink fabric (72 for NVL72)
  std::string vendor = "nvidia";  // nvidia or amd: the serving engines built for it (data/engines/*.yaml, vendors)
  friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// The built-in catalog: h100, h200, a100, b200, gb200, b300, gb300, h20, l40s, mi300x,
// mi325x, mi355x, a10, l4, a100-40gb (docs/clusters.md has each datasheet; the ones without a fit of their own
// borrow the nearest silicon's, marked uncalibrated).
const std::vector<GpuSpec>& gpu_catalog();
std::optional<GpuSpec> find_gpu(std::string_view name);
std::string gpu_names();  // "h100, h200, ..." for messages

}  // namespace shardwise
