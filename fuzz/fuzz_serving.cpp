// libFuzzer harness for the serving workload and the simulation behind it: a workload YAML
// (arrivals, lengths, SLOs), its requests capped, simulated on one GPU of Llama-3.1-8B
// aggregated and disaggregated. Accepted input never crashes, and a result's percentiles
// are ordered and its throughput finite.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"
#include "workload/workload.hpp"

namespace {
void check(const shardwise::ServeResult& r) {
  if (!r.feasible && r.reason.empty()) std::abort();
  if (r.requests == 0) return;
  for (const auto* l : {&r.ttft_ms, &r.tpot_ms, &r.e2e_ms}) {
    if (!(l->p50 <= l->p90 + 1e-9 && l->p90 <= l->p99 + 1e-9 && l->p99 <= l->max + 1e-9)) std::abort();
  }
  if (!std::isfinite(r.output_tok_s_per_gpu) || r.output_tok_s_per_gpu < 0) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  static const ModelSpec model = *load_model("llama-3.1-8b");
  static const ClusterSpec cluster = *load_cluster("h100x2");
  auto w = parse_workload_yaml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml", "fuzz");
  if (!w.ok()) {
    if (w.error().message().empty()) std::abort();
    return 0;
  }
  if (w->mode != Mode::kServe || !has_arrivals(*w)) return 0;
  if (w->isl + w->osl > 200000) return 0;  // the cost of one run, not a finding
  w->serve.requests = std::min<std::int64_t>(w->serve.requests > 0 ? w->serve.requests : 64, 64);
  const SimContext ctx = make_context(model, cluster, *w, cost_params_for(cluster.gpu.name));
  Plan p;
  p.batch = 0;
  if (!arrivals_error(*w, 1, false, "fuzz", "")) check(simulate_serving(ctx, p));
  if (!arrivals_error(*w, 1, true, "fuzz", "")) check(simulate_disaggregated(ctx, DisaggPlan{p, p}).total);
  return 0;
}
