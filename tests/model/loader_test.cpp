#include "model/loader.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "model/derived.hpp"

namespace shardwise {
namespace {

// The presets under data/models must be the real configs from ../shared/models.
TEST(ModelLoader, PresetsAreTheSharedConfigs) {
  const std::filesystem::path shared = std::filesystem::path(SHARDWISE_SHARED_DIR) / "models";
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << "no ../shared/models beside the checkout";
  int compared = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared)) {
    if (e.path().extension() != ".json") continue;
    auto from_path = load_model(e.path().string());
    ASSERT_TRUE(from_path.ok()) << from_path.error().message();
    auto from_preset = load_model(e.path().stem().string());
    ASSERT_TRUE(from_preset.ok()) << e.path().stem() << ": " << from_preset.error().message();
    ModelSpec a = *from_path, b = *from_preset;
    a.source = b.source;
    a.name = b.name;
    EXPECT_EQ(a, b) << e.path();
    ++compared;
  }
  EXPECT_EQ(compared, 10);
}

TEST(ModelLoader, UnknownPresetListsPresets) {
  auto m = load_model("llama-9");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("deepseek-v3"), std::string::npos);
  EXPECT_NE(m.error().message().find("'llama-9'"), std::string::npos);
}

TEST(ModelLoader, FallsBackToModelType) {
  auto m = parse_model_config(R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000})", "t.json", "t");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->architecture, "LlamaForCausalLM");
  EXPECT_EQ(m->num_kv_heads, 4);  // HF default: kv heads = heads
  EXPECT_EQ(m->head_dim, 64);
}

TEST(ModelLoader, MistralSlidingWindowAndQwen2Biases) {
  auto mistral = parse_model_config(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "sliding_window": 64})",
                                    "m.json", "m");
  ASSERT_TRUE(mistral.ok()) << mistral.error().message();
  EXPECT_EQ(mistral->layer_window, (std::vector<std::int64_t>{64, 64}));
  auto qwen2 = parse_model_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "tie_word_embeddings": true})",
                                  "q.json", "q");
  ASSERT_TRUE(qwen2.ok()) << qwen2.error().message();
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->o_bias);
  // attention/layer: q 256x256 + k,v 256x128 x2 + o 256x256 + biases 256 + 2x128 = 196,608 + 512 = 197,120
  EXPECT_EQ(attention_params_per_layer(*qwen2), 197'120);
  EXPECT_EQ(count_params(*qwen2).total.lm_head, 0);  // tied
}

TEST(ModelLoader, Qwen3DenseHasQkNorm) {
  auto q = parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 512, "vocab_size": 1000})",
                              "q3.json", "q3");
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_TRUE(q->qk_norm);
  EXPECT_EQ(q->head_dim, 128);
}

TEST(ModelLoader, Qwen3MoeSparseStepAndMlpOnlyLayers) {
  auto q = parse_model_config(R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 256, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512, "vocab_size": 1000,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "decoder_sparse_step": 2,
    "mlp_only_layers": [3]})", "q3m.json", "q3m");
  ASSERT_TRUE(q.ok()) << q.error().message();
  // MoE where (i + 1) % 2 == 0 and i not listed: layer 1 only (layer 3 is listed)
  EXPECT_EQ(q->layer_is_moe, (std::vector<bool>{false, true, false, false}));
}

TEST(ModelLoader, DeepseekWithoutQLora) {
  auto d = parse_model_config(R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "q_lora_rank": null, "kv_lora_rank": 32,
    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 64, "n_shared_experts": 1, "first_k_dense_replace": 1})", "ds.json", "ds");
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->mla.q_lora_rank, 0);
  // q: 256 x 4 x 24 = 24,576; kv: 256 x 40 + 32 + 32 x 4 x 32 = 10,240 + 32 + 4,096 = 14,368; o: 4 x 16 x 256 = 16,384
  EXPECT_EQ(attention_params_per_layer(*d), 24'576 + 14'368 + 16'384);
}

}  // namespace
}  // namespace shardwise
