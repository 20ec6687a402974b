// The watch of a long run (core/control.hpp): time limit, reserve, interrupts, progress.
#include "core/control.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace shardwise {
namespace {

TEST(Watch, NoLimitNeverStops) {
  Watch w;
  EXPECT_FALSE(w.should_stop());
  EXPECT_FALSE(w.should_stop(1e9));  // a reserve means nothing without a limit
  EXPECT_EQ(w.stopped(), StopReason::kNone);
  EXPECT_FALSE(should_stop(nullptr));
}

TEST(Watch, TimeLimitStopsAndStaysStopped) {
  RunControl c;
  c.time_limit_s = 0.05;
  Watch w(c);
  EXPECT_FALSE(w.should_stop());
  // a reserve of 1 s before a 0.05 s limit: already too late
  EXPECT_TRUE(w.should_stop(1.0));
  EXPECT_EQ(w.stopped(), StopReason::kTimeLimit);
  EXPECT_TRUE(w.should_stop());  // sticky
  EXPECT_EQ(w.stop_text(), "the time limit (0.05 s)");
  EXPECT_DOUBLE_EQ(w.time_limit_s(), 0.05);
}

TEST(Watch, CancelIsAskedOnlyOnTheOwnerThread) {
  int asked = 0;
  RunControl c;
  c.cancelled = [&] {
    ++asked;
    return true;
  };
  Watch w(c);
  std::thread other([&] { EXPECT_FALSE(w.should_stop()); });
  other.join();
  EXPECT_EQ(asked, 0);
  EXPECT_TRUE(w.should_stop());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(w.stopped(), StopReason::kCancelled);
  EXPECT_EQ(w.stop_text(), "an interrupt");
}

TEST(Watch, ProgressIsRateLimited) {
  std::vector<std::string> lines;
  RunControl c;
  c.emit = [&](const std::string& s) { lines.push_back(s); };
  c.first_progress_s = 0;   // due at once
  c.progress_every_s = 3600;  // then not again within the test
  Watch w(c);
  int formatted = 0;
  for (int i = 0; i < 100; ++i) {
    w.progress([&] {
      ++formatted;
      return std::string("line");
    });
  }
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_EQ(formatted, 1);  // the line is formatted only when printed
  RunControl quiet;           // no emit: nothing, nothing formatted
  quiet.first_progress_s = 0;
  Watch q(quiet);
  q.progress([&] {
    ++formatted;
    return std::string();
  });
  EXPECT_EQ(formatted, 1);
}

}  // namespace
}  // namespace shardwise
