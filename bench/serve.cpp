// Serving simulation speed and the step grid's error (issue 14): one simulation of 2,000
// requests must take <= 20 ms on one core. Cases: Llama-3.1-70B on 8 H100 (tp 8) and
// DeepSeek-V3 on 8 H200 (tp 8, ep 8), each at Poisson arrivals (60% of capacity,
// lognormal prompts, uniform outputs) and closed loop (64 users). The baseline measured in
// the same run: the same simulation with the cost layer evaluated at every step (no grid),
// which also measures what the grid's interpolation changes in TTFT and TPOT.
//   usage: serve [REPEATS=5]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "serve/serving.hpp"

namespace {
using namespace shardwise;

struct Case {
  std::string label, model, cluster;
  std::int32_t tp, ep;
  bool poisson;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::vector<Case> cases = {
      {"Llama-3.1-70B h100x8 tp8, Poisson", "llama-3.1-70b", "h100x8", 8, 1, true},
      {"Llama-3.1-70B h100x8 tp8, closed 64", "llama-3.1-70b", "h100x8", 8, 1, false},
      {"DeepSeek-V3 h200x8 tp8 ep8, Poisson", "deepseek-v3", "h200x8", 8, 8, true},
      {"DeepSeek-V3 h200x8 tp8 ep8, closed 64", "deepseek-v3", "h200x8", 8, 8, false},
  };
  fmt::print("{:<40} {:>9} {:>9} {:>11} {:>8} {:>10} {:>9} {:>9} {:>8}\n", "case (2,000 requests)", "grid ms", "exact ms", "speedup",
             "steps", "events/s", "dTTFT99", "dTPOT50", "target");
  bool ok = true;
  for (const Case& c : cases) {
    auto m = load_model(c.model);
    auto cl = cluster_from_preset(c.cluster);
    if (!m || !cl) {
      fmt::print(stderr, "serve: cannot load {} / {}\n", c.model, c.cluster);
      return 1;
    }
    Workload w;
    w.name = "bench";
    w.mode = Mode::kServe;
    w.isl = 1024;
    w.osl = 1024;
    w.serve.requests = 2000;
    if (c.poisson) {
      w.serve.input = LengthDist{LengthDist::Kind::kLognormal, 1024, 0.8, 16, 8192, {}};
      w.serve.output = LengthDist{LengthDist::Kind::kUniform, 0, 0, 64, 1984, {}};
    }
    Plan p;
    p.deg.tp = c.tp;
    p.deg.ep = c.ep;
    // the Poisson rate: 60% of the capacity (every request queued at once)
    w.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
    SimContext ctx = make_context(*m, *cl, w, cost_params_for(cl->gpu.name), {});
    const ServeResult sat = simulate_serving(ctx, p);
    w.serve.arrivals = c.poisson ? Arrivals{Arrivals::Kind::kPoisson, 0.6 * sat.requests_per_s, 0} : Arrivals{Arrivals::Kind::kClosed, 0, 64};
    ctx = make_context(*m, *cl, w, cost_params_for(cl->gpu.name), {});
    ServeOptions grid, exact;
    grid.measure_capacity = exact.measure_capacity = false;
    exact.exact_steps = true;
    double best_grid = 1e9, best_exact = 1e9;
    ServeResult rg, re;
    for (int i = 0; i < repeats; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      rg = simulate_serving(ctx, p, grid);
      best_grid = std::min(best_grid, seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      re = simulate_serving(ctx, p, exact);
      best_exact = std::min(best_exact, seconds_since(t0));
    }
    const bool met = best_grid <= 0.020;
    ok = ok && met;
    fmt::print("{:<40} {:>9.2f} {:>9.2f} {:>10.1f}x {:>8} {:>9.2f}M {:>8.2f}% {:>8.2f}% {:>8}\n", c.label, best_grid * 1e3, best_exact * 1e3,
               best_exact / best_grid, rg.step_evaluations, static_cast<double>(rg.events) / best_grid / 1e6,
               (rg.ttft_ms.p99 / re.ttft_ms.p99 - 1) * 100, (rg.tpot_ms.p50 / re.tpot_ms.p50 - 1) * 100, met ? "met" : "MISSED");
  }
  fmt::print("\ntarget: one simulation of 2,000 requests in <= 20 ms on one core (best of {} runs); {}\n", repeats, ok ? "met" : "missed");
  return 0;
}
