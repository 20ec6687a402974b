// The paper's protocol on its six GPT-MoE cases ("Learning to Shard", Table 1 and Figure 3):
// random walk, simulated annealing and the paper's RL agent (`rl-paper`) at the same budget,
// the mean of the seeds normalised to the random-walk mean (Table 1), the best of the seeds
// normalised to the Megatron heuristic (Figure 3), beside the paper's own figures. Then
// ablations of the choices the paper leaves open or that differ here, one at a time on top
// of the paper's settings (docs/search.md, "Reproducing the paper"):
//   action space (the paper's heads: power-of-two degrees and no attention DP), invalid
//   actions (masked; reward -0.1 or -10), reward scale (alpha, beta), elite history length,
//   restarts (no chunks, no early exit), learning rate, PPO rollout, budget.
// Seeds run in parallel, one thread each (a run does not depend on the thread count).
//   usage: paper_reproduction [SEEDS=10] [THREADS=all] [--budget N] [--ablations LIST|all|none] [--only TEXT]
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
  const char* workload;
  double paper_sa, paper_rl;  // Table 1: the mean of 10 over random walk's
};
// The paper's Table 1 (learn-to-shard.md); Figure 3 gives best-of-10 over Megatron at 16k:
// RL 1.01 (1.2T) and 1.06 (1.6T), SA 0.65 (1.6T).
const Case kCases[] = {{"gpt-moe-1.2t", "decode-16k", 1.19, 2.76}, {"gpt-moe-1.2t", "decode-32k", 0.95, 2.17},
                       {"gpt-moe-1.2t", "decode-64k", 0.71, 2.04}, {"gpt-moe-1.6t", "decode-16k", 0.54, 1.65},
                       {"gpt-moe-1.6t", "decode-32k", 0.66, 2.31}, {"gpt-moe-1.6t", "decode-64k", 0.89, 1.92}};

double paper_fig3(const Case& c, bool rl) {
  if (std::string(c.workload) != "decode-16k") return 0;
  if (rl) return std::string(c.model) == "gpt-moe-1.2t" ? 1.01 : 1.06;
  return std::string(c.model) == "gpt-moe-1.6t" ? 0.65 : 0;
}

struct Variant {
  std::string name, what;
  std::function<void(rl::AgentSettings&)> settings = [](rl::AgentSettings&) {};
  bool paper_space = false;  // the paper's heads: power-of-two degrees, no attention DP
  double budget_factor = 1;
};

std::vector<Variant> all_variants() {
  using S = rl::AgentSettings;
  return {
      {"paper", "the paper's settings (rl-paper as it ships)"},
      {"space", "the paper's action space: power-of-two degrees, no attention-DP head", [](S&) {}, true},
      {"mask", "invalid actions masked out of the softmax", [](S& s) { s.mask_invalid = true; }},
      {"inv-0.1", "invalid reward -0.1 (ships -1)", [](S& s) { s.invalid_reward = -0.1; }},
      {"inv-10", "invalid reward -10", [](S& s) { s.invalid_reward = -10; }},
      {"beta0", "reward alpha 1, beta 0 (no improvement term)", [](S& s) { s.beta = 0; }},
      {"alpha0", "reward alpha 0, beta 1 (improvement only)", [](S& s) { s.alpha = 0, s.beta = 1; }},
      {"beta10", "reward alpha 1, beta 10", [](S& s) { s.beta = 10; }},
      {"elites1", "elite history T = 1 (ships 3)", [](S& s) { s.elites = 1; }},
      {"elites8", "elite history T = 8", [](S& s) { s.elites = 8; }},
      {"norestart", "one chunk, no early exit (ships 5 chunks, tau 0.95)", [](S& s) { s.chunks = 1, s.tau = 1.01; }},
      {"lr3e-4", "learning rate 3e-4 (ships 1e-3)", [](S& s) { s.lr = 3e-4; }},
      {"lr3e-3", "learning rate 3e-3", [](S& s) { s.lr = 3e-3; }},
      {"rollout64", "PPO rollout 64, 4 epochs (ships 2 and 2)", [](S& s) { s.rollout = 64, s.epochs = 4; }},
      {"budget4x", "budget x4 (16,000 calls at the default 4,000)", [](S&) {}, false, 4},
      {"mask+space", "masked, in the paper's action space", [](S& s) { s.mask_invalid = true; }, true},
      // the single changes that helped, together (after the one-at-a-time run)
      {"combined", "invalid reward -10, beta 0 and one chunk together",
       [](S& s) { s.invalid_reward = -10, s.beta = 0, s.chunks = 1, s.tau = 1.01; }},
      {"combined4x", "the combined changes at budget x4", [](S& s) { s.invalid_reward = -10, s.beta = 0, s.chunks = 1, s.tau = 1.01; },
       false, 4},
  };
}

// The paper's heads: degrees that are powers of two, no attention data parallelism.
SearchSpace paper_space(SearchSpace s) {
  const auto pow2 = [](std::vector<std::int32_t>& v) {
    std::erase_if(v, [](std::int32_t x) { return (x & (x - 1)) != 0; });
  };
  pow2(s.tp);
  pow2(s.pp);
  pow2(s.ep);
  s.attn_dp = {1};
  return s;
}

struct Stats {
  double mean = 0, best = 0, invalid = 0, wall = 0;
  std::vector<double> values;
};

// `seeds` runs of `run(seed)` on `threads` threads, one seed per thread at a time.
Stats run_seeds(int seeds, int threads, const std::function<SearchResult(std::uint64_t)>& run) {
  const std::vector<SearchResult> res = bench::run_seeds_parallel(seeds, threads, run);
  Stats s;
  for (const SearchResult& r : res) {
    s.values.push_back(r.best_value);
    s.mean += r.best_value / seeds;
    s.best = std::max(s.best, r.best_value);
    s.invalid += static_cast<double>(r.invalid_calls) / static_cast<double>(std::max<std::int64_t>(1, r.calls)) / seeds;
    s.wall += r.wall_s / seeds;
  }
  return s;
}

std::string ratio(double a, double b) { return b > 0 ? fmt::format("{:.2f}", a / b) : std::string("-"); }
}  // namespace

int main(int argc, char** argv) {
  bench::RunSize rs;
  rs.budget_positional = false;  // SEEDS THREADS; --budget N
  std::string ablations = "none", only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (rs.take(a)) continue;
    if (a == "--budget" && i + 1 < argc) {
      rs.budget = std::atoll(argv[++i]);
    } else if (a == "--ablations" && i + 1 < argc) {
      ablations = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "paper_reproduction: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  const std::int64_t budget = rs.budget;
  const int seeds = rs.seeds, threads = rs.threads;
  if (seeds < 1 || threads < 1 || budget < 1) {
    std::fprintf(stderr, "paper_reproduction: SEEDS, THREADS and --budget must be at least 1\n");
    return 2;
  }
  if (ablations != "all" && ablations != "none") {  // every listed name must be a variant
    std::string names, rest = ablations + ",";
    for (const Variant& v : all_variants()) names += (names.empty() ? "" : ", ") + v.name;
    for (std::size_t at = rest.find(','); at != std::string::npos; rest.erase(0, at + 1), at = rest.find(',')) {
      const std::string name = rest.substr(0, at);
      const auto all = all_variants();
      if (std::none_of(all.begin(), all.end(), [&](const Variant& v) { return v.name == name; })) {
        std::fprintf(stderr, "paper_reproduction: --ablations: expected all, none or a comma-separated list of %s; found '%s'\n",
                     names.c_str(), name.c_str());
        return 2;
      }
    }
  }
  std::vector<Variant> variants;
  for (const Variant& v : all_variants()) {
    const bool listed = ablations == "all" || ("," + ablations + ",").find("," + v.name + ",") != std::string::npos;
    if (v.name == "paper" || listed) variants.push_back(v);
  }
  fmt::print("budget {} per run, {} seeds on {} threads; H100 x 24,576; values: output tokens/s per GPU\n", budget, seeds, threads);
  fmt::print("mean/rw: the mean of the seeds over random walk's mean (Table 1); best/meg: the best seed over the Megatron\n"
             "heuristic (Figure 3); invalid: the share of calls on plans that break a rule or do not fit\n\n");
  // per variant: cases where its mean beats SA's mean
  std::vector<int> above_sa(variants.size(), 0);
  std::vector<double> geo(variants.size(), 0);
  int cases = 0;
  for (const Case& c : kCases) {
    const std::string label = fmt::format("{} {}", c.model, c.workload);
    if (label.find(only) == std::string::npos) continue;
    ++cases;
    const ModelSpec m = *load_model(c.model);
    const ClusterSpec cl = *load_cluster("h100x24576");
    const Workload w = *load_workload(c.workload);
    const SimContext ctx = make_context(m, cl, w, cost_params_for(cl.gpu.name));
    const SearchSpace space = make_space(m, cl, w);
    SearchOptions o;
    o.threads = threads;
    const SearchResult ex = search_exact(ctx, space, o);
    const SearchResult meg = search_megatron(ctx, space, o);
    const auto engine = [&](const char* name, const SearchSpace& sp, std::int64_t b) {
      return run_seeds(seeds, threads, [&, name, b](std::uint64_t seed) {
        SearchOptions so;
        so.budget = b;
        so.seed = seed;
        so.threads = 1;
        return find_engine(name)(ctx, sp, so);
      });
    };
    const Stats rw = engine("rw", space, budget), sa = engine("sa", space, budget);
    fmt::print("{}  (space {:.3g}; exact {:.2f}, Megatron {:.2f} tok/s/GPU)\n", label, space.size(), ex.best_value, meg.best_value);
    fmt::print("  {:<11} mean/rw {:>5}  best/meg {:>5}  mean/exact {:>5}  invalid {:>4.0f}%   paper: mean/rw {:.2f}{}\n", "rw", "1.00",
               ratio(rw.best, meg.best_value), ratio(rw.mean, ex.best_value), 100 * rw.invalid, 1.0, "");
    const double fig_sa = paper_fig3(c, false);
    fmt::print("  {:<11} mean/rw {:>5}  best/meg {:>5}  mean/exact {:>5}  invalid {:>4.0f}%   paper: mean/rw {:.2f}{}\n", "sa",
               ratio(sa.mean, rw.mean), ratio(sa.best, meg.best_value), ratio(sa.mean, ex.best_value), 100 * sa.invalid, c.paper_sa,
               fig_sa > 0 ? fmt::format(", best/meg {:.2f}", fig_sa) : "");
    if (std::any_of(variants.begin(), variants.end(), [](const Variant& v) { return v.paper_space; })) {
      // What the paper's heads can reach at all: its exact optimum, and SA searching it.
      const SearchSpace ps = paper_space(space);
      const SearchResult pex = search_exact(ctx, ps, o);
      const Stats psa = engine("sa", ps, budget);
      fmt::print("  paper's space ({:.3g} plans): exact {:.2f} tok/s/GPU ({} of the project's), sa mean/rw {}  invalid {:.0f}%\n", ps.size(),
                 pex.best_value, ratio(pex.best_value, ex.best_value), ratio(psa.mean, rw.mean), 100 * psa.invalid);
    }
    std::fflush(stdout);
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const Variant& v = variants[k];
      rl::AgentSettings s;
      v.settings(s);
      const SearchSpace sp = v.paper_space ? paper_space(space) : space;
      const auto b = static_cast<std::int64_t>(static_cast<double>(budget) * v.budget_factor);
      const Stats r = run_seeds(seeds, threads, [&](std::uint64_t seed) {
        SearchOptions so;
        so.budget = b;
        so.seed = seed;
        so.threads = 1;
        return rl::search_rl(ctx, sp, so, s);
      });
      above_sa[k] += r.mean > sa.mean ? 1 : 0;
      geo[k] += std::log(std::max(r.mean, 1e-12) / std::max(rw.mean, 1e-12));
      const double fig_rl = paper_fig3(c, true);
      fmt::print("  rl-{:<8} mean/rw {:>5}  best/meg {:>5}  mean/exact {:>5}  invalid {:>4.0f}%   {}{:.1f} s/run\n", v.name,
                 ratio(r.mean, rw.mean), ratio(r.best, meg.best_value), ratio(r.mean, ex.best_value), 100 * r.invalid,
                 k == 0 ? fmt::format("paper: mean/rw {:.2f}{}; ", c.paper_rl, fig_rl > 0 ? fmt::format(", best/meg {:.2f}", fig_rl) : "")
                        : std::string(),
                 r.wall);
      std::fflush(stdout);
    }
    fmt::print("\n");
  }
  fmt::print("summary over {} cases (mean/rw: geometric mean over the cases; above SA: cases where the mean beats SA's mean)\n", cases);
  for (std::size_t k = 0; k < variants.size(); ++k) {
    fmt::print("  rl-{:<11} mean/rw {:>5.2f}  above SA on {} of {}   {}\n", variants[k].name, cases ? std::exp(geo[k] / cases) : 0.0,
               above_sa[k], cases, variants[k].what);
  }
  return 0;
}
