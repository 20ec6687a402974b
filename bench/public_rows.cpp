#include "public_rows.hpp"

#include <tuple>

#include "check/check.hpp"
#include "serve/serving.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <map>

#include <fmt/format.h>

#include "core/fields.hpp"
#include "hardware/cluster.hpp"
#include "cost/bench_settings.hpp"
#include "cost/engine.hpp"
#include "model/loader.hpp"
#include "mlperf_rows.hpp"
#include "trtllm_bench_rows.hpp"
#include "row_text.hpp"

namespace shardwise::bench {
namespace {
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// The model of a row: a preset, or a config from ../shared/models (nullopt: not mapped).
std::optional<std::string> model_source(const std::string& model) {
  const std::string shared = std::string(SHARDWISE_SHARED_DIR) + "/models/";
  if (model == "Llama-3.1-70B") return "llama-3.1-70b";
  if (model == "Llama-2-70B") return "llama-2-70b";
  if (starts_with(model, "DeepSeek-R1") || starts_with(model, "DeepSeek-V3")) return shared + "new-architectures/deepseek-r1.json";
  if (model == "GPT-OSS-120B") return "gpt-oss-120b";
  if (model == "GPT-OSS-20B") return shared + "new-architectures/gpt-oss-20b.json";
  if (model == "Qwen3-30B-A3B") return "qwen3-30b-a3b";
  if (model == "Qwen3-235B-A22B") return "qwen3-235b-a22b";
  if (starts_with(model, "Llama-4-Scout")) return shared + "new-architectures/llama-4-scout.json";
  if (starts_with(model, "Llama-4-Maverick")) return shared + "new-architectures/llama-4-maverick.json";
  // Llama-3.3-70B is Llama-3.1-70B's architecture (the same config but for its weights)
  if (model == "Llama-3.3-70B") return "llama-3.1-70b";
  if (model == "Llama-3.1-405B") return "llama-3.1-405b";
  if (model == "Llama-3.1-8B") return "llama-3.1-8b";
  if (model == "Mixtral-8x7B") return "mixtral-8x7b";
  return std::nullopt;
}

std::string gpu_of(const std::string& col) {
  for (const auto& [prefix, name] : {std::pair{"H100", "h100"}, {"H200", "h200"}, {"GB200", "gb200"}, {"B200", "b200"}, {"A100", "a100"},
                                     {"GB300", "gb300"}, {"B300", "b300"}, {"MI300X", "mi300x"}, {"MI325X", "mi325x"}, {"MI355X", "mi355x"}}) {
    if (starts_with(col, prefix)) return name;
  }
  return "";
}

// The checkpoint's formats as the row states them (MoE rows; the dense rows keep their
// one weight format for every component, as they were fitted).
CheckpointFormats row_formats(const std::string& precision, const std::string& model) {
  CheckpointFormats q;
  q.method = "row";
  if (contains(precision, "NVFP4")) {
    q.experts = q.dense = DType::kFp4;
    // Qwen3's ModelOpt FP4 checkpoints quantise every linear layer; DeepSeek's keep attention
    // in bf16 (blog: "BF16 attention") or its q up-projection in fp8 where stated
    const bool deepseek = starts_with(model, "DeepSeek");
    q.attention = !deepseek ? DType::kFp4 : contains(precision, "FP8 MLA") ? DType::kFp8 : DType::kBf16;
  } else if (contains(precision, "MXFP4")) {
    q.method = "mxfp4";  // an e8m0 scale per 32 weights (not NVFP4's fp8 per 16)
    q.experts = DType::kFp4;
  } else if (starts_with(precision, "FP8")) {
    q.attention = q.dense = q.experts = DType::kFp8;
  }
  return q;
}

// "concurrency 7168; ..." -> 7168; "256 concurrent requests per EP rank" -> 256 x ranks; else 0.
std::int64_t stated_concurrency(const std::string& col, std::int64_t ranks) {
  if (starts_with(col, "concurrency ")) return std::stoll(col.substr(12));
  if (contains(col, "concurrent requests per EP rank")) return std::stoll(col) * ranks;
  return 0;
}

// A length column: "1024", or the MLPerf rows' "variable (mean ~222)" / "variable (mean ~273
// derived)": the dataset's (or the submission's own) mean.
std::int64_t stated_length(const std::string& col) {
  if (const auto at = col.find("mean ~"); at != std::string::npos) return std::stoll(col.substr(at + 6));
  return std::stoll(col);
}


template <class Get, class Skip>
std::optional<PublicRow> convert_row(const Get& get, const Skip& skip) {
  PublicRow r;
  r.id = std::stoi(get("row_id"));
  const std::string model = get("model");
  const std::string scenario = get("scenario");
  if (contains(get("engine"), "weight offloading")) {
    skip("weights offloaded to host memory during the run (not modelled: the simulator keeps every weight in HBM)");
    return std::nullopt;
  }
  const auto src = model_source(model);
  if (!src) {
    skip(fmt::format("model {} has no mapping here", model));
    return std::nullopt;
  }
  auto m = load_model(*src);
  if (!m) throw std::runtime_error(m.error().message());
  r.model = *m;
  r.family = r.model.is_moe() ? "moe" : "dense";
  r.gpu = gpu_of(get("gpu"));
  if (r.gpu.empty()) {
    skip(fmt::format("GPU {} is not mapped", get("gpu")));
    return std::nullopt;
  }
  const int gpus = std::stoi(get("num_gpus"));
  auto c = cluster_from_preset(fmt::format("{}x{}", r.gpu, gpus));
  if (!c) throw std::runtime_error(c.error().message());
  r.cluster = *c;
  // degrees: `tp` is the engine's world size; with attention data parallel inside it, dp
  // attention ranks of tp = world / dp each (TensorRT-LLM's DEP, vLLM's DP+EP)
  const auto num = [&](const char* k, int fallback) { return get(k).empty() ? fallback : std::stoi(get(k)); };
  const int pp = num("pp", 1), ep = num("ep", 1), dp = num("dp", 1);
  const bool attn_dp = starts_with(get("attn_dp"), "yes");  // "yes", "yes (enable_attention_dp)"
  r.plan.deg.pp = pp;
  r.plan.deg.ep = ep;
  r.plan.deg.attn_dp = attn_dp ? dp : 1;
  // one instance's world is the largest of the stated degrees (the vLLM rows give tp 1 with
  // dp 8 and ep 8; the MLPerf GB200/GB300 rows are 9 instances of that world on 72 GPUs)
  const int world = std::max({num("tp", 1), ep, dp});
  r.plan.deg.tp = attn_dp ? std::max(1, world / dp) : num("tp", 1);
  if (attn_dp) {
    // with attention data parallel, the engines run the dense MLPs and shared experts
    // data-parallel too (each rank its own tokens, whole weights): both MLP ops "none"
    r.plan.sharding[static_cast<std::size_t>(Slot::kFfn1)] = 2;
    r.plan.sharding[static_cast<std::size_t>(Slot::kFfn2)] = 2;
  }
  r.plan.deg.replicas = std::max<std::int32_t>(1, static_cast<std::int32_t>(gpus / r.plan.deg.instance_gpus()));
  // vLLM's dual-batch overlap, where the engine column states it (row 119: "DBO")
  r.plan.two_batch_overlap = get("engine").find("DBO") != std::string::npos && attn_dp && ep > 1;
  const std::string wp = get("weight_precision"), kv = get("kv_cache_precision");
  if (r.id < 100) {
    // the dense rows: one format for every weight; rows 1-13 leave the KV precision unstated
    // ("likely FP8" from the ModelOpt checkpoint): taken as fp8
    const bool fp8 = starts_with(wp, "FP8");
    r.workload.weights_dtype = fp8 ? DType::kFp8 : DType::kFp16;
    r.workload.kv_dtype = (starts_with(kv, "FP16") || (!fp8 && !starts_with(kv, "FP8"))) ? DType::kFp16 : DType::kFp8;
  } else {
    r.model.quant = row_formats(wp, model);
    // KV: as stated; unstated on a ModelOpt checkpoint (nvidia/...) it is the checkpoint's FP8
    // KV cache, as for rows 1-13; otherwise the engine's default, the model's dtype (bf16)
    const bool stated = starts_with(kv, "FP8") || starts_with(kv, "FP16") || starts_with(kv, "BF16") || starts_with(kv, "auto");
    const bool modelopt = contains(wp, "nvidia/") || contains(model, "nvidia/");
    r.workload.kv_dtype = starts_with(kv, "FP8") || (!stated && modelopt) ? DType::kFp8 : DType::kBf16;
  }
  r.workload.isl = stated_length(get("isl"));
  r.workload.osl = stated_length(get("osl"));
  const std::string conc = get("batch_or_concurrency");
  // the engine's profile at the row's version where it states one (v0.8.3, 0.19.0; "unverified",
  // "commit ..." and "post-1.0" take the profile's default), with the token budget it states
  const std::string engine = get("engine"), version = get("engine_version");
  r.engine_name = contains(engine, "TensorRT-LLM") ? "trtllm" : contains(engine, "vLLM") ? "vllm" : contains(engine, "SGLang") ? "sglang" : "";
  if (!r.engine_name.empty()) {
    const std::string v = !version.empty() && version[0] == 'v' ? version.substr(1) : version;
    const bool stated = !v.empty() && std::isdigit(static_cast<unsigned char>(v[0]));
    std::optional<std::int64_t> budget;
    // "max_num_tokens 4608"; "max_num_tokens build 5120 / runtime 1536" (the runtime value, below)
    if (const auto at = conc.find("max_num_tokens "); at != std::string::npos && std::isdigit(static_cast<unsigned char>(conc[at + 15]))) {
      budget = std::stoll(conc.substr(at + 15));
    }
    auto e = load_engine_profile(r.engine_name, stated ? v.substr(0, v.find_first_of(" (")) : "", budget);
    if (!e) throw std::runtime_error(e.error().message());
    r.engine = *e;
    // TensorRT-LLM's MoE backend where the row's config names one other than CUTLASS, its
    // default: TRTLLM (the TRTLLM-Gen grouped GEMM, as NVIDIA's B200 min-latency recipe sets
    // it: row 100) has no CUTLASS module floor (docs/silicon.md, "TensorRT-LLM's MoE module on
    // the B200")
    if (r.engine_name == "trtllm" && contains(get("notes"), "moe_backend TRTLLM")) set_trtllm_moe_backend(r.engine, TrtllmMoeBackend::kTrtllmGen);
  }
  if (starts_with(scenario, "online serving")) {
    // closed loop at the stated concurrency: "max concurrency 64, QPS inf" (vLLM's
    // benchmark_serving), "concurrency 8" (InferenceX); ten requests per user, as
    // InferenceX runs them (the vLLM post does not state its count)
    r.scenario = "serve";
    const auto at = conc.find("concurrency ");
    if (at == std::string::npos) {
      skip(fmt::format("serving row without a stated concurrency ('{}')", conc));
      return std::nullopt;
    }
    const std::int64_t users = std::stoll(conc.substr(at + 12));
    r.workload.mode = Mode::kServe;
    r.workload.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0.0, users};
    r.workload.serve.requests = 10 * users;
    r.client = RowClient::kBenchmarkServing;
    if (contains(get("dataset"), "InferenceX")) {
      // InferenceX's client (benchmarks/benchmark_lib.sh, vLLM's benchmark_serving) draws
      // every input and output length uniformly from [0.8 L, L] (RANDOM_RANGE_RATIO 0.8 in
      // its configs; the rows agree: mean E2E = TTFT + TPOT x 914-929 tokens, where fixed
      // 1,024-token outputs would give 1,023), and its DeepSeek-R1 H200 SGLang launch
      // (benchmarks/dsr1_fp8_h200.sh) sets --chunked-prefill-size 32768 and
      // --max-running-requests 512 at 1k/1k
      const auto uniform = [](std::int64_t len) {
        return LengthDist{LengthDist::Kind::kUniform, 0.0, 0.0, static_cast<std::int64_t>(0.8 * static_cast<double>(len)), len, {}};
      };
      r.workload.serve.input = uniform(r.workload.isl);
      r.workload.serve.output = uniform(r.workload.osl);
      if (r.engine_name == "sglang" && contains(model, "DeepSeek-R1") && contains(get("gpu"), "H200") && r.workload.isl == 1024 &&
          r.workload.osl == 1024) {  // that launch only (a constant budget: nothing to validate)
        r.engine.max_num_tokens = 32768;
        r.engine.max_num_seqs = 512;
      }
    }
    r.plan.batch = 0;
    r.measured = get("output_tok_s_per_gpu").empty() ? 0.0 : std::stod(get("output_tok_s_per_gpu"));
    r.metric = RowMetric::kServeOutput;
    r.serve_ttft_ms = get("ttft_ms").empty() ? 0.0 : std::stod(get("ttft_ms"));
    r.serve_tpot_ms = get("tpot_or_itl_ms").empty() ? 0.0 : std::stod(get("tpot_or_itl_ms"));
  } else if (!get("ttft_ms").empty() && get("output_tok_s_per_gpu").empty()) {
    r.metric = RowMetric::kTtft;
    r.scenario = "ttft";
    r.measured = std::stod(get("ttft_ms"));
    r.workload.mode = Mode::kPrefill;
    r.workload.osl = 0;
    r.plan.batch = 1;
  } else if (starts_with(scenario, "static batch min-latency")) {
    r.metric = RowMetric::kStaticBatchThroughput;
    r.scenario = "min-latency";
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.workload.mode = Mode::kOffline;
    r.plan.batch = 1;
    // MTP drafts as the notes state; acceptance 0.85 per draft, the DeepSeek-V3 report's
    // 85-90% for the second token (a workload input, not fitted)
    // "MTP 3 nextn layers", "MTP with 3 nextn layers": the count right after; "no MTP" none
    const std::string notes = get("notes");
    const auto at = notes.find("MTP");
    if (at != std::string::npos && !(at >= 3 && notes.compare(at - 3, 3, "no ") == 0)) {
      std::size_t i = at + 3;
      if (notes.compare(i, 6, " with ") == 0) i += 5;
      while (i < notes.size() && notes[i] == ' ') ++i;
      const bool count = i < notes.size() && std::isdigit(static_cast<unsigned char>(notes[i]));
      r.workload.spec_tokens = count ? std::clamp(std::stoi(notes.substr(i)), 1, static_cast<int>(kMaxSpecTokens)) : 1;
      r.workload.spec_acceptance = 0.85;
    }
  } else if (starts_with(scenario, "static")) {
    r.metric = RowMetric::kStaticBatchThroughput;
    r.scenario = "static";
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.workload.mode = Mode::kOffline;
    r.plan.batch = std::stoll(conc.substr(conc.rfind(' ') + 1));
  } else if (starts_with(scenario, "decode-only")) {
    r.metric = RowMetric::kDecodeThroughput;
    r.scenario = "decode-only";
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.workload.mode = Mode::kDecode;
    r.workload.context = r.workload.isl + r.workload.osl / 2;  // the average context of a saturated decode instance
    r.workload.isl = r.workload.osl = 0;
    r.plan.batch = 0;  // "chosen to fully utilise GPU memory"
    r.batch_cap = stated_concurrency(conc, r.plan.deg.attn_dp);
    // a batch chosen to fill memory was set above the engine's default running-sequence cap
    // (vLLM's --max-num-seqs): memory, not the profile's cap, bounds it
    if (contains(conc, "fully utilize GPU memory")) r.engine.max_num_seqs = kMaxBatch;
  } else if (starts_with(scenario, "prefill-only")) {
    r.metric = RowMetric::kPrefillThroughput;
    r.scenario = "prefill-only";
    r.measured = std::stod(get("total_tok_s")) / gpus;
    r.workload.mode = Mode::kPrefill;
    r.workload.osl = 0;
    // each attention rank prefills a chunk of the engine's token budget per iteration
    r.plan.batch = std::max<std::int64_t>(1, r.engine.max_num_tokens / r.workload.isl) * r.plan.deg.attn_dp;
  } else if (starts_with(scenario, "MLPerf Server") || starts_with(scenario, "MLPerf Interactive")) {
    // loadgen's Server scenario: Poisson arrivals at the scheduled rate stated in the notes,
    // the dataset's lengths, the batch cap and token budget of the submitter's config
    r.scenario = "serve";
    const std::string notes = get("notes");
    const double rate = [&] {
      const auto at = notes.find("scheduled ");
      return at == std::string::npos ? 0.0 : std::stod(notes.substr(at + 10));
    }();
    if (!(rate > 0)) {
      skip("MLPerf serving row without a scheduled rate in its notes");
      return std::nullopt;
    }
    r.workload.mode = Mode::kServe;
    r.workload.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, rate, 0};
    // the queries loadgen generated (the count is the deployment's, split over the replicas),
    // its statistics over every one of them; a run not listed is skipped (its count follows
    // the submitter's min_duration and min_query_count and whole passes of the dataset)
    const std::int64_t issued = mlperf_server_queries(get("source"));
    if (issued <= 0) {
      skip("an MLPerf serving run whose generated query count bench/mlperf_rows.cpp does not list");
      return std::nullopt;
    }
    r.workload.serve.requests = issued;
    r.client = RowClient::kLoadgen;
    mlperf_lengths(r, get("dataset"), get("source"));
    r.system_key = mlperf_system_key(get("source"));
    mlperf_caps(r, conc);
    amd_vllm_config(r, get("source"));
    nvidia_trtllm_config(r, get("source"));
    r.plan.batch = 0;
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.metric = RowMetric::kServeOutput;
    r.serve_ttft_ms = get("ttft_ms").empty() ? 0.0 : std::stod(get("ttft_ms"));
    r.serve_tpot_ms = get("tpot_or_itl_ms").empty() ? 0.0 : std::stod(get("tpot_or_itl_ms"));
    // "TTFT mean/p50/p99 = 245.9/244.18/436.32 ms"
    const auto triple = [&](const char* key, double& p50, double& p99) {
      const auto at = notes.find(key);
      if (at == std::string::npos) return;
      const std::string rest = notes.substr(at + std::char_traits<char>::length(key));
      const auto s1 = rest.find('/'), s2 = rest.find('/', s1 + 1);
      if (s1 == std::string::npos || s2 == std::string::npos) return;
      p50 = std::stod(rest.substr(s1 + 1));
      p99 = std::stod(rest.substr(s2 + 1));
    };
    triple("TTFT mean/p50/p99 = ", r.serve_ttft_p50_ms, r.serve_ttft_p99_ms);
    triple("TPOT mean/p50/p99 = ", r.serve_tpot_p50_ms, r.serve_tpot_p99_ms);
  } else if (starts_with(scenario, "MLPerf Offline")) {
    // loadgen's one query: the run's samples all issued at once, served under the config's
    // caps and scheduler with the dataset's lengths, timed to the last completion (the
    // serving simulation of a burst: its drain and its length-biased batch included)
    const std::int64_t samples = mlperf_offline_samples(get("source"));
    if (samples <= 0) {
      skip("MLPerf Offline row whose run's sample count (generated_samples_per_query) is not listed in bench/mlperf_rows.cpp");
      return std::nullopt;
    }
    r.metric = RowMetric::kOfflineRun;
    r.scenario = "offline";
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.workload.mode = Mode::kServe;
    r.workload.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
    r.workload.serve.requests = samples;
    r.plan.batch = 0;
    mlperf_lengths(r, get("dataset"), get("source"));
    r.system_key = mlperf_system_key(get("source"));
    mlperf_caps(r, conc);
    amd_vllm_config(r, get("source"));
    nvidia_trtllm_config(r, get("source"));
  } else if (contains(scenario, "offline max throughput")) {
    r.metric = RowMetric::kOfflineMaxThroughput;
    r.scenario = "offline";
    r.measured = std::stod(get("output_tok_s_per_gpu"));
    r.workload.mode = Mode::kOffline;
    r.plan.batch = 0;  // the engine picks: the largest concurrency that fits
    r.batch_cap = stated_concurrency(conc, r.plan.deg.attn_dp);
    // trtllm-bench with no caps on its command line runs the ones it derives (its tuning
    // heuristic, cost/bench_settings.hpp), at the 0.95 KV fraction the sources state
    if (contains(get("engine"), "trtllm-bench")) {
      r.engine = with_trtllm_bench_caps(std::move(r.engine), r.model, r.cluster.gpu, r.workload, r.plan.deg, contains(conc, "max_batch_size"),
                                        contains(conc, "max_num_tokens"), nullptr, 0.95);
    }
    // TensorRT-LLM's post-1.0 performance-overview page: the run it documents (a burst of its
    // request count, timed to the last completion, under its llm_options.yml)
    if (is_perf_overview_row(get("source"), get("source_locator")) && !perf_overview_run(r, model)) {
      skip(fmt::format("a cell of TensorRT-LLM's perf-overview page at {}/{}, a length pair its request table does not list",
                       r.workload.isl, r.workload.osl));
      return std::nullopt;
    }
    if (is_perf_overview_019_row(get("source")) && !perf_overview_019_run(r)) {
      skip(fmt::format("a cell of TensorRT-LLM 0.19.0's perf-overview page at {}/{}, a length pair its request table does not list",
                       r.workload.isl, r.workload.osl));
      return std::nullopt;
    }
  } else {
    skip(fmt::format("scenario '{}' is not mapped", scenario));
    return std::nullopt;
  }
  r.workload.name = fmt::format("row{}", r.id);
  std::string short_model = model.substr(0, model.find(' '));
  if (short_model.size() > 18) short_model = short_model.substr(0, 18);
  const Degrees& d = r.plan.deg;
  std::string par = d.attn_dp > 1 ? fmt::format("DP{}", d.attn_dp) : fmt::format("TP{}", d.tp);
  if (d.ep > 1) par += fmt::format("EP{}", d.ep);
  const bool variable = contains(get("isl"), "mean ~");  // MLPerf: the dataset's means, marked ~
  r.label = fmt::format("{} {} {} {}{}/{} {}{}", short_model, r.gpu, par, variable ? "~" : "", r.workload.isl, r.workload.osl, r.scenario,
                        r.plan.batch > 0 ? fmt::format(" b{}", r.plan.batch) : "");
  if (r.scenario == "serve") {
    const Arrivals& a = r.workload.serve.arrivals;
    r.label += a.kind == Arrivals::Kind::kPoisson ? fmt::format(" {:g}/s", a.rate) : fmt::format(" c{}", a.concurrency);
  }
  return r;
}
}  // namespace

void set_trtllm_moe_backend(EngineTraits& e, TrtllmMoeBackend b) {
  if (b == TrtllmMoeBackend::kCutlass) return;
  e.moe_module_floor_us = 0;
  e.moe_expert_stream = b == TrtllmMoeBackend::kTrtllmGen ? kTrtllmGenExpertStream : 0.0;
}

std::string default_csv_path() { return std::string(SHARDWISE_SHARED_DIR) + "/calibration/public-measurements.csv"; }
std::string held_out_dir() { return std::string(SHARDWISE_REPO_DIR) + "/data/validation"; }

Expected<std::vector<PublicRow>> load_public_rows(const std::string& path, std::vector<std::string>* skipped) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text->size()) {
    const auto nl = text->find('\n', start);
    lines.push_back(text->substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (lines.empty()) return Error{path, "", "a header line", "an empty file"};
  const auto header = split_csv_line(lines[0]);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"row_id", "model", "weight_precision", "kv_cache_precision", "gpu", "num_gpus", "tp", "pp", "scenario",
                           "batch_or_concurrency", "isl", "osl", "output_tok_s_per_gpu", "ttft_ms", "engine", "engine_version", "ep", "dp", "attn_dp", "total_tok_s", "notes", "tpot_or_itl_ms", "dataset", "source", "source_locator"}) {
    if (!col.count(need)) return Error{path, need, "a column of that name", "none"};
  }
  std::vector<PublicRow> rows;
  for (std::size_t li = 1; li < lines.size(); ++li) {
    if (lines[li].empty()) continue;
    const auto f = split_csv_line(lines[li]);
    if (f.size() < header.size()) return Error{path, fmt::format("line {}", li + 1), fmt::format("{} columns", header.size()), fmt::format("{}", f.size())};
    const auto get = [&](const char* k) { return f[col[k]]; };
    // a row this benchmark cannot map is listed with the reason, never fatal
    const auto skip = [&](const std::string& why) {
      if (skipped) skipped->push_back(fmt::format("row {}: {}", get("row_id"), why));
    };
    try {
      auto r = convert_row(get, skip);
      if (!r) continue;
      if (r->scenario == "serve") {  // one row per published metric
        const std::string base = r->label;
        for (const auto& [metric, value, name] : {std::tuple{RowMetric::kServeOutput, r->measured, "tput"},
                                                  std::tuple{RowMetric::kServeTtft, r->serve_ttft_ms, "ttft"},
                                                  std::tuple{RowMetric::kServeTpot, r->serve_tpot_ms, "tpot"},
                                                  std::tuple{RowMetric::kServeTtftP50, r->serve_ttft_p50_ms, "ttft-p50"},
                                                  std::tuple{RowMetric::kServeTtftP99, r->serve_ttft_p99_ms, "ttft-p99"},
                                                  std::tuple{RowMetric::kServeTpotP50, r->serve_tpot_p50_ms, "tpot-p50"},
                                                  std::tuple{RowMetric::kServeTpotP99, r->serve_tpot_p99_ms, "tpot-p99"}}) {
          if (!(value > 0)) continue;
          PublicRow m = *r;
          m.metric = metric;
          m.measured = value;
          m.label = base + " " + name;
          rows.push_back(std::move(m));
        }
        continue;
      }
      rows.push_back(std::move(*r));
    } catch (const std::exception& e) {  // a number column this benchmark cannot read
      skip(fmt::format("a column it cannot read ({})", e.what()));
    }
  }
  return rows;
}

ToolStats loadgen_stats(const std::vector<RequestRecord>& recs, double replicas) {
  ToolStats t = tool_stats(recs, replicas);
  if (recs.empty()) return t;
  const RequestRecord* last = &recs.front();
  double out = 0;
  for (const RequestRecord& q : recs) {
    out += static_cast<double>(q.output);
    if (q.arrival_s > last->arrival_s) last = &q;
  }
  t.duration_s = std::max(last->finish_s, 1e-12);
  t.output_throughput = out * replicas / t.duration_s;
  t.request_throughput = static_cast<double>(recs.size()) * replicas / t.duration_s;
  return t;
}

namespace {
// The row's client's figures over the whole simulated run (PublicRow::client); zeros when no
// request was served
ToolStats client_stats(const SimContext& ctx, const PublicRow& r) {
  ServeOptions opt;
  opt.keep_records = true;
  opt.measure_capacity = false;
  const ServeResult s = simulate_serving(ctx, r.plan, opt);
  const double replicas = static_cast<double>(std::max<std::int64_t>(1, r.plan.deg.replicas));
  return r.client == RowClient::kLoadgen ? loadgen_stats(s.records, replicas) : tool_stats(s.records, replicas);
}
}  // namespace

double predict(const PublicRow& r, const CostParams& p, ServeMemo* memo) {
  const SimContext ctx = make_context(r.model, r.cluster, r.workload, p, r.engine);
  if (is_serve_metric(r.metric) && r.client != RowClient::kSteadyWindow) {
    const bool reuse = memo && memo->id == r.id && memo->client == r.client && memo->workload == r.workload && memo->plan == r.plan &&
                       memo->engine == r.engine && memo->params == p;
    if (memo && !reuse) *memo = ServeMemo{r.id, r.workload, r.plan, r.engine, r.client, p, client_stats(ctx, r)};
    const ToolStats t = memo ? memo->stats : client_stats(ctx, r);
    switch (r.metric) {
      case RowMetric::kServeOutput: return t.output_throughput / static_cast<double>(r.plan.deg.total_gpus());
      case RowMetric::kServeTtft: return t.ttft.mean;
      case RowMetric::kServeTtftP50: return t.ttft.p50;
      case RowMetric::kServeTtftP99: return t.ttft.p99;
      case RowMetric::kServeTpotP50: return t.tpot.p50;
      case RowMetric::kServeTpotP99: return t.tpot.p99;
      default: return t.tpot.mean;
    }
  }
  if (is_serve_metric(r.metric)) {
    const ServeResult s = simulate_serving(ctx, r.plan);
    if (s.requests == 0) return 0.0;
    switch (r.metric) {
      case RowMetric::kServeOutput: return s.output_tok_s_per_gpu;
      case RowMetric::kServeTtft: return s.ttft_ms.mean;
      case RowMetric::kServeTtftP50: return s.ttft_ms.p50;
      case RowMetric::kServeTtftP99: return s.ttft_ms.p99;
      case RowMetric::kServeTpotP50: return s.tpot_ms.p50;
      case RowMetric::kServeTpotP99: return s.tpot_ms.p99;
      default: return s.tpot_ms.mean;
    }
  }
  if (r.metric == RowMetric::kOfflineRun) {
    const ServeResult s = simulate_serving(ctx, r.plan);
    return s.feasible ? s.output_tok_s_per_gpu : 0.0;
  }
  if (r.metric == RowMetric::kStaticBatchThroughput) return evaluate_static_batch(ctx, r.plan).output_tok_s_per_gpu;
  Metrics m = evaluate(ctx, r.plan, nullptr, false);
  if (r.batch_cap > 0 && m.feasible() && m.batch > r.batch_cap) {
    Plan capped = r.plan;
    capped.batch = r.batch_cap;
    m = evaluate(ctx, capped, nullptr, false);
  }
  if (r.metric == RowMetric::kTtft) return m.ttft_s * 1e3;
  if (r.metric == RowMetric::kPrefillThroughput) return m.feasible() ? m.input_tok_s_per_gpu : 0.0;
  return m.feasible() ? m.output_tok_s_per_gpu : 0.0;
}

std::string serving_detail(const PublicRow& r, const CostParams& p) {
  if (!is_serve_metric(r.metric) && r.metric != RowMetric::kOfflineRun) return "";
  const SimContext ctx = make_context(r.model, r.cluster, r.workload, p, r.engine);
  const ServeResult s = simulate_serving(ctx, r.plan);
  std::string out = fmt::format("    offered {:.3f} req/s, capacity {:.3f} req/s (load {:.2f}); {} requests, {} iterations, {} preemptions{}\n",
                                s.offered_requests_per_s, s.capacity_requests_per_s,
                                s.capacity_requests_per_s > 0 ? s.offered_requests_per_s / s.capacity_requests_per_s : 0.0, s.requests,
                                s.iterations, s.preemptions, s.feasible ? "" : " (infeasible: " + s.reason + ")");
  out += fmt::format("    per instance: {:.1f} running, {:.1f} in system; KV {} tokens; admission blocked by KV {:.0f}%, by the sequence cap {:.0f}%\n",
                     s.mean_running, s.mean_in_system, s.kv_tokens, s.kv_blocked_share * 100.0, s.seq_cap_share * 100.0);
  out += fmt::format("    mean request: queue {:.1f} ms, prefill {:.1f} ms, decode {:.1f} ms; TTFT mean/p50/p99 {:.1f}/{:.1f}/{:.1f}, TPOT {:.2f}/{:.2f}/{:.2f} ms\n",
                     s.queue_ms, s.prefill_ms, s.decode_ms, s.ttft_ms.mean, s.ttft_ms.p50, s.ttft_ms.p99, s.tpot_ms.mean, s.tpot_ms.p50,
                     s.tpot_ms.p99);
  out += fmt::format("    output {:.1f} tok/s per GPU; bottleneck {} ({}); steady {} (halves differ {:.1f}%)\n", s.output_tok_s_per_gpu,
                     to_string(s.bottleneck), s.bottleneck_note, s.stable ? "yes" : "no", s.halves_diff * 100.0);
  if (r.client != RowClient::kSteadyWindow) {  // what the row is compared with: the client's statistics over every request
    const ToolStats t = client_stats(ctx, r);
    out += fmt::format("    the client's figures, every request ({} of them): TTFT mean/p50/p99 {:.1f}/{:.1f}/{:.1f}, TPOT {:.2f}/{:.2f}/{:.2f} ms, "
                       "output {:.1f} tok/s per GPU over {:.1f} s\n",
                       t.completed, t.ttft.mean, t.ttft.p50, t.ttft.p99, t.tpot.mean, t.tpot.p50, t.tpot.p99,
                       t.output_throughput / static_cast<double>(r.plan.deg.total_gpus()), t.duration_s);
  }
  return out;
}

bool is_serve_metric(RowMetric m) {
  return m == RowMetric::kServeOutput || m == RowMetric::kServeTtft || m == RowMetric::kServeTpot || m == RowMetric::kServeTtftP50 ||
         m == RowMetric::kServeTtftP99 || m == RowMetric::kServeTpotP50 || m == RowMetric::kServeTpotP99;
}

double quantile(std::vector<double> e, double q) {
  if (e.empty()) return 0;
  std::sort(e.begin(), e.end());
  const double pos = q * static_cast<double>(e.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, e.size() - 1);
  return e[lo] + (e[hi] - e[lo]) * (pos - static_cast<double>(lo));
}

double abs_pct_error(double predicted, double measured) { return std::fabs(predicted - measured) / measured * 100.0; }

}  // namespace shardwise::bench
