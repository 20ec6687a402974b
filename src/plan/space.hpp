// The search space: a plan as a MultiDiscrete vector, one head per degree, one
// for the batch and one per sharding slot (the paper's action a = (a_TP, a_EP,
// a_PP, a_B, a_dim(1..L)), widened by attention-DP and the context split).
// Candidate values per head come from the model (divisors of heads, layers,
// experts) and the cluster (counts up to its size). Plans that break a rule
// stay in the space: the simulator answers Infeasible, as the paper counts
// invalid calls. Replicas are derived: as many copies as the cluster holds.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"
#include "plan/plan.hpp"
#include "workload/workload.hpp"

namespace shardwise {

enum class Head : std::uint8_t { kTp, kPp, kEp, kAttnDp, kBatch };
constexpr int kNumDegreeHeads = 5;
constexpr int kNumHeads = kNumDegreeHeads + kNumSlots;
using Action = std::array<std::uint16_t, kNumHeads>;  // index into each head's candidates

struct SearchSpace {
  std::vector<std::int32_t> tp, pp, ep, attn_dp;
  std::vector<std::int64_t> batch;  // per attention-DP group; the plan's batch is batch x attn_dp
  std::int64_t cluster_gpus = 0;
  std::int32_t redundant_experts = 0;  // given, not searched: every plan carries them, ep divides experts + these
  [[nodiscard]] std::array<int, kNumHeads> sizes() const;
  [[nodiscard]] double size() const;  // number of joint configurations
  [[nodiscard]] Plan decode(const Action& a) const;
  // The action closest to a plan (exact when the plan's values are candidates).
  [[nodiscard]] Action encode(const Plan& p) const;
};

// The documented batch ladder: 1, 2, 4, 8, then steps of x1.5 rounded, up to 4096
// sequences per attention-DP group (docs/search.md).
std::vector<std::int64_t> batch_ladder(std::int64_t max_per_group);
// `redundant_experts` (MoE): EPLB slots every plan of the space carries; ep ranges over the
// divisors of experts + redundant_experts.
SearchSpace make_space(const ModelSpec& m, const ClusterSpec& c, const Workload& w, std::int32_t redundant_experts = 0);
// A uniform draw of every head (the random walk's step, and the executor's property test).
Action random_action(const std::array<int, kNumHeads>& sizes, Rng& rng);
const char* head_name(int head);

}  // namespace shardwise
