// The elementwise kernels between the GEMMs, measured (data/silicon/elementwise.csv;
// docs/silicon.md, "Elementwise kernels"): the table, the curve by hand, the transfer by HBM
// bandwidth, and the ops the kernel tables add to the step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "cost/elementwise_table.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "cost/time_curve.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

const char* kHead = "silicon,op,model,tokens,tp,bytes,value,unit,source_locator\n";

TEST(Elementwise, TheEmbeddedTableParsesWithItsSources) {
  const auto& rows = builtin_silicon().elementwise;
  // vidur's H100 profiles of five models x TP 1, 2, 4, 8 x 21 token counts, two ops
  ASSERT_EQ(rows.size(), 840u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.silicon, "h100");
    EXPECT_NE(r.locator.find("vidur@"), std::string::npos);
  }
  // Llama-2-70B at TP 1 and 1,024 tokens: silu_and_mul moves 1,024 x 3 x 28,672 x 2 B =
  // 176,160,768 B in 89.5 us (1.97 TB/s, 0.59 of the H100's 3.35 TB/s)
  const auto it = std::find_if(rows.begin(), rows.end(), [](const ElementwiseRow& r) {
    return r.op == "mlp_act" && r.model == "meta-llama/Llama-2-70b-hf" && r.tokens == 1024 && r.tp == 1;
  });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->bytes, 176'160'768.0);
  EXPECT_NEAR(it->seconds * 1e6, 89.5, 1e-9);
}

TEST(Elementwise, BadRowsNameTheFileTheRowAndTheValue) {
  auto bad_op = parse_elementwise_table(std::string(kHead) + "h100,layernorm,m,1,1,100,2,us,x\n", "e.csv");
  ASSERT_FALSE(bad_op.ok());
  EXPECT_EQ(bad_op.error().message(), "e.csv: field 'row 2 op': expected mlp_act or attn_rope, found 'layernorm'");
  auto bad_unit = parse_elementwise_table(std::string(kHead) + "h100,mlp_act,m,1,1,100,2,ms,x\n", "e.csv");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_NE(bad_unit.error().message().find("'ms'"), std::string::npos);
  auto bad_bytes = parse_elementwise_table(std::string(kHead) + "h100,mlp_act,m,1,1,-5,2,us,x\n", "e.csv");
  ASSERT_FALSE(bad_bytes.ok());
  EXPECT_NE(bad_bytes.error().message().find("row 2 bytes"), std::string::npos);
  EXPECT_FALSE(parse_elementwise_table("silicon,op\nh100,mlp_act\n", "e.csv").ok());
}

TEST(Elementwise, TheCurvePoolsOctavesAndInterpolatesInLogLogByHand) {
  // octave 10 (1,024-2,047 B): (1,100, 2 us), (1,500, 3 us), (2,000, 10 us) -> (1,500 B, 3 us),
  // the medians; octave 12: (5,000 B, 5 us)
  const TimeCurve c = build_time_curve({{1100, 2e-6}, {1500, 3e-6}, {2000, 10e-6}, {5000, 5e-6}}, /*bin_octaves=*/true);
  ASSERT_EQ(c.log_b.size(), 2u);
  EXPECT_EQ(c.rows, 4);
  EXPECT_NEAR(c.b_lo, 1500, 1e-9);
  EXPECT_NEAR(c.b_hi, 5000, 1e-9);
  // halfway in log bytes (sqrt(1,500 x 5,000) = 2,738.6 B): sqrt(3 x 5) = 3.873 us
  EXPECT_NEAR(c.seconds_at(std::sqrt(1500.0 * 5000.0)) * 1e6, std::sqrt(15.0), 1e-9);
  // below: the floor, 3 us; above: the last segment's 3,500 B / 2 us = 1.75 GB/s, so 8,500 B
  // takes 5 + 3,500 / 1.75e9 s = 7 us
  EXPECT_NEAR(c.seconds_at(100) * 1e6, 3.0, 1e-9);
  EXPECT_NEAR(c.seconds_at(8500) * 1e6, 7.0, 1e-9);
}

TEST(Elementwise, ASizeWhoseLogarithmRoundsOntoAnEndStaysInsideTheCurve) {
  // just below the largest size measured, log(bytes) rounds to log(b_hi) (1e8 less one ulp:
  // a relative step of 1.5e-16 on a logarithm of 18.4, whose ulp is 3.6e-15), so the count of
  // sizes at or below it is the whole curve; it used to index one past the end (a read past
  // the vector, seen by AddressSanitizer): now the last segment, at its end
  const TimeCurve c = build_time_curve({{1e4, 2e-6}, {1e8, 52e-6}}, /*bin_octaves=*/false);
  const double below = std::nextafter(c.b_hi, 0.0);
  ASSERT_LT(below, c.b_hi);
  ASSERT_EQ(std::log(below), std::log(c.b_hi));
  EXPECT_NEAR(c.seconds_at(below), c.t_hi, 1e-12 * c.t_hi);
  const double above = std::nextafter(c.b_lo, 1e300);
  EXPECT_NEAR(c.seconds_at(above), c.t_lo, 1e-9 * c.t_lo);
  EXPECT_EQ(c.seconds_at(std::numeric_limits<double>::quiet_NaN()), c.t_lo);  // not a number: the floor, never a wild read
}

TEST(Elementwise, AnotherGpuTakesTheH100sCurveScaledByHbmBandwidthAboveTheFloor) {
  SiliconTables t;
  t.elementwise = {{"h100", "mlp_act", "m", 1, 1, 1e4, 2e-6, "x"}, {"h100", "mlp_act", "m", 1, 1, 1e8, 52e-6, "x"},
                   {"h100", "attn_rope", "m", 1, 1, 1e4, 2e-6, "x"}, {"h100", "attn_rope", "m", 1, 1, 1e8, 62e-6, "x"}};
  const ElementwiseProfile h100 = elementwise_profile_for(*find_gpu("h100"), t);
  ASSERT_TRUE(h100.present);
  EXPECT_EQ(h100.act.basis, Basis::kMeasured);
  EXPECT_EQ(h100.act_scale, 1.0);
  EXPECT_NEAR(h100.seconds(h100.act, 1e8) * 1e6, 52.0, 1e-9);
  const ElementwiseProfile b200 = elementwise_profile_for(*find_gpu("b200"), t);
  ASSERT_TRUE(b200.present);
  EXPECT_EQ(b200.rope.basis, Basis::kTransferred);
  // 3.35 / 8.0 TB/s = 0.41875 above the 2 us floor: 52 us at 1e8 B on the H100 is
  // 2 + 50 x 0.41875 = 22.9375 us on the B200 (rope: 2 + 60 x 0.41875 = 27.125 us); the floor
  // stays 2 us (not 0.84)
  EXPECT_NEAR(b200.act_scale, 3.35 / 8.0, 1e-12);
  EXPECT_NEAR(b200.seconds(b200.act, 1e8) * 1e6, 22.9375, 1e-9);
  EXPECT_NEAR(b200.seconds(b200.rope, 1e8) * 1e6, 27.125, 1e-9);
  EXPECT_NEAR(b200.seconds(b200.act, 1e3) * 1e6, 2.0, 1e-9);
  EXPECT_NE(b200.act.source.find("above the floor x0.419 by HBM bandwidth"), std::string::npos);
  // without rows of either op there is no profile (the model's step keeps no such op)
  SiliconTables none;
  EXPECT_FALSE(elementwise_profile_for(*find_gpu("h100"), none).present);
}

TEST(Elementwise, MoreBytesAreNeverFasterOnAnyGpu) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> logb(std::log(100.0), std::log(4e9));
  for (const char* gpu : {"h100", "h200", "b200", "mi300x"}) {
    const ElementwiseProfile p = elementwise_profile_for(*find_gpu(gpu), builtin_silicon());
    ASSERT_TRUE(p.present) << gpu;
    for (const TimeCurve* c : {&p.act, &p.rope}) {
      for (int i = 0; i < 300; ++i) {
        double a = std::exp(logb(rng)), b = std::exp(logb(rng));
        if (a > b) std::swap(a, b);
        EXPECT_LE(p.seconds(*c, a), p.seconds(*c, b) * (1 + 1e-12)) << gpu << " " << a << " " << b;
      }
    }
  }
}

const OpCost* find_op(const Breakdown& bd, const std::string& name) {
  for (const auto& o : bd.ops) {
    if (o.op == name) return &o;
  }
  return nullptr;
}

Breakdown step_of(const char* model, const char* cluster, bool tables, shardwise::Plan plan) {
  auto m = load_model(model);
  auto c = cluster_from_preset(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  CostParams p = cost_params_for(c->gpu.name);
  p.kernel_tables = tables;
  const SimContext ctx = make_context(*m, *c, test_support::decode(1024), p);
  Breakdown bd;
  evaluate(ctx, plan, &bd);
  return bd;
}
Breakdown llama_step(bool tables, std::int32_t tp) { return step_of("llama-3.1-8b", "h100x8", tables, test_support::plan(tp, 64)); }

TEST(Elementwise, TheStepHasTheActivationAndTheRotaryEmbeddingWithTheirBytesByHand) {
  // with or without the kernel tables, each is an op of its own, priced by its measured curve
  const Breakdown off = llama_step(false, 1);
  ASSERT_NE(find_op(off, "act"), nullptr);
  ASSERT_NE(find_op(off, "rope"), nullptr);
  const Breakdown on = llama_step(true, 1);
  EXPECT_EQ(find_op(off, "act")->compute_s, find_op(on, "act")->compute_s);
  EXPECT_EQ(find_op(off, "rope")->compute_s, find_op(on, "rope")->compute_s);
  const OpCost* act = find_op(on, "act");
  const OpCost* rope = find_op(on, "rope");
  ASSERT_NE(act, nullptr);
  ASSERT_NE(rope, nullptr);
  // Llama-3.1-8B, 64 sequences: silu_and_mul reads gate and up and writes their product,
  // 64 x 3 x 14,336 x 2 B = 5,505,024 B; rope rewrites q (32 heads) and k (8) of 128 dims,
  // 2 x 64 x 40 x 128 x 2 B = 1,310,720 B
  EXPECT_EQ(act->hbm_bytes, 5'505'024.0);
  EXPECT_EQ(rope->hbm_bytes, 1'310'720.0);
  EXPECT_EQ(act->basis, Basis::kMeasured);
  EXPECT_EQ(act->comm_s, 0.0);
  // each op's time is its curve's at its bytes
  const ElementwiseProfile h100 = elementwise_profile_for(*find_gpu("h100"), builtin_silicon());
  EXPECT_DOUBLE_EQ(act->compute_s, h100.seconds(h100.act, 5'505'024.0));
  EXPECT_DOUBLE_EQ(rope->compute_s, h100.seconds(h100.rope, 1'310'720.0));
  // TP 2: each rank holds half of the MLP's features and of the heads: half the bytes
  const Breakdown tp2 = llama_step(true, 2);
  ASSERT_NE(find_op(tp2, "act"), nullptr);
  ASSERT_NE(find_op(tp2, "rope"), nullptr);
  EXPECT_EQ(find_op(tp2, "act")->hbm_bytes, 5'505'024.0 / 2);
  EXPECT_EQ(find_op(tp2, "rope")->hbm_bytes, 1'310'720.0 / 2);
}

TEST(Elementwise, TheActivationRunsOnTheFeaturesARankHoldsAfterItsReduction) {
  // ffn1 row-parallel (partial sums) into ffn2 row-parallel: a reduce-scatter leaves each of
  // the 2 ranks half the features, 64 x 3 x 7,168 x 2 = 2,752,512 B; into ffn2 column-parallel
  // an all-reduce leaves them whole, 5,505,024 B
  for (const auto& [ffn2, bytes] : {std::pair{0, 2'752'512.0}, std::pair{1, 5'505'024.0}}) {
    shardwise::Plan p = test_support::plan(2, 64);
    p.sharding[static_cast<std::size_t>(Slot::kFfn1)] = 1;  // row
    p.sharding[static_cast<std::size_t>(Slot::kFfn2)] = static_cast<std::uint8_t>(ffn2);
    const Breakdown bd = step_of("llama-3.1-8b", "h100x8", true, p);
    ASSERT_NE(find_op(bd, "act"), nullptr);
    EXPECT_EQ(find_op(bd, "act")->hbm_bytes, bytes) << "ffn2 choice " << ffn2;
  }
}

TEST(Elementwise, MoeActivationsAndMlaRopeByHand) {
  // Mixtral-8x7B, TP 2, 64 sequences, ep 1: every expert on both ranks, split by features
  // (expert TP 2); the busiest (only) group takes all 64 x 2 copies: 128 x 3 x 14,336 / 2 x 2 B
  const Breakdown mix = step_of("mixtral-8x7b", "h100x8", true, test_support::plan(2, 64));
  ASSERT_NE(find_op(mix, "expert_act"), nullptr);
  EXPECT_EQ(find_op(mix, "expert_act")->hbm_bytes, 128.0 * 3 * 7168 * 2);
  // DeepSeek-V3, TP 8, 8 sequences: the shared expert (2,048 wide, column-split over 8):
  // 8 x 3 x 256 x 2 = 12,288 B; MLA's rope: 16 heads' 64 rope dims of q and the one shared
  // rope key, 2 x 8 x 17 x 64 x 2 = 34,816 B
  const Breakdown ds = step_of("deepseek-v3", "h200x8", true, test_support::plan(8, 8));
  ASSERT_NE(find_op(ds, "shared_act"), nullptr);
  ASSERT_NE(find_op(ds, "rope"), nullptr);
  EXPECT_EQ(find_op(ds, "shared_act")->hbm_bytes, 12'288.0);
  EXPECT_EQ(find_op(ds, "rope")->hbm_bytes, 34'816.0);
  // GPT-MoE (GPT-3's learned positions) has no rotary kernel
  const Breakdown gpt = step_of("gpt-moe-1.6t", "h100x8", true, test_support::plan(8, 8));
  EXPECT_EQ(find_op(gpt, "rope"), nullptr);
  EXPECT_NE(find_op(gpt, "expert_act"), nullptr);
}

TEST(Elementwise, TwoBatchOverlapCountsEachActivationWithItsBranch) {
  // the experts' activation runs between the expert GEMMs, the shared experts' between theirs,
  // the rotary embedding with attention
  TboParts t;
  t.add("expert_act", 2.0, 0.0);
  t.add("shared_act", 1.0, 0.0);
  t.add("rope", 0.5, 0.0);
  t.add("act", 0.25, 0.0);  // a dense layer's MLP counts with attention, as its GEMMs do
  EXPECT_EQ(t.experts, 2.0);
  EXPECT_EQ(t.shared, 1.0);
  EXPECT_EQ(t.attn, 0.75);
}

TEST(Elementwise, AFolderOfOnesOwnRowsReplacesTheOpsItMeasures) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_elementwise_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "elementwise.csv") << kHead << "b200,mlp_act,mine,64,1,1e6,3,us,my lab\n"
                                         << "b200,mlp_act,mine,4096,1,1e8,20,us,my lab\n"
                                         << "b200,attn_rope,mine,4096,1,1e8,25,us,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const ElementwiseProfile b200 = elementwise_profile_for(*find_gpu("b200"), *t);
  ASSERT_TRUE(b200.present);
  EXPECT_EQ(b200.act.basis, Basis::kMeasured);
  EXPECT_EQ(b200.act_scale, 1.0);
  EXPECT_NEAR(b200.seconds(b200.act, 1e8) * 1e6, 20.0, 1e-9);
  EXPECT_NE(b200.act.source.find("elementwise.csv: b200 mlp_act"), std::string::npos);
  EXPECT_NE(b200.act.source.find(dir.string()), std::string::npos);
  // the H100's built-in rows are still there for the H100
  EXPECT_EQ(elementwise_profile_for(*find_gpu("h100"), *t).act.rows, 420);
  // a folder measuring one op keeps the other (the H100's, transferred): both ops stay
  std::ofstream(dir / "elementwise.csv") << kHead << "b200,mlp_act,mine,4096,1,1e8,20,us,my lab\n";
  auto one = load_silicon_dir(dir.string());
  ASSERT_TRUE(one.ok()) << one.error().message();
  const ElementwiseProfile mixed = elementwise_profile_for(*find_gpu("b200"), *one);
  ASSERT_TRUE(mixed.present);
  EXPECT_EQ(mixed.act.basis, Basis::kMeasured);
  EXPECT_EQ(mixed.rope.basis, Basis::kTransferred);
  EXPECT_EQ(mixed.act_scale, 1.0);
  EXPECT_NEAR(mixed.rope_scale, 3.35 / 8.0, 1e-12);
  std::ofstream(dir / "elementwise.csv") << kHead << "quantum9000,mlp_act,m,1,1,100,2,us,x\n";
  auto bad = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("row 2 silicon"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(StageCounts, ThePrefixCountsGiveWhatTheLayerWalkGives) {
  // DeepSeek-V3 (3 dense + 58 MoE layers) over uneven pipeline splits: the class counts of
  // SimContext::class_prefix against the layer-by-layer walk it replaces (an empty prefix)
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h100x64");
  ASSERT_TRUE(m.ok() && c.ok());
  const SimContext with = make_context(*m, *c, test_support::decode(2048), cost_params_for("h100"));
  SimContext without = with;
  without.class_prefix.clear();
  for (std::int32_t pp : {1, 2, 4, 7, 16}) {
    shardwise::Plan p = test_support::plan(8, 64);
    p.deg.pp = pp;
    const Metrics a = evaluate(with, p), b = evaluate(without, p);
    EXPECT_EQ(a.step_s, b.step_s) << "pp " << pp;
    EXPECT_EQ(a.memory.weights.value(), b.memory.weights.value()) << "pp " << pp;
    EXPECT_EQ(a.memory.kv_cache.value(), b.memory.kv_cache.value()) << "pp " << pp;
    GroupTables ga, gb;
    evaluate_grouped(with, p, Phase::kDecode, 64, 2048, 2049, &ga);
    evaluate_grouped(without, p, Phase::kDecode, 64, 2048, 2049, &gb);
    ASSERT_EQ(ga.stage_types, gb.stage_types) << "pp " << pp;
    for (int t = 0; t < ga.stage_types; ++t) {
      for (int g = 0; g < kNumSlotGroups; ++g) EXPECT_EQ(ga.time[t][g], gb.time[t][g]) << "pp " << pp;
    }
  }
}

}  // namespace
}  // namespace shardwise
