// The step times the serving simulation asks for, from the cost layer's step model,
// cached on a grid of (batch, context) and (prompts, tokens) and interpolated between
// its points (docs/serving.md, "Step times"). One per (context, plan); not thread-safe.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

#include "cost/simulator.hpp"

namespace shardwise {

class StepTimes {
 public:
  // exact: evaluate the cost layer at every (batch, context) asked, no grid (bench/serve's
  // baseline and the measure of the grid's error).
  StepTimes(const SimContext& ctx, const Plan& plan, bool exact = false);

  // One decode iteration of n sequences at mean context c (seconds between two of a
  // sequence's steps).
  double decode(std::int64_t n, double c);
  // One prefill iteration of `tokens` prompt tokens over `pieces` requests.
  double prefill(std::int64_t tokens, std::int64_t pieces);
  // A decode-only iteration of n sequences at mean context c as the engine's CUDA graphs run
  // it (EngineTraits::cuda_graph_batch_sizes): decode() at the padded batch
  // (graph_padded_batch), its sequences at the context that keeps the busiest rank's KV read
  // its real sequences' (c x graph_kv_share); decode(n, c) where nothing is padded.
  double graph_decode(std::int64_t n, double c);
  // An iteration that decodes n sequences and prefills `tokens` tokens of `pieces` prompts
  // together (chunked prefill): the prefill's time plus what the decodes add over the
  // weight reads and overheads the two share, decode(n, c) - decode(1, 1); with no prompt
  // tokens, the decode-only iteration (graph_decode: the engines capture decode-only
  // iterations in CUDA graphs, not mixed ones).
  double mixed(std::int64_t n, double c, std::int64_t tokens, std::int64_t pieces);

  // The KV cache of one instance in tokens (every attention group's pool together), 0 when
  // the weights and workspace leave none; `reason` then says why.
  [[nodiscard]] std::int64_t kv_tokens() const { return kv_tokens_; }
  // the tokens the pool holds in whole blocks of the engine's size (what the scheduler allocates)
  [[nodiscard]] std::int64_t kv_block_tokens() const;
  [[nodiscard]] const std::string& kv_reason() const { return kv_reason_; }
  // Step evaluations done (cache misses).
  [[nodiscard]] std::int64_t evaluations() const { return evaluations_; }

 private:
  double grid_value(int axis_index) const;
  double cached(bool decode, int i, int j);
  double interpolate(bool decode, double x, double y);

  const SimContext* ctx_;
  Plan plan_;  // a copy: a plan passed as a temporary would dangle (the context must outlive this)
  std::unordered_map<std::uint64_t, double> cache_;
  std::int64_t kv_tokens_ = 0;
  std::string kv_reason_;
  std::int64_t evaluations_ = 0;
  double floor_s_ = -1;  // decode(1, 1)
  // the corners of the last cell asked for, per kind (most iterations stay in one cell)
  struct Cell {
    int i = -1, j = -1;
    double a = 0, b = 0, c = 0, d = 0;
  } last_[2];
  bool exact_ = false;
};

// The grid: integers 1..16, then 8 points per doubling (docs/serving.md).
int grid_index(double x);
double grid_point(int i);

}  // namespace shardwise
