// core/names: edit distances worked by hand and the did-you-mean threshold.
#include "core/names.hpp"

#include <gtest/gtest.h>

namespace shardwise {
namespace {

TEST(Names, EditDistanceByHand) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3U);  // k->s, e->i, +g
  EXPECT_EQ(edit_distance("vlm", "vllm"), 1U);        // +l
  EXPECT_EQ(edit_distance("H100", "h100"), 0U);       // letter case ignored
  EXPECT_EQ(edit_distance("plna", "plan"), 1U);       // one adjacent swap
  EXPECT_EQ(edit_distance("", "abc"), 3U);
}

TEST(Names, ClosestNameOnlyForSlips) {
  const std::vector<std::string> known{"--tpot-ms", "--ttft-ms", "--batch", "--mode"};
  EXPECT_EQ(closest_name("--tpotms", known), "--tpot-ms");
  EXPECT_EQ(closest_name("--btach", known), "--batch");
  EXPECT_FALSE(closest_name("--workers", known).has_value());  // 5+ edits from everything
  EXPECT_EQ(did_you_mean("h10", {"h100", "h200", "b200"}), " (did you mean h100?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"h100"}), "");
}

}  // namespace
}  // namespace shardwise
