// Capacity planning under load: the closed-form screen, the rate search by simulation, the
// fewest GPUs for a target rate, the chosen plan's frontier (docs/serving.md, "Planning").
#include "search/serve_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace shardwise {
namespace {

bool same_plan(const Plan& a, const Plan& b) {
  return a.deg == b.deg && a.sharding == b.sharding && a.redundant_experts == b.redundant_experts && a.two_batch_overlap == b.two_batch_overlap;
}

// The context for a simulation at Poisson rate `rate` for the deployment (or all at once when 0).
SimContext at_rate(const SimContext& base, double rate, std::int64_t requests) {
  SimContext c = base;
  c.workload.serve.requests = requests;
  c.workload.serve.arrivals = rate > 0 ? Arrivals{Arrivals::Kind::kPoisson, rate, 0} : Arrivals{Arrivals::Kind::kBurst, 0, 0};
  c.workload.serve.trace.clear();
  return c;
}

// The context with a candidate's engine settings.
SimContext with_settings(const SimContext& base, const ServeCandidate& c) {
  SimContext x = base;
  if (c.max_num_seqs > 0) x.engine.max_num_seqs = c.max_num_seqs;
  if (c.max_num_tokens > 0) x.engine.max_num_tokens = c.max_num_tokens;
  return x;
}

// The highest rate in [0, hi] at which run(rate) is feasible: hi itself when it is, else by
// `steps` bisections; with the run at that rate (or the last infeasible one when none is).
template <class R, class Run, class Feasible>
std::pair<double, R> bisect_rate(double hi, int steps, Run run, Feasible feasible) {
  R top = run(hi);
  if (feasible(top)) return {hi, std::move(top)};
  double lo = 0;
  std::optional<R> ok;
  R last = std::move(top);
  for (int i = 0; i < steps; ++i) {
    const double mid = (lo + hi) / 2;
    R r = run(mid);
    if (feasible(r)) {
      lo = mid;
      ok = std::move(r);
    } else {
      hi = mid;
      last = std::move(r);
    }
  }
  return {lo, ok ? std::move(*ok) : std::move(last)};
}

// The highest Poisson rate (requests/s, one instance) whose simulation meets every SLO,
// by bisection between 0 and the saturated rate.
// `requests` per simulation; 0: the automatic length (each run until its statistics are steady).
void rate_search(const SimContext& base, ServeCandidate& c, const ServePlanOptions& opt, std::int64_t& sims, std::int64_t requests) {
  const SimContext ctx = with_settings(base, c);
  ServeOptions so;
  so.watch = opt.watch;
  so.measure_capacity = false;  // the rate never exceeds the capacity measured here
  c.capacity = saturated_requests_per_s(at_rate(ctx, 0, opt.requests), c.plan, opt.watch);
  ++sims;
  if (c.capacity <= 0) {
    c.at_max = simulate_serving(at_rate(ctx, 0, opt.requests), c.plan, so);  // says why (the KV cache)
    ++sims;
    return;
  }
  auto [rate, at] = bisect_rate<ServeResult>(
      c.capacity, opt.bisect_steps,
      [&](double r) {
        ++sims;
        return simulate_serving(at_rate(ctx, r, requests), c.plan, so);
      },
      [](const ServeResult& x) { return x.feasible; });
  c.max_rate = rate;
  c.at_max = std::move(at);
}

// The instance shapes of the screen (their plans only).
template <class S>
std::vector<Plan> feasible_plans(const std::vector<S>& v) {
  std::vector<Plan> out;
  for (const auto& x : v) out.push_back(x.plan);
  return out;
}

// The shapes ranked by a closed form of one role: prefill (input tokens/s per GPU at batch
// max within the TTFT bound) or decode (output tokens/s per GPU at context isl + osl / 2
// within the TPOT bound).
std::vector<Plan> best_for_role(const SimContext& ctx, const std::vector<Plan>& shapes, bool prefill, int keep) {
  SimContext c = ctx;
  Workload& w = c.workload;
  if (prefill) {
    w.mode = Mode::kPrefill;
    w.context = 0;
    w.osl = 0;
    w.tpot_ms.reset();
    w.tpot_pct.clear();
    w.spec_tokens = 0;
  } else {
    w.mode = Mode::kDecode;
    w.context = ctx.workload.isl + ctx.workload.osl / 2;
    w.isl = w.osl = 0;
    w.ttft_ms.reset();
    w.ttft_pct.clear();
  }
  w.serve = ServeSpec{};
  std::vector<std::pair<double, Plan>> ranked;
  for (const Plan& p : shapes) {
    const Metrics m = evaluate(c, p, nullptr, false);
    if (m.feasible()) ranked.emplace_back(m.objective, p);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<Plan> out;
  for (const auto& [v, p] : ranked) {
    if (static_cast<int>(out.size()) >= keep) break;
    out.push_back(p);
  }
  return out;
}

// The pairs of the best prefill and decode shapes with each instance's saturated rate in its
// role, each shape simulated once (disaggregate and disaggregate_for_rate size pools from
// them). `why` gets a line per shape or role that pairs with nothing.
struct RolePair {
  Plan prefill, decode;
  double prefill_rate = 0, decode_rate = 0;
};
std::vector<RolePair> role_pairs(const SimContext& ctx, const std::vector<Plan>& shapes, const ServePlanOptions& opt, std::int64_t& sims,
                                 std::vector<std::string>& why) {
  const auto pre = best_for_role(ctx, shapes, true, opt.disagg_shapes);
  const auto dec = best_for_role(ctx, shapes, false, opt.disagg_shapes);
  if (pre.empty() || dec.empty()) {
    why.push_back(fmt::format("no shape fits the {} role's closed-form bound", pre.empty() ? "prefill (TTFT)" : "decode (TPOT)"));
    return {};
  }
  const auto rated = [&](const std::vector<Plan>& plans, bool prefill) {
    std::vector<std::pair<Plan, double>> out;
    for (const Plan& p : plans) {
      if (should_stop(opt.watch)) break;
      const SimContext c = at_rate(ctx, 0, opt.requests);
      const double r = prefill ? prefill_instance_rate(c, p) : decode_instance_rate(c, p);
      ++sims;
      if (r > 0) {
        out.emplace_back(p, r);
      } else {
        why.push_back(fmt::format("a {} does not fit the KV cache of a {} instance of {} GPUs", prefill ? "prompt" : "request",
                                  prefill ? "prefill" : "decode", p.deg.instance_gpus()));
      }
    }
    return out;
  };
  const auto rp = rated(pre, true);
  const auto rd = rated(dec, false);
  std::vector<RolePair> out;
  for (const auto& [p, cp] : rp) {
    for (const auto& [q, cd] : rd) out.push_back(RolePair{p, q, cp, cd});
  }
  return out;
}

// A candidate of the pair (its pools' replicas still to size) with the settings both pools run.
DisaggCandidate candidate_of(const SimContext& ctx, const RolePair& pr) {
  DisaggCandidate c;
  c.plan.prefill_settings = c.plan.decode_settings = PoolSettings{ctx.engine.max_num_seqs, ctx.engine.max_num_tokens};
  c.plan.prefill = pr.prefill;
  c.plan.decode = pr.decode;
  c.prefill_rate = pr.prefill_rate;
  c.decode_rate = pr.decode_rate;
  return c;
}

// Steady state (docs/serving.md, "Steady state"): a run of `requests` requests is a transient
// where a request lives longer than its arrivals last (1,024 output tokens at 60-130 ms a
// token outlive 1,000 arrivals at 40 requests/s): the queues it would build never form and
// its rate overstates what the deployment sustains. The candidates that can be the answer
// have their rate searched again at the automatic length by `research`, the best transient
// first, while a transient rate beats the best steady one (a transient's rate is the upper
// bound it is at high load), at most opt.steady_candidates of them.
template <class C, class Research>
void steady_research(std::vector<C>& cands, const ServePlanOptions& opt, Research research) {
  for (int n = 0; n < opt.steady_candidates && !should_stop(opt.watch); ++n) {
    int pick = -1;
    double best_steady = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const C& c = cands[i];
      if (c.steady) {
        best_steady = std::max(best_steady, c.per_gpu());
      } else if (c.max_rate > 0 && (pick < 0 || c.per_gpu() > cands[static_cast<std::size_t>(pick)].per_gpu())) {
        pick = static_cast<int>(i);
      }
    }
    if (pick < 0 || cands[static_cast<std::size_t>(pick)].per_gpu() <= best_steady) break;
    C& c = cands[static_cast<std::size_t>(pick)];
    research(c);
    c.steady = true;
    if (opt.watch) opt.watch->progress([&] { return fmt::format("steady state: candidate {} of up to {}, {:.0f} s", n + 1, opt.steady_candidates, opt.watch->elapsed_s()); });
  }
}

// The best candidate with a max rate (only a steady one when `steady_only`), -1 when none.
template <class C>
int best_of(const std::vector<C>& cands, bool steady_only) {
  int best = -1;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const C& c = cands[i];
    if (c.max_rate <= 0 || (steady_only && !c.steady)) continue;
    if (best < 0 || c.per_gpu() > cands[static_cast<std::size_t>(best)].per_gpu() * (1 + 1e-12)) best = static_cast<int>(i);
  }
  return best;
}

// The highest Poisson rate (requests/s, the whole deployment) within the SLOs, by bisection
// below `cap`, the pools' balanced saturated rate.
void disagg_rate_search(const SimContext& ctx, DisaggCandidate& c, double cap, std::int64_t requests, const ServeOptions& so,
                        const ServePlanOptions& opt, std::int64_t& sims) {
  auto [rate, at] = bisect_rate<DisaggResult>(
      cap, opt.bisect_steps,
      [&](double r) {
        ++sims;
        return simulate_disaggregated(at_rate(ctx, r, requests), c.plan, so);
      },
      [](const DisaggResult& x) { return x.total.feasible; });
  c.max_rate = rate;
  c.at_max = std::move(at);
}

// Each pool of the best disaggregated deployment its own engine settings, as the aggregated
// candidates are tuned: the decode pool's running-sequence cap (its batch sets TPOT) and the
// prefill pool's token budget (its chunk sets the prompts' iterations), smaller than the
// engine's, each kept where it serves more than 1% more within the SLOs.
void tune_pools(const SimContext& ctx, DisaggCandidate& c, std::int64_t requests, const ServeOptions& so, const ServePlanOptions& opt,
                std::int64_t& sims) {
  const double cap = std::min(c.prefill_rate * c.plan.prefill.deg.replicas, c.decode_rate * c.plan.decode.deg.replicas);
  const std::int64_t seqs0 = c.plan.decode_settings.max_num_seqs, chunk0 = c.plan.prefill_settings.max_num_tokens;
  const DisaggCandidate base = c;
  for (std::int64_t seqs : {std::int64_t{64}, std::int64_t{256}, seqs0}) {
    for (std::int64_t chunk : {std::int64_t{2048}, chunk0}) {
      if ((seqs == seqs0 && chunk == chunk0) || (seqs != seqs0 && seqs >= seqs0) || (chunk != chunk0 && chunk >= chunk0)) continue;
      if (should_stop(opt.watch)) return;
      DisaggCandidate t = base;
      t.plan.decode_settings.max_num_seqs = seqs;
      t.plan.prefill_settings.max_num_tokens = chunk;
      disagg_rate_search(ctx, t, cap, requests, so, opt, sims);
      if (t.per_gpu() > c.per_gpu() * 1.01) c = std::move(t);  // 1%: beyond the simulation's noise
    }
  }
}

void disaggregate(const SimContext& ctx, const std::vector<Plan>& shapes, const ServePlanOptions& opt, ServePlanResult& out) {
  const std::int64_t n = ctx.cluster.num_gpus;
  const std::int64_t requests = 2 * opt.requests;
  ServeOptions so;
  so.watch = opt.watch;
  so.measure_capacity = false;
  std::vector<std::string> why;  // each pair's reason, when none is sized
  for (const RolePair& pr : role_pairs(ctx, shapes, opt, out.simulations, why)) {
    if (should_stop(opt.watch)) break;
    const double cp = pr.prefill_rate, cd = pr.decode_rate;
    // x prefill and y decode instances within the cluster, the pools' rates balanced
    const std::int64_t gp = pr.prefill.deg.instance_gpus(), gd = pr.decode.deg.instance_gpus();
    std::int64_t bx = 0, by = 0;
    double best = 0;
    for (std::int64_t x = 1; x * gp + gd <= n; ++x) {
      const std::int64_t y = (n - x * gp) / gd;
      const double cap = std::min(static_cast<double>(x) * cp, static_cast<double>(y) * cd);
      if (cap > best * (1 + 1e-9)) {
        best = cap;
        bx = x;
        by = y;
      }
    }
    if (bx == 0) {
      why.push_back(fmt::format("prefill {} + decode {} GPUs per instance: one of each needs {} GPUs, over the cluster's {}", gp, gd, gp + gd, n));
      continue;
    }
    DisaggCandidate c = candidate_of(ctx, pr);
    c.plan.prefill.deg.replicas = static_cast<std::int32_t>(bx);
    c.plan.decode.deg.replicas = static_cast<std::int32_t>(by);
    disagg_rate_search(ctx, c, best, requests, so, opt, out.simulations);
    out.disagg.push_back(std::move(c));
  }
  if (out.disagg.empty()) {
    out.disagg_reason = fmt::format("no disaggregated deployment fits the cluster's {} GPUs", n);
    for (const std::string& x : why) out.disagg_reason += "; " + x;
  }
  for (std::size_t i = 0; i < out.disagg.size(); ++i) {
    if (out.disagg[i].max_rate <= 0) continue;
    if (out.disagg_best < 0 || out.disagg[i].per_gpu() > out.disagg[static_cast<std::size_t>(out.disagg_best)].per_gpu()) {
      out.disagg_best = static_cast<int>(i);
    }
  }
  if (out.disagg_best >= 0 && opt.tune_engine) tune_pools(ctx, out.disagg[static_cast<std::size_t>(out.disagg_best)], requests, so, opt, out.simulations);
  // steady state, as for the aggregated candidates: only a steady rate is then an answer
  if (opt.steady_checks && out.disagg_best >= 0) {
    steady_research(out.disagg, opt, [&](DisaggCandidate& c) {
      const double cap = std::min(c.prefill_rate * c.plan.prefill.deg.replicas, c.decode_rate * c.plan.decode.deg.replicas);
      disagg_rate_search(ctx, c, cap, 0, so, opt, out.simulations);
    });
    out.disagg_best = best_of(out.disagg, true);
  }
  if (out.disagg_best >= 0) {
    const DisaggCandidate& d = out.disagg[static_cast<std::size_t>(out.disagg_best)];
    const double agg_per_gpu = out.deployment_rate / static_cast<double>(out.deployment.deg.total_gpus());
    out.disagg_chosen = d.per_gpu() > agg_per_gpu;
  }
}

// Whether a latency misses one of its SLO bounds (the mean and each percentile).
bool misses(const LatencyStats& s, const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
  if (mean && s.mean > *mean) return true;
  for (const SloBound& b : pcts) {
    if (s.stat(b.pct) > b.ms) return true;
  }
  return false;
}

// The fewest GPUs of disaggregated deployments that serve opt.target_rate within the SLOs
// (docs/serving.md, "Planning"): for each pair of the best prefill and decode shapes, the
// pools start at the fewest instances whose saturated rates reach the target (x = ceil(R /
// prefill rate), y = ceil(R / decode rate)) and the deployment is simulated at the target;
// while it fails, the pool that failed grows by one instance (overloaded: the pool of the
// smaller capacity; TTFT, which only the prefill pool serves: prefill; TPOT: decode), within
// the cluster. Each pair's first passing deployment is a candidate; the best takes the
// fewest GPUs (then the most capacity).
void disaggregate_for_rate(const SimContext& ctx, const std::vector<Plan>& shapes, const ServePlanOptions& opt, ServePlanResult& out) {
  const std::int64_t n = ctx.cluster.num_gpus;
  const double target = opt.target_rate;
  const Workload& w = ctx.workload;
  ServeOptions so;
  so.watch = opt.watch;
  std::vector<std::string> why;  // each pair's reason, when none passes
  for (const RolePair& pr : role_pairs(ctx, shapes, opt, out.simulations, why)) {
    if (should_stop(opt.watch)) return;
    const std::int64_t gp = pr.prefill.deg.instance_gpus(), gd = pr.decode.deg.instance_gpus();
    auto x = static_cast<std::int64_t>(std::ceil(target / pr.prefill_rate - 1e-9));
    auto y = static_cast<std::int64_t>(std::ceil(target / pr.decode_rate - 1e-9));
    x = std::max<std::int64_t>(1, x);
    y = std::max<std::int64_t>(1, y);
    DisaggCandidate c = candidate_of(ctx, pr);
    std::string last;
    bool ok = false;
    for (int tries = 0; tries < 24 && x * gp + y * gd <= n && !should_stop(opt.watch); ++tries) {
      c.plan.prefill.deg.replicas = static_cast<std::int32_t>(x);
      c.plan.decode.deg.replicas = static_cast<std::int32_t>(y);
      DisaggResult r = simulate_disaggregated(at_rate(ctx, target, opt.steady_checks ? 0 : 2 * opt.requests), c.plan, so);
      ++out.simulations;
      if (r.total.feasible) {
        c.max_rate = target;
        c.at_max = std::move(r);
        ok = true;
        break;
      }
      if (r.total.stopped) return;
      last = r.total.reason;
      const ServeResult& t = r.total;
      if (t.capacity_requests_per_s > 0 && t.offered_requests_per_s > t.capacity_requests_per_s) {
        (r.prefill_capacity < r.decode_capacity ? x : y) += 1;
      } else if (misses(t.ttft_ms, w.ttft_ms, w.ttft_pct)) {
        ++x;
      } else if (misses(t.tpot_ms, w.tpot_ms, w.tpot_pct)) {
        ++y;
      } else {
        break;  // neither pool's size is the reason
      }
    }
    const std::string pair = fmt::format("prefill {} + decode {} GPUs per instance", gp, gd);
    if (ok) {
      out.disagg.push_back(std::move(c));
    } else if (x * gp + y * gd > n) {
      why.push_back(fmt::format("{}: {} + {} instances needed at least ({} GPUs, over the cluster's {}){}", pair, x, y, x * gp + y * gd, n,
                                last.empty() ? "" : "; the last tried: " + last));
    } else {
      why.push_back(fmt::format("{}: {}", pair, last.empty() ? "stopped" : last));
    }
  }
  for (std::size_t i = 0; i < out.disagg.size(); ++i) {
    const DisaggCandidate& c = out.disagg[i];
    if (out.disagg_best < 0) {
      out.disagg_best = static_cast<int>(i);
      continue;
    }
    const DisaggCandidate& b = out.disagg[static_cast<std::size_t>(out.disagg_best)];
    const double cap = std::min(c.prefill_rate * c.plan.prefill.deg.replicas, c.decode_rate * c.plan.decode.deg.replicas);
    const double bcap = std::min(b.prefill_rate * b.plan.prefill.deg.replicas, b.decode_rate * b.plan.decode.deg.replicas);
    if (c.plan.gpus() < b.plan.gpus() || (c.plan.gpus() == b.plan.gpus() && cap > bcap)) out.disagg_best = static_cast<int>(i);
  }
  if (out.disagg_best >= 0) {
    const DisaggCandidate& d = out.disagg[static_cast<std::size_t>(out.disagg_best)];
    out.disagg_chosen = out.deployment_rate <= 0 || d.plan.gpus() < out.deployment.deg.total_gpus();
  } else {
    out.disagg_reason = fmt::format("no disaggregated deployment on up to {} GPUs serves {} requests/s within the SLOs", n, target);
    for (const std::string& x : why) out.disagg_reason += "; " + x;
  }
}

}  // namespace

std::optional<Error> serve_plan_workload_error(const Workload& w, const WorkloadOverrides& o, const std::string& workload, bool compare,
                                               const std::string& command) {
  if (w.mode != Mode::kServe) return std::nullopt;
  if (o.rate || o.concurrency) {
    return Error{o.rate ? "--rate" : "--concurrency", "",
                 "no arrivals for " + command + ": it finds the most requests/s each plan serves within the SLOs (give --target-rate R "
                 "for the fewest GPUs that serve R requests/s; simulate a plan at a rate with 'simulate --plan')",
                 o.rate ? "'" + *o.rate + "'" : std::to_string(*o.concurrency)};
  }
  if (compare) {
    return Error{"--compare", "", "no --compare with --mode serve (the engines compared search the closed form; the serving "
                 "simulation ranks the screened shapes itself)", "--compare given"};
  }
  if (w.serve.arrivals.kind == Arrivals::Kind::kTrace) {
    return Error{workload, "arrivals.pattern", "no trace for " + command + " (a trace's arrival times cannot be scaled to search the "
                 "rate): give its lengths as a distribution (lengths:) with no arrivals, or simulate a plan on the trace with 'simulate --plan'",
                 "trace " + w.serve.trace_file};
  }
  return std::nullopt;
}

std::vector<ServeEngine> engines_running(const SimContext& ctx, const Plan& p) {
  std::vector<ServeEngine> out;
  // its degrees, and its sharding among those the engine runs them with (slots without an op in
  // this model compared at Megatron's choice)
  const Sharding mine = canonical_sharding(p.sharding, ctx.graph);
  for (const ServeEngine e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
    if (!engine_limits(e, ctx, p).empty()) continue;
    for (const Sharding& sh : engine_shardings(e, ctx, p.deg)) {
      if (canonical_sharding(sh, ctx.graph) == mine) {
        out.push_back(e);
        break;
      }
    }
  }
  return out;
}

ServePlanResult plan_serving(const SimContext& ctx, const SearchSpace& space, const std::optional<Plan>& extra,
                             const ServePlanOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  ServePlanResult out;
  // 1. the screen: every instance shape under Megatron's sharding (and dp-mlp with attention
  // DP), plus the closed-form search's winner, at batch max
  struct Screened {
    Plan plan;
    Metrics m;
  };
  std::vector<Screened> feasible;
  std::optional<Screened> largest_refused;  // why nothing fits: the shape with the most GPUs and the least memory, and its reason
  const auto screen_one = [&](Plan p) {
    p.deg.replicas = 1;
    p.batch = 0;
    if (opt.runnable_only && !opt.engine && engines_running(ctx, p).empty()) {
      ++out.not_runnable;  // a layout no engine runs as planned: left out unless --engine any
      return;
    }
    ++out.screened;
    Metrics m = evaluate(ctx, p, nullptr, false);
    if (!m.feasible()) {
      // the most GPUs, then the least memory per GPU: the nearest to fitting
      const auto gpus = p.deg.instance_gpus();
      if (m.infeasible == Infeasible::kInvalidPlan) return;  // breaks a rule: not a near miss
      if (!largest_refused || gpus > largest_refused->plan.deg.instance_gpus() ||
          (gpus == largest_refused->plan.deg.instance_gpus() && m.memory.total().value() < largest_refused->m.memory.total().value())) {
        largest_refused = Screened{p, m};
      }
      return;
    }
    for (const Screened& s : feasible) {
      if (same_plan(s.plan, p)) return;
    }
    feasible.push_back({p, m});
  };
  // each shape as it is and, where the plan and the engine allow it, with two-batch overlap
  const auto screen = [&](const Plan& p) {
    screen_one(p);
    if (p.two_batch_overlap || !ctx.model.is_moe()) return;
    Plan q = p;
    q.two_batch_overlap = true;
    q.deg.replicas = 1;
    if (validate_plan(q, ctx.model, ctx.cluster)) return;
    if (opt.engine && !engine_limits(*opt.engine, ctx, q).empty()) return;
    screen_one(q);
  };
  const Sharding dp_mlp = dp_mlp_sharding();
  for (std::int32_t tp : space.tp) {
    for (std::int32_t pp : space.pp) {
      for (std::int32_t ep : space.ep) {
        for (std::int32_t a : space.attn_dp) {
          Plan p;
          p.deg = Degrees{tp, pp, ep, a, 1};
          p.redundant_experts = space.redundant_experts;
          if (p.deg.instance_gpus() > ctx.cluster.num_gpus) continue;
          if (opt.engine) {  // only what the engine runs as planned
            if (!engine_limits(*opt.engine, ctx, p).empty()) continue;
            for (const Sharding& sh : engine_shardings(*opt.engine, ctx, p.deg)) {
              p.sharding = sh;
              screen(p);
            }
            continue;
          }
          p.sharding = megatron_sharding();
          screen(p);
          if (a > 1) {
            p.sharding = dp_mlp;
            screen(p);
          }
        }
      }
    }
  }
  if (extra) screen(*extra);
  out.screen_feasible = static_cast<std::int64_t>(feasible.size());
  if (feasible.empty()) {
    out.reason = fmt::format("no instance shape of the {} screened fits memory and the SLOs' closed-form bound", out.screened);
    if (largest_refused) {
      const Degrees& d = largest_refused->plan.deg;
      const Metrics why = evaluate(ctx, largest_refused->plan);  // with its reason (the screen's evaluations skip the text)
      out.reason += fmt::format("; the nearest, tp {} x attn_dp {} x pp {} (ep {}, {} GPUs): {}", d.tp, d.attn_dp, d.pp, d.ep, d.instance_gpus(),
                                why.reason);
    }
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opt.watch && opt.watch->stopped() != StopReason::kNone) out.stopped = opt.watch->stop_text();
    return out;
  }
  std::stable_sort(feasible.begin(), feasible.end(), [](const Screened& x, const Screened& y) { return x.m.objective > y.m.objective; });
  const std::size_t k = opt.top_k > 0 ? std::min<std::size_t>(static_cast<std::size_t>(opt.top_k), feasible.size()) : feasible.size();
  // 2. the rate search of the best k by simulation
  for (std::size_t i = 0; i < k && !should_stop(opt.watch); ++i) {
    ServeCandidate c;
    c.plan = feasible[i].plan;
    c.screen = feasible[i].m;
    c.max_num_seqs = ctx.engine.max_num_seqs;
    c.max_num_tokens = ctx.engine.max_num_tokens;
    rate_search(ctx, c, opt, out.simulations, opt.requests);
    out.candidates.push_back(std::move(c));
    if (opt.progress) opt.progress(static_cast<int>(i + 1), static_cast<int>(k));
    if (opt.watch) opt.watch->progress([&] { return fmt::format("simulating candidates: {} of {}, {:.0f} s", i + 1, k, opt.watch->elapsed_s()); });
  }
  // 2b. the engine settings of the best three and of the screen's first three (so that
  // simulating more of the screen never tunes fewer of the candidates a shorter list tunes):
  // other running-sequence caps and prefill chunks
  if (opt.tune_engine) {
    std::vector<std::size_t> order(out.candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return out.candidates[x].per_gpu() > out.candidates[y].per_gpu(); });
    std::vector<std::size_t> tune(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(3, order.size())));
    for (std::size_t i = 0; i < std::min<std::size_t>(3, out.candidates.size()); ++i) {
      if (std::find(tune.begin(), tune.end(), i) == tune.end()) tune.push_back(i);
    }
    for (const std::size_t at : tune) {
      ServeCandidate& c = out.candidates[at];
      if (c.max_rate <= 0 || should_stop(opt.watch)) continue;
      const std::int64_t seqs0 = c.max_num_seqs, chunk0 = c.max_num_tokens;
      for (std::int64_t seqs : {std::int64_t{64}, std::int64_t{256}, seqs0}) {
        for (std::int64_t chunk : {std::int64_t{2048}, chunk0}) {
          if ((seqs == seqs0 && chunk == chunk0) || (seqs != seqs0 && seqs >= seqs0) || (chunk != chunk0 && chunk >= chunk0)) continue;
          ServeCandidate t = c;
          t.max_num_seqs = seqs;
          t.max_num_tokens = chunk;
          t.max_rate = 0;
          rate_search(ctx, t, opt, out.simulations, opt.requests);
          if (t.per_gpu() > c.per_gpu() * 1.01) c = std::move(t);  // 1%: beyond the simulation's noise
        }
      }
    }
  }
  // 2c. steady state (steady_research): only a steady rate is an answer
  const bool steady = opt.steady_checks && opt.target_rate <= 0;
  if (steady) {
    steady_research(out.candidates, opt, [&](ServeCandidate& c) {
      c.max_rate = 0;
      rate_search(ctx, c, opt, out.simulations, 0);
    });
  }
  out.best = best_of(out.candidates, steady);
  if (out.best < 0) {
    out.reason = fmt::format("none of the {} best screened shapes meets the SLOs in simulation at any rate (the first: {})", k,
                             out.candidates.front().at_max.reason);
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opt.watch && opt.watch->stopped() != StopReason::kNone) out.stopped = opt.watch->stop_text();
    return out;
  }
  // 3. the deployment: the cluster filled with the best instance, or the fewest GPUs for the target
  const std::int64_t cluster = ctx.cluster.num_gpus;
  if (opt.target_rate > 0) {
    struct Option {
      std::size_t cand;
      std::int64_t replicas, gpus;
    };
    std::vector<Option> options;
    for (std::size_t i = 0; i < out.candidates.size(); ++i) {
      const ServeCandidate& c = out.candidates[i];
      if (c.max_rate <= 0) continue;
      const auto r = static_cast<std::int64_t>(std::ceil(opt.target_rate / c.max_rate - 1e-9));
      const std::int64_t g = r * c.plan.deg.instance_gpus();
      if (r >= 1 && g <= cluster) options.push_back({i, r, g});
    }
    std::stable_sort(options.begin(), options.end(), [&](const Option& x, const Option& y) {
      if (x.gpus != y.gpus) return x.gpus < y.gpus;
      return out.candidates[x.cand].max_rate * static_cast<double>(x.replicas) > out.candidates[y.cand].max_rate * static_cast<double>(y.replicas);
    });
    // each option checked by simulating the whole deployment at the target rate (a replica
    // more when the check fails, while the cluster has room)
    for (const Option& o : options) {
      const ServeCandidate& c = out.candidates[o.cand];
      for (std::int64_t r = o.replicas; r * c.plan.deg.instance_gpus() <= cluster; ++r) {
        Plan d = c.plan;
        d.deg.replicas = static_cast<std::int32_t>(r);
        // a steady check (the automatic length) unless the length is fixed: a short run's
        // transient understates the queues and the batch a long run settles into
        ServeOptions check;
        check.watch = opt.watch;
        check.knee_check = true;  // the deployment's report says how near its knee it runs
        ServeResult res = simulate_serving(at_rate(with_settings(ctx, c), opt.target_rate, opt.steady_checks ? 0 : opt.requests * r), d, check);
        ++out.simulations;
        if (res.feasible) {
          if (out.deployment_rate == 0 || d.deg.total_gpus() < out.deployment.deg.total_gpus()) {
            out.deployment = d;
            out.deployment_rate = opt.target_rate;
            out.deployment_result = std::move(res);
            out.best = static_cast<int>(o.cand);
          }
          break;
        }
        if (res.stopped) break;
        if (r > o.replicas + 2) break;  // far from the estimate: leave this shape
      }
      if (out.deployment_rate > 0 && o.gpus >= out.deployment.deg.total_gpus()) break;
    }
    if (out.deployment_rate == 0) {
      const ServeCandidate& b = out.candidates[static_cast<std::size_t>(out.best)];
      out.reason = fmt::format("no plan on up to {} GPUs serves {} requests/s within the SLOs: the best instance ({} GPUs) serves {:.3f} requests/s",
                               cluster, opt.target_rate, b.plan.deg.instance_gpus(), b.max_rate);
    }
  } else {
    const ServeCandidate& b = out.candidates[static_cast<std::size_t>(out.best)];
    out.deployment = b.plan;
    out.deployment.deg.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(1, cluster / b.plan.deg.instance_gpus()));
    out.deployment_rate = b.max_rate * static_cast<double>(out.deployment.deg.replicas);
    out.deployment_result = b.at_max;  // one instance's simulation: its rates scaled to the deployment
    out.deployment_result.requests_per_s *= static_cast<double>(out.deployment.deg.replicas);
    out.deployment_result.goodput_requests_per_s *= static_cast<double>(out.deployment.deg.replicas);
  }
  // 4. disaggregated deployments on the same GPUs
  if (opt.disaggregated && opt.target_rate <= 0) disaggregate(ctx, feasible_plans(feasible), opt, out);
  if (opt.disaggregated && opt.target_rate > 0 && !should_stop(opt.watch)) disaggregate_for_rate(ctx, feasible_plans(feasible), opt, out);
  // 5. the frontier of the chosen deployment
  ServeOptions so;
  so.watch = opt.watch;
  so.measure_capacity = false;
  if (out.disagg_chosen) {
    const DisaggCandidate& c = out.disagg[static_cast<std::size_t>(out.disagg_best)];
    for (double share : {0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
      const double r = share * c.max_rate;
      const ServeResult s = simulate_disaggregated(at_rate(ctx, r, opt.steady_checks ? 0 : 2 * opt.requests), c.plan, so).total;
      ++out.simulations;
      out.frontier.push_back(FrontierPoint{r, s.output_tok_s_per_gpu, s.tpot_ms.mean > 0 ? 1000.0 / s.tpot_ms.mean : 0.0, s.ttft_ms.p99,
                                           s.tpot_ms.p99, s.feasible, s.ttft_ms, s.tpot_ms});
    }
  } else {
    const ServeCandidate& b = out.candidates[static_cast<std::size_t>(out.best)];
    for (double share : {0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
      const double r = share * b.max_rate;
      const ServeResult s = simulate_serving(at_rate(with_settings(ctx, b), r, opt.steady_checks ? 0 : opt.requests), b.plan, so);
      ++out.simulations;
      out.frontier.push_back(FrontierPoint{r, s.output_tok_s_per_gpu, s.tpot_ms.mean > 0 ? 1000.0 / s.tpot_ms.mean : 0.0, s.ttft_ms.p99,
                                           s.tpot_ms.p99, s.feasible, s.ttft_ms, s.tpot_ms});
    }
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.watch && opt.watch->stopped() != StopReason::kNone) out.stopped = opt.watch->stop_text();
  return out;
}

ServePlanOptions serve_plan_options(std::int64_t workload_requests, int top_k, double target_rate, std::optional<ServeEngine> engine,
                                    bool runnable_only, bool disaggregated) {
  ServePlanOptions so;
  so.top_k = top_k;
  so.target_rate = target_rate;
  so.engine = engine;
  so.runnable_only = runnable_only;
  so.disaggregated = disaggregated;
  so.requests = workload_requests > 0 ? workload_requests : 1000;
  so.steady_checks = workload_requests == 0;
  return so;
}

PlanFile serve_plan_file(PlanFile file, const ServePlanResult& r, std::int64_t requests) {
  if (!r.found()) return file;
  file.plan = r.deployment;
  file.plan.batch = 0;
  file.overrides.mode = "serve";
  file.overrides.rate = fmt::format("{:.6g}", r.deployment_rate);
  file.overrides.concurrency.reset();
  // each replica its share, as planned; none with steady checks (the automatic length)
  if (requests > 0) {
    file.overrides.requests = requests * file.plan.deg.replicas;
  } else {
    file.overrides.requests.reset();
  }
  if (r.best >= 0) {
    const ServeCandidate& best = r.candidates[static_cast<std::size_t>(r.best)];
    file.max_num_seqs = best.max_num_seqs;
    file.max_num_tokens = best.max_num_tokens;
  }
  if (r.disagg_chosen) {  // the decode pool at the top, the prefill pool beside it
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    file.plan = c.plan.decode;
    file.plan.batch = 0;
    file.prefill_pool = c.plan.prefill;
    file.overrides.rate = fmt::format("{:.6g}", c.max_rate);
    if (requests > 0) file.overrides.requests = 2 * requests;
    // each pool's settings as simulated (launch starts each pool with its own)
    file.max_num_seqs = c.plan.decode_settings.max_num_seqs;
    file.max_num_tokens = c.plan.decode_settings.max_num_tokens;
    file.prefill_max_num_seqs = c.plan.prefill_settings.max_num_seqs;
    file.prefill_max_num_tokens = c.plan.prefill_settings.max_num_tokens;
  }
  return file;
}

}  // namespace shardwise
