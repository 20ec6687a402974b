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
std::string simulate_json(const SimContext& ctx, const Plan& plan, const Metrics& m, const Breakdown& bd);
}  // namespace shardwise
