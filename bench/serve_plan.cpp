// How often the closed-form screen of plan --mode serve drops the true winner (issue 14):
// for each case, the planner with its default top-24 screen (or K) against every screened shape
// simulated; prints both winners' requests/s per GPU, their ratio and whether they agree.
//   usage: serve_plan [REQUESTS=500] [K=24]
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "search/serve_plan.hpp"

namespace {
using namespace shardwise;

struct Case {
  std::string model, cluster;
  std::int64_t isl, osl;
  double ttft_p99_ms, tpot_p90_ms;
};

std::string shape(const Plan& p) {
  return fmt::format("tp{} a{} pp{} ep{}{}", p.deg.tp, p.deg.attn_dp, p.deg.pp, p.deg.ep, sharding_to_string(p.sharding) == "megatron" ? "" : "*");
}
}  // namespace

int main(int argc, char** argv) {
  const std::int64_t requests = argc > 1 ? std::max(50, std::atoi(argv[1])) : 500;
  const int top_k = argc > 2 ? std::max(1, std::atoi(argv[2])) : ServePlanOptions{}.top_k;
  const std::vector<Case> cases = {
      {"llama-3.1-8b", "h100x8", 1024, 512, 2000, 30},   {"llama-3.1-8b", "h100x8", 8192, 256, 3000, 25},
      {"llama-3.1-70b", "h100x16", 1024, 1024, 2000, 50}, {"llama-3.1-70b", "h200x8", 4096, 512, 4000, 40},
      {"qwen3-30b-a3b", "h100x8", 1024, 1024, 2000, 30},  {"mixtral-8x7b", "h100x8", 2048, 512, 3000, 40},
      {"qwen3-235b-a22b", "h200x16", 1024, 1024, 3000, 60}, {"deepseek-v3", "h200x16", 1024, 1024, 3000, 80},
  };
  fmt::print("{:<16} {:<8} {:>10} {:>6} {:>22} {:>10} {:>22} {:>10} {:>7} {:>8}\n", "model", "cluster", "isl/osl", "shapes", "top-k winner",
             "req/s/GPU", "all-simulated winner", "req/s/GPU", "ratio", "wall s");
  int agree = 0, n = 0;
  for (const Case& c : cases) {
    auto m = load_model(c.model);
    auto cl = cluster_from_preset(c.cluster);
    if (!m || !cl) {
      fmt::print(stderr, "serve_plan: cannot load {} / {}\n", c.model, c.cluster);
      return 1;
    }
    Workload w;
    w.name = "bench";
    w.mode = Mode::kServe;
    w.isl = c.isl;
    w.osl = c.osl;
    w.ttft_pct = {SloBound{99, c.ttft_p99_ms}};
    w.tpot_pct = {SloBound{90, c.tpot_p90_ms}};
    const SimContext ctx = make_context(*m, *cl, w, cost_params_for(cl->gpu.name), {});
    const SearchSpace space = make_space(*m, *cl, w);
    ServePlanOptions k8, all;
    k8.requests = all.requests = requests;
    k8.top_k = top_k;
    all.top_k = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const ServePlanResult a = plan_serving(ctx, space, std::nullopt, k8);
    const ServePlanResult b = plan_serving(ctx, space, std::nullopt, all);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a.best < 0 || b.best < 0) {
      fmt::print("{:<16} {:<8} {:>5}/{:<4} {:>6}  no plan: {}\n", c.model, c.cluster, c.isl, c.osl, a.screened, a.best < 0 ? a.reason : b.reason);
      continue;
    }
    const ServeCandidate& x = a.candidates[static_cast<std::size_t>(a.best)];
    const ServeCandidate& y = b.candidates[static_cast<std::size_t>(b.best)];
    const bool same = x.plan.deg == y.plan.deg && x.plan.sharding == y.plan.sharding;
    agree += same;
    ++n;
    fmt::print("{:<16} {:<8} {:>5}/{:<4} {:>6} {:>22} {:>10.4f} {:>22} {:>10.4f} {:>7.3f} {:>8.1f}\n", c.model, c.cluster, c.isl, c.osl,
               b.screen_feasible, shape(x.plan), x.per_gpu(), shape(y.plan), y.per_gpu(), x.per_gpu() / y.per_gpu(), wall);
  }
  fmt::print("\nthe top-{} screen kept the winner of every simulated shape in {} of {} cases ({} requests per simulation)\n", top_k, agree, n, requests);
  return 0;
}
