// Renderings of a serving simulation (simulate --mode serve): percentiles, throughput,
// goodput, the bottleneck and the verdict, as text or one JSON object (docs/serving.md).
#pragma once
#include <string>

#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "search/serve_plan.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"

namespace shardwise {
// "closed loop, 64 users" / "Poisson at 20 requests/s" / "offline (all at once)" / "trace x.csv"
std::string arrivals_label(const Workload& w);
// "TTFT p99 <= 2000 ms, TPOT p90 <= 50 ms" / "none": a workload's SLOs
std::string slo_label(const Workload& w, const char* le = "<=");  // le: the sign (HTML: "&le;")
// "1,024" / "uniform 800..1,000" / "histogram of 17 bins, mean 512": a serve workload's lengths
// (`fixed` when the workload gives no distribution)
std::string lengths_label(const std::optional<LengthDist>& d, std::int64_t fixed);
std::string serve_text(const SimContext& ctx, const Plan& plan, const ServeResult& r, double wall_s);
std::string serve_json(const SimContext& ctx, const Plan& plan, const ServeResult& r, double wall_s);
// A disaggregated deployment's simulation.
std::string serve_disagg_text(const SimContext& ctx, const DisaggPlan& d, const DisaggResult& r, double wall_s);
std::string serve_disagg_json(const SimContext& ctx, const DisaggPlan& d, const DisaggResult& r, double wall_s);
// plan --mode serve [--target-rate R]: the screen, the simulated candidates, the chosen
// deployment and its frontier. `target_rate` 0: the cluster filled with the best instance.
std::string serve_plan_text(const SimContext& ctx, const ServePlanResult& r, double target_rate, std::int64_t requests);
std::string serve_plan_json(const SimContext& ctx, const PlanFile& file, const ServePlanResult& r, double target_rate, std::int64_t requests);
}  // namespace shardwise
