// The phase space as a flat problem for the search engines (docs/phases.md, "Search under a
// serving objective"): three heads, the prefill layout, the decode layout (both among the
// layouts of one GPU count) and the buffer (a multiple of what the decode GPUs hold), and an
// objective of any phase plan (the serving simulation, or the closed form). The elite-history
// agent (`rl`: the same loop as the plan search's, a masked local search over three elites
// with one-head mutations, head sweeps and polishing of every new best, no network),
// simulated annealing and the genetic algorithm run on it with the settings of search.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plan/phases.hpp"

namespace shardwise {

struct PhaseSpace {
  std::vector<Plan> layouts;            // every layout of one GPU count (batch 0)
  std::vector<std::int64_t> buffer_x{1, 2, 4, 8, 16, 32};  // buffer = x times the decode GPUs' batch (1: no host tier)
  [[nodiscard]] std::array<int, 3> sizes() const {
    return {static_cast<int>(layouts.size()), static_cast<int>(layouts.size()), static_cast<int>(buffer_x.size())};
  }
  // The phase plan of an action: buffer_seqs = x x gpu_seqs(decode layout), which the
  // objective resolves (decode_gpu_seqs gives the decode GPUs' batch of a layout).
  [[nodiscard]] PhasePlan decode(const std::array<int, 3>& a, std::int64_t decode_gpu_seqs) const;
};

// One run: the best value and plan, and after how many calls each improvement came.
struct PhaseRun {
  double best = 0;
  std::array<int, 3> best_action{};
  std::vector<std::pair<std::int64_t, double>> improvements;  // (calls so far, best value)
  std::int64_t calls = 0;
  // calls until the best reached `target` (-1: never)
  [[nodiscard]] std::int64_t calls_to(double target) const;
};

// The value of an action (0: infeasible or invalid). Every call counts against the budget.
using PhaseObjective = std::function<double(const std::array<int, 3>&)>;

// engine: "rl", "sa" or "ga"; the same seed, the same run.
PhaseRun search_phase_space(const std::string& engine, const std::array<int, 3>& sizes, const PhaseObjective& f, std::int64_t budget,
                            std::uint64_t seed);

}  // namespace shardwise
