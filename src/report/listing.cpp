#include "report/listing.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hardware/cluster.hpp"
#include "hardware/gpu.hpp"
#include "model/derived.hpp"
#include "report/format.hpp"

namespace shardwise {

std::string list_models_text(const std::vector<ModelSpec>& models) {
  std::string s = fmt::format("{:<18} {:<24} {:>7} {:>11} {:>11}  {}\n", "preset", "architecture", "layers", "total", "active", "kind");
  for (const auto& m : models) {
    const ParamCounts p = count_params(m);
    std::string kind = m.attention == AttentionKind::kMla ? "MLA" : (m.num_kv_heads == m.num_heads ? "MHA" : "GQA");
    if (m.is_moe()) kind += fmt::format(", MoE {} experts top-{}", m.moe.num_experts, m.moe.top_k);
    s += fmt::format("{:<18} {:<24} {:>7} {:>11} {:>11}  {}\n", m.name, m.architecture, m.num_layers,
                     si_count(static_cast<double>(p.total.total())), si_count(static_cast<double>(p.active.total())), kind);
  }
  s += "\n--model also takes the path of a HuggingFace config.json.\n";
  return s;
}

std::string list_models_json(const std::vector<ModelSpec>& models) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : models) {
    const ParamCounts p = count_params(m);
    arr.push_back({{"name", m.name}, {"architecture", m.architecture}, {"num_layers", m.num_layers},
                   {"params_total", p.total.total()}, {"params_active", p.active.total()}});
  }
  return arr.dump(2);
}

std::string list_gpus_text() {
  std::string s = fmt::format("{:<9} {:>14} {:>14} {:>10} {:>11} {:>13} {:>12} {:>6} {:>7}\n", "gpu", "bf16 dense", "fp8 dense", "HBM",
                              "HBM bw", "NVLink/dir", "network/dir", "node", "domain");
  for (const auto& g : gpu_catalog()) {
    s += fmt::format("{:<9} {:>14} {:>14} {:>10} {:>11} {:>13} {:>12} {:>6} {:>7}\n", g.name, si_flop_rate(g.bf16),
                     g.fp8.value() > 0 ? si_flop_rate(g.fp8) : std::string("-"), si_bytes(g.hbm_capacity), si_rate(g.hbm_bandwidth),
                     si_rate(g.nvlink_bandwidth), si_rate(g.network_bandwidth), g.gpus_per_node, g.nvlink_domain);
  }
  s += fmt::format("\n--cluster takes '<gpu>x<count>' (count 1 to {}, e.g. h100x2048, gb200x72) or the path of a cluster YAML.\n",
                   kMaxPresetGpus);
  return s;
}

std::string list_workloads_text(const std::vector<Workload>& workloads) {
  std::string s = fmt::format("{:<16} {:<8} {:>8} {:>6} {:>8} {:>6} {:>9} {:>9}\n", "preset", "mode", "context", "isl", "osl", "batch",
                              "ttft_ms", "tpot_ms");
  for (const auto& w : workloads) {
    const auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string("-"); };
    const auto tok = [](std::int64_t v) { return v > 0 ? std::to_string(v) : std::string("-"); };
    s += fmt::format("{:<16} {:<8} {:>8} {:>6} {:>8} {:>6} {:>9} {:>9}\n", w.name, to_string(w.mode), tok(w.context), tok(w.isl),
                     tok(w.osl), w.batch ? std::to_string(*w.batch) : "max", opt(w.ttft_ms), opt(w.tpot_ms));
  }
  s += "\n--workload also takes the path of a workload YAML; --isl --osl --context --batch --mode --ttft-ms --tpot-ms\n"
       "--weights-dtype --kv-dtype override single fields.\n";
  return s;
}

}  // namespace shardwise
