#include "hardware/cluster.hpp"

#include <gtest/gtest.h>

namespace shardwise {
namespace {

ClusterSpec preset(const std::string& n) {
  auto c = cluster_from_preset(n);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
  return c.ok() ? *c : ClusterSpec{};
}

TEST(ClusterPreset, NamedSizes) {
  for (const char* n : {"h100x1", "h100x8", "h100x64", "h200x8", "a100x4", "b200x16", "h100x24576", "gb200x72"}) {
    ClusterSpec c = preset(n);
    EXPECT_EQ(c.name, n);
    EXPECT_FALSE(c.levels.empty());
    EXPECT_EQ(c.levels.back().size, c.num_gpus) << n;  // the outer level spans everything
  }
  EXPECT_EQ(preset("h100x24576").num_nodes(), 3072);  // 24576 / 8
  EXPECT_EQ(preset("h100x12").num_nodes(), 2);         // a partly filled last node
}

TEST(ClusterPreset, Levels) {
  // One node: NVLink only.
  ClusterSpec one = preset("h100x8");
  ASSERT_EQ(one.levels.size(), 1u);
  EXPECT_EQ(one.levels[0].name, "nvlink");
  EXPECT_DOUBLE_EQ(one.levels[0].bandwidth.value(), 450e9);  // 900 GB/s both ways
  // Eight nodes: NVLink inside, 400 Gb/s (50 GB/s) NIC per GPU outside.
  ClusterSpec c = preset("h100x64");
  ASSERT_EQ(c.levels.size(), 2u);
  EXPECT_EQ(c.levels[1].name, "network");
  EXPECT_DOUBLE_EQ(c.levels[1].bandwidth.value(), 50e9);
  // A single GPU has one degenerate level.
  EXPECT_EQ(preset("h100x1").levels.size(), 1u);
  // NVL72: 72 GPUs on one NVLink domain across 18 trays of 4.
  ClusterSpec g = preset("gb200x144");
  EXPECT_EQ(g.gpus_per_node, 4);
  EXPECT_EQ(g.levels[0].size, 72);
  EXPECT_EQ(g.levels[1].size, 144);
}

TEST(ClusterPreset, LevelForSpan) {
  ClusterSpec c = preset("h100x64");
  EXPECT_EQ(c.level_for_span(0, 7), 0u);    // one node
  EXPECT_EQ(c.level_for_span(8, 15), 0u);   // another node
  EXPECT_EQ(c.level_for_span(7, 8), 1u);    // straddles two nodes
  EXPECT_EQ(c.level_for_span(0, 63), 1u);
  ClusterSpec g = preset("gb200x144");
  EXPECT_EQ(g.level_for_span(0, 71), 0u);  // spans 18 nodes, still NVLink
  EXPECT_EQ(g.level_for_span(70, 73), 1u);
}

TEST(ClusterPreset, RejectsBadNames) {
  for (const char* n : {"h100x0", "h100x24577", "v100x8", "h100x", "x8", "h100x8x", "h100", "h100x-1", "h100x8.5"}) {
    auto c = cluster_from_preset(n);
    ASSERT_FALSE(c.ok()) << n;
    EXPECT_NE(c.error().message().find("--cluster"), std::string::npos) << n;
  }
  EXPECT_NE(cluster_from_preset("v100x8").error().message().find("h100, h200"), std::string::npos);
}

TEST(ClusterYaml, CustomGpuFromBaseWithUnits) {
  auto c = parse_cluster_yaml(
      "name: lab\ngpu:\n  base: h100\n  hbm: 94 GB\n  network_bandwidth: 200 Gb/s\nnum_gpus: 16\n", "lab.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->gpu.name, "h100-custom");
  EXPECT_DOUBLE_EQ(c->gpu.hbm_capacity.value(), 94e9);
  EXPECT_DOUBLE_EQ(c->gpu.network_bandwidth.value(), 25e9);  // 200 Gb/s = 25 GB/s
  EXPECT_DOUBLE_EQ(c->gpu.bf16.value(), 989.4e12);           // inherited
  EXPECT_DOUBLE_EQ(c->levels[1].bandwidth.value(), 25e9);
}

TEST(ClusterYaml, Nvl72StyleDomain) {
  auto c = parse_cluster_yaml("gpu: b200\nnum_gpus: 288\ngpus_per_node: 4\nnvlink_domain: 72\n", "nvl.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->levels.size(), 2u);
  EXPECT_EQ(c->levels[0].size, 72);
  EXPECT_EQ(c->level_for_span(0, 71), 0u);
  EXPECT_EQ(c->level_for_span(71, 72), 1u);
}

TEST(ClusterYaml, NodeLevelWhenNvlinkDomainIsSmallerThanANode) {
  auto c = parse_cluster_yaml("gpu: a100\nnum_gpus: 16\nnvlink_domain: 2\nnode:\n  bandwidth: 25 GB/s\n", "pcie.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->levels.size(), 3u);
  EXPECT_EQ(c->levels[0].size, 2);
  EXPECT_EQ(c->levels[1].name, "node");
  EXPECT_DOUBLE_EQ(c->levels[1].bandwidth.value(), 25e9);
  EXPECT_EQ(c->level_for_span(2, 5), 1u);
  EXPECT_EQ(c->level_for_span(0, 9), 2u);
}

TEST(ClusterYaml, ExplicitTopology) {
  auto c = parse_cluster_yaml(
      "gpu: h100\nnum_gpus: 1024\ntopology:\n"
      "  - {name: nvlink, size: 8, bandwidth: 450 GB/s, latency: 2 us}\n"
      "  - {name: leaf, size: 256, bandwidth: 50 GB/s, latency: 5 us}\n"
      "  - {name: spine, size: 1024, bandwidth: 25 GB/s, latency: 8 us}\n",
      "fat-tree.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->levels.size(), 3u);
  EXPECT_EQ(c->level_for_span(0, 255), 1u);
  EXPECT_EQ(c->level_for_span(255, 256), 2u);
  EXPECT_DOUBLE_EQ(c->levels[2].latency.value(), 8e-6);
}

TEST(ClusterYaml, LoadClusterPrefersAFile) {
  auto c = load_cluster(std::string(SHARDWISE_TEST_DATA) + "/good/cluster-nvl72.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->levels[0].size, 72);
}

}  // namespace
}  // namespace shardwise
