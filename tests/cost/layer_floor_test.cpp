// The measured decode layer's fixed time per priced op (cost/layer_floor.hpp; docs/silicon.md,
// "A measured decode layer"): the table, the kernel counts, the floor by hand, which engines and
// GPUs read it, and what it does to a step.
#include <gtest/gtest.h>

#include <string>

#include "cost/layer_floor.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

TEST(LayerFloor, TheEmbeddedTableParsesWithItsSources) {
  const auto& rows = builtin_silicon().layer_kernels;
  // 29 small kernels of three measured layers at one token per step, and the graph floor
  ASSERT_EQ(rows.size(), 30u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.silicon, "h200");
    EXPECT_EQ(r.tokens, 1);
    EXPECT_NE(r.locator.find("bench/silicon/"), std::string::npos) << r.locator;
  }
}

TEST(LayerFloor, ATableWithAnUnknownKernelOrUnitIsRefusedNamingTheRow) {
  const std::string head = "silicon,kernel,model,tokens,value,unit,source_locator\n";
  auto bad = parse_layer_kernel_table(head + "h200,softmax,m,1,2.0,us,x\n", "k.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("k.csv"), std::string::npos);
  EXPECT_NE(bad.error().message().find("row 2 kernel"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("'softmax'"), std::string::npos);
  auto ms = parse_layer_kernel_table(head + "h200,moe_sum,m,1,2.0,ms,x\n", "k.csv");
  ASSERT_FALSE(ms.ok());
  EXPECT_NE(ms.error().message().find("row 2 unit"), std::string::npos) << ms.error().message();
  auto neg = parse_layer_kernel_table(head + "h200,moe_sum,m,1,-2.0,us,x\n", "k.csv");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.error().message().find("row 2 value"), std::string::npos) << neg.error().message();
}

TEST(LayerFloor, TheKernelCountsOfAnMlaMoeLayerAndADenseGqaOne) {
  auto ds = load_model("deepseek-v3");
  auto ll = load_model("llama-3.1-70b");
  ASSERT_TRUE(ds.ok() && ll.ok());
  Formats fp8;
  fp8.attention = fp8.dense = fp8.experts = DType::kFp8;
  // DeepSeek-V3's MoE layer: two fused add+RMSNorms, MLA's two latent norms and its latent KV
  // store, fp8 quantisation before q_a/kv_a, q_b, o_proj, the MoE input, the experts'
  // intermediate and the shared expert's (6); the router's top-k, moe_align, the routed sum,
  // the shared expert's add; GEMM-class: q_a/kv_a, q_b, two absorbed projections, attention,
  // o_proj, the router, the shared expert's two (9); priced: attn_norm, qkv_proj, attention,
  // o_proj, ffn_norm, router, combine, shared_ffn1, shared_ffn2 (9)
  const LayerKernelCounts moe = layer_kernel_counts(*ds, fp8, true);
  EXPECT_EQ(moe.fused_add_rmsnorm, 2);
  EXPECT_EQ(moe.rmsnorm, 2);
  EXPECT_EQ(moe.kv_store_latent, 1);
  EXPECT_EQ(moe.kv_store, 0);
  EXPECT_EQ(moe.quant_fp8, 6);
  EXPECT_EQ(moe.router_topk, 1);
  EXPECT_EQ(moe.moe_align, 1);
  EXPECT_EQ(moe.moe_sum, 1);
  EXPECT_EQ(moe.residual_add, 1);
  EXPECT_EQ(moe.gemm_class, 9);
  EXPECT_EQ(moe.priced_ops, 9);
  // a dense Llama layer in bf16: no quantisation; qkv_proj, attention, o_proj, ffn1, ffn2
  const LayerKernelCounts dense = layer_kernel_counts(*ll, Formats{}, false);
  EXPECT_EQ(dense.fused_add_rmsnorm, 2);
  EXPECT_EQ(dense.kv_store, 1);
  EXPECT_EQ(dense.quant_fp8, 0);
  EXPECT_EQ(dense.gemm_class, 5);
  EXPECT_EQ(dense.priced_ops, 7);
  // in fp8: one quantisation before each of its four GEMMs
  EXPECT_EQ(layer_kernel_counts(*ll, fp8, false).quant_fp8, 4);
  // a GQA MoE layer without a shared expert (Qwen3-30B-A3B): the KV store, no latent norms,
  // no shared add; GEMM-class qkv_proj, attention, o_proj and the router; priced attn_norm,
  // qkv_proj, attention, o_proj, ffn_norm, router, combine
  auto qw = load_model("qwen3-30b-a3b");
  ASSERT_TRUE(qw.ok());
  const LayerKernelCounts q = layer_kernel_counts(*qw, Formats{}, true);
  EXPECT_EQ(q.kv_store, 1);
  EXPECT_EQ(q.rmsnorm, 0);
  EXPECT_EQ(q.residual_add, 0);
  EXPECT_EQ(q.quant_fp8, 0);
  EXPECT_EQ(q.gemm_class, 4);
  EXPECT_EQ(q.priced_ops, 7);
  // bf16 experts beside an fp8 shared expert (DeepSeek-V3): the shared expert quantises its own
  // input and intermediate (2), the attention its three
  Formats mixed = fp8;
  mixed.experts = DType::kBf16;
  EXPECT_EQ(layer_kernel_counts(*ds, mixed, true).quant_fp8, 3 + 2);
}

TEST(LayerFloor, DeepSeekOnTheH200IsItsMeasuredKernelsOverItsPricedOps) {
  auto ds = load_model("deepseek-v3");
  auto gpu = find_gpu("h200");
  ASSERT_TRUE(ds.ok() && gpu);
  Formats fp8;
  fp8.attention = fp8.dense = fp8.experts = DType::kFp8;
  const double g = gemm_profile_for("h200").floor_s;
  const LayerFloor f = layer_floor_for(*ds, fp8, *gpu, g, builtin_silicon());
  ASSERT_TRUE(f.present);
  EXPECT_EQ(f.basis, Basis::kMeasured);
  // By hand, the medians of the table's rows: fused_add_rmsnorm 2.580 us (of 6), rmsnorm 1.829
  // (of 2), quant_fp8 1.598 (of 14), kv_store_latent 1.203, router_topk 5.290, moe_align 3.222,
  // moe_sum 1.846, residual_add 1.221.
  //   MoE layer:   2 x 2.580 + 2 x 1.829 + 6 x 1.598 + 1.203 + 5.290 + 3.222 + 1.846 + 1.221 = 31.188 us + 9 G
  //   dense layer: 2 x 2.580 + 2 x 1.829 + 5 x 1.598 + 1.203                               = 18.011 us + 8 G
  //   58 MoE and 3 dense layers: 58 x 31.188 + 3 x 18.011 = 1862.937 us + (58 x 9 + 3 x 8 = 546) G
  //   over 58 x 9 + 3 x 7 = 543 priced ops
  EXPECT_EQ(f.priced_ops, 543);
  EXPECT_NEAR(f.per_op_s, (1862.937e-6 + 546.0 * g) / 543.0, 1e-12);
  // with the H200's GEMM floor (3.22 us) about 6.7 us, under the fitted 8
  EXPECT_NEAR(f.per_op_s * 1e6, 6.67, 0.05);
  EXPECT_LT(f.per_op_s * 1e6, cost_params_for("h200").kernel_overhead_us);
}

TEST(LayerFloor, OnlyAnEngineThatRunsItsSmallKernelsSeparatelyReadsIt) {
  const Workload w = test_support::decode(1536);
  for (const char* engine : {"vllm", "sglang"}) {
    const SimContext ctx = test_support::ctx_with("deepseek-v3", "h200x8", w, false, engine);
    EXPECT_TRUE(ctx.engine.small_kernels_separate) << engine;
    EXPECT_TRUE(ctx.layer_floor.present) << engine;
  }
  // TensorRT-LLM fuses them otherwise (unmeasured): the fitted floor; the generic engine too
  for (const char* engine : {"trtllm", ""}) {
    const SimContext ctx = test_support::ctx_with("deepseek-v3", "h200x8", w, false, engine);
    EXPECT_FALSE(ctx.layer_floor.present) << engine;
  }
  // the kernel tables keep their measured GEMM floor
  EXPECT_FALSE(test_support::ctx_with("deepseek-v3", "h200x8", w, true, "sglang").layer_floor.present);
}

TEST(LayerFloor, AttentionNormCarriesItInPlaceOfTheFittedOverhead) {
  // the attention norm of a TP8 layer moves a few hundred KB: its time is the kernel floor
  // plus its bytes over HBM, so the two engines differ by the two floors exactly
  const Workload w = test_support::decode(1536);
  const SimContext sg = test_support::ctx_with("llama-3.1-70b", "h200x8", w, false, "sglang");
  const SimContext tr = test_support::ctx_with("llama-3.1-70b", "h200x8", w, false, "trtllm");
  ASSERT_TRUE(sg.layer_floor.present);
  const auto norm = [](const SimContext& c) {
    const Breakdown b = breakdown_step(c, test_support::plan(8, 8), Phase::kDecode, 8, 1536);
    for (const OpCost& o : b.ops) {
      if (o.op == "attn_norm") return o.compute_s;
    }
    return -1.0;
  };
  const double a = norm(sg), t = norm(tr);
  ASSERT_GT(a, 0);
  EXPECT_NEAR(t - a, cost_params_for("h200").kernel_overhead_us * 1e-6 - sg.layer_floor.per_op_s, 1e-12);
}

TEST(LayerFloor, AnotherNvidiaGpuTakesItTransferredAndAnAmdOneKeepsTheFit) {
  auto ds = load_model("deepseek-v3");
  ASSERT_TRUE(ds.ok());
  Formats fp8;
  fp8.attention = fp8.dense = fp8.experts = DType::kFp8;
  const auto floor_on = [&](const char* name) {
    const auto gpu = find_gpu(name);
    if (!gpu) {
      ADD_FAILURE() << name << " is not in the catalog";
      return LayerFloor{};
    }
    return layer_floor_for(*ds, fp8, *gpu, 2.63e-6, builtin_silicon());
  };
  const LayerFloor h200 = floor_on("h200"), h100 = floor_on("h100"), b200 = floor_on("b200");
  ASSERT_TRUE(h200.present && h100.present && b200.present);
  EXPECT_EQ(h100.basis, Basis::kTransferred);
  EXPECT_EQ(b200.basis, Basis::kTransferred);
  // each kernel's time above the graph floor scales with HBM: slower on the H100's 3.35 TB/s,
  // faster on the B200's 8 TB/s, at the same GEMM floor
  EXPECT_GT(h100.per_op_s, h200.per_op_s);
  EXPECT_LT(b200.per_op_s, h200.per_op_s);
  EXPECT_FALSE(floor_on("mi300x").present);
  EXPECT_FALSE(floor_on("a100").present);
}

TEST(LayerFloor, AnExpertGemmOutsideTheFusedMoeCarriesTheGemmFloor) {
  // attention-DP x EP (all-to-all): the grouped expert GEMMs are no priced op of the
  // composition and carry the GEMM floor, not the per-op one; the router carries the per-op one
  const Workload w = test_support::decode(1536);
  const SimContext sg = test_support::ctx_with("deepseek-v3", "h200x8", w, false, "sglang");
  ASSERT_TRUE(sg.layer_floor.present);
  ASSERT_GT(sg.layer_floor.gemm_floor_s, 0);
  Plan p = test_support::plan(1, 64);
  p.deg.attn_dp = 8;
  p.deg.ep = 8;
  SimContext no_floor = sg;
  no_floor.layer_floor.gemm_floor_s = 0;
  no_floor.layer_floor.per_op_s = 0;
  const auto op = [&](const SimContext& c, const char* name) {
    const Breakdown b = breakdown_step(c, p, Phase::kDecode, 64, 1536);
    for (const OpCost& o : b.ops) {
      if (o.op == name) return o.compute_s;
    }
    return -1.0;
  };
  ASSERT_GT(op(sg, "expert_ffn1"), 0);
  EXPECT_NEAR(op(sg, "expert_ffn1") - op(no_floor, "expert_ffn1"), sg.layer_floor.gemm_floor_s, 1e-12);
  EXPECT_NEAR(op(sg, "router") - op(no_floor, "router"), sg.layer_floor.per_op_s, 1e-12);
}

TEST(LayerFloor, MoreSmallKernelTimeNeverShortensAStep) {
  // property: every kernel of the table twice as slow never makes a step faster, at any batch
  SiliconTables slow = builtin_silicon();
  for (auto& r : slow.layer_kernels) r.seconds *= 2.0;
  auto ds = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x8");
  ASSERT_TRUE(ds.ok() && c.ok());
  for (const std::int64_t batch : {1, 8, 64, 256}) {
    const Workload w = test_support::decode(2000);
    CostParams p = cost_params_for("h200");
    const SimContext base = make_context(*ds, *c, w, p, *load_engine_profile("sglang"));
    p.silicon = std::make_shared<const SiliconTables>(slow);
    const SimContext slower = make_context(*ds, *c, w, p, *load_engine_profile("sglang"));
    ASSERT_TRUE(slower.layer_floor.present);
    EXPECT_GT(slower.layer_floor.per_op_s, base.layer_floor.per_op_s);
    const double a = breakdown_step(base, test_support::plan(8, batch), Phase::kDecode, batch, 2000).stage_s;
    const double b = breakdown_step(slower, test_support::plan(8, batch), Phase::kDecode, batch, 2000).stage_s;
    EXPECT_GE(b, a) << batch;
  }
}

}  // namespace
}  // namespace shardwise
