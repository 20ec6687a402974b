// The simulated MoE layer of DeepSeek-V3 at TP8 on the B200 (NVFP4) against TensorRT-LLM's
// own measurement of its MoE module there (data/silicon/published/trtllm_moe_b200.csv: the
// tech blog "MoE as Dense GEMM", one TP8 rank, router + top-k + quantisation + FC1 + FC2,
// the all-reduces and the shared expert outside). The trtllm profile's moe_module_floor_us
// comes from this table (its median excess over the model's ops at 1-32 tokens, recomputed
// here); nothing else is fitted to it: a check that the two ways the model prices a
// tensor-parallel MoE layer land on the two kernels they stand for (docs/silicon.md,
// "TensorRT-LLM's MoE module on the B200").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/csv.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// backend (the column's first word: TRTLLM-Gen, CUTLASS, DENSEGEMM) -> tokens -> microseconds
std::map<std::string, std::map<std::int64_t, double>> measured_module() {
  std::map<std::string, std::map<std::int64_t, double>> out;
  std::ifstream f(std::string(SHARDWISE_REPO_DIR) + "/data/silicon/published/trtllm_moe_b200.csv");
  EXPECT_TRUE(f.good());
  std::string line;
  std::getline(f, line);  // gpu,dtype,backend,op,tokens,E,topk,hidden,inter_per_rank,tp,metric,value,unit,...
  while (std::getline(f, line)) {
    const auto c = test_support::split_csv(line);
    EXPECT_EQ(c.size(), 17u) << line;
    if (c.size() != 17u) continue;
    EXPECT_EQ(c[12], "us");
    out[c[2].substr(0, c[2].find(' '))][std::stoll(c[4])] = std::stod(c[11]);
  }
  return out;
}

// The simulated module of one TP8 rank deciding `tokens` sequences under `engine`: the ops the
// measurement covers (router, the two expert GEMMs and their activation, the routed outputs'
// local sum, which carries the engine's module floor), per MoE layer, in microseconds;
// `floor` false: without the profile's moe_module_floor_us.
double simulated_module_us(const char* engine, std::int64_t tokens, bool floor = true) {
  Workload w = test_support::decode(2000);
  w.weights_dtype = DType::kFp4;
  w.kv_dtype = DType::kFp8;
  SimContext ctx = test_support::ctx_with("deepseek-v3", "b200x8", w, false, engine);
  if (!floor) ctx.engine.moe_module_floor_us = 0;
  const Breakdown bd = breakdown_step(ctx, test_support::plan(8, tokens), Phase::kDecode, tokens, 2000);
  double s = 0;
  for (const OpCost& o : bd.ops) {
    if (o.op == "router" || o.op == "expert_ffn1" || o.op == "expert_act" || o.op == "expert_ffn2" || o.op == "combine") {
      s += o.compute_s;
    }
  }
  return s * 1e6;
}

// The least-squares line of a backend's measured module time over the bytes of the experts its
// tokens touch: the expected number of the 256 experts a top-8 router touches over T tokens,
// 256 (1 - (1 - 8/256)^T), each a TP8 slice of 3 x 7168 x 256 NVFP4 weights (0.5625 bytes with
// the fp8 scale per 16): 3.097 MB. Returns {microseconds per MB, intercept}.
std::pair<double, double> module_line(const std::map<std::int64_t, double>& rows) {
  const double slice_mb = 3.0 * 7168.0 * 256.0 * 0.5625 / 1e6;
  std::vector<double> x, y;
  for (const auto& [tokens, us] : rows) {
    x.push_back(256.0 * (1.0 - std::pow(1.0 - 8.0 / 256.0, static_cast<double>(tokens))) * slice_mb);
    y.push_back(us);
  }
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return {sxy / sxx, my - sxy / sxx * mx};
}

TEST(TrtllmMoe, TheProfilesExpertStreamIsTheMeasuredSlope) {
  // By hand: one token touches 256 x (1 - (248/256)^1) = 8 slices, 24.8 MB; 384 tokens all but
  // 256 x (248/256)^384 = 1.3e-3 of them, 792.7 MB. The CUTLASS line over the 14 token counts
  // (computed 2026-11-29): 0.3325 us per MB, so 1 / 0.3325 = 3.01 MB per us = 3.01 TB/s, 0.376 of
  // the B200's 8 TB/s, with 90.5 us at no bytes (the router, the module's small kernels); the
  // TRTLLM-Gen line 0.1889 us per MB, 5.29 TB/s, 0.662.
  const auto m = measured_module();
  const auto [cutlass_slope, cutlass_at0] = module_line(m.at("CUTLASS"));
  const auto [gen_slope, gen_at0] = module_line(m.at("TRTLLM-Gen"));
  EXPECT_NEAR(cutlass_slope, 0.3325, 5e-4);
  EXPECT_NEAR(cutlass_at0, 90.5, 0.5);
  EXPECT_NEAR(gen_slope, 0.1889, 5e-4);
  const double hbm_mb_per_us = 8.0e12 / 1e12;  // 8 TB/s = 8 MB per us
  EXPECT_NEAR(1.0 / cutlass_slope / hbm_mb_per_us, 0.376, 5e-4);
  EXPECT_NEAR(1.0 / gen_slope / hbm_mb_per_us, 0.662, 5e-4);
  EXPECT_DOUBLE_EQ(load_engine_profile("trtllm")->moe_expert_stream, 0.376);
  EXPECT_DOUBLE_EQ(load_engine_profile("sglang")->moe_expert_stream, 0.0);  // the Triton fused MoE: its own table
  EXPECT_DOUBLE_EQ(load_engine_profile("vllm")->moe_expert_stream, 0.0);
}

TEST(TrtllmMoe, TheProfilesModuleFloorIsTheMeasuredExcessAtFewTokens) {
  // CUTLASS's module less the model's ops without a floor at 1, 8, 16 and 32 tokens, the experts'
  // weights streamed at the profile's measured share (computed 2026-11-29: 96.77 - 42.07 = 54.70,
  // 150.55 - 94.21 = 56.34, 200.05 - 140.87 = 59.18 and 262.73 - 205.71 = 57.02 us): their
  // median, (56.34 + 57.02) / 2 = 56.68, is the profile's 56.7
  const auto m = measured_module();
  std::vector<double> excess;
  for (const std::int64_t tokens : {1, 8, 16, 32}) excess.push_back(m.at("CUTLASS").at(tokens) - simulated_module_us("trtllm", tokens, false));
  std::sort(excess.begin(), excess.end());
  const double median = (excess[1] + excess[2]) / 2.0;
  EXPECT_NEAR(median, 56.7, 0.05);
  EXPECT_DOUBLE_EQ(load_engine_profile("trtllm")->moe_module_floor_us, 56.7);
  EXPECT_DOUBLE_EQ(load_engine_profile("sglang")->moe_module_floor_us, 0.0);
  EXPECT_DOUBLE_EQ(load_engine_profile("vllm")->moe_module_floor_us, 0.0);
  // the floor adds to every MoE layer's step as it stands: 64 tokens, 56.7 us more
  EXPECT_NEAR(simulated_module_us("trtllm", 64) - simulated_module_us("trtllm", 64, false), 56.7, 1e-6);
}

TEST(TrtllmMoe, ExplainNamesTheFloorsMeasurement) {
  // the combine op that carries the floor rests on the B200's table: measured there,
  // transferred to its architecture's other chips (GB200, B300), extrapolated to any other
  // GPU; without a floor
  // (SGLang) the combine is the model's
  Workload w = test_support::decode(2000);
  w.weights_dtype = DType::kFp8;
  for (const auto& [cluster, basis] : std::vector<std::pair<const char*, Basis>>{
           {"b200x8", Basis::kMeasured}, {"gb200x8", Basis::kTransferred}, {"b300x8", Basis::kTransferred},
           {"h200x8", Basis::kExtrapolated}}) {
    const SimContext ctx = test_support::ctx_with("deepseek-v3", cluster, w, false, "trtllm");
    const Breakdown bd = breakdown_step(ctx, test_support::plan(8, 8), Phase::kDecode, 8, 2000);
    int seen = 0;
    for (const OpCost& o : bd.ops) {
      if (o.op != "combine") continue;
      ++seen;
      EXPECT_EQ(o.basis, basis) << cluster;
      EXPECT_NE(o.table.find("trtllm_moe_b200.csv"), std::string::npos) << o.table;
      EXPECT_GE(o.compute_s, 56.7e-6) << cluster;
    }
    EXPECT_EQ(seen, 1) << cluster;  // DeepSeek-V3's one MoE layer class
  }
  const SimContext sg = test_support::ctx_with("deepseek-v3", "b200x8", w, false, "sglang");
  for (const OpCost& o : breakdown_step(sg, test_support::plan(8, 8), Phase::kDecode, 8, 2000).ops) {
    if (o.op == "combine") {
      EXPECT_EQ(o.table.find("trtllm_moe_b200.csv"), std::string::npos) << o.table;
    }
  }
}

// One expert GEMM of a DeepSeek-V3 decode step (NVFP4 experts, TP8, 64 sequences) on `cluster`
// under the trtllm profile with its stream set to `stream` (0: none, the fit's).
OpCost expert_ffn1(const char* cluster, double stream) {
  Workload w = test_support::decode(2000);
  w.weights_dtype = DType::kFp4;
  SimContext ctx = test_support::ctx_with("deepseek-v3", cluster, w, false, "trtllm");
  ctx.engine.moe_expert_stream = stream;
  for (const OpCost& o : breakdown_step(ctx, test_support::plan(8, 64), Phase::kDecode, 64, 2000).ops) {
    if (o.op == "expert_ffn1") return o;
  }
  ADD_FAILURE() << "no expert_ffn1";
  return {};
}

TEST(TrtllmMoe, ExpertGemmsStreamAtTheEnginesMeasuredShare) {
  // 64 tokens x top-8 over 256 experts touch 256 (1 - (248/256)^64) = 222.4 of them: memory-bound
  // (FC1 at 64 x 8 / 222.4 = 2.3 rows per expert). Its time is its kernel floor plus bytes over
  // HBM x share: twice the share, half the streaming time.
  const double floor_s = cost_params_for("b200").kernel_overhead_us * 1e-6;
  const OpCost at = expert_ffn1("b200x8", 0.376), twice = expert_ffn1("b200x8", 0.752);
  EXPECT_STREQ(at.bound, "memory");
  EXPECT_NEAR((at.compute_s - floor_s) / (twice.compute_s - floor_s), 2.0, 1e-9);
  // bytes / (8 TB/s x 0.376) + floor, the op's own byte count
  EXPECT_NEAR(at.compute_s, at.hbm_bytes / (8e12 * 0.376) + floor_s, 1e-12);
  // without a measured share the GPU fit's expert_mem_efficiency streams them
  const OpCost fitted = expert_ffn1("b200x8", 0.0);
  EXPECT_NEAR(fitted.compute_s, fitted.hbm_bytes / (8e12 * cost_params_for("b200").expert_mem_efficiency) + floor_s, 1e-12);
  EXPECT_EQ(fitted.basis, Basis::kModel);
  // --explain: the table it rests on, measured on the B200, transferred to its sibling, extrapolated elsewhere
  EXPECT_EQ(at.basis, Basis::kMeasured);
  EXPECT_NE(at.table.find("trtllm_moe_b200.csv"), std::string::npos) << at.table;
  EXPECT_EQ(expert_ffn1("gb200x8", 0.376).basis, Basis::kTransferred);
  EXPECT_EQ(expert_ffn1("h200x8", 0.376).basis, Basis::kExtrapolated);
}

TEST(TrtllmMoe, AFasterMeasuredStreamNeverSlowsAStep) {
  // property: over batches and both phases, a higher moe_expert_stream never lengthens the step
  Workload w = test_support::decode(2000);
  w.weights_dtype = DType::kFp4;
  SimContext slow = test_support::ctx_with("deepseek-v3", "b200x8", w, false, "trtllm");
  SimContext fast = slow;
  fast.engine.moe_expert_stream = 0.6;
  for (const std::int64_t batch : {1, 8, 64, 512}) {
    for (const Phase ph : {Phase::kDecode, Phase::kPrefill}) {
      const double a = breakdown_step(slow, test_support::plan(8, batch), ph, batch, 2000).stage_s;
      const double b = breakdown_step(fast, test_support::plan(8, batch), ph, batch, 2000).stage_s;
      EXPECT_LE(b, a * (1.0 + 1e-12)) << batch;
      // decode streams the touched experts' weights, memory-bound: strictly faster there
      if (ph == Phase::kDecode) {
        EXPECT_LT(b, a) << batch;
      }
    }
  }
}

TEST(TrtllmMoe, TheTwoTensorParallelMoePathsMatchTheTwoMeasuredKernels) {
  const auto m = measured_module();
  ASSERT_EQ(m.size(), 3u);
  ASSERT_EQ(m.at("CUTLASS").size(), 14u);
  ASSERT_EQ(m.at("TRTLLM-Gen").size(), 14u);
  // By hand, the table's 64-token row: CUTLASS 308.44 us, TRTLLM-Gen 141.68 us (2.18x).
  EXPECT_DOUBLE_EQ(m.at("CUTLASS").at(64), 308.44);
  EXPECT_DOUBLE_EQ(m.at("TRTLLM-Gen").at(64), 141.68);
  int compared = 0;
  for (const auto& [tokens, cutlass] : m.at("CUTLASS")) {
    // TensorRT-LLM's profile: its CUTLASS backend's measured stream plus the module floor. Computed
    // 2026-11-29 (session 29): -1.2% to +8.3% over the 14 token counts (without the floor -57% to
    // -7.9%)
    EXPECT_NEAR(simulated_module_us("trtllm", tokens) / cutlass, 1.0, 0.10) << tokens << " tokens";
    // vLLM's and SGLang's profiles read the engines' fused-MoE curve (the H100's Triton rows,
    // extrapolated to Blackwell at the fp4 ratio), which lands near TensorRT-LLM's other
    // backend, its TRTLLM-Gen grouped GEMM: -16.0% (16 tokens) to -10.1% (8) since the router
    // and combine ops carry the measured decode layer's floor transferred to the B200
    // (cost/layer_floor.hpp; before, the fitted 8 us: +4.2% at 1 token to -11.7% at 336).
    // Two engines' kernels, not one: a cross-check, within 17%
    EXPECT_NEAR(simulated_module_us("sglang", tokens) / m.at("TRTLLM-Gen").at(tokens), 1.0, 0.17) << tokens << " tokens";
    ++compared;
  }
  EXPECT_EQ(compared, 14);
}

}  // namespace
}  // namespace shardwise
