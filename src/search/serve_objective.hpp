// A search objective beyond the exact engine's reach: the request-level serving simulation
// (docs/search.md, "Where exact cannot certify"). Each plan's batch is the serving knob
// it becomes under load, the engine's cap on running sequences per scheduling lane (scheduler_lanes)
// (vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM max_batch_size); the
// plan serves a closed loop of that many users per instance through the engine's scheduler,
// and its value is output tokens/s per GPU within the workload's percentile SLOs.
#pragma once
#include <cstdint>
#include <functional>

#include "cost/simulator.hpp"
#include "plan/plan.hpp"

namespace shardwise {

// The objective for SearchOptions::objective. `ctx`'s workload gives the lengths (with
// their distributions) and the SLOs (mean or percentiles); `requests` requests per
// instance are simulated (seeded: the same plan, the same value). A plan that breaks a rule
// or whose weights leave no KV cache is infeasible as in the closed form; otherwise the
// simulation decides (a missed SLO: kTtftSlo or kTpotSlo with the figures). `ctx` must
// outlive the returned function.
std::function<Metrics(const Plan&)> serving_objective(const SimContext& ctx, std::int64_t requests);

}  // namespace shardwise
