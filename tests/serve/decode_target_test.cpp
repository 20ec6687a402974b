// The decode-batch target of AMD's MLPerf v5.1 vLLM scheduler patch (EngineTraits::
// decode_target_*, prefill_min_*; docs/serving.md, "Decode-batch targets"): the target rule by
// hand, a prompt held for the waiting minimum by hand, the decode cap by hand, and the
// invariants under Poisson load.
#include <gtest/gtest.h>

#include "serve/scheduler.hpp"
#include "serve/serving.hpp"
#include "serve/step_times.hpp"
#include "support/sim_context.hpp"
#include "support/serve_checks.hpp"

namespace shardwise {
namespace {

using test_support::serve_workload;

// Llama-3.1-8B on one H100, vLLM V0's default scheduler (prefill first), one decode per decision
SimContext v0(const Workload& w) {
  SimContext c = test_support::ctx_for("llama-3.1-8b", "h100x1", w);
  c.engine.prefill_first = true;
  return c;
}
// A workload whose requests come from a trace (set by the test), the lengths given
Workload traced(std::int64_t isl, std::int64_t osl) {
  Workload w = serve_workload(isl, osl);
  w.serve.arrivals = Arrivals{Arrivals::Kind::kTrace, 0.0, 0};
  return w;
}
// The serving simulation with every request's record kept
ServeResult with_records(const SimContext& c, const Plan& plan) {
  ServeOptions o;
  o.keep_records = true;
  return simulate_serving(c, plan, o);
}
void set_target(SimContext& c, std::int64_t lo, std::int64_t hi, std::int64_t step, std::int64_t min_waiting) {
  c.engine.decode_target_min = lo;
  c.engine.decode_target_max = hi;
  c.engine.decode_target_step = step;
  c.engine.prefill_min_waiting = min_waiting;
}

TEST(DecodeTarget, TheTargetRuleByHand) {
  // AMD's Llama-2-70B MI300X Server config: min 352, max 608, step 16
  EngineTraits e;
  e.decode_target_min = 352;
  e.decode_target_max = 608;
  e.decode_target_step = 16;
  EXPECT_EQ(serve_detail::decode_target(e, 700), 608);  // at or above the maximum: the maximum
  EXPECT_EQ(serve_detail::decode_target(e, 608), 608);
  EXPECT_EQ(serve_detail::decode_target(e, 500), 496);  // 500 / 16 = 31 (integer), x 16 = 496: 4 wait
  EXPECT_EQ(serve_detail::decode_target(e, 352), 352);  // 352 = 22 x 16
  EXPECT_EQ(serve_detail::decode_target(e, 100), 352);  // below the minimum: the minimum, all 100 decode
}

TEST(DecodeTarget, APromptWaitsForTheNextDecisionBelowTheWaitingMinimumByHand) {
  // A arrives at 0 and is prefilled alone (P = prefill(1024, 1)); A then decodes, iteration k
  // at context 1024 + k taking d_k = decode(1, 1024 + k). B arrives inside A's second decode
  // (at P + d1 + d2 / 2). Without a target the next decision admits it: admitted(B) = P + d1 + d2.
  // With prefill_min_waiting 2 the decisions go: A admitted (the patch starts with
  // _do_prefill = True); at P, nothing waits and the last decision admitted, so prompts are
  // held (_do_prefill becomes True); at P + d1 the hold lets them in, none waits
  // (_do_prefill False); at P + d1 + d2 one waits (< 2) after a decision that admitted: held;
  // at P + d1 + d2 + d3 admitted:
  //   admitted(B) = P + d1 + d2 + d3
  Workload w = traced(1024, 64);
  const Plan plan = test_support::plan(1, 0);
  const SimContext base = v0(w);
  StepTimes st(base, plan);
  const double p = st.prefill(1024, 1), d1 = st.decode(1, 1025), d2 = st.decode(1, 1026), d3 = st.decode(1, 1027);
  w.serve.trace = {TraceRequest{0.0, 1024, 64}, TraceRequest{p + d1 + d2 / 2, 1024, 64}};
  for (bool target : {false, true}) {
    SimContext c = v0(w);
    if (target) set_target(c, 1, 64, 1, 2);
    const ServeResult r = with_records(c, plan);
    ASSERT_EQ(r.records.size(), 2u) << r.reason;
    const double want = target ? p + d1 + d2 + d3 : p + d1 + d2;
    EXPECT_NEAR(r.records[1].admitted_s, want, 1e-6 * want) << "target " << target;
  }
}

TEST(DecodeTarget, OnlyTheOldestTargetSequencesDecodeByHand) {
  // A, B, C (512 in, 4 out) arrive at 0 and are prefilled together: P = prefill(1536, 3), each
  // with its first token. Target max 2 (min 2, step 1): 3 running >= 2, so the oldest two
  // decode; their three decodes at contexts 513, 514, 515 end them, and C then decodes alone:
  //   finish(A) = P + decode(2, 513) + decode(2, 514) + decode(2, 515)
  //   finish(C) = finish(A) + decode(1, 513) + decode(1, 514) + decode(1, 515)
  // (without the target all three decode together and end at P + sum of decode(3, 512 + k))
  Workload w = traced(512, 4);
  w.serve.trace = {TraceRequest{0.0, 512, 4}, TraceRequest{0.0, 512, 4}, TraceRequest{0.0, 512, 4}};
  const Plan plan = test_support::plan(1, 0);
  SimContext c = v0(w);
  set_target(c, 2, 2, 1, 0);
  StepTimes st(c, plan);
  const double p = st.prefill(1536, 3);
  double ab = p, alone = 0, together = p;
  for (int k = 1; k <= 3; ++k) {
    ab += st.decode(2, 512 + k);
    alone += st.decode(1, 512 + k);
    together += st.decode(3, 512 + k);
  }
  const ServeResult r = with_records(c, plan);
  ASSERT_EQ(r.records.size(), 3u) << r.reason;
  EXPECT_NEAR(r.records[0].finish_s, ab, 1e-6 * ab);
  EXPECT_NEAR(r.records[1].finish_s, ab, 1e-6 * ab);
  EXPECT_NEAR(r.records[2].finish_s, ab + alone, 1e-6 * (ab + alone));
  const ServeResult free_run = with_records(v0(w), plan);
  ASSERT_EQ(free_run.records.size(), 3u) << free_run.reason;
  EXPECT_NEAR(free_run.records[2].finish_s, together, 1e-6 * together);
}

TEST(DecodeTarget, NoPromptJoinsWhileTheMaximumRunsOrTheKvReserveIsReachedByHand) {
  // A arrives at 0 and is prefilled alone (P = prefill(1024, 1)); B arrives inside that prefill
  // (at P / 2). A then decodes its 3 remaining tokens, d_k = decode(1, 1024 + k).
  // - With the target's maximum at 1, the decision at P holds B (1 running, not fewer than 1),
  //   and so does every decision while A runs: admitted(B) = P + d1 + d2 + d3.
  // - With the maximum at 4 and a KV reserve of all but 100 of the pool's tokens, A's blocks
  //   leave less free than the reserve: the same. (An idle instance always admits.)
  // - With the maximum at 4 and no reserve, the decision at P admits B: admitted(B) = P.
  Workload w = traced(1024, 4);
  const Plan plan = test_support::plan(1, 0);
  const SimContext base = v0(w);
  StepTimes st(base, plan);
  const double p = st.prefill(1024, 1);
  const double after_a = p + st.decode(1, 1025) + st.decode(1, 1026) + st.decode(1, 1027);
  w.serve.trace = {TraceRequest{0.0, 1024, 4}, TraceRequest{p / 2, 1024, 4}};
  struct Case {
    std::int64_t max, reserve;
    double want;
  };
  for (const Case& c : {Case{1, 0, after_a}, Case{4, st.kv_tokens() - 100, after_a}, Case{4, 0, p}}) {
    SimContext ctx = v0(w);
    set_target(ctx, 1, c.max, 1, 0);
    ctx.engine.prefill_min_free_tokens = c.reserve;
    const ServeResult r = with_records(ctx, plan);
    ASSERT_EQ(r.records.size(), 2u) << r.reason;
    EXPECT_NEAR(r.records[1].admitted_s, c.want, 1e-6 * c.want) << "max " << c.max << ", reserve " << c.reserve;
  }
}

TEST(DecodeTarget, AMultiStepRunDecodesItsDecisionsBatchAloneByHand) {
  // A (2 tokens out), B and C (10 out), 512 in, all at 0: one prefill iteration gives each its
  // first token. Target 2 (min 2, max 2), runs of 4 decode iterations:
  //   run 1: A and B (3 running >= 2); A ends after one, B decodes the other three alone
  //          (C does not join a run in progress): B at 5 tokens
  //   run 2: B and C: B at 9, C at 5
  //   run 3: B and C, B ends after one, C alone for three: C at 9
  //   run 4: C, ending after one
  // 4 + 4 + 4 + 1 = 13 decode iterations, 14 with the prefill. Were the run refilled from the
  // running sequences, C would join run 1 at once: 10 decode iterations.
  Workload w = traced(512, 10);
  w.serve.trace = {TraceRequest{0.0, 512, 2}, TraceRequest{0.0, 512, 10}, TraceRequest{0.0, 512, 10}};
  SimContext c = v0(w);
  c.engine.decode_steps = 4;
  set_target(c, 2, 2, 1, 0);
  const ServeResult r = simulate_serving(c, test_support::plan(1, 0));
  ASSERT_EQ(r.requests, 3) << r.reason;
  EXPECT_EQ(r.iterations, 14);
}

TEST(DecodeTarget, LittlesLawAndOrderedPercentilesUnderPoissonLoad) {
  // the target holds prompts and sequences back, but every request enters and leaves once:
  // Little's law within 2%, percentiles ordered; with a low target and a waiting minimum the
  // first tokens wait longer and the decodes run smaller batches than without
  Workload w = serve_workload(512, 128);
  w.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, 20.0, 0};
  w.serve.requests = 3000;
  SimContext free_ctx = v0(w), held = v0(w);
  free_ctx.engine.decode_steps = held.engine.decode_steps = 4;
  set_target(held, 32, 64, 16, 8);
  const ServeResult a = simulate_serving(free_ctx, test_support::plan(1, 0));
  const ServeResult b = simulate_serving(held, test_support::plan(1, 0));
  ASSERT_TRUE(a.feasible && b.feasible) << a.reason << b.reason;
  test_support::expect_littles_law(b);
  EXPECT_GT(b.ttft_ms.mean, a.ttft_ms.mean);
  test_support::expect_ordered(b.ttft_ms);
  EXPECT_LE(b.tpot_ms.p50, b.tpot_ms.p99);
  EXPECT_EQ(b.requests, a.requests);
}

}  // namespace
}  // namespace shardwise
