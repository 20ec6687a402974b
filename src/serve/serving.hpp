// The serving simulation: requests arriving over time at one plan, scheduled as the
// engines schedule them (continuous batching, chunked prefill under a token budget, a cap
// on running sequences, paged KV admission with preemption), from the cost layer's step
// times. docs/serving.md has the model, what it leaves out, and the checks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/control.hpp"
#include "cost/simulator.hpp"
#include "workload/serving.hpp"

namespace shardwise {

// Summary statistics of one latency over the requests, in milliseconds.
struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  // the statistic of an SLO bound (0: the mean; else 50, 90, 95, 99, 99.9)
  [[nodiscard]] double stat(double pct) const;
};
// The q-quantile (0..1) of the values, linear between order statistics (numpy's default).
double quantile_of(std::vector<double> v, double q);
LatencyStats latency_stats(const std::vector<double>& ms);

// One request's fate (seconds from the start of the simulation).
struct RequestRecord {
  double arrival_s = 0, admitted_s = 0, first_token_s = 0, finish_s = 0;
  std::int64_t input = 0, output = 0;
  std::int32_t preemptions = 0;
};

enum class Bottleneck : std::uint8_t { kQueueing, kPrefill, kDecode, kKvCache };

// Near the knee (docs/serving.md, "Near capacity: the knee check"): Poisson arrivals offered at
// kKneeLoad of the capacity or more are run once more, the same requests (the same seed and
// count) offered kKneeRateStep more often: how far the latencies move for a rate, or a
// capacity, a few percent off. Near its capacity a deployment's TTFT is steep in the rate
// (bench/validate_public --load-sweep: the simulated MLPerf Server rows' mean TTFT grows up to
// six-fold for 2% more requests/s).
constexpr double kKneeLoad = 0.8;
constexpr double kKneeRateStep = 0.02;
struct KneeCheck {
  double rate_scale = 0;        // 1 + kKneeRateStep
  LatencyStats ttft_ms, tpot_ms;  // that run's (its steady window, as the main run's)
  bool past_capacity = false;   // the scaled rate exceeds the measured capacity: an overload at that rate
  bool queue_grew = false;      // the queue grew over that run
  std::string skipped;          // not run (the time limit would not leave it time, or cut it short): why; the fields above unset
};
const char* to_string(Bottleneck b);

struct ServeResult {
  bool feasible = true;
  bool stopped = false;      // stopped by the watch (a time limit or an interrupt): infeasible, no statistics
  std::string reason;        // why not, when infeasible
  LatencyStats ttft_ms, tpot_ms, e2e_ms;
  double output_tok_s_per_gpu = 0, total_tok_s_per_gpu = 0;
  double requests_per_s = 0, goodput_requests_per_s = 0;  // the whole deployment (every replica)
  double offered_requests_per_s = 0;   // Poisson or trace arrivals (0 otherwise)
  double capacity_requests_per_s = 0;  // saturated: every request queued at once, the completion rate between
                                       // the 10th and 90th percentile completions (0 when not measured)
  double queue_growth_ms = 0;          // the last quarter of the arrivals' mean wait for admission less the first's
  double mean_in_system = 0;           // requests waiting or running, time-averaged, per instance
  double mean_running = 0;             // running sequences, time-averaged, per instance
  double makespan_s = 0;               // first arrival to last completion
  std::int64_t requests = 0;           // simulated (one instance)
  std::int64_t iterations = 0, events = 0, preemptions = 0, step_evaluations = 0;
  std::int64_t kv_tokens = 0;          // the instance's KV cache in tokens
  double kv_blocked_share = 0;         // of iterations with a waiting request, those where KV blocked its admission
  double seq_cap_share = 0;            // ... where the cap on running sequences did
  Bottleneck bottleneck = Bottleneck::kDecode;
  std::string bottleneck_note;
  // each stage of the mean request, ms: waiting for admission, admission to first token, decode
  double queue_ms = 0, prefill_ms = 0, decode_ms = 0;
  // The steady-state window (docs/serving.md, "Steady state"): the statistics are those of
  // the requests arriving between the 10th and the 90th percentile arrival (warm-up and drain
  // left out; a closed loop's trimmed to whole cycles of its users), throughput those requests
  // over the span from the first of them to the first arrival after them; its two halves are
  // compared.
  std::int64_t measured_requests = 0;  // in the window (one instance; every request when under kMinWindowed)
  double window_start_s = 0;           // the first measured arrival
  double window_s = 0;                 // its span, to the first arrival after the measured ones (0: measured over the whole run, as all-at-once arrivals are)
  double halves_diff = 0;              // the largest relative difference between the halves (throughput; TTFT and TPOT mean, p50, p90)
  bool stable = true;                  // the halves agree (kSteadyThroughputTol, kSteadyLatencyTol)
  std::int64_t length_runs = 1;        // simulations of growing length the automatic request count took
  std::vector<RequestRecord> records;  // when asked for
  std::optional<KneeCheck> knee;       // when asked for (ServeOptions::knee_check) and run at kKneeLoad or more
};

// Steady state: runs of at least kMinWindowed requests are measured inside the window; the
// halves agree when throughput differs by at most kSteadyThroughputTol and each latency
// statistic by at most kSteadyLatencyTol (or 1 ms). Without a request count the length
// doubles from kDefaultRequests (over the replicas) until they agree, up to kMaxAutoRequests
// per instance.
constexpr std::int64_t kMinWindowed = 50;
constexpr double kSteadyThroughputTol = 0.05;
constexpr double kSteadyLatencyTol = 0.10;
constexpr std::int64_t kMaxAutoRequests = 64'000;

struct ServeOptions {
  bool keep_records = false;
  bool measure_capacity = true;  // run the saturated case too (Poisson and trace arrivals)
  bool exact_steps = false;      // the cost layer at every step, no grid (StepTimes)
  bool knee_check = false;       // near the capacity, run again at kKneeRateStep more requests/s (KneeCheck)
  Watch* watch = nullptr;        // a time limit, an interrupt, progress lines (core/control.hpp)
};

// Arrivals a deployment cannot be simulated with: bad input (exit 2), never an INFEASIBLE
// result. Closed-loop users that do not split evenly over the replicas of an aggregated
// plan (a disaggregated plan's pools route every user's requests themselves).
// The error names `origin` (the flag, or the workload file) and `field` ("" for a flag).
std::optional<Error> arrivals_error(const Workload& w, std::int64_t replicas, bool disaggregated, const std::string& origin,
                                    const std::string& field);

// Simulates the context's serve workload on one instance of the plan (each replica takes
// 1 / replicas of the traffic; rates and throughputs are reported for the deployment). The
// plan must be valid; memory that leaves no KV cache, overload and missed SLOs make the
// result infeasible with the reason.
ServeResult simulate_serving(const SimContext& ctx, const Plan& plan, const ServeOptions& opt = {});
// The deployment's capacity in requests/s: the workload's requests (lengths, count, seed)
// all queued at once, the completion rate between the 10th and 90th percentile completions.
// 0 when a request cannot fit the KV cache.
double saturated_requests_per_s(const SimContext& ctx, const Plan& plan, Watch* watch = nullptr);

}  // namespace shardwise
