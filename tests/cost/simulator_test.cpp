// The simulator: hand-computed cases (arithmetic in comments), golden shardings,
// properties, and the reasons of infeasible plans.
#include "cost/simulator.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

using test_support::ctx_for;
using test_support::decode;
using test_support::plan;

const OpCost* find(const Breakdown& bd, int cls, const std::string& op) {
  for (const auto& o : bd.ops) {
    if (o.layer_class == cls && o.op == op) return &o;
  }
  return nullptr;
}

TEST(Simulator, MegatronDenseLayerHasTwoAllReduces) {
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8", decode(1000));
  Breakdown bd;
  const Metrics m = evaluate(ctx, plan(2, 4), &bd);
  ASSERT_TRUE(m.feasible()) << m.reason;
  int per_layer = 0;
  for (const auto& o : bd.ops) {
    if (o.layer_class != 0 || o.collective == CollKind::kNone) continue;
    EXPECT_EQ(o.collective, CollKind::kAllReduce) << o.op;
    ++per_layer;
  }
  EXPECT_EQ(per_layer, 2);  // after o_proj (into ffn_norm) and after ffn2 (into the next attn_norm)
  // Hand-computed volume: the layer output is [4 tokens, 4096] bf16 = 32,768 bytes; a 2-rank
  // ring all-reduce sends 2 x (2-1)/2 x 32,768 = 32,768 bytes per GPU.
  EXPECT_DOUBLE_EQ(find(bd, 0, "layer_out")->comm_bytes, 32'768);
  EXPECT_DOUBLE_EQ(find(bd, 0, "ffn_norm")->comm_bytes, 32'768);
  // FFN1 column-parallel on 2 ranks: weight [4096, 2 x 14336] / 2 = 58,720,256 params per rank;
  // FLOPs = 2 x 4 tokens x 58,720,256 = 469,762,048; bytes = 58,720,256 x 2 (bf16 weights)
  // + 4 x (4096 in + 14336 out) x 2 (activations) = 117,440,512 + 147,456 = 117,587,968
  EXPECT_DOUBLE_EQ(find(bd, 0, "ffn1")->flops, 469'762'048);
  EXPECT_DOUBLE_EQ(find(bd, 0, "ffn1")->hbm_bytes, 117'587'968);
  // FFN2 row-parallel: [14336 / 2, 4096] -> 2 x 4 x 29,360,128 = 234,881,024
  EXPECT_DOUBLE_EQ(find(bd, 0, "ffn2")->flops, 234'881'024);
  EXPECT_EQ(find(bd, 0, "ffn1")->collective, CollKind::kNone);  // R -> column-parallel needs nothing
}

TEST(Simulator, PaperFfn2OnHiddenGivesAllGathers) {
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8", decode(1000));
  Breakdown bd;
  ASSERT_TRUE(evaluate(ctx, plan(2, 4, paper_allgather_sharding()), &bd).feasible());
  // FFN1's output [4, 14336] split on ffn must be gathered before FFN2 (column-parallel on hidden):
  // 4 x 14336 x 2 bytes = 114,688; all-gather sends (2-1)/2 of it = 57,344 bytes per GPU.
  const OpCost* f2 = find(bd, 0, "ffn2");
  ASSERT_NE(f2, nullptr);
  EXPECT_EQ(f2->collective, CollKind::kAllGather);
  EXPECT_DOUBLE_EQ(f2->comm_bytes, 57'344);
  // and the layer output, split on hidden, is gathered instead of all-reduced: 32,768 / 2 = 16,384
  EXPECT_EQ(find(bd, 0, "layer_out")->collective, CollKind::kAllGather);
  EXPECT_DOUBLE_EQ(find(bd, 0, "layer_out")->comm_bytes, 16'384);
}

TEST(Simulator, Tp2MemoryByHand) {
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8", decode(1000));
  const Metrics m = evaluate(ctx, plan(2, 4));
  // weights per rank (params): per layer norms 8,192 + qkv 25,165,824/2 + o 16,777,216/2 + ffn1 117,440,512/2
  // + ffn2 58,720,256/2 = 109,060,096; x32 = 3,489,923,072; embedding and LM head 525,336,576/2 each;
  // final norm 4,096 -> 4,015,263,744 params x 2 bytes = 8,030,527,488
  EXPECT_DOUBLE_EQ(m.memory.weights.value(), 8'030'527'488.0);
  // KV: 8 kv heads / tp 2 = 4 per rank: 2 x 4 x 128 x 2 bytes = 2,048 per token per layer;
  // 32 layers x 1,001 tokens (context + the new one) x 2,048 x 4 sequences = 262,406,144
  EXPECT_DOUBLE_EQ(m.memory.kv_cache.value(), 262'406'144.0);
  // memory items add up
  EXPECT_DOUBLE_EQ(m.memory.total().value(),
                   m.memory.weights.value() + m.memory.kv_cache.value() + m.memory.activations.value() + m.memory.reserve.value());
  EXPECT_DOUBLE_EQ(m.memory.reserve.value(), 0.04 * 81559.0 * 1048576.0 + 1073741824.0);
}

TEST(Simulator, ExpertParallelDispatchVolume) {
  // Mixtral-8x7B, tp 2, ep 2 (one expert group per rank), 8 sequences decoding, the MoE input
  // split over the tokens (ffn_norm = tokens): dispatch moves [8 tokens x top-2, 4096] bf16 =
  // 131,072 bytes over 2 ranks; each holds 65,536 and sends half of it to the other: 32,768
  // bytes per GPU. The combine sends the same back.
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8", decode(1000));
  Plan p = plan(2, 8);
  p.deg.ep = 2;
  p.sharding[static_cast<std::size_t>(Slot::kFfnNorm)] = 1;
  Breakdown bd;
  const Metrics m = evaluate(ctx, p, &bd);
  ASSERT_TRUE(m.feasible()) << m.reason;
  EXPECT_EQ(find(bd, 0, "dispatch")->collective, CollKind::kAllToAll);
  EXPECT_DOUBLE_EQ(find(bd, 0, "dispatch")->comm_bytes, 32'768);
  EXPECT_DOUBLE_EQ(find(bd, 0, "combine")->comm_bytes, 32'768);
  // expert weights per rank: 4 of 8 experts x 3 x 4096 x 14336 x 2 bytes x 32 layers
  const double experts = 4.0 * 3 * 4096 * 14336 * 2 * 32;
  EXPECT_GT(m.memory.weights.value(), experts);
  EXPECT_LT(m.memory.weights.value(), experts + 3.5e9);  // + attention/2, router, embeddings/2
}

TEST(Simulator, MlaKvCacheIsTheLatentAndContextSplitDividesIt) {
  Workload w = decode(1000);
  w.weights_dtype = DType::kFp8;
  const SimContext ctx = ctx_for("deepseek-v3", "h100x64", w);
  Plan p = plan(8, 1);
  p.deg.attn_dp = 8;
  p.deg.ep = 64;
  p.batch = 8;  // one sequence per attention group
  // heads split: every rank of the tp group keeps the whole latent: 61 x 1,001 x 576 x 2 bytes = 70,342,272
  EXPECT_DOUBLE_EQ(evaluate(ctx, p).memory.kv_cache.value(), 70'342'272.0);
  // context split: the sequence is spread over the 8 ranks: 70,342,272 / 8 = 8,792,784
  p.sharding[static_cast<std::size_t>(Slot::kAttention)] = 1;
  EXPECT_DOUBLE_EQ(evaluate(ctx, p).memory.kv_cache.value(), 8'792'784.0);
}

// The serving simulation's iteration is a round of the pipeline: each stage works on the m
// micro-batches in turn, max(m, pp) stage times in both phases. Two prompts on 2 stages
// (one per micro-batch): 2 stage times, not the 3 of an empty pipeline's drain (m + pp - 1);
// a lone prompt: its 2 stages.
TEST(Simulator, AServingIterationIsARoundOfThePipeline) {
  Workload w;
  w.mode = Mode::kServe;
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8", w);
  Plan p = plan(1, 1);
  p.deg.pp = 2;
  const StepTime two = step_time(ctx, p, Phase::kPrefill, 2, 1024, 1024);
  EXPECT_EQ(two.micro_batches, 2);
  EXPECT_DOUBLE_EQ(two.iteration_s, 2.0 * two.stage_s);
  const StepTime one = step_time(ctx, p, Phase::kPrefill, 1, 1024, 1024);
  EXPECT_EQ(one.micro_batches, 1);
  EXPECT_DOUBLE_EQ(one.iteration_s, 2.0 * one.stage_s);
  const StepTime dec = step_time(ctx, p, Phase::kDecode, 4, 1024, 1025);
  EXPECT_DOUBLE_EQ(dec.iteration_s, 2.0 * dec.stage_s);
}

TEST(Simulator, PipelineBubble) {
  // One micro-batch on 2 stages: a prefill takes (m + pp - 1) = 2 stage times, and a decode
  // token waits max(m, pp) = 2 stage times (half of the pipeline idles).
  Workload pre;
  pre.mode = Mode::kPrefill;
  pre.isl = 512;
  const SimContext cp = ctx_for("llama-3.1-8b", "h100x8", pre);
  Plan p = plan(1, 1);
  p.deg.pp = 2;
  const Metrics mp = evaluate(cp, p);
  EXPECT_EQ(mp.micro_batches, 1);
  EXPECT_DOUBLE_EQ(mp.ttft_s, 2.0 * mp.step_s);
  const SimContext cd = ctx_for("llama-3.1-8b", "h100x8", decode(1000));
  const Metrics md = evaluate(cd, p);
  EXPECT_DOUBLE_EQ(md.tpot_s, 2.0 * md.step_s);
  // with 2 micro-batches both stages stay busy: the same TPOT serves twice the sequences
  p.batch = 2;
  const Metrics m2 = evaluate(cd, p);
  EXPECT_EQ(m2.micro_batches, 2);
  EXPECT_NEAR(m2.output_tok_s_per_gpu / md.output_tok_s_per_gpu, 2.0, 0.05);
}

TEST(Simulator, Tp1AndReplicatedPlansHaveNoCollectives) {
  const SimContext ctx = ctx_for("mixtral-8x7b", "h100x8", decode(1000));
  Breakdown bd;
  evaluate(ctx, plan(1, 4), &bd);
  for (const auto& o : bd.ops) EXPECT_EQ(o.comm_bytes, 0.0) << o.op;
  // every op unsharded (replicated weights, replicated tokens): no layout ever changes
  Sharding none{};
  for (int s = 0; s < kNumSlots; ++s) {
    const SlotInfo& si = slot_info(s);
    none[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(find_choice(s, "none") >= 0 ? find_choice(s, "none") : 0);
    (void)si;
  }
  none[static_cast<std::size_t>(Slot::kExpertFfn1)] = 1;  // tokens: split the tokens, not the experts
  none[static_cast<std::size_t>(Slot::kExpertFfn2)] = 1;
  const SimContext dense = ctx_for("llama-3.1-8b", "h100x8", decode(1000));
  bd.ops.clear();
  evaluate(dense, plan(4, 4, none), &bd);
  for (const auto& o : bd.ops) EXPECT_EQ(o.comm_bytes, 0.0) << o.op;
}

TEST(Simulator, EveryReportedCollectiveMovesBytesInARealGroup) {
  const SimContext ctx = ctx_for("deepseek-v3", "h100x64", decode(4096));
  Rng rng(11);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    Plan p = plan(8, 64);
    p.deg.attn_dp = 8;
    p.deg.ep = 64;
    for (int s = 0; s < kNumSlots; ++s) p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
    Breakdown bd;
    if (evaluate(ctx, p, &bd).infeasible == Infeasible::kInvalidPlan) continue;
    for (const auto& o : bd.ops) {
      if (o.collective == CollKind::kNone) {
        EXPECT_EQ(o.comm_bytes, 0.0) << o.op;
      } else {
        EXPECT_GT(o.comm_bytes, 0.0) << o.op;
        EXPECT_GT(o.comm_s, 0.0) << o.op;
        EXPECT_FALSE(o.comm_group.empty()) << o.op;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(Simulator, MoreBandwidthOrComputeIsNeverSlower) {
  Rng rng(5);
  for (const char* model : {"llama-3.1-70b", "deepseek-v3", "mixtral-8x7b"}) {
    Workload w = decode(8192);
    w.weights_dtype = DType::kFp8;
    SimContext base = ctx_for(model, "h100x64", w);
    const auto fast = test_support::faster_silicon(base);  // links, HBM, tensor cores
    int faster[3] = {0, 0, 0};  // plans each faster silicon made strictly faster (a change the test sees)
    for (int i = 0; i < 50; ++i) {
      Plan p = plan(static_cast<std::int32_t>(1 << rng.below(4)), 8 << rng.below(4));
      p.deg.attn_dp = static_cast<std::int32_t>(1 << rng.below(3));
      p.deg.ep = base.model.is_moe() ? static_cast<std::int32_t>(std::min<std::int64_t>(p.deg.stage_width(), 8)) : 1;
      for (int s = 0; s < kNumSlots; ++s) p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
      const Metrics m = evaluate(base, p);
      if (m.infeasible == Infeasible::kInvalidPlan) continue;
      for (int k = 0; k < 3; ++k) {
        const double t = evaluate(fast[static_cast<std::size_t>(k)], p).tpot_s;
        EXPECT_LE(t, m.tpot_s * (1 + 1e-12)) << model << " " << k << " " << sharding_to_string(p.sharding);
        faster[k] += t < m.tpot_s * (1 - 1e-9);
      }
    }
    for (int k = 0; k < 3; ++k) EXPECT_GT(faster[k], 0) << model << " " << k;
  }
}

TEST(Simulator, DoublingTensorParallelismNeverMoreThanHalvesTheStep) {
  // Twice the GPUs split every weight, head and expert in two at the same batch: the step can at
  // most halve (the per-kernel floors and the collectives only take from the gain), on every
  // GPU and engine. (The case it catches: until 2026-11-29 vLLM's and SGLang's MoE on one GPU
  // fell to the fitted expert stream while TP2 read the kernel's measured rows, and
  // Qwen3-30B-A3B decoded 3x faster on two H100s than on one.)
  int checked = 0;
  for (const char* model : {"qwen3-30b-a3b", "mixtral-8x7b", "llama-3.1-8b", "gpt-oss-120b", "qwen3-32b"}) {
    for (const char* gpu : {"h100", "h200", "b200", "mi300x"}) {
      for (const char* engine : {"vllm", "sglang", "trtllm", ""}) {
        if (std::string(gpu) == "mi300x" && std::string(engine) == "trtllm") continue;  // not built for AMD
        double prev = 0;
        for (std::int32_t tp : {1, 2, 4, 8}) {
          const SimContext ctx = test_support::ctx_with(model, fmt::format("{}x{}", gpu, tp), decode(2000), false, engine);
          const Metrics m = evaluate(ctx, plan(tp, 64));
          if (m.infeasible == Infeasible::kMemory) {
            prev = 0;
            continue;
          }
          if (prev > 0) {
            EXPECT_GE(m.tpot_s * 2.0 * (1 + 1e-9), prev) << model << " " << gpu << " " << engine << " tp " << tp;
            ++checked;
          }
          prev = m.tpot_s;
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(Simulator, SamePlanSameMetrics) {
  const SimContext ctx = ctx_for("qwen3-235b-a22b", "h100x16", decode(4096));
  Plan p = plan(4, 64);
  p.deg.attn_dp = 4;
  p.deg.ep = 16;
  const Metrics a = evaluate(ctx, p), b = evaluate(ctx, p);
  EXPECT_EQ(a.tpot_s, b.tpot_s);
  EXPECT_EQ(a.memory.total(), b.memory.total());
}

TEST(Simulator, InfeasiblePlansSayWhyAndByHowMuch) {
  const SimContext big = ctx_for("llama-3.1-405b", "h100x8", decode(1000));
  const Metrics mem = evaluate(big, plan(1, 1));
  EXPECT_EQ(mem.infeasible, Infeasible::kMemory);
  EXPECT_NE(mem.reason.find("but HBM holds 85.5 GB: over by"), std::string::npos) << mem.reason;

  Workload w = decode(1000);
  w.tpot_ms = 1.0;
  const SimContext slo = ctx_for("llama-3.1-8b", "h100x8", w);
  const Metrics s = evaluate(slo, plan(1, 1));
  EXPECT_EQ(s.infeasible, Infeasible::kTpotSlo);
  EXPECT_NE(s.reason.find("exceeds the SLO of 1 ms by"), std::string::npos) << s.reason;
  EXPECT_EQ(s.objective, 0.0);

  const Metrics bad = evaluate(slo, plan(3, 1));
  EXPECT_EQ(bad.infeasible, Infeasible::kInvalidPlan);
  EXPECT_NE(bad.reason.find("tp 3 does not divide the 32 attention heads"), std::string::npos) << bad.reason;
  Plan too_big = plan(8, 8);
  too_big.deg.replicas = 2;
  EXPECT_NE(evaluate(slo, too_big).reason.find("needs 16 GPUs"), std::string::npos);
  Plan pp = plan(1, 8);
  pp.deg.pp = 33;
  EXPECT_NE(evaluate(slo, pp).reason.find("pp 33 exceeds the 32 layers"), std::string::npos);
  Plan ep = plan(2, 8);
  ep.deg.ep = 2;
  EXPECT_NE(evaluate(slo, ep).reason.find("dense model"), std::string::npos);
}

TEST(Simulator, MaxBatchIsTheLargestFeasible) {
  Workload w = decode(8192);
  w.tpot_ms = 40;
  const SimContext ctx = ctx_for("llama-3.1-70b", "h100x8", w);
  Plan p = plan(8, 0);  // max
  const Metrics m = evaluate(ctx, p);
  ASSERT_TRUE(m.feasible()) << m.reason;
  EXPECT_GT(m.batch, 1);
  p.batch = m.batch + 1;
  EXPECT_FALSE(evaluate(ctx, p).feasible());  // one more sequence breaks memory or the SLO
}

TEST(Simulator, OfflineReportsBothSidesAndStaticBatch) {
  Workload w;
  w.mode = Mode::kOffline;
  w.isl = 1000;
  w.osl = 1000;
  const SimContext ctx = ctx_for("llama-3.1-70b", "h100x8", w);
  const Metrics m = evaluate(ctx, plan(8, 64));
  ASSERT_TRUE(m.feasible()) << m.reason;
  EXPECT_GT(m.output_tok_s_per_gpu, 0);
  EXPECT_DOUBLE_EQ(m.input_tok_s_per_gpu, m.output_tok_s_per_gpu);  // isl == osl
  EXPECT_GT(m.ttft_s, 0);
  EXPECT_GT(m.tpot_s, m.step_s);  // prefill work interleaved raises the mean gap between tokens
  const Metrics st = evaluate_static_batch(ctx, plan(8, 64));
  EXPECT_GT(st.output_tok_s_per_gpu, 0);
}

TEST(Calibration, OneFitPerSiliconAndOtherGpusFallBack) {
  const CostParams h100 = cost_params_for("h100");
  EXPECT_TRUE(h100.calibrated);
  EXPECT_GT(h100.gemm_efficiency, 0.0);
  EXPECT_LE(h100.gemm_efficiency, 1.0);
  // H200 is the H100 chip, GB200's GPUs are B200s: each shares its sibling's fit, calibrated
  const CostParams h200 = cost_params_for("h200");
  EXPECT_TRUE(h200.calibrated);
  EXPECT_EQ(h200.gpu, "h100");
  EXPECT_EQ(h200.gemm_efficiency, h100.gemm_efficiency);
  const CostParams b200 = cost_params_for("b200"), gb200 = cost_params_for("gb200");
  EXPECT_TRUE(b200.calibrated);
  EXPECT_TRUE(gb200.calibrated);
  EXPECT_EQ(gb200.gpu, "b200");
  EXPECT_EQ(gb200.step_overhead_us, b200.step_overhead_us);
  // A100 has no fit of its own: the H100 one, marked uncalibrated
  const CostParams a100 = cost_params_for("a100");
  EXPECT_FALSE(a100.calibrated);
  EXPECT_EQ(a100.gpu, "h100");
}


TEST(StageWeights, ATiedHeadOnTheEmbeddingsStageNeedsTheWholeMatrixWhenItIsNotSplit) {
  // gpt-moe-1.2t ties its LM head to the embedding (51,200 x 12,288 = 629,145,600 parameters). At pp 1
  // and tp 8 with embedding=vocab a rank holds 1/8 of the matrix; lm_head=vocab reads the same 1/8,
  // lm_head=none needs all of it: 629,145,600 x 7/8 = 550,502,400 more parameters = 1,101,004,800 B.
  const SimContext ctx = ctx_for("gpt-moe-1.2t", "h100x8", decode(1024));
  Plan p = plan(8, 1);
  p.deg.ep = 8;
  const double vocab_head = stage_weight_bytes(ctx, p)[0];
  p.sharding[static_cast<std::size_t>(Slot::kLmHead)] = 1;
  EXPECT_DOUBLE_EQ(stage_weight_bytes(ctx, p)[0] - vocab_head, 1'101'004'800.0);
  EXPECT_DOUBLE_EQ(tied_lm_head_extra_bytes(ctx, p), 1'101'004'800.0);
  EXPECT_DOUBLE_EQ(evaluate(ctx, p).memory.weights.value(), stage_weight_bytes(ctx, p)[0]);
  // an untied model, or the head on another stage (its own copy), adds nothing
  EXPECT_EQ(tied_lm_head_extra_bytes(ctx_for("llama-3.1-8b", "h100x8", decode(1024)), plan(8, 1)), 0.0);
  p.deg.pp = 2;
  EXPECT_EQ(tied_lm_head_extra_bytes(ctx, p), 0.0);
}
TEST(Simulator, InfeasibilityExcessIsTheRelativeOverrun) {
  // hand-computed: memory 100 GB needed of 80 GB -> 100/80 - 1 = 0.25; TPOT 60 ms against a
  // 50 ms SLO -> 60/50 - 1 = 0.2; TTFT 1500 ms against 1000 ms -> 0.5; invalid -> +inf
  Workload w;
  w.tpot_ms = 50;
  w.ttft_ms = 1000;
  Metrics m;
  EXPECT_EQ(infeasibility_excess(m, w), 0.0);
  m.infeasible = Infeasible::kMemory;
  m.memory.weights = Bytes(90e9);
  m.memory.reserve = Bytes(10e9);
  m.memory.capacity = Bytes(80e9);
  EXPECT_DOUBLE_EQ(infeasibility_excess(m, w), 0.25);
  m.infeasible = Infeasible::kTpotSlo;
  m.tpot_s = 0.060;
  EXPECT_NEAR(infeasibility_excess(m, w), 0.2, 1e-12);
  m.infeasible = Infeasible::kTtftSlo;
  m.ttft_s = 1.5;
  EXPECT_NEAR(infeasibility_excess(m, w), 0.5, 1e-12);
  m.infeasible = Infeasible::kInvalidPlan;
  EXPECT_TRUE(std::isinf(infeasibility_excess(m, w)));
}

TEST(Pipeline, UnevenStagesSplitAsTheEnginesAndTheSlowestIsCosted) {
  // issue 18: pp need not divide the layers. By hand, vLLM's rule (layers / pp each, the
  // remainder one more each on the stages before the last, backwards):
  //   61 on 4: 15 15 16 15;  94 on 8: 11 12 12 12 12 12 12 11;  5 on 4: 1 1 2 1;  32 on 4: 8 each
  const auto sizes = [](std::int64_t layers, std::int64_t pp) {
    std::vector<std::int64_t> out;
    std::int64_t next = 0;
    for (std::int64_t st = 0; st < pp; ++st) {
      const LayerRange r = stage_layers(layers, pp, st);
      EXPECT_EQ(r.first, next) << layers << "/" << pp;  // contiguous, in order, covering every layer
      next = r.last;
      out.push_back(r.size());
    }
    EXPECT_EQ(next, layers);
    return out;
  };
  EXPECT_EQ(sizes(61, 4), (std::vector<std::int64_t>{15, 15, 16, 15}));
  EXPECT_EQ(sizes(94, 8), (std::vector<std::int64_t>{11, 12, 12, 12, 12, 12, 12, 11}));
  EXPECT_EQ(sizes(5, 4), (std::vector<std::int64_t>{1, 1, 2, 1}));
  EXPECT_EQ(sizes(32, 4), (std::vector<std::int64_t>{8, 8, 8, 8}));
  for (std::int64_t layers = 1; layers <= 130; ++layers) {
    for (std::int64_t pp = 1; pp <= layers && pp <= 64; ++pp) {
      std::int64_t lo = layers, hi = 0, sum = 0;
      for (std::int64_t st = 0; st < pp; ++st) {
        const std::int64_t n = stage_layers(layers, pp, st).size();
        lo = std::min(lo, n);
        hi = std::max(hi, n);
        sum += n;
      }
      ASSERT_EQ(sum, layers);
      ASSERT_LE(hi - lo, 1);  // as even as it can be
      ASSERT_GE(lo, 1);
    }
  }
  // DeepSeek-V3 (3 dense + 58 MoE layers) on pp 4: valid, the weights of the four stages add
  // up to the whole model's, and the step is the slowest stage's (the third: 16 MoE layers)
  const SimContext ctx = test_support::ctx_for("deepseek-v3", "h100x64", test_support::decode(4096));
  Plan p = plan(8, 64);
  p.deg.pp = 4;
  p.deg.ep = 8;
  ASSERT_FALSE(validate_plan(p, ctx.model, ctx.cluster).has_value());
  const std::vector<double> per_stage = stage_weight_bytes(ctx, p);
  ASSERT_EQ(per_stage.size(), 4u);
  EXPECT_GT(per_stage[2], per_stage[1]);  // one more MoE layer than stage 1
  Plan one = p;
  one.deg.pp = 1;
  double sum = 0;
  for (double w : per_stage) sum += w;
  // pp 1 holds the same layers, embedding and head; pp > 1 adds the untied head's nothing (untied)
  EXPECT_NEAR(sum, stage_weight_bytes(ctx, one)[0], 1e-6 * sum);
  const Metrics m = evaluate(ctx, p);
  ASSERT_NE(m.infeasible, Infeasible::kInvalidPlan) << m.reason;
  Breakdown bd;
  (void)evaluate(ctx, p, &bd);
  std::int64_t moe_layers = 0;
  for (const OpCost& op : bd.ops) {
    if (op.op == "expert_ffn1") moe_layers = op.layers;
  }
  EXPECT_EQ(moe_layers, 16);  // the breakdown reports the fullest stage's layers of the class
}

TEST(Placement, AReplicaThatStraddlesAnNvlinkDomainIsSlower) {
  // issue 18: DeepSeek-V3 on gb200x144 (72-GPU NVLink domains), tp 8 x attn_dp 8 = 64-GPU
  // instances. One replica sits inside domain 0; with two, the second spans GPUs 64..127,
  // across the boundary at 72: its MoE all-to-alls and attention-DP gathers cross the
  // network, and the slowest replica sets the step.
  Workload w = test_support::decode(4096);
  w.weights_dtype = DType::kFp8;
  w.kv_dtype = DType::kFp8;
  const SimContext ctx = test_support::ctx_for("deepseek-v3", "gb200x144", w);
  Plan p = plan(8, 512);
  p.deg.attn_dp = 8;
  p.deg.ep = 64;
  const Metrics one = evaluate(ctx, p);
  p.deg.replicas = 2;
  const Metrics two = evaluate(ctx, p);
  ASSERT_TRUE(one.feasible() && two.feasible()) << one.reason << two.reason;
  EXPECT_GT(two.tpot_s, one.tpot_s * 1.05);
  // on H100 nodes of 8 the same replicas tile whole nodes: no replica is worse placed
  const SimContext h = test_support::ctx_for("deepseek-v3", "h100x128", w);
  p.deg.replicas = 1;
  const double h1 = evaluate(h, p).tpot_s;
  p.deg.replicas = 2;
  EXPECT_DOUBLE_EQ(evaluate(h, p).tpot_s, h1);
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

// The decomposition the exact search relies on: changing one slot group's choice
// leaves every other group's contribution untouched, and the groups add up to the
// simulator's step time.
TEST(Decomposition, GroupsAreIndependentAndAddUp) {
  Rng rng(21);
  int checked = 0;
  for (const char* model : {"llama-3.1-8b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b"}) {
    Workload w = decode(4096);
    w.weights_dtype = DType::kFp8;
    const SimContext ctx = ctx_for(model, "h100x64", w);
    for (int trial = 0; trial < 30; ++trial) {
      Plan p = plan(static_cast<std::int32_t>(1 << rng.below(4)), 16);
      p.deg.attn_dp = static_cast<std::int32_t>(1 << rng.below(3));
      p.deg.pp = static_cast<std::int32_t>(rng.below(2) ? 1 : 2);
      p.deg.ep = ctx.model.is_moe() ? static_cast<std::int32_t>(std::min<std::int64_t>(p.deg.stage_width(), 8)) : 1;
      p.batch = 16 * p.deg.attn_dp;
      for (int s = 0; s < kNumSlots; ++s) p.sharding[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(s).num_choices)));
      if (validate_plan(p, ctx.model, ctx.cluster)) continue;
      GroupTables base;
      ASSERT_TRUE(evaluate_grouped(ctx, p, Phase::kDecode, p.batch, 4096, 4097, &base));
      // the groups add up to the simulator's step
      double stage = 0;
      for (int t = 0; t < base.stage_types; ++t) {
        double sum = 0;
        for (int g = 0; g < kNumSlotGroups; ++g) sum += base.time[t][g];
        stage = std::max(stage, sum);
      }
      const Metrics m = evaluate(ctx, p);
      EXPECT_NEAR(stage + base.overhead_s, m.step_s, 1e-12 * m.step_s) << model;
      // change one slot at a time: only its group's entries may move
      for (int slot = 0; slot < kNumSlots; ++slot) {
        const int g = slot_group(slot);
        if (g < 0) continue;  // hubs
        for (int c = 0; c < slot_info(slot).num_choices; ++c) {
          Plan q = p;
          q.sharding[static_cast<std::size_t>(slot)] = static_cast<std::uint8_t>(c);
          if (validate_plan(q, ctx.model, ctx.cluster)) continue;
          GroupTables other;
          ASSERT_TRUE(evaluate_grouped(ctx, q, Phase::kDecode, q.batch, 4096, 4097, &other));
          ASSERT_EQ(other.stage_types, base.stage_types);
          for (int h = 0; h < kNumSlotGroups; ++h) {
            if (h == g) continue;
            EXPECT_EQ(other.act[h], base.act[h]) << model << " slot " << slot_info(slot).name << " moved group " << h;
            for (int t = 0; t < base.stage_types; ++t) {
              EXPECT_EQ(other.time[t][h], base.time[t][h]) << model << " slot " << slot_info(slot).name << " moved group " << h;
              EXPECT_EQ(other.weights[t][h], base.weights[t][h]) << model << " " << slot_info(slot).name;
              EXPECT_EQ(other.kv_per_seq[t][h], base.kv_per_seq[t][h]) << model << " " << slot_info(slot).name;
            }
          }
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

}  // namespace

TEST(StageWeights, AKvHeadSharedByTwoRanksIsHeldWholeByBoth) {
  // llama-3.1-8b (hidden 4096, 32 heads, 8 kv heads of 128, MLP 14336, vocab 128256) at tp 16:
  // q 4096 x 4096 / 16 = 1,048,576; k and v 2 x 4096 x 1024 = 8,388,608 over min(16, 8) = 8 ranks'
  // worth = 1,048,576 (one whole kv head, not 8,388,608 / 16); o 1,048,576; ffn1 117,440,512 / 16
  // = 7,340,032; ffn2 3,670,016; norms 8,192 -> 14,163,968 per layer, x 32 layers x 2 B = 906,493,952.
  // Embedding 525,336,576 / 16 x 2 = 65,667,072; LM head 65,667,072 + final norm 8,192 -> 1,037,836,288.
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x16", decode(1024));
  const auto w = stage_weight_bytes(ctx, plan(16, 1));
  ASSERT_EQ(w.size(), 1U);
  EXPECT_DOUBLE_EQ(w[0], 1'037'836'288.0);
  EXPECT_DOUBLE_EQ(evaluate(ctx, plan(16, 1)).memory.weights.value(), w[0]);
}

TEST(StageWeights, MlaAttentionOverAllHeadsHoldsTheWholeKvUpProjection) {
  // DeepSeek-V3: kv_b = kv_lora 512 x 128 heads x (nope 128 + v 128) = 16,777,216 per layer. With
  // qkv_proj=heads at tp 8, attention=heads holds 1/8 of it; attention=none (every head on every rank,
  // reading the cached latent) holds all of it: 14,680,064 more per layer, x 61 layers x 2 B.
  Workload w = decode(1024);
  w.weights_dtype = DType::kBf16;  // the checkpoint's own is fp8: bf16 for 2 B per parameter
  const SimContext ctx = ctx_for("deepseek-v3", "h100x8", w);
  Sharding none = megatron_sharding();
  none[static_cast<std::size_t>(Slot::kAttention)] = 2;
  const double heads = stage_weight_bytes(ctx, plan(8, 1))[0];
  const double all = stage_weight_bytes(ctx, plan(8, 1, none))[0];
  EXPECT_DOUBLE_EQ(all - heads, 61.0 * 14'680'064.0 * 2.0);
}

TEST(StageWeights, PipelineStagesAddUpToTheModel) {
  // with every op unsharded, the stages of a pp 4 plan hold the model's weights exactly once
  const SimContext ctx = ctx_for("llama-3.1-8b", "h100x8", decode(1024));
  Sharding rep{};
  for (int i = 0; i < kNumSlots; ++i) rep[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(slot_info(i).num_choices - 1);
  Plan p = plan(1, 4, rep);
  p.deg.pp = 4;
  const auto w = stage_weight_bytes(ctx, p);
  ASSERT_EQ(w.size(), 4U);
  // 8,030,261,248 parameters x 2 B (models_test: llama-3.1-8b total)
  EXPECT_DOUBLE_EQ(w[0] + w[1] + w[2] + w[3], 8'030'261'248.0 * 2.0);
}
}  // namespace shardwise
