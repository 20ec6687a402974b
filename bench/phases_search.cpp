// The phase space under a serving objective (issue 29; docs/phases.md, "Search under a
// serving objective"): calls to 99% of the best phase plan for the elite-history agent (rl),
// simulated annealing and the genetic algorithm, mean over seeds, the best found by
// exhaustive enumeration of the space. The objective of a phase plan: the output tokens/s per
// GPU of the request-level simulation of Seesaw's schedule with every request queued at once,
// 0 unless its TPOT p99 meets the SLO.
//   usage: phases_search [--seeds N] [--budget N] [--requests N] [--tpot-p99-ms MS]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost/calibration.hpp"
#include "model/loader.hpp"
#include "search/phases_engines.hpp"
#include "search/phases_search.hpp"
#include "serve/phases.hpp"

int main(int argc, char** argv) {
  using namespace shardwise;
  int seeds = 10;
  std::int64_t budget = 300, requests = 400;
  double tpot_p99 = 250.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--seeds") {
      seeds = std::atoi(argv[i + 1]);
    } else if (k == "--budget") {
      budget = std::atoll(argv[i + 1]);
    } else if (k == "--requests") {
      requests = std::atoll(argv[i + 1]);
    } else if (k == "--tpot-p99-ms") {
      tpot_p99 = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: phases_search [--seeds N] [--budget N] [--requests N] [--tpot-p99-ms MS]\n");
      return 2;
    }
  }
  // Llama-2-70B on 8 A100-40GB linked by PCIe 4.0 x8, arxiv-like lengths (bench/seesaw's case
  // where the phase plan wins), every request queued at once
  auto m = load_model("llama-2-70b");
  auto c = parse_cluster_yaml("gpu: {base: a100-40gb, pcie_bandwidth: 17.18 GB/s}\nnvlink_domain: 1\nnum_gpus: 8\n", "a100-40gb-pcie");
  if (!m || !c) return 1;
  Workload w;
  w.name = "arxiv";
  w.mode = Mode::kServe;
  w.isl = 2542;
  w.osl = 297;
  w.weights_dtype = DType::kBf16;
  w.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
  w.serve.requests = requests;
  w.tpot_pct = {SloBound{99.0, tpot_p99}};
  const SimContext ctx = make_context(*m, *c, w, cost_params_for(c->gpu.name));
  const PhaseServeProblem pr = phase_serve_problem(ctx, make_space(*m, *c, ctx.workload), PhaseOptions{});
  const PhaseSpace& space = pr.space;
  std::int64_t sims = 0;
  std::map<std::array<int, 3>, double> memo;  // the enumeration and every seed share the simulations
  const PhaseObjective f = [&](const std::array<int, 3>& a) {
    if (auto it = memo.find(a); it != memo.end()) return it->second;
    ++sims;
    return memo[a] = pr.value(a);
  };
  const auto sizes = space.sizes();
  // the best of the whole space, by enumeration
  double best = 0;
  std::array<int, 3> best_a{};
  for (int i = 0; i < sizes[0]; ++i) {
    for (int j = 0; j < sizes[1]; ++j) {
      for (int k = 0; k < sizes[2]; ++k) {
        const double v = f({i, j, k});
        if (v > best) {
          best = v;
          best_a = {i, j, k};
        }
      }
    }
  }
  const PhasePlan bp = pr.plan(best_a);
  fmt::print("phase space: {} x {} layouts x {} buffer sizes = {} plans; serving objective: output tokens/s per GPU, {} requests all queued, TPOT p99 <= {} ms\n",
             sizes[0], sizes[1], sizes[2], sizes[0] * sizes[1] * sizes[2], requests, tpot_p99);
  fmt::print("best (enumerated, {} simulations): {:.2f} output tokens/s per GPU, {}\n\n", sims, best, phase_plan_label(bp));
  fmt::print("{:<6} {:>8} {:>22} {:>16} {:>14}\n", "engine", "budget", "mean calls to 99%", "reached (seeds)", "mean best/opt");
  for (const char* e : {"rl", "sa", "ga"}) {
    double calls = 0, ratio = 0;
    int reached = 0;
    std::vector<std::int64_t> each;
    for (int s = 1; s <= seeds; ++s) {
      const PhaseRun r = search_phase_space(e, sizes, f, budget, static_cast<std::uint64_t>(s));
      const std::int64_t at = r.calls_to(0.99 * best);
      // a seed that never reaches 99% counts its whole budget (a lower bound on its calls)
      calls += static_cast<double>(at >= 0 ? at : budget);
      reached += at >= 0 ? 1 : 0;
      ratio += r.best / best;
      each.push_back(at);
    }
    std::string list;
    for (auto x : each) list += (list.empty() ? "" : " ") + (x >= 0 ? std::to_string(x) : std::string("-"));
    fmt::print("{:<6} {:>8} {:>22.1f} {:>13}/{:<2} {:>14.4f}   per seed: {}\n", e, budget, calls / seeds, reached, seeds, ratio / seeds, list);
  }
  fmt::print("(a seed that never reaches 99% of the best counts its whole budget)\n");
  return 0;
}
