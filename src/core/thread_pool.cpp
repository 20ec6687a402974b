#include "core/thread_pool.hpp"

namespace shardwise {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work() {
  std::size_t seen = 0;
  while (true) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return stop_ || (generation_ != seen && next_ < total_); });
    if (stop_) return;
    seen = generation_;
    while (next_ < total_) {
      const std::size_t i = next_++;
      const auto* job = job_;
      lk.unlock();
      (*job)(i);
      lk.lock();
      if (++finished_ == total_) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  job_ = &fn;
  next_ = 0;
  total_ = n;
  finished_ = 0;
  ++generation_;
  cv_.notify_all();
  // the caller works too
  while (next_ < total_) {
    const std::size_t i = next_++;
    lk.unlock();
    fn(i);
    lk.lock();
    ++finished_;
  }
  done_cv_.wait(lk, [&] { return finished_ == total_; });
  job_ = nullptr;
  total_ = 0;
}

}  // namespace shardwise
