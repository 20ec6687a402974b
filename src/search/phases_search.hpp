// plan --phases (issue 29; docs/phases.md): the best pair of layouts and buffer size for a
// phase plan, over the closed form, beside the best static plan and the best disaggregated
// split of the same GPUs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "cost/phases.hpp"
#include "search/phases_engines.hpp"
#include "serve/serving.hpp"
#include "plan/space.hpp"

namespace shardwise {

struct PhaseSearchOptions {
  PhaseOptions cost;
  // Layouts of each phase carried into the pairing, the best by prefill rate and by decode
  // throughput among those of one GPU count (0: every layout, every pair)
  int top_k = 16;
};

// One layout's two rates (its instance shape replicated over the cluster).
struct LayoutRates {
  Plan plan;                 // batch 0; replicas as many as the cluster holds
  double prefill_seq_s = 0;  // prompts/s over its GPUs (0: does not fit)
  DecodeRate decode;         // at its largest batch alone on the GPUs
  Metrics static_metrics;    // the static plan (offline stream) at its largest feasible batch
};

// The best disaggregated split of the GPUs in closed form: a prefill pool and a decode pool,
// each its best shape replicated, the throughput the slower pool allows.
struct DisaggSplit {
  Plan prefill, decode;  // replicas = each pool's instances
  std::int64_t prefill_gpus = 0, decode_gpus = 0;
  double output_tok_s_per_gpu = 0;  // min(prefill prompts/s x osl, decode tokens/s) / all GPUs
};

struct PhaseSearchResult {
  bool found = false;  // a feasible phase plan (layouts that differ)
  PhasePlan best;
  PhaseCost cost;
  std::optional<LayoutRates> best_static;  // the best static plan of the same layouts
  std::optional<DisaggSplit> disagg;
  std::int64_t layouts = 0, pairs = 0, evaluations = 0;
  double seconds = 0;
  std::string why_none;  // when nothing was found
};

PhaseSearchResult search_phases(const SimContext& ctx, const SearchSpace& space, const PhaseSearchOptions& opt = {});

// Under the serving objective (a serve workload): the phase space of the layouts of the whole
// cluster searched by `engine` (rl, sa or ga; search/phases_engines.hpp) for the most output
// tokens/s per GPU with the workload's requests all queued at once within its TPOT SLO (the
// TTFT of a queue is no SLO's), the best then simulated under the workload's own arrivals.
// The phase space of the layouts of the whole cluster and the serving objective of its
// actions (what search_phases_serving and bench/phases_search share).
struct PhaseServeProblem {
  PhaseSpace space;
  std::vector<std::int64_t> gpu_seqs;  // each layout's decode GPUs' batch (the buffer head's unit)
  SimContext queued;                    // the workload's requests all queued at once, the TPOT SLO alone
  PhaseOptions cost;
  [[nodiscard]] PhasePlan plan(const std::array<int, 3>& a) const { return space.decode(a, gpu_seqs[static_cast<std::size_t>(a[1])]); }
  // output tokens/s per GPU of the queued requests through the action's phase plan; 0 when
  // infeasible or the layouts are equal (the static plan, not a phase plan)
  [[nodiscard]] double value(const std::array<int, 3>& a) const;
};
PhaseServeProblem phase_serve_problem(const SimContext& ctx, const SearchSpace& space, const PhaseOptions& cost);

struct PhaseServeResult {
  bool found = false;
  PhasePlan best;
  double objective = 0;     // the queued-at-once output tokens/s per GPU
  ServeResult serve;        // the best under the workload's arrivals (its percentiles, goodput, verdict)
  PhaseRun run;             // the search's calls and improvements
  // the best static plan of the same layouts under the same objective (every layout's static
  // simulation with the requests queued, at the best cap on running sequences of a ladder from
  // 8 per attention group to the engine's; its batch is that cap over the groups)
  std::optional<Plan> static_plan;
  double static_objective = 0;
  std::int64_t space_size = 0, simulations = 0;
  std::string why_none;
};
PhaseServeResult search_phases_serving(const SimContext& ctx, const SearchSpace& space, const PhaseSearchOptions& opt, const std::string& engine,
                                       std::int64_t budget, std::uint64_t seed);

// Every layout of the space's degrees (Megatron's sharding, and the dense MLPs data-parallel
// under attention DP) with both rates; those that break a rule are left out.
std::vector<LayoutRates> layout_rates(const SimContext& ctx, const SearchSpace& space);

}  // namespace shardwise
