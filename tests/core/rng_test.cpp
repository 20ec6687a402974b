#include "core/rng.hpp"

#include <set>

#include <gtest/gtest.h>

namespace shardwise {
namespace {

TEST(Rng, SameSeedSameSequence) {
  Rng a(42), b(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u64(), b.next_u64());
}

TEST(Rng, DifferentSeedsDiffer) {
  Rng a(1), b(2);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += a.next_u64() == b.next_u64();
  EXPECT_EQ(same, 0);
}

TEST(Rng, ForkIsReproducibleAndIndependentOfParentState) {
  Rng a(7);
  Rng f1 = a.fork(3);
  a.next_u64();  // advancing the parent must not change its forks
  Rng f2 = a.fork(3);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(f1.next_u64(), f2.next_u64());
  Rng g = a.fork(4);
  EXPECT_NE(a.fork(3).next_u64(), g.next_u64());
}

TEST(Rng, BelowAndUniformStayInRange) {
  Rng r(9);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 10000; ++i) {
    const auto x = r.below(7);
    ASSERT_LT(x, 7u);
    seen.insert(x);
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  EXPECT_EQ(seen.size(), 7u);  // every value reached
}

}  // namespace
}  // namespace shardwise
