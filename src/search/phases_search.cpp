// plan --phases: layouts, their rates, the pairs and the buffer ladder (docs/phases.md, "Search").
#include "search/phases_search.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "model/derived.hpp"
#include "serve/phases.hpp"

namespace shardwise {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The buffer sizes tried for a pair: the decode GPUs' own batch (no host tier), then
// doublings of it up to what the host buffer holds, and that limit itself.
std::vector<std::int64_t> buffer_ladder(std::int64_t gpu_seqs, std::int64_t host_max) {
  std::vector<std::int64_t> out{0};
  for (std::int64_t b = 2 * std::max<std::int64_t>(1, gpu_seqs); b < host_max && b > 0; b *= 2) out.push_back(b);
  if (host_max > gpu_seqs) out.push_back(host_max);
  return out;
}

}  // namespace

std::vector<LayoutRates> layout_rates(const SimContext& ctx, const SearchSpace& space) {
  std::vector<LayoutRates> out;
  for (const std::int32_t tp : space.tp) {
    for (const std::int32_t pp : space.pp) {
      for (const std::int32_t ep : space.ep) {
        for (const std::int32_t a : space.attn_dp) {
          if (!ctx.model.is_moe() && ep != 1) continue;
          Plan p;
          p.deg.tp = tp;
          p.deg.pp = pp;
          p.deg.ep = ep;
          p.deg.attn_dp = a;
          p.batch = 0;
          p.redundant_experts = ep > 1 ? space.redundant_experts : 0;
          const std::int64_t inst = p.deg.instance_gpus();
          if (inst > ctx.cluster.num_gpus) continue;
          p.deg.replicas = static_cast<std::int32_t>(ctx.cluster.num_gpus / inst);
          std::vector<Sharding> shardings{megatron_sharding()};
          if (a > 1) shardings.push_back(dp_mlp_sharding());
          for (const Sharding& s : shardings) {
            p.sharding = canonical_sharding(s, ctx.graph);
            Plan probe = p;
            probe.batch = a;  // the batch is the phases' own: the rules of the layout (a group's worth)
            if (validate_plan(probe, ctx.model, ctx.cluster)) continue;
            if (std::any_of(out.begin(), out.end(), [&](const LayoutRates& r) { return r.plan == p; })) continue;
            LayoutRates r;
            r.plan = p;
            r.prefill_seq_s = prefill_rate(ctx, p);
            r.decode = decode_rate(ctx, p);
            r.static_metrics = evaluate(ctx, p, nullptr, false);
            out.push_back(std::move(r));
          }
        }
      }
    }
  }
  return out;
}

PhaseSearchResult search_phases(const SimContext& ctx, const SearchSpace& space, const PhaseSearchOptions& opt) {
  const double t0 = now_s();
  PhaseSearchResult res;
  const std::vector<LayoutRates> all = layout_rates(ctx, space);
  res.layouts = static_cast<std::int64_t>(all.size());
  res.evaluations += 3 * res.layouts;
  for (const LayoutRates& r : all) {
    if (r.static_metrics.feasible() && (!res.best_static || r.static_metrics.objective > res.best_static->static_metrics.objective)) {
      res.best_static = r;
    }
  }
  // the pairs: layouts of one GPU count, the top-k of each phase
  std::map<std::int64_t, std::vector<const LayoutRates*>> by_gpus;
  for (const LayoutRates& r : all) by_gpus[r.plan.deg.total_gpus()].push_back(&r);
  const double kv_seq = kv_cache_bytes(ctx.model, ctx.formats.kv).for_context(ctx.workload.isl).value();
  for (auto& [gpus, group] : by_gpus) {
    std::vector<const LayoutRates*> pre = group, dec = group;
    std::erase_if(pre, [](const LayoutRates* r) { return r->prefill_seq_s <= 0; });
    std::erase_if(dec, [](const LayoutRates* r) { return r->decode.batch <= 0; });
    std::sort(pre.begin(), pre.end(), [](auto* x, auto* y) { return x->prefill_seq_s > y->prefill_seq_s; });
    std::sort(dec.begin(), dec.end(), [](auto* x, auto* y) { return x->decode.tok_s > y->decode.tok_s; });
    if (opt.top_k > 0) {
      if (pre.size() > static_cast<std::size_t>(opt.top_k)) pre.resize(static_cast<std::size_t>(opt.top_k));
      if (dec.size() > static_cast<std::size_t>(opt.top_k)) dec.resize(static_cast<std::size_t>(opt.top_k));
    }
    const std::int64_t host_max = kv_seq > 0 ? static_cast<std::int64_t>(opt.cost.host_bytes_per_gpu * static_cast<double>(gpus) / kv_seq) : 0;
    for (const LayoutRates* p : pre) {
      for (const LayoutRates* d : dec) {
        if (same_layout(p->plan, d->plan)) continue;
        ++res.pairs;
        for (const std::int64_t buf : buffer_ladder(d->decode.batch * d->plan.deg.replicas, host_max)) {
          PhasePlan pp{p->plan, d->plan, buf};
          pp.decode.batch = 0;
          const PhaseCost c = evaluate_phases(ctx, pp, opt.cost, false);
          ++res.evaluations;
          if (!c.metrics.feasible()) continue;
          if (!res.found || c.metrics.objective > res.cost.metrics.objective) {
            res.found = true;
            res.best = pp;
            res.cost = c;
          }
        }
      }
    }
  }
  if (res.found) {
    res.best.decode.batch = res.cost.decode_batch;  // what the plan decodes at, for the plan file
    res.best.buffer_seqs = res.cost.buffer_seqs;
    res.cost = evaluate_phases(ctx, res.best, opt.cost, true);
  } else {
    res.why_none = all.empty() ? "no layout of the space is valid on these GPUs" : "no pair of distinct layouts fits and meets the SLOs";
  }
  // the disaggregated split: per-instance rates of each shape, pools of whole instances
  const std::int64_t G = ctx.cluster.num_gpus;
  std::vector<double> pre_best(static_cast<std::size_t>(G + 1), 0.0), dec_best(static_cast<std::size_t>(G + 1), 0.0);
  std::vector<const LayoutRates*> pre_arg(static_cast<std::size_t>(G + 1), nullptr), dec_arg(static_cast<std::size_t>(G + 1), nullptr);
  for (const LayoutRates& r : all) {
    const std::int64_t inst = r.plan.deg.instance_gpus();
    const double per_pre = r.prefill_seq_s / r.plan.deg.replicas, per_dec = r.decode.tok_s / r.plan.deg.replicas;
    for (std::int64_t g = inst; g <= G; ++g) {
      const double n = static_cast<double>(g / inst);
      if (per_pre * n > pre_best[static_cast<std::size_t>(g)]) {
        pre_best[static_cast<std::size_t>(g)] = per_pre * n;
        pre_arg[static_cast<std::size_t>(g)] = &r;
      }
      if (per_dec * n > dec_best[static_cast<std::size_t>(g)]) {
        dec_best[static_cast<std::size_t>(g)] = per_dec * n;
        dec_arg[static_cast<std::size_t>(g)] = &r;
      }
    }
  }
  for (std::int64_t gp = 1; gp < G; ++gp) {
    const auto* p = pre_arg[static_cast<std::size_t>(gp)];
    const auto* d = dec_arg[static_cast<std::size_t>(G - gp)];
    if (!p || !d) continue;
    const double tok = std::min(pre_best[static_cast<std::size_t>(gp)] * static_cast<double>(ctx.workload.osl), dec_best[static_cast<std::size_t>(G - gp)]);
    if (!res.disagg || tok / static_cast<double>(G) > res.disagg->output_tok_s_per_gpu) {
      DisaggSplit s;
      s.prefill = p->plan;
      s.prefill.deg.replicas = static_cast<std::int32_t>(gp / p->plan.deg.instance_gpus());
      s.decode = d->plan;
      s.decode.deg.replicas = static_cast<std::int32_t>((G - gp) / d->plan.deg.instance_gpus());
      s.prefill_gpus = s.prefill.deg.total_gpus();
      s.decode_gpus = s.decode.deg.total_gpus();
      s.output_tok_s_per_gpu = tok / static_cast<double>(G);
      res.disagg = s;
    }
  }
  res.seconds = now_s() - t0;
  return res;
}

PhaseServeProblem phase_serve_problem(const SimContext& ctx, const SearchSpace& space, const PhaseOptions& cost) {
  const SimContext offline = offline_phases_context(ctx);
  PhaseServeProblem pr{{}, {}, ctx, cost};
  for (const LayoutRates& r : layout_rates(offline, space)) {
    if (r.plan.deg.total_gpus() != ctx.cluster.num_gpus || (r.decode.batch <= 0 && r.prefill_seq_s <= 0)) continue;
    pr.space.layouts.push_back(r.plan);
    pr.gpu_seqs.push_back(r.decode.batch * r.plan.deg.replicas);
  }
  pr.queued.workload.mode = Mode::kServe;
  pr.queued.workload.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
  pr.queued.workload.ttft_ms.reset();
  pr.queued.workload.ttft_pct.clear();
  if (pr.queued.workload.serve.requests == 0) pr.queued.workload.serve.requests = 400;
  return pr;
}

double PhaseServeProblem::value(const std::array<int, 3>& a) const {
  if (a[0] == a[1]) return 0.0;
  ServeOptions so;
  so.measure_capacity = false;
  const ServeResult r = simulate_phases(queued, plan(a), cost, so);
  return r.feasible ? r.output_tok_s_per_gpu : 0.0;
}

PhaseServeResult search_phases_serving(const SimContext& ctx, const SearchSpace& space, const PhaseSearchOptions& opt, const std::string& engine,
                                       std::int64_t budget, std::uint64_t seed) {
  PhaseServeResult res;
  const PhaseServeProblem pr = phase_serve_problem(ctx, space, opt.cost);
  if (pr.space.layouts.size() < 2) {
    res.why_none = fmt::format("fewer than two layouts use all {} GPUs", ctx.cluster.num_gpus);
    return res;
  }
  const auto sizes = pr.space.sizes();
  res.space_size = static_cast<std::int64_t>(sizes[0]) * sizes[1] * sizes[2];
  const PhaseObjective f = [&](const std::array<int, 3>& a) {
    ++res.simulations;
    return pr.value(a);
  };
  res.run = search_phase_space(engine, sizes, f, std::min(budget, res.space_size), seed);
  // the static plans of the same layouts, under the same objective, each at its best cap on
  // running sequences per attention group (a ladder up to the engine's: a cap is how a static
  // deployment meets a TPOT SLO, as plan --mode serve tunes it)
  ServeOptions so;
  so.measure_capacity = false;
  for (const Plan& l : pr.space.layouts) {
    for (std::int64_t cap = 8; cap <= std::max<std::int64_t>(8, ctx.engine.max_num_seqs); cap *= 2) {
      SimContext c = pr.queued;
      c.engine.max_num_seqs = std::min(cap, ctx.engine.max_num_seqs);
      const ServeResult sr = simulate_serving(c, l, so);
      ++res.simulations;
      const double v = sr.feasible ? sr.output_tok_s_per_gpu : 0.0;
      if (v > res.static_objective) {
        res.static_objective = v;
        res.static_plan = l;
        res.static_plan->batch = c.engine.max_num_seqs * scheduler_lanes(c.engine, l.deg);  // the cap, as a serving plan's batch
      }
    }
  }
  if (res.run.best <= 0) {
    res.why_none = "no phase plan of the space meets the TPOT SLO and fits";
    return res;
  }
  res.found = true;
  res.objective = res.run.best;
  res.best = pr.plan(res.run.best_action);
  const Arrivals::Kind k = ctx.workload.serve.arrivals.kind;
  const bool arrivals = k == Arrivals::Kind::kPoisson || k == Arrivals::Kind::kTrace;
  res.serve = simulate_phases(arrivals ? ctx : pr.queued, res.best, opt.cost);
  return res;
}

}  // namespace shardwise
