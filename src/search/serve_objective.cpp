#include "search/serve_objective.hpp"

#include <algorithm>

#include "serve/serving.hpp"

namespace shardwise {

std::function<Metrics(const Plan&)> serving_objective(const SimContext& ctx, std::int64_t requests) {
  return [&ctx, requests](const Plan& plan) {
    // the closed form judges the rules and the weights; memory at the batch and the SLOs are
    // the scheduler's to judge (paged KV admits what fits, the percentiles come from requests)
    Metrics m = evaluate(ctx, plan, nullptr, false);
    if (m.infeasible == Infeasible::kInvalidPlan) return m;
    const std::int64_t lanes = scheduler_lanes(ctx.engine, plan.deg);  // attention-DP ranks (x micro-batches)
    const std::int64_t replicas = std::max<std::int64_t>(1, plan.deg.replicas);
    SimContext c = ctx;
    c.engine.max_num_seqs = std::max<std::int64_t>(1, (plan.batch + lanes - 1) / lanes);  // lanes x it never below the batch
    c.workload.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0.0, std::max<std::int64_t>(1, plan.batch) * replicas};
    c.workload.serve.requests = requests * replicas;
    ServeOptions so;
    so.measure_capacity = false;
    const ServeResult r = simulate_serving(c, plan, so);
    Metrics out = m;
    out.reason.clear();
    out.infeasible = Infeasible::kNone;
    out.objective = r.feasible ? r.output_tok_s_per_gpu : 0.0;
    out.output_tok_s_per_gpu = r.output_tok_s_per_gpu;
    out.tpot_s = r.tpot_ms.mean * 1e-3;
    out.ttft_s = r.ttft_ms.mean * 1e-3;
    if (!r.feasible) {
      // which limit: no KV cache (memory), else the SLO the verdict names first
      out.infeasible = r.kv_tokens < 1 || r.reason.find("KV cache") != std::string::npos ? Infeasible::kMemory
                       : r.reason.find("TTFT") != std::string::npos ? Infeasible::kTtftSlo
                                                                    : Infeasible::kTpotSlo;
      out.reason = r.reason;
    }
    return out;
  };
}

}  // namespace shardwise
