// The HTML report of plan --mode serve (--report): the chosen deployment, the simulated
// candidates (aggregated and disaggregated), the throughput-per-GPU against
// tokens/s-per-user frontier and the latency percentiles against the rate. Self-contained,
// like plan_html (docs/report.md).
#pragma once
#include <string>

#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "search/serve_plan.hpp"

namespace shardwise {
std::string serve_plan_html(const SimContext& ctx, const PlanFile& file, const ServePlanResult& r, double target_rate);
}  // namespace shardwise
