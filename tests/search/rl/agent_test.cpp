#include "search/rl/agent.hpp"

#include <gtest/gtest.h>

#include "core/rng.hpp"

#include "model/loader.hpp"
#include "support/search_case.hpp"

namespace shardwise::rl {
namespace {

using Case = test_support::SearchCase;
Case make_case() { return test_support::make_search_case("llama-3.1-8b", "h100x8", "chat-1k-1k"); }

TEST(Agent, DeterministicBudgetedAndFindsPlans) {
  const Case c = make_case();
  for (double exploit : {0.0, 0.5}) {
    AgentSettings s;
    s.exploit = exploit;
    SearchOptions o;
    o.budget = 300;
    o.seed = 9;
    o.full_history = true;
    AgentStats st;
    const SearchResult a = search_rl(c.ctx, c.space, o, s, nullptr, nullptr, &st);
    o.threads = 2;
    const SearchResult b = search_rl(c.ctx, c.space, o, s);
    EXPECT_EQ(a.calls, 300);
    EXPECT_EQ(a.best, b.best);
    ASSERT_EQ(a.history.size(), b.history.size());
    for (std::size_t i = 0; i < a.history.size(); ++i) ASSERT_EQ(a.history[i].value, b.history[i].value);
    EXPECT_TRUE(a.found);
    EXPECT_GE(st.reinits, 5);  // the budget is split into 5 chunks, each with a fresh network
    EXPECT_GT(st.policy_s, 0.0);
    EXPECT_GT(a.policy_s, 0.0);
  }
}

TEST(Agent, WarmStartFromASavedPolicy) {
  const Case c = make_case();
  SearchOptions o;
  o.budget = 200;
  std::unique_ptr<Policy> trained;
  search_rl(c.ctx, c.space, o, AgentSettings{}, nullptr, &trained);
  ASSERT_TRUE(trained);
  auto loaded = Policy::load(trained->save(), "p.txt");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  AgentStats st;
  const SearchResult warm = search_rl(c.ctx, c.space, o, AgentSettings{}, &*loaded, nullptr, &st);
  EXPECT_EQ(warm.calls, 200);
  EXPECT_TRUE(warm.found);
  EXPECT_EQ(st.warm_matched, st.warm_values);
  EXPECT_GT(st.warm_values, 0);
  // a version-1 file (no labels) of the same space is taken as it is
  Policy unlabeled = *loaded;
  PolicyDims d = unlabeled.dims();
  d.labels.clear();
  Rng rng(1);
  Policy fresh(d, rng);
  fresh.params() = unlabeled.params();
  AgentStats st1;
  const SearchResult v1 = search_rl(c.ctx, c.space, o, AgentSettings{}, &fresh, nullptr, &st1);
  EXPECT_EQ(st1.warm_values, st.warm_values);
  EXPECT_EQ(st1.warm_matched, st.warm_values);
  EXPECT_EQ(v1.best, warm.best);
}

}  // namespace
}  // namespace shardwise::rl

namespace shardwise::rl {
namespace {

Case make_big_case(const char* model, const char* cluster) { return test_support::make_search_case(model, cluster, "decode-16k"); }

TEST(Agent, WarmStartCarriesAPolicyToAnotherSpace) {
  // trained on GPT-MoE-1.2T (pp over 60 layers), used on 1.6T (80 layers): the pp head differs
  const Case src = make_big_case("gpt-moe-1.2t", "h100x24576");
  const Case dst = make_big_case("gpt-moe-1.6t", "h100x24576");
  ASSERT_NE(src.space.sizes(), dst.space.sizes());
  SearchOptions o;
  o.budget = 120;
  std::unique_ptr<Policy> trained;
  search_rl(src.ctx, src.space, o, AgentSettings{}, nullptr, &trained);
  auto loaded = Policy::load(trained->save(), "p.txt");
  ASSERT_TRUE(loaded.ok());
  AgentStats st;
  const SearchResult warm = search_rl(dst.ctx, dst.space, o, AgentSettings{}, &*loaded, nullptr, &st);
  EXPECT_EQ(warm.calls, 120);
  const int values = dims_for(dst.space, 3).logits();
  EXPECT_EQ(st.warm_values, values);
  // pp (the divisors of the layers and the powers of two): 1.2T has 1 2 3 4 5 6 8 10 12 15 16 20
  // 30 32 60, 1.6T has 1 2 4 5 8 10 16 20 32 40 64 80: 40, 64, 80 are new
  EXPECT_EQ(st.warm_matched, values - 3);
  // the same run twice gives the same plan (the fresh columns come from the seed)
  AgentStats st2;
  const SearchResult again = search_rl(dst.ctx, dst.space, o, AgentSettings{}, &*loaded, nullptr, &st2);
  EXPECT_EQ(again.best, warm.best);
  EXPECT_EQ(again.best_value, warm.best_value);
}

TEST(ActionRules, EveryValueAllowedInOrderKeepsTheActionValid) {
  // sample heads in the rules' order, uniformly among the allowed values: the full action always passes
  for (const auto& [model, cluster] : {std::pair{"deepseek-v3", "h100x256"}, std::pair{"gpt-moe-1.6t", "h100x24576"},
                                       std::pair{"qwen3-235b-a22b", "h100x8"}}) {
    const Case c = make_big_case(model, cluster);
    const ActionRules rules(c.ctx, c.space);
    const auto sizes = c.space.sizes();
    Rng rng(5);
    int total = 0;
    for (int h = 0; h < kNumHeads; ++h) total += sizes[static_cast<std::size_t>(h)];
    int masked = 0;
    for (int n = 0; n < 300; ++n) {
      Action a{};
      std::vector<std::uint8_t> mask(static_cast<std::size_t>(total), 1);
      for (std::size_t i = 0; i < ActionRules::kOrder.size(); ++i) {
        const auto h = static_cast<std::size_t>(ActionRules::kOrder[i]);
        int off = 0;
        for (std::size_t k = 0; k < h; ++k) off += sizes[k];
        rules.allowed(a, i, sizes, mask, off);
        std::vector<int> ok;
        for (int v = 0; v < sizes[h]; ++v) {
          if (mask[static_cast<std::size_t>(off + v)]) ok.push_back(v);
        }
        masked += sizes[h] - static_cast<int>(ok.size());
        ASSERT_FALSE(ok.empty()) << model << " head " << h;  // some value always stays allowed
        a[h] = static_cast<std::uint16_t>(ok[rng.below(ok.size())]);
      }
      ASSERT_TRUE(rules.valid(a)) << model;
    }
    EXPECT_GT(masked, 0) << model;  // the rules do mask something
  }
}

TEST(ActionRules, RepairMakesAnyActionValid) {
  const Case c = make_big_case("deepseek-v3", "h100x256");
  const ActionRules rules(c.ctx, c.space);
  const auto sizes = c.space.sizes();
  Rng rng(7);
  int repaired = 0;
  for (int n = 0; n < 500; ++n) {
    Action a{};
    for (std::size_t h = 0; h < a.size(); ++h) a[h] = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(sizes[h])));
    const bool was = rules.valid(a);
    const Action before = a;
    if (rules.repair(a, sizes)) {
      EXPECT_TRUE(rules.valid(a));
      repaired += was ? 0 : 1;
      if (was) {
        EXPECT_EQ(a, before);  // a valid action is left alone
      }
    }
  }
  EXPECT_GT(repaired, 0);
}

TEST(Agent, ImprovedVariantIsDeterministicAndBudgeted) {
  const Case c = make_big_case("deepseek-v3", "h100x256");
  SearchOptions o;
  o.budget = 600;
  o.seed = 3;
  const SearchResult a = search_rl(c.ctx, c.space, o, improved_settings());
  o.threads = 2;
  const SearchResult b = search_rl(c.ctx, c.space, o, improved_settings());
  EXPECT_EQ(a.calls, 600);
  EXPECT_EQ(b.calls, 600);
  EXPECT_EQ(a.best, b.best);
  EXPECT_EQ(a.best_value, b.best_value);
  EXPECT_TRUE(a.found);
  EXPECT_EQ(a.engine, "rl");
  // a full budget on GPT-MoE-1.6T exercises every polishing step (slot pairs, scaled expert
  // degrees, instances of other sizes and their ascent): the same seed, 1 or 2 threads,
  // the same calls in the same order
  const Case g = make_big_case("gpt-moe-1.6t", "h100x24576");
  SearchOptions go;
  go.budget = 4000;
  go.seed = 4;
  go.full_history = true;
  go.threads = 1;
  const SearchResult one = search_rl(g.ctx, g.space, go, improved_settings());
  go.threads = 2;
  const SearchResult two = search_rl(g.ctx, g.space, go, improved_settings());
  EXPECT_EQ(one.best, two.best);
  ASSERT_EQ(one.history.size(), two.history.size());
  for (std::size_t i = 0; i < one.history.size(); ++i) ASSERT_EQ(one.history[i].value, two.history[i].value) << "call " << i + 1;
}

TEST(Agent, TheRlEngineRunsNoNetworkAndTheNetVariantDoes) {
  // `rl` is a masked local search: no network is built, trained or returned (issue 17
  // measured that the network changed neither the final plan nor the call that first
  // reached it, docs/search.md); network_proposals = true (bench/search_quality's `rl-net`)
  // puts the paper's network back: it returns a trained policy, and what the policy steps
  // propose differs somewhere over three seeds (one seed alone can coincide).
  const Case c = make_big_case("qwen3-235b-a22b", "h100x8");
  EXPECT_FALSE(improved_settings().network_proposals);
  std::size_t differ = 0;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SearchOptions o;
    o.budget = 1500;
    o.seed = seed;
    o.full_history = true;
    o.record_points = true;
    AgentSettings s = improved_settings();
    AgentStats without, with_net;
    std::unique_ptr<Policy> none, trained;
    const SearchResult b = search_rl(c.ctx, c.space, o, s, nullptr, &none, &without);
    s.network_proposals = true;
    const SearchResult a = search_rl(c.ctx, c.space, o, s, nullptr, &trained, &with_net);
    EXPECT_EQ(none, nullptr);
    ASSERT_NE(trained, nullptr);
    EXPECT_EQ(without.policy_s < with_net.policy_s, true) << without.policy_s << " vs " << with_net.policy_s;
    ASSERT_EQ(a.history.size(), b.history.size());
    for (std::size_t i = 0; i < a.history.size(); ++i) differ += a.history[i].value != b.history[i].value;
    differ += a.points.size() != b.points.size();
    for (std::size_t i = 0; i < std::min(a.points.size(), b.points.size()); ++i) {
      differ += !(a.points[i].deg == b.points[i].deg) || a.points[i].batch != b.points[i].batch ||
                a.points[i].megatron_sharding != b.points[i].megatron_sharding;
    }
    EXPECT_GT(with_net.policy_calls, 0);
    EXPECT_GT(without.policy_calls, 0);
  }
  EXPECT_GT(differ, 0u);
}

TEST(Agent, PolishingMakesTheCoupledMovesThatReachTheOptimum) {
  // DeepSeek-V3 decode-16k on 256 H100: the optimum is tp 4 x attn_dp 64 (ep 256) with
  // attention=context ffn1=none ffn2=none. Before the coupled moves, seed 7 stalled at
  // 217.8 tok/s/GPU (ffn1=hidden ffn2=hidden: changing one of the pair alone costs a
  // collective) and five seeds in ten at tp 4 x attn_dp 32 (ep 128), 480.5: a wider stage
  // pays only with the expert degree scaled alike. With slot pairs and scaled expert
  // degrees polishing reached the optimum on both seeds. With issue 13's MoE physics (the
  // checkpoint's fp8, the busiest expert group) the optimum moved to attn_dp 256 x ep 128
  // with expert TP 2, and both seeds stop at 605.6 of 608.4 (0.9954): within 1%, the gap
  // left to the learning issue (17).
  const Case c = make_big_case("deepseek-v3", "h100x256");
  SearchOptions o;
  o.budget = 4000;
  o.refine_batch = false;  // the optimum of the space rl searches (the batch ladder)
  const double optimum = search_exact(c.ctx, c.space, o).best_value;
  for (const std::uint64_t seed : {1, 7}) {
    o.seed = seed;
    const SearchResult r = search_rl(c.ctx, c.space, o, improved_settings());
    EXPECT_NEAR(r.best_value / optimum, 1.0, 0.01) << "seed " << seed << ": " << r.best_value << " of " << optimum;
  }
}

}  // namespace
}  // namespace shardwise::rl

namespace shardwise::rl {
namespace {

TEST(Agent, ItsElitesAtTheirOwnLargestBatchReachExact) {
  // GPT-MoE-1.6T decode-16k on 4,096 H100: each elite at its largest feasible batch, as exact
  // refines its winners, reaches exact's optimum (19.665 tokens/s per GPU); on the batch ladder
  // alone rl stays at 18.603, 0.946 of it (measured 2026-11-29, session 31). The case moves with
  // the Hopper fit, which decides where the ladder falls short: decode-32k on 4,096 H200 told
  // the two apart until the MoE refit of session 29, decode-16k on 4,096 H200 (22.75 of 22.91
  // refined, 21.19 on the ladder) until session 31's measured all-reduce and collective refit
  // (its ladder now at 0.996 of the optimum)
  const Case c = test_support::make_search_case("gpt-moe-1.6t", "h100x4096", "decode-16k");
  SearchOptions o;
  o.budget = 4000;
  const SearchResult ex = find_engine("exact")(c.ctx, c.space, o);
  const SearchResult rl = find_engine("rl")(c.ctx, c.space, o);
  ASSERT_TRUE(ex.found && rl.found);
  EXPECT_EQ(rl.calls, 4000);  // the refinement is outside the budget, as refine_batch's
  EXPECT_GE(rl.best_value, 0.99 * ex.best_value) << rl.best_value << " against " << ex.best_value;
  o.refine_batch = false;  // the ladder alone
  EXPECT_LT(find_engine("rl")(c.ctx, c.space, o).best_value, 0.97 * ex.best_value);
}

}  // namespace
}  // namespace shardwise::rl
