// `shardwise launch`: what each serving engine can express, the nearest plan it
// runs otherwise, and the flags printed (only names checked against each
// engine's documentation, docs/launch.md).
#include "report/launch.hpp"
#include "report/launch_plan.hpp"
#include "report/bench_command.hpp"
#include "report/format.hpp"

#include "search/search.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "model/loader.hpp"
#include "support/command_words.hpp"

namespace shardwise {
namespace {

struct Case {
  SimContext ctx;
  SearchSpace space;
};
Case make_case(const std::string& model, const std::string& cluster, const std::string& workload, DType dt = DType::kBf16) {
  auto m = load_model(model);
  auto c = cluster_from_preset(cluster);
  auto w = load_workload(workload);
  EXPECT_TRUE(m.ok() && c.ok() && w.ok());
  w->weights_dtype = dt;
  w->kv_dtype = dt;
  return {make_context(*m, *c, *w, cost_params_for(c->gpu.name)), make_space(*m, *c, *w)};
}

// The plan with vLLM's sharding at the largest batch that fits and meets the SLO (what the
// engines would be launched with; the value moves with the calibration, the checks do not).
Plan at_max_batch(const Case& c, Plan p);

Plan plan_of(int tp, int dp, int ep, std::int64_t batch, int replicas) {
  Plan p;
  p.deg.tp = tp;
  p.deg.attn_dp = dp;
  p.deg.ep = ep;
  p.deg.replicas = replicas;
  p.batch = batch;
  return p;
}

Plan at_max_batch(const Case& c, Plan p) {
  p.sharding = engine_sharding(ServeEngine::kVllm, c.ctx, p.deg);
  p.batch = 0;
  const Metrics m = evaluate(c.ctx, p);
  EXPECT_TRUE(m.feasible()) << m.reason;
  p.batch = m.batch;
  return p;
}

TEST(Launch, DegreeLimitsPerEngine) {
  const Case ds = make_case("deepseek-v3", "h100x64", "decode-16k");
  const Case ll = make_case("llama-3.1-70b", "h100x8", "chat-1k-1k");
  // TensorRT-LLM: attention DP means attention TP 1
  EXPECT_FALSE(engine_limits(ServeEngine::kTrtllm, ds.ctx, plan_of(2, 32, 64, 640, 1)).empty());
  EXPECT_TRUE(engine_limits(ServeEngine::kTrtllm, ds.ctx, plan_of(1, 64, 16, 640, 1)).empty());  // any ep: moe_tp = 64 / 16
  // vLLM: experts over all tp x dp ranks or none; no attention DP for a dense model
  EXPECT_FALSE(engine_limits(ServeEngine::kVllm, ds.ctx, plan_of(1, 64, 16, 640, 1)).empty());
  EXPECT_TRUE(engine_limits(ServeEngine::kVllm, ds.ctx, plan_of(1, 64, 64, 640, 1)).empty());
  EXPECT_TRUE(engine_limits(ServeEngine::kVllm, ds.ctx, plan_of(8, 1, 1, 64, 8)).empty());
  EXPECT_FALSE(engine_limits(ServeEngine::kVllm, ll.ctx, plan_of(4, 2, 1, 272, 1)).empty());
  // SGLang expresses every degree
  EXPECT_TRUE(engine_limits(ServeEngine::kSglang, ds.ctx, plan_of(2, 32, 16, 640, 1)).empty());
  EXPECT_TRUE(engine_limits(ServeEngine::kSglang, ll.ctx, plan_of(4, 2, 1, 272, 1)).empty());
}

TEST(Launch, EngineShardingUnderAttentionDp) {
  const Case ds = make_case("deepseek-v3", "h100x64", "decode-16k");
  const Degrees dp = plan_of(1, 64, 64, 1, 1).deg, tp = plan_of(8, 1, 8, 1, 8).deg;
  const auto ffn1 = static_cast<std::size_t>(Slot::kFfn1);
  // vLLM and TensorRT-LLM run dense MLPs data-parallel under attention DP; SGLang runs them with TP over all ranks
  EXPECT_EQ(engine_sharding(ServeEngine::kVllm, ds.ctx, dp)[ffn1], find_choice(static_cast<int>(Slot::kFfn1), "none"));
  EXPECT_EQ(engine_sharding(ServeEngine::kTrtllm, ds.ctx, dp)[ffn1], find_choice(static_cast<int>(Slot::kFfn1), "none"));
  EXPECT_EQ(engine_sharding(ServeEngine::kSglang, ds.ctx, dp), megatron_sharding());
  for (auto e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) EXPECT_EQ(engine_sharding(e, ds.ctx, tp), megatron_sharding());
}

TEST(Launch, ExactWhenTheEngineExpressesThePlan) {
  const Case ds = make_case("deepseek-v3", "h100x64", "decode-16k", DType::kFp8);
  Plan p = at_max_batch(ds, plan_of(1, 64, 64, 0, 1));
  // lm_head and embedding split over a tp group of one rank change nothing: still exact
  p.sharding[static_cast<std::size_t>(Slot::kLmHead)] = 0;
  for (auto e : {ServeEngine::kVllm, ServeEngine::kTrtllm}) {
    const EngineFit f = fit_engine(e, ds.ctx, ds.space, p);
    EXPECT_TRUE(f.exact) << to_string(e);
    EXPECT_TRUE(f.differences.empty());
    EXPECT_EQ(f.runnable, p);
  }
  // SGLang too, with --moe-dense-tp-size 1 (its dense MLPs data-parallel under DP attention, attention TP 1)
  EXPECT_TRUE(fit_engine(ServeEngine::kSglang, ds.ctx, ds.space, p).exact);
  // with attention TP 2 SGLang's dense MLPs run with TP over all ranks: a difference with a cost, and the nearest plan
  Plan q = plan_of(2, 32, 64, 1024, 1);
  q.sharding = p.sharding;
  const EngineFit s = fit_engine(ServeEngine::kSglang, ds.ctx, ds.space, q);
  EXPECT_FALSE(s.exact);
  ASSERT_GE(s.differences.size(), 2u);
  bool ffn1 = false;
  for (const auto& d : s.differences) ffn1 = ffn1 || d.find("ffn1 sharded on 'none'") != std::string::npos;
  EXPECT_TRUE(ffn1);
  ASSERT_TRUE(s.runnable_found);
  EXPECT_TRUE(s.runnable_metrics.feasible());
  const auto options = engine_shardings(ServeEngine::kSglang, ds.ctx, s.runnable.deg);
  EXPECT_NE(std::find(options.begin(), options.end(), s.runnable.sharding), options.end());
}

TEST(Launch, AnInfeasiblePlanIsNeverRunAsItIs) {
  const Case ll = make_case("llama-3.1-70b", "h100x8", "decode-16k");
  const Plan p = plan_of(8, 1, 1, 4096, 1);  // 4096 sequences of 16k context: far over memory
  ASSERT_FALSE(evaluate(ll.ctx, p).feasible());
  const EngineFit f = fit_engine(ServeEngine::kVllm, ll.ctx, ll.space, p);
  EXPECT_FALSE(f.exact);
  ASSERT_FALSE(f.differences.empty());
  EXPECT_NE(f.differences[0].find("does not run here"), std::string::npos);
  if (f.runnable_found) {
    EXPECT_TRUE(f.runnable_metrics.feasible());
  }
}

TEST(Launch, NearestPlanIsRunnableAndFeasible) {
  const Case ll = make_case("llama-3.1-70b", "h100x8", "chat-1k-1k");
  Plan p = plan_of(4, 2, 1, 272, 1);
  p.sharding[static_cast<std::size_t>(Slot::kAttnNorm)] = 1;  // tokens: sequence parallelism, in no engine
  for (auto e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
    const EngineFit f = fit_engine(e, ll.ctx, ll.space, p);
    EXPECT_FALSE(f.exact);
    ASSERT_TRUE(f.runnable_found) << to_string(e);
    EXPECT_TRUE(engine_limits(e, ll.ctx, f.runnable).empty());
    EXPECT_EQ(f.runnable.sharding, engine_sharding(e, ll.ctx, f.runnable.deg));
    EXPECT_TRUE(f.runnable_metrics.feasible());
    EXPECT_EQ(f.runnable.deg.total_gpus(), 8);
  }
}

// every --flag of the output, for the allow-list check
std::set<std::string> flags(const std::string& text) {
  std::set<std::string> out;
  const std::regex re("(^|[ \\n])(--[a-z0-9_-]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) out.insert((*it)[2]);
  return out;
}

TEST(Launch, MultiNodeDeepSeekCommands) {
  const Case ds = make_case("deepseek-v3", "h100x64", "decode-16k", DType::kFp8);
  const Plan p = at_max_batch(ds, plan_of(1, 64, 64, 0, 1));
  const std::string per_rank = std::to_string(p.batch / 64);  // the largest batch that meets the SLO, per DP rank
  const PlanFile file{p, "deepseek-v3", "h100x64", "decode-16k", {}};
  // the flag names checked against each engine's documentation (docs/launch.md)
  const std::set<std::string> vllm_ok{"--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size", "--enable-expert-parallel",
                                      "--max-num-seqs", "--max-model-len", "--max-num-batched-tokens", "--gpu-memory-utilization",
                                      "--kv-cache-dtype", "--quantization", "--port", "--data-parallel-size-local",
                                      "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-start-rank", "--headless",
                                      "--distributed-executor-backend", "--data-parallel-backend", "--head", "--address", "--block"};
  const std::set<std::string> sglang_ok{"--model-path", "--tp-size", "--dp-size", "--enable-dp-attention", "--ep-size", "--pp-size",
                                        "--max-running-requests", "--context-length", "--chunked-prefill-size", "--mem-fraction-static",
                                        "--kv-cache-dtype", "--quantization", "--nnodes", "--node-rank", "--dist-init-addr", "--host", "--port",
                                        "--enable-dp-lm-head", "--moe-dense-tp-size"};
  const std::set<std::string> trt_ok{"--backend", "--tp_size", "--pp_size", "--ep_size", "--max_batch_size", "--max_seq_len",
                                     "--max_num_tokens", "--kv_cache_free_gpu_memory_fraction", "--extra_llm_api_options", "--host",
                                     "--port", "--allow-run-as-root"};
  LaunchOptions o;
  o.engine = ServeEngine::kVllm;
  const std::string v = launch_text(ds.ctx, file, fit_engine(o.engine, ds.ctx, ds.space, p), o);
  for (const char* want : {"vllm serve deepseek-ai/DeepSeek-V3", "--data-parallel-size 64", "--enable-expert-parallel",
                           "--max-model-len 16385", "--kv-cache-dtype fp8", "--data-parallel-size-local 8", "--data-parallel-start-rank 56",
                           "--headless", "## node 7 (node rank 7)", "--data-parallel-address '<HEAD_NODE_IP>'"}) {
    EXPECT_NE(v.find(want), std::string::npos) << want;
  }
  EXPECT_NE(v.find("--max-num-seqs " + per_rank + " "), std::string::npos) << per_rank;
  EXPECT_EQ(v.find("--quantization"), std::string::npos);  // DeepSeek-V3's checkpoint is already fp8
  EXPECT_GE(flags(v).size(), 14u);  // the check below sees the flags
  for (const auto& f : flags(v)) EXPECT_TRUE(vllm_ok.count(f)) << "vllm: " << f;

  o.engine = ServeEngine::kSglang;
  const std::string s = launch_text(ds.ctx, file, fit_engine(o.engine, ds.ctx, ds.space, p), o);
  for (const char* want : {"python3 -m sglang.launch_server", "--tp-size 64", "--enable-dp-attention", "--ep-size 64", "--nnodes 8",
                           "--node-rank 7", "--dist-init-addr '<HEAD_NODE_IP>:50000'", "--kv-cache-dtype fp8_e4m3", "--moe-dense-tp-size 1",
                           "--enable-dp-lm-head", "sglang runs this plan as it is"}) {
    EXPECT_NE(s.find(want), std::string::npos) << want;
  }
  // SGLang divides --chunked-prefill-size by the DP size under DP attention: the simulated
  // budget per attention group (8,192) times the 64 groups = 524,288
  EXPECT_NE(s.find("--chunked-prefill-size " + std::to_string(ds.ctx.engine.max_num_tokens * 64) + " "), std::string::npos);
  EXPECT_GE(flags(s).size(), 14u);
  for (const auto& f : flags(s)) EXPECT_TRUE(sglang_ok.count(f)) << "sglang: " << f;

  o.engine = ServeEngine::kTrtllm;
  const std::string t = launch_text(ds.ctx, file, fit_engine(o.engine, ds.ctx, ds.space, p), o);
  for (const char* want : {"enable_attention_dp: true", "enable_chunked_prefill: true", "dtype: fp8", "--tp_size 64", "--ep_size 64",
                           "trtllm-llmapi-launch trtllm-serve", "-np 64"}) {
    EXPECT_NE(t.find(want), std::string::npos) << want;
  }
  EXPECT_NE(t.find("--max_batch_size " + per_rank + " "), std::string::npos) << per_rank;
  EXPECT_GE(flags(t).size(), 10u);
  for (const auto& f : flags(t)) EXPECT_TRUE(trt_ok.count(f)) << "trtllm: " << f;
}

TEST(Launch, SingleNodeInstancesGetTheirOwnGpusAndPorts) {
  const Case ll = make_case("llama-3.1-70b", "h100x8", "chat-1k-1k");
  const Plan p = plan_of(4, 1, 1, 136, 2);
  const PlanFile file{p, "llama-3.1-70b", "h100x8", "chat-1k-1k", {}};
  LaunchOptions o;
  o.engine = ServeEngine::kVllm;
  const EngineFit f = fit_engine(o.engine, ll.ctx, ll.space, p);
  EXPECT_TRUE(f.exact);
  const std::string v = launch_text(ll.ctx, file, f, o);
  // max model length: isl 1024 + osl 1024 = 2048
  for (const char* want : {"CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve meta-llama/Llama-3.1-70B-Instruct", "CUDA_VISIBLE_DEVICES=4,5,6,7",
                           "--port 8001", "--max-model-len 2048", "--max-num-seqs 136", "--tensor-parallel-size 4"}) {
    EXPECT_NE(v.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(v.find("--data-parallel"), std::string::npos);
}

TEST(Launch, EdgeLayouts) {
  LaunchOptions o;
  // a cluster smaller than a node: instances only on the GPUs it has
  {
    const Case c = make_case("mixtral-8x7b", "h100x4", "chat-1k-1k");
    const Plan p = plan_of(2, 1, 1, 64, 2);
    o.engine = ServeEngine::kVllm;
    const std::string t = launch_text(c.ctx, {p, "mixtral-8x7b", "h100x4", "chat-1k-1k", {}}, fit_engine(o.engine, c.ctx, c.space, p), o);
    EXPECT_NE(t.find("CUDA_VISIBLE_DEVICES=2,3"), std::string::npos);
    EXPECT_EQ(t.find("CUDA_VISIBLE_DEVICES=4,5"), std::string::npos);
  }
  // DP ranks of 3 GPUs (pp 3) do not fill nodes of 8: one Ray cluster instead of per-node start ranks
  {
    const Case c = make_case("gpt-oss-120b", "h100x48", "decode-16k");
    Plan p = plan_of(1, 16, 16, 256, 1);
    p.deg.pp = 3;
    p.sharding = engine_sharding(ServeEngine::kVllm, c.ctx, p.deg);
    o.engine = ServeEngine::kVllm;
    const EngineFit f = fit_engine(o.engine, c.ctx, c.space, p);
    const std::string t = launch_text(c.ctx, {p, "gpt-oss-120b", "h100x48", "decode-16k", {}}, f, o);
    ASSERT_TRUE(f.exact) << (f.differences.empty() ? "" : f.differences[0]);
    EXPECT_NE(t.find("--data-parallel-backend ray"), std::string::npos);
    EXPECT_EQ(t.find("--data-parallel-start-rank"), std::string::npos);
    // gpt-oss ships MXFP4 experts: a bf16 plan gets a note
    EXPECT_NE(t.find("ships in fp4"), std::string::npos);
  }
  // prefill: room for the prompt and one output token (4096 + 1); per-rank batch rounds up (50 / 16 = 3.1 -> 4)
  {
    Case c = make_case("deepseek-v3", "h100x16", "prefill-4k", DType::kFp8);
    c.ctx.workload.ttft_ms.reset();  // throughput only: 50 prompts of 4k take longer than the preset's SLO
    Plan p = plan_of(1, 16, 16, 50, 1);
    p.sharding = engine_sharding(ServeEngine::kTrtllm, c.ctx, p.deg);
    o.engine = ServeEngine::kTrtllm;
    const EngineFit f = fit_engine(o.engine, c.ctx, c.space, p);
    ASSERT_TRUE(f.exact) << (f.differences.empty() ? "" : f.differences[0]);
    const std::string t = launch_text(c.ctx, {p, "deepseek-v3", "h100x16", "prefill-4k", {}}, f, o);
    EXPECT_NE(t.find("--max_seq_len 4097"), std::string::npos);
    EXPECT_NE(t.find("--max_batch_size 4"), std::string::npos);
  }
}

TEST(Launch, EngineNamesAndRepos) {
  EXPECT_EQ(parse_serve_engine("trtllm"), ServeEngine::kTrtllm);
  EXPECT_FALSE(parse_serve_engine("tgi").has_value());
  EXPECT_EQ(hf_repo_for("qwen3-235b-a22b"), "Qwen/Qwen3-235B-A22B");
  EXPECT_EQ(hf_repo_for("gpt-moe-1.6t"), "");  // synthetic: a placeholder and a note
}

TEST(Launch, EachReplicaNamesItsGpusAndNodesAndAStraddleIsFlagged) {
  // gb200x144: nodes of 4, NVLink domains of 72. Two 64-GPU replicas: GPUs 0..63 (nodes 0..15),
  // GPUs 64..127 (nodes 16..31), across the boundary at 72
  const Case gb = make_case("deepseek-v3", "gb200x144", "decode-16k", DType::kFp8);
  Plan p = plan_of(8, 8, 64, 512, 2);
  const PlanFile file{p, "deepseek-v3", "gb200x144", "decode-16k", {}};
  LaunchOptions o;
  o.engine = ServeEngine::kSglang;
  const std::string s = launch_text(gb.ctx, file, fit_engine(o.engine, gb.ctx, gb.space, p), o);
  EXPECT_NE(s.find("# replica 0   GPUs 0..63 on nodes 0..15\n"), std::string::npos) << s;
  EXPECT_NE(s.find("# replica 1   GPUs 64..127 on nodes 16..31 (straddles NVLink domains 0 and 1"), std::string::npos) << s;
  // on H100 nodes of 8 the same replicas straddle nothing
  const Case h = make_case("deepseek-v3", "h100x128", "decode-16k", DType::kFp8);
  const std::string t = launch_text(h.ctx, PlanFile{p, "deepseek-v3", "h100x128", "decode-16k", {}, std::nullopt}, fit_engine(o.engine, h.ctx, h.space, p), o);
  EXPECT_NE(t.find("# replica 1   GPUs 64..127 on nodes 8..15\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("straddles"), std::string::npos);
}

// plan --engine (search_for_engine): every plan searched is one the engine runs as planned,
// so the launch of its winner is exact; the free search's winner may not be.
TEST(Launch, EngineAwareSearchOnlyPicksWhatTheEngineRuns) {
  for (const char* model : {"llama-3.1-70b", "qwen3-30b-a3b"}) {
    const Case c = make_case(model, "h100x16", "chat-1k-1k", DType::kFp8);
    for (ServeEngine e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
      SearchOptions o;
      o.record_points = true;
      const SearchResult r = search_for_engine(c.ctx, c.space, o, e);
      ASSERT_TRUE(r.found) << model << " " << to_string(e);
      EXPECT_TRUE(engine_limits(e, c.ctx, r.best).empty()) << to_string(e);
      // one of the engine's shardings (slots without an op in the model read as Megatron's)
      bool listed = false;
      for (const Sharding& sh : engine_shardings(e, c.ctx, r.best.deg)) {
        listed = listed || canonical_sharding(sh, c.ctx.graph) == canonical_sharding(r.best.sharding, c.ctx.graph);
      }
      EXPECT_TRUE(listed) << to_string(e) << ": " << sharding_to_string(r.best.sharding);
      EXPECT_TRUE(fit_engine(e, c.ctx, c.space, r.best).exact) << model << " " << to_string(e);
      // a dense model never gets vLLM's data-parallel attention
      if (e == ServeEngine::kVllm && !c.ctx.model.is_moe()) {
        for (const EvalPoint& pt : r.points) EXPECT_EQ(pt.deg.attn_dp, 1);
      }
    }
  }
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {
// shell_quote: plain words as they are, anything else in single quotes with ' as '\''
TEST(ShellQuote, ByHand) {
  EXPECT_EQ(shell_quote("/models/ds-v3_fp8"), "/models/ds-v3_fp8");
  EXPECT_EQ(shell_quote("CUDA_VISIBLE_DEVICES=0,1"), "CUDA_VISIBLE_DEVICES=0,1");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("x; touch PWNED"), "'x; touch PWNED'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(id)"), "'$(id)'");
  EXPECT_EQ(shell_quote("<HEAD_NODE_IP>:50000"), "'<HEAD_NODE_IP>:50000'");
}

// The benchmark command: the planned traffic in each tool's own conventions
// (vllm/benchmarks/datasets.py: uniform in [L (1 - r), L (1 + r)]; SGLang's compute_random_lens:
// uniform in [L r, L]; aiperf: a normal of the given mean and standard deviation).
std::map<std::string, std::string> flags_of(const std::string& text, const std::string& first) {
  return test_support::command_flags(text, first);
}

TEST(BenchCommand, ReplaysThePlannedTrafficInEachToolsConventions) {
  Case c = make_case("llama-3.1-8b", "h100x1", "chat-1k-1k");
  Workload& w = c.ctx.workload;
  w.mode = Mode::kServe;
  w.serve.arrivals = {Arrivals::Kind::kPoisson, 7.5, 0};
  w.serve.requests = 3000;
  w.serve.seed = 9;
  LengthDist in;
  in.kind = LengthDist::Kind::kUniform;
  in.min = 800;
  in.max = 1000;
  w.serve.input = in;
  LengthDist out = in;
  out.min = 80;
  out.max = 100;
  w.serve.output = out;
  BenchTarget t;
  t.model = "meta-llama/Llama-3.1-8B-Instruct";
  t.host = "10.0.0.1";
  t.port = 8123;
  t.plan_file = "my plan.json";
  const std::string v = bench_text(c.ctx, ServeEngine::kVllm, t);
  auto f = flags_of(v, "vllm bench serve");
  EXPECT_EQ(f["--base-url"], "http://10.0.0.1:8123");
  EXPECT_EQ(f["--random-input-len"], "900");       // centre of [800, 1000]
  EXPECT_EQ(f["--random-output-len"], "90");       // centre of [80, 100]
  EXPECT_EQ(f["--random-range-ratio"], "0.111111");  // (1,000 - 800) / (1,000 + 800) = 1/9: [900 x 8/9, 900 x 10/9] = [800, 1,000]
  EXPECT_EQ(f["--num-prompts"], "3000");
  EXPECT_EQ(f["--request-rate"], "7.5");
  EXPECT_EQ(f["--burstiness"], "1.0");             // Gamma shape 1: Poisson
  EXPECT_EQ(f["--seed"], "9");
  EXPECT_TRUE(f.count("--ignore-eos") && f.count("--save-result") && f.count("--save-detailed"));
  EXPECT_EQ(f["--result-filename"], bench_result_file(ServeEngine::kVllm));
  EXPECT_NE(v.find("--plan 'my plan.json'"), std::string::npos);  // quoted for the shell
  const std::string s = bench_text(c.ctx, ServeEngine::kSglang, t);
  f = flags_of(s, "sglang.bench_serving");
  EXPECT_EQ(f["--random-input-len"], "1000");  // [L r, L] = [800, 1000]
  EXPECT_EQ(f["--random-output-len"], "100");
  EXPECT_EQ(f["--random-range-ratio"], "0.8");
  EXPECT_EQ(f["--request-rate"], "7.5");
  EXPECT_EQ(f.count("--max-concurrency"), 0U);
  EXPECT_EQ(f["--output-file"], bench_result_file(ServeEngine::kSglang));
  const std::string a = bench_text(c.ctx, ServeEngine::kTrtllm, t);
  f = flags_of(a, "aiperf profile");
  EXPECT_EQ(f["--isl"], "900");
  EXPECT_EQ(f["--isl-stddev"], "57.7");  // 200 / sqrt(12) = 57.74
  EXPECT_EQ(f["--osl"], "90");
  EXPECT_EQ(f["--request-rate-mode"], "poisson");
  EXPECT_EQ(f["--request-count"], "3000");
  EXPECT_EQ(f["--extra-inputs"], "ignore_eos:true");
  // a closed loop: as many requests in flight as users, at an unbounded rate
  w.serve.arrivals = {Arrivals::Kind::kClosed, 0, 64};
  w.serve.requests = 0;
  f = flags_of(bench_text(c.ctx, ServeEngine::kVllm, t), "vllm bench serve");
  EXPECT_EQ(f["--request-rate"], "inf");
  EXPECT_EQ(f["--max-concurrency"], "64");
  EXPECT_EQ(f["--num-prompts"], "2000");  // max(2,000, 10 x 64)
  f = flags_of(bench_text(c.ctx, ServeEngine::kTrtllm, t), "aiperf profile");
  EXPECT_EQ(f["--concurrency"], "64");
  EXPECT_EQ(f.count("--request-rate"), 0U);
  // automatic request counts: three minutes of Poisson arrivals when that is more than 2,000
  w.serve.arrivals = {Arrivals::Kind::kPoisson, 50.0, 0};
  EXPECT_EQ(bench_requests(w, 1, 0), 9000);  // 50 x 180
  w.serve.arrivals.rate = 1.0;
  EXPECT_EQ(bench_requests(w, 1, 0), kDefaultRequests);
}


// Llama-3.1-8B on two H100s under chat-1k-1k: the inputs, and a plan file of `p` naming them
struct LaunchInputs {
  ModelSpec m;
  ClusterSpec c;
  Workload w;
  PlanFile f;
};
LaunchInputs llama8b_on_two_h100(const Plan& p) {
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("h100x2");
  auto w = load_workload("chat-1k-1k");
  EXPECT_TRUE(m.ok() && c.ok() && w.ok());
  LaunchInputs in{*m, *c, *w, {}};
  in.f.plan = p;
  in.f.model = "llama-3.1-8b";
  in.f.cluster = "h100x2";
  in.f.workload = "chat-1k-1k";
  return in;
}

// A serve plan launches what was simulated: the running-sequence cap it records (not the closed
// form's batch) in each engine's flag, and its serving prediction in the header.
TEST(Launch, AServePlanLaunchesItsSimulatedRunningSequenceCap) {
  LaunchInputs in = llama8b_on_two_h100(plan_of(1, 1, 1, 0, 1));
  const ModelSpec& m = in.m;
  const ClusterSpec& c = in.c;
  const Workload& w = in.w;
  PlanFile& f = in.f;
  WorkloadOverrides ov;
  ov.mode = "serve";
  ov.rate = "4";
  ov.requests = 400;
  ov.tpot_ms = 30;  // the closed form's batch is bound near 190 by it; the cap is 300
  auto ws = apply_overrides(w, ov);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  f.plan.sharding = engine_sharding(ServeEngine::kVllm, make_context(m, c, *ws, cost_params_for("h100")), f.plan.deg);
  f.max_num_seqs = 300;
  f.max_num_tokens = 4096;
  for (const auto& [engine, flag, want] : {std::tuple{ServeEngine::kVllm, "--max-num-seqs", "300"},
                                           {ServeEngine::kSglang, "--max-running-requests", "300"},
                                           {ServeEngine::kTrtllm, "--max_batch_size", "300"}}) {
    LaunchOptions o;
    o.engine = engine;
    auto text = launch_plan(f, "plan.json", m, c, *ws, o);
    ASSERT_TRUE(text.ok()) << text.error().message();
    const std::string first = engine == ServeEngine::kVllm ? "vllm serve" : engine == ServeEngine::kSglang ? "sglang.launch_server" : "trtllm-serve";
    auto flags = flags_of(*text, first);
    EXPECT_EQ(flags[flag], want) << to_string(engine);
    EXPECT_NE(text->find("at most 300 running sequences per attention-DP rank"), std::string::npos);
    EXPECT_NE(text->find("# serving    Poisson at 4 requests/s, simulated over 400 requests"), std::string::npos) << *text;
  }
}
// TensorRT-LLM runs max_batch_size sequences per pipeline micro-batch: a TP1 x PP2 plan whose
// serve settings cap 300 running sequences per lane launches --max_batch_size 300 and says it
// is per micro-batch; a closed-form plan of batch 200 launches --max_batch_size 100 (200 / 2
// lanes), where vLLM, one cap per rank, takes --max-num-seqs 200.
TEST(Launch, TensorRtLlmsBatchSizeIsPerPipelineMicroBatch) {
  Plan p = plan_of(1, 1, 1, 200, 1);
  p.deg.pp = 2;
  LaunchInputs in = llama8b_on_two_h100(p);
  const ModelSpec& m = in.m;
  const ClusterSpec& c = in.c;
  const Workload& w = in.w;
  PlanFile& f = in.f;
  for (const auto& [engine, flag, want] : {std::tuple{ServeEngine::kTrtllm, "--max_batch_size", "100"}, {ServeEngine::kVllm, "--max-num-seqs", "200"}}) {
    f.plan.sharding = engine_sharding(engine, make_context(m, c, w, cost_params_for("h100")), f.plan.deg);
    LaunchOptions o;
    o.engine = engine;
    auto text = launch_plan(f, "plan.json", m, c, w, o);
    ASSERT_TRUE(text.ok()) << text.error().message();
    auto flags = flags_of(*text, engine == ServeEngine::kVllm ? "vllm serve" : "trtllm-serve");
    EXPECT_EQ(flags[flag], want) << to_string(engine) << "\n" << *text;
  }
  f.max_num_seqs = 300;
  f.plan.sharding = engine_sharding(ServeEngine::kTrtllm, make_context(m, c, w, cost_params_for("h100")), f.plan.deg);
  LaunchOptions o;
  o.engine = ServeEngine::kTrtllm;
  auto text = launch_plan(f, "plan.json", m, c, w, o);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(flags_of(*text, "trtllm-serve")["--max_batch_size"], "300");
  EXPECT_NE(text->find("at most 300 running sequences per attention-DP rank and pipeline micro-batch"), std::string::npos) << *text;
}

// One model-path convention: a preset gives its repository; a folder holding weights (or its
// config.json) that folder; a config file among other files, or a folder without weights,
// the placeholder with a note (never the folder of unrelated JSON files).
TEST(Launch, TheModelPathIsACheckpointOrAPlaceholder) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "shardwise_launch_model_path";
  fs::remove_all(root);
  fs::create_directories(root / "ckpt");
  fs::create_directories(root / "bare");
  const std::string cfg = std::string(SHARDWISE_TEST_DATA) + "/models/deepseek-v2-lite/config.json";
  for (const char* d : {"ckpt", "bare"}) fs::copy_file(cfg, root / d / "config.json");
  std::ofstream(root / "ckpt" / "model-00001-of-00002.safetensors") << "x";
  auto m = load_model((root / "ckpt").string());
  auto c = cluster_from_preset("h100x8");
  ASSERT_TRUE(m.ok() && c.ok()) << (m.ok() ? "" : m.error().message());
  const SimContext ctx = make_context(*m, *c, Workload{}, cost_params_for("h100"));
  const auto served = [&](const std::string& model, std::vector<std::string>* notes) {
    PlanFile f;
    f.model = model;
    return served_model(ctx, f, LaunchOptions{}, notes);
  };
  std::vector<std::string> notes;
  EXPECT_EQ(served((root / "ckpt").string(), &notes), (root / "ckpt").string());
  EXPECT_EQ(served((root / "ckpt" / "config.json").string(), &notes), (root / "ckpt").string());
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(served((root / "bare").string(), &notes), "<path-to-checkpoint>");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not a checkpoint folder"), std::string::npos) << notes[0];
  notes.clear();
  EXPECT_EQ(served(cfg, &notes), "<path-to-checkpoint>");  // a config.json with no weights beside it
  EXPECT_EQ(served(std::string(SHARDWISE_TEST_DATA) + "/models/arch/gemma-2-9b.json", &notes), "<path-to-checkpoint>");  // among other configs
  EXPECT_EQ(served("Llama-3.1-8B", &notes), "meta-llama/Llama-3.1-8B-Instruct");
  fs::remove_all(root);
}

// A disaggregated plan launches each pool with its own settings: the prefill pool's from its
// block (disaggregated.prefill.engine_settings), the decode pool's from the top level.
TEST(Launch, EachPoolLaunchesItsOwnSettings) {
  auto f = load_plan_file(std::string(SHARDWISE_TEST_DATA) + "/good/plan-disagg.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  f->max_num_seqs = 48;            // the decode pool's
  f->max_num_tokens = 8192;
  f->prefill_max_num_seqs = 512;   // the prefill pool's
  f->prefill_max_num_tokens = 2048;
  auto m = load_model(f->model);
  auto c = cluster_from_preset(f->cluster);
  auto w = load_workload(f->workload);
  ASSERT_TRUE(m.ok() && c.ok() && w.ok());
  auto ws = apply_overrides(*w, f->overrides);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  LaunchOptions o;
  o.engine = ServeEngine::kVllm;
  auto text = launch_plan(*f, "plan.json", *m, *c, *ws, o);
  ASSERT_TRUE(text.ok()) << text.error().message();
  const auto pre_at = text->find("### the prefill pool"), dec_at = text->find("### the decode pool");
  ASSERT_NE(pre_at, std::string::npos);
  ASSERT_NE(dec_at, std::string::npos);
  const auto pre = flags_of(text->substr(pre_at, dec_at - pre_at), "vllm serve");
  const auto dec = flags_of(text->substr(dec_at), "vllm serve");
  EXPECT_EQ(pre.at("--max-num-seqs"), "512");
  EXPECT_EQ(pre.at("--max-num-batched-tokens"), "2048");
  EXPECT_EQ(dec.at("--max-num-seqs"), "48");
  EXPECT_EQ(dec.at("--max-num-batched-tokens"), "8192");
  // and the simulate of the plan file runs the pools so: its JSON carries both blocks back
  const std::string json = plan_to_json(*f);
  EXPECT_NE(json.find("\"engine_settings\": {\n        \"max_num_seqs\": 512"), std::string::npos) << json;
}
}  // namespace
}  // namespace shardwise
