#include "report/serve_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost/engine.hpp"
#include "plan/plan_json.hpp"
#include "report/format.hpp"
#include "report/simulate.hpp"

namespace shardwise {
namespace {
using nlohmann::json;




json stats_json(const LatencyStats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}, {"max", s.max}};
}

// The knee check of a serving run (docs/serving.md, "Near capacity: the knee check"): its line,
// after `indent`, or nothing; and its JSON, null when not run.
std::string knee_text(const ServeResult& r, const char* indent) {
  if (!r.knee) return {};
  const KneeCheck& k = *r.knee;
  const double pct = 100.0 * (k.rate_scale - 1.0);
  if (!k.skipped.empty()) return fmt::format("{}near the knee at {:.0f}% more requests/s: {}\n", indent, pct, k.skipped);
  return fmt::format("{}near the knee at {:.0f}% more requests/s: TTFT mean {:.1f} -> {:.1f} ms, p99 {:.1f} -> {:.1f} ms; TPOT mean {:.2f} -> "
                     "{:.2f} ms{}\n",
                     indent, pct, r.ttft_ms.mean, k.ttft_ms.mean, r.ttft_ms.p99, k.ttft_ms.p99, r.tpot_ms.mean, k.tpot_ms.mean,
                     k.past_capacity ? fmt::format("; {:.3f} requests/s is past the capacity (overloaded there{})", k.rate_scale * r.offered_requests_per_s,
                                                   k.queue_grew ? ", the queue grows" : "")
                     : k.queue_grew ? "; the queue grows there" : "");
}

json knee_json(const ServeResult& r) {
  if (!r.knee) return nullptr;
  const KneeCheck& k = *r.knee;
  if (!k.skipped.empty()) return {{"rate_scale", k.rate_scale}, {"past_capacity", k.past_capacity}, {"skipped", k.skipped}};
  return {{"rate_scale", k.rate_scale}, {"ttft_ms", k.ttft_ms.mean}, {"ttft_ms_p99", k.ttft_ms.p99}, {"tpot_ms", k.tpot_ms.mean},
          {"tpot_ms_p99", k.tpot_ms.p99}, {"past_capacity", k.past_capacity}, {"queue_grows", k.queue_grew}, {"skipped", nullptr}};
}
}  // namespace

std::string slo_label(const Workload& w, const char* le) {
  std::string s;
  const auto add = [&](const char* what, const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
    if (mean) s += fmt::format("{}{} mean {} {} ms", s.empty() ? "" : ", ", what, le, *mean);
    for (const auto& b : pcts) s += fmt::format("{}{} {} {} {} ms", s.empty() ? "" : ", ", what, slo_stat_name(b.pct), le, b.ms);
  };
  add("TTFT", w.ttft_ms, w.ttft_pct);
  add("TPOT", w.tpot_ms, w.tpot_pct);
  return s.empty() ? "none" : s;
}

std::string lengths_label(const std::optional<LengthDist>& d, std::int64_t fixed) {
  if (!d) return grouped(fixed);
  switch (d->kind) {
    case LengthDist::Kind::kFixed: return grouped(static_cast<std::int64_t>(d->mean));
    case LengthDist::Kind::kUniform: return fmt::format("uniform {}..{}", grouped(d->min), grouped(d->max));
    case LengthDist::Kind::kLognormal: return fmt::format("lognormal mean {} sigma {}", grouped(static_cast<std::int64_t>(d->mean)), d->sigma);
    case LengthDist::Kind::kHistogram: return fmt::format("histogram of {} bins, mean {:.0f}", d->bins.size(), mean_of(*d));
  }
  return "?";
}

std::string arrivals_label(const Workload& w) {
  const Arrivals& a = w.serve.arrivals;
  switch (a.kind) {
    case Arrivals::Kind::kPoisson: return fmt::format("Poisson at {} requests/s", a.rate);
    case Arrivals::Kind::kClosed: return fmt::format("closed loop, {} users", grouped(a.concurrency));
    case Arrivals::Kind::kBurst: return "offline (every request at once)";
    case Arrivals::Kind::kTrace: return fmt::format("trace {} ({} requests)", w.serve.trace_file, grouped(static_cast<std::int64_t>(w.serve.trace.size())));
  }
  return "?";
}

// `pools`: a disaggregated deployment's result (its counts and occupancy are over every
// instance of both pools, not one instance's)
std::string serve_body(const SimContext& ctx, const ServeResult& r, double wall_s, bool pools = false);
// The steady-state window and whether its halves agree (docs/serving.md, "Steady state").
std::string steady_line(const SimContext& ctx, const ServeResult& r, bool pools = false);

std::string serve_text(const SimContext& ctx, const Plan& plan, const ServeResult& r, double wall_s) {
  const Workload& w = ctx.workload;
  const EngineTraits& e = ctx.engine;
  std::string s = plan_lines(ctx, plan);
  s += fmt::format("workload     {} (serve): {}; input {}, output {} tokens; seed {}\n", w.name, arrivals_label(w),
                   lengths_label(w.serve.input, w.isl), lengths_label(w.serve.output, w.osl), w.serve.seed);
  s += context_lines(ctx);
  s += fmt::format("scheduler    {}, {} KV, at most {} running sequences and {} tokens per iteration {}\n",
                   e.prefill_first ? "prefill first" : "decode first with chunked prefill", e.reserve_full_kv ? "reserve-full" : "on-demand",
                   grouped(e.max_num_seqs), grouped(e.max_num_tokens), running_cap_unit(e, plan.deg));
  if (e.decode_steps > 1) s += fmt::format("             {} decode iterations per scheduling decision\n", e.decode_steps);
  if (e.adp_timeout_iters > 0 && plan.deg.attn_dp > 1) {
    s += fmt::format("             attention-DP balancing: new prompts wait for every DP rank to have one ({} more iterations while all decode), "
                     "or for {} iterations without\n",
                     e.adp_wait_iters, e.adp_timeout_iters);
  }
  if (!e.cuda_graph_batch_sizes.empty()) {
    s += fmt::format("             CUDA graphs: a decode-only iteration runs padded up to the next of {} sequences{}\n",
                     cuda_graph_batch_sizes_text(e.cuda_graph_batch_sizes), plan.deg.attn_dp > 1 ? " per attention-DP rank" : "");
  } else if (const auto d = default_graph_sizes(e); !d.empty()) {
    s += fmt::format("             CUDA graphs: the engine's default capture sizes ({} to {}, {} of them): a decode-only iteration runs padded up to the next of them{}\n",
                     d.front(), d.back(), d.size(), plan.deg.attn_dp > 1 ? " per attention-DP rank" : "");
  }
  return s + serve_body(ctx, r, wall_s);
}

std::string serve_body(const SimContext& ctx, const ServeResult& r, double wall_s, bool pools) {
  const char* counted = pools ? "in all (both pools)" : "per instance";
  std::string s = fmt::format("SLOs         {}\n", slo_label(ctx.workload));
  if (r.stopped) {  // no statistics: the requests finished by then are the early, lightly loaded ones
    s += fmt::format("STOPPED      {} (no statistics: those of the requests finished so far would be biased)\n", r.reason);
    return s;
  }
  if (r.kv_tokens < 1 || r.requests == 0) {
    s += fmt::format("INFEASIBLE   {}\n", r.reason);
    return s;
  }
  s += fmt::format("KV cache     {} tokens per instance\n", grouped(r.kv_tokens));
  s += fmt::format("\n{:<12} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "latency ms", "mean", "p50", "p90", "p99", "max");
  const auto row = [&](const char* name, const LatencyStats& l) {
    s += fmt::format("{:<12} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n", name, l.mean, l.p50, l.p90, l.p99, l.max);
  };
  row("TTFT", r.ttft_ms);
  row("TPOT", r.tpot_ms);
  row("E2E", r.e2e_ms);
  s += "\n";
  s += fmt::format("throughput   {:.1f} output tokens/s per GPU, {:.1f} total tokens/s per GPU\n", r.output_tok_s_per_gpu, r.total_tok_s_per_gpu);
  s += fmt::format("requests     {:.3f} requests/s, goodput {:.3f} requests/s within the SLOs\n", r.requests_per_s, r.goodput_requests_per_s);
  if (r.capacity_requests_per_s > 0) {
    s += fmt::format("load         offered {:.3f} requests/s of a capacity of {:.3f} (every request queued at once): {:.0f}%\n",
                     r.offered_requests_per_s, r.capacity_requests_per_s, 100.0 * r.offered_requests_per_s / r.capacity_requests_per_s);
  }
  s += knee_text(r, "");
  s += fmt::format("occupancy    {:.1f} requests in the system, {:.1f} {} (time averages {}); {} preemptions\n", r.mean_in_system,
                   r.mean_running, pools ? "past their first token" : "running", pools ? "over both pools" : "per instance", grouped(r.preemptions));
  s += fmt::format("mean request {:.1f} ms waiting, {:.1f} ms admission to first token, {:.1f} ms decoding\n", r.queue_ms, r.prefill_ms, r.decode_ms);
  s += fmt::format("bottleneck   {}: {}\n", to_string(r.bottleneck), r.bottleneck_note);
  s += r.feasible ? std::string("verdict      feasible\n") : fmt::format("INFEASIBLE   {}\n", r.reason);
  s += fmt::format("simulated    {} requests {}, {} iterations, {} step evaluations in {:.1f} ms ({:.2f}M events/s)\n",
                   grouped(r.requests), counted, grouped(r.iterations), grouped(r.step_evaluations), wall_s * 1e3,
                   wall_s > 0 ? static_cast<double>(r.events) / wall_s / 1e6 : 0.0);
  s += steady_line(ctx, r, pools);
  return s;
}

std::string steady_line(const SimContext& ctx, const ServeResult& r, bool pools) {
  const bool auto_length = ctx.workload.serve.requests == 0;
  if (r.window_s <= 0) {
    return fmt::format("steady state the whole run measured ({})\n", r.requests < kMinWindowed
                                                                        ? fmt::format("under {} requests: no window", kMinWindowed)
                                                                        : std::string("all at once: a capacity measurement"));
  }
  std::string s = fmt::format("steady state {} requests measured, arriving over {:.1f} s between the 10th and 90th percentile arrivals; "
                              "its halves differ by {:.1f}%{}\n",
                              grouped(r.measured_requests), r.window_s, 100.0 * r.halves_diff,
                              r.stable ? "" : fmt::format(" (over {:.0f}% throughput or {:.0f}% latency)", 100.0 * kSteadyThroughputTol,
                                                          100.0 * kSteadyLatencyTol));
  if (auto_length && r.length_runs > 1) {
    s += fmt::format("             (the automatic length: {} runs, doubling from {} requests)\n", r.length_runs, grouped(kDefaultRequests));
  }
  if (!r.stable && r.capacity_requests_per_s > 0 && r.offered_requests_per_s > r.capacity_requests_per_s) {
    s += "note         no steady state exists above the capacity: the queue grows however long the run\n";
  } else if (!r.stable) {
    s += auto_length ? fmt::format("note         not steady at {} requests {} (the automatic length's limit, or the time "
                                   "limit): the figures are a transient's\n", grouped(r.requests), pools ? "in all" : "per instance")
                     : fmt::format("note         --requests {} is too short for a steady state here: the figures are a transient's "
                                   "(leave --requests out to let the length grow until it is steady)\n", grouped(ctx.workload.serve.requests));
  }
  return s;
}

std::string serve_json(const SimContext& ctx, const Plan& plan, const ServeResult& r, double wall_s) {
  const Workload& w = ctx.workload;
  json j;
  j["feasible"] = r.feasible;
  j["reason"] = r.feasible ? json(nullptr) : json(r.reason);
  j["stopped"] = r.stopped;
  j["mode"] = "serve";
  j["arrivals"] = to_string(w.serve.arrivals.kind);
  if (w.serve.arrivals.kind == Arrivals::Kind::kPoisson) j["rate"] = w.serve.arrivals.rate;
  if (w.serve.arrivals.kind == Arrivals::Kind::kClosed) j["concurrency"] = w.serve.arrivals.concurrency;
  j["seed"] = w.serve.seed;
  j["requests"] = r.requests;
  j["steady_state"] = {{"measured_requests", r.measured_requests}, {"window_s", r.window_s}, {"halves_diff", r.halves_diff},
                       {"stable", r.stable}, {"length_runs", r.length_runs}, {"automatic_length", w.serve.requests == 0}};
  j["gpus"] = plan.deg.total_gpus();
  j["plan"] = json::parse(plan_to_json(PlanFile{plan, ctx.model.name, ctx.cluster.name, w.name, {}, std::nullopt}));
  const std::vector<std::int64_t> defaults = default_graph_sizes(ctx.engine);  // the engine's own ladder (vLLM's)
  j["engine"] = {{"name", ctx.engine.name}, {"version", ctx.engine.version}, {"max_num_tokens", ctx.engine.max_num_tokens},
                 {"max_num_seqs", ctx.engine.max_num_seqs}, {"prefill_first", ctx.engine.prefill_first},
                 {"reserve_full_kv", ctx.engine.reserve_full_kv}, {"decode_steps", ctx.engine.decode_steps},
                 {"adp_balance", ctx.engine.adp_timeout_iters > 0 ? json{{"batching_wait_iters", ctx.engine.adp_wait_iters},
                                                                          {"timeout_iters", ctx.engine.adp_timeout_iters}}
                                                                    : json(nullptr)},
                 {"cuda_graph_batch_sizes", ctx.engine.cuda_graph_batch_sizes.empty() ? json(nullptr) : json(ctx.engine.cuda_graph_batch_sizes)},
                 {"default_cuda_graph_batch_sizes", defaults.empty() ? json(nullptr) : json(defaults)}};
  j["ttft_ms"] = r.ttft_ms.mean;
  j["tpot_ms"] = r.tpot_ms.mean;
  j["e2e_ms"] = r.e2e_ms.mean;
  j["ttft_ms_p50"] = r.ttft_ms.p50;
  j["ttft_ms_p90"] = r.ttft_ms.p90;
  j["ttft_ms_p99"] = r.ttft_ms.p99;
  j["tpot_ms_p50"] = r.tpot_ms.p50;
  j["tpot_ms_p90"] = r.tpot_ms.p90;
  j["tpot_ms_p99"] = r.tpot_ms.p99;
  j["e2e_ms_p50"] = r.e2e_ms.p50;
  j["e2e_ms_p99"] = r.e2e_ms.p99;
  j["ttft"] = stats_json(r.ttft_ms);
  j["tpot"] = stats_json(r.tpot_ms);
  j["e2e"] = stats_json(r.e2e_ms);
  j["output_tok_s_per_gpu"] = r.output_tok_s_per_gpu;
  j["total_tok_s_per_gpu"] = r.total_tok_s_per_gpu;
  j["requests_per_s"] = r.requests_per_s;
  j["goodput_requests_per_s"] = r.goodput_requests_per_s;
  j["offered_requests_per_s"] = r.offered_requests_per_s;
  j["capacity_requests_per_s"] = r.capacity_requests_per_s;
  j["knee"] = knee_json(r);
  j["kv_cache_tokens"] = r.kv_tokens;
  j["mean_in_system"] = r.mean_in_system;
  j["mean_running"] = r.mean_running;
  j["preemptions"] = r.preemptions;
  j["queue_ms"] = r.queue_ms;
  j["prefill_ms"] = r.prefill_ms;
  j["decode_ms"] = r.decode_ms;
  j["bottleneck"] = to_string(r.bottleneck);
  j["bottleneck_note"] = r.bottleneck_note;
  j["makespan_s"] = r.makespan_s;
  j["iterations"] = r.iterations;
  j["step_evaluations"] = r.step_evaluations;
  j["sim_wall_ms"] = wall_s * 1e3;
  return j.dump(2);
}

namespace {
std::string shape(const Plan& p, bool moe) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp {}", d.tp);
  if (d.attn_dp > 1) s += fmt::format(" x attn_dp {}", d.attn_dp);
  if (d.pp > 1) s += fmt::format(" x pp {}", d.pp);
  if (moe) s += fmt::format(" ep {}", d.ep);
  const std::string sh = sharding_to_string(p.sharding);
  if (sh != "megatron") s += sh == "ffn1=none ffn2=none" ? " dp-mlp" : " (" + sh + ")";
  if (p.two_batch_overlap) s += " tbo";
  return s;
}

// The simulated figures of a deployment at the target rate.
std::string at_target_text(const ServeResult& x, double target_rate) {
  return fmt::format("             at {} requests/s: TTFT p50 {} p99 {}, TPOT p50 {} p99 {}, goodput {:.3f} requests/s; {:.1f} output tokens/s per GPU\n",
                     target_rate, ms_text(x.ttft_ms.p50), ms_text(x.ttft_ms.p99), ms_text(x.tpot_ms.p50), ms_text(x.tpot_ms.p99),
                     x.goodput_requests_per_s, x.output_tok_s_per_gpu);
}

std::string frontier_text(const ServePlanResult& r, const char* what) {
  std::string s = fmt::format("\nfrontier of the chosen {} (Poisson arrivals at shares of its max rate in the SLOs):\n", what);
  s += fmt::format("{:>10} {:>17} {:>11} {:>10} {:>10}  {}\n", "req/s", "output t/s/GPU", "t/s/user", "TTFT p99", "TPOT p99", "SLOs");
  for (const FrontierPoint& f : r.frontier) {
    s += fmt::format("{:>10.3f} {:>17.1f} {:>11.1f} {:>10} {:>10}  {}\n", f.rate, f.output_tok_s_per_gpu, f.tok_s_per_user, ms_text(f.ttft_p99_ms),
                     ms_text(f.tpot_p99_ms), f.feasible ? "met" : "missed");
  }
  return s;
}

// --target-rate: the fewest GPUs aggregated and disaggregated, each with its simulation at
// the target (or why there is none), then the chosen one.
std::string target_text(const SimContext& ctx, const ServePlanResult& r, double target_rate) {
  const bool moe = ctx.model.is_moe();
  std::string s;
  const bool agg = r.best >= 0 && r.deployment_rate > 0;
  if (agg) {
    const Degrees& d = r.deployment.deg;
    const ServeCandidate& b = r.candidates[static_cast<std::size_t>(r.best)];
    s += fmt::format("aggregated   {} GPU{}: {} {} of {} ({} GPU{})\n", d.total_gpus(), d.total_gpus() == 1 ? "" : "s", d.replicas, d.replicas == 1 ? "replica" : "replicas",
                     shape(b.plan, moe), d.instance_gpus(), d.instance_gpus() == 1 ? "" : "s each");
    s += at_target_text(r.deployment_result, target_rate);
    s += knee_text(r.deployment_result, "             ");
  } else {
    s += fmt::format("aggregated   none: {}\n", r.reason);
  }
  if (r.disagg_best >= 0) {
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    s += fmt::format("disaggregated {} GPUs: {} prefill x {} + {} decode x {} (#{})\n", c.plan.gpus(), c.plan.prefill.deg.replicas,
                     shape(c.plan.prefill, moe), c.plan.decode.deg.replicas, shape(c.plan.decode, moe), r.disagg_best + 1);
    s += at_target_text(c.at_max.total, target_rate);
  } else if (!r.disagg_reason.empty()) {
    s += fmt::format("disaggregated none: {}\n", r.disagg_reason);
  }
  if (!r.found()) {
    s += fmt::format("INFEASIBLE   {}\n", r.reason);
    return s;
  }
  if (r.disagg_chosen) {
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    s += fmt::format("fewest GPUs  {} for {} requests/s: disaggregated, {} prefill x {} + {} decode x {}{}\n", c.plan.gpus(), target_rate,
                     c.plan.prefill.deg.replicas, shape(c.plan.prefill, moe), c.plan.decode.deg.replicas, shape(c.plan.decode, moe),
                     agg ? fmt::format(" ({} fewer than aggregated)", r.deployment.deg.total_gpus() - c.plan.gpus()) : std::string(" (no aggregated deployment serves it)"));
    return s + frontier_text(r, "deployment");
  }
  const Degrees& d = r.deployment.deg;
  const ServeCandidate& b = r.candidates[static_cast<std::size_t>(r.best)];
  s += fmt::format("fewest GPUs  {} for {} requests/s: aggregated, {} {} of {} ({} GPU{})\n", d.total_gpus(), target_rate, d.replicas,
                   d.replicas == 1 ? "replica" : "replicas", shape(b.plan, moe), d.instance_gpus(), d.instance_gpus() == 1 ? "" : "s each");
  return s + frontier_text(r, "instance");
}

}  // namespace

// Which candidates' max rate was searched again at steady state (docs/serving.md, "Steady
// state"): "" when none was (a fixed --requests), else a line naming them.
template <class C>
std::string steady_line(const std::vector<C>& cands, const char* others) {
  std::string which;
  std::size_t n = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].steady) continue;
    which += fmt::format("{}#{}", which.empty() ? "" : ", ", i + 1);
    ++n;
  }
  if (n == 0) return "";
  std::string out = fmt::format("(steady state: {} searched again at the automatic length, each run until its statistics are steady; only these are "
                                "answers{})\n",
                                which, n == cands.size() ? "" : fmt::format(": {} max in SLO is a short run's, which overstates what a queue sustains", others));
  // the shapes whose short runs still beat the best steady answer when the steady searches
  // stopped at their limit (ServePlanOptions::steady_candidates): the answer is the best of
  // those searched, not proven the best of all
  double best_steady = 0;
  for (const C& c : cands) {
    if (c.steady) best_steady = std::max(best_steady, c.per_gpu());
  }
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const C& c = cands[i];
    if (!c.steady && c.max_rate > 0 && c.per_gpu() > best_steady) open.push_back(i);
  }
  if (open.empty()) return out;
  std::stable_sort(open.begin(), open.end(), [&](std::size_t x, std::size_t y) { return cands[x].per_gpu() > cands[y].per_gpu(); });
  constexpr std::size_t kListed = 5;  // the best few by their short runs, the rest counted
  std::string which_open;
  for (std::size_t j = 0; j < std::min(open.size(), kListed); ++j) {
    which_open += fmt::format("{}#{} ({:.4f})", j == 0 ? "" : ", ", open[j] + 1, cands[open[j]].per_gpu());
  }
  if (open.size() > kListed) which_open += fmt::format(" and {} more", open.size() - kListed);
  const bool one = open.size() == 1;
  out += fmt::format("(not searched again, the steady searches stopped (their limit or a time limit): {} ran more requests/s per GPU in {} short run{} than the "
                     "answer sustains; the answer is the best of those searched, and {} might sustain more)\n",
                     which_open, one ? "its" : "their", one ? "" : "s", one ? "it" : "one of them");
  return out;
}

std::string serve_plan_text(const SimContext& ctx, const ServePlanResult& r, double target_rate, std::int64_t requests) {
  const Workload& w = ctx.workload;
  const bool moe = ctx.model.is_moe();
  std::string s;
  s += fmt::format("serve plan   {} on {}, workload {} (serve): input {}, output {} tokens; SLOs {}\n", ctx.model.name, ctx.cluster.name,
                   w.name, lengths_label(w.serve.input, w.isl), lengths_label(w.serve.output, w.osl), slo_label(w));
  s += context_lines(ctx);
  s += fmt::format("screen       {} instance shapes by the closed form, {} fit memory and the SLOs' bound; the best {} simulated "
                   "({} requests each, Poisson arrivals): {} simulations in {:.2f} s\n",
                   r.screened, r.screen_feasible, r.candidates.size(), grouped(requests), r.simulations, r.wall_s);
  if (r.not_runnable > 0) {
    s += fmt::format("             {} more layouts no engine runs as planned were left out (--engine any keeps them)\n", r.not_runnable);
  }
  if (r.best >= 0 && r.deployment_rate > 0 && !r.disagg_chosen) {
    // which engines start the chosen deployment as planned (launch needs no nearest plan for them)
    std::string names;
    for (const ServeEngine e : engines_running(ctx, r.deployment)) names += (names.empty() ? "" : ", ") + std::string(to_string(e));
    s += names.empty() ? "engines      NO engine runs this layout as planned: launch prints each engine's nearest plan and its cost\n"
                       : fmt::format("engines      runs as planned on {}\n", names);
  }
  s += "certified    no: the best of the simulated shapes, not a proven optimum (the exact optimiser certifies the closed form "
       "only; docs/search.md, \"Where exact cannot certify\")\n";
  if (!r.stopped.empty()) {
    s += fmt::format("STOPPED      by {} after {:.1f} s: the shapes not simulated to the end are left out (a partial search)\n", r.stopped, r.wall_s);
  }
  if (!r.candidates.empty()) {
    s += fmt::format("\n{:>2}  {:<40} {:>4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}\n", "#", "instance", "GPUs", "screen t/s/G",
                     "capacity", "max in SLO", "req/s/GPU", "TTFT p99", "TPOT p99", "seqs/chunk");
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
      const ServeCandidate& c = r.candidates[i];
      s += fmt::format("{:>2}{} {:<40} {:>4} {:>12.1f} {:>10.3f} {:>10.3f} {:>10.4f} {:>10} {:>10} {:>11}\n", i + 1,
                       static_cast<int>(i) == r.best ? "*" : " ", shape(c.plan, moe), c.plan.deg.instance_gpus(), c.screen.objective,
                       c.capacity, c.max_rate, c.per_gpu(), c.max_rate > 0 ? ms_text(c.at_max.ttft_ms.p99) : "-",
                       c.max_rate > 0 ? ms_text(c.at_max.tpot_ms.p99) : "-", fmt::format("{}/{}", c.max_num_seqs, c.max_num_tokens));
    }
    s += "(screen t/s/G: the closed form's output tokens/s per GPU; capacity and max in SLO: requests/s of one instance;\n"
         " seqs/chunk: the running-sequence cap and the tokens per iteration per scheduling lane (an attention-DP rank; TensorRT-LLM: and\n"
         " pipeline micro-batch), tried smaller on the best three)\n";
    s += steady_line(r.candidates, "the others'") + "\n";
  }
  if (!r.disagg.empty()) {
    s += target_rate > 0 ? fmt::format("disaggregated for {} requests/s (the best prefill and decode shapes paired, each pool grown from its "
                                       "saturated bound until the SLOs hold):\n", target_rate)
                         : fmt::format("disaggregated on the same {} GPUs (the best prefill and decode shapes paired, the pools sized to balance):\n",
                                       ctx.cluster.num_gpus);
    s += fmt::format("{:>2}  {:<40} {:<40} {:>4} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}\n", "#", "prefill pool", "decode pool", "GPUs",
                     "pre req/s", "dec req/s", "max in SLO", "req/s/GPU", "TTFT p99", "TPOT p99");
    for (std::size_t i = 0; i < r.disagg.size(); ++i) {
      const DisaggCandidate& c = r.disagg[i];
      s += fmt::format("{:>2}{} {:<40} {:<40} {:>4} {:>9.3f} {:>9.3f} {:>10.3f} {:>10.4f} {:>10} {:>10}\n", i + 1,
                       static_cast<int>(i) == r.disagg_best ? "*" : " ", fmt::format("{} x {}", c.plan.prefill.deg.replicas, shape(c.plan.prefill, moe)),
                       fmt::format("{} x {}", c.plan.decode.deg.replicas, shape(c.plan.decode, moe)), c.plan.gpus(), c.prefill_rate, c.decode_rate,
                       c.max_rate, c.per_gpu(), c.max_rate > 0 ? ms_text(c.at_max.total.ttft_ms.p99) : "-",
                       c.max_rate > 0 ? ms_text(c.at_max.total.tpot_ms.p99) : "-");
    }
    s += target_rate > 0 ? "(pre/dec req/s: one instance's saturated rate in its role; max in SLO: the target, met by the whole deployment)\n"
                         : "(pre/dec req/s: one instance's saturated rate in its role; max in SLO: the whole deployment's requests/s)\n";
    s += steady_line(r.disagg, "the others'") + "\n";
  }
  if (target_rate > 0) return s + target_text(ctx, r, target_rate);
  if (r.disagg.empty() && !r.disagg_reason.empty()) s += fmt::format("disaggregated none: {}\n\n", r.disagg_reason);
  if (!r.found()) {
    s += fmt::format("INFEASIBLE   {}\n", r.reason);
    return s;
  }
  const ServeCandidate& b = r.candidates[static_cast<std::size_t>(r.best)];
  const Degrees& d = r.deployment.deg;
  if (r.disagg_chosen) {
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    s += fmt::format("aggregated   #{}: {} x {} replica{} = {} GPUs: {:.3f} requests/s within the SLOs ({:.4f} per GPU)\n", r.best + 1,
                     shape(b.plan, moe), d.replicas, d.replicas == 1 ? "" : "s", d.total_gpus(), r.deployment_rate, r.deployment_rate / static_cast<double>(d.total_gpus()));
    s += fmt::format("chosen       disaggregated #{}: {} prefill x {} + {} decode x {} = {} GPUs: {:.3f} requests/s within the SLOs ({:.4f} per GPU)\n",
                     r.disagg_best + 1, c.plan.prefill.deg.replicas, shape(c.plan.prefill, moe), c.plan.decode.deg.replicas, shape(c.plan.decode, moe),
                     c.plan.gpus(), c.max_rate, c.per_gpu());
    return s + frontier_text(r, "deployment");
  }
  if (r.disagg_best >= 0) {
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    s += fmt::format("disaggregated best #{}: {} GPUs, {:.3f} requests/s within the SLOs ({:.4f} per GPU): the aggregated plan serves more per GPU\n",
                     r.disagg_best + 1, c.plan.gpus(), c.max_rate, c.per_gpu());
  }
  s += fmt::format("chosen       #{}: {} x {} replica{} = {} GPUs of {}: {:.3f} requests/s within the SLOs ({:.4f} per GPU)\n", r.best + 1,
                   shape(b.plan, moe), d.replicas, d.replicas == 1 ? "" : "s", d.total_gpus(), ctx.cluster.num_gpus, r.deployment_rate, b.per_gpu());
  return s + frontier_text(r, "instance");
}

std::string serve_plan_json(const SimContext& ctx, const PlanFile& file, const ServePlanResult& r, double target_rate, std::int64_t requests) {
  json j;
  const bool found = r.found();
  j["feasible"] = found;
  j["reason"] = found ? json(nullptr) : json(r.reason);
  j["stopped"] = r.stopped.empty() ? json(nullptr) : json(r.stopped);
  j["mode"] = "serve";
  j["target_rate"] = target_rate > 0 ? json(target_rate) : json(nullptr);
  j["screened"] = r.screened;
  j["screen_feasible"] = r.screen_feasible;
  j["certified"] = false;  // a screen and simulations: the exact optimiser certifies the closed form only
  j["simulations"] = r.simulations;
  j["requests_per_simulation"] = requests;
  j["wall_s"] = r.wall_s;
  json cands = json::array();
  for (const ServeCandidate& c : r.candidates) {
    cands.push_back({{"plan", json::parse(plan_to_json(PlanFile{c.plan, file.model, file.cluster, file.workload, {}, std::nullopt}))},
                     {"gpus", c.plan.deg.instance_gpus()},
                     {"screen_output_tok_s_per_gpu", c.screen.objective},
                     {"capacity_requests_per_s", c.capacity},
                     {"max_requests_per_s", c.max_rate},
                     {"requests_per_s_per_gpu", c.per_gpu()},
                     {"ttft_ms_p99", c.at_max.ttft_ms.p99},
                     {"tpot_ms_p99", c.at_max.tpot_ms.p99},
                     {"max_num_seqs", c.max_num_seqs},
                     {"max_num_tokens", c.max_num_tokens},
                     {"steady", c.steady}});
  }
  j["candidates"] = cands;
  j["best"] = r.best;
  json dis = json::array();
  for (const DisaggCandidate& c : r.disagg) {
    PlanFile f = file;
    f.plan = c.plan.decode;
    f.prefill_pool = c.plan.prefill;
    f.max_num_seqs = c.plan.decode_settings.max_num_seqs;
    f.max_num_tokens = c.plan.decode_settings.max_num_tokens;
    f.prefill_max_num_seqs = c.plan.prefill_settings.max_num_seqs;
    f.prefill_max_num_tokens = c.plan.prefill_settings.max_num_tokens;
    dis.push_back({{"plan", json::parse(plan_to_json(f))},
                   {"gpus", c.plan.gpus()},
                   {"prefill_instances", c.plan.prefill.deg.replicas},
                   {"decode_instances", c.plan.decode.deg.replicas},
                   {"prefill_instance_requests_per_s", c.prefill_rate},
                   {"decode_instance_requests_per_s", c.decode_rate},
                   {"max_requests_per_s", c.max_rate},
                   {"requests_per_s_per_gpu", c.per_gpu()},
                   {"ttft_ms_p99", c.at_max.total.ttft_ms.p99},
                   {"tpot_ms_p99", c.at_max.total.tpot_ms.p99},
                   {"kv_transfer_ms", c.at_max.transfer_ms},
                   {"steady", c.steady}});
  }
  j["disaggregated_candidates"] = dis;
  j["disaggregated_best"] = r.disagg_best;
  j["disaggregated_reason"] = r.disagg_reason.empty() ? json(nullptr) : json(r.disagg_reason);
  j["chosen"] = r.disagg_chosen ? "disaggregated" : "aggregated";
  if (found) {
    PlanFile f = file;
    f.plan = r.deployment;
    const bool agg = r.best >= 0 && r.deployment_rate > 0;  // (a target rate only disaggregated deployments serve: none)
    j["aggregated_requests_per_s"] = agg ? json(r.deployment_rate) : json(nullptr);
    j["aggregated_gpus"] = agg ? json(r.deployment.deg.total_gpus()) : json(nullptr);
    double rate = r.deployment_rate;
    std::int64_t gpus = r.deployment.deg.total_gpus();
    if (r.disagg_chosen) {
      const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
      f.plan = c.plan.decode;
      f.prefill_pool = c.plan.prefill;
      f.max_num_seqs = c.plan.decode_settings.max_num_seqs;
      f.max_num_tokens = c.plan.decode_settings.max_num_tokens;
      f.prefill_max_num_seqs = c.plan.prefill_settings.max_num_seqs;
      f.prefill_max_num_tokens = c.plan.prefill_settings.max_num_tokens;
      rate = c.max_rate;
      gpus = c.plan.gpus();
    }
    j["plan"] = json::parse(plan_to_json(f));
    j["gpus"] = gpus;
    j["requests_per_s"] = rate;
    j["requests_per_s_per_gpu"] = rate / static_cast<double>(gpus);
    const ServeResult& x = r.disagg_chosen ? r.disagg[static_cast<std::size_t>(r.disagg_best)].at_max.total : r.deployment_result;
    j["ttft_ms_p50"] = x.ttft_ms.p50;
    j["ttft_ms_p99"] = x.ttft_ms.p99;
    j["tpot_ms_p50"] = x.tpot_ms.p50;
    j["tpot_ms_p99"] = x.tpot_ms.p99;
    j["goodput_requests_per_s"] = x.goodput_requests_per_s;
    j["knee"] = knee_json(x);  // --target-rate's aggregated deployment (null otherwise)
    json fr = json::array();
    for (const FrontierPoint& p : r.frontier) {
      fr.push_back({{"requests_per_s", p.rate}, {"output_tok_s_per_gpu", p.output_tok_s_per_gpu}, {"tok_s_per_user", p.tok_s_per_user},
                    {"ttft_ms_p99", p.ttft_p99_ms}, {"tpot_ms_p99", p.tpot_p99_ms}, {"feasible", p.feasible}});
    }
    j["frontier"] = fr;
  }
  (void)ctx;
  return j.dump(2);
}

std::string serve_disagg_text(const SimContext& ctx, const DisaggPlan& d, const DisaggResult& r, double wall_s) {
  const Workload& w = ctx.workload;
  const EngineTraits& e = ctx.engine;
  const bool moe = ctx.model.is_moe();
  std::string s = fmt::format("prefill pool {} instances of {} ({} GPUs each)\n", d.prefill.deg.replicas, shape(d.prefill, moe), d.prefill.deg.instance_gpus());
  s += fmt::format("decode pool  {} instances of {} ({} GPUs each); {} GPUs of {} in all\n", d.decode.deg.replicas, shape(d.decode, moe),
                   d.decode.deg.instance_gpus(), d.gpus(), ctx.cluster.num_gpus);
  s += fmt::format("workload     {} (serve): {}; input {}, output {} tokens; seed {}\n", w.name, arrivals_label(w),
                   lengths_label(w.serve.input, w.isl), lengths_label(w.serve.output, w.osl), w.serve.seed);
  s += context_lines(ctx);
  // each pool's caps: its own where the plan gives them (DisaggPlan's settings), else the engine's
  const auto caps = [&](const PoolSettings& p) {
    return fmt::format("at most {} running sequences and {} tokens per iteration", grouped(p.max_num_seqs > 0 ? p.max_num_seqs : e.max_num_seqs),
                       grouped(p.max_num_tokens > 0 ? p.max_num_tokens : e.max_num_tokens));
  };
  if (d.prefill_settings == d.decode_settings) {
    s += fmt::format("scheduler    each pool {}, {} KV, {} per scheduling lane\n", e.prefill_first ? "prefill first" : "decode first",
                     e.reserve_full_kv ? "reserve-full" : "on-demand", caps(d.decode_settings));
  } else {
    s += fmt::format("scheduler    each pool {}, {} KV; per scheduling lane: prefill pool {}, decode pool {}\n",
                     e.prefill_first ? "prefill first" : "decode first", e.reserve_full_kv ? "reserve-full" : "on-demand", caps(d.prefill_settings),
                     caps(d.decode_settings));
  }
  if (r.total.requests > 0) {
    s += fmt::format("KV transfer  {:.1f} MB per request over {}, {:.2f} ms on average\n", r.kv_mb_per_request, r.link, r.transfer_ms);
    if (r.prefill_capacity > 0) {
      s += fmt::format("pools        capacity: prefill {:.3f}, decode {:.3f} requests/s (each pool's requests all queued at once)\n",
                       r.prefill_capacity, r.decode_capacity);
    }
  }
  return s + serve_body(ctx, r.total, wall_s, true);
}

std::string serve_disagg_json(const SimContext& ctx, const DisaggPlan& d, const DisaggResult& r, double wall_s) {
  json j = json::parse(serve_json(ctx, d.decode, r.total, wall_s));
  PlanFile f{d.decode, ctx.model.name, ctx.cluster.name, ctx.workload.name, {}, d.prefill};
  if (d.prefill_settings.max_num_seqs > 0) f.prefill_max_num_seqs = d.prefill_settings.max_num_seqs;
  if (d.prefill_settings.max_num_tokens > 0) f.prefill_max_num_tokens = d.prefill_settings.max_num_tokens;
  j["plan"] = json::parse(plan_to_json(f));
  j["gpus"] = d.gpus();
  j["disaggregated"] = {{"prefill_instances", d.prefill.deg.replicas}, {"decode_instances", d.decode.deg.replicas},
                        {"prefill_capacity_requests_per_s", r.prefill_capacity}, {"decode_capacity_requests_per_s", r.decode_capacity},
                        {"kv_transfer_ms", r.transfer_ms}, {"kv_mb_per_request", r.kv_mb_per_request}, {"link", r.link},
                        {"prefill_queue_ms", r.prefill_queue_ms}, {"decode_queue_ms", r.decode_queue_ms}};
  return j.dump(2);
}

}  // namespace shardwise
