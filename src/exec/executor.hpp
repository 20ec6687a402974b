// The SPMD executor: runs a Case on N MPI ranks (N = the plan's instance size),
// rank order tp innermost, then attention-DP, then pipeline stage, as the
// simulator numbers them. Every collective the simulator inserts is a real MPI
// call on the same group, and its bytes go into the ledger. Only this file's
// implementation and the worker include MPI.
#pragma once
#include <string>

#include "exec/ledger.hpp"
#include "exec/tiny.hpp"

namespace shardwise::exec {

struct Fault {
  std::string op;           // drop the collectives of this op ("" = none) ...
  std::int64_t layer = -2;  // ... in this layer (-1: embedding, LM head, pipeline)
  [[nodiscard]] bool active() const { return !op.empty(); }
};

struct RankResult {
  Logits logits;  // what this rank produced (the last stage's tp-rank 0 of each group)
  Ledger ledger;  // what this rank sent
  std::int64_t dropped = 0;  // collectives this rank skipped because of the fault
};

// Runs on every rank of `world` (an MPI_Comm passed as void* to keep MPI out of
// this header). Throws std::runtime_error when the case breaks an executor rule.
RankResult execute(const Case& c, const Weights& w, const Inputs& in, const Fault& fault, void* world);

}  // namespace shardwise::exec
