// The breakdown's per-collective records (what an executor checks, collective by
// collective) and the layout fixes they expose: MLA's head-split q/kv tensor, the
// gated MLP reduced before its activation, and the residual stream converted between
// the two norms' layouts. Arithmetic in the comments.
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

using test_support::decode;
using test_support::plan;
SimContext ctx_for(const std::string& model, const std::string& cluster) { return test_support::ctx_for(model, cluster, decode(1000)); }

void set(Plan& p, Slot s, const char* choice) {
  const int c = find_choice(static_cast<int>(s), choice);
  ASSERT_GE(c, 0) << choice;
  p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(c);
}

const OpCost& op(const Breakdown& bd, int cls, const std::string& name) {
  for (const auto& o : bd.ops) {
    if (o.layer_class == cls && o.op == name) return o;
  }
  ADD_FAILURE() << "no op " << name;
  static const OpCost none;
  return none;
}

void expect_coll(const CollRecord& r, CollKind kind, const char* group, std::int64_t size, double full, double per_gpu) {
  EXPECT_EQ(r.kind, kind) << to_string(r.kind);
  EXPECT_EQ(r.group, group);
  EXPECT_EQ(r.group_size, size);
  EXPECT_DOUBLE_EQ(r.full_bytes, full);
  EXPECT_DOUBLE_EQ(r.bytes_per_gpu, per_gpu);
}

// Every op's records add up to its summary; the summary kind is one of them.
void expect_records_add_up(const Breakdown& bd, const std::string& what) {
  for (const auto& o : bd.ops) {
    double sum = 0;
    bool kind_seen = o.colls.empty();
    for (const auto& r : o.colls) {
      sum += r.bytes_per_gpu;
      kind_seen = kind_seen || r.kind == o.collective;
      EXPECT_NE(r.kind, CollKind::kNone) << what << " " << o.op;
      EXPECT_GT(r.group_size, 1) << what << " " << o.op;
      EXPECT_GT(r.full_bytes, 0.0) << what << " " << o.op;
      EXPECT_GT(r.bytes_per_gpu, 0.0) << what << " " << o.op;
      EXPECT_FALSE(r.group.empty()) << what << " " << o.op;
    }
    EXPECT_DOUBLE_EQ(sum, o.comm_bytes) << what << " " << o.op;
    EXPECT_TRUE(kind_seen) << what << " " << o.op;
    EXPECT_EQ(o.colls.empty(), o.collective == CollKind::kNone) << what << " " << o.op;
  }
}

TEST(Breakdown, RecordsAddUpToEachOpsBytes) {
  int checked = 0;
  // dense and MoE (MLA and GQA), Megatron and random shardings, with attention-DP, EP and pipeline
  for (const char* model : {"llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"}) {
    const SimContext ctx = ctx_for(model, "h100x64");
    Rng rng(7);
    for (int i = 0; i < 40; ++i) {
      Plan p = plan(static_cast<std::int32_t>(1 << rng.below(4)), 16);
      p.deg.attn_dp = static_cast<std::int32_t>(1 << rng.below(3));
      p.deg.pp = static_cast<std::int32_t>(rng.below(2) ? 1 : 2);
      p.deg.ep = ctx.model.is_moe() ? static_cast<std::int32_t>(std::min<std::int64_t>(p.deg.stage_width(), 8)) : 1;
      p.batch = 16 * p.deg.attn_dp;
      if (i > 0) {  // the first is Megatron's
        for (int s = 0; s < kNumSlots; ++s) {
          p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
        }
      }
      if (validate_plan(p, ctx.model, ctx.cluster)) continue;
      for (const Phase ph : {Phase::kDecode, Phase::kPrefill}) {
        const Breakdown bd = breakdown_step(ctx, p, ph, p.batch, ph == Phase::kDecode ? 1000 : 256);
        expect_records_add_up(bd, std::string(model) + " " + sharding_to_string(p.sharding));
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(Breakdown, StepMatchesEvaluate) {
  // breakdown_step is the evaluated step: the same ops, bytes and stage time as evaluate's breakdown
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8");
  Plan p = plan(4, 8);
  p.deg.ep = 2;
  p.deg.pp = 2;
  Breakdown ev;
  const Metrics m = evaluate(ctx, p, &ev);
  ASSERT_TRUE(m.feasible()) << m.reason;
  std::int32_t mb = 0;
  const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 8, 1000, &mb);
  EXPECT_EQ(mb, 2);  // automatic: min(pp 2, 8 sequences)
  EXPECT_EQ(mb, m.micro_batches);
  ASSERT_EQ(bd.ops.size(), ev.ops.size());
  for (std::size_t i = 0; i < bd.ops.size(); ++i) {
    EXPECT_EQ(bd.ops[i].op, ev.ops[i].op);
    EXPECT_EQ(bd.ops[i].comm_bytes, ev.ops[i].comm_bytes) << bd.ops[i].op;
    EXPECT_EQ(bd.ops[i].colls.size(), ev.ops[i].colls.size()) << bd.ops[i].op;
  }
  EXPECT_EQ(bd.stage_s, ev.stage_s);
  EXPECT_EQ(bd.phase, Phase::kDecode);
}

TEST(Breakdown, MoeCombineIsAReduceScatterThenAnAllToAll) {
  // Mixtral-8x7B (h 4096, top-2), tp 4, ep 2: W = 4, expert TP etp = 2; 8 sequences decoding,
  // one micro-batch: T = 8 tokens, top-2 copies per expert group = 8 x 2 / 2 = 8. ffn_norm =
  // tokens (sequence parallel) splits the MoE input over the tokens: the copies travel.
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8");
  Plan p = plan(4, 8);
  p.deg.ep = 2;
  set(p, Slot::kFfnNorm, "tokens");
  ASSERT_FALSE(validate_plan(p, ctx.model, ctx.cluster).has_value());
  const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 8, 1000);
  const OpCost& c = op(bd, 0, "combine");
  ASSERT_EQ(c.colls.size(), 2u);
  // expert_ffn2 (ffn, row) leaves partial sums: reduce-scatter over etp 2 of [8, 4096] bf16 = 65,536 bytes,
  // each GPU sends (2-1)/2 x 65,536 = 32,768
  expect_coll(c.colls[0], CollKind::kReduceScatter, "etp", 2, 65'536, 32'768);
  // copies sent back: all-to-all over W = 4 of [8 x 2, 4096] bf16 = 131,072 bytes; each rank holds
  // 131,072 / 4 = 32,768 and sends (4-1)/4 of it = 24,576
  expect_coll(c.colls[1], CollKind::kAllToAll, "mlp", 4, 131'072, 24'576);
  EXPECT_DOUBLE_EQ(c.comm_bytes, 32'768 + 24'576);
  // dispatch is the same all-to-all alone
  ASSERT_EQ(op(bd, 0, "dispatch").colls.size(), 1u);
  expect_coll(op(bd, 0, "dispatch").colls[0], CollKind::kAllToAll, "mlp", 4, 131'072, 24'576);
}

TEST(Breakdown, ReplicatedMoeInputNeedsNoDispatch) {
  // The same plan with Megatron's ffn_norm = none: the MoE input is whole on all W = 4 ranks
  // (no attention DP), each rank takes its group's copies itself, and the combine leaves the
  // gated sums [8, 4096] bf16 = 65,536 bytes as partial sums over W, reduced once at layer_out
  // into the next attn_norm's replicated input: one all-reduce over the 4 ranks, 2 x (4-1)/4
  // x 65,536 = 98,304 bytes sent per GPU (the engines' one all-reduce; before, a reduce-scatter
  // in the combine and an all-gather at layer_out, two calls).
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8");
  Plan p = plan(4, 8);
  p.deg.ep = 2;
  const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 8, 1000);
  EXPECT_TRUE(op(bd, 0, "dispatch").colls.empty());
  EXPECT_TRUE(op(bd, 0, "expert_ffn1").colls.empty());  // the whole copies are there for the ffn split
  EXPECT_TRUE(op(bd, 0, "combine").colls.empty());
  const OpCost& out = op(bd, 0, "layer_out");
  ASSERT_EQ(out.colls.size(), 1u);
  expect_coll(out.colls[0], CollKind::kAllReduce, "tp", 4, 65'536, 98'304);
  // with attention data parallel the tokens differ between groups: the copies travel again
  Plan a = plan(2, 8);
  a.deg.attn_dp = 2;
  a.deg.ep = 2;
  const Breakdown bda = breakdown_step(ctx, a, Phase::kDecode, 8, 1000);
  ASSERT_EQ(op(bda, 0, "dispatch").colls.size(), 1u);
}

TEST(Breakdown, LmHeadWithSequenceParallelNormGathersTwice) {
  // Llama-3.1-8B (h 4096, vocab 128,256), tp 2, 4 sequences decoding, attn_norm = tokens:
  // the residual stream, split on tokens, is gathered before the LM head: [4, 4096] bf16 = 32,768 bytes,
  // (2-1)/2 of it = 16,384 per GPU; then the vocab-split logits: [4, 128,256] fp32 = 2,052,096 bytes,
  // 1,026,048 per GPU.
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8");
  Plan p = plan(2, 4);
  set(p, Slot::kAttnNorm, "tokens");
  const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
  const OpCost& head = op(bd, -1, "lm_head");
  ASSERT_EQ(head.colls.size(), 2u);
  expect_coll(head.colls[0], CollKind::kAllGather, "tp", 2, 32'768, 16'384);
  expect_coll(head.colls[1], CollKind::kAllGather, "tp", 2, 2'052'096, 1'026'048);
  EXPECT_DOUBLE_EQ(head.comm_bytes, 16'384 + 1'026'048);
}

TEST(Breakdown, MlaHeadSplitTensorIsQKnopeAndV) {
  // DeepSeek-V3: 128 heads, q 128 nope + 64 rope, k_nope 128, v 128 per head:
  // qkv_out = 128 x (192 + 128 + 128) = 57,344 (the latent and k_rope stay out: replicated)
  const SimContext ctx = ctx_for("deepseek-v3", "h100x64");
  EXPECT_EQ(ctx.graph.classes[0].qkv_out, 57'344);
  // qkv_proj on heads, attention none: the head-split output is gathered over tp 8:
  // [8 tokens, 57,344] bf16 = 917,504 bytes, (8-1)/8 of it = 802,816 per GPU
  Plan p = plan(8, 8);
  p.deg.ep = 8;
  set(p, Slot::kAttention, "none");
  ASSERT_FALSE(validate_plan(p, ctx.model, ctx.cluster).has_value());
  const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 8, 1000);
  const OpCost& a = op(bd, 0, "attention");
  ASSERT_EQ(a.colls.size(), 1u);
  expect_coll(a.colls[0], CollKind::kAllGather, "tp", 8, 917'504, 802'816);
}

TEST(Breakdown, GatedFfn1OnHiddenReducesGateAndUp) {
  // Llama-3.1-8B (gated, ffn 14,336), tp 2, 4 sequences decoding, ffn1 = hidden (row: partial sums);
  // a sharded MLP runs over the W = 2 ranks of the "mlp" group.
  // The reduction comes before the SiLU(gate) x up, so both are reduced: [4, 2 x 14,336] bf16 = 229,376 bytes.
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8");
  Plan p = plan(2, 4);
  set(p, Slot::kFfn1, "hidden");
  // ffn2 = ffn (row) needs Sf: reduce-scatter, (2-1)/2 x 229,376 = 114,688 per GPU
  Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
  ASSERT_EQ(op(bd, 0, "ffn2").colls.size(), 1u);
  expect_coll(op(bd, 0, "ffn2").colls[0], CollKind::kReduceScatter, "mlp", 2, 229'376, 114'688);
  // ffn2 = none needs R: all-reduce, 2 x (2-1)/2 x 229,376 = 229,376 per GPU
  set(p, Slot::kFfn2, "none");
  bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
  ASSERT_EQ(op(bd, 0, "ffn2").colls.size(), 1u);
  expect_coll(op(bd, 0, "ffn2").colls[0], CollKind::kAllReduce, "mlp", 2, 229'376, 229'376);
  // ffn1 = ffn (column, Sf) applies the activation locally: the gather before ffn2 = hidden moves
  // [4, 14,336] bf16 = 114,688 bytes, 57,344 per GPU (tests/cost/simulator_test.cpp's paper case)
  set(p, Slot::kFfn1, "ffn");
  set(p, Slot::kFfn2, "hidden");
  bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
  expect_coll(op(bd, 0, "ffn2").colls[0], CollKind::kAllGather, "mlp", 2, 114'688, 57'344);
}

TEST(Breakdown, ResidualFollowsTheNormLayouts) {
  // Llama-3.1-8B, tp 2, 4 sequences decoding: a layer's stream is [4, 4096] bf16 = 32,768 bytes.
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8");
  Plan p = plan(2, 4);
  {
    // attn_norm = tokens, ffn_norm = none. Into ffn_norm: o_proj's partial sums all-reduced
    // (2 x 1/2 x 32,768 = 32,768 per GPU), then the residual x, split on tokens, all-gathered
    // (1/2 x 32,768 = 16,384). Out of the layer: ffn2's partial sums reduce-scattered onto tokens
    // (16,384); the residual h goes from R to tokens by a local slice (nothing).
    set(p, Slot::kAttnNorm, "tokens");
    const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
    const OpCost& fn = op(bd, 0, "ffn_norm");
    ASSERT_EQ(fn.colls.size(), 2u);
    expect_coll(fn.colls[0], CollKind::kAllReduce, "tp", 2, 32'768, 32'768);
    expect_coll(fn.colls[1], CollKind::kAllGather, "tp", 2, 32'768, 16'384);
    EXPECT_DOUBLE_EQ(fn.comm_bytes, 49'152);
    const OpCost& out = op(bd, 0, "layer_out");
    ASSERT_EQ(out.colls.size(), 1u);
    expect_coll(out.colls[0], CollKind::kReduceScatter, "tp", 2, 32'768, 16'384);
  }
  {
    // attn_norm = none, ffn_norm = tokens: the mirror image. Into ffn_norm: reduce-scatter (16,384),
    // the residual sliced (nothing); out of the layer: all-reduce (32,768) and the residual h,
    // split on tokens, all-gathered back to R (16,384).
    set(p, Slot::kAttnNorm, "none");
    set(p, Slot::kFfnNorm, "tokens");
    const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
    const OpCost& fn = op(bd, 0, "ffn_norm");
    ASSERT_EQ(fn.colls.size(), 1u);
    expect_coll(fn.colls[0], CollKind::kReduceScatter, "tp", 2, 32'768, 16'384);
    const OpCost& out = op(bd, 0, "layer_out");
    ASSERT_EQ(out.colls.size(), 2u);
    expect_coll(out.colls[0], CollKind::kAllReduce, "tp", 2, 32'768, 32'768);
    expect_coll(out.colls[1], CollKind::kAllGather, "tp", 2, 32'768, 16'384);
  }
  {
    // both on tokens (sequence parallelism) and both none (Megatron): the residual never moves
    for (const char* c : {"tokens", "none"}) {
      set(p, Slot::kAttnNorm, c);
      set(p, Slot::kFfnNorm, c);
      const Breakdown bd = breakdown_step(ctx, p, Phase::kDecode, 4, 1000);
      EXPECT_EQ(op(bd, 0, "ffn_norm").colls.size(), 1u) << c;
      EXPECT_EQ(op(bd, 0, "layer_out").colls.size(), 1u) << c;
    }
  }
}

TEST(Breakdown, ResidualConversionIsInTheConstantGroup) {
  // the residual's conversions depend on the hubs alone: with attn_norm = tokens and ffn_norm = none,
  // the constant group holds the residual all-gather, which no other slot changes (the
  // decomposition test covers the rest); here: the groups still add up to the step
  Workload w = decode(1000);
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("h100x8");
  const SimContext ctx = make_context(*m, *c, w, cost_params_for(c->gpu.name));
  Plan p = plan(2, 4);
  set(p, Slot::kAttnNorm, "tokens");
  GroupTables t;
  ASSERT_TRUE(evaluate_grouped(ctx, p, Phase::kDecode, 4, 1000, 1001, &t));
  double sum = t.overhead_s;
  for (int g = 0; g < kNumSlotGroups; ++g) sum += t.time[0][g];
  EXPECT_NEAR(sum, evaluate(ctx, p).step_s, 1e-12 * sum);
  // and the constant group grew by the residual's all-gather over the Megatron hubs
  Plan q = plan(2, 4);
  GroupTables base;
  ASSERT_TRUE(evaluate_grouped(ctx, q, Phase::kDecode, 4, 1000, 1001, &base));
  EXPECT_GT(t.time[0][kGroupConst], base.time[0][kGroupConst]);
}


TEST(Breakdown, LayerClassesShareAnAttentionOfOneShape) {
  // DeepSeek-V3's dense and MoE layers have one attention: the MoE class's twin is the dense
  // one; GPT-OSS's sliding-window layers attend over another context (their own); a model of
  // one class is its own twin
  const ModelGraph ds = build_graph(*load_model("deepseek-v3"));
  ASSERT_EQ(ds.classes.size(), 2u);
  EXPECT_EQ(ds.attention_twin, (std::vector<std::uint8_t>{0, 0}));
  const ModelGraph oss = build_graph(*load_model("gpt-oss-120b"));
  ASSERT_EQ(oss.classes.size(), 2u);
  EXPECT_EQ(oss.attention_twin, (std::vector<std::uint8_t>{0, 1}));
  EXPECT_EQ(build_graph(*load_model("llama-3.1-8b")).attention_twin, (std::vector<std::uint8_t>{0}));
  LayerShape a = ds.classes[0];
  EXPECT_TRUE(same_attention(a, ds.classes[1]));
  a.kv_elems_per_token += 1;  // another KV cache is another attention
  EXPECT_FALSE(same_attention(a, ds.classes[1]));
}

TEST(Breakdown, SharedAttentionCostsWhatItsOwnWouldCost) {
  // the search's evaluations cost a shared attention once; the breakdown's cost every class's
  // own: the two give the same step to the last bit, tables on and off, decode and prefill
  Rng rng(3);
  int checked = 0;
  for (const bool tables : {false, true}) {
    for (const Mode mode : {Mode::kDecode, Mode::kPrefill}) {
      Workload w = mode == Mode::kDecode ? decode(4096) : test_support::fixed_workload(Mode::kPrefill, 2048, 0);
      const SimContext ctx = test_support::ctx_with("deepseek-v3", "h100x64", w, tables, nullptr);
      for (int i = 0; i < 60; ++i) {
        Plan p = plan(static_cast<std::int32_t>(1 << rng.below(4)), 8 << rng.below(4));
        p.deg.attn_dp = static_cast<std::int32_t>(1 << rng.below(3));
        p.deg.ep = static_cast<std::int32_t>(std::min<std::int64_t>(p.deg.stage_width(), 1 << rng.below(4)));
        p.batch *= p.deg.attn_dp;
        for (int s = 0; s < kNumSlots; ++s) p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
        const Metrics fast = evaluate(ctx, p);
        if (fast.infeasible == Infeasible::kInvalidPlan) continue;
        Breakdown bd;
        const Metrics slow = evaluate(ctx, p, &bd);
        EXPECT_EQ(fast.step_s, slow.step_s) << tables << " " << sharding_to_string(p.sharding);
        EXPECT_EQ(fast.memory.total().value(), slow.memory.total().value());
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(Breakdown, DistinctStagesGiveWhatEveryStageGives) {
  // a pp-stage split is priced once per distinct stage (SimContext::stage_kinds): the kinds
  // stand for every stage, and the slowest and fullest stage are those of the walk over all
  const SimContext ctx = test_support::ctx_with("deepseek-v3", "h100x64", decode(4096), true, nullptr);
  ASSERT_EQ(ctx.stage_kinds.size(), 62u);  // pp 0 (unused) .. 61
  for (std::size_t pp = 1; pp < ctx.stage_kinds.size(); ++pp) {
    std::int32_t stages = 0;
    for (const auto& k : ctx.stage_kinds[pp]) stages += k.stages;
    EXPECT_EQ(stages, static_cast<std::int32_t>(pp));
    EXPECT_TRUE(ctx.stage_kinds[pp].front().first);
    EXPECT_TRUE(ctx.stage_kinds[pp].back().last || pp == 1);
  }
  // 61 stages of one layer: the first (dense), two dense, 57 MoE, the last (MoE)
  EXPECT_EQ(ctx.stage_kinds[61].size(), 4u);
  SimContext walk = ctx;
  walk.stage_kinds.clear();
  Rng rng(9);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    Plan p = plan(static_cast<std::int32_t>(1 << rng.below(2)), 8 << rng.below(3));
    const std::int32_t pps[] = {1, 2, 3, 4, 7, 16, 61};
    p.deg.pp = pps[rng.below(7)];
    for (int s = 0; s < kNumSlots; ++s) p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
    const Metrics a = evaluate(ctx, p), b = evaluate(walk, p);
    if (a.infeasible == Infeasible::kInvalidPlan) continue;
    EXPECT_EQ(a.step_s, b.step_s) << p.deg.pp;
    EXPECT_EQ(a.memory.weights.value(), b.memory.weights.value()) << p.deg.pp;
    EXPECT_EQ(a.memory.kv_cache.value(), b.memory.kv_cache.value()) << p.deg.pp;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace shardwise
