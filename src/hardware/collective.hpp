// Collective cost: alpha-beta per topology level, hierarchical when a group
// spans levels. Formulas in docs/cost-model.md; hand-computed tests in
// tests/hardware/collective_test.cpp.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>

#include "core/units.hpp"
#include "hardware/cluster.hpp"

namespace shardwise {

enum class CollKind : std::uint8_t { kNone, kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
const char* to_string(CollKind k);

// A group of `size` ranks spaced `stride` apart (rank order is node by node), the first at
// global rank `offset`: a group that straddles a domain boundary (a replica of 64 GPUs at
// GPU 64 of 72-GPU NVLink domains) reaches fewer peers per domain and crosses more levels.
struct Group {
  std::int64_t size = 1;
  std::int64_t stride = 1;
  std::int64_t offset = 0;
};

// How a group spreads over the levels: members per domain at each level.
// A group of n ranks with stride s has m_l = clamp(D_l / s, 1, n) members in a
// level-l domain of D_l GPUs (the innermost level that holds all n is its top).
struct GroupSpan {
  int levels = 0;                  // number of levels the group uses (1 = one domain)
  std::int64_t fanout[4] = {1, 1, 1, 1};  // k_l = m_l / m_{l-1}: peers crossed at level l
  int level_index[4] = {0, 0, 0, 0};      // which cluster level each step uses
};
GroupSpan span_of(const ClusterSpec& c, Group g);

// The worst-placed of `count` groups of `size` ranks with `stride`, the k-th starting at
// first + k x step (k = 0 .. count - 1): the one whose span climbs highest (then the one
// with the fewest members per innermost domain). Only the distinct offsets modulo the
// level sizes are tried, so the cost does not grow with count.
Group worst_placed(const ClusterSpec& c, std::int64_t size, std::int64_t stride, std::int64_t first, std::int64_t step,
                   std::int64_t count);

// Pipeline send/recv: rank i of stage st to rank i of stage st + 1, w ranks on, in
// instances of inst GPUs repeated `reps` times from GPU 0. The pair {2, w, offset} whose
// span climbs highest (a pair crosses a domain boundary iff an instance's range holds one).
Group worst_pp_pair(const ClusterSpec& c, std::int64_t w, std::int64_t inst, std::int64_t reps);

struct CollCost {
  Seconds time;
  Bytes bytes;  // bytes each GPU sends (what the breakdown reports)
};

// `full` is the logical size of the whole tensor involved:
//  all-reduce: the reduced tensor (each rank holds all of it)
//  all-gather: the gathered tensor (each rank ends with all of it)
//  reduce-scatter: the tensor before scattering (each rank starts with all of it)
//  all-to-all: the whole tensor (each rank holds 1/n of it before and after)
//  send/recv: the bytes each rank sends
// `bw_efficiency` scales link bandwidth (what NCCL achieves on large messages).
CollCost collective_cost(const ClusterSpec& c, CollKind kind, Group g, Bytes full, double bw_efficiency);
namespace collective_detail {
// Gather-like pass over the levels, outermost first with the smallest chunks:
// at level l each rank receives (k_l - 1) chunks of size `chunk`, then the
// chunk grows k_l times. Reduce-scatter is the mirror image with the same cost.
// time = sum_l (k_l - 1) * (alpha_l + chunk_l / (bw_l * eff))
inline Seconds gather_time(const ClusterSpec& c, const GroupSpan& s, Bytes full, std::int64_t n, double eff, Bytes* sent) {
  Seconds t(0);
  Bytes chunk = full / static_cast<double>(n);
  for (int i = s.levels - 1; i >= 0; --i) {
    const TopologyLevel& lv = c.levels[static_cast<std::size_t>(s.level_index[i])];
    // k - 1 chunks cross the level in ceil(log2 k) steps (recursive halving/doubling: the
    // bytes of a ring, the latency of a tree; a ring's k - 1 steps would make a group that
    // spans two levels cheaper than the same group inside one, which a split schedule over
    // the one level also achieves)
    const double peers = static_cast<double>(s.fanout[i] - 1);
    const double steps = static_cast<double>(std::bit_width(static_cast<std::uint64_t>(s.fanout[i] - 1)));  // ceil(log2 k)
    t += steps * lv.latency + (chunk * peers) / (lv.bandwidth * eff);
    *sent += chunk * peers;
    chunk = chunk * static_cast<double>(s.fanout[i]);
  }
  return t;
}
}  // namespace collective_detail

// The same with the group's span already known (span_of(c, g)): the simulator computes the
// spans of its groups once per evaluation (inline: it prices a dozen collectives per evaluation).
inline CollCost collective_cost(const ClusterSpec& c, CollKind kind, Group g, const GroupSpan& s, Bytes full, double eff) {
  using collective_detail::gather_time;
  CollCost out{Seconds(0), Bytes(0)};
  if (kind == CollKind::kNone || full.value() <= 0.0) return out;
  if (kind == CollKind::kSendRecv) {
    const std::size_t l = c.level_for_span(g.offset, g.offset + g.stride);
    const TopologyLevel& lv = c.levels[l];
    out.time = lv.latency + full / (lv.bandwidth * eff);
    out.bytes = full;
    return out;
  }
  if (g.size <= 1) return out;
  const std::int64_t n = g.size;
  switch (kind) {
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      out.time = gather_time(c, s, full, n, eff, &out.bytes);
      break;
    case CollKind::kAllReduce:
      // reduce-scatter then all-gather: twice the gather cost (ring: 2(n-1)/n of the data).
      out.time = gather_time(c, s, full, n, eff, &out.bytes) * 2.0;
      out.bytes = out.bytes * 2.0;
      break;
    case CollKind::kAllToAll: {
      // Each rank holds full/n and sends full/n * (m_l - m_{l-1})/n to the peers
      // first reached at level l; levels run concurrently on their own links,
      // so the slowest level sets the time (latency: one per peer, pipelined).
      const Bytes mine = full / static_cast<double>(n);
      std::int64_t prev = 1;
      Seconds slowest(0);
      for (int i = 0; i < s.levels; ++i) {
        const TopologyLevel& lv = c.levels[static_cast<std::size_t>(s.level_index[i])];
        const std::int64_t m = prev * s.fanout[i];
        const Bytes b = mine * (static_cast<double>(std::min(m, n) - prev) / static_cast<double>(n));
        slowest = std::max(slowest, lv.latency + b / (lv.bandwidth * eff));
        out.bytes += b;
        prev = m;
      }
      out.time = slowest;
      break;
    }
    default:
      break;
  }
  return out;
}

}  // namespace shardwise
