// Phase plans (Seesaw, MLSys 2025; issue 29; docs/phases.md): one set of GPUs runs the
// prefill phase in one layout and the decode phase in another, switching between them.
// Prompts are prefilled until the KV buffer (GPU memory, then host memory) holds
// `buffer_seqs` sequences; the GPUs then switch to the decode layout and decode them all;
// then switch back. Value type; validation says why a phase plan cannot run.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.hpp"

namespace shardwise {

struct PhasePlan {
  Plan prefill;  // the prefill layout: degrees, sharding, micro-batches (its batch is unused)
  Plan decode;   // the decode layout; batch = sequences decoded at once per instance (0 = the most that fit)
  // Sequences prefilled per switch (over all the GPUs); 0 = as many as the decode layout holds
  // at once (no host tier). More than that parks the rest's KV cache in host memory.
  std::int64_t buffer_seqs = 0;
  // Host memory per GPU the plan was made for (plan --phases --host-buffer-gib), bytes; 0: the
  // cost's default (80 GiB). simulate and launch cost the plan with it.
  double host_bytes_per_gpu = 0;
  friend bool operator==(const PhasePlan&, const PhasePlan&) = default;
};

// Whether two layouts run the same way (degrees, sharding, micro-batches, redundant experts,
// two-batch overlap): a phase plan whose layouts are equal is the static plan.
bool same_layout(const Plan& a, const Plan& b);

// Why the phase plan cannot run (each layout as validate_plan says, both on the same GPUs:
// equal GPU counts); nullopt when it can.
std::optional<std::string> validate_phase_plan(const PhasePlan& p, const ModelSpec& m, const ClusterSpec& c);

// One layout: "tp 4 x attn_dp 1 x pp 2 (ep 8) x 2 replicas, ffn1=none ..." (the sharding when
// it is not Megatron's)
std::string layout_label(const Plan& p);
// "prefill tp 1 x attn_dp 1 x pp 8 -> decode tp 4 x attn_dp 1 x pp 2, buffer 512 sequences"
std::string phase_plan_label(const PhasePlan& p);

}  // namespace shardwise
