// The thread pool hands an exception of a task back to the caller (issue 16, defect 4:
// a throw on a worker ended the process with a signal) and stays usable after it.
#include "core/thread_pool.hpp"

#include <atomic>
#include <stdexcept>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace shardwise {
namespace {

TEST(ThreadPool, ATaskExceptionReachesTheCallerAndThePoolGoesOn) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.parallel_for(64,
                                   [&](std::size_t i) {
                                     ++ran;
                                     if (i == 17) throw std::runtime_error("task 17");
                                   }),
                 std::runtime_error)
        << threads;
    EXPECT_EQ(ran.load(), 64) << "the other tasks still run";
    std::atomic<int> sum{0};
    pool.parallel_for(10, [&](std::size_t i) { sum += static_cast<int>(i); });
    EXPECT_EQ(sum.load(), 45);  // 0 + 1 + ... + 9
  }
}

TEST(Invariant, ABrokenInvariantThrowsInternalError) {
  // the CLI turns it into exit code 1 with the message (tests/cli/cli_test.sh), never abort()
  try {
    SW_CHECK(1 + 1 == 3, "arithmetic");
    FAIL() << "SW_CHECK did not throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("arithmetic (1 + 1 == 3)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardwise
