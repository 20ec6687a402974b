#include "plan/space.hpp"

#include <algorithm>
#include <cmath>

namespace shardwise {
namespace {
std::vector<std::int32_t> divisors(std::int64_t n, std::int64_t cap) {
  std::vector<std::int32_t> d;
  for (std::int64_t i = 1; i <= std::min(n, cap); ++i) {
    if (n % i == 0) d.push_back(static_cast<std::int32_t>(i));
  }
  return d;
}
std::vector<std::int32_t> powers_of_two(std::int64_t cap) {
  std::vector<std::int32_t> d;
  for (std::int64_t i = 1; i <= cap; i *= 2) d.push_back(static_cast<std::int32_t>(i));
  return d;
}
template <class T>
std::uint16_t nearest(const std::vector<T>& v, T x) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (std::llabs(static_cast<long long>(v[i] - x)) < std::llabs(static_cast<long long>(v[best] - x))) best = i;
  }
  return static_cast<std::uint16_t>(best);
}
}  // namespace

const char* head_name(int head) {
  static const char* const degree_heads[] = {"tp", "pp", "ep", "attn_dp", "batch"};
  return head < kNumDegreeHeads ? degree_heads[head] : slot_info(head - kNumDegreeHeads).name;
}

std::vector<std::int64_t> batch_ladder(std::int64_t max_per_group) {
  std::vector<std::int64_t> out{1, 2, 4, 8};
  double b = 8;
  while (true) {
    b *= 1.5;
    const auto v = static_cast<std::int64_t>(std::llround(b / 4.0) * 4);  // multiples of 4 past 8
    if (v > max_per_group) break;
    if (v != out.back()) out.push_back(v);
  }
  while (!out.empty() && out.back() > max_per_group) out.pop_back();
  return out;
}

Action random_action(const std::array<int, kNumHeads>& sizes, Rng& rng) {
  Action a{};
  for (std::size_t h = 0; h < a.size(); ++h) a[h] = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(sizes[h])));
  return a;
}

SearchSpace make_space(const ModelSpec& m, const ClusterSpec& c, const Workload& w, std::int32_t redundant_experts) {
  SearchSpace s;
  s.cluster_gpus = c.num_gpus;
  s.redundant_experts = m.is_moe() ? redundant_experts : 0;
  // tp divides the heads (kv heads are replicated when tp exceeds them); at most 64 and the cluster
  s.tp = divisors(m.num_heads, std::min<std::int64_t>(64, c.num_gpus));
  // pp: the divisors of the layers, and the powers of two the engines are run with even where
  // they do not divide (DeepSeek-V3's 61 layers on pp 4: stages of 15, 15, 16, 15)
  {
    const std::int64_t cap = std::min<std::int64_t>(m.num_layers, c.num_gpus);
    s.pp = divisors(m.num_layers, cap);
    for (const std::int32_t p2 : powers_of_two(std::min<std::int64_t>(cap, 64))) s.pp.push_back(p2);
    std::sort(s.pp.begin(), s.pp.end());
    s.pp.erase(std::unique(s.pp.begin(), s.pp.end()), s.pp.end());
  }
  s.ep = m.is_moe() ? divisors(m.moe.num_experts + s.redundant_experts, c.num_gpus) : std::vector<std::int32_t>{1};
  s.attn_dp = powers_of_two(std::min<std::int64_t>(256, c.num_gpus));
  // a fixed workload batch pins the head; otherwise the ladder
  s.batch = w.batch ? std::vector<std::int64_t>{*w.batch} : batch_ladder(4096);
  return s;
}

std::array<int, kNumHeads> SearchSpace::sizes() const {
  std::array<int, kNumHeads> out{};
  out[0] = static_cast<int>(tp.size());
  out[1] = static_cast<int>(pp.size());
  out[2] = static_cast<int>(ep.size());
  out[3] = static_cast<int>(attn_dp.size());
  out[4] = static_cast<int>(batch.size());
  for (int i = 0; i < kNumSlots; ++i) out[static_cast<std::size_t>(kNumDegreeHeads + i)] = slot_info(i).num_choices;
  return out;
}

double SearchSpace::size() const {
  double n = 1;
  for (int k : sizes()) n *= k;
  return n;
}

Plan SearchSpace::decode(const Action& a) const {
  Plan p;
  p.deg.tp = tp[a[0]];
  p.deg.pp = pp[a[1]];
  p.deg.ep = ep[a[2]];
  p.redundant_experts = p.deg.ep > 1 ? redundant_experts : 0;  // copies beside a single group help nothing
  p.deg.attn_dp = attn_dp[a[3]];
  // a fixed batch is the instance's; a ladder value is per attention-DP group
  p.batch = batch.size() == 1 ? batch[0] : batch[a[4]] * p.deg.attn_dp;
  const std::int64_t inst = p.deg.instance_gpus();
  p.deg.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(1, cluster_gpus / inst));
  for (int i = 0; i < kNumSlots; ++i) p.sharding[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(a[static_cast<std::size_t>(kNumDegreeHeads + i)]);
  return p;
}

Action SearchSpace::encode(const Plan& p) const {
  Action a{};
  a[0] = nearest(tp, p.deg.tp);
  a[1] = nearest(pp, p.deg.pp);
  a[2] = nearest(ep, p.deg.ep);
  a[3] = nearest(attn_dp, p.deg.attn_dp);
  a[4] = batch.size() == 1 ? 0 : nearest(batch, p.batch / std::max(1, p.deg.attn_dp));
  for (int i = 0; i < kNumSlots; ++i) a[static_cast<std::size_t>(kNumDegreeHeads + i)] = p.sharding[static_cast<std::size_t>(i)];
  return a;
}

}  // namespace shardwise
