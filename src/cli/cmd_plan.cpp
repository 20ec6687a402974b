// shardwise plan: the search for the best plan (the closed form, or serving under load).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "core/fields.hpp"
#include "core/files.hpp"
#include "plan/plan_json.hpp"
#include "report/html_report.hpp"
#include "report/phases_report.hpp"
#include "report/plan_report.hpp"
#include "report/serve_html.hpp"
#include "report/serve_report.hpp"
#include "search/rl/agent.hpp"
#include "search/search.hpp"
#include "search/phases_search.hpp"
#include "search/serve_plan.hpp"

namespace shardwise::cli {
namespace {

struct PlanArgs {
  EngineArgs serve;
  CostArgs cost;  // --kernel-tables, --silicon
  std::string model, cluster, workload, engine = "auto", out, save_policy, load_policy, report;
  std::vector<std::string> compare;
  WorkloadOverrides overrides;
  std::int64_t budget = 4000;
  std::int32_t redundant_experts = 0;
  double time_limit = 0;
  std::string seed = "1";  // parsed here: CLI11 would wrap "-1" into 2^64 - 1
  int threads = 0;
  bool json = false;
  double target_rate = 0;  // plan --mode serve: the fewest GPUs serving this many requests/s
  bool any_layout = false;  // --engine any: every layout, not only those an engine runs
  int top_k = 24;
  bool no_disagg = false;
  bool phases = false;           // --phases: a prefill layout and a decode layout on the same GPUs (docs/phases.md)
  double host_buffer_gib = 80.0; // --host-buffer-gib: host memory per GPU for the phase plan's KV buffer
};

// plan --phases: the best phase plan beside the best static plan (the search's answer when
// better than the layouts' own) and the best disaggregated split (docs/phases.md)
// plan --phases under a serving workload: the phase space searched by rl (or sa, ga) for the
// most output tokens/s per GPU of the queued requests within the TPOT SLO, the best simulated
// under the workload's arrivals (docs/phases.md, "Search under a serving objective")
int run_phases_serving(const PlanArgs& a, const SimContext& ctx, const SearchSpace& space, std::uint64_t seed) {
  if (!a.out.empty() || !a.report.empty()) {
    return fail(Error{"--out/--report", "", "no file beside --phases under a serving workload (plan --phases --mode offline writes the plan file)", "a path"});
  }
  PhaseSearchOptions po;
  po.cost.host_bytes_per_gpu = a.host_buffer_gib * 1024.0 * 1024.0 * 1024.0;
  const std::string engine = a.engine == "auto" ? "rl" : a.engine;
  const PhaseServeResult r = search_phases_serving(ctx, space, po, engine, a.budget, seed);
  if (!r.found) {
    print(a.json ? phases_none_json(r.why_none) : fmt::format("phases       none: {}\n", r.why_none));
    return 0;
  }
  std::string t = fmt::format("phases       {} (Seesaw's schedule)\n", phase_plan_label(r.best));
  t += fmt::format("objective    {:.1f} output tokens/s per GPU with the requests all queued, within the TPOT SLO\n", r.objective);
  t += fmt::format("search       {} over {} phase plans: {} calls, the best at call {}; {} simulations\n", engine, r.space_size, r.run.calls,
                   r.run.improvements.empty() ? 0 : r.run.improvements.back().first, r.simulations);
  if (r.static_plan) {
    t += fmt::format("static       {} at most {} running: {:.1f} output tokens/s per GPU, the same requests queued within the TPOT SLO "
                     "(phase plan / static = {:.3f}x; disaggregated deployments: plan --mode serve)\n",
                     layout_label(*r.static_plan), r.static_plan->batch, r.static_objective, r.objective / r.static_objective);
  } else {
    t += "static       no static plan of these layouts meets the TPOT SLO with the requests queued\n";
  }
  SimContext shown = ctx;  // what was simulated: the workload's arrivals, else every request queued at once (no TTFT SLO)
  if (!has_arrivals(shown.workload)) {
    shown.workload.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
    shown.workload.ttft_ms.reset();
    shown.workload.ttft_pct.clear();
  }
  if (shown.workload.serve.requests == 0) shown.workload.serve.requests = 400;
  t += serve_text(shown, r.best.decode, r.serve, 0.0);
  t += "launch       " + phases_launch_note() + "\n";
  print(a.json ? phases_serve_json(r.best, serve_json(shown, r.best.decode, r.serve, 0.0)) : t);
  return 0;
}

int run_phases_plan(const PlanArgs& a, const SimContext& ctx, const SearchSpace& space, const PlanOutcome& o, PlanFile file) {
  PhaseSearchOptions po;
  po.cost.host_bytes_per_gpu = a.host_buffer_gib * 1024.0 * 1024.0 * 1024.0;
  PhaseSearchResult r = search_phases(ctx, space, po);
  if (o.search.found) {
    const Metrics m = evaluate(ctx, o.search.best, nullptr, false);
    if (m.feasible() && (!r.best_static || m.objective > r.best_static->static_metrics.objective)) {
      LayoutRates lr;
      lr.plan = o.search.best;
      lr.static_metrics = m;
      r.best_static = lr;
    }
  }
  if (!a.out.empty()) {
    if (!r.found) {
      print(a.json ? phases_json(r, po.cost.host_bytes_per_gpu) : phases_text(r, po.cost.host_bytes_per_gpu));
      return fail(Error{"--out", "", "a feasible phase plan to write to '" + a.out + "'", r.why_none});
    }
    // the top level: the best static plan, what launch starts (no engine runs phases); with
    // none feasible, the phase plan's decode layout at its batch (a layout that runs)
    if (r.best_static && r.best_static->static_metrics.feasible()) {
      file.plan = r.best_static->plan;
      file.plan.batch = r.best_static->static_metrics.batch;
    } else {
      file.plan = r.best.decode;
      note("no static plan is feasible here: the plan file's top level (what launch starts) is the phase plan's decode layout");
    }
    file.phases = r.best;
    file.phases->host_bytes_per_gpu = po.cost.host_bytes_per_gpu;
    if (auto e = write_file_whole(a.out, plan_to_json(file) + "\n", "--out")) return fail(*e);
  }
  print(a.json ? phases_json(r, po.cost.host_bytes_per_gpu) : phases_text(r, po.cost.host_bytes_per_gpu));
  return 0;
}

bool rl_engine_name(const std::string& e) { return e == "rl" || e == "rl-paper"; }

// What plan takes that does not apply (refused: it would be ignored) or applies differently
// (a note). docs/serving.md, "Planning".
std::optional<Error> serve_plan_input_error(const PlanArgs& a, const Workload& w) {
  if (w.mode != Mode::kServe) {
    // outside serve the cap bounds a named engine's batch (engine_batch_cap); the generic
    // engine's closed form and prefill mode (a batch of prompts) have none
    if (a.serve.max_num_seqs && (!a.serve.name || w.mode == Mode::kPrefill)) {
      return Error{"--max-num-seqs", "",
                   "--mode serve, or --engine trtllm, vllm or sglang in decode or offline mode (where it caps the batch), beside it",
                   fmt::format("{} with mode {}{}", *a.serve.max_num_seqs, to_string(w.mode), a.serve.name ? "" : " and no --engine")};
    }
    if (a.serve.adp_balance) {
      note(fmt::format("--adp-balance has no effect in {} mode: TensorRT-LLM's attention-DP balancing holds prompts in the serving "
                       "scheduler (--mode serve); the plan records it for launch",
                       to_string(w.mode)));
    }
    return std::nullopt;
  }
  if (auto e = serve_plan_workload_error(w, a.overrides, a.workload, !a.compare.empty())) return e;
  if (has_arrivals(w)) {
    note(fmt::format("plan --mode serve searches the rate: the arrivals of workload {} ({}) are not used", a.workload,
                     to_string(w.serve.arrivals.kind)));
  }
  return std::nullopt;
}

// plan --mode serve: the closed-form search's winner joins the screen of every instance
// shape; the best K are simulated (docs/serving.md, "Planning").
int run_serve_plan(const PlanArgs& a, const SimContext& ctx, const SearchSpace& space, const SearchResult& closed, PlanFile file, bool tty) {
  // no --requests: 1,000-request screens, the answers at steady state
  ServePlanOptions so = serve_plan_options(ctx.workload.serve.requests, a.top_k, a.target_rate,
                                           a.serve.name ? parse_serve_engine(*a.serve.name) : std::nullopt, !a.any_layout, !a.no_disagg);
  if (tty) {
    so.progress = [](int done, int of) { std::fprintf(stderr, "\r  simulating candidates: %d/%d   ", done, of); };
  }
  // --time-limit bounds the serving simulations as well (as long again as the search)
  Watch watch(stderr_control(a.time_limit));
  so.watch = &watch;
  const ServePlanResult r = plan_serving(ctx, space, closed.found ? std::optional<Plan>(closed.best) : std::nullopt, so);
  if (tty || watch.elapsed_s() >= 2.0) std::fputc('\n', stderr);
  const bool found = r.found();
  file = serve_plan_file(file, r, recorded_requests(so));
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

int run_plan(const PlanArgs& a, const CliOptions& cli);

// --engine any: the free search (every layout), as without --engine outside serve mode
int run_plan_any(const PlanArgs& given, const CliOptions& cli) {
  if (!given.serve.name || *given.serve.name != "any") return run_plan(given, cli);
  if (given.serve.version) return fail(Error{"--engine-version", "", "a named engine beside it (not --engine any)", *given.serve.version});
  PlanArgs a = given;
  a.serve.name.reset();
  a.any_layout = true;
  return run_plan(a, cli);
}

int run_plan(const PlanArgs& a, const CliOptions& cli) {
  const Engine engine = find_engine(a.engine);
  if (!engine) return fail(Error{"--search", "", std::string("one of ") + engine_names(), "'" + a.engine + "'"});
  if (a.budget < 1) return fail(Error{"--budget", "", "a positive number of evaluations", std::to_string(a.budget)});
  if (auto e = check_time_limit(a.time_limit)) return fail(*e);
  if (auto e = check_threads(a.threads)) return fail(*e);
  const auto seed = parse_seed(a.seed);
  if (!seed) return fail(Error{"--seed", "", "an integer from 0 to 18446744073709551615", "'" + a.seed + "'"});
  if (!cli.allow_writes && (!a.out.empty() || !a.report.empty() || !a.save_policy.empty())) {
    return fail(Error{"--out/--report/--save-policy", "", "no file written (this caller forbids writes)", "a path"});
  }
  if (auto e = check_degree_flag("--redundant-experts", a.redundant_experts, 0)) return fail(*e);
  if (!(a.target_rate >= 0) || !std::isfinite(a.target_rate) || a.target_rate > 1e7) {
    return fail(Error{"--target-rate", "", "a positive number of requests/s up to 1e7", fmt::format("{}", a.target_rate)});
  }
  if (a.phases && !(a.host_buffer_gib >= 0 && a.host_buffer_gib <= 1e6)) {
    return fail(Error{"--host-buffer-gib", "", "GiB of host memory per GPU from 0 to 1e6", fmt::format("{}", a.host_buffer_gib)});
  }
  if (a.top_k < 0 || a.top_k > 1000) return fail(Error{"--top-k", "", "a number of candidates from 1 to 1000 (0: every screened one)", std::to_string(a.top_k)});
  auto in = load_inputs(a.model, a.cluster, a.workload, a.overrides);
  if (!in) return fail(in.error());
  if (a.target_rate > 0 && in->workload.mode != Mode::kServe) {
    return fail(Error{"--target-rate", "", "--mode serve (or a serve workload) beside it", fmt::format("mode {}", to_string(in->workload.mode))});
  }
  if (auto e = serve_plan_input_error(a, in->workload)) return fail(*e);
  if (a.phases && in->workload.mode != Mode::kOffline && in->workload.mode != Mode::kServe) {
    return fail(Error{"--phases", "", "an offline or serve workload (prompts and outputs to prefill and decode)",
                      fmt::format("mode {}", to_string(in->workload.mode))});
  }
  if (a.phases && in->workload.mode == Mode::kServe) {
    if (in->workload.serve.arrivals.kind == Arrivals::Kind::kClosed && has_arrivals(in->workload)) {
      return fail(Error{"--concurrency", "", "--rate R, all at once or a trace beside --phases (Seesaw's schedule serves queued or arriving requests)",
                        std::to_string(in->workload.serve.arrivals.concurrency)});
    }
    if (a.engine != "auto" && a.engine != "rl" && a.engine != "sa" && a.engine != "ga") {
      return fail(Error{"--search", "", "rl (default), sa or ga beside --phases under a serving workload (the phase space's engines)", "'" + a.engine + "'"});
    }
  }
  if (a.phases && a.serve.name) {
    return fail(Error{"--phases", "", "no --engine beside it (no engine runs per-phase layouts in one instance: docs/phases.md)", "--engine " + *a.serve.name});
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
  if (auto e = engine_gpu_error(*serve_engine, in->cluster.gpu, "--engine")) return fail(*e);
  const std::optional<ServeEngine> serve_kind = a.serve.name ? parse_serve_engine(*a.serve.name) : std::nullopt;
  if (serve_kind && rl_engine_name(a.engine) && (!a.save_policy.empty() || !a.load_policy.empty())) {
    return fail(Error{"--save-policy/--load-policy", "", "no --engine beside them (with --engine the search is exhaustive over what the engine runs)", "--engine " + *a.serve.name});
  }
  auto params = cost_params_of(a.cost, in->cluster.gpu.name);
  if (!params) return fail(params.error());
  const SimContext ctx = make_context(in->model, in->cluster, in->workload, *params, *serve_engine);
  const SearchSpace space = make_space(in->model, in->cluster, in->workload, a.redundant_experts);
  if (a.phases && ctx.workload.mode == Mode::kServe) return run_phases_serving(a, ctx, space, *seed);
  SearchOptions opt;
  opt.budget = a.budget;
  opt.time_limit_s = a.time_limit;
  opt.seed = *seed;
  opt.threads = threads_or_cores(a.threads);
  const bool tty = isatty(fileno(stderr)) != 0;
  // off a terminal: a line every ten seconds of a search that runs over two
  Watch lines(stderr_control(0));
  opt.progress = [&](std::int64_t calls, double best, double elapsed) {
    std::string left = a.time_limit > 0 ? fmt::format(", {:.1f} s left", std::max(0.0, a.time_limit - elapsed)) : "";
    if (tty) {
      std::fprintf(stderr, "\r  %s: %lld/%lld calls, best %.1f tok/s/GPU, %.1f s%s   ", a.engine.c_str(),
                   static_cast<long long>(calls), static_cast<long long>(a.budget), best, elapsed, left.c_str());
    } else {
      lines.progress([&] { return fmt::format("{}: {}/{} calls, best {:.1f} tok/s/GPU, {:.1f} s{}", a.engine, calls, a.budget, best, elapsed, left); });
    }
  };
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
  o.auto_search = a.engine == "auto";
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
  refine_batch(ctx, o.search);
  refine_two_batch_overlap(ctx, space, opt, o.search, serve_kind);
  if (tty) std::fputc('\n', stderr);
  if (o.search.found) note_calibration(a.cost, ctx, o.search.best);
  for (const auto& name : a.compare) {
    if (name == a.engine) continue;
    SearchOptions copt = opt;
    copt.progress = nullptr;
    if (tty) {
      copt.progress = [&](std::int64_t calls, double best, double elapsed) {
        std::fprintf(stderr, "\r  compare %s: %lld/%lld calls, best %.1f tok/s/GPU, %.1f s   ", name.c_str(), static_cast<long long>(calls),
                     static_cast<long long>(a.budget), best, elapsed);
      };
    }
    o.compared.push_back(find_engine(name)(ctx, space, copt));
    refine_batch(ctx, o.compared.back());
    if (tty) std::fputc('\n', stderr);
  }
  SearchOptions base_opt = opt;
  base_opt.progress = nullptr;
  base_opt.time_limit_s = 0;
  o.baseline = a.engine == "megatron" ? o.search : search_megatron(ctx, space, base_opt);
  PlanFile file{o.search.best, a.model, a.cluster, a.workload, a.overrides, std::nullopt};
  file.overrides.batch.reset();  // the plan carries its own batch
  if (a.serve.name) {  // the engine it was made for, at the profile's version: simulate --plan and launch replay it
    file.engine = serve_engine->name;
    file.engine_version = serve_engine->version;
  }
  if (ctx.engine.decode_steps > 1) file.decode_steps = ctx.engine.decode_steps;  // --decode-steps: replayed by simulate --plan and launch
  if (a.serve.max_num_seqs && ctx.workload.mode != Mode::kServe) file.max_num_seqs = *a.serve.max_num_seqs;  // the cap it was planned under
  if (ctx.engine.adp_timeout_iters > 0) file.adp_balance = std::pair{ctx.engine.adp_wait_iters, ctx.engine.adp_timeout_iters};  // --adp-balance
  if (!ctx.engine.cuda_graph_batch_sizes.empty()) file.cuda_graph_batch_sizes = ctx.engine.cuda_graph_batch_sizes;  // --cuda-graph-batch-sizes
  file.cost = recorded_cost(a.cost);  // --kernel-tables / --silicon / --calibration: replayed by simulate --plan, check and launch
  if (ctx.workload.mode == Mode::kServe) return run_serve_plan(a, ctx, space, o.search, file, tty);
  if (a.phases) return run_phases_plan(a, ctx, space, o, file);
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

}  // namespace

Command add_plan(CLI::App& app, const CliOptions& cli) {
  auto args = std::make_shared<PlanArgs>();
  PlanArgs& pa = *args;
  auto* plan = app.add_subcommand("plan", "Search for the best plan (degrees, batch, per-op sharding) and compare it with Megatron's");
  plan->add_option("--model", pa.model, "A model: a preset (see 'shardwise models'; also its Hugging Face id), a config.json, or a checkpoint folder holding one")->required();
  plan->add_option("--cluster", pa.cluster, "A cluster preset '<gpu>x<count>' or the path of a cluster YAML")->required();
  plan->add_option("--workload", pa.workload, "A workload preset or YAML")->required();
  add_workload_flags(plan, pa.overrides);
  plan->add_option("--search", pa.engine, "Search engine: auto (default: exact, the certified optimum, for the closed-form objective every plan search here optimises; the serving planner simulates the screen it gives), rl (Learning to Shard's elite history as a masked local search with polishing, no network: it was measured to add nothing), rl-paper (the paper's policy network and PPO, as published), exact (the optimum of "
                 "degrees and sharding over the batch ladder, each winner at its own largest feasible batch), megatron, rw (random walk), sa (simulated annealing), ga (genetic)");
  plan->add_option("--budget", pa.budget, "Simulator calls the search may make, invalid ones included (default 4000)");
  plan->add_option("--redundant-experts", pa.redundant_experts,
                   "MoE: redundant expert slots (EPLB) every plan carries; ep ranges over the divisors of experts + N (default 0)");
  plan->add_option("--time-limit", pa.time_limit,
                   "Stop each engine's search after this many seconds (default: none). It applies to the chosen engine and to each "
                   "--compare engine separately, and with --mode serve to the serving simulations after the search; the Megatron "
                   "baseline (exhaustive over its small space) is not limited");
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
  add_cost_flags(plan, pa.cost);
  plan->add_option("--target-rate", pa.target_rate,
                   "Serve: the fewest GPUs (and the plan) that serve this many requests/s within the SLOs (docs/serving.md)");
  plan->add_flag("--no-disagg", pa.no_disagg, "Serve: do not size disaggregated prefill/decode deployments beside the aggregated ones");
  plan->add_option("--top-k", pa.top_k, "Serve: candidates the closed-form screen passes to the simulation (default 24; 0: all)");
  plan->add_flag("--phases", pa.phases,
                 "Offline: also search phase plans (Seesaw): a prefill layout and a decode layout on the same GPUs with a host-memory KV "
                 "buffer, beside the best static plan and the best disaggregated split (docs/phases.md)");
  plan->add_option("--host-buffer-gib", pa.host_buffer_gib, "With --phases: host memory per GPU for the KV buffer and the weights' copies (default 80, Seesaw's)");
  plan->add_flag("--json", pa.json, "Print one JSON object (plan, metrics, evaluations, wall_s, baseline_megatron)");

  return {plan, [args, cli] { return run_plan_any(*args, cli); }};
}

}  // namespace shardwise::cli
