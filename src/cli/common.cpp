// What the commands share: flag groups, inputs by name, checks of typed numbers, the watch.
#include "cli/common.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "model/loader.hpp"

namespace shardwise::cli {

int fail(const Error& e) {
  std::fprintf(stderr, "shardwise: %s\n", e.message().c_str());
  return kExitBadInput;
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  if (!s.empty() && s.back() != '\n') std::fputc('\n', stdout);
}

void note(const std::string& s) { std::fprintf(stderr, "shardwise: note: %s\n", printable(s).c_str()); }

// An error about a name that came from a file (a plan's model, cluster or workload) is
// that file's, not the flag's the user never passed.
Error blame(Error e, const char* flag, const std::string& file, const char* field) {
  if (e.file == flag) {
    e.file = file;
    e.field = field;
  }
  return e;
}

// --tp and its kin: at least `lo`, at most kMaxDegreeFlag.
std::optional<Error> check_degree_flag(const char* flag, const std::optional<std::int32_t>& v, std::int32_t lo) {
  if (v && (*v < lo || *v > kMaxDegreeFlag)) {
    return Error{flag, "", fmt::format("an integer from {} to {}", lo, kMaxDegreeFlag), std::to_string(*v)};
  }
  return std::nullopt;
}

// The degree flags of simulate and verify.
void add_degree_flags(CLI::App* cmd, OptDegree& tp, OptDegree& pp, OptDegree& ep, OptDegree& attn_dp, OptDegree& micro_batches,
                      OptDegree* redundant) {
  if (redundant) {
    cmd->add_option("--redundant-experts", *redundant,
                    "Redundant expert slots (EPLB copies of the busiest experts) so that ep need only divide experts + N (default 0)");
  }
  cmd->add_option("--tp", tp, "Tensor-parallel degree of attention (default 1)");
  cmd->add_option("--pp", pp, "Pipeline stages (default 1); need not divide the layers (stages split as the engines split them)");
  cmd->add_option("--ep", ep, "Expert-parallel degree over the stage's tp x attn-dp ranks (default 1)");
  cmd->add_option("--attn-dp", attn_dp, "Attention data-parallel groups per stage (default 1)");
  cmd->add_option("--micro-batches", micro_batches, "Pipeline micro-batches (default: automatic)");
}

// The workload override flags shared by every command that takes a workload.
void add_workload_flags(CLI::App* cmd, WorkloadOverrides& o) {
  cmd->add_option("--mode", o.mode, "Override the mode: decode, prefill, offline or serve (requests over time: docs/serving.md)");
  cmd->add_option("--isl", o.isl, "Override the input (prompt) length in tokens");
  cmd->add_option("--osl", o.osl, "Override the output length in tokens");
  cmd->add_option("--context", o.context, "Override the decode context (tokens already cached per sequence)");
  cmd->add_option("--batch", o.batch, "Override the concurrent sequences per model instance: a number or 'max'");
  cmd->add_option("--ttft-ms", o.ttft_ms, "Override the time-to-first-token SLO (ms)");
  cmd->add_option("--tpot-ms", o.tpot_ms, "Override the time-per-output-token SLO (ms)");
  cmd->add_option("--slo", o.slo,
                  "SLOs on statistics, replacing the workload's: METRIC[:STAT]<=MS, comma-separated, e.g. \"ttft:p99<=2000,tpot:p90<=50\" "
                  "(METRIC ttft or tpot; STAT mean, p50, p90, p95, p99, p99.9; the mean when left out); --ttft-ms/--tpot-ms add a mean")
      ->type_name("TEXT");
  cmd->add_option("--weights-dtype", o.weights_dtype,
                  "Override every weight's format: fp32, bf16, fp16, fp8, int8, int4, fp4, or auto (the checkpoint's own, the default)");
  cmd->add_option("--kv-dtype", o.kv_dtype, "Override the KV-cache format: fp32, bf16, fp16, fp8, int8, int4, fp4, or auto");
  cmd->add_option("--expert-dtype", o.expert_dtype, "Override the routed experts' format alone (e.g. fp4 experts beside fp8 attention)");
  cmd->add_option("--spec-tokens", o.spec_tokens, "Speculative decoding: draft tokens (MTP) verified per decode step (default 0)");
  cmd->add_option("--spec-acceptance", o.spec_acceptance, "Speculative decoding: probability each draft token is accepted (0 to 1; default: the model's MTP module's published "
                  "acceptance, 0.85 for DeepSeek-V3/R1; required for models without one)");
  cmd->add_option("--rate", o.rate, "Serve: Poisson arrivals at this many requests/s (inf: every request at once)");
  cmd->add_option("--concurrency", o.concurrency, "Serve: closed-loop users, each sending its next request when the last one ends");
  cmd->add_option("--requests", o.requests, "Serve: requests simulated (default 2000, or the trace's)");
}

void add_cost_flags(CLI::App* cmd, CostArgs& a) {
  cmd->add_flag("--kernel-tables", a.kernel_tables,
                "Cost from the measured kernel tables (data/silicon/) instead of the fitted efficiencies: dense and grouped "
                "expert GEMMs, the engines' all-reduce, dispatch and combine kernels, MLA decode attention (opt-in: "
                "docs/silicon.md, \"Status\"; the activation and rotary kernels, GQA decode attention on Blackwell and prefill attention's ceilings on Hopper and Blackwell are measured either way)");
  cmd->add_option("--silicon", a.silicon,
                  "A folder of one's own kernel measurements (bench/silicon/measure.py --out DIR): read beside the built-in "
                  "tables, replacing their rows of each GPU and format it measures; implies --kernel-tables")
      ->type_name("DIR");
  cmd->add_option("--calibration", a.calibration,
                  "A calibration profile (shardwise calibrate --out; docs/calibration.md): its step overhead and op-kind scales "
                  "replace the GPU's fitted ones; a note when the plan lies outside what it measured")
      ->type_name("FILE");
}

Expected<std::optional<CalibrationProfile>> calibration_of(const CostArgs& a) {
  if (a.calibration.empty()) return std::optional<CalibrationProfile>{};
  auto c = load_calibration_profile(a.calibration);
  if (!c) return c.error();
  return std::optional<CalibrationProfile>(std::move(c).value());
}

void note_calibration(const CostArgs& a, const SimContext& ctx, const Plan& plan) {
  auto c = calibration_of(a);
  if (!c || !*c) return;
  for (const auto& w : calibration_warnings(**c, ctx, plan)) note(w);
}

Expected<std::shared_ptr<const SiliconTables>> silicon_of(const CostArgs& a) {
  if (a.silicon.empty()) return std::shared_ptr<const SiliconTables>{};
  auto t = load_silicon_dir(a.silicon, "--silicon");
  if (!t) return t.error();
  return std::make_shared<const SiliconTables>(std::move(t).value());
}

bool any_cost_flag(const CostArgs& a) { return a.kernel_tables || !a.silicon.empty() || !a.calibration.empty(); }

std::optional<PlanFile::Cost> recorded_cost(const CostArgs& a) {
  if (!any_cost_flag(a)) return std::nullopt;
  return PlanFile::Cost{a.kernel_tables || !a.silicon.empty(), a.silicon, a.calibration};
}

CostArgs cost_for_plan(const CostArgs& flags, const PlanFile& plan_file) {
  if (any_cost_flag(flags) || !plan_file.cost) return flags;
  CostArgs a;
  a.kernel_tables = plan_file.cost->kernel_tables;
  a.silicon = plan_file.cost->silicon;
  a.calibration = plan_file.cost->calibration;
  return a;
}

Expected<CostParams> cost_params_of(const CostArgs& a, const std::string& gpu) {
  CostParams p = cost_params_for(gpu);
  auto t = silicon_of(a);
  if (!t) return t.error();
  p.silicon = std::move(t).value();
  p.kernel_tables = a.kernel_tables || p.silicon != nullptr;
  auto c = calibration_of(a);
  if (!c) return c.error();
  if (*c) return apply_calibration(std::move(p), **c, gpu, a.calibration);
  return p;
}

void add_engine_flags(CLI::App* cmd, EngineArgs& e) {
  cmd->add_option("--engine", e.name,
                  "Serving engine: trtllm, vllm or sglang: its cost profile and scheduler; with plan, only the plans it runs as planned "
                  "(default: a generic engine, every plan)");
  cmd->add_option("--engine-version", e.version,
                  "The engine's version (default: its profile's), e.g. 0.11 or 0.10.2rc1; a version newer than the profile describes "
                  "uses the newest traits it has, with a note");
  cmd->add_option("--max-num-tokens", e.max_num_tokens,
                  "Tokens one iteration of an attention-DP rank (TensorRT-LLM: of each pipeline micro-batch) may schedule (the engine's max_num_tokens; default 8192)");
  cmd->add_option("--max-num-seqs", e.max_num_seqs,
                  "Running sequences per attention-DP rank, for TensorRT-LLM per rank and pipeline micro-batch (vLLM --max-num-seqs, TensorRT-LLM max_batch_size, SGLang --max-running-requests; "
                  "default: the engine's): the serving scheduler's cap; simulate with --engine in decode or offline mode: the cap on --batch max");
  cmd->add_option("--decode-steps", e.decode_steps,
                  "Serve: decode iterations per scheduling decision, nothing admitted between them (SGLang --num-continuous-decode-steps; "
                  "vLLM 0.11 and TensorRT-LLM: 1, the default)");
  cmd->add_option("--adp-balance", e.adp_balance,
                  "Serve, trtllm with attention DP: hold new prompts until every DP rank has one, then WAIT more iterations while "
                  "all decode, or until TIMEOUT iterations pass without (TensorRT-LLM's attention_dp_config: enable_balance, batching_wait_iters, "
                  "timeout_iters; default off)")
      ->type_name("WAIT,TIMEOUT");
  cmd->add_option("--cuda-graph-batch-sizes", e.cuda_graph_batch_sizes,
                  "The engine's CUDA-graph batch sizes per attention-DP rank: a decode-only iteration runs padded to the smallest "
                  "at or above its batch (TensorRT-LLM cuda_graph_config batch_sizes with enable_padding, vLLM cudagraph_capture_sizes, "
                  "SGLang --cuda-graph-bs; default: no padding modelled)")
      ->type_name("B1,B2,...");
}

Expected<EngineTraits> engine_of(const EngineArgs& a) {
  std::string why;
  auto e = engine_traits_of(a.name, a.version, a.max_num_tokens, a.max_num_seqs, &why);
  if (e && !why.empty()) note(why);
  if (e && a.decode_steps) e = with_decode_steps(*e, *a.decode_steps);
  if (e && a.adp_balance) {
    auto wt = parse_adp_balance(*a.adp_balance);
    if (!wt) return wt.error();
    e = with_adp_balance(*e, wt->first, wt->second);
    if (!e && !e.error().field.empty()) {  // a value out of range: the flag's text as typed
      return Error{"--adp-balance", "", "WAIT from 0 to 1000 and TIMEOUT from 1 to 10000 iterations", "'" + *a.adp_balance + "'"};
    }
  }
  if (e && a.cuda_graph_batch_sizes) {
    auto sizes = parse_cuda_graph_batch_sizes(*a.cuda_graph_batch_sizes);
    if (!sizes) return sizes.error();
    e = with_cuda_graph_batch_sizes(*e, *sizes);
    if (!e) return Error{"--cuda-graph-batch-sizes", "", e.error().expected, "'" + *a.cuda_graph_batch_sizes + "'"};
  }
  return e;
}

bool any_override(const WorkloadOverrides& o) {
  return o.mode || o.isl || o.osl || o.context || o.batch || o.ttft_ms || o.tpot_ms || o.slo || o.weights_dtype || o.kv_dtype || o.expert_dtype ||
         o.spec_tokens || o.spec_acceptance || o.rate || o.concurrency || o.requests || o.seed;
}

Expected<ModelSpec> load_model_noted(const std::string& name_or_path) {
  if (auto n = model_shadow_note(name_or_path)) note(*n);
  return load_model(name_or_path);
}

Expected<Inputs> load_inputs(const std::string& model, const std::string& cluster, const std::string& workload,
                             const WorkloadOverrides& overrides, const InputSource& src) {
  auto m = load_model_noted(model);
  if (!m) return src.model_from_plan ? blame(m.error(), "--model", src.plan_file, "model") : m.error();
  auto c = load_cluster(cluster);
  if (!c) return src.cluster_from_plan ? blame(c.error(), "--cluster", src.plan_file, "cluster") : c.error();
  auto wl = load_workload(workload);
  if (!wl) return src.workload_from_plan ? blame(wl.error(), "--workload", src.plan_file, "workload") : wl.error();
  Workload w = std::move(wl).value();
  if (src.plan_overrides) {
    auto w1 = apply_overrides(std::move(w), *src.plan_overrides, src.plan_file);
    if (!w1) return w1.error();
    w = std::move(w1).value();
  }
  auto w2 = apply_overrides(std::move(w), overrides);
  if (!w2) return w2.error();
  std::string why;
  auto w3 = resolve_speculation(*m, std::move(w2).value(), &why);  // --spec-tokens alone: the model's MTP acceptance
  if (!w3) return w3.error();
  if (!why.empty()) note(why);
  return Inputs{std::move(m).value(), std::move(c).value(), std::move(w3).value()};
}

std::optional<std::uint64_t> parse_seed(const std::string& s, std::uint64_t max) {
  std::uint64_t v = 0;
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

std::optional<Error> check_threads(int threads) {
  if (threads < 0 || threads > kMaxThreads) {
    return Error{"--threads", "", fmt::format("a thread count from 1 to {} (0: all cores)", kMaxThreads), std::to_string(threads)};
  }
  return std::nullopt;
}

int threads_or_cores(int threads) {
  return threads > 0 ? threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxThreads)));
}

RunControl stderr_control(double time_limit_s) {
  RunControl c;
  c.time_limit_s = time_limit_s;
  const bool tty = isatty(fileno(stderr)) != 0;
  c.progress_every_s = tty ? 2.0 : 10.0;
  c.emit = [tty, time_limit_s](const std::string& line) {
    const std::string limit = time_limit_s > 0 ? fmt::format(" (time limit {:g} s)", time_limit_s) : "";
    if (tty) std::fprintf(stderr, "\r\033[K  %s%s", line.c_str(), limit.c_str());
    else std::fprintf(stderr, "shardwise: %s%s\n", line.c_str(), limit.c_str());
    std::fflush(stderr);
  };
  return c;
}

// A path a report or plan can be written to: its folder exists and is writable, and it
// is not itself a folder. The non-throwing filesystem calls: a name too long, a loop
// of links or an unreadable folder is a "no", not an exception.
bool writable_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  if (!std::filesystem::is_directory(d, ec) || ec) return false;
  if (std::filesystem::is_directory(path, ec)) return false;
  return access(d.c_str(), W_OK) == 0;
}

bool rl_engine_name(const std::string& e) { return e == "rl" || e == "rl-paper"; }

}  // namespace shardwise::cli
