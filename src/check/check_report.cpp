// check's renderings: predicted beside measured, as a table or one JSON object (docs/check.md).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/check.hpp"
#include "plan/plan_json.hpp"
#include "report/serve_report.hpp"
#include "report/simulate.hpp"

namespace shardwise {
namespace {

using nlohmann::json;


// The median absolute error of the rows whose metric starts with `prefix` (nullopt: none).
std::optional<double> median_abs(const std::vector<CheckRow>& rows, std::string_view prefix) {
  std::vector<double> e;
  for (const auto& r : rows) {
    if (r.metric.rfind(prefix, 0) == 0) e.push_back(std::abs(r.error()));
  }
  if (e.empty()) return std::nullopt;
  std::sort(e.begin(), e.end());
  const std::size_t n = e.size();
  return n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2.0;
}

std::string number(double v) { return v >= 100 ? fmt::format("{:.1f}", v) : v >= 1 ? fmt::format("{:.2f}", v) : fmt::format("{:.3f}", v); }

}  // namespace

std::string check_text(const SimContext& ctx, const Deployment& d, const CheckResult& r, const std::vector<std::string>& warnings) {
  std::string s = fmt::format("check        {} ({}) against the plan's prediction\n", r.file, r.tool);
  s += d.prefill ? fmt::format("deployment   disaggregated: {} prefill + {} decode GPUs\n", d.prefill->deg.total_gpus(), d.plan.deg.total_gpus())
                 : plan_lines(ctx, d.plan);
  const Workload& w = r.workload;
  s += fmt::format("traffic      {} requests, {}; input {}, output {} tokens\n", w.serve.requests, arrivals_label(w),
                   lengths_label(w.serve.input, w.isl), lengths_label(w.serve.output, w.osl));
  s += fmt::format("engine       {}{}\n", ctx.engine.name, ctx.engine.version.empty() ? "" : " " + ctx.engine.version);
  for (const auto& n : r.notes) s += "note         " + n + "\n";
  for (const auto& n : warnings) s += "warning      " + n + "\n";
  if (!r.simulated) {
    s += fmt::format("NOT SIMULATED {}\n", r.reason);
    return s;
  }
  s += fmt::format("\n{:<22}{:>14}{:>14}{:>10}\n", "metric", "predicted", "measured", "error");
  for (const auto& row : r.rows) {
    s += fmt::format("{:<22}{:>14}{:>14}{:>+9.1f}%\n", row.label, number(row.predicted), number(row.measured), row.error() * 100.0);
  }
  if (r.rows.empty()) s += "(the result holds no metric the prediction has)\n";
  s += "\nerror = (predicted - measured) / measured: + the prediction is higher (slower latency, more throughput)\n";
  const auto line = [&](const char* what, std::string_view prefix) {
    if (const auto m = median_abs(r.rows, prefix)) s += fmt::format("median |error| {:<8} {:.1f}%\n", what, *m * 100.0);
  };
  line("TTFT", "ttft");
  line("TPOT", "tpot");
  line("E2E", "e2e");
  return s;
}

std::string check_json(const SimContext& ctx, const Deployment& d, const CheckResult& r, const std::vector<std::string>& warnings) {
  json j;
  j["schema"] = "shardwise-check/1";
  j["result_file"] = r.file;
  j["tool"] = r.tool;
  j["model"] = ctx.model.name;
  j["cluster"] = ctx.cluster.name;
  j["engine"] = {{"name", ctx.engine.name}, {"version", ctx.engine.version}};
  PlanFile pf{d.plan, ctx.model.name, ctx.cluster.name, ctx.workload.name, {}, d.prefill};
  j["plan"] = json::parse(plan_to_json(pf));
  const Workload& w = r.workload;
  j["traffic"] = {{"requests", w.serve.requests},
                  {"arrivals", to_string(w.serve.arrivals.kind)},
                  {"rate", w.serve.arrivals.kind == Arrivals::Kind::kPoisson ? json(w.serve.arrivals.rate) : json(nullptr)},
                  {"users", w.serve.arrivals.kind == Arrivals::Kind::kClosed ? json(w.serve.arrivals.concurrency) : json(nullptr)},
                  {"mean_input", mean_of(*w.serve.input)},
                  {"mean_output", mean_of(*w.serve.output)}};
  j["simulated"] = r.simulated;
  j["reason"] = r.simulated ? json(nullptr) : json(r.reason);
  json rows = json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"metric", row.metric}, {"predicted", row.predicted}, {"measured", row.measured}, {"error", row.error()}});
  }
  j["rows"] = rows;
  j["notes"] = r.notes;
  j["warnings"] = warnings;
  return j.dump(2, ' ', false, json::error_handler_t::replace);  // a file name need not be UTF-8
}

}  // namespace shardwise
