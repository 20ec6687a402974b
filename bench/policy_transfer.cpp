// Policy transfer (issue 17; the paper never tried it): does a policy trained on a set of
// instances reach the optimum of instances it has never seen in fewer calls than a cold
// start and than simulated annealing?
//
// The split (docs/search.md, "Policy transfer"):
//   training, in this order, one policy carried from each to the next (by value label,
//   PolicyT::transfer), seed 1000, the full budget on each:
//     GPT-MoE-1.2T decode 16k / 32k / 64k on 24,576 H100, DeepSeek-V3 decode-16k on 256 H100,
//     Qwen3-235B decode-16k on 8 H100, Llama-3.1-405B decode-16k on 1,024 H100;
//   held out (another model, or another GPU count of a trained model):
//     GPT-MoE-1.6T decode-32k on 24,576 H100, DeepSeek-V3 decode-16k on 128 H100,
//     Qwen3-235B decode-16k on 16 H100, Llama-3.1-70B decode-16k on 64 H100,
//     Mixtral-8x22B decode-16k on 32 H100.
// On each held-out instance, SEEDS seeds of: the engine cold, the engine warm (every chunk
// starts from the trained policy, written to the policy file format and read back), SA, and
// `rl` (no network) for reference. Printed: the calls until the best first reached 99% of the
// exact optimum of the batch-ladder space the engines search (exact without its refinement
// between rungs; a run that never reaches it counts the whole budget; k/N reached it), and the bar:
// warm in at least 5x fewer calls than cold and than SA.
// Engines: rl-paper (the paper's agent) and rl-net (rl's masked local search with the
// network proposing its policy steps). Seeds run in parallel, one thread each.
//   usage: policy_transfer [BUDGET=4000] [SEEDS=10] [THREADS=all] [ENGINE...=rl-paper rl-net] [--only TEXT]
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
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

struct Instance {
  const char* model;
  const char* cluster;
  const char* workload;
};
const Instance kTrain[] = {{"gpt-moe-1.2t", "h100x24576", "decode-16k"}, {"gpt-moe-1.2t", "h100x24576", "decode-32k"},
                           {"gpt-moe-1.2t", "h100x24576", "decode-64k"}, {"deepseek-v3", "h100x256", "decode-16k"},
                           {"qwen3-235b-a22b", "h100x8", "decode-16k"},  {"llama-3.1-405b", "h100x1024", "decode-16k"}};
const Instance kHeldOut[] = {{"gpt-moe-1.6t", "h100x24576", "decode-32k"}, {"deepseek-v3", "h100x128", "decode-16k"},
                             {"qwen3-235b-a22b", "h100x16", "decode-16k"},  {"llama-3.1-70b", "h100x64", "decode-16k"},
                             {"mixtral-8x22b", "h100x32", "decode-16k"}};

struct Case {
  SimContext ctx;
  SearchSpace space;
};
Case make_case(const Instance& i) {
  const ModelSpec m = *load_model(i.model);
  const ClusterSpec c = *load_cluster(i.cluster);
  const Workload w = *load_workload(i.workload);
  return {make_context(m, c, w, cost_params_for(c.gpu.name)), make_space(m, c, w)};
}
std::string label(const Instance& i) { return fmt::format("{} {} {}", i.model, i.cluster, i.workload); }

rl::AgentSettings settings_of(const std::string& engine) {
  if (engine == "rl-paper") return rl::AgentSettings{};
  rl::AgentSettings s = rl::improved_settings();
  s.network_proposals = engine == "rl-net";
  return s;
}

constexpr double kLevel = 0.99;

struct Runs {
  double calls = 0, final_ratio = 0;  // means over the seeds
  int reached = 0;
};

// SEEDS runs of `run(seed)`, one thread each; calls until the best reached kLevel x optimum
Runs run_seeds(int seeds, int threads, double optimum, std::int64_t budget, const std::function<SearchResult(std::uint64_t)>& run) {
  const std::vector<SearchResult> res = bench::run_seeds_parallel(seeds, threads, run);
  Runs r;
  for (const SearchResult& s : res) {
    r.final_ratio += s.best_value / optimum / seeds;
    std::int64_t at = budget;
    for (const HistoryPoint& h : s.history) {
      if (h.best >= kLevel * optimum) {
        at = h.call;
        ++r.reached;
        break;
      }
    }
    r.calls += static_cast<double>(at) / seeds;
  }
  return r;
}
}  // namespace

int main(int argc, char** argv) {
  bench::RunSize rs;
  std::vector<std::string> engines;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (rs.take(a)) continue;
    if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "rl-paper" || a == "rl-net") {
      engines.push_back(a);
    } else {
      std::fprintf(stderr, "policy_transfer: unknown argument '%s' (usage: [BUDGET] [SEEDS] [THREADS] [rl-paper|rl-net]... [--only TEXT])\n",
                   a.c_str());
      return 2;
    }
  }
  const std::int64_t budget = rs.budget;
  const int seeds = rs.seeds, threads = rs.threads;
  if (budget < 1 || seeds < 1 || threads < 1) {
    std::fprintf(stderr, "policy_transfer: BUDGET, SEEDS and THREADS must be at least 1\n");
    return 2;
  }
  if (engines.empty()) engines = {"rl-paper", "rl-net"};
  fmt::print("policy transfer: budget {} per run, {} seeds on {} threads; calls to {:.0f}% = calls until the best first reached\n"
             "{:.0f}% of the exact optimum (the budget if never; k/N reached it); bar: warm in >= 5x fewer calls than cold and SA\n\n",
             budget, seeds, threads, kLevel * 100, kLevel * 100);
  // 1. train each engine's policy over the training instances, carried from one to the next
  std::vector<std::unique_ptr<rl::Policy>> policies;
  for (const std::string& e : engines) {
    std::unique_ptr<rl::Policy> policy;
    fmt::print("training {}:", e);
    for (const Instance& i : kTrain) {
      const Case c = make_case(i);
      SearchOptions o;
      o.budget = budget;
      o.seed = 1000;
      o.threads = threads;
      std::unique_ptr<rl::Policy> trained;
      rl::AgentStats st;
      const SearchResult r = rl::search_rl(c.ctx, c.space, o, settings_of(e), policy.get(), &trained, &st);
      fmt::print(" {} {:.1f} ({}/{} values known);", i.model, r.best_value, st.warm_matched, st.warm_values);
      std::fflush(stdout);
      auto reloaded = rl::Policy::load(trained->save(), "transfer.policy");  // through the file format
      if (!reloaded) {
        std::fprintf(stderr, "policy_transfer: %s\n", reloaded.error().message().c_str());
        return 1;
      }
      policy = std::make_unique<rl::Policy>(std::move(reloaded).value());
    }
    fmt::print("\n");
    policies.push_back(std::move(policy));
  }
  fmt::print("\n");
  // 2. the held-out instances
  std::vector<int> met(engines.size(), 0);
  int instances = 0;
  for (const Instance& i : kHeldOut) {
    if (label(i).find(only) == std::string::npos) continue;
    ++instances;
    const Case c = make_case(i);
    SearchOptions xo;
    xo.threads = threads;
    xo.refine_batch = false;  // the optimum of the ladder space the other engines search
    const double optimum = search_exact(c.ctx, c.space, xo).best_value;
    fmt::print("{}: exact optimum of the ladder space {:.2f} tok/s/GPU\n", label(i), optimum);
    const auto show = [&](const std::string& name, const Runs& r) {
      fmt::print("  {:<14} calls to {:.0f}% {:>6.0f} ({}/{})  mean/exact {:.3f}\n", name, kLevel * 100, r.calls, r.reached, seeds, r.final_ratio);
    };
    const auto engine_runs = [&](const char* name) {
      return run_seeds(seeds, threads, optimum, budget, [&](std::uint64_t seed) {
        SearchOptions o;
        o.budget = budget;
        o.seed = seed;
        o.threads = 1;
        return find_engine(name)(c.ctx, c.space, o);
      });
    };
    const Runs sa = engine_runs("sa"), plain = engine_runs("rl");
    show("sa", sa);
    show("rl (no network)", plain);
    for (std::size_t k = 0; k < engines.size(); ++k) {
      const rl::AgentSettings s = settings_of(engines[k]);
      const auto agent_runs = [&](const rl::Policy* warm) {
        return run_seeds(seeds, threads, optimum, budget, [&](std::uint64_t seed) {
          SearchOptions o;
          o.budget = budget;
          o.seed = seed;
          o.threads = 1;
          return rl::search_rl(c.ctx, c.space, o, s, warm);
        });
      };
      const Runs cold = agent_runs(nullptr), warm = agent_runs(policies[k].get());
      show(engines[k] + " cold", cold);
      show(engines[k] + " warm", warm);
      const double vs_cold = cold.calls / warm.calls, vs_sa = sa.calls / warm.calls;
      const bool ok = warm.reached == seeds && vs_cold >= 5 && vs_sa >= 5;
      met[k] += ok ? 1 : 0;
      fmt::print("  {:<14} cold/warm calls {:.2f}, sa/warm {:.2f}: {}\n", engines[k], vs_cold, vs_sa, ok ? "meets the bar" : "below the bar");
      std::fflush(stdout);
    }
    fmt::print("\n");
  }
  for (std::size_t k = 0; k < engines.size(); ++k) {
    fmt::print("{}: the bar (warm reaches {:.0f}% in >= 5x fewer calls than cold and SA, every seed) met on {} of {} held-out instances "
               "(target: 4)\n",
               engines[k], kLevel * 100, met[k], instances);
  }
  return 0;
}
