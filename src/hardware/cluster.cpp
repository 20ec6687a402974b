#include "hardware/cluster.hpp"

#include "core/names.hpp"

#include <charconv>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"

namespace shardwise {
namespace {
constexpr double kMaxBandwidth = 1e15;  // 1 PB/s per GPU: anything above is a unit slip
constexpr double kMaxFlops = 1e18;
constexpr double kMaxBytes = 1e14;
constexpr double kMaxLatency = 1.0;
}  // namespace

std::size_t ClusterSpec::level_for_span(std::int64_t lo, std::int64_t hi) const {
  for (std::size_t i = 0; i + 1 < levels.size(); ++i) {
    if (lo / levels[i].size == hi / levels[i].size) return i;
  }
  return levels.empty() ? 0 : levels.size() - 1;
}

std::vector<TopologyLevel> default_levels(const GpuSpec& gpu, std::int64_t num_gpus, int gpus_per_node, int nvlink_domain) {
  std::vector<TopologyLevel> lv;
  lv.push_back({"nvlink", std::min<std::int64_t>(nvlink_domain, num_gpus), gpu.nvlink_bandwidth, gpu.nvlink_latency});
  if (nvlink_domain < gpus_per_node && num_gpus > nvlink_domain) {
    lv.push_back({"node", std::min<std::int64_t>(gpus_per_node, num_gpus), gpu.pcie_bandwidth, gpu.nvlink_latency});
  }
  if (num_gpus > lv.back().size) lv.push_back({"network", num_gpus, gpu.network_bandwidth, gpu.network_latency});
  return lv;
}

Expected<ClusterSpec> cluster_from_preset(const std::string& name) {
  const auto x = name.rfind('x');
  const std::string form = "a cluster preset '<gpu>x<count>' with gpu one of " + gpu_names() +
                           fmt::format(" and count from 1 to {} (e.g. h100x64), or the path of a cluster YAML file", kMaxPresetGpus);
  if (x == std::string::npos || x == 0 || x + 1 >= name.size()) return Error{"--cluster", "", form, "'" + name + "'"};
  const std::string gpu_name = name.substr(0, x);
  std::int64_t count = 0;
  const char* b = name.data() + x + 1;
  const char* e = name.data() + name.size();
  auto [p, ec] = std::from_chars(b, e, count);
  if (ec != std::errc() || p != e) return Error{"--cluster", "", form, "'" + name + "'"};
  auto gpu = find_gpu(lower_ascii(gpu_name));  // H100x8 is h100x8
  if (!gpu) {
    std::vector<std::string> known;
    for (const auto& g : gpu_catalog()) known.push_back(g.name);
    return Error{"--cluster", "", "a known GPU before the 'x' (" + gpu_names() + ")", "'" + gpu_name + "'" + did_you_mean(gpu_name, known)};
  }
  if (count < 1 || count > kMaxPresetGpus) {
    return Error{"--cluster", "", fmt::format("a GPU count from 1 to {} after the 'x'", kMaxPresetGpus), std::to_string(count)};
  }
  ClusterSpec c;
  c.name = lower_ascii(name);
  c.gpu = *gpu;
  c.num_gpus = count;
  c.gpus_per_node = gpu->gpus_per_node;
  c.levels = default_levels(*gpu, count, gpu->gpus_per_node, gpu->nvlink_domain);
  return c;
}

namespace {
GpuSpec read_gpu(const FieldReader& root) {
  GpuSpec g;
  if (root.sink().failed()) return g;
  const nlohmann::json* v = root.get("gpu");
  if (!v) {
    root.fail("gpu", "a GPU name (" + gpu_names() + ") or a mapping of GPU fields", "nothing (the field is missing)");
    return g;
  }
  if (v->is_string()) {
    auto found = find_gpu(v->get<std::string>());
    if (!found) root.fail("gpu", "a known GPU (" + gpu_names() + ") or a mapping of GPU fields", describe_value(*v));
    return found.value_or(g);
  }
  auto r = root.object("gpu", true);
  if (!r) return g;
  r->reject_unknown({"base", "name", "bf16", "fp8", "fp4", "hbm", "hbm_bandwidth", "nvlink_bandwidth", "nvlink_latency",
                     "pcie_bandwidth", "network_bandwidth", "network_latency"});
  const bool has_base = r->has("base");
  if (has_base) {
    const std::string base = r->string("base");
    auto found = find_gpu(base);
    if (!found && !r->sink().failed()) r->fail("base", "a known GPU (" + gpu_names() + ")", "'" + base + "'");
    if (found) g = *found;
  }
  const auto req = [&](const char* key, Dimension dim, double fallback, double hi) {
    return has_base ? r->quantity_or(key, dim, fallback, hi) : r->quantity(key, dim, hi);
  };
  g.name = r->string_or("name", has_base ? g.name + "-custom" : "custom");
  g.bf16 = FlopsPerSecond(req("bf16", Dimension::kFlopRate, g.bf16.value(), kMaxFlops));
  g.fp8 = FlopsPerSecond(r->quantity_or("fp8", Dimension::kFlopRate, g.fp8.value(), kMaxFlops));
  g.fp4 = FlopsPerSecond(r->quantity_or("fp4", Dimension::kFlopRate, g.fp4.value(), kMaxFlops));
  g.hbm_capacity = Bytes(req("hbm", Dimension::kBytes, g.hbm_capacity.value(), kMaxBytes));
  g.hbm_bandwidth = BytesPerSecond(req("hbm_bandwidth", Dimension::kBandwidth, g.hbm_bandwidth.value(), kMaxBandwidth));
  g.nvlink_bandwidth = BytesPerSecond(req("nvlink_bandwidth", Dimension::kBandwidth, g.nvlink_bandwidth.value(), kMaxBandwidth));
  g.network_bandwidth = BytesPerSecond(req("network_bandwidth", Dimension::kBandwidth, g.network_bandwidth.value(), kMaxBandwidth));
  const double pcie_default = has_base ? g.pcie_bandwidth.value() : 32e9;
  g.pcie_bandwidth = BytesPerSecond(r->quantity_or("pcie_bandwidth", Dimension::kBandwidth, pcie_default, kMaxBandwidth));
  g.nvlink_latency = Seconds(r->quantity_or("nvlink_latency", Dimension::kTime, has_base ? g.nvlink_latency.value() : 2e-6, kMaxLatency));
  g.network_latency = Seconds(r->quantity_or("network_latency", Dimension::kTime, has_base ? g.network_latency.value() : 6e-6, kMaxLatency));
  return g;
}

void apply_level_override(const FieldReader& root, const char* key, TopologyLevel& level) {
  auto r = root.object(key, false);
  if (!r) return;
  r->reject_unknown({"bandwidth", "latency"});
  level.bandwidth = BytesPerSecond(r->quantity_or("bandwidth", Dimension::kBandwidth, level.bandwidth.value(), kMaxBandwidth));
  level.latency = Seconds(r->quantity_or("latency", Dimension::kTime, level.latency.value(), kMaxLatency));
}

std::vector<TopologyLevel> read_topology(const FieldReader& root, std::int64_t num_gpus) {
  std::vector<TopologyLevel> lv;
  const nlohmann::json* t = root.get("topology");
  if (!t->is_array() || t->empty()) {
    root.fail("topology", "a non-empty list of levels {name, size, bandwidth, latency}", describe_value(*t));
    return lv;
  }
  for (std::size_t i = 0; i < t->size() && !root.sink().failed(); ++i) {
    const std::string key = fmt::format("topology[{}]", i);
    if (!(*t)[i].is_object()) {
      root.fail(key, "a level {name, size, bandwidth, latency}", describe_value((*t)[i]));
      break;
    }
    FieldReader r((*t)[i], root.file(), root.sink(), key + ".");
    r.reject_unknown({"name", "size", "bandwidth", "latency"});
    TopologyLevel l;
    l.name = r.string("name");
    l.size = r.integer_or("size", num_gpus, 1, kMaxClusterGpus);
    l.bandwidth = BytesPerSecond(r.quantity("bandwidth", Dimension::kBandwidth, kMaxBandwidth));
    l.latency = Seconds(r.quantity("latency", Dimension::kTime, kMaxLatency));
    if (!lv.empty() && !root.sink().failed() && (l.size <= lv.back().size || l.size % lv.back().size != 0)) {
      r.fail("size", fmt::format("a multiple of the previous level's size ({}) and larger than it", lv.back().size),
             std::to_string(l.size));
    }
    lv.push_back(l);
  }
  if (!root.sink().failed() && lv.back().size < num_gpus) {
    root.fail(fmt::format("topology[{}].size", lv.size() - 1), fmt::format("the last level to span all num_gpus ({})", num_gpus),
              std::to_string(lv.back().size));
  }
  return lv;
}
}  // namespace

Expected<ClusterSpec> parse_cluster_yaml(std::string_view text, const std::string& file) {
  auto doc = parse_yaml_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"name", "gpu", "num_gpus", "gpus_per_node", "nvlink_domain", "nvlink", "node", "network", "topology"});
  ClusterSpec c;
  c.name = r.string_or("name", std::filesystem::path(file).stem().string());
  c.gpu = read_gpu(r);
  c.num_gpus = r.integer("num_gpus", 1, kMaxClusterGpus);
  c.gpus_per_node = static_cast<int>(r.integer_or("gpus_per_node", c.gpu.gpus_per_node, 1, 1024));
  // A GPU whose NVLink domain spans nodes (NVL72) keeps it; otherwise one node is one domain.
  const std::int64_t default_domain = c.gpu.nvlink_domain != c.gpu.gpus_per_node ? c.gpu.nvlink_domain : c.gpus_per_node;
  const int domain = static_cast<int>(r.integer_or("nvlink_domain", default_domain, 1, 1 << 16));
  if (sink.failed()) return *sink.first;
  if (domain % c.gpus_per_node != 0 && c.gpus_per_node % domain != 0) {
    r.fail("nvlink_domain", fmt::format("a multiple or a divisor of gpus_per_node ({})", c.gpus_per_node), std::to_string(domain));
    return *sink.first;
  }
  if (r.has("topology")) {
    if (r.has("nvlink") || r.has("node") || r.has("network")) {
      r.fail("topology", "either 'topology' or the per-level overrides (nvlink, node, network), not both", "both");
      return *sink.first;
    }
    c.levels = read_topology(r, c.num_gpus);
  } else {
    c.levels = default_levels(c.gpu, c.num_gpus, c.gpus_per_node, domain);
    for (auto& l : c.levels) apply_level_override(r, l.name.c_str(), l);
    for (const char* key : {"nvlink", "node", "network"}) {
      bool present = false;
      for (const auto& l : c.levels) present = present || l.name == key;
      if (r.has(key) && !present && !sink.failed()) {
        r.fail(key, "a level this cluster has (it is too small to have one of this kind)", "an override of a level it lacks");
      }
    }
  }
  if (sink.failed()) return *sink.first;
  return c;
}

Expected<ClusterSpec> load_cluster(const std::string& name_or_path) {
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec) && !std::filesystem::is_directory(name_or_path, ec)) {
    auto text = read_text_file(name_or_path);
    if (!text) return text.error();
    return parse_cluster_yaml(*text, name_or_path);
  }
  return cluster_from_preset(name_or_path);
}

}  // namespace shardwise
