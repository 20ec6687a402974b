// Derived counts: hand-computed cases (arithmetic in comments) and the
// published totals of every preset.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "model/derived.hpp"
#include "model/loader.hpp"

namespace shardwise {
namespace {

ModelSpec preset(const std::string& name) {
  auto m = load_model(name);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
  return m.ok() ? *m : ModelSpec{};
}

double rel_err(double got, double want) { return std::fabs(got - want) / want; }

TEST(Params, Llama31_8bByHand) {
  const ModelSpec m = preset("llama-3.1-8b");
  const ParamCounts p = count_params(m);
  // embedding = lm_head = 128256 x 4096 = 525,336,576
  EXPECT_EQ(p.total.embedding, 525'336'576);
  EXPECT_EQ(p.total.lm_head, 525'336'576);
  // attention/layer: q 4096x4096 + k,v 4096x(8x128) x2 + o 4096x4096
  //   = 16,777,216 + 2 x 4,194,304 + 16,777,216 = 41,943,040; x32 = 1,342,177,280
  EXPECT_EQ(attention_params_per_layer(m), 41'943'040);
  EXPECT_EQ(p.total.attention, 1'342'177'280);
  // mlp/layer: 3 x 4096 x 14336 = 176,160,768; x32 = 5,637,144,576
  EXPECT_EQ(p.total.dense_mlp, 5'637'144'576);
  // norms: 32 layers x 2 x 4096 + final 4096 = 266,240
  EXPECT_EQ(p.total.norms, 266'240);
  // total = 2 x 525,336,576 + 1,342,177,280 + 5,637,144,576 + 266,240 = 8,030,261,248
  EXPECT_EQ(p.total.total(), 8'030'261'248);
  EXPECT_EQ(p.active.total(), p.total.total());  // dense: everything is active
}

TEST(Params, DeepseekV3MlaAttentionByHand) {
  const ModelSpec m = preset("deepseek-v3");
  // q: 7168x1536 + norm 1536 + 1536x(128x192) = 11,010,048 + 1,536 + 37,748,736 = 48,760,320
  // kv: 7168x(512+64) + norm 512 + 512x(128x(128+128)) = 4,128,768 + 512 + 16,777,216 = 20,906,496
  // o: 128x128x7168 = 117,440,512. Sum = 187,107,328
  EXPECT_EQ(attention_params_per_layer(m), 187'107'328);
  EXPECT_EQ(m.num_dense_layers(), 3);  // first_k_dense_replace
  EXPECT_EQ(m.num_moe_layers(), 58);
  EXPECT_EQ(m.num_mtp_layers, 1);  // excluded from the 61 layers and the totals
  EXPECT_FALSE(m.layer_is_moe[2]);
  EXPECT_TRUE(m.layer_is_moe[3]);
  const ParamCounts p = count_params(m);
  // routed: 58 x 256 x 3 x 7168 x 2048 = 653,908,770,816; active 58 x 8 x 44,040,192 = 20,434,649,088
  EXPECT_EQ(p.total.routed_experts, 653'908'770'816);
  EXPECT_EQ(p.active.routed_experts, 20'434'649'088);
}

TEST(Params, Qwen3HeadDimIsNotHiddenOverHeads) {
  const ModelSpec m = preset("qwen3-235b-a22b");
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_NE(m.num_heads * m.head_dim, m.hidden);  // 64 x 128 = 8192 != 4096
  // q 4096x8192 + k,v 4096x512 x2 + o 8192x4096 + q/k norms 2x128
  //   = 33,554,432 + 4,194,304 + 33,554,432 + 256 = 71,303,424
  EXPECT_EQ(attention_params_per_layer(m), 71'303'424);
}

TEST(Params, GptMoeShapesByHand) {
  // One layer: attention 4 x 12288^2 + biases 4 x 12288 = 604,028,928; LayerNorms 2 x 2 x 12288 = 49,152;
  // 16 experts x (2 x 12288 x 49152 + 49152 + 12288) = 19,328,335,872; router 12288 x 16 = 196,608
  // -> 19,932,610,560 per layer. Plus tied embedding 51200 x 12288 = 629,145,600 and final LayerNorm 24,576.
  EXPECT_EQ(count_params(preset("gpt-moe-1.6t")).total.total(), 1'595'238'014'976);  // 80 layers
  EXPECT_EQ(count_params(preset("gpt-moe-1.2t")).total.total(), 1'196'585'803'776);  // 60 layers
  EXPECT_LT(rel_err(1'595'238'014'976.0, 1.6e12), 0.02);
  EXPECT_LT(rel_err(1'196'585'803'776.0, 1.2e12), 0.02);
}

struct Published {
  const char* name;
  double total;
  double active;  // 0: no published figure checked
};

// Published totals: model cards and papers (docs/models.md lists the sources).
TEST(Params, EveryPresetMatchesPublishedTotals) {
  const Published rows[] = {
      {"llama-3.1-8b", 8.03e9, 0},       {"llama-3.1-70b", 70.6e9, 0},       {"llama-3.1-405b", 405.9e9, 0},
      {"llama-2-70b", 69.0e9, 0},        {"mixtral-8x7b", 46.7e9, 12.9e9},   {"mixtral-8x22b", 141e9, 39e9},
      {"deepseek-v3", 671e9, 37e9},      {"qwen3-235b-a22b", 235e9, 22e9},   {"qwen3-30b-a3b", 30.5e9, 3.3e9},
      {"gpt-oss-120b", 116.8e9, 0},      {"gpt-moe-1.2t", 1.2e12, 0},        {"gpt-moe-1.6t", 1.6e12, 0},
      {"qwen3-8b", 8.2e9, 0},            {"qwen3-32b", 32.8e9, 0},  // Qwen's model cards: 8.2B, 32.8B
  };
  for (const auto& r : rows) {
    const ParamCounts p = count_params(preset(r.name));
    const double tol = std::string(r.name).rfind("gpt-moe", 0) == 0 ? 0.02 : 0.01;
    EXPECT_LT(rel_err(static_cast<double>(p.total.total()), r.total), tol) << r.name << " total " << p.total.total();
    if (r.active > 0) {
      EXPECT_LT(rel_err(static_cast<double>(p.active.total()), r.active), 0.02) << r.name << " active " << p.active.total();
    }
  }
}

TEST(Params, EveryPresetLoads) {
  EXPECT_EQ(model_preset_names().size(), 14u);
  for (const auto& n : model_preset_names()) {
    auto m = load_model(n);
    ASSERT_TRUE(m.ok()) << n << ": " << m.error().message();
    EXPECT_EQ(static_cast<std::int64_t>(m->layer_is_moe.size()), m->num_layers);
    EXPECT_GT(count_params(*m).active.total(), 0);
    EXPECT_LE(count_params(*m).active.total(), count_params(*m).total.total());
  }
}

TEST(KvCache, Llama31_70bBf16) {
  // 2 (k, v) x 8 kv heads x 128 x 80 layers x 2 bytes = 327,680
  const ModelSpec m = preset("llama-3.1-70b");
  EXPECT_DOUBLE_EQ(kv_cache_bytes(m, DType::kBf16).per_token_all_layers().value(), 327'680);
  EXPECT_DOUBLE_EQ(kv_cache_bytes(m, DType::kFp8).per_token_all_layers().value(), 163'840);
}

TEST(KvCache, DeepseekV3CompressedLatent) {
  // 61 layers x (512 latent + 64 rope key) x 2 bytes = 70,272
  const ModelSpec m = preset("deepseek-v3");
  EXPECT_DOUBLE_EQ(kv_cache_bytes(m, DType::kBf16).per_token_all_layers().value(), 70'272);
  // a 16k sequence: 70,272 x 16384 = 1,151,336,448 bytes
  EXPECT_DOUBLE_EQ(kv_cache_bytes(m, DType::kBf16).for_context(16384).value(), 1'151'336'448);
}

TEST(KvCache, SlidingWindowLayersHoldAtMostTheirWindow) {
  const ModelSpec m = preset("gpt-oss-120b");
  const KvCacheBytes kv = kv_cache_bytes(m, DType::kBf16);
  EXPECT_EQ(kv.full_layers, 18);
  EXPECT_EQ(kv.sliding_windows.size(), 18u);
  // per layer per token: 2 x 8 x 64 x 2 bytes = 2,048
  // at 16384: 2,048 x (18 x 16384 + 18 x 128) = 2,048 x 297,216 = 608,698,368
  EXPECT_DOUBLE_EQ(kv.for_context(16384).value(), 608'698'368);
  // below the window every layer holds every token: 2,048 x 36 x 100 = 7,372,800
  EXPECT_DOUBLE_EQ(kv.for_context(100).value(), 7'372'800);
}

TEST(WeightBytes, ByDtype) {
  const ModelSpec m = preset("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::kBf16).value(), 2.0 * 8'030'261'248);
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::kFp8).value(), 8'030'261'248);
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::kFp4).value(), 0.5 * 8'030'261'248);
}

TEST(Flops, Llama31_8bAtContext1000ByHand) {
  const ModelSpec m = preset("llama-3.1-8b");
  const FlopsPerToken f = flops_per_token(m, 1000);
  // matmul: 2 x (32 x 41,943,040 + 32 x 176,160,768 + lm head 525,336,576) = 2 x 7,504,658,432
  EXPECT_DOUBLE_EQ(f.matmul.value(), 15'009'316'864.0);
  // attention: 32 layers x 2 x 32 heads x (128 + 128) x 1000 = 524,288,000
  EXPECT_DOUBLE_EQ(f.attention.value(), 524'288'000.0);
}

TEST(Flops, GrowWithContextOnlyThroughAttention) {
  for (const auto& n : model_preset_names()) {
    const ModelSpec m = preset(n);
    const FlopsPerToken a = flops_per_token(m, 1024), b = flops_per_token(m, 8192);
    EXPECT_DOUBLE_EQ(a.matmul.value(), b.matmul.value()) << n;
    EXPECT_GT(b.attention.value(), a.attention.value()) << n;
  }
}

TEST(Flops, MoeCountsOnlyActiveExperts) {
  // Mixtral-8x7B: the FFN part of the matmul FLOPs is 2 x 32 layers x top-2 x 3 x 4096 x 14336
  const ModelSpec m = preset("mixtral-8x7b");
  const double attn = 2.0 * 32 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024);
  const double ffn = 2.0 * 32 * (2 * 3.0 * 4096 * 14336 + 4096.0 * 8);  // + router 4096 x 8
  const double head = 2.0 * 32000 * 4096;
  EXPECT_DOUBLE_EQ(flops_per_token(m, 1).matmul.value(), attn + ffn + head);
}

}  // namespace
}  // namespace shardwise
