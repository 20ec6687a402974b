// The "Learning to Shard" search loop: PPO on the policy network over the elite
// history, as the paper runs it (docs/search.md lists every setting).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/rl/policy.hpp"
#include "search/search.hpp"

namespace shardwise::rl {

struct AgentSettings {
  int elites = 3;              // T
  double alpha = 1.0;          // reward = alpha * raw + beta * (raw - best so far), raw normalised
  double beta = 2.0;
  double invalid_reward = -1.0;
  int chunks = 5;              // the budget is split into this many chunks, the network re-initialised for each
  double tau = 0.95;           // early exit when every head's largest probability reaches tau
  int rollout = 2;             // n_steps
  int epochs = 2;              // gradient steps per update
  double lr = 1e-3;            // Adam, cosine-annealed over the budget
  double clip = 0.2;
  double vf_coef = 0.5;
  double max_grad_norm = 0.5;
  // improvements over the paper (the `rl` engine; `rl-paper` keeps all of these off)
  double exploit = 0.0;        // probability of proposing a one-head mutation of the best elite instead of a policy sample
  int sweep_every = 0;         // every this many policy steps, try every value of one head on the best elite (0: never)
  bool mask_invalid = false;   // sample only actions that pass the plan's divisibility rules (masked softmax, heads in order)
  bool polish = false;         // on every new best: coordinate sweeps over all heads until none improves it
  // false: no network at all; every policy step samples uniformly among the allowed values
  // (the `rl` engine, measured: the network did not change what it finds nor when, docs/search.md;
  // bench/search_quality's `rl-net` turns it back on)
  bool network_proposals = true;
};

struct AgentStats {
  double policy_s = 0, simulator_s = 0;
  int early_exits = 0, reinits = 0;
  std::int64_t policy_calls = 0;  // calls proposed by a policy step (sampled or an elite mutation); the rest: sweeps, polishing, probe
  int warm_values = 0;   // with a warm start: the action values of this space
  int warm_matched = 0;  // of them, the ones the saved policy knew (all of them for the same space)
  std::string warm_error;  // why a warm policy could not be carried to this space (then the search started cold)
};

// The `rl` engine's settings: the paper's plus action masking, exploitation, coordinate
// sweeps and polishing of every new best, without the network (a masked local search over
// the elite history: the network was measured to add nothing, docs/search.md).
AgentSettings improved_settings();

// Runs the agent; `warm` (optional) starts every chunk from a saved policy instead
// of a random one; a policy from another space is carried over by value label
// (PolicyT::transfer), or dropped for a cold start when it cannot be (stats say which).
// `trained` receives the last network.
SearchResult search_rl(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, const AgentSettings& s,
                       const Policy* warm = nullptr, std::unique_ptr<Policy>* trained = nullptr, AgentStats* stats = nullptr);

// The plan's divisibility rules on partial actions, for masking: the heads chosen so
// far, the others at values that constrain nothing (degree 1, the smallest batch,
// "none"/"tokens" slots). Heads are sampled in kOrder; every value `allowed` marks
// keeps the partial action completable, so a fully sampled action always passes.
class ActionRules {
 public:
  ActionRules(const SimContext& ctx, const SearchSpace& space);
  [[nodiscard]] bool valid(const Action& a) const;
  // degrees (attention DP before EP, which must divide the stage width), batch, slots
  static constexpr std::array<int, kNumHeads> kOrder{0, 1, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  // out[off + v] = 1 where value v of head kOrder[i] is allowed given the heads before it in `a`.
  void allowed(Action a, std::size_t i, const std::array<int, kNumHeads>& sizes, std::vector<std::uint8_t>& out, int off) const;
  // Makes `a` pass the rules changing as little as it can: the largest expert degree that
  // fits, else slots moved to their unconstrained value one at a time. False if none works.
  bool repair(Action& a, const std::array<int, kNumHeads>& sizes) const;
  [[nodiscard]] const Action& free_values() const { return free_; }

 private:
  const SimContext& ctx_;
  const SearchSpace& space_;
  Action free_{};
};

// The network's dimensions for a search space (one-hot per head + value + present flag per record).
PolicyDims dims_for(const SearchSpace& space, int elites);

}  // namespace shardwise::rl
