// Internal to serve/: one engine instance's scheduler, iteration by iteration, over a list
// of requests (docs/serving.md, "The scheduler"), and the request generator. serving.cpp
// (one plan) and disagg.cpp (prefill and decode pools) run it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
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

// Scheduling passes in a row that compute nothing before the scheduler reports a stall.
constexpr std::int64_t kMaxNoWorkPasses = std::int64_t{1} << 20;

struct Core {
  ServeResult res;
  std::vector<RequestRecord> rec;
  // the saturated iterations: those after the first completion that leave a request waiting
  // (the instance at its cap, KV cache or token budget): their count, seconds and the output
  // tokens they produced (saturated_rate's measure)
  std::int64_t sat_iters = 0;
  double sat_s = 0, sat_tokens = 0;
};
// One engine instance's scheduler, an iteration at a time (docs/serving.md, "The
// scheduler"): requests are added, arrive, and each step() runs one iteration from the
// instance's clock. run() drives one instance over a list of requests; a disaggregated
// closed loop drives the pools' instances together, the earliest clock first (an arrival
// between two iterations is admitted at the next one, as an engine admits it).
class Instance {
 public:
  Instance(const SimContext& ctx, const Plan& plan, StepTimes& steps);
  // A request of this instance (not yet arrived): its local index.
  std::int64_t add(const Req& r);
  // Local request i arrives at `at` (at most the clock when the instance is busy; an idle
  // instance's clock moves on to it).
  void arrive(std::int64_t i, double at);
  // The clock: the start of the next iteration.
  [[nodiscard]] double now() const { return t_; }
  // Idle until `at` (no request running or waiting).
  void idle_until(double at) { t_ = std::max(t_, at); }
  [[nodiscard]] bool busy() const { return !running_.empty() || !waiting_.empty(); }
  enum class Step : std::uint8_t { kRan, kNoWork, kStalled };
  // One iteration (kRan; the requests whose prompt ended, and those that finished, listed in
  // first_tokens() and finished()), a scheduling pass that computes nothing (kNoWork), or a
  // stall (an internal error).
  Step step();
  [[nodiscard]] const std::vector<std::int64_t>& finished() const { return just_finished_; }
  [[nodiscard]] const std::vector<std::int64_t>& first_tokens() const { return just_first_; }
  [[nodiscard]] std::int64_t completed() const { return completed_; }
  [[nodiscard]] std::int64_t iterations() const { return iterations_; }
  [[nodiscard]] const RequestRecord& record(std::int64_t i) const { return out_.rec[static_cast<std::size_t>(i)]; }
  // The run's records and counters (makespan from the first arrival to the clock).
  Core result() &&;

 private:
  std::int64_t preempt_last();
  Step no_work();
  bool grow(std::int64_t r, std::int64_t tokens);
  [[nodiscard]] std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + block_ - 1) / block_; }
  void finish(std::int64_t r);

  const EngineTraits& eng_;
  StepTimes& steps_;
  std::int64_t block_, total_blocks_, watermark_, budget0_, chunk_max_, cap_, dec_tokens_, run_steps_;
  double tps_;
  Core out_;
  std::vector<std::int64_t> prompt_, done_, blocks_, preempted_at_;
  std::vector<double> gen_, base_;  // base: output tokens folded into the prompt by a preemption's recompute
  std::vector<char> finished_, ready_;
  std::deque<std::int64_t> waiting_;
  std::vector<std::int64_t> running_, dec_, pre_idx_, pre_tok_, just_finished_, just_first_;
  std::int64_t free_blocks_, completed_ = 0, iterations_ = 0, preemptions_ = 0;
  std::int64_t waiting_iters_ = 0, kv_blocked_iters_ = 0, cap_iters_ = 0;
  // iterations left of the current multi-step decode run (EngineTraits::decode_steps): while
  // any are, the running sequences only decode and nothing is admitted
  std::int64_t run_left_ = 0;
  // attention-DP balancing (EngineTraits::adp_timeout_iters > 0 with attention DP): the DP
  // groups, and the iterations held since the last release (waiting for every group to have
  // a prompt) and since every group had one (batching)
  std::int64_t a_ = 1, adp_waited_ = 0, adp_batched_ = 0;
  bool adp_hold(std::int64_t decoding);
  // the decode-batch target (EngineTraits::decode_target_max > 0): the decisions that chose a
  // decode batch, counted, and each request's last (a multi-step run decodes only the batch its
  // decision chose); whether the last decision held the prompts back
  std::int64_t decision_ = 0;
  std::vector<std::int64_t> batch_of_;
  bool target_held_ = true;  // as the patch starts (_do_prefill = True)
  std::int64_t no_work_run_ = 0;  // scheduling passes in a row that computed nothing
  double t_ = 0, in_sys_ = 0, run_int_ = 0, first_arrival_;
};

// The decode batch of a scheduling decision with n sequences running under the engine's
// decode-batch target (EngineTraits::decode_target_*; AMD's MLPerf vLLM patch,
// _get_target_decode_batch): the maximum at or above it, n rounded down to a multiple of the
// step between the minimum and the maximum, the minimum below it (then every sequence decodes).
std::int64_t decode_target(const EngineTraits& e, std::int64_t n);

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
