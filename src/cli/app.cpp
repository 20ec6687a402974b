// shardwise command line: argument parsing and wiring only (ARCHITECTURE.md).
#include "cli/app.hpp"

#include <chrono>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/fields.hpp"
#include "cost/engine.hpp"
#include "cost/simulator.hpp"
#include "exec/verify.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "report/describe.hpp"
#include "report/listing.hpp"
#include "report/serve_html.hpp"
#include "report/serve_report.hpp"
#include "report/simulate.hpp"
#include "cli/dist.hpp"
#include "report/sweep_report.hpp"
#include "search/sweep.hpp"
#include "search/serve_plan.hpp"
#include "serve/serving.hpp"
#include "report/plan_report.hpp"
#include "report/html_report.hpp"
#include "report/launch.hpp"
#include "search/search.hpp"
#include "search/rl/agent.hpp"
#include "plan/plan_json.hpp"
#include "core/files.hpp"
#include "workload/workload.hpp"

namespace shardwise {
namespace {

// Upper bounds of the numeric flags: beyond them a value is a slip, not a request.
constexpr std::int32_t kMaxDegreeFlag = 1 << 20;  // as in plan.json
constexpr int kMaxThreads = 256;

int fail(const Error& e) {
  std::fprintf(stderr, "shardwise: %s\n", e.message().c_str());
  return kExitBadInput;
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  if (!s.empty() && s.back() != '\n') std::fputc('\n', stdout);
}

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
using OptDegree = std::optional<std::int32_t>;
void add_degree_flags(CLI::App* cmd, OptDegree& tp, OptDegree& pp, OptDegree& ep, OptDegree& attn_dp, OptDegree& micro_batches,
                      OptDegree* redundant = nullptr) {
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
  cmd->add_option("--weights-dtype", o.weights_dtype,
                  "Override every weight's format: fp32, bf16, fp16, fp8, int8, int4, fp4, or auto (the checkpoint's own, the default)");
  cmd->add_option("--kv-dtype", o.kv_dtype, "Override the KV-cache format: fp32, bf16, fp16, fp8, int8, int4, fp4, or auto");
  cmd->add_option("--expert-dtype", o.expert_dtype, "Override the routed experts' format alone (e.g. fp4 experts beside fp8 attention)");
  cmd->add_option("--spec-tokens", o.spec_tokens, "Speculative decoding: draft tokens (MTP) verified per decode step (default 0)");
  cmd->add_option("--spec-acceptance", o.spec_acceptance, "Speculative decoding: probability each draft token is accepted (0 to 1)");
  cmd->add_option("--rate", o.rate, "Serve: Poisson arrivals at this many requests/s (inf: every request at once)");
  cmd->add_option("--concurrency", o.concurrency, "Serve: closed-loop users, each sending its next request when the last one ends");
  cmd->add_option("--requests", o.requests, "Serve: requests simulated (default 2000, or the trace's)");
}

// The engine profile flags of simulate and plan (docs/cost-model.md, "Engine profiles").
struct EngineArgs {
  std::string name, version;
  std::optional<std::int64_t> max_num_tokens, max_num_seqs;
};
void add_engine_flags(CLI::App* cmd, EngineArgs& e) {
  cmd->add_option("--engine", e.name,
                  "Serving engine: trtllm, vllm or sglang: its cost profile and scheduler; with plan, only the plans it runs as planned "
                  "(default: a generic engine, every plan)");
  cmd->add_option("--engine-version", e.version, "The engine's version (default: its profile's), e.g. 0.11 or 1.0");
  cmd->add_option("--max-num-tokens", e.max_num_tokens,
                  "Tokens one iteration of an attention-DP rank may prefill (the engine's max_num_tokens; default 8192)");
  cmd->add_option("--max-num-seqs", e.max_num_seqs,
                  "Serve: running sequences per attention-DP rank (vLLM --max-num-seqs, TensorRT-LLM max_batch_size; default: the engine's)");
}
Expected<EngineTraits> engine_of(const EngineArgs& a) {
  EngineTraits out;
  if (a.name.empty()) {
    if (!a.version.empty()) return Error{"--engine-version", "", "--engine beside it (trtllm, vllm or sglang)", "no --engine"};
    if (a.max_num_tokens) {
      if (*a.max_num_tokens < 1 || *a.max_num_tokens > kMaxTokens) {
        return Error{"--max-num-tokens", "", fmt::format("a token budget from 1 to {}", kMaxTokens), std::to_string(*a.max_num_tokens)};
      }
      out.max_num_tokens = *a.max_num_tokens;
    }
  } else {
    auto e = load_engine_profile(a.name, a.version, a.max_num_tokens);
    if (!e) return e;
    out = *e;
  }
  if (a.max_num_seqs) {
    if (*a.max_num_seqs < 1 || *a.max_num_seqs > kMaxBatch) {
      return Error{"--max-num-seqs", "", fmt::format("a number of running sequences from 1 to {}", kMaxBatch), std::to_string(*a.max_num_seqs)};
    }
    out.max_num_seqs = *a.max_num_seqs;
  }
  return out;
}

bool any_override(const WorkloadOverrides& o) {
  return o.mode || o.isl || o.osl || o.context || o.batch || o.ttft_ms || o.tpot_ms || o.weights_dtype || o.kv_dtype || o.expert_dtype ||
         o.spec_tokens || o.spec_acceptance || o.rate || o.concurrency || o.requests || o.seed;
}

struct DescribeArgs {
  std::string model, cluster, workload;
  WorkloadOverrides overrides;
  bool json = false;
  bool ops = false;
};

// The formats describe reports: the workload's, or the checkpoint's own where it leaves them auto.
void set_describe_formats(DescribeOptions& opts, const std::optional<ModelSpec>& model, const Workload& w) {
  const Formats f = resolve_formats(model ? *model : ModelSpec{}, w);
  opts.weights_dtype = model && model->is_moe() ? f.experts : f.dense;
  opts.kv_dtype = f.kv;
  opts.formats = f;
  opts.formats_from_checkpoint = !w.weights_dtype.has_value();
}

int run_describe(const DescribeArgs& a) {
  if (a.model.empty() && a.cluster.empty() && a.workload.empty()) {
    return fail(Error{"describe", "", "at least one of --model, --cluster, --workload", "none"});
  }
  std::optional<ModelSpec> model;
  std::optional<ClusterSpec> cluster;
  std::optional<Workload> workload;
  if (!a.model.empty()) {
    auto m = load_model(a.model);
    if (!m) return fail(m.error());
    model = std::move(m).value();
  }
  if (!a.cluster.empty()) {
    auto c = load_cluster(a.cluster);
    if (!c) return fail(c.error());
    cluster = std::move(c).value();
  }
  DescribeOptions opts;
  if (!a.workload.empty()) {
    auto w = load_workload(a.workload);
    if (!w) return fail(w.error());
    auto w2 = apply_overrides(std::move(w).value(), a.overrides);
    if (!w2) return fail(w2.error());
    workload = std::move(w2).value();
    set_describe_formats(opts, model, *workload);
    if (workload->mode == Mode::kDecode) opts.contexts = {workload->context};
  } else if (any_override(a.overrides)) {
    // Without a workload only the dtype and context flags mean something for a model.
    const auto& o = a.overrides;
    if (o.mode || o.isl || o.osl || o.batch || o.ttft_ms || o.tpot_ms) {
      return fail(Error{"describe", "", "--workload with --mode, --isl, --osl, --batch, --ttft-ms or --tpot-ms", "no --workload"});
    }
    Workload base;  // bf16 defaults; context 1 just to pass validation
    base.context = 1;
    auto w = apply_overrides(base, o);
    if (!w) return fail(w.error());
    set_describe_formats(opts, model, *w);
    if (o.context) opts.contexts = {*o.context};
  } else if (model) {
    set_describe_formats(opts, model, Workload{});  // the checkpoint's own formats
  }
  if (a.json) {
    print(describe_json(model ? &*model : nullptr, cluster ? &*cluster : nullptr, workload ? &*workload : nullptr, opts));
    return 0;
  }
  std::string out;
  if (model) out += describe_model_text(*model, opts);
  if (model && a.ops) out += describe_ops_text(*model, opts, opts.contexts.back());
  if (cluster) out += (out.empty() ? "" : "\n") + describe_cluster_text(*cluster);
  if (workload) out += (out.empty() ? "" : "\n") + describe_workload_text(*workload);
  print(out);
  return 0;
}

// The three inputs of simulate and plan, with the workload overrides applied.
struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
};
// Where the names came from: the flags, or a plan file (whose fields an error then names).
struct InputSource {
  std::string plan_file;                              // empty: every name and override came from flags
  bool model_from_plan = false, cluster_from_plan = false, workload_from_plan = false;
  const WorkloadOverrides* plan_overrides = nullptr;  // the plan file's, applied before the flags'
};
Expected<Inputs> load_inputs(const std::string& model, const std::string& cluster, const std::string& workload,
                             const WorkloadOverrides& overrides, const InputSource& src = {}) {
  auto m = load_model(model);
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
  return Inputs{std::move(m).value(), std::move(c).value(), std::move(w2).value()};
}

struct SimulateArgs {
  EngineArgs engine;
  std::string model, cluster, workload, sharding = "megatron", plan_file;
  WorkloadOverrides overrides;
  std::optional<std::int32_t> tp, pp, ep, attn_dp, replicas, micro_batches, redundant_experts;
  // disaggregated: the prefill pool (the degrees above and --replicas are then the decode pool's)
  std::optional<std::int32_t> prefill_instances, prefill_tp, prefill_pp, prefill_ep, prefill_attn_dp;
  bool two_batch_overlap = false;
  bool json = false;
};

// --prefill-* flags and a plan file's disaggregated block: the prefill pool, or none.
std::optional<Plan> prefill_pool_of(const SimulateArgs& a, const Plan& decode, const std::optional<Plan>& from_file) {
  if (!a.prefill_instances && !from_file && !a.prefill_tp && !a.prefill_pp && !a.prefill_ep && !a.prefill_attn_dp) return std::nullopt;
  Plan p = from_file ? *from_file : decode;
  if (!from_file) {
    p.deg.replicas = 1;
    p.two_batch_overlap = false;  // the decode pool's overlap is its own (a plan file's prefill block may set one)
  }
  if (a.prefill_instances) p.deg.replicas = *a.prefill_instances;
  if (a.prefill_tp) p.deg.tp = *a.prefill_tp;
  if (a.prefill_pp) p.deg.pp = *a.prefill_pp;
  if (a.prefill_ep) p.deg.ep = *a.prefill_ep;
  if (a.prefill_attn_dp) p.deg.attn_dp = *a.prefill_attn_dp;
  p.batch = 0;
  return p;
}

int run_simulate(SimulateArgs a) {
  for (const auto& e : {check_degree_flag("--tp", a.tp, 1), check_degree_flag("--pp", a.pp, 1), check_degree_flag("--ep", a.ep, 1),
                        check_degree_flag("--attn-dp", a.attn_dp, 1), check_degree_flag("--replicas", a.replicas, 1),
                        check_degree_flag("--micro-batches", a.micro_batches, 0),
                        check_degree_flag("--redundant-experts", a.redundant_experts, 0),
                        check_degree_flag("--prefill-instances", a.prefill_instances, 1), check_degree_flag("--prefill-tp", a.prefill_tp, 1),
                        check_degree_flag("--prefill-pp", a.prefill_pp, 1), check_degree_flag("--prefill-ep", a.prefill_ep, 1),
                        check_degree_flag("--prefill-attn-dp", a.prefill_attn_dp, 1)}) {
    if (e) return fail(*e);
  }
  Plan plan;
  std::optional<Plan> file_prefill;
  std::optional<std::int64_t> file_seqs, file_tokens;
  InputSource src;
  WorkloadOverrides plan_overrides;
  if (!a.plan_file.empty()) {
    auto f = load_plan_file(a.plan_file);
    if (!f) return fail(f.error());
    plan = f->plan;
    file_prefill = f->prefill_pool;
    file_seqs = f->max_num_seqs;
    file_tokens = f->max_num_tokens;
    src.plan_file = a.plan_file;
    src.model_from_plan = a.model.empty() && !f->model.empty();
    src.cluster_from_plan = a.cluster.empty() && !f->cluster.empty();
    src.workload_from_plan = a.workload.empty() && !f->workload.empty();
    if (a.model.empty()) a.model = f->model;
    if (a.cluster.empty()) a.cluster = f->cluster;
    if (a.workload.empty()) a.workload = f->workload;
    // the plan's own overrides first (errors name the plan file); flags given now win
    plan_overrides = f->overrides;
    plan_overrides.batch = plan.batch == 0 ? std::string("max") : std::to_string(plan.batch);
    src.plan_overrides = &plan_overrides;
  } else {
    auto sh = load_sharding(a.sharding);
    if (!sh) return fail(sh.error());
    plan.sharding = *sh;
  }
  if (a.model.empty()) return fail(Error{"simulate", "", "--model (or a --plan file naming one)", "none"});
  if (a.cluster.empty()) return fail(Error{"simulate", "", "--cluster (or a --plan file naming one)", "none"});
  if (a.workload.empty()) a.workload = "decode-16k";
  auto in = load_inputs(a.model, a.cluster, a.workload, a.overrides, src);
  if (!in) return fail(in.error());
  // what set the degrees, for the message of an invalid plan
  std::string flags;
  const auto note = [&](const char* flag, const std::optional<std::int32_t>& v) {
    if (v) flags += fmt::format("{}{} {}", flags.empty() ? "" : " ", flag, *v);
  };
  note("--tp", a.tp);
  note("--pp", a.pp);
  note("--ep", a.ep);
  note("--attn-dp", a.attn_dp);
  note("--replicas", a.replicas);
  note("--micro-batches", a.micro_batches);
  note("--redundant-experts", a.redundant_experts);
  if (a.two_batch_overlap) flags += flags.empty() ? "--two-batch-overlap" : " --two-batch-overlap";
  if (a.overrides.batch) flags += (flags.empty() ? "--batch " : " --batch ") + *a.overrides.batch;
  if (a.plan_file.empty() && a.sharding != "megatron") flags += (flags.empty() ? "--sharding " : " --sharding ") + a.sharding;
  if (a.tp) plan.deg.tp = *a.tp;
  if (a.pp) plan.deg.pp = *a.pp;
  if (a.ep) plan.deg.ep = *a.ep;
  if (a.attn_dp) plan.deg.attn_dp = *a.attn_dp;
  if (a.replicas) plan.deg.replicas = *a.replicas;
  if (a.micro_batches) plan.micro_batches = *a.micro_batches;
  if (a.redundant_experts) plan.redundant_experts = *a.redundant_experts;
  if (a.two_batch_overlap) plan.two_batch_overlap = true;
  plan.batch = in->workload.batch.value_or(0);
  auto engine = engine_of(a.engine);
  if (!engine) return fail(engine.error());
  // a serve plan's engine settings, unless flags give them
  if (file_seqs && !a.engine.max_num_seqs) engine->max_num_seqs = *file_seqs;
  if (file_tokens && !a.engine.max_num_tokens) engine->max_num_tokens = *file_tokens;
  const SimContext ctx = make_context(in->model, in->cluster, in->workload, cost_params_for(in->cluster.gpu.name), *engine);
  Breakdown bd;
  const Metrics m = evaluate(ctx, plan, &bd);
  // an invalid plan is bad input (exit 2); an infeasible one (memory, SLO) is a result
  if (m.infeasible == Infeasible::kInvalidPlan) {
    std::string origin = a.plan_file.empty() ? (flags.empty() ? std::string("simulate (default degrees)") : flags)
                                             : (flags.empty() ? a.plan_file : a.plan_file + " with " + flags);
    return fail(Error{origin, a.plan_file.empty() || !flags.empty() ? "" : "plan",
                      fmt::format("a plan valid on {} and {}", in->model.name, in->cluster.name), m.reason});
  }
  if (const auto pre = prefill_pool_of(a, plan, file_prefill)) {
    // disaggregated prefill and decode pools (docs/serving.md)
    if (ctx.workload.mode != Mode::kServe) {
      return fail(Error{"--prefill-instances", "", "--mode serve (a disaggregated deployment serves requests over time)",
                        fmt::format("mode {}", to_string(ctx.workload.mode))});
    }
    if (!has_arrivals(ctx.workload)) {
      return fail(Error{"simulate --mode serve", "", "how requests arrive: --rate R (Poisson; inf: all at once)", "neither"});
    }
    Plan probe = *pre;
    probe.batch = probe.deg.attn_dp;
    if (auto why = validate_plan(probe, ctx.model, ctx.cluster)) {
      return fail(Error{a.plan_file.empty() ? "--prefill-*" : a.plan_file, a.plan_file.empty() ? "" : "disaggregated.prefill",
                        fmt::format("a prefill pool valid on {} and {}", ctx.model.name, ctx.cluster.name), *why});
    }
    const DisaggPlan d{*pre, plan};
    if (d.gpus() > ctx.cluster.num_gpus) {
      return fail(Error{"--prefill-instances", "", fmt::format("pools that fit the cluster's {} GPUs", ctx.cluster.num_gpus),
                        fmt::format("{} prefill + {} decode = {} GPUs", pre->deg.total_gpus(), plan.deg.total_gpus(), d.gpus())});
    }
    const auto t0 = std::chrono::steady_clock::now();
    const DisaggResult r = simulate_disaggregated(ctx, d);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print(a.json ? serve_disagg_json(ctx, d, r, wall) : serve_disagg_text(ctx, d, r, wall));
    return 0;
  }
  if (ctx.workload.mode == Mode::kServe && !has_arrivals(ctx.workload)) {
    return fail(Error{"simulate --mode serve", "", "how requests arrive: --rate R (Poisson; inf: all at once) or --concurrency N "
                      "(closed loop), or arrivals: in the workload", "neither"});
  }
  if (ctx.workload.mode == Mode::kServe && m.infeasible != Infeasible::kMemory) {
    // the request-level simulation decides (the closed form above only screens the plan's memory)
    const auto t0 = std::chrono::steady_clock::now();
    const ServeResult r = simulate_serving(ctx, plan);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print(a.json ? serve_json(ctx, plan, r, wall) : serve_text(ctx, plan, r, wall));
    return 0;
  }
  print(a.json ? simulate_json(ctx, plan, m, bd) : simulate_text(ctx, plan, m, bd));
  return 0;
}

struct PlanArgs {
  EngineArgs serve;
  std::string model, cluster, workload, engine = "rl", out, save_policy, load_policy, report;
  std::vector<std::string> compare;
  WorkloadOverrides overrides;
  std::int64_t budget = 4000;
  std::int32_t redundant_experts = 0;
  double time_limit = 0;
  std::string seed = "1";  // parsed here: CLI11 would wrap "-1" into 2^64 - 1
  int threads = 0;
  bool json = false;
  double target_rate = 0;  // plan --mode serve: the fewest GPUs serving this many requests/s
  int top_k = 24;
  bool no_disagg = false;
};

std::optional<std::uint64_t> parse_seed(const std::string& s) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
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

// plan --mode serve: the closed-form search's winner joins the screen of every instance
// shape; the best K are simulated (docs/serving.md, "Planning").
int run_serve_plan(const PlanArgs& a, const SimContext& ctx, const SearchSpace& space, const SearchResult& closed, PlanFile file, bool tty) {
  ServePlanOptions so;
  so.top_k = a.top_k;
  so.disaggregated = !a.no_disagg;
  if (!a.serve.name.empty()) so.engine = parse_serve_engine(a.serve.name);
  so.target_rate = a.target_rate;
  so.requests = ctx.workload.serve.requests > 0 ? ctx.workload.serve.requests : 1000;
  if (tty) {
    so.progress = [](int done, int of) { std::fprintf(stderr, "\r  simulating candidates: %d/%d   ", done, of); };
  }
  const ServePlanResult r = plan_serving(ctx, space, closed.found ? std::optional<Plan>(closed.best) : std::nullopt, so);
  if (tty) std::fputc('\n', stderr);
  const bool found = r.best >= 0 && r.deployment_rate > 0;
  file = serve_plan_file(file, r, so.requests);
  if (!a.report.empty()) {  // written even when nothing was found: it says so
    if (auto e = write_file_whole(a.report, serve_plan_html(ctx, file, r, a.target_rate), "--report")) return fail(*e);
  }
  if (!a.out.empty()) {
    if (!found) {
      print(a.json ? serve_plan_json(ctx, file, r, a.target_rate, so.requests) : serve_plan_text(ctx, r, a.target_rate, so.requests));
      return fail(Error{"--out", "", "a plan that meets the SLOs to write to '" + a.out + "'", "none (why is printed above)"});
    }
    if (auto e = write_file_whole(a.out, plan_to_json(file) + "\n", "--out")) return fail(*e);
  }
  print(a.json ? serve_plan_json(ctx, file, r, a.target_rate, so.requests) : serve_plan_text(ctx, r, a.target_rate, so.requests));
  return 0;
}

int run_plan(const PlanArgs& a, const CliOptions& cli) {
  const Engine engine = find_engine(a.engine);
  if (!engine) return fail(Error{"--search", "", std::string("one of ") + engine_names(), "'" + a.engine + "'"});
  if (a.budget < 1) return fail(Error{"--budget", "", "a positive number of evaluations", std::to_string(a.budget)});
  if (!std::isfinite(a.time_limit) || a.time_limit < 0) {
    return fail(Error{"--time-limit", "", "a finite number of seconds >= 0 (0: none)", fmt::format("{}", a.time_limit)});
  }
  if (a.threads < 0 || a.threads > kMaxThreads) {
    return fail(Error{"--threads", "", fmt::format("a thread count from 1 to {} (0: all cores)", kMaxThreads), std::to_string(a.threads)});
  }
  const auto seed = parse_seed(a.seed);
  if (!seed) return fail(Error{"--seed", "", "an integer from 0 to 18446744073709551615", "'" + a.seed + "'"});
  if (!cli.allow_writes && (!a.out.empty() || !a.report.empty() || !a.save_policy.empty())) {
    return fail(Error{"--out/--report/--save-policy", "", "no file written (this caller forbids writes)", "a path"});
  }
  if (auto e = check_degree_flag("--redundant-experts", a.redundant_experts, 0)) return fail(*e);
  if (!(a.target_rate >= 0) || !std::isfinite(a.target_rate) || a.target_rate > 1e7) {
    return fail(Error{"--target-rate", "", "a positive number of requests/s up to 1e7", fmt::format("{}", a.target_rate)});
  }
  if (a.top_k < 0 || a.top_k > 1000) return fail(Error{"--top-k", "", "a number of candidates from 1 to 1000 (0: every screened one)", std::to_string(a.top_k)});
  auto in = load_inputs(a.model, a.cluster, a.workload, a.overrides);
  if (!in) return fail(in.error());
  if (a.target_rate > 0 && in->workload.mode != Mode::kServe) {
    return fail(Error{"--target-rate", "", "--mode serve (or a serve workload) beside it", fmt::format("mode {}", to_string(in->workload.mode))});
  }
  if (a.redundant_experts > 0 && a.redundant_experts > in->model.moe.num_experts) {
    return fail(Error{"--redundant-experts",
                      "",
                      in->model.is_moe() ? fmt::format("at most the {} routed experts (one copy each)", in->model.moe.num_experts)
                                         : std::string("0 for a dense model (it has no experts)"),
                      std::to_string(a.redundant_experts)});
  }
  auto serve_engine = engine_of(a.serve);
  if (!serve_engine) return fail(serve_engine.error());
  const std::optional<ServeEngine> serve_kind = a.serve.name.empty() ? std::nullopt : parse_serve_engine(a.serve.name);
  if (serve_kind && rl_engine_name(a.engine) && (!a.save_policy.empty() || !a.load_policy.empty())) {
    return fail(Error{"--save-policy/--load-policy", "", "no --engine beside them (with --engine the search is exhaustive over what the engine runs)", "--engine " + a.serve.name});
  }
  const SimContext ctx = make_context(in->model, in->cluster, in->workload, cost_params_for(in->cluster.gpu.name), *serve_engine);
  const SearchSpace space = make_space(in->model, in->cluster, in->workload, a.redundant_experts);
  SearchOptions opt;
  opt.budget = a.budget;
  opt.time_limit_s = a.time_limit;
  opt.seed = *seed;
  opt.threads = a.threads > 0 ? a.threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxThreads)));
  const bool tty = isatty(fileno(stderr)) != 0;
  if (tty) {
    opt.progress = [&](std::int64_t calls, double best, double elapsed) {
      std::string left = a.time_limit > 0 ? fmt::format(", {:.1f} s left", std::max(0.0, a.time_limit - elapsed)) : "";
      std::fprintf(stderr, "\r  %s: %lld/%lld calls, best %.1f tok/s/GPU, %.1f s%s   ", a.engine.c_str(),
                   static_cast<long long>(calls), static_cast<long long>(a.budget), best, elapsed, left.c_str());
    };
  }
  for (const auto& name : a.compare) {
    if (!find_engine(name)) return fail(Error{"--compare", "", std::string("engine names from ") + engine_names(), "'" + name + "'"});
  }
  opt.record_points = !a.report.empty();
  // checked before the search: a bad path fails at once, and no empty file is left
  // (--load-policy may equal --save-policy: the policy is read before the new one replaces it whole)
  if (auto e = distinct_outputs({{"--out", a.out}, {"--report", a.report}, {"--save-policy", a.save_policy}})) {
    return fail(*e);
  }
  if (!a.report.empty() && !writable_path(a.report)) return fail(Error{"--report", "", "a writable file path", "'" + a.report + "'"});
  if (!a.out.empty() && !writable_path(a.out)) return fail(Error{"--out", "", "a writable file path", "'" + a.out + "'"});
  if (!a.save_policy.empty() && !writable_path(a.save_policy)) {
    return fail(Error{"--save-policy", "", "a writable file path", "'" + a.save_policy + "'"});
  }
  const bool rl_engine = rl_engine_name(a.engine) && !serve_kind;
  if ((!a.save_policy.empty() || !a.load_policy.empty()) && a.engine != "rl-paper") {
    return fail(Error{"--save-policy/--load-policy", "",
                      "--search rl-paper (the engine with a policy network; rl runs none: docs/search.md)", "--search " + a.engine});
  }
  std::optional<rl::Policy> warm;
  if (!a.load_policy.empty()) {
    auto text = read_text_file(a.load_policy);
    if (!text) return fail(text.error());
    auto p = rl::Policy::load(*text, a.load_policy);
    if (!p) return fail(p.error());
    warm = std::move(p).value();
  }
  PlanOutcome o;
  o.space_size = space.size();
  if (rl_engine) {
    const rl::AgentSettings settings = a.engine == "rl" ? rl::improved_settings() : rl::AgentSettings{};
    std::unique_ptr<rl::Policy> trained;
    rl::AgentStats st;
    o.search = rl::search_rl(ctx, space, opt, settings, warm ? &*warm : nullptr, &trained, &st);
    if (warm && st.warm_values == 0) {
      std::fprintf(stderr, "shardwise: %s cannot be carried to this space (%s); started cold\n", a.load_policy.c_str(), st.warm_error.c_str());
    } else if (warm && st.warm_matched < st.warm_values) {
      std::fprintf(stderr, "shardwise: %s was trained on another space: it knew %d of this space's %d action values, carried over by label\n",
                   a.load_policy.c_str(), st.warm_matched, st.warm_values);
    }
    if (!a.save_policy.empty() && trained) {
      if (auto e = write_file_whole(a.save_policy, trained->save(), "--save-policy")) return fail(*e);
    }
  } else if (serve_kind) {
    // --engine: only the plans that engine runs as planned, all of them (cost/engine_limits.hpp)
    o.search = search_for_engine(ctx, space, opt, *serve_kind);
  } else {
    o.search = engine(ctx, space, opt);
  }
  refine_two_batch_overlap(ctx, space, opt, o.search, serve_kind);
  if (tty) std::fputc('\n', stderr);
  for (const auto& name : a.compare) {
    if (name == a.engine) continue;
    SearchOptions copt = opt;
    if (tty) {
      copt.progress = [&](std::int64_t calls, double best, double elapsed) {
        std::fprintf(stderr, "\r  compare %s: %lld/%lld calls, best %.1f tok/s/GPU, %.1f s   ", name.c_str(), static_cast<long long>(calls),
                     static_cast<long long>(a.budget), best, elapsed);
      };
    }
    o.compared.push_back(find_engine(name)(ctx, space, copt));
    if (tty) std::fputc('\n', stderr);
  }
  SearchOptions base_opt = opt;
  base_opt.progress = nullptr;
  base_opt.time_limit_s = 0;
  o.baseline = a.engine == "megatron" ? o.search : search_megatron(ctx, space, base_opt);
  PlanFile file{o.search.best, a.model, a.cluster, a.workload, a.overrides, std::nullopt};
  file.overrides.batch.reset();  // the plan carries its own batch
  if (ctx.workload.mode == Mode::kServe) return run_serve_plan(a, ctx, space, o.search, file, tty);
  if (o.search.found) o.metrics = evaluate(ctx, o.search.best, &o.breakdown);
  if (o.baseline.found) o.baseline_metrics = evaluate(ctx, o.baseline.best, &o.baseline_breakdown);
  if (!o.search.found) {
    // nothing feasible: the closest plan and the limit it broke (the search's, else the
    // baseline's: the exact engine keeps no per-plan record)
    const SearchResult& near = o.search.closest || !o.search.invalid_example.empty() ? o.search : o.baseline;
    if (near.closest) {
      o.closest = *near.closest;
      o.closest_metrics = evaluate(ctx, *near.closest);
    }
    o.invalid_example = near.invalid_example;
  }
  if (!a.report.empty() && o.search.found) {
    // the chosen plan at every batch of the ladder: its own throughput-latency curve
    for (const std::int64_t per_group : space.batch) {
      Plan p = o.search.best;
      p.batch = per_group * p.deg.attn_dp;
      if (auto pt = eval_point(ctx, p, evaluate(ctx, p, nullptr, false))) o.sweep.push_back(*pt);
    }
  }
  if (!a.report.empty()) {  // written even when no plan was found: it says so
    if (auto e = write_file_whole(a.report, plan_html(ctx, file, o), "--report")) return fail(*e);
  }
  if (!a.out.empty()) {
    if (!o.search.found) {
      // the result (with the closest plan and why) is printed; then the refusal to write
      print(a.json ? plan_json(ctx, file, o) : plan_text(ctx, file, o));
      return fail(Error{"--out", "", "a feasible plan to write to '" + a.out + "'",
                        "no feasible plan for these inputs (the closest and the limit it broke are printed above)"});
    }
    if (auto e = write_file_whole(a.out, plan_to_json(file) + "\n", "--out")) return fail(*e);
  }
  print(a.json ? plan_json(ctx, file, o) : plan_text(ctx, file, o));
  return 0;
}

struct SweepArgs {
  std::string model, workload = "chat-1k-1k", search = "exact", prices, csv, svg;
  std::vector<std::string> gpus, dtypes, engines;
  std::vector<std::int64_t> counts;
  WorkloadOverrides overrides;
  std::int64_t budget = 4000;
  std::string seed = "1";
  int threads = 0;
  bool json = false;
};

int run_sweep_cmd(const SweepArgs& a, const CliOptions& cli) {
  if (a.model.empty()) return fail(Error{"sweep", "", "--model", "none"});
  if (a.budget < 1) return fail(Error{"--budget", "", "a positive number of evaluations", std::to_string(a.budget)});
  if (a.threads < 0 || a.threads > kMaxThreads) {
    return fail(Error{"--threads", "", fmt::format("a thread count from 1 to {} (0: all cores)", kMaxThreads), std::to_string(a.threads)});
  }
  const auto seed = parse_seed(a.seed);
  if (!seed) return fail(Error{"--seed", "", "an integer from 0 to 18446744073709551615", "'" + a.seed + "'"});
  if (!cli.allow_writes && (!a.csv.empty() || !a.svg.empty())) return fail(Error{"--csv/--svg", "", "no file written (this caller forbids writes)", "a path"});
  if (auto e = distinct_outputs({{"--csv", a.csv}, {"--svg", a.svg}, {"--prices", a.prices}})) return fail(*e);
  if (!a.csv.empty() && !writable_path(a.csv)) return fail(Error{"--csv", "", "a writable file path", "'" + a.csv + "'"});
  if (!a.svg.empty() && !writable_path(a.svg)) return fail(Error{"--svg", "", "a writable file path", "'" + a.svg + "'"});
  auto model = load_model(a.model);
  if (!model) return fail(model.error());
  auto w = load_workload(a.workload);
  if (!w) return fail(w.error());
  auto wo = apply_overrides(*w, a.overrides);
  if (!wo) return fail(wo.error());
  auto prices = load_prices(a.prices);
  if (!prices) return fail(prices.error());
  SweepOptions o;
  o.gpus = a.gpus;
  o.counts = a.counts;
  if (!a.dtypes.empty()) o.dtypes = a.dtypes;
  for (std::string& d : o.dtypes) d = d == "auto" ? "" : d;
  if (!a.engines.empty()) o.engines = a.engines;
  for (std::string& e : o.engines) e = e == "generic" ? "" : e;
  o.search = a.search;
  o.search_options.budget = a.budget;
  o.search_options.seed = *seed;
  o.search_options.threads = a.threads > 0 ? a.threads : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxThreads)));
  if (isatty(fileno(stderr)) != 0) {
    o.progress = [](std::size_t done, std::size_t of) { std::fprintf(stderr, "\r  sweep: %zu/%zu points   ", done, of); };
  }
  // under mpirun: each process plans its share of the points, rank 0 gathers and prints
  const ProcessGroup group = join_process_group();
  struct Leave {
    const ProcessGroup& g;
    ~Leave() { leave_process_group(g); }
  } leave{group};
  o.rank = group.rank;
  o.ranks = group.size;
  if (group.rank != 0) o.progress = nullptr;
  auto pts = run_sweep(*model, *wo, o, *prices);
  if (o.progress) std::fputc('\n', stderr);
  if (!pts) return group.rank == 0 ? fail(pts.error()) : kExitBadInput;
  if (group.size > 1) {
    std::vector<std::string> mine;
    for (std::size_t i = static_cast<std::size_t>(group.rank); i < pts->size(); i += static_cast<std::size_t>(group.size)) {
      mine.push_back(std::to_string(i) + " " + sweep_point_to_json((*pts)[i]));
    }
    const auto all = gather_lines(group, mine);
    // the other processes exit with rank 0's status: a failed write fails the whole job
    if (group.rank != 0) return share_status(group, 0);
    for (const auto& line : all) {
      const auto sp = line.find(' ');
      (*pts)[static_cast<std::size_t>(std::stoull(line.substr(0, sp)))] = sweep_point_from_json(line.substr(sp + 1));
    }
    mark_fewest(*pts);
  }
  const int status = [&] {
    if (!a.csv.empty()) {
      if (auto e = write_file_whole(a.csv, sweep_csv(*pts), "--csv")) return fail(*e);
    }
    if (!a.svg.empty()) {
      const std::string svg = sweep_svg(fmt::format("{} at {}: USD per million output tokens", model->name, wo->name), *pts);
      if (auto e = write_file_whole(a.svg, svg, "--svg")) return fail(*e);
    }
    print(a.json ? sweep_json(model->name, wo->name, *pts) : sweep_text(model->name, wo->name, *pts));
    if (auto e = flush_stdout()) return fail(*e);
    return 0;
  }();
  return share_status(group, status);
}

struct LaunchArgs {
  std::string plan_file, engine, model_path, head_address = "<HEAD_NODE_IP>";
  int port = 0;
};

int run_launch(const LaunchArgs& a) {
  const auto engine = parse_serve_engine(a.engine);
  if (!engine) return fail(Error{"--engine", "", "one of vllm, sglang, trtllm", "'" + a.engine + "'"});
  if (a.port < 0 || a.port > 65535) return fail(Error{"--port", "", "a TCP port (1-65535, 0: the engine's default)", std::to_string(a.port)});
  // printed into shell commands and comments: quoted there (report/launch.cpp), and a control
  // character, which no command line a user reads can carry, is refused
  for (const auto& [flag, value] : {std::pair{"--model-path", &a.model_path}, {"--head-address", &a.head_address}}) {
    if (std::any_of(value->begin(), value->end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      return fail(Error{flag, "", "a value without control characters (newline, tab, escape)", "'" + *value + "'"});
    }
  }
  auto f = load_plan_file(a.plan_file);
  if (!f) return fail(f.error());
  if (f->model.empty() || f->cluster.empty() || f->workload.empty()) {
    return fail(Error{a.plan_file, "model/cluster/workload", "the names the plan was made for (written by 'shardwise plan --out')", "none"});
  }
  InputSource src;  // every name and override came from the plan file: errors name its fields
  src.plan_file = a.plan_file;
  src.model_from_plan = src.cluster_from_plan = src.workload_from_plan = true;
  src.plan_overrides = &f->overrides;
  auto in = load_inputs(f->model, f->cluster, f->workload, WorkloadOverrides{}, src);  // the plan carries its batch
  if (!in) return fail(in.error());
  Plan probe = f->plan;  // batch "max" (a serve plan): the engine admits what fits
  if (probe.batch == 0) probe.batch = probe.deg.attn_dp;
  if (auto why = validate_plan(probe, in->model, in->cluster)) {
    return fail(Error{a.plan_file, "plan", fmt::format("a plan valid on {} and {}", in->model.name, in->cluster.name), *why});
  }
  // a local checkpoint folder must hold the plan's model (its quantisation may differ)
  if (std::error_code ec; !a.model_path.empty() && std::filesystem::is_directory(a.model_path, ec)) {
    auto local = load_model(a.model_path);
    if (!local) return fail(blame(local.error(), "--model", "--model-path", ""));
    ModelSpec mine = *local;
    mine.name = in->model.name;
    mine.source = in->model.source;
    mine.quant = in->model.quant;
    if (!(mine == in->model)) {
      return fail(Error{"--model-path", "", fmt::format("a checkpoint of the plan's model {} ({})", in->model.name, in->model.architecture),
                        fmt::format("'{}', a {} of another shape", a.model_path, local->architecture)});
    }
  }
  EngineTraits settings;  // a serve plan's running-sequence cap and token budget
  if (f->max_num_seqs) settings.max_num_seqs = *f->max_num_seqs;
  if (f->max_num_tokens) settings.max_num_tokens = *f->max_num_tokens;
  const SimContext ctx = make_context(in->model, in->cluster, in->workload, cost_params_for(in->cluster.gpu.name), settings);
  const SearchSpace space = make_space(in->model, in->cluster, in->workload, f->plan.redundant_experts);
  const EngineFit fit = fit_engine(*engine, ctx, space, f->plan);
  LaunchOptions o;
  o.engine = *engine;
  o.model_path = a.model_path;
  o.head_address = a.head_address;
  o.port = a.port;
  if (f->prefill_pool) {  // disaggregated: each pool fitted to the engine, then the router
    Plan pre = *f->prefill_pool;
    Plan pre_probe = pre;
    pre_probe.batch = pre.deg.attn_dp;
    if (auto why = validate_plan(pre_probe, in->model, in->cluster)) {
      return fail(Error{a.plan_file, "disaggregated.prefill", fmt::format("a prefill pool valid on {} and {}", in->model.name, in->cluster.name), *why});
    }
    // both pools on the cluster's GPUs: no command for a GPU that does not exist
    const std::int64_t pool_gpus = pre.deg.total_gpus() + f->plan.deg.total_gpus();
    if (pool_gpus > in->cluster.num_gpus) {
      return fail(Error{a.plan_file, "disaggregated", fmt::format("pools that fit the cluster's {} GPUs", in->cluster.num_gpus),
                        fmt::format("{} prefill + {} decode = {} GPUs", pre.deg.total_gpus(), f->plan.deg.total_gpus(), pool_gpus)});
    }
    const SearchSpace pspace = make_space(in->model, in->cluster, in->workload, pre.redundant_experts);
    const EngineFit pfit = fit_engine(*engine, ctx, pspace, pre);
    print(launch_disagg_text(ctx, *f, pfit, fit, o));
    return 0;
  }
  print(launch_text(ctx, *f, fit, o));
  return 0;
}

int run_models(bool json) {
  std::vector<ModelSpec> models;
  for (const auto& name : model_preset_names()) {
    auto m = load_model(name);
    if (!m) return fail(m.error());
    models.push_back(std::move(m).value());
  }
  print(json ? list_models_json(models) : list_models_text(models));
  return 0;
}

int run_workloads() {
  std::vector<Workload> ws;
  for (const auto& name : workload_preset_names()) {
    auto w = load_workload(name);
    if (!w) return fail(w.error());
    ws.push_back(std::move(w).value());
  }
  print(list_workloads_text(ws));
  return 0;
}

struct VerifyArgs {
  std::string model, plan_file, drop, json, mpirun;
  std::optional<std::string> sharding;  // default: the plan file's, else megatron
  std::optional<std::int32_t> tp, pp, ep, attn_dp, micro_batches;
  std::uint64_t seed = 1;
  std::int32_t decode_steps = 2;
  bool quiet = false;
};

int run_verify(VerifyArgs a) {
  for (const auto& e : {check_degree_flag("--tp", a.tp, 1), check_degree_flag("--pp", a.pp, 1), check_degree_flag("--ep", a.ep, 1),
                        check_degree_flag("--attn-dp", a.attn_dp, 1), check_degree_flag("--micro-batches", a.micro_batches, 0)}) {
    if (e) return fail(*e);
  }
  if (a.decode_steps < 0 || a.decode_steps > 16) {
    return fail(Error{"--decode-steps", "", "decode steps from 0 to 16", std::to_string(a.decode_steps)});
  }
  exec::VerifyOptions o;
  if (!a.plan_file.empty()) {
    auto f = load_plan_file(a.plan_file);
    if (!f) return fail(f.error());
    o.plan = f->plan;
    if (a.model.empty()) a.model = f->model;
    if (!f->model.empty() && a.model != f->model) {
      std::printf("verify: note: %s was made for %s; running it on --model %s\n", a.plan_file.c_str(), f->model.c_str(), a.model.c_str());
    }
  }
  if (a.model.empty()) return fail(Error{"verify", "", "--model (or a --plan file naming one)", "none"});
  auto m = load_model(a.model);
  if (!m) return fail(m.error());
  if (a.sharding) {
    auto sh = exec::resolve_sharding(*a.sharding, m.value());
    if (!sh) return fail(sh.error());
    o.plan.sharding = *sh;
  }
  if (a.tp) o.plan.deg.tp = *a.tp;
  if (a.pp) o.plan.deg.pp = *a.pp;
  if (a.ep) o.plan.deg.ep = *a.ep;
  if (a.attn_dp) o.plan.deg.attn_dp = *a.attn_dp;
  if (a.micro_batches) o.plan.micro_batches = *a.micro_batches;
  o.plan.deg.replicas = 1;  // one instance is what runs; replicas are copies of it
  if (o.plan.two_batch_overlap) {
    // the overlap changes when the all-to-alls run, not what any rank computes or sends
    std::printf("verify: note: the plan's two-batch overlap is a schedule; its arithmetic and bytes are verified as one batch\n");
    o.plan.two_batch_overlap = false;
  }
  if (!a.drop.empty()) {
    std::string why;
    o.fault = exec::parse_fault(a.drop, &why);
    if (!o.fault.active()) return fail(Error{"--drop", "", why, a.drop});
  }
  o.model = a.model;
  o.seed = a.seed;
  o.decode_steps = a.decode_steps;
  o.json = a.json;
  o.mpirun = a.mpirun;
  o.quiet = a.quiet;
  std::printf("verify: %s on %lld ranks: tp %d, attn_dp %d, pp %d, ep %d, sharding %s\n", a.model.c_str(),
              static_cast<long long>(o.plan.deg.instance_gpus()), o.plan.deg.tp, o.plan.deg.attn_dp, o.plan.deg.pp, o.plan.deg.ep,
              sharding_to_string(o.plan.sharding).c_str());
  auto r = exec::verify(o);
  if (!r) return fail(r.error());
  return *r;
}

int run_cli_unguarded(int argc, const char* const* argv, const CliOptions& cli) {
  CLI::App app{
      "shardwise: plans how to shard a large language model over a GPU cluster for inference.\n"
      "It searches parallelism degrees and per-operator sharding and predicts throughput, latency and memory."};
  app.set_version_flag("--version", "shardwise 0.1.0");
  app.require_subcommand(1);
  app.fallthrough(false);

  bool models_json = false;
  auto* models = app.add_subcommand("models", "List the built-in model presets with their parameter counts");
  models->add_flag("--json", models_json, "Print JSON");

  app.add_subcommand("clusters", "List the GPU catalog and the '<gpu>x<count>' cluster preset form");
  app.add_subcommand("workloads", "List the built-in workload presets");

  DescribeArgs d;
  auto* describe = app.add_subcommand("describe",
                                      "Describe a model (parameters total and active, layers by kind, KV-cache bytes per "
                                      "token, weight bytes, FLOPs per token), a cluster and/or a workload");
  describe->add_option("--model", d.model, "A model preset name (see 'shardwise models') or the path of a config.json");
  describe->add_option("--cluster", d.cluster, "A cluster preset '<gpu>x<count>' (e.g. h100x8) or the path of a cluster YAML");
  describe->add_option("--workload", d.workload, "A workload preset (see 'shardwise workloads') or the path of a workload YAML");
  add_workload_flags(describe, d.overrides);
  describe->add_flag("--ops", d.ops, "Also list the fused-op chain of every layer class (dims, weights, FLOPs, bytes)");
  describe->add_flag("--json", d.json, "Print one JSON object (keys include params_total, params_active, kv_bytes_per_token)");

  SimulateArgs sa;
  auto* simulate = app.add_subcommand("simulate",
                                      "Predict throughput, latency and memory of one plan: degrees, batch and per-op sharding");
  simulate->add_option("--model", sa.model, "A model preset or the path of a config.json");
  simulate->add_option("--cluster", sa.cluster, "A cluster preset '<gpu>x<count>' or the path of a cluster YAML");
  simulate->add_option("--workload", sa.workload, "A workload preset or YAML (default decode-16k)");
  add_workload_flags(simulate, sa.overrides);
  simulate->add_option("--seed", sa.overrides.seed, "Serve: the seed of the arrivals and lengths (default 1)");
  add_degree_flags(simulate, sa.tp, sa.pp, sa.ep, sa.attn_dp, sa.micro_batches, &sa.redundant_experts);
  simulate->add_option("--replicas", sa.replicas, "Copies of the model instance (default 1); with --prefill-instances, the decode pool's instances");
  simulate->add_option("--prefill-instances", sa.prefill_instances,
                       "Serve disaggregated: this many prefill instances beside the decode pool the other degree flags describe");
  simulate->add_option("--prefill-tp", sa.prefill_tp, "Disaggregated: the prefill instances' tp (default: the decode pool's)");
  simulate->add_option("--prefill-pp", sa.prefill_pp, "Disaggregated: the prefill instances' pp");
  simulate->add_option("--prefill-ep", sa.prefill_ep, "Disaggregated: the prefill instances' ep");
  simulate->add_option("--prefill-attn-dp", sa.prefill_attn_dp, "Disaggregated: the prefill instances' attention data parallel");
  simulate->add_flag("--two-batch-overlap", sa.two_batch_overlap,
                     "MoE with attention DP and EP: run each step as two micro-batches whose all-to-all overlaps the other's compute "
                     "(vLLM --enable-dbo, SGLang --enable-two-batch-overlap; docs/cost-model.md)");
  simulate->add_option("--sharding", sa.sharding,
                       "Per-op sharding: megatron (default), allgather (the paper's FFN2-on-hidden), dp-mlp (Megatron's with "
                       "the dense MLPs data-parallel, as engines run attention DP), or a YAML/JSON file mapping op slots to dimensions");
  simulate->add_option("--plan", sa.plan_file, "A plan.json (degrees, batch, sharding); flags given beside it override it");
  add_engine_flags(simulate, sa.engine);
  simulate->add_flag("--json", sa.json, "Print one JSON object (feasible, reason, throughput_tok_s_per_gpu, tpot_ms, ...)");

  PlanArgs pa;
  auto* plan = app.add_subcommand("plan", "Search for the best plan (degrees, batch, per-op sharding) and compare it with Megatron's");
  plan->add_option("--model", pa.model, "A model preset or the path of a config.json")->required();
  plan->add_option("--cluster", pa.cluster, "A cluster preset '<gpu>x<count>' or the path of a cluster YAML")->required();
  plan->add_option("--workload", pa.workload, "A workload preset or YAML")->required();
  add_workload_flags(plan, pa.overrides);
  plan->add_option("--search", pa.engine, "Search engine: rl (Learning to Shard's elite history as a masked local search with polishing, no network: it was measured to add nothing; default), rl-paper (the paper's policy network and PPO, as published), exact (the optimum of "
                 "degrees and sharding over the batch ladder, each winner at its own largest feasible batch), megatron, rw (random walk), sa (simulated annealing), ga (genetic)");
  plan->add_option("--budget", pa.budget, "Simulator calls the search may make, invalid ones included (default 4000)");
  plan->add_option("--redundant-experts", pa.redundant_experts,
                   "MoE: redundant expert slots (EPLB) every plan carries; ep ranges over the divisors of experts + N (default 0)");
  plan->add_option("--time-limit", pa.time_limit,
                   "Stop each engine's search after this many seconds (default: none). It applies to the chosen engine and to each "
                   "--compare engine separately; the Megatron baseline (exhaustive over its small space) is not limited");
  plan->add_option("--seed", pa.seed, "Random seed, 0 to 2^64-1 (default 1); the same seed gives the same plan whatever --threads");
  plan->add_option("--threads", pa.threads, "Threads for parallel evaluation, 1 to 256 (default: all cores)");
  plan->add_option("--save-policy", pa.save_policy, "With --search rl-paper: write the trained policy network to this file");
  plan->add_option("--load-policy", pa.load_policy, "With --search rl-paper: start from a saved policy instead of a random one");
  plan->add_option("--out", pa.out, "Write the chosen plan as plan.json (docs/plan-format.md)");
  plan->add_option("--report", pa.report,
                   "Write a self-contained HTML report (summary, per-op table, time per op, memory, convergence, throughput-latency "
                   "frontier)");
  plan->add_option("--compare", pa.compare, "Also run these engines (comma-separated, e.g. rw,sa,rl) with the same budget and seed; "
                   "listed in the output and the report's convergence chart")
      ->delimiter(',');
  add_engine_flags(plan, pa.serve);
  plan->add_option("--target-rate", pa.target_rate,
                   "Serve: the fewest GPUs (and the plan) that serve this many requests/s within the SLOs (docs/serving.md)");
  plan->add_flag("--no-disagg", pa.no_disagg, "Serve: do not size disaggregated prefill/decode deployments beside the aggregated ones");
  plan->add_option("--top-k", pa.top_k, "Serve: candidates the closed-form screen passes to the simulation (default 24; 0: all)");
  plan->add_flag("--json", pa.json, "Print one JSON object (plan, metrics, evaluations, wall_s, baseline_megatron)");

  VerifyArgs va;
  auto* verify = app.add_subcommand("verify",
                                    "Run a plan on a scaled-down model with real MPI collectives and check it: logits equal to one "
                                    "rank's within 1e-9, bytes of every collective equal to the simulator's (docs/exec.md)");
  verify->add_option("--model", va.model, "A model preset or the path of a config.json (default: the --plan file's)");
  verify->add_option("--plan", va.plan_file, "A plan.json; degree and sharding flags given beside it override it");
  add_degree_flags(verify, va.tp, va.pp, va.ep, va.attn_dp, va.micro_batches);
  verify->add_option("--sharding", va.sharding,
                     "megatron (default), allgather, random:SEED (a random choice per op slot) or a YAML/JSON file of slot choices");
  verify->add_option("--seed", va.seed, "Seed of the weights and token ids (default 1)");
  verify->add_option("--decode-steps", va.decode_steps, "Decode steps after the prefill (default 2, at most 16)");
  verify->add_option("--drop", va.drop,
                     "OP:LAYER[:INDEX[:prefill|decode|both]]: skip the collectives of one op in one layer (or only the INDEX-th of "
                     "each execution of it), to show that both checks catch a missing collective; exit 2 if it matches none");
  verify->add_option("--json", va.json, "Also write the result (pass, max_relative_error, every collective's bytes) to this file");
  verify->add_option("--mpirun", va.mpirun, "The MPI launcher (default: mpirun on PATH)");
  verify->add_flag("--quiet", va.quiet, "Print the verdict and the mismatches only");

  LaunchArgs la;
  SweepArgs swa;
  auto* sweep = app.add_subcommand("sweep", "Plan every point of GPU types x counts (x formats x engines) and price it (docs/sweep.md)");
  sweep->add_option("--model", swa.model, "A model preset, config.json or folder")->required();
  sweep->add_option("--workload", swa.workload, "A workload preset or YAML (default chat-1k-1k)");
  add_workload_flags(sweep, swa.overrides);
  sweep->add_option("--gpus", swa.gpus, "GPU types, comma-separated (h100,h200,b200,...)")->delimiter(',')->required();
  sweep->add_option("--counts", swa.counts, "GPU counts, comma-separated (8,16,32,...)")->delimiter(',')->required();
  sweep->add_option("--dtypes", swa.dtypes, "Weight formats to compare, comma-separated (auto = the checkpoint's own)")->delimiter(',');
  sweep->add_option("--engines", swa.engines, "Serving engines to compare (vllm,sglang,trtllm; generic = the free search)")->delimiter(',');
  sweep->add_option("--search", swa.search, "The search engine at each point (default exact)");
  sweep->add_option("--budget", swa.budget, "Evaluations per point for the sampling engines (default 4000)");
  sweep->add_option("--seed", swa.seed, "Random seed (default 1)");
  sweep->add_option("--threads", swa.threads, "Search threads (default: all cores)");
  sweep->add_option("--prices", swa.prices, "USD per GPU-hour, a YAML like data/prices/default.yaml (default: the shipped placeholders)");
  sweep->add_option("--csv", swa.csv, "Also write the points as CSV");
  sweep->add_option("--svg", swa.svg, "Also write the chart of USD per million output tokens against the GPU count");
  sweep->add_flag("--json", swa.json, "Print one JSON object (model, workload, points)");

  auto* launch = app.add_subcommand("launch", "Print the commands that start a plan on vLLM, SGLang or TensorRT-LLM (docs/launch.md)");
  launch->add_option("--plan", la.plan_file, "A plan.json written by 'shardwise plan --out'")->required();
  launch->add_option("--engine", la.engine, "vllm, sglang or trtllm")->required();
  launch->add_option("--model-path", la.model_path, "The checkpoint (HF repo id or folder); default: the preset's HF repository");
  launch->add_option("--head-address", la.head_address, "The head node's address for multi-node plans (default: a placeholder)");
  launch->add_option("--port", la.port, "The HTTP port of the first instance (default: the engine's)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "shardwise: %s\nRun 'shardwise --help' or 'shardwise <command> --help'.\n", e.what());
    return kExitBadInput;
  }

  if (models->parsed()) return run_models(models_json);
  if (app.got_subcommand("clusters")) {
    print(list_gpus_text());
    return 0;
  }
  if (app.got_subcommand("workloads")) return run_workloads();
  if (describe->parsed()) return run_describe(d);
  if (simulate->parsed()) return run_simulate(sa);
  if (plan->parsed()) return run_plan(pa, cli);
  if (launch->parsed()) return run_launch(la);
  if (sweep->parsed()) return run_sweep_cmd(swa, cli);
  if (verify->parsed()) {
    if (!cli.allow_verify) return fail(Error{"verify", "", "another command (this caller does not start mpirun)", "verify"});
    return run_verify(va);
  }
  return 0;
}
}  // namespace

int run_cli(int argc, const char* const* argv, const CliOptions& options) {
  // bad input is answered with exit 2 where it is found; anything thrown is a bug or the
  // machine refusing (no memory, no thread): exit 1 with a message, never a signal
  try {
    const int status = run_cli_unguarded(argc, argv, options);
    // what was printed must have arrived: a full disk or a closed pipe is exit 2, never 0
    if (auto e = flush_stdout()) return status != 0 ? status : fail(*e);
    return status;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "shardwise: internal error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardwise: internal error: out of memory\n");
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "shardwise: internal error: the system refused a resource: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "shardwise: internal error: an unknown exception\n");
  }
  return kExitInternal;
}

}  // namespace shardwise
