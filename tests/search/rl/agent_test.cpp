#include "search/rl/agent.hpp"

#include <gtest/gtest.h>

#include "model/loader.hpp"

namespace shardwise::rl {
namespace {

struct Case {
  SimContext ctx;
  SearchSpace space;
};
Case make_case() {
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("h100x8");
  auto w = load_workload("chat-1k-1k");
  return {make_context(*m, *c, *w, cost_params_for("h100")), make_space(*m, *c, *w)};
}

TEST(Agent, DeterministicBudgetedAndFindsPlans) {
  const Case c = make_case();
  for (double exploit : {0.0, 0.5}) {
    AgentSettings s;
    s.exploit = exploit;
    SearchOptions o;
    o.budget = 300;
    o.seed = 9;
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
  const SearchResult warm = search_rl(c.ctx, c.space, o, AgentSettings{}, &*loaded);
  EXPECT_EQ(warm.calls, 200);
  EXPECT_TRUE(warm.found);
}

}  // namespace
}  // namespace shardwise::rl
