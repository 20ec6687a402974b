#include "search/rl/agent.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

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
  std::vector<std::uint8_t> mask;  // allowed values, flattened over heads (empty: all allowed)
};

// A head's probabilities, renormalised over the allowed values when masked.
Vec masked_probs(const Policy& p, const RowVec& logits, int h, const std::vector<std::uint8_t>& mask) {
  Vec pr = p.head_probs(logits, h);
  if (mask.empty()) return pr;
  const int off = p.head_offset(h);
  double sum = 0;
  for (Eigen::Index k = 0; k < pr.size(); ++k) {
    if (!mask[static_cast<std::size_t>(off + k)]) pr(k) = 0.0f;
    sum += static_cast<double>(pr(k));
  }
  if (sum > 0) pr /= static_cast<float>(sum);
  return pr;
}

double log_prob(const Policy& p, const RowVec& logits, const Action& a, const std::vector<std::uint8_t>& mask = {}) {
  double lp = 0;
  for (std::size_t h = 0; h < a.size(); ++h) {
    lp += std::log(std::max(1e-30, static_cast<double>(masked_probs(p, logits, static_cast<int>(h), mask)(a[h]))));
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
    const double lp = log_prob(pol, c.logits, batch[j].action, batch[j].mask);
    const double ratio = std::exp(lp - batch[j].logp);
    const double a = adv[j];
    // d/dlogp of -min(ratio a, clip(ratio) a): -ratio a where the unclipped term is the minimum
    const double clipped = std::clamp(ratio, 1.0 - s.clip, 1.0 + s.clip);
    const double dlogp = (ratio * a <= clipped * a) ? -ratio * a / n : 0.0;
    RowVec dl = RowVec::Zero(c.logits.size());
    for (std::size_t h = 0; h < batch[j].action.size(); ++h) {
      // d log p(a_h) / d logits over the allowed values (masked ones get no gradient)
      const Vec pr = masked_probs(pol, c.logits, static_cast<int>(h), batch[j].mask);
      const int off = pol.head_offset(static_cast<int>(h));
      for (Eigen::Index k = 0; k < pr.size(); ++k) {
        if (!batch[j].mask.empty() && !batch[j].mask[static_cast<std::size_t>(off + k)]) continue;
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

ActionRules::ActionRules(const SimContext& ctx, const SearchSpace& space) : ctx_(ctx), space_(space) {
  auto index_of_one = [](const auto& v) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == 1) return static_cast<std::uint16_t>(i);
    }
    return std::uint16_t{0};
  };
  free_[static_cast<std::size_t>(Head::kTp)] = index_of_one(space.tp);
  free_[static_cast<std::size_t>(Head::kPp)] = index_of_one(space.pp);
  free_[static_cast<std::size_t>(Head::kEp)] = index_of_one(space.ep);
  free_[static_cast<std::size_t>(Head::kAttnDp)] = index_of_one(space.attn_dp);
  for (int sl = 0; sl < kNumSlots; ++sl) {
    int c = find_choice(sl, "none");
    if (c < 0) c = find_choice(sl, "tokens");
    free_[static_cast<std::size_t>(kNumDegreeHeads + sl)] = static_cast<std::uint16_t>(std::max(c, 0));
  }
}

bool ActionRules::valid(const Action& a) const { return !validate_plan(space_.decode(a), ctx_.model, ctx_.cluster).has_value(); }

void ActionRules::allowed(Action a, std::size_t i, const std::array<int, kNumHeads>& sizes, std::vector<std::uint8_t>& out, int off) const {
  for (std::size_t j = i + 1; j < kOrder.size(); ++j) a[static_cast<std::size_t>(kOrder[j])] = free_[static_cast<std::size_t>(kOrder[j])];
  const auto h = static_cast<std::size_t>(kOrder[i]);
  for (int v = 0; v < sizes[h]; ++v) {
    a[h] = static_cast<std::uint16_t>(v);
    out[static_cast<std::size_t>(off + v)] = valid(a) ? 1 : 0;
  }
}

bool ActionRules::repair(Action& a, const std::array<int, kNumHeads>& sizes) const {
  if (valid(a)) return true;
  const auto eh = static_cast<std::size_t>(Head::kEp);
  for (int v = sizes[eh] - 1; v >= 0; --v) {
    Action b = a;
    b[eh] = static_cast<std::uint16_t>(v);
    if (valid(b)) {
      a = b;
      return true;
    }
  }
  for (int round = 0; round < kNumSlots; ++round) {
    int first = -1;
    for (int sl = 0; sl < kNumSlots; ++sl) {
      const auto h = static_cast<std::size_t>(kNumDegreeHeads + sl);
      if (a[h] == free_[h]) continue;
      if (first < 0) first = static_cast<int>(h);
      Action b = a;
      b[h] = free_[h];
      if (valid(b)) {
        a = b;
        return true;
      }
    }
    if (first < 0) break;
    a[static_cast<std::size_t>(first)] = free_[static_cast<std::size_t>(first)];
    if (valid(a)) return true;
  }
  return false;
}

AgentSettings improved_settings() {
  AgentSettings s;
  s.exploit = 0.5;
  s.sweep_every = 8;
  s.mask_invalid = true;
  s.polish = true;
  s.network_proposals = false;
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
  // what each value means, so that a saved policy can be carried to another space
  const auto numbers = [](const auto& values) {
    std::vector<std::string> out;
    for (const auto v : values) out.push_back(std::to_string(v));
    return out;
  };
  d.labels = {numbers(space.tp), numbers(space.pp), numbers(space.ep), numbers(space.attn_dp), numbers(space.batch)};
  for (int sl = 0; sl < kNumSlots; ++sl) {
    const SlotInfo& info = slot_info(sl);
    d.labels.emplace_back(info.choices.begin(), info.choices.begin() + info.num_choices);
  }
  return d;
}

SearchResult search_rl(const SimContext& ctx, const SearchSpace& space, const SearchOptions& opt, const AgentSettings& s,
                       const Policy* warm, std::unique_ptr<Policy>* trained, AgentStats* stats) {
  AgentStats local_stats;
  AgentStats& st = stats ? *stats : local_stats;
  Tracker t(ctx, space, opt, s.exploit > 0 ? "rl" : "rl-paper");
  const PolicyDims dims = dims_for(space, s.elites);
  // a policy from a space with other values is carried over by label (PolicyT::transfer);
  // one that cannot be (no labels, other widths) is dropped and the search starts cold
  std::optional<Policy> carried;
  st.warm_values = st.warm_matched = 0;
  // (a policy without labels, from shardwise-policy/1, is taken as it is when the sizes match)
  const bool same_space = warm && warm->dims().action_heads == dims.action_heads && warm->dims().input == dims.input &&
                          (warm->dims().labels.empty() || warm->dims().labels == dims.labels);
  st.warm_error.clear();
  if (warm && !same_space) {
    Rng init(opt.seed ^ 0x7472616e73666572ULL);
    int matched = 0;
    auto moved = warm->transfer(dims, init, &matched);
    warm = nullptr;
    if (moved.ok()) {
      carried = std::move(moved).value();
      warm = &*carried;
      st.warm_matched = matched;
    } else {
      st.warm_error = moved.error().message();
    }
  } else if (warm) {
    st.warm_matched = dims.logits();
    if (warm->dims().labels.empty()) {  // a version-1 policy: named after this space, so a re-save carries labels
      carried = *warm;
      carried->set_labels(dims.labels);
      warm = &*carried;
    }
  }
  if (warm) st.warm_values = dims.logits();
  const auto sizes = space.sizes();
  // the heads worth moving: a slot with no op in this model (the router of a dense model, the
  // dense MLP of an all-MoE one) changes nothing, so sweeps, mutations and polishing leave it
  auto msizes = sizes;
  const auto has_op = slots_used(ctx.graph);
  for (int sl = 0; sl < kNumSlots; ++sl) {
    if (!has_op[static_cast<std::size_t>(sl)]) msizes[static_cast<std::size_t>(kNumDegreeHeads + sl)] = 1;
  }
  Rng rng(opt.seed);
  std::vector<Elite> elites;
  double best = 0, ref = 0;
  const std::int64_t budget = opt.budget;
  const std::int64_t chunk = std::max<std::int64_t>(1, budget / s.chunks);
  std::unique_ptr<Policy> pol;
  std::unique_ptr<Adam> adam;
  std::int64_t chunk_end = 0;
  int chunk_index = 0;
  int updates = 0;  // PPO updates of the current network
  std::vector<Sample> rollout;
  Cache<float> c;
  std::unique_ptr<Params<float>> grad;
  const bool net = s.network_proposals;  // false: no network at all (the `rl` engine: a masked local search)
  // each head's first logit in the action's flat layout (the mask's)
  std::vector<int> offsets(sizes.size(), 0);
  for (std::size_t h = 1; h < sizes.size(); ++h) offsets[h] = offsets[h - 1] + sizes[h - 1];
  const int flat = offsets.back() + sizes.back();
  const auto reinit = [&]() {
    if (net) {
      Rng init = rng.fork(static_cast<std::uint64_t>(1000 + chunk_index));
      pol = std::make_unique<Policy>(dims, init);
      if (warm) *pol = *warm;
      adam = std::make_unique<Adam>(pol->params());
      grad = std::make_unique<Params<float>>(pol->zeros_like());
    }
    chunk_end = budget - t.remaining() + chunk;
    ++chunk_index;
    ++st.reinits;
    rollout.clear();
    updates = 0;
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
  const ActionRules rules(ctx, space);
  bool polish_pending = false;
  // evaluates a batch of actions (invalid ones dropped first when masking); true if the best improved
  // evaluates a batch (invalid actions dropped first when masking; `batch` keeps the ones
  // evaluated), feeds the elites; one value per action of `batch` (0: infeasible or not reached)
  const auto evaluate_admit = [&](std::vector<Action>& batch) {
    if (s.mask_invalid) std::erase_if(batch, [&](const Action& a) { return !rules.valid(a); });
    if (batch.empty()) return std::vector<double>{};
    const double ts = now_seconds();
    std::vector<double> vals = t.evaluate(batch);
    st.simulator_s += now_seconds() - ts;
    for (std::size_t i = 0; i < vals.size(); ++i) {
      if (vals[i] <= 0) continue;
      if (ref <= 0) ref = vals[i];
      best = std::max(best, vals[i]);
      admit(batch[i], vals[i]);
    }
    vals.resize(batch.size(), 0.0);
    return vals;
  };
  // true if the batch improved the best
  const auto eval_batch = [&](std::vector<Action> batch) {
    const double before = best;
    evaluate_admit(batch);
    return best > before;
  };
  // every other value of head h around `centre`
  const auto around = [&](const Action& centre, std::size_t h) {
    std::vector<Action> batch;
    for (int v = 0; v < msizes[h]; ++v) {
      if (v == centre[h]) continue;
      Action a = centre;
      a[h] = static_cast<std::uint16_t>(v);
      batch.push_back(a);
    }
    return batch;
  };
  // Local search from `cur`: every single-head change (one batch per head, the batch kept);
  // then every change of one degree and every new split of the instance's GPUs over tp,
  // attention DP and pp, with the expert degree and slots repaired where a rule breaks and
  // the batch re-fitted (the largest that fits memory and the SLOs, by bisection over the
  // ladder, as feasibility falls with the batch; and the two below it); one slot changed on
  // top of near-miss re-splits; repeated while the plan improves.
  std::vector<Action> polished;  // local optima reached, not polished again
  const auto polish = [&](Action cur, double cur_v) {
    const auto bh = static_cast<std::size_t>(Head::kBatch);
    const auto th = static_cast<std::size_t>(Head::kTp), dh = static_cast<std::size_t>(Head::kAttnDp);
    // evaluates, and moves `cur` to the best plan of the batch if it beats it
    // evaluates `batch` (left holding the actions evaluated, one value each) and moves
    // `at` to its best plan if that beats `at_v`
    const auto climb = [&](Action& at, double& at_v, std::vector<Action>& batch) {
      std::vector<double> vals = evaluate_admit(batch);
      for (std::size_t i = 0; i < vals.size(); ++i) {
        if (vals[i] > at_v * (1 + 1e-12)) {
          at = batch[i];
          at_v = vals[i];
        }
      }
      return vals;
    };
    const auto try_all = [&](std::vector<Action> batch) { return climb(cur, cur_v, batch); };
    for (bool again = true; again && !t.exhausted();) {
      again = false;
      const double start_v = cur_v;
      for (const int hi : ActionRules::kOrder) {
        const auto h = static_cast<std::size_t>(hi);
        if (msizes[h] < 2 || t.exhausted()) continue;
        try_all(around(cur, h));
      }
      // two neighbouring slots changed together, the batch kept: the ops on either side of a
      // tensor agree on its layout, so one change alone can cost a collective that the pair
      // avoids (ffn1 and ffn2, qkv and attention, the two norms of sequence parallelism)
      if (!t.exhausted()) {
        std::vector<Action> pairs;
        const auto pair_moves = [&](int s1, int s2) {
          const auto h1 = static_cast<std::size_t>(kNumDegreeHeads + s1), h2 = static_cast<std::size_t>(kNumDegreeHeads + s2);
          for (int v1 = 0; v1 < msizes[h1]; ++v1) {
            for (int v2 = 0; v2 < msizes[h2]; ++v2) {
              if (v1 == cur[h1] || v2 == cur[h2]) continue;
              Action a = cur;
              a[h1] = static_cast<std::uint16_t>(v1);
              a[h2] = static_cast<std::uint16_t>(v2);
              pairs.push_back(a);
            }
          }
        };
        for (int sl = 0; sl + 1 < kNumSlots; ++sl) pair_moves(sl, sl + 1);
        pair_moves(static_cast<int>(Slot::kAttnNorm), static_cast<int>(Slot::kFfnNorm));
        try_all(std::move(pairs));
      }
      std::vector<Action> moves;
      const Action base = cur;
      const auto eh = static_cast<std::size_t>(Head::kEp);
      for (const Head hh : {Head::kTp, Head::kPp, Head::kAttnDp, Head::kEp}) {
        for (const Action& a : around(base, static_cast<std::size_t>(hh))) {
          moves.push_back(a);
          // a wider or narrower stage with the expert degree scaled alike: the experts per GPU
          // and the expert TP stay as they were (two changes that pay together, as a larger
          // instance with as many experts per GPU)
          if (hh != Head::kTp && hh != Head::kAttnDp) continue;
          const std::int64_t w0 = std::int64_t{space.tp[base[th]]} * space.attn_dp[base[dh]];
          const std::int64_t w1 = std::int64_t{space.tp[a[th]]} * space.attn_dp[a[dh]];
          const std::int64_t e1 = std::int64_t{space.ep[base[eh]]} * w1 / w0;
          if (e1 * w0 != std::int64_t{space.ep[base[eh]]} * w1) continue;
          const auto it = std::find(space.ep.begin(), space.ep.end(), e1);
          if (it == space.ep.end() || it - space.ep.begin() == base[eh]) continue;
          Action b = a;
          b[eh] = static_cast<std::uint16_t>(it - space.ep.begin());
          if (rules.valid(b)) moves.push_back(b);
        }
      }
      // the instance's GPUs shared out anew over tp, attention DP and pp (same count), with
      // the expert degree as it was (repaired if it breaks a rule) or at its largest valid value
      const std::size_t split_start = moves.size();
      const auto ph = static_cast<std::size_t>(Head::kPp);
      const std::int64_t gpus = std::int64_t{space.tp[base[th]]} * space.attn_dp[base[dh]] * space.pp[base[ph]];
      for (std::size_t i = 0; i < space.tp.size(); ++i) {
        for (std::size_t j = 0; j < space.attn_dp.size(); ++j) {
          for (std::size_t k = 0; k < space.pp.size(); ++k) {
            if (std::int64_t{space.tp[i]} * space.attn_dp[j] * space.pp[k] != gpus) continue;
            if (i == base[th] && j == base[dh] && k == base[ph]) continue;
            Action a = base;
            a[th] = static_cast<std::uint16_t>(i);
            a[dh] = static_cast<std::uint16_t>(j);
            a[ph] = static_cast<std::uint16_t>(k);
            moves.push_back(a);
            for (int v = sizes[eh] - 1; v > 0; --v) {  // the largest expert degree the rules allow
              a[eh] = static_cast<std::uint16_t>(v);
              if (rules.valid(a)) {
                if (v != base[eh]) moves.push_back(a);
                break;
              }
            }
          }
        }
      }
      // the batch re-fitted for a's degrees and sharding; returns the best value seen (0: none)
      // (`best_at`, optional, receives the action of the best value)
      const auto refit = [&](Action a, Action* best_at = nullptr) {
        double got = 0;
        const auto feasible_at = [&](int b) {
          a[bh] = static_cast<std::uint16_t>(b);
          const auto v = try_all({a});
          if (!v.empty() && v[0] > got) {
            got = v[0];
            if (best_at) *best_at = a;
          }
          return !v.empty() && v[0] > 0;
        };
        int lo = 0, hi = sizes[bh] - 1;
        if (!feasible_at(lo)) return got;
        int top = hi;
        if (!t.exhausted() && !feasible_at(hi)) {
          while (hi - lo > 1 && !t.exhausted()) {
            const int mid = (lo + hi) / 2;
            (feasible_at(mid) ? lo : hi) = mid;
          }
          top = lo;
        }
        // throughput need not peak at the largest batch (pipelines, chunked prefill): the two below it too
        std::vector<Action> below;
        for (int b = std::max(0, top - 2); b < top; ++b) {
          if (b == lo && top != lo) continue;
          a[bh] = static_cast<std::uint16_t>(b);
          below.push_back(a);
        }
        if (!t.exhausted()) {
          const std::vector<double> vals = climb(cur, cur_v, below);  // `below` aligned with the values
          for (std::size_t i = 0; i < vals.size(); ++i) {
            if (vals[i] > got) {
              got = vals[i];
              if (best_at) *best_at = below[i];
            }
          }
        }
        return got;
      };
      for (std::size_t m = 0; m < moves.size() && !t.exhausted(); ++m) {
        Action a = moves[m];
        a[bh] = 0;
        if (!rules.repair(a, sizes)) continue;
        const double before = cur_v;
        const double v = refit(a);
        // a new split of the GPUs that lands close below: one slot changed on top of it, batch
        // re-fitted (the ladder makes the best batch jump with the memory a slot frees, so two
        // changes can pay together where each alone does not)
        if (m >= split_start && v >= 0.8 * before && v <= before) {
          for (int sl = 0; sl < kNumSlots && !t.exhausted(); ++sl) {
            const auto h = static_cast<std::size_t>(kNumDegreeHeads + sl);
            for (int c2 = 0; c2 < msizes[h]; ++c2) {
              if (c2 == a[h]) continue;
              Action b = a;
              b[h] = static_cast<std::uint16_t>(c2);
              b[bh] = 0;
              if (rules.valid(b)) refit(b);
            }
          }
        }
      }
      again = cur_v > start_v * (1 + 1e-12);
      if (std::find(polished.begin(), polished.end(), cur) != polished.end()) break;  // a known local optimum
      // a new local optimum: try instances of other sizes, from half to twice its GPUs, every
      // split over tp, attention DP and pp (nearest sizes first; expert degree repaired, batch
      // re-fitted), once. Basins of the best plan can differ in two degrees at once (GPT-MoE-1.6T
      // decode-16k: tp 32 x attn_dp 8 against tp 12 x attn_dp 32), no single move joins them
      if (!again && !t.exhausted()) {
        const std::int64_t n = std::int64_t{space.tp[cur[th]]} * space.attn_dp[cur[dh]] * space.pp[cur[ph]];
        std::vector<std::pair<double, Action>> sized;
        for (std::size_t i = 0; i < space.tp.size(); ++i) {
          for (std::size_t j = 0; j < space.attn_dp.size(); ++j) {
            for (std::size_t k = 0; k < space.pp.size(); ++k) {
              const std::int64_t n2 = std::int64_t{space.tp[i]} * space.attn_dp[j] * space.pp[k];
              if (n2 == n || 2 * n2 < n || n2 > 2 * n) continue;  // from half to twice its GPUs
              Action a = cur;
              a[th] = static_cast<std::uint16_t>(i);
              a[dh] = static_cast<std::uint16_t>(j);
              a[ph] = static_cast<std::uint16_t>(k);
              a[bh] = 0;
              const double dist = std::abs(std::log(static_cast<double>(n2) / static_cast<double>(n)));
              Action lean = a;  // and with replicated weights sharded again (Megatron's choice)
              for (const Slot w : {Slot::kEmbedding, Slot::kQkv, Slot::kAttention, Slot::kOProj, Slot::kFfn1, Slot::kFfn2,
                                   Slot::kExpertFfn1, Slot::kExpertFfn2, Slot::kLmHead}) {
                const auto h = static_cast<std::size_t>(kNumDegreeHeads + static_cast<int>(w));
                const std::string choice = slot_info(w).choices[lean[h]];
                if (choice == "none" || choice == "tokens") lean[h] = 0;
              }
              const bool lean_differs = lean != a;  // decided before the repair, which may change the expert degree of both
              if (rules.repair(a, sizes)) sized.emplace_back(dist, a);
              if (lean_differs && rules.repair(lean, sizes) && lean != a) sized.emplace_back(dist, lean);
            }
          }
        }
        std::stable_sort(sized.begin(), sized.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        const double before = cur_v;
        std::vector<std::pair<double, Action>> landed;  // each size's best plan
        for (const auto& [dist, a] : sized) {
          if (t.exhausted()) break;
          Action at = a;
          const double v = refit(a, &at);
          if (v > 0) landed.emplace_back(v, at);
        }
        // none better: the three best that land within 40% below get two rounds of single-head
        // changes of their own (a slot that frees memory lets the batch climb a ladder step)
        if (cur_v <= before * (1 + 1e-12)) {
          std::stable_sort(landed.begin(), landed.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
          for (std::size_t k = 0; k < std::min<std::size_t>(3, landed.size()) && !t.exhausted(); ++k) {
            auto [v, a] = landed[k];
            if (v < 0.6 * cur_v) break;
            for (int round = 0; round < 2 && !t.exhausted(); ++round) {
              const double round_start = v;
              for (const int hi : ActionRules::kOrder) {
                const auto h = static_cast<std::size_t>(hi);
                if (msizes[h] < 2 || t.exhausted()) continue;
                std::vector<Action> batch = around(a, h);
                climb(a, v, batch);
              }
              if (v <= round_start) break;
            }
            if (v > cur_v * (1 + 1e-12)) {
              cur = a;
              cur_v = v;
            }
          }
        }
        again = cur_v > before * (1 + 1e-12);
      }
    }
    polished.push_back(cur);
  };
  bool probed = false;
  Action polish_from{};
  double polish_value = 0;
  while (!t.exhausted()) {
    // the `rl` variant's polishing: local search from a promising plan until no move improves it
    if (s.polish && polish_pending && !elites.empty()) {
      polish_pending = false;
      polish(polish_from, polish_value);
      if (t.exhausted()) break;
    }
    // the `rl` variant's coordinate sweep: every value of one head around the best elite, in one batch
    if (s.sweep_every > 0 && !elites.empty() && steps > 0 && steps % s.sweep_every == 0) {
      for (int tries = 0; tries < kNumHeads && msizes[sweep_head % msizes.size()] < 2; ++tries) ++sweep_head;
      const std::size_t h = sweep_head++ % sizes.size();
      if (eval_batch(around(elites.front().action, h)) && s.polish) {
        polish_pending = true;
        polish_from = elites.front().action;
        polish_value = elites.front().value;
      }
      if (t.exhausted()) break;
    }
    // the `rl` variant's feasibility probe: nothing feasible after 256 calls (a model that barely
    // fits the cluster) -> Megatron's sharding at the smallest batch for every tp x pp, the expert
    // degree at its largest valid value, once; the first plan that fits seeds the elites
    if (s.polish && elites.empty() && !probed && budget - t.remaining() >= 256) {
      probed = true;
      std::vector<Action> probe;
      for (std::size_t i = 0; i < space.tp.size(); ++i) {
        for (std::size_t k = 0; k < space.pp.size(); ++k) {
          Action a{};
          a[static_cast<std::size_t>(Head::kTp)] = static_cast<std::uint16_t>(i);
          a[static_cast<std::size_t>(Head::kPp)] = static_cast<std::uint16_t>(k);
          a[static_cast<std::size_t>(Head::kAttnDp)] = rules.free_values()[static_cast<std::size_t>(Head::kAttnDp)];
          for (int v = sizes[static_cast<std::size_t>(Head::kEp)] - 1; v >= 0; --v) {
            a[static_cast<std::size_t>(Head::kEp)] = static_cast<std::uint16_t>(v);
            if (rules.valid(a)) break;
          }
          probe.push_back(a);
        }
      }
      if (eval_batch(probe)) {
        polish_pending = true;
        polish_from = elites.front().action;
        polish_value = elites.front().value;
      }
      if (t.exhausted()) break;
    }
    ++steps;
    const std::int64_t used = budget - t.remaining();
    if (used >= chunk_end) reinit();
    const double t0 = now_seconds();
    const Mat obs = net ? observation(elites, space, s.elites, dims.input, best) : Mat{};
    if (net) pol->forward(obs, c);
    // early exit: every head confident (a fresh network never is; a warm-started one may
    // start so, and must be updated once first, or it would be re-initialised at every step)
    bool confident = net && updates > 0;
    for (std::size_t h = 0; h < sizes.size() && confident; ++h) {
      confident = static_cast<double>(pol->head_probs(c.logits, static_cast<int>(h)).maxCoeff()) >= s.tau;
    }
    if (confident) {
      ++st.early_exits;
      reinit();
      pol->forward(obs, c);
    }
    Action a{};
    std::vector<std::uint8_t> mask;
    const bool exploit = s.exploit > 0 && !elites.empty() && rng.uniform() < s.exploit;
    if (exploit) {
      // the best elite, one head moved (to a value the rules allow, when masking)
      for (int tries = 0; tries < 32; ++tries) {
        a = elites.front().action;
        std::size_t h = rng.below(sizes.size());
        for (int k = 0; k < 32 && msizes[h] < 2; ++k) h = rng.below(msizes.size());
        if (msizes[h] > 1) {
          const auto v = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(msizes[h] - 1)));
          a[h] = v >= a[h] ? static_cast<std::uint16_t>(v + 1) : v;
        }
        if (!s.mask_invalid || rules.valid(a)) break;
      }
    } else {
      if (s.mask_invalid) mask.assign(static_cast<std::size_t>(flat), 1);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::size_t h = s.mask_invalid ? static_cast<std::size_t>(ActionRules::kOrder[i]) : i;
        if (s.mask_invalid) rules.allowed(a, i, sizes, mask, offsets[h]);
        Vec pr;
        if (net) {
          pr = masked_probs(*pol, c.logits, static_cast<int>(h), mask);
        } else {  // no network: uniform over the allowed values
          pr.resize(sizes[h]);
          for (Eigen::Index k = 0; k < pr.size(); ++k) pr(k) = mask.empty() || mask[static_cast<std::size_t>(offsets[h] + k)] ? 1.0f : 0.0f;
          pr /= pr.sum();
        }
        double u = rng.uniform(), acc = 0;
        int k = 0;
        int last_allowed = 0;
        for (; k < pr.size(); ++k) {
          if (pr(k) > 0) last_allowed = k;
          acc += static_cast<double>(pr(k));
          if (u < acc && pr(k) > 0) break;
        }
        a[h] = static_cast<std::uint16_t>(k < pr.size() ? k : last_allowed);
      }
    }
    st.policy_s += now_seconds() - t0;
    const double t1 = now_seconds();
    const double raw = t.evaluate_one(a);
    st.simulator_s += now_seconds() - t1;
    if (raw < 0) break;  // budget or time spent
    ++st.policy_calls;
    const double t2 = now_seconds();
    double reward = s.invalid_reward;
    if (raw > 0) {
      if (ref <= 0) ref = raw;
      reward = s.alpha * raw / ref + s.beta * (raw - best) / ref;
      // a promising plan (a new best, or within 10% of it) starts a local search
      if (s.polish && raw > best && std::find(polished.begin(), polished.end(), a) == polished.end()) {
        polish_pending = true;
        polish_from = a;
        polish_value = raw;
      }
      best = std::max(best, raw);
      admit(a, raw);
    }
    if (net) rollout.push_back({obs, a, log_prob(*pol, c.logits, a, mask), static_cast<double>(c.value), reward, std::move(mask)});
    if (net && static_cast<int>(rollout.size()) == s.rollout) {
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
      ++updates;
      rollout.clear();
    }
    st.policy_s += now_seconds() - t2;
  }
  if (trained) *trained = std::move(pol);
  SearchResult r = t.finish();
  // The batch ladder is coarse (x1.5 steps): an elite whose best batch lies between two of
  // its values can rank below one that does not (GPT-MoE-1.6T decode-32k: pp 1 at 8 of the 11
  // sequences per attention group its TPOT SLO allows, below pp 2 at 20). As refine_batch
  // refines any engine's winner after its search, and exact each combo's winners, each elite
  // (s.elites, 3) is evaluated at its own largest feasible batch and the best kept: outside
  // the call budget, as refine_batch's evaluations are; the closed form's, so not under a
  // caller's objective (whose every call is counted).
  if (opt.refine_batch && !opt.objective && !ctx.workload.batch && r.found && !r.stopped_by_time) {
    for (const Elite& e : elites) {
      Plan q = space.decode(e.action);
      q.batch = 0;  // max: the largest that fits memory and the SLOs
      const Metrics m = evaluate(ctx, q, nullptr, false);
      if (!m.feasible() || !(m.objective > r.best_value * (1.0 + 1e-12))) continue;
      q.batch = m.batch;
      q.sharding = canonical_sharding(q.sharding, ctx.graph);  // slots without an op at Megatron's choice, as the tracker reports them
      r.best = q;
      r.best_value = m.objective;
      r.batch_note = fmt::format("an elite at its largest feasible batch ({}): {:.1f} tokens/s per GPU", m.batch, m.objective);
    }
  }
  r.policy_s = st.policy_s;
  r.simulator_s = st.simulator_s;
  r.policy_calls = st.policy_calls;
  return r;
}

}  // namespace shardwise::rl
