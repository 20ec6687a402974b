#include "core/thread_pool.hpp"

namespace shardwise {

ThreadPool::ThreadPool(int threads) {
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    // a thread that could not be created: stop and join those that were (a joinable
    // std::thread destroyed unjoined would end the process), then report it
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    throw;
  }
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
      std::exception_ptr err;
      try {
        (*job)(i);
      } catch (...) {
        err = std::current_exception();
      }
      lk.lock();
      if (err && !error_) error_ = err;
      if (++finished_ == total_) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    std::exception_ptr first;
    for (std::size_t i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
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
    std::exception_ptr err;
    try {
      fn(i);
    } catch (...) {
      err = std::current_exception();
    }
    lk.lock();
    if (err && !error_) error_ = err;
    ++finished_;
  }
  done_cv_.wait(lk, [&] { return finished_ == total_; });
  job_ = nullptr;
  total_ = 0;
  if (error_) {
    std::exception_ptr err = error_;
    error_ = nullptr;
    std::rethrow_exception(err);
  }
}

}  // namespace shardwise
