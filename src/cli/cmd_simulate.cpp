// shardwise simulate: one plan's metrics, by the closed form or the serving simulation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cost/bench_settings.hpp"
#include "cost/engine.hpp"
#include "cost/engine_limits.hpp"
#include "cost/simulator.hpp"
#include "cost/phases.hpp"
#include "plan/plan_json.hpp"
#include "report/phases_report.hpp"
#include "report/serve_report.hpp"
#include "report/simulate.hpp"
#include "serve/disagg.hpp"
#include "serve/phases.hpp"
#include "serve/serving.hpp"

namespace shardwise::cli {
namespace {

constexpr std::uint64_t kMaxServeSeed = std::uint64_t{1} << 62;  // as a workload file's and a plan file's seed

struct SimulateArgs {
  EngineArgs engine;
  std::string model, cluster, workload, plan_file;
  std::optional<std::string> sharding;  // none: megatron, or with --engine what that engine runs
  WorkloadOverrides overrides;
  std::optional<std::int32_t> tp, pp, ep, attn_dp, replicas, micro_batches, redundant_experts;
  // disaggregated: the prefill pool (the degrees above and --replicas are then the decode pool's)
  std::optional<std::int32_t> prefill_instances, prefill_tp, prefill_pp, prefill_ep, prefill_attn_dp;
  std::optional<std::string> serve_seed;  // parsed here: CLI11 would clamp or wrap what int64 cannot hold
  double time_limit = 0;
  bool two_batch_overlap = false;
  bool json = false;
  bool explain = false;        // per op: bound, basis and table (docs/silicon.md)
  CostArgs cost;               // --kernel-tables, --silicon
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

// A serving simulation under the command's watch (its time limit, progress on stderr),
// with its wall time.
template <class Run>
auto watched(double time_limit, double& wall_s, Run run) {
  Watch watch(stderr_control(time_limit));
  ServeOptions so;
  so.watch = &watch;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(so);
  if (watch.elapsed_s() >= 2.0) std::fputc('\n', stderr);
  wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

int run_simulate(SimulateArgs a) {
  if (a.serve_seed) {
    const auto s = parse_seed(*a.serve_seed, kMaxServeSeed);
    if (!s) return fail(Error{"--seed", "", fmt::format("an integer from 0 to {} (2^62)", kMaxServeSeed), "'" + *a.serve_seed + "'"});
    a.overrides.seed = static_cast<std::int64_t>(*s);
  }
  if (auto e = check_time_limit(a.time_limit)) return fail(*e);
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
  std::optional<PhasePlan> file_phases;
  std::optional<std::int64_t> file_seqs, file_tokens, file_steps, file_pre_seqs, file_pre_tokens;
  std::optional<std::pair<std::int64_t, std::int64_t>> file_adp;  // engine_settings.adp_balance
  std::optional<std::vector<std::int64_t>> file_graphs;           // engine_settings.cuda_graph_batch_sizes
  CostArgs cost = a.cost;  // the flags', else the cost model the plan file was made with
  bool engine_from_plan = false;
  InputSource src;
  WorkloadOverrides plan_overrides;
  if (!a.plan_file.empty()) {
    auto f = load_plan_file(a.plan_file);
    if (!f) return fail(f.error());
    plan = f->plan;
    file_prefill = f->prefill_pool;
    file_phases = f->phases;
    file_seqs = f->max_num_seqs;
    file_tokens = f->max_num_tokens;
    file_pre_seqs = f->prefill_max_num_seqs;
    file_pre_tokens = f->prefill_max_num_tokens;
    cost = cost_for_plan(a.cost, *f);
    file_steps = f->decode_steps;
    file_adp = f->adp_balance;
    file_graphs = f->cuda_graph_batch_sizes;
    // the engine the plan was made for, unless --engine names one
    if (!a.engine.name && f->engine) {
      a.engine.name = f->engine;
      if (!a.engine.version) a.engine.version = f->engine_version;
      engine_from_plan = true;
    }
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
    auto sh = load_sharding(a.sharding.value_or("megatron"));
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
  if (a.plan_file.empty() && a.sharding) flags += (flags.empty() ? "--sharding " : " --sharding ") + *a.sharding;
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
  if (!engine) {
    return fail(engine_from_plan ? blame(blame(engine.error(), "--engine", a.plan_file, "engine.name"), "--engine-version", a.plan_file,
                                         "engine.version")
                                 : engine.error());
  }
  if (auto e = engine_gpu_error(*engine, in->cluster.gpu, engine_from_plan ? a.plan_file : "--engine")) return fail(*e);
  // outside serve the cap bounds --batch max of a named engine (engine_batch_cap); the generic
  // engine's closed form and prefill mode (a batch of prompts) have none, so it would be ignored
  if (a.engine.max_num_seqs && in->workload.mode != Mode::kServe && (engine->name == "generic" || in->workload.mode == Mode::kPrefill)) {
    return fail(Error{"--max-num-seqs", "",
                      "--mode serve, or --engine trtllm, vllm or sglang in decode or offline mode (where it caps --batch max), beside it",
                      fmt::format("{} with mode {}{}", *a.engine.max_num_seqs, to_string(in->workload.mode),
                                  engine->name == "generic" ? " and no --engine" : "")});
  }
  if (a.time_limit > 0 && in->workload.mode != Mode::kServe) {
    return fail(Error{"--time-limit", "", "--mode serve beside it (the closed form of other modes takes milliseconds)",
                      fmt::format("{} with mode {}", a.time_limit, to_string(in->workload.mode))});
  }
  if (a.explain && in->workload.mode == Mode::kServe) {  // the request-level report has no per-op breakdown to explain
    return fail(Error{"--explain", "", "a closed-form mode (decode, prefill, offline, ...) beside it; not --mode serve", "--mode serve"});
  }
  // a serve plan's engine settings, unless flags give them
  if (file_seqs && !a.engine.max_num_seqs) engine->max_num_seqs = *file_seqs;
  // a closed-form plan over the engine's cap runs with the cap raised to its batch, as launch
  // starts it (launch.md); a --max-num-seqs given is kept (and checked against the batch)
  if (!file_seqs && !a.engine.max_num_seqs && !a.plan_file.empty() && !a.overrides.batch) {
    const std::int64_t per_lane = plan_running_cap(*engine, plan, in->workload.mode);
    if (per_lane > engine->max_num_seqs) {
      cli::note(fmt::format("{} runs {} sequences {}, over {}'s default of {}: simulated with the cap raised to it, as launch starts it",
                            a.plan_file, per_lane, running_cap_unit(*engine, plan.deg), engine->name, engine->max_num_seqs));
      engine->max_num_seqs = per_lane;
    }
  }
  if (file_tokens && !a.engine.max_num_tokens) engine->max_num_tokens = *file_tokens;
  // offline on TensorRT-LLM without caps runs what trtllm-bench would (a plan file's batch
  // is launched with its own caps, launch.md)
  if (a.plan_file.empty()) {
    std::string why;
    engine = with_trtllm_bench_caps(std::move(*engine), in->model, in->cluster.gpu, in->workload, plan.deg, a.engine.max_num_seqs.has_value(),
                                     a.engine.max_num_tokens.has_value(), &why);
    if (!why.empty()) cli::note(why);
  }
  if (file_steps && !a.engine.decode_steps) {
    auto e = with_decode_steps(*engine, *file_steps);
    if (!e) return fail(blame(e.error(), "--decode-steps", a.plan_file, "engine_settings.decode_steps"));
    engine = std::move(e);
  }
  if (file_adp && !a.engine.adp_balance) {
    auto e = with_adp_balance(*engine, file_adp->first, file_adp->second);
    if (!e) return fail(blame(e.error(), "--adp-balance", a.plan_file, "engine_settings.adp_balance"));
    engine = std::move(e);
  }
  if (file_graphs && !a.engine.cuda_graph_batch_sizes) {
    auto e = with_cuda_graph_batch_sizes(*engine, *file_graphs);
    if (!e) return fail(blame(e.error(), "--cuda-graph-batch-sizes", a.plan_file, "engine_settings.cuda_graph_batch_sizes"));
    engine = std::move(e);
  }
  auto params = cost_params_of(cost, in->cluster.gpu.name);
  if (!params) {  // a recorded cost that no longer reads names the plan file's field
    const bool from_plan = !any_cost_flag(a.cost) && any_cost_flag(cost);
    return fail(from_plan ? blame(blame(params.error(), "--silicon", a.plan_file, "cost.silicon"), "--calibration", a.plan_file, "cost.calibration")
                          : params.error());
  }
  const SimContext ctx = make_context(in->model, in->cluster, in->workload, *params, *engine);
  note_calibration(cost, ctx, plan);
  if (const auto kind = a.engine.name ? parse_serve_engine(*a.engine.name) : std::nullopt; kind && a.plan_file.empty()) {
    // --engine: the sharding that engine runs for these degrees, unless --sharding says otherwise
    // (under attention DP the dense MLPs data-parallel: vLLM and TensorRT-LLM always, SGLang
    // with --moe-dense-tp-size 1, which its launch passes)
    const std::vector<Sharding> runs = engine_shardings(*kind, ctx, plan.deg);
    if (!a.sharding) {
      plan.sharding = runs.front();
      if (plan.deg.attn_dp > 1 && std::find(runs.begin(), runs.end(), dp_mlp_sharding()) != runs.end()) plan.sharding = dp_mlp_sharding();
    } else if (std::find(runs.begin(), runs.end(), plan.sharding) == runs.end()) {
      cli::note(fmt::format("{} runs these degrees with sharding {}; simulating --sharding {} as given", *a.engine.name,
                       sharding_to_string(runs.front()), *a.sharding));
    }
    if (const auto why = engine_limits(*kind, ctx, plan); !why.empty()) {
      cli::note(fmt::format("{} cannot run this plan as it is: {}", *a.engine.name, why.front()));
    }
  }
  if (file_phases && !flags.empty()) {
    cli::note(fmt::format("{} is a phase plan: with {} its static plan (the top level) is simulated, not the phases", a.plan_file, flags));
  }
  if (file_phases && flags.empty()) {
    if (auto why = validate_phase_plan(*file_phases, in->model, in->cluster)) {
      return fail(Error{a.plan_file, "phases", fmt::format("a phase plan valid on {} and {}", in->model.name, in->cluster.name), *why});
    }
    const PhaseOptions po = phase_options_for(*file_phases);
    // a phase plan (docs/phases.md): requests over time through Seesaw's schedule, or its
    // round term by term (offline) beside the file's static plan
    if (ctx.workload.mode == Mode::kServe) {
      if (!has_arrivals(ctx.workload)) {
        return fail(Error{"simulate --mode serve", "", "how requests arrive: --rate R (Poisson; inf: all at once)", "neither"});
      }
      if (ctx.workload.serve.arrivals.kind == Arrivals::Kind::kClosed) {
        return fail(Error{"--concurrency", "", "--rate R or a trace beside a phase plan (Seesaw's schedule serves queued or arriving requests, not a closed loop)",
                          std::to_string(ctx.workload.serve.arrivals.concurrency)});
      }
      const auto t0 = std::chrono::steady_clock::now();
      const ServeResult r = simulate_phases(ctx, *file_phases, po);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::string head = fmt::format("phases       {} (Seesaw's schedule: prefill until the buffer is full or nothing waits, then decode all)\n",
                                           phase_plan_label(*file_phases));
      print(a.json ? phases_serve_json(*file_phases, serve_json(ctx, file_phases->decode, r, wall)) : head + serve_text(ctx, file_phases->decode, r, wall));
      return 0;
    }
    if (ctx.workload.mode != Mode::kOffline) {
      return fail(Error{a.plan_file, "phases", "an offline or serve workload (phase plans are costed in closed form for offline streams, simulated under arrivals)",
                        fmt::format("mode {}", to_string(ctx.workload.mode))});
    }
    const PhaseCost c = evaluate_phases(ctx, *file_phases, po);
    if (c.metrics.infeasible == Infeasible::kInvalidPlan) {
      return fail(Error{a.plan_file, "phases", fmt::format("a phase plan valid on {} and {}", in->model.name, in->cluster.name), c.metrics.reason});
    }
    PhaseSearchResult r;
    r.found = c.metrics.feasible();
    r.best = *file_phases;
    r.cost = c;
    LayoutRates st;  // the file's static plan (plan --phases: the best static; what launch starts)
    st.plan = plan;
    st.static_metrics = evaluate(ctx, st.plan, nullptr, false);
    if (st.static_metrics.feasible()) r.best_static = st;
    if (a.json) {
      print(phases_json(r, po.host_bytes_per_gpu));
    } else {
      std::string t = phase_cost_text(*file_phases, c, po.host_bytes_per_gpu);
      if (r.best_static) {
        t += fmt::format("static       the plan file's static plan (what launch starts), batch {}: {:.1f} output tokens/s per GPU\n",
                         st.static_metrics.batch, st.static_metrics.output_tok_s_per_gpu);
      }
      t += "launch       " + phases_launch_note() + "\n";
      print(t);
    }
    return 0;
  }
  Breakdown bd;
  const Metrics m = evaluate(ctx, plan, &bd);
  // an invalid plan is bad input (exit 2); an infeasible one (memory, SLO) is a result
  if (m.infeasible == Infeasible::kInvalidPlan) {
    std::string origin = a.plan_file.empty() ? (flags.empty() ? std::string("simulate (default degrees)") : flags)
                                             : (flags.empty() ? a.plan_file : a.plan_file + " with " + flags);
    return fail(Error{origin, a.plan_file.empty() || !flags.empty() ? "" : "plan",
                      fmt::format("a plan valid on {} and {}", in->model.name, in->cluster.name), m.reason});
  }
  if (ctx.engine.adp_timeout_iters > 0) {
    // attention-DP balancing holds new prompts in the serving scheduler only, and only where an
    // instance has more than one attention-DP rank (a disaggregated decode pool's arrivals are
    // generation requests, never held: the prefill pool's attn_dp decides)
    const auto pre = prefill_pool_of(a, plan, file_prefill);
    const std::int64_t ranks = pre ? pre->deg.attn_dp : plan.deg.attn_dp;
    const std::string from = a.engine.adp_balance ? "--adp-balance" : a.plan_file + " (engine_settings.adp_balance)";
    if (ctx.workload.mode != Mode::kServe) {
      cli::note(fmt::format("{} has no effect in {} mode: TensorRT-LLM's attention-DP balancing holds prompts in the serving scheduler "
                            "(--mode serve)",
                            from, to_string(ctx.workload.mode)));
    } else if (ranks <= 1) {
      cli::note(fmt::format("{} has no effect: {} one attention-DP rank, so no prompt waits for another rank's", from,
                            pre ? "the prefill instances have" : "each instance has"));
    }
  }
  if (const auto pre = prefill_pool_of(a, plan, file_prefill)) {
    // disaggregated prefill and decode pools (docs/serving.md)
    // the pools' errors name what set them: the flags, or the plan file's disaggregated block
    const bool pool_flags = a.prefill_instances || a.prefill_tp || a.prefill_pp || a.prefill_ep || a.prefill_attn_dp;
    const std::string pool_origin = pool_flags || a.plan_file.empty() ? "--prefill-instances" : a.plan_file;
    const std::string pool_field = pool_flags || a.plan_file.empty() ? "" : "disaggregated";
    if (ctx.workload.mode != Mode::kServe) {
      return fail(Error{pool_origin, pool_field, "--mode serve (a disaggregated deployment serves requests over time)",
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
    if (auto e = arrivals_error(ctx.workload, 1, true, a.overrides.concurrency ? "--concurrency" : a.workload,
                                a.overrides.concurrency ? "" : "arrivals.pattern")) {
      return fail(*e);
    }
    DisaggPlan d{*pre, plan, {}, {}};
    // the prefill pool's own settings from the plan file, unless a flag sets the engine's
    if (file_pre_seqs && !a.engine.max_num_seqs) d.prefill_settings.max_num_seqs = *file_pre_seqs;
    if (file_pre_tokens && !a.engine.max_num_tokens) d.prefill_settings.max_num_tokens = *file_pre_tokens;
    if (d.gpus() > ctx.cluster.num_gpus) {
      return fail(Error{pool_origin, pool_field, fmt::format("pools that fit the cluster's {} GPUs", ctx.cluster.num_gpus),
                        fmt::format("{} prefill + {} decode = {} GPUs", pre->deg.total_gpus(), plan.deg.total_gpus(), d.gpus())});
    }
    double wall = 0;
    const DisaggResult r = watched(a.time_limit, wall, [&](const ServeOptions& so) { return simulate_disaggregated(ctx, d, so); });
    print(a.json ? serve_disagg_json(ctx, d, r, wall) : serve_disagg_text(ctx, d, r, wall));
    return 0;
  }
  if (ctx.workload.mode == Mode::kServe && !has_arrivals(ctx.workload)) {
    return fail(Error{"simulate --mode serve", "", "how requests arrive: --rate R (Poisson; inf: all at once) or --concurrency N "
                      "(closed loop), or arrivals: in the workload", "neither"});
  }
  if (ctx.workload.mode == Mode::kServe && m.infeasible != Infeasible::kMemory) {
    // the request-level simulation decides (the closed form above only screens the plan's memory)
    if (auto e = arrivals_error(ctx.workload, plan.deg.replicas, false, a.overrides.concurrency ? "--concurrency" : a.workload,
                                a.overrides.concurrency ? "" : "arrivals.concurrency")) {
      return fail(*e);
    }
    double wall = 0;
    const ServeResult r = watched(a.time_limit, wall, [&](const ServeOptions& so) {
      ServeOptions knee = so;
      knee.knee_check = true;  // simulate's report and JSON show the knee check
      return simulate_serving(ctx, plan, knee);
    });
    print(a.json ? serve_json(ctx, plan, r, wall) : serve_text(ctx, plan, r, wall));
    return 0;
  }
  print(a.json ? simulate_json(ctx, plan, m, bd, a.explain) : simulate_text(ctx, plan, m, bd) + (a.explain ? explain_text(ctx, bd) : ""));
  return 0;
}

}  // namespace

Command add_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  SimulateArgs& sa = *args;
  auto* simulate = app.add_subcommand("simulate",
                                      "Predict throughput, latency and memory of one plan: degrees, batch and per-op sharding");
  simulate->add_option("--model", sa.model, "A model: a preset (see 'shardwise models'; also its Hugging Face id), a config.json, or a checkpoint folder holding one");
  simulate->add_option("--cluster", sa.cluster, "A cluster preset '<gpu>x<count>' or the path of a cluster YAML");
  simulate->add_option("--workload", sa.workload, "A workload preset or YAML (default decode-16k)");
  add_workload_flags(simulate, sa.overrides);
  simulate->add_option("--seed", sa.serve_seed, "Serve: the seed of the arrivals and lengths, 0 to 2^62 (default 1)");
  simulate->add_option("--time-limit", sa.time_limit,
                       "Serve: stop the simulation after this many seconds and say so (default: none); runs over two seconds print "
                       "progress on stderr");
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
                       "Per-op sharding: megatron (default; with --engine, what that engine runs for the degrees), allgather (the paper's FFN2-on-hidden), dp-mlp (Megatron's with "
                       "the dense MLPs data-parallel, as engines run attention DP), or a YAML/JSON file mapping op slots to dimensions");
  simulate->add_option("--plan", sa.plan_file, "A plan.json (degrees, batch, sharding); flags given beside it override it");
  add_engine_flags(simulate, sa.engine);
  simulate->add_flag("--json", sa.json, "Print one JSON object (feasible, reason, throughput_tok_s_per_gpu, tpot_ms, ...)");
  simulate->add_flag("--explain", sa.explain,
                     "Per op: what bounds it and where its time comes from (measured, transferred or extrapolated kernel rows, or "
                     "the model), and the share of the step resting on measurement (docs/silicon.md)");
  add_cost_flags(simulate, sa.cost);
  return {simulate, [args] { return run_simulate(*args); }};
}

}  // namespace shardwise::cli
