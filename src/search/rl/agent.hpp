// The "Learning to Shard" search loop: PPO on the policy network over the elite
// history, as the paper runs it (docs/search.md lists every setting).
#pragma once
#include <memory>
#include <optional>
#include <string>

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
};

struct AgentStats {
  double policy_s = 0, simulator_s = 0;
  int early_exits = 0, reinits = 0;
};

// The `rl` engine's settings: the paper's plus exploitation and coordinate sweeps.
AgentSettings improved_settings();

// Runs the agent; `warm` (optional) starts every chunk from a saved policy instead
// of a random one (the dims must match the space). `trained` receives the last network.
SearchResult search_rl(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, const AgentSettings& s,
                       const Policy* warm = nullptr, std::unique_ptr<Policy>* trained = nullptr, AgentStats* stats = nullptr);

// The network's dimensions for a search space (one-hot per head + value + present flag per record).
PolicyDims dims_for(const SearchSpace& space, int elites);

}  // namespace shardwise::rl
