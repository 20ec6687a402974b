// trtllm-bench's caps when its command gives none (cost/bench_settings.hpp): its tuning
// heuristic (tensorrt_llm/bench/build/tuning.py) worked by hand, the formats it does not
// tune, the chunk rule of general.py, and where it stops.
#include "cost/bench_settings.hpp"

#include <gtest/gtest.h>

#include "model/derived.hpp"
#include "model/loader.hpp"

namespace shardwise {
namespace {

ModelSpec llama8b() {
  auto m = load_model("llama-3.1-8b");
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(count_params(*m).total.total(), 8030261248);  // the arithmetic below starts from it
  return *m;
}
GpuSpec gpu_of_80_gib() {
  GpuSpec g = *find_gpu("h100");
  g.hbm_capacity = Bytes(80.0 * units::kGi);
  return g;
}
Formats all(DType w, DType kv) {
  Formats f;
  f.attention = f.dense = f.experts = w;
  f.kv = kv;
  return f;
}

TEST(TrtllmBenchSettings, TheHeuristicWorkedByHand) {
  struct Case {
    const char* what;
    DType format;
    std::int64_t world, isl, osl;
    double requests;
    std::int64_t batch, tokens;
  };
  const Case cases[] = {
      // bf16: weights 8,030,261,248 x 2 B = 14.9575 GiB; 80 - 14.9575 = 65.0425 GiB, x 0.9 =
      // 58.538 GiB; KV per token 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B, x 2000 tokens =
      // 0.24414 GiB: 239.77 requests; under 256: max(64, 32 x ceil(239.77 / 32)) = 256. Tokens
      // 239.77 x (1 + 1000/1000) = 479.5, under 4096: max(2048, ...) = 2048; max(2048, 1000 + 256)
      {"bf16", DType::kBf16, 1, 1000, 1000, 239.7726, 256, 2048},
      // fp8, 1 B per weight: 7.4788 GiB; (80 - 7.4788) x 0.9 = 65.269 GiB over 65,536 B x 2000 =
      // 0.12207 GiB: 534.68 requests; 256..1024: 128 x ceil(534.68 / 128) = 640; tokens 1069 -> 2048
      {"fp8", DType::kFp8, 1, 1000, 1000, 534.6846, 640, 2048},
      // the chunk rule, 4096/4096: 65.269 GiB over 65,536 B x 8192 = 0.5 GiB: 130.54 requests ->
      // 32 x 5 = 160; tokens 261 -> 2048, but with chunked prefill off one iteration holds 4096 + 160
      {"chunk rule", DType::kFp8, 1, 4096, 4096, 130.5382, 160, 4256},
      // 16 GPUs: 1280 - 7.4788 = 1272.52 GiB x 0.9 = 1145.27; KV heads max(16, 8) = 16 double the
      // per-token estimate: 0.24414 GiB per request, 4691.0 requests, capped at 4096: 256 x 16 =
      // 4096; tokens min(8192, 32768) = 8192, not under 8192: 1024 x 8 = 8192
      {"world 16", DType::kFp8, 16, 1000, 1000, 4691.0223, 4096, 8192},
  };
  for (const Case& c : cases) {
    const auto s = trtllm_bench_settings(llama8b(), all(c.format, c.format), gpu_of_80_gib(), c.world, 1, static_cast<double>(c.isl),
                                         static_cast<double>(c.osl), c.isl, 0.9);
    ASSERT_TRUE(s.has_value()) << c.what;
    EXPECT_TRUE(s->estimated) << c.what;
    EXPECT_NEAR(s->kv_requests, c.requests, 1e-3) << c.what;
    EXPECT_EQ(s->max_batch_size, c.batch) << c.what;
    EXPECT_EQ(s->max_num_tokens, c.tokens) << c.what;
  }
}

TEST(TrtllmBenchSettings, UntunedFormatsTakeTheBuildConfigDefaults) {
  // MXFP4 (gpt-oss), int4 and int8 are not in build.py's TUNED_QUANTS: 2048 and 8192, then the chunk rule
  Formats mx = all(DType::kBf16, DType::kBf16);
  mx.experts = DType::kFp4;
  mx.mxfp4 = true;
  Formats mixed = all(DType::kFp8, DType::kFp8);
  mixed.experts = DType::kFp4;  // fp8 beside NVFP4: ModelOpt's MIXED_PRECISION
  for (const Formats& f : {mx, all(DType::kInt4, DType::kBf16), all(DType::kInt8, DType::kFp8), mixed}) {
    const auto s = trtllm_bench_settings(llama8b(), f, gpu_of_80_gib(), 1, 1, 8192, 1024, 8192, 0.9);
    ASSERT_TRUE(s.has_value());
    EXPECT_FALSE(s->estimated);
    EXPECT_EQ(s->max_batch_size, 2048);
    EXPECT_EQ(s->max_num_tokens, 8192 + 2048);
  }
}

TEST(TrtllmBenchSettings, StopsWhereTheWeightsItEstimatesDoNotFit) {
  GpuSpec small = gpu_of_80_gib();
  small.hbm_capacity = Bytes(10.0 * units::kGi);  // 14.96 GiB of bf16 weights
  std::string why;
  EXPECT_FALSE(trtllm_bench_settings(llama8b(), all(DType::kBf16, DType::kBf16), small, 1, 1, 1000, 1000, 1000, 0.9, &why).has_value());
  EXPECT_NE(why.find("15.0 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("10.0 GiB on 1 GPU"), std::string::npos) << why;
}

TEST(TrtllmBenchSettings, StopsWhereNotOneRequestsKvCacheFits) {
  // 16 GiB: 16 - 14.96 = 1.04 GiB x 0.9 = 0.94 GiB against 0.24414 GiB per 1000 + 1000 tokens
  // fits 3.8 requests; at 10000 + 10000, 2.4414 GiB each: 0.38 requests, and trtllm-bench stops
  GpuSpec g = gpu_of_80_gib();
  g.hbm_capacity = Bytes(16.0 * units::kGi);
  EXPECT_TRUE(trtllm_bench_settings(llama8b(), all(DType::kBf16, DType::kBf16), g, 1, 1, 1000, 1000, 1000, 0.9).has_value());
  std::string why;
  EXPECT_FALSE(trtllm_bench_settings(llama8b(), all(DType::kBf16, DType::kBf16), g, 1, 1, 10000, 10000, 10000, 0.9, &why).has_value());
  EXPECT_NE(why.find("0.38 requests"), std::string::npos) << why;
}

TEST(TrtllmBenchSettings, MlaIsEstimatedAsItsConfigsHeadsOfHiddenOverHeads) {
  // DeepSeek's config has num_key_value_heads 128 and no head_dim: trtllm-bench counts 2 x 61
  // x 128 x 7168/128 = 56 x 1 B = 874,496 B per token, 12.4x the 70,272 B of its fp8 latent cache
  auto m = load_model("deepseek-v3");
  ASSERT_TRUE(m.ok());
  GpuSpec g = gpu_of_80_gib();
  g.hbm_capacity = Bytes(192.0 * units::kGi);
  const Formats f = all(DType::kFp8, DType::kFp8);
  const auto s = trtllm_bench_settings(*m, f, g, 8, 1, 1024, 1024, 1024, 0.9);
  ASSERT_TRUE(s.has_value());
  const ParamBreakdown p = count_params(*m).total;
  const double weights_gib = static_cast<double>(p.total()) / units::kGi;  // every weight stored once at 1 B
  const double per_request_gib = 874496.0 * 2048.0 / units::kGi;
  EXPECT_NEAR(s->kv_requests, (8 * 192.0 - weights_gib) * 0.9 / per_request_gib, 1e-6);
}

TEST(TrtllmBenchSettings, OfflineTrtllmOnlyAndCapsGivenWin) {
  const ModelSpec m = llama8b();
  Workload w;
  w.mode = Mode::kOffline;
  w.isl = w.osl = 1000;
  w.weights_dtype = DType::kFp8;
  w.kv_dtype = DType::kFp8;
  const Degrees d;
  EngineTraits trt;
  trt.name = "trtllm";
  std::string note;
  const EngineTraits got = with_trtllm_bench_caps(trt, m, gpu_of_80_gib(), w, d, false, false, &note);
  EXPECT_EQ(got.caps_origin, "trtllm-bench");
  EXPECT_NE(note.find("trtllm-bench's caps"), std::string::npos) << note;
  // the 0.90 default fraction: as Fp8WorkedByHand
  EXPECT_EQ(got.max_num_seqs, 640);
  EXPECT_EQ(got.max_num_tokens, 2048);
  // a cap given, another engine, or another mode: unchanged
  for (const EngineTraits& e : {with_trtllm_bench_caps(trt, m, gpu_of_80_gib(), w, d, true, false),
                                with_trtllm_bench_caps(trt, m, gpu_of_80_gib(), w, d, false, true)}) {
    EXPECT_EQ(e.max_num_seqs, trt.max_num_seqs);
    EXPECT_TRUE(e.caps_origin.empty());
  }
  EngineTraits vllm = trt;
  vllm.name = "vllm";
  EXPECT_TRUE(with_trtllm_bench_caps(vllm, m, gpu_of_80_gib(), w, d, false, false).caps_origin.empty());
  Workload serve = w;
  serve.mode = Mode::kServe;
  EXPECT_TRUE(with_trtllm_bench_caps(trt, m, gpu_of_80_gib(), serve, d, false, false).caps_origin.empty());
}

TEST(TrtllmBenchSettings, PropertiesMoreMemoryNeverFewerRequestsAndAPromptAlwaysFits) {
  const ModelSpec m = llama8b();
  double last = 0;
  for (double gib : {20.0, 40.0, 80.0, 141.0, 192.0}) {
    GpuSpec g = gpu_of_80_gib();
    g.hbm_capacity = Bytes(gib * units::kGi);
    for (std::int64_t isl : {128, 1000, 8192, 32768}) {
      const auto s = trtllm_bench_settings(m, all(DType::kFp8, DType::kFp8), g, 1, 1, static_cast<double>(isl), 1000, isl, 0.9);
      ASSERT_TRUE(s.has_value());
      EXPECT_GE(s->max_num_tokens, isl + s->max_batch_size);
      EXPECT_GE(s->max_batch_size, 64);
    }
    const auto s = trtllm_bench_settings(m, all(DType::kFp8, DType::kFp8), g, 1, 1, 1000, 1000, 1000, 0.9);
    EXPECT_GE(s->kv_requests, last);
    last = s->kv_requests;
  }
}

}  // namespace
}  // namespace shardwise
