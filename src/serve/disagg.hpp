// Disaggregated prefill and decode (docs/serving.md, "Disaggregated prefill and decode"):
// a prefill pool of x instances computes each prompt and its first token, the KV cache
// travels over the interconnect between the pools, and a decode pool of y instances
// generates the rest. Each pool runs the engine's scheduler (serve/scheduler.hpp).
#pragma once
#include <cstdint>

#include "cost/simulator.hpp"
#include "serve/serving.hpp"

namespace shardwise {

// One pool's engine settings, per scheduling lane (0: the context's engine's): the running
// sequences and the tokens per iteration (the prefill chunk). Each pool its own: a decode
// pool capped below the engine's default for its TPOT, a prefill pool with its own budget.
struct PoolSettings {
  std::int64_t max_num_seqs = 0, max_num_tokens = 0;
  friend bool operator==(const PoolSettings&, const PoolSettings&) = default;
};
// The context a pool runs with: `ctx` with the pool's settings where given.
SimContext pool_context(const SimContext& ctx, const PoolSettings& s);

struct DisaggPlan {
  Plan prefill;  // replicas = prefill instances
  Plan decode;   // replicas = decode instances
  PoolSettings prefill_settings, decode_settings;
  [[nodiscard]] std::int64_t gpus() const { return prefill.deg.total_gpus() + decode.deg.total_gpus(); }
};

struct DisaggResult {
  ServeResult total;                  // per request end to end; throughput over every GPU of both pools
  double prefill_capacity = 0;        // requests/s the prefill pool completes saturated (0 when not measured)
  double decode_capacity = 0;         // requests/s the decode pool completes saturated
  double transfer_ms = 0;             // mean KV transfer between the pools
  double kv_mb_per_request = 0;       // mean KV bytes a request ships, MB
  double prefill_queue_ms = 0, decode_queue_ms = 0;  // mean waits for admission in each pool
  std::string link;                   // the interconnect level the KV crosses
};

// The KV cache of a prompt of `tokens` tokens, all layers (the bytes a disaggregated
// deployment ships from the prefill to the decode instance), and the time to ship it over
// the innermost level that holds both pools: bytes / (the level's per-GPU bandwidth x the
// smaller instance's GPU count, each GPU sending its shard) + the level's latency.
double kv_transfer_bytes(const SimContext& ctx, std::int64_t tokens);
double kv_transfer_s(const SimContext& ctx, const DisaggPlan& d, double bytes);

// One instance's saturated rate (requests/s) as a prefill-only instance (prompts and their
// first token) or a decode-only one (prompts arriving cached), over the workload's requests;
// 0 when a request does not fit its KV cache.
double prefill_instance_rate(const SimContext& ctx, const Plan& instance);
double decode_instance_rate(const SimContext& ctx, const Plan& instance);

// Poisson, all-at-once, trace and closed-loop arrivals (a closed loop's users send their
// next request when the decode pool finishes their last: the pools are simulated together).
// Without a request count the length doubles until the steady-state window's halves agree.
DisaggResult simulate_disaggregated(const SimContext& ctx, const DisaggPlan& d, const ServeOptions& opt = {});

}  // namespace shardwise
