// Renderings of the plan command: the chosen plan beside the Megatron baseline.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "search/search.hpp"

namespace shardwise {

struct PlanOutcome {
  SearchResult search;
  std::optional<Metrics> metrics;  // the best plan re-evaluated (with reasons)
  Breakdown breakdown;
  SearchResult baseline;  // the Megatron heuristic (exhaustive degrees, Megatron sharding)
  std::optional<Metrics> baseline_metrics;
  double space_size = 0;
  // For the HTML report (filled when one is asked for):
  Breakdown baseline_breakdown;
  std::vector<SearchResult> compared;  // --compare engines, same budget and seed
  std::vector<EvalPoint> sweep;        // the chosen plan over the batch ladder
  // When nothing feasible was found: the plan that came closest, re-evaluated with its
  // reason, and an example of the rule invalid plans broke.
  std::optional<Plan> closest;
  std::optional<Metrics> closest_metrics;
  std::string invalid_example;
  bool auto_search = false;  // --search auto chose the engine (the output says which and why)
};

std::string plan_text(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o);
std::string plan_json(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o);

}  // namespace shardwise
