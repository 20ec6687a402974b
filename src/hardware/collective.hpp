// Collective cost: alpha-beta per topology level, hierarchical when a group
// spans levels. Formulas in docs/cost-model.md; hand-computed tests in
// tests/hardware/collective_test.cpp.
#pragma once
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
// The same with the group's span already known (span_of(c, g)): the simulator computes the
// spans of its groups once per evaluation.
CollCost collective_cost(const ClusterSpec& c, CollKind kind, Group g, const GroupSpan& span, Bytes full, double bw_efficiency);

}  // namespace shardwise
