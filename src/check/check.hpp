// `shardwise check`: a plan's prediction beside what a benchmark measured (docs/check.md).
// The deployment is simulated under the traffic the benchmark offered (its request count,
// rate or users, lengths), and the statistics are taken the way the tools take them: over
// every request, not the steady window of `simulate`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/result.hpp"
#include "core/control.hpp"
#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"

namespace shardwise {

// What a plan file describes: one pool (aggregated), or the decode pool beside a prefill pool.
struct Deployment {
  Plan plan;
  std::optional<Plan> prefill;
  PoolSettings prefill_settings;  // the prefill pool's own engine settings (the plan file's; empty: the context's)
};

// The deployment plan file `f` (read from `file`, named in messages) describes, on the model,
// cluster and workload it names (loaded by the caller, with the plan's overrides), the engine
// and cost parameters given (the plan's engine settings applied over `engine` unless given): each pool
// valid there, both pools within the cluster. The context's workload is the plan's.
struct PlanDeployment {
  SimContext ctx;
  Deployment d;
};
Expected<PlanDeployment> plan_deployment(const PlanFile& f, const std::string& file, const ModelSpec& model, const ClusterSpec& cluster,
                                         const Workload& workload, EngineTraits engine, const CostParams& params,
                                         bool seqs_given = false, bool tokens_given = false);

// The serve workload the benchmark ran: `base` (the plan's) with the run's request count,
// arrivals (a rate: Poisson; none, with a concurrency cap: that many users in a closed loop;
// neither: all at once) and lengths (the per-request lengths where the tool wrote them, else
// fixed at the means). What could not be carried over is a sentence in `notes`. A run with
// nothing to replay (no completed request) is an error naming the file.
Expected<Workload> workload_of_run(const Workload& base, const MeasuredRun& run, std::int64_t replicas, bool disaggregated,
                                   std::vector<std::string>* notes);

// The tools' statistics from simulated requests (one instance's, counted `replicas` times):
// TTFT, TPOT per request as (E2E - TTFT) / (output - 1) over requests of two tokens or more,
// E2E; the mean ITL as decode time over decode tokens; throughput as completions over the
// first arrival to the last completion.
struct ToolStats {
  std::int64_t completed = 0;
  double duration_s = 0;
  double request_throughput = 0, output_throughput = 0;
  LatencyStats ttft, tpot, e2e;
  double itl_mean = 0;
};
ToolStats tool_stats(const std::vector<RequestRecord>& recs, double replicas);

struct CheckRow {
  std::string metric;  // e.g. "ttft_p99_ms"
  std::string label;   // e.g. "TTFT p99 (ms)"
  double predicted = 0, measured = 0;
  // (predicted - measured) / measured: + the prediction is higher (slower latency, more throughput)
  [[nodiscard]] double error() const { return measured != 0 ? predicted / measured - 1.0 : 0.0; }
};

struct CheckResult {
  std::string tool, file;
  Workload workload;           // what was simulated
  std::vector<std::string> notes;
  bool simulated = false;      // false: the deployment could not serve the traffic (reason)
  std::string reason;
  ToolStats predicted;
  std::vector<CheckRow> rows;  // every metric both sides have
};

// Simulates `d` under the run's traffic (`ctx` holds the plan's workload; its mode must be
// serve or offline) and sets each statistic beside the run's.
Expected<CheckResult> check_run(const SimContext& ctx, const Deployment& d, const MeasuredRun& run, Watch* watch = nullptr);

// The rows of a prediction against a run (the metrics both have).
std::vector<CheckRow> compare_rows(const ToolStats& p, const MeasuredRun& run);

std::string check_text(const SimContext& ctx, const Deployment& d, const CheckResult& r, const std::vector<std::string>& warnings);
std::string check_json(const SimContext& ctx, const Deployment& d, const CheckResult& r, const std::vector<std::string>& warnings);

}  // namespace shardwise
