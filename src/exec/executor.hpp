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

// A deliberately wrong run: skip the collectives of one op in one layer (all of them,
// or only the index-th of each execution of the op), in both phases or one.
struct Fault {
  std::string op;           // "" = no fault
  std::int64_t layer = -2;  // -1: embedding, LM head, pipeline transfers
  int index = -1;           // -1: every collective of the op
  int phase = -1;           // -1: both; else static_cast<int>(Phase)
  [[nodiscard]] bool active() const { return !op.empty(); }
};
// "OP:LAYER[:INDEX[:prefill|decode|both]]"; on error an inactive Fault and `why` set.
// (Defined in verify.cpp: the CLI parses it too.)
Fault parse_fault(const std::string& spec, std::string* why);

struct RankResult {
  Logits logits;  // what this rank produced (the last stage's tp-rank 0 of each group)
  Ledger ledger;  // what this rank sent
  std::int64_t dropped = 0;  // collectives this rank skipped because of the fault
};

// Runs on every rank of `world` (an MPI_Comm passed as void* to keep MPI out of
// this header). A broken executor rule aborts every rank (MPI_Abort, exit code 3).
RankResult execute(const Case& c, const Weights& w, const Inputs& in, const Fault& fault, void* world);

}  // namespace shardwise::exec
