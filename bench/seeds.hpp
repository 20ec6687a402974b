// Runs of one search over seeds 1..SEEDS, spread over threads one seed at a time (each
// search single-threaded), results in seed order: the benchmarks' shared driver.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "search/search.hpp"

namespace shardwise::bench {

inline std::vector<SearchResult> run_seeds_parallel(int seeds, int threads, const std::function<SearchResult(std::uint64_t)>& run) {
  std::vector<SearchResult> res(static_cast<std::size_t>(std::max(seeds, 0)));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min(threads, seeds); ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < seeds; i = next++) res[static_cast<std::size_t>(i)] = run(static_cast<std::uint64_t>(i + 1));
    });
  }
  for (auto& t : pool) t.join();
  return res;
}

}  // namespace shardwise::bench
