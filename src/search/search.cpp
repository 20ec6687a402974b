#include "search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "search/rl/agent.hpp"

namespace shardwise {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Tracker::Tracker(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, std::string engine)
    : ctx_(ctx), space_(space), opt_(opt), pool_(std::max(1, opt.threads)), start_(now_seconds()) {
  result_.engine = std::move(engine);
}

bool Tracker::exhausted() const {
  if (result_.calls >= opt_.budget) return true;
  return (opt_.time_limit_s > 0 && now_seconds() - start_ >= opt_.time_limit_s) || should_stop(opt_.watch);
}

std::vector<double> Tracker::evaluate(const std::vector<Action>& actions) {
  if ((opt_.time_limit_s > 0 && now_seconds() - start_ >= opt_.time_limit_s) || should_stop(opt_.watch)) {
    result_.stopped_by_time = true;
    return {};
  }
  const std::size_t n = static_cast<std::size_t>(std::clamp<std::int64_t>(remaining(), 0, static_cast<std::int64_t>(actions.size())));
  plans_.resize(n);
  metrics_.resize(n);
  for (std::size_t i = 0; i < n; ++i) plans_[i] = space_.decode(actions[i]);
  pool_.parallel_for(n, [&](std::size_t i) {
    metrics_[i] = opt_.objective ? opt_.objective(plans_[i]) : ::shardwise::evaluate(ctx_, plans_[i], nullptr, false);
  });
  values_.assign(n, 0.0);
  valid_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Metrics& m = metrics_[i];
    ++result_.calls;
    valid_[i] = m.feasible();
    if (!m.feasible()) ++result_.invalid_calls;
    values_[i] = m.objective;
    if (m.feasible() && m.objective > result_.best_value) {
      result_.best_value = m.objective;
      result_.best = plans_[i];
      result_.best_call = result_.calls;
      result_.found = true;
    }
    const bool improved = !result_.history.empty() ? result_.best_value > result_.history.back().best : result_.best_value > 0;
    if (opt_.full_history || improved) {
      result_.history.push_back({result_.calls, m.objective, result_.best_value});
    } else {
      last_ = {result_.calls, m.objective, result_.best_value};
    }
    if (!m.feasible() && !result_.found) {
      if (m.infeasible == Infeasible::kInvalidPlan) {
        if (result_.invalid_example.empty()) result_.invalid_example = m.reason;
      } else {
        // judged at the plan's smallest batch (unless the workload fixes it): a plan over
        // memory at a large ladder batch is not close if a small one breaks the SLO anyway
        Plan q = plans_[i];
        if (!ctx_.workload.batch) q.batch = 0;
        const Metrics mq = q.batch == plans_[i].batch ? m : ::shardwise::evaluate(ctx_, q, nullptr, false);
        const double x = infeasibility_excess(mq, ctx_.workload);
        if (!result_.closest || x < result_.closest_excess) {
          result_.closest = q;
          result_.closest_excess = x;
        }
      }
    }
    if (opt_.record_points && result_.points.size() < kMaxRecordedPoints) {
      if (auto pt = eval_point(ctx_, plans_[i], m)) result_.points.push_back(*pt);
    }
  }
  if (opt_.progress) {
    const double t = now_seconds();
    if (t - last_progress_ >= 0.2) {
      last_progress_ = t;
      opt_.progress(result_.calls, result_.best_value, t - start_);
    }
  }
  return values_;
}

std::optional<EvalPoint> eval_point(const SimContext& ctx, const Plan& plan, const Metrics& m) {
  const bool slo = m.infeasible == Infeasible::kTpotSlo || m.infeasible == Infeasible::kTtftSlo;
  if (!m.feasible() && !slo) return std::nullopt;
  EvalPoint p;
  const bool prefill = ctx.workload.mode == Mode::kPrefill;
  p.latency_s = prefill ? m.ttft_s : m.tpot_s;
  p.throughput = prefill ? m.input_tok_s_per_gpu : m.output_tok_s_per_gpu;
  p.meets_slo = m.feasible();
  p.deg = plan.deg;
  p.batch = m.batch;
  p.megatron_sharding = plan.sharding == megatron_sharding();
  return p;
}

double Tracker::evaluate_one(const Action& a) {
  const auto v = evaluate(std::vector<Action>{a});
  return v.empty() ? -1.0 : v[0];
}

SearchResult Tracker::finish() {
  result_.wall_s = now_seconds() - start_;
  // the last call closes the convergence curve
  if (last_.call > 0 && (result_.history.empty() || result_.history.back().call < last_.call)) result_.history.push_back(last_);
  if (result_.found) result_.closest.reset();
  if (result_.closest) result_.closest->sharding = canonical_sharding(result_.closest->sharding, ctx_.graph);
  // slots without an op in this model reported at Megatron's choice (the same plan to the simulator)
  if (result_.found) result_.best.sharding = canonical_sharding(result_.best.sharding, ctx_.graph);
  if (opt_.time_limit_s > 0 && result_.wall_s >= opt_.time_limit_s && result_.calls < opt_.budget) result_.stopped_by_time = true;
  if (opt_.watch && opt_.watch->stopped() != StopReason::kNone && result_.calls < opt_.budget) result_.stopped_by_time = true;
  if (opt_.progress) opt_.progress(result_.calls, result_.best_value, result_.wall_s);
  return result_;
}

namespace {
// The number of combinations of the degree heads' values (the exhaustive engines' space).
std::int64_t degree_combinations(const std::array<int, kNumHeads>& sizes) {
  std::int64_t total = 1;
  for (int h = 0; h < kNumDegreeHeads; ++h) total *= sizes[static_cast<std::size_t>(h)];
  return total;
}
// The degree heads of `a` set to combination i (mixed radix, the last head fastest).
void set_degree_heads(Action& a, std::int64_t i, const std::array<int, kNumHeads>& sizes) {
  for (int h = kNumDegreeHeads - 1; h >= 0; --h) {
    a[static_cast<std::size_t>(h)] = static_cast<std::uint16_t>(i % sizes[static_cast<std::size_t>(h)]);
    i /= sizes[static_cast<std::size_t>(h)];
  }
}

// One head changed to a different value (heads with one value are skipped).
Action neighbour(const Action& a, const std::array<int, kNumHeads>& sizes, Rng& rng) {
  Action b = a;
  for (int tries = 0; tries < 64; ++tries) {
    const auto h = static_cast<std::size_t>(rng.below(kNumHeads));
    if (sizes[h] < 2) continue;
    const auto v = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(sizes[h] - 1)));
    b[h] = v >= a[h] ? static_cast<std::uint16_t>(v + 1) : v;
    return b;
  }
  return b;
}
constexpr std::size_t kBatch = 256;
}  // namespace

// Megatron's per-op sharding held fixed; every degree and batch tried (exhaustive
// over its own space, whatever the budget: the paper's "tractable" baseline).
SearchResult search_megatron(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  const auto sizes = space.sizes();
  const std::int64_t total = degree_combinations(sizes);
  opt.budget = std::max(opt.budget, total);
  Tracker t(ctx, space, opt, "megatron");
  std::vector<Action> batch;
  Action a{};
  for (std::int64_t i = 0; i < total && !t.exhausted(); ++i) {
    set_degree_heads(a, i, sizes);
    batch.push_back(a);
    if (batch.size() == 4 * kBatch || i + 1 == total) {
      t.evaluate(batch);
      batch.clear();
    }
  }
  return t.finish();
}

SearchResult search_for_engine(const SimContext& ctx, const SearchSpace& space, SearchOptions opt, ServeEngine engine) {
  const auto sizes = space.sizes();
  const std::int64_t total = degree_combinations(sizes);
  opt.budget = std::max(opt.budget, 2 * total);
  Tracker t(ctx, space, opt, std::string("engine:") + to_string(engine));
  std::vector<Action> batch;
  Action a{};
  for (std::int64_t i = 0; i < total && !t.exhausted(); ++i) {
    set_degree_heads(a, i, sizes);
    Plan p = space.decode(a);
    if (!engine_limits(engine, ctx, p).empty()) continue;
    for (const Sharding& sh : engine_shardings(engine, ctx, p.deg)) {
      p.sharding = sh;
      batch.push_back(space.encode(p));
    }
    if (batch.size() >= 4 * kBatch) {
      t.evaluate(batch);
      batch.clear();
    }
  }
  if (!batch.empty() && !t.exhausted()) t.evaluate(batch);
  return t.finish();
}

bool refine_batch(const SimContext& ctx, SearchResult& r) {
  if (!r.found || r.engine == "megatron" || r.engine == "exact") return false;
  Plan q = r.best;
  q.batch = 0;  // max: the largest that fits memory and the SLOs
  const Metrics m = evaluate(ctx, q, nullptr, false);
  if (!m.feasible() || !(m.objective > r.best_value * (1.0 + 1e-12))) return false;
  r.batch_note = fmt::format("batch {} -> {}, its largest feasible batch ({:.1f} -> {:.1f} tokens/s per GPU)", r.best.batch, m.batch, r.best_value,
                             m.objective);
  q.batch = m.batch;
  r.best = q;
  r.best_value = m.objective;
  return true;
}

bool refine_two_batch_overlap(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, SearchResult& r,
                              std::optional<ServeEngine> engine) {
  if (!r.found || r.best.two_batch_overlap || !ctx.model.is_moe()) return false;
  const auto one_stage = std::find(space.pp.begin(), space.pp.end(), 1);
  if (one_stage == space.pp.end()) return false;
  Action a = space.encode(r.best);
  a[static_cast<std::size_t>(Head::kPp)] = static_cast<std::uint16_t>(one_stage - space.pp.begin());
  // the overlap's subspace: one stage, attention DP and EP; each degree tuple under the
  // engine's shardings (without an engine: the search's sharding, Megatron's, and Megatron's
  // with the dense MLPs data-parallel, as the engines run attention DP), every batch
  std::optional<Plan> best;
  Metrics best_m;
  for (std::size_t i = 0; i < space.tp.size(); ++i) {
    for (std::size_t j = 0; j < space.attn_dp.size(); ++j) {
      for (std::size_t k = 0; k < space.ep.size(); ++k) {
        if (space.attn_dp[j] < 2 || space.ep[k] < 2) continue;
        a[static_cast<std::size_t>(Head::kTp)] = static_cast<std::uint16_t>(i);
        a[static_cast<std::size_t>(Head::kAttnDp)] = static_cast<std::uint16_t>(j);
        a[static_cast<std::size_t>(Head::kEp)] = static_cast<std::uint16_t>(k);
        Plan q = space.decode(a);
        q.two_batch_overlap = true;
        if (validate_plan(q, ctx.model, ctx.cluster)) continue;
        if (engine && !engine_limits(*engine, ctx, q).empty()) continue;
        const std::vector<Sharding> shardings = engine ? engine_shardings(*engine, ctx, q.deg)
                                                       : std::vector<Sharding>{r.best.sharding, megatron_sharding(), dp_mlp_sharding()};
        for (const Sharding& sh : shardings) {
          q.sharding = sh;
          if (validate_plan(q, ctx.model, ctx.cluster)) continue;
          // the ladder's batches and, without another objective, the largest feasible one (as
          // refine_batch gives the search's winner: the comparison stays like for like)
          std::vector<std::int64_t> batches;
          // (one over a named engine's running-sequence cap is an invalid plan: evaluate skips
          // it); a batch the workload fixes is the instance's, as SearchSpace::decode reads it
          if (ctx.workload.batch) {
            batches.push_back(*ctx.workload.batch);
          } else {
            for (const std::int64_t per_group : space.batch) batches.push_back(per_group * q.deg.attn_dp);
          }
          if (!opt.objective && !ctx.workload.batch) batches.push_back(0);  // max, unless the workload fixes the batch
          for (const std::int64_t b : batches) {
            q.batch = b;
            const Metrics m = evaluate(ctx, q, nullptr, false);
            if (m.feasible() && (!best || m.objective > best_m.objective)) {
              best = q;
              best->batch = m.batch;
              best_m = m;
            }
          }
        }
      }
    }
  }
  if (!best) return false;
  // the search's own objective decides (the closed form above only screens when it is another)
  const double value = opt.objective ? opt.objective(*best).objective : best_m.objective;
  if (!(value > r.best_value)) return false;
  const Degrees& d = best->deg;
  r.overlap_note = fmt::format("two-batch overlap at tp {} x attn_dp {} (ep {}), batch {}: {:.1f} against the search's {:.1f} ({:+.1f}%)",
                               d.tp, d.attn_dp, d.ep, best->batch, value, r.best_value, (value / r.best_value - 1.0) * 100.0);
  r.value_before_overlap = r.best_value;
  r.best = *best;
  r.best_value = value;
  return true;
}

// Random walk: from a random start, each step moves one head to another value,
// unconditionally. The walk does not depend on the values, so it is drawn ahead
// and evaluated in parallel batches.
SearchResult search_random_walk(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  Tracker t(ctx, space, opt, "rw");
  const auto sizes = space.sizes();
  Rng rng(opt.seed);
  Action cur = random_action(sizes, rng);
  std::vector<Action> batch;
  while (!t.exhausted()) {
    batch.clear();
    for (std::size_t i = 0; i < kBatch; ++i) {
      batch.push_back(cur);
      cur = neighbour(cur, sizes, rng);
    }
    if (t.evaluate(batch).empty()) break;
  }
  return t.finish();
}

// Simulated annealing as in the paper: initial temperature 100, cosine schedule
// T(k) = 100 x (1 + cos(pi k / B)) / 2 over the budget B; Metropolis acceptance
// on the objective (tokens/s per GPU); an infeasible state is never entered from
// a feasible one.
SearchResult search_annealing(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  Tracker t(ctx, space, opt, "sa");
  const auto sizes = space.sizes();
  Rng rng(opt.seed);
  Action cur = random_action(sizes, rng);
  double cur_v = t.evaluate_one(cur);
  bool cur_ok = cur_v > 0;
  const double budget = static_cast<double>(opt.budget);
  while (!t.exhausted()) {
    const Action next = neighbour(cur, sizes, rng);
    const double v = t.evaluate_one(next);
    if (v < 0) break;
    const bool ok = v > 0;
    const double k = static_cast<double>(budget - static_cast<double>(t.remaining()));
    const double temp = 100.0 * 0.5 * (1.0 + std::cos(std::numbers::pi * k / budget));
    bool accept = false;
    if (!cur_ok) {
      accept = true;  // anything is as good as an infeasible state
    } else if (ok) {
      accept = v >= cur_v || (temp > 1e-12 && rng.uniform() < std::exp((v - cur_v) / temp));
    }
    if (accept) {
      cur = next;
      cur_v = v;
      cur_ok = ok;
    }
  }
  return t.finish();
}

// Genetic algorithm: population 32, elitism 2, tournament selection of 3,
// per-head uniform crossover, per-head mutation with probability 1 / heads.
SearchResult search_genetic(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  Tracker t(ctx, space, opt, "ga");
  const auto sizes = space.sizes();
  Rng rng(opt.seed);
  constexpr std::size_t kPop = 32, kElite = 2;
  std::vector<Action> pop;
  for (std::size_t i = 0; i < kPop; ++i) pop.push_back(random_action(sizes, rng));
  std::vector<double> fit = t.evaluate(pop);
  pop.resize(fit.size());
  while (!t.exhausted() && pop.size() == kPop) {
    std::vector<std::size_t> order(kPop);
    for (std::size_t i = 0; i < kPop; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return fit[a] > fit[b]; });
    const auto tournament = [&]() {
      std::size_t best = rng.below(kPop);
      for (int k = 1; k < 3; ++k) {
        const std::size_t c = rng.below(kPop);
        if (fit[c] > fit[best]) best = c;
      }
      return best;
    };
    std::vector<Action> children;
    for (std::size_t i = kElite; i < kPop; ++i) {
      const Action& a = pop[tournament()];
      const Action& b = pop[tournament()];
      Action c{};
      for (std::size_t h = 0; h < c.size(); ++h) {
        c[h] = rng.below(2) ? a[h] : b[h];
        if (sizes[h] > 1 && rng.below(kNumHeads) == 0) c[h] = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(sizes[h])));
      }
      children.push_back(c);
    }
    const std::vector<double> cf = t.evaluate(children);
    std::vector<Action> next_pop;
    std::vector<double> next_fit;
    for (std::size_t i = 0; i < kElite; ++i) {
      next_pop.push_back(pop[order[i]]);
      next_fit.push_back(fit[order[i]]);
    }
    for (std::size_t i = 0; i < cf.size(); ++i) {
      next_pop.push_back(children[i]);
      next_fit.push_back(cf[i]);
    }
    pop = std::move(next_pop);
    fit = std::move(next_fit);
  }
  return t.finish();
}

namespace {
SearchResult search_rl_paper(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  return rl::search_rl(ctx, space, opt, rl::AgentSettings{});
}
SearchResult search_rl_improved(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  return rl::search_rl(ctx, space, opt, rl::improved_settings());
}
}  // namespace

Engine find_engine(const std::string& name) {
  if (name == "rl-paper") return search_rl_paper;
  if (name == "rl") return search_rl_improved;
  if (name == "megatron") return search_megatron;
  if (name == "rw") return search_random_walk;
  if (name == "sa") return search_annealing;
  if (name == "ga") return search_genetic;
  if (name == "exact" || name == "auto") return search_exact;  // auto: the closed form's certified optimum
  return nullptr;
}

const char* engine_names() { return "auto, exact, megatron, rw, sa, ga, rl, rl-paper"; }

}  // namespace shardwise
