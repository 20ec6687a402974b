// shardwise describe, launch, verify and the listings (models, clusters, workloads).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "exec/verify.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"
#include "report/describe.hpp"
#include "report/format.hpp"
#include "report/launch.hpp"
#include "report/launch_plan.hpp"
#include "report/listing.hpp"

namespace shardwise::cli {
namespace {

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
    auto m = load_model_noted(a.model);
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
    if (model) {  // --spec-tokens alone: the model's MTP acceptance (without a model, the workload as given)
      std::string why;
      auto w3 = resolve_speculation(*model, std::move(w2).value(), &why);
      if (!w3) return fail(w3.error());
      if (!why.empty()) note(why);
      w2 = std::move(w3);
    }
    workload = std::move(w2).value();
    set_describe_formats(opts, model, *workload);
    if (workload->mode == Mode::kDecode) opts.contexts = {workload->context};
  } else if (any_override(a.overrides)) {
    // Without a workload only the dtype and context flags mean something for a model.
    const auto& o = a.overrides;
    if (o.mode || o.isl || o.osl || o.batch || o.ttft_ms || o.tpot_ms || o.slo) {
      return fail(Error{"describe", "", "--workload with --mode, --isl, --osl, --batch, --ttft-ms, --tpot-ms or --slo", "no --workload"});
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

struct LaunchArgs {
  std::string plan_file, model_path, head_address = "<HEAD_NODE_IP>";
  std::optional<std::string> engine;  // none: the plan's own; given empty ('') is an error
  int port = 0;
  std::string format = "text", image;
};

int run_launch(const LaunchArgs& a) {
  auto f = load_plan_file(a.plan_file);
  if (!f) return fail(f.error());
  // --engine, else the engine the plan was made for (plan --engine records it)
  if (!a.engine && !f->engine) {
    return fail(Error{"--engine", "", "vllm, sglang or trtllm (the plan records no engine: it was made without --engine)", "none"});
  }
  const std::string engine_name = a.engine ? *a.engine : *f->engine;
  const auto engine = parse_serve_engine(engine_name);
  if (!engine) {
    return fail(!a.engine ? Error{a.plan_file, "engine.name", "one of vllm, sglang, trtllm", "'" + engine_name + "'"}
                          : Error{"--engine", "", "one of vllm, sglang, trtllm", "'" + engine_name + "'"});
  }
  if (a.engine && f->engine && *f->engine != *a.engine) {
    note(fmt::format("{} was made for {}; launching it on {} (its fit to {} is printed)", a.plan_file, *f->engine, *a.engine, *a.engine));
  }
  if (f->model.empty() || f->cluster.empty() || f->workload.empty()) {
    return fail(Error{a.plan_file, "model/cluster/workload", "the names the plan was made for (written by 'shardwise plan --out')", "none"});
  }
  InputSource src;  // every name and override came from the plan file: errors name its fields
  src.plan_file = a.plan_file;
  src.model_from_plan = src.cluster_from_plan = src.workload_from_plan = true;
  src.plan_overrides = &f->overrides;
  auto in = load_inputs(f->model, f->cluster, f->workload, WorkloadOverrides{}, src);  // the plan carries its batch
  if (!in) return fail(in.error());
  LaunchOptions o;
  o.engine = *engine;
  o.model_path = a.model_path;
  o.head_address = a.head_address;
  o.port = a.port;
  o.plan_file = a.plan_file;
  o.format = a.format;
  o.image = a.image;
  // the cost model the plan was made with (plan.json "cost"): the serving prediction's
  auto params = cost_params_of(cost_for_plan(CostArgs{}, *f), in->cluster.gpu.name);
  if (!params) return fail(blame(blame(params.error(), "--silicon", a.plan_file, "cost.silicon"), "--calibration", a.plan_file, "cost.calibration"));
  o.params = &*params;
  auto text = launch_plan(*f, a.plan_file, in->model, in->cluster, in->workload, o);
  if (!text) return fail(text.error());
  print(*text);
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
  std::string seed = "1";  // parsed here: CLI11 would wrap "-1" into 2^64 - 1
  std::int32_t decode_steps = 2;
  bool quiet = false;
};

int run_verify(VerifyArgs a) {
  // verify starts its own ranks with mpirun: under mpirun it would nest launchers
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) {
      return fail(Error{"verify", "", "to be run directly: it starts its own MPI ranks with mpirun (--mpirun names the launcher)",
                        std::string("a process of an MPI job (") + var + " is set)"});
    }
  }
  const auto seed = parse_seed(a.seed);
  if (!seed) return fail(Error{"--seed", "", "an integer from 0 to 18446744073709551615", "'" + a.seed + "'"});
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
  auto m = load_model_noted(a.model);
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
  o.seed = *seed;
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

}  // namespace

std::vector<Command> add_listings(CLI::App& app) {
  auto models_json = std::make_shared<bool>(false);
  auto* models = app.add_subcommand("models", "List the built-in model presets with their parameter counts");
  models->add_flag("--json", *models_json, "Print JSON");

  auto* clusters = app.add_subcommand("clusters", "List the GPU catalog and the '<gpu>x<count>' cluster preset form");
  auto* workloads = app.add_subcommand("workloads", "List the built-in workload presets");
  return {{models, [models_json] { return run_models(*models_json); }},
          {clusters, [] {
             print(list_gpus_text());
             return 0;
           }},
          {workloads, [] { return run_workloads(); }}};
}

Command add_describe(CLI::App& app) {
  auto args = std::make_shared<DescribeArgs>();
  DescribeArgs& d = *args;
  auto* describe = app.add_subcommand("describe",
                                      "Describe a model (parameters total and active, layers by kind, KV-cache bytes per "
                                      "token, weight bytes, FLOPs per token), a cluster and/or a workload");
  describe->add_option("--model", d.model, "A model: a preset (see 'shardwise models'; also its Hugging Face id), a config.json, or a checkpoint folder holding one");
  describe->add_option("--cluster", d.cluster, "A cluster preset '<gpu>x<count>' (e.g. h100x8) or the path of a cluster YAML");
  describe->add_option("--workload", d.workload, "A workload preset (see 'shardwise workloads') or the path of a workload YAML");
  add_workload_flags(describe, d.overrides);
  describe->add_flag("--ops", d.ops, "Also list the fused-op chain of every layer class (dims, weights, FLOPs, bytes)");
  describe->add_flag("--json", d.json, "Print one JSON object (keys include params_total, params_active, kv_bytes_per_token)");
  return {describe, [args] { return run_describe(*args); }};
}

Command add_verify(CLI::App& app, const CliOptions& cli) {
  auto args = std::make_shared<VerifyArgs>();
  VerifyArgs& va = *args;
  auto* verify = app.add_subcommand("verify",
                                    "Run a plan on a scaled-down model with real MPI collectives and check it: logits equal to one "
                                    "rank's within 1e-9, bytes of every collective equal to the simulator's (docs/exec.md)");
  verify->add_option("--model", va.model, "A model: a preset (see 'shardwise models'; also its Hugging Face id), a config.json, or a checkpoint folder holding one (default: the --plan file's)");
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
  return {verify, [args, cli] {
            if (!cli.allow_verify) return fail(Error{"verify", "", "another command (this caller does not start mpirun)", "verify"});
            return run_verify(*args);
          }};
}

Command add_launch(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  LaunchArgs& la = *args;
  auto* launch = app.add_subcommand("launch", "Print the commands that start a plan on vLLM, SGLang or TensorRT-LLM (docs/launch.md)");
  launch->add_option("--plan", la.plan_file, "A plan.json written by 'shardwise plan --out'")->required();
  launch->add_option("--engine", la.engine, "vllm, sglang or trtllm (default: the engine the plan was made for, plan --engine)");
  launch->add_option("--model-path", la.model_path, "The checkpoint (HF repo id or folder); default: the preset's HF repository");
  launch->add_option("--head-address", la.head_address, "The head node's address for multi-node plans (default: a placeholder)");
  launch->add_option("--port", la.port, "The HTTP port of the first instance (default: the engine's)");
  launch->add_option("--format", la.format,
                     "text (the commands, default) or k8s (Kubernetes manifests: Deployment, LeaderWorkerSet across nodes, NVIDIA "
                     "Dynamo's DynamoGraphDeployment when disaggregated; docs/launch.md)");
  launch->add_option("--image", la.image, "With --format k8s: the container image (default: the engine's public image, or Dynamo's)");
  return {launch, [args] { return run_launch(*args); }};
}

}  // namespace shardwise::cli
