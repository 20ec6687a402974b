// plan --mode serve (search/serve_plan.hpp): the chosen instance meets the SLOs at its max
// rate, the target-rate deployment meets them with no replica to spare, the exhaustive
// screen is never worse than the top-k one, and an impossible SLO says why.
#include "search/serve_plan.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "report/serve_report.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

SimContext serve_ctx(double tpot_ms, const std::string& cluster = "h100x4") {
  Workload w;
  w.name = "s";
  w.mode = Mode::kServe;
  w.isl = 1024;
  w.osl = 256;
  w.serve.requests = 300;
  w.tpot_pct = {SloBound{90, tpot_ms}};
  w.ttft_pct = {SloBound{99, 3000}};
  return test_support::ctx_for("llama-3.1-8b", cluster, w);
}

ServePlanOptions options(int top_k, double target = 0) {
  ServePlanOptions o;
  o.top_k = top_k;
  o.requests = 300;
  o.target_rate = target;
  return o;
}

// The cluster's instances of `p` less a half (at least a half): a traffic that takes them all.
double instances_less_half(const Plan& p, std::int64_t gpus) {
  const std::int64_t fit = gpus / std::max<std::int64_t>(1, p.deg.instance_gpus());
  return fit > 1 ? static_cast<double>(fit) - 0.5 : 0.5;
}

SimContext with_engine_settings(SimContext c, const ServeCandidate& x) {
  c.engine.max_num_seqs = x.max_num_seqs;
  c.engine.max_num_tokens = x.max_num_tokens;
  return c;
}

SimContext at(const SimContext& base, double rate, std::int64_t requests) {
  SimContext c = base;
  c.workload.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, rate, 0};
  c.workload.serve.requests = requests;
  return c;
}

TEST(ServePlan, TheChosenInstanceMeetsTheSlosAtItsMaxRate) {
  const SimContext ctx = serve_ctx(30);
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  const ServePlanResult r = plan_serving(ctx, space, std::nullopt, options(4));
  ASSERT_GE(r.best, 0) << r.reason;
  EXPECT_GT(r.screened, 0);
  EXPECT_LE(r.candidates.size(), 4u);
  const ServeCandidate& b = r.candidates[static_cast<std::size_t>(r.best)];
  ASSERT_GT(b.max_rate, 0);
  EXPECT_LE(b.max_rate, b.capacity + 1e-9);
  ServeOptions so;
  so.measure_capacity = false;
  // as the planner ran it: the candidate's engine settings (the tuning may have changed them)
  const ServeResult at_max = simulate_serving(with_engine_settings(at(ctx, b.max_rate, 300), b), b.plan, so);
  EXPECT_TRUE(at_max.feasible) << at_max.reason;
  EXPECT_LE(at_max.tpot_ms.p90, 30.0);
  // the deployment fills the cluster with the best instance
  EXPECT_EQ(r.deployment.deg.total_gpus(), (4 / b.plan.deg.instance_gpus()) * b.plan.deg.instance_gpus());
  EXPECT_NEAR(r.deployment_rate, b.max_rate * r.deployment.deg.replicas, 1e-9);
  // best by requests/s per GPU among the simulated
  for (const ServeCandidate& c : r.candidates) EXPECT_LE(c.per_gpu(), b.per_gpu() + 1e-12);
  // the frontier: rates rising, throughput per GPU rising, tokens/s per user falling (in
  // steady state: the frontier of a planner run at 2,000 requests, since at 300 the points
  // near the SLO-bound rate are still filling their queues inside the measured window)
  ServePlanOptions longer = options(4);
  longer.requests = 2000;
  const ServePlanResult rl = plan_serving(ctx, space, std::nullopt, longer);
  ASSERT_GE(rl.best, 0) << rl.reason;
  ASSERT_EQ(r.frontier.size(), 6u);
  ASSERT_EQ(rl.frontier.size(), 6u);
  for (std::size_t i = 1; i < rl.frontier.size(); ++i) {
    EXPECT_GT(rl.frontier[i].rate, rl.frontier[i - 1].rate);
    EXPECT_GT(rl.frontier[i].output_tok_s_per_gpu, rl.frontier[i - 1].output_tok_s_per_gpu);
    EXPECT_LE(rl.frontier[i].tok_s_per_user, rl.frontier[i - 1].tok_s_per_user * 1.02);
  }
}

TEST(ServePlan, TargetRateTakesTheFewestGpusThatHoldIt) {
  const SimContext ctx = serve_ctx(30, "h100x8");
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  const ServePlanResult one = plan_serving(ctx, space, std::nullopt, options(4));
  ASSERT_GE(one.best, 0);
  const ServeCandidate& best = one.candidates[static_cast<std::size_t>(one.best)];
  const double per_instance = best.max_rate;
  // half an instance's worth less traffic than the cluster's instances of the best serve
  // (3.5 of four 2-GPU instances, 1.5 of two 4-GPU ones): all of them are needed
  const double target = instances_less_half(best.plan, 8) * per_instance;
  const ServePlanResult r = plan_serving(ctx, space, std::nullopt, options(4, target));
  ASSERT_GT(r.deployment_rate, 0) << r.reason;
  EXPECT_EQ(r.deployment_rate, target);
  EXPECT_TRUE(r.deployment_result.feasible) << r.deployment_result.reason;
  EXPECT_LE(r.deployment.deg.total_gpus(), 8);
  // the deployment is checked with the knee check: at 80% of its capacity or more it has one
  // (docs/serving.md, "Near capacity: the knee check"), below none
  const ServeResult& d = r.deployment_result;
  ASSERT_GT(d.capacity_requests_per_s, 0);
  EXPECT_EQ(d.knee.has_value(), d.offered_requests_per_s >= kKneeLoad * d.capacity_requests_per_s)
      << d.offered_requests_per_s << " of " << d.capacity_requests_per_s;
  if (d.knee) {
    EXPECT_DOUBLE_EQ(d.knee->rate_scale, 1.0 + kKneeRateStep);
  }
  // one replica fewer does not hold it (or there is nothing fewer)
  if (r.deployment.deg.replicas > 1) {
    Plan fewer = r.deployment;
    fewer.deg.replicas -= 1;
    const ServeResult f = simulate_serving(at(ctx, target, 300 * fewer.deg.replicas), fewer);
    EXPECT_FALSE(f.feasible) << "one replica fewer also serves " << target << " requests/s";
  }
  // a target no deployment of the cluster holds is refused with the figures
  const ServePlanResult no = plan_serving(ctx, space, std::nullopt, options(4, 100 * per_instance));
  EXPECT_EQ(no.deployment_rate, 0);
  EXPECT_NE(no.reason.find("no plan on up to 8 GPUs"), std::string::npos) << no.reason;
}

TEST(ServePlan, TargetRateSizesDisaggregatedPoolsAndTakesTheFewestGpus) {
  // Llama-3.1-8B at one and a half of the best aggregated instance's rate on up to 8 H100 (a
  // traffic that takes two of them, whatever their size: with every instance of the cluster
  // less a half, a TP2 best took 3.5 instances' traffic, more than any disaggregated pair
  // holds on 8 GPUs): the best disaggregated deployment holds the target (re-simulated), a
  // pool with an instance fewer does not, and the chosen deployment is whichever of the two
  // takes fewer GPUs
  const SimContext ctx = serve_ctx(30, "h100x8");
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  const ServePlanResult one = plan_serving(ctx, space, std::nullopt, options(4));
  ASSERT_GE(one.best, 0);
  const ServeCandidate& best = one.candidates[static_cast<std::size_t>(one.best)];
  const double target = 1.5 * best.max_rate;
  const ServePlanResult r = plan_serving(ctx, space, std::nullopt, options(4, target));
  ASSERT_GT(r.deployment_rate, 0) << r.reason;
  ASSERT_GE(r.disagg_best, 0) << r.disagg_reason;
  const DisaggCandidate& d = r.disagg[static_cast<std::size_t>(r.disagg_best)];
  EXPECT_EQ(d.max_rate, target);
  EXPECT_LE(d.plan.gpus(), 8);
  for (const DisaggCandidate& c : r.disagg) EXPECT_GE(c.plan.gpus(), d.plan.gpus());  // the fewest GPUs of the pairs
  SimContext at_target = at(ctx, target, 600);  // 2 x the planner's requests, as it simulates pools
  EXPECT_TRUE(simulate_disaggregated(at_target, d.plan).total.feasible);
  int smaller = 0;  // the pools with an instance to take away
  for (const bool prefill : {true, false}) {
    DisaggPlan fewer = d.plan;
    Plan& pool = prefill ? fewer.prefill : fewer.decode;
    if (pool.deg.replicas < 2) continue;
    pool.deg.replicas -= 1;
    ++smaller;
    EXPECT_FALSE(simulate_disaggregated(at_target, fewer).total.feasible) << (prefill ? "prefill" : "decode") << " pool one instance smaller";
  }
  EXPECT_GT(smaller, 0) << "both pools hold one instance: the target checks no pool's size";
  EXPECT_EQ(r.disagg_chosen, d.plan.gpus() < r.deployment.deg.total_gpus());
  EXPECT_TRUE(r.found());
  // the plan file of a disaggregated choice records each pool's settings as simulated
  // (launch starts them so), never the closed form's batch; sized for a target rate, the
  // pools run the engine's own
  EXPECT_EQ(d.plan.decode_settings, (PoolSettings{ctx.engine.max_num_seqs, ctx.engine.max_num_tokens}));
  EXPECT_EQ(d.plan.prefill_settings, (PoolSettings{ctx.engine.max_num_seqs, ctx.engine.max_num_tokens}));
  ServePlanResult chosen = r;
  chosen.disagg_chosen = true;
  const PlanFile f = serve_plan_file(PlanFile{}, chosen, 300);
  ASSERT_TRUE(f.prefill_pool.has_value());
  EXPECT_EQ(f.max_num_seqs, std::optional<std::int64_t>(ctx.engine.max_num_seqs));
  EXPECT_EQ(f.max_num_tokens, std::optional<std::int64_t>(ctx.engine.max_num_tokens));
  EXPECT_EQ(f.prefill_max_num_seqs, std::optional<std::int64_t>(ctx.engine.max_num_seqs));
  EXPECT_EQ(f.prefill_max_num_tokens, std::optional<std::int64_t>(ctx.engine.max_num_tokens));
  // no pair fits one GPU: the reason says so, and the aggregated deployment stands
  const SimContext small = serve_ctx(30, "h100x1");
  const ServePlanResult s = plan_serving(small, make_space(small.model, small.cluster, small.workload), std::nullopt, options(4, 2.0));
  EXPECT_LT(s.disagg_best, 0);
  EXPECT_FALSE(s.disagg_chosen);
  EXPECT_NE(s.disagg_reason.find("over the cluster's 1"), std::string::npos) << s.disagg_reason;
  EXPECT_TRUE(s.found()) << s.reason;
}

TEST(ServePlan, EveryCandidateSimulatedIsNeverWorseThanTheScreen) {
  const SimContext ctx = serve_ctx(30);
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  const ServePlanResult k2 = plan_serving(ctx, space, std::nullopt, options(2));
  const ServePlanResult all = plan_serving(ctx, space, std::nullopt, options(0));
  ASSERT_GE(k2.best, 0);
  ASSERT_GE(all.best, 0);
  EXPECT_EQ(all.candidates.size(), static_cast<std::size_t>(all.screen_feasible));
  EXPECT_GE(all.candidates[static_cast<std::size_t>(all.best)].per_gpu(), k2.candidates[static_cast<std::size_t>(k2.best)].per_gpu() - 1e-12);
}

TEST(ServePlan, AnImpossibleSloSaysWhy) {
  const SimContext ctx = serve_ctx(0.5);  // 0.5 ms per token: no plan decodes that fast
  const ServePlanResult r = plan_serving(ctx, make_space(ctx.model, ctx.cluster, ctx.workload), std::nullopt, options(4));
  EXPECT_LT(r.best, 0);
  EXPECT_FALSE(r.reason.empty());
  // the nearest shape (the most GPUs, the least memory) and the limit it broke, as offline plan says
  EXPECT_NE(r.reason.find("; the nearest, tp "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("TPOT"), std::string::npos) << r.reason;
}

TEST(ServePlan, TuningTheEngineSettingsNeverLoses) {
  const SimContext ctx = serve_ctx(25, "h100x4");
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  ServePlanOptions on = options(4), off = options(4);
  off.tune_engine = false;
  const ServePlanResult a = plan_serving(ctx, space, std::nullopt, on), b = plan_serving(ctx, space, std::nullopt, off);
  ASSERT_GE(a.best, 0);
  ASSERT_GE(b.best, 0);
  const ServeCandidate& x = a.candidates[static_cast<std::size_t>(a.best)];
  EXPECT_GE(x.per_gpu(), b.candidates[static_cast<std::size_t>(b.best)].per_gpu() - 1e-12);
  // the settings are the engine's or smaller, and the candidate's simulation used them
  EXPECT_LE(x.max_num_seqs, ctx.engine.max_num_seqs);
  EXPECT_LE(x.max_num_tokens, ctx.engine.max_num_tokens);
  for (const ServeCandidate& c : b.candidates) {
    EXPECT_EQ(c.max_num_seqs, ctx.engine.max_num_seqs);
    EXPECT_EQ(c.max_num_tokens, ctx.engine.max_num_tokens);
  }
  // the best disaggregated deployment: each pool tuned on its own (the decode pool's cap, the
  // prefill pool's budget), never below the engine's settings on both
  ASSERT_GE(a.disagg_best, 0) << a.disagg_reason;
  ASSERT_EQ(a.disagg_best, b.disagg_best);  // chosen before the tuning
  const DisaggCandidate& t = a.disagg[static_cast<std::size_t>(a.disagg_best)];
  const DisaggCandidate& u = b.disagg[static_cast<std::size_t>(b.disagg_best)];
  EXPECT_GE(t.per_gpu(), u.per_gpu() - 1e-12);
  const PoolSettings engine{ctx.engine.max_num_seqs, ctx.engine.max_num_tokens};
  EXPECT_EQ(u.plan.prefill_settings, engine);
  EXPECT_EQ(u.plan.decode_settings, engine);
  EXPECT_LE(t.plan.decode_settings.max_num_seqs, engine.max_num_seqs);
  EXPECT_LE(t.plan.prefill_settings.max_num_tokens, engine.max_num_tokens);
  EXPECT_EQ(t.plan.prefill_settings.max_num_seqs, engine.max_num_seqs);  // the prefill pool's cap is not tuned
  // what the deployment was simulated with is what its plan file records, pool by pool
  ServePlanResult chosen = a;
  chosen.disagg_chosen = true;
  const PlanFile f = serve_plan_file(PlanFile{}, chosen, 300);
  EXPECT_EQ(f.max_num_seqs, std::optional<std::int64_t>(t.plan.decode_settings.max_num_seqs));
  EXPECT_EQ(f.prefill_max_num_tokens, std::optional<std::int64_t>(t.plan.prefill_settings.max_num_tokens));
}


TEST(ServePlan, SteadyChecksAnswerWithASteadyRate) {
  // Llama-3.1-8B on one H100 with long outputs (1,024 + 4,096 tokens) and a p90 TPOT of
  // 18 ms: 60 requests arrive in about a minute and each lives for more than one, so a
  // 60-request run never reaches the batch a steady stream settles into, and its TPOT (and
  // max rate: 0.99 requests/s when written) is a transient's. With steady checks the answer's
  // max rate is searched again at the automatic length: steady, lower (0.69), met there, and
  // the transient's rate is not.
  SimContext ctx = serve_ctx(18, "h100x1");
  ctx.workload.osl = 4096;
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  ServePlanOptions transient = options(2), steady = options(2);
  transient.requests = steady.requests = 60;
  transient.disaggregated = steady.disaggregated = false;
  steady.steady_checks = true;
  const ServePlanResult a = plan_serving(ctx, space, std::nullopt, transient), b = plan_serving(ctx, space, std::nullopt, steady);
  ASSERT_GE(a.best, 0);
  ASSERT_GE(b.best, 0) << b.reason;
  const ServeCandidate& t = a.candidates[static_cast<std::size_t>(a.best)];
  const ServeCandidate& c = b.candidates[static_cast<std::size_t>(b.best)];
  EXPECT_FALSE(t.steady);
  EXPECT_TRUE(c.steady);
  EXPECT_LT(c.max_rate, 0.9 * t.max_rate);
  SimContext at_max = at(ctx, c.max_rate, 0);  // the automatic length
  const ServeResult r = simulate_serving(with_engine_settings(at_max, c), c.plan);
  EXPECT_TRUE(r.feasible) << r.reason;
  EXPECT_TRUE(r.stable) << "the automatic length ends steady";
  EXPECT_FALSE(simulate_serving(with_engine_settings(at(ctx, t.max_rate, 0), t), t.plan).feasible);
  // every candidate that is an answer is a steady one, and within the limit (the default 24, as
  // many as are simulated by default) no short run is left above the answer
  EXPECT_EQ(ServePlanOptions{}.steady_candidates, ServePlanOptions{}.top_k);
  for (const ServeCandidate& x : b.candidates) {
    if (&x == &c) continue;
    if (x.steady) {
      EXPECT_LE(x.per_gpu(), c.per_gpu() + 1e-12);
    } else {
      EXPECT_LE(x.per_gpu(), c.per_gpu() + 1e-12) << "a short run above the answer was not searched again";
    }
  }
  // the text names the shapes whose short runs still beat the answer when the steady searches
  // stopped at their limit: none here (every transient was searched or is below the answer);
  // a short run at twice the answer's rate per GPU, left unsearched, is named with its rate
  const std::string text = serve_plan_text(ctx, b, 0, 0);
  EXPECT_NE(text.find("searched again at the automatic length"), std::string::npos) << text;
  EXPECT_EQ(text.find("not searched again"), std::string::npos) << text;
  ServePlanResult open = b;
  ServeCandidate fast = c;
  fast.steady = false;
  fast.max_rate = 2.0 * c.max_rate;
  open.candidates.push_back(fast);
  const std::string with_open = serve_plan_text(ctx, open, 0, 0);
  const std::string named = fmt::format("#{} ({:.4f})", open.candidates.size(), fast.per_gpu());
  EXPECT_NE(with_open.find("not searched again, the steady searches stopped (their limit or a time limit): " + named + " ran more requests/s per GPU in its short run"),
            std::string::npos)
      << with_open;
}

TEST(ServePlan, ByDefaultOnlyLayoutsAnEngineRuns) {
  const SimContext ctx = serve_ctx(25, "h100x4");
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  // the paper's FFN2-on-hidden sharding: no engine runs it (engine_limits), so the default
  // screen leaves it out and --engine any (runnable_only false) keeps it
  Plan odd;
  odd.deg.tp = 2;
  odd.sharding = paper_allgather_sharding();
  ASSERT_TRUE(engines_running(ctx, odd).empty());
  Plan megatron = odd;
  megatron.sharding = megatron_sharding();
  EXPECT_EQ(engines_running(ctx, megatron).size(), 3U);  // tp 2, Megatron's sharding: every engine
  ServePlanOptions only = options(2), any = options(2);
  only.runnable_only = true;
  const ServePlanResult a = plan_serving(ctx, space, odd, only), b = plan_serving(ctx, space, odd, any);
  EXPECT_GE(a.not_runnable, 1);
  EXPECT_EQ(b.not_runnable, 0);
  EXPECT_EQ(a.screened + a.not_runnable, b.screened);
  ASSERT_GE(a.best, 0);
  EXPECT_FALSE(engines_running(ctx, a.candidates[static_cast<std::size_t>(a.best)].plan).empty());
}
}  // namespace
}  // namespace shardwise
