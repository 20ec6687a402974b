// Disaggregated prefill and decode (serve/disagg.hpp): the KV transfer by hand, one request's
// timeline through both pools, percentiles and Little's law, the plan file round trip.
#include "serve/disagg.hpp"

#include <gtest/gtest.h>

#include "model/derived.hpp"
#include "plan/plan_json.hpp"
#include "serve/step_times.hpp"
#include "support/sim_context.hpp"
#include "support/serve_checks.hpp"

namespace shardwise {
namespace {

SimContext ctx_for(double rate, std::int64_t requests, const std::string& cluster = "h100x8") {
  Workload w;
  w.name = "s";
  w.mode = Mode::kServe;
  w.isl = 1024;
  w.osl = 128;
  w.serve.requests = requests;
  w.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, rate, 0};
  return test_support::ctx_for("llama-3.1-8b", cluster, w);
}

DisaggPlan pools(std::int32_t x, std::int32_t y) {
  DisaggPlan d;
  d.prefill = test_support::plan(1, 0);
  d.prefill.deg.replicas = x;
  d.decode = test_support::plan(1, 0);
  d.decode.deg.replicas = y;
  return d;
}

TEST(Disagg, KvTransferByHand) {
  const SimContext ctx = ctx_for(1, 10);
  // Llama-3.1-8B: 32 layers x 2 (k, v) x 8 kv heads x 128 x 2 bytes = 131,072 bytes per token;
  // 1,024 tokens = 134,217,728 bytes
  EXPECT_DOUBLE_EQ(kv_transfer_bytes(ctx, 1024), 134'217'728.0);
  // 8 H100 in one NVLink domain: both pools inside it; one GPU per instance sends
  const DisaggPlan d = pools(1, 1);
  const TopologyLevel& nv = ctx.cluster.levels.front();
  EXPECT_DOUBLE_EQ(kv_transfer_s(ctx, d, 134'217'728.0), 134'217'728.0 / nv.bandwidth.value() + nv.latency.value());
  // across nodes (16 GPUs: 8 prefill instances fill the first node) the network carries it
  const SimContext wide = ctx_for(1, 10, "h100x16");
  const DisaggPlan far = pools(8, 8);
  const TopologyLevel& net = wide.cluster.levels.back();
  EXPECT_DOUBLE_EQ(kv_transfer_s(wide, far, 1e6), 1e6 / net.bandwidth.value() + net.latency.value());
}

TEST(Disagg, OneRequestThroughBothPools) {
  // one request at a time (0.001 requests/s): TTFT is the prefill pool's prefill of the
  // prompt; then the KV travels, and the decode pool decodes the other 127 tokens alone
  SimContext ctx = ctx_for(0.001, 5);
  const DisaggPlan d = pools(1, 1);
  ServeOptions opt;
  opt.keep_records = true;
  const DisaggResult r = simulate_disaggregated(ctx, d, opt);
  ASSERT_TRUE(r.total.feasible) << r.total.reason;
  StepTimes st(ctx, d.prefill);
  EXPECT_NEAR(r.total.ttft_ms.p50, st.prefill(1024, 1) * 1e3, 1e-6);
  const double tx = kv_transfer_s(ctx, d, kv_transfer_bytes(ctx, 1024));
  EXPECT_NEAR(r.transfer_ms, tx * 1e3, 1e-9);
  // decode: admitted on arrival (an iteration with no work), then 127 decode iterations at
  // contexts 1025 .. 1151 (the prompt and the tokens so far)
  double decode = 0;
  for (int k = 1; k <= 127; ++k) decode += st.decode(1, 1024.0 + k);
  ASSERT_EQ(r.total.records.size(), 5u);
  const RequestRecord& a = r.total.records[0];
  EXPECT_NEAR(a.finish_s - a.first_token_s, tx + decode, 1e-9);
}

TEST(Disagg, PercentilesOrderedAndLittlesLaw) {
  const DisaggResult r = simulate_disaggregated(ctx_for(30, 800), pools(2, 6));
  ASSERT_TRUE(r.total.requests > 0) << r.total.reason;
  for (const LatencyStats* s : {&r.total.ttft_ms, &r.total.tpot_ms, &r.total.e2e_ms}) {
    EXPECT_LE(s->p50, s->p90);
    EXPECT_LE(s->p90, s->p99);
    EXPECT_LE(s->p99, s->max);
  }
  test_support::expect_littles_law(r.total);
  EXPECT_GT(r.prefill_capacity, 0);
  EXPECT_GT(r.decode_capacity, 0);
}

TEST(Disagg, AClosedLoopOfOneUserSendsEachRequestWhenTheLastEnds) {
  // one user, 3 requests of 1,024 + 128 tokens on 1 prefill and 1 decode instance: each
  // request arrives when the decode pool finishes the last one, so all three take the same
  // path alone: TTFT = the prefill of the prompt; then the KV travels and the decode pool
  // decodes the other 127 tokens at contexts 1025 .. 1151
  SimContext ctx = ctx_for(1, 3);
  ctx.workload.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0, 1};
  const DisaggPlan d = pools(1, 1);
  ServeOptions opt;
  opt.keep_records = true;
  const DisaggResult r = simulate_disaggregated(ctx, d, opt);
  ASSERT_TRUE(r.total.feasible) << r.total.reason;
  ASSERT_EQ(r.total.records.size(), 3u);
  StepTimes st(ctx, d.prefill);
  const double tx = kv_transfer_s(ctx, d, kv_transfer_bytes(ctx, 1024));
  double decode = 0;
  for (int k = 1; k <= 127; ++k) decode += st.decode(1, 1024.0 + k);
  const double one = st.prefill(1024, 1) + tx + decode;  // a request's time in the system
  for (std::size_t i = 0; i < 3; ++i) {
    const RequestRecord& x = r.total.records[i];
    EXPECT_NEAR(x.arrival_s, static_cast<double>(i) * one, 1e-9) << i;  // sent as the last one ended
    EXPECT_NEAR(x.first_token_s - x.arrival_s, st.prefill(1024, 1), 1e-9) << i;
    EXPECT_NEAR(x.finish_s - x.arrival_s, one, 1e-9) << i;
  }
}

TEST(Disagg, AClosedLoopKeepsEveryUserInTheSystem) {
  // N users with no think time over two pools: N requests always in the system, so inside
  // the steady window the time-averaged occupancy is N, and throughput x mean time in the
  // system is N (Little's law, 2%); more users never serve fewer requests/s
  double last_rate = 0;
  for (std::int64_t users : {6, 48, 240}) {
    SimContext ctx = ctx_for(1, 3000);
    ctx.workload.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0, users};
    ctx.workload.serve.input = LengthDist{LengthDist::Kind::kLognormal, 1024, 0.8, 16, 8192, {}};
    ctx.workload.serve.output = LengthDist{LengthDist::Kind::kUniform, 0, 0, 16, 496, {}};
    const DisaggResult r = simulate_disaggregated(ctx, pools(2, 5));
    ASSERT_TRUE(r.total.requests > 0) << r.total.reason;
    EXPECT_GT(r.total.window_s, 0) << users;
    const auto n = static_cast<double>(users);
    EXPECT_NEAR(r.total.mean_in_system / n, 1.0, 0.02) << users;
    EXPECT_NEAR(r.total.requests_per_s * r.total.e2e_ms.mean / 1e3 / n, 1.0, 0.02) << users;
    EXPECT_GT(r.total.requests_per_s, last_rate) << users;
    last_rate = r.total.requests_per_s;
  }
}

TEST(Disagg, WithoutARequestCountTheLengthGrowsUntilSteady) {
  // the default length (2,000 requests in all) at 30 requests/s on 2 + 6 instances is a
  // transient (its halves differ by 17%); the automatic length doubles until they agree
  SimContext ctx = ctx_for(30, 0);
  ctx.workload.osl = 1024;
  const DisaggResult r = simulate_disaggregated(ctx, pools(2, 6));
  ASSERT_TRUE(r.total.feasible) << r.total.reason;
  EXPECT_TRUE(r.total.stable) << r.total.halves_diff;
  EXPECT_GT(r.total.length_runs, 1);
  EXPECT_GT(r.total.requests, kDefaultRequests);
}

TEST(Disagg, PlanFileRoundTrip) {
  PlanFile f;
  f.plan = test_support::plan(4, 0);
  f.plan.deg.replicas = 3;
  f.model = "llama-3.1-8b";
  Plan pre = test_support::plan(2, 0);
  pre.deg.replicas = 2;
  pre.sharding[static_cast<std::size_t>(Slot::kFfn1)] = 2;
  f.prefill_pool = pre;
  const std::string text = plan_to_json(f);
  EXPECT_NE(text.find("\"disaggregated\""), std::string::npos);
  auto back = parse_plan_json(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->prefill_pool.has_value());
  EXPECT_EQ(back->prefill_pool->deg, pre.deg);
  EXPECT_EQ(back->prefill_pool->sharding, pre.sharding);
  EXPECT_EQ(back->plan.deg, f.plan.deg);
  // an unknown key inside names its path
  auto bad = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": "max",
    "disaggregated": {"prefill": {"degrees": {"tp": 1}, "shards": {}}}})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("disaggregated.prefill.shards"), std::string::npos) << bad.error().message();
  // each pool its own engine settings: the prefill pool's inside its block, the decode pool's
  // at the top
  f.max_num_seqs = 64;
  f.max_num_tokens = 8192;
  f.prefill_max_num_seqs = 1024;
  f.prefill_max_num_tokens = 2048;
  auto both = parse_plan_json(plan_to_json(f), "p.json");
  ASSERT_TRUE(both.ok()) << both.error().message();
  EXPECT_EQ(both->max_num_seqs, std::optional<std::int64_t>(64));
  EXPECT_EQ(both->prefill_max_num_seqs, std::optional<std::int64_t>(1024));
  EXPECT_EQ(both->prefill_max_num_tokens, std::optional<std::int64_t>(2048));
  auto bad_es = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": "max",
    "disaggregated": {"prefill": {"degrees": {"tp": 1}, "engine_settings": {"max_num_seqs": 0}}}})", "p.json");
  ASSERT_FALSE(bad_es.ok());
  EXPECT_NE(bad_es.error().message().find("disaggregated.prefill.engine_settings.max_num_seqs"), std::string::npos) << bad_es.error().message();
}

TEST(Disagg, EachPoolRunsItsOwnEngineSettings) {
  // Llama-3.1-8B, 1 prefill + 1 decode instance of one H100 each, 6 requests/s of 1,024 + 128
  // tokens (about 6 x 127 x 9.4 ms = 7 sequences decoding at a time). Settings equal to the
  // engine's own are the same deployment; a decode pool capped at 4 running sequences makes
  // the copies wait for a slot after their first token, which a disaggregated TPOT counts; a
  // smaller prefill budget alone is another run.
  const SimContext ctx = ctx_for(6, 300);
  DisaggPlan base = pools(1, 1);
  const DisaggResult r0 = simulate_disaggregated(ctx, base);
  ASSERT_TRUE(r0.total.requests > 0);
  DisaggPlan same = base;
  same.prefill_settings = same.decode_settings = PoolSettings{ctx.engine.max_num_seqs, ctx.engine.max_num_tokens};
  const DisaggResult r1 = simulate_disaggregated(ctx, same);
  EXPECT_DOUBLE_EQ(r1.total.ttft_ms.p99, r0.total.ttft_ms.p99);
  EXPECT_DOUBLE_EQ(r1.total.tpot_ms.mean, r0.total.tpot_ms.mean);
  DisaggPlan capped = base;
  capped.decode_settings.max_num_seqs = 4;
  const DisaggResult r2 = simulate_disaggregated(ctx, capped);
  EXPECT_GT(r2.total.tpot_ms.mean, 2 * r0.total.tpot_ms.mean);  // waiting for one of 4 slots
  EXPECT_GT(r2.decode_queue_ms, r0.decode_queue_ms);
  DisaggPlan pre_only = base;
  pre_only.prefill_settings.max_num_tokens = 2048;  // a 1,024-token prompt fits either budget
  const DisaggResult r3 = simulate_disaggregated(ctx, pre_only);
  EXPECT_GT(r3.total.requests, 0);
  EXPECT_NE(r2.total.tpot_ms.mean, r3.total.tpot_ms.mean);
}

}  // namespace
}  // namespace shardwise
