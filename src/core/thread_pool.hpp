// A fixed pool of worker threads for parallel evaluation. parallel_for writes
// results by index, so the outcome never depends on the thread count.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shardwise {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 1: everything runs on the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  [[nodiscard]] int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(i) for i in [0, n), spread over the workers and the caller; returns when all are done.
  // An exception thrown by fn is rethrown here, on the caller (the first one; the other
  // indices still run), never left to end a worker thread.
  void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn);

 private:
  void work();
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t next_ = 0, total_ = 0, finished_ = 0;
  std::size_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace shardwise
