// Renderings of a simulation: metrics, the per-op breakdown, memory per GPU.
#pragma once
#include <string>

#include "cost/simulator.hpp"

namespace shardwise {
// "moe:ffn1", "dense/swa128:attention", "lm_head": an op of the breakdown with its layer class.
std::string op_label(const SimContext& ctx, const OpCost& o);
// The plan and sharding lines, and the formats / engine / speculative / calibration lines,
// of simulate's text (serve_text shares them).
std::string plan_lines(const SimContext& ctx, const Plan& plan);
std::string context_lines(const SimContext& ctx);
std::string simulate_text(const SimContext& ctx, const Plan& plan, const Metrics& m, const Breakdown& bd);
std::string simulate_json(const SimContext& ctx, const Plan& plan, const Metrics& m, const Breakdown& bd, bool explain = false);
// `simulate --explain`: per op its time, what bounds it (compute, memory, latency: the kernel
// floor, network: its collectives), where the time comes from (measured, transferred,
// extrapolated kernel rows, or the model) and the table behind it; then the share of the
// step resting on measured or transferred rows (docs/silicon.md).
std::string explain_text(const SimContext& ctx, const Breakdown& bd);
struct ExplainShares {
  double total_s = 0;  // the ops' time over the stage's layers (compute + communication)
  double measured_s = 0, transferred_s = 0, extrapolated_s = 0, model_s = 0;
  double backed() const { return total_s > 0 ? (measured_s + transferred_s) / total_s : 0.0; }
};
ExplainShares explain_shares(const Breakdown& bd);
}  // namespace shardwise
