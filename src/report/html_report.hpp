// The plan command's self-contained HTML report (docs/report.md): summary, per-op
// table with the collectives, time per op, memory, convergence and the
// throughput-latency frontier, as inline SVG. Nothing is fetched, no script runs.
#pragma once
#include <string>
#include <vector>

#include "report/plan_report.hpp"

namespace shardwise {

std::string plan_html(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o);
// The stylesheet every report inlines.
const char* report_style();

// The points of `pts` that no other point beats on both latency (lower) and
// throughput (higher), sorted by latency: the frontier the report draws.
std::vector<EvalPoint> pareto_frontier(std::vector<EvalPoint> pts);

}  // namespace shardwise
