// The launch commands read back with each engine's own argument rules (issue 27, item 3):
// every flag printed is one the engine's parser defines, of its type and within its range
// or choices, and every scheduler bound equals the plan's simulated setting in that engine's
// semantics. The rules are transcribed from the engines' sources (no engine install needed):
//   vLLM 0.11: vllm/engine/arg_utils.py (EngineArgs.add_cli_args) at vllm-project/vllm@99d7eb5d,
//     the config dataclasses as documented for 0.10.x-0.11.x (docs.vllm.ai api/vllm/config/*);
//   SGLang 0.5: python/sglang/srt/server_args.py (ServerArgs.add_cli_args, _handle_data_parallelism,
//     check_server_args), a 0.5.4-0.5.5 copy;
//   TensorRT-LLM 1.1: tensorrt_llm/commands/serve.py at NVIDIA/TensorRT-LLM@4c05a748 and
//     tensorrt_llm/llmapi/llm_args.py (the --extra_llm_api_options YAML keys).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fields.hpp"
#include "cost/engine_limits.hpp"
#include "model/loader.hpp"
#include "report/launch_plan.hpp"
#include "support/command_words.hpp"

namespace shardwise {
namespace {

enum class Kind { kInt, kFloat, kStr, kFlag, kChoice, kJson };
struct Rule {
  Kind kind = Kind::kStr;
  double lo = -1e300, hi = 1e300;  // kInt, kFloat: inclusive (lo_open: lo excluded)
  std::set<std::string> choices;
  bool lo_open = false;
};
using Rules = std::map<std::string, Rule>;

Rule integer(double lo, double hi = 1e300) { return {Kind::kInt, lo, hi, {}, false}; }
Rule choice(std::set<std::string> c) { return {Kind::kChoice, 0, 0, std::move(c), false}; }
const Rule kStr{Kind::kStr, 0, 0, {}, false};
const Rule kFlag{Kind::kFlag, 0, 0, {}, false};

const Rules& vllm_rules() {
  static const Rules r = {
      {"--tensor-parallel-size", integer(1)},     // parallel_group "--tensor-parallel-size", "-tp": int = 1
      {"--pipeline-parallel-size", integer(1)},   // "-pp": int = 1
      {"--data-parallel-size", integer(1)},       // "-dp": int = 1, the global DP size
      {"--data-parallel-size-local", integer(1)}, // "-dpl", type=int: DP replicas on this node
      {"--data-parallel-start-rank", integer(0)}, // "-dpr", type=int
      {"--data-parallel-address", kStr},          // "-dpa", type=str
      {"--data-parallel-rpc-port", integer(1, 65535)},
      {"--data-parallel-backend", choice({"mp", "ray"})},  // type=str, post-parse assert: ray or mp
      {"--headless", kFlag},
      {"--enable-expert-parallel", kFlag},  // BooleanOptionalAction
      {"--max-num-seqs", integer(1)},       // per engine core (DP rank); max_num_batched_tokens >= it
      {"--max-model-len", integer(1)},      // human_readable_int
      {"--max-num-batched-tokens", integer(1)},
      {"--gpu-memory-utilization", {Kind::kFloat, 0.0, 1.0, {}, true}},  // Field(gt=0, le=1)
      {"--kv-cache-dtype", choice({"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"})},  // CacheDType (0.10.x)
      {"--quantization", kStr},                                                       // "-q", any string at parse time
      {"--distributed-executor-backend", choice({"ray", "mp", "uni", "external_launcher"})},
      {"--port", integer(1, 65535)},
      {"--enable-dbo", kFlag},
      {"--kv-transfer-config", {Kind::kJson, 0, 0, {}, false}},  // TypeAdapter(KVTransferConfig).validate_json
  };
  return r;
}

const Rules& sglang_rules() {
  static const Rules r = {
      {"--model-path", kStr},
      {"--tp-size", integer(1)},
      {"--dp-size", integer(1)},          // with DP attention: tp_size % dp_size == 0
      {"--enable-dp-attention", kFlag},
      {"--enable-dp-lm-head", kFlag},     // asserts enable_dp_attention
      {"--moe-dense-tp-size", choice({"1"})},  // check_server_args: in {1, None}
      {"--ep-size", integer(1)},
      {"--pp-size", integer(1)},
      {"--max-running-requests", integer(1)},  // the server's: // dp_size per rank under DP attention
      {"--context-length", integer(1)},
      {"--chunked-prefill-size", integer(1)},  // // dp_size under DP attention (_handle_data_parallelism)
      {"--mem-fraction-static", {Kind::kFloat, 0.0, 1.0, {}, true}},
      {"--kv-cache-dtype", choice({"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"})},
      {"--quantization", choice({"fp8", "w8a8_fp8", "modelopt_fp8", "modelopt_fp4", "awq", "gptq", "mxfp4"})},
      {"--moe-a2a-backend", choice({"none", "deepep", "mooncake"})},  // deepep/mooncake force ep_size = tp_size
      {"--enable-two-batch-overlap", kFlag},
      {"--num-continuous-decode-steps", integer(1)},  // num_continuous_decode_steps: int = 1
      {"--disaggregation-mode", choice({"null", "prefill", "decode"})},
      {"--disaggregation-transfer-backend", choice({"mooncake", "nixl", "ascend", "fake"})},
      {"--disaggregation-bootstrap-port", integer(1, 65535)},
      {"--nnodes", integer(1)},
      {"--node-rank", integer(0)},
      {"--dist-init-addr", kStr},
      {"--host", kStr},
      {"--port", integer(1, 65535)},
  };
  return r;
}

const Rules& trtllm_rules() {
  static const Rules r = {
      {"--backend", choice({"pytorch", "tensorrt", "_autodeploy", "trt"})},  // ChoiceWithAlias
      {"--tp_size", integer(1)},
      {"--pp_size", integer(1)},
      {"--ep_size", integer(1)},
      {"--max_batch_size", integer(1)},
      {"--max_seq_len", integer(1)},
      {"--max_num_tokens", integer(1)},
      {"--kv_cache_free_gpu_memory_fraction", {Kind::kFloat, 0.0, 1.0, {}, false}},  // 0 <= x <= 1
      {"--extra_llm_api_options", kStr},
      {"--host", kStr},
      {"--port", integer(1, 65535)},
  };
  return r;
}


// Every flag known to the engine's parser and of its type and range; the flags and values.
std::map<std::string, std::string> check_words(const std::vector<std::string>& words, const Rules& rules, const std::string& what) {
  std::map<std::string, std::string> seen;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) continue;
    const auto r = rules.find(words[i]);
    EXPECT_NE(r, rules.end()) << what << ": " << words[i] << " is not a flag of the engine's parser";
    if (r == rules.end()) continue;
    const bool has_value = r->second.kind != Kind::kFlag;
    const std::string v = has_value && i + 1 < words.size() ? words[i + 1] : "";
    seen[words[i]] = v;
    const Rule& rule = r->second;
    switch (rule.kind) {
      case Kind::kInt: {
        std::size_t used = 0;
        long long x = 0;
        try {
          x = std::stoll(v, &used);
        } catch (...) {
          used = 0;
        }
        EXPECT_TRUE(used == v.size() && !v.empty()) << what << ": " << words[i] << " takes an integer, got '" << v << "'";
        EXPECT_GE(static_cast<double>(x), rule.lo) << what << ": " << words[i];
        EXPECT_LE(static_cast<double>(x), rule.hi) << what << ": " << words[i];
        break;
      }
      case Kind::kFloat: {
        const double x = std::stod(v);
        EXPECT_TRUE(rule.lo_open ? x > rule.lo : x >= rule.lo) << what << ": " << words[i] << " " << v;
        EXPECT_LE(x, rule.hi) << what << ": " << words[i] << " " << v;
        break;
      }
      case Kind::kChoice: EXPECT_TRUE(rule.choices.count(v)) << what << ": " << words[i] << " '" << v << "' is not one of its choices"; break;
      case Kind::kJson: EXPECT_TRUE(nlohmann::json::accept(v)) << what << ": " << words[i] << " takes JSON, got " << v; break;
      case Kind::kStr: EXPECT_FALSE(v.empty() || v.rfind("--", 0) == 0) << what << ": " << words[i] << " takes a value"; break;
      case Kind::kFlag: break;
    }
  }
  return seen;
}

struct Case {
  std::string model, cluster;
  Plan plan;
  std::int64_t seqs = 0, tokens = 0;  // the serve plan's engine settings, per attention-DP rank
  std::int64_t steps = 0;             // decode iterations per scheduling decision (0: not recorded)
};

TEST(EngineArgs, LaunchCommandsParseUnderEachEnginesRulesAndCarryTheSimulatedBounds) {
  auto w = load_workload("chat-1k-1k");
  ASSERT_TRUE(w.ok());
  WorkloadOverrides ov;
  ov.mode = "serve";
  ov.rate = "4";
  ov.requests = 200;
  auto ws = apply_overrides(*w, ov);
  ASSERT_TRUE(ws.ok());
  std::vector<Case> cases;
  {
    Case c{"llama-3.1-8b", "h100x1", {}, 300, 4096};
    cases.push_back(c);
  }
  {
    Case c{"deepseek-v3", "h200x16", {}, 256, 8192};
    c.plan.deg = Degrees{1, 1, 16, 16, 1};  // attention DP 16, EP 16
    c.plan.sharding = dp_mlp_sharding();
    c.steps = 2;  // SGLang --num-continuous-decode-steps; vLLM and TensorRT-LLM have none (a note)
    cases.push_back(c);
  }
  {
    Case c{"qwen3-235b-a22b", "h100x24", {}, 512, 16384};
    c.plan.deg = Degrees{8, 1, 8, 1, 3};  // tp 8 ep 8, three replicas
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    auto m = load_model(c.model);
    auto cl = cluster_from_preset(c.cluster);
    ASSERT_TRUE(m.ok() && cl.ok());
    PlanFile f;
    f.plan = c.plan;
    f.plan.batch = 0;
    f.model = c.model;
    f.cluster = c.cluster;
    f.workload = "chat-1k-1k";
    f.max_num_seqs = c.seqs;
    f.max_num_tokens = c.tokens;
    if (c.steps > 0) f.decode_steps = c.steps;
    const std::int64_t dp = c.plan.deg.attn_dp, width = std::int64_t{c.plan.deg.tp} * dp;
    for (const ServeEngine e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
      const std::string what = c.model + " on " + c.cluster + ", " + to_string(e);
      LaunchOptions o;
      o.engine = e;
      o.model_path = "/models/checkpoint";
      auto text = launch_plan(f, "plan.json", *m, *cl, *ws, o);
      ASSERT_TRUE(text.ok()) << what << ": " << text.error().message();
      ASSERT_NE(text->find("runs this plan as it is"), std::string::npos) << what << "\n" << *text;
      switch (e) {
        case ServeEngine::kVllm: {
          auto a = check_words(test_support::command_words(*text, "vllm serve"), vllm_rules(), what);
          EXPECT_EQ(a["--max-num-seqs"], std::to_string(c.seqs)) << what;  // per DP rank, as simulated
          EXPECT_EQ(a["--max-num-batched-tokens"], std::to_string(c.tokens)) << what;
          EXPECT_GE(std::stoll(a["--max-num-batched-tokens"]), std::stoll(a["--max-num-seqs"])) << what;  // vLLM's post-parse check
          EXPECT_EQ(a["--tensor-parallel-size"], std::to_string(c.plan.deg.tp)) << what;
          if (dp > 1) {
            EXPECT_EQ(a["--data-parallel-size"], std::to_string(dp)) << what;
          }
          break;
        }
        case ServeEngine::kSglang: {
          auto a = check_words(test_support::command_words(*text, "sglang.launch_server"), sglang_rules(), what);
          EXPECT_EQ(a["--tp-size"], std::to_string(width)) << what;
          // the server's totals, which SGLang divides by dp_size under DP attention
          EXPECT_EQ(std::stoll(a["--max-running-requests"]) / dp, c.seqs) << what;
          EXPECT_EQ(std::stoll(a["--chunked-prefill-size"]) / dp, c.tokens) << what;
          if (c.steps > 1) {
            EXPECT_EQ(a["--num-continuous-decode-steps"], std::to_string(c.steps)) << what;
          } else {
            EXPECT_FALSE(a.count("--num-continuous-decode-steps")) << what;  // the default, 1
          }
          if (dp > 1) {
            EXPECT_EQ(a["--dp-size"], std::to_string(dp)) << what;
            EXPECT_TRUE(a.count("--enable-dp-attention")) << what;
            EXPECT_EQ(width % dp, 0) << what;  // tp_size % dp_size == 0
          }
          if (a.count("--moe-a2a-backend") && a["--moe-a2a-backend"] == "deepep") {
            EXPECT_EQ(a["--ep-size"], a["--tp-size"]) << what;
          }
          break;
        }
        case ServeEngine::kTrtllm: {
          auto a = check_words(test_support::command_words(*text, "trtllm-serve"), trtllm_rules(), what);
          EXPECT_EQ(a["--max_batch_size"], std::to_string(c.seqs)) << what;  // per attention-DP rank
          EXPECT_EQ(a["--max_num_tokens"], std::to_string(c.tokens)) << what;
          EXPECT_EQ(a["--tp_size"], std::to_string(width)) << what;
          // the YAML of --extra_llm_api_options: LlmArgs fields (extra = forbid)
          const auto y0 = text->find("## config.yml");
          ASSERT_NE(y0, std::string::npos) << what;
          const auto body = text->find('\n', y0) + 1;
          const std::string yaml = text->substr(body, text->find("\n\n", body) - body);
          auto doc = parse_yaml_text(yaml, "config.yml");
          ASSERT_TRUE(doc.ok()) << what << ": " << yaml;
          for (const auto& [k, v] : doc->items()) {
            EXPECT_TRUE(k == "enable_attention_dp" || k == "enable_chunked_prefill" || k == "kv_cache_config" || k == "cache_transceiver_config" ||
                        k == "disable_overlap_scheduler")
                << what << ": " << k;
          }
          EXPECT_EQ((*doc)["enable_chunked_prefill"], true) << what;  // chunked prefill, as simulated
          EXPECT_EQ((*doc)["enable_attention_dp"], dp > 1) << what;
          break;
        }
      }
    }
  }
}

}  // namespace
}  // namespace shardwise
