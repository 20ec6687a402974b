#include "search/serve_objective.hpp"

#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "search/search.hpp"
#include "serve/serving.hpp"
#include "support/search_case.hpp"

namespace shardwise {
namespace {

using Case = test_support::SearchCase;

TEST(Objective, EveryEngineScoresWithTheGivenObjective) {
  // the closed form passed as the objective: every engine takes the same path, and every
  // call goes through it; twice the closed form: rw and megatron (whose choices do not
  // depend on the values' scale) end at exactly twice the closed-form best
  const Case c = test_support::make_search_case("llama-3.1-8b", "h100x8", "chat-1k-1k");
  for (const char* e : {"rw", "sa", "ga", "rl", "megatron"}) {
    SearchOptions o;
    o.budget = 300;
    o.seed = 5;
    o.refine_batch = false;  // rl's closed-form refinement of its elites' batches, which an objective's run skips
    const SearchResult plain = find_engine(e)(c.ctx, c.space, o);
    std::atomic<std::int64_t> calls{0};
    o.objective = [&](const Plan& p) {
      ++calls;
      return evaluate(c.ctx, p, nullptr, false);
    };
    const SearchResult same = find_engine(e)(c.ctx, c.space, o);
    EXPECT_EQ(same.best, plain.best) << e;
    EXPECT_DOUBLE_EQ(same.best_value, plain.best_value) << e;
    EXPECT_EQ(calls.load(), same.calls) << e;
    EXPECT_TRUE(same.not_certified.empty()) << e;
    if (std::string(e) == "rw" || std::string(e) == "megatron") {
      o.objective = [&](const Plan& p) {
        Metrics m = evaluate(c.ctx, p, nullptr, false);
        m.objective *= 2;
        return m;
      };
      const SearchResult twice = find_engine(e)(c.ctx, c.space, o);
      EXPECT_DOUBLE_EQ(twice.best_value, 2 * plain.best_value) << e;
      EXPECT_EQ(twice.best, plain.best) << e;
    }
  }
}

TEST(Objective, ExactSaysItIsNotCertifiedAndScoresItsPlan) {
  const Case c = test_support::make_search_case("llama-3.1-8b", "h100x8", "chat-1k-1k");
  SearchOptions o;
  const SearchResult plain = search_exact(c.ctx, c.space, o);
  EXPECT_TRUE(plain.not_certified.empty());
  int calls = 0;
  o.objective = [&](const Plan& p) {
    ++calls;
    Metrics m = evaluate(c.ctx, p, nullptr, false);
    m.objective = 7.5;
    return m;
  };
  const SearchResult scored = search_exact(c.ctx, c.space, o);
  EXPECT_NE(scored.not_certified.find("not proven optimal"), std::string::npos);
  EXPECT_EQ(scored.best, plain.best);  // the closed-form optimum
  EXPECT_EQ(scored.best_value, 7.5);   // scored by the objective, once
  EXPECT_EQ(calls, 1);
}

TEST(Objective, TheServingObjectiveIsTheSimulationAtTheBatchAsTheCap) {
  // Llama-3.1-8B tp 2 x 2 replicas, batch 24: the engine's cap is 24 running sequences,
  // each replica serves a closed loop of 24 users (48 in all, 2 x 30 requests); the value is
  // the simulation's output tokens/s per GPU, and a broken rule stays a broken rule
  Case c = test_support::make_search_case("llama-3.1-8b", "h100x8", "chat-1k-1k");
  c.ctx.workload.ttft_ms.reset();
  c.ctx.workload.tpot_ms.reset();
  c.ctx.workload.tpot_pct = {SloBound{90, 1000}};
  const auto objective = serving_objective(c.ctx, 30);
  Plan p;
  p.deg.tp = 2;
  p.deg.replicas = 2;
  p.batch = 24;
  const Metrics m = objective(p);
  ASSERT_TRUE(m.feasible()) << m.reason;
  SimContext by_hand = c.ctx;
  by_hand.engine.max_num_seqs = 24;
  by_hand.workload.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0.0, 48};
  by_hand.workload.serve.requests = 60;
  ServeOptions so;
  so.measure_capacity = false;
  const ServeResult r = simulate_serving(by_hand, p, so);
  EXPECT_DOUBLE_EQ(m.objective, r.output_tok_s_per_gpu);
  EXPECT_GT(m.objective, 0);
  // a TPOT p90 bound under what the plan gives: infeasible, the TPOT named
  c.ctx.workload.tpot_pct = {SloBound{90, 0.5 * r.tpot_ms.p90}};
  const Metrics tight = serving_objective(c.ctx, 30)(p);
  EXPECT_EQ(tight.infeasible, Infeasible::kTpotSlo) << tight.reason;
  EXPECT_EQ(tight.objective, 0);
  Plan bad = p;
  bad.deg.tp = 3;  // 32 heads over 3
  EXPECT_EQ(objective(bad).infeasible, Infeasible::kInvalidPlan);
}

TEST(Objective, ServingSearchesGiveTheSamePlanWhateverTheThreadCount) {
  // the serving simulation is seeded by the workload, so an engine searching it with one
  // thread or four evaluates the same plans to the same values and ends at the same plan
  Case c = test_support::make_search_case("llama-3.1-8b", "h100x8", "chat-1k-1k");
  c.ctx.workload.ttft_ms.reset();
  c.ctx.workload.tpot_ms.reset();
  c.ctx.workload.ttft_pct = {SloBound{99, 3000}};
  c.ctx.workload.tpot_pct = {SloBound{90, 60}};
  for (const char* e : {"rl", "sa"}) {
    SearchOptions o;
    o.budget = 60;
    o.seed = 11;
    o.objective = serving_objective(c.ctx, 20);
    o.threads = 1;
    const SearchResult one = find_engine(e)(c.ctx, c.space, o);
    o.threads = 4;
    const SearchResult four = find_engine(e)(c.ctx, c.space, o);
    EXPECT_EQ(one.best, four.best) << e;
    EXPECT_DOUBLE_EQ(one.best_value, four.best_value) << e;
    EXPECT_EQ(one.best_call, four.best_call) << e;
    EXPECT_GT(one.best_value, 0) << e;
  }
}

}  // namespace
}  // namespace shardwise
