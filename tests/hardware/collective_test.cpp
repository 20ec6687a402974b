// Collective costs: hand-computed cases (arithmetic in comments) and properties.
#include "hardware/collective.hpp"

#include <gtest/gtest.h>

namespace shardwise {
namespace {

ClusterSpec preset(const std::string& n) { return *cluster_from_preset(n); }

TEST(Collective, AllReduceInsideOneNode) {
  // 8 ranks on NVLink (450 GB/s per direction, alpha 2 us), 8 MB tensor, efficiency 1:
  // gather pass: 7 peers x (2 us + 1 MB / 450 GB/s) = 14 us + 15.556 us = 29.556 us;
  // all-reduce = reduce-scatter + all-gather = 59.111 us; bytes sent 2 x 7 x 1 MB = 14 MB.
  const CollCost c = collective_cost(preset("h100x8"), CollKind::kAllReduce, {8, 1}, Bytes(8e6), 1.0);
  EXPECT_NEAR(c.time.value(), 2.0 * (14e-6 + 7e6 / 450e9), 1e-12);
  EXPECT_DOUBLE_EQ(c.bytes.value(), 14e6);
}

TEST(Collective, HierarchicalAllGatherAcrossTwoNodes) {
  // 16 ranks, 8 per node. Outer level first with the smallest chunks:
  // network: 1 peer x (6 us + 1 MB / 50 GB/s) = 26 us; then chunks of 2 MB on NVLink:
  // 7 peers x (2 us + 2 MB / 450 GB/s) = 14 us + 31.111 us. Total 71.111 us; bytes 1 + 14 = 15 MB (= 15/16 of 16 MB).
  const ClusterSpec c = preset("h100x16");
  const GroupSpan s = span_of(c, {16, 1});
  ASSERT_EQ(s.levels, 2);
  EXPECT_EQ(s.fanout[0], 8);
  EXPECT_EQ(s.fanout[1], 2);
  const CollCost g = collective_cost(c, CollKind::kAllGather, {16, 1}, Bytes(16e6), 1.0);
  EXPECT_NEAR(g.time.value(), 26e-6 + 14e-6 + 14e6 / 450e9, 1e-12);
  EXPECT_DOUBLE_EQ(g.bytes.value(), 15e6);
}

TEST(Collective, AllToAllAcrossTwoNodes) {
  // 16 ranks each holding 1 MB of a 16 MB tensor: 7/16 of it to NVLink peers, 8/16 over the network;
  // the levels run concurrently: max(2 us + 0.4375 MB / 450 GB/s, 6 us + 0.5 MB / 50 GB/s) = 16 us.
  const CollCost a = collective_cost(preset("h100x16"), CollKind::kAllToAll, {16, 1}, Bytes(16e6), 1.0);
  EXPECT_NEAR(a.time.value(), 6e-6 + 0.5e6 / 50e9, 1e-12);
  EXPECT_DOUBLE_EQ(a.bytes.value(), 0.9375e6);
}

TEST(Collective, StridedGroupUsesTheNetwork) {
  // 2 ranks 8 apart (one per node): the network level only.
  const GroupSpan s = span_of(preset("h100x16"), {2, 8});
  ASSERT_EQ(s.levels, 1);
  EXPECT_EQ(s.level_index[0], 1);
}

TEST(Collective, SingleRankAndEmptyTensorsCostNothing) {
  const ClusterSpec c = preset("h100x8");
  for (CollKind k : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAllToAll}) {
    EXPECT_EQ(collective_cost(c, k, {1, 1}, Bytes(1e6), 1.0).time.value(), 0.0);
    EXPECT_EQ(collective_cost(c, k, {8, 1}, Bytes(0), 1.0).time.value(), 0.0);
  }
}

TEST(Collective, MoreBandwidthIsNeverSlower) {
  ClusterSpec slow = preset("h100x64");
  ClusterSpec fast = slow;
  for (auto& l : fast.levels) l.bandwidth = l.bandwidth * 2.0;
  for (CollKind k : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAllToAll, CollKind::kSendRecv}) {
    for (std::int64_t n : {2, 8, 16, 64}) {
      for (double bytes : {1e3, 1e6, 1e9}) {
        EXPECT_LE(collective_cost(fast, k, {n, 1}, Bytes(bytes), 0.8).time, collective_cost(slow, k, {n, 1}, Bytes(bytes), 0.8).time);
      }
    }
  }
}

}  // namespace
}  // namespace shardwise
