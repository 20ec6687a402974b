// The fixed time per priced op of a decode layer, measured (data/silicon/layer_kernels.csv;
// docs/silicon.md, "A measured decode layer"). A decode layer launches more kernels than the
// cost model prices as ops: besides its GEMMs, attention, norms and the kernels it prices by
// their own curves (rotary, activation, the routed experts), an engine that runs them as
// separate kernels (vLLM, SGLang: `small_kernels: separate` in its profile) launches the
// activations' fp8 quantisation before each low-bit GEMM, the KV-cache store, MLA's latent
// norms and absorbed projections, the router's top-k, moe_align_block_size, the routed sum and
// the shared expert's add. Their measured times, with one measured GEMM floor for each
// GEMM-class kernel, make the layer's fixed time; over the ops the model prices with a kernel
// floor, the floor per op that replaces the fitted kernel_overhead_us for such an engine:
//
//   per_op = sum over the model's layers of (its small kernels' times + its GEMM-class kernels x
//            the GEMM floor) / sum over its layers of the ops priced with a floor
//
// Measured on the H200 (measure_layer.py); another Hopper or Blackwell GPU takes each kernel's
// time above the graph-replay floor scaled by the HBM bandwidths (transferred), as the
// elementwise kernels do; other GPUs (AMD, Ampere) keep the fit. The composition is of a
// tensor-parallel decode layer: an op it does not count that takes the floor anyway (the LM
// head, the embedding, a prefill step's ops) takes the same per-op value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "hardware/gpu.hpp"
#include "model/model_spec.hpp"
#include "workload/workload.hpp"

namespace shardwise {

// The table's rows (header silicon,kernel,model,tokens,value,unit,source_locator; unit us);
// errors name the file, row and value.
Expected<std::vector<LayerKernelRow>> parse_layer_kernel_table(const std::string& text, const std::string& file);

// The kernel counts of one layer (kernels the engine launches beside the priced ops, and the
// ops the model prices with a kernel floor): what layer_floor_for composes.
struct LayerKernelCounts {
  int fused_add_rmsnorm = 0, rmsnorm = 0, quant_fp8 = 0, kv_store = 0, kv_store_latent = 0;
  int router_topk = 0, moe_align = 0, moe_sum = 0, residual_add = 0;
  int gemm_class = 0;   // GEMM and attention kernels whose floor the priced ops carry
  int priced_ops = 0;   // ops the model prices with a kernel floor
};
// One decode layer of `m` (MoE or dense) in `f`'s formats, as an engine running its small
// kernels separately launches it.
LayerKernelCounts layer_kernel_counts(const ModelSpec& m, const Formats& f, bool moe_layer);

struct LayerFloor {
  bool present = false;
  double per_op_s = 0;     // the floor per priced op
  double fixed_s = 0;      // the small kernels and GEMM floors of the model's layers, summed
  // the GEMM floor each GEMM-class kernel counts with: what an expert GEMM outside the fused
  // MoE (grouped, after an all-to-all) carries, being no priced op of the composition
  double gemm_floor_s = 0;
  std::int64_t priced_ops = 0;  // the priced ops of the model's layers, summed
  Basis basis = Basis::kModel;
  std::string source;      // for --explain
};
// The floor of `m` in `f` on `gpu` (`gemm_floor_s`: the measured GEMM floor there; 0: none
// measured there, the GEMM floor of the GPU whose layer rows it takes); not present where the
// tables hold no rows for its architecture.
LayerFloor layer_floor_for(const ModelSpec& m, const Formats& f, const GpuSpec& gpu, double gemm_floor_s, const SiliconTables& tables);

}  // namespace shardwise
