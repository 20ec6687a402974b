// Checks every serving test states the same way: Little's law over a run's measured window
// and the order of a latency's percentiles.
#pragma once
#include <gtest/gtest.h>

#include "serve/serving.hpp"

namespace test_support {

// Little's law: the mean number in the system equals the completion rate times the mean time
// in the system, within 2%.
inline void expect_littles_law(const shardwise::ServeResult& r) {
  EXPECT_NEAR(r.mean_in_system / (r.requests_per_s * r.e2e_ms.mean / 1e3), 1.0, 0.02);
}
// p50 <= p90 <= p99 of a latency.
inline void expect_ordered(const shardwise::LatencyStats& s) {
  EXPECT_LE(s.p50, s.p90);
  EXPECT_LE(s.p90, s.p99);
}

}  // namespace test_support
