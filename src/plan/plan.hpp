// Plan: one model instance (parallelism degrees + per-slot sharding + batch),
// replicated `replicas` times. Value type; validation says why a plan is illegal.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "graph/graph.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

// The CUDA-graph batch sizes an engine may be given (EngineTraits::cuda_graph_batch_sizes,
// the plan file's engine_settings.cuda_graph_batch_sizes): 1 to kMaxCudaGraphSizes sizes, each
// from 1 to kMaxCudaGraphBatch sequences per attention-DP rank.
inline constexpr std::size_t kMaxCudaGraphSizes = 256;
inline constexpr std::int64_t kMaxCudaGraphBatch = 65536;
// A size list as it is kept: ascending, repeats dropped.
inline std::vector<std::int64_t> normalized_graph_sizes(std::vector<std::int64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Ranks of one pipeline stage: W = tp x attn_dp. Attention runs in attn_dp
// groups of tp ranks, each group with its own sequences; dense MLPs and the MoE
// block run over all W ranks; experts are spread over ep groups and each expert
// is split over W / ep ranks (expert TP). Stages are pp blocks of W ranks.
// a x b for non-negative a, b, saturating at INT64_MAX (negative inputs give 0).
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

struct Degrees {
  std::int32_t tp = 1;
  std::int32_t pp = 1;
  std::int32_t ep = 1;
  std::int32_t attn_dp = 1;
  std::int32_t replicas = 1;
  friend bool operator==(const Degrees&, const Degrees&) = default;
  // Products saturate at INT64_MAX instead of wrapping (degrees read from a file can be
  // up to 2^20 each: 2^20 x 2^20 x 2^20 x 2^20 would wrap to 0 GPUs); a saturated count
  // is larger than any cluster, so validation refuses it.
  [[nodiscard]] std::int64_t stage_width() const { return sat_mul(tp, attn_dp); }
  [[nodiscard]] std::int64_t instance_gpus() const { return sat_mul(stage_width(), pp); }
  [[nodiscard]] std::int64_t total_gpus() const { return sat_mul(instance_gpus(), replicas); }
  [[nodiscard]] std::int64_t expert_tp() const { return stage_width() / ep; }
};

// The layers [first, last) of pipeline stage `st` of `pp` over `layers` layers. As the
// engines split them (vLLM's get_pp_indices): layers / pp each, and the remainder one
// more each on the stages before the last, from the second-to-last backwards (the last
// stage also holds the LM head). DeepSeek-V3's 61 layers on pp 4: 15, 15, 16, 15.
struct LayerRange {
  std::int64_t first = 0, last = 0;
  [[nodiscard]] std::int64_t size() const { return last - first; }
};
// Inline: the simulator calls it per stage in its hot path.
inline LayerRange stage_layers(std::int64_t layers, std::int64_t pp, std::int64_t st) {
  const std::int64_t base = layers / pp, rem = layers % pp;
  const std::int64_t extra_from = pp - 1 - rem;  // stages extra_from .. pp - 2 hold one more
  const auto extra_before = [&](std::int64_t s) {
    const std::int64_t k = (s < pp - 1 ? s : pp - 1) - extra_from;
    return k > 0 ? k : std::int64_t{0};
  };
  return LayerRange{st * base + extra_before(st), (st + 1) * base + extra_before(st + 1)};
}

using Sharding = std::array<std::uint8_t, kNumSlots>;  // choice index per slot; all 0 = Megatron
constexpr Sharding megatron_sharding() { return Sharding{}; }
// The paper's alternative: FFN2 sharded on the hidden dimension (all-gathers).
Sharding paper_allgather_sharding();
// Megatron's with the dense MLPs and shared experts data-parallel (ffn1 = ffn2 = none): how
// vLLM and TensorRT-LLM run them under attention data parallel ("dp-mlp").
Sharding dp_mlp_sharding();

struct Plan {
  Degrees deg;
  std::int64_t batch = 1;          // concurrent sequences per instance (all attention-DP groups together)
  std::int32_t micro_batches = 0;  // pipeline micro-batches; 0 = automatic (see docs/cost-model.md)
  Sharding sharding = megatron_sharding();
  // Redundant expert slots (EPLB): copies of the busiest experts beside the routed ones, so
  // that ep need only divide experts + redundant_experts; they cost memory and even the load.
  std::int32_t redundant_experts = 0;
  // Two-batch overlap (vLLM --enable-dbo, SGLang --enable-two-batch-overlap): each step runs
  // as two micro-batches whose MoE all-to-all overlaps the other's compute (docs/cost-model.md,
  // "Two-batch overlap"); MoE with attention data parallel and expert parallel, pp 1.
  bool two_batch_overlap = false;
  friend bool operator==(const Plan&, const Plan&) = default;
};

// Why the plan cannot run at all on this model and cluster (independent of
// memory and SLOs, which the simulator checks); nullopt when it is legal.
std::optional<std::string> validate_plan(const Plan& p, const ModelSpec& m, const ClusterSpec& c);

// The sharding with every slot that has no op in the model at Megatron's choice (the same
// plan to the simulator; what the search reports, so that plans carry no meaningless fields).
Sharding canonical_sharding(const Sharding& s, const ModelGraph& g);

// "qkv_proj=heads attention=context ..." (only slots that differ from Megatron; "megatron" if none).
std::string sharding_to_string(const Sharding& s);
// A sharding file: a YAML or JSON mapping from slot name to choice name; slots
// left out keep Megatron's choice. `file` names the source in messages.
Expected<Sharding> parse_sharding(std::string_view text, const std::string& file);
// "megatron", "allgather" (the paper's), or a path.
Expected<Sharding> load_sharding(const std::string& name_or_path);

}  // namespace shardwise
