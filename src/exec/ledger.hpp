// The byte ledger: logical bytes each collective moved, keyed by phase, layer,
// op, kind and group. The executor measures it from the counts it hands to MPI;
// the expected one comes from the simulator's breakdown of the same plan and
// shapes (OpCost::colls). Both count what each rank sends in the standard
// algorithms: all-gather and reduce-scatter (n-1) chunks, all-reduce 2(n-1)/n of
// the tensor, all-to-all what goes to the other ranks, send/recv what is sent.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "exec/tiny.hpp"
#include "graph/graph.hpp"
#include "hardware/collective.hpp"

namespace shardwise::exec {

// layer -1: embedding, LM head and pipeline transfers (not per layer).
struct LedgerKey {
  Phase phase = Phase::kPrefill;
  std::int64_t layer = -1;
  std::string op;
  CollKind kind = CollKind::kNone;
  std::string group;
  friend auto operator<=>(const LedgerKey&, const LedgerKey&) = default;
};
std::string to_string(const LedgerKey& k);  // "prefill layer 2 qkv_proj all-gather over tp"
using Ledger = std::map<LedgerKey, double>;    // bytes, summed over ranks, micro-batches and steps

// What the simulator charges for the case's run (prefill, then decode_steps decode
// steps), summed over the ranks of a stage and the micro-batches. Fails when the
// simulator resolves another micro-batch count than the case.
Expected<Ledger> expected_ledger(const Case& c);

struct LedgerRow {
  LedgerKey key;
  double measured = 0, expected = 0;
  [[nodiscard]] bool match() const;
};
// Every key of either ledger, in order.
std::vector<LedgerRow> compare_ledgers(const Ledger& measured, const Ledger& expected);

// A text line per ledger entry for transport between ranks, and back.
std::string serialize(const Ledger& l);
Ledger deserialize_ledger(const std::string& text);

}  // namespace shardwise::exec
