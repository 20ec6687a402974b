#include "model/loader.hpp"

#include <algorithm>
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
  EXPECT_EQ(compared, 12);
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

// Llama-4 (issue 15): text_config, interleaved MoE layers, a shared expert, the dense MLP
// of intermediate_size_mlp, chunked attention on the RoPE layers. Published totals: Scout
// 109 B, Maverick 400 B (both with the vision encoder), 17 B active.
TEST(ModelLoader, Llama4ScoutAndMaverick) {
  const std::string dir = std::string(SHARDWISE_SHARED_DIR) + "/models/new-architectures/";
  if (!std::filesystem::exists(dir + "llama-4-scout.json")) GTEST_SKIP() << "no ../shared/models/new-architectures";
  auto scout = load_model(dir + "llama-4-scout.json");
  ASSERT_TRUE(scout.ok()) << scout.error().message();
  EXPECT_EQ(scout->num_moe_layers(), 48);
  EXPECT_EQ(scout->moe.num_experts, 16);
  EXPECT_EQ(scout->moe.num_shared, 1);
  // layers 3, 7, ..., 47 are NoPE (global); the other 36 attend in chunks of 8192
  EXPECT_EQ(scout->layer_window[3], 0);
  EXPECT_EQ(scout->layer_window[0], 8192);
  EXPECT_EQ(std::count(scout->layer_window.begin(), scout->layer_window.end(), 0), 12);
  const ParamCounts s = count_params(*scout);
  // text: embedding + head 2 x 202048 x 5120 = 2.069 B; attention 48 x (2 x 5120 x 5120 +
  // 2 x 5120 x 1024) = 3.020 B; experts 48 x 17 x 3 x 5120 x 8192 = 102.7 B; router 3.9 M
  EXPECT_NEAR(static_cast<double>(s.total.total()), 107.77e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(s.total.total() + scout->vision_params) / 109e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(s.active.total()) / 17e9, 1.0, 0.02);
  auto mav = load_model(dir + "llama-4-maverick.json");
  ASSERT_TRUE(mav.ok()) << mav.error().message();
  EXPECT_EQ(mav->num_moe_layers(), 24);
  EXPECT_FALSE(mav->layer_is_moe[0]);
  EXPECT_TRUE(mav->layer_is_moe[1]);
  EXPECT_EQ(mav->ffn, 16384);
  const ParamCounts m = count_params(*mav);
  EXPECT_NEAR(static_cast<double>(m.total.total() + mav->vision_params) / 400e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(m.active.total()) / 17e9, 1.0, 0.02);
  // the text-only form reads the same fields at the root
  auto text = parse_model_config(R"({"architectures": ["Llama4ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 128,
    "intermediate_size_mlp": 512, "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
    "attention_chunk_size": 64})", "t.json", "t");
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(text->num_moe_layers(), 2);
  EXPECT_EQ(text->vision_params, 0);
}

// Phi-4 (Phi3ForCausalLM, fused qkv and gate_up): published 14.7 B parameters.
// embedding + head 2 x 100,352 x 5,120 = 1.028 B; attention 40 x (2 x 5120^2 + 2 x 5120 x 1280)
// = 2.621 B; MLP 40 x 3 x 5120 x 17920 = 11.01 B; norms 0.4 M: 14.66 B
TEST(ModelLoader, Phi4) {
  const std::string path = std::string(SHARDWISE_SHARED_DIR) + "/models/new-architectures/phi-4.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no ../shared/models/new-architectures";
  auto m = load_model(path);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_NEAR(static_cast<double>(count_params(*m).total.total()), 14.66e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(count_params(*m).total.total()) / 14.7e9, 1.0, 0.01);
  EXPECT_EQ(m->layer_window[0], 0);  // its window spans the whole context: full attention
}

// --model DIR reads DIR/config.json, and the hf_quant_config.json beside it
TEST(ModelLoader, ModelFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise-model-folder" / "My-Model";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(SHARDWISE_REPO_DIR) + "/data/models/llama-3.1-8b.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  auto m = load_model(dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->name, "My-Model");
  EXPECT_EQ(count_params(*m).total.total(), 8030261248);
  const auto empty = dir.parent_path() / "empty";
  std::filesystem::create_directories(empty);
  auto e = load_model(empty.string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("no config.json"), std::string::npos) << e.error().message();
}

// DeepSeek-V2-Lite (DeepseekV2ForCausalLM, q_lora_rank null): published 15.7 B total,
// 2.4 B active. embedding + head 2 x 102,400 x 2,048 = 0.419 B; attention 27 x (2048 x 16 x 192
// + 2048 x 576 + 512 + 512 x 16 x 256 + 16 x 128 x 2048) = 0.372 B; the dense layer 3 x 2048 x
// 10,944 = 0.067 B; 26 MoE layers x 66 experts x 3 x 2048 x 1408 = 14.84 B
TEST(ModelLoader, DeepseekV2Lite) {
  auto m = load_model(std::string(SHARDWISE_TEST_DATA) + "/models/deepseek-v2-lite");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->architecture, "DeepseekV2ForCausalLM");
  EXPECT_EQ(m->mla.q_lora_rank, 0);
  EXPECT_EQ(m->num_moe_layers(), 26);
  const ParamCounts c = count_params(*m);
  EXPECT_NEAR(static_cast<double>(c.total.total()) / 15.7e9, 1.0, 0.01);
  // the published active count leaves out the input embedding (0.21 B): 2.66 - 0.21 = 2.45 B
  EXPECT_NEAR(static_cast<double>(c.active.total() - c.active.embedding) / 2.4e9, 1.0, 0.03);
}

// The other new architectures' published totals: Kimi-K2 1.03 T (32 B active, counted
// without the 1.17 B input embedding as Moonshot counts it), gpt-oss-20b 21 B.
TEST(ModelLoader, KimiK2AndGptOss20b) {
  const std::string dir = std::string(SHARDWISE_SHARED_DIR) + "/models/new-architectures/";
  if (!std::filesystem::exists(dir + "kimi-k2.json")) GTEST_SKIP() << "no ../shared/models/new-architectures";
  auto kimi = load_model(dir + "kimi-k2.json");
  ASSERT_TRUE(kimi.ok()) << kimi.error().message();
  const ParamCounts k = count_params(*kimi);
  EXPECT_EQ(kimi->moe.num_experts, 384);
  EXPECT_NEAR(static_cast<double>(k.total.total()) / 1.03e12, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(k.active.total() - k.active.embedding) / 32e9, 1.0, 0.02);
  auto oss = load_model(dir + "gpt-oss-20b.json");
  ASSERT_TRUE(oss.ok()) << oss.error().message();
  EXPECT_NEAR(static_cast<double>(count_params(*oss).total.total()) / 21e9, 1.0, 0.01);
}

// Gemma 2 and 3 and Qwen2-MoE (issue 15), from configs written after their published
// architectures (tests/data/models/arch), against the published totals:
// Gemma-2-9B 9.24 B: tied embedding 256,000 x 3,584 = 0.918 B; attention 42 x (3584 x 4096 x 2
// + 2 x 3584 x 2048) = 1.850 B; MLP 42 x 3 x 3584 x 14336 = 6.474 B.
TEST(ModelLoader, Gemma2Gemma3Qwen2Moe) {
  const std::string dir = std::string(SHARDWISE_TEST_DATA) + "/models/arch/";
  const auto total = [](const ModelSpec& m) { return static_cast<double>(count_params(m).total.total()); };
  auto g9 = load_model(dir + "gemma-2-9b.json");
  ASSERT_TRUE(g9.ok()) << g9.error().message();
  EXPECT_TRUE(g9->tied_embeddings);
  EXPECT_EQ(g9->layer_window[0], 4096);  // local first, then global, alternating
  EXPECT_EQ(g9->layer_window[1], 0);
  EXPECT_NEAR(total(*g9) / 9.24e9, 1.0, 0.01);
  auto g27 = load_model(dir + "gemma-2-27b.json");
  ASSERT_TRUE(g27.ok()) << g27.error().message();
  EXPECT_NEAR(total(*g27) / 27.2e9, 1.0, 0.01);
  auto g3 = load_model(dir + "gemma-3-27b.json");
  ASSERT_TRUE(g3.ok()) << g3.error().message();
  EXPECT_TRUE(g3->qk_norm);
  EXPECT_EQ(g3->layer_window[5], 0);  // every sixth layer global
  EXPECT_EQ(g3->layer_window[4], 1024);
  EXPECT_NEAR((total(*g3) + static_cast<double>(g3->vision_params)) / 27.4e9, 1.0, 0.01);
  auto q = load_model(dir + "qwen1.5-moe-a2.7b.json");
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_EQ(q->moe.num_shared, 1);
  EXPECT_EQ(q->moe.shared_ffn, 5632);
  const ParamCounts c = count_params(*q);
  EXPECT_NEAR(static_cast<double>(c.total.total()) / 14.3e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(c.active.total()) / 2.7e9, 1.0, 0.02);
}


TEST(ModelLoader, HuggingFaceIdsAndLetterCaseNameThePresets) {
  const auto name_of = [](const std::string& typed) {
    auto m = load_model(typed);
    EXPECT_TRUE(m.ok()) << typed << ": " << (m.ok() ? "" : m.error().message());
    return m.ok() ? m->name : std::string();
  };
  EXPECT_EQ(name_of("deepseek-ai/DeepSeek-V3"), "deepseek-v3");
  EXPECT_EQ(name_of("DeepSeek-V3"), "deepseek-v3");
  EXPECT_EQ(name_of("meta-llama/Llama-3.1-8B-Instruct"), "llama-3.1-8b");
  EXPECT_EQ(name_of("Llama-3.1-70B-Instruct"), "llama-3.1-70b");  // without the organisation
  EXPECT_EQ(name_of("QWEN/qwen3-235b-a22b"), "qwen3-235b-a22b");
  EXPECT_EQ(preset_hf_repo("llama-3.1-8b"), "meta-llama/Llama-3.1-8B-Instruct");
  auto typo = load_model("llama3.1-8b");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().found.find("did you mean llama-3.1-8b?"), std::string::npos);
  auto far = load_model("bert-base");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().found.find("did you mean"), std::string::npos);  // nothing close: no guess
}
}  // namespace
}  // namespace shardwise
