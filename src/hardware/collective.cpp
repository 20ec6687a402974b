#include "hardware/collective.hpp"

#include "core/int_math.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

namespace shardwise {

const char* to_string(CollKind k) {
  switch (k) {
    case CollKind::kNone: return "-";
    case CollKind::kAllReduce: return "all-reduce";
    case CollKind::kAllGather: return "all-gather";
    case CollKind::kReduceScatter: return "reduce-scatter";
    case CollKind::kAllToAll: return "all-to-all";
    case CollKind::kSendRecv: return "send/recv";
  }
  return "?";
}

namespace {
// Members of the group in the least-populated level-D domain it touches (all n when one
// domain holds it): the first and the last domain may hold a part, a middle one D / s.
std::int64_t members_per_domain(Group g, std::int64_t D) {
  const std::int64_t n = g.size, s = std::max<std::int64_t>(1, g.stride), o = g.offset;
  const std::int64_t d0 = o / D, d1 = (o + (n - 1) * s) / D;
  if (d0 == d1) return n;
  const std::int64_t first = ((d0 + 1) * D - 1 - o) / s + 1;  // members k with o + k s < (d0 + 1) D
  const std::int64_t last = n - ((d1 * D - o + s - 1) / s);   // members k with o + k s >= d1 D
  std::int64_t m = std::min(first, last);
  if (d1 - d0 >= 2) m = std::min(m, D / s);
  return std::max<std::int64_t>(1, m);
}
}  // namespace

GroupSpan span_of(const ClusterSpec& c, Group g) {
  GroupSpan s;
  std::int64_t prev = 1;
  const int nlev = static_cast<int>(c.levels.size());
  for (int l = 0; l < nlev && prev < g.size; ++l) {
    const std::int64_t D = c.levels[static_cast<std::size_t>(l)].size;
    // aligned (the offset a multiple of the domain): D / stride per domain, as the
    // hierarchical algorithms assume; otherwise the least-populated domain it touches
    std::int64_t m = (g.offset == 0 || mod_nn(g.offset, D) == 0) ? div_nn(D, g.stride) : members_per_domain(g, D);
    if (l == nlev - 1) m = g.size;  // the outermost level holds everything
    m = std::clamp<std::int64_t>(m, 1, g.size);
    if (m > prev) {
      s.fanout[s.levels] = div_nn(m + prev - 1, prev);
      s.level_index[s.levels] = l;
      ++s.levels;
      prev = m;
    }
  }
  return s;
}

CollCost collective_cost(const ClusterSpec& c, CollKind kind, Group g, Bytes full, double eff) {
  if (kind == CollKind::kNone || kind == CollKind::kSendRecv || full.value() <= 0.0 || g.size <= 1) {
    return collective_cost(c, kind, g, GroupSpan{}, full, eff);
  }
  return collective_cost(c, kind, g, span_of(c, g), full, eff);
}

Group worst_placed(const ClusterSpec& c, std::int64_t size, std::int64_t stride, std::int64_t first, std::int64_t step,
                   std::int64_t count) {
  Group worst{size, stride, first};
  if (c.levels.size() < 2 || count <= 1 || size * stride <= 1) return worst;
  // fast path: every group tiles the inner domains exactly (all powers of two on 8-GPU
  // nodes): each is placed as the first one is
  const std::int64_t span = size * stride;
  bool aligned = true;
  for (std::size_t l = 0; l + 1 < c.levels.size() && aligned; ++l) {
    const std::int64_t D = c.levels[l].size;
    const bool inside = mod_nn(D, span) == 0 && mod_nn(step, span) == 0 && mod_nn(first, span) == 0;
    const bool whole = mod_nn(span, D) == 0 && mod_nn(step, D) == 0 && mod_nn(first, D) == 0;
    aligned = inside || whole;
  }
  if (aligned) return worst;
  // the offsets repeat modulo every inner level's size: try one period of the largest
  std::int64_t period = 1;
  for (std::size_t l = 0; l + 1 < c.levels.size(); ++l) {
    const std::int64_t D = c.levels[l].size;
    period = std::max(period, D / std::gcd(step % D, D));
  }
  const auto badness = [&](Group g) {
    const GroupSpan sp = span_of(c, g);
    const int top = sp.levels > 0 ? sp.level_index[sp.levels - 1] : 0;
    return std::pair<int, std::int64_t>{top * 1000 + sp.levels, -(sp.levels > 0 ? sp.fanout[0] : size)};
  };
  auto bad = badness(worst);
  for (std::int64_t k = 1; k < std::min(count, period + 1); ++k) {
    const Group g{size, stride, first + k * step};
    const auto b = badness(g);
    if (b > bad) {
      bad = b;
      worst = g;
    }
  }
  return worst;
}

// Rank i of stage st sends to rank i of stage st + 1 (w ranks on): of all such pairs in
// every replica, the one whose span climbs highest. The pairs cover an instance's ranks
// consecutively, so a pair crosses a boundary of the outermost inner level (D GPUs) iff
// some replica's range r x inst .. (r + 1) x inst - 1 holds one past its start (the pair
// max(r x inst, B - w) then reaches it); replicas repeat modulo D.
Group worst_pp_pair(const ClusterSpec& c, std::int64_t w, std::int64_t inst, std::int64_t reps) {
  if (c.levels.size() < 2) return {2, w, 0};
  const std::int64_t D = c.levels[c.levels.size() - 2].size;
  if (w >= D) return {2, w, 0};  // every pair already crosses
  const std::int64_t r_count = inst % D == 0 ? 1 : std::min(reps, D / std::gcd(inst % D, D));
  for (std::int64_t r = 0; r < r_count; ++r) {
    const std::int64_t lo = r * inst, hi = lo + inst - 1;
    if (lo / D != hi / D) {
      const std::int64_t boundary = (lo / D + 1) * D;
      return {2, w, std::max(lo, boundary - w)};
    }
  }
  return {2, w, 0};
}

}  // namespace shardwise
