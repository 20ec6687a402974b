// Capacity planning under load (plan --mode serve, plan --target-rate; docs/serving.md,
// "Planning"): two tiers. The closed-form step model screens every instance shape of the
// search space at full speed (the offline stream at the workload's mean lengths, batch
// max, the SLOs held to its one figure); the request-level simulation then finds, for the
// best K, the highest Poisson rate one instance serves within the percentile SLOs, and
// ranks them by requests/s per GPU.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost/engine_limits.hpp"
#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"

namespace shardwise {

struct ServeCandidate {
  Plan plan;                // one instance (replicas 1)
  Metrics screen;           // the closed form
  double max_rate = 0;      // requests/s one instance serves within the SLOs (0: none)
  double capacity = 0;      // requests/s one instance completes saturated
  ServeResult at_max;       // the simulation at max_rate (at the smallest rate tried when none)
  // the engine settings it runs with (per scheduling lane): the running-sequence cap and
  // the token budget per iteration (the prefill chunk)
  std::int64_t max_num_seqs = 0, max_num_tokens = 0;
  bool steady = false;      // max_rate searched again at the automatic length (ServePlanOptions::steady_checks)
  [[nodiscard]] double per_gpu() const { return max_rate / static_cast<double>(plan.deg.instance_gpus()); }
};

// A disaggregated deployment on the same GPUs: x prefill instances of one shape, y decode
// instances of another, sized so that the pools' saturated rates balance.
struct DisaggCandidate {
  DisaggPlan plan;
  double prefill_rate = 0, decode_rate = 0;  // one instance's saturated requests/s in its role
  double max_rate = 0;                       // requests/s the deployment serves within the SLOs
  DisaggResult at_max;
  // (each pool's engine settings, per scheduling lane, are plan.prefill_settings and
  // plan.decode_settings: what the simulations ran and what launch starts)
  bool steady = false;  // max_rate searched again at the automatic length
  [[nodiscard]] double per_gpu() const { return max_rate / static_cast<double>(plan.gpus()); }
};

// One point of the chosen plan's frontier: at a share of its max rate.
struct FrontierPoint {
  double rate = 0;  // requests/s per instance
  double output_tok_s_per_gpu = 0, tok_s_per_user = 0;  // tok/s/user = 1000 / mean TPOT
  double ttft_p99_ms = 0, tpot_p99_ms = 0;
  bool feasible = false;
  LatencyStats ttft_ms, tpot_ms;  // every statistic (the report draws the SLOs')
};

struct ServePlanOptions {
  int top_k = 24;                // candidates simulated after the screen (0: every screened one; bench/serve_plan)
  std::int64_t requests = 1000;  // per simulation of the search (the bisections, the screen of settings)
  // the answers at steady state (docs/serving.md, "Steady state"): the chosen deployment's
  // check at the target rate, the max rate of the candidates that can be the answer, and the
  // frontier, at the automatic length (until the statistics are steady); false: at `requests`
  bool steady_checks = false;
  // with steady_checks: the candidates that can be the answer have their max rate searched
  // again at the automatic length (best transient first, while a transient rate beats the
  // best steady one), at most this many of each kind (aggregated, disaggregated): as many as
  // top_k simulates by default, so that by default none that can win is left unsearched (6
  // until 2026-11-29, which left a better aggregated answer unsearched: docs/serving.md)
  int steady_candidates = 24;
  int bisect_steps = 8;          // of the rate search
  double target_rate = 0;        // > 0: the fewest GPUs that serve this many requests/s
  bool disaggregated = true;     // also size disaggregated deployments (on the cluster, or the fewest GPUs for the target rate)
  bool tune_engine = true;       // try other running-sequence caps and prefill chunks on the best 3 (and on each pool of the best disaggregated deployment)
  std::optional<ServeEngine> engine;  // screen only the layouts this engine runs (plan --engine)
  // without an engine: only the layouts at least one engine (vLLM, SGLang, TensorRT-LLM) runs as
  // planned (plan --mode serve's default); false: every layout (plan --engine any)
  bool runnable_only = false;
  int disagg_shapes = 2;         // the best prefill and decode shapes paired
  std::function<void(int, int)> progress;  // candidates simulated, of how many
  Watch* watch = nullptr;        // a time limit or an interrupt ends the planning early (ServePlanResult::stopped)
};

// What planning under load cannot take (bad input, refused rather than ignored): a rate or
// users from the flags (`o`; it searches the rate), engines to compare (`compare`), a trace
// workload (its arrival times cannot be scaled). Errors name the flag, or `workload` and
// its field.
// `command` names the caller in the messages ("plan --mode serve", "a serving sweep").
std::optional<Error> serve_plan_workload_error(const Workload& w, const WorkloadOverrides& o, const std::string& workload, bool compare,
                                               const std::string& command = "plan --mode serve");

struct ServePlanResult {
  std::int64_t screened = 0;            // instance shapes the closed form evaluated
  std::int64_t screen_feasible = 0;     // of them, those that fit and pass the SLOs' necessary condition
  std::int64_t not_runnable = 0;        // shapes left out because no engine runs them (runnable_only)
  std::vector<ServeCandidate> candidates;  // the simulated ones, in screen order
  int best = -1;                        // index into candidates (the most requests/s per GPU)
  Plan deployment;                      // the best instance with its replicas
  double deployment_rate = 0;           // requests/s the deployment serves within the SLOs (the target when given)
  ServeResult deployment_result;        // simulated at deployment_rate (target mode)
  std::vector<FrontierPoint> frontier;  // the chosen deployment at 10% .. 100% of its max rate (per instance when aggregated)
  std::vector<DisaggCandidate> disagg;  // disaggregated deployments on the cluster's GPUs
  int disagg_best = -1;
  bool disagg_chosen = false;           // the best disaggregated deployment serves more requests/s per GPU (a target
                                        // rate: takes fewer GPUs, or is the only one that serves it)
  std::string disagg_reason;            // why no disaggregated deployment was found (empty when one was, or none was sought)
  std::int64_t simulations = 0;
  double wall_s = 0;
  std::string reason;                   // why nothing was found (empty otherwise)
  std::string stopped;                  // what ended the planning early ("the time limit (30 s)"), empty when it ran to the end
  // a deployment was found: the aggregated one, or the disaggregated one chosen
  [[nodiscard]] bool found() const { return (best >= 0 && deployment_rate > 0) || disagg_chosen; }
};

// The engines (vllm, sglang, trtllm) that run `p` as planned: its degrees (engine_limits) and
// its sharding among those the engine runs them with (engine_shardings).
std::vector<ServeEngine> engines_running(const SimContext& ctx, const Plan& p);

// The options every surface plans a serving deployment with (plan --mode serve, sweep, the
// Python plan()): `workload_requests` is the workload's request count (0: none given, so the
// search screens with 1,000-request runs and answers at steady state, steady_checks).
ServePlanOptions serve_plan_options(std::int64_t workload_requests, int top_k, double target_rate, std::optional<ServeEngine> engine,
                                    bool runnable_only, bool disaggregated);
// The request count a serve plan file records: none (the automatic length) when its answers are steady.
inline std::int64_t recorded_requests(const ServePlanOptions& o) { return o.steady_checks ? 0 : o.requests; }


// The plan file of the chosen deployment (plan --mode serve --out, and the Python plan()):
// the plan (or the decode pool beside `prefill_pool`) at batch max, its traffic (mode serve,
// the rate, `requests` per instance) and the engine settings it was chosen with. `base`
// carries the names and the command's overrides; unchanged when nothing was found.
PlanFile serve_plan_file(PlanFile base, const ServePlanResult& r, std::int64_t requests);

// `extra`: a plan to screen beside the space's shapes under their default shardings (the
// closed-form search's winner, with its per-op sharding).
ServePlanResult plan_serving(const SimContext& ctx, const SearchSpace& space, const std::optional<Plan>& extra,
                             const ServePlanOptions& opt);

}  // namespace shardwise
