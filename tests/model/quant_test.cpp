// A checkpoint's quantization block -> the formats each component is planned in.
#include "model/quant.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "model/derived.hpp"
#include "workload/workload.hpp"

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

// Block scales are weight bytes (issue 28): NVFP4 4 bits + an e4m3 scale per 16 = 4.5 bits
// = 0.5625 B; MXFP4 4 + 8/32 = 4.25 bits = 0.53125 B; int4 group 128 (fp16 scale + 4-bit zero)
// 4 + 20/128 bits = 0.51953125 B; fp8 128x128 blocks 1 + 4/16384 B.
TEST(Quantization, BlockScalesAreCountedInWeightBytes) {
  Formats nv, mx, blocks;
  mx.mxfp4 = true;
  blocks.fp8_blocks = true;
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kFp4, nv), 0.5625);
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kFp4, mx), 0.53125);
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kInt4, nv), 0.51953125);
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kFp8, nv), 1.0);
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kFp8, blocks), 1.000244140625);
  EXPECT_DOUBLE_EQ(weight_bytes(DType::kBf16, mx), 2.0);
  // NVFP4 DeepSeek-R1 (attention bf16, dense MLP, shared and routed experts fp4, the rest bf16):
  // attention 11,413,547,008 x 2 = 22,827,094,016 B; dense + shared (1,189,085,184 + 2,554,331,136)
  // x 0.5625 = 2,105,671,680 B; routed 653,908,770,816 x 0.5625 = 367,823,683,584 B; embedding,
  // head, router, norms (926,679,040 x 2 + 106,445,312 + 881,664) x 2 = 3,921,370,112 B;
  // in all 396,677,819,392 B, of which 41.1 GB are the scales (355.6 GB at 4 bits flat)
  auto m = load_model(kData + "/models/deepseek-r1-nvfp4/config.json");
  ASSERT_TRUE(m.ok()) << m.error().message();
  const Formats f = resolve_formats(*m, Workload{});
  EXPECT_FALSE(f.mxfp4);
  const ParamBreakdown& t = count_params(*m).total;
  EXPECT_EQ(t.routed_experts, 653908770816);
  const double bytes = static_cast<double>(t.attention) * weight_bytes(f.attention, f) +
                       static_cast<double>(t.dense_mlp + t.shared_experts) * weight_bytes(f.dense, f) +
                       static_cast<double>(t.routed_experts) * weight_bytes(f.experts, f) +
                       static_cast<double>(t.embedding + t.lm_head + t.router + t.norms) * weight_bytes(f.other, f);
  EXPECT_DOUBLE_EQ(bytes, 396677819392.0);
  // a gpt-oss checkpoint (quant_method mxfp4) and --weights-dtype mxfp4 read MXFP4's scales
  auto oss = load_model("gpt-oss-120b");
  ASSERT_TRUE(oss.ok());
  EXPECT_TRUE(resolve_formats(*oss, Workload{}).mxfp4);
  WorkloadOverrides o;
  o.weights_dtype = "mxfp4";
  const Workload chat = *load_workload("chat-1k-1k");
  auto w = apply_overrides(chat, o);
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_TRUE(resolve_formats(*m, *w).mxfp4);
  o.weights_dtype = "fp4";
  EXPECT_FALSE(resolve_formats(*m, *apply_overrides(chat, o)).mxfp4);
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
