// Engine profiles (data/engines/*.yaml): versions, the token budget and its effect on the
// offline stream's prefill.
#include "cost/engine.hpp"

#include <gtest/gtest.h>

#include <initializer_list>

#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// A minimal engine profile around the one field a test writes between them
const char* const kProfileHead = "name: x\nlabel: X\ndefault_version: \"1.0\"\nmax_num_tokens: 8192\n";
const char* const kProfileTail =
    "scheduler:\n  order: prefill-first\n  kv_admission: on-demand\n  max_num_seqs: 64\n  kv_block_tokens: 16\n"
    "versions:\n  - since: \"0.0\"\n";

TEST(EngineProfile, VersionsCompareNumberByNumber) {
  EXPECT_EQ(compare_versions("0.9.1", "0.10"), -1);  // 9 < 10, not "9" > "1"
  EXPECT_EQ(compare_versions("0.10", "0.10.0"), 0);
  EXPECT_EQ(compare_versions("1.0rc2", "1.0"), 0);     // a suffix after the numbers is ignored
  EXPECT_EQ(compare_versions("0.19.0", "0.10"), 1);
  EXPECT_FALSE(compare_versions("abc", "1.0").has_value());
}

TEST(EngineProfile, TensorRtLlmGotGroupedKvReadsIn010) {
  auto old = load_engine_profile("trtllm", "0.9");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_FALSE(old->gqa_grouped_kv_reads);
  EXPECT_EQ(old->version, "0.9");
  auto v10 = load_engine_profile("trtllm", "0.10.1");
  ASSERT_TRUE(v10.ok());
  EXPECT_TRUE(v10->gqa_grouped_kv_reads);
  auto def = load_engine_profile("trtllm");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->version, "1.0");
  EXPECT_EQ(def->max_num_tokens, 8192);
  for (const char* e : {"vllm", "sglang"}) {
    auto p = load_engine_profile(e);
    ASSERT_TRUE(p.ok()) << e;
    EXPECT_EQ(p->name, e);
    EXPECT_TRUE(p->gqa_grouped_kv_reads);
  }
}

TEST(EngineProfile, StatedBudgetOverridesAndBadInputNamesTheFlag) {
  auto p = load_engine_profile("vllm", "", 2048);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->max_num_tokens, 2048);
  auto bad = load_engine_profile("vllm", "", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "--max-num-tokens: expected a token budget from 1 to 16777216, found 0");
  auto unknown = load_engine_profile("tgi");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(), "--engine: expected one of sglang, trtllm, vllm, found 'tgi'");
  auto version = load_engine_profile("sglang", "latest");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message().find("--engine-version"), std::string::npos);
}

// A minimal engine profile up to its scheduler block (the scheduler's fields may follow it)
std::string profile_head(const char* order) {
  return std::string("name: x\nlabel: X\ndefault_version: \"1.0\"\nmax_num_tokens: 8192\nscheduler:\n  order: ") + order +
         "\n  kv_admission: on-demand\n  max_num_seqs: 64\n  kv_block_tokens: 16\n";
}

TEST(EngineProfile, DecodeStepsAreReadAndBoundedByName) {
  const std::string head = profile_head("prefill-first");
  const std::string tail = "versions:\n  - since: \"0.0\"\n";
  auto def = parse_engine_profile(head + tail, "x.yaml", "");
  ASSERT_TRUE(def.ok()) << def.error().message();
  EXPECT_EQ(def->decode_steps, 1);  // absent: the scheduler decides every iteration
  auto eight = parse_engine_profile(head + "  decode_steps: 8\n" + tail, "x.yaml", "");
  ASSERT_TRUE(eight.ok()) << eight.error().message();
  EXPECT_EQ(eight->decode_steps, 8);
  auto zero = parse_engine_profile(head + "  decode_steps: 0\n" + tail, "x.yaml", "");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("x.yaml"), std::string::npos) << zero.error().message();
  EXPECT_NE(zero.error().message().find("decode_steps"), std::string::npos) << zero.error().message();
  for (const char* e : {"vllm", "sglang", "trtllm"}) EXPECT_EQ(load_engine_profile(e)->decode_steps, 1) << e;
  // pipeline_limits: per-micro-batch (TensorRT-LLM) or shared (the default)
  EXPECT_FALSE(def->limits_per_micro_batch);
  auto per = parse_engine_profile(head + "  pipeline_limits: per-micro-batch\n" + tail, "x.yaml", "");
  ASSERT_TRUE(per.ok()) << per.error().message();
  EXPECT_TRUE(per->limits_per_micro_batch);
  auto typo = parse_engine_profile(head + "  pipeline_limits: per-stage\n" + tail, "x.yaml", "");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("pipeline_limits"), std::string::npos) << typo.error().message();
  EXPECT_NE(typo.error().message().find("per-stage"), std::string::npos) << typo.error().message();
  EXPECT_TRUE(load_engine_profile("trtllm")->limits_per_micro_batch);
  EXPECT_FALSE(load_engine_profile("vllm")->limits_per_micro_batch);
  EXPECT_FALSE(load_engine_profile("sglang")->limits_per_micro_batch);
}

TEST(EngineProfile, CudaGraphDefaultsAreReadByVersion) {
  const std::string head = profile_head("decode-first");
  const std::string vs = "versions:\n  - since: \"0.0\"\n  - since: \"0.5\"\n    cuda_graphs: vllm\n";
  auto old = parse_engine_profile(head + vs, "x.yaml", "0.4");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old->graph_defaults, EngineTraits::GraphDefaults::kNone);  // absent: none
  auto now = parse_engine_profile(head + vs, "x.yaml", "");
  ASSERT_TRUE(now.ok()) << now.error().message();
  EXPECT_EQ(now->graph_defaults, EngineTraits::GraphDefaults::kVllm);
  auto typo = parse_engine_profile(head + "versions:\n  - since: \"0.0\"\n    cuda_graphs: sglang\n", "x.yaml", "");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("x.yaml"), std::string::npos) << typo.error().message();
  EXPECT_NE(typo.error().message().find("cuda_graphs"), std::string::npos) << typo.error().message();
  EXPECT_NE(typo.error().message().find("none or vllm"), std::string::npos) << typo.error().message();
  // the shipped profiles: vLLM's from 0.11 (its default version), none before and elsewhere
  EXPECT_EQ(load_engine_profile("vllm")->graph_defaults, EngineTraits::GraphDefaults::kVllm);
  EXPECT_EQ(load_engine_profile("vllm", "0.10")->graph_defaults, EngineTraits::GraphDefaults::kNone);
  EXPECT_EQ(load_engine_profile("trtllm")->graph_defaults, EngineTraits::GraphDefaults::kNone);
  EXPECT_EQ(load_engine_profile("sglang")->graph_defaults, EngineTraits::GraphDefaults::kNone);
}

TEST(EngineProfile, VendorsSayWhichGpusAnEngineRunsOn) {
  // the shipped profiles: TensorRT-LLM on NVIDIA only; vLLM and SGLang also on AMD (ROCm)
  EXPECT_EQ(load_engine_profile("trtllm")->vendors, std::vector<std::string>{"nvidia"});
  EXPECT_EQ(load_engine_profile("vllm")->vendors, (std::vector<std::string>{"nvidia", "amd"}));
  const GpuSpec mi = *find_gpu("mi300x"), h = *find_gpu("h100");
  EXPECT_EQ(mi.vendor, "amd");
  EXPECT_EQ(h.vendor, "nvidia");
  EXPECT_EQ(engine_gpu_mismatch(*load_engine_profile("trtllm"), mi), "trtllm is built for NVIDIA GPUs only (for AMD GPUs: vllm, sglang)");
  EXPECT_EQ(engine_gpu_mismatch(*load_engine_profile("trtllm"), h), "");
  EXPECT_EQ(engine_gpu_mismatch(*load_engine_profile("sglang"), mi), "");
  EXPECT_EQ(engine_gpu_mismatch(EngineTraits{}, mi), "");  // the generic engine runs anywhere
  auto e = engine_gpu_error(*load_engine_profile("trtllm"), mi, "--engine");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--engine");
  // a bad list names the field
  const std::string head = kProfileHead, tail = kProfileTail;
  auto bad = parse_engine_profile(head + "vendors: [tpu]\n" + tail, "x.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("vendors"), std::string::npos) << bad.error().message();
}

TEST(EngineProfile, MoeKernelSaysWhichMeasuredKernelRunsTensorParallelExperts) {
  // vLLM and SGLang run a tensor-parallel MoE layer with their Triton fused_moe_kernel (the
  // measured routed rows); TensorRT-LLM's CUTLASS MoE and the generic engine: no table
  using K = EngineTraits::MoeKernel;
  EXPECT_EQ(load_engine_profile("vllm")->moe_kernel, K::kTritonFusedMoe);
  EXPECT_EQ(load_engine_profile("sglang")->moe_kernel, K::kTritonFusedMoe);
  EXPECT_EQ(load_engine_profile("trtllm")->moe_kernel, K::kOther);
  EXPECT_EQ(EngineTraits{}.moe_kernel, K::kOther);
  const std::string head = kProfileHead, tail = kProfileTail;
  auto bad = parse_engine_profile(head + "moe_kernel: marlin\n" + tail, "x.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "x.yaml: field 'moe_kernel': expected triton-fused-moe or other, found the string \"marlin\"");
  EXPECT_EQ(parse_engine_profile(head + tail, "x.yaml", "")->moe_kernel, K::kOther);  // omitted: other
}

TEST(EngineProfile, SmallKernelsSaysWhetherTheMeasuredLayerFloorApplies) {
  // vLLM and SGLang launch a layer's small kernels separately (the measured decode layer's
  // floor); TensorRT-LLM and the generic engine do not say so (the fitted floor)
  EXPECT_TRUE(load_engine_profile("vllm")->small_kernels_separate);
  EXPECT_TRUE(load_engine_profile("sglang")->small_kernels_separate);
  EXPECT_FALSE(load_engine_profile("trtllm")->small_kernels_separate);
  EXPECT_FALSE(EngineTraits{}.small_kernels_separate);
  const std::string head = kProfileHead, tail = kProfileTail;
  auto bad = parse_engine_profile(head + "small_kernels: some\n" + tail, "x.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "x.yaml: field 'small_kernels': expected separate or fused, found the string \"some\"");
  EXPECT_FALSE(parse_engine_profile(head + "small_kernels: fused\n" + tail, "x.yaml", "")->small_kernels_separate);
  EXPECT_TRUE(parse_engine_profile(head + "small_kernels: separate\n" + tail, "x.yaml", "")->small_kernels_separate);
}

// A profile's optional number `field` (EngineTraits::*member): read as written, 0 when omitted,
// and each of `bad` refused with the file, the field and the value as typed in the message.
void expect_bounded_number(const std::string& field, double EngineTraits::*member, const std::string& good, double good_value,
                           std::initializer_list<const char*> bad) {
  const std::string head = kProfileHead, tail = kProfileTail;
  EXPECT_DOUBLE_EQ(*parse_engine_profile(head + field + ": " + good + "\n" + tail, "x.yaml", "").*member, good_value) << field;
  EXPECT_DOUBLE_EQ(*parse_engine_profile(head + tail, "x.yaml", "").*member, 0.0) << field;  // omitted: none
  for (const char* v : bad) {
    auto r = parse_engine_profile(head + field + ": " + v + "\n" + tail, "x.yaml", "");
    ASSERT_FALSE(r.ok()) << field << ": " << v;
    EXPECT_NE(r.error().message().find("x.yaml"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(field), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(v), std::string::npos) << r.error().message();
  }
}

TEST(EngineProfile, MoeModuleFloorIsReadAndBoundedByName) {
  // TensorRT-LLM's CUTLASS MoE module floor (tests/cost/trtllm_moe_test.cpp derives its 56.7 us);
  // the engines whose MoE is the fused Triton kernel and the generic engine have none
  EXPECT_DOUBLE_EQ(load_engine_profile("trtllm")->moe_module_floor_us, 56.7);
  EXPECT_DOUBLE_EQ(EngineTraits{}.moe_module_floor_us, 0.0);
  expect_bounded_number("moe_module_floor_us", &EngineTraits::moe_module_floor_us, "12.5", 12.5, {"-1", "20000", "fast"});
}

TEST(EngineProfile, MoeExpertStreamIsReadAndBoundedByName) {
  // TensorRT-LLM's CUTLASS weight stream (tests/cost/trtllm_moe_test.cpp derives its 0.376);
  // none elsewhere: the GPU fit's expert_mem_efficiency prices their grouped expert GEMMs
  EXPECT_DOUBLE_EQ(load_engine_profile("trtllm")->moe_expert_stream, 0.376);
  EXPECT_DOUBLE_EQ(EngineTraits{}.moe_expert_stream, 0.0);
  expect_bounded_number("moe_expert_stream", &EngineTraits::moe_expert_stream, "0.5", 0.5, {"-0.1", "1.5", "fast", "0.001"});
}

TEST(EngineProfile, CustomAllReduceSizesAreTheEnginesOwn) {
  // vLLM and SGLang: custom_all_reduce.py's max_size 8192 x 1024; TensorRT-LLM: its
  // workspace above 2 GPUs, 8,000,000 B; the generic engine: NCCL alone
  EXPECT_EQ(load_engine_profile("vllm")->custom_all_reduce_max_bytes, 8'388'608);
  EXPECT_EQ(load_engine_profile("sglang")->custom_all_reduce_max_bytes, 8'388'608);
  EXPECT_EQ(load_engine_profile("trtllm")->custom_all_reduce_max_bytes, 8'000'000);
  EXPECT_EQ(EngineTraits{}.custom_all_reduce_max_bytes, 0);
  const std::string head = kProfileHead, tail = kProfileTail;
  auto bad = parse_engine_profile(head + "custom_all_reduce_max_bytes: -5\n" + tail, "x.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("custom_all_reduce_max_bytes"), std::string::npos) << bad.error().message();
  EXPECT_EQ(parse_engine_profile(head + tail, "x.yaml", "")->custom_all_reduce_max_bytes, 0);  // omitted: none
}

TEST(EngineProfile, DecodeStepsFromTheFlagRunWhereTheEngineHasThem) {
  // SGLang (--num-continuous-decode-steps) and the generic engine take them; vLLM 0.11 and
  // TensorRT-LLM schedule every iteration: only 1; out of range names the flag
  auto sg = with_decode_steps(*load_engine_profile("sglang"), 4);
  ASSERT_TRUE(sg.ok()) << sg.error().message();
  EXPECT_EQ(sg->decode_steps, 4);
  EXPECT_EQ(with_decode_steps(EngineTraits{}, 8)->decode_steps, 8);
  for (const char* e : {"vllm", "trtllm"}) {
    EXPECT_EQ(with_decode_steps(*load_engine_profile(e), 1)->decode_steps, 1) << e;
    auto no = with_decode_steps(*load_engine_profile(e), 2);
    ASSERT_FALSE(no.ok()) << e;
    EXPECT_EQ(no.error().file, "--decode-steps");
    EXPECT_NE(no.error().message().find("--num-continuous-decode-steps"), std::string::npos) << no.error().message();
  }
  EXPECT_EQ(with_decode_steps(EngineTraits{}, 0).error().file, "--decode-steps");
  EXPECT_FALSE(with_decode_steps(EngineTraits{}, 1025).ok());
}

TEST(EngineProfile, TheBudgetSetsTheOfflinePrefillChunk) {
  Workload w;
  w.mode = Mode::kOffline;
  w.isl = 1024;
  w.osl = 2048;
  // 64 sequences over 8 attention groups (8 each); budget 2048 per group: clamp(2048 / 1024, 1, 8)
  // = 2 prompts per group, 16 in all; the default 8192: clamp(8, 1, 8) = 8 per group, 64 in all
  EXPECT_EQ(offline_prefill(w, 64, 8, 2048).chunk, 16);
  EXPECT_EQ(offline_prefill(w, 64, 8).chunk, 64);
  // a budget below the prompt: one prompt per group, spread over ceil(1024 / 512) = 2 iterations,
  // so the first token waits one more decode iteration: TTFT = pp x arrivals_s + tpot x (others + 1)
  const OfflinePrefill op = offline_prefill(w, 64, 8, 512);
  EXPECT_EQ(op.chunk, 8);
  const OfflineTimes t = offline_times(w, 64, 1, op, 0.01, 0.1, 0.1, 512);
  const double others = (64.0 - static_cast<double>(op.arrivals)) / 64.0;
  EXPECT_NEAR(t.ttft, 0.1 + 0.01 * (others + 1.0), 1e-12);
}

TEST(EngineProfile, ASmallerBudgetNeverRaisesOfflineThroughput) {
  // smaller prefill iterations read the weights more often: never faster (Llama-3.1-70B fp8, tp 8)
  Workload w = test_support::fixed_workload(Mode::kOffline, 2048, 256);
  w.weights_dtype = DType::kFp8;
  Plan p;
  p.deg.tp = 8;
  p.batch = 128;
  double last = 0;
  for (std::int64_t budget : {512, 1024, 2048, 4096, 8192, 16384}) {
    auto m = load_model("llama-3.1-70b");
    auto c = cluster_from_preset("h100x8");
    ASSERT_TRUE(m.ok() && c.ok());
    EngineTraits e;
    e.max_num_tokens = budget;
    const Metrics r = evaluate(make_context(*m, *c, w, cost_params_for("h100"), e), p);
    ASSERT_TRUE(r.feasible()) << r.reason;
    EXPECT_GE(r.output_tok_s_per_gpu, last - 1e-9) << budget;
    last = r.output_tok_s_per_gpu;
  }
}

}  // namespace
}  // namespace shardwise
