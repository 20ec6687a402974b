#include "hardware/collective.hpp"

#include <algorithm>

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

GroupSpan span_of(const ClusterSpec& c, Group g) {
  GroupSpan s;
  std::int64_t prev = 1;
  const int nlev = static_cast<int>(c.levels.size());
  for (int l = 0; l < nlev && prev < g.size; ++l) {
    std::int64_t m = c.levels[static_cast<std::size_t>(l)].size / g.stride;
    if (l == nlev - 1) m = g.size;  // the outermost level holds everything
    m = std::clamp<std::int64_t>(m, 1, g.size);
    if (m > prev) {
      s.fanout[s.levels] = (m + prev - 1) / prev;
      s.level_index[s.levels] = l;
      ++s.levels;
      prev = m;
    }
  }
  return s;
}

namespace {
// Gather-like pass over the levels, outermost first with the smallest chunks:
// at level l each rank receives (k_l - 1) chunks of size `chunk`, then the
// chunk grows k_l times. Reduce-scatter is the mirror image with the same cost.
// time = sum_l (k_l - 1) * (alpha_l + chunk_l / (bw_l * eff))
Seconds gather_time(const ClusterSpec& c, const GroupSpan& s, Bytes full, std::int64_t n, double eff, Bytes* sent) {
  Seconds t(0);
  Bytes chunk = full / static_cast<double>(n);
  for (int i = s.levels - 1; i >= 0; --i) {
    const TopologyLevel& lv = c.levels[static_cast<std::size_t>(s.level_index[i])];
    const double peers = static_cast<double>(s.fanout[i] - 1);
    t += peers * lv.latency + (chunk * peers) / (lv.bandwidth * eff);
    *sent += chunk * peers;
    chunk = chunk * static_cast<double>(s.fanout[i]);
  }
  return t;
}
}  // namespace

CollCost collective_cost(const ClusterSpec& c, CollKind kind, Group g, Bytes full, double eff) {
  CollCost out{Seconds(0), Bytes(0)};
  if (kind == CollKind::kNone || full.value() <= 0.0) return out;
  if (kind == CollKind::kSendRecv) {
    const std::size_t l = c.level_for_span(0, g.stride);
    const TopologyLevel& lv = c.levels[l];
    out.time = lv.latency + full / (lv.bandwidth * eff);
    out.bytes = full;
    return out;
  }
  if (g.size <= 1) return out;
  const GroupSpan s = span_of(c, g);
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
