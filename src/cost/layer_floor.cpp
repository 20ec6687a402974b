#include "cost/layer_floor.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shardwise {
namespace {
constexpr std::array<const char*, 10> kKernels = {"fused_add_rmsnorm", "rmsnorm", "quant_fp8", "kv_store", "kv_store_latent",
                                                  "router_topk", "moe_align", "moe_sum", "residual_add", "graph_kernel"};
// Activations quantised before the GEMM: the engines' fp8 (and int8, fp4) linear layers run
// a per-token(-group) quantisation kernel on their input; bf16 and weight-only formats do not.
bool low_bit(DType d) { return d == DType::kFp8 || d == DType::kInt8 || d == DType::kFp4; }
}  // namespace

Expected<std::vector<LayerKernelRow>> parse_layer_kernel_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "kernel", "model", "tokens", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<LayerKernelRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    if (std::find(kKernels.begin(), kKernels.end(), c[1]) == kKernels.end()) {
      return Error{file, fmt::format("row {} kernel", row),
                   "fused_add_rmsnorm, rmsnorm, quant_fp8, kv_store, kv_store_latent, router_topk, moe_align, moe_sum, residual_add or graph_kernel",
                   "'" + c[1] + "'"};
    }
    if (c[5] != "us") return Error{file, fmt::format("row {} unit", row), "us", "'" + c[5] + "'"};
    auto tokens = detail::positive_cell(c[3], file, row, "tokens");
    auto v = detail::positive_cell(c[4], file, row, "value");
    if (!tokens) return tokens.error();
    if (!v) return v.error();
    out.push_back({c[0], c[1], c[2], static_cast<std::int64_t>(*tokens), *v * 1e-6, c[6]});
  }
  return out;
}

LayerKernelCounts layer_kernel_counts(const ModelSpec& m, const Formats& f, bool moe_layer) {
  LayerKernelCounts k;
  // attention: the input norm (fused with the residual add), the KV-cache store; the model
  // prices attn_norm, qkv_proj, attention and o_proj with a floor
  k.fused_add_rmsnorm = 1;
  k.priced_ops = 4;
  if (m.attention == AttentionKind::kMla) {
    // MLA: q_a and kv_a latent norms; q_a/kv_a, q_b, the two absorbed projections, the
    // attention and o_proj are GEMM-class; fp8 activations before q_a/kv_a, q_b and o_proj
    k.rmsnorm = 2;
    k.kv_store_latent = 1;
    k.gemm_class = 6;
    k.quant_fp8 = low_bit(f.attention) ? 3 : 0;
  } else {
    k.kv_store = 1;
    k.gemm_class = 3;  // qkv_proj, attention, o_proj
    k.quant_fp8 = low_bit(f.attention) ? 2 : 0;
  }
  // the MLP: its norm (fused with the residual add)
  k.fused_add_rmsnorm += 1;
  k.priced_ops += 1;  // ffn_norm
  if (moe_layer) {
    // the router's GEMM (priced: router), its top-k, moe_align_block_size, the routed sum
    // (priced: combine); the routed expert GEMMs carry their own measured floor
    k.router_topk = 1;
    k.moe_align = 1;
    k.moe_sum = 1;
    k.gemm_class += 1;
    k.priced_ops += 2;  // router, combine
    if (low_bit(f.experts)) k.quant_fp8 += 2;  // the layer's input, the experts' intermediate
    if (m.moe.num_shared > 0) {
      k.residual_add = 1;
      k.gemm_class += 2;
      k.priced_ops += 2;  // shared_ffn1, shared_ffn2
      k.quant_fp8 += low_bit(f.dense) ? (low_bit(f.experts) ? 1 : 2) : 0;  // its intermediate (and input, where the experts' is not quantised)
    }
  } else {
    k.gemm_class += 2;  // ffn1, ffn2
    k.priced_ops += 2;
    k.quant_fp8 += low_bit(f.dense) ? 2 : 0;
  }
  return k;
}

LayerFloor layer_floor_for(const ModelSpec& m, const Formats& f, const GpuSpec& gpu, double gemm_floor_s, const SiliconTables& tables) {
  LayerFloor out;
  // whose rows: the GPU's own, else those of a Hopper or Blackwell GPU measured (the H200's
  // for any NVIDIA GPU of those architectures)
  const std::string own = detail::source_key(gpu.name);
  const auto has_rows = [&](const std::string& s) {
    return std::any_of(tables.layer_kernels.begin(), tables.layer_kernels.end(), [&](const LayerKernelRow& r) { return detail::source_key(r.silicon) == s; });
  };
  std::string source = own;
  if (!has_rows(own)) {
    const std::string sib = detail::architecture_sibling(gpu.name);
    const bool nvidia_new = sib == "h100" || sib == "b200" || own == "h100" || own == "b200";
    if (!nvidia_new) return out;
    source.clear();
    for (const auto& r : tables.layer_kernels) {
      if (const auto g = find_gpu(detail::source_key(r.silicon)); g && (detail::architecture_sibling(g->name) == "h100" || g->name == "h100")) {
        source = detail::source_key(r.silicon);
        break;
      }
    }
    if (source.empty()) return out;
  }
  const auto measured_on = find_gpu(source);
  if (!measured_on) return out;
  if (gemm_floor_s <= 0) gemm_floor_s = gemm_profile_for(source, tables).floor_s;
  std::map<std::string, std::vector<double>> by_kernel;
  std::vector<std::string> models;
  for (const auto& r : tables.layer_kernels) {
    if (detail::source_key(r.silicon) != source) continue;
    by_kernel[r.kernel].push_back(r.seconds);
    if (r.kernel != "graph_kernel" && std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
  }
  const double graph = by_kernel.count("graph_kernel") ? detail::median(by_kernel["graph_kernel"]) : 0.0;
  if (source != own && graph <= 0) return out;  // no graph floor measured: nothing to transfer by
  // each kernel's median over its measured instances, on this GPU: the time above the graph
  // replay floor scaled by the HBM bandwidths where the rows are another GPU's
  const double scale = source == own ? 1.0 : measured_on->hbm_bandwidth.value() / gpu.hbm_bandwidth.value();
  const auto t = [&](const char* kernel) -> double {
    const auto it = by_kernel.find(kernel);
    if (it == by_kernel.end() || it->second.empty()) return -1.0;
    const double v = detail::median(it->second);
    return graph + std::max(0.0, v - graph) * scale;
  };
  double fixed = 0;
  std::int64_t priced = 0;
  for (const bool moe_layer : {false, true}) {
    const std::int64_t n = moe_layer ? m.num_moe_layers() : m.num_dense_layers();
    if (n == 0) continue;
    const LayerKernelCounts k = layer_kernel_counts(m, f, moe_layer);
    double layer = k.gemm_class * gemm_floor_s;
    const std::pair<int, const char*> parts[] = {{k.fused_add_rmsnorm, "fused_add_rmsnorm"}, {k.rmsnorm, "rmsnorm"}, {k.quant_fp8, "quant_fp8"},
                                                 {k.kv_store, "kv_store"}, {k.kv_store_latent, "kv_store_latent"}, {k.router_topk, "router_topk"},
                                                 {k.moe_align, "moe_align"}, {k.moe_sum, "moe_sum"}, {k.residual_add, "residual_add"}};
    for (const auto& [count, kernel] : parts) {
      if (count == 0) continue;
      const double s = t(kernel);
      if (s < 0) return out;  // a kernel the rows do not measure: no floor from them
      layer += count * s;
    }
    fixed += static_cast<double>(n) * layer;
    priced += n * k.priced_ops;
  }
  if (priced == 0) return out;
  out.present = true;
  out.fixed_s = fixed;
  out.priced_ops = priced;
  out.per_op_s = fixed / static_cast<double>(priced);
  out.gemm_floor_s = gemm_floor_s;
  out.basis = source == own ? Basis::kMeasured : Basis::kTransferred;
  out.source = fmt::format("data/silicon/layer_kernels.csv: {} layers of {} ({}; GEMM floor {:.2f} us){}", source, fmt::join(models, ", "), basis_name(out.basis), gemm_floor_s * 1e6,
                           scale == 1.0 ? "" : fmt::format("; above the graph floor x{:.3f} by HBM bandwidth", scale));
  return out;
}

}  // namespace shardwise
