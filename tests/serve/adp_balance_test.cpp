// TensorRT-LLM's attention-DP balancing in the serving scheduler (EngineTraits::adp_wait_iters,
// adp_timeout_iters; docs/serving.md, "Attention-DP balancing"): a held prompt's admission by
// hand, the invariants under Poisson load, the flag's and the plan file's errors.
#include <gtest/gtest.h>

#include "cost/engine.hpp"
#include "plan/plan_json.hpp"
#include "serve/serving.hpp"
#include "serve/step_times.hpp"
#include "support/sim_context.hpp"
#include "support/serve_checks.hpp"

namespace shardwise {
namespace {

using test_support::serve_workload;

// Llama-3.1-8B on 2 H100s as 2 attention-DP groups, decode first (TensorRT-LLM's order)
SimContext dp2(const Workload& w, std::int64_t wait, std::int64_t timeout) {
  SimContext c = test_support::ctx_for("llama-3.1-8b", "h100x2", w);
  c.engine.name = "trtllm";
  c.engine.adp_wait_iters = wait;
  c.engine.adp_timeout_iters = timeout;
  return c;
}
Plan dp2_plan() {
  Plan p = test_support::plan(1, 0);
  p.deg.attn_dp = 2;
  return p;
}

TEST(AdpBalance, ALonePromptWaitsForTheTimeoutByHand) {
  // A and B arrive at 0: both groups have a prompt and neither decodes, so both are admitted
  // in iteration 1 (first tokens at t1). The counter of iterations without a prompt on every
  // group then runs 1, 2, 3 -> release (timeout 3) in iterations 2, 3, 4. C arrives inside
  // iteration 2 (at t1 + d2 / 2): without balancing it is admitted when iteration 3 starts,
  // t1 + d2; with it, held in iteration 3 (counter 2) and admitted when iteration 4 starts,
  // t1 + d2 + d3, where d2 and d3 are the decodes of the two sequences at contexts 513, 514.
  Workload w = serve_workload(512, 64);
  w.serve.arrivals = Arrivals{Arrivals::Kind::kTrace, 0.0, 0};
  const Plan plan = dp2_plan();
  const SimContext base = dp2(w, 0, 0);
  StepTimes st(base, plan);
  // t1: iteration 1's two prompts (the same step time with or without balancing)
  w.serve.trace = {TraceRequest{0.0, 512, 64}, TraceRequest{0.0, 512, 64}};
  ServeOptions o;
  o.keep_records = true;
  const ServeResult two = simulate_serving(dp2(w, 0, 0), plan, o);
  ASSERT_EQ(two.records.size(), 2u) << two.reason;
  const double t1 = two.records[0].first_token_s;
  const double d2 = st.decode(2, 513), d3 = st.decode(2, 514);
  w.serve.trace.push_back(TraceRequest{t1 + d2 / 2, 512, 64});
  const ServeResult off = simulate_serving(dp2(w, 0, 0), plan, o);
  const ServeResult on = simulate_serving(dp2(w, 0, 3), plan, o);
  ASSERT_EQ(off.records.size(), 3u) << off.reason;
  ASSERT_EQ(on.records.size(), 3u) << on.reason;
  EXPECT_NEAR(on.records[0].first_token_s, t1, 1e-12);
  EXPECT_NEAR(off.records[2].admitted_s, t1 + d2, 1e-9 * t1);
  EXPECT_NEAR(on.records[2].admitted_s, t1 + d2 + d3, 1e-9 * t1);
}

TEST(AdpBalance, OneGroupOrNoBalancingChangesNothing) {
  Workload w = serve_workload(512, 128);
  w.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, 20.0, 0};
  w.serve.requests = 800;
  ServeOptions o;
  o.keep_records = true;
  const ServeResult plain = simulate_serving(dp2(w, 0, 0), test_support::plan(1, 0), o);
  const ServeResult one = simulate_serving(dp2(w, 3, 9), test_support::plan(1, 0), o);  // attn_dp 1: nothing to balance
  ASSERT_EQ(plain.records.size(), one.records.size());
  for (std::size_t i = 0; i < plain.records.size(); ++i) EXPECT_EQ(plain.records[i].first_token_s, one.records[i].first_token_s) << i;
}

TEST(AdpBalance, HeldPromptsWaitLongerAndLittlesLawHolds) {
  Workload w = serve_workload(512, 128);
  w.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, 20.0, 0};
  w.serve.requests = 3000;
  const ServeResult off = simulate_serving(dp2(w, 0, 0), dp2_plan());
  const ServeResult on = simulate_serving(dp2(w, 3, 9), dp2_plan());
  ASSERT_TRUE(off.feasible && on.feasible) << off.reason << on.reason;
  EXPECT_GT(on.ttft_ms.mean, off.ttft_ms.mean);
  // the same requests are served at the same offered rate
  EXPECT_NEAR(on.output_tok_s_per_gpu / off.output_tok_s_per_gpu, 1.0, 0.02);
  test_support::expect_littles_law(on);
  test_support::expect_ordered(on.ttft_ms);
}

TEST(AdpBalance, TheFlagIsTensorRtLlmsAndItsValuesAreChecked) {
  auto trt = load_engine_profile("trtllm");
  ASSERT_TRUE(trt.ok());
  EXPECT_EQ(trt->adp_timeout_iters, 0);  // off by default (AttentionDpConfig.enable_balance False)
  auto on = with_adp_balance(*trt, 3, 9);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->adp_wait_iters, 3);
  EXPECT_EQ(on->adp_timeout_iters, 9);
  auto sg = with_adp_balance(*load_engine_profile("sglang"), 3, 9);
  ASSERT_FALSE(sg.ok());
  EXPECT_EQ(sg.error().message(),
            "--adp-balance: expected --engine trtllm beside it (TensorRT-LLM's attention_dp_config; vLLM and SGLang hold no prompts back), "
            "found --engine sglang");
  EXPECT_FALSE(with_adp_balance(*trt, 3, 0).ok());
  EXPECT_FALSE(with_adp_balance(*trt, -1, 9).ok());
  EXPECT_FALSE(with_adp_balance(*trt, 1001, 9).ok());
  auto parsed = parse_adp_balance("3,9");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->first, 3);
  EXPECT_EQ(parsed->second, 9);
  for (const char* bad : {"3", "3,", ",9", "3;9", "-1,9", "3,9,1", "a,b", "1e3,9"}) {
    auto p = parse_adp_balance(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.error().message().find(std::string("'") + bad + "'"), std::string::npos) << p.error().message();
  }
}

TEST(AdpBalance, ThePlanFileCarriesIt) {
  PlanFile f;
  f.plan = dp2_plan();
  f.adp_balance = std::pair<std::int64_t, std::int64_t>{2, 6};
  const std::string text = plan_to_json(f);
  EXPECT_NE(text.find("\"adp_balance\""), std::string::npos);
  auto back = parse_plan_json(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->adp_balance.has_value());
  EXPECT_EQ(back->adp_balance->first, 2);
  EXPECT_EQ(back->adp_balance->second, 6);
  std::string bad = text;
  bad.replace(bad.find("\"timeout_iters\": 6"), 18, "\"timeout_iters\": 0");
  auto refused = parse_plan_json(bad, "p.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("timeout_iters"), std::string::npos);
}

}  // namespace
}  // namespace shardwise
