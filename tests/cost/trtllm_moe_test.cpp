// The simulated MoE layer of DeepSeek-V3 at TP8 on the B200 (NVFP4) against TensorRT-LLM's
// own measurement of its MoE module there (data/silicon/published/trtllm_moe_b200.csv: the
// tech blog "MoE as Dense GEMM", one TP8 rank, router + top-k + quantisation + FC1 + FC2,
// the all-reduces and the shared expert outside). Neither is fitted to it: a check that the
// two ways the model prices a tensor-parallel MoE layer land on the two kernels they stand for
// (docs/silicon.md, "TensorRT-LLM's MoE module on the B200").
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

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
// local sum), per MoE layer, in microseconds.
double simulated_module_us(const char* engine, std::int64_t tokens) {
  Workload w = test_support::decode(2000);
  w.weights_dtype = DType::kFp4;
  w.kv_dtype = DType::kFp8;
  const SimContext ctx = test_support::ctx_with("deepseek-v3", "b200x8", w, false, engine);
  const Breakdown bd = breakdown_step(ctx, test_support::plan(8, tokens), Phase::kDecode, tokens, 2000);
  double s = 0;
  for (const OpCost& o : bd.ops) {
    if (o.op == "router" || o.op == "expert_ffn1" || o.op == "expert_act" || o.op == "expert_ffn2" || o.op == "combine") {
      s += o.compute_s;
    }
  }
  return s * 1e6;
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
    // from 64 tokens on, where most routed experts have a token (the blog's "low-latency"
    // regime and above); below it TensorRT-LLM's CUTLASS module carries a fixed ~55 us the
    // model does not (at one token 96.8 us measured against 42.3 simulated: not asserted)
    if (tokens < 64) continue;
    // TensorRT-LLM's profile prices its MoE with the Blackwell fit's expert stream, which the
    // end-to-end rows it was fitted on make CUTLASS's, its default backend (measured
    // 2026-11-29: 5.5-10.2% low over 64-384 tokens)
    EXPECT_NEAR(simulated_module_us("trtllm", tokens) / cutlass, 1.0, 0.12) << tokens << " tokens";
    // vLLM's and SGLang's profiles read the engines' fused-MoE curve (the H100's Triton rows,
    // extrapolated to Blackwell at the fp4 ratio), which lands on TensorRT-LLM's other
    // backend, its TRTLLM-Gen grouped GEMM (7.7-11.7% low over 64-384 tokens)
    EXPECT_NEAR(simulated_module_us("sglang", tokens) / m.at("TRTLLM-Gen").at(tokens), 1.0, 0.15) << tokens << " tokens";
    ++compared;
  }
  EXPECT_EQ(compared, 9);  // 64, 128, 192, 208, 224, 256, 272, 336, 384
}

}  // namespace
}  // namespace shardwise
