// Collective costs: hand-computed cases (arithmetic in comments) and properties.
#include "hardware/collective.hpp"

#include <gtest/gtest.h>

namespace shardwise {
namespace {

ClusterSpec preset(const std::string& n) { return *cluster_from_preset(n); }

TEST(Collective, AllReduceInsideOneNode) {
  // 8 ranks on NVLink (450 GB/s per direction, alpha 2 us), 8 MB tensor, efficiency 1:
  // gather pass: log2(8) = 3 steps x 2 us + 7 peers' 1 MB / 450 GB/s = 6 us + 15.556 us = 21.556 us;
  // all-reduce = reduce-scatter + all-gather = 43.111 us; bytes sent 2 x 7 x 1 MB = 14 MB.
  const CollCost c = collective_cost(preset("h100x8"), CollKind::kAllReduce, {8, 1}, Bytes(8e6), 1.0);
  EXPECT_NEAR(c.time.value(), 2.0 * (6e-6 + 7e6 / 450e9), 1e-12);
  EXPECT_DOUBLE_EQ(c.bytes.value(), 14e6);
}

TEST(Collective, HierarchicalAllGatherAcrossTwoNodes) {
  // 16 ranks, 8 per node. Outer level first with the smallest chunks:
  // network: 1 step of 6 us + 1 MB / 50 GB/s = 26 us; then chunks of 2 MB on NVLink:
  // log2(8) = 3 steps x 2 us + 7 x 2 MB / 450 GB/s = 6 us + 31.111 us. Total 63.111 us; bytes 1 + 14 = 15 MB (= 15/16 of 16 MB).
  const ClusterSpec c = preset("h100x16");
  const GroupSpan s = span_of(c, {16, 1});
  ASSERT_EQ(s.levels, 2);
  EXPECT_EQ(s.fanout[0], 8);
  EXPECT_EQ(s.fanout[1], 2);
  const CollCost g = collective_cost(c, CollKind::kAllGather, {16, 1}, Bytes(16e6), 1.0);
  EXPECT_NEAR(g.time.value(), 26e-6 + 6e-6 + 14e6 / 450e9, 1e-12);
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

TEST(Collective, AGroupThatStraddlesADomainIsCostedOnTheLevelsItSpans) {
  // gb200x144: NVLink domains of 72 GPUs. A 64-rank group at GPU 0 is inside domain 0; at
  // GPU 64 (the second 64-GPU replica) it holds 8 ranks in domain 0 (64..71) and 56 in
  // domain 1: the least-populated domain has 8, so 8 NVLink peers, then 8 over the network.
  const ClusterSpec c = preset("gb200x144");
  const GroupSpan in = span_of(c, {64, 1, 0});
  ASSERT_EQ(in.levels, 1);
  EXPECT_EQ(in.fanout[0], 64);
  const GroupSpan out = span_of(c, {64, 1, 64});
  ASSERT_EQ(out.levels, 2);
  EXPECT_EQ(out.fanout[0], 8);
  EXPECT_EQ(out.fanout[1], 8);
  EXPECT_EQ(out.level_index[1], 1);  // the network
  // the straddling group is never cheaper, for every collective and size
  for (CollKind k : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAllToAll}) {
    for (double bytes : {1e3, 1e5, 1e7, 1e9}) {
      EXPECT_GE(collective_cost(c, k, {64, 1, 64}, Bytes(bytes), 0.8).time.value(),
                collective_cost(c, k, {64, 1, 0}, Bytes(bytes), 0.8).time.value())
          << to_string(k) << " " << bytes;
    }
  }
  // of the two 64-GPU replicas, the second is the worst placed; on h100 nodes every
  // power-of-two group tiles the nodes and the first placement stands for all
  EXPECT_EQ(worst_placed(c, 64, 1, 0, 64, 2).offset, 64);
  EXPECT_EQ(worst_placed(preset("h100x64"), 8, 1, 0, 8, 8).offset, 0);
  // a 6-rank group on 8-GPU nodes: the second (GPUs 6..11) straddles two nodes
  EXPECT_EQ(span_of(preset("h100x16"), worst_placed(preset("h100x16"), 6, 1, 0, 6, 2)).levels, 2);
}

TEST(Collective, ThePipelinePairThatCrossesADomainIsTheWorstPlaced) {
  // h100x16 (nodes of 8): stages of w = 4 GPUs, pp 4 (inst 16): stage 1 (GPUs 4..7) sends to
  // stage 2 (8..11) across the node boundary at 8: the pair (4, 8) is on the network
  const ClusterSpec c = preset("h100x16");
  const Group g = worst_pp_pair(c, 4, 16, 1);
  EXPECT_EQ(g.offset, 4);
  EXPECT_EQ(c.level_for_span(g.offset, g.offset + g.stride), 1u);
  // pp 2 of w 4 (inst 8): stage 0 (0..3) to stage 1 (4..7) stays in node 0, and so does every
  // replica (8 GPUs each, aligned to nodes)
  const Group in = worst_pp_pair(c, 4, 8, 2);
  EXPECT_EQ(c.level_for_span(in.offset, in.offset + in.stride), 0u);
  // gb200x144, two 64-GPU instances of pp 2 (w 32): replica 1 (64..127) crosses GPU 72
  const ClusterSpec gb = preset("gb200x144");
  const Group x = worst_pp_pair(gb, 32, 64, 2);
  EXPECT_EQ(gb.level_for_span(x.offset, x.offset + x.stride), 1u);
  EXPECT_EQ(gb.level_for_span(worst_pp_pair(gb, 32, 64, 1).offset, worst_pp_pair(gb, 32, 64, 1).offset + 32), 0u);
}

}  // namespace
}  // namespace shardwise
