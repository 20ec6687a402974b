// Requests over time through a phase plan (docs/phases.md, "Serving"): Seesaw's schedule on
// one set of GPUs. The prefill layout prefills queued prompts chunk by chunk until the KV
// buffer holds buffer_seqs sequences or the queue is empty; the GPUs switch (weights reloaded
// unless both layouts are resident); the decode layout decodes the buffered sequences by
// continuous batching until all have finished; the GPUs switch back. The statistics are those
// of any plan (serve/serving.hpp): TTFT, TPOT and E2E percentiles in the steady-state window,
// throughput, goodput, the capacity (every request queued at once) and the verdict.
#pragma once
#include "cost/phases.hpp"
#include "serve/serving.hpp"

namespace shardwise {

// The context's serve workload (Poisson, burst or trace arrivals; a closed loop is refused
// with the reason) through the phase plan over all its GPUs. Equal layouts are the static
// plan: simulate_serving.
ServeResult simulate_phases(const SimContext& ctx, const PhasePlan& plan, const PhaseOptions& cost = {}, const ServeOptions& opt = {});

}  // namespace shardwise
