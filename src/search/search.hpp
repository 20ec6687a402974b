// One interface for every search engine (the flat problem of ARCHITECTURE.md):
// an engine sees a SearchSpace and an evaluator of actions, never the model.
// Every evaluator call counts against the budget, invalid ones included.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/control.hpp"
#include "core/thread_pool.hpp"
#include "cost/engine_limits.hpp"
#include "cost/simulator.hpp"
#include "plan/space.hpp"

namespace shardwise {

struct SearchOptions {
  std::int64_t budget = 4000;  // evaluator calls
  double time_limit_s = 0;     // 0: none
  Watch* watch = nullptr;      // the command's: its time limit and interrupts stop the search too (core/control.hpp)
  std::uint64_t seed = 1;
  int threads = 1;
  // Called at most every ~0.2 s: calls used, best value, elapsed seconds.
  std::function<void(std::int64_t, double, double)> progress;
  // Keep every evaluated plan that fits memory (SearchResult::points), for the
  // report's throughput-latency frontier. Off in searches that do not need it.
  bool record_points = false;
  // Keep a HistoryPoint for every call (the determinism tests compare whole traces).
  // Off by default: then only the calls that improved the best, and the last call, are
  // kept, so that memory does not grow with the budget.
  bool full_history = false;
  // exact only: evaluate each winner at its own largest feasible batch after the ladder
  // (on by default; off gives the optimum of the ladder space the other engines search)
  bool refine_batch = true;
  // Replaces the closed-form simulator as the objective of every call (e.g. the serving
  // simulation, search/serve_objective.hpp): a plan's Metrics, objective and feasibility.
  // Must be safe to call from several threads at once. The exact engine cannot certify such
  // an objective: it runs its closed-form search, scores the winner with this, and says so.
  std::function<Metrics(const Plan&)> objective;
};
// At most this many points are recorded (the first ones); the report's frontier of a
// longer search is drawn from them.
constexpr std::size_t kMaxRecordedPoints = 20000;

// One evaluated plan that fits memory: its latency (TPOT; TTFT for prefill) and
// throughput per GPU (output tokens/s; input tokens/s for prefill), and whether it
// meets the SLOs (a plan over an SLO still has a latency and a throughput).
struct EvalPoint {
  double latency_s = 0;
  double throughput = 0;
  bool meets_slo = false;
  Degrees deg;
  std::int64_t batch = 0;
  bool megatron_sharding = true;
};
// The point of a plan's metrics; nullopt when it does not fit memory or is invalid.
std::optional<EvalPoint> eval_point(const SimContext& ctx, const Plan& plan, const Metrics& m);

struct HistoryPoint {
  std::int64_t call = 0;  // 1-based index of the evaluator call
  double value = 0;       // objective of that call (0 when infeasible)
  double best = 0;        // best so far
};

struct SearchResult {
  std::string engine;
  bool found = false;  // a feasible plan was seen
  Plan best;
  double best_value = 0;
  std::int64_t best_call = 0;  // the call that first reached best_value
  std::vector<HistoryPoint> history;  // improvements and the last call (every call with full_history)
  std::int64_t calls = 0, invalid_calls = 0;
  double wall_s = 0;
  bool stopped_by_time = false;       // by its time limit or the watch's (a time limit or an interrupt)
  double policy_s = 0, simulator_s = 0;  // the RL engines' split of wall time (0 for the others)
  std::int64_t policy_calls = 0;         // the RL engines: calls proposed by a policy step (the rest: sweeps, polishing)
  std::vector<EvalPoint> points;         // with SearchOptions::record_points
  // When nothing feasible was found: the valid plan that came closest (the smallest
  // relative excess over memory or an SLO at its smallest batch, see infeasibility_excess;
  // its batch is then 0, "max"), and an example of the rule that invalid plans broke.
  std::optional<Plan> closest;
  double closest_excess = 0;
  std::string invalid_example;
  // exact with SearchOptions::objective: why its plan is not proven optimal (empty otherwise)
  std::string not_certified;
  // refine_two_batch_overlap: the search's plan and value before the overlap was added ("" if it was not)
  std::string overlap_note;
  // refine_two_batch_overlap: the search's own value before the overlap replaced its plan (0 if it did not)
  double value_before_overlap = 0;
  // The search's own best, as it searched: before the two-batch overlap refinement replaced its
  // plan (what runs of other engines, which are not so refined, compare with)
  [[nodiscard]] double searched_value() const { return !overlap_note.empty() && value_before_overlap > 0 ? value_before_overlap : best_value; }
  // refine_batch: the batch the search found and the largest feasible one its winner took
  // instead, as exact takes each winner's ("" when the search's batch was already the best)
  std::string batch_note;
};

// The evaluator and bookkeeping shared by every engine: budget, time limit,
// best so far, history, parallel batches. Results do not depend on threads.
class Tracker {
 public:
  Tracker(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, std::string engine);
  // Evaluates actions in order, in parallel, up to the budget; returns one value per
  // evaluated action (fewer when the budget or time ran out). Infeasible -> 0.
  std::vector<double> evaluate(const std::vector<Action>& actions);
  double evaluate_one(const Action& a);  // -1 when the budget is spent
  [[nodiscard]] bool exhausted() const;
  [[nodiscard]] std::int64_t remaining() const { return opt_.budget - result_.calls; }
  [[nodiscard]] const SearchSpace& space() const { return space_; }
  [[nodiscard]] bool last_valid(std::size_t i) const { return valid_[i]; }
  SearchResult finish();

 private:
  const SimContext& ctx_;
  const SearchSpace& space_;
  SearchOptions opt_;
  SearchResult result_;
  ThreadPool pool_;
  double start_ = 0, last_progress_ = 0;
  std::vector<double> values_;
  std::vector<char> valid_;
  std::vector<Plan> plans_;
  std::vector<Metrics> metrics_;
  HistoryPoint last_;  // the latest call not kept in the history
};

double now_seconds();

// The engines. Each returns the best plan seen; the plan command re-evaluates it.
SearchResult search_megatron(const SimContext& ctx, const SearchSpace& space, SearchOptions opt);
// Every plan a serving engine can run as planned (cost/engine_limits.hpp), exhaustively: each
// degree tuple and batch of the space the engine allows, under each sharding it runs those
// degrees with (one or two). The optimum of that space (plan --engine).
SearchResult search_for_engine(const SimContext& ctx, const SearchSpace& space, SearchOptions opt, ServeEngine engine);
// The winner of a sampling engine (rl, rl-paper, rw, sa, ga) at its own largest feasible batch,
// as exact takes each winner's (the batch ladder's values are samples; the best batch lies
// between them): one closed-form evaluation beyond the budget, after the search, leaving its
// history as it ran. Not for Megatron's baseline (exhaustive over the ladder, as published) or
// exact. True when it improved the plan (batch_note says how).
bool refine_batch(const SimContext& ctx, SearchResult& r);
// Two-batch overlap beside a search's winner: the search's space holds no overlap choice (it
// couples the exact search's slot groups), so it is tried afterwards on the best plan, where
// the plan allows it (MoE, attention DP, EP, one stage) and `engine`, if given, runs it: at
// each batch of the space's ladder, under opt.objective when set. The result takes it when
// it is better, and says so in `overlap_note`; returns whether it did.
bool refine_two_batch_overlap(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, SearchResult& r,
                              std::optional<ServeEngine> engine = std::nullopt);
SearchResult search_random_walk(const SimContext& ctx, const SearchSpace& space, SearchOptions opt);
SearchResult search_annealing(const SimContext& ctx, const SearchSpace& space, SearchOptions opt);
SearchResult search_genetic(const SimContext& ctx, const SearchSpace& space, SearchOptions opt);
// The provable optimum of the space under the simulator (search/exact.cpp); its
// calls are the grouped evaluations it needed, and it ignores the budget.
SearchResult search_exact(const SimContext& ctx, const SearchSpace& space, SearchOptions opt);

// "megatron", "rw", "sa", "ga" -> engine; nullptr if unknown.
using Engine = SearchResult (*)(const SimContext&, const SearchSpace&, SearchOptions);
Engine find_engine(const std::string& name);
const char* engine_names();

}  // namespace shardwise
