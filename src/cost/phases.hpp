// The cost of a phase plan (Seesaw; docs/phases.md): prefill in one layout, decode in
// another on the same GPUs, the KV cache parked in host memory between them. Offline
// throughput (all requests queued) in closed form, term by term.
#pragma once
#include <cstdint>

#include "cost/simulator.hpp"
#include "plan/phases.hpp"

namespace shardwise {

struct PhaseOptions {
  // Host memory each GPU may park KV cache in (the tiered buffer; Seesaw allocates 80 GiB
  // per GPU). The weights' host copies of a non-resident plan come out of it too.
  double host_bytes_per_gpu = 80.0 * 1024.0 * 1024.0 * 1024.0;
};

// The options a phase plan was made with (its host memory per GPU, else the default).
inline PhaseOptions phase_options_for(const PhasePlan& p) {
  PhaseOptions o;
  if (p.host_bytes_per_gpu > 0) o.host_bytes_per_gpu = p.host_bytes_per_gpu;
  return o;
}

// One round: prefill `buffer_seqs` prompts, switch, decode them all, switch back.
struct PhaseCost {
  Metrics metrics;          // output tokens/s per GPU, TTFT (mean), TPOT, the fuller phase's memory; objective
  bool is_static = false;   // equal layouts: the static plan's metrics (no switch ever happens)
  bool resident = false;    // both layouts' weights on the GPUs at once (else reloaded from host at each switch)
  bool host_tier = false;   // the round's KV cache passes through host memory (more than the decode GPUs hold)
  std::int64_t decode_batch = 0;  // sequences decoded at once per decode instance
  std::int64_t buffer_seqs = 0;   // sequences per round, all GPUs
  double prefill_s = 0, decode_s = 0;        // each phase's compute per round
  double kv_offload_s = 0, kv_reload_s = 0;  // D2H in the prefill phase, H2D in the decode phase (each overlapped with its phase)
  double kv_first_s = 0;    // the first decode batch's KV loaded before decode starts (not overlapped)
  double kv_relayout_s = 0; // the KV re-laid out GPU to GPU at the switch (no host tier)
  double weights_s = 0;     // both switches' weight reloads from host (0 when resident)
  double switch_s = 0;      // both switches' fixed cost (a drained pipeline: one engine step each)
  double round_s = 0;
  double host_kv_bytes_per_gpu = 0;  // the round's KV parked per GPU at the switch
};

// The bandwidth the KV cache is re-laid out over GPU to GPU when no host tier is used: the
// innermost level of the cluster that spans the plan's GPUs (NVLink within a domain, PCIe
// within a node without one, the network beyond), per GPU and direction.
double peer_bandwidth(const ClusterSpec& c, std::int64_t gpus);

// The context as the closed form of a phase plan reads it: the offline stream of the
// workload's lengths, no SLOs (the serving simulation and the serving search judge those).
SimContext offline_phases_context(const SimContext& ctx);

// A layout's prefill rate: prompts per second over all its GPUs (every replica), each
// instance prefilling chunks of the engine's token budget per attention group.
double prefill_rate(const SimContext& ctx, const Plan& layout);
// A layout's decode at the largest batch per instance that fits beside `extra_weights` bytes
// per GPU and meets the TPOT SLO (KV cache of isl + osl tokens, TPOT at isl + osl / 2):
// that batch, its TPOT and the output tokens/s over all its GPUs; batch 0 when none fits.
struct DecodeRate {
  std::int64_t batch = 0;
  double tpot_s = 0, tok_s = 0;
};
DecodeRate decode_rate(const SimContext& ctx, const Plan& layout, double extra_weights = 0);

// The phase plan's cost for the context's offline workload (isl, osl). A plan that breaks a
// rule, does not fit (HBM or the host buffer) or misses an SLO comes back infeasible with the
// reason (when `explain`).
PhaseCost evaluate_phases(const SimContext& ctx, const PhasePlan& plan, const PhaseOptions& opt = {}, bool explain = true);

}  // namespace shardwise
