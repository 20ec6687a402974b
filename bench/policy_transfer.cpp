// Policy transfer (issue 5; the paper never tried it): does a policy trained on
// GPT-MoE-1.2T reach the GPT-MoE-1.6T optimum in fewer calls than a cold start?
//
// For each engine (rl-paper, rl) and each decode workload:
//   1. train on GPT-MoE-1.2T with 24,576 H100 (seed 1000, the full budget), keep the
//      last network, write it as a policy file and read it back (what --save-policy /
//      --load-policy do);
//   2. on GPT-MoE-1.6T, run SEEDS seeds cold and SEEDS seeds warm (every chunk starts
//      from the carried policy; the pp head differs between the two models, so the
//      values the 1.2T policy never saw keep a fresh initialisation: PolicyT::transfer);
//   3. print, cold and warm side by side: the mean final value over the exact optimum,
//      the calls until the best first reached 50%, 80%, 95% and 100% of the optimum (a run
//      that never reaches it counts the whole budget; "k/N" says how many reached it),
//      and warm / cold of those calls (below 1: the transfer saves calls).
//   usage: policy_transfer [BUDGET=4000] [SEEDS=10] [THREADS=all] [ENGINE...=rl-paper rl] [--workload W]...
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "model/loader.hpp"
#include "search/rl/agent.hpp"
#include "search/search.hpp"

namespace {
using namespace shardwise;

struct Case {
  SimContext ctx;
  SearchSpace space;
};

Case make_case(const char* model, const std::string& workload) {
  const ModelSpec m = *load_model(model);
  const ClusterSpec c = *load_cluster("h100x24576");
  const Workload w = *load_workload(workload);
  return {make_context(m, c, w, cost_params_for(c.gpu.name)), make_space(m, c, w)};
}

constexpr double kLevels[] = {0.5, 0.8, 0.95, 1.0 - 1e-9};
constexpr int kNumLevels = 4;

struct Runs {
  double final_ratio = 0;
  double calls[kNumLevels] = {};  // to each level; the budget when not reached
  int reached[kNumLevels] = {};
};

void add_run(Runs& r, const SearchResult& res, double optimum, std::int64_t budget, int seeds) {
  r.final_ratio += res.best_value / optimum / seeds;
  for (int k = 0; k < kNumLevels; ++k) {
    std::int64_t at = budget;
    for (const HistoryPoint& h : res.history) {
      if (h.best >= kLevels[k] * optimum) {
        at = h.call;
        ++r.reached[k];
        break;
      }
    }
    r.calls[k] += static_cast<double>(at) / seeds;
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::int64_t budget = 4000;
  int seeds = 10;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> engines, workloads;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workload" && i + 1 < argc) {
      workloads.emplace_back(argv[++i]);
    } else if (std::isdigit(static_cast<unsigned char>(a[0])) && positional < 3) {
      if (positional == 0) budget = std::atoll(a.c_str());
      if (positional == 1) seeds = std::atoi(a.c_str());
      if (positional == 2) threads = std::atoi(a.c_str());
      ++positional;
    } else if (a == "rl" || a == "rl-paper") {
      engines.push_back(a);
    } else {
      std::fprintf(stderr, "policy_transfer: unknown argument '%s' (usage: [BUDGET] [SEEDS] [THREADS] [rl|rl-paper]... [--workload W]...)\n",
                   a.c_str());
      return 2;
    }
  }
  if (engines.empty()) engines = {"rl-paper", "rl"};
  if (workloads.empty()) workloads = {"decode-16k", "decode-32k", "decode-64k"};
  fmt::print("policy transfer: trained on gpt-moe-1.2t (seed 1000, {} calls), used on gpt-moe-1.6t, h100x24576; {} seeds, {} threads\n",
             budget, seeds, threads);
  fmt::print("calls to X% = calls until the best first reached X% of the exact optimum (the budget if never; k/N reached)\n\n");
  for (const std::string& workload : workloads) {
    const Case src = make_case("gpt-moe-1.2t", workload);
    const Case dst = make_case("gpt-moe-1.6t", workload);
    SearchOptions xo;
    xo.threads = threads;
    const double optimum = search_exact(dst.ctx, dst.space, xo).best_value;
    fmt::print("{}: 1.6T exact optimum {:.1f} tok/s/GPU\n", workload, optimum);
    for (const std::string& e : engines) {
      const rl::AgentSettings s = e == "rl" ? rl::improved_settings() : rl::AgentSettings{};
      SearchOptions o;
      o.budget = budget;
      o.threads = threads;
      o.seed = 1000;
      std::unique_ptr<rl::Policy> trained;
      const SearchResult source = rl::search_rl(src.ctx, src.space, o, s, nullptr, &trained);
      auto policy = rl::Policy::load(trained->save(), "transfer.policy");  // through the file format
      if (!policy) {
        std::fprintf(stderr, "policy_transfer: %s\n", policy.error().message().c_str());
        return 1;
      }
      Runs cold, warm;
      rl::AgentStats st;
      for (int seed = 1; seed <= seeds; ++seed) {
        o.seed = static_cast<std::uint64_t>(seed);
        add_run(cold, rl::search_rl(dst.ctx, dst.space, o, s), optimum, budget, seeds);
        add_run(warm, rl::search_rl(dst.ctx, dst.space, o, s, &*policy, nullptr, &st), optimum, budget, seeds);
      }
      fmt::print("  {:<8} source run {:.1f} tok/s/GPU on 1.2T; carried {} of {} action values\n", e, source.best_value, st.warm_matched,
                 st.warm_values);
      for (const auto& [name, r] : {std::pair{"cold", &cold}, std::pair{"warm", &warm}}) {
        fmt::print("    {}  mean/exact {:.3f}  calls to", name, r->final_ratio);
        for (int k = 0; k < kNumLevels; ++k) {
          fmt::print("  {:.0f}% {:>5.0f} ({}/{})", kLevels[k] * 100, r->calls[k], r->reached[k], seeds);
        }
        fmt::print("\n");
      }
      fmt::print("    warm/cold calls:");
      for (int k = 0; k < kNumLevels; ++k) fmt::print(" to {:.0f}% {:.3f}{}", kLevels[k] * 100, warm.calls[k] / cold.calls[k], k + 1 < kNumLevels ? "," : "\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
