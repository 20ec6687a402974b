// libFuzzer harness for plan.json (parse_plan_json): any bytes must give a PlanFile or an
// Error naming the file, never a crash, a sanitizer report or a hang. An accepted plan
// must survive a round trip through plan_to_json, and validating and simulating it on a
// dense and an MoE model must answer (valid or invalid, feasible or not) without a fault.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "workload/workload.hpp"

namespace {
using namespace shardwise;
struct Fixture {
  SimContext dense, moe;
};
const Fixture& fixture() {
  static const Fixture f = [] {
    const Workload w = *load_workload("decode-16k");
    const ClusterSpec c = *cluster_from_preset("h100x64");
    return Fixture{make_context(*load_model("llama-3.1-8b"), c, w, cost_params_for(c.gpu.name)),
                   make_context(*load_model("deepseek-v3"), c, w, cost_params_for(c.gpu.name))};
  }();
  return f;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto f = parse_plan_json(text, "fuzz.json");
  if (!f.ok()) {
    if (f.error().message().rfind("fuzz.json: ", 0) != 0) std::abort();  // every error names the file
    return 0;
  }
  auto again = parse_plan_json(plan_to_json(*f), "again.json");
  if (!again.ok() || !(again->plan == f->plan) || again->model != f->model || again->cluster != f->cluster ||
      again->workload != f->workload) {
    std::abort();
  }
  for (const SimContext* ctx : {&fixture().dense, &fixture().moe}) {
    const Metrics m = evaluate(*ctx, f->plan);
    if (m.feasible() && (!(m.objective > 0) || !std::isfinite(m.objective) || m.gpus_used > ctx->cluster.num_gpus)) std::abort();
    if (!m.feasible() && m.reason.empty()) std::abort();
  }
  return 0;
}
