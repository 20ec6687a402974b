#include "search/rl/agent.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace shardwise::rl {
namespace {

struct Elite {
  Action action{};
  double value = 0;
};

// One record: the action one-hot per head, its value relative to the best, a presence flag.
Mat observation(const std::vector<Elite>& elites, const SearchSpace& space, int T, int A, double best) {
  Mat X = Mat::Zero(T, A);
  const auto sizes = space.sizes();
  for (std::size_t r = 0; r < elites.size() && static_cast<int>(r) < T; ++r) {
    int off = 0;
    for (std::size_t h = 0; h < sizes.size(); ++h) {
      X(static_cast<Eigen::Index>(r), off + elites[r].action[h]) = 1.0f;
      off += sizes[h];
    }
    X(static_cast<Eigen::Index>(r), off) = best > 0 ? static_cast<float>(elites[r].value / best) : 0.0f;
    X(static_cast<Eigen::Index>(r), off + 1) = 1.0f;
  }
  return X;
}

struct Sample {
  Mat obs;
  Action action{};
  double logp = 0, value = 0, reward = 0;
};

double log_prob(const Policy& p, const RowVec& logits, const Action& a) {
  double lp = 0;
  for (std::size_t h = 0; h < a.size(); ++h) {
    lp += std::log(std::max(1e-30, static_cast<double>(p.head_probs(logits, static_cast<int>(h))(a[h]))));
  }
  return lp;
}

// One PPO gradient step on the rollout (mean over the samples): clipped surrogate + value loss.
void ppo_step(Policy& pol, Adam& adam, Params<float>& g, const std::vector<Sample>& batch, const std::vector<double>& adv,
              const AgentSettings& s, double lr) {
  g.each([](float* x, Eigen::Index m) { std::fill(x, x + m, 0.0f); });  // reused buffer, zeroed in place
  const double n = static_cast<double>(batch.size());
  Cache<float> c;
  for (std::size_t j = 0; j < batch.size(); ++j) {
    pol.forward(batch[j].obs, c);
    const double lp = log_prob(pol, c.logits, batch[j].action);
    const double ratio = std::exp(lp - batch[j].logp);
    const double a = adv[j];
    // d/dlogp of -min(ratio a, clip(ratio) a): -ratio a where the unclipped term is the minimum
    const double clipped = std::clamp(ratio, 1.0 - s.clip, 1.0 + s.clip);
    const double dlogp = (ratio * a <= clipped * a) ? -ratio * a / n : 0.0;
    RowVec dl = RowVec::Zero(c.logits.size());
    for (std::size_t h = 0; h < batch[j].action.size(); ++h) {
      const Vec pr = pol.head_probs(c.logits, static_cast<int>(h));
      const int off = pol.head_offset(static_cast<int>(h));
      for (Eigen::Index k = 0; k < pr.size(); ++k) {
        dl(off + k) = static_cast<float>(dlogp * ((k == batch[j].action[h] ? 1.0 : 0.0) - static_cast<double>(pr(k))));
      }
    }
    const double dv = s.vf_coef * 2.0 * (static_cast<double>(c.value) - batch[j].reward) / n;
    pol.backward(c, dl, static_cast<float>(dv), g);
  }
  // global gradient-norm clipping, as Stable-Baselines3 does
  double norm2 = 0;
  g.each([&](float* x, Eigen::Index m) { norm2 += static_cast<double>(Eigen::Map<Eigen::ArrayXf>(x, m).square().sum()); });
  const double norm = std::sqrt(norm2);
  if (norm > s.max_grad_norm) {
    const auto k = static_cast<float>(s.max_grad_norm / norm);
    g.each([&](float* x, Eigen::Index m) { Eigen::Map<Eigen::ArrayXf>(x, m) *= k; });
  }
  adam.step(pol.params(), g, lr);
}

}  // namespace

AgentSettings improved_settings() {
  AgentSettings s;
  s.exploit = 0.5;
  s.sweep_every = 8;
  return s;
}

PolicyDims dims_for(const SearchSpace& space, int elites) {
  PolicyDims d;
  d.records = elites;
  int a = 0;
  for (int k : space.sizes()) {
    d.action_heads.push_back(k);
    a += k;
  }
  d.input = a + 2;
  return d;
}

SearchResult search_rl(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, const AgentSettings& s,
                       const Policy* warm, std::unique_ptr<Policy>* trained, AgentStats* stats) {
  AgentStats local_stats;
  AgentStats& st = stats ? *stats : local_stats;
  Tracker t(ctx, space, opt, s.exploit > 0 ? "rl" : "rl-paper");
  const PolicyDims dims = dims_for(space, s.elites);
  if (warm && warm->dims().action_heads != dims.action_heads) warm = nullptr;  // another space: start cold
  const auto sizes = space.sizes();
  Rng rng(opt.seed);
  std::vector<Elite> elites;
  double best = 0, ref = 0;
  const std::int64_t budget = opt.budget;
  const std::int64_t chunk = std::max<std::int64_t>(1, budget / s.chunks);
  std::unique_ptr<Policy> pol;
  std::unique_ptr<Adam> adam;
  std::int64_t chunk_end = 0;
  int chunk_index = 0;
  std::vector<Sample> rollout;
  Cache<float> c;
  std::unique_ptr<Params<float>> grad;
  const auto reinit = [&]() {
    Rng init = rng.fork(static_cast<std::uint64_t>(1000 + chunk_index));
    pol = std::make_unique<Policy>(dims, init);
    if (warm) *pol = *warm;
    adam = std::make_unique<Adam>(pol->params());
    grad = std::make_unique<Params<float>>(pol->zeros_like());
    chunk_end = budget - t.remaining() + chunk;
    ++chunk_index;
    ++st.reinits;
    rollout.clear();
  };
  reinit();
  std::int64_t steps = 0;
  std::size_t sweep_head = 0;
  const auto admit = [&](const Action& a, double raw) {
    // elite deque: fill, or replace the worst if better; kept best first
    const bool dup = std::any_of(elites.begin(), elites.end(), [&](const Elite& e) { return e.action == a; });
    if (dup) return;
    if (static_cast<int>(elites.size()) < s.elites) {
      elites.push_back({a, raw});
    } else if (raw > elites.back().value) {
      elites.back() = {a, raw};
    }
    std::stable_sort(elites.begin(), elites.end(), [](const Elite& x, const Elite& y) { return x.value > y.value; });
  };
  while (!t.exhausted()) {
    // the `rl` variant's coordinate sweep: every value of one head around the best elite, in one batch
    if (s.sweep_every > 0 && !elites.empty() && steps > 0 && steps % s.sweep_every == 0) {
      for (int tries = 0; tries < kNumHeads && sizes[sweep_head % sizes.size()] < 2; ++tries) ++sweep_head;
      const std::size_t h = sweep_head++ % sizes.size();
      std::vector<Action> batch;
      for (int v = 0; v < sizes[h]; ++v) {
        if (v == elites.front().action[h]) continue;
        Action a = elites.front().action;
        a[h] = static_cast<std::uint16_t>(v);
        batch.push_back(a);
      }
      const double ts = now_seconds();
      const std::vector<double> vals = t.evaluate(batch);
      st.simulator_s += now_seconds() - ts;
      for (std::size_t i = 0; i < vals.size(); ++i) {
        if (vals[i] <= 0) continue;
        if (ref <= 0) ref = vals[i];
        best = std::max(best, vals[i]);
        admit(batch[i], vals[i]);
      }
      if (t.exhausted()) break;
    }
    ++steps;
    const std::int64_t used = budget - t.remaining();
    if (used >= chunk_end) reinit();
    const double t0 = now_seconds();
    const Mat obs = observation(elites, space, s.elites, dims.input, best);
    pol->forward(obs, c);
    // early exit: every head confident
    bool confident = true;
    for (std::size_t h = 0; h < sizes.size() && confident; ++h) {
      confident = static_cast<double>(pol->head_probs(c.logits, static_cast<int>(h)).maxCoeff()) >= s.tau;
    }
    if (confident) {
      ++st.early_exits;
      reinit();
      pol->forward(obs, c);
    }
    Action a{};
    const bool exploit = s.exploit > 0 && !elites.empty() && rng.uniform() < s.exploit;
    if (exploit) {
      a = elites.front().action;  // the best elite, one head moved
      std::size_t h = rng.below(sizes.size());
      for (int tries = 0; tries < 32 && sizes[h] < 2; ++tries) h = rng.below(sizes.size());
      if (sizes[h] > 1) {
        const auto v = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(sizes[h] - 1)));
        a[h] = v >= a[h] ? static_cast<std::uint16_t>(v + 1) : v;
      }
    } else {
      for (std::size_t h = 0; h < sizes.size(); ++h) {
        const Vec pr = pol->head_probs(c.logits, static_cast<int>(h));
        double u = rng.uniform(), acc = 0;
        int k = 0;
        for (; k + 1 < pr.size(); ++k) {
          acc += static_cast<double>(pr(k));
          if (u < acc) break;
        }
        a[h] = static_cast<std::uint16_t>(k);
      }
    }
    st.policy_s += now_seconds() - t0;
    const double t1 = now_seconds();
    const double raw = t.evaluate_one(a);
    st.simulator_s += now_seconds() - t1;
    if (raw < 0) break;  // budget or time spent
    const double t2 = now_seconds();
    double reward = s.invalid_reward;
    if (raw > 0) {
      if (ref <= 0) ref = raw;
      reward = s.alpha * raw / ref + s.beta * (raw - best) / ref;
      best = std::max(best, raw);
      admit(a, raw);
    }
    rollout.push_back({obs, a, log_prob(*pol, c.logits, a), static_cast<double>(c.value), reward});
    if (static_cast<int>(rollout.size()) == s.rollout) {
      // advantages normalised over the rollout (Stable-Baselines3's default)
      std::vector<double> adv;
      double mean = 0;
      for (const auto& r : rollout) mean += (r.reward - r.value) / static_cast<double>(rollout.size());
      double var = 0;
      for (const auto& r : rollout) var += (r.reward - r.value - mean) * (r.reward - r.value - mean) / static_cast<double>(rollout.size());
      for (const auto& r : rollout) adv.push_back((r.reward - r.value - mean) / (std::sqrt(var) + 1e-8));
      const double progress = static_cast<double>(budget - t.remaining()) / static_cast<double>(budget);
      const double lr = s.lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      for (int e = 0; e < s.epochs; ++e) ppo_step(*pol, *adam, *grad, rollout, adv, s, lr);
      rollout.clear();
    }
    st.policy_s += now_seconds() - t2;
  }
  if (trained) *trained = std::move(pol);
  SearchResult r = t.finish();
  r.policy_s = st.policy_s;
  r.simulator_s = st.simulator_s;
  return r;
}

}  // namespace shardwise::rl
