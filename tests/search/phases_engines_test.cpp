// The phase-space engines (search/phases_engines.hpp): deterministic per seed, within the
// budget, and each finds the optimum of a small objective with one peak and a plateau.
#include <gtest/gtest.h>

#include "search/phases_engines.hpp"

namespace shardwise {
namespace {

// 12 x 12 x 6: the peak at (3, 9, 4), a ridge towards it, zeros on the diagonal (equal layouts)
double peaked(const std::array<int, 3>& a) {
  if (a[0] == a[1]) return 0.0;
  const double d = std::abs(a[0] - 3) + std::abs(a[1] - 9) + std::abs(a[2] - 4);
  return 100.0 / (1.0 + d);
}

TEST(PhaseEngines, DeterministicWithinBudgetAndFindThePeak) {
  const std::array<int, 3> sizes{12, 12, 6};
  for (const char* e : {"rl", "sa", "ga"}) {
    const PhaseRun a = search_phase_space(e, sizes, peaked, 400, 7);
    const PhaseRun b = search_phase_space(e, sizes, peaked, 400, 7);
    EXPECT_EQ(a.best_action, b.best_action) << e;
    EXPECT_EQ(a.improvements, b.improvements) << e;
    EXPECT_LE(a.calls, 400) << e;
    EXPECT_DOUBLE_EQ(a.best, 100.0) << e;
    EXPECT_EQ(a.best_action, (std::array<int, 3>{3, 9, 4})) << e;
    // improvements strictly increase, and calls_to reads them
    for (std::size_t i = 1; i < a.improvements.size(); ++i) EXPECT_GT(a.improvements[i].second, a.improvements[i - 1].second);
    EXPECT_EQ(a.calls_to(100.0), a.improvements.back().first);
    EXPECT_EQ(a.calls_to(1000.0), -1);
  }
}

TEST(PhaseEngines, TheBufferHeadScalesTheDecodeGpusBatch) {
  PhaseSpace s;
  Plan p;
  p.deg.pp = 8;
  Plan d;
  d.deg.tp = 8;
  s.layouts = {p, d};
  // x = 1: no host tier (0); x = 4: four times the decode GPUs' 80 sequences
  EXPECT_EQ(s.decode({0, 1, 0}, 80).buffer_seqs, 0);
  EXPECT_EQ(s.decode({0, 1, 2}, 80).buffer_seqs, 320);
  EXPECT_EQ(s.decode({0, 1, 2}, 80).decode.deg.tp, 8);
}

}  // namespace
}  // namespace shardwise
