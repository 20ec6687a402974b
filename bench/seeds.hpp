// Runs of one search over seeds 1..SEEDS, spread over threads one seed at a time (each
// search single-threaded), results in seed order: the benchmarks' shared driver.
#pragma once

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "search/search.hpp"

namespace shardwise::bench {

// The benchmarks' run size: BUDGET SEEDS THREADS as positional numbers, in that order
// (`budget_positional` false: SEEDS THREADS, the budget given by a flag). take() reads an
// argument that starts with a digit while a slot is left, and says whether it did.
struct RunSize {
  std::int64_t budget = 4000;
  int seeds = 10;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool budget_positional = true;
  int taken = 0;
  bool take(const std::string& a) {
    if (a.empty() || !std::isdigit(static_cast<unsigned char>(a[0]))) return false;
    const int slot = taken + (budget_positional ? 0 : 1);
    if (slot > 2) return false;
    if (slot == 0) budget = std::atoll(a.c_str());
    if (slot == 1) seeds = std::atoi(a.c_str());
    if (slot == 2) threads = std::atoi(a.c_str());
    ++taken;
    return true;
  }
};

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
