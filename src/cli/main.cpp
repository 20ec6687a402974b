// shardwise command line: argument parsing and wiring only (ARCHITECTURE.md).
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost/simulator.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "report/describe.hpp"
#include "report/listing.hpp"
#include "report/simulate.hpp"
#include "plan/plan_json.hpp"
#include "workload/workload.hpp"

namespace {
using namespace shardwise;

constexpr int kExitBadInput = 2;

int fail(const Error& e) {
  std::fprintf(stderr, "shardwise: %s\n", e.message().c_str());
  return kExitBadInput;
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  if (!s.empty() && s.back() != '\n') std::fputc('\n', stdout);
}

// The workload override flags shared by every command that takes a workload.
void add_workload_flags(CLI::App* cmd, WorkloadOverrides& o) {
  cmd->add_option("--mode", o.mode, "Override the mode: decode, prefill or offline");
  cmd->add_option("--isl", o.isl, "Override the input (prompt) length in tokens");
  cmd->add_option("--osl", o.osl, "Override the output length in tokens");
  cmd->add_option("--context", o.context, "Override the decode context (tokens already cached per sequence)");
  cmd->add_option("--batch", o.batch, "Override the concurrent sequences per model instance: a number or 'max'");
  cmd->add_option("--ttft-ms", o.ttft_ms, "Override the time-to-first-token SLO (ms)");
  cmd->add_option("--tpot-ms", o.tpot_ms, "Override the time-per-output-token SLO (ms)");
  cmd->add_option("--weights-dtype", o.weights_dtype, "Override the weight format: fp32, bf16, fp16, fp8, int8, int4, fp4");
  cmd->add_option("--kv-dtype", o.kv_dtype, "Override the KV-cache format: fp32, bf16, fp16, fp8, int8, int4, fp4");
}

bool any_override(const WorkloadOverrides& o) {
  return o.mode || o.isl || o.osl || o.context || o.batch || o.ttft_ms || o.tpot_ms || o.weights_dtype || o.kv_dtype;
}

struct DescribeArgs {
  std::string model, cluster, workload;
  WorkloadOverrides overrides;
  bool json = false;
  bool ops = false;
};

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
    opts.weights_dtype = workload->weights_dtype;
    opts.kv_dtype = workload->kv_dtype;
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
    opts.weights_dtype = w->weights_dtype;
    opts.kv_dtype = w->kv_dtype;
    if (o.context) opts.contexts = {*o.context};
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

struct SimulateArgs {
  std::string model, cluster, workload, sharding = "megatron", plan_file;
  WorkloadOverrides overrides;
  std::optional<std::int32_t> tp, pp, ep, attn_dp, replicas, micro_batches;
  bool json = false;
};

int run_simulate(SimulateArgs a) {
  Plan plan;
  if (!a.plan_file.empty()) {
    auto f = load_plan_file(a.plan_file);
    if (!f) return fail(f.error());
    plan = f->plan;
    if (a.model.empty()) a.model = f->model;
    if (a.cluster.empty()) a.cluster = f->cluster;
    if (a.workload.empty()) a.workload = f->workload;
    if (!a.overrides.batch) a.overrides.batch = plan.batch == 0 ? std::string("max") : std::to_string(plan.batch);
  } else {
    auto sh = load_sharding(a.sharding);
    if (!sh) return fail(sh.error());
    plan.sharding = *sh;
  }
  if (a.model.empty()) return fail(Error{"simulate", "", "--model (or a --plan file naming one)", "none"});
  if (a.cluster.empty()) return fail(Error{"simulate", "", "--cluster (or a --plan file naming one)", "none"});
  if (a.workload.empty()) a.workload = "decode-16k";
  auto model = load_model(a.model);
  if (!model) return fail(model.error());
  auto cluster = load_cluster(a.cluster);
  if (!cluster) return fail(cluster.error());
  auto wl = load_workload(a.workload);
  if (!wl) return fail(wl.error());
  auto w = apply_overrides(std::move(wl).value(), a.overrides);
  if (!w) return fail(w.error());
  if (a.tp) plan.deg.tp = *a.tp;
  if (a.pp) plan.deg.pp = *a.pp;
  if (a.ep) plan.deg.ep = *a.ep;
  if (a.attn_dp) plan.deg.attn_dp = *a.attn_dp;
  if (a.replicas) plan.deg.replicas = *a.replicas;
  if (a.micro_batches) plan.micro_batches = *a.micro_batches;
  plan.batch = w->batch.value_or(0);
  const SimContext ctx = make_context(*model, *cluster, *w, cost_params_for(cluster->gpu.name));
  Breakdown bd;
  const Metrics m = evaluate(ctx, plan, &bd);
  print(a.json ? simulate_json(ctx, plan, m, bd) : simulate_text(ctx, plan, m, bd));
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
}  // namespace

int main(int argc, char** argv) {
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
  simulate->add_option("--tp", sa.tp, "Tensor-parallel degree of attention (default 1)");
  simulate->add_option("--pp", sa.pp, "Pipeline stages (default 1)");
  simulate->add_option("--ep", sa.ep, "Expert-parallel degree over the stage's tp x attn-dp ranks (default 1)");
  simulate->add_option("--attn-dp", sa.attn_dp, "Attention data-parallel groups per stage (default 1)");
  simulate->add_option("--replicas", sa.replicas, "Copies of the model instance (default 1)");
  simulate->add_option("--micro-batches", sa.micro_batches, "Pipeline micro-batches (default: automatic)");
  simulate->add_option("--sharding", sa.sharding,
                       "Per-op sharding: megatron (default), allgather (the paper's FFN2-on-hidden), or a YAML/JSON file "
                       "mapping op slots to dimensions");
  simulate->add_option("--plan", sa.plan_file, "A plan.json (degrees, batch, sharding); flags given beside it override it");
  simulate->add_flag("--json", sa.json, "Print one JSON object (feasible, reason, throughput_tok_s_per_gpu, tpot_ms, ...)");

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
  return 0;
}
