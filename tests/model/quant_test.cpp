// A checkpoint's quantization block -> the formats each component is planned in.
#include "model/quant.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "model/loader.hpp"

namespace shardwise {
namespace {

const std::string kData = SHARDWISE_TEST_DATA;
const std::string kShared = SHARDWISE_SHARED_DIR;

TEST(Quantization, DeepSeekFp8BlockScaleQuantisesEveryLinearLayer) {
  auto m = load_model("deepseek-v3");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->quant.method, "fp8");
  EXPECT_EQ(m->quant.attention, DType::kFp8);
  EXPECT_EQ(m->quant.dense, DType::kFp8);
  EXPECT_EQ(m->quant.experts, DType::kFp8);
  EXPECT_FALSE(m->quant.kv.has_value());
}

TEST(Quantization, Mxfp4QuantisesTheExpertsOnly) {
  auto m = load_model("gpt-oss-120b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->quant.method, "mxfp4");
  EXPECT_EQ(m->quant.experts, DType::kFp4);
  EXPECT_FALSE(m->quant.attention.has_value());
  EXPECT_FALSE(m->quant.dense.has_value());
}

TEST(Quantization, UnquantisedConfigHasNoFormats) {
  auto m = load_model("llama-3.1-70b");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->quant.method.empty());
  EXPECT_EQ(m->quant, CheckpointFormats{});
}

TEST(Quantization, ModeloptNvfp4KeepsExcludedAttentionAndSetsTheKvCache) {
  // as nvidia/DeepSeek-R1-FP4: NVFP4 MLPs and experts, self_attn excluded, FP8 KV cache
  auto m = load_model(kData + "/models/deepseek-r1-nvfp4/config.json");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->quant.method, "modelopt:NVFP4");
  EXPECT_FALSE(m->quant.attention.has_value());  // excluded: bf16
  EXPECT_EQ(m->quant.dense, DType::kFp4);         // "mlp.gate" is the router, not the MLP
  EXPECT_EQ(m->quant.experts, DType::kFp4);
  EXPECT_EQ(m->quant.kv, DType::kFp8);
}

TEST(Quantization, HfQuantConfigBesideTheConfigWins) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_quant_test";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kShared + "/models/new-architectures/deepseek-r1.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "hf_quant_config.json")
      << R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
            "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}})";
  auto m = load_model((dir / "config.json").string());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->quant.method, "modelopt:NVFP4");  // not the config's own fp8 block
  EXPECT_EQ(m->quant.experts, DType::kFp4);
  EXPECT_EQ(m->quant.kv, DType::kFp8);
  std::ofstream(dir / "hf_quant_config.json") << R"({"quantization": {"quant_algo": "INT3"}})";
  auto bad = load_model((dir / "config.json").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("hf_quant_config.json: field 'quantization.quant_algo'"), std::string::npos)
      << bad.error().message();
  std::filesystem::remove_all(dir);
}

TEST(Quantization, HfQuantConfigBesideMeansTheConfigBlockIsNotRead) {
  // an hf_quant_config.json describes the checkpoint: the config's own block, even one shardwise
  // cannot read, is not looked at
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_quant_beside";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "quantization_config": {"quant_method": "bitsandbytes"}})";
  std::ofstream(dir / "hf_quant_config.json") << R"({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}})";
  auto m = load_model((dir / "config.json").string());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->quant.method, "modelopt:FP8");
  EXPECT_EQ(m->quant.dense, DType::kFp8);
  // a KV-only checkpoint (quant_algo null) quantises no weight
  std::ofstream(dir / "hf_quant_config.json") << R"({"quantization": {"quant_algo": null, "kv_cache_quant_algo": "FP8"}})";
  auto kv = load_model((dir / "config.json").string());
  ASSERT_TRUE(kv.ok()) << kv.error().message();
  EXPECT_EQ(kv->quant.method, "modelopt:kv-only");
  EXPECT_FALSE(kv->quant.dense.has_value());
  EXPECT_EQ(kv->quant.kv, DType::kFp8);
  std::ofstream(dir / "hf_quant_config.json") << R"({"quantization": {"quant_algo": "MIXED_PRECISION"}})";
  auto mixed = load_model((dir / "config.json").string());
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message().find("--weights-dtype"), std::string::npos) << mixed.error().message();
  std::filesystem::remove_all(dir);
}

TEST(Quantization, UnknownMethodNamesTheFieldAndTheMethodsRead) {
  const std::string cfg = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128,
    "quantization_config": {"quant_method": "bitsandbytes"}})";
  auto m = parse_model_config(cfg, "c.json", "c");
  ASSERT_FALSE(m.ok());
  const std::string msg = m.error().message();
  EXPECT_NE(msg.find("c.json: field 'quantization_config.quant_method'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("modelopt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'bitsandbytes'"), std::string::npos) << msg;
}

TEST(Quantization, AwqAndCompressedTensors) {
  const std::string head = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "quantization_config": )";
  auto awq = parse_model_config(head + R"({"quant_method": "awq", "bits": 4}})", "a.json", "a");
  ASSERT_TRUE(awq.ok()) << awq.error().message();
  EXPECT_EQ(awq->quant.dense, DType::kInt4);
  auto ct = parse_model_config(head + R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
    {"num_bits": 8, "type": "float"}}}, "ignore": ["lm_head"]}})", "ct.json", "ct");
  ASSERT_TRUE(ct.ok()) << ct.error().message();
  EXPECT_EQ(ct->quant.attention, DType::kFp8);
  EXPECT_EQ(ct->quant.dense, DType::kFp8);
}

}  // namespace
}  // namespace shardwise
