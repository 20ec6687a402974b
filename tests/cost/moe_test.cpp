// The MoE physics of the step cost: expert load (skew, sampling, EPLB, touched experts), the
// network dedup, redundant expert slots, mixed-precision dispatch and speculative decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/rng.hpp"
#include "cost/moe_load.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {
using test_support::ctx_for;
using test_support::decode;

TEST(ExpertLoad, ExtremeValueScale) {
  EXPECT_EQ(extreme_z(1.0), 0.0);  // one group is its own maximum
  // sqrt(2 ln 8) = sqrt(4.158883) = 2.039334
  EXPECT_NEAR(extreme_z(8.0), 2.039334, 1e-6);
}

TEST(ExpertLoad, BusiestGroupByHand) {
  // 1024 tokens, top-8 of 256 experts over ep 8, skew 0.3, no redundant slots:
  //   mean    = 1024 x 8 / 8 = 1024 copies
  //   excess  = z(8) x 0.3 x sqrt(8 / 256) = 2.039334 x 0.3 x 0.176777 = 0.108152
  //   busiest = 1024 x 1.108152 + z(8) x sqrt(1024 x 7/8) = 1134.748 + 2.039334 x 29.933 = 1195.792
  //   touched = 32 x (1 - (1 - 8/256)^1024) = 32 (every expert of the group)
  const ExpertLoad l = expert_load(1024, 8, 256, 0, 8, 0.3);
  EXPECT_DOUBLE_EQ(l.mean, 1024.0);
  EXPECT_NEAR(l.excess, 0.108152, 1e-6);
  EXPECT_NEAR(l.busiest, 1195.7916, 1e-3);
  EXPECT_NEAR(l.touched, 32.0, 1e-9);
}

TEST(ExpertLoad, FewTokensTouchFewExperts) {
  // 4 tokens (batch 1 with 3 drafts), top-8 of 256 over ep 8: each of the 32 experts of a group
  // is missed by all 4 with probability (1 - 8/256)^4 = 0.880736: 32 x 0.119264 = 3.8164 touched
  EXPECT_NEAR(expert_load(4, 8, 256, 0, 8, 0.3).touched, 3.816376, 1e-6);
  // one token: 32 x 8/256 = 1 expert expected, and never fewer than one
  EXPECT_NEAR(expert_load(1, 8, 256, 0, 8, 0.3).touched, 1.0, 1e-12);
  // a copy per token and expert at most: one group holding every expert gets exactly T x k
  EXPECT_DOUBLE_EQ(expert_load(16, 8, 256, 0, 1, 0.3).busiest, 16.0 * 8.0);
}

TEST(ExpertLoad, EplbWithRedundantSlotsBoundsTheSkew) {
  // DeepSeek-V3 on EP 72 with 32 redundant slots (4 per group), skew 1.0:
  //   static: z(72) x 1.0 x sqrt(72 / 256) = 2.924603 x 0.530330 = 1.551008
  //   EPLB:   72 x (1 + z(256) x 1.0) / 288 = 72 x 4.330222 / 288 = 1.082555 (the smaller)
  EXPECT_NEAR(expert_load(8192, 8, 256, 0, 72, 1.0).excess, 1.551008, 1e-6);
  EXPECT_NEAR(expert_load(8192, 8, 256, 32, 72, 1.0).excess, 1.082555, 1e-6);
  // property: redundant slots never make the busiest group busier, at any skew and size
  for (double skew : {0.0, 0.3, 1.0, 2.0}) {
    for (double ep : {2.0, 8.0, 32.0, 64.0}) {
      for (double r : {0.0, 16.0, 64.0, 256.0}) {
        const double base = expert_load(1000, 8, 256, 0, ep, skew).busiest;
        EXPECT_LE(expert_load(1000, 8, 256, r, ep, skew).busiest, base + 1e-9) << skew << " " << ep << " " << r;
      }
    }
  }
  // the busiest group is never below the mean, and the skew only adds
  for (double t : {1.0, 10.0, 1000.0}) {
    EXPECT_GE(expert_load(t, 8, 256, 0, 8, 0.0).busiest, expert_load(t, 8, 256, 0, 8, 0.0).mean - 1e-9);
    EXPECT_LE(expert_load(t, 8, 256, 0, 8, 0.1).busiest, expert_load(t, 8, 256, 0, 8, 0.5).busiest);
  }
}

TEST(ExpertLoad, NetworkDedupByHand) {
  // 2 domains, top-8: plain copies leaving = 8 x 1/2 = 4; distinct remote domains = 1 - 0.5^8 = 0.996094
  EXPECT_NEAR(dedup_share(2, 8), 0.249023, 1e-6);
  // 4 domains: 3 x (1 - 0.75^8) / (8 x 0.75) = 3 x 0.899887 / 6 = 0.449944
  EXPECT_NEAR(dedup_share(4, 8), 0.449944, 1e-6);
  EXPECT_EQ(dedup_share(1, 8), 1.0);
  EXPECT_NEAR(dedup_share(4, 1), 1.0, 1e-12);  // top-1: nothing to merge
}

Plan dp_ep(std::int32_t dp, std::int32_t ep, std::int64_t batch, std::int32_t redundant = 0) {
  Plan p;
  p.deg.attn_dp = dp;
  p.deg.ep = ep;
  p.batch = batch;
  p.redundant_experts = redundant;
  p.sharding[static_cast<std::size_t>(Slot::kFfn1)] = 2;  // dense MLPs data-parallel, as the engines run them
  p.sharding[static_cast<std::size_t>(Slot::kFfn2)] = 2;
  return p;
}

TEST(RedundantExperts, EachSlotHoldsOneMoreExpertPerLayer) {
  // DeepSeek-V3 in fp8 at attn-dp 8 x ep 8: 256 experts = 32 slots per rank; 8 redundant = 33.
  // One expert = gate+up 2 x 7168 x 2048 + down 2048 x 7168 = 44,040,192 params = 44,040,192 B in
  // fp8, on each of the 58 MoE layers: 2,554,331,136 B more per GPU.
  Workload w = decode(1024);
  w.weights_dtype = DType::kFp8;
  const SimContext ctx = ctx_for("deepseek-v3", "h200x8", w);
  const double base = stage_weight_bytes(ctx, dp_ep(8, 8, 64))[0];
  const double more = stage_weight_bytes(ctx, dp_ep(8, 8, 64, 8))[0];
  EXPECT_DOUBLE_EQ(more - base, 2'554'331'136.0);
}

TEST(RedundantExperts, MakeEpDivideTheExpertsAndSayWhy) {
  const SimContext ctx = ctx_for("deepseek-v3", "h200x72", decode(1024));
  const Metrics bad = evaluate(ctx, dp_ep(72, 72, 720));
  ASSERT_EQ(bad.infeasible, Infeasible::kInvalidPlan);
  EXPECT_NE(bad.reason.find("--redundant-experts 32"), std::string::npos) << bad.reason;
  EXPECT_NE(evaluate(ctx, dp_ep(72, 72, 720, 32)).infeasible, Infeasible::kInvalidPlan);
  const Metrics too_many = evaluate(ctx, dp_ep(8, 8, 64, 300));
  EXPECT_EQ(too_many.infeasible, Infeasible::kInvalidPlan);
}

TEST(MixedPrecision, DispatchTravelsInTheExpertsFormat) {
  // fp8 experts on Hopper: tokens dispatched in fp8 (1 B), half the bytes of bf16; the combine
  // returns bf16 partial outputs either way
  const auto dispatch_bytes = [](DType d) {
    Workload w = decode(1024);
    w.weights_dtype = d;
    const SimContext ctx = ctx_for("deepseek-v3", "h200x8", w);
    const Breakdown bd = breakdown_step(ctx, dp_ep(8, 8, 64), Phase::kDecode, 64, 1024);
    double disp = 0, comb = 0;
    for (const OpCost& o : bd.ops) {
      if (o.op == "dispatch") disp += o.comm_bytes;
      if (o.op == "combine") comb += o.comm_bytes;
    }
    return std::pair{disp, comb};
  };
  const auto [d8, c8] = dispatch_bytes(DType::kFp8);
  const auto [d16, c16] = dispatch_bytes(DType::kBf16);
  EXPECT_GT(d8, 0.0);
  EXPECT_DOUBLE_EQ(d8 * 2.0, d16);
  EXPECT_DOUBLE_EQ(c8, c16);
}

TEST(MixedPrecision, CheckpointFormatsUnlessOverridden) {
  // gpt-oss-120b ships MXFP4 experts: planned in them unless the workload names a format
  const SimContext own = ctx_for("gpt-oss-120b", "h100x1", decode(1024));
  EXPECT_EQ(own.formats.experts, DType::kFp4);
  EXPECT_EQ(own.formats.attention, DType::kBf16);
  Workload w = decode(1024);
  w.weights_dtype = DType::kBf16;
  const SimContext bf16 = ctx_for("gpt-oss-120b", "h100x1", w);
  EXPECT_EQ(bf16.formats.experts, DType::kBf16);
  // the experts' bytes are a quarter in fp4 (0.5 B against 2 B): the plan needs less memory
  Plan p;
  p.batch = 1;
  EXPECT_LT(stage_weight_bytes(own, p)[0], 0.5 * stage_weight_bytes(bf16, p)[0]);
  w.expert_dtype = DType::kFp8;  // experts alone
  const SimContext mixed = ctx_for("gpt-oss-120b", "h100x1", w);
  EXPECT_EQ(mixed.formats.experts, DType::kFp8);
  EXPECT_EQ(mixed.formats.attention, DType::kBf16);
}

TEST(Speculative, TokensPerStepByHand) {
  Workload w = decode(1024);
  EXPECT_EQ(tokens_per_step(w), 1.0);
  w.spec_tokens = 3;
  w.spec_acceptance = 0.85;
  // 1 + 0.85 + 0.85^2 + 0.85^3 = 1 + 0.85 + 0.7225 + 0.614125 = 3.186625
  EXPECT_NEAR(tokens_per_step(w), 3.186625, 1e-12);
  w.spec_acceptance = 1.0;
  EXPECT_EQ(tokens_per_step(w), 4.0);
}

TEST(Speculative, DraftsPayOnlyWhenAccepted) {
  // DeepSeek-V3 fp8 on 8 H200 at batch 1 (weight-read bound): 3 MTP drafts accepted at 0.85
  // cut the time per token; drafts never accepted only add the draft and verification work
  Workload w = decode(2048);
  w.weights_dtype = DType::kFp8;
  Plan p;
  p.deg.tp = 8;
  p.deg.ep = 8;
  p.batch = 1;
  const double plain = evaluate(ctx_for("deepseek-v3", "h200x8", w), p).tpot_s;
  w.spec_tokens = 3;
  w.spec_acceptance = 0.85;
  const Metrics spec = evaluate(ctx_for("deepseek-v3", "h200x8", w), p);
  ASSERT_TRUE(spec.feasible()) << spec.reason;
  EXPECT_LT(spec.tpot_s, plain);
  w.spec_acceptance = 0.0;
  EXPECT_GT(evaluate(ctx_for("deepseek-v3", "h200x8", w), p).tpot_s, plain);
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

TEST(AttentionDp, TheBusiestGroupByHand) {
  // offline 1024/2048 over 8 attention groups of 16 sequences: contexts spread over [1024, 3072],
  // mean 2048, sd 2048 / sqrt(12) = 591.20; 1 + z(8) x 591.20 / (2048 x sqrt(16)) = 1 + 2.039334 x 0.072169 = 1.147176
  Workload w;
  w.mode = Mode::kOffline;
  w.isl = 1024;
  w.osl = 2048;
  EXPECT_NEAR(attn_dp_imbalance(w, Phase::kDecode, 8, 16), 1.147176, 1e-6);
  EXPECT_EQ(attn_dp_imbalance(w, Phase::kDecode, 1, 16), 1.0);   // one group: nothing to wait for
  EXPECT_EQ(attn_dp_imbalance(w, Phase::kPrefill, 8, 16), 1.0);  // prompts of one length
  // more sequences per group average the spread out
  EXPECT_LT(attn_dp_imbalance(w, Phase::kDecode, 8, 256), attn_dp_imbalance(w, Phase::kDecode, 8, 16));
  Workload d;
  d.mode = Mode::kDecode;
  d.context = 4096;
  EXPECT_EQ(attn_dp_imbalance(d, Phase::kDecode, 8, 16), 1.0);  // one context for every sequence
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

// Properties over random MoE plans with the new terms in play: fp4 experts on Blackwell,
// redundant slots, speculative drafts, attention DP in the offline stream.
TEST(MoeProperties, FasterHardwareIsNeverSlowerAndRedundantSlotsNeverSaveMemory) {
  Rng rng(11);
  for (const char* model : {"gpt-oss-120b", "deepseek-v3"}) {
    Workload w;
    w.name = "t";
    w.mode = Mode::kOffline;
    w.isl = 1024;
    w.osl = 1024;
    w.spec_tokens = 2;
    w.spec_acceptance = 0.7;
    const SimContext base = ctx_for(model, "b200x16", w);
    const auto fast = test_support::faster_silicon(base);  // links, HBM, tensor cores
    int faster[3] = {0, 0, 0};  // plans each faster silicon made strictly faster (a change the test sees)
    int checked = 0;
    for (int i = 0; i < 60; ++i) {
      Plan p;
      p.deg.tp = static_cast<std::int32_t>(1 << rng.below(3));
      p.deg.attn_dp = static_cast<std::int32_t>(1 << rng.below(3));
      p.deg.ep = static_cast<std::int32_t>(std::min<std::int64_t>(p.deg.stage_width(), 1 << rng.below(4)));
      p.batch = p.deg.attn_dp * (8 << rng.below(4));
      for (int s = 0; s < kNumSlots; ++s) {
        p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
      }
      const Metrics m = evaluate(base, p);
      if (m.infeasible == Infeasible::kInvalidPlan) continue;
      ++checked;
      for (int k = 0; k < 3; ++k) {
        const double t = evaluate(fast[static_cast<std::size_t>(k)], p).tpot_s;
        EXPECT_LE(t, m.tpot_s * (1 + 1e-12)) << model << " " << k << " " << sharding_to_string(p.sharding);
        faster[k] += t < m.tpot_s * (1 - 1e-9);
      }
      // memory adds up, and redundant slots (a multiple of ep keeps the plan valid) only add to it
      EXPECT_DOUBLE_EQ(m.memory.total().value(),
                       (m.memory.weights + m.memory.kv_cache + m.memory.activations + m.memory.reserve).value());
      Plan r = p;
      r.redundant_experts = p.deg.ep;
      const Metrics mr = evaluate(base, r);
      ASSERT_NE(mr.infeasible, Infeasible::kInvalidPlan) << mr.reason;
      EXPECT_GE(mr.memory.weights.value(), m.memory.weights.value());
    }
    EXPECT_GT(checked, 10) << model;
    for (int k = 0; k < 3; ++k) EXPECT_GT(faster[k], 0) << model << " " << k;
  }
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

TEST(Speculative, TheMtpLayerKeepsItsOwnKvCache) {
  // DeepSeek-V3 at tp 8, batch 1, context 2048 (2049 cached with the new token): the MTP layer
  // caches its own latent, 576 elements x 2 B (bf16) x 2049 tokens = 2,360,448 B per sequence,
  // whole on every rank of the tp group
  Workload w = test_support::decode(2048);
  w.weights_dtype = DType::kFp8;
  w.kv_dtype = DType::kBf16;
  Plan p;
  p.deg.tp = 8;
  p.deg.ep = 8;
  p.batch = 1;
  const Metrics plain = evaluate(test_support::ctx_for("deepseek-v3", "h200x8", w), p);
  w.spec_tokens = 3;
  w.spec_acceptance = 0.85;
  const Metrics spec = evaluate(test_support::ctx_for("deepseek-v3", "h200x8", w), p);
  EXPECT_DOUBLE_EQ(spec.memory.kv_cache.value() - plain.memory.kv_cache.value(), 2'360'448.0);
}

TEST(Speculative, OfflineTtftWaitsWholeIterations) {
  // tpot_dec is per output token; one decode iteration is tpot_dec x tokens per step:
  // 3 drafts at 0.85: 3.186625 tokens per step; TTFT = pp x arrivals_s + 0.01 x 3.186625 x others
  Workload w;
  w.mode = Mode::kOffline;
  w.isl = 1024;
  w.osl = 1024;
  w.spec_tokens = 3;
  w.spec_acceptance = 0.85;
  // 64 sequences in one group: 64 x 3.186625 / 1024 = 0.199 finish per iteration: 1 arrival
  const OfflinePrefill op = offline_prefill(w, 64, 1);
  EXPECT_EQ(op.arrivals, 1);
  const OfflineTimes t = offline_times(w, 64, 1, op, 0.01, 0.2, 0.05);
  EXPECT_NEAR(t.ttft, 0.05 + 0.01 * 3.186625 * (63.0 / 64.0), 1e-12);
  // 1024 sequences: 1024 x 3.186625 / 1024 = 3.19 finish per iteration: 4 arrivals (3 without drafts)
  EXPECT_EQ(offline_prefill(w, 1024, 1).arrivals, 4);
  w.spec_tokens = 0;
  EXPECT_EQ(offline_prefill(w, 1024, 1).arrivals, 1);
}

TEST(MixedPrecision, Int4ExpertsAreWeightOnlyEvenOnBlackwell) {
  // AWQ/GPTQ int4 experts run as bf16 GEMMs everywhere (no int4 tensor cores; fp4's are not
  // int4's): on B200 their tokens travel in bf16, as bf16 experts' do; NVFP4 experts' in 0.5625 B
  const auto dispatch = [](DType experts) {
    Workload w = test_support::decode(1024);
    w.weights_dtype = DType::kBf16;
    w.expert_dtype = experts;
    const SimContext ctx = test_support::ctx_for("deepseek-v3", "b200x8", w);
    const Breakdown bd = breakdown_step(ctx, dp_ep(8, 8, 64), Phase::kDecode, 64, 1024);
    double b = 0;
    for (const OpCost& o : bd.ops) b += o.op == "dispatch" ? o.comm_bytes : 0.0;
    return b;
  };
  EXPECT_DOUBLE_EQ(dispatch(DType::kInt4), dispatch(DType::kBf16));
  EXPECT_DOUBLE_EQ(dispatch(DType::kFp4) / dispatch(DType::kBf16), 0.5625 / 2.0);
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

TEST(TwoBatchOverlap, ScheduleByHand) {
  // A 1.0, S 0.2, X 0.5 (ms of one micro-batch), D 0.8, C 1.5:
  //   max(1.0, 0.8) + max(0.5, 0.8) + max(0.2 + 0.5, 1.5) + max(0.2 + 1.0, 1.5) = 1.0 + 0.8 + 1.5 + 1.5 = 4.8
  // against 2 x (1.0 + 0.2 + 0.5 + 0.8 + 1.5) = 8.0 one micro-batch after the other
  TboParts t{1.0, 0.2, 0.5, 0.8, 1.5};
  EXPECT_DOUBLE_EQ(tbo_layer_time(t), 4.8);
  // no all-to-all (a dense layer): the two micro-batches in turn, 2 x (1.0 + 0.2 + 0.5) = 3.4
  EXPECT_DOUBLE_EQ(tbo_layer_time(TboParts{1.0, 0.2, 0.5, 0, 0}), 3.4);
  // all-to-all bound: the comm stream alone, 2 x (10 + 10) = 40
  EXPECT_DOUBLE_EQ(tbo_layer_time(TboParts{1.0, 0.2, 0.5, 10, 10}), 40.0);
  // property: never below either stream's total, never above running everything in turn
  Rng rng(5);
  for (int i = 0; i < 1000; ++i) {
    const TboParts r{rng.uniform(), rng.uniform(), rng.uniform(), rng.uniform() * 2, rng.uniform() * 2};
    const double comp = 2 * (r.attn + r.shared + r.experts), comm = 2 * (r.dispatch + r.combine);
    EXPECT_GE(tbo_layer_time(r), std::max(comp, comm) - 1e-12);
    EXPECT_LE(tbo_layer_time(r), comp + comm + 1e-12);
  }
}

TEST(TwoBatchOverlap, OpsFallIntoTheirParts) {
  TboParts t;
  t.add("attn_norm", 1, 0);
  t.add("attention", 2, 0.5);  // a TP collective before it stays on the compute stream
  t.add("router", 0.25, 0);
  t.add("dispatch", 0, 3);
  t.add("shared_ffn1", 0.5, 0);
  t.add("expert_ffn1", 4, 0);
  t.add("expert_ffn2", 2, 0);
  t.add("combine", 0.125, 6);
  EXPECT_DOUBLE_EQ(t.attn, 3.75);  // 1 + 2.5 + 0.25
  EXPECT_DOUBLE_EQ(t.shared, 0.5);
  EXPECT_DOUBLE_EQ(t.experts, 6.125);  // 4 + 2 + the combine's weighted sum
  EXPECT_DOUBLE_EQ(t.dispatch, 3.0);
  EXPECT_DOUBLE_EQ(t.combine, 6.0);
}

Plan wide_ep(std::int32_t dp, std::int64_t batch, bool tbo) {
  Plan p;
  p.deg.attn_dp = dp;
  p.deg.ep = dp;
  p.batch = batch;
  p.sharding[static_cast<std::size_t>(Slot::kFfn1)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kFfn1), "none"));
  p.sharding[static_cast<std::size_t>(Slot::kFfn2)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kFfn2), "none"));
  p.two_batch_overlap = tbo;
  return p;
}

TEST(TwoBatchOverlap, TheStepAddsUpFromOneMicroBatchsOps) {
  // DeepSeek-V3 decode on 32 H200 (4 nodes), DP 32 x EP 32, 256 sequences per rank: the
  // breakdown lists one micro-batch's ops; each layer class costs its layers x the schedule,
  // the embedding and LM head run once per micro-batch, the engine overhead once per step
  const SimContext ctx = test_support::ctx_for("deepseek-v3", "h200x32", decode(3000));
  Breakdown bd;
  const Metrics m = evaluate(ctx, wide_ep(32, 8192, true), &bd);
  ASSERT_TRUE(m.feasible()) << m.reason;
  ASSERT_TRUE(bd.two_batch_overlap);
  std::map<int, TboParts> parts;
  std::map<int, std::int64_t> layers;
  double outside = 0;
  for (const OpCost& o : bd.ops) {
    if (o.layer_class < 0) {
      outside += o.compute_s + o.comm_s;
    } else {
      parts[o.layer_class].add(o.op.c_str(), o.compute_s, o.comm_s);
      layers[o.layer_class] = o.layers;
    }
  }
  double step = 2.0 * outside + ctx.params.step_overhead_us * 1e-6;
  for (const auto& [cls, t] : parts) step += static_cast<double>(layers[cls]) * tbo_layer_time(t);
  EXPECT_NEAR(m.step_s, step, 1e-9 * step);
  // over the network the all-to-all outweighs the compute: overlapping it wins
  const Metrics plain = evaluate(ctx, wide_ep(32, 8192, false));
  EXPECT_LT(m.step_s, plain.step_s);
  EXPECT_GT(m.output_tok_s_per_gpu, plain.output_tok_s_per_gpu);
}

TEST(TwoBatchOverlap, CostsTheSecondWeightReadWhereThereIsLittleToHide) {
  // 8 sequences per rank on one NVLink node: the all-to-all is small, and each micro-batch
  // reads the expert weights again, so the overlap loses
  const SimContext ctx = test_support::ctx_for("deepseek-v3", "h200x8", decode(2000));
  const Metrics with = evaluate(ctx, wide_ep(8, 64, true)), without = evaluate(ctx, wide_ep(8, 64, false));
  ASSERT_TRUE(with.feasible() && without.feasible());
  EXPECT_GT(with.step_s, without.step_s);
  // one token per attention-DP rank cannot be split: the step runs as one batch
  Breakdown bd;
  const Metrics one = evaluate(ctx, wide_ep(8, 8, true), &bd);
  EXPECT_FALSE(bd.two_batch_overlap);
  EXPECT_DOUBLE_EQ(one.step_s, evaluate(ctx, wide_ep(8, 8, false)).step_s);
}

TEST(TwoBatchOverlap, OnlyWhereTheEnginesRunIt) {
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x16");
  ASSERT_TRUE(m.ok() && c.ok());
  Plan p = wide_ep(16, 256, true);
  EXPECT_FALSE(validate_plan(p, *m, *c).has_value());
  p.deg.ep = 1;
  EXPECT_NE(validate_plan(p, *m, *c).value_or("").find("expert parallel"), std::string::npos);
  p = wide_ep(8, 256, true);
  p.deg.pp = 2;
  EXPECT_NE(validate_plan(p, *m, *c).value_or("").find("pp 2"), std::string::npos);
  auto dense = load_model("llama-3.1-70b");
  ASSERT_TRUE(dense.ok());
  Plan d;
  d.deg.tp = 8;
  d.two_batch_overlap = true;
  EXPECT_NE(validate_plan(d, *dense, *c).value_or("").find("dense model"), std::string::npos);
}

}  // namespace
}  // namespace shardwise
