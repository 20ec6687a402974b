#include "report/launch_plan.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "model/loader.hpp"
#include "cost/engine.hpp"
#include "cost/phases.hpp"
#include "plan/space.hpp"
#include "report/serve_report.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"
#include "report/bench_command.hpp"
#include "report/launch_k8s.hpp"
#include "report/phases_report.hpp"

namespace shardwise {
namespace {

// A serve plan's traffic simulated on what the commands start (aggregated, or the two pools):
// one line, "" when the workload has no arrivals to simulate.
std::string serving_line(const SimContext& ctx, Plan plan, std::optional<Plan> prefill, const PoolSettings& prefill_settings = {}) {
  const Workload& w = ctx.workload;
  if (w.mode != Mode::kServe || !has_arrivals(w)) return "";
  plan.batch = 0;  // the engine's running-sequence cap and the KV cache bound what runs
  if (prefill) prefill->batch = 0;
  const ServeResult r = prefill ? simulate_disaggregated(ctx, DisaggPlan{*prefill, plan, prefill_settings, {}}).total : simulate_serving(ctx, plan);
  if (r.stopped) return "";
  if (r.kv_tokens < 1 || r.requests == 0) return "not simulated: " + r.reason;
  return fmt::format("{}, simulated over {} requests: TTFT p50 {:.1f} ms p99 {:.1f} ms, TPOT p50 {:.2f} ms p99 {:.2f} ms, {:.1f} output "
                     "tokens/s per GPU; {}",
                     arrivals_label(w), r.requests * std::max<std::int64_t>(1, prefill ? 1 : plan.deg.replicas), r.ttft_ms.p50, r.ttft_ms.p99,
                     r.tpot_ms.p50, r.tpot_ms.p99, r.output_tok_s_per_gpu, r.feasible ? "within the SLOs" : "INFEASIBLE: " + r.reason);
}

// The text's own comment lines (the plan, its prediction, the layout, each pool's, the
// notes) for the manifests' head; not the lines about starting a node or the router, which
// the manifests replace.
std::string comment_lines(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  bool node = false, router = false;  // inside a node's commands (until a blank line); the router's section
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (line.empty()) node = false;
    if (line.starts_with("### ")) {
      router = line.find("router") != std::string::npos;
      if (!router) out += "# " + line.substr(4) + "\n";
    } else if (line.starts_with("## ")) {
      node = true;
    } else if (line.starts_with("# ") && !node && !router) {
      out += line + "\n";
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

}  // namespace

Expected<std::string> launch_plan(const PlanFile& f, const std::string& file, const ModelSpec& model, const ClusterSpec& cluster,
                                  const Workload& workload, const LaunchOptions& o) {
  if (o.port < 0 || o.port > 65535) return Error{"--port", "", "a TCP port (1-65535, 0: the engine's default)", std::to_string(o.port)};
  if (o.format != "text" && o.format != "k8s") return Error{"--format", "", "text or k8s", "'" + o.format + "'"};
  if (!o.image.empty() && o.format != "k8s") return Error{"--image", "", "--format k8s beside it (the image of the manifests)", "'" + o.image + "'"};
  if (std::any_of(o.image.begin(), o.image.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    return Error{"--image", "", "a container image reference (no spaces or control characters)", "'" + o.image + "'"};
  }
  // printed into shell commands and comments: quoted there (report/launch.cpp), and a control
  // character, which no command line a user reads can carry, is refused
  for (const auto& [flag, value] : {std::pair{"--model-path", &o.model_path}, {"--head-address", &o.head_address}}) {
    if (std::any_of(value->begin(), value->end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      return Error{flag, "", "a value without control characters (newline, tab, escape)", "'" + *value + "'"};
    }
  }
  if (f.phases) {
    // no engine switches layouts within an instance: the plan file's top level (plan --phases
    // writes the best static plan there) launches, said at the top with the figures of each
    PlanFile stat = f;
    stat.phases.reset();
    auto text = launch_plan(stat, file, model, cluster, workload, o);
    if (!text) return text;
    // the path as typed, control bytes escaped: a newline in it must not end the comment
    std::string head = "# " + printable(file) + " is a phase plan (" + phase_plan_label(*f.phases) + "): " + phases_launch_note() + ".\n";
    if (workload.mode == Mode::kOffline) {
      const SimContext ctx = make_context(model, cluster, workload, o.params ? *o.params : cost_params_for(cluster.gpu.name));
      const PhaseCost pc = evaluate_phases(ctx, *f.phases, phase_options_for(*f.phases));
      const Metrics sm = evaluate(ctx, f.plan, nullptr, false);
      head += fmt::format("# the phase plan: {:.1f} output tokens/s per GPU; launched here, the static plan of the top level: {:.1f}\n",
                          pc.metrics.feasible() ? pc.metrics.output_tok_s_per_gpu : 0.0, sm.feasible() ? sm.output_tok_s_per_gpu : 0.0);
    }
    return head + *text;
  }
  Plan probe = f.plan;  // batch "max" (a serve plan): the engine admits what fits
  if (probe.batch == 0) probe.batch = probe.deg.attn_dp;
  if (auto why = validate_plan(probe, model, cluster)) {
    return Error{file, "plan", fmt::format("a plan valid on {} and {}", model.name, cluster.name), *why};
  }
  LaunchOptions opts = o;
  // a local checkpoint folder must hold the plan's model (its quantisation may differ)
  if (std::error_code ec; !o.model_path.empty() && std::filesystem::is_directory(o.model_path, ec)) {
    auto local = load_model(o.model_path);
    if (!local) {
      Error e = local.error();
      if (e.file == "--model") {
        e.file = "--model-path";
        e.field.clear();
      }
      return e;
    }
    ModelSpec mine = *local;
    mine.name = model.name;
    mine.source = model.source;
    mine.quant = model.quant;
    if (!(mine == model)) {
      return Error{"--model-path", "", fmt::format("a checkpoint of the plan's model {} ({})", model.name, model.architecture),
                   fmt::format("'{}', a {} of another shape", o.model_path, local->architecture)};
    }
    opts.checkpoint_quant = local->quant.method;
  }
  // the launched engine's profile (at the plan's version when the plan was made for it), with a
  // serve plan's running-sequence cap and token budget: what the serving prediction runs
  auto profile = load_engine_profile(to_string(o.engine), f.engine && *f.engine == to_string(o.engine) ? f.engine_version.value_or("") : "");
  EngineTraits settings = profile ? *profile : EngineTraits{};
  if (auto e = engine_gpu_error(settings, cluster.gpu, "--engine")) return *e;
  if (f.max_num_seqs) settings.max_num_seqs = *f.max_num_seqs;
  if (f.max_num_tokens) settings.max_num_tokens = *f.max_num_tokens;
  // decode steps where the engine runs them (the others schedule every iteration: a note says so)
  if (f.decode_steps && o.engine == ServeEngine::kSglang) settings.decode_steps = *f.decode_steps;
  // attention-DP balancing where the engine runs it (TensorRT-LLM's attention_dp_config)
  if (f.adp_balance && o.engine == ServeEngine::kTrtllm) {
    settings.adp_wait_iters = f.adp_balance->first;
    settings.adp_timeout_iters = f.adp_balance->second;
  }
  // the CUDA-graph batch sizes, which every engine takes (launch.cpp writes them for each)
  if (f.cuda_graph_batch_sizes) settings.cuda_graph_batch_sizes = *f.cuda_graph_batch_sizes;
  const SimContext ctx = make_context(model, cluster, workload, o.params ? *o.params : cost_params_for(cluster.gpu.name), settings);
  const SearchSpace space = make_space(model, cluster, workload, f.plan.redundant_experts);
  const EngineFit fit = fit_engine(o.engine, ctx, space, f.plan);
  // the benchmark of the launched deployment: at the one instance's address, or its load balancer
  BenchTarget bench;
  bench.model = served_model(ctx, f, opts);
  bench.plan_file = o.plan_file;
  bench.port = o.port > 0 ? o.port : o.engine == ServeEngine::kSglang ? 30000 : 8000;
  bench.host = o.head_address == LaunchOptions{}.head_address ? "127.0.0.1" : o.head_address;
  const bool k8s = o.format == "k8s";
  K8sOptions ko;
  LaunchSpec spec, pspec;
  if (k8s) {  // the manifests' names, image and checkpoint (the text needs none of them)
    ko.name = k8s_name(model.name + "-" + to_string(o.engine));
    ko.image = o.image;
    ko.model = served_model(ctx, f, opts);
    ko.port = o.port;
    opts.spec = &spec;
    opts.prefill_spec = &pspec;
    opts.head_address = "$(LWS_LEADER_ADDRESS)";  // LeaderWorkerSet's: every pod of a group knows its leader so
  }
  if (!f.prefill_pool) {
    if (k8s) {
      if (fit.runnable_found) opts.serving = serving_line(ctx, fit.runnable, std::nullopt);
      const std::string text = launch_text(ctx, f, fit, opts);
      return launch_k8s(o.engine, spec, ko, comment_lines(text));
    }
    if (!fit.runnable_found) return launch_text(ctx, f, fit, opts);
    opts.serving = serving_line(ctx, fit.runnable, std::nullopt);
    bench.instances = fit.runnable.deg.replicas;
    bench.batch = fit.runnable.batch;
    if (bench.instances > 1) bench.host = "<LOAD_BALANCER>";
    return launch_text(ctx, f, fit, opts) + bench_text(ctx, o.engine, bench);
  }
  // disaggregated: each pool fitted to the engine, then the router
  const Plan& pre = *f.prefill_pool;
  Plan pre_probe = pre;
  pre_probe.batch = pre.deg.attn_dp;
  if (auto why = validate_plan(pre_probe, model, cluster)) {
    return Error{file, "disaggregated.prefill", fmt::format("a prefill pool valid on {} and {}", model.name, cluster.name), *why};
  }
  // both pools on the cluster's GPUs: no command for a GPU that does not exist
  const std::int64_t pool_gpus = pre.deg.total_gpus() + f.plan.deg.total_gpus();
  if (pool_gpus > cluster.num_gpus) {
    return Error{file, "disaggregated", fmt::format("pools that fit the cluster's {} GPUs", cluster.num_gpus),
                 fmt::format("{} prefill + {} decode = {} GPUs", pre.deg.total_gpus(), f.plan.deg.total_gpus(), pool_gpus)};
  }
  // the prefill pool with its own engine settings where the plan gives them (the decode pool's otherwise)
  const PoolSettings pre_settings{f.prefill_max_num_seqs.value_or(0), f.prefill_max_num_tokens.value_or(0)};
  const SimContext pctx = pool_context(ctx, pre_settings);
  const SearchSpace pspace = make_space(model, cluster, workload, pre.redundant_experts);
  const EngineFit pfit = fit_engine(o.engine, pctx, pspace, pre);
  if (pfit.runnable_found && fit.runnable_found) opts.serving = serving_line(ctx, fit.runnable, pfit.runnable, pre_settings);
  std::string text = launch_disagg_text(pctx, ctx, f, pfit, fit, opts);
  if (k8s) return launch_k8s_disagg(o.engine, pspec, spec, ko, comment_lines(text));
  if (pfit.runnable_found && fit.runnable_found) {
    bench.host = "<ROUTER_HOST>";  // the router or proxy in front of both pools
    bench.instances = fit.runnable.deg.replicas;
    text += bench_text(ctx, o.engine, bench);
  }
  return text;
}

}  // namespace shardwise
