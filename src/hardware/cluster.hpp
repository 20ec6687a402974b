// A cluster: one GPU type, a count, and a hierarchy of interconnect levels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

// One level of the interconnect. Ranks r and s talk over the first level whose
// domain holds both: r / size == s / size (ranks are numbered node by node).
struct TopologyLevel {
  std::string name;                  // "nvlink", "node" (PCIe), "network", or a user name
  std::int64_t size = 0;             // GPUs per domain at this level
  BytesPerSecond bandwidth;          // per GPU, per direction
  Seconds latency;                   // per-message start-up
  friend bool operator==(const TopologyLevel&, const TopologyLevel&) = default;
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  std::int64_t num_gpus = 0;
  int gpus_per_node = 8;
  std::vector<TopologyLevel> levels;  // innermost first; the last spans the whole cluster

  [[nodiscard]] std::int64_t num_nodes() const { return (num_gpus + gpus_per_node - 1) / gpus_per_node; }
  // The innermost level whose domain contains ranks lo..hi (lo <= hi).
  [[nodiscard]] std::size_t level_for_span(std::int64_t lo, std::int64_t hi) const;
  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;
};

constexpr std::int64_t kMaxPresetGpus = 24576;
constexpr std::int64_t kMaxClusterGpus = std::int64_t{1} << 20;

// The default hierarchy for a GPU, count, node size and NVLink domain:
// nvlink (domain) [, node over PCIe when the domain is smaller than a node], network.
std::vector<TopologyLevel> default_levels(const GpuSpec& gpu, std::int64_t num_gpus, int gpus_per_node, int nvlink_domain);

// "<gpu>x<count>", e.g. h100x2048 or gb200x72.
Expected<ClusterSpec> cluster_from_preset(const std::string& name);
// Cluster YAML text (docs/formats.md); `file` names the source in messages.
Expected<ClusterSpec> parse_cluster_yaml(std::string_view text, const std::string& file);
// A preset name or a path to a YAML file.
Expected<ClusterSpec> load_cluster(const std::string& name_or_path);

}  // namespace shardwise
