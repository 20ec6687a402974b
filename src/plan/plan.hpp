// Plan: one model instance (parallelism degrees + per-slot sharding + batch),
// replicated `replicas` times. Value type; validation says why a plan is illegal.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "graph/graph.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

// Ranks of one pipeline stage: W = tp x attn_dp. Attention runs in attn_dp
// groups of tp ranks, each group with its own sequences; dense MLPs and the MoE
// block run over all W ranks; experts are spread over ep groups and each expert
// is split over W / ep ranks (expert TP). Stages are pp blocks of W ranks.
struct Degrees {
  std::int32_t tp = 1;
  std::int32_t pp = 1;
  std::int32_t ep = 1;
  std::int32_t attn_dp = 1;
  std::int32_t replicas = 1;
  friend bool operator==(const Degrees&, const Degrees&) = default;
  [[nodiscard]] std::int64_t stage_width() const { return std::int64_t{tp} * attn_dp; }
  [[nodiscard]] std::int64_t instance_gpus() const { return stage_width() * pp; }
  [[nodiscard]] std::int64_t total_gpus() const { return instance_gpus() * replicas; }
  [[nodiscard]] std::int64_t expert_tp() const { return stage_width() / ep; }
};

using Sharding = std::array<std::uint8_t, kNumSlots>;  // choice index per slot; all 0 = Megatron
constexpr Sharding megatron_sharding() { return Sharding{}; }
// The paper's alternative: FFN2 sharded on the hidden dimension (all-gathers).
Sharding paper_allgather_sharding();

struct Plan {
  Degrees deg;
  std::int64_t batch = 1;          // concurrent sequences per instance (all attention-DP groups together)
  std::int32_t micro_batches = 0;  // pipeline micro-batches; 0 = automatic (see docs/cost-model.md)
  Sharding sharding = megatron_sharding();
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
