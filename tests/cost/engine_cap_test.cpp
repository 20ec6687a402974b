// The engines' running-sequence caps on batch "max" in the closed form (engine_batch_cap):
// TensorRT-LLM's max_batch_size, vLLM's --max-num-seqs, SGLang's --max-running-requests, per
// attention-DP rank; none for the generic engine or in prefill mode.
#include <gtest/gtest.h>

#include "cost/engine.hpp"
#include "cost/simulator.hpp"
#include "plan/space.hpp"
#include "search/search.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// Llama-3.1-8B in fp4 with an fp8 KV cache on one B200, 871 prompt and 129 output tokens
// (MLPerf's CNN/DailyMail means), no SLOs: memory alone holds about 2,690 sequences (2,688 on the B200's 183,359 MiB).
Workload offline_8b() {
  Workload w = test_support::fixed_workload(Mode::kOffline, 871, 129);
  w.weights_dtype = DType::kFp4;
  w.kv_dtype = DType::kFp8;
  return w;
}

TEST(EngineBatchCap, TensorRtLlmStopsMaxAtItsMaxBatchSize) {
  const Workload w = offline_8b();
  const SimContext generic = test_support::ctx_with("llama-3.1-8b", "b200x1", w, false, nullptr);
  const SimContext trt = test_support::ctx_with("llama-3.1-8b", "b200x1", w, false, "trtllm");
  EXPECT_EQ(engine_batch_cap(generic), 0);  // the generic engine: memory and the SLOs alone
  ASSERT_EQ(engine_batch_cap(trt), 2048);   // data/engines/trtllm.yaml: max_batch_size 2048
  const Metrics g = evaluate(generic, test_support::plan(1, 0));
  const Metrics t = evaluate(trt, test_support::plan(1, 0));
  ASSERT_TRUE(g.feasible() && t.feasible());
  EXPECT_GT(g.batch, 2048);  // memory would hold more ...
  EXPECT_FALSE(g.batch_at_engine_cap);
  EXPECT_EQ(t.batch, 2048);  // ... than the engine runs at once
  EXPECT_TRUE(t.batch_at_engine_cap);
  // a cap above what memory holds leaves memory the bound (the KV blocks may round it)
  SimContext wide = trt;
  wide.engine.max_num_seqs = 8192;
  const Metrics m = evaluate(wide, test_support::plan(1, 0));
  ASSERT_TRUE(m.feasible());
  EXPECT_GT(m.batch, 2048);
  EXPECT_LT(m.batch, 8192);
  EXPECT_FALSE(m.batch_at_engine_cap);
  // an explicit batch over the cap is not a plan the engine runs: invalid, naming the flag
  // that raises the cap; at the cap it runs
  const Metrics over = evaluate(trt, test_support::plan(1, 2100));
  EXPECT_EQ(over.infeasible, Infeasible::kInvalidPlan);
  EXPECT_NE(over.reason.find("over trtllm's cap of 2048 running sequences per attention-DP rank x 1 (--max-num-seqs 2100 raises it)"),
            std::string::npos)
      << over.reason;
  EXPECT_TRUE(evaluate(trt, test_support::plan(1, 2048)).feasible());
  EXPECT_TRUE(evaluate(generic, test_support::plan(1, 2100)).feasible());  // the generic engine: no cap
  // a closed-form plan over the default runs with the cap raised to it (launch, check, simulate --plan)
  EXPECT_EQ(plan_running_cap(trt.engine, test_support::plan(1, 2100), Mode::kOffline), 2100);
  EXPECT_EQ(plan_running_cap(trt.engine, test_support::plan(1, 100), Mode::kOffline), 2048);
  EXPECT_EQ(plan_running_cap(generic.engine, test_support::plan(1, 5000), Mode::kOffline), generic.engine.max_num_seqs);
}

TEST(EngineBatchCap, IsPerAttentionDpRank) {
  Workload w = offline_8b();
  w.weights_dtype = DType::kBf16;
  SimContext ctx = test_support::ctx_with("qwen3-30b-a3b", "b200x2", w, false, "vllm");
  ctx.engine.max_num_seqs = 8;
  Plan p = test_support::plan(1, 0);
  p.deg.attn_dp = 2;
  p.deg.ep = 2;
  const Metrics m = evaluate(ctx, p);
  ASSERT_TRUE(m.feasible()) << m.reason;
  EXPECT_EQ(m.batch, 16);  // 8 running sequences on each of 2 ranks
  EXPECT_TRUE(m.batch_at_engine_cap);
}

// TensorRT-LLM admits max_batch_size x pp requests (one max_batch_size per pipeline
// micro-batch); vLLM one cap per rank. Llama-3.1-8B on TP1 x PP2 B200s with a cap of 64:
// trtllm's batch max is 128, vLLM's 64; a batch of 100 is over vLLM's cap, not trtllm's;
// plan_running_cap and launch give the per-lane value (100 / 2 = 50 -> the default 64).
TEST(EngineBatchCap, TensorRtLlmsCapIsPerPipelineMicroBatch) {
  const Workload w = offline_8b();
  Plan p = test_support::plan(1, 0);
  p.deg.pp = 2;
  SimContext trt = test_support::ctx_with("llama-3.1-8b", "b200x2", w, false, "trtllm");
  SimContext vllm = test_support::ctx_with("llama-3.1-8b", "b200x2", w, false, "vllm");
  trt.engine.max_num_seqs = vllm.engine.max_num_seqs = 64;
  EXPECT_EQ(scheduler_lanes(trt.engine, p.deg), 2);
  EXPECT_EQ(scheduler_lanes(vllm.engine, p.deg), 1);
  const Metrics t = evaluate(trt, p), v = evaluate(vllm, p);
  ASSERT_TRUE(t.feasible() && v.feasible()) << t.reason << v.reason;
  EXPECT_EQ(t.batch, 128);
  EXPECT_TRUE(t.batch_at_engine_cap);
  EXPECT_EQ(v.batch, 64);
  EXPECT_TRUE(v.batch_at_engine_cap);
  Plan hundred = p;
  hundred.batch = 100;
  EXPECT_TRUE(evaluate(trt, hundred).feasible());
  const Metrics over = evaluate(vllm, hundred);
  EXPECT_NE(over.reason.find("over vllm's cap of 64 running sequences per attention-DP rank x 1"), std::string::npos) << over.reason;
  hundred.batch = 200;
  const Metrics trt_over = evaluate(trt, hundred);
  EXPECT_NE(trt_over.reason.find("over trtllm's cap of 64 running sequences per attention-DP rank and pipeline micro-batch x 2 (--max-num-seqs "
                                 "100 raises it)"),
            std::string::npos)
      << trt_over.reason;
  EXPECT_EQ(plan_running_cap(trt.engine, hundred, Mode::kOffline), 100);  // 200 sequences over 2 micro-batches
  EXPECT_EQ(plan_running_cap(vllm.engine, hundred, Mode::kOffline), 200);
}

TEST(EngineBatchCap, PrefillBatchesArePromptsNotCapped) {
  Workload w = offline_8b();
  w.mode = Mode::kPrefill;
  w.osl = 0;
  SimContext ctx = test_support::ctx_with("llama-3.1-8b", "b200x1", w, false, "sglang");
  EXPECT_EQ(engine_batch_cap(ctx), 0);
  ctx.engine.max_num_seqs = 2;
  const Metrics m = evaluate(ctx, test_support::plan(1, 0));
  ASSERT_TRUE(m.feasible());
  EXPECT_GT(m.batch, 2);
}

// plan --engine searches only what the engine runs: no ladder batch over the cap, and the
// refined "max" stops at it (memory would hold about 2,690 here)
TEST(EngineBatchCap, EngineSearchStaysUnderTheCap) {
  const Workload w = offline_8b();
  const SimContext ctx = test_support::ctx_with("llama-3.1-8b", "b200x1", w, false, "trtllm");
  const SearchSpace space = make_space(ctx.model, ctx.cluster, w);
  ASSERT_GT(space.batch.back(), 2048);  // the ladder itself reaches past the cap
  SearchOptions o;
  o.budget = 400;
  SearchResult r = search_for_engine(ctx, space, o, ServeEngine::kTrtllm);
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.best.batch, 2048);
  refine_batch(ctx, r);
  EXPECT_EQ(r.best.batch, 2048);
}

// Property: the cap never raises the batch, never lets it pass cap x attn_dp, and is named as
// the bound exactly when the batch sits on it.
TEST(EngineBatchCap, NeverRaisesTheBatch) {
  const Workload w = offline_8b();
  SimContext ctx = test_support::ctx_with("llama-3.1-8b", "b200x1", w, false, "trtllm");
  ctx.engine.max_num_seqs = 1 << 20;
  const Metrics free = evaluate(ctx, test_support::plan(1, 0));
  ASSERT_TRUE(free.feasible());
  for (const std::int64_t cap : {1, 7, 100, 1000, 2047, 4096, 100000}) {
    ctx.engine.max_num_seqs = cap;
    const Metrics m = evaluate(ctx, test_support::plan(1, 0));
    ASSERT_TRUE(m.feasible()) << cap;
    EXPECT_LE(m.batch, cap) << cap;
    EXPECT_LE(m.batch, free.batch) << cap;
    EXPECT_EQ(m.batch, std::min(cap, free.batch)) << cap;
    EXPECT_EQ(m.batch_at_engine_cap, m.batch == cap) << cap;
  }
}

}  // namespace
}  // namespace shardwise
