// Search engines on the phase space (search/phases_engines.hpp): rl, sa, ga as search.cpp
// and search/rl run them on the plan space, over three heads.
#include "search/phases_engines.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "core/rng.hpp"

namespace shardwise {
namespace {

using Act = std::array<int, 3>;

// Counts calls, remembers values (a repeated action is not simulated again but still counts,
// as in the plan search), records improvements.
struct Tracker {
  const PhaseObjective& f;
  std::int64_t budget;
  PhaseRun run;
  std::map<Act, double> seen;
  double value(const Act& a) {
    ++run.calls;
    double v = 0;
    if (auto it = seen.find(a); it != seen.end()) {
      v = it->second;
    } else {
      v = f(a);
      seen[a] = v;
    }
    if (v > run.best) {
      run.best = v;
      run.best_action = a;
      run.improvements.emplace_back(run.calls, v);
    }
    return v;
  }
  [[nodiscard]] bool done() const { return run.calls >= budget; }
};

Act random_act(const Act& sizes, Rng& rng) {
  Act a{};
  for (std::size_t h = 0; h < 3; ++h) a[h] = static_cast<int>(rng.below(static_cast<std::uint64_t>(sizes[h])));
  return a;
}
// One head moved to a uniformly drawn other value.
Act mutate(Act a, const Act& sizes, Rng& rng) {
  std::size_t h = rng.below(3);
  for (int tries = 0; sizes[h] < 2 && tries < 3; ++tries) h = (h + 1) % 3;
  if (sizes[h] < 2) return a;
  int v = static_cast<int>(rng.below(static_cast<std::uint64_t>(sizes[h] - 1)));
  if (v >= a[h]) ++v;
  a[h] = v;
  return a;
}

// rl: three elites (the best distinct states); each step, with probability 0.5 a one-head
// mutation of the best elite (exploit), else a uniform sample among the allowed actions (the
// network-free policy, masked: the two layouts differ);
// every 8 steps one head of the best elite swept over all its values; every new best polished
// by coordinate sweeps until none improves it (improved_settings()).
PhaseRun run_rl(const Act& sizes, Tracker& t, Rng& rng) {
  std::vector<std::pair<double, Act>> elites;
  const auto offer = [&](const Act& a, double v) {
    if (v <= 0) return;
    for (auto& e : elites) {
      if (e.second == a) return;
    }
    elites.emplace_back(v, a);
    std::stable_sort(elites.begin(), elites.end(), [](auto& x, auto& y) { return x.first > y.first; });
    if (elites.size() > 3) elites.resize(3);
  };
  const auto polish = [&](Act a, double v) {
    for (bool improved = true; improved && !t.done();) {
      improved = false;
      for (std::size_t h = 0; h < 3 && !t.done(); ++h) {
        for (int x = 0; x < sizes[h] && !t.done(); ++x) {
          if (x == a[h]) continue;
          Act b = a;
          b[h] = x;
          const double w = t.value(b);
          offer(b, w);
          if (w > v) {
            a = b;
            v = w;
            improved = true;
          }
        }
      }
    }
  };
  for (std::int64_t step = 0; !t.done(); ++step) {
    double before = t.run.best;
    Act a;
    if (!elites.empty() && step % 8 == 7) {  // a head sweep of the best elite
      const std::size_t h = rng.below(3);
      Act best = elites.front().second;
      for (int x = 0; x < sizes[h] && !t.done(); ++x) {
        Act b = best;
        b[h] = x;
        offer(b, t.value(b));
      }
      if (t.run.best > before) polish(t.run.best_action, t.run.best);
      continue;
    }
    if (!elites.empty() && rng.uniform() < 0.5) {
      a = mutate(elites.front().second, sizes, rng);  // exploit: a one-head mutation of the best elite
    } else {
      a = random_act(sizes, rng);  // the network-free policy: uniform among the allowed actions
      if (sizes[1] > 1 && a[1] == a[0]) a[1] = (a[1] + 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(sizes[1] - 1)))) % sizes[1];
    }
    const double v = t.value(a);
    offer(a, v);
    if (v > before) polish(a, v);
  }
  return t.run;
}

// sa: the paper's schedule, T(k) = 100 (1 + cos(pi k / B)) / 2 on the value normalised by the
// first feasible one (the phase objective's units differ from tokens/s per GPU), Metropolis.
PhaseRun run_sa(const Act& sizes, Tracker& t, Rng& rng) {
  Act cur = random_act(sizes, rng);
  double cur_v = t.value(cur), scale = cur_v > 0 ? cur_v : 0.0;
  const double budget = static_cast<double>(t.budget);
  while (!t.done()) {
    const Act next = mutate(cur, sizes, rng);
    const double v = t.value(next);
    if (scale <= 0 && v > 0) scale = v;
    const double temp = 100.0 * 0.5 * (1.0 + std::cos(std::numbers::pi * static_cast<double>(t.run.calls) / budget));
    bool accept = cur_v <= 0;
    if (!accept && v > 0) {
      const double d = (v - cur_v) / scale * 100.0;  // percent of the first feasible value
      accept = v >= cur_v || (temp > 1e-12 && rng.uniform() < std::exp(d / temp));
    }
    if (accept) {
      cur = next;
      cur_v = v;
    }
  }
  return t.run;
}

// ga: population 32, elitism 2, tournaments of 3, per-head uniform crossover, per-head
// mutation with probability 1 / heads.
PhaseRun run_ga(const Act& sizes, Tracker& t, Rng& rng) {
  constexpr std::size_t kPop = 32, kElite = 2;
  std::vector<Act> pop;
  std::vector<double> fit;
  for (std::size_t i = 0; i < kPop && !t.done(); ++i) {
    pop.push_back(random_act(sizes, rng));
    fit.push_back(t.value(pop.back()));
  }
  while (!t.done() && pop.size() == kPop) {
    std::vector<std::size_t> order(kPop);
    for (std::size_t i = 0; i < kPop; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return fit[a] > fit[b]; });
    const auto tournament = [&] {
      std::size_t best = rng.below(kPop);
      for (int k = 1; k < 3; ++k) {
        const std::size_t c = rng.below(kPop);
        if (fit[c] > fit[best]) best = c;
      }
      return best;
    };
    std::vector<Act> next{pop[order[0]], pop[order[1]]};
    std::vector<double> next_fit{fit[order[0]], fit[order[1]]};
    for (std::size_t i = kElite; i < kPop && !t.done(); ++i) {
      const Act& a = pop[tournament()];
      const Act& b = pop[tournament()];
      Act c{};
      for (std::size_t h = 0; h < 3; ++h) {
        c[h] = rng.below(2) ? a[h] : b[h];
        if (sizes[h] > 1 && rng.below(3) == 0) c[h] = static_cast<int>(rng.below(static_cast<std::uint64_t>(sizes[h])));
      }
      next.push_back(c);
      next_fit.push_back(t.value(c));
    }
    pop = std::move(next);
    fit = std::move(next_fit);
  }
  return t.run;
}

}  // namespace

PhasePlan PhaseSpace::decode(const std::array<int, 3>& a, std::int64_t decode_gpu_seqs) const {
  PhasePlan p{layouts[static_cast<std::size_t>(a[0])], layouts[static_cast<std::size_t>(a[1])], 0};
  const std::int64_t x = buffer_x[static_cast<std::size_t>(a[2])];
  p.buffer_seqs = x <= 1 ? 0 : x * decode_gpu_seqs;
  return p;
}

std::int64_t PhaseRun::calls_to(double target) const {
  for (const auto& [at, v] : improvements) {
    if (v >= target) return at;
  }
  return -1;
}

PhaseRun search_phase_space(const std::string& engine, const std::array<int, 3>& sizes, const PhaseObjective& f, std::int64_t budget,
                            std::uint64_t seed) {
  Tracker t{f, budget, {}, {}};
  Rng rng(seed);
  if (engine == "sa") return run_sa(sizes, t, rng);
  if (engine == "ga") return run_ga(sizes, t, rng);
  return run_rl(sizes, t, rng);
}

}  // namespace shardwise
