// CUDA-graph batch padding of decode-only iterations (EngineTraits::cuda_graph_batch_sizes;
// docs/serving.md, "CUDA-graph batch padding"): the padded batch by hand, the closed-form
// decode step and the serving scheduler's iterations at it, the flag's and the plan file's
// errors, and the invariant that padding never makes a step faster.
#include <gtest/gtest.h>

#include <cmath>

#include "cost/engine.hpp"
#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "serve/serving.hpp"
#include "serve/step_times.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

EngineTraits graphs(std::vector<std::int64_t> sizes) {
  auto e = with_cuda_graph_batch_sizes(EngineTraits{}, std::move(sizes));
  EXPECT_TRUE(e.ok());
  return e.ok() ? *e : EngineTraits{};
}

TEST(CudaGraphs, ThePaddedBatchByHand) {
  const EngineTraits e = graphs({512, 128, 384, 256, 256});  // any order, repeats dropped
  EXPECT_EQ(e.cuda_graph_batch_sizes, (std::vector<std::int64_t>{128, 256, 384, 512}));
  EXPECT_EQ(graph_padded_batch(e, 157, 1), 256);   // the next size up
  EXPECT_EQ(graph_padded_batch(e, 128, 1), 128);   // a listed size runs as it is
  EXPECT_EQ(graph_padded_batch(e, 1, 1), 128);     // below the smallest: the smallest
  EXPECT_EQ(graph_padded_batch(e, 600, 1), 600);   // above the largest: eager, unpadded
  // 8 attention-DP ranks: 1,000 sequences are ceil(1000 / 8) = 125 per rank -> 128 -> 1,024
  EXPECT_EQ(graph_padded_batch(e, 1000, 8), 1024);
  // 4,100 over 8 ranks: 513 per rank, above 512: unpadded
  EXPECT_EQ(graph_padded_batch(e, 4100, 8), 4100);
  EXPECT_EQ(graph_padded_batch(EngineTraits{}, 157, 1), 157);  // none listed: no padding
  // TensorRT-LLM captures nothing above its running-sequence cap: with max_num_seqs 200 the
  // 256 graph is not there, so 150 runs unpadded and 100 still pads to 128
  EngineTraits capped = e;
  capped.name = "trtllm";
  capped.max_num_seqs = 200;
  EXPECT_EQ(graph_padded_batch(capped, 150, 1), 150);
  EXPECT_EQ(graph_padded_batch(capped, 100, 1), 128);
  // vLLM filters given sizes by its token budget, not its cap: 150 pads to 256 under a cap of 200
  // and an 8,192-token budget, and runs unpadded under a 200-token one
  capped.name = "vllm";
  capped.max_num_tokens = 8192;
  EXPECT_EQ(graph_padded_batch(capped, 150, 1), 256);
  capped.max_num_tokens = 200;
  EXPECT_EQ(graph_padded_batch(capped, 150, 1), 150);
  // the context scale: 157 real of 256 on one rank = 0.61328125; 1,000 over 8 ranks: the
  // busiest rank's 125 of 128 = 0.9765625; 1 sequence over 2 ranks padded to 1 each: 1
  EXPECT_DOUBLE_EQ(graph_kv_share(157, 256, 1), 157.0 / 256.0);
  EXPECT_DOUBLE_EQ(graph_kv_share(1000, 1024, 8), 125.0 / 128.0);
  EXPECT_DOUBLE_EQ(graph_kv_share(1, 2, 2), 1.0);
}

TEST(CudaGraphs, VllmsDefaultLadderByHand) {
  // vLLM 0.11's default capture sizes: 1, 2, 4, then every 8 up to m = min(2 x max_num_seqs,
  // 512, max_num_batched_tokens). max_num_seqs 1024, 8192 tokens: m = 512: 3 + 64 = 67 sizes
  // (vLLM 0.11's own count: "from 67 to 81" when GPT-OSS raises 512 to 992)
  const auto big = vllm_default_graph_sizes(1024, 8192);
  ASSERT_EQ(big.size(), 67u);
  EXPECT_EQ(big[3], 8);
  EXPECT_EQ(big[34], 256);
  EXPECT_EQ(big[35], 264);
  EXPECT_EQ(big.back(), 512);
  // max_num_seqs 64: m = 128: 1, 2, 4, 8, ..., 128 = 3 + 16 = 19
  const auto small = vllm_default_graph_sizes(64, 8192);
  ASSERT_EQ(small.size(), 19u);
  EXPECT_EQ(small.back(), 128);
  // a token budget of 100 caps it: m = 100: 1, 2, 4, 8..96 = 3 + 12 = 15; max_num_seqs 2: m = 4
  EXPECT_EQ(vllm_default_graph_sizes(1024, 100).size(), 15u);
  EXPECT_EQ(vllm_default_graph_sizes(1024, 100).back(), 96);
  EXPECT_EQ(vllm_default_graph_sizes(2, 8192), (std::vector<std::int64_t>{1, 2, 4}));
  // the next size by hand: 3 -> 4, 157 -> 160, 257 -> 264, 512 -> 512, 513 -> none (eager);
  // under a 100-token budget 97 -> 104 > 100: none
  EXPECT_EQ(vllm_default_graph_size(3, 1024, 8192), 4);
  EXPECT_EQ(vllm_default_graph_size(157, 1024, 8192), 160);
  EXPECT_EQ(vllm_default_graph_size(257, 1024, 8192), 264);
  EXPECT_EQ(vllm_default_graph_size(512, 1024, 8192), 512);
  EXPECT_EQ(vllm_default_graph_size(513, 1024, 8192), 0);
  EXPECT_EQ(vllm_default_graph_size(97, 1024, 100), 0);
  // vLLM's profile (0.11) applies them where no sizes are given: 157 -> 160, 300 -> 304, 513
  // unpadded (above 512); given sizes replace them; the profile's older versions, TensorRT-LLM
  // (padding off by default) and SGLang have none
  auto vllm = load_engine_profile("vllm");
  ASSERT_TRUE(vllm.ok());
  const Workload w = test_support::decode(1024);
  auto m = load_model("llama-3.1-8b");
  auto cl = cluster_from_preset("h100x1");
  ASSERT_TRUE(m.ok() && cl.ok());
  SimContext c = make_context(*m, *cl, w, cost_params_for("h100"), *vllm);
  EXPECT_TRUE(c.engine.graph_defaults_on);
  EXPECT_EQ(default_graph_sizes(c.engine), big);
  EXPECT_EQ(graph_padded_batch(c.engine, 157, 1), 160);
  EXPECT_EQ(graph_padded_batch(c.engine, 300, 1), 304);
  EXPECT_EQ(graph_padded_batch(c.engine, 513, 1), 513);
  EXPECT_EQ(graph_padded_batch(c.engine, 1000, 8), 1024);  // 8 ranks: ceil(1000 / 8) = 125 per rank -> 128, x 8
  EXPECT_TRUE(c.engine.cuda_graph_batch_sizes.empty());  // nothing written to plans or launch
  // the caps as they are when a step is priced (serve_plan and launch set them after
  // make_context): max_num_seqs 64 caps the ladder at 2 x 64 = 128, and a batch at the cap
  // pads above it (vLLM captures to twice the cap for that): 60 -> 64, 129 -> unpadded;
  // max_num_seqs 157: 157 -> 160; a token budget lowered to 100 after make_context: 97 runs
  // eagerly (104 > 100), 90 -> 96
  c.engine.max_num_seqs = 64;
  EXPECT_EQ(default_graph_sizes(c.engine).back(), 128);
  EXPECT_EQ(graph_padded_batch(c.engine, 60, 1), 64);
  EXPECT_EQ(graph_padded_batch(c.engine, 129, 1), 129);
  c.engine.max_num_seqs = 157;
  EXPECT_EQ(graph_padded_batch(c.engine, 157, 1), 160);
  c.engine.max_num_seqs = 1024;
  c.engine.max_num_tokens = 100;
  EXPECT_EQ(graph_padded_batch(c.engine, 97, 1), 97);
  EXPECT_EQ(graph_padded_batch(c.engine, 90, 1), 96);
  c.engine.max_num_tokens = 8192;
  auto given = with_cuda_graph_batch_sizes(*vllm, {256});
  ASSERT_TRUE(given.ok());
  const SimContext g = make_context(*m, *cl, w, cost_params_for("h100"), *given);
  EXPECT_FALSE(g.engine.graph_defaults_on);
  EXPECT_TRUE(default_graph_sizes(g.engine).empty());
  EXPECT_EQ(graph_padded_batch(g.engine, 157, 1), 256);
  Workload spec = w;
  spec.spec_tokens = 2;  // vLLM's sizes count tokens: not modelled under drafts
  EXPECT_FALSE(make_context(*m, *cl, spec, cost_params_for("h100"), *vllm).engine.graph_defaults_on);
  for (const auto& [name, version] : {std::pair<const char*, const char*>{"vllm", "0.10"}, {"trtllm", ""}, {"sglang", ""}}) {
    auto e = load_engine_profile(name, version);
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_FALSE(make_context(*m, *cl, w, cost_params_for("h100"), *e).engine.graph_defaults_on) << name << " " << version;
  }
}

TEST(CudaGraphs, TheFlagAndItsErrors) {
  auto ok = parse_cuda_graph_batch_sizes("128,256,384,512");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<std::int64_t>{128, 256, 384, 512}));
  for (const char* bad : {"", "128,,256", "128;256", "12x", "-4", "128,"}) {
    auto e = parse_cuda_graph_batch_sizes(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().file, "--cuda-graph-batch-sizes");
    EXPECT_NE(e.error().message().find(std::string("found '") + bad + "'"), std::string::npos) << e.error().message();
  }
  auto zero = with_cuda_graph_batch_sizes(EngineTraits{}, {0, 8});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("found 0"), std::string::npos) << zero.error().message();
  EXPECT_FALSE(with_cuda_graph_batch_sizes(EngineTraits{}, {}).ok());
  EXPECT_FALSE(with_cuda_graph_batch_sizes(EngineTraits{}, {kMaxCudaGraphBatch + 1}).ok());
  EXPECT_EQ(cuda_graph_batch_sizes_text({1, 2, 4}), "1,2,4");
}

TEST(CudaGraphs, TheDecodeStepRunsAtThePaddedBatchWithTheRealSequencesKv) {
  // Llama-3.1-8B on one H100, 157 sequences at context 1,024 padded to 256: the step is the
  // one of 256 sequences at context round(1024 x 157 / 256) = round(628) = 628 (the KV read
  // of 157 x 1,024 tokens), its throughput that of the 157 real sequences
  const Workload w = test_support::decode(1024);
  SimContext c = test_support::ctx_for("llama-3.1-8b", "h100x1", w);
  const Plan p = test_support::plan(1, 157);
  const Metrics plain = evaluate(c, p);
  c.engine = graphs({128, 256});
  const Metrics padded = evaluate(c, p);
  ASSERT_TRUE(plain.feasible() && padded.feasible()) << plain.reason << padded.reason;
  const double at256 = step_time(c, p, Phase::kDecode, 256, 628, 629).iteration_s;
  EXPECT_NEAR(padded.tpot_s, at256, 1e-12 * at256);
  EXPECT_GT(padded.tpot_s, plain.tpot_s);  // 99 padding rows computed
  EXPECT_NEAR(padded.output_tok_s_per_gpu, 157.0 / padded.tpot_s, 1e-9 * padded.output_tok_s_per_gpu);
}

TEST(CudaGraphs, OnlyDecodeOnlyIterationsArePaddedInTheScheduler) {
  Workload w = test_support::serve_workload(512, 64);
  SimContext c = test_support::ctx_for("llama-3.1-8b", "h100x1", w);
  c.engine = graphs({64, 128});
  const Plan p = test_support::plan(1, 0);
  StepTimes st(c, p);
  // 40 sequences at context 1,000: padded to 64 at context 1000 x 40 / 64 = 625
  EXPECT_DOUBLE_EQ(st.graph_decode(40, 1000.0), st.decode(64, 625.0));
  EXPECT_DOUBLE_EQ(st.mixed(40, 1000.0, 0, 0), st.graph_decode(40, 1000.0));
  // an iteration with prompt tokens runs eagerly: the unpadded decodes
  EXPECT_NEAR(st.mixed(40, 1000.0, 256, 1), st.prefill(256, 1) + st.decode(40, 1000.0) - st.decode(1, 1.0), 1e-12);
  EXPECT_DOUBLE_EQ(st.graph_decode(200, 1000.0), st.decode(200, 1000.0));  // above 128: eager
}

TEST(CudaGraphs, PaddingNeverMakesAStepFaster) {
  Workload w = test_support::serve_workload(512, 64);
  SimContext plain = test_support::ctx_for("qwen3-30b-a3b", "h100x2", w);
  SimContext padded = plain;
  padded.engine = graphs({1, 2, 4, 8, 16, 32, 64, 128, 256});
  Plan p = test_support::plan(1, 0);
  p.deg.attn_dp = 2;
  p.deg.ep = 2;
  StepTimes a(plain, p, /*exact=*/true), b(padded, p, /*exact=*/true);  // the cost layer at every point, no grid
  for (std::int64_t n = 1; n <= 400; n += 7) {
    for (const double ctx : {100.0, 1000.0, 8000.0}) {
      EXPECT_GE(b.graph_decode(n, ctx), a.graph_decode(n, ctx) * (1 - 1e-9)) << n << " at " << ctx;
    }
  }
}

TEST(CudaGraphs, ThePlanFileCarriesThemAndRefusesBadOnes) {
  PlanFile f;
  f.plan = test_support::plan(1, 8);
  f.model = "llama-3.1-8b";
  f.cluster = "h100x1";
  f.workload = "chat-1k-1k";
  f.cuda_graph_batch_sizes = std::vector<std::int64_t>{128, 256};
  const std::string text = plan_to_json(f);
  EXPECT_NE(text.find("\"cuda_graph_batch_sizes\""), std::string::npos) << text;
  auto back = parse_plan_json(text, "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->cuda_graph_batch_sizes.has_value());
  EXPECT_EQ(*back->cuda_graph_batch_sizes, (std::vector<std::int64_t>{128, 256}));
  {  // a list read is kept ascending, repeats dropped, as the flag's
    std::string t = text;
    const auto key = t.find("\"cuda_graph_batch_sizes\"");
    const auto open = t.find('[', key);
    t.replace(open, t.find(']', open) - open + 1, "[512, 128, 128]");
    auto sorted = parse_plan_json(t, "plan.json");
    ASSERT_TRUE(sorted.ok()) << sorted.error().message();
    EXPECT_EQ(*sorted->cuda_graph_batch_sizes, (std::vector<std::int64_t>{128, 512}));
  }
  std::string many = "[";
  for (int i = 1; i <= 257; ++i) many += std::to_string(i) + (i < 257 ? ", " : "]");
  for (const std::string& bad : {std::string("[]"), std::string("[0, 8]"), std::string("\"128,256\""), std::string("[1.5]"),
                                 std::string("[65537]"), many}) {
    // the list's value replaced, however the writer laid it out
    std::string t = text;
    const auto key = t.find("\"cuda_graph_batch_sizes\"");
    const auto open = t.find('[', key);
    t.replace(open, t.find(']', open) - open + 1, bad);
    auto e = parse_plan_json(t, "plan.json");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().file, "plan.json");
    EXPECT_NE(e.error().field.find("cuda_graph_batch_sizes"), std::string::npos) << e.error().message();
  }
}

}  // namespace
}  // namespace shardwise
