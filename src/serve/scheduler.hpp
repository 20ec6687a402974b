// Internal to serve/: one engine instance's scheduler, iteration by iteration, over a list
// of requests (docs/serving.md, "The scheduler"), and the request generator. serving.cpp
// (one plan) and disagg.cpp (prefill and decode pools) run it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/control.hpp"
#include "cost/simulator.hpp"
#include "serve/serving.hpp"
#include "serve/step_times.hpp"

namespace shardwise::serve_detail {

struct Req {
  double arrival = 0;
  std::int64_t isl = 0, osl = 0;
  // the prompt is already in this instance's KV cache and its first token produced (a
  // disaggregated decode pool's request): admitted for decode only
  bool ready = false;
};

// One instance's share of the workload's requests, in arrival order (closed loop: arrival
// times set as users free up; a trace: every replicas-th request).
std::vector<Req> make_requests(const Workload& w, std::int64_t replicas);

// The seconds the statistics of a finished run take per request (three sorts of its
// latencies, measured: about 2.4 s for 10 million requests on one core), kept in reserve
// before a time limit.
constexpr double kStatsSecondsPerRequest = 4e-7;

struct Core {
  ServeResult res;
  std::vector<RequestRecord> rec;
  // the saturated iterations: those after the first completion that leave a request waiting
  // (the instance at its cap, KV cache or token budget): their count, seconds and the output
  // tokens they produced (saturated_rate's measure)
  std::int64_t sat_iters = 0;
  double sat_s = 0, sat_tokens = 0;
};
// The scheduler over `reqs` (sorted by arrival unless closed loop, where `users` send them).
// A watch that asks to stop ends the run early: the result is then infeasible with
// `stopped` set and the reason.
Core run(const SimContext& ctx, const Plan& plan, StepTimes& steps, const std::vector<Req>& reqs, Arrivals::Kind kind, std::int64_t users,
         Watch* watch = nullptr);
// The saturated completion rate of one instance (docs/serving.md, "Capacity and overload"):
// `reqs` all queued at once (repeated until the instance stays saturated for at least
// kMinSaturatedIterations: up to 8 times the requests or twice the running-sequence cap,
// at most kMaxBurst); the output tokens of the saturated iterations per second over the
// requests' mean output.
constexpr std::int64_t kMinSaturatedIterations = 200;
constexpr std::int64_t kMaxBurst = std::int64_t{1} << 20;
double saturated_rate(const SimContext& ctx, const Plan& plan, StepTimes& steps, std::vector<Req> reqs, Watch* watch = nullptr);

// The statistics of finished requests (latencies, throughput over res.makespan_s per GPU,
// requests/s and goodput for `replicas` such instances).
void summarize(const Workload& w, const std::vector<RequestRecord>& recs, double gpus, double replicas, ServeResult& res);
// Above the capacity: the served rates of a windowed run (its arrivals') capped at the capacity.
void cap_at_capacity(ServeResult& res);
// Whether the queue grew over the run (docs/serving.md, "Capacity and overload").
bool queue_grew(const std::vector<RequestRecord>& recs, double& growth_ms);
// The bottleneck and the verdict on overload and the SLOs.
void judge(const Workload& w, bool overloaded, ServeResult& res);

}  // namespace shardwise::serve_detail
