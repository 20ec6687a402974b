// Search quality on the paper's cases and ours: space size, the exact optimum,
// the Megatron baseline, and rw / sa / ga at budget 4000 over 10 seeds,
// normalised to the random-walk mean (the paper's Table 1 protocol: mean of 10)
// and to Megatron (its Figure 3 protocol: best of 10), with wall times.
//   usage: search_quality [BUDGET=4000] [SEEDS=10] [THREADS=all] [ENGINE...] [--cases paper|ours|all] [--only TEXT]
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "model/loader.hpp"
#include "search/rl/agent.hpp"
#include "search/search.hpp"
#include "seeds.hpp"

namespace {
using namespace shardwise;

struct Case {
  const char* model;
  const char* cluster;
  const char* workload;
};

struct EngineStats {
  double mean = 0, best = 0, wall = 0, calls_to_best = 0;
  double policy_share = 0;  // the RL engines: the share of calls proposed by policy steps
};

// `rl-net`: the rl engine with the paper's policy network proposing its policy steps
// (trained by PPO) instead of uniform samples among the allowed values: the ablation that
// measures what the network adds to the masked local search (docs/search.md)
SearchResult run_engine(const std::string& name, const SimContext& ctx, const SearchSpace& space, const SearchOptions& o) {
  if (name != "rl-net") return find_engine(name)(ctx, space, o);
  rl::AgentSettings s = rl::improved_settings();
  s.network_proposals = true;
  return rl::search_rl(ctx, space, o, s);
}

EngineStats run_seeds(const std::string& name, const SimContext& ctx, const SearchSpace& space, std::int64_t budget, int seeds, int threads) {
  EngineStats s;
  for (int seed = 1; seed <= seeds; ++seed) {
    SearchOptions o;
    o.budget = budget;
    o.seed = static_cast<std::uint64_t>(seed);
    o.threads = threads;
    const SearchResult r = run_engine(name, ctx, space, o);
    s.mean += r.best_value / seeds;
    s.best = std::max(s.best, r.best_value);
    s.wall += r.wall_s / seeds;
    s.calls_to_best += static_cast<double>(r.best_call) / seeds;
    s.policy_share += static_cast<double>(r.policy_calls) / static_cast<double>(std::max<std::int64_t>(1, r.calls)) / seeds;
  }
  return s;
}

std::string ratio(double a, double b) { return b > 0 ? fmt::format("{:.3f}", a / b) : std::string("-"); }
}  // namespace

int main(int argc, char** argv) {
  // usage: search_quality [BUDGET=4000] [SEEDS=10] [THREADS=all] [ENGINE...=rw sa ga] [--cases paper|ours|all] [--only TEXT]
  bench::RunSize rs;
  std::vector<std::string> engines;
  std::string which = "all";
  std::string only;  // keep the cases whose "model cluster workload" label contains this
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (rs.take(a)) continue;
    if (a == "--cases" && i + 1 < argc) {
      which = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if ((find_engine(a) && a != "exact" && a != "megatron") || a == "rl-net") {
      engines.push_back(a);
    } else {
      std::fprintf(stderr, "search_quality: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  const std::int64_t budget = rs.budget;
  const int seeds = rs.seeds, threads = rs.threads;
  if (engines.empty()) engines = {"rw", "sa", "ga"};
  if (std::find(engines.begin(), engines.end(), "rw") == engines.end()) engines.insert(engines.begin(), "rw");  // the Table 1 reference
  std::vector<Case> cases;
  const Case paper[] = {
      {"gpt-moe-1.2t", "h100x24576", "decode-16k"}, {"gpt-moe-1.2t", "h100x24576", "decode-32k"},
      {"gpt-moe-1.2t", "h100x24576", "decode-64k"}, {"gpt-moe-1.6t", "h100x24576", "decode-16k"},
      {"gpt-moe-1.6t", "h100x24576", "decode-32k"}, {"gpt-moe-1.6t", "h100x24576", "decode-64k"}};
  const Case ours[] = {
      {"qwen3-235b-a22b", "h100x8", "decode-16k"},  {"qwen3-235b-a22b", "h100x8", "offline-2k-128"},
      {"deepseek-v3", "h100x256", "decode-16k"},     {"deepseek-v3", "h100x256", "offline-2k-128"},
      {"llama-3.1-405b", "h100x1024", "decode-16k"}, {"llama-3.1-405b", "h100x1024", "offline-2k-128"}};
  if (which != "ours") cases.insert(cases.end(), std::begin(paper), std::end(paper));
  if (which != "paper") cases.insert(cases.end(), std::begin(ours), std::end(ours));
  std::erase_if(cases, [&](const Case& c) { return fmt::format("{} {} {}", c.model, c.cluster, c.workload).find(only) == std::string::npos; });
  fmt::print("budget {} per run, {} seeds, {} threads; values are output tokens/s per GPU (bf16)\n", budget, seeds, threads);
  fmt::print("per engine: mean/rw = mean of {} seeds over the random-walk mean (Table 1); best/meg = best of {} over Megatron\n"
             "(Figure 3); mean/exact = mean over the exact optimum; calls = mean calls until the run's final best\n\n",
             seeds, seeds);
  int beats = 0, below = 0, not_exact = 0, above_exact = 0;
  double exact_wall_max = 0;
  std::vector<std::string> notes;
  for (const Case& c : cases) {
    const ModelSpec m = *load_model(c.model);
    const ClusterSpec cl = *load_cluster(c.cluster);
    const Workload w = *load_workload(c.workload);
    const SimContext ctx = make_context(m, cl, w, cost_params_for(cl.gpu.name));
    const SearchSpace space = make_space(m, cl, w);
    SearchOptions o;
    o.threads = threads;
    const SearchResult ex = search_exact(ctx, space, o);
    const SearchResult meg = search_megatron(ctx, space, o);
    const std::string label = fmt::format("{} {} {}", c.model, c.cluster, c.workload);
    fmt::print("{}  (space {:.3g})\n", label, space.size());
    fmt::print("  exact    {:>9.1f} tok/s/GPU  {:>8} evals {:>6.2f} s   = {:.3f} x Megatron   {}\n", ex.best_value, ex.calls, ex.wall_s,
               meg.best_value > 0 ? ex.best_value / meg.best_value : 0.0, ex.found ? sharding_to_string(ex.best.sharding) : "-");
    fmt::print("  megatron {:>9.1f} tok/s/GPU  {:>8} evals {:>6.2f} s\n", meg.best_value, meg.calls, meg.wall_s);
    // exact must be exact: at least its own plan at its largest feasible batch (what
    // `simulate --plan P --batch max` reports), and at least every engine below
    if (ex.found) {
      Plan own = ex.best;
      own.batch = 0;
      const Metrics at_max = evaluate(ctx, own);
      const bool ok = at_max.feasible() && ex.best_value >= at_max.objective * (1 - 1e-12);
      fmt::print("  exact's own plan at --batch max: {:.1f} at batch {} (exact {} it)\n", at_max.objective, at_max.batch, ok ? ">=" : "BELOW");
      not_exact += ok ? 0 : 1;
    }
    double rw_mean = 0;
    for (const std::string& e : engines) {
      const EngineStats st = run_seeds(e, ctx, space, budget, seeds, threads);
      if (e == "rw") rw_mean = st.mean;
      above_exact += st.best > ex.best_value * (1 + 1e-12) ? 1 : 0;
      fmt::print("  {:<9}mean {:>8.1f}  mean/rw {:>6}  best/meg {:>6}  mean/exact {:>6}  calls {:>6.0f}  {:.3f} s/run", e, st.mean,
                 ratio(st.mean, rw_mean), ratio(st.best, meg.best_value), ratio(st.mean, ex.best_value), st.calls_to_best, st.wall);
      if (e.starts_with("rl")) fmt::print("  policy calls {:.0f}%", 100 * st.policy_share);
      fmt::print("\n");
      std::fflush(stdout);
    }
    below += ex.best_value < meg.best_value * (1 - 1e-12);
    exact_wall_max = std::max(exact_wall_max, ex.wall_s);
    if (meg.best_value > 0 ? ex.best_value > 1.01 * meg.best_value : ex.best_value > 0) ++beats;
  }
  fmt::print("\nexact beats Megatron by more than 1% on {} of {} cases; exact below Megatron on {} cases (must be 0: it searches a superset)\n",
             beats, cases.size(), below);
  fmt::print("exact below its own plan at --batch max on {} cases, below another engine's best run on {} (both must be 0); "
             "slowest exact {:.2f} s\n",
             not_exact, above_exact, exact_wall_max);
  return below == 0 && not_exact == 0 && above_exact == 0 ? 0 : 1;
}
