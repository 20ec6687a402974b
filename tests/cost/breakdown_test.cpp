// The breakdown's per-collective records (what an executor checks, collective by
// collective). Arithmetic in the comments.
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"

namespace shardwise {
namespace {

Workload decode(std::int64_t context) {
  Workload w;
  w.name = "t";
  w.mode = Mode::kDecode;
  w.context = context;
  return w;
}

SimContext ctx_for(const std::string& model, const std::string& cluster) {
  auto m = load_model(model);
  auto c = cluster_from_preset(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  return make_context(*m, *c, decode(1000), cost_params_for(c->gpu.name));
}

Plan plan(std::int32_t tp, std::int64_t batch, Sharding s = megatron_sharding()) {
  Plan p;
  p.deg.tp = tp;
  p.batch = batch;
  p.sharding = s;
  return p;
}

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
  // one micro-batch: T = 8 tokens, top-2 copies per expert group = 8 x 2 / 2 = 8.
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8");
  Plan p = plan(4, 8);
  p.deg.ep = 2;
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

}  // namespace
}  // namespace shardwise
